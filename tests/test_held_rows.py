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
from raidlab.studies.atto_studies import (
    get_study,
    naive_mbps,
    reproduce_study,
    study_scenarios,
    summarize,
)
from typer.testing import CliRunner

runner = CliRunner()
CHECKOUT = Path(__file__).resolve().parents[1] / "data" / "reference"
SIZES_KIB = (4, 64, 1024)
SYNTHETIC_MBPS = 123  # no study measured this: a marker, not a figure


def use_extended_reference(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, rows: list[str]
) -> None:
    """Point the studies ($RAIDLAB_REFERENCE_DIR) at a copy of data/reference/ whose
    ``name`` has ``rows`` appended."""
    directory = tmp_path / "reference"
    shutil.copytree(CHECKOUT, directory)
    with (directory / name).open("a") as file:
        file.writelines(row + "\n" for row in rows)
    monkeypatch.setenv(reference_data.ENVIRONMENT, str(directory))


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
    """raid0_4_su8K and raid0_3_su64K at QD 1, raid0_3_su64K at QD 4 (qd,su_kib,disks,op,
    block_kib,kbps): configurations the reference does not hold (its 2-disk QD 4 rows are
    in it since 2026-11-28)."""
    rows = []
    for qd, su_kib, disks in ((1, 8, 4), (1, 64, 3), (4, 64, 3)):
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
    use_extended_reference(monkeypatch, tmp_path, name, added)
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


