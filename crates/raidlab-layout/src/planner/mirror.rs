//! Mirrors (RAID 1, RAID 10): which surviving copy a read goes to, and the plan of a
//! mirrored request (one copy read, every surviving copy written).

use super::{Plan, Request, StripeKind, StripePlan};
use crate::geometry::Family;
use crate::{Geometry, MemberExtent, MemberSet, MEMBERS_MAX};

/// Chooses which copy of mirrored data a read goes to.
pub trait CopyChooser {
    /// Index into `candidates` (surviving members holding a copy, md's copy order; never
    /// empty) of the member to read.
    fn choose(&mut self, candidates: &[u32]) -> usize;

    /// As [`CopyChooser::choose`], told where on its member each candidate's copy
    /// starts (`offsets_bytes[i]` for `candidates[i]`): a chooser that weighs the
    /// distance from where a drive last was (md raid10's) needs it; the others ignore it.
    fn choose_at(&mut self, candidates: &[u32], offsets_bytes: &[u64]) -> usize {
        debug_assert_eq!(candidates.len(), offsets_bytes.len());
        self.choose(candidates)
    }
}

/// Cycles through the candidates: the k-th choice takes candidate `k % len`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoundRobin {
    next: u64,
}

impl RoundRobin {
    /// Starts at the first candidate.
    pub fn new() -> Self {
        Self::default()
    }
}

impl CopyChooser for RoundRobin {
    fn choose(&mut self, candidates: &[u32]) -> usize {
        debug_assert!(!candidates.is_empty());
        let i = (self.next % candidates.len() as u64) as usize;
        self.next = self.next.wrapping_add(1);
        i
    }
}

/// Picks the candidate with the fewest outstanding operations (ties: the earliest
/// candidate, so md's first copy), from per-member counts the caller keeps.
#[derive(Debug, Clone, Copy)]
pub struct LeastOutstanding<'a> {
    outstanding: &'a [u32],
}

impl<'a> LeastOutstanding<'a> {
    /// `outstanding[m]` is the number of operations in flight on member `m`.
    pub fn new(outstanding: &'a [u32]) -> Self {
        Self { outstanding }
    }
}

impl CopyChooser for LeastOutstanding<'_> {
    fn choose(&mut self, candidates: &[u32]) -> usize {
        debug_assert!(!candidates.is_empty());
        let mut best = 0;
        for (i, &m) in candidates.iter().enumerate() {
            if self.outstanding[m as usize] < self.outstanding[candidates[best] as usize] {
                best = i;
            }
        }
        best
    }
}

impl Geometry {
    pub(super) fn plan_mirror(
        &self,
        req: Request,
        failed: &MemberSet,
        chooser: &mut impl CopyChooser,
        out: &mut Plan,
    ) {
        let su = self.stripe_unit_bytes();
        let end = req.offset_bytes + req.len_bytes;
        let mut at = req.offset_bytes;
        let mut candidates = [0u32; MEMBERS_MAX as usize];
        let mut offsets = [0u64; MEMBERS_MAX as usize];
        while at < end {
            // md raid1 sends a whole read to one mirror; raid10 splits at chunks.
            let piece_end = match self.family() {
                Family::Mirror1 => end,
                _ => end.min((at / su + 1) * su),
            };
            let len_bytes = piece_end - at;
            let mut count = 0;
            let mut lost = MemberSet::new();
            for loc in self.copies_of(at) {
                if failed.contains(loc.member) {
                    lost.insert(loc.member);
                } else {
                    candidates[count] = loc.member;
                    offsets[count] = loc.offset_bytes;
                    count += 1;
                }
            }
            // check_failed guarantees a surviving copy of every chunk.
            assert!(count > 0, "every copy of logical byte {at} is lost");
            let mut read = MemberSet::new();
            let mut written = MemberSet::new();
            if req.write {
                written = self.write_every_copy(at, len_bytes, failed, out);
            } else {
                let pick = chooser.choose_at(&candidates[..count], &offsets[..count]);
                assert!(pick < count, "chooser picked {pick} of {count} candidates");
                let member = candidates[pick];
                let loc = (0..self.copies())
                    .map(|i| self.copy(at, i))
                    .find(|l| l.member == member)
                    .expect("a candidate is a copy");
                read.insert(member);
                out.reads.push(MemberExtent {
                    member,
                    offset_bytes: loc.offset_bytes,
                    len_bytes,
                });
            }
            out.push_stripe(StripePlan {
                span: 0,
                stripe: at / su,
                kind: StripeKind::Mirror,
                column_offset_bytes: at % su,
                column_len_bytes: len_bytes,
                read,
                written,
                lost,
                parity_bytes: 0,
                parity_source_bytes: 0,
            });
            at = piece_end;
        }
    }

    /// The writes of `len_bytes` at logical `at` to every surviving copy; the members
    /// written.
    fn write_every_copy(
        &self,
        at: u64,
        len_bytes: u64,
        failed: &MemberSet,
        out: &mut Plan,
    ) -> MemberSet {
        let mut written = MemberSet::new();
        for i in 0..self.copies() {
            let loc = self.copy(at, i);
            if !failed.contains(loc.member) {
                written.insert(loc.member);
                out.writes.push(MemberExtent {
                    member: loc.member,
                    offset_bytes: loc.offset_bytes,
                    len_bytes,
                });
            }
        }
        written
    }
}
