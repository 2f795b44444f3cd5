"""The fio jobs ``raidlab calibrate`` fits a drive to (``--print-jobs``).

One job file per drive kind, run by real fio against the drive (direct I/O, one job
at a time: every job waits for the one before it). Each job measures something the
drive model has a parameter for:

- SSD: a preconditioning fill (sequential writes over the whole drive: afterwards
  every LBA is mapped, as in a drive in use, and its size gives the capacity); random
  reads at QD 1, 4 and 32 (flash read time tR, firmware time per command, the dies
  working in parallel, the queued-command path); reads of 16 KiB to 1 MiB (the link
  and its per-command cost); sequential writes of 4 KiB to 1 MiB (program time,
  write latency, the write buffer) and a short burst (the buffer's size); last, a
  steady-state phase of random writes after a ramp (garbage collection: the FTL's
  spare area).
- HDD: random reads across the whole span (average seek), in a narrow band (the
  rotation: its latency spread is one revolution) and between the two ends
  (full-stroke seeks), at QD 1, 8 and 32 (the firmware and NCQ); 64 KiB random reads;
  sequential 1 MiB reads at the outer and the inner edge (the media rates), 4 KiB
  sequential reads (read-ahead into the buffer), and sequential and random writes
  (the write cache).

Jobs are ``time_based`` with a ``runtime`` (``--quick``: one second each, for tests),
so the whole file runs in minutes on a real drive; the SSD fill takes as long as
writing the drive once. ``--size`` confines every job to the first SIZE of the target
(a file, or a large drive in a hurry).

The job names are the contract with :mod:`raidlab.frontends.calibrate`: it knows what
each measures from its name and replays the options fio reports in its JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

from raidlab.errors import RaidlabError

KINDS = ("ssd", "hdd")

# Seconds per job: a real drive settles within them; --quick is for tests and for a
# first look. The SSD random-write phase ramps (not measured) before it measures.
RUNTIME_S = 10
RUNTIME_S_QUICK = 1
RAMP_S = 2
STEADY_RUNTIME_S = 60
STEADY_RAMP_S = 60
STEADY_RUNTIME_S_QUICK = 1
# --quick fills this much of the drive instead of all of it (the fill is not fitted).
PRECONDITION_BYTES_QUICK = "256m"


@dataclass(frozen=True)
class CalibrationJob:
    """One job of the calibration file: its fio options (besides [global]'s), what it
    measures (for people), and how the fit treats it. ``fitted`` False: the job sets
    the drive's state (the SSD fill), not a figure. ``exact``: replayed as fio ran it
    (a fixed amount of I/O), not as a steady rate after a warm-up."""

    name: str
    options: dict[str, str]
    measures: str
    fitted: bool = True
    exact: bool = False
    steady: bool = False


def _job(name: str, rw: str, bs: str, qd: int, measures: str, **options: str) -> CalibrationJob:
    return CalibrationJob(name, {"rw": rw, "bs": bs, "iodepth": str(qd), **options}, measures)


SSD_JOBS: tuple[CalibrationJob, ...] = (
    CalibrationJob(
        "ssd-precondition",
        {
            "rw": "write",
            "bs": "128k",
            "iodepth": "32",
            "time_based": "0",
            "runtime": "0",
            "ramp_time": "0",
        },
        "fills the drive once (its size is the drive's capacity); not fitted",
        fitted=False,
    ),
    _job("ssd-randread-4k-qd1", "randread", "4k", 1, "read latency: tR + firmware + link"),
    _job("ssd-randread-4k-qd4", "randread", "4k", 4, "the queued-command path"),
    _job("ssd-randread-4k-qd32", "randread", "4k", 32, "dies in parallel, firmware rate"),
    _job("ssd-randread-16k-qd32", "randread", "16k", 32, "per-command link cost"),
    _job("ssd-randread-64k-qd1", "randread", "64k", 1, "transfer rates at QD 1"),
    _job("ssd-read-128k-qd32", "read", "128k", 32, "the link rate"),
    _job("ssd-read-1m-qd8", "read", "1m", 8, "the link rate, large commands"),
    _job("ssd-write-4k-qd1", "write", "4k", 1, "write latency into the buffer"),
    _job("ssd-write-128k-qd32", "write", "128k", 32, "program rate of all dies"),
    _job("ssd-write-1m-qd4", "write", "1m", 4, "program rate, large commands"),
    CalibrationJob(
        "ssd-write-burst-16m",
        {
            "rw": "write",
            "bs": "128k",
            "iodepth": "32",
            "io_size": "16m",
            "time_based": "0",
            "runtime": "0",
            "ramp_time": "0",
        },
        "a 16 MiB burst: how much the write buffer absorbs",
        exact=True,
    ),
    CalibrationJob(
        "ssd-randwrite-4k-qd32-steady",
        {"rw": "randwrite", "bs": "4k", "iodepth": "32"},
        "steady-state random writes: garbage collection, the FTL's spare area",
        steady=True,
    ),
)

HDD_JOBS: tuple[CalibrationJob, ...] = (
    _job("hdd-randread-4k-qd1", "randread", "4k", 1, "average seek + half a revolution"),
    _job(
        "hdd-randread-4k-qd1-near",
        "randread",
        "4k",
        1,
        "short seeks: latency spread is one revolution (rpm), track-to-track seek",
        size="0.2%",
    ),
    _job(
        "hdd-randread-4k-qd1-ends",
        "randread",
        "4k",
        1,
        "half the seeks full stroke (both ends of the span)",
        random_distribution="zoned:50/1:0/98:50/1",
    ),
    _job("hdd-randread-4k-qd8", "randread", "4k", 8, "NCQ reordering, firmware"),
    _job("hdd-randread-4k-qd32", "randread", "4k", 32, "NCQ reordering, firmware"),
    _job("hdd-randread-64k-qd1", "randread", "64k", 1, "media transfer at QD 1"),
    _job("hdd-read-1m-outer", "read", "1m", 4, "media rate, outer zone", size="2%"),
    _job("hdd-read-1m-inner", "read", "1m", 4, "media rate, inner zone", offset="98%", size="2%"),
    _job("hdd-read-4k-qd1", "read", "4k", 1, "read-ahead hits: firmware + link", size="2%"),
    _job("hdd-write-1m-outer", "write", "1m", 4, "sequential writes, outer zone", size="2%"),
    _job(
        "hdd-write-4k-qd1",
        "write",
        "4k",
        1,
        "write cache (a revolution per write without)",
        size="2%",
    ),
    _job("hdd-randwrite-4k-qd1", "randwrite", "4k", 1, "random writes, write cache"),
)

JOBS: dict[str, tuple[CalibrationJob, ...]] = {"ssd": SSD_JOBS, "hdd": HDD_JOBS}


def check_kind(kind: str, label: str = "--kind") -> str:
    if kind not in KINDS:
        raise RaidlabError(label, f"must be ssd or hdd, got {kind!r}")
    return kind


def check_size(kind: str, size_bytes: int, text: str, label: str = "--size") -> int:
    """``--size`` confines every job to the first SIZE bytes: at least one block of the
    kind's largest job (fio refuses a job whose size is below its block size, and a
    size of 0 means the whole device to fio, not nothing)."""
    from raidlab.units import parse_size

    block_bytes_max = max(parse_size(job.options["bs"]) for job in JOBS[kind])
    if size_bytes < block_bytes_max:
        raise RaidlabError(
            label,
            f"must be at least {block_bytes_max // 1024**2}m, the largest block of the "
            f"{kind} jobs, got {text!r}",
        )
    return size_bytes


def job_by_name(kind: str) -> dict[str, CalibrationJob]:
    return {job.name: job for job in JOBS[kind]}


def job_file_text(kind: str, quick: bool = False, size: str | None = None) -> str:
    """The calibration job file for ``kind`` (``ssd``/``hdd``). ``quick``: one second
    per job and a 256 MiB fill (tests); ``size``: confine every job to the first SIZE
    of the target (fio's ``size=``, e.g. ``1g``)."""
    check_kind(kind)
    runtime = RUNTIME_S_QUICK if quick else RUNTIME_S
    ramp = 0 if quick else RAMP_S
    lines = [
        f"; raidlab calibrate job file, kind {kind}{' (--quick)' if quick else ''}.",
        "; WRITES TO THE TARGET: every byte on it is lost. Run it as",
        ";   fio calib.fio --filename=/dev/sdX --output-format=json --output=m.json",
        f";   raidlab calibrate m.json --kind {kind} --name my-drive --out my-drive.toml",
        "; One job at a time (stonewall); the job names tell raidlab what each measures.",
        "",
        "[global]",
        "ioengine=libaio",
        "direct=1",
        "thread",
        "norandommap",
        "randrepeat=0",
        "time_based",
        f"runtime={runtime}",
        f"ramp_time={ramp}",
        "stonewall",
    ]
    if size is not None:
        lines.append(f"size={size}")
    for job in JOBS[kind]:
        options = dict(job.options)
        if job.steady:
            options["runtime"] = str(STEADY_RUNTIME_S_QUICK if quick else STEADY_RUNTIME_S)
            options["ramp_time"] = str(0 if quick else STEADY_RAMP_S)
        if job.name == "ssd-precondition" and quick:
            options["io_size"] = PRECONDITION_BYTES_QUICK
        lines += ["", f"; {job.measures}", f"[{job.name}]"]
        lines += [f"{key}={value}" for key, value in options.items()]
    return "\n".join(lines) + "\n"
