from __future__ import annotations

import pytest
from conftest import fake_simulate
from raidlab.errors import RaidlabError
from raidlab.frontends.atto import (
    ATTO_COLUMNS,
    atto_frame,
    atto_in_flight,
    atto_ios,
    atto_points,
    parse_queue_depths,
)
from raidlab.scenario.array import ArrayRequest, build_array
from raidlab.units import parse_sizes


@pytest.fixture
def array() -> dict:
    return build_array(
        ArrayRequest(
            drive="adata-sp900-128g", drives=2, stripe_unit="16K", controller="intel-h97-rst"
        )
    )


def test_sweep_has_a_write_and_a_read_pass_per_point(array: dict) -> None:
    points = atto_points(array, [1, 4], parse_sizes("512..8M"), "256M")
    assert len(points) == 2 * 15 * 2


def test_sweep_orders_by_qd_then_size_with_write_first(array: dict) -> None:
    points = atto_points(array, [1, 4], [512, 4096], "1G")
    assert [(p.qd, p.block_bytes, p.op) for p in points] == [
        (1, 512, "write"),
        (1, 512, "read"),
        (1, 4096, "write"),
        (1, 4096, "read"),
        (4, 512, "write"),
        (4, 512, "read"),
        (4, 4096, "write"),
        (4, 4096, "read"),
    ]


def test_pass_is_sequential_over_the_test_file(array: dict) -> None:
    point = atto_points(array, [4], [65536], "32G")[0]
    workload = point.scenario["workload"]
    # ATTO's queue depth 4 keeps two I/Os in flight (atto_in_flight).
    assert point.qd == 4 and workload["rw"] == "write" and workload["iodepth"] == 2
    assert workload["offset_bytes"] == 0 and workload["size_bytes"] == 32 << 30
    assert workload["bs"] == [[65536, 1]] and workload["numjobs"] == 1


def test_atto_queue_depth_keeps_half_as_many_ios_in_flight() -> None:
    assert [atto_in_flight(qd) for qd in (1, 2, 3, 4, 8, 10, 16, 256)] == [
        1, 1, 2, 2, 4, 5, 8, 128
    ]  # fmt: skip


def test_io_count_is_one_pass_clamped_to_64_and_ios_max() -> None:
    assert atto_ios(256 << 20, 512, 3000) == 3000
    assert atto_ios(256 << 20, 8 << 20, 3000) == 64
    assert atto_ios(256 << 20, 1 << 20, 3000) == 256


def test_warmup_is_a_tenth_at_least_eight(array: dict) -> None:
    small, large = atto_points(array, [1], [512, 8 << 20], "256M")[::2]
    assert small.scenario["workload"]["warmup_ios"] == 300
    assert large.scenario["workload"]["warmup_ios"] == 8


def test_file_must_hold_the_largest_transfer(array: dict) -> None:
    with pytest.raises(RaidlabError) as error:
        atto_points(array, [1], [1 << 20], "512K", labels={"length": "--length"})
    assert error.value.field == "--length"


def test_queue_depths_parse_lists_and_doubling_ranges() -> None:
    assert parse_queue_depths("16,1,4") == [1, 4, 16]
    assert parse_queue_depths("1..256") == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    with pytest.raises(RaidlabError):
        parse_queue_depths("0")
    with pytest.raises(RaidlabError):
        parse_queue_depths("70000")


def test_frame_has_the_documented_columns_sorted_read_first(array: dict) -> None:
    points = atto_points(array, [1, 4], [512, 4096], "1G")
    frame = atto_frame(points, [fake_simulate(p.scenario) for p in points])
    assert list(frame.columns) == ATTO_COLUMNS
    assert list(frame["op"]) == ["read"] * 4 + ["write"] * 4
    assert list(frame["qd"][:4]) == [1, 1, 4, 4]
    assert frame["lat_p99_us"].iloc[0] == 90.0
