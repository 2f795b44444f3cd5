"""Rows held back from data/reference/ (more arrays, queue depths, stripe units) are
taken like the rows the files have: each study is run on a copy of the files extended
with clearly synthetic rows ($RAIDLAB_REFERENCE_DIR), with the fake simulator."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from raidlab.cli import app
from raidlab.studies import reference_data
from raidlab.studies.atto_studies import get_study, reproduce_study, study_scenarios
from typer.testing import CliRunner

runner = CliRunner()
CHECKOUT = Path(__file__).resolve().parents[1] / "data" / "reference"
SIZES_KIB = (4, 64, 1024)
SYNTHETIC_MBPS = 123  # no study measured this: a marker, not a figure


def extended_reference(tmp_path: Path, name: str, rows: list[str]) -> Path:
    """A copy of data/reference/ whose ``name`` has ``rows`` appended."""
    directory = tmp_path / "reference"
    shutil.copytree(CHECKOUT, directory)
    with (directory / name).open("a") as file:
        file.writelines(row + "\n" for row in rows)
    return directory


def ssd_rows() -> list[str]:
    """raid0_3 at QD 1, 4 and 16 (its 512 B QD 16 read included), raid0_2 at QD 2, 32."""
    rows = []
    for config, qds in (("raid0_3", (1, 4, 16)), ("raid0_2", (2, 32))):
        for qd in qds:
            for op in ("read", "write"):
                for kib in (0.5, *SIZES_KIB):
                    rows.append(f"{config},{op},{qd},{kib},{SYNTHETIC_MBPS},SYNTHETIC test row")
    return rows


def hdd_rows() -> list[str]:
    """raid0_4_su8K and raid0_3_su64K at QD 1, raid0_2_su64K at QD 4 (qd,su_kib,disks,op,
    block_kib,kbps)."""
    rows = []
    for qd, su_kib, disks in ((1, 8, 4), (1, 64, 3), (4, 64, 2)):
        for op in ("read", "write"):
            # 256 KiB-1 MiB QD 1 reads: what the PERC's member-command time is fitted on
            # for the visible arrays, so the new arrays' rows must not join it.
            for kib in (*SIZES_KIB, 256, 512):
                rows.append(f"{qd},{su_kib},{disks},{op},{kib},{SYNTHETIC_MBPS * 1000}")
    return rows


NEW_CONFIGS = {
    "ssd-raid0-atto": ("ssd_raid0_atto.csv", ssd_rows, {"raid0_3"}),
    "hdd-raid0-atto": ("hdd_raid0_atto.csv", hdd_rows, {"raid0_4_su8K", "raid0_3_su64K"}),
}


@pytest.fixture(params=sorted(NEW_CONFIGS))
def extended(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """(study, rows added, new configurations) with $RAIDLAB_REFERENCE_DIR set."""
    study = request.param
    name, rows, configs = NEW_CONFIGS[study]
    added = rows()
    monkeypatch.setenv(reference_data.ENVIRONMENT, str(extended_reference(tmp_path, name, added)))
    return study, len(added), configs


def _new(frame: pd.DataFrame) -> pd.Series:
    """The synthetic rows of a reproduced study."""
    return frame["measured_mbps"] == SYNTHETIC_MBPS


def test_new_rows_are_simulated_as_predictions(fake_native: None, extended) -> None:
    study, added, configs = extended
    frame = reproduce_study(study, jobs=1, progress=False)
    new = _new(frame)
    assert new.sum() == added
    assert (frame.loc[new, "role"] == "prediction").all()
    assert frame["simulated_mbps"].notna().all()
    assert configs <= set(frame["config"])
    # Each new array is simulated with its own drive count.
    for name in configs:
        assert frame.attrs["drive_counts"][name] == int(name.split("_")[1])


def test_new_arrays_are_built_with_their_drive_count(fake_native: None, extended) -> None:
    study, _, configs = extended
    _, keys, scenarios = study_scenarios(get_study(study), ios_max=100)
    built = {key.config.name: scenario for key, scenario in zip(keys, scenarios, strict=True)}
    for name in configs:
        assert built[name]["array"]["drive_count"] == int(name.split("_")[1])


def test_reproduce_csv_json_and_table_take_the_new_rows(
    fake_native: None, extended, tmp_path: Path
) -> None:
    study, added, configs = extended
    base = ["reproduce", study, "--jobs", "1", "--ios-max", "200"]
    result = runner.invoke(app, [*base, "--format", "csv", "--out", str(tmp_path / "figs")])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(io.StringIO(result.stdout))
    assert (frame.loc[_new(frame), "role"] == "prediction").sum() == added
    # Every new configuration has its own figure.
    drawn = {path.stem.removeprefix(f"{study}-") for path in (tmp_path / "figs").glob("*.png")}
    assert configs <= drawn

    result = runner.invoke(app, [*base, "--format", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert configs <= set(document["configs"])
    per_config = {item["config"] for item in document["summary"]["per_config"]}
    assert configs <= per_config

    result = runner.invoke(app, base)
    assert result.exit_code == 0, result.output
    for name in configs:
        assert name in result.stdout


def test_cross_validation_holds_out_each_new_configuration(fake_native: None, extended) -> None:
    study, _, configs = extended
    result = runner.invoke(
        app,
        ["reproduce", study, "--cross-validate", "--jobs", "1", "--ios-max", "200"]
        + ["--format", "json"],
    )
    assert result.exit_code == 0, result.output
    cv = json.loads(result.stdout)["cross_validation"]
    folds = [fold["config"] for fold in cv["per_config"]]
    assert configs <= set(folds)
    assert not any(fold.startswith("single") for fold in folds)
    # A new configuration's rows are never training rows of a refit.
    for fold in cv["per_config"]:
        for refit in fold["refitted"]:
            assert not configs & set(refit["training_configs"])


def test_hdd_array_rows_at_qd4_are_predictions_not_suspect(
    fake_native: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    directory = extended_reference(tmp_path, "hdd_raid0_atto.csv", hdd_rows())
    monkeypatch.setenv(reference_data.ENVIRONMENT, str(directory))
    frame = reproduce_study("hdd-raid0-atto", jobs=1, progress=False)
    qd4_array = (frame["qd"] == 4) & (frame["config"] == "raid0_2_su64K")
    assert qd4_array.sum() == 2 * (len(SIZES_KIB) + 2)
    assert (frame.loc[qd4_array, "role"] == "prediction").all()
    # Suspect stays the single disk's QD 4 rows, as many as before.
    assert set(frame.loc[frame["role"] == "suspect", "config"].str[:6]) == {"single"}
    assert (frame["role"] == "suspect").sum() == 90


def test_an_unknown_ssd_configuration_is_one_clear_error(
    no_simulation: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    row = f"raid5_3,read,1,4,{SYNTHETIC_MBPS},SYNTHETIC test row"
    directory = extended_reference(tmp_path, "ssd_raid0_atto.csv", [row])
    monkeypatch.setenv(reference_data.ENVIRONMENT, str(directory))
    result = runner.invoke(app, ["reproduce", "ssd-raid0-atto", "--jobs", "1"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ssd_raid0_atto.csv: config: unknown configuration")
    assert "'raid5_3'" in result.stderr and "'raid0_N'" in result.stderr


def test_an_hdd_row_without_disks_is_one_clear_error(
    no_simulation: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    directory = extended_reference(tmp_path, "hdd_raid0_atto.csv", ["1,64,0,read,4,1"])
    monkeypatch.setenv(reference_data.ENVIRONMENT, str(directory))
    result = runner.invoke(app, ["reproduce", "hdd-raid0-atto", "--jobs", "1"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: hdd_raid0_atto.csv: disks: ")
