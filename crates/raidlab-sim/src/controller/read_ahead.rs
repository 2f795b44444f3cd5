//! Controller read-ahead: a window of consecutive segments fetched ahead of a
//! sequential read stream (or after every read, with "always"), each segment the
//! controller's own request in a slot after the host's. A read the window covers is a
//! hit: it pays the controller's hit cost and crosses the bus, without touching a
//! drive.
//!
//! Two ways of sizing the window. A driver such as Intel RST keeps segments of at least
//! the stream's request size in flight ahead of it, so large sequential reads are read
//! ahead too. Hardware RAID firmware reads ahead only to the end of the stripe unit a
//! read ends in (ServeRAID and Adaptec manuals: the controller moves data to its cache
//! "in increments equal to the stripe-unit size"; Intel's RAID tuning guide: read-ahead
//! "will only make difference if the typical read request size is smaller than the
//! stripe width"): small sequential reads then hit the rest of the unit, and reads of
//! whole stripe units gain nothing (`within_stripe_unit`).

use super::{ReadAhead, Segment};
use crate::event_queue::EventKind;
use crate::simulation::{Request, Simulation};

impl ReadAhead {
    /// Do window segments cover `[start, end)` without a gap?
    fn covers(&self, start: u64, end: u64) -> bool {
        let mut reached = start;
        for s in &self.window {
            if s.start <= reached && s.end > reached {
                reached = s.end;
                if reached >= end {
                    return true;
                }
            }
        }
        false
    }

    fn ready_for(&self, start: u64, end: u64) -> bool {
        self.window
            .iter()
            .filter(|s| s.start < end && s.end > start)
            .all(|s| s.ready)
    }
}

impl Simulation {
    /// Serve a read from the read-ahead window if it can, and keep the window ahead of
    /// a sequential stream. Returns whether the read was taken care of.
    ///
    /// The window holds segments fetched ahead of the furthest byte the host has asked
    /// for; a segment is at least the read-ahead size and at least the stream's request
    /// size, so large sequential reads are read ahead too (as Intel RST does).
    pub(crate) fn read_ahead_serves(&mut self, slot: u32) -> bool {
        let r = self.requests[slot as usize];
        let end = r.offset_bytes + r.len_bytes;
        let ra = self
            .controller
            .read_ahead
            .as_mut()
            .expect("read-ahead configured");
        let sequential = r.offset_bytes == ra.expect_offset;
        ra.expect_offset = end;
        if ra.covers(r.offset_bytes, end) {
            ra.hits += 1;
            let ready_now = ra.ready_for(r.offset_bytes, end);
            if !ready_now {
                ra.waiters.push(slot);
            }
            let (_, ready) = self
                .controller
                .cpu
                .reserve(self.now_ns, self.controller.read_hit_overhead_ns);
            self.requests[slot as usize].hit_ready_ns = ready;
            if ready_now {
                self.queue.push(ready, EventKind::ReadHit, slot);
            }
            self.top_up_read_ahead(end, r.len_bytes);
            return true;
        }
        if sequential {
            // The stream outran the window: this read goes to the drives and the window
            // continues beyond it.
            ra.window_end = ra.window_end.max(end);
            self.top_up_read_ahead(end, r.len_bytes);
        } else if ra.always {
            // "Always" reads ahead of a random read too: the fetch is usually wasted.
            self.clear_read_ahead();
            self.controller.read_ahead.as_mut().expect("ra").window_end = end;
            self.top_up_read_ahead(end, r.len_bytes);
        } else {
            self.clear_read_ahead();
            self.controller.read_ahead.as_mut().expect("ra").window_end = end;
        }
        false
    }

    /// Drop the window; reads waiting on it go the normal way.
    fn clear_read_ahead(&mut self) {
        let ra = self
            .controller
            .read_ahead
            .as_mut()
            .expect("read-ahead configured");
        while let Some(s) = ra.window.pop_front() {
            if s.ready {
                ra.free_slots.push(s.slot);
            }
            // In-flight segments free their slot when they complete.
        }
        let waiters = std::mem::take(&mut ra.waiters);
        for slot in waiters {
            let ops = self.plan_request(slot);
            self.charge_and_post(slot, self.controller.request_overhead_ns, ops);
        }
    }

    /// Release consumed segments and fetch new ones up to the window size.
    fn top_up_read_ahead(&mut self, consumed_end: u64, request_bytes: u64) {
        let capacity = self.layout.capacity_bytes();
        let unit = self.layout.stripe_unit_bytes();
        loop {
            let ra = self
                .controller
                .read_ahead
                .as_mut()
                .expect("read-ahead configured");
            while ra
                .window
                .front()
                .is_some_and(|s| s.ready && s.end <= consumed_end)
            {
                let s = ra.window.pop_front().expect("front exists");
                ra.free_slots.push(s.slot);
            }
            if ra.window.len() >= ra.segments_max || ra.window_end >= capacity {
                return;
            }
            let start = ra.window_end;
            let end = if ra.within_stripe_unit {
                // The rest of the stripe unit `start` is in; nothing at a boundary.
                if start.is_multiple_of(unit) {
                    return;
                }
                start.next_multiple_of(unit).min(capacity)
            } else {
                (start + ra.segment_bytes.max(request_bytes)).min(capacity)
            };
            let Some(slot) = ra.free_slots.pop() else {
                return;
            };
            debug_assert!(end > start, "a read-ahead segment holds data");
            ra.window.push_back(Segment {
                start,
                end,
                ready: false,
                slot,
            });
            ra.window_end = end;
            self.requests[slot as usize] = Request {
                offset_bytes: start,
                len_bytes: end - start,
                write: false,
                issued_ns: self.now_ns,
                ..Request::default()
            };
            let ops = self.plan_request(slot);
            self.charge_and_post(slot, 0, ops);
        }
    }

    /// A read-ahead segment has arrived: serve the reads waiting for it.
    pub(crate) fn segment_ready(&mut self, slot: u32) {
        let now = self.now_ns;
        let ra = self
            .controller
            .read_ahead
            .as_mut()
            .expect("read-ahead configured");
        match ra.window.iter_mut().find(|s| s.slot == slot) {
            Some(s) => s.ready = true,
            None => ra.free_slots.push(slot),
        }
        let mut i = 0;
        while i < ra.waiters.len() {
            let w = ra.waiters[i];
            let r = self.requests[w as usize];
            if ra.ready_for(r.offset_bytes, r.offset_bytes + r.len_bytes) {
                ra.waiters.swap_remove(i);
                self.queue
                    .push(now.max(r.hit_ready_ns), EventKind::ReadHit, w);
            } else {
                i += 1;
            }
        }
    }

    /// A read served from the read-ahead buffer crosses the bus to the host.
    pub(crate) fn read_hit(&mut self, slot: u32) {
        let len = self.requests[slot as usize].len_bytes;
        let now = self.now_ns;
        let t = match self.controller.bus_up.as_mut() {
            Some(bus) => bus.carry(len, now, now),
            None => now,
        };
        self.queue.push(t, EventKind::HostComplete, slot);
    }
}
