"""The ``raidlab`` command line: atto, run, presets, reproduce.

Bad input prints one line ``error: <field>: <what is allowed>`` on stderr and exits
with status 2 (the same status click uses for its own usage errors); never a traceback.
Options are taken as text and validated by the front end so every error has the same
shape and names the flag.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import sys
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

from raidlab import api

try:  # typer >= 0.20 vendors click as typer._click; older typer uses click itself
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover
    from click.exceptions import UsageError
from raidlab.atto import DEFAULT_LENGTH, DEFAULT_SIZES, IOS_MAX_DEFAULT
from raidlab.claims import CLAIM_STUDIES, CLAIMS_IOS_DEFAULT
from raidlab.config import Tuning, parse_int, tune_array
from raidlab.engine_cli import register as register_engine_commands
from raidlab.errors import RaidlabError, user_errors
from raidlab.executor import JOBS_MAX, run_scenarios
from raidlab.studies import StudySummary, get_study, summary_dict
from raidlab.units import format_size
from raidlab.workloads import WorkloadRequest

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="raidlab: predict and explain RAID array performance with a deterministic "
    "simulator of host, controller, links, HDDs and SSDs.",
)

FORMATS = ("table", "csv", "json")
# How errors name the canonical keys of the front end when they come from a flag.
ARRAY_FLAGS = {
    "level": "--level",
    "drives": "--drives",
    "stripe_unit": "--stripe-unit",
    "drive": "--drive",
    "controller": "--controller",
    "layout": "--layout",
    "copies": "--copies",
    "spans": "--spans",
    "failed": "--failed",
    "rebuild_rate": "--rebuild-rate",
}
ATTO_FLAGS = {
    "qd": "--qd",
    "sizes": "--sizes",
    "length": "--length",
    "ios_max": "--ios-max",
    "seed": "--seed",
}
RUN_FLAGS = {
    "rw": "--rw",
    "bs": "--bs",
    "iodepth": "--iodepth",
    "numjobs": "--numjobs",
    "rwmixread": "--rwmixread",
    "ios": "--ios",
    "size": "--size",
    "offset": "--offset",
    "warmup_ios": "--warmup-ios",
    "runtime_ns": "--runtime",
}

_stdout = Console(soft_wrap=True)
_stderr = Console(stderr=True, soft_wrap=True)


def _format(value: str) -> str:
    if value not in FORMATS:
        raise RaidlabError("--format", f"must be one of {', '.join(FORMATS)}, got {value!r}")
    return value


def _jobs(value: str | None) -> int | None:
    return None if value is None else parse_int(value, "--jobs", 1, JOBS_MAX)


# Option declarations shared by atto and run. Values are text: the front end parses
# them so that every bad value gets the same one-line error naming the flag.
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config", help="Array TOML file (see docs/config.md); flags override its values."
    ),
]
DriveOption = Annotated[
    str | None, typer.Option("--drive", help="Drive preset, e.g. adata-sp900-128g.")
]
ControllerOption = Annotated[
    str | None, typer.Option("--controller", help="Controller preset (default: hba).")
]
LevelOption = Annotated[
    str | None,
    typer.Option("--level", help="RAID level: 0, 1, 4, 5, 6, 10, 50, 60 or concat (default 0)."),
]
LayoutOption = Annotated[
    str | None,
    typer.Option(
        "--layout",
        help="RAID 5/6/50/60: left-symmetric (default), left-asymmetric, right-symmetric, "
        "right-asymmetric; RAID 10: near (default), far, offset.",
    ),
]
CopiesOption = Annotated[
    str | None,
    typer.Option("--copies", help="RAID 10: copies of each chunk, 2..drives (default 2)."),
]
SpansOption = Annotated[
    str | None,
    typer.Option("--spans", help="RAID 50/60: RAID 5/6 sub-arrays striped together (default 2)."),
]
FailedOption = Annotated[
    str | None, typer.Option("--failed", help="Failed member indices, e.g. 1,3 (degraded run).")
]
RebuildRateOption = Annotated[
    str | None,
    typer.Option(
        "--rebuild-rate",
        help="Rebuild the lowest-index failed member at this rate in bytes/s, e.g. 50M.",
    ),
]
WriteCacheOption = Annotated[
    str | None,
    typer.Option("--write-cache", help="Controller cache: wb (write-back) or wt (through)."),
]
BbuOption = Annotated[
    str | None, typer.Option("--bbu", help="Battery/flash backup unit fitted: yes or no.")
]
ReadAheadOption = Annotated[
    str | None, typer.Option("--read-ahead", help="Controller read-ahead: none, adaptive, always.")
]
OpOption = Annotated[
    str | None,
    typer.Option("--op", help="SSD over-provisioning: share left unpartitioned, e.g. 20%."),
]
PreconditionOption = Annotated[
    str | None,
    typer.Option("--precondition", help="SSD state: fob (fresh) or steady (SNIA PTS)."),
]
FastpathOption = Annotated[
    bool,
    typer.Option(
        "--fastpath",
        help="Controller FastPath (MegaRAID): write-through, no read-ahead, lower per-I/O cost.",
    ),
]
DeletedOption = Annotated[
    str | None,
    typer.Option(
        "--deleted",
        help="Share of the array the host deleted after preconditioning, e.g. 50%.",
    ),
]
TrimPassthroughOption = Annotated[
    str | None,
    typer.Option(
        "--trim-passthrough",
        help="Controller passes TRIM to the SSDs: yes or no (default: the preset's).",
    ),
]
SchedulerOption = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="Host I/O scheduler in front of the array: none (default), mq-deadline or bfq.",
    ),
]
TUNING_FLAGS = {
    "write_cache": "--write-cache",
    "bbu": "--bbu",
    "read_ahead": "--read-ahead",
    "op": "--op",
    "precondition": "--precondition",
    "fastpath": "--fastpath",
    "deleted": "--deleted",
    "trim_passthrough": "--trim-passthrough",
    "scheduler": "--scheduler",
}
DrivesOption = Annotated[
    str | None, typer.Option("--drives", help="Member drives, 1..256 (default 1).")
]
StripeUnitOption = Annotated[
    str | None,
    typer.Option("--stripe-unit", help="Stripe unit, power of two 512..1G (default 64K)."),
]
SeedOption = Annotated[str, typer.Option("--seed", help="Random seed; same seed, same results.")]
JobsOption = Annotated[
    str | None, typer.Option("--jobs", help="Worker processes (default: CPU count).")
]
FormatOption = Annotated[str, typer.Option("--format", help="table, csv or json.")]
ExplainOption = Annotated[
    bool,
    typer.Option(
        "--explain", help="Show resource utilisation, the bottleneck and member I/O per host I/O."
    ),
]


def _opt(flag: str, help_text: str) -> Any:
    return typer.Option(flag, help=help_text)


# The array and tuning flags every simulating command takes, declared once: the
# decorator adds them to a command's signature and hands the command one ArrayFlags.
ARRAY_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("config", ConfigOption),
    ("drive", DriveOption),
    ("controller", ControllerOption),
    ("level", LevelOption),
    ("drives", DrivesOption),
    ("stripe_unit", StripeUnitOption),
    ("layout", LayoutOption),
    ("copies", CopiesOption),
    ("spans", SpansOption),
    ("failed", FailedOption),
    ("rebuild_rate", RebuildRateOption),
    ("write_cache", WriteCacheOption),
    ("bbu", BbuOption),
    ("read_ahead", ReadAheadOption),
    ("op", OpOption),
    ("precondition", PreconditionOption),
    ("fastpath", FastpathOption),
    ("deleted", DeletedOption),
    ("trim_passthrough", TrimPassthroughOption),
    ("scheduler", SchedulerOption),
)


@dataclass(frozen=True)
class ArrayFlags:
    """The array and tuning flags of a command, as text until ``build``."""

    config: Path | None = None
    drive: str | None = None
    controller: str | None = None
    level: str | None = None
    drives: str | None = None
    stripe_unit: str | None = None
    layout: str | None = None
    copies: str | None = None
    spans: str | None = None
    failed: str | None = None
    rebuild_rate: str | None = None
    write_cache: str | None = None
    bbu: str | None = None
    read_ahead: str | None = None
    op: str | None = None
    precondition: str | None = None
    fastpath: bool | None = None
    deleted: str | None = None
    trim_passthrough: str | None = None
    scheduler: str | None = None

    def build(self) -> dict[str, Any]:
        """The scenario's ``array``; errors name the flags."""
        if self.config is None and self.drive is None:
            raise RaidlabError(
                "--drive", "give a drive preset (see `raidlab presets`) or --config FILE.toml"
            )
        array = api.resolve_array(
            self.config,
            level=self.level,
            drives=self.drives,
            stripe_unit=self.stripe_unit,
            drive=self.drive,
            controller=self.controller,
            layout=self.layout,
            copies=self.copies,
            spans=self.spans,
            failed=self.failed,
            rebuild_rate=self.rebuild_rate,
            labels=ARRAY_FLAGS,
        )
        tuning = Tuning(
            write_cache=self.write_cache,
            bbu=self.bbu,
            read_ahead=self.read_ahead,
            op=self.op,
            precondition=self.precondition,
            labels=TUNING_FLAGS,
            fastpath=self.fastpath,
            deleted=self.deleted,
            trim_passthrough=self.trim_passthrough,
            scheduler=self.scheduler,
        )
        return tune_array(array, tuning)


