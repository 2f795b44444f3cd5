"""Tables of results as a person reads them (rich tables on the terminal).

A cell is never cut: on a narrow terminal it folds onto the next line; into a pipe
or a file the console is unlimited (``raidlab.report.output``), so a row is a line."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table

from raidlab.report.output import print_json, records, stdout
from raidlab.units import format_size

# pandas loads where a frame is built, not with the module: the command line starts
# without it (docs/benchmarks.md, start-up).
if TYPE_CHECKING:
    import pandas as pd


def number(value: float | None, digits: int = 1) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:,.{digits}f}"


def print_table(rows: tuple[list[str], list[list[str]]], title: str) -> None:
    header, body = rows
    table = Table(title=title)
    for index, column in enumerate(header):
        table.add_column(column, justify="left" if index == 0 else "right", overflow="fold")
    for row in body:
        table.add_row(*row)
    stdout.print(table)


def atto_table_rows(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    header = ["op", "qd", "size", "MB/s", "IOPS", "lat mean us", "lat p99 us"]
    body = [
        [
            row.op,
            str(row.qd),
            format_size(row.block_bytes),
            number(row.mbps),
            number(row.iops, 0),
            number(row.lat_mean_us),
            number(row.lat_p99_us),
        ]
        for row in frame.itertuples()
    ]
    return header, body


# Each column of a run (``RUN_COLUMNS``) as its table heads it. The 99.9th percentile is
# the one SSD datasheets state their quality of service at (Intel's DC S3500/S3700:
# "99.9 %"), so a run shows it beside the median.
RUN_HEADINGS = {
    "op": "op",
    "iops": "IOPS",
    "mbps": "MB/s",
    "lat_mean_us": "lat mean us",
    "lat_p50_us": "lat p50 us",
    "lat_p99_us": "lat p99 us",
    "lat_p999_us": "lat p99.9 us",
}


def run_table_rows(
    rows: pd.DataFrame | Sequence[Mapping[str, Any]],
) -> tuple[list[str], list[list[str]]]:
    """The table of a fio-style run, from its DataFrame or its plain rows (RunRows)."""
    # Imported here: the scenario modules load the native simulator, which a table of
    # study rows does not need.
    from raidlab.scenario.workloads import RUN_COLUMNS

    if not isinstance(rows, Sequence):
        rows = rows.to_dict("records")
    header = [RUN_HEADINGS[column] for column in RUN_COLUMNS]
    body = [
        [
            row["op"],
            number(row["iops"], 0),
            *(number(row[column]) for column in RUN_COLUMNS[2:]),
        ]
        for row in rows
    ]
    return header, body


def study_table_rows(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    header = ["config", "op", "qd", "size", "measured MB/s", "simulated MB/s", "error %", "role"]
    body = [
        [
            row.config,
            row.op,
            str(row.qd),
            format_size(row.block_bytes),
            number(row.measured_mbps),
            number(row.simulated_mbps),
            number(row.error_pct),
            row.role,
        ]
        for row in frame.itertuples()
    ]
    return header, body


# The columns of advise's table, on the terminal and in `raidlab report`'s page.
ADVISE_HEADER = (
    "rank",
    "level",
    "stripe unit",
    "write cache",
    "usable",
    "tolerates",
    "IOPS",
    "MB/s",
    "lat p99 us",
    "bottleneck (or longest stage)",
)


def bound_text(bound: Any, bottleneck: Any, utilisation: Any, stage_longest: Any) -> str:
    """What bound a run, as one cell: the saturated resource and how busy it was, or,
    when no resource was near saturation, the longest stage of an I/O's path (a busiest
    resource at 48 % is not a bottleneck). The sweep and advise tables, on the terminal
    and in the report, all say it this way."""
    if bound == "resource":
        return f"{bottleneck} ({100 * float(utilisation):.0f} %)"
    return f"latency: {stage_longest}"


def advise_table_rows(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    header = list(ADVISE_HEADER)
    mission_years = frame.attrs.get("mission_years")
    if mission_years is not None:
        # The reliability column, where the drive's failure figures are known.
        header.append(f"P(loss) {mission_years:g} y")
    body = [
        [
            str(row.rank),
            str(row.level),
            format_size(int(row.stripe_unit_bytes)),
            row.write_cache,
            f"{row.usable_bytes / 1e9:,.0f} GB",
            str(row.tolerated_failures),
            number(row.iops, 0),
            number(row.mbps),
            number(row.lat_p99_us),
            bound_text(row.bound, row.bottleneck, row.bottleneck_utilisation, row.stage_longest),
            *([f"{row.p_loss:.3g}"] if mission_years is not None else []),
        ]
        for row in frame.itertuples()
    ]
    return header, body


# What a frame's JSON carries of its attrs: a suite's spec and summary, advise's
# metric and why the winner wins (`raidlab report` shows them).
FRAME_ATTRS_IN_JSON = ("spec", "summary", "why", "metric")


def print_frame(
    frame: pd.DataFrame,
    output_format: str,
    title: str,
    about: Mapping[str, Any] | None = None,
) -> None:
    """The frame as CSV, JSON or a table; ``about`` (JSON only) says what was run, e.g.
    the command, the array and its one-line description, for `raidlab report`."""
    if output_format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
        return
    if output_format == "json":
        print_json(
            {
                "records": records(frame),
                **{k: v for k, v in frame.attrs.items() if k in FRAME_ATTRS_IN_JSON},
                **(about or {}),
            }
        )
        return
    header = list(frame.columns)
    body = [
        [
            number(v, 0 if c == "iops" else 1) if isinstance(v, float) else str(v)
            for c, v in zip(header, row, strict=True)
        ]
        for row in frame.itertuples(index=False)
    ]
    print_table((header, body), title=title)
