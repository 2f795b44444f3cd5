"""NVMe drives, the chipset's DMI as a shared uplink, the nvme-raid0 claim study, and
the current preset library checked against the figures of its own datasheets.

The datasheet checks are calibration checks of single drives (the figures the presets
are built from), not predictions of arrays: a preset passes when its simulated 4K
random reads and 1 MiB sequential reads land between DATASHEET_LOW and DATASHEET_HIGH
of the datasheet's "up to" figure (flash drives' figures are maxima), or within
±TYPICAL of a hard disk's random-read figure (Seagate states a typical value).
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from raidlab.errors import RaidlabError
from raidlab.scenario.array import ArrayRequest, build_array, build_scenario
from raidlab.scenario.native import simulate
from raidlab.scenario.presets import preset, reliability
from raidlab.scenario.workloads import WorkloadRequest, build_workload
from raidlab.studies import claim_studies
from raidlab.studies.nvme_raid0 import NVME_RAID0

NVME_PRESETS = (
    "samsung-960-pro-512g",
    "samsung-pm9a3-7680g",
    "micron-7450-pro-3840g",
    "kioxia-cd6-r-3840g",
)
NEW_DRIVES = (*NVME_PRESETS, "seagate-exos-x18-18t", "wd-red-plus-4t", "samsung-pm893-3840g")
NEW_CONTROLLERS = (
    "nvme-cpu",
    "z270-m2",
    "intel-z270-rst",
    "windows-softraid-z270",
    "megaraid-9560-16i",
)
RELIABILITY_KEYS = {
    "mtbf_hours",
    "afr_percent",
    "ure_per_bits",
    "tbw_bytes",
    "dwpd",
    "warranty_years",
    "rated_pe_cycles",
}

# The datasheets' "up to" figures: 4K random read IOPS (None: not published) at the
# queue depth (jobs, iodepth) the sheet states or implies, and sequential read MB/s.
DATASHEET = {
    "samsung-960-pro-512g": (330_000, (4, 32), 3_500),  # QD32 x 4 threads
    "samsung-pm9a3-7680g": (900_000, (4, 64), 6_500),
    "micron-7450-pro-3840g": (1_000_000, (4, 64), 6_800),
    "kioxia-cd6-r-3840g": (1_000_000, (4, 64), 6_200),
    "samsung-pm893-3840g": (98_000, (1, 32), 550),
    "seagate-exos-x18-18t": (170, (1, 16), 270),  # 4K QD16 random read, write cache off
    "wd-red-plus-4t": (None, (1, 1), 175),
}
DATASHEET_LOW, DATASHEET_HIGH = 0.80, 1.05
TYPICAL = 0.20


def run(
    drive: str,
    controller: str,
    rw: str,
    bs: str,
    jobs: int,
    qd: int,
    ios: int,
    drives: int = 1,
    stripe_unit: str = "64K",
) -> dict:
    array = build_array(
        ArrayRequest(
            level=0, drives=drives, stripe_unit=stripe_unit, drive=drive, controller=controller
        )
    )
    workload = build_workload(
        WorkloadRequest(rw=rw, bs=bs, iodepth=qd, numjobs=jobs, ios=ios), array
    )
    return simulate(build_scenario(array, workload, 1))


@pytest.mark.parametrize("name", NEW_DRIVES)
def test_every_new_drive_preset_cites_each_figure_and_has_a_reliability_table(name: str) -> None:
    text = (Path(__file__).parents[1] / "python/raidlab/scenario/presets/drives.toml").read_text()
    block = text.split(f"[{name}]", 1)[1].split("\n[", 1)[0]
    for line in block.splitlines():
        if "=" in line and not line.startswith(("#", "description", "kind")):
            assert "#" in line, f"{name}: figure without a source: {line}"
    figures = reliability(name)
    assert figures and set(figures) <= RELIABILITY_KEYS


@pytest.mark.parametrize("name", NEW_CONTROLLERS)
def test_new_controller_presets_build_an_array(name: str) -> None:
    drive = "samsung-pm893-3840g" if name == "megaraid-9560-16i" else "samsung-960-pro-512g"
    array = build_array(ArrayRequest(level=0, drives=2, drive=drive, controller=name))
    assert array["controller"]["name"] == name


@pytest.mark.parametrize("name", sorted(DATASHEET))
def test_preset_random_and_sequential_reads_match_its_datasheet(name: str) -> None:
    iops_sheet, (jobs, qd), mbps_sheet = DATASHEET[name]
    controller = "nvme-cpu" if preset("drive", name, "drive")["kind"] == "nvme" else "hba"
    seq = run(name, controller, "read", "1M", 1, 32, 1500)["ops"]["read"]["mbps"]
    assert DATASHEET_LOW * mbps_sheet <= seq <= DATASHEET_HIGH * mbps_sheet, (name, seq)
    if iops_sheet is None:
        return
    ios = min(40_000, max(2000, iops_sheet // 10))
    iops = run(name, controller, "randread", "4K", jobs, qd, ios)["ops"]["read"]["iops"]
    low, high = DATASHEET_LOW, DATASHEET_HIGH
    if preset("drive", name, "drive")["kind"] == "hdd":
        low, high = 1 - TYPICAL, 1 + TYPICAL
    assert low * iops_sheet <= iops <= high * iops_sheet, (name, iops)


def test_nvme_queues_take_more_than_sata_ncq_32_commands() -> None:
    iops = {
        qd: run("micron-7450-pro-3840g", "nvme-cpu", "randread", "4K", 1, qd, 20_000)["ops"][
            "read"
        ]["iops"]
        for qd in (32, 128)
    }
    assert iops[128] > 1.5 * iops[32], iops


def _rst_mbps(rw: str, drives: int) -> float:
    """MB/s of 1 MiB sequential transfers at QD 16 on an RST RAID 0 of 960 PROs behind
    the Z270's DMI (16 KiB strips, 600 I/Os)."""
    result = run(
        "samsung-960-pro-512g", "intel-z270-rst", rw, "1M", 1, 16, 600,
        drives=drives, stripe_unit="16K",
    )  # fmt: skip
    return float(result["ops"][rw]["mbps"])


