"""Running many scenarios on a Dask cluster (``distributed``) instead of local processes.

``--cluster tcp://HOST:8786`` (or ``RAIDLAB_CLUSTER``, or Dask's own
``DASK_SCHEDULER_ADDRESS``) hands the scenarios of a sweep to a running Dask scheduler.
Scenarios and results are plain data and every worker runs the same native simulator
(``pip install raidlab`` on the workers), so a cluster's results are the local ones,
bit for bit and in the same order: ``run_scenarios`` puts them back in input order.

Dask is optional (``pip install raidlab[cluster]``): it is imported only when a cluster
is asked for. A worker lost mid-sweep costs only time: the scheduler runs its tasks
again on the others (Dask's ``distributed.scheduler.allowed-failures``, 3 by default).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from typing import Any

from raidlab.errors import RaidlabError

ENVIRONMENT = ("RAIDLAB_CLUSTER", "DASK_SCHEDULER_ADDRESS")
CONNECT_TIMEOUT_S = 10


def cluster_address(flag: str | None) -> str | None:
    """The scheduler to use: the flag, else the first environment variable set."""
    if flag is not None:
        return flag
    for name in ENVIRONMENT:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


@contextmanager
def cluster_executor(
    flag: str | None, label: str = "--cluster"
) -> Iterator[ClusterExecutor | None]:
    """A ``concurrent.futures`` executor on the Dask scheduler the flag or environment
    names, closed on exit; ``None`` (local processes) when neither names one."""
    address = cluster_address(flag)
    if address is None:
        yield None
        return
    if "://" not in address:
        raise RaidlabError(label, f"a scheduler address such as tcp://HOST:8786, got {address!r}")
    try:
        from distributed import Client
    except ImportError:
        raise RaidlabError(
            label, "needs Dask's `distributed` (pip install 'raidlab[cluster]')"
        ) from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise RaidlabError(label, f"no Dask scheduler answers at {address}: {reason}") from None
    try:
        yield ClusterExecutor(client)
    finally:
        client.close()


class ClusterExecutor(Executor):
    """Dask's ``concurrent.futures`` executor over ``client``, with ``workers``: the
    threads the cluster has, so a sweep is cut into batches for them, not for the
    local CPU count."""

    def __init__(self, client: Any) -> None:
        self._executor = client.get_executor()
        info = client.scheduler_info()
        threads = sum(worker.get("nthreads", 1) for worker in info.get("workers", {}).values())
        self.workers = max(1, threads)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        return self._executor.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._executor.shutdown(wait=wait)
