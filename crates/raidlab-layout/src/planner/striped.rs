//! Striped levels (RAID 0, 4, 5, 6, 50, 60): a request cut into stripes and each stripe
//! into segments, and the reads (healthy or degraded) and RAID 0 writes of a segment.
//! Writes to a parity level go to [`parity_write`](super::parity_write).

use super::{Plan, Request, StripeKind, StripePlan};
use crate::{Geometry, MemberExtent, MemberSet, StripeId};

/// One segment of a stripe: columns `[a, b)` in which data indices `w0..=w1` are touched.
#[derive(Debug, Clone, Copy)]
pub(super) struct Segment {
    pub(super) a: u64,
    pub(super) b: u64,
    pub(super) w0: u32,
    pub(super) w1: u32,
}

impl Geometry {
    pub(super) fn plan_striped(&self, req: Request, failed: &MemberSet, out: &mut Plan) {
        let su = self.stripe_unit_bytes();
        let spans = u64::from(self.spans());
        let d = u64::from(self.data_per_span_stripe());
        let end = req.offset_bytes + req.len_bytes;
        let (c0, c1) = (req.offset_bytes / su, (end - 1) / su);
        for s in 0..spans {
            // The request's chunks in span s are logical chunks c = s mod spans, which are
            // consecutive chunks c / spans of the span.
            let cf = c0 + (s + spans - c0 % spans) % spans;
            if cf > c1 {
                continue;
            }
            let cl = c1 - (c1 % spans + spans - s) % spans;
            let lo = if cf == c0 { req.offset_bytes % su } else { 0 };
            let hi = if cl == c1 { (end - 1) % su + 1 } else { su };
            let (scf, scl) = (cf / spans, cl / spans);
            let (rf, rl) = (scf / d, scl / d);
            for r in rf..=rl {
                let (k0, lo_r) = if r == rf {
                    ((scf % d) as u32, lo)
                } else {
                    (0, 0)
                };
                let (k1, hi_r) = if r == rl {
                    ((scl % d) as u32, hi)
                } else {
                    (d as u32 - 1, su)
                };
                let id = StripeId {
                    span: s as u32,
                    stripe: r,
                };
                self.plan_stripe(id, k0, lo_r, k1, hi_r, req.write, failed, out);
            }
        }
    }

    /// A request inside one chunk of a healthy array: the one segment `plan_striped`
    /// finds for it, planned without walking the spans and stripes.
    pub(super) fn plan_chunk(&self, req: Request, out: &mut Plan) {
        let at = self
            .stripe_address(req.offset_bytes)
            .expect("a striped level");
        debug_assert!(at.column_bytes + req.len_bytes <= self.stripe_unit_bytes());
        let seg = Segment {
            a: at.column_bytes,
            b: at.column_bytes + req.len_bytes,
            w0: at.data_index,
            w1: at.data_index,
        };
        if req.write && self.parity_per_stripe() > 0 {
            self.plan_parity_write_healthy(at.id, seg, out);
        } else {
            self.plan_segment_plain(at.id, seg, req.write, &MemberSet::new(), out);
        }
    }

    /// One stripe touched from column `lo` of data chunk `k0` to column `hi` of chunk `k1`.
    #[allow(clippy::too_many_arguments)]
    fn plan_stripe(
        &self,
        id: StripeId,
        k0: u32,
        lo: u64,
        k1: u32,
        hi: u64,
        write: bool,
        failed: &MemberSet,
        out: &mut Plan,
    ) {
        let su = self.stripe_unit_bytes();
        debug_assert!(k0 <= k1 && lo < su && hi <= su && hi > 0);
        debug_assert!(k0 < k1 || lo < hi);
        // At most three segments: the columns before min(lo, hi), between, after.
        let mut points = [0, lo.min(hi), lo.max(hi), su];
        if k0 == k1 {
            points = [lo, lo, hi, hi];
        }
        for w in 0..3 {
            let (a, b) = (points[w], points[w + 1]);
            if a == b {
                continue;
            }
            let (w0, w1) = if k0 == k1 {
                (k0, k0)
            } else {
                // Chunk k0 is written from column lo on, chunk k1 up to column hi.
                (
                    if a >= lo { k0 } else { k0 + 1 },
                    if b <= hi { k1 } else { k1 - 1 },
                )
            };
            if w0 > w1 {
                continue;
            }
            let seg = Segment { a, b, w0, w1 };
            if write && self.parity_per_stripe() > 0 {
                self.plan_parity_write(id, seg, failed, out);
            } else {
                self.plan_segment_plain(id, seg, write, failed, out);
            }
        }
    }

    pub(super) fn extent(&self, id: StripeId, member: u32, seg: Segment) -> MemberExtent {
        MemberExtent {
            member,
            offset_bytes: self.stripe_offset_bytes(id) + seg.a,
            len_bytes: seg.b - seg.a,
        }
    }

    pub(super) fn lost_in_span(&self, span: u32, failed: &MemberSet) -> MemberSet {
        // Word-masked, not member by member: the planner asks for every stripe, almost
        // always of an empty set, and a loop over the span made wide arrays pay per member.
        if failed.is_empty() {
            return MemberSet::new();
        }
        let members = self.span_members(span);
        failed.intersection(&MemberSet::range(
            members.start,
            members.end - members.start,
        ))
    }

    /// Reads (healthy or degraded) and RAID 0 writes.
    fn plan_segment_plain(
        &self,
        id: StripeId,
        seg: Segment,
        write: bool,
        failed: &MemberSet,
        out: &mut Plan,
    ) {
        let lost = self.lost_in_span(id.span, failed);
        let col = seg.b - seg.a;
        let mut touched = MemberSet::new();
        let mut lost_touched = false;
        for k in seg.w0..=seg.w1 {
            let m = self.data_member(id, k);
            touched.insert(m);
            lost_touched |= lost.contains(m);
        }
        let mut sp = StripePlan {
            span: id.span,
            stripe: id.stripe,
            kind: StripeKind::Read,
            column_offset_bytes: seg.a,
            column_len_bytes: col,
            read: MemberSet::new(),
            written: MemberSet::new(),
            lost,
            parity_bytes: 0,
            parity_source_bytes: 0,
        };
        if write {
            debug_assert!(lost.is_empty() && self.parity_per_stripe() == 0);
            sp.kind = StripeKind::Write;
            sp.written = touched;
            for m in touched.iter() {
                out.writes.push(self.extent(id, m, seg));
            }
        } else if !lost_touched {
            sp.read = touched;
            for m in touched.iter() {
                out.reads.push(self.extent(id, m, seg));
            }
        } else {
            // md fetch_block: a lost block is computed from every other block of the
            // stripe, so every survivor is read, data and parity.
            sp.kind = StripeKind::DegradedRead;
            for m in self.span_members(id.span) {
                if !lost.contains(m) {
                    sp.read.insert(m);
                    out.reads.push(self.extent(id, m, seg));
                }
            }
            let lost_data = (0..self.data_per_span_stripe())
                .filter(|&k| lost.contains(self.data_member(id, k)))
                .count() as u64;
            sp.parity_bytes = col * lost_data;
            sp.parity_source_bytes = col * u64::from(sp.read.len());
        }
        out.push_stripe(sp);
    }
}
