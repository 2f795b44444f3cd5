"""The command line: documented columns, and one-line errors with exit status 2."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from raidlab.cli import app
from typer.testing import CliRunner

runner = CliRunner()
SSD = ["--drive", "adata-sp900-128g"]


@pytest.mark.parametrize(("args", "field"), [
    (["atto", "--drive", "adata-sp90"], "--drive"),
    (["atto", *SSD, "--stripe-unit", "3000"], "--stripe-unit"),
    (["atto", *SSD, "--drives", "0"], "--drives"),
    (["atto", *SSD, "--drives", "300"], "--drives"),
    (["atto", *SSD, "--level", "5"], "--level"),
    (["atto", *SSD, "--qd", "0"], "--qd"),
    (["atto", *SSD, "--qd", "70000"], "--qd"),
    (["atto", *SSD, "--sizes", "256"], "--sizes"),
    (["atto", *SSD, "--sizes", "512..2G"], "--sizes"),
    (["atto", *SSD, "--length", "1K", "--sizes", "4K"], "--length"),
    (["atto", *SSD, "--jobs", "0"], "--jobs"),
    (["run", *SSD, "--rw", "sideways"], "--rw"),
    (["run", *SSD, "--rwmixread", "101"], "--rwmixread"),
    (["run", *SSD, "--iodepth", "0"], "--iodepth"),
    (["run", *SSD, "--numjobs", "1025"], "--numjobs"),
    (["run", *SSD, "--bs", "4K:x"], "--bs"),
    (["run", *SSD, "--format", "xml"], "--format"),
    (["atto"], "--drive"),
])
def test_bad_input_is_one_line_naming_the_field_with_status_2(args: list[str],
                                                              field: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: "), result.stderr
    assert "Traceback" not in result.output


def test_unknown_preset_message_suggests_a_name() -> None:
    result = runner.invoke(app, ["atto", "--drive", "adata-sp90"])
    assert result.stderr.strip() == ("error: --drive: unknown drive preset 'adata-sp90': "
                                     "did you mean adata-sp900-128g?")


def test_malformed_config_file_is_a_one_line_error(tmp_path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[array]\ndrives = \n")
    result = runner.invoke(app, ["atto", "--config", str(path)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {path}: line 2")


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
    result = runner.invoke(app, ["atto", *SSD, "--qd", "1,4", "--sizes", "512..4K",
                                 "--length", "1G", "--jobs", "1", "--format", "csv"])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(io.StringIO(result.stdout))
    assert list(frame.columns) == ["op", "qd", "block_bytes", "mbps", "iops", "lat_mean_us",
                                   "lat_p99_us"]
    assert len(frame) == 2 * 4 * 2


def test_run_csv_has_one_row_per_direction(fake_native: None) -> None:
    result = runner.invoke(app, ["run", *SSD, "--rw", "randrw", "--bs", "4K:55,64K:45",
                                 "--format", "csv"])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(io.StringIO(result.stdout))
    assert list(frame.columns) == ["op", "iops", "mbps", "lat_mean_us", "lat_p50_us",
                                   "lat_p99_us"]
    assert list(frame["op"]) == ["read", "write"]


def test_run_explain_names_the_bottleneck(fake_native: None) -> None:
    result = runner.invoke(app, ["run", *SSD, "--explain"])
    assert result.exit_code == 0 and "bottleneck: drive0.media" in result.stdout


def test_presets_lists_every_study_drive() -> None:
    result = runner.invoke(app, ["presets", "--format", "csv"])
    assert "adata-sp900-128g" in result.stdout and "dell-perc6i" in result.stdout


def test_reproduce_writes_figures_and_summary(fake_native: None, tmp_path) -> None:
    result = runner.invoke(app, ["reproduce", "hdd-raid0-atto", "--jobs", "1", "--out",
                                 str(tmp_path), "--format", "csv"])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(io.StringIO(result.stdout))
    assert list(frame.columns) == ["study", "config", "op", "qd", "block_bytes",
                                   "measured_mbps", "simulated_mbps", "error_pct", "role"]
    assert "prediction rows" in result.stderr and list(tmp_path.glob("*.png"))
