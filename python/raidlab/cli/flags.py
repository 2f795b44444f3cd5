"""The flags of the commands, each declared once: its name, flag, the request key it
fills (so errors name the flag), default and help. Commands take them by decorator
(:func:`flagset`), which adds the typer options to the command's signature and hands
the command the request objects the flag sets build (``ArrayFlags``,
``WorkloadRequest``, ``RiskOptions``).

Options are taken as text and validated by the front end so every error has the same
shape and names the flag. A command may give a flag another default (``life`` writes
where ``run`` reads); the flag's help and meaning stay the registry's.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Iterator, Mapping
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
from raidlab.scenario.workloads import DEFAULT_IOS, WorkloadRequest

FORMATS = ("table", "csv", "json")


@dataclass(frozen=True)
class Shown:
    """A default of None that means something: ``text`` is what help shows for it."""

    text: str
    value: Any = None


@dataclass(frozen=True)
class Flag:
    """One flag: ``key`` is the command's parameter, ``field`` the request's key it
    fills (``key`` unless given); ``help`` says what it is, and what leaving it out
    gives where the default is None (else typer shows the default)."""

    key: str
    flag: str
    help: str
    default: Any = None
    annotation: Any = str | None
    field: str = ""

    @property
    def request_key(self) -> str:
        return self.field or self.key

    def parameter(self, default: Any) -> inspect.Parameter:
        """The typer option of this flag with ``default`` (a value or ``Shown``)."""
        shown: bool | str = True
        if isinstance(default, Shown):
            shown, default = default.text, default.value
        option = typer.Option(self.flag, help=self.help, show_default=shown)
        return inspect.Parameter(
            self.key,
            inspect.Parameter.KEYWORD_ONLY,
            default=default,
            annotation=Annotated[self.annotation, option],
        )


@dataclass(frozen=True)
class FlagSet:
    """Flags that together build one request object, handed to the command as the
    keyword ``name``; ``build(values)`` gets the values of the flags given (by key; a
    None is left out) and ``requested(values)`` names them by request key."""

    name: str
    flags: tuple[Flag, ...]
    build: Callable[[dict[str, Any]], Any]

    def __getitem__(self, key: str) -> Flag:
        for flag in self.flags:
            if flag.key == key:
                return flag
        raise KeyError(key)

    def labels(self) -> dict[str, str]:
        """How errors name each request key: by its flag."""
        return {flag.request_key: flag.flag for flag in self.flags}

    def requested(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` (by flag key) by request key."""
        return {flag.request_key: values[flag.key] for flag in self.flags if flag.key in values}

    def only(self, *keys: str) -> FlagSet:
        """This set with only the flags ``keys`` (a command that takes a few)."""
        return FlagSet(self.name, tuple(self[key] for key in keys), self.build)


# --- array, tuning and cache flags: one ArrayFlags --------------------------------------

_ARRAY = (
    Flag(
        "config",
        "--config",
        "Array TOML file (see docs/config.md); flags override its values "
        "(default: none, the array is the flags').",
        annotation=Path | None,
    ),
    Flag(
        "drive",
        "--drive",
        "Drive preset, e.g. adata-sp900-128g (see `raidlab presets`; no default: give it, "
        "or --config where the command takes one).",
    ),
    Flag("controller", "--controller", "Controller preset (default: hba)."),
    Flag("level", "--level", "RAID level: 0, 1, 4, 5, 6, 10, 50, 60 or concat (default 0)."),
    Flag("drives", "--drives", "Member drives, 1..256 (default 1)."),
    Flag("stripe_unit", "--stripe-unit", "Stripe unit, power of two 512..1G (default 64K)."),
    Flag(
        "layout",
        "--layout",
        "RAID 5/6/50/60: left-symmetric (default), left-asymmetric, right-symmetric, "
        "right-asymmetric; RAID 10: near (default), far, offset.",
    ),
    Flag("copies", "--copies", "RAID 10: copies of each chunk, 2..drives (default 2)."),
    Flag("spans", "--spans", "RAID 50/60: RAID 5/6 sub-arrays striped together (default 2)."),
    Flag(
        "failed",
        "--failed",
        "Failed member indices, e.g. 1,3 (degraded run; default: none failed).",
    ),
    Flag(
        "rebuild_rate",
        "--rebuild-rate",
        "Rebuild rate in bytes/s, e.g. 50M: a run rebuilds the lowest-index failed member "
        "at it (default: no rebuild; risk and advise: md's 200000K).",
    ),
    Flag("spares", "--spares", "Hot spares standing by (default 0)."),
    Flag(
        "fail_at",
        "--fail-at",
        "With --spares: the rebuilt member fails this far into the run, e.g. 2ms, and the "
        "spare's rebuild starts at once (default: failed before the run).",
    ),
    Flag(
        "rebuild_rate_min",
        "--rebuild-rate-min",
        "With --rebuild-rate: keep the rebuild at least at this rate in bytes/s under load, "
        "e.g. 1000K (default: the controller preset's; linux-md 1000K, md's "
        "speed_limit_min; MegaRAID/PERC 30 % of what the rebuild does alone).",
    ),
)

