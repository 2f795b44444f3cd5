"""Figures drawn like the papers' ATTO charts, to the rules of
``raidlab.report.figure_style``, as PNGs (or any format matplotlib writes). What an
ATTO figure shows comes from ``raidlab.report.transfer_panels``, as the HTML report's
does; this module only draws it with matplotlib.

MB/s against transfer size on a log2 axis in KiB, one Okabe-Ito colour per queue
depth and at most four queue depths a panel (more become rows of panels), a read
and a write column. A study figure draws the simulation as lines through filled
markers and the measurement as hollow markers (crosses where the reference marks a
row suspect), with an error panel (simulated / measured - 1) under each row of
panels; an ATTO sweep figure draws the simulated sweep alone. ``log_y`` puts MB/s on
a log axis, where small transfers can be judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator  # noqa: E402

from raidlab.errors import RaidlabError  # noqa: E402
from raidlab.report import figure_style as style  # noqa: E402
from raidlab.report.output import output_directory, output_file  # noqa: E402
from raidlab.report.transfer_panels import (  # noqa: E402
    PANEL_OPS,
    LegendEntry,
    Mark,
    OpPanel,
    clipped,
    transfer_figure,
)
from raidlab.units import format_size  # noqa: E402

SIMULATED_STYLE: Mapping[str, Any] = {"linestyle": "-", "marker": "o", "markersize": 3.5}
MEASURED_STYLE: Mapping[str, Any] = {
    "linestyle": "none",
    "marker": "o",
    "markersize": 5,
    "markerfacecolor": "white",
    "markeredgewidth": 1.3,
}
SUSPECT_STYLE: Mapping[str, Any] = {"linestyle": "none", "marker": "x", "markersize": 6}
# A legend entry's mark (raidlab.report.transfer_panels) as matplotlib draws it.
LEGEND_STYLES: Mapping[str, Mapping[str, Any]] = {
    "line": SIMULATED_STYLE,
    "points": MEASURED_STYLE,
    "cross": SUSPECT_STYLE,
}


def atto_figure(rows: pd.DataFrame, title: str, measured: bool, log_y: bool = False) -> Figure:
    """MB/s vs transfer size: a row of read and write panels per group of at most
    QDS_PER_PANEL_MAX queue depths. ``rows`` has columns ``op, qd, block_bytes`` and
    ``mbps`` (a sweep) or, with ``measured``, ``measured_mbps, simulated_mbps, role``
    (a study), which adds an error panel under each row. What is drawn is
    ``transfer_panels.transfer_figure``'s, as on the report page."""
    plan = transfer_figure(rows.to_dict("records"), measured)
    ratios = [3, 2] * len(plan.groups) if measured else [3] * len(plan.groups)
    figure, axes = plt.subplots(
        len(ratios),
        len(PANEL_OPS),
        figsize=(13, sum(1.5 * ratio for ratio in ratios) + 0.8),
        squeeze=False,
        layout="constrained",
        gridspec_kw={"height_ratios": ratios},
    )
    for index, group in enumerate(plan.groups):
        row_of_axes = axes[2 * index if measured else index]
        for axis, panel in zip(row_of_axes, group.panels, strict=True):
            _mbps_panel(axis, panel, measured, log_y)
            _transfer_axis(axis, plan.sizes)
        row_of_axes[0].legend(handles=_legend_handles(group.legend), fontsize=7, ncol=2)
        if measured:
            for axis, panel in zip(axes[2 * index + 1], group.panels, strict=True):
                _error_panel(axis, panel)
                _transfer_axis(axis, plan.sizes)
    figure.suptitle(title, fontsize=10)
    return figure


def _xy(
    marks: Sequence[Mark], error_range: tuple[float, float] | None = None
) -> tuple[list[int], list[float]]:
    """Transfer sizes and values of ``marks``, errors beyond ``error_range`` at its edge."""
    values = [clipped(mark.value, error_range) for mark in marks]
    return [mark.block_bytes for mark in marks], values


def _mbps_panel(axis: Axes, panel: OpPanel, measured: bool, log_y: bool) -> None:
    for line in panel.lines:
        if not line.simulated:
            continue
        axis.plot(*_xy(line.simulated), color=line.colour, **SIMULATED_STYLE)
        if measured:
            trusted = [mark for mark in line.measured if not mark.suspect]
            suspect = [mark for mark in line.measured if mark.suspect]
            axis.plot(*_xy(trusted), color=line.colour, **MEASURED_STYLE)
            axis.plot(*_xy(suspect), color=line.colour, **SUSPECT_STYLE)
    if log_y:
        axis.set_yscale("log")
        # 1, 2, 5 per decade, as plain numbers: a decade or two is a panel's whole range.
        axis.yaxis.set_major_locator(LogLocator(base=10, subs=style.LOG_TICK_MULTIPLES))
        axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_ylabel(style.AXIS_MBPS + (", log scale" if log_y else ""))
    axis.set_title(panel.title, fontsize=9)


