"""Tuning knobs applied on top of an array's presets: the CLI's --write-cache, --bbu,
--read-ahead, --op, --precondition, --fastpath, --deleted, --trim-passthrough and
--scheduler, checked as the presets are."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.scenario import limits, native
from raidlab.scenario.array import check_scheduler_tables
from raidlab.scenario.presets import preset, preset_names

WRITE_CACHE_MODES = ("wt", "wb")
READ_AHEAD_MODES = ("none", "adaptive", "always")
# Read-ahead a controller without its own gets when asked for it: assumed, typical of
# RAID firmware, a 64 KiB segment per stream; how many are in flight is the native
# table's default of ``array.controller.read_ahead_segments``.
READ_AHEAD_DEFAULT_BYTES = 65_536


@dataclass(frozen=True)
class Tuning:
    """Knobs applied on top of an array's presets; None leaves the preset's value."""

    write_cache: str | None = None
    bbu: str | None = None
    read_ahead: str | None = None
    op: str | None = None
    precondition: str | None = None
    scheduler: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    # FastPath on (True); None or False leaves the controller's normal path.
    fastpath: bool | None = None
    # Share of the array the host deleted after preconditioning, e.g. "50%".
    deleted: str | None = None
    # Whether the controller passes TRIM on: "yes" or "no" (default: the preset's).
    trim_passthrough: str | None = None

    def label(self, key: str) -> str:
        return self.labels.get(key, key)


def drive_state_default() -> str:
    """The state every SSD with an FTL model starts in unless told otherwise
    (``--precondition``, ``[array.drive.ftl] precondition``): the scenario schema's one
    default, steady state as SNIA PTS prescribes. No drive preset sets its own."""
    return str(limits.field("array.drive.ftl.precondition", "ssd").default)


def drive_state(array: Mapping[str, Any]) -> str | None:
    """The state ``array``'s drives start in: their FTL's precondition, None for a
    drive without an FTL model (an HDD, or an SSD whose garbage collection is not
    modelled)."""
    ftl = array.get("drive", {}).get("ftl")
    return None if not ftl else str(ftl.get("precondition", drive_state_default()))


def write_back_cache_bytes(controller: Mapping[str, Any]) -> int:
    """The controller's cache when it caches writes (write-back), else 0."""
    return int(controller.get("cache_bytes") or 0) if controller.get("write_back") else 0


def drive_state_note(array: Mapping[str, Any], separator: str = "; ") -> str:
    """The drive state of ``array``'s SSDs for a report title, after ``separator`` (""
    for drives without an FTL model, whose state the simulator does not track)."""
    state = drive_state(array)
    return "" if state is None else f"{separator}drive state {state}"


def _choice(value: str, allowed: tuple[str, ...], label: str) -> str:
    if value not in allowed:
        raise RaidlabError(label, f"must be one of {', '.join(allowed)}, got {value!r}")
    return value


def fastpath_controllers() -> list[str]:
    """Controller presets that have a FastPath (a ``fastpath_overhead_ns``)."""
    return [
        name
        for name in preset_names("controller")
        if "fastpath_overhead_ns" in preset("controller", name, "controller")
    ]


def _tune_fastpath(controller: dict[str, Any], tuning: Tuning) -> None:
    """FastPath on: write-through, no read-ahead, the cut-through per-I/O cost."""
    label = tuning.label("fastpath")
    if controller.get("fastpath_overhead_ns") is None:
        raise RaidlabError(
            label,
            f"controller {controller.get('name')!r} has no FastPath; controllers with one: "
            f"{', '.join(fastpath_controllers())}",
        )
    if tuning.write_cache == "wb":
        raise RaidlabError(
            label,
            f"FastPath needs write-through; refused with {tuning.label('write_cache')} wb",
        )
    if tuning.read_ahead not in (None, "none"):
        raise RaidlabError(
            label,
            f"FastPath needs no read-ahead; refused with {tuning.label('read_ahead')} "
            f"{tuning.read_ahead}",
        )
    controller["write_back"] = False
    controller["read_ahead_bytes"] = 0
    controller["read_ahead_always"] = False
    controller["fastpath"] = True


def _tune_deleted(array: dict[str, Any], tuning: Tuning) -> None:
    """The share of the array the host deleted (SSDs with an FTL model only)."""
    label = tuning.label("deleted")
    if array["drive"].get("kind") != "ssd" or not array["drive"].get("ftl"):
        raise RaidlabError(
            label,
            "deleting data matters only to SSDs with an FTL model; give one in "
            "[array.drive.ftl] (see docs/scenario.md)",
        )
    deleted = limits.parse_path(tuning.deleted, "array.deleted_percent", label)
    array.pop("deleted_percent", None)
    if deleted:
        array["deleted_percent"] = deleted


