"""The Python API: ATTO sweeps, fio-style runs, study reproduction and presets.

Every function validates its input into a scenario first (errors are RaidlabError
naming the argument) and only then simulates. Array arguments left as None take the
array TOML file's value when ``config`` is given, else the defaults: RAID 0 of one
drive, stripe unit 64K, controller ``hba``, host preset ``default``.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import pandas as pd

from raidlab.atto import (
    DEFAULT_LENGTH,
    DEFAULT_QUEUE_DEPTHS,
    DEFAULT_SIZES,
    IOS_MAX_DEFAULT,
    atto_frame,
    atto_points,
    parse_queue_depths,
)
from raidlab.config import (
    ArrayRequest,
    build_array,
    build_scenario,
    load_array_file,
    parse_seed,
)
from raidlab.executor import run_scenarios
from raidlab.presets import preset, preset_names
from raidlab.studies import reproduce_study
from raidlab.units import format_size, parse_sizes
from raidlab.workloads import WorkloadRequest, build_workload, run_frame


def resolve_array(
    config: str | Path | None = None,
    *,
    level: Any = None,
    drives: Any = None,
    stripe_unit: Any = None,
    drive: Any = None,
    controller: Any = None,
    layout: Any = None,
    copies: Any = None,
    spans: Any = None,
    failed: Any = None,
    rebuild_rate: Any = None,
    host: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The scenario's ``array``: the TOML file ``config`` (if any) with the given
    arguments overriding it. ``labels`` renames arguments in errors (the CLI's flags).

    RAID levels: ``level`` 0, 1, 4, 5, 6, 10, 50, 60 or ``"concat"``; ``layout``
    (RAID 5/6/50/60 parity layouts, RAID 10 near/far/offset), ``copies`` (RAID 10),
    ``spans`` (RAID 50/60), ``failed`` (member indices, ``"1,3"`` or a list) and
    ``rebuild_rate`` (bytes/s, ``"50M"``: rebuilds the lowest-index failed member)."""
    request = load_array_file(config) if config is not None else ArrayRequest()
    request = request.overridden(
        {
            "level": level,
            "drives": drives,
            "stripe_unit": stripe_unit,
            "drive": drive,
            "controller": controller,
            "layout": layout,
            "copies": copies,
            "spans": spans,
            "failed": failed,
            "rebuild_rate": rebuild_rate,
            "host": host,
        },
        dict(labels or {}),
    )
    return build_array(request)


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


def atto(
    drive: Any = None,
    controller: Any = None,
    level: Any = None,
    drives: Any = None,
    stripe_unit: Any = None,
    qd: Any = DEFAULT_QUEUE_DEPTHS,
    sizes: Any = DEFAULT_SIZES,
    length: Any = DEFAULT_LENGTH,
    config: str | Path | None = None,
    seed: Any = 1,
    jobs: int | None = None,
    ios_max: int = IOS_MAX_DEFAULT,
    executor: Executor | None = None,
    progress: bool = True,
    layout: Any = None,
    copies: Any = None,
    spans: Any = None,
    failed: Any = None,
    rebuild_rate: Any = None,
) -> pd.DataFrame:
    """ATTO Disk Benchmark sweep: write then read passes over a ``length`` test file at
    every queue depth and transfer size.

    Returns columns ``op, qd, block_bytes, mbps, iops, lat_mean_us, lat_p99_us``, sorted
    by op, qd and size; ``.attrs["explain"]`` holds each point's explain dict.

    >>> raidlab.atto(drive="adata-sp900-128g", controller="intel-h97-rst", drives=2,
    ...              stripe_unit="16K", qd=[1, 4], sizes="512..8M")  # doctest: +SKIP
    """
    array = resolve_array(
        config,
        level=level,
        drives=drives,
        stripe_unit=stripe_unit,
        drive=drive,
        controller=controller,
        layout=layout,
        copies=copies,
        spans=spans,
        failed=failed,
        rebuild_rate=rebuild_rate,
    )
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
    frame = run_frame(results)
    frame.attrs["explain"] = results.get("explain")
    frame.attrs["scenario"] = scenario
    frame.attrs["seed"] = scenario["seed"]
    frame.attrs["sim_time_ns"] = results.get("sim_time_ns")
    frame.attrs["rebuild"] = results.get("rebuild")
    return frame


