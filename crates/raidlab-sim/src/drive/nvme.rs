//! NVMe drives: the flash of [`crate::drive::ssd`] behind a PCIe link and NVMe's queues.
//!
//! ```text
//!  submission queues ─► firmware ─► die (tR) ─► channel ─► PCIe up   ─► completion (read)
//!  (io_queues x          (serial     (the SSD flash model: channels x dies,
//!   queue_entries - 1)    per cmd)    page reads, programs, write buffer)
//!                         firmware ─► PCIe down ─► buffer ─► completion          (write)
//! ```
//!
//! What differs from a SATA SSD is the host side, not the flash:
//!
//! - **The link** is PCIe, generation x lanes, full duplex: reads' data goes up while
//!   writes' data comes down. Its payload rate is the lanes' signalling rate less the
//!   line code (8b/10b up to gen 2, 128b/130b from gen 3) and less each TLP's framing
//!   and header around at most `pcie_max_payload_bytes` of data ([`pcie_payload_rate`]).
//! - **The queues**: NVMe has up to 65,535 I/O submission queues of up to 65,536
//!   entries; a queue of N entries holds N - 1 commands (it is full when the tail is one
//!   behind the head). The drive takes `io_queues x (queue_entries - 1)` commands at
//!   once: no 32-command NCQ limit.
//! - **No SATA/AHCI costs**: no FIS exchange holding a half-duplex link per command
//!   and no slower queued-command path. A command's own traffic on the link (fetching
//!   its 64 B submission entry, posting its 16 B completion entry and the MSI-X
//!   interrupt) goes with its data: [`COMMAND_LINK_BYTES`].
//!
//! The flash behind it (channels, dies, tR, tPROG, write buffer, read buffer, program
//! suspend) is [`crate::drive::ssd::Ssd`]'s, built from [`NvmeSpec::flash_spec`].

use crate::scenario::{NvmeSpec, SsdSpec, IODEPTH_MAX};

pub use super::pcie::{pcie_completion_rate, pcie_payload_rate, PCIE_LANES, TLP_OVERHEAD_BYTES};

/// Link traffic of one NVMe command besides its data: the 64 B submission queue entry
/// the drive fetches, the 16 B completion queue entry it posts and the 4 B MSI-X
/// message, each in its own TLP (NVM Express base specification 1.3, 4.2 and 4.6).
pub const COMMAND_LINK_BYTES: u64 = 64 + 16 + 4 + 3 * TLP_OVERHEAD_BYTES;

impl NvmeSpec {
    /// Payload rate of the drive's PCIe link, each direction.
    pub fn link_rate_bytes_per_s(&self) -> f64 {
        pcie_payload_rate(self.pcie_gen, self.pcie_lanes, self.pcie_max_payload_bytes)
    }

    /// Commands the drive holds at once over all its I/O queues (capped at the
    /// simulator's largest queue depth).
    pub fn command_slots(&self) -> u32 {
        let slots = u64::from(self.io_queues) * (u64::from(self.queue_entries) - 1);
        slots.min(u64::from(IODEPTH_MAX)) as u32
    }

