"""fio's terse (``--minimal``) output, derived from fio's JSON document.

One ``;``-separated line per job entry of the JSON (so per group with
``group_reporting``), laid out as fio 3.33's ``show_thread_status_terse_all`` prints
it (fio's HOWTO, "Terse output"):

- version 3 (the default): ``3;fio-3.33;name;groupid;error``, then READ and WRITE
  blocks of 41 fields each (status: KiB, KiB/s, IOPS, runtime ms; slat, clat:
  min/max/mean/stddev in us; 20 clat percentiles ``P%=us``; lat; bw: min, max,
  % of the group's aggregate, mean, stddev), CPU (usr%, sys%, ctx, majf, minf),
  7 I/O depth levels, 10 microsecond and 12 millisecond latency buckets: 121 fields.
- version 2: ``2;name;groupid;error`` and a TRIM block too; 4: v3 plus TRIM;
  5: v4 with the bw sample count and IOPS min/max/mean/stddev/samples per direction.

The values are the JSON's own (``bw`` in KiB/s, ``iops`` truncated as fio's integer
division does), so terse and JSON never disagree. Disk utilisation fields are not
printed: a simulated array has no block device, as fio's null engine has none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.frontends.fio_report import DEFAULT_PERCENTILES

TERSE_VERSIONS = (2, 3, 4, 5)
# fio's FIO_IO_U_LIST_MAX_LEN: the percentile block always has 20 entries.
PERCENTILE_SLOTS = 20
DEPTH_KEYS = ("1", "2", "4", "8", "16", "32", ">=64")
LAT_US_KEYS = ("2", "4", "10", "20", "50", "100", "250", "500", "750", "1000")
LAT_MS_KEYS = ("2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000")


def check_terse_version(value: Any, label: str = "--terse-version") -> int:
    """The terse version as an int, or one clear error naming what fio accepts."""
    try:
        version = int(str(value))
    except ValueError:
        version = -1
    if version not in TERSE_VERSIONS:
        allowed = ", ".join(str(v) for v in TERSE_VERSIONS)
        raise RaidlabError(label, f"must be one of {allowed} (fio's terse versions), got {value!r}")
    return version


def _lat(stat: Mapping[str, Any]) -> list[str]:
    # fio prints min/max as integer us (ns / 1000, truncated) and mean/stddev as %f us.
    if not stat.get("N"):
        return ["0", "0", "0.000000", "0.000000"]
    return [
        str(int(stat["min"]) // 1000),
        str(int(stat["max"]) // 1000),
        f"{float(stat['mean']) / 1000:f}",
        f"{float(stat['stddev']) / 1000:f}",
    ]


def _percentiles(clat: Mapping[str, Any], fallback: Sequence[str]) -> list[str]:
    table = clat.get("percentile") or dict.fromkeys(fallback, 0)
    fields = [f"{float(key):f}%={int(value) // 1000}" for key, value in table.items()]
    fields = fields[:PERCENTILE_SLOTS]
    return fields + ["0%=0"] * (PERCENTILE_SLOTS - len(fields))


def _direction(d: Mapping[str, Any], version: int, fallback: Sequence[str]) -> list[str]:
    fields = [
        str(int(d["io_bytes"]) >> 10),
        str(int(d["bw"])),
        str(int(d["iops"])),
        str(int(d["runtime"])),
        *_lat(d["slat_ns"]),
        *_lat(d["clat_ns"]),
        *_percentiles(d["clat_ns"], fallback),
        *_lat(d["lat_ns"]),
    ]
    if d.get("bw_samples"):
        fields += [
            str(int(d["bw_min"])),
            str(int(d["bw_max"])),
            f"{min(100.0, float(d['bw_agg'])):f}%",
            f"{float(d['bw_mean']):f}",
            f"{float(d['bw_dev']):f}",
        ]
    else:
        fields += ["0", "0", "0.000000%", "0.000000", "0.000000"]
    if version == 5:
        fields.append(str(int(d.get("bw_samples", 0))))
        if d.get("iops_samples"):
            fields += [
                str(int(d["iops_min"])),
                str(int(d["iops_max"])),
                f"{float(d['iops_mean']):f}",
                f"{float(d['iops_stddev']):f}",
                str(int(d["iops_samples"])),
            ]
        else:
            fields += ["0", "0", "0.000000", "0.000000", "0"]
    return fields


def _fallback_percentiles(job: Mapping[str, Any]) -> list[str]:
    """The job's percentile list, for a direction with no I/O (fio lists it with 0s)."""
    for op in ("read", "write", "trim"):
        table = job.get(op, {}).get("clat_ns", {}).get("percentile")
        if table:
            return list(table)
    listed = job.get("job options", {}).get("percentile_list")
    values = [float(p) for p in listed.split(":")] if listed else DEFAULT_PERCENTILES
    return [f"{p:f}" for p in values]


def terse_line(job: Mapping[str, Any], version: int = 3, fio_version: str = "fio-3.33") -> str:
    """One job entry of fio's JSON as fio's terse line (without the newline)."""
    if version == 2:
        fields = ["2", str(job["jobname"]), str(job["groupid"]), str(job["error"])]
    else:
        fields = [str(version), fio_version, str(job["jobname"])]
        fields += [str(job["groupid"]), str(job["error"])]
    fallback = _fallback_percentiles(job)
    directions = ("read", "write") if version == 3 else ("read", "write", "trim")
    for op in directions:
        fields += _direction(job[op], version, fallback)
    fields += [f"{float(job['usr_cpu']):f}%", f"{float(job['sys_cpu']):f}%"]
    fields += [str(int(job[key])) for key in ("ctx", "majf", "minf")]
    fields += [f"{float(job['iodepth_level'].get(k, 0.0)):3.1f}%" for k in DEPTH_KEYS]
    # fio folds its nanosecond buckets into the first microsecond one (stat_calc_lat_nu).
    lat_us = [float(job["latency_us"].get(k, 0.0)) for k in LAT_US_KEYS]
    lat_us[0] += sum(float(v) for v in job.get("latency_ns", {}).values())
    fields += [f"{value:3.2f}%" for value in lat_us]
    fields += [f"{float(job['latency_ms'].get(k, 0.0)):3.2f}%" for k in LAT_MS_KEYS]
    return ";".join(fields)


def fio_terse(document: Mapping[str, Any], version: int = 3) -> str:
    """fio's terse output for a whole JSON document: one line per job entry."""
    fio_version = str(document.get("fio version", "fio-3.33"))
    return "".join(terse_line(job, version, fio_version) + "\n" for job in document["jobs"])
