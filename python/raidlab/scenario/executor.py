"""Running many scenarios: in this process, in a process pool, or on any executor.

Scenarios and results are plain dicts, so any ``concurrent.futures.Executor``-like
object works (a ``ProcessPoolExecutor``, or a Dask client's ``get_executor()``).
Results always come back in input order whatever order workers finish in, so a sweep
is reproducible regardless of the worker count.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from raidlab.scenario import native
from raidlab.scenario.array import parse_int

Simulator = Callable[[dict[str, Any]], dict[str, Any]]
JOBS_MAX = 1024


def default_jobs() -> int:
    """One worker per CPU: each simulation is single-threaded and CPU-bound."""
    return os.cpu_count() or 1


def _progress(enabled: bool, total: int, description: str) -> Progress | None:
    console = Console(stderr=True)
    if not enabled or not console.is_terminal or total <= 1:
        return None
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


def run_scenarios(
    scenarios: Sequence[dict[str, Any]],
    jobs: int | None = None,
    executor: Executor | None = None,
    progress: bool = True,
    description: str = "simulating",
    simulator: Simulator | None = None,
) -> list[dict[str, Any]]:
    """Results of ``scenarios`` in input order.

    ``jobs=1`` (or a single scenario) runs inline; otherwise a ProcessPoolExecutor of
    ``jobs`` workers (default: CPU count) is used, unless ``executor`` is given, in
    which case ``jobs`` is ignored and the caller owns the executor. ``simulator`` must
    be picklable (a module-level function) when it runs in other processes.
    """
    # Looked up at call time so tests can stand in a fake simulator for the native one.
    simulator = simulator if simulator is not None else native.simulate
    jobs = default_jobs() if jobs is None else parse_int(jobs, "jobs", 1, JOBS_MAX)
    bar = _progress(progress and sys.stderr is not None, len(scenarios), description)
    with bar if bar is not None else _NoProgress() as live:
        task = live.add_task(description, total=len(scenarios))
        if executor is None and (jobs == 1 or len(scenarios) <= 1):
            results = []
            for scenario in scenarios:
                results.append(simulator(scenario))
                live.advance(task)
            return results
        if executor is not None:
            return _run_on(executor, scenarios, simulator, live, task)
        with ProcessPoolExecutor(max_workers=min(jobs, len(scenarios))) as pool:
            return _run_on(pool, scenarios, simulator, live, task)


def _run_on(
    executor: Executor,
    scenarios: Sequence[dict[str, Any]],
    simulator: Simulator,
    live: Progress | _NoProgress,
    task: Any,
) -> list[dict[str, Any]]:
    futures: dict[Future[dict[str, Any]], int] = {
        executor.submit(simulator, scenario): index for index, scenario in enumerate(scenarios)
    }
    results: list[dict[str, Any] | None] = [None] * len(scenarios)
    try:
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            live.advance(task)
    except BaseException:
        for future in futures:
            future.cancel()
        raise
    assert all(result is not None for result in results), "every scenario has a result"
    return [result for result in results if result is not None]


class _NoProgress:
    """Stands in for rich's Progress when no bar is shown."""

    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, total: int) -> int:
        return 0

    def advance(self, task: Any) -> None:
        return None
