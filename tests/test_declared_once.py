"""Every flag of every `raidlab` command is declared once: a flag name two commands
take comes from one declaration in the registry (raidlab.cli.flags), with one help
text, so the commands cannot drift apart. A command may give a flag its own default
(``life`` writes where ``run`` reads); the help and meaning stay the registry's.

The engine's commands (create, serve, ...) are generated from the engine's own flag
definitions and tested with them."""

from __future__ import annotations

from collections import defaultdict

import pytest
import typer.main
from raidlab.cli import app
from raidlab.cli.flags import registry

COMMANDS = typer.main.get_command(app).commands  # type: ignore[attr-defined]
ENGINE_MODULE = "raidlab.cli.engine"

# A name two commands give different meanings, each declared by its one command.
# Renaming either would break users' command lines, so each is listed with why.
SAME_NAME_OTHER_MEANING = {
    ("replay", "--format"): "the trace's format (msr, blkparse); its report is --output-format",
    ("calibrate", "--size"): "fio's size= of the calibration job file, not a simulated region",
    ("calibrate", "--capacity"): "the measured drive's size, not an array's usable capacity",
    ("advise", "--capacity"): "the usable capacity the candidate arrays must offer",
    ("calibrate", "--out"): "the preset TOML file to write",
    ("report", "--out"): "the HTML file to write",
    ("reproduce", "--out"): "the directory of a study's figures",
    ("sweep", "--out"): "the prefix of the sweep's CSV and Parquet files",
}


def _options() -> dict[str, list[tuple[str, object]]]:
    """Every option of the non-engine commands, by flag: (command, click option)."""
    found: dict[str, list[tuple[str, object]]] = defaultdict(list)
    for name, command in COMMANDS.items():
        if getattr(command.callback, "__module__", "") == ENGINE_MODULE:
            continue
        for param in command.params:
            if param.param_type_name == "option" and param.name != "help":
                found[param.opts[0]].append((name, param))
    return found


OPTIONS = _options()
SHARED = sorted(
    flag
    for flag, uses in OPTIONS.items()
    if len({command for command, _ in uses if (command, flag) not in SAME_NAME_OTHER_MEANING}) > 1
)


def test_the_engine_commands_are_left_to_their_own_tests() -> None:
    assert "run" in COMMANDS and "create" in COMMANDS
    assert getattr(COMMANDS["create"].callback, "__module__", "") == ENGINE_MODULE


@pytest.mark.parametrize("flag", SHARED)
def test_a_flag_two_commands_take_is_declared_once_in_the_registry(flag: str) -> None:
    declared = registry()
    assert flag in declared, f"{flag} is taken by several commands but not in the registry"
    for command, param in OPTIONS[flag]:
        if (command, flag) in SAME_NAME_OTHER_MEANING:
            continue
        assert param.help == declared[flag].help, f"{command} {flag}: help differs"  # type: ignore[attr-defined]


def test_every_registry_flag_is_declared_once() -> None:
    declared = registry()
    assert len(declared) == len({id(flag) for flag in declared.values()})


def test_a_flag_taken_by_one_command_is_not_also_in_the_registry() -> None:
    # A local declaration of a registry flag would be a second copy of it.
    declared = registry()
    for flag, uses in OPTIONS.items():
        for command, param in uses:
            if flag in declared and (command, flag) not in SAME_NAME_OTHER_MEANING:
                assert param.help == declared[flag].help, f"{command} {flag}: a second copy"  # type: ignore[attr-defined]


def test_the_exceptions_name_real_options() -> None:
    for command, flag in SAME_NAME_OTHER_MEANING:
        assert any(name == command for name, _ in OPTIONS.get(flag, [])), (command, flag)
