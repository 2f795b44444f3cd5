"""Wear, SMART and endurance: drive presets' reliability figures, the FTL's wear counters
per member and `raidlab life` (docs/wear.md)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from raidlab import api
from raidlab.cli import app
from raidlab.scenario.presets import preset, preset_names, reliability
from raidlab.scenario.tuning import Tuning, tune_array
from raidlab.scenario.workloads import WorkloadRequest
from raidlab.studies import wear
from typer.testing import CliRunner

runner = CliRunner()

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


# --- per-member wear from the simulator -------------------------------------------------

S3500 = "intel-dc-s3500-80g"
IOS = 5000


def _wear(
    level: int,
    drives: int,
    ios: int = IOS,
    tuning: Tuning | None = None,
    size: str | None = None,
) -> tuple[list[dict], dict]:
    """4 KiB random writes at QD 32 on S3500s in steady state: each member's wear and
    the explain dict."""
    array = api.resolve_array(drive=S3500, level=level, drives=drives, controller="linux-md")
    if tuning is not None:
        array = tune_array(array, tuning)
    run = api.run_workload_rows(
        array, WorkloadRequest(rw="randwrite", bs="4K", iodepth=32, ios=ios, size=size)
    )
    explain = run.attrs["explain"]
    return explain["wear"], explain


def test_a_hdd_array_reports_no_wear() -> None:
    array = api.resolve_array(drive="hitachi-deskstar-250g")
    run = api.run_workload_rows(array, WorkloadRequest(rw="randwrite", bs="4K", ios=200))
    assert "wear" not in run.attrs["explain"]


def test_raid1_writes_every_host_byte_to_both_members() -> None:
    wear, explain = _wear(level=1, drives=2)
    first, second = (m["host_write_bytes"] // 4096 for m in wear)
    # Both mirrors get every write; the writes of the 32 host I/Os in flight when
    # measuring starts may land on either side of it.
    assert first == second and abs(first - IOS) <= 32, (first, second)
    mean_wa = sum(m["write_amplification"] for m in wear) / 2
    assert explain["nand_write_bytes_per_host_byte"] == pytest.approx(2 * mean_wa, rel=32 / IOS)
    assert explain["nand_write_bytes_per_host_byte"] > 2 * 1.5


def test_raid5_rotating_parity_spreads_wear_within_five_percent() -> None:
    wear, explain = _wear(level=5, drives=4, ios=20_000)
    nand = [m["nand_write_bytes"] for m in wear]
    mean = sum(nand) / len(nand)
    assert all(abs(n / mean - 1) < 0.05 for n in nand), nand
    # A small write is two member writes (data and parity) of one host write; the
    # member writes of the 32 host writes in flight when measuring starts (their
    # read-modify-write reads done first) may land on either side of it.
    host_units = sum(m["host_write_bytes"] for m in wear) // 4096
    assert abs(host_units - 2 * 20_000) <= 2 * 32, host_units


def test_raid4_parity_drive_wears_fastest() -> None:
    wear, _ = _wear(level=4, drives=4)
    *data, parity = (m["erased_blocks"] for m in wear)
    assert parity > 2 * max(data), [m["erased_blocks"] for m in wear]
    *data_nand, parity_nand = (m["nand_write_bytes"] for m in wear)
    assert parity_nand > 2.5 * max(data_nand)


def test_over_provisioning_lowers_write_amplification() -> None:
    plain, _ = _wear(level=0, drives=1)
    spared, _ = _wear(level=0, drives=1, tuning=Tuning(op="40%"))
    assert spared[0]["write_amplification"] < plain[0]["write_amplification"] - 0.5


def test_trimmed_space_lowers_write_amplification() -> None:
    kept, _ = _wear(level=0, drives=1, size="40G")
    trimmed, _ = _wear(level=0, drives=1, size="40G", tuning=Tuning(deleted="50%"))
    assert trimmed[0]["write_amplification"] < kept[0]["write_amplification"] - 0.5


def test_every_ssd_member_gets_intel_smart_attributes() -> None:
    wear, _ = _wear(level=5, drives=3, ios=2000)
    for member in wear:
        smart = member["smart"]
        assert "Intel" in smart["convention"]
        ids = {a["id"]: a for a in smart["attributes"]}
        assert set(ids) == {0xE1, 0xE2, 0xE8, 0xE9}
        assert ids[0xE1]["raw"] == member["host_write_bytes"] // (32 << 20)
        assert member["rated_pe_cycles"] == reliability(S3500)["rated_pe_cycles"]


# --- SMART and projections as arithmetic ------------------------------------------------


def _member(erase_count_mean: float, host_write_bytes: int = 0) -> dict:
    return {"erase_count_mean": erase_count_mean, "host_write_bytes": host_write_bytes}


@pytest.mark.parametrize(
    ("used", "wearout"), [(0.0, 100), (0.005, 100), (0.5, 51), (1.0, 1), (2.0, 1)]
)
def test_media_wearout_indicator_counts_down_from_100_to_1_over_the_rated_cycles(
    used: float, wearout: int
) -> None:
    smart = wear.smart_attributes(_member(used * 3000), 3000)
    ids = {a["id"]: a for a in smart["attributes"]}
    assert ids[0xE9]["value"] == wearout
    assert ids[0xE2]["raw"] == round(used * 100 * 1024)


def test_without_rated_cycles_no_wear_percentage_is_made_up() -> None:
    smart = wear.smart_attributes(_member(1.0, 64 << 20), None)
    assert {a["id"] for a in smart["attributes"]} == {0xE1, 0xE8}


def test_a_preset_drive_is_recognised_with_its_over_provisioning_changed() -> None:
    array = tune_array(api.resolve_array(drive=S3500), Tuning(op="20%"))
    assert wear.drive_preset_of(array["drive"]) == S3500
    changed = {**array["drive"], "channels": 3}
    assert wear.drive_preset_of(changed) is None


def test_dwpd_gives_the_rated_bytes_over_the_warranty() -> None:
    figures = reliability("intel-dc-s3700-800g")
    tbw = wear.rated_tbw_bytes(figures, 800_000_000_000)
    assert tbw == pytest.approx(10 * 800e9 * 365 * 5)


# --- raidlab life -------------------------------------------------------------------------

LIFE = ["life", "--drive", S3500, "--controller", "linux-md", "--level", "5", "--drives", "4"]


def _life(*args: str) -> dict:
    result = runner.invoke(app, [*LIFE, "--ios", "4000", "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_life_projects_years_from_rated_cycles_and_simulated_erases() -> None:
    full = _life("--duty", "24h/day")
    third = _life("--duty", "8h/day")
    assert full["drive_preset"] == S3500 and "steady" in full["note"]
    assert len(full["drives"]) == 4
    for a, b in zip(full["drives"], third["drives"], strict=True):
        assert a["basis"].startswith("rated P/E")
        assert a["years"] == pytest.approx(3000 / a["pe_cycles_per_day"] / 365)
        assert b["years"] == pytest.approx(3 * a["years"])
        assert a["years_to_rated_tbw"] == pytest.approx(45e12 / a["host_write_bytes_per_day"] / 365)
        assert a["years_to_rated_pe_worst_block"] <= a["years"]


def test_life_at_a_write_volume_writes_that_volume() -> None:
    report = _life("--tb-per-day", "0.2")
    assert report["host_write_bytes_per_day"] == pytest.approx(0.2e12)
    # RAID 5 small writes: each host byte reaches two members.
    member_bytes = sum(d["host_write_bytes_per_day"] for d in report["drives"])
    assert member_bytes == pytest.approx(2 * 0.2e12, rel=1e-6)


def test_life_runs_an_fio_job_file(tmp_path: Path) -> None:
    job = tmp_path / "w.fio"
    job.write_text("[w]\nrw=randwrite\nbs=4k\niodepth=16\nnumjobs=2\nnumber_ios=1500\n")
    result = runner.invoke(app, [*LIFE, "--fio", str(job), "--duty", "8h/day"])
    assert result.exit_code == 0, result.output
    assert "years (P/E)" in result.stdout and "steady-state" in result.stdout


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--duty", "25h/day"], "--duty"),
        (["--duty", "0h/day"], "--duty"),
        (["--duty", "eight"], "--duty"),
        (["--tb-per-day", "-1"], "--tb-per-day"),
        (["--duty", "8h/day", "--tb-per-day", "1"], "--tb-per-day"),
        (["--format", "csv"], "--format"),
        (["--tb-per-day", "1000"], "--tb-per-day"),
    ],
)
def test_life_bad_input_is_one_line_with_status_2(args: list[str], field: str) -> None:
    result = runner.invoke(app, [*LIFE, "--ios", "500", *args])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: "), result.stderr


def test_life_refuses_an_array_without_flash_wear() -> None:
    result = runner.invoke(app, ["life", "--drive", "wd-caviar-blue-500g", "--ios", "200"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --drive: ")
