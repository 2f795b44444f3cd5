//! RAID 0 layout properties: the plan agrees sector by sector with `map`, covers the
//! request exactly once, and `map` is a bijection onto the members' data chunks.

use proptest::prelude::*;
use raidlab_layout::{MemberExtent, Raid0, SECTOR_BYTES};
use std::collections::HashSet;

fn geometry() -> impl Strategy<Value = (u32, u64, u64)> {
    (1u32..=9, 0u32..=8, 4u64..=64).prop_map(|(members, su_shift, chunks)| {
        let su = SECTOR_BYTES << su_shift;
        (members, su, su * chunks)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn plan_agrees_with_map_sector_by_sector(
        (members, su, cap) in geometry(), a in any::<u64>(), b in any::<u64>()
    ) {
        let raid = Raid0::new(members, su, cap).unwrap();
        let sectors = raid.capacity_bytes() / SECTOR_BYTES;
        let start = a % sectors;
        let len = 1 + b % (sectors - start).min(4096);
        let mut plan: Vec<MemberExtent> = Vec::new();
        raid.plan(start * SECTOR_BYTES, len * SECTOR_BYTES, &mut plan);
        // One extent per touched member, at most the member count.
        prop_assert!(plan.len() <= members as usize);
        let mut planned: HashSet<(u32, u64)> = HashSet::new();
        for e in &plan {
            prop_assert!(e.member < members && e.len_bytes > 0);
            for s in 0..e.len_bytes / SECTOR_BYTES {
                prop_assert!(planned.insert((e.member, e.offset_bytes + s * SECTOR_BYTES)));
            }
        }
        for s in start..start + len {
            prop_assert!(planned.contains(&raid.map(s * SECTOR_BYTES)));
        }
        prop_assert_eq!(planned.len() as u64, len);
    }

    #[test]
    fn map_is_a_bijection_onto_member_chunks((members, su, cap) in geometry()) {
        let raid = Raid0::new(members, su, cap).unwrap();
        let mut seen = HashSet::new();
        let chunks = raid.capacity_bytes() / su;
        for c in 0..chunks {
            let (m, off) = raid.map(c * su);
            prop_assert!(m < members);
            prop_assert_eq!(off % su, 0);
            prop_assert!(off < cap);
            prop_assert!(seen.insert((m, off)));
        }
        prop_assert_eq!(seen.len() as u64, chunks);
    }
}

#[test]
fn zero_drives_is_refused_naming_the_field() {
    let err = Raid0::new(0, 65536, 1 << 30).unwrap_err();
    assert_eq!(err.field, "drive_count");
}

#[test]
fn stripe_unit_must_be_a_power_of_two_of_at_least_a_sector() {
    assert_eq!(
        Raid0::new(2, 3000, 1 << 30).unwrap_err().field,
        "stripe_unit_bytes"
    );
    assert_eq!(
        Raid0::new(2, 256, 1 << 30).unwrap_err().field,
        "stripe_unit_bytes"
    );
    assert!(Raid0::new(2, 512, 1 << 30).is_ok());
}

#[test]
fn full_stripe_request_puts_one_chunk_on_every_member() {
    let raid = Raid0::new(3, 16384, 1 << 30).unwrap();
    let mut plan = Vec::new();
    raid.plan(3 * 16384 * 7, 3 * 16384, &mut plan);
    assert_eq!(plan.len(), 3);
    assert!(plan
        .iter()
        .all(|e| e.len_bytes == 16384 && e.offset_bytes == 7 * 16384));
}
