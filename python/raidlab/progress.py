"""Progress of one long computation (a simulation, a Monte Carlo run) on the terminal.

Nothing shows for the first ``BAR_AFTER_S`` seconds, so short commands print exactly
what they always did; after that a transient bar on stderr says how far the work is.
Only on the main thread, only when stderr is a terminal, and only inside
``progress_of_long_runs`` (the command line turns it on; a caller that draws its own
bar over many runs turns it off for them). A leaf: it imports nothing of raidlab.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

# A computation that runs longer than this shows a bar.
BAR_AFTER_S = 2.0

_ENABLED: ContextVar[bool] = ContextVar("raidlab_long_run_bar", default=False)


@contextmanager
def progress_of_long_runs(enabled: bool = True) -> Iterator[None]:
    """Within it, ``late_bar()`` gives a bar (see the module); ``enabled=False`` turns
    bars off for the computations inside."""
    token = _ENABLED.set(enabled)
    try:
        yield
    finally:
        _ENABLED.reset(token)


class LateBar:
    """A progress callback: ``bar(fraction)`` with ``fraction`` in [0, 1], or None when
    the work cannot say how far it is (a spinner then). Draws nothing before
    ``BAR_AFTER_S``; ``close()`` removes the bar."""

    def __init__(self, description: str) -> None:
        self.description = description
        self.started = time.monotonic()
        self.live: Any = None
        self.task: Any = None

    def __call__(self, fraction: float | None) -> None:
        if self.live is None:
            if time.monotonic() - self.started < BAR_AFTER_S:
                return
            # rich loads only once a bar shows: a short command starts no faster
            # without this, but it loads nothing it does not use.
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.live = Progress(
                TextColumn(self.description),
                BarColumn(),
                TextColumn("{task.percentage:>3.0f}%"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self.live.start()
            total = None if fraction is None else 1.0
            self.task = self.live.add_task(self.description, total=total)
        self.live.update(self.task, completed=min(max(fraction or 0.0, 0.0), 1.0))

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def late_bar(description: str) -> LateBar | None:
    """A bar for one long computation if one may show here (see the module)."""
    if not _ENABLED.get() or threading.current_thread() is not threading.main_thread():
        return None
    if sys.stderr is None or not sys.stderr.isatty():
        return None
    return LateBar(description)
