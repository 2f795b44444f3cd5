//! The controller's request path as events: a host request planned into member
//! operations with the layout's planner, the CPU charged for the request and each member
//! operation (or FastPath's cut-through cost), parity run on its engine, member
//! operations cut into commands and queued at each drive's port while the drive's
//! command queue is full, and data carried across the bus and the read and write paths.
//!
//! ```text
//! ControllerArrive ─(cpu)─► Dispatch ─► reads ─► MemberDone ─► parity ─► writes
//!                                                     │                       │
//!                                         HostComplete ◄── (bus, paths) ◄─────┘
//! ```

use super::read_balance::MdRaid10Nearest;
use super::{op_count, CommandSplit};
use crate::drive::DriveModel;
use crate::event_queue::EventKind;
use crate::scenario::ReadBalance;
use crate::simulation::{MemberOp, Request, Simulation};
use raidlab_layout::{LeastOutstanding, Level, MemberSet, Plan, Request as PlanRequest};

impl Simulation {
    /// Plan request `slot` into its member reads and writes; returns the member
    /// operation count the controller pays for.
    pub(crate) fn plan_request(&mut self, slot: u32) -> u64 {
        let r = self.requests[slot as usize];
        let failed = self.failed_for(r.offset_bytes);
        let request = PlanRequest {
            offset_bytes: r.offset_bytes,
            len_bytes: r.len_bytes,
            write: r.write,
        };
        let plan = &mut self.plans[slot as usize];
        let planned = match self.read_balance {
            ReadBalance::RoundRobin => {
                self.layout
                    .plan(request, &failed, &mut self.round_robin, plan)
            }
            ReadBalance::LeastOutstanding => self.layout.plan(
                request,
                &failed,
                &mut LeastOutstanding::new(&self.member_load),
                plan,
            ),
            ReadBalance::Md if self.layout.level() == Level::Raid10 => self.layout.plan(
                request,
                &failed,
                &mut MdRaid10Nearest::new(&self.member_load, &self.member_head_bytes),
                plan,
            ),
            ReadBalance::Md => self.layout.plan(
                request,
                &failed,
                &mut LeastOutstanding::new(&self.member_load),
                plan,
            ),
        };
        planned.expect("a validated array tolerates its failures");
        // Only a host request's data crosses the bus to the host: the controller's own
        // reads (read-ahead segments) stop in its buffer, and a hit crosses the bus then.
        let carry_per_op = slot < self.host_slots && !r.write && plan.read_bytes() == r.len_bytes;
        self.requests[slot as usize].carry_per_op = carry_per_op;
        op_count(plan, self.controller.split)
    }

    /// The failed set a request at `offset_bytes` sees: a member being rebuilt is
    /// whole again below the rebuild's frontier.
    fn failed_for(&self, offset_bytes: u64) -> MemberSet {
        let mut failed = self.failed;
        if let Some(rb) = &self.rebuild {
            if rb.finished_ns.is_some()
                || self.layout.locate(offset_bytes).offset_bytes < rb.next_offset_bytes
            {
                failed.remove(rb.member);
            }
        }
        failed
    }

    pub(crate) fn controller_arrive(&mut self, slot: u32) {
        self.paths[slot as usize].controller_ns = self.now_ns;
        let r = self.requests[slot as usize];
        if r.trim {
            self.trim_arrive(slot);
            return;
        }
        if self.controller.write_cache.is_some() && self.cache_serves(slot) {
            return;
        }
        if !r.write && self.controller.read_ahead.is_some() && self.read_ahead_serves(slot) {
            return;
        }
        let ops = self.plan_request(slot);
        match self.fastpath_cost(&r, ops) {
            Some(cost) => {
                let (_, ready) = self.controller.cpu.reserve(self.now_ns, cost);
                self.queue.push(ready, EventKind::Dispatch, slot);
            }
            None => {
                let lead_ns =
                    self.controller.request_overhead_ns + self.controller.cache_overhead_ns;
                self.charge_and_post(slot, lead_ns, ops);
            }
        }
    }

