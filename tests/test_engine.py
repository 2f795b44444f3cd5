"""Real arrays through the Python API and the CLI: the real raidlab-engine binary on
real member files, and real NBD clients (nbdcopy, or qemu-io and qemu-img)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from raidlab import engine
from raidlab.cli import app
from raidlab.errors import RaidlabError
from typer.testing import CliRunner

HAS_NBDCOPY = shutil.which("nbdcopy") is not None
# An NBD client: nbdcopy, or qemu-io with qemu-img.
needs_nbd_client = pytest.mark.tool("nbdcopy", "qemu-io")

runner = CliRunner()
MEMBER_BYTES = 8 << 20
# Every member keeps 1 MiB for its superblock and bitmap; the rest holds data.
MEMBER_DATA_BYTES = MEMBER_BYTES - engine.DATA_OFFSET_BYTES


def members_in(tmp_path: Path, count: int, prefix: str = "m") -> list[Path]:
    return [tmp_path / f"{prefix}{i}.img" for i in range(count)]


@pytest.fixture
def raid5(tmp_path: Path) -> list[Path]:
    """Four 8 MiB members of a fresh RAID 5 (21 MiB of data)."""
    members = members_in(tmp_path, 4)
    engine.create(members, level=5, size=MEMBER_BYTES)
    return members


def write_image(uri: str, image: Path) -> None:
    """Write ``image`` over the export from offset 0 with a real NBD client."""
    if HAS_NBDCOPY:
        command = ["nbdcopy", str(image), uri]
    else:
        size = image.stat().st_size
        command = ["qemu-io", "-f", "raw", uri, "-c", f"write -s {image} 0 {size}"]
    subprocess.run(command, check=True, capture_output=True)


def read_export(uri: str, out: Path) -> bytes:
    """The whole export, read by a real NBD client."""
    if HAS_NBDCOPY:
        command = ["nbdcopy", uri, str(out)]
    else:
        command = ["qemu-img", "convert", "-f", "raw", "-O", "raw", uri, str(out)]
    subprocess.run(command, check=True, capture_output=True)
    return out.read_bytes()


def random_images(tmp_path: Path, size_bytes: int, count: int) -> list[Path]:
    images = []
    for i in range(count):
        image = tmp_path / f"pattern{i}.bin"
        image.write_bytes(os.urandom(size_bytes))
        images.append(image)
    return images


# ------------------------------------------------------------------- offline operations


def test_create_reports_the_geometry_and_every_member(tmp_path: Path) -> None:
    members = members_in(tmp_path, 4)
    status = engine.create(members, level=5, stripe_unit="64K", size="8M")
    assert status.level == "RAID 5" and status.layout == "left-symmetric"
    assert status.chunk_bytes == 65536 and status.member_count == 4
    assert status.capacity_bytes == 3 * MEMBER_DATA_BYTES
    assert status.tolerated_failures == 1
    assert status.state == "clean" and status.failed == () and status.rebuild is None
    assert not status.dirty and status.dirty_regions == 0
    assert [(m.role, m.path, m.state) for m in status.members] == [
        (i, str(p), "active") for i, p in enumerate(members)
    ]
    assert all(p.stat().st_size == MEMBER_BYTES for p in members)
    assert status.raw["uuid"] == status.uuid and len(status.uuid) == 32


def test_status_assembles_the_members_in_any_order(raid5: list[Path]) -> None:
    created = engine.status(raid5)
    shuffled = engine.status(list(reversed(raid5)))
    assert shuffled == created
    frame = shuffled.members_frame()
    assert list(frame["role"]) == [0, 1, 2, 3]
    assert list(frame["path"]) == [str(p) for p in raid5]
    assert list(frame["state"]) == ["active"] * 4


def test_fail_makes_the_array_degraded_and_a_stale_member_stays_out(raid5: list[Path]) -> None:
    failed = engine.fail(raid5[1], raid5)
    assert failed.state == "degraded" and failed.failed == (1,)
    assert failed.members[1].state == "failed"
    # Assembled again, the failed member's superblock is behind: it stays out.
    again = engine.status(raid5)
    assert again.state == "degraded" and again.failed == (1,)
    assert again.members[1].state.startswith("stale")
    assert again.events == failed.events


def test_offline_replace_reports_progress_up_to_the_member_size(
    raid5: list[Path], tmp_path: Path
) -> None:
    engine.fail(1, raid5)
    calls: list[tuple[int, int]] = []
    spare = tmp_path / "spare.img"
    status = engine.replace(
        raid5[1], spare, raid5, progress=lambda done, total: calls.append((done, total))
    )
    assert len(calls) > 2
    assert calls[-1] == (MEMBER_DATA_BYTES, MEMBER_DATA_BYTES)
    assert all(total == MEMBER_DATA_BYTES for _, total in calls)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert status.state == "clean" and status.failed == ()
    assert status.members[1].path == str(spare)
    assert engine.check([raid5[0], spare, raid5[2], raid5[3]]).mismatched_stripes == 0


@pytest.mark.parametrize(
    ("level", "count", "corrupted_role"),
    [
        # RAID 6 tells the bad block from P and Q (row 0's Q is on the last member).
        (6, 4, 3),
        # Three copies outvote the corrupted one.
        (1, 3, 1),
    ],
)
def test_one_corrupted_redundant_byte_is_one_mismatch_and_repair_restores_it(
    tmp_path: Path, level: int, count: int, corrupted_role: int
) -> None:
    members = members_in(tmp_path, count)
    engine.create(members, level=level, size=MEMBER_BYTES)
    victim = members[corrupted_role]
    offset = 4096
    original = victim.read_bytes()[engine.DATA_OFFSET_BYTES + offset]
    assert engine.check(members).mismatched_stripes == 0

    engine.inject(victim, offset, mask=0x01)
    assert victim.read_bytes()[engine.DATA_OFFSET_BYTES + offset] == original ^ 0x01
    found = engine.check(members)
    assert (found.mismatched_stripes, found.repaired_stripes) == (1, 0)
    assert not found.clean

    repaired = engine.repair(members)
    assert (repaired.mismatched_stripes, repaired.repaired_stripes) == (1, 1)
    assert victim.read_bytes()[engine.DATA_OFFSET_BYTES + offset] == original
    assert engine.check(members).clean


@pytest.mark.parametrize(("level", "count"), [(5, 4), (1, 2)])
def test_repair_names_a_mismatch_it_cannot_attribute_and_keeps_it(
    tmp_path: Path, level: int, count: int
) -> None:
    members = members_in(tmp_path, count)
    engine.create(members, level=level, size=MEMBER_BYTES)
    victim = members[1]
    engine.inject(victim, 4096, mask=0x01)
    corrupted = victim.read_bytes()[engine.DATA_OFFSET_BYTES :]
    repaired = engine.repair(members)
    assert (repaired.repaired_stripes, repaired.unresolved_stripes) == (0, 1)
    offset, length = repaired.unresolved[0]
    assert offset == 0 and length > 0
    data = victim.read_bytes()[engine.DATA_OFFSET_BYTES :]
    assert data == corrupted, "nothing copied over either block"
    assert engine.check(members).mismatched_stripes == 1


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "count", "field"),
    [
        ({"level": 7}, 4, "--level"),
        ({"level": "raid7"}, 4, "--level"),
        ({"level": 5, "size": "8Q"}, 4, "--size"),
        ({"level": 5, "size": "1K"}, 4, "--size"),
        ({"level": 5, "stripe_unit": "3000"}, 4, "--stripe-unit"),
        ({"level": 5, "chunk": "3000"}, 4, "--stripe-unit"),
        ({"level": 5}, 2, "MEMBER"),
        ({"level": 6}, 3, "MEMBER"),
        ({"level": 10, "copies": "x"}, 4, "--copies"),
        ({"level": 5, "layout": "diagonal"}, 4, "--layout"),
    ],
)
def test_bad_create_input_names_the_field(
    tmp_path: Path, kwargs: dict[str, object], count: int, field: str
) -> None:
    with pytest.raises(RaidlabError) as raised:
        engine.create(members_in(tmp_path, count), **{"size": MEMBER_BYTES, **kwargs})  # type: ignore[arg-type]
    assert raised.value.field == field, str(raised.value)
    assert raised.value.message


def test_a_member_of_another_array_is_refused_by_name(raid5: list[Path], tmp_path: Path) -> None:
    other = members_in(tmp_path, 3, prefix="other")
    engine.create(other, level=5, size=MEMBER_BYTES)
    with pytest.raises(RaidlabError) as raised:
        engine.status([*raid5[:3], other[0]])
    assert raised.value.field in (str(raid5[0]), str(other[0]))
    assert "belongs to array" in raised.value.message


def test_a_missing_member_file_is_refused_by_name(raid5: list[Path], tmp_path: Path) -> None:
    absent = tmp_path / "absent.img"
    with pytest.raises(RaidlabError) as raised:
        engine.status([*raid5, absent])
    assert raised.value.field == str(absent)


def test_no_members_is_an_error_naming_member() -> None:
    with pytest.raises(RaidlabError) as raised:
        engine.status([])
    assert raised.value.field == "MEMBER"


def test_a_lone_path_instead_of_a_list_is_refused(raid5: list[Path]) -> None:
    with pytest.raises(RaidlabError) as raised:
        engine.status(str(raid5[0]))  # type: ignore[arg-type]
    assert raised.value.field == "members"


def test_inject_mask_must_be_one_nonzero_byte(raid5: list[Path]) -> None:
    for mask in (0, 256):
        with pytest.raises(RaidlabError) as raised:
            engine.inject(raid5[0], 0, mask=mask)
        assert raised.value.field == "--mask"


def test_a_bad_engine_path_in_the_environment_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(engine.ENGINE_ENV, "/nonexistent/raidlab-engine")
    with pytest.raises(RaidlabError) as raised:
        engine.status(["a.img"])
    assert raised.value.field == engine.ENGINE_ENV


def test_a_missing_engine_says_to_run_make_setup(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(engine.ENGINE_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(engine, "REPO_ROOT", tmp_path)
    with pytest.raises(RaidlabError) as raised:
        engine.engine_path()
    assert "make setup" in str(raised.value)


def fake_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """Point RAIDLAB_ENGINE at a shell script standing in for the binary."""
    fake = tmp_path / "fake-engine"
    fake.write_text("#!/bin/sh\n" + script + "\n")
    fake.chmod(0o755)
    monkeypatch.setenv(engine.ENGINE_ENV, str(fake))


def test_a_server_that_never_gets_ready_is_killed_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_engine(tmp_path, monkeypatch, "echo 'resyncing...' >&2; exec sleep 30")
    with pytest.raises(RaidlabError) as raised:
        engine.serve(["a.img"], timeout_s=0.5)
    assert raised.value.field == "serve"
    assert "not serving after 0.5 s" in str(raised.value) and "resyncing..." in str(raised.value)


def test_a_server_that_dies_before_serving_is_reported_with_its_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_engine(tmp_path, monkeypatch, "echo 'thread panicked at array.rs' >&2; exit 101")
    with pytest.raises(RaidlabError) as raised:
        engine.serve(["a.img"], timeout_s=10)
    assert "status 101" in str(raised.value) and "panicked" in str(raised.value)


def test_a_report_that_is_not_json_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_engine(tmp_path, monkeypatch, "echo 'array 123'")
    with pytest.raises(RaidlabError) as raised:
        engine.status(["a.img"])
    assert raised.value.field == "raidlab-engine" and "JSON" in raised.value.message


@pytest.mark.skipif(
    Path(sys.executable).parent != Path(__file__).resolve().parents[1] / ".venv" / "bin",
    reason="not running in the project's venv",
)
def test_make_setup_installs_the_engine_next_to_the_venvs_python(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(engine.ENGINE_ENV, raising=False)
    assert engine.engine_path() == Path(sys.executable).parent / "raidlab-engine"


# ------------------------------------------------------------------------------ served


def test_serve_picks_a_free_port_and_stops_clean(raid5: list[Path]) -> None:
    with engine.serve(raid5, listen="127.0.0.1:0") as server:
        assert server.uri.startswith("nbd://127.0.0.1:")
        assert not server.uri.endswith(":0")
    # Without `listen`: the private Unix socket alone, no TCP port.
    with engine.serve(raid5) as server:
        assert server.uri.startswith("nbd+unix:///raidlab?socket="), server.uri
        assert server.address is None
        assert server.capacity_bytes == 3 * MEMBER_DATA_BYTES
        assert server.returncode is None
        # The served array answers status through its control socket.
        assert engine.status(raid5).uuid == engine.status(raid5[::-1]).uuid
    assert server.returncode == 0
    stopped = engine.status(raid5)
    assert not stopped.dirty and stopped.state == "clean"
    assert "stopped, array clean" in server.stderr


@needs_nbd_client
def test_a_served_array_clears_the_bitmap_of_regions_no_longer_written(
    raid5: list[Path], tmp_path: Path
) -> None:
    (image,) = random_images(tmp_path, 1 << 20, 1)
    with engine.serve(raid5, bitmap_delay=1) as server:
        write_image(server.uri, image)
        assert engine.status(raid5).dirty_regions == 1
        deadline = time.monotonic() + 10
        while engine.status(raid5).dirty_regions != 0:
            assert time.monotonic() < deadline, "the bitmap was never cleared"
            time.sleep(0.1)
        assert engine.status(raid5).dirty


def _nbd_export_names(uri: str) -> list[str]:
    """The names NBD_OPT_LIST answers on the server at ``uri``."""
    import socket
    import struct

    if uri.startswith("nbd+unix://"):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(uri.split("?socket=", 1)[1])
    else:
        host, port = uri.removeprefix("nbd://").rsplit(":", 1)
        s = socket.create_connection((host, int(port)), timeout=10)
    with s:
        stream = s.makefile("rwb")
        assert stream.read(18)[:8] == b"NBDMAGIC"
        stream.write(struct.pack(">I", 3) + struct.pack(">QII", 0x49484156454F5054, 3, 0))
        stream.flush()
        names = []
        while True:
            _, _, kind, length = struct.unpack(">QIII", stream.read(20))
            data = stream.read(length)
            if kind != 2:  # NBD_REP_SERVER
                return names
            names.append(data[4:].decode())


def test_serve_forwards_the_export_name_and_limits(raid5: list[Path]) -> None:
    options = {"name": "vol0", "memory_limit": "2M", "handshake_timeout": 5, "idle_timeout": 60}
    assert engine.command_args("serve", options) == [
        "--name", "vol0", "--handshake-timeout", "5", "--idle-timeout", "60",
        "--memory-limit", "2M",
    ]  # fmt: skip
    with engine.serve(raid5, options) as server:
        assert _nbd_export_names(server.uri) == ["vol0"]
    with engine.serve(raid5) as server:
        assert _nbd_export_names(server.uri) == ["raidlab"]


def test_serve_refuses_an_option_the_engine_does_not_have(raid5: list[Path]) -> None:
    with pytest.raises(RaidlabError) as raised:
        engine.serve(raid5, bitmap_delay_s=1)
    assert raised.value.field == "bitmap_delay_s"
    assert "bitmap_delay" in raised.value.message


def test_serve_that_cannot_start_raises_with_the_servers_message(
    raid5: list[Path], tmp_path: Path
) -> None:
    with pytest.raises(RaidlabError) as raised:
        engine.serve([*raid5, tmp_path / "absent.img"], timeout_s=10)
    assert raised.value.field == str(tmp_path / "absent.img")
    with engine.serve(raid5), pytest.raises(RaidlabError) as raised:
        engine.serve(raid5, timeout_s=10)
    # One owner per member: the second serve names the first one's process.
    assert "in use by pid" in str(raised.value)
    assert "one process owns a member at a time" in str(raised.value)


@needs_nbd_client
def test_a_real_nbd_client_reads_back_what_it_wrote(raid5: list[Path], tmp_path: Path) -> None:
    (image,) = random_images(tmp_path, 3 * MEMBER_DATA_BYTES, 1)
    with engine.serve(raid5) as server:
        write_image(server.uri, image)
        assert read_export(server.uri, tmp_path / "out.bin") == image.read_bytes()
    assert engine.check(raid5).clean


@needs_nbd_client
def test_failing_a_member_online_keeps_the_data_readable(raid5: list[Path], tmp_path: Path) -> None:
    (image,) = random_images(tmp_path, 3 * MEMBER_DATA_BYTES, 1)
    with engine.serve(raid5) as server:
        write_image(server.uri, image)
        degraded = engine.fail(raid5[2], raid5)
        assert degraded.state == "degraded" and degraded.failed == (2,)
        assert engine.status(raid5).failed == (2,)
        assert read_export(server.uri, tmp_path / "out.bin") == image.read_bytes()


@needs_nbd_client
def test_online_replace_while_a_client_writes_rebuilds_every_write(
    raid5: list[Path], tmp_path: Path
) -> None:
    images = random_images(tmp_path, 3 * MEMBER_DATA_BYTES, 3)
    spare = tmp_path / "spare.img"
    rebuilt = [raid5[0], spare, raid5[2], raid5[3]]
    with engine.serve(raid5) as server:
        write_image(server.uri, images[0])
        engine.fail(raid5[1], raid5)

        rounds_done: list[int] = []  # image index of each completed round
        stop = threading.Event()
        errors: list[BaseException] = []

        def writer() -> None:
            try:
                i = 1
                while not stop.is_set():
                    write_image(server.uri, images[i % len(images)])
                    rounds_done.append(i % len(images))
                    i += 1
            except BaseException as error:  # surfaced by the assertion below
                errors.append(error)

        thread = threading.Thread(target=writer)
        thread.start()
        calls: list[tuple[int, int]] = []
        try:
            # ~2 s at 3 MiB/s for 7 MiB: several client rounds land during the rebuild.
            status = engine.replace(
                1, spare, raid5, rate="3M", progress=lambda d, t: calls.append((d, t))
            )
            rounds_during_rebuild = len(rounds_done)
        finally:
            stop.set()
            thread.join()
        assert not errors, errors
        assert rounds_during_rebuild >= 1, "no client write landed during the rebuild"
        assert status.state == "clean" and status.members[1].path == str(spare)
        # Online progress comes from the server every 200 ms: the bar moves in between.
        assert len(calls) >= 3 and calls[-1] == (MEMBER_DATA_BYTES, MEMBER_DATA_BYTES)

        expected = images[rounds_done[-1]].read_bytes()
        assert read_export(server.uri, tmp_path / "out.bin") == expected
        assert engine.check(rebuilt).mismatched_stripes == 0
        # Reads of member 0's chunks now reconstruct from the rebuilt member: they are
        # right only if the rebuild caught every write made while it ran.
        engine.fail(raid5[0], rebuilt)
        assert read_export(server.uri, tmp_path / "degraded.bin") == expected


def test_replace_without_waiting_returns_while_the_rebuild_runs(
    raid5: list[Path], tmp_path: Path
) -> None:
    spare = tmp_path / "spare.img"
    rebuilt = [raid5[0], spare, raid5[2], raid5[3]]
    with engine.serve(raid5):
        engine.fail(1, raid5)
        started = engine.replace(1, spare, raid5, rate="4M", wait=False)
        assert started.state == "rebuilding"
        assert started.rebuild is not None and started.rebuild.role == 1
        assert started.rebuild.total_bytes == MEMBER_DATA_BYTES
        assert 0.0 <= started.rebuild.fraction < 1.0
        assert started.members_frame()["rebuild_total_bytes"][1] == MEMBER_DATA_BYTES
        finished = engine.wait_rebuilt(rebuilt, timeout_s=60)
        assert finished.state == "clean"
        assert engine.check(rebuilt).clean


def test_replace_without_waiting_needs_a_server(raid5: list[Path], tmp_path: Path) -> None:
    with pytest.raises(RaidlabError) as raised:
        engine.replace(1, tmp_path / "spare.img", raid5, wait=False)
    assert raised.value.field == "--no-wait"


# ------------------------------------------------------------- journal and served faults


def test_an_array_with_a_journal_needs_it_wherever_it_is_assembled(tmp_path: Path) -> None:
    members = members_in(tmp_path, 4)
    journal = tmp_path / "journal.img"
    created = engine.create(members, level=5, size=MEMBER_BYTES, journal=journal)
    assert created.journal == str(journal) and created.journal_replayed == 0
    with pytest.raises(RaidlabError) as raised:
        engine.status(members)
    assert raised.value.field == "--journal"
    assert engine.status(members, journal=journal).journal == str(journal)
    with engine.serve(members, journal=journal):
        assert engine.check(members, journal=journal).clean
    assert not engine.status(members, journal=journal).dirty


def test_faults_on_a_served_member_are_reported_and_cleared(raid5: list[Path]) -> None:
    with engine.serve(raid5):
        slowed = engine.inject_fault(raid5[3], latency="5ms")
        assert slowed.faults == (engine.Fault(member=3, kind="latency", delay_ms=5.0),)
        erroring = engine.inject_fault(raid5[0], write_error=(0, "64K"))
        assert erroring.faults[-1] == engine.Fault(
            member=0, kind="write-error", offset_bytes=0, len_bytes=65536
        )
        engine.inject_fault(raid5[3], clear=True)
        cleared = engine.inject_fault(raid5[0], clear=True)
        assert cleared.faults == () and cleared.state == "clean"


@needs_nbd_client
def test_a_read_error_fails_the_member_and_the_data_stays_whole(
    raid5: list[Path], tmp_path: Path
) -> None:
    (image,) = random_images(tmp_path, 3 * MEMBER_DATA_BYTES, 1)
    with engine.serve(raid5) as server:
        write_image(server.uri, image)
        faulty = engine.inject_fault(raid5[2], read_error="0+1M")
        assert faulty.faults == (
            engine.Fault(member=2, kind="read-error", offset_bytes=0, len_bytes=1 << 20),
        )
        assert read_export(server.uri, tmp_path / "out.bin") == image.read_bytes()
        after = engine.status(raid5)
        assert after.state == "degraded" and after.failed == (2,)


@needs_nbd_client
def test_a_bad_sector_is_rewritten_and_the_member_stays(raid5: list[Path], tmp_path: Path) -> None:
    (image,) = random_images(tmp_path, 3 * MEMBER_DATA_BYTES, 1)
    with engine.serve(raid5) as server:
        write_image(server.uri, image)
        # Two unreadable 4 KiB on role 2 (left-symmetric, 64K chunks): in chunk row 0,
        # data of stripe 0, which reads meet; in row 1, stripe 1's parity, which only
        # the scrub reads.
        engine.inject_fault(raid5[2], bad_sector="4K")
        faulty = engine.inject_fault(raid5[2], bad_sector="68K")
        assert [f.kind for f in faulty.faults] == ["bad-sector", "bad-sector"]
        assert read_export(server.uri, tmp_path / "out.bin") == image.read_bytes()
        after = engine.status(raid5)
        assert after.state == "clean" and after.failed == ()
        assert after.members[2].read_errors_corrected == 1
        assert after.members_frame()["read_errors_corrected"].tolist() == [0, 0, 1, 0]
        assert len(after.faults) == 1  # the parity row's is still latent
        scrub = engine.check(raid5)
        assert scrub.clean and scrub.read_errors_corrected == 1
        assert engine.status(raid5).faults == ()


def test_faults_need_a_server_and_exactly_one_kind(raid5: list[Path]) -> None:
    with pytest.raises(RaidlabError) as raised:
        engine.inject_fault(raid5[0], latency="5ms")
    assert "served array" in str(raised.value)
    with pytest.raises(RaidlabError) as raised:
        engine.inject_fault(raid5[0], latency="5ms", clear=True)
    assert raised.value.field == "inject"
    with engine.serve(raid5), pytest.raises(RaidlabError) as raised:
        engine.inject_fault(raid5[0], latency="soon")
    assert raised.value.field == "--latency"


# ---------------------------------------------------------------------------------- CLI


def cli_error_line(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "count", "field"),
    [
        (["create", "--level", "7", "--size", "8M"], 4, "--level"),
        (["create", "--size", "8M"], 4, "--level"),
        (["create", "--level", "5", "--size", "8Q"], 4, "--size"),
        (["create", "--level", "5", "--size", "8M", "--stripe-unit", "3000"], 4, "--stripe-unit"),
        (["create", "--level", "5", "--size", "8M", "--chunk", "3000"], 4, "--stripe-unit"),
        (["create", "--level", "5", "--size", "8M", "--stripe-unit", "0.3K"], 4, "--stripe-unit"),
        (["create", "--level", "0", "--size", "5000000T"], 4, "--size"),
        (["create", "--level", "5", "--size", "8M"], 2, "MEMBER"),
        (["create", "--level", "5", "--size", "8M"], 0, "MEMBER"),
        (["status"], 0, "MEMBER"),
        (["replace", "--rate", "fast", "1", "spare.img"], 3, "--rate"),
        (["serve", "--requests-in-flight", "0"], 3, "--requests-in-flight"),
        (["serve", "--bitmap-delay", "0"], 3, "--bitmap-delay"),
        (["inject"], 0, "inject"),
        (["inject", "m.img", "0", "--clear"], 0, "inject"),
    ],
)
def test_cli_bad_input_is_one_line_naming_the_field_with_status_2(
    tmp_path: Path, args: list[str], count: int, field: str
) -> None:
    line = cli_error_line([*args, *map(str, members_in(tmp_path, count))])
    assert line.startswith(f"error: {field}: "), line


def test_cli_foreign_member_is_one_line_naming_it(raid5: list[Path], tmp_path: Path) -> None:
    other = members_in(tmp_path, 3, prefix="other")
    engine.create(other, level=5, size=MEMBER_BYTES)
    line = cli_error_line(["status", *map(str, [*raid5[:3], other[0]])])
    assert "belongs to array" in line and line.startswith("error: /")


def test_cli_create_and_status_show_every_member(tmp_path: Path) -> None:
    members = [str(p) for p in members_in(tmp_path, 4)]
    created = runner.invoke(app, ["create", "--level", "5", "--size", "8M", *members])
    assert created.exit_code == 0, created.output
    for path in members:
        assert path in created.stdout
    assert "RAID 5" in created.stdout and "state clean" in created.stdout
    shown = runner.invoke(app, ["status", "--json", *members])
    assert shown.exit_code == 0, shown.output
    document = json.loads(shown.stdout)
    assert document["member_count"] == 4 and document["state"] == "clean"
    assert runner.invoke(app, ["assemble", "--json", *members]).stdout == shown.stdout


def test_cli_replace_shows_progress_and_check_repair_find_corruption(
    raid5: list[Path], tmp_path: Path
) -> None:
    members = [str(p) for p in raid5]
    failed = runner.invoke(app, ["fail", "--json", "1", *members])
    assert json.loads(failed.stdout)["failed"] == [1]
    spare = str(tmp_path / "spare.img")
    replaced = runner.invoke(app, ["replace", "1", spare, "--rate", "64M", *members])
    assert replaced.exit_code == 0, replaced.output
    assert "100%" in replaced.stderr and "7.0/7.0 MiB" in replaced.stderr
    rebuilt = [members[0], spare, members[2], members[3]]
    assert runner.invoke(app, ["check", *rebuilt]).exit_code == 0
    assert runner.invoke(app, ["inject", members[3], "0", "--mask", "0x80"]).exit_code == 0
    checked = runner.invoke(app, ["check", "--json", *rebuilt])
    assert checked.exit_code == 1
    assert json.loads(checked.stdout)["mismatched_stripes"] == 1
    # Row 0's parity: RAID 5 cannot tell it from the data, so repair names the stripe
    # (exit 1) and keeps it.
    repaired = runner.invoke(app, ["repair", *rebuilt])
    assert repaired.exit_code == 1 and "unresolved 1" in repaired.stdout, repaired.output
    assert runner.invoke(app, ["check", *rebuilt]).exit_code == 1


def test_cli_serve_prints_the_uri_and_stops_clean_on_sigint(raid5: list[Path]) -> None:
    python_dir = Path(__file__).resolve().parents[1] / "python"
    env = {**os.environ, "PYTHONPATH": str(python_dir)}
    command = [sys.executable, "-m", "raidlab.cli", "serve", "--listen", "127.0.0.1:0"]
    with subprocess.Popen(
        [*command, *map(str, raid5)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as process:
        try:
            assert process.stdout is not None
            uri = process.stdout.readline().strip()
            assert uri.startswith("nbd://127.0.0.1:"), uri
            assert engine.status(raid5).state == "clean"
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, stderr
    assert "stopped, array clean" in stderr
    assert not engine.status(raid5).dirty


def _cli_serve(raid5: list[Path], *flags: str) -> subprocess.Popen[str]:
    """``raidlab serve FLAGS MEMBERS`` (the CLI, not the API) in a subprocess."""
    python_dir = Path(__file__).resolve().parents[1] / "python"
    env = {**os.environ, "PYTHONPATH": str(python_dir)}
    command = [sys.executable, "-m", "raidlab.cli", "serve", *flags, *map(str, raid5)]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def _stop_cli_serve(process: subprocess.Popen[str]) -> str:
    """SIGINT, then the clean exit's stderr."""
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    return stderr


