"""fio job files and command lines -> scenarios with concurrent ``workloads``.

fio's rules, as far as a simulation needs them:

- A job file is INI-like: ``[global]`` sets defaults for every job section after it,
  each other ``[name]`` section is a job. Lines are ``key=value`` or a bare flag
  (``time_based``); ``;`` and ``#`` start comments. The command-line form
  ``--name=job --rw=randread ...`` is the same: options before the first ``--name``
  are global, each ``--name`` starts a job.
- Sizes are fio's: ``4k``, ``4K``, ``4KiB``, ``1m``, ``1g``; with ``kb_base=1024``
  (the default) K, KB and KiB are all 1024. ``kb_base=1000`` makes K and KB 1000
  (KiB stays 1024). ``size`` and ``offset`` may be a percentage of the array.
- Times (``runtime``, ``ramp_time``, ``ss_dur``, ``ss_ramp``) default to seconds;
  suffixes ``us``, ``ms``, ``s``, ``m``, ``h``, ``d``.
- ``stonewall`` (or ``wait_for``) starts a new group: groups run one after another,
  each as its own scenario whose ``workloads`` run concurrently.

Each job section (with its ``numjobs`` clones) becomes one entry of ``workloads``.
Options that change nothing in a simulation are accepted and listed once as ignored;
any other option is an error naming the file and line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raidlab.errors import RaidlabError, read_user_text
from raidlab.frontends.fio_values import (
    SteadyState,
    fio_block,
    fio_field,
    fio_int,
    fio_size_or_pct,
    fio_time_ns,
    parse_bsrange,
    parse_bssplit,
    parse_distribution,
    parse_percentile_list,
    parse_ss,
)
from raidlab.scenario import native
from raidlab.scenario.array import array_capacity_bytes, check_scheduler_tables

FIO_VERSION = "fio-3.33"
# A job without runtime, io_size or number_ios does `size` bytes; above this many I/Os
# per job section the simulation is cut short (with a note).
DEFAULT_IOS_CAP = 1_000_000
# `time_based` runs until the runtime is up; the I/O count is then only a backstop.
TIME_BASED_IOS = 1_000_000_000
# fio's bandwidth/IOPS averaging window (avg_msec = 500) and steady-state sample period.
SAMPLE_INTERVAL_NS = 500_000_000
SS_SAMPLE_INTERVAL_NS = 1_000_000_000

RW_MAP = {
    "read": "read",
    "write": "write",
    "randread": "randread",
    "randwrite": "randwrite",
    "rw": "rw",
    "readwrite": "rw",
    "randrw": "randrw",
    "trim": "trim",
    "randtrim": "randtrim",
    "trimwrite": "trimwrite",
    "randtrimwrite": "randtrimwrite",
}
TRIM_MODES = ("trim", "randtrim", "trimwrite", "randtrimwrite")

# Options that change nothing in a simulation: accepted, reported once.
IGNORED_OPTIONS = frozenset(
    """
    ioengine direct buffered refill_buffers filename directory thread norandommap
    randrepeat invalidate iodepth_batch iodepth_batch_submit iodepth_batch_complete
    iodepth_batch_complete_min iodepth_batch_complete_max iodepth_low gtod_reduce
    lat_percentiles clat_percentiles slat_percentiles description end_fsync
    fsync_on_close create_on_open overwrite unlink write_hist_log disable_lat disable_clat
    disable_slat disable_bw_measurement cpus_allowed cpus_allowed_policy cpumask
    numa_cpu_nodes numa_mem_policy fallocate allow_mounted_write
    buffer_compress_percentage buffer_compress_chunk buffer_pattern zero_buffers
    scramble_buffers dedupe_percentage exitall exitall_on_error continue_on_error
    unit_base eta eta_newline clocksource hugepage_size sqthread_poll fixedbufs
    registerfiles hipri nrfiles file_service_type lockfile
    allow_file_create pre_read use_os_rand random_generator softrandommap
    fadvise_hint sync fsync fdatasync nice prio prioclass
    uid gid stats
    """.split()
)
# fio's names for the same option (alias -> canonical).
ALIASES = {
    "readwrite": "rw",
    "blocksize": "bs",
    "blocksize_range": "bsrange",
    "ba": "blockalign",
    "timeout": "runtime",
    "io_limit": "io_size",
    "wait_for_previous": "stonewall",
    "steadystate": "ss",
    "steadystate_duration": "ss_dur",
    "steadystate_ramp_time": "ss_ramp",
    "random_seed": "randseed",
}
# Canonical option -> kind. "flag" options take an optional boolean value.
OPTIONS: dict[str, str] = {
    "name": "str",
    "rw": "str",
    "bs": "str",
    "bssplit": "str",
    "bsrange": "str",
    "blockalign": "str",
    "rwmixread": "pct",
    "rwmixwrite": "pct",
    "iodepth": "int",
    "numjobs": "int",
    "group_reporting": "flag",
    "new_group": "flag",
    "size": "sizepct",
    "filesize": "sizepct",
    "offset": "sizepct",
    "io_size": "sizepct",
    "number_ios": "int",
    "runtime": "time",
    "time_based": "flag",
    "ramp_time": "time",
    "random_distribution": "str",
    "randseed": "int",
    "stonewall": "flag",
    "wait_for": "str",
    "percentile_list": "str",
    "ss": "str",
    "ss_dur": "time",
    "ss_ramp": "time",
    "kb_base": "int",
    "ioscheduler": "str",
    "write_bw_log": "str",
    "write_lat_log": "str",
    "write_iops_log": "str",
    "log_avg_msec": "int",
    "per_job_logs": "flag",
}
# fio's write_*_log options, by the log they ask for.
LOG_OPTIONS = {"write_bw_log": "bw", "write_lat_log": "lat", "write_iops_log": "iops"}
# fio's ioscheduler= switches the scheduler of the job's device; the names of Linux's
# single-queue block layer map to their blk-mq successors.
IOSCHEDULERS = {
    "none": "none",
    "mq-deadline": "mq-deadline",
    "bfq": "bfq",
    "noop": "none",
    "deadline": "mq-deadline",
    "cfq": "bfq",
}
# fio's JSON spells some options by their long names in "job options".
JSON_NAMES = {"ss": "steadystate", "ss_dur": "steadystate_duration", "ss_ramp": "ss_ramp"}


@dataclass(frozen=True)
class Option:
    """One ``key=value`` as written, with where it came from (for errors)."""

    key: str
    value: str | None
    source: str
    line: int | None

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}" if self.line is not None else self.source


@dataclass
class JobSection:
    name: str
    source: str
    line: int | None
    options: list[Option] = field(default_factory=list)


@dataclass
class JobFile:
    """Parsed job file(s) / command line: global options and the jobs in order."""

    global_options: list[Option] = field(default_factory=list)
    jobs: list[JobSection] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


_SECTION = re.compile(r"^\[(?P<name>[^\]]*)\]\s*$")


def _strip_comment(line: str) -> str:
    for marker in (";", "#"):
        index = line.find(marker)
        if index >= 0:
            line = line[:index]
    return line.strip()


def _option(raw_key: str, value: str | None, source: str, line: int | None) -> Option:
    key = raw_key.strip().lower().replace("-", "_")
    key = ALIASES.get(key, key)
    where = f"{source}:{line}" if line is not None else source
    if key not in OPTIONS and key not in IGNORED_OPTIONS:
        raise RaidlabError(where, f"unknown fio option {raw_key.strip()!r}")
    return Option(key, None if value is None else value.strip(), source, line)


def parse_job_text(text: str, source: str, into: JobFile | None = None) -> JobFile:
    """Parse one job file's text (``source`` names it in errors)."""
    result = into if into is not None else JobFile()
    section: JobSection | None = None
    in_global = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw)
        if not line:
            continue
        match = _SECTION.match(line)
        if match:
            name = match["name"].strip()
            if not name:
                raise RaidlabError(f"{source}:{number}", "empty section name '[]'")
            if name == "global":
                in_global, section = True, None
            else:
                in_global = False
                section = JobSection(name, source, number)
                result.jobs.append(section)
            continue
        key, equals, value = line.partition("=")
        if not key.strip():
            raise RaidlabError(f"{source}:{number}", f"expected key=value, got {raw.strip()!r}")
        option = _option(key, value if equals else None, source, number)
        if in_global:
            result.global_options.append(option)
        elif section is not None:
            section.options.append(option)
        else:
            raise RaidlabError(
                f"{source}:{number}",
                f"option {key.strip()!r} outside a section: start with [global] or [jobname]",
            )
    return result


