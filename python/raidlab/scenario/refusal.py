"""The user's name for a scenario path the native side refused: a CLI flag or a TOML
key instead of ``array.drive.zones``. A leaf, so both the native boundary
(:mod:`raidlab.scenario.native`) and the table of limits (:mod:`raidlab.scenario.limits`)
use it without importing each other."""

from __future__ import annotations

from collections.abc import Mapping

from raidlab.errors import RaidlabError


def relabel(path: str, labels: Mapping[str, str]) -> str:
    """The user's name for a path the native side refused: the label of the longest
    prefix of ``path`` in ``labels``, with the rest of the path after it
    (``array.drive.zones`` with ``{"array.drive": "ssd.toml: array.drive"}`` is
    ``ssd.toml: array.drive.zones``). A path no label covers is returned unchanged."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in labels:
            rest = ".".join(parts[end:])
            return f"{labels[prefix]}.{rest}" if rest else labels[prefix]
    return path


def refused(found: tuple[str, str] | None, labels: Mapping[str, str]) -> None:
    """Raise the native side's refusal ``found`` (path, message), if any, naming the
    user's label for the path."""
    if found is not None:
        path, message = found
        raise RaidlabError(relabel(path, labels), message)
