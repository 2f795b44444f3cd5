"""Leave-one-configuration-out cross-validation of the ATTO studies.

The tests run a synthetic study with a synthetic calibration list (monkeypatched), and
a fake simulator whose MB/s is the calibrated field's value over 100: whatever the
real list calibrates, the mechanism is checked the same way."""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd
import pytest
from raidlab.cli import app
from raidlab.scenario.array import resolve_controller
from raidlab.studies import atto_studies
from raidlab.studies.atto_studies import (
    Calibration,
    Prior,
    RowPattern,
    Study,
    StudyConfig,
    reproduce_study,
)
from raidlab.studies.cross_validation import (
    cross_validate,
    cross_validation_dict,
    golden_section_log,
)
from typer.testing import CliRunner

runner = CliRunner()

FIELD = "request_overhead_ns"
TIED = "read_hit_overhead_ns"
PRIOR = 1_000
# The preset's own value: fitted on every calibration row, held ones too.
PRESET = resolve_controller("intel-h97-rst", "controller").spec[FIELD]
# Stripe units tell the configurations apart in the scenarios the fake simulator sees.
STRIPE_UNITS = {"a2": 16 << 10, "b2": 64 << 10, "c4": 256 << 10}
DRIVES = {"single": 1, "a2": 2, "b2": 2, "c4": 4}


def _measured(values: dict[str, float]) -> pd.DataFrame:
    """Two read sizes at QD 1 per configuration, measured at ``values[config]`` MB/s;
    one write row per array configuration that no calibration uses."""
    rows = []
    for config, mbps in values.items():
        rows += [(config, "read", 1, 4096, mbps), (config, "read", 1, 65536, mbps)]
        if config != "single":
            rows.append((config, "write", 1, 4096, mbps))
    return pd.DataFrame(rows, columns=["config", "op", "qd", "block_bytes", "measured_mbps"])


def _study(values: dict[str, float]) -> Study:
    def configs(measured: pd.DataFrame) -> list[StudyConfig]:
        return [
            StudyConfig(name, DRIVES[name], STRIPE_UNITS.get(name, 16 << 10))
            for name in dict.fromkeys(measured["config"])
        ]

    return Study(
        name="fake-atto",
        title="a synthetic study",
        drive="adata-sp900-128g",
        controller="intel-h97-rst",
        length_bytes=1 << 30,
        load_measured=lambda: _measured(values),
        configs=configs,
    )


CALIBRATION = Calibration(
    study="fake-atto",
    controller="intel-h97-rst",
    field=FIELD,
    tied_fields=(TIED,),
    rows=(RowPattern("read", 1),),
    search_range=(500, 50_000),
    prior=Prior(PRIOR, "a synthetic prior"),
    reason="synthetic",
)


class FakeSimulator:
    """MB/s = the controller's FIELD / 100; records every run's (stripe unit, FIELD,
    TIED)."""

    def __init__(self) -> None:
        self.runs: list[tuple[int, int, int]] = []

    def __call__(self, scenario: dict[str, Any]) -> dict[str, Any]:
        array = scenario["array"]
        controller = array["controller"]
        self.runs.append((array["stripe_unit_bytes"], controller[FIELD], controller[TIED]))
        stats = {"ios": 1, "bytes": 4096, "mbps": controller[FIELD] / 100.0}
        stats |= {"iops": 1.0, "lat_mean_ns": 1.0, "lat_min_ns": 1, "lat_max_ns": 1}
        stats["percentiles_ns"] = {"50.000000": 1}
        op = "read" if scenario["workload"]["rw"] in ("read", "randread") else "write"
        return {"ops": {op: stats}}


@pytest.fixture
def fake_study(monkeypatch: pytest.MonkeyPatch) -> FakeSimulator:
    """Study `fake-atto`: a2 measured at 20 MB/s (fits FIELD = 2000), b2 at 50 (fits
    5000), c4 at 80 (fits 8000); calibrated only by CALIBRATION."""
    import raidlab.scenario.native

    simulator = FakeSimulator()
    study = _study({"single": 10.0, "a2": 20.0, "b2": 50.0, "c4": 80.0})
    monkeypatch.setitem(atto_studies.STUDIES, "fake-atto", study)
    monkeypatch.setattr(atto_studies, "CONTROLLER_CALIBRATIONS", [CALIBRATION])
    monkeypatch.setattr(raidlab.scenario.native, "simulate", simulator)
    return simulator


def test_golden_section_finds_the_minimum_of_a_valley_in_log_space() -> None:
    calls: list[int] = []

    def objective(value: int) -> float:
        calls.append(value)
        return abs(math.log(value / 3_000))

    value, error = golden_section_log(objective, 500, 50_000, evaluations=10)
    assert len(calls) <= 10 and abs(value / 3_000 - 1) < 0.12 and error == objective(value)


def test_a_held_configuration_is_predicted_from_the_other_configurations_only(
    fake_study: FakeSimulator,
) -> None:
    cv = cross_validate("fake-atto", jobs=1, progress=False)
    folds = {fold.config: fold for fold in cv.per_config}
    assert list(folds) == ["a2", "b2", "c4"]
    # Without a2 the fit sees b2 (5000) and c4 (8000): the value lies between them and
    # owes nothing to a2's 2000.
    refit = folds["a2"].refitted[0]
    assert refit.source == "fit" and refit.training_configs == ("b2", "c4")
    assert 4_500 <= refit.value <= 8_500 and refit.training_rows == 4
    without_c4 = folds["c4"].refitted[0]
    assert without_c4.training_configs == ("a2", "b2") and 1_800 <= without_c4.value <= 2_200
    # a2's rows are predicted at the value fitted without them: far above 20 MB/s.
    predicted = cv.rows[cv.rows["config"] == "a2"]["cv_simulated_mbps"]
    assert (predicted == refit.value / 100.0).all()
    assert folds["a2"].cv_mape_pct > 100.0


