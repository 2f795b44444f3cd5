"""End-to-end through the native simulator (`make test` always builds it)."""

from __future__ import annotations

import raidlab
import raidlab._native  # noqa: F401  (a hard requirement: fail, never skip, without it)
from raidlab.scenario.executor import run_scenarios


def test_atto_returns_a_row_per_op_qd_and_size() -> None:
    frame = raidlab.atto(
        drive="adata-sp900-128g",
        controller="intel-h97-rst",
        drives=2,
        stripe_unit="16K",
        qd=[1, 4],
        sizes="4K..64K",
        length="256M",
        jobs=1,
        ios_max=200,
        progress=False,
    )
    assert len(frame) == 2 * 2 * 5 and (frame["mbps"] > 0).all()


def test_run_carries_explain() -> None:
    frame = raidlab.run(drive="intel-dc-s3500-80g", rw="randread", iodepth=8, ios=500)
    assert frame.attrs["explain"]["bottleneck"]
    assert frame["lat_p99_us"].notna().all()


def test_executor_keeps_input_order() -> None:
    frame = raidlab.run(drive="intel-dc-s3500-80g", ios=100)
    scenario = frame.attrs["scenario"]
    scenarios = [{**scenario, "seed": seed} for seed in range(4)]
    results = run_scenarios(scenarios, jobs=2, progress=False)
    assert [r["seed"] for r in results] == [0, 1, 2, 3]
