"""The SSD cache study (``raidlab reproduce raidix-cache --format json``) as a report:
per row the gain with the cache, stated against simulated; the SSD write hits of RAIDIX
against LRU (claims M01-M04); the method's assumptions."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.report import figure_style as style
from raidlab.report.html.document import INPUT_LABEL, need_number, need_rows
from raidlab.report.html.model import Cell, Figure, Headline, Report, Section, Table
from raidlab.report.html.svg import Bar, BarChart, LegendItem, bar_chart, number_text

ROW_KEYS = ("row", "request_type", "unit", "gain_stated", "gain_simulated")
# Rows of claims (M01-M04) carry figures of their own, not a gain with / without.
CLAIM_PREFIX = "M"
POLICIES = ("raidix", "lru")
# The claim row of LRU's SSD write hits over RAIDIX's.
LRU_OVER_RAIDIX = "M03"
TABLE_ROWS_MAX = 1000


def is_cache_study(document: Mapping[str, Any]) -> bool:
    """``reproduce raidix-cache``: a study with write hits per policy, no summary."""
    return "study" in document and isinstance(document.get("write_hits"), Mapping)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _cell(value: Any, digits: int = 1) -> Cell:
    number = _number(value)
    if number is None:
        return Cell("-", None)
    return Cell(f"{number:,.{digits}f}", number)


def _ratio(simulated: Any, stated: Any) -> float | None:
    a, b = _number(simulated), _number(stated)
    return a / b if a is not None and b is not None and b > 0 else None


def _policy_figures(document: Mapping[str, Any], key: str) -> dict[str, float]:
    figures = document.get(key)
    if figures is None:
        return {}
    if not isinstance(figures, Mapping):
        raise RaidlabError(INPUT_LABEL, f"{key}: expected an object of policy: number")
    out = {}
    for policy, value in figures.items():
        number = _number(value)
        if number is None:
            raise RaidlabError(INPUT_LABEL, f"{key}.{policy}: expected a number, got {value!r}")
        out[str(policy)] = number
    return out


def read_cache_study(document: Mapping[str, Any]) -> Report:
    rows = need_rows(document, ROW_KEYS)
    if len(rows) > TABLE_ROWS_MAX:
        raise RaidlabError(INPUT_LABEL, f"records: at most {TABLE_ROWS_MAX} rows, got {len(rows)}")
    for index, row in enumerate(rows):
        for key in ("gain_stated", "gain_simulated"):
            need_number(row, key, f"records[{index}]", allow_none=True)
    hits = _policy_figures(document, "write_hits")
    nand = _policy_figures(document, "nand_bytes_per_host_byte")
    gains = [row for row in rows if not str(row["row"]).startswith(CLAIM_PREFIX)]
    claims = [row for row in rows if str(row["row"]).startswith(CLAIM_PREFIX)]
    study = str(document["study"])
    method = document.get("method")
    sections = [
        Section(
            "Gain with the SSD cache, stated vs simulated",
            lines=("Gain: the row's figure with the cache over the same without it.",),
            figures=_gain_figures(gains),
            tables=(_gains_table(gains),),
        ),
        Section(
            "SSD write hits, RAIDIX vs LRU (M01-M04)",
            lines=tuple(_write_hit_lines(hits, nand)),
            figures=_write_hit_figures(hits),
            tables=(_claims_table(claims),),
        ),
    ]
    if isinstance(method, list):
        sections.append(
            Section("Method (what the article leaves out, assumed)", tuple(map(str, method)))
        )
    seed, ios_max = document.get("seed", 1), document.get("ios_max")
    command = (
        f"raidlab reproduce {study} --seed {seed}"
        f"{f' --ios-max {ios_max}' if ios_max else ''} --format json"
    )
    return Report(
        "cache-study",
        str(document.get("title") or study),
        f"study {study}; measured I/Os per run {ios_max or '?'}; seed {seed}; "
        f"{len(gains)} rows, {len(claims)} claims",
        _headline(gains, claims, hits),
        sections,
        command=command,
    )


def _headline(
    gains: Sequence[Mapping[str, Any]],
    claims: Sequence[Mapping[str, Any]],
    hits: Mapping[str, float],
) -> list[Headline]:
    ratios = [r for r in (_ratio(g["gain_simulated"], g["gain_stated"]) for g in gains) if r]
    headline = []
    if ratios:
        within = sum(1 for r in ratios if 0.5 <= r <= 2.0)
        headline.append(
            Headline("rows with the gain within 2x of the stated", f"{within} of {len(ratios)}")
        )
    if all(policy in hits for policy in POLICIES):
        headline.append(
            Headline(
                "SSD write hits RAIDIX / LRU",
                f"{hits['raidix']:.2f} / {hits['lru']:.2f}",
                "bytes written to the cache SSDs per host byte written",
            )
        )
        if hits["raidix"] > 0:
            stated = [_number(c["gain_stated"]) for c in claims if c["row"] == LRU_OVER_RAIDIX]
            note = f"stated {stated[0]:.1f}x" if stated and stated[0] is not None else ""
            headline.append(
                Headline("LRU over RAIDIX", f"{hits['lru'] / hits['raidix']:.1f}x", note)
            )
    return headline


def _gain_figures(gains: Sequence[Mapping[str, Any]]) -> tuple[Figure, ...]:
    bars = []
    for row in gains:
        ratio = _ratio(row["gain_simulated"], row["gain_stated"])
        if ratio is None:
            continue
        name = f"{row['row']} {row['request_type']}"
        colour = style.OKABE_ITO[0] if 0.5 <= ratio <= 2.0 else style.OKABE_ITO[1]
        bars.append(
            Bar(
                name,
                ratio,
                colour,
                tip=f"{name}: gain stated {number_text(float(row['gain_stated']))}, "
                f"simulated {number_text(float(row['gain_simulated']))}",
                text=f"{ratio:.2f}x",
            )
        )
    if not bars:
        return ()
    chart = BarChart(
        "simulated gain / stated gain, per row",
        "simulated / stated (1 = as stated)",
        tuple(bars),
        legend=(
            LegendItem("within 2x", style.OKABE_ITO[0], "swatch"),
            LegendItem("further", style.OKABE_ITO[1], "swatch"),
        ),
        reference=1.0,
    )
    return (Figure("gain, simulated against stated", (bar_chart(chart, width=620),)),)


def _gains_table(gains: Sequence[Mapping[str, Any]]) -> Table:
    body = []
    for row in gains:
        ratio = _ratio(row["gain_simulated"], row["gain_stated"])
        body.append(
            (
                Cell(str(row["row"]), str(row["row"])),
                Cell(str(row["request_type"]), str(row["request_type"])),
                Cell(str(row["unit"]), str(row["unit"])),
                _cell(row.get("with_cache_stated")),
                _cell(row.get("with_cache_simulated")),
                _cell(row.get("without_cache_stated")),
                _cell(row.get("without_cache_simulated")),
                _cell(row["gain_stated"]),
                _cell(row["gain_simulated"]),
                _cell(ratio, 2),
            )
        )
    numeric = (
        "with stated",
        "with sim",
        "without stated",
        "without sim",
        "gain stated",
        "gain sim",
        "sim / stated",
    )
    return Table(
        "every row (click a header to sort)",
        ("row", "request", "unit", *numeric),
        tuple(body),
        frozenset(numeric),
    )


def _write_hit_lines(hits: Mapping[str, float], nand: Mapping[str, float]) -> list[str]:
    lines = [
        "SSD write hits: bytes the cache writes to its SSD array (host data, admissions, "
        "refills) per byte the host writes, on the study's reference mix."
    ]
    for policy in sorted(hits):
        text = f"{policy}: {hits[policy]:.2f} SSD bytes written per host byte"
        if policy in nand:
            text += f", {nand[policy]:.2f} NAND bytes per host byte"
        lines.append(text)
    return lines


def _write_hit_figures(hits: Mapping[str, float]) -> tuple[Figure, ...]:
    if not hits:
        return ()
    bars = tuple(
        Bar(policy, value, style.OKABE_ITO[index % 2], text=f"{value:.2f}")
        for index, (policy, value) in enumerate(sorted(hits.items()))
    )
    chart = BarChart("SSD write hits per policy", "SSD bytes written per host byte written", bars)
    return (Figure("SSD write hits, RAIDIX vs LRU", (bar_chart(chart, width=620),)),)


def _claims_table(claims: Sequence[Mapping[str, Any]]) -> Table:
    body = tuple(
        (
            Cell(str(row["row"]), str(row["row"])),
            Cell(str(row.get("pattern") or ""), str(row.get("pattern") or "")),
            Cell(str(row["unit"]), str(row["unit"])),
            _cell(row["gain_stated"], 2),
            _cell(row["gain_simulated"], 2),
        )
        for row in claims
    )
    return Table(
        "claims M01-M04, stated vs simulated",
        ("claim", "what", "unit", "stated", "simulated"),
        body,
        frozenset({"stated", "simulated"}),
    )