def test_a_held_configurations_measurements_do_not_move_its_refit(
    monkeypatch: pytest.MonkeyPatch, fake_study: FakeSimulator
) -> None:
    def refits(a2_mbps: float) -> dict[str, int | str]:
        study = _study({"single": 10.0, "a2": a2_mbps, "b2": 50.0, "c4": 80.0})
        monkeypatch.setitem(atto_studies.STUDIES, "fake-atto", study)
        cv = cross_validate("fake-atto", jobs=1, progress=False)
        return {fold.config: fold.refitted[0].value for fold in cv.per_config}

    low, high = refits(20.0), refits(400.0)
    assert low["a2"] == high["a2"]  # a2's own fold never looks at a2's rows
    assert low["b2"] < 2_500 < high["b2"]  # the other folds train on them


def test_the_tied_field_moves_with_the_calibrated_one_and_the_preset_value_is_unused(
    fake_study: FakeSimulator,
) -> None:
    cross_validate("fake-atto", jobs=1, progress=False)
    assert fake_study.runs and all(value == tied for _, value, tied in fake_study.runs)
    assert all(value != PRESET for _, value, _ in fake_study.runs)


def test_a_study_with_one_array_configuration_predicts_it_from_the_prior(
    monkeypatch: pytest.MonkeyPatch, fake_study: FakeSimulator
) -> None:
    monkeypatch.setitem(atto_studies.STUDIES, "fake-atto", _study({"single": 10.0, "a2": 20.0}))
    cv = cross_validate("fake-atto", jobs=1, progress=False)
    [fold] = cv.per_config
    [refit] = fold.refitted
    assert (refit.source, refit.value, refit.training_rows) == ("prior", PRIOR, 0)
    assert refit.reason == "a synthetic prior"
    # Only the held rows were simulated, at the prior: never at a value fitted on them.
    assert {value for _, value, _ in fake_study.runs} == {PRIOR}
    assert fold.cv_mape_pct == pytest.approx(100 * abs(PRIOR / 100 - 20) / 20)


def test_overall_mape_is_over_every_row_of_every_fold_next_to_naive(
    fake_study: FakeSimulator,
) -> None:
    cv = cross_validate("fake-atto", jobs=1, progress=False)
    rows = cv.rows
    errors = (
        100 * (rows["cv_simulated_mbps"] - rows["measured_mbps"]) / rows["measured_mbps"]
    ).abs()
    assert cv.overall_rows == len(rows) == 9 and cv.overall_mape == pytest.approx(errors.mean())
    # Naive: single drive (10 MB/s) x drive count, on the read rows (no single write).
    assert cv.naive_rows == 6
    naive = rows.dropna(subset=["naive_mbps"])
    assert list(naive["naive_mbps"]) == [10.0 * DRIVES[c] for c in naive["config"]]


def test_cross_validation_is_deterministic(fake_study: FakeSimulator) -> None:
    first = cross_validation_dict(cross_validate("fake-atto", jobs=1, progress=False))
    second = cross_validation_dict(cross_validate("fake-atto", jobs=1, progress=False))
    assert json.dumps(first) == json.dumps(second)


def test_calibrated_rows_keep_the_calibration_role(fake_study: FakeSimulator) -> None:
    frame = reproduce_study("fake-atto", jobs=1, progress=False)
    arrays = frame[frame["config"] != "single"]
    assert list(arrays["role"]) == [
        "calibration" if op == "read" else "prediction" for op in arrays["op"]
    ]
    # Without cross-validation the preset's value is used, as before.
    assert {value for _, value, _ in fake_study.runs} == {PRESET}


def test_reproduce_json_carries_the_cross_validation(fake_study: FakeSimulator) -> None:
    result = runner.invoke(
        app, ["reproduce", "fake-atto", "--cross-validate", "--jobs", "1", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)["cross_validation"]
    assert [fold["config"] for fold in document["per_config"]] == ["a2", "b2", "c4"]
    fold = document["per_config"][0]
    assert {"config", "rows", "cv_mape_pct", "refitted"} <= set(fold)
    assert fold["refitted"][0]["field"] == FIELD and fold["refitted"][0]["source"] == "fit"
    assert isinstance(document["overall_mape"], float) and document["overall_rows"] == 9
    assert document["naive_mape"] is not None


def test_reproduce_table_prints_the_cross_validation(fake_study: FakeSimulator) -> None:
    result = runner.invoke(app, ["reproduce", "fake-atto", "--cross-validate", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert "cross-validation over 9 rows of 3 held configurations: CV MAPE" in result.stdout
    assert "naive 'N x one drive' on 6 of them" in result.stdout


def test_cross_validate_on_a_claim_study_is_refused(no_simulation: None) -> None:
    result = runner.invoke(app, ["reproduce", "ssd-raid-tuning", "--cross-validate"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: --cross-validate: only for ATTO studies")
