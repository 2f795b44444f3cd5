//! Logical-to-member mapping: a bijection onto the members' data blocks for every level
//! and layout; copies on distinct members; parity blocks disjoint from data.

use crate::common::*;
use proptest::prelude::*;
use raidlab_layout::{Geometry, Level, Location, Raid0};
use std::collections::HashSet;

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn every_copy_of_every_chunk_has_its_own_member_chunk(spec in arb_spec()) {
        let geo = Geometry::new(&spec).unwrap();
        let su = geo.stripe_unit_bytes();
        let used = geo.member_used_bytes();
        let mut seen: HashSet<Location> = HashSet::new();
        let chunks = geo.capacity_bytes() / su;
        prop_assert_eq!(geo.capacity_bytes() % su, 0);
        for c in 0..chunks {
            // A byte inside the chunk maps to the same place plus its column.
            let inside = c * su + (c * 3 * 512) % su;
            let first = geo.locate(c * su);
            prop_assert_eq!(geo.locate(inside).offset_bytes, first.offset_bytes + inside % su);
            let mut members = HashSet::new();
            for loc in geo.copies_of(c * su) {
                prop_assert!(loc.member < geo.members());
                prop_assert_eq!(loc.offset_bytes % su, 0);
                prop_assert!(loc.offset_bytes + su <= used);
                prop_assert!(loc.offset_bytes + su <= spec.member_capacity_bytes);
                prop_assert!(seen.insert(loc), "two chunks share {:?}", loc);
                prop_assert!(members.insert(loc.member), "two copies on member {}", loc.member);
            }
            prop_assert_eq!(members.len() as u32, geo.copies());
            prop_assert_eq!(geo.copies_of(c * su).next().unwrap(), first);
            // Parity of the stripe: same row, other members, never data.
            let par = geo.parity_of(c * su);
            for p in [par.p, par.q].into_iter().flatten() {
                prop_assert_eq!(p.offset_bytes, first.offset_bytes);
                prop_assert!(p.member != first.member);
            }
            prop_assert_eq!(par.p.is_some(), geo.parity_per_stripe() >= 1);
            prop_assert_eq!(par.q.is_some(), geo.parity_per_stripe() == 2);
        }
        let blocks = seen.len() as u64;
        prop_assert_eq!(blocks, chunks * u64::from(geo.copies()));
        if geo.parity_per_stripe() > 0 {
            // Data and parity partition every chunk of every member.
            let mut parity = HashSet::new();
            for c in 0..chunks {
                let par = geo.parity_of(c * su);
                for p in [par.p, par.q].into_iter().flatten() {
                    prop_assert!(!seen.contains(&p), "parity {:?} holds data", p);
                    parity.insert(p);
                }
            }
            prop_assert_eq!(blocks + parity.len() as u64, u64::from(geo.members()) * geo.stripes_per_span());
        }
    }

    #[test]
    fn stripe_address_inverts_to_the_logical_byte(spec in arb_spec(), a in any::<u64>()) {
        let geo = Geometry::new(&spec).unwrap();
        let l = (a % (geo.capacity_bytes() / 512)) * 512;
        if let Some(addr) = geo.stripe_address(l) {
            prop_assert_eq!(geo.logical_of(addr.id, addr.data_index, addr.column_bytes), l);
            prop_assert_eq!(
                geo.locate(l),
                Location {
                    member: geo.data_member(addr.id, addr.data_index),
                    offset_bytes: geo.stripe_offset_bytes(addr.id) + addr.column_bytes,
                }
            );
            prop_assert!(geo.span_members(addr.id.span).contains(&geo.locate(l).member));
        }
    }

    #[test]
    fn level_raid0_agrees_with_the_raid0_type(r in any::<[u32; 6]>(), a in any::<u64>()) {
        let spec = make_spec(Level::Raid0, r);
        let geo = Geometry::new(&spec).unwrap();
        let old = Raid0::new(spec.drive_count, spec.stripe_unit_bytes, spec.member_capacity_bytes).unwrap();
        prop_assert_eq!(geo.capacity_bytes(), old.capacity_bytes());
        let l = (a % (geo.capacity_bytes() / 512)) * 512;
        let loc = geo.locate(l);
        prop_assert_eq!((loc.member, loc.offset_bytes), old.map(l));
    }
}

