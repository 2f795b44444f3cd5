"""Figures the docs quote in prose, held against what the tool gives today (transcript
blocks, `$ command` and its lines, are checked line by line by test_docs_run.py; these
are the figures written into sentences). Each entry says where the figure is (a regex
over the page, its number in the group ``v``), the command that gives it, and how close
it must be: the rounding the prose uses."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from doc_figures import quoted
from raidlab.cli import app
from typer.testing import CliRunner

runner = CliRunner()

README_RUN = [
    "run", "--drive", "adata-sp900-128g", "--controller", "intel-h97-rst", "--drives", "2",
    "--stripe-unit", "16K", "--rw", "randread", "--bs", "4K", "--iodepth", "32",
    "--ios", "20000", "--explain", "--format", "json",
]  # fmt: skip
SCHEDULER_RUN = [
    "run", "--drive", "intel-dc-s3500-80g", "--controller", "linux-md", "--drives", "4",
    "--rw", "randread", "--bs", "4K", "--iodepth", "1", "--numjobs", "4", "--format", "json",
]  # fmt: skip


@dataclass(frozen=True)
class Figure:
    page: str
    pattern: str
    command: list[str]
    value: Callable[[dict[str, Any]], float]
    # The largest difference the prose's rounding allows, in the figure's own unit.
    tolerance: float

    @property
    def id(self) -> str:
        return f"{self.page}: {self.pattern[:40]}"


def _iops(document: dict[str, Any]) -> float:
    return float(sum(row["iops"] for row in document["records"]))


FIGURES = [
    Figure(
        "README.md",
        r"limits this array to about (?P<v>\d+k) IOPS",
        README_RUN,
        _iops,
        tolerance=500,  # "about 109k": rounded to the thousand
    ),
    Figure(
        "README.md",
        r"a 4-disk RAID 0 at QD 1: `latency-bound: no resource is near saturation "
        r"\(busiest: drive2.mechanism \((?P<v>\d+) % busy\)\)",
        ["run", "--drive", "hitachi-deskstar-250g", "--drives", "4", "--iodepth", "1"]
        + ["--explain", "--format", "json"],
        lambda document: 100 * float(document["explain"]["bottleneck_utilisation"]),
        tolerance=0.5,
    ),
    Figure(
        "docs/tuning.md",
        r"`none` gives the same (?P<v>[\d,]+) IOPS as mq-deadline",
        SCHEDULER_RUN + ["--scheduler", "none"],
        _iops,
        tolerance=0.5,
    ),
]


@pytest.mark.parametrize("figure", FIGURES, ids=lambda figure: figure.id)
def test_a_figure_the_docs_quote_is_what_the_tool_gives(figure: Figure) -> None:
    shown = quoted(figure.page, figure.pattern)["v"]
    result = runner.invoke(app, figure.command)
    assert result.exit_code == 0, result.output
    measured = figure.value(json.loads(result.stdout))
    assert abs(measured - shown) <= figure.tolerance, (
        f"{figure.page} quotes {shown:g}; the tool gives {measured:g} "
        f"(tolerance {figure.tolerance:g}): move the doc with the tool"
    )
