"""`raidlab sweep SWEEP.toml`: a design space as one table, one row per point.

A sweep file is a base scenario (the tables of an array TOML file, the tuning knobs of
the command line and a fio-style workload) and either a ``[grid]`` of values, every
combination in the order written (the first key varies slowest), or a list of
``[[points]]``. Keys of both are dotted paths into the base: ``array.level``,
``array.drive``, ``host.scheduler``, ``tuning.write_cache``, ``workload.bs``,
``seed``::

    seed = 1

    [array]
    drive = "intel-dc-s3500-80g"
    controller = "linux-md"
    drives = 4

    [workload]
    rw = "randwrite"
    bs = "4K"
    iodepth = 32
    ios = 20000

    [grid]
    "array.level" = [0, 5, 10]
    "workload.iodepth" = [1, 32]

Every point is built and checked before any runs (a bad value names the point and the
key). Results go to PREFIX.csv and PREFIX.parquet: the point's index, a key (a hash of
its whole scenario), the varied values, IOPS, MB/s and latency per direction and the
explain summary. Rows are appended to the CSV as points finish, so a sweep stopped by
Ctrl-C or a lost machine resumes where it stopped: points whose key is already in the
CSV are not run again. At the end both files are written in point order; a resumed
sweep's files are byte for byte those of an uninterrupted one.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import math
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raidlab.errors import RaidlabError, read_user_text
from raidlab.scenario.array import array_request_from_document, build_array, build_scenario
from raidlab.scenario.array import parse_seed as parse_seed_value
from raidlab.scenario.executor import run_scenarios
from raidlab.scenario.tuning import Tuning, tune_array
from raidlab.scenario.workloads import OPS, WorkloadRequest, build_workload, op_metrics

# pandas loads where a frame is built, not with the module: the command line starts
# without it (docs/benchmarks.md, start-up).
if TYPE_CHECKING:
    import pandas as pd

TABLES = ("seed", "array", "host", "tuning", "workload", "grid", "points")
TUNING_KEYS = tuple(f.name for f in fields(Tuning) if f.name != "labels")
# A workload's keys, as `raidlab run` names its flags.
WORKLOAD_KEYS = ("rw", "bs", "rwmixread", "iodepth", "numjobs", "offset", "size", "ios", "runtime")
POINTS_MAX = 1_000_000
# Which directions a `rw` pattern does (fio's names), so the CSV's columns are known
# before the first point finishes.
RW_OPS = {
    "read": ("read",),
    "randread": ("read",),
    "write": ("write",),
    "randwrite": ("write",),
    "rw": ("read", "write"),
    "readwrite": ("read", "write"),
    "randrw": ("read", "write"),
    "trim": ("trim",),
    "randtrim": ("trim",),
    "trimwrite": ("trim", "write"),
}
METRICS = ("iops", "mbps", "lat_mean_us", "lat_p50_us", "lat_p99_us", "member_ios_per_host_io")
SUMMARY_COLUMNS = (
    "iops",
    "mbps",
    "bound",
    "bottleneck",
    "bottleneck_utilisation",
    "stage_longest",
)
TEXT_COLUMNS = ("key", "bound", "bottleneck", "stage_longest")


@dataclass(frozen=True)
class SweepPoint:
    """One point: its index, the values it varies (key -> value as written), its
    scenario and the key that identifies that scenario in an output file."""

    index: int
    values: dict[str, Any]
    scenario: dict[str, Any]
    key: str


@dataclass(frozen=True)
class Sweep:
    source: str
    varied: list[str]
    points: list[SweepPoint]

    def columns(self) -> list[str]:
        """The output's columns: index, key, varied values, totals and summary, then
        each direction's metrics for the directions any point does."""
        ops = {op for point in self.points for op in RW_OPS.get(_rw(point), OPS)}
        per_op = [f"{op}_{metric}" for op in OPS if op in ops for metric in METRICS]
        return ["point", "key", *self.varied, *SUMMARY_COLUMNS, *per_op]


def _rw(point: SweepPoint) -> str:
    return str(point.scenario["workload"].get("rw", ""))


