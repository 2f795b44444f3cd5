//! The host block layer's I/O scheduler: the stage between the I/Os the host submits
//! and the array device, as Linux's blk-mq has it.
//!
//! ```text
//!  host I/O ─► merge onto a queued request? ─yes─► rides along, completes with it
//!                 │ no
//!                 ▼
//!          a request (one of nr_requests; else wait for one) ─► scheduler queues
//!                                                                   │ policy picks
//!                                                                   ▼
//!                                          device (at most queue_depth in flight)
//! ```
//!
//! - `none` with a queue depth: one FIFO, no sorting, no merging.
//! - `mq-deadline` (block/mq-deadline.c): a queue per direction sorted by LBA, served
//!   in batches of `fifo_batch` requests in ascending LBA order from where the last
//!   batch stopped (a one-way elevator); between batches reads are preferred unless
//!   writes have been passed over `writes_starved` times, and a request whose
//!   deadline (`read_expire`, `write_expire`) has passed starts the next batch. Host
//!   I/Os adjacent to a queued request of the same direction merge onto its back or
//!   front up to `max_sectors_kb`, and two requests that come to touch merge.
//! - `bfq` (block/bfq-iosched.c), simplified: one queue per process (a fio job),
//!   served alone until its budget (`max_budget`) or its time (`timeout_sync`) is
//!   used up, in LBA order within the queue; when it runs empty the device waits
//!   `slice_idle` for that process's next request before serving another. Left out:
//!   weights and cgroups, budget feedback and peak-rate estimation, the low_latency
//!   and interactive heuristics, queue merging of cooperating processes, the
//!   throughput heuristics that skip idling for seeky queues on non-rotational
//!   devices (a hardware RAID volume often reports itself rotational anyway), and
//!   the async/sync split (direct I/O, as fio does it, is synchronous).
//!
//! Everything is bounded by the host's slots: no allocation after construction
//! besides the queues' vectors growing to their peak once.

mod bfq;
mod merge;
mod mq_deadline;
mod request_queue;

use crate::scenario::{
    BfqSpec, DeadlineSpec, HostSpec, SchedulerKind, MAX_SECTORS_KB_DEFAULT, NR_REQUESTS_DEPTH_CAP,
};
use request_queue::{Queue, Req};
use std::collections::VecDeque;

const NIL: u32 = u32::MAX;
const READ: usize = 0;
const WRITE: usize = 1;

/// One host I/O the scheduler holds: its own extent and the next I/O of its request.
#[derive(Debug, Clone, Copy)]
struct Io {
    offset_bytes: u64,
    len_bytes: u64,
    write: bool,
    /// A discard (TRIM): queued with the writes, merged only with discards.
    discard: bool,
    queue: u32,
    /// Next host I/O of the same request (`NIL` at the end).
    next: u32,
}

/// What the scheduler did, counted from the start of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Host I/Os that joined another I/O's request instead of becoming one.
    pub merges: u64,
    /// Requests sent to the device.
    pub dispatched: u64,
    /// Requests served out of LBA order because their deadline had passed.
    pub expired: u64,
    /// bfq turns that ended because the process sent nothing within `slice_idle`.
    pub idle_expiries: u64,
}

/// The scheduler stage of one run.
pub struct Scheduler {
    kind: SchedulerKind,
    queue_depth: u32,
    nr_requests: u32,
    /// Members of the array: fewer requests in flight than this leaves some idle.
    drive_count: u32,
    max_request_bytes: u64,
    deadline: DeadlineSpec,
    bfq: BfqSpec,
    ios: Vec<Io>,
    reqs: Vec<Req>,
    queues: Vec<Queue>,
    /// Host I/Os waiting for a request (all `nr_requests` taken).
    tag_wait: VecDeque<u32>,
    allocated: u32,
    queued: u32,
    in_flight: u32,
    // mq-deadline
    last_dir: usize,
    batching: u32,
    starved: u32,
    // bfq
    active: Option<u32>,
    busy: VecDeque<u32>,
    slice_start_ns: u64,
    budget_used_bytes: u64,
    idling: bool,
    timer_gen: u32,
    timer: Option<(u64, u32)>,
    // time requests waited while the device had room
    withholding: bool,
    withheld_since_ns: u64,
    withheld_ns: u64,
    counters: Counters,
}

