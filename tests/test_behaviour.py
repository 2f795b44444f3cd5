"""What the simulator does, one behaviour per test, through the Python API.

Each test states a property of real hardware that the model must show. Counts of I/Os
are small so the suite stays fast; bounds are physics, not fitted values.
"""

from __future__ import annotations

import pytest
import raidlab
import raidlab._native  # noqa: F401  (a hard requirement: fail, never skip, without it)

SSD = "adata-sp900-128g"
HDD = "hitachi-deskstar-250g"  # 7200 rpm: one revolution is 8.33 ms (120 per second)


def _iops(frame) -> float:
    (iops,) = frame["iops"]
    return float(iops)


def _ssd_random_reads(drives: int):
    return raidlab.run(
        drive=SSD,
        controller="hba",
        drives=drives,
        stripe_unit="64K",
        rw="randread",
        bs="4K",
        iodepth=32,
        ios=2000,
    )


def test_raid0_of_two_ssds_doubles_random_read_iops_at_qd32() -> None:
    one, two = _iops(_ssd_random_reads(1)), _iops(_ssd_random_reads(2))
    assert 1.6 <= two / one <= 2.2, (one, two)


def test_explain_names_a_drive_as_the_bottleneck_of_raid0_random_reads() -> None:
    explain = _ssd_random_reads(2).attrs["explain"]
    kinds = {resource["name"]: resource["kind"] for resource in explain["resources"]}
    assert kinds.get(explain["bottleneck"]) == "drive", explain["bottleneck"]


def test_a_4k_random_read_is_one_member_io_on_raid0() -> None:
    explain = _ssd_random_reads(2).attrs["explain"]
    assert explain["member_ios_per_host_io"]["read"] == 1.0


def test_a_64k_read_spans_four_16k_stripe_units_on_four_drives() -> None:
    frame = raidlab.run(
        drive=SSD, drives=4, stripe_unit="16K", rw="read", bs="64K", iodepth=1, ios=200
    )
    assert frame.attrs["explain"]["member_ios_per_host_io"]["read"] == 4.0


def test_hdd_random_4k_reads_at_qd1_pay_seek_and_rotation() -> None:
    iops = _iops(raidlab.run(drive=HDD, rw="randread", bs="4K", iodepth=1, ios=200))
    assert 50 <= iops <= 200


def test_hdd_sequential_4k_reads_at_qd1_hit_the_drive_read_ahead() -> None:
    iops = _iops(raidlab.run(drive=HDD, rw="read", bs="4K", iodepth=1, ios=500))
    assert iops > 1000


def test_hdd_sequential_4k_writes_without_write_cache_cost_a_revolution_each() -> None:
    drive = {"preset": HDD, "write_cache": False}
    iops = _iops(raidlab.run(drive=drive, rw="write", bs="4K", iodepth=1, ios=200))
    assert 100 <= iops <= 130


def test_hdd_sequential_4k_writes_with_write_cache_complete_in_the_buffer() -> None:
    drive = {"preset": HDD, "write_cache": True}
    frame = raidlab.run(drive=drive, rw="write", bs="4K", iodepth=1, ios=500)
    assert _iops(frame) > 1000, frame.to_dict("records")


@pytest.mark.parametrize("write_cache", [False, True])
def test_write_cache_can_be_set_in_an_array_toml_file(tmp_path, write_cache: bool) -> None:
    path = tmp_path / "hdd.toml"
    path.write_text(
        f'[array]\n[array.drive]\npreset = "{HDD}"\nwrite_cache = {str(write_cache).lower()}\n'
    )
    frame = raidlab.run(config=path, rw="write", bs="4K", iodepth=1, ios=100)
    assert frame.attrs["scenario"]["array"]["drive"]["write_cache"] is write_cache


def test_a_runtime_alone_measures_that_much_simulated_time() -> None:
    frame = raidlab.run(
        drive="adata-sp900-128g", rw="randread", bs="4K", iodepth=4, runtime_ns="20ms"
    )
    measured_ns = frame.attrs["sim_time_ns"]
    assert 20_000_000 <= measured_ns < 20_500_000
    assert frame.iops.iloc[0] > 10_000
