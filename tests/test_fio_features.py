"""What fio and CrystalDiskMark users reach for: fio's terse output (checked against
real fio 3.33), --parse-only, --section, the write_*_log files, and CrystalDiskMark's
run count, Peak/Real profiles, Mix block, units and text export."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from raidlab.cli import app
from raidlab.frontends.fio_terse import fio_terse
from typer.testing import CliRunner

DATA = Path(__file__).resolve().parent / "data" / "fio"
ARRAY = ["--drive", "intel-dc-s3500-80g", "--controller", "linux-md", "--level", "1"]
ARRAY += ["--drives", "2"]
JOB = ["--name=x", "--rw=randrw", "--bs=4k", "--size=64M", "--number_ios=4000"]
needs_fio = pytest.mark.tool("fio")
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def one_error_line(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    for word in words:
        assert word in lines[0], lines[0]


# --- terse --------------------------------------------------------------------------


def _real_json_and_terse(args: list[str], version: int, cwd: Path) -> tuple[dict, str]:
    out = subprocess.run(
        ["fio", "--ioengine=null", *args, "--output-format=json,terse"]
        + [f"--terse-version={version}"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    start = out.index("{")
    return json.loads(out[start:]), out[:start]


@needs_fio
@pytest.mark.parametrize("version", [2, 3, 4, 5])
@pytest.mark.parametrize("rw", ["randrw", "write"])
def test_terse_of_real_fios_json_is_real_fios_terse(version: int, rw: str, tmp_path: Path) -> None:
    """The terse writer, fed real fio's JSON of a run, prints real fio's own terse
    line of that run byte for byte: layout, rounding and unit conversions are fio's."""
    document, terse = _real_json_and_terse(
        ["--name=x", f"--rw={rw}", "--size=4M"], version, tmp_path
    )
    _assert_same_terse(fio_terse(document, version), terse)


def _assert_same_terse(ours: str, real: str) -> None:
    """Field by field equal, except that a six-decimal float may be one unit off in its
    last digit: fio's JSON holds a mean in ns to six decimals, so a mean in us that fio
    rounds from its full double can sit exactly half-way once read back from the JSON,
    and then round the other way. Nothing else may differ."""
    ours_fields, real_fields = ours.strip().split(";"), real.strip().split(";")
    assert len(ours_fields) == len(real_fields), (ours, real)
    for index, (mine, theirs) in enumerate(zip(ours_fields, real_fields, strict=True)):
        if mine == theirs:
            continue
        both_floats = all(re.fullmatch(r"-?\d+\.\d{6}", f) for f in (mine, theirs))
        assert both_floats and abs(float(mine) - float(theirs)) <= 1.5e-6, (
            f"field {index}: ours {mine!r}, fio {theirs!r}"
        )
    assert ours.endswith("\n") == real.endswith("\n"), (ours[-5:], real[-5:])


def _shape(field: str) -> str:
    """A terse field's kind: integer, float, percentage, or percentile=value."""
    for kind, pattern in (
        ("int", r"-?\d+"),
        ("float", r"-?\d+\.\d{6}"),
        ("pct", r"\d+\.\d+%"),
        ("pctl", r"(\d+\.\d{6}|0)%=\d+"),
    ):
        if re.fullmatch(pattern, field):
            return kind
    return "text"


