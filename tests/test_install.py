"""What a user gets from ``pip install``: a clean venv (no system site-packages, no
project venv on PATH) where ``raidlab create`` and ``raidlab serve`` work with the
engine compiled into the wheel (the ``raidlab-engine`` console script).

Marked ``install``: only ``pytest -m install`` runs it (`make test` does)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.install
REPO = Path(__file__).resolve().parents[1]
# Anything the registry or its mirror says when it cannot be reached; other pip
# failures (our build breaking) fail the test.
_UNREACHABLE = (
    "No matching distribution found",
    "Could not find a version",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Network is unreachable",
)


def _environment(venv: Path) -> dict[str, str]:
    """The user's environment: the new venv's bin first, nothing of the project's."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"RAIDLAB_ENGINE", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"}
    }
    env["PATH"] = os.pathsep.join([str(venv / "bin"), "/usr/local/bin", "/usr/bin", "/bin"])
    return env


def _pip_install(root: Path) -> tuple[Path, dict[str, str]]:
    """``python -m venv`` then ``pip install`` of the repository under ``root``."""
    venv = root / "venv"
    env = _environment(venv)
    made = subprocess.run(
        [sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, check=False
    )
    if made.returncode != 0:
        pytest.skip(f"cannot build a venv with {sys.executable}: {made.stderr.strip()}")
    # The ci cargo profile (no LTO) keeps the build short; the in-tree build reuses
    # target/ from `make setup`. What is installed is the same package. --no-compile:
    # byte-compiling pandas, numpy and matplotlib up front took most of the install;
    # Python compiles what it imports on first use.
    build_env = {**env, "MATURIN_PEP517_ARGS": "--profile ci", "PIP_QUIET": "1"}
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-compile", str(REPO)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=build_env,
        timeout=1200,
        check=False,
    )
    if installed.returncode != 0:
        output = installed.stdout
        if any(marker in output for marker in _UNREACHABLE):
            pytest.skip(f"the package registry is unreachable: {output.strip()[-300:]}")
        pytest.fail(f"pip install {REPO} failed:\n{output[-3000:]}")
    return venv, env


@pytest.fixture(scope="module")
def installed() -> Iterator[tuple[Path, dict[str, str]]]:
    """A venv with the repository pip-installed into it, and the environment to use it.

    Built when the first test of this module runs, never at collection: the module is
    marked ``install`` and plain ``pytest`` deselects it; `make test` runs it with
    ``-m install`` beside the rest of the suite, so the install (network, disk, a
    short cargo link) overlaps the other tests instead of adding to them."""
    # Removed at the end, not kept among pytest's last three runs: it holds pandas.
    root = Path(tempfile.mkdtemp(prefix="raidlab-install-"))
    try:
        yield _pip_install(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run(
    venv: Path, env: dict[str, str], cwd: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_the_wheel_ships_the_engine_as_a_console_script(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    venv, env = installed
    script = venv / "bin" / "raidlab-engine"
    assert script.read_text().startswith("#!"), "a Python console script, not a copy"
    refused = _run(venv, env, tmp_path, "raidlab-engine", "create", "--level", "9", "m0")
    assert refused.returncode == 2, refused
    assert refused.stderr.startswith("error: --level: ") and refused.stderr.count("\n") == 1


def test_the_wheel_ships_disksims_validation_files(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Outside a checkout, `disksim-validate` reads the copy of data/disksim the
    package ships (it used to need --data)."""
    venv, env = installed
    done = _run(
        venv,
        env,
        tmp_path,
        "raidlab",
        "disksim-validate",
        "ibm18es",
        "--requests",
        "50",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    (record,) = json.loads(done.stdout)["records"]
    assert record["disk"] == "ibm18es" and record["requests"] == 50, record


def _create_raid5(
    venv: Path, env: dict[str, str], tmp_path: Path, program: str
) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    """Three 4 MiB member files in ``tmp_path`` made a RAID 5 by ``program``."""
    members = [str(tmp_path / f"m{i}.img") for i in range(3)]
    created = _run(venv, env, tmp_path, program, "create", "--level", "5", "--size", "4M", *members)
    return members, created


def _stop(server: subprocess.Popen[str], signum: int) -> str:
    """Send ``signum`` to a running server and return its stderr once it has exited."""
    try:
        server.send_signal(signum)
        _, stderr = server.communicate(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
    return str(stderr)


def test_create_then_serve_a_raid5_on_files(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    venv, env = installed
    env = {**env, "TMPDIR": str(tmp_path)}  # the control socket, in this test's dir
    members, created = _create_raid5(venv, env, tmp_path, "raidlab")
    assert created.returncode == 0, created.stdout + created.stderr
    assert "RAID 5" in created.stdout and "state clean" in created.stdout
    with subprocess.Popen(
        [str(venv / "bin" / "raidlab"), "serve", "--listen", "127.0.0.1:0", *members],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    ) as server:
        try:
            assert server.stdout is not None
            uri = server.stdout.readline().strip()
            assert uri.startswith("nbd://127.0.0.1:"), uri
            served = _run(venv, env, tmp_path, "raidlab", "status", "--json", *members)
            assert json.loads(served.stdout)["state"] == "clean", served.stderr
        finally:
            stderr = _stop(server, signal.SIGINT)
    assert server.returncode == 0, stderr
    assert "stopped, array clean" in stderr
    stopped = _run(venv, env, tmp_path, "raidlab", "status", "--json", *members)
    assert json.loads(stopped.stdout)["dirty"] is False, stopped.stderr


def test_the_engine_inside_python_stops_clean_on_sigterm(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """The engine's own signal handlers work inside the interpreter of the script."""
    venv, env = installed
    env = {**env, "TMPDIR": str(tmp_path)}
    members, created = _create_raid5(venv, env, tmp_path, "raidlab-engine")
    assert created.returncode == 0, created.stderr
    with subprocess.Popen(
        [str(venv / "bin" / "raidlab-engine"), "serve", "--listen", "127.0.0.1:0", *members],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    ) as server:
        try:
            assert server.stderr is not None
            ready = server.stderr.readline()
            assert "raidlab-engine: serving" in ready, ready
        finally:
            stderr = _stop(server, signal.SIGTERM)
    assert server.returncode == 0, stderr
    assert "stopped, array clean" in stderr