def parse_job_files(paths: Sequence[str | Path]) -> JobFile:
    """Parse job files in order (like ``fio a.fio b.fio``)."""
    result = JobFile()
    for path in paths:
        path = Path(path)
        text = read_user_text(path, str(path), "cannot read job file")
        before = len(result.jobs)
        parse_job_text(text, str(path), result)
        if len(result.jobs) == before:
            raise RaidlabError(str(path), "no job section: add a [jobname] section")
    return result


def parse_command_line(args: Sequence[str], into: JobFile | None = None) -> JobFile:
    """fio's command-line job form: ``--name=a --rw=read ... --name=b ...``. Options
    before the first ``--name`` are global. ``--key value`` works for valued options."""
    result = into if into is not None else JobFile()
    section: JobSection | None = None
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        if not token.startswith("--"):
            raise RaidlabError("command line", f"expected --option=value, got {token!r}")
        key, equals, value = token[2:].partition("=")
        canonical = ALIASES.get(key.lower().replace("-", "_"), key.lower().replace("-", "_"))
        if (
            not equals
            and OPTIONS.get(canonical, "flag") != "flag"
            and index < len(args)
            and not args[index].startswith("--")
        ):
            value, equals = args[index], "="
            index += 1
        option = _option(key, value if equals else None, f"--{key}", None)
        if option.key == "name":
            if not option.value:
                raise RaidlabError("--name", "needs a job name")
            section = JobSection(option.value, "command line", None)
            result.jobs.append(section)
        elif section is None:
            result.global_options.append(option)
        else:
            section.options.append(option)
    return result


