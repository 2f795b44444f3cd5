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
from collections.abc import Mapping
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.progress import late_bar
from raidlab.scenario.refusal import relabel

NATIVE_MISSING = "native module not built: run `make demo` or `maturin develop`"


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
    bar = late_bar("simulating")
    try:
        if bar is None:
            results_json = _native.simulate(json.dumps(scenario))
        else:
            results_json = _native.simulate(json.dumps(scenario), bar)
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
