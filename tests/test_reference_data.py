"""Where the studies read data/reference/ (raidlab.studies.reference_data): the
checkout's files, the package's copy, and $RAIDLAB_REFERENCE_DIR over both."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from raidlab.errors import RaidlabError
from raidlab.studies import reference_data
from raidlab.studies.atto_studies import get_study

ROOT = Path(__file__).resolve().parents[1]
CHECKOUT = ROOT / "data" / "reference"
PACKAGED = ROOT / "python" / "raidlab" / "studies" / "reference"


def test_the_packaged_copy_is_byte_identical_to_data_reference() -> None:
    packaged = sorted(path.name for path in PACKAGED.iterdir() if path.is_file())
    assert {"hdd_raid0_atto.csv", "ssd_raid0_atto.csv", "raidix_cache.csv"} <= set(packaged)
    for name in packaged:
        assert (PACKAGED / name).read_bytes() == (CHECKOUT / name).read_bytes(), (
            f"python/raidlab/studies/reference/{name} differs from data/reference/{name}: "
            "copy data/reference/ over it"
        )


def test_a_source_checkout_reads_data_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(reference_data.ENVIRONMENT, raising=False)
    assert reference_data.checkout_directory() == CHECKOUT
    # A file only data/reference/ has is read from there: the checkout is the source.
    assert reference_data.read_text("devices.csv") == (CHECKOUT / "devices.csv").read_text()


def test_the_environment_variable_overrides_both(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shutil.copytree(CHECKOUT, tmp_path, dirs_exist_ok=True)
    text = (CHECKOUT / "hdd_raid0_atto.csv").read_text()
    # Synthetic: the first data row's kbps replaced by a value no study printed.
    header, first, *rest = text.splitlines(keepends=True)
    first = ",".join([*first.rstrip("\n").split(",")[:-1], "9999999"]) + "\n"
    (tmp_path / "hdd_raid0_atto.csv").write_text(header + first + "".join(rest))
    monkeypatch.setenv(reference_data.ENVIRONMENT, str(tmp_path))
    measured = get_study("hdd-raid0-atto").load_measured()
    assert measured["measured_mbps"].iloc[0] == pytest.approx(9999.999)
    assert len(measured) == len(text.splitlines()) - 1
    monkeypatch.delenv(reference_data.ENVIRONMENT)
    assert get_study("hdd-raid0-atto").load_measured()["measured_mbps"].iloc[0] != 9999.999


def test_a_directory_without_the_file_is_an_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(reference_data.ENVIRONMENT, str(tmp_path))
    with pytest.raises(RaidlabError) as error:
        reference_data.read_text("ssd_raid0_atto.csv")
    assert error.value.field == "RAIDLAB_REFERENCE_DIR"
    assert "has no ssd_raid0_atto.csv" in error.value.message


def test_an_installed_package_reads_its_own_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(reference_data.ENVIRONMENT, raising=False)
    # As installed: no checkout around the package; the packaged copy is what is read.
    monkeypatch.setattr(reference_data, "checkout_directory", lambda: None)
    text = reference_data.read_text("ssd_raid0_atto.csv")
    assert text == (PACKAGED / "ssd_raid0_atto.csv").read_text()
