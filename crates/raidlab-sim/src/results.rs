//! Results: plain data out, as documented in `docs/scenario.md`.
//!
//! A leaf: it imports nothing from the simulator's components, which all report into it
//! (the drives their wear, the cache tier its [`CacheReport`], the event loop the rest).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Everything a run reports. Maps are ordered, so the JSON is byte-stable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Schema version of this document.
    pub schema: u32,
    /// The seed the run used.
    pub seed: u64,
    /// Measured simulated interval, ns: from the end of the warm-up to the completion
    /// that ended the run (at least 1).
    pub sim_time_ns: u64,
    /// Events processed over the whole run, warm-up included.
    pub events: u64,
    /// Per direction that did I/O: `read`, `write`, `trim`.
    pub ops: BTreeMap<String, OpStats>,
    /// Why the figures are what they are.
    pub explain: Explain,
    /// Each workload (fio job) on its own, in scenario order.
    pub jobs: Vec<JobResults>,
    /// The background rebuild, when the scenario asked for one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rebuild: Option<RebuildReport>,
}

/// How far a background rebuild got while competing with the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RebuildReport {
    /// The member being rebuilt.
    pub member: u32,
    /// Member bytes rebuilt during the measured interval.
    pub bytes_done: u64,
    /// Member bytes to rebuild in all.
    pub member_bytes: u64,
    /// Rebuild rate achieved, 10^6 bytes per second.
    pub mbps: f64,
    /// Whether the whole member was rebuilt within the run.
    pub finished: bool,
    /// Time the whole rebuild took (finished) or would take at the achieved rate.
    pub time_ns_projected: u64,
}

/// One direction's figures over the measured interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpStats {
    /// Host I/Os completed.
    pub ios: u64,
    /// Host bytes moved.
    pub bytes: u64,
    /// I/Os per second of simulated time.
    pub iops: f64,
    /// 10^6 bytes per second.
    pub mbps: f64,
    /// Mean latency, ns: from when the job issued the request (a replayed trace's: when
    /// it arrived) to its completion, the host stack's overhead included.
    pub lat_mean_ns: f64,
    /// Smallest latency, ns.
    pub lat_min_ns: u64,
    /// Largest latency, ns.
    pub lat_max_ns: u64,
    /// Latency in ns at fio's default percentiles, keyed as fio's JSON keys them
    /// (`"99.900000"`; see [`PERCENTILES`]), found in fio's bins as fio finds them
    /// (`crate::histogram`): within 1/128 of the true value, and never outside
    /// [`lat_min_ns`, `lat_max_ns`].
    pub percentiles_ns: BTreeMap<String, u64>,
}

/// Utilisation at or above which the busiest resource is the run's bottleneck. A
/// resource idle more than a tenth of the time was waiting for work: throughput was set
/// by how fast requests came back (Little's law: outstanding I/Os over latency), and
/// adding load would still raise it nearly in proportion. At 90 % busy a queue at the
/// resource dominates (an M/M/1 queue waits 9 service times), which is what a
/// bottleneck means to the reader. Parallel resources (an SSD's dies) report the mean
/// over their units, so 0.9 also leaves room for units that are busier than the mean.
pub const SATURATION_UTILISATION: f64 = 0.9;

/// The stages of a host I/O's path, in the order it crosses them, as keys of
/// [`Explain::latency_ns_by_stage`].
pub const STAGES: [&str; 4] = ["host", "controller", "link", "drive"];

