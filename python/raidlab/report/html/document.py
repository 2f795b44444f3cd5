"""What every kind of input is checked with: the label errors carry, the largest input
read, and the checks that a document's rows have the keys and numbers a kind needs.

A leaf: the kinds (``kinds``, ``sweep``, ``cache_study``) import it, and ``readers``
imports them, so no kind reaches back into the readers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from raidlab.errors import RaidlabError

# Reports are read whole; a study's JSON is ~100 KB, a large advise a few MB.
INPUT_BYTES_MAX = 256 << 20
# Errors about the input name it so, as the command's argument is named.
INPUT_LABEL = "INPUT"


def need(row: Any, keys: Sequence[str], where: str) -> Mapping[str, Any]:
    """``row`` if it is an object with every key of ``keys``, else an error naming the
    first missing one (``records[3].qd``)."""
    if not isinstance(row, Mapping):
        raise RaidlabError(INPUT_LABEL, f"{where}: expected an object")
    for key in keys:
        if key not in row:
            raise RaidlabError(
                INPUT_LABEL, f"{where}.{key}: missing (the row needs {', '.join(keys)})"
            )
    return row


def need_rows(document: Mapping[str, Any], keys: Sequence[str]) -> list[Mapping[str, Any]]:
    records = document.get("records")
    if not isinstance(records, list) or not records:
        raise RaidlabError(INPUT_LABEL, "records: expected a non-empty list of rows")
    return [need(row, keys, f"records[{index}]") for index, row in enumerate(records)]


def need_number(row: Mapping[str, Any], key: str, where: str, allow_none: bool = False) -> None:
    value = row.get(key)
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RaidlabError(INPUT_LABEL, f"{where}.{key}: expected a number, got {value!r}")
