"""RAID levels in the front end: flags, validation, capacity, scenario keys, explain."""

from __future__ import annotations

import json

import pytest
from raidlab.api import resolve_array
from raidlab.cli import app
from raidlab.errors import RaidlabError
from raidlab.scenario.array import (
    ArrayRequest,
    array_capacity_bytes,
    build_array,
    load_array_file,
    raw_capacity_bytes,
)
from typer.testing import CliRunner

runner = CliRunner()
DRIVE = "intel-dc-s3500-80g"
RUN = ["run", "--drive", DRIVE]
UNIT = 64 * 1024
CHUNKS = 80_000_000_000 // UNIT  # whole 64 KiB stripe units on one 80 GB member


def _array(**values: object) -> dict:
    return build_array(ArrayRequest(**{"drive": DRIVE, "stripe_unit": "64K", **values}))


# --- one-line errors naming the flag, exit status 2 --------------------------------------


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--level", "7"], "--level"),
        (["--level", "raid5"], "--level"),
        (["--level", "1", "--drives", "1"], "--drives"),
        (["--level", "4", "--drives", "2"], "--drives"),
        (["--level", "5", "--drives", "2"], "--drives"),
        (["--level", "6", "--drives", "3"], "--drives"),
        (["--level", "10", "--drives", "1"], "--drives"),
        (["--level", "50", "--drives", "4"], "--drives"),  # 2 spans of 2: below 3 per span
        (["--level", "50", "--drives", "7"], "--drives"),  # not divisible by 2 spans
        (["--level", "60", "--drives", "6"], "--drives"),  # 2 spans of 3: below 4 per span
        (["--level", "50", "--drives", "9", "--spans", "2"], "--drives"),
        (["--level", "50", "--drives", "6", "--spans", "1"], "--spans"),
        (["--level", "5", "--drives", "3", "--spans", "2"], "--spans"),
        (["--level", "10", "--drives", "3", "--copies", "4"], "--copies"),
        (["--level", "10", "--drives", "4", "--copies", "1"], "--copies"),
        (["--level", "1", "--drives", "2", "--copies", "2"], "--copies"),
        (["--level", "0", "--layout", "near"], "--layout"),
        (["--level", "1", "--drives", "2", "--layout", "left-symmetric"], "--layout"),
        (["--level", "4", "--drives", "3", "--layout", "left-symmetric"], "--layout"),
        (["--level", "5", "--drives", "3", "--layout", "near"], "--layout"),
        (["--level", "10", "--drives", "4", "--layout", "left-symmetric"], "--layout"),
        (["--level", "5", "--drives", "4", "--failed", "4"], "--failed"),
        (["--level", "5", "--drives", "4", "--failed", "1,1"], "--failed"),
        (["--level", "5", "--drives", "4", "--failed", "x"], "--failed"),
        (["--level", "0", "--drives", "2", "--failed", "0"], "--failed"),
        (["--level", "concat", "--drives", "2", "--failed", "1"], "--failed"),
        (["--level", "1", "--drives", "2", "--failed", "0,1"], "--failed"),
        (["--level", "4", "--drives", "4", "--failed", "0,1"], "--failed"),
        (["--level", "5", "--drives", "4", "--failed", "0,1"], "--failed"),
        (["--level", "6", "--drives", "5", "--failed", "0,1,2"], "--failed"),
        (["--level", "10", "--drives", "4", "--failed", "0,1"], "--failed"),
        (["--level", "50", "--drives", "6", "--failed", "0,1"], "--failed"),  # one span
        (["--level", "60", "--drives", "8", "--failed", "4,5,6"], "--failed"),  # one span
        (["--level", "5", "--drives", "4", "--rebuild-rate", "50M"], "--rebuild-rate"),
        (
            ["--level", "5", "--drives", "4", "--failed", "1", "--rebuild-rate", "0"],
            "--rebuild-rate",
        ),
        (
            ["--level", "5", "--drives", "4", "--failed", "1", "--rebuild-rate", "fast"],
            "--rebuild-rate",
        ),
    ],
)
def test_bad_level_option_is_one_line_naming_the_flag(args: list[str], flag: str) -> None:
    result = runner.invoke(app, [*RUN, *args])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {flag}: "), result.stderr


