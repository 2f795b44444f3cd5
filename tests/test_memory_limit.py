"""The simulator's memory is bounded by what the scenario needs, and a run whose I/Os
in flight cannot fit is refused before it starts (one line naming the flags, status 2).
Before, `--numjobs 1024 --iodepth 65536` (both within their bounds) grew past 7 GB
with nothing printed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from raidlab import _native
from raidlab.api import resolve_array
from raidlab.scenario.array import build_scenario
from raidlab.scenario.native import MEMORY_LIMIT_DEFAULT
from raidlab.scenario.workloads import WorkloadRequest, build_workload

RAIDLAB = [sys.executable, "-m", "raidlab.cli"]
SSD = ["--drive", "adata-sp900-128g"]


def _raidlab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RAIDLAB, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _needed(numjobs: int, iodepth: int) -> int:
    array = resolve_array(drive="adata-sp900-128g")
    request = WorkloadRequest(numjobs=numjobs, iodepth=iodepth, ios=1000)
    scenario = build_scenario(array, build_workload(request, array), 1)
    return int(_native.memory_needed(json.dumps(scenario)))


def test_the_memory_needed_is_linear_in_the_ios_in_flight() -> None:
    one = _needed(1, 1)
    assert one > 0
    assert _needed(4, 8) == 32 * one
    assert _needed(1024, 65536) == 1024 * 65536 * one
    assert _needed(1024, 65536) > MEMORY_LIMIT_DEFAULT


def test_a_run_that_cannot_fit_is_one_line_naming_the_flags(tmp_path: Path) -> None:
    done = _raidlab(
        "run", *SSD, "--numjobs", "1024", "--iodepth", "65536", "--ios", "1000", cwd=tmp_path
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: --numjobs x --iodepth: the I/Os in flight need at least ")
    assert "--memory-limit" in lines[0]


@pytest.mark.parametrize(
    ("limit", "runs"),
    [("1M", False), ("64M", True)],
)
def test_memory_limit_sets_the_bound(tmp_path: Path, limit: str, runs: bool) -> None:
    # 16 x 1,024 I/Os in flight: a few MB.
    args = ["run", *SSD, "--numjobs", "16", "--iodepth", "1024", "--ios", "2000"]
    done = _raidlab(*args, "--memory-limit", limit, "--format", "csv", cwd=tmp_path)
    if runs:
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("op,")
    else:
        assert done.returncode == 2
        assert "above the memory limit of 1.0 MiB" in done.stderr


@pytest.mark.parametrize("value", ["lots", "-1", ""])
def test_a_bad_memory_limit_is_refused(tmp_path: Path, value: str) -> None:
    done = _raidlab("run", *SSD, "--memory-limit", value, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("error: --memory-limit: "), done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_fio_jobs_are_bounded_too(tmp_path: Path) -> None:
    job = tmp_path / "huge.fio"
    job.write_text("[huge]\nrw=randread\nnumjobs=1024\niodepth=65536\nnumber_ios=1000\n")
    done = _raidlab("fio", *SSD, str(job), cwd=tmp_path)
    assert done.returncode == 2
    assert "need at least" in done.stderr and "simulator memory" in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
