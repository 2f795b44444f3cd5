//! Rebuild: the reads a replacement member's contents are computed or copied from, and
//! its write.

use super::{coalesce, CopyChooser, Plan, PlanError, StripeKind, StripePlan};
use crate::geometry::Family;
use crate::{Geometry, MemberExtent, MemberSet, MEMBERS_MAX, SECTOR_BYTES};

impl Geometry {
    /// Plans the rebuild of `len_bytes` at `member_offset_bytes` of `replacement` (which
    /// must be in `failed`): reads of the survivors it is computed or copied from, and
    /// the write of the replacement, into `out` (cleared first). A background rebuild
    /// stream calls it one stripe (one chunk row) at a time; unused areas of a RAID 10
    /// member plan nothing.
    pub fn rebuild_plan(
        &self,
        replacement: u32,
        member_offset_bytes: u64,
        len_bytes: u64,
        failed: &MemberSet,
        chooser: &mut impl CopyChooser,
        out: &mut Plan,
    ) -> Result<(), PlanError> {
        out.clear();
        let end =
            self.check_rebuild_request(replacement, member_offset_bytes, len_bytes, failed)?;
        let su = self.stripe_unit_bytes();
        let mut at = member_offset_bytes;
        while at < end {
            let piece_end = end.min((at / su + 1) * su);
            let col = piece_end - at;
            let mut sp = StripePlan {
                span: 0,
                stripe: at / su,
                kind: StripeKind::Rebuild,
                column_offset_bytes: at % su,
                column_len_bytes: col,
                read: MemberSet::new(),
                written: MemberSet::from_members(&[replacement]),
                lost: MemberSet::new(),
                parity_bytes: 0,
                parity_source_bytes: 0,
            };
            let write = MemberExtent {
                member: replacement,
                offset_bytes: at,
                len_bytes: col,
            };
            let planned = match self.family() {
                Family::Striped => {
                    self.rebuild_striped(&mut sp, write, failed, out)?;
                    true
                }
                Family::Concat => {
                    return Err(PlanError::NoRedundancy {
                        level: self.level(),
                    })
                }
                Family::Mirror1 | Family::Mirror10(_) => {
                    self.rebuild_mirrored(&mut sp, write, failed, chooser, out)
                }
            };
            if planned {
                out.push_stripe(sp);
            }
            at = piece_end;
        }
        coalesce(&mut out.reads);
        coalesce(&mut out.writes);
        self.assert_plan(failed, Some(replacement), out);
        Ok(())
    }

    /// Refuses a rebuild request that is empty, unaligned, past the members' used
    /// bytes, or for a replacement that is no member or not failed; returns its end.
    fn check_rebuild_request(
        &self,
        replacement: u32,
        member_offset_bytes: u64,
        len_bytes: u64,
        failed: &MemberSet,
    ) -> Result<u64, PlanError> {
        if len_bytes == 0 {
            return Err(PlanError::EmptyRequest);
        }
        if !member_offset_bytes.is_multiple_of(SECTOR_BYTES)
            || !len_bytes.is_multiple_of(SECTOR_BYTES)
        {
            return Err(PlanError::Unaligned {
                offset_bytes: member_offset_bytes,
                len_bytes,
            });
        }
        let end = member_offset_bytes.saturating_add(len_bytes);
        if end > self.member_used_bytes() {
            return Err(PlanError::BeyondCapacity {
                end_bytes: end,
                capacity_bytes: self.member_used_bytes(),
            });
        }
        if replacement >= self.members() {
            return Err(PlanError::UnknownMember {
                member: replacement,
                drive_count: self.members(),
            });
        }
        if !failed.contains(replacement) {
            return Err(PlanError::NotFailed {
                member: replacement,
            });
        }
        self.check_failed(failed)?;
        Ok(end)
    }

    /// One chunk row of a striped level's rebuild: md's resync reads every other
    /// member of the stripe and computes the replacement's column.
    fn rebuild_striped(
        &self,
        sp: &mut StripePlan,
        write: MemberExtent,
        failed: &MemberSet,
        out: &mut Plan,
    ) -> Result<(), PlanError> {
        if self.parity_per_stripe() == 0 {
            return Err(PlanError::NoRedundancy {
                level: self.level(),
            });
        }
        let col = write.len_bytes;
        sp.span = write.member / self.span_width();
        sp.lost = self.lost_in_span(sp.span, failed);
        for m in self.span_members(sp.span) {
            if !sp.lost.contains(m) {
                sp.read.insert(m);
                out.reads.push(MemberExtent { member: m, ..write });
            }
        }
        sp.parity_bytes = col;
        sp.parity_source_bytes = col * u64::from(sp.read.len());
        out.writes.push(write);
        Ok(())
    }

    /// One chunk of a mirrored level's rebuild: copied from the surviving copy the
    /// chooser picks. False, planning nothing, for an unused area of a RAID 10 member.
    fn rebuild_mirrored(
        &self,
        sp: &mut StripePlan,
        write: MemberExtent,
        failed: &MemberSet,
        chooser: &mut impl CopyChooser,
        out: &mut Plan,
    ) -> bool {
        let at = write.offset_bytes;
        let logical = match self.family() {
            Family::Mirror10(g) => self.raid10_logical_at(g, write.member, at).map(|(l, _)| l),
            _ => Some(at),
        };
        let Some(logical) = logical else {
            return false;
        };
        let mut candidates = [0u32; MEMBERS_MAX as usize];
        let mut count = 0;
        let mut source = None;
        for loc in self.copies_of(logical) {
            if failed.contains(loc.member) {
                sp.lost.insert(loc.member);
            } else {
                candidates[count] = loc.member;
                count += 1;
            }
        }
        assert!(count > 0, "every copy of logical byte {logical} is lost");
        let pick = chooser.choose(&candidates[..count]);
        assert!(pick < count, "chooser picked {pick} of {count} candidates");
        for loc in self.copies_of(logical) {
            if loc.member == candidates[pick] {
                source = Some(loc);
            }
        }
        let source = source.expect("a candidate is a copy");
        let su = self.stripe_unit_bytes();
        sp.read.insert(source.member);
        sp.stripe = logical / su;
        sp.column_offset_bytes = logical % su;
        out.reads.push(MemberExtent {
            member: source.member,
            offset_bytes: source.offset_bytes,
            len_bytes: write.len_bytes,
        });
        out.writes.push(write);
        true
    }
}
