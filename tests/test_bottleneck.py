"""What limits a run: a resource is named the bottleneck only near saturation; below,
the run is latency-bound and the report names the longest stage of an I/O's path,
from each host I/O's time per stage (host, controller, link, drive)."""

from __future__ import annotations

import json

import pytest
from raidlab.cli import app
from raidlab.report.explain import explain_lines
from typer.testing import CliRunner

runner = CliRunner()
SSD = ["--drive", "intel-dc-s3500-80g"]
STAGES = {"host", "controller", "link", "drive"}
SATURATED = [*SSD, "--rw", "write", "--bs", "1M", "--ios", "400"]  # flash busy all along
LATENCY_BOUND = [*SSD, "--rw", "randread", "--bs", "4K", "--iodepth", "1", "--ios", "2000"]


def run_json(args: list[str]) -> dict:
    result = runner.invoke(app, ["run", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_saturated_resource_is_the_bottleneck() -> None:
    explain = run_json(SATURATED)["explain"]
    assert explain["bound"] == "resource" and explain["bottleneck_utilisation"] >= 0.9
    result = runner.invoke(app, ["run", *SATURATED, "--explain"])
    assert f"bottleneck: {explain['bottleneck']} (100 % busy)" in result.stdout


def test_a_run_with_no_resource_near_saturation_is_latency_bound() -> None:
    explain = run_json(LATENCY_BOUND)["explain"]
    assert explain["bound"] == "latency" and explain["bottleneck_utilisation"] < 0.9
    assert explain["stage_longest"] == "drive"
    result = runner.invoke(app, ["run", *LATENCY_BOUND, "--explain"])
    assert "bottleneck:" not in result.stdout
    assert "latency-bound: no resource is near saturation (busiest: " in result.stdout
    assert "the longest stage of an I/O's path is drive" in result.stdout


@pytest.mark.parametrize("args", [SATURATED, LATENCY_BOUND])
def test_latency_stages_add_up_to_the_mean_latency(args: list[str]) -> None:
    document = run_json(args)
    stages = document["explain"]["latency_ns_by_stage"]
    assert set(stages) == STAGES and all(ns >= 0 for ns in stages.values())
    (record,) = document["records"]
    assert sum(stages.values()) / 1e3 == pytest.approx(record["lat_mean_us"], rel=1e-9)
    assert document["explain"]["stage_longest"] == max(stages, key=stages.get)


def test_a_busy_resource_below_saturation_is_not_called_the_bottleneck() -> None:
    explain = {
        "bottleneck": "drive0.flash",
        "bottleneck_utilisation": 0.44,
        "bound": "latency",
        "latency_ns_by_stage": {"host": 8e3, "controller": 0.0, "link": 12e3, "drive": 90e3},
        "stage_longest": "drive",
    }
    first, stages = explain_lines(explain)[:2]
    assert first == (
        "latency-bound: no resource is near saturation (busiest: drive0.flash (44 % busy)); "
        "the longest stage of an I/O's path is drive"
    )
    assert stages == (
        "latency per I/O by stage: drive 90.0 us, link 12.0 us, host 8.0 us, controller 0.0 us"
    )


def test_advise_says_latency_bound_where_no_resource_is_saturated() -> None:
    result = runner.invoke(
        app,
        ["advise", *SSD, "--drives", "2", "--rw", "randread", "--iodepth", "1"]
        + ["--ios", "300", "--jobs", "1", "--format", "csv"],
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","), strict=True)) for line in lines[1:]]
    assert rows and all(row["bound"] == "latency" for row in rows)
    assert all(float(row["bottleneck_utilisation"]) < 0.9 for row in rows)
    table = runner.invoke(
        app,
        ["advise", *SSD, "--drives", "2", "--rw", "randread", "--iodepth", "1"]
        + ["--ios", "300", "--jobs", "1"],
    )
    assert "latency: drive" in table.stdout and "wins on iops" in table.stdout
    assert "it is latency-bound (longest stage: drive; busiest: " in table.stdout
