"""A/B: two `raidlab run --format json` results (or scenarios, simulated first) side
by side, with what differs in their scenarios, the figures per direction and the
change, and why (the explain breakdown of each: what bound it, the busiest resource,
the time per stage).

Pure functions on the documents; ``raidlab compare`` prints them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from raidlab.errors import RaidlabError, read_user_text

METRICS = (
    ("iops", "IOPS"),
    ("mbps", "MB/s"),
    ("lat_mean_us", "lat mean us"),
    ("lat_p50_us", "lat p50 us"),
    ("lat_p99_us", "lat p99 us"),
    ("lat_p999_us", "lat p99.9 us"),
)


SCENARIO_KEYS = ("schema", "array")


def load_run(
    path: str,
    label: str,
    simulate: Callable[[dict[str, Any], str], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A `raidlab run --format json` document from ``path``, or a scenario document
    (its ``scenario``, as the report's "Repeat it" saves it), simulated here; anything
    else is one error naming ``label``. ``simulate`` (``api.run_scenario``) runs a
    scenario; without it a scenario is refused."""
    text = read_user_text(path, label)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise RaidlabError(label, f"{path}: not JSON ({error.msg}, line {error.lineno})") from None
    if (
        simulate is not None
        and isinstance(document, dict)
        and all(key in document for key in SCENARIO_KEYS)
    ):
        return simulate(document, f"{label} ({path})")
    wanted = ("records", "explain", "scenario")
    if not isinstance(document, dict) or not all(key in document for key in wanted):
        raise RaidlabError(
            label,
            f"{path}: not the output of `raidlab run --format json` "
            "(records, explain and scenario expected) nor a scenario (schema, array)",
        )
    return document


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flat(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def scenario_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(field, A's value, B's value) of every scenario field that differs (a field only
    one has shows None for the other), in field order."""
    fa, fb = _flat(a), _flat(b)
    return [
        (key, fa.get(key), fb.get(key))
        for key in sorted(set(fa) | set(fb))
        if fa.get(key) != fb.get(key)
    ]


def _change_pct(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a == 0:
        return None
    return (b / a - 1.0) * 100.0


def figure_rows(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per direction and metric: A, B and the change in % (None where one run has no
    such direction)."""
    by_op_a = {r["op"]: r for r in a["records"]}
    by_op_b = {r["op"]: r for r in b["records"]}
    rows = []
    for op in [*by_op_a, *(op for op in by_op_b if op not in by_op_a)]:
        for key, name in METRICS:
            va = by_op_a.get(op, {}).get(key)
            vb = by_op_b.get(op, {}).get(key)
            rows.append(
                {"op": op, "metric": name, "a": va, "b": vb, "change_pct": _change_pct(va, vb)}
            )
    return rows


def _bound(explain: Mapping[str, Any]) -> str:
    name = explain.get("bottleneck")
    busy = explain.get("bottleneck_utilisation")
    busy_text = f"{name} ({100 * busy:.0f} % busy)" if name and busy is not None else "none"
    if explain.get("bound") == "latency":
        return f"latency-bound (busiest {busy_text})"
    return f"bound by {busy_text}"


def stage_rows(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Mean time per stage of an I/O's path, us, in A and B, and the change."""
    sa = a["explain"].get("latency_ns_by_stage") or {}
    sb = b["explain"].get("latency_ns_by_stage") or {}
    rows = []
    for stage in [*sa, *(s for s in sb if s not in sa)]:
        va = sa.get(stage)
        vb = sb.get(stage)
        rows.append(
            {
                "stage": stage,
                "a_us": None if va is None else va / 1000,
                "b_us": None if vb is None else vb / 1000,
                "change_pct": _change_pct(va, vb),
            }
        )
    return rows


def why(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What the explain breakdowns say of the difference, a sentence each."""
    ea, eb = a["explain"], b["explain"]
    lines = [f"A is {_bound(ea)}; B is {_bound(eb)}."]
    stages = [row for row in stage_rows(a, b) if row["change_pct"] is not None]
    biggest = max(stages, key=lambda row: abs(row["b_us"] - row["a_us"]), default=None)
    if biggest is None or abs(biggest["b_us"] - biggest["a_us"]) < 0.05:
        lines.append("No stage of an I/O's path moved by 0.05 us or more.")
    else:
        lines.append(
            f"The stage that moved most is {biggest['stage']}: {biggest['a_us']:.1f} us -> "
            f"{biggest['b_us']:.1f} us ({biggest['change_pct']:+.1f} %)."
        )
    for direction, ratio_a in (ea.get("member_ios_per_host_io") or {}).items():
        ratio_b = (eb.get("member_ios_per_host_io") or {}).get(direction)
        if ratio_b is not None and abs(ratio_b - ratio_a) > 1e-3:
            lines.append(
                f"Each host {direction} costs {ratio_a:.2f} member I/Os in A and "
                f"{ratio_b:.2f} in B."
            )
    return lines


def comparison(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """The whole comparison as one JSON-ready document."""
    return {
        "changes": [
            {"field": field, "a": va, "b": vb}
            for field, va, vb in scenario_changes(a["scenario"], b["scenario"])
        ],
        "figures": figure_rows(a, b),
        "stages": stage_rows(a, b),
        "bound": {"a": _bound(a["explain"]), "b": _bound(b["explain"])},
        "why": why(a, b),
    }
