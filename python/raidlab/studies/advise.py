"""`raidlab advise`: simulate the candidate arrays for a set of drives and a workload,
and rank them.

The candidates are every RAID level the drive count allows that meets the constraints
(usable capacity, failures survived in every case), at a few stripe units, with the
controller's write cache off (``wt``), where it has one and a backup unit on (``wb``),
and where it has FastPath, write-through on the FastPath (``fastpath``). Each candidate
is a scenario like any other, so they run in parallel and the ranking is reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from raidlab.errors import RaidlabError
from raidlab.frontends.fio import JobFile, plan_jobs
from raidlab.frontends.suites import iometer_workloads, parse_access_spec
from raidlab.reliability import (
    MD_SPEED_LIMIT_MAX_BYTES_PER_S,
    DriveFigures,
    ResolvedRisk,
    RiskOptions,
    drive_figures,
    group_shape,
    rebuild_estimate,
    rebuilding_array,
    resolve_options,
    risk_document,
)
from raidlab.scenario import limits
from raidlab.scenario.array import (
    ArrayRequest,
    build_array,
    build_scenario,
    parse_int,
    parse_rebuild_rate,
    parse_seed,
    schedulers,
)
from raidlab.scenario.executor import run_scenarios
from raidlab.scenario.native import array_info
from raidlab.scenario.presets import DEFAULT_CONTROLLER
from raidlab.scenario.tuning import Tuning, tune_array
from raidlab.scenario.workloads import DEFAULT_IOS, WorkloadRequest, build_workload
from raidlab.units import format_size, parse_size

# pandas loads where a frame is built, not with the module: the command line starts
# without it (docs/benchmarks.md, start-up).
if TYPE_CHECKING:
    import pandas as pd

# Levels tried; the drives each needs are the layout's (``limits.levels()``; RAID
# 50/60 with two spans, the fewest the native side allows).
LEVELS_TRIED = (0, 1, 5, 6, 10, 50, 60)
STRIPE_UNITS = ("16K", "64K", "256K")
METRICS = ("iops", "mbps", "lat_p99_us", "risk")
# The column each metric ranks by, and whether lower is better.
METRIC_COLUMNS = {"iops": "iops", "mbps": "mbps", "lat_p99_us": "lat_p99_us", "risk": "p_loss"}
LOWER_IS_BETTER = ("lat_p99_us", "p_loss")
ADVISE_COLUMNS = [
    "rank",
    "level",
    "stripe_unit_bytes",
    "write_cache",
    "usable_bytes",
    "tolerated_failures",
    "iops",
    "mbps",
    "lat_p99_us",
    "bound",
    "bottleneck",
    "bottleneck_utilisation",
    "stage_longest",
    "mttr_hours",
    "mttdl_with_ure_hours",
    "p_loss",
]


class WorkloadSource(Protocol):
    """What advise runs on every candidate: a scenario for an array."""

    def scenario(self, array: Mapping[str, Any], seed: int) -> dict[str, Any]: ...


@dataclass(frozen=True)
class FioJobs:
    """The jobs of a fio job file, run together on every candidate; each job's I/O
    count is capped at ``ios`` (a job sized to the whole array would otherwise take
    minutes per candidate)."""

    job_file: JobFile
    source: str
    ios: int = DEFAULT_IOS
    label: str = "job"

    def scenario(self, array: Mapping[str, Any], seed: int) -> dict[str, Any]:
        plan = plan_jobs(self.job_file, array)
        if len(plan.groups) != 1:
            raise RaidlabError(
                self.label,
                f"{self.source} has {len(plan.groups)} groups of jobs (stonewall or wait_for); "
                "advise ranks arrays for one set of jobs that run together",
            )
        (scenario,) = plan.scenarios(array, seed)
        scenario["workloads"] = [
            {**w, "ios": min(int(w["ios"]), self.ios)} for w in scenario["workloads"]
        ]
        return scenario


@dataclass(frozen=True)
class AccessSpecWorkload:
    """An IOMeter access specification or preset (desktop, database, fileserver)."""

    spec: str
    ios: int = DEFAULT_IOS
    labels: Mapping[str, str] = field(default_factory=dict)

    def scenario(self, array: Mapping[str, Any], seed: int) -> dict[str, Any]:
        access = parse_access_spec(self.spec, self.labels.get("spec", "workload"))
        workloads = iometer_workloads(array, access, self.ios, None, self.labels)
        return {"schema": 1, "seed": seed, "array": dict(array), "workloads": workloads}


@dataclass(frozen=True)
class Candidate:
    """One array to try."""

    level: int
    stripe_unit: str
    # "wt", "wb" or "fastpath" (write-through on the controller's FastPath).
    cache: str
    capacity_bytes: int
    tolerated_failures: int


@dataclass(frozen=True)
class LevelArray:
    """One RAID level and stripe unit the drive count allows, before the constraints."""

    level: int
    stripe_unit: str
    array: dict[str, Any]
    capacity_bytes: int
    tolerated_failures: int


def _level_arrays(drive: Any, controller: Any, drives: int) -> list[LevelArray]:
    out = []
    table = limits.levels()
    for level in LEVELS_TRIED:
        if drives < table[level]["members_min"] or (level in (50, 60) and drives % 2):
            continue
        if level == 1 and drives > 4:
            continue  # an n-way mirror of many drives is never the sensible answer
        for stripe_unit in STRIPE_UNITS if level != 1 else ("64K",):
            array = build_array(
                ArrayRequest(
                    level=level,
                    drives=drives,
                    stripe_unit=stripe_unit,
                    drive=drive,
                    controller=controller,
                )
            )
            info = array_info(array)
            out.append(
                LevelArray(
                    level, stripe_unit, array, info["capacity_bytes"], info["tolerated_failures"]
                )
            )
    return out


def _check_constraints(
    levels: list[LevelArray],
    drives: int,
    capacity_bytes: int,
    tolerate: int,
    labels: Mapping[str, str],
) -> None:
    """Name the constraint no level meets: ``tolerate`` when no level of ``drives``
    survives that many failures, else ``capacity`` with the most a surviving level
    offers."""
    most_tolerant = max(levels, key=lambda item: item.tolerated_failures)
    if most_tolerant.tolerated_failures < tolerate:
        raise RaidlabError(
            labels.get("tolerate", "tolerate"),
            f"{drives} drives survive at most {most_tolerant.tolerated_failures} failure(s) "
            f"in every case (RAID {most_tolerant.level}), got {tolerate}",
        )
    surviving = [item for item in levels if item.tolerated_failures >= tolerate]
    largest = max(surviving, key=lambda item: item.capacity_bytes)
    if largest.capacity_bytes < capacity_bytes:
        raise RaidlabError(
            labels.get("capacity", "capacity"),
            f"no RAID level of {drives} drives that survives {tolerate} failure(s) offers "
            f"{capacity_bytes / 1e9:,.1f} GB; the most is "
            f"{largest.capacity_bytes / 1e9:,.1f} GB (RAID {largest.level})",
        )


def _candidates(
    levels: list[LevelArray],
    capacity_bytes: int,
    tolerate: int,
    scheduler: str | None = None,
) -> list[tuple[Candidate, dict[str, Any]]]:
    out = []
    for item in levels:
        if item.capacity_bytes < capacity_bytes or item.tolerated_failures < tolerate:
            continue
        array = item.array
        modes = {"wt": Tuning(write_cache="wt", scheduler=scheduler)}
        if array["controller"].get("cache_bytes"):
            modes["wb"] = Tuning(write_cache="wb", scheduler=scheduler)
        if array["controller"].get("fastpath_overhead_ns") is not None:
            modes["fastpath"] = Tuning(write_cache="wt", fastpath=True, scheduler=scheduler)
        for cache, tuning in modes.items():
            try:
                tuned = tune_array(array, tuning)
            except RaidlabError:
                continue  # write-back refused (no backup unit)
            candidate = Candidate(
                item.level,
                item.stripe_unit,
                cache,
                item.capacity_bytes,
                item.tolerated_failures,
            )
            out.append((candidate, tuned))
    return out


def _candidate_scenarios(
    candidates: list[tuple[Candidate, dict[str, Any]]],
    workload: WorkloadRequest | WorkloadSource,
    seed: int,
) -> list[dict[str, Any]]:
    """The scenario of each candidate under ``workload``."""
    scenarios = []
    for candidate, array in candidates:
        if isinstance(workload, WorkloadRequest):
            scenario = build_scenario(array, build_workload(workload, array), seed)
        else:
            scenario = workload.scenario(array, seed)
        if candidate.cache == "wb":
            # Measure a full cache, not the burst it absorbs: warm up with writes
            # worth twice the cache, shared by the workloads that run together.
            cache_bytes = array["controller"]["cache_bytes"]
            if "workload" in scenario:
                scenario["workload"] = _warmed(scenario["workload"], cache_bytes, 1)
            else:
                count = len(scenario["workloads"])
                scenario["workloads"] = [
                    _warmed(w, cache_bytes, count) for w in scenario["workloads"]
                ]
        scenarios.append(scenario)
    return scenarios


def _candidate_row(candidate: Candidate, result: Mapping[str, Any]) -> dict[str, Any]:
    """A candidate's row of the ranking (without the reliability columns)."""
    ops = result["ops"].values()
    explain = result["explain"]
    return {
        "level": candidate.level,
        "stripe_unit_bytes": parse_size(candidate.stripe_unit),
        "write_cache": candidate.cache,
        "usable_bytes": candidate.capacity_bytes,
        "tolerated_failures": candidate.tolerated_failures,
        "iops": sum(op["iops"] for op in ops),
        "mbps": sum(op["mbps"] for op in ops),
        "lat_p99_us": max(op["percentiles_ns"]["99.000000"] for op in ops) / 1e3,
        "bound": explain.get("bound", "resource"),
        "bottleneck": explain["bottleneck"],
        "bottleneck_utilisation": explain["bottleneck_utilisation"],
        "stage_longest": explain.get("stage_longest", ""),
        "_ios": sum(op["ios"] for op in ops),
        "_member_ios": explain["member_ios_per_host_io"],
    }


