"""Commands that speak a benchmark's language: fio, cdm, iometer, pts."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from raidlab import api
from raidlab.cli.flags import (
    ARRAY,
    CLUSTER,
    FORMAT,
    IOS_DEFAULT,
    JOBS,
    OUTPUT_FORMAT,
    PLOT,
    SEED,
    SIZES,
    WORKLOAD,
    ArrayFlags,
    Shown,
    check_format,
    cluster_scope,
    flagset,
    opt,
    parse_jobs,
)
from raidlab.cli.root import app
from raidlab.cli.simulate import setup_line
from raidlab.errors import RaidlabError, user_errors
from raidlab.frontends.cdm_text import cdm_text
from raidlab.frontends.fio import (
    parse_command_line,
    parse_job_files,
    plan_jobs,
    select_sections,
)
from raidlab.frontends.fio_terse import check_terse_version
from raidlab.report.output import json_text, output_file, print_json, records, stdout
from raidlab.report.tables import number, print_frame, print_table
from raidlab.scenario.array import parse_int
from raidlab.scenario.tuning import drive_state, drive_state_note
from raidlab.scenario.workloads import WorkloadRequest
from raidlab.units import format_size, parse_size


def fio_tokens(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split the fio command's arguments into job files and fio options."""
    from raidlab.frontends.fio import ALIASES, OPTIONS

    files: list[str] = []
    options: list[str] = []
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        if token.startswith("--"):
            options.append(token)
            key = token[2:].partition("=")[0].lower().replace("-", "_")
            key = ALIASES.get(key, key)
            if (
                "=" not in token
                and OPTIONS.get(key, "flag") != "flag"
                and index < len(args)
                and not args[index].startswith("--")
            ):
                options.append(args[index])
                index += 1
        elif token.startswith("-") and token != "-":
            raise RaidlabError(token, "unknown option (fio options are --key=value)")
        else:
            files.append(token)
    return files, options


def fio_format(output_format: str, minimal: bool, terse_version: str) -> tuple[str, int]:
    """The checked --output-format (``terse`` with --minimal) and terse version."""
    if output_format not in api.FIO_OUTPUT_FORMATS:
        raise RaidlabError(
            "--output-format",
            f"must be one of {', '.join(api.FIO_OUTPUT_FORMATS)}, got {output_format!r}",
        )
    return ("terse" if minimal else output_format), check_terse_version(terse_version)


def fio_report(run: api.FioRun, output_format: str, version: int) -> str:
    if output_format == "normal":
        return run.text()
    if output_format == "terse":
        return run.terse(version)
    return json_text(run.document)


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    epilog="""Examples:

\b
  raidlab fio tests/data/fio/two-groups.fio --drive intel-dc-s3500-80g
  raidlab fio --name=readIOPS --rw=randread --size=1G --bs=4k --direct=1 \\
      --ioengine=libaio --iodepth=16 --drive intel-dc-s3500-80g \\
      --controller linux-md --level 1 --drives 2
  raidlab fio job.fio --drive intel-dc-s3500-80g --output-format=json > out.json
  raidlab fio job.fio --drive intel-dc-s3500-80g --output-format=json --output=out.json
  raidlab fio job.fio --section seqread --minimal --drive intel-dc-s3500-80g
  raidlab fio job.fio --parse-only --drive intel-dc-s3500-80g
""",
)
@flagset(SEED, JOBS, CLUSTER, OUTPUT_FORMAT, ARRAY, defaults={"output_format": "normal"})
def fio(
    args: Annotated[
        list[str] | None,
        typer.Argument(help="Job files and/or fio options (--name=job --rw=randread ...)."),
    ] = None,
    output: Annotated[
        Path | None,
        opt(
            "--output",
            "Write the report to this file, as fio's --output (fio-plot workflows); its "
            "directory must exist (default: stdout).",
        ),
    ] = None,
    section: Annotated[
        list[str] | None,
        opt(
            "--section",
            "Run only this job section (repeatable), as fio's --section (default: every job).",
        ),
    ] = None,
    parse_only: Annotated[
        bool, opt("--parse-only", "Parse and check the jobs, run nothing, print nothing.")
    ] = False,
    minimal: Annotated[
        bool, opt("--minimal", "fio's terse output (same as --output-format=terse).")
    ] = False,
    terse_version: Annotated[
        str, opt("--terse-version", "Terse output version: 2, 3 (fio's default), 4 or 5.")
    ] = "3",
    *,
    seed: str,
    jobs: str | None,
    cluster: str | None,
    output_format: str,
    flags: ArrayFlags,
) -> None:
    """fio job files (or fio's command-line job form) simulated on an array, reported
    in fio's own formats. Stonewall groups run one after another."""
    with user_errors(), cluster_scope(cluster, jobs):
        output_format, version = fio_format(output_format, minimal, terse_version)
        if output is not None:
            output_file(output, "--output")
        files, options = fio_tokens(args or [])
        # Job files first: a malformed job is reported before array flags are checked.
        job_file = parse_command_line(options, parse_job_files(files))
        select_sections(job_file, section or [])
        array = flags.build()
        if parse_only:
            # Checked as a run checks them (against the array, for sizes in %), as fio.
            plan_jobs(job_file, array)
            return
        run = api.fio(
            array,
            files,
            options,
            seed=seed,
            jobs=parse_jobs(jobs),
            plus=output_format == "json+",
            labels={"seed": "--seed"},
            sections=section or (),
        )
        _note_fio_run(run, array, flags)
        report = fio_report(run, output_format, version)
        if output is None:
            sys.stdout.write(report)
        else:
            output.write_text(report)


