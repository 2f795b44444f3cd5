"""The typer application every command module registers on."""

from __future__ import annotations

import typer

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="raidlab: predict and explain RAID array performance with a deterministic "
    "simulator of host, controller, links, HDDs and SSDs.",
)
