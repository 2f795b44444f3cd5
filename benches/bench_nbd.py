"""NBD server speed: raidlab-engine against qemu-nbd and nbdkit, all on tmpfs.

fio's nbd engine (libnbd) drives each export over loopback TCP with the same jobs:

    4 KiB randread  QD 16    4 KiB randwrite  QD 16    1 MiB sequential read  QD 4

Targets, every export 1 GiB of backing files in /dev/shm (RAM, so the numbers measure
the server's CPU path, not a disk):

    raidlab RAID 0 of 2 files   raidlab RAID 5 of 4 files (chunk 64 KiB), without and
    with its write journal; RAID 0 again serving one request of a connection at a time
    (--requests-in-flight 1), and with 2 ms injected into every member I/O (a disk's
    service time) with 8 and with 1 request in flight
    qemu-nbd on one file        nbdkit file plugin on the same file (if installed)

Then the cost of closing the RAID 5 write hole: the RAID 5 of 4 under each
--consistency-policy that changes the write path (bitmap; journal; ppl, md's partial
parity log and RAID 5's default, which the RAID 5 rows above therefore run) with RAID 5
writes, best of --rounds runs each:

    4 KiB randwrite  QD 16    1 MiB sequential write  QD 4

Then the cost of per-block checksums (--integrity-only, or after the policies): the RAID 5
of 4 under the bitmap policy without and with `--integrity crc32c`, best of --rounds:

    4 KiB randread  QD 16    4 KiB randwrite  QD 16    1 MiB sequential read  QD 4
    1 MiB sequential write  QD 4

Each export is first filled with 1 MiB sequential writes, so reads do not hit holes.
Servers listen on 127.0.0.1 only; all are stopped and the files removed at the end.

    python benches/bench_nbd.py                 # 5 s per job
    python benches/bench_nbd.py --runtime 10 --engine target/release/raidlab-engine
    python benches/bench_nbd.py --integrity-only --runtime 3   # the checksums' cost
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

EXPORT_BYTES = 1 << 30
MIB = 1 << 20
# Every member file keeps 1 MiB for the superblock (see the engine README), so each
# member is sized to hold its share of EXPORT_BYTES plus that.
RAID0_MEMBERS = 2
RAID5_MEMBERS = 4
SERVER_START_S_MAX = 15.0
CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class Job:
    """One fio workload; fields keep fio's option names."""

    name: str
    rw: str
    bs: str
    iodepth: int


JOBS = [
    Job("4k-randread-qd16", "randread", "4k", 16),
    Job("4k-randwrite-qd16", "randwrite", "4k", 16),
    Job("1m-seqread-qd4", "read", "1m", 4),
]
# RAID 5 writes under each consistency policy (the journal's and ppl's cost).
POLICY_JOBS = [
    Job("4k-randwrite-qd16", "randwrite", "4k", 16),
    Job("1m-seqwrite-qd4", "write", "1m", 4),
]
POLICIES = ["bitmap", "journal", "ppl"]
# Reads and writes without and with per-block checksums.
INTEGRITY_JOBS = [*JOBS, Job("1m-seqwrite-qd4", "write", "1m", 4)]
INTEGRITY = ["none", "crc32c"]


