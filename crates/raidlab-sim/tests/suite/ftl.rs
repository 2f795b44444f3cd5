//! SSD garbage collection and over-provisioning as the simulator runs them.

use crate::common::{s3500_800g, scenario, w};
use raidlab_sim::scenario::{DriveSpec, Precondition, Rw, Scenario};
use raidlab_sim::simulate;

fn run(drive: DriveSpec, rw: Rw) -> (f64, Option<f64>) {
    let mut s: Scenario = scenario(drive.clone(), 1, rw, 4096, 32);
    w(&mut s).size_bytes = drive.capacity_bytes() / 4096 * 4096;
    w(&mut s).ios = 60_000;
    w(&mut s).warmup_ios = 20_000;
    let r = simulate(&s);
    let op = if rw == Rw::Randread { "read" } else { "write" };
    (r.ops[op].iops, r.explain.ssd_write_amplification)
}

#[test]
fn a_steady_state_drive_writes_randomly_far_slower_than_a_fresh_one() {
    let (fresh, wa_fresh) = run(s3500_800g(7.0, 0.0, Precondition::Fob), Rw::Randwrite);
    let (steady, wa_steady) = run(s3500_800g(7.0, 0.0, Precondition::Steady), Rw::Randwrite);
    println!("fresh {fresh:.0} (WA {wa_fresh:?}) steady {steady:.0} (WA {wa_steady:?})");
    assert!(steady < fresh / 3.0, "fresh {fresh} steady {steady}");
    assert!(wa_steady.unwrap() > 5.0);
}

#[test]
fn over_provisioning_raises_random_write_iops_and_leaves_reads_alone() {
    let (base, wa0) = run(s3500_800g(7.0, 0.0, Precondition::Steady), Rw::Randwrite);
    let (op20, wa20) = run(s3500_800g(7.0, 20.0, Precondition::Steady), Rw::Randwrite);
    let (op40, wa40) = run(s3500_800g(7.0, 40.0, Precondition::Steady), Rw::Randwrite);
    println!("0%: {base:.0} WA {wa0:?}; 20%: {op20:.0} WA {wa20:?}; 40%: {op40:.0} WA {wa40:?}");
    assert!(op20 > 2.0 * base && op40 > op20);
    let (read0, _) = run(s3500_800g(7.0, 0.0, Precondition::Steady), Rw::Randread);
    let (read20, _) = run(s3500_800g(7.0, 20.0, Precondition::Steady), Rw::Randread);
    assert!((read20 / read0 - 1.0).abs() < 0.05, "{read0} {read20}");
}

/// Mean read latency (us) of a steady-state 70/30 random mix at QD 8.
fn mixed(program_suspend: bool) -> f64 {
    let mut drive = s3500_800g(7.0, 0.0, Precondition::Steady);
    if let DriveSpec::Ssd(spec) = &mut drive {
        spec.program_suspend = program_suspend;
    }
    let mut s: Scenario = scenario(drive.clone(), 1, Rw::Randrw, 4096, 8);
    w(&mut s).rwmixread = 70;
    w(&mut s).size_bytes = drive.capacity_bytes() / 4096 * 4096;
    w(&mut s).ios = 40_000;
    w(&mut s).warmup_ios = 20_000;
    let r = simulate(&s);
    r.ops["read"].lat_mean_ns / 1e3
}

#[test]
fn without_program_suspend_reads_wait_behind_garbage_collection_and_programs() {
    // Wu and He (FAST '12): a read that finds its die programming or erasing waits for
    // it. With suspend it does not, so the same mix reads faster.
    let waiting = mixed(false);
    let suspending = mixed(true);
    println!("read latency without suspend {waiting:.0} us, with {suspending:.0} us");
    assert!(waiting > 1.5 * suspending, "{waiting} vs {suspending}");
    // A read waits for at most one operation: a program (1.2 ms), a copy or an erase
    // (3 ms), plus its own queueing, never the whole write backlog.
    assert!(waiting < 3_000.0, "{waiting}");
}