def run(
    drive: Any = None,
    controller: Any = None,
    level: Any = None,
    drives: Any = None,
    stripe_unit: Any = None,
    rw: str = "randread",
    bs: Any = "4K",
    iodepth: Any = 1,
    numjobs: Any = 1,
    rwmixread: Any = 50,
    ios: Any = None,
    size: Any = None,
    offset: Any = 0,
    warmup_ios: Any = None,
    config: str | Path | None = None,
    seed: Any = 1,
    explain: bool = False,
    runtime: Any = None,
    layout: Any = None,
    copies: Any = None,
    spans: Any = None,
    failed: Any = None,
    rebuild_rate: Any = None,
) -> pd.DataFrame:
    """A fio-style run. ``bs`` is a size or a mix ``"4K:55,64K:25,128K:20"``.

    Returns one row per direction that did I/O, columns
    ``op, iops, mbps, lat_mean_us, lat_p50_us, lat_p99_us``. The explain dict (resource
    utilisation, bottleneck, member I/O per host I/O) is always in
    ``.attrs["explain"]``; ``explain=True`` also adds it as ``.attrs["explain_text"]``.

    >>> raidlab.run(drive="intel-dc-s3500-80g", rw="randread", bs="4K",
    ...             iodepth=32)  # doctest: +SKIP
    """
    array = resolve_array(
        config,
        level=level,
        drives=drives,
        stripe_unit=stripe_unit,
        drive=drive,
        controller=controller,
        layout=layout,
        copies=copies,
        spans=spans,
        failed=failed,
        rebuild_rate=rebuild_rate,
    )
    frame = run_workload(
        array,
        WorkloadRequest(
            rw=rw,
            bs=bs,
            rwmixread=rwmixread,
            iodepth=iodepth,
            numjobs=numjobs,
            offset=offset,
            size=size,
            ios=ios,
            warmup_ios=warmup_ios,
            runtime_ns=runtime,
        ),
        seed,
    )
    if explain:
        frame.attrs["explain_text"] = explain_lines(
            frame.attrs.get("explain"), frame.attrs.get("rebuild")
        )
    return frame


def explain_lines(
    explain: Mapping[str, Any] | None, rebuild: Mapping[str, Any] | None = None
) -> list[str]:
    """Human-readable lines of a results ``explain`` dict and its ``rebuild`` object.

    Member I/O per host I/O is printed per direction exactly as the simulator counted
    it (a RAID 5 small write: 4.000, two reads and two writes); parity bytes per host
    byte and the rebuild only when the results carry them."""
    if not explain:
        lines = ["(the simulator returned no explain data)"]
        return lines + rebuild_lines(rebuild)
    lines = [f"bottleneck: {explain.get('bottleneck')}"]
    resources = sorted(
        explain.get("resources", []), key=lambda resource: -float(resource.get("utilisation", 0.0))
    )
    for resource in resources:
        lines.append(
            f"  {resource.get('name', '?'):<28} {resource.get('kind', ''):<12} "
            f"{100.0 * float(resource.get('utilisation', 0.0)):6.1f} % busy"
        )
    for op, ratio in explain.get("member_ios_per_host_io", {}).items():
        byte_ratio = explain.get("member_bytes_per_host_byte", {}).get(op)
        lines.append(
            f"{op}: {float(ratio):.3f} member ops per host op, "
            f"{float(byte_ratio) if byte_ratio is not None else float('nan'):.3f} "
            f"member bytes per host byte"
        )
    for op, ratio in (explain.get("parity_bytes_per_host_byte") or {}).items():
        lines.append(f"{op}: {float(ratio):.3f} parity bytes per host byte")
    if "read_ahead_hits" in explain:
        lines.append(f"read-ahead hits: {explain['read_ahead_hits']}")
    if explain.get("ssd_write_amplification") is not None:
        lines.append(
            f"SSD write amplification: {float(explain['ssd_write_amplification']):.2f} "
            "(flash programs per host write, garbage collection included)"
        )
    lines.extend(scheduler_lines(explain))
    return lines + rebuild_lines(rebuild)


def scheduler_lines(explain: Mapping[str, Any]) -> list[str]:
    """What the host's I/O scheduler did (nothing when the run had none)."""
    sched = explain.get("scheduler")
    if not sched:
        return []
    merged = int(sched.get("host_ios_merged", 0))
    lines = [
        f"I/O scheduler {sched.get('name')}: device queue depth {sched.get('queue_depth')}, "
        f"nr_requests {sched.get('nr_requests')}; {merged:,} host I/Os merged "
        f"({float(sched.get('host_ios_per_request', 0.0)):.2f} per request sent, "
        f"at most {format_size(int(sched.get('max_request_bytes', 0)))})"
    ]
    if int(sched.get("expired", 0)):
        lines.append(f"  {int(sched['expired']):,} requests sent out of LBA order on deadline")
    if int(sched.get("idle_expiries", 0)):
        lines.append(
            f"  {int(sched['idle_expiries']):,} turns ended after idling slice_idle "
            "for a job's next request"
        )
    if explain.get("bottleneck") == "host.scheduler":
        lines.append(
            "  host.scheduler is the bottleneck: requests waited in it while drives had "
            "nothing to do, as the scheduler served one job at a time and idled for it"
        )
    return lines