@dataclass(frozen=True)
class AdviseRequest:
    """What advise ranks and by what, as the user wrote it: ``drives`` x ``drive``
    behind ``controller`` (default: the default controller) and ``scheduler`` (the
    host I/O scheduler every candidate runs behind; default none, a job file's
    ioscheduler= wins); only candidates with ``capacity`` usable bytes that survive
    ``tolerate`` failures are tried, ranked by ``metric`` (iops, mbps, lat_p99_us, or
    risk). Reliability figures come from ``risk`` (a RiskOptions) or the drive preset's,
    each rebuild simulated at ``rebuild_rate`` (default md's speed_limit_max);
    ``max_loss_probability`` drops the candidates above it. ``advise`` parses each
    field, naming ``labels``' flag for its key in errors (as ArrayRequest does)."""

    drive: Any = None
    drives: Any = 1
    controller: Any = None
    scheduler: str | None = None
    capacity: Any = 0
    tolerate: Any = 0
    metric: str = "iops"
    risk: RiskOptions | None = None
    rebuild_rate: Any = None
    max_loss_probability: Any = None
    seed: Any = 1
    labels: Mapping[str, str] = field(default_factory=dict)

    def label(self, key: str) -> str:
        return self.labels.get(key, key)


def _probability(value: Any, label: str) -> float:
    """A probability, 0..=1."""
    try:
        number = float(str(value).strip())
    except ValueError:
        raise RaidlabError(label, f"must be a probability 0..=1, got {value!r}") from None
    if not 0.0 <= number <= 1.0:
        raise RaidlabError(label, f"must be a probability 0..=1, got {value!r}")
    return number