def _note_fio_run(run: api.FioRun, array: Mapping[str, Any], flags: ArrayFlags) -> None:
    """The run's notes on stderr, with the drive state and the array it ran on; the
    array's setup also goes in the run's document."""
    for note in run.notes:
        typer.echo(f"note: {note}", err=True)
    if drive_state(array) is not None:
        typer.echo(f"note: drive state {drive_state(array)}", err=True)
    # The job file says the workload; the array's policy (FastPath, write cache)
    # comes from presets and flags, so it is stated too.
    setup = setup_line(array, flags.drive, flags.config)
    typer.echo(f"note: array {setup}", err=True)
    # Beside fio's schema, what the array was, for `raidlab report`'s title.
    run.document["raidlab"]["setup"] = setup


CDM_FLAGS = {
    "size": "--size",
    "ios": "--ios",
    "profile": "--profile",
    "seed": "--seed",
    "runs": "--runs",
    "mix": "--mix",
}
CDM_FORMATS = ("table", "csv", "json", "text")
# CDM 8's interval choices, seconds (DiskMarkDlg.cpp intervalTimes); its default 5 s.
CDM_INTERVALS = (0, 1, 3, 5, 10, 30, 60, 180, 300, 600)
# CDM's unit box: the score column shown per test.
CDM_UNITS = {"MB/s": "mbps", "GB/s": "mbps", "IOPS": "iops", "us": "lat_mean_us"}


# The digits CDM's window shows per unit (GB/s needs three to say anything).
CDM_UNIT_DIGITS = {"MB/s": 2, "GB/s": 3, "IOPS": 1, "us": 2}


def cdm_checks(output_format: str, interval: str, unit: str | None) -> int:
    """Check cdm's --format, --interval and --unit; returns the interval in seconds."""
    output_format = check_format(output_format, CDM_FORMATS)
    interval_s = parse_int(interval, "--interval", 0, 600)
    if interval_s not in CDM_INTERVALS:
        allowed = ", ".join(map(str, CDM_INTERVALS))
        raise RaidlabError("--interval", f"must be one of {allowed} s (CDM's), got {interval!r}")
    if unit is not None and unit not in CDM_UNITS:
        raise RaidlabError("--unit", f"must be one of {', '.join(CDM_UNITS)}, got {unit!r}")
    if unit is not None and output_format == "text":
        raise RaidlabError("--unit", "not with --format text (CDM's text has every unit)")
    return interval_s


def cdm_units(frame: Any, unit: str, table: bool) -> Any:
    """The frame with one score column in ``unit``, as CDM's window shows it (in a
    table with CDM's digits; csv and json keep the full float)."""
    if unit not in CDM_UNITS:
        raise RaidlabError("--unit", f"must be one of {', '.join(CDM_UNITS)}, got {unit!r}")
    shown = frame[["test", "op"]].copy()
    value = frame[CDM_UNITS[unit]]
    value = value / 1000 if unit == "GB/s" else value
    shown[unit] = [f"{v:.{CDM_UNIT_DIGITS[unit]}f}" for v in value] if table else value
    shown.attrs.update(frame.attrs)
    return shown


