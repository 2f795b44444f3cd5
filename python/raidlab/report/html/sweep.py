"""The output of ``raidlab sweep`` as a report: PREFIX.csv, PREFIX.parquet or the
``--format json`` document, one row per point (``point, key``, the varied keys, the
totals and explain summary, then each direction's metrics).

The CSV is read with the standard library (no pandas); Parquet needs pandas and
pyarrow (``pip install raidlab[cluster]``), which load only for it.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.report import figure_style as style
from raidlab.report.html.charts import ranking_figure
from raidlab.report.html.document import INPUT_BYTES_MAX, INPUT_LABEL, need_number, need_rows
from raidlab.report.html.model import Cell, Figure, Headline, Report, Section, Table
from raidlab.report.html.svg import Bar, BarChart, bar_chart, number_text
from raidlab.report.tables import bound_text

SWEEP_KEYS = ("point", "key", "iops", "mbps")
# The sweep's first summary column: the varied keys are the columns between ``key`` and it.
FIRST_SUMMARY_COLUMN = "iops"
OPS = ("read", "write", "trim")
# A page stays a page: a million-point sweep is summarised, not listed.
TABLE_ROWS_MAX = 5000
RANKED_BARS_MAX = 30
EFFECT_VALUES_MAX = 24


def is_sweep(document: Mapping[str, Any]) -> bool:
    records = document.get("records")
    first = records[0] if isinstance(records, list) and records else None
    return isinstance(first, Mapping) and {"point", "key", "iops", "bound"} <= set(first)


def load_csv(path: Path) -> dict[str, Any]:
    """PREFIX.csv as the document ``raidlab sweep --format json`` prints."""
    _check_size(path)
    try:
        with open(path, newline="", encoding="utf-8") as file:
            rows = [
                {key: _cell(value) for key, value in row.items()} for row in csv.DictReader(file)
            ]
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise RaidlabError(INPUT_LABEL, f"{path}: cannot read it as CSV: {error}") from None
    return {"records": rows, "csv": str(path)}


def load_parquet(path: Path) -> dict[str, Any]:
    _check_size(path)
    try:
        import pandas as pd

        frame = pd.read_parquet(path)
    except ImportError:
        raise RaidlabError(
            INPUT_LABEL,
            f"{path}: reading Parquet needs pandas and pyarrow (pip install raidlab[cluster]); "
            "or give the sweep's .csv",
        ) from None
    except (OSError, ValueError) as error:
        raise RaidlabError(INPUT_LABEL, f"{path}: cannot read it as Parquet: {error}") from None
    return {"records": json.loads(frame.to_json(orient="records")), "parquet": str(path)}


def _check_size(path: Path) -> None:
    if not path.is_file():
        raise RaidlabError(INPUT_LABEL, f"{path}: no such file")
    if path.stat().st_size > INPUT_BYTES_MAX:
        raise RaidlabError(INPUT_LABEL, f"{path}: larger than {INPUT_BYTES_MAX >> 20} MiB")


def _cell(text: str | None) -> Any:
    """A CSV cell as the sweep wrote it: a number, a text, or nothing."""
    if text is None or text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def varied_keys(row: Mapping[str, Any]) -> list[str]:
    keys = list(row)
    if "key" not in keys or FIRST_SUMMARY_COLUMN not in keys:
        return []
    return keys[keys.index("key") + 1 : keys.index(FIRST_SUMMARY_COLUMN)]


def short_names(keys: Sequence[str]) -> dict[str, str]:
    """Each key by its last part (``workload.iodepth``: ``iodepth``) where that is
    unambiguous: labels of four varied keys fit beside a bar."""
    last = [key.rsplit(".", 1)[-1] for key in keys]
    return {
        key: short if last.count(short) == 1 else key for key, short in zip(keys, last, strict=True)
    }


def value_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "-" if value is None else str(value)


def read_sweep(document: Mapping[str, Any]) -> Report:
    rows = need_rows(document, SWEEP_KEYS)
    for index, row in enumerate(rows):
        need_number(row, "iops", f"records[{index}]", allow_none=True)
        need_number(row, "mbps", f"records[{index}]", allow_none=True)
    varied = varied_keys(rows[0])
    names = short_names(varied)

    def label(row: Mapping[str, Any]) -> str:
        values = ", ".join(f"{names[key]}={value_text(row.get(key))}" for key in varied)
        return f"#{value_text(row['point'])} {values}".strip()

    ranked = sorted(rows, key=lambda row: -_number(row.get("iops")))
    source = document.get("csv") or document.get("parquet")
    sections = [
        Section(
            "The best points",
            figures=(
                ranking_figure(
                    ranked[:RANKED_BARS_MAX],
                    "iops",
                    label,
                    "IOPS (all directions)",
                    title=f"the {min(len(rows), RANKED_BARS_MAX)} best points by IOPS",
                ),
            ),
        ),
        Section(
            "What each varied key does",
            lines=(
                "Mean IOPS over the points with each value (the other keys' values all included).",
            ),
            figures=tuple(_effect_figures(rows, varied)),
        ),
        Section("Every point", tables=(_points_table(rows, varied),)),
    ]
    return Report(
        "sweep",
        f"raidlab sweep: {len(rows)} points over {', '.join(varied) or 'no varied key'}",
        f"from {source}" if source else "from raidlab sweep --format json",
        _headline(rows, ranked, label),
        sections,
        command=document.get("command") if isinstance(document.get("command"), str) else None,
        repeat_note=(
            "raidlab sweep SWEEP.toml --out PREFIX runs the points not yet in PREFIX.csv"
            + (f" (here {source})" if source else "")
            + "; each row's key identifies its whole scenario."
        ),
    )


def _number(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return -math.inf


def _headline(
    rows: Sequence[Mapping[str, Any]], ranked: Sequence[Mapping[str, Any]], label: Any
) -> list[Headline]:
    best_mbps = max(rows, key=lambda row: _number(row.get("mbps")))
    bound = sum(1 for row in rows if row.get("bound") == "resource")
    return [
        Headline("points", f"{len(rows):,}"),
        Headline("best IOPS", number_text(_number(ranked[0].get("iops"))), label(ranked[0])),
        Headline(
            "best MB/s (10^6 B/s)", number_text(_number(best_mbps.get("mbps"))), label(best_mbps)
        ),
        Headline(
            "resource-bound points", f"{bound} of {len(rows)}", "the others are latency-bound"
        ),
    ]


def _effect_figures(rows: Sequence[Mapping[str, Any]], varied: Sequence[str]) -> list[Figure]:
    svgs = []
    for key in varied:
        groups: dict[str, list[float]] = {}
        for row in rows:
            value = _number(row.get("iops"))
            if value != -math.inf:
                groups.setdefault(value_text(row.get(key)), []).append(value)
        if not 2 <= len(groups) <= EFFECT_VALUES_MAX:
            continue
        bars = tuple(
            Bar(
                f"{key} = {name}",
                sum(values) / len(values),
                style.OKABE_ITO[index % (len(style.OKABE_ITO) - 1)],
                tip=f"{key} = {name}: mean {number_text(sum(values) / len(values))} IOPS "
                f"over {len(values)} points",
            )
            for index, (name, values) in enumerate(groups.items())
        )
        svgs.append(bar_chart(BarChart(f"mean IOPS by {key}", "IOPS (mean)", bars)))
    return [Figure("mean IOPS by each varied key", tuple(svgs))] if svgs else []


def _points_table(rows: Sequence[Mapping[str, Any]], varied: Sequence[str]) -> Table:
    ops = [op for op in OPS if any(row.get(f"{op}_iops") is not None for row in rows)]
    latency = [f"{op}_lat_p99_us" for op in ops]
    columns = (
        "point",
        *varied,
        "IOPS",
        "MB/s",
        *(f"{op} p99 us" for op in ops),
        "bottleneck (or longest stage)",
    )
    body = []
    for row in rows[:TABLE_ROWS_MAX]:
        bound = bound_text(
            row.get("bound"),
            row.get("bottleneck"),
            _number(row.get("bottleneck_utilisation")),
            row.get("stage_longest"),
        )
        body.append(
            (
                _number_cell(row.get("point"), 0),
                *(_value_cell(row.get(key)) for key in varied),
                _number_cell(row.get("iops"), 0),
                _number_cell(row.get("mbps"), 1),
                *(_number_cell(row.get(column), 1) for column in latency),
                Cell(bound, bound),
            )
        )
    shown = (
        "" if len(rows) <= TABLE_ROWS_MAX else f", the first {TABLE_ROWS_MAX:,} of {len(rows):,}"
    )
    numeric = {"point", "IOPS", "MB/s", *(f"{op} p99 us" for op in ops)}
    numeric |= {key for key in varied if all(_is_number(row.get(key)) for row in rows)}
    return Table(
        f"every point (click a header to sort{shown})", columns, tuple(body), frozenset(numeric)
    )


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _number_cell(value: Any, digits: int) -> Cell:
    if not _is_number(value) or value is None or not math.isfinite(value):
        return Cell("-", None)
    return Cell(f"{float(value):,.{digits}f}", float(value))


def _value_cell(value: Any) -> Cell:
    sort = float(value) if _is_number(value) and value is not None else value_text(value)
    return Cell(value_text(value), sort)
