"""`raidlab risk`: MTTDL and the probability of data loss of an array."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from raidlab import api
from raidlab.cli.app import app
from raidlab.cli.flags import (
    RUN_FLAGS,
    ArrayFlags,
    FormatOption,
    SeedOption,
    check_format,
    opt,
    with_array_flags,
)
from raidlab.errors import RaidlabError, user_errors
from raidlab.reliability import RiskOptions
from raidlab.report.output import print_json
from raidlab.report.risk import risk_table_rows, risk_title
from raidlab.report.tables import print_table
from raidlab.scenario.array import load_array_file
from raidlab.scenario.workloads import WorkloadRequest

RISK_FLAGS = {
    "drive": "--drive",
    "mtbf_hours": "--mtbf-hours",
    "afr": "--afr",
    "ure": "--ure",
    "mission_years": "--mission-years",
    "replace_after": "--replace-after",
    "scrub_interval": "--scrub-interval",
    "latent_defect_hours": "--latent-defect-hours",
    "batch_factor": "--batch-factor",
    "repair": "--repair",
    "episodes": "--episodes",
    "seed": "--seed",
    "rebuild_rate": "--rebuild-rate",
    "rebuild_hours": "--rebuild-hours",
}

_DEFAULT = {key: f" (default: {value})." for key, value in api.RISK_WORKLOAD.items()}


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
@with_array_flags
def risk(
    mtbf_hours: Annotated[
        str | None,
        opt("--mtbf-hours", "Per-drive MTBF in hours (default: the drive preset's)."),
    ] = None,
    afr: Annotated[
        str | None,
        opt(
            "--afr",
            "Per-drive annualised failure rate, % per year, instead of --mtbf-hours "
            "(default: the drive preset's).",
        ),
    ] = None,
    ure: Annotated[
        str | None,
        opt(
            "--ure",
            "Bits read per unrecoverable read error, e.g. 1e14 or 1e15 (default: the "
            "drive preset's).",
        ),
    ] = None,
    mission_years: Annotated[
        str, opt("--mission-years", "Years over which P(loss) is given.")
    ] = "5",
    replace_after: Annotated[
        str,
        opt("--replace-after", "Detection and replacement delay before a rebuild, e.g. 24h, 3d."),
    ] = "24h",
    hot_spare: Annotated[
        bool,
        opt("--hot-spare", "A hot spare rebuilds at once: no replacement delay."),
    ] = False,
    rebuild_hours: Annotated[
        str | None,
        opt(
            "--rebuild-hours",
            "The rebuild's time, instead of simulating it (default: simulated).",
        ),
    ] = None,
    scrub_interval: Annotated[
        str | None,
        opt(
            "--scrub-interval",
            "Monte Carlo: a scrub every this long finds latent sector errors, e.g. 168h "
            "(default: never).",
        ),
    ] = None,
    latent_defect_hours: Annotated[
        str | None,
        opt(
            "--latent-defect-hours",
            "Monte Carlo: mean hours until a drive develops a latent sector error, e.g. "
            "9259 (Elerath & Pecht 2009; default: none).",
        ),
    ] = None,
    batch_factor: Annotated[
        str,
        opt(
            "--batch-factor",
            "Monte Carlo: survivors of a failure fail this many times faster until it is "
            "rebuilt (correlated, same-batch drives).",
        ),
    ] = "1",
    repair: Annotated[
        str,
        opt(
            "--repair",
            "Monte Carlo rebuild times: markov (exponential, one at a time, as the "
            "formulas) or fixed (exactly MTTR, together, as md).",
        ),
    ] = "markov",
    episodes: Annotated[
        str, opt("--episodes", "Monte Carlo: degraded episodes simulated.")
    ] = "200000",
    rw: Annotated[str, opt("--rw", f"Workload the rebuild competes with{_DEFAULT['rw']}")] = (
        api.RISK_WORKLOAD["rw"]
    ),
    bs: Annotated[str, opt("--bs", f"Block size{_DEFAULT['bs']}")] = api.RISK_WORKLOAD["bs"],
    iodepth: Annotated[
        str, opt("--iodepth", f"Outstanding I/Os per job{_DEFAULT['iodepth']}")
    ] = api.RISK_WORKLOAD["iodepth"],
    numjobs: Annotated[
        str, opt("--numjobs", f"Independent jobs{_DEFAULT['numjobs']}")
    ] = api.RISK_WORKLOAD["numjobs"],
    rwmixread: Annotated[
        str, opt("--rwmixread", f"Read percentage for rw/randrw{_DEFAULT['rwmixread']}")
    ] = api.RISK_WORKLOAD["rwmixread"],
    ios: Annotated[
        str,
        opt("--ios", "Host I/Os of the simulated rebuild's sample."),
    ] = str(api.RISK_IOS_DEFAULT),
    seed: SeedOption = "1",
    output_format: FormatOption = "table",
    *,
    flags: ArrayFlags,
) -> None:
    """MTTDL and the probability of data loss of an array, from per-drive MTBF and
    read error rates, with the rebuild time from a simulated rebuild under a workload
    (Markov model and Monte Carlo side by side)."""
    with user_errors():
        output_format = check_format(output_format)
        if flags.failed is not None:
            raise RaidlabError(
                "--failed", "risk rebuilds member 0 of the healthy array; leave it out"
            )
        array = replace(flags, rebuild_rate=None).build()
        options = RiskOptions(
            mtbf_hours=mtbf_hours,
            afr=afr,
            ure=ure,
            mission_years=mission_years,
            replace_after=replace_after,
            hot_spare=hot_spare,
            scrub_interval=scrub_interval,
            latent_defect_hours=latent_defect_hours,
            batch_factor=batch_factor,
            repair=repair,
            episodes=episodes,
            seed=seed,
            labels=RISK_FLAGS,
        )
        workload = WorkloadRequest(
            rw=rw,
            bs=bs,
            rwmixread=rwmixread,
            iodepth=iodepth,
            numjobs=numjobs,
            ios=ios,
            labels=RUN_FLAGS,
        )
        document = api.risk(
            array,
            _drive_preset(flags),
            workload,
            options,
            rebuild_rate=flags.rebuild_rate,
            rebuild_hours=rebuild_hours,
            seed=seed,
            labels=RISK_FLAGS,
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
