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
//! This module holds the state and the event loop; each part of the model is a module
//! of `impl Simulation` blocks: `host_side` (jobs, the I/O scheduler stage),
//! `controller` (planning, dispatch, parity, ports and drives), `write_back`,
//! `read_ahead`, `rebuild`, `trace_source` and `report` (measurement and results).

use crate::cache::WriteCache;
use crate::hdd::Hdd;
use crate::host::{Job, Workload};
use crate::queue::{EventKind, EventQueue};
use crate::resource::{Path, Server};
use crate::results::Results;
use crate::rng::Rng;
use crate::scenario::{DriveSpec, Precondition, Rw, Scenario, SsdSpec, IODEPTH_MAX};
use crate::scenario::{MemberCommands, MemberDispatch, ReadBalance};
use crate::scheduler::{Counters, Scheduler};
use crate::ssd::Ssd;
use raidlab_layout::{Geometry, MemberSet, Plan, RoundRobin};
use std::collections::VecDeque;

mod controller;
mod host_side;
mod read_ahead;
mod read_balance;
mod rebuild;
mod report;
mod trace_source;
mod write_back;

use controller::{CommandSplit, Controller};
use read_ahead::ReadAhead;
use rebuild::Rebuild;
use report::Tally;
pub use report::PERCENTILES;
use trace_source::TraceSource;
use write_back::DestageEngine;

const READ: usize = 0;
const WRITE: usize = 1;
const TRIM: usize = 2;

// Drives live in one vector for the whole run and are never moved, so the size
// difference between the variants costs nothing; boxing would cost a pointer chase on
// every operation.
#[allow(clippy::large_enum_variant)]
enum DriveModel {
    Hdd(Hdd),
    Ssd(Ssd),
}

struct Drive {
    model: DriveModel,
    ncq_depth: u32,
    outstanding: u32,
    waiting: VecDeque<u32>,
    /// Commands sent at one instant form a burst (the strips of one request): when the
    /// current burst was sent, and how many commands it has.
    burst_ns: u64,
    burst_len: u32,
}

#[derive(Clone, Copy, Default)]
struct Request {
    offset_bytes: u64,
    len_bytes: u64,
    write: bool,
    issued_ns: u64,
    pending: u32,
    /// Latest completion among its member operations (and paths).
    done_ns: u64,
    /// For a read-ahead hit: when the controller has processed it.
    hit_ready_ns: u64,
    /// Member operations and bytes it became, counted when it completes.
    member_ios: u32,
    member_bytes: u64,
    /// Writes: when the host data has crossed the bus and the controller's path.
    data_ready_ns: u64,
    /// The member reads of a write are done; its writes are out.
    writing: bool,
    /// Reads whose every byte goes to the host carry it op by op; others (degraded
    /// reads) carry the request's bytes once all reads are in.
    carry_per_op: bool,
    /// Earliest link start among its reads (for carrying data once at the end).
    link_start_ns: u64,
    /// The controller's own request (a destage): no host data crosses the bus.
    internal: bool,
    /// A host discard (TRIM): no data, planned by the layout's discard rules.
    trim: bool,
    /// Time between the posting of its next phase's member commands, one after the
    /// other (0: all at once); consumed by that phase.
    post_gap_ns: u64,
}

/// Where a request's time went along its path, kept beside `Request` rather than in
/// it: requests are copied whole on the hot path, and only completion reads these.
#[derive(Clone, Copy, Default)]
struct PathTimes {
    /// When the controller took it (the end of its host stage).
    controller_ns: u64,
    /// Its time in the links and in the drives so far: the sum over its phases of
    /// the member operation that finished last.
    link_ns: u64,
    drive_ns: u64,
    /// The same for the phase in flight: the operation that finishes last so far.
    phase_link_ns: u64,
    phase_drive_ns: u64,
}

