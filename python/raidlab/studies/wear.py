"""Wear, SMART and endurance from the simulator's per-member flash counters
(``explain.wear``, docs/wear.md).

The simulator counts, per SSD member with an FTL model, what the array wrote to it, what
was programmed into flash (garbage collection's copies included) and how many blocks
were erased, over the measured interval. This module turns those counters into the
figures a storage engineer reads off a drive and a datasheet:

- P/E cycles used per block (mean and worst block) against the preset's rated cycles;
- SMART attributes as Intel defines them for the DC S3500/S3700 (the drives of the
  tuning article), see ``SMART_CONVENTION``;
- years to rated endurance at a duty cycle (``project_life``), from the rated P/E cycles
  and the simulated erases, and from the datasheet's TBW (or DWPD) and the host writes.

All of it is pure arithmetic over results; ``life_results`` runs the workload.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from functools import cache, partial
from pathlib import Path
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.scenario import limits, native
from raidlab.scenario.array import build_scenario, resolve_drive
from raidlab.scenario.executor import run_scenarios
from raidlab.scenario.presets import preset_names, reliability
from raidlab.scenario.refusal import refused
from raidlab.scenario.workloads import WorkloadRequest, build_workload

# Whose SMART attribute meanings the `smart` object follows. Intel SSD DC S3500 Series
# product specification (order number 328860), section "SMART Attributes" (the DC
# S3700's, 328860's sibling, defines them alike):
#   E1h Host Writes: raw counts sectors written by the host in units of 65,536 sectors
#       (32 MiB);
#   E2h Timed Workload Media Wear: raw / 1024 is the media wear, in percent of the rated
#       P/E cycles, since the workload timer was reset (the attribute Intel provides to
#       measure a workload's wear in hours rather than months);
#   E8h Available Reserved Space: normalised 100 with all reserve blocks available,
#       down to its threshold 10 as blocks are retired;
#   E9h Media Wearout Indicator: normalised value decreases linearly from 100 to 1 as the
#       average erase cycle count of the NAND goes from 0 to the maximum rated cycles.
SMART_CONVENTION = (
    "Intel SSD DC S3500 product specification (328860), SMART attributes E1h, E2h, E8h, E9h"
)
HOST_WRITES_UNIT_BYTES = 65_536 * 512
# The FTL model retires no blocks, so the reserve stays whole: E8h stays at 100.
RESERVE_NOTE = "no block retirement is modelled: the reserve stays whole"
# FTL fields the command line sets on a preset's drive (--op, --precondition): a drive
# with only these changed is still that preset's, with its datasheet figures.
_TUNED_FTL_KEYS = ("op_percent", "precondition")
SECONDS_PER_DAY = 86_400.0
DAYS_PER_YEAR = 365.0
STEADY_NOTE = (
    "projected from the steady-state rate: the FTL was preconditioned to SNIA PTS steady "
    "state before measuring, so the rate is what a drive long in service would see"
)


def _comparable(spec: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(spec)
    if isinstance(out.get("ftl"), Mapping):
        out["ftl"] = {k: v for k, v in out["ftl"].items() if k not in _TUNED_FTL_KEYS}
    return out


@cache
def _preset_specs() -> tuple[tuple[str, str], ...]:
    return tuple(
        (name, repr(_comparable(resolve_drive(name, "drive")))) for name in preset_names("drive")
    )


def drive_preset_of(spec: Mapping[str, Any]) -> str | None:
    """The drive preset ``spec`` was resolved from (its FTL's --op and --precondition
    aside), or None for a drive given field by field."""
    wanted = repr(_comparable(spec))
    return next((name for name, text in _preset_specs() if text == wanted), None)


def rated_figures(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The ``[NAME.reliability]`` figures of the preset behind ``spec`` (empty when the
    drive is not a preset's), with ``preset`` naming it."""
    name = drive_preset_of(spec)
    if name is None:
        return {}
    return {"preset": name, **reliability(name)}


def rated_tbw_bytes(figures: Mapping[str, Any], capacity_bytes: int) -> float | None:
    """Rated host bytes written: the datasheet's TBW, else its DWPD over the warranty."""
    if figures.get("tbw_bytes"):
        return float(figures["tbw_bytes"])
    if figures.get("dwpd") and figures.get("warranty_years"):
        days = float(figures["warranty_years"]) * DAYS_PER_YEAR
        return float(figures["dwpd"]) * capacity_bytes * days
    return None


