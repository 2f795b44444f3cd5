"""``raidlab report``: a command's ``--format json`` output as one HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from raidlab.cli.flags import LOG_Y, flagset, opt
from raidlab.cli.root import app
from raidlab.errors import user_errors
from raidlab.report.output import stdout


@app.command(
    epilog="""Examples:

\b
  raidlab reproduce ssd-raid0-atto --format json > ssd.json
  raidlab report ssd.json --out out/report.html
  raidlab run --drive intel-dc-s3500-80g --rw randread --iodepth 32 --format json \\
      | raidlab report - --out run.html --title "one SSD, 4K random reads"
  raidlab advise --drive intel-dc-s3500-80g --drives 4 --format json > advise.json
  raidlab report advise.json --out advise.html
  raidlab sweep examples/sweep-levels.toml --out out/levels
  raidlab report out/levels.csv --out out/levels.html
"""
)
@flagset(LOG_Y)
def report(
    input_path: Annotated[
        str,
        typer.Argument(
            metavar="INPUT",
            help="The --format json output of reproduce (ATTO or claim study), advise, "
            "run, replay, atto or sweep, or a sweep's PREFIX.csv or PREFIX.parquet; - "
            "reads JSON from standard input.",
        ),
    ],
    out: Annotated[
        Path,
        opt("--out", "The HTML file to write (required); its directory must exist."),
    ],
    title: Annotated[
        str | None, opt("--title", "The page's title (default: from the input).")
    ] = None,
    *,
    log_y: bool,
) -> None:
    """Write one self-contained HTML report (no network needed to view it): the
    headline, measured-vs-simulated figures with the error per row, sortable tables,
    the explain breakdown, and what repeats the run."""
    # The report's modules load with the command, not with the command line.
    from raidlab.report.html import write_report

    with user_errors():
        written = write_report(input_path, out, title=title, log_y=log_y)
        for item in written.headline:
            note = f" ({item.note})" if item.note else ""
            stdout.print(f"{item.label}: {item.value}{note}", highlight=False, markup=False)
        stdout.print(f"report ({written.kind}): {out}", highlight=False, markup=False)
