"""Claims without a hand-written check, read from their text (raidlab.studies.claim_text).

Rows here are synthetic (made-up values, "S*" and "X*" ids), not the article's: the
tests pin what the interpreter builds -- setups, runs, tolerances -- and that it builds
what the hand-written checks build for the visible claims, not simulated figures.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd
import pytest
from raidlab.studies import claims, reference_data
from raidlab.studies.claim_studies import CLAIM_STUDIES, reproduce_claims
from raidlab.studies.claim_text import FROM_TEXT, interpret
from raidlab.studies.claims import (
    PTS_IODEPTH,
    PTS_NUMJOBS,
    Check,
    Run,
    Tolerance,
    claim_scenarios,
    load_claims,
)

STUDY = CLAIM_STUDIES["ssd-raid-tuning"]
PTS = (PTS_NUMJOBS, PTS_IODEPTH)


def read(
    config: str, metric: str, value: str, unit: str, condition: str = "", claim_id: str = "S01"
) -> list[Check] | str:
    number = pd.to_numeric(value, errors="coerce")
    row = {
        "config": config,
        "metric": metric,
        "value": float(number),
        "value_text": value,
        "unit": unit,
        "condition": condition,
    }
    return interpret(claim_id, row)


def checks_of(*args: str) -> list[Check]:
    checks = read(*args)
    assert not isinstance(checks, str), checks
    return checks


def one(*args: str) -> Check:
    (check,) = checks_of(*args)
    return check


def shape(run: Run) -> tuple[object, ...]:
    """A run without its setup's name: what the scenario is built from."""
    setup = run.setup
    return (
        setup.controller,
        setup.level,
        setup.drives,
        setup.drive,
        setup.state,
        setup.write_back,
        setup.op_percent,
        setup.read_ahead,
        run.rw,
        run.numjobs,
        run.iodepth,
        run.bs,
    )


STUDY_SSD = "intel-dc-s3500-80g"


def pts_randread(controller: str, level: int, drives: int) -> tuple[object, ...]:
    """The shape of the study's IOPS run of 4 KiB random reads on the study drive in
    steady state, no write-back, over-provisioning or read-ahead set."""
    setup = (controller, level, drives, STUDY_SSD, "steady", False, 0.0, None)
    return (*setup, "randread", *PTS, "4K")


# --- config ----------------------------------------------------------------------


def test_iops_figure_is_the_pts_run_of_the_named_array() -> None:
    check = one(
        "RAID5 3x Intel DC S3500 80GB SWR (mdadm)",
        "random_read_iops",
        "5000",
        "IOPS",
        "4KB random read; 'around'",
    )
    (run,) = check.runs
    assert shape(run) == pts_randread("linux-md", 5, 3)
    assert check.tolerance == Tolerance("relative", 0.20)
    assert check.role == "prediction" and check.how.endswith(FROM_TEXT)
    assert check.variant == ""


@pytest.mark.parametrize(
    ("config", "controllers"),
    [
        ("RAID10 4x SSD SWR and HWR", {"SWR": "linux-md", "HWR": "megaraid-9365"}),
        ("RAID 10 four SSDs", {"SWR": "linux-md", "HWR": "megaraid-9365"}),
        ("RAID5 4x SSD HWR (MegaRAID 9365)", {"": "megaraid-9365"}),
        ("RAID5 4x SSD hardware RAID", {"": "megaraid-9365"}),
        ("RAID5 4x SSD HWR (Fig. 4: Avago MegaRAID 9361)", {"": "megaraid-9361"}),
        ("RAID5 4x SSD software RAID", {"": "linux-md"}),
        ("single Intel DC S3500 80GB", {"": "hba"}),
    ],
)
def test_controller_words_map_to_the_study_presets(config: str, controllers: dict) -> None:
    checks = checks_of(config, "random_write_iops", "1000", "IOPS", "4KB random write")
    assert {check.variant: check.runs[0].setup.controller for check in checks} == controllers