#[test]
fn raid10_near_two_copies_on_four_drives_pairs_adjacent_members() {
    // md n2, 4 drives: chunk 0 on 0 and 1, chunk 1 on 2 and 3, chunk 2 on 0 and 1 row 1.
    let geo = Geometry::new(&raidlab_layout::ArraySpec::new(
        Level::Raid10,
        4,
        4096,
        1 << 20,
    ))
    .unwrap();
    assert_eq!(copy_chunks(&geo, 0), vec![(0, 0), (1, 0)]);
    assert_eq!(copy_chunks(&geo, 1), vec![(2, 0), (3, 0)]);
    assert_eq!(copy_chunks(&geo, 2), vec![(0, 1), (1, 1)]);
    assert_eq!(geo.capacity_bytes(), 2 << 20);
}

#[test]
fn raid10_far_and_offset_copies_shift_by_one_member() {
    use raidlab_layout::{ArraySpec, Layout};
    // 3 drives of 8 chunks, 2 copies. Far: second copy in the second half (stride 4 rows).
    let far =
        Geometry::new(&ArraySpec::new(Level::Raid10, 3, 4096, 8 * 4096).with_layout(Layout::Far))
            .unwrap();
    assert_eq!(copy_chunks(&far, 0), vec![(0, 0), (1, 4)]);
    assert_eq!(copy_chunks(&far, 2), vec![(2, 0), (0, 4)]);
    assert_eq!(copy_chunks(&far, 4), vec![(1, 1), (2, 5)]);
    assert_eq!(far.capacity_bytes(), 12 * 4096);
    // Offset: second copy in the next row.
    let off = Geometry::new(
        &ArraySpec::new(Level::Raid10, 3, 4096, 8 * 4096).with_layout(Layout::Offset),
    )
    .unwrap();
    assert_eq!(copy_chunks(&off, 0), vec![(0, 0), (1, 1)]);
    assert_eq!(copy_chunks(&off, 2), vec![(2, 0), (0, 1)]);
    assert_eq!(copy_chunks(&off, 3), vec![(0, 2), (1, 3)]);
}

#[test]
fn raid10_near_two_copies_on_three_drives_wraps_into_the_next_row() {
    let geo = Geometry::new(&raidlab_layout::ArraySpec::new(
        Level::Raid10,
        3,
        4096,
        4 * 4096,
    ))
    .unwrap();
    assert_eq!(copy_chunks(&geo, 0), vec![(0, 0), (1, 0)]);
    assert_eq!(copy_chunks(&geo, 1), vec![(2, 0), (0, 1)]);
    assert_eq!(copy_chunks(&geo, 2), vec![(1, 1), (2, 1)]);
    assert_eq!(geo.capacity_bytes(), 6 * 4096);
}

#[test]
fn raid50_stripes_chunks_over_spans_first() {
    use raidlab_layout::{ArraySpec, StripeId};
    let geo =
        Geometry::new(&ArraySpec::new(Level::Raid50, 6, 4096, 1 << 20).with_spans(2)).unwrap();
    let id = |l: u64| geo.stripe_address(l).unwrap().id;
    assert_eq!(id(0), StripeId { span: 0, stripe: 0 });
    assert_eq!(id(4096), StripeId { span: 1, stripe: 0 });
    assert_eq!(id(2 * 4096), StripeId { span: 0, stripe: 0 });
    assert_eq!(id(4 * 4096), StripeId { span: 0, stripe: 1 });
    assert_eq!(geo.locate(4096).member, 3);
    assert_eq!(geo.data_members_per_stripe(), 4);
    assert_eq!(geo.capacity_bytes(), 4 << 20);
}
