//! The RAID controller: its CPU, data paths and settings, and the parts it runs (read-
//! ahead, the write-back cache and its destages, read balancing, a rebuild), as state.
//!
//! This module holds what each part keeps between events; the submodules hold how the
//! parts act, as `impl Simulation` blocks over the whole run's state (the request
//! slots, the event queue, the drives): `dispatch` (the request path from arrival to
//! completion), `write_back`, `read_ahead`, `rebuild`. The state lives here, apart
//! from the handlers, so that the event loop (`crate::simulation`) can hold it without
//! importing the handlers that import the event loop: no import circle.
//!
//! ```text
//! ControllerArrive ─(cpu)─► Dispatch ─► reads ─► MemberDone ─► parity ─► writes
//!                                                     │                       │
//!                                         HostComplete ◄── (bus, paths) ◄─────┘
//! ```

pub mod cache;
mod dispatch;
mod read_ahead;
mod read_balance;
pub(crate) mod rebuild;
mod write_back;

use crate::resource::{Path, Server};
use crate::scenario::{ArraySpec, ControllerSpec, DriveSpec, MemberCommands, MemberDispatch};
use cache::WriteCache;
use raidlab_layout::{Geometry, Level, Plan};
use std::collections::VecDeque;

/// The controller's CPU, data paths and settings, and the caches it runs.
pub(crate) struct Controller {
    pub(crate) cpu: Server,
    pub(crate) request_overhead_ns: u64,
    pub(crate) member_op_overhead_ns: u64,
    /// Each member command of a request leaves as soon as it is built
    /// (`member_dispatch = "serial"`), not all once every one is.
    pub(crate) post_serially: bool,
    /// How member operations are cut into commands.
    pub(crate) split: CommandSplit,
    pub(crate) read_hit_overhead_ns: u64,
    pub(crate) parity: Option<Path>,
    pub(crate) bus_up: Option<Path>,
    pub(crate) bus_down: Option<Path>,
    pub(crate) read_path: Option<Path>,
    pub(crate) write_path: Option<Path>,
    /// The shared link (a chipset's DMI) members from `uplink_first_member` on sit
    /// behind, each direction.
    pub(crate) uplink_up: Option<Path>,
    pub(crate) uplink_down: Option<Path>,
    pub(crate) uplink_first_member: u32,
    pub(crate) read_ahead: Option<ReadAhead>,
    pub(crate) cache_overhead_ns: u64,
    pub(crate) write_cache: Option<DestageEngine>,
    /// Host discards reach the members (passthrough on, and they are SSDs).
    pub(crate) members_take_trim: bool,
    /// FastPath's per-I/O cost, when FastPath is on.
    pub(crate) fastpath_overhead_ns: Option<u64>,
    /// Which I/O FastPath takes on this level: reads, writes (RAID 0 only).
    pub(crate) fastpath_reads: bool,
    pub(crate) fastpath_writes: bool,
}

/// How a controller cuts the extent a member receives into commands: never longer than
/// its largest transfer, and, for a controller that issues one command per strip
/// (`member_commands = "per-strip"`), never across a strip boundary of the member.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CommandSplit {
    pub(crate) max_bytes: u64,
    /// Strip size on the member (`u64::MAX`: strips a member receives are merged).
    pub(crate) strip_bytes: u64,
}

impl CommandSplit {
    /// Length of the command starting at member offset `at` with `left` bytes to go.
    #[inline]
    pub(crate) fn next_len(&self, at: u64, left: u64) -> u64 {
        let len = left.min(self.max_bytes);
        if self.strip_bytes == u64::MAX {
            // Merged strips: no boundary before the extent's end (no division either).
            return len;
        }
        let to_strip_end = self.strip_bytes - at % self.strip_bytes;
        len.min(to_strip_end)
    }

    /// Commands an extent of `len` bytes at member offset `offset` becomes.
    pub(crate) fn count(&self, offset: u64, len: u64) -> u64 {
        if self.strip_bytes == u64::MAX {
            if len <= self.max_bytes {
                // One command (none for nothing), without a division.
                return u64::from(len > 0);
            }
            return len.div_ceil(self.max_bytes);
        }
        if self.max_bytes >= self.strip_bytes {
            // One command per strip touched.
            return (offset + len - 1) / self.strip_bytes - offset / self.strip_bytes + 1;
        }
        let (mut at, mut n) = (offset, 0);
        while at < offset + len {
            at += self.next_len(at, offset + len - at);
            n += 1;
        }
        n
    }
}

