//! Turning a host request into member operations.
//!
//! A [`Plan`] has two phases: every extent in `reads` completes first, then the parity
//! listed per stripe in `stripes` is computed, then every extent in `writes` is issued.
//! Extents are merged per member within a phase (contiguous or overlapping ranges become
//! one) and sorted by (member, offset).
//!
//! Write rules are md's (drivers/md/raid5.c `handle_stripe_dirtying`), decided for each
//! *segment* of a stripe: a column range in which every data chunk is either entirely
//! written or untouched (md decides per 4 KiB page; with 4 KiB-aligned requests the two
//! agree, and for smaller requests a segment is exact to the sector):
//!
//! - read-modify-write reads the old data of the written chunks and the old P (and Q):
//!   `rmw = written + parity` reads;
//! - reconstruct-write reads the data chunks not written: `rcw = data - written` reads;
//! - md takes RMW only when `rmw < rcw` (its default `rmw_level`,
//!   PARITY_ENABLE_RMW), so a tie is a reconstruct-write; a full stripe reads nothing.
//! - A method that would read a failed member is impossible (md counts it `2 * disks`).
//!   When neither is possible (RAID 6 with two failures, say), every survivor of the
//!   segment is read, the missing old data rebuilt, and new parity computed
//!   ([`StripeKind::DegradedWrite`]). When every parity block of the stripe is lost,
//!   only the data is written ([`StripeKind::WriteWithoutParity`]); md would still read
//!   for a reconstruct-write it cannot store.
//!
//! A read of a lost chunk reads every survivor of its stripe in the same columns (data
//! and parity, as md's `fetch_block` does) and rebuilds it. Mirrors read one surviving
//! copy, chosen by a [`CopyChooser`], and write every surviving copy. A plan never
//! touches a failed member, except the replacement a rebuild writes.

mod concat;
mod mirror;
mod parity_write;
mod rebuild;
mod striped;
mod trim;

pub use mirror::{CopyChooser, LeastOutstanding, RoundRobin};

use crate::geometry::Family;
use crate::{Geometry, Level, MemberExtent, MemberSet, SECTOR_BYTES};

/// A host request on the array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Logical byte offset, a multiple of [`SECTOR_BYTES`].
    pub offset_bytes: u64,
    /// Length in bytes, a nonzero multiple of [`SECTOR_BYTES`].
    pub len_bytes: u64,
    /// A write (else a read).
    pub write: bool,
}

/// What one stripe segment of a plan does between the read and the write phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StripeKind {
    /// Healthy read of data chunks.
    Read,
    /// Read of a lost chunk: every survivor read, the lost data rebuilt.
    DegradedRead,
    /// Write without redundancy (RAID 0, concat).
    Write,
    /// Read-modify-write: old data and old parity read, parity updated.
    Rmw,
    /// Reconstruct-write: unwritten data read, parity computed from all data.
    Rcw,
    /// Every data chunk written: parity computed from new data, nothing read.
    FullStripe,
    /// Degraded write no cheaper method can do: every survivor read, lost old data
    /// rebuilt, parity recomputed.
    DegradedWrite,
    /// Every parity block of the stripe is lost: surviving data written, nothing else.
    WriteWithoutParity,
    /// RAID 1/10: one copy read, or every surviving copy written.
    Mirror,
    /// Rebuild of a replacement member: survivors read, the lost block recomputed
    /// (parity levels) or copied (mirrors), the replacement written.
    Rebuild,
}

