"""DiskSim's "Allow read hits on write data": the importer carries it to the drive
file as `read_hits_on_write_data`, citing its line, so that a disk that refuses read
hits on written data (ibm18es) keeps refusing them and the others serve them."""

from __future__ import annotations

from pathlib import Path

import pytest
from raidlab.studies.disksim_validation import drive_table

DATA = Path(__file__).resolve().parents[1] / "data" / "disksim"


@pytest.mark.parametrize(("disk", "allowed"), [("ibm18es", False), ("barracuda", True)])
def test_read_hits_on_write_data_come_from_the_diskspecs_line(disk: str, allowed: bool) -> None:
    table = drive_table(DATA / f"{disk}.parv")
    assert table["read_hits_on_write_data"] is allowed
    line = next(
        line
        for line in (DATA / f"{disk}.diskspecs").read_text().splitlines()
        if "Allow read hits on write data" in line
    )
    assert line.strip().endswith(f"= {int(allowed)},")
