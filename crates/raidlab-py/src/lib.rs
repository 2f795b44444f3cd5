//! `raidlab._native`: scenario JSON in, results JSON out. The native side is the one
//! authority on what is valid: `limits()` and `levels()` declare every bound and level
//! rule, and a refused scenario raises `ScenarioError` with the field's path, which the
//! Python package maps back to the user's flag or TOML key. Presets, TOML, units,
//! sweeps and plots live in the Python package.
#![deny(missing_docs)]

mod engine;
mod units;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

pyo3::create_exception!(
    _native,
    ScenarioError,
    PyValueError,
    "A refused scenario: `.field` is the path of the field (`array.drive.zones`, \
     `workloads[2].iodepth`), `.message` what is allowed and what was given; \
     `str()` is `field: message`. A subclass of ValueError."
);

/// The Python exception of a refused scenario, with `field` and `message` attributes.
fn scenario_error(py: Python<'_>, e: raidlab_sim::ScenarioError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let value = err.value(py);
    let set = value
        .setattr("field", &e.field)
        .and_then(|()| value.setattr("message", &e.message));
    match set {
        Ok(()) => err,
        Err(setattr_failed) => setattr_failed,
    }
}

/// How often a running simulation takes the GIL to look for a signal (Ctrl-C) and to
/// report its progress: often enough that a stop is seen within a second, rarely
/// enough to cost nothing.
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Runs `run` (a simulation, GIL released) watched: every [`WATCH_EVERY`] it runs the
/// Python signal handlers (a Ctrl-C raises KeyboardInterrupt there, on the main
/// thread) and calls `progress(fraction)` (`fraction` in [0, 1], or None when unknown)
/// if given. An exception from either stops the run and is raised here.
fn watched<R: Send>(
    py: Python<'_>,
    progress: Option<PyObject>,
    run: impl FnOnce() -> R + Send,
) -> PyResult<R> {
    py.allow_threads(move || {
        let mut raised: Option<PyErr> = None;
        let outcome = {
            let mut last = std::time::Instant::now();
            let mut watcher = |fraction: Option<f64>| {
                if last.elapsed() < WATCH_EVERY {
                    return false;
                }
                last = std::time::Instant::now();
                Python::with_gil(|py| {
                    let reported = py.check_signals().and_then(|()| match &progress {
                        Some(callback) => callback.call1(py, (fraction,)).map(|_| ()),
                        None => Ok(()),
                    });
                    raised = reported.err();
                    raised.is_some()
                })
            };
            raidlab_sim::watch::watched(&mut watcher, run)
        };
        outcome.map_err(|raidlab_sim::watch::Interrupted| {
            raised.unwrap_or_else(|| pyo3::exceptions::PyKeyboardInterrupt::new_err("interrupted"))
        })
    })
}

/// Simulate one scenario (JSON text, see docs/scenario.md) and return results JSON.
/// The workload may be fio-style jobs or a trace replay (`"kind": "trace"`).
/// Releases the GIL while simulating, so threads can run points side by side; takes it
/// back every 100 ms to run signal handlers (Ctrl-C stops the run with
/// KeyboardInterrupt) and to call `progress(fraction)` when given (`fraction` in
/// [0, 1], None for a trace). Raises ScenarioError (a ValueError) with the field's
/// path when it is refused.
#[pyfunction]
#[pyo3(signature = (scenario_json, progress=None))]
fn simulate(py: Python<'_>, scenario_json: &str, progress: Option<PyObject>) -> PyResult<String> {
    let text = scenario_json.to_owned();
    watched(py, progress, move || raidlab_sim::simulate_json(&text))?
        .map_err(|e| scenario_error(py, e))
}

/// Memory, bytes, a run of a scenario (JSON text) holds for its outstanding host I/Os
/// (every job's `numjobs` x `iodepth`, or the trace replay's depth), as the simulator
/// reserves it: what a front end compares with a memory limit before running. Raises
/// ScenarioError like `validate`.
#[pyfunction]
fn memory_needed(py: Python<'_>, scenario_json: &str) -> PyResult<u64> {
    raidlab_sim::Scenario::from_json(scenario_json)
        .map(|scenario| raidlab_sim::Simulation::host_slots_bytes(&scenario))
        .map_err(|e| scenario_error(py, e))
}