def select_sections(job_file: JobFile, sections: Sequence[str]) -> list[str]:
    """fio's ``--section``: keep only the named job sections (job files and ``--name=``
    jobs alike, as fio 3.33 does); ``[global]`` always applies. A name that matches no
    job is skipped as fio skips it, with a note; when none matches, fio runs nothing
    ("No job(s) defined"), here one error. Returns the notes."""
    if not sections:
        return []
    names = [job.name for job in job_file.jobs]
    unknown = [name for name in dict.fromkeys(sections) if name not in names]
    kept = [job for job in job_file.jobs if job.name in sections]
    if not kept:
        listed = ", ".join(dict.fromkeys(names))
        known = f"the jobs are: {listed}" if listed else "no job file or --name= given"
        raise RaidlabError(
            "--section", f"no job section named {', '.join(map(repr, unknown))} ({known})"
        )
    job_file.jobs[:] = kept
    return [f"--section {name!r}: no such job section, skipped (as fio does)" for name in unknown]


def _flag(option: Option) -> bool:
    if option.value is None or option.value == "":
        return True
    value = option.value.lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise RaidlabError(option.where, f"{option.key}: expected 0 or 1, got {option.value!r}")


# --- jobs -> plan --------------------------------------------------------------------


@dataclass
class PlannedJob:
    """One job section as a workload, with what the report needs."""

    name: str
    group: int
    numjobs: int
    workload: dict[str, Any]
    options: dict[str, str]  # fio's "job options" (the section's own)
    group_reporting: bool
    percentiles: list[float] | None
    steadystate: SteadyState | None
    iodepth: int
    seed: int | None
    notes: list[str] = field(default_factory=list)
    scheduler: str | None = None  # ioscheduler=, mapped to the simulator's name
    scheduler_where: str = ""
    logs: dict[str, str] = field(default_factory=dict)  # "bw"/"lat"/"iops" -> file prefix
    log_avg_ns: int = 0  # log_avg_msec; 0 = fio's per-I/O entries
    per_job_logs: bool = True


@dataclass
class FioPlan:
    jobs: list[PlannedJob]
    groups: list[list[int]]  # indices into jobs, one list per stonewall group
    global_options: dict[str, str]
    ignored: list[str]
    notes: list[str]

    def scenarios(self, array: Mapping[str, Any], seed: int) -> list[dict[str, Any]]:
        """One scenario per group; a job's randseed overrides ``seed`` and its
        ioscheduler the array's I/O scheduler."""
        out = []
        for members in self.groups:
            group_seed = next(
                (self.jobs[i].seed for i in members if self.jobs[i].seed is not None), seed
            )
            group_array = dict(array)
            job = next((self.jobs[i] for i in members if self.jobs[i].scheduler), None)
            if job is not None:
                host = {**array["host"], "scheduler": job.scheduler}
                group_array["host"] = host
                check_scheduler_tables(group_array, "host", job.scheduler_where)
            out.append(
                {
                    "schema": 1,
                    "seed": group_seed,
                    "array": group_array,
                    "workloads": [self.jobs[i].workload for i in members],
                }
            )
        return out


