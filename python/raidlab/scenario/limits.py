"""What a valid scenario is, as the native side declares it (``_native.limits()`` and
``_native.levels()``), and the user's name for a field it refuses.

Python keeps no bound or level rule of its own (docs/scenario.md, "Validity"). It
parses a user's value by the kind the native table gives the field (a size such as
``16K`` for ``bytes``, ``unlimited`` for a nullable rate, ``50%`` for a percentage),
asks the native side whether the value is allowed, and when the native side refuses a
path (``array.drive.zones``) names the user's flag or TOML key instead
(:func:`relabel`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.scenario import native

# The user's name for a refused path, re-exported: callers ask limits for both.
from raidlab.scenario.refusal import refused as refused
from raidlab.scenario.refusal import relabel as relabel
from raidlab.units import parse_size

UNLIMITED = "unlimited"


@dataclass(frozen=True)
class Field:
    """One entry of the native table of limits (see docs/scenario.md)."""

    path: str
    scope: str
    kind: str
    required: bool
    nullable: bool
    doc: str
    min: float | int | None = None
    max: float | int | None = None
    min_exclusive: bool = False
    multiple_of: int | None = None
    power_of_two: bool = False
    choices: tuple[str, ...] = ()
    items_max: int | None = None
    default: Any = None

    @property
    def key(self) -> str:
        """The field's own name, the last segment of its path."""
        return self.path.rsplit(".", 1)[-1]

    @property
    def parent(self) -> str:
        """The path of the table the field is in."""
        return self.path.rsplit(".", 1)[0] if "." in self.path else ""

    def applies(self, scope: str) -> bool:
        """Whether the field belongs to a table of ``scope`` (a drive or workload kind)."""
        return self.scope in ("always", scope)


@cache
def all_fields() -> tuple[Field, ...]:
    """Every field the native side declares, in its order (the order scenarios list them)."""
    return tuple(
        Field(**{**entry, "choices": tuple(entry.get("choices", ()))})
        for entry in native.limits_table()
    )


def fields(table: str, scope: str = "always") -> dict[str, Field]:
    """The fields directly under ``table`` (``array.drive``) for ``scope``, in order."""
    return {f.key: f for f in all_fields() if f.parent == table and f.applies(scope)}


def field(path: str, scope: str = "always") -> Field:
    """The field at ``path`` for ``scope``."""
    for entry in all_fields():
        if entry.path == path and entry.applies(scope):
            return entry
    raise KeyError(f"the native side declares no field {path} ({scope})")


def choices(path: str, scope: str = "always") -> tuple[str, ...]:
    """The allowed values of a choice field (``array.host.scheduler``)."""
    return field(path, scope).choices


@cache
def levels() -> dict[int | str, dict[str, Any]]:
    """The level rules of the layout crate, keyed by level as the scenario names it."""
    return {entry["level"]: entry for entry in native.levels_table()}


# --- parsing by kind -----------------------------------------------------------------


def _number(value: Any, label: str, what: str) -> float | int:
    if isinstance(value, bool):
        raise RaidlabError(label, f"expected {what}, got {value!r}")
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            return float(value.replace("_", ""))
        except ValueError:
            pass
    raise RaidlabError(label, f"expected {what}, got {value!r}")


def whole(value: Any, label: str) -> int:
    """A whole number, or a string of digits (CLI flags, TOML)."""
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value.replace("_", "")):
        return int(value.replace("_", ""))
    if isinstance(value, bool) or not isinstance(value, int):
        raise RaidlabError(label, f"expected a whole number, got {value!r}")
    return value


def parse(value: Any, entry: Field, label: str) -> Any:
    """``value`` as the scenario writes it, parsed by the kind of ``entry`` (units,
    ``unlimited``, percentages); bounds are not checked here (see :func:`check`)."""
    if entry.nullable and (
        value is None
        or (entry.kind == "rate" and value == UNLIMITED)
        or (entry.kind == "ns" and value == "none")
    ):
        return None
    if entry.kind == "bytes":
        return parse_size(value, label)
    if entry.kind == "percent":
        if isinstance(value, bool):
            raise RaidlabError(label, f"expected a percentage, got {value!r}")
        return float(_number(str(value).strip().rstrip("%"), label, "a percentage"))
    if entry.kind in ("rate", "number"):
        what = "a rate in bytes per second" if entry.kind == "rate" else "a number"
        number = _number(value, label, what)
        if not math.isfinite(number):
            raise RaidlabError(label, f"must be finite, got {value!r}")
        if entry.kind == "number":
            return float(number)
        # Whole rates go out as integers so the native side may use either u64 or f64.
        return int(number) if float(number).is_integer() else float(number)
    if entry.kind in ("count", "ns", "kib"):
        return whole(value, label)
    return value


def check(entry: Field, value: Any, label: str) -> None:
    """Ask the native side whether ``value`` is allowed for ``entry`` on its own; a
    refusal names ``label``."""
    refused = native.check_field(entry.path, value, entry.scope)
    if refused is not None:
        raise RaidlabError(label, refused[1])


def parse_checked(value: Any, entry: Field, label: str) -> Any:
    """:func:`parse`, then :func:`check`."""
    parsed = parse(value, entry, label)
    check(entry, parsed, label)
    return parsed


def parse_path(value: Any, path: str, label: str, scope: str = "always") -> Any:
    """The value of the field at ``path`` parsed by its kind and checked by the native
    side: ``parse_path("32", "workload.iodepth", "--iodepth", "jobs")``."""
    return parse_checked(value, field(path, scope), label)
