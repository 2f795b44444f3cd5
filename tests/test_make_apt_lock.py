"""`make test` installs its tools with apt-get: another apt or dpkg holding the package
locks (unattended-upgrades on a fresh machine) must make it wait, not fail.

The Makefile's real install recipe runs here against a scratch apt root (APT_CONFIG:
its own status file, lists and cache, no sources), with its two locks held by this
process the way apt holds them (fcntl record locks), then released: the recipe must
get through both and reach apt's own verdict on the package.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MISSING = "raidlab-test-no-such-package"


def _apt_root(tmp_path: Path) -> dict[str, Path]:
    """A scratch apt: nothing in it touches the machine's packages."""
    paths = {
        "status": tmp_path / "dpkg" / "status",
        "lists": tmp_path / "lists",
        "cache": tmp_path / "cache",
        "parts": tmp_path / "sources.list.d",
    }
    for sub in ("lists/partial", "cache/archives/partial", "dpkg", "sources.list.d"):
        (tmp_path / sub).mkdir(parents=True, exist_ok=True)
    paths["status"].touch()
    config = tmp_path / "apt.conf"
    config.write_text(
        f'Dir::State::status "{paths["status"]}";\n'
        f'Dir::State::Lists "{paths["lists"]}/";\n'
        f'Dir::Cache "{paths["cache"]}/";\n'
        'Dir::Etc::sourcelist "/dev/null";\n'
        f'Dir::Etc::sourceparts "{paths["parts"]}/";\n'
    )
    paths["config"] = config
    return paths


def _hold(path: Path, seconds: float) -> threading.Timer:
    """Hold ``path``'s apt lock (an fcntl write lock, as apt takes it) for ``seconds``."""
    lock = path.open("w")
    fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    timer = threading.Timer(seconds, lock.close)  # closing the file releases the lock
    timer.start()
    return timer


@pytest.mark.skipif(shutil.which("apt-get") is None, reason="apt-get: not a Debian system")
def test_tool_install_waits_for_the_apt_and_dpkg_locks(tmp_path: Path) -> None:
    apt = _apt_root(tmp_path)
    lists_held_s, dpkg_held_s = 2.0, 4.0
    timers = [
        _hold(apt["lists"] / "lock", lists_held_s),  # what `apt-get update` takes
        _hold(apt["status"].parent / "lock-frontend", dpkg_held_s),  # `install` takes
    ]
    started = time.monotonic()
    try:
        done = subprocess.run(
            [
                "make",
                "-s",
                "--no-print-directory",
                "tools",
                f"TOOLS=raidlab-test-no-such-command:{MISSING}",
                "BUILD_TOOLS=",
                "BUILD_LIBS=",
            ],
            cwd=ROOT,
            env={**os.environ, "APT_CONFIG": str(apt["config"]), "LC_ALL": "C"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        for timer in timers:
            timer.join()
    waited_s = time.monotonic() - started
    said = done.stdout + done.stderr
    assert "Could not get lock" not in said, said
    # apt got both locks and looked the package up: the scratch apt has none.
    assert f"Unable to locate package {MISSING}" in done.stderr, said
    assert "waiting for the apt lists lock" in done.stdout, said
    assert waited_s >= dpkg_held_s - 0.5, (waited_s, said)