def _mean_block(mix: list[list[int]]) -> float:
    total = sum(weight for _, weight in mix)
    return sum(block * weight for block, weight in mix) / total


def plan_jobs(job_file: JobFile, array: Mapping[str, Any]) -> FioPlan:
    """Validate every job against ``array`` and build its workload."""
    if not job_file.jobs:
        raise RaidlabError("fio", "no jobs: give a job file with a [jobname] section or --name=")
    capacity = array_capacity_bytes(array)
    ignored: list[str] = []
    notes: list[str] = []
    jobs: list[PlannedJob] = []
    groups: list[list[int]] = []
    names: dict[str, int] = {}
    for section in job_file.jobs:
        options: dict[str, Option] = {}
        for option in [*job_file.global_options, *section.options]:
            if option.key in IGNORED_OPTIONS:
                if option.key not in ignored:
                    ignored.append(option.key)
                continue
            options[option.key] = option
        own = {
            JSON_NAMES.get(option.key, option.key): option.value or ""
            for option in section.options
            if option.key not in ("name",)
        }
        job = _plan_job(section, options, capacity, own)
        _check_natively(job.workload, options, array, section)
        stonewall = "stonewall" in options and _flag(options["stonewall"])
        # A global stonewall applies to every job; the first job has nothing to wait for.
        wait_for = options.get("wait_for")
        if wait_for is not None and wait_for.value not in names:
            raise RaidlabError(wait_for.where, f"wait_for: no earlier job named {wait_for.value!r}")
        if not groups or stonewall or wait_for is not None:
            groups.append([])
        if job.scheduler is not None:
            # One device, one scheduler: jobs that run together must agree.
            for other in groups[-1]:
                chosen = jobs[other].scheduler
                if chosen is not None and chosen != job.scheduler:
                    raise RaidlabError(
                        job.scheduler_where,
                        f"ioscheduler: {job.scheduler} while job {jobs[other].name!r} of the "
                        f"same group runs with {chosen} on the same device",
                    )
        job.group = len(groups) - 1
        groups[-1].append(len(jobs))
        names[job.name] = len(jobs)
        notes.extend(job.notes)
        jobs.append(job)
    global_options = {
        JSON_NAMES.get(option.key, option.key): option.value or ""
        for option in job_file.global_options
    }
    return FioPlan(jobs, groups, global_options, ignored, notes)


# The fio option behind each scenario key of a job's workload, for the native side's
# refusals (the region inside the array, a job's share holding its largest block).
FIO_KEYS = {
    "offset_bytes": "offset",
    "size_bytes": "size",
    "bs_write": "bs",
    "runtime_ns": "runtime",
    "warmup_ns": "ramp_time",
    "distribution": "random_distribution",
    "ios": "number_ios",
}


def _check_natively(
    workload: dict[str, Any], options: dict[str, Option], array: Mapping[str, Any], section: Any
) -> None:
    """The native side's rules for one job's workload on ``array``; a refusal names the
    job file's line and option."""
    scenario = {"schema": 1, "seed": 0, "array": dict(array), "workload": workload}
    found = native.validate(scenario)
    if found is None:
        return
    path, message = found
    key = FIO_KEYS.get(path.removeprefix("workload."), path.removeprefix("workload."))
    if key == "size" and "filesize" in options:
        key = "filesize"
    opt = options.get(key)
    where = f"{section.source}:{section.line}" if section.line else f"--name={section.name}"
    raise RaidlabError(opt.where if opt else where, f"{key}: {message}")


def _kb_base(options: Mapping[str, Option]) -> int:
    """fio's kb_base: 1024 (K = KiB, the default) or 1000."""
    if (opt := options.get("kb_base")) is None:
        return 1024
    kb_base = fio_int(opt.value, opt.where, "kb_base", 1000, 1024)
    if kb_base not in (1000, 1024):
        raise RaidlabError(opt.where, "kb_base: must be 1000 or 1024")
    return kb_base


