"""Test setup: import the package from python/ without installing it, and a fake
simulator so front-end behaviour is testable without the native module."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

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


def _native_has_levels() -> bool:
    """Whether the native simulator accepts RAID levels beyond 0 (docs/scenario.md):
    simulate a tiny RAID 1 of two SSDs once."""
    try:
        from raidlab.scenario.array import ArrayRequest, build_array, build_scenario
        from raidlab.scenario.native import simulate
        from raidlab.scenario.workloads import WorkloadRequest, build_workload

        array = build_array(
            ArrayRequest(level=1, drives=2, drive="intel-dc-s3500-80g", controller="linux-md")
        )
        workload = build_workload(WorkloadRequest(rw="randrw", ios=16, warmup_ios=0), array)
        simulate(build_scenario(array, workload, 1))
    except Exception:  # missing module or a scenario the simulator rejects
        return False
    return True


NATIVE_HAS_LEVELS = _native_has_levels()
needs_native_levels = pytest.mark.skipif(
    not NATIVE_HAS_LEVELS, reason="the native simulator does not implement RAID levels yet"
)


def _native_has_jobs() -> bool:
    """Whether the native simulator takes `workloads` with bs_write, distribution
    objects, warmup_ns and sample_interval_ns (docs/scenario.md, Several jobs at once)."""
    try:
        from raidlab.scenario.array import ArrayRequest, build_array, build_scenario
        from raidlab.scenario.native import simulate
        from raidlab.scenario.workloads import WorkloadRequest, build_workload

        array = build_array(ArrayRequest(drive="intel-dc-s3500-80g"))
        workload = build_workload(WorkloadRequest(rw="randrw", ios=16, warmup_ios=0), array)
        workload.update(
            name="probe",
            bs_write=[[8192, 1]],
            distribution={"zipf": 1.2},
            warmup_ns=1000,
            sample_interval_ns=1_000_000,
        )
        scenario = build_scenario(array, workload, 1)
        scenario["workloads"] = [scenario.pop("workload")]
        return "jobs" in simulate(scenario)
    except Exception:
        return False


def _native_has_trace() -> bool:
    from raidlab.scenario.native import native_has_trace

    return native_has_trace()


NATIVE_HAS_JOBS = _native_has_jobs()
NATIVE_HAS_TRACE = _native_has_trace()
needs_native_jobs = pytest.mark.skipif(
    not NATIVE_HAS_JOBS, reason="the native simulator does not take `workloads` (fio jobs) yet"
)
needs_native_trace = pytest.mark.skipif(
    not NATIVE_HAS_TRACE, reason="the native simulator has no simulate_trace yet"
)
