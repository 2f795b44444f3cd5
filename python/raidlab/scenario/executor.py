"""Running many scenarios: in this process, in a process pool, or on any executor.

Scenarios and results are plain dicts, so any ``concurrent.futures.Executor``-like
object works (a ``ProcessPoolExecutor``, or a Dask client's ``get_executor()``).
Results always come back in input order whatever order workers finish in, so a sweep
is reproducible regardless of the worker count.

A pool gets the scenarios in batches, costliest first (``batches``): a sweep's points
differ in cost by three orders of magnitude (a 32 MiB transfer on 16 KiB strips is
2,048 member operations, a 512 B one is one), and handing them out one by one in input
order left a worker idle behind the last big point while paying a round trip per
point. Each batch is one task; the results are put back in input order.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import TYPE_CHECKING, Any

from raidlab.progress import progress_of_long_runs
from raidlab.scenario import native
from raidlab.scenario.array import parse_int
from raidlab.scenario.workloads import DEFAULT_IOS

# concurrent.futures (logging) and its process pool (multiprocessing, pickle, sockets)
# load where a pool runs: a single run, as `raidlab run`, starts without them.
if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

    from rich.progress import Progress

Simulator = Callable[[dict[str, Any]], dict[str, Any]]
JOBS_MAX = 1024

# The executor of runs that name none (e.g. a Dask cluster's, for one command).
_SCOPED: ContextVar[Executor | None] = ContextVar("raidlab_executor", default=None)


@contextmanager
def executor_scope(executor: Executor | None) -> Iterator[None]:
    """Within the block, every ``run_scenarios`` of many scenarios that names no
    executor and no ``jobs=1`` runs on ``executor`` (None: local processes, as before):
    how the command line sends a whole command's runs to a cluster."""
    token = _SCOPED.set(executor)
    try:
        yield
    finally:
        _SCOPED.reset(token)


def default_jobs() -> int:
    """One worker per CPU: each simulation is single-threaded and CPU-bound."""
    return os.cpu_count() or 1


def _progress(enabled: bool, total: int, description: str) -> Progress | None:
    # rich's progress loads only when a bar may show: a single run starts faster.
    if not enabled or total <= 1:
        return None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(stderr=True)
    if not console.is_terminal:
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
    on_result: Callable[[int, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Results of ``scenarios`` in input order.

    ``jobs=1`` (or a single scenario) runs inline; otherwise a ProcessPoolExecutor of
    ``jobs`` workers (default: CPU count) is used, unless ``executor`` is given, in
    which case ``jobs`` is ignored and the caller owns the executor. ``simulator`` must
    be picklable (a module-level function) when it runs in other processes.
    ``on_result(index, result)`` is called as each result arrives (in completion
    order), e.g. to save a long sweep's points as they finish.
    """
    # Looked up at call time so tests can stand in a fake simulator for the native one.
    simulator = simulator if simulator is not None else native.simulate
    if executor is None and jobs is None:
        executor = _SCOPED.get()
    jobs = default_jobs() if jobs is None else parse_int(jobs, "jobs", 1, JOBS_MAX)
    bar = _progress(progress and sys.stderr is not None, len(scenarios), description)
    # One bar at a time: runs counted by this bar draw none of their own.
    own_bars = progress_of_long_runs(enabled=bar is None)
    with own_bars, bar if bar is not None else _NoProgress() as live:
        task = live.add_task(description, total=len(scenarios))
        if executor is None and (jobs == 1 or len(scenarios) <= 1):
            results = []
            for index, scenario in enumerate(scenarios):
                results.append(simulator(scenario))
                if on_result is not None:
                    on_result(index, results[-1])
                live.advance(task)
            return results
        if executor is not None:
            # A cluster's executor knows its worker count; any other, the jobs asked.
            workers = getattr(executor, "workers", jobs)
            return _run_on(executor, scenarios, simulator, live, task, workers, on_result)
        from concurrent.futures import ProcessPoolExecutor

        workers = min(jobs, len(scenarios))
        with ProcessPoolExecutor(max_workers=workers) as pool:
            return _run_on(pool, scenarios, simulator, live, task, workers, on_result)


# Batches per worker: enough that the costliest-first order can even out the workers'
# loads at the end of a sweep, few enough that a task's round trip (pickling the
# scenarios and results, waking a worker) stays small next to its simulations.
BATCHES_PER_WORKER = 8


def scenario_cost(scenario: dict[str, Any]) -> float:
    """A relative estimate of a scenario's simulation time, for scheduling only: host
    I/Os (measured and warm-up) times the member operations each becomes (one per
    stripe unit it spans). Runs limited by time instead of an I/O count, traces and
    anything else count as one unit per I/O of a default run; results never depend
    on it."""
    workload = scenario.get("workload", {})
    array = scenario.get("array", {})
    ios = workload.get("ios") or DEFAULT_IOS
    ios += workload.get("warmup_ios") or 0
    sizes = workload.get("bs") or [[4096, 1]]
    try:
        weight = sum(float(share) for _, share in sizes) or 1.0
        mean_bytes = sum(float(size) * float(share) for size, share in sizes) / weight
    except (TypeError, ValueError):
        mean_bytes = 4096.0
    stripe_unit = float(array.get("stripe_unit_bytes") or 65_536)
    return float(ios) * (1.0 + mean_bytes / stripe_unit)


def batches(costs: Sequence[float], count: int) -> list[list[int]]:
    """Indices of ``costs`` in at most about ``count`` batches, costliest scenarios
    first: each batch is filled in descending cost order up to an equal share of the
    total, so big scenarios go alone and early, small ones travel together last."""
    order = sorted(range(len(costs)), key=lambda index: (-costs[index], index))
    share = sum(costs) / max(count, 1)
    result: list[list[int]] = []
    batch: list[int] = []
    batch_cost = 0.0
    for index in order:
        if batch and batch_cost + costs[index] > share:
            result.append(batch)
            batch, batch_cost = [], 0.0
        batch.append(index)
        batch_cost += costs[index]
    if batch:
        result.append(batch)
    return result


def _simulate_batch(simulator: Simulator, scenarios: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [simulator(scenario) for scenario in scenarios]


def _run_on(
    executor: Executor,
    scenarios: Sequence[dict[str, Any]],
    simulator: Simulator,
    live: Progress | _NoProgress,
    task: Any,
    workers: int,
    on_result: Callable[[int, dict[str, Any]], None] | None,
) -> list[dict[str, Any]]:
    from concurrent.futures import as_completed

    groups = batches([scenario_cost(s) for s in scenarios], workers * BATCHES_PER_WORKER)
    run_batch = partial(_simulate_batch, simulator)
    futures: dict[Future[list[dict[str, Any]]], list[int]] = {
        executor.submit(run_batch, [scenarios[index] for index in group]): group for group in groups
    }
    results: list[dict[str, Any] | None] = [None] * len(scenarios)
    try:
        for future in as_completed(futures):
            group = futures[future]
            for index, result in zip(group, future.result(), strict=True):
                results[index] = result
                if on_result is not None:
                    on_result(index, result)
            live.advance(task, len(group))
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

    def advance(self, task: Any, advance: float = 1) -> None:
        return None