def _error_panel(axis: Axes, panel: OpPanel) -> None:
    for line in panel.lines:
        # Suspect rows beyond the trusted rows' range sit on the axis' edge.
        axis.plot(*_xy(line.errors, panel.error_range), color=line.colour, **SIMULATED_STYLE)
        suspect = [mark for mark in line.errors if mark.suspect]
        axis.plot(*_xy(suspect, panel.error_range), color=line.colour, **SUSPECT_STYLE)
    if panel.error_range is not None:
        axis.set_ylim(*panel.error_range)
    axis.axhline(0.0, color=style.REFERENCE_LINE, linewidth=0.8)
    axis.set_ylabel(style.AXIS_ERROR, fontsize=8)
    axis.set_title(panel.error_title, fontsize=9)


def _transfer_axis(axis: Axes, sizes: Sequence[int]) -> None:
    axis.set_xscale("log", base=2)
    axis.set_xticks(sizes)
    axis.set_xticklabels([style.transfer_kib(size) for size in sizes], rotation=60, fontsize=7)
    axis.minorticks_off()
    axis.set_xlabel(style.AXIS_TRANSFER, fontsize=8)
    axis.grid(True, alpha=0.3)


def _legend_handles(entries: Sequence[LegendEntry]) -> list[Line2D]:
    return [
        Line2D([], [], color=entry.colour, linewidth=6, label=entry.label)
        if entry.mark == "swatch"
        else Line2D([], [], color=entry.colour, label=entry.label, **LEGEND_STYLES[entry.mark])
        for entry in entries
    ]


def _save(figure: Figure, path: Path) -> Path:
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def plot_study(frame: pd.DataFrame, out_dir: str | Path, log_y: bool = False) -> list[Path]:
    """One PNG per configuration of a reproduced study (see studies.reproduce_study).
    Configurations that share a figure name (``.attrs["figures_of"]``, e.g. one disk
    listed under every stripe unit) share one figure."""
    out_dir = output_directory(out_dir, "out")
    study = frame.attrs.get("study", "study")
    stripe_units = frame.attrs.get("stripe_units", {})
    drive_counts = frame.attrs.get("drive_counts", {})
    figures_of = frame.attrs.get("figures_of", {})
    figure_names = frame["config"].map(lambda config: figures_of.get(config, config))
    subtitle = style.study_subtitle(frame.attrs.get("title", study))
    paths = []
    for name, rows in frame.groupby(figure_names, sort=False):
        config = rows["config"].iloc[0]
        # Rows repeated under several configurations are drawn once.
        rows = rows.drop_duplicates(["op", "qd", "block_bytes", "measured_mbps", "simulated_mbps"])
        title = (
            style.config_title(
                str(name),
                drive_counts.get(config),
                frame.attrs.get("drive", "?"),
                frame.attrs.get("controller", "?"),
                stripe_units.get(config),
            )
            + f"\n{subtitle}"
        )
        figure = atto_figure(rows, title, measured=True, log_y=log_y)
        paths.append(_save(figure, out_dir / f"{study}-{name}.png"))
    return paths


def check_figure_path(path: str | Path, label: str = "plot") -> Path:
    """``path`` if matplotlib can write its format (from the suffix) and the file can be
    written (``output_file``: its directory exists and is writable), else an error."""
    path = Path(path)
    formats = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in formats:
        raise RaidlabError(
            label,
            f"file name must end in one of "
            f"{', '.join('.' + name for name in sorted(formats))}, "
            f"got {str(path)!r}",
        )
    return output_file(path, label)


def plot_atto(
    frame: pd.DataFrame, path: str | Path, title: str = "ATTO sweep", log_y: bool = False
) -> Path:
    """The simulated sweep of ``raidlab.frontends.atto`` as one figure (format from the suffix)."""
    path = check_figure_path(path)
    figure = atto_figure(frame, f"{title} (simulated)", measured=False, log_y=log_y)
    return _save(figure, path)


def plot_pts(
    table: pd.DataFrame, summary: Mapping[str, Any], metric: str, path: str | Path
) -> Path:
    """A PTS report figure: the tracking variable per round with the steady-state
    window, and the steady-state table as one line per R/W mix over block size."""
    path = check_figure_path(path)
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    values = list(summary["tracking_values"])
    rounds = list(range(1, len(values) + 1))
    left.plot(rounds, values, marker="o")
    first, last = summary["window"]
    left.axvspan(first - 0.5, last + 0.5, alpha=0.15, label="steady-state window")
    left.set_xlabel("round")
    # "0/100 4K iops": the mix and size tracked, then the column, which has a unit.
    *tracked, tracked_metric = str(summary["tracking"]).split()
    left.set_ylabel(f"{' '.join(tracked)} {style.metric_axis(tracked_metric)}")
    left.set_title(f"tracking variable ({'steady' if summary['steady'] else 'not steady'})")
    left.legend()
    for mix in table.columns:
        right.plot(range(len(table.index)), table[mix].values, marker="o", label=str(mix))
    right.set_xticks(range(len(table.index)))
    right.set_xticklabels([format_size(int(b)) for b in table.index])
    right.set_xlabel("block size (K = KiB, M = MiB)")
    right.set_ylabel(style.metric_axis(metric))
    right.set_title(f"PTS {summary['test']}: {metric} by R/W mix")
    right.legend(title="R/W", fontsize="small")
    figure.tight_layout()
    return _save(figure, path)
