//! The scenario: plain data in (array + workload + seed), as documented in
//! `docs/scenario.md`. Parsing refuses unknown keys; `validate` names the field and
//! what is allowed.

use serde::{Deserialize, Serialize};

/// Schema version this crate reads and writes.
pub const SCHEMA: u32 = 1;
/// Bounds that keep a run finite and its memory fixed.
pub const IODEPTH_MAX: u32 = 65_536;
/// Jobs per workload.
pub const NUMJOBS_MAX: u32 = 1024;
/// Smallest transfer.
pub const BLOCK_BYTES_MIN: u64 = 512;
/// Largest transfer.
pub const BLOCK_BYTES_MAX: u64 = 1 << 30;

/// One simulation to run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Must equal [`SCHEMA`].
    pub schema: u32,
    /// Seeds every random choice of the run.
    pub seed: u64,
    /// What is simulated.
    pub array: ArraySpec,
    /// What is asked of it: one workload ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadSpec>,
    /// ... or several running at once (the job sections of a fio file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<WorkloadSpec>,
}

/// The array: level, geometry, members, controller and host.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArraySpec {
    /// RAID level: 0, 1, 4, 5, 6, 10, 50, 60 or "concat".
    pub level: Level,
    /// RAID 5/6/50/60 parity layout or RAID 10 copy layout (md's names).
    #[serde(default)]
    pub layout: Option<String>,
    /// RAID 10 copies of each chunk.
    #[serde(default)]
    pub copies: Option<u32>,
    /// RAID 50/60 sub-arrays.
    #[serde(default)]
    pub spans: Option<u32>,
    /// Failed member indices.
    #[serde(default)]
    pub failed: Vec<u32>,
    /// A failed member being rebuilt onto a replacement.
    #[serde(default)]
    pub rebuild: Option<RebuildSpec>,
    /// Chunk size on one member.
    pub stripe_unit_bytes: u64,
    /// Number of members.
    pub drive_count: u32,
    /// The drive every member is.
    pub drive: DriveSpec,
    /// The controller in front of them.
    pub controller: ControllerSpec,
    /// The host's I/O stack.
    #[serde(default)]
    pub host: HostSpec,
    /// Share of the array's address space, at its end, the host has deleted (and
    /// discarded) after the drives were preconditioned, percent. The discard goes
    /// through the controller as a runtime TRIM does: with `trim_passthrough` the
    /// members' FTLs unmap it before the run starts; without, they never learn of it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deleted_percent: f64,
}

fn is_zero(value: &f64) -> bool {
    *value == 0.0
}

/// A RAID level as the scenario names it: a number, or `"concat"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Level {
    /// 0, 1, 4, 5, 6, 10, 50 or 60.
    Number(u32),
    /// `"concat"`.
    Name(String),
}

/// A background rebuild of one failed member onto a replacement.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RebuildSpec {
    /// The member being rebuilt (one of `failed`).
    pub member: u32,
    /// Rate limit of the rebuild stream.
    pub rate_bytes_per_s: f64,
}

/// How RAID 1/10 pick the copy a read goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ReadBalance {
    /// Alternate between copies.
    #[default]
    RoundRobin,
    /// The copy whose drive has the fewest operations outstanding.
    LeastOutstanding,
}

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
    500_000_000
}

fn default_write_expire() -> u64 {
    5_000_000_000
}

fn default_fifo_batch() -> u32 {
    16
}

fn default_writes_starved() -> u32 {
    2
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
    8_000_000
}

fn default_timeout_sync() -> u64 {
    125_000_000
}

fn default_max_budget() -> u64 {
    16384 * 512
}

fn default_fifo_expire_sync() -> u64 {
    125_000_000
}

/// A drive model and its physical parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DriveSpec {
    /// A rotating disk.
    Hdd(HddSpec),
    /// A flash drive.
    Ssd(SsdSpec),
}

impl DriveSpec {
    /// Capacity of one drive.
    pub fn capacity_bytes(&self) -> u64 {
        match self {
            DriveSpec::Hdd(h) => h.capacity_bytes,
            DriveSpec::Ssd(s) => s.usable_capacity_bytes(),
        }
    }
}

