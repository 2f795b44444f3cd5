"""Fit the drive model to fio measurements of one drive (``raidlab calibrate``).

Three steps: read fio's JSON output of the calibration jobs
(:mod:`raidlab.frontends.calibrate_jobs`), start from physical estimates read off the
measurements (a QD 1 read's latency is firmware + tR + transfers; a band of short
seeks spreads its latency over one revolution), then refine a handful of physical
parameters by simulating the same jobs with raidlab's own simulator and searching
(deterministic coordinate search in log space, bounded by ``max_evals``) for the
values whose simulated IOPS are closest to the measured ones: the sum of squared log
ratios over the jobs (for the HDD's short-seek band, also its latency spread).

Parameters the jobs cannot pin down keep an assumed value, and the preset says so.
Every fitted parameter lists the jobs it moves (its simulated IOPS change by more than
``SENSITIVE_PCT`` when the parameter moves by ``SENSITIVITY_STEP``): those are the
measurements it was fitted from.
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.frontends.calibrate_jobs import JOBS, KINDS, check_kind, job_by_name
from raidlab.frontends.fio import ALIASES, OPTIONS, parse_job_text, plan_jobs
from raidlab.scenario.array import ArrayRequest, build_array
from raidlab.scenario.native import simulate

# How many I/Os each job is simulated with during the fit (after its warm-up), and
# the bounds of the search: evaluations of the whole job set.
FIT_IOS_DEFAULT = 3_000
FIT_IOS_MIN = 100
FIT_IOS_MAX = 1_000_000
# A job that did at most this many I/Os is replayed whole, as fio ran it.
REPLAY_IOS_MAX = 30_000
MAX_EVALS_DEFAULT = 300
MAX_EVALS_MIN = 1
MAX_EVALS_MAX = 100_000
# The search stops refining a parameter below this step (log ratio: 1 %).
STEP_MIN = math.log(1.01)
# A parameter "moves" a job when 25 % more or less of it changes the job's simulated
# IOPS by > 1 % (a step, not a slope: some parameters act at thresholds).
SENSITIVITY_STEP = 1.25
SENSITIVE_PCT = 1.0
# The capacity a drive gets when nothing measured it and --capacity is not given.
CAPACITY_ASSUMED = 1_000_000_000_000
# Host of the fit: the default host preset's per-request latency, as `raidlab fio`.
SEED = 1


# --- measurements ---------------------------------------------------------------------


@dataclass(frozen=True)
class MeasuredJob:
    """One calibration job as fio measured it."""

    name: str
    source: str
    direction: str  # "read" or "write"
    iops: float
    lat_mean_ns: float
    spread_ns: float | None  # p90 - p10 of the completion latency
    io_bytes: int
    options: dict[str, str]  # global then job options, as fio reports them


def _not_fio(path: str, why: str) -> RaidlabError:
    return RaidlabError(path, f"not fio's JSON output ({why}); run fio with --output-format=json")


def _load_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RaidlabError(
            str(path), f"cannot read: {getattr(error, 'strerror', None) or error}"
        ) from None
    # fio may print notes before the document when --output is not used.
    start = text.find("{")
    try:
        document = json.loads(text[start:] if start > 0 else text)
    except json.JSONDecodeError as error:
        raise _not_fio(str(path), f"not JSON: {error.msg} at line {error.lineno}") from None
    if not isinstance(document, dict) or not isinstance(document.get("jobs"), list):
        raise _not_fio(str(path), "no 'jobs' list")
    if "fio version" not in document:
        raise _not_fio(str(path), "no 'fio version'")
    return document


def _percentile(stats: Mapping[str, Any], pct: float) -> float | None:
    table = stats.get("percentile") or {}
    for key, value in table.items():
        try:
            if abs(float(key) - pct) < 1e-6:
                return float(value)
        except ValueError:
            continue
    return None


def _measured_job(job: Mapping[str, Any], globals_: Mapping[str, str], path: str) -> MeasuredJob:
    name = str(job.get("jobname", ""))
    where = f"{path}: job {name}"
    if job.get("error"):
        raise RaidlabError(where, f"fio reported error {job['error']}: measure again")
    options = {**{k: str(v) for k, v in globals_.items()}}
    options.update({k: str(v) for k, v in (job.get("job options") or {}).items()})
    rw = options.get("rw", options.get("readwrite", "read"))
    direction = "write" if "write" in rw else "read"
    stats = job.get(direction)
    if not isinstance(stats, Mapping) or "iops" not in stats:
        raise _not_fio(path, f"job {name} has no {direction} figures")
    iops = float(stats["iops"])
    if not iops > 0:
        raise RaidlabError(where, f"measured no {direction} I/O: measure again")
    clat = stats.get("clat_ns") or {}
    p10, p90 = _percentile(clat, 10.0), _percentile(clat, 90.0)
    return MeasuredJob(
        name=name,
        source=path,
        direction=direction,
        iops=iops,
        lat_mean_ns=float(clat.get("mean", 0.0)),
        spread_ns=(p90 - p10) if p10 is not None and p90 is not None else None,
        io_bytes=int(stats.get("io_bytes", 0)),
        options=options,
    )


def read_measurements(paths: Sequence[str | Path], kind: str) -> list[MeasuredJob]:
    """The calibration jobs in fio's JSON files ``paths``; errors name the file: not
    fio's JSON, a job of the other kind, a job that is not a calibration job, or
    calibration jobs missing from all files together."""
    check_kind(kind)
    if not paths:
        raise RaidlabError("FILES", "give fio's JSON output of the calibration jobs")
    known = job_by_name(kind)
    other = next(k for k in KINDS if k != kind)
    found: list[MeasuredJob] = []
    for path in paths:
        document = _load_json(Path(path))
        globals_ = document.get("global options") or {}
        if not document["jobs"]:
            raise RaidlabError(str(path), "holds no jobs")
        for job in document["jobs"]:
            name = str(job.get("jobname", ""))
            if name.startswith(f"{other}-"):
                raise RaidlabError(
                    "--kind",
                    f"{path} holds {other} calibration jobs ({name}), not {kind}: "
                    f"use --kind {other}",
                )
            if name not in known:
                raise RaidlabError(
                    f"{path}: job {name}",
                    f"not a calibration job; measure with the file of "
                    f"`raidlab calibrate --print-jobs --kind {kind}`",
                )
            found.append(_measured_job(job, globals_, str(path)))
    names = {job.name for job in found}
    missing = [job.name for job in JOBS[kind] if job.fitted and job.name not in names]
    if missing:
        raise RaidlabError(
            ", ".join(str(p) for p in paths),
            f"missing jobs {', '.join(missing)}: run the whole file of "
            f"`raidlab calibrate --print-jobs --kind {kind}`",
        )
    return found


# --- the model: fitted parameters, assumed ones -----------------------------------------


@dataclass(frozen=True)
class Param:
    """A fitted parameter: its preset key (``ftl.spare_percent``; ``dies`` is the SSD's
    total, split into channels and dies per channel), bounds, and whether the search
    moves it in log space (ratios) or linear space (``step`` in its unit)."""

    key: str
    low: float
    high: float
    log: bool = True
    step: float = math.log(1.5)
    integer: bool = False


SSD_PARAMS = (
    Param("link_rate_bytes_per_s", 20e6, 16e9),
    Param("command_overhead_ns", 200, 2e6),
    Param("read_page_ns", 1_000, 2e6),
    Param("dies", 1, 512, integer=True),
    Param("channel_rate_bytes_per_s", 20e6, 4e9),
    Param("program_page_ns", 20_000, 50e6),
    Param("link_command_overhead_ns", 0, 200_000, log=False, step=4_000),
    Param("queued_command_latency_ns", 0, 2e6, log=False, step=10_000),
    Param("write_commit_ns", 0, 2e6, log=False, step=10_000),
    Param("write_buffer_bytes", 65_536, 4 << 30),
    Param("ftl.spare_percent", 0.5, 200),
)
HDD_PARAMS = (
    Param("rpm", 3_600, 20_000),
    Param("seek_ns_track_to_track", 50_000, 10e6),
    Param("seek_ns_avg", 500_000, 40e6),
    Param("seek_ns_full_stroke", 1e6, 80e6),
    Param("media_rate_bytes_per_s_outer", 5e6, 1e9),
    Param("media_rate_bytes_per_s_inner", 2e6, 1e9),
    Param("command_overhead_ns", 1_000, 5e6),
    Param("read_ahead_bytes", 4_096, 64 << 20),
    Param("cache_bytes", 1 << 20, 4 << 30),
    # With the write cache off: the write data the buffer holds until on the platter.
    Param("write_buffer_bytes", 65_536, 4 << 30),
)
PARAMS = {"ssd": SSD_PARAMS, "hdd": HDD_PARAMS}
# Channels an SSD's dies are spread over, up to 8 (the usual SATA/SAS controller).
CHANNELS_MAX_ASSUMED = 8

# Assumed figures (not fitted) and why; every key of the written preset has a source.
SSD_ASSUMED: dict[str, tuple[Any, str]] = {
    "page_bytes": (16_384, "assumed: 16 KiB page of MLC/TLC NAND since ~20 nm"),
    "read_buffer": (True, "assumed: DRAM-buffered controller (a die is free once sensed)"),
    "write_merge_unit_bytes": (0, "assumed: no sub-4 KiB writes measured (no read-modify-write)"),
    "ncq_depth": (32, "assumed: SATA NCQ maximum"),
}
SSD_FTL_ASSUMED: dict[str, tuple[Any, str]] = {
    "op_percent": (0.0, "no user over-provisioning; --op sets it"),
    "pages_per_block": (256, "assumed: 4 MiB blocks of 16 KiB pages"),
    "erase_ns": (3_000_000, "assumed: typical block erase time tBERS"),
    "gc_unit_firmware_ns": (
        15_000,
        "assumed: as the Intel DC S3500 presets' (calibrated on their steady-state random "
        "writes); the one steady-state job fits the spare area with it held",
    ),
}
HDD_ASSUMED: dict[str, tuple[Any, str]] = {
    "zones": (16, "assumed: typical zone count (the model interpolates the rate linearly)"),
    "link_rate_bytes_per_s": (550_000_000, "assumed: SATA 6 Gb/s payload"),
    "ncq_depth": (32, "assumed: SATA NCQ maximum"),
}


# Sizes the drive firmware works in (buffers, read-ahead): whole 4 KiB.
BYTES_UNIT = 4_096
# Spindle speeds drives are sold with: a fitted rpm this close to one becomes it when
# that fits as well (within RPM_SNAP_COST).
STANDARD_RPM = (4_200, 5_400, 5_900, 7_200, 10_000, 15_000)
RPM_SNAP_PCT = 3.0
# ... and fits as well: the RMS log error over the jobs grows by less than this.
RPM_SNAP_RMS = 0.005

# A fit is poor above this RMS error over the jobs, %: the simulator standing in for a
# drive fits its own runs within 1-2.3 % (docs/calibrate.md), a file on a virtual disk
# 13-18 %. Jobs off by more than RERUN_JOB_PCT are named to rerun.
POOR_FIT_RMS_PCT = 10.0
RERUN_JOB_PCT = 20.0


def _round_value(key: str, value: float) -> Any:
    if key == "ftl.spare_percent":
        return round(value, 1)
    if key.endswith("_bytes") and not key.endswith("_per_s"):
        return max(BYTES_UNIT, int(round(value / BYTES_UNIT)) * BYTES_UNIT)
    return int(round(value))


def drive_spec(
    kind: str, values: Mapping[str, float], capacity_bytes: int, write_cache: bool
) -> dict[str, Any]:
    """The preset table (``kind`` and every key, ``ftl`` as a subtable) of fitted
    ``values`` and the assumed figures."""
    fitted = {key: _round_value(key, value) for key, value in values.items()}
    if kind == "ssd":
        dies = max(1, int(fitted.pop("dies")))
        channels = min(dies, CHANNELS_MAX_ASSUMED)
        ftl = {"spare_percent": fitted.pop("ftl.spare_percent")}
        ftl.update({key: value for key, (value, _) in SSD_FTL_ASSUMED.items()})
        return {
            "kind": "ssd",
            "capacity_bytes": capacity_bytes,
            **fitted,
            "channels": channels,
            "dies_per_channel": min(64, max(1, round(dies / channels))),
            **{key: value for key, (value, _) in SSD_ASSUMED.items()},
            "ftl": ftl,
        }
    if write_cache:
        del fitted["write_buffer_bytes"]  # only a drive without write cache has one
    return {
        "kind": "hdd",
        "capacity_bytes": capacity_bytes,
        **fitted,
        **{key: value for key, (value, _) in HDD_ASSUMED.items()},
        "write_cache": write_cache,
    }


def _seeks_in_order(values: Mapping[str, float]) -> bool:
    if "seek_ns_avg" not in values:
        return True
    return values["seek_ns_track_to_track"] < values["seek_ns_avg"] < values["seek_ns_full_stroke"]


# --- simulating the jobs ------------------------------------------------------------------


@dataclass
class JobModel:
    """A measured job replayed in the simulator: its workload (from the options fio
    reported) and how many I/Os to simulate."""

    measured: MeasuredJob
    workload: dict[str, Any]
    exact: bool


def _job_text(job: MeasuredJob) -> str:
    lines = ["[global]"]
    for key, value in job.options.items():
        canonical = ALIASES.get(key, key)
        if canonical in OPTIONS and canonical not in ("name", "stonewall", "wait_for"):
            lines.append(f"{key}={value}")
    return "\n".join([*lines, f"[{job.name}]"]) + "\n"


def _array(drive: Mapping[str, Any]) -> dict[str, Any]:
    return build_array(ArrayRequest(drive=dict(drive), labels={"drive": "calibrated drive"}))


def job_models(jobs: Sequence[MeasuredJob], kind: str, array: Mapping[str, Any]) -> list[JobModel]:
    """Each fitted job's workload on ``array`` (whose capacity places ``size=2%``)."""
    catalogue = job_by_name(kind)
    models = []
    for job in jobs:
        entry = catalogue[job.name]
        if not entry.fitted:
            continue
        try:
            plan = plan_jobs(parse_job_text(_job_text(job), f"{job.source}: job {job.name}"), array)
        except RaidlabError as error:
            raise RaidlabError(f"{job.source}: job {job.name}", error.message) from None
        models.append(JobModel(job, dict(plan.jobs[0].workload), entry.exact))
    return models


