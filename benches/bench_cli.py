"""Command-line speed: start-up against its goals, and a sweep on one worker against two.

    python benches/bench_cli.py                  # best of 10 start-ups, best of 3 sweeps
    python benches/bench_cli.py --repeat 3 --sweep-repeat 0    # start-up alone

Start-up is the whole process of `raidlab --version` and of `raidlab run --ios 1`
(interpreter, imports, one simulated I/O, the table), each timed N times interleaved
(the machine's load hits both alike), best wall and CPU (user + system) time against
the goals; then the heavy modules each loads, and `-X importtime`'s slowest imports of
the run. The Python files are byte-compiled first, as `make setup` leaves them. The
sweep is a 306-point ATTO sweep (9 queue depths x 17 transfer sizes x write and read)
of 2 SSDs on 16 KiB strips, run with `--jobs 1` and `--jobs 2` interleaved, best of N
each; the two outputs must be byte-identical.
"""

from __future__ import annotations

import argparse
import ast
import compileall
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

RAIDLAB = shutil.which("raidlab", path=os.path.dirname(sys.executable)) or "raidlab"
RUN_ONCE = [RAIDLAB, "run", "--drive", "adata-sp900-128g", "--ios", "1"]
# What each start-up may take, whole process, on a quiet 2-core machine (issue 36).
STARTUPS = {
    "raidlab --version": ([RAIDLAB, "--version"], 0.10),
    "raidlab run --ios 1": (RUN_ONCE, 0.15),
}
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
HEAVY_MODULES = ("typer", "click", "rich", "numpy", "pandas", "matplotlib", "multiprocessing")


def timed(command: list[str]) -> tuple[float, float, str]:
    """Wall and CPU (user + system) seconds of ``command``, and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, out


def best_startups(repeat: int) -> dict[str, tuple[float, float]]:
    """Best wall and best CPU seconds of each start-up, the commands interleaved."""
    best: dict[str, tuple[float, float]] = {}
    for _ in range(repeat):
        for name, (command, _goal) in STARTUPS.items():
            wall, cpu, _out = timed(command)
            old_wall, old_cpu = best.get(name, (wall, cpu))
            best[name] = (min(wall, old_wall), min(cpu, old_cpu))
    return best


def _probe(argv: list[str]) -> str:
    """Python that runs ``raidlab ARGV`` in-process as the console script does."""
    return (
        "import sys; from raidlab.cli import main; "
        f"sys.argv = {argv!r}\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
    )


def loaded_heavy_modules(argv: list[str]) -> list[str]:
    """The heavy modules ``raidlab ARGV`` loads."""
    probe = _probe(argv) + (
        f"print('LOADED', [m for m in {HEAVY_MODULES!r} if m in sys.modules], file=sys.stderr)"
    )
    err = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stderr
    line = next(line for line in err.splitlines() if line.startswith("LOADED"))
    return ast.literal_eval(line.removeprefix("LOADED "))


def slowest_imports(argv: list[str], count: int) -> list[tuple[int, str]]:
    """The ``count`` top-level imports of ``raidlab ARGV`` with the largest cumulative
    time (what the command's own module pulls in shows under it)."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _probe(argv)],
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
        # Two spaces of indentation per level: depth 0 is imported by the probe itself.
        if not name.startswith(" "):
            rows.append((int(fields[1]), name))
    return sorted(rows, reverse=True)[:count]


def report_startup(repeat: int) -> None:
    import raidlab

    # As `make setup` leaves them: byte-compiled (PYTHONDONTWRITEBYTECODE would have
    # every process compile the package again).
    compileall.compile_dir(Path(raidlab.__file__).parent, quiet=1)
    for command, _goal in STARTUPS.values():
        timed(command)  # warm the page cache
    best = best_startups(repeat)
    for name, (wall, cpu) in best.items():
        goal = STARTUPS[name][1]
        verdict = "met" if wall <= goal else "NOT met"
        print(
            f"start-up, `{name}`, best of {repeat}: {wall:.3f} s wall, {cpu:.3f} s CPU; "
            f"goal <= {goal:.2f} s: {verdict}"
        )
    for name, (command, _goal) in STARTUPS.items():
        print(f"heavy modules loaded by `{name}`: {loaded_heavy_modules(command) or 'none'}")
    print("slowest imports of `raidlab run --ios 1` (cumulative):")
    for cumulative_us, name in slowest_imports(RUN_ONCE, 8):
        print(f"  {cumulative_us / 1000:8.1f} ms  {name}")


def report_sweep(repeat: int) -> None:
    best: dict[int, float] = {}
    outputs: dict[int, str] = {}
    for _ in range(repeat):
        for jobs in (1, 2):  # interleaved: the machine's load hits both alike
            wall, _cpu, out = timed([*SWEEP, "--jobs", str(jobs)])
            best[jobs] = min(best.get(jobs, wall), wall)
            outputs[jobs] = out
    points = len(outputs[1].splitlines()) - 1
    identical = outputs[1] == outputs[2]
    print(
        f"ATTO sweep of {points} points: --jobs 1 {best[1]:.2f} s, --jobs 2 {best[2]:.2f} s, "
        f"speed-up {best[1] / best[2]:.2f}x (best of {repeat}); "
        f"outputs identical: {identical}"
    )
    if not identical:
        sys.exit("the sweep's output depends on the worker count")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="start-ups timed (best of)")
    parser.add_argument(
        "--sweep-repeat", type=int, default=3, help="sweeps per job count (0: no sweep)"
    )
    args = parser.parse_args()
    report_startup(args.repeat)
    if args.sweep_repeat > 0:
        report_sweep(args.sweep_repeat)


if __name__ == "__main__":
    main()
