"""Determinism: the same scenario and seed give the same results, bit for bit, however
often and in however many worker processes they run; the seed is what varies them."""

from __future__ import annotations

import raidlab
import raidlab._native  # noqa: F401  (a hard requirement: fail, never skip, without it)

HDD = "hitachi-deskstar-250g"
SSD = "adata-sp900-128g"


def _run(seed: int, rw: str = "randread"):
    return raidlab.run(
        drive=HDD, drives=2, stripe_unit="64K", rw=rw, bs="4K", iodepth=4, ios=200, seed=seed
    )


def test_same_scenario_and_seed_give_identical_frames_and_explain() -> None:
    first, second = _run(seed=7), _run(seed=7)
    assert first.equals(second)
    assert first.attrs["explain"] == second.attrs["explain"]
    assert first.attrs["sim_time_ns"] == second.attrs["sim_time_ns"]


def test_a_different_seed_gives_a_different_random_workload_result() -> None:
    first, second = _run(seed=1), _run(seed=2)
    assert first.attrs["scenario"]["workload"] == second.attrs["scenario"]["workload"]
    assert not first.equals(second)
    assert first.attrs["sim_time_ns"] != second.attrs["sim_time_ns"]


def test_atto_sweep_in_two_workers_equals_the_sweep_inline() -> None:
    sweep = dict(
        drive=SSD,
        controller="intel-h97-rst",
        drives=2,
        stripe_unit="16K",
        qd=[1, 4],
        sizes="4K,64K,1M",
        length="64M",
        ios_max=100,
        progress=False,
    )
    inline = raidlab.atto(jobs=1, **sweep)
    pooled = raidlab.atto(jobs=2, **sweep)
    assert list(zip(pooled["op"], pooled["qd"], pooled["block_bytes"], strict=True)) == list(
        zip(inline["op"], inline["qd"], inline["block_bytes"], strict=True)
    )
    assert pooled.equals(inline)
    assert pooled.attrs["explain"] == inline.attrs["explain"]
