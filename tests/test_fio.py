"""fio job files: parsing, planning, fio-shaped output, bad input, and the presets
(CrystalDiskMark, IOMeter, SNIA PTS) and trace replay commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import needs_native_jobs, needs_native_trace
from raidlab.cli import app
from raidlab.errors import RaidlabError
from raidlab.frontends.fio import parse_command_line, parse_job_text
from raidlab.frontends.fio_report import percentile
from raidlab.frontends.fio_values import (
    fio_size,
    fio_time_ns,
    parse_bsrange,
    parse_bssplit,
    parse_distribution,
)
from raidlab.frontends.suites import parse_access_spec, pts_steady
from raidlab.scenario.workloads import parse_bs
from typer.testing import CliRunner

DATA = Path(__file__).resolve().parent / "data"
ARRAY = [
    "--drive",
    "intel-dc-s3500-80g",
    "--controller",
    "linux-md",
    "--level",
    "1",
    "--drives",
    "2",
]
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


# --- values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4k", 4096),
        ("4K", 4096),
        ("4KiB", 4096),
        ("4kb", 4096),
        ("1m", 1 << 20),
        ("1g", 1 << 30),
        ("512", 512),
        ("1.5k", 1536),
    ],
)
def test_fio_sizes_are_1024_based(text: str, expected: int) -> None:
    assert fio_size(text, "f:1", "bs") == expected


def test_kb_base_1000_keeps_kib_binary() -> None:
    assert fio_size("4k", "f", "bs", kb_base=1000) == 4000
    assert fio_size("4KiB", "f", "bs", kb_base=1000) == 4096


def test_times_default_to_seconds() -> None:
    assert fio_time_ns("30", "f", "runtime") == 30_000_000_000
    assert fio_time_ns("500ms", "f", "runtime") == 500_000_000
    assert fio_time_ns("2m", "f", "runtime") == 120_000_000_000
    assert fio_time_ns("250us", "f", "runtime") == 250_000


def test_bssplit_per_direction_and_open_shares() -> None:
    read, write = parse_bssplit("4k/55:64k/25:128k/20,8k", "f", "bssplit", 1024)
    assert read == [[4096, 5500], [65536, 2500], [131072, 2000]]
    assert write == [[8192, 10000]]
    (mix,) = parse_bssplit("4k/50:8k:16k", "f", "bssplit", 1024)
    assert mix == [[4096, 5000], [8192, 2500], [16384, 2500]]


@pytest.mark.parametrize(
    ("bs", "mix"),
    [
        ("4K:55,64K:25,128K:20", [[4096, 55], [65536, 25], [131072, 20]]),
        ("4K:60,64K", [[4096, 60], [65536, 40]]),  # a blank share takes what is left
        ("4K:50,64K:,128K:", [[4096, 50], [65536, 25], [131072, 25]]),
        ("4K:30,64K:30", [[4096, 30], [65536, 70]]),  # under 100: the largest tops up
        ("4K:60,64K:60", [[4096, 60], [65536, 40]]),  # over 100: smallest first
    ],
)
def test_run_bs_mix_shares_follow_fio_bssplit_rules(bs: str, mix: list[list[int]]) -> None:
    assert parse_bs(bs, "--bs") == mix


def test_run_bs_mix_over_100_with_a_blank_is_one_error_naming_bs() -> None:
    result = invoke("run", "--drive", "intel-dc-s3500-80g", "--bs", "4K:80,64K:40,128K")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --bs: shares add up to 120 %, over 100")


@needs_native_jobs
@pytest.mark.parametrize("form", [["--output=OUT"], ["--output", "OUT"]])
def test_fio_output_writes_the_report_to_the_file(tmp_path: Path, form: list[str]) -> None:
    out = tmp_path / "out.json"
    form = [item.replace("OUT", str(out)) for item in form]
    result = invoke(
        "fio", "--name=a", "--rw=randread", "--size=16m", "--drive", "intel-dc-s3500-80g",
        "--output-format=json", *form,
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert json.loads(out.read_text())["jobs"][0]["jobname"] == "a"


def test_fio_output_into_a_missing_directory_is_refused_first(
    no_simulation: None, tmp_path: Path
) -> None:
    result = invoke(
        "fio", "--name=a", "--rw=read", "--size=1m", "--drive", "intel-dc-s3500-80g",
        f"--output={tmp_path / 'no' / 'out.json'}",
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --output: the directory ")


def test_bsrange_is_an_even_mix_of_powers_of_two() -> None:
    assert parse_bsrange("4k-32k", "f", "bsrange", 1024) == [
        [4096, 1],
        [8192, 1],
        [16384, 1],
        [32768, 1],
    ]


def test_distributions() -> None:
    assert parse_distribution("random", "f", "d") == "uniform"
    assert parse_distribution("zipf:1.2", "f", "d") == {"zipf": 1.2}
    assert parse_distribution("pareto:0.9", "f", "d") == {"pareto": 0.9}
    assert parse_distribution("normal:10", "f", "d") == {"normal": 10.0}
    assert parse_distribution("zoned:60/10:30/20:10/70", "f", "d") == {
        "zoned": [[60.0, 10.0], [30.0, 20.0], [10.0, 70.0]]
    }


def test_parser_sections_flags_and_comments() -> None:
    text = "[global]\nsize=1g ; comment\n# another\n[a]\ntime_based\nruntime=5\n[b]\nrw=write\n"
    parsed = parse_job_text(text, "x.fio")
    assert [o.key for o in parsed.global_options] == ["size"]
    assert [job.name for job in parsed.jobs] == ["a", "b"]
    assert parsed.jobs[0].options[0].value is None


def test_command_line_form() -> None:
    parsed = parse_command_line(
        ["--size=1G", "--name=a", "--rw", "randread", "--direct=1", "--name=b", "--time_based"]
    )
    assert [o.key for o in parsed.global_options] == ["size"]
    assert [(o.key, o.value) for o in parsed.jobs[0].options] == [
        ("rw", "randread"),
        ("direct", "1"),
    ]
    assert parsed.jobs[1].options[0].key == "time_based"


def test_percentile_interpolation_is_exact_at_native_keys() -> None:
    points = [(0.0, 10.0), (50.0, 20.0), (99.0, 40.0), (100.0, 50.0)]
    assert percentile(points, 50) == 20.0
    assert percentile(points, 74.5) == pytest.approx(30.0)


def test_iometer_spec_and_presets() -> None:
    spec = parse_access_spec("desktop")
    assert spec.bs == [[4096, 55], [65536, 25], [131072, 20]]
    assert (spec.read_pct, spec.random_pct, spec.workers) == (75, 75, 4)
    with pytest.raises(RaidlabError, match="add up to 100"):
        parse_access_spec("bs=4K/50;read=70")


def test_pts_rule() -> None:
    assert pts_steady([100, 101, 99, 100, 100])[0]
    assert not pts_steady([100, 101, 99, 100])[0]
    assert not pts_steady([60, 70, 80, 90, 100])[0]  # trending


# --- bad input: one line, exit 2 -------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("unknown-option.fio", "unknown-option.fio:3: unknown fio option 'foo'"),
        ("bad-size.fio", "bad-size.fio:3: size: bad size '10q'"),
        # fio refuses it too ("bssplit percentages add to more than 100%").
        ("bssplit-sum.fio", "bssplit-sum.fio:3: bssplit: shares add up to 120 %, over 100"),
        ("missing-section.fio", "missing-section.fio:1: option 'rw' outside a section"),
        ("no-job.fio", "no-job.fio: no job section"),
        ("bad-rw.fio", "bad-rw.fio:2: rw: must be read, write, randread"),
    ],
)
def test_malformed_job_files(name: str, message: str) -> None:
    result = invoke("fio", str(DATA / "fio-bad" / name), *ARRAY)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--name=a", "--foo=1"], "--foo: unknown fio option 'foo'"),
        (["--name=a", "--bs=4x"], "bs: bad size '4x'"),
        (["--name=a", "--rw=randread", "--ss=iops:10%"], "ss: needs ss_dur="),
        (["--name=a", "--random_distribution=zipf"], "zipf needs a parameter"),
        (["--name=a", "--time_based"], "time_based: needs runtime="),
        (["--name=a", "--wait_for=nobody"], "no earlier job named 'nobody'"),
        (["missing.fio"], "missing.fio: cannot read job file"),
        (["--name=a", "--output-format=xml"], "--output-format: must be one of"),
    ],
)
def test_bad_command_lines(args: list[str], message: str) -> None:
    result = invoke("fio", *args, *ARRAY)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("error: ") and message in lines[-1], result.output


# --- runs -----------------------------------------------------------------------------


@needs_native_jobs
def test_article_commands_give_sensible_figures() -> None:
    """The five fio commands of the SSD RAID tuning article, unchanged, on RAID 1 of two
    Intel DC S3500: sequential ~ hundreds of MB/s, random 4k tens of thousands IOPS."""
    common = [
        "--size=1G",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=16",
        "--output-format=json",
    ]
    runs = {
        "readTP": ["--rw=read", "--bs=1024k"],
        "writeTP": ["--rw=write", "--bs=1024k"],
        "readIOPS": ["--rw=randread", "--bs=4k"],
        "writeIOPS": ["--rw=randwrite", "--bs=4k"],
        "mixedIOPS": ["--rw=randrw", "--bs=4k"],
    }
    figures = {}
    for name, extra in runs.items():
        result = invoke("fio", f"--name={name}", *extra, *common, *ARRAY)
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        job = document["jobs"][0]
        figures[name] = job
        assert document["raidlab"]["array"]["level"] == 1
    assert 200e6 < figures["readTP"]["read"]["bw_bytes"] < 1200e6
    assert 50e6 < figures["writeTP"]["write"]["bw_bytes"] < 600e6
    assert figures["readTP"]["read"]["io_bytes"] == 1 << 30
    assert 10_000 < figures["readIOPS"]["read"]["iops"] < 200_000
    assert 2_000 < figures["writeIOPS"]["write"]["iops"] < 100_000
    mixed = figures["mixedIOPS"]
    assert mixed["read"]["total_ios"] + mixed["write"]["total_ios"] == (1 << 30) // 4096


@needs_native_jobs
def test_normal_output_looks_like_fio() -> None:
    result = invoke("fio", str(DATA / "fio" / "two-groups.fio"), *ARRAY)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "seqwrite: (groupid=0, jobs=1)" in out and "seqread: (groupid=1, jobs=1)" in out
    assert "  write: IOPS=" in out and "clat percentiles (" in out
    assert "Run status group 1 (all jobs):" in out and "   READ: bw=" in out


@needs_native_jobs
def test_steadystate_and_percentile_list() -> None:
    result = invoke("fio", str(DATA / "fio" / "steadystate.fio"), *ARRAY, "--output-format", "json")
    job = json.loads(result.stdout)["jobs"][0]
    ss = job["steadystate"]
    assert ss["ss"] == "iops:20.000000%" and ss["duration"] == 2
    assert ss["attained"] == 1 and len(ss["data"]["iops"]) == 2
    assert list(job["read"]["clat_ns"]["percentile"]) == [
        "50.000000",
        "99.000000",
        "99.900000",
        "99.999000",
    ]


@needs_native_jobs
def test_ignored_options_are_listed_once() -> None:
    result = invoke(
        "fio",
        "--ioengine=libaio",
        "--name=a",
        "--direct=1",
        "--size=8m",
        "--name=b",
        "--direct=1",
        "--size=8m",
        *ARRAY,
    )
    assert result.exit_code == 0
    assert result.stderr.count("note: ignored (no effect in a simulation): ioengine, direct") == 1


@needs_native_jobs
def test_cdm_iometer_pts(tmp_path: Path) -> None:
    result = invoke(
        "cdm", *ARRAY, "--size", "64M", "--ios", "2000", "--format", "csv", "--jobs", "1"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.count("SEQ1M Q8T1") == 2 and "RND4K Q1T1" in result.stdout
    result = invoke(
        "cdm", *ARRAY, "--profile", "nvme", "--size", "64M", "--ios", "2000", "--jobs", "1"
    )
    assert result.exit_code == 0 and "RND4K Q32T16" in result.stdout
    result = invoke("iometer", "desktop", *ARRAY, "--ios", "4000", "--format", "json")
    document = json.loads(result.stdout)
    ops = {row["op"]: row for row in document["records"]}
    share = ops["read"]["iops"] / ops["total"]["iops"]
    assert 0.6 < share < 0.9
    figure = tmp_path / "pts.png"
    result = invoke(
        "pts",
        *ARRAY,
        "--mixes",
        "100/0,0/100",
        "--sizes",
        "4K,64K",
        "--ios",
        "500",
        "--jobs",
        "1",
        "--plot",
        str(figure),
    )
    assert result.exit_code == 0, result.output
    assert "steady state reached" in result.stdout and figure.exists()


@needs_native_trace
@pytest.mark.parametrize(
    ("name", "fmt", "mode"),
    [("small.msr.csv", "msr", "open"), ("small.blkparse.txt", "blkparse", "closed")],
)
def test_replay_in_tree_traces(name: str, fmt: str, mode: str) -> None:
    result = invoke(
        "replay",
        str(DATA / "traces" / name),
        "--format",
        fmt,
        "--mode",
        mode,
        "--iodepth",
        "4",
        "--time-scale",
        "2",
        *ARRAY,
        "--output-format",
        "json",
    )
    assert result.exit_code == 0, result.output
    results = json.loads(result.stdout)["results"]
    assert results["ops"]["read"]["ios"] + results["ops"]["write"]["ios"] == 300


def test_replay_bad_input() -> None:
    result = invoke("replay", str(DATA / "traces" / "small.msr.csv"), "--format", "csv", *ARRAY)
    assert result.exit_code == 2 and "--format: must be one of msr, blkparse" in result.output


@needs_native_trace
def test_a_stored_replay_scenario_reproduces_the_replay() -> None:
    from raidlab.scenario.native import simulate

    trace = str(DATA / "traces" / "small.msr.csv")
    result = invoke(
        "replay", trace, "--mode", "closed", "--iodepth", "4", *ARRAY, "--output-format", "json"
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    workload = document["scenario"]["workload"]
    assert workload == {
        "kind": "trace",
        "path": trace,
        "format": "msr",
        "mode": "closed",
        "iodepth": 4,
        "time_scale": 1.0,
    }
    assert simulate(document["scenario"]) == document["results"]


@needs_native_trace
def test_a_missing_trace_and_a_file_that_is_no_trace_are_told_apart(tmp_path: Path) -> None:
    missing = invoke("replay", str(tmp_path / "nope.csv"), *ARRAY)
    assert missing.exit_code == 2
    assert missing.stderr == f"error: {tmp_path / 'nope.csv'}: no such trace file\n"
    readme = tmp_path / "README.md"
    readme.write_text("# raidlab\n\nA lab for RAID arrays.\n")
    for trace_format in ("msr", "blkparse"):
        result = invoke("replay", str(readme), "--format", trace_format, *ARRAY)
        assert result.exit_code == 2
        line = result.stderr.strip()
        assert line.startswith(f"error: {readme}: ") and "no such" not in line, line
        assert trace_format in line and len(result.stderr.splitlines()) == 1


@needs_native_jobs
def test_trim_jobs_report_trims_as_fio_does() -> None:
    args = ["--name=t", "--rw=randtrim", "--bs=4k", "--iodepth=4", "--number_ios=2000"]
    result = invoke("fio", *args, *ARRAY, "--output-format", "json")
    assert result.exit_code == 0, result.output
    job = json.loads(result.stdout)["jobs"][0]
    assert job["trim"]["total_ios"] == 2000 and job["write"]["total_ios"] == 0
    args = ["--name=tw", "--rw=trimwrite", "--bs=4k", "--number_ios=2000"]
    result = invoke("fio", *args, *ARRAY, "--output-format", "json")
    job = json.loads(result.stdout)["jobs"][0]
    assert job["trim"]["total_ios"] > 0 and job["write"]["total_ios"] > 0
