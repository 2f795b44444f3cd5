"""`raidlab sweep`: a grid over scenario fields to CSV and Parquet, resumable, and the
same bytes on a real Dask cluster (a scheduler and two workers on 127.0.0.1) as on
local processes, even when a worker is killed mid-sweep."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

SWEEP = """
seed = 3

[array]
drive = "intel-dc-s3500-80g"
controller = "linux-md"
stripe_unit = "64K"

[workload]
rw = "randwrite"
bs = "4K"
ios = {ios}

[grid]
"array.level" = [0, 5]
"array.drives" = [4, 6]
"workload.iodepth" = [{depths}]
"""


def _write(tmp_path: Path, ios: int = 400, depths: str = "1, 8", name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(SWEEP.format(ios=ios, depths=depths))
    return path


def _raidlab(*args: str, env: dict[str, str] | None = None, timeout: float = 600):
    return subprocess.run(
        [sys.executable, "-m", "raidlab.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_a_grid_runs_every_combination_in_order_to_csv_and_parquet(tmp_path: Path) -> None:
    done = _raidlab("sweep", str(_write(tmp_path)), "--out", str(tmp_path / "r"), "--jobs", "2")
    assert done.returncode == 0, done.stderr
    frame = pd.read_csv(tmp_path / "r.csv")
    assert list(frame["point"]) == list(range(8))
    # The first key varies slowest, as written.
    assert list(frame["array.level"]) == [0, 0, 0, 0, 5, 5, 5, 5]
    assert list(frame["workload.iodepth"]) == [1, 8] * 4
    assert frame["key"].is_unique
    assert (frame["write_iops"] > 0).all() and (frame["iops"] == frame["write_iops"]).all()
    # RAID 5 small writes cost 4 member I/Os each; RAID 0's one.
    assert set(frame.loc[frame["array.level"] == 0, "write_member_ios_per_host_io"]) == {1.0}
    assert (frame.loc[frame["array.level"] == 5, "write_member_ios_per_host_io"] > 3.5).all()
    parquet = pd.read_parquet(tmp_path / "r.parquet")
    pd.testing.assert_frame_equal(parquet, frame, check_dtype=False)


def test_a_stopped_sweep_resumes_and_ends_with_the_same_bytes(tmp_path: Path) -> None:
    sweep = _write(tmp_path)
    whole = _raidlab("sweep", str(sweep), "--out", str(tmp_path / "whole"), "--jobs", "1")
    assert whole.returncode == 0, whole.stderr
    expected = (tmp_path / "whole.csv").read_bytes()
    # An interrupted run: three rows saved out of order, a fourth cut short.
    lines = expected.decode().splitlines(keepends=True)
    partial = lines[0] + lines[6] + lines[2] + lines[4] + lines[5][:20]
    (tmp_path / "part.csv").write_text(partial)
    resumed = _raidlab("sweep", str(sweep), "--out", str(tmp_path / "part"), "--jobs", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert "3 of 8 points already in" in resumed.stderr
    assert (tmp_path / "part.csv").read_bytes() == expected
    # Nothing left to run: a third run changes nothing.
    again = _raidlab("sweep", str(sweep), "--out", str(tmp_path / "part"), "--jobs", "1")
    assert "8 of 8 points already in" in again.stderr
    assert (tmp_path / "part.csv").read_bytes() == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[grid]\n'array.level' = [0]\n[oops]\n", "error: {path}: oops: unknown key"),
        ("[array]\ndrive = 'adata-sp900-128g'\n[grid]\n'array.level' = 5\n", "grid.array.level"),
        (
            "[array]\ndrive = 'adata-sp900-128g'\n[grid]\n'array.level' = [0, 3]\n",
            "point 1 (array.level=3)",
        ),
        ("[array]\ndrive = 'adata-sp900-128g'\n", "give a [grid] of values or a list"),
        (
            "[array]\ndrive = 'adata-sp900-128g'\n[grid]\n'workload.colour' = [1]\n",
            "workload.colour: unknown key",
        ),
        ("[array]\ndrive = 'adata-sp900-128g'\n[grid]\n'level' = [1]\n", "a key of the base"),
    ],
)
def test_bad_sweep_files_get_one_line_naming_the_point_and_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    done = _raidlab("sweep", str(path), "--out", str(tmp_path / "r"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert expected.format(path=path) in lines[0]
    assert not (tmp_path / "r.csv").exists()


def test_cluster_and_jobs_together_are_refused(tmp_path: Path) -> None:
    done = _raidlab(
        "sweep", str(_write(tmp_path)), "--cluster", "tcp://127.0.0.1:1", "--jobs", "2"
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: --jobs: ")


def test_a_cluster_nobody_runs_is_one_line_not_a_hang(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    started = time.monotonic()
    done = _raidlab(
        "sweep", str(_write(tmp_path)), "--out", str(tmp_path / "r"), "--cluster", "tcp://127.0.0.1:9"
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: --cluster: no Dask scheduler answers at tcp://127.0.0.1:9")
    assert time.monotonic() - started < 120


# --- a real cluster -------------------------------------------------------------------


class _Cluster:
    """`dask scheduler` and two `dask worker` processes (no nanny: a killed worker stays
    dead) on 127.0.0.1, stopped on exit whatever happens."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.address = ""

    def _spawn(self, name: str, *args: str) -> None:
        log = open(self.directory / f"{name}.log", "wb")  # noqa: SIM115 (closed with the process)
        self.processes[name] = subprocess.Popen(
            [sys.executable, "-m", "dask", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.directory,
            start_new_session=True,
        )

    def start(self) -> None:
        file = self.directory / "scheduler.json"
        self._spawn(
            "scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0",
            "--no-dashboard", "--scheduler-file", str(file),
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while not file.exists():
            if time.monotonic() > deadline or self.processes["scheduler"].poll() is not None:
                raise RuntimeError((self.directory / "scheduler.log").read_text())
            time.sleep(0.2)
        time.sleep(0.5)  # the file is written before its contents are complete, sometimes
        self.address = json.loads(file.read_text())["address"]
        for name in ("worker1", "worker2"):
            self._spawn(
                name, "worker", self.address, "--nthreads", "1", "--nworkers", "1",
                "--no-nanny", "--no-dashboard", "--host", "127.0.0.1", "--death-timeout", "60",
            )  # fmt: skip
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)

    def kill(self, name: str) -> None:
        self.processes[name].send_signal(signal.SIGKILL)
        self.processes[name].wait(timeout=30)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[_Cluster]:
    pytest.importorskip("distributed")
    if shutil.which("dask", path=os.path.dirname(sys.executable)) is None:
        pytest.skip("the `dask` command is not installed (pip install 'raidlab[cluster]')")
    directory = tmp_path / "cluster"
    directory.mkdir()
    running = _Cluster(directory)
    try:
        running.start()
        yield running
    finally:
        running.stop()


def test_a_sweep_on_a_cluster_is_byte_for_byte_the_local_one(
    tmp_path: Path, cluster: _Cluster
) -> None:
    sweep = _write(tmp_path)
    local = _raidlab("sweep", str(sweep), "--out", str(tmp_path / "local"), "--jobs", "2")
    assert local.returncode == 0, local.stderr
    remote = _raidlab(
        "sweep", str(sweep), "--out", str(tmp_path / "remote"),
        env={"RAIDLAB_CLUSTER": cluster.address},
    )  # fmt: skip
    assert remote.returncode == 0, remote.stderr
    assert (tmp_path / "remote.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "remote.parquet"), pd.read_parquet(tmp_path / "local.parquet")
    )


def test_a_sweep_survives_a_worker_killed_mid_sweep(tmp_path: Path, cluster: _Cluster) -> None:
    # 32 points of a few tenths of a second each: the kill lands mid-sweep.
    sweep = _write(tmp_path, ios=30_000, depths="1, 2, 4, 8, 16, 32, 64, 128")
    remote = subprocess.Popen(
        [sys.executable, "-m", "raidlab.cli", "sweep", str(sweep), "--out",
         str(tmp_path / "remote"), "--cluster", cluster.address],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        journal = tmp_path / "remote.csv"
        deadline = time.monotonic() + 300
        while not journal.exists() or len(journal.read_text().splitlines()) < 3:
            assert remote.poll() is None, remote.communicate()
            assert time.monotonic() < deadline, "no point finished in 300 s"
            time.sleep(0.1)
        rows_at_kill = len(journal.read_text().splitlines()) - 1
        cluster.kill("worker1")
        _, err = remote.communicate(timeout=600)
    finally:
        if remote.poll() is None:
            remote.kill()
    assert remote.returncode == 0, err
    assert rows_at_kill < 32, "the sweep had finished before the kill"
    local = _raidlab("sweep", str(sweep), "--out", str(tmp_path / "local"), "--jobs", "2")
    assert local.returncode == 0, local.stderr
    assert (tmp_path / "remote.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