/// One stripe segment of a plan: what a real engine computes between the phases.
///
/// For striped levels (RAID 0/4/5/6/50/60) it covers columns
/// `[column_offset_bytes, +column_len_bytes)` of every chunk of stripe (`span`,
/// `stripe`), i.e. bytes `stripe * stripe_unit_bytes + column_offset_bytes ..` on each
/// member in `read`/`written`. For concat, RAID 1 and RAID 10 it covers the logical
/// range starting `column_offset_bytes` into logical chunk `stripe`, of
/// `column_len_bytes` bytes, and `span` is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StripePlan {
    /// Sub-array (RAID 50/60), 0 otherwise.
    pub span: u32,
    /// Stripe within the span (striped levels) or logical chunk (others).
    pub stripe: u64,
    /// What is done.
    pub kind: StripeKind,
    /// Byte offset of the segment within each chunk.
    pub column_offset_bytes: u64,
    /// Length of the segment in bytes, the same in each chunk it touches.
    pub column_len_bytes: u64,
    /// Members read in the segment (old data, old parity, survivors).
    pub read: MemberSet,
    /// Members written in the segment (new data, new parity, replacement).
    pub written: MemberSet,
    /// Failed members of the stripe (for a rebuild, including the replacement).
    pub lost: MemberSet,
    /// Bytes of blocks computed: parity blocks (P and Q each count) and rebuilt data.
    pub parity_bytes: u64,
    /// Bytes of the input blocks those computations consume (a simulator's XOR/GF cost).
    pub parity_source_bytes: u64,
}

/// The member operations of one request, in two phases, plus what is computed per stripe.
/// Reuse one `Plan` across requests: planning only clears it, so it stops allocating
/// once its vectors have grown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Phase 1: member reads, all complete before any computation.
    pub reads: Vec<MemberExtent>,
    /// Phase 2: member writes, issued after the computation.
    pub writes: Vec<MemberExtent>,
    /// Per stripe segment: what is read, computed and written.
    pub stripes: Vec<StripePlan>,
    /// Sum of the stripes' `parity_bytes`.
    pub parity_bytes: u64,
    /// Sum of the stripes' `parity_source_bytes`.
    pub parity_source_bytes: u64,
}

impl Plan {
    /// An empty plan.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties the plan, keeping its capacity.
    pub fn clear(&mut self) {
        self.reads.clear();
        self.writes.clear();
        self.stripes.clear();
        self.parity_bytes = 0;
        self.parity_source_bytes = 0;
    }

    /// Bytes read in phase 1.
    pub fn read_bytes(&self) -> u64 {
        self.reads.iter().map(|e| e.len_bytes).sum()
    }

    /// Bytes written in phase 2.
    pub fn write_bytes(&self) -> u64 {
        self.writes.iter().map(|e| e.len_bytes).sum()
    }

    fn push_stripe(&mut self, s: StripePlan) {
        self.parity_bytes += s.parity_bytes;
        self.parity_source_bytes += s.parity_source_bytes;
        self.stripes.push(s);
    }
}

/// Why a request could not be planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// A request of zero bytes.
    EmptyRequest,
    /// Offset or length not a multiple of [`SECTOR_BYTES`].
    Unaligned {
        /// The request offset.
        offset_bytes: u64,
        /// The request length.
        len_bytes: u64,
    },
    /// The request ends beyond the array (or the member, for a rebuild).
    BeyondCapacity {
        /// Where the request ends.
        end_bytes: u64,
        /// The capacity it must stay within.
        capacity_bytes: u64,
    },
    /// The failed set names a member the array does not have.
    UnknownMember {
        /// The member.
        member: u32,
        /// Members in the array.
        drive_count: u32,
    },
    /// More failures than the level survives: data is lost.
    TooManyFailures {
        /// The level.
        level: Level,
        /// The failed members.
        failed: MemberSet,
        /// What the level survives in every case.
        tolerated_failures: u32,
    },
    /// A rebuild of a member that is not in the failed set.
    NotFailed {
        /// The member.
        member: u32,
    },
    /// A rebuild on a level without redundancy.
    NoRedundancy {
        /// The level.
        level: Level,
    },
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::EmptyRequest => write!(f, "a request of zero bytes"),
            Self::Unaligned {
                offset_bytes,
                len_bytes,
            } => write!(
                f,
                "request [{offset_bytes}, +{len_bytes}) is not aligned to {SECTOR_BYTES} B sectors"
            ),
            Self::BeyondCapacity {
                end_bytes,
                capacity_bytes,
            } => write!(f, "request ends at {end_bytes} B, beyond {capacity_bytes} B"),
            Self::UnknownMember {
                member,
                drive_count,
            } => write!(f, "failed member {member} does not exist ({drive_count} members)"),
            Self::TooManyFailures {
                level,
                failed,
                tolerated_failures,
            } => write!(
                f,
                "members {failed} failed: data lost ({level} survives {tolerated_failures} failure(s) in every case{})",
                if matches!(level, Level::Raid10 | Level::Raid50 | Level::Raid60) {
                    ", more depending on which"
                } else {
                    ""
                }
            ),
            Self::NotFailed { member } => {
                write!(f, "member {member} is rebuilt but is not in the failed set")
            }
            Self::NoRedundancy { level } => write!(f, "{level} has no redundancy to rebuild from"),
        }
    }
}

