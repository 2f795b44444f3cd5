"""The commands of docs/predict.md simulate what `reproduce` simulates: a user who
follows them for a configuration the study did not measure uses the study's method."""

from __future__ import annotations

import json

import raidlab
from raidlab.cli import app
from raidlab.studies.atto_studies import STUDIES, study_scenarios
from raidlab.studies.claims import HWR_WRITE_BACK, Run, Setup, _warmup_ios, claim_scenarios
from typer.testing import CliRunner

runner = CliRunner()


def _cli_json(args: list[str]) -> dict:
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _study_array(study: str, config: str) -> dict:
    measured, keys, scenarios = study_scenarios(STUDIES[study], ios_max=64)
    for key, scenario in zip(keys, scenarios, strict=True):
        if key.config.name == config:
            return scenario["array"]
    raise AssertionError(config)


def test_hdd_study_atto_command_simulates_the_studys_array() -> None:
    args = ["atto", "--drive", "hitachi-deskstar-250g", "--controller", "dell-perc6i"]
    args += ["--drives", "2", "--stripe-unit", "64K", "--qd", "1", "--sizes", "4K"]
    document = _cli_json([*args, "--length", "512M", "--ios-max", "64", "--jobs", "1"])
    assert document["array"] == _study_array("hdd-raid0-atto", "raid0_2_su64K")


def test_hdd_single_disk_needs_the_studys_1m_stripe_unit() -> None:
    args = ["atto", "--drive", "hitachi-deskstar-250g", "--controller", "dell-perc6i"]
    args += ["--qd", "1", "--sizes", "4K", "--ios-max", "64", "--jobs", "1"]
    study = _study_array("hdd-raid0-atto", "single_su8K")  # one run for every single-disk row
    assert _cli_json([*args, "--stripe-unit", "1M"])["array"] == study
    assert _cli_json(args)["array"] != study


def test_ssd_study_atto_command_simulates_the_studys_array() -> None:
    args = ["atto", "--drive", "adata-sp900-128g", "--controller", "intel-h97-rst"]
    args += ["--drives", "2", "--stripe-unit", "16K", "--qd", "4", "--sizes", "4K"]
    document = _cli_json([*args, "--length", "32G", "--ios-max", "64", "--jobs", "1"])
    assert document["array"] == _study_array("ssd-raid0-atto", "raid0_2")


def _claims_scenario(run: Run) -> dict:
    _, scenarios = claim_scenarios([type("C", (), {"runs": (run,)})()], 100, 1)
    return scenarios[0]


# The article's HWR (the 9365 of Figures 2-3) in the MegaRAID's default write-back.
HWR_RAID5 = Setup(
    "RAID 5 of 3 HWR", "megaraid-9365", level=5, drives=3, write_back=HWR_WRITE_BACK
)
HWR_ARGS = ["--drive", "intel-dc-s3500-80g", "--controller", "megaraid-9365"]
HWR_ARGS += ["--write-cache", "wb" if HWR_WRITE_BACK else "wt"]
# docs/predict.md: writes on the write-back HWR warm up 100,000 + 2 x 1 GiB / 4 KiB.
HWR_WRITE_WARMUP = 624_288


def test_claims_write_run_needs_the_write_back_and_the_studys_warmup() -> None:
    args = ["run", *HWR_ARGS, "--level", "5", "--drives", "3", "--rw", "randwrite"]
    args += ["--iodepth", "16", "--numjobs", "2", "--ios", "100"]
    run = Run(HWR_RAID5, "randwrite", 2, 16)
    assert _warmup_ios(run) == HWR_WRITE_WARMUP
    study = _claims_scenario(run)
    scenario = _cli_json([*args, "--warmup-ios", str(HWR_WRITE_WARMUP)])["scenario"]
    assert scenario["array"] == study["array"]
    assert scenario["workload"] == study["workload"]
    assert _cli_json(args)["scenario"]["workload"] != study["workload"]


def test_claims_read_run_matches_with_the_write_back_and_default_warmup() -> None:
    args = ["run", *HWR_ARGS, "--level", "5", "--drives", "3", "--rw", "randread"]
    args += ["--iodepth", "16", "--numjobs", "2", "--ios", "100"]
    study = _claims_scenario(Run(HWR_RAID5, "randread", 2, 16))
    scenario = _cli_json(args)["scenario"]
    assert (scenario["array"], scenario["workload"]) == (study["array"], study["workload"])


def test_python_run_takes_the_tuning_knobs() -> None:
    frame = raidlab.run(
        drive="intel-dc-s3500-80g", controller="megaraid-9365", level=5, drives=3,
        rw="randread", iodepth=16, numjobs=2, ios=100, write_cache="wb",
    )  # fmt: skip
    study = _claims_scenario(Run(HWR_RAID5, "randread", 2, 16))
    assert frame.attrs["scenario"]["array"] == study["array"]
