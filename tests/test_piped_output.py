"""Output read by programs: a table into a pipe prints whole (a row a line, no cell cut
to "51,9…"), and every command's CSV holds plain numbers under column names that mean
the same quantity in every command."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pandas as pd
import pytest
from raidlab.cli import app
from typer.testing import CliRunner

runner = CliRunner()  # its stdout is not a terminal, as a pipe
SSD = ["--drive", "intel-dc-s3500-80g"]
TRACE = str(Path(__file__).resolve().parent / "data" / "traces" / "small.msr.csv")

# Every command with a CSV form, on a small run of the real simulator.
CSV_COMMANDS = {
    "atto": ["atto", *SSD, "--qd", "1", "--sizes", "4K,64K", "--length", "1G", "--jobs", "1"],
    "run": ["run", *SSD, "--rw", "randrw", "--ios", "500"],
    "replay": ["replay", TRACE, *SSD, "--output-format", "csv"],
    "presets": ["presets"],
    "advise": ["advise", *SSD, "--drives", "2", "--ios", "300", "--jobs", "1"],
    "cdm": ["cdm", *SSD, "--size", "64M", "--ios", "200", "--jobs", "1"],
    "iometer": ["iometer", "database", *SSD, "--ios", "300"],
    "pts": ["pts", *SSD, "--mixes", "100/0", "--sizes", "4K", "--ios", "100", "--jobs", "1"],
    "reproduce-atto": ["reproduce", "hdd-raid0-atto", "--ios-max", "64", "--jobs", "1"],
    "reproduce-claims": ["reproduce", "ssd-raid-tuning", "--ios-max", "200", "--jobs", "1"],
}
# Columns of words, not quantities.
TEXT_COLUMNS = {
    "op",
    "test",
    "mix",
    "study",
    "config",
    "role",
    "write_cache",
    "bottleneck",
    "bound",
    "stage_longest",
    "claim_id",
    "variant",
    "metric",
    "condition",
    "unit",
    "tolerance_kind",
    "claimed_text",
    "tolerance_text",
    "result",
    "how",
    "group",
    "name",
    "kind",
    "key_figures",
    "description",
    "read_balance",
}
YES_NO_COLUMNS = {"drive_write_cache"}
# One name per quantity, with its unit last: what a column holding a quantity may be called.
QUANTITY = re.compile(
    r"^((measured_|simulated_)?mbps|iops|lat_(mean|p50|p99|p999)_us|[a-z_]+_pct"
    r"|[a-z_]+_bytes(_per_s(_outer|_inner)?)?|[a-z_]+_ns(_avg)?|[a-z_]+_hours|p_loss"
    r"|qd|rank|level|round|tolerated_failures|bottleneck_utilisation|claimed|simulated"
    r"|tolerance|rpm|channels|dies_per_channel|read_ahead_segments|drive_write_cache)$"
)


def csv_frame(command: str) -> pd.DataFrame:
    args = CSV_COMMANDS[command]
    if "--output-format" not in args:
        args = [*args, "--format", "csv"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return pd.read_csv(io.StringIO(result.stdout))


@pytest.fixture(scope="module")
def csv_frames() -> dict[str, pd.DataFrame]:
    return {command: csv_frame(command) for command in CSV_COMMANDS}


@pytest.mark.parametrize("command", CSV_COMMANDS)
def test_csv_quantities_are_plain_numbers(csv_frames: dict[str, pd.DataFrame], command: str):
    frame = csv_frames[command]
    for column in frame.columns:
        if column in TEXT_COLUMNS:
            continue
        if column in YES_NO_COLUMNS:
            assert set(frame[column].dropna().astype(str)) <= {"True", "False"}
            continue
        assert pd.api.types.is_numeric_dtype(frame[column]), (command, column, frame[column][:3])


@pytest.mark.parametrize("command", CSV_COMMANDS)
def test_csv_columns_name_each_quantity_the_same_way_in_every_command(
    csv_frames: dict[str, pd.DataFrame], command: str
) -> None:
    for column in csv_frames[command].columns:
        assert column in TEXT_COLUMNS or QUANTITY.match(column), (command, column)


def test_advise_csv_splits_capacity_and_bottleneck_into_columns(
    csv_frames: dict[str, pd.DataFrame],
) -> None:
    frame = csv_frames["advise"]
    assert {"usable_bytes", "stripe_unit_bytes", "bottleneck", "bottleneck_utilisation"} <= set(
        frame.columns
    )
    assert (frame["usable_bytes"] > 0).all()
    assert frame["bottleneck_utilisation"].between(0, 1).all()
    assert not frame["bottleneck"].str.contains("%").any()


def test_piped_advise_table_keeps_every_number_whole(fake_native: None) -> None:
    result = runner.invoke(app, CSV_COMMANDS["advise"])
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    rows = [line for line in result.stdout.splitlines() if re.match(r"^│ \d+ ", line)]
    assert rows and all(re.search(r"\d,\d{3}\.?\d* │", line) for line in rows), rows
    assert all(" GB │" in line and "(95 %)" in line for line in rows)


def test_piped_claims_table_prints_a_claim_a_line(fake_native: None) -> None:
    result = runner.invoke(app, ["reproduce", "ssd-raid-tuning", "--ios-max", "200"])
    assert result.exit_code == 0, result.output
    (row,) = [line for line in result.stdout.splitlines() if line.startswith("│ T01 ")]
    assert "RAID1 2x Intel DC S3500 80GB SWR (mdadm); random_read_iops; 4KB random read" in row
    assert "±20 %" in row