def _fit_workload(model: JobModel, drive: Mapping[str, Any], fit_ios: int) -> dict[str, Any]:
    """The job as the fit simulates it: as fio ran it (its ramp and runtime) when that
    is at most ``REPLAY_IOS_MAX`` I/Os, so a short job's start (a write buffer filling)
    is measured in both; else ``fit_ios`` I/Os after a warm-up that fills the buffer,
    as a long job's ramp did."""
    workload = dict(model.workload)
    seconds = ((workload.get("runtime_ns") or 0) + workload.get("warmup_ns", 0)) / 1e9
    if model.exact or model.measured.iops * seconds <= REPLAY_IOS_MAX:
        return workload
    block = workload["bs"][0][0]
    warmup = fit_ios // 5
    if model.measured.direction == "write":
        buffer = int(drive.get("write_buffer_bytes") or drive.get("cache_bytes") or 0)
        warmup = max(warmup, min(4 * fit_ios, 2 * buffer // max(1, block)))
    workload.update(
        {"ios": fit_ios + warmup, "warmup_ios": warmup, "runtime_ns": None, "warmup_ns": 0}
    )
    return workload


@dataclass(frozen=True)
class Simulated:
    iops: float
    spread_ns: float | None


def simulate_jobs(
    models: Sequence[JobModel], drive: Mapping[str, Any], fit_ios: int, seed: int = SEED
) -> list[Simulated]:
    """Every job simulated on one ``drive``."""
    array = _array(drive)
    # A job without writes runs without the FTL: the simulator's reads do not consult
    # it, and its steady-state preconditioning is most of a short run's time.
    read_array = array
    if drive.get("ftl"):
        read_array = _array({key: value for key, value in drive.items() if key != "ftl"})
    out = []
    for model in models:
        scenario = {
            "schema": 1,
            "seed": seed,
            "array": array if model.measured.direction == "write" else read_array,
            "workloads": [_fit_workload(model, drive, fit_ios)],
        }
        ops = simulate(scenario)["ops"].get(model.measured.direction, {})
        table = {"percentile": ops.get("percentiles_ns", {})}
        p10, p90 = _percentile(table, 10.0), _percentile(table, 90.0)
        out.append(
            Simulated(
                float(ops.get("iops", 0.0)),
                (p90 - p10) if p10 is not None and p90 is not None else None,
            )
        )
    return out


# Jobs whose latency spread is fitted too (one revolution of the platter).
SPREAD_JOBS = ("hdd-randread-4k-qd1-near",)


def cost(models: Sequence[JobModel], results: Sequence[Simulated]) -> float:
    """Sum of squared log ratios simulated/measured over the jobs."""
    total = 0.0
    for model, result in zip(models, results, strict=True):
        if not result.iops > 0:
            return math.inf
        total += math.log(result.iops / model.measured.iops) ** 2
        measured_spread = model.measured.spread_ns
        if model.measured.name in SPREAD_JOBS and measured_spread and result.spread_ns:
            total += math.log(result.spread_ns / measured_spread) ** 2
    return total


# --- first estimates from the physics -----------------------------------------------------

HOST_NS = 8_000  # the default host preset's per-request latency (presets/hosts.toml)


def _by_name(jobs: Sequence[MeasuredJob]) -> dict[str, MeasuredJob]:
    out: dict[str, MeasuredJob] = {}
    for job in jobs:
        out.setdefault(job.name, job)
    return out


def _bandwidth(job: MeasuredJob, block: int) -> float:
    return job.iops * block


def _clamp(param: Param, value: float) -> float:
    return min(param.high, max(param.low, value))


def initial_ssd(jobs: Sequence[MeasuredJob]) -> dict[str, float]:
    by = _by_name(jobs)
    link = 1.02 * max(
        _bandwidth(by["ssd-read-128k-qd32"], 128 << 10), _bandwidth(by["ssd-read-1m-qd8"], 1 << 20)
    )
    iops32 = by["ssd-randread-4k-qd32"].iops
    command = min(50_000.0, 0.8e9 / iops32)
    latency = 1e9 / by["ssd-randread-4k-qd1"].iops
    read_page = max(3_000.0, latency - HOST_NS - command - 4096 / link * 1e9 - 4096 / 400e6 * 1e9)
    dies = max(1.0, round(1.3 * iops32 * read_page / 1e9))
    write_rate = _bandwidth(by["ssd-write-128k-qd32"], 128 << 10)
    return {
        "link_rate_bytes_per_s": link,
        "command_overhead_ns": command,
        "read_page_ns": read_page,
        "dies": dies,
        "channel_rate_bytes_per_s": 400e6,
        "program_page_ns": dies * 16_384 / write_rate * 1e9,
        "link_command_overhead_ns": 0.0,
        "queued_command_latency_ns": 0.0,
        "write_commit_ns": 0.0,
        "write_buffer_bytes": float(16 << 20),
        "ftl.spare_percent": 15.0,
    }


def initial_hdd(jobs: Sequence[MeasuredJob]) -> dict[str, float]:
    by = _by_name(jobs)
    near = by["hdd-randread-4k-qd1-near"]
    # The rotational wait is uniform over one revolution: p90 - p10 is 0.8 of it.
    revolution = (near.spread_ns or 8.3e6 * 0.8) / 0.8
    rpm = 60e9 / revolution
    overhead = max(5_000.0, 1e9 / by["hdd-read-4k-qd1"].iops - HOST_NS - 4096 / 550e6 * 1e9)
    base = overhead + revolution / 2
    near_seek = max(100_000.0, 1e9 / near.iops - base)
    avg = max(1e6, 1e9 / by["hdd-randread-4k-qd1"].iops - base)
    ends = 1e9 / by["hdd-randread-4k-qd1-ends"].iops - base
    full = max(1.5 * avg, 2 * ends - near_seek)
    outer = 1.05 * _bandwidth(by["hdd-read-1m-outer"], 1 << 20)
    inner = 1.05 * _bandwidth(by["hdd-read-1m-inner"], 1 << 20)
    return {
        "rpm": rpm,
        "seek_ns_track_to_track": min(0.6 * near_seek, 0.5 * avg),
        "seek_ns_avg": avg,
        "seek_ns_full_stroke": full,
        "media_rate_bytes_per_s_outer": outer,
        "media_rate_bytes_per_s_inner": min(inner, outer),
        "command_overhead_ns": overhead,
        "read_ahead_bytes": float(1 << 20),
        "cache_bytes": float(16 << 20),
        "write_buffer_bytes": float(2 << 20),
    }


# --- the search ------------------------------------------------------------------------------


@dataclass
class Search:
    """A deterministic coordinate search: each parameter in turn moves up or down by its
    step (a ratio in log space), keeps a move that lowers the cost and repeats it while
    it does; a step that helps in neither direction halves."""

    evaluate: Callable[[dict[str, float]], float]
    params: Sequence[Param]
    max_evals: int
    on_eval: Callable[[int, float], None] = lambda count, best: None
    evals: int = 0

    def _cost(self, values: dict[str, float]) -> float:
        self.evals += 1
        value = self.evaluate(values)
        return value

    def _moved(
        self, values: dict[str, float], param: Param, step: float, sign: int
    ) -> dict[str, float] | None:
        current = values[param.key]
        if param.log:
            target = current * math.exp(sign * step)
        else:
            target = current + sign * step
        target = min(param.high, max(param.low, target))
        if param.integer:
            target = float(round(target))
            if target == round(current):
                target = float(round(current) + sign)
                target = min(param.high, max(param.low, target))
        if target == current:
            return None
        return {**values, param.key: target}

    def run(self, start: dict[str, float]) -> tuple[dict[str, float], float]:
        best = dict(start)
        best_cost = self._cost(best)
        self.on_eval(self.evals, best_cost)
        steps = {param.key: param.step for param in self.params}
        while self.evals < self.max_evals:
            improved = False
            for param in self.params:
                if self._small(param, steps[param.key], best) or self.evals >= self.max_evals:
                    continue
                moved = False
                for sign in (1, -1):
                    trial = self._moved(best, param, steps[param.key], sign)
                    while trial is not None and self.evals < self.max_evals:
                        trial_cost = self._cost(trial)
                        self.on_eval(self.evals, min(best_cost, trial_cost))
                        if not trial_cost < best_cost:
                            break
                        best, best_cost, moved = trial, trial_cost, True
                        trial = self._moved(best, param, steps[param.key], sign)
                    if moved:
                        break
                if moved:
                    improved = True
                else:
                    steps[param.key] /= 2
            if not improved and all(
                self._small(param, steps[param.key], best) for param in self.params
            ):
                break
        return best, best_cost

    @staticmethod
    def _small(param: Param, step: float, values: Mapping[str, float]) -> bool:
        if param.log:
            return step < STEP_MIN
        return step < max(1.0, 0.01 * abs(values[param.key]), 0.001 * param.step)


# --- the result ------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobFit:
    """One job: measured and simulated IOPS with the fitted drive, and the error."""

    name: str
    source: str
    direction: str
    measured_iops: float
    simulated_iops: float

    @property
    def error_pct(self) -> float:
        return (self.simulated_iops / self.measured_iops - 1) * 100


@dataclass
class Calibration:
    """A fitted drive: its preset ``table`` (``ftl`` a subtable), the source of every
    key, and the fit error per job."""

    name: str
    kind: str
    table: dict[str, Any]
    sources: dict[str, str]
    jobs: list[JobFit]
    evaluations: int
    files: list[str]
    notes: list[str] = field(default_factory=list)

    @property
    def rms_error_pct(self) -> float:
        if not self.jobs:
            return 0.0
        return math.sqrt(sum(job.error_pct**2 for job in self.jobs) / len(self.jobs))

    @property
    def worst(self) -> JobFit:
        return max(self.jobs, key=lambda job: abs(job.error_pct))

    def poor_fit(self) -> str | None:
        """What to say when the fit is poor (its RMS error above ``POOR_FIT_RMS_PCT``):
        how poor, and which jobs to rerun (those off by more than ``RERUN_JOB_PCT``);
        None for a fit to trust."""
        if not self.jobs or self.rms_error_pct <= POOR_FIT_RMS_PCT:
            return None
        off = sorted(
            (job for job in self.jobs if abs(job.error_pct) > RERUN_JOB_PCT),
            key=lambda job: -abs(job.error_pct),
        )
        rerun = ", ".join(f"{job.name} ({job.error_pct:+.0f} %)" for job in off) or "none"
        return (
            f"the fit is poor: RMS error {self.rms_error_pct:.1f} % over {len(self.jobs)} "
            f"jobs (a drive the model describes fits within {POOR_FIT_RMS_PCT:g} %); rerun "
            f"the jobs off by more than {RERUN_JOB_PCT:g} %, alone on an idle drive: {rerun}. "
            "If they stay off, the drive does not behave as the model of its --kind "
            "(a file system, a cache in front of it, a TLC burst cache), and the preset "
            "predicts only what the fitted jobs measured"
        )


def _capacity(jobs: Sequence[MeasuredJob], capacity: int | None) -> tuple[int, str]:
    if capacity is not None:
        return capacity, "given: --capacity"
    fill = _by_name(jobs).get("ssd-precondition")
    if fill is not None:
        size = fill.options.get("size", "100%")
        whole = size.strip() == "100%" and "io_size" not in fill.options
        if whole and fill.io_bytes > 0:
            return fill.io_bytes, f"measured: {fill.source}, job ssd-precondition wrote it whole"
    return CAPACITY_ASSUMED, (
        "assumed: nothing measured it (give --capacity); the jobs' regions are shares of it"
    )


def _sensitive_jobs(
    models: Sequence[JobModel],
    values: Mapping[str, float],
    base: Sequence[Simulated],
    param: Param,
    run: Callable[[dict[str, float]], list[Simulated] | None],
) -> tuple[list[str], int]:
    """The jobs whose simulated IOPS move by more than ``SENSITIVE_PCT`` when
    ``param`` moves by ``SENSITIVITY_STEP`` either way, and the simulations it took."""
    current = values[param.key]
    if param.log or current:
        targets = [current * SENSITIVITY_STEP, current / SENSITIVITY_STEP]
    else:
        targets = [param.step]
    if param.integer:
        targets = [current + 1, max(param.low, current - 1)]
    names: list[str] = []
    runs = 0
    for target in targets:
        trial = {**values, param.key: min(param.high, max(param.low, target))}
        results = None
        if trial[param.key] != current:
            results = run(trial)
            runs += 1
        for model, before, after in zip(models, base, results or [], strict=False):
            if before.iops > 0 and abs(after.iops / before.iops - 1) * 100 > SENSITIVE_PCT:
                if model.measured.name not in names:
                    names.append(model.measured.name)
    order = [model.measured.name for model in models]
    return sorted(names, key=order.index), runs


def calibrate(
    jobs: Sequence[MeasuredJob],
    kind: str,
    name: str,
    capacity: int | None = None,
    max_evals: int = MAX_EVALS_DEFAULT,
    fit_ios: int = FIT_IOS_DEFAULT,
    on_eval: Callable[[int, float], None] = lambda count, best: None,
) -> Calibration:
    """Fit the ``kind`` drive model to the measured ``jobs``."""
    # One body for the fit's steps (write-cache choice, search, rpm snap, sensitivity):
    # they share the job models, the running evaluation count and the run/evaluate
    # closures over them; split, each would take all of them as arguments.
    check_kind(kind)
    capacity_bytes, capacity_source = _capacity(jobs, capacity)
    start = initial_ssd(jobs) if kind == "ssd" else initial_hdd(jobs)
    params = PARAMS[kind]
    start = {param.key: _clamp(param, start[param.key]) for param in params}
    models = job_models(jobs, kind, _array(drive_spec(kind, start, capacity_bytes, True)))

    def run(values: dict[str, float], write_cache: bool) -> list[Simulated] | None:
        if not _seeks_in_order(values):
            return None
        try:
            return simulate_jobs(
                models, drive_spec(kind, values, capacity_bytes, write_cache), fit_ios
            )
        except RaidlabError:
            return None  # a drive the simulator refuses is not a candidate

    def evaluate_with(write_cache: bool) -> Callable[[dict[str, float]], float]:
        def evaluate(values: dict[str, float]) -> float:
            results = run(values, write_cache)
            return math.inf if results is None else cost(models, results)

        return evaluate

    write_cache = True
    evals = 0
    if kind == "hdd":
        # The write cache is on or off: the setting that fits the writes better.
        costs = {setting: evaluate_with(setting)(start) for setting in (True, False)}
        evals += 2
        write_cache = costs[True] <= costs[False]
    if kind == "hdd" and write_cache:
        # A drive with its write cache on holds no separate write buffer (the model's).
        params = tuple(param for param in params if param.key != "write_buffer_bytes")
    search = Search(
        evaluate_with(write_cache),
        params,
        max(1, max_evals - evals),
        on_eval=lambda count, best: on_eval(count + evals, best),
    )
    best, best_cost = search.run(start)
    evals += search.evals
    notes = []
    if kind == "hdd":
        snapped = _snapped_rpm(best, best_cost, evaluate_with(write_cache), len(models))
        evals += 1
        if snapped is not None:
            notes.append(f"rpm fitted {best['rpm']:,.0f}, the standard {snapped:,} fits as well")
            best = {**best, "rpm": float(snapped)}
    results = run(best, write_cache) or []
    evals += 1
    fitted_from: dict[str, list[str]] = {}
    for param in params:
        fitted_from[param.key], runs = _sensitive_jobs(
            models, best, results, param, lambda values: run(values, write_cache)
        )
        evals += runs
    table = drive_spec(kind, best, capacity_bytes, write_cache)
    files = list(dict.fromkeys(job.source for job in jobs))
    sources = _sources(kind, fitted_from, capacity_source, files, write_cache)
    fits = [
        JobFit(
            model.measured.name,
            model.measured.source,
            model.measured.direction,
            model.measured.iops,
            result.iops,
        )
        for model, result in zip(models, results, strict=True)
    ]
    if notes:
        sources["rpm"] += f" ({notes[0]})"
    return Calibration(name, kind, table, sources, fits, evals, files)


def _snapped_rpm(
    values: Mapping[str, float],
    best_cost: float,
    evaluate: Callable[[dict[str, float]], float],
    terms: int,
) -> int | None:
    """The standard spindle speed near the fitted one, if it fits as well."""
    rpm = values["rpm"]
    near = min(STANDARD_RPM, key=lambda standard: abs(standard - rpm))
    if near == round(rpm) or abs(near / rpm - 1) * 100 > RPM_SNAP_PCT:
        return None
    cost_near = evaluate({**values, "rpm": float(near)})
    rms_near = math.sqrt(cost_near / max(1, terms))
    return near if rms_near <= math.sqrt(best_cost / max(1, terms)) + RPM_SNAP_RMS else None


def _sources(
    kind: str,
    fitted_from: Mapping[str, list[str]],
    capacity_source: str,
    files: Sequence[str],
    write_cache: bool,
) -> dict[str, str]:
    names = ", ".join(Path(f).name for f in files)
    sources = {"capacity_bytes": capacity_source}
    for key, jobs in fitted_from.items():
        if jobs:
            sources[key] = f"fitted from {names}, jobs {', '.join(jobs)}"
        else:
            sources[key] = (
                f"fitted from {names}: no job moves it by more than {SENSITIVE_PCT:g} % "
                "(the starting estimate or a value the jobs cannot tell apart)"
            )
    if kind == "ssd":
        dies = sources.pop("dies")
        sources["channels"] = (
            f"{dies}; the fitted die count over up to {CHANNELS_MAX_ASSUMED} channels (assumed)"
        )
        sources["dies_per_channel"] = "fitted die count / channels"
        sources.update({key: why for key, (_, why) in SSD_ASSUMED.items()})
        sources.update({f"ftl.{key}": why for key, (_, why) in SSD_FTL_ASSUMED.items()})
    else:
        sources.update({key: why for key, (_, why) in HDD_ASSUMED.items()})
        sources["write_cache"] = (
            f"fitted from {names}: the setting ({'on' if write_cache else 'off'}) whose "
            "simulated writes fit better"
        )
    return sources


# --- the preset TOML --------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:_}"
    if isinstance(value, float):
        return repr(value)
    return json.dumps(value)


def _line(key: str, value: Any, source: str) -> str:
    return f"{f'{key} = {_toml_value(value)}':<44}# {source}"


def preset_toml(result: Calibration, command: str = "raidlab calibrate") -> str:
    """The fitted drive as a preset TOML file (as drives.toml holds presets): every
    key with its source in a trailing comment, the fit error per job in the header."""
    names = ", ".join(Path(f).name for f in result.files)
    lines = [
        f"# Drive preset fitted by `{command}` from {names} (fio's JSON output of the",
        f"# jobs of `raidlab calibrate --print-jobs --kind {result.kind}`). Use it as",
        f"# --drive {result.name}.toml, or copy the tables into an array file's [array.drive].",
        "# Fit error per job (simulated IOPS / measured - 1), "
        f"{result.evaluations} simulations of the job set:",
    ]
    width = max(len(job.name) for job in result.jobs) if result.jobs else 10
    for job in result.jobs:
        lines.append(
            f"#   {job.name:<{width}}  {job.direction:<5}  measured {job.measured_iops:>12,.1f}"
            f"  simulated {job.simulated_iops:>12,.1f}  {job.error_pct:+6.1f} %"
        )
    if result.jobs:
        lines.append(
            f"# RMS error {result.rms_error_pct:.1f} %, worst {result.worst.name} "
            f"{result.worst.error_pct:+.1f} %."
        )
    lines += [f"# {note}" for note in result.notes]
    poor = result.poor_fit()
    if poor is not None:
        lines += textwrap.wrap(f"WARNING: {poor}.", 86, initial_indent="# ", subsequent_indent="# ")
    lines += ["", f"[{result.name}]"]
    table = dict(result.table)
    ftl = table.pop("ftl", None)
    lines.append(f"kind = {_toml_value(table.pop('kind'))}")
    description = f"{result.name}, calibrated from {names} by raidlab calibrate"
    lines.append(f"description = {_toml_value(description)}")
    for key, value in table.items():
        lines.append(_line(key, value, result.sources.get(key, "")))
    if ftl is not None:
        lines += ["", f"[{result.name}.ftl]"]
        for key, value in ftl.items():
            lines.append(_line(key, value, result.sources.get(f"ftl.{key}", "")))
    return "\n".join(lines) + "\n"
