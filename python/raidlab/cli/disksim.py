"""DiskSim's real-disk validation: ``raidlab disksim-validate`` (docs/disksim.md). The
import of DiskSim's disks is ``raidlab presets import-disksim`` (cli/studies.py)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from raidlab import api
from raidlab.cli.flags import FORMAT, check_format, flagset
from raidlab.cli.root import app
from raidlab.errors import user_errors
from raidlab.report.output import print_json, stdout
from raidlab.scenario.array import parse_int

REQUESTS_MAX = 10_000_000


@app.command(
    "disksim-validate",
    epilog="""Examples:

\b
  raidlab disksim-validate
  raidlab disksim-validate atlas_III ibm18es --format json
  raidlab disksim-validate barracuda --requests 2000
""",
)
@flagset(FORMAT)
def disksim_validate(
    disks: Annotated[
        list[str] | None,
        typer.Argument(help="Disks of the data directory (default: the five development disks)."),
    ] = None,
    data: Annotated[
        str | None,
        typer.Option(
            "--data",
            help=(
                "Directory of DISK.parv and DISK.trace (default: the checkout's "
                "data/disksim, else the copy the package ships)."
            ),
        ),
    ] = None,
    requests: Annotated[
        str | None,
        typer.Option(
            "--requests", help="Replay only the first N requests of each trace (default: all)."
        ),
    ] = None,
    *,
    output_format: str,
) -> None:
    """Replay DiskSim 4's real-disk validation traces on the disks imported from their
    .parv files and print raidlab's demerit beside DiskSim's own (rms of the horizontal
    distance between the simulated and measured response-time CDFs, % of the measured
    mean; DiskSim's from the rms its valid/runvalid expects)."""
    with user_errors():
        output_format = check_format(output_format)
        count = None if requests is None else parse_int(requests, "--requests", 1, REQUESTS_MAX)
        rows = api.disksim_validation(disks or [], data, count)
        if output_format == "json":
            print_json({"records": [_record(v) for v in rows]})
            return
        if output_format == "csv":
            keys = list(_record(rows[0]))
            typer.echo(",".join(keys))
            for v in rows:
                typer.echo(",".join("" if x is None else str(x) for x in _record(v).values()))
            return
        table = Table(title="DiskSim validation: demerit = rms(CDF distance) / measured mean")
        for column in (
            "disk",
            "requests",
            "measured ms",
            "raidlab ms",
            "rms ms",
            "demerit %",
            "DiskSim rms ms",
            "DiskSim demerit %",
        ):
            table.add_column(column, justify="right")
        for v in rows:
            ds = v.disksim_demerit_percent
            table.add_row(
                v.disk,
                str(v.requests),
                f"{v.measured_mean_ms:.3f}",
                f"{v.simulated_mean_ms:.3f}",
                f"{v.rms_ms:.3f}",
                f"{v.demerit_percent:.2f}",
                "-" if v.disksim_rms_ms is None else f"{v.disksim_rms_ms:.3f}",
                "-" if ds is None else f"{ds:.2f}",
            )
        stdout.print(table)


def _record(v: api.Any) -> dict[str, object]:
    return {
        "disk": v.disk,
        "requests": v.requests,
        "measured_mean_ms": round(v.measured_mean_ms, 4),
        "simulated_mean_ms": round(v.simulated_mean_ms, 4),
        "rms_ms": round(v.rms_ms, 4),
        "demerit_percent": round(v.demerit_percent, 3),
        "disksim_rms_ms": v.disksim_rms_ms,
        "disksim_demerit_percent": None
        if v.disksim_demerit_percent is None
        else round(v.disksim_demerit_percent, 3),
    }