def test_an_array_behind_the_dmi_never_exceeds_it() -> None:
    # DMI 3.0 = PCIe 3.0 x4: 8 GT/s x 4 x 128/130 / 8 x 256 / 280 of payload.
    dmi_mbps = 8e9 * 4 * 128 / 130 / 8 * 256 / 280 / 1e6
    for drives in (2, 3):
        for rw in ("read", "write"):
            mbps = _rst_mbps(rw, drives)
            assert mbps <= dmi_mbps * 1.0001, (drives, rw, mbps)
    # With one member on the CPU's lanes the pair is no longer held to it.
    mbps = run("samsung-960-pro-512g", "windows-softraid-z270", "read", "1M", 1, 16, 600, drives=2)[
        "ops"
    ]["read"]["mbps"]
    assert mbps > 1.5 * dmi_mbps


def test_the_z270_dmi_carries_writes_in_64_byte_completions() -> None:
    # Write data reaches the drives behind the DMI as completions of 64 B (3.94 GB/s x
    # 64 / 84 = 3.0 GB/s), read data leaves them as 256 B writes (3.6 GB/s by the TLP
    # arithmetic): TweakTown measured Z170's DMI 3.0 at about 3 GB/s for writes and
    # 3.4 GB/s for reads, the presets' measured read ceiling.
    completion_mbps = 8e9 * 4 * 128 / 130 / 8 * 64 / 84 / 1e6
    mbps = {rw: _rst_mbps(rw, 2) for rw in ("read", "write")}
    assert 0.95 * completion_mbps < mbps["write"] <= completion_mbps * 1.005, mbps
    assert 3400 * 0.99 < mbps["read"] <= 3400 * 1.005, mbps
    # One drive writes its datasheet's 2.1 GB/s behind it: the DMI does not bind.
    one = run("samsung-960-pro-512g", "z270-m2", "write", "1M", 1, 16, 600)["ops"]["write"]
    assert one["mbps"] > 2000, one


def test_reproduce_nvme_raid0_covers_m13_to_m18() -> None:
    frame = claim_studies.reproduce_claims("nvme-raid0", progress=False, jobs=1)
    assert sorted(set(frame["claim_id"])) == ["M13", "M14", "M15", "M16", "M17", "M18"]
    assert (frame["result"] != "not covered").all()
    assert all(math.isfinite(value) for value in frame["simulated"])
    # M18 is an invariant of the model: the DMI caps every array behind it.
    assert (frame[frame["claim_id"] == "M18"]["result"] == "PASS").all()
    assert NVME_RAID0.name in claim_studies.CLAIM_STUDIES


@pytest.mark.parametrize(
    ("overrides", "field", "words"),
    [
        ({"ncq_depth": 32}, "drive.ncq_depth", "unknown key"),
        ({"link_rate_bytes_per_s": 4e9}, "drive.link_rate_bytes_per_s", "unknown key"),
        ({"pcie_lanes": 3}, "pcie_lanes", "1, 2, 4, 8 or 16 lanes"),
        ({"pcie_gen": 7}, "pcie_gen", "1"),
    ],
)
def test_bad_nvme_keys_give_one_clear_error(overrides: dict, field: str, words: str) -> None:
    drive = {"preset": "samsung-960-pro-512g", **overrides}
    with pytest.raises(RaidlabError) as refused:
        build_array(ArrayRequest(drive=drive, controller="nvme-cpu"))
    assert field in refused.value.field
    assert words in refused.value.message


def test_bad_nvme_key_on_the_command_line_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "nvme.toml"
    config.write_text(
        '[array]\ncontroller = "nvme-cpu"\n[array.drive]\npreset = "samsung-960-pro-512g"\n'
        "pcie_lanes = 3\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "raidlab.cli", "run", "--config", str(config), "--ios", "100"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "pcie_lanes" in lines[0]
