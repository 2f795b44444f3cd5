"""The tuning flags: controller cache, read-ahead, SSD over-provisioning and state."""

from __future__ import annotations

from raidlab.cli import app
from typer.testing import CliRunner

runner = CliRunner()
RUN = [
    "run",
    "--drive",
    "intel-dc-s3500-800g",
    "--controller",
    "megaraid-9361",
    "--level",
    "5",
    "--drives",
    "4",
    "--rw",
    "randwrite",
    "--iodepth",
    "8",
    "--ios",
    "2000",
]


def _error(args: list[str]) -> str:
    result = runner.invoke(app, [*RUN, *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    return lines[0]


def test_write_back_without_a_backup_unit_is_refused() -> None:
    assert "--write-cache" in _error(["--write-cache", "wb", "--bbu", "no"])


def test_write_back_needs_a_controller_with_a_cache() -> None:
    result = runner.invoke(app, ["run", "--drive", "intel-dc-s3500-80g", "--write-cache", "wb"])
    assert result.exit_code == 2 and "no cache" in result.output


def test_bad_knob_values_name_the_flag() -> None:
    assert "--read-ahead" in _error(["--read-ahead", "sometimes"])
    assert "--precondition" in _error(["--precondition", "used"])
    assert "--op" in _error(["--op", "95%"])


def test_over_provisioning_needs_an_ftl_model() -> None:
    result = runner.invoke(app, ["run", "--drive", "adata-sp900-128g", "--op", "20%"])
    assert result.exit_code == 2 and "FTL" in result.output


def test_over_provisioning_raises_steady_random_write_iops() -> None:
    def iops(extra: list[str]) -> float:
        result = runner.invoke(
            app,
            [
                *RUN[:9],
                "--rw",
                "randwrite",
                "--iodepth",
                "32",
                "--ios",
                "20000",
                "--format",
                "csv",
                *extra,
            ],
        )
        assert result.exit_code == 0, result.output
        return float(result.output.strip().splitlines()[-1].split(",")[1])

    assert iops(["--op", "20%"]) > 1.5 * iops([])