/// Datasheet-level description of a hard disk.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HddSpec {
    /// Preset name, reported back.
    #[serde(default)]
    pub model: String,
    /// Usable capacity.
    pub capacity_bytes: u64,
    /// Spindle speed.
    pub rpm: u32,
    /// Seek to the adjacent track.
    pub seek_ns_track_to_track: u64,
    /// Average seek (one third of the stroke).
    pub seek_ns_avg: u64,
    /// Seek across the whole stroke.
    pub seek_ns_full_stroke: u64,
    /// Media rate at the outermost zone.
    pub media_rate_bytes_per_s_outer: f64,
    /// Media rate at the innermost zone.
    pub media_rate_bytes_per_s_inner: f64,
    /// Zones with constant bytes per track.
    #[serde(default = "default_zones")]
    pub zones: u32,
    /// Firmware time per command.
    pub command_overhead_ns: u64,
    /// Interface payload rate.
    pub link_rate_bytes_per_s: f64,
    /// Drive buffer.
    pub cache_bytes: u64,
    /// How far the drive reads ahead past a read (0 = off).
    pub read_ahead_bytes: u64,
    /// Complete writes once buffered (true) or once on the platter (false).
    pub write_cache: bool,
    /// Commands the drive accepts at once.
    #[serde(default = "default_ncq")]
    pub ncq_depth: u32,
}

/// Datasheet-level description of a flash drive.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsdSpec {
    /// Preset name, reported back.
    #[serde(default)]
    pub model: String,
    /// Usable capacity.
    pub capacity_bytes: u64,
    /// Interface payload rate.
    pub link_rate_bytes_per_s: f64,
    /// Firmware time per command (serial).
    pub command_overhead_ns: u64,
    /// Flash channels.
    pub channels: u32,
    /// Dies on each channel.
    pub dies_per_channel: u32,
    /// Flash page.
    pub page_bytes: u64,
    /// Page read time tR.
    pub read_page_ns: u64,
    /// Page program time tPROG.
    pub program_page_ns: u64,
    /// Channel transfer rate.
    pub channel_rate_bytes_per_s: f64,
    /// Write buffer; a write completes once buffered.
    pub write_buffer_bytes: u64,
    /// Latency (not a shared resource) a write spends before it is buffered: inline
    /// compression and encryption on SandForce controllers, for example.
    #[serde(default)]
    pub write_commit_ns: u64,
    /// Extra latency of a command that arrives while others are outstanding: the
    /// queued (NCQ, FPDMA) protocol path, which some firmware serves more slowly.
    #[serde(default)]
    pub queued_command_latency_ns: u64,
    /// The flash translation layer; without one, writes cost only their own programs
    /// (a fresh drive).
    #[serde(default)]
    pub ftl: Option<FtlSpec>,
    /// A DRAM read buffer frees a die as soon as its page is sensed; without one
    /// (SandForce SF-2281 has none) the die is held until the data has left.
    #[serde(default)]
    pub read_buffer: bool,
    /// The flash suspends a program or erase for a read (NVMe-era enterprise parts);
    /// without it a read waits for the operation in progress on its die.
    #[serde(default)]
    pub program_suspend: bool,
    /// Commands the drive accepts at once.
    #[serde(default = "default_ncq")]
    pub ncq_depth: u32,
}

/// A page-mapped FTL with garbage collection and over-provisioning.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FtlSpec {
    /// Factory spare area beyond the rated capacity, percent of it.
    pub spare_percent: f64,
    /// Share of the rated capacity the user leaves unpartitioned (extra
    /// over-provisioning), percent; the array sees only the rest.
    #[serde(default)]
    pub op_percent: f64,
    /// Flash pages per erase block.
    pub pages_per_block: u32,
    /// Block erase time tBERS.
    pub erase_ns: u64,
    /// Firmware time per unit garbage collection relocates (its valid-map check,
    /// mapping update and the read and program it issues). The firmware does it before
    /// it takes the next command, so in steady state every command waits behind the
    /// collection its writes cause (foreground garbage collection).
    #[serde(default)]
    pub gc_unit_firmware_ns: u64,
    /// Mapping unit.
    #[serde(default = "default_map_unit")]
    pub map_unit_bytes: u64,
    /// Victim choice.
    #[serde(default)]
    pub gc: FtlGc,
    /// Logical units the FTL state keeps (the drive maps onto them in proportion).
    #[serde(default = "default_ftl_units")]
    pub units: u32,
    /// Fresh out of the box, or preconditioned to steady state (SNIA PTS).
    #[serde(default)]
    pub precondition: Precondition,
}

/// Garbage-collection victim choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum FtlGc {
    /// Fewest valid units.
    #[default]
    Greedy,
    /// Rosenblum and Ousterhout's cost-benefit.
    CostBenefit,
}

