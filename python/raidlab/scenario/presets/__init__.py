"""Drive, controller and host presets shipped with the package (``presets/*.toml``).

Presets are read with importlib.resources, so an installed wheel finds them. Each
preset parameter cites its source in a comment next to it in the TOML file.
"""

from __future__ import annotations

import difflib
import tomllib
from functools import cache
from importlib import resources
from typing import Any

from raidlab.errors import RaidlabError

PresetTable = dict[str, dict[str, Any]]

# The preset group -> the file that holds it and the word used in error messages.
_GROUPS: dict[str, str] = {
    "drive": "drives.toml",
    "controller": "controllers.toml",
    "host": "hosts.toml",
}

# A drive preset's `[NAME.reliability]` table: figures about endurance and failure, not
# about performance, so they never reach the simulator's drive spec. Keys (all optional,
# each citing its source like every preset figure):
#   mtbf_hours       datasheet MTBF
#   afr_percent      annualised failure rate, % per year
#   ure_per_bits     one unrecoverable read error per this many bits read (1e14, 1e15)
#   tbw_bytes        rated endurance, bytes written by the host
#   dwpd             rated drive writes per day over warranty_years
#   warranty_years   the warranty the endurance figures are rated over
#   rated_pe_cycles  NAND program/erase cycles the flash is rated for
RELIABILITY_TABLE = "reliability"

DEFAULT_CONTROLLER = "hba"
DEFAULT_HOST = "default"


@cache
def _load_group(group: str) -> PresetTable:
    text = resources.files("raidlab.scenario.presets").joinpath(_GROUPS[group]).read_text("utf-8")
    return tomllib.loads(text)


def preset_names(group: str) -> list[str]:
    """Names of the presets in ``group`` (``drive``, ``controller`` or ``host``)."""
    return list(_load_group(group))


def preset(group: str, name: str, field: str) -> dict[str, Any]:
    """A copy of one preset (without its reliability table); an unknown name is a
    RaidlabError with a suggestion."""
    table = _load_group(group)
    if name not in table:
        raise RaidlabError(field, unknown_name_message(f"{group} preset", name, list(table)))
    entry = dict(table[name])
    entry.pop(RELIABILITY_TABLE, None)
    return entry


def reliability(name: str, field: str = "drive") -> dict[str, Any]:
    """A drive preset's `[NAME.reliability]` figures (empty where it has none)."""
    table = _load_group("drive")
    if name not in table:
        raise RaidlabError(field, unknown_name_message("drive preset", name, list(table)))
    return dict(table[name].get(RELIABILITY_TABLE, {}))


def unknown_name_message(what: str, name: str, known: list[str]) -> str:
    """``unknown drive preset 'x': did you mean y?`` or the list of known names."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    if close:
        return f"unknown {what} '{name}': did you mean {close[0]}?"
    return f"unknown {what} '{name}'; known: {', '.join(known)}"
