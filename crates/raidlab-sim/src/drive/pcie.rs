//! A PCIe link's payload rate: lanes, generation, line code and each TLP's overhead.
//!
//! A leaf (it imports nothing): the NVMe drive ([`super::nvme`]) runs on it, and the
//! scenario's rules for PCIe fields ask it, without reaching the drive models.

/// Transfer rate of one lane per generation, transfers per second (PCI-SIG base
/// specifications 1.0a: 2.5 GT/s, 2.0: 5 GT/s, 3.0: 8 GT/s, 4.0: 16 GT/s, 5.0: 32 GT/s).
const LANE_TRANSFERS_PER_S: [f64; 5] = [2.5e9, 5e9, 8e9, 16e9, 32e9];

/// Bytes a TLP adds around its data: a 4-DW header (64-bit addresses, 16 B) and the
/// 4 B LCRC, plus the framing: 1 B STP + 2 B sequence number + 1 B END up to gen 2, a
/// 4 B STP token carrying the sequence number from gen 3 (PCIe 3.0 base specification,
/// 4.2.2.3; Xilinx WP350, "Understanding Performance of PCI Express Systems": 20-24 B
/// per TLP). 24 B either way. Data link layer packets (ACK, flow control updates) are
/// left out: a few percent more.
pub const TLP_OVERHEAD_BYTES: u64 = 24;

/// Bytes a completion TLP adds around its data: a 3-DW completion header (12 B), the
/// 4 B LCRC and the gen 3 STP token (4 B) (PCIe 3.0 base specification, 2.2.9 and
/// 4.2.2.3). A completion carries the data of a memory read: what a drive's DMA reads
/// of host memory (the data of its writes) come back in.
pub const COMPLETION_OVERHEAD_BYTES: u64 = 20;

/// Lane counts a PCIe link may have (PCIe base specification: x1, x2, x4, x8, x12,
/// x16, x32; x12 and x32 are never seen in storage and left out).
pub const PCIE_LANES: [u32; 5] = [1, 2, 4, 8, 16];

/// Payload bytes per second one direction of a PCIe link carries: `lanes` at
/// generation `gen`'s rate, less the line code and the TLP overhead per
/// `max_payload_bytes` of data.
pub fn pcie_payload_rate(gen: u32, lanes: u32, max_payload_bytes: u64) -> f64 {
    let mps = max_payload_bytes as f64;
    line_rate(gen, lanes) * mps / (mps + TLP_OVERHEAD_BYTES as f64)
}

/// Payload bytes per second one direction of a PCIe link carries as completions of
/// `completion_bytes` each: the rate of DMA-read data (a drive fetching the data it
/// writes) where the completer splits its completions that small (a root complex
/// completing at its 64 B read completion boundary, one cache line per completion).
pub fn pcie_completion_rate(gen: u32, lanes: u32, completion_bytes: u64) -> f64 {
    let payload = completion_bytes as f64;
    line_rate(gen, lanes) * payload / (payload + COMPLETION_OVERHEAD_BYTES as f64)
}

/// Bytes per second one direction of `lanes` at generation `gen` carries after the
/// line code.
fn line_rate(gen: u32, lanes: u32) -> f64 {
    assert!((1..=5).contains(&gen), "PCIe generation 1-5, got {gen}");
    let code = if gen <= 2 { 8.0 / 10.0 } else { 128.0 / 130.0 };
    LANE_TRANSFERS_PER_S[gen as usize - 1] * code / 8.0 * f64::from(lanes)
}
