"""What the planning commands' JSON becomes in a report: ``raidlab life`` (years each
SSD lasts to its rated endurance) and ``raidlab risk`` (MTTDL and the probability of
losing data), each with its headline, a chart and every figure it computed."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.report import figure_style as style
from raidlab.report.html.document import INPUT_LABEL, need, need_number
from raidlab.report.html.kinds import number_cell, text_cell
from raidlab.report.html.model import Figure, Headline, Report, Section, Table
from raidlab.report.html.svg import Bar, BarChart, bar_chart, number_text

HOURS_PER_YEAR = 8766.0
LIFE_KEYS = ("member", "write_amplification", "years", "basis")
RISK_KEYS = ("level", "drives", "drive", "tolerated_failures", "mttdl_hours", "p_loss")


def _years_text(years: Any) -> str:
    value = float(years)
    return "never (no writes)" if math.isinf(value) else f"{value:,.2f} years"


# --- life ------------------------------------------------------------------------------


def read_life(document: Mapping[str, Any]) -> Report:
    drives = document.get("drives")
    if not isinstance(drives, list) or not drives:
        raise RaidlabError(INPUT_LABEL, "drives: expected a non-empty list of members")
    rows = [need(row, LIFE_KEYS, f"drives[{index}]") for index, row in enumerate(drives)]
    for index, row in enumerate(rows):
        need_number(row, "years", f"drives[{index}]")
    warranty = document.get("warranty_years")
    finite = [row for row in rows if math.isfinite(float(row["years"]))]
    chart = BarChart(
        "years to the rated endurance, per member",
        "years",
        tuple(
            Bar(
                f"member {row['member']}",
                float(row["years"]),
                style.OKABE_ITO[0],
                text=f"{float(row['years']):.2f}",
            )
            for row in finite
        ),
        reference=float(warranty) if warranty else None,
    )
    per_day = float(document.get("host_write_bytes_per_day") or 0.0)
    figures = (Figure("years per member", (bar_chart(chart, width=620),)),) if finite else ()
    return Report(
        "life",
        f"raidlab life: {document.get('drive_preset', 'SSD')} members",
        f"{per_day / 1e12:,.3g} TB written to the array a day; "
        f"{document.get('note', '')}; seed {document.get('seed', '?')}",
        _life_headline(rows, warranty),
        [Section("Endurance", figures=figures, tables=(_life_table(rows),))],
    )


def _life_headline(rows: list[Mapping[str, Any]], warranty: Any) -> list[Headline]:
    first = min(rows, key=lambda row: float(row["years"]))
    headline = [
        Headline(
            "first SSD to reach its rating",
            _years_text(first["years"]),
            f"member {first['member']}; {first['basis']}",
        ),
        Headline(
            "write amplification",
            f"{float(first['write_amplification']):.2f}",
            "NAND bytes per host byte on that member",
        ),
    ]
    if warranty is not None:
        headline.append(Headline("warranty", f"{warranty} years", "the drive's rating"))
    return headline


def _life_table(rows: list[Mapping[str, Any]]) -> Table:
    columns = (
        ("host GB/day", "host_write_bytes_per_day", 1e9),
        ("NAND GB/day", "nand_write_bytes_per_day", 1e9),
        ("WA", "write_amplification", 1.0),
        ("P/E cycles/day", "pe_cycles_per_day", 1.0),
        ("years to rated P/E", "years_to_rated_pe", 1.0),
        ("years to rated P/E (worst block)", "years_to_rated_pe_worst_block", 1.0),
        ("years to rated TBW", "years_to_rated_tbw", 1.0),
        ("years", "years", 1.0),
    )
    return Table(
        "per member",
        ("member", *(name for name, _, _ in columns), "basis"),
        tuple(
            (
                number_cell(row["member"], 0),
                *(
                    number_cell(None if row.get(key) is None else float(row[key]) / scale, 2)
                    for _, key, scale in columns
                ),
                text_cell(row["basis"]),
            )
            for row in rows
        ),
        frozenset({"member", *(name for name, _, _ in columns)}),
    )


# --- risk ------------------------------------------------------------------------------


def read_risk(document: Mapping[str, Any]) -> Report:
    need(document, RISK_KEYS, "document")
    mission = float(document.get("mission_years") or 0.0)
    methods = _risk_methods(document)
    chart = BarChart(
        "MTTDL with unrecoverable read errors, by method",
        "years",
        tuple(
            Bar(
                name,
                float(ure) / HOURS_PER_YEAR,
                style.OKABE_ITO[index],
                text=f"{float(ure) / HOURS_PER_YEAR:,.3g} y",
            )
            for index, (name, _, ure, _) in enumerate(methods)
            if ure is not None
        ),
    )
    groups = document.get("groups") or 1
    layout = f"; {groups} groups of {document.get('group_members')}" if groups != 1 else ""
    return Report(
        "risk",
        f"raidlab risk: RAID {document['level']} of {document['drives']} x {document['drive']}",
        f"tolerates {document['tolerated_failures']} failure(s){layout}; "
        f"mission {mission:g} years; seed {document.get('seed', '?')}",
        _risk_headline(document, mission),
        [
            Section(
                "Data loss",
                figures=(Figure("MTTDL by method", (bar_chart(chart, width=620),)),),
                tables=(_methods_table(methods, mission), _inputs_table(document)),
            )
        ],
    )


Method = tuple[str, Any, Any, Any]


def _risk_methods(document: Mapping[str, Any]) -> list[Method]:
    """(method, MTTDL hours, MTTDL with URE hours, P(loss)) of each estimate made."""
    monte = document.get("monte_carlo") or {}
    return [
        (
            "closed form",
            document.get("mttdl_closed_form_hours"),
            document.get("mttdl_with_ure_closed_form_hours"),
            None,
        ),
        (
            "Markov chain",
            document.get("mttdl_hours"),
            document.get("mttdl_with_ure_hours"),
            document.get("p_loss"),
        ),
        (
            f"Monte Carlo ({monte.get('episodes', '?')} episodes)",
            monte.get("mttdl_hours"),
            monte.get("mttdl_with_ure_hours"),
            monte.get("p_loss"),
        ),
    ]


def _risk_headline(document: Mapping[str, Any], mission: float) -> list[Headline]:
    rebuild = document.get("rebuild") or {}
    without_ure = float(document.get("p_loss_without_ure") or 0)
    mttdl = float(document.get("mttdl_with_ure_hours") or document["mttdl_hours"])
    headline = [
        Headline(
            f"P(data loss) in {mission:g} years",
            f"{float(document['p_loss']):.3g}",
            f"without unrecoverable read errors {without_ure:.3g}",
        ),
        Headline(
            "MTTDL",
            f"{mttdl / HOURS_PER_YEAR:,.3g} years",
            "with unrecoverable read errors in rebuilds",
        ),
    ]
    if rebuild.get("hours") is not None:
        headline.append(
            Headline(
                "rebuild",
                f"{float(rebuild['hours']):,.1f} hours",
                f"{number_text(float(rebuild.get('mbps') or 0))} MB/s, {rebuild.get('source', '')}",
            )
        )
    return headline


def _methods_table(methods: list[Method], mission: float) -> Table:
    return Table(
        "MTTDL by method (years)",
        ("method", "MTTDL", "MTTDL with URE", f"P(loss) {mission:g} y"),
        tuple(
            (
                text_cell(name),
                number_cell(None if plain is None else float(plain) / HOURS_PER_YEAR, 1),
                number_cell(None if ure is None else float(ure) / HOURS_PER_YEAR, 1),
                number_cell(loss, 4),
            )
            for name, plain, ure, loss in methods
            if plain is not None
        ),
        frozenset({"MTTDL", "MTTDL with URE", f"P(loss) {mission:g} y"}),
    )


def _inputs_table(document: Mapping[str, Any]) -> Table:
    """The figures the estimate rests on and where each came from."""
    sources = document.get("sources") or {}
    rows = (
        ("MTBF", "mtbf_hours", f"{float(document.get('mtbf_hours') or 0):,.0f} hours"),
        ("AFR", "afr_percent", f"{float(document.get('afr_percent') or 0):.2f} %"),
        ("URE", "ure_per_bits", f"1 per {float(document.get('ure_per_bits') or 0):.0e} bits"),
        (
            "replacement after",
            "replace_after_hours",
            f"{float(document.get('replace_after_hours') or 0):g} hours",
        ),
        ("hot spare", "hot_spare", "yes" if document.get("hot_spare") else "no"),
    )
    return Table(
        "inputs",
        ("figure", "value", "source"),
        tuple(
            (text_cell(name), text_cell(value), text_cell(sources.get(key, "")))
            for name, key, value in rows
        ),
    )
