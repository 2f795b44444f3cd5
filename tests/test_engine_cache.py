"""The SSD cache tier of the real-data engine through the Python API and the CLI:
``--cache-members`` and ``--cache-policy`` reach the engine, and its counters come back
in the status report (served or not)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from raidlab import engine
from raidlab.cli import app
from raidlab.errors import RaidlabError
from typer.testing import CliRunner

runner = CliRunner()


def paths(tmp_path: Path, prefix: str, count: int) -> list[Path]:
    return [tmp_path / f"{prefix}{i}.img" for i in range(count)]


def test_create_with_a_cache_reports_it_and_status_finds_it(tmp_path: Path) -> None:
    members, cache = paths(tmp_path, "m", 3), paths(tmp_path, "ssd", 2)
    created = engine.create(
        members,
        level=5,
        size="16M",
        cache_members=cache,
        cache_policy="lru",
        cache_size="8M",
        cache_region="256K",
    )
    assert created.raw["cache"]["policy"] == "lru"
    assert created.raw["cache"]["mirror_level"] == "RAID 1"
    assert created.raw["cache"]["region_bytes"] == 256 << 10
    result = runner.invoke(
        app, ["status", *map(str, members), "--cache-members", ",".join(map(str, cache))]
    )
    assert result.exit_code == 0, result.output
    assert "cache lru (RAID 1)" in result.output
    assert "cached: SSD cache" in result.output
    # The superblocks record the cache: without its members the array is refused (its
    # members alone may miss the newest data), in the API and the CLI alike.
    with pytest.raises(RaidlabError, match="--cache-members"):
        engine.status(members)
    result = runner.invoke(app, ["status", *map(str, members)])
    assert result.exit_code == 2
    assert "--cache-members" in result.output
    assert engine.status(members, cache_members=cache).cache_uuid is not None


def test_cli_create_refuses_a_cache_policy_without_cache_members(tmp_path: Path) -> None:
    members = [str(p) for p in paths(tmp_path, "m", 2)]
    result = runner.invoke(
        app, ["create", "--level", "1", "--size", "8M", *members, "--cache-policy", "lru"]
    )
    assert result.exit_code == 2
    assert "--cache-policy" in result.output


@pytest.mark.tool("qemu-io")
def test_a_served_cache_counts_the_clients_writes_and_hits(tmp_path: Path) -> None:
    members, cache = paths(tmp_path, "m", 3), paths(tmp_path, "ssd", 2)
    result = runner.invoke(
        app,
        [
            "create",
            "--level",
            "5",
            "--size",
            "16M",
            *map(str, members),
            "--cache-members",
            ",".join(map(str, cache)),
            "--cache-size",
            "8M",
            "--cache-policy",
            "lru",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["cache"]["slots"] > 0
    with engine.serve(members, cache_members=cache) as server:
        subprocess.run(
            [
                "qemu-io",
                "-f",
                "raw",
                server.uri,
                "-c",
                "write -P 0x5a 0 64k",
                "-c",
                "read -P 0x5a 0 64k",
                "-c",
                "read -P 0x5a 0 64k",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        served = engine.status(members, cache_members=cache).raw["cache"]
    assert served["write_lines"] == 16
    assert served["write_cached_lines"] == 16
    assert served["read_hit_lines"] == 32
    after = engine.status(members, cache_members=cache).raw["cache"]
    # Dirty lines stay in the cache across a clean stop.
    assert after["dirty_lines"] == 16


def test_attach_detach_and_the_cache_every_command_needs(tmp_path: Path) -> None:
    members, cache = paths(tmp_path, "m", 3), paths(tmp_path, "ssd", 2)
    created = engine.create(members, level=5, size="16M")
    assert created.cache_uuid is None
    attached = engine.attach_cache(members, cache, cache_policy="lru", cache_size="8M")
    assert attached.cache_uuid is not None
    assert attached.raw["cache"]["policy"] == "lru"
    # A second cache on a cached array is refused, before its members are created.
    other = paths(tmp_path, "other", 2)
    with pytest.raises(RaidlabError, match="already has a cache"):
        engine.attach_cache(members, other, cache_size="8M")
    assert not other[0].exists()
    # Every command that assembles the array takes the cache, and refuses without it.
    assert engine.check(members, cache_members=cache).clean
    with pytest.raises(RaidlabError, match="--cache-members"):
        engine.check(members)
    with pytest.raises(RaidlabError, match="--cache-members"):
        engine.fail(1, members)
    detached = engine.detach_cache(members, cache)
    assert detached.cache_uuid is None
    assert detached.raw["detached_cache_uuid"] == attached.cache_uuid
    assert detached.raw["destaged_bytes"] == 0
    assert engine.status(members).cache_uuid is None
    with pytest.raises(RaidlabError, match="has no cache"):
        engine.status(members, cache_members=cache)


def test_cli_attach_cache_and_detach_cache(tmp_path: Path) -> None:
    members, cache = paths(tmp_path, "m", 2), paths(tmp_path, "ssd", 2)
    engine.create(members, level=1, size="16M")
    cache_arg = ",".join(map(str, cache))
    attach = ["attach-cache", *map(str, members), "--cache-members", cache_arg]
    result = runner.invoke(app, [*attach, "--cache-size", "8M", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["cache_uuid"]
    result = runner.invoke(app, attach)
    assert result.exit_code == 2
    assert "already has a cache" in result.output
    result = runner.invoke(app, ["detach-cache", *map(str, members), "--cache-members", cache_arg])
    assert result.exit_code == 0, result.output
    assert "detached cache" in result.output
    result = runner.invoke(app, ["check", *map(str, members)])
    assert result.exit_code == 0, result.output


@pytest.mark.tool("qemu-io")
def test_detach_cache_hands_the_dirty_lines_to_the_array(tmp_path: Path) -> None:
    members, cache = paths(tmp_path, "m", 3), paths(tmp_path, "ssd", 2)
    engine.create(
        members, level=5, size="16M", cache_members=cache, cache_policy="lru", cache_size="8M"
    )
    with engine.serve(members, cache_members=cache) as server:
        subprocess.run(
            ["qemu-io", "-f", "raw", server.uri, "-c", "write -P 0x6b 1M 256k", "-c", "flush"],
            check=True,
            capture_output=True,
            timeout=60,
        )
    assert engine.status(members, cache_members=cache).raw["cache"]["dirty_lines"] == 64
    detached = engine.detach_cache(members, cache)
    assert detached.raw["destaged_bytes"] == 256 << 10
    with engine.serve(members) as server:
        read = subprocess.run(
            ["qemu-io", "-f", "raw", server.uri, "-c", "read -P 0x6b 1M 256k"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert read.returncode == 0 and "failed" not in read.stdout, read.stdout + read.stderr


def test_a_lost_cache_member_is_rebuilt_with_replace_cache(tmp_path: Path) -> None:
    members, cache = paths(tmp_path, "m", 3), paths(tmp_path, "ssd", 2)
    engine.create(members, level=5, size="16M")
    attached = engine.attach_cache(members, cache, cache_policy="lru", cache_size="8M")
    cache[1].unlink()
    # The survivor alone assembles the cache, degraded.
    assert engine.status(members, cache_members=cache[:1]).cache_uuid == attached.cache_uuid
    new = tmp_path / "ssd-new.img"
    replaced = engine.replace_cache(members, cache[:1], new)
    assert replaced.cache_uuid == attached.cache_uuid
    with pytest.raises(RaidlabError, match="lacks no member"):
        engine.replace_cache(members, [cache[0], new], tmp_path / "another.img")
    assert not (tmp_path / "another.img").exists()
    engine.detach_cache(members, [new])
