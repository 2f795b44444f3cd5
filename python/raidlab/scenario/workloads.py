"""fio-style workloads -> the scenario's ``workload`` object (docs/scenario.md).

Options keep fio's names and meanings: ``rw``, ``bs`` (or a bssplit-like mix),
``rwmixread``, ``iodepth``, ``numjobs``, ``offset``, ``size``. ``ios`` and ``warmup_ios``
say how many host I/Os are measured and discarded first.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from raidlab.errors import RaidlabError
from raidlab.scenario import limits, native
from raidlab.scenario.array import array_capacity_bytes
from raidlab.scenario.tuning import drive_state, write_back_cache_bytes
from raidlab.units import parse_duration_ns, parse_size

# pandas loads where a frame is built, not with the module: the command line starts
# without it (docs/benchmarks.md, start-up).
if TYPE_CHECKING:
    import pandas as pd

SECTOR_BYTES = 512
# assumed: 20,000 measured I/Os give percentiles up to p99.9 from ~20 samples each.
DEFAULT_IOS = 20_000
WARMUP_IOS_MIN = 8
RUN_COLUMNS = ["op", "iops", "mbps", "lat_mean_us", "lat_p50_us", "lat_p99_us", "lat_p999_us"]
OPS = ("read", "write", "trim")


@dataclass(frozen=True)
class WorkloadRequest:
    """A workload as the user wrote it; ``labels`` name fields in errors (as in
    config.ArrayRequest). ``size=None`` means the whole array from ``offset``."""

    rw: Any = "read"
    bs: Any = "4K"
    rwmixread: Any = 50
    iodepth: Any = 1
    numjobs: Any = 1
    offset: Any = 0
    size: Any = None
    ios: Any = None
    warmup_ios: Any = None
    runtime_ns: Any = None
    labels: Mapping[str, str] = field(default_factory=dict)

    def label(self, key: str) -> str:
        return self.labels.get(key, key)


def parse_block_size(value: Any, label: str) -> int:
    """One transfer size, as a block-size mix of one would take it (bounds: the native
    side's ``workload.bs``)."""
    block_bytes = parse_size(value, label)
    limits.check(limits.field("workload.bs", "jobs"), [[block_bytes, 1]], label)
    return block_bytes


def fio_shares(
    entries: Sequence[tuple[int, str | None]], field: str, key: str = ""
) -> list[tuple[int, int]]:
    """Percent shares of a block-size mix by fio's rules for ``bssplit`` (fio 3.33
    options.c ``bssplit_ddir`` and io_u.c ``get_next_buflen``, checked against fio
    itself in tests/test_fio_compat.py): ``entries`` are (bytes, share text or None).

    - A share is a whole percentage (fio reads it with ``atoi``: ``33.7`` is 33); above
      100 it is 100; left empty, or 0, it is blank.
    - Blanks split what the others leave equally, in whole percent: ``4k/50:8k/`` is
      50/50, ``4k/33:8k/:16k/`` 33/33/33.
    - Shares are then taken smallest first (ties in the order given), each up to 100
      in all; what is left below 100 goes to the last, the largest: ``4k/30:8k/30``
      is 30/70 and ``4k/60:8k/60`` 60/40.
    - Given shares over 100 with a blank are refused: fio refuses two blanks and,
      with one, wraps an unsigned integer around.

    Returns (bytes, percent) with every percent above 0 and the sum 100, sizes that
    appear twice merged."""
    prefix = f"{key}: " if key else ""
    shares: list[tuple[int, int | None]] = []
    for block_bytes, text in entries:
        share = None
        if text is not None and text.strip():
            match = re.fullmatch(r"\s*(\d+)(\.\d*)?\s*", text)
            if match is None:
                raise RaidlabError(field, f"{prefix}a share is a percentage, got {text!r}")
            share = min(int(match.group(1)), 100) or None
        shares.append((block_bytes, share))
    given = sum(share for _, share in shares if share is not None)
    blanks = sum(1 for _, share in shares if share is None)
    if blanks and given > 100:
        raise RaidlabError(
            field,
            f"{prefix}shares add up to {given} %, over 100 with nothing left for the "
            f"{blanks} size(s) without one",
        )
    filled = [share if share is not None else (100 - given) // blanks for _, share in shares]
    # fio's walk: smallest share first (a stable sort keeps ties in their order).
    walk = [index for index in sorted(range(len(filled)), key=filled.__getitem__) if filled[index]]
    taken = [0] * len(filled)
    for index in walk:
        taken[index] = min(filled[index], 100 - sum(taken))
    taken[walk[-1]] += 100 - sum(taken)
    # The mix keeps the order given: the simulator's draws follow it.
    merged: dict[int, int] = {}
    for (block_bytes, _), share in zip(shares, taken, strict=True):
        merged[block_bytes] = merged.get(block_bytes, 0) + share
    assert sum(merged.values()) == 100, (entries, merged)
    return [(block_bytes, share) for block_bytes, share in merged.items() if share > 0]


def parse_bs(value: Any, label: str) -> list[list[int]]:
    """Block-size mix ``[[bytes, weight], ...]`` from ``4K``, ``4096``, a mix of
    percent shares ``"4K:55,64K:25,128K:20"`` (fio's rules: ``fio_shares``; a size
    without a share, ``4K:60,64K``, splits what is left) or an already-built list of
    ``[bytes, weight]`` pairs (weights, any positive integers); the native side checks
    the sizes, the weights and the number of entries."""
    if isinstance(value, int | str) and not (isinstance(value, str) and ":" in value):
        return [[parse_block_size(value, label), 1]]
    if isinstance(value, str):
        items = [item.partition(":") for item in value.split(",")]
        sizes = [parse_size(size_text.strip(), label) for size_text, _, _ in items]
        shares = fio_shares(
            [(size, share) for size, (_, _, share) in zip(sizes, items, strict=True)], label
        )
        mix = [[block_bytes, share] for block_bytes, share in shares]
    elif isinstance(value, list | tuple):
        pairs: list[tuple[Any, Any]] = []
        for item in value:
            if not isinstance(item, list | tuple) or len(item) != 2:
                raise RaidlabError(label, f"mix entries are [bytes, weight], got {item!r}")
            pairs.append((item[0], item[1]))
        mix = [[parse_size(size, label), limits.whole(weight, label)] for size, weight in pairs]
    else:
        raise RaidlabError(label, f"expected a size or a mix like 4K:55,64K:45, got {value!r}")
    limits.check(limits.field("workload.bs", "jobs"), mix, label)
    return mix


def default_warmup_ios(ios: int) -> int:
    """A tenth of the measured I/Os, at least 8: enough to fill queues and buffers."""
    return max(WARMUP_IOS_MIN, ios // 10)


WRITE_MODES = ("write", "randwrite", "rw", "readwrite", "randrw")  # trims fill no buffer


def write_buffers(array: Mapping[str, Any]) -> tuple[int, int]:
    """Bytes of write buffer: the drives' together, and the controller's write-back
    cache in front of them (0 when it writes through or has none)."""
    drives = int(array["drive"].get("write_buffer_bytes") or 0) * int(array["drive_count"])
    return drives, write_back_cache_bytes(array.get("controller", {}))


def steady_fill_ios(
    array: Mapping[str, Any], rw: str, bs: Sequence[Sequence[int]], rwmixread: int
) -> int:
    """Warm-up I/Os that write twice what the drives' write buffers and a write-back
    cache in front of them hold, for a run that writes to SSDs in steady state (0 for
    any other): a drive long in service under this workload has them full, so the
    measured writes go at the rate they drain, not into empty buffers. (A 2,000-I/O
    warm-up of 4 KiB writes fills 8 MB of a RAID 5 of three S3500s' 48 MiB: its writes
    came out 39 % fast, 13.8k IOPS against 9.9k; behind a 1 GiB write-back cache, 50x.)"""
    if rw not in WRITE_MODES or drive_state(array) != "steady":
        return 0
    held = sum(write_buffers(array))
    mean_bytes = sum(size * weight for size, weight in bs) / sum(weight for _, weight in bs)
    write_share = 1 - rwmixread / 100 if rw in ("rw", "readwrite", "randrw") else 1.0
    if held <= 0 or write_share <= 0:
        return 0
    return math.ceil(2 * held / (write_share * mean_bytes))


# The scenario path of each WorkloadRequest key: a refusal names the key's label.
REQUEST_PATHS = {
    "rw": "workload.rw",
    "bs": "workload.bs",
    "rwmixread": "workload.rwmixread",
    "iodepth": "workload.iodepth",
    "numjobs": "workload.numjobs",
    "offset": "workload.offset_bytes",
    "size": "workload.size_bytes",
    "ios": "workload.ios",
    "warmup_ios": "workload.warmup_ios",
    "runtime_ns": "workload.runtime_ns",
}


def build_workload(request: WorkloadRequest, array: Mapping[str, Any]) -> dict[str, Any]:
    """Validate ``request`` against ``array`` and return the scenario's ``workload``.
    Each field is parsed by its kind and checked by the native side, and then the
    whole scenario (the region inside the array, ...); a refusal names the label."""

    def field(key: str, value: Any) -> Any:
        return limits.parse_path(value, REQUEST_PATHS[key], request.label(key), "jobs")

    rw = field("rw", request.rw)
    bs = parse_bs(request.bs, request.label("bs"))
    rwmixread = field("rwmixread", request.rwmixread)
    iodepth = field("iodepth", request.iodepth)
    numjobs = field("numjobs", request.numjobs)
    offset_bytes = field("offset", request.offset)
    if request.size is None:
        size_bytes = max(0, array_capacity_bytes(array) - offset_bytes)
    else:
        size_bytes = field("size", request.size)
    ios: int = DEFAULT_IOS if request.ios is None else field("ios", request.ios)
    warmup_ios = (
        max(default_warmup_ios(ios), steady_fill_ios(array, rw, bs, rwmixread))
        if request.warmup_ios is None
        else field("warmup_ios", request.warmup_ios)
    )
    runtime_ns = (
        None
        if request.runtime_ns is None
        else parse_duration_ns(request.runtime_ns, request.label("runtime_ns"))
    )
    if runtime_ns is not None and request.ios is None:
        # A runtime alone runs until the simulated time is up (fio's time_based).
        ios = int(limits.field("workload.ios", "jobs").max or DEFAULT_IOS)
    workload = {
        "rw": rw,
        "bs": bs,
        "rwmixread": rwmixread,
        "iodepth": iodepth,
        "numjobs": numjobs,
        "offset_bytes": offset_bytes,
        "size_bytes": size_bytes,
        "ios": ios,
        "warmup_ios": warmup_ios,
        "runtime_ns": runtime_ns,
        "distribution": "uniform",
    }
    scenario = {"schema": 1, "seed": 0, "array": dict(array), "workload": workload}
    labels = {path: request.label(key) for key, path in REQUEST_PATHS.items()}
    limits.refused(native.validate(scenario), labels)
    return workload


def op_metrics(stats: Mapping[str, Any]) -> dict[str, float]:
    """One direction's results in the front end's units (MB/s, microseconds)."""
    percentiles = stats.get("percentiles_ns", {})
    return {
        "iops": float(stats["iops"]),
        "mbps": float(stats["mbps"]),
        "lat_mean_us": float(stats["lat_mean_ns"]) / 1000.0,
        "lat_p50_us": _percentile_us(percentiles, "50"),
        "lat_p99_us": _percentile_us(percentiles, "99"),
        # The 99.9th: the share datasheets' quality-of-service figures bound.
        "lat_p999_us": _percentile_us(percentiles, "99.9"),
    }


def _percentile_us(percentiles: Mapping[str, Any], key: str) -> float:
    # Keys are matched by value: docs/scenario.md writes "99", the simulator may write
    # "99.000000"; both mean the 99th percentile.
    wanted = float(key)
    for name, value in percentiles.items():
        try:
            if float(name) == wanted:
                return float(value) / 1000.0
        except ValueError:
            continue
    return float("nan")


def run_rows(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per direction that did I/O, keys RUN_COLUMNS."""
    return [
        {"op": op, **op_metrics(results["ops"][op])} for op in OPS if op in results.get("ops", {})
    ]


def run_frame(results: Mapping[str, Any]) -> pd.DataFrame:
    """One row per direction that did I/O, columns RUN_COLUMNS."""
    import pandas as pd

    return pd.DataFrame(run_rows(results), columns=RUN_COLUMNS)


@dataclass(frozen=True)
class RunRows:
    """A fio-style run as plain rows (``run_rows``) and the ``attrs`` its DataFrame
    carries (explain, scenario, seed, sim_time_ns, rebuild). The command line prints a
    table from it without loading pandas; ``frame()`` is the API's DataFrame."""

    rows: list[dict[str, Any]]
    attrs: dict[str, Any]

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        frame = pd.DataFrame(self.rows, columns=RUN_COLUMNS)
        frame.attrs.update(self.attrs)
        return frame


def cache_hit_distribution(
    hit_pct: float, hot_bytes: int, region_bytes: int, spread: int = 64
) -> dict[str, Any]:
    """A random workload's ``distribution`` giving a cache-hit share: ``hit_pct`` % of
    the requests in a hot set of ``hot_bytes`` (sized to fit the cache), the rest over
    the remainder of a region of ``region_bytes``, too large to be re-read often enough
    to be admitted (docs/cache-tier.md). The hot set is cut into ``spread`` pieces laid
    evenly over the region, so the array without a cache seeks across it as it would
    for a hot set scattered over a volume. fio's ``zoned`` distribution."""
    if not 0 < hot_bytes < region_bytes:
        raise RaidlabError("hot_bytes", f"must be inside the region (0 < hot < {region_bytes})")
    if not 0 <= hit_pct <= 100:
        raise RaidlabError("hit_pct", f"must be 0..100, got {hit_pct}")
    hot_share = 100.0 * hot_bytes / region_bytes
    zones: list[list[float]] = []
    for _ in range(spread):
        zones.append([hit_pct / spread, hot_share / spread])
        zones.append([(100.0 - hit_pct) / spread, (100.0 - hot_share) / spread])
    return {"zoned": zones}
