//! The host: the requests it issues and how they reach the array.
//!
//! - [`workload`]: the fio-style jobs, what each asks for next and what each measured
//!   (pure state, no events).
//! - `block_layer`: the events of the host's side of the loop: issuing through the host
//!   stack and the I/O scheduler stage ([`crate::scheduler`]), and completion.
//! - `trace_replay`: a block trace as the source of requests instead of the jobs
//!   (its reader is [`crate::trace`], shared with scenario validation and the cache
//!   tier).
//!
//! The replay's state (`TraceSource`) lives here, apart from its handlers, so that
//! the event loop (`crate::simulation`) can hold it without importing the handlers that
//! import the event loop.

mod block_layer;
mod trace_replay;
pub mod workload;

pub use workload::{Ask, Job, Sampler, Workload, SAMPLES_MAX};

use crate::trace::{Reader, Record, TraceError};
use std::collections::VecDeque;

/// A block trace feeding the host instead of workload generators.
pub(crate) struct TraceSource {
    reader: Reader<Box<dyn std::io::BufRead>>,
    /// Open loop: requests arrive at their timestamps; closed: at a queue depth.
    open_loop: bool,
    time_scale: f64,
    /// Arrivals waiting for a free slot (open loop), bounded by `BACKLOG_MAX`.
    backlog: VecDeque<(Record, u64)>,
    /// The next record, read ahead, and when it arrives.
    next: Option<(Record, u64)>,
    free_slots: Vec<u32>,
    outstanding: u32,
    exhausted: bool,
    error: Option<TraceError>,
}

/// Open-loop arrivals held back while the array falls behind; beyond it the trace is
/// read more slowly rather than memory growing with it.
const BACKLOG_MAX: usize = 1 << 20;
