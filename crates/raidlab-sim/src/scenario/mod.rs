//! The scenario: plain data in (array + workload + seed), as documented in
//! `docs/scenario.md`.
//!
//! ```text
//! JSON ──► limits walk ──► typed Scenario ──► rules ──► Simulation
//!          (every field:    (serde, no       (fields together:
//!           kind, bounds,    unknown keys)    level minimums, seek order,
//!           choices; limits.rs)               region inside the array; validate.rs)
//! ```
//!
//! This module holds the types; [`limits`] declares every field's bounds once, and the
//! validator (`validate.rs`) checks a scenario against that table and then the rules
//! that tie fields together. Every refusal is a [`ScenarioError`] naming the field's
//! path (`array.drive.zones`, `workloads[2].iodepth`), which the front end maps back
//! to the user's flag or TOML key.

#![deny(missing_docs)]

use serde::{Deserialize, Serialize};

pub mod limits;
mod validate;

pub use validate::{check_field, levels_json, scenario_level};

/// Schema version this crate reads and writes.
pub const SCHEMA: u32 = 1;
/// Most outstanding requests of one job, and most requests a device or scheduler
/// holds ([`limits::IODEPTH_MAX`]).
pub const IODEPTH_MAX: u32 = limits::IODEPTH_MAX as u32;
/// Jobs per workload ([`limits::NUMJOBS`]).
pub const NUMJOBS_MAX: u32 = limits::NUMJOBS.max_int() as u32;
/// Smallest transfer ([`limits::BLOCK_BYTES_MIN`]).
pub const BLOCK_BYTES_MIN: u64 = limits::BLOCK_BYTES_MIN;
/// Largest transfer ([`limits::BLOCK_BYTES_MAX`]).
pub const BLOCK_BYTES_MAX: u64 = limits::BLOCK_BYTES_MAX;

/// One simulation to run.
///
/// In JSON a trace replay is the workload of `kind = "trace"` (see [`TraceSpec`]); in
/// Rust it is the separate field [`Scenario::trace`], so code that runs fio-style
/// workloads never meets it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "RawScenario", into = "RawScenario")]
pub struct Scenario {
    /// Must equal [`SCHEMA`].
    pub schema: u32,
    /// Seeds every random choice of the run.
    pub seed: u64,
    /// What is simulated.
    pub array: ArraySpec,
    /// What is asked of it: one workload ...
    pub workload: Option<WorkloadSpec>,
    /// ... or several running at once (the job sections of a fio file) ...
    pub workloads: Vec<WorkloadSpec>,
    /// ... or a block trace replayed against the array (`workload` of kind `trace`).
    pub trace: Option<TraceSpec>,
}

/// The scenario as its JSON has it: `workload` is either kind until it is looked at.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScenario {
    pub(crate) schema: u32,
    pub(crate) seed: u64,
    pub(crate) array: ArraySpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) workload: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) workloads: Vec<serde_json::Value>,
}

/// A fio-style workload from its JSON, without the optional `"kind": "jobs"`.
fn jobs_workload(mut value: Value, field: &str) -> Result<WorkloadSpec, ScenarioError> {
    if let Some(map) = value.as_object_mut() {
        map.remove("kind");
    }
    serde_json::from_value(value).map_err(|e| ScenarioError {
        field: field.into(),
        message: e.to_string(),
    })
}

impl TryFrom<RawScenario> for Scenario {
    type Error = ScenarioError;

    fn try_from(raw: RawScenario) -> Result<Self, ScenarioError> {
        let workloads = raw
            .workloads
            .into_iter()
            .enumerate()
            .map(|(i, value)| jobs_workload(value, &format!("workloads[{i}]")))
            .collect::<Result<_, _>>()?;
        let mut scenario = Scenario {
            schema: raw.schema,
            seed: raw.seed,
            array: raw.array,
            workload: None,
            workloads,
            trace: None,
        };
        let Some(mut workload) = raw.workload else {
            return Ok(scenario);
        };
        let kind = workload.get("kind").cloned().unwrap_or(Value::Null);
        if kind == "trace" {
            if let Some(map) = workload.as_object_mut() {
                map.remove("kind");
            }
            let trace = serde_json::from_value(workload).map_err(|e| ScenarioError {
                field: "workload".into(),
                message: e.to_string(),
            })?;
            scenario.trace = Some(trace);
        } else if kind.is_null() || kind == "jobs" {
            scenario.workload = Some(jobs_workload(workload, "workload")?);
        } else {
            return Err(ScenarioError {
                field: "workload.kind".into(),
                message: format!("must be one of jobs, trace, got {kind}"),
            });
        }
        Ok(scenario)
    }
}