def with_array_flags(command: Callable[..., None]) -> Callable[..., None]:
    """Give ``command`` (which takes a keyword ``flags: ArrayFlags``) the array flags."""
    signature = inspect.signature(command)
    # The module's annotations are strings (postponed evaluation); typer needs the
    # Annotated objects, resolved here where every option alias is defined.
    hints = typing.get_type_hints(command, include_extras=True)
    own = [
        p.replace(annotation=hints.get(name, p.annotation))
        for name, p in signature.parameters.items()
        if name != "flags"
    ]
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=kind)
        for name, kind in ARRAY_OPTIONS
    ]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        flags = ArrayFlags(**{name: kwargs.pop(name, None) for name, _ in ARRAY_OPTIONS})
        command(*args, flags=flags, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=[*own, *added])  # type: ignore[attr-defined]
    return wrapper


@app.command(
    epilog="""Examples:

\b
  raidlab atto --drive adata-sp900-128g --controller intel-h97-rst \\
      --drives 2 --stripe-unit 16K --qd 1,4,16 --sizes 512..32M --length 32G
  raidlab atto --config examples/ssd-raid0.toml --format csv > atto.csv
  raidlab atto --drive adata-sp900-128g --qd 1,4,16 --plot atto.png
  raidlab atto --drive hitachi-deskstar-250g --controller dell-perc6i \\
      --drives 4 --length 512M --explain
"""
)
@with_array_flags
def atto(
    qd: Annotated[str, _opt("--qd", "Queue depths: list 1,4,16 or range 1..256.")] = "1,4",
    sizes: Annotated[
        str, _opt("--sizes", "Transfer sizes: range 512..32M (doubling) or list.")
    ] = DEFAULT_SIZES,
    length: Annotated[str, _opt("--length", "Test file size.")] = DEFAULT_LENGTH,
    ios_max: Annotated[str, _opt("--ios-max", "At most this many measured I/Os per point.")] = str(
        IOS_MAX_DEFAULT
    ),
    seed: SeedOption = "1",
    jobs: JobsOption = None,
    output_format: FormatOption = "table",
    explain: ExplainOption = False,
    plot: Annotated[
        Path | None,
        _opt("--plot", "Also draw the sweep to this file (FILE.png; format from the suffix)."),
    ] = None,
    *,
    flags: ArrayFlags,
) -> None:
    """ATTO Disk Benchmark sweep: for every queue depth and transfer size, a sequential
    write pass then a read pass over a test file at the start of the array."""
    with user_errors():
        output_format = _format(output_format)
        if plot is not None:
            from raidlab.plots import check_figure_path

            check_figure_path(plot, "--plot")
        array = flags.build()
        frame = api.atto_sweep(
            array,
            qd=qd,
            sizes=sizes,
            length=length,
            ios_max=parse_int(ios_max, "--ios-max", 64, 10_000_000),
            seed=seed,
            jobs=_jobs(jobs),
            labels=ATTO_FLAGS,
        )
        explain_points = frame.attrs["explain"]
        figure = None
        if plot is not None:
            from raidlab.plots import plot_atto

            figure = plot_atto(
                frame, plot, _atto_title(frame.attrs["array"], flags.drive, flags.config)
            )
        if output_format == "csv":
            sys.stdout.write(frame.to_csv(index=False))
        elif output_format == "json":
            document: dict[str, Any] = {
                "records": _records(frame),
                "seed": frame.attrs["seed"],
                "array": frame.attrs["array"],
            }
            document["explain"] = explain_points
            if figure is not None:
                document["figure"] = str(figure)
            _print_json(document)
        else:
            _print_table(_atto_table_rows(frame), title="ATTO sweep (MB/s = 10^6 B/s)")
        if figure is not None and output_format != "json":
            (_stderr if output_format == "csv" else _stdout).print(
                f"figure: {figure}", highlight=False, markup=False
            )
        if explain and output_format != "json":
            # The largest transfer at the deepest queue shows where the array saturates.
            qd_max = max(point["qd"] for point in explain_points)
            block_max = max(point["block_bytes"] for point in explain_points)
            for point in explain_points:
                if point["qd"] == qd_max and point["block_bytes"] == block_max:
                    _print_explain(
                        point["explain"],
                        f"explain: {point['op']} {format_size(block_max)} at QD {qd_max}",
                        to_stderr=output_format == "csv",
                    )


