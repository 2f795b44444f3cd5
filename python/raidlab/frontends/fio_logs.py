"""fio's ``write_bw_log`` / ``write_iops_log`` / ``write_lat_log`` files from a
simulated run's interval samples.

fio 3.33 writes ``PREFIX_bw.N.log``, ``PREFIX_iops.N.log`` and, for the latency log,
``PREFIX_lat.N.log``, ``PREFIX_clat.N.log`` and ``PREFIX_slat.N.log`` (``N`` = the
job's thread number, counting every clone of every job in order; no ``.N`` with
``per_job_logs=0``). Each line is ``time_ms, value, direction, bs, offset``: bw in
KiB/s, IOPS per second, latencies in ns, direction 0 read / 1 write / 2 trim; with
``log_avg_msec`` the lines are window means and bs and offset are 0, as here.

What a simulation can and cannot give:

- bw and IOPS per window are the simulator's own completed bytes and I/Os per window.
- The simulator does not keep per-window latencies. A fio job is a closed loop at
  ``iodepth`` I/Os in flight per clone, so by Little's law a window's mean latency is
  the run's mean latency times the run's IOPS over the window's IOPS; that is what
  the lat and clat logs hold (clat = lat - slat, slat the host's constant cost).
- fio logs every I/O when ``log_avg_msec`` is 0; the simulator keeps no per-I/O
  record, so the lines are then 500 ms means (fio's bandwidth averaging time), and a
  note says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from raidlab.frontends.fio import FioPlan, PlannedJob

DDIR = {"read": 0, "write": 1, "trim": 2}
# The simulator keeps at most this many sample intervals per job (raidlab-sim,
# host/workload.rs SAMPLES_MAX); a log stops where they stop, with a note.
SAMPLES_MAX = 100_000


def _windows(samples: Mapping[str, Any], key: str, factor: int, full: int) -> list[int]:
    values = samples.get(key) or []
    summed = [sum(values[i : i + factor]) for i in range(0, len(values), factor)]
    summed += [0] * (full - len(summed))
    return summed[:full]


def _series(
    planned: PlannedJob, job: Mapping[str, Any], entry: Mapping[str, Any]
) -> tuple[int, dict[str, dict[str, list[int]]], dict[str, tuple[float, float]]] | None:
    """The job's window length (ns), per-direction ios/bytes per full window, and per
    direction (run mean latency ns, slat ns); None when the job has no samples."""
    samples = job.get("samples") or {}
    interval = int(samples.get("interval_ns") or 0)
    if not interval:
        return None
    window = planned.log_avg_ns or interval
    factor = max(1, window // interval)
    window = factor * interval
    full = int(job.get("runtime_ns", 0) // window)
    kept = len(samples.get("read_ios") or [])
    if kept >= SAMPLES_MAX:
        # The simulator stops sampling after SAMPLES_MAX intervals: log what it kept.
        full = min(full, kept // factor)
    ops = job.get("ops", {})
    series: dict[str, dict[str, list[int]]] = {}
    latency: dict[str, tuple[float, float]] = {}
    for op in DDIR:
        if not (ops.get(op) or {}).get("ios"):
            continue
        series[op] = {
            "ios": _windows(samples, f"{op}_ios", factor, full),
            "bytes": _windows(samples, f"{op}_bytes", factor, full),
        }
        latency[op] = (float(ops[op]["lat_mean_ns"]), float(entry[op]["slat_ns"]["mean"]))
    return window, series, latency


def _lines(
    kind: str,
    window: int,
    series: Mapping[str, Mapping[str, list[int]]],
    latency: Mapping[str, tuple[float, float]],
    run_iops: float,
    share: float,
) -> list[str]:
    seconds = window / 1e9
    count = min((len(s["ios"]) for s in series.values()), default=0)
    out: list[str] = []
    for k in range(count):
        time_ms = (k + 1) * window // 1_000_000
        window_iops = sum(s["ios"][k] for s in series.values()) / seconds
        for op, s in series.items():
            if kind == "bw":
                value = s["bytes"][k] * share / seconds / 1024
            elif kind == "iops":
                value = s["ios"][k] * share / seconds
            else:
                if not s["ios"][k] or not window_iops:
                    continue
                lat, slat = latency[op]
                lat = lat * run_iops / window_iops  # Little's law at a constant iodepth
                value = {"lat": lat, "clat": max(0.0, lat - slat), "slat": slat}[kind]
            out.append(f"{time_ms}, {int(value)}, {DDIR[op]}, 0, 0\n")
    return out


def write_logs(
    plan: FioPlan,
    results: Sequence[Mapping[str, Any]],
    document: Mapping[str, Any],
    directory: Path = Path("."),
) -> list[str]:
    """Write every job's fio log files under ``directory``; returns the notes."""
    notes: list[str] = []
    first_thread = {}
    thread = 1
    for index, planned in enumerate(plan.jobs):
        first_thread[index] = thread
        thread += planned.numjobs
    entries = {entry["jobname"]: entry for entry in document.get("jobs", [])}
    for members, result in zip(plan.groups, results, strict=True):
        native_jobs = result.get("jobs") or []
        for position, index in enumerate(members):
            planned = plan.jobs[index]
            if not planned.logs or position >= len(native_jobs):
                continue
            job = native_jobs[position]
            found = _series(planned, job, entries[planned.name])
            if found is None:
                notes.append(f"job {planned.name}: no interval samples, fio logs not written")
                continue
            window, series, latency = found
            runtime = float(job.get("runtime_ns", 0)) / 1e9
            total = sum(float(job["ops"][op]["ios"]) for op in series)
            run_iops = total / runtime if runtime else 0.0
            notes += _job_notes(planned, window, job)
            clones = planned.numjobs if planned.per_job_logs else 1
            for clone in range(clones):
                suffix = f".{first_thread[index] + clone}" if planned.per_job_logs else ""
                for kind, prefix in planned.logs.items():
                    kinds = ("lat", "clat", "slat") if kind == "lat" else (kind,)
                    for name in kinds:
                        lines = _lines(name, window, series, latency, run_iops, 1.0 / clones)
                        path = directory / f"{prefix}_{name}{suffix}.log"
                        path.write_text("".join(lines))
    return notes


def _job_notes(planned: PlannedJob, window: int, job: Mapping[str, Any]) -> list[str]:
    notes = []
    options = ", ".join(f"write_{kind}_log" for kind in planned.logs)
    if not planned.log_avg_ns:
        notes.append(
            f"job {planned.name}: {options}: per-I/O entries are not simulated; each line "
            f"is a {window // 1_000_000} ms mean (log_avg_msec= sets the window)"
        )
    if int(job.get("runtime_ns", 0)) < window:
        notes.append(
            f"job {planned.name}: the run ({int(job.get('runtime_ns', 0)) / 1e6:.1f} ms) "
            f"is shorter than one log window ({window // 1_000_000} ms): its logs are empty"
        )
    kept = len((job.get("samples") or {}).get("read_ios") or [])
    interval = int((job.get("samples") or {}).get("interval_ns") or 0)
    if kept >= SAMPLES_MAX and interval:
        notes.append(
            f"job {planned.name}: the simulator keeps {SAMPLES_MAX:,} sample intervals: "
            f"the logs stop at {kept * interval / 1e9:g} s (a larger log_avg_msec covers more)"
        )
    if "lat" in planned.logs:
        notes.append(
            f"job {planned.name}: lat/clat logs are Little's-law window means "
            "(run mean x run IOPS / window IOPS), see docs/fio.md"
        )
    return notes