@pytest.mark.parametrize(
    ("config", "level", "drives", "drive"),
    [
        ("RAID 5 3x SSD SWR", 5, 3, STUDY_SSD),
        ("RAID6 (6 SSDs) SWR", 6, 6, STUDY_SSD),
        ("RAID0 two Intel DC S3500 80GB SWR", 0, 2, STUDY_SSD),
        ("RAID1 Intel DC S3500 80GB SWR", 1, 2, STUDY_SSD),
        ("single Intel DC S3500 800GB", 0, 1, "intel-dc-s3500-800g"),
        ("single Intel DC S3700 800GB", 0, 1, "intel-dc-s3700-800g"),
        ("RAID5 4x HDD SWR", 5, 4, "wd-caviar-blue-500g"),
    ],
)
def test_level_drive_count_and_drive(config: str, level: int, drives: int, drive: str) -> None:
    setup = checks_of(config, "random_read_iops", "1000", "IOPS")[0].runs[0].setup
    assert (setup.level, setup.drives, setup.drive) == (level, drives, drive)


def test_modifiers_come_from_config_or_condition() -> None:
    def setup(config: str, condition: str):  # noqa: ANN202
        return one(config, "random_write_iops", "1000", "IOPS", condition).runs[0].setup

    wb = setup("RAID5 4x SSD HWR (MegaRAID 9361)", "write-back (write cache on)")
    wt = setup("RAID5 4x SSD HWR (MegaRAID 9361)", "write-through (write cache off)")
    assert (wb.write_back, wt.write_back) == (True, False)
    assert setup("single Intel DC S3500 800GB", "40% overprovisioning").op_percent == 40.0
    assert setup("single Intel DC S3500 800GB, 20% overprovisioning", "").op_percent == 20.0
    assert setup("single Intel DC S3500 800GB", "no extra overprovisioning").op_percent == 0.0
    assert setup("single Intel DC S3500 800GB", "fob, after a secure erase").state == "fob"
    assert setup("RAID5 4x SSD HWR, read-ahead on", "").read_ahead == "always"
    assert setup("RAID5 4x SSD HWR, read-ahead off", "").read_ahead == "none"


def test_write_back_on_an_array_naming_no_controller_is_the_hardware_one() -> None:
    check = one("RAID5 4x SSD", "random_write_iops", "1000", "IOPS", "write-back")
    assert check.runs[0].setup.controller == "megaraid-9365"


# --- metric ----------------------------------------------------------------------


def test_latency_is_the_qd1_mean_of_the_named_workload() -> None:
    check = one("RAID10 4x SSD HWR", "random_write_latency", "0.1", "ms")
    assert shape(check.runs[0])[8:] == ("randwrite", 1, 1, "4K")
    assert check.tolerance == Tolerance("relative", 0.20)


def test_all_three_workloads_are_three_checks() -> None:
    checks = checks_of(
        "RAID5 4x SSD HWR",
        "latency_overhead_vs_single_ssd",
        "0.05",
        "ms",
        "all three workloads (read, mixed, write); 'approximately'",
    )
    assert [check.variant for check in checks] == ["read", "mixed", "write"]
    assert [check.runs[0].rw for check in checks] == ["randread", "randrw", "randwrite"]
    for check in checks:
        array, single = check.runs
        assert (single.setup.controller, single.setup.level, single.setup.drives) == ("hba", 0, 1)
        assert (array.numjobs, array.iodepth) == (single.numjobs, single.iodepth) == (1, 1)
        assert check.tolerance == Tolerance("absolute", 0.02, "ms")


def results_of(check: Check, *iops: float) -> dict[Run, dict]:
    return {
        run: {"ops": {"read": {"iops": value, "ios": 1, "lat_mean_ns": value, "mbps": value}}}
        for run, value in zip(check.runs, iops, strict=True)
    }


