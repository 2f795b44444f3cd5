"""The explain report: resource utilisation, the bottleneck, member I/O per host I/O,
what the I/O scheduler did and the rebuild, as lines a person reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raidlab.report.output import stderr, stdout
from raidlab.report.wear import wear_lines
from raidlab.units import format_size


def explain_lines(
    explain: Mapping[str, Any] | None,
    rebuild: Mapping[str, Any] | None = None,
    resources: bool = True,
) -> list[str]:
    """Human-readable lines of a results ``explain`` dict and its ``rebuild`` object.

    Member I/O per host I/O is printed per direction exactly as the simulator counted
    it (a RAID 5 small write: 4.000, two reads and two writes); parity bytes per host
    byte and the rebuild only when the results carry them. ``resources=False`` leaves
    out the per-resource lines (a page that draws them as a chart)."""
    if not explain:
        lines = ["(the simulator returned no explain data)"]
        return lines + rebuild_lines(rebuild)
    lines = [*bound_lines(explain)]
    resource_list = sorted(
        explain.get("resources", []), key=lambda resource: -float(resource.get("utilisation", 0.0))
    )
    for resource in resource_list if resources else []:
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
    lines.extend(wear_lines(explain))
    lines.extend(scheduler_lines(explain))
    lines.extend(cache_lines(explain.get("cache")))
    return lines + rebuild_lines(rebuild)


def bound_lines(explain: Mapping[str, Any]) -> list[str]:
    """What limits the run: the bottleneck when a resource is near saturation (the
    simulator's ``bound`` is ``resource``), else that the run is latency-bound and
    where its I/Os spend their time."""
    busiest = f"{explain.get('bottleneck')} ({limit_percent(explain)} busy)"
    if explain.get("bound", "resource") == "resource":
        lines = [f"bottleneck: {busiest}"]
    else:
        lines = [
            f"latency-bound: no resource is near saturation (busiest: {busiest}); the "
            f"longest stage of an I/O's path is {explain.get('stage_longest')}"
        ]
    stages = explain.get("latency_ns_by_stage") or {}
    if stages:
        lines.append(
            "latency per I/O by stage: "
            + ", ".join(
                f"{stage} {ns / 1e3:,.1f} us"
                for stage, ns in sorted(stages.items(), key=lambda item: -item[1])
            )
        )
    return lines


def limit_percent(explain: Mapping[str, Any]) -> str:
    return f"{100 * float(explain.get('bottleneck_utilisation', 0.0)):.0f} %"


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
    if explain.get("bottleneck") == "host.scheduler" and explain.get("bound") == "resource":
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


def print_explain(
    explain: Mapping[str, Any] | None,
    title: str,
    to_stderr: bool,
    rebuild: Mapping[str, Any] | None = None,
) -> None:
    console = stderr if to_stderr else stdout
    console.print(f"[bold]{title}[/bold]", highlight=False)
    for line in explain_lines(explain, rebuild):
        console.print(line, highlight=False, markup=False)


def cache_lines(cache: Mapping[str, Any] | None) -> list[str]:
    """The SSD cache tier (docs/cache-tier.md): hit ratios per area, admissions,
    evictions, destage traffic, SSD write hits and the pieces each array ran."""
    if not cache:
        return []
    c = cache.get("counters", {})
    hits = cache.get("ssd_write_hits")
    lines = [
        f"cache {cache.get('policy')}: {int(cache.get('capacity_bytes', 0)) / 2**30:,.1f} GiB, "
        f"lines of {format_size(int(cache.get('line_bytes', 0)))}",
        f"  read hits: {100 * float(cache.get('read_hit_ratio', 0)):.1f} % of read lines "
        f"(RRC {100 * float(cache.get('read_hit_ratio_rrc', 0)):.1f} %, "
        f"RWC {100 * float(cache.get('read_hit_ratio_rwc', 0)):.1f} %)",
        f"  writes cached: {100 * float(cache.get('write_cached_ratio', 0)):.1f} % of written "
        f"lines ({int(c.get('write_hit_lines', 0)):,} rewrites of cached lines)",
        f"  admissions: {int(c.get('read_admitted_lines', 0)):,} read lines, "
        f"{int(c.get('refill_lines', 0)):,} refilled; evictions: "
        f"{int(c.get('evicted_clean_lines', 0)):,} clean, "
        f"{int(c.get('evicted_dirty_lines', 0)):,} dirty lines, regions RRC "
        f"{int(c.get('evicted_regions_rrc', 0)):,} / RWC {int(c.get('evicted_regions_rwc', 0)):,}",
        f"  destaged: {format_size(int(cache.get('destaged_bytes', 0)))}; cache SSD writes "
        f"{format_size(int(c.get('cache_write_bytes_host', 0)))} host, "
        f"{format_size(int(c.get('cache_write_bytes_admit', 0)))} admissions, "
        f"{format_size(int(c.get('cache_write_bytes_refill', 0)))} refills",
        "  SSD write hits: "
        + (
            "- (the host wrote nothing)"
            if hits is None
            else f"{float(hits):.2f} cache bytes written per host byte written"
        )
        + f"; cache SSDs' NAND writes {float(cache.get('ssd_nand_write_bytes', 0)) / 1e6:,.1f} MB",
    ]
    for piece in cache.get("pieces", []):
        mark = " (sets the pace)" if piece.get("bottleneck") else ""
        lines.append(
            f"  piece {piece.get('workload')} -> {piece.get('array')} {piece.get('rw')}: "
            f"{int(piece.get('ops', 0)):,} requests at {float(piece.get('iops', 0)):,.0f}/s{mark}"
        )
    return lines
