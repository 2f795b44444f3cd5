"""Charts as SVG text, drawn here rather than by a plotting library: a report is one
small self-contained file that needs no network and no script to show its figures,
and the same input gives the same bytes. Embedding matplotlib's SVG of the PNGs'
figures instead was measured (docs/report.md, "Why the page draws its own SVG"): 24x
the time of `raidlab report`, 2.6x the figure bytes, and no hover text per marker.
What a figure shows is decided elsewhere (``raidlab.report.transfer_panels``,
``figure_style``); this module only turns it into SVG.

Two kinds: an x-y panel (log2 x axis of transfer sizes; linear or log y) with lines
of filled markers and hollow point series, and a horizontal bar chart. Every mark
carries a ``<title>`` a browser shows on hover.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

from raidlab.report import figure_style as style

FONT = "font-family='system-ui, sans-serif'"
# Rough width of a character of the 11 px labels, to lay out legends and bar labels
# without measuring text (no script, deterministic output).
CHAR_PX = 6.2
POINT_RADIUS = 3.5
PANEL_WIDTH = 460
PANEL_HEIGHT = 300
BAR_HEIGHT = 18
# The 12 px bold titles: a character is wider than a label's.
TITLE_CHAR_PX = 7.2
TITLE_LINE_PX = 15


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    tip: str = ""
    suspect: bool = False


@dataclass(frozen=True)
class Series:
    """``mark``: "line" (a line through filled markers: the simulation), "points"
    (hollow markers, no line: the measurement; suspect points are crosses)."""

    label: str
    colour: str
    mark: str
    points: tuple[Point, ...]


@dataclass(frozen=True)
class LegendItem:
    label: str
    colour: str
    mark: str  # "line", "points", "cross" or "swatch"


@dataclass(frozen=True)
class XYPanel:
    title: str
    x_label: str
    y_label: str
    series: tuple[Series, ...]
    x_ticks: tuple[tuple[float, str], ...]
    legend: tuple[LegendItem, ...] = ()
    log_y: bool = False
    # An error panel: y is a signed percentage with a reference line at 0.
    signed: bool = False
    height: int = PANEL_HEIGHT
    # The y range to cover (linear axes); points beyond it are drawn at its edge.
    y_range: tuple[float, float] | None = None


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    colour: str
    tip: str = ""
    text: str = ""


@dataclass(frozen=True)
class BarChart:
    title: str
    value_label: str
    bars: tuple[Bar, ...]
    value_max: float | None = None
    legend: tuple[LegendItem, ...] = field(default_factory=tuple)
    # A value to mark across the bars (1 for a ratio: "as claimed").
    reference: float | None = None


def number_text(value: float) -> str:
    """A tick or value label: 0.5, 12, 1,500, 2e+06 never; 3 significant digits."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return (
            f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}".rstrip("0").rstrip(".")
        )
    return f"{value:.3g}"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (1, 2, 5 times a power of ten apart)."""
    if high <= low:
        high = low + 1.0
    raw_step = (high - low) / count
    power = 10 ** math.floor(math.log10(raw_step))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw_step)
    first = math.floor(low / step) * step
    ticks = [round(first, 10)]
    while ticks[-1] < high or len(ticks) < 2:
        ticks.append(round(first + step * len(ticks), 10))
    assert ticks[0] <= low and ticks[-1] >= high
    return ticks


def log_ticks(low: float, high: float) -> list[float]:
    """Decades covering [low, high], with 2 and 5 between them over three decades or less."""
    assert low > 0 and high > 0
    first = math.floor(math.log10(low))
    last = max(math.ceil(math.log10(high)), first + 1)
    ticks = []
    for exponent in range(first, last + 1):
        base = 10.0**exponent
        multiples = style.LOG_TICK_MULTIPLES if last - first <= 3 else (1.0,)
        ticks.extend(base * m for m in multiples if base * m <= 10.0**last)
    return ticks


class _Frame:
    """Pixel mapping of a panel's plot area."""

    def __init__(self, panel: XYPanel, legend_rows: int, title_extra: float = 0.0) -> None:
        self.left, self.right = 62.0, PANEL_WIDTH - 14.0
        self.top = 30.0 + title_extra + 16.0 * legend_rows
        self.bottom = panel.height - 46.0
        xs = [x for x, _ in panel.x_ticks] or [p.x for s in panel.series for p in s.points]
        self.x_low, self.x_high = math.log2(min(xs)), math.log2(max(xs))
        if self.x_high == self.x_low:
            self.x_low, self.x_high = self.x_low - 1, self.x_high + 1
        self.log_y = panel.log_y
        values = [p.y for s in panel.series for p in s.points if _plottable(p.y, panel.log_y)]
        if panel.log_y:
            values = values or [1.0]
            self.y_ticks = log_ticks(min(values), max(values))
            self.y_low, self.y_high = math.log10(self.y_ticks[0]), math.log10(self.y_ticks[-1])
        else:
            low = min([*values, 0.0])
            high = max([*values, 0.0 if panel.signed else 1e-9])
            if panel.y_range is not None:
                low, high = panel.y_range
            if panel.signed:
                # The reference line stays inside; a tiny error gets a +-5 % axis.
                low, high = min(low, -5.0), max(high, 5.0)
            self.y_ticks = nice_ticks(low, high)
            self.y_low, self.y_high = self.y_ticks[0], self.y_ticks[-1]

    def x(self, value: float) -> float:
        share = (math.log2(value) - self.x_low) / (self.x_high - self.x_low)
        return self.left + 8 + share * (self.right - self.left - 16)

    def y(self, value: float) -> float:
        level = math.log10(value) if self.log_y else value
        level = min(max(level, self.y_low), self.y_high)
        share = (level - self.y_low) / (self.y_high - self.y_low)
        return self.bottom - share * (self.bottom - self.top)


