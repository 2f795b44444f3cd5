"""Where results go: the consoles, JSON documents and DataFrame records.

Tables, CSV and JSON are rendered in ``raidlab.report``; commands only choose which.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleDimensions

from raidlab.errors import RaidlabError

# pandas loads where a frame is built, not with the module: the command line starts
# without it (docs/benchmarks.md, start-up).
if TYPE_CHECKING:
    import pandas as pd

# Width of a console that is not a terminal (a pipe, a file): a table there is read by
# a program or kept, so it prints whole, one row a line, however wide. Rich would take
# 80 columns and cut numbers to "51,9…" or fold a word a line. Tables and text never
# pad to the console's width, so the size costs nothing.
WIDTH_NOT_A_TERMINAL = 1_000_000


class ReportConsole(Console):
    """A rich Console as wide as the terminal, and unlimited when not a terminal."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self.is_terminal:
            return size
        return ConsoleDimensions(WIDTH_NOT_A_TERMINAL, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


# No emoji codes: ":name:" in a path or a label prints as typed (and their table is not
# loaded at start-up).
stdout = ReportConsole(soft_wrap=True, emoji=False)


stderr = ReportConsole(stderr=True, soft_wrap=True, emoji=False)


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads(frame.to_json(orient="records"))
    return records


def row_records(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``records`` of the DataFrame these plain rows would make, without pandas: its JSON
    writes a float with at most 10 decimals (``to_json``'s ``double_precision``) and NaN
    as null. `raidlab run --format json` prints its rows this way, so its start-up stays
    without pandas (0.4 s)."""

    def value(item: Any) -> Any:
        if isinstance(item, float):
            return None if math.isnan(item) else round(item, 10)
        return item

    return [{key: value(item) for key, item in row.items()} for row in rows]


def json_text(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2) + "\n"


def print_json(document: Mapping[str, Any]) -> None:
    sys.stdout.write(json_text(document))


# Output paths are checked before any simulation runs, so a typo costs nothing: the
# check writes (and removes) a probe file, the one test that holds for every reason a
# write fails (permissions, a read-only file system, /proc), root included.


def output_directory(path: str | Path, label: str) -> Path:
    """``path`` as a directory results can be written to: created, with its missing
    parents, if it does not exist."""
    path = Path(path)
    for ancestor in [path, *path.parents]:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise RaidlabError(label, f"{ancestor} is a file, not a directory")
            break
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RaidlabError(
            label, f"cannot create the directory {path}: {error.strerror or error}"
        ) from None
    _probe(path, label)
    return path


def output_file(path: str | Path, label: str) -> Path:
    """``path`` as a file that can be written: its directory must exist (it is not
    created: a typo in a directory name should not leave new directories behind)."""
    path = Path(path)
    parent = path.parent
    if path.is_dir():
        raise RaidlabError(label, f"{path} is a directory; give a file name in it")
    if not parent.exists():
        raise RaidlabError(label, f"the directory {parent} does not exist; create it first")
    if not parent.is_dir():
        raise RaidlabError(label, f"{parent} is a file, not a directory")
    _probe(parent, label)
    if path.exists() and not os.access(path, os.W_OK):
        raise RaidlabError(label, f"{path} exists and cannot be written")
    return path


def _probe(directory: Path, label: str) -> None:
    import tempfile  # where a directory is probed, not with every command

    try:
        with tempfile.TemporaryFile(dir=directory, prefix=".raidlab-probe-"):
            pass
    except OSError as error:
        raise RaidlabError(
            label, f"cannot write in the directory {directory}: {error.strerror or error}"
        ) from None
