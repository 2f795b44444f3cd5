"""The native side is the one authority on what is valid: every bound it declares
(``raidlab._native.limits()``), fed just past it through the CLI or an array TOML file,
comes back as one line naming the user's flag or key, never an internal path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from raidlab import _native
from raidlab.cli import app
from raidlab.errors import RaidlabError
from raidlab.scenario import limits
from raidlab.scenario.array import ArrayRequest, build_array
from raidlab.scenario.workloads import WorkloadRequest, build_workload
from typer.testing import CliRunner

runner = CliRunner()
DATA = Path(__file__).parent / "data"
TRACE = str(DATA / "traces" / "small.msr.csv")
SSD = "adata-sp900-128g"
NVME = "samsung-960-pro-512g"
HDD = "hitachi-deskstar-250g"
FTL = {"spare_percent": 7.0, "pages_per_block": 256, "erase_ns": 3_000_000}
LIMITS: list[dict[str, Any]] = json.loads(_native.limits())

# Fields of `raidlab run` reached by a flag, with the flags that give the field a
# meaning (a level that takes it, failed members to rebuild).
RUN_FLAGS: dict[str, tuple[str, list[str]]] = {
    "seed": ("--seed", []),
    "array.level": ("--level", []),
    "array.drive_count": ("--drives", []),
    "array.stripe_unit_bytes": ("--stripe-unit", []),
    "array.layout": ("--layout", ["--level", "5", "--drives", "3"]),
    "array.copies": ("--copies", ["--level", "10", "--drives", "4"]),
    "array.spans": ("--spans", ["--level", "50", "--drives", "6"]),
    "array.failed": ("--failed", ["--level", "1", "--drives", "2"]),
    "array.rebuild.rate_bytes_per_s": (
        "--rebuild-rate",
        ["--level", "1", "--drives", "2", "--failed", "0"],
    ),
    "array.deleted_percent": ("--deleted", []),
    "array.spares": ("--spares", []),
    "array.rebuild.rate_min_bytes_per_s": (
        "--rebuild-rate-min",
        ["--level", "1", "--drives", "2", "--failed", "0", "--rebuild-rate", "100M"],
    ),
    "array.rebuild.failed_at_ns": (
        "--fail-at",
        ["--level", "1", "--drives", "2", "--failed", "0", "--rebuild-rate", "100M"]
        + ["--spares", "1"],
    ),
    "workload.rw": ("--rw", []),
    "workload.bs": ("--bs", []),
    "workload.rwmixread": ("--rwmixread", []),
    "workload.iodepth": ("--iodepth", []),
    "workload.numjobs": ("--numjobs", []),
    "workload.offset_bytes": ("--offset", []),
    "workload.ios": ("--ios", []),
    "workload.runtime_ns": ("--runtime", []),
}
# Fields only the Python API sets, by keyword of WorkloadRequest. Raw weights of a
# block-size mix are the API's [[bytes, weight]] form: --bs takes percent shares by
# fio's rules (an empty or 0 share splits the rest, above 100 is 100).
API_KEYWORDS = {"workload.warmup_ios": "warmup_ios", "workload.bs.weight": "bs"}
# Trace replay fields of `raidlab replay`.
REPLAY_FLAGS = {
    "workload.format": "--format",
    "workload.mode": "--mode",
    "workload.iodepth": "--iodepth",
    "workload.time_scale": "--time-scale",
}
# Tables of an array TOML file: the scenario path -> the file's table.
TOML_TABLES = {
    "array.drive.ftl": "array.drive.ftl",
    "array.drive": "array.drive",
    "array.controller": "array.controller",
    "array.controller.uplink": "array.controller.uplink",
    "array.host.deadline": "host.deadline",
    "array.host.bfq": "host.bfq",
    "array.host": "host",
}
# Fields no user flag or key sets directly, and why.
NO_USER_SURFACE = {
    "schema": "the front end writes it",
    "array.rebuild.member": "--rebuild-rate rebuilds the lowest failed member",
    "workload.kind": "the command chooses the workload kind",
    "workload.sample_interval_ns": "set by fio job files' averaging, not a flag",
}


def _bad_values(entry: dict[str, Any]) -> list[Any]:
    """Just past each bound (or a choice no list has)."""
    if entry.get("choices"):
        return ["no-such-choice"]
    real = entry["kind"] in ("rate", "percent", "number")
    values: list[Any] = []
    if "min" in entry:
        low = entry["min"]
        if entry.get("min_exclusive"):
            values.append(low)
        step = abs(low) / 2 if real and 0 < abs(low) < 1 else 1
        values.append(low - step)
    if "max" in entry and entry["max"] < 2**64 - 1:
        values.append(entry["max"] + 1)
    return [v if real else int(v) for v in values]


def _walked() -> list[tuple[dict[str, Any], Any]]:
    return [(entry, value) for entry in LIMITS for value in _bad_values(entry)]


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _toml_case(entry: dict[str, Any], value: Any, tmp_path: Path) -> tuple[list[str], str]:
    """The `raidlab run` arguments and the label an array TOML file setting the field
    to ``value`` must produce."""
    path = entry["path"]
    parent, key = path.rsplit(".", 1)
    table = TOML_TABLES[parent]
    drive = {"hdd": HDD, "nvme": NVME}.get(entry["scope"], SSD)
    lines = ["[array]", "drives = 2", "[array.drive]", f'preset = "{drive}"']
    if parent == "array.drive":
        if key == "kind":
            lines = ["[array]", "drives = 2", "[array.drive]"]
        lines.append(f"{key} = {_toml(value)}")
    lines += ["[array.controller]", 'preset = "hba"']
    if parent == "array.controller":
        lines.append(f"{key} = {_toml(value)}")
    if parent == "array.controller.uplink":
        uplink = {"pcie_gen": 3, "pcie_lanes": 4}
        given = [f"{k} = {v}" for k, v in uplink.items() if k != key]
        lines += ["[array.controller.uplink]", *given]
        lines.append(f"{key} = {_toml(value)}")
    if parent == "array.drive.ftl":
        lines += ["[array.drive.ftl]", *(f"{k} = {_toml(v)}" for k, v in FTL.items() if k != key)]
        lines.append(f"{key} = {_toml(value)}")
    lines.append("[host]")
    if parent == "array.host":
        lines.append(f"{key} = {_toml(value)}")
    scheduler = {"array.host.deadline": "mq-deadline", "array.host.bfq": "bfq"}.get(parent)
    if scheduler:
        lines += [f'scheduler = "{scheduler}"', f"[{table}]", f"{key} = {_toml(value)}"]
    file = tmp_path / "array.toml"
    file.write_text("\n".join(lines) + "\n")
    return ["run", "--config", str(file), "--ios", "200"], f"{file}: {table}.{key}"


def _case(entry: dict[str, Any], value: Any, tmp_path: Path) -> tuple[list[str], str]:
    """How a user sets the field to ``value``, and the label the error must name."""
    path, scope = entry["path"], entry["scope"]
    if scope == "trace":
        flag = REPLAY_FLAGS[path]
        return ["replay", TRACE, "--drive", SSD, "--mode", "closed", f"{flag}={value}"], flag
    if path in RUN_FLAGS:
        flag, context = RUN_FLAGS[path]
        drive = ["--config", str(_ftl_file(tmp_path))] if path == "array.deleted_percent" else []
        args = ["run", "--drive", SSD, *drive, *context, "--ios", "200", f"{flag}={value}"]
        return args, flag
    return _toml_case(entry, value, tmp_path)


def _ftl_file(tmp_path: Path) -> Path:
    file = tmp_path / "ftl.toml"
    ftl = "\n".join(f"{k} = {_toml(v)}" for k, v in FTL.items())
    file.write_text(f'[array.drive]\npreset = "{SSD}"\n[array.drive.ftl]\n{ftl}\n')
    return file


def _reachable(entry: dict[str, Any]) -> bool:
    path = entry["path"]
    if path in NO_USER_SURFACE or entry["kind"] in ("table", "tables", "text"):
        return False
    if entry["scope"] == "trace":
        return path in REPLAY_FLAGS
    parent = path.rsplit(".", 1)[0]
    return path in RUN_FLAGS or parent in TOML_TABLES or path in API_KEYWORDS


def test_every_bounded_field_is_reachable_by_a_flag_or_a_key_or_says_why_not() -> None:
    bounded = {e["path"] for e in LIMITS if _bad_values(e)}
    unreachable = {e["path"] for e in LIMITS if _bad_values(e) and not _reachable(e)} - set(
        NO_USER_SURFACE
    )
    # fio job files reach these (tests/test_fio.py); no flag or array key does.
    fio_only = {"workload.bs_write", "workload.warmup_ns", "workload.distribution"}
    assert unreachable <= fio_only, sorted(unreachable)
    assert len(bounded) > 90


@pytest.mark.parametrize(
    ("entry", "value"),
    [(e, v) for e, v in _walked() if _reachable(e)],
    ids=lambda x: x["path"] if isinstance(x, dict) else repr(x),
)
def test_a_value_past_a_native_bound_names_the_users_flag_or_key(
    entry: dict[str, Any], value: Any, tmp_path: Path
) -> None:
    if entry["path"] in API_KEYWORDS:
        keyword = API_KEYWORDS[entry["path"]]
        if keyword == "bs":
            value = [[4096, value]]
        array = build_array(ArrayRequest(drive=SSD))
        with pytest.raises(RaidlabError) as error:
            build_workload(WorkloadRequest(**{keyword: value}), array)
        assert error.value.field == keyword
        return
    args, label = _case(entry, value, tmp_path)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (args, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {label}:"), (label, lines[0])
    assert "rejected by the simulator" not in lines[0]
    internal = entry["path"]
    if not label.endswith(internal.removeprefix("array.")):
        assert f" {internal}:" not in lines[0], lines[0]


def test_a_block_size_mix_longer_than_the_native_side_takes_names_the_flag() -> None:
    entries = limits.field("workload.bs", "jobs").items_max or 0
    mix = ",".join(f"{512 * (i + 1)}:1" for i in range(entries + 1))
    result = runner.invoke(app, ["run", "--drive", SSD, f"--bs={mix}"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: --bs: at most {entries} entries")


def test_the_drifted_hdd_bounds_are_now_refused_at_the_key(tmp_path: Path) -> None:
    for key, value in (("zones", 4096), ("ncq_depth", 65536)):
        entry = next(e for e in LIMITS if e["path"] == f"array.drive.{key}" and e["scope"] == "hdd")
        args, label = _toml_case(entry, value, tmp_path)
        result = runner.invoke(app, args)
        assert result.exit_code == 2
        assert result.stderr.startswith(f"error: {label}: must be 1..="), result.stderr


def test_level_rules_come_from_the_layout_crate() -> None:
    levels = limits.levels()
    assert levels[6]["members_min"] == 4 and levels[60]["members_min"] == 8
    assert levels[5]["default_layout"] == "left-symmetric"
    assert levels[10]["layouts"] == ["near", "far", "offset"]
    assert levels[1]["mirror"] and levels[5]["parity"] == 1 and not levels[0]["layouts"]
