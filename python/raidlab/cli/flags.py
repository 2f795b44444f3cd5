"""Flags shared by the commands: the array and tuning flags, output format, seed,
jobs; and how a flag names a key of the API in errors.

Options are taken as text and validated by the front end so every error has the same
shape and names the flag.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from raidlab import api
from raidlab.errors import RaidlabError
from raidlab.scenario.array import parse_int
from raidlab.scenario.executor import JOBS_MAX, executor_scope
from raidlab.scenario.tuning import Tuning, tune_array

FORMATS = ("table", "csv", "json")


# How errors name the canonical keys of the front end when they come from a flag.
ARRAY_FLAGS = {
    "level": "--level",
    "drives": "--drives",
    "stripe_unit": "--stripe-unit",
    "drive": "--drive",
    "controller": "--controller",
    "layout": "--layout",
    "copies": "--copies",
    "spans": "--spans",
    "failed": "--failed",
    "rebuild_rate": "--rebuild-rate",
    "spares": "--spares",
    "fail_at": "--fail-at",
    "rebuild_rate_min": "--rebuild-rate-min",
}


ATTO_FLAGS = {
    "qd": "--qd",
    "sizes": "--sizes",
    "length": "--length",
    "ios_max": "--ios-max",
    "seed": "--seed",
}


RUN_FLAGS = {
    "rw": "--rw",
    "bs": "--bs",
    "iodepth": "--iodepth",
    "numjobs": "--numjobs",
    "rwmixread": "--rwmixread",
    "ios": "--ios",
    "size": "--size",
    "offset": "--offset",
    "warmup_ios": "--warmup-ios",
    "runtime_ns": "--runtime",
}


def check_format(value: str) -> str:
    if value not in FORMATS:
        raise RaidlabError("--format", f"must be one of {', '.join(FORMATS)}, got {value!r}")
    return value


def parse_jobs(value: str | None) -> int | None:
    return None if value is None else parse_int(value, "--jobs", 1, JOBS_MAX)


# Option declarations shared by atto and run. Values are text: the front end parses
# them so that every bad value gets the same one-line error naming the flag.
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="Array TOML file (see docs/config.md); flags override its values "
        "(default: none, the array is the flags').",
    ),
]


DriveOption = Annotated[
    str | None,
    typer.Option(
        "--drive",
        help="Drive preset, e.g. adata-sp900-128g (see `raidlab presets`; no default: "
        "give it or --config).",
    ),
]


ControllerOption = Annotated[
    str | None, typer.Option("--controller", help="Controller preset (default: hba).")
]


LevelOption = Annotated[
    str | None,
    typer.Option("--level", help="RAID level: 0, 1, 4, 5, 6, 10, 50, 60 or concat (default 0)."),
]


LayoutOption = Annotated[
    str | None,
    typer.Option(
        "--layout",
        help="RAID 5/6/50/60: left-symmetric (default), left-asymmetric, right-symmetric, "
        "right-asymmetric; RAID 10: near (default), far, offset.",
    ),
]


CopiesOption = Annotated[
    str | None,
    typer.Option("--copies", help="RAID 10: copies of each chunk, 2..drives (default 2)."),
]


SpansOption = Annotated[
    str | None,
    typer.Option("--spans", help="RAID 50/60: RAID 5/6 sub-arrays striped together (default 2)."),
]


FailedOption = Annotated[
    str | None,
    typer.Option(
        "--failed", help="Failed member indices, e.g. 1,3 (degraded run; default: none failed)."
    ),
]


RebuildRateOption = Annotated[
    str | None,
    typer.Option(
        "--rebuild-rate",
        help="Rebuild the lowest-index failed member at this rate in bytes/s, e.g. 50M "
        "(default: no rebuild).",
    ),
]


RebuildRateMinOption = Annotated[
    str | None,
    typer.Option(
        "--rebuild-rate-min",
        help="With --rebuild-rate: keep the rebuild at least at this rate in bytes/s under "
        "load, e.g. 1000K (default: the controller preset's; linux-md 1000K, md's "
        "speed_limit_min; MegaRAID/PERC 30 % of what the rebuild does alone).",
    ),
]


WriteCacheOption = Annotated[
    str | None,
    typer.Option(
        "--write-cache",
        help="Controller cache: wb (write-back, needs a cache and a backup unit) or wt "
        "(write-through; the default of every controller preset). An HDD's own write "
        "cache is the drive preset's (`raidlab presets` shows it; set `write_cache` in "
        "the drive table of an array file, docs/config.md).",
    ),
]


BbuOption = Annotated[
    str | None,
    typer.Option(
        "--bbu",
        help="Battery/flash backup unit fitted: yes or no (default: the controller "
        "preset's `bbu`, raidlab/scenario/presets/controllers.toml).",
    ),
]


ReadAheadOption = Annotated[
    str | None,
    typer.Option(
        "--read-ahead",
        help="Controller read-ahead: none, adaptive, always (default: the controller "
        "preset's; `raidlab presets` lists it, off unless it shows segments).",
    ),
]


OpOption = Annotated[
    str | None,
    typer.Option(
        "--op",
        help="SSD over-provisioning: share left unpartitioned, e.g. 20% (default: the "
        "drive preset's, 0%; SSDs with an FTL model only).",
    ),
]


PreconditionOption = Annotated[
    str | None,
    typer.Option(
        "--precondition",
        help="SSD state: fob (fresh out of the box) or steady (SNIA PTS steady state) "
        "(default: steady for every SSD preset; SSDs with an FTL model only; reports "
        "print the state).",
    ),
]


FastpathOption = Annotated[
    bool,
    typer.Option(
        "--fastpath",
        help="Controller FastPath (MegaRAID): write-through, no read-ahead, lower per-I/O "
        "cost (default: off, the controller's normal path).",
    ),
]


DeletedOption = Annotated[
    str | None,
    typer.Option(
        "--deleted",
        help="Share of the array the host deleted after preconditioning, e.g. 50% "
        "(default: 0%, nothing deleted).",
    ),
]


TrimPassthroughOption = Annotated[
    str | None,
    typer.Option(
        "--trim-passthrough",
        help="Controller passes TRIM to the SSDs: yes or no (default: the preset's).",
    ),
]


SchedulerOption = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="Host I/O scheduler in front of the array: none (default), mq-deadline or bfq.",
    ),
]


CachePolicyOption = Annotated[
    str | None,
    typer.Option(
        "--cache-policy",
        help="SSD cache tier in front of the array: raidix, lru, smq or bcache (default: "
        "no cache; raidix when another --cache-* flag is given; docs/cache-tier.md).",
    ),
]


CacheDriveOption = Annotated[
    str | None,
    typer.Option("--cache-drive", help="The cache's SSD preset (required with a cache)."),
]


CacheDrivesOption = Annotated[
    str | None, typer.Option("--cache-drives", help="Cache SSDs (default 4).")
]


CacheLevelOption = Annotated[
    str | None, typer.Option("--cache-level", help="RAID level of the cache SSDs (default 10).")
]


CacheSizeOption = Annotated[
    str | None,
    typer.Option(
        "--cache-size", help="Cache bytes used, e.g. 372G (default: the cache array's capacity)."
    ),
]


CACHE_FLAGS = {
    "policy": "--cache-policy",
    "drive": "--cache-drive",
    "drives": "--cache-drives",
    "level": "--cache-level",
    "size": "--cache-size",
}


TUNING_FLAGS = {
    "write_cache": "--write-cache",
    "bbu": "--bbu",
    "read_ahead": "--read-ahead",
    "op": "--op",
    "precondition": "--precondition",
    "fastpath": "--fastpath",
    "deleted": "--deleted",
    "trim_passthrough": "--trim-passthrough",
    "scheduler": "--scheduler",
}


DrivesOption = Annotated[
    str | None, typer.Option("--drives", help="Member drives, 1..256 (default 1).")
]


StripeUnitOption = Annotated[
    str | None,
    typer.Option("--stripe-unit", help="Stripe unit, power of two 512..1G (default 64K)."),
]


SeedOption = Annotated[str, typer.Option("--seed", help="Random seed; same seed, same results.")]


JobsOption = Annotated[
    str | None, typer.Option("--jobs", help="Worker processes (default: CPU count).")
]


ClusterOption = Annotated[
    str | None,
    typer.Option(
        "--cluster",
        help="Run the points on this Dask scheduler, e.g. tcp://HOST:8786 (default: "
        "$RAIDLAB_CLUSTER, else $DASK_SCHEDULER_ADDRESS, else local worker processes).",
    ),
]


@contextmanager
def cluster_scope(cluster: str | None, jobs: str | None) -> Iterator[None]:
    """The command's runs on the Dask cluster ``--cluster`` or the environment names
    (local processes without one). An explicit ``--jobs`` keeps them local, unless
    ``--cluster`` is given too: that is refused."""
    from raidlab.scenario.cluster import cluster_executor

    if jobs is not None:
        if cluster is not None:
            raise RaidlabError("--jobs", "sets local worker processes; not with --cluster")
        yield
        return
    with cluster_executor(cluster) as executor, executor_scope(executor):
        yield


FormatOption = Annotated[str, typer.Option("--format", help="table, csv or json.")]


SparesOption = Annotated[
    str | None,
    typer.Option("--spares", help="Hot spares standing by (default 0)."),
]


FailAtOption = Annotated[
    str | None,
    typer.Option(
        "--fail-at",
        help="With --spares: the rebuilt member fails this far into the run, e.g. 2ms, "
        "and the spare's rebuild starts at once (default: failed before the run).",
    ),
]


ExplainOption = Annotated[
    bool,
    typer.Option(
        "--explain", help="Show resource utilisation, the bottleneck and member I/O per host I/O."
    ),
]


def opt(flag: str, help_text: str) -> Any:
    return typer.Option(flag, help=help_text)


# The array and tuning flags every simulating command takes, declared once: the
# decorator adds them to a command's signature and hands the command one ArrayFlags.
ARRAY_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("config", ConfigOption),
    ("drive", DriveOption),
    ("controller", ControllerOption),
    ("level", LevelOption),
    ("drives", DrivesOption),
    ("stripe_unit", StripeUnitOption),
    ("layout", LayoutOption),
    ("copies", CopiesOption),
    ("spans", SpansOption),
    ("failed", FailedOption),
    ("rebuild_rate", RebuildRateOption),
    ("spares", SparesOption),
    ("fail_at", FailAtOption),
    ("rebuild_rate_min", RebuildRateMinOption),
    ("write_cache", WriteCacheOption),
    ("bbu", BbuOption),
    ("read_ahead", ReadAheadOption),
    ("op", OpOption),
    ("precondition", PreconditionOption),
    ("fastpath", FastpathOption),
    ("deleted", DeletedOption),
    ("trim_passthrough", TrimPassthroughOption),
    ("scheduler", SchedulerOption),
    ("cache_policy", CachePolicyOption),
    ("cache_drive", CacheDriveOption),
    ("cache_drives", CacheDrivesOption),
    ("cache_level", CacheLevelOption),
    ("cache_size", CacheSizeOption),
)


@dataclass(frozen=True)
class ArrayFlags:
    """The array and tuning flags of a command, as text until ``build``."""

    config: Path | None = None
    drive: str | None = None
    controller: str | None = None
    level: str | None = None
    drives: str | None = None
    stripe_unit: str | None = None
    layout: str | None = None
    copies: str | None = None
    spans: str | None = None
    failed: str | None = None
    rebuild_rate: str | None = None
    spares: str | None = None
    fail_at: str | None = None
    rebuild_rate_min: str | None = None
    write_cache: str | None = None
    bbu: str | None = None
    read_ahead: str | None = None
    op: str | None = None
    precondition: str | None = None
    fastpath: bool | None = None
    deleted: str | None = None
    trim_passthrough: str | None = None
    scheduler: str | None = None
    cache_policy: str | None = None
    cache_drive: str | None = None
    cache_drives: str | None = None
    cache_level: str | None = None
    cache_size: str | None = None

    def build(self) -> dict[str, Any]:
        """The scenario's ``array``; errors name the flags."""
        if self.config is None and self.drive is None:
            raise RaidlabError(
                "--drive", "give a drive preset (see `raidlab presets`) or --config FILE.toml"
            )
        array = api.resolve_array(
            self.config,
            level=self.level,
            drives=self.drives,
            stripe_unit=self.stripe_unit,
            drive=self.drive,
            controller=self.controller,
            layout=self.layout,
            copies=self.copies,
            spans=self.spans,
            failed=self.failed,
            rebuild_rate=self.rebuild_rate,
            labels=ARRAY_FLAGS,
            spares=self.spares,
            fail_at=self.fail_at,
            rebuild_rate_min=self.rebuild_rate_min,
        )
        tuning = Tuning(
            write_cache=self.write_cache,
            bbu=self.bbu,
            read_ahead=self.read_ahead,
            op=self.op,
            precondition=self.precondition,
            labels=TUNING_FLAGS,
            fastpath=self.fastpath,
            deleted=self.deleted,
            trim_passthrough=self.trim_passthrough,
            scheduler=self.scheduler,
        )
        return self.with_cache(tune_array(array, tuning))

    def with_cache(self, array: dict[str, Any]) -> dict[str, Any]:
        """``array`` with the cache tier of ``[cache]`` in --config and the --cache-*
        flags (the flags win); unchanged without either."""
        from raidlab.scenario.cache import attach_cache, cache_table_values

        values: dict[str, Any] = {}
        labels: dict[str, str] = dict(CACHE_FLAGS)
        if self.config is not None:
            import tomllib

            try:
                document = tomllib.loads(self.config.read_text("utf-8"))
            except (OSError, tomllib.TOMLDecodeError):
                document = {}  # load_array_file has reported it already
            values, file_labels = cache_table_values(document, str(self.config))
            # A key the file gives is named as the file's; others as their flag.
            labels.update({key: file_labels[key] for key in values})
        flags = {
            "policy": self.cache_policy,
            "drive": self.cache_drive,
            "drives": self.cache_drives,
            "level": self.cache_level,
            "size": self.cache_size,
        }
        for key, value in flags.items():
            if value is not None:
                values[key] = value
                labels[key] = CACHE_FLAGS[key]
        return attach_cache(array, values, labels)


def with_array_flags(command: Callable[..., None]) -> Callable[..., None]:
    """Give ``command`` (which takes a keyword ``flags: ArrayFlags``) the array flags."""
    signature = inspect.signature(command)
    # The module's annotations are strings (postponed evaluation); typer needs the
    # Annotated objects, resolved here where every option alias is defined.
    hints = typing.get_type_hints(command, include_extras=True)
    own = [
        p.replace(annotation=hints.get(name, p.annotation))
        for name, p in signature.parameters.items()
        if name != "flags"
    ]
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=kind)
        for name, kind in ARRAY_OPTIONS
    ]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        flags = ArrayFlags(**{name: kwargs.pop(name, None) for name, _ in ARRAY_OPTIONS})
        command(*args, flags=flags, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=[*own, *added])  # type: ignore[attr-defined]
    return wrapper
