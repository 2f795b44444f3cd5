"""The report's figures: ATTO-style MB/s over transfer size (measured vs simulated,
with the error panel) and the explain breakdown, drawn to the rules of
``raidlab.report.figure_style``. The ATTO figure's content is
``raidlab.report.transfer_panels``'s, the same the PNGs of ``raidlab.report.plots``
draw; here it becomes the page's SVG (``svg``), with a hover text per marker and a
log-y twin of each MB/s panel (why not matplotlib's SVG: docs/report.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from raidlab.report import figure_style as style
from raidlab.report.html.model import Figure
from raidlab.report.html.svg import (
    Bar,
    BarChart,
    LegendItem,
    Point,
    Series,
    XYPanel,
    bar_chart,
    number_text,
    xy_panel,
)
from raidlab.report.transfer_panels import Mark, OpPanel, transfer_figure
from raidlab.units import format_size

# The bar chart of resources shows the busiest; a 24-drive array has ~100.
RESOURCES_SHOWN_MAX = 24
KIND_COLOURS = {
    "controller": style.OKABE_ITO[1],
    "path": style.OKABE_ITO[4],
    "drive": style.OKABE_ITO[0],
    "host": style.OKABE_ITO[2],
}
OTHER_COLOUR = style.OKABE_ITO[6]


def _row_tip(row: Mapping[str, Any], measured: bool) -> str:
    where = f"{row['op']} QD {row['qd']}, {format_size(int(row['block_bytes']))}"
    if not measured:
        return f"{where}: {number_text(float(row['mbps']))} MB/s simulated"
    ratio = style.error_ratio(row.get("measured_mbps"), row.get("simulated_mbps"))
    error = "-" if ratio is None else f"{100 * ratio:+.1f} %"
    return (
        f"{where}: measured {number_text(float(row['measured_mbps']))}, simulated "
        f"{number_text(float(row['simulated_mbps']))} MB/s ({error}), {row.get('role', '')}"
    )


def transfer_figures(
    rows: Sequence[Mapping[str, Any]],
    title: str,
    measured: bool,
    caption: str = "",
) -> list[Figure]:
    """MB/s over transfer size, a read and a write panel per group of at most
    QDS_PER_PANEL_MAX queue depths; with ``measured`` (a study's rows: measured_mbps,
    simulated_mbps, role) the measurement as points and an error panel under each.
    What is drawn is ``transfer_panels.transfer_figure``'s, as in the PNGs."""
    plan = transfer_figure(rows, measured)
    x_ticks = tuple((float(size), style.transfer_kib(size)) for size in plan.sizes)
    figures = []
    for group in plan.groups:
        legend = tuple(LegendItem(entry.label, entry.colour, entry.mark) for entry in group.legend)
        linear, log, errors = [], [], []
        for panel in group.panels:
            if not panel.has_rows:
                continue
            series = _mbps_series(panel, measured)
            for log_y, out in ((False, linear), (True, log)):
                out.append(
                    xy_panel(
                        XYPanel(
                            panel.title,
                            style.AXIS_TRANSFER,
                            style.AXIS_MBPS,
                            series,
                            x_ticks,
                            legend,
                            log_y=log_y,
                        )
                    )
                )
            if measured:
                errors.append(xy_panel(_error_panel(panel, x_ticks)))
        figures.append(
            Figure(
                f"{title} ({style.panel_depths_text(group.depths)})",
                tuple(linear + errors),
                tuple(log),
                caption,
            )
        )
    return figures


def _points(marks: Sequence[Mark], measured: bool) -> tuple[Point, ...]:
    return tuple(
        Point(float(mark.block_bytes), mark.value, _row_tip(mark.row, measured), mark.suspect)
        for mark in marks
    )


def _mbps_series(panel: OpPanel, measured: bool) -> tuple[Series, ...]:
    series = []
    for line in panel.lines:
        if not line.simulated:
            continue
        # The simulation's line has no crosses: a suspect row is suspect as measured.
        points = tuple(
            Point(float(mark.block_bytes), mark.value, _row_tip(mark.row, measured))
            for mark in line.simulated
        )
        series.append(Series(f"QD {line.qd} simulated", line.colour, "line", points))
        if measured:
            series.append(
                Series(
                    f"QD {line.qd} measured", line.colour, "points", _points(line.measured, True)
                )
            )
    return tuple(series)


def _error_panel(panel: OpPanel, x_ticks: tuple[tuple[float, str], ...]) -> XYPanel:
    series = tuple(
        Series(f"QD {line.qd} error", line.colour, "line", _points(line.errors, True))
        for line in panel.lines
    )
    return XYPanel(
        panel.error_title,
        style.AXIS_TRANSFER,
        style.AXIS_ERROR,
        series,
        x_ticks,
        signed=True,
        height=240,
        y_range=panel.error_range,
    )


