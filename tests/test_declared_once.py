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
    ("presets", "--out"): "the drive file import-disksim writes",
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


# The array flags' help texts state the native side's rules in words (asking the native
# tables while the commands are built would slow every start-up); these tests keep the
# words and the tables from drifting apart.
def test_the_level_flag_names_every_level_the_layout_has() -> None:
    from raidlab.scenario import limits

    text = registry()["--level"].help
    for level in limits.levels():
        assert str(level) in text, level


def test_the_drives_flag_states_the_layouts_member_bounds() -> None:
    from raidlab.scenario import limits

    most = {entry["members_max"] for entry in limits.levels().values()}
    assert most == {256}
    assert "1..256" in registry()["--drives"].help


def test_the_layout_flag_lists_every_layout_with_the_default_first() -> None:
    from raidlab.scenario import limits

    text = registry()["--layout"].help
    for entry in limits.levels().values():
        for layout in entry["layouts"]:
            assert layout in text, layout
        if entry["default_layout"]:
            assert f"{entry['default_layout']} (default)" in text


def test_the_scheduler_and_stripe_unit_flags_state_the_native_choices_and_bounds() -> None:
    from raidlab.scenario import limits

    scheduler = registry()["--scheduler"].help
    assert all(choice in scheduler for choice in limits.choices("array.host.scheduler"))
    stripe = limits.field("array.stripe_unit_bytes")
    assert (stripe.min, stripe.max, stripe.power_of_two) == (512, 1 << 30, True)
    assert "power of two 512..1G" in registry()["--stripe-unit"].help


def _declarations() -> dict[str, list[str]]:
    """Where each flag name is written as a declaration in the CLI's source (the first
    argument of ``Flag``, ``opt`` or ``typer.Option``), by flag: ``module:line`` each."""
    import ast
    from pathlib import Path

    import raidlab.cli

    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(Path(raidlab.cli.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            called = node.func.attr if isinstance(node.func, ast.Attribute) else None
            called = called or (node.func.id if isinstance(node.func, ast.Name) else None)
            if called not in ("Flag", "opt", "Option"):
                continue
            names = [node.args[0]] if called == "opt" else node.args[:2]
            for arg in names:
                if isinstance(arg, ast.Constant) and str(arg.value).startswith("--"):
                    found[str(arg.value)].append(f"{path.name}:{node.lineno}")
    return found


def test_every_flag_name_is_written_in_one_declaration() -> None:
    # The source, not the built commands: a second copy of a declaration with the same
    # help would pass the tests above, and fails here.
    allowed = defaultdict(int)
    for _, flag in SAME_NAME_OTHER_MEANING:
        allowed[flag] += 1
    for flag, places in _declarations().items():
        most = max(1, allowed[flag] + (1 if flag in registry() else 0))
        assert len(places) <= most, f"{flag} declared {len(places)} times: {places}"


def test_the_declaration_finder_sees_the_registry() -> None:
    found = _declarations()
    assert found["--iodepth"] and found["--stripe-unit"] and found["--mtbf-hours"]