impl Scheduler {
    /// The stage of a validated host spec in front of an array of `drive_count`
    /// members, for `slots` host slots and `processes` submitting processes (fio
    /// jobs); `default_queue_depth` is the device's depth when the spec gives none.
    pub fn new(
        host: &HostSpec,
        drive_count: u32,
        default_queue_depth: u32,
        slots: usize,
        processes: usize,
    ) -> Self {
        let queue_depth = host.queue_depth.unwrap_or(default_queue_depth).max(1);
        let nr_requests = host.nr_requests.unwrap_or(match host.scheduler {
            // blk-mq without a scheduler has the device's tags only.
            SchedulerKind::None => queue_depth,
            _ => 2 * queue_depth.min(NR_REQUESTS_DEPTH_CAP),
        });
        let queues = match host.scheduler {
            SchedulerKind::None => 1,
            SchedulerKind::MqDeadline => 2,
            SchedulerKind::Bfq => processes.max(1),
        };
        let held = slots.min(nr_requests as usize);
        Self {
            kind: host.scheduler,
            queue_depth,
            nr_requests,
            drive_count: drive_count.max(1),
            max_request_bytes: u64::from(host.max_sectors_kb.unwrap_or(MAX_SECTORS_KB_DEFAULT))
                * 1024,
            deadline: host.deadline.clone().unwrap_or_default(),
            bfq: host.bfq.clone().unwrap_or_default(),
            ios: vec![
                Io {
                    offset_bytes: 0,
                    len_bytes: 0,
                    write: false,
                    discard: false,
                    queue: 0,
                    next: NIL,
                };
                slots
            ],
            reqs: vec![Req::default(); slots],
            queues: (0..queues)
                .map(|_| Queue {
                    sorted: Vec::with_capacity(held.min(1024)),
                    fifo: Vec::with_capacity(held.min(1024)),
                    ..Queue::default()
                })
                .collect(),
            tag_wait: VecDeque::new(),
            allocated: 0,
            queued: 0,
            in_flight: 0,
            last_dir: READ,
            batching: 0,
            starved: 0,
            active: None,
            busy: VecDeque::with_capacity(queues),
            slice_start_ns: 0,
            budget_used_bytes: 0,
            idling: false,
            timer_gen: 0,
            timer: None,
            withholding: false,
            withheld_since_ns: 0,
            withheld_ns: 0,
            counters: Counters::default(),
        }
    }

    /// Which scheduler.
    pub fn kind(&self) -> SchedulerKind {
        self.kind
    }

    /// Requests the device takes at once.
    pub fn queue_depth(&self) -> u32 {
        self.queue_depth
    }

    /// Requests the scheduler holds at most, queued and in flight.
    pub fn nr_requests(&self) -> u32 {
        self.nr_requests
    }

    /// Largest request a merge builds.
    pub fn max_request_bytes(&self) -> u64 {
        self.max_request_bytes
    }

    /// What it did so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// A host I/O of `slot` (from `process`) reaches the scheduler at `now_ns`. A
    /// discard goes with the writes (as in Linux) but merges only with discards.
    #[allow(clippy::too_many_arguments)]
    pub fn insert(
        &mut self,
        slot: u32,
        offset_bytes: u64,
        len_bytes: u64,
        write: bool,
        discard: bool,
        process: u32,
        now_ns: u64,
    ) {
        let write = write || discard;
        let queue = match self.kind {
            SchedulerKind::None => 0,
            SchedulerKind::MqDeadline => usize::from(write) as u32,
            SchedulerKind::Bfq => process,
        };
        debug_assert!((queue as usize) < self.queues.len());
        self.ios[slot as usize] = Io {
            offset_bytes,
            len_bytes,
            write,
            discard,
            queue,
            next: NIL,
        };
        self.admit(slot, now_ns);
    }

    /// Merge `slot` onto a queued request, or give it a request of its own, or make
    /// it wait for one.
    fn admit(&mut self, slot: u32, now_ns: u64) {
        if self.try_merge(slot) {
            return;
        }
        if self.allocated < self.nr_requests {
            self.allocate(slot, now_ns);
        } else {
            self.tag_wait.push_back(slot);
        }
    }

    fn allocate(&mut self, slot: u32, now_ns: u64) {
        let io = self.ios[slot as usize];
        let expire_after_ns = match self.kind {
            SchedulerKind::None => 0,
            SchedulerKind::MqDeadline if io.write => self.deadline.write_expire_ns,
            SchedulerKind::MqDeadline => self.deadline.read_expire_ns,
            SchedulerKind::Bfq => self.bfq.fifo_expire_sync_ns,
        };
        self.reqs[slot as usize] = Req {
            start: io.offset_bytes,
            end: io.offset_bytes + io.len_bytes,
            write: io.write,
            discard: io.discard,
            expire_ns: now_ns.saturating_add(expire_after_ns),
            queue: io.queue,
            tail: slot,
        };
        self.allocated += 1;
        self.queued += 1;
        let q = io.queue as usize;
        self.queues[q].insert(&self.reqs, slot);
        if self.kind == SchedulerKind::Bfq && self.active != Some(io.queue) && !self.queues[q].busy
        {
            self.queues[q].busy = true;
            self.busy.push_back(io.queue);
        }
    }

