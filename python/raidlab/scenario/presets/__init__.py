"""Drive, controller and host presets shipped with the package (``presets/*.toml``).

Presets are read from the package's directory, where an installed wheel puts them. Each
preset parameter cites its source in a comment next to it in the TOML file.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.scenario.presets.sources import Parameter, parse_sources, preset_notes
from raidlab.scenario.presets.sources import preset_parameters as parameters_of

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

# A drive preset's `[NAME.qos]` table: the datasheet's quality-of-service figures, the
# latency a share of commands finishes within (4 KiB random, steady state), which the
# simulated percentiles are checked against (docs/model.md, "Latency percentiles"); they
# never reach the simulator. Keys, microseconds, each citing its source:
#   read_999_qd1_us    99.9 % of 4 KiB random reads at queue depth 1 finish within
#   write_999_qd1_us   99.9 % of 4 KiB random writes at queue depth 1 finish within
# (and as these for other shares and depths: read_999999_qd32_us is 99.9999 % at QD 32).
QOS_TABLE = "qos"
_NOT_SIMULATED = (RELIABILITY_TABLE, QOS_TABLE)

DEFAULT_CONTROLLER = "hba"
DEFAULT_HOST = "default"


def _group_file(group: str) -> Path:
    # Next to this module, in the package (a wheel installs it as a directory: the
    # native module in it cannot load from a zip). Not importlib.resources, which costs
    # a short run more to import than reading the file.
    return Path(__file__).with_name(_GROUPS[group])


@cache
def _load_group(group: str) -> PresetTable:
    return tomllib.loads(_group_text(group))


# A preset's table or subtable header, `[name]` or `[name.sub]`, at the start of a line,
# as the files are written (tests check every preset read alone against the whole file).
_HEADER = re.compile(r"^\[([^\].]+)[\].]", re.MULTILINE)


@cache
def _preset_texts(group: str) -> dict[str, str]:
    """The TOML of each preset of ``group`` (its table and subtables) by name, in the
    file's order: a run parses the few presets it uses, not every file whole (parsing
    them was a tenth of a short run's start-up)."""
    text = _group_text(group)
    starts = [(match.start(), match.group(1)) for match in _HEADER.finditer(text)]
    texts: dict[str, str] = {}
    for (start, name), (end, _) in zip(starts, [*starts[1:], (len(text), "")], strict=True):
        texts[name] = texts.get(name, "") + text[start:end]
    return texts


@cache
def _load_preset(group: str, name: str) -> dict[str, Any]:
    return tomllib.loads(_preset_texts(group)[name])[name]


def preset_names(group: str) -> list[str]:
    """Names of the presets in ``group`` (``drive``, ``controller`` or ``host``)."""
    return list(_load_group(group))


def preset(group: str, name: str, field: str) -> dict[str, Any]:
    """A copy of one preset (without its reliability and QoS tables); an unknown name
    is a RaidlabError with a suggestion."""
    names = _preset_texts(group)
    if name not in names:
        raise RaidlabError(field, unknown_name_message(f"{group} preset", name, list(names)))
    entry = dict(_load_preset(group, name))
    for key in _NOT_SIMULATED:
        entry.pop(key, None)
    return entry


def reliability(name: str, field: str = "drive") -> dict[str, Any]:
    """A drive preset's `[NAME.reliability]` figures (empty where it has none)."""
    table = _load_group("drive")
    if name not in table:
        raise RaidlabError(field, unknown_name_message("drive preset", name, list(table)))
    return dict(table[name].get(RELIABILITY_TABLE, {}))


def qos(name: str, field: str = "drive") -> dict[str, Any]:
    """A drive preset's `[NAME.qos]` figures, microseconds (empty where it has none)."""
    table = _load_group("drive")
    if name not in table:
        raise RaidlabError(field, unknown_name_message("drive preset", name, list(table)))
    return dict(table[name].get(QOS_TABLE, {}))