/// Validate a scenario (JSON text) without running it: returns None, or raises
/// ScenarioError with `.field` (the path, e.g. `array.drive.zones`) and `.message`.
/// A trace workload's file is opened and its first record read.
#[pyfunction]
fn validate(py: Python<'_>, scenario_json: &str) -> PyResult<()> {
    raidlab_sim::Scenario::from_json(scenario_json)
        .map(|_| ())
        .map_err(|e| scenario_error(py, e))
}

/// A scenario's `array` object parsed from JSON text; bad JSON is a refusal of the
/// field `array`.
fn array_value(py: Python<'_>, array_json: &str) -> PyResult<serde_json::Value> {
    serde_json::from_str(array_json).map_err(|e| {
        scenario_error(
            py,
            raidlab_sim::ScenarioError {
                field: "array".into(),
                message: e.to_string(),
            },
        )
    })
}

/// Validate a scenario's `array` object (JSON text) on its own: every field against
/// `limits()`, then the level rules, the drive's and controller's rules and the
/// failed members. Returns None or raises ScenarioError with the field's path
/// (`array.drive_count`).
#[pyfunction]
fn validate_array(py: Python<'_>, array_json: &str) -> PyResult<()> {
    let array = array_value(py, array_json)?;
    raidlab_sim::scenario::ArraySpec::from_value(array)
        .map(|_| ())
        .map_err(|e| scenario_error(py, e))
}

/// Replay requests one at a time on the single HDD of an `array` (JSON text), each a
/// think time after the last completed, as DiskSim replays a validation trace
/// (`raidlab_sim::drive::hdd_replay`). `requests` are `(write, offset_bytes,
/// len_bytes, think_ns)`; returns each request's response time in ns, or raises
/// ScenarioError naming the field.
#[pyfunction]
fn hdd_replay(
    py: Python<'_>,
    array_json: &str,
    requests: Vec<(bool, u64, u64, u64)>,
) -> PyResult<Vec<u64>> {
    use raidlab_sim::drive::hdd_replay::{replay_one_at_a_time, ReplayRequest};
    let array = array_value(py, array_json)?;
    let requests: Vec<ReplayRequest> = requests
        .into_iter()
        .map(|(write, offset_bytes, len_bytes, think_ns)| ReplayRequest {
            write,
            offset_bytes,
            len_bytes,
            think_ns,
        })
        .collect();
    py.allow_threads(move || replay_one_at_a_time(array, &requests))
        .map_err(|e| scenario_error(py, e))
}

/// Check one value (JSON text) of the field at `path` (`workload.iodepth`) on its
/// own, as a scenario's would be; `scope` is the drive or workload kind the field
/// belongs to (`always`, `hdd`, `ssd`, `jobs`, `trace`). Returns None or raises
/// ScenarioError naming `path`.
#[pyfunction]
#[pyo3(signature = (path, value_json, scope = "always"))]
fn check_field(py: Python<'_>, path: &str, value_json: &str, scope: &str) -> PyResult<()> {
    let refused = |field: &str, message: String| {
        scenario_error(
            py,
            raidlab_sim::ScenarioError {
                field: field.into(),
                message,
            },
        )
    };
    let value: serde_json::Value =
        serde_json::from_str(value_json).map_err(|e| refused(path, e.to_string()))?;
    let scope: raidlab_sim::scenario::limits::Scope = scope
        .parse()
        .map_err(|e: raidlab_sim::ScenarioError| refused("scope", e.message))?;
    raidlab_sim::scenario::check_field(path, scope, &value).map_err(|e| scenario_error(py, e))
}

/// Check a controller preset's own keys (JSON text of its table: `kind`, `bbu`,
/// `force_write_back`, with its `write_back`): their values, and that write-back has a
/// backup unit unless forced. Returns None or raises ScenarioError naming the field.
#[pyfunction]
fn check_controller_preset(py: Python<'_>, table_json: &str) -> PyResult<()> {
    let table: serde_json::Value = serde_json::from_str(table_json).map_err(|e| {
        scenario_error(
            py,
            raidlab_sim::ScenarioError {
                field: "array.controller".into(),
                message: e.to_string(),
            },
        )
    })?;
    raidlab_sim::scenario::check_controller_preset(&table).map_err(|e| scenario_error(py, e))
}

