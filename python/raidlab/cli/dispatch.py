"""Which module declares each command, and a ``raidlab`` that builds only the command
asked for.

Typer turns a command's signature into click parameters when the app is built; built
whole, the app's 30 commands cost more than the simulation of a short run (every
annotation evaluated, every option made), and importing every command module loads
the whole front end. :func:`invoke` builds the root group with no commands and looks a
command up by name in :data:`COMMAND_MODULES` the first time it is asked for: one
module imported, one command built. Listing the commands (``raidlab -h``, a mistyped
name's suggestion) imports every module, so a command the table misses is still
listed and found, only slower to start (a test keeps the table whole).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import typer
import typer.main
from typer.models import CommandInfo

from raidlab.cli.root import app

# Every command of `raidlab`, in the order `raidlab -h` lists them, by the module that
# registers it on the app (tests check it against the app built whole). The engine's
# commands are generated from its flag table (`register` in that module).
COMMAND_MODULES: dict[str, str] = {
    "calibrate": "raidlab.cli.calibrate",
    "disksim-validate": "raidlab.cli.disksim",
    "atto": "raidlab.cli.simulate",
    "run": "raidlab.cli.simulate",
    "replay": "raidlab.cli.simulate",
    "presets": "raidlab.cli.studies",
    "advise": "raidlab.cli.studies",
    "reproduce": "raidlab.cli.studies",
    "fio": "raidlab.cli.suites",
    "cdm": "raidlab.cli.suites",
    "iometer": "raidlab.cli.suites",
    "pts": "raidlab.cli.suites",
    "sweep": "raidlab.cli.sweep",
    "compare": "raidlab.cli.compare",
    "life": "raidlab.cli.life",
    "report": "raidlab.cli.report",
    "risk": "raidlab.cli.risk",
    **dict.fromkeys(
        (
            "create",
            "assemble",
            "status",
            "serve",
            "fail",
            "replace",
            "add-spare",
            "attach-cache",
            "detach-cache",
            "replace-cache",
            "check",
            "repair",
            "inject",
        ),
        "raidlab.cli.engine",
    ),
}
ENGINE_MODULE = "raidlab.cli.engine"


def registered_name(info: CommandInfo) -> str:
    """The name typer gives a registered command: its own, or its function's."""
    assert info.callback is not None, info
    return info.name or typer.main.get_command_name(info.callback.__name__)


def _register(module: str) -> None:
    """Import ``module``, which registers its commands on the app (the engine's module
    registers them when asked: they come from the engine's flag table)."""
    # __import__, not importlib.import_module: `python -X importtime` then shows what
    # the command's module costs (it does not see importlib's imports).
    __import__(module)
    loaded = sys.modules[module]
    if module == ENGINE_MODULE:
        registered = {registered_name(info) for info in app.registered_commands}
        if not registered & set(loaded.COMMANDS):
            loaded.register(app)


def every_command() -> typer.Typer:
    """The app with every command registered, in the table's order (as `raidlab -h`
    lists them): what tests and ``raidlab.cli.app`` get."""
    for module in dict.fromkeys(COMMAND_MODULES.values()):
        _register(module)
    return app


def every_name() -> list[str]:
    """Every command's name, every module imported: the table's order, then any command
    a module registers that the table does not name (a test keeps that list empty)."""
    registered = [registered_name(info) for info in every_command().registered_commands]
    return [
        *(name for name in COMMAND_MODULES if name in registered),
        *(name for name in registered if name not in COMMAND_MODULES),
    ]


def build(name: str) -> Any | None:
    """The click command ``raidlab NAME`` (None: no such command), its module imported
    if it was not: only that one where the table names it."""
    if name in COMMAND_MODULES:
        _register(COMMAND_MODULES[name])
    else:
        every_command()
    infos = [info for info in app.registered_commands if registered_name(info) == name]
    if not infos:
        return None
    return typer.main.get_command_from_info(
        infos[0],
        pretty_exceptions_short=app.pretty_exceptions_short,
        rich_markup_mode=app.rich_markup_mode,
    )


class Commands(Mapping[str, Any]):
    """The root group's commands by name, each built on first look-up (click and typer
    only ever look them up by name, list the names, or add one). Listing them imports
    every command module; `raidlab -h` builds them all anyway."""

    def __init__(self, built: Mapping[str, Any]) -> None:
        self._built = dict(built)

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            command = build(name)
            if command is None:
                raise KeyError(name)
            self._built[name] = command
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def _names(self) -> list[str]:
        names = every_name()
        return [*names, *(name for name in self._built if name not in names)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


def invoke(args: Sequence[str] | None) -> Any:
    """Run ``raidlab ARGS`` as the app would (``standalone_mode=False``: the caller
    reports errors), building only the command named in ``args``."""
    group = typer.main.get_command(app)  # the commands registered so far: none, usually
    group.commands = Commands(group.commands)  # type: ignore[attr-defined]
    return group(args=list(args) if args is not None else None, standalone_mode=False)
