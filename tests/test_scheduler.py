"""The host I/O scheduler knob: --scheduler, the [host] TOML keys, fio's ioscheduler=,
and the effects the simulator shows for each scheduler."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from raidlab.cli import app
from raidlab.errors import RaidlabError
from raidlab.frontends.fio import parse_job_text, plan_jobs
from raidlab.scenario.array import ArrayRequest, build_array, load_array_file
from typer.testing import CliRunner

runner = CliRunner()
SSD_ARRAY = ["--drive", "intel-dc-s3500-80g", "--controller", "linux-md", "--drives", "4"]
# Four random readers at QD 1 each: the case where idling matters on SSDs.
READERS = ["--rw", "randread", "--bs", "4K", "--iodepth", "1", "--numjobs", "4"]


def _error(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    return lines[0]


def _run_json(args: list[str]) -> dict:
    result = runner.invoke(app, ["run", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _iops(document: dict) -> float:
    return float(document["records"][0]["iops"])


def test_a_bad_scheduler_names_the_flag_and_the_allowed_values() -> None:
    line = _error(["run", *SSD_ARRAY, "--scheduler", "cfq"])
    assert line == "error: --scheduler: must be one of none, mq-deadline, bfq, got 'cfq'"


def test_advise_refuses_a_bad_scheduler_before_simulating() -> None:
    line = _error(["advise", "--drive", "intel-dc-s3500-80g", "--drives", "2", "--scheduler", "x"])
    assert line == "error: --scheduler: must be one of none, mq-deadline, bfq, got 'x'"


def test_without_the_flag_the_host_has_no_scheduler_keys() -> None:
    array = build_array(ArrayRequest(drive="intel-dc-s3500-80g", drives=2))
    assert array["host"] == {"request_overhead_ns": 8000}


def test_the_flag_reaches_the_scenario_and_the_results() -> None:
    document = _run_json([*SSD_ARRAY, *READERS, "--ios", "4000", "--scheduler", "bfq"])
    assert document["scenario"]["array"]["host"]["scheduler"] == "bfq"
    sched = document["explain"]["scheduler"]
    assert sched["name"] == "bfq" and sched["queue_depth"] == 4 * 32


def test_bfq_idling_lowers_ssd_random_read_iops_and_deadline_costs_nothing() -> None:
    runs = {
        kind: _run_json([*SSD_ARRAY, *READERS, "--ios", "8000", "--scheduler", kind])
        for kind in ("none", "mq-deadline", "bfq")
    }
    none, deadline, bfq = (_iops(runs[k]) for k in ("none", "mq-deadline", "bfq"))
    assert abs(deadline / none - 1.0) < 0.01, (none, deadline)
    assert bfq < 0.5 * none, (none, bfq)
    assert runs["bfq"]["explain"]["bottleneck"] == "host.scheduler"


def test_deadline_merges_small_sequential_reads_on_an_hdd() -> None:
    hdd = ["--drive", "hitachi-deskstar-250g", "--rw", "read", "--bs", "4K", "--iodepth", "64"]
    none = _run_json([*hdd, "--ios", "8000", "--scheduler", "none"])
    deadline = _run_json([*hdd, "--ios", "8000", "--scheduler", "mq-deadline"])
    sched = deadline["explain"]["scheduler"]
    assert sched["host_ios_merged"] > 2000 and sched["host_ios_per_request"] > 1.5, sched
    assert deadline["explain"]["member_ios_per_host_io"]["read"] < 0.7
    assert float(deadline["records"][0]["mbps"]) > 1.4 * float(none["records"][0]["mbps"])


def test_explain_says_what_the_scheduler_did() -> None:
    result = runner.invoke(
        app, ["run", *SSD_ARRAY, *READERS, "--ios", "4000", "--scheduler", "bfq", "--explain"]
    )
    assert result.exit_code == 0, result.output
    assert "bottleneck: host.scheduler" in result.output
    assert "I/O scheduler bfq: device queue depth 128" in result.output
    assert "served one job at a time and idled for it" in result.output


def _toml(tmp_path: Path, host: str) -> Path:
    path = tmp_path / "array.toml"
    path.write_text(f'[array]\ndrive = "hitachi-deskstar-250g"\ndrives = 2\n\n{host}')
    return path


def test_toml_host_takes_scheduler_settings(tmp_path: Path) -> None:
    path = _toml(
        tmp_path,
        '[host]\nscheduler = "mq-deadline"\nqueue_depth = 16\nnr_requests = 128\n'
        "max_sectors_kb = 256\n[host.deadline]\nread_expire_ns = 100_000_000\n"
        "front_merges = false\n",
    )
    host = build_array(load_array_file(path))["host"]
    assert host == {
        "request_overhead_ns": 8000,
        "scheduler": "mq-deadline",
        "queue_depth": 16,
        "nr_requests": 128,
        "max_sectors_kb": 256,
        "deadline": {"read_expire_ns": 100_000_000, "front_merges": False},
    }


@pytest.mark.parametrize(
    ("host", "field", "message"),
    [
        ('[host]\nscheduler = "kyber"\n', "host.scheduler", "none, mq-deadline, bfq"),
        ("[host]\nqueue_depth = 0\n", "host.queue_depth", "1..=65536"),
        (
            '[host]\nscheduler = "bfq"\n[host.bfq]\nslice_idle = 8\n',
            "host.bfq.slice_idle",
            "slice_idle_ns",
        ),
        ("[host.bfq]\nslice_idle_ns = 0\n", "host.bfq", "the scheduler is none"),
        (
            '[host]\nscheduler = "bfq"\n[host.deadline]\nfifo_batch = 1\n',
            "host.deadline",
            "mq-deadline",
        ),
    ],
)
def test_bad_toml_scheduler_settings_name_the_key(
    tmp_path: Path, host: str, field: str, message: str
) -> None:
    path = _toml(tmp_path, host)
    with pytest.raises(RaidlabError) as error:
        build_array(load_array_file(path))
    assert error.value.field == f"{path}: {field}"
    assert message in str(error.value)


def test_the_flag_refuses_a_config_table_of_another_scheduler(tmp_path: Path) -> None:
    path = _toml(tmp_path, '[host]\nscheduler = "bfq"\n[host.bfq]\nslice_idle_ns = 0\n')
    line = _error(["run", "--config", str(path), "--scheduler", "mq-deadline"])
    assert line.startswith("error: --scheduler: host.bfq sets bfq tunables"), line


def _fio_scenarios(text: str) -> tuple[list[dict], list[str]]:
    array = build_array(ArrayRequest(drive="intel-dc-s3500-80g", drives=2))
    plan = plan_jobs(parse_job_text(text, "job.fio"), array)
    return plan.scenarios(array, 1), plan.notes


def test_fio_ioscheduler_sets_the_scheduler_of_its_group() -> None:
    scenarios, notes = _fio_scenarios(
        "[global]\nsize=64m\n[a]\nioscheduler=bfq\nrw=randread\n"
        "[b]\nstonewall\nrw=read\n[c]\nstonewall\nioscheduler=cfq\n"
    )
    schedulers = [s["array"]["host"].get("scheduler") for s in scenarios]
    assert schedulers == ["bfq", None, "bfq"]
    assert notes == ["job c: ioscheduler=cfq simulated as bfq (its blk-mq successor)"]


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("[a]\nsize=64m\nioscheduler=kyber\n", "job.fio:3", "none, mq-deadline, bfq, noop"),
        (
            "[a]\nsize=64m\nioscheduler=bfq\n[b]\nsize=64m\nioscheduler=none\n",
            "job.fio:6",
            "job 'a' of the same group runs with bfq",
        ),
    ],
)
def test_fio_bad_ioscheduler_names_the_line(text: str, where: str, message: str) -> None:
    with pytest.raises(RaidlabError) as error:
        _fio_scenarios(text)
    assert error.value.field == where and message in str(error.value)
