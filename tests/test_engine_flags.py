"""The real-array commands are the engine's: every ``raidlab create/serve/...``
exposes exactly the flags the engine's clap definitions export (through
``raidlab._native.engine_flags``), with the engine's defaults, and the table is loaded
only when such a command runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from raidlab import engine
from raidlab.cli import app
from raidlab.cli.engine import COMMANDS, build_command
from raidlab.errors import RaidlabError
from typer.testing import CliRunner


def _options(name: str) -> dict[str, Any]:
    return {
        p.name: p
        for p in build_command(name).params
        if p.param_type_name == "option" and p.name != "help"
    }


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_exposes_exactly_the_engines_flags(name: str) -> None:
    table = engine.flag_table()[COMMANDS[name][0]]
    exported = {arg["id"]: arg for arg in table["args"] if not arg["positional"]}
    options = _options(name)
    assert set(options) == set(exported)
    for arg_id, arg in exported.items():
        names = {f"--{flag}" for flag in [arg["long"], *arg["aliases"]]}
        assert set(options[arg_id].opts) == names, arg_id


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_has_the_engines_defaults(name: str) -> None:
    table = engine.flag_table()[COMMANDS[name][0]]
    options = _options(name)
    for arg in table["args"]:
        if arg["positional"]:
            continue
        param = options[arg["id"]]
        if arg["takes_value"]:
            assert param.default == (arg["defaults"][0] if arg["defaults"] else None), arg["id"]
        else:
            assert param.is_flag and param.default is False, arg["id"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_takes_the_engines_arguments_in_order(name: str) -> None:
    table = engine.flag_table()[COMMANDS[name][0]]
    arguments = [p.name for p in build_command(name).params if p.param_type_name == "argument"]
    assert arguments == [arg["id"] for arg in table["args"] if arg["positional"]]


def test_every_engine_command_has_a_raidlab_command() -> None:
    assert {engine_command for engine_command, _, _ in COMMANDS.values()} == set(
        engine.flag_table()
    )


def test_the_strip_is_the_stripe_unit_and_chunk_its_alias() -> None:
    (unit,) = [a for a in engine.flag_table()["create"]["args"] if a["id"] == "stripe_unit"]
    assert unit["long"] == "stripe-unit" and unit["aliases"] == ["chunk"]
    assert engine.flag_defaults("create")["stripe_unit"] == "64K"


def test_the_client_builds_argv_from_the_table_and_refuses_unknown_keys() -> None:
    args = engine.command_args(
        "create",
        {
            "level": 5,
            "stripe_unit": "16K",
            "assume_clean": True,
            "sparse": False,
            "force_overwrite": ["a", "-b"],
            "members": ["a", "-b"],
        },
    )
    assert args == [
        "--level", "5", "--stripe-unit", "16K",
        "--force-overwrite", "a", "--force-overwrite", "./-b",
        "--assume-clean", "a", "./-b",
    ]  # fmt: skip
    with pytest.raises(RaidlabError) as raised:
        engine.command_args("create", {"chunk_bytes": 4096})
    assert raised.value.field == "chunk_bytes"


def test_version_does_not_load_the_native_module() -> None:
    python_dir = Path(__file__).resolve().parents[1] / "python"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "raidlab.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(python_dir)},
    )
    assert "raidlab._native" not in result.stderr


def test_the_old_chunk_flag_still_creates(tmp_path: Path) -> None:
    members = [str(tmp_path / f"m{i}.img") for i in range(3)]
    created = CliRunner().invoke(
        app, ["create", "--level", "5", "--chunk", "16K", "--size", "4M", "--json", *members]
    )
    assert created.exit_code == 0, created.output
    assert '"chunk_bytes": 16384' in created.stdout
