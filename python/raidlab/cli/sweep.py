"""`raidlab sweep`: a grid or a list of points over any scenario field, to CSV and
Parquet, resumable, on local processes or a Dask cluster."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from raidlab import api
from raidlab.cli.flags import (
    CLUSTER,
    FORMAT,
    JOBS,
    check_format,
    cluster_scope,
    flagset,
    opt,
    parse_jobs,
)
from raidlab.cli.root import app
from raidlab.errors import user_errors
from raidlab.report.output import print_json, records, stderr
from raidlab.report.tables import bound_text, number, print_table

# A sweep's table on the terminal: at most this many rows (all of them go to the files).
TABLE_ROWS_MAX = 50


@app.command(
    epilog="""Examples:

\b
  raidlab sweep examples/sweep-levels.toml
  raidlab sweep examples/sweep-levels.toml --out results/levels --jobs 2
  raidlab sweep examples/sweep-levels.toml --cluster tcp://10.0.0.5:8786
"""
)
@flagset(JOBS, CLUSTER, FORMAT)
def sweep(
    path: Annotated[
        Path,
        typer.Argument(help="Sweep file (TOML): a base scenario and a [grid] or [[points]]."),
    ],
    out: Annotated[
        str | None,
        opt(
            "--out",
            "Output prefix: writes PREFIX.csv and PREFIX.parquet; points already in "
            "PREFIX.csv are not run again (default: out/ and the file's name). A PREFIX "
            "ending in / (or a directory) is a directory: the files go inside it, named "
            "after the file; one ending in .csv or .parquet names the files (x.csv "
            "writes x.csv and x.parquet).",
        ),
    ] = None,
    *,
    jobs: str | None,
    cluster: str | None,
    output_format: str,
) -> None:
    """A design space, one row per point: IOPS, MB/s, latency and the bottleneck of
    every combination of the values in the file's [grid] (or of each [[points]])."""
    with user_errors(), cluster_scope(cluster, jobs):
        output_format = check_format(output_format)
        frame = api.sweep(
            path,
            out,
            jobs=parse_jobs(jobs),
            progress=True,
            labels={"out": "--out"},
        )
    for note in frame.attrs["notes"]:
        stderr.print(note, highlight=False)
    stderr.print(
        f"sweep: {frame.attrs['points']} points -> {frame.attrs['csv']}, {frame.attrs['parquet']}",
        highlight=False,
    )
    if output_format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
    elif output_format == "json":
        print_json({"records": records(frame), "csv": frame.attrs["csv"]})
    else:
        varied = frame.attrs["varied"]
        header = ["point", *varied, "IOPS", "MB/s", "bottleneck (or longest stage)"]
        body = [
            [
                str(row["point"]),
                *(str(row[column]) for column in varied),
                number(row["iops"], 0),
                number(row["mbps"]),
                bound_text(
                    row["bound"],
                    row["bottleneck"],
                    row["bottleneck_utilisation"],
                    row["stage_longest"],
                ),
            ]
            for row in frame.head(TABLE_ROWS_MAX).to_dict("records")
        ]
        more = len(frame) - TABLE_ROWS_MAX
        title = f"sweep {path.name}"
        if more > 0:
            title += f" (first {TABLE_ROWS_MAX}; {more} more in the CSV)"
        print_table((header, body), title=title)