@pytest.mark.parametrize(
    ("metric", "unit", "simulated", "tolerance"),
    [
        ("random_read_iops_vs_single_ssd", "x", 1.5, Tolerance("relative", 0.20)),
        (
            "random_read_iops_penalty_vs_single_ssd",
            "percent",
            -50.0,
            Tolerance("absolute", 15.0, "pp"),
        ),
        ("random_read_iops_gain_vs_single_ssd", "percent", 50.0, Tolerance("absolute", 15.0, "pp")),
    ],
)
def test_relations_to_a_single_ssd(
    metric: str, unit: str, simulated: float, tolerance: Tolerance
) -> None:
    check = one("RAID5 4x SSD HWR", metric, "1", unit, "4KB random read; 'about'")
    array, single = check.runs
    assert shape(single) == pts_randread("hba", 0, 1)
    assert array.setup.level == 5
    assert check.metric(results_of(check, 150_000.0, 100_000.0)) == pytest.approx(simulated)
    assert check.tolerance == tolerance


def test_more_than_is_a_lower_bound_and_less_than_an_upper_one() -> None:
    more = one(
        "RAID10 4x SSD SWR", "random_read_iops_vs_single_ssd", "2", "x", "lower bound ('more than')"
    )
    less = one("RAID10 4x SSD SWR", "random_write_latency", "1", "ms", "'less than'")
    assert (more.tolerance.kind, less.tolerance.kind) == ("lower_bound", "upper_bound")


def test_a_claimed_range_is_widened_as_the_study_widens_it() -> None:
    check = one(
        "single Intel DC S3500 80GB", "random_read_latency_min", "0.1", "ms", "range 0.1-0.3"
    )
    assert check.tolerance == Tolerance("range", 0.1 * 0.8, "ms", 0.3 * 1.2)


def test_reduction_with_a_setting_compares_it_on_and_off() -> None:
    check = one(
        "RAID5 4x SSD HWR (MegaRAID 9361)",
        "write_iops_reduction_with_writeback",
        "50",
        "percent",
        "'nearly'",
    )
    on, off = check.runs
    assert (on.setup.write_back, off.setup.write_back) == (True, False)
    assert on.rw == off.rw == "randwrite"
    assert check.metric(results_of(check, 1_000.0, 4_000.0)) == pytest.approx(75.0)
    assert check.tolerance == Tolerance("absolute", 15.0, "pp")


def test_gain_with_over_provisioning_needs_its_percentage() -> None:
    check = one(
        "single Intel DC S3500 800GB",
        "random_write_iops_gain_with_overprovisioning",
        "100",
        "percent",
        "40% overprovisioning",
    )
    assert [run.setup.op_percent for run in check.runs] == [40.0, 0.0]
    reason = read(
        "single Intel DC S3500 800GB",
        "random_write_iops_gain_with_overprovisioning",
        "100",
        "percent",
        "",
    )
    assert isinstance(reason, str) and "over-provisioning" in reason


def test_two_levels_compared() -> None:
    checks = checks_of("RAID5 vs RAID10 4x SSD", "random_write_iops_raid10_vs_raid5", "1.5", "x")
    assert [check.variant for check in checks] == ["SWR", "HWR"]
    assert [(run.setup.level, run.setup.drives) for run in checks[0].runs] == [(10, 4), (5, 4)]
    of_config = one("RAID10 4x SSD SWR", "random_write_iops_vs_raid5", "1.5", "x")
    assert [run.setup.level for run in of_config.runs] == [10, 5]


