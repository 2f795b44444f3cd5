//! Write-back as events: host writes acknowledged once in the cache ([`super::cache`]),
//! reads of dirty data served from it, and destages (the controller's own writes,
//! in slots after the read-ahead's and the rebuild's) drain dirty data to the members
//! between the low and high marks. Writes wait for room in arrival order.

use super::DestageEngine;
use crate::event_queue::EventKind;
use crate::simulation::{Request, Simulation};

impl DestageEngine {
    /// Account the time since the last change at the current in-flight count.
    fn account(&mut self, now_ns: u64) {
        self.in_flight_area_ns += u64::from(self.in_flight) * (now_ns - self.in_flight_since_ns);
        self.in_flight_since_ns = now_ns;
    }

    /// Busy time: in-flight destages over time, as a share of the allowed concurrency.
    pub(crate) fn busy_ns(&self) -> u64 {
        self.in_flight_area_ns / u64::from(self.concurrency)
    }
}

impl Simulation {
    /// Writes into the cache (acknowledged once there), reads of dirty data from it.
    /// Returns whether the cache took care of the request.
    pub(crate) fn cache_serves(&mut self, slot: u32) -> bool {
        let r = self.requests[slot as usize];
        let end = r.offset_bytes + r.len_bytes;
        let engine = self.controller.write_cache.as_ref().expect("a write cache");
        if !r.write && !engine.cache.holds(r.offset_bytes, end) {
            return false;
        }
        let cost = self.controller.request_overhead_ns + self.controller.cache_overhead_ns;
        let (_, ready) = self.controller.cpu.reserve(self.now_ns, cost);
        if !r.write {
            let t = match self.controller.bus_up.as_mut() {
                Some(bus) => bus.carry(r.len_bytes, ready, ready),
                None => ready,
            };
            self.queue.push(t, EventKind::HostComplete, slot);
            return true;
        }
        let in_cache = self.host_data_down(r.len_bytes).max(ready);
        self.requests[slot as usize].done_ns = in_cache;
        let engine = self.controller.write_cache.as_mut().expect("a write cache");
        if engine.waiters.is_empty() && engine.cache.has_room(r.len_bytes) {
            engine.cache.insert(r.offset_bytes, r.len_bytes);
            self.queue.push(in_cache, EventKind::HostComplete, slot);
        } else {
            engine.waiters.push_back(slot);
        }
        self.pump_destage();
        true
    }

    /// Start destages while there is dirty data above the low mark and a free slot.
    fn pump_destage(&mut self) {
        loop {
            let engine = self.controller.write_cache.as_mut().expect("a write cache");
            let Some(&slot) = engine.free_slots.last() else {
                return;
            };
            let Some((offset, len)) = engine
                .cache
                .take_destage(engine.max_bytes, engine.align_bytes)
            else {
                return;
            };
            engine.free_slots.pop();
            engine.account(self.now_ns);
            engine.in_flight += 1;
            self.requests[slot as usize] = Request {
                offset_bytes: offset,
                len_bytes: len,
                write: true,
                internal: true,
                issued_ns: self.now_ns,
                ..Request::default()
            };
            let ops = self.plan_request(slot);
            let cost = ops * self.controller.member_op_overhead_ns;
            let (_, ready) = self.controller.cpu.reserve(self.now_ns, cost);
            self.queue.push(ready, EventKind::Dispatch, slot);
        }
    }

    /// A destage reached the members: its room goes to waiting writes, then more destage.
    pub(crate) fn destage_done(&mut self, slot: u32) {
        let len = self.requests[slot as usize].len_bytes;
        let now = self.now_ns;
        let engine = self.controller.write_cache.as_mut().expect("a write cache");
        engine.account(now);
        engine.in_flight -= 1;
        engine.cache.destaged(len);
        engine.free_slots.push(slot);
        self.admit_waiters();
        self.pump_destage();
    }

    /// A TRIM of cached data: the dirty bytes it covers are dropped, not destaged, and
    /// the room they held goes to waiting writes.
    pub(crate) fn discard_cached(&mut self, start: u64, end: u64) {
        let engine = self.controller.write_cache.as_mut().expect("a write cache");
        if engine.cache.discard(start, end) > 0 {
            self.admit_waiters();
        }
    }

    /// Writes waiting for cache room go in, in arrival order, while they fit.
    fn admit_waiters(&mut self) {
        let now = self.now_ns;
        let engine = self.controller.write_cache.as_mut().expect("a write cache");
        while let Some(&waiter) = engine.waiters.front() {
            let r = self.requests[waiter as usize];
            if !engine.cache.has_room(r.len_bytes) {
                break;
            }
            engine.waiters.pop_front();
            engine.cache.insert(r.offset_bytes, r.len_bytes);
            self.queue
                .push(now.max(r.done_ns), EventKind::HostComplete, waiter);
        }
    }
}