impl std::error::Error for PlanError {}

/// Sorts by (member, offset) and merges contiguous or overlapping extents in place.
fn coalesce(extents: &mut Vec<MemberExtent>) {
    extents.sort_unstable_by_key(|e| (e.member, e.offset_bytes));
    let mut kept = 0;
    for i in 0..extents.len() {
        let e = extents[i];
        if kept > 0 {
            let last = &mut extents[kept - 1];
            let last_end = last.offset_bytes + last.len_bytes;
            if last.member == e.member && e.offset_bytes <= last_end {
                last.len_bytes = last_end.max(e.offset_bytes + e.len_bytes) - last.offset_bytes;
                continue;
            }
        }
        extents[kept] = e;
        kept += 1;
    }
    extents.truncate(kept);
}

impl Geometry {
    fn check_failed(&self, failed: &MemberSet) -> Result<(), PlanError> {
        // A healthy array (the simulator's every request, almost always) survives.
        if failed.is_empty() {
            return Ok(());
        }
        if let Some(m) = failed.max_member().filter(|&m| m >= self.members()) {
            return Err(PlanError::UnknownMember {
                member: m,
                drive_count: self.members(),
            });
        }
        if !self.tolerates(failed) {
            return Err(PlanError::TooManyFailures {
                level: self.level(),
                failed: *failed,
                tolerated_failures: self.tolerated_failures(),
            });
        }
        Ok(())
    }

    /// Plans `req` with `failed` members gone into `out` (cleared first). Mirrored reads
    /// ask `chooser` which copy to read. Errors, never panics, on a bad request or on
    /// more failures than the array survives.
    pub fn plan(
        &self,
        req: Request,
        failed: &MemberSet,
        chooser: &mut impl CopyChooser,
        out: &mut Plan,
    ) -> Result<(), PlanError> {
        out.clear();
        if req.len_bytes == 0 {
            return Err(PlanError::EmptyRequest);
        }
        if !req.offset_bytes.is_multiple_of(SECTOR_BYTES)
            || !req.len_bytes.is_multiple_of(SECTOR_BYTES)
        {
            return Err(PlanError::Unaligned {
                offset_bytes: req.offset_bytes,
                len_bytes: req.len_bytes,
            });
        }
        let end_bytes = req.offset_bytes.saturating_add(req.len_bytes);
        if end_bytes > self.capacity_bytes() {
            return Err(PlanError::BeyondCapacity {
                end_bytes,
                capacity_bytes: self.capacity_bytes(),
            });
        }
        self.check_failed(failed)?;
        if self.level() == Level::Raid0 {
            // RAID 0 is the simulator's hot path: one merged extent per member, straight
            // from the RAID 0 mapping (property-tested to agree with the general one).
            let target = if req.write {
                &mut out.writes
            } else {
                &mut out.reads
            };
            self.raid0().plan(req.offset_bytes, req.len_bytes, target);
            return Ok(());
        }
        if self.family() == Family::Striped && failed.is_empty() {
            // The stripe unit is a power of two: the first and last byte share their
            // chunk when they differ only below it.
            if req.offset_bytes ^ (end_bytes - 1) < self.stripe_unit_bytes() {
                // Inside one chunk of a healthy array (small random I/O, the
                // simulator's hot path): one stripe segment, one extent per member in
                // member order, so there is nothing to coalesce (property-tested to
                // agree with the general path).
                self.plan_chunk(req, out);
                return Ok(());
            }
        }
        match self.family() {
            Family::Striped => self.plan_striped(req, failed, out),
            Family::Concat => self.plan_concat(req, out),
            Family::Mirror1 | Family::Mirror10(_) => self.plan_mirror(req, failed, chooser, out),
        }
        coalesce(&mut out.reads);
        coalesce(&mut out.writes);
        self.assert_plan(failed, None, out);
        if !req.write && failed.is_empty() {
            debug_assert_eq!(
                out.read_bytes(),
                req.len_bytes,
                "a healthy read reads the request once"
            );
        }
        Ok(())
    }