    /// Charge the controller's CPU for request `slot`: `lead_ns`, then
    /// `member_op_overhead_ns` for each of its `ops` member commands. Batch dispatch
    /// sends the commands once all are built; serial dispatch posts each as it is
    /// built: the first once the lead is done, each next one a member operation's cost
    /// later, its bookkeeping after its posting. So a request on one member waits only
    /// for the lead, and the CPU stays busy for the whole either way.
    pub(crate) fn charge_and_post(&mut self, slot: u32, lead_ns: u64, ops: u64) {
        let per_op = self.controller.member_op_overhead_ns;
        let (start, end) = self
            .controller
            .cpu
            .reserve(self.now_ns, lead_ns + ops * per_op);
        if !self.controller.post_serially {
            self.queue.push(end, EventKind::Dispatch, slot);
            return;
        }
        self.requests[slot as usize].post_gap_ns = if ops > 1 { per_op } else { 0 };
        self.queue.push(start + lead_ns, EventKind::Dispatch, slot);
    }

    /// The controller's cost for `r` (planned into `ops` member operations) when
    /// FastPath takes it: small reads (and RAID 0 writes) of an optimal array go down
    /// the cut-through path at its own per-operation cost. None: the normal path.
    fn fastpath_cost(&self, r: &Request, ops: u64) -> Option<u64> {
        let per_op = self.controller.fastpath_overhead_ns?;
        let eligible = if r.write {
            self.controller.fastpath_writes
        } else {
            self.controller.fastpath_reads
        };
        (eligible
            && r.len_bytes <= self.layout.stripe_unit_bytes()
            && self.failed.is_empty()
            && self.rebuild.is_none())
        .then_some(per_op * ops)
    }

    /// A host discard: the controller passes it on to the members through the layout,
    /// or (no passthrough) completes it itself, and the drives never learn of it.
    fn trim_arrive(&mut self, slot: u32) {
        let r = self.requests[slot as usize];
        // A controller that passes TRIM on knows the data is dead: dirty data it still
        // holds for the range is dropped rather than destaged.
        if self.controller.members_take_trim && self.controller.write_cache.is_some() {
            self.discard_cached(r.offset_bytes, r.offset_bytes + r.len_bytes);
        }
        let mut cost = self.controller.request_overhead_ns;
        let mut ops = 0;
        if self.controller.members_take_trim {
            let failed = self.failed_for(r.offset_bytes);
            let plan = &mut self.plans[slot as usize];
            self.layout
                .trim_plan(
                    PlanRequest {
                        offset_bytes: r.offset_bytes,
                        len_bytes: r.len_bytes,
                        write: false,
                    },
                    &failed,
                    plan,
                )
                .expect("a validated array tolerates its failures");
            ops = plan.writes.len() as u64;
            cost += ops * self.controller.member_op_overhead_ns;
        }
        self.requests[slot as usize].carry_per_op = false;
        let (_, ready) = self.controller.cpu.reserve(self.now_ns, cost);
        let next = if ops == 0 {
            EventKind::HostComplete
        } else {
            EventKind::Dispatch
        };
        self.queue.push(ready, next, slot);
    }

    /// The host deleted the last `percent` of the array before the run: its discard
    /// goes through the same layout rules as a runtime TRIM, untimed, when the
    /// controller passes discards on.
    pub(crate) fn discard_deleted(&mut self, percent: f64) {
        if !self.controller.members_take_trim {
            return;
        }
        let capacity = self.layout.capacity_bytes();
        let start = ((capacity as f64 * (1.0 - percent / 100.0)) as u64).div_ceil(512) * 512;
        // Planned in pieces so a parity level's per-stripe plan stays small.
        let piece = self
            .layout
            .full_stripe_bytes()
            .max(self.layout.stripe_unit_bytes())
            * 4096;
        let failed = self.failed;
        let mut plan = Plan::new();
        let mut at = start;
        while at < capacity {
            let len = piece.min(capacity - at);
            let req = PlanRequest {
                offset_bytes: at,
                len_bytes: len,
                write: false,
            };
            self.layout
                .trim_plan(req, &failed, &mut plan)
                .expect("a validated array tolerates its failures");
            for e in &plan.writes {
                if let DriveModel::Ssd(ssd) = &mut self.drives[e.member as usize].model {
                    ssd.discard(e.offset_bytes, e.len_bytes);
                }
            }
            at += len;
        }
    }

    /// Send a planned request's first phase to the drives: its member reads, or, with
    /// none, its parity work and writes.
    pub(crate) fn dispatch(&mut self, slot: u32) {
        let r = self.requests[slot as usize];
        {
            let req = &mut self.requests[slot as usize];
            req.done_ns = self.now_ns;
            req.link_start_ns = u64::MAX;
            req.member_ios = 0;
            req.member_bytes = 0;
            req.writing = false;
            let path = &mut self.paths[slot as usize];
            path.link_ns = 0;
            path.drive_ns = 0;
            path.phase_link_ns = 0;
            path.phase_drive_ns = 0;
        }
        if r.write && !r.internal {
            let gate = self.host_data_down(r.len_bytes);
            self.requests[slot as usize].data_ready_ns = gate;
        }
        if self.plans[slot as usize].reads.is_empty() {
            self.start_writes(slot);
        } else {
            self.issue_phase(slot, false);
        }
    }