#[derive(Clone, Copy, Default)]
struct MemberOp {
    request: u32,
    drive: u32,
    offset_bytes: u64,
    len_bytes: u64,
    write: bool,
    trim: bool,
    link_start_ns: u64,
    /// When it was handed to its drive (queued at the port or sent).
    submit_ns: u64,
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
    now_ns: u64,
    queue: EventQueue,
    rng: Rng,
    layout: Geometry,
    /// Members failed now (a member being rebuilt counts until its region is done).
    failed: MemberSet,
    read_balance: ReadBalance,
    round_robin: RoundRobin,
    /// Operations outstanding or queued per member, for least-outstanding reads.
    member_load: Vec<u32>,
    /// Where each member last finished an operation (end byte): md raid10's read
    /// balancing weighs it.
    member_head_bytes: Vec<u64>,
    rebuild: Option<Rebuild>,
    rebuild_slot: u32,
    /// The rebuild's further slots (its window below its minimum) start here, after
    /// all others (`u32::MAX`: it has none).
    rebuild_extra_slots: u32,
    controller: Controller,
    drives: Vec<Drive>,
    requests: Vec<Request>,
    /// Per request slot, where its time went (`PathTimes`).
    paths: Vec<PathTimes>,
    host_slots: u32,
    ops: Vec<MemberOp>,
    free_ops: Vec<u32>,
    /// Scratch for `issue_phase`: bytes of each extent of the phase posted so far.
    post_cursors: Vec<u64>,
    workloads: Vec<Workload>,
    jobs: Vec<Job>,
    /// Job of each host slot.
    slot_job: Vec<u32>,
    /// Workloads still measuring.
    active_workloads: usize,
    host_overhead_ns: u64,
    plans: Vec<Plan>,
    // Measurement.
    measuring: bool,
    stopped: bool,
    start_ns: u64,
    end_ns: u64,
    tally: Tally,
    busy_at_start: Vec<u64>,
    events: u64,
    seed: u64,
    trace: Option<TraceSource>,
    /// The block layer's I/O scheduler between the host and the array, if any; without
    /// one, requests go to the controller as they are issued.
    scheduler: Option<Box<Scheduler>>,
    scheduler_at_start: Counters,
}

