"""raidlab advise: candidates within the constraints, ranked by the metric."""

from __future__ import annotations

import json

from raidlab.cli import app
from raidlab.scenario.workloads import WorkloadRequest
from raidlab.studies.advise import AdviseRequest, advise
from typer.testing import CliRunner

runner = CliRunner()


def test_candidates_meet_the_constraints_and_are_ranked_best_first() -> None:
    frame = advise(
        AdviseRequest("intel-dc-s3500-80g", 4, tolerate=1),
        WorkloadRequest(rw="randread", bs="4K", iodepth=16, ios=2000),
        jobs=1,
        progress=False,
    )
    assert set(frame["level"]) == {1, 5, 6, 10}  # RAID 0 survives nothing
    assert (frame["tolerated_failures"] >= 1).all()
    assert list(frame["iops"]) == sorted(frame["iops"], reverse=True)
    assert "wins on iops" in frame.attrs["why"]


def test_a_capacity_no_level_offers_is_one_clear_error() -> None:
    result = runner.invoke(
        app,
        [
            "advise",
            "--drive",
            "intel-dc-s3500-80g",
            "--drives",
            "2",
            "--capacity",
            "1T",
            "--ios",
            "500",
        ],
    )
    assert result.exit_code == 2 and "--capacity" in result.output


def test_fastpath_is_a_candidate_only_where_the_controller_has_it() -> None:
    workload = WorkloadRequest(rw="randread", bs="4K", iodepth=32, numjobs=2, ios=4000)
    # The 800 GB drives: 32 dies keep up, so the controller's firmware is the limit (on
    # the 80 GB model's six dies FastPath and the normal path tie within 0.5 %).
    megaraid = advise(
        AdviseRequest("intel-dc-s3500-800g", 4, controller="megaraid-9365", tolerate=1),
        workload,
        jobs=1,
        progress=False,
    )
    assert set(megaraid["write_cache"]) == {"wt", "wb", "fastpath"}
    # 64 outstanding small reads on SSDs: the firmware's normal path is the limit, so
    # the cut-through path wins, and the explanation names it.
    assert megaraid["write_cache"].iloc[0] == "fastpath"
    assert "FastPath" in megaraid.attrs["why"]
    linux_md = AdviseRequest("intel-dc-s3500-80g", 4, controller="linux-md")
    md = advise(linux_md, workload, jobs=1, progress=False)
    assert set(md["write_cache"]) == {"wt"}


def _advise_cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["advise", "--drive", "intel-dc-s3500-80g", *args])
    return result.exit_code, result.output


def test_a_fio_job_file_is_the_workload_of_every_candidate() -> None:
    code, out = _advise_cli(
        "--drives",
        "4",
        "--job",
        "tests/data/fio/numjobs.fio",
        "--tolerate",
        "1",
        "--format",
        "json",
        "--jobs",
        "1",
    )
    assert code == 0, out
    rows = json.loads(out)["records"]
    assert {row["level"] for row in rows} == {1, 5, 6, 10}
    # Four jobs of 8 KiB random writes: RAID 10 writes each block twice, RAID 5 reads
    # and writes four times, so the mirror ranks first.
    assert rows[0]["level"] in (1, 10), rows[0]


def test_an_iometer_preset_is_the_workload_and_ios_caps_it() -> None:
    code, out = _advise_cli(
        "--drives",
        "2",
        "--workload",
        "database",
        "--ios",
        "2000",
        "--format",
        "json",
        "--jobs",
        "1",
    )
    assert code == 0, out
    # Two drives allow RAID 0, 1 and 10 (the layout's minimums: a RAID 10 of two is a
    # mirror with md's near layout).
    assert {row["level"] for row in json.loads(out)["records"]} == {0, 1, 10}


def test_workload_sources_exclude_each_other_and_the_flags() -> None:
    for args, flag in (
        (["--job", "tests/data/fio/rwmix.fio", "--workload", "database"], "--job"),
        (["--job", "tests/data/fio/rwmix.fio", "--bs", "8K"], "--job"),
        (["--workload", "database", "--iodepth", "4"], "--workload"),
        (["--job", "tests/data/fio/two-groups.fio"], "--job"),
        (["--job", "no/such.fio"], "--job"),
        (["--workload", "bs=4K/50"], "--workload bs"),
    ):
        code, out = _advise_cli("--drives", "2", *args)
        assert code == 2 and out.startswith(f"error: {flag}"), (args, out)


def test_more_failures_than_the_drives_survive_blames_tolerate(no_simulation: None) -> None:
    result = runner.invoke(
        app, ["advise", "--drive", "intel-dc-s3500-80g", "--drives", "4", "--tolerate", "5"]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        "error: --tolerate: 4 drives survive at most 3 failure(s) in every case (RAID 1), got 5"
    )


def test_a_capacity_too_large_says_the_most_the_drives_offer(no_simulation: None) -> None:
    result = runner.invoke(
        app,
        ["advise", "--drive", "intel-dc-s3500-80g", "--drives", "4", "--tolerate", "2"]
        + ["--capacity", "200G"],
    )
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert line.startswith("error: --capacity: no RAID level of 4 drives that survives 2 ")
    assert line.endswith("(RAID 6)"), line
