"""Figures drawn like the papers' ATTO charts.

MB/s against transfer size on a log2 axis labelled 0.5K ... 32M, one colour per queue
depth, the measurement dashed with markers, the simulation solid. One PNG per array
configuration with a read panel and a write panel.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from raidlab.units import format_size, format_size_kib  # noqa: E402

PANEL_OPS = ("read", "write")


def plot_study(frame: pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """One PNG per configuration of a reproduced study (see studies.reproduce_study)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    study = frame.attrs.get("study", "study")
    stripe_units = frame.attrs.get("stripe_units", {})
    drive_counts = frame.attrs.get("drive_counts", {})
    queue_depths = sorted(frame["qd"].unique())
    colours = plt.get_cmap("viridis", max(len(queue_depths), 2))
    colour_of = {qd: colours(index) for index, qd in enumerate(queue_depths)}
    paths = []
    for config, rows in frame.groupby("config", sort=False):
        figure, axes = plt.subplots(1, len(PANEL_OPS), figsize=(13, 5), sharey=False)
        for axis, op in zip(axes, PANEL_OPS, strict=True):
            panel = rows[rows["op"] == op]
            for qd, line in panel.groupby("qd"):
                line = line.sort_values("block_bytes")
                axis.plot(line["block_bytes"], line["measured_mbps"], linestyle="--",
                          marker="o", markersize=3, color=colour_of[qd], alpha=0.8,
                          label=f"QD {qd} measured")
                axis.plot(line["block_bytes"], line["simulated_mbps"], linestyle="-",
                          color=colour_of[qd], label=f"QD {qd} simulated")
            sizes = sorted(panel["block_bytes"].unique())
            axis.set_xscale("log", base=2)
            axis.set_xticks(sizes)
            axis.set_xticklabels([format_size_kib(int(size)) for size in sizes], rotation=60,
                                 fontsize=7)
            axis.minorticks_off()
            axis.set_xlabel("transfer size")
            axis.set_ylabel("MB/s")
            axis.set_title(op)
            axis.grid(True, alpha=0.3)
            if len(panel):
                axis.legend(fontsize=6, ncol=2)
        drives = drive_counts.get(config, "?")
        stripe = stripe_units.get(config)
        stripe_text = (f"stripe {format_size(int(stripe))}" if stripe and drives != 1
                       else "no striping")
        figure.suptitle(f"{config}: {drives} x {frame.attrs.get('drive', '?')} on "
                        f"{frame.attrs.get('controller', '?')}, {stripe_text}\n"
                        f"{frame.attrs.get('title', study)} -- dashed: measured, "
                        f"solid: simulated", fontsize=10)
        figure.tight_layout()
        path = out_dir / f"{study}-{config}.png"
        figure.savefig(path, dpi=120)
        plt.close(figure)
        paths.append(path)
    return paths
