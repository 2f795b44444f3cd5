//! What specific requests cost: md's small-write, full-stripe, degraded and mirror
//! behaviour, member operation by member operation.

use crate::common::{geo, spec, KIB, SU};
use raidlab_layout::{
    FailedSet, Geometry, LeastOutstanding, Level, MemberExtent, Plan, PlanError, Request,
    RoundRobin, StripeKind,
};

fn plan(g: &Geometry, offset_bytes: u64, len_bytes: u64, write: bool, failed: &[u32]) -> Plan {
    let mut p = Plan::new();
    let req = Request {
        offset_bytes,
        len_bytes,
        write,
    };
    g.plan(
        req,
        &FailedSet::from_members(failed),
        &mut RoundRobin::new(),
        &mut p,
    )
    .unwrap();
    p
}

fn members(extents: &[MemberExtent]) -> Vec<u32> {
    extents.iter().map(|e| e.member).collect()
}

#[test]
fn raid5_4k_random_write_on_4_drives_costs_2_reads_and_2_writes() {
    let p = plan(&geo(Level::Raid5, 4), 5 * SU + 8 * KIB, 4 * KIB, true, &[]);
    assert_eq!((p.reads.len(), p.writes.len()), (2, 2));
    assert_eq!((p.read_bytes(), p.write_bytes()), (8 * KIB, 8 * KIB));
    // rmw = 2 (old data + P) ties rcw = 2 (the other two data chunks): md takes RCW.
    assert_eq!(p.stripes[0].kind, StripeKind::Rcw);
    assert_eq!(p.parity_bytes, 4 * KIB);
}

#[test]
fn raid5_small_write_on_5_drives_is_read_modify_write() {
    let g = geo(Level::Raid5, 5);
    let p = plan(&g, 4 * KIB, 4 * KIB, true, &[]);
    assert_eq!(p.stripes[0].kind, StripeKind::Rmw);
    // Stripe 0 left-symmetric: D0 on member 0, P on member 4; both read, both written.
    assert_eq!(members(&p.reads), vec![0, 4]);
    assert_eq!(members(&p.writes), vec![0, 4]);
    assert!(p
        .reads
        .iter()
        .all(|e| e.offset_bytes == 4 * KIB && e.len_bytes == 4 * KIB));
}

#[test]
fn full_stripe_write_reads_nothing() {
    let g = geo(Level::Raid5, 4);
    let p = plan(&g, 3 * SU * 7, 3 * SU, true, &[]);
    assert!(p.reads.is_empty());
    assert_eq!(p.writes.len(), 4);
    assert_eq!(p.stripes[0].kind, StripeKind::FullStripe);
    let g6 = geo(Level::Raid6, 6);
    let p = plan(&g6, 0, 8 * SU, true, &[]);
    assert!(p.reads.is_empty());
    assert_eq!((p.writes.len(), p.parity_bytes), (6, 4 * SU));
}

#[test]
fn degraded_read_of_a_lost_chunk_reads_every_survivor_of_its_stripe() {
    let g = geo(Level::Raid5, 4);
    // Chunk 1 (D1 of stripe 0) lives on member 1; fail it.
    let p = plan(&g, SU + 4 * KIB, 8 * KIB, false, &[1]);
    assert_eq!(members(&p.reads), vec![0, 2, 3]);
    assert!(p
        .reads
        .iter()
        .all(|e| e.offset_bytes == 4 * KIB && e.len_bytes == 8 * KIB));
    assert_eq!(p.stripes[0].kind, StripeKind::DegradedRead);
    assert_eq!(p.parity_bytes, 8 * KIB);
    // A read of a surviving chunk of the same stripe reads only that chunk.
    let p = plan(&g, 4 * KIB, 8 * KIB, false, &[1]);
    assert_eq!(members(&p.reads), vec![0]);
    let g6 = geo(Level::Raid6, 6);
    // RAID 6 stripe 0 on 6 drives: D0..D3 on 1..4, P on 5, Q on 0. Lose D0 and D2.
    let p = plan(&g6, 0, 4 * KIB, false, &[1, 3]);
    assert_eq!(members(&p.reads), vec![0, 2, 4, 5]);
    assert_eq!(p.parity_bytes, 8 * KIB);
}

#[test]
fn raid6_small_write_costs_3_reads_and_3_writes() {
    let g = geo(Level::Raid6, 8);
    let p = plan(&g, 12 * KIB, 4 * KIB, true, &[]);
    assert_eq!(p.stripes[0].kind, StripeKind::Rmw);
    assert_eq!((p.reads.len(), p.writes.len()), (3, 3));
    // Old data, P and Q: left-symmetric stripe 0 on 8 drives puts P on 7, Q wraps
    // to 0 and D0 on 1.
    assert_eq!(members(&p.reads), vec![0, 1, 7]);
    assert_eq!(p.parity_bytes, 8 * KIB);
}

#[test]
fn raid1_write_goes_to_every_copy_and_read_to_one() {
    let g = geo(Level::Raid1, 3);
    let w = plan(&g, 8 * KIB, 16 * KIB, true, &[]);
    assert_eq!(members(&w.writes), vec![0, 1, 2]);
    assert!(w.reads.is_empty());
    let r = plan(&g, 8 * KIB, 1024 * KIB, false, &[]);
    assert_eq!(r.reads.len(), 1);
    assert_eq!(r.read_bytes(), 1024 * KIB);
    // With member 0 failed, the write skips it and the read avoids it.
    let w = plan(&g, 0, 4 * KIB, true, &[0]);
    assert_eq!(members(&w.writes), vec![1, 2]);
    let r = plan(&g, 0, 4 * KIB, false, &[0]);
    assert_ne!(r.reads[0].member, 0);
}

