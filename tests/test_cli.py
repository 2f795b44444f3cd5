"""The command line: documented columns, and one-line errors with exit status 2."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
from raidlab.cli import app
from typer.testing import CliRunner

runner = CliRunner()
SSD = ["--drive", "adata-sp900-128g"]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["atto", "--drive", "adata-sp90"], "--drive"),
        (["atto", *SSD, "--stripe-unit", "3000"], "--stripe-unit"),
        (["atto", *SSD, "--stripe-unit", "256"], "--stripe-unit"),
        (["atto", *SSD, "--drives", "0"], "--drives"),
        (["atto", *SSD, "--drives", "300"], "--drives"),
        (["atto", *SSD, "--level", "7"], "--level"),
        (["atto", *SSD, "--qd", "0"], "--qd"),
        (["atto", *SSD, "--qd", "70000"], "--qd"),
        (["atto", *SSD, "--qd", "65537"], "--qd"),
        (["atto", *SSD, "--sizes", "256"], "--sizes"),
        (["atto", *SSD, "--sizes", "512..2G"], "--sizes"),
        (["atto", *SSD, "--sizes", "2G"], "--sizes"),
        (["atto", *SSD, "--controller", "nope"], "--controller"),
        (["atto", *SSD, "--plot", "sweep.txt"], "--plot"),
        (["atto", *SSD, "--length", "1K", "--sizes", "4K"], "--length"),
        (["atto", *SSD, "--jobs", "0"], "--jobs"),
        (["run", *SSD, "--rw", "sideways"], "--rw"),
        (["run", *SSD, "--rwmixread", "101"], "--rwmixread"),
        (["run", *SSD, "--iodepth", "0"], "--iodepth"),
        (["run", *SSD, "--numjobs", "1025"], "--numjobs"),
        (["run", *SSD, "--bs", "4K:x"], "--bs"),
        (["run", *SSD, "--format", "xml"], "--format"),
        (["reproduce", "hdd-raid0-atto", "--format", "xml"], "--format"),
        (["atto"], "--drive"),
    ],
)
def test_bad_input_is_one_line_naming_the_field_with_status_2(args: list[str], field: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: "), result.stderr
    assert "Traceback" not in result.output


def test_unknown_preset_message_suggests_a_name() -> None:
    result = runner.invoke(app, ["atto", "--drive", "adata-sp90"])
    assert result.stderr.strip() == (
        "error: --drive: unknown drive preset 'adata-sp90': did you mean adata-sp900-128g?"
    )


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[array]\ndrives = \n", "{path}: line 2"),  # malformed TOML: the file and the line
        ('[array]\nstripe = "16K"\n', "{path}: array.stripe: unknown key"),
        (
            '[array]\ndrive = "adata-sp900-128g"\nstripe_unit = "3000"\n',
            "{path}: array.stripe_unit: ",
        ),
    ],
)
def test_bad_config_file_is_a_one_line_error_naming_the_key(
    tmp_path, text: str, field: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    result = runner.invoke(app, ["atto", "--config", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field.format(path=path)}"), (
        result.stderr
    )
    assert "Traceback" not in result.output


def test_usage_errors_also_exit_2() -> None:
    assert runner.invoke(app, ["atto", "--bogus"]).exit_code == 2


def test_main_prints_usage_errors_as_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from raidlab.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["atto", "--bogus"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith("error: ")


@pytest.mark.parametrize("command", ["atto", "run", "presets", "reproduce"])
def test_every_command_has_help_with_examples(command: str) -> None:
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0 and "Examples:" in result.output


def test_atto_csv_has_exactly_the_documented_columns(fake_native: None) -> None:
    result = runner.invoke(
        app,
        [
            "atto",
            *SSD,
            "--qd",
            "1,4",
            "--sizes",
            "512..4K",
            "--length",
            "1G",
            "--jobs",
            "1",
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(io.StringIO(result.stdout))
    assert list(frame.columns) == [
        "op",
        "qd",
        "block_bytes",
        "mbps",
        "iops",
        "lat_mean_us",
        "lat_p99_us",
    ]
    assert len(frame) == 2 * 4 * 2


def test_run_csv_has_one_row_per_direction(fake_native: None) -> None:
    result = runner.invoke(
        app, ["run", *SSD, "--rw", "randrw", "--bs", "4K:55,64K:45", "--format", "csv"]
    )
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(io.StringIO(result.stdout))
    assert list(frame.columns) == [
        "op",
        "iops",
        "mbps",
        "lat_mean_us",
        "lat_p50_us",
        "lat_p99_us",
        "lat_p999_us",
    ]
    assert list(frame["op"]) == ["read", "write"]


def test_run_explain_names_the_bottleneck(fake_native: None) -> None:
    result = runner.invoke(app, ["run", *SSD, "--explain"])
    assert result.exit_code == 0 and "bottleneck: drive0.media" in result.stdout


def test_presets_lists_every_study_drive() -> None:
    result = runner.invoke(app, ["presets", "--format", "csv"])
    assert "adata-sp900-128g" in result.stdout and "dell-perc6i" in result.stdout


STUDY_CSV_COLUMNS = [
    "study",
    "config",
    "op",
    "qd",
    "block_bytes",
    "measured_mbps",
    "simulated_mbps",
    "error_pct",
    "role",
]


# Every row of the HDD study's reference file is a row of its reproduction.
HDD_ROWS = len(
    pd.read_csv(Path(__file__).resolve().parents[1] / "data" / "reference" / "hdd_raid0_atto.csv")
)


def test_reproduce_writes_figures_and_summary(fake_native: None, tmp_path) -> None:
    result = runner.invoke(
        app,
        ["reproduce", "hdd-raid0-atto", "--jobs", "1", "--out", str(tmp_path), "--format", "csv"],
    )
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(io.StringIO(result.stdout))
    assert list(frame.columns) == STUDY_CSV_COLUMNS
    assert len(frame) == HDD_ROWS and (frame["role"] == "suspect").sum() == 90
    assert "prediction rows" in result.stderr
    assert (
        "suspect rows (single disk QD 4, identical to QD 1 in the paper): 90, MAPE "
        in result.stderr
    )


def test_reproduce_draws_the_single_disk_once(fake_native: None, tmp_path) -> None:
    result = runner.invoke(
        app, ["reproduce", "hdd-raid0-atto", "--jobs", "1", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert sorted(path.name for path in tmp_path.glob("*.png")) == [
        "hdd-raid0-atto-raid0_2_su1024K.png",
        "hdd-raid0-atto-raid0_2_su64K.png",
        "hdd-raid0-atto-raid0_2_su8K.png",
        "hdd-raid0-atto-raid0_4_su64K.png",
        "hdd-raid0-atto-single.png",
    ]


def test_reproduce_json_has_records_summary_and_figures(fake_native: None, tmp_path) -> None:
    result = runner.invoke(
        app,
        ["reproduce", "hdd-raid0-atto", "--jobs", "1", "--out", str(tmp_path), "--format", "json"],
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["study"] == "hdd-raid0-atto" and document["seed"] == 1
    # What was simulated, defaults included: 3000 I/Os a point, ATTO's 512 MB file.
    assert (document["ios_max"], document["length_bytes"]) == (3000, 512 << 20)
    assert len(document["records"]) == HDD_ROWS
    assert list(document["records"][0]) == STUDY_CSV_COLUMNS
    summary = document["summary"]
    # Calibration: 90 single-disk rows, the 6 array rows of the PERC's member queue and
    # the 18 multi-strip reads of its time per member command.
    assert summary["rows_suspect"] == 90 and summary["rows_calibration"] == 114
    assert summary["rows_prediction"] == HDD_ROWS - 90 - 114
    assert summary["suspect_reasons"] == ["single disk QD 4, identical to QD 1 in the paper"]
    assert {row["role"] for row in summary["per_config"]} == {
        "calibration",
        "suspect",
        "prediction",
    }
    assert sorted(document["figures"]) == sorted(str(path) for path in tmp_path.glob("*.png"))


def test_atto_plot_draws_the_sweep(fake_native: None, tmp_path) -> None:
    path = tmp_path / "sweep.png"
    result = runner.invoke(
        app,
        [
            "atto",
            *SSD,
            "--qd",
            "1,4",
            "--sizes",
            "512..64K",
            "--length",
            "1G",
            "--jobs",
            "1",
            "--plot",
            str(path),
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    assert path.read_bytes().startswith(b"\x89PNG")
    assert f"figure: {path}" in result.stderr
    assert list(pd.read_csv(io.StringIO(result.stdout)).columns)[0] == "op"
