//! The member drives: HDD and SSD models and their physical parameters, the SSD's FTL.

use super::limits;
use serde::{Deserialize, Serialize};

/// A drive model and its physical parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DriveSpec {
    /// A rotating disk.
    Hdd(HddSpec),
    /// A flash drive.
    Ssd(SsdSpec),
    /// A flash drive on PCIe with NVMe's queues (`crate::drive::nvme`).
    Nvme(NvmeSpec),
}

impl DriveSpec {
    /// Capacity of one drive.
    pub fn capacity_bytes(&self) -> u64 {
        match self {
            DriveSpec::Hdd(h) => h.capacity_bytes,
            DriveSpec::Ssd(s) => s.usable_capacity_bytes(),
            DriveSpec::Nvme(n) => n.capacity_bytes,
        }
    }
}

/// Datasheet-level description of a hard disk.
// No `deny_unknown_fields`: serde cannot combine it with the flattened mechanics, and
// the limits table refuses unknown keys before serde sees them (`validate::walk_table`).
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// Write cache off: write data the buffer holds until it is on the platter; a
    /// queued write takes its data only once it fits (None: the whole buffer).
    #[serde(default)]
    pub write_buffer_bytes: Option<u64>,
    /// Commands the drive accepts at once.
    #[serde(default = "default_hdd_ncq")]
    pub ncq_depth: u32,
    /// DiskSim-level mechanics (`crate::drive::hdd_mechanics`): each absent key keeps
    /// the datasheet model above.
    /// (Boxed: most drives have none, and a drive spec is cloned per member.)
    #[serde(flatten)]
    pub mechanics: Box<HddMechanicsSpec>,
}

/// A disk's mechanics as DiskSim 4's disk module describes them (its `.diskspecs`,
/// `.model` and `.seek` files); every field is optional and absent means the
/// datasheet model of [`HddSpec`] (linear zones, a seek curve through three points, one
/// command overhead, one read-ahead stream).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HddMechanicsSpec {
    /// Data surfaces (heads): a cylinder is this many tracks (None: one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surfaces: Option<u32>,
    /// Zone table: the first cylinder of each zone (empty: linear zones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zone_first_cylinder: Vec<u64>,
    /// Zone table: the last cylinder of each zone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zone_last_cylinder: Vec<u64>,
    /// Zone table: 512-byte sectors per track of each zone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zone_sectors_per_track: Vec<u64>,
    /// Zone table: sectors the next track's first sector is shifted by after a head
    /// switch (track skew), per zone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zone_track_skew_sectors: Vec<u64>,
    /// Zone table: the shift after a move to the next cylinder (cylinder skew), per zone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zone_cylinder_skew_sectors: Vec<u64>,
    /// Measured seek curve: distances in cylinders, ascending (empty: the curve
    /// through the three datasheet seek figures).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seek_table_cylinders: Vec<u64>,
    /// Measured seek curve: the seek time at each of `seek_table_cylinders`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seek_table_ns: Vec<u64>,
    /// Switching to another surface of the same cylinder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_switch_ns: Option<u64>,
    /// Extra settling before a write after a seek or head switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_settle_ns: Option<u64>,
    /// Command overhead of a read the buffer holds, after a read (None:
    /// `command_overhead_ns`); likewise the seven below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_ns_read_hit_after_read: Option<u64>,
    /// ... a read hit after a write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_ns_read_hit_after_write: Option<u64>,
    /// ... a read from the platter after a read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_ns_read_miss_after_read: Option<u64>,
    /// ... a read from the platter after a write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_ns_read_miss_after_write: Option<u64>,
    /// ... a write the cache takes (write cache on), after a read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_ns_write_hit_after_read: Option<u64>,
    /// ... a cached write after a write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_ns_write_hit_after_write: Option<u64>,
    /// ... a write to the platter (write cache off), after a read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_ns_write_miss_after_read: Option<u64>,
    /// ... a write to the platter after a write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_ns_write_miss_after_write: Option<u64>,
    /// Buffer segments, each holding one stream's data (None or 1: one read-ahead
    /// stream, the datasheet model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_segments: Option<u32>,
    /// Bytes of one segment (None: `cache_bytes` over `cache_segments`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_segment_bytes: Option<u64>,
    /// How far the drive prefetches past a read (DiskSim's "Buffer continuous read";
    /// None: `read_ahead_bytes` past every read), never past `read_ahead_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ahead_scheme: Option<ReadAheadScheme>,
    /// Prefetched data may not displace the request's own data from its segment
    /// (DiskSim's "Read-ahead over requested" = 0): a read-ahead ends a segment past
    /// the request's start, not past its end (None: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ahead_keeps_request: Option<bool>,
    /// A segmented buffer serves later reads from the data of the writes it took,
    /// cached writes included (DiskSim's "Allow read hits on write data"; None: true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_hits_on_write_data: Option<bool>,
}

