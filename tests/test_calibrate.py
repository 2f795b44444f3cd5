"""raidlab calibrate: the fio job file, the fit of a drive preset to fio's JSON output
(round trips through the simulator and a real fio run), drive files wherever --drive
is taken, preset sources, and bad input.

The round trips measure a preset with `raidlab fio` on the calibration job file, fit a
drive to that, and check the fitted drive on workloads the job file does not hold
(RAID 0 and RAID 5 arrays, other queue depths and sizes): within 10 % of the preset's.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from conftest import require_tool
from doc_figures import quoted, table_column
from raidlab import api
from raidlab.cli import app
from raidlab.frontends.calibrate import (
    POOR_FIT_RMS_PCT,
    Calibration,
    JobFit,
    preset_toml,
)
from raidlab.frontends.calibrate_jobs import JOBS
from raidlab.frontends.fio import parse_job_text
from raidlab.report.calibrate import calibration_document
from raidlab.scenario.presets.sources import parse_sources
from typer.testing import CliRunner

runner = CliRunner()

# Few simulations of the job set and short jobs: the fits below take seconds of CPU
# each (an HDD's job set simulates faster than an SSD's steady-state writes).
FIT_FLAGS = {
    "ssd": ["--max-evals", "100", "--fit-ios", "800"],
    "hdd": ["--max-evals", "250", "--fit-ios", "800"],
}
HELD_OUT_PCT = 10.0
# Held-out workloads: (level, drives, rw, bs, iodepth); none is a job of the file.
HELD_OUT = [
    (0, 1, "randread", "8K", 16),
    (0, 1, "read", "64K", 2),
    (0, 1, "write", "256K", 8),
    (0, 1, "randwrite", "8K", 4),
    (0, 4, "randread", "4K", 64),
    (0, 4, "read", "1M", 16),
    (0, 4, "write", "1M", 16),
    (5, 4, "randwrite", "4K", 16),
    (5, 4, "read", "256K", 8),
    (5, 4, "randread", "16K", 8),
]


def _fio_binary() -> str:
    return require_tool("fio")


def _calibrate_preset(tmp: Path, kind: str, preset: str, capacity: str) -> Path:
    jobs = tmp / f"{kind}.fio"
    measured = tmp / f"{preset}.json"
    printed = runner.invoke(app, ["calibrate", "--print-jobs", "--kind", kind, "--quick"])
    assert printed.exit_code == 0, printed.output
    jobs.write_text(printed.stdout)
    run = runner.invoke(
        app,
        ["fio", str(jobs), "--drive", preset, "--output-format=json", "--output", str(measured)],
    )
    assert run.exit_code == 0, run.output
    out = tmp / f"fitted-{preset}.toml"
    fit = runner.invoke(
        app,
        [
            "calibrate",
            str(measured),
            "--kind",
            kind,
            "--name",
            f"fitted-{preset}",
            "--capacity",
            capacity,
            "--out",
            str(out),
            *FIT_FLAGS[kind],
        ],
    )
    assert fit.exit_code == 0, fit.output
    print(fit.stdout)
    _check_fit_against_the_docs(kind, fit.stdout)
    return out


# How far the figures docs/calibrate.md quotes may be from the round trips' (percentage
# points): the fits are deterministic; this leaves the docs' rounding and nothing more.
DOC_POINTS = 0.5
DOC_COLUMN = {"ssd": "intel-dc-s3500-80g", "hdd": "hitachi-deskstar-250g"}


def _check_fit_against_the_docs(kind: str, said: str) -> None:
    """The fit's RMS error and worst job as docs/calibrate.md quotes them."""
    match = re.search(r"RMS error ([\d.]+) %, worst (\S+) ([+-][\d.]+) %", said)
    assert match, said
    worst_job = re.escape(match.group(2))
    doc = quoted(
        "docs/calibrate.md",
        rf"(?P<rms>[\d.]+) % \({kind.upper()}, worst `{worst_job}` (?P<worst>[+-][\d.]+) %\)",
    )
    assert abs(doc["rms"] - float(match.group(1))) <= DOC_POINTS, (doc, said)
    assert abs(doc["worst"] - float(match.group(3))) <= DOC_POINTS, (doc, said)


def _check_held_out_against_the_docs(kind: str, errors: list[tuple[str, float]]) -> None:
    """The held-out table of docs/calibrate.md is this round trip's, row by row."""
    doc = list(table_column("docs/calibrate.md", "held-out workload", DOC_COLUMN[kind]).values())
    assert len(doc) == len(errors)
    for (label, measured), quoted_pct in zip(errors, doc, strict=True):
        assert abs(measured - quoted_pct) <= DOC_POINTS, (
            f"docs/calibrate.md quotes {quoted_pct:+.1f} % for {label}; measured {measured:+.1f} %"
        )