def smart_attributes(wear: Mapping[str, Any], rated_pe_cycles: float | None) -> dict[str, Any]:
    """The SMART attributes (Intel's meanings, ``SMART_CONVENTION``) the measured
    interval moves on a drive whose counters start with it (a new drive, workload timer
    reset). Attributes that need the rated P/E cycles are left out without them."""
    attributes: list[dict[str, Any]] = [
        {
            "id": 0xE1,
            "name": "Host_Writes_32MiB",
            "value": 100,
            "raw": int(wear["host_write_bytes"]) // HOST_WRITES_UNIT_BYTES,
        },
        {"id": 0xE8, "name": "Available_Reservd_Space", "value": 100, "raw": 0},
    ]
    if rated_pe_cycles:
        used = float(wear["erase_count_mean"]) / rated_pe_cycles
        attributes.insert(
            1,
            {
                "id": 0xE2,
                "name": "Timed_Workload_Media_Wear",
                "value": 100,
                "raw": round(used * 100 * 1024),
            },
        )
        attributes.append(
            {
                "id": 0xE9,
                "name": "Media_Wearout_Indicator",
                "value": max(1, math.ceil(100 - 99 * min(used, 1.0))),
                "raw": 0,
            }
        )
    return {"convention": SMART_CONVENTION, "note": RESERVE_NOTE, "attributes": attributes}


def annotate_wear(
    explain: dict[str, Any] | None, drive_spec: Mapping[str, Any], host_write_bytes: int
) -> None:
    """Add to each ``explain.wear`` member its P/E cycles used against the rated ones and
    its ``smart`` object, and to ``explain`` the array's NAND bytes per host byte
    written (``nand_write_bytes_per_host_byte``). Nothing without wear counters."""
    if not explain or not explain.get("wear"):
        return
    figures = rated_figures(drive_spec)
    rated = figures.get("rated_pe_cycles")
    for member in explain["wear"]:
        member["rated_pe_cycles"] = rated
        member["pe_cycles_used_percent"] = (
            100.0 * float(member["erase_count_mean"]) / rated if rated else None
        )
        member["smart"] = smart_attributes(member, rated)
    nand = sum(int(m["nand_write_bytes"]) for m in explain["wear"])
    explain["nand_write_bytes_per_host_byte"] = (
        nand / host_write_bytes if host_write_bytes else None
    )


# --- duty cycle -----------------------------------------------------------------------

_DUTY = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*h\s*(/\s*(day|d))?\s*$", re.IGNORECASE)


def parse_duty_hours(text: str, label: str) -> float:
    """``8h/day`` (or ``8h``): hours a day the workload runs, above 0 and at most 24."""
    match = _DUTY.match(str(text))
    if not match:
        raise RaidlabError(label, f"expected hours a day such as 8h/day, got {text!r}")
    hours = float(match.group(1))
    if not 0 < hours <= 24:
        raise RaidlabError(label, f"must be above 0 and at most 24h/day, got {text!r}")
    return hours


