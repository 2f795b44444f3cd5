"""Array configuration: presets, overrides and array TOML files -> the scenario's ``array``.

Parse, then build: input is validated here, with an error naming the field, and only
plain data (the ``array`` object of docs/scenario.md) leaves this module.

Array TOML file (see docs/config.md and examples/ssd-raid0.toml)::

    [array]
    level = 0                       # RAID level; only 0 in this version
    drives = 3                      # member count, 1..=256
    stripe_unit = "16K"             # power of two, 512 B ..= 1 GiB
    drive = "adata-sp900-128g"      # a drive preset name, or a table (below)
    controller = "intel-h97-rst"    # a controller preset name, or a table

    [array.drive]                   # instead of `drive = "..."`:
    preset = "adata-sp900-128g"     #   start from a preset (optional) ...
    write_buffer_bytes = "8M"       #   ... and override fields; without `preset`,
                                    #   give `kind` ("ssd"/"hdd") and every field

    [host]
    request_overhead_ns = 8000      # default from presets/hosts.toml

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
from raidlab.presets import DEFAULT_CONTROLLER, DEFAULT_HOST, preset
from raidlab.units import format_size, parse_size

SCHEMA = 1
SUPPORTED_LEVELS = (0,)
DRIVE_COUNT_MAX = 256
STRIPE_UNIT_BYTES_MIN = 512
STRIPE_UNIT_BYTES_MAX = 1 << 30
UNLIMITED = "unlimited"

# Field kinds of drive and controller specs: how a value is parsed and its bounds.
# (kind, minimum, maximum); None = no bound. Bounds are sanity limits, not physics.
_Bound = tuple[str, float | None, float | None]
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
    "ncq_depth": ("count", 1, 65536),
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
    "ssd": {"write_commit_ns": 0, "queued_command_latency_ns": 0, "read_buffer": False},
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
}
HOST_FIELDS: dict[str, _Bound] = {"request_overhead_ns": ("ns", 0, _NS_MAX)}

# Keys a preset (or an inline table) may carry that are not part of the scenario spec.
DRIVE_EXTRA_KEYS = ("description", "preset")
CONTROLLER_EXTRA_KEYS = ("description", "kind", "preset", "name", "added_latency_ns")
CONTROLLER_KINDS = ("hba", "chipset", "hardware", "software")
HOST_EXTRA_KEYS = ("description", "preset")
ARRAY_KEYS = ("level", "drives", "stripe_unit", "drive", "controller")
FILE_TABLES = ("array", "host")

# The canonical keys of an ArrayRequest and how the Python API names them in errors.
REQUEST_KEYS = ("level", "drives", "stripe_unit", "drive", "controller", "host")


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


def _parse_field(value: Any, bound: _Bound, label: str) -> Any:
    kind, low, high = bound
    if kind == "bool":
        if not isinstance(value, bool):
            raise RaidlabError(label, f"expected true or false, got {value!r}")
        return value
    if kind == "rate_or_unlimited" and (value is None or value == UNLIMITED):
        return None
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
    return {key: _parse_field(table[key], bound, f"{label}.{key}") for key, bound in fields.items()}


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
    spec = _parse_spec(
        table,
        {**CONTROLLER_FIELDS, "added_latency_ns": ("ns", 0, _NS_MAX)}
        if "added_latency_ns" in table
        else CONTROLLER_FIELDS,
        CONTROLLER_EXTRA_KEYS,
        label,
    )
    added_latency_ns = int(spec.pop("added_latency_ns", 0))
    kind = table.get("kind", "hardware")
    if kind not in CONTROLLER_KINDS:
        raise RaidlabError(
            f"{label}.kind", f"must be one of {', '.join(CONTROLLER_KINDS)}, got {kind!r}"
        )
    return ResolvedController({"name": name, **spec}, kind, added_latency_ns)


def resolve_host(value: Mapping[str, Any], label: str) -> dict[str, Any]:
    """The scenario's host spec: the host preset with the user's overrides."""
    table = dict(value)
    _check_keys(table, [*HOST_FIELDS, *HOST_EXTRA_KEYS], label)
    name = table.pop("preset", DEFAULT_HOST)
    base = preset("host", str(name), f"{label}.preset")
    merged = {**base, **table}
    return _parse_spec(merged, HOST_FIELDS, HOST_EXTRA_KEYS, label)


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


def build_array(request: ArrayRequest) -> dict[str, Any]:
    """Validate ``request`` and return the scenario's ``array`` object."""
    level = request.level
    if isinstance(level, str) and level.strip().isdigit():
        level = int(level)
    if level not in SUPPORTED_LEVELS or isinstance(level, bool):
        raise RaidlabError(
            request.label("level"),
            f"only RAID 0 is supported in this version, got {request.level!r}",
        )
    drive_count = parse_int(request.drives, request.label("drives"), -(2**63), 2**63)
    if not 1 <= drive_count <= DRIVE_COUNT_MAX:
        raise RaidlabError(
            request.label("drives"), f"RAID 0 needs 1..={DRIVE_COUNT_MAX} drives, got {drive_count}"
        )
    stripe_unit_bytes = parse_stripe_unit(request.stripe_unit, request.label("stripe_unit"))
    drive = resolve_drive(request.drive, request.label("drive"))
    controller = resolve_controller(request.controller, request.label("controller"))
    host = resolve_host(request.host, request.label("host"))
    # The controller's non-shared pipeline latency rides on the host's per-request
    # latency: schema 1 charges that to every request without making it a resource.
    host["request_overhead_ns"] += controller.added_latency_ns
    if stripe_unit_bytes > drive["capacity_bytes"]:
        raise RaidlabError(request.label("stripe_unit"), "larger than one drive's capacity")
    return {
        "level": level,
        "stripe_unit_bytes": stripe_unit_bytes,
        "drive_count": drive_count,
        "drive": drive,
        "controller": controller.spec,
        "host": host,
    }


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
    """Usable bytes of a RAID 0 array: whole stripe units on every member."""
    assert array["level"] == 0, "capacity is only defined for RAID 0 in schema 1"
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
