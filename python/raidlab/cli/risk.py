"""`raidlab risk`: MTTDL and the probability of data loss of an array."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from raidlab import api
from raidlab.cli.flags import (
    ARRAY,
    FORMAT,
    RISK,
    SEED,
    WORKLOAD,
    ArrayFlags,
    check_format,
    flagset,
    opt,
)
from raidlab.cli.root import app
from raidlab.errors import RaidlabError, user_errors
from raidlab.reliability import RiskOptions
from raidlab.report.output import print_json
from raidlab.report.risk import risk_table_rows, risk_title
from raidlab.report.tables import print_table
from raidlab.scenario.array import load_array_file
from raidlab.scenario.workloads import WorkloadRequest


@app.command(
    epilog="""Examples:

\b
  raidlab risk --drive wd-caviar-blue-500g --level 5 --drives 4 \\
      --mtbf-hours 1e6 --ure 1e14
  raidlab risk --drive intel-dc-s3500-800g --level 6 --drives 8 --afr 0.44 \\
      --ure 1e17 --hot-spare --rw randwrite --iodepth 8 --format json
  raidlab risk --drive wd-caviar-blue-500g --level 5 --drives 8 --mtbf-hours 6e5 \\
      --ure 1e14 --latent-defect-hours 9259 --scrub-interval 168h --repair fixed
"""
)
@flagset(
    RISK,
    WORKLOAD.only("rw", "bs", "iodepth", "numjobs", "rwmixread", "ios"),
    SEED,
    FORMAT,
    ARRAY,
    defaults={**api.RISK_WORKLOAD, "ios": str(api.RISK_IOS_DEFAULT)},
)
def risk(
    rebuild_hours: Annotated[
        str | None,
        opt(
            "--rebuild-hours",
            "The rebuild's time, instead of simulating it (default: simulated).",
        ),
    ] = None,
    *,
    risk: RiskOptions,
    workload: WorkloadRequest,
    seed: str,
    output_format: str,
    flags: ArrayFlags,
) -> None:
    """MTTDL and the probability of data loss of an array, from per-drive MTBF and
    read error rates, with the rebuild time from a simulated rebuild under a workload
    (Markov model and Monte Carlo side by side)."""
    with user_errors():
        output_format = check_format(output_format)
        if flags.value("failed") is not None:
            raise RaidlabError(
                "--failed", "risk rebuilds member 0 of the healthy array; leave it out"
            )
        array = flags.without("rebuild_rate").build()
        labels = {
            **RISK.labels(),
            "seed": SEED.flag,
            "drive": ARRAY["drive"].flag,
            "rebuild_rate": ARRAY["rebuild_rate"].flag,
            "rebuild_hours": "--rebuild-hours",
        }
        document = api.risk(
            array,
            _drive_preset(flags),
            workload,
            replace(risk, seed=seed, labels=labels),
            rebuild_rate=flags.value("rebuild_rate"),
            rebuild_hours=rebuild_hours,
            seed=seed,
            labels=labels,
        )
        if output_format == "json":
            print_json(document)
        elif output_format == "csv":
            raise RaidlabError("--format", "risk prints table or json")
        else:
            print_table(risk_table_rows(document), risk_title(document))


def _drive_preset(flags: ArrayFlags) -> str | None:
    """The drive preset's name, whose reliability figures are the defaults."""
    drive = flags.drive
    if drive is None and flags.config is not None:
        drive = load_array_file(flags.config).drive
    if isinstance(drive, dict):
        drive = drive.get("preset")
    return drive if isinstance(drive, str) else None