    /// The flash drive the SSD model simulates: this drive's flash and firmware behind
    /// its PCIe link, with none of SATA's per-command costs.
    pub fn flash_spec(&self) -> SsdSpec {
        let link_rate = self.link_rate_bytes_per_s();
        SsdSpec {
            model: self.model.clone(),
            capacity_bytes: self.capacity_bytes,
            link_rate_bytes_per_s: link_rate,
            command_overhead_ns: self.command_overhead_ns,
            // The command's queue entries and interrupt on the link, with its data.
            link_command_overhead_ns: (COMMAND_LINK_BYTES as f64 * 1e9 / link_rate).round() as u64,
            write_link_rate_bytes_per_s: None,
            write_link_command_overhead_ns: None,
            channels: self.channels,
            dies_per_channel: self.dies_per_channel,
            page_bytes: self.page_bytes,
            read_page_ns: self.read_page_ns,
            program_page_ns: self.program_page_ns,
            channel_rate_bytes_per_s: self.channel_rate_bytes_per_s,
            write_buffer_bytes: self.write_buffer_bytes,
            write_commit_ns: 0,
            queued_command_latency_ns: 0,
            write_merge_unit_bytes: 0,
            ftl: None,
            read_buffer: self.read_buffer,
            program_suspend: self.program_suspend,
            read_retry_percent: 0.0,
            ncq_depth: self.command_slots(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;
    use serde_json::json;

    #[test]
    fn gen3_x4_carries_about_3_6_gb_s_of_payload_at_256_b_tlps() {
        // 8 GT/s x 4 x 128/130 / 8 = 3.94 GB/s raw; 256 / 280 of it is data.
        let rate = pcie_payload_rate(3, 4, 256);
        assert!((rate - 3.6e9).abs() < 0.01e9, "{rate}");
        // Gen 2 pays 8b/10b: 5 GT/s x 4 x 0.8 / 8 = 2 GB/s raw.
        let gen2 = pcie_payload_rate(2, 4, 256);
        assert!((gen2 - 2e9 * 256.0 / 280.0).abs() < 1.0, "{gen2}");
        // Smaller TLPs waste more: 128 B payloads carry 128/152 of the raw rate.
        assert!(pcie_payload_rate(3, 4, 128) < rate * 0.93);
        assert!((pcie_payload_rate(4, 4, 256) / rate - 2.0).abs() < 1e-9);
    }

    /// Measured I/Os: fewer for large transfers, whose pages cost as many events.
    fn ios(bs: u64) -> u64 {
        if bs >= 1 << 20 {
            300
        } else {
            4000
        }
    }

    /// A scenario of one NVMe drive: a fast flash back end (32 dies) behind `gen` x4.
    fn one_drive(gen: u32, rw: &str, bs: u64, iodepth: u32) -> Scenario {
        let value = json!({"schema": 1, "seed": 3,
            "array": {"level": 0, "stripe_unit_bytes": 131072, "drive_count": 1,
                "drive": {"kind": "nvme", "capacity_bytes": 512_000_000_000u64,
                    "pcie_gen": gen, "pcie_lanes": 4, "io_queues": 8, "queue_entries": 1024,
                    "command_overhead_ns": 1_000, "channels": 8, "dies_per_channel": 4,
                    "page_bytes": 16384, "read_page_ns": 60_000, "program_page_ns": 600_000,
                    "channel_rate_bytes_per_s": 1.2e9, "write_buffer_bytes": 67_108_864u64,
                    "read_buffer": true},
                "controller": {"port_rate_bytes_per_s": 1e11}},
            "workload": {"rw": rw, "bs": [[bs, 1]], "iodepth": iodepth,
                "size_bytes": 8_589_934_592u64, "ios": ios(bs), "warmup_ios": ios(bs) / 10}});
        Scenario::from_value(value).expect("a valid NVMe scenario")
    }

    fn read_mbps(s: &Scenario) -> (f64, f64, f64) {
        let r = crate::simulate(s);
        let op = &r.ops["read"];
        (op.mbps, op.iops, op.lat_mean_ns)
    }

    #[test]
    fn sequential_reads_stop_at_the_link_payload_rate() {
        // The flash could read 8 x 1.2 GB/s; a gen 3 x4 link carries 3.6 GB/s.
        let (mbps, _, _) = read_mbps(&one_drive(3, "read", 1 << 20, 32));
        let ceiling = pcie_payload_rate(3, 4, 256) / 1e6;
        assert!(mbps <= ceiling * 1.0001, "{mbps} above {ceiling}");
        assert!(mbps > ceiling * 0.95, "{mbps} well below {ceiling}");
        // Gen 4 doubles the link; the flash channels (9.6 GB/s) do not bind yet.
        let (gen4, _, _) = read_mbps(&one_drive(4, "read", 1 << 20, 32));
        assert!(gen4 > 1.8 * mbps, "{gen4} vs {mbps}");
    }

    #[test]
    fn random_reads_keep_scaling_past_32_commands() {
        // 32 dies at 60 us tR: ~530k 4K reads/s at best, which needs ~32+ reads in
        // flight. A SATA drive stops at 32 (NCQ); NVMe's queues take 64 and 128.
        let iops = |qd| read_mbps(&one_drive(3, "randread", 4096, qd)).1;
        let (q32, q64, q128) = (iops(32), iops(64), iops(128));
        assert!(q64 > 1.15 * q32, "QD 64 {q64} vs QD 32 {q32}");
        assert!(q128 > 1.05 * q64, "QD 128 {q128} vs QD 64 {q64}");
    }

    #[test]
    fn a_lone_4k_read_costs_the_firmware_the_sense_and_two_transfers() {
        let s = one_drive(3, "randread", 4096, 1);
        let (_, _, lat) = read_mbps(&s);
        // Floor: firmware 1 us + tR 60 us + 4 KiB over a 1.2 GB/s channel (3.4 us) +
        // 4 KiB and the command's queue entries over the link (1.2 us).
        let spec = match &s.array.drive {
            crate::scenario::DriveSpec::Nvme(n) => n.clone(),
            _ => unreachable!("an NVMe drive"),
        };
        let link_ps = crate::resource::ps_per_byte(spec.link_rate_bytes_per_s());
        let floor = 1_000.0
            + 60_000.0
            + crate::resource::transfer_ns(4096, crate::resource::ps_per_byte(1.2e9)) as f64
            + crate::resource::transfer_ns(4096 + COMMAND_LINK_BYTES, link_ps) as f64;
        assert!(lat >= floor - 2.0, "{lat} below the floor {floor}");
        assert!(
            lat < floor * 1.02,
            "{lat} vs floor {floor}: queueing at QD 1?"
        );
    }

    #[test]
    fn the_drive_holds_every_queue_less_one_entry_each() {
        let s = one_drive(3, "read", 4096, 1);
        let crate::scenario::DriveSpec::Nvme(n) = &s.array.drive else {
            unreachable!("an NVMe drive")
        };
        assert_eq!(n.command_slots(), 8 * 1023);
        assert_eq!(n.flash_spec().ncq_depth, 8 * 1023);
        assert_eq!(n.flash_spec().queued_command_latency_ns, 0);
    }

    /// Sequential reads of a RAID 0 of `drives` gen 3 x4 drives, `behind` of them
    /// behind a gen 3 x4 uplink (a chipset's DMI 3.0).
    fn behind_an_uplink(drives: u32, behind: Option<u32>) -> f64 {
        let mut value = serde_json::to_value(one_drive(3, "read", 1 << 20, 32)).unwrap();
        value["array"]["drive_count"] = json!(drives);
        value["array"]["controller"]["uplink"] =
            json!({"pcie_gen": 3, "pcie_lanes": 4, "members": behind});
        read_mbps(&Scenario::from_value(value).expect("a valid uplink")).0
    }

    #[test]
    fn members_behind_an_uplink_share_its_rate() {
        let uplink = pcie_payload_rate(3, 4, 256) / 1e6;
        for drives in [2, 3] {
            let mbps = behind_an_uplink(drives, None);
            assert!(
                mbps <= uplink * 1.0001,
                "{drives} drives: {mbps} above {uplink}"
            );
            assert!(mbps > uplink * 0.95, "{drives} drives: {mbps}");
        }
        // One member of two behind it: the other has its own path.
        let mbps = behind_an_uplink(2, Some(1));
        assert!(mbps > 1.8 * uplink, "{mbps}");
    }

    /// Sequential 1 MiB writes at QD 32 of a RAID 0 of two drives behind a gen 3 x4
    /// uplink whose completions carry `completion` bytes each (None: the default).
    fn writes_behind_an_uplink(completion: Option<u64>) -> f64 {
        let mut value = serde_json::to_value(one_drive(3, "write", 1 << 20, 32)).unwrap();
        value["array"]["drive_count"] = json!(2);
        // Programs fast enough that each drive alone could write past 3 GB/s.
        value["array"]["drive"]["program_page_ns"] = json!(150_000);
        value["array"]["controller"]["uplink"] =
            json!({"pcie_gen": 3, "pcie_lanes": 4, "pcie_completion_bytes": completion});
        let s = Scenario::from_value(value).expect("a valid uplink");
        crate::simulate(&s).ops["write"].mbps
    }

    #[test]
    fn writes_behind_an_uplink_ride_in_its_completions() {
        // 64 B completions: 3.94 GB/s x 64 / 84 = 3.0 GB/s of write data, where reads
        // (posted writes of 256 B) get 3.6 GB/s.
        let ceiling = pcie_completion_rate(3, 4, 64) / 1e6;
        assert!((ceiling - 3000.0).abs() < 5.0, "{ceiling}");
        let mbps = writes_behind_an_uplink(Some(64));
        // 0.5 %: the measured window opens and closes on request completions.
        assert!(mbps <= ceiling * 1.005, "{mbps} above {ceiling}");
        assert!(mbps > ceiling * 0.95, "{mbps} well below {ceiling}");
        let full = writes_behind_an_uplink(None);
        assert!(
            full > 1.15 * mbps,
            "default completions {full} vs 64 B {mbps}"
        );
        assert!(
            full <= pcie_payload_rate(3, 4, 256) / 1e6 * 1.0001,
            "{full}"
        );
    }

    #[test]
    fn a_three_lane_link_or_a_sata_key_is_refused() {
        let mut value = serde_json::to_value(one_drive(3, "read", 4096, 1)).unwrap();
        value["array"]["drive"]["pcie_lanes"] = json!(3);
        let e = Scenario::from_value(value.clone()).unwrap_err();
        assert_eq!(e.field, "array.drive.pcie_lanes");
        assert!(e.message.contains("1, 2, 4, 8 or 16"), "{}", e.message);
        value["array"]["drive"]["pcie_lanes"] = json!(4);
        value["array"]["drive"]["ncq_depth"] = json!(32);
        let e = Scenario::from_value(value).unwrap_err();
        assert_eq!(e.field, "array.drive.ncq_depth");
        assert!(e.message.contains("unknown key"), "{}", e.message);
    }
}