/// Utilisation of every resource, the bottleneck, and the member I/O per host I/O.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explain {
    /// Every resource, in a fixed order (controller, paths, then drives).
    pub resources: Vec<Resource>,
    /// The busiest resource (the bottleneck when `bound` is `resource`).
    pub bottleneck: String,
    /// Utilisation of the bottleneck.
    pub bottleneck_utilisation: f64,
    /// `resource` when the busiest resource is at least [`SATURATION_UTILISATION`]
    /// busy, else `latency`: no resource is near saturation and the run is as fast as
    /// its I/Os come back (`stage_longest` says where their time goes).
    #[serde(default)]
    pub bound: String,
    /// Mean time a measured host I/O spent in each stage of its path ([`STAGES`]):
    /// `host` from issue until the controller takes it (host stack, I/O scheduler, and
    /// a controller preset's `added_latency_ns`, which the front end folds into the
    /// host's per-request overhead);
    /// `link` moving its data over the drive links and the controller's paths and bus;
    /// `drive` in the drives (queued at the port or in the drive, seek, rotation,
    /// flash); `controller` the rest (firmware, parity, cache, waits between phases).
    /// A request split over members counts the member that finished last of each
    /// phase. The stages add up to the mean latency.
    #[serde(default)]
    pub latency_ns_by_stage: BTreeMap<String, f64>,
    /// The stage with the largest share of `latency_ns_by_stage`.
    #[serde(default)]
    pub stage_longest: String,
    /// Member operations per host I/O, per direction.
    pub member_ios_per_host_io: BTreeMap<String, f64>,
    /// Member bytes per host byte, per direction.
    pub member_bytes_per_host_byte: BTreeMap<String, f64>,
    /// Host reads served from the controller's read-ahead buffer.
    pub read_ahead_hits: u64,
    /// Reads the drives served from their own read-ahead buffers.
    pub drive_read_ahead_hits: u64,
    /// Parity (and reconstructed) bytes computed per host byte, per direction.
    pub parity_bytes_per_host_byte: BTreeMap<String, f64>,
    /// Flash units programmed per unit the host wrote, mean over SSDs with an FTL.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ssd_write_amplification: Option<f64>,
    /// The host's I/O scheduler, when the scenario has one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub scheduler: Option<SchedulerReport>,
    /// Each member's commands, in member order: what its link, firmware and media
    /// were asked to do (the physical bounds of `tests/suite/invariants.rs` read these).
    /// Absent from documents written before it existed.
    #[serde(default)]
    pub members: Vec<MemberCounters>,
    /// The SSD cache tier, when the array has one (`crate::tier`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cache: Option<CacheReport>,
    /// Flash wear of every member with an FTL over the measured interval, in member
    /// order (empty, and absent from the JSON, when no member has one).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub wear: Vec<MemberWear>,
}

/// One SSD member's flash wear over the measured interval, from its FTL: what its
/// SMART counters would have moved by (docs/wear.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberWear {
    /// The member, as in [`Explain::members`].
    pub member: u32,
    /// The FTL's mapping unit: host writes are counted in whole units.
    pub map_unit_bytes: u64,
    /// Bytes the array wrote to the drive, in whole mapping units.
    pub host_write_bytes: u64,
    /// Bytes programmed into flash: the host's and garbage collection's copies.
    pub nand_write_bytes: u64,
    /// `nand_write_bytes / host_write_bytes` (1 with no writes).
    pub write_amplification: f64,
    /// Blocks erased.
    pub erased_blocks: u64,
    /// Erase blocks of the drive's flash (rated capacity plus spare).
    pub flash_blocks: u64,
    /// P/E cycles used per block, mean over the flash (`erased_blocks / flash_blocks`).
    pub erase_count_mean: f64,
    /// P/E cycles used by the most erased block: the mean times `erase_count_spread`.
    pub erase_count_max: f64,
    /// Erases of the most erased block over the mean, in the scaled FTL state over its
    /// whole life (preconditioning included; a short run erases too few blocks to
    /// show a spread of its own). No wear levelling is modelled beyond what greedy or
    /// cost-benefit victim choice does.
    pub erase_count_spread: f64,
    /// Blocks of the scaled FTL state the spread is taken from.
    pub scaled_blocks: u32,
    /// Erases the scaled state did over the interval.
    pub scaled_erases: u64,
}

/// One member's commands over the measured interval, counted when the drive completes
/// them: host I/O, read-ahead, rebuild and destage traffic alike.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberCounters {
    /// Read commands completed.
    pub read_ops: u64,
    /// Bytes those reads moved over the member's link.
    pub read_bytes: u64,
    /// Write commands completed.
    pub write_ops: u64,
    /// Bytes those writes moved over the member's link.
    pub write_bytes: u64,
    /// Discard (TRIM) commands completed; they move no data.
    pub trim_ops: u64,
}

/// What the host's I/O scheduler did over the measured interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchedulerReport {
    /// `none`, `mq-deadline` or `bfq`.
    pub name: String,
    /// Requests the device took at once.
    pub queue_depth: u32,
    /// Requests the scheduler held at most, queued and in flight.
    pub nr_requests: u32,
    /// Largest request a merge built.
    pub max_request_bytes: u64,
    /// Host I/Os merged into another's request instead of going out on their own.
    pub host_ios_merged: u64,
    /// Requests sent to the array.
    pub requests_dispatched: u64,
    /// Host I/Os per request sent (1 without merging).
    pub host_ios_per_request: f64,
    /// Requests served out of LBA order because their deadline had passed.
    pub expired: u64,
    /// bfq turns that ended because the process in service sent nothing within
    /// `slice_idle`.
    pub idle_expiries: u64,
}

