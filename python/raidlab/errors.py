"""The one exception the front end raises for bad input.

Every validation failure names the field that is wrong (a CLI flag such as
``--stripe-unit``, a TOML key such as ``ssd-raid0.toml: array.stripe_unit``, or a
canonical scenario key) so the user knows what to change. The CLI prints
``error: <field>: <message>`` on one line and exits with status 2.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class RaidlabError(Exception):
    """Bad input: ``field`` names what is wrong, ``message`` says what is allowed."""

    def __init__(self, field: str, message: str) -> None:
        # Both go to Exception.__init__ so the error survives pickling across the
        # process pool (unpickling calls cls(*args)).
        super().__init__(field, message)
        self.field = field
        self.message = message

    def __str__(self) -> str:
        text = f"{self.field}: {self.message}" if self.field else self.message
        # One line, always: a multi-line message would break `error: ...` parsing.
        return " ".join(text.split())

    def relabel(self, field: str) -> RaidlabError:
        """The same error attributed to another name for the field (e.g. a CLI flag)."""
        return RaidlabError(field, self.message)


@contextmanager
def user_errors() -> Iterator[None]:
    """For CLI commands: bad input becomes ``error: ...`` on stderr and exit status 2
    (the status click uses for its own usage errors), never a traceback."""
    import typer  # the library itself does not need the CLI's dependencies

    try:
        yield
    except RaidlabError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None


def read_user_text(path: str | Path, label: str, cannot: str = "cannot read") -> str:
    """The UTF-8 text of a file the user named (a config, a job file, a sweep, a claims
    file). A file that cannot be read, or is not text at all (random bytes given as a
    config), is bad input naming ``label``: one line, never a traceback."""
    try:
        return Path(path).read_text("utf-8")
    except OSError as error:
        raise RaidlabError(label, f"{cannot}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        byte = error.object[error.start]
        raise RaidlabError(
            label, f"not a UTF-8 text file (byte {error.start} is 0x{byte:02x})"
        ) from None
