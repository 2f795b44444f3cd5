//! Building a run from a scenario: the host's jobs and their request slots, the drives,
//! the controller and its parts, each in the slots fixed for the whole run.

use super::{MemberOp, PathTimes, Request, Simulation, Tally};
use crate::controller::rebuild::failed_at_start;
use crate::controller::{Controller, DestageEngine, ReadAhead, Rebuild};
use crate::drive::hdd::Hdd;
use crate::drive::ssd::Ssd;
use crate::drive::{Drive, DriveModel};
use crate::event_queue::EventQueue;
use crate::host::{Job, Workload};
use crate::rng::Rng;
use crate::scenario::{DriveSpec, Precondition, Rw, Scenario, SpindlePhase, SsdSpec, IODEPTH_MAX};
use crate::scheduler::{Counters, Scheduler};
use raidlab_layout::{Geometry, Plan, RoundRobin};
use std::collections::VecDeque;

impl Simulation {
    /// Build the components of a scenario that passed [`Scenario::validate`] (it
    /// panics on an array the layout refuses). The host's deleted share of the array
    /// is discarded on the members here, untimed; measurement starts at once when no
    /// workload warms up.
    pub fn new(scenario: &Scenario) -> Self {
        let a = &scenario.array;
        let c = &a.controller;
        let (workloads, jobs, slot_job) = host_jobs(scenario);
        let layout = a.geometry().expect("validated scenario");
        let read_ahead = ReadAhead::new(c);
        let slots = Slots::new(scenario, slot_job.len() as u32, read_ahead.is_some());
        let write_cache = c.write_back.then(|| {
            let full_stripe = layout.full_stripe_bytes().max(layout.stripe_unit_bytes());
            DestageEngine::new(c, full_stripe, slots.destage_first(), slots.destage)
        });
        let slot_count = slots.count() as usize;
        let mut sim = Self {
            now_ns: 0,
            queue: EventQueue::with_capacity(4 * slots.host as usize + 64),
            rng: Rng::new(scenario.seed),
            failed: failed_at_start(a),
            read_balance: c.read_balance,
            round_robin: RoundRobin::new(),
            member_load: vec![0; a.drive_count as usize],
            member_head_bytes: vec![0; a.drive_count as usize],
            rebuild: build_rebuild(scenario, &layout, &slots),
            rebuild_slot: slots.rebuild(),
            rebuild_extra_slots: if slots.rebuild_extra > 0 {
                slots.extra_at()
            } else {
                u32::MAX
            },
            controller: Controller::new(a, &layout, read_ahead, write_cache),
            layout,
            drives: build_drives(scenario),
            requests: vec![Request::default(); slot_count],
            paths: vec![PathTimes::default(); slot_count],
            host_slots: slots.host,
            ops: Vec::with_capacity(slots.host as usize * 2),
            free_ops: Vec::new(),
            post_cursors: Vec::new(),
            active_workloads: workloads.len(),
            workloads,
            scheduler: host_scheduler(scenario, slots.host, jobs.len()),
            jobs,
            slot_job,
            host_overhead_ns: a.host.request_overhead_ns,
            plans: vec![Plan::new(); slot_count],
            measuring: false,
            stopped: false,
            start_ns: 0,
            end_ns: 0,
            tally: Tally::default(),
            busy_at_start: Vec::new(),
            events: 0,
            seed: scenario.seed,
            trace: None,
            scheduler_at_start: Counters::default(),
        };
        if let Some(ra) = sim.controller.read_ahead.as_mut() {
            ra.free_slots
                .extend((slots.host..slots.host + slots.prefetch).rev());
        }
        if a.deleted_percent > 0.0 {
            sim.discard_deleted(a.deleted_percent);
        }
        if !sim.any_warming_up() {
            sim.begin_measuring();
        }
        sim
    }
}

/// The host's workloads, their jobs, and the job of each host request slot (one slot
/// per outstanding I/O of every job).
fn host_jobs(scenario: &Scenario) -> (Vec<Workload>, Vec<Job>, Vec<u32>) {
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
    (workloads, jobs, slot_job)
}

/// Bytes the simulator holds per outstanding host I/O (a host slot): its request and
/// where-the-time-went record, its job index, the two member operations and four
/// queued events `Simulation::new` reserves for it. A drive's own queue adds to it,
/// bounded by its command queue, not by the host's depth.
pub const HOST_SLOT_BYTES: u64 = (std::mem::size_of::<Request>()
    + std::mem::size_of::<PathTimes>()
    + std::mem::size_of::<u32>()
    + 2 * std::mem::size_of::<MemberOp>()
    + 4 * EventQueue::ENTRY_BYTES) as u64;

impl Simulation {
    /// Memory, bytes, a run of `scenario` holds for its outstanding host I/Os: every
    /// job's queue depth (or the trace replay's) times [`HOST_SLOT_BYTES`]. The one
    /// part of a run's memory its flags can make arbitrarily large (`numjobs` x
    /// `iodepth`), so a front end can refuse a run that cannot fit before it starts.
    pub fn host_slots_bytes(scenario: &Scenario) -> u64 {
        let jobs: u64 = scenario
            .workload_specs()
            .iter()
            .map(|w| u64::from(w.numjobs) * u64::from(w.iodepth))
            .sum();
        let trace = scenario.trace.as_ref().map_or(0, |t| u64::from(t.iodepth));
        (jobs + trace) * HOST_SLOT_BYTES
    }
}

