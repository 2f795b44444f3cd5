//! bfq's dispatch (block/bfq-iosched.c), simplified: one process served alone for its
//! budget or time, and the idle wait for its next request.

use super::Scheduler;

impl Scheduler {
    /// bfq's choice: the process in service keeps the device while it has requests
    /// and budget and time left; once its queue is empty it keeps it while its
    /// requests are in flight and then for `slice_idle`, waiting for its next one.
    pub(super) fn bfq_pick(&mut self, now_ns: u64) -> Option<u32> {
        loop {
            let active = match self.active {
                Some(a) => a,
                None => {
                    let next = self.busy.pop_front()?;
                    self.queues[next as usize].busy = false;
                    self.active = Some(next);
                    self.slice_start_ns = now_ns;
                    self.budget_used_bytes = 0;
                    self.cancel_idle();
                    next
                }
            };
            if self.budget_used_bytes >= self.bfq.max_budget_bytes
                || now_ns - self.slice_start_ns >= self.bfq.timeout_sync_ns
            {
                self.bfq_expire(active);
                continue;
            }
            let queue = &self.queues[active as usize];
            if let Some(&oldest) = queue.fifo.first() {
                let lead = if self.reqs[oldest as usize].expire_ns <= now_ns {
                    oldest
                } else {
                    queue.next_from(queue.pos).unwrap_or(queue.sorted[0].1)
                };
                self.cancel_idle();
                let r = self.reqs[lead as usize];
                self.budget_used_bytes += r.end - r.start;
                let queue = &mut self.queues[active as usize];
                queue.pos = r.end;
                queue.remove(&self.reqs, lead);
                return Some(lead);
            }
            if self.bfq.slice_idle_ns == 0 {
                self.bfq_expire(active);
                continue;
            }
            if queue.in_flight > 0 || self.idling {
                return None;
            }
            self.idling = true;
            self.timer_gen = self.timer_gen.wrapping_add(1);
            self.timer = Some((now_ns + self.bfq.slice_idle_ns, self.timer_gen));
            return None;
        }
    }

    /// The process in service loses the device; back in the round if it has requests.
    fn bfq_expire(&mut self, active: u32) {
        self.active = None;
        self.cancel_idle();
        let queue = &mut self.queues[active as usize];
        if !queue.fifo.is_empty() && !queue.busy {
            queue.busy = true;
            self.busy.push_back(active);
        }
    }

    fn cancel_idle(&mut self) {
        if self.idling {
            self.idling = false;
            self.timer_gen = self.timer_gen.wrapping_add(1);
        }
    }

    /// An idle timer the caller must schedule: (when, generation).
    pub fn take_timer(&mut self) -> Option<(u64, u32)> {
        self.timer.take()
    }

    /// The idle timer of generation `gen` fired: if still idling, the process in
    /// service loses the device.
    pub fn timer_fired(&mut self, gen: u32) {
        if self.idling && gen == self.timer_gen {
            self.counters.idle_expiries += 1;
            if let Some(active) = self.active {
                self.bfq_expire(active);
            }
        }
    }
}