@app.command(
    epilog="""Examples:

\b
  raidlab cdm --drive intel-dc-s3500-80g --controller linux-md --level 1 --drives 2
  raidlab cdm --drive intel-dc-s3500-80g --profile nvme --format csv
  raidlab cdm --drive intel-dc-s3500-80g --profile peak --mix 70 --runs 3 --format text
  raidlab cdm --drive intel-dc-s3500-80g --profile real --unit IOPS
"""
)
@flagset(
    WORKLOAD.only("size", "ios"),
    SEED,
    JOBS,
    CLUSTER,
    FORMAT,
    ARRAY,
    defaults={"size": "1G", "ios": IOS_DEFAULT},
)
def cdm(
    profile: Annotated[
        str,
        opt("--profile", "default, nvme, peak, peak-nvme or real (CrystalDiskMark 8)."),
    ] = "default",
    runs: Annotated[
        str, opt("--runs", "Runs per test, 1-9; the best counts (CrystalDiskMark's count).")
    ] = "5",
    interval: Annotated[
        str,
        opt("--interval", "Seconds between tests (CDM's choices; no effect in a simulation)."),
    ] = "5",
    mix: Annotated[
        str | None,
        opt(
            "--mix",
            "Add CDM's Mix block at this read % (10-90 in steps of 10, e.g. 70; "
            "default: no Mix block).",
        ),
    ] = None,
    unit: Annotated[
        str | None,
        opt("--unit", "One score per test: MB/s, GB/s, IOPS or us (default: every column)."),
    ] = None,
    *,
    workload: WorkloadRequest,
    seed: str,
    jobs: str | None,
    cluster: str | None,
    output_format: str,
    flags: ArrayFlags,
) -> None:
    """CrystalDiskMark's tests (read and write of each) in MB/s (10^6 B/s) and IOPS,
    best of --runs; --format text is CDM's "Save as text" layout."""
    with user_errors(), cluster_scope(cluster, jobs):
        interval_s = cdm_checks(output_format, interval, unit)
        array = flags.build()
        frame = api.cdm(
            array,
            profile,
            workload.size,
            workload.ios,
            seed,
            parse_jobs(jobs),
            CDM_FLAGS,
            runs=runs,
            mix=mix,
        )
        if interval_s != 5:
            # No drive state carries from one simulated test to the next, so the pause
            # CDM leaves for an SLC cache or a hot drive changes nothing here.
            typer.echo(
                "note: --interval has no effect in a simulation (no state between tests)",
                err=True,
            )
        if output_format == "text":
            setup = setup_line(array, flags.drive, flags.config)
            size = parse_size(workload.size, "--size")
            mix_read = None if mix is None else int(mix)
            text = cdm_text(frame, profile, int(runs), size, interval_s, mix_read, setup)
            sys.stdout.write(text)
            return
        if unit is not None:
            frame = cdm_units(frame, unit, output_format == "table")
        title = f"CrystalDiskMark ({profile} profile{drive_state_note(array, ', ')})"
        about = _about("cdm", array, flags) | {"profile": profile, "runs": int(runs)}
        print_frame(frame, output_format, title, about)


@app.command(
    epilog="""Examples:

\b
  raidlab iometer desktop --drive hitachi-deskstar-250g --drives 4
  raidlab iometer "bs=4K/100;read=70;random=100;workers=2;qd=8" --drive intel-dc-s3500-80g
"""
)
@flagset(
    WORKLOAD.only("ios", "size"),
    SEED,
    FORMAT,
    ARRAY,
    defaults={"ios": IOS_DEFAULT, "size": Shown("whole array")},
)
def iometer(
    spec: Annotated[
        str,
        typer.Argument(
            help="Preset (desktop, database, fileserver) or "
            "bs=SIZE/PCT,...;read=PCT;random=PCT;workers=N;qd=N."
        ),
    ],
    *,
    workload: WorkloadRequest,
    seed: str,
    output_format: str,
    flags: ArrayFlags,
) -> None:
    """An IOMeter access specification: IOPS, MB/s and latency per direction and total."""
    with user_errors():
        output_format = check_format(output_format)
        array = flags.build()
        frame = api.iometer(
            array,
            spec,
            workload.ios,
            workload.size,
            seed,
            {"spec": "SPEC", "ios": "--ios", "size": "--size", "seed": "--seed"},
        )
        print_frame(
            frame,
            output_format,
            f"IOMeter: {spec}{drive_state_note(array, '; ')}",
            _about("iometer", array, flags),
        )


