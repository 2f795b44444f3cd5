"""The ``raidlab`` command line: thin commands over ``raidlab.api``.

One module per command group: ``simulate`` (atto, run, replay), ``studies`` (presets,
advise, reproduce), ``suites`` (fio, cdm, iometer, pts), ``sweep``, ``risk`` and
``engine`` (real arrays: create, status, serve, fail, replace, check, repair, inject).
Shared flags live in ``flags``; rendering in ``raidlab.report``.

Bad input prints one line ``error: <field>: <what is allowed>`` on stderr and exits
with status 2 (the same status click uses for its own usage errors); never a traceback.
"""

from __future__ import annotations

import signal
import sys
import threading
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
from raidlab.cli.compare import compare as compare_command  # noqa: F401  (registers it)
from raidlab.cli.engine import register as register_engine_commands
from raidlab.cli.life import life as life_command  # noqa: F401  (registers it)
from raidlab.cli.report import report as report_command  # noqa: F401  (registers it)
from raidlab.cli.risk import risk as risk_command  # noqa: F401  (registers it)
from raidlab.errors import RaidlabError
from raidlab.progress import progress_of_long_runs

try:  # typer >= 0.20 vendors click as typer._click; older typer uses click itself
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover
    from click.exceptions import UsageError

# Real arrays (the raidlab-engine binary): create, status, serve, fail, replace, ...
register_engine_commands(app)


class _CtrlC:
    """Remembers a Ctrl-C (SIGINT) while raising KeyboardInterrupt as Python does: typer
    turns that into a silent exit status 130, and `main` adds the one line that says
    why."""

    def __init__(self) -> None:
        self.seen = False

    def __call__(self, signum: int, frame: object) -> None:
        self.seen = True
        raise KeyboardInterrupt

    def install(self) -> None:
        # Only over Python's own handler: a SIGINT ignored by whoever started us (a
        # background job) stays ignored.
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, self)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: every usage error is `error: ...` and status 2;
    Ctrl-C stops any simulation within a fraction of a second: `interrupted`, status
    130."""
    ctrl_c = _CtrlC()
    if threading.current_thread() is threading.main_thread():
        ctrl_c.install()
    try:
        with progress_of_long_runs():
            result = app(args=list(argv) if argv is not None else None, standalone_mode=False)
        if ctrl_c.seen and result == 130:
            raise KeyboardInterrupt
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
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(130)
    sys.exit(result if isinstance(result, int) else 0)


__all__ = ["app", "main"]
