"""Simulator speed and memory: simulated host I/Os per wall-clock second on one core.

Each rate is printed twice: per wall-clock second and per second of the simulating
thread's CPU time, which a machine shared with other work leaves nearly untouched where
the wall clock is not (compare builds by the CPU rate, alternating them).

Each case runs in its own process (so its peak memory is its own) at two I/O counts,
N/10 and N; memory is flat when the peak resident set barely moves over that 10x.

    python benches/bench_sim.py            # N = 5,000,000 host I/Os per case
    python benches/bench_sim.py --ios 500000 --trace-lines 1000000

The trace case replays an MSR-format trace of N lines (and N/10) streamed from disk.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from raidlab import _native
from raidlab.api import resolve_array
from raidlab.scenario.array import build_scenario
from raidlab.scenario.cache import attach_cache
from raidlab.scenario.workloads import WorkloadRequest, build_workload

CASES: dict[str, dict[str, Any]] = {
    "ssd-raid0x4-randread-4k-qd32": {
        "array": {
            "drive": "adata-sp900-128g",
            "controller": "hba",
            "drives": 4,
            "stripe_unit": "64K",
        },
        "workload": {"rw": "randread", "bs": "4K", "iodepth": 32, "size": "16G"},
    },
    "raid5x4-randwrite-4k-qd32": {
        "array": {
            "drive": "adata-sp900-128g",
            "controller": "linux-md",
            "drives": 4,
            "stripe_unit": "64K",
            "level": 5,
        },
        "workload": {"rw": "randwrite", "bs": "4K", "iodepth": 32, "size": "16G"},
    },
    # One HDD, 4 KiB random reads at QD 32: NCQ weighs every queued command at every
    # dispatch (issue 21's HDD path; DiskSim's case in benches/peers).
    "hdd-1-randread-4k-qd32": {
        "array": {
            "drive": "hitachi-deskstar-250g",
            "controller": "hba",
            "drives": 1,
            "stripe_unit": "64K",
        },
        "workload": {"rw": "randread", "bs": "4K", "iodepth": 32, "size": "16G"},
    },
    # Cost per I/O against the member count: each pair below is printed as a ratio.
    "raid0x256-randread-4k-qd32": {
        "array": {
            "drive": "adata-sp900-128g",
            "controller": "hba",
            "drives": 256,
            "stripe_unit": "64K",
        },
        "workload": {"rw": "randread", "bs": "4K", "iodepth": 32, "size": "16G"},
    },
    "raid6x4-randwrite-4k": {
        "array": {
            "drive": "adata-sp900-128g",
            "controller": "linux-md",
            "drives": 4,
            "stripe_unit": "64K",
            "level": 6,
        },
        "workload": {"rw": "randwrite", "bs": "4K", "iodepth": 32, "size": "16G"},
        "ios_share": 0.2,
    },
    "raid6x256-randwrite-4k": {
        "array": {
            "drive": "adata-sp900-128g",
            "controller": "linux-md",
            "drives": 256,
            "stripe_unit": "64K",
            "level": 6,
        },
        "workload": {"rw": "randwrite", "bs": "4K", "iodepth": 32, "size": "16G"},
        "ios_share": 0.2,
    },
    "hdd-raid0x4-seqread-64k-qd4": {
        "array": {
            "drive": "hitachi-deskstar-250g",
            "controller": "dell-perc6i",
            "drives": 4,
            "stripe_unit": "64K",
        },
        "workload": {"rw": "read", "bs": "64K", "iodepth": 4, "size": "16G"},
    },
    # The SSD cache tier (docs/cache-tier.md): RAIDIX policy, RAID 10 of 4 SAS SSDs in
    # front of RAID 6 of 13 HDDs; the policy sees every host I/O, the arrays run a window.
    "cached-raid6x13-randrw-4k-qd32": {
        "array": {
            "drive": "seagate-cheetah-15k7-300g",
            "controller": "linux-md",
            "drives": 13,
            "stripe_unit": "64K",
            "level": 6,
        },
        "cache": {
            "policy": "raidix",
            "drive": "hgst-ultrastar-ssd400m-200g",
            "controller": "linux-md",
        },
        "workload": {"rw": "randrw", "bs": "4K", "iodepth": 32, "size": "16G"},
    },
}

# (few members, many members): printed as the growth of the cost per I/O, which issue 21
# bounds at 1.5x from 4 to 256 drives.
SCALING: list[tuple[str, str]] = [
    ("ssd-raid0x4-randread-4k-qd32", "raid0x256-randread-4k-qd32"),
    ("raid6x4-randwrite-4k", "raid6x256-randwrite-4k"),
]


def scenario(case: str, ios: int) -> dict[str, Any]:
    spec = CASES[case]
    array = resolve_array(**{"level": 0, **spec["array"]})
    if "cache" in spec:
        array = attach_cache(array, spec["cache"], {})
    workload = build_workload(WorkloadRequest(ios=ios, warmup_ios=0, **spec["workload"]), array)
    return build_scenario(array, workload, 1)


def print_timed(simulate: Callable[[], str]) -> None:
    """Runs one simulation call and prints, as one JSON line, its measured host I/Os,
    wall and thread CPU seconds, events and the process's peak resident set."""
    start = time.perf_counter()
    cpu_start = time.thread_time()
    out = simulate()
    cpu_s = time.thread_time() - cpu_start
    wall_s = time.perf_counter() - start
    results = json.loads(out)
    measured = sum(op["ios"] for op in results["ops"].values())
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "ios": measured,
                "wall_s": wall_s,
                "cpu_s": cpu_s,
                "events": results["events"],
                "peak_rss_kib": peak_kib,
            }
        )
    )