/// DiskSim's prefetch schemes ("Buffer continuous read" 1 to 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadAheadScheme {
    /// To the end of the track holding the read's last sector (1).
    Track,
    /// To the end of its cylinder (2).
    Cylinder,
    /// Until the segment is full (3).
    Segment,
    /// To the end of the next track, only after a read of the previous track: one
    /// track ahead of a sequential stream (4, DEC's scheme).
    Sequential,
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
    /// Link time per command, serial with the data on the link: SATA's FIS exchange
    /// (command, DMA setup, status) holds the half-duplex link while no data moves.
    #[serde(default)]
    pub link_command_overhead_ns: u64,
    /// Writes' payload rate on the link, when it differs from reads' (default:
    /// `link_rate_bytes_per_s`): a drive whose write path takes host data more slowly
    /// than it sends read data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_link_rate_bytes_per_s: Option<f64>,
    /// Link time per write command, when it differs from reads' (default:
    /// `link_command_overhead_ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_link_command_overhead_ns: Option<u64>,
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
    /// Mapping unit of the firmware's write path (0 = none): a write that covers a unit
    /// only in part first reads the unit's old data from flash to merge it
    /// (read-modify-write), as a page-mapped FTL with 4 KiB units must for 512 B writes.
    #[serde(default)]
    pub write_merge_unit_bytes: u64,
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
    /// Share of page reads, percent, whose data the ECC cannot correct at the default
    /// read reference voltages: the firmware reads the page again at the next
    /// read-retry offset (another sense and channel transfer), and a retry fails again
    /// at the same rate (0: every read decodes first time).
    #[serde(default)]
    pub read_retry_percent: f64,
    /// Commands the drive accepts at once.
    #[serde(default = "default_ssd_ncq")]
    pub ncq_depth: u32,
}

/// Datasheet-level description of an NVMe drive: its PCIe link and queues, and the
/// flash behind them (the fields of [`SsdSpec`] of the same names).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvmeSpec {
    /// Preset name, reported back.
    #[serde(default)]
    pub model: String,
    /// Usable capacity.
    pub capacity_bytes: u64,
    /// PCIe generation of the link (1-5).
    pub pcie_gen: u32,
    /// Lanes of the link (1, 2, 4, 8 or 16).
    pub pcie_lanes: u32,
    /// Largest data payload of one TLP (the Max_Payload_Size the host sets).
    #[serde(default = "default_pcie_max_payload")]
    pub pcie_max_payload_bytes: u64,
    /// I/O submission queues the host uses.
    #[serde(default = "default_io_queues")]
    pub io_queues: u32,
    /// Entries of each queue; a queue holds one command fewer than its entries.
    #[serde(default = "default_queue_entries")]
    pub queue_entries: u32,
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
    /// A DRAM read buffer frees a die as soon as its page is sensed.
    #[serde(default)]
    pub read_buffer: bool,
    /// The flash suspends a program or erase for a read.
    #[serde(default)]
    pub program_suspend: bool,
}

fn default_pcie_max_payload() -> u64 {
    limits::NVME_MAX_PAYLOAD.default.int()
}

fn default_io_queues() -> u32 {
    limits::NVME_IO_QUEUES.default.int() as u32
}

fn default_queue_entries() -> u32 {
    limits::NVME_QUEUE_ENTRIES.default.int() as u32
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
    /// Relocations done in one go: the firmware lets the copies garbage collection
    /// owes build up to this many units and then does them all before the next
    /// command, so a few writes wait for a burst (the two-level write latency of
    /// drives that collect in chunks) while the average rate stays that of the
    /// collection. 0: a few copies per host write, paced (consistent latency).
    #[serde(default)]
    pub gc_burst_units: u32,
    /// Background (idle-time) garbage collection: while a die has no program, erase
    /// or read to do, the firmware collects victims ahead of need until this much
    /// free space, percent of the drive's flash, is cleaned in advance; host writes
    /// then use it without waiting for collection. 0: none (every collection is paid
    /// by the writes that need the space, as before).
    #[serde(default)]
    pub idle_gc_free_percent: f64,
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

#[cfg(test)]
impl HddSpec {
    /// A 7200 rpm drive of the datasheet model, for unit tests.
    pub(crate) fn example() -> Self {
        serde_json::from_value(serde_json::json!({
            "capacity_bytes": 250_000_000_000u64, "rpm": 7200,
            "seek_ns_track_to_track": 1_000_000, "seek_ns_avg": 8_500_000,
            "seek_ns_full_stroke": 15_000_000, "media_rate_bytes_per_s_outer": 1.4e8,
            "media_rate_bytes_per_s_inner": 7.5e7, "command_overhead_ns": 200_000,
            "link_rate_bytes_per_s": 2.8e8, "cache_bytes": 8_388_608,
            "read_ahead_bytes": 1_048_576, "write_cache": false
        }))
        .expect("a valid HDD spec")
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
