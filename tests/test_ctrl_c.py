"""Ctrl-C and progress on long work: a long simulation or Monte Carlo run shows a bar
on a terminal once it has run a couple of seconds, and Ctrl-C stops it with one line,
`interrupted`, and status 130 (before, `run` ignored Ctrl-C for minutes).

Each command runs on a pseudo-terminal (its stderr), so the bar can show; SIGINT is
sent once the bar is there, i.e. while the work is under way, not while Python is
still importing.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

RAIDLAB = [sys.executable, "-m", "raidlab.cli"]

# Commands that run for minutes if nothing stops them, and the bar each shows.
LONG = {
    "run": (["run", "--drive", "adata-sp900-128g", "--ios", "1000000000"], "simulating"),
    # time_based: fio caps a job's I/O count (1,000,000 a section), not its runtime.
    "fio": (
        ["fio", "--drive", "adata-sp900-128g", "--name=j", "--rw=randread"]
        + ["--time_based", "--runtime=100000"],
        "simulating",
    ),
    "life": (["life", "--drive", "intel-dc-s3500-80g", "--ios", "1000000000"], "simulating"),
    "risk": (
        ["risk", "--drive", "seagate-exos-x18-18t", "--drives", "8", "--level", "6"]
        + ["--episodes", "10000000", "--rebuild-hours", "10"],
        "Monte Carlo",
    ),
}

# Seconds: how long the bar may take to show on a loaded machine, and how long the
# command may take to exit after Ctrl-C (a simulation sees it within 0.1 s; the rest
# is the interpreter's exit). Bounds on behaviour, not speed measurements.
BAR_WITHIN_S = 60
EXIT_WITHIN_S = 10


def _read_until(fd: int, marker: bytes, deadline: float) -> bytes:
    seen = b""
    while time.monotonic() < deadline and marker not in seen:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    return seen


@pytest.mark.parametrize("command", sorted(LONG))
def test_long_work_shows_a_bar_and_stops_on_ctrl_c(command: str, tmp_path: Path) -> None:
    args, bar = LONG[command]
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [*RAIDLAB, *args],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal,
        # As a shell's foreground job: SIGINT at its default, not ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    os.close(terminal)
    try:
        shown = _read_until(controller, bar.encode(), time.monotonic() + BAR_WITHIN_S)
        assert bar.encode() in shown, shown[-500:]
        assert process.poll() is None, "the command ended on its own"
        process.send_signal(signal.SIGINT)
        stdout, _ = process.communicate(timeout=EXIT_WITHIN_S)
        said = _read_until(controller, b"interrupted", time.monotonic() + 2)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
    assert process.returncode == 130
    lines = [line for line in said.decode(errors="replace").splitlines() if line.strip()]
    # The bar is transient (cleared); what stays is the one line.
    assert lines[-1].strip().endswith("interrupted"), said[-500:]
    assert b"Traceback" not in said
    assert stdout == b""


def test_without_a_terminal_no_bar_is_drawn(tmp_path: Path) -> None:
    # Piped stderr: the output is byte for byte what it was before bars existed.
    done = subprocess.run(
        [*RAIDLAB, "run", "--drive", "adata-sp900-128g", "--ios", "2000", "--format", "csv"],
        cwd=tmp_path,
        capture_output=True,
        check=True,
    )
    assert b"\x1b[" not in done.stderr
    assert b"simulating" not in done.stderr
