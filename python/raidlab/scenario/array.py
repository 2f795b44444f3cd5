"""Array configuration: presets, overrides and array TOML files -> the scenario's ``array``.

Parse, then build: input is validated here, with an error naming the field, and only
plain data (the ``array`` object of docs/scenario.md) leaves this module.

Array TOML file (see docs/config.md and examples/ssd-raid0.toml)::

    [array]
    level = 5                       # 0, 1, 4, 5, 6, 10, 50, 60 or "concat"
    drives = 4                      # member count (each level has a minimum)
    layout = "left-symmetric"       # RAID 5/6/50/60 parity layout, RAID 10 near/far/offset
    copies = 2                      # RAID 10 only: copies of each chunk, 2..=drives
    spans = 2                       # RAID 50/60 only: sub-arrays striped together
    failed = [1]                    # failed member indices (or "1,3")
    rebuild_rate = "50M"            # rebuild the lowest failed member at this many B/s
    rebuild_rate_min = "1M"         # ... kept at least at this rate under load (default:
                                    #   the controller's; md 1000K, MegaRAID 30 %)
    spares = 1                      # hot spares standing by (default 0)
    fail_at = "2ms"                 # with a spare: the rebuilt member fails this far
                                    #   into the run and the spare's rebuild starts then
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
Every bound and level rule is the native side's (``raidlab._native.limits()`` and
``levels()``, see :mod:`raidlab.scenario.limits`); this module parses, fills in the
presets and names the user's key when the native side refuses a field.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import raidlab.scenario.presets as drive_files  # drive files: my-drive.toml
from raidlab.errors import RaidlabError, read_user_text
from raidlab.scenario import limits, native
from raidlab.scenario.limits import parse_checked
from raidlab.scenario.presets import DEFAULT_CONTROLLER, DEFAULT_HOST, preset
from raidlab.units import parse_duration_ns, parse_size

SCHEMA = 1
UNLIMITED = limits.UNLIMITED

# Keys a preset (or an inline table) may carry that are not part of the scenario spec.
DRIVE_EXTRA_KEYS = ("description", "preset")
# A controller preset's own keys the native table declares (scope ``preset``: checked
# there, never sent in a scenario): what it is, its backup unit, forced write-back.
CONTROLLER_PRESET_KEYS = ("kind", "bbu", "force_write_back")
CONTROLLER_EXTRA_KEYS = (
    "description",
    "preset",
    "name",
    "added_latency_ns",
    *CONTROLLER_PRESET_KEYS,
)
HOST_EXTRA_KEYS = ("description", "preset")
# Controller keys left out of the scenario at the native side's default, so a scenario
# of a controller without the feature is what it was before the feature.
CONTROLLER_OMITTED_KEYS = (
    "full_rate_ports",
    "slow_port_rate_bytes_per_s",
    "fastpath_overhead_ns",
    "fastpath",
    "uplink",
    "rebuild_rate_min_bytes_per_s",
    "rebuild_share_percent",
    "rebuild_depth",
)
# Scheduler tunables tables of the host, and the native field naming their scheduler.
SCHEDULER_TABLES = {"deadline": "mq-deadline", "bfq": "bfq"}
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
    "spares",
    "fail_at",
    "rebuild_rate_min",
)
FILE_TABLES = ("array", "host", "cache")

# The canonical keys of an ArrayRequest and how the Python API names them in errors.
REQUEST_KEYS = (*ARRAY_KEYS, "host")
# The scenario path each canonical key becomes: a refusal of the path (or of a field
# under it) names the key's label.
REQUEST_PATHS = {
    "level": "array.level",
    "drives": "array.drive_count",
    "stripe_unit": "array.stripe_unit_bytes",
    "drive": "array.drive",
    "controller": "array.controller",
    "layout": "array.layout",
    "copies": "array.copies",
    "spans": "array.spans",
    "failed": "array.failed",
    "rebuild_rate": "array.rebuild",
    "host": "array.host",
    "spares": "array.spares",
    "fail_at": "array.rebuild.failed_at_ns",
    "rebuild_rate_min": "array.rebuild.rate_min_bytes_per_s",
}


def schedulers() -> tuple[str, ...]:
    """The I/O schedulers the simulator models (Linux's names)."""
    return limits.choices("array.host.scheduler")


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
    spares: Any = None
    fail_at: Any = None
    rebuild_rate_min: Any = None
    host: Mapping[str, Any] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)

    def label(self, key: str) -> str:
        """Error label of a canonical key; nested keys extend their parent's label."""
        top, dot, rest = key.partition(".")
        base = self.labels.get(top, top)
        return f"{base}.{rest}" if dot else base

    def path_labels(self) -> dict[str, str]:
        """Scenario paths -> this request's labels, for :func:`limits.relabel`."""
        return {path: self.label(key) for key, path in REQUEST_PATHS.items()}

    def overridden(self, values: Mapping[str, Any], labels: Mapping[str, str]) -> ArrayRequest:
        """This request with ``values`` (not None) replacing its own, labelled ``labels``."""
        given = {key: value for key, value in values.items() if value is not None}
        for key in given:
            if key not in REQUEST_KEYS:
                raise ValueError(f"not an array request key: {key}")
        new_labels = {**self.labels, **{key: labels.get(key, key) for key in given}}
        return replace(self, **given, labels=new_labels)


