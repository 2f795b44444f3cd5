"""A 1,000-point sweep: inline, on 2 local worker processes, and on a local Dask cluster
of 2 workers (a real `dask scheduler` and two `dask worker` processes on 127.0.0.1).

    python benches/bench_sweep.py              # 1,000 points of 2,000 I/Os, best of 2
    python benches/bench_sweep.py --ios 500 --repeat 1

Overhead per point is (wall time x workers - the inline wall time) / points: what a
point costs beyond its simulation when it goes through a pool or a cluster. The three
CSVs must be byte-identical. Skips the cluster when Dask is not installed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SWEEP = """
seed = 1

[array]
drive = "intel-dc-s3500-80g"
controller = "linux-md"

[workload]
rw = "randread"
bs = "4K"
ios = {ios}

[grid]
"array.level" = [0, 1, 5, 6, 10]
"array.drives" = [4, 6, 8, 10, 12]
"array.stripe_unit" = ["16K", "64K", "256K", "1M"]
"workload.iodepth" = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
"""
POINTS = 5 * 5 * 4 * 10


def sweep(path: Path, out: Path, *extra: str) -> float:
    for suffix in (".csv", ".parquet"):
        out.with_name(out.name + suffix).unlink(missing_ok=True)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "raidlab.cli", "sweep", str(path), "--out", str(out), *extra],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def start_cluster(directory: Path) -> tuple[str, list[subprocess.Popen[bytes]]]:
    file = directory / "scheduler.json"
    common = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": directory}
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(file)],
            start_new_session=True, **common,
        )
    ]  # fmt: skip
    deadline = time.monotonic() + 120
    while not file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)
    address = json.loads(file.read_text())["address"]
    for _ in range(2):
        processes.append(
            subprocess.Popen(
                [sys.executable, "-m", "dask", "worker", address, "--nthreads", "1",
                 "--nworkers", "1", "--no-dashboard", "--host", "127.0.0.1"],
                start_new_session=True, **common,
            )
        )  # fmt: skip
    from distributed import Client

    with Client(address, timeout=60) as client:
        client.wait_for_workers(2, timeout=120)
    return address, processes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ios", type=int, default=2_000, help="measured I/Os per point")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each (best of)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        path = directory / "sweep.toml"
        path.write_text(SWEEP.format(ios=args.ios))
        processes: list[subprocess.Popen[bytes]] = []
        modes = {"inline (--jobs 1)": ["--jobs", "1"], "2 local processes": ["--jobs", "2"]}
        try:
            if shutil.which("dask", path=os.path.dirname(sys.executable)):
                address, processes = start_cluster(directory)
                modes["local Dask cluster, 2 workers"] = ["--cluster", address]
            else:
                print("Dask is not installed (pip install 'raidlab[cluster]'): no cluster row")
            best: dict[str, float] = {}
            for _ in range(args.repeat):  # interleaved
                for index, (mode, flags) in enumerate(modes.items()):
                    wall = sweep(path, directory / f"out{index}", *flags)
                    best[mode] = min(best.get(mode, wall), wall)
        finally:
            for process in processes:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        csvs = {(directory / f"out{i}.csv").read_bytes() for i in range(len(modes))}
    inline = best["inline (--jobs 1)"]
    print(f"sweep of {POINTS} points, {args.ios} I/Os each, best of {args.repeat}:")
    for mode, wall in best.items():
        workers = 1 if mode.startswith("inline") else 2
        overhead_ms = (wall * workers - inline) / POINTS * 1000
        print(
            f"  {mode:32} {wall:8.2f} s  {inline / wall:5.2f}x inline  "
            f"overhead {overhead_ms:6.2f} ms per point"
        )
    print(f"  outputs identical: {len(csvs) == 1}")
    if len(csvs) != 1:
        sys.exit("the sweep's output depends on where it ran")


if __name__ == "__main__":
    main()