def _rw(options: Mapping[str, Option], where_job: str) -> tuple[str, str]:
    """The job's rw as fio wrote it (its base) and as the scenario names it."""
    opt = options.get("rw")
    rw_text = (opt.value if opt else None) or "read"
    rw_base, _, modifier = rw_text.partition(":")
    rw_base = rw_base.strip().lower()
    if rw_base not in RW_MAP or modifier:
        raise RaidlabError(
            opt.where if opt else where_job,
            f"rw: must be read, write, randread, randwrite, rw, readwrite, randrw, trim, "
            f"randtrim, trimwrite or randtrimwrite, got {rw_text!r}",
        )
    return rw_base, RW_MAP[rw_base]


def _block_mixes(
    options: Mapping[str, Option], rw_base: str, kb_base: int
) -> tuple[list[list[int]], list[list[int]]]:
    """The read and write block-size mixes: bssplit > bsrange > bs (fio's precedence),
    per direction."""
    read_mix: list[list[int]] = [[4096, 1]]
    write_mix: list[list[int]] = [[4096, 1]]
    if (opt := options.get("bs")) is not None and opt.value:
        parts = [part.strip() for part in opt.value.split(",")]
        if len(parts) > 3:
            raise RaidlabError(opt.where, f"bs: at most read,write,trim sizes, got {opt.value!r}")
        if parts[0]:
            read_mix = write_mix = [[fio_block(parts[0], opt.where, "bs", kb_base), 1]]
        if len(parts) > 1 and parts[1]:
            write_mix = [[fio_block(parts[1], opt.where, "bs", kb_base), 1]]
        if len(parts) > 2 and parts[2] and rw_base in TRIM_MODES:
            # The trim size: the simulator draws discards from the write mix.
            write_mix = [[fio_block(parts[2], opt.where, "bs", kb_base), 1]]
    if (opt := options.get("bsrange")) is not None and opt.value:
        parts = [part.strip() for part in opt.value.split(",")]
        if parts[0]:
            read_mix = write_mix = parse_bsrange(parts[0], opt.where, "bsrange", kb_base)
        if len(parts) > 1 and parts[1]:
            write_mix = parse_bsrange(parts[1], opt.where, "bsrange", kb_base)
    if (opt := options.get("bssplit")) is not None and opt.value:
        mixes = parse_bssplit(opt.value, opt.where, "bssplit", kb_base)
        if mixes[0]:
            read_mix = write_mix = mixes[0]
        if len(mixes) > 1 and mixes[1]:
            write_mix = mixes[1]
    return read_mix, write_mix


def _rwmixread(options: Mapping[str, Option]) -> int:
    """Read percentage: the later of rwmixread and rwmixwrite wins, as in fio."""
    rwmixread = 50
    for opt in options.values():  # insertion order: the order the job gave them
        if opt.key in ("rwmixread", "rwmixwrite"):
            value = fio_field(
                (opt.value or "").rstrip("%"), opt.where, opt.key, "workload.rwmixread"
            )
            rwmixread = value if opt.key == "rwmixread" else 100 - value
    return rwmixread


def _region(options: Mapping[str, Option], capacity: int, kb_base: int) -> tuple[int, int, int]:
    """The job's offset, region bytes (filesize, else size, else the rest of the array)
    and the bytes each clone does (io_size, else size: fio's default io_size)."""

    def size_of(opt: Option) -> int:
        return fio_size_or_pct(opt.value, opt.where, opt.key, capacity, kb_base)

    offset = 0
    if (opt := options.get("offset")) is not None and opt.value:
        offset = size_of(opt)
    size_opt = options.get("size")
    region_opt = options.get("filesize") or size_opt
    if region_opt is not None and region_opt.value:
        region = size_of(region_opt)
    else:
        region = max(0, capacity - offset)
    if (opt := options.get("io_size")) is not None and opt.value:
        io_bytes = size_of(opt)
    elif size_opt is not None and size_opt.value:
        io_bytes = size_of(size_opt)
    else:
        io_bytes = region
    return offset, region, io_bytes


