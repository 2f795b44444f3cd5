//! The table of limits is the validator: every bound it declares is enforced just past
//! it, with an error naming the field's path; the level rules come from the layout.

use crate::common::{hdd, scenario, ssd};
use raidlab_sim::scenario::limits::{Fallback, Kind, Limit, Num, Scope, LAYOUTS, LIMITS};
use raidlab_sim::scenario::{Rw, Scenario};
use serde_json::{json, Value};

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/traces/small.msr.csv"
);

fn ssd_with_ftl() -> Value {
    let mut s = serde_json::to_value(scenario(ssd(), 2, Rw::Randread, 4096, 1)).unwrap();
    s["array"]["drive"]["ftl"] = json!({"spare_percent": 7.0, "pages_per_block": 256,
                                        "erase_ns": 3_000_000});
    s
}

/// A valid scenario in which the field at `limit.path` exists and matters.
fn base_for(limit: &Limit) -> Value {
    let mut s = match limit.scope {
        Scope::Hdd => serde_json::to_value(scenario(hdd(), 2, Rw::Randread, 4096, 1)).unwrap(),
        Scope::Nvme => {
            let mut s = ssd_with_ftl();
            s["array"]["drive"] = json!({"kind": "nvme", "capacity_bytes": 100_000_000_000u64,
                "pcie_gen": 3, "pcie_lanes": 4, "command_overhead_ns": 1000, "channels": 8,
                "dies_per_channel": 4, "page_bytes": 16384, "read_page_ns": 50_000,
                "program_page_ns": 600_000, "channel_rate_bytes_per_s": 8e8,
                "write_buffer_bytes": 8_388_608});
            s
        }
        _ => ssd_with_ftl(),
    };
    if limit.scope == Scope::Trace {
        s["workload"] = json!({"kind": "trace", "path": TRACE, "format": "msr"});
    }
    let path = limit.path;
    let array = &mut s["array"];
    if path.starts_with("array.host.deadline") {
        array["host"]["scheduler"] = json!("mq-deadline");
        array["host"]["deadline"] = json!({});
    } else if path.starts_with("array.host.bfq") {
        array["host"]["scheduler"] = json!("bfq");
        array["host"]["bfq"] = json!({});
    } else if path.starts_with("array.controller.uplink") {
        array["controller"]["uplink"] = json!({"pcie_gen": 3, "pcie_lanes": 4});
    } else if path.starts_with("array.rebuild") {
        array["level"] = json!(1);
        array["failed"] = json!([0]);
        array["rebuild"] = json!({"member": 0, "rate_bytes_per_s": 1e8});
        // A failure during the run needs a hot spare to rebuild onto at once.
        array["spares"] = json!(1);
    } else if path == "array.copies" {
        array["level"] = json!(10);
        array["drive_count"] = json!(4);
    } else if path == "array.spans" {
        array["level"] = json!(50);
        array["drive_count"] = json!(6);
        array["spans"] = json!(2);
    } else if path == "array.layout" {
        array["level"] = json!(5);
        array["drive_count"] = json!(3);
    }
    assert!(
        Scenario::from_value(s.clone()).is_ok(),
        "{path}: base scenario refused: {:?}",
        Scenario::from_value(s.clone()).err()
    );
    s
}

/// `scenario` with the field at `path` set to `value` (a mix weight: the mix's).
fn with(mut scenario: Value, path: &str, value: Value) -> Value {
    let (parent, key) = path.rsplit_once('.').unwrap_or(("", path));
    let mut table = &mut scenario;
    for part in parent.split('.').filter(|p| !p.is_empty()) {
        table = &mut table[part];
    }
    table[key] = value;
    scenario
}

/// Where the error for a value of `limit` must point.
fn field_of(limit: &Limit) -> &'static str {
    if limit.path == "workload.bs.weight" {
        "workload.bs"
    } else {
        limit.path
    }
}

/// The JSON to put at the limit's path for a value `x` of its kind.
fn value_of(limit: &Limit, x: f64) -> Value {
    let one = |v: Value| match limit.kind {
        Kind::Mix => json!([[v, 1]]),
        Kind::Members | Kind::Ints => json!([v]),
        _ => v,
    };
    if limit.path == "workload.bs.weight" {
        return json!([[4096, x as i64]]);
    }
    if limit.kind.is_real() {
        one(json!(x))
    } else {
        one(json!(x as i64))
    }
}

