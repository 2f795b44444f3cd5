"""`raidlab life`: years each SSD of an array lasts to its rated endurance under a
workload at a duty cycle (docs/wear.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from raidlab.cli.flags import (
    ARRAY,
    FORMAT,
    MODE,
    ONE_WORKLOAD_DEFAULTS,
    SEED,
    WORKLOAD,
    ArrayFlags,
    check_format,
    flagset,
    opt,
)
from raidlab.cli.root import app
from raidlab.errors import RaidlabError, user_errors
from raidlab.report.output import print_json, stdout
from raidlab.report.tables import print_table
from raidlab.report.wear import life_notes, life_table_rows
from raidlab.scenario.array import parse_seed
from raidlab.scenario.workloads import WorkloadRequest
from raidlab.studies import wear

LIFE_FORMATS = ("table", "json")
TRACE_LABELS = {
    "iodepth": WORKLOAD["iodepth"].flag,
    "path": "--trace",
    "format": "--trace-format",
    "mode": MODE.flag,
}


def _rates(duty: str | None, tb_per_day: str | None) -> tuple[float | None, float | None]:
    if duty is not None and tb_per_day is not None:
        raise RaidlabError("--tb-per-day", "give --duty or --tb-per-day, not both")
    if tb_per_day is not None:
        return None, wear.parse_tb_per_day(tb_per_day, "--tb-per-day")
    return wear.parse_duty_hours(duty or "24h/day", "--duty"), None


def _scenarios(
    array: dict[str, Any],
    request: WorkloadRequest,
    fio: Path | None,
    trace: Path | None,
    trace_format: str,
    mode: str,
    seed: int,
) -> list[dict[str, Any]]:
    if fio is not None and trace is not None:
        raise RaidlabError("--trace", "give --fio or --trace, not both")
    if trace is None:
        # They shape a trace's replay; without one they would be dropped unread.
        for flag, value, default in (
            ("--mode", mode, "open"),
            ("--trace-format", trace_format, "msr"),
        ):
            if value != default:
                raise RaidlabError(
                    flag, f"only with --trace (it says how the trace is replayed), got {value!r}"
                )
    if fio is not None:
        return wear.fio_scenarios(array, fio, seed)
    if trace is not None:
        return wear.trace_scenarios(
            array, trace, trace_format, mode, request.iodepth, seed, TRACE_LABELS
        )
    return wear.workload_scenarios(array, request, seed)


@app.command(
    epilog="""Examples:

\b
  raidlab life --drive intel-dc-s3500-80g --controller linux-md --level 5 \\
      --drives 4 --rw randwrite --bs 4K --iodepth 16 --numjobs 2 --duty 8h/day
  raidlab life --drive intel-dc-s3500-80g --controller linux-md --level 5 \\
      --drives 4 --fio examples/tuning-randwrite.fio --tb-per-day 0.5 --format json
  raidlab life --drive intel-dc-s3500-80g --level 1 --drives 2 \\
      --trace tests/data/traces/small.msr.csv --duty 24h/day
"""
)
@flagset(
    MODE,
    WORKLOAD,
    SEED,
    FORMAT,
    ARRAY,
    defaults={**ONE_WORKLOAD_DEFAULTS, "mode": "open", "rw": "randwrite"},
)
def life(
    duty: Annotated[
        str | None,
        opt("--duty", "Hours a day the workload runs, e.g. 8h/day (default: 24h/day)."),
    ] = None,
    tb_per_day: Annotated[
        str | None,
        opt(
            "--tb-per-day",
            "Instead of --duty: terabytes (10^12 B) the host writes to the array a day "
            "(default: none, --duty sets the rate).",
        ),
    ] = None,
    fio: Annotated[
        Path | None,
        opt("--fio", "Run this fio job file instead of the workload flags (default: none)."),
    ] = None,
    trace: Annotated[
        Path | None,
        opt("--trace", "Replay this block trace instead of the workload flags (default: none)."),
    ] = None,
    trace_format: Annotated[
        str, opt("--trace-format", "With --trace: msr (MSR Cambridge CSV) or blkparse.")
    ] = "msr",
    *,
    mode: str,
    workload: WorkloadRequest,
    seed: str,
    output_format: str,
    flags: ArrayFlags,
) -> None:
    """Years each SSD lasts to its rated endurance under a workload at a duty cycle,
    projected from the steady-state flash wear the simulator counts."""
    with user_errors():
        check_format(output_format, LIFE_FORMATS)
        duty_hours, tb = _rates(duty, tb_per_day)
        array = wear.steady(flags.build())
        seed_value = parse_seed(seed, "--seed")
        scenarios = _scenarios(array, workload, fio, trace, trace_format, mode, seed_value)
        names = {f"workload.{key}": label for key, label in TRACE_LABELS.items()}
        results = wear.life_results(scenarios, names if trace is not None else None)
        report = wear.project_life(results, array, duty_hours, tb)
        if output_format == "json":
            print_json({**report, "seed": seed_value, "scenarios": scenarios})
            return
        print_table(life_table_rows(report), title=f"years to rated endurance (seed {seed_value})")
        for line in life_notes(report):
            stdout.print(line, highlight=False, markup=False)