/// Every field a scenario may carry and its bounds, as JSON: a list of limits with
/// `path` (`array.drive.zones`; fields of each of `workloads` under `workload.`),
/// `scope` (`always`, `hdd`, `ssd`, `jobs`, `trace`), `kind` (`count`, `bytes`, `ns`,
/// `kib`, `rate`, `percent`, `number`, `bool`, `choice`, `text`, `level`, `mix`,
/// `members`, `distribution`, `table`, `tables`), `required`, `nullable`, `doc`, and
/// where they apply `min`, `min_exclusive`, `max`, `multiple_of`, `power_of_two`,
/// `choices`, `items_max`, `default`. The simulator checks exactly these.
#[pyfunction]
fn limits() -> String {
    raidlab_sim::limits_json()
}

/// The RAID level rules, as JSON: per level `level` (as the scenario names it), `name`,
/// `members_min`, `members_max`, `span_members_min`, `layouts` (md's default first),
/// `default_layout`, `copies`, `copies_default`, `spans`, `spans_min`, `span_level`,
/// `parity` (parity blocks per stripe) and `mirror`.
#[pyfunction]
fn levels() -> String {
    raidlab_sim::levels_json()
}

/// Geometry of an array (the scenario's `array` object as JSON): usable capacity, the
/// member bytes in use, failures tolerated in every case, whether it survives its
/// `failed` members, data members per stripe.
/// The front end asks here rather than re-deriving md's layout arithmetic.
#[pyfunction]
fn array_info(array_json: &str) -> PyResult<String> {
    let array: raidlab_sim::scenario::ArraySpec = serde_json::from_str(array_json)
        .map_err(|e| PyValueError::new_err(format!("array: {e}")))?;
    let g = array
        .geometry()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let failed = failed_set(&array.failed, g.members())?;
    Ok(serde_json::json!({
        "tolerates": g.tolerates(&failed),
        "capacity_bytes": g.capacity_bytes(),
        "member_used_bytes": g.member_used_bytes(),
        "tolerated_failures": g.tolerated_failures(),
        "data_members_per_stripe": g.data_members_per_stripe(),
    })
    .to_string())
}

/// The failed set of an array, refusing members that do not exist.
fn failed_set(failed: &[u32], members: u32) -> PyResult<raidlab_sim::layout::MemberSet> {
    if let Some(m) = failed.iter().find(|&&m| m >= members) {
        return Err(PyValueError::new_err(format!(
            "array.failed: member {m} does not exist: members are 0..{members}"
        )));
    }
    Ok(raidlab_sim::layout::MemberSet::from_members(failed))
}

/// Replay a block trace against a scenario's array: `simulate` with the scenario's
/// workload replaced by a trace workload of these fields (docs/scenario.md, "Trace
/// replay"). The trace is streamed; the GIL is released while it runs and Ctrl-C and
/// `progress` work as in `simulate`. Raises ScenarioError naming the field
/// (`workload.path`, `workload.iodepth`, ...).
#[pyfunction]
#[pyo3(signature = (scenario_json, trace_path, trace_format, mode, iodepth, time_scale, progress=None))]
#[allow(clippy::too_many_arguments)] // the trace workload's fields, as the docs list them
fn simulate_trace(
    py: Python<'_>,
    scenario_json: &str,
    trace_path: &str,
    trace_format: &str,
    mode: &str,
    iodepth: u32,
    time_scale: f64,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let (scenario, path, format, mode) = (
        scenario_json.to_owned(),
        trace_path.to_owned(),
        trace_format.to_owned(),
        mode.to_owned(),
    );
    watched(py, progress, move || {
        raidlab_sim::simulate_trace_json(&scenario, &path, &format, &mode, iodepth, time_scale)
    })?
    .map_err(|e| scenario_error(py, e))
}

/// Schema version of scenarios and results this build reads and writes.
#[pyfunction]
fn schema() -> u32 {
    raidlab_sim::scenario::SCHEMA
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(array_info, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_trace, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(memory_needed, m)?)?;
    m.add_function(wrap_pyfunction!(limits, m)?)?;
    m.add_function(wrap_pyfunction!(levels, m)?)?;
    m.add_function(wrap_pyfunction!(validate_array, m)?)?;
    m.add_function(wrap_pyfunction!(check_field, m)?)?;
    m.add_function(wrap_pyfunction!(hdd_replay, m)?)?;
    m.add_function(wrap_pyfunction!(check_controller_preset, m)?)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(engine::engine_main, m)?)?;
    m.add_function(wrap_pyfunction!(engine::engine_flags, m)?)?;
    m.add_function(wrap_pyfunction!(units::parse_size, m)?)?;
    m.add("SizeError", m.py().get_type::<units::SizeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
