//! A member drive: its model behind the command queue the controller fills.
//!
//! The models are [`hdd`] (seek, rotation, zones, the drive's cache, NCQ reordering)
//! and [`ssd`] (channels, dies, pages, its write buffer and the [`ftl`]); an NVMe drive
//! ([`nvme`]) is the SSD model's flash behind a full-duplex PCIe link with NVMe's
//! queues. Each answers "when is this command done" and knows nothing of the array.

pub mod ftl;
pub mod hdd;
mod hdd_mechanics;
pub mod hdd_replay;
pub mod nvme;
pub mod pcie;
pub mod ssd;

use hdd::Hdd;
use ssd::Ssd;
use std::collections::VecDeque;

// Drives live in one vector for the whole run and are never moved, so the size
// difference between the variants costs nothing; boxing would cost a pointer chase on
// every operation.
#[allow(clippy::large_enum_variant)]
pub(crate) enum DriveModel {
    Hdd(Hdd),
    Ssd(Ssd),
}

/// A member as the controller sees it: its model, and the commands it may hold, holds,
/// and waits to send.
pub(crate) struct Drive {
    pub(crate) model: DriveModel,
    pub(crate) ncq_depth: u32,
    pub(crate) outstanding: u32,
    pub(crate) waiting: VecDeque<u32>,
    /// Commands sent at one instant form a burst (the strips of one request): when the
    /// current burst was sent, and how many commands it has.
    pub(crate) burst_ns: u64,
    pub(crate) burst_len: u32,
}
