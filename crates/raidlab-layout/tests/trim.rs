//! Discards (TRIM) through the layouts: which member ranges a host discard becomes.

use crate::common::{geo, spec, KIB, SU};
use raidlab_layout::{FailedSet, Geometry, Level, MemberExtent, Plan, Request};

fn trim(g: &Geometry, offset_bytes: u64, len_bytes: u64, failed: &[u32]) -> Plan {
    let mut p = Plan::new();
    let req = Request {
        offset_bytes,
        len_bytes,
        write: false,
    };
    g.trim_plan(req, &FailedSet::from_members(failed), &mut p)
        .unwrap();
    assert!(p.reads.is_empty(), "a discard reads nothing");
    p
}

fn bytes(extents: &[MemberExtent]) -> u64 {
    extents.iter().map(|e| e.len_bytes).sum()
}

#[test]
fn raid0_discards_exactly_the_member_ranges_holding_the_host_range() {
    let g = geo(Level::Raid0, 4);
    let p = trim(&g, 3 * SU + 4 * KIB, 8 * SU, &[]);
    assert_eq!(bytes(&p.writes), 8 * SU);
    assert_eq!(p.writes.len(), 4, "one merged range per member");
}

#[test]
fn mirrors_discard_every_copy() {
    let p = trim(&geo(Level::Raid1, 2), 0, 16 * KIB, &[]);
    assert_eq!(bytes(&p.writes), 32 * KIB);
    let p = trim(&geo(Level::Raid10, 4), 0, 4 * SU, &[]);
    assert_eq!(bytes(&p.writes), 8 * SU);
}

#[test]
fn raid5_discards_whole_stripes_with_their_parity_and_nothing_of_partial_ones() {
    let g = geo(Level::Raid5, 4); // full stripe = 3 chunks
    let stripe = 3 * SU;
    // From inside stripe 0 to inside stripe 3: only stripes 1 and 2 are whole.
    let p = trim(&g, SU, 3 * stripe, &[]);
    assert_eq!(bytes(&p.writes), 2 * 4 * SU, "two stripes, data and parity");
    assert!(p
        .writes
        .iter()
        .all(|e| e.offset_bytes == SU && e.len_bytes == 2 * SU));
    let p = trim(&g, 4 * KIB, 4 * KIB, &[]);
    assert!(p.writes.is_empty(), "a 4 KiB discard frees no stripe");
}

#[test]
fn a_discard_never_touches_a_failed_member() {
    let p = trim(&geo(Level::Raid5, 4), 0, 6 * SU, &[2]);
    assert!(p.writes.iter().all(|e| e.member != 2));
    assert_eq!(bytes(&p.writes), 2 * 3 * SU);
}

#[test]
fn raid60_discards_whole_stripes_of_every_span() {
    let g = Geometry::new(&spec(Level::Raid60, 8).with_spans(2)).unwrap();
    let full = g.full_stripe_bytes();
    let p = trim(&g, 0, 2 * full, &[]);
    assert_eq!(bytes(&p.writes), 2 * 8 * SU);
}