/// The state a drive starts a run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Precondition {
    /// Fresh out of the box: every block erased.
    Fob,
    /// Steady state: filled and randomly overwritten, as SNIA PTS prescribes.
    #[default]
    Steady,
}

fn default_map_unit() -> u64 {
    4096
}

fn default_ftl_units() -> u32 {
    1 << 18
}

impl SsdSpec {
    /// Capacity the drive is rated at, before any user over-provisioning.
    pub fn raw_capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// Capacity the array sees: the partitioned share.
    pub fn usable_capacity_bytes(&self) -> u64 {
        let op = self.ftl.as_ref().map_or(0.0, |f| f.op_percent);
        ((self.capacity_bytes as f64 * (1.0 - op / 100.0)) as u64) / 512 * 512
    }
}

fn default_zones() -> u32 {
    16
}

fn default_ncq() -> u32 {
    32
}

/// The controller: RAID logic, its costs, and the paths the data takes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControllerSpec {
    /// Preset name, reported back.
    #[serde(default)]
    pub name: String,
    /// Serial processing per host request.
    #[serde(default)]
    pub request_overhead_ns: u64,
    /// Serial processing per member operation.
    #[serde(default)]
    pub member_op_overhead_ns: u64,
    /// Member operations are split at this size.
    #[serde(default = "default_max_member_transfer")]
    pub max_member_transfer_bytes: u64,
    /// Per-port link rate.
    pub port_rate_bytes_per_s: f64,
    /// Shared host path, each direction (None = unlimited).
    #[serde(default)]
    pub bus_rate_bytes_per_s: Option<f64>,
    /// Controller read data-path cap (None = unlimited).
    #[serde(default)]
    pub read_rate_bytes_per_s_max: Option<f64>,
    /// Controller write data-path cap (None = unlimited).
    #[serde(default)]
    pub write_rate_bytes_per_s_max: Option<f64>,
    /// Sequential read-ahead segment (0 = off).
    #[serde(default)]
    pub read_ahead_bytes: u64,
    /// Read-ahead segments in flight at most.
    #[serde(default = "default_read_ahead_segments")]
    pub read_ahead_segments: u32,
    /// Serial cost of a read served from the read-ahead buffer.
    #[serde(default)]
    pub read_hit_overhead_ns: u64,
    /// Read ahead after every read ("always"), not only once a sequential stream is
    /// seen ("adaptive", the default).
    #[serde(default)]
    pub read_ahead_always: bool,
    /// Parity engine rate (None = free).
    #[serde(default)]
    pub parity_rate_bytes_per_s: Option<f64>,
    /// RAID 1/10 read balancing.
    #[serde(default)]
    pub read_balance: ReadBalance,
    /// Controller cache for writes (0 = none).
    #[serde(default)]
    pub cache_bytes: u64,
    /// Write-back (acknowledge once cached) rather than write-through.
    #[serde(default)]
    pub write_back: bool,
    /// Serial cost per request of managing the cache (lookup, allocation, flush
    /// bookkeeping), charged to every request while a write-back cache is on.
    #[serde(default)]
    pub cache_overhead_ns: u64,
    /// Destages in flight at most.
    #[serde(default = "default_destage_concurrency")]
    pub destage_concurrency: u32,
    /// Dirty share below which the cache stops destaging, percent.
    #[serde(default)]
    pub dirty_low_percent: f64,
    /// Dirty share above which an idle cache starts destaging, percent (at or below
    /// `dirty_low_percent`: whenever it is above the low mark). Between the two marks a
    /// destage under way goes on and an idle cache waits, gathering more writes.
    #[serde(default)]
    pub dirty_high_percent: f64,
    /// Host discards (TRIM, UNMAP) go on to the members (planned through the layout);
    /// otherwise the controller completes them itself and the drives never learn.
    #[serde(default)]
    pub trim_passthrough: bool,
    /// Per-I/O firmware cost on the controller's FastPath (None: it has none): the
    /// cut-through path that replaces the request and member-operation costs of I/O it
    /// takes (see `fastpath`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fastpath_overhead_ns: Option<u64>,
    /// FastPath on (LSI MegaRAID, Dell PERC): needs write-through and no read-ahead;
    /// reads of at most a stripe unit on RAID 0/1/4/5/6 and such writes on RAID 0 take
    /// the cut-through path while the array is optimal.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fastpath: bool,
}

