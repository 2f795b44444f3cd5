"""Array configuration: presets, overrides and array TOML files -> the scenario's ``array``.

Parse, then build: input is validated here, with an error naming the field, and only
plain data (the ``array`` object of docs/scenario.md) leaves this module.

Array TOML file (see docs/config.md and examples/ssd-raid0.toml)::

    [array]
    level = 5                       # 0, 1, 4, 5, 6, 10, 50, 60 or "concat"
    drives = 4                      # member count, 1..=256 (each level has a minimum)
    layout = "left-symmetric"       # RAID 5/6/50/60 parity layout, RAID 10 near/far/offset
    copies = 2                      # RAID 10 only: copies of each chunk, 2..=drives
    spans = 2                       # RAID 50/60 only: sub-arrays striped together
    failed = [1]                    # failed member indices (or "1,3")
    rebuild_rate = "50M"            # rebuild the lowest failed member at this many B/s
    stripe_unit = "16K"             # power of two, 512 B ..= 1 GiB
    drive = "adata-sp900-128g"      # a drive preset name, or a table (below)
    controller = "intel-h97-rst"    # a controller preset name, or a table

    [array.drive]                   # instead of `drive = "..."`:
    preset = "adata-sp900-128g"     #   start from a preset (optional) ...
    write_buffer_bytes = "8M"       #   ... and override fields; without `preset`,
                                    #   give `kind` ("ssd"/"hdd") and every field

    [host]
    request_overhead_ns = 8000      # default from presets/hosts.toml
    scheduler = "mq-deadline"       # I/O scheduler: none (default), mq-deadline, bfq
    queue_depth = 32                # requests the array device takes at once
    nr_requests = 64                # requests the scheduler holds
    max_sectors_kb = 512            # largest merged request, KiB

    [host.deadline]                 # mq-deadline tunables (Linux's defaults)
    read_expire_ns = 500_000_000
    [host.bfq]                      # bfq tunables (Linux's defaults)
    slice_idle_ns = 8_000_000

Sizes (``*_bytes``, ``stripe_unit``) accept ``"16K"``-style strings; rates and caps that
may be unlimited accept ``"unlimited"`` (TOML has no null). Unknown keys are errors.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.scenario.presets import DEFAULT_CONTROLLER, DEFAULT_HOST, preset
from raidlab.units import format_size, parse_size

SCHEMA = 1
# RAID levels of docs/scenario.md; "concat" is md's linear (no striping).
LEVELS: tuple[int | str, ...] = (0, 1, 4, 5, 6, 10, 50, 60, "concat")
PARITY_LEVELS = (4, 5, 6, 50, 60)
MIRROR_LEVELS = (1, 10)
PARITY_LAYOUTS = ("left-symmetric", "left-asymmetric", "right-symmetric", "right-asymmetric")
RAID10_LAYOUTS = ("near", "far", "offset")
# Levels that have a layout, with the allowed values; the first is the default (md's).
LAYOUTS: dict[int | str, tuple[str, ...]] = {
    5: PARITY_LAYOUTS,
    6: PARITY_LAYOUTS,
    50: PARITY_LAYOUTS,
    60: PARITY_LAYOUTS,
    10: RAID10_LAYOUTS,
}
# md's minimum member counts (mdadm refuses fewer). RAID 50/60: per span, see SPAN_LEVELS.
DRIVES_MIN: dict[int | str, int] = {0: 1, "concat": 1, 1: 2, 4: 3, 5: 3, 6: 4, 10: 2}
# RAID 50/60: the RAID level of each span and the drives one span needs at least.
SPAN_LEVELS: dict[int | str, tuple[int, int]] = {50: (5, 3), 60: (6, 4)}
SPANS_DEFAULT = 2
COPIES_DEFAULT = 2
READ_BALANCES = ("round-robin", "least-outstanding")
DRIVE_COUNT_MAX = 256
STRIPE_UNIT_BYTES_MIN = 512
STRIPE_UNIT_BYTES_MAX = 1 << 30
UNLIMITED = "unlimited"

# Field kinds of drive and controller specs: how a value is parsed and its bounds.
# (kind, minimum, maximum); None = no bound. Bounds are sanity limits, not physics.
_Bound = tuple[str, Any, Any]  # ("choice", allowed values, None) for enumerations
_NS_MAX = 10**12  # 1000 s: no single firmware or mechanical time is that long
_RATE_MAX = 1e12  # 1 TB/s: far above any bus of this era
_BYTES_MAX = 1 << 50  # 1 PiB

SSD_FIELDS: dict[str, _Bound] = {
    "capacity_bytes": ("bytes", 1 << 20, _BYTES_MAX),
    "link_rate_bytes_per_s": ("rate", 1e3, _RATE_MAX),
    "command_overhead_ns": ("ns", 0, _NS_MAX),
    "channels": ("count", 1, 256),
    "dies_per_channel": ("count", 1, 256),
    "page_bytes": ("bytes", 512, 1 << 20),
    "read_page_ns": ("ns", 1, _NS_MAX),
    "program_page_ns": ("ns", 1, _NS_MAX),
    "channel_rate_bytes_per_s": ("rate", 1e3, _RATE_MAX),
    "write_buffer_bytes": ("bytes", 0, 1 << 40),
    "write_commit_ns": ("ns", 0, _NS_MAX),
    "queued_command_latency_ns": ("ns", 0, _NS_MAX),
    "read_buffer": ("bool", None, None),
    "program_suspend": ("bool", None, None),
    "ftl": ("ftl", None, None),
    "ncq_depth": ("count", 1, 65536),
}
# The SSD's flash translation layer (docs/scenario.md): an optional table of a drive.
FTL_FIELDS: dict[str, _Bound] = {
    "spare_percent": ("percent", 0.1, 400.0),
    "op_percent": ("percent", 0.0, 90.0),
    "pages_per_block": ("count", 2, 65536),
    "erase_ns": ("ns", 1, _NS_MAX),
    "gc_unit_firmware_ns": ("ns", 0, _NS_MAX),
    "map_unit_bytes": ("bytes", 512, 1 << 20),
    "gc": ("choice", ("greedy", "cost-benefit"), None),
    "units": ("count", 1024, 1 << 24),
    "precondition": ("choice", ("fob", "steady"), None),
}
FTL_DEFAULTS: dict[str, Any] = {
    "op_percent": 0.0,
    "gc_unit_firmware_ns": 0,
    "map_unit_bytes": 4096,
    "gc": "greedy",
    "units": 1 << 18,
    "precondition": "steady",
}
HDD_FIELDS: dict[str, _Bound] = {
    "capacity_bytes": ("bytes", 1 << 20, _BYTES_MAX),
    "rpm": ("count", 1000, 30000),
    "seek_ns_track_to_track": ("ns", 1, _NS_MAX),
    "seek_ns_avg": ("ns", 1, _NS_MAX),
    "seek_ns_full_stroke": ("ns", 1, _NS_MAX),
    "media_rate_bytes_per_s_outer": ("rate", 1e3, _RATE_MAX),
    "media_rate_bytes_per_s_inner": ("rate", 1e3, _RATE_MAX),
    "zones": ("count", 1, 4096),
    "command_overhead_ns": ("ns", 0, _NS_MAX),
    "link_rate_bytes_per_s": ("rate", 1e3, _RATE_MAX),
    "cache_bytes": ("bytes", 0, 1 << 40),
    "read_ahead_bytes": ("bytes", 0, 1 << 40),
    "write_cache": ("bool", None, None),
    "ncq_depth": ("count", 1, 65536),
}
DRIVE_FIELDS: dict[str, dict[str, _Bound]] = {"ssd": SSD_FIELDS, "hdd": HDD_FIELDS}
# Fields a drive table may leave out, with the native side's defaults (docs/scenario.md).
DRIVE_DEFAULTS: dict[str, dict[str, Any]] = {
    "ssd": {
        "write_commit_ns": 0,
        "queued_command_latency_ns": 0,
        "read_buffer": False,
        "program_suspend": False,
        "ftl": None,
    },
    "hdd": {},
}
CONTROLLER_FIELDS: dict[str, _Bound] = {
    "request_overhead_ns": ("ns", 0, _NS_MAX),
    "member_op_overhead_ns": ("ns", 0, _NS_MAX),
    "max_member_transfer_bytes": ("bytes", 512, 1 << 30),
    "port_rate_bytes_per_s": ("rate", 1e3, _RATE_MAX),
    "bus_rate_bytes_per_s": ("rate_or_unlimited", 1e3, _RATE_MAX),
    "read_rate_bytes_per_s_max": ("rate_or_unlimited", 1e3, _RATE_MAX),
    "write_rate_bytes_per_s_max": ("rate_or_unlimited", 1e3, _RATE_MAX),
    "read_ahead_bytes": ("bytes", 0, 1 << 30),
    "read_ahead_segments": ("count", 1, 64),  # the simulator accepts 1..=64
    "read_hit_overhead_ns": ("ns", 0, _NS_MAX),
    "read_ahead_always": ("bool", None, None),
    "parity_rate_bytes_per_s": ("rate_or_unlimited", 1e3, _RATE_MAX),
    "read_balance": ("choice", READ_BALANCES, None),
    "cache_bytes": ("bytes", 0, 1 << 40),
    "write_back": ("bool", None, None),
    "cache_overhead_ns": ("ns", 0, _NS_MAX),
    "destage_concurrency": ("count", 1, 256),
    "dirty_low_percent": ("percent", 0.0, 95.0),
    "dirty_high_percent": ("percent", 0.0, 100.0),
    "trim_passthrough": ("bool", None, None),
    "fastpath_overhead_ns": ("ns_or_none", 0, _NS_MAX),
    "fastpath": ("bool", None, None),
}
# Controller fields a table may leave out, with the native side's defaults.
CONTROLLER_DEFAULTS: dict[str, Any] = {
    "read_ahead_always": False,
    "cache_bytes": 0,
    "write_back": False,
    "cache_overhead_ns": 0,
    "destage_concurrency": 4,
    "dirty_low_percent": 0.0,
    "dirty_high_percent": 0.0,
    "parity_rate_bytes_per_s": UNLIMITED,
    "read_balance": "round-robin",
    "trim_passthrough": False,
    "fastpath_overhead_ns": None,
    "fastpath": False,
}
# Controller keys left out of the scenario at these values (the native side's defaults),
# so a scenario of a controller without the feature is what it was before the feature.
CONTROLLER_OMITTED_DEFAULTS: dict[str, Any] = {"fastpath_overhead_ns": None, "fastpath": False}
# Controller keys only some levels use. They are left out of other levels' scenarios, so
# a RAID 0 scenario is exactly what it was before RAID levels were added.
CONTROLLER_LEVEL_KEYS: dict[str, tuple[int | str, ...]] = {
    "parity_rate_bytes_per_s": PARITY_LEVELS,
    "read_balance": MIRROR_LEVELS,
}
HOST_FIELDS: dict[str, _Bound] = {"request_overhead_ns": ("ns", 0, _NS_MAX)}
# The block layer's I/O schedulers (Linux's names); "none" is blk-mq's default.
SCHEDULERS = ("none", "mq-deadline", "bfq")
_DEPTH_MAX = 65536  # the simulator's bound on queue depths
# mq-deadline's tunables (docs/scenario.md, array.host.deadline); omitted keys take
# Linux's defaults on the native side.
DEADLINE_FIELDS: dict[str, _Bound] = {
    "read_expire_ns": ("ns", 0, _NS_MAX),
    "write_expire_ns": ("ns", 0, _NS_MAX),
    "fifo_batch": ("count", 1, _DEPTH_MAX),
    "writes_starved": ("count", 0, _DEPTH_MAX),
    "front_merges": ("bool", None, None),
}
BFQ_FIELDS: dict[str, _Bound] = {
    "slice_idle_ns": ("ns", 0, _NS_MAX),
    "timeout_sync_ns": ("ns", 1_000_000, _NS_MAX),
    "max_budget_bytes": ("bytes", 4096, 1 << 30),
    "fifo_expire_sync_ns": ("ns", 0, _NS_MAX),
}
# Host keys a preset or [host] table may give; left out, the native side's default
# applies (no scheduler stage at all unless scheduler or queue_depth is given).
HOST_OPTIONAL_FIELDS: dict[str, _Bound] = {
    "scheduler": ("choice", SCHEDULERS, None),
    "queue_depth": ("count", 1, _DEPTH_MAX),
    "nr_requests": ("count", 1, _DEPTH_MAX),
    "max_sectors_kb": ("count", 4, 1 << 20),
    "deadline": ("table", DEADLINE_FIELDS, None),
    "bfq": ("table", BFQ_FIELDS, None),
}
# Which scheduler each tunables table belongs to.
SCHEDULER_TABLES = {"deadline": "mq-deadline", "bfq": "bfq"}

# Keys a preset (or an inline table) may carry that are not part of the scenario spec.
DRIVE_EXTRA_KEYS = ("description", "preset")
CONTROLLER_EXTRA_KEYS = (
    "description",
    "kind",
    "preset",
    "name",
    "added_latency_ns",
    "bbu",
    "force_write_back",
)
CONTROLLER_KINDS = ("hba", "chipset", "hardware", "software")
HOST_EXTRA_KEYS = ("description", "preset")
ARRAY_KEYS = (
    "level",
    "drives",
    "stripe_unit",
    "drive",
    "controller",
    "layout",
    "copies",
    "spans",
    "failed",
    "rebuild_rate",
)
FILE_TABLES = ("array", "host")

# The canonical keys of an ArrayRequest and how the Python API names them in errors.
REQUEST_KEYS = (*ARRAY_KEYS, "host")


@dataclass(frozen=True)
class ArrayRequest:
    """What the user asked for, before validation. ``labels`` maps a canonical key
    (``stripe_unit``, ``drive``, ``host``) to the name errors use for it: a CLI flag,
    ``file.toml: array.stripe_unit``, or the Python keyword by default."""

    level: Any = 0
    drives: Any = 1
    stripe_unit: Any = "64K"
    drive: Any = None
    controller: Any = DEFAULT_CONTROLLER
    layout: Any = None
    copies: Any = None
    spans: Any = None
    failed: Any = None
    rebuild_rate: Any = None
    host: Mapping[str, Any] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)

    def label(self, key: str) -> str:
        """Error label of a canonical key; nested keys extend their parent's label."""
        top, dot, rest = key.partition(".")
        base = self.labels.get(top, top)
        return f"{base}.{rest}" if dot else base

    def overridden(self, values: Mapping[str, Any], labels: Mapping[str, str]) -> ArrayRequest:
        """This request with ``values`` (not None) replacing its own, labelled ``labels``."""
        given = {key: value for key, value in values.items() if value is not None}
        for key in given:
            if key not in REQUEST_KEYS:
                raise ValueError(f"not an array request key: {key}")
        new_labels = {**self.labels, **{key: labels.get(key, key) for key in given}}
        return replace(self, **given, labels=new_labels)


