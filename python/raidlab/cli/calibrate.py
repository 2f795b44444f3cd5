"""``raidlab calibrate``: the fio jobs that measure a drive, and the drive preset
fitted to their results."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from raidlab import api
from raidlab.cli.flags import FORMAT, check_format, flagset, opt
from raidlab.cli.root import app
from raidlab.errors import RaidlabError, user_errors
from raidlab.frontends.calibrate import FIT_IOS_DEFAULT, MAX_EVALS_DEFAULT, preset_toml
from raidlab.report.calibrate import (
    calibration_document,
    print_calibration_table,
    write_calibration_csv,
)
from raidlab.report.output import output_file, print_json, stderr, stdout

CALIBRATE_FLAGS = {
    "kind": "--kind",
    "name": "--name",
    "capacity": "--capacity",
    "max_evals": "--max-evals",
    "fit_ios": "--fit-ios",
}


@contextmanager
def _progress_bar(total: int) -> Iterator[Callable[[int, float], None]]:
    """A bar over the fit's simulations of the job set (on a terminal only)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if not stderr.is_terminal:
        yield lambda count, best: None
        return
    with Progress(
        TextColumn("fitting"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("cost {task.fields[cost]}"),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
    ) as progress:
        task = progress.add_task("fit", total=total, cost="-")
        yield lambda count, best: progress.update(
            task, completed=min(count, total), cost=f"{best:.4g}"
        )


@app.command(
    epilog="""Examples:

\b
  raidlab calibrate --print-jobs --kind ssd > calib.fio
  fio calib.fio --filename=/dev/sdX --output-format=json --output=m.json
  raidlab calibrate m.json --kind ssd --name my-drive --out my-drive.toml
  raidlab run --drive my-drive.toml --level 5 --drives 4 --rw randwrite --iodepth 16
"""
)
@flagset(FORMAT)
def calibrate(
    files: Annotated[
        list[str] | None,
        typer.Argument(help="fio's JSON output (--output-format=json) of the calibration jobs."),
    ] = None,
    print_jobs: Annotated[
        bool,
        opt("--print-jobs", "Print the fio job file that measures a drive (it WRITES to it)."),
    ] = False,
    kind: Annotated[str, opt("--kind", "ssd or hdd (default ssd).")] = "ssd",
    quick: Annotated[
        bool, opt("--quick", "With --print-jobs: one second a job and a 256 MiB fill (tests).")
    ] = False,
    size: Annotated[
        str | None,
        opt(
            "--size",
            "With --print-jobs: only the first SIZE of the target (fio's size=, e.g. 8g; "
            "default: all of it).",
        ),
    ] = None,
    name: Annotated[
        str | None, opt("--name", "The preset's name (default: --out's file name, else my-drive).")
    ] = None,
    out: Annotated[
        Path | None,
        opt("--out", "Write the preset TOML here (default: stdout, the fit table on stderr)."),
    ] = None,
    capacity: Annotated[
        str | None,
        opt(
            "--capacity",
            "The drive's size (bytes, or K/M/G/T = 1024^n); default: what the SSD fill wrote.",
        ),
    ] = None,
    max_evals: Annotated[
        str | None,
        opt(
            "--max-evals",
            f"Simulations of the job set the fit may run (default {MAX_EVALS_DEFAULT}).",
        ),
    ] = None,
    fit_ios: Annotated[
        str | None,
        opt("--fit-ios", f"I/Os each long job is simulated with (default {FIT_IOS_DEFAULT})."),
    ] = None,
    *,
    output_format: str,
) -> None:
    """Measure one drive with fio, fit raidlab's drive model to it, and predict any
    array of it: --print-jobs gives the fio job file; fio's JSON output of it gives a
    drive preset (every figure with its source and the fit error per job) that
    --drive my-drive.toml takes wherever --drive takes a preset."""
    # Long for its signature: calibrate's own options with their help, which typer
    # reads from the parameter list; the checks and the output are functions.
    with user_errors():
        output_format = check_format(output_format)
        if print_jobs:
            if files:
                raise RaidlabError("--print-jobs", "takes no files (it prints the job file)")
            sys.stdout.write(api.calibration_jobs(kind, quick=quick, size=size))
            return
        _check_fit_flags(quick, size, out, output_format)
        preset_name = name or (out.stem if out is not None else "my-drive")
        evals = MAX_EVALS_DEFAULT if max_evals is None else max_evals
        total = int(evals) if str(evals).isdigit() else MAX_EVALS_DEFAULT
        with _progress_bar(total) as on_eval:
            result = api.calibrate(
                files or [],
                kind,
                preset_name,
                capacity=capacity,
                max_evals=max_evals,
                fit_ios=fit_ios,
                on_eval=on_eval,
                labels={**CALIBRATE_FLAGS, "name": "--name" if name else "--out"},
            )
        _write_calibration(result, out, output_format)


def _check_fit_flags(quick: bool, size: str | None, out: Path | None, output_format: str) -> None:
    """The flags of a fit: none that shapes the job file, and a file for CSV."""
    for flag, value in (("--quick", quick or None), ("--size", size)):
        if value is not None:
            raise RaidlabError(flag, "only with --print-jobs (it shapes the job file)")
    if out is not None:
        output_file(out, "--out")
    elif output_format == "csv":
        raise RaidlabError("--format", "csv needs --out (stdout holds the CSV)")


def _write_calibration(result: Any, out: Path | None, output_format: str) -> None:
    """The fitted preset's TOML to ``out`` (else stdout), a poor fit's warning, and the
    fit in the format asked for (the table on stderr when the TOML is on stdout)."""
    toml = preset_toml(result)
    if out is not None:
        out.write_text(toml)
    poor = result.poor_fit()
    if poor is not None:
        typer.echo(f"warning: {poor}", err=True)
    if output_format == "json":
        print_json(calibration_document(result))
        return
    if output_format == "csv":
        write_calibration_csv(result, sys.stdout)
        return
    if out is None:
        sys.stdout.write(toml)
    print_calibration_table(result, stdout if out is not None else stderr)
    if out is not None:
        stdout.print(f"wrote {out}: use it as --drive {out}", highlight=False)