#[test]
fn least_outstanding_reads_the_idlest_copy_and_round_robin_alternates() {
    let g = geo(Level::Raid10, 4);
    let outstanding = [5, 2, 0, 0];
    let mut p = Plan::new();
    let req = Request {
        offset_bytes: 0,
        len_bytes: 4 * KIB,
        write: false,
    };
    g.plan(
        req,
        &FailedSet::new(),
        &mut LeastOutstanding::new(&outstanding),
        &mut p,
    )
    .unwrap();
    assert_eq!(members(&p.reads), vec![1]);
    let mut rr = RoundRobin::new();
    let mut picked = Vec::new();
    for _ in 0..4 {
        g.plan(req, &FailedSet::new(), &mut rr, &mut p).unwrap();
        picked.push(p.reads[0].member);
    }
    assert_eq!(picked, vec![0, 1, 0, 1]);
}

#[test]
fn exceeding_tolerated_failures_is_an_error_naming_the_members() {
    let mut p = Plan::new();
    let req = Request {
        offset_bytes: 0,
        len_bytes: 4 * KIB,
        write: false,
    };
    let err = geo(Level::Raid5, 4)
        .plan(
            req,
            &FailedSet::from_members(&[1, 2]),
            &mut RoundRobin::new(),
            &mut p,
        )
        .unwrap_err();
    assert!(matches!(err, PlanError::TooManyFailures { .. }));
    assert!(err.to_string().contains("{1, 2}"), "{err}");
    // RAID 10 near 2 on 4 drives: losing 0 and 2 is fine, 0 and 1 loses chunk 0.
    let r10 = geo(Level::Raid10, 4);
    assert!(r10.tolerates(&FailedSet::from_members(&[0, 2])));
    assert!(!r10.tolerates(&FailedSet::from_members(&[0, 1])));
    assert_eq!(r10.tolerated_failures(), 1);
    // RAID 60 of 2 spans: two failures per span are fine, three in one are not.
    let r60 = Geometry::new(&spec(Level::Raid60, 8).with_spans(2)).unwrap();
    assert!(r60.tolerates(&FailedSet::from_members(&[0, 1, 4, 5])));
    assert!(!r60.tolerates(&FailedSet::from_members(&[0, 1, 2])));
    let err = r60
        .plan(
            req,
            &FailedSet::from_members(&[9]),
            &mut RoundRobin::new(),
            &mut p,
        )
        .unwrap_err();
    assert!(matches!(err, PlanError::UnknownMember { member: 9, .. }));
}

#[test]
fn bad_requests_are_errors() {
    let g = geo(Level::Raid5, 4);
    let mut p = Plan::new();
    let mut rr = RoundRobin::new();
    let none = FailedSet::new();
    let at = |offset_bytes, len_bytes| Request {
        offset_bytes,
        len_bytes,
        write: true,
    };
    assert_eq!(
        g.plan(at(0, 0), &none, &mut rr, &mut p),
        Err(PlanError::EmptyRequest)
    );
    assert!(matches!(
        g.plan(at(100, 512), &none, &mut rr, &mut p),
        Err(PlanError::Unaligned { .. })
    ));
    assert!(matches!(
        g.plan(at(g.capacity_bytes(), 512), &none, &mut rr, &mut p),
        Err(PlanError::BeyondCapacity { .. })
    ));
}

#[test]
fn degraded_writes_keep_parity_or_skip_it() {
    let g = geo(Level::Raid5, 4);
    // Write to lost D0 (member 0) of stripe 0: reconstruct-write from the other data.
    let p = plan(&g, 0, 4 * KIB, true, &[0]);
    assert_eq!(p.stripes[0].kind, StripeKind::Rcw);
    assert_eq!(members(&p.reads), vec![1, 2]);
    assert_eq!(members(&p.writes), vec![3]);
    // Parity member 3 lost: data only.
    let p = plan(&g, 0, 4 * KIB, true, &[3]);
    assert_eq!(p.stripes[0].kind, StripeKind::WriteWithoutParity);
    assert!(p.reads.is_empty());
    assert_eq!(members(&p.writes), vec![0]);
}

#[test]
fn rebuild_of_a_stripe_reads_the_survivors_and_writes_the_replacement() {
    let g = geo(Level::Raid6, 6);
    let mut p = Plan::new();
    g.rebuild_plan(
        2,
        3 * SU,
        SU,
        &FailedSet::from_members(&[2, 4]),
        &mut RoundRobin::new(),
        &mut p,
    )
    .unwrap();
    assert_eq!(members(&p.reads), vec![0, 1, 3, 5]);
    assert_eq!(
        p.writes,
        vec![MemberExtent {
            member: 2,
            offset_bytes: 3 * SU,
            len_bytes: SU
        }]
    );
    assert!(matches!(
        g.rebuild_plan(
            1,
            0,
            SU,
            &FailedSet::from_members(&[2]),
            &mut RoundRobin::new(),
            &mut p
        ),
        Err(PlanError::NotFailed { member: 1 })
    ));
}