def test_drive_minimum_error_says_what_is_allowed() -> None:
    result = runner.invoke(app, [*RUN, "--level", "6", "--drives", "3"])
    assert result.stderr.strip() == "error: --drives: RAID 6 needs at least 4 drives, got 3"


def test_layout_error_lists_the_levels_that_have_one() -> None:
    result = runner.invoke(app, [*RUN, "--level", "1", "--drives", "2", "--layout", "far"])
    assert "RAID 1 has no layout; only RAID 5, 6, 50, 60" in result.stderr
    assert "RAID 10 (near, far, offset)" in result.stderr


# --- what is accepted ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "failed"),
    [
        ({"level": 1, "drives": 3, "failed": "0,2"}, [0, 2]),  # RAID 1: drives - 1
        ({"level": 6, "drives": 5, "failed": [3, 1]}, [1, 3]),
        ({"level": 10, "drives": 6, "copies": 3, "failed": "1,4"}, [1, 4]),
        ({"level": 50, "drives": 6, "failed": "0,3"}, [0, 3]),  # one per span
        ({"level": 60, "drives": 8, "failed": "0,1,4,5"}, [0, 1, 4, 5]),  # two per span
    ],
)
def test_failures_the_level_tolerates_are_accepted(values: dict, failed: list[int]) -> None:
    assert _array(**values)["failed"] == failed


def test_defaults_of_each_level_are_explicit_in_the_scenario() -> None:
    assert _array(level=5, drives=3)["layout"] == "left-symmetric"
    raid10 = _array(level=10, drives=4)
    assert (raid10["layout"], raid10["copies"]) == ("near", 2)
    assert _array(level=60, drives=8)["spans"] == 2


def test_level_accepts_digits_and_concat() -> None:
    assert _array(level="5", drives=3)["level"] == 5
    assert _array(level="concat", drives=2)["level"] == "concat"


def test_rebuild_takes_the_lowest_index_failed_member() -> None:
    array = _array(level=6, drives=6, failed="4,2", rebuild_rate="200M")
    assert array["rebuild"] == {"member": 2, "rate_bytes_per_s": 200 << 20}


def test_raid0_scenario_keeps_the_keys_it_always_had() -> None:
    array = _array(level=0, drives=2, controller="linux-md")
    assert "parity_rate_bytes_per_s" not in array["controller"]
    assert "read_balance" not in array["controller"]
    assert not {"layout", "copies", "spans", "failed", "rebuild"} & set(array)


def test_controller_keys_follow_the_level() -> None:
    parity = _array(level=5, drives=3, controller="linux-md")["controller"]
    mirror = _array(level=1, drives=2, controller="linux-md")["controller"]
    assert parity["parity_rate_bytes_per_s"] == 5_000_000_000 and "read_balance" not in parity
    assert mirror["read_balance"] == "least-outstanding"
    assert "parity_rate_bytes_per_s" not in mirror


def test_hba_parity_engine_is_unlimited() -> None:
    assert (
        _array(level=5, drives=3, controller="hba")["controller"]["parity_rate_bytes_per_s"] is None
    )


def test_rst_balances_mirrored_reads_round_robin() -> None:
    controller = _array(level=1, drives=2, controller="intel-h97-rst")["controller"]
    assert controller["read_balance"] == "round-robin"


def test_inline_controller_without_new_fields_gets_the_native_defaults() -> None:
    table = {
        "request_overhead_ns": 0,
        "member_op_overhead_ns": 0,
        "max_member_transfer_bytes": "1M",
        "port_rate_bytes_per_s": 6e8,
        "bus_rate_bytes_per_s": "unlimited",
        "read_rate_bytes_per_s_max": "unlimited",
        "write_rate_bytes_per_s_max": "unlimited",
        "read_ahead_bytes": 0,
        "read_ahead_segments": 1,
        "read_hit_overhead_ns": 0,
    }
    controller = _array(level=10, drives=4, controller=table)["controller"]
    assert controller["read_balance"] == "round-robin"


