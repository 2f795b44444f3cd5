"""The ssd-raid-tuning claim study: coverage, tolerances, report structure, exit codes."""

from __future__ import annotations

import dataclasses
import io
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from raidlab.cli import app
from raidlab.studies import claims
from raidlab.studies.claim_studies import CLAIM_STUDIES, reproduce_claims
from raidlab.studies.claims import (
    CLAIM_COLUMNS,
    PTS_IODEPTH,
    PTS_NUMJOBS,
    Check,
    Setup,
    Tolerance,
    claim_scenarios,
    load_claims,
    study_checks,
)
from typer.testing import CliRunner

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
STUDY = CLAIM_STUDIES["ssd-raid-tuning"]
CSV_IDS = list(pd.read_csv(REPO / "data" / "reference" / "ssd_raid_tuning_claims.csv")["claim_id"])
COVERED = {
    *("T01", "T02", "T03", "T04", "T05", "T06", "T18", "T21", "T22", "T23", "T24", "T28"),
    "T29",
    *("T33", "T34", "T35", "T36", "T37", "T38", "T39", "T40", "T41", "T48", "T49"),
    *(f"Q0{n}" for n in range(1, 10)),
}
QUALITATIVE_KINDS = {"direction", "unchanged", "range"}
# Coverage of every claim of the file, rows without a hand-written check read from their
# text: what `reproduce` reports (rows appended to the file are in it too).
FILE_CHECKS, FILE_COVERAGE = study_checks(STUDY, load_claims(STUDY).set_index("claim_id"))
FILE_COVERED = {claim for claim, status in FILE_COVERAGE.items() if status == "covered"}


def test_packaged_claims_file_is_the_reference_copy() -> None:
    packaged = (
        REPO / "python" / "raidlab" / "studies" / "reference" / "ssd_raid_tuning_claims.csv"
    ).read_text()
    assert packaged == (REPO / "data" / "reference" / "ssd_raid_tuning_claims.csv").read_text()


def test_coverage_lists_every_claim_of_the_file_exactly_once() -> None:
    assert len(CSV_IDS) == len(set(CSV_IDS))
    assert set(STUDY.coverage) <= set(CSV_IDS)
    assert sorted(FILE_COVERAGE) == sorted(CSV_IDS)


def test_every_claim_of_the_file_is_covered_or_has_its_reason() -> None:
    assert FILE_COVERED >= COVERED
    reasons = [status for status in FILE_COVERAGE.values() if status != "covered"]
    assert all(len(reason) > 10 for reason in reasons)


def test_covered_claims_are_the_ones_with_checks() -> None:
    checked = {check.claim_id for check in STUDY.checks()}
    covered = {claim for claim, status in STUDY.coverage.items() if status == "covered"}
    assert checked == covered == COVERED


def test_every_claim_not_covered_gives_a_reason() -> None:
    reasons = [status for status in STUDY.coverage.values() if status != "covered"]
    assert all(len(reason) > 10 for reason in reasons)


def test_iops_runs_use_the_pts_outstanding_io() -> None:
    runs, scenarios = claim_scenarios(
        [check for check in STUDY.checks() if check.claim_id == "T01"], 1000, 1
    )
    workload = scenarios[0]["workload"]
    assert (workload["numjobs"], workload["iodepth"]) == (PTS_NUMJOBS, PTS_IODEPTH) == (2, 16)
    assert workload["bs"] == [[4096, 1]] and workload["rw"] == "randread"


def test_latency_runs_are_at_qd1() -> None:
    _, scenarios = claim_scenarios(
        [check for check in STUDY.checks() if check.claim_id == "T06"], 1000, 1
    )
    assert {(s["workload"]["numjobs"], s["workload"]["iodepth"]) for s in scenarios} == {(1, 1)}


def test_single_ssd_runs_on_hba_and_arrays_on_the_study_controllers() -> None:
    _, scenarios = claim_scenarios(STUDY.checks(), 1000, 1)
    setups = {
        (s["array"]["level"], s["array"]["drive_count"], s["array"]["controller"]["name"])
        for s in scenarios
    }
    assert setups == {
        (0, 1, "hba"),
        (1, 2, "linux-md"),
        (1, 2, "megaraid-9365"),
        (5, 4, "linux-md"),
        (5, 4, "megaraid-9365"),
        (10, 4, "linux-md"),
        (10, 4, "megaraid-9365"),
        (5, 4, "megaraid-9361"),
    }


