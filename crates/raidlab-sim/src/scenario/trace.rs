//! Trace replay: a block trace as the scenario's workload, its format and timing.

use super::{limits, Rw, WorkloadSpec};
use serde::{Deserialize, Serialize};

/// A block trace replayed against the array: the scenario's `workload` with
/// `"kind": "trace"` (docs/scenario.md, "Trace replay"). The trace is streamed, so
/// memory does not grow with its length; offsets wrap into the array's capacity.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// The trace file.
    pub path: String,
    /// Its format: `msr` (MSR Cambridge CSV) or `blkparse` (blkparse's text output).
    pub format: TraceFormat,
    /// `open`: each request at its timestamp divided by `time_scale`; `closed`: in
    /// trace order with `iodepth` outstanding.
    #[serde(default)]
    pub mode: TraceMode,
    /// Requests outstanding in closed mode.
    #[serde(default = "default_trace_iodepth")]
    pub iodepth: u32,
    /// Open mode: replay this many times faster than recorded.
    #[serde(default = "default_time_scale")]
    pub time_scale: f64,
}

/// The host's workload while a trace replays on an array of `capacity_bytes`: one job
/// named `trace` at `iodepth` (the trace supplies every request; the generator's fields
/// only size the host's slots and name the results).
pub fn trace_host_workload(iodepth: u32, capacity_bytes: u64) -> WorkloadSpec {
    WorkloadSpec {
        rw: Rw::Randrw,
        bs: vec![(512, 1)],
        rwmixread: 50,
        iodepth: iodepth.max(1),
        numjobs: 1,
        offset_bytes: 0,
        size_bytes: capacity_bytes,
        ios: u64::MAX,
        warmup_ios: 0,
        runtime_ns: None,
        distribution: Default::default(),
        name: Some("trace".into()),
        bs_write: None,
        warmup_ns: 0,
        sample_interval_ns: 500_000_000,
    }
}

fn default_trace_iodepth() -> u32 {
    limits::TRACE_IODEPTH.default.int() as u32
}

fn default_time_scale() -> f64 {
    limits::TRACE_TIME_SCALE.default.real()
}

/// A trace's text format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// MSR Cambridge CSV: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
    Msr,
    /// blkparse's default output; `Q` events are the requests.
    Blkparse,
}

impl TraceFormat {
    /// The reader's format.
    pub fn reader_format(self) -> crate::trace::Format {
        match self {
            TraceFormat::Msr => crate::trace::Format::Msr,
            TraceFormat::Blkparse => crate::trace::Format::Blkparse,
        }
    }

    /// The scenario's name of the format.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Msr => "msr",
            TraceFormat::Blkparse => "blkparse",
        }
    }
}

/// How a trace's requests are issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TraceMode {
    /// At the trace's timestamps (divided by the time scale), whatever is outstanding.
    #[default]
    Open,
    /// In trace order, a fixed number outstanding.
    Closed,
}
