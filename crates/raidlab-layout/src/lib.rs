//! Pure RAID layout math: where a logical byte of an array lives on its members, and
//! which member operations one host request becomes.
//!
//! Nothing here knows about time or I/O. The simulator and (later) the real-data
//! engine call the same functions, so what the simulator charges is exactly what the
//! engine would do.
//!
//! ```text
//!  logical:  | c0 | c1 | c2 | c3 | c4 | c5 | ...      (chunks of stripe_unit_bytes)
//!  RAID 0:     m0   m1   m2   m0   m1   m2           (3 members)
//!  member 0: | c0 | c3 | c6 | ...
//! ```
//!
//! ```
//! use raidlab_layout::{Raid0, MemberExtent};
//! let raid = Raid0::new(3, 16 * 1024, 1 << 30).unwrap();
//! let mut plan = Vec::new();
//! raid.plan(0, 64 * 1024, &mut plan);
//! // 64 KiB over 16 KiB chunks on 3 members: member 0 gets chunks 0 and 3 (contiguous on it).
//! assert_eq!(plan[0], MemberExtent { member: 0, offset_bytes: 0, len_bytes: 32 * 1024 });
//! assert_eq!(plan.iter().map(|e| e.len_bytes).sum::<u64>(), 64 * 1024);
//! ```

mod raid0;

pub use raid0::Raid0;

/// Smallest addressable unit: every offset and length the layouts accept is a multiple.
pub const SECTOR_BYTES: u64 = 512;

/// Most members an array may have (a bound, not a limitation of the math).
pub const MEMBERS_MAX: u32 = 256;

/// A contiguous byte range on one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberExtent {
    /// Index of the member, below the member count.
    pub member: u32,
    /// Byte offset on the member.
    pub offset_bytes: u64,
    /// Length in bytes, never zero.
    pub len_bytes: u64,
}

/// Why a geometry was refused. The message names the field and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutError {
    /// The offending field, as the scenario names it.
    pub field: &'static str,
    /// What is allowed and what was given.
    pub message: String,
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for LayoutError {}
