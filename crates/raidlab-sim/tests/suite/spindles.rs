//! Where an array's disks are on their platters relative to each other: in lockstep,
//! or each at its own angle (`spindle_phase = "per-member"`).

use crate::common::{hdd, mbps, scenario, w};
use raidlab_sim::scenario::{Rw, Scenario, SpindlePhase};
use raidlab_sim::simulate;

/// Sequential `bs`-byte writes at QD 1 on `drives` disks with 8 KiB strips, the drives'
/// write cache off (as `hdd()` has it): each write waits for its sector.
fn sub_strip_writes(drives: u32, bs: u64, phase: SpindlePhase) -> Scenario {
    let mut s = scenario(hdd(), drives, Rw::Write, bs, 1);
    s.array.stripe_unit_bytes = 8192;
    s.array.controller.spindle_phase = phase;
    w(&mut s).size_bytes = 64 << 20;
    w(&mut s).ios = 400;
    w(&mut s).warmup_ios = 16;
    s
}

#[test]
fn lockstep_is_the_default() {
    let s = scenario(hdd(), 2, Rw::Write, 2048, 1);
    assert_eq!(s.array.controller.spindle_phase, SpindlePhase::Lockstep);
}

#[test]
fn a_member_with_its_own_phase_meets_its_next_strip_sooner_than_in_lockstep() {
    // 2 KiB writes on 8 KiB strips: four writes on one member (a revolution each, the
    // write cache being off), then four on the other. In lockstep the other member's
    // strip starts where the first member's did, which has just gone by: the switch
    // costs almost a revolution each way. With its own phase the two switches cost
    // about one revolution together, so 8 writes take ~7 revolutions instead of ~8.
    let lockstep = mbps(
        &simulate(&sub_strip_writes(2, 2048, SpindlePhase::Lockstep)),
        "write",
    );
    let own = mbps(
        &simulate(&sub_strip_writes(2, 2048, SpindlePhase::PerMember)),
        "write",
    );
    assert!(
        own > 1.08 * lockstep,
        "per-member {own:.3} MB/s, lockstep {lockstep:.3} MB/s"
    );
    // Never faster than one revolution per write on each member's own writes.
    assert!(own < 1.2 * 8.0 / 7.0 * lockstep, "per-member {own:.3} MB/s");
}

#[test]
fn one_disk_has_no_phase_to_differ_by() {
    let lockstep = simulate(&sub_strip_writes(1, 2048, SpindlePhase::Lockstep));
    let own = simulate(&sub_strip_writes(1, 2048, SpindlePhase::PerMember));
    assert_eq!(mbps(&lockstep, "write"), mbps(&own, "write"));
}

#[test]
fn phases_follow_from_the_seed() {
    let run = |seed: u64| {
        let mut s = sub_strip_writes(4, 2048, SpindlePhase::PerMember);
        s.seed = seed;
        mbps(&simulate(&s), "write")
    };
    assert_eq!(run(1), run(1), "same scenario and seed, same phases");
    let others: Vec<f64> = (2..6).map(run).collect();
    assert!(
        others.iter().any(|&m| m != run(1)),
        "the seed draws the phases: {others:?}"
    );
}