@app.command(
    epilog="""Examples:

\b
  raidlab run --drive intel-dc-s3500-80g --rw randread --bs 4K --iodepth 32
  raidlab run --drive intel-dc-s3500-80g --controller linux-md --drives 2 \\
      --rw randrw --rwmixread 70 --bs 4K:55,64K:25,128K:20 --iodepth 16 \\
      --numjobs 4 --explain
  raidlab run --config examples/ssd-raid0.toml --rw write --bs 1M --format json
  raidlab run --drive intel-dc-s3500-80g --controller linux-md --level 5 \\
      --drives 4 --rw randwrite --bs 4K --iodepth 16 --explain
  raidlab run --drive intel-dc-s3500-80g --controller linux-md --level 5 \\
      --drives 4 --failed 1 --rebuild-rate 200M --explain
"""
)
@with_array_flags
def run(
    rw: Annotated[
        str,
        _opt("--rw", "read, write, randread, randwrite, rw, randrw, trim, randtrim, trimwrite."),
    ] = "randread",
    bs: Annotated[str, _opt("--bs", "Block size, or a mix 4K:55,64K:25,128K:20.")] = "4K",
    iodepth: Annotated[str, _opt("--iodepth", "Outstanding I/Os per job.")] = "1",
    numjobs: Annotated[str, _opt("--numjobs", "Independent jobs.")] = "1",
    rwmixread: Annotated[str, _opt("--rwmixread", "Read percentage for rw/randrw.")] = "50",
    ios: Annotated[str | None, _opt("--ios", "Measured host I/Os (default 20000).")] = None,
    runtime: Annotated[
        str | None,
        _opt("--runtime", "Measured simulated time, e.g. 10s, 500ms (stops at --ios too)."),
    ] = None,
    size: Annotated[str | None, _opt("--size", "Region size (default: whole array).")] = None,
    offset: Annotated[str, _opt("--offset", "Region start.")] = "0",
    seed: SeedOption = "1",
    output_format: FormatOption = "table",
    explain: ExplainOption = False,
    *,
    flags: ArrayFlags,
) -> None:
    """A fio-style run: IOPS, MB/s and latency per direction."""
    with user_errors():
        output_format = _format(output_format)
        array = flags.build()
        frame = api.run_workload(
            array,
            WorkloadRequest(
                rw=rw,
                bs=bs,
                rwmixread=rwmixread,
                iodepth=iodepth,
                numjobs=numjobs,
                offset=offset,
                size=size,
                ios=ios,
                runtime_ns=runtime,
                labels=RUN_FLAGS,
            ),
            seed,
            "--seed",
        )
        if output_format == "csv":
            sys.stdout.write(frame.to_csv(index=False))
        elif output_format == "json":
            _print_json(
                {
                    "records": _records(frame),
                    "seed": frame.attrs["seed"],
                    "explain": frame.attrs["explain"],
                    **(
                        {"rebuild": frame.attrs["rebuild"]}
                        if frame.attrs.get("rebuild") is not None
                        else {}
                    ),
                    "scenario": frame.attrs["scenario"],
                }
            )
        else:
            _print_table(_run_table_rows(frame), title=f"{rw} (seed {frame.attrs['seed']})")
        if explain and output_format != "json":
            _print_explain(
                frame.attrs["explain"],
                "explain",
                to_stderr=output_format == "csv",
                rebuild=frame.attrs.get("rebuild"),
            )


@app.command(
    epilog="""Examples:

\b
  raidlab presets
  raidlab presets --format csv
"""
)
def presets(output_format: FormatOption = "table") -> None:
    """List drive and controller presets with their key figures."""
    with user_errors():
        output_format = _format(output_format)
        frame = api.presets()
        if output_format == "csv":
            sys.stdout.write(frame.to_csv(index=False))
        elif output_format == "json":
            _print_json({"records": _records(frame)})
        else:
            table = Table(title="presets (sources: comments in raidlab/presets/*.toml)")
            for column in ("group", "name", "kind", "key_figures"):
                table.add_column(column, overflow="fold")
            for row in frame.itertuples():
                table.add_row(row.group, row.name, row.kind, row.key_figures)
            _stdout.print(table)