fn default_destage_concurrency() -> u32 {
    4
}

fn default_max_member_transfer() -> u64 {
    32 << 20
}

fn default_read_ahead_segments() -> u32 {
    2
}

/// Direction and access pattern, with fio's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    Randread,
    /// Random writes.
    Randwrite,
    /// Sequential mix.
    Rw,
    /// Random mix.
    Randrw,
    /// Sequential discards.
    Trim,
    /// Random discards.
    Randtrim,
    /// Sequential discard of each block, then a write of it.
    Trimwrite,
    /// Random discard of each block, then a write of it.
    Randtrimwrite,
}

impl Rw {
    /// Random offsets?
    pub fn is_random(self) -> bool {
        matches!(
            self,
            Rw::Randread | Rw::Randwrite | Rw::Randrw | Rw::Randtrim | Rw::Randtrimwrite
        )
    }

    /// Does the pattern discard?
    pub fn trims(self) -> bool {
        matches!(
            self,
            Rw::Trim | Rw::Randtrim | Rw::Trimwrite | Rw::Randtrimwrite
        )
    }

    /// Share of reads in percent for this pattern.
    pub fn read_percent(self, rwmixread: u32) -> u32 {
        match self {
            Rw::Read | Rw::Randread => 100,
            Rw::Write | Rw::Randwrite => 0,
            Rw::Rw | Rw::Randrw => rwmixread,
            Rw::Trim | Rw::Randtrim | Rw::Trimwrite | Rw::Randtrimwrite => 0,
        }
    }
}

/// Offset distribution of random workloads (fio's `random_distribution`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// Every aligned block equally likely.
    #[default]
    Uniform,
    /// Zipf with exponent theta (> 0).
    Zipf(f64),
    /// Pareto with h in (0, 1).
    Pareto(f64),
    /// Normal around the middle, sigma as a percentage of the region (> 0).
    Normal(f64),
    /// Zones: (access percent, size percent), each column adding to 100.
    Zoned(Vec<(f64, f64)>),
}

/// What the host asks of the array.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Pattern.
    pub rw: Rw,
    /// Block-size mix: (bytes, weight).
    pub bs: Vec<(u64, u32)>,
    /// Read share for mixes, percent.
    #[serde(default = "default_rwmixread")]
    pub rwmixread: u32,
    /// Outstanding requests per job.
    pub iodepth: u32,
    /// Independent jobs.
    #[serde(default = "default_one")]
    pub numjobs: u32,
    /// Start of the region.
    #[serde(default)]
    pub offset_bytes: u64,
    /// Length of the region.
    pub size_bytes: u64,
    /// Host I/Os measured after warm-up.
    pub ios: u64,
    /// Host I/Os discarded first.
    #[serde(default)]
    pub warmup_ios: u64,
    /// Cap on measured simulated time.
    #[serde(default)]
    pub runtime_ns: Option<u64>,
    /// Offset distribution.
    #[serde(default)]
    pub distribution: Distribution,
    /// Name reported back (fio's job name).
    #[serde(default)]
    pub name: Option<String>,
    /// Block-size mix for writes when it differs from reads (fio's `bs=r,w`).
    #[serde(default)]
    pub bs_write: Option<Vec<(u64, u32)>>,
    /// Simulated time discarded at the start (fio's `ramp_time`).
    #[serde(default)]
    pub warmup_ns: u64,
    /// Interval of the per-job IOPS and bandwidth samples.
    #[serde(default = "default_sample_interval")]
    pub sample_interval_ns: u64,
}

fn default_sample_interval() -> u64 {
    500_000_000
}

fn default_rwmixread() -> u32 {
    50
}

fn default_one() -> u32 {
    1
}

/// A refused scenario: the field and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// Dotted path of the field.
    pub field: String,
    /// What is allowed and what was given.
    pub message: String,
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ScenarioError {}

fn refuse(field: &str, message: String) -> Result<(), ScenarioError> {
    Err(ScenarioError {
        field: field.to_string(),
        message,
    })
}

fn positive_rate(field: &str, rate: f64) -> Result<(), ScenarioError> {
    if !(rate.is_finite() && rate >= 1e3) {
        return refuse(
            field,
            format!("must be a rate of at least 1000 B/s, got {rate}"),
        );
    }
    Ok(())
}

