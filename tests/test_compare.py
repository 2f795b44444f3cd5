"""`raidlab compare A B`: two run results side by side, with what differs in their
scenarios, each figure's change and why (the explain breakdown of each)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from raidlab.cli import app
from typer.testing import CliRunner

runner = CliRunner()
SSD = ["--drive", "adata-sp900-128g", "--controller", "intel-h97-rst", "--ios", "3000"]


def _run(tmp_path: Path, name: str, *args: str) -> Path:
    result = runner.invoke(app, ["run", *SSD, *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    path = tmp_path / name
    path.write_text(result.stdout)
    return path


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("compare")
    # QD 1 against QD 32 on 2 SSDs: the deeper queue is faster and waits longer.
    a = _run(tmp, "a.json", "--drives", "2", "--iodepth", "1")
    b = _run(tmp, "b.json", "--drives", "2", "--iodepth", "32")
    return a, b


def test_the_comparison_names_what_differs_and_the_change(pair: tuple[Path, Path]) -> None:
    a, b = pair
    result = runner.invoke(app, ["compare", str(a), str(b), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    changed = {c["field"]: (c["a"], c["b"]) for c in doc["changes"]}
    assert changed["workload.iodepth"] == (1, 32)
    iops = next(r for r in doc["figures"] if r["op"] == "read" and r["metric"] == "IOPS")
    runs = [json.loads(p.read_text())["records"][0]["iops"] for p in (a, b)]
    assert (iops["a"], iops["b"]) == tuple(runs)
    assert iops["change_pct"] == pytest.approx((runs[1] / runs[0] - 1) * 100)
    assert iops["change_pct"] > 50
    assert {row["stage"] for row in doc["stages"]} >= {"drive", "controller"}
    assert doc["why"][0].startswith("A is ")
    # Every latency figure `raidlab run` prints, the 99.9th percentile too.
    metrics = {r["metric"] for r in doc["figures"] if r["op"] == "read"}
    assert {"lat p50 us", "lat p99 us", "lat p99.9 us"} <= metrics


def test_the_table_shows_the_breakdown_side_by_side(pair: tuple[Path, Path]) -> None:
    a, b = pair
    result = runner.invoke(app, ["compare", str(a), str(b)])
    assert result.exit_code == 0, result.output
    for heading in ("what differs", "figures", "time per I/O by stage"):
        assert heading in result.stdout
    assert "workload.iodepth" in result.stdout
    assert "The stage that moved most is " in result.stdout


def test_the_same_run_twice_differs_in_nothing(pair: tuple[Path, Path]) -> None:
    a, _ = pair
    result = runner.invoke(app, ["compare", str(a), str(a), "--format", "json"])
    doc = json.loads(result.stdout)
    assert doc["changes"] == []
    assert all(r["change_pct"] in (0.0, None) for r in doc["figures"])
    assert "No stage of an I/O's path moved" in doc["why"][1]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "error: B: cannot read"),
        ("not json", "error: B: "),
        ('{"records": []}', "not the output of `raidlab run --format json`"),
    ],
)
def test_a_bad_file_is_one_line(
    pair: tuple[Path, Path], tmp_path: Path, content: str | None, says: str
) -> None:
    a, _ = pair
    bad = tmp_path / "b.json"
    if content is not None:
        bad.write_text(content)
    result = runner.invoke(app, ["compare", str(a), str(bad)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result.output


def test_two_scenarios_are_simulated_then_compared(pair: tuple[Path, Path], tmp_path: Path) -> None:
    """A scenario (a run's `scenario`, as the report's Repeat-it block saves it) is
    simulated as `run` simulates it: its figures are the run's."""
    a, b = pair
    scenarios = []
    for run in (a, b):
        path = tmp_path / f"scenario-{run.name}"
        path.write_text(json.dumps(json.loads(run.read_text())["scenario"]))
        scenarios.append(path)
    from_runs = runner.invoke(app, ["compare", str(a), str(b), "--format", "json"])
    from_scenarios = runner.invoke(
        app, ["compare", str(scenarios[0]), str(scenarios[1]), "--format", "json"]
    )
    assert from_scenarios.exit_code == 0, from_scenarios.output
    simulated, written = json.loads(from_scenarios.stdout), json.loads(from_runs.stdout)
    assert simulated["changes"] == written["changes"] and simulated["why"] == written["why"]
    # A run's JSON writes its figures to 13 significant digits.
    for got, want in zip(simulated["figures"], written["figures"], strict=True):
        assert (got["op"], got["metric"]) == (want["op"], want["metric"])
        assert got["a"] == pytest.approx(want["a"], rel=1e-11)
        assert got["b"] == pytest.approx(want["b"], rel=1e-11)
    mixed = runner.invoke(app, ["compare", str(a), str(scenarios[0]), "--format", "json"])
    assert json.loads(mixed.stdout)["changes"] == []


def test_a_scenario_the_simulator_refuses_is_one_line_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": 1, "array": {"level": "x"}}')
    result = runner.invoke(app, ["compare", str(bad), str(bad)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: A ({bad}): "), result.output
    assert "array.level" in lines[0]