fn refused_at(limit: &Limit, value: Value) -> Result<(), String> {
    let scenario = with(base_for(limit), field_of(limit), value.clone());
    match Scenario::from_value(scenario) {
        Ok(_) => Err(format!("{}: {value} was accepted", limit.path)),
        Err(e) if e.field == field_of(limit) => Ok(()),
        Err(e) => Err(format!("{}: {value} refused as {e}", limit.path)),
    }
}

/// Just outside each bound, by a whole unit, or by a fraction of a small real bound.
fn outside(limit: &Limit) -> Vec<f64> {
    let mut values = Vec::new();
    if let Some(min) = limit.min {
        let min = min.as_f64();
        if limit.min_exclusive {
            values.push(min);
        }
        let step = if limit.kind.is_real() && min.abs() < 1.0 && min != 0.0 {
            min.abs() / 2.0
        } else {
            1.0
        };
        values.push(min - step);
    }
    if let Some(max) = limit.max {
        if max != Num::Int(u64::MAX) {
            values.push(max.as_f64() + 1.0);
        }
    }
    values
}

#[test]
fn every_declared_bound_is_enforced_just_past_it_with_its_path() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for limit in LIMITS {
        for x in outside(limit) {
            checked += 1;
            if let Err(e) = refused_at(limit, value_of(limit, x)) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 150, "only {checked} bounds walked");
}

#[test]
fn every_bound_itself_is_allowed() {
    for limit in LIMITS
        .iter()
        .filter(|l| l.kind.is_integer() || l.kind.is_real())
    {
        let field = limit.path;
        for bound in [limit.min, limit.max].into_iter().flatten() {
            let value = match bound {
                Num::Int(n) => json!(n),
                Num::Real(x) => json!(x),
            };
            let allowed = limit.check(&value, field);
            assert_eq!(
                allowed.is_ok(),
                !(limit.min_exclusive && Some(bound) == limit.min)
            );
        }
    }
}

#[test]
fn every_choice_field_refuses_a_value_it_does_not_list() {
    for limit in LIMITS
        .iter()
        .filter(|l| matches!(l.kind, Kind::Choice | Kind::Level))
    {
        // workload.kind chooses the table itself; a bad kind is refused at its path too.
        refused_at(limit, json!("no-such-choice")).unwrap();
    }
}

#[test]
fn every_field_refuses_a_value_of_the_wrong_type() {
    for limit in LIMITS {
        let wrong = match limit.kind {
            Kind::Text => json!(5),
            Kind::Bool => json!("yes"),
            _ => json!(true),
        };
        refused_at(limit, wrong).unwrap();
    }
}

#[test]
fn every_list_refuses_more_entries_than_it_declares() {
    for limit in LIMITS.iter().filter(|l| l.items_max.is_some()) {
        let n = limit.items_max.unwrap() + 1;
        let items: Vec<Value> = match limit.kind {
            Kind::Mix => (1..=n).map(|i| json!([512 * i, 1])).collect(),
            Kind::Members => (0..n).map(|i| json!(i % 2)).collect(),
            Kind::Ints => (0..n).map(|i| json!(i + 1)).collect(),
            _ => {
                let one = base_for(limit)["workload"].clone();
                (0..n).map(|_| one.clone()).collect()
            }
        };
        let mut base = base_for(limit);
        if limit.path == "workloads" {
            base.as_object_mut().unwrap().remove("workload");
        }
        let scenario = with(base, limit.path, Value::Array(items));
        let err = Scenario::from_value(scenario).unwrap_err();
        assert_eq!(err.field, limit.path, "{err}");
        assert!(err.message.contains("at most"), "{err}");
    }
}

#[test]
fn every_required_field_left_out_is_named() {
    for limit in LIMITS.iter().filter(|l| l.default == Fallback::Required) {
        if limit.path == "workload.bs.weight" {
            continue;
        }
        let mut scenario = base_for(limit);
        let (parent, key) = limit.path.rsplit_once('.').unwrap_or(("", limit.path));
        let mut table = &mut scenario;
        for part in parent.split('.').filter(|p| !p.is_empty()) {
            table = &mut table[part];
        }
        table.as_object_mut().unwrap().remove(key);
        let err = Scenario::from_value(scenario).unwrap_err();
        assert_eq!(err.field, limit.path, "{err}");
    }
}