impl ArraySpec {
    /// The layout geometry this array describes; the error names the field.
    pub fn geometry(&self) -> Result<raidlab_layout::Geometry, ScenarioError> {
        use raidlab_layout::{ArraySpec as Spec, Geometry, Layout, Level as L};
        let refused = |e: raidlab_layout::LayoutError| ScenarioError {
            field: format!("array.{}", e.field),
            message: e.message,
        };
        let level: L = match &self.level {
            Level::Number(n) if [0, 1, 4, 5, 6, 10, 50, 60].contains(n) => {
                n.to_string().parse().map_err(refused)?
            }
            Level::Name(name) if name == "concat" => L::Concat,
            other => {
                return Err(ScenarioError {
                    field: "array.level".into(),
                    message: format!(
                        "must be 0, 1, 4, 5, 6, 10, 50, 60 or \"concat\", got {other:?}"
                    ),
                })
            }
        };
        let mut spec = Spec::new(
            level,
            self.drive_count,
            self.stripe_unit_bytes,
            self.drive.capacity_bytes(),
        );
        if let Some(name) = &self.layout {
            spec = spec.with_layout(name.parse::<Layout>().map_err(refused)?);
        }
        if let Some(copies) = self.copies {
            spec = spec.with_copies(copies);
        }
        if let Some(spans) = self.spans {
            spec = spec.with_spans(spans);
        }
        Geometry::new(&spec).map_err(refused)
    }
}

impl Scenario {
    /// The workloads to run: `workload`, or every entry of `workloads`.
    pub fn workload_specs(&self) -> Vec<&WorkloadSpec> {
        self.workload.iter().chain(&self.workloads).collect()
    }

    /// Parse JSON and validate; the error names the field.
    pub fn from_json(text: &str) -> Result<Self, ScenarioError> {
        let scenario: Scenario = serde_json::from_str(text).map_err(|e| ScenarioError {
            field: "scenario".into(),
            message: e.to_string(),
        })?;
        scenario.validate()?;
        Ok(scenario)
    }

