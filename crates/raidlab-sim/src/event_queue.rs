//! The event queue: a binary min-heap on (time, sequence). The sequence number breaks
//! ties first-in first-out, so equal-time events always run in the order they were
//! scheduled and a run is reproducible bit for bit.

use std::collections::VecDeque;

/// What happens at an event; `target` indexes the component's slot table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A host request reaches the controller (after the host stack latency).
    ControllerArrive,
    /// The controller has processed a request; its member operations go out.
    Dispatch,
    /// A member operation completed at its drive.
    MemberDone,
    /// A host request completes at the host.
    HostComplete,
    /// A read-ahead hit is served from the controller buffer.
    ReadHit,
    /// A request's parity is computed: its member writes go out.
    WritePhase,
    /// The rebuild stream may send its next unit.
    RebuildNext,
    /// The next request of an open-loop trace arrives.
    TraceArrival,
    /// A host request reaches the block layer's I/O scheduler (after the host stack
    /// latency); only when the scenario has a scheduler stage.
    SchedulerInsert,
    /// The I/O scheduler's idle timer of generation `target` fires.
    SchedulerTimer,
    /// The member being rebuilt fails; the hot spare's rebuild starts.
    MemberFails,
    /// The controller posts member operation `target`, built after the request's
    /// earlier commands (see `Simulation::issue_phase`).
    MemberSubmit,
}

/// Every kind, in declaration order: a packed kind is its index here.
const KINDS: [EventKind; 12] = [
    EventKind::ControllerArrive,
    EventKind::Dispatch,
    EventKind::MemberDone,
    EventKind::HostComplete,
    EventKind::ReadHit,
    EventKind::WritePhase,
    EventKind::RebuildNext,
    EventKind::TraceArrival,
    EventKind::SchedulerInsert,
    EventKind::SchedulerTimer,
    EventKind::MemberFails,
    EventKind::MemberSubmit,
];

/// One scheduled event.
#[derive(Debug, Clone, Copy)]
pub struct Event {
    /// When, in simulated nanoseconds.
    pub time_ns: u64,
    /// What.
    pub kind: EventKind,
    /// Which request, member operation or drive.
    pub target: u32,
}

/// Bits of a packed entry below the sequence number: the kind (4) and the target (32).
const PAYLOAD_BITS: u32 = 36;

/// An event as the queue holds it, 16 bytes: its time in the upper 64 bits, then its
/// sequence number, kind and target, the sequence number on top. Sequence numbers are
/// unique, so comparing entries as integers orders them by (time, sequence) in one
/// comparison.
type Entry = u128;

/// No entry: later than every real one (whose kind, one of 12, never fills its 4 bits).
const NONE: Entry = u128::MAX;

#[inline]
fn event(entry: Entry) -> Event {
    Event {
        time_ns: (entry >> 64) as u64,
        kind: KINDS[(entry >> 32) as usize & 0xf],
        target: entry as u32,
    }
}

/// Sorted runs beside the heap (see `EventQueue`).
const LANES: usize = 2;

/// The lane a kind tries first (`LANES`: none, straight into the heap): kinds whose
/// times rise in the order they are scheduled, a fixed delay after the present (the
/// host stack) or the end of work booked on one first-come first-served server (the
/// controller's CPU).
const KIND_LANE: [usize; 12] = [
    0,     // ControllerArrive: now + the host stack's latency.
    1,     // Dispatch: the controller CPU's booking ends.
    LANES, // MemberDone
    LANES, // HostComplete
    LANES, // ReadHit
    LANES, // WritePhase
    LANES, // RebuildNext
    LANES, // TraceArrival
    0,     // SchedulerInsert: now + the host stack's latency.
    LANES, // SchedulerTimer
    LANES, // MemberFails
    LANES, // MemberSubmit
];