    /// Compute parity (if any) and then send the writes.
    fn start_writes(&mut self, slot: u32) {
        self.requests[slot as usize].writing = true;
        let now = self.now_ns;
        let ready = self.compute_parity(slot, now);
        if ready > now {
            self.queue.push(ready, EventKind::WritePhase, slot);
        } else {
            self.issue_phase(slot, true);
        }
    }

    /// Run a plan's parity or reconstruction work on the controller's parity engine
    /// (hardware XOR, or the host CPU for md), charged per byte it consumes.
    fn compute_parity(&mut self, slot: u32, from_ns: u64) -> u64 {
        let source_bytes = self.plans[slot as usize].parity_source_bytes;
        match self.controller.parity.as_mut() {
            Some(engine) if source_bytes > 0 => engine.carry(source_bytes, from_ns, from_ns),
            _ => from_ns,
        }
    }

    /// Send one phase's member operations, split at the controller's largest transfer:
    /// all at once, or, when the request's commands are posted as they are built
    /// (`post_gap_ns` > 0), one after the other in the host's address order.
    pub(crate) fn issue_phase(&mut self, slot: u32, write: bool) {
        let trim = self.requests[slot as usize].trim;
        // A discard carries no data: one command per member range, never split.
        let split = if trim {
            CommandSplit {
                max_bytes: u64::MAX,
                strip_bytes: u64::MAX,
            }
        } else {
            self.controller.split
        };
        let gap_ns = std::mem::take(&mut self.requests[slot as usize].post_gap_ns);
        let (pending, bytes) = if gap_ns > 0 {
            self.post_phase(slot, write, split, gap_ns)
        } else {
            self.send_phase(slot, write, split)
        };
        debug_assert!(pending > 0, "a phase has at least one member operation");
        let req = &mut self.requests[slot as usize];
        req.pending = pending;
        req.member_ios += pending;
        req.member_bytes += bytes;
    }

    /// Every command of a phase to its drive now, extent by extent; returns the
    /// commands and bytes sent.
    fn send_phase(&mut self, slot: u32, write: bool, split: CommandSplit) -> (u32, u64) {
        let mut pending = 0;
        let mut bytes = 0;
        let count = self.phase_extents(slot, write);
        for i in 0..count {
            let plan = &self.plans[slot as usize];
            let e = if write { plan.writes[i] } else { plan.reads[i] };
            let mut at = 0;
            while at < e.len_bytes {
                let len = split.next_len(e.offset_bytes + at, e.len_bytes - at);
                let id = self.new_op(slot, e.member, e.offset_bytes + at, len, write, self.now_ns);
                pending += 1;
                bytes += len;
                self.submit_to_drive(id);
                at += len;
            }
        }
        (pending, bytes)
    }

    /// A phase's commands posted one every `gap_ns`, the first now, taking one command
    /// from each extent in turn from the member of the request's first byte (for a
    /// striped request, the order of the host's addresses); returns the commands and
    /// bytes posted.
    fn post_phase(
        &mut self,
        slot: u32,
        write: bool,
        split: CommandSplit,
        gap_ns: u64,
    ) -> (u32, u64) {
        let count = self.phase_extents(slot, write);
        let first_member = self
            .layout
            .locate(self.requests[slot as usize].offset_bytes)
            .member;
        let first = {
            let plan = &self.plans[slot as usize];
            let extents = if write { &plan.writes } else { &plan.reads };
            extents
                .iter()
                .position(|e| e.member == first_member)
                .unwrap_or(0)
        };
        let mut cursors = std::mem::take(&mut self.post_cursors);
        cursors.clear();
        cursors.resize(count, 0);
        let (mut pending, mut bytes) = (0u32, 0u64);
        let mut posted_any = true;
        while posted_any {
            posted_any = false;
            for step in 0..count {
                let i = (first + step) % count;
                let plan = &self.plans[slot as usize];
                let e = if write { plan.writes[i] } else { plan.reads[i] };
                let at = cursors[i];
                if at >= e.len_bytes {
                    continue;
                }
                let len = split.next_len(e.offset_bytes + at, e.len_bytes - at);
                cursors[i] += len;
                posted_any = true;
                let post_ns = self.now_ns + u64::from(pending) * gap_ns;
                let id = self.new_op(slot, e.member, e.offset_bytes + at, len, write, post_ns);
                if pending == 0 {
                    self.submit_to_drive(id);
                } else {
                    self.queue.push(post_ns, EventKind::MemberSubmit, id);
                }
                pending += 1;
                bytes += len;
            }
        }
        self.post_cursors = cursors;
        (pending, bytes)
    }

