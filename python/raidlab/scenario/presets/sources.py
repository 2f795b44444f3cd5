"""The source of every preset parameter, read from the preset TOML files' comments.

A preset figure cites its source in a trailing comment (``rpm = 7_200   # study: 7200
rpm``). ``tomllib`` drops comments, so this module scans the text itself: table
headers (``[NAME]``, ``[NAME.ftl]``), ``key = value  # source`` lines, and the comment
lines inside a table (its notes). A ``#`` inside a quoted string is not a comment, and a
value may run over several lines (an array or an inline table) until its brackets
close. Values come from ``tomllib`` (the one parser of values); this module gives
only the text of the comments, and :func:`preset_parameters` pairs the two.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

# A bare or quoted key (``rpm``, ``"my key"``) followed by ``=``.
_KEY = re.compile(r"""^\s*(?P<key>[A-Za-z0-9_-]+|"[^"]*"|'[^']*')\s*=""")
_HEADER = re.compile(r"^\s*\[(?P<name>[^\[\]]+)\]\s*(?:#.*)?$")
# A value that runs over more lines than this is malformed TOML; stop looking.
CONTINUATION_LINES_MAX = 1_000


@dataclass
class TableSources:
    """One TOML table's comments: each key's trailing comment and the table's notes
    (comment lines inside the table, in order)."""

    keys: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Parameter:
    """One preset parameter: its table (``""`` for the preset's own, ``"ftl"``,
    ``"reliability"``), key, value (as tomllib read it) and source (``""`` where the
    file gives none)."""

    table: str
    key: str
    value: Any
    source: str

    @property
    def name(self) -> str:
        """``rpm`` or ``ftl.spare_percent``."""
        return f"{self.table}.{self.key}" if self.table else self.key


def _split_comment(line: str, depth: int) -> tuple[str, str | None, int]:
    """``line``'s code, its comment (None if none) and the bracket depth after it. A
    ``#`` inside a basic or literal string is text, not a comment."""
    quote: str | None = None
    escaped = False
    for index, char in enumerate(line):
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\" and quote == '"':
                escaped = True
            elif char == quote:
                quote = None
            continue
        if char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "#":
            return line[:index], line[index + 1 :].strip(), depth
    return line, None, depth


def _logical_lines(text: str) -> Iterator[tuple[str, list[str]]]:
    """Each statement of ``text`` (a header, a ``key = value`` that may span lines, or a
    comment line) with the comments found on its lines."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        code, comment, depth = _split_comment(lines[index], 0)
        comments = [comment] if comment else []
        index += 1
        if _KEY.match(code):
            extra = 0
            while depth > 0 and index < len(lines) and extra < CONTINUATION_LINES_MAX:
                more, comment, depth = _split_comment(lines[index], depth)
                code += "\n" + more
                if comment:
                    comments.append(comment)
                index += 1
                extra += 1
        yield code, comments


def parse_sources(text: str, root: str | None = None) -> dict[str, TableSources]:
    """The comments of a preset TOML file, by table path (``"intel-dc-s3500-80g"``,
    ``"intel-dc-s3500-80g.ftl"``). Comments before the first table (the file's header)
    are not any table's, unless ``root`` names the table the top level is (a file with
    one drive's keys at the top level): then they are its, and ``[ftl]`` is
    ``ROOT.ftl``."""
    tables: dict[str, TableSources] = {}
    current: TableSources | None = None
    if root is not None:
        current = tables.setdefault(root, TableSources())
    for code, comments in _logical_lines(text):
        stripped = code.strip()
        header = _HEADER.match(stripped) if stripped.startswith("[") else None
        if header is not None:
            path = ".".join(part.strip().strip("\"'") for part in header["name"].split("."))
            path = path if root is None else f"{root}.{path}"
            current = tables.setdefault(path, TableSources())
            continue
        if current is None:
            continue
        key = _KEY.match(code)
        if key is not None:
            current.keys[key["key"].strip("\"'")] = " ".join(comments)
        elif not stripped and comments:
            current.notes.append(comments[0])
    return tables


def preset_parameters(
    name: str, table: Mapping[str, Any], sources: Mapping[str, TableSources]
) -> list[Parameter]:
    """Every parameter of the preset ``name`` (its tomllib ``table``), subtables after
    the preset's own keys, each with its source from ``sources``."""
    out: list[Parameter] = []
    own = sources.get(name, TableSources())
    for key, value in table.items():
        if not isinstance(value, Mapping):
            out.append(Parameter("", key, value, own.keys.get(key, "")))
    for sub, value in table.items():
        if isinstance(value, Mapping):
            found = sources.get(f"{name}.{sub}", TableSources())
            for key, item in value.items():
                out.append(Parameter(sub, key, item, found.keys.get(key, "")))
    return out


def preset_notes(
    name: str, table: Mapping[str, Any], sources: Mapping[str, TableSources]
) -> list[str]:
    """The comment lines inside the preset's tables (its own, then its subtables')."""
    notes = list(sources.get(name, TableSources()).notes)
    for sub, value in table.items():
        if isinstance(value, Mapping):
            notes.extend(sources.get(f"{name}.{sub}", TableSources()).notes)
    return notes