def test_every_qualitative_claim_is_checked_as_a_direction() -> None:
    kinds: dict[str, set[str]] = {}
    for check in STUDY.checks():
        kinds.setdefault(check.claim_id, set()).add(check.tolerance.kind)
    qualitative = [claim for claim in CSV_IDS if claim.startswith("Q")]
    assert qualitative and all(kinds[claim] <= QUALITATIVE_KINDS for claim in qualitative)


def test_every_ssd_run_states_its_drive_state_and_the_default_is_steady() -> None:
    assert claims.DRIVE_STATE == "steady"
    _, scenarios = claim_scenarios(STUDY.checks(), 1000, 1)
    states = {
        s["array"]["drive"]["ftl"]["precondition"]
        for s in scenarios
        if s["array"]["drive"].get("ftl")
    }
    assert states == {"steady", "fob"}


def test_sequential_writes_of_the_over_provisioning_claim_start_secure_erased() -> None:
    # TKperf's throughput test secure-erases the drive before each block size: a drive
    # left by random-write preconditioning would make over-provisioning pay off (the
    # garbage collection of a fragmented drive), which the article did not see (Q09).
    (seq,) = [c for c in STUDY.checks() if (c.claim_id, c.variant) == ("Q09", "seq write")]
    _, scenarios = claim_scenarios([seq], 1000, 1)
    assert [s["workload"]["rw"] for s in scenarios] == ["write", "write"]
    assert {s["array"]["drive"]["ftl"]["precondition"] for s in scenarios} == {"fob"}
    assert sorted(s["array"]["drive"]["ftl"]["op_percent"] for s in scenarios) == [0.0, 20.0]


def test_read_ahead_claims_compare_read_ahead_on_and_off_single_threaded() -> None:
    checks = [c for c in STUDY.checks() if c.claim_id in ("Q07", "Q08")]
    assert sorted(c.variant for c in checks) == ["1M", "64K", "8K"]
    _, scenarios = claim_scenarios(checks, 1000, 1)
    assert {(s["workload"]["numjobs"], s["workload"]["iodepth"]) for s in scenarios} == {(1, 1)}
    assert {s["array"]["controller"]["read_ahead_bytes"] > 0 for s in scenarios} == {True, False}


@pytest.mark.parametrize(
    ("tolerance", "claimed", "simulated", "passes"),
    [
        (Tolerance("relative", 0.20), 107_000, 128_400, True),
        (Tolerance("relative", 0.20), 107_000, 128_500, False),
        (Tolerance("absolute", 15.0, "pp"), 30.0, 15.0, True),
        (Tolerance("absolute", 15.0, "pp"), 30.0, 45.5, False),
        (Tolerance("absolute", 0.02, "ms"), 0.04, 0.06, True),
        (Tolerance("lower_bound"), 1.4, 1.4, True),
        (Tolerance("lower_bound"), 1.4, 1.39, False),
        (Tolerance("exact"), 50.0, 50.0, True),
        (Tolerance("relative", 0.20), 107_000, math.nan, False),
        (Tolerance("direction", 1.0, "x"), math.nan, 1.01, True),
        (Tolerance("direction", 1.0, "x"), math.nan, 1.0, False),
        (Tolerance("unchanged", 0.10), math.nan, 1.09, True),
        (Tolerance("unchanged", 0.10), math.nan, 0.89, False),
        (Tolerance("range", 5.0, "ms", 10.0), math.nan, 10.0, True),
        (Tolerance("range", 5.0, "ms", 10.0), math.nan, 4.9, False),
        (Tolerance("direction", 1.0, "x"), math.nan, math.nan, False),
    ],
)
def test_tolerance_decides_pass_or_fail(
    tolerance: Tolerance, claimed: float, simulated: float, passes: bool
) -> None:
    assert tolerance.passes(claimed, simulated) is passes


def test_report_has_every_claim_and_one_row_per_uncovered_claim(fake_native: None) -> None:
    frame = reproduce_claims("ssd-raid-tuning", ios=200, jobs=1, progress=False)
    assert list(frame.columns) == CLAIM_COLUMNS
    assert set(frame["claim_id"]) == set(CSV_IDS)
    uncovered = frame[frame["result"] == "not covered"]
    assert sorted(uncovered["claim_id"]) == sorted(set(CSV_IDS) - FILE_COVERED)
    assert not uncovered["how"].str.startswith("no reason").any()
    assert uncovered["claim_id"].is_unique
    assert set(frame.loc[frame["result"] != "not covered", "result"]) <= {"PASS", "FAIL"}