    /// The next request for the device, if the policy sends one now: its lead slot,
    /// offset and length. The caller keeps asking until it gets `None`.
    pub fn dispatch(&mut self, now_ns: u64) -> Option<(u32, u64, u64)> {
        while self.allocated < self.nr_requests {
            let Some(slot) = self.tag_wait.pop_front() else {
                break;
            };
            self.admit(slot, now_ns);
        }
        if self.in_flight >= self.queue_depth {
            return None;
        }
        let lead = match self.kind {
            SchedulerKind::None => {
                let queue = &mut self.queues[0];
                if queue.fifo.is_empty() {
                    return None;
                }
                let lead = queue.fifo.remove(0);
                let key = (self.reqs[lead as usize].start, lead);
                let at = queue.sorted.partition_point(|&k| k < key);
                queue.sorted.remove(at);
                lead
            }
            SchedulerKind::MqDeadline => self.deadline_pick(now_ns)?,
            SchedulerKind::Bfq => self.bfq_pick(now_ns)?,
        };
        let r = self.reqs[lead as usize];
        self.queued -= 1;
        self.in_flight += 1;
        self.queues[r.queue as usize].in_flight += 1;
        self.counters.dispatched += 1;
        Some((lead, r.start, r.end - r.start))
    }

    /// Request `lead` completed at the device; returns the first host I/O of its
    /// chain (walk it with [`Scheduler::next_in_request`]).
    pub fn complete(&mut self, lead: u32) -> u32 {
        let q = self.reqs[lead as usize].queue as usize;
        debug_assert!(self.in_flight > 0 && self.queues[q].in_flight > 0);
        self.in_flight -= 1;
        self.allocated -= 1;
        self.queues[q].in_flight -= 1;
        lead
    }

    /// The host I/O after `slot` in its request.
    pub fn next_in_request(&self, slot: u32) -> Option<u32> {
        let next = self.ios[slot as usize].next;
        (next != NIL).then_some(next)
    }

    /// A host I/O's own offset and length (its request may have been larger).
    pub fn own_extent(&self, slot: u32) -> (u64, u64) {
        let io = &self.ios[slot as usize];
        (io.offset_bytes, io.len_bytes)
    }

    /// Account, up to `now_ns`, the time requests waited in the scheduler while the
    /// device had room and fewer requests in flight than it has drives (so some
    /// drive had nothing to do); call after every change. A work-conserving policy
    /// never does this; bfq does while it serves one process alone or idles for it.
    pub fn settle(&mut self, now_ns: u64) {
        if self.withholding {
            self.withheld_ns += now_ns - self.withheld_since_ns;
        }
        self.withheld_since_ns = now_ns;
        self.withholding =
            self.queued > 0 && self.in_flight < self.queue_depth.min(self.drive_count);
    }

