//! A background rebuild of one failed member, one stripe unit of member space at a
//! time, paced at its rate and competing with the workload for the same drives. Below
//! the rebuild's frontier the member counts as whole again.
//!
//! With a hot spare (`array.spares`) the member may instead fail during the run
//! (`rebuild.failed_at_ns`): it serves I/O until then, and at that instant the spare
//! takes its role and the rebuild starts, with no replacement delay, as md does when a
//! spare is present. Without that field the member failed before the run and its
//! replacement is in place when it starts.

use super::controller::op_count;
use super::{Request, Simulation};
use crate::queue::EventKind;
use crate::scenario::{ArraySpec, ReadBalance};
use raidlab_layout::{LeastOutstanding, MemberSet};

/// The members failed when the run starts: `failed`, less one that fails only during
/// the run (a hot spare's rebuild).
pub(super) fn failed_at_start(a: &ArraySpec) -> MemberSet {
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

/// A background rebuild of one member, a stripe unit of member space at a time, at a
/// limited rate, competing with the workload for the same drives.
pub(super) struct Rebuild {
    pub(super) member: u32,
    pub(super) ps_per_byte: u64,
    pub(super) unit_bytes: u64,
    pub(super) member_bytes: u64,
    /// Member bytes below this are rebuilt (or being rebuilt by the unit in flight).
    pub(super) next_offset_bytes: u64,
    pub(super) unit_bytes_now: u64,
    pub(super) bytes_done: u64,
    pub(super) bytes_at_start: u64,
    pub(super) started_ns: u64,
    pub(super) finished_ns: Option<u64>,
}

impl Simulation {
    /// Plan and send the next rebuild unit, or wait until the rate limit allows it.
    pub(super) fn rebuild_next(&mut self) {
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
                // md's recovery reads are not read-balanced by head position.
                ReadBalance::LeastOutstanding | ReadBalance::Md => self.layout.rebuild_plan(
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
            let ops = op_count(plan, self.controller.split);
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

    /// The member fails; the hot spare takes its role and its rebuild starts now.
    pub(super) fn member_fails(&mut self) {
        let member = self.rebuild.as_ref().expect("a rebuild runs").member;
        debug_assert!(!self.failed.contains(member), "a member fails once");
        self.failed.insert(member);
        self.rebuild_next();
    }

    pub(super) fn rebuild_unit_done(&mut self) {
        let rb = self.rebuild.as_mut().expect("a rebuild runs");
        rb.bytes_done += rb.unit_bytes_now;
        self.rebuild_next();
    }
}