@dataclass(frozen=True)
class _Parsed:
    """An AdviseRequest's fields checked and in the units the steps take."""

    drive: Any
    controller: Any
    scheduler: str | None
    metric: str
    drive_count: int
    capacity_bytes: int
    tolerated: int
    seed: int
    rebuild_rate: Any
    max_loss_probability: float | None
    reliability: tuple[DriveFigures, ResolvedRisk] | None


def _parse_request(request: AdviseRequest) -> _Parsed:
    """The request's fields parsed one by one, each error naming the user's flag; the
    order of the checks is the order the errors are reported in."""
    labels = dict(request.labels)
    label = request.label
    if request.drive is None:
        raise RaidlabError(label("drive"), "give a drive preset (see `raidlab presets`)")
    drive, controller, scheduler, metric = (
        request.drive,
        request.controller,
        request.scheduler,
        request.metric,
    )
    drives = limits.parse_path(request.drives, "array.drive_count", label("drives"))
    if drives < 2:
        # One drive is no array: no level, no stripe unit to choose (ranking "RAID 0"
        # of one drive at three stripe units would compare the same drive three times).
        raise RaidlabError(
            label("drives"),
            f"advise chooses a RAID level and stripe unit of 2 or more drives, got {drives} "
            "(one drive: raidlab run --drives 1)",
        )
    tolerate = parse_int(request.tolerate, label("tolerate"), 0, 255)
    seed = parse_seed(request.seed, label("seed"))
    rebuild_rate = (
        MD_SPEED_LIMIT_MAX_BYTES_PER_S
        if request.rebuild_rate is None
        else parse_rebuild_rate(request.rebuild_rate, label("rebuild_rate"))
    )
    max_loss_probability = None
    if request.max_loss_probability is not None:
        max_loss_probability = _probability(
            request.max_loss_probability, label("max_loss_probability")
        )
    capacity, risk = request.capacity, request.risk
    if scheduler is not None and scheduler not in schedulers():
        raise RaidlabError(
            labels.get("scheduler", "scheduler"),
            f"must be one of {', '.join(schedulers())}, got {scheduler!r}",
        )
    if metric not in METRICS:
        raise RaidlabError(
            labels.get("metric", "metric"), f"must be one of {', '.join(METRICS)}, got {metric!r}"
        )
    asked = metric == "risk" or max_loss_probability is not None
    reliability = _reliability(drive, risk or RiskOptions(labels=labels), asked)
    return _Parsed(
        drive=drive,
        controller=controller,
        scheduler=scheduler,
        metric=metric,
        drive_count=int(drives),
        capacity_bytes=parse_size(capacity, labels.get("capacity", "capacity")) if capacity else 0,
        tolerated=int(tolerate),
        seed=seed,
        rebuild_rate=rebuild_rate,
        max_loss_probability=max_loss_probability,
        reliability=reliability,
    )


