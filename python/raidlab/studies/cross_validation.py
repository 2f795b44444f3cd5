"""Leave-one-configuration-out cross-validation of the ATTO studies.

A study's prediction MAPE is honest only about rows nothing was fitted on. The
controller fields listed in ``atto_studies.CONTROLLER_CALIBRATIONS`` were fitted on
array rows, so the rows of the configurations they came from say little about how the
simulator does on an array it has never seen. Cross-validation answers that:

    for each array configuration C of the study (single drives are never held out:
    the drive presets are calibrated on them):
        every calibrated field starts at its prior (never at the preset's value,
        which was fitted on C's rows too);
        each field in list order is refitted on its rows of the other array
        configurations (a golden-section search in log space of FIT_EVALUATIONS
        simulations of those rows), or stays at its prior when no such row remains;
        C's rows (suspect rows excluded) are simulated with the refitted values.

The CV MAPE is over the held configurations' rows, next to the naive "N x one drive"
model on the same rows. Identical scenarios are simulated once (a run is a pure
function of its scenario and seed), so a fold that refits nothing costs only the
held configuration's rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from raidlab.frontends.atto import IOS_MAX_DEFAULT
from raidlab.scenario.executor import Simulator
from raidlab.studies.atto_studies import (
    CalibratedValue,
    Calibration,
    Study,
    get_study,
    mape,
    naive_mbps,
    plain,
    row_roles,
    runner,
    simulate_rows,
    study_calibrations,
)

# pandas loads where a frame is built, not with the module: the command line starts
# without it (docs/benchmarks.md, start-up).
if TYPE_CHECKING:
    import pandas as pd

# Simulations per refitted field: golden-section brackets shrink by 0.618 per
# evaluation, so 10 evaluations narrow a 7x search range to about 4 %.
FIT_EVALUATIONS = 10
_INVERSE_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0

CV_ROW_COLUMNS = [
    "config",
    "op",
    "qd",
    "block_bytes",
    "measured_mbps",
    "cv_simulated_mbps",
    "naive_mbps",
]


@dataclass(frozen=True)
class Refit:
    """A calibrated field's value in one fold, and where it came from."""

    field: str
    tied_fields: tuple[str, ...]
    value: CalibratedValue
    # "fit" (searched on training rows) or "prior" (no training rows remained).
    source: str
    training_configs: tuple[str, ...]
    training_rows: int
    # MAPE of the training rows at `value` (NaN for a prior).
    training_mape_pct: float
    reason: str


@dataclass(frozen=True)
class HeldOut:
    """One fold: the held configuration's rows predicted with values refitted without
    them."""

    config: str
    rows: int
    cv_mape_pct: float
    naive_rows: int
    naive_mape_pct: float
    cv_mape_on_naive_rows_pct: float
    refitted: list[Refit]


@dataclass(frozen=True)
class CrossValidation:
    """Every fold of a study, and the MAPE over all their rows."""

    study: str
    per_config: list[HeldOut]
    # One row per predicted row of every fold (CV_ROW_COLUMNS).
    rows: pd.DataFrame
    overall_mape: float
    overall_rows: int
    naive_mape: float
    naive_rows: int
    cv_mape_on_naive_rows: float
    simulations: int


Run = Callable[[list[dict[str, Any]], str], list[dict[str, Any]]]


class _Runs:
    """Runs scenarios through run_scenarios, each distinct scenario once."""

    def __init__(self, run: Run) -> None:
        self._run = run
        self._results: dict[str, dict[str, Any]] = {}

    @property
    def simulations(self) -> int:
        return len(self._results)

    def __call__(self, scenarios: list[dict[str, Any]], description: str) -> list[dict[str, Any]]:
        keys = [json.dumps(scenario, sort_keys=True) for scenario in scenarios]
        missing = {key: scenario for key, scenario in zip(keys, scenarios, strict=True)}
        missing = {key: scenario for key, scenario in missing.items() if key not in self._results}
        if missing:
            fresh = self._run(list(missing.values()), description)
            self._results.update(zip(missing, fresh, strict=True))
        return [self._results[key] for key in keys]


