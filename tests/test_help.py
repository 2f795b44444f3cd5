"""The app's own options and help: --version and -V print the version, -h is --help on
the app and every command, and every option's help says what leaving it out gives."""

from __future__ import annotations

import pytest
import raidlab
import typer.main
from raidlab.cli import app
from typer.testing import CliRunner

runner = CliRunner()
COMMANDS = typer.main.get_command(app).commands  # type: ignore[attr-defined]


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_flag_prints_the_version(flag: str) -> None:
    result = runner.invoke(app, [flag])
    assert result.exit_code == 0 and result.stdout == f"raidlab {raidlab.__version__}\n"


@pytest.mark.parametrize("command", [[], *([name] for name in COMMANDS)])
def test_dash_h_is_help_on_the_app_and_every_command(command: list[str]) -> None:
    short, long = (runner.invoke(app, [*command, flag]) for flag in ("-h", "--help"))
    assert short.exit_code == 0 and short.stdout == long.stdout
    assert short.stdout.startswith("Usage: ")


def test_raidlab_alone_prints_the_help_whole(capsys: pytest.CaptureFixture[str]) -> None:
    from raidlab.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("Usage: ") and "\nCommands:\n" in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_option_help_states_its_default(command: str) -> None:
    silent = []
    for param in COMMANDS[command].params:
        if param.param_type_name != "option" or param.is_flag or param.name == "help":
            continue
        # A default of None that means something is shown by its text: [default: TEXT].
        shown = isinstance(param.show_default, str) or (
            param.default is not None and param.show_default is not False
        )
        text = param.help or ""
        if not shown and "default" not in text and "required" not in text:
            silent.append(param.opts[0])
    assert not silent, f"{command}: no default stated for {silent}"


@pytest.mark.parametrize(
    ("command", "flag", "default"),
    [
        ("run", "--write-cache", "write-through"),
        ("run", "--read-ahead", "controller preset's"),
        ("run", "--precondition", "steady for every SSD preset"),
        ("run", "--controller", "hba"),
        ("run", "--scheduler", "none (default)"),
        ("atto", "--plot", "no figure"),
        ("reproduce", "--out", "no figures"),
    ],
)
def test_help_names_the_default_of_array_and_output_flags(
    command: str, flag: str, default: str
) -> None:
    (param,) = [p for p in COMMANDS[command].params if flag in p.opts]
    assert default in " ".join(param.help.split()), param.help
