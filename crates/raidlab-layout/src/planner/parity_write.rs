//! A write to a parity level: md's read-modify-write / reconstruct-write choice, full
//! stripes, and the degraded cases (see the [planner](super) docs for the rules).

use super::striped::Segment;
use super::{Plan, StripeKind, StripePlan};
use crate::{Geometry, MemberExtent, MemberSet, StripeId};

impl Geometry {
    /// The stripe's parity members and the data members `seg` writes, with the stripe's
    /// placement looked up once (the written ones one by one: a small write touches one).
    #[inline]
    fn parity_and_written_data(&self, id: StripeId, seg: Segment) -> (MemberSet, MemberSet) {
        let (p_member, q_member, placement) = self.parity_members(id);
        let mut parity = MemberSet::new();
        parity.insert(p_member);
        if let Some(q) = q_member {
            parity.insert(q);
        }
        let mut written_data = MemberSet::new();
        for k in seg.w0..=seg.w1 {
            written_data.insert(self.placed_data_member(id, placement, k));
        }
        (parity, written_data)
    }

    /// A write to a parity level: md's RMW / RCW choice, full stripes, degraded cases.
    pub(super) fn plan_parity_write(
        &self,
        id: StripeId,
        seg: Segment,
        failed: &MemberSet,
        out: &mut Plan,
    ) {
        let lost = self.lost_in_span(id.span, failed);
        let col = seg.b - seg.a;
        // The unwritten data members are the rest of the span less its parity, as whole
        // words, so a small write to a wide array does not pay for every data member.
        let (parity, written_data) = self.parity_and_written_data(id, seg);
        let span = self.span_members(id.span);
        let unwritten_data = MemberSet::range(span.start, span.end - span.start)
            .difference(&parity)
            .difference(&written_data);
        let w = seg.w1 - seg.w0 + 1;
        let surviving_parity = parity.len() - parity.intersection(&lost).len();
        let mut sp = StripePlan {
            span: id.span,
            stripe: id.stripe,
            kind: StripeKind::Rcw,
            column_offset_bytes: seg.a,
            column_len_bytes: col,
            read: MemberSet::new(),
            written: MemberSet::new(),
            lost,
            parity_bytes: 0,
            parity_source_bytes: 0,
        };
        // Targets: the surviving written data, and the surviving parity unless all of it is lost.
        for member in written_data.iter().filter(|&x| !lost.contains(x)) {
            sp.written.insert(member);
        }
        if surviving_parity == 0 {
            sp.kind = StripeKind::WriteWithoutParity;
            debug_assert!(
                written_data.intersection(&lost).is_empty(),
                "checked by tolerates"
            );
        } else {
            self.choose_parity_write(id, &mut sp, parity, written_data, unwritten_data, w);
        }
        debug_assert!(sp.read.intersection(&lost).is_empty());
        for member in sp.read.iter() {
            out.reads.push(self.extent(id, member, seg));
        }
        for member in sp.written.iter() {
            out.writes.push(self.extent(id, member, seg));
        }
        out.push_stripe(sp);
    }

    /// The kind of a parity write with surviving parity, and what it reads: a full
    /// stripe, md's RMW when it reads fewer blocks than RCW (or RCW cannot be done), RCW,
    /// or a degraded write that reads every surviving member; with the parity bytes it
    /// computes and reads for them.
    fn choose_parity_write(
        &self,
        id: StripeId,
        sp: &mut StripePlan,
        parity: MemberSet,
        written_data: MemberSet,
        unwritten_data: MemberSet,
        w: u32,
    ) {
        let lost = sp.lost;
        let col = sp.column_len_bytes;
        let d = self.data_per_span_stripe();
        let m = self.parity_per_stripe();
        let surviving_parity = parity.len() - parity.intersection(&lost).len();
        for p in parity.iter().filter(|&p| !lost.contains(p)) {
            sp.written.insert(p);
        }
        let rmw_possible = written_data.union(&parity).intersection(&lost).is_empty();
        let rcw_possible = unwritten_data.intersection(&lost).is_empty();
        let (rmw, rcw) = (w + m, d - w);
        let out_blocks = u64::from(surviving_parity);
        if w == d {
            sp.kind = StripeKind::FullStripe;
            sp.parity_source_bytes = col * u64::from(d);
        } else if rmw_possible && (!rcw_possible || rmw < rcw) {
            sp.kind = StripeKind::Rmw;
            sp.read = written_data.union(&parity);
            // Each parity block folds in old and new data of the written chunks.
            sp.parity_source_bytes = col * u64::from(m) * (2 * u64::from(w) + 1);
        } else if rcw_possible {
            sp.kind = StripeKind::Rcw;
            sp.read = unwritten_data;
            sp.parity_source_bytes = col * u64::from(d) * out_blocks;
        } else {
            sp.kind = StripeKind::DegradedWrite;
            for member in self.span_members(id.span) {
                if !lost.contains(member) {
                    sp.read.insert(member);
                }
            }
            let rebuilt = u64::from(unwritten_data.intersection(&lost).len());
            sp.parity_bytes = col * rebuilt;
            sp.parity_source_bytes =
                col * u64::from(sp.read.len()) + col * u64::from(d) * out_blocks;
        }
        sp.parity_bytes += col * out_blocks;
        if sp.kind == StripeKind::FullStripe {
            sp.parity_source_bytes *= out_blocks;
        }
    }

    /// [`Geometry::plan_parity_write`] on a span with no member lost (the one-chunk
    /// path's writes): the same plan, without the degraded cases' set arithmetic.
    pub(super) fn plan_parity_write_healthy(&self, id: StripeId, seg: Segment, out: &mut Plan) {
        let col = seg.b - seg.a;
        let d = self.data_per_span_stripe();
        let m = self.parity_per_stripe();
        let (parity, written_data) = self.parity_and_written_data(id, seg);
        let written = written_data.union(&parity);
        let w = seg.w1 - seg.w0 + 1;
        let out_blocks = u64::from(m);
        let (kind, read, parity_source_bytes) = if w == d {
            (
                StripeKind::FullStripe,
                MemberSet::new(),
                col * u64::from(d) * out_blocks,
            )
        } else if w + m < d - w {
            // Each parity block folds in old and new data of the written chunks.
            let source = col * u64::from(m) * (2 * u64::from(w) + 1);
            (StripeKind::Rmw, written, source)
        } else {
            let span = self.span_members(id.span);
            let unwritten_data =
                MemberSet::range(span.start, span.end - span.start).difference(&written);
            (
                StripeKind::Rcw,
                unwritten_data,
                col * u64::from(d) * out_blocks,
            )
        };
        let offset_bytes = self.stripe_offset_bytes(id) + seg.a;
        for member in read.iter() {
            out.reads.push(MemberExtent {
                member,
                offset_bytes,
                len_bytes: col,
            });
        }
        for member in written.iter() {
            out.writes.push(MemberExtent {
                member,
                offset_bytes,
                len_bytes: col,
            });
        }
        out.push_stripe(StripePlan {
            span: id.span,
            stripe: id.stripe,
            kind,
            column_offset_bytes: seg.a,
            column_len_bytes: col,
            read,
            written,
            lost: MemberSet::new(),
            parity_bytes: col * out_blocks,
            parity_source_bytes,
        });
    }
}
