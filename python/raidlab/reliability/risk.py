"""Data-loss risk of an array: per-drive MTBF (or AFR) and unrecoverable read error
rate, MTTR from a simulated rebuild plus the replacement delay, and the MTTDL and
probability of loss over a mission from the Markov model and a Monte Carlo.

An array is ``groups`` independent RAID groups of ``members`` drives, each surviving
``tolerance`` failures: RAID 5 is one group of N tolerating 1, RAID 6 tolerating 2,
RAID 50/60 one group per span, RAID 10 one per set of copies, RAID 1 one group of N
tolerating N - 1, RAID 0 one group tolerating none. Groups fail independently and a
group's time to loss is close to exponential when losses are rare, so the array's
MTTDL is the group's divided by ``groups`` (both methods).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.reliability.markov import (
    chain_mttdl_hours,
    closed_form_mttdl_hours,
    loss_probability,
    read_error_probability,
)
from raidlab.reliability.rebuild import RebuildEstimate
from raidlab.scenario.native import array_info
from raidlab.scenario.presets import reliability
from raidlab.units import parse_duration_ns

HOURS_PER_YEAR = 8_766.0  # 365.25 days
EPISODES_MIN = 1_000
EPISODES_MAX = 10_000_000
MISSION_YEARS_MAX = 100.0
BATCH_FACTOR_MAX = 1_000.0
# Bounds of the per-drive figures: beyond them a figure is a typo, not a drive.
MTBF_HOURS_RANGE = (1.0, 1e9)
URE_PER_BITS_RANGE = (1e10, 1e20)


@dataclass(frozen=True)
class GroupShape:
    """An array as independent RAID groups (see the module's docs)."""

    groups: float
    members: int
    tolerance: int


def group_shape(array: Mapping[str, Any]) -> GroupShape:
    """The groups of a scenario ``array``. How many failures a group survives is the
    layout's (``array_info``'s ``tolerated_failures``); only how the members split
    into independent groups is said here."""
    level = array["level"]
    drives = int(array["drive_count"])
    tolerance = int(array_info(dict(array))["tolerated_failures"])
    if level == 10:
        copies = int(array.get("copies") or 2)
        # md spreads copies over adjacent members; an odd drive count leaves sets that
        # straddle, counted here as drives / copies sets.
        return GroupShape(drives / copies, copies, tolerance)
    if level in (50, 60):
        spans = int(array["spans"])
        return GroupShape(spans, drives // spans, tolerance)
    return GroupShape(1, drives, tolerance)


@dataclass(frozen=True)
class RiskOptions:
    """What the user asked for, before validation; ``labels`` name the fields in
    errors (the CLI's flags). Durations take ``24h``, ``7d``, ``30m``; ``afr`` is a
    percentage per year; ``ure`` is bits read per unrecoverable error (``1e14``)."""

    mtbf_hours: Any = None
    afr: Any = None
    ure: Any = None
    mission_years: Any = 5
    replace_after: Any = "24h"
    hot_spare: bool = False
    scrub_interval: Any = None
    latent_defect_hours: Any = None
    batch_factor: Any = 1
    repair: str = "markov"
    episodes: Any = 200_000
    seed: Any = 1
    labels: Mapping[str, str] = field(default_factory=dict)

    def label(self, key: str) -> str:
        return self.labels.get(key, key)


@dataclass(frozen=True)
class DriveFigures:
    """Per-drive failure figures and where each came from."""

    mtbf_hours: float
    ure_per_bits: float
    sources: dict[str, str]


@dataclass(frozen=True)
class ResolvedRisk:
    """Validated options in plain units."""

    mission_hours: float
    replace_after_hours: float
    hot_spare: bool
    scrub_interval_hours: float | None
    latent_per_hour: float
    batch_factor: float
    repair: str
    episodes: int
    seed: int


def parse_hours(value: Any, label: str) -> float:
    """A duration in hours: ``24h``, ``7d``, ``90m``, ``0``, or a bare number of hours."""
    text = str(value).strip()
    days = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*d", text, re.IGNORECASE)
    if days:
        return float(days.group(1)) * 24.0
    if re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)", text):
        return float(text)
    if text in ("0", "0h", "0s"):
        return 0.0
    try:
        return parse_duration_ns(text, label) / 3.6e12
    except RaidlabError:
        raise RaidlabError(
            label, f"must be a duration like 24h, 7d or 90m (hours when bare), got {value!r}"
        ) from None


def _number(value: Any, label: str, low: float, high: float, what: str) -> float:
    text = str(value).strip().rstrip("%").strip()
    try:
        number = float(text)
    except ValueError:
        raise RaidlabError(label, f"must be {what}, got {value!r}") from None
    if not math.isfinite(number) or not low <= number <= high:
        raise RaidlabError(label, f"must be {what} in {low:g}..={high:g}, got {value!r}")
    return number


def mtbf_from_afr(afr_percent: float) -> float:
    """MTBF of an annualised failure rate, failures exponential: ``AFR = 1 - e^(-8766 /
    MTBF)``."""
    return -HOURS_PER_YEAR / math.log1p(-afr_percent / 100.0)


def drive_figures(drive_preset: str | None, options: RiskOptions) -> DriveFigures:
    """MTBF and URE rate: the flags, else the drive preset's ``[NAME.reliability]``."""
    table = reliability(drive_preset, options.label("drive")) if drive_preset else {}
    where = f"preset {drive_preset}" if drive_preset else "no preset"
    if options.mtbf_hours is not None and options.afr is not None:
        raise RaidlabError(
            options.label("afr"), f"give {options.label('mtbf_hours')} or the AFR, not both"
        )
    sources: dict[str, str] = {}
    if options.mtbf_hours is not None:
        mtbf = _number(options.mtbf_hours, options.label("mtbf_hours"), *MTBF_HOURS_RANGE, "hours")
        sources["mtbf_hours"] = options.label("mtbf_hours")
    elif options.afr is not None:
        afr = _number(options.afr, options.label("afr"), 1e-6, 99.0, "a percentage per year")
        mtbf = mtbf_from_afr(afr)
        sources["mtbf_hours"] = options.label("afr")
    elif "mtbf_hours" in table:
        mtbf = float(table["mtbf_hours"])
        sources["mtbf_hours"] = where
    elif "afr_percent" in table:
        mtbf = mtbf_from_afr(float(table["afr_percent"]))
        sources["mtbf_hours"] = f"{where} (afr_percent)"
    else:
        raise RaidlabError(
            options.label("mtbf_hours"),
            f"{where} has no MTBF or AFR figure; give {options.label('mtbf_hours')} "
            f"or {options.label('afr')}",
        )
    if options.ure is not None:
        ure = _number(
            options.ure,
            options.label("ure"),
            *URE_PER_BITS_RANGE,
            "bits read per unrecoverable error, like 1e14 or 1e15",
        )
        sources["ure_per_bits"] = options.label("ure")
    elif "ure_per_bits" in table:
        ure = float(table["ure_per_bits"])
        sources["ure_per_bits"] = where
    else:
        raise RaidlabError(
            options.label("ure"),
            f"{where} has no unrecoverable read error rate; give {options.label('ure')} "
            "(bits per error, e.g. 1e14 for desktop drives, 1e15 or more for enterprise)",
        )
    return DriveFigures(mtbf, ure, sources)


def resolve_options(options: RiskOptions) -> ResolvedRisk:
    """Validate the options that do not depend on the drive."""
    # The Monte Carlo (numpy) loads where risk is assessed, not with the CLI: a plain
    # `raidlab run` or `report` imports this module and must stay free of numpy.
    from raidlab.reliability.montecarlo import REPAIR_MODELS

    label = options.label
    if options.repair not in REPAIR_MODELS:
        raise RaidlabError(
            label("repair"),
            f"must be one of {', '.join(REPAIR_MODELS)}, got {options.repair!r}",
        )
    latent = None
    if options.latent_defect_hours is not None:
        latent = _number(
            options.latent_defect_hours, label("latent_defect_hours"), 1.0, 1e12, "hours"
        )
    scrub = None
    if options.scrub_interval is not None:
        scrub = parse_hours(options.scrub_interval, label("scrub_interval"))
        if scrub <= 0:
            raise RaidlabError(label("scrub_interval"), "must be longer than 0")
    episodes = _number(
        options.episodes, label("episodes"), EPISODES_MIN, EPISODES_MAX, "a number of episodes"
    )
    seed = _number(options.seed, label("seed"), 0, 2**63 - 1, "a whole number")
    return ResolvedRisk(
        mission_hours=HOURS_PER_YEAR
        * _number(options.mission_years, label("mission_years"), 1e-3, MISSION_YEARS_MAX, "years"),
        replace_after_hours=parse_hours(options.replace_after, label("replace_after")),
        hot_spare=bool(options.hot_spare),
        scrub_interval_hours=scrub,
        latent_per_hour=0.0 if latent is None else 1.0 / latent,
        batch_factor=_number(
            options.batch_factor, label("batch_factor"), 1.0, BATCH_FACTOR_MAX, "a factor"
        ),
        repair=options.repair,
        episodes=int(episodes),
        seed=int(seed),
    )


def risk_document(
    shape: GroupShape,
    member_bytes: int,
    figures: DriveFigures,
    rebuild: RebuildEstimate | float | None,
    resolved: ResolvedRisk,
    monte_carlo: bool = True,
) -> dict[str, Any]:
    """The risk of an array of ``shape``: ``rebuild`` is the simulated rebuild (or its
    hours, given), None for RAID 0 (nothing to rebuild). ``monte_carlo=False`` leaves
    the Monte Carlo out (``monte_carlo`` is None)."""
    lam = 1.0 / figures.mtbf_hours
    g, t = shape.members, shape.tolerance
    rebuild_hours = None
    rebuild_doc: dict[str, Any] | None = None
    if isinstance(rebuild, RebuildEstimate):
        rebuild_hours = rebuild.hours
        rebuild_doc = rebuild.document()
    elif rebuild is not None:
        rebuild_hours = float(rebuild)
        rebuild_doc = {"hours": rebuild_hours, "source": "given"}
    replace = 0.0 if resolved.hot_spare else resolved.replace_after_hours
    mttr = None if rebuild_hours is None else replace + rebuild_hours
    # A failure of RAID 0 loses data whatever the repair takes: any positive rate does.
    mu = 1.0 / mttr if mttr else 1.0
    bits = (g - t) * member_bytes * 8 if t else 0
    p_ure = read_error_probability(bits, figures.ure_per_bits)
    markov = {
        "mttdl_hours": chain_mttdl_hours(g, t, lam, mu) / shape.groups,
        "mttdl_with_ure_hours": chain_mttdl_hours(g, t, lam, mu, p_ure) / shape.groups,
        "mttdl_closed_form_hours": closed_form_mttdl_hours(g, t, lam, mu) / shape.groups,
        "mttdl_with_ure_closed_form_hours": closed_form_mttdl_hours(g, t, lam, mu, p_ure)
        / shape.groups,
    }
    mission = resolved.mission_hours
    document = {
        "groups": shape.groups,
        "group_members": g,
        "tolerated_failures": t,
        "mtbf_hours": figures.mtbf_hours,
        "afr_percent": 100.0 * -math.expm1(-HOURS_PER_YEAR / figures.mtbf_hours),
        "ure_per_bits": figures.ure_per_bits,
        "sources": figures.sources,
        "member_bytes": member_bytes,
        "hot_spare": resolved.hot_spare,
        "replace_after_hours": replace,
        "rebuild": rebuild_doc,
        "mttr_hours": mttr,
        "p_ure_rebuild": p_ure,
        **{key: markov[key] for key in ("mttdl_hours", "mttdl_with_ure_hours")},
        "mttdl_closed_form_hours": markov["mttdl_closed_form_hours"],
        "mttdl_with_ure_closed_form_hours": markov["mttdl_with_ure_closed_form_hours"],
        "mission_years": mission / HOURS_PER_YEAR,
        "p_loss": loss_probability(markov["mttdl_with_ure_hours"], mission),
        "p_loss_without_ure": loss_probability(markov["mttdl_hours"], mission),
        "monte_carlo": None,
    }
    if not monte_carlo:
        return document
    mc = _monte_carlo(shape, lam, mttr or 1.0, p_ure, resolved)
    mc["agrees_with_markov"] = _agrees_with_markov(markov, mc, resolved)
    return {**document, "monte_carlo": mc}


def _agrees_with_markov(
    markov: Mapping[str, float], mc: Mapping[str, Any], resolved: ResolvedRisk
) -> bool | None:
    """Whether the Markov MTTDLs fall inside the Monte Carlo's 95 % intervals; None
    when the Monte Carlo models what the chain does not (fixed repair times, latent
    errors, correlated failures), so the two need not agree."""
    chain_only = (
        resolved.repair == "markov"
        and resolved.latent_per_hour == 0.0
        and resolved.batch_factor == 1.0
    )
    if not chain_only:
        return None
    return all(
        low <= markov[key] <= high
        for key, (low, high) in (
            ("mttdl_hours", mc["mttdl_ci95_hours"]),
            ("mttdl_with_ure_hours", mc["mttdl_with_ure_ci95_hours"]),
        )
    )


def _monte_carlo(
    shape: GroupShape, lam: float, mttr: float, p_ure: float, resolved: ResolvedRisk
) -> dict[str, Any]:
    from raidlab.progress import late_bar
    from raidlab.reliability.montecarlo import GroupModel, simulate_group

    model = GroupModel(
        members=shape.members,
        tolerance=shape.tolerance,
        failure_per_hour=lam,
        mttr_hours=mttr,
        latent_per_hour=resolved.latent_per_hour,
        scrub_interval_hours=resolved.scrub_interval_hours,
        latent_age_hours_max=resolved.mission_hours,
        batch_factor=resolved.batch_factor,
    )
    bare = GroupModel(model.members, model.tolerance, lam, mttr, batch_factor=resolved.batch_factor)
    with_errors = GroupModel(**{**model.__dict__, "p_ure": p_ure})
    bar = late_bar("Monte Carlo")
    try:
        # One bar over both runs: the first half, then the second.
        runs = {
            "": simulate_group(
                bare,
                resolved.episodes,
                2 * resolved.seed,
                resolved.repair,
                None if bar is None else lambda done: bar(done / 2),
            ),
            "_with_ure": simulate_group(
                with_errors,
                resolved.episodes,
                2 * resolved.seed + 1,
                resolved.repair,
                None if bar is None else lambda done: bar(0.5 + done / 2),
            ),
        }
    finally:
        if bar is not None:
            bar.close()
    mission = resolved.mission_hours
    doc: dict[str, Any] = {
        "repair": resolved.repair,
        "episodes": resolved.episodes,
        "seed": resolved.seed,
        "latent_defect_hours": None
        if resolved.latent_per_hour == 0
        else 1.0 / resolved.latent_per_hour,
        "scrub_interval_hours": resolved.scrub_interval_hours,
        "batch_factor": resolved.batch_factor,
    }
    for suffix, estimate in runs.items():
        low, high = estimate.ci95_hours
        doc[f"mttdl{suffix}_hours"] = estimate.mttdl_hours / shape.groups
        doc[f"mttdl{suffix}_ci95_hours"] = [low / shape.groups, high / shape.groups]
    low, high = doc["mttdl_with_ure_ci95_hours"]
    doc["p_loss"] = loss_probability(doc["mttdl_with_ure_hours"], mission)
    doc["p_loss_ci95"] = [loss_probability(high, mission), loss_probability(low, mission)]
    return doc