/// Member commands of a plan once cut as the controller cuts them.
pub(crate) fn op_count(plan: &Plan, split: CommandSplit) -> u64 {
    plan.reads
        .iter()
        .chain(&plan.writes)
        .map(|e| split.count(e.offset_bytes, e.len_bytes))
        .sum()
}

/// One read-ahead segment: its extent, whether its data is in, and its request slot.
#[derive(Clone, Copy)]
pub(crate) struct Segment {
    start: u64,
    end: u64,
    ready: bool,
    slot: u32,
}

/// Controller read-ahead: a window of consecutive segments ahead of a sequential
/// stream, fetched by the controller itself.
pub(crate) struct ReadAhead {
    pub(crate) segment_bytes: u64,
    pub(crate) segments_max: usize,
    /// Segments in address order, contiguous.
    pub(crate) window: VecDeque<Segment>,
    pub(crate) free_slots: Vec<u32>,
    /// Where the next read of a sequential stream would start.
    pub(crate) expect_offset: u64,
    /// Fetch ahead after every read, sequential or not.
    pub(crate) always: bool,
    /// Fetch only the rest of the stripe unit the stream is in, never beyond it.
    pub(crate) within_stripe_unit: bool,
    /// End of the last segment fetched.
    pub(crate) window_end: u64,
    pub(crate) waiters: Vec<u32>,
    pub(crate) hits: u64,
}

/// md's rate marks (`md_do_sync`): the rebuild's speed is measured since the oldest of
/// `SYNC_MARKS` marks, a new one taken every `SYNC_MARK_STEP`.
const SYNC_MARKS: usize = 10;
const SYNC_MARK_STEP_NS: u64 = 3_000_000_000;

/// A background rebuild of one member, a stripe unit of member space at a time, at a
/// limited rate, competing with the workload for the same drives.
///
/// Below its minimum rate (`min_ps_per_byte`) it keeps up to `depth` units in flight,
/// whatever the load; at or above it, one at a time: the next unit goes once the last
/// is done, as md's `md_do_sync` waits for its resync I/O to drain
/// (`recovery_active`) when it is above `speed_limit_min` and the array is busy, and
/// issues without waiting below it.
pub(crate) struct Rebuild {
    pub(crate) member: u32,
    pub(crate) ps_per_byte: u64,
    pub(crate) unit_bytes: u64,
    pub(crate) member_bytes: u64,
    /// Member bytes below this are rebuilt (or being rebuilt by the units in flight).
    pub(crate) next_offset_bytes: u64,
    pub(crate) bytes_done: u64,
    pub(crate) bytes_at_start: u64,
    pub(crate) started_ns: u64,
    pub(crate) finished_ns: Option<u64>,
    /// The minimum rate as picoseconds per byte (None: no minimum).
    pub(crate) min_ps_per_byte: Option<u64>,
    /// Units in flight at most while below the minimum.
    pub(crate) depth: u32,
    /// The rebuild's request slots not in flight (popped from the end).
    pub(crate) free_slots: Vec<u32>,
    /// `free_slots` when none is in flight.
    pub(crate) slots: u32,
    /// Time and bytes done at each mark, the last taken at `last_mark`.
    pub(crate) marks: [(u64, u64); SYNC_MARKS],
    pub(crate) last_mark: usize,
    /// The mark the speed is measured from (md's `resync_mark`, `resync_mark_cnt`).
    pub(crate) speed_mark: (u64, u64),
    /// A `RebuildNext` is queued for this time (the rate limit's).
    pub(crate) wake_ns: Option<u64>,
}

/// A write-back cache and the destages it has in flight.
pub(crate) struct DestageEngine {
    pub(crate) cache: WriteCache,
    /// Free destage request slots.
    pub(crate) free_slots: Vec<u32>,
    pub(crate) first_slot: u32,
    /// Host writes waiting for cache room, in arrival order.
    pub(crate) waiters: VecDeque<u32>,
    pub(crate) max_bytes: u64,
    pub(crate) align_bytes: u64,
    pub(crate) concurrency: u32,
    /// Destages in flight, and the integral of that over time (for utilisation).
    pub(crate) in_flight: u32,
    pub(crate) in_flight_since_ns: u64,
    pub(crate) in_flight_area_ns: u64,
}

