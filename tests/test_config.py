from __future__ import annotations

from pathlib import Path

import pytest
from raidlab.errors import RaidlabError
from raidlab.scenario.array import ArrayRequest, array_capacity_bytes, build_array, load_array_file
from raidlab.scenario.presets import preset_names

REPO = Path(__file__).resolve().parents[1]


def _array(**values: object) -> dict:
    return build_array(ArrayRequest(**{"drive": "adata-sp900-128g", **values}))


@pytest.mark.parametrize("drive", preset_names("drive"))
@pytest.mark.parametrize("controller", preset_names("controller"))
def test_every_preset_pair_builds_a_valid_array(drive: str, controller: str) -> None:
    array = build_array(ArrayRequest(drive=drive, controller=controller, drives=2))
    assert array["drive"]["kind"] in ("ssd", "hdd", "nvme")
    assert array["controller"]["name"] == controller
    assert "description" not in array["drive"] and "kind" not in array["controller"]


def test_presets_keep_keys_of_the_contract() -> None:
    array = _array(controller="intel-h97-rst")
    assert set(array) == {
        "level",
        "stripe_unit_bytes",
        "drive_count",
        "drive",
        "controller",
        "host",
    }
    assert array["host"] == {"request_overhead_ns": 8000}


def test_controller_added_latency_rides_on_host_latency() -> None:
    array = _array(controller="megaraid-9365")
    assert array["host"]["request_overhead_ns"] == 8000 + 40_000


def test_unknown_preset_suggests_the_closest_name() -> None:
    with pytest.raises(RaidlabError) as error:
        _array(drive="adata-sp90")
    assert "unknown drive preset 'adata-sp90': did you mean adata-sp900-128g?" in str(error.value)


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"level": 7}, "level"),
        ({"drives": 0}, "drives"),
        ({"drives": 257}, "drives"),
        ({"stripe_unit": 3000}, "stripe_unit"),
        ({"stripe_unit": 256}, "stripe_unit"),
        ({"stripe_unit": "2G"}, "stripe_unit"),
    ],
)
def test_bad_array_values_name_their_field(values: dict, field: str) -> None:
    with pytest.raises(RaidlabError) as error:
        _array(**values)
    assert error.value.field == field


def test_level_error_lists_the_levels() -> None:
    with pytest.raises(RaidlabError, match="must be one of 0, 1, 4, 5, 6, 10, 50, 60, concat"):
        _array(level=7)


def test_inline_drive_table_overrides_a_preset() -> None:
    array = _array(drive={"preset": "adata-sp900-128g", "write_buffer_bytes": "8M"})
    assert array["drive"]["write_buffer_bytes"] == 8 << 20


def test_inline_drive_without_preset_needs_every_field() -> None:
    with pytest.raises(RaidlabError, match="missing"):
        _array(drive={"kind": "ssd", "channels": 8})


def test_unlimited_rates_become_null() -> None:
    assert _array(controller="hba")["controller"]["bus_rate_bytes_per_s"] is None


def test_capacity_counts_whole_stripe_units_on_every_member() -> None:
    array = _array(drives=2, stripe_unit="16K")
    unit = 16384
    assert array_capacity_bytes(array) == 2 * (128_000_000_000 // unit) * unit


def test_example_file_loads() -> None:
    array = build_array(load_array_file(REPO / "examples" / "ssd-raid0.toml"))
    assert (array["drive_count"], array["stripe_unit_bytes"]) == (3, 16384)
    assert array["controller"]["name"] == "intel-h97-rst"


def test_malformed_toml_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[array]\nlevel = 0\ndrives = \n")
    with pytest.raises(RaidlabError) as error:
        load_array_file(path)
    assert str(path) in str(error.value) and "line 3" in str(error.value)


def test_unknown_toml_key_lists_allowed_keys(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[array]\nstripe = "16K"\n')
    with pytest.raises(RaidlabError) as error:
        load_array_file(path)
    assert error.value.field == f"{path}: array.stripe"
    assert "allowed: level, drives, stripe_unit, drive, controller" in str(error.value)


def test_unknown_toml_table_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[arrray]\ndrives = 2\n")
    with pytest.raises(RaidlabError, match="unknown key 'arrray'"):
        load_array_file(path)


def test_toml_values_are_labelled_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "a.toml"
    path.write_text('[array]\ndrive = "adata-sp900-128g"\nstripe_unit = "3000"\n')
    with pytest.raises(RaidlabError) as error:
        build_array(load_array_file(path))
    assert error.value.field == f"{path}: array.stripe_unit"


def test_an_ssd_table_may_carry_an_ftl() -> None:
    from raidlab.scenario.array import ArrayRequest, build_array

    array = build_array(
        ArrayRequest(
            drive={
                "preset": "intel-dc-s3500-800g",
                "ftl": {
                    "spare_percent": 7,
                    "op_percent": "20%",
                    "pages_per_block": 256,
                    "erase_ns": 3_000_000,
                    "precondition": "steady",
                },
            },
        )
    )
    ftl = array["drive"]["ftl"]
    assert ftl["op_percent"] == 20.0 and ftl["gc"] == "greedy" and ftl["units"] == 1 << 18


def test_an_ftl_table_refuses_unknown_keys() -> None:
    import pytest
    from raidlab.errors import RaidlabError
    from raidlab.scenario.array import ArrayRequest, build_array

    with pytest.raises(RaidlabError, match="ftl"):
        build_array(
            ArrayRequest(
                drive={"preset": "intel-dc-s3500-800g", "ftl": {"spare_percent": 7, "bogus": 1}}
            )
        )


def test_a_controller_kind_is_one_the_native_table_allows_and_stays_out_of_the_scenario() -> None:
    from raidlab.scenario import limits

    kinds = limits.choices("array.controller.kind", "preset")
    assert kinds == ("hba", "chipset", "hardware", "software")
    for kind in kinds:
        assert "kind" not in _array(controller={"preset": "hba", "kind": kind})["controller"]
    with pytest.raises(RaidlabError, match="must be one of hba, chipset") as error:
        _array(controller={"preset": "hba", "kind": "raid-card"})
    assert str(error.value).startswith("controller.kind: ")


def test_write_back_without_a_backup_unit_is_refused_unless_forced() -> None:
    import pytest
    from raidlab.errors import RaidlabError
    from raidlab.scenario.array import ArrayRequest, build_array

    with pytest.raises(RaidlabError, match="write_back"):
        build_array(
            ArrayRequest(
                drive="intel-dc-s3500-80g",
                controller={"preset": "megaraid-9361", "write_back": True, "bbu": False},
            )
        )
    array = build_array(
        ArrayRequest(
            drive="intel-dc-s3500-80g",
            controller={
                "preset": "megaraid-9361",
                "write_back": True,
                "bbu": False,
                "force_write_back": True,
            },
        )
    )
    assert array["controller"]["write_back"] is True


def test_member_dispatch_takes_batch_or_serial_and_names_the_field_otherwise() -> None:
    batch = _array(controller={"preset": "dell-perc6i", "member_dispatch": "batch"})
    assert batch["controller"]["member_dispatch"] == "batch"
    assert _array(controller="dell-perc6i")["controller"]["member_dispatch"] == "serial"
    with pytest.raises(RaidlabError, match="must be one of batch, serial") as error:
        _array(controller={"preset": "dell-perc6i", "member_dispatch": "sometimes"})
    assert "member_dispatch" in str(error.value)
