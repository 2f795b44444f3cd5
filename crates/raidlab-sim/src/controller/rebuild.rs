//! A background rebuild of one failed member, one stripe unit of member space at a
//! time, paced at its rate and competing with the workload for the same drives. Below
//! the rebuild's frontier the member counts as whole again.
//!
//! With a hot spare (`array.spares`) the member may instead fail during the run
//! (`rebuild.failed_at_ns`): it serves I/O until then, and at that instant the spare
//! takes its role and the rebuild starts, with no replacement delay, as md does when a
//! spare is present. Without that field the member failed before the run and its
//! replacement is in place when it starts.

use super::{op_count, Rebuild, SYNC_MARKS, SYNC_MARK_STEP_NS};
use crate::event_queue::EventKind;
use crate::scenario::{ArraySpec, ControllerSpec, DriveSpec, ReadBalance, RebuildSpec};
use crate::simulation::{Request, Simulation};
use raidlab_layout::{LeastOutstanding, MemberSet};

/// The members failed when the run starts: `failed`, less one that fails only during
/// the run (a hot spare's rebuild).
pub(crate) fn failed_at_start(a: &ArraySpec) -> MemberSet {
    let mut failed = MemberSet::from_members(&a.failed);
    // Failing at 0 ns is failing before the run: the same as no failure time.
    if let Some(r) = a
        .rebuild
        .as_ref()
        .filter(|r| r.failed_at_ns.is_some_and(|t| t > 0))
    {
        failed.remove(r.member);
    }
    failed
}

impl Rebuild {
    /// A rebuild starting at `started_ns` over its `slots` request slots.
    pub(crate) fn new(
        spec: &RebuildSpec,
        controller: &ControllerSpec,
        drive: &DriveSpec,
        unit_bytes: u64,
        member_bytes: u64,
        slots: Vec<u32>,
    ) -> Self {
        let started_ns = spec.failed_at_ns.unwrap_or(0);
        let min = spec.rate_min(controller, drive);
        Self {
            member: spec.member,
            ps_per_byte: crate::resource::ps_per_byte(spec.rate_bytes_per_s),
            unit_bytes,
            member_bytes,
            next_offset_bytes: 0,
            bytes_done: 0,
            bytes_at_start: 0,
            started_ns,
            finished_ns: None,
            min_ps_per_byte: min.map(crate::resource::ps_per_byte),
            depth: if min.is_some() {
                controller.rebuild_depth
            } else {
                1
            },
            slots: slots.len() as u32,
            free_slots: slots,
            marks: [(started_ns, 0); SYNC_MARKS],
            last_mark: 0,
            speed_mark: (started_ns, 0),
            wake_ns: None,
        }
    }

    /// Request slots a rebuild needs: one, or its depth when it has a minimum.
    pub(crate) fn slots_needed(spec: &RebuildSpec, a: &ArraySpec) -> u32 {
        if spec.rate_min(&a.controller, &a.drive).is_some() {
            a.controller.rebuild_depth
        } else {
            1
        }
    }

    fn in_flight(&self) -> u32 {
        self.slots - self.free_slots.len() as u32
    }

    /// Take md's mark every `SYNC_MARK_STEP`; the speed is measured from the oldest.
    fn mark(&mut self, now: u64) {
        if now >= self.marks[self.last_mark].0 + SYNC_MARK_STEP_NS {
            let next = (self.last_mark + 1) % SYNC_MARKS;
            self.speed_mark = self.marks[next];
            self.marks[next] = (now, self.bytes_done);
            self.last_mark = next;
        }
    }

    /// Whether the rebuild's speed since its mark (units done, not those in flight,
    /// as md counts) is below its minimum.
    fn below_min(&self, now: u64) -> bool {
        let Some(ps) = self.min_ps_per_byte else {
            return false;
        };
        let (mark_ns, mark_bytes) = self.speed_mark;
        // bytes / elapsed < min  <=>  bytes * ps_per_byte < elapsed_ns * 1000.
        u128::from(self.bytes_done - mark_bytes) * u128::from(ps) < u128::from(now - mark_ns) * 1000
    }
}

/// One unit of member space the rebuild sends: where on its member, and its slot.
#[derive(Clone, Copy)]
struct RebuildUnit {
    member: u32,
    offset_bytes: u64,
    len_bytes: u64,
    slot: u32,
}

impl Simulation {
    /// Whether `slot` is one of the rebuild's request slots.
    #[inline]
    pub(crate) fn is_rebuild_slot(&self, slot: u32) -> bool {
        slot == self.rebuild_slot || slot >= self.rebuild_extra_slots
    }