def _levels_of(parsed: _Parsed, labels: Mapping[str, str]) -> list[LevelArray]:
    """The array of each level the drive count allows, preset errors named by flag."""
    try:
        return _level_arrays(
            parsed.drive, parsed.controller or DEFAULT_CONTROLLER, parsed.drive_count
        )
    except RaidlabError as error:
        # The presets are first resolved here, by the array builder, which names its own
        # keys (drive, controller): the user gave flags.
        if error.field in ("drive", "controller"):
            raise error.relabel(labels.get(error.field, error.field)) from None
        raise


def _simulated_rows(
    candidates: list[tuple[Candidate, dict[str, Any]]],
    workload: WorkloadRequest | WorkloadSource,
    parsed: _Parsed,
    jobs: int | None,
    progress: bool,
) -> list[dict[str, Any]]:
    """One row per candidate: its simulated figures, and its risk columns from its
    rebuild simulated under the same workload (when the drive has failure figures)."""
    scenarios = _candidate_scenarios(candidates, workload, parsed.seed)
    rebuilds = {}
    reliability, rebuild_rate = parsed.reliability, parsed.rebuild_rate
    if reliability is not None:
        hot_spare = reliability[1].hot_spare
        rebuilds = _rebuild_scenarios(candidates, workload, parsed.seed, rebuild_rate, hot_spare)
    results = run_scenarios(
        [*scenarios, *rebuilds.values()], jobs=jobs, progress=progress, description="candidates"
    )
    rebuild_results = dict(zip(rebuilds, results[len(scenarios) :], strict=True))
    results = results[: len(scenarios)]
    return [
        {
            **_candidate_row(candidate, result),
            **_risk_columns(reliability, array, rebuild_results, candidate, rebuild_rate),
        }
        for (candidate, array), result in zip(candidates, results, strict=True)
    ]


