"""Wear, SMART and endurance: drive presets' reliability figures, the FTL's wear counters
per member and `raidlab life` (docs/wear.md)."""

from __future__ import annotations

from importlib import resources

import pytest
from raidlab.scenario.presets import preset, preset_names, reliability

RELIABILITY_KEYS = {
    "mtbf_hours",
    "afr_percent",
    "ure_per_bits",
    "tbw_bytes",
    "dwpd",
    "warranty_years",
    "rated_pe_cycles",
}


@pytest.mark.parametrize("drive", preset_names("drive"))
def test_every_drive_preset_has_reliability_figures_with_known_keys(drive: str) -> None:
    figures = reliability(drive)
    assert figures, f"{drive} has no [{drive}.reliability] table"
    assert set(figures) <= RELIABILITY_KEYS
    assert all(value > 0 for value in figures.values())
    assert "reliability" not in preset("drive", drive, "drive")


@pytest.mark.parametrize("drive", preset_names("drive"))
def test_every_ssd_preset_states_its_rated_pe_cycles(drive: str) -> None:
    if preset("drive", drive, "drive")["kind"] != "ssd":
        pytest.skip("P/E cycles are for SSDs")
    assert reliability(drive)["rated_pe_cycles"] > 0


def test_every_reliability_figure_cites_its_source() -> None:
    text = resources.files("raidlab.scenario.presets").joinpath("drives.toml").read_text("utf-8")
    in_reliability = False
    for line in text.splitlines():
        if line.startswith("["):
            in_reliability = line.rstrip().endswith(".reliability]")
            continue
        if in_reliability and "=" in line and not line.lstrip().startswith("#"):
            assert "#" in line.split("=", 1)[1], f"no source comment: {line}"
