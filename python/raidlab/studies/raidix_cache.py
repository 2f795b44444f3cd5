"""RAIDIX's SSD cache (RRC/RWC) in front of a RAID 6 of HDDs: every row of
``raidix_cache.csv`` (with and without the cache) and claims M01–M04 of
``misc_claims.csv``, predicted from the drive presets and the policy rules of
``raidlab-cache`` (nothing here is fitted to a row; docs/cache-tier.md).

The article's system: main storage RAID 6 of 13 HDDs (3072 GB), the cache RAID 10 of
4 SAS SSDs (372 GB). What the article does not say is assumed and listed in METHOD:
request sizes, queue depths, the hot set each "100 % cache hit" test reads.

A row's workloads come from the CSV's own columns (``pattern_workloads``): the rows of
one ``pattern`` run together, one workload per ``op``, at the cache-hit share the
pattern's text states. A row whose pattern cannot be mapped is kept unsimulated,
with the reason in ``.attrs["not_simulated"]`` (docs/studies.md, "Rows the reference
files do not have yet").
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from raidlab.scenario.array import ArrayRequest, build_array, build_scenario
from raidlab.scenario.cache import attach_cache
from raidlab.scenario.executor import run_scenarios
from raidlab.scenario.workloads import cache_hit_distribution
from raidlab.studies import reference_data

if TYPE_CHECKING:
    import pandas as pd

STUDY = "raidix-cache"
TITLE = "SSD cache in RAIDIX: RRC/RWC against LRU (RAID 6 of 13 HDDs, RAID 10 of 4 SAS SSDs)"
HDD = "seagate-cheetah-15k7-300g"
SSD = "hgst-ultrastar-ssd400m-200g"
CONTROLLER = "linux-md"  # RAIDIX is software RAID on a server: no RAID controller
GIB = 1 << 30
HOT_BYTES = GIB // 2  # assumed: the hot set a "100 % cache hit" test reads, well inside the cache
BLOCK = 4096  # assumed: the article's IOPS figures are 4 KiB requests (not stated)
LARGE_BLOCK = 1 << 20  # assumed: "large block" sequential streams of 1 MiB
IODEPTH = 16  # assumed: outstanding requests per test worker (not stated)
# Each hot line is touched this many times on average before measuring: with uniform
# picks a line stays under RAIDIX's 3 touches with probability e^-20 (1 + 20 + 200) < 1e-6.
WARMUP_TOUCHES = 20
IOS_DEFAULT = 20_000
# M01-M04: the reference workload (the article does not describe its conditions).
REFERENCE_MIX = {"rw": "randrw", "rwmixread": 90, "zipf": 0.8, "region_bytes": 1024 * GIB}

METHOD = (
    f"main array RAID 6 of 13 x {HDD}, cache RAID 10 of 4 x {SSD} (372 GiB), "
    f"controller {CONTROLLER} for both",
    f"random requests {BLOCK // 1024} KiB, sequential ones {LARGE_BLOCK >> 20} MiB, "
    f"queue depth {IODEPTH} per workload (assumed: not in the article)",
    f"'100 % cache hit': a {HOT_BYTES >> 20} MiB hot set, scattered in 64 pieces over half "
    f"the array, read {WARMUP_TOUCHES} times per line on average before measuring with the "
    "cache (RAIDIX admits a random read on its 3rd touch)",
    "'80 % cache hit': 80 % of reads in the hot set, 20 % over the rest of the array",
    "rows with several request types run them as concurrent workloads; each row's "
    "simulated value is that workload's IOPS (or MB/s) and the gain is with / without "
    "the cache (units cancel: the article's 'Mbps' is read as MB/s)",
    "M01/M02 'write hits per SSD array' read as bytes the cache writes to its SSDs "
    "(host data, admissions, refills) per byte the host writes, on a reference mix "
    f"({REFERENCE_MIX['rw']} {REFERENCE_MIX['rwmixread']} % reads, zipf "
    f"{REFERENCE_MIX['zipf']} over {REFERENCE_MIX['region_bytes'] // GIB} GiB): an "
    "assumption, the article does not describe its conditions",
    "M04 lifespan: ratio of the cache SSDs' NAND writes (member bytes x FTL write "
    "amplification) per host byte, LRU over RAIDIX, same reference mix",
)

COLUMNS = [
    "row",
    "pattern",
    "request_type",
    "unit",
    "with_cache_stated",
    "without_cache_stated",
    "gain_stated",
    "with_cache_simulated",
    "without_cache_simulated",
    "gain_simulated",
]


@dataclass(frozen=True)
class Workload:
    """One concurrent test worker of a pattern."""

    name: str
    rw: str
    bs: int
    offset_bytes: int
    size_bytes: int
    hot_bytes: int = 0  # the part a cache-hit share points at (0: uniform)
    hit_pct: float = 100.0
    warm: bool = False


MAIN_BYTES = 11 * 300_000_000_000  # RAID 6 of 13 x 300 GB: 11 data members
HALF = MAIN_BYTES // 2 // GIB * GIB
WHOLE = MAIN_BYTES // GIB * GIB
SEQ_READ = Workload("sequential read", "read", LARGE_BLOCK, 16 * GIB, 256 * GIB)
SEQ_WRITE = Workload("sequential write", "write", LARGE_BLOCK, 512 * GIB, 256 * GIB)
# The request types a row's `op` names, in the order a pattern runs them.
OPS = ("random read", "random write", "sequential read", "sequential write")

# A pattern (the article's table row, the CSV's `pattern`, filled down over its request
# types) runs one concurrent workload per `op` of its rows. The random ones read or
# write a hot set: the share of the random load that hits the cache, from the text.
_HIT_TEXT = (
    re.compile(r"(\d+(?:\.\d+)?)\s*%\s*cache hit", re.IGNORECASE),
    re.compile(r"(\d+(?:\.\d+)?)\s*% of the random load hits the (?:SSD )?cache", re.IGNORECASE),
)
# "Random read from cache, ...": the random load is served from the cache.
_FROM_CACHE = re.compile(r"\b(?:from|in) (?:the )?(?:SSD )?cache\b", re.IGNORECASE)


class Unmapped(ValueError):
    """A pattern whose rows cannot become workloads; the message says why."""


def hit_pct(pattern: str) -> float:
    """The share of the random load that hits the cache, as the pattern's text states it:
    "N% cache hit", "N% of the random load hits the SSD cache", or "from cache" (100)."""
    for text in _HIT_TEXT:
        match = text.search(pattern)
        if match:
            value = float(match.group(1))
            if not 0 <= value <= 100:
                raise Unmapped(f"cache hit share {value:g} % is not within 0-100 %")
            return value
    if _FROM_CACHE.search(pattern):
        return 100.0
    raise Unmapped(
        "the pattern does not say what share of its random load hits the cache (expected "
        "'N% cache hit', 'N% of the random load hits the SSD cache' or 'from cache')"
    )


def random_workload(op: str, hit: float, alone: bool) -> Workload:
    """``op`` ("random read" or "random write") at ``hit`` % cache hits. At 100 %, reads
    go to the first half of the array and writes to the second, each with a HOT_BYTES
    hot set scattered over its half (the reads warmed before measuring). Below 100 %, a
    random workload that is its pattern's only one spreads its misses over the whole
    array; two share it by halves as at 100 %. At 0 % it is uniform and unwarmed."""
    read = op == "random read"
    offset, size = (0, HALF) if read else (HALF, HALF)
    if hit < 100 and alone:
        offset, size = 0, WHOLE
    if hit == 0:
        return Workload(op, "randread" if read else "randwrite", BLOCK, offset, size)
    return Workload(
        op,
        "randread" if read else "randwrite",
        BLOCK,
        offset,
        size,
        hot_bytes=HOT_BYTES,
        hit_pct=hit,
        warm=read,
    )


def pattern_workloads(pattern: str, rows: list[Mapping[str, str]]) -> tuple[Workload, ...]:
    """The concurrent workloads of ``pattern`` (every CSV row of it): one per request type,
    in OPS order; Unmapped says why there are none."""
    ops = []
    for row in rows:
        op = row["op"].strip()
        if op not in OPS:
            raise Unmapped(f"op {op!r} is not one of {', '.join(OPS)}")
        request = " ".join(row["request_type"].split()).lower()
        if not request.startswith(op):
            raise Unmapped(f"request_type {row['request_type']!r} is not op {op!r}")
        if row["unit"] not in UNITS:
            raise Unmapped(f"unit {row['unit']!r} is not one of {', '.join(UNITS)}")
        ops.append(op)
    ops = sorted(set(ops), key=OPS.index)
    shares = []
    for row in rows:
        try:
            shares.append(float(row["share_pct"]))
        except ValueError:
            raise Unmapped(f"share_pct {row['share_pct']!r} is not a number") from None
    # The workloads run side by side at the same queue depth: each request type is an
    # equal share of the load, as in every row the article's table has.
    if any(abs(share * len(ops) - 100.0) > 1.0 for share in shares):
        raise Unmapped(
            f"shares {', '.join(f'{share:g} %' for share in shares)} of {len(ops)} request "
            "types: only equal shares are simulated (concurrent workloads of one queue depth)"
        )
    randoms = [op for op in ops if op.startswith("random")]
    hit = hit_pct(pattern) if randoms else 100.0
    workloads = {
        "sequential read": SEQ_READ,
        "sequential write": SEQ_WRITE,
        **{op: random_workload(op, hit, len(randoms) == 1) for op in randoms},
    }
    return tuple(workloads[op] for op in ops)


# What a row's `unit` is: IOPS, or MB/s (the article's "Mbps" is read as MB/s).
UNITS = {"IOps": "IOPS", "IOPS": "IOPS", "Mbps": "MB/s", "MB/s": "MB/s", "MBps": "MB/s"}


def _number(text: str) -> float:
    """A stated figure; NaN where the row has none (the row is still simulated)."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return float("nan")