@app.command(
    epilog="""Examples:

\b
  raidlab advise --drive intel-dc-s3500-80g --drives 4 --controller megaraid-9361 \\
      --rw randrw --bs 4K --iodepth 32 --tolerate 1
  raidlab advise --drive hitachi-deskstar-250g --drives 6 --rw write --bs 1M \\
      --iodepth 4 --capacity 800G --metric mbps
  raidlab advise --drive intel-dc-s3500-80g --drives 4 --controller megaraid-9361 \\
      --job tests/data/fio/rwmix.fio --tolerate 1
  raidlab advise --drive wd-caviar-blue-500g --drives 4 --controller megaraid-9361 \\
      --workload database --tolerate 1 --metric lat_p99_us
"""
)
def advise(
    drive: DriveOption = None,
    drives: DrivesOption = None,
    controller: ControllerOption = None,
    rw: Annotated[str | None, _opt("--rw", "fio's rw of the workload (randrw).")] = None,
    bs: Annotated[
        str | None, _opt("--bs", "Block size, or a mix 4K:55,64K:25,128K:20 (4K).")
    ] = None,
    iodepth: Annotated[str | None, _opt("--iodepth", "Outstanding I/Os per job (32).")] = None,
    numjobs: Annotated[str | None, _opt("--numjobs", "Independent jobs (1).")] = None,
    rwmixread: Annotated[
        str | None, _opt("--rwmixread", "Read percentage for rw/randrw (70).")
    ] = None,
    job: Annotated[
        Path | None,
        _opt("--job", "A fio job file: its jobs, run together, are the workload."),
    ] = None,
    workload: Annotated[
        str | None,
        _opt(
            "--workload",
            "An IOMeter preset (desktop, database, fileserver) or access specification.",
        ),
    ] = None,
    ios: Annotated[
        str, _opt("--ios", "Measured host I/Os per candidate (per job of --job, at most).")
    ] = "20000",
    capacity: Annotated[str, _opt("--capacity", "Usable capacity needed, e.g. 500G.")] = "0",
    tolerate: Annotated[str, _opt("--tolerate", "Drive failures to survive in every case.")] = "0",
    metric: Annotated[str, _opt("--metric", "Rank by iops, mbps or lat_p99_us.")] = "iops",
    seed: SeedOption = "1",
    jobs: JobsOption = None,
    output_format: FormatOption = "table",
    scheduler: SchedulerOption = None,
) -> None:
    """Simulate the RAID levels, stripe units and cache settings (write-through,
    write-back, FastPath where the controller has it) a set of drives allows for a
    workload, and rank them, with the bottleneck of each and why the winner wins."""
    from raidlab.advise import AccessSpecWorkload, FioJobs
    from raidlab.advise import advise as run_advise
    from raidlab.fio import parse_job_files

    with user_errors():
        output_format = _format(output_format)
        if drive is None:
            raise RaidlabError("--drive", "give a drive preset (see `raidlab presets`)")
        flags = {"--rw": rw, "--bs": bs, "--iodepth": iodepth, "--numjobs": numjobs}
        flags["--rwmixread"] = rwmixread
        given = [flag for flag, value in flags.items() if value is not None]
        if job is not None and workload is not None:
            raise RaidlabError("--job", "give --job or --workload, not both")
        source: WorkloadRequest | Any
        if job is not None or workload is not None:
            own = "--job" if job is not None else "--workload"
            if given:
                raise RaidlabError(
                    own, f"the workload comes from {own}; leave out {', '.join(given)}"
                )
            ios_cap = parse_int(ios, "--ios", 1, 100_000_000)
            if job is not None:
                if not job.is_file():
                    raise RaidlabError("--job", f"no such file: {job}")
                source = FioJobs(parse_job_files([job]), str(job), ios_cap, "--job")
            else:
                source = AccessSpecWorkload(
                    str(workload), ios_cap, {"spec": "--workload", "ios": "--ios"}
                )
        else:
            source = WorkloadRequest(
                rw=rw or "randrw",
                bs=bs or "4K",
                rwmixread=rwmixread or "70",
                iodepth=iodepth or "32",
                numjobs=numjobs or "1",
                ios=ios,
                labels=RUN_FLAGS,
            )
        frame = run_advise(
            drive,
            parse_int(drives or "1", "--drives", 1, 256),
            source,
            controller=controller,
            capacity=capacity,
            tolerate=parse_int(tolerate, "--tolerate", 0, 255),
            metric=metric,
            seed=parse_int(seed, "--seed", 0, 2**64 - 1),
            jobs=_jobs(jobs),
            labels={"capacity": "--capacity", "metric": "--metric", "scheduler": "--scheduler"},
            scheduler=scheduler,
        )
        _print_frame(frame, output_format, "candidate arrays, best first")
        if output_format == "table":
            _stdout.print(frame.attrs["why"])