def load_sweep(path: str | Path) -> Sweep:
    """Read and check a sweep file: every point is built (and refused) before any runs."""
    path = Path(path)
    source = str(path)
    text = read_user_text(path, source)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RaidlabError(source, f"malformed TOML: {error}") from None
    for key in document:
        if key not in TABLES:
            raise RaidlabError(f"{source}: {key}", f"unknown key; allowed: {', '.join(TABLES)}")
    grid = document.get("grid")
    listed = document.get("points")
    if (grid is None) == (listed is None):
        raise RaidlabError(source, "give a [grid] of values or a list of [[points]], one of them")
    if grid is not None:
        if not isinstance(grid, Mapping) or not grid:
            raise RaidlabError(f"{source}: grid", "a table of KEY = [values], at least one")
        for key, values in grid.items():
            if not isinstance(values, list) or not values:
                raise RaidlabError(f"{source}: grid.{key}", "a list of at least one value")
        varied = list(grid)
        count = math.prod(len(values) for values in grid.values())
        if count > POINTS_MAX:
            raise RaidlabError(f"{source}: grid", f"{count} points; at most {POINTS_MAX}")
        overrides = [
            dict(zip(varied, combo, strict=True)) for combo in itertools.product(*grid.values())
        ]
    else:
        if (
            not isinstance(listed, list)
            or not listed
            or not all(isinstance(point, Mapping) for point in listed)
        ):
            raise RaidlabError(f"{source}: points", "a list of [[points]] tables, at least one")
        if len(listed) > POINTS_MAX:
            raise RaidlabError(f"{source}: points", f"{len(listed)} points; at most {POINTS_MAX}")
        varied = list(dict.fromkeys(key for point in listed for key in point))
        overrides = [dict(point) for point in listed]
    base = {
        key: document[key]
        for key in ("seed", "array", "host", "tuning", "workload")
        if key in document
    }
    points = []
    for index, values in enumerate(overrides):
        label = f"{source}: point {index} ({_describe(values)})"
        scenario = _scenario(_with(base, values, label), label)
        points.append(SweepPoint(index, values, scenario, _key(scenario)))
    return Sweep(source, varied, points)


def _describe(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in values.items())


def _with(base: Mapping[str, Any], values: Mapping[str, Any], label: str) -> dict[str, Any]:
    """A deep copy of ``base`` with each dotted key of ``values`` set."""
    document: dict[str, Any] = json.loads(json.dumps(base))
    for dotted, value in values.items():
        parts = dotted.split(".")
        if parts[0] not in TABLES[:5] or (parts[0] == "seed") != (len(parts) == 1):
            raise RaidlabError(
                f"{label}: {dotted}",
                "a key of the base: seed, array.KEY, host.KEY, tuning.KEY or workload.KEY",
            )
        table = document
        for part in parts[:-1]:
            table = table.setdefault(part, {})
            if not isinstance(table, dict):
                raise RaidlabError(f"{label}: {dotted}", f"{part} is not a table")
        table[parts[-1]] = value
    return document


def _scenario(document: Mapping[str, Any], label: str) -> dict[str, Any]:
    try:
        request = array_request_from_document(
            {key: document[key] for key in ("array", "host") if key in document}, label
        )
        if request.drive is None:
            raise RaidlabError(
                f"{label}: array.drive", "give a drive preset (see `raidlab presets`)"
            )
        array = build_array(request)
        tuning = _table(document, "tuning", TUNING_KEYS, label)
        array = tune_array(
            array,
            Tuning(
                **{
                    key: (bool(value) if key == "fastpath" else str(value))
                    for key, value in tuning.items()
                },
                labels={key: f"{label}: tuning.{key}" for key in tuning},
            ),
        )
        workload = _table(document, "workload", WORKLOAD_KEYS, label)
        request_values = {("runtime_ns" if k == "runtime" else k): v for k, v in workload.items()}
        built = build_workload(
            WorkloadRequest(
                **{"rw": "randread", **request_values},
                labels={
                    ("runtime_ns" if k == "runtime" else k): f"{label}: workload.{k}"
                    for k in workload
                },
            ),
            array,
        )
        seed = parse_seed_value(document.get("seed", 1), f"{label}: seed")
    except RaidlabError as error:
        if error.field.startswith(label):
            raise
        raise RaidlabError(f"{label}: {error.field}", error.message) from None
    return build_scenario(array, built, seed)


def _table(
    document: Mapping[str, Any], name: str, keys: Sequence[str], label: str
) -> dict[str, Any]:
    table = document.get(name, {})
    if not isinstance(table, Mapping):
        raise RaidlabError(f"{label}: {name}", f"expected a table [{name}]")
    for key in table:
        if key not in keys:
            raise RaidlabError(f"{label}: {name}.{key}", f"unknown key; allowed: {', '.join(keys)}")
    return dict(table)


