"""What a report holds, as plain data: a reader builds it from a command's output
(``raidlab.report.html.readers``), the page renders it (``raidlab.report.html.page``).
Nothing here is HTML: text is escaped where it is rendered."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cell:
    """A table cell: its text, the value it sorts by (a number sorts numerically;
    None sorts last), and an optional class (``pass``, ``fail``, ``suspect``)."""

    text: str
    sort: float | str | None = None
    css: str = ""


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    # Columns whose cells are numbers: right-aligned, sorted numerically.
    numeric: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        assert all(len(row) == len(self.columns) for row in self.rows), self.title


@dataclass(frozen=True)
class Figure:
    """SVG panels in a grid, two a row. ``log_svgs[i]``, when given, is ``svgs[i]``
    with a log y axis; the page shows one or the other by its "log y-axis" switch."""

    title: str
    svgs: tuple[str, ...]
    log_svgs: tuple[str, ...] = ()
    caption: str = ""


@dataclass(frozen=True)
class Section:
    heading: str
    lines: tuple[str, ...] = ()
    figures: tuple[Figure, ...] = ()
    tables: tuple[Table, ...] = ()


@dataclass(frozen=True)
class Headline:
    label: str
    value: str
    note: str = ""


@dataclass
class Report:
    """A whole report. ``kind`` names the reader that built it (study, claims,
    advise, run, atto, replay); ``repeat`` holds what repeats the run: the command
    line when known and the scenario or array document."""

    kind: str
    title: str
    subtitle: str
    headline: list[Headline]
    sections: list[Section]
    command: str | None = None
    repeat_documents: dict[str, Any] = field(default_factory=dict)
    repeat_note: str = ""