    /// Check every bound the simulator relies on.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let layout = self.validate_array()?;
        self.validate_workloads(&layout)
    }

    /// Check the array alone (a trace replay needs no workload); returns its geometry.
    pub fn validate_array(&self) -> Result<raidlab_layout::Geometry, ScenarioError> {
        if self.schema != SCHEMA {
            refuse(
                "schema",
                format!("this simulator reads schema {SCHEMA}, got {}", self.schema),
            )?;
        }
        let a = &self.array;
        match &a.drive {
            DriveSpec::Hdd(h) => {
                if h.rpm < 1000 || h.rpm > 30_000 {
                    refuse(
                        "array.drive.rpm",
                        format!("must be 1000..=30000, got {}", h.rpm),
                    )?;
                }
                if !(h.seek_ns_track_to_track <= h.seek_ns_avg
                    && h.seek_ns_avg <= h.seek_ns_full_stroke)
                {
                    refuse(
                        "array.drive.seek_ns_avg",
                        "seek figures must satisfy track-to-track <= average <= full stroke".into(),
                    )?;
                }
                positive_rate(
                    "array.drive.media_rate_bytes_per_s_outer",
                    h.media_rate_bytes_per_s_outer,
                )?;
                positive_rate(
                    "array.drive.media_rate_bytes_per_s_inner",
                    h.media_rate_bytes_per_s_inner,
                )?;
                positive_rate("array.drive.link_rate_bytes_per_s", h.link_rate_bytes_per_s)?;
                if h.zones == 0 || h.zones > 1024 {
                    refuse(
                        "array.drive.zones",
                        format!("must be 1..=1024, got {}", h.zones),
                    )?;
                }
                if h.ncq_depth == 0 || h.ncq_depth > 256 {
                    refuse(
                        "array.drive.ncq_depth",
                        format!("must be 1..=256, got {}", h.ncq_depth),
                    )?;
                }
            }
            DriveSpec::Ssd(s) => {
                if s.channels == 0 || s.channels > 64 {
                    refuse(
                        "array.drive.channels",
                        format!("must be 1..=64, got {}", s.channels),
                    )?;
                }
                if s.dies_per_channel == 0 || s.dies_per_channel > 64 {
                    refuse(
                        "array.drive.dies_per_channel",
                        format!("must be 1..=64, got {}", s.dies_per_channel),
                    )?;
                }
                if s.page_bytes < 512 || !s.page_bytes.is_power_of_two() {
                    refuse(
                        "array.drive.page_bytes",
                        format!("must be a power of two >= 512, got {}", s.page_bytes),
                    )?;
                }
                if s.write_buffer_bytes < s.page_bytes {
                    refuse(
                        "array.drive.write_buffer_bytes",
                        format!("must hold at least one page ({} B)", s.page_bytes),
                    )?;
                }
                positive_rate("array.drive.link_rate_bytes_per_s", s.link_rate_bytes_per_s)?;
                positive_rate(
                    "array.drive.channel_rate_bytes_per_s",
                    s.channel_rate_bytes_per_s,
                )?;
                if s.ncq_depth == 0 || s.ncq_depth > 65_536 {
                    refuse(
                        "array.drive.ncq_depth",
                        format!("must be 1..=65536, got {}", s.ncq_depth),
                    )?;
                }
            }
        }
        let c = &a.controller;
        positive_rate(
            "array.controller.port_rate_bytes_per_s",
            c.port_rate_bytes_per_s,
        )?;
        for (field, rate) in [
            (
                "array.controller.bus_rate_bytes_per_s",
                c.bus_rate_bytes_per_s,
            ),
            (
                "array.controller.read_rate_bytes_per_s_max",
                c.read_rate_bytes_per_s_max,
            ),
            (
                "array.controller.write_rate_bytes_per_s_max",
                c.write_rate_bytes_per_s_max,
            ),
        ] {
            if let Some(rate) = rate {
                positive_rate(field, rate)?;
            }
        }
        if c.max_member_transfer_bytes < 512 || !c.max_member_transfer_bytes.is_multiple_of(512) {
            refuse(
                "array.controller.max_member_transfer_bytes",
                format!(
                    "must be a multiple of 512 B, got {}",
                    c.max_member_transfer_bytes
                ),
            )?;
        }
        if !c.read_ahead_bytes.is_multiple_of(512) {
            refuse(
                "array.controller.read_ahead_bytes",
                "must be a multiple of 512 B".into(),
            )?;
        }
        if c.write_back && c.cache_bytes < 1 << 20 {
            refuse(
                "array.controller.cache_bytes",
                format!(
                    "write-back needs a cache of at least 1 MiB, got {}",
                    c.cache_bytes
                ),
            )?;
        }
        if c.destage_concurrency == 0 || c.destage_concurrency > 256 {
            refuse(
                "array.controller.destage_concurrency",
                format!("must be 1..=256, got {}", c.destage_concurrency),
            )?;
        }
        if !(0.0..=95.0).contains(&c.dirty_low_percent) {
            refuse(
                "array.controller.dirty_low_percent",
                format!("must be 0..=95, got {}", c.dirty_low_percent),
            )?;
        }
        if !(0.0..=100.0).contains(&c.dirty_high_percent) {
            refuse(
                "array.controller.dirty_high_percent",
                format!("must be 0..=100, got {}", c.dirty_high_percent),
            )?;
        }
        if c.fastpath {
            if c.fastpath_overhead_ns.is_none() {
                refuse(
                    "array.controller.fastpath",
                    "this controller has no FastPath (fastpath_overhead_ns is not set)".into(),
                )?;
            }
            if c.write_back {
                refuse(
                    "array.controller.fastpath",
                    "FastPath needs write-through: write_back must be false".into(),
                )?;
            }
            if c.read_ahead_bytes > 0 {
                refuse(
                    "array.controller.fastpath",
                    "FastPath needs no read-ahead: read_ahead_bytes must be 0".into(),
                )?;
            }
        }
        if !(a.deleted_percent.is_finite() && (0.0..100.0).contains(&a.deleted_percent)) {
            refuse(
                "array.deleted_percent",
                format!("must be 0..100 (percent), got {}", a.deleted_percent),
            )?;
        }
        if c.read_ahead_segments == 0 || c.read_ahead_segments > 64 {
            refuse(
                "array.controller.read_ahead_segments",
                format!("must be 1..=64, got {}", c.read_ahead_segments),
            )?;
        }
        validate_host(&a.host)?;
        let layout = a.geometry()?;
        let failed = raidlab_layout::MemberSet::from_members(&a.failed);
        for (i, &m) in a.failed.iter().enumerate() {
            if m >= a.drive_count {
                refuse(
                    "array.failed",
                    format!(
                        "member {m} does not exist: members are 0..{}",
                        a.drive_count
                    ),
                )?;
            }
            if a.failed[..i].contains(&m) {
                refuse("array.failed", format!("member {m} is listed twice"))?;
            }
        }
        if !layout.tolerates(&failed) {
            refuse(
                "array.failed",
                format!(
                    "members {failed} failed: {} survives {} failure(s), the data is lost",
                    layout.level(),
                    layout.tolerated_failures()
                ),
            )?;
        }
        if let Some(r) = &a.rebuild {
            if !a.failed.contains(&r.member) {
                refuse(
                    "array.rebuild.member",
                    format!("member {} is not failed; failed: {:?}", r.member, a.failed),
                )?;
            }
            positive_rate("array.rebuild.rate_bytes_per_s", r.rate_bytes_per_s)?;
        }
        Ok(layout)
    }

    fn validate_workloads(&self, layout: &raidlab_layout::Geometry) -> Result<(), ScenarioError> {
        let specs = self.workload_specs();
        if specs.is_empty() {
            refuse(
                "workload",
                "a scenario needs `workload` or `workloads`".into(),
            )?;
        }
        if self.workload.is_some() && !self.workloads.is_empty() {
            refuse(
                "workloads",
                "give either `workload` or `workloads`, not both".into(),
            )?;
        }
        if specs.len() > 256 {
            refuse(
                "workloads",
                format!("at most 256 workloads, got {}", specs.len()),
            )?;
        }
        for (i, w) in specs.iter().enumerate() {
            let field = |name: &str| {
                if self.workload.is_some() {
                    format!("workload.{name}")
                } else {
                    format!("workloads[{i}].{name}")
                }
            };
            validate_workload(w, layout, &field)?;
        }
        Ok(())
    }
}

