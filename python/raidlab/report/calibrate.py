"""``raidlab calibrate``'s report: the fit error per job, as a table or JSON."""

from __future__ import annotations

import csv
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

from raidlab.frontends.calibrate import Calibration, preset_toml
from raidlab.report.tables import number


def calibration_document(result: Calibration) -> dict[str, Any]:
    """The fit as JSON: the preset, each parameter's source, the error per job."""
    return {
        "name": result.name,
        "kind": result.kind,
        "preset": result.table,
        "sources": result.sources,
        "jobs": [
            {
                "job": job.name,
                "file": job.source,
                "op": job.direction,
                "measured_iops": job.measured_iops,
                "simulated_iops": job.simulated_iops,
                "error_pct": job.error_pct,
            }
            for job in result.jobs
        ],
        "rms_error_pct": result.rms_error_pct,
        "warning": result.poor_fit(),
        "evaluations": result.evaluations,
        "toml": preset_toml(result),
    }


def write_calibration_csv(result: Calibration, out: TextIO) -> None:
    """The error per job as CSV: job, file, op, measured_iops, simulated_iops, error_pct."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["job", "file", "op", "measured_iops", "simulated_iops", "error_pct"])
    for job in result.jobs:
        writer.writerow(
            [
                job.name,
                job.source,
                job.direction,
                job.measured_iops,
                job.simulated_iops,
                job.error_pct,
            ]
        )


def print_calibration_table(result: Calibration, console: Console) -> None:
    """The error per job and the summary line."""
    table = Table(
        title=f"{result.name}: {result.kind} fitted to {len(result.jobs)} jobs "
        f"({result.evaluations} simulations); error = simulated / measured - 1"
    )
    for index, column in enumerate(("job", "op", "measured IOPS", "simulated IOPS", "error %")):
        table.add_column(column, justify="left" if index < 2 else "right")
    for job in result.jobs:
        table.add_row(
            job.name,
            job.direction,
            number(job.measured_iops),
            number(job.simulated_iops),
            f"{job.error_pct:+.1f}",
        )
    console.print(table)
    if result.jobs:
        worst = result.worst
        console.print(
            f"RMS error {result.rms_error_pct:.1f} %, worst {worst.name} {worst.error_pct:+.1f} %",
            highlight=False,
        )
