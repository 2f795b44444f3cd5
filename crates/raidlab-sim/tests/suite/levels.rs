//! RAID levels in the simulator: what one host request costs, degraded arrays,
//! mirrors and rebuilds. One behaviour per test.

use crate::common::{busy_ns, rebuild_of, scenario, ssd, w};
use raidlab_sim::scenario::{Level, RebuildSpec, Rw, Scenario};
use raidlab_sim::simulate;

fn raid(level: u32, drives: u32, rw: Rw, bs: u64, iodepth: u32) -> Scenario {
    let mut s = scenario(ssd(), drives, rw, bs, iodepth);
    s.array.level = Level::Number(level);
    s
}

#[test]
fn a_raid5_small_random_write_costs_two_reads_and_two_writes() {
    let r = simulate(&raid(5, 4, Rw::Randwrite, 4096, 8));
    assert_eq!(r.explain.member_ios_per_host_io["write"], 4.0);
    assert_eq!(r.explain.parity_bytes_per_host_byte["write"], 1.0);
}

#[test]
fn a_raid6_small_random_write_costs_three_reads_and_three_writes() {
    let r = simulate(&raid(6, 6, Rw::Randwrite, 4096, 8));
    assert_eq!(r.explain.member_ios_per_host_io["write"], 6.0);
}

#[test]
fn a_full_stripe_write_reads_nothing() {
    // 4 drives, 64 KiB chunks: a stripe holds 192 KiB of data.
    let mut s = raid(5, 4, Rw::Write, 3 * 65536, 4);
    w(&mut s).size_bytes = 3 * 65536 * 1000;
    let r = simulate(&s);
    assert_eq!(
        r.explain.member_ios_per_host_io["write"], 4.0,
        "3 data + 1 parity, no reads"
    );
    assert!((r.explain.member_bytes_per_host_byte["write"] - 4.0 / 3.0).abs() < 1e-9);
}

#[test]
fn a_degraded_read_of_a_lost_chunk_reads_every_survivor() {
    let mut s = raid(5, 4, Rw::Randread, 4096, 8);
    s.array.failed = vec![2];
    let r = simulate(&s);
    // A quarter of the chunks were on member 2; each of their reads reads 3 survivors.
    let per_io = r.explain.member_ios_per_host_io["read"];
    assert!((per_io - 1.5).abs() < 0.05, "{per_io}");
}

#[test]
fn raid1_reads_use_both_mirrors_and_writes_go_to_both() {
    let one = simulate(&raid(0, 1, Rw::Randread, 4096, 64)).ops["read"].iops;
    let reads = simulate(&raid(1, 2, Rw::Randread, 4096, 64));
    assert!(
        reads.ops["read"].iops > 1.7 * one,
        "{} vs {one}",
        reads.ops["read"].iops
    );
    assert_eq!(reads.explain.member_ios_per_host_io["read"], 1.0);
    let writes = simulate(&raid(1, 2, Rw::Randwrite, 4096, 8));
    assert_eq!(writes.explain.member_ios_per_host_io["write"], 2.0);
}

#[test]
fn a_parity_engine_slower_than_the_drives_becomes_the_bottleneck() {
    let mut s = raid(5, 4, Rw::Write, 3 * 65536, 8);
    w(&mut s).size_bytes = 3 * 65536 * 1000;
    s.array.controller.parity_rate_bytes_per_s = Some(50e6);
    let r = simulate(&s);
    assert_eq!(r.explain.bottleneck, "controller.parity");
    // Each stripe feeds 192 KiB of data to the engine for 64 KiB of parity.
    assert!(r.ops["write"].mbps < 55.0, "{}", r.ops["write"].mbps);
}

#[test]
fn a_rebuild_runs_at_its_rate_and_slows_the_workload() {
    let mut s = raid(5, 4, Rw::Randread, 4096, 16);
    s.array.failed = vec![1];
    let quiet = simulate(&s).ops["read"].iops;
    s.array.rebuild = Some(rebuild_of(1, 200e6));
    let r = simulate(&s);
    let rebuild = r.rebuild.expect("rebuild reported");
    assert!(
        rebuild.mbps > 150.0 && rebuild.mbps <= 201.0,
        "{}",
        rebuild.mbps
    );
    assert!(!rebuild.finished);
    assert!(
        r.ops["read"].iops < quiet,
        "{} vs {quiet}",
        r.ops["read"].iops
    );
    let projected_s = rebuild.time_ns_projected as f64 / 1e9;
    let expected_s = rebuild.member_bytes as f64 / (rebuild.mbps * 1e6);
    assert!((projected_s / expected_s - 1.0).abs() < 1e-6);
}

#[test]
fn a_small_array_rebuilds_completely_and_is_healthy_again() {
    let mut s = raid(1, 2, Rw::Randread, 4096, 4);
    let cap = 64 << 20;
    if let raidlab_sim::scenario::DriveSpec::Ssd(d) = &mut s.array.drive {
        d.capacity_bytes = cap;
    }
    w(&mut s).size_bytes = cap;
    w(&mut s).ios = 200_000;
    s.array.failed = vec![0];
    s.array.rebuild = Some(rebuild_of(0, 1e9));
    let r = simulate(&s);
    let rebuild = r.rebuild.expect("rebuild reported");
    assert!(rebuild.finished, "{rebuild:?}");
}

/// RAID 5 of 4 with member 1 rebuilt at 100 MB/s under a light load, failing at
/// `failed_at_ns` onto a hot spare (None: failed before the run).
fn spare_rebuild(failed_at_ns: Option<u64>, spares: u32) -> Scenario {
    let mut s = raid(5, 4, Rw::Randread, 4096, 1);
    w(&mut s).ios = 20_000;
    s.array.failed = vec![1];
    s.array.spares = spares;
    s.array.rebuild = Some(RebuildSpec {
        failed_at_ns,
        ..rebuild_of(1, 100e6)
    });
    s
}