/// One resource's busy time over the measured interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resource {
    /// e.g. `drive0.flash`, `controller.cpu`, `bus.up`.
    pub name: String,
    /// `controller`, `path`, `drive`.
    pub kind: String,
    /// Busy time (mean over units for parallel resources).
    pub busy_ns: u64,
    /// Busy time over the measured interval, 0..=1.
    pub utilisation: f64,
}

/// One workload's figures (a fio job, or a group of `numjobs` clones).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobResults {
    /// Name from the scenario.
    pub name: String,
    /// Per direction that did I/O.
    pub ops: BTreeMap<String, OpStats>,
    /// Its measured time: from the start of measurement until it completed.
    pub runtime_ns: u64,
    /// I/Os and bytes per interval, for IOPS/bandwidth statistics and steady state.
    pub samples: Samples,
}

/// Completed I/Os and bytes per sample interval, per direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Samples {
    /// Interval length, ns.
    pub interval_ns: u64,
    /// Reads completed per interval.
    pub read_ios: Vec<u64>,
    /// Read bytes per interval.
    pub read_bytes: Vec<u64>,
    /// Writes completed per interval.
    pub write_ios: Vec<u64>,
    /// Write bytes per interval.
    pub write_bytes: Vec<u64>,
    /// Discards completed per interval (only when the workload discards).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trim_ios: Vec<u64>,
    /// Discarded bytes per interval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trim_bytes: Vec<u64>,
}

/// fio's default percentile list: (the key fio's JSON prints, the percentile). The
/// results' `percentiles_ns` use these keys, so reports read like fio's.
pub const PERCENTILES: [(&str, f64); 17] = [
    ("1.000000", 1.0),
    ("5.000000", 5.0),
    ("10.000000", 10.0),
    ("20.000000", 20.0),
    ("30.000000", 30.0),
    ("40.000000", 40.0),
    ("50.000000", 50.0),
    ("60.000000", 60.0),
    ("70.000000", 70.0),
    ("80.000000", 80.0),
    ("90.000000", 90.0),
    ("95.000000", 95.0),
    ("99.000000", 99.0),
    ("99.500000", 99.5),
    ("99.900000", 99.9),
    ("99.950000", 99.95),
    ("99.990000", 99.99),
];

/// What the cache tier did over the measured host I/O.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheReport {
    /// Policy name.
    pub policy: String,
    /// Cache bytes used.
    pub capacity_bytes: u64,
    /// Cache line.
    pub line_bytes: u64,
    /// The policy's counters over the measured host I/O (`raidlab_cache::Counters`).
    pub counters: BTreeMap<String, u64>,
    /// Read lines served from the cache, of all read lines.
    pub read_hit_ratio: f64,
    /// Read lines served from the RRC (raidix).
    pub read_hit_ratio_rrc: f64,
    /// Read lines served from the RWC (raidix).
    pub read_hit_ratio_rwc: f64,
    /// Written lines stored in the cache, of all written lines.
    pub write_cached_ratio: f64,
    /// SSD write hits (the article's M01/M02 metric as read here): bytes the cache
    /// writes to its SSD array (host data, admissions, refills) per byte the host
    /// writes. None when the host wrote nothing.
    pub ssd_write_hits: Option<f64>,
    /// Cache-device bytes written per host byte moved (reads and writes).
    pub cache_write_bytes_per_host_byte: f64,
    /// The cache SSDs' NAND writes over the measured host I/O: member bytes written
    /// times their FTL's write amplification (1 for SSDs without an FTL model).
    pub ssd_nand_write_bytes: f64,
    /// Flash write amplification of the cache SSDs in their run.
    pub ssd_write_amplification: Option<f64>,
    /// Bytes destaged to the main array.
    pub destaged_bytes: u64,
    /// Bytes the host wrote in the measured interval.
    pub host_write_bytes: u64,
    /// Bytes the host read in the measured interval.
    pub host_read_bytes: u64,
    /// Every piece: the I/O one workload sent one array, and how fast it went.
    pub pieces: Vec<PieceReport>,
}

/// One piece of a workload's I/O on one array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PieceReport {
    /// The host workload's name.
    pub workload: String,
    /// `cache` or `main`.
    pub array: String,
    /// fio's pattern of the piece (`randread`, `write`, ...).
    pub rw: String,
    /// Array requests in the policy pass's measured interval.
    pub ops: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Array requests per second the piece reached in its array's run.
    pub iops: f64,
    /// Time the piece needs for its requests, ns (ops / iops).
    pub time_ns: u64,
    /// Whether it sets its workload's pace.
    pub bottleneck: bool,
}