# --- tables of fields: parsed by the kinds the native side declares --------------------


def _check_keys(table: Mapping[str, Any], allowed: list[str] | tuple[str, ...], label: str) -> None:
    for key in table:
        if key not in allowed:
            # A file's top level is labelled "file.toml: ", its tables "file.toml: array".
            name = f"{label}{key}" if label.endswith(": ") else f"{label}.{key}"
            raise RaidlabError(name, f"unknown key '{key}'; allowed: {', '.join(allowed)}")


def parse_table(
    table: Mapping[str, Any],
    path: str,
    scope: str,
    label: str,
    extra: tuple[str, ...] = (),
    every_field: bool = True,
) -> dict[str, Any]:
    """The scenario table at ``path`` from a user's table: every key parsed by its kind
    and checked by the native side, errors naming ``label.key``. With ``every_field``
    each field appears (the given value, else the native default; a required field
    left out is an error), free-text fields only when given; otherwise only the keys
    given, in the user's order."""
    declared = {key: entry for key, entry in limits.fields(path, scope).items() if key != "kind"}
    _check_keys(table, [*declared, *extra], label)
    if not every_field:
        return {
            key: _parse_entry(value, declared[key], scope, f"{label}.{key}")
            for key, value in table.items()
            if key in declared
        }
    missing = [key for key, entry in declared.items() if entry.required and key not in table]
    if missing:
        raise RaidlabError(label, f"missing {', '.join(missing)}")
    spec: dict[str, Any] = {}
    for key, entry in declared.items():
        if key in table:
            spec[key] = _parse_entry(table[key], entry, scope, f"{label}.{key}")
        elif entry.kind != "text":
            spec[key] = entry.default
    return spec


def _parse_entry(value: Any, entry: limits.Field, scope: str, label: str) -> Any:
    if entry.kind == "table":
        if value is None and entry.nullable:
            return None
        if not isinstance(value, Mapping):
            raise RaidlabError(label, f"expected a table of settings, got {value!r}")
        every = entry.path == "array.drive.ftl"
        return parse_table(value, entry.path, scope, label, every_field=every)
    return parse_checked(value, entry, label)


# --- drive, controller, host ---------------------------------------------------------


def _drive_preset(name: str, label: str) -> dict[str, Any]:
    """A drive preset by name, or a drive file (``my-drive.toml``, as ``raidlab
    calibrate`` writes) by path."""
    if drive_files.is_drive_file(name):
        return drive_files.drive_file_preset(name, label)[1]
    return preset("drive", name, label)


def resolve_drive(value: Any, label: str) -> dict[str, Any]:
    """The scenario's drive spec from a preset name, a drive file's path
    (``my-drive.toml``), or a table (``preset`` + overrides, or ``kind`` + every
    field)."""
    if value is None:
        raise RaidlabError(
            label,
            "a drive is required: a preset name (see `raidlab presets`) "
            "or a table with kind and fields",
        )
    if isinstance(value, str):
        if drive_files.is_drive_file(value):
            # The file's keys are checked below; errors name the file and its table.
            name, table = drive_files.drive_file_preset(value, label)
            label = f"{label}: {value}: {name}"
        else:
            table = preset("drive", value, label)
    elif isinstance(value, Mapping):
        table = dict(value)
        if "preset" in table:
            if not isinstance(table["preset"], str):
                raise RaidlabError(f"{label}.preset", "expected a preset name")
            base = _drive_preset(table["preset"], f"{label}.preset")
            if "kind" in table and table["kind"] != base["kind"]:
                raise RaidlabError(
                    f"{label}.kind",
                    f"preset '{table['preset']}' is {base['kind']}, got {table['kind']!r}",
                )
            table = {**base, **table}
    else:
        raise RaidlabError(label, f"expected a preset name or a table, got {value!r}")
    kind = table.get("kind")
    kinds = limits.choices("array.drive.kind")
    if kind not in kinds:
        raise RaidlabError(f"{label}.kind", f"must be one of {', '.join(kinds)}, got {kind!r}")
    spec = parse_table(table, "array.drive", kind, label, ("kind", *DRIVE_EXTRA_KEYS))
    return {"kind": kind, **spec}


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
    # The controller's non-shared pipeline latency: a time like the scenario's others.
    added_latency_ns = int(
        parse_checked(
            table.get("added_latency_ns", 0),
            limits.field("array.host.request_overhead_ns"),
            f"{label}.added_latency_ns",
        )
    )
    spec = parse_table(table, "array.controller", "always", label, CONTROLLER_EXTRA_KEYS)
    spec.pop("name", None)
    own = {key: table[key] for key in CONTROLLER_PRESET_KEYS if key in table}
    limits.refused(
        native.check_controller_preset({**own, "write_back": spec["write_back"]}),
        {"array.controller": label},
    )
    defaults = limits.fields("array.controller")
    for key in CONTROLLER_OMITTED_KEYS:
        if key in spec and spec[key] == defaults[key].default:
            del spec[key]
    kind = str(table.get("kind", limits.field("array.controller.kind", "preset").default))
    return ResolvedController({"name": name, **spec}, kind, added_latency_ns)