def _plottable(value: float, log_y: bool) -> bool:
    return value is not None and math.isfinite(value) and (value > 0 or not log_y)


def _legend_rows(items: Sequence[LegendItem], width: float) -> list[list[LegendItem]]:
    rows: list[list[LegendItem]] = [[]]
    used = 0.0
    for item in items:
        need = 26 + CHAR_PX * len(item.label) + 12
        if rows[-1] and used + need > width:
            rows.append([])
            used = 0.0
        rows[-1].append(item)
        used += need
    return [row for row in rows if row]


def _marker(x: float, y: float, colour: str, mark: str, tip: str = "") -> str:
    title = f"<title>{escape(tip)}</title>" if tip else ""
    if mark == "cross":
        d = POINT_RADIUS + 0.5
        return (
            f"<g class='mark suspect'><path d='M{x - d:.1f},{y - d:.1f}L{x + d:.1f},{y + d:.1f}"
            f"M{x - d:.1f},{y + d:.1f}L{x + d:.1f},{y - d:.1f}' stroke='{colour}' "
            f"stroke-width='2'/>{title}</g>"
        )
    fill = colour if mark == "line" else "white"
    return (
        f"<circle class='mark' cx='{x:.1f}' cy='{y:.1f}' r='{POINT_RADIUS}' fill='{fill}' "
        f"stroke='{colour}' stroke-width='1.5'>{title}</circle>"
    )


def _legend(items: Sequence[LegendItem], left: float, top: float, width: float) -> list[str]:
    parts = []
    for row_index, row in enumerate(_legend_rows(items, width)):
        x = left
        y = top + 16 * row_index
        for item in row:
            if item.mark == "swatch":
                parts.append(
                    f"<rect x='{x:.1f}' y='{y - 5:.1f}' width='18' height='10' "
                    f"fill='{item.colour}'/>"
                )
            else:
                if item.mark == "line":
                    parts.append(
                        f"<line x1='{x:.1f}' y1='{y:.1f}' x2='{x + 18:.1f}' y2='{y:.1f}' "
                        f"stroke='{item.colour}' stroke-width='2'/>"
                    )
                parts.append(_marker(x + 9, y, item.colour, item.mark))
            parts.append(
                f"<text x='{x + 24:.1f}' y='{y + 4:.1f}' font-size='11'>{escape(item.label)}</text>"
            )
            x += 26 + CHAR_PX * len(item.label) + 12
    return parts


