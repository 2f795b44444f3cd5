"""RAIDIX's SSD cache (RRC/RWC) in front of a RAID 6 of HDDs: every row of
``raidix_cache.csv`` (with and without the cache) and claims M01–M04 of
``misc_claims.csv``, predicted from the drive presets and the policy rules of
``raidlab-cache`` (nothing here is fitted to a row; docs/cache-tier.md).

The article's system: main storage RAID 6 of 13 HDDs (3072 GB), the cache RAID 10 of
4 SAS SSDs (372 GB). What the article does not say is assumed and listed in METHOD:
request sizes, queue depths, the hot set each "100 % cache hit" test reads.
"""

from __future__ import annotations

import csv
import io
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
# The hot sets are scattered over half the array each (cache_hit_distribution).
RANDOM_READ = Workload("random read", "randread", BLOCK, 0, HALF, HOT_BYTES, warm=True)
RANDOM_WRITE = Workload("random write", "randwrite", BLOCK, HALF, HALF, HOT_BYTES)
SEQ_READ = Workload("sequential read", "read", LARGE_BLOCK, 16 * GIB, 256 * GIB)
SEQ_WRITE = Workload("sequential write", "write", LARGE_BLOCK, 512 * GIB, 256 * GIB)

# Patterns by the CSV's source line (the article's table rows).
PATTERNS: dict[str, tuple[Workload, ...]] = {
    "random read 100 % hit": (RANDOM_READ,),
    "random write 100 % hit": (RANDOM_WRITE,),
    "random read 80 % hit": (
        Workload(
            "random read",
            "randread",
            BLOCK,
            0,
            MAIN_BYTES // GIB * GIB,
            hot_bytes=HOT_BYTES,
            hit_pct=80.0,
            warm=True,
        ),
    ),
    "random read from cache, sequential write to HDD": (RANDOM_READ, SEQ_WRITE),
    "random read and write 100 % hit": (RANDOM_READ, RANDOM_WRITE),
    "large sequential streams with random load in cache": (
        RANDOM_READ,
        RANDOM_WRITE,
        SEQ_READ,
        SEQ_WRITE,
    ),
}
ROW_PATTERN = {
    404: "random read 100 % hit",
    405: "random write 100 % hit",
    406: "random read 80 % hit",
    407: "random read from cache, sequential write to HDD",
    408: "random read from cache, sequential write to HDD",
    409: "random read and write 100 % hit",
    410: "random read and write 100 % hit",
    411: "large sequential streams with random load in cache",
    412: "large sequential streams with random load in cache",
    413: "large sequential streams with random load in cache",
    414: "large sequential streams with random load in cache",
}
OP_WORKLOAD = {
    "random read": "random read",
    "random write": "random write",
    "sequential read": "sequential read",
    "sequential write": "sequential write",
}


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


def pattern_scenario(pattern: str, array: Mapping[str, Any], ios: int, seed: int) -> dict[str, Any]:
    scenario = build_scenario(array, {}, seed)
    del scenario["workload"]
    cached = "cache" in array
    scenario["workloads"] = [_workload(w, ios, cached) for w in PATTERNS[pattern]]
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
            return float(stats["iops"] if unit == "IOps" else stats["mbps"])
    raise KeyError(job)


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
    patterns = list(PATTERNS)
    scenarios = [pattern_scenario(p, a, ios, seed) for p in patterns for a in (cached, plain)]
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
    for row in _reference("raidix_cache.csv"):
        pattern = ROW_PATTERN[int(row["source_line"])]
        with_r, without_r = by_pattern[pattern]
        job = OP_WORKLOAD[row["op"]]
        sim_with = _job_value(with_r, job, row["op"], row["unit"])
        sim_without = _job_value(without_r, job, row["op"], row["unit"])
        rows.append(
            {
                "row": row["source_line"],
                "pattern": row["pattern"],
                "request_type": row["request_type"],
                "unit": "IOPS" if row["unit"] == "IOps" else "MB/s",
                "with_cache_stated": float(row["with_cache"]),
                "without_cache_stated": float(row["without_cache"]),
                "gain_stated": float(row["gain_stated_x"]),
                "with_cache_simulated": sim_with,
                "without_cache_simulated": sim_without,
                "gain_simulated": sim_with / sim_without if sim_without else float("nan"),
            }
        )
    raidix_cache, lru_cache = (r["explain"]["cache"] for r in results[-2:])
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
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame.attrs["study"] = STUDY
    frame.attrs["title"] = TITLE
    frame.attrs["method"] = list(METHOD)
    frame.attrs["seed"] = seed
    frame.attrs["ios"] = ios
    frame.attrs["write_hits"] = {"raidix": raidix_hits, "lru": lru_hits}
    frame.attrs["nand_bytes_per_host_byte"] = {"raidix": raidix_nand, "lru": lru_nand}
    return frame