    /// Plan and send the next rebuild units the window allows, or wait until the rate
    /// limit allows one.
    pub(crate) fn rebuild_next(&mut self) {
        while let Some(unit) = self.next_rebuild_unit() {
            if self.plan_rebuild_unit(unit) {
                self.issue_rebuild_unit(unit);
            } else {
                // Space the member does not use (RAID 10 tails): nothing to copy.
                let rb = self.rebuild.as_mut().expect("a rebuild runs");
                rb.bytes_done += unit.len_bytes;
            }
        }
    }

    /// The next unit, taken off the rebuild's frontier, when it may go now; None when
    /// the rebuild is done (marked finished once nothing is in flight), its window is
    /// full, or its rate limit holds it back (a `RebuildNext` is then queued).
    fn next_rebuild_unit(&mut self) -> Option<RebuildUnit> {
        let now = self.now_ns;
        let rb = self.rebuild.as_mut().expect("a rebuild runs");
        if rb.wake_ns.is_some_and(|t| t <= now) {
            rb.wake_ns = None;
        }
        if rb.next_offset_bytes >= rb.member_bytes {
            if rb.in_flight() == 0 && rb.finished_ns.is_none() {
                rb.finished_ns = Some(now);
                self.failed.remove(rb.member);
            }
            return None;
        }
        rb.mark(now);
        // Below the minimum, up to `depth` units in flight; else the last must be
        // done before the next goes.
        let window = if rb.below_min(now) { rb.depth } else { 1 };
        if rb.in_flight() >= window {
            return None;
        }
        // The rate limit: unit k may start once k units' worth of time has passed.
        let due = rb.started_ns
            + (u128::from(rb.next_offset_bytes) * u128::from(rb.ps_per_byte) / 1000) as u64;
        if due > now {
            if rb.wake_ns.is_none() {
                rb.wake_ns = Some(due);
                self.queue.push(due, EventKind::RebuildNext, 0);
            }
            return None;
        }
        let offset_bytes = rb.next_offset_bytes;
        let len_bytes = rb.unit_bytes.min(rb.member_bytes - offset_bytes);
        rb.next_offset_bytes = offset_bytes + len_bytes;
        Some(RebuildUnit {
            member: rb.member,
            offset_bytes,
            len_bytes,
            slot: *rb.free_slots.last().expect("the window has a free slot"),
        })
    }

    /// Plan a unit's reads of the survivors and its write into its slot's plan;
    /// whether it writes anything.
    fn plan_rebuild_unit(&mut self, unit: RebuildUnit) -> bool {
        let RebuildUnit {
            member,
            offset_bytes: offset,
            len_bytes: len,
            slot,
        } = unit;
        let failed = self.failed;
        let plan = &mut self.plans[slot as usize];
        let planned = match self.read_balance {
            ReadBalance::RoundRobin => {
                let copies = &mut self.round_robin;
                self.layout
                    .rebuild_plan(member, offset, len, &failed, copies, plan)
            }
            // md's recovery reads are not read-balanced by head position.
            ReadBalance::LeastOutstanding | ReadBalance::Md => {
                let copies = &mut LeastOutstanding::new(&self.member_load);
                self.layout
                    .rebuild_plan(member, offset, len, &failed, copies, plan)
            }
        };
        planned.expect("a validated rebuild has survivors to read");
        !plan.writes.is_empty()
    }

    /// Send a planned unit: its slot taken, the controller's CPU charged per member
    /// operation, then its dispatch.
    fn issue_rebuild_unit(&mut self, unit: RebuildUnit) {
        let now = self.now_ns;
        let slot = unit.slot;
        self.rebuild
            .as_mut()
            .expect("a rebuild runs")
            .free_slots
            .pop();
        let ops = op_count(&self.plans[slot as usize], self.controller.split);
        self.requests[slot as usize] = Request {
            offset_bytes: unit.offset_bytes,
            len_bytes: unit.len_bytes,
            issued_ns: now,
            ..Request::default()
        };
        let (_, ready) = self
            .controller
            .cpu
            .reserve(now, ops * self.controller.member_op_overhead_ns);
        self.queue.push(ready, EventKind::Dispatch, slot);
    }

    /// The member fails; the hot spare takes its role and its rebuild starts now.
    pub(crate) fn member_fails(&mut self) {
        let member = self.rebuild.as_ref().expect("a rebuild runs").member;
        debug_assert!(!self.failed.contains(member), "a member fails once");
        self.failed.insert(member);
        self.rebuild_next();
    }

    /// A rebuild unit in `slot` is written to the replacement.
    pub(crate) fn rebuild_unit_done(&mut self, slot: u32) {
        let len = self.requests[slot as usize].len_bytes;
        let rb = self.rebuild.as_mut().expect("a rebuild runs");
        rb.bytes_done += len;
        rb.free_slots.push(slot);
        self.rebuild_next();
    }
}
