"""The Python API, the front door every command goes through: ATTO sweeps, fio-style
runs, fio job files, CrystalDiskMark, IOMeter, SNIA PTS, trace replay, advise, study
reproduction and presets.

Every function validates its input into a scenario first (errors are RaidlabError
naming the argument) and only then simulates. Array arguments left as None take the
array TOML file's value when ``config`` is given, else the defaults: RAID 0 of one
drive, stripe unit 64K, controller ``hba``, host preset ``default``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raidlab.errors import RaidlabError
from raidlab.frontends.atto import (
    DEFAULT_LENGTH,
    DEFAULT_QUEUE_DEPTHS,
    DEFAULT_SIZES,
    IOS_MAX_DEFAULT,
    atto_frame,
    atto_points,
    parse_ios_max,
    parse_queue_depths,
)
from raidlab.report.explain import explain_lines, rebuild_lines
from raidlab.report.output import output_directory
from raidlab.scenario import limits
from raidlab.scenario.array import (
    REQUEST_KEYS,
    ArrayRequest,
    build_array,
    build_scenario,
    load_array_file,
    parse_int,
    parse_seed,
)
from raidlab.scenario.executor import run_scenarios
from raidlab.scenario.native import simulate
from raidlab.scenario.presets import (
    drive_file_parameters,
    group_names,
    groups_of,
    is_drive_file,
    preset,
    preset_names,
    preset_parameters,
    preset_table_notes,
    unknown_name_message,
)
from raidlab.scenario.tuning import Tuning, tune_array
from raidlab.scenario.workloads import (
    DEFAULT_IOS,
    RunRows,
    WorkloadRequest,
    build_workload,
    run_frame,
    run_rows,
)
from raidlab.studies.wear import annotate_wear
from raidlab.units import format_size, parse_sizes

# pandas loads where a frame is built, not with the module, and so do the fio and
# benchmark-suite front ends where their function is called: `raidlab run` starts
# without them (docs/benchmarks.md, start-up).
if TYPE_CHECKING:
    from concurrent.futures import Executor

    import pandas as pd

    from raidlab.frontends.fio import FioPlan
    from raidlab.studies.advise import AdviseRequest


def resolve_array(
    config: str | Path | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    **values: Any,
) -> dict[str, Any]:
    """The scenario's ``array``: the TOML file ``config`` (if any) with ``values``
    overriding it, by the keys of ``raidlab.scenario.array.ArrayRequest`` (None leaves
    the file's or the default). ``labels`` renames keys in errors (the CLI's flags).

    RAID levels: ``level`` 0, 1, 4, 5, 6, 10, 50, 60 or ``"concat"``; ``drives``,
    ``stripe_unit``, ``drive``, ``controller``, ``host``; ``layout`` (RAID 5/6/50/60
    parity layouts, RAID 10 near/far/offset), ``copies`` (RAID 10), ``spans`` (RAID
    50/60), ``failed`` (member indices, ``"1,3"`` or a list) and ``rebuild_rate``
    (bytes/s, ``"50M"``: rebuilds the lowest-index failed member); ``spares`` (hot
    spares) and ``fail_at`` (with a spare: the rebuilt member fails this far into the
    run, ``"2ms"``, and the spare's rebuild starts at once); ``rebuild_rate_min``
    (bytes/s: the rebuild's minimum under load, overriding the controller's)."""
    request = load_array_file(config) if config is not None else ArrayRequest()
    return build_array(request.overridden(values, dict(labels or {})))


def atto_sweep(
    array: Mapping[str, Any],
    qd: Any = DEFAULT_QUEUE_DEPTHS,
    sizes: Any = DEFAULT_SIZES,
    length: Any = DEFAULT_LENGTH,
    ios_max: int = IOS_MAX_DEFAULT,
    seed: Any = 1,
    jobs: int | None = None,
    executor: Executor | None = None,
    progress: bool = True,
    labels: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """ATTO sweep of an already-built ``array`` (see ``atto``)."""
    labels = dict(labels or {})
    queue_depths = parse_queue_depths(qd, labels.get("qd", "qd"))
    size_list = (
        parse_sizes(sizes, labels.get("sizes", "sizes")) if isinstance(sizes, str) else list(sizes)
    )
    seed = parse_seed(seed, labels.get("seed", "seed"))
    points = atto_points(array, queue_depths, size_list, length, ios_max, seed, labels)
    results = run_scenarios(
        [point.scenario for point in points],
        jobs=jobs,
        executor=executor,
        progress=progress,
        description="ATTO sweep",
    )
    frame = atto_frame(points, results)
    frame.attrs["explain"] = [
        {
            "op": point.op,
            "qd": point.qd,
            "block_bytes": point.block_bytes,
            "explain": result.get("explain"),
        }
        for point, result in zip(points, results, strict=True)
    ]
    frame.attrs["array"] = dict(array)
    frame.attrs["seed"] = seed
    return frame


def _split(keywords: Mapping[str, Any]) -> tuple[dict[str, Any], Tuning, dict[str, Any]]:
    """The convenience keywords of ``atto`` and ``run`` by the request they belong to,
    by those requests' own fields: the array's (``ArrayRequest``), the tuning knobs
    (``Tuning``) and the rest (the caller's)."""
    tuning_keys = {f.name for f in fields(Tuning)} - {"labels"}
    array = {key: value for key, value in keywords.items() if key in REQUEST_KEYS}
    tuning = {key: value for key, value in keywords.items() if key in tuning_keys}
    rest = {key: value for key, value in keywords.items() if key not in {*array, *tuning}}
    return array, Tuning(**tuning), rest


def atto(
    config: str | Path | None = None,
    *,
    qd: Any = DEFAULT_QUEUE_DEPTHS,
    sizes: Any = DEFAULT_SIZES,
    length: Any = DEFAULT_LENGTH,
    seed: Any = 1,
    jobs: int | None = None,
    ios_max: int = IOS_MAX_DEFAULT,
    executor: Executor | None = None,
    progress: bool = True,
    **keywords: Any,
) -> pd.DataFrame:
    """ATTO Disk Benchmark sweep: write then read passes over a ``length`` test file at
    every queue depth and transfer size. The other keywords are the array's (as
    ``resolve_array`` takes them) and the tuning knobs of
    ``raidlab.scenario.tuning.Tuning`` (the CLI's ``--fastpath``, ``--write-cache``,
    ``--read-ahead``, ``--op``, ``--precondition``, ...).

    Returns columns ``op, qd, block_bytes, mbps, iops, lat_mean_us, lat_p99_us``, sorted
    by op, qd and size; ``.attrs["explain"]`` holds each point's explain dict.

    >>> raidlab.atto(drive="adata-sp900-128g", controller="intel-h97-rst", drives=2,
    ...              stripe_unit="16K", qd=[1, 4], sizes="512..8M")  # doctest: +SKIP
    """
    array_values, tuning, rest = _split(keywords)
    if rest:
        raise TypeError(f"atto() got unexpected keyword arguments: {', '.join(rest)}")
    array = tune_array(resolve_array(config, **array_values), tuning)
    return atto_sweep(
        array,
        qd=qd,
        sizes=sizes,
        length=length,
        ios_max=ios_max,
        seed=seed,
        jobs=jobs,
        executor=executor,
        progress=progress,
    )


def run_workload(
    array: Mapping[str, Any], workload: WorkloadRequest, seed: Any = 1, seed_label: str = "seed"
) -> pd.DataFrame:
    """One fio-style run of an already-built ``array`` (see ``run``). With a rebuild, the
    same scenario also runs without it, so the rebuild's cost to the workload is known:
    ``rebuild["foreground_slowdown_pct"]`` (IOPS lost, all directions together)."""
    return run_workload_rows(array, workload, seed, seed_label).frame()


def run_workload_rows(
    array: Mapping[str, Any], workload: WorkloadRequest, seed: Any = 1, seed_label: str = "seed"
) -> RunRows:
    """``run_workload`` as plain rows and attrs, without pandas (the command line's
    table needs no DataFrame)."""
    scenario = build_scenario(array, build_workload(workload, array), parse_seed(seed, seed_label))
    scenarios = [scenario]
    if "rebuild" in scenario["array"]:
        quiet = {
            **scenario,
            "array": {k: v for k, v in scenario["array"].items() if k != "rebuild"},
        }
        scenarios.append(quiet)
    results, *baseline = run_scenarios(scenarios, jobs=1, progress=False)
    if baseline and results.get("rebuild"):
        with_rebuild = sum(op["iops"] for op in results["ops"].values())
        without = sum(op["iops"] for op in baseline[0]["ops"].values())
        results["rebuild"]["foreground_slowdown_pct"] = 100.0 * (1.0 - with_rebuild / without)
    annotate_wear(
        results.get("explain"),
        array["drive"],
        int(results["ops"].get("write", {}).get("bytes", 0)),
    )
    return RunRows(
        run_rows(results),
        {
            "explain": results.get("explain"),
            "scenario": scenario,
            "seed": scenario["seed"],
            "sim_time_ns": results.get("sim_time_ns"),
            "rebuild": results.get("rebuild"),
        },
    )


def run_scenario(scenario: Mapping[str, Any], label: str = "scenario") -> dict[str, Any]:
    """A whole scenario document simulated as ``run`` simulates it: what ``run
    --format json`` writes as its ``scenario`` (and the report's "Repeat it" saves).
    Returns ``run --format json``'s document: records, seed, explain and the scenario.
    A scenario the simulator refuses is one error naming ``label`` and the field."""
    try:
        results = simulate(dict(scenario))
    except RaidlabError as error:
        raise RaidlabError(label, f"{error.field}: {error.message}") from None
    return {
        "records": run_rows(results),
        "seed": scenario.get("seed"),
        "explain": results.get("explain"),
        "scenario": dict(scenario),
    }


def run(
    config: str | Path | None = None,
    *,
    workload: WorkloadRequest | None = None,
    seed: Any = 1,
    explain: bool = False,
    **keywords: Any,
) -> pd.DataFrame:
    """A fio-style run of ``workload`` (a ``WorkloadRequest``). The other keywords are
    the array's (as ``resolve_array`` takes them), the tuning knobs of
    ``raidlab.scenario.tuning.Tuning`` (the CLI's ``--fastpath``, ``--write-cache``,
    ``--read-ahead``, ``--op``, ``--precondition``, ...; docs/predict.md: a study's
    method) and, without ``workload``, the fields of ``WorkloadRequest`` (``rw``,
    ``bs``: a size or a mix ``"4K:55,64K:25,128K:20"``, ``iodepth``, ``numjobs``,
    ``rwmixread``, ``ios``, ``size``, ``offset``, ``warmup_ios``, ``runtime_ns``;
    ``rw`` defaults to randread).

    Returns one row per direction that did I/O, columns
    ``op, iops, mbps, lat_mean_us, lat_p50_us, lat_p99_us``. The explain dict (resource
    utilisation, bottleneck, member I/O per host I/O) is always in
    ``.attrs["explain"]``; ``explain=True`` also adds it as ``.attrs["explain_text"]``.

    >>> raidlab.run(drive="intel-dc-s3500-80g", rw="randread", bs="4K",
    ...             iodepth=32)  # doctest: +SKIP
    """
    array_values, tuning, rest = _split(keywords)
    if workload is None:
        workload = WorkloadRequest(**{"rw": "randread", **rest})
    elif rest:
        raise TypeError(f"run() got workload= and workload keywords: {', '.join(rest)}")
    array = tune_array(resolve_array(config, **array_values), tuning)
    frame = run_workload(array, workload, seed)
    if explain:
        frame.attrs["explain_text"] = explain_lines(
            frame.attrs.get("explain"), frame.attrs.get("rebuild")
        )
    return frame


# --- benchmark front ends: fio, CrystalDiskMark, IOMeter, SNIA PTS, trace replay ------

FIO_OUTPUT_FORMATS = ("normal", "json", "json+", "terse")


def __getattr__(name: str) -> Any:
    # The suites' defaults, read from their module when asked for (it loads lazily).
    if name == "PTS_ROUNDS_MAX":
        from raidlab.frontends import suites

        return suites.PTS_ROUNDS_MAX
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class FioRun:
    """A simulated fio run: fio's JSON ``document`` (fio's schema, ``json+`` adds the
    latency bins), the ``plan`` it came from, and the plan's notes (options with no
    effect in a simulation, approximations)."""

    document: dict[str, Any]
    plan: FioPlan
    notes: list[str]

    def text(self) -> str:
        """fio's normal text output of this run."""
        from raidlab.frontends.fio_report import fio_text

        return fio_text(self.document, self.plan)

    def terse(self, version: int = 3) -> str:
        """fio's terse (``--minimal``) lines of this run, terse ``version`` 2 to 5."""
        from raidlab.frontends.fio_terse import check_terse_version, fio_terse

        return fio_terse(self.document, check_terse_version(version, "version"))


def fio(
    array: Mapping[str, Any],
    job_files: Sequence[str | Path] = (),
    options: Sequence[str] = (),
    seed: Any = 1,
    jobs: int | None = None,
    plus: bool = False,
    executor: Executor | None = None,
    progress: bool = True,
    labels: Mapping[str, str] | None = None,
    sections: Sequence[str] = (),
    log_dir: str | Path = ".",
) -> FioRun:
    """fio job files and/or fio's command-line job form (``["--name=a", "--rw=read"]``)
    simulated on ``array`` (from ``resolve_array``); stonewall groups run one after
    another. A job's ``randseed=`` overrides ``seed``. ``sections`` is fio's
    ``--section``: only the named jobs run. Jobs' ``write_*_log`` files go to
    ``log_dir``, as fio writes them to its working directory."""
    from raidlab.frontends.fio import (
        parse_command_line,
        parse_job_files,
        plan_jobs,
        select_sections,
    )
    from raidlab.frontends.fio_logs import write_logs
    from raidlab.frontends.fio_report import fio_json

    labels = dict(labels or {})
    job_file = parse_job_files(job_files)
    parse_command_line(options, job_file)
    section_notes = select_sections(job_file, sections)
    plan = plan_jobs(job_file, array)
    notes = [*section_notes, *plan.notes]
    if plan.ignored:
        notes.insert(0, f"ignored (no effect in a simulation): {', '.join(plan.ignored)}")
    seed_value = parse_seed(seed, labels.get("seed", "seed"))
    results = run_scenarios(
        plan.scenarios(array, seed_value),
        jobs=jobs,
        executor=executor,
        progress=progress,
        description="fio groups",
    )
    document = fio_json(plan, results, array, seed_value, plus=plus)
    # fio writes its write_*_log files into the working directory as the job runs.
    notes += write_logs(plan, results, document, Path(log_dir))
    return FioRun(document, plan, notes)


def cdm(
    array: Mapping[str, Any],
    profile: str = "default",
    size: Any = "1G",
    ios: Any = DEFAULT_IOS,
    seed: Any = 1,
    jobs: int | None = None,
    labels: Mapping[str, str] | None = None,
    runs: Any = None,
    mix: Any = None,
) -> pd.DataFrame:
    """CrystalDiskMark's tests of ``profile`` (``default``, ``nvme``, ``peak``,
    ``peak-nvme`` or ``real``) on ``array``: one row per test and direction (``test, op,
    mbps, iops, lat_mean_us, lat_p99_us``), the best of ``runs`` seeds (default
    ``suites.CDM_DEFAULT_RUNS``, CrystalDiskMark's); ``mix`` (a read %) adds CDM's
    Mix rows (``op`` = ``mix``)."""
    from raidlab.frontends import suites

    labels = dict(labels or {})
    seed_value = parse_seed(seed, labels.get("seed", "seed"))
    runs = suites.CDM_DEFAULT_RUNS if runs is None else runs
    return suites.cdm(array, profile, size, ios, seed_value, jobs, labels, runs, mix)


def iometer(
    array: Mapping[str, Any],
    spec: str,
    ios: Any = DEFAULT_IOS,
    size: Any = None,
    seed: Any = 1,
    labels: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """An IOMeter access specification (``desktop``, ``database``, ``fileserver`` or
    ``"bs=4K/100;read=70;random=100;workers=2;qd=8"``) on ``array``: rows per direction
    and ``total``."""
    from raidlab.frontends import suites

    labels = dict(labels or {})
    seed_value = parse_seed(seed, labels.get("seed", "seed"))
    return suites.iometer(array, spec, ios, size, seed_value, labels)


def pts(
    array: Mapping[str, Any],
    test: str = "iops",
    mixes: Sequence[str] | str | None = None,
    sizes: Sequence[str] | str | None = None,
    ios: Any = 5000,
    iodepth: Any = 32,
    numjobs: Any = 1,
    rounds_max: Any = None,
    seed: Any = 1,
    jobs: int | None = None,
    labels: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """A SNIA PTS-style test (``iops``, ``tp`` or ``lat``): rounds of the mix x size
    matrix until steady state. Every (round, mix, size) row; ``.attrs["summary"]`` is
    the steady-state summary, ``.attrs["table"]`` the report table (block size x mix,
    mean over the measurement window) of ``.attrs["metric"]``. ``rounds_max`` defaults
    to ``PTS_ROUNDS_MAX``."""
    from raidlab.frontends import suites

    labels = dict(labels or {})
    if rounds_max is None:
        rounds_max = suites.PTS_ROUNDS_MAX

    def label(key: str) -> str:
        return labels.get(key, key)

    def listed(value: Sequence[str] | str | None) -> list[str] | None:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",")]
        return list(value) if value else None

    frame, summary = suites.pts(
        array,
        test,
        listed(mixes),
        listed(sizes),
        parse_ios_max(ios, label("ios")),
        limits.parse_path(iodepth, "workload.iodepth", label("iodepth"), "jobs"),
        limits.parse_path(numjobs, "workload.numjobs", label("numjobs"), "jobs"),
        parse_int(rounds_max, label("rounds_max"), 5, 1000),
        parse_seed(seed, label("seed")),
        jobs,
        labels,
    )
    metric = suites.PTS_METRICS[test]
    frame.attrs.update(
        {"summary": summary, "metric": metric, "table": suites.pts_table(frame, summary, metric)}
    )
    return frame


def replay(
    array: Mapping[str, Any],
    trace: str | Path,
    trace_format: str = "msr",
    mode: str = "open",
    iodepth: Any = 1,
    time_scale: Any = 1,
    seed: Any = 1,
    labels: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Replay a block trace (streamed: any length) on ``array``: ``mode`` ``open`` at the
    trace's timestamps divided by ``time_scale``, or ``closed`` with ``iodepth``
    outstanding. The scenario's workload is the trace (``kind = "trace"``), so the
    stored scenario reproduces the replay; the native side checks every field and the
    file, and a refusal names ``labels``' name for it (the trace itself for its path).
    One row per direction, as ``run``; ``.attrs`` carry the results, the scenario and
    the explain dict."""
    labels = dict(labels or {})

    def label(key: str) -> str:
        return labels.get(key, key)

    def parsed(key: str, value: Any) -> Any:
        return limits.parse(value, limits.field(f"workload.{key}", "trace"), label(key))

    workload = {
        "kind": "trace",
        "path": str(trace),
        "format": trace_format,
        "mode": mode,
        "iodepth": parsed("iodepth", iodepth),
        "time_scale": parsed("time_scale", time_scale),
    }
    scenario = {
        "schema": 1,
        "seed": parse_seed(seed, label("seed")),
        "array": dict(array),
        "workload": workload,
    }
    paths = {f"workload.{key}": label(key) for key in ("format", "mode", "iodepth", "time_scale")}
    results = simulate(scenario, {**paths, "workload.path": str(trace), "seed": label("seed")})
    frame = run_frame(results)
    frame.attrs.update(
        {"results": results, "scenario": scenario, "explain": results.get("explain")}
    )
    return frame


# The workload advise ranks arrays for when none is given: a mixed OLTP-like load.
ADVISE_WORKLOAD: dict[str, str] = {
    "rw": "randrw",
    "bs": "4K",
    "rwmixread": "70",
    "iodepth": "32",
    "numjobs": "1",
}


def advise(
    request: AdviseRequest | None = None,
    workload: WorkloadRequest | None = None,
    job: str | Path | None = None,
    access_spec: str | None = None,
    ios: Any = DEFAULT_IOS,
    jobs: int | None = None,
    progress: bool = True,
    **keywords: Any,
) -> pd.DataFrame:
    """Rank the RAID levels, stripe units and cache settings ``request`` (an
    ``AdviseRequest``: the drives, the constraints, the metric; or its fields as
    ``keywords``) allows for a workload: fio-style (``workload``, default randrw 4K
    70 % reads QD 32), a fio job file (``job``: its jobs run together, each capped at
    ``ios``) or an IOMeter preset/access specification (``access_spec``). Best first;
    ``.attrs["why"]`` explains the winner against the runner-up."""
    from raidlab.frontends.fio import parse_job_files
    from raidlab.studies import advise as advising

    request = request or advising.AdviseRequest(**keywords)
    label = request.label
    if job is not None and access_spec is not None:
        raise RaidlabError(label("job"), f"give {label('job')} or {label('access_spec')}, not both")
    source: WorkloadRequest | advising.WorkloadSource
    if job is not None or access_spec is not None:
        ios_cap = parse_int(ios, label("ios"), 1, 100_000_000)
        if job is not None:
            if not Path(job).is_file():
                raise RaidlabError(label("job"), f"no such file: {job}")
            source = advising.FioJobs(parse_job_files([job]), str(job), ios_cap, label("job"))
        else:
            source = advising.AccessSpecWorkload(
                str(access_spec), ios_cap, {"spec": label("access_spec"), "ios": label("ios")}
            )
    else:
        source = workload or WorkloadRequest(**ADVISE_WORKLOAD, ios=ios)
    return advising.advise(request, source, jobs=jobs, progress=progress)


def _finite(value: Any) -> Any:
    """``value`` with infinite figures (an MTTDL of never) as None, so its JSON is JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


# The workload a rebuild competes with in `risk` when none is given: a light mixed load
# (one outstanding 4 KiB request, 70 % reads), so the rebuild runs near its rate limit.
RISK_WORKLOAD: dict[str, str] = {
    "rw": "randrw",
    "bs": "4K",
    "rwmixread": "70",
    "iodepth": "1",
    "numjobs": "1",
}
RISK_IOS_DEFAULT = 5_000


def risk(
    array: Mapping[str, Any],
    drive_preset: str | None,
    workload: WorkloadRequest | None = None,
    options: Any = None,
    rebuild_rate: Any = None,
    rebuild_hours: Any = None,
    seed: Any = 1,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Data-loss risk of a healthy ``array`` (docs/reliability.md): MTTDL without and
    with unrecoverable read errors and the probability of loss over the mission, from
    the Markov model and a Monte Carlo (``monte_carlo``). ``options`` is a
    ``raidlab.reliability.RiskOptions`` (MTBF/AFR, URE rate, mission, replacement
    delay, hot spare, scrub, ...); figures not given come from the drive preset's
    ``[NAME.reliability]`` table. The rebuild is simulated under ``workload``
    (default RISK_WORKLOAD) at ``rebuild_rate`` (default md's speed_limit_max) unless
    ``rebuild_hours`` gives its time."""
    from raidlab.reliability import MD_SPEED_LIMIT_MAX_BYTES_PER_S, RiskOptions, assess
    from raidlab.scenario.array import parse_rebuild_rate

    labels = dict(labels or {})
    options = options or RiskOptions(labels=labels)
    rate = (
        MD_SPEED_LIMIT_MAX_BYTES_PER_S
        if rebuild_rate is None
        else parse_rebuild_rate(rebuild_rate, labels.get("rebuild_rate", "rebuild_rate"))
    )
    seed = parse_seed(seed, labels.get("seed", "seed"))
    workload = workload or WorkloadRequest(**RISK_WORKLOAD, ios=RISK_IOS_DEFAULT)
    document = _finite(assess(array, drive_preset, workload, options, rate, rebuild_hours, seed))
    return {
        "level": array["level"],
        "drives": array["drive_count"],
        "drive": drive_preset,
        **document,
        "workload": {
            key: getattr(workload, key) for key in ("rw", "bs", "rwmixread", "iodepth", "ios")
        },
        "seed": seed,
    }


def sweep(
    path: str | Path,
    out: str | Path | None = None,
    jobs: int | None = None,
    executor: Executor | None = None,
    progress: bool = False,
    labels: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Run the sweep file ``path`` (a base scenario and a ``[grid]`` or ``[[points]]``,
    see raidlab.frontends.sweep) and write OUT.csv and OUT.parquet (default OUT:
    ``out/<file name without .toml>``; OUT ending in ``/``, or an existing directory, is
    a directory, created if missing, that gets ``<file name without .toml>``), one row
    per point in point order. Points whose scenario is already in OUT.csv are not run
    again, so a stopped sweep resumes.
    ``executor``: any concurrent.futures executor, e.g. a Dask client's."""
    from raidlab.frontends.sweep import load_sweep, run_sweep
    from raidlab.report.output import output_file

    labels = dict(labels or {})
    sweep_file = load_sweep(path)
    if out is None:
        out = output_directory("out", labels.get("out", "out")) / Path(path).stem
    elif str(out).endswith(("/", os.sep)) or Path(out).is_dir():
        # A trailing slash, or a directory that exists, names a directory, as for cp and
        # rsync: the files go inside it, named after the sweep file as in the default
        # out/ (not DIR.csv beside it).
        out = output_directory(out, labels.get("out", "out")) / Path(path).stem
    prefix = Path(out)
    for suffix in (".csv", ".parquet"):
        output_file(prefix.with_name(prefix.name + suffix), labels.get("out", "out"))
    notes: list[str] = []
    frame = run_sweep(sweep_file, prefix, jobs, executor, progress, note=notes.append)
    frame.attrs["notes"] = notes
    frame.attrs["points"] = len(sweep_file.points)
    frame.attrs["varied"] = list(sweep_file.varied)
    return frame


def study_names() -> list[str]:
    """Every study ``reproduce`` knows: ATTO measurements, then claim studies."""
    from raidlab.studies.atto_studies import STUDIES
    from raidlab.studies.claim_studies import CLAIM_STUDIES
    from raidlab.studies.raidix_cache import STUDY as RAIDIX_CACHE

    return [*STUDIES, *CLAIM_STUDIES, RAIDIX_CACHE]


def reproduce(
    study: str,
    jobs: int | None = None,
    out: str | Path | None = None,
    ios_max: int | None = None,
    seed: Any = 1,
    executor: Executor | None = None,
    progress: bool = True,
    labels: Mapping[str, str] | None = None,
    cross_validate: bool = False,
    log_y: bool = False,
) -> pd.DataFrame:
    """Reproduce a study.

    ATTO studies (``ssd-raid0-atto``, ``hdd-raid0-atto``): measured vs simulated for
    every row, columns ``study, config, op, qd, block_bytes, measured_mbps,
    simulated_mbps, error_pct, role``; ``.attrs["summary"]`` is a StudySummary; with
    ``out`` the figures are written there and listed in ``.attrs["figures"]``: the
    directory is created (with its parents) and checked before anything runs;
    without ``out`` nothing is written. ``ios_max`` caps the measured I/Os per point
    (default 3000). With ``cross_validate`` each array configuration is also left out
    in turn, the controller fields calibrated on array rows are refitted without its
    rows, and it is predicted: ``.attrs["cross_validation"]`` is a
    ``raidlab.studies.cross_validation.CrossValidation`` (per-configuration and
    overall CV MAPE next to the naive model on the same rows). ``log_y`` draws the
    figures' MB/s on a log axis.

    Claim studies (``ssd-raid-tuning``): one row per check of a covered claim and one
    per claim not covered (``raidlab.studies.claims.CLAIM_COLUMNS``); ``.attrs["summary"]``
    counts passes and failures, ``.attrs["method"]`` and ``.attrs["coverage"]`` say
    how. ``ios_max`` is the measured I/Os of every run (default 20000); they draw
    no figures and calibrate nothing on array rows, so ``out`` and ``cross_validate``
    are refused."""
    from raidlab.studies.claim_studies import CLAIM_STUDIES

    labels = dict(labels or {})

    if study == "raidix-cache":
        return _reproduce_raidix_cache(ios_max, seed, jobs, executor, progress, out, labels)
    run: dict[str, Any] = {
        "jobs": jobs,
        "ios_max": ios_max,
        "seed": seed,
        "executor": executor,
        "progress": progress,
    }
    if study in CLAIM_STUDIES:
        return _reproduce_claim_study(study, run, out, cross_validate, labels)
    return _reproduce_atto_study(study, run, out, cross_validate, log_y, labels)


def _reproduce_claim_study(
    study: str,
    run: Mapping[str, Any],
    out: str | Path | None,
    cross_validate: bool,
    labels: Mapping[str, str],
) -> pd.DataFrame:
    """A claim study's checks (``reproduce``'s ``run`` keywords); it draws no figures
    and calibrates nothing, so ``out`` and ``cross_validate`` are refused."""
    from raidlab.studies import CLAIMS_IOS_DEFAULT
    from raidlab.studies.atto_studies import STUDIES
    from raidlab.studies.claim_studies import reproduce_claims

    if cross_validate:
        raise RaidlabError(
            labels.get("cross_validate", "cross_validate"),
            f"{study} is a claim study; cross-validation is for the ATTO studies "
            f"({', '.join(STUDIES)})",
        )
    if out is not None:
        raise RaidlabError(
            labels.get("out", "out"), f"{study} is a claim study: it draws no figures"
        )
    return reproduce_claims(
        study,
        ios=CLAIMS_IOS_DEFAULT if run["ios_max"] is None else run["ios_max"],
        seed=parse_seed(run["seed"]),
        jobs=run["jobs"],
        executor=run["executor"],
        progress=run["progress"],
    )


def _reproduce_atto_study(
    study: str,
    run: Mapping[str, Any],
    out: str | Path | None,
    cross_validate: bool,
    log_y: bool,
    labels: Mapping[str, str],
) -> pd.DataFrame:
    """An ATTO study's rows and summary (``reproduce``'s ``run`` keywords), its
    cross-validation when asked, and its figures drawn into ``out`` when given."""
    from raidlab.studies.atto_studies import get_study, reproduce_study, summarize
    from raidlab.studies.cross_validation import cross_validate as cross_validate_study

    get_study(study)
    if out is not None:
        out = output_directory(out, labels.get("out", "out"))
    run = {
        **run,
        "ios_max": IOS_MAX_DEFAULT if run["ios_max"] is None else run["ios_max"],
        "seed": parse_seed(run["seed"]),
    }
    frame = reproduce_study(study, **run)
    frame.attrs["summary"] = summarize(frame)
    if cross_validate:
        frame.attrs["cross_validation"] = cross_validate_study(study, **run)
    if out is not None:
        from raidlab.report.plots import plot_study

        frame.attrs["figures"] = [str(path) for path in plot_study(frame, out, log_y=log_y)]
    return frame


def _reproduce_raidix_cache(
    ios_max: int | None,
    seed: Any,
    jobs: int | None,
    executor: Executor | None,
    progress: bool,
    out: str | Path | None,
    labels: Mapping[str, str],
) -> pd.DataFrame:
    """The RAIDIX SSD cache study (raidlab.studies.raidix_cache): every table row and
    M01-M04, stated against simulated; with ``out`` its figure is drawn there."""
    from raidlab.studies import raidix_cache

    if out is not None:
        out = output_directory(out, labels.get("out", "out"))
    frame = raidix_cache.reproduce_raidix_cache(
        ios=raidix_cache.IOS_DEFAULT if ios_max is None else ios_max,
        seed=parse_seed(seed),
        jobs=jobs,
        executor=executor,
        progress=progress,
    )
    if out is not None:
        from raidlab.report.raidix_cache import plot_gains

        frame.attrs["figures"] = [str(p) for p in plot_gains(frame, Path(out))]
    return frame


def _drive_figures(spec: Mapping[str, Any]) -> str:
    capacity = f"{spec['capacity_bytes'] / 1e9:g} GB"
    if spec["kind"] == "nvme":
        return (
            f"{capacity}, PCIe {spec['pcie_gen']}.0 x{spec['pcie_lanes']}, "
            f"{spec['channels']} ch x {spec['dies_per_channel']} dies, "
            f"tR {spec['read_page_ns'] / 1e3:g} us, tPROG {spec['program_page_ns'] / 1e3:g} us"
        )
    if spec["kind"] == "ssd":
        return (
            f"{capacity}, link {spec['link_rate_bytes_per_s'] / 1e6:g} MB/s, "
            f"{spec['channels']} ch x {spec['dies_per_channel']} dies, "
            f"{format_size(spec['page_bytes'])} pages, tR {spec['read_page_ns'] / 1e3:g} us, "
            f"tPROG {spec['program_page_ns'] / 1e3:g} us"
        )
    return (
        f"{capacity}, {spec['rpm']} rpm, seek {spec['seek_ns_avg'] / 1e6:g} ms avg, "
        f"media {spec['media_rate_bytes_per_s_outer'] / 1e6:g}-"
        f"{spec['media_rate_bytes_per_s_inner'] / 1e6:g} MB/s, cache "
        f"{format_size(spec['cache_bytes'])}, write cache "
        f"{'on' if spec['write_cache'] else 'off'}"
    )


def _controller_figures(spec: Mapping[str, Any]) -> str:
    def rate(value: Any) -> str:
        return "unlimited" if value in (None, "unlimited") else f"{float(value) / 1e6:g} MB/s"

    read_ahead = (
        "off"
        if not spec["read_ahead_bytes"]
        else f"{spec['read_ahead_segments']} x {format_size(spec['read_ahead_bytes'])}"
    )
    latency = spec.get("added_latency_ns", 0)
    return (
        f"{spec['request_overhead_ns'] / 1e3:g} us/request, "
        f"{spec['member_op_overhead_ns'] / 1e3:g} us/member op"
        + (f", +{latency / 1e3:g} us latency" if latency else "")
        + f", port {rate(spec['port_rate_bytes_per_s'])}, bus "
        f"{rate(spec['bus_rate_bytes_per_s'])}, read-ahead {read_ahead}, parity "
        f"{rate(spec.get('parity_rate_bytes_per_s'))}, RAID 1 reads "
        f"{spec.get('read_balance', 'round-robin')}"
        + _cache_figures(spec)
        + _uplink_figures(spec.get("uplink"))
    )


def _cache_figures(spec: Mapping[str, Any]) -> str:
    """The controller's cache and its default policy, and whether it has a FastPath:
    a study may run a controller differently from its preset (docs/predict.md)."""
    text = ""
    if spec.get("cache_bytes"):
        policy = "write-back" if spec.get("write_back") else "write-through"
        text += f", cache {format_size(spec['cache_bytes'])} {policy} (--write-cache)"
    if "fastpath_overhead_ns" in spec:
        text += ", FastPath off (--fastpath)"
    return text


def _uplink_figures(uplink: Mapping[str, Any] | None) -> str:
    if not uplink:
        return ""
    behind = uplink.get("members")
    who = "all members" if behind is None else f"last {behind} member(s)"
    completions = uplink.get("pcie_completion_bytes")
    writes = f", writes in {completions} B completions" if completions else ""
    # Measured ceilings below the TLP arithmetic, where the preset has them.
    measured = [
        f"{label} {uplink[key] / 1e9:g} GB/s"
        for key, label in (
            ("up_rate_bytes_per_s_max", "reads"),
            ("down_rate_bytes_per_s_max", "writes"),
        )
        if uplink.get(key)
    ]
    ceilings = f", measured at most {' / '.join(measured)}" if measured else ""
    return f", uplink PCIe {uplink['pcie_gen']}.0 x{uplink['pcie_lanes']} ({who}{writes}{ceilings})"


# The key figures of presets as columns (their preset keys, units in the names), for
# programs; ``key_figures`` says the same as text for people. "unlimited" rates are
# empty (NaN).
DRIVE_FIGURES = (
    "capacity_bytes",
    "link_rate_bytes_per_s",
    "channels",
    "dies_per_channel",
    "page_bytes",
    "read_page_ns",
    "program_page_ns",
    "rpm",
    "seek_ns_avg",
    "media_rate_bytes_per_s_outer",
    "media_rate_bytes_per_s_inner",
    "cache_bytes",
)
CONTROLLER_FIGURES = (
    "request_overhead_ns",
    "member_op_overhead_ns",
    "added_latency_ns",
    "port_rate_bytes_per_s",
    "bus_rate_bytes_per_s",
    "read_ahead_bytes",
    "read_ahead_segments",
    "parity_rate_bytes_per_s",
    "cache_bytes",
    "read_balance",
)
PRESET_COLUMNS = [
    "group",
    "name",
    "kind",
    "key_figures",
    "description",
    *dict.fromkeys([*DRIVE_FIGURES, "drive_write_cache", *CONTROLLER_FIGURES]),
]


def _figures(spec: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    return {
        key: float("nan") if spec.get(key) in (None, "unlimited") else spec[key] for key in keys
    }


def presets() -> pd.DataFrame:
    """Drive and controller presets: ``key_figures`` as text and the same figures as
    columns named by their preset keys (a figure a preset lacks is NaN)."""
    import pandas as pd

    rows = []
    for name in preset_names("drive"):
        spec = preset("drive", name, "drive")
        rows.append(
            {
                "group": "drive",
                "name": name,
                "kind": spec["kind"],
                "key_figures": _drive_figures(spec),
                "description": spec["description"],
                **_figures(spec, DRIVE_FIGURES),
                "drive_write_cache": spec.get("write_cache"),
            }
        )
    for name in preset_names("controller"):
        spec = preset("controller", name, "controller")
        rows.append(
            {
                "group": "controller",
                "name": name,
                "kind": spec["kind"],
                "key_figures": _controller_figures(spec),
                "description": spec["description"],
                **_figures(spec, CONTROLLER_FIGURES),
            }
        )
    # Nullable integer and boolean columns: whole numbers stay whole next to NaN.
    return pd.DataFrame(rows, columns=PRESET_COLUMNS).convert_dtypes()


def _preset_details(group: str, name: str) -> dict[str, Any]:
    parameters = preset_parameters(group, name, "name")
    values = {p.key: p.value for p in parameters if not p.table}
    return {
        "group": group,
        "name": name,
        "kind": values.get("kind", ""),
        "description": values.get("description", ""),
        "parameters": _parameter_records(parameters),
        "notes": preset_table_notes(group, name),
    }


# A preset's keys that name it rather than give a figure (no source to cite).
PRESET_LABEL_KEYS = ("kind", "description")


def _parameter_records(parameters: Sequence[Any]) -> list[dict[str, Any]]:
    return [
        {"parameter": p.name, "value": p.value, "source": p.source}
        for p in parameters
        if p.table or p.key not in PRESET_LABEL_KEYS
    ]


def preset_details(name: str | None = None, field: str = "name") -> list[dict[str, Any]]:
    """Every parameter of presets with the source its comment cites: of the preset
    ``name`` (drive, controller or host; or a drive file's path, ``my-drive.toml``), or
    of every preset when ``name`` is None. One dict per preset: ``group``, ``name``,
    ``kind``, ``description``, ``parameters`` (``parameter`` such as ``rpm`` or
    ``ftl.spare_percent``, ``value``, ``source``: ``""`` where none is cited) and
    ``notes`` (the comment lines inside its tables)."""
    if name is None:
        return [
            _preset_details(group, preset_name)
            for group in group_names()
            for preset_name in preset_names(group)
        ]
    if is_drive_file(name):
        drive, parameters, notes = drive_file_parameters(name, field)
        return [
            {
                "group": "drive",
                "name": drive.name,
                "kind": drive.table.get("kind", ""),
                "description": drive.table.get("description", ""),
                "parameters": _parameter_records(parameters),
                "notes": notes,
                "file": str(name),
            }
        ]
    groups = groups_of(name)
    if not groups:
        known = [n for group in group_names() for n in preset_names(group)]
        raise RaidlabError(field, unknown_name_message("preset", name, known))
    return [_preset_details(group, name) for group in groups]


# --- calibrate: one's own drive from fio's measurements -------------------------------


def calibration_jobs(kind: str = "ssd", quick: bool = False, size: str | None = None) -> str:
    """The fio job file that measures a drive for :func:`calibrate` (``kind`` ssd or
    hdd); ``quick``: one second a job (tests), ``size``: only the first SIZE of the
    target (fio's ``size=``, e.g. ``1g``)."""
    from raidlab.frontends import calibrate_jobs
    from raidlab.frontends.fio_values import fio_size

    calibrate_jobs.check_kind(kind)
    if size is not None:
        calibrate_jobs.check_size(kind, fio_size(size, "--size", "size"), size)
    return calibrate_jobs.job_file_text(kind, quick=quick, size=size)


def calibrate(
    files: Sequence[str | Path],
    kind: str,
    name: str,
    capacity: Any = None,
    max_evals: Any = None,
    fit_ios: Any = None,
    on_eval: Any = None,
    labels: Mapping[str, str] | None = None,
) -> Any:
    """Fit the ``kind`` drive model to fio's JSON output ``files`` of the jobs of
    :func:`calibration_jobs`; returns a ``Calibration`` (``table``: the preset,
    ``sources``, ``jobs``: the fit error per job) whose TOML is
    ``raidlab.frontends.calibrate.preset_toml(result)``. ``on_eval(count, cost)`` is
    called after every simulation of the job set (a progress bar)."""
    from raidlab.frontends import calibrate as calibration
    from raidlab.frontends.calibrate_jobs import check_kind
    from raidlab.units import parse_size

    labels = dict(labels or {})

    def label(key: str) -> str:
        return labels.get(key, key)

    check_kind(kind, label("kind"))
    if not name or not all(c.isalnum() or c in "-_." for c in name):
        raise RaidlabError(
            label("name"), f"letters, digits, '-', '_' and '.' only (a TOML key), got {name!r}"
        )
    capacity_bytes = None
    if capacity is not None:
        capacity_bytes = parse_size(capacity, label("capacity"))
        if capacity_bytes < 1 << 20:
            raise RaidlabError(label("capacity"), f"at least 1M, got {capacity!r}")
    evals = parse_int(
        calibration.MAX_EVALS_DEFAULT if max_evals is None else max_evals,
        label("max_evals"),
        calibration.MAX_EVALS_MIN,
        calibration.MAX_EVALS_MAX,
    )
    ios = parse_int(
        calibration.FIT_IOS_DEFAULT if fit_ios is None else fit_ios,
        label("fit_ios"),
        calibration.FIT_IOS_MIN,
        calibration.FIT_IOS_MAX,
    )
    jobs = calibration.read_measurements(files, kind)
    return calibration.calibrate(
        jobs,
        kind,
        name,
        capacity=capacity_bytes,
        max_evals=evals,
        fit_ios=ios,
        on_eval=on_eval or (lambda count, best: None),
    )


__all__: list[str] = [
    "FioRun",
    "advise",
    "atto",
    "atto_sweep",
    "calibrate",
    "calibration_jobs",
    "cdm",
    "fio",
    "iometer",
    "pts",
    "replay",
    "explain_lines",
    "rebuild_lines",
    "presets",
    "preset_details",
    "reproduce",
    "resolve_array",
    "risk",
    "run",
    "run_workload",
    "run_workload_rows",
    "sweep",
    "study_names",
]


# --- DiskSim's disk library and validation traces (docs/disksim.md) ----------------------


def import_disksim(parv: str | Path, out: str | Path, label: str = "FILE") -> list[str]:
    """Write the drive of DiskSim 4 parameter file ``parv`` (and the files it sources) to
    the drive file ``out`` (`--drive out.toml` runs it), each key citing its DiskSim
    line. Returns the DiskSim parameters raidlab does not represent (also listed in the
    file)."""
    from raidlab.scenario.disksim import import_parv

    drive = import_parv(parv, label)
    text = drive.toml(Path(parv))
    try:
        Path(out).write_text(text, "utf-8")
    except OSError as error:
        raise RaidlabError("--out", f"cannot write: {error.strerror or error}") from None
    # The written file must run: resolve it as `--drive` would.
    resolve_array(level="concat", drives=1, drive=str(out), controller="hba")
    return drive.unrepresented


def disksim_validation(
    disks: Sequence[str] = (), data_dir: str | Path | None = None, limit: int | None = None
) -> list[Any]:
    """DiskSim's real-disk validation through raidlab (``raidlab.studies.
    disksim_validation``): per disk, raidlab's demerit beside DiskSim's."""
    from raidlab.studies.disksim_validation import run_validation

    def build(drive: dict[str, Any]) -> dict[str, Any]:
        return resolve_array(level="concat", drives=1, drive=drive, controller="hba")

    return run_validation(disks, data_dir, build, limit)
