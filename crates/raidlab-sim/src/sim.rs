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

use crate::cache::WriteCache;
use crate::hdd::Hdd;
use crate::histogram::Histogram;
use crate::host::{Job, Workload};
use crate::queue::{EventKind, EventQueue};
use crate::resource::{Path, Server};
use crate::results::{
    Explain, JobResults, OpStats, RebuildReport, Resource, Results, Samples, SchedulerReport,
    SATURATION_UTILISATION, STAGES,
};
use crate::rng::Rng;
use crate::scenario::ReadBalance;
use crate::scenario::{DriveSpec, Scenario, WorkloadSpec, IODEPTH_MAX, SCHEMA};
use crate::scheduler::{Counters, Scheduler};
use crate::ssd::Ssd;
use crate::trace::{Reader, Record, TraceError};
use raidlab_layout::{
    Geometry, LeastOutstanding, MemberSet, Plan, Request as PlanRequest, RoundRobin,
};
use std::collections::{BTreeMap, VecDeque};

/// fio's default percentile list.
pub const PERCENTILES: [(&str, f64); 17] = [
    ("1.000000", 1.0),
    ("5.000000", 5.0),
    ("10.000000", 10.0),
    ("20.000000", 20.0),
    ("30.000000", 30.0),
    ("40.000000", 40.0),
    ("50.000000", 50.0),
    ("60.000000", 60.0),
    ("70.000000", 70.0),
    ("80.000000", 80.0),
    ("90.000000", 90.0),
    ("95.000000", 95.0),
    ("99.000000", 99.0),
    ("99.500000", 99.5),
    ("99.900000", 99.9),
    ("99.950000", 99.95),
    ("99.990000", 99.99),
];

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

#[derive(Clone, Copy)]
struct Segment {
    start: u64,
    end: u64,
    ready: bool,
    slot: u32,
}

/// Controller read-ahead: a window of consecutive segments ahead of a sequential
/// stream, fetched by the controller itself.
struct ReadAhead {
    segment_bytes: u64,
    segments_max: usize,
    /// Segments in address order, contiguous.
    window: VecDeque<Segment>,
    free_slots: Vec<u32>,
    /// Where the next read of a sequential stream would start.
    expect_offset: u64,
    /// Fetch ahead after every read, sequential or not.
    always: bool,
    /// End of the last segment fetched.
    window_end: u64,
    waiters: Vec<u32>,
    hits: u64,
}

struct Controller {
    cpu: Server,
    request_overhead_ns: u64,
    member_op_overhead_ns: u64,
    max_member_transfer_bytes: u64,
    read_hit_overhead_ns: u64,
    parity: Option<Path>,
    bus_up: Option<Path>,
    bus_down: Option<Path>,
    read_path: Option<Path>,
    write_path: Option<Path>,
    read_ahead: Option<ReadAhead>,
    cache_overhead_ns: u64,
    write_cache: Option<DestageEngine>,
    /// Host discards reach the members (passthrough on, and they are SSDs).
    members_take_trim: bool,
    /// FastPath's per-I/O cost, when FastPath is on.
    fastpath_overhead_ns: Option<u64>,
    /// Which I/O FastPath takes on this level: reads, writes (RAID 0 only).
    fastpath_reads: bool,
    fastpath_writes: bool,
}

/// A write-back cache and the destages it has in flight.
struct DestageEngine {
    cache: WriteCache,
    /// Free destage request slots.
    free_slots: Vec<u32>,
    first_slot: u32,
    /// Host writes waiting for cache room, in arrival order.
    waiters: VecDeque<u32>,
    max_bytes: u64,
    align_bytes: u64,
    concurrency: u32,
    /// Destages in flight, and the integral of that over time (for utilisation).
    in_flight: u32,
    in_flight_since_ns: u64,
    in_flight_area_ns: u64,
}

impl DestageEngine {
    /// Account the time since the last change at the current in-flight count.
    fn account(&mut self, now_ns: u64) {
        self.in_flight_area_ns += u64::from(self.in_flight) * (now_ns - self.in_flight_since_ns);
        self.in_flight_since_ns = now_ns;
    }

    /// Busy time: in-flight destages over time, as a share of the allowed concurrency.
    fn busy_ns(&self) -> u64 {
        self.in_flight_area_ns / u64::from(self.concurrency)
    }
}

/// A background rebuild of one member, a stripe unit of member space at a time, at a
/// limited rate, competing with the workload for the same drives.
struct Rebuild {
    member: u32,
    ps_per_byte: u64,
    unit_bytes: u64,
    member_bytes: u64,
    /// Member bytes below this are rebuilt (or being rebuilt by the unit in flight).
    next_offset_bytes: u64,
    unit_bytes_now: u64,
    bytes_done: u64,
    bytes_at_start: u64,
    started_ns: u64,
    finished_ns: Option<u64>,
}

/// Member operations of a plan once split at the controller's largest transfer.
fn op_count(plan: &Plan, max_transfer_bytes: u64) -> u64 {
    plan.reads
        .iter()
        .chain(&plan.writes)
        .map(|e| e.len_bytes.div_ceil(max_transfer_bytes))
        .sum()
}