def resolve_host(value: Mapping[str, Any], label: str) -> dict[str, Any]:
    """The scenario's host spec: the host preset with the user's overrides. Scheduler
    keys appear only when given, so a host without them is exactly what it was."""
    table = dict(value)
    name = table.pop("preset", DEFAULT_HOST)
    declared = limits.fields("array.host")
    _check_keys(table, [*declared, *HOST_EXTRA_KEYS], label)
    base = preset("host", str(name), f"{label}.preset")
    merged = {key: item for key, item in {**base, **table}.items() if key in declared}
    ordered = {key: merged[key] for key in declared if key in merged}
    return parse_table(ordered, "array.host", "always", label, every_field=False)


def check_scheduler_tables(array: Mapping[str, Any], label: str, flag: str | None = None) -> None:
    """A scheduler's tunables table belongs to that scheduler (the native side's rule);
    ``flag`` names the option that chose the scheduler."""
    found = native.validate_array(dict(array))
    table = found[0].removeprefix("array.host.") if found else ""
    if table in SCHEDULER_TABLES:
        scheduler = array["host"].get("scheduler", "none")
        owner = SCHEDULER_TABLES[table]
        raise RaidlabError(
            flag or f"{label}.{table}",
            f"{label}.{table} sets {owner} tunables but the scheduler is {scheduler}; "
            f"use scheduler {owner} or drop the table",
        )


# --- the array ---------------------------------------------------------------------


def parse_int(value: Any, label: str, low: int, high: int, what: str = "") -> int:
    """An integer in ``low..=high``; strings of digits are accepted (CLI, TOML). For the
    front end's own numbers (worker processes, sweep points); scenario fields are
    checked by the native side (:func:`limits.parse_path`)."""
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
    """A RAID level as the scenario names it: an integer (or its digits) or ``"concat"``."""
    level = value
    if isinstance(level, str):
        text = level.strip().lower()
        level = int(text) if text.isdigit() else text
    if isinstance(level, bool) or level not in limits.levels():
        allowed = ", ".join(limits.choices("array.level"))
        raise RaidlabError(label, f"must be one of {allowed}, got {value!r}")
    return level


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
    indices = [limits.whole(item, label) for item in items]
    limits.check(limits.field("array.failed"), indices, label)
    return indices


def parse_rebuild_rate(value: Any, label: str) -> int:
    """Rebuild rate in bytes per second: ``50M`` (powers of 1024, like fio's ``rate``)
    or a number."""
    rate = parse_size(value, label)
    limits.check(limits.field("array.rebuild.rate_bytes_per_s"), rate, label)
    return rate


def _level_options(request: ArrayRequest, level: int | str) -> tuple[str | None, int, int]:
    """Layout, copies and spans as given, else the level's defaults (md's layout, two
    copies, two spans); whether the level takes them is the native side's rule."""
    rules = limits.levels()[level]
    layout = rules["default_layout"] if request.layout is None else str(request.layout)
    copies = rules["copies_default"] if request.copies is None else request.copies
    spans = rules["spans_min"] if request.spans is None else request.spans
    if request.copies is not None or rules["copies"]:
        copies = parse_checked(copies, limits.field("array.copies"), request.label("copies"))
    if request.spans is not None or rules["spans"]:
        spans = parse_checked(spans, limits.field("array.spans"), request.label("spans"))
    return layout, copies, spans


