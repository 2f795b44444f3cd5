"""The root command: the typer application every command module registers on, with the
options of the app itself: --version (-V) and -h as --help on the app and every command.
A command module registers its commands when it is imported; ``raidlab.cli.dispatch``
imports only the one that declares the command asked for."""

from __future__ import annotations

from typing import Annotated

import typer

from raidlab.version import __version__

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    # Commands inherit the help option names from the app's context.
    context_settings={"help_option_names": ["-h", "--help"]},
    help="raidlab: predict and explain RAID array performance with a deterministic "
    "simulator of host, controller, links, HDDs and SSDs.",
)


def print_version(value: bool) -> None:
    if value:
        typer.echo(f"raidlab {__version__}")
        raise typer.Exit(0)


@app.callback()
def options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            help="Print raidlab's version and exit.",
            is_eager=True,
            callback=print_version,
        ),
    ] = False,
) -> None:
    """The app's own options (its help text is the Typer's)."""