    /// Extents of a phase of request `slot`'s plan: its writes or its reads.
    fn phase_extents(&self, slot: u32, write: bool) -> usize {
        let plan = &self.plans[slot as usize];
        if write {
            plan.writes.len()
        } else {
            plan.reads.len()
        }
    }

    /// A member operation of request `slot` in the op table, handed to its drive at
    /// `submit_ns`; returns its id.
    fn new_op(
        &mut self,
        slot: u32,
        drive: u32,
        offset_bytes: u64,
        len_bytes: u64,
        write: bool,
        submit_ns: u64,
    ) -> u32 {
        let trim = self.requests[slot as usize].trim;
        let op = MemberOp {
            request: slot,
            drive,
            offset_bytes,
            len_bytes,
            write: write && !trim,
            trim,
            link_start_ns: 0,
            submit_ns,
        };
        match self.free_ops.pop() {
            Some(id) => {
                self.ops[id as usize] = op;
                id
            }
            None => {
                self.ops.push(op);
                (self.ops.len() - 1) as u32
            }
        }
    }

    /// Host write data crossing the bus and the controller's write path.
    pub(crate) fn host_data_down(&mut self, len: u64) -> u64 {
        let now = self.now_ns;
        let mut t = now;
        if let Some(bus) = self.controller.bus_down.as_mut() {
            t = t.max(bus.carry(len, now, now));
        }
        if let Some(path) = self.controller.write_path.as_mut() {
            t = t.max(path.carry(len, now, now));
        }
        t
    }

    /// Read data crossing the controller's read path and the bus to the host, overlapping
    /// the transfer that fed it.
    fn host_data_up(&mut self, len: u64, feed_start_ns: u64, feed_end_ns: u64) -> u64 {
        let mut t = feed_end_ns;
        if let Some(path) = self.controller.read_path.as_mut() {
            t = t.max(path.carry(len, feed_start_ns, feed_end_ns));
        }
        if let Some(bus) = self.controller.bus_up.as_mut() {
            t = t.max(bus.carry(len, feed_start_ns, feed_end_ns));
        }
        t
    }

    /// A new member operation for its drive: counted in the member's load until done.
    pub(crate) fn submit_to_drive(&mut self, id: u32) {
        let drive = self.ops[id as usize].drive;
        self.member_load[drive as usize] += 1;
        self.send_to_drive(id);
    }

    /// Hand an operation to its drive, or queue it at the port while the drive's
    /// command queue is full.
    fn send_to_drive(&mut self, id: u32) {
        let op = self.ops[id as usize];
        let drive = &mut self.drives[op.drive as usize];
        if drive.outstanding >= drive.ncq_depth {
            drive.waiting.push_back(id);
            return;
        }
        let now = self.now_ns;
        // A command waits on the drive's queued-command path only behind commands sent
        // earlier: the strips of one request, sent together, arrive as one burst.
        if drive.burst_ns != now {
            drive.burst_ns = now;
            drive.burst_len = 0;
        }
        let queued = drive.outstanding > drive.burst_len;
        drive.burst_len += 1;
        drive.outstanding += 1;
        match &mut drive.model {
            DriveModel::Ssd(ssd) => {
                let (link_start, done) = if op.trim {
                    let done = ssd.trim(now, op.offset_bytes, op.len_bytes, queued);
                    (done, done)
                } else if op.write {
                    ssd.write(now, op.offset_bytes, op.len_bytes, queued)
                } else {
                    ssd.read(now, op.offset_bytes, op.len_bytes, queued)
                };
                self.ops[id as usize].link_start_ns = link_start;
                self.queue.push(done, EventKind::MemberDone, id);
            }
            DriveModel::Hdd(hdd) => {
                if let Some(s) = hdd.submit(now, id, op.offset_bytes, op.len_bytes, op.write) {
                    self.ops[s.op as usize].link_start_ns = s.link_start_ns;
                    self.queue.push(s.done_ns, EventKind::MemberDone, s.op);
                }
            }
        }
    }

