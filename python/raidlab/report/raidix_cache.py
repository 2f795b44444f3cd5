"""The RAIDIX SSD cache study as a person reads it: the stated-against-simulated table
and the figure of gains (raidlab.studies.raidix_cache computes them)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from raidlab.studies.raidix_cache import TITLE

if TYPE_CHECKING:
    import pandas as pd


def plot_gains(frame: pd.DataFrame, out: Path) -> list[Path]:
    """Stated against simulated gain per row, on a log axis (one figure)."""
    from raidlab.report.plots import plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    labels = [f"{r}\n{t}" for r, t in zip(frame["row"], frame["request_type"], strict=True)]
    x = range(len(frame))
    ax.bar([i - 0.2 for i in x], frame["gain_stated"], width=0.4, label="stated")
    ax.bar([i + 0.2 for i in x], frame["gain_simulated"], width=0.4, label="simulated")
    ax.set_xticks(list(x), labels, rotation=60, ha="right", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("gain with the SSD cache (x)")
    ax.set_title(TITLE, fontsize=9)
    ax.legend()
    fig.tight_layout()
    path = out / "raidix-cache-gains.svg"
    fig.savefig(path)
    plt.close(fig)
    return [path]


def table_lines(frame: pd.DataFrame) -> Sequence[str]:
    """The comparison as aligned text lines."""

    def num(value: float) -> str:
        if value != value:  # NaN
            return "-"
        return f"{value:,.1f}" if abs(value) < 1000 else f"{value:,.0f}"

    header = (
        f"{'row':<5} {'request':<20} {'unit':<6} {'with stated':>12} {'with sim':>12} "
        f"{'w/o stated':>11} {'w/o sim':>11} {'gain stated':>11} {'gain sim':>9}"
    )
    lines = [header]
    for r in frame.itertuples(index=False):
        lines.append(
            f"{r.row:<5} {str(r.request_type)[:20]:<20} {str(r.unit)[:6]:<6} "
            f"{num(r.with_cache_stated):>12} {num(r.with_cache_simulated):>12} "
            f"{num(r.without_cache_stated):>11} {num(r.without_cache_simulated):>11} "
            f"{num(r.gain_stated):>11} {num(r.gain_simulated):>9}"
        )
    return lines
