"""Metric names read in whatever words a claims file uses (raidlab.studies.claim_metric).

Rows are synthetic rephrasings of the metric forms of the visible claims (an added
latency, a step between workloads, a slowdown with read-ahead, a gain from
over-provisioning, the drives that double a figure, SWR against HWR), not the article's
own strings: a parser fitted to the visible names fails here. Each form is checked for
what it builds (runs and the figure made of them) and each bad form for a reason
naming what it did not understand.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from raidlab.studies.claim_metric import NotExpressible, Relation, parse_metric, settle
from raidlab.studies.claim_text import interpret
from raidlab.studies.claims import Check, Run, Tolerance


def read(config: str, metric: str, value: str, unit: str, condition: str = "") -> list[Check] | str:
    row = {
        "config": config,
        "metric": metric,
        "value": float(pd.to_numeric(value, errors="coerce")),
        "value_text": value,
        "unit": unit,
        "condition": condition,
    }
    return interpret("S01", row)


def checks_of(*args: str) -> list[Check]:
    checks = read(*args)
    assert not isinstance(checks, str), checks
    return checks


def one(*args: str) -> Check:
    (check,) = checks_of(*args)
    return check


def results(check: Check, *values: float) -> dict[Run, dict]:
    """Each run of the check with one figure: IOPS, latency (ns) and MB/s alike."""
    return {
        run: {"ops": {"x": {"iops": value, "ios": 1, "lat_mean_ns": value * 1e6, "mbps": value}}}
        for run, value in zip(check.runs, values, strict=True)
    }


# --- the name's words -------------------------------------------------------------


@pytest.mark.parametrize(
    "metric",
    [
        "random_read_iops_gain_vs_single_ssd",
        "gain_in_random_read_iops_over_one_drive",
        "random_read_iops_increase_relative_to_a_single_ssd",
        "rand_read_iops_improvement_compared_to_single_drive",
        "iops_random_reads_uplift_vs_single",
    ],
)
def test_word_order_and_synonyms_do_not_matter(metric: str) -> None:
    measure, relation, levels = parse_metric(metric.replace("_in_", "_"), None)
    assert measure is not None
    assert (measure.kind, measure.workloads) == ("iops", ("read",))
    assert (relation.kind, relation.against, levels) == ("gain", "single", ())


@pytest.mark.parametrize(
    ("unit_class", "kind"),
    [("percent", "gain"), ("x", "ratio"), ("measure", "difference")],
)
def test_the_unit_says_whether_a_gain_is_percent_factor_or_difference(
    unit_class: str, kind: str
) -> None:
    assert settle(Relation("gain", "single"), unit_class).kind == kind
    down = {"gain": "penalty", "ratio": "inverse", "difference": "decrease"}[kind]
    assert settle(Relation("penalty", "single"), unit_class).kind == down


@pytest.mark.parametrize(
    ("metric", "kind", "against"),
    [
        ("hwr_advantage_over_swr_random_read_iops", "gain", "controller"),
        ("random_read_iops_hwr_minus_swr", "difference", "controller"),
        ("random_write_iops_raid10_over_raid5", "ratio", "level"),
        ("write_back_penalty_random_write_iops", "penalty", "modifier"),
        ("random_read_latency_ms", "value", ""),
        ("usable_capacity_percent", "capacity", ""),
        ("random_write_performance_vs_single_ssd", "ratio", "single"),
    ],
)
def test_more_rephrasings(metric: str, kind: str, against: str) -> None:
    _, relation, _ = parse_metric(metric, ("read",))
    assert (relation.kind, relation.against) == (kind, against)


# --- the forms ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "metric",
    ["added_latency", "latency_added_vs_single_ssd", "extra_latency_over_one_ssd"],
)
def test_an_added_latency_is_the_difference_to_one_ssd(metric: str) -> None:
    checks = checks_of("RAID1 2x SSD HWR", metric, "0.04", "ms", "all three workloads")
    assert [check.variant for check in checks] == ["read", "mixed", "write"]
    array, single = checks[0].runs
    assert (single.setup.controller, single.setup.drives) == ("hba", 1)
    assert (array.numjobs, array.iodepth) == (1, 1)
    assert checks[0].metric(results(checks[0], 0.15, 0.1)) == pytest.approx(0.05)
    assert checks[0].tolerance == Tolerance("absolute", 0.02, "ms")


def test_an_added_latency_in_microseconds_is_scaled() -> None:
    check = one("RAID1 2x SSD HWR", "additional_read_latency", "40", "us")
    assert check.metric(results(check, 0.15, 0.1)) == pytest.approx(50.0)
    assert check.tolerance == Tolerance("absolute", 20.0, "us")


def test_the_controller_a_metric_names_picks_that_variant() -> None:
    check = one("RAID1 2x SSD SWR and HWR", "latency_added_by_hwr", "0.04", "ms", "random read")
    assert check.runs[0].setup.controller == "megaraid-9365"
    reason = read("RAID1 2x SSD SWR", "latency_added_by_hwr", "0.04", "ms", "random read")
    assert isinstance(reason, str) and "about HWR" in reason


def test_a_latency_step_per_workload_is_one_check_per_workload() -> None:
    checks = checks_of("RAID10 4x SSD SWR", "latency_step_per_workload", "0.03", "ms")
    assert [check.variant for check in checks] == ["read", "mixed", "write"]
    assert all(check.runs[1].setup.drives == 1 for check in checks)


def test_a_step_between_two_workloads_compares_them_on_one_setup() -> None:
    check = one("RAID5 4x SSD HWR", "latency_step_from_read_to_write", "0.1", "ms")
    write, read_run = check.runs
    assert (write.rw, read_run.rw) == ("randwrite", "randread")
    assert write.setup == read_run.setup
    assert check.metric(results(check, 0.3, 0.1)) == pytest.approx(0.2)


@pytest.mark.parametrize(
    "metric", ["latency_step_between_workloads", "successive_latency_increase_workload_to_workload"]
)
def test_successive_workload_steps_are_read_to_mixed_and_mixed_to_write(metric: str) -> None:
    checks = checks_of("RAID5 4x SSD HWR", metric, "0.1", "ms")
    assert [check.variant for check in checks] == ["mixed", "write"]
    assert [(check.runs[0].rw, check.runs[1].rw) for check in checks] == [
        ("randrw", "randread"),
        ("randwrite", "randrw"),
    ]


@pytest.mark.parametrize(
    ("metric", "unit", "simulated"),
    [
        ("seq_read_throughput_slowdown_with_read_ahead", "percent", 20.0),
        ("read_ahead_slowdown_of_sequential_read_mbps", "percent", 20.0),
        ("seq_read_mbps_drop_due_to_readahead", "x", 1.25),
        ("sequential_read_bandwidth_lost_with_readahead", "MBps", 200.0),
    ],
)
def test_a_slowdown_with_read_ahead_compares_it_on_and_off(
    metric: str, unit: str, simulated: float
) -> None:
    check = one("RAID5 4x SSD HWR", metric, "1", unit, "64KB blocks")
    on, off = check.runs
    assert (on.setup.read_ahead, off.setup.read_ahead) == ("always", "none")
    assert (on.rw, on.bs) == ("read", "64K")
    assert check.metric(results(check, 800.0, 1000.0)) == pytest.approx(simulated)


@pytest.mark.parametrize(
    ("metric", "unit", "simulated"),
    [
        ("random_write_iops_gain_from_overprovisioning", "percent", 175.0),
        ("random_write_iops_increase_with_over_provisioning", "percent", 175.0),
        ("op_gain_random_write_iops", "x", 2.75),
        ("random_write_iops_added_by_spare_area", "IOPS", 21_000.0),
    ],
)
def test_a_gain_from_over_provisioning_compares_it_on_and_off(
    metric: str, unit: str, simulated: float
) -> None:
    check = one("single Intel DC S3500 800GB", metric, "1", unit, "20% overprovisioning")
    on, off = check.runs
    assert (on.setup.op_percent, off.setup.op_percent) == (20.0, 0.0)
    assert check.metric(results(check, 33_000.0, 12_000.0)) == pytest.approx(simulated)


def test_a_change_naming_no_baseline_takes_the_setting_its_condition_switches_on() -> None:
    op = one("single Intel DC S3500 800GB", "random_write_iops_gain", "175", "percent", "20% OP")
    assert [run.setup.op_percent for run in op.runs] == [20.0, 0.0]
    ahead = one("RAID5 4x SSD HWR, read-ahead on", "seq_read_throughput_8k_gain", "50", "percent")
    assert [run.setup.read_ahead for run in ahead.runs] == ["always", "none"]
    added = one("RAID1 2x SSD HWR", "random_read_latency_increase", "0.04", "ms")
    assert added.runs[1].setup.controller == "hba"


@pytest.mark.parametrize(
    "metric",
    [
        "drives_to_double_random_read_iops",
        "ssds_needed_to_double_random_read_iops_vs_single_ssd",
        "random_read_iops_doubling_drive_count",
        "number_of_drives_for_twice_the_random_read_iops",
    ],
)
def test_the_drive_count_that_doubles_a_figure(metric: str) -> None:
    check = one("RAID5 SSD SWR", metric, "4", "SSDs", "4KB random read")
    *arrays, single = check.runs
    assert [run.setup.drives for run in arrays] == [3, 4, 5]
    assert single.setup.drives == 1 and single.setup.controller == "hba"
    assert check.tolerance == Tolerance("exact")
    assert check.metric(results(check, 150.0, 210.0, 260.0, 100.0)) == 4.0
    assert math.isnan(check.metric(results(check, 150.0, 160.0, 170.0, 100.0)))
    assert check.tolerance.passes(4.0, 4.0) and not check.tolerance.passes(4.0, 3.0)


@pytest.mark.parametrize(
    "metric",
    [
        "drives_to_double_random_write_iops_vs_three_ssds",
        "random_write_iops_doubling_drive_count_compared_to_3_drives",
        "ssds_needed_for_twice_the_random_write_iops_over_three_ssds",
    ],
)
def test_the_drive_count_that_doubles_a_smaller_arrays_figure(metric: str) -> None:
    # "Double the IOPS performance compared with three SSDs": the baseline is the
    # level's array of three, not one drive, and the search starts past it.
    check = one("RAID5 SSD SWR", metric, "8", "drives")
    *arrays, base = check.runs
    assert [run.setup.drives for run in arrays] == list(range(4, 10))
    assert (base.setup.level, base.setup.drives, base.setup.controller) == (5, 3, "linux-md")
    figures = (120.0, 150.0, 170.0, 190.0, 205.0, 230.0, 100.0)
    assert check.metric(results(check, *figures)) == 8.0


def test_a_ratio_against_a_smaller_array_of_the_level() -> None:
    check = one("RAID5 4x SSD SWR", "random_write_iops_vs_three_ssds", "1.33", "x")
    run, base = check.runs
    assert (run.setup.drives, base.setup.drives, base.setup.level) == (4, 3, 5)
    assert check.metric(results(check, 133.0, 100.0)) == pytest.approx(1.33)


def test_a_figure_stated_of_two_workloads_is_checked_on_each() -> None:
    # "Mixed workloads and write-only operations ... approximately 4,000 IOPS".
    checks = checks_of("RAID5 4x SSD HWR", "mixed_and_write_iops", "4000", "IOPS")
    assert sorted(c.variant for c in checks) == ["mixed", "write"]
    assert sorted(c.runs[0].rw for c in checks) == ["randrw", "randwrite"]


def test_a_change_without_a_setting_measures_it_off_against_on() -> None:
    check = one("RAID5 4x SSD HWR", "seq_read_throughput_8k_slowdown_without_read_ahead", "2", "x")
    off, on = check.runs
    assert off.setup.read_ahead == "none" and on.setup.read_ahead not in (None, "none")
    # A slowdown as a factor: the baseline (on) over the measured (off).
    assert check.metric(results(check, 100.0, 200.0)) == pytest.approx(2.0)


@pytest.mark.parametrize(
    "metric",
    [
        "random_write_iops_gain_with_20_percent_overprovisioning",
        "random_write_iops_gain_op_20pct",
        "random_write_iops_gain_from_over_provisioning_20_percent",
    ],
)
def test_an_over_provisioning_percentage_in_the_name_is_the_setting(metric: str) -> None:
    check = one("single Intel DC S3500 800GB", metric, "2.75", "x")
    run, base = check.runs
    assert (run.setup.op_percent, base.setup.op_percent) == (20.0, 0.0)


def test_the_configs_level_and_count_named_again_in_the_metric() -> None:
    (check, _) = checks_of(
        "RAID5 3x SSD SWR and HWR", "raid5_random_write_iops_vs_single_ssd", "1", "x"
    )
    assert (check.runs[0].setup.level, check.runs[0].setup.drives) == (5, 3)
    check = one("RAID5 4x SSD SWR", "raid5_4x_random_write_iops", "10000", "IOPS")
    assert (check.runs[0].setup.level, check.runs[0].setup.drives) == (5, 4)
    # Another level or count than the config's is a contradiction, not a guess.
    assert "another" in read("RAID10 4x SSD SWR", "raid5_random_read_iops", "1", "IOPS")
    assert "another" in read("RAID5 4x SSD SWR", "raid5_3x_random_write_iops", "1", "IOPS")


def test_more_than_double_in_the_name_is_a_lower_bound_on_the_ratio() -> None:
    checks = checks_of(
        "RAID5 4x SSD SWR and HWR", "random_read_iops_more_than_double_single_ssd", "2", "x"
    )
    for check in checks:
        run, single = check.runs
        assert single.setup.controller == "hba" and run.setup.drives == 4
        assert check.tolerance.passes(2.0, 2.3) and not check.tolerance.passes(2.0, 1.9)


def test_a_change_of_a_workload_naming_no_quantity_is_of_its_access_figure() -> None:
    # "random read" in IOPS; a slowdown of random reads in percent: IOPS too.
    check = one("RAID5 4x SSD SWR", "random_read", "150000", "IOPS")
    assert check.runs[0].rw == "randread" and check.runs[0].iodepth == 16
    check = one("RAID5 4x SSD HWR", "read_ahead_random_read_slowdown", "20", "percent")
    on, off = check.runs
    assert on.rw == off.rw == "randread" and on.setup.read_ahead != off.setup.read_ahead


def test_both_controllers_with_a_ratio_word_compare_the_first_with_the_other() -> None:
    check = one("RAID5 3x SSD", "random_write_iops_swr_hwr_ratio", "1", "x")
    run, base = check.runs
    assert (run.setup.controller, base.setup.controller) == ("linux-md", "megaraid-9365")


def test_a_baseline_array_named_by_level_and_count() -> None:
    check = one("RAID5 4x SSD SWR", "write_iops_vs_raid5_3x", "1.3", "x")
    run, base = check.runs
    assert (run.setup.drives, base.setup.drives, base.setup.level) == (4, 3, 5)
    check = one("RAID5 SSD SWR", "ssds_for_double_write_iops_of_3_ssd_raid5", "8", "SSDs")
    assert check.runs[-1].setup.drives == 3 and check.runs[0].setup.drives == 4


def test_raid10_counts_drives_in_pairs() -> None:
    check = one("RAID10 SSD HWR", "drives_to_double_random_write_iops", "6", "drives")
    assert [run.setup.drives for run in check.runs[:-1]] == [4, 6, 8]


@pytest.mark.parametrize(
    ("metric", "first", "other"),
    [
        ("seq_read_throughput_swr_vs_hwr", "linux-md", "megaraid-9365"),
        ("sequential_read_mbps_md_relative_to_hardware", "linux-md", "megaraid-9365"),
        ("seq_read_throughput_hwr_vs_swr", "megaraid-9365", "linux-md"),
    ],
)
def test_swr_against_hwr(metric: str, first: str, other: str) -> None:
    check = one("RAID5 4x SSD", metric, "0.92", "x")
    run, base = check.runs
    assert (run.setup.controller, base.setup.controller) == (first, other)
    assert (run.rw, run.bs) == ("read", "1M")
    assert check.metric(results(check, 1100.0, 1200.0)) == pytest.approx(1100 / 1200)


def test_on_a_par_is_a_ratio_within_the_studys_about() -> None:
    checks = checks_of(
        "RAID5 3x SSD SWR and HWR", "random_write_iops_vs_single_ssd", "on a par", ""
    )
    assert [check.variant for check in checks] == ["SWR", "HWR"]
    assert checks[0].tolerance == Tolerance("unchanged", 0.20)
    assert checks[0].tolerance.passes(math.nan, 1.15)
    assert not checks[0].tolerance.passes(math.nan, 0.53)


def test_minimally_above_and_lower_are_ranges_of_the_ratio() -> None:
    above = checks_of("RAID1 2x SSD SWR", "latency_vs_single_ssd", "minimally above", "")
    assert [check.variant for check in above] == ["read", "mixed", "write"]
    assert above[0].tolerance == Tolerance("range", 1.0, "x", 1.1)
    lower = one("RAID5 4x SSD SWR", "random_write_iops_vs_single_ssd", "lower", "")
    assert lower.tolerance.passes(math.nan, 0.5) and not lower.tolerance.passes(math.nan, 0.95)


def test_more_than_double_a_single_ssd_is_a_lower_bound_on_the_ratio() -> None:
    checks = checks_of(
        "RAID5 4x SSD SWR and HWR", "random_read_iops_vs_single_ssd", "2", "x", "'more than'"
    )
    assert [check.tolerance.kind for check in checks] == ["lower_bound", "lower_bound"]


def test_a_ratio_in_percent_is_a_percentage_of_the_baseline() -> None:
    check = one("RAID1 2x SSD SWR", "random_read_iops_relative_to_single_ssd", "140", "percent")
    assert check.metric(results(check, 140.0, 100.0)) == pytest.approx(140.0)


def test_performance_is_mbps_when_sequential_else_iops() -> None:
    seq, _, _ = parse_metric("seq_write_performance", None)
    rand, _, _ = parse_metric("random_read_performance", None)
    assert seq is not None and rand is not None
    assert (seq.kind, rand.kind) == ("mbps", "iops")


def test_sequential_and_random_words_set_the_access() -> None:
    random_mbps = one("RAID5 4x SSD HWR", "random_read_throughput", "300", "MBps", "4KB")
    assert random_mbps.runs[0].rw == "randread"
    seq_iops = one("RAID5 4x SSD HWR", "sequential_write_iops", "3000", "IOPS")
    assert seq_iops.runs[0].rw == "write"


# --- refused, with a reason naming what ---------------------------------------------


@pytest.mark.parametrize(
    ("row", "words"),
    [
        (("RAID5 4x SSD HWR", "rebuild_hours", "3", "h"), "'rebuild'"),
        (("RAID5 4x SSD HWR", "random_read_iops_with_turbo", "1", "IOPS"), "'turbo'"),
        (("RAID5 4x SSD HWR", "random_read_iops_and_latency", "1", "IOPS"), "iops and latency"),
        (("RAID5 4x SSD HWR", "drives_for_random_read_iops", "4", "drives"), "double or triple"),
        (("RAID1 2x SSD", "drives_to_double_random_read_iops", "2", "drives"), "not RAID 1"),
        (("RAID5 SSD", "drives_to_double_random_read_iops", "many", "drives"), "not a drive count"),
        (("RAID5 4x SSD", "read_iops_swr_vs_hwr", "1", "drives"), "unit 'drives'"),
        (("RAID5 4x SSD", "read_iops_gain_vs_single_ssd", "1", "MBps"), "unit 'MBps'"),
        (("RAID5 4x SSD", "read_iops_swr_hwr", "1", "x"), "names both controllers"),
        (("RAID5 4x SSD", "latency_step_read_to_write_vs_single", "1", "ms"), "workloads and"),
        (("single SSD", "seq_read_throughput_swr_vs_hwr", "1", "x"), "one drive"),
        (("RAID5 4x SSD", "random_write_iops_vs_single_ssd", "meh", ""), "'on a par'"),
    ],
)
def test_a_form_it_cannot_read_gets_one_reason_naming_what(
    row: tuple[str, ...], words: str
) -> None:
    reason = read(*row)
    assert isinstance(reason, str) and words in reason, reason


def test_a_reason_is_a_not_expressible_not_a_crash() -> None:
    with pytest.raises(NotExpressible, match="'bogus'"):
        parse_metric("bogus_iops", ("read",))


# --- end to end: rephrased rows are checked, none refused ----------------------------

REPHRASED_ROWS = "".join(
    f"x.txt,{row}\n"
    for row in (
        "Y01,RAID1 2x Intel DC S3500 80GB HWR,added_latency,0.04,ms,all three workloads",
        "Y02,RAID5 4x SSD HWR,seq_read_mbps_slowdown_with_readahead,0,percent,1024KB blocks",
        "Y03,single Intel DC S3500 800GB,random_write_iops_gain_from_op,175,percent,20% OP",
        "Y04,RAID5 SSD SWR and HWR,drives_to_double_random_read_iops,4,drives,4KB random read",
        "Y05,RAID5 4x SSD,seq_write_throughput_swr_vs_hwr,0.87,x,1024KB blocks",
        "Y06,RAID10 4x SSD SWR,latency_step_read_to_write,0.05,ms,",
        "Y07,RAID5 3x SSD SWR and HWR,random_write_iops_vs_single_ssd,on a par,,",
    )
)


def test_rephrased_rows_are_checked_none_refused(fake_native: None, tmp_path: Path) -> None:
    from raidlab.studies import reference_data
    from raidlab.studies.claim_studies import CLAIM_STUDIES, reproduce_claims

    text = reference_data.read_text(CLAIM_STUDIES["ssd-raid-tuning"].claims_file)
    path = tmp_path / "claims.csv"
    path.write_text(text + REPHRASED_ROWS)
    frame = reproduce_claims("ssd-raid-tuning", ios=200, jobs=1, progress=False, claims_file=path)
    rows = frame[frame["claim_id"].str.startswith("Y")]
    assert sorted(set(rows["claim_id"])) == [f"Y0{n}" for n in range(1, 8)]
    refused = rows[rows["result"] == "not covered"]
    assert refused.empty, refused[["claim_id", "how"]].to_string()
    assert set(rows["result"]) <= {"PASS", "FAIL"}