/// Min-heap of events with FIFO tie-breaking. Grows to the peak number of pending
/// events and never shrinks, so steady-state scheduling allocates nothing.
///
/// The earliest event may wait in `first`, beside the heap: an event scheduled ahead
/// of everything pending (a completion at the present instant, a short computation)
/// is the next one out, and then goes without a push and a pop of the heap.
///
/// Beside the heap wait a few lanes: a lane is a FIFO whose entries are in (time,
/// sequence) order, because an event joins one only when it is due after the lane's
/// last (its sequence number is larger than all before it). Some kinds are scheduled
/// in the order they are due (a fixed delay after the present, the end of work on a
/// first-come first-served server), so they take a lane and go without a push and a
/// pop of the heap. The next event out is `first`, else the least of the heap's top
/// and the lanes' fronts. Events come out in (time, sequence) order wherever they
/// waited, a total order, so where an event waits never changes when it runs.
///
/// Sequence numbers have 28 bits in an entry. When they run out (every 2^28 events),
/// the pending events are numbered again from 0 in the order they are due, which keeps
/// their order and the order of every later event after them.
#[derive(Debug)]
pub struct EventQueue {
    heap: Vec<Entry>,
    /// Earlier than every entry in `heap`, when set.
    first: Option<Entry>,
    lanes: [Lane; LANES],
    /// Each lane's first entry (`NONE` when it is empty), beside the lanes so that
    /// finding the earliest event reads one line of memory.
    fronts: [Entry; LANES],
    seq: u64,
    /// The sequence number at which numbering starts again.
    seq_limit: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl EventQueue {
    /// Bytes one queued event takes in the queue's storage.
    pub const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();

    /// An empty queue with room for `capacity` events.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            heap: Vec::with_capacity(capacity),
            first: None,
            lanes: Default::default(),
            fronts: [NONE; LANES],
            seq: 0,
            seq_limit: 1 << (64 - PAYLOAD_BITS),
        }
    }

    /// Pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
            + usize::from(self.first.is_some())
            + self.lanes.iter().map(|lane| lane.fifo.len()).sum::<usize>()
    }

    /// No pending events.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedule `kind` for `target` at `time_ns`.
    #[inline]
    pub fn push(&mut self, time_ns: u64, kind: EventKind, target: u32) {
        if self.seq == self.seq_limit {
            self.renumber();
        }
        let tag = (self.seq << PAYLOAD_BITS) | ((kind as u64) << 32) | u64::from(target);
        let entry = (u128::from(time_ns) << 64) | u128::from(tag);
        debug_assert!(KINDS[kind as usize] == kind);
        self.seq += 1;
        match self.first {
            None => {
                if entry < self.heap.first().copied().unwrap_or(NONE)
                    && entry < self.fronts[0]
                    && entry < self.fronts[1]
                {
                    self.first = Some(entry);
                    return;
                }
            }
            // Later than the first event (always, at an equal time): a lane or the heap.
            Some(first) if entry > first => {}
            Some(first) => {
                self.first = Some(entry);
                self.heap_push(first);
                return;
            }
        }
        let lane = KIND_LANE[kind as usize];
        if lane < LANES {
            // Due after its last (always so when it is empty: its last is out, and
            // nothing is scheduled before the present): the lane stays in order.
            let l = &mut self.lanes[lane];
            if l.last < entry {
                if l.fifo.is_empty() {
                    self.fronts[lane] = entry;
                }
                l.push_back(entry);
                return;
            }
        }
        self.heap_push(entry);
    }

    /// Number the pending events again from 0, in the order they are due.
    #[cold]
    fn renumber(&mut self) {
        let mut pending: Vec<Entry> = std::mem::take(&mut self.heap);
        pending.extend(self.first.take());
        for lane in &mut self.lanes {
            pending.extend(lane.fifo.drain(..));
            lane.last = 0;
        }
        self.fronts = [NONE; LANES];
        assert!(
            (pending.len() as u64) < self.seq_limit,
            "fewer pending events than sequence numbers"
        );
        pending.sort_unstable();
        let payload = (1u128 << PAYLOAD_BITS) - 1;
        let time = !((1u128 << 64) - 1);
        for (seq, entry) in pending.iter_mut().enumerate() {
            *entry = (*entry & time) | ((seq as u128) << PAYLOAD_BITS) | (*entry & payload);
        }
        self.seq = pending.len() as u64;
        // In order, every parent is due before its children: a heap already.
        self.heap = pending;
    }

    /// Put `entry` in the heap.
    #[inline]
    fn heap_push(&mut self, entry: Entry) {
        self.heap.push(entry);
        let heap = &mut self.heap[..];
        let mut i = heap.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if heap[parent] <= entry {
                break;
            }
            heap[i] = heap[parent];
            i = parent;
        }
        heap[i] = entry;
    }

    /// Remove and return the earliest event (FIFO among equal times).
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        if let Some(first) = self.first.take() {
            return Some(event(first));
        }
        let top = self.heap.first().copied().unwrap_or(NONE);
        let lane = usize::from(self.fronts[1] < self.fronts[0]);
        let front = self.fronts[lane];
        if front < top {
            let l = &mut self.lanes[lane];
            l.fifo.pop_front();
            self.fronts[lane] = l.front();
            return Some(event(front));
        }
        if top == NONE {
            return None;
        }
        self.heap_pop_top();
        Some(event(top))
    }

    /// Remove the heap's top (the heap is not empty).
    #[inline]
    fn heap_pop_top(&mut self) {
        let Some(last) = self.heap.pop() else { return };
        let heap = &mut self.heap[..];
        let n = heap.len();
        if n == 0 {
            return;
        }
        // The last event is among the latest pending: move the hole at the top down
        // along the earlier children to a leaf (one comparison a level), then bring
        // the last event up from there (rarely more than a level).
        let mut i = 0;
        loop {
            let left = 2 * i + 1;
            if left + 1 < n {
                let child = left + usize::from(heap[left + 1] < heap[left]);
                heap[i] = heap[child];
                i = child;
            } else {
                if left < n {
                    heap[i] = heap[left];
                    i = left;
                }
                break;
            }
        }
        while i > 0 {
            let parent = (i - 1) / 2;
            if heap[parent] <= last {
                break;
            }
            heap[i] = heap[parent];
            i = parent;
        }
        heap[i] = last;
    }
}

