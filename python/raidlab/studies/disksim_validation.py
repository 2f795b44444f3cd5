"""DiskSim 4's real-disk validation, run through raidlab: each development disk's
parameters imported from its ``.parv`` (``raidlab.scenario.disksim``), its "validate"
trace replayed one request at a time with the trace's own think times on that one
drive behind an HBA (as DiskSim's validation topology, whose driver, buses and
controller cost nothing), and the demerit computed exactly as DiskSim computes it.

The demerit (DiskSim 4, ``src/rms.c``, run by ``valid/runvalid`` as ``rms outv outv
-1 -1 1``): the response-time distributions, simulated ("IOdriver Physical access
time") and measured ("VALIDATE Trace access time"), are binned by ``valid/statdefs``
(1750 buckets of 1 us from 0, each past 100 us 1 % wider than the last); each is read
as its printed CDF (bucket upper edges in ms, cumulative fraction to 6 decimals, up
to the first row at 1.0); at every fraction p = 0.0001, 0.0002, ... 1.0 the value of
each CDF is interpolated linearly, and the rms of their differences is the figure
(ms), the horizontal distance between the two CDFs. Ruemmler and Wilkes' "demerit"
(IEEE Computer 27(3), 1994), which DiskSim's papers quote, is that rms as a percentage
of the measured mean response time.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raidlab import _native
from raidlab.errors import RaidlabError, read_user_text
from raidlab.scenario.disksim import SECTOR_BYTES, import_parv
from raidlab.studies.reference_data import checkout_data

# The development disks (the other validation disks of DiskSim's valid/ are kept out
# of the project for an independent check) and the rms (ms) DiskSim's valid/runvalid
# says DiskSim itself gets on each.
DEVELOPMENT_DISKS: dict[str, float] = {
    "atlas_III": 0.378,
    "barracuda": 0.349,
    "cheetah4LP": 0.318,
    "cheetah9LP": 0.107,
    "ibm18es": 0.135,
}

# valid/statdefs, "Physical access time" and "Trace access time": Distribution size
# 1750, Scale 1000 (values in us), Start 0 step 1 grow 1 (%).
BUCKETS = 1750
SCALE = 1000
RMS_STEP = 0.0001  # rms.c RMS_INCR


def _bucket_starts() -> list[int]:
    starts, value = [], 0
    for _ in range(BUCKETS):
        starts.append(value)
        value += 1 + int(abs(value) * 1 / 100)  # disksim_stat.c, stat_get_large_dist
    return starts


BUCKET_STARTS = _bucket_starts()


@dataclass(frozen=True)
class TraceRequest:
    """One line of a DiskSim validate trace."""

    write: bool
    lbn: int
    sectors: int
    measured_us: float
    think_us: float


def read_validate_trace(path: str | Path, label: str = "TRACE") -> list[TraceRequest]:
    """A DiskSim "validate" trace: ``R|W  Hit|Miss|Doub|Trip  LBN  sectors
    service-us  next-inter-arrival-us`` a line (``disksim_iotrace.c``,
    ``iotrace_validate_get_ioreq_event``); a bad line is an error naming it."""
    path = Path(path)
    requests = []
    for number, line in enumerate(read_user_text(path, label).splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            if len(parts) != 6 or parts[0] not in ("R", "W"):
                raise ValueError
            if parts[1] not in ("Hit", "Miss", "Doub", "Trip"):
                raise ValueError
            request = TraceRequest(
                parts[0] == "W", int(parts[2]), int(parts[3]), float(parts[4]), float(parts[5])
            )
            if (
                request.sectors <= 0
                or request.lbn < 0
                or min(request.measured_us, request.think_us) < 0
            ):
                raise ValueError
        except ValueError:
            raise RaidlabError(
                label,
                f"{path.name}:{number}: expected 'R|W Hit|Miss|Doub|Trip LBN sectors "
                f"service-us think-us', got {line.strip()!r}",
            ) from None
        requests.append(request)
    if not requests:
        raise RaidlabError(label, f"{path.name}: no requests")
    return requests


def printed_cdf(values_ms: Sequence[float]) -> tuple[list[float], list[float]]:
    """The CDF DiskSim prints for ``values_ms`` (``stat_update`` then
    ``stat_print_large_dist``) as ``rms.c``'s ``get_line`` reads it back: bucket
    labels (ms) and cumulative fractions (6 decimals), up to the first at 1.0."""
    counts = [0] * BUCKETS
    for value in values_ms:
        intval = int(value * SCALE)  # C's truncation
        counts[min(bisect.bisect_right(BUCKET_STARTS, intval), BUCKETS - 1)] += 1
    xs, ys, dist = [], [], 0.0
    for start, count in zip(BUCKET_STARTS, counts, strict=True):
        dist += count / len(values_ms)
        xs.append(float(f"{start / SCALE:6.3f}"))
        ys.append(float(f"{dist:f}"))
        if ys[-1] >= 1.0:
            break
    return xs, ys


def rms_ms(simulated_ms: Sequence[float], measured_ms: Sequence[float]) -> float:
    """DiskSim's rms (``rms.c``, ``compute_rms``): the root mean square horizontal
    distance between the two printed CDFs at every 0.0001 of the fraction."""
    x1, y1 = printed_cdf(simulated_ms)
    x2, y2 = printed_cdf(measured_ms)
    i1 = i2 = 0
    squares, count = 0.0, 0
    point = RMS_STEP
    while point <= 1.0:
        while y1[i1] < point:
            i1 += 1
        while y2[i2] < point:
            i2 += 1
        a = x1[i1 - 1] + (point - y1[i1 - 1]) / (y1[i1] - y1[i1 - 1]) * (x1[i1] - x1[i1 - 1])
        b = x2[i2 - 1] + (point - y2[i2 - 1]) / (y2[i2] - y2[i2 - 1]) * (x2[i2] - x2[i2 - 1])
        squares += (a - b) ** 2
        count += 1
        point += RMS_STEP
    return math.sqrt(squares / count)


@dataclass(frozen=True)
class Validation:
    """One disk's replay: raidlab's and DiskSim's rms and demerit."""

    disk: str
    requests: int
    measured_mean_ms: float
    simulated_mean_ms: float
    rms_ms: float
    disksim_rms_ms: float | None

    @property
    def demerit_percent(self) -> float:
        return 100 * self.rms_ms / self.measured_mean_ms

    @property
    def disksim_demerit_percent(self) -> float | None:
        if self.disksim_rms_ms is None:
            return None
        return 100 * self.disksim_rms_ms / self.measured_mean_ms


