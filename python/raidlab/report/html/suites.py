"""What the benchmark suites' JSON becomes in a report: ``raidlab fio`` (fio's own JSON
with raidlab's array beside it), ``cdm``, ``iometer`` and ``pts``. Each page says what
was simulated (the command's one-line description of the array), the headline figures,
a chart and every row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.report import figure_style as style
from raidlab.report.html.document import INPUT_LABEL, need, need_number, need_rows
from raidlab.report.html.kinds import (
    LATENCY_COLUMNS,
    array_text,
    number_cell,
    rows_table,
    text_cell,
)
from raidlab.report.html.model import Figure, Headline, Report, Section, Table
from raidlab.report.html.svg import Bar, BarChart, bar_chart, number_text
from raidlab.units import format_size

SUITE_KEYS = ("op", "mbps", "iops", "lat_mean_us")
FIO_DIRECTIONS = ("read", "write", "trim")
# fio's completion-latency percentiles shown, as fio names them.
FIO_PERCENTILES = {"p50": "50.000000", "p99": "99.000000", "p99.9": "99.900000"}


def _subtitle(document: Mapping[str, Any]) -> str:
    """The array as the command described it (`setup`, which names the drives' state);
    older files without it say so."""
    setup = document.get("setup")
    return str(setup) if setup else "the array is not recorded in this file"


def _rows_table(title: str, rows: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> Table:
    """A suite's rows with the latency columns its command writes."""
    return rows_table(title, rows, labels, [key for key in LATENCY_COLUMNS if key in rows[0]])


def _bar_figure(title: str, bars: Sequence[tuple[str, float, int]], unit: str) -> Figure:
    """One horizontal bar per row, coloured by its direction (index into the palette)."""
    chart = BarChart(
        title,
        unit,
        tuple(
            Bar(label, value, style.OKABE_ITO[colour % 8], text=number_text(value))
            for label, value, colour in bars
        ),
    )
    return Figure(title, (bar_chart(chart, width=620),))


def _op_colour(op: str) -> int:
    return {"read": 0, "write": 1}.get(op, 2)


def _check_numbers(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> None:
    for index, row in enumerate(rows):
        for key in keys:
            need_number(row, key, f"records[{index}]", allow_none=key.startswith("lat_"))


# --- CrystalDiskMark -------------------------------------------------------------------


def read_cdm(document: Mapping[str, Any]) -> Report:
    rows = need_rows(document, ("test", *SUITE_KEYS))
    _check_numbers(rows, SUITE_KEYS[1:])
    headline = []
    for op in ("read", "write"):
        own = [row for row in rows if row["op"] == op]
        if own:
            best = max(own, key=lambda row: float(row["mbps"]))
            headline.append(
                Headline(
                    f"best {op} MB/s (10^6 B/s)", number_text(float(best["mbps"])), best["test"]
                )
            )
    profile = document.get("profile", "?")
    runs = document.get("runs")
    bars = [
        (f"{row['test']} {row['op']}", float(row["mbps"]), _op_colour(str(row["op"])))
        for row in rows
    ]
    return Report(
        "cdm",
        f"raidlab cdm: CrystalDiskMark, {profile} profile",
        _subtitle(document) + (f"; best of {runs} runs" if runs else ""),
        headline,
        [
            Section(
                "Results",
                figures=(_bar_figure("MB/s per test (10^6 B/s)", bars, "MB/s"),),
                tables=(_rows_table("per test and direction", rows, ("test", "op")),),
            )
        ],
    )


# --- IOMeter ---------------------------------------------------------------------------


def read_iometer(document: Mapping[str, Any]) -> Report:
    rows = need_rows(document, SUITE_KEYS)
    _check_numbers(rows, SUITE_KEYS[1:])
    spec = need(document.get("spec"), ("read_pct", "random_pct", "workers", "qd"), "spec")
    sizes = ", ".join(f"{format_size(int(size))}:{share}%" for size, share in spec.get("bs") or [])
    headline = [
        Headline(
            f"{row['op']} IOPS",
            number_text(float(row["iops"])),
            f"{number_text(float(row['mbps']))} MB/s",
        )
        for row in rows
    ]
    bars = [(str(row["op"]), float(row["iops"]), _op_colour(str(row["op"]))) for row in rows]
    return Report(
        "iometer",
        f"raidlab iometer: {spec['read_pct']} % read, {spec['random_pct']} % random, "
        f"{spec['workers']} worker(s) x QD {spec['qd']}",
        f"{_subtitle(document)}; sizes {sizes or '?'}",
        headline,
        [
            Section(
                "Results",
                figures=(_bar_figure("IOPS per direction", bars, "IOPS"),),
                tables=(_rows_table("per direction", rows, ("op",)),),
            )
        ],
    )


# --- SNIA PTS --------------------------------------------------------------------------


def read_pts(document: Mapping[str, Any]) -> Report:
    summary = need(
        document.get("summary"), ("test", "tracking", "rounds", "steady", "mean"), "summary"
    )
    table = document.get("table")
    if not isinstance(table, Mapping) or not table:
        raise RaidlabError(INPUT_LABEL, "table: expected an object of rows (block size: mixes)")
    mixes = list(next(iter(table.values())))
    steady = summary["steady"]
    window = summary.get("window") or []
    headline = [
        Headline(
            "steady state",
            "reached" if steady else "not reached",
            f"rounds {window[0]}-{window[1]}"
            if steady and len(window) == 2
            else f"{summary['rounds']} rounds",
        ),
        Headline(
            f"tracking {summary['tracking']}",
            number_text(float(summary["mean"])),
            "mean over the window",
        ),
    ]
    tracking = [float(value) for value in summary.get("tracking_values") or []]
    bars = [(f"round {index + 1}", value, 0) for index, value in enumerate(tracking)]
    matrix = Table(
        f"{summary['test']} by block size and R/W mix (rounds averaged over the window)",
        ("block", *mixes),
        tuple(
            (text_cell(block), *(number_cell((row or {}).get(mix)) for mix in mixes))
            for block, row in table.items()
        ),
        frozenset(mixes),
    )
    figures = (
        (_bar_figure(f"tracking variable ({summary['tracking']}) per round", bars, "value"),)
        if bars
        else ()
    )
    return Report(
        "pts",
        f"raidlab pts: SNIA PTS {summary['test']} test",
        _subtitle(document),
        headline,
        [Section("Steady state", figures=figures, tables=(matrix,))],
    )


# --- fio -------------------------------------------------------------------------------


def _fio_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per job and direction that did I/O, in fio's own units converted to
    raidlab's (MB/s = 10^6 B/s, microseconds)."""
    jobs = document.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise RaidlabError(INPUT_LABEL, "jobs: expected fio's non-empty list of jobs")
    rows = []
    for index, job in enumerate(jobs):
        need(job, ("jobname",), f"jobs[{index}]")
        for op in FIO_DIRECTIONS:
            side = job.get(op)
            if not isinstance(side, Mapping) or not side.get("total_ios"):
                continue
            need(side, ("iops", "bw_bytes"), f"jobs[{index}].{op}")
            clat = side.get("clat_ns") or {}
            percentiles = clat.get("percentile") or {}
            rows.append(
                {
                    "job": job["jobname"],
                    "op": op,
                    "iops": float(side["iops"]),
                    "mbps": float(side["bw_bytes"]) / 1e6,
                    "lat_mean_us": float(clat.get("mean", 0.0)) / 1e3,
                    **{
                        f"lat_{name}_us": float(percentiles[key]) / 1e3
                        for name, key in FIO_PERCENTILES.items()
                        if key in percentiles
                    },
                }
            )
    if not rows:
        raise RaidlabError(INPUT_LABEL, "jobs: no job did any I/O")
    return rows


def read_fio(document: Mapping[str, Any]) -> Report:
    rows = _fio_rows(document)
    ours = document.get("raidlab") or {}
    array = ours.get("array") if isinstance(ours, Mapping) else None
    where = array_text(array) if isinstance(array, Mapping) else "an array"
    headline = [
        Headline(
            f"{row['job']} {row['op']} IOPS",
            number_text(row["iops"]),
            f"{number_text(row['mbps'])} MB/s, {number_text(row['lat_mean_us'])} us mean",
        )
        for row in rows[:6]
    ]
    percentile_keys = [f"lat_{name}_us" for name in FIO_PERCENTILES]
    table = Table(
        "per job and direction (MB/s = 10^6 B/s; completion latency)",
        ("job", "op", "IOPS", "MB/s", "clat mean us", *(f"clat {n} us" for n in FIO_PERCENTILES)),
        tuple(
            (
                text_cell(row["job"]),
                text_cell(row["op"]),
                number_cell(row["iops"], 0),
                number_cell(row["mbps"]),
                number_cell(row["lat_mean_us"]),
                *(number_cell(row.get(key)) for key in percentile_keys),
            )
            for row in rows
        ),
        frozenset({"IOPS", "MB/s", "clat mean us", *(f"clat {n} us" for n in FIO_PERCENTILES)}),
    )
    bars = [(f"{row['job']} {row['op']}", row["mbps"], _op_colour(row["op"])) for row in rows]
    notes = (
        tuple(str(note) for note in (ours.get("notes") or [])) if isinstance(ours, Mapping) else ()
    )
    return Report(
        "fio",
        f"raidlab fio: {', '.join(dict.fromkeys(row['job'] for row in rows))}",
        f"{ours.get('setup') or where}; {document.get('fio version', 'fio')} JSON; "
        f"seed {ours.get('seed', '?')}",
        headline,
        [
            Section(
                "Results",
                lines=notes,
                figures=(_bar_figure("MB/s per job and direction (10^6 B/s)", bars, "MB/s"),),
                tables=(table,),
            )
        ],
    )
