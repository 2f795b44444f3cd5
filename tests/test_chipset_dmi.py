"""The chipset's DMI 2.0 carries at most what it was measured to carry, per direction.

`intel-h97-rst`'s read and write path ceilings are a published measurement of DMI 2.0
on the same PCH silicon (Tom's Hardware, six SSD DC S3500 on a C226's SATA ports:
~1,600 MB/s of reads, just over 1,200 MB/s of writes from four drives on), not a fit to
the SSD RAID 0 study's rows. Two SP900s stay below both, so the study's 2-drive rows do
not move; three SP900s write faster than the write ceiling (1.37 GB/s without it).
"""

from __future__ import annotations

import pandas as pd
import pytest
from raidlab import api

DMI2_READ_MBPS = 1600
DMI2_WRITE_MBPS = 1200


def _large(drives: int) -> pd.DataFrame:
    frame = api.atto(
        drive="adata-sp900-128g",
        controller="intel-h97-rst",
        drives=drives,
        stripe_unit="16K",
        qd=[16],
        sizes="1M,8M",
        length="32G",
        ios_max=600,
        jobs=1,
        progress=False,
    )
    return frame.groupby("op")["mbps"].max()


@pytest.fixture(scope="module")
def best() -> dict[int, pd.Series]:
    return {drives: _large(drives) for drives in (2, 3, 4)}


def test_two_drives_stay_below_both_ceilings(best: dict[int, pd.Series]) -> None:
    # Bound by the SP900's 16 KiB commands (2 x ~440 MB/s reads, 2 x ~457 writes).
    assert best[2]["read"] < 0.6 * DMI2_READ_MBPS
    assert best[2]["write"] < 0.8 * DMI2_WRITE_MBPS


def test_three_drives_write_at_the_dmi_write_ceiling(best: dict[int, pd.Series]) -> None:
    assert best[3]["write"] == pytest.approx(DMI2_WRITE_MBPS, rel=0.02)
    # Reads of three (1.32 GB/s) are still the drives' own.
    assert best[3]["read"] < 0.9 * DMI2_READ_MBPS
    assert best[3]["read"] > 1.4 * best[2]["read"]


def test_four_drives_read_at_the_dmi_read_ceiling(best: dict[int, pd.Series]) -> None:
    assert best[4]["read"] == pytest.approx(DMI2_READ_MBPS, rel=0.02)
    assert best[4]["write"] == pytest.approx(DMI2_WRITE_MBPS, rel=0.02)