@needs_fio
def test_terse_layout_is_real_fios_and_values_are_our_json(tmp_path: Path) -> None:
    real = subprocess.run(
        ["fio", "--ioengine=null", *JOB, "--minimal"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.strip()
    result = invoke("fio", *JOB, *ARRAY, "--minimal")
    assert result.exit_code == 0, result.output
    ours = result.stdout.strip().split(";")
    assert len(ours) == len(real.split(";")) == 121
    assert [_shape(f) for f in ours] == [_shape(f) for f in real.split(";")]
    document = json.loads(invoke("fio", *JOB, *ARRAY, "--output-format=json").stdout)
    job = document["jobs"][0]
    for start, op in ((5, "read"), (46, "write")):
        d = job[op]
        assert ours[start : start + 4] == [
            str(d["io_kbytes"]),
            str(d["bw"]),
            str(int(d["iops"])),
            str(d["runtime"]),
        ]
        assert float(ours[start + 10]) == pytest.approx(d["clat_ns"]["mean"] / 1000, abs=1e-6)


def test_minimal_is_terse_and_versions_change_the_width() -> None:
    terse = invoke("fio", *JOB, *ARRAY, "--output-format=terse")
    minimal = invoke("fio", *JOB, *ARRAY, "--minimal")
    assert terse.exit_code == 0 and terse.stdout == minimal.stdout
    widths = {}
    for version in ("2", "3", "4", "5"):
        result = invoke("fio", *JOB, *ARRAY, "--minimal", "--terse-version", version)
        widths[version] = len(result.stdout.strip().split(";"))
    # fio 3.33's widths for a null-engine job (no disk utilisation fields).
    assert widths == {"2": 161, "3": 121, "4": 162, "5": 180}


def test_bad_terse_version_is_one_line() -> None:
    one_error_line(invoke("fio", *JOB, *ARRAY, "--minimal", "--terse-version=7"), "2, 3, 4, 5")


# --- parse-only, section -------------------------------------------------------------


def test_parse_only_prints_nothing_and_checks_the_jobs() -> None:
    result = invoke("fio", str(DATA / "two-groups.fio"), *ARRAY, "--parse-only")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    one_error_line(invoke("fio", "--parse-only", "--name=x", "--rw=bogus", *ARRAY), "bogus")
    one_error_line(invoke("fio", "--parse-only", "--name=x", "--size=200%", *ARRAY), "size")


def test_section_runs_only_the_named_jobs() -> None:
    path = str(DATA / "two-groups.fio")
    result = invoke("fio", path, "--section", "seqread", *ARRAY, "--output-format=json")
    assert result.exit_code == 0, result.output
    names = [job["jobname"] for job in json.loads(result.stdout)["jobs"]]
    assert names == ["seqread"]
    result = invoke("fio", path, "--section=seqwrite", "--section=seqread", *ARRAY, "--minimal")
    assert [line.split(";")[2] for line in result.stdout.splitlines()] == ["seqwrite", "seqread"]
    # fio skips a name that matches no job when another matches; a note says so.
    result = invoke("fio", path, "--section", "seqread", "--section", "nosuch", *ARRAY)
    assert result.exit_code == 0 and "'nosuch': no such job section" in result.stderr


def test_section_matching_nothing_is_one_error() -> None:
    result = invoke("fio", str(DATA / "two-groups.fio"), "--section", "nosuch", *ARRAY)
    one_error_line(result, "--section", "nosuch", "seqwrite, seqread")


@needs_fio
def test_section_matching_nothing_runs_nothing_in_real_fio(tmp_path: Path) -> None:
    real = subprocess.run(
        ["fio", "--section=nosuch", "--ioengine=null", str(DATA / "two-groups.fio")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert real.returncode != 0 and "No job(s) defined" in real.stderr


# --- logs ----------------------------------------------------------------------------

LOG_JOB = ["--name=L", "--rw=randrw", "--bs=4k", "--iodepth=4", "--numjobs=2"]
LOG_JOB += ["--time_based", "--runtime=2s", "--size=1G"]
LOGS = ["--write_lat_log=lat", "--write_bw_log=bw", "--write_iops_log=io"]
LOG_LINE = re.compile(r"\d+, \d+, [012], \d+, \d+")


def test_logs_are_written_from_the_simulated_time_series(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = [*LOG_JOB, *LOGS, "--log_avg_msec=100", *ARRAY, "--output-format=json"]
    result = invoke("fio", *args)
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in tmp_path.glob("*.log"))
    expected = [f"{p}_{k}.{n}.log" for p, k in (("bw", "bw"), ("io", "iops")) for n in (1, 2)]
    expected += [f"lat_{k}.{n}.log" for k in ("clat", "lat", "slat") for n in (1, 2)]
    assert names == sorted(expected)
    job = json.loads(result.stdout)["jobs"][0]
    bw = (tmp_path / "bw_bw.1.log").read_text().splitlines()
    assert bw and all(LOG_LINE.fullmatch(line) for line in bw)
    # 2 s in 100 ms windows, a line per direction; times are the windows' ends.
    assert [int(line.split(",")[0]) for line in bw[::2]] == list(range(100, 2001, 100))
    for name, key in (("bw_bw.1.log", "bw"), ("io_iops.1.log", "iops")):
        for ddir, op in ((0, "read"), (1, "write")):
            values = [
                int(line.split(", ")[1])
                for line in (tmp_path / name).read_text().splitlines()
                if line.split(", ")[2] == str(ddir)
            ]
            # Each clone's log is its share; the JSON's job (no group_reporting) too.
            assert sum(values) / len(values) == pytest.approx(job[op][key], rel=0.02)
    lat = [int(x.split(", ")[1]) for x in (tmp_path / "lat_lat.1.log").read_text().splitlines()]
    mean = (job["read"]["lat_ns"]["mean"] + job["write"]["lat_ns"]["mean"]) / 2
    assert sum(lat) / len(lat) == pytest.approx(mean, rel=0.05)


def test_logs_without_log_avg_msec_say_what_they_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke("fio", *LOG_JOB, "--write_bw_log", "--per_job_logs=0", *ARRAY)
    assert result.exit_code == 0, result.output
    assert "per-I/O entries are not simulated" in result.stderr
    assert "ignored" not in result.stderr
    # fio's default prefix is the job name; per_job_logs=0 drops the thread number.
    lines = (tmp_path / "L_bw.log").read_text().splitlines()
    assert [int(line.split(",")[0]) for line in lines[::2]] == [500, 1000, 1500, 2000]


def test_bad_log_options_are_one_line(tmp_path: Path) -> None:
    one_error_line(invoke("fio", *JOB, "--log_avg_msec=-1", *ARRAY), "log_avg_msec")
    missing = str(tmp_path / "nodir" / "x")
    one_error_line(invoke("fio", *JOB, f"--write_bw_log={missing}", *ARRAY), "write_bw_log")


@needs_fio
def test_log_file_names_are_real_fios(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two jobs, the first with two clones: fio numbers logs by thread (1, 2, 3)."""
    jobs = ["--size=1M", "--bs=4k", "--log_avg_msec=100", "--name=a", "--rw=read"]
    jobs += ["--numjobs=2", "--write_bw_log=A", "--write_lat_log=A"]
    jobs += ["--name=b", "--rw=write", "--write_iops_log=B"]
    real_dir, our_dir = tmp_path / "real", tmp_path / "ours"
    real_dir.mkdir()
    our_dir.mkdir()
    subprocess.run(["fio", "--ioengine=null", *jobs], cwd=real_dir, check=True, timeout=120)
    monkeypatch.chdir(our_dir)
    assert invoke("fio", *jobs, *ARRAY).exit_code == 0
    real = sorted(p.name for p in real_dir.glob("*.log"))
    assert real == sorted(p.name for p in our_dir.glob("*.log"))
    assert "B_iops.3.log" in real


# --- CrystalDiskMark -----------------------------------------------------------------

CDM = ["cdm", *ARRAY, "--size", "64M", "--ios", "500", "--jobs", "1"]


def _records(*args: str) -> list[dict]:
    result = invoke(*CDM, *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["records"]


def test_cdm_best_of_n_is_the_best_seed() -> None:
    singles = [_records("--profile", "real", "--runs", "1", "--seed", str(s)) for s in (1, 2, 3)]
    best = _records("--profile", "real", "--runs", "3", "--seed", "1")
    for index, row in enumerate(best):
        runs = [single[index] for single in singles]
        assert row["mbps"] == max(r["mbps"] for r in runs)
        assert row["lat_mean_us"] == min(r["lat_mean_us"] for r in runs)
    assert _records("--profile", "real", "--runs", "1") == singles[0]


def test_cdm_profiles_and_mix() -> None:
    peak = _records("--profile", "peak", "--runs", "1", "--mix", "70")
    assert [(r["test"], r["op"]) for r in peak] == [
        (test, op) for test in ("SEQ1M Q8T1", "RND4K Q32T1") for op in ("read", "write", "mix")
    ]
    row = {(r["test"], r["op"]): r for r in peak}
    rnd = [row[("RND4K Q32T1", op)]["iops"] for op in ("read", "write", "mix")]
    assert min(rnd[:2]) < rnd[2] < max(rnd[:2])  # a 70/30 mix lies between its parts
    assert {r["test"] for r in _records("--profile", "peak-nvme", "--runs", "1")} == {
        "SEQ1M Q8T1",
        "RND4K Q32T16",
    }


def test_cdm_text_export_has_cdms_layout() -> None:
    result = invoke(*CDM, "--profile", "peak", "--mix", "70", "--runs", "2", "--format", "text")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == lines[3] == "-" * 78
    line = re.compile(
        r"  (SEQ|RND) +\d+(MiB|KiB) \(Q= *\d+, T= *\d+\): +\d+\.\d{3} MB/s "
        r"\[ +\d+\.\d IOPS\] < +\d+\.\d{2} us>"
    )
    for title in ("[Read]", "[Write]", "[Mix] Read 70%/Write 30%"):
        at = lines.index(title)
        assert line.fullmatch(lines[at + 1]) and line.fullmatch(lines[at + 2]), lines[at + 1]
    assert "Profile: Peak" in lines and "   Test: 64 MiB (x2)" in lines
    records = _records("--profile", "peak", "--mix", "70", "--runs", "2")
    first = records[0]
    assert f"{first['mbps']:9.3f} MB/s" in lines[lines.index("[Read]") + 1]


def test_cdm_units() -> None:
    mbps = _records("--profile", "real", "--runs", "1")
    gbps = _records("--profile", "real", "--runs", "1", "--unit", "GB/s")
    assert [r["GB/s"] for r in gbps] == pytest.approx([r["mbps"] / 1000 for r in mbps])
    assert list(gbps[0]) == ["test", "op", "GB/s"]
    result = invoke(*CDM, "--profile", "real", "--runs", "1", "--unit", "us")
    assert result.exit_code == 0 and "us" in result.stdout


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--runs", "0"], "--runs"),
        (["--runs", "10"], "--runs"),
        (["--runs", "x"], "--runs"),
        (["--mix", "75"], "--mix"),
        (["--mix", "100"], "--mix"),
        (["--interval", "7"], "--interval"),
        (["--unit", "kB/s"], "--unit"),
        (["--unit", "IOPS", "--format", "text"], "--unit"),
        (["--profile", "mix"], "--profile"),
        (["--format", "txt"], "--format"),
    ],
)
def test_cdm_bad_values_are_one_line(args: list[str], flag: str) -> None:
    one_error_line(invoke(*CDM, *args), flag)


# --- job length ------------------------------------------------------------------------


@pytest.mark.parametrize("length", ["--number_ios=1100000", "--io_size=4400M", "--runtime=100s"])
def test_a_job_that_chose_its_length_is_not_cut_at_a_million_ios(length: str) -> None:
    """The million-I/O cap is for jobs that only gave a size: number_ios, io_size and
    runtime are the user's own choice, run whole."""
    args = ["--name=x", "--rw=randread", "--bs=4k", "--size=8G", "--iodepth=32", length]
    result = invoke("fio", *args, "--drive", "samsung-960-pro-512g", "--output-format=json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["jobs"][0]["read"]["total_ios"] > 1_050_000
    assert "capped" not in result.stderr


@pytest.mark.parametrize("extra", [[], ["--runtime=0"]])
def test_a_job_that_gave_only_a_size_is_cut_at_a_million_ios_with_a_note(
    extra: list[str],
) -> None:
    """fio reads runtime=0 as no limit: the job still gave only a size."""
    args = ["--name=x", "--rw=randread", "--bs=4k", "--size=8G", "--iodepth=32", *extra]
    result = invoke("fio", *args, "--drive", "samsung-960-pro-512g", "--output-format=json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["jobs"][0]["read"]["total_ios"] == 1_000_000
    assert "capped at 1,000,000" in result.stderr