def _tune_read_ahead(controller: dict[str, Any], mode: str) -> None:
    """Read-ahead off, adaptive or always; a controller without its own read-ahead
    figures gets READ_AHEAD_DEFAULT_BYTES in the native default's segments."""
    if mode == "none":
        controller["read_ahead_bytes"] = 0
        controller["read_ahead_always"] = False
        return
    if not controller.get("read_ahead_bytes"):
        controller["read_ahead_bytes"] = READ_AHEAD_DEFAULT_BYTES
        controller["read_ahead_segments"] = limits.field(
            "array.controller.read_ahead_segments"
        ).default
    controller["read_ahead_always"] = mode == "always"


def _tune_write_cache(controller: dict[str, Any], tuning: Tuning) -> None:
    """Write-back or write-through, and the backup unit write-back needs."""
    wb = controller.get("write_back", False)
    if tuning.write_cache is not None:
        wb = _choice(tuning.write_cache, WRITE_CACHE_MODES, tuning.label("write_cache")) == "wb"
    name = str(controller.get("name", ""))
    try:
        bbu = bool(preset("controller", name, "controller").get("bbu", False))
    except RaidlabError:
        bbu = False
    if tuning.bbu is not None:
        bbu = _choice(tuning.bbu, ("yes", "no"), tuning.label("bbu")) == "yes"
    if tuning.write_cache is None and not bbu:
        # A preset's default write-back is MegaRAID's "Write Back with BBU": without a
        # backup unit the firmware runs the virtual drive write-through (MegaRAID
        # Storage Manager user guide, WBBBU). Only an explicit wb is refused below.
        wb = False
    # The rules are the native side's (a cache to write back into, no FastPath, a
    # backup unit); the refusal names the flag, and the backup unit's in the flags' terms.
    found = native.check_controller_preset(
        {
            "bbu": bbu,
            "write_back": wb,
            "cache_bytes": controller.get("cache_bytes", 0),
            "fastpath": bool(controller.get("fastpath", False)),
        }
    )
    if found is not None and found[0] == "array.controller.write_back":
        raise RaidlabError(
            tuning.label("write_cache"),
            f"write-back is refused without a battery/flash backup unit "
            f"({tuning.label('bbu')} no), as the controller's firmware does; give "
            f"{tuning.label('bbu')} yes",
        )
    if found is not None:
        raise RaidlabError(tuning.label("write_cache"), f"controller {name!r}: {found[1]}")
    controller["write_back"] = wb


def _tune_ftl(array: dict[str, Any], tuning: Tuning) -> None:
    """The SSDs' over-provisioning and starting state (drives with an FTL model)."""
    ftl = array["drive"].get("ftl")
    if not ftl:
        raise RaidlabError(
            tuning.label("op" if tuning.op is not None else "precondition"),
            "the drive has no FTL model; give one in [array.drive.ftl] (see docs/scenario.md)",
        )
    ftl = dict(ftl)
    if tuning.op is not None:
        ftl["op_percent"] = limits.parse_path(
            tuning.op, "array.drive.ftl.op_percent", tuning.label("op"), "ssd"
        )
    if tuning.precondition is not None:
        ftl["precondition"] = _choice(
            tuning.precondition,
            limits.choices("array.drive.ftl.precondition", "ssd"),
            tuning.label("precondition"),
        )
    array["drive"]["ftl"] = ftl


def tune_array(array: dict[str, Any], tuning: Tuning) -> dict[str, Any]:
    """``array`` with the tuning knobs applied, checked as the presets are (in this
    order, so a command line with two bad knobs is told of the same one)."""
    array = {**array, "controller": dict(array["controller"]), "drive": dict(array["drive"])}
    controller = array["controller"]
    if tuning.trim_passthrough is not None:
        controller["trim_passthrough"] = (
            _choice(tuning.trim_passthrough, ("yes", "no"), tuning.label("trim_passthrough"))
            == "yes"
        )
    if tuning.deleted is not None:
        _tune_deleted(array, tuning)
    if tuning.read_ahead is not None:
        mode = _choice(tuning.read_ahead, READ_AHEAD_MODES, tuning.label("read_ahead"))
        _tune_read_ahead(controller, mode)
    if tuning.write_cache is not None or tuning.bbu is not None:
        _tune_write_cache(controller, tuning)
    if tuning.op is not None or tuning.precondition is not None:
        _tune_ftl(array, tuning)
    if tuning.fastpath:
        _tune_fastpath(controller, tuning)
    if tuning.scheduler is not None:
        label = tuning.label("scheduler")
        scheduler = _choice(tuning.scheduler, limits.choices("array.host.scheduler"), label)
        array["host"] = {**array["host"], "scheduler": scheduler}
        check_scheduler_tables(array, "host", label)
    return array