def _reference(name: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(reference_data.read_text(name))))


def main_array() -> dict[str, Any]:
    return build_array(
        ArrayRequest(level=6, drives=13, stripe_unit="64K", drive=HDD, controller=CONTROLLER)
    )


def with_cache(array: Mapping[str, Any], policy: str) -> dict[str, Any]:
    values = {"policy": policy, "drive": SSD, "drives": 4, "level": 10, "controller": CONTROLLER}
    return attach_cache(array, values, {})


def _workload(w: Workload, ios: int, cached: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": w.name,
        "rw": w.rw,
        "bs": [[w.bs, 1]],
        "iodepth": IODEPTH,
        "numjobs": 1,
        "offset_bytes": w.offset_bytes,
        "size_bytes": w.size_bytes,
        "ios": ios,
        "warmup_ios": 64,
    }
    if w.hot_bytes:
        spec["distribution"] = cache_hit_distribution(w.hit_pct, w.hot_bytes, w.size_bytes)
    if w.warm and cached:  # the array alone has nothing to warm
        hot = w.hot_bytes or w.size_bytes
        spec["warmup_ios"] = int(hot // w.bs * WARMUP_TOUCHES * 100 / w.hit_pct)
    return spec


def pattern_scenario(
    workloads: tuple[Workload, ...], array: Mapping[str, Any], ios: int, seed: int
) -> dict[str, Any]:
    scenario = build_scenario(array, {}, seed)
    del scenario["workload"]
    cached = "cache" in array
    scenario["workloads"] = [_workload(w, ios, cached) for w in workloads]
    return scenario


def reference_scenario(array: Mapping[str, Any], ios: int, seed: int) -> dict[str, Any]:
    scenario = build_scenario(array, {}, seed)
    del scenario["workload"]
    scenario["workloads"] = [
        {
            "name": "reference mix",
            "rw": REFERENCE_MIX["rw"],
            "rwmixread": REFERENCE_MIX["rwmixread"],
            "bs": [[BLOCK, 1]],
            "iodepth": IODEPTH,
            "numjobs": 1,
            "offset_bytes": 0,
            "size_bytes": REFERENCE_MIX["region_bytes"],
            "ios": ios * 10,
            "warmup_ios": ios * 10,
            "distribution": {"zipf": REFERENCE_MIX["zipf"]},
        }
    ]
    return scenario


def _job_value(results: Mapping[str, Any], job: str, op: str, unit: str) -> float:
    for j in results["jobs"]:
        if j["name"] == job:
            stats = j["ops"]["read" if "read" in op else "write"]
            return float(stats["iops"] if UNITS[unit] == "IOPS" else stats["mbps"])
    raise KeyError(job)


def _table_patterns(
    table: list[dict[str, str]],
) -> tuple[dict[str, tuple[Workload, ...]], dict[str, str]]:
    """The workloads of each pattern of the article's table (rows of one pattern run
    together), and why a pattern's text maps to none."""
    by_text: dict[str, list[dict[str, str]]] = {}
    for row in table:
        by_text.setdefault(" ".join(row["pattern"].split()), []).append(row)
    patterns: dict[str, tuple[Workload, ...]] = {}
    unmapped: dict[str, str] = {}
    for text, rows in by_text.items():
        try:
            patterns[text] = pattern_workloads(text, rows)
        except Unmapped as reason:
            unmapped[text] = str(reason)
    return patterns, unmapped


def _claim_rows(
    raidix_cache: Mapping[str, Any], lru_cache: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, float], dict[str, float]]:
    """The rows of claims M01-M04 from the two policies' cache reports, and their
    write-hit and NAND-bytes-per-host-byte figures."""
    rows: list[dict[str, Any]] = []
    claims = {c["claim_id"]: c for c in _reference("misc_claims.csv")}

    def host_written(report: Mapping[str, Any]) -> float:
        return float(report["host_write_bytes"]) or 1.0

    raidix_hits = float(raidix_cache["ssd_write_hits"])
    lru_hits = float(lru_cache["ssd_write_hits"])
    raidix_nand = float(raidix_cache["ssd_nand_write_bytes"]) / host_written(raidix_cache)
    lru_nand = float(lru_cache["ssd_nand_write_bytes"]) / host_written(lru_cache)
    simulated = {
        "M01": raidix_hits,
        "M02": lru_hits,
        "M03": lru_hits / raidix_hits,
        "M04": lru_nand / raidix_nand,
    }
    for claim_id, value in simulated.items():
        claim = claims[claim_id]
        rows.append(
            {
                "row": claim_id,
                "pattern": f"{claim['config']}: {claim['metric']}",
                "request_type": claim["condition"],
                "unit": claim["unit"],
                "with_cache_stated": float("nan"),
                "without_cache_stated": float("nan"),
                "gain_stated": float(claim["value"]),
                "with_cache_simulated": float("nan"),
                "without_cache_simulated": float("nan"),
                "gain_simulated": value,
            }
        )
    hits = {"raidix": raidix_hits, "lru": lru_hits}
    return rows, hits, {"raidix": raidix_nand, "lru": lru_nand}


