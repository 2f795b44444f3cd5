"""Command-line speed: start-up of one run, and a sweep on one worker against two.

    python benches/bench_cli.py                  # best of 5 start-ups, best of 3 sweeps
    python benches/bench_cli.py --repeat 3 --sweep-repeat 1

Start-up is the whole process of `raidlab run --ios 1` (interpreter, imports, one
simulated I/O, the table), the modules that load with it, and `-X importtime`'s
slowest imports. The sweep is a 306-point ATTO sweep (9 queue depths x 17 transfer
sizes x write and read) of 2 SSDs on 16 KiB strips, run with `--jobs 1` and
`--jobs 2` interleaved, best of N each; the two outputs must be byte-identical.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import time

RAIDLAB = shutil.which("raidlab", path=os.path.dirname(sys.executable)) or "raidlab"
RUN_ONCE = [RAIDLAB, "run", "--drive", "adata-sp900-128g", "--ios", "1"]
SWEEP = [
    RAIDLAB,
    "atto",
    "--drive",
    "adata-sp900-128g",
    "--controller",
    "intel-h97-rst",
    "--drives",
    "2",
    "--stripe-unit",
    "16K",
    "--qd",
    "1..256",
    "--sizes",
    "512..32M",
    "--length",
    "32G",
    "--format",
    "csv",
]
HEAVY_MODULES = ("pandas", "numpy", "matplotlib")


def timed(command: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - start, out


def loaded_heavy_modules() -> list[str]:
    """The heavy modules a `raidlab run` loads (none, when start-up is lazy)."""
    probe = (
        "import sys; from raidlab.cli import main; "
        f"sys.argv = {RUN_ONCE!r}\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print('LOADED', [m for m in {HEAVY_MODULES!r} if m in sys.modules], file=sys.stderr)"
    )
    err = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stderr
    line = next(line for line in err.splitlines() if line.startswith("LOADED"))
    return ast.literal_eval(line.removeprefix("LOADED "))


def slowest_imports(count: int) -> list[tuple[int, str]]:
    """The ``count`` direct imports of raidlab.cli with the largest cumulative time."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import raidlab.cli"],
        check=True,
        capture_output=True,
        text=True,
    ).stderr
    rows = []
    for line in err.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if not line.startswith("import time:") or len(fields) != 3 or "cumulative" in line:
            continue
        name = fields[2].rstrip().removeprefix(" ")
        # Two spaces of indentation per level: depth 1 is what raidlab.cli imports.
        if (len(name) - len(name.lstrip())) // 2 == 1:
            rows.append((int(fields[1]), name.strip()))
    return sorted(rows, reverse=True)[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="start-ups timed (best of)")
    parser.add_argument("--sweep-repeat", type=int, default=3, help="sweeps per job count")
    args = parser.parse_args()

    startup = min(timed(RUN_ONCE)[0] for _ in range(args.repeat))
    print(f"start-up, `raidlab run --ios 1`, best of {args.repeat}: {startup:.3f} s")
    print(f"heavy modules loaded by it: {loaded_heavy_modules() or 'none'}")
    print("slowest imports of raidlab.cli (cumulative):")
    for cumulative_us, name in slowest_imports(6):
        print(f"  {cumulative_us / 1000:8.1f} ms  {name}")

    best: dict[int, float] = {}
    outputs: dict[int, str] = {}
    for _ in range(args.sweep_repeat):
        for jobs in (1, 2):  # interleaved: the machine's load hits both alike
            wall, out = timed([*SWEEP, "--jobs", str(jobs)])
            best[jobs] = min(best.get(jobs, wall), wall)
            outputs[jobs] = out
    points = len(outputs[1].splitlines()) - 1
    identical = outputs[1] == outputs[2]
    print(
        f"ATTO sweep of {points} points: --jobs 1 {best[1]:.2f} s, --jobs 2 {best[2]:.2f} s, "
        f"speed-up {best[1] / best[2]:.2f}x (best of {args.sweep_repeat}); "
        f"outputs identical: {identical}"
    )
    if not identical:
        sys.exit("the sweep's output depends on the worker count")


if __name__ == "__main__":
    main()