def _held_out_errors(preset: str, fitted: Path, ios: int) -> list[tuple[str, float]]:
    errors = []
    for level, drives, rw, bs, iodepth in HELD_OUT:
        iops = []
        for drive in (preset, str(fitted)):
            frame = api.run(
                drive=drive,
                controller="linux-md",
                level=level,
                drives=drives,
                rw=rw,
                bs=bs,
                iodepth=iodepth,
                ios=ios,
            )
            iops.append(float(frame["iops"].sum()))
        label = f"RAID {level} x{drives} {rw} {bs} QD {iodepth}"
        errors.append((label, (iops[1] / iops[0] - 1) * 100))
        print(f"held out: {label}: preset {iops[0]:,.0f} IOPS, fitted {iops[1]:,.0f}", end="")
        print(f" ({errors[-1][1]:+.1f} %)")
    return errors


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("calibrate")


# --- the job file -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["ssd", "hdd"])
def test_the_job_file_parses_in_raidlab_and_in_real_fio(kind: str, tmp_path: Path) -> None:
    text = api.calibration_jobs(kind, quick=True, size="64m")
    assert [job.name for job in parse_job_text(text, "calib.fio").jobs] == [
        job.name for job in JOBS[kind]
    ]
    assert "direct=1" in text and "time_based" in text and "runtime=1" in text
    path = tmp_path / "calib.fio"
    path.write_text(text)
    checked = subprocess.run(
        [_fio_binary(), "--parse-only", str(path)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stderr


def test_the_full_job_file_ramps_the_steady_state_phase_and_fills_the_drive() -> None:
    text = api.calibration_jobs("ssd")
    steady = text.split("[ssd-randwrite-4k-qd32-steady]")[1]
    assert "ramp_time=60" in steady and "runtime=60" in steady
    fill = text.split("[ssd-precondition]")[1].split("[")[0]
    assert "io_size" not in fill and "time_based=0" in fill


# --- round trips through the simulator --------------------------------------------------


def test_an_ssd_fitted_to_its_simulated_measurement_predicts_held_out_arrays(
    workdir: Path,
) -> None:
    fitted = _calibrate_preset(workdir, "ssd", "intel-dc-s3500-80g", "80000000000")
    errors = _held_out_errors("intel-dc-s3500-80g", fitted, ios=8_000)
    _check_held_out_against_the_docs("ssd", errors)
    worst = max(errors, key=lambda item: abs(item[1]))
    assert abs(worst[1]) <= HELD_OUT_PCT, errors


def test_an_hdd_fitted_to_its_simulated_measurement_predicts_held_out_arrays(
    workdir: Path,
) -> None:
    fitted = _calibrate_preset(workdir, "hdd", "hitachi-deskstar-250g", "250000000000")
    table = tomllib.loads(fitted.read_text())["fitted-hitachi-deskstar-250g"]
    assert table["write_cache"] is False  # the study drive's, found from the writes
    errors = _held_out_errors("hitachi-deskstar-250g", fitted, ios=2_000)
    _check_held_out_against_the_docs("hdd", errors)
    worst = max(errors, key=lambda item: abs(item[1]))
    assert abs(worst[1]) <= HELD_OUT_PCT, errors


def test_the_fitted_preset_cites_a_source_and_the_fit_error_for_every_figure(
    workdir: Path,
) -> None:
    fitted = workdir / "fitted-intel-dc-s3500-80g.toml"
    if not fitted.exists():
        fitted = _calibrate_preset(workdir, "ssd", "intel-dc-s3500-80g", "80000000000")
    text = fitted.read_text()
    [entry] = api.preset_details(str(fitted))
    assert entry["kind"] == "ssd"
    assert all(row["source"] for row in entry["parameters"]), entry["parameters"]
    sources = {row["parameter"]: row["source"] for row in entry["parameters"]}
    assert sources["read_page_ns"].startswith("fitted from intel-dc-s3500-80g.json, jobs ")
    assert "ssd-randread-4k-qd1" in sources["read_page_ns"]
    assert sources["ftl.spare_percent"].startswith("fitted from")
    assert sources["page_bytes"].startswith("assumed:")
    for job in JOBS["ssd"]:
        if job.fitted:
            assert f"#   {job.name} " in text
    assert "RMS error" in text


# --- a real measurement -------------------------------------------------------------------


def _direct_io_works(directory: Path) -> bool:
    probe = directory / "direct-probe"
    probe.write_bytes(b"\0" * 4096)
    try:
        fd = os.open(probe, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    except OSError:
        return False
    os.close(fd)
    return True


def test_a_real_fio_run_on_a_file_calibrates(tmp_path: Path) -> None:
    jobs = tmp_path / "calib.fio"
    jobs.write_text(api.calibration_jobs("ssd", quick=True, size="64m"))
    measured = tmp_path / "m.json"
    command = [
        _fio_binary(),
        str(jobs),
        f"--filename={tmp_path / 'target.img'}",
        "--output-format=json",
        f"--output={measured}",
    ]
    if not _direct_io_works(tmp_path):
        # tmpfs and some overlay file systems refuse O_DIRECT: measure through the page
        # cache, and say so.
        print("note: this file system refuses O_DIRECT; fio ran with --direct=0")
        command.insert(2, "--direct=0")
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "file.toml"
    fit = runner.invoke(
        app,
        ["calibrate", str(measured), "--kind", "ssd", "--capacity", "64M", "--out", str(out)]
        + ["--max-evals", "150", "--fit-ios", "500", "--format", "json"],
    )
    assert fit.exit_code == 0, fit.output
    document = json.loads(fit.stdout)
    for job in document["jobs"]:
        print(
            f"real fio {job['job']}: measured {job['measured_iops']:,.0f} IOPS, "
            f"fitted {job['simulated_iops']:,.0f} ({job['error_pct']:+.1f} %)"
        )
    print(f"real fio: RMS fit error {document['rms_error_pct']:.1f} %")
    assert math.isfinite(document["rms_error_pct"])
    assert len(document["jobs"]) == sum(job.fitted for job in JOBS["ssd"])
    # The fitted file is a drive wherever --drive is taken.
    run = runner.invoke(
        app, ["run", "--drive", str(out), "--rw", "randread", "--ios", "2000", "--format", "json"]
    )
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout)["records"][0]["iops"] > 0


# --- drive files ------------------------------------------------------------------------------

DRIVE_FILE = """\
[my-ssd]
kind = "ssd"
description = "a # in a string is no comment"
capacity_bytes = 80_000_000_000     # datasheet: 80 GB
link_rate_bytes_per_s = 340_000_000 # fitted from m.json, jobs ssd-read-1m-qd8
command_overhead_ns = 10_000        # assumed: firmware
channels = 6
dies_per_channel = 1
page_bytes = 16_384
read_page_ns = 70_000
program_page_ns = 983_000
channel_rate_bytes_per_s = 200_000_000
write_buffer_bytes = 16_777_216
read_buffer = true
read_retry_percent = 4.0
"""


def test_a_drive_file_is_a_drive_in_an_array_file_next_to_it(tmp_path: Path) -> None:
    (tmp_path / "my-ssd.toml").write_text(DRIVE_FILE)
    config = tmp_path / "array.toml"
    config.write_text('[array]\nlevel = 0\ndrives = 2\ndrive = "my-ssd.toml"\n')
    by_file = api.resolve_array(config)
    by_preset = api.resolve_array(drive="intel-dc-s3500-80g", drives=2)
    # The file holds the S3500 80 GB's figures without its FTL table.
    without_ftl = {key: value for key, value in by_preset["drive"].items() if key != "ftl"}
    assert {key: value for key, value in by_file["drive"].items() if key != "ftl"} == without_ftl
    assert not by_file["drive"].get("ftl") and by_file["drive_count"] == 2


def test_a_directory_as_drive_file_says_it_is_a_directory(tmp_path: Path) -> None:
    # It used to say "no such drive file" of a directory that exists.
    result = runner.invoke(app, ["run", "--drive", str(tmp_path), "--rw", "randread"])
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"error: --drive: {tmp_path} is a directory; give a drive preset name or a "
        "drive's .toml file"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "error: --drive: no such drive file: "),
        ("x = [", "malformed TOML"),
        ('[a]\nkind = "ssd"\n[b]\nkind = "hdd"\n', "found tables: a, b"),
        (DRIVE_FILE.replace("70_000", "-5"), "my-ssd.read_page_ns: must be"),
        (DRIVE_FILE + "wings = 2\n", "unknown key 'wings'"),
    ],
)
def test_a_bad_drive_file_is_one_line_and_status_2(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "drive.toml"
    if content is not None:
        path.write_text(content)
    result = runner.invoke(app, ["run", "--drive", str(path), "--rw", "randread"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --drive") and expected in lines[0]


# --- preset sources ---------------------------------------------------------------------------


def test_sources_are_read_from_trailing_comments_not_from_strings() -> None:
    sources = parse_sources(
        '[d]\nname = "a # b"   # the source\nlist = [1,  # one\n  2]  # two\n'
        "# a note\n[d.ftl]\nspare_percent = 7.0 # spare: x\n"
    )
    assert sources["d"].keys == {"name": "the source", "list": "one two"}
    assert sources["d"].notes == ["a note"]
    assert sources["d.ftl"].keys == {"spare_percent": "spare: x"}


def test_presets_show_lists_every_parameter_with_its_source() -> None:
    result = runner.invoke(app, ["presets", "show", "intel-dc-s3500-80g", "--format", "json"])
    assert result.exit_code == 0, result.output
    [entry] = json.loads(result.stdout)["presets"]
    rows = {row["parameter"]: row for row in entry["parameters"]}
    assert rows["ftl.spare_percent"]["value"] == 20.0
    assert rows["ftl.spare_percent"]["source"].startswith("assumed: 6 dies x 16 GB")
    assert rows["read_page_ns"]["source"].startswith("calibrated on datasheet")
    text = runner.invoke(app, ["presets", "show", "linux-md"])
    assert text.exit_code == 0 and "request_overhead_ns" in text.stdout


def test_presets_json_gives_every_preset_and_host_with_sources() -> None:
    result = runner.invoke(app, ["presets", "--format", "json"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)["records"]
    groups = {record["group"] for record in records}
    assert groups == {"drive", "controller", "host"}
    for record in records:
        assert record["parameters"], record["name"]
        for row in record["parameters"]:
            assert row["source"], f"{record['name']}: {row['parameter']} cites no source"


# --- bad input ----------------------------------------------------------------------------------


def _fio_json(tmp_path: Path, kind: str, drop: int = 0) -> Path:
    path = tmp_path / f"{kind}.json"
    document = {
        "fio version": "fio-3.33",
        "global options": {"runtime": "1"},
        "jobs": [
            {
                "jobname": job.name,
                "error": 0,
                "job options": dict(job.options),
                "read": {"iops": 100.0, "io_bytes": 409600, "clat_ns": {"mean": 1e6}},
                "write": {"iops": 100.0, "io_bytes": 409600, "clat_ns": {"mean": 1e6}},
            }
            for job in JOBS[kind][drop:]
        ],
    }
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(
    ("make", "args", "expected"),
    [
        (lambda p: p / "x.json", [], "cannot read"),
        (lambda p: _write(p / "x.json", "not json"), [], "not fio's JSON output (not JSON"),
        (lambda p: _write(p / "x.json", '{"jobs": 3}'), [], "not fio's JSON output"),
        (lambda p: _write(p / "x.json", '{"fio version": "x", "jobs": []}'), [], "no jobs"),
        (lambda p: _fio_json(p, "ssd", drop=3), ["--kind", "ssd"], "missing jobs"),
        (lambda p: _fio_json(p, "hdd"), ["--kind", "ssd"], "use --kind hdd"),
        (lambda p: _fio_json(p, "ssd"), ["--kind", "nvme"], "must be ssd or hdd"),
        (lambda p: _fio_json(p, "ssd"), ["--max-evals", "0"], "--max-evals"),
        (lambda p: _fio_json(p, "ssd"), ["--name", "a b"], "--name"),
        (lambda p: _fio_json(p, "ssd"), ["--quick"], "--quick: only with --print-jobs"),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    tmp_path: Path, make: object, args: list[str], expected: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    result = runner.invoke(app, ["calibrate", str(path), *args])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], lines


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _fit(errors_pct: list[float]) -> Calibration:
    jobs = [
        JobFit(f"job-{i}", "m.json", "read", 1000.0, 1000.0 * (1 + e / 100))
        for i, e in enumerate(errors_pct)
    ]
    table = {"kind": "ssd", "capacity_bytes": 1 << 30}
    return Calibration("d", "ssd", table, {}, jobs, 10, ["m.json"])


def test_a_poor_fit_says_so_and_names_the_jobs_to_rerun() -> None:
    # The case: a real-fio fit of 42 % RMS used to be written without a word.
    poor = _fit([60.0, -45.0, 30.0, 5.0, -2.0])
    assert poor.rms_error_pct > POOR_FIT_RMS_PCT
    said = poor.poor_fit()
    assert said is not None
    assert f"RMS error {poor.rms_error_pct:.1f} %" in said
    # Worst first; the jobs within RERUN_JOB_PCT are not named.
    assert "job-0 (+60 %), job-1 (-45 %), job-2 (+30 %)" in said
    assert "job-3" not in said and "job-4" not in said
    assert "WARNING: the fit is poor" in preset_toml(poor)
    assert calibration_document(poor)["warning"] == said


def test_a_good_fit_has_no_warning() -> None:
    good = _fit([1.0, -2.0, 0.5])
    assert good.poor_fit() is None
    assert "WARNING" not in preset_toml(good)
    assert calibration_document(good)["warning"] is None
