//! Pure RAID layout math: where a logical byte of an array lives on its members, and
//! which member operations one host request becomes.
//!
//! Nothing here knows about time or I/O. The simulator and (later) the real-data
//! engine call the same functions, so what the simulator charges is exactly what the
//! engine would do.
//!
//! ```text
//!  spec ──► Geometry::new ──► Geometry ──► locate / copies_of / parity_of   (mapping)
//!                                     └──► plan(Request, FailedSet, chooser) ──► Plan
//!                                            reads ─► parity per stripe ─► writes
//!  parity: xor, P+Q over GF(2^8), reconstruct one (RAID 5) or two (RAID 6) blocks
//!
//!  logical:  | c0 | c1 | c2 | c3 | c4 | c5 | ...      (chunks of stripe_unit_bytes)
//!  RAID 5, left-symmetric, 4 members (md's default):
//!  member:      0    1    2    3
//!  stripe 0:   c0   c1   c2   P
//!  stripe 1:   c4   c5   P    c3
//! ```
//!
//! Layouts follow Linux md (drivers/md/raid5.c `raid5_compute_sector`, raid10.c
//! `__raid10_find_phys`), and so do the planner's read-modify-write / reconstruct-write
//! choices (raid5.c `handle_stripe_dirtying`).
//!
//! ```
//! use raidlab_layout::{ArraySpec, FailedSet, Geometry, Level, Plan, Request, RoundRobin};
//! let raid5 = Geometry::new(&ArraySpec::new(Level::Raid5, 5, 65536, 1 << 30)).unwrap();
//! let mut plan = Plan::new();
//! let small_write = Request { offset_bytes: 8192, len_bytes: 4096, write: true };
//! raid5.plan(small_write, &FailedSet::new(), &mut RoundRobin::new(), &mut plan).unwrap();
//! // Read-modify-write: read old data and old parity, write both.
//! assert_eq!((plan.reads.len(), plan.writes.len()), (2, 2));
//! ```
//!
//! The older RAID 0-only API ([`Raid0`]) remains:
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

#![deny(missing_docs)]

mod chunks;
mod geometry;
mod level;
mod member_set;
pub mod parity;
mod planner;
mod raid0;
mod raid10;
mod raid5;
pub mod units;

pub use chunks::{Chunk, Chunks};
pub use geometry::{ArraySpec, Geometry, Location, StripeAddress, StripeId, StripeParity};
pub use level::{Layout, Level};
pub use member_set::{FailedSet, MemberSet};
pub use planner::{
    CopyChooser, LeastOutstanding, Plan, PlanError, Request, RoundRobin, StripeKind, StripePlan,
};
pub use raid0::Raid0;

/// Smallest addressable unit: every offset and length the layouts accept is a multiple.
pub const SECTOR_BYTES: u64 = 512;

/// Most members an array may have (a bound, not a limitation of the math).
pub const MEMBERS_MAX: u32 = 256;

/// Copies of each chunk a RAID 10 keeps unless told otherwise (md's `n2`).
pub const COPIES_DEFAULT: u32 = 2;

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