impl From<Scenario> for RawScenario {
    fn from(scenario: Scenario) -> Self {
        let workload = match (scenario.workload, scenario.trace) {
            (_, Some(trace)) => {
                let mut value = serde_json::to_value(trace).expect("a trace spec serialises");
                if let Some(map) = value.as_object_mut() {
                    map.insert("kind".into(), Value::from("trace"));
                }
                Some(value)
            }
            (Some(jobs), None) => Some(serde_json::to_value(jobs).expect("a workload serialises")),
            (None, None) => None,
        };
        RawScenario {
            schema: scenario.schema,
            seed: scenario.seed,
            array: scenario.array,
            workload,
            workloads: scenario
                .workloads
                .into_iter()
                .map(|w| serde_json::to_value(w).expect("a workload serialises"))
                .collect(),
        }
    }
}

use serde_json::Value;

/// A block trace replayed against the array: the scenario's `workload` with
/// `"kind": "trace"` (docs/scenario.md, "Trace replay"). The trace is streamed, so
/// memory does not grow with its length; offsets wrap into the array's capacity.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// The trace file.
    pub path: String,
    /// Its format: `msr` (MSR Cambridge CSV) or `blkparse` (blkparse's text output).
    pub format: TraceFormat,
    /// `open`: each request at its timestamp divided by `time_scale`; `closed`: in
    /// trace order with `iodepth` outstanding.
    #[serde(default)]
    pub mode: TraceMode,
    /// Requests outstanding in closed mode.
    #[serde(default = "default_trace_iodepth")]
    pub iodepth: u32,
    /// Open mode: replay this many times faster than recorded.
    #[serde(default = "default_time_scale")]
    pub time_scale: f64,
}

fn default_trace_iodepth() -> u32 {
    limits::TRACE_IODEPTH.default.int() as u32
}

fn default_time_scale() -> f64 {
    limits::TRACE_TIME_SCALE.default.real()
}

/// A trace's text format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// MSR Cambridge CSV: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
    Msr,
    /// blkparse's default output; `Q` events are the requests.
    Blkparse,
}

impl TraceFormat {
    /// The reader's format.
    pub fn reader_format(self) -> crate::trace::Format {
        match self {
            TraceFormat::Msr => crate::trace::Format::Msr,
            TraceFormat::Blkparse => crate::trace::Format::Blkparse,
        }
    }

    /// The scenario's name of the format.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Msr => "msr",
            TraceFormat::Blkparse => "blkparse",
        }
    }
}

/// How a trace's requests are issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TraceMode {
    /// At the trace's timestamps (divided by the time scale), whatever is outstanding.
    #[default]
    Open,
    /// In trace order, a fixed number outstanding.
    Closed,
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
    #[serde(default = "default_hdd_ncq")]
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
    #[serde(default = "default_ssd_ncq")]
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
    limits::FTL_MAP_UNIT.default.int()
}

fn default_ftl_units() -> u32 {
    limits::FTL_UNITS.default.int() as u32
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
    limits::HDD_ZONES.default.int() as u32
}

fn default_hdd_ncq() -> u32 {
    limits::HDD_NCQ.default.int() as u32
}

fn default_ssd_ncq() -> u32 {
    limits::SSD_NCQ.default.int() as u32
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
    limits::CONTROLLER_DESTAGE.default.int() as u32
}

fn default_max_member_transfer() -> u64 {
    limits::CONTROLLER_MAX_TRANSFER.default.int()
}

fn default_read_ahead_segments() -> u32 {
    limits::CONTROLLER_READ_AHEAD_SEGMENTS.default.int() as u32
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
    limits::SAMPLE_INTERVAL.default.int()
}

fn default_rwmixread() -> u32 {
    limits::RWMIXREAD.default.int() as u32
}

fn default_one() -> u32 {
    limits::NUMJOBS.default.int() as u32
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