def _rebuild(request: ArrayRequest, failed: list[int]) -> dict[str, Any] | None:
    """The scenario's ``rebuild`` of the lowest-index failed member: its rate, when the
    member fails (``fail_at``, with a spare) and its minimum rate under load."""
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
    if request.fail_at is not None:
        if rebuild is None:
            raise RaidlabError(
                request.label("fail_at"),
                "is when the rebuilt member fails: give a rebuild rate and failed members too",
            )
        rebuild["failed_at_ns"] = parse_duration_ns(request.fail_at, request.label("fail_at"))
    if request.rebuild_rate_min is not None:
        label = request.label("rebuild_rate_min")
        if rebuild is None:
            raise RaidlabError(label, "is the rebuild's minimum rate: give a rebuild rate too")
        rate_min = parse_size(request.rebuild_rate_min, label)
        limits.check(limits.field("array.rebuild.rate_min_bytes_per_s"), rate_min, label)
        rebuild["rate_min_bytes_per_s"] = rate_min
    return rebuild


def build_array(request: ArrayRequest) -> dict[str, Any]:
    """Validate ``request`` and return the scenario's ``array`` object.

    Optional keys appear only where the level uses them: ``layout`` (RAID 5/6/50/60/10),
    ``copies`` (RAID 10), ``spans`` (RAID 50/60), ``failed`` and ``rebuild`` when given,
    and the controller's ``parity_rate_bytes_per_s`` (parity levels) and
    ``read_balance`` (RAID 1/10). A RAID 0 scenario is therefore unchanged from
    before RAID levels existed. Every rule (a level's drive count, its layouts, copies
    and spans, the failed members it survives) is the native side's; a refusal names
    the request's label for the field."""
    level = parse_level(request.level, request.label("level"))
    rules = limits.levels()[level]
    drive_count = parse_checked(
        request.drives, limits.field("array.drive_count"), request.label("drives")
    )
    layout, copies, spans = _level_options(request, level)
    failed = parse_failed(request.failed, request.label("failed"))
    rebuild = _rebuild(request, failed)
    spares = None
    if request.spares is not None:
        label = request.label("spares")
        spares = parse_checked(request.spares, limits.field("array.spares"), label)
    stripe_unit_bytes = parse_stripe_unit(request.stripe_unit, request.label("stripe_unit"))
    drive = resolve_drive(request.drive, request.label("drive"))
    controller = resolve_controller(request.controller, request.label("controller"))
    host = resolve_host(request.host, request.label("host"))
    # The controller's non-shared pipeline latency rides on the host's per-request
    # latency: schema 1 charges that to every request without making it a resource.
    host["request_overhead_ns"] += controller.added_latency_ns
    controller_spec = {
        key: value
        for key, value in controller.spec.items()
        if (key != "parity_rate_bytes_per_s" or rules["parity"])
        and (key != "read_balance" or rules["mirror"])
    }
    array: dict[str, Any] = {"level": level}
    if request.layout is not None or layout is not None:
        array["layout"] = layout
    if request.copies is not None or rules["copies"]:
        array["copies"] = copies
    if request.spans is not None or rules["spans"]:
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
    if spares:
        array["spares"] = spares
    limits.refused(native.validate_array(array), request.path_labels())
    return array


def parse_stripe_unit(value: Any, label: str) -> int:
    """Stripe unit in bytes (bounds: the native side's ``array.stripe_unit_bytes``)."""
    return int(parse_checked(value, limits.field("array.stripe_unit_bytes"), label))


def array_capacity_bytes(array: Mapping[str, Any]) -> int:
    """Usable bytes of an array, from the native layout code (the one authority on md's
    layouts: RAID 10 far/offset and RAID 50/60 round in ways simple formulas miss)."""
    return int(native.array_info(array)["capacity_bytes"])


def raw_capacity_bytes(array: Mapping[str, Any]) -> int:
    """Whole stripe units on every member together (what RAID 0 would offer), from the
    native layout code."""
    level_keys = ("layout", "copies", "spans", "failed", "rebuild", "spares")
    raid0 = {key: value for key, value in array.items() if key not in level_keys}
    return int(native.array_info({**raid0, "level": 0})["capacity_bytes"])


# --- array TOML files ----------------------------------------------------------------

_TOML_POSITION = re.compile(r"^(?P<what>.*?)\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)$")


def load_array_file(path: str | Path) -> ArrayRequest:
    """Read an array TOML file into an ArrayRequest whose errors name ``file: key``."""
    path = Path(path)
    text = read_user_text(path, str(path))
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
    request = array_request_from_document(document, str(path))
    drive = request.drive
    relative = isinstance(drive, str) and not Path(drive).is_absolute()
    if relative and drive_files.is_drive_file(drive):
        # `drive = "my-drive.toml"` is the file next to the array file.
        beside = path.parent / drive
        if beside.is_file():
            request = replace(request, drive=str(beside))
    return request


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
    """A seed (bounds: the native side's ``seed``)."""
    return int(parse_checked(value, limits.field("seed"), label))