def test_sequential_throughput_is_tkperfs_throughput_test() -> None:
    default = one("RAID5 4x SSD HWR", "seq_write_throughput", "900", "MBps")
    # HWR is the 9365 of Figures 2-3, in the MegaRAID's default write-back.
    assert shape(default.runs[0])[4:] == ("fob", True, 0.0, None, "write", *PTS, "1M")
    assert one("RAID5 4x SSD HWR", "seq_read_throughput_8k", "90", "MBps").runs[0].bs == "8K"
    stated = one("RAID5 4x SSD HWR", "seq_read_throughput", "90", "MBps", "64KB blocks")
    assert stated.runs[0].bs == "64K"
    single_threaded = one(
        "RAID5 4x SSD HWR", "seq_read_throughput", "90", "MBps", "1,024KB blocks, single-threaded"
    )
    assert shape(single_threaded.runs[0])[-4:] == ("read", 1, 1, "1M")
    read_ahead = one("RAID5 4x SSD HWR, read-ahead on", "seq_read_throughput_8k", "90", "MBps")
    assert shape(read_ahead.runs[0])[4:] == ("steady", True, 0.0, "always", "read", 1, 1, "8K")
    assert read_ahead.metric(results_of(read_ahead, 123.0)) == 123.0


def test_read_ahead_on_vs_off_is_their_ratio_per_block_size() -> None:
    checks = checks_of(
        "RAID5 4x SSD HWR, read-ahead on vs off",
        "seq_read_throughput_64k_and_1024k",
        "no difference",
        "",
    )
    assert [check.variant for check in checks] == ["64K", "1M"]
    assert [run.setup.read_ahead for run in checks[0].runs] == ["always", "none"]
    assert checks[0].tolerance == Tolerance("unchanged", 0.10)


def test_usable_capacity_is_exact_from_the_geometry() -> None:
    check = one("RAID5 4x SSD", "usable_capacity_fraction", "75", "percent")
    assert (check.runs, check.role, check.tolerance.kind) == ((), "geometry", "exact")
    assert check.metric({}) == pytest.approx(75.0)


def test_a_claim_in_other_units_is_scaled() -> None:
    check = one("RAID10 4x SSD HWR", "random_read_latency", "120", "us")
    latency_ns = 100_000.0  # 0.1 ms
    results = {check.runs[0]: {"ops": {"read": {"ios": 1, "lat_mean_ns": latency_ns}}}}
    assert check.metric(results) == pytest.approx(100.0)


def test_stated_outstanding_io_overrides_the_method() -> None:
    check = one("RAID10 4x SSD HWR", "random_read_iops", "1000", "IOPS", "4KB random read, QD 32")
    assert (check.runs[0].numjobs, check.runs[0].iodepth) == (1, 32)
    jobs = one("RAID10 4x SSD HWR", "random_read_iops", "1000", "IOPS", "4 jobs x QD 8")
    assert (jobs.runs[0].numjobs, jobs.runs[0].iodepth) == (4, 8)


def test_a_figure_with_a_setting_on_is_measured_with_it() -> None:
    check = one("RAID5 4x SSD SWR and HWR", "random_write_iops_with_writeback", "1", "IOPS")
    (run,) = check.runs
    assert (run.setup.controller, run.setup.write_back) == ("megaraid-9365", True)


def test_a_datasheet_figure_of_a_preset_drive_is_checked_at_its_rating_conditions() -> None:
    config = "single Intel DC S3500 80GB (manufacturer spec)"
    iops = one(config, "random_write_iops", "7000", "IOPS", "datasheet spec")
    (run,) = iops.runs
    assert (run.rw, run.numjobs, run.iodepth, run.bs) == ("randwrite", 1, 32, "4K")
    assert run.setup.drive == STUDY_SSD and run.setup.state == "steady"
    # The drive presets are set from their datasheets: a calibration row, not a prediction.
    assert iops.role == "calibration" and "rating conditions" in iops.how
    (throughput,) = one(config, "seq_write_throughput", "100", "MBps", "datasheet spec").runs
    assert (throughput.rw, throughput.iodepth, throughput.bs) == ("write", 32, "128K")