_TUNING = (
    Flag(
        "write_cache",
        "--write-cache",
        "Controller cache: wb (write-back, needs a cache and a backup unit) or wt "
        "(write-through). Default: the controller preset's `write_back`, its vendor's "
        "default (MegaRAID: write-back, write-through with --bbu no; the run's header "
        "says which policy ran and whether it is the default). An HDD's own write "
        "cache is the drive preset's (`raidlab presets` shows it; set `write_cache` in "
        "the drive table of an array file, docs/config.md).",
    ),
    Flag(
        "bbu",
        "--bbu",
        "Battery/flash backup unit fitted: yes or no (default: the controller preset's "
        "`bbu`, raidlab/scenario/presets/controllers.toml).",
    ),
    Flag(
        "read_ahead",
        "--read-ahead",
        "Controller read-ahead: none, adaptive, always (default: the controller preset's; "
        "`raidlab presets` lists it, off unless it shows segments).",
    ),
    Flag(
        "op",
        "--op",
        "SSD over-provisioning: share left unpartitioned, e.g. 20% (default: the drive "
        "preset's, 0%; SSDs with an FTL model only).",
    ),
    Flag(
        "precondition",
        "--precondition",
        "SSD state: fob (fresh out of the box) or steady (SNIA PTS steady state) (default: "
        "steady for every SSD preset; SSDs with an FTL model only; reports print the "
        "state).",
    ),
    Flag(
        "fastpath",
        "--fastpath",
        "Controller FastPath (MegaRAID): write-through, no read-ahead, lower per-I/O cost "
        "(default: off, the controller's normal path).",
        default=False,
        annotation=bool,
    ),
    Flag(
        "deleted",
        "--deleted",
        "Share of the array the host deleted after preconditioning, e.g. 50% (default: 0%, "
        "nothing deleted).",
    ),
    Flag(
        "trim_passthrough",
        "--trim-passthrough",
        "Controller passes TRIM to the SSDs: yes or no (default: the preset's).",
    ),
    Flag(
        "scheduler",
        "--scheduler",
        "Host I/O scheduler in front of the array: none (default), mq-deadline or bfq.",
    ),
)

_CACHE = (
    Flag(
        "cache_policy",
        "--cache-policy",
        "SSD cache tier in front of the array: raidix, lru, smq or bcache (default: no "
        "cache; raidix when another --cache-* flag is given; docs/cache-tier.md).",
        field="policy",
    ),
    Flag(
        "cache_drive",
        "--cache-drive",
        "The cache's SSD preset (required with a cache).",
        field="drive",
    ),
    Flag("cache_drives", "--cache-drives", "Cache SSDs (default 4).", field="drives"),
    Flag(
        "cache_level", "--cache-level", "RAID level of the cache SSDs (default 10).", field="level"
    ),
    Flag(
        "cache_size",
        "--cache-size",
        "Cache bytes used, e.g. 372G (default: the cache array's capacity).",
        field="size",
    ),
)


