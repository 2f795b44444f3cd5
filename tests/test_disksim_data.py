"""The DiskSim validation files an installed package reads: the package's copy of
data/disksim (raidlab.studies.disksim_validation.default_directory)."""

from __future__ import annotations

from pathlib import Path

import pytest
from raidlab import api
from raidlab.studies import disksim_validation

ROOT = Path(__file__).resolve().parents[1]
CHECKOUT = ROOT / "data" / "disksim"
PACKAGED = ROOT / "python" / "raidlab" / "studies" / "disksim"


def test_the_packaged_copy_is_byte_identical_to_data_disksim() -> None:
    names = sorted(path.name for path in CHECKOUT.iterdir() if path.is_file())
    assert sorted(path.name for path in PACKAGED.iterdir() if path.is_file()) == names
    for name in names:
        assert (PACKAGED / name).read_bytes() == (CHECKOUT / name).read_bytes(), (
            f"python/raidlab/studies/disksim/{name} differs from data/disksim/{name}: "
            "copy data/disksim/ over it"
        )


def test_without_a_checkout_the_packaged_copy_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    assert disksim_validation.default_directory() == CHECKOUT
    monkeypatch.setattr(disksim_validation, "checkout_directory", lambda: None)
    assert disksim_validation.default_directory() == PACKAGED
    (result,) = api.disksim_validation(["ibm18es"], None, 50)
    assert result.requests == 50