def test_throughput_without_a_direction_takes_it_from_the_condition() -> None:
    check = one("RAID5 4x SSD HWR", "throughput", "1", "MBps", "sequential read")
    assert check.runs[0].rw == "read"
    reason = read("RAID5 4x SSD HWR", "throughput", "1", "MBps", "50/50 mixed")
    assert isinstance(reason, str) and "reads or writes" in reason


def test_an_approximate_geometry_figure_is_held_to_its_rounding() -> None:
    check = one("RAID5 3x SSD", "usable_capacity_fraction", "66.7", "percent", "'about'")
    assert check.tolerance == Tolerance("absolute", 0.05, "pp")
    assert check.tolerance.passes(66.7, check.metric({}))


def test_a_figure_of_one_side_of_a_comparison_is_refused() -> None:
    reason = read("RAID5 4x SSD HWR, read-ahead on vs off", "seq_read_throughput_8k", "90", "MBps")
    assert isinstance(reason, str) and "read_ahead on and off" in reason


# --- refused ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "words"),
    [
        (("RAID5 4x SSD HWR", "rebuild_hours", "3", "h"), "metric 'rebuild_hours'"),
        (("RAID5 4x SSD Adaptec 8805", "random_read_iops", "1", "IOPS"), "'Adaptec 8805'"),
        (("RAID5 4x SSD MegaRAID 9271", "random_read_iops", "1", "IOPS"), "'MegaRAID 9271'"),
        (("RAID5 4x Samsung 850 PRO", "random_read_iops", "1", "IOPS"), "not one of"),
        (("RAID5 SSD SWR", "random_read_iops", "1", "IOPS"), "no drive count"),
        (("RAID7 4x SSD", "random_read_iops", "1", "IOPS"), "RAID 7"),
        (("4x SSD on a shelf", "random_read_iops", "1", "IOPS"), "no RAID level"),
        (("RAID5 4x SSD SWR", "random_read_iops", "1", "MBps"), "unit 'MBps'"),
        (("RAID5 4x SSD SWR", "random_read_iops", "lots", "IOPS"), "value 'lots'"),
        (("RAID5 4x SSD SWR", "iops", "1", "IOPS"), "names no workload"),
        (("single SSD", "random_read_iops_vs_single_ssd", "1", "x"), "single drive"),
        (
            ("single Samsung 850 PRO (manufacturer spec)", "random_read_iops", "1", "IOPS"),
            "datasheet",
        ),
        (
            ("RAID1 2x Intel DC S3500 80GB (datasheet)", "random_read_iops", "1", "IOPS"),
            "a datasheet figure is of one drive",
        ),
        (("BBU module", "cost_min", "150", "USD"), "price"),
        (("RAID5 4x SSD SWR", "random_write_iops", "1", "IOPS", "write-back"), "software RAID"),
        (("single SSD", "random_write_iops", "1", "IOPS", "write-back"), "no controller cache"),
    ],
)
def test_a_row_it_cannot_read_gets_a_reason_naming_what(row: tuple[str, ...], words: str) -> None:
    reason = read(*row)
    assert isinstance(reason, str) and words in reason, reason


# --- end to end --------------------------------------------------------------------

SYNTHETIC_ROWS = "".join(
    f"x.txt,{row}\n"
    for row in (
        "X01,RAID5 3x Intel DC S3500 80GB SWR and HWR,random_read_iops,50000,IOPS,'around'",
        "X02,RAID10 4x SSD HWR,random_write_iops_penalty_vs_single_ssd,25,percent,'about'",
        'X03,RAID10 4x SSD SWR,latency_overhead_vs_single_ssd,0.01,ms,"all three workloads"',
        "X04,RAID5 4x SSD HWR (MegaRAID 9361),seq_read_throughput,1500,MBps,1024KB blocks",
        "X05,single Intel DC S3500 800GB,random_write_iops,40000,IOPS,40% overprovisioning",
        "X06,RAID5 4x SSD Adaptec 8805,random_read_iops,1,IOPS,",
        "X07,RAID6 5x SSD,usable_capacity_fraction,60,percent,",
    )
)