@dataclass(frozen=True)
class ArrayFlags:
    """The array, tuning and cache flags of a command, as text until ``build``."""

    config: Path | None = None
    array: Mapping[str, Any] | None = None
    tuning: Mapping[str, Any] | None = None
    cache: Mapping[str, Any] | None = None

    def value(self, key: str) -> Any:
        """The value given to the flag of ``key`` (``drive``, ``fastpath``), else None."""
        for given in (self.array, self.tuning, self.cache):
            if given and key in given:
                return given[key]
        return None

    @property
    def drive(self) -> str | None:
        return self.value("drive")

    def without(self, key: str) -> ArrayFlags:
        """These flags with the array flag ``key`` left out."""
        array = {k: v for k, v in (self.array or {}).items() if k != key}
        return ArrayFlags(self.config, array, self.tuning, self.cache)

    def build(self) -> dict[str, Any]:
        """The scenario's ``array``; errors name the flags."""
        if self.config is None and self.drive is None:
            raise RaidlabError(
                "--drive", "give a drive preset (see `raidlab presets`) or --config FILE.toml"
            )
        array = api.resolve_array(self.config, labels=ARRAY_LABELS, **(self.array or {}))
        tuning = Tuning(**(self.tuning or {}), labels=TUNING_LABELS)
        return self.with_cache(tune_array(array, tuning))

    def with_cache(self, array: dict[str, Any]) -> dict[str, Any]:
        """``array`` with the cache tier of ``[cache]`` in --config and the --cache-*
        flags (the flags win); unchanged without either."""
        from raidlab.scenario.cache import attach_cache, cache_table_values

        values: dict[str, Any] = {}
        labels: dict[str, str] = dict(CACHE_LABELS)
        if self.config is not None:
            import tomllib

            try:
                document = tomllib.loads(self.config.read_text("utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                document = {}  # load_array_file has reported it already
            values, file_labels = cache_table_values(document, str(self.config))
            # A key the file gives is named as the file's; others as their flag.
            labels.update({key: file_labels[key] for key in values})
        for key, value in (self.cache or {}).items():
            values[key] = value
            labels[key] = CACHE_LABELS[key]
        return attach_cache(array, values, labels)


ARRAY_LABELS = {flag.request_key: flag.flag for flag in _ARRAY if flag.key != "config"}
TUNING_LABELS = {flag.request_key: flag.flag for flag in _TUNING}
CACHE_LABELS = {flag.request_key: flag.flag for flag in _CACHE}


def _array_flags(values: dict[str, Any]) -> ArrayFlags:
    """The array, tuning and cache flags given, apart: the cache's keys (policy, drive,
    drives, ...) are the array's names for other things."""

    def part(flags: tuple[Flag, ...]) -> dict[str, Any]:
        return {f.request_key: values[f.key] for f in flags if f.key in values}

    array = {k: v for k, v in part(_ARRAY).items() if k != "config"}
    return ArrayFlags(values.get("config"), array, part(_TUNING), part(_CACHE))


ARRAY = FlagSet("flags", (*_ARRAY, *_TUNING, *_CACHE), _array_flags)


# --- the fio-style workload: one WorkloadRequest ---------------------------------------

WORKLOAD = FlagSet(
    "workload",
    (
        Flag(
            "rw",
            "--rw",
            "fio's rw: read, write, randread, randwrite, rw, randrw, trim, randtrim, trimwrite.",
        ),
        Flag("bs", "--bs", "Block size, or a mix 4K:55,64K:25,128K:20."),
        Flag("iodepth", "--iodepth", "Outstanding I/Os per job."),
        Flag("numjobs", "--numjobs", "Independent jobs."),
        Flag("rwmixread", "--rwmixread", "Read percentage for rw/randrw."),
        Flag("ios", "--ios", "Measured host I/Os."),
        Flag(
            "warmup_ios",
            "--warmup-ios",
            "Host I/Os completed and discarded before measuring (default: a tenth of "
            "--ios, at least 8; SSD writes in steady state until the drives' write "
            "buffers are full, see docs/predict.md).",
        ),
        Flag(
            "runtime",
            "--runtime",
            "Measured simulated time, e.g. 10s, 500ms (stops at --ios too; default: no "
            "limit, the run ends at --ios).",
            field="runtime_ns",
        ),
        Flag("size", "--size", "Region (test file) size, from --offset."),
        Flag("offset", "--offset", "Region start."),
    ),
    lambda values: WorkloadRequest(**WORKLOAD.requested(values), labels=WORKLOAD.labels()),
)


def _one_workload_defaults() -> dict[str, Any]:
    """The workload flags' defaults where a command runs one fio-style workload (run,
    life): the request's own (``WorkloadRequest``), as typer shows them, and the default
    run's I/O count. A command gives only what it does differently (its ``rw``)."""
    own = {f.name: f.default for f in dataclasses.fields(WorkloadRequest)}
    keys = ("bs", "iodepth", "numjobs", "rwmixread", "offset")
    return {
        **{key: str(own[key]) for key in keys},
        "ios": Shown(str(DEFAULT_IOS)),
        "size": Shown("whole array"),
    }


ONE_WORKLOAD_DEFAULTS = _one_workload_defaults()
IOS_DEFAULT = str(DEFAULT_IOS)


# --- reliability figures of risk and advise: one RiskOptions ---------------------------


def _risk_options(values: dict[str, Any]) -> Any:
    # The reliability models load with the commands that use them, not with `run`.
    from raidlab.reliability import RiskOptions

    return RiskOptions(**RISK.requested(values), labels=RISK.labels())


RISK = FlagSet(
    "risk",
    (
        Flag(
            "mtbf_hours", "--mtbf-hours", "Per-drive MTBF in hours (default: the drive preset's)."
        ),
        Flag(
            "afr",
            "--afr",
            "Per-drive annualised failure rate, % per year, instead of --mtbf-hours "
            "(default: the drive preset's).",
        ),
        Flag(
            "ure",
            "--ure",
            "Bits read per unrecoverable read error, e.g. 1e14 or 1e15 (default: the drive "
            "preset's).",
        ),
        Flag("mission_years", "--mission-years", "Years over which P(loss) is given.", "5"),
        Flag(
            "replace_after",
            "--replace-after",
            "Detection and replacement delay before a rebuild, e.g. 24h, 3d.",
            "24h",
        ),
        Flag(
            "hot_spare",
            "--hot-spare",
            "A hot spare rebuilds at once: no replacement delay.",
            False,
            bool,
        ),
        Flag(
            "scrub_interval",
            "--scrub-interval",
            "Monte Carlo: a scrub every this long finds latent sector errors, e.g. 168h "
            "(default: never).",
        ),
        Flag(
            "latent_defect_hours",
            "--latent-defect-hours",
            "Monte Carlo: mean hours until a drive develops a latent sector error, e.g. 9259 "
            "(Elerath & Pecht 2009; default: none).",
        ),
        Flag(
            "batch_factor",
            "--batch-factor",
            "Monte Carlo: survivors of a failure fail this many times faster until it is "
            "rebuilt (correlated, same-batch drives).",
            "1",
        ),
        Flag(
            "repair",
            "--repair",
            "Monte Carlo rebuild times: markov (exponential, one at a time, as the formulas) "
            "or fixed (exactly MTTR, together, as md).",
            "markov",
        ),
        Flag("episodes", "--episodes", "Monte Carlo: degraded episodes simulated.", "200000"),
    ),
    _risk_options,
)


# --- flags of a command's run: seed, output, workers -----------------------------------

SEED = Flag("seed", "--seed", "Random seed; same seed, same results.", "1", str)
FORMAT = Flag("output_format", "--format", "table, csv or json.", "table", str)
EXPLAIN = Flag(
    "explain",
    "--explain",
    "Show resource utilisation, the bottleneck and member I/O per host I/O.",
    False,
    bool,
)
MEMORY_LIMIT = Flag(
    "memory_limit",
    "--memory-limit",
    "The most simulator memory the run's I/Os in flight (--numjobs x --iodepth) may "
    "take; a run that needs more is refused before it starts.",
    "4G",
    str,
)
JOBS = Flag("jobs", "--jobs", "Worker processes (default: CPU count).")
CLUSTER = Flag(
    "cluster",
    "--cluster",
    "Run the points on this Dask scheduler, e.g. tcp://HOST:8786 (default: "
    "$RAIDLAB_CLUSTER, else $DASK_SCHEDULER_ADDRESS, else local worker processes).",
)
PLOT = Flag(
    "plot",
    "--plot",
    "Also draw the results to this file (FILE.png; format from the suffix); its "
    "directory must exist (default: no figure).",
    annotation=Path | None,
)
LOG_Y = Flag(
    "log_y",
    "--log-y",
    "Draw MB/s on a log axis, where small transfers show (figures of --plot or --out).",
    False,
    bool,
)
IOS_MAX = Flag(
    "ios_max",
    "--ios-max",
    "Measured I/Os: at most this many per ATTO point, exactly this many per claim run.",
)
SIZES = Flag(
    "sizes", "--sizes", "Transfer sizes: a list 4K,64K (atto: or a range 512..32M, doubling)."
)
MODE = Flag("mode", "--mode", "Trace replay: open (at trace timestamps) or closed (at --iodepth).")
OUTPUT_FORMAT = Flag(
    "output_format",
    "--output-format",
    "Report format: replay table, csv or json; fio normal (fio's text), json or json+ "
    "(fio's schema), or terse (fio's --minimal lines).",
)

# Flags that are their own request value, by the command's parameter name.
SINGLE_FLAGS = (SEED, FORMAT, EXPLAIN, JOBS, CLUSTER, PLOT, LOG_Y, IOS_MAX, SIZES, MODE)


def flagset(
    *sets: FlagSet | Flag, defaults: Mapping[str, Any] | None = None
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command the flags of ``sets``: each FlagSet is handed to it as its request
    object (keyword ``set.name``), each single Flag as its value (keyword ``flag.key``).
    ``defaults`` gives flags (by key) the command's own default, a value or a
    ``Shown`` (a default of None and the text help shows for it)."""
    chosen = dict(defaults or {})
    flags = [
        flag for item in sets for flag in (item.flags if isinstance(item, FlagSet) else (item,))
    ]
    unknown = set(chosen) - {flag.key for flag in flags}
    assert not unknown, f"defaults for flags the command does not take: {unknown}"

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(command)
        # The command modules' annotations are strings (postponed evaluation); typer
        # needs the Annotated objects, resolved here where they are defined.
        hints = typing.get_type_hints(command, include_extras=True)
        handed = {item.name for item in sets if isinstance(item, FlagSet)}
        handed |= {item.key for item in sets if isinstance(item, Flag)}
        own = [
            p.replace(annotation=hints.get(name, p.annotation))
            for name, p in signature.parameters.items()
            if name not in handed
        ]
        added = [flag.parameter(chosen.get(flag.key, flag.default)) for flag in flags]
        missing = {p.name for p in own if p.kind is p.KEYWORD_ONLY} - handed
        assert not missing, f"{command.__name__} takes {missing}, which no flag set hands it"

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> None:
            for item in sets:
                if isinstance(item, Flag):
                    continue
                values = {
                    flag.key: value
                    for flag in item.flags
                    if (value := kwargs.pop(flag.key)) is not None
                }
                kwargs[item.name] = item.build(values)
            command(*args, **kwargs)

        wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[*own, *added]
        )
        return wrapper

    return decorate


def given(*keys: str) -> list[str]:
    """The flags of ``keys`` (parameter names) the command line gave, as flags."""
    try:  # typer >= 0.20 vendors click as typer._click; older typer uses click itself
        from typer._click.core import ParameterSource
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover
        from click.core import ParameterSource
        from click.globals import get_current_context

    context = get_current_context()
    by_key = {param.name: param for param in context.command.params}
    return [
        by_key[key].opts[0]
        for key in keys
        if context.get_parameter_source(key) is not ParameterSource.DEFAULT
    ]


def check_format(value: str, formats: tuple[str, ...] = FORMATS, label: str = "--format") -> str:
    """``label``: the flag that gave it (replay's report format is --output-format, its
    --format is the trace's)."""
    if value not in formats:
        raise RaidlabError(label, f"must be one of {', '.join(formats)}, got {value!r}")
    return value


def parse_jobs(value: str | None) -> int | None:
    return None if value is None else parse_int(value, "--jobs", 1, JOBS_MAX)


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


def opt(flag: str, help_text: str) -> Any:
    """The typer option of a flag only one command takes."""
    return typer.Option(flag, help=help_text)


def registry() -> dict[str, Flag]:
    """Every flag declared here, by flag: one declaration each."""
    found: dict[str, Flag] = {}
    for flag in (*ARRAY.flags, *WORKLOAD.flags, *RISK.flags, *SINGLE_FLAGS, OUTPUT_FORMAT):
        assert found.setdefault(flag.flag, flag) is flag, f"{flag.flag} declared twice"
    return found