def test_new_ssd_rows_meet_the_naive_model(
    fake_native: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_extended_reference(monkeypatch, tmp_path, "ssd_raid0_atto.csv", ssd_rows())
    frame = reproduce_study("ssd-raid0-atto", jobs=1, progress=False)
    naive = naive_mbps(frame, frame.attrs["drive_counts"])
    single = frame[frame["config"] == "single"].set_index(["op", "qd", "block_bytes"])
    for index, row in frame[_new(frame) & (frame["config"] == "raid0_3")].iterrows():
        expected = 3 * single.loc[(row.op, row.qd, row.block_bytes), "measured_mbps"]
        assert naive[index] == pytest.approx(expected)
    summary = summarize(frame)
    assert summary.naive_rows == int((frame["role"] == "prediction").sum())


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
    use_extended_reference(monkeypatch, tmp_path, "hdd_raid0_atto.csv", hdd_rows())
    frame = reproduce_study("hdd-raid0-atto", jobs=1, progress=False)
    qd4_array = (frame["qd"] == 4) & (frame["config"] == "raid0_3_su64K")
    assert qd4_array.sum() == 2 * (len(SIZES_KIB) + 2)
    assert (frame.loc[qd4_array, "role"] == "prediction").all()
    # Suspect stays the single disk's QD 4 rows, as many as before.
    assert set(frame.loc[frame["role"] == "suspect", "config"].str[:6]) == {"single"}
    assert (frame["role"] == "suspect").sum() == 90


def test_an_unknown_ssd_configuration_is_one_clear_error(
    no_simulation: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    row = f"raid5_3,read,1,4,{SYNTHETIC_MBPS},SYNTHETIC test row"
    use_extended_reference(monkeypatch, tmp_path, "ssd_raid0_atto.csv", [row])
    result = runner.invoke(app, ["reproduce", "ssd-raid0-atto", "--jobs", "1"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ssd_raid0_atto.csv: config: unknown configuration")
    assert "'raid5_3'" in result.stderr and "'raid0_N'" in result.stderr


def test_an_hdd_row_without_disks_is_one_clear_error(
    no_simulation: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_extended_reference(monkeypatch, tmp_path, "hdd_raid0_atto.csv", ["1,64,0,read,4,1"])
    result = runner.invoke(app, ["reproduce", "hdd-raid0-atto", "--jobs", "1"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: hdd_raid0_atto.csv: disks: ")


# --- RAIDIX cache: rows of the article's table under other source lines ---------------

RAIDIX_HEADER = (
    "pattern,request_type,op,share_pct,with_cache,without_cache,unit,gain_stated_x,"
    "gain_computed_x,source_line,note"
)


def raidix_rows(pattern: str, rows: list[tuple[str, float, str]]) -> list[dict[str, str]]:
    """CSV rows (as DictReader gives them) of ``pattern``: (op, share_pct, unit) each."""
    return [
        {
            "pattern": pattern,
            "request_type": f"{op} {share:g}%",
            "op": op,
            "share_pct": f"{share:g}",
            "unit": unit,
        }
        for op, share, unit in rows
    ]


def test_raidix_existing_patterns_are_the_generic_mapping_s_special_case() -> None:
    from raidlab.studies import raidix_cache as rc

    eighty = rc.pattern_workloads(
        "Random read (80% cache hit, 20% HDD hit)",
        raidix_rows("", [("random read", 100, "IOps")]),
    )
    assert eighty == (
        rc.Workload("random read", "randread", rc.BLOCK, 0, rc.WHOLE, rc.HOT_BYTES, 80.0, True),
    )
    mixed = rc.pattern_workloads(
        "Random read from cache, write to HDD",
        raidix_rows("", [("random read", 50, "IOps"), ("sequential write", 50, "Mbps")]),
    )
    assert [w.name for w in mixed] == ["random read", "sequential write"]
    assert mixed[0] == rc.Workload(
        "random read", "randread", rc.BLOCK, 0, rc.HALF, rc.HOT_BYTES, 100.0, True
    )
    assert (
        rc.hit_pct(
            "Consecutive requests with a large block, 100% of the random load hits the SSD cache"
        )
        == 100.0
    )


def test_raidix_new_patterns_are_derived_from_their_rows() -> None:
    from raidlab.studies import raidix_cache as rc

    write = rc.pattern_workloads(
        "SYNTHETIC random write (60% cache hit)", raidix_rows("", [("random write", 100, "IOps")])
    )
    # Alone below 100 %: over the whole array, its hot set hit 60 % of the time; unwarmed.
    assert write == (
        rc.Workload("random write", "randwrite", rc.BLOCK, 0, rc.WHOLE, rc.HOT_BYTES, 60.0),
    )
    both = rc.pattern_workloads(
        "SYNTHETIC random write and read (60% cache hit)",
        raidix_rows("", [("random write", 50, "IOps"), ("random read", 50, "IOps")]),
    )
    assert [(w.name, w.offset_bytes, w.hit_pct) for w in both] == [
        ("random read", 0, 60.0),
        ("random write", rc.HALF, 60.0),
    ]
    streams = rc.pattern_workloads(
        "SYNTHETIC large sequential streams",
        raidix_rows("", [("sequential read", 50, "Mbps"), ("sequential write", 50, "MB/s")]),
    )
    assert streams == (rc.SEQ_READ, rc.SEQ_WRITE)
    uniform = rc.pattern_workloads(
        "SYNTHETIC random read (0% cache hit)", raidix_rows("", [("random read", 100, "IOps")])
    )
    assert uniform[0].hot_bytes == 0 and not uniform[0].warm


@pytest.mark.parametrize(
    ("pattern", "rows", "reason"),
    [
        ("SYNTHETIC random read", [("random read", 100, "IOps")], "does not say what share"),
        ("SYNTHETIC (100% cache hit)", [("random trim", 100, "IOps")], "op 'random trim'"),
        ("SYNTHETIC (100% cache hit)", [("random read", 100, "GB/h")], "unit 'GB/h'"),
        (
            "SYNTHETIC (100% cache hit)",
            [("random read", 70, "IOps"), ("random write", 30, "IOps")],
            "only equal shares",
        ),
        ("SYNTHETIC (150% cache hit)", [("random read", 100, "IOps")], "not within 0-100"),
    ],
)
def test_raidix_rows_that_cannot_be_mapped_say_why(
    pattern: str, rows: list[tuple[str, float, str]], reason: str
) -> None:
    from raidlab.studies import raidix_cache as rc

    with pytest.raises(rc.Unmapped, match=reason):
        rc.pattern_workloads(pattern, raidix_rows(pattern, rows))


def test_raidix_reproduce_takes_new_rows_and_prints_unmapped_ones(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from raidlab.studies import raidix_cache as rc

    # A smaller hot set and reference region keep it short (as test_cache_tier does).
    monkeypatch.setattr(rc, "HOT_BYTES", 64 << 20)
    monkeypatch.setattr(rc, "REFERENCE_MIX", {**rc.REFERENCE_MIX, "region_bytes": 64 << 30})
    args = ["reproduce", "raidix-cache", "--ios-max", "300", "--jobs", "1"]
    before = runner.invoke(app, [*args, "--format", "json"])
    assert before.exit_code == 0, before.output

    added = [
        # Synthetic rows (stated values 1 and 2): a new pattern of one random write ...
        '"SYNTHETIC random write (60% cache hit)",random write 100%,random write,100,2,1,'
        "IOps,2.0,2.0,9001,SYNTHETIC",
        # ... one of two sequential streams ...
        '"SYNTHETIC sequential streams",sequential read 50%,sequential read,50,2,1,Mbps,'
        "2.0,2.0,9002,SYNTHETIC",
        '"SYNTHETIC sequential streams",sequential write 50%,sequential write,50,2,1,Mbps,'
        "2.0,2.0,9003,SYNTHETIC",
        # ... and one whose text gives no cache-hit share.
        '"SYNTHETIC random read",random read 100%,random read,100,2,1,IOps,2.0,2.0,9004,SYNTHETIC',
    ]
    use_extended_reference(monkeypatch, tmp_path, "raidix_cache.csv", added)
    after = runner.invoke(app, [*args, "--format", "json"])
    assert after.exit_code == 0, after.output
    document = json.loads(after.stdout)
    records = {record["row"]: record for record in document["records"]}
    assert list(records) == [str(n) for n in range(404, 415)] + [
        "9001",
        "9002",
        "9003",
        "9004",
        "M01",
        "M02",
        "M03",
        "M04",
    ]
    for row in ("9001", "9002", "9003"):
        assert records[row]["gain_simulated"] > 0, records[row]
    assert records["9004"]["with_cache_simulated"] is None
    assert records["9004"]["with_cache_stated"] == 2.0
    assert [item["row"] for item in document["not_simulated"]] == ["9004"]
    assert "does not say what share" in document["not_simulated"][0]["reason"]
    # The table's own rows are simulated exactly as without the new ones.
    old = json.loads(before.stdout)["records"]
    assert [records[record["row"]] for record in old[:11]] == old[:11]

    csv_run = runner.invoke(app, [*args, "--format", "csv"])
    assert csv_run.exit_code == 0, csv_run.output
    assert "row 9004 not simulated: the pattern does not say" in csv_run.stderr
    frame = pd.read_csv(io.StringIO(csv_run.stdout))
    assert len(frame) == 11 + 4 + 4
    table = runner.invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "row 9004 not simulated" in table.stdout
