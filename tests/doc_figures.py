"""Figures the docs quote in prose and tables, read back from the docs so a test can
hold them against what the tool prints: a change that moves a figure fails until the
doc moves with it. The doc is the one place a figure is written; the tests only say
where to find it and how close the tool must come (the tolerance each states)."""

from __future__ import annotations

import re
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]


def doc_text(page: str) -> str:
    """The page with every run of whitespace as one space, so a quote may wrap."""
    return " ".join((CHECKOUT / page).read_text("utf-8").split())


def number(text: str) -> float:
    """A figure as the docs write it: 1,234.5, +4.1, -0.3, 118k, 2.5M."""
    text = text.replace(",", "").strip()
    scale = {"k": 1e3, "M": 1e6}.get(text[-1:], 1.0)
    return float(text.rstrip("kM")) * scale


def quoted(page: str, pattern: str) -> dict[str, float]:
    """The named groups of ``pattern`` (a regex over the page's text) as numbers; the
    pattern must match exactly once."""
    found = list(re.finditer(pattern, doc_text(page)))
    assert len(found) == 1, f"{page}: {pattern!r} matches {len(found)} times"
    return {name: number(value) for name, value in found[0].groupdict().items()}


def table_column(page: str, first_header: str, column: str) -> dict[str, float]:
    """A markdown table's column of numbers by its rows' first cell: the table whose
    header row starts with ``first_header``; a cell of ``+1.4 %`` is 1.4."""
    lines = (CHECKOUT / page).read_text("utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    header = [cell.strip() for cell in lines[start].strip("|").split("|")]
    index = header.index(column)
    values = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        values[cells[0]] = number(cells[index].rstrip("%").strip())
    return values
