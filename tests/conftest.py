"""Test setup: import the package from python/ without installing it, a fake
simulator so front-end behaviour is testable without the native module, and the one
rule for a missing external tool.

The native module and the engine are built by `make test` (`make setup`): tests use
them and fail when they are missing or wrong, never skip. Only external tools a
machine may lack (fio, qemu-io, nbdcopy, chromium, fio-plot, dask) skip a test, and
only through ``require_tool`` and the ``tool`` marker: with ``RAIDLAB_REQUIRE_TOOLS=1``
(set by `.ci/run`) a missing tool fails the test instead, so CI cannot pass by
skipping what it was meant to check."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))


def fake_simulate(scenario: dict[str, Any]) -> dict[str, Any]:
    """A results document of the right shape whose MB/s grows with bs x iodepth."""
    workload = scenario["workload"]
    block_bytes = workload["bs"][0][0]
    directions = {
        "read": ["read"],
        "randread": ["read"],
        "write": ["write"],
        "randwrite": ["write"],
        "rw": ["read", "write"],
        "randrw": ["read", "write"],
    }[workload["rw"]]
    mbps = min(500.0 * scenario["array"]["drive_count"], block_bytes * workload["iodepth"] / 20.0)
    stats = {
        "ios": workload["ios"],
        "bytes": workload["ios"] * block_bytes,
        "iops": mbps * 1e6 / block_bytes,
        "mbps": mbps,
        "lat_mean_ns": 50_000.0,
        "lat_min_ns": 1,
        "lat_max_ns": 2,
        "percentiles_ns": {"50.000000": 40_000, "99.000000": 90_000},
    }
    results: dict[str, Any] = {
        "schema": 1,
        "seed": scenario["seed"],
        "sim_time_ns": 1,
        "events": 1,
        "ops": {op: dict(stats) for op in directions},
        "explain": {
            "resources": [
                {"name": "drive0.media", "kind": "drive", "busy_ns": 1, "utilisation": 0.5}
            ],
            "bottleneck": "drive0.media",
            "bottleneck_utilisation": 0.95,
            "bound": "resource",
            "latency_ns_by_stage": {"host": 1000.0, "controller": 0.0, "link": 9000.0}
            | {"drive": 40_000.0},
            "stage_longest": "drive",
            "member_ios_per_host_io": {op: 1.0 for op in directions},
            "member_bytes_per_host_byte": {op: 1.0 for op in directions},
            "read_ahead_hits": 0,
        },
    }
    array = scenario["array"]
    if array["level"] in (4, 5, 6, 50, 60) and "write" in directions:
        # A RAID 5 small write: read old data and parity, write new data and parity.
        results["explain"]["member_ios_per_host_io"]["write"] = 4.0
        results["explain"]["parity_bytes_per_host_byte"] = {"write": 1.0}
    if "rebuild" in array:
        results["rebuild"] = {
            "member": array["rebuild"]["member"],
            "bytes_done": 50_000_000,
            "member_bytes": 80_000_000_000,
            "mbps": 50.0,
            "finished": False,
            "time_ns_projected": 1_600_000_000_000,
        }
    return results


@pytest.fixture
def fake_native(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace the native simulator with fake_simulate (runs inline, jobs=1)."""
    import raidlab.scenario.native

    monkeypatch.setattr(raidlab.scenario.native, "simulate", fake_simulate)


@pytest.fixture
def no_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything is simulated: for checks that must come first."""
    import raidlab.scenario.native

    def refuse(scenario: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("simulated before the input was checked")

    monkeypatch.setattr(raidlab.scenario.native, "simulate", refuse)


# `.ci/run` sets it: a missing external tool is then a failure, not a skip.
REQUIRE_TOOLS_VARIABLE = "RAIDLAB_REQUIRE_TOOLS"


def tools_required() -> bool:
    return os.environ.get(REQUIRE_TOOLS_VARIABLE) == "1"


def tool_missing(name: str, detail: str = "not installed") -> NoReturn:
    """Skip the running test for want of ``name``, or fail it when tools are required."""
    if tools_required():
        pytest.fail(f"{name} is required ({REQUIRE_TOOLS_VARIABLE}=1) but {detail}", pytrace=False)
    pytest.skip(f"{name} is {detail} (`make tools` installs the test tools)")


def require_tool(name: str, *alternatives: str) -> str:
    """The path of command ``name`` (or the first of ``alternatives`` found) on PATH;
    without any, ``tool_missing``."""
    for command in (name, *alternatives):
        path = shutil.which(command)
        if path is not None:
            return path
    tool_missing(name)


def require_module(name: str) -> None:
    """Python package ``name`` importable (a test tool such as fio-plot), else ``tool_missing``."""
    if importlib.util.find_spec(name) is None:
        tool_missing(f"the Python package {name}")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """The ``tool`` marker, checked before any fixture starts a server or a file."""
    for mark in item.iter_markers("tool"):
        require_tool(*mark.args)
