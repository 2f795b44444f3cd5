//! The host's block layer as events: each job issues its next request through the host
//! stack, optionally through the block layer's I/O scheduler, and counts completions
//! once the warm-up is over. A job issues its next request as soon as one completes, so
//! each job keeps its `iodepth` outstanding (closed loop).

use crate::event_queue::EventKind;
use crate::simulation::{Request, Simulation, TRIM};

impl Simulation {
    /// Job of `slot` issues its next request now.
    pub(crate) fn issue(&mut self, slot: u32) {
        let job = &mut self.jobs[self.slot_job[slot as usize] as usize];
        let ask = self.workloads[job.workload as usize].next(&mut self.rng, job);
        self.requests[slot as usize] = Request {
            offset_bytes: ask.offset_bytes,
            len_bytes: ask.len_bytes,
            write: ask.write,
            trim: ask.trim,
            issued_ns: self.now_ns,
            ..Request::default()
        };
        self.queue.push(
            self.now_ns + self.host_overhead_ns,
            self.host_arrival(),
            slot,
        );
    }

    /// Where an issued host request goes after the host stack: the I/O scheduler, or
    /// straight to the controller.
    #[inline]
    pub(crate) fn host_arrival(&self) -> EventKind {
        if self.scheduler.is_some() {
            EventKind::SchedulerInsert
        } else {
            EventKind::ControllerArrive
        }
    }

    /// Whether some workload has not finished its warm-up.
    pub(crate) fn any_warming_up(&self) -> bool {
        self.workloads.iter().any(|w| w.warming_up(0, self.now_ns))
    }

    /// A host request or a read-ahead segment has all its data.
    pub(crate) fn request_complete(&mut self, slot: u32) {
        if self.is_rebuild_slot(slot) {
            self.rebuild_unit_done(slot);
            return;
        }
        let r = self.requests[slot as usize];
        if self.measuring && !r.trim {
            // Member I/O is attributed to the request (or read-ahead segment) it
            // served, so the ratio is exact whatever was in flight at the window edges.
            let dir = usize::from(r.write);
            self.tally.member_ios[dir] += u64::from(r.member_ios);
            self.tally.member_bytes[dir] += r.member_bytes;
            if r.member_ios > 0 {
                self.tally.parity_bytes[dir] += self.plans[slot as usize].parity_bytes;
            }
        }
        if let Some(engine) = &self.controller.write_cache {
            if slot >= engine.first_slot {
                self.destage_done(slot);
                return;
            }
        }
        if slot >= self.host_slots {
            self.segment_ready(slot);
            return;
        }
        if self.scheduler.is_some() {
            self.scheduled_complete(slot);
            return;
        }
        self.host_done(slot);
    }

    /// Host request `slot` has completed: count it and issue the job's next request.
    fn host_done(&mut self, slot: u32) {
        let r = self.requests[slot as usize];
        if self.trace.is_some() {
            self.tally_stages(&r, self.paths[slot as usize]);
            let latency_ns = self.now_ns - r.issued_ns;
            self.workloads[0].record(
                usize::from(r.write),
                r.len_bytes,
                latency_ns,
                self.now_ns - self.start_ns,
            );
            self.trace_slot_free(slot);
            return;
        }
        let w = self.jobs[self.slot_job[slot as usize] as usize].workload as usize;
        self.workloads[w].completed += 1;
        if self.measuring {
            let latency_ns = self.now_ns - r.issued_ns;
            let since_start_ns = self.now_ns - self.start_ns;
            if self.workloads[w].stopped {
                return;
            }
            self.tally_stages(&r, self.paths[slot as usize]);
            let workload = &mut self.workloads[w];
            let dir = if r.trim { TRIM } else { usize::from(r.write) };
            if workload.record(dir, r.len_bytes, latency_ns, since_start_ns) {
                workload.stopped = true;
                workload.end_ns = self.now_ns;
                self.active_workloads -= 1;
                if self.active_workloads == 0 {
                    self.end_ns = self.now_ns;
                    self.stopped = true;
                }
                return;
            }
        } else if !self.any_warming_up() {
            self.begin_measuring();
        }
        self.issue(slot);
    }

    // ----- host I/O scheduler ------------------------------------------------------

    /// A host request reaches the I/O scheduler.
    pub(crate) fn scheduler_insert(&mut self, slot: u32) {
        let r = self.requests[slot as usize];
        // One process per fio job; a trace is one process.
        let process = if self.trace.is_some() {
            0
        } else {
            self.slot_job[slot as usize]
        };
        let now = self.now_ns;
        self.scheduler.as_mut().expect("a scheduler stage").insert(
            slot,
            r.offset_bytes,
            r.len_bytes,
            r.write,
            r.trim,
            process,
            now,
        );
        self.scheduler_pump();
    }

    pub(crate) fn scheduler_timer(&mut self, generation: u32) {
        self.scheduler
            .as_mut()
            .expect("a scheduler stage")
            .timer_fired(generation);
        self.scheduler_pump();
    }

    /// Send the device what the scheduler releases now, and arm its idle timer. A
    /// released request reaches the controller at once (the controller only schedules
    /// events, so it never calls back into the scheduler).
    fn scheduler_pump(&mut self) {
        let now = self.now_ns;
        loop {
            let sched = self.scheduler.as_mut().expect("a scheduler stage");
            let Some((lead, offset_bytes, len_bytes)) = sched.dispatch(now) else {
                break;
            };
            let r = &mut self.requests[lead as usize];
            r.offset_bytes = offset_bytes;
            r.len_bytes = len_bytes;
            self.controller_arrive(lead);
        }
        let sched = self.scheduler.as_mut().expect("a scheduler stage");
        if let Some((at, generation)) = sched.take_timer() {
            self.queue.push(at, EventKind::SchedulerTimer, generation);
        }
        sched.settle(now);
    }

    /// A request the scheduler sent completed: every host request merged into it
    /// completes, each with its own extent and latency.
    fn scheduled_complete(&mut self, lead: u32) {
        let sched = self.scheduler.as_mut().expect("a scheduler stage");
        let mut slot = Some(sched.complete(lead));
        // Merged host I/Os went down the path inside the lead's request.
        let path = self.paths[lead as usize];
        while let Some(s) = slot {
            let sched = self.scheduler.as_ref().expect("a scheduler stage");
            slot = sched.next_in_request(s);
            let (offset_bytes, len_bytes) = sched.own_extent(s);
            let r = &mut self.requests[s as usize];
            r.offset_bytes = offset_bytes;
            r.len_bytes = len_bytes;
            self.paths[s as usize] = path;
            self.host_done(s);
            if self.stopped {
                return;
            }
        }
        self.scheduler_pump();
    }
}