def _ios(
    section: JobSection,
    options: Mapping[str, Option],
    ios_per_clone: int,
    numjobs: int,
    notes: list[str],
) -> tuple[int, int | None]:
    """The I/Os of the job's clones together and its runtime: time_based runs until the
    runtime is up; a job that chose its length (number_ios, io_size or runtime) runs it
    whole; otherwise above DEFAULT_IOS_CAP the run is cut short (noted)."""
    if (opt := options.get("number_ios")) is not None:
        ios_per_clone = min(ios_per_clone, fio_int(opt.value, opt.where, "number_ios", 1, 10**12))
    runtime_ns = None
    if (opt := options.get("runtime")) is not None and opt.value:
        runtime_ns = fio_time_ns(opt.value, opt.where, "runtime")
        if runtime_ns < 1:
            # fio: "runtime=0" is no limit, not a length the user chose.
            runtime_ns = None
    chosen = runtime_ns is not None or any(
        (opt := options.get(key)) is not None and bool(opt.value)
        for key in ("number_ios", "io_size")
    )
    ios = ios_per_clone * numjobs
    if (opt := options.get("time_based")) is not None and _flag(opt):
        if runtime_ns is None:
            raise RaidlabError(opt.where, "time_based: needs runtime=")
        return TIME_BASED_IOS, runtime_ns
    if ios > DEFAULT_IOS_CAP and not chosen:
        notes.append(
            f"job {section.name}: {ios:,} I/Os capped at {DEFAULT_IOS_CAP:,} "
            "(set io_size, number_ios or runtime to choose)"
        )
        ios = DEFAULT_IOS_CAP
    return ios, runtime_ns


def _steadystate(options: Mapping[str, Option]) -> SteadyState | None:
    """fio's steady-state stop (ss=, with ss_dur= and ss_ramp=)."""
    if (opt := options.get("ss")) is None or not opt.value:
        if (stray := options.get("ss_dur") or options.get("ss_ramp")) is not None:
            raise RaidlabError(stray.where, f"{stray.key}: only meaningful with ss=")
        return None
    metric, limit, percent = parse_ss(opt.value, opt.where)
    dur_opt = options.get("ss_dur")
    if dur_opt is None or not dur_opt.value:
        raise RaidlabError(opt.where, "ss: needs ss_dur= (the steady-state window)")
    duration_ns = fio_time_ns(dur_opt.value, dur_opt.where, "ss_dur")
    if duration_ns < SS_SAMPLE_INTERVAL_NS:
        raise RaidlabError(dur_opt.where, "ss_dur: must be at least 1s (fio samples once a second)")
    ramp_opt = options.get("ss_ramp")
    ramp_ns = (
        fio_time_ns(ramp_opt.value, ramp_opt.where, "ss_ramp") if ramp_opt and ramp_opt.value else 0
    )
    return SteadyState(metric, limit, percent, duration_ns, ramp_ns)


def _scheduler(
    section: JobSection, options: Mapping[str, Option], notes: list[str]
) -> tuple[str | None, str]:
    """The host scheduler the job asks for (ioscheduler=) and where it asked."""
    if (opt := options.get("ioscheduler")) is None or not opt.value:
        return None, ""
    name = opt.value.strip().lower()
    if name not in IOSCHEDULERS:
        raise RaidlabError(
            opt.where,
            f"ioscheduler: must be one of {', '.join(IOSCHEDULERS)}, got {opt.value!r}",
        )
    scheduler = IOSCHEDULERS[name]
    if scheduler != name:
        notes.append(
            f"job {section.name}: ioscheduler={name} simulated as {scheduler} "
            "(its blk-mq successor)"
        )
    return scheduler, opt.where


# Options of one value each: the parser of its text (value, where) and its value when
# the job leaves it out (or gives it empty, where ``empty`` says so).
SCALAR_OPTIONS: dict[str, tuple[Any, Any, bool]] = {
    "iodepth": (lambda v, w: fio_field(v, w, "iodepth", "workload.iodepth"), 1, False),
    "numjobs": (lambda v, w: fio_field(v, w, "numjobs", "workload.numjobs"), 1, False),
    "ramp_time": (lambda v, w: fio_time_ns(v, w, "ramp_time"), 0, True),
    "random_distribution": (
        lambda v, w: parse_distribution(v, w, "random_distribution"),
        "uniform",
        True,
    ),
    "randseed": (lambda v, w: fio_field(v, w, "randseed", "seed"), None, False),
    "percentile_list": (lambda v, w: parse_percentile_list(v, w, "percentile_list"), None, True),
}