def reproduce_raidix_cache(
    ios: int = IOS_DEFAULT,
    seed: int = 1,
    jobs: int | None = None,
    executor: Executor | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """One row per row of raidix_cache.csv and per claim M01-M04 (COLUMNS);
    ``.attrs`` carries the method and the write-hit figures of both policies."""
    import pandas as pd

    plain = main_array()
    cached = with_cache(plain, "raidix")
    table = _reference("raidix_cache.csv")
    patterns, unmapped = _table_patterns(table)
    scenarios = [
        pattern_scenario(w, a, ios, seed) for w in patterns.values() for a in (cached, plain)
    ]
    scenarios += [reference_scenario(with_cache(plain, p), ios, seed) for p in ("raidix", "lru")]
    results = run_scenarios(
        scenarios,
        jobs=jobs,
        executor=executor,
        progress=progress,
        description=f"reproducing {STUDY}",
    )
    by_pattern = {p: (results[2 * i], results[2 * i + 1]) for i, p in enumerate(patterns)}
    rows = []
    not_simulated = []
    nan = float("nan")
    for row in table:
        text = " ".join(row["pattern"].split())
        sim_with = sim_without = nan
        if text in by_pattern:
            with_r, without_r = by_pattern[text]
            op = row["op"].strip()
            sim_with = _job_value(with_r, op, op, row["unit"])
            sim_without = _job_value(without_r, op, op, row["unit"])
        else:
            not_simulated.append({"row": row["source_line"], "reason": unmapped[text]})
        rows.append(
            {
                "row": row["source_line"],
                "pattern": row["pattern"],
                "request_type": row["request_type"],
                "unit": UNITS.get(row["unit"], row["unit"]),
                "with_cache_stated": _number(row["with_cache"]),
                "without_cache_stated": _number(row["without_cache"]),
                "gain_stated": _number(row["gain_stated_x"]),
                "with_cache_simulated": sim_with,
                "without_cache_simulated": sim_without,
                "gain_simulated": sim_with / sim_without if sim_without else nan,
            }
        )
    raidix_cache, lru_cache = (r["explain"]["cache"] for r in results[-2:])
    claim_rows, hits, nand = _claim_rows(raidix_cache, lru_cache)
    rows.extend(claim_rows)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame.attrs["study"] = STUDY
    frame.attrs["title"] = TITLE
    frame.attrs["method"] = list(METHOD)
    frame.attrs["seed"] = seed
    frame.attrs["ios"] = ios
    # Rows kept in the frame without a simulation, and why (their pattern's text).
    frame.attrs["not_simulated"] = not_simulated
    frame.attrs["write_hits"] = hits
    frame.attrs["nand_bytes_per_host_byte"] = nand
    return frame