# --- field parsing -----------------------------------------------------------------


def parse_field(value: Any, bound: _Bound, label: str) -> Any:
    kind, low, high = bound
    if kind == "choice":
        if value not in low:
            raise RaidlabError(label, f"must be one of {', '.join(low)}, got {value!r}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise RaidlabError(label, f"expected true or false, got {value!r}")
        return value
    if kind == "rate_or_unlimited" and (value is None or value == UNLIMITED):
        return None
    if kind == "ns_or_none":
        if value is None or value == "none":
            return None
        kind = "ns"
    if kind == "table":
        if not isinstance(value, Mapping):
            raise RaidlabError(label, f"expected a table of settings, got {value!r}")
        _check_keys(value, list(low), label)
        return {key: parse_field(item, low[key], f"{label}.{key}") for key, item in value.items()}
    if kind == "ftl":
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise RaidlabError(label, f"expected a table of FTL settings, got {value!r}")
        return _parse_spec({**FTL_DEFAULTS, **value}, FTL_FIELDS, (), label)
    if kind == "percent":
        number = _parse_number(str(value).rstrip("%"), label, "a percentage")
        if not low <= number <= high:
            raise RaidlabError(label, f"must be {low}..={high} %, got {value!r}")
        return float(number)
    if isinstance(value, bool):
        raise RaidlabError(label, f"expected a number, got {value!r}")
    number: float | int
    if kind == "bytes":
        number = parse_size(value, label)
    elif kind in ("rate", "rate_or_unlimited"):
        number = _parse_number(value, label, "a rate in bytes per second")
        if not math.isfinite(number):
            raise RaidlabError(label, f"must be finite, got {value!r}")
        # Whole rates go out as integers so the native side may use either u64 or f64.
        number = int(number) if float(number).is_integer() else float(number)
    else:  # ns, count: integers only (times are integer nanoseconds)
        if not isinstance(value, int):
            raise RaidlabError(label, f"expected a whole number, got {value!r}")
        number = value
    if (low is not None and number < low) or (high is not None and number > high):
        raise RaidlabError(
            label, f"must be {_show(low, kind)}..={_show(high, kind)}, got {value!r}"
        )
    return number


def _parse_number(value: Any, label: str, what: str) -> float | int:
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            return float(value.replace("_", ""))
        except ValueError:
            pass
    raise RaidlabError(label, f"expected {what}, got {value!r}")


def _show(bound: float | None, kind: str) -> str:
    if bound is None:
        return ""
    if kind == "bytes":
        return format_size(int(bound))
    return f"{bound:g}"


def _check_keys(table: Mapping[str, Any], allowed: list[str] | tuple[str, ...], label: str) -> None:
    for key in table:
        if key not in allowed:
            # A file's top level is labelled "file.toml: ", its tables "file.toml: array".
            name = f"{label}{key}" if label.endswith(": ") else f"{label}.{key}"
            raise RaidlabError(name, f"unknown key '{key}'; allowed: {', '.join(allowed)}")


def _parse_spec(
    table: Mapping[str, Any], fields: dict[str, _Bound], extra: tuple[str, ...], label: str
) -> dict[str, Any]:
    _check_keys(table, [*fields, *extra], label)
    missing = [key for key in fields if key not in table]
    if missing:
        raise RaidlabError(label, f"missing {', '.join(missing)}")
    return {key: parse_field(table[key], bound, f"{label}.{key}") for key, bound in fields.items()}


# --- drive, controller, host ---------------------------------------------------------


def resolve_drive(value: Any, label: str) -> dict[str, Any]:
    """The scenario's drive spec from a preset name or a table (``preset`` + overrides,
    or ``kind`` + every field)."""
    if value is None:
        raise RaidlabError(
            label,
            "a drive is required: a preset name (see `raidlab presets`) "
            "or a table with kind and fields",
        )
    if isinstance(value, str):
        table: dict[str, Any] = preset("drive", value, label)
    elif isinstance(value, Mapping):
        table = dict(value)
        if "preset" in table:
            if not isinstance(table["preset"], str):
                raise RaidlabError(f"{label}.preset", "expected a preset name")
            base = preset("drive", table["preset"], f"{label}.preset")
            if "kind" in table and table["kind"] != base["kind"]:
                raise RaidlabError(
                    f"{label}.kind",
                    f"preset '{table['preset']}' is {base['kind']}, got {table['kind']!r}",
                )
            table = {**base, **table}
    else:
        raise RaidlabError(label, f"expected a preset name or a table, got {value!r}")
    kind = table.get("kind")
    if kind not in DRIVE_FIELDS:
        raise RaidlabError(
            f"{label}.kind", f"must be one of {', '.join(DRIVE_FIELDS)}, got {kind!r}"
        )
    table = {**DRIVE_DEFAULTS[kind], **table}
    spec = _parse_spec(table, DRIVE_FIELDS[kind], ("kind", *DRIVE_EXTRA_KEYS), label)
    _check_drive_physics(spec, kind, label)
    return {"kind": kind, **spec}


def _check_drive_physics(spec: dict[str, Any], kind: str, label: str) -> None:
    if kind == "hdd":
        if not (
            spec["seek_ns_track_to_track"] <= spec["seek_ns_avg"] <= spec["seek_ns_full_stroke"]
        ):
            raise RaidlabError(
                f"{label}.seek_ns_avg",
                "seek times must satisfy track-to-track <= avg <= full stroke",
            )
        if spec["media_rate_bytes_per_s_inner"] > spec["media_rate_bytes_per_s_outer"]:
            raise RaidlabError(
                f"{label}.media_rate_bytes_per_s_inner",
                "inner zone cannot be faster than the outer zone",
            )
        if spec["read_ahead_bytes"] > spec["cache_bytes"]:
            raise RaidlabError(f"{label}.read_ahead_bytes", "must fit in cache_bytes")
    elif spec["page_bytes"] & (spec["page_bytes"] - 1):
        raise RaidlabError(
            f"{label}.page_bytes", f"must be a power of two, got {spec['page_bytes']}"
        )


@dataclass(frozen=True)
class ResolvedController:
    """The scenario's controller spec plus what the front end folds elsewhere."""

    spec: dict[str, Any]
    kind: str
    added_latency_ns: int


def resolve_controller(value: Any, label: str) -> ResolvedController:
    """The scenario's controller spec from a preset name or a table."""
    if isinstance(value, str):
        name = value
        table: dict[str, Any] = preset("controller", value, label)
    elif isinstance(value, Mapping):
        table = dict(value)
        name = str(table.get("name", table.get("preset", "custom")))
        if "preset" in table:
            if not isinstance(table["preset"], str):
                raise RaidlabError(f"{label}.preset", "expected a preset name")
            table = {**preset("controller", table["preset"], f"{label}.preset"), **table}
    else:
        raise RaidlabError(label, f"expected a preset name or a table, got {value!r}")
    table = {**CONTROLLER_DEFAULTS, **table}
    spec = _parse_spec(
        table,
        {**CONTROLLER_FIELDS, "added_latency_ns": ("ns", 0, _NS_MAX)}
        if "added_latency_ns" in table
        else CONTROLLER_FIELDS,
        CONTROLLER_EXTRA_KEYS,
        label,
    )
    added_latency_ns = int(spec.pop("added_latency_ns", 0))
    if spec["write_back"] and not table.get("bbu", False) and not table.get("force_write_back"):
        # As MegaRAID and PERC firmware do: without a battery or flash backup a power
        # loss would lose acknowledged writes, so write-back is refused unless forced.
        raise RaidlabError(
            f"{label}.write_back",
            "write-back needs a battery/flash backup unit (bbu = true); set "
            "force_write_back = true to accept losing acknowledged writes on power loss",
        )
    _check_fastpath(spec, label)
    for key, default in CONTROLLER_OMITTED_DEFAULTS.items():
        if spec.get(key) == default:
            del spec[key]
    kind = table.get("kind", "hardware")
    if kind not in CONTROLLER_KINDS:
        raise RaidlabError(
            f"{label}.kind", f"must be one of {', '.join(CONTROLLER_KINDS)}, got {kind!r}"
        )
    return ResolvedController({"name": name, **spec}, kind, added_latency_ns)


def _check_fastpath(spec: Mapping[str, Any], label: str) -> None:
    """FastPath exists only where the controller has a FastPath cost, and only with
    write-through and no read-ahead (as MegaRAID and PERC firmware require)."""
    if not spec.get("fastpath"):
        return
    if spec.get("fastpath_overhead_ns") is None:
        raise RaidlabError(
            f"{label}.fastpath", "this controller has no FastPath (no fastpath_overhead_ns)"
        )
    if spec.get("write_back"):
        raise RaidlabError(f"{label}.fastpath", "FastPath needs write-through (write_back = false)")
    if spec.get("read_ahead_bytes"):
        raise RaidlabError(
            f"{label}.fastpath", "FastPath needs no read-ahead (read_ahead_bytes = 0)"
        )


def resolve_host(value: Mapping[str, Any], label: str) -> dict[str, Any]:
    """The scenario's host spec: the host preset with the user's overrides. Scheduler
    keys appear only when given, so a host without them is exactly what it was."""
    table = dict(value)
    _check_keys(table, [*HOST_FIELDS, *HOST_OPTIONAL_FIELDS, *HOST_EXTRA_KEYS], label)
    name = table.pop("preset", DEFAULT_HOST)
    base = preset("host", str(name), f"{label}.preset")
    merged = {**base, **table}
    optional = {key: merged.pop(key) for key in HOST_OPTIONAL_FIELDS if key in merged}
    spec = _parse_spec(merged, HOST_FIELDS, HOST_EXTRA_KEYS, label)
    for key, item in optional.items():
        spec[key] = parse_field(item, HOST_OPTIONAL_FIELDS[key], f"{label}.{key}")
    check_scheduler_tables(spec, label)
    return spec


def check_scheduler_tables(host: Mapping[str, Any], label: str, flag: str | None = None) -> None:
    """A scheduler's tunables table belongs to that scheduler; ``flag`` names the
    option that chose the scheduler, when it was not the table's own key."""
    scheduler = host.get("scheduler", "none")
    for table, owner in SCHEDULER_TABLES.items():
        if table in host and scheduler != owner:
            raise RaidlabError(
                flag or f"{label}.{table}",
                f"{label}.{table} sets {owner} tunables but the scheduler is {scheduler}; "
                f"use scheduler {owner} or drop the table",
            )


# --- the array ---------------------------------------------------------------------


def parse_int(value: Any, label: str, low: int, high: int, what: str = "") -> int:
    """An integer in ``low..=high``; strings of digits are accepted (CLI, TOML)."""
    if isinstance(value, bool):
        raise RaidlabError(label, f"expected a whole number, got {value!r}")
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        value = int(value)
    if not isinstance(value, int):
        raise RaidlabError(label, f"expected a whole number, got {value!r}")
    if not low <= value <= high:
        raise RaidlabError(label, f"{what or 'must be'} {low}..={high}, got {value}")
    return value


def parse_level(value: Any, label: str) -> int | str:
    """A RAID level of LEVELS: an integer (or its digits) or ``"concat"``."""
    level = value
    if isinstance(level, str):
        text = level.strip().lower()
        level = int(text) if text.isdigit() else text
    if isinstance(level, bool) or level not in LEVELS:
        allowed = ", ".join(str(item) for item in LEVELS)
        raise RaidlabError(label, f"must be one of {allowed}, got {value!r}")
    return level


def level_name(level: int | str) -> str:
    """``RAID 5``, ``concat``: how messages name a level."""
    return "concat" if level == "concat" else f"RAID {level}"


def parse_failed(value: Any, label: str) -> list[int]:
    """Failed member indices from ``"1,3"``, ``3`` or a list, in the order given."""
    if value is None:
        return []
    if isinstance(value, str):
        items: list[Any] = [item.strip() for item in value.split(",")] if value.strip() else []
    elif isinstance(value, int) and not isinstance(value, bool):
        items = [value]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise RaidlabError(label, f"expected member indices like 1,3, got {value!r}")
    indices = [
        parse_int(item, label, 0, DRIVE_COUNT_MAX - 1, "member index must be") for item in items
    ]
    for index in indices:
        if indices.count(index) > 1:
            raise RaidlabError(label, f"member {index} is listed twice")
    return indices


def parse_rebuild_rate(value: Any, label: str) -> int:
    """Rebuild rate in bytes per second: ``50M`` (powers of 1024, like fio's ``rate``)
    or a number; at least 1 KiB/s."""
    rate = parse_size(value, label)
    if not 1024 <= rate <= _RATE_MAX:
        raise RaidlabError(label, f"must be 1K..=1T bytes per second, got {value!r}")
    return rate


def _check_drive_count(
    request: ArrayRequest, level: int | str, drive_count: int, spans: int
) -> None:
    label = request.label("drives")
    if not 1 <= drive_count <= DRIVE_COUNT_MAX:
        raise RaidlabError(label, f"must be 1..={DRIVE_COUNT_MAX}, got {drive_count}")
    if level in SPAN_LEVELS:
        span_level, per_span_min = SPAN_LEVELS[level]
        if drive_count % spans:
            raise RaidlabError(
                label,
                f"{level_name(level)} with {spans} spans needs a multiple of {spans} drives, "
                f"got {drive_count}",
            )
        if drive_count // spans < per_span_min:
            raise RaidlabError(
                label,
                f"{level_name(level)} needs >= {per_span_min} drives per span "
                f"(RAID {span_level} minimum): >= {per_span_min * spans} drives for "
                f"{spans} spans, got {drive_count}",
            )
    elif drive_count < DRIVES_MIN[level]:
        raise RaidlabError(
            label,
            f"{level_name(level)} needs {DRIVES_MIN[level]}..={DRIVE_COUNT_MAX} drives, "
            f"got {drive_count}",
        )


def _level_options(request: ArrayRequest, level: int | str) -> tuple[str | None, int, int]:
    """Layout (None for levels without one), copies and spans, each checked to belong
    to the level."""
    layout = None
    if request.layout is not None:
        if level not in LAYOUTS:
            raise RaidlabError(
                request.label("layout"),
                f"{level_name(level)} has no layout; only RAID 5, 6, 50, 60 "
                f"({', '.join(PARITY_LAYOUTS)}) and RAID 10 ({', '.join(RAID10_LAYOUTS)})",
            )
        if request.layout not in LAYOUTS[level]:
            raise RaidlabError(
                request.label("layout"),
                f"{level_name(level)} layouts: {', '.join(LAYOUTS[level])}, got {request.layout!r}",
            )
        layout = str(request.layout)
    elif level in LAYOUTS:
        layout = LAYOUTS[level][0]
    copies = COPIES_DEFAULT
    if request.copies is not None:
        if level != 10:
            raise RaidlabError(
                request.label("copies"),
                f"only RAID 10 takes copies (RAID 1 mirrors every drive), got {level_name(level)}",
            )
        copies = parse_int(request.copies, request.label("copies"), 2, DRIVE_COUNT_MAX)
    spans = SPANS_DEFAULT if level in SPAN_LEVELS else 1
    if request.spans is not None:
        if level not in SPAN_LEVELS:
            raise RaidlabError(
                request.label("spans"), f"only RAID 50 and 60 take spans, got {level_name(level)}"
            )
        spans = parse_int(request.spans, request.label("spans"), 2, DRIVE_COUNT_MAX // 3)
    return layout, copies, spans


def _check_failed(
    request: ArrayRequest,
    level: int | str,
    drive_count: int,
    copies: int,
    spans: int,
    failed: list[int],
) -> None:
    label = request.label("failed")
    for index in failed:
        if index >= drive_count:
            raise RaidlabError(
                label,
                f"member indices are 0..={drive_count - 1} for {drive_count} drives, got {index}",
            )
    if len(set(failed)) != len(failed):
        raise RaidlabError(label, f"lists a member twice: {failed}")


def _check_survivable(request: ArrayRequest, array: dict[str, Any]) -> None:
    """Whether the array survives its failed members: asked of the native layout, which
    knows exactly which sets RAID 10/50/60 survive (two failures in different mirror
    pairs of a RAID 10 are fine; two in one pair are not)."""
    from raidlab.scenario.native import array_info

    info = array_info(array)
    if not info["tolerates"]:
        raise RaidlabError(
            request.label("failed"),
            f"{level_name(array['level'])} of {array['drive_count']} drives loses data with "
            f"members {array['failed']} failed (it survives {info['tolerated_failures']} "
            "failure(s) in every case, more only in some placements)",
        )


def build_array(request: ArrayRequest) -> dict[str, Any]:
    """Validate ``request`` and return the scenario's ``array`` object.

    Optional keys appear only where the level uses them: ``layout`` (RAID 5/6/50/60/10),
    ``copies`` (RAID 10), ``spans`` (RAID 50/60), ``failed`` and ``rebuild`` when given,
    and the controller's ``parity_rate_bytes_per_s`` (parity levels) and
    ``read_balance`` (RAID 1/10). A RAID 0 scenario is therefore unchanged from
    before RAID levels existed."""
    level = parse_level(request.level, request.label("level"))
    drive_count = parse_int(request.drives, request.label("drives"), -(2**63), 2**63)
    layout, copies, spans = _level_options(request, level)
    _check_drive_count(request, level, drive_count, spans)
    if level == 10 and copies > drive_count:
        raise RaidlabError(
            request.label("copies"), f"must be 2..={drive_count} (the drive count), got {copies}"
        )
    failed = parse_failed(request.failed, request.label("failed"))
    _check_failed(request, level, drive_count, copies, spans, failed)
    rebuild = None
    if request.rebuild_rate is not None:
        rate = parse_rebuild_rate(request.rebuild_rate, request.label("rebuild_rate"))
        if not failed:
            raise RaidlabError(
                request.label("rebuild_rate"),
                f"rebuilds the lowest-index failed member; give failed members "
                f"({request.label('failed')})",
            )
        rebuild = {"member": min(failed), "rate_bytes_per_s": rate}
    stripe_unit_bytes = parse_stripe_unit(request.stripe_unit, request.label("stripe_unit"))
    drive = resolve_drive(request.drive, request.label("drive"))
    controller = resolve_controller(request.controller, request.label("controller"))
    host = resolve_host(request.host, request.label("host"))
    # The controller's non-shared pipeline latency rides on the host's per-request
    # latency: schema 1 charges that to every request without making it a resource.
    host["request_overhead_ns"] += controller.added_latency_ns
    if stripe_unit_bytes > drive["capacity_bytes"]:
        raise RaidlabError(request.label("stripe_unit"), "larger than one drive's capacity")
    controller_spec = {
        key: value
        for key, value in controller.spec.items()
        if key not in CONTROLLER_LEVEL_KEYS or level in CONTROLLER_LEVEL_KEYS[key]
    }
    array: dict[str, Any] = {"level": level}
    if layout is not None:
        array["layout"] = layout
    if level == 10:
        array["copies"] = copies
    if level in SPAN_LEVELS:
        array["spans"] = spans
    if failed:
        array["failed"] = sorted(failed)
    if rebuild is not None:
        array["rebuild"] = rebuild
    array.update(
        {
            "stripe_unit_bytes": stripe_unit_bytes,
            "drive_count": drive_count,
            "drive": drive,
            "controller": controller_spec,
            "host": host,
        }
    )
    if failed:
        _check_survivable(request, array)
    return array


def parse_stripe_unit(value: Any, label: str) -> int:
    """Stripe unit in bytes: a power of two, 512 B ..= 1 GiB."""
    stripe_unit_bytes = parse_size(value, label)
    if (
        stripe_unit_bytes < STRIPE_UNIT_BYTES_MIN
        or stripe_unit_bytes > STRIPE_UNIT_BYTES_MAX
        or stripe_unit_bytes & (stripe_unit_bytes - 1)
    ):
        raise RaidlabError(label, f"must be a power of two >= 512 B and <= 1G, got {value}")
    return stripe_unit_bytes


def array_capacity_bytes(array: Mapping[str, Any]) -> int:
    """Usable bytes of an array, from the native layout code (the one authority on md's
    layouts: RAID 10 far/offset and RAID 50/60 round in ways simple formulas miss)."""
    from raidlab.scenario.native import array_info

    return int(array_info(array)["capacity_bytes"])


def raw_capacity_bytes(array: Mapping[str, Any]) -> int:
    """Whole stripe units on every member together (what RAID 0 would offer)."""
    unit = array["stripe_unit_bytes"]
    return array["drive_count"] * (array["drive"]["capacity_bytes"] // unit) * unit


# --- array TOML files ----------------------------------------------------------------

_TOML_POSITION = re.compile(r"^(?P<what>.*?)\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)$")


def load_array_file(path: str | Path) -> ArrayRequest:
    """Read an array TOML file into an ArrayRequest whose errors name ``file: key``."""
    path = Path(path)
    try:
        text = path.read_text("utf-8")
    except OSError as error:
        raise RaidlabError(str(path), f"cannot read: {error.strerror or error}") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        match = _TOML_POSITION.match(message)
        if match:
            message = (
                f"line {match['line']}, column {match['col']}: malformed TOML: "
                f"{match['what'][:1].lower()}{match['what'][1:]}"
            )
        raise RaidlabError(str(path), message) from None
    return array_request_from_document(document, str(path))


def array_request_from_document(document: Mapping[str, Any], source: str) -> ArrayRequest:
    """An ArrayRequest from a parsed array TOML document; ``source`` prefixes labels."""
    _check_keys(document, FILE_TABLES, f"{source}: ")
    array = document.get("array", {})
    host = document.get("host", {})
    if not isinstance(array, Mapping):
        raise RaidlabError(f"{source}: array", "expected a table [array]")
    if not isinstance(host, Mapping):
        raise RaidlabError(f"{source}: host", "expected a table [host]")
    _check_keys(array, ARRAY_KEYS, f"{source}: array")
    values = {key: array[key] for key in ARRAY_KEYS if key in array}
    labels = {key: f"{source}: array.{key}" for key in values}
    labels["host"] = f"{source}: host"
    return ArrayRequest(**values, host=dict(host), labels=labels)


def build_scenario(
    array: Mapping[str, Any], workload: Mapping[str, Any], seed: int
) -> dict[str, Any]:
    """The complete scenario document of docs/scenario.md."""
    return {"schema": SCHEMA, "seed": seed, "array": dict(array), "workload": dict(workload)}


def parse_seed(value: Any, label: str = "seed") -> int:
    """A seed: 0 ..= 2^64-1, so the native side can hold it in a u64."""
    return parse_int(value, label, 0, 2**64 - 1)
