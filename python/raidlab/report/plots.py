"""Figures drawn like the papers' ATTO charts.

MB/s against transfer size on a log2 axis labelled 0.5K ... 32M, one colour per queue
depth, one panel per op (read, write). A study figure shows the measurement dashed with
markers and the simulation solid, one PNG per array configuration; an ATTO sweep figure
shows the simulated sweep alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from raidlab.errors import RaidlabError  # noqa: E402
from raidlab.report.output import output_directory, output_file  # noqa: E402
from raidlab.units import format_size, format_size_kib  # noqa: E402

PANEL_OPS = ("read", "write")


@dataclass(frozen=True)
class Series:
    """One line per queue depth drawn from ``column``; ``label`` follows "QD n"."""

    column: str
    label: str = ""
    style: Mapping[str, Any] = field(default_factory=dict)


MEASURED = Series(
    "measured_mbps", "measured", {"linestyle": "--", "marker": "o", "markersize": 3, "alpha": 0.8}
)
SIMULATED = Series("simulated_mbps", "simulated", {"linestyle": "-"})
SWEEP = Series("mbps", "", {"linestyle": "-", "marker": "o", "markersize": 3})


def qd_colours(queue_depths: Sequence[int]) -> dict[int, Any]:
    """A colour per queue depth, the same for every panel of a figure."""
    depths = sorted(set(queue_depths))
    colours = plt.get_cmap("viridis", max(len(depths), 2))
    return {qd: colours(index) for index, qd in enumerate(depths)}


def atto_figure(
    rows: pd.DataFrame,
    series: Sequence[Series],
    title: str,
    colour_of: Mapping[int, Any] | None = None,
) -> Figure:
    """A read panel and a write panel of MB/s vs transfer size, one line per queue depth
    and series. ``rows`` has columns ``op, qd, block_bytes`` and each series' column."""
    colour_of = colour_of or qd_colours(list(rows["qd"].unique()))
    figure, axes = plt.subplots(1, len(PANEL_OPS), figsize=(13, 5), sharey=False)
    for axis, op in zip(axes, PANEL_OPS, strict=True):
        panel = rows[rows["op"] == op]
        for qd, line in panel.groupby("qd"):
            line = line.sort_values("block_bytes")
            for item in series:
                label = f"QD {qd} {item.label}".rstrip()
                axis.plot(
                    line["block_bytes"],
                    line[item.column],
                    color=colour_of[qd],
                    label=label,
                    **item.style,
                )
        sizes = sorted(panel["block_bytes"].unique())
        axis.set_xscale("log", base=2)
        axis.set_xticks(sizes)
        axis.set_xticklabels(
            [format_size_kib(int(size)) for size in sizes], rotation=60, fontsize=7
        )
        axis.minorticks_off()
        axis.set_xlabel("transfer size")
        axis.set_ylabel("MB/s")
        axis.set_title(op)
        axis.grid(True, alpha=0.3)
        if len(panel):
            axis.legend(fontsize=6, ncol=2)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return figure


def _save(figure: Figure, path: Path) -> Path:
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def plot_study(frame: pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """One PNG per configuration of a reproduced study (see studies.reproduce_study).
    Configurations that share a figure name (``.attrs["figures_of"]``, e.g. one disk
    listed under every stripe unit) share one figure."""
    out_dir = output_directory(out_dir, "out")
    study = frame.attrs.get("study", "study")
    stripe_units = frame.attrs.get("stripe_units", {})
    drive_counts = frame.attrs.get("drive_counts", {})
    figures_of = frame.attrs.get("figures_of", {})
    colour_of = qd_colours(list(frame["qd"].unique()))
    figure_names = frame["config"].map(lambda config: figures_of.get(config, config))
    paths = []
    for name, rows in frame.groupby(figure_names, sort=False):
        config = rows["config"].iloc[0]
        # Rows repeated under several configurations are drawn once.
        rows = rows.drop_duplicates(["op", "qd", "block_bytes", "measured_mbps", "simulated_mbps"])
        drives = drive_counts.get(config, "?")
        stripe = stripe_units.get(config)
        stripe_text = (
            f"stripe {format_size(int(stripe))}" if stripe and drives != 1 else "no striping"
        )
        title = (
            f"{name}: {drives} x {frame.attrs.get('drive', '?')} on "
            f"{frame.attrs.get('controller', '?')}, {stripe_text}\n"
            f"{frame.attrs.get('title', study)} -- dashed: measured, solid: simulated"
        )
        figure = atto_figure(rows, [MEASURED, SIMULATED], title, colour_of)
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


def plot_atto(frame: pd.DataFrame, path: str | Path, title: str = "ATTO sweep") -> Path:
    """The simulated sweep of ``raidlab.frontends.atto`` as one figure (format from the suffix)."""
    path = check_figure_path(path)
    figure = atto_figure(frame, [SWEEP], f"{title} (simulated, MB/s = 10^6 B/s)")
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
    left.set_ylabel(summary["tracking"])
    left.set_title(f"tracking variable ({'steady' if summary['steady'] else 'not steady'})")
    left.legend()
    for mix in table.columns:
        right.plot(range(len(table.index)), table[mix].values, marker="o", label=str(mix))
    right.set_xticks(range(len(table.index)))
    right.set_xticklabels([format_size(int(b)) for b in table.index])
    right.set_xlabel("block size")
    right.set_ylabel(metric)
    right.set_title(f"PTS {summary['test']}: {metric} by R/W mix")
    right.legend(title="R/W", fontsize="small")
    figure.tight_layout()
    return _save(figure, path)
