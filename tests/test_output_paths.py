"""Output paths (--out, --plot, fio's --output): a path that cannot be written is one
line `error: <flag>: ...` with status 2, found before anything is simulated; raidlab
writes files only where it is asked to."""

from __future__ import annotations

from pathlib import Path

import pytest
from raidlab.cli import app
from typer.testing import CliRunner

runner = CliRunner()
SSD = ["--drive", "adata-sp900-128g"]
ATTO_SMALL = ["--qd", "1", "--sizes", "4K", "--length", "1G", "--jobs", "1"]


def assert_one_line_error(result, flag: str, *words: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {flag}: "), result.stderr
    assert all(word in lines[0] for word in words), lines[0]
    assert "Traceback" not in result.output


def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("not a directory\n")
    return path


@pytest.mark.parametrize(
    ("out", "words"),
    [
        ("/proc/raidlab-figures", ["cannot create the directory /proc/raidlab-figures"]),
        ("{file}/figures", ["is a file, not a directory"]),
        ("{file}", ["is a file, not a directory"]),
    ],
)
def test_reproduce_out_that_cannot_be_written_is_refused_before_simulating(
    no_simulation: None, tmp_path: Path, out: str, words: list[str]
) -> None:
    out = out.format(file=a_file(tmp_path))
    result = runner.invoke(app, ["reproduce", "hdd-raid0-atto", "--jobs", "1", "--out", out])
    assert_one_line_error(result, "--out", *words)


def test_reproduce_out_in_a_read_only_directory_is_refused(
    no_simulation: None, tmp_path: Path
) -> None:
    # A read-only file system refuses root too: /proc/sys is one on every Linux.
    result = runner.invoke(app, ["reproduce", "hdd-raid0-atto", "--out", "/proc/sys"])
    assert_one_line_error(result, "--out", "cannot write in the directory /proc/sys")


def test_reproduce_out_creates_the_directory_and_its_parents(
    fake_native: None, tmp_path: Path
) -> None:
    out = tmp_path / "figures" / "hdd"
    result = runner.invoke(app, ["reproduce", "hdd-raid0-atto", "--jobs", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    # One disk; 2 disks at 8 KiB, 64 KiB and 1 MiB strips; 4 disks at 64 KiB.
    assert len(list(out.glob("*.png"))) == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figures"]


@pytest.mark.parametrize("output_format", ["table", "csv", "json"])
def test_reproduce_writes_no_figures_without_out(
    fake_native: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output_format: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(
        app, ["reproduce", "hdd-raid0-atto", "--jobs", "1", "--format", output_format]
    )
    assert result.exit_code == 0, result.output
    assert list(tmp_path.iterdir()) == []
    if output_format == "table":
        assert "figures: none drawn (give --out DIR to draw them)" in result.stdout


def test_reproduce_out_of_a_claim_study_is_refused(no_simulation: None, tmp_path: Path) -> None:
    result = runner.invoke(app, ["reproduce", "ssd-raid-tuning", "--out", str(tmp_path)])
    assert_one_line_error(result, "--out", "draws no figures")


@pytest.mark.parametrize(
    ("plot", "words"),
    [
        ("{tmp}/missing/sweep.png", ["the directory", "missing does not exist"]),
        ("{file}/sweep.png", ["is a file, not a directory"]),
        ("/proc/sys/sweep.png", ["cannot write in the directory /proc/sys"]),
        ("{tmp}", ["is a directory"]),
    ],
)
@pytest.mark.parametrize("command", ["atto", "pts"])
def test_plot_that_cannot_be_written_is_refused_before_simulating(
    no_simulation: None, tmp_path: Path, command: str, plot: str, words: list[str]
) -> None:
    plot = plot.format(tmp=tmp_path, file=a_file(tmp_path))
    if plot == str(tmp_path):
        plot = str(tmp_path / "dir.png")
        Path(plot).mkdir()
    result = runner.invoke(app, [command, *SSD, "--plot", plot])
    assert_one_line_error(result, "--plot", *words)


def test_plot_does_not_create_directories(no_simulation: None, tmp_path: Path) -> None:
    runner.invoke(app, ["atto", *SSD, "--plot", str(tmp_path / "a" / "b" / "sweep.png")])
    assert list(tmp_path.iterdir()) == []