    /// Invariants of every plan: members exist, extents are nonempty and inside the
    /// used area, and no failed member is touched (but `replacement` may be written).
    fn assert_plan(&self, failed: &MemberSet, replacement: Option<u32>, out: &Plan) {
        let used = self.member_used_bytes();
        for e in out.reads.iter().chain(&out.writes) {
            debug_assert!(e.member < self.members() && e.len_bytes > 0);
            debug_assert!(e.offset_bytes + e.len_bytes <= used);
        }
        assert!(
            out.reads.iter().all(|e| !failed.contains(e.member)),
            "a plan reads a failed member"
        );
        assert!(
            out.writes
                .iter()
                .all(|e| !failed.contains(e.member) || Some(e.member) == replacement),
            "a plan writes a failed member"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ArraySpec, Layout};

    /// Striped levels with parity in every layout, and RAID 0 over spans' worth of
    /// members: (level, drives, spans, layout).
    fn striped_arrays() -> Vec<(Level, u32, Option<u32>, Option<Layout>)> {
        let rotations = [
            Layout::LeftSymmetric,
            Layout::LeftAsymmetric,
            Layout::RightSymmetric,
            Layout::RightAsymmetric,
        ];
        let mut arrays = vec![(Level::Raid4, 3, None, None), (Level::Raid4, 6, None, None)];
        for layout in rotations {
            for n in [3, 4, 5, 9] {
                arrays.push((Level::Raid5, n, None, Some(layout)));
            }
            for n in [4, 5, 7, 256] {
                arrays.push((Level::Raid6, n, None, Some(layout)));
            }
            arrays.push((Level::Raid50, 9, Some(3), Some(layout)));
            arrays.push((Level::Raid60, 10, Some(2), Some(layout)));
        }
        arrays
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        /// A request inside one chunk of a healthy striped array, planned directly,
        /// is the plan the general path (every span and stripe walked, extents
        /// coalesced) makes of it.
        #[test]
        fn one_chunk_plans_agree_with_the_general_path(
            array in 0usize..64,
            su_shift in 0u32..6,
            chunk in 0u64..100_000,
            first_sector in 0u64..128,
            sectors in 1u64..129,
            write in proptest::bool::ANY,
        ) {
            let arrays = striped_arrays();
            let (level, n, spans, layout) = arrays[array % arrays.len()];
            let su = SECTOR_BYTES << (su_shift + 1);
            let mut spec = ArraySpec::new(level, n, su, 1 << 30);
            spec.layout = layout;
            spec.spans = spans;
            let g = Geometry::new(&spec).expect("a valid array");
            let per_chunk = su / SECTOR_BYTES;
            let first = first_sector % per_chunk;
            let len = sectors.min(per_chunk - first);
            let chunk = chunk % (g.capacity_bytes() / su);
            let req = Request {
                offset_bytes: chunk * su + first * SECTOR_BYTES,
                len_bytes: len * SECTOR_BYTES,
                write,
            };
            let healthy = MemberSet::new();
            let mut fast = Plan::new();
            g.plan(req, &healthy, &mut RoundRobin::new(), &mut fast).expect("planned");
            let mut general = Plan::new();
            g.plan_striped(req, &healthy, &mut general);
            coalesce(&mut general.reads);
            coalesce(&mut general.writes);
            proptest::prop_assert_eq!(fast, general);
        }
    }
}
