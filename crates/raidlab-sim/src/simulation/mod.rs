//! The event loop: host jobs, the controller, the paths and the drives, wired
//! together. One `Simulation` runs one scenario to completion.
//!
//! ```text
//!  job ──(host stack)──► ControllerArrive ──(controller cpu)──► Dispatch
//!        ▲                  │ read-ahead hit                       │ member ops
//!        │                  ▼                                      ▼
//!  HostComplete ◄──(bus)── ReadHit             port queue ──► drive ──► MemberDone
//!        ▲                                                             │
//!        └──────────────── (bus, data-path caps) ◄────────────────────┘
//! ```
//!
//! With an I/O scheduler stage the host stack leads to `SchedulerInsert` instead; the
//! scheduler hands requests to the controller (merged, sorted or held back,
//! `SchedulerTimer` ending bfq's idling), and a request's `HostComplete` completes
//! every host request merged into it.
//!
//! This module holds the state and the event loop. The components hold their own state
//! and act on events as `impl Simulation` blocks in their folders: [`crate::host`]
//! (jobs, the I/O scheduler stage, trace replay), [`crate::controller`] (planning,
//! dispatch, parity, ports and drives, write-back, read-ahead, rebuild) and
//! [`crate::drive`]; `build` wires them from a scenario and `report` measures the run
//! and assembles its [`Results`]. Those handlers import this module; it imports only
//! the components' state, never a handler, so no import runs in a circle.

use crate::controller::{Controller, Rebuild};
use crate::drive::Drive;
use crate::event_queue::{EventKind, EventQueue};
use crate::host::{Job, TraceSource, Workload};
use crate::results::{MemberCounters, Results};
use crate::rng::Rng;
use crate::scenario::ReadBalance;
use crate::scheduler::{Counters, Scheduler};
use crate::watch;
use raidlab_layout::{Geometry, MemberSet, Plan, RoundRobin};

mod build;
mod report;

pub(crate) const READ: usize = 0;
pub(crate) const WRITE: usize = 1;
pub(crate) const TRIM: usize = 2;

/// What one request slot is doing: a host I/O, or the controller's own (a read-ahead
/// segment, a rebuild unit, a destage), from issue to completion.
#[derive(Clone, Copy, Default)]
pub(crate) struct Request {
    pub(crate) offset_bytes: u64,
    pub(crate) len_bytes: u64,
    pub(crate) write: bool,
    pub(crate) issued_ns: u64,
    pub(crate) pending: u32,
    /// Latest completion among its member operations (and paths).
    pub(crate) done_ns: u64,
    /// For a read-ahead hit: when the controller has processed it.
    pub(crate) hit_ready_ns: u64,
    /// Member operations and bytes it became, counted when it completes.
    pub(crate) member_ios: u32,
    pub(crate) member_bytes: u64,
    /// Writes: when the host data has crossed the bus and the controller's path.
    pub(crate) data_ready_ns: u64,
    /// The member reads of a write are done; its writes are out.
    pub(crate) writing: bool,
    /// Reads whose every byte goes to the host carry it op by op; others (degraded
    /// reads) carry the request's bytes once all reads are in.
    pub(crate) carry_per_op: bool,
    /// Earliest link start among its reads (for carrying data once at the end).
    pub(crate) link_start_ns: u64,
    /// The controller's own request (a destage): no host data crosses the bus.
    pub(crate) internal: bool,
    /// A host discard (TRIM): no data, planned by the layout's discard rules.
    pub(crate) trim: bool,
    /// Time between the posting of its next phase's member commands, one after the
    /// other (0: all at once); consumed by that phase.
    pub(crate) post_gap_ns: u64,
}

/// Counters over the measured interval.
#[derive(Default, Clone)]
pub(crate) struct Tally {
    host_ios: [u64; 2],
    host_bytes: [u64; 2],
    pub(crate) member_ios: [u64; 2],
    pub(crate) member_bytes: [u64; 2],
    pub(crate) parity_bytes: [u64; 2],
    /// Host I/Os measured and their time per stage of the path (`STAGES` order).
    staged_ios: u64,
    stage_ns: [u64; 4],
    /// Per member (grown on first use, so `Tally::default()` needs no drive count).
    members: Vec<MemberCounters>,
}

/// Where a request's time went along its path, kept beside `Request` rather than in
/// it: requests are copied whole on the hot path, and only completion reads these.
#[derive(Clone, Copy, Default)]
pub(crate) struct PathTimes {
    /// When the controller took it (the end of its host stage).
    pub(crate) controller_ns: u64,
    /// Its time in the links and in the drives so far: the sum over its phases of
    /// the member operation that finished last.
    pub(crate) link_ns: u64,
    pub(crate) drive_ns: u64,
    /// The same for the phase in flight: the operation that finishes last so far.
    pub(crate) phase_link_ns: u64,
    pub(crate) phase_drive_ns: u64,
}

#[derive(Clone, Copy, Default)]
pub(crate) struct MemberOp {
    pub(crate) request: u32,
    pub(crate) drive: u32,
    pub(crate) offset_bytes: u64,
    pub(crate) len_bytes: u64,
    pub(crate) write: bool,
    pub(crate) trim: bool,
    pub(crate) link_start_ns: u64,
    /// When it was handed to its drive (queued at the port or sent).
    pub(crate) submit_ns: u64,
}