def golden_section_log(
    objective: Callable[[int], float], low: int, high: int, evaluations: int = FIT_EVALUATIONS
) -> tuple[int, float]:
    """The integer in [low, high] with the smallest ``objective`` among ``evaluations``
    golden-section probes in log space (ties: the first probed). Deterministic: the
    probes depend only on the bounds and the objective's values."""
    assert 0 < low < high and evaluations >= 2
    a, b = math.log(low), math.log(high)
    probed: dict[int, float] = {}

    def f(x: float) -> float:
        value = min(high, max(low, round(math.exp(x))))
        if value not in probed:
            probed[value] = objective(value)
        return probed[value]

    c, d = b - _INVERSE_GOLDEN * (b - a), a + _INVERSE_GOLDEN * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(evaluations - 2):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - _INVERSE_GOLDEN * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + _INVERSE_GOLDEN * (b - a)
            fd = f(d)
    best = min(probed, key=lambda value: (probed[value], list(probed).index(value)))
    return best, probed[best]


def _check(study: Study, calibration: Calibration) -> None:
    assert calibration.controller == study.controller, (
        f"{calibration.field}: calibrates {calibration.controller}, "
        f"but {study.name} uses {study.controller}"
    )
    low, high = calibration.search_range
    assert 0 < low < high, f"{calibration.field}: search range {low}..{high}"


def _overrides(
    calibrations: list[Calibration], values: Mapping[str, CalibratedValue]
) -> dict[str, Any]:
    return {
        name: values[calibration.field]
        for calibration in calibrations
        for name in calibration.fields()
    }


def cross_validate(
    name: str,
    jobs: int | None = None,
    ios_max: int = IOS_MAX_DEFAULT,
    seed: int = 1,
    executor: Executor | None = None,
    progress: bool = True,
    simulator: Simulator | None = None,
) -> CrossValidation:
    """Leave each array configuration of ATTO study ``name`` out in turn (module docs)."""
    import pandas as pd
    study = get_study(name)
    calibrations = study_calibrations(name)
    for calibration in calibrations:
        _check(study, calibration)

    runs = _Runs(runner(jobs, executor, progress, simulator))
    measured = study.load_measured()
    configs = {config.name: config for config in study.configs(measured)}
    roles = pd.Series(row_roles(study, measured), index=measured.index)
    trusted = measured[(roles != "suspect") & (measured["measured_mbps"] != 0)]
    drive_counts = {config.name: config.drives for config in configs.values()}
    naive = naive_mbps(trusted, drive_counts)
    folds, frames = [], []
    for config in configs.values():
        if config.drives == 1:
            continue
        values, refits = _refit(study, calibrations, trusted, config.name, runs, ios_max, seed)
        held = trusted[trusted["config"] == config.name]
        _, simulated = simulate_rows(
            study,
            held,
            _overrides(calibrations, values),
            ios_max,
            seed,
            runs,
            f"cross-validating {name}: predicting {config.name}",
        )
        rows = held[["config", "op", "qd", "block_bytes", "measured_mbps"]].assign(
            cv_simulated_mbps=simulated, naive_mbps=naive.loc[held.index]
        )
        folds.append(_fold(config.name, rows, refits))
        frames.append(rows)
    rows = pd.concat(frames) if frames else pd.DataFrame(columns=CV_ROW_COLUMNS)
    has_naive = rows["naive_mbps"].notna()
    return CrossValidation(
        study=name,
        per_config=folds,
        rows=rows[CV_ROW_COLUMNS].reset_index(drop=True),
        overall_mape=mape(rows["measured_mbps"], rows["cv_simulated_mbps"]),
        overall_rows=len(rows),
        naive_mape=mape(rows.loc[has_naive, "measured_mbps"], rows.loc[has_naive, "naive_mbps"]),
        naive_rows=int(has_naive.sum()),
        cv_mape_on_naive_rows=mape(
            rows.loc[has_naive, "measured_mbps"], rows.loc[has_naive, "cv_simulated_mbps"]
        ),
        simulations=runs.simulations,
    )


def _fold(config: str, rows: pd.DataFrame, refits: list[Refit]) -> HeldOut:
    has_naive = rows["naive_mbps"].notna()
    return HeldOut(
        config=config,
        rows=len(rows),
        cv_mape_pct=mape(rows["measured_mbps"], rows["cv_simulated_mbps"]),
        naive_rows=int(has_naive.sum()),
        naive_mape_pct=mape(
            rows.loc[has_naive, "measured_mbps"], rows.loc[has_naive, "naive_mbps"]
        ),
        cv_mape_on_naive_rows_pct=mape(
            rows.loc[has_naive, "measured_mbps"], rows.loc[has_naive, "cv_simulated_mbps"]
        ),
        refitted=refits,
    )


