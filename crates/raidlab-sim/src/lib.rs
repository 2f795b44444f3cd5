//! raidlab-sim: a deterministic discrete-event simulator of a host, a RAID controller,
//! the links between them and the drives behind them.
//!
//! ```text
//! workload ──► host ──► controller ──────────► links ──► drives
//! (jobs,      (stack    (raidlab-layout plan,   (ports,   (HDD: seek, rotation,
//!  iodepth)    latency,  cpu cost, read-ahead)   bus)      zones, cache; SSD:
//!              I/O                                         channels, dies, buffer)
//!              scheduler)
//!          ◄──────────────── completions ─────────────────
//! ```
//!
//! Time is integer nanoseconds; the event queue breaks ties by sequence number; the
//! only randomness comes from the scenario's seed. Same scenario, same results, bit
//! for bit. Memory is bounded by the queue depth, not by the number of I/Os.
//!
//! ```
//! let scenario = r#"{"schema":1,"seed":7,
//!   "array":{"level":0,"stripe_unit_bytes":65536,"drive_count":2,
//!     "drive":{"kind":"ssd","capacity_bytes":100000000000,"link_rate_bytes_per_s":5.3e8,
//!       "command_overhead_ns":5000,"channels":8,"dies_per_channel":2,"page_bytes":16384,
//!       "read_page_ns":50000,"program_page_ns":600000,"channel_rate_bytes_per_s":2e8,
//!       "write_buffer_bytes":4194304},
//!     "controller":{"port_rate_bytes_per_s":6e8}},
//!   "workload":{"rw":"randread","bs":[[4096,1]],"iodepth":8,"size_bytes":1073741824,
//!     "ios":2000,"warmup_ios":100}}"#;
//! let out = raidlab_sim::simulate_json(scenario).unwrap();
//! let results: serde_json::Value = serde_json::from_str(&out).unwrap();
//! assert!(results["ops"]["read"]["iops"].as_f64().unwrap() > 10_000.0);
//! ```

#![deny(missing_docs)]

// The components, one folder each, as the diagram above draws them.
pub mod controller;
pub mod drive;
pub mod host;
pub mod scheduler;
// The event loop that wires them, and the cache tier that composes two of its runs.
pub mod event_queue;
pub mod simulation;
pub mod tier;
// Plain data in and out: the scenario and its rules, the results (a leaf: it imports
// nothing from the components), and a block trace's reader (input, like the scenario).
pub mod results;
pub mod scenario;
pub mod trace;
// Leaves every component uses: time on shared resources, latency histograms, the
// seeded random numbers.
pub mod histogram;
pub mod resource;
pub mod rng;
// How far a run is and whether to stop it: what a front end's progress bar and Ctrl-C
// see.
pub mod watch;

pub use raidlab_layout as layout;
pub use results::Results;
pub use scenario::limits::{limits_json, Limit, LIMITS};
pub use scenario::{levels_json, Scenario, ScenarioError};
pub use simulation::Simulation;

/// Run a scenario of fio-style workloads that passed [`Scenario::validate`] (an
/// unvalidated one may panic); a trace replay goes through [`run`], and
/// [`simulate_json`] parses and validates first.
pub fn simulate(scenario: &Scenario) -> Results {
    if scenario.array.cache.is_some() {
        return tier::simulate(scenario);
    }
    Simulation::new(scenario).run()
}

/// Run a validated scenario of either workload kind: fio-style jobs, or a trace
/// replayed from `workload.path` (streamed). A trace line that cannot be read
/// refuses the run with the field `workload.path`.
pub fn run(scenario: &Scenario) -> Result<Results, ScenarioError> {
    let Some(trace) = &scenario.trace else {
        return Ok(simulate(scenario));
    };
    let refused = |message: String| ScenarioError {
        field: "workload.path".into(),
        message,
    };
    let file = std::fs::File::open(&trace.path)
        .map_err(|e| refused(format!("cannot read the trace: {e}")))?;
    let input: Box<dyn std::io::BufRead> = Box::new(std::io::BufReader::new(file));
    let mut reader = trace::Reader::new(input, trace.format.reader_format());
    if scenario.array.cache.is_some() {
        return tier::replay(scenario, &mut reader).map_err(|e| refused(e.to_string()));
    }
    let open_loop = trace.mode == scenario::TraceMode::Open;
    Simulation::with_trace(scenario, reader, open_loop, trace.iodepth, trace.time_scale)
        .run_trace()
        .map_err(|e| refused(e.to_string()))
}

/// Replay a block trace (streamed from `trace_path`) against the array of a scenario
/// given as JSON; results as JSON. The same as [`simulate_json`] with the scenario's
/// workload replaced by `{"kind": "trace", "path": trace_path, "format":
/// trace_format, "mode": mode, "iodepth": iodepth, "time_scale": time_scale}`, which
/// is how a stored scenario reproduces a replay.
pub fn simulate_trace_json(
    scenario_json: &str,
    trace_path: &str,
    trace_format: &str,
    mode: &str,
    iodepth: u32,
    time_scale: f64,
) -> Result<String, ScenarioError> {
    let mut scenario: serde_json::Value =
        serde_json::from_str(scenario_json).map_err(|e| ScenarioError {
            field: "scenario".into(),
            message: e.to_string(),
        })?;
    if let Some(map) = scenario.as_object_mut() {
        map.remove("workloads");
        map.insert(
            "workload".into(),
            serde_json::json!({"kind": "trace", "path": trace_path, "format": trace_format,
                               "mode": mode, "iodepth": iodepth, "time_scale": time_scale}),
        );
    }
    let scenario = Scenario::from_value(scenario)?;
    let results = run(&scenario)?;
    Ok(serde_json::to_string(&results).expect("results serialise"))
}

/// Parse, validate and run a scenario given as JSON (either workload kind); results as
/// JSON.
pub fn simulate_json(scenario_json: &str) -> Result<String, ScenarioError> {
    let scenario = Scenario::from_json(scenario_json)?;
    let results = run(&scenario)?;
    Ok(serde_json::to_string(&results).expect("results serialise"))
}
