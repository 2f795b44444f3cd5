"""CrystalDiskMark's "Save as text" layout for ``raidlab cdm --format text``.

The layout is CDM 8's (DiskMarkDlg.cpp, SaveText and GetResultString, unchanged in
CDM 9): a banner, the unit notes, ``[Read]`` and ``[Write]`` blocks (and ``[Mix] Read
70%/Write 30%`` with a mix) of lines like
``  SEQ    1MiB (Q=  8, T= 1):   550.123 MB/s [    524.6 IOPS] <  15234.56 us>``, then
``Profile:``, ``Test:``, ``Mode:``, ``Time:``, ``Date:`` and ``OS:``. IOPS is derived
from MB/s and the block size as CDM derives it; latency is the lowest mean of the
runs. The banner names raidlab (it is not CDM's output), the date is fixed (the same
seed gives the same bytes, as fio's output here), ``OS:`` holds the simulated array,
and ``Time:`` says what was simulated instead of CDM's 5 s per test.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raidlab.frontends.suites import CDM_PROFILES, CdmTest
from raidlab.version import __version__

RULE = "-" * 78
PROFILE_NAMES = {"default": "Default", "nvme": "Default", "peak": "Peak", "peak-nvme": "Peak"}
PROFILE_NAMES["real"] = "Real"


def result_line(test: CdmTest, mbps: float, lat_us: float) -> str:
    """One result line, CDM's GetResultString: IOPS = MB/s x 10^6 / block bytes."""
    kind = "SEQ" if test.rw_seq else "RND"
    kib = test.block_bytes // 1024
    size = f"{kib // 1024:4d}MiB" if kib >= 1024 else f"{kib:4d}KiB"
    iops = mbps * 1e6 / test.block_bytes
    return (
        f"  {kind} {size} (Q={test.qd:3d}, T={test.threads:2d}): {mbps:9.3f} MB/s "
        f"[{iops:9.1f} IOPS] <{max(0.0, lat_us):9.2f} us>"
    )


def _size_text(size_bytes: int) -> str:
    if size_bytes >= 1 << 30:
        return f"{size_bytes >> 30} GiB"
    return f"{size_bytes >> 20} MiB"


def cdm_text(
    frame: Any,
    profile: str,
    runs: int,
    size_bytes: int,
    interval_s: int,
    mix_read: int | None,
    setup: str,
) -> str:
    """The whole text export of a ``suites.cdm`` frame."""
    tests = {test.label: test for test in CDM_PROFILES[profile]}
    rows: Mapping[tuple[str, str], Any] = {
        (row.test, row.op): row for row in frame.itertuples(index=False)
    }
    lines = [
        RULE,
        f"raidlab {__version__} cdm: CrystalDiskMark 8 tests, simulated",
        " " * 34 + "Crystal Dew World: https://crystalmark.info/",
        RULE,
        "* MB/s = 1,000,000 bytes/s [SATA/600 = 600,000,000 bytes/s]",
        "* KB = 1000 bytes, KiB = 1024 bytes",
        "",
    ]
    blocks = [("read", "[Read]"), ("write", "[Write]")]
    if mix_read is not None:
        blocks.append(("mix", f"[Mix] Read {mix_read}%/Write {100 - mix_read}%"))
    for op, title in blocks:
        lines.append(title)
        for label, test in tests.items():
            row = rows[(label, op)]
            lines.append(result_line(test, float(row.mbps), float(row.lat_mean_us)))
        lines.append("")
    lines += [
        f"Profile: {PROFILE_NAMES[profile]}",
        f"   Test: {_size_text(size_bytes)} (x{runs})",
        "   Mode:",
        f"   Time: Measure simulated / Interval {interval_s} sec ",
        "   Date: 1970/01/01 0:00:00",
        f"     OS: {setup}",
    ]
    return "\n".join(lines) + "\n"
