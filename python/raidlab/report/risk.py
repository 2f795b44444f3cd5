"""`raidlab risk`'s table: the Markov model and the Monte Carlo side by side."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def hours_text(hours: float | None) -> str:
    """Hours with years beside them: ``1.03e+08 h (11,700 y)``."""
    if hours is None:
        return "-"
    if math.isinf(hours):
        return "never"
    return f"{hours:.3g} h ({hours / 8766:,.3g} y)"


def _interval(low: float | None, high: float | None, years: bool = True) -> str:
    if low is None or high is None:
        return "[-, -]"  # never: an infinite bound
    if years:
        return f"[{low:.3g}, {high:.3g}] h"
    return f"[{low:.3g}, {high:.3g}]"


def risk_title(document: Mapping[str, Any]) -> str:
    return (
        f"data-loss risk: RAID {document['level']} of {document['drives']} x "
        f"{document['drive'] or 'drive'}"
    )


def risk_table_rows(document: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Rows figure / Markov / Monte Carlo of a risk document."""
    mc = document["monte_carlo"]
    years = document["mission_years"]
    rebuild = document["rebuild"]
    if rebuild is None:
        repair = "- (RAID 0: a failure loses data)"
    elif rebuild["source"] == "simulated":
        how = "projected" if rebuild["projected"] else "measured"
        repair = (
            f"{rebuild['hours']:,.2f} h rebuild of {rebuild['member_bytes'] / 1e9:,.0f} GB at "
            f"{rebuild['mbps']:,.1f} MB/s (simulated, {how}) + "
            f"{document['replace_after_hours']:g} h to replace"
        )
    else:
        repair = f"{rebuild['hours']:g} h rebuild (given) + {document['replace_after_hours']:g} h"
    agrees = mc["agrees_with_markov"]
    header = ["figure", "Markov", f"Monte Carlo ({mc['repair']}, 95 % CI)"]
    body = [
        ["MTBF per drive", hours_text(document["mtbf_hours"]), ""],
        ["AFR per drive", f"{document['afr_percent']:.3g} %", ""],
        ["unrecoverable read error", f"1 per {document['ure_per_bits']:.3g} bits", ""],
        ["MTTR", hours_text(document["mttr_hours"]), ""],
        ["  of which", repair, ""],
        ["P(read error in a rebuild)", f"{document['p_ure_rebuild']:.3g}", ""],
        [
            "MTTDL, no read errors",
            hours_text(document["mttdl_hours"]),
            f"{hours_text(mc['mttdl_hours'])} {_interval(*mc['mttdl_ci95_hours'])}",
        ],
        [
            "MTTDL, with read errors",
            hours_text(document["mttdl_with_ure_hours"]),
            f"{hours_text(mc['mttdl_with_ure_hours'])} "
            f"{_interval(*mc['mttdl_with_ure_ci95_hours'])}",
        ],
        [
            f"P(loss in {years:g} years)",
            f"{document['p_loss']:.3g}",
            f"{mc['p_loss']:.3g} {_interval(*mc['p_loss_ci95'], years=False)}",
        ],
        [
            "methods agree",
            "",
            "-" if agrees is None else ("yes" if agrees else "NO"),
        ],
    ]
    return header, body
