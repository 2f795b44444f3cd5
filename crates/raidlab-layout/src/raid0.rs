//! RAID 0: chunks of `stripe_unit_bytes` dealt round-robin over the members.

use crate::{LayoutError, MemberExtent, MEMBERS_MAX, SECTOR_BYTES};

/// Striping without redundancy. One member is a plain drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raid0 {
    members: u32,
    stripe_unit_bytes: u64,
    chunks_per_member: u64,
}

impl Raid0 {
    /// A RAID 0 of `members` drives of `member_capacity_bytes` each (the smallest member
    /// counts for mixed sizes; the caller passes that one).
    pub fn new(
        members: u32,
        stripe_unit_bytes: u64,
        member_capacity_bytes: u64,
    ) -> Result<Self, LayoutError> {
        if members == 0 || members > MEMBERS_MAX {
            return Err(LayoutError {
                field: "drive_count",
                message: format!("RAID 0 needs 1..={MEMBERS_MAX} drives, got {members}"),
            });
        }
        if stripe_unit_bytes < SECTOR_BYTES || !stripe_unit_bytes.is_power_of_two() {
            return Err(LayoutError {
                field: "stripe_unit_bytes",
                message: format!(
                    "must be a power of two >= {SECTOR_BYTES} B, got {stripe_unit_bytes}"
                ),
            });
        }
        let chunks_per_member = member_capacity_bytes / stripe_unit_bytes;
        if chunks_per_member == 0 {
            return Err(LayoutError {
                field: "capacity_bytes",
                message: format!(
                    "a member of {member_capacity_bytes} B holds no {stripe_unit_bytes} B chunk"
                ),
            });
        }
        Ok(Self {
            members,
            stripe_unit_bytes,
            chunks_per_member,
        })
    }

    /// A geometry already validated elsewhere (by `Geometry::new`).
    pub(crate) fn from_parts(members: u32, stripe_unit_bytes: u64, chunks_per_member: u64) -> Self {
        debug_assert!(members > 0 && stripe_unit_bytes.is_power_of_two() && chunks_per_member > 0);
        Self {
            members,
            stripe_unit_bytes,
            chunks_per_member,
        }
    }

    /// Number of members.
    pub fn members(&self) -> u32 {
        self.members
    }

    /// Chunk size on one member, in bytes.
    pub fn stripe_unit_bytes(&self) -> u64 {
        self.stripe_unit_bytes
    }

    /// Usable capacity: whole chunks only.
    pub fn capacity_bytes(&self) -> u64 {
        self.chunks_per_member * self.stripe_unit_bytes * u64::from(self.members)
    }

    /// Where logical byte `logical_bytes` lives: (member, offset on the member).
    pub fn map(&self, logical_bytes: u64) -> (u32, u64) {
        debug_assert!(logical_bytes < self.capacity_bytes());
        let chunk = logical_bytes / self.stripe_unit_bytes;
        let within = logical_bytes % self.stripe_unit_bytes;
        let n = u64::from(self.members);
        let member = (chunk % n) as u32;
        (member, (chunk / n) * self.stripe_unit_bytes + within)
    }

    /// The member extents of a request: one per member it touches, because the chunks a
    /// request puts on one member are consecutive chunks of that member. Written into
    /// `out` (cleared first) in member order, so planning allocates nothing once `out`
    /// has grown to the member count.
    pub fn plan(&self, offset_bytes: u64, len_bytes: u64, out: &mut Vec<MemberExtent>) {
        assert!(len_bytes > 0, "a request has at least one byte");
        assert!(
            offset_bytes + len_bytes <= self.capacity_bytes(),
            "request [{offset_bytes}, +{len_bytes}) beyond capacity {}",
            self.capacity_bytes()
        );
        out.clear();
        let su = self.stripe_unit_bytes;
        let n = u64::from(self.members);
        let end = offset_bytes + len_bytes;
        let chunk_first = offset_bytes / su;
        let chunk_last = (end - 1) / su;
        if chunk_first == chunk_last {
            // Inside one chunk (most small requests): one extent, no walk over members.
            out.push(MemberExtent {
                member: (chunk_first % n) as u32,
                offset_bytes: (chunk_first / n) * su + offset_bytes % su,
                len_bytes,
            });
            return;
        }
        let touched = (chunk_last - chunk_first + 1).min(n);
        // Visit members in index order for a stable plan.
        for step in 0..n {
            let member = step;
            // First chunk of the request on this member.
            let delta = (member + n - chunk_first % n) % n;
            if delta >= touched {
                continue;
            }
            let first = chunk_first + delta;
            // Last chunk of the request on this member.
            let last = chunk_last - ((chunk_last % n + n - member) % n);
            debug_assert!(first <= last && first % n == member && last % n == member);
            let start_logical = (first * su).max(offset_bytes);
            let end_logical = ((last + 1) * su).min(end);
            let start_member = (first / n) * su + (start_logical - first * su);
            let end_member = (last / n) * su + (end_logical - last * su);
            out.push(MemberExtent {
                member: member as u32,
                offset_bytes: start_member,
                len_bytes: end_member - start_member,
            });
        }
        debug_assert_eq!(out.iter().map(|e| e.len_bytes).sum::<u64>(), len_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_member_is_identity() {
        let r = Raid0::new(1, 4096, 1 << 20).unwrap();
        let mut p = Vec::new();
        r.plan(12345 & !511, 8192, &mut p);
        assert_eq!(
            p,
            vec![MemberExtent {
                member: 0,
                offset_bytes: 12288,
                len_bytes: 8192
            }]
        );
    }

    #[test]
    fn small_request_inside_one_chunk_touches_one_member() {
        let r = Raid0::new(4, 65536, 1 << 30).unwrap();
        let mut p = Vec::new();
        r.plan(65536 * 5 + 4096, 4096, &mut p);
        assert_eq!(
            p,
            vec![MemberExtent {
                member: 1,
                offset_bytes: 65536 + 4096,
                len_bytes: 4096
            }]
        );
    }
}