def test_claims_about_swr_and_hwr_are_checked_on_both(fake_native: None) -> None:
    frame = reproduce_claims("ssd-raid-tuning", ios=200, jobs=1, progress=False)
    for claim_id in ("T03",):
        assert sorted(frame.loc[frame["claim_id"] == claim_id, "variant"]) == ["HWR", "SWR"]
    assert sorted(frame.loc[frame["claim_id"] == "T06", "variant"]) == ["mixed", "read", "write"]


def test_raid10_capacity_claim_is_exact_from_the_geometry(fake_native: None) -> None:
    frame = reproduce_claims("ssd-raid-tuning", ios=200, jobs=1, progress=False)
    (row,) = frame[frame["claim_id"] == "T21"].itertuples()
    assert (row.simulated, row.result, row.tolerance_kind) == (50.0, "PASS", "exact")


def test_claimed_values_come_from_the_file() -> None:
    values = load_claims(STUDY).set_index("claim_id")["value"]
    assert (values["T01"], values["T02"], values["T06"]) == (107000, 120000, 0.04)


def test_reproduce_claims_csv_lists_rows_and_method_on_stderr(fake_native: None) -> None:
    result = runner.invoke(
        app, ["reproduce", "ssd-raid-tuning", "--jobs", "1", "--ios-max", "200", "--format", "csv"]
    )
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(io.StringIO(result.stdout))
    assert list(frame.columns) == CLAIM_COLUMNS
    assert "2 jobs x QD 16" in result.stderr and "SNIA PTS" in result.stderr
    assert "drive state: steady" in result.stderr


def test_qualitative_claims_show_their_words_and_tolerance(fake_native: None) -> None:
    frame = reproduce_claims("ssd-raid-tuning", ios=200, jobs=1, progress=False)
    (q01,) = frame[(frame["claim_id"] == "Q01") & (frame["variant"] == "SWR")].itertuples()
    shown = (q01.claimed_text, q01.tolerance_text, q01.tolerance_kind)
    assert shown == (">1", "> 1.1 x", "direction")
    result = runner.invoke(app, ["reproduce", "ssd-raid-tuning", "--jobs", "1", "--ios-max", "200"])
    assert "RAID10 only" in result.stdout and "1 ± 10 %" in result.stdout


def test_reproduce_claims_exits_0_even_when_a_claim_fails(fake_native: None) -> None:
    # The fake simulator is far from the article, so some claims fail.
    result = runner.invoke(app, ["reproduce", "ssd-raid-tuning", "--jobs", "1", "--ios-max", "200"])
    assert result.exit_code == 0, result.output
    assert "FAIL" in result.stdout and "claims not covered" in result.stdout


def test_strict_exits_1_when_a_claim_fails(fake_native: None) -> None:
    result = runner.invoke(
        app, ["reproduce", "ssd-raid-tuning", "--jobs", "1", "--ios-max", "200", "--strict"]
    )
    assert result.exit_code == 1, result.output


