"""SSD latency percentiles against the datasheets' quality-of-service figures: the Intel
DC S3500 presets at QD 1 and QD 32, 4 KiB random reads and steady-state random writes,
through `raidlab fio`'s JSON (fio's `clat_ns.percentile`). docs/model.md, "Latency
percentiles", has the table these runs give."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from typing import Any

import pytest
from raidlab import api
from raidlab.scenario.presets import preset_names, qos

S3500 = ("intel-dc-s3500-80g", "intel-dc-s3500-800g")
POINTS = [(drive, rw, qd) for drive in S3500 for rw in ("randread", "randwrite") for qd in (1, 32)]
SHARES = ("50.000000", "99.000000", "99.900000", "99.990000")


@cache
def clat(drive: str, rw: str, qd: int) -> dict[str, Any]:
    """fio's `clat_ns` of one 20,000-I/O job (writes in steady state, the preset's)."""
    options = [
        "--name=qos",
        f"--rw={rw}",
        "--bs=4k",
        f"--iodepth={qd}",
        "--number_ios=20000",
        "--percentile_list=" + ":".join(str(float(s)) for s in SHARES),
    ]
    run = api.fio(api.resolve_array(drive=drive), options=options, jobs=1, progress=False)
    job = run.document["jobs"][0]
    return job["read" if rw == "randread" else "write"]["clat_ns"]


@pytest.mark.parametrize(("drive", "rw", "qd"), POINTS)
def test_percentiles_lie_between_min_and_max_in_order(drive: str, rw: str, qd: int) -> None:
    stats = clat(drive, rw, qd)
    values = [stats["min"], *(stats["percentile"][s] for s in SHARES), stats["max"]]
    assert values == sorted(values), values


@pytest.mark.parametrize(("drive", "rw", "qd"), POINTS)
def test_every_point_has_a_tail(drive: str, rw: str, qd: int) -> None:
    """Writes (buffer waits, garbage collection, relocation bursts) and queued reads
    (die contention) spread: p99 above p50. Reads at QD 1 find an idle die, and the
    4 % whose sense the ECC fails are read again (read retry, docs/model.md)."""
    p = clat(drive, rw, qd)["percentile"]
    assert p["99.000000"] > 1.2 * p["50.000000"], p


@pytest.mark.parametrize("drive", S3500)
def test_qd1_write_tail_is_within_2x_of_the_datasheet_qos(drive: str) -> None:
    """Intel's S3500 QoS: 99.9 % of 4 KB random writes at QD 1 within 5 ms. The 800 GB
    model's burst size is calibrated on it; the 80 GB model's tail is a prediction."""
    spec_us = qos(drive)["write_999_qd1_us"]
    p999_us = clat(drive, "randwrite", 1)["percentile"]["99.900000"] / 1000
    assert spec_us / 2 <= p999_us <= spec_us * 2, (p999_us, spec_us)


@pytest.mark.parametrize("drive", S3500)
def test_qd1_reads_stay_within_the_datasheet_qos_bound(drive: str) -> None:
    """The datasheet's 500 us is a bound 99.9 % of reads meet, and the read retry rate
    calibrated on it puts both S3500 models within a factor of 2 below it (at 2 %, one
    retry at the 99.9 %, the 80 GB model's faster channels gave 212 us)."""
    spec_us = qos(drive)["read_999_qd1_us"]
    p999_us = clat(drive, "randread", 1)["percentile"]["99.900000"] / 1000
    assert spec_us / 2 <= p999_us <= spec_us, (p999_us, spec_us)


def run_records(drive: str, rw: str, qd: int) -> dict[str, Any]:
    """`raidlab run --format json`'s record of one direction (seed 1, 20,000 I/Os)."""
    command = [sys.executable, "-m", "raidlab", "run", "--drive", drive, "--rw", rw]
    command += ["--iodepth", str(qd), "--seed", "1", "--format", "json"]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    (record,) = json.loads(out)["records"]
    return record


@pytest.mark.parametrize(
    ("rw", "qd"), [(rw, qd) for rw in ("randread", "randwrite") for qd in (1, 32)]
)
def test_run_reports_the_999th_percentile_above_p99_above_p50(rw: str, qd: int) -> None:
    """Where a user looks (`raidlab run`), the 800 GB S3500's four QoS points: the
    99.9 % is reported, and p50 < p99 <= p99.9 <= ... (issue 33's acceptance)."""
    r = run_records("intel-dc-s3500-800g", rw, qd)
    assert r["lat_p50_us"] < r["lat_p99_us"] <= r["lat_p999_us"], r


@pytest.mark.parametrize(
    ("rw", "key"), [("randread", "read_999_qd1_us"), ("randwrite", "write_999_qd1_us")]
)
def test_run_999th_percentile_at_qd1_is_within_2x_of_the_datasheet(rw: str, key: str) -> None:
    """Intel publishes the S3500's QoS for QD 1 (host to drive and back): reads 500 us,
    writes 5 ms. Writes: relocation bursts calibrated on it; reads: read retry."""
    spec_us = qos("intel-dc-s3500-800g")[key]
    p999_us = run_records("intel-dc-s3500-800g", rw, 1)["lat_p999_us"]
    assert spec_us / 2 <= p999_us <= spec_us * 2, (p999_us, spec_us)


def test_qos_tables_cite_their_source_and_use_known_keys() -> None:
    known = {"read_999_qd1_us", "write_999_qd1_us"}
    with_qos = [name for name in preset_names("drive") if qos(name)]
    assert set(S3500) <= set(with_qos)
    for name in with_qos:
        assert set(qos(name)) <= known, name
        assert all(value > 0 for value in qos(name).values()), name
    parameters = api.preset_details("intel-dc-s3500-80g")[0]["parameters"]
    cited = [p for p in parameters if str(p["parameter"]).startswith("qos.")]
    assert cited and all("datasheet" in str(p.get("source", "")) for p in cited), cited


def test_run_table_shows_the_999th_percentile() -> None:
    """The table `raidlab run` prints has the datasheets' QoS percentile as a column,
    with the same figure the JSON gives."""
    command = [sys.executable, "-m", "raidlab", "run", "--drive", "intel-dc-s3500-800g"]
    command += ["--rw", "randread", "--iodepth", "1", "--seed", "1"]
    env = {**os.environ, "COLUMNS": "200"}
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    assert "lat p99.9 us" in out, out
    p999 = run_records("intel-dc-s3500-800g", "randread", 1)["lat_p999_us"]
    row = next(line for line in out.splitlines() if line.startswith("│ read"))
    assert row.rstrip(" │").split("│")[-1].strip() == f"{p999:,.1f}", (row, p999)