@pytest.fixture
def extended_claims(tmp_path: Path) -> Path:
    """The study's claims file with synthetic rows appended, as held-back rows would be."""
    text = reference_data.read_text(STUDY.claims_file)
    path = tmp_path / "claims.csv"
    path.write_text(text + SYNTHETIC_ROWS)
    return path


def test_extra_rows_are_checked_from_their_text_or_get_a_reason(
    fake_native: None, extended_claims: Path
) -> None:
    frame = reproduce_claims(
        "ssd-raid-tuning", ios=200, jobs=1, progress=False, claims_file=extended_claims
    )
    rows = frame[frame["claim_id"].str.startswith("X")]
    assert sorted(set(rows["claim_id"])) == [f"X0{n}" for n in range(1, 8)]
    covered = rows[rows["result"] != "not covered"]
    assert set(covered["result"]) <= {"PASS", "FAIL"}
    assert covered["how"].str.endswith(f"{FROM_TEXT}").all()
    assert sorted(covered.groupby("claim_id").size().items()) == [
        ("X01", 2),
        ("X02", 1),
        ("X03", 3),
        ("X04", 1),
        ("X05", 1),
        ("X07", 1),
    ]
    (x06,) = rows[rows["claim_id"] == "X06"].itertuples()
    assert x06.result == "not covered" and "Adaptec 8805" in x06.how
    assert frame.attrs["coverage"]["X06"] == x06.how
    assert frame.attrs["summary"]["claims"] == frame["claim_id"].nunique()
    packaged = CLAIM_STUDIES["ssd-raid-tuning"]
    _, coverage = claims.study_checks(packaged, load_claims(packaged).set_index("claim_id"))
    covered = sum(status == "covered" for status in coverage.values())
    assert frame.attrs["summary"]["covered"] == covered + 6


def test_known_claims_keep_their_checks_and_reasons_with_extra_rows(
    fake_native: None, extended_claims: Path
) -> None:
    extended = reproduce_claims(
        "ssd-raid-tuning", ios=200, jobs=1, progress=False, claims_file=extended_claims
    )
    packaged = reproduce_claims("ssd-raid-tuning", ios=200, jobs=1, progress=False)
    known = extended[~extended["claim_id"].str.startswith("X")].reset_index(drop=True)
    pd.testing.assert_frame_equal(known, packaged)
    hand_written = packaged["claim_id"].isin(list(STUDY.coverage))
    assert not packaged.loc[hand_written, "how"].str.contains(FROM_TEXT, regex=False).any()


def test_a_one_row_claims_file_runs_only_its_claim(fake_native: None, tmp_path: Path) -> None:
    path = tmp_path / "one.csv"
    path.write_text(
        "source_file,claim_id,config,metric,value,unit,condition\n"
        + SYNTHETIC_ROWS.splitlines()[0]
        + "\n"
    )
    frame = reproduce_claims("ssd-raid-tuning", ios=200, jobs=1, progress=False, claims_file=path)
    assert list(frame["claim_id"]) == ["X01", "X01"]
    assert list(frame.attrs["coverage"]) == ["X01"]


# --- self-consistency with the hand-written checks ---------------------------------

# Visible claims with a hand-written check whose row the interpreter reads into the same
# scenarios, variants and tolerances.
SAME_AS_HAND_WRITTEN = (
    *("T03", "T04", "T05", "T06", "T21", "T22", "T23", "T24", "T28", "T29", "T33", "T34"),
    *("Q01", "Q02"),
)


def generic_and_hand_written(claim_id: str) -> tuple[list[Check], list[Check]]:
    row = load_claims(STUDY).set_index("claim_id").loc[claim_id].to_dict()
    generic = interpret(claim_id, row)
    assert not isinstance(generic, str), generic
    return generic, [check for check in STUDY.checks() if check.claim_id == claim_id]


