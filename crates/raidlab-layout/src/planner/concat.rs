//! Concatenation (linear): each piece of a request goes to the one member holding it.

use super::{Plan, Request, StripeKind, StripePlan};
use crate::{Geometry, MemberExtent, MemberSet};

impl Geometry {
    pub(super) fn plan_concat(&self, req: Request, out: &mut Plan) {
        let su = self.stripe_unit_bytes();
        let per_member = self.member_used_bytes();
        let end = req.offset_bytes + req.len_bytes;
        let mut at = req.offset_bytes;
        while at < end {
            let piece_end = end.min((at / per_member + 1) * per_member);
            let loc = self.locate(at);
            let e = MemberExtent {
                member: loc.member,
                offset_bytes: loc.offset_bytes,
                len_bytes: piece_end - at,
            };
            let mut set = MemberSet::new();
            set.insert(loc.member);
            let (read, written) = if req.write {
                out.writes.push(e);
                (MemberSet::new(), set)
            } else {
                out.reads.push(e);
                (set, MemberSet::new())
            };
            out.push_stripe(StripePlan {
                span: 0,
                stripe: at / su,
                kind: if req.write {
                    StripeKind::Write
                } else {
                    StripeKind::Read
                },
                column_offset_bytes: at % su,
                column_len_bytes: piece_end - at,
                read,
                written,
                lost: MemberSet::new(),
                parity_bytes: 0,
                parity_source_bytes: 0,
            });
            at = piece_end;
        }
    }
}
