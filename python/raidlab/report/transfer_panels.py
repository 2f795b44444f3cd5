"""The ATTO-style figure as plain data, for both of its renderers: matplotlib for the
PNGs (``raidlab.report.plots``) and the report page's own SVG
(``raidlab.report.html.charts``).

What a figure shows is decided here once: which queue depths share a row of panels
and in which colours, the read and the write panel of each row with their titles,
each depth's simulated line, measured points (suspect ones apart) and errors
(simulated / measured - 1, in percent), the error axis' range and how many suspect
rows sit off it, and the legend. A renderer only turns marks into pixels or SVG.

Why two renderers and not matplotlib's SVG in the page: ``docs/report.md``, "Why the
page draws its own SVG".

Pure data: no plotting library and no pandas here (``raidlab report`` loads neither).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from raidlab.report import figure_style as style

PANEL_OPS = ("read", "write")


@dataclass(frozen=True)
class Mark:
    """One row as a point: x is its transfer size, ``value`` MB/s or an error in
    percent (NaN where the row has none)."""

    block_bytes: int
    value: float
    row: Mapping[str, Any]
    suspect: bool = False


@dataclass(frozen=True)
class DepthLine:
    """One queue depth in one panel, every mark by transfer size. ``measured`` and
    ``errors`` stay empty for a simulated sweep."""

    qd: int
    colour: str
    simulated: tuple[Mark, ...]
    measured: tuple[Mark, ...] = ()
    errors: tuple[Mark, ...] = ()


@dataclass(frozen=True)
class OpPanel:
    """The MB/s panel of one op for a group of depths, and the error panel under it.

    ``lines`` has every depth of the group, in order (a depth without rows has no
    marks). ``error_range`` is the error axis in percent, from the trusted rows (None
    when every row is suspect: the axis then spans them all)."""

    op: str
    title: str
    lines: tuple[DepthLine, ...]
    error_title: str = ""
    error_range: tuple[float, float] | None = None

    @property
    def has_rows(self) -> bool:
        return any(line.simulated for line in self.lines)


@dataclass(frozen=True)
class LegendEntry:
    label: str
    colour: str
    mark: str  # "swatch" (a depth's colour), "line", "points" or "cross"


@dataclass(frozen=True)
class DepthGroup:
    """A row of panels: at most ``QDS_PER_PANEL_MAX`` depths, a panel per op."""

    depths: tuple[int, ...]
    panels: tuple[OpPanel, ...]
    legend: tuple[LegendEntry, ...]


@dataclass(frozen=True)
class TransferFigure:
    measured: bool
    sizes: tuple[int, ...]  # the x ticks: every transfer size of the figure
    groups: tuple[DepthGroup, ...]


def transfer_figure(rows: Sequence[Mapping[str, Any]], measured: bool) -> TransferFigure:
    """MB/s over transfer size of ``rows`` (``op, qd, block_bytes`` and ``mbps`` for a
    sweep or, with ``measured``, ``measured_mbps, simulated_mbps, role`` for a study)."""
    sizes = tuple(sorted({int(row["block_bytes"]) for row in rows}))
    groups = []
    for depths in style.depth_groups(int(row["qd"]) for row in rows):
        colours = style.depth_colours(depths)
        group = [row for row in rows if int(row["qd"]) in depths]
        panels = tuple(
            _op_panel(op, [row for row in group if row["op"] == op], depths, colours, measured)
            for op in PANEL_OPS
        )
        suspect = any(row.get("role") == "suspect" for row in group)
        groups.append(
            DepthGroup(tuple(depths), panels, _legend(depths, colours, measured, suspect))
        )
    return TransferFigure(measured, sizes, tuple(groups))


def _op_panel(
    op: str,
    rows: Sequence[Mapping[str, Any]],
    depths: Sequence[int],
    colours: Mapping[int, str],
    measured: bool,
) -> OpPanel:
    simulated_key = "simulated_mbps" if measured else "mbps"
    lines = []
    for qd in depths:
        # sorted() is stable: rows of one size keep the input's order.
        line = sorted(
            (row for row in rows if int(row["qd"]) == qd), key=lambda row: int(row["block_bytes"])
        )
        lines.append(
            DepthLine(
                qd,
                colours[qd],
                tuple(_mark(row, row[simulated_key]) for row in line),
                tuple(_mark(row, row["measured_mbps"]) for row in line) if measured else (),
                tuple(_errors(line)) if measured else (),
            )
        )
    title = f"{op}, {style.panel_depths_text(depths)}"
    if not measured:
        return OpPanel(op, title, tuple(lines))
    errors = [(mark.value, mark.suspect) for line in lines for mark in line.errors]
    error_range = style.error_axis_pct(errors)
    off_axis = (
        0
        if error_range is None
        else sum(1 for value, _ in errors if not error_range[0] <= value <= error_range[1])
    )
    error_title = (
        f"{op}: error per row, {style.panel_depths_text(depths)}{style.off_axis_text(off_axis)}"
    )
    return OpPanel(op, title, tuple(lines), error_title, error_range)


def _mark(row: Mapping[str, Any], value: Any) -> Mark:
    return Mark(
        int(row["block_bytes"]),
        float("nan") if value is None else float(value),
        row,
        suspect=row.get("role") == "suspect",
    )


def _errors(line: Sequence[Mapping[str, Any]]) -> list[Mark]:
    """The error of each row that has one (measured neither 0 nor missing), in percent."""
    marks = []
    for row in line:
        ratio = style.error_ratio(row.get("measured_mbps"), row.get("simulated_mbps"))
        if ratio is not None:
            marks.append(_mark(row, 100.0 * ratio))
    return marks


def clipped(value: float, error_range: tuple[float, float] | None) -> float:
    """An error drawn on its axis: beyond the range, at the range's edge."""
    if error_range is None or math.isnan(value):
        return value
    return min(max(value, error_range[0]), error_range[1])


def _legend(
    depths: Sequence[int], colours: Mapping[int, str], measured: bool, suspect: bool
) -> tuple[LegendEntry, ...]:
    entries = [LegendEntry(f"QD {qd}", colours[qd], "swatch") for qd in depths]
    if measured:
        entries += [
            LegendEntry(style.SIMULATED_LABEL, style.INK, "line"),
            LegendEntry(style.MEASURED_LABEL, style.INK, "points"),
        ]
        if suspect:
            entries.append(LegendEntry(style.SUSPECT_LABEL, style.INK, "cross"))
    return tuple(entries)
