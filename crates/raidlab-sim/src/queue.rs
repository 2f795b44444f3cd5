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
}

/// One scheduled event, 24 bytes.
#[derive(Debug, Clone, Copy)]
pub struct Event {
    /// When, in simulated nanoseconds.
    pub time_ns: u64,
    seq: u64,
    /// What.
    pub kind: EventKind,
    /// Which request, member operation or drive.
    pub target: u32,
}

impl Event {
    #[inline]
    fn key(&self) -> (u64, u64) {
        (self.time_ns, self.seq)
    }
}

/// Min-heap of events with FIFO tie-breaking. Grows to the peak number of pending
/// events and never shrinks, so steady-state scheduling allocates nothing.
///
/// The earliest event may wait in `first`, beside the heap: an event scheduled ahead
/// of everything pending (a completion at the present instant, a short computation)
/// is the next one out, and then goes without a push and a pop of the heap. Events
/// come out in (time, sequence) order either way, a total order.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: Vec<Event>,
    /// Earlier than every event in `heap`, when set.
    first: Option<Event>,
    seq: u64,
}

impl EventQueue {
    /// An empty queue with room for `capacity` events.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            heap: Vec::with_capacity(capacity),
            first: None,
            seq: 0,
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
        let event = Event {
            time_ns,
            seq: self.seq,
            kind,
            target,
        };
        self.seq += 1;
        match self.first {
            None => {
                if self.heap.first().is_none_or(|top| event.key() < top.key()) {
                    self.first = Some(event);
                    return;
                }
            }
            // Later than the first event (always, at an equal time): into the heap.
            Some(first) if event.key() > first.key() => {}
            Some(first) => {
                self.first = Some(event);
                self.heap_push(first);
                return;
            }
        }
        self.heap_push(event);
    }

    /// Put `event` in the heap.
    #[inline]
    fn heap_push(&mut self, event: Event) {
        self.heap.push(event);
        let mut i = self.heap.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[parent].key() <= event.key() {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = event;
    }

    /// Remove and return the earliest event (FIFO among equal times).
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        if let Some(first) = self.first.take() {
            return Some(first);
        }
        let last = self.heap.pop()?;
        let heap = &mut self.heap[..];
        let n = heap.len();
        if n == 0 {
            return Some(last);
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
        Some(top)
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
        let mut q = EventQueue::default();
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
        let mut last = (0, 0);
        while let Some(e) = q.pop() {
            assert!(e.key() >= last);
            last = e.key();
        }
    }
}