/// One run of one scenario: the clock (integer ns), the event queue, the host's jobs,
/// the controller, the drives and the measurement, built by [`Simulation::new`] (or
/// [`Simulation::with_trace`]) and consumed by [`Simulation::run`] (or
/// [`Simulation::run_trace`]). The same scenario and seed give bit-identical results.
///
/// Every request lives in a slot fixed at construction: the host's (one per
/// outstanding I/O of every job), then read-ahead segments, the rebuild's, and
/// destages. Member operations reuse freed entries, so memory is bounded by the queue
/// depths, not by the number of I/Os.
pub struct Simulation {
    pub(crate) now_ns: u64,
    pub(crate) queue: EventQueue,
    pub(crate) rng: Rng,
    pub(crate) layout: Geometry,
    /// Members failed now (a member being rebuilt counts until its region is done).
    pub(crate) failed: MemberSet,
    pub(crate) read_balance: ReadBalance,
    pub(crate) round_robin: RoundRobin,
    /// Operations outstanding or queued per member, for least-outstanding reads.
    pub(crate) member_load: Vec<u32>,
    /// Where each member last finished an operation (end byte): md raid10's read
    /// balancing weighs it.
    pub(crate) member_head_bytes: Vec<u64>,
    pub(crate) rebuild: Option<Rebuild>,
    pub(crate) rebuild_slot: u32,
    /// The rebuild's further slots (its window below its minimum) start here, after
    /// all others (`u32::MAX`: it has none).
    pub(crate) rebuild_extra_slots: u32,
    pub(crate) controller: Controller,
    pub(crate) drives: Vec<Drive>,
    pub(crate) requests: Vec<Request>,
    /// Per request slot, where its time went (`PathTimes`).
    pub(crate) paths: Vec<PathTimes>,
    pub(crate) host_slots: u32,
    pub(crate) ops: Vec<MemberOp>,
    pub(crate) free_ops: Vec<u32>,
    /// Scratch for `issue_phase`: bytes of each extent of the phase posted so far.
    pub(crate) post_cursors: Vec<u64>,
    pub(crate) workloads: Vec<Workload>,
    pub(crate) jobs: Vec<Job>,
    /// Job of each host slot.
    pub(crate) slot_job: Vec<u32>,
    /// Workloads still measuring.
    pub(crate) active_workloads: usize,
    pub(crate) host_overhead_ns: u64,
    pub(crate) plans: Vec<Plan>,
    // Measurement.
    pub(crate) measuring: bool,
    pub(crate) stopped: bool,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) tally: Tally,
    pub(crate) busy_at_start: Vec<u64>,
    pub(crate) events: u64,
    pub(crate) seed: u64,
    pub(crate) trace: Option<TraceSource>,
    /// The block layer's I/O scheduler between the host and the array, if any; without
    /// one, requests go to the controller as they are issued.
    pub(crate) scheduler: Option<Box<Scheduler>>,
    pub(crate) scheduler_at_start: Counters,
}

impl Simulation {
    pub(crate) fn run_events(&mut self) -> Option<Results> {
        if let Some(rb) = &self.rebuild {
            if rb.started_ns > 0 {
                // A hot spare: the member fails during the run (rebuild.rs).
                self.queue.push(rb.started_ns, EventKind::MemberFails, 0);
            } else {
                self.rebuild_next();
            }
        }
        while !self.stopped {
            let Some(event) = self.queue.pop() else { break };
            debug_assert!(event.time_ns >= self.now_ns, "time never runs backwards");
            self.now_ns = event.time_ns;
            self.events += 1;
            if self.events.is_multiple_of(watch::CHECK_EVERY_EVENTS) {
                watch::checkpoint(self.progress());
            }
            match event.kind {
                EventKind::ControllerArrive => self.controller_arrive(event.target),
                EventKind::Dispatch => self.dispatch(event.target),
                EventKind::MemberDone => {
                    self.tally_member_done(event.target);
                    self.member_done(event.target)
                }
                EventKind::HostComplete => self.request_complete(event.target),
                EventKind::ReadHit => self.read_hit(event.target),
                EventKind::WritePhase => self.issue_phase(event.target, true),
                EventKind::RebuildNext => self.rebuild_next(),
                EventKind::TraceArrival => self.trace_arrival(),
                EventKind::SchedulerInsert => self.scheduler_insert(event.target),
                EventKind::SchedulerTimer => self.scheduler_timer(event.target),
                EventKind::MemberFails => self.member_fails(),
                EventKind::MemberSubmit => self.submit_to_drive(event.target),
            }
        }
        self.stopped.then(|| self.results())
    }

    /// How far the run is, in [0, 1]: the mean of its workloads' progress; `None` for a
    /// trace replay, whose length is not known until its file ends.
    fn progress(&self) -> Option<f64> {
        if self.trace.is_some() || self.workloads.is_empty() {
            return None;
        }
        let sum: f64 = self.workloads.iter().map(|w| w.progress(self.now_ns)).sum();
        Some(sum / self.workloads.len() as f64)
    }

    /// Run until every workload has completed its measurement (its I/O count or its
    /// runtime), and report the measured interval.
    pub fn run(mut self) -> Results {
        for slot in 0..self.host_slots {
            self.issue(slot);
        }
        self.run_events()
            .expect("the run ended: every workload completed its measurement")
    }
}