def _refit(
    study: Study,
    calibrations: list[Calibration],
    trusted: pd.DataFrame,
    held: str,
    runs: _Runs,
    ios_max: int,
    seed: int,
) -> tuple[dict[str, CalibratedValue], list[Refit]]:
    """Every calibrated field's value without ``held``'s rows: fitted in list order,
    each on its own training rows with the fields before it at their fitted values
    and those after it at their priors."""
    configs = {config.name: config for config in study.configs(study.load_measured())}
    values: dict[str, CalibratedValue] = {entry.field: entry.prior.value for entry in calibrations}
    refits = []
    for calibration in calibrations:
        training = trusted[
            [
                row.config != held
                and calibration.matches(configs[row.config], row.op, row.qd, row.block_bytes)
                for row in trusted.itertuples()
            ]
        ]
        if training.empty:
            refit = Refit(
                field=calibration.field,
                tied_fields=calibration.tied_fields,
                value=calibration.prior.value,
                source="prior",
                training_configs=(),
                training_rows=0,
                training_mape_pct=float("nan"),
                reason=calibration.prior.reason,
            )
        else:
            refit = _fit(
                study, calibrations, calibration, values, training, runs, ios_max, seed, held
            )
        values[calibration.field] = refit.value
        refits.append(refit)
    return values, refits


def _fit(
    study: Study,
    calibrations: list[Calibration],
    calibration: Calibration,
    values: Mapping[str, CalibratedValue],
    training: pd.DataFrame,
    runs: _Runs,
    ios_max: int,
    seed: int,
    held: str,
) -> Refit:
    """``calibration``'s field searched on ``training``, the other fields at ``values``."""
    probes = 0

    def training_mape(value: int) -> float:
        nonlocal probes
        probes += 1
        _, simulated = simulate_rows(
            study,
            training,
            _overrides(calibrations, {**values, calibration.field: value}),
            ios_max,
            seed,
            runs,
            f"cross-validating {study.name} without {held}: fitting {calibration.field} "
            f"({probes}/{FIT_EVALUATIONS})",
        )
        return mape(training["measured_mbps"], simulated)

    value, error = golden_section_log(training_mape, *calibration.search_range)
    return Refit(
        field=calibration.field,
        tied_fields=calibration.tied_fields,
        value=value,
        source="fit",
        training_configs=tuple(dict.fromkeys(training["config"])),
        training_rows=len(training),
        training_mape_pct=error,
        reason=calibration.reason,
    )


def cross_validation_dict(cv: CrossValidation) -> dict[str, Any]:
    """``cv`` as plain JSON-ready data (NaN becomes None)."""

    def refit(entry: Refit) -> dict[str, Any]:
        return {
            "field": entry.field,
            "tied_fields": list(entry.tied_fields),
            "value": plain(entry.value),
            "source": entry.source,
            "training_configs": list(entry.training_configs),
            "training_rows": entry.training_rows,
            "training_mape_pct": plain(entry.training_mape_pct),
            "reason": entry.reason,
        }

    return {
        "method": "leave one array configuration out; calibrated controller fields "
        "refitted without its rows (or their priors when none remain)",
        "per_config": [
            {
                "config": fold.config,
                "rows": fold.rows,
                "cv_mape_pct": plain(fold.cv_mape_pct),
                "naive_rows": fold.naive_rows,
                "naive_mape_pct": plain(fold.naive_mape_pct),
                "cv_mape_on_naive_rows_pct": plain(fold.cv_mape_on_naive_rows_pct),
                "refitted": [refit(entry) for entry in fold.refitted],
            }
            for fold in cv.per_config
        ],
        "overall_mape": plain(cv.overall_mape),
        "overall_rows": cv.overall_rows,
        "naive_mape": plain(cv.naive_mape),
        "naive_rows": cv.naive_rows,
        "cv_mape_on_naive_rows": plain(cv.cv_mape_on_naive_rows),
        "simulations": cv.simulations,
        "records": [
            {key: plain(cell) for key, cell in record.items()}
            for record in cv.rows.to_dict(orient="records")
        ],
    }