def rebuild_lines(rebuild: Mapping[str, Any] | None) -> list[str]:
    """The results' ``rebuild`` object as text (nothing when there was no rebuild)."""
    if not rebuild:
        return []
    done = int(rebuild.get("bytes_done", 0))
    total = int(rebuild.get("member_bytes", 0))
    share = f" ({100.0 * done / total:.2f} % of {total / 1e9:,.1f} GB)" if total else ""
    time_ns = rebuild.get("time_ns_projected")
    finished = bool(rebuild.get("finished"))
    when = "-" if time_ns is None else _duration(float(time_ns))
    lines = [
        f"rebuild of member {rebuild.get('member')}: {float(rebuild.get('mbps', 0.0)):.1f} MB/s "
        f"while the workload ran, {done / 1e6:,.1f} MB done{share}",
        f"rebuild time: {when} ({'measured, finished' if finished else 'projected at that rate'})",
    ]
    if "foreground_slowdown_pct" in rebuild:
        lines.append(
            f"foreground slowdown: {float(rebuild['foreground_slowdown_pct']):.1f} % of the "
            "workload's IOPS without the rebuild (same array degraded, same seed)"
        )
    return lines


def _duration(time_ns: float) -> str:
    seconds = time_ns / 1e9
    if seconds >= 3600:
        return f"{seconds / 3600:.2f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.3f} s"


def study_names() -> list[str]:
    """Every study ``reproduce`` knows: ATTO measurements, then claim studies."""
    from raidlab.claims import CLAIM_STUDIES
    from raidlab.studies import STUDIES

    return [*STUDIES, *CLAIM_STUDIES]


def reproduce(
    study: str,
    jobs: int | None = None,
    out: str | Path | None = None,
    ios_max: int | None = None,
    seed: Any = 1,
    executor: Executor | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Reproduce a study.

    ATTO studies (``ssd-raid0-atto``, ``hdd-raid0-atto``): measured vs simulated for
    every row, columns ``study, config, op, qd, block_bytes, measured_mbps,
    simulated_mbps, error_pct, role``; ``.attrs["summary"]`` is a StudySummary; with
    ``out`` the figures are written there and listed in ``.attrs["figures"]``.
    ``ios_max`` caps the measured I/Os per point (default 3000).

    Claim studies (``ssd-raid-tuning``): one row per check of a covered claim and one
    per claim not covered (``raidlab.claims.CLAIM_COLUMNS``); ``.attrs["summary"]``
    counts passes and failures, ``.attrs["method"]`` and ``.attrs["coverage"]`` say
    how. ``ios_max`` is the measured I/Os of every run (default 20000); ``out`` is
    unused (no figures)."""
    from raidlab.claims import CLAIM_STUDIES, CLAIMS_IOS_DEFAULT, reproduce_claims
    from raidlab.studies import get_study, summarize

    if study in CLAIM_STUDIES:
        return reproduce_claims(
            study,
            ios=CLAIMS_IOS_DEFAULT if ios_max is None else ios_max,
            seed=parse_seed(seed),
            jobs=jobs,
            executor=executor,
            progress=progress,
        )
    get_study(study)
    frame = reproduce_study(
        study,
        jobs=jobs,
        ios_max=IOS_MAX_DEFAULT if ios_max is None else ios_max,
        seed=parse_seed(seed),
        executor=executor,
        progress=progress,
    )
    frame.attrs["summary"] = summarize(frame)
    if out is not None:
        from raidlab.plots import plot_study

        frame.attrs["figures"] = [str(path) for path in plot_study(frame, out)]
    return frame


def _drive_figures(spec: Mapping[str, Any]) -> str:
    capacity = f"{spec['capacity_bytes'] / 1e9:g} GB"
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
    )


def presets() -> pd.DataFrame:
    """Drive and controller presets with their key figures."""
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
            }
        )
    return pd.DataFrame(rows, columns=["group", "name", "kind", "key_figures", "description"])


__all__: list[str] = [
    "atto",
    "atto_sweep",
    "explain_lines",
    "rebuild_lines",
    "presets",
    "reproduce",
    "resolve_array",
    "run",
    "run_workload",
    "study_names",
]