    pub(crate) fn member_done(&mut self, id: u32) {
        let op = self.ops[id as usize];
        let now = self.now_ns;
        self.member_load[op.drive as usize] -= 1;
        if !op.trim {
            self.member_head_bytes[op.drive as usize] = op.offset_bytes + op.len_bytes;
        }
        let drive = &mut self.drives[op.drive as usize];
        drive.outstanding -= 1;
        if let DriveModel::Hdd(hdd) = &mut drive.model {
            if let Some(s) = hdd.complete(now) {
                self.ops[s.op as usize].link_start_ns = s.link_start_ns;
                self.queue.push(s.done_ns, EventKind::MemberDone, s.op);
            }
        }
        if let Some(next) = self.drives[op.drive as usize].waiting.pop_front() {
            self.send_to_drive(next);
        }
        self.free_ops.push(id);
        // Member data behind the uplink crosses it too, overlapping the drive's link.
        let through = self.uplink_carry(&op, now);
        let req = &mut self.requests[op.request as usize];
        let done = if op.write {
            through.max(req.data_ready_ns)
        } else if req.carry_per_op {
            let link_start = op.link_start_ns.min(now);
            self.host_data_up(op.len_bytes, link_start, through)
        } else {
            req.link_start_ns = req.link_start_ns.min(op.link_start_ns);
            through
        };
        let (link_ns, drive_ns) = self.op_stages(&op, now, done);
        let path = &mut self.paths[op.request as usize];
        let req = &mut self.requests[op.request as usize];
        if done >= req.done_ns {
            path.phase_link_ns = link_ns;
            path.phase_drive_ns = drive_ns;
        }
        req.done_ns = req.done_ns.max(done);
        req.pending -= 1;
        if req.pending > 0 {
            return;
        }
        path.link_ns += path.phase_link_ns;
        path.drive_ns += path.phase_drive_ns;
        path.phase_link_ns = 0;
        path.phase_drive_ns = 0;
        let slot = op.request;
        let r = *req;
        if !r.writing && !self.plans[slot as usize].writes.is_empty() {
            // All reads of a write are in: parity, then the writes.
            self.start_writes(slot);
            return;
        }
        let t = if !r.write && !r.trim && !r.carry_per_op && !self.is_rebuild_slot(slot) {
            // Degraded reads: the lost chunk is reconstructed from the survivors, then
            // the host gets its bytes.
            let rebuilt = self.compute_parity(slot, r.done_ns);
            if slot < self.host_slots {
                self.host_data_up(r.len_bytes, r.link_start_ns.min(rebuilt), rebuilt)
            } else {
                rebuilt
            }
        } else {
            r.done_ns
        };
        self.queue.push(t, EventKind::HostComplete, slot);
    }

    /// When member operation `op`'s data, done at its drive at `now_ns`, is through
    /// the uplink its member sits behind (`now_ns` for members on their own path and
    /// for discards, which carry no data).
    fn uplink_carry(&mut self, op: &MemberOp, now_ns: u64) -> u64 {
        if op.trim || op.drive < self.controller.uplink_first_member {
            return now_ns;
        }
        let uplink = if op.write {
            self.controller.uplink_down.as_mut()
        } else {
            self.controller.uplink_up.as_mut()
        };
        match uplink {
            Some(path) => path.carry(op.len_bytes, op.link_start_ns.min(now_ns), now_ns),
            None => now_ns,
        }
    }

    /// Where member operation `op`'s time went, done at the drive at `now_ns` and
    /// for its request at `done_ns`: (link, drive). The link is its transfer on the
    /// drive's link plus the wait for the controller's paths and bus after it; the
    /// drive is the rest of its time since it was handed over.
    fn op_stages(&self, op: &MemberOp, now_ns: u64, done_ns: u64) -> (u64, u64) {
        let transfer_ns = if op.trim {
            0
        } else {
            match &self.drives[op.drive as usize].model {
                DriveModel::Hdd(hdd) => hdd.link_transfer_ns(op.len_bytes),
                DriveModel::Ssd(ssd) => ssd.link_transfer_ns(op.len_bytes),
            }
        };
        let at_drive_ns = now_ns - op.submit_ns;
        let transfer_ns = transfer_ns.min(at_drive_ns);
        debug_assert!(
            done_ns >= now_ns,
            "a request completes after its member operation"
        );
        (transfer_ns + (done_ns - now_ns), at_drive_ns - transfer_ns)
    }
}