impl Simulation {
    /// Build the components of a scenario that passed [`Scenario::validate`] (it
    /// panics on an array the layout refuses). The host's deleted share of the array
    /// is discarded on the members here, untimed; measurement starts at once when no
    /// workload warms up.
    pub fn new(scenario: &Scenario) -> Self {
        let a = &scenario.array;
        let mut jobs = Vec::new();
        let workloads: Vec<Workload> = scenario
            .workload_specs()
            .into_iter()
            .enumerate()
            .map(|(i, spec)| Workload::new(i, spec, &mut jobs))
            .collect();
        let mut slot_job = Vec::new();
        for (j, job) in jobs.iter().enumerate() {
            let depth = workloads[job.workload as usize].iodepth;
            slot_job.extend(std::iter::repeat_n(j as u32, depth as usize));
        }
        let c = &a.controller;
        let layout = a.geometry().expect("validated scenario");
        let layout_full_stripe = layout.full_stripe_bytes().max(layout.stripe_unit_bytes());
        // The controller may keep fewer commands outstanding on a member than it queues.
        let member_depth = |ncq: u32| ncq.min(c.member_queue_depth.unwrap_or(u32::MAX));
        // Drives of one model are copies of one: HDDs share their table of seek times.
        let hdd = match &a.drive {
            DriveSpec::Hdd(h) => Some(Hdd::new(h, c.port_rate_bytes_per_s)),
            DriveSpec::Ssd(_) | DriveSpec::Nvme(_) => None,
        };
        let drives = (0..a.drive_count)
            .map(|i| match &a.drive {
                DriveSpec::Hdd(h) => Drive {
                    model: DriveModel::Hdd(hdd.clone().expect("built above for an HDD")),
                    ncq_depth: member_depth(h.ncq_depth),
                    outstanding: 0,
                    waiting: VecDeque::new(),
                    burst_ns: u64::MAX,
                    burst_len: 0,
                },
                DriveSpec::Ssd(s) => Drive {
                    // Each drive's past (its preconditioning) is its own: drives of one
                    // model in one array do not garbage-collect in lockstep.
                    model: DriveModel::Ssd(Ssd::new(
                        &preconditioned_for(s, scenario),
                        c.port_rate_bytes_per_s,
                        scenario.seed ^ (u64::from(i) << 32),
                    )),
                    ncq_depth: member_depth(s.ncq_depth),
                    outstanding: 0,
                    waiting: VecDeque::new(),
                    burst_ns: u64::MAX,
                    burst_len: 0,
                },
                // The SSD model's flash behind a PCIe link: full duplex, NVMe's queues.
                DriveSpec::Nvme(n) => Drive {
                    model: DriveModel::Ssd(Ssd::full_duplex(
                        &n.flash_spec(),
                        c.port_rate_bytes_per_s,
                        scenario.seed ^ (u64::from(i) << 32),
                    )),
                    ncq_depth: member_depth(n.command_slots()),
                    outstanding: 0,
                    waiting: VecDeque::new(),
                    burst_ns: u64::MAX,
                    burst_len: 0,
                },
            })
            .collect();
        let read_ahead = (c.read_ahead_bytes > 0).then(|| ReadAhead {
            segment_bytes: c.read_ahead_bytes,
            segments_max: c.read_ahead_segments as usize,
            window: VecDeque::with_capacity(c.read_ahead_segments as usize),
            free_slots: Vec::with_capacity(c.read_ahead_segments as usize),
            expect_offset: u64::MAX,
            always: c.read_ahead_always,
            within_stripe_unit: c.read_ahead_within_stripe_unit,
            window_end: 0,
            waiters: Vec::new(),
            hits: 0,
        });
        let host_slots = slot_job.len() as u32;
        let destage_slots = if c.write_back {
            c.destage_concurrency
        } else {
            0
        };
        let prefetch_slots = if read_ahead.is_some() {
            c.read_ahead_segments
        } else {
            0
        };
        let rebuild_extra = a
            .rebuild
            .as_ref()
            .map_or(0, |r| Rebuild::slots_needed(r, a) - 1);
        let extra_slots_at = host_slots + prefetch_slots + 1 + destage_slots;
        let level = layout.level();
        let strip_bytes = match c.member_commands {
            MemberCommands::Merged => u64::MAX,
            MemberCommands::PerStrip => layout.stripe_unit_bytes(),
        };
        let mut sim = Self {
            now_ns: 0,
            queue: EventQueue::with_capacity(4 * host_slots as usize + 64),
            rng: Rng::new(scenario.seed),
            failed: rebuild::failed_at_start(a),
            read_balance: c.read_balance,
            round_robin: RoundRobin::new(),
            member_load: vec![0; a.drive_count as usize],
            member_head_bytes: vec![0; a.drive_count as usize],
            rebuild: a.rebuild.as_ref().map(|r| {
                // Its first slot after the read-ahead's, the window's after all others.
                let slots = (extra_slots_at..extra_slots_at + rebuild_extra)
                    .rev()
                    .chain([host_slots + prefetch_slots])
                    .collect();
                Rebuild::new(
                    r,
                    c,
                    &a.drive,
                    layout.stripe_unit_bytes(),
                    layout.member_used_bytes(),
                    slots,
                )
            }),
            rebuild_slot: host_slots + prefetch_slots,
            rebuild_extra_slots: if rebuild_extra > 0 {
                extra_slots_at
            } else {
                u32::MAX
            },
            layout,
            controller: Controller {
                cpu: Server::default(),
                request_overhead_ns: c.request_overhead_ns,
                member_op_overhead_ns: c.member_op_overhead_ns,
                post_serially: c.member_dispatch == MemberDispatch::Serial,
                split: CommandSplit {
                    max_bytes: c.max_member_transfer_bytes,
                    strip_bytes,
                },
                read_hit_overhead_ns: c.read_hit_overhead_ns,
                parity: c.parity_rate_bytes_per_s.map(Path::new),
                bus_up: c.bus_rate_bytes_per_s.map(Path::new),
                bus_down: c.bus_rate_bytes_per_s.map(Path::new),
                read_path: c.read_rate_bytes_per_s_max.map(Path::new),
                write_path: c.write_rate_bytes_per_s_max.map(Path::new),
                uplink_up: c.uplink.as_ref().map(|u| Path::new(u.rate_bytes_per_s())),
                uplink_down: c.uplink.as_ref().map(|u| Path::new(u.rate_bytes_per_s())),
                uplink_first_member: c
                    .uplink
                    .as_ref()
                    .map_or(u32::MAX, |u| u.first_member(a.drive_count)),
                read_ahead,
                cache_overhead_ns: if c.write_back { c.cache_overhead_ns } else { 0 },
                members_take_trim: c.trim_passthrough
                    && matches!(a.drive, DriveSpec::Ssd(_) | DriveSpec::Nvme(_)),
                fastpath_overhead_ns: c.fastpath_overhead_ns.filter(|_| c.fastpath),
                // Dell PERC H710P/PERC 8 and HPE MR user guides: reads of at most a stripe
                // unit on RAID 0, 1, 5 and 6, writes only on RAID 0; never RAID 10/50/60.
                fastpath_reads: matches!(
                    level,
                    raidlab_layout::Level::Raid0
                        | raidlab_layout::Level::Raid1
                        | raidlab_layout::Level::Raid4
                        | raidlab_layout::Level::Raid5
                        | raidlab_layout::Level::Raid6
                ),
                fastpath_writes: level == raidlab_layout::Level::Raid0,
                write_cache: c.write_back.then(|| {
                    let first_slot = host_slots + prefetch_slots + 1;
                    let full_stripe = layout_full_stripe;
                    DestageEngine {
                        cache: WriteCache::new(
                            c.cache_bytes,
                            (c.cache_bytes as f64 * c.dirty_low_percent / 100.0) as u64,
                            (c.cache_bytes as f64 * c.dirty_high_percent / 100.0) as u64,
                        ),
                        free_slots: (first_slot..first_slot + destage_slots).rev().collect(),
                        first_slot,
                        waiters: VecDeque::new(),
                        max_bytes: full_stripe.max(1 << 20) / full_stripe * full_stripe,
                        align_bytes: full_stripe,
                        concurrency: destage_slots,
                        in_flight: 0,
                        in_flight_since_ns: 0,
                        in_flight_area_ns: 0,
                    }
                }),
            },
            drives,
            requests: vec![Request::default(); (extra_slots_at + rebuild_extra) as usize],
            paths: vec![PathTimes::default(); (extra_slots_at + rebuild_extra) as usize],
            host_slots,
            ops: Vec::with_capacity(host_slots as usize * 2),
            free_ops: Vec::new(),
            post_cursors: Vec::new(),
            active_workloads: workloads.len(),
            workloads,
            jobs,
            slot_job,
            host_overhead_ns: a.host.request_overhead_ns,
            plans: vec![Plan::new(); (extra_slots_at + rebuild_extra) as usize],
            measuring: false,
            stopped: false,
            start_ns: 0,
            end_ns: 0,
            tally: Tally::default(),
            busy_at_start: Vec::new(),
            events: 0,
            seed: scenario.seed,
            trace: None,
            scheduler: None,
            scheduler_at_start: Counters::default(),
        };
        if a.host.has_scheduler_stage() {
            let ncq_depth = match &a.drive {
                DriveSpec::Hdd(h) => h.ncq_depth,
                DriveSpec::Ssd(s) => s.ncq_depth,
                DriveSpec::Nvme(n) => n.command_slots(),
            };
            // The array takes as many commands as its members hold together.
            let depth = ncq_depth.saturating_mul(a.drive_count).min(IODEPTH_MAX);
            sim.scheduler = Some(Box::new(Scheduler::new(
                &a.host,
                a.drive_count,
                depth,
                host_slots as usize,
                sim.jobs.len(),
            )));
        }
        if let Some(ra) = sim.controller.read_ahead.as_mut() {
            ra.free_slots
                .extend((host_slots..host_slots + prefetch_slots).rev());
        }
        if a.deleted_percent > 0.0 {
            sim.discard_deleted(a.deleted_percent);
        }
        if !sim.any_warming_up() {
            sim.begin_measuring();
        }
        sim
    }

    fn run_events(&mut self) -> Option<Results> {
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

/// The drive as SNIA PTS preconditions it: with the workload it measures. The FTL's
/// "steady" state is the one random writes leave; a drive that only ever sees
/// sequential streams is written in address order, each overwrite freeing whole
/// blocks, which is the fresh drive's state for such streams.
fn preconditioned_for(spec: &SsdSpec, scenario: &Scenario) -> SsdSpec {
    let specs = scenario.workload_specs();
    let sequential_only = scenario.trace.is_none()
        && !specs.is_empty()
        && specs
            .iter()
            .all(|w| matches!(w.rw, Rw::Read | Rw::Write | Rw::Rw));
    let mut spec = spec.clone();
    if let Some(ftl) = spec.ftl.as_mut() {
        if sequential_only && ftl.precondition == Precondition::Steady {
            ftl.precondition = Precondition::Fob;
        }
    }
    spec
}
