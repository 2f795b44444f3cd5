"""The one call into the Rust simulator: scenario dict in, results dict out.

The JSON documents are defined in docs/scenario.md. Keeping the boundary as plain
JSON means a scenario can be stored next to its results and shipped unchanged to a
worker process or a Dask cluster. The native side is also the one authority on what
is valid: ``limits_table``, ``levels_table``, ``check_field``, ``validate_array`` and
``validate`` ask it, and a refusal comes back as the field's path and a message
(``refusal``), which ``raidlab.scenario.limits`` maps to the user's flag or key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.progress import late_bar
from raidlab.scenario.refusal import relabel

NATIVE_MISSING = "native module not built: run `make demo` or `maturin develop`"

# The most simulator memory a run may hold for its outstanding I/Os unless the user
# says otherwise (`raidlab run --memory-limit`): far above any real device's queues
# (1,024 jobs x QD 256 need 77 MB), far below what `numjobs` x `iodepth` at their
# bounds would take (67 million I/Os in flight, ~20 GB), which used to grow until the
# machine ran out.
MEMORY_LIMIT_DEFAULT = 4 << 30

_MEMORY_LIMIT: ContextVar[tuple[int, Mapping[str, str]]] = ContextVar(
    "raidlab_memory_limit", default=(MEMORY_LIMIT_DEFAULT, {})
)


@contextmanager
def memory_limit(limit_bytes: int, labels: Mapping[str, str]) -> Iterator[None]:
    """Within it, a simulation that would hold more than ``limit_bytes`` for its
    outstanding I/Os is refused before it starts, naming the fields by ``labels`` (the
    user's flags for ``workload.numjobs`` and ``workload.iodepth``)."""
    token = _MEMORY_LIMIT.set((limit_bytes, labels))
    try:
        yield
    finally:
        _MEMORY_LIMIT.reset(token)


def _readable(size_bytes: int) -> str:
    if size_bytes >= 1 << 30:
        return f"{size_bytes / (1 << 30):.1f} GiB"
    return f"{size_bytes / (1 << 20):.1f} MiB"


def _check_memory(native: Any, text: str, labels: Mapping[str, str] | None) -> None:
    """Refuse, naming the flags, a run whose outstanding I/Os need more memory than the
    limit: the one part of a run's memory its flags can make arbitrarily large."""
    needed = getattr(native, "memory_needed", None)
    if needed is None:
        return
    try:
        need = int(needed(text))
    except ValueError:
        return  # refused as a scenario, by `simulate` itself, with its field
    limit, flags = _MEMORY_LIMIT.get()
    if need <= limit:
        return
    names = {**flags, **(labels or {})}
    raise RaidlabError(
        f"{relabel('workload.numjobs', names)} x {relabel('workload.iodepth', names)}",
        f"the I/Os in flight need at least {_readable(need)} of simulator memory, above "
        f"the memory limit of {_readable(limit)}; lower them, or raise the limit "
        "(raidlab run --memory-limit SIZE)",
    )


def simulate(scenario: dict[str, Any], labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Simulate one scenario with ``raidlab._native.simulate``. A refusal names
    ``labels``' name for the refused path (see ``refusal.relabel``) when given; else the
    path itself, as a disagreement between the front end and the simulator. Ctrl-C stops
    it within a fraction of a second (KeyboardInterrupt); a long run shows a bar
    (``raidlab.progress``)."""
    try:
        from raidlab import _native
    except ImportError as error:
        raise RaidlabError("simulator", NATIVE_MISSING) from error
    text = json.dumps(scenario)
    _check_memory(_native, text, labels)
    bar = late_bar("simulating")
    try:
        if bar is None:
            results_json = _native.simulate(text)
        else:
            results_json = _native.simulate(text, bar)
    except ValueError as error:
        path, message = refusal(error)
        if labels is not None:
            raise RaidlabError(relabel(path, labels), message) from None
        # The front end checked the fields it built, so this means the two sides
        # disagree about the contract: show the native message rather than a traceback.
        raise RaidlabError("scenario", f"rejected by the simulator: {path}: {message}") from None
    finally:
        if bar is not None:
            bar.close()
    results: dict[str, Any] = json.loads(results_json)
    return results


def array_info(array: dict[str, Any] | Any) -> dict[str, Any]:
    """Geometry of a scenario ``array``: ``capacity_bytes``, ``member_used_bytes``,
    ``tolerated_failures``, ``data_members_per_stripe`` (``raidlab._native.array_info``)."""
    try:
        from raidlab import _native
    except ImportError as error:
        raise RaidlabError("simulator", NATIVE_MISSING) from error
    try:
        info: dict[str, Any] = json.loads(_native.array_info(json.dumps(dict(array))))
    except ValueError as error:
        raise RaidlabError("array", f"refused by the layout: {error}") from None
    return info


def _native_module() -> Any:
    try:
        from raidlab import _native
    except ImportError as error:
        raise RaidlabError("simulator", NATIVE_MISSING) from error
    return _native


def limits_table() -> list[dict[str, Any]]:
    """Every field a scenario may carry with its kind and bounds (``_native.limits()``)."""
    table: list[dict[str, Any]] = json.loads(_native_module().limits())
    return table


def levels_table() -> list[dict[str, Any]]:
    """The RAID level rules of the layout crate (``_native.levels()``)."""
    table: list[dict[str, Any]] = json.loads(_native_module().levels())
    return table


def refusal(error: ValueError) -> tuple[str, str]:
    """The (path, message) of a refusal by the native side; a path of ``scenario``
    when the error carries none (an older build, a JSON syntax error)."""
    field = getattr(error, "field", None)
    message = getattr(error, "message", None)
    if isinstance(field, str) and isinstance(message, str):
        return field, message
    return "scenario", str(error)


def check_field(path: str, value: Any, scope: str = "always") -> tuple[str, str] | None:
    """None if ``value`` is allowed for the field at ``path`` on its own, else the
    native side's (path, message) (``_native.check_field``)."""
    try:
        _native_module().check_field(path, json.dumps(value), scope)
    except ValueError as error:
        return refusal(error)
    return None


def validate_array(array: dict[str, Any] | Any) -> tuple[str, str] | None:
    """None if the scenario ``array`` is valid, else the native side's (path, message)."""
    try:
        _native_module().validate_array(json.dumps(dict(array)))
    except ValueError as error:
        return refusal(error)
    return None


def check_controller_preset(table: Mapping[str, Any]) -> tuple[str, str] | None:
    """None if a controller preset's own keys (``kind``, ``bbu``, ``force_write_back``)
    and its ``write_back`` go together, else the native side's (path, message)
    (``_native.check_controller_preset``: write-back needs a backup unit unless forced)."""
    try:
        _native_module().check_controller_preset(json.dumps(dict(table)))
    except ValueError as error:
        return refusal(error)
    return None


def validate(scenario: dict[str, Any]) -> tuple[str, str] | None:
    """None if the whole scenario is valid, else the native side's (path, message)."""
    try:
        _native_module().validate(json.dumps(scenario))
    except ValueError as error:
        return refusal(error)
    return None
