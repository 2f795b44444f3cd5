"""The ATTO Disk Benchmark sweep as scenarios.

ATTO writes a test file of ``length`` bytes sequentially at each transfer size, then
reads it back, for each queue depth ("overlapped I/O"). Each (queue depth, transfer
size) point becomes a write-pass scenario followed by a read-pass scenario over bytes
``0..length`` of the array. The simulator runs each scenario from a fresh state (the
read pass does not inherit the write pass's drive state).

I/O count per point: ``ios = clamp(length // size, 64, ios_max)`` -- one pass over the
file when that is short enough, bounded so small transfers do not take forever --
with a warm-up of ``max(8, ios // 10)`` I/Os that fills queues and buffers first.

ATTO's queue depth is not the number of I/Os in flight: a point at queue depth N keeps
ceil(N / 2) in flight (:func:`atto_in_flight`), what a single drive measured with ATTO
shows (docs/studies.md, "ATTO's queue depth").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from raidlab.errors import RaidlabError
from raidlab.scenario import limits
from raidlab.scenario.array import build_scenario, parse_int
from raidlab.scenario.workloads import (
    WorkloadRequest,
    build_workload,
    default_warmup_ios,
    op_metrics,
    parse_block_size,
)
from raidlab.units import SWEEP_POINTS_MAX, parse_size

# pandas loads where a frame is built, not with the module: the command line starts
# without it (docs/benchmarks.md, start-up).
if TYPE_CHECKING:
    import pandas as pd

ATTO_COLUMNS = ["op", "qd", "block_bytes", "mbps", "iops", "lat_mean_us", "lat_p99_us"]
ATTO_PASSES = ("write", "read")  # ATTO writes the file before it reads it back
IOS_MIN = 64
IOS_MAX_DEFAULT = 3000
IOS_MAX_LIMIT = 10_000_000
DEFAULT_QUEUE_DEPTHS = (1, 4)


def parse_ios_max(value: Any, label: str) -> int:
    """Measured I/Os per point (ATTO's, a study's, a PTS cell's), IOS_MIN..IOS_MAX_LIMIT."""
    return parse_int(value, label, IOS_MIN, IOS_MAX_LIMIT)


DEFAULT_SIZES = "512..8M"
DEFAULT_LENGTH = "256M"


@dataclass(frozen=True)
class AttoPoint:
    """One pass of the sweep: its coordinates and the scenario that simulates it."""

    op: str
    qd: int
    block_bytes: int
    scenario: dict[str, Any]


def parse_queue_depths(value: str | int | Sequence[int], label: str = "qd") -> list[int]:
    """Queue depths from ``"1,4,16"``, ``"1..256"`` (doubling) or a list; each within the
    native side's ``workload.iodepth``."""
    iodepth = limits.field("workload.iodepth", "jobs")
    depth_max = int(iodepth.max or 1)
    items: list[Any]
    if isinstance(value, int):
        items = [value]
    elif isinstance(value, str):
        items = []
        for item in value.split(","):
            first, dots, last = item.strip().partition("..")
            if dots:
                low = limits.parse_checked(first, iodepth, label)
                high = parse_int(last, label, low, depth_max, "range end must be")
                while low <= high:
                    items.append(low)
                    low *= 2
            else:
                items.append(first)
    else:
        items = list(value)
    depths = sorted({limits.parse_checked(item, iodepth, label) for item in items})
    if not depths or len(depths) > SWEEP_POINTS_MAX:
        raise RaidlabError(label, f"give 1..={SWEEP_POINTS_MAX} queue depths")
    return depths


def atto_in_flight(qd: int) -> int:
    """I/Os ATTO keeps in flight at its queue depth ``qd``: ceil(qd / 2), so QD 2 is one
    I/O at a time and QD 4 two.

    No ATTO document says how it issues its queue; the single drive's rows of the SSD
    RAID 0 study (data/reference/ssd_raid0_atto.csv, one SP900 measured with ATTO at QD
    1-256) do. QD 2 gives what QD 1 gives at every transfer size, reads and writes (reads
    of 128 KiB-32 MiB within 2 %: at 8 MiB 490 and 490 MB/s, where a second request in
    flight would hide the ~1 ms the drive loses between requests, and QD 4 gives 522),
    and QD 4's mid-size reads stay far below what four in flight reach (64 KiB: 361 MB/s
    at QD 4, 453 at QD 8, 503 at QD 32). Read as ceil(N / 2) in flight, the drive model
    fits the study's 346 single-drive rows at 5.4 % MAPE; read as N in flight it needed a
    70 us queued-command path to hold QD 2 down and fitted them at 6.7 %, with QD 2 reads
    of 32-512 KiB 35-106 % high (docs/studies.md). N - 1 in flight fits at 6.2 %. An
    odd depth rounds up."""
    return max(1, (qd + 1) // 2)


def atto_ios(length_bytes: int, block_bytes: int, ios_max: int) -> int:
    """Measured I/Os of one point: one pass over the file, within [64, ios_max]."""
    return min(max(length_bytes // block_bytes, IOS_MIN), ios_max)


def atto_points(
    array: Mapping[str, Any],
    queue_depths: Sequence[int],
    sizes: Sequence[int],
    length: Any,
    ios_max: int = IOS_MAX_DEFAULT,
    seed: int = 1,
    labels: Mapping[str, str] | None = None,
) -> list[AttoPoint]:
    """Scenarios of the sweep, ordered by queue depth, then size, write pass first."""
    labels = dict(labels or {})
    length_label = labels.get("length", "length")
    length_bytes = parse_size(length, length_label)
    ios_max = parse_ios_max(ios_max, labels.get("ios_max", "ios_max"))
    sizes = [parse_block_size(size, labels.get("sizes", "sizes")) for size in sizes]
    if not sizes:
        raise RaidlabError(labels.get("sizes", "sizes"), "give at least one transfer size")
    if length_bytes < max(sizes):
        raise RaidlabError(
            length_label,
            f"the test file must hold the largest transfer ({max(sizes)} B), got {length}",
        )
    workload_labels = {
        "size": length_label,
        "iodepth": labels.get("qd", "qd"),
        "bs": labels.get("sizes", "sizes"),
    }
    points: list[AttoPoint] = []
    for qd in queue_depths:
        for block_bytes in sizes:
            for op in ATTO_PASSES:
                scenario = atto_scenario(
                    array, op, qd, block_bytes, length_bytes, ios_max, seed, workload_labels
                )
                points.append(AttoPoint(op, qd, block_bytes, scenario))
    return points


def atto_scenario(
    array: Mapping[str, Any],
    op: str,
    qd: int,
    block_bytes: int,
    length_bytes: int,
    ios_max: int,
    seed: int,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One ATTO pass: ``op`` sequentially over bytes ``0..length_bytes`` at ATTO's queue
    depth ``qd`` (``atto_in_flight(qd)`` I/Os in flight)."""
    assert op in ATTO_PASSES, f"ATTO passes are {ATTO_PASSES}"
    ios = atto_ios(length_bytes, block_bytes, ios_max)
    workload = build_workload(
        WorkloadRequest(
            rw=op,
            bs=block_bytes,
            iodepth=atto_in_flight(qd),
            numjobs=1,
            offset=0,
            size=length_bytes,
            ios=ios,
            warmup_ios=default_warmup_ios(ios),
            labels=dict(labels or {}),
        ),
        array,
    )
    return build_scenario(array, workload, seed)


def atto_frame(points: Sequence[AttoPoint], results: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The sweep's results, columns ATTO_COLUMNS, sorted by op, qd, block_bytes."""
    import pandas as pd

    assert len(points) == len(results), "one result per point"
    rows = []
    for point, result in zip(points, results, strict=True):
        metrics = op_metrics(result["ops"][point.op])
        rows.append(
            {
                "op": point.op,
                "qd": point.qd,
                "block_bytes": point.block_bytes,
                **{key: metrics[key] for key in ATTO_COLUMNS[3:]},
            }
        )
    frame = pd.DataFrame(rows, columns=ATTO_COLUMNS)
    return frame.sort_values(["op", "qd", "block_bytes"], kind="stable", ignore_index=True)