def simulated_times_ms(array: dict, requests: Sequence[TraceRequest]) -> list[float]:
    """Each request's response time on ``array``'s one HDD (``_native.hdd_replay``)."""
    rows = [
        (r.write, r.lbn * SECTOR_BYTES, r.sectors * SECTOR_BYTES, round(r.think_us * 1000))
        for r in requests
    ]
    try:
        times_ns = _native.hdd_replay(json.dumps(array), rows)
    except _native.ScenarioError as error:
        field, message = error.args if len(error.args) == 2 else ("trace", str(error))
        raise RaidlabError(str(field), str(message)) from None
    return [t / 1e6 for t in times_ns]


def validate_disk(
    parv: str | Path, trace: str | Path, array: dict, disk: str, limit: int | None = None
) -> Validation:
    """Replay ``trace`` (its first ``limit`` requests) on ``array`` and compare."""
    requests = read_validate_trace(trace)[:limit]
    simulated = simulated_times_ms(array, requests)
    measured = [r.measured_us / 1000 for r in requests]
    return Validation(
        disk=disk,
        requests=len(requests),
        measured_mean_ms=sum(measured) / len(measured),
        simulated_mean_ms=sum(simulated) / len(simulated),
        rms_ms=rms_ms(simulated, measured),
        disksim_rms_ms=DEVELOPMENT_DISKS.get(disk) if limit is None else None,
    )


def drive_table(parv: str | Path, label: str = "FILE") -> dict:
    """The drive file's table of a DiskSim disk, as a drive preset table."""
    import tomllib

    drive = import_parv(parv, label)
    table = tomllib.loads(drive.toml(Path(parv)))
    return table[drive.name]


def checkout_directory() -> Path | None:
    """``data/disksim`` of the source checkout this package runs from, or None."""
    return checkout_data("disksim")


def default_directory() -> Path | None:
    """Where the DiskSim files are read from without ``--data``: the checkout's
    ``data/disksim`` (the project's place for them), else the copy the package ships
    (``raidlab/studies/disksim``, byte-identical: tests/test_disksim_data.py), so an
    installed package validates too."""
    checkout = checkout_directory()
    if checkout is not None:
        return checkout
    packaged = Path(__file__).resolve().parent / "disksim"
    return packaged if packaged.is_dir() else None


def run_validation(
    disks: Sequence[str], data_dir: str | Path | None, build_array: Any, limit: int | None = None
) -> list[Validation]:
    """Validate each of ``disks`` (names of ``DISK.parv`` + ``DISK.trace`` in
    ``data_dir``, default the checkout's ``data/disksim``); ``build_array`` turns a
    drive table into the scenario's array (one drive behind an HBA)."""
    directory = Path(data_dir) if data_dir is not None else default_directory()
    if directory is None or not directory.is_dir():
        raise RaidlabError("--data", "give the directory of the DiskSim files (data/disksim)")
    out = []
    for disk in disks or list(DEVELOPMENT_DISKS):
        parv, trace = directory / f"{disk}.parv", directory / f"{disk}.trace"
        for path in (parv, trace):
            if not path.is_file():
                raise RaidlabError("DISK", f"{disk}: no {path.name} in {directory}")
        array = build_array(drive_table(parv, "DISK"))
        out.append(validate_disk(parv, trace, array, disk, limit))
    return out