def _scalar(options: Mapping[str, Option], key: str) -> Any:
    """The value of a SCALAR_OPTIONS option of the job."""
    parser, default, empty_is_default = SCALAR_OPTIONS[key]
    opt = options.get(key)
    if opt is None or (empty_is_default and not opt.value):
        return default
    return parser(opt.value, opt.where)


def _mean_request(
    rw: str, rwmixread: int, read_mix: list[list[int]], write_mix: list[list[int]]
) -> float:
    """The mean bytes of the job's requests, reads and writes in their shares."""
    if rw in ("read", "randread"):
        return _mean_block(read_mix)
    if rw in ("write", "randwrite", *TRIM_MODES):
        return _mean_block(write_mix)
    return (rwmixread * _mean_block(read_mix) + (100 - rwmixread) * _mean_block(write_mix)) / 100


def _plan_job(
    section: JobSection, options: dict[str, Option], capacity: int, own: dict[str, str]
) -> PlannedJob:
    kb_base = _kb_base(options)
    where_job = f"{section.source}:{section.line}" if section.line else f"--name={section.name}"
    notes: list[str] = []
    rw_base, rw = _rw(options, where_job)
    read_mix, write_mix = _block_mixes(options, rw_base, kb_base)
    rwmixread = _rwmixread(options)
    iodepth = _scalar(options, "iodepth")
    numjobs = _scalar(options, "numjobs")
    offset, region, io_bytes = _region(options, capacity, kb_base)
    ios_per_clone = max(1, int(io_bytes // _mean_request(rw, rwmixread, read_mix, write_mix)))
    ios, runtime_ns = _ios(section, options, ios_per_clone, numjobs, notes)
    # In fio's order of checking, so a job with two errors is told of the same one.
    warmup_ns = _scalar(options, "ramp_time")
    distribution = _scalar(options, "random_distribution")
    seed = _scalar(options, "randseed")
    percentiles = _scalar(options, "percentile_list")
    steadystate = _steadystate(options)
    scheduler, scheduler_where = _scheduler(section, options, notes)
    group_reporting = (opt := options.get("group_reporting")) is not None and _flag(opt)
    workload = {
        "name": section.name,
        "rw": rw,
        "bs": read_mix,
        "rwmixread": rwmixread,
        "iodepth": iodepth,
        "numjobs": numjobs,
        "offset_bytes": offset,
        "size_bytes": region,
        "ios": ios,
        "warmup_ios": 0,
        "runtime_ns": runtime_ns,
        "distribution": distribution,
        "warmup_ns": warmup_ns,
        "sample_interval_ns": SS_SAMPLE_INTERVAL_NS if steadystate else SAMPLE_INTERVAL_NS,
    }
    logs, log_avg_ns = _logs(options, section.name)
    if logs and log_avg_ns:
        # Samples fine enough for the log's window; the report adds them up again.
        workload["sample_interval_ns"] = math.gcd(workload["sample_interval_ns"], log_avg_ns)
    if write_mix != read_mix:
        workload["bs_write"] = write_mix
    return PlannedJob(
        name=section.name,
        group=0,
        numjobs=numjobs,
        workload=workload,
        options=own,
        group_reporting=group_reporting,
        percentiles=percentiles,
        steadystate=steadystate,
        iodepth=iodepth,
        seed=seed,
        notes=notes,
        scheduler=scheduler,
        scheduler_where=scheduler_where,
        logs=logs,
        log_avg_ns=log_avg_ns,
        per_job_logs=(opt := options.get("per_job_logs")) is None or _flag(opt),
    )


def _logs(options: Mapping[str, Option], name: str) -> tuple[dict[str, str], int]:
    """The job's write_*_log prefixes (fio's default: the job name) and log_avg_msec (ns)."""
    logs: dict[str, str] = {}
    for key, kind in LOG_OPTIONS.items():
        opt = options.get(key)
        if opt is not None:
            prefix = opt.value or name
            if not Path(prefix).parent.is_dir():
                raise RaidlabError(opt.where, f"{key}: the directory of {prefix!r} does not exist")
            logs[kind] = prefix
    avg_ns = 0
    opt = options.get("log_avg_msec")
    if opt is not None and opt.value:
        # fio's bound for the window is a day; 0 is its per-I/O default.
        avg_ns = fio_int(opt.value, opt.where, "log_avg_msec", 0, 86_400_000) * 1_000_000
    return logs, avg_ns
