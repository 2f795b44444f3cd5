"""Start-up: `raidlab --version` answers before typer or any command is loaded, and a
command loads only the module that declares it, while the app still lists, helps and
suggests every command as when it was built whole.

What start-up costs is measured in `make bench` (benches/bench_cli.py), never here:
these tests check which modules a command line loads."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from raidlab.cli import app, main
from raidlab.cli.dispatch import COMMAND_MODULES, Commands, registered_name
from raidlab.scenario import presets
from typer.testing import CliRunner

PYTHON_DIR = Path(__file__).resolve().parents[1] / "python"
HEAVY_MODULES = {"typer", "click", "rich", "numpy", "pandas", "matplotlib", "multiprocessing"}
# What `raidlab run` needs of the command line: its own module and the shared flags.
RUN_CLI_MODULES = {
    "raidlab.cli",
    "raidlab.cli.dispatch",
    "raidlab.cli.flags",
    "raidlab.cli.root",
    "raidlab.cli.simulate",
}


def loaded_by(*args: str) -> set[str]:
    """The modules a fresh ``raidlab ARGS`` has loaded when it exits."""
    probe = (
        "import sys\n"
        "from raidlab.cli import main\n"
        f"sys.argv = ['raidlab', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('LOADED', sorted(sys.modules), file=sys.stderr)\n"
    )
    err = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(PYTHON_DIR)},
    ).stderr
    line = next(line for line in err.splitlines() if line.startswith("LOADED "))
    return set(ast.literal_eval(line.removeprefix("LOADED ")))


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_loads_no_heavy_module_and_no_command(flag: str) -> None:
    loaded = loaded_by(flag)
    assert sorted(loaded & HEAVY_MODULES) == []
    assert {name for name in loaded if name.startswith("raidlab.")} == {
        "raidlab.cli",
        "raidlab.version",
    }


def test_a_run_loads_only_its_own_command_module() -> None:
    loaded = loaded_by("run", "--drive", "adata-sp900-128g", "--ios", "1")
    assert {name for name in loaded if name.startswith("raidlab.cli")} == RUN_CLI_MODULES
    # A single run needs no process pool and no reliability model.
    assert sorted(loaded & {"multiprocessing", "numpy", "pandas", "matplotlib"}) == []
    assert "raidlab.reliability" not in loaded
    # Nor the fio and benchmark-suite front ends, nor rich's emoji table.
    assert sorted(loaded & {"raidlab.frontends.fio", "raidlab.frontends.suites"}) == []
    assert "rich._emoji_codes" not in loaded


def test_a_json_run_loads_no_pandas() -> None:
    # Its records are written from the rows, as the DataFrame's JSON would write them.
    loaded = loaded_by("run", "--drive", "adata-sp900-128g", "--ios", "1", "--format", "json")
    assert sorted(loaded & {"pandas", "numpy"}) == []


def test_rows_are_written_as_their_dataframe_writes_them() -> None:
    import math

    from raidlab.report.output import json_text, records, row_records
    from raidlab.scenario.workloads import RUN_COLUMNS, RunRows

    values = [6930.82345113421, 28.38865285583333, 144.283, 1e-7, 2.5e9, math.nan, 0.0]
    rows = [
        {
            "op": op,
            **{column: values[(i + j) % len(values)] for j, column in enumerate(RUN_COLUMNS[1:])},
        }
        for i, op in enumerate(("read", "write", "trim"))
    ]
    frame = RunRows(rows, {}).frame()
    assert json_text({"r": row_records(rows)}) == json_text({"r": records(frame)})


def test_the_command_table_names_every_command_of_the_app_by_its_module() -> None:
    registered = {
        registered_name(info): str(getattr(info.callback, "__module__", ""))
        for info in app.registered_commands
    }
    assert registered == COMMAND_MODULES
    assert list(typer.main.get_command(app).commands) == list(COMMAND_MODULES)


def test_the_root_help_lists_what_the_whole_app_lists(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    try:  # typer >= 0.20 vendors click as typer._click
        from typer._click import formatting
    except ImportError:  # pragma: no cover
        from click import formatting

    whole = CliRunner().invoke(app, ["--help"])
    monkeypatch.setattr(formatting, "FORCED_WIDTH", 80)  # the runner's width
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    lazy = capsys.readouterr().out
    # The program's name in the usage line differs (the runner's, pytest's); the rest,
    # every command with its short help, may not.
    assert lazy.split("\n", 1)[1] == whole.stdout.split("\n", 1)[1]
    assert all(f"  {name} " in lazy for name in COMMAND_MODULES)


def test_a_mistyped_command_gets_the_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["rn"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == "error: No such command 'rn'. Did you mean 'run'?\n"


@pytest.mark.parametrize("group", presets.group_names())
def test_every_preset_read_alone_is_the_preset_of_the_whole_file(group: str) -> None:
    # A run parses only the presets it uses, cut from the file at their headers.
    whole = presets._load_group(group)
    assert list(presets._preset_texts(group)) == list(whole)
    for name, table in whole.items():
        assert presets._load_preset(group, name) == table, name


def test_a_command_the_table_misses_is_still_listed_and_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(COMMAND_MODULES, "risk")
    commands = Commands({})
    assert list(commands)[-1] == "risk" and len(commands) == len(COMMAND_MODULES) + 1
    assert commands["risk"].name == "risk"
    assert commands.get("no-such-command") is None
