"""The tuning flags: controller cache, read-ahead, FastPath, TRIM passthrough, SSD
over-provisioning and state."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from raidlab.api import resolve_array, run_workload
from raidlab.cli import app
from raidlab.scenario.array import array_capacity_bytes
from raidlab.scenario.presets import preset, preset_names
from raidlab.scenario.tuning import (
    Tuning,
    drive_state,
    drive_state_default,
    tune_array,
)
from raidlab.scenario.workloads import WorkloadRequest
from typer.testing import CliRunner

runner = CliRunner()
RUN = [
    "run",
    "--drive",
    "intel-dc-s3500-800g",
    "--controller",
    "megaraid-9361",
    "--level",
    "5",
    "--drives",
    "4",
    "--rw",
    "randwrite",
    "--iodepth",
    "8",
    "--ios",
    "2000",
]


def _error(args: list[str]) -> str:
    result = runner.invoke(app, [*RUN, *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    return lines[0]


def test_write_back_without_a_backup_unit_is_refused() -> None:
    assert "--write-cache" in _error(["--write-cache", "wb", "--bbu", "no"])


def test_write_back_needs_a_controller_with_a_cache() -> None:
    result = runner.invoke(app, ["run", "--drive", "intel-dc-s3500-80g", "--write-cache", "wb"])
    assert result.exit_code == 2 and "no cache" in result.output


def test_bad_knob_values_name_the_flag() -> None:
    assert "--read-ahead" in _error(["--read-ahead", "sometimes"])
    assert "--precondition" in _error(["--precondition", "used"])
    assert "--op" in _error(["--op", "95%"])


def test_over_provisioning_needs_an_ftl_model() -> None:
    result = runner.invoke(app, ["run", "--drive", "adata-sp900-128g", "--op", "20%"])
    assert result.exit_code == 2 and "FTL" in result.output


def test_over_provisioning_raises_steady_random_write_iops() -> None:
    # The article's test (claims T28, T29): one S3500 800 GB in steady state, where the
    # drive's own garbage collection is the limit.
    def iops(extra: list[str]) -> float:
        result = runner.invoke(
            app,
            [
                "run",
                "--drive",
                "intel-dc-s3500-800g",
                "--rw",
                "randwrite",
                "--iodepth",
                "16",
                "--numjobs",
                "2",
                "--ios",
                "20000",
                "--format",
                "csv",
                *extra,
            ],
        )
        assert result.exit_code == 0, result.output
        return float(result.output.strip().splitlines()[-1].split(",")[1])

    assert iops(["--op", "20%"]) > 2 * iops([])


# --- FastPath and TRIM passthrough ---------------------------------------------------


def _run(
    drive: str, controller: str, rw: str, tuning: Tuning, drives: int = 4, **workload: Any
) -> pd.Series:
    array = tune_array(
        resolve_array(None, drive=drive, controller=controller, drives=drives), tuning
    )
    request = WorkloadRequest(rw=rw, bs="4K", **{"ios": 20_000, **workload})
    return run_workload(array, request, 1).iloc[0]


def test_fastpath_raises_ssd_random_read_iops_and_lowers_latency() -> None:
    # 128 outstanding reads on 12 SSDs: the controller's per-I/O firmware time is the
    # limit (3.3 us a read, ~300k IOPS; four SATA SSDs stay below it, the drives limit).
    args = ("intel-dc-s3500-80g", "megaraid-9365", "randread")
    normal = _run(*args, Tuning(), drives=12, iodepth=64, numjobs=2)
    fast = _run(*args, Tuning(fastpath=True), drives=12, iodepth=64, numjobs=2)
    assert fast.iops > 1.3 * normal.iops, (normal.iops, fast.iops)
    assert fast.lat_mean_us < 0.8 * normal.lat_mean_us


def test_fastpath_brings_hdds_nothing_and_costs_sequential_reads_their_read_ahead() -> None:
    args = ("wd-caviar-blue-500g", "megaraid-9361")
    normal = _run(*args, "randread", Tuning(), iodepth=32, ios=4000)
    fast = _run(*args, "randread", Tuning(fastpath=True), iodepth=32, ios=4000)
    assert abs(fast.iops / normal.iops - 1) < 0.05, (normal.iops, fast.iops)
    read_ahead = _run(*args, "read", Tuning(read_ahead="adaptive"), ios=4000)
    fast = _run(*args, "read", Tuning(fastpath=True), ios=4000)
    assert fast.iops < 0.5 * read_ahead.iops, (read_ahead.iops, fast.iops)


def test_fastpath_is_refused_with_write_back_and_where_there_is_none() -> None:
    assert "--fastpath" in _error(["--fastpath", "--write-cache", "wb"])
    assert "--fastpath" in _error(["--fastpath", "--read-ahead", "adaptive"])
    result = runner.invoke(app, ["run", "--drive", "intel-dc-s3500-80g", "--fastpath"])
    assert result.exit_code == 2 and "error: --fastpath: controller 'hba' has no FastPath" in (
        result.output
    )


def test_trim_passthrough_after_deletes_lowers_write_amplification_on_ssd_raid0() -> None:
    def run(passthrough: str) -> tuple[float, float]:
        tuning = Tuning(precondition="steady", deleted="50%", trim_passthrough=passthrough)
        array = tune_array(
            resolve_array(None, drive="intel-dc-s3500-80g", controller="intel-h97-rst", drives=2),
            tuning,
        )
        half = array_capacity_bytes(array) // 2 // 4096 * 4096
        request = WorkloadRequest(rw="randwrite", bs="4K", iodepth=32, size=half, ios=40_000)
        frame = run_workload(array, request, 1)
        return float(frame.iloc[0].iops), float(frame.attrs["explain"]["ssd_write_amplification"])

    (iops_on, wa_on), (iops_off, wa_off) = run("yes"), run("no")
    assert wa_on < wa_off - 0.5 and iops_on > 1.5 * iops_off, (iops_on, wa_on, iops_off, wa_off)


def test_deleting_data_needs_an_ftl_and_the_preset_decides_passthrough() -> None:
    result = runner.invoke(app, ["run", "--drive", "adata-sp900-128g", "--deleted", "50%"])
    assert result.exit_code == 2 and "--deleted" in result.output
    assert resolve_array(None, drive="intel-dc-s3500-80g", controller="intel-h97-rst")[
        "controller"
    ]["trim_passthrough"]
    assert not resolve_array(None, drive="intel-dc-s3500-80g", controller="megaraid-9365")[
        "controller"
    ]["trim_passthrough"]


def test_a_trim_workload_reports_a_trim_row() -> None:
    args = ["run", "--drive", "intel-dc-s3500-80g", "--controller", "linux-md", "--drives", "2"]
    result = runner.invoke(app, [*args, "--rw", "randtrim", "--ios", "2000", "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = [line.split(",")[0] for line in result.output.strip().splitlines()[1:]]
    assert rows == ["trim"]


# --- drive state and read-ahead -------------------------------------------------------


def test_every_ssd_preset_with_an_ftl_starts_in_the_one_default_state() -> None:
    for drive in ("intel-dc-s3500-80g", "intel-dc-s3500-800g", "intel-dc-s3700-800g"):
        array = resolve_array(None, drive=drive)
        assert array["drive"]["ftl"]["precondition"] == drive_state_default() == "steady"
    fresh = tune_array(resolve_array(None, drive="intel-dc-s3500-80g"), Tuning(precondition="fob"))
    assert drive_state(fresh) == "fob"
    assert drive_state(resolve_array(None, drive="wd-caviar-blue-500g")) is None


def test_every_ssd_preset_but_the_sandforce_study_drive_has_an_ftl() -> None:
    # adata-sp900-128g belongs to the SSD RAID 0 study, whose calibration has no FTL.
    ssds = [n for n in preset_names("drive") if preset("drive", n, "drive")["kind"] == "ssd"]
    assert [n for n in ssds if "ftl" not in preset("drive", n, "drive")] == ["adata-sp900-128g"]


def test_run_reports_print_the_drive_state() -> None:
    args = ["run", "--drive", "intel-dc-s3500-80g", "--ios", "200"]
    assert "drive state steady" in runner.invoke(app, args).output
    assert "drive state fob" in runner.invoke(app, [*args, "--precondition", "fob"]).output
    result = runner.invoke(app, [*args, "--format", "json"])
    assert json.loads(result.stdout)["drive_state"] == "steady"


def _sequential_read_mbps(bs: str, read_ahead: str) -> float:
    array = tune_array(
        resolve_array(
            None, drive="intel-dc-s3500-80g", controller="megaraid-9361", drives=4, level=5
        ),
        Tuning(read_ahead=read_ahead),
    )
    request = WorkloadRequest(rw="read", bs=bs, ios=4000)
    return float(run_workload(array, request, 1).iloc[0].mbps)


def test_megaraid_read_ahead_helps_small_sequential_reads_only() -> None:
    # The article (Q07, Q08): read-ahead on a RAID 5 of 4 SSDs left 64 KB and 1 MB
    # sequential reads unchanged and helped 8 KB single-threaded reads. The firmware
    # reads ahead to the end of the stripe unit, never a window beyond it.
    for bs in ("64K", "1M"):
        on, off = _sequential_read_mbps(bs, "always"), _sequential_read_mbps(bs, "none")
        assert abs(on / off - 1) < 0.05, (bs, on, off)
    assert _sequential_read_mbps("8K", "always") > 1.5 * _sequential_read_mbps("8K", "none")


def test_over_provisioning_leaves_steady_sequential_writes_alone() -> None:
    # The article's Q09: a steady sequential-write run is not a fragmented drive.
    def mbps(op: str) -> float:
        array = tune_array(resolve_array(None, drive="intel-dc-s3500-800g"), Tuning(op=op))
        request = WorkloadRequest(rw="write", bs="1M", iodepth=16, numjobs=2, ios=3000)
        return float(run_workload(array, request, 1).iloc[0].mbps)

    assert abs(mbps("20%") / mbps("0%") - 1) < 0.05