def _title_lines(title: str, width: float) -> list[str]:
    """The title in lines that fit the panel: a centred title wider than the panel
    would be cut at both edges, so it breaks between words instead."""
    room = max(8, int((width - 16) / TITLE_CHAR_PX))
    lines: list[str] = []
    for word in title.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= room:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _title(title: str, width: float) -> tuple[list[str], float]:
    """The title's ``<title>`` and text elements, and the pixels its extra lines take."""
    lines = _title_lines(title, width)
    parts = [f"<title>{escape(title)}</title>"]
    for index, line in enumerate(lines):
        parts.append(
            f"<text x='{width / 2:.0f}' y='{16 + TITLE_LINE_PX * index}' font-size='12' "
            f"font-weight='600' text-anchor='middle'>{escape(line)}</text>"
        )
    return parts, TITLE_LINE_PX * (len(lines) - 1)


def xy_panel(panel: XYPanel) -> str:
    """One panel as an ``<svg>`` element."""
    legend_rows = len(_legend_rows(panel.legend, PANEL_WIDTH - 20)) if panel.legend else 0
    title, title_extra = _title(panel.title, PANEL_WIDTH)
    frame = _Frame(panel, legend_rows, title_extra)
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='chart' viewBox='0 0 {PANEL_WIDTH} "
        f"{panel.height}' width='{PANEL_WIDTH}' height='{panel.height}' role='img' {FONT}>",
        *title,
        *_legend(panel.legend, 12, 34 + title_extra, PANEL_WIDTH - 20),
        *_axes(panel, frame),
    ]
    for series in panel.series:
        parts.extend(_series(series, frame, panel.log_y))
    parts.append("</svg>")
    return "".join(parts)


def _axes(panel: XYPanel, frame: _Frame) -> list[str]:
    parts = [
        f"<rect x='{frame.left:.1f}' y='{frame.top:.1f}' width='{frame.right - frame.left:.1f}' "
        f"height='{frame.bottom - frame.top:.1f}' fill='none' stroke='#999'/>"
    ]
    for value in frame.y_ticks:
        y = frame.y(value)
        colour = style.REFERENCE_LINE if panel.signed and value == 0 else "#e4e4e4"
        parts.append(
            f"<line x1='{frame.left:.1f}' y1='{y:.1f}' x2='{frame.right:.1f}' y2='{y:.1f}' "
            f"stroke='{colour}'/>"
            f"<text x='{frame.left - 4:.1f}' y='{y + 4:.1f}' font-size='10' "
            f"text-anchor='end'>{number_text(value)}</text>"
        )
    for value, label in panel.x_ticks:
        x = frame.x(value)
        parts.append(
            f"<line x1='{x:.1f}' y1='{frame.bottom:.1f}' x2='{x:.1f}' y2='{frame.bottom + 4:.1f}' "
            f"stroke='#999'/><text x='{x:.1f}' y='{frame.bottom + 8:.1f}' font-size='9' "
            f"text-anchor='end' transform='rotate(-55 {x:.1f} {frame.bottom + 8:.1f})'>"
            f"{escape(label)}</text>"
        )
    middle_y = (frame.top + frame.bottom) / 2
    parts.append(
        f"<text x='{(frame.left + frame.right) / 2:.1f}' y='{panel.height - 4:.1f}' "
        f"font-size='11' text-anchor='middle'>{escape(panel.x_label)}</text>"
        f"<text x='12' y='{middle_y:.1f}' font-size='11' text-anchor='middle' "
        f"transform='rotate(-90 12 {middle_y:.1f})'>"
        f"{escape(panel.y_label + (', log scale' if panel.log_y else ''))}</text>"
    )
    return parts