def _ranked(frame: pd.DataFrame, parsed: _Parsed, labels: Mapping[str, str]) -> pd.DataFrame:
    """The rows within the risk bound, best first by the metric, with why the winner won."""
    if parsed.max_loss_probability is not None:
        frame = _within_risk(frame, parsed.max_loss_probability, labels)
    column = METRIC_COLUMNS[parsed.metric]
    frame = frame.sort_values(column, ascending=column in LOWER_IS_BETTER, kind="stable")
    frame.insert(0, "rank", range(1, len(frame) + 1))
    why = _why(frame, column)
    frame = frame[ADVISE_COLUMNS].reset_index(drop=True)
    frame.attrs["why"] = why
    frame.attrs["metric"] = parsed.metric
    if parsed.reliability is not None:
        frame.attrs["mission_years"] = parsed.reliability[1].mission_hours / 8766.0
    return frame


def advise(
    request: AdviseRequest,
    workload: WorkloadRequest | WorkloadSource,
    jobs: int | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Rank the candidate arrays of ``request`` for ``workload`` (fio-style flags as a
    WorkloadRequest, a fio job file as FioJobs, an IOMeter access specification as
    AccessSpecWorkload); columns ADVISE_COLUMNS, best first. ``.attrs["why"]`` explains
    the winner against the runner-up.

    Reliability (docs/reliability.md): each candidate's MTTR (its rebuild simulated
    under the same workload at the request's ``rebuild_rate``), MTTDL with read errors
    and probability of loss over the mission (``p_loss``), from the request's ``risk``
    figures or the drive preset's; NaN where the drive has none and neither
    ``metric="risk"`` nor ``max_loss_probability`` asks for them."""
    import pandas as pd

    parsed = _parse_request(request)
    labels = dict(request.labels)
    levels = _levels_of(parsed, labels)
    _check_constraints(levels, parsed.drive_count, parsed.capacity_bytes, parsed.tolerated, labels)
    candidates = _candidates(levels, parsed.capacity_bytes, parsed.tolerated, parsed.scheduler)
    assert candidates, "write-through is always a candidate of a level that meets the constraints"
    rows = _simulated_rows(candidates, workload, parsed, jobs, progress)
    return _ranked(pd.DataFrame(rows), parsed, labels)


def _reliability(
    drive: Any, options: RiskOptions, asked: bool
) -> tuple[DriveFigures, ResolvedRisk] | None:
    """The drive's failure figures and the risk options, or None where the drive has
    no figures and the ranking does not ask for them."""
    resolved = resolve_options(options)
    preset_name = drive if isinstance(drive, str) else None
    try:
        return drive_figures(preset_name, options), resolved
    except RaidlabError:
        if asked:
            raise
        return None


def _rebuild_key(candidate: Candidate) -> tuple[int, str]:
    return candidate.level, candidate.stripe_unit


def _rebuild_scenarios(
    candidates: list[tuple[Candidate, dict[str, Any]]],
    workload: WorkloadRequest | WorkloadSource,
    seed: int,
    rate: float,
    hot_spare: bool,
) -> dict[tuple[int, str], dict[str, Any]]:
    """One simulated rebuild per level and stripe unit (write-through, the same
    workload): the rebuild's time is the candidate's MTTR less the replacement delay."""
    out: dict[tuple[int, str], dict[str, Any]] = {}
    for candidate, array in candidates:
        key = _rebuild_key(candidate)
        if key in out or candidate.cache != "wt" or group_shape(array).tolerance == 0:
            continue
        degraded = rebuilding_array(array, rate, hot_spare)
        if isinstance(workload, WorkloadRequest):
            # A rebuild's rate settles within a few thousand host I/Os; the ranking's
            # own runs keep their length.
            sample = replace(workload, ios=min(_ios(workload.ios), REBUILD_SAMPLE_IOS))
            out[key] = build_scenario(degraded, build_workload(sample, degraded), seed)
        else:
            out[key] = workload.scenario(degraded, seed)
    return out


REBUILD_SAMPLE_IOS = 5_000


def _ios(value: Any) -> int:
    """A request's I/O count (the runs that use it validate it); the sample when unset."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return REBUILD_SAMPLE_IOS


def _risk_columns(
    reliability: tuple[DriveFigures, ResolvedRisk] | None,
    array: Mapping[str, Any],
    rebuild_results: Mapping[tuple[int, str], Mapping[str, Any]],
    candidate: Candidate,
    rate: float,
) -> dict[str, float]:
    nan = float("nan")
    if reliability is None:
        return {"mttr_hours": nan, "mttdl_with_ure_hours": nan, "p_loss": nan}
    figures, resolved = reliability
    key = _rebuild_key(candidate)
    rebuild = None
    if key in rebuild_results:
        rebuild = rebuild_estimate(rebuild_results[key], rate, "rebuild_rate")
    member = int(array_info(dict(array))["member_used_bytes"])
    document = risk_document(
        group_shape(array), member, figures, rebuild, resolved, monte_carlo=False
    )
    return {
        "mttr_hours": nan if document["mttr_hours"] is None else document["mttr_hours"],
        "mttdl_with_ure_hours": document["mttdl_with_ure_hours"],
        "p_loss": document["p_loss"],
    }


def _within_risk(
    frame: pd.DataFrame, max_loss_probability: float, labels: Mapping[str, str]
) -> pd.DataFrame:
    """The candidates whose probability of loss is at most ``max_loss_probability``."""
    kept = frame[frame["p_loss"] <= max_loss_probability]
    if kept.empty:
        safest = frame.loc[frame["p_loss"].idxmin()]
        raise RaidlabError(
            labels.get("max_loss_probability", "max_loss_probability"),
            f"no candidate loses data with probability at most {max_loss_probability:g}; "
            f"the lowest is {safest['p_loss']:.3g} (RAID {safest['level']})",
        )
    return kept


WARMUP_IOS_MAX = 5_000_000


def _warmed(workload: Mapping[str, Any], cache_bytes: int, sharing: int) -> dict[str, Any]:
    """``workload`` warming up with its share of twice the cache in writes."""
    fill = _fill_ios(workload, cache_bytes) // sharing
    if fill > int(workload.get("warmup_ios") or 0):
        return {**workload, "warmup_ios": fill}
    return dict(workload)


def _fill_ios(workload: Mapping[str, Any], cache_bytes: int) -> int:
    """Host I/Os that write twice ``cache_bytes`` (bounded)."""
    mix = workload.get("bs_write") or workload["bs"]
    mean_bytes = sum(b * w for b, w in mix) / sum(w for _, w in mix)
    read_percent = {"read": 100, "randread": 100, "write": 0, "randwrite": 0}.get(
        workload["rw"], workload["rwmixread"]
    )
    if read_percent >= 100:
        return 0  # nothing is ever dirty: the cache is as full as it will get
    write_share = max(1 - read_percent / 100, 0.01)
    return int(min(WARMUP_IOS_MAX, 2 * cache_bytes / mean_bytes / write_share))


def _metric_text(value: float, metric: str) -> str:
    return f"{value:.3g}" if metric == "p_loss" else f"{value:,.1f}"


def _why(frame: pd.DataFrame, metric: str) -> str:
    best = frame.iloc[0]
    text = (
        f"{_candidate_name(best)} wins on {metric}: {_metric_text(best[metric], metric)}; it is "
        f"{_limit(best)} and costs {_member_cost(best['_member_ios'])}."
    )
    if len(frame) > 1:
        second = frame.iloc[1]
        text += (
            f" The runner-up, {_candidate_name(second)}, reaches "
            f"{_metric_text(second[metric], metric)}, "
            f"{_limit(second)}, at {_member_cost(second['_member_ios'])}."
        )
    return text


def _candidate_name(row: pd.Series) -> str:
    stripe = format_size(int(row["stripe_unit_bytes"]))
    return f"RAID {row['level']} ({stripe}, {_cache_name(row['write_cache'])})"


def _limit(row: pd.Series) -> str:
    busiest = f"{row['bottleneck']} ({100 * row['bottleneck_utilisation']:.0f} %)"
    if row["bound"] == "resource":
        return f"limited by {busiest}"
    return f"latency-bound (longest stage: {row['stage_longest']}; busiest: {busiest})"


def _cache_name(cache: str) -> str:
    return "FastPath" if cache == "fastpath" else f"write cache {cache}"


def _member_cost(member_ios: Mapping[str, float]) -> str:
    parts = [f"{ratio:.2f} member I/Os per host {op}" for op, ratio in sorted(member_ios.items())]
    return ", ".join(parts) if parts else "no member I/O"