def explain_figures(explain: Mapping[str, Any] | None, title: str) -> list[Figure]:
    """The explain breakdown: resource utilisation (busiest first, the bottleneck
    named) and the mean latency of an I/O by stage of its path."""
    if not explain:
        return []
    svgs = []
    resources = sorted(
        explain.get("resources", []), key=lambda r: (-float(r.get("utilisation", 0.0)), r["name"])
    )
    if resources:
        svgs.append(bar_chart(_resource_chart(resources, explain)))
    stages = explain.get("latency_ns_by_stage") or {}
    if stages:
        svgs.append(bar_chart(_stage_chart(stages, explain)))
    if not svgs:
        return []
    return [Figure(title, tuple(svgs), caption=_bound_caption(explain))]


def _resource_chart(resources: Sequence[Mapping[str, Any]], explain: Mapping[str, Any]) -> BarChart:
    shown = resources[:RESOURCES_SHOWN_MAX]
    kinds = sorted({str(r.get("kind", "")) for r in shown})
    bottleneck = explain.get("bottleneck")
    bars = tuple(
        Bar(
            f"{r['name']}{' (bottleneck)' if r['name'] == bottleneck else ''}",
            100.0 * float(r.get("utilisation", 0.0)),
            KIND_COLOURS.get(str(r.get("kind", "")), OTHER_COLOUR),
            tip=f"{r['name']} ({r.get('kind', '')}): "
            f"{100.0 * float(r.get('utilisation', 0.0)):.1f} % busy",
            text=f"{100.0 * float(r.get('utilisation', 0.0)):.1f} %",
        )
        for r in shown
    )
    hidden = len(resources) - len(shown)
    more = f" ({hidden} less busy not shown)" if hidden else ""
    return BarChart(
        f"resource utilisation{more}",
        style.AXIS_UTILISATION,
        bars,
        value_max=100.0,
        legend=tuple(
            LegendItem(kind, KIND_COLOURS.get(kind, OTHER_COLOUR), "swatch") for kind in kinds
        ),
    )


def _stage_chart(stages: Mapping[str, float], explain: Mapping[str, Any]) -> BarChart:
    longest = explain.get("stage_longest")
    ordered: list[tuple[str, float]] = sorted(stages.items(), key=lambda item: -float(item[1]))
    return BarChart(
        "latency of an I/O by stage of its path",
        style.AXIS_STAGE_LATENCY,
        tuple(
            Bar(
                f"{stage}{' (longest)' if stage == longest else ''}",
                float(ns) / 1e3,
                style.OKABE_ITO[index % len(style.OKABE_ITO)],
                tip=f"{stage}: {float(ns) / 1e3:,.1f} us",
                text=f"{float(ns) / 1e3:,.1f} us",
            )
            for index, (stage, ns) in enumerate(ordered)
        ),
    )


def _bound_caption(explain: Mapping[str, Any]) -> str:
    busiest = (
        f"{explain.get('bottleneck')} "
        f"({100 * float(explain.get('bottleneck_utilisation', 0.0)):.0f} % busy)"
    )
    if explain.get("bound", "resource") == "resource":
        return f"bottleneck: {busiest}"
    return (
        f"latency-bound: no resource near saturation (busiest {busiest}); longest stage: "
        f"{explain.get('stage_longest')}"
    )


def ranking_figure(
    rows: Sequence[Mapping[str, Any]],
    metric: str,
    label_of: Callable[[Mapping[str, Any]], str],
    value_label: str,
    title: str = "",
) -> Figure:
    """Candidates best first as bars of ``metric``, coloured by what bounds them."""
    colours: dict[str, str] = {}
    bars = []
    for row in rows:
        bound = str(row.get("bottleneck") if row.get("bound") == "resource" else "latency")
        colour = colours.setdefault(bound, style.OKABE_ITO[len(colours) % len(style.OKABE_ITO)])
        value = float(row.get(metric) or 0.0)
        bars.append(
            Bar(
                label_of(row),
                value,
                colour,
                tip=f"{label_of(row)}: {number_text(value)} {value_label}; bound by {bound}",
            )
        )
    legend = tuple(
        LegendItem(f"bound: {name}", colour, "swatch") for name, colour in colours.items()
    )
    title = title or f"candidates by {metric}"
    chart = BarChart(title, value_label, tuple(bars), legend=legend)
    return Figure(title, (bar_chart(chart, width=620),))