def test_bad_read_balance_names_the_field() -> None:
    with pytest.raises(RaidlabError) as error:
        _array(level=1, drives=2, controller={"preset": "hba", "read_balance": "random"})
    assert error.value.field == "controller.read_balance"


def test_toml_array_takes_the_level_options(tmp_path) -> None:
    path = tmp_path / "raid6.toml"
    path.write_text(
        f'[array]\nlevel = 6\ndrives = 6\ndrive = "{DRIVE}"\nlayout = "right-asymmetric"\n'
        'failed = [5, 0]\nrebuild_rate = "50M"\n'
    )
    array = build_array(load_array_file(path))
    assert (array["layout"], array["failed"], array["rebuild"]["member"]) == (
        "right-asymmetric",
        [0, 5],
        0,
    )


def test_toml_level_error_names_the_file_key(tmp_path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(f'[array]\nlevel = 5\ndrives = 4\ndrive = "{DRIVE}"\nfailed = "0,1"\n')
    with pytest.raises(RaidlabError) as error:
        build_array(load_array_file(path))
    assert error.value.field == f"{path}: array.failed"


# --- usable capacity -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "chunks"),
    [
        ({"level": 0, "drives": 3}, 3 * CHUNKS),
        ({"level": "concat", "drives": 3}, 3 * CHUNKS),
        ({"level": 1, "drives": 3}, CHUNKS),
        ({"level": 4, "drives": 4}, 3 * CHUNKS),
        ({"level": 5, "drives": 4}, 3 * CHUNKS),
        ({"level": 6, "drives": 5}, 3 * CHUNKS),
        ({"level": 10, "drives": 4}, 2 * CHUNKS),
        ({"level": 10, "drives": 3}, 3 * CHUNKS // 2),  # 1.5 drives: floor to whole chunks
        ({"level": 10, "drives": 6, "copies": 3}, 2 * CHUNKS),
        ({"level": 50, "drives": 9, "spans": 3}, 3 * 2 * CHUNKS),
        ({"level": 60, "drives": 8}, 2 * 2 * CHUNKS),
    ],
)
def test_usable_capacity_per_level(values: dict, chunks: int) -> None:
    assert array_capacity_bytes(_array(**values)) == chunks * UNIT


def test_raid10_of_four_offers_half_the_raw_capacity() -> None:
    array = _array(level=10, drives=4)
    assert array_capacity_bytes(array) * 2 == raw_capacity_bytes(array)


def test_workload_region_is_sized_by_the_level(fake_native: None) -> None:
    result = runner.invoke(app, [*RUN, "--level", "5", "--drives", "4", "--format", "json"])
    assert result.exit_code == 0, result.output
    scenario = json.loads(result.stdout)["scenario"]
    assert scenario["workload"]["size_bytes"] == 3 * CHUNKS * UNIT


# --- the scenario sent to the simulator ------------------------------------------------------


def test_degraded_rebuild_scenario_has_the_contract_keys(fake_native: None) -> None:
    args = ["--level", "5", "--drives", "4", "--layout", "left-asymmetric", "--failed", "2"]
    result = runner.invoke(
        app, [*RUN, "--controller", "linux-md", *args, "--rebuild-rate", "50M", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    array = json.loads(result.stdout)["scenario"]["array"]
    assert array["level"] == 5 and array["layout"] == "left-asymmetric"
    assert array["failed"] == [2]
    assert array["rebuild"] == {"member": 2, "rate_bytes_per_s": 50 * 1024 * 1024}
    assert array["controller"]["parity_rate_bytes_per_s"] == 5_000_000_000
    assert not {"copies", "spans"} & set(array)


# --- --explain -------------------------------------------------------------------------------


def test_explain_prints_member_ops_per_direction(fake_native: None) -> None:
    result = runner.invoke(
        app, [*RUN, "--level", "5", "--drives", "4", "--rw", "randwrite", "--explain"]
    )
    assert result.exit_code == 0, result.output
    assert "write: 4.000 member ops per host op" in result.stdout


def test_explain_prints_parity_bytes_when_present(fake_native: None) -> None:
    result = runner.invoke(
        app, [*RUN, "--level", "5", "--drives", "4", "--rw", "randwrite", "--explain"]
    )
    assert "write: 1.000 parity bytes per host byte" in result.stdout


def test_explain_prints_the_rebuild(fake_native: None) -> None:
    args = ["--level", "5", "--drives", "4", "--failed", "2", "--rebuild-rate", "50M"]
    result = runner.invoke(app, [*RUN, *args, "--explain"])
    assert result.exit_code == 0, result.output
    assert "rebuild of member 2: 50.0 MB/s" in result.stdout
    assert "rebuild time: 26.7 min (projected at that rate)" in result.stdout


def test_run_json_carries_the_rebuild_object(fake_native: None) -> None:
    args = ["--level", "1", "--drives", "2", "--failed", "1", "--rebuild-rate", "200M"]
    result = runner.invoke(app, [*RUN, *args, "--format", "json"])
    assert json.loads(result.stdout)["rebuild"]["member"] == 1


# --- through the native simulator, once it implements RAID levels -----------------------------


def test_native_raid5_small_write_is_four_member_ops() -> None:
    result = runner.invoke(
        app,
        [*RUN, "--controller", "linux-md", "--level", "5", "--drives", "4", "--rw", "randwrite"]
        + ["--ios", "2000", "--format", "json"],
    )
    assert result.exit_code == 0, result.output
    explain = json.loads(result.stdout)["explain"]
    assert explain["member_ios_per_host_io"]["write"] == pytest.approx(4.0)


def test_native_raid1_json_explain_has_member_ios_per_direction() -> None:
    result = runner.invoke(
        app,
        [*RUN, "--controller", "linux-md", "--level", "1", "--drives", "2", "--rw", "randrw"]
        + ["--ios", "2000", "--format", "json"],
    )
    assert result.exit_code == 0, result.output
    ratios = json.loads(result.stdout)["explain"]["member_ios_per_host_io"]
    assert ratios["read"] == pytest.approx(1.0) and ratios["write"] == pytest.approx(2.0)


def test_native_rebuild_reports_progress_and_projected_time() -> None:
    args = ["--level", "5", "--drives", "4", "--failed", "1", "--rebuild-rate", "200M"]
    result = runner.invoke(
        app, [*RUN, "--controller", "linux-md", *args, "--ios", "2000", "--explain"]
    )
    assert result.exit_code == 0, result.output
    assert "rebuild of member 1:" in result.stdout and "rebuild time:" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--level", "concat", "--drives", "2"],
        ["--level", "4", "--drives", "3"],
        ["--level", "6", "--drives", "4", "--failed", "0,3"],
        ["--level", "10", "--drives", "4", "--layout", "far"],
        ["--level", "10", "--drives", "3", "--layout", "offset"],
        ["--level", "50", "--drives", "6", "--failed", "2"],
        ["--level", "60", "--drives", "8", "--layout", "right-symmetric"],
    ],
)
def test_native_accepts_every_level(args: list[str]) -> None:
    result = runner.invoke(app, [*RUN, "--controller", "linux-md", *args, "--ios", "500"])
    assert result.exit_code == 0, result.output


def test_raid10_survives_failures_in_different_mirror_pairs() -> None:
    # near layout, 4 drives: mirror pairs (0, 1) and (2, 3)
    result = runner.invoke(
        app, [*RUN, "--level", "10", "--drives", "4", "--failed", "0,2", "--ios", "500"]
    )
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("level", "drives", "failed", "placements"),
    [
        (0, 2, "1", None),
        (5, 4, "0,1", None),
        (10, 4, "0,1", "more when no chunk loses all its copies"),
        (50, 6, "0,1", "more when they fall in different spans"),
    ],
)
def test_a_lost_array_says_more_failures_survive_only_where_a_placement_does(
    level: int, drives: int, failed: str, placements: str | None
) -> None:
    with pytest.raises(RaidlabError) as refused:
        resolve_array(drive="intel-dc-s3500-80g", level=level, drives=drives, failed=failed)
    message = str(refused.value)
    assert message.startswith("failed: ") and "loses data" in message, message
    if placements is None:
        assert "placement" not in message and "more" not in message, message
    else:
        assert placements in message, message
