"""The ``raidlab`` command line: thin commands over ``raidlab.api``.

One module per command group: ``simulate`` (atto, run, replay), ``studies`` (presets,
advise, reproduce), ``suites`` (fio, cdm, iometer, pts), ``sweep``, ``risk`` and
``engine`` (real arrays: create, status, serve, fail, replace, check, repair, inject).
Shared flags live in ``flags``; rendering in ``raidlab.report``.

Bad input prints one line ``error: <field>: <what is allowed>`` on stderr and exits
with status 2 (the same status click uses for its own usage errors); never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer

from raidlab.cli import (  # noqa: F401  (they register commands)
    calibrate,
    disksim,
    simulate,
    studies,
    suites,
    sweep,
)
from raidlab.cli.app import app
from raidlab.cli.engine import register as register_engine_commands
from raidlab.cli.life import life as life_command  # noqa: F401  (registers it)
from raidlab.cli.report import report as report_command  # noqa: F401  (registers it)
from raidlab.cli.risk import risk as risk_command  # noqa: F401  (registers it)
from raidlab.errors import RaidlabError

try:  # typer >= 0.20 vendors click as typer._click; older typer uses click itself
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover
    from click.exceptions import UsageError

# Real arrays (the raidlab-engine binary): create, status, serve, fail, replace, ...
register_engine_commands(app)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: every usage error is `error: ...` and status 2."""
    try:
        result = app(args=list(argv) if argv is not None else None, standalone_mode=False)
    except UsageError as error:
        if type(error).__name__ == "NoArgsIsHelpError" and error.ctx is not None:
            # `raidlab` alone: the help, whole, as click prints it (not one error line).
            typer.echo(error.ctx.get_help(), err=True)
            sys.exit(2)
        option = f"{error.param_hint}: " if getattr(error, "param_hint", None) else ""
        message = error.format_message() if not option else error.message
        typer.echo(f"error: {option}{' '.join(str(message).split())}", err=True)
        sys.exit(2)
    except RaidlabError as error:
        typer.echo(f"error: {error}", err=True)
        sys.exit(2)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(130)
    sys.exit(result if isinstance(result, int) else 0)


__all__ = ["app", "main"]