PTS_FLAGS = {
    "test": "--test",
    "mixes": "--mixes",
    "sizes": "--sizes",
    "ios": "--ios",
    "iodepth": "--iodepth",
    "numjobs": "--numjobs",
    "rounds_max": "--rounds-max",
    "seed": "--seed",
}


@app.command(
    epilog="""Examples:

\b
  raidlab pts --drive intel-dc-s3500-80g --mixes 100/0,65/35,0/100 --sizes 4K,64K
  raidlab pts --test tp --drive intel-dc-s3500-80g --drives 2 --plot pts.png
"""
)
@flagset(
    SIZES,
    WORKLOAD.only("ios", "iodepth", "numjobs"),
    SEED,
    JOBS,
    CLUSTER,
    FORMAT,
    PLOT,
    ARRAY,
    defaults={"sizes": Shown("PTS's"), "ios": "5000", "iodepth": "32", "numjobs": "1"},
)
def pts(
    test: Annotated[str, opt("--test", "iops, tp (throughput) or lat (latency).")] = "iops",
    mixes: Annotated[
        str | None, opt("--mixes", "R/W mixes, e.g. 100/0,65/35,0/100 (default: PTS's).")
    ] = None,
    rounds_max: Annotated[str, opt("--rounds-max", "At most this many rounds.")] = str(
        api.PTS_ROUNDS_MAX
    ),
    *,
    sizes: str | None,
    workload: WorkloadRequest,
    seed: str,
    jobs: str | None,
    cluster: str | None,
    output_format: str,
    plot: Path | None,
    flags: ArrayFlags,
) -> None:
    """SNIA PTS-style test: rounds of the mix x size matrix until steady state."""
    with user_errors(), cluster_scope(cluster, jobs):
        output_format = check_format(output_format)
        if plot is not None:
            from raidlab.report.plots import check_figure_path

            check_figure_path(plot, "--plot")
        array = flags.build()
        frame = api.pts(
            array,
            test,
            mixes,
            sizes,
            workload.ios,
            workload.iodepth,
            workload.numjobs,
            rounds_max,
            seed,
            parse_jobs(jobs),
            PTS_FLAGS,
        )
        figure = None
        if plot is not None:
            from raidlab.report.plots import plot_pts

            figure = plot_pts(
                frame.attrs["table"], frame.attrs["summary"], frame.attrs["metric"], plot
            )
        _print_pts(frame, test, output_format, array, figure, _about("pts", array, flags))


def _about(command: str, array: dict[str, Any], flags: ArrayFlags) -> dict[str, Any]:
    """What a suite's JSON says of its run, for `raidlab report`: the command, the
    array's one-line description and the array itself."""
    return {
        "command_name": command,
        "setup": setup_line(array, flags.drive, flags.config),
        "drive_state": drive_state(array),
        "array": array,
    }


def _print_pts(
    frame: Any,
    test: str,
    output_format: str,
    array: dict[str, Any],
    figure: Path | None,
    about: dict[str, Any],
) -> None:
    """A PTS test's rounds (csv), summary and table (json), or its table and steady
    state (table)."""
    summary, table, metric = (frame.attrs[key] for key in ("summary", "table", "metric"))
    if output_format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
    elif output_format == "json":
        print_json(
            {
                "summary": summary,
                "table": {
                    format_size(int(b)): {m: float(v) for m, v in row.items()}
                    for b, row in table.iterrows()
                },
                "records": records(frame),
                **({"figure": str(figure)} if figure else {}),
                **about,
            }
        )
    else:
        header = ["block", *[str(c) for c in table.columns]]
        body = [
            [
                format_size(int(b)),
                *[number(float(v), 0 if metric == "iops" else 1) for v in row],
            ]
            for b, row in table.iterrows()
        ]
        print_table(
            (header, body),
            title=f"PTS {test}: {metric} (mean of rounds {summary['window'][0]}-"
            f"{summary['window'][1]}{drive_state_note(array, ', ')})",
        )
        state = "reached" if summary["steady"] else "NOT reached"
        stdout.print(
            f"steady state {state} after {summary['rounds']} rounds on "
            f"{summary['tracking']}: " + ", ".join(f"{v:,.1f}" for v in summary["tracking_values"]),
            highlight=False,
            markup=False,
        )
        if figure is not None:
            stdout.print(f"figure: {figure}", highlight=False, markup=False)
