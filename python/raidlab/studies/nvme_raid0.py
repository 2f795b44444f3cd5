"""``nvme-raid0``: the NVMe RAID 0 claims of the HDD-vs-SSD RAID article
(``misc_claims.csv`` M13-M18), simulated as predictions.

The article put two Samsung 960 PRO drives (``samsung-960-pro-512g``) in RAID 0 on a
Gigabyte Z270X Gaming 7, once with Intel's chipset RAID (both drives in the board's M.2
slots, behind the chipset's DMI 3.0: ``intel-z270-rst``) and once as a Windows striped
volume with one drive on an M.2-to-PCIe adapter in a CPU slot
(``windows-softraid-z270``), and compared each with one drive. Its benchmark was ATTO;
it states gains over one drive (M13, M14, M16, M17), the theoretical +100 % (M15) and
that ATTO never exceeded the DMI's ~4 GB/s (M18).

Workload: ATTO's sequential passes at its default queue depth of 4 over large
transfers (256 KiB, 1 MiB, 8 MiB), each direction; a figure is the best MB/s over those
sizes, as a reader takes the plateau off an ATTO chart. Large transfers because the
claims are about throughput ceilings (links, DMI, flash), which only large sequential
transfers reach; QD 4 because it is what ATTO runs unless told otherwise. The single
drive is in the board's M.2 slot (``z270-m2``: behind the DMI, no RAID), as the
article's board offers it. No figure of any preset was set from these claims: the
drive is from its datasheet, the controllers from Intel's published DMI 3.0 (PCIe 3.0
x4 signalling), the DMI's write ceiling from 64 B completions and its read ceiling as
TweakTown measured it (about 3 GB/s of writes and 3.4 GB/s of reads through Z170's DMI
3.0), and the RST driver costs of ``intel-h97-rst``.
"""

from __future__ import annotations

from collections.abc import Callable

from raidlab.studies.claims import Check, ClaimStudy, Results, Run, Setup, Tolerance

DRIVE = "samsung-960-pro-512g"
ATTO_QD = 4  # ATTO Disk Benchmark's default queue depth ("overlapped I/O", 4)
# Transfer sizes of the plateau and the host I/Os measured at each (enough for a steady
# rate; an 8 MiB request is 512 strips of 16 KiB on RST).
ATTO_SIZES = {"256K": 4000, "1M": 1500, "8M": 300}
RST_STRIPE = "16K"  # misc_claims.csv M12: RST's default stripe, kept for SSD RAID 0
WINDOWS_STRIPE = "64K"  # Windows striped (dynamic disk) volumes use 64 KiB stripes
GAIN_TOLERANCE_PP = 15.0  # as the ssd-raid-tuning study's percentage claims (T04, T05)

SINGLE = Setup("one 960 PRO in the M.2 slot", "z270-m2", level=0, drives=1, drive=DRIVE)
RST = {
    n: Setup(
        f"RAID 0 of {n} on intel-z270-rst",
        "intel-z270-rst",
        level=0,
        drives=n,
        drive=DRIVE,
        stripe_unit=RST_STRIPE,
    )
    for n in (2, 3)
}
SOFTWARE = Setup(
    "Windows striped volume of 2, one drive on CPU lanes",
    "windows-softraid-z270",
    level=0,
    drives=2,
    drive=DRIVE,
    stripe_unit=WINDOWS_STRIPE,
)
# Theory (M15): two drives that share nothing, each on its own CPU lanes.
CPU_SINGLE = Setup("one 960 PRO on CPU lanes", "nvme-cpu", level=0, drives=1, drive=DRIVE)
CPU_PAIR = Setup(
    "RAID 0 of 2 on CPU lanes",
    "nvme-cpu",
    level=0,
    drives=2,
    drive=DRIVE,
    stripe_unit=WINDOWS_STRIPE,
)


def atto_runs(setup: Setup, rw: str) -> tuple[Run, ...]:
    """ATTO's passes in direction ``rw`` over the plateau's transfer sizes."""
    return tuple(Run(setup, rw, 1, ATTO_QD, bs, ios) for bs, ios in ATTO_SIZES.items())