def parse_tb_per_day(text: str, label: str) -> float:
    """Terabytes (10^12 bytes) the host writes to the array a day, above 0."""
    try:
        value = float(str(text).strip().removesuffix("TB").removesuffix("tb"))
    except ValueError:
        raise RaidlabError(label, f"expected terabytes a day such as 0.5, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise RaidlabError(label, f"must be above 0 TB a day, got {text!r}")
    return value


# --- running the workload ---------------------------------------------------------------


def steady(array: Mapping[str, Any]) -> dict[str, Any]:
    """``array`` with its SSDs preconditioned to steady state, the state a projection
    over years must start from (a fresh drive writes without garbage collection)."""
    drive = dict(array["drive"])
    if isinstance(drive.get("ftl"), Mapping):
        drive["ftl"] = {**drive["ftl"], "precondition": "steady"}
    return {**array, "drive": drive}


def workload_scenarios(
    array: Mapping[str, Any], request: WorkloadRequest, seed: int
) -> list[dict[str, Any]]:
    return [build_scenario(array, build_workload(request, array), seed)]


def fio_scenarios(
    array: Mapping[str, Any], job_file: str | Path, seed: int
) -> list[dict[str, Any]]:
    """One scenario per stonewall group of an fio job file (as ``raidlab fio``)."""
    # The fio front end loads here, not with the module: `raidlab run` imports this one.
    from raidlab.frontends.fio import parse_job_files, plan_jobs

    return plan_jobs(parse_job_files([str(job_file)]), array).scenarios(array, seed)


def trace_scenarios(
    array: Mapping[str, Any],
    trace: str | Path,
    trace_format: str,
    mode: str,
    iodepth: Any,
    seed: int,
    labels: Mapping[str, str],
) -> list[dict[str, Any]]:
    """A block trace replayed on ``array`` (as ``raidlab replay``)."""
    workload = {
        "kind": "trace",
        "path": str(trace),
        "format": trace_format,
        "mode": mode,
        "iodepth": limits.parse(
            iodepth, limits.field("workload.iodepth", "trace"), labels.get("iodepth", "iodepth")
        ),
        "time_scale": 1.0,
    }
    scenario = {"schema": 1, "seed": seed, "array": dict(array), "workload": workload}
    # The trace file is opened and its first record read here, so a missing or
    # unreadable trace is the user's flag, not the scenario's `workload.path`.
    names = {f"workload.{key}": label for key, label in labels.items()}
    refused(native.validate(scenario), names)
    return [scenario]


def life_results(
    scenarios: Sequence[dict[str, Any]], labels: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """``labels``: the flag of each scenario key the user gave, so a refusal found while
    simulating (a trace line whose time runs backwards) names the flag, not the key."""
    if labels is None:
        return run_scenarios(list(scenarios), jobs=1, progress=False)
    named = partial(native.simulate, labels=labels)
    return run_scenarios(list(scenarios), jobs=1, progress=False, simulator=named)


# --- projection ---------------------------------------------------------------------------


def _totals(results: Sequence[Mapping[str, Any]]) -> tuple[float, int, dict[int, dict[str, float]]]:
    """Measured seconds, array host bytes written and each member's wear counters,
    summed over the runs (an fio file's stonewall groups run one after another)."""
    seconds = sum(int(r.get("sim_time_ns", 0)) for r in results) / 1e9
    host_bytes = sum(int(r["ops"].get("write", {}).get("bytes", 0)) for r in results)
    members: dict[int, dict[str, float]] = {}
    keys = ("host_write_bytes", "nand_write_bytes", "erased_blocks")
    for r in results:
        for wear in (r.get("explain") or {}).get("wear", []):
            totals = members.setdefault(
                int(wear["member"]), {"flash_blocks": float(wear["flash_blocks"])}
            )
            for key in keys:
                totals[key] = totals.get(key, 0.0) + float(wear[key])
            totals["spread"] = max(totals.get("spread", 1.0), float(wear["erase_count_spread"]))
    return seconds, host_bytes, members


def active_seconds_per_day(
    duty_hours: float | None, tb_per_day: float | None, host_bytes_per_s: float
) -> float:
    """Seconds a day the workload runs: the duty cycle's hours, or as long as it takes to
    write ``tb_per_day`` at the simulated rate."""
    if duty_hours is not None:
        return duty_hours * 3600.0
    assert tb_per_day is not None
    if host_bytes_per_s <= 0:
        raise RaidlabError("--tb-per-day", "the workload writes nothing, so no write rate to scale")
    seconds = tb_per_day * 1e12 / host_bytes_per_s
    if seconds > SECONDS_PER_DAY:
        most = host_bytes_per_s * SECONDS_PER_DAY / 1e12
        raise RaidlabError(
            "--tb-per-day",
            f"at most {most:.3g} TB a day at this workload's simulated rate, got {tb_per_day:g}",
        )
    return seconds


def _years(budget: float | None, per_day: float) -> float | None:
    if not budget or per_day <= 0:
        return None
    return budget / per_day / DAYS_PER_YEAR


def project_life(
    results: Sequence[Mapping[str, Any]],
    array: Mapping[str, Any],
    duty_hours: float | None = None,
    tb_per_day: float | None = None,
) -> dict[str, Any]:
    """Each SSD member's years to rated endurance at the duty cycle, from the runs'
    wear counters. ``years_to_rated_pe`` uses the preset's rated P/E cycles and the
    simulated erases (mean block; ``..._worst_block`` the most erased one);
    ``years_to_rated_tbw`` the datasheet's TBW (or DWPD x capacity x warranty) and the
    host writes the member received. ``years`` is the first where the preset rates P/E
    cycles, else the second; ``basis`` says which."""
    seconds, host_bytes, members = _totals(results)
    if not members:
        raise RaidlabError(
            "--drive", "life needs SSDs with an FTL model (a drive preset with an [x.ftl] table)"
        )
    rate = host_bytes / seconds if seconds else 0.0
    active = active_seconds_per_day(duty_hours, tb_per_day, rate)
    per_day = active / seconds
    figures = rated_figures(array["drive"])
    rated_pe = figures.get("rated_pe_cycles")
    tbw = rated_tbw_bytes(figures, int(array["drive"]["capacity_bytes"]))
    drives = []
    for member, t in sorted(members.items()):
        pe_per_day = t["erased_blocks"] / t["flash_blocks"] * per_day
        host_per_day = t["host_write_bytes"] * per_day
        years_pe = _years(rated_pe, pe_per_day)
        years_tbw = _years(tbw, host_per_day)
        basis = "rated P/E cycles, simulated erases" if rated_pe else "datasheet TBW, host writes"
        drives.append(
            {
                "member": member,
                "host_write_bytes_per_day": host_per_day,
                "nand_write_bytes_per_day": t["nand_write_bytes"] * per_day,
                "write_amplification": (
                    t["nand_write_bytes"] / t["host_write_bytes"] if t["host_write_bytes"] else 1.0
                ),
                "pe_cycles_per_day": pe_per_day,
                "pe_cycles_per_day_worst_block": pe_per_day * t["spread"],
                "rated_pe_cycles": rated_pe,
                "years_to_rated_pe": years_pe,
                "years_to_rated_pe_worst_block": _years(rated_pe, pe_per_day * t["spread"]),
                "rated_tbw_bytes": tbw,
                "years_to_rated_tbw": years_tbw,
                "years": years_pe if rated_pe else years_tbw,
                "basis": basis,
            }
        )
    return {
        "drive_preset": figures.get("preset"),
        "duty_hours_per_day": active / 3600.0,
        "host_write_bytes_per_day": host_bytes * per_day,
        "simulated_seconds": seconds,
        "warranty_years": figures.get("warranty_years"),
        "note": STEADY_NOTE,
        "drives": drives,
    }