@needs_nbd_client
def test_serve_on_the_unix_socket_alone(raid5: list[Path], tmp_path: Path) -> None:
    image = random_images(tmp_path, 1 << 20, 1)[0]
    with engine.serve(raid5, unix=True) as server:
        assert server.address is None
        assert server.unix_uri is not None and server.unix_uri.startswith("nbd+unix:///")
        assert server.uri == server.unix_uri
        socket_path = Path(server.unix_uri.split("?socket=", 1)[1])
        assert socket_path.stat().st_mode & 0o777 == 0o600
        write_image(server.uri, image)
        assert read_export(server.uri, tmp_path / "out.bin")[: 1 << 20] == image.read_bytes()
    assert not socket_path.exists()


def test_cli_serve_prints_the_nbd_unix_uri_by_default(raid5: list[Path]) -> None:
    with _cli_serve(raid5) as process:
        try:
            assert process.stdout is not None
            uri = process.stdout.readline().strip()
            assert uri.startswith("nbd+unix:///raidlab?socket="), uri
            assert Path(uri.split("?socket=", 1)[1]).is_socket()
            stderr = _stop_cli_serve(process)
        finally:
            if process.poll() is None:
                process.kill()
    assert "nbd://" not in stderr and "stopped, array clean" in stderr


def test_cli_serve_takes_tls_psk(raid5: list[Path], tmp_path: Path) -> None:
    keys = tmp_path / "keys.psk"
    keys.write_text("alice:" + "ab" * 32 + "\n")
    keys.chmod(0o600)
    flags = ["--listen", "127.0.0.1:0", "--tls-psk", str(keys), "--tls", "required"]
    with _cli_serve(raid5, *flags) as process:
        try:
            assert process.stdout is not None
            uri = process.stdout.readline().strip()
            assert uri.startswith("nbd://127.0.0.1:"), uri
            # TLS is required: a plain client gets no export.
            if shutil.which("qemu-io") is not None:
                plain = subprocess.run(
                    ["qemu-io", "-f", "raw", uri, "-c", "read 0 4k"],
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                assert plain.returncode != 0, plain.stdout
            _stop_cli_serve(process)
        finally:
            if process.poll() is None:
                process.kill()


def test_cli_replace_no_wait_shows_the_rebuild_under_way(raid5: list[Path], tmp_path: Path) -> None:
    members = [str(p) for p in raid5]
    spare = str(tmp_path / "spare.img")
    with engine.serve(raid5):
        engine.fail(1, raid5)
        started = runner.invoke(app, ["replace", "1", spare, "--rate", "4M", "--no-wait", *members])
        assert started.exit_code == 0, started.output
        assert "state rebuilding" in started.stdout
        assert f"/{MEMBER_DATA_BYTES} B)" in started.stdout
        assert "━" not in started.stderr  # no bar without progress reports
        engine.wait_rebuilt(members, timeout_s=60)


def test_cli_inject_a_served_fault_and_status_shows_it(raid5: list[Path], tmp_path: Path) -> None:
    members = [str(p) for p in raid5]
    with engine.serve(raid5):
        injected = runner.invoke(app, ["inject", members[1], "--read-error", "1M+64K"])
        assert injected.exit_code == 0, injected.output
        assert "injected fault on role 1: read-error, data bytes [1048576, +65536)" in (
            injected.stdout
        )
        shown = runner.invoke(app, ["status", "--json", *members])
        assert json.loads(shown.stdout)["faults"][0]["kind"] == "read-error"
        assert runner.invoke(app, ["inject", members[1], "--clear"]).exit_code == 0


def test_cli_a_journal_array_without_its_journal_is_one_line(tmp_path: Path) -> None:
    members = [str(p) for p in members_in(tmp_path, 4)]
    journal = str(tmp_path / "journal.img")
    created = runner.invoke(
        app, ["create", "--level", "5", "--size", "8M", "--journal", journal, *members]
    )
    assert created.exit_code == 0, created.output
    assert f"write journal {journal}" in created.stdout
    assert cli_error_line(["status", *members]).startswith("error: --journal: ")
    assert runner.invoke(app, ["check", "--journal", journal, *members]).exit_code == 0


def test_cli_status_of_a_served_array_says_served_not_stopped_uncleanly(
    raid5: list[Path],
) -> None:
    members = [str(p) for p in raid5]
    with engine.serve(raid5):
        shown = runner.invoke(app, ["status", *members])
        assert shown.exit_code == 0, shown.output
        assert "state clean (served: open in a server" in shown.stdout
        assert "stopped uncleanly" not in shown.stdout
        assert engine.status(raid5).served
    assert not engine.status(raid5).served


def test_cli_fail_of_a_role_past_the_last_names_the_roles_there_are(raid5: list[Path]) -> None:
    line = cli_error_line(["fail", "7", *map(str, raid5)])
    assert line.endswith(f"a role 0..={len(raid5) - 1})"), line


def test_serve_forwards_the_tls_flags(raid5: list[Path], tmp_path: Path) -> None:
    with pytest.raises(RaidlabError) as raised:
        engine.serve(raid5, tls="required", timeout_s=10)
    assert raised.value.field == "--tls-cert"
    with pytest.raises(RaidlabError) as raised:
        engine.serve(
            raid5, tls_cert=tmp_path / "absent.pem", tls_key=tmp_path / "absent.pem", timeout_s=10
        )
    assert raised.value.field == "--tls-cert"
    assert "cannot read" in str(raised.value)


def test_a_hot_spare_takes_a_failed_members_role_online(tmp_path: Path) -> None:
    members = members_in(tmp_path, 3)
    spare = tmp_path / "s0.img"
    created = engine.create(members, level=5, size=MEMBER_BYTES, spares=[spare])
    assert created.spares == (str(spare),)
    # Assembly finds the spare among the members, in any order.
    assert engine.status([spare, *reversed(members)]).spares == (str(spare),)
    with engine.serve([*members, spare]):
        assert engine.fail(members[1], members).failed == (1,)
        # The server starts the spare's rebuild by itself: wait (bounded) until clean.
        deadline = time.monotonic() + 60
        finished = engine.status([members[0], members[2]])
        while finished.state != "clean":
            assert time.monotonic() < deadline, finished
            time.sleep(0.1)
            finished = engine.status([members[0], members[2]])
        assert finished.members[1].path == str(spare)
        assert finished.spares == ()
        late = tmp_path / "s1.img"
        late.write_bytes(b"")
        os.truncate(late, MEMBER_BYTES)
        assert engine.add_spare(late, [members[0], members[2]]).spares == (str(late),)
        assert engine.check([members[0], members[2]]).clean


def test_cli_refuses_a_spare_smaller_than_a_member_in_one_line(raid5: list[Path]) -> None:
    small = raid5[0].parent / "small.img"
    small.write_bytes(b"")
    os.truncate(small, MEMBER_BYTES // 2)
    line = cli_error_line(["add-spare", str(small), *map(str, raid5)])
    assert line.startswith("error: ") and "smaller than" in line, line


def test_serve_forwards_what_the_engine_says_before_it_serves(raid5: list[Path]) -> None:
    # The engine warns about a listener that is no loopback address (and has no TLS)
    # before its ready line; `raidlab serve` passes its lines on through `log`.
    said: list[str] = []
    with engine.serve(raid5, {"listen": "0.0.0.0:0"}, log=said.append):
        pass
    assert any("is not a loopback address" in line for line in said), said
