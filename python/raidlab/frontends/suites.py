"""Benchmarks people know, as scenarios: CrystalDiskMark, IOMeter access
specifications and SNIA PTS-style steady-state tests.

CrystalDiskMark (8.x): each test writes then reads a test file (default 1 GiB);
``default`` profile SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1; ``nvme`` profile
SEQ1M Q8T1, SEQ128K Q32T1, RND4K Q32T16, RND4K Q1T1; ``peak`` SEQ1M Q8T1, RND4K Q32T1
(``peak-nvme``: RND4K Q32T16); ``real`` SEQ1M Q1T1, RND4K Q1T1; a Mix block adds a
read/write mix of every test. Each test runs N times (default 5) and the best run
counts, as CDM's. CDM runs each test for 5 s; here
a sequential test moves the whole file once and a random one does ``ios`` I/Os per
thread group (default 20,000), which is enough for stable figures in a simulation.

IOMeter access specification, one string of ``;``-separated ``key=value`` items:
``bs=4K/55,64K/25,128K/20;read=75;random=75;workers=4;qd=1`` -- block sizes with their
share of the I/Os (``%`` of the spec), percentage of reads, percentage of random
accesses, workers (IOMeter's managers x workers) and outstanding I/Os per worker.
The random and sequential shares run as two concurrent streams whose I/O counts are
in that proportion (IOMeter interleaves them inside each worker).

SNIA PTS (SSS PTS 2.0): rounds of the test matrix until the steady-state rule holds on
the tracking variable (last 5 rounds: max - min within 20 % of their mean, and the
least-squares line's excursion across them within 10 % of the mean), at most 25
rounds. The simulator carries no drive state from one round to the next (no FTL
aging), so rounds differ only by their random seed; the rule is then met once that
noise is small, normally at round 5. Preconditioning is not simulated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from raidlab.errors import RaidlabError
from raidlab.scenario import limits
from raidlab.scenario.array import array_capacity_bytes, build_scenario, parse_int
from raidlab.scenario.executor import run_scenarios
from raidlab.scenario.workloads import (
    DEFAULT_IOS,
    WorkloadRequest,
    build_workload,
    parse_block_size,
)
from raidlab.units import format_size, parse_size

# pandas loads where a frame is built, not with the module: the command line starts
# without it (docs/benchmarks.md, start-up).
if TYPE_CHECKING:
    import pandas as pd

# --- CrystalDiskMark ------------------------------------------------------------------


@dataclass(frozen=True)
class CdmTest:
    label: str
    rw_seq: bool
    block_bytes: int
    qd: int
    threads: int


# CrystalDiskMark 8's tests (DiskMarkDlg.cpp, SettingsQueuesThreads: the "Default" and
# "NVMe SSD" settings; slots 4-5 are the Peak profile's tests, 6-7 the Real World's).
# Its Peak profile shows SEQ1M Q8T1 and RND4K Q32T1 (Q32T16 with the NVMe SSD setting);
# Real World shows SEQ1M Q1T1 and RND4K Q1T1.
CDM_PROFILES: dict[str, list[CdmTest]] = {
    "default": [
        CdmTest("SEQ1M Q8T1", True, 1 << 20, 8, 1),
        CdmTest("SEQ1M Q1T1", True, 1 << 20, 1, 1),
        CdmTest("RND4K Q32T1", False, 4096, 32, 1),
        CdmTest("RND4K Q1T1", False, 4096, 1, 1),
    ],
    "nvme": [
        CdmTest("SEQ1M Q8T1", True, 1 << 20, 8, 1),
        CdmTest("SEQ128K Q32T1", True, 128 << 10, 32, 1),
        CdmTest("RND4K Q32T16", False, 4096, 32, 16),
        CdmTest("RND4K Q1T1", False, 4096, 1, 1),
    ],
    "peak": [
        CdmTest("SEQ1M Q8T1", True, 1 << 20, 8, 1),
        CdmTest("RND4K Q32T1", False, 4096, 32, 1),
    ],
    "peak-nvme": [
        CdmTest("SEQ1M Q8T1", True, 1 << 20, 8, 1),
        CdmTest("RND4K Q32T16", False, 4096, 32, 16),
    ],
    "real": [
        CdmTest("SEQ1M Q1T1", True, 1 << 20, 1, 1),
        CdmTest("RND4K Q1T1", False, 4096, 1, 1),
    ],
}
CDM_COLUMNS = ["test", "op", "mbps", "iops", "lat_mean_us", "lat_p99_us"]
# CDM 8's run count choices (1-9) and default 5 (DiskMarkDlg.cpp: TestCount index 4,
# "default value is 5"); the Mix block's read shares (R90W10 .. R10W90, default R70W30).
CDM_RUNS = (1, 9)
CDM_DEFAULT_RUNS = 5
CDM_MIX_READS = tuple(range(10, 100, 10))


def cdm(
    array: Mapping[str, Any],
    profile: str = "default",
    size: Any = "1G",
    ios: Any = DEFAULT_IOS,
    seed: int = 1,
    jobs: int | None = None,
    labels: Mapping[str, str] | None = None,
    runs: Any = CDM_DEFAULT_RUNS,
    mix: Any = None,
) -> pd.DataFrame:
    """CrystalDiskMark's tests of ``profile``: one row per test and direction (``read``,
    ``write``, and ``mix`` when ``mix`` gives the Mix block's read %). Each test runs
    ``runs`` times with seeds ``seed``, ``seed+1``, ...; as CDM's best of N, a row has
    the best run's MB/s (and its IOPS) and the lowest mean latency of the runs."""
    labels = dict(labels or {})
    if profile not in CDM_PROFILES:
        raise RaidlabError(
            labels.get("profile", "profile"),
            f"must be one of {', '.join(CDM_PROFILES)}, got {profile!r}",
        )
    size_bytes = parse_size(size, labels.get("size", "size"))
    random_ios = parse_int(ios, labels.get("ios", "ios"), 1, 100_000_000)
    run_count = parse_int(runs, labels.get("runs", "runs"), *CDM_RUNS)
    mix_read = None if mix is None else _cdm_mix(mix, labels.get("mix", "mix"))
    ops = ("read", "write") if mix_read is None else ("read", "write", "mix")
    scenarios, rows = [], []
    for test in CDM_PROFILES[profile]:
        for op in ops:
            workload = _cdm_workload(test, op, mix_read, size_bytes, random_ios, array, labels)
            for run in range(run_count):
                scenarios.append(build_scenario(array, workload, (seed + run) % 2**64))
                rows.append((test.label, op))
    results = run_scenarios(scenarios, jobs=jobs, description="CrystalDiskMark")
    frame = _frame(rows, results, CDM_COLUMNS, ("test", "op"))
    return _best_of(frame, run_count)