def _series(series: Series, frame: _Frame, log_y: bool) -> list[str]:
    points = sorted((p for p in series.points if _plottable(p.y, log_y)), key=lambda point: point.x)
    parts = [f"<g class='series' data-label='{escape(series.label)}'>"]
    if series.mark == "line" and len(points) > 1:
        path = " ".join(f"{frame.x(p.x):.1f},{frame.y(p.y):.1f}" for p in points)
        parts.append(
            f"<polyline points='{path}' fill='none' stroke='{series.colour}' stroke-width='2'/>"
        )
    for point in points:
        mark = "cross" if point.suspect else series.mark
        parts.append(_marker(frame.x(point.x), frame.y(point.y), series.colour, mark, point.tip))
    parts.append("</g>")
    return parts


def bar_chart(chart: BarChart, width: int = PANEL_WIDTH) -> str:
    """Horizontal bars, one per item, labels left, values at the bar's end."""
    # Labels take what they need, up to 55 % of the chart (longer ones are cut at the left).
    label_px = min(0.55 * width, 12 + CHAR_PX * max([len(bar.label) for bar in chart.bars] + [4]))
    legend_rows = len(_legend_rows(chart.legend, width - 20)) if chart.legend else 0
    title, title_extra = _title(chart.title, width)
    top = 30.0 + title_extra + 16.0 * legend_rows
    height = top + BAR_HEIGHT * len(chart.bars) + 40
    value_max = (
        chart.value_max or nice_ticks(0.0, max([bar.value for bar in chart.bars] + [1e-9]), 4)[-1]
    )
    left, right = label_px, width - 60.0
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='chart' viewBox='0 0 {width} "
        f"{height:.0f}' width='{width}' height='{height:.0f}' role='img' {FONT}>",
        *title,
        *_legend(chart.legend, 12, 34 + title_extra, width - 20),
    ]
    for index, bar in enumerate(chart.bars):
        y = top + BAR_HEIGHT * index
        length = max(0.0, min(bar.value, value_max)) / value_max * (right - left)
        tip = f"<title>{escape(bar.tip or bar.label)}</title>"
        parts.append(
            f"<text x='{left - 6:.1f}' y='{y + 12:.1f}' font-size='11' text-anchor='end'>"
            f"{escape(bar.label)}</text>"
            f"<rect class='bar' x='{left:.1f}' y='{y + 2:.1f}' width='{max(length, 0.5):.1f}' "
            f"height='{BAR_HEIGHT - 5}' fill='{bar.colour}'>{tip}</rect>"
            f"<text x='{left + length + 4:.1f}' y='{y + 12:.1f}' font-size='10'>"
            f"{escape(bar.text or number_text(bar.value))}</text>"
        )
    axis_y = top + BAR_HEIGHT * len(chart.bars) + 4
    if chart.reference is not None and 0 <= chart.reference <= value_max:
        x = left + chart.reference / value_max * (right - left)
        parts.append(
            f"<line class='reference' x1='{x:.1f}' y1='{top:.1f}' x2='{x:.1f}' "
            f"y2='{axis_y:.1f}' stroke='{style.REFERENCE_LINE}' stroke-width='1'/>"
        )
    parts.append(
        f"<line x1='{left:.1f}' y1='{axis_y:.1f}' x2='{right:.1f}' y2='{axis_y:.1f}' "
        f"stroke='#999'/>"
    )
    for value in nice_ticks(0.0, value_max, 4):
        if value > value_max * 1.0001:
            continue
        x = left + value / value_max * (right - left)
        parts.append(
            f"<line x1='{x:.1f}' y1='{axis_y:.1f}' x2='{x:.1f}' y2='{axis_y + 4:.1f}' "
            f"stroke='#999'/><text x='{x:.1f}' y='{axis_y + 15:.1f}' font-size='10' "
            f"text-anchor='middle'>{number_text(value)}</text>"
        )
    parts.append(
        f"<text x='{(left + right) / 2:.1f}' y='{height - 4:.0f}' font-size='11' "
        f"text-anchor='middle'>{escape(chart.value_label)}</text></svg>"
    )
    return "".join(parts)
