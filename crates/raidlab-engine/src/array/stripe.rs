//! The blocks of one parity stripe on real bytes: its members in reconstruct order,
//! its blocks from a read phase with lost ones rebuilt, and P (and Q) of its data.

use crate::array::staged::Staged;
use raidlab_layout::parity;
use raidlab_layout::{FailedSet, Geometry, StripeId};

/// The blocks of stripe `id` over columns `[col, +len)` from staged reads, `lost`
/// members rebuilt. Order as [`Geometry::stripe_members`].
pub(super) fn stripe_blocks(
    geo: &Geometry,
    id: StripeId,
    col: u64,
    len: u64,
    reads: &Staged,
    lost: &FailedSet,
) -> (Vec<u32>, Vec<u32>, Vec<Vec<u8>>) {
    let (members, order) = geo.stripe_members(id);
    let off = geo.stripe_offset_bytes(id) + col;
    let mut blocks: Vec<Vec<u8>> = members
        .iter()
        .map(|&m| {
            if lost.contains(m) {
                vec![0u8; len as usize]
            } else {
                reads.must(m, off, len).to_vec()
            }
        })
        .collect();
    let missing: Vec<usize> = (0..members.len())
        .filter(|&i| lost.contains(members[i]))
        .collect();
    if !missing.is_empty() {
        let mut refs: Vec<&mut [u8]> = blocks.iter_mut().map(|b| b.as_mut_slice()).collect();
        parity::reconstruct(&mut refs, geo.parity_per_stripe() as usize, &missing)
            .expect("the planner only plans stripes the parity can rebuild");
    }
    (members, order, blocks)
}

/// P (and Q) of data blocks in syndrome order.
pub(super) fn parity_of(data: &[&[u8]], parity_count: u32) -> (Vec<u8>, Vec<u8>) {
    let len = data.first().map_or(0, |d| d.len());
    let mut p = vec![0u8; len];
    let mut q = Vec::new();
    if parity_count == 2 {
        q = vec![0u8; len];
        parity::compute_pq(data, &mut p, &mut q);
    } else {
        parity::compute_p(data, &mut p);
    }
    (p, q)
}
