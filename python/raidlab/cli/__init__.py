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

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

# Nothing heavy is imported here: `raidlab --version` answers before typer (or any
# command) is loaded, and a command loads only its own module (raidlab.cli.dispatch).
# `raidlab.cli.app` is the app with every command registered, loaded when asked for.
VERSION_FLAGS = (["--version"], ["-V"])


def __getattr__(name: str) -> Any:
    if name == "app":
        from raidlab.cli.dispatch import every_command

        return every_command()
    raise AttributeError(f"module 'raidlab.cli' has no attribute {name!r}")


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
        import signal

        # Only over Python's own handler: a SIGINT ignored by whoever started us (a
        # background job) stays ignored.
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, self)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: every usage error is `error: ...` and status 2;
    Ctrl-C stops any simulation within a fraction of a second: `interrupted`, status
    130."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args in VERSION_FLAGS:
        # What the app's eager --version prints, without building the app.
        from raidlab.version import __version__

        print(f"raidlab {__version__}", flush=True)
        sys.exit(0)
    sys.exit(_run(args))


def _run(args: list[str]) -> int:
    """``raidlab ARGS``: its exit status, every error reported in one line."""
    import threading

    import typer

    from raidlab.cli.dispatch import invoke
    from raidlab.errors import RaidlabError
    from raidlab.progress import progress_of_long_runs

    try:  # typer >= 0.20 vendors click as typer._click; older typer uses click itself
        from typer._click.exceptions import UsageError
    except ImportError:  # pragma: no cover
        from click.exceptions import UsageError

    ctrl_c = _CtrlC()
    if threading.current_thread() is threading.main_thread():
        ctrl_c.install()
    try:
        with progress_of_long_runs():
            result = invoke(args)
        if ctrl_c.seen and result == 130:
            raise KeyboardInterrupt
    except UsageError as error:
        if type(error).__name__ == "NoArgsIsHelpError" and error.ctx is not None:
            # `raidlab` alone: the help, whole, as click prints it (not one error line).
            typer.echo(error.ctx.get_help(), err=True)
            return 2
        option = f"{error.param_hint}: " if getattr(error, "param_hint", None) else ""
        message = error.format_message() if not option else error.message
        typer.echo(f"error: {option}{' '.join(str(message).split())}", err=True)
        return 2
    except RaidlabError as error:
        typer.echo(f"error: {error}", err=True)
        return 2
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return 130
    except typer.Abort:
        typer.echo("aborted", err=True)
        return 130
    return result if isinstance(result, int) else 0


__all__ = ["app", "main"]
