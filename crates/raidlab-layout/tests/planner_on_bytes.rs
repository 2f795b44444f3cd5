//! The planner executed on real bytes by the reference engine in `common`: reads return
//! the data (reconstructing lost chunks), writes keep every copy and parity consistent
//! and cover exactly the copies and parity they touch, rebuilds restore lost members,
//! and no plan touches a failed member. Random geometry, data, failures and requests.

use crate::common::*;
use proptest::prelude::*;
use raidlab_layout::{FailedSet, Geometry, Plan, PlanError, Request, RoundRobin};

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn degraded_reads_return_the_original_bytes(
        spec in arb_redundant_spec(), seed in any::<u64>(), bits in any::<u64>()
    ) {
        let geo = Geometry::new(&spec).unwrap();
        let image = bytes(seed, geo.capacity_bytes() as usize);
        let mut mem = Mem::with_image(geo, &image);
        mem.assert_consistent();
        let failed = tolerated_failures(&geo, bits);
        let whole = Request { offset_bytes: 0, len_bytes: geo.capacity_bytes(), write: false };
        let mut plan = Plan::new();
        geo.plan(whole, &failed, &mut RoundRobin::new(), &mut plan).unwrap();
        prop_assert!(mem.read(whole, &failed, &plan) == image, "failed {}", failed);
    }

    #[test]
    fn writes_then_reads_then_rebuilds_keep_the_data(
        spec in arb_spec(), seed in any::<u64>(), bits in any::<u64>(),
        ops in proptest::collection::vec((any::<u64>(), any::<u64>(), any::<bool>()), 1..6)
    ) {
        let geo = Geometry::new(&spec).unwrap();
        let mut image = bytes(seed, geo.capacity_bytes() as usize);
        let mut mem = Mem::with_image(geo, &image);
        let failed = tolerated_failures(&geo, bits);
        let mut plan = Plan::new();
        let mut chooser = RoundRobin::new();
        for (i, (a, b, write)) in ops.into_iter().enumerate() {
            let req = request(&geo, a, b, write);
            geo.plan(req, &failed, &mut chooser, &mut plan).unwrap();
            let range = req.offset_bytes as usize..(req.offset_bytes + req.len_bytes) as usize;
            if write {
                let data = bytes(seed ^ ((i as u64 + 1) * 0x9e37_79b9), req.len_bytes as usize);
                mem.write(req, &data, &failed, &plan);
                image[range].copy_from_slice(&data);
            } else {
                prop_assert!(mem.read(req, &failed, &plan) == image[range], "read {:?} failed {}", req, failed);
            }
        }
        // Everything still reads back through the degraded array.
        let whole = Request { offset_bytes: 0, len_bytes: geo.capacity_bytes(), write: false };
        geo.plan(whole, &failed, &mut chooser, &mut plan).unwrap();
        prop_assert!(mem.read(whole, &failed, &plan) == image);
        // Rebuild every failed member, one chunk row at a time, as a rebuild stream does.
        let mut still = failed;
        for m in failed.iter() {
            let su = geo.stripe_unit_bytes();
            for row in 0..geo.member_used_bytes() / su {
                geo.rebuild_plan(m, row * su, su, &still, &mut chooser, &mut plan).unwrap();
                mem.rebuild(m, &still, &plan);
            }
            still.remove(m);
        }
        mem.assert_consistent();
        prop_assert!(mem.image() == image);
    }

    #[test]
    fn more_failures_than_tolerated_is_an_error_not_a_panic(
        spec in arb_spec(), bits in any::<u64>(), a in any::<u64>(), b in any::<u64>(), write in any::<bool>()
    ) {
        let geo = Geometry::new(&spec).unwrap();
        let mut failed = FailedSet::new();
        // Fail members in order from a random start until the array cannot survive.
        let n = u64::from(geo.members());
        let mut i = 0;
        while geo.tolerates(&failed) {
            failed.insert(((bits + i) % n) as u32);
            i += 1;
        }
        let mut plan = Plan::new();
        let err = geo.plan(request(&geo, a, b, write), &failed, &mut RoundRobin::new(), &mut plan).unwrap_err();
        prop_assert!(matches!(err, PlanError::TooManyFailures { .. }), "{:?}", err);
        prop_assert!(err.to_string().contains("failed"));
    }

    #[test]
    fn plans_never_touch_a_failed_member_and_healthy_reads_read_the_request_once(
        spec in arb_spec(), bits in any::<u64>(), a in any::<u64>(), b in any::<u64>(), write in any::<bool>()
    ) {
        let geo = Geometry::new(&spec).unwrap();
        let failed = tolerated_failures(&geo, bits);
        let req = request(&geo, a, b, write);
        let mut plan = Plan::new();
        geo.plan(req, &failed, &mut RoundRobin::new(), &mut plan).unwrap();
        for e in plan.reads.iter().chain(&plan.writes) {
            prop_assert!(!failed.contains(e.member));
        }
        for sp in &plan.stripes {
            prop_assert!(sp.read.intersection(&failed).is_empty());
            prop_assert!(sp.written.intersection(&failed).is_empty());
        }
        // Merged: no two extents of one phase touch or overlap on a member.
        for phase in [&plan.reads, &plan.writes] {
            for w in phase.windows(2) {
                prop_assert!(w[0].member < w[1].member || w[0].offset_bytes + w[0].len_bytes < w[1].offset_bytes);
            }
        }
        if failed.is_empty() && !write {
            prop_assert_eq!(plan.read_bytes(), req.len_bytes);
            prop_assert!(plan.writes.is_empty());
        }
        if write && failed.is_empty() {
            prop_assert_eq!(plan.write_bytes() >= req.len_bytes * u64::from(geo.copies()), true);
        }
    }
}
