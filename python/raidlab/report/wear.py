"""Wear as text: the `--explain` lines of each SSD member's flash wear and SMART
attributes, and `raidlab life`'s table (docs/wear.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raidlab.report.tables import number


def _mb(value: float) -> str:
    return f"{value / 1e6:,.1f}"


def _smart_text(smart: Mapping[str, Any]) -> str:
    parts = []
    for attribute in smart.get("attributes", []):
        name, value, raw = attribute["name"], attribute["value"], attribute["raw"]
        parts.append(f"{int(attribute['id']):02X} {name} {value} (raw {raw})")
    return ", ".join(parts)


def wear_lines(explain: Mapping[str, Any]) -> list[str]:
    """Per SSD member: host and NAND writes, write amplification, P/E cycles used (mean
    and worst block) against the rated ones, and the SMART attributes the interval
    moved (nothing when no member has an FTL model)."""
    wear = explain.get("wear") or []
    if not wear:
        return []
    lines = ["flash wear over the measured interval (per SSD member):"]
    ratio = explain.get("nand_write_bytes_per_host_byte")
    if ratio is not None:
        lines.append(f"  NAND bytes written per host byte written to the array: {ratio:.3f}")
    for member in wear:
        rated = member.get("rated_pe_cycles")
        used = (
            f", {member['pe_cycles_used_percent']:.2e} % of {rated:,} rated"
            if rated and member.get("pe_cycles_used_percent") is not None
            else ""
        )
        lines.append(
            f"  member {member['member']}: host {_mb(member['host_write_bytes'])} MB, "
            f"NAND {_mb(member['nand_write_bytes'])} MB, "
            f"WA {float(member['write_amplification']):.2f}, "
            f"{int(member['erased_blocks']):,} blocks erased; P/E cycles used "
            f"{float(member['erase_count_mean']):.3e} mean, "
            f"{float(member['erase_count_max']):.3e} worst block{used}"
        )
        if member.get("smart"):
            lines.append(f"    SMART: {_smart_text(member['smart'])}")
    smart = next((m["smart"] for m in wear if m.get("smart")), None)
    if smart:
        lines.append(f"  SMART meanings: {smart['convention']}; {smart['note']}")
    return lines


def _years(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def life_table_rows(report: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = [
        "member",
        "host GB/day",
        "NAND GB/day",
        "WA",
        "P/E per day",
        "years (P/E)",
        "years (P/E, worst block)",
        "years (TBW)",
    ]
    body = [
        [
            str(d["member"]),
            number(d["host_write_bytes_per_day"] / 1e9, 1),
            number(d["nand_write_bytes_per_day"] / 1e9, 1),
            number(d["write_amplification"], 2),
            f"{d['pe_cycles_per_day']:.3g}",
            _years(d["years_to_rated_pe"]),
            _years(d["years_to_rated_pe_worst_block"]),
            _years(d["years_to_rated_tbw"]),
        ]
        for d in report["drives"]
    ]
    return header, body


def life_notes(report: Mapping[str, Any]) -> list[str]:
    """What the projection rests on, under the table."""
    drives = report["drives"]
    first = drives[0] if drives else {}
    rated = first.get("rated_pe_cycles")
    tbw = first.get("rated_tbw_bytes")
    preset = report.get("drive_preset") or "a drive given field by field (no datasheet figures)"
    lines = [
        f"drive: {preset}; {report['duty_hours_per_day']:.2f} h a day of this workload, "
        f"{report['host_write_bytes_per_day'] / 1e12:.3g} TB a day written by the host",
        f"years (P/E): rated {rated:,} P/E cycles over the simulated erases (mean block)"
        if rated
        else "years (P/E): the preset rates no P/E cycles",
        f"years (TBW): datasheet {tbw / 1e12:,.0f} TB written over the host writes each "
        "drive received"
        if tbw
        else "years (TBW): the preset gives no TBW or DWPD",
        f"years = {first.get('basis', '-')}; {report['note']} "
        f"({report['simulated_seconds']:.3g} s simulated)",
    ]
    unerased = [
        str(d["member"])
        for d in drives
        if d["host_write_bytes_per_day"] > 0 and d["pe_cycles_per_day"] == 0
    ]
    if unerased:
        lines.append(
            f"member {', '.join(unerased)}: no block erased in the run, too short to project "
            "P/E wear (give more --ios or a longer trace)"
        )
    if report.get("warranty_years"):
        lines.append(f"warranty: {report['warranty_years']} years")
    return lines