impl Controller {
    /// The controller of array `a` with `layout`, its read-ahead and write-back cache
    /// built by the caller (they own request slots).
    pub(crate) fn new(
        a: &ArraySpec,
        layout: &Geometry,
        read_ahead: Option<ReadAhead>,
        write_cache: Option<DestageEngine>,
    ) -> Self {
        let c = &a.controller;
        let level = layout.level();
        let strip_bytes = match c.member_commands {
            MemberCommands::Merged => u64::MAX,
            MemberCommands::PerStrip => layout.stripe_unit_bytes(),
        };
        Controller {
            cpu: Server::default(),
            request_overhead_ns: c.request_overhead_ns,
            member_op_overhead_ns: c.member_op_overhead_ns,
            post_serially: c.member_dispatch == MemberDispatch::Serial,
            split: CommandSplit {
                max_bytes: c.max_member_transfer_bytes,
                strip_bytes,
            },
            read_hit_overhead_ns: c.read_hit_overhead_ns,
            parity: c.parity_rate_bytes_per_s.map(Path::new),
            bus_up: c.bus_rate_bytes_per_s.map(Path::new),
            bus_down: c.bus_rate_bytes_per_s.map(Path::new),
            read_path: c.read_rate_bytes_per_s_max.map(Path::new),
            write_path: c.write_rate_bytes_per_s_max.map(Path::new),
            uplink_up: c.uplink.as_ref().map(|u| Path::new(u.rate_bytes_per_s())),
            uplink_down: c
                .uplink
                .as_ref()
                .map(|u| Path::new(u.down_rate_bytes_per_s())),
            uplink_first_member: c
                .uplink
                .as_ref()
                .map_or(u32::MAX, |u| u.first_member(a.drive_count)),
            read_ahead,
            write_cache,
            cache_overhead_ns: if c.write_back { c.cache_overhead_ns } else { 0 },
            members_take_trim: c.trim_passthrough
                && matches!(a.drive, DriveSpec::Ssd(_) | DriveSpec::Nvme(_)),
            fastpath_overhead_ns: c.fastpath_overhead_ns.filter(|_| c.fastpath),
            // Dell PERC H710P/PERC 8 and HPE MR user guides: reads of at most a stripe
            // unit on RAID 0, 1, 5 and 6, writes only on RAID 0; never RAID 10/50/60.
            fastpath_reads: matches!(
                level,
                Level::Raid0 | Level::Raid1 | Level::Raid4 | Level::Raid5 | Level::Raid6
            ),
            fastpath_writes: level == Level::Raid0,
        }
    }
}

impl ReadAhead {
    /// Read-ahead as `c` sets it (None when off); its slots are added by the caller.
    pub(crate) fn new(c: &ControllerSpec) -> Option<Self> {
        (c.read_ahead_bytes > 0).then(|| ReadAhead {
            segment_bytes: c.read_ahead_bytes,
            segments_max: c.read_ahead_segments as usize,
            window: VecDeque::with_capacity(c.read_ahead_segments as usize),
            free_slots: Vec::with_capacity(c.read_ahead_segments as usize),
            expect_offset: u64::MAX,
            always: c.read_ahead_always,
            within_stripe_unit: c.read_ahead_within_stripe_unit,
            window_end: 0,
            waiters: Vec::new(),
            hits: 0,
        })
    }
}

impl DestageEngine {
    /// The write-back cache as `c` sets it, destaging whole stripes of
    /// `full_stripe_bytes` (at least 1 MiB of them) through `slots` request slots from
    /// `first_slot` on.
    pub(crate) fn new(
        c: &ControllerSpec,
        full_stripe_bytes: u64,
        first_slot: u32,
        slots: u32,
    ) -> Self {
        let full_stripe = full_stripe_bytes;
        DestageEngine {
            cache: WriteCache::new(
                c.cache_bytes,
                (c.cache_bytes as f64 * c.dirty_low_percent / 100.0) as u64,
                (c.cache_bytes as f64 * c.dirty_high_percent / 100.0) as u64,
            ),
            free_slots: (first_slot..first_slot + slots).rev().collect(),
            first_slot,
            waiters: VecDeque::new(),
            max_bytes: full_stripe.max(1 << 20) / full_stripe * full_stripe,
            align_bytes: full_stripe,
            concurrency: slots,
            in_flight: 0,
            in_flight_since_ns: 0,
            in_flight_area_ns: 0,
        }
    }
}
