"""Peer simulators side by side: raidlab against MQSim (SSD) and DiskSim 4 (HDD).

Two cases, each simulated by raidlab and by a peer with the same workload:

    ssd   4 KiB random reads, QD 32, one SATA SSD: raidlab's adata-sp900-128g preset
          against MQSim with benches/peers/mqsim-sp900.xml (the same geometry and timings)
    hdd   4 KiB random reads, QD 32, one 7200 rpm HDD: raidlab's hitachi-deskstar-250g
          preset against DiskSim 4 with the Seagate Barracuda (ST32171W) it ships,
          its queue raised to 32 commands scheduled shortest-positioning-time-first

Rows per case:

    whole process    the command a user runs, start-up included: `raidlab run ... --ios N`
                     against `MQSim -i ... -w ...` or `disksim <parv> ... 1` (N requests)
    simulator only   raidlab: the simulation call alone (raidlab._native.simulate on the
                     scenario `raidlab run` printed, timed in its own process); the peers
                     have no such hook, so theirs is the marginal cost: (N - N/10) requests
                     over t(N) - t(N/10), both whole-process runs

Runs are interleaved (raidlab, then the peer, case after case, repetition after
repetition) and each figure is the median of --reps (default 3). The ratio is the peer's
time over raidlab's (above 1: raidlab is faster).

The peers are built first by benches/peers/build.sh (cached in target/peers/; sources from
GitHub or from $RAIDLAB_PEERS_SRC); a peer that is not there leaves its columns empty
with a line saying why.

    python benches/bench_peers.py                      # N = 500,000, best of... median of 3
    python benches/bench_peers.py --ios 100000 --reps 1 --no-build
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent / "peers"
PEERS = Path(os.environ.get("RAIDLAB_PEERS_DIR", ROOT / "target" / "peers"))
QD = 32
# DiskSim's Barracuda: 4,110,000 512-byte blocks (2.1 GB).
BARRACUDA_BLOCKS = 4_110_000


def raidlab_cli() -> list[str]:
    """The `raidlab` console script next to this interpreter (the venv's), else PATH's."""
    script = Path(sys.executable).with_name("raidlab")
    if script.exists():
        return [str(script)]
    found = shutil.which("raidlab")
    if found:
        return [found]
    sys.exit("bench_peers: no `raidlab` command (run `make setup` first)")


@dataclass
class Time:
    """Wall-clock and CPU (user + system) seconds of one run."""

    wall: float
    cpu: float


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], cwd: Path | None = None) -> tuple[Time, str]:
    cpu = children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
    )
    wall = Time(time.perf_counter() - start, children_cpu() - cpu)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} exited {proc.returncode}: {(proc.stderr or proc.stdout)[-400:]}"
        )
    return wall, proc.stdout


# --- raidlab --------------------------------------------------------------------------


def raidlab_args(drive: str, ios: int) -> list[str]:
    return [
        "run",
        "--drive",
        drive,
        "--rw",
        "randread",
        "--bs",
        "4K",
        "--iodepth",
        str(QD),
        "--ios",
        str(ios),
        "--format",
        "json",
    ]


def sim_child(path: str) -> None:
    """Time raidlab._native.simulate alone on a scenario file; print ios and seconds."""
    from raidlab import _native

    text = Path(path).read_text()
    cpu = time.process_time()
    start = time.perf_counter()
    results = json.loads(_native.simulate(text))
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu
    ios = sum(op["ios"] for op in results["ops"].values())
    print(json.dumps({"ios": ios, "wall_s": wall, "cpu_s": cpu}))


def raidlab_sim_only(scenario_path: Path) -> Time:
    _, out = timed([sys.executable, __file__, "--sim-child", str(scenario_path)])
    child = json.loads(out.strip().splitlines()[-1])
    return Time(float(child["wall_s"]), float(child["cpu_s"]))


# --- MQSim ----------------------------------------------------------------------------

MQSIM_WORKLOAD = """<?xml version="1.0" encoding="us-ascii"?>
<MQSim_IO_Scenarios>
	<IO_Scenario>
		<IO_Flow_Parameter_Set_Synthetic>
			<Priority_Class>HIGH</Priority_Class>
			<Device_Level_Data_Caching_Mode>TURNED_OFF</Device_Level_Data_Caching_Mode>
			<Channel_IDs>0,1,2,3,4,5,6,7</Channel_IDs>
			<Chip_IDs>0</Chip_IDs>
			<Die_IDs>0,1</Die_IDs>
			<Plane_IDs>0,1</Plane_IDs>
			<Initial_Occupancy_Percentage>100</Initial_Occupancy_Percentage>
			<Working_Set_Percentage>100</Working_Set_Percentage>
			<Synthetic_Generator_Type>QUEUE_DEPTH</Synthetic_Generator_Type>
			<Read_Percentage>100</Read_Percentage>
			<Address_Distribution>RANDOM_UNIFORM</Address_Distribution>
			<Percentage_of_Hot_Region>0</Percentage_of_Hot_Region>
			<Generated_Aligned_Addresses>true</Generated_Aligned_Addresses>
			<Address_Alignment_Unit>8</Address_Alignment_Unit>
			<Request_Size_Distribution>FIXED</Request_Size_Distribution>
			<Average_Request_Size>8</Average_Request_Size>
			<Variance_Request_Size>0</Variance_Request_Size>
			<Seed>1</Seed>
			<Average_No_of_Reqs_in_Queue>{qd}</Average_No_of_Reqs_in_Queue>
			<Intensity>32768</Intensity>
			<Stop_Time>0</Stop_Time>
			<Total_Requests_To_Generate>{ios}</Total_Requests_To_Generate>
		</IO_Flow_Parameter_Set_Synthetic>
	</IO_Scenario>
</MQSim_IO_Scenarios>
"""


def mqsim_run(binary: Path, tmp: Path, ios: int) -> tuple[Time, int]:
    workload = tmp / f"mqsim-randread-{ios}.xml"
    workload.write_text(MQSIM_WORKLOAD.format(qd=QD, ios=ios))
    took, out = timed(
        [str(binary), "-i", str(HERE / "mqsim-sp900.xml"), "-w", str(workload)], cwd=tmp
    )
    served = re.search(r"total requests serviced:\s*(\d+)", out)
    return took, int(served.group(1)) if served else -1


# --- DiskSim --------------------------------------------------------------------------

DISKSIM_GENERATOR = """disksim_synthgen {{
   Storage capacity per device = {blocks},
   devices = [ disk0 ],
   Blocking factor = 8,
   Probability of sequential access = 0.0,
   Probability of local access = 0.0,
   Probability of read access = 1.0,
   Probability of time-critical request = 1.0,
   Probability of time-limited request = 0.0,
   Time-limited think times = [ normal, 30.0, 100.0 ],
   General inter-arrival times = [ exponential, 0.0, 0.0 ],
   Sequential inter-arrival times = [ normal, 0.0, 0.0 ],
   Local inter-arrival times = [ exponential, 0.0, 0.0 ],
   Local distances = [ normal, 0.0, 40000.0 ],
   Sizes = [ uniform, 8.0, 8.0 ]
}}"""


def disksim_setup(valid: Path, tmp: Path, ios: int) -> Path:
    """A parameter file for N closed-loop 4 KiB random reads at QD 32 on the Barracuda.

    DiskSim's shipped barracuda.parv, with: 32 processes each running one closed
    generator (a time-critical request, zero think time: one request outstanding per
    process, 32 in all); the disk's own queue raised from 1 to 32 commands and scheduled
    SPTF (policy 8, SPTF_OPT) as NCQ would; the run ends after N requests.
    """
    for name in ("barracuda.model", "barracuda.seek", "statdefs"):
        target = tmp / name
        if not target.exists():
            target.symlink_to(valid / name)
    specs = (valid / "barracuda.diskspecs").read_text()
    specs = re.sub(r"Max queue length = \d+", f"Max queue length = {QD}", specs)
    specs = re.sub(r"Scheduling policy = \d+", "Scheduling policy = 8", specs, count=1)
    (tmp / "barracuda-qd32.diskspecs").write_text(specs)
    parv = (valid / "barracuda.parv").read_text()
    parv = parv.replace("source barracuda.diskspecs", "source barracuda-qd32.diskspecs")
    parv = re.sub(r"Number of processors = +\d+", f"Number of processors = {QD}", parv)
    head = parv[: parv.index("disksim_synthio Synthio")]
    gens = ",\n".join(DISKSIM_GENERATOR.format(blocks=BARRACUDA_BLOCKS) for _ in range(QD))
    synthio = (
        "disksim_synthio Synthio {\n"
        f"   Number of I/O requests to generate = {ios},\n"
        "   Maximum time of trace generated = 1000000000000.0,\n"
        "   System call/return with each request = 0,\n"
        "   Think time from call to request = 0.0,\n"
        "   Think time from request to return = 0.0,\n"
        f"Generators = [\n{gens}\n]\n}}\n"
    )
    path = tmp / f"randread-qd32-{ios}.parv"
    path.write_text(head + synthio)
    return path


def disksim_run(binary: Path, tmp: Path, ios: int) -> tuple[Time, int]:
    parv = disksim_setup(binary.parent.parent / "valid", tmp, ios)
    outv = parv.with_suffix(".outv")
    took, _ = timed([str(binary), parv.name, outv.name, "ascii", "0", "1"], cwd=tmp)
    served = re.search(r"IOdriver Total Requests handled:\s*(\d+)", outv.read_text())
    return took, int(served.group(1)) if served else -1


# --- the table ------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    drive: str
    peer: str
    binary: Path
    run: Callable[[Path, Path, int], tuple[Time, int]]
    raidlab_whole: list[Time] = field(default_factory=list)
    raidlab_sim: list[Time] = field(default_factory=list)
    peer_whole: list[Time] = field(default_factory=list)
    peer_small: list[Time] = field(default_factory=list)
    served: int = 0


def median(times: list[Time]) -> Time:
    return Time(statistics.median(t.wall for t in times), statistics.median(t.cpu for t in times))


def marginal(big: list[Time], small: list[Time], ios: int, small_ios: int) -> Time | None:
    """The time of `ios` requests without start-up: (t(N) - t(N/10)) scaled to N."""
    scale = ios / (ios - small_ios)
    wall = statistics.median(b.wall - s.wall for b, s in zip(big, small, strict=True)) * scale
    cpu = statistics.median(b.cpu - s.cpu for b, s in zip(big, small, strict=True)) * scale
    return Time(wall, cpu) if wall > 0 and cpu > 0 else None


def row(label: str, peer_name: str, ours: Time, peer: Time | None, ios: int) -> str:
    def cell(value: float | None, fmt: str) -> str:
        return "-" if value is None else format(value, fmt)

    return (
        f"{label:34} {ours.wall:>9.2f} {ours.cpu:>8.2f} {peer_name:>10} "
        f"{cell(peer and peer.wall, '.2f'):>8} {cell(peer and peer.cpu, '.2f'):>8} "
        f"{cell(peer and peer.wall / ours.wall, '.1f'):>6} "
        f"{cell(peer and peer.cpu / ours.cpu, '.1f'):>6} "
        f"{ios / ours.wall:>14,.0f} {cell(peer and ios / peer.wall, ',.0f'):>12}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ios", type=int, default=500_000)
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions (median)")
    parser.add_argument("--no-build", action="store_true", help="do not run peers/build.sh")
    parser.add_argument("--sim-child", metavar="SCENARIO", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sim_child:
        sim_child(args.sim_child)
        return
    if not args.no_build:
        subprocess.run(["sh", str(HERE / "build.sh")], check=False)
    cases = [
        Case(
            "ssd 4K randread QD32",
            "adata-sp900-128g",
            "MQSim",
            PEERS / "mqsim" / "MQSim",
            mqsim_run,
        ),
        Case(
            "hdd 4K randread QD32",
            "hitachi-deskstar-250g",
            "DiskSim 4",
            PEERS / "disksim" / "src" / "disksim",
            disksim_run,
        ),
    ]
    for case in cases:
        if not case.binary.exists():
            print(
                f"bench_peers: {case.peer} not built ({case.binary} missing; "
                "see benches/peers/build.sh): its rows show raidlab alone"
            )
    cli = raidlab_cli()
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        # make setup installs with pip's --no-compile; without bytecode written on first
        # import, every `raidlab run` compiles pandas & co. again (4.2 s CPU, not 1.3 s).
        print(
            "bench_peers: PYTHONDONTWRITEBYTECODE is set: whole-process times include "
            "compiling the venv's modules unless `python -m compileall` was run on it"
        )
    small = max(1, args.ios // 10)
    with tempfile.TemporaryDirectory(prefix="raidlab-peers-") as tmpdir:
        tmp = Path(tmpdir)
        for _ in range(args.reps):
            for case in cases:
                took, out = timed(cli + raidlab_args(case.drive, args.ios))
                case.raidlab_whole.append(took)
                scenario = tmp / f"{case.drive}.json"
                scenario.write_text(json.dumps(json.loads(out)["scenario"]))
                case.raidlab_sim.append(raidlab_sim_only(scenario))
                if not case.binary.exists():
                    continue
                try:
                    took, case.served = case.run(case.binary, tmp, args.ios)
                    case.peer_whole.append(took)
                    case.peer_small.append(case.run(case.binary, tmp, small)[0])
                except (RuntimeError, OSError) as err:
                    print(f"bench_peers: {case.peer} failed, its rows left out: {err}")
                    case.binary = Path("/nonexistent")
                    case.peer_whole.clear()
    print(
        f"\n{args.ios:,} host I/Os per run; median of {args.reps} interleaved runs; "
        "ratio = peer time / raidlab time, wall clock and CPU (user + system)"
    )
    print(
        f"{'case':34} {'raidlab s':>9} {'CPU s':>8} {'peer':>10} {'peer s':>8} {'CPU s':>8} "
        f"{'ratio':>6} {'CPU':>6} {'raidlab I/O/s':>14} {'peer I/O/s':>12}"
    )
    for case in cases:
        whole = median(case.peer_whole) if case.peer_whole else None
        alone = marginal(case.peer_whole, case.peer_small, args.ios, small) if whole else None
        ours = median(case.raidlab_whole)
        print(row(f"{case.name}, whole process", case.peer, ours, whole, args.ios))
        ours = median(case.raidlab_sim)
        print(row(f"{case.name}, simulator only", case.peer, ours, alone, args.ios))
        # DiskSim stops generating at N and reports the requests completed by then.
        if case.peer_whole and not args.ios - QD <= case.served <= args.ios:
            print(f"  note: {case.peer} reported {case.served} requests served, not {args.ios}")


if __name__ == "__main__":
    main()
