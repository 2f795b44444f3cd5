"""Reports say what was simulated: defaults a user did not give are printed, so a
figure can be compared with a study's method (docs/predict.md)."""

from __future__ import annotations

import json

from raidlab.cli import app
from typer.testing import CliRunner

runner = CliRunner()
RAID5_HWR = [
    "--drive", "intel-dc-s3500-80g", "--controller", "megaraid-9365",
    "--level", "5", "--drives", "4",
]  # fmt: skip


def test_run_table_states_queue_depth_jobs_and_warmup() -> None:
    args = ["run", *RAID5_HWR, "--rw", "randread", "--iodepth", "16", "--numjobs", "2"]
    output = runner.invoke(app, [*args, "--ios", "300"]).output
    assert "QD 16 x 2 job(s), 300 I/Os after 30 warm-up I/Os" in output


def test_run_table_states_the_controller_policy_and_drive_state() -> None:
    args = ["run", *RAID5_HWR, "--ios", "200"]
    plain = runner.invoke(app, args).output
    assert "RAID 5 of 4 x intel-dc-s3500-80g (state steady) on megaraid-9365" in plain
    # MegaRAID's default write policy is write-back (controllers.toml cites it), and the
    # header says it is the default, so a figure says which policy it is of.
    assert (
        "(write-back, the controller's default, read-ahead off, FastPath off), stripe unit 64K"
        in plain
    )
    fastpath = runner.invoke(app, [*args, "--fastpath"]).output
    assert "write-through, not the controller's default write-back" in fastpath
    assert "FastPath on" in fastpath


def test_the_megaraid_default_is_write_back_and_write_through_without_a_backup_unit() -> None:
    args = ["run", *RAID5_HWR, "--rw", "randwrite", "--ios", "100", "--format", "json"]
    default = json.loads(runner.invoke(app, args).stdout)
    assert default["scenario"]["array"]["controller"]["write_back"] is True
    assert default["write_policy"] == "write-back, the controller's default"
    # "Write Back with BBU": without a backup unit the firmware runs write-through.
    no_bbu = json.loads(runner.invoke(app, [*args, "--bbu", "no"]).stdout)
    assert no_bbu["scenario"]["array"]["controller"]["write_back"] is False
    refused = runner.invoke(app, [*args, "--bbu", "no", "--write-cache", "wb"])
    assert refused.exit_code == 2 and "--write-cache" in refused.output
    hba_args = ["run", "--drive", "intel-dc-s3500-80g", "--ios", "50", "--format", "json"]
    hba = json.loads(runner.invoke(app, hba_args).stdout)
    assert hba["write_policy"] is None


def test_the_study_and_run_use_the_same_megaraid_policy() -> None:
    from raidlab.studies import claims

    assert claims.HWR_WRITE_BACK is True
    assert claims.RAID1["HWR"].write_back is claims.HWR_WRITE_BACK
    # A setup's stated policy reaches the scenario whatever the preset's default.
    write_through = claims._controller(claims.RAID5_HWR_WT)
    assert write_through == {"preset": "megaraid-9361", "write_back": False}


def test_run_table_states_an_hdds_write_cache() -> None:
    args = ["run", "--drive", "hitachi-deskstar-250g", "--controller", "dell-perc6i"]
    output = runner.invoke(app, [*args, "--drives", "2", "--ios", "50"]).output
    assert "RAID 0 of 2 x hitachi-deskstar-250g (write cache off) on dell-perc6i" in output


def test_run_warmup_ios_reaches_the_scenario() -> None:
    # Write-through: the warm-up fills the drives' buffers only (the write-back
    # default's cache is the next test's).
    args = ["run", *RAID5_HWR, "--rw", "randwrite", "--ios", "100", "--format", "json"]
    args += ["--write-cache", "wt"]
    default = json.loads(runner.invoke(app, args).stdout)["scenario"]["workload"]
    chosen = json.loads(runner.invoke(app, [*args, "--warmup-ios", "500"]).stdout)
    assert default["warmup_ios"] == 32768  # twice the drives' buffers: steady state
    assert chosen["scenario"]["workload"]["warmup_ios"] == 500


