"""Commands that simulate one array: atto, run, replay."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from raidlab import api
from raidlab.cli.flags import (
    ARRAY,
    CLUSTER,
    EXPLAIN,
    FORMAT,
    IOS_MAX,
    JOBS,
    LOG_Y,
    MEMORY_LIMIT,
    MODE,
    ONE_WORKLOAD_DEFAULTS,
    OUTPUT_FORMAT,
    PLOT,
    SEED,
    SIZES,
    WORKLOAD,
    ArrayFlags,
    check_format,
    cluster_scope,
    flagset,
    opt,
    parse_jobs,
)
from raidlab.cli.root import app
from raidlab.errors import RaidlabError, user_errors
from raidlab.frontends.atto import (
    DEFAULT_LENGTH,
    DEFAULT_SIZES,
    IOS_MAX_DEFAULT,
    atto_in_flight,
    parse_ios_max,
)
from raidlab.report.explain import print_explain
from raidlab.report.output import print_json, records, row_records, stderr, stdout
from raidlab.report.tables import atto_table_rows, print_table, run_table_rows
from raidlab.scenario import native
from raidlab.scenario.presets import preset
from raidlab.scenario.tuning import drive_state, drive_state_note
from raidlab.scenario.workloads import WorkloadRequest, steady_fill_ios, write_buffers
from raidlab.units import format_size, parse_size


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
@flagset(
    SIZES,
    IOS_MAX,
    SEED,
    JOBS,
    CLUSTER,
    FORMAT,
    EXPLAIN,
    PLOT,
    LOG_Y,
    ARRAY,
    defaults={"sizes": DEFAULT_SIZES, "ios_max": str(IOS_MAX_DEFAULT)},
)
def atto(
    qd: Annotated[
        str,
        opt(
            "--qd",
            "ATTO queue depths: list 1,4,16 or range 1..256. As in ATTO, depth N keeps "
            "ceil(N/2) I/Os in flight (QD 2 runs one at a time; docs/studies.md).",
        ),
    ] = "1,4",
    length: Annotated[str, opt("--length", "Test file size.")] = DEFAULT_LENGTH,
    *,
    sizes: str,
    ios_max: str,
    seed: str,
    jobs: str | None,
    cluster: str | None,
    output_format: str,
    explain: bool,
    plot: Path | None,
    log_y: bool,
    flags: ArrayFlags,
) -> None:
    """ATTO Disk Benchmark sweep: for every queue depth and transfer size, a sequential
    write pass then a read pass over a test file at the start of the array."""
    with user_errors(), cluster_scope(cluster, jobs):
        output_format = check_format(output_format)
        _check_plot(plot, log_y)
        array = flags.build()
        frame = api.atto_sweep(
            array,
            qd=qd,
            sizes=sizes,
            length=length,
            ios_max=parse_ios_max(ios_max, "--ios-max"),
            seed=seed,
            jobs=parse_jobs(jobs),
            labels={"qd": "--qd", "sizes": "--sizes", "length": "--length", "seed": "--seed"},
        )
        explain_points = frame.attrs["explain"]
        figure = None
        if plot is not None:
            from raidlab.report.plots import plot_atto

            figure = plot_atto(
                frame,
                plot,
                atto_title(frame.attrs["array"], flags.drive, flags.config),
                log_y=log_y,
            )
        _print_atto_sweep(frame, output_format, flags, figure, length, ios_max)
        if figure is not None and output_format != "json":
            (stderr if output_format == "csv" else stdout).print(
                f"figure: {figure}", highlight=False, markup=False
            )
        if explain and output_format != "json":
            _print_atto_explain(explain_points, to_stderr=output_format == "csv")


def _print_atto_sweep(
    frame: Any,
    output_format: str,
    flags: ArrayFlags,
    figure: Path | None,
    length: str,
    ios_max: str,
) -> None:
    """The sweep in ``output_format``: CSV, JSON (with the array, the explain and the
    figure's path) or the table under the setup it simulated."""
    if output_format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
    elif output_format == "json":
        print_json(
            {
                "records": records(frame),
                "seed": frame.attrs["seed"],
                "drive": _drive_name(frame.attrs["array"], flags.drive, flags.config),
                "array": frame.attrs["array"],
                "drive_state": drive_state(frame.attrs["array"]),
                "explain": frame.attrs["explain"],
                **({"figure": str(figure)} if figure is not None else {}),
            }
        )
    else:
        print_simulated(
            setup_line(
                frame.attrs["array"],
                flags.drive,
                flags.config,
                (flags.cache or {}).get("drive"),
            ),
            f"ATTO test file {format_size(parse_size(length, '--length'))} at the "
            f"array's start, at most {ios_max} I/Os per point, "
            f"{atto_depths_line(frame)}",
        )
        print_table(
            atto_table_rows(frame),
            title=f"ATTO sweep (MB/s = 10^6 B/s){drive_state_note(frame.attrs['array'])}",
        )


def _print_atto_explain(explain_points: list[dict[str, Any]], to_stderr: bool) -> None:
    """The explain of the largest transfer at the deepest queue: where the array
    saturates."""
    qd_max = max(point["qd"] for point in explain_points)
    block_max = max(point["block_bytes"] for point in explain_points)
    for point in explain_points:
        if point["qd"] == qd_max and point["block_bytes"] == block_max:
            print_explain(
                point["explain"],
                f"explain: {point['op']} {format_size(block_max)} at QD {qd_max}",
                to_stderr=to_stderr,
            )


def _check_plot(plot: Path | None, log_y: bool) -> None:
    """--plot's file can be written, and --log-y has a figure to draw."""
    if plot is not None:
        from raidlab.report.plots import check_figure_path

        check_figure_path(plot, "--plot")
    elif log_y:
        from raidlab.errors import RaidlabError

        raise RaidlabError("--log-y", "it draws the figure of --plot; give --plot FILE too")


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
@flagset(
    WORKLOAD,
    SEED,
    FORMAT,
    EXPLAIN,
    MEMORY_LIMIT,
    ARRAY,
    defaults={**ONE_WORKLOAD_DEFAULTS, "rw": "randread"},
)
def run(
    *,
    workload: WorkloadRequest,
    seed: str,
    output_format: str,
    explain: bool,
    memory_limit: str,
    flags: ArrayFlags,
) -> None:
    """A fio-style run: IOPS, MB/s and latency per direction."""
    with user_errors():
        output_format = check_format(output_format)
        limit = parse_size(memory_limit, "--memory-limit")
        array = flags.build()
        in_flight = {f"workload.{key}": WORKLOAD[key].flag for key in ("numjobs", "iodepth")}
        with native.memory_limit(limit, in_flight):
            run = api.run_workload_rows(array, workload, seed, "--seed")
        attrs = run.attrs
        if workload.warmup_ios is None:
            note = warmup_note(attrs["scenario"])
            if note:
                stderr.print(f"note: {note}", highlight=False, markup=False)
        if output_format == "csv":
            sys.stdout.write(run.frame().to_csv(index=False))
        elif output_format == "json":
            print_json(
                {
                    "records": row_records(run.rows),
                    "seed": attrs["seed"],
                    "drive": _drive_name(attrs["scenario"]["array"], flags.drive, flags.config),
                    "drive_state": drive_state(attrs["scenario"]["array"]),
                    # "write-back, the controller's default"; null without a cache.
                    "write_policy": (
                        write_policy_text(attrs["scenario"]["array"]["controller"])
                        if attrs["scenario"]["array"]["controller"].get("cache_bytes")
                        else None
                    ),
                    "explain": attrs["explain"],
                    **({"rebuild": attrs["rebuild"]} if attrs.get("rebuild") is not None else {}),
                    "scenario": attrs["scenario"],
                }
            )
        else:
            # The table needs no DataFrame: an interactive run starts without pandas.
            print_simulated(
                setup_line(
                    attrs["scenario"]["array"],
                    flags.drive,
                    flags.config,
                    (flags.cache or {}).get("drive"),
                ),
                workload_line(attrs["scenario"]["workload"]),
            )
            print_table(
                run_table_rows(run.rows),
                title=f"{workload.rw} (seed {attrs['seed']}"
                f"{drive_state_note(attrs['scenario']['array'], ', ')})",
            )
        if explain and output_format != "json":
            print_explain(
                attrs["explain"],
                "explain",
                to_stderr=output_format == "csv",
                rebuild=attrs.get("rebuild"),
            )


def write_policy_text(controller: Mapping[str, Any]) -> str:
    """The controller's write policy and whether it is its preset's default
    ("write-back, the controller's default"), so a figure says which policy it is of."""
    policy = "write-back" if controller.get("write_back") else "write-through"
    try:
        table = preset("controller", str(controller.get("name")), "controller")
    except RaidlabError:
        return policy  # an array file's own controller: no preset default to compare with
    default = "write-back" if table.get("write_back") else "write-through"
    if default == policy:
        return f"{policy}, the controller's default"
    return f"{policy}, not the controller's default {default}"


def _controller_policy(controller: Mapping[str, Any]) -> str:
    """The controller's cache, read-ahead and FastPath as a report states them."""
    if not controller.get("cache_bytes"):
        cache = "no cache"
    else:
        cache = write_policy_text(controller)
    read_ahead_bytes = int(controller.get("read_ahead_bytes") or 0)
    read_ahead = (
        f"read-ahead {controller.get('read_ahead_segments', 1)} x {format_size(read_ahead_bytes)}"
        if read_ahead_bytes
        else "read-ahead off"
    )
    parts = [cache, read_ahead]
    if "fastpath_overhead_ns" in controller:
        parts.append("FastPath on" if controller.get("fastpath") else "FastPath off")
    return ", ".join(parts)


def _drive_name(array: Mapping[str, Any], drive: str | None, config: Path | None) -> str:
    """The drive as the user named it: its preset, the array file's, or its kind."""
    return drive or (
        f"the drive of {config.name}" if config is not None else array["drive"]["kind"]
    )


def setup_line(
    array: Mapping[str, Any],
    drive: str | None,
    config: Path | None,
    cache_drive: str | None = None,
) -> str:
    """One line saying which array was simulated: level, drives and their state, the
    controller and its policy, the stripe unit (a default a user may not know of), and
    the SSD cache tier in front of it when there is one (``cache_drive`` its preset)."""
    drive_spec = array["drive"]
    drive_name = _drive_name(array, drive, config)
    state = drive_state(array)
    drive_notes = [f"state {state}"] if state is not None else []
    if "write_cache" in drive_spec:
        drive_notes.append(f"write cache {'on' if drive_spec['write_cache'] else 'off'}")
    notes = f" ({', '.join(drive_notes)})" if drive_notes else ""
    controller = array["controller"]
    level = array["level"]
    level_name = "concat" if level == "concat" else f"RAID {level}"
    stripe = (
        f", stripe unit {format_size(array['stripe_unit_bytes'])}"
        if array["drive_count"] > 1
        else ""
    )
    members = (
        f"1 x {drive_name}"
        if array["drive_count"] == 1
        else f"{level_name} of {array['drive_count']} x {drive_name}"
    )
    line = f"{members}{notes} on {controller['name']} ({_controller_policy(controller)}){stripe}"
    tier = cache_tier_line(array.get("cache"), cache_drive, config)
    return f"{line}; {tier}" if tier else line


def cache_tier_line(
    cache: Mapping[str, Any] | None, drive: str | None, config: Path | None
) -> str | None:
    """The SSD cache tier in front of the array: its policy, its SSD array and the bytes
    it uses (the controller's "no cache" speaks of the controller's own memory only)."""
    if not cache:
        return None
    ssd = cache["array"]
    name = _drive_name(ssd, drive, config)
    level = ssd["level"]
    level_name = "concat" if level == "concat" else f"RAID {level}"
    members = (
        f"1 x {name}"
        if ssd["drive_count"] == 1
        else f"{level_name} of {ssd['drive_count']} x {name}"
    )
    capacity = cache.get("capacity_bytes")
    size = format_size(capacity) if capacity else "all of it"
    return f"cache tier: {cache['policy']} on {members}, {size} used"


def workload_line(workload: Mapping[str, Any]) -> str:
    """The run's workload as the scenario has it, defaults included."""
    sizes = ",".join(format_size(size) for size, _ in workload["bs"])
    mix = f", {workload['rwmixread']} % reads" if workload["rw"] in ("rw", "randrw") else ""
    runtime = workload.get("runtime_ns")
    limit = f" (or {runtime / 1e9:g} s)" if runtime else ""
    return (
        f"{workload['rw']} {sizes}{mix}, QD {workload['iodepth']} x {workload['numjobs']} "
        f"job(s), {workload['ios']} I/Os{limit} after {workload['warmup_ios']} warm-up I/Os"
    )


def warmup_note(scenario: Mapping[str, Any]) -> str | None:
    """What the default warm-up was lengthened for, when it was: a run that writes to
    SSDs in steady state warms up until it has written twice what the drives' write
    buffers and a write-back cache in front of them hold (steady_fill_ios), so the
    measured writes see them full, as on a drive long in service."""
    array, workload = scenario["array"], scenario["workload"]
    fill = steady_fill_ios(array, workload["rw"], workload["bs"], workload["rwmixread"])
    if not fill or workload["warmup_ios"] != fill:
        return None
    drive_buffers, cache_bytes = write_buffers(array)
    held = f"the drives' write buffers ({format_size(drive_buffers)})"
    if cache_bytes:
        held += f" and the write-back cache ({format_size(cache_bytes)})"
    return (
        f"{fill} warm-up I/Os write twice what {held} hold, so the measured writes find "
        "them full, as in steady state; --warmup-ios N sets another warm-up"
    )


def atto_depths_line(frame: Any) -> str:
    """ATTO's queue depths and the I/Os each keeps in flight (atto_in_flight)."""
    depths = sorted({int(qd) for qd in frame["qd"]})
    return "I/Os in flight per queue depth " + ", ".join(
        f"QD {qd}: {atto_in_flight(qd)}" for qd in depths
    )


def print_simulated(*lines: str) -> None:
    """What was simulated, above a table: defaults a user did not give are visible."""
    for line in lines:
        stdout.print(f"simulated: {line}", highlight=False, markup=False, soft_wrap=True)


def atto_title(array: Mapping[str, Any], drive: str | None, config: Path | None) -> str:
    drive_name = _drive_name(array, drive, config)
    stripe = (
        f"stripe {format_size(array['stripe_unit_bytes'])}"
        if array["drive_count"] > 1
        else "no striping"
    )
    return (
        f"ATTO sweep: {array['drive_count']} x {drive_name} on "
        f"{array['controller']['name']}, {stripe}"
    )


@app.command(
    epilog="""Examples:

\b
  raidlab replay tests/data/traces/small.msr.csv --format msr --drive intel-dc-s3500-80g
  raidlab replay tests/data/traces/small.blkparse.txt --format blkparse --mode closed \\
      --iodepth 8 --drive hitachi-deskstar-250g --drives 4
"""
)
@flagset(
    MODE,
    WORKLOAD.only("iodepth"),
    SEED,
    OUTPUT_FORMAT,
    EXPLAIN,
    ARRAY,
    defaults={"mode": "open", "iodepth": "1", "output_format": "table"},
)
def replay(
    trace: Annotated[Path, typer.Argument(help="Block trace file.")],
    trace_format: Annotated[str, opt("--format", "msr (MSR Cambridge CSV) or blkparse.")] = "msr",
    time_scale: Annotated[
        str, opt("--time-scale", "Open mode: replay this many times faster.")
    ] = "1",
    *,
    mode: str,
    workload: WorkloadRequest,
    seed: str,
    output_format: str,
    explain: bool,
    flags: ArrayFlags,
) -> None:
    """Replay a block trace (streamed: any length) on a simulated array."""
    with user_errors():
        output_format = check_format(output_format, label="--output-format")
        frame = api.replay(
            flags.build(),
            trace,
            trace_format,
            mode,
            workload.iodepth,
            time_scale,
            seed,
            {
                "format": "--format",
                "mode": "--mode",
                "iodepth": "--iodepth",
                "time_scale": "--time-scale",
                "seed": "--seed",
            },
        )
        results, scenario = frame.attrs["results"], frame.attrs["scenario"]
        if output_format == "csv":
            sys.stdout.write(frame.to_csv(index=False))
        elif output_format == "json":
            print_json(
                {
                    "records": records(frame),
                    "results": results,
                    "drive": _drive_name(scenario["array"], flags.drive, flags.config),
                    "drive_state": drive_state(scenario["array"]),
                    "scenario": scenario,
                }
            )
        else:
            print_table(
                run_table_rows(frame),
                title=f"replay {trace.name} ({trace_format}, {mode} loop, "
                f"{results.get('sim_time_ns', 0) / 1e9:.3f} s simulated"
                f"{drive_state_note(scenario['array'], ', ')})",
            )
        if explain and output_format != "json":
            print_explain(results.get("explain"), "explain", to_stderr=output_format == "csv")
