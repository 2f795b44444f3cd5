//! The event queue: a binary min-heap on (time, sequence). The sequence number breaks
//! ties first-in first-out, so equal-time events always run in the order they were
//! scheduled and a run is reproducible bit for bit.

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

/// An event as the heap holds it, 16 bytes: its time, then its sequence number, kind
/// and target in one word, the sequence number on top. Sequence numbers are unique,
/// so comparing (time, word) orders entries by (time, sequence).
#[derive(Debug, Clone, Copy)]
struct Entry {
    time_ns: u64,
    tag: u64,
}

impl Entry {
    #[inline]
    fn key(&self) -> (u64, u64) {
        (self.time_ns, self.tag)
    }

    #[inline]
    fn event(self) -> Event {
        Event {
            time_ns: self.time_ns,
            kind: KINDS[(self.tag >> 32) as usize & 0xf],
            target: self.tag as u32,
        }
    }
}

/// Min-heap of events with FIFO tie-breaking. Grows to the peak number of pending
/// events and never shrinks, so steady-state scheduling allocates nothing.
///
/// The earliest event may wait in `first`, beside the heap: an event scheduled ahead
/// of everything pending (a completion at the present instant, a short computation)
/// is the next one out, and then goes without a push and a pop of the heap. Events
/// come out in (time, sequence) order either way, a total order.
///
/// Sequence numbers have 28 bits in an entry. When they run out (every 2^28 events),
/// the pending events are numbered again from 0 in the order they are due, which keeps
/// their order and the order of every later event after them.
#[derive(Debug)]
pub struct EventQueue {
    heap: Vec<Entry>,
    /// Earlier than every entry in `heap`, when set.
    first: Option<Entry>,
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
            seq: 0,
            seq_limit: 1 << (64 - PAYLOAD_BITS),
        }
    }

    /// Pending events.
    pub fn len(&self) -> usize {
        self.heap.len() + usize::from(self.first.is_some())
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
        let entry = Entry {
            time_ns,
            tag: (self.seq << PAYLOAD_BITS) | ((kind as u64) << 32) | u64::from(target),
        };
        debug_assert!(KINDS[kind as usize] == kind);
        self.seq += 1;
        match self.first {
            None => {
                if self.heap.first().is_none_or(|top| entry.key() < top.key()) {
                    self.first = Some(entry);
                    return;
                }
            }
            // Later than the first event (always, at an equal time): into the heap.
            Some(first) if entry.key() > first.key() => {}
            Some(first) => {
                self.first = Some(entry);
                self.heap_push(first);
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
        assert!(
            (pending.len() as u64) < self.seq_limit,
            "fewer pending events than sequence numbers"
        );
        pending.sort_unstable_by_key(Entry::key);
        let payload = (1u64 << PAYLOAD_BITS) - 1;
        for (seq, entry) in pending.iter_mut().enumerate() {
            entry.tag = ((seq as u64) << PAYLOAD_BITS) | (entry.tag & payload);
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
        let key = entry.key();
        let mut i = heap.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if heap[parent].key() <= key {
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
            return Some(first.event());
        }
        let last = self.heap.pop()?;
        let heap = &mut self.heap[..];
        let n = heap.len();
        if n == 0 {
            return Some(last.event());
        }
        let top = heap[0];
        // The last event is among the latest pending: move the hole at the top down
        // along the earlier children to a leaf (one comparison a level), then bring
        // the last event up from there (rarely more than a level).
        let mut i = 0;
        loop {
            let left = 2 * i + 1;
            if left + 1 < n {
                let child = left + usize::from(heap[left + 1].key() < heap[left].key());
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
        let key = last.key();
        while i > 0 {
            let parent = (i - 1) / 2;
            if heap[parent].key() <= key {
                break;
            }
            heap[i] = heap[parent];
            i = parent;
        }
        heap[i] = last;
        Some(top.event())
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
        // As a simulation schedules: never before the last event out, often at it.
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
                q.push(time, EventKind::MemberDone, target);
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