def test_run_warmup_ios_refusal_names_the_flag() -> None:
    result = runner.invoke(app, ["run", *RAID5_HWR, "--warmup-ios", "-1"])
    assert result.exit_code == 2
    assert "--warmup-ios" in result.output


def test_atto_table_states_the_file_and_io_count() -> None:
    args = ["atto", "--drive", "hitachi-deskstar-250g", "--controller", "dell-perc6i"]
    args += ["--drives", "2", "--qd", "1", "--sizes", "64K", "--length", "512M"]
    output = runner.invoke(app, [*args, "--ios-max", "64", "--jobs", "1"]).output
    assert "ATTO test file 512M at the array's start, at most 64 I/Os per point" in output
    assert "stripe unit 64K" in output


def test_presets_state_the_controller_cache_policy_and_fastpath() -> None:
    import raidlab

    frame = raidlab.presets()
    figures = dict(zip(frame["name"], frame["key_figures"], strict=True))
    assert (
        "cache 1G write-back (--write-cache), FastPath off (--fastpath)" in figures["megaraid-9365"]
    )
    assert "cache 256M write-through" in figures["dell-perc6i"]
    assert "FastPath" not in figures["dell-perc6i"]


def test_fio_notes_state_the_array_and_its_controller_policy() -> None:
    job = ["fio", "--name=w", "--rw=randwrite", "--bs=4k", "--number_ios=50"]
    result = runner.invoke(app, [*job, *RAID5_HWR, "--fastpath"])
    assert result.exit_code == 0
    assert "note: array RAID 5 of 4 x intel-dc-s3500-80g (state steady)" in result.stderr
    assert "FastPath on" in result.stderr


def test_run_warms_steady_state_writes_up_until_the_buffers_are_full() -> None:
    args = ["run", *RAID5_HWR, "--rw", "randwrite", "--ios", "100", "--format", "csv"]
    args += ["--write-cache", "wt"]  # the drives' buffers alone
    # Four drives' 16 MiB buffers, twice over, in 4 KiB writes.
    note = runner.invoke(app, args).stderr
    assert "32768 warm-up I/Os write twice what the drives' write buffers (64M) hold" in note
    warmed = runner.invoke(app, [*args, "--warmup-ios", "20000"])
    assert "warm-up" not in warmed.stderr
    reads = runner.invoke(app, ["run", *RAID5_HWR, "--rw", "randread", "--ios", "100"])
    assert "warm-up I/Os write" not in reads.stderr and "after 10 warm-up I/Os" in reads.stdout


def test_the_warm_up_fills_a_write_back_cache_too() -> None:
    args = ["run", *RAID5_HWR, "--write-cache", "wb", "--rw", "randwrite", "--ios", "100"]
    result = runner.invoke(app, args)
    assert "(64M) and the write-back cache (1G) hold" in result.stderr
    # 2 x (1 GiB + 64 MiB) in 4 KiB writes.
    assert "100 I/Os after 557056 warm-up I/Os" in result.stdout
    # A 50/50 mix writes half as much a request.
    mixed = runner.invoke(app, [*args[:-4], "--rw", "randrw", "--ios", "100"])
    assert "after 1114112 warm-up I/Os" in mixed.stdout


def test_atto_states_the_ios_in_flight_of_each_queue_depth() -> None:
    args = ["atto", "--drive", "adata-sp900-128g", "--qd", "1,2,4,10", "--sizes", "4K"]
    result = runner.invoke(app, [*args, "--length", "1M"])
    assert result.exit_code == 0
    assert "I/Os in flight per queue depth QD 1: 1, QD 2: 1, QD 4: 2, QD 10: 5" in result.stdout
