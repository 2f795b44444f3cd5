//! The host I/O stack: queue depth, request size and the block layer's scheduler
//! (mq-deadline, bfq) with its tunables.

use super::limits;
use serde::{Deserialize, Serialize};

/// The host I/O stack.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// Latency the OS block stack and driver add to each request (not shared).
    #[serde(default)]
    pub request_overhead_ns: u64,
    /// The block layer's I/O scheduler in front of the array (Linux's names).
    #[serde(default, skip_serializing_if = "SchedulerKind::is_none")]
    pub scheduler: SchedulerKind,
    /// Requests the array device accepts at once (Linux's `device/queue_depth`):
    /// the scheduler dispatches no more. Default: every member's command queue
    /// together (`drive_count * ncq_depth`), so the scheduler never holds back work
    /// the drives could start. Given with scheduler `none`, a FIFO stage with this
    /// limit stands in front of the array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_depth: Option<u32>,
    /// Requests the scheduler holds, queued and in flight (Linux's `nr_requests`);
    /// host I/Os beyond it wait for one to complete. Default: Linux's
    /// `2 * min(queue_depth, 128)` (64 for a 32-deep device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nr_requests: Option<u32>,
    /// Largest request a merge may build, KiB (Linux's `max_sectors_kb`, default 512).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sectors_kb: Option<u32>,
    /// mq-deadline's tunables (only with scheduler `mq-deadline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DeadlineSpec>,
    /// BFQ's tunables (only with scheduler `bfq`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bfq: Option<BfqSpec>,
}

/// Largest request a merge may build by default: Linux's `max_sectors_kb` of 512.
pub const MAX_SECTORS_KB_DEFAULT: u32 = 512;
/// Linux's `BLKDEV_DEFAULT_RQ`: `nr_requests` is twice the device depth up to it.
pub const NR_REQUESTS_DEPTH_CAP: u32 = 128;

impl HostSpec {
    /// Whether a scheduler stage stands between the host and the array: any
    /// scheduler but `none`, or `none` with an explicit device queue depth.
    pub fn has_scheduler_stage(&self) -> bool {
        !self.scheduler.is_none() || self.queue_depth.is_some()
    }
}

/// The block layer's I/O scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulerKind {
    /// blk-mq's default: requests go to the device in arrival order, unsorted.
    #[default]
    None,
    /// Per-direction LBA sort with merging, read and write deadlines, read preference.
    MqDeadline,
    /// Budget fair queueing: one process's queue at a time, idling when it empties.
    Bfq,
}

impl SchedulerKind {
    /// `none`?
    pub fn is_none(&self) -> bool {
        *self == SchedulerKind::None
    }

    /// Linux's name.
    pub fn name(self) -> &'static str {
        match self {
            SchedulerKind::None => "none",
            SchedulerKind::MqDeadline => "mq-deadline",
            SchedulerKind::Bfq => "bfq",
        }
    }
}

/// mq-deadline's tunables, defaults from Linux (Documentation/block/deadline-iosched.rst
/// and block/mq-deadline.c).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadlineSpec {
    /// A read waits at most about this long before it is served out of LBA order.
    #[serde(default = "default_read_expire")]
    pub read_expire_ns: u64,
    /// The same for writes.
    #[serde(default = "default_write_expire")]
    pub write_expire_ns: u64,
    /// Requests of one direction dispatched in LBA order before deadlines are checked.
    #[serde(default = "default_fifo_batch")]
    pub fifo_batch: u32,
    /// Read batches served while writes wait before a write batch must come.
    #[serde(default = "default_writes_starved")]
    pub writes_starved: u32,
    /// Merge a host I/O onto the front of a queued request, not only its back.
    #[serde(default = "default_true")]
    pub front_merges: bool,
}

impl Default for DeadlineSpec {
    fn default() -> Self {
        Self {
            read_expire_ns: default_read_expire(),
            write_expire_ns: default_write_expire(),
            fifo_batch: default_fifo_batch(),
            writes_starved: default_writes_starved(),
            front_merges: true,
        }
    }
}

fn default_read_expire() -> u64 {
    limits::DEADLINE_READ_EXPIRE.default.int()
}

fn default_write_expire() -> u64 {
    limits::DEADLINE_WRITE_EXPIRE.default.int()
}

fn default_fifo_batch() -> u32 {
    limits::DEADLINE_FIFO_BATCH.default.int() as u32
}

fn default_writes_starved() -> u32 {
    limits::DEADLINE_WRITES_STARVED.default.int() as u32
}

fn default_true() -> bool {
    true
}

/// BFQ's tunables, defaults from Linux's block/bfq-iosched.c.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BfqSpec {
    /// How long the device waits for the next request of the process in service once
    /// its queue is empty, before serving another (0 = no idling).
    #[serde(default = "default_slice_idle")]
    pub slice_idle_ns: u64,
    /// Longest a process keeps the device in one turn (`timeout_sync`).
    #[serde(default = "default_timeout_sync")]
    pub timeout_sync_ns: u64,
    /// Bytes a process may have served in one turn (`max_budget`; BFQ's default
    /// before it measures the device: 16384 sectors).
    #[serde(default = "default_max_budget")]
    pub max_budget_bytes: u64,
    /// A request older than this is served next within its process's queue, out of
    /// LBA order (`fifo_expire_sync`).
    #[serde(default = "default_fifo_expire_sync")]
    pub fifo_expire_sync_ns: u64,
}

impl Default for BfqSpec {
    fn default() -> Self {
        Self {
            slice_idle_ns: default_slice_idle(),
            timeout_sync_ns: default_timeout_sync(),
            max_budget_bytes: default_max_budget(),
            fifo_expire_sync_ns: default_fifo_expire_sync(),
        }
    }
}

fn default_slice_idle() -> u64 {
    limits::BFQ_SLICE_IDLE.default.int()
}

fn default_timeout_sync() -> u64 {
    limits::BFQ_TIMEOUT_SYNC.default.int()
}

fn default_max_budget() -> u64 {
    limits::BFQ_MAX_BUDGET.default.int()
}

fn default_fifo_expire_sync() -> u64 {
    limits::BFQ_FIFO_EXPIRE_SYNC.default.int()
}
