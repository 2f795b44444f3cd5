//! The RAID controller: its costs, cache, the paths the data takes, and how it
//! balances mirrored reads.

use super::limits;
use serde::{Deserialize, Serialize};

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
    /// How the strips one request puts on a member become commands: merged into one
    /// (as md does through the block layer) or one command per strip (as hardware and
    /// chipset RAID firmware does), each paying the drive's per-command cost.
    #[serde(default)]
    pub member_commands: MemberCommands,
    /// When a request's member commands leave the controller: all together once the
    /// CPU has built every one, or each as soon as it is built.
    #[serde(default)]
    pub member_dispatch: MemberDispatch,
    /// Commands the controller keeps outstanding on one member at most (None: as many
    /// as the drive queues); the rest wait in the controller.
    #[serde(default)]
    pub member_queue_depth: Option<u32>,
    /// Where the members' platters are relative to each other (HDD arrays): all at the
    /// same angle at every instant, or each at its own angle.
    #[serde(default)]
    pub spindle_phase: SpindlePhase,
    /// Per-port link rate.
    pub port_rate_bytes_per_s: f64,
    /// Members on ports of `port_rate_bytes_per_s`, the first ones (None: all). The
    /// others sit on ports of `slow_port_rate_bytes_per_s`, as a chipset's SATA ports
    /// come in two generations (Intel's 6 Series/C200 PCH: ports 0-1 at 6 Gb/s, 2-5 at
    /// 3 Gb/s), so an array of more members than fast ports has some on slow ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_rate_ports: Option<u32>,
    /// Link rate of the ports after the first `full_rate_ports` (None: as the others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_port_rate_bytes_per_s: Option<f64>,
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
    /// Read-ahead fills only the rest of the stripe unit a read ends in (hardware RAID
    /// firmware: the controller moves data to its cache "in increments equal to the
    /// stripe-unit size"), rather than a window of segments ahead of the stream: reads
    /// of whole stripe units gain nothing from it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_ahead_within_stripe_unit: bool,
    /// The rate a rebuild is kept at under load, bytes of the rebuilt member per second
    /// (Linux md's `speed_limit_min`, per device; None: no minimum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuild_rate_min_bytes_per_s: Option<f64>,
    /// The share of the rebuild's rate limit kept under load, percent (a hardware
    /// controller's "rebuild rate", the share of its resources given to a rebuild;
    /// None: none). With both, the larger minimum holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuild_share_percent: Option<f64>,
    /// Rebuild units in flight at most while the rebuild is below its minimum (above
    /// it, one at a time, as md waits for its resync I/O to drain when the array is
    /// busy).
    #[serde(default = "default_rebuild_depth")]
    pub rebuild_depth: u32,
    /// A PCIe link that the data of some members shares on its way to the host (a
    /// chipset's DMI: the PCH's drives reach the CPU over it); None: every member has
    /// its own path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uplink: Option<UplinkSpec>,
}

/// A shared PCIe link between some members and the host, each direction: member data
/// crosses it, as the drives behind a chipset reach the CPU over its DMI.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UplinkSpec {
    /// PCIe generation of the link (DMI 3.0 is PCIe 3.0 x4 electrically).
    pub pcie_gen: u32,
    /// Lanes of the link.
    pub pcie_lanes: u32,
    /// Largest data payload of one TLP.
    #[serde(default = "default_uplink_payload")]
    pub pcie_max_payload_bytes: u64,
    /// Members behind it, the last ones of the array (None: all): the others are
    /// attached to the CPU's own lanes.
    #[serde(default)]
    pub members: Option<u32>,
    /// Data payload of each completion carrying the members' DMA reads of host memory
    /// (the data they write) towards them (None: as `pcie_max_payload_bytes`, in
    /// TLPs of that size). A completer that splits completions at a 64 B read
    /// completion boundary carries less data host-to-device than device-to-host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_completion_bytes: Option<u64>,
    /// A measured ceiling of the device-to-host direction (the members' reads) below
    /// what the TLP arithmetic gives, where a published measurement of the link shows
    /// one (None: the arithmetic's rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_rate_bytes_per_s_max: Option<f64>,
    /// The same for the host-to-device direction (the members' writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_rate_bytes_per_s_max: Option<f64>,
}

impl ControllerSpec {
    /// Link rate of the port member `member` is attached to.
    pub fn member_port_rate(&self, member: u32) -> f64 {
        match (self.full_rate_ports, self.slow_port_rate_bytes_per_s) {
            (Some(fast), Some(slow)) if member >= fast => slow,
            _ => self.port_rate_bytes_per_s,
        }
    }
}

