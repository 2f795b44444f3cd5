"""The MegaRAID's firmware path does not cap SSD random reads below its published
figures: a RAID 5 of SATA SSDs reads as its drives do, and reads scale with drives
(controllers.toml, request_overhead_ns: Intel 329903-001US, "over 300K IOPS" of 4 KiB
reads on a RAID 5 of 8 DC S3500, and RAID read IOPS that "scale linearly")."""

from __future__ import annotations

import pandas as pd
from raidlab.api import resolve_array, run_workload
from raidlab.scenario.workloads import WorkloadRequest

DRIVE = "intel-dc-s3500-80g"


def _read_iops(controller: str, level: int, drives: int, iodepth: int) -> float:
    array = resolve_array(None, drive=DRIVE, controller=controller, drives=drives, level=level)
    request = WorkloadRequest(rw="randread", bs="4K", iodepth=iodepth, numjobs=2, ios=20_000)
    row: pd.Series = run_workload(array, request, 1).iloc[0]
    return float(row.iops)


def test_a_raid5_of_four_ssds_reads_more_than_twice_one_ssd_on_the_megaraid() -> None:
    single = _read_iops("hba", 0, 1, 16)
    raid5 = _read_iops("megaraid-9365", 5, 4, 16)
    assert raid5 > 2.0 * single, (single, raid5)


def test_megaraid_raid5_random_reads_scale_with_drives() -> None:
    # The same outstanding I/O per drive (8): twice the drives, nearly twice the reads,
    # until the firmware's ~300k IOPS.
    four = _read_iops("megaraid-9365", 5, 4, 16)
    eight = _read_iops("megaraid-9365", 5, 8, 32)
    assert eight > 1.6 * four, (four, eight)
    assert eight < 1e9 / 3_300 * 1.02, eight
