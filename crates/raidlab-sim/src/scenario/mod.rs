//! The scenario: plain data in (array + workload + seed), as documented in
//! `docs/scenario.md`.
//!
//! ```text
//! JSON ──► limits walk ──► typed Scenario ──► rules ──► Simulation
//!          (every field:    (serde, no       (fields together:
//!           kind, bounds,    unknown keys)    level minimums, seek order,
//!           choices; limits.rs)               region inside the array; validate.rs)
//! ```
//!
//! This module holds the types; [`limits`] declares every field's bounds once, and the
//! validator (`validate.rs`) checks a scenario against that table and then the rules
//! that tie fields together. Every refusal is a [`ScenarioError`] naming the field's
//! path (`array.drive.zones`, `workloads[2].iodepth`), which the front end maps back
//! to the user's flag or TOML key.

#![deny(missing_docs)]

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod array;
mod cache;
mod controller;
mod drive;
mod host;
pub mod limits;
mod trace;
mod validate;
mod workload;

pub use array::{ArraySpec, Level, RebuildSpec};
pub use cache::{check_cache, check_scenario, CacheSpec};
pub use controller::{
    ControllerSpec, MemberCommands, MemberDispatch, ReadBalance, SpindlePhase, UplinkSpec,
};
pub use drive::{
    DriveSpec, FtlGc, FtlSpec, HddMechanicsSpec, HddSpec, NvmeSpec, Precondition, ReadAheadScheme,
    SsdSpec,
};
pub use host::{
    BfqSpec, DeadlineSpec, HostSpec, SchedulerKind, MAX_SECTORS_KB_DEFAULT, NR_REQUESTS_DEPTH_CAP,
};
pub use trace::{trace_host_workload, TraceFormat, TraceMode, TraceSpec};
pub use validate::{check_controller_preset, check_field, levels_json, scenario_level};
pub use workload::{Distribution, Rw, WorkloadSpec};

/// Schema version this crate reads and writes.
pub const SCHEMA: u32 = 1;
/// Most outstanding requests of one job, and most requests a device or scheduler
/// holds ([`limits::IODEPTH_MAX`]).
pub const IODEPTH_MAX: u32 = limits::IODEPTH_MAX as u32;
/// Jobs per workload ([`limits::NUMJOBS`]).
pub const NUMJOBS_MAX: u32 = limits::NUMJOBS.max_int() as u32;
/// Smallest transfer ([`limits::BLOCK_BYTES_MIN`]).
pub const BLOCK_BYTES_MIN: u64 = limits::BLOCK_BYTES_MIN;
/// Largest transfer ([`limits::BLOCK_BYTES_MAX`]).
pub const BLOCK_BYTES_MAX: u64 = limits::BLOCK_BYTES_MAX;

/// One simulation to run.
///
/// In JSON a trace replay is the workload of `kind = "trace"` (see [`TraceSpec`]); in
/// Rust it is the separate field [`Scenario::trace`], so code that runs fio-style
/// workloads never meets it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "RawScenario", into = "RawScenario")]
pub struct Scenario {
    /// Must equal [`SCHEMA`].
    pub schema: u32,
    /// Seeds every random choice of the run.
    pub seed: u64,
    /// What is simulated.
    pub array: ArraySpec,
    /// What is asked of it: one workload ...
    pub workload: Option<WorkloadSpec>,
    /// ... or several running at once (the job sections of a fio file) ...
    pub workloads: Vec<WorkloadSpec>,
    /// ... or a block trace replayed against the array (`workload` of kind `trace`).
    pub trace: Option<TraceSpec>,
}

/// The scenario as its JSON has it: `workload` is either kind until it is looked at.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScenario {
    pub(crate) schema: u32,
    pub(crate) seed: u64,
    pub(crate) array: ArraySpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) workload: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) workloads: Vec<serde_json::Value>,
}

/// A fio-style workload from its JSON, without the optional `"kind": "jobs"`.
fn jobs_workload(mut value: Value, field: &str) -> Result<WorkloadSpec, ScenarioError> {
    if let Some(map) = value.as_object_mut() {
        map.remove("kind");
    }
    serde_json::from_value(value).map_err(|e| ScenarioError {
        field: field.into(),
        message: e.to_string(),
    })
}

impl TryFrom<RawScenario> for Scenario {
    type Error = ScenarioError;

    fn try_from(raw: RawScenario) -> Result<Self, ScenarioError> {
        let workloads = raw
            .workloads
            .into_iter()
            .enumerate()
            .map(|(i, value)| jobs_workload(value, &format!("workloads[{i}]")))
            .collect::<Result<_, _>>()?;
        let mut scenario = Scenario {
            schema: raw.schema,
            seed: raw.seed,
            array: raw.array,
            workload: None,
            workloads,
            trace: None,
        };
        let Some(mut workload) = raw.workload else {
            return Ok(scenario);
        };
        let kind = workload.get("kind").cloned().unwrap_or(Value::Null);
        if kind == "trace" {
            if let Some(map) = workload.as_object_mut() {
                map.remove("kind");
            }
            let trace = serde_json::from_value(workload).map_err(|e| ScenarioError {
                field: "workload".into(),
                message: e.to_string(),
            })?;
            scenario.trace = Some(trace);
        } else if kind.is_null() || kind == "jobs" {
            scenario.workload = Some(jobs_workload(workload, "workload")?);
        } else {
            return Err(ScenarioError {
                field: "workload.kind".into(),
                message: format!("must be one of jobs, trace, got {kind}"),
            });
        }
        Ok(scenario)
    }
}

impl From<Scenario> for RawScenario {
    fn from(scenario: Scenario) -> Self {
        let workload = match (scenario.workload, scenario.trace) {
            (_, Some(trace)) => {
                let mut value = serde_json::to_value(trace).expect("a trace spec serialises");
                if let Some(map) = value.as_object_mut() {
                    map.insert("kind".into(), Value::from("trace"));
                }
                Some(value)
            }
            (Some(jobs), None) => Some(serde_json::to_value(jobs).expect("a workload serialises")),
            (None, None) => None,
        };
        RawScenario {
            schema: scenario.schema,
            seed: scenario.seed,
            array: scenario.array,
            workload,
            workloads: scenario
                .workloads
                .into_iter()
                .map(|w| serde_json::to_value(w).expect("a workload serialises"))
                .collect(),
        }
    }
}

/// A refused scenario: the field and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// Dotted path of the field.
    pub field: String,
    /// What is allowed and what was given.
    pub message: String,
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ScenarioError {}