impl UplinkSpec {
    /// Payload rate of the link device-to-host: the members' reads, posted writes of
    /// `pcie_max_payload_bytes` each.
    pub fn rate_bytes_per_s(&self) -> f64 {
        let framed = self.posted_rate();
        self.up_rate_bytes_per_s_max
            .map_or(framed, |max| framed.min(max))
    }

    /// What the link carries in posted writes of `pcie_max_payload_bytes`, by the TLP
    /// arithmetic alone.
    fn posted_rate(&self) -> f64 {
        crate::drive::pcie::pcie_payload_rate(
            self.pcie_gen,
            self.pcie_lanes,
            self.pcie_max_payload_bytes,
        )
    }

    /// Payload rate of the link host-to-device: the members' writes, whose data they
    /// fetch by DMA reads and receive in completions.
    pub fn down_rate_bytes_per_s(&self) -> f64 {
        let framed = match self.pcie_completion_bytes {
            Some(bytes) => {
                crate::drive::pcie::pcie_completion_rate(self.pcie_gen, self.pcie_lanes, bytes)
            }
            None => self.posted_rate(),
        };
        self.down_rate_bytes_per_s_max
            .map_or(framed, |max| framed.min(max))
    }

    /// The first member behind the link in an array of `drive_count`.
    pub fn first_member(&self, drive_count: u32) -> u32 {
        drive_count - self.members.unwrap_or(drive_count).min(drive_count)
    }
}

fn default_uplink_payload() -> u64 {
    limits::UPLINK_MAX_PAYLOAD.default.int()
}

fn default_rebuild_depth() -> u32 {
    limits::CONTROLLER_REBUILD_DEPTH.default.int() as u32
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

/// How the strips a request puts on one member become member commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum MemberCommands {
    /// Adjacent strips on a member go as one command, up to the largest transfer.
    #[default]
    Merged,
    /// One command per strip.
    PerStrip,
}

/// When the member commands of one request leave the controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum MemberDispatch {
    /// All at once, after the request's overhead and every command's.
    #[default]
    Batch,
    /// One after the other: the first after the request's overhead, each next one a
    /// member operation's overhead later (the firmware posts a command as soon as it
    /// has built it and does its bookkeeping after), so a request on one member waits
    /// for no member-operation overhead; the CPU is busy as long as in `Batch`.
    Serial,
}

/// Whether an array's disks spin in step (see `ControllerSpec::spindle_phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SpindlePhase {
    /// Every member's platter at the same angle at the same instant (spindles
    /// synchronised, as drives wired for spindle sync are).
    #[default]
    Lockstep,
    /// Each member's platter a fixed angle ahead of the first member's, drawn from the
    /// run's seed and the member's index: drives with no spindle synchronisation.
    PerMember,
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
    /// Linux md of kernels 3.6 to 5.2: RAID 1 as `LeastOutstanding` (md raid1 reads
    /// from the SSD mirror with the fewest pending I/Os since commit 9dedf60313fa4,
    /// Linux 3.6); RAID 10 reads from an idle copy if one is, else from the copy whose
    /// drive last finished nearest the address (its "head position"), SSDs included,
    /// until Linux 5.3 (G. Jiang, "md/raid10: read balance chooses idlest disk for
    /// SSD", 2019: "RAID-1 can be 3x faster than RAID-10 sometimes").
    Md,
}

#[cfg(test)]
mod tests {
    use super::UplinkSpec;

    fn dmi2(up: Option<f64>, down: Option<f64>) -> UplinkSpec {
        UplinkSpec {
            pcie_gen: 2,
            pcie_lanes: 4,
            pcie_max_payload_bytes: 256,
            members: None,
            pcie_completion_bytes: Some(64),
            up_rate_bytes_per_s_max: up,
            down_rate_bytes_per_s_max: down,
        }
    }

    #[test]
    fn measured_ceilings_cap_the_framed_rates_and_never_raise_them() {
        // DMI 2.0 x4: 2.0 GB/s after 8b/10b; 256 B writes up, 64 B completions down.
        let framed = dmi2(None, None);
        assert!((framed.rate_bytes_per_s() - 2.0e9 * 256.0 / 280.0).abs() < 1.0);
        assert!((framed.down_rate_bytes_per_s() - 2.0e9 * 64.0 / 84.0).abs() < 1.0);
        let measured = dmi2(Some(1.6e9), Some(1.2e9));
        assert_eq!(measured.rate_bytes_per_s(), 1.6e9);
        assert_eq!(measured.down_rate_bytes_per_s(), 1.2e9);
        let above = dmi2(Some(9e9), Some(9e9));
        assert_eq!(above.rate_bytes_per_s(), framed.rate_bytes_per_s());
        assert_eq!(
            above.down_rate_bytes_per_s(),
            framed.down_rate_bytes_per_s()
        );
    }
}
