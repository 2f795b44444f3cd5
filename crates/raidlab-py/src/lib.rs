//! `raidlab._native`: scenario JSON in, results JSON out. Everything else (presets,
//! validation with friendly messages, sweeps, plots) lives in the Python package.

mod engine;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Simulate one scenario (JSON text, see docs/scenario.md) and return results JSON.
/// Releases the GIL while simulating, so threads can run points side by side.
/// Raises ValueError naming the field when the scenario is refused.
#[pyfunction]
fn simulate(py: Python<'_>, scenario_json: &str) -> PyResult<String> {
    let text = scenario_json.to_owned();
    py.allow_threads(move || raidlab_sim::simulate_json(&text))
        .map_err(|e| PyValueError::new_err(e.to_string()))
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

/// Replay a block trace against a scenario's array (docs/scenario.md, "Trace replay").
/// The trace is streamed from `trace_path`; the GIL is released while it runs.
#[pyfunction]
#[pyo3(signature = (scenario_json, trace_path, trace_format, mode, iodepth, time_scale))]
fn simulate_trace(
    py: Python<'_>,
    scenario_json: &str,
    trace_path: &str,
    trace_format: &str,
    mode: &str,
    iodepth: u32,
    time_scale: f64,
) -> PyResult<String> {
    let (scenario, path, format, mode) = (
        scenario_json.to_owned(),
        trace_path.to_owned(),
        trace_format.to_owned(),
        mode.to_owned(),
    );
    py.allow_threads(move || {
        raidlab_sim::simulate_trace_json(&scenario, &path, &format, &mode, iodepth, time_scale)
            .map_err(|e| e.to_string())
    })
    .map_err(PyValueError::new_err)
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
    m.add_function(wrap_pyfunction!(engine::engine_main, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