@app.command(
    epilog="""Examples:

\b
  raidlab reproduce ssd-raid0-atto
  raidlab reproduce hdd-raid0-atto --out figures/hdd --jobs 2
  raidlab reproduce ssd-raid0-atto --format csv > ssd.csv
  raidlab reproduce hdd-raid0-atto --format json > hdd.json
  raidlab reproduce ssd-raid-tuning            # claims: PASS/FAIL per claim
  raidlab reproduce ssd-raid-tuning --strict   # exit 1 if any claim fails
"""
)
def reproduce(
    study: Annotated[str, typer.Argument(help=f"Study: {', '.join(api.study_names())}.")],
    output_format: Annotated[
        str,
        _opt("--format", "table, csv (the per-row comparison) or json (rows, summary, figures)."),
    ] = "table",
    out: Annotated[
        Path | None, _opt("--out", "Figure directory (default out/<study>/; ATTO studies).")
    ] = None,
    jobs: JobsOption = None,
    ios_max: Annotated[
        str | None,
        _opt(
            "--ios-max",
            f"Measured I/Os: at most this many per ATTO point (default {IOS_MAX_DEFAULT}); "
            f"exactly this many per claim run (default {CLAIMS_IOS_DEFAULT}).",
        ),
    ] = None,
    seed: SeedOption = "1",
    strict: Annotated[
        bool, _opt("--strict", "Claim studies: exit with status 1 if any claim fails.")
    ] = False,
) -> None:
    """Simulate every row of a published measurement and report the error: per row,
    MAPE per configuration, overall for prediction and calibration rows, the worst
    row, and the naive 'N x one drive' model for comparison. Claim studies check each
    claim of the article with a tolerance and say which claims are not covered, and why."""
    with user_errors():
        output_format = _format(output_format)
        if study not in CLAIM_STUDIES:
            get_study(study, "STUDY")
            if strict:
                raise RaidlabError(
                    "--strict", f"only for claim studies ({', '.join(CLAIM_STUDIES)})"
                )
        ios = None if ios_max is None else parse_int(ios_max, "--ios-max", 64, 10_000_000)
        out_dir = out if out is not None else Path("out") / study
        frame = api.reproduce(
            study,
            jobs=_jobs(jobs),
            out=out_dir if study not in CLAIM_STUDIES else None,
            ios_max=ios,
            seed=parse_int(seed, "--seed", 0, 2**64 - 1),
        )
        if study in CLAIM_STUDIES:
            _report_claims(frame, output_format)
            if strict and frame.attrs["summary"]["claims_failed"]:
                raise typer.Exit(1)
            return
        summary: StudySummary = frame.attrs["summary"]
        if output_format == "csv":
            sys.stdout.write(frame.to_csv(index=False))
            _print_summary(frame, summary, _stderr)
        elif output_format == "json":
            _print_json(
                {
                    "study": study,
                    "title": frame.attrs.get("title"),
                    "drive": frame.attrs.get("drive"),
                    "controller": frame.attrs.get("controller"),
                    "seed": frame.attrs.get("seed"),
                    "records": _records(frame),
                    "summary": summary_dict(summary),
                    "figures": list(frame.attrs.get("figures", [])),
                }
            )
        else:
            _print_table(_study_table_rows(frame), title=f"{study}: measured vs simulated")
            _print_summary(frame, summary, _stdout)


def _report_claims(frame: pd.DataFrame, output_format: str) -> None:
    """A claim study as a table (checks, then claims not covered), CSV (every row;
    method and summary on stderr) or JSON."""
    if output_format == "json":
        _print_json(
            {
                "study": frame.attrs["study"],
                "title": frame.attrs["title"],
                "method": frame.attrs["method"],
                "seed": frame.attrs["seed"],
                "ios": frame.attrs["ios"],
                "records": _records(frame),
                "coverage": frame.attrs["coverage"],
                "summary": frame.attrs["summary"],
            }
        )
        return
    if output_format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
        _print_claims_summary(frame, _stderr)
        return
    checks = frame[frame["result"] != "not covered"]
    table = Table(title=f"{frame.attrs['study']}: claimed vs simulated")
    for column in ("claim", "variant", "claim (config; metric; condition)", "claimed"):
        table.add_column(column, justify="right" if column == "claimed" else "left")
    for column in ("simulated", "tolerance", "result"):
        table.add_column(column, justify="right" if column == "simulated" else "left")
    for row in checks.itertuples():
        table.add_row(
            row.claim_id,
            row.variant,
            f"{row.config}; {row.metric}; {row.condition}",
            f"{_claim_number(row.claimed)} {row.unit}",
            f"{_claim_number(row.simulated)} {row.unit}",
            row.tolerance,
            row.result,
        )
    _stdout.print(table)
    uncovered = frame[frame["result"] == "not covered"]
    table = Table(title="claims not covered")
    for column in ("claim", "claim (config; metric)", "why"):
        table.add_column(column)
    for row in uncovered.itertuples():
        table.add_row(row.claim_id, f"{row.config}; {row.metric}", row.how)
    _stdout.print(table)
    _print_claims_summary(frame, _stdout)


def _claim_number(value: float) -> str:
    if math.isnan(value):
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) < 1 else f"{value:,.2f}"


def _print_claims_summary(frame: pd.DataFrame, console: Console) -> None:
    summary = frame.attrs["summary"]
    lines = [
        f"study: {frame.attrs['title']}",
        *(f"method: {line}" for line in frame.attrs["method"]),
        f"measured I/Os per run: {frame.attrs['ios']}, seed {frame.attrs['seed']}",
        f"claims: {summary['claims']}; covered {summary['covered']} "
        f"({summary['checks_passed']} of {summary['checks']} checks pass); "
        f"not covered {summary['not_covered']}",
        f"claims passing: {', '.join(summary['claims_passed']) or '-'}; "
        f"failing: {', '.join(summary['claims_failed']) or '-'}",
    ]
    for row in frame[frame["result"] != "not covered"].drop_duplicates("how").itertuples():
        name = f"{row.claim_id} {row.variant}".strip()
        lines.append(f"how {name}: {row.how} ({row.role})")
    for line in lines:
        console.print(line, highlight=False, markup=False)


# --- output ----------------------------------------------------------------------------


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads(frame.to_json(orient="records"))
    return records


def _print_json(document: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(document, indent=2) + "\n")


def _number(value: float | None, digits: int = 1) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:,.{digits}f}"


def _print_table(rows: tuple[list[str], list[list[str]]], title: str) -> None:
    header, body = rows
    table = Table(title=title)
    for index, column in enumerate(header):
        table.add_column(column, justify="left" if index == 0 else "right")
    for row in body:
        table.add_row(*row)
    _stdout.print(table)


