//! mq-deadline's dispatch (block/mq-deadline.c): one-way elevator batches per direction,
//! reads preferred unless writes starve, and expired deadlines served first.

use super::{Scheduler, READ, WRITE};

impl Scheduler {
    /// mq-deadline's choice (`__dd_dispatch_request`): continue the batch in LBA
    /// order; else pick a direction (reads first unless writes starved) and start a
    /// batch at the next request in LBA order, or at the oldest if its deadline has
    /// passed or the elevator reached the end.
    pub(super) fn deadline_pick(&mut self, now_ns: u64) -> Option<u32> {
        if self.batching < self.deadline.fifo_batch {
            let queue = &self.queues[self.last_dir];
            if let Some(lead) = queue.next_from(queue.pos) {
                return Some(self.deadline_take(self.last_dir, lead));
            }
        }
        let reads = !self.queues[READ].fifo.is_empty();
        let writes = !self.queues[WRITE].fifo.is_empty();
        let dir = if reads {
            let starve = writes && {
                let passed_over = self.starved;
                self.starved += 1;
                passed_over >= self.deadline.writes_starved
            };
            if starve {
                WRITE
            } else {
                READ
            }
        } else if writes {
            WRITE
        } else {
            return None;
        };
        if dir == WRITE {
            self.starved = 0;
        }
        let queue = &self.queues[dir];
        let oldest = queue.fifo[0];
        let expired = self.reqs[oldest as usize].expire_ns <= now_ns;
        let lead = match queue.next_from(queue.pos) {
            Some(next) if !expired => next,
            _ => oldest,
        };
        if expired {
            self.counters.expired += 1;
        }
        self.batching = 0;
        Some(self.deadline_take(dir, lead))
    }

    fn deadline_take(&mut self, dir: usize, lead: u32) -> u32 {
        self.batching += 1;
        self.last_dir = dir;
        self.queues[dir].pos = self.reqs[lead as usize].end;
        self.queues[dir].remove(&self.reqs, lead);
        lead
    }
}
