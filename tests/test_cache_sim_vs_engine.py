"""Real clients against the engine's SSD cache tier, and the simulator given the same
trace: fio (its nbd engine, verify on) runs a hot-set workload through a served array
with a cache, the engine records every request its policy sees (``serve
--cache-trace``, MSR Cambridge CSV), and the simulator replays that trace on the same
geometry with the same cache configuration (``[cache]`` with a trace workload, closed
mode). The hit ratios must agree within 10 % (relative) and be far from trivial.

Skipped when fio or its nbd engine is missing, failed instead under
``RAIDLAB_REQUIRE_TOOLS=1`` (``make test`` installs fio)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import tool_missing
from raidlab import api, engine
from raidlab.scenario.cache import attach_cache

POLICIES = ("raidix", "lru", "smq")
# The array and its cache, as the engine creates them: RAID 5 of 3 x 64 MiB members,
# 64 KiB chunks, a RAID 1 cache of 2 x 16 MiB with 256 KiB log regions.
MEMBER_SIZE = "64M"
CHUNK = "64K"
CACHE_SIZE = "16M"
CACHE_REGION = "256K"
# The simulator's drives (timing only: the hit ratios do not depend on them).
HDD = "seagate-cheetah-15k7-300g"
SSD = "hgst-ultrastar-ssd400m-200g"
IODEPTH = 4
# Relative agreement the issue asks for, and the least read hit ratio a hot set gives.
TOLERANCE = 0.10
HIT_RATIO_MIN = 0.2
SERVE_TIMEOUT_S = 30.0
FIO_TIMEOUT_S = 300


pytestmark = pytest.mark.tool("fio")


@pytest.fixture(scope="module", autouse=True)
def _fio_has_an_nbd_engine() -> None:
    help_text = subprocess.run(
        ["fio", "--enghelp=nbd"], capture_output=True, text=True, check=False
    )
    if help_text.returncode != 0 or "uri" not in help_text.stdout:
        tool_missing("fio's nbd engine", "missing (this fio was built without libnbd)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + SERVE_TIMEOUT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited before it listened"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"the server did not listen on port {port}")


def _fio(uri: str, cwd: Path, *args: str) -> str:
    """Run one fio job through the nbd engine; its output (errors fail the test)."""
    command = ["fio", "--ioengine=nbd", f"--uri={uri}", "--bs=4k", "--randseed=17", *args]
    out = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=FIO_TIMEOUT_S, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "err= 0" in out.stdout, out.stdout
    return out.stdout


def _hot_set(uri: str, cwd: Path) -> None:
    """The client: a verified write pass, then a zipf:1.1 hot set of reads and writes.

    The write pass writes 4 KiB blocks at zipf-distributed offsets over 48 MiB (three
    times the cache) and then reads every one back against its crc32c (fio's verify
    phase: every read is checked, a mismatch fails the job). The mixed pass then reads
    (70 %) and writes the same skewed set without verify: fio 3.33 checks a mixed job's
    reads against headers of its own seed, which blocks the first pass wrote do not
    carry."""
    verified = _fio(
        uri,
        cwd,
        "--name=fill",
        "--rw=randwrite",
        "--size=48M",
        "--random_distribution=zipf:1.1",
        "--number_ios=6000",
        f"--iodepth={IODEPTH}",
        "--verify=crc32c",
        "--do_verify=1",
        "--verify_fatal=1",
        # Two writes of one block in flight at once may land in either order (NBD
        # promises none); fio expects the later one, so it keeps them apart.
        "--serialize_overlap=1",
    )
    # The verify phase ran: fio reports the reads it verified.
    reads = re.search(r"issued rwts: total=(\d+),(\d+)", verified)
    assert reads is not None and int(reads.group(1)) > 0, verified
    _fio(
        uri,
        cwd,
        "--name=hot",
        "--rw=randrw",
        "--rwmixread=70",
        "--size=48M",
        "--random_distribution=zipf:1.1",
        "--number_ios=12000",
        f"--iodepth={IODEPTH}",
    )


def _engine_run(tmp: Path, policy: str) -> tuple[dict[str, Any], Path]:
    """Create, serve with --cache-trace, run the client; the cache's counters (from
    the running server) and the trace."""
    members = [tmp / f"m{i}.img" for i in range(3)]
    cache = [tmp / f"ssd{i}.img" for i in range(2)]
    engine.create(
        members,
        level=5,
        chunk=CHUNK,
        size=MEMBER_SIZE,
        cache_members=cache,
        cache_policy=policy,
        cache_size=CACHE_SIZE,
        cache_region=CACHE_REGION,
    )
    trace = tmp / "trace.csv"
    port = _free_port()
    command = [
        str(engine.engine_path()),
        "serve",
        "--listen",
        f"127.0.0.1:{port}",
        "--cache-members",
        ",".join(map(str, cache)),
        "--cache-trace",
        str(trace),
        *map(str, members),
    ]
    server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port, server)
        _hot_set(f"nbd://127.0.0.1:{port}", tmp)
        counters = engine.status(members, cache_members=cache).raw["cache"]
    finally:
        server.terminate()
        server.wait(timeout=SERVE_TIMEOUT_S)
    return counters, trace


def _simulated(trace: Path, counters: dict[str, Any]) -> dict[str, Any]:
    """The simulator's cache report for ``trace`` on the engine's geometry and cache
    configuration (its slots, lines and regions), replayed in closed mode."""
    array = api.resolve_array(
        level=5, drives=3, stripe_unit=CHUNK, drive=HDD, controller="linux-md"
    )
    array = attach_cache(
        array,
        {
            "policy": counters["policy"],
            "drive": SSD,
            "drives": 2,
            "level": 1,
            "size": counters["slots"] * counters["line_bytes"],
            "line": counters["line_bytes"],
            "region": counters["region_bytes"],
        },
        {},
    )
    frame = api.replay(array, trace, "msr", mode="closed", iodepth=IODEPTH)
    report: dict[str, Any] = frame.attrs["results"]["explain"]["cache"]
    return report


def _ratio(a: int, b: int) -> float:
    return a / b if b else 0.0


def _within(engine_value: float, sim_value: float) -> bool:
    return abs(sim_value - engine_value) <= TOLERANCE * engine_value


@pytest.mark.parametrize("policy", POLICIES)
def test_simulated_hit_ratios_match_the_engines_for_the_same_trace(
    tmp_path: Path, policy: str
) -> None:
    served, trace = _engine_run(tmp_path, policy)
    simulated = _simulated(trace, served)
    c = simulated["counters"]
    rows = {
        "read_hit_ratio": (served["read_hit_ratio"], simulated["read_hit_ratio"]),
        "write_hit_ratio": (
            served["write_hit_ratio"],
            _ratio(c["write_hit_lines"], c["write_lines"]),
        ),
        "write_cached_ratio": (
            _ratio(served["write_cached_lines"], served["write_lines"]),
            simulated["write_cached_ratio"],
        ),
    }
    print(policy, json.dumps({k: [round(e, 4), round(s, 4)] for k, (e, s) in rows.items()}))
    # Both saw the same requests: every line the client read or wrote.
    assert c["read_lines"] == served["read_lines"] > 0
    assert c["write_lines"] == served["write_lines"] > 0
    engine_read, sim_read = rows["read_hit_ratio"]
    assert engine_read > HIT_RATIO_MIN, f"{policy}: a hot set should hit: {served}"
    for name, (engine_value, sim_value) in rows.items():
        if engine_value == 0.0:
            assert sim_value == 0.0, (policy, name, sim_value)
            continue
        assert _within(engine_value, sim_value), (policy, name, engine_value, sim_value)