/// Longest scheduler time a scenario may set: 1000 s.
const SCHEDULER_NS_MAX: u64 = 1_000_000_000_000;

fn validate_host(h: &HostSpec) -> Result<(), ScenarioError> {
    if let Some(depth) = h.queue_depth {
        if depth == 0 || depth > IODEPTH_MAX {
            refuse(
                "array.host.queue_depth",
                format!("must be 1..={IODEPTH_MAX}, got {depth}"),
            )?;
        }
    }
    if let Some(n) = h.nr_requests {
        if n == 0 || n > IODEPTH_MAX {
            refuse(
                "array.host.nr_requests",
                format!("must be 1..={IODEPTH_MAX}, got {n}"),
            )?;
        }
    }
    if let Some(kb) = h.max_sectors_kb {
        let max_kb = (BLOCK_BYTES_MAX / 1024) as u32;
        if !(4..=max_kb).contains(&kb) {
            refuse(
                "array.host.max_sectors_kb",
                format!("must be 4..={max_kb} (KiB), got {kb}"),
            )?;
        }
    }
    let scheduler = h.scheduler.name();
    if let Some(d) = &h.deadline {
        if h.scheduler != SchedulerKind::MqDeadline {
            refuse(
                "array.host.deadline",
                format!("only used with scheduler mq-deadline, got scheduler {scheduler}"),
            )?;
        }
        for (field, ns) in [
            ("array.host.deadline.read_expire_ns", d.read_expire_ns),
            ("array.host.deadline.write_expire_ns", d.write_expire_ns),
        ] {
            if ns > SCHEDULER_NS_MAX {
                refuse(
                    field,
                    format!("must be 0..={SCHEDULER_NS_MAX} ns, got {ns}"),
                )?;
            }
        }
        if d.fifo_batch == 0 || d.fifo_batch > IODEPTH_MAX {
            refuse(
                "array.host.deadline.fifo_batch",
                format!("must be 1..={IODEPTH_MAX}, got {}", d.fifo_batch),
            )?;
        }
        if d.writes_starved > IODEPTH_MAX {
            refuse(
                "array.host.deadline.writes_starved",
                format!("must be 0..={IODEPTH_MAX}, got {}", d.writes_starved),
            )?;
        }
    }
    if let Some(b) = &h.bfq {
        if h.scheduler != SchedulerKind::Bfq {
            refuse(
                "array.host.bfq",
                format!("only used with scheduler bfq, got scheduler {scheduler}"),
            )?;
        }
        for (field, ns, low) in [
            ("array.host.bfq.slice_idle_ns", b.slice_idle_ns, 0),
            (
                "array.host.bfq.timeout_sync_ns",
                b.timeout_sync_ns,
                1_000_000,
            ),
            (
                "array.host.bfq.fifo_expire_sync_ns",
                b.fifo_expire_sync_ns,
                0,
            ),
        ] {
            if !(low..=SCHEDULER_NS_MAX).contains(&ns) {
                refuse(
                    field,
                    format!("must be {low}..={SCHEDULER_NS_MAX} ns, got {ns}"),
                )?;
            }
        }
        if !(4096..=BLOCK_BYTES_MAX).contains(&b.max_budget_bytes) {
            refuse(
                "array.host.bfq.max_budget_bytes",
                format!(
                    "must be 4096..={BLOCK_BYTES_MAX} B, got {}",
                    b.max_budget_bytes
                ),
            )?;
        }
    }
    Ok(())
}

