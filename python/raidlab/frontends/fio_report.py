"""Simulated fio jobs reported the way fio reports them: its normal text summary and
its JSON (``json`` / ``json+``) schema, version string ``fio-3.33``.

What the simulator gives and how fio's figures are derived from it:

- ``lat`` is the simulated completion latency of a host request (min, max, mean and
  fio's default percentile list, exact).
- ``slat`` (submission latency) is the host I/O stack's per-request overhead
  (``array.host.request_overhead_ns``), a constant; ``clat = lat - slat``, so clat's
  min, max, mean and percentiles are lat's minus that constant.
- ``stddev`` is estimated from the percentiles (piecewise-uniform between them); the
  text summary omits it.
- ``percentile_list`` keys that fio's default list has are exact; others are
  interpolated linearly between the nearest native percentiles (min and max at 0 and
  100).
- ``latency_ns/us/ms`` buckets and json+ ``bins`` come from the same piecewise CDF.
- ``bw_*``/``iops_*`` come from the per-job interval samples (500 ms, fio's averaging
  window; 1 s with ``ss``).
- Without ``group_reporting`` a job with ``numjobs=N`` is reported as N clones with
  equal shares of its I/O (the simulator runs them as one workload).
- Timestamps are fixed (0) so the same seed gives byte-identical output.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from raidlab.frontends.fio import (
    FIO_VERSION,
    SAMPLE_INTERVAL_NS,
    SS_SAMPLE_INTERVAL_NS,
    FioPlan,
    PlannedJob,
    SteadyState,
)

DEFAULT_PERCENTILES = [1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99]
DIRECTIONS = ("read", "write", "trim")
LAT_NS_BUCKETS = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"]
LAT_US_BUCKETS = LAT_NS_BUCKETS
LAT_MS_BUCKETS = [*LAT_NS_BUCKETS, "2000", ">=2000"]


# --- distributions from percentiles -------------------------------------------------


def _native_points(stats: Mapping[str, Any]) -> list[tuple[float, float]]:
    """(percent, ns) points of the CDF, from min at 0 % to max at 100 %."""
    points = sorted((float(key), float(value)) for key, value in stats["percentiles_ns"].items())
    low, high = float(stats["lat_min_ns"]), float(stats["lat_max_ns"])
    out = [(0.0, low)]
    for pct, value in points:
        out.append((pct, min(max(value, out[-1][1]), high)))
    out.append((100.0, max(high, out[-1][1])))
    return out


def percentile(points: Sequence[tuple[float, float]], pct: float) -> float:
    """Exact at native keys, linear between them."""
    for (p0, v0), (p1, v1) in zip(points, points[1:], strict=False):
        if p0 <= pct <= p1:
            if pct == p1:
                return v1
            if p1 == p0:
                return v1
            return v0 + (v1 - v0) * (pct - p0) / (p1 - p0)
    return points[-1][1]


def fraction_below(points: Sequence[tuple[float, float]], value: float) -> float:
    """Share of I/Os with latency <= value (0..1)."""
    if value < points[0][1]:
        return 0.0
    for (p0, v0), (p1, v1) in zip(points, points[1:], strict=False):
        if v0 <= value < v1:
            return (p0 + (p1 - p0) * (value - v0) / (v1 - v0)) / 100.0
    return 1.0


def stddev_estimate(points: Sequence[tuple[float, float]]) -> float:
    mean = square = 0.0
    for (p0, v0), (p1, v1) in zip(points, points[1:], strict=False):
        weight = (p1 - p0) / 100.0
        mean += weight * (v0 + v1) / 2
        square += weight * (v0 * v0 + v0 * v1 + v1 * v1) / 3
    return math.sqrt(max(0.0, square - mean * mean))


def _pct_key(pct: float) -> str:
    return f"{pct:f}"


# --- the per-job figures ------------------------------------------------------------


def _zero_direction(trim: bool = False) -> dict[str, Any]:
    zero_stat = {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
    return {
        "io_bytes": 0,
        "io_kbytes": 0,
        "bw_bytes": 0,
        "bw": 0,
        "iops": 0.0,
        "runtime": 0,
        "total_ios": 0,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": dict(zero_stat),
        "clat_ns": dict(zero_stat),
        "lat_ns": dict(zero_stat),
        "bw_min": 0,
        "bw_max": 0,
        "bw_agg": 0.0,
        "bw_mean": 0.0,
        "bw_dev": 0.0,
        "bw_samples": 0,
        "iops_min": 0,
        "iops_max": 0,
        "iops_mean": 0.0,
        "iops_stddev": 0.0,
        "iops_samples": 0,
    }


def _sample_stats(values: Sequence[float]) -> tuple[float, float, float, float, int]:
    if not values:
        return 0.0, 0.0, 0.0, 0.0, 0
    mean = sum(values) / len(values)
    dev = (
        math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
        if len(values) > 1
        else 0.0
    )
    return min(values), max(values), mean, dev, len(values)


def _full_samples(
    job: Mapping[str, Any], key: str, share: float, report_ns: int = SAMPLE_INTERVAL_NS
) -> list[float]:
    """Per-second rates over the run's full ``report_ns`` windows. Samples finer than
    the window (a job's log_avg_msec asked for them) are added up to it first."""
    samples = job.get("samples") or {}
    interval = samples.get("interval_ns") or 0
    values = samples.get(key) or []
    if not interval:
        return []
    factor = max(1, -(-report_ns // interval))
    if factor > 1:
        values = [sum(values[i : i + factor]) for i in range(0, len(values), factor)]
        interval *= factor
    full = int(job.get("runtime_ns", 0) // interval)
    seconds = interval / 1e9
    return [value * share / seconds for value in values[: max(full, 0)]]


def direction_object(
    stats: Mapping[str, Any],
    job: Mapping[str, Any],
    op: str,
    slat_ns: int,
    share: float,
    percentiles: Sequence[float],
    plus: bool,
    group_bw_bytes: float,
) -> dict[str, Any]:
    """fio's per-direction object for one job (or clone, ``share`` of it)."""
    ios = int(round(stats["ios"] * share))
    io_bytes = int(round(stats["bytes"] * share))
    runtime_ms = max(1, round(job.get("runtime_ns", 0) / 1e6))
    points = _native_points(stats)
    lat_mean = float(stats["lat_mean_ns"])
    slat = min(slat_ns, int(stats["lat_min_ns"]))
    clat_points = [(p, max(0.0, v - slat)) for p, v in points]
    lat_dev = stddev_estimate(points)
    bw_bytes = float(stats["mbps"]) * 1e6 * share
    clat = {
        "min": int(stats["lat_min_ns"]) - slat,
        "max": int(stats["lat_max_ns"]) - slat,
        "mean": lat_mean - slat,
        "stddev": lat_dev,
        "N": ios,
        "percentile": {_pct_key(p): int(round(percentile(clat_points, p))) for p in percentiles},
    }
    if plus:
        clat["bins"] = _bins(clat_points, ios)
    bw_values = [v / 1024 for v in _full_samples(job, f"{op}_bytes", share)]
    iops_values = _full_samples(job, f"{op}_ios", share)
    bw_min, bw_max, bw_mean, bw_dev, bw_n = _sample_stats(bw_values)
    iops_min, iops_max, iops_mean, iops_dev, iops_n = _sample_stats(iops_values)
    return {
        "io_bytes": io_bytes,
        "io_kbytes": io_bytes // 1024,
        "bw_bytes": int(bw_bytes),
        "bw": int(bw_bytes // 1024),
        "iops": float(stats["iops"]) * share,
        "runtime": runtime_ms,
        "total_ios": ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": {"min": slat, "max": slat, "mean": float(slat), "stddev": 0.0, "N": ios},
        "clat_ns": clat,
        "lat_ns": {
            "min": int(stats["lat_min_ns"]),
            "max": int(stats["lat_max_ns"]),
            "mean": lat_mean,
            "stddev": lat_dev,
            "N": ios,
        },
        "bw_min": int(bw_min),
        "bw_max": int(bw_max),
        "bw_agg": 100.0 * bw_bytes / group_bw_bytes if group_bw_bytes else 0.0,
        "bw_mean": bw_mean,
        "bw_dev": bw_dev,
        "bw_samples": bw_n,
        "iops_min": int(iops_min),
        "iops_max": int(iops_max),
        "iops_mean": iops_mean,
        "iops_stddev": iops_dev,
        "iops_samples": iops_n,
    }


def _bins(points: Sequence[tuple[float, float]], ios: int) -> dict[str, int]:
    """json+ latency histogram: each percentile step's I/Os at its upper value."""
    bins: dict[str, int] = {}
    assigned = 0
    for (p0, _), (p1, v1) in zip(points, points[1:], strict=False):
        count = int(round(ios * p1 / 100.0)) - int(round(ios * p0 / 100.0))
        if count > 0:
            key = str(int(round(v1)))
            bins[key] = bins.get(key, 0) + count
            assigned += count
    return bins


def _latency_buckets(points: Sequence[tuple[float, float]] | None) -> dict[str, dict[str, float]]:
    """fio's latency_ns/us/ms: share of I/Os per bucket (prev bound, bound], in %."""

    def buckets(keys: Sequence[str], scale: float) -> dict[str, float]:
        out: dict[str, float] = {}
        lower = 0.0 if scale == 1.0 else scale  # us and ms start where the unit below ends
        for key in keys:
            if points is None:
                share = 0.0
            elif key.startswith(">="):
                share = 1.0 - fraction_below(points, float(key[2:]) * scale)
            else:
                upper = float(key) * scale
                share = fraction_below(points, upper) - fraction_below(points, lower)
                lower = upper
            out[key] = round(100.0 * max(share, 0.0), 2)
        return out

    return {
        "latency_ns": buckets(LAT_NS_BUCKETS, 1.0),
        "latency_us": buckets(LAT_US_BUCKETS, 1e3),
        "latency_ms": buckets(LAT_MS_BUCKETS, 1e6),
    }


def _depth_buckets(iodepth: int) -> dict[str, dict[str, float]]:
    level = {key: 0.0 for key in ("1", "2", "4", "8", "16", "32", ">=64")}
    for key in ("1", "2", "4", "8", "16", "32"):
        if iodepth <= int(key):
            level[key] = 100.0
            break
    else:
        level[">=64"] = 100.0
    submit = {key: 0.0 for key in ("0", "4", "8", "16", "32", "64", ">=64")}
    submit["4"] = 100.0
    return {"iodepth_level": level, "iodepth_submit": submit, "iodepth_complete": dict(submit)}


# --- steady state -------------------------------------------------------------------


def steady_state(ss: SteadyState, job: Mapping[str, Any], share: float) -> dict[str, Any]:
    """fio's steady-state check on the 1 s samples after ``ss_ramp``: the first window
    of ``ss_dur`` that meets the criterion (fio would stop the job there; the
    simulation runs on and the figures are the whole run's)."""
    iops = [
        (r + w)
        for r, w in zip(
            _full_samples(job, "read_ios", share, SS_SAMPLE_INTERVAL_NS),
            _full_samples(job, "write_ios", share, SS_SAMPLE_INTERVAL_NS),
            strict=False,
        )
    ]
    bw = [
        (r + w) / 1024
        for r, w in zip(
            _full_samples(job, "read_bytes", share, SS_SAMPLE_INTERVAL_NS),
            _full_samples(job, "write_bytes", share, SS_SAMPLE_INTERVAL_NS),
            strict=False,
        )
    ]
    window = max(1, int(ss.duration_ns // 1_000_000_000))
    skip = int(math.ceil(ss.ramp_ns / 1_000_000_000))
    series = iops if ss.metric.startswith("iops") else bw
    attained = False
    best: tuple[float, float, float, int] | None = None
    start = skip
    while start + window <= len(series):
        criterion, deviation, slope = _criterion(ss, series[start : start + window])
        best = (criterion, deviation, slope, start)
        if criterion <= ss.limit:
            attained = True
            break
        start += 1
    if best is None:
        best = (0.0, 0.0, 0.0, skip)
    criterion, deviation, slope, first = best
    iops_window = [int(v) for v in iops[first : first + window]]
    bw_window = [int(v) for v in bw[first : first + window]]
    return {
        "ss": ss.text,
        "duration": int(ss.duration_ns // 1_000_000_000),
        "steadystate_ramptime": int(ss.ramp_ns // 1_000_000_000),
        "attained": 1 if attained else 0,
        "criterion": f"{criterion:f}%" if ss.percent else f"{criterion:f}",
        "max_deviation": deviation,
        "slope": slope,
        "data": {
            "bw_mean": int(sum(bw_window) / len(bw_window)) if bw_window else 0,
            "iops_mean": int(sum(iops_window) / len(iops_window)) if iops_window else 0,
            "iops": iops_window,
            "bw": bw_window,
        },
    }


def _criterion(ss: SteadyState, values: Sequence[float]) -> tuple[float, float, float]:
    n = len(values)
    mean = sum(values) / n
    deviation = max(abs(v - mean) for v in values)
    xs = range(n)
    x_mean = (n - 1) / 2
    denominator = sum((x - x_mean) ** 2 for x in xs)
    slope = (
        sum((x - x_mean) * (v - mean) for x, v in zip(xs, values, strict=True)) / denominator
        if denominator
        else 0.0
    )
    if ss.metric.endswith("_slope"):
        value = abs(slope)
    else:
        value = deviation
    if ss.percent:
        value = 100.0 * value / mean if mean else math.inf
    return value, deviation, slope


# --- the whole report -----------------------------------------------------------------


def fio_json(
    plan: FioPlan,
    results: Sequence[Mapping[str, Any]],
    array: Mapping[str, Any],
    seed: int,
    plus: bool = False,
) -> dict[str, Any]:
    """fio's JSON document for the plan's groups and their results, plus ``raidlab``."""
    slat_ns = int(array.get("host", {}).get("request_overhead_ns", 0))
    entries: list[dict[str, Any]] = []
    for group_index, (members, result) in enumerate(zip(plan.groups, results, strict=True)):
        native_jobs = result.get("jobs") or []
        group_bw = sum(float(s["mbps"]) * 1e6 for s in result.get("ops", {}).values())
        for position, job_index in enumerate(members):
            planned = plan.jobs[job_index]
            job = (
                native_jobs[position]
                if position < len(native_jobs)
                else {
                    "ops": result.get("ops", {}),
                    "runtime_ns": result.get("sim_time_ns", 0),
                }
            )
            clones = 1 if planned.group_reporting else planned.numjobs
            for _ in range(clones):
                entries.append(
                    _job_entry(
                        planned,
                        job,
                        group_index,
                        slat_ns,
                        1.0 / clones,
                        plus,
                        group_bw,
                        result,
                    )
                )
    document: dict[str, Any] = {
        "fio version": FIO_VERSION,
        "timestamp": 0,
        "timestamp_ms": 0,
        "time": "Thu Jan  1 00:00:00 1970",
    }
    if plan.global_options:
        document["global options"] = dict(plan.global_options)
    document["jobs"] = entries
    document["raidlab"] = {
        "array": dict(array),
        "seed": seed,
        "groups": [
            {
                "jobs": [plan.jobs[i].name for i in members],
                "seed": result.get("seed"),
                "sim_time_ns": result.get("sim_time_ns"),
                "explain": result.get("explain"),
                **({"rebuild": result["rebuild"]} if result.get("rebuild") else {}),
            }
            for members, result in zip(plan.groups, results, strict=True)
        ],
        "ignored_options": list(plan.ignored),
        "notes": list(plan.notes),
    }
    return document


def _job_entry(
    planned: PlannedJob,
    job: Mapping[str, Any],
    group: int,
    slat_ns: int,
    share: float,
    plus: bool,
    group_bw: float,
    result: Mapping[str, Any],
) -> dict[str, Any]:
    percentiles = planned.percentiles or DEFAULT_PERCENTILES
    ops = job.get("ops", {})
    entry: dict[str, Any] = {
        "jobname": planned.name,
        "groupid": group,
        "error": 0,
        "eta": 0,
        "elapsed": max(1, math.ceil(float(result.get("sim_time_ns", 0)) / 1e9)),
        "job options": dict(planned.options),
    }
    lat_points = None
    for op in DIRECTIONS:
        if op in ops and ops[op].get("ios"):
            entry[op] = direction_object(
                ops[op], job, op, slat_ns, share, percentiles, plus, group_bw
            )
            points = _native_points(ops[op])
            lat_points = points if lat_points is None else _merge(lat_points, points)
        else:
            entry[op] = _zero_direction()
    entry["sync"] = {
        "total_ios": 0,
        "lat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0},
    }
    entry["job_runtime"] = max(1, round(job.get("runtime_ns", 0) / 1e6))
    entry.update({"usr_cpu": 0.0, "sys_cpu": 0.0, "ctx": 0, "majf": 0, "minf": 0})
    entry.update(_depth_buckets(planned.iodepth))
    entry.update(_latency_buckets(lat_points))
    entry.update(
        {
            "latency_depth": planned.iodepth,
            "latency_target": 0,
            "latency_percentile": 100.0,
            "latency_window": 0,
        }
    )
    if planned.steadystate is not None:
        entry["steadystate"] = steady_state(planned.steadystate, job, share)
    return entry


def _merge(
    a: Sequence[tuple[float, float]], b: Sequence[tuple[float, float]]
) -> list[tuple[float, float]]:
    """A rough combined CDF of two directions (for the latency buckets only)."""
    return [(p, (va + vb) / 2) for (p, va), (_, vb) in zip(a, b, strict=False)]


# --- fio's text output -------------------------------------------------------------


def num2str(value: float, binary: bool = False, unit: str = "") -> str:
    """fio's num2str with 4 significant digits: 482000 -> 482k, 12345 -> 12.3k."""
    base = 1024.0 if binary else 1000.0
    prefixes = ["", "Ki", "Mi", "Gi", "Ti", "Pi"] if binary else ["", "k", "M", "G", "T", "P"]
    index = 0
    while value >= 10000 and index < len(prefixes) - 1:
        value /= base
        index += 1
    if index == 0:
        return f"{int(round(value))}{unit}"
    digits = len(str(int(value)))
    decimals = max(0, 3 - digits)
    text = f"{value:.{decimals}f}"
    if len(text.replace(".", "")) > 4:
        text = f"{value:.0f}"
    return f"{text}{prefixes[index]}{unit}"


def _bw_text(bytes_per_s: float) -> str:
    return f"{num2str(bytes_per_s, True, 'B/s')} ({num2str(bytes_per_s, False, 'B/s')})"


def _time_unit(values_ns: Sequence[float]) -> tuple[str, float]:
    low = min(values_ns) if values_ns else 0
    if low >= 10_000_000:
        return "msec", 1e6
    if low >= 10_000:
        return "usec", 1e3
    return "nsec", 1.0


def _stat_line(label: str, stat: Mapping[str, Any]) -> str:
    unit, scale = _time_unit([stat["min"]])
    return (
        f"{label} ({unit}): min={_short(stat['min'] / scale)}, "
        f"max={_short(stat['max'] / scale)}, avg={stat['mean'] / scale:.2f}"
    )


def _short(value: float) -> str:
    return f"{value:.0f}" if value >= 100 or value == int(value) else f"{value:.2f}"


def fio_text(document: Mapping[str, Any], plan: FioPlan) -> str:
    """fio's normal output for a ``fio_json`` document."""
    lines = _job_headers(plan)
    lines.append(FIO_VERSION)
    lines.append(f"Starting {sum(job.numjobs for job in plan.jobs)} simulated processes")
    lines.append("")
    by_group: dict[int, list[Mapping[str, Any]]] = {}
    for entry in document["jobs"]:
        by_group.setdefault(entry["groupid"], []).append(entry)
        planned = next(job for job in plan.jobs if job.name == entry["jobname"])
        lines.extend(_job_block(entry, planned.numjobs if planned.group_reporting else 1))
    for group, entries in sorted(by_group.items()):
        lines.extend(_group_status(group, entries))
    return "\n".join(lines).rstrip() + "\n"


def _job_headers(plan: FioPlan) -> list[str]:
    """fio's line per job section before the run: its group, rw, sizes and depth."""

    def span(mix: list[list[int]]) -> str:
        sizes = [block for block, _ in mix]
        return f"{min(sizes)}B-{max(sizes)}B"

    lines: list[str] = []
    seen: set[str] = set()
    for planned in plan.jobs:
        if planned.name in seen:
            continue
        seen.add(planned.name)
        w = planned.workload
        write_mix = w.get("bs_write", w["bs"])
        lines.append(
            f"{planned.name}: (g={planned.group}): rw={w['rw']}, bs=(R) {span(w['bs'])}, "
            f"(W) {span(write_mix)}, (T) {span(w['bs'])}, ioengine=raidlab, "
            f"iodepth={planned.iodepth}"
        )
    return lines


def _direction_lines(op: str, d: Mapping[str, Any]) -> list[str]:
    """One direction of a job: IOPS and bandwidth, latencies, percentiles, samples."""
    lines = [
        f"  {op}: IOPS={num2str(d['iops'])}, BW={_bw_text(d['bw_bytes'])}"
        f"({num2str(d['io_bytes'], True, 'B')}/{d['runtime']}msec)",
        "    " + _stat_line("slat", d["slat_ns"]),
        "    " + _stat_line("clat", d["clat_ns"]),
        "     " + _stat_line("lat", d["lat_ns"]),
        *_percentile_block(d["clat_ns"]["percentile"]),
    ]
    if d["bw_samples"]:
        lines.append(
            f"   bw (  KiB/s): min={d['bw_min']}, max={d['bw_max']}, "
            f"per={d['bw_agg']:.2f}%, avg={d['bw_mean']:.2f}, "
            f"stdev={d['bw_dev']:.2f}, samples={d['bw_samples']}"
        )
        lines.append(
            f"   iops        : min={d['iops_min']}, max={d['iops_max']}, "
            f"avg={d['iops_mean']:.2f}, stdev={d['iops_stddev']:.2f}, "
            f"samples={d['iops_samples']}"
        )
    return lines


def _job_block(entry: Mapping[str, Any], jobs_count: int) -> list[str]:
    """fio's block of one job's results, a blank line after it."""
    lines = [
        f"{entry['jobname']}: (groupid={entry['groupid']}, jobs={jobs_count}): err= 0: "
        f"pid=0: simulated"
    ]
    for op in DIRECTIONS:
        if entry[op]["total_ios"]:
            lines.extend(_direction_lines(op, entry[op]))
    for unit in ("ns", "us", "ms"):
        buckets = {k: v for k, v in entry[f"latency_{unit}"].items() if v >= 0.01}
        if buckets:
            text = ", ".join(f"{k}={v:.2f}%" for k, v in buckets.items())
            lines.append(f"  lat ({unit[0]}sec)   : {text}".replace("(nsec)", "(nsec)"))
    level = ", ".join(f"{k}={v:.1f}%" for k, v in entry["iodepth_level"].items())
    lines.append(f"  IO depths    : {level}")
    totals = ",".join(str(entry[op]["total_ios"]) for op in DIRECTIONS)
    lines.append(f"     issued rwts: total={totals},0 short=0,0,0,0 dropped=0,0,0,0")
    if "steadystate" in entry:
        ss = entry["steadystate"]
        lines.append(
            f"  steadystate  : attained={'yes' if ss['attained'] else 'no'}, "
            f"{ss['ss'].split(':')[0]}={ss['criterion']}, "
            f"iops mean={ss['data']['iops_mean']}, bw mean={ss['data']['bw_mean']}KiB/s"
        )
    lines.append("")
    return lines


def _group_status(group: int, entries: list[Mapping[str, Any]]) -> list[str]:
    """fio's "Run status group" block: each direction's aggregate over the group."""
    lines = [f"Run status group {group} (all jobs):"]
    for op in DIRECTIONS:
        done = [e[op] for e in entries if e[op]["total_ios"]]
        if not done:
            continue
        io_bytes = sum(d["io_bytes"] for d in done)
        run_max = max(d["runtime"] for d in done)
        run_min = min(d["runtime"] for d in done)
        aggregate = io_bytes / (run_max / 1000)
        low = min(d["bw_bytes"] for d in done)
        high = max(d["bw_bytes"] for d in done)
        lines.append(
            f"{op.upper():>7}: bw={_bw_text(aggregate)}, "
            f"{num2str(low, True, 'B/s')}-{num2str(high, True, 'B/s')} "
            f"({num2str(low, False, 'B/s')}-{num2str(high, False, 'B/s')}), "
            f"io={num2str(io_bytes, True, 'B')} ({num2str(io_bytes, False, 'B')}), "
            f"run={run_min}-{run_max}msec"
        )
    lines.append("")
    return lines


def _percentile_block(percentiles: Mapping[str, int]) -> list[str]:
    values = list(percentiles.values())
    unit, scale = ("nsec", 1.0)
    if values and max(values) > 9999:
        unit, scale = ("usec", 1e3)
    if values and max(values) / 1e3 > 9999:
        unit, scale = ("msec", 1e6)
    scaled = [int(round(v / scale)) for v in values]
    width = max((len(str(v)) for v in scaled), default=1)
    cells = [
        f"{float(key):5.2f}th=[{value:>{width}}]"
        for key, value in zip(percentiles, scaled, strict=True)
    ]
    lines = [f"    clat percentiles ({unit}):"]
    for start in range(0, len(cells), 4):
        lines.append(
            "     | "
            + ", ".join(cells[start : start + 4])
            + ("," if start + 4 < len(cells) else "")
        )
    return lines
