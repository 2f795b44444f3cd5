"""How raidlab figures are drawn, whatever draws them (matplotlib PNGs in
``raidlab.report.plots``, SVG in ``raidlab.report.html``): one owner for the rules a
fresh-clone reader asked for (issue 20).

- At most ``QDS_PER_PANEL_MAX`` queue depths per panel; more become small multiples.
- Okabe-Ito colours (safe for the common colour-vision deficiencies), one per queue
  depth, the same in every panel of a figure.
- Measured and simulated told apart by shape, not by dash pattern: the simulation is
  a line through filled markers, the measurement hollow markers with no line, a suspect
  measurement a cross.
- Units on both axes; the error panel shows simulated / measured - 1 per row.
- A figure's title states its own striping and never repeats a study title's.

Pure data and text: no plotting library is imported here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from raidlab.units import format_size

# Okabe & Ito (2008), "Color Universal Design". Yellow last: it is faint on white.
OKABE_ITO = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#F0E442",  # yellow
)
# Four lines a panel stay readable; 18 did not.
QDS_PER_PANEL_MAX = 4
# Marks that stand for a shape, not a depth (the legend's "simulated", "measured"),
# and reference lines (an error of 0), in near-black and grey.
INK = "#333"
REFERENCE_LINE = "#555"
# Ticks of a log y axis a decade: 1, 2, 5 (a panel spans a decade or two).
LOG_TICK_MULTIPLES = (1.0, 2.0, 5.0)

AXIS_MBPS = "MB/s (10^6 B/s)"
AXIS_TRANSFER = "transfer size (KiB)"
AXIS_ERROR = "simulated / measured - 1 (%)"
AXIS_UTILISATION = "busy (% of the measured time)"
AXIS_STAGE_LATENCY = "latency per I/O (us)"

# A result column as an axis label with its unit.
METRIC_AXES = {
    "iops": "IOPS (I/Os per second)",
    "mbps": AXIS_MBPS,
    "lat_mean_us": "mean latency (us)",
    "lat_p50_us": "median latency (us)",
    "lat_p99_us": "p99 latency (us)",
}

SIMULATED_LABEL = "simulated (line, filled)"
MEASURED_LABEL = "measured (hollow, no line)"
SUSPECT_LABEL = "measured, suspect (cross)"


def depth_groups(depths: Iterable[int]) -> list[list[int]]:
    """The queue depths split into as few panels as hold at most QDS_PER_PANEL_MAX
    each, the panels as even as possible (10 depths: 4, 3, 3), shallowest first."""
    ordered = sorted(set(depths))
    if not ordered:
        return []
    panels = math.ceil(len(ordered) / QDS_PER_PANEL_MAX)
    size, extra = divmod(len(ordered), panels)
    groups, start = [], 0
    for index in range(panels):
        end = start + size + (1 if index < extra else 0)
        groups.append(ordered[start:end])
        start = end
    assert sum(len(group) for group in groups) == len(ordered)
    assert all(len(group) <= QDS_PER_PANEL_MAX for group in groups)
    return groups


def depth_colours(depths: Iterable[int]) -> dict[int, str]:
    """A colour per queue depth of one panel group (at most QDS_PER_PANEL_MAX): the
    first Okabe-Ito colours, never the faint yellow."""
    ordered = sorted(set(depths))
    assert len(ordered) <= QDS_PER_PANEL_MAX < len(OKABE_ITO)
    return {qd: OKABE_ITO[index] for index, qd in enumerate(ordered)}


def transfer_kib(block_bytes: float) -> str:
    """An x tick in KiB: 0.5, 1, 4, 1024, 32768."""
    return f"{block_bytes / 1024:g}"


def error_ratio(measured: float | None, simulated: float | None) -> float | None:
    """simulated / measured - 1, or None where it is undefined (measured 0 or missing)."""
    if measured is None or simulated is None or measured == 0:
        return None
    if math.isnan(measured) or math.isnan(simulated):
        return None
    return simulated / measured - 1.0


def error_axis_pct(points: Iterable[tuple[float, bool]]) -> tuple[float, float] | None:
    """The error panel's y range (percent) from its trusted rows (``(error_pct,
    suspect)`` pairs), so a suspect row 1,800 % off does not flatten the rest; None
    when every row is suspect (the panel then spans them all)."""
    trusted = [value for value, suspect in points if not suspect and math.isfinite(value)]
    if not trusted:
        return None
    low, high = min([*trusted, -5.0]), max([*trusted, 5.0])
    margin = 0.08 * (high - low)
    return low - margin, high + margin


def off_axis_text(count: int) -> str:
    return f" ({count} suspect rows off the axis, at its edge)" if count else ""


def striping_text(drive_count: int | None, stripe_unit_bytes: int | None) -> str:
    """The striping a figure states: none for one drive (its stripe unit means
    nothing), else the unit; "" when neither is known."""
    if drive_count == 1:
        return "no striping"
    if not stripe_unit_bytes:
        return ""
    return f"stripe {format_size(int(stripe_unit_bytes))}"


def study_subtitle(study_title: str) -> str:
    """A study title without what each figure states itself: "stripe 16K" would
    contradict a single drive's "no striping" (the fresh-clone finding)."""
    parts = [part for part in study_title.split(", ") if not part.startswith("stripe ")]
    return ", ".join(parts)


def config_title(
    name: str,
    drive_count: int | None,
    drive: str,
    controller: str,
    stripe_unit_bytes: int | None,
) -> str:
    drives = "" if drive_count is None else f"{drive_count} x "
    striping = striping_text(drive_count, stripe_unit_bytes)
    return f"{name}: {drives}{drive} on {controller}{', ' + striping if striping else ''}"


def metric_axis(metric: str) -> str:
    return METRIC_AXES.get(metric, metric)


def panel_depths_text(depths: Sequence[int]) -> str:
    return "QD " + ", ".join(str(qd) for qd in depths)
