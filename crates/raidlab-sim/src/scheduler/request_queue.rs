//! The scheduler's queues of requests (not the simulator's event queue,
//! `crate::event_queue`): each sorted by LBA and in expiry order.

/// One request: host I/Os merged into one extent, identified by its first I/O's slot.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Req {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) write: bool,
    pub(super) discard: bool,
    /// When it expires (deadline) or its arrival (FIFO order).
    pub(super) expire_ns: u64,
    pub(super) queue: u32,
    /// Last host I/O of its chain.
    pub(super) tail: u32,
}

/// Queued requests of one direction (mq-deadline), one process (bfq) or all (FIFO).
#[derive(Debug, Default)]
pub(super) struct Queue {
    /// (start, lead) in ascending order.
    pub(super) sorted: Vec<(u64, u32)>,
    /// Leads in expiry order (arrival order within one direction).
    pub(super) fifo: Vec<u32>,
    /// Where the last dispatched request of this queue ended.
    pub(super) pos: u64,
    /// Its requests at the device.
    pub(super) in_flight: u32,
    /// bfq: waiting in the round of busy queues.
    pub(super) busy: bool,
}

impl Queue {
    pub(super) fn insert(&mut self, reqs: &[Req], lead: u32) {
        let key = (reqs[lead as usize].start, lead);
        let i = self.sorted.partition_point(|&k| k < key);
        self.sorted.insert(i, key);
        self.insert_fifo(reqs, lead);
    }

    pub(super) fn insert_fifo(&mut self, reqs: &[Req], lead: u32) {
        let expire = reqs[lead as usize].expire_ns;
        let i = self
            .fifo
            .partition_point(|&l| reqs[l as usize].expire_ns <= expire);
        self.fifo.insert(i, lead);
    }

    pub(super) fn remove(&mut self, reqs: &[Req], lead: u32) {
        let key = (reqs[lead as usize].start, lead);
        let i = self.sorted.partition_point(|&k| k < key);
        debug_assert_eq!(self.sorted.get(i), Some(&key), "a queued request is sorted");
        self.sorted.remove(i);
        self.remove_fifo(lead);
    }

    pub(super) fn remove_fifo(&mut self, lead: u32) {
        let i = self
            .fifo
            .iter()
            .position(|&l| l == lead)
            .expect("a queued request is in its FIFO");
        self.fifo.remove(i);
    }

    /// The first request at or after `pos` in LBA order.
    pub(super) fn next_from(&self, pos: u64) -> Option<u32> {
        let i = self.sorted.partition_point(|&(s, _)| s < pos);
        self.sorted.get(i).map(|&(_, l)| l)
    }
}
