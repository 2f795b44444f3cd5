//! Discards (TRIM, UNMAP): the member ranges a discard of a host range reaches.

use super::{Plan, PlanError, Request, RoundRobin};
use crate::{Geometry, MemberSet};

impl Geometry {
    /// Plans a discard (TRIM, UNMAP) of the host range `req` into the member ranges a
    /// controller that passes discards on sends to its members, in `out.writes`
    /// (`out.reads` stays empty; cleared first). RAID 0, concat and the mirrors discard
    /// every member range that holds the host range (every copy). Parity levels discard
    /// only the whole stripes inside the range, data and parity chunks alike, as md's
    /// RAID 5 does (`raid5_make_discard_request`): a partial stripe keeps its data
    /// because the parity still depends on it. A range without a whole stripe plans
    /// nothing. Failed members are never touched.
    pub fn trim_plan(
        &self,
        req: Request,
        failed: &MemberSet,
        out: &mut Plan,
    ) -> Result<(), PlanError> {
        let (mut offset, mut end) = (
            req.offset_bytes,
            req.offset_bytes.saturating_add(req.len_bytes),
        );
        if end > self.capacity_bytes() {
            return Err(PlanError::BeyondCapacity {
                end_bytes: end,
                capacity_bytes: self.capacity_bytes(),
            });
        }
        if self.parity_per_stripe() > 0 {
            let stripe = self.full_stripe_bytes();
            offset = offset.div_ceil(stripe) * stripe;
            end = end / stripe * stripe;
        }
        if end <= offset {
            out.clear();
            return Ok(());
        }
        // The member ranges a write of the (whole-stripe) range writes are exactly those
        // holding it: data, parity and every copy.
        let write = Request {
            offset_bytes: offset,
            len_bytes: end - offset,
            write: true,
        };
        self.plan(write, failed, &mut RoundRobin::new(), out)?;
        debug_assert!(
            out.reads.is_empty(),
            "a whole-stripe or mirror write reads nothing"
        );
        out.reads.clear();
        out.stripes.clear();
        out.parity_bytes = 0;
        out.parity_source_bytes = 0;
        Ok(())
    }
}