/// The array's rebuild, when it has one, over its slots: its first after the
/// read-ahead's, its window's after all others.
fn build_rebuild(scenario: &Scenario, layout: &Geometry, slots: &Slots) -> Option<Rebuild> {
    let a = &scenario.array;
    a.rebuild.as_ref().map(|r| {
        let rebuild_slots = (slots.extra_at()..slots.extra_at() + slots.rebuild_extra)
            .rev()
            .chain([slots.rebuild()])
            .collect();
        let (unit, member) = (layout.stripe_unit_bytes(), layout.member_used_bytes());
        Rebuild::new(r, &a.controller, &a.drive, unit, member, rebuild_slots)
    })
}

/// The request slots of a run, fixed at construction, in this order: the host's (one per
/// outstanding I/O of every job), the read-ahead's segments, the rebuild's first, the
/// destages, then the rebuild's further slots (its window below its minimum rate).
struct Slots {
    host: u32,
    prefetch: u32,
    destage: u32,
    rebuild_extra: u32,
}

impl Slots {
    fn new(scenario: &Scenario, host: u32, read_ahead: bool) -> Self {
        let a = &scenario.array;
        let c = &a.controller;
        Slots {
            host,
            prefetch: if read_ahead { c.read_ahead_segments } else { 0 },
            destage: if c.write_back {
                c.destage_concurrency
            } else {
                0
            },
            rebuild_extra: a
                .rebuild
                .as_ref()
                .map_or(0, |r| Rebuild::slots_needed(r, a) - 1),
        }
    }

    fn rebuild(&self) -> u32 {
        self.host + self.prefetch
    }

    fn destage_first(&self) -> u32 {
        self.rebuild() + 1
    }

    fn extra_at(&self) -> u32 {
        self.destage_first() + self.destage
    }

    fn count(&self) -> u32 {
        self.extra_at() + self.rebuild_extra
    }
}

/// The array's members, each behind the command queue the controller may fill.
fn build_drives(scenario: &Scenario) -> Vec<Drive> {
    let a = &scenario.array;
    let c = &a.controller;
    // The controller may keep fewer commands outstanding on a member than it queues.
    let member_depth = |ncq: u32| ncq.min(c.member_queue_depth.unwrap_or(u32::MAX));
    // Drives of one model are copies of one: HDDs share their table of seek times.
    let hdd = match &a.drive {
        DriveSpec::Hdd(h) => Some(Hdd::new(h, c.port_rate_bytes_per_s)),
        DriveSpec::Ssd(_) | DriveSpec::Nvme(_) => None,
    };
    let queued = |model: DriveModel, ncq_depth: u32| Drive {
        model,
        ncq_depth: member_depth(ncq_depth),
        outstanding: 0,
        waiting: VecDeque::new(),
        burst_ns: u64::MAX,
        burst_len: 0,
    };
    (0..a.drive_count)
        .map(|i| (i, c.member_port_rate(i)))
        .map(|(i, port_rate)| match &a.drive {
            DriveSpec::Hdd(h) => queued(
                DriveModel::Hdd(member_spindle(
                    if port_rate == c.port_rate_bytes_per_s {
                        hdd.clone().expect("built above for an HDD")
                    } else {
                        Hdd::new(h, port_rate)
                    },
                    c.spindle_phase,
                    scenario.seed,
                    i,
                )),
                h.ncq_depth,
            ),
            // Each drive's past (its preconditioning) is its own: drives of one model
            // in one array do not garbage-collect in lockstep.
            DriveSpec::Ssd(s) => queued(
                DriveModel::Ssd(Ssd::new(
                    &preconditioned_for(s, scenario),
                    port_rate,
                    scenario.seed ^ (u64::from(i) << 32),
                )),
                s.ncq_depth,
            ),
            // The SSD model's flash behind a PCIe link: full duplex, NVMe's queues.
            DriveSpec::Nvme(n) => queued(
                DriveModel::Ssd(Ssd::full_duplex(
                    &n.flash_spec(),
                    port_rate,
                    scenario.seed ^ (u64::from(i) << 32),
                )),
                n.command_slots(),
            ),
        })
        .collect()
}

/// Member `member`'s disk as the controller's `spindle_phase` says: in step with the
/// others, or (per-member) with its platter a fixed angle ahead of member 0's, drawn
/// from the run's seed and the member's index, so a scenario and seed always give the
/// same phases. SATA and SAS disks have no spindle synchronisation: each spins up on
/// its own and keeps its own angle (docs/model.md, HDD).
fn member_spindle(hdd: Hdd, phase: SpindlePhase, seed: u64, member: u32) -> Hdd {
    if phase == SpindlePhase::Lockstep || member == 0 {
        return hdd;
    }
    // Its own stream, apart from the SSDs' histories (seed ^ member << 32).
    let mut rng = Rng::new(seed ^ (u64::from(member) << 32) ^ SPINDLE_STREAM);
    let revolution_ns = hdd.revolution_ns();
    hdd.with_spindle_phase(rng.below(revolution_ns))
}

/// Mixed into the seed of a member's spindle phase (ASCII "SPIN").
const SPINDLE_STREAM: u64 = 0x5350_494e;

/// The block layer's I/O scheduler stage, when the host has one.
fn host_scheduler(scenario: &Scenario, host_slots: u32, jobs: usize) -> Option<Box<Scheduler>> {
    let a = &scenario.array;
    if !a.host.has_scheduler_stage() {
        return None;
    }
    let ncq_depth = match &a.drive {
        DriveSpec::Hdd(h) => h.ncq_depth,
        DriveSpec::Ssd(s) => s.ncq_depth,
        DriveSpec::Nvme(n) => n.command_slots(),
    };
    // The array takes as many commands as its members hold together.
    let depth = ncq_depth.saturating_mul(a.drive_count).min(IODEPTH_MAX);
    Some(Box::new(Scheduler::new(
        &a.host,
        a.drive_count,
        depth,
        host_slots as usize,
        jobs,
    )))
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