/// A FIFO of entries in order (std's ring buffer; it keeps its capacity, so steady
/// state allocates nothing), and the entry pushed last.
#[derive(Debug, Default)]
struct Lane {
    fifo: VecDeque<Entry>,
    /// The entry pushed last (0 before any).
    last: Entry,
}

impl Lane {
    #[inline]
    fn push_back(&mut self, entry: Entry) {
        self.fifo.push_back(entry);
        self.last = entry;
    }

    /// The first entry, `NONE` when empty.
    #[inline]
    fn front(&self) -> Entry {
        self.fifo.front().copied().unwrap_or(NONE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_scheduling_order() {
        let mut q = EventQueue::with_capacity(8);
        for target in 0..100 {
            q.push(5, EventKind::MemberDone, target);
        }
        q.push(1, EventKind::Dispatch, 999);
        assert_eq!(q.pop().unwrap().target, 999);
        for target in 0..100 {
            assert_eq!(q.pop().unwrap().target, target);
        }
        assert!(q.pop().is_none());
    }

    #[test]
    fn interleaved_pushes_and_pops_follow_time_then_scheduling_order() {
        // As a simulation schedules: never before the last event out, often at it,
        // events of every queue (the first slot, the lanes, the heap) interleaved.
        // Sequence numbers run out every 1000 events: numbering starts again often.
        let mut q = EventQueue {
            seq_limit: 1000,
            ..EventQueue::default()
        };
        let mut reference: Vec<(u64, u32)> = Vec::new();
        let mut rng = crate::rng::Rng::new(11);
        let mut now = 0;
        for target in 0..50_000u32 {
            for _ in 0..rng.below(3) {
                let time = now + [0, 0, 1, rng.below(50)][rng.below(4) as usize];
                // Kinds with a lane (taken when in order, else the heap) and without.
                let kind = KINDS[[0, 1, 2, 8][rng.below(4) as usize]];
                q.push(time, kind, target);
                reference.push((time, target));
            }
            if rng.below(2) == 0 || target % 1000 == 999 {
                while let Some(e) = q.pop() {
                    // The earliest pending, first scheduled among equal times.
                    let best = (0..reference.len())
                        .min_by_key(|&i| (reference[i].0, i))
                        .expect("the queue and the reference agree");
                    assert_eq!((e.time_ns, e.target), reference.remove(best));
                    now = e.time_ns;
                    if rng.below(3) == 0 {
                        break;
                    }
                }
            }
            assert_eq!(q.len(), reference.len());
        }
    }

    #[test]
    fn pops_in_time_order() {
        let mut q = EventQueue::default();
        let mut rng = crate::rng::Rng::new(7);
        for i in 0..10_000 {
            q.push(rng.below(1000), EventKind::MemberDone, i);
        }
        // Targets were scheduled in increasing order: they break ties.
        let mut last = (0, 0);
        while let Some(e) = q.pop() {
            assert!((e.time_ns, e.target) >= last);
            last = (e.time_ns, e.target);
        }
    }
}