def _atto_table_rows(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    header = ["op", "qd", "size", "MB/s", "IOPS", "lat mean us", "lat p99 us"]
    body = [
        [
            row.op,
            str(row.qd),
            format_size(row.block_bytes),
            _number(row.mbps),
            _number(row.iops, 0),
            _number(row.lat_mean_us),
            _number(row.lat_p99_us),
        ]
        for row in frame.itertuples()
    ]
    return header, body


def _run_table_rows(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    header = ["op", "IOPS", "MB/s", "lat mean us", "lat p50 us", "lat p99 us"]
    body = [
        [
            row.op,
            _number(row.iops, 0),
            _number(row.mbps),
            _number(row.lat_mean_us),
            _number(row.lat_p50_us),
            _number(row.lat_p99_us),
        ]
        for row in frame.itertuples()
    ]
    return header, body


def _study_table_rows(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    header = ["config", "op", "qd", "size", "measured MB/s", "simulated MB/s", "error %", "role"]
    body = [
        [
            row.config,
            row.op,
            str(row.qd),
            format_size(row.block_bytes),
            _number(row.measured_mbps),
            _number(row.simulated_mbps),
            _number(row.error_pct),
            row.role,
        ]
        for row in frame.itertuples()
    ]
    return header, body


def _atto_title(array: Mapping[str, Any], drive: str | None, config: Path | None) -> str:
    drive_name = drive or (
        f"the drive of {config.name}" if config is not None else array["drive"]["kind"]
    )
    stripe = (
        f"stripe {format_size(array['stripe_unit_bytes'])}"
        if array["drive_count"] > 1
        else "no striping"
    )
    return (
        f"ATTO sweep: {array['drive_count']} x {drive_name} on "
        f"{array['controller']['name']}, {stripe}"
    )


def _print_explain(
    explain: Mapping[str, Any] | None,
    title: str,
    to_stderr: bool,
    rebuild: Mapping[str, Any] | None = None,
) -> None:
    console = _stderr if to_stderr else _stdout
    console.print(f"[bold]{title}[/bold]", highlight=False)
    for line in api.explain_lines(explain, rebuild):
        console.print(line, highlight=False, markup=False)


def _print_summary(frame: pd.DataFrame, summary: StudySummary, console: Console) -> None:
    table = Table(title="MAPE per configuration (rows with measured 0 MB/s are skipped)")
    for column in ("config", "op", "qd", "role", "rows", "MAPE %"):
        table.add_column(column, justify="left" if column in ("config", "op", "role") else "right")
    for row in summary.per_config.itertuples():
        table.add_row(
            row.config, row.op, str(row.qd), row.role, str(row.rows), _number(row.mape_pct)
        )
    console.print(table)
    calibration_note = _calibration_note(frame.attrs.get("study"))
    lines = [
        f"study: {frame.attrs.get('title')} ({frame.attrs.get('drive')} on "
        f"{frame.attrs.get('controller')})",
        f"calibration rows (single drive{calibration_note}): {summary.rows_calibration}, "
        f"MAPE {_number(summary.mape_calibration_pct)} %",
        f"prediction rows (arrays): {summary.rows_prediction}, "
        f"MAPE {_number(summary.mape_prediction_pct)} %",
        *(
            [
                f"suspect rows ({'; '.join(summary.suspect_reasons) or 'see the study'}): "
                f"{summary.rows_suspect}, MAPE {_number(summary.mape_suspect_pct)} %"
            ]
            if summary.rows_suspect
            else []
        ),
        f"naive 'N x one drive' on {summary.naive_rows} prediction rows: "
        f"MAPE {_number(summary.naive_mape_prediction_pct)} % "
        f"(simulator on the same rows: {_number(summary.model_mape_on_naive_rows_pct)} %)",
    ]
    if summary.rows_skipped:
        lines.append(f"skipped in MAPE (measured 0): {summary.rows_skipped} rows")
    if summary.worst_row is not None:
        worst = summary.worst_row
        lines.append(
            f"worst {worst['role']} row: {worst['config']} {worst['op']} QD "
            f"{worst['qd']} {format_size(int(worst['block_bytes']))}: measured "
            f"{_number(worst['measured_mbps'])}, simulated "
            f"{_number(worst['simulated_mbps'])} MB/s "
            f"({_number(worst['error_pct'])} %)"
        )
    for path in frame.attrs.get("figures", []):
        lines.append(f"figure: {path}")
    for line in lines:
        console.print(line, highlight=False, markup=False)


def _calibration_note(study: str | None) -> str:
    from raidlab.studies import CONTROLLER_CALIBRATION_ROWS

    entries = [entry for entry in CONTROLLER_CALIBRATION_ROWS if entry[0] == study]
    return f" + {len(entries)} listed controller-calibration entries" if entries else ""


# --- fio, CrystalDiskMark, IOMeter, SNIA PTS, trace replay ---------------------------


def _fio_tokens(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split the fio command's arguments into job files and fio options."""
    from raidlab.fio import ALIASES, OPTIONS

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


FIO_FORMATS = ("normal", "json", "json+")


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    epilog="""Examples:

\b
  raidlab fio tests/data/fio/two-groups.fio --drive intel-dc-s3500-80g
  raidlab fio --name=readIOPS --rw=randread --size=1G --bs=4k --direct=1 \\
      --ioengine=libaio --iodepth=16 --drive intel-dc-s3500-80g \\
      --controller linux-md --level 1 --drives 2
  raidlab fio job.fio --drive intel-dc-s3500-80g --output-format=json > out.json
""",
)
@with_array_flags
def fio(
    args: Annotated[
        list[str] | None,
        typer.Argument(help="Job files and/or fio options (--name=job --rw=randread ...)."),
    ] = None,
    seed: Annotated[str, _opt("--seed", "Random seed (a job's randseed= overrides it).")] = "1",
    jobs: JobsOption = None,
    output_format: Annotated[
        str, _opt("--output-format", "normal (fio's text), json or json+ (fio's schema).")
    ] = "normal",
    *,
    flags: ArrayFlags,
) -> None:
    """fio job files (or fio's command-line job form) simulated on an array, reported
    in fio's own formats. Stonewall groups run one after another."""
    from raidlab.fio import parse_command_line, parse_job_files, plan_jobs
    from raidlab.fio_report import fio_json, fio_text

    with user_errors():
        if output_format not in FIO_FORMATS:
            raise RaidlabError(
                "--output-format",
                f"must be one of {', '.join(FIO_FORMATS)}, got {output_format!r}",
            )
        files, options = _fio_tokens(args or [])
        job_file = parse_job_files(files)
        parse_command_line(options, job_file)
        array = flags.build()
        plan = plan_jobs(job_file, array)
        if plan.ignored:
            typer.echo(
                f"note: ignored (no effect in a simulation): {', '.join(plan.ignored)}", err=True
            )
        for note in plan.notes:
            typer.echo(f"note: {note}", err=True)
        seed_value = parse_int(seed, "--seed", 0, 2**64 - 1)
        scenarios = plan.scenarios(array, seed_value)
        results = run_scenarios(scenarios, jobs=_jobs(jobs), description="fio groups")
        document = fio_json(plan, results, array, seed_value, plus=output_format == "json+")
        if output_format == "normal":
            sys.stdout.write(fio_text(document, plan))
        else:
            _print_json(document)


CDM_FLAGS = {"size": "--size", "ios": "--ios", "profile": "--profile"}


@app.command(
    epilog="""Examples:

\b
  raidlab cdm --drive intel-dc-s3500-80g --controller linux-md --level 1 --drives 2
  raidlab cdm --drive intel-dc-s3500-80g --profile nvme --format csv
"""
)
@with_array_flags
def cdm(
    profile: Annotated[str, _opt("--profile", "default or nvme (CrystalDiskMark 8).")] = "default",
    size: Annotated[str, _opt("--size", "Test file size (CDM's 1GiB default).")] = "1G",
    ios: Annotated[str, _opt("--ios", "Measured I/Os of each random test.")] = "20000",
    seed: SeedOption = "1",
    jobs: JobsOption = None,
    output_format: FormatOption = "table",
    *,
    flags: ArrayFlags,
) -> None:
    """CrystalDiskMark's tests (read and write of each) in MB/s (10^6 B/s) and IOPS."""
    from raidlab.suites import cdm as run_cdm

    with user_errors():
        output_format = _format(output_format)
        array = flags.build()
        frame = run_cdm(
            array,
            profile,
            size,
            ios,
            parse_int(seed, "--seed", 0, 2**64 - 1),
            _jobs(jobs),
            CDM_FLAGS,
        )
        _print_frame(frame, output_format, f"CrystalDiskMark ({profile} profile)")


def _print_frame(frame: pd.DataFrame, output_format: str, title: str) -> None:
    if output_format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
        return
    if output_format == "json":
        _print_json(
            {
                "records": _records(frame),
                **{k: v for k, v in frame.attrs.items() if k in ("spec", "summary")},
            }
        )
        return
    header = list(frame.columns)
    body = [
        [
            _number(v, 0 if c == "iops" else 1) if isinstance(v, float) else str(v)
            for c, v in zip(header, row, strict=True)
        ]
        for row in frame.itertuples(index=False)
    ]
    _print_table((header, body), title=title)


@app.command(
    epilog="""Examples:

\b
  raidlab iometer desktop --drive hitachi-deskstar-250g --drives 4
  raidlab iometer "bs=4K/100;read=70;random=100;workers=2;qd=8" --drive intel-dc-s3500-80g
"""
)
@with_array_flags
def iometer(
    spec: Annotated[
        str,
        typer.Argument(
            help="Preset (desktop, database, fileserver) or "
            "bs=SIZE/PCT,...;read=PCT;random=PCT;workers=N;qd=N."
        ),
    ],
    ios: Annotated[str, _opt("--ios", "Measured I/Os, all workers together.")] = "20000",
    size: Annotated[str | None, _opt("--size", "Test region (default: whole array).")] = None,
    seed: SeedOption = "1",
    output_format: FormatOption = "table",
    *,
    flags: ArrayFlags,
) -> None:
    """An IOMeter access specification: IOPS, MB/s and latency per direction and total."""
    from raidlab.suites import iometer as run_iometer

    with user_errors():
        output_format = _format(output_format)
        array = flags.build()
        frame = run_iometer(
            array,
            spec,
            ios,
            size,
            parse_int(seed, "--seed", 0, 2**64 - 1),
            {"spec": "SPEC", "ios": "--ios", "size": "--size"},
        )
        _print_frame(frame, output_format, f"IOMeter: {spec}")


@app.command(
    epilog="""Examples:

\b
  raidlab pts --drive intel-dc-s3500-80g --mixes 100/0,65/35,0/100 --sizes 4K,64K
  raidlab pts --test tp --drive intel-dc-s3500-80g --drives 2 --plot pts.png
"""
)
@with_array_flags
def pts(
    test: Annotated[str, _opt("--test", "iops, tp (throughput) or lat (latency).")] = "iops",
    mixes: Annotated[
        str | None, _opt("--mixes", "R/W mixes, e.g. 100/0,65/35,0/100 (default: PTS's).")
    ] = None,
    sizes: Annotated[
        str | None, _opt("--sizes", "Block sizes, e.g. 4K,64K (default: PTS's).")
    ] = None,
    ios: Annotated[str, _opt("--ios", "Measured I/Os per cell and round.")] = "5000",
    iodepth: Annotated[str, _opt("--iodepth", "Outstanding I/Os per thread.")] = "32",
    numjobs: Annotated[str, _opt("--numjobs", "Threads.")] = "1",
    rounds_max: Annotated[str, _opt("--rounds-max", "At most this many rounds.")] = "25",
    seed: SeedOption = "1",
    jobs: JobsOption = None,
    output_format: FormatOption = "table",
    plot: Annotated[
        Path | None, _opt("--plot", "Draw the tracking variable and the table to FILE.png.")
    ] = None,
    *,
    flags: ArrayFlags,
) -> None:
    """SNIA PTS-style test: rounds of the mix x size matrix until steady state."""
    from raidlab.suites import pts as run_pts
    from raidlab.suites import pts_table

    with user_errors():
        output_format = _format(output_format)
        if plot is not None:
            from raidlab.plots import check_figure_path

            check_figure_path(plot, "--plot")
        array = flags.build()
        frame, summary = run_pts(
            array,
            test,
            [m.strip() for m in mixes.split(",")] if mixes else None,
            [s.strip() for s in sizes.split(",")] if sizes else None,
            parse_int(ios, "--ios", 64, 10_000_000),
            parse_int(iodepth, "--iodepth", 1, 65536),
            parse_int(numjobs, "--numjobs", 1, 1024),
            parse_int(rounds_max, "--rounds-max", 5, 1000),
            parse_int(seed, "--seed", 0, 2**64 - 1),
            _jobs(jobs),
            {"test": "--test", "mixes": "--mixes", "sizes": "--sizes"},
        )
        metric = {"iops": "iops", "tp": "mbps", "lat": "lat_mean_us"}[test]
        table = pts_table(frame, summary, metric)
        figure = None
        if plot is not None:
            from raidlab.plots import plot_pts

            figure = plot_pts(table, summary, metric, plot)
        if output_format == "csv":
            sys.stdout.write(frame.to_csv(index=False))
        elif output_format == "json":
            _print_json(
                {
                    "summary": summary,
                    "table": {
                        format_size(int(b)): {m: float(v) for m, v in row.items()}
                        for b, row in table.iterrows()
                    },
                    "records": _records(frame),
                    **({"figure": str(figure)} if figure else {}),
                }
            )
        else:
            header = ["block", *[str(c) for c in table.columns]]
            body = [
                [
                    format_size(int(b)),
                    *[_number(float(v), 0 if metric == "iops" else 1) for v in row],
                ]
                for b, row in table.iterrows()
            ]
            _print_table(
                (header, body),
                title=f"PTS {test}: {metric} (mean of rounds {summary['window'][0]}-"
                f"{summary['window'][1]})",
            )
            state = "reached" if summary["steady"] else "NOT reached"
            _stdout.print(
                f"steady state {state} after {summary['rounds']} rounds on "
                f"{summary['tracking']}: "
                + ", ".join(f"{v:,.1f}" for v in summary["tracking_values"]),
                highlight=False,
                markup=False,
            )
            if figure is not None:
                _stdout.print(f"figure: {figure}", highlight=False, markup=False)


@app.command(
    epilog="""Examples:

\b
  raidlab replay tests/data/traces/small.msr.csv --format msr --drive intel-dc-s3500-80g
  raidlab replay tests/data/traces/small.blkparse.txt --format blkparse --mode closed \\
      --iodepth 8 --drive hitachi-deskstar-250g --drives 4
"""
)
@with_array_flags
def replay(
    trace: Annotated[Path, typer.Argument(help="Block trace file.")],
    trace_format: Annotated[str, _opt("--format", "msr (MSR Cambridge CSV) or blkparse.")] = "msr",
    mode: Annotated[
        str, _opt("--mode", "open (at trace timestamps) or closed (at --iodepth).")
    ] = "open",
    iodepth: Annotated[str, _opt("--iodepth", "Outstanding requests in closed mode.")] = "1",
    time_scale: Annotated[
        str, _opt("--time-scale", "Open mode: replay this many times faster.")
    ] = "1",
    seed: SeedOption = "1",
    output_format: Annotated[str, _opt("--output-format", "table, csv or json.")] = "table",
    explain: ExplainOption = False,
    *,
    flags: ArrayFlags,
) -> None:
    """Replay a block trace (streamed: any length) on a simulated array."""
    from raidlab.native import simulate_trace
    from raidlab.workloads import run_frame

    with user_errors():
        output_format = _format(output_format)
        if trace_format not in ("msr", "blkparse"):
            raise RaidlabError("--format", f"must be msr or blkparse, got {trace_format!r}")
        if mode not in ("open", "closed"):
            raise RaidlabError("--mode", f"must be open or closed, got {mode!r}")
        if not trace.is_file():
            raise RaidlabError(str(trace), "no such trace file")
        try:
            scale = float(time_scale)
        except ValueError:
            scale = float("nan")
        if not (math.isfinite(scale) and scale > 0):
            raise RaidlabError("--time-scale", f"must be a number > 0, got {time_scale!r}")
        array = flags.build()
        scenario = {"schema": 1, "seed": parse_int(seed, "--seed", 0, 2**64 - 1), "array": array}
        results = simulate_trace(
            scenario,
            str(trace),
            trace_format,
            mode,
            parse_int(iodepth, "--iodepth", 1, 65536),
            scale,
        )
        frame = run_frame(results)
        if output_format == "csv":
            sys.stdout.write(frame.to_csv(index=False))
        elif output_format == "json":
            _print_json({"records": _records(frame), "results": results, "scenario": scenario})
        else:
            _print_table(
                _run_table_rows(frame),
                title=f"replay {trace.name} ({trace_format}, {mode} loop, "
                f"{results.get('sim_time_ns', 0) / 1e9:.3f} s simulated)",
            )
        if explain and output_format != "json":
            _print_explain(results.get("explain"), "explain", to_stderr=output_format == "csv")


# Real arrays (the raidlab-engine binary): create, status, serve, fail, replace, ...
register_engine_commands(app)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: every usage error is `error: ...` and status 2."""
    try:
        result = app(args=list(argv) if argv is not None else None, standalone_mode=False)
    except UsageError as error:
        option = f"{error.param_hint}: " if getattr(error, "param_hint", None) else ""
        message = error.format_message() if not option else error.message
        typer.echo(f"error: {option}{' '.join(str(message).split())}", err=True)
        sys.exit(2)
    except RaidlabError as error:
        typer.echo(f"error: {error}", err=True)
        sys.exit(2)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(130)
    sys.exit(result if isinstance(result, int) else 0)


if __name__ == "__main__":
    main()