def peak_mbps(results: Results, runs: tuple[Run, ...]) -> float:
    """Best MB/s of ``runs`` (ATTO's plateau)."""
    return max(float(results[run]["ops"][run.rw]["mbps"]) for run in runs)


def _gain_pct(array: Setup, single: Setup, rw: str) -> Callable[[Results], float]:
    array_runs, single_runs = atto_runs(array, rw), atto_runs(single, rw)
    return lambda results: (
        100.0 * (peak_mbps(results, array_runs) / peak_mbps(results, single_runs) - 1.0)
    )


def _gain_check(claim_id: str, variant: str, array: Setup, single: Setup, rw: str) -> Check:
    return Check(
        claim_id,
        variant,
        (*atto_runs(array, rw), *atto_runs(single, rw)),
        _gain_pct(array, single, rw),
        Tolerance("absolute", GAIN_TOLERANCE_PP, "pp"),
        f"100 x (peak MB/s of {array.name} / {single.name} - 1), ATTO sequential {rw}, QD "
        f"{ATTO_QD}, best of {', '.join(ATTO_SIZES)}",
    )


def _dmi_ceiling_check(setup: Setup) -> Check:
    runs = (*atto_runs(setup, "read"), *atto_runs(setup, "write"))
    return Check(
        "M18",
        f"{setup.drives} drives",
        runs,
        lambda results: max(float(results[r]["ops"][r.rw]["mbps"]) for r in runs) / 1000.0,
        Tolerance("upper_bound"),
        f"best GB/s of {setup.name} over ATTO's reads and writes at QD {ATTO_QD} "
        f"({', '.join(ATTO_SIZES)}): every member behind the one DMI 3.0",
    )


def nvme_raid0_checks() -> list[Check]:
    return [
        _gain_check("M13", "chipset RAID", RST[2], SINGLE, "read"),
        _gain_check("M14", "chipset RAID", RST[2], SINGLE, "write"),
        _gain_check("M15", "read", CPU_PAIR, CPU_SINGLE, "read"),
        _gain_check("M15", "write", CPU_PAIR, CPU_SINGLE, "write"),
        _gain_check("M16", "software RAID", SOFTWARE, SINGLE, "read"),
        _gain_check("M17", "software RAID", SOFTWARE, SINGLE, "write"),
        _dmi_ceiling_check(RST[2]),
        _dmi_ceiling_check(RST[3]),
    ]


NVME_RAID0 = ClaimStudy(
    name="nvme-raid0",
    title="NVMe RAID 0 over the chipset: two Samsung 960 PRO on a Z270 board (misc_claims M13-M18)",
    claims_file="misc_claims.csv",
    method=(
        f"drive {DRIVE} (datasheet figures only); chipset RAID = intel-z270-rst (both "
        "drives behind DMI 3.0, RST stripe 16 KiB, misc_claims M12); software RAID = "
        "windows-softraid-z270 (Windows striped volume, 64 KiB stripes, one drive on CPU "
        "lanes, one behind DMI); one drive = z270-m2 (the board's M.2 slot, behind DMI)",
        f"ATTO-like: sequential passes at QD {ATTO_QD} (ATTO's default) of "
        f"{', '.join(ATTO_SIZES)}; a figure is the best MB/s over those sizes (ATTO's "
        "plateau, where link and DMI ceilings show)",
        "theory (M15) = two drives on CPU lanes (nvme-cpu), nothing shared",
        "DMI 3.0 is a PCIe 3.0 x4 link (Intel 200 Series chipset datasheet): 3.94 GB/s "
        "each way after 128b/130b: ~3.6 GB/s of read data after TLP headers at 256 B "
        "payloads, held to the 3.4 GB/s TweakTown measured through Z170's DMI 3.0, and "
        "3.0 GB/s of write data in 64 B completions (measured: about 3 GB/s)",
        f"gains are checked within ±{GAIN_TOLERANCE_PP:g} percentage points; M18 holds "
        "where the best simulated rate is below 4 GB/s (an invariant, with 2 and 3 drives)",
        "every figure is a prediction: no preset figure was set from these claims",
    ),
    checks=nvme_raid0_checks,
    coverage={claim: "covered" for claim in ("M13", "M14", "M15", "M16", "M17", "M18")},
    claim_ids=("M13", "M14", "M15", "M16", "M17", "M18"),
)