fn validate_workload(
    w: &WorkloadSpec,
    layout: &raidlab_layout::Geometry,
    field: &dyn Fn(&str) -> String,
) -> Result<(), ScenarioError> {
    if w.iodepth == 0 || w.iodepth > IODEPTH_MAX {
        refuse(
            &field("iodepth"),
            format!("must be 1..={IODEPTH_MAX}, got {}", w.iodepth),
        )?;
    }
    if w.numjobs == 0 || w.numjobs > NUMJOBS_MAX {
        refuse(
            &field("numjobs"),
            format!("must be 1..={NUMJOBS_MAX}, got {}", w.numjobs),
        )?;
    }
    if w.rwmixread > 100 {
        refuse(
            &field("rwmixread"),
            format!("must be 0..=100, got {}", w.rwmixread),
        )?;
    }
    check_mix(&w.bs, &field("bs"))?;
    let bs_max =
        w.bs.iter()
            .chain(w.bs_write.iter().flatten())
            .map(|b| b.0)
            .max()
            .unwrap_or(0);
    if !w.offset_bytes.is_multiple_of(512) {
        refuse(&field("offset_bytes"), "must be a multiple of 512 B".into())?;
    }
    let region_end = w.offset_bytes.checked_add(w.size_bytes);
    if region_end.is_none_or(|end| end > layout.capacity_bytes()) {
        refuse(
            &field("size_bytes"),
            format!(
                "region [{}, +{}) exceeds the array's {} B",
                w.offset_bytes,
                w.size_bytes,
                layout.capacity_bytes()
            ),
        )?;
    }
    if w.size_bytes / u64::from(w.numjobs) < bs_max {
        refuse(
            &field("size_bytes"),
            format!("each job's share must hold the largest block ({bs_max} B)"),
        )?;
    }
    if w.ios == 0 || w.ios > 1 << 40 {
        refuse(&field("ios"), format!("must be 1..=2^40, got {}", w.ios))?;
    }
    if let Some(mix) = &w.bs_write {
        check_mix(mix, &field("bs_write"))?;
    }
    if w.sample_interval_ns < 1_000_000 {
        refuse(&field("sample_interval_ns"), "must be at least 1 ms".into())?;
    }
    match &w.distribution {
        Distribution::Uniform => {}
        Distribution::Zipf(theta) if theta.is_finite() && *theta > 0.0 => {}
        Distribution::Pareto(h) if *h > 0.0 && *h < 1.0 => {}
        Distribution::Normal(sigma) if sigma.is_finite() && *sigma > 0.0 => {}
        Distribution::Zoned(zones)
            if !zones.is_empty()
                && zones.iter().all(|z| z.0 >= 0.0 && z.1 > 0.0)
                && (zones.iter().map(|z| z.0).sum::<f64>() - 100.0).abs() < 1e-6
                && (zones.iter().map(|z| z.1).sum::<f64>() - 100.0).abs() < 1e-6 => {}
        other => refuse(
            &field("distribution"),
            format!(
                "zipf needs theta > 0, pareto h in (0, 1), normal sigma > 0, zoned access and \
                 size percentages each adding to 100; got {other:?}"
            ),
        )?,
    }
    Ok(())
}

/// A block-size mix: 1..=64 sizes, multiples of 512 B within bounds, positive weights.
fn check_mix(mix: &[(u64, u32)], field: &str) -> Result<(), ScenarioError> {
    if mix.is_empty() || mix.len() > 64 {
        refuse(field, "needs 1..=64 block sizes".into())?;
    }
    for &(bytes, weight) in mix {
        if !(BLOCK_BYTES_MIN..=BLOCK_BYTES_MAX).contains(&bytes) || !bytes.is_multiple_of(512) {
            refuse(
                field,
                format!("block sizes must be multiples of 512 B in 512 B..=1 GiB, got {bytes}"),
            )?;
        }
        if weight == 0 {
            refuse(field, "weights must be positive".into())?;
        }
    }
    Ok(())
}