def _key(scenario: Mapping[str, Any]) -> str:
    """16 hex digits of the SHA-256 of the scenario's canonical JSON: the same scenario
    (whatever the sweep file's wording) has the same key."""
    text = json.dumps(scenario, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def point_row(point: SweepPoint, result: Mapping[str, Any]) -> dict[str, Any]:
    """A point's output row (the columns of ``Sweep.columns`` it has values for)."""
    ops = result.get("ops", {})
    explain = result.get("explain", {})
    row: dict[str, Any] = {"point": point.index, "key": point.key, **point.values}
    row["iops"] = float(sum(op["iops"] for op in ops.values()))
    row["mbps"] = float(sum(op["mbps"] for op in ops.values()))
    row["bound"] = explain.get("bound", "resource")
    row["bottleneck"] = explain.get("bottleneck", "")
    row["bottleneck_utilisation"] = float(explain.get("bottleneck_utilisation", math.nan))
    row["stage_longest"] = explain.get("stage_longest", "")
    for op in OPS:
        if op in ops:
            for metric, value in op_metrics(ops[op]).items():
                row[f"{op}_{metric}"] = value
            member_ios = explain.get("member_ios_per_host_io", {}).get(op, math.nan)
            row[f"{op}_member_ios_per_host_io"] = float(member_ios)
    return row


def _cell(value: Any) -> str:
    """A CSV cell: numbers as Python writes them (repr: read back exactly), lists and
    tables as JSON, nothing for missing or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def run_sweep(
    sweep: Sweep,
    prefix: str | Path,
    jobs: int | None = None,
    executor: Executor | None = None,
    progress: bool = True,
    note: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Run the points of ``sweep`` not yet in PREFIX.csv, then write PREFIX.csv and
    PREFIX.parquet in point order; the whole sweep's rows as a DataFrame."""
    prefix = Path(prefix)
    if prefix.suffix in (".csv", ".parquet"):
        # `--out results.csv` names the CSV, not a prefix of results.csv.csv.
        prefix = prefix.with_suffix("")
    csv_path = prefix.with_name(prefix.name + ".csv")
    parquet_path = prefix.with_name(prefix.name + ".parquet")
    columns = sweep.columns()
    saved, header = _saved_rows(csv_path)
    done = {point.index: saved[point.key] for point in sweep.points if point.key in saved}
    todo = [point for point in sweep.points if point.index not in done]
    if note is not None and done:
        note(
            f"{len(done)} of {len(sweep.points)} points already in {csv_path}; running {len(todo)}"
        )
    with open(csv_path, "a", newline="", encoding="utf-8") as journal:
        writer = csv.writer(journal, lineterminator="\n")
        if journal.tell() and not _ends_with_newline(csv_path):
            journal.write("\n")  # a row cut short by an interruption stays apart
        if header != columns:
            # A new file, or another sweep's columns: rows are read by the header above
            # them, so this run's rows start under their own.
            writer.writerow(columns)
        journal.flush()

        def save(position: int, result: dict[str, Any]) -> None:
            row = point_row(todo[position], result)
            writer.writerow([_cell(row.get(column)) for column in columns])
            journal.flush()

        run_scenarios(
            [point.scenario for point in todo],
            jobs=jobs,
            executor=executor,
            progress=progress,
            description="sweep",
            on_result=save,
        )
    saved, _ = _saved_rows(csv_path)
    rows = []
    for point in sweep.points:
        cells = saved[point.key]
        # The varied values and index are this sweep's; the results are the saved ones.
        own = {"point": str(point.index), "key": point.key}
        own.update({key: _cell(value) for key, value in point.values.items()})
        rows.append([own.get(column, cells.get(column, "")) for column in columns])
    temporary = csv_path.with_name(csv_path.name + ".tmp")
    with open(temporary, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    os.replace(temporary, csv_path)
    frame = _frame(sweep, columns, rows)
    frame.to_parquet(parquet_path, index=False)
    frame.attrs["csv"] = str(csv_path)
    frame.attrs["parquet"] = str(parquet_path)
    return frame


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as file:
        file.seek(-1, os.SEEK_END)
        return file.read(1) == b"\n"


def _saved_rows(path: Path) -> tuple[dict[str, dict[str, str]], list[str] | None]:
    """Rows of an earlier run by key (the last one of a key wins) and the file's last
    header; nothing if there is no file."""
    if not path.exists():
        return {}, None
    rows: dict[str, dict[str, str]] = {}
    with open(path, newline="", encoding="utf-8") as journal:
        header: list[str] | None = None
        for cells in csv.reader(journal):
            if not cells:
                continue
            if cells[0] == "point":
                header = cells
                continue
            if header is None or len(cells) != len(header):
                continue  # a line cut short by an interruption
            row = dict(zip(header, cells, strict=True))
            if row.get("key"):
                rows[row["key"]] = row
    return rows, header


def _frame(sweep: Sweep, columns: list[str], rows: list[list[str]]) -> pd.DataFrame:
    """The rows typed: numbers as numbers (a varied column of numbers only, too)."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=columns)
    for column in columns:
        if column in TEXT_COLUMNS:
            continue
        if column in sweep.varied:
            values = [point.values.get(column) for point in sweep.points]
            numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
            if not numeric:
                continue
        frame[column] = pd.to_numeric(frame[column].replace("", None), errors="coerce")
        if column == "point":
            frame[column] = frame[column].astype("int64")
    return frame