#[test]
fn an_unknown_key_is_named_with_its_path_and_the_keys_allowed() {
    let scenario = with(ssd_with_ftl(), "array.drive.ftl.spare", json!(7));
    let err = Scenario::from_value(scenario).unwrap_err();
    assert_eq!(err.field, "array.drive.ftl.spare");
    assert!(err.message.contains("spare_percent"), "{err}");
    // An HDD field on an SSD is unknown there.
    let scenario = with(ssd_with_ftl(), "array.drive.rpm", json!(7200));
    assert_eq!(
        Scenario::from_value(scenario).unwrap_err().field,
        "array.drive.rpm"
    );
}

#[test]
fn a_field_of_one_of_several_workloads_is_named_with_its_index() {
    let mut s = ssd_with_ftl();
    let job = s["workload"].take();
    s.as_object_mut().unwrap().remove("workload");
    s["workloads"] = json!([job.clone(), with(job, "iodepth", json!(0))]);
    let err = Scenario::from_value(s).unwrap_err();
    assert_eq!(err.field, "workloads[1].iodepth");
}

#[test]
fn the_drifted_hdd_bounds_are_the_simulators() {
    // The front end once allowed 4096 zones and 65536 commands; the HDD model takes 1024
    // and 256, and the table says so.
    let hdd = |path: &str| {
        LIMITS
            .iter()
            .find(|l| l.path == path && l.scope == Scope::Hdd)
            .unwrap()
            .max_int()
    };
    assert_eq!(hdd("array.drive.zones"), 1024);
    assert_eq!(hdd("array.drive.ncq_depth"), 256);
}

#[test]
fn level_choices_and_layouts_are_the_layout_crates() {
    use raidlab_sim::layout::Level;
    let levels: Value = serde_json::from_str(&raidlab_sim::levels_json()).unwrap();
    let names: Vec<String> = levels
        .as_array()
        .unwrap()
        .iter()
        .map(|l| match &l["level"] {
            Value::String(s) => s.clone(),
            n => n.to_string(),
        })
        .collect();
    let mut declared: Vec<String> = raidlab_sim::scenario::limits::LEVEL
        .choices
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut names_sorted = names.clone();
    names_sorted.sort();
    declared.sort();
    assert_eq!(names_sorted, declared);
    let mut layouts: Vec<&str> = Level::ALL
        .iter()
        .flat_map(|l| l.layouts().iter().map(|x| x.name()))
        .collect();
    layouts.sort();
    layouts.dedup();
    let mut table: Vec<&str> = LAYOUTS.to_vec();
    table.sort();
    assert_eq!(layouts, table);
    let raid6 = &levels.as_array().unwrap()[names.iter().position(|n| n == "6").unwrap()];
    assert_eq!(raid6["members_min"], 4);
    assert_eq!(raid6["default_layout"], "left-symmetric");
    let raid60 = &levels.as_array().unwrap()[names.iter().position(|n| n == "60").unwrap()];
    assert_eq!(
        (raid60["members_min"].as_u64(), raid60["spans"].as_bool()),
        (Some(8), Some(true))
    );
}

#[test]
fn each_level_below_its_minimum_drive_count_is_refused_at_drive_count() {
    use raidlab_sim::layout::Level;
    for level in Level::ALL {
        let levels: Value = serde_json::from_str(&raidlab_sim::levels_json()).unwrap();
        let entry = levels
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == level.name())
            .unwrap()
            .clone();
        let min = entry["members_min"].as_u64().unwrap();
        if min < 2 {
            continue;
        }
        let mut s = ssd_with_ftl();
        s["array"]["level"] = entry["level"].clone();
        if level.takes_spans() {
            s["array"]["spans"] = json!(2);
        }
        s["array"]["drive_count"] = json!(min);
        assert!(
            Scenario::from_value(s.clone()).is_ok(),
            "{level} with {min}"
        );
        s["array"]["drive_count"] = json!(min - if level.takes_spans() { 2 } else { 1 });
        let err = Scenario::from_value(s).unwrap_err();
        assert_eq!(err.field, "array.drive_count", "{level}: {err}");
    }
}

#[test]
fn the_exported_table_lists_every_limit_with_its_bounds() {
    let table: Value = serde_json::from_str(&raidlab_sim::limits_json()).unwrap();
    let entries = table.as_array().unwrap();
    assert_eq!(entries.len(), LIMITS.len());
    let zones = entries
        .iter()
        .find(|e| e["path"] == "array.drive.zones")
        .unwrap();
    assert_eq!(
        zones,
        &json!({"path": "array.drive.zones", "scope": "hdd", "kind": "count", "min": 1,
                "max": 1024, "default": 16, "required": false, "nullable": false,
                "doc": "zones of constant bytes per track"})
    );
}