@pytest.mark.parametrize("claim_id", SAME_AS_HAND_WRITTEN)
def test_interpreter_builds_the_hand_written_check(claim_id: str) -> None:
    generic, hand = generic_and_hand_written(claim_id)
    assert [c.variant for c in generic] == [c.variant for c in hand]
    assert [c.tolerance for c in generic] == [c.tolerance for c in hand]
    assert [c.runs for c in generic] == [c.runs for c in hand]
    assert claim_scenarios(generic, 1000, 1)[1] == claim_scenarios(hand, 1000, 1)[1]


@pytest.mark.parametrize("claim_id", ["T01", "T02"])
def test_interpreter_builds_t01_t02_but_without_a_variant_name(claim_id: str) -> None:
    # The hand-written T01/T02 name their one controller ("SWR", "HWR"); the
    # interpreter names a variant only where a claim has several (as T22 does).
    generic, hand = generic_and_hand_written(claim_id)
    assert [c.variant for c in generic] == [""]
    assert [c.tolerance for c in generic] == [c.tolerance for c in hand]
    assert claim_scenarios(generic, 1000, 1)[1] == claim_scenarios(hand, 1000, 1)[1]


def test_read_ahead_claims_differ_only_in_the_controller_the_row_does_not_name() -> None:
    # Q07/Q08's rows say "RAID5 4x SSD HWR" (HWR: the 9365 of Figures 2-3, write-back);
    # the hand-written checks use Figure 4's MegaRAID 9361, write-through, which the row
    # leaves out.
    for claim_id in ("Q07", "Q08"):
        generic, hand = generic_and_hand_written(claim_id)
        assert {run.setup.controller for c in generic for run in c.runs} == {"megaraid-9365"}
        on_9361 = [
            dataclasses.replace(
                check,
                runs=tuple(
                    dataclasses.replace(
                        run,
                        setup=dataclasses.replace(
                            run.setup, controller="megaraid-9361", write_back=False
                        ),
                    )
                    for run in check.runs
                ),
            )
            for check in generic
        ]
        assert [c.tolerance for c in generic] == [c.tolerance for c in hand]
        assert claim_scenarios(on_9361, 1000, 1)[1] == claim_scenarios(hand, 1000, 1)[1]


def test_interpreted_visible_claims_simulate_as_the_hand_written_ones() -> None:
    ids = ("T01", "T02", "T03", "T06", "T22", "T24", "T28", "T29")
    generic = [check for claim_id in ids for check in generic_and_hand_written(claim_id)[0]]
    hand = [check for claim_id in ids for check in generic_and_hand_written(claim_id)[1]]
    values = []
    for checks in (generic, hand):
        runs, scenarios = claim_scenarios(checks, 2000, 1)
        results = dict(
            zip(runs, claims.run_scenarios(scenarios, jobs=1, progress=False), strict=True)
        )
        values.append([c.metric({run: results[run] for run in c.runs}) for c in checks])
    assert all(math.isfinite(value) for value in values[0])
    assert values[0] == values[1]


def test_a_mixed_workload_takes_the_ratio_its_condition_states() -> None:
    # Unstated: 50/50 in the IOPS test (as T05 says), 65/35 in the latency test (the
    # SNIA PTS latency test's only mixed ratio).
    iops = one("RAID5 4x SSD SWR", "mixed_iops", "20000", "IOPS", "4KB random; 'around'")
    assert [run.rwmixread for run in iops.runs] == [50]
    latency = one("RAID5 4x SSD SWR", "mixed_latency", "0.3", "ms", "4KB random")
    assert [run.rwmixread for run in latency.runs] == [65]
    stated = one("RAID5 4x SSD SWR", "random_iops", "20000", "IOPS", "4KB 70/30 read/write")
    assert [(run.rw, run.rwmixread) for run in stated.runs] == [("randrw", 70)]