/// A block trace feeding the host instead of workload generators.
struct TraceSource {
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

/// Counters over the measured interval.
#[derive(Default, Clone)]
struct Tally {
    host_ios: [u64; 2],
    host_bytes: [u64; 2],
    member_ios: [u64; 2],
    member_bytes: [u64; 2],
    parity_bytes: [u64; 2],
    /// Host I/Os measured and their time per stage of the path (`STAGES` order).
    staged_ios: u64,
    stage_ns: [u64; 4],
}

/// One run of one scenario.
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
    rebuild: Option<Rebuild>,
    rebuild_slot: u32,
    controller: Controller,
    drives: Vec<Drive>,
    requests: Vec<Request>,
    host_slots: u32,
    ops: Vec<MemberOp>,
    free_ops: Vec<u32>,
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
    /// Build the components of a validated scenario.
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
        let drives = (0..a.drive_count)
            .map(|i| match &a.drive {
                DriveSpec::Hdd(h) => Drive {
                    model: DriveModel::Hdd(Hdd::new(h, c.port_rate_bytes_per_s)),
                    ncq_depth: h.ncq_depth,
                    outstanding: 0,
                    waiting: VecDeque::new(),
                },
                DriveSpec::Ssd(s) => Drive {
                    // Each drive's past (its preconditioning) is its own: drives of one
                    // model in one array do not garbage-collect in lockstep.
                    model: DriveModel::Ssd(Ssd::new(
                        s,
                        c.port_rate_bytes_per_s,
                        scenario.seed ^ (u64::from(i) << 32),
                    )),
                    ncq_depth: s.ncq_depth,
                    outstanding: 0,
                    waiting: VecDeque::new(),
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
        let level = layout.level();
        let mut sim = Self {
            now_ns: 0,
            queue: EventQueue::with_capacity(4 * host_slots as usize + 64),
            rng: Rng::new(scenario.seed),
            failed: MemberSet::from_members(&a.failed),
            read_balance: c.read_balance,
            round_robin: RoundRobin::new(),
            member_load: vec![0; a.drive_count as usize],
            rebuild: a.rebuild.as_ref().map(|r| Rebuild {
                member: r.member,
                ps_per_byte: crate::resource::ps_per_byte(r.rate_bytes_per_s),
                unit_bytes: layout.stripe_unit_bytes(),
                member_bytes: layout.member_used_bytes(),
                next_offset_bytes: 0,
                unit_bytes_now: 0,
                bytes_done: 0,
                bytes_at_start: 0,
                started_ns: 0,
                finished_ns: None,
            }),
            rebuild_slot: host_slots + prefetch_slots,
            layout,
            controller: Controller {
                cpu: Server::default(),
                request_overhead_ns: c.request_overhead_ns,
                member_op_overhead_ns: c.member_op_overhead_ns,
                max_member_transfer_bytes: c.max_member_transfer_bytes,
                read_hit_overhead_ns: c.read_hit_overhead_ns,
                parity: c.parity_rate_bytes_per_s.map(Path::new),
                bus_up: c.bus_rate_bytes_per_s.map(Path::new),
                bus_down: c.bus_rate_bytes_per_s.map(Path::new),
                read_path: c.read_rate_bytes_per_s_max.map(Path::new),
                write_path: c.write_rate_bytes_per_s_max.map(Path::new),
                read_ahead,
                cache_overhead_ns: if c.write_back { c.cache_overhead_ns } else { 0 },
                members_take_trim: c.trim_passthrough && matches!(a.drive, DriveSpec::Ssd(_)),
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
            requests: vec![
                Request::default();
                (host_slots + prefetch_slots + 1 + destage_slots) as usize
            ],
            host_slots,
            ops: Vec::with_capacity(host_slots as usize * 2),
            free_ops: Vec::new(),
            active_workloads: workloads.len(),
            workloads,
            jobs,
            slot_job,
            host_overhead_ns: a.host.request_overhead_ns,
            plans: vec![Plan::new(); (host_slots + prefetch_slots + 1 + destage_slots) as usize],
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

    /// Run to the end and report.
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
        replay.workload = Some(WorkloadSpec {
            rw: crate::scenario::Rw::Randrw,
            bs: vec![(512, 1)],
            rwmixread: 50,
            iodepth: iodepth.max(1),
            numjobs: 1,
            offset_bytes: 0,
            size_bytes: capacity,
            ios: u64::MAX,
            warmup_ios: 0,
            runtime_ns: None,
            distribution: Default::default(),
            name: Some("trace".into()),
            bs_write: None,
            warmup_ns: 0,
            sample_interval_ns: 500_000_000,
        });
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

    /// Run a trace replay to the end of its trace.
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

    fn run_events(&mut self) -> Option<Results> {
        if self.rebuild.is_some() {
            self.rebuild_next();
        }
        while !self.stopped {
            let Some(event) = self.queue.pop() else { break };
            debug_assert!(event.time_ns >= self.now_ns, "time never runs backwards");
            self.now_ns = event.time_ns;
            self.events += 1;
            match event.kind {
                EventKind::ControllerArrive => self.controller_arrive(event.target),
                EventKind::Dispatch => self.dispatch(event.target),
                EventKind::MemberDone => self.member_done(event.target),
                EventKind::HostComplete => self.request_complete(event.target),
                EventKind::ReadHit => self.read_hit(event.target),
                EventKind::WritePhase => self.issue_phase(event.target, true),
                EventKind::RebuildNext => self.rebuild_next(),
                EventKind::TraceArrival => self.trace_arrival(),
                EventKind::SchedulerInsert => self.scheduler_insert(event.target),
                EventKind::SchedulerTimer => self.scheduler_timer(event.target),
            }
        }
        self.stopped.then(|| self.results())
    }

    // ----- trace replay -----------------------------------------------------------

    /// Read the next record (errors end the run) fitted into the array: lengths round
    /// up to whole sectors, offsets wrap into the capacity.
    fn read_record(&mut self) -> Option<Record> {
        let capacity = self.layout.capacity_bytes();
        let trace = self.trace.as_mut().expect("a trace");
        match trace.reader.next_record() {
            Ok(Some(mut r)) => {
                r.len_bytes = r.len_bytes.div_ceil(512).max(1) * 512;
                r.len_bytes = r
                    .len_bytes
                    .min(capacity)
                    .min(crate::scenario::BLOCK_BYTES_MAX);
                let room = capacity - r.len_bytes + 1;
                r.offset_bytes = (r.offset_bytes % room) / 512 * 512;
                Some(r)
            }
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

    fn trace_arrival(&mut self) {
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
    fn trace_slot_free(&mut self, slot: u32) {
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

    /// Run to the end and report.
    pub fn run(mut self) -> Results {
        for slot in 0..self.host_slots {
            self.issue(slot);
        }
        self.run_events()
            .expect("the run ended: every workload completed its measurement")
    }

    // ----- host -------------------------------------------------------------------

    /// Job of `slot` issues its next request now.
    fn issue(&mut self, slot: u32) {
        let job = &mut self.jobs[self.slot_job[slot as usize] as usize];
        let ask = self.workloads[job.workload as usize].next(&mut self.rng, job);
        self.requests[slot as usize] = Request {
            offset_bytes: ask.offset_bytes,
            len_bytes: ask.len_bytes,
            write: ask.write,
            trim: ask.trim,
            issued_ns: self.now_ns,
            ..Request::default()
        };
        self.queue.push(
            self.now_ns + self.host_overhead_ns,
            self.host_arrival(),
            slot,
        );
    }

    /// Where an issued host request goes after the host stack: the I/O scheduler, or
    /// straight to the controller.
    #[inline]
    fn host_arrival(&self) -> EventKind {
        if self.scheduler.is_some() {
            EventKind::SchedulerInsert
        } else {
            EventKind::ControllerArrive
        }
    }

    /// Whether some workload has not finished its warm-up.
    fn any_warming_up(&self) -> bool {
        self.workloads.iter().any(|w| w.warming_up(0, self.now_ns))
    }

    /// A host request or a read-ahead segment has all its data.
    fn request_complete(&mut self, slot: u32) {
        if slot == self.rebuild_slot {
            self.rebuild_unit_done();
            return;
        }
        let r = self.requests[slot as usize];
        if self.measuring && !r.trim {
            // Member I/O is attributed to the request (or read-ahead segment) it
            // served, so the ratio is exact whatever was in flight at the window edges.
            let dir = usize::from(r.write);
            self.tally.member_ios[dir] += u64::from(r.member_ios);
            self.tally.member_bytes[dir] += r.member_bytes;
            if r.member_ios > 0 {
                self.tally.parity_bytes[dir] += self.plans[slot as usize].parity_bytes;
            }
        }
        if let Some(engine) = &self.controller.write_cache {
            if slot >= engine.first_slot {
                self.destage_done(slot);
                return;
            }
        }
        if slot >= self.host_slots {
            self.segment_ready(slot);
            return;
        }
        if self.scheduler.is_some() {
            self.scheduled_complete(slot);
            return;
        }
        self.host_done(slot);
    }

    /// Host request `slot` has completed: count it and issue the job's next request.
    fn host_done(&mut self, slot: u32) {
        let r = self.requests[slot as usize];
        if self.trace.is_some() {
            self.tally_stages(&r);
            let latency_ns = self.now_ns - r.issued_ns;
            self.workloads[0].record(
                usize::from(r.write),
                r.len_bytes,
                latency_ns,
                self.now_ns - self.start_ns,
            );
            self.trace_slot_free(slot);
            return;
        }
        let w = self.jobs[self.slot_job[slot as usize] as usize].workload as usize;
        self.workloads[w].completed += 1;
        if self.measuring {
            let latency_ns = self.now_ns - r.issued_ns;
            let since_start_ns = self.now_ns - self.start_ns;
            if self.workloads[w].stopped {
                return;
            }
            self.tally_stages(&r);
            let workload = &mut self.workloads[w];
            let dir = if r.trim { TRIM } else { usize::from(r.write) };
            if workload.record(dir, r.len_bytes, latency_ns, since_start_ns) {
                workload.stopped = true;
                workload.end_ns = self.now_ns;
                self.active_workloads -= 1;
                if self.active_workloads == 0 {
                    self.end_ns = self.now_ns;
                    self.stopped = true;
                }
                return;
            }
        } else if !self.any_warming_up() {
            self.begin_measuring();
        }
        self.issue(slot);
    }

    // ----- host I/O scheduler ------------------------------------------------------

    /// A host request reaches the I/O scheduler.
    fn scheduler_insert(&mut self, slot: u32) {
        let r = self.requests[slot as usize];
        // One process per fio job; a trace is one process.
        let process = if self.trace.is_some() {
            0
        } else {
            self.slot_job[slot as usize]
        };
        let now = self.now_ns;
        self.scheduler.as_mut().expect("a scheduler stage").insert(
            slot,
            r.offset_bytes,
            r.len_bytes,
            r.write,
            r.trim,
            process,
            now,
        );
        self.scheduler_pump();
    }

    fn scheduler_timer(&mut self, generation: u32) {
        self.scheduler
            .as_mut()
            .expect("a scheduler stage")
            .timer_fired(generation);
        self.scheduler_pump();
    }

    /// Send the device what the scheduler releases now, and arm its idle timer. A
    /// released request reaches the controller at once (the controller only schedules
    /// events, so it never calls back into the scheduler).
    fn scheduler_pump(&mut self) {
        let now = self.now_ns;
        loop {
            let sched = self.scheduler.as_mut().expect("a scheduler stage");
            let Some((lead, offset_bytes, len_bytes)) = sched.dispatch(now) else {
                break;
            };
            let r = &mut self.requests[lead as usize];
            r.offset_bytes = offset_bytes;
            r.len_bytes = len_bytes;
            self.controller_arrive(lead);
        }
        let sched = self.scheduler.as_mut().expect("a scheduler stage");
        if let Some((at, generation)) = sched.take_timer() {
            self.queue.push(at, EventKind::SchedulerTimer, generation);
        }
        sched.settle(now);
    }

    /// A request the scheduler sent completed: every host request merged into it
    /// completes, each with its own extent and latency.
    fn scheduled_complete(&mut self, lead: u32) {
        let sched = self.scheduler.as_mut().expect("a scheduler stage");
        let mut slot = Some(sched.complete(lead));
        // Merged host I/Os went down the path inside the lead's request.
        let path = self.requests[lead as usize];
        while let Some(s) = slot {
            let sched = self.scheduler.as_ref().expect("a scheduler stage");
            slot = sched.next_in_request(s);
            let (offset_bytes, len_bytes) = sched.own_extent(s);
            let r = &mut self.requests[s as usize];
            r.offset_bytes = offset_bytes;
            r.len_bytes = len_bytes;
            r.controller_ns = path.controller_ns;
            r.link_ns = path.link_ns;
            r.drive_ns = path.drive_ns;
            self.host_done(s);
            if self.stopped {
                return;
            }
        }
        self.scheduler_pump();
    }

    // ----- controller -------------------------------------------------------------

    /// Plan request `slot` into its member reads and writes; returns the member
    /// operation count the controller pays for.
    fn plan_request(&mut self, slot: u32) -> u64 {
        let r = self.requests[slot as usize];
        let failed = self.failed_for(r.offset_bytes);
        let request = PlanRequest {
            offset_bytes: r.offset_bytes,
            len_bytes: r.len_bytes,
            write: r.write,
        };
        let plan = &mut self.plans[slot as usize];
        let planned = match self.read_balance {
            ReadBalance::RoundRobin => {
                self.layout
                    .plan(request, &failed, &mut self.round_robin, plan)
            }
            ReadBalance::LeastOutstanding => self.layout.plan(
                request,
                &failed,
                &mut LeastOutstanding::new(&self.member_load),
                plan,
            ),
        };
        planned.expect("a validated array tolerates its failures");
        let carry_per_op = !r.write && plan.read_bytes() == r.len_bytes;
        self.requests[slot as usize].carry_per_op = carry_per_op;
        op_count(plan, self.controller.max_member_transfer_bytes)
    }

    /// The failed set a request at `offset_bytes` sees: a member being rebuilt is
    /// whole again below the rebuild's frontier.
    fn failed_for(&self, offset_bytes: u64) -> MemberSet {
        let mut failed = self.failed;
        if let Some(rb) = &self.rebuild {
            if rb.finished_ns.is_some()
                || self.layout.locate(offset_bytes).offset_bytes < rb.next_offset_bytes
            {
                failed.remove(rb.member);
            }
        }
        failed
    }

    fn controller_arrive(&mut self, slot: u32) {
        self.requests[slot as usize].controller_ns = self.now_ns;
        let r = self.requests[slot as usize];
        if r.trim {
            self.trim_arrive(slot);
            return;
        }
        if self.controller.write_cache.is_some() && self.cache_serves(slot) {
            return;
        }
        if !r.write && self.controller.read_ahead.is_some() && self.read_ahead_serves(slot) {
            return;
        }
        let ops = self.plan_request(slot);
        let cost = match self.fastpath_cost(&r, ops) {
            Some(cost) => cost,
            None => {
                self.controller.request_overhead_ns
                    + self.controller.cache_overhead_ns
                    + ops * self.controller.member_op_overhead_ns
            }
        };
        let (_, ready) = self.controller.cpu.reserve(self.now_ns, cost);
        self.queue.push(ready, EventKind::Dispatch, slot);
    }

    /// The controller's cost for `r` (planned into `ops` member operations) when
    /// FastPath takes it: small reads (and RAID 0 writes) of an optimal array go down
    /// the cut-through path at its own per-operation cost. None: the normal path.
    fn fastpath_cost(&self, r: &Request, ops: u64) -> Option<u64> {
        let per_op = self.controller.fastpath_overhead_ns?;
        let eligible = if r.write {
            self.controller.fastpath_writes
        } else {
            self.controller.fastpath_reads
        };
        (eligible
            && r.len_bytes <= self.layout.stripe_unit_bytes()
            && self.failed.is_empty()
            && self.rebuild.is_none())
        .then_some(per_op * ops)
    }

    /// A host discard: the controller passes it on to the members through the layout,
    /// or (no passthrough) completes it itself, and the drives never learn of it.
    fn trim_arrive(&mut self, slot: u32) {
        let r = self.requests[slot as usize];
        // A controller that passes TRIM on knows the data is dead: dirty data it still
        // holds for the range is dropped rather than destaged.
        if self.controller.members_take_trim && self.controller.write_cache.is_some() {
            self.discard_cached(r.offset_bytes, r.offset_bytes + r.len_bytes);
        }
        let mut cost = self.controller.request_overhead_ns;
        let mut ops = 0;
        if self.controller.members_take_trim {
            let failed = self.failed_for(r.offset_bytes);
            let plan = &mut self.plans[slot as usize];
            self.layout
                .trim_plan(
                    PlanRequest {
                        offset_bytes: r.offset_bytes,
                        len_bytes: r.len_bytes,
                        write: false,
                    },
                    &failed,
                    plan,
                )
                .expect("a validated array tolerates its failures");
            ops = plan.writes.len() as u64;
            cost += ops * self.controller.member_op_overhead_ns;
        }
        self.requests[slot as usize].carry_per_op = false;
        let (_, ready) = self.controller.cpu.reserve(self.now_ns, cost);
        let next = if ops == 0 {
            EventKind::HostComplete
        } else {
            EventKind::Dispatch
        };
        self.queue.push(ready, next, slot);
    }

    /// The host deleted the last `percent` of the array before the run: its discard
    /// goes through the same layout rules as a runtime TRIM, untimed, when the
    /// controller passes discards on.
    fn discard_deleted(&mut self, percent: f64) {
        if !self.controller.members_take_trim {
            return;
        }
        let capacity = self.layout.capacity_bytes();
        let start = ((capacity as f64 * (1.0 - percent / 100.0)) as u64).div_ceil(512) * 512;
        // Planned in pieces so a parity level's per-stripe plan stays small.
        let piece = self
            .layout
            .full_stripe_bytes()
            .max(self.layout.stripe_unit_bytes())
            * 4096;
        let failed = self.failed;
        let mut plan = Plan::new();
        let mut at = start;
        while at < capacity {
            let len = piece.min(capacity - at);
            let req = PlanRequest {
                offset_bytes: at,
                len_bytes: len,
                write: false,
            };
            self.layout
                .trim_plan(req, &failed, &mut plan)
                .expect("a validated array tolerates its failures");
            for e in &plan.writes {
                if let DriveModel::Ssd(ssd) = &mut self.drives[e.member as usize].model {
                    ssd.discard(e.offset_bytes, e.len_bytes);
                }
            }
            at += len;
        }
    }

    /// Send a planned request's first phase to the drives: its member reads, or, with
    /// none, its parity work and writes.
    fn dispatch(&mut self, slot: u32) {
        let r = self.requests[slot as usize];
        {
            let req = &mut self.requests[slot as usize];
            req.done_ns = self.now_ns;
            req.link_start_ns = u64::MAX;
            req.member_ios = 0;
            req.member_bytes = 0;
            req.writing = false;
            req.link_ns = 0;
            req.drive_ns = 0;
            req.phase_link_ns = 0;
            req.phase_drive_ns = 0;
        }
        if r.write && !r.internal {
            let gate = self.host_data_down(r.len_bytes);
            self.requests[slot as usize].data_ready_ns = gate;
        }
        if self.plans[slot as usize].reads.is_empty() {
            self.start_writes(slot);
        } else {
            self.issue_phase(slot, false);
        }
    }

    /// Compute parity (if any) and then send the writes.
    fn start_writes(&mut self, slot: u32) {
        self.requests[slot as usize].writing = true;
        let now = self.now_ns;
        let ready = self.compute_parity(slot, now);
        if ready > now {
            self.queue.push(ready, EventKind::WritePhase, slot);
        } else {
            self.issue_phase(slot, true);
        }
    }

    /// Run a plan's parity or reconstruction work on the controller's parity engine
    /// (hardware XOR, or the host CPU for md), charged per byte it consumes.
    fn compute_parity(&mut self, slot: u32, from_ns: u64) -> u64 {
        let source_bytes = self.plans[slot as usize].parity_source_bytes;
        match self.controller.parity.as_mut() {
            Some(engine) if source_bytes > 0 => engine.carry(source_bytes, from_ns, from_ns),
            _ => from_ns,
        }
    }

    /// Send one phase's member operations, split at the controller's largest transfer.
    fn issue_phase(&mut self, slot: u32, write: bool) {
        let trim = self.requests[slot as usize].trim;
        // A discard carries no data: one command per member range, never split.
        let max = if trim {
            u64::MAX
        } else {
            self.controller.max_member_transfer_bytes
        };
        let mut pending = 0;
        let mut bytes = 0;
        let count = {
            let plan = &self.plans[slot as usize];
            if write {
                plan.writes.len()
            } else {
                plan.reads.len()
            }
        };
        for i in 0..count {
            let plan = &self.plans[slot as usize];
            let e = if write { plan.writes[i] } else { plan.reads[i] };
            let mut at = 0;
            while at < e.len_bytes {
                let len = (e.len_bytes - at).min(max);
                let op = MemberOp {
                    request: slot,
                    drive: e.member,
                    offset_bytes: e.offset_bytes + at,
                    len_bytes: len,
                    write: write && !trim,
                    trim,
                    link_start_ns: 0,
                    submit_ns: self.now_ns,
                };
                let id = match self.free_ops.pop() {
                    Some(id) => {
                        self.ops[id as usize] = op;
                        id
                    }
                    None => {
                        self.ops.push(op);
                        (self.ops.len() - 1) as u32
                    }
                };
                pending += 1;
                bytes += len;
                self.submit_to_drive(id);
                at += len;
            }
        }
        debug_assert!(pending > 0, "a phase has at least one member operation");
        let req = &mut self.requests[slot as usize];
        req.pending = pending;
        req.member_ios += pending;
        req.member_bytes += bytes;
    }

    /// Host write data crossing the bus and the controller's write path.
    fn host_data_down(&mut self, len: u64) -> u64 {
        let now = self.now_ns;
        let mut t = now;
        if let Some(bus) = self.controller.bus_down.as_mut() {
            t = t.max(bus.carry(len, now, now));
        }
        if let Some(path) = self.controller.write_path.as_mut() {
            t = t.max(path.carry(len, now, now));
        }
        t
    }

    /// Read data crossing the controller's read path and the bus to the host, overlapping
    /// the transfer that fed it.
    fn host_data_up(&mut self, len: u64, feed_start_ns: u64, feed_end_ns: u64) -> u64 {
        let mut t = feed_end_ns;
        if let Some(path) = self.controller.read_path.as_mut() {
            t = t.max(path.carry(len, feed_start_ns, feed_end_ns));
        }
        if let Some(bus) = self.controller.bus_up.as_mut() {
            t = t.max(bus.carry(len, feed_start_ns, feed_end_ns));
        }
        t
    }

    /// A new member operation for its drive: counted in the member's load until done.
    fn submit_to_drive(&mut self, id: u32) {
        let drive = self.ops[id as usize].drive;
        self.member_load[drive as usize] += 1;
        self.send_to_drive(id);
    }

    /// Hand an operation to its drive, or queue it at the port while the drive's
    /// command queue is full.
    fn send_to_drive(&mut self, id: u32) {
        let op = self.ops[id as usize];
        let drive = &mut self.drives[op.drive as usize];
        if drive.outstanding >= drive.ncq_depth {
            drive.waiting.push_back(id);
            return;
        }
        let queued = drive.outstanding > 0;
        drive.outstanding += 1;
        let now = self.now_ns;
        match &mut drive.model {
            DriveModel::Ssd(ssd) => {
                let (link_start, done) = if op.trim {
                    let done = ssd.trim(now, op.offset_bytes, op.len_bytes, queued);
                    (done, done)
                } else if op.write {
                    ssd.write(now, op.offset_bytes, op.len_bytes, queued)
                } else {
                    ssd.read(now, op.offset_bytes, op.len_bytes, queued)
                };
                self.ops[id as usize].link_start_ns = link_start;
                self.queue.push(done, EventKind::MemberDone, id);
            }
            DriveModel::Hdd(hdd) => {
                if let Some(s) = hdd.submit(now, id, op.offset_bytes, op.len_bytes, op.write) {
                    self.ops[s.op as usize].link_start_ns = s.link_start_ns;
                    self.queue.push(s.done_ns, EventKind::MemberDone, s.op);
                }
            }
        }
    }

    fn member_done(&mut self, id: u32) {
        let op = self.ops[id as usize];
        let now = self.now_ns;
        self.member_load[op.drive as usize] -= 1;
        let drive = &mut self.drives[op.drive as usize];
        drive.outstanding -= 1;
        if let DriveModel::Hdd(hdd) = &mut drive.model {
            if let Some(s) = hdd.complete(now) {
                self.ops[s.op as usize].link_start_ns = s.link_start_ns;
                self.queue.push(s.done_ns, EventKind::MemberDone, s.op);
            }
        }
        if let Some(next) = self.drives[op.drive as usize].waiting.pop_front() {
            self.send_to_drive(next);
        }
        self.free_ops.push(id);
        let req = &mut self.requests[op.request as usize];
        let done = if op.write {
            now.max(req.data_ready_ns)
        } else if req.carry_per_op {
            let link_start = op.link_start_ns.min(now);
            self.host_data_up(op.len_bytes, link_start, now)
        } else {
            req.link_start_ns = req.link_start_ns.min(op.link_start_ns);
            now
        };
        let (link_ns, drive_ns) = self.op_stages(&op, now, done);
        let req = &mut self.requests[op.request as usize];
        if done >= req.done_ns {
            req.phase_link_ns = link_ns;
            req.phase_drive_ns = drive_ns;
        }
        req.done_ns = req.done_ns.max(done);
        req.pending -= 1;
        if req.pending > 0 {
            return;
        }
        req.link_ns += req.phase_link_ns;
        req.drive_ns += req.phase_drive_ns;
        req.phase_link_ns = 0;
        req.phase_drive_ns = 0;
        let slot = op.request;
        let r = *req;
        if !r.writing && !self.plans[slot as usize].writes.is_empty() {
            // All reads of a write are in: parity, then the writes.
            self.start_writes(slot);
            return;
        }
        let t = if !r.write && !r.trim && !r.carry_per_op && slot != self.rebuild_slot {
            // Degraded reads: the lost chunk is reconstructed from the survivors, then
            // the host gets its bytes.
            let rebuilt = self.compute_parity(slot, r.done_ns);
            self.host_data_up(r.len_bytes, r.link_start_ns.min(rebuilt), rebuilt)
        } else {
            r.done_ns
        };
        self.queue.push(t, EventKind::HostComplete, slot);
    }

    /// Where member operation `op`'s time went, done at the drive at `now_ns` and
    /// for its request at `done_ns`: (link, drive). The link is its transfer on the
    /// drive's link plus the wait for the controller's paths and bus after it; the
    /// drive is the rest of its time since it was handed over.
    fn op_stages(&self, op: &MemberOp, now_ns: u64, done_ns: u64) -> (u64, u64) {
        let transfer_ns = if op.trim {
            0
        } else {
            match &self.drives[op.drive as usize].model {
                DriveModel::Hdd(hdd) => hdd.link_transfer_ns(op.len_bytes),
                DriveModel::Ssd(ssd) => ssd.link_transfer_ns(op.len_bytes),
            }
        };
        let at_drive_ns = now_ns - op.submit_ns;
        let transfer_ns = transfer_ns.min(at_drive_ns);
        debug_assert!(
            done_ns >= now_ns,
            "a request completes after its member operation"
        );
        (transfer_ns + (done_ns - now_ns), at_drive_ns - transfer_ns)
    }

    /// Count a measured host I/O's time per stage of its path (`STAGES`).
    fn tally_stages(&mut self, r: &Request) {
        let total_ns = self.now_ns - r.issued_ns;
        let host_ns = r.controller_ns.saturating_sub(r.issued_ns).min(total_ns);
        let link_ns = r.link_ns.min(total_ns - host_ns);
        let drive_ns = r.drive_ns.min(total_ns - host_ns - link_ns);
        let controller_ns = total_ns - host_ns - link_ns - drive_ns;
        self.tally.staged_ios += 1;
        for (sum, ns) in
            self.tally
                .stage_ns
                .iter_mut()
                .zip([host_ns, controller_ns, link_ns, drive_ns])
        {
            *sum += ns;
        }
    }

    // ----- controller write-back cache ---------------------------------------------

    /// Writes into the cache (acknowledged once there), reads of dirty data from it.
    /// Returns whether the cache took care of the request.
    fn cache_serves(&mut self, slot: u32) -> bool {
        let r = self.requests[slot as usize];
        let end = r.offset_bytes + r.len_bytes;
        let engine = self.controller.write_cache.as_ref().expect("a write cache");
        if !r.write && !engine.cache.holds(r.offset_bytes, end) {
            return false;
        }
        let cost = self.controller.request_overhead_ns + self.controller.cache_overhead_ns;
        let (_, ready) = self.controller.cpu.reserve(self.now_ns, cost);
        if !r.write {
            let t = match self.controller.bus_up.as_mut() {
                Some(bus) => bus.carry(r.len_bytes, ready, ready),
                None => ready,
            };
            self.queue.push(t, EventKind::HostComplete, slot);
            return true;
        }
        let in_cache = self.host_data_down(r.len_bytes).max(ready);
        self.requests[slot as usize].done_ns = in_cache;
        let engine = self.controller.write_cache.as_mut().expect("a write cache");
        if engine.waiters.is_empty() && engine.cache.has_room(r.len_bytes) {
            engine.cache.insert(r.offset_bytes, r.len_bytes);
            self.queue.push(in_cache, EventKind::HostComplete, slot);
        } else {
            engine.waiters.push_back(slot);
        }
        self.pump_destage();
        true
    }

    /// Start destages while there is dirty data above the low mark and a free slot.
    fn pump_destage(&mut self) {
        loop {
            let engine = self.controller.write_cache.as_mut().expect("a write cache");
            let Some(&slot) = engine.free_slots.last() else {
                return;
            };
            let Some((offset, len)) = engine
                .cache
                .take_destage(engine.max_bytes, engine.align_bytes)
            else {
                return;
            };
            engine.free_slots.pop();
            engine.account(self.now_ns);
            engine.in_flight += 1;
            self.requests[slot as usize] = Request {
                offset_bytes: offset,
                len_bytes: len,
                write: true,
                internal: true,
                issued_ns: self.now_ns,
                ..Request::default()
            };
            let ops = self.plan_request(slot);
            let cost = ops * self.controller.member_op_overhead_ns;
            let (_, ready) = self.controller.cpu.reserve(self.now_ns, cost);
            self.queue.push(ready, EventKind::Dispatch, slot);
        }
    }

    /// A destage reached the members: its room goes to waiting writes, then more destage.
    fn destage_done(&mut self, slot: u32) {
        let len = self.requests[slot as usize].len_bytes;
        let now = self.now_ns;
        let engine = self.controller.write_cache.as_mut().expect("a write cache");
        engine.account(now);
        engine.in_flight -= 1;
        engine.cache.destaged(len);
        engine.free_slots.push(slot);
        self.admit_waiters();
        self.pump_destage();
    }

    /// A TRIM of cached data: the dirty bytes it covers are dropped, not destaged, and
    /// the room they held goes to waiting writes.
    fn discard_cached(&mut self, start: u64, end: u64) {
        let engine = self.controller.write_cache.as_mut().expect("a write cache");
        if engine.cache.discard(start, end) > 0 {
            self.admit_waiters();
        }
    }

    /// Writes waiting for cache room go in, in arrival order, while they fit.
    fn admit_waiters(&mut self) {
        let now = self.now_ns;
        let engine = self.controller.write_cache.as_mut().expect("a write cache");
        while let Some(&waiter) = engine.waiters.front() {
            let r = self.requests[waiter as usize];
            if !engine.cache.has_room(r.len_bytes) {
                break;
            }
            engine.waiters.pop_front();
            engine.cache.insert(r.offset_bytes, r.len_bytes);
            self.queue
                .push(now.max(r.done_ns), EventKind::HostComplete, waiter);
        }
    }

    // ----- controller read-ahead --------------------------------------------------

    /// Serve a read from the read-ahead window if it can, and keep the window ahead of
    /// a sequential stream. Returns whether the read was taken care of.
    ///
    /// The window holds segments fetched ahead of the furthest byte the host has asked
    /// for; a segment is at least the read-ahead size and at least the stream's request
    /// size, so large sequential reads are read ahead too (as Intel RST does).
    fn read_ahead_serves(&mut self, slot: u32) -> bool {
        let r = self.requests[slot as usize];
        let end = r.offset_bytes + r.len_bytes;
        let ra = self
            .controller
            .read_ahead
            .as_mut()
            .expect("read-ahead configured");
        let sequential = r.offset_bytes == ra.expect_offset;
        ra.expect_offset = end;
        if ra.covers(r.offset_bytes, end) {
            ra.hits += 1;
            let ready_now = ra.ready_for(r.offset_bytes, end);
            if !ready_now {
                ra.waiters.push(slot);
            }
            let (_, ready) = self
                .controller
                .cpu
                .reserve(self.now_ns, self.controller.read_hit_overhead_ns);
            self.requests[slot as usize].hit_ready_ns = ready;
            if ready_now {
                self.queue.push(ready, EventKind::ReadHit, slot);
            }
            self.top_up_read_ahead(end, r.len_bytes);
            return true;
        }
        if sequential {
            // The stream outran the window: this read goes to the drives and the window
            // continues beyond it.
            ra.window_end = ra.window_end.max(end);
            self.top_up_read_ahead(end, r.len_bytes);
        } else if ra.always {
            // "Always" reads ahead of a random read too: the fetch is usually wasted.
            self.clear_read_ahead();
            self.controller.read_ahead.as_mut().expect("ra").window_end = end;
            self.top_up_read_ahead(end, r.len_bytes);
        } else {
            self.clear_read_ahead();
            self.controller.read_ahead.as_mut().expect("ra").window_end = end;
        }
        false
    }

    /// Drop the window; reads waiting on it go the normal way.
    fn clear_read_ahead(&mut self) {
        let ra = self
            .controller
            .read_ahead
            .as_mut()
            .expect("read-ahead configured");
        while let Some(s) = ra.window.pop_front() {
            if s.ready {
                ra.free_slots.push(s.slot);
            }
            // In-flight segments free their slot when they complete.
        }
        let waiters = std::mem::take(&mut ra.waiters);
        for slot in waiters {
            let ops = self.plan_request(slot);
            let cost =
                self.controller.request_overhead_ns + ops * self.controller.member_op_overhead_ns;
            let (_, ready) = self.controller.cpu.reserve(self.now_ns, cost);
            self.queue.push(ready, EventKind::Dispatch, slot);
        }
    }

    /// Release consumed segments and fetch new ones up to the window size.
    fn top_up_read_ahead(&mut self, consumed_end: u64, request_bytes: u64) {
        let capacity = self.layout.capacity_bytes();
        loop {
            let ra = self
                .controller
                .read_ahead
                .as_mut()
                .expect("read-ahead configured");
            while ra
                .window
                .front()
                .is_some_and(|s| s.ready && s.end <= consumed_end)
            {
                let s = ra.window.pop_front().expect("front exists");
                ra.free_slots.push(s.slot);
            }
            if ra.window.len() >= ra.segments_max || ra.window_end >= capacity {
                return;
            }
            let Some(slot) = ra.free_slots.pop() else {
                return;
            };
            let start = ra.window_end;
            let end = (start + ra.segment_bytes.max(request_bytes)).min(capacity);
            ra.window.push_back(Segment {
                start,
                end,
                ready: false,
                slot,
            });
            ra.window_end = end;
            self.requests[slot as usize] = Request {
                offset_bytes: start,
                len_bytes: end - start,
                write: false,
                issued_ns: self.now_ns,
                ..Request::default()
            };
            let ops = self.plan_request(slot);
            let (_, ready) = self
                .controller
                .cpu
                .reserve(self.now_ns, ops * self.controller.member_op_overhead_ns);
            self.queue.push(ready, EventKind::Dispatch, slot);
        }
    }

    /// A read-ahead segment has arrived: serve the reads waiting for it.
    fn segment_ready(&mut self, slot: u32) {
        let now = self.now_ns;
        let ra = self
            .controller
            .read_ahead
            .as_mut()
            .expect("read-ahead configured");
        match ra.window.iter_mut().find(|s| s.slot == slot) {
            Some(s) => s.ready = true,
            None => ra.free_slots.push(slot),
        }
        let mut i = 0;
        while i < ra.waiters.len() {
            let w = ra.waiters[i];
            let r = self.requests[w as usize];
            if ra.ready_for(r.offset_bytes, r.offset_bytes + r.len_bytes) {
                ra.waiters.swap_remove(i);
                self.queue
                    .push(now.max(r.hit_ready_ns), EventKind::ReadHit, w);
            } else {
                i += 1;
            }
        }
    }

    /// A read served from the read-ahead buffer crosses the bus to the host.
    fn read_hit(&mut self, slot: u32) {
        let len = self.requests[slot as usize].len_bytes;
        let now = self.now_ns;
        let t = match self.controller.bus_up.as_mut() {
            Some(bus) => bus.carry(len, now, now),
            None => now,
        };
        self.queue.push(t, EventKind::HostComplete, slot);
    }

    // ----- rebuild ----------------------------------------------------------------

    /// Plan and send the next rebuild unit, or wait until the rate limit allows it.
    fn rebuild_next(&mut self) {
        let now = self.now_ns;
        let slot = self.rebuild_slot;
        loop {
            let rb = self.rebuild.as_mut().expect("a rebuild runs");
            if rb.next_offset_bytes >= rb.member_bytes {
                rb.finished_ns = Some(now);
                self.failed.remove(rb.member);
                return;
            }
            // The rate limit: unit k may start once k units' worth of time has passed.
            let due = rb.started_ns + (rb.bytes_done * rb.ps_per_byte) / 1000;
            if due > now {
                self.queue.push(due, EventKind::RebuildNext, 0);
                return;
            }
            let offset = rb.next_offset_bytes;
            let len = rb.unit_bytes.min(rb.member_bytes - offset);
            let member = rb.member;
            rb.unit_bytes_now = len;
            rb.next_offset_bytes = offset + len;
            let failed = self.failed;
            let plan = &mut self.plans[slot as usize];
            let planned = match self.read_balance {
                ReadBalance::RoundRobin => self.layout.rebuild_plan(
                    member,
                    offset,
                    len,
                    &failed,
                    &mut self.round_robin,
                    plan,
                ),
                ReadBalance::LeastOutstanding => self.layout.rebuild_plan(
                    member,
                    offset,
                    len,
                    &failed,
                    &mut LeastOutstanding::new(&self.member_load),
                    plan,
                ),
            };
            planned.expect("a validated rebuild has survivors to read");
            if plan.writes.is_empty() {
                // Space the member does not use (RAID 10 tails): nothing to copy.
                let rb = self.rebuild.as_mut().expect("a rebuild runs");
                rb.bytes_done += len;
                continue;
            }
            let ops = op_count(plan, self.controller.max_member_transfer_bytes);
            self.requests[slot as usize] = Request {
                offset_bytes: offset,
                len_bytes: len,
                issued_ns: now,
                ..Request::default()
            };
            let (_, ready) = self
                .controller
                .cpu
                .reserve(now, ops * self.controller.member_op_overhead_ns);
            self.queue.push(ready, EventKind::Dispatch, slot);
            return;
        }
    }

    fn rebuild_unit_done(&mut self) {
        let rb = self.rebuild.as_mut().expect("a rebuild runs");
        rb.bytes_done += rb.unit_bytes_now;
        self.rebuild_next();
    }

    // ----- measurement ------------------------------------------------------------

    /// Every resource with its kind, the units its busy time is spread over, and its
    /// busy time so far. Names and busy times come from one place so they stay paired.
    fn resources_now(&self) -> Vec<(String, &'static str, u64, u64)> {
        let c = &self.controller;
        let mut v = vec![(
            "controller.cpu".to_string(),
            "controller",
            1,
            c.cpu.busy_ns(),
        )];
        for (name, path) in [
            ("controller.parity", &c.parity),
            ("bus.up", &c.bus_up),
            ("bus.down", &c.bus_down),
            ("controller.read_path", &c.read_path),
            ("controller.write_path", &c.write_path),
        ] {
            if let Some(path) = path {
                v.push((name.to_string(), "path", 1, path.busy_ns()));
            }
        }
        if let Some(engine) = &c.write_cache {
            // In-flight time up to now, without disturbing the engine's own accounting.
            let pending = u64::from(engine.in_flight) * (self.now_ns - engine.in_flight_since_ns)
                / u64::from(engine.concurrency);
            v.push((
                "controller.destage".to_string(),
                "controller",
                1,
                engine.busy_ns() + pending,
            ));
        }
        for (i, d) in self.drives.iter().enumerate() {
            match &d.model {
                DriveModel::Ssd(ssd) => {
                    let (dies, channels) = ssd.units();
                    let [firmware, link, flash, channel] = ssd.busy_ns();
                    v.push((format!("drive{i}.firmware"), "drive", 1, firmware));
                    v.push((format!("drive{i}.link"), "drive", 1, link));
                    v.push((format!("drive{i}.flash"), "drive", dies as u64, flash));
                    v.push((
                        format!("drive{i}.channels"),
                        "drive",
                        channels as u64,
                        channel,
                    ));
                }
                DriveModel::Hdd(hdd) => {
                    v.push((format!("drive{i}.mechanism"), "drive", 1, hdd.busy_ns()))
                }
            }
        }
        if let Some(sched) = &self.scheduler {
            // Busy while requests wait in the scheduler although the device has room:
            // bfq serving one process alone or idling for it.
            v.push((
                "host.scheduler".to_string(),
                "host",
                1,
                sched.withheld_ns(self.now_ns),
            ));
        }
        v
    }

    fn busy_snapshot(&self) -> Vec<u64> {
        self.resources_now().into_iter().map(|r| r.3).collect()
    }

    fn begin_measuring(&mut self) {
        self.measuring = true;
        self.start_ns = self.now_ns;
        self.busy_at_start = self.busy_snapshot();
        self.tally = Tally::default();
        if let Some(rb) = self.rebuild.as_mut() {
            rb.bytes_at_start = rb.bytes_done;
        }
        if let Some(sched) = &self.scheduler {
            self.scheduler_at_start = sched.counters();
        }
        for d in &mut self.drives {
            if let DriveModel::Ssd(ssd) = &mut d.model {
                ssd.reset_write_amplification();
            }
        }
    }

    fn results(&self) -> Results {
        let elapsed = (self.end_ns - self.start_ns).max(1);
        let secs = elapsed as f64 / 1e9;
        let mut ops = BTreeMap::new();
        let mut member_ios = BTreeMap::new();
        let mut member_bytes = BTreeMap::new();
        let mut parity_bytes = BTreeMap::new();
        // Host totals: every workload's figures together.
        let mut hist = [Histogram::new(), Histogram::new()];
        let mut t = self.tally.clone();
        for w in &self.workloads {
            for dir in [READ, WRITE] {
                hist[dir].merge(&w.hist[dir]);
                t.host_ios[dir] += w.ios_done[dir];
                t.host_bytes[dir] += w.bytes_done[dir];
            }
        }
        for (dir, name) in [(READ, "read"), (WRITE, "write")] {
            let h = &hist[dir];
            if h.count() == 0 {
                continue;
            }
            ops.insert(
                name.to_string(),
                op_stats(h, t.host_ios[dir], t.host_bytes[dir], secs),
            );
            member_ios.insert(
                name.to_string(),
                t.member_ios[dir] as f64 / t.host_ios[dir] as f64,
            );
            member_bytes.insert(
                name.to_string(),
                t.member_bytes[dir] as f64 / t.host_bytes[dir] as f64,
            );
            if t.parity_bytes[dir] > 0 {
                parity_bytes.insert(
                    name.to_string(),
                    t.parity_bytes[dir] as f64 / t.host_bytes[dir] as f64,
                );
            }
        }
        // Discards: host figures only (they move no data, so no member ratios).
        let mut trims = Histogram::new();
        let (mut trim_ios, mut trim_bytes) = (0, 0);
        for w in &self.workloads {
            trims.merge(&w.hist[TRIM]);
            trim_ios += w.ios_done[TRIM];
            trim_bytes += w.bytes_done[TRIM];
        }
        if trims.count() > 0 {
            ops.insert(
                "trim".to_string(),
                op_stats(&trims, trim_ios, trim_bytes, secs),
            );
        }
        let resources: Vec<Resource> = self
            .resources_now()
            .into_iter()
            .zip(&self.busy_at_start)
            .map(|((name, kind, units, b1), &b0)| {
                let busy = (b1 - b0) / units;
                Resource {
                    name,
                    kind: kind.to_string(),
                    busy_ns: busy,
                    utilisation: (busy as f64 / elapsed as f64).min(1.0),
                }
            })
            .collect();
        let bottleneck = resources
            .iter()
            .fold(None::<&Resource>, |best, r| match best {
                Some(b) if b.utilisation >= r.utilisation => Some(b),
                _ => Some(r),
            })
            .expect("the controller is always a resource");
        let staged_ios = t.staged_ios.max(1) as f64;
        let latency_ns_by_stage: BTreeMap<String, f64> = STAGES
            .iter()
            .zip(t.stage_ns)
            .map(|(stage, ns)| (stage.to_string(), ns as f64 / staged_ios))
            .collect();
        // Ties go to the stage nearer the host, so the choice is stable.
        let stage_longest = STAGES
            .iter()
            .zip(t.stage_ns)
            .fold(None::<(&str, u64)>, |best, (stage, ns)| match best {
                Some(b) if b.1 >= ns => Some(b),
                _ => Some((stage, ns)),
            })
            .map(|(stage, _)| stage.to_string())
            .expect("four stages");
        let bound = if bottleneck.utilisation >= SATURATION_UTILISATION {
            "resource"
        } else {
            "latency"
        };
        let drive_read_ahead_hits = self
            .drives
            .iter()
            .map(|d| match &d.model {
                DriveModel::Hdd(h) => h.read_ahead_hits(),
                DriveModel::Ssd(_) => 0,
            })
            .sum();
        let jobs = self
            .workloads
            .iter()
            .map(|w| {
                let end = if w.stopped { w.end_ns } else { self.end_ns };
                let runtime_ns = end.saturating_sub(self.start_ns).max(1);
                let secs = runtime_ns as f64 / 1e9;
                let mut ops = BTreeMap::new();
                for (dir, name) in [(READ, "read"), (WRITE, "write"), (TRIM, "trim")] {
                    if w.hist[dir].count() > 0 {
                        let stats =
                            op_stats(&w.hist[dir], w.ios_done[dir], w.bytes_done[dir], secs);
                        ops.insert(name.to_string(), stats);
                    }
                }
                let column = |dir: usize, bytes: bool| -> Vec<u64> {
                    w.samples[dir]
                        .iter()
                        .map(|s| if bytes { s.1 } else { s.0 })
                        .collect()
                };
                JobResults {
                    name: w.name.clone(),
                    ops,
                    runtime_ns,
                    samples: Samples {
                        interval_ns: w.sample_interval_ns,
                        read_ios: column(READ, false),
                        read_bytes: column(READ, true),
                        write_ios: column(WRITE, false),
                        write_bytes: column(WRITE, true),
                        trim_ios: if w.trims() {
                            column(TRIM, false)
                        } else {
                            Vec::new()
                        },
                        trim_bytes: if w.trims() {
                            column(TRIM, true)
                        } else {
                            Vec::new()
                        },
                    },
                }
            })
            .collect();
        Results {
            schema: SCHEMA,
            jobs,
            seed: self.seed,
            sim_time_ns: elapsed,
            events: self.events,
            ops,
            explain: Explain {
                bottleneck: bottleneck.name.clone(),
                bottleneck_utilisation: bottleneck.utilisation,
                bound: bound.to_string(),
                latency_ns_by_stage,
                stage_longest,
                resources: resources.clone(),
                member_ios_per_host_io: member_ios,
                member_bytes_per_host_byte: member_bytes,
                read_ahead_hits: self.controller.read_ahead.as_ref().map_or(0, |r| r.hits),
                drive_read_ahead_hits,
                parity_bytes_per_host_byte: parity_bytes,
                ssd_write_amplification: {
                    let was: Vec<f64> = self
                        .drives
                        .iter()
                        .filter_map(|d| match &d.model {
                            DriveModel::Ssd(ssd) => ssd.write_amplification(),
                            DriveModel::Hdd(_) => None,
                        })
                        .collect();
                    (!was.is_empty()).then(|| was.iter().sum::<f64>() / was.len() as f64)
                },
                scheduler: self.scheduler.as_ref().map(|sched| {
                    let (now, start) = (sched.counters(), self.scheduler_at_start);
                    let merged = now.merges - start.merges;
                    let dispatched = now.dispatched - start.dispatched;
                    SchedulerReport {
                        name: sched.kind().name().to_string(),
                        queue_depth: sched.queue_depth(),
                        nr_requests: sched.nr_requests(),
                        max_request_bytes: sched.max_request_bytes(),
                        host_ios_merged: merged,
                        requests_dispatched: dispatched,
                        host_ios_per_request: if dispatched > 0 {
                            (dispatched + merged) as f64 / dispatched as f64
                        } else {
                            0.0
                        },
                        expired: now.expired - start.expired,
                        idle_expiries: now.idle_expiries - start.idle_expiries,
                    }
                }),
            },
            rebuild: self.rebuild.as_ref().map(|rb| {
                let bytes = rb.bytes_done - rb.bytes_at_start;
                let rate = bytes as f64 / secs;
                RebuildReport {
                    member: rb.member,
                    bytes_done: bytes,
                    member_bytes: rb.member_bytes,
                    mbps: rate / 1e6,
                    finished: rb.finished_ns.is_some(),
                    time_ns_projected: match rb.finished_ns {
                        Some(t) => t - rb.started_ns,
                        None if rate > 0.0 => (rb.member_bytes as f64 / rate * 1e9) as u64,
                        None => u64::MAX,
                    },
                }
            }),
        }
    }
}

impl ReadAhead {
    /// Do window segments cover `[start, end)` without a gap?
    fn covers(&self, start: u64, end: u64) -> bool {
        let mut reached = start;
        for s in &self.window {
            if s.start <= reached && s.end > reached {
                reached = s.end;
                if reached >= end {
                    return true;
                }
            }
        }
        false
    }

    fn ready_for(&self, start: u64, end: u64) -> bool {
        self.window
            .iter()
            .filter(|s| s.start < end && s.end > start)
            .all(|s| s.ready)
    }
}

/// One direction's figures from its histogram and counters over `secs`.
fn op_stats(h: &Histogram, ios: u64, bytes: u64, secs: f64) -> OpStats {
    OpStats {
        ios,
        bytes,
        iops: ios as f64 / secs,
        mbps: bytes as f64 / secs / 1e6,
        lat_mean_ns: h.mean_ns(),
        lat_min_ns: h.min_ns(),
        lat_max_ns: h.max_ns(),
        percentiles_ns: PERCENTILES
            .iter()
            .map(|&(key, p)| (key.to_string(), h.percentile_ns(p)))
            .collect(),
    }
}