    /// Time requests were held back (see [`Scheduler::settle`]) up to `now_ns`.
    pub fn withheld_ns(&self, now_ns: u64) -> u64 {
        self.withheld_ns
            + if self.withholding {
                now_ns - self.withheld_since_ns
            } else {
                0
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(kind: SchedulerKind, queue_depth: u32) -> Scheduler {
        let host = HostSpec {
            scheduler: kind,
            queue_depth: Some(queue_depth),
            nr_requests: Some(64),
            ..HostSpec::default()
        };
        Scheduler::new(&host, 1, 32, 64, 4)
    }

    fn drain(s: &mut Scheduler, now: u64) -> Vec<(u32, u64, u64)> {
        std::iter::from_fn(|| s.dispatch(now)).collect()
    }

    #[test]
    fn deadline_merges_adjacent_io_into_one_request_up_to_the_limit() {
        let mut s = stage(SchedulerKind::MqDeadline, 1);
        // Occupy the device so the rest queue.
        s.insert(0, 1 << 30, 4096, false, false, 0, 0);
        assert_eq!(drain(&mut s, 0).len(), 1);
        for i in 1..=40u32 {
            s.insert(i, u64::from(i) * 16384, 16384, false, false, 0, 0);
        }
        assert_eq!(
            s.counters().merges,
            38,
            "40 I/Os of 16 KiB make 512 KiB + 128 KiB"
        );
        s.complete(0);
        let out = drain(&mut s, 0);
        assert_eq!(out, vec![(1, 16384, 512 << 10)]);
        let mut chain = vec![1];
        while let Some(n) = s.next_in_request(*chain.last().unwrap()) {
            chain.push(n);
        }
        assert_eq!(chain, (1..=32).collect::<Vec<_>>());
    }

    #[test]
    fn a_gap_filled_joins_the_requests_on_either_side() {
        let mut s = stage(SchedulerKind::MqDeadline, 1);
        s.insert(0, 1 << 30, 4096, false, false, 0, 0);
        drain(&mut s, 0);
        s.insert(1, 0, 4096, true, false, 0, 0);
        s.insert(2, 8192, 4096, true, false, 0, 0);
        s.insert(3, 4096, 4096, true, false, 0, 0);
        assert_eq!(s.counters().merges, 2);
        s.complete(0);
        assert_eq!(drain(&mut s, 0), vec![(1, 0, 12288)]);
    }

    #[test]
    fn a_discard_merges_with_discards_only() {
        let mut s = stage(SchedulerKind::MqDeadline, 1);
        s.insert(0, 1 << 30, 4096, false, false, 0, 0);
        drain(&mut s, 0);
        s.insert(1, 0, 4096, true, false, 0, 0);
        s.insert(2, 4096, 4096, false, true, 0, 0);
        s.insert(3, 8192, 4096, false, true, 0, 0);
        assert_eq!(s.counters().merges, 1, "the two discards, not the write");
        s.complete(0);
        assert_eq!(drain(&mut s, 0).len(), 1);
        s.complete(1);
        assert_eq!(drain(&mut s, 0), vec![(2, 4096, 8192)]);
    }

    #[test]
    fn deadline_serves_in_ascending_lba_order_then_wraps_to_the_oldest() {
        let mut s = stage(SchedulerKind::MqDeadline, 1);
        s.insert(0, 500 << 20, 4096, false, false, 0, 0);
        drain(&mut s, 0);
        for (slot, mb) in [(1u32, 900u64), (2, 100), (3, 700), (4, 300)] {
            s.insert(slot, mb << 20, 4096, false, false, 0, 0);
        }
        let mut order = vec![];
        let mut done = 0;
        for _ in 0..4 {
            s.complete(done);
            let (lead, _, _) = s.dispatch(1).unwrap();
            order.push(lead);
            done = lead;
        }
        assert_eq!(
            order,
            vec![3, 1, 2, 4],
            "700, 900, then wrap to the oldest (100), 300"
        );
    }

    #[test]
    fn an_expired_read_is_served_before_the_elevator_reaches_it() {
        let mut s = stage(SchedulerKind::MqDeadline, 1);
        s.insert(0, 500 << 20, 4096, false, false, 0, 0);
        drain(&mut s, 0);
        s.insert(1, 100 << 20, 4096, false, false, 0, 0);
        s.insert(2, 600 << 20, 4096, false, false, 0, 0);
        s.complete(0);
        // Deadline passed, but the batch (one request so far) goes on in LBA order.
        assert_eq!(s.dispatch(600_000_000).unwrap().0, 2);
        s.complete(2);
        s.insert(3, 700 << 20, 4096, false, false, 0, 600_000_000);
        for _ in 0..20 {
            let (lead, _, _) = s.dispatch(600_000_000).unwrap();
            if lead == 1 {
                return;
            }
            s.complete(lead);
            s.insert(
                lead,
                (800 << 20) + u64::from(lead) * 8192,
                4096,
                false,
                false,
                0,
                600_000_000,
            );
        }
        panic!("the expired read waited beyond a batch");
    }

    #[test]
    fn bfq_serves_one_process_and_idles_for_it() {
        let mut s = stage(SchedulerKind::Bfq, 32);
        s.insert(0, 0, 4096, false, false, 0, 0);
        s.insert(1, 1 << 30, 4096, false, false, 1, 0);
        assert_eq!(drain(&mut s, 0), vec![(0, 0, 4096)], "process 1 waits");
        s.complete(0);
        assert!(s.dispatch(100).is_none(), "idling for process 0");
        let (at, gen) = s.take_timer().expect("an idle timer");
        assert_eq!(at, 100 + 8_000_000);
        s.timer_fired(gen);
        assert_eq!(s.dispatch(at).map(|d| d.0), Some(1));
        assert_eq!(s.counters().idle_expiries, 1);
    }
}
