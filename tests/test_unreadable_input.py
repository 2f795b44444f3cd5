"""Files that are not what they claim to be: random bytes given as a config, a fio job
file or a sweep, and a claims file without its columns, are bad input (one `error:`
line naming the file, exit code 2), never a traceback."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from raidlab.cli import app
from typer.testing import CliRunner

runner = CliRunner()


@pytest.fixture
def random_bytes(tmp_path: Path) -> Path:
    path = tmp_path / "noise.bin"
    # Seeded noise with a byte no UTF-8 text holds, wherever the seed puts the rest.
    path.write_bytes(b"\xff" + random.Random(7).randbytes(4096))
    return path


def _refused(result: object, name: str) -> None:
    output = result.output  # type: ignore[attr-defined]
    assert result.exit_code == 2, output  # type: ignore[attr-defined]
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    assert name in lines[0] and "UTF-8" in lines[0], output


@pytest.mark.parametrize(
    "command",
    [
        ["run", "--config", "{file}", "--ios", "10"],
        ["atto", "--config", "{file}"],
        ["fio", "{file}"],
        ["sweep", "{file}"],
    ],
    ids=lambda c: c[0],
)
def test_random_bytes_as_a_text_file_are_one_error_line(
    command: list[str], random_bytes: Path
) -> None:
    args = [str(random_bytes) if arg == "{file}" else arg for arg in command]
    _refused(runner.invoke(app, args), random_bytes.name)


def test_a_claims_file_without_its_value_column_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = Path(__file__).resolve().parents[1] / "data" / "reference"
    for source in reference.glob("*.csv"):
        (tmp_path / source.name).write_text(source.read_text("utf-8"), "utf-8")
    claims = tmp_path / "ssd_raid_tuning_claims.csv"
    rows = [line.split(",") for line in claims.read_text("utf-8").splitlines()]
    value = rows[0].index("value")
    claims.write_text("\n".join(",".join(r[:value] + r[value + 1 :]) for r in rows), "utf-8")
    monkeypatch.setenv("RAIDLAB_REFERENCE_DIR", str(tmp_path))
    result = runner.invoke(app, ["reproduce", "ssd-raid-tuning", "--ios-max", "100"])
    output = result.output
    assert result.exit_code == 2, output
    assert "Traceback" not in output
    assert "missing value" in output, output