def _cdm_mix(value: Any, label: str) -> int:
    read = parse_int(value, label, 0, 100)
    if read not in CDM_MIX_READS:
        raise RaidlabError(
            label, f"must be a read % CrystalDiskMark offers (10, 20, ..., 90), got {value!r}"
        )
    return read


def _cdm_workload(
    test: CdmTest,
    op: str,
    mix_read: int | None,
    size_bytes: int,
    random_ios: int,
    array: Mapping[str, Any],
    labels: Mapping[str, str],
) -> dict[str, Any]:
    if op == "mix":
        rw = "rw" if test.rw_seq else "randrw"
    else:
        rw = op if test.rw_seq else f"rand{op}"
    count = max(1, size_bytes // test.block_bytes) * test.threads if test.rw_seq else random_ios
    return build_workload(
        WorkloadRequest(
            rw=rw,
            bs=test.block_bytes,
            rwmixread=mix_read if mix_read is not None else 50,
            iodepth=test.qd,
            numjobs=test.threads,
            size=size_bytes,
            ios=count,
            warmup_ios=0 if test.rw_seq else None,
            labels=labels,
        ),
        array,
    )


def _best_of(frame: pd.DataFrame, runs: int) -> pd.DataFrame:
    """CDM's best of N (DiskBench.cpp): the highest MB/s of the runs (its IOPS with it)
    and, separately, the lowest mean latency; p99 is the best run's."""
    if runs == 1:
        return frame
    explain = frame.attrs.get("explain", [])
    best_rows, best_explain = [], []
    for start in range(0, len(frame), runs):
        block = frame.iloc[start : start + runs]
        index = block["mbps"].idxmax()
        best = block.loc[index].copy()
        best["lat_mean_us"] = block["lat_mean_us"].min()
        best_rows.append(best)
        best_explain.append(explain[index] if index < len(explain) else None)
    import pandas as pd

    result = pd.DataFrame(best_rows, columns=frame.columns).reset_index(drop=True)
    result.attrs["explain"] = best_explain
    return result


def _frame(
    keys: Sequence[tuple[Any, ...]],
    results: Sequence[Mapping[str, Any]],
    columns: list[str],
    key_names: Sequence[str],
) -> pd.DataFrame:
    import pandas as pd

    records = []
    for key, result in zip(keys, results, strict=True):
        ops = result.get("ops", {})
        total_ios = sum(s["ios"] for s in ops.values()) or 1
        record = dict(zip(key_names, key, strict=True))
        record.update(_combined(ops, total_ios))
        records.append(record)
    frame = pd.DataFrame(records, columns=columns)
    frame.attrs["explain"] = [result.get("explain") for result in results]
    return frame


def _combined(ops: Mapping[str, Any], total_ios: int) -> dict[str, float]:
    """All directions together: IOPS and MB/s add, latency is I/O-weighted."""
    iops = sum(float(s["iops"]) for s in ops.values())
    mbps = sum(float(s["mbps"]) for s in ops.values())
    lat = sum(float(s["lat_mean_ns"]) * s["ios"] for s in ops.values()) / total_ios / 1000
    p99 = max((_p(s, 99.0) for s in ops.values()), default=float("nan"))
    return {"mbps": mbps, "iops": iops, "lat_mean_us": lat, "lat_p99_us": p99}


def _p(stats: Mapping[str, Any], wanted: float) -> float:
    for key, value in stats.get("percentiles_ns", {}).items():
        if float(key) == wanted:
            return float(value) / 1000
    return float("nan")


# --- IOMeter ---------------------------------------------------------------------------

IOMETER_PRESETS = {
    # The desktop mix of the reference articles: 75 % read, 75 % random,
    # 55 % 4 KiB / 25 % 64 KiB / 20 % 128 KiB, 4 workers.
    "desktop": "bs=4K/55,64K/25,128K/20;read=75;random=75;workers=4;qd=1",
    # IOMeter's classic database pattern: 8 KiB, 67 % read, 100 % random.
    "database": "bs=8K/100;read=67;random=100;workers=1;qd=16",
    # IOMeter's file-server pattern (Intel's): 80 % read, 100 % random, size mix.
    "fileserver": (
        "bs=512/10,1K/5,2K/5,4K/60,8K/2,16K/4,32K/4,64K/10;read=80;random=100;workers=1;qd=16"
    ),
}


@dataclass(frozen=True)
class AccessSpec:
    bs: list[list[int]]
    read_pct: int
    random_pct: int
    workers: int
    qd: int


def parse_access_spec(text: str, label: str = "SPEC") -> AccessSpec:
    """A preset name or ``bs=...;read=..;random=..;workers=..;qd=..``."""
    text = IOMETER_PRESETS.get(text.strip(), text)
    values: dict[str, str] = {}
    for item in text.split(";"):
        item = item.strip()
        if not item:
            continue
        key, equals, value = item.partition("=")
        key = key.strip().lower()
        if not equals or key not in ("bs", "read", "random", "workers", "qd"):
            raise RaidlabError(
                label,
                f"expected a preset ({', '.join(IOMETER_PRESETS)}) or "
                f"bs=SIZE/PCT,...;read=PCT;random=PCT;workers=N;qd=N, got {item!r}",
            )
        values[key] = value.strip()
    if "bs" not in values:
        raise RaidlabError(label, "needs bs=SIZE/PCT,... (e.g. bs=4K/100)")
    mix: list[list[int]] = []
    total = 0
    for entry in values["bs"].split(","):
        size_text, slash, pct_text = entry.partition("/")
        block = parse_block_size(size_text.strip(), f"{label} bs")
        pct = parse_int(pct_text.strip() if slash else "100", f"{label} bs", 1, 100)
        total += pct
        mix.append([block, pct])
    if total != 100:
        raise RaidlabError(f"{label} bs", f"shares must add up to 100, got {total}")
    return AccessSpec(
        bs=mix,
        read_pct=parse_int(values.get("read", "100"), f"{label} read", 0, 100),
        random_pct=parse_int(values.get("random", "100"), f"{label} random", 0, 100),
        workers=limits.parse_path(
            values.get("workers", "1"), "workload.numjobs", f"{label} workers", "jobs"
        ),
        qd=limits.parse_path(values.get("qd", "1"), "workload.iodepth", f"{label} qd", "jobs"),
    )


def iometer(
    array: Mapping[str, Any],
    spec: str,
    ios: Any = DEFAULT_IOS,
    size: Any = None,
    seed: int = 1,
    labels: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """One IOMeter access specification: rows per direction and ``total``."""
    import pandas as pd

    labels = dict(labels or {})
    access = parse_access_spec(spec, labels.get("spec", "SPEC"))
    workloads = iometer_workloads(array, access, ios, size, labels)
    scenario = {"schema": 1, "seed": seed, "array": dict(array), "workloads": workloads}
    (result,) = run_scenarios([scenario], jobs=1, progress=False)
    ops = result.get("ops", {})
    rows = []
    for op in ("read", "write"):
        if op in ops:
            rows.append({"op": op, **_combined({op: ops[op]}, ops[op]["ios"] or 1)})
    rows.append({"op": "total", **_combined(ops, sum(s["ios"] for s in ops.values()) or 1)})
    frame = pd.DataFrame(rows, columns=["op", "mbps", "iops", "lat_mean_us", "lat_p99_us"])
    frame.attrs.update(
        {"spec": access.__dict__, "explain": result.get("explain"), "scenario": scenario}
    )
    return frame


def iometer_workloads(
    array: Mapping[str, Any],
    access: AccessSpec,
    ios: Any = DEFAULT_IOS,
    size: Any = None,
    labels: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """An access specification as concurrent workloads: its random and its sequential
    share, ``ios`` host I/Os between them."""
    labels = dict(labels or {})
    total_ios = parse_int(ios, labels.get("ios", "ios"), 1, 100_000_000)
    workloads = []
    for random, pct in ((True, access.random_pct), (False, 100 - access.random_pct)):
        count = round(total_ios * pct / 100)
        if count == 0:
            continue
        workload = build_workload(
            WorkloadRequest(
                rw="randrw" if random else "rw",
                bs=access.bs,
                rwmixread=access.read_pct,
                iodepth=access.qd,
                numjobs=access.workers,
                size=size,
                ios=count,
                labels=labels,
            ),
            array,
        )
        workload["name"] = "random" if random else "sequential"
        workloads.append(workload)
    return workloads


# --- SNIA PTS ---------------------------------------------------------------------------

PTS_MIXES = ["100/0", "95/5", "65/35", "50/50", "35/65", "5/95", "0/100"]
PTS_SIZES = ["512", "4K", "8K", "16K", "32K", "64K", "128K", "1M"]
PTS_ROUNDS_MAX = 25
# The quantity each PTS test reports in its table (the SNIA report's metric).
PTS_METRICS = {"iops": "iops", "tp": "mbps", "lat": "lat_mean_us"}
PTS_WINDOW = 5
PTS_EXCURSION = 0.20
PTS_SLOPE_EXCURSION = 0.10


def pts_steady(values: Sequence[float]) -> tuple[bool, dict[str, float]]:
    """The PTS rule on the last 5 values of the tracking variable."""
    if len(values) < PTS_WINDOW:
        return False, {}
    window = list(values[-PTS_WINDOW:])
    mean = sum(window) / PTS_WINDOW
    excursion = max(window) - min(window)
    x_mean = (PTS_WINDOW - 1) / 2
    slope = sum((x - x_mean) * (v - mean) for x, v in enumerate(window)) / sum(
        (x - x_mean) ** 2 for x in range(PTS_WINDOW)
    )
    slope_excursion = abs(slope) * (PTS_WINDOW - 1)
    steady = bool(
        mean > 0
        and excursion <= PTS_EXCURSION * mean
        and slope_excursion <= PTS_SLOPE_EXCURSION * mean
    )
    return steady, {
        "mean": mean,
        "excursion": excursion,
        "slope": slope,
        "slope_excursion": slope_excursion,
    }


def _mix(text: str, label: str) -> int:
    read, slash, write = text.partition("/")
    rp = parse_int(read.strip(), label, 0, 100)
    if slash and parse_int(write.strip(), label, 0, 100) != 100 - rp:
        raise RaidlabError(label, f"a mix is READ/WRITE adding up to 100, got {text!r}")
    return rp


def _pts_scenario(
    array: Mapping[str, Any],
    test: str,
    read_pct: int,
    block: int,
    shape: tuple[int, int, int, int],
    labels: Mapping[str, str],
) -> dict[str, Any]:
    """The scenario of one cell of the PTS matrix: sequential for ``tp``, random
    otherwise; ``shape`` is (iodepth, numjobs, region bytes, I/Os). Its seed is the
    round's (set by the caller)."""
    iodepth, numjobs, size, ios = shape
    rw = {100: "read", 0: "write"}.get(read_pct, "rw") if test == "tp" else "randrw"
    if test != "tp" and read_pct in (0, 100):
        rw = "randread" if read_pct == 100 else "randwrite"
    request = WorkloadRequest(
        rw=rw,
        bs=block,
        rwmixread=read_pct,
        iodepth=iodepth,
        numjobs=numjobs,
        size=size,
        ios=ios,
        labels=labels,
    )
    return build_scenario(array, build_workload(request, array), 0)


def _pts_matrix(
    test: str,
    mixes: Sequence[str] | None,
    sizes: Sequence[str] | None,
    labels: Mapping[str, str],
) -> tuple[list[int], list[int], tuple[int, int, str]]:
    """The read percentages and block sizes of the ``test``'s matrix (the PTS's own
    unless given) and its tracking cell: (read %, block bytes, the column tracked)."""
    if test not in PTS_METRICS:
        raise RaidlabError(labels.get("test", "test"), f"must be iops, tp or lat, got {test!r}")
    if test == "tp":
        mixes = mixes or ["100/0", "0/100"]
        sizes = sizes or ["128K", "1M"]
        tracking = (0, 1 << 20, "mbps")
    elif test == "lat":
        mixes = mixes or ["100/0", "65/35", "0/100"]
        sizes = sizes or ["512", "4K", "8K"]
        tracking = (0, 4096, "lat_mean_us")
    else:
        mixes = mixes or PTS_MIXES
        sizes = sizes or PTS_SIZES
        tracking = (0, 4096, "iops")
    read_pcts = [_mix(m, labels.get("mixes", "mixes")) for m in mixes]
    blocks = [parse_block_size(s, labels.get("sizes", "sizes")) for s in sizes]
    if (tracking[0], tracking[1]) not in {(r, b) for r in read_pcts for b in blocks}:
        # Track the closest point the matrix has: the smallest write-heaviest cell.
        tracking = (min(read_pcts), min(blocks, key=lambda b: abs(b - tracking[1])), tracking[2])
    return read_pcts, blocks, tracking


def pts(
    array: Mapping[str, Any],
    test: str = "iops",
    mixes: Sequence[str] | None = None,
    sizes: Sequence[str] | None = None,
    ios: int = 5000,
    iodepth: int = 32,
    numjobs: int = 1,
    rounds_max: int = PTS_ROUNDS_MAX,
    seed: int = 1,
    jobs: int | None = None,
    labels: Mapping[str, str] | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Rounds of the PTS matrix. ``test``: ``iops`` (mixes x sizes, tracking 4K
    100 % write IOPS), ``tp`` (128K and 1M sequential 100/0 and 0/100, tracking 1M write
    MB/s) or ``lat`` (0.5K/4K/8K x 100/0, 65/35, 0/100 at QD 1 T1, tracking 4K write
    mean latency). Returns every (round, mix, size) row and the steady-state summary."""
    # The rounds loop keeps the rows, the tracking history and the steady-state test
    # together: each round's stop depends on all three (cells: _pts_scenario).
    import pandas as pd

    labels = dict(labels or {})
    read_pcts, blocks, tracking = _pts_matrix(test, mixes, sizes, labels)
    if test == "lat":
        iodepth, numjobs = 1, 1
    capacity = array_capacity_bytes(array)
    rows: list[dict[str, Any]] = []
    history: list[float] = []
    steady, detail, rounds_done = False, {}, 0
    for round_index in range(1, rounds_max + 1):
        cells = [(read_pct, block) for read_pct in read_pcts for block in blocks]
        scenarios = [
            _pts_scenario(array, test, read_pct, block, (iodepth, numjobs, capacity, ios), labels)
            | {"seed": seed + round_index - 1}
            for read_pct, block in cells
        ]
        keys = [
            (round_index, f"{read_pct}/{100 - read_pct}", read_pct, block)
            for read_pct, block in cells
        ]
        results = run_scenarios(scenarios, jobs=jobs, description=f"PTS {test} round {round_index}")
        for (rnd, mix, read_pct, block), result in zip(keys, results, strict=True):
            ops = result.get("ops", {})
            row = {"round": rnd, "mix": mix, "read_pct": read_pct, "block_bytes": block}
            row.update(_combined(ops, sum(s["ios"] for s in ops.values()) or 1))
            rows.append(row)
            if read_pct == tracking[0] and block == tracking[1]:
                history.append(row[tracking[2]])
        rounds_done = round_index
        steady, detail = pts_steady(history)
        if steady:
            break
    frame = pd.DataFrame(rows)
    summary = {
        "test": test,
        "tracking": f"{tracking[0]}/{100 - tracking[0]} {format_size(tracking[1])} {tracking[2]}",
        "tracking_values": history,
        "rounds": rounds_done,
        "steady": steady,
        "window": [max(1, rounds_done - PTS_WINDOW + 1), rounds_done],
        **detail,
    }
    return frame, summary


def pts_table(frame: pd.DataFrame, summary: Mapping[str, Any], metric: str) -> pd.DataFrame:
    """The PTS report table: mean of ``metric`` over the steady-state window, rows block
    size, columns R/W mix."""
    first, last = summary["window"]
    window = frame[(frame["round"] >= first) & (frame["round"] <= last)]
    table = window.pivot_table(index="block_bytes", columns="mix", values=metric, aggfunc="mean")
    order = [m for m in dict.fromkeys(frame["mix"])]
    return table[order]
