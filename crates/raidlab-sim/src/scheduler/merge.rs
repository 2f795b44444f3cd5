//! Merging: a host I/O joins a queued request it is adjacent to (back or front),
//! within the largest request, and two requests that come to touch become one.

use super::request_queue::Req;
use super::{Scheduler, SchedulerKind};

impl Scheduler {
    /// Back or front merge of a new host I/O onto a queued request of its queue and
    /// direction, within the largest request; then the grown request merges with a
    /// neighbour it now touches.
    pub(super) fn try_merge(&mut self, slot: u32) -> bool {
        if self.kind == SchedulerKind::None {
            return false;
        }
        let io = self.ios[slot as usize];
        let q = io.queue as usize;
        let max = self.max_request_bytes;
        let fits = |r: &Req| {
            r.write == io.write && r.discard == io.discard && r.end - r.start + io.len_bytes <= max
        };
        // Back merge: a request ending where the I/O starts. Requests are at most
        // `max` long, so only those starting within `max` before it can end there.
        let queue = &self.queues[q];
        let i = queue.sorted.partition_point(|&(s, _)| s < io.offset_bytes);
        let back = queue.sorted[..i]
            .iter()
            .rev()
            .take_while(|&&(s, _)| s.saturating_add(max) >= io.offset_bytes)
            .map(|&(_, l)| l)
            .find(|&l| {
                let r = &self.reqs[l as usize];
                r.end == io.offset_bytes && fits(r)
            });
        if let Some(lead) = back {
            self.reqs[lead as usize].end += io.len_bytes;
            self.chain(lead, slot);
            self.counters.merges += 1;
            let end = self.reqs[lead as usize].end;
            if let Some(next) = self.touching(q, lead, end) {
                self.absorb(q, lead, next);
            }
            return true;
        }
        let front_merges = self.kind != SchedulerKind::MqDeadline || self.deadline.front_merges;
        if !front_merges {
            return false;
        }
        let end = io.offset_bytes + io.len_bytes;
        let queue = &self.queues[q];
        let i = queue.sorted.partition_point(|&(s, _)| s < end);
        let front = queue.sorted[i..]
            .iter()
            .take_while(|&&(s, _)| s == end)
            .map(|&(_, l)| l)
            .find(|&l| fits(&self.reqs[l as usize]));
        let Some(lead) = front else {
            return false;
        };
        // The request's start moves: take it out of the sort and put it back.
        let queue = &mut self.queues[q];
        let key = (self.reqs[lead as usize].start, lead);
        let at = queue.sorted.partition_point(|&k| k < key);
        queue.sorted.remove(at);
        self.reqs[lead as usize].start = io.offset_bytes;
        let key = (io.offset_bytes, lead);
        let at = queue.sorted.partition_point(|&k| k < key);
        queue.sorted.insert(at, key);
        self.chain(lead, slot);
        self.counters.merges += 1;
        if let Some(prev) = self.touching_before(q, lead) {
            self.absorb(q, prev, lead);
        }
        true
    }

    /// Append host I/O `slot` to request `lead`'s chain.
    fn chain(&mut self, lead: u32, slot: u32) {
        let tail = self.reqs[lead as usize].tail;
        self.ios[tail as usize].next = slot;
        self.reqs[lead as usize].tail = slot;
    }

    /// A queued request other than `lead` starting at `end` that may join it.
    fn touching(&self, q: usize, lead: u32, end: u64) -> Option<u32> {
        let r = self.reqs[lead as usize];
        let queue = &self.queues[q];
        let i = queue.sorted.partition_point(|&(s, _)| s < end);
        queue.sorted[i..]
            .iter()
            .take_while(|&&(s, _)| s == end)
            .map(|&(_, l)| l)
            .find(|&l| {
                let n = &self.reqs[l as usize];
                l != lead
                    && n.write == r.write
                    && n.discard == r.discard
                    && n.end - r.start <= self.max_request_bytes
            })
    }

    /// A queued request other than `lead` ending where `lead` starts that may take it.
    fn touching_before(&self, q: usize, lead: u32) -> Option<u32> {
        let r = self.reqs[lead as usize];
        let max = self.max_request_bytes;
        let queue = &self.queues[q];
        let i = queue.sorted.partition_point(|&(s, _)| s < r.start);
        queue.sorted[..i]
            .iter()
            .rev()
            .take_while(|&&(s, _)| s.saturating_add(max) >= r.start)
            .map(|&(_, l)| l)
            .find(|&l| {
                let p = &self.reqs[l as usize];
                l != lead
                    && p.end == r.start
                    && p.write == r.write
                    && p.discard == r.discard
                    && r.end - p.start <= max
            })
    }

    /// Request `gone` (just behind `keep`) joins `keep`: its I/Os, its extent and the
    /// earlier of the two deadlines; its request is freed.
    fn absorb(&mut self, q: usize, keep: u32, gone: u32) {
        let g = self.reqs[gone as usize];
        debug_assert!(self.reqs[keep as usize].start <= g.start);
        self.queues[q].remove(&self.reqs, gone);
        let tail = self.reqs[keep as usize].tail;
        self.ios[tail as usize].next = gone;
        let k = &mut self.reqs[keep as usize];
        k.end = k.end.max(g.end);
        k.tail = g.tail;
        if g.expire_ns < k.expire_ns {
            k.expire_ns = g.expire_ns;
            self.queues[q].remove_fifo(keep);
            self.queues[q].insert_fifo(&self.reqs, keep);
        }
        self.allocated -= 1;
        self.queued -= 1;
        self.counters.merges += 1;
    }
}