@dataclass
class Result:
    iops: float
    mb_per_s: float


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes], what: str) -> None:
    t0 = time.monotonic()
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if time.monotonic() - t0 > SERVER_START_S_MAX:
                raise RuntimeError(f"{what} did not listen on port {port}") from None
            time.sleep(0.05)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def fio(uri: str, job: Job, runtime_s: int, time_based: bool = True) -> Result:
    args = [
        "fio",
        "--output-format=json",
        f"--name={job.name}",
        "--ioengine=nbd",
        f"--uri={uri}",
        f"--rw={job.rw}",
        f"--bs={job.bs}",
        f"--iodepth={job.iodepth}",
        f"--size={EXPORT_BYTES}",
        "--randrepeat=1",
        "--norandommap",
    ]
    if time_based:
        args += [f"--runtime={runtime_s}", "--time_based"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    # fio may print notes before the JSON object.
    data = json.loads(out[out.index("{") :])
    j = data["jobs"][0]
    side = j["write"] if job.rw.endswith("write") else j["read"]
    return Result(iops=float(side["iops"]), mb_per_s=float(side["bw_bytes"]) / 1e6)


def start_raidlab(
    engine: str,
    workdir: Path,
    level: int,
    members: int,
    journal: bool = False,
    in_flight: int | None = None,
    latency: str | None = None,
    policy: str | None = None,
    integrity: str | None = None,
) -> subprocess.Popen[bytes]:
    """A served array; ``in_flight``: requests of a connection served at once;
    ``latency``: injected into every member I/O (a disk's service time); ``policy``:
    its --consistency-policy (``journal`` gives it a journal file)."""
    journal = journal or policy == "journal"
    data_members = members - 1 if level == 5 else members
    # Round each member's share up to whole chunks so the export holds EXPORT_BYTES.
    data_per_member = -(-EXPORT_BYTES // (data_members * CHUNK_BYTES)) * CHUNK_BYTES
    integrity_args = [] if integrity is None else ["--integrity", integrity]
    if integrity not in (None, "none"):
        # Room for the checksum area after the data (4 B per 4 KiB block), and the
        # rounding of the data to 4 KiB and to whole chunks.
        data_per_member += data_per_member // 1024 + CHUNK_BYTES + 4096
    tag = f"r{level}{'j' if journal else ''}-{in_flight}-{latency}-{policy}-{integrity}"
    files = [str(workdir / f"{tag}-{i}.img") for i in range(members)]
    # The journal file is sparse: only the records written take memory.
    journal_args = ["--journal", str(workdir / f"{tag}-journal.img")] if journal else []
    policy_args = ["--consistency-policy", policy] if policy is not None else []
    subprocess.run(
        [engine, "create", "--level", str(level), "--chunk", str(CHUNK_BYTES),
         "--size", str(data_per_member + MIB), *journal_args, *policy_args,
         *integrity_args, *files],
        check=True, capture_output=True,
    )  # fmt: skip
    port = free_port()
    in_flight_args = [] if in_flight is None else ["--requests-in-flight", str(in_flight)]
    proc = subprocess.Popen(
        [engine, "serve", "--listen", f"127.0.0.1:{port}", *in_flight_args, *journal_args,
         *files],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    proc.port = port  # type: ignore[attr-defined]
    wait_listening(port, proc, f"raidlab-engine RAID {level}")
    # Injected once the export is filled (main runs these after the fill).
    proc.after_fill = [  # type: ignore[attr-defined]
        [engine, "inject", member, "--latency", latency]
        for member in (files if latency is not None else [])
    ]
    return proc


def start_qemu_nbd(path: Path) -> subprocess.Popen[bytes]:
    port = free_port()
    proc = subprocess.Popen(
        ["qemu-nbd", "-f", "raw", "-t", "-x", "", "--bind", "127.0.0.1",
         "--port", str(port), str(path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    proc.port = port  # type: ignore[attr-defined]
    wait_listening(port, proc, "qemu-nbd")
    return proc


def start_nbdkit(path: Path) -> subprocess.Popen[bytes]:
    port = free_port()
    proc = subprocess.Popen(
        ["nbdkit", "-f", "-i", "127.0.0.1", "-p", str(port), "file", f"file={path}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    proc.port = port  # type: ignore[attr-defined]
    wait_listening(port, proc, "nbdkit")
    return proc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtime", type=int, default=5, help="seconds per fio job")
    ap.add_argument("--engine", default="target/release/raidlab-engine")
    ap.add_argument("--dir", default="/dev/shm", help="where the backing files go")
    ap.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="runs per consistency-policy job, the best kept (0: skip them)",
    )
    ap.add_argument(
        "--policies-only",
        action="store_true",
        help="only the consistency-policy table (no qemu-nbd reference)",
    )
    ap.add_argument(
        "--integrity-only",
        action="store_true",
        help="only the table of RAID 5 without and with --integrity crc32c",
    )
    args = ap.parse_args()
    if not 1 <= args.runtime <= 600:
        ap.error("--runtime must be 1..600 s")
    if not 0 <= args.rounds <= 20:
        ap.error("--rounds must be 0..20")
    for tool in ("fio", "qemu-nbd"):
        if shutil.which(tool) is None:
            print(f"error: {tool} not installed (apt-get install fio qemu-utils)")
            return 2
    if not Path(args.engine).exists():
        subprocess.run(["cargo", "build", "--release", "-p", "raidlab-engine"], check=True)

    workdir = Path(tempfile.mkdtemp(prefix="raidlab-bench-nbd-", dir=args.dir))
    single = workdir / "single.img"
    with open(single, "wb") as f:
        f.truncate(EXPORT_BYTES)
    targets: list[tuple[str, Callable[[], subprocess.Popen[bytes]]]] = [
        ("qemu-nbd 1 file", lambda: start_qemu_nbd(single)),
        ("raidlab RAID0x2", lambda: start_raidlab(args.engine, workdir, 0, RAID0_MEMBERS)),
        ("raidlab RAID5x4", lambda: start_raidlab(args.engine, workdir, 5, RAID5_MEMBERS)),
        ("raidlab RAID5x4+journal",
         lambda: start_raidlab(args.engine, workdir, 5, RAID5_MEMBERS, journal=True)),
        # One request of a connection at a time: the least CPU per request on tmpfs.
        ("raidlab RAID0x2 1 in flight",
         lambda: start_raidlab(args.engine, workdir, 0, RAID0_MEMBERS, in_flight=1)),
        # Members that take 2 ms per I/O, like disks: requests in flight overlap.
        ("raidlab RAID0x2 2ms members",
         lambda: start_raidlab(args.engine, workdir, 0, RAID0_MEMBERS, latency="2ms")),
        ("raidlab RAID0x2 2ms members 1 in flight",
         lambda: start_raidlab(args.engine, workdir, 0, RAID0_MEMBERS, in_flight=1,
                               latency="2ms")),
    ]  # fmt: skip
    if shutil.which("nbdkit"):
        targets.append(("nbdkit file 1 file", lambda: start_nbdkit(single)))
    else:
        print("note: nbdkit not installed, skipping it (apt-get install nbdkit)")

    results: dict[str, dict[str, Result]] = {}
    if args.policies_only or args.integrity_only:
        targets = []
    policy_results: dict[str, dict[str, Result]] = {}
    integrity_results: dict[str, dict[str, Result]] = {}
    try:
        for name, start in targets:
            proc = start()
            try:
                uri = f"nbd://127.0.0.1:{proc.port}"  # type: ignore[attr-defined]
                fio(uri, Job("fill", "write", "1m", 4), 0, time_based=False)
                for command in getattr(proc, "after_fill", []):
                    subprocess.run(command, check=True, capture_output=True)
                results[name] = {}
                for job in JOBS:
                    r = fio(uri, job, args.runtime)
                    results[name][job.name] = r
                    print(f"{name:24} {job.name:18} {r.iops:>10.0f} IOPS {r.mb_per_s:>9.1f} MB/s",
                          file=sys.stderr)  # fmt: skip
            finally:
                stop(proc)
        if not args.integrity_only:
            policy_results = bench_policies(args.engine, workdir, args.runtime, args.rounds)
        if not args.policies_only:
            integrity_results = bench_integrity(args.engine, workdir, args.runtime, args.rounds)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"\nfio ioengine=nbd, {args.runtime} s per job, files in {args.dir}, "
          f"{os.cpu_count()} CPUs (client and server share them)\n")  # fmt: skip
    if results:
        print("| target | job | IOPS | MB/s | vs qemu-nbd |\n|---|---|---:|---:|---:|")
    for name, per_job in results.items():
        base = results["qemu-nbd 1 file"]
        for job in JOBS:
            r = per_job[job.name]
            ratio = r.iops / base[job.name].iops if base[job.name].iops else float("nan")
            print(f"| {name} | {job.name} | {r.iops:.0f} | {r.mb_per_s:.1f} | {ratio:.2f}x |")
    if policy_results:
        print(f"\nRAID 5 of 4 writes by --consistency-policy, best of {args.rounds}\n")
        print_by_variant(policy_results, "policy", "bitmap", POLICY_JOBS)
    if integrity_results:
        print(f"\nRAID 5 of 4 (bitmap policy) by --integrity, best of {args.rounds}\n")
        print_by_variant(integrity_results, "integrity", "none", INTEGRITY_JOBS)
    return 0


def print_by_variant(
    results: dict[str, dict[str, Result]], column: str, base: str, jobs: list[Job]
) -> None:
    """A markdown table of one array under each variant (a policy, a checksum
    setting), every job against the ``base`` variant's run of it."""
    print(f"| {column} | job | IOPS | MB/s | vs {base} |\n|---|---|---:|---:|---:|")
    for job in jobs:
        base_r = results[base][job.name]
        for variant, per_job in results.items():
            r = per_job[job.name]
            ratio = r.iops / base_r.iops if base_r.iops else float("nan")
            print(f"| {variant} | {job.name} | {r.iops:.0f} | {r.mb_per_s:.1f} | {ratio:.2f}x |")


def bench_alternating(
    procs: dict[str, subprocess.Popen[bytes]], jobs: list[Job], runtime_s: int, rounds: int,
    label: str,
) -> dict[str, dict[str, Result]]:
    """Every served array filled once, then ``rounds`` rounds of every job, the arrays
    alternated within a round (so a slow spell of the shared machine hits all of them);
    the best run of each kept. Stops the servers."""
    best: dict[str, dict[str, Result]] = {name: {} for name in procs}
    try:
        for proc in procs.values():
            uri = f"nbd://127.0.0.1:{proc.port}"  # type: ignore[attr-defined]
            fio(uri, Job("fill", "write", "1m", 4), 0, time_based=False)
        for _ in range(rounds):
            for job in jobs:
                for name, proc in procs.items():
                    uri = f"nbd://127.0.0.1:{proc.port}"  # type: ignore[attr-defined]
                    r = fio(uri, job, runtime_s)
                    print(f"RAID5x4 {label}{name:8} {job.name:18} {r.iops:>10.0f} IOPS "
                          f"{r.mb_per_s:>9.1f} MB/s", file=sys.stderr)  # fmt: skip
                    if job.name not in best[name] or r.iops > best[name][job.name].iops:
                        best[name][job.name] = r
    finally:
        for proc in procs.values():
            stop(proc)
    return best


def bench_integrity(
    engine: str, workdir: Path, runtime_s: int, rounds: int
) -> dict[str, dict[str, Result]]:
    """RAID 5 reads and writes without and with per-block checksums (the bitmap
    policy), alternated as ``bench_policies`` alternates the policies."""
    if rounds == 0:
        return {}
    procs = {
        i: start_raidlab(engine, workdir, 5, RAID5_MEMBERS, policy="bitmap", integrity=i)
        for i in INTEGRITY
    }
    return bench_alternating(procs, INTEGRITY_JOBS, runtime_s, rounds, "integrity ")


def bench_policies(
    engine: str, workdir: Path, runtime_s: int, rounds: int
) -> dict[str, dict[str, Result]]:
    """RAID 5 writes under each consistency policy, one array per policy."""
    if rounds == 0:
        return {}
    procs = {p: start_raidlab(engine, workdir, 5, RAID5_MEMBERS, policy=p) for p in POLICIES}
    return bench_alternating(procs, POLICY_JOBS, runtime_s, rounds, "")


if __name__ == "__main__":
    sys.exit(main())