def test_strict_exits_0_when_every_covered_claim_passes(
    fake_native: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    only_geometry = [check for check in STUDY.checks() if check.claim_id == "T21"]
    monkeypatch.setitem(
        CLAIM_STUDIES, "ssd-raid-tuning", claims.replace_checks(STUDY, only_geometry)
    )
    result = runner.invoke(app, ["reproduce", "ssd-raid-tuning", "--strict", "--format", "csv"])
    assert result.exit_code == 0, result.output


def test_strict_is_refused_for_atto_studies() -> None:
    result = runner.invoke(app, ["reproduce", "hdd-raid0-atto", "--strict"])
    assert result.exit_code == 2 and result.stderr.startswith("error: --strict: ")


def test_reproduce_claims_json_has_records_coverage_and_summary(fake_native: None) -> None:
    result = runner.invoke(
        app, ["reproduce", "ssd-raid-tuning", "--jobs", "1", "--ios-max", "200", "--format", "json"]
    )
    document = json.loads(result.stdout)
    assert sorted(document["coverage"]) == sorted(CSV_IDS)
    assert document["summary"]["claims"] == len(CSV_IDS)
    assert document["summary"]["covered"] == len(FILE_COVERED)
    assert any("SNIA PTS" in line for line in document["method"])
    assert list(document["records"][0]) == CLAIM_COLUMNS


def test_unknown_study_suggests_the_claim_study() -> None:
    result = runner.invoke(app, ["reproduce", "ssd-raid-tunin"])
    assert result.exit_code == 2 and "did you mean ssd-raid-tuning?" in result.stderr


def test_native_study_gives_a_finite_value_for_every_check() -> None:
    frame = reproduce_claims("ssd-raid-tuning", ios=2000, jobs=1, progress=False)
    covered = frame[frame["result"] != "not covered"]
    assert covered["simulated"].notna().all()
    assert len(covered) == len(FILE_CHECKS)


def test_native_study_reports_each_check_as_its_tolerance_decides() -> None:
    """A claim the simulator misses is reported FAIL, never hidden: every row's result
    is what its tolerance says of its claimed and simulated values, and the signs of
    the tuning effects are right (T23, T24, T29)."""
    frame = reproduce_claims("ssd-raid-tuning", ios=4000, jobs=1, progress=False)
    checks = {(check.claim_id, check.variant): check for check in FILE_CHECKS}
    covered = frame[frame["result"] != "not covered"]
    for row in covered.itertuples():
        check = checks[(row.claim_id, "" if pd.isna(row.variant) else row.variant)]
        passes = check.tolerance.passes(row.claimed, row.simulated)
        assert row.result == ("PASS" if passes else "FAIL"), row
    value = covered.drop_duplicates("claim_id").set_index("claim_id")["simulated"]
    assert value["T23"] < value["T22"], "write-back is slower than write-through on SSD RAID 5"
    assert 0 < value["T24"] < 100
    assert value["T29"] > 1.5 * value["T28"], "20 % over-provisioning raises random writes"


def test_md_random_reads_scale_with_members() -> None:
    """md's one serial cost is the AHCI interrupt path (5.65 us a member command,
    ~177k IOPS), so a RAID 5 of four reads with its members, past its RAID 1 of two at
    the same outstanding I/O and past twice one SSD (the article: "more than double").
    The MegaRAID's RAID 1 (T02) is no longer ahead of md's (T01): its 40 us per request
    (T06) costs it at 32 outstanding reads what the drives' QD 16 latency leaves
    (docs/studies.md)."""
    raid5 = Setup("RAID 5 of 4 SWR", claims.SWR, level=5, drives=4)
    runs = [
        claims._pts(claims.RAID1["SWR"], "read"),
        claims._pts(raid5, "read"),
        claims._pts(claims.SINGLE, "read"),
    ]
    check = Check("T01", "", tuple(runs), lambda _: 0.0, Tolerance("exact"), "")
    ordered, scenarios = claim_scenarios([check], 4000, 1)
    simulated = claims.run_scenarios(scenarios, jobs=1, progress=False)
    raid1, raid5_iops, single = (claims.total_iops(result) for result in simulated)
    assert ordered == runs
    assert raid5_iops > 1.3 * raid1, (raid1, raid5_iops)
    assert raid5_iops > 2.0 * single, (single, raid5_iops)


def test_md_arrays_sit_on_the_test_hosts_sata_ports_with_mdadms_chunk() -> None:
    # The X9SCM-F's C204 has two 6 Gb/s and four 3 Gb/s SATA ports: md's RAID 5 of 4
    # has two members on 3 Gb/s ports. md's chunk is mdadm's default (512 KiB), the
    # MegaRAID's strip its default (64 KiB).
    checks = [c for c in STUDY.checks() if c.claim_id == "Q01"]
    _, scenarios = claim_scenarios(checks, 1000, 1)
    by_controller = {s["array"]["controller"]["name"]: s["array"] for s in scenarios}
    md, mega = by_controller["linux-md"], by_controller["megaraid-9365"]
    assert md["controller"]["full_rate_ports"] == 2
    assert md["controller"]["slow_port_rate_bytes_per_s"] == 275e6
    assert md["stripe_unit_bytes"] == 512 * 1024
    assert "full_rate_ports" not in mega["controller"]
    assert mega["stripe_unit_bytes"] == 64 * 1024


def test_writes_through_a_write_back_cache_onto_fob_ssds_fill_the_cache_first() -> None:
    # TKperf's throughput rounds last minutes: a 1 GiB cache is full long before the
    # measurement, so the run warms up with twice the cache in its own writes.
    setup = Setup("RAID 5 of 4 HWR", "megaraid-9365", level=5, drives=4, state="fob")
    wb = dataclasses.replace(setup, write_back=True)
    assert claims._warmup_ios(claims.Run(wb, "write", 2, 16, bs="1M")) == 2 * 1024
    assert claims._warmup_ios(claims.Run(setup, "write", 2, 16, bs="1M")) is None
    assert claims._warmup_ios(claims.Run(wb, "read", 2, 16, bs="1M")) is None
