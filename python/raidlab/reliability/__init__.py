"""Data-loss risk of RAID arrays: MTTDL and the probability of loss over a mission, from
per-drive MTBF (or AFR) and unrecoverable read error rates, with the rebuild time taken
from a simulated rebuild of the array under a workload (docs/reliability.md).

Two methods that must agree: the Markov model's closed forms and exact chain
(:mod:`~raidlab.reliability.markov`) and a Monte Carlo of failure, rebuild and read
error events (:mod:`~raidlab.reliability.montecarlo`), which also models latent sector
errors found only by a scrub, correlated failures and md's fixed rebuild times.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.reliability.rebuild import (
    MD_SPEED_LIMIT_MAX_BYTES_PER_S,
    RebuildEstimate,
    member_bytes,
    rebuild_estimate,
    rebuild_scenario,
    rebuilding_array,
)
from raidlab.reliability.risk import (
    HOURS_PER_YEAR,
    DriveFigures,
    GroupShape,
    ResolvedRisk,
    RiskOptions,
    drive_figures,
    group_shape,
    parse_hours,
    resolve_options,
    risk_document,
)
from raidlab.scenario.native import simulate
from raidlab.scenario.workloads import WorkloadRequest


def assess(
    array: Mapping[str, Any],
    drive_preset: str | None,
    workload: WorkloadRequest,
    options: RiskOptions,
    rebuild_rate: float = MD_SPEED_LIMIT_MAX_BYTES_PER_S,
    rebuild_hours: Any = None,
    seed: int = 1,
) -> dict[str, Any]:
    """The risk document of a healthy ``array`` (see :func:`risk_document`), its
    rebuild simulated under ``workload`` at ``rebuild_rate`` bytes/s, unless
    ``rebuild_hours`` gives the rebuild's time."""
    resolved = resolve_options(options)
    figures = drive_figures(drive_preset, options)
    shape = group_shape(array)
    rebuild: RebuildEstimate | float | None = None
    # Checked whatever the level: a value RAID 0 has no use for is still a typo to report.
    given = None if rebuild_hours is None else _rebuild_hours(rebuild_hours, options)
    if shape.tolerance > 0:
        if given is not None:
            rebuild = given
        else:
            label = options.label("rebuild_rate")
            scenario = rebuild_scenario(
                array, workload, rebuild_rate, seed, label, resolved.hot_spare
            )
            rebuild = rebuild_estimate(simulate(scenario), rebuild_rate, label)
    return risk_document(shape, member_bytes(array), figures, rebuild, resolved)


def _rebuild_hours(value: Any, options: RiskOptions) -> float:
    """A given rebuild time: more than zero, since a rebuild writes a whole member (a
    zero time would make the repair rate infinite and the MTTDL meaningless)."""
    label = options.label("rebuild_hours")
    hours = parse_hours(value, label)
    if not hours > 0:
        raise RaidlabError(
            label, f"must be more than 0 (a rebuild writes a whole member), got {value!r}"
        )
    return hours


__all__ = [
    "HOURS_PER_YEAR",
    "MD_SPEED_LIMIT_MAX_BYTES_PER_S",
    "DriveFigures",
    "GroupShape",
    "RebuildEstimate",
    "ResolvedRisk",
    "RiskOptions",
    "assess",
    "drive_figures",
    "group_shape",
    "member_bytes",
    "parse_hours",
    "rebuild_estimate",
    "rebuild_scenario",
    "rebuilding_array",
    "resolve_options",
    "risk_document",
]