def unknown_name_message(what: str, name: str, known: list[str]) -> str:
    """``unknown drive preset 'x': did you mean y?`` or the list of known names."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    if close:
        return f"unknown {what} '{name}': did you mean {close[0]}?"
    return f"unknown {what} '{name}'; known: {', '.join(known)}"


# --- sources: the comments next to every figure ---------------------------------------


def group_names() -> list[str]:
    """The preset groups: ``drive``, ``controller``, ``host``."""
    return list(_GROUPS)


@cache
def _group_text(group: str) -> str:
    return _group_file(group).read_text("utf-8")


def preset_parameters(group: str, name: str, field: str) -> list[Parameter]:
    """Every parameter of one preset, subtables (``ftl``, ``reliability``) included,
    each with the source its trailing comment cites (``""`` where it cites none)."""
    table = _load_group(group)
    if name not in table:
        raise RaidlabError(field, unknown_name_message(f"{group} preset", name, list(table)))
    return parameters_of(name, table[name], parse_sources(_group_text(group)))


def preset_table_notes(group: str, name: str) -> list[str]:
    """The comment lines inside one preset's tables (what its figures rest on)."""
    return preset_notes(name, _load_group(group)[name], parse_sources(_group_text(group)))


def groups_of(name: str) -> list[str]:
    """The groups that hold a preset called ``name`` (usually one, or none)."""
    return [group for group in _GROUPS if name in _load_group(group)]


# --- drive files: a preset of one's own drive (`raidlab calibrate` writes them) --------


def is_drive_file(value: str) -> bool:
    """Whether ``--drive VALUE`` names a TOML file rather than a preset: it ends in
    ``.toml`` or has a directory part (preset names have neither)."""
    return value.lower().endswith(".toml") or "/" in value or "\\" in value


@dataclass(frozen=True)
class DriveFile:
    """A drive preset file: the preset's ``name``, its ``table`` (as in drives.toml,
    subtables included) and the file's ``text`` (for the sources in its comments)."""

    name: str
    table: dict[str, Any]
    text: str


def load_drive_file(path: str | Path, field: str) -> DriveFile:
    """Read a drive preset file: one ``[NAME]`` table (with its ``[NAME.ftl]`` and
    ``[NAME.reliability]`` subtables), as ``raidlab calibrate`` writes and drives.toml
    holds, or the drive's keys at the top level. Errors name ``field`` and the file."""
    path = Path(path)
    where = f"{field}: {path}"
    if path.is_dir():
        raise RaidlabError(
            field, f"{path} is a directory; give a drive preset name or a drive's .toml file"
        )
    if not path.is_file():
        raise RaidlabError(
            field, f"no such drive file: {path} (a drive preset name or a .toml file)"
        )
    try:
        text = path.read_text("utf-8")
        document = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or error
        raise RaidlabError(where, f"cannot read: {reason}") from None
    except tomllib.TOMLDecodeError as error:
        raise RaidlabError(where, f"malformed TOML: {error}") from None
    if "kind" in document:
        return DriveFile(path.stem, document, text)
    tables = [key for key, value in document.items() if isinstance(value, dict)]
    if len(tables) != 1 or len(document) != 1:
        found = ", ".join(tables) or "none"
        raise RaidlabError(
            where,
            f"a drive file holds one drive table [NAME] (with kind = \"ssd\" or \"hdd\"); "
            f"found tables: {found}",
        )
    name = tables[0]
    table = document[name]
    if "kind" not in table:
        raise RaidlabError(f"{where}: {name}", 'missing kind ("ssd" or "hdd")')
    return DriveFile(name, table, text)


def drive_file_preset(path: str | Path, field: str) -> tuple[str, dict[str, Any]]:
    """A drive file's preset name and table, as :func:`preset` gives a preset
    (reliability and QoS left out)."""
    drive = load_drive_file(path, field)
    entry = dict(drive.table)
    for key in _NOT_SIMULATED:
        entry.pop(key, None)
    return drive.name, entry


def drive_file_parameters(
    path: str | Path, field: str
) -> tuple[DriveFile, list[Parameter], list[str]]:
    """A drive file, every parameter of it with its source comment, and the comment
    lines inside its tables."""
    drive = load_drive_file(path, field)
    flat = "kind" in tomllib.loads(drive.text)  # the drive's keys at the top level
    sources = parse_sources(drive.text, root=drive.name if flat else None)
    return (
        drive,
        parameters_of(drive.name, drive.table, sources),
        preset_notes(drive.name, drive.table, sources),
    )
