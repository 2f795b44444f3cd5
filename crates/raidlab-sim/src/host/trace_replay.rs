//! A block trace as the host's source of requests instead of workload generators:
//! records are streamed from the trace (never held whole), fitted into the array, and
//! issued either at their timestamps (open loop, with a bounded backlog) or with a
//! fixed number outstanding in trace order (closed loop).

use super::{TraceSource, BACKLOG_MAX};
use crate::event_queue::EventKind;
use crate::results::Results;
use crate::scenario::Scenario;
use crate::simulation::{Request, Simulation};
use crate::trace::{Reader, Record, TraceError};
use std::collections::VecDeque;

impl Simulation {
    /// A run that replays `reader` against the scenario's array (its workloads are
    /// ignored): open loop at the trace's timestamps divided by `time_scale`, or closed
    /// loop with `iodepth` requests outstanding.
    pub fn with_trace(
        scenario: &Scenario,
        reader: Reader<Box<dyn std::io::BufRead>>,
        open_loop: bool,
        iodepth: u32,
        time_scale: f64,
    ) -> Self {
        let capacity = scenario
            .array
            .geometry()
            .expect("validated array")
            .capacity_bytes();
        let mut replay = scenario.clone();
        replay.workloads.clear();
        replay.workload = Some(crate::scenario::trace_host_workload(iodepth, capacity));
        let mut sim = Self::new(&replay);
        sim.trace = Some(TraceSource {
            reader,
            open_loop,
            time_scale,
            backlog: VecDeque::new(),
            next: None,
            free_slots: (0..sim.host_slots).rev().collect(),
            outstanding: 0,
            exhausted: false,
            error: None,
        });
        sim
    }

    /// Run a trace replay until every record has completed; a trace line that cannot
    /// be read ends the run with its error.
    pub fn run_trace(mut self) -> Result<Results, TraceError> {
        let open_loop = self.trace.as_ref().expect("a trace").open_loop;
        if open_loop {
            self.read_next_arrival();
        } else {
            for _ in 0..self.host_slots {
                self.trace_issue_next();
            }
        }
        self.finish_trace_if_done();
        let results = self.run_events();
        match self.trace.as_mut().and_then(|t| t.error.take()) {
            Some(e) => Err(e),
            None => Ok(results.expect("the replay ended")),
        }
    }

    /// Read the next record (errors end the run) fitted into the array: lengths round
    /// up to whole sectors, offsets wrap into the capacity.
    fn read_record(&mut self) -> Option<Record> {
        let capacity = self.layout.capacity_bytes();
        let trace = self.trace.as_mut().expect("a trace");
        match trace.reader.next_record() {
            Ok(Some(r)) => Some(r.fitted(capacity, crate::scenario::BLOCK_BYTES_MAX)),
            Ok(None) => {
                trace.exhausted = true;
                None
            }
            Err(e) => {
                trace.error = Some(e);
                trace.exhausted = true;
                self.stopped = true;
                None
            }
        }
    }

    /// Closed loop: a free slot takes the trace's next request now.
    fn trace_issue_next(&mut self) {
        if let Some(r) = self.read_record() {
            let slot = self
                .trace
                .as_mut()
                .expect("a trace")
                .free_slots
                .pop()
                .expect("a free slot");
            self.trace_issue(slot, r, self.now_ns);
        }
    }

    fn trace_issue(&mut self, slot: u32, r: Record, arrived_ns: u64) {
        self.trace.as_mut().expect("a trace").outstanding += 1;
        self.requests[slot as usize] = Request {
            offset_bytes: r.offset_bytes,
            len_bytes: r.len_bytes,
            write: r.write,
            issued_ns: arrived_ns,
            ..Request::default()
        };
        self.queue.push(
            self.now_ns + self.host_overhead_ns,
            self.host_arrival(),
            slot,
        );
    }

    /// Open loop: read ahead the next record and schedule its arrival.
    fn read_next_arrival(&mut self) {
        if let Some(r) = self.read_record() {
            let trace = self.trace.as_mut().expect("a trace");
            let at = ((r.time_ns as f64 / trace.time_scale) as u64).max(self.now_ns);
            trace.next = Some((r, at));
            self.queue.push(at, EventKind::TraceArrival, 0);
        }
    }

    pub(crate) fn trace_arrival(&mut self) {
        let trace = self.trace.as_mut().expect("a trace");
        let (r, at) = trace.next.take().expect("an arrival was read ahead");
        match trace.free_slots.pop() {
            Some(slot) => self.trace_issue(slot, r, at),
            None => trace.backlog.push_back((r, at)),
        }
        if self.trace.as_ref().expect("a trace").backlog.len() < BACKLOG_MAX {
            self.read_next_arrival();
        }
    }

    /// A traced request completed in `slot`: the slot takes the next request waiting.
    pub(crate) fn trace_slot_free(&mut self, slot: u32) {
        let trace = self.trace.as_mut().expect("a trace");
        trace.outstanding -= 1;
        trace.free_slots.push(slot);
        if trace.open_loop {
            if let Some((r, at)) = trace.backlog.pop_front() {
                let slot = trace.free_slots.pop().expect("just freed");
                let resume = trace.next.is_none() && !trace.exhausted;
                self.trace_issue(slot, r, at);
                if resume {
                    self.read_next_arrival();
                }
            }
        } else {
            self.trace_issue_next();
        }
        self.finish_trace_if_done();
    }

    fn finish_trace_if_done(&mut self) {
        let trace = self.trace.as_ref().expect("a trace");
        if trace.exhausted
            && trace.outstanding == 0
            && trace.backlog.is_empty()
            && trace.next.is_none()
        {
            self.end_ns = self.now_ns;
            self.stopped = true;
        }
    }
}
