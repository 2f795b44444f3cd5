from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from raidlab.studies.atto_studies import (
    STUDY_COLUMNS,
    error_pct,
    get_study,
    mape,
    naive_mbps,
    reproduce_study,
    study_calibrations,
    study_scenarios,
    summarize,
    summary_dict,
)


def _frame(rows: list[tuple]) -> pd.DataFrame:
    columns = ["config", "op", "qd", "block_bytes", "measured_mbps", "simulated_mbps", "role"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["error_pct"] = error_pct(frame["measured_mbps"], frame["simulated_mbps"])
    return frame


def test_mape_is_the_mean_absolute_percentage_error() -> None:
    assert mape(pd.Series([100.0, 200.0]), pd.Series([110.0, 150.0])) == pytest.approx(17.5)


def test_mape_skips_rows_measured_as_zero() -> None:
    assert mape(pd.Series([0.0, 100.0]), pd.Series([5.0, 90.0])) == pytest.approx(10.0)
    assert math.isnan(mape(pd.Series([0.0]), pd.Series([1.0])))


def test_error_pct_sign_is_simulated_minus_measured() -> None:
    assert list(error_pct(pd.Series([100.0]), pd.Series([90.0]))) == [-10.0]


def test_naive_model_is_single_drive_times_drive_count() -> None:
    frame = _frame(
        [
            ("single", "read", 1, 4096, 100.0, 100.0, "calibration"),
            ("raid0_2", "read", 1, 4096, 150.0, 160.0, "prediction"),
            ("raid0_2", "read", 16, 4096, 150.0, 160.0, "prediction"),
        ]
    )
    naive = naive_mbps(frame, {"single": 1, "raid0_2": 2})
    assert naive.iloc[1] == 200.0 and math.isnan(naive.iloc[2])


def test_summary_separates_roles_and_compares_with_naive() -> None:
    frame = _frame(
        [
            ("single", "read", 1, 4096, 100.0, 110.0, "calibration"),
            ("raid0_2", "read", 1, 4096, 150.0, 165.0, "prediction"),
            ("raid0_2", "write", 1, 4096, 0.0, 5.0, "prediction"),
        ]
    )
    summary = summarize(frame, {"single": 1, "raid0_2": 2})
    assert summary.mape_calibration_pct == pytest.approx(10.0)
    assert summary.mape_prediction_pct == pytest.approx(10.0)
    assert summary.naive_mape_prediction_pct == pytest.approx(100 * 50 / 150)
    assert summary.rows_skipped == 1 and summary.naive_rows == 1
    assert summary.worst_row is not None and summary.worst_row["config"] == "raid0_2"


def test_hdd_single_disk_is_simulated_once_per_queue_depth() -> None:
    measured, keys, scenarios = study_scenarios(get_study("hdd-raid0-atto"))
    singles = [key for key in keys if key.config.drives == 1]
    assert len(singles) == 2 * 2 * 15  # qd 1 and 4, read and write, 15 sizes
    # Array configurations at QD 1: 2 disks at 8 KB, 64 KB and 1 MB strips, 4 disks at
    # 64 KB; at QD 4 the three 2-disk ones (reference README, Changes, 2026-11-28).
    assert len(scenarios) == len(keys) == len(singles) + (4 + 3) * 2 * 15


def test_ssd_study_uses_the_papers_array() -> None:
    measured, keys, scenarios = study_scenarios(get_study("ssd-raid0-atto"))
    array = next(s for s, k in zip(scenarios, keys, strict=True) if k.config.name == "raid0_2")[
        "array"
    ]
    assert (array["drive_count"], array["stripe_unit_bytes"]) == (2, 16384)
    assert scenarios[0]["workload"]["size_bytes"] == 32 << 30
    assert 65536 * 1024 in set(measured["block_bytes"])


@pytest.mark.parametrize("study", ["ssd-raid0-atto", "hdd-raid0-atto"])
def test_reproduce_returns_documented_columns_and_roles(fake_native: None, study: str) -> None:
    frame = reproduce_study(study, jobs=1, progress=False)
    assert list(frame.columns) == STUDY_COLUMNS
    single = frame["config"].str.startswith("single")
    suspect = frame["role"] == "suspect"
    assert (frame.loc[single & ~suspect, "role"] == "calibration").all()
    measured = get_study(study).load_measured()
    configs = {config.name: config for config in get_study(study).configs(measured)}
    arrays = frame[~single]
    declared = [
        any(
            entry.matches(configs[row.config], row.op, row.qd, row.block_bytes)
            for entry in study_calibrations(study)
        )
        for row in arrays.itertuples()
    ]
    assert list(arrays["role"]) == ["calibration" if hit else "prediction" for hit in declared]


def test_calibrations_name_the_study_controller_and_a_prior_with_its_reason() -> None:
    for study in ("ssd-raid0-atto", "hdd-raid0-atto"):
        for entry in study_calibrations(study):
            assert entry.controller == get_study(study).controller
            low, high = entry.search_range
            assert 0 < low < high and entry.prior.reason and entry.reason
            assert entry.prior.value == "unlimited" or isinstance(entry.prior.value, int | float)


def test_hdd_single_disk_qd4_rows_are_suspect_and_kept(fake_native: None) -> None:
    frame = reproduce_study("hdd-raid0-atto", jobs=1, progress=False)
    single = frame["config"].str.startswith("single")
    assert (frame.loc[single & (frame["qd"] == 4), "role"] == "suspect").all()
    assert (frame.loc[single & (frame["qd"] == 1), "role"] == "calibration").all()
    assert (frame.loc[~single, "role"] != "suspect").all()
    assert len(frame) == len(get_study("hdd-raid0-atto").load_measured())
    assert frame.attrs["suspect_reasons"] == ["single disk QD 4, identical to QD 1 in the paper"]


def test_hdd_single_disk_qd4_measurements_repeat_qd1() -> None:
    """The reason the rows are suspect, checked against the data."""
    measured = get_study("hdd-raid0-atto").load_measured()
    single = measured[measured["disks"] == 1]
    qd1 = single[single["qd"] == 1].drop(columns="qd").reset_index(drop=True)
    qd4 = single[single["qd"] == 4].drop(columns="qd").reset_index(drop=True)
    assert len(qd4) == 90 and qd4.equals(qd1)


def test_ssd_single_drive_qd2_repeats_qd1_as_one_io_in_flight_would() -> None:
    """What atto_in_flight rests on, checked against the data: the SP900 at ATTO's QD 2
    gives its QD 1 figure (reads of 128 KiB and up within 2 %, where a second I/O in
    flight would hide the time lost between requests), and QD 4 is faster."""
    measured = get_study("ssd-raid0-atto").load_measured()
    single = measured[(measured["config"] == "single") & (measured["op"] == "read")]
    by_qd = single.pivot_table(index="block_bytes", columns="qd", values="measured_mbps")
    large = by_qd[by_qd.index >= 128 * 1024].dropna(subset=[1, 2])
    assert len(large) >= 9
    assert ((large[2] / large[1] - 1).abs() <= 0.02).all()
    assert (large[4] >= large[2]).all() and (large[4] / large[2]).max() > 1.3


def test_suspect_rows_are_in_neither_calibration_nor_prediction_mape() -> None:
    frame = _frame(
        [
            ("single", "read", 1, 4096, 100.0, 110.0, "calibration"),
            ("single", "read", 4, 4096, 100.0, 200.0, "suspect"),
            ("raid0_2", "read", 1, 4096, 150.0, 165.0, "prediction"),
        ]
    )
    frame.attrs["suspect_reasons"] = ["why"]
    summary = summarize(frame, {"single": 1, "raid0_2": 2})
    assert summary.mape_calibration_pct == pytest.approx(10.0)
    assert summary.mape_prediction_pct == pytest.approx(10.0)
    assert summary.mape_suspect_pct == pytest.approx(100.0)
    assert (summary.rows_calibration, summary.rows_suspect) == (1, 1)
    assert summary.suspect_reasons == ["why"]


def test_summary_converts_to_plain_json_data() -> None:
    frame = _frame([("single", "read", 1, 4096, 100.0, 110.0, "calibration")])
    document = summary_dict(summarize(frame, {"single": 1}))
    json.dumps(document, allow_nan=False)
    assert document["mape_prediction_pct"] is None and document["rows_calibration"] == 1
    assert document["per_config"][0]["mape_pct"] == pytest.approx(10.0)


def test_hdd_kilobytes_per_second_become_mb_per_second() -> None:
    measured = get_study("hdd-raid0-atto").load_measured()
    row = measured[
        (measured["config"] == "single_su64K")
        & (measured["op"] == "read")
        & (measured["qd"] == 1)
        & (measured["block_bytes"] == 8 << 20)
    ]
    assert row["measured_mbps"].iloc[0] == pytest.approx(142.217)