#[test]
fn a_hot_spare_starts_its_rebuild_at_the_failure() {
    let before = simulate(&spare_rebuild(None, 1));
    let half = before.sim_time_ns / 2;
    let during = simulate(&spare_rebuild(Some(half), 1));
    let (whole, spare) = (
        before.rebuild.clone().unwrap(),
        during.rebuild.clone().unwrap(),
    );
    // The spare's rebuild ran only after the failure, at the same rate limit ...
    assert!(
        spare.bytes_done < whole.bytes_done * 3 / 4,
        "{spare:?} vs {whole:?}"
    );
    assert!(spare.bytes_done > 0);
    assert!(
        (spare.mbps / whole.mbps - 1.0).abs() < 0.1,
        "{spare:?} vs {whole:?}"
    );
    // ... and until it, reads found the member whole: fewer member reads per host read.
    let member_reads = |r: &raidlab_sim::Results| r.explain.member_ios_per_host_io["read"];
    assert!(member_reads(&during) < member_reads(&before));
}

#[test]
fn a_failure_at_time_zero_is_a_failure_before_the_run() {
    let before = simulate(&spare_rebuild(None, 1));
    let at_zero = simulate(&spare_rebuild(Some(0), 1));
    assert_eq!(
        serde_json::to_string(&before).unwrap(),
        serde_json::to_string(&at_zero).unwrap()
    );
}

#[test]
fn a_rebuild_at_the_failure_needs_a_hot_spare() {
    let err = spare_rebuild(Some(1_000_000), 0).validate().unwrap_err();
    assert_eq!(err.field, "array.rebuild.failed_at_ns");
    assert!(err.message.contains("hot spare"), "{err}");
}

#[test]
fn more_failures_than_the_level_tolerates_are_refused() {
    let mut s = raid(5, 4, Rw::Randread, 4096, 1);
    s.array.failed = vec![0, 1];
    let err = s.validate().unwrap_err();
    assert_eq!(err.field, "array.failed");
}

#[test]
fn every_level_and_layout_runs() {
    for (level, drives, layout, spans) in [
        (4, 3, None, None),
        (5, 5, Some("left-asymmetric"), None),
        (5, 5, Some("right-symmetric"), None),
        (6, 5, Some("right-asymmetric"), None),
        (10, 4, Some("far"), None),
        (10, 3, Some("offset"), None),
        (50, 6, None, Some(2)),
        (60, 8, None, Some(2)),
    ] {
        let mut s = raid(level, drives, Rw::Randrw, 16384, 8);
        s.array.layout = layout.map(str::to_string);
        s.array.spans = spans;
        w(&mut s).ios = 2_000;
        s.validate().unwrap_or_else(|e| panic!("{level}: {e}"));
        let r = simulate(&s);
        assert_eq!(
            r.ops["read"].ios + r.ops["write"].ios,
            2_000,
            "RAID {level}"
        );
    }
}

#[test]
fn write_back_acknowledges_writes_before_the_members_have_them() {
    let mut s = raid(5, 4, Rw::Randwrite, 4096, 1);
    let through = simulate(&s).ops["write"].lat_mean_ns;
    s.array.controller.cache_bytes = 256 << 20;
    s.array.controller.write_back = true;
    let back = simulate(&s);
    assert!(
        back.ops["write"].lat_mean_ns < through / 3.0,
        "{} vs {through}",
        back.ops["write"].lat_mean_ns
    );
    // The destages do the RAID 5 work (2 reads + 2 writes each) behind the
    // acknowledgements: while the cache fills they lag, so fewer member operations
    // than 4 per host write have completed by the end of the run.
    let per_io = back.explain.member_ios_per_host_io["write"];
    assert!(per_io > 0.2 && per_io < 4.0, "{per_io}");
}

#[test]
fn a_full_write_back_cache_runs_at_the_destage_rate() {
    let mut s = raid(5, 4, Rw::Randwrite, 4096, 32);
    s.workload.as_mut().unwrap().warmup_ios = 30_000;
    let through = simulate(&s).ops["write"].iops;
    s.array.controller.cache_bytes = 16 << 20;
    s.array.controller.write_back = true;
    s.array.controller.destage_concurrency = 1;
    let back = simulate(&s).ops["write"].iops;
    assert!(
        back < through,
        "write-back {back} vs write-through {through}"
    );
}

#[test]
fn below_the_high_watermark_an_idle_cache_holds_a_burst_without_destaging() {
    // 2,000 random 4 KiB writes (8 MiB) into a 64 MiB cache of a RAID 5 of 4 HDDs.
    let burst = |high: f64| {
        let mut s = scenario(crate::common::hdd(), 4, Rw::Randwrite, 4096, 4);
        s.array.level = Level::Number(5);
        w(&mut s).ios = 2_000;
        w(&mut s).warmup_ios = 0;
        let c = &mut s.array.controller;
        c.cache_bytes = 64 << 20;
        c.write_back = true;
        c.dirty_high_percent = high;
        simulate(&s)
    };
    let drive_busy_ns = |r: &raidlab_sim::Results| busy_ns(r, |name| name.starts_with("drive"));
    // Destaging at once, the disks work on read-modify-writes during the burst; waiting
    // for 32 MiB of dirty data, they stay idle and the burst is all in the cache.
    let (eager, gathering) = (burst(0.0), burst(50.0));
    assert!(drive_busy_ns(&eager) > 0);
    assert_eq!(drive_busy_ns(&gathering), 0);
    assert_eq!(gathering.ops["write"].ios, 2_000);
}