def child(case: str, ios: int) -> None:
    text = json.dumps(scenario(case, ios))
    print_timed(lambda: _native.simulate(text))


def measure(case: str, ios: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", case, str(ios)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def write_msr_trace(path: str, lines: int) -> None:
    """An MSR Cambridge CSV trace of 4 KiB requests, 3 reads to 1 write, 10 us apart."""
    with open(path, "w") as out:
        chunk = 100_000
        for start in range(0, lines, chunk):
            out.write(
                "".join(
                    f"{128166372000000000 + i * 100},bench,0,{'Write' if i % 4 == 0 else 'Read'},"
                    f"{(i * 7919 % 1_000_000) * 4096},4096,100\n"
                    for i in range(start, min(lines, start + chunk))
                )
            )


def trace_child(path: str) -> None:
    array = resolve_array(**{"level": 0, **CASES["ssd-raid0x4-randread-4k-qd32"]["array"]})
    text = json.dumps({"schema": 1, "seed": 1, "array": array})
    print_timed(lambda: _native.simulate_trace(text, path, "msr", "closed", 32, 1.0))


def measure_trace(lines: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.csv")
        write_msr_trace(path, lines)
        out = subprocess.run(
            [sys.executable, __file__, "--trace-child", path],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ios", type=int, default=5_000_000)
    parser.add_argument(
        "--trace-lines",
        type=int,
        default=10_000_000,
        help="lines of the replayed trace (0: skip the trace case)",
    )
    parser.add_argument("--child", nargs=2, metavar=("CASE", "IOS"), help=argparse.SUPPRESS)
    parser.add_argument("--trace-child", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    if args.trace_child:
        trace_child(args.trace_child)
        return
    print(
        f"{'case':32} {'host I/Os':>10} {'wall s':>8} {'I/Os per s':>12} {'per CPU s':>12} "
        f"{'events/IO':>9} {'peak MiB':>9} {'peak MiB @N/10':>15}"
    )
    rates: dict[str, float] = {}
    for case, spec in CASES.items():
        # The slowest cases (parity writes over 256 drives) run a share of N.
        ios = max(1, int(args.ios * spec.get("ios_share", 1.0)))
        small = measure(case, max(1, ios // 10))
        big = measure(case, ios)
        rate = big["ios"] / big["wall_s"]
        # Cost per I/O compared in CPU time: the wall clock of a shared machine is not.
        rates[case] = big["ios"] / big["cpu_s"]
        print(
            f"{case:32} {big['ios']:>10} {big['wall_s']:>8.2f} {rate:>12,.0f} "
            f"{big['ios'] / big['cpu_s']:>12,.0f} {big['events'] / big['ios']:>9.2f} "
            f"{big['peak_rss_kib'] / 1024:>9.1f} {small['peak_rss_kib'] / 1024:>15.1f}"
        )
    for few, many in SCALING:
        print(f"cost per I/O (CPU time), {many} / {few}: {rates[few] / rates[many]:.2f}x")
    if args.trace_lines:
        small = measure_trace(max(1, args.trace_lines // 10))
        big = measure_trace(args.trace_lines)
        rate = big["ios"] / big["wall_s"]
        print(
            f"{'trace-replay-closed-qd32-4xssd':32} {big['ios']:>10} {big['wall_s']:>8.2f} "
            f"{rate:>12,.0f} {big['ios'] / big['cpu_s']:>12,.0f} "
            f"{big['events'] / big['ios']:>9.2f} {big['peak_rss_kib'] / 1024:>9.1f} "
            f"{small['peak_rss_kib'] / 1024:>15.1f}"
        )


if __name__ == "__main__":
    main()
