//! A rebuild's minimum rate under load: below it the rebuild keeps a window of units
//! in flight (md below `speed_limit_min`, a hardware controller's rebuild share), above
//! it one unit at a time, as before. One behaviour per test.

use crate::common::{hdd, iops, rebuild_of, scenario, ssd, w};
use raidlab_sim::scenario::{DriveSpec, Level, RebuildSpec, Rw, Scenario};
use raidlab_sim::simulate;

/// md's default `speed_limit_min`, 1000 KiB/s.
const MD_MIN: f64 = 1_024_000.0;

/// RAID 5 of 4 `drive`s under 4 KiB `rw` at `iodepth`, member 1 rebuilt at
/// `rate_bytes_per_s` at most.
fn raid5_rebuilding(drive: DriveSpec, rw: Rw, iodepth: u32, rate_bytes_per_s: f64) -> Scenario {
    let mut s = scenario(drive, 4, rw, 4096, iodepth);
    s.array.level = Level::Number(5);
    s.array.failed = vec![1];
    s.array.rebuild = Some(rebuild_of(1, rate_bytes_per_s));
    s
}

/// RAID 5 of 4 HDDs with member 1 rebuilt at 200 MB/s at most under 4 KiB random
/// reads at `iodepth`.
fn hdd_raid5_rebuilding(iodepth: u32) -> Scenario {
    let mut s = raid5_rebuilding(hdd(), Rw::Randread, iodepth, 200e6);
    // Long enough (~20 s) that a window's worth of units (2 MiB) is small next to
    // what the rebuild does in the measurement.
    w(&mut s).ios = 16_000;
    w(&mut s).warmup_ios = 500;
    s
}

fn rebuild_mbps(s: &Scenario) -> f64 {
    simulate(s).rebuild.expect("rebuild reported").mbps
}

#[test]
fn under_a_heavy_random_load_the_rebuild_starves_without_a_minimum() {
    // The case the minimum exists for: each unit waits behind the workload's queue.
    let mbps = rebuild_mbps(&hdd_raid5_rebuilding(32));
    assert!(mbps < MD_MIN / 1e6, "{mbps}");
}

/// Whether `r`'s rebuild kept `min` bytes/s within the granularity of its window: it
/// works in bursts of up to a window (`depth` units) and may have banked one burst
/// before the measurement started, so it may lag `min` by two windows' bytes at most.
fn holds(r: &raidlab_sim::Results, min: f64) -> bool {
    let rb = r.rebuild.as_ref().expect("rebuild reported");
    let secs = rb.bytes_done as f64 / (rb.mbps * 1e6);
    let window_bytes = 32.0 * 65536.0;
    rb.bytes_done as f64 >= min * secs - 2.0 * window_bytes
}

#[test]
fn md_s_minimum_holds_the_rebuild_at_speed_limit_min_under_load() {
    let mut s = hdd_raid5_rebuilding(32);
    s.array.controller.rebuild_rate_min_bytes_per_s = Some(MD_MIN);
    let r = simulate(&s);
    let mbps = r.rebuild.as_ref().expect("rebuild reported").mbps;
    // md itself overshoots by up to a window of resync I/O.
    assert!(holds(&r, MD_MIN) && mbps < 2.0 * MD_MIN / 1e6, "{mbps}");
}

#[test]
fn a_raised_minimum_takes_its_rate_from_the_workload() {
    // speed_limit_min raised to 3 MB/s, well above what the rebuild gets without it
    // (and below the ~3.5 MB/s its window of 32 units reaches under this load).
    let mut s = hdd_raid5_rebuilding(32);
    let starved = simulate(&s);
    s.array.controller.rebuild_rate_min_bytes_per_s = Some(3e6);
    let held = simulate(&s);
    let mbps = held.rebuild.as_ref().expect("rebuild reported").mbps;
    assert!(holds(&held, 3e6) && mbps < 1.5 * 3.0, "{mbps}");
    // The physical trade-off: the rebuild's seeks come out of the workload's.
    assert!(
        iops(&held, "read") < 0.99 * iops(&starved, "read"),
        "{} vs {}",
        iops(&held, "read"),
        iops(&starved, "read")
    );
}

#[test]
fn a_hardware_share_takes_its_part_of_the_rate_limit_from_the_workload() {
    let mut s = hdd_raid5_rebuilding(32);
    s.array.controller.rebuild_rate_min_bytes_per_s = Some(MD_MIN);
    let md = simulate(&s);
    s.array.controller.rebuild_rate_min_bytes_per_s = None;
    s.array.controller.rebuild_share_percent = Some(30.0);
    let hw = simulate(&s);
    let mbps = hw.rebuild.as_ref().expect("rebuild reported").mbps;
    // 30 % of what the rebuild could do alone: the HDD's outer media rate, 140 MB/s,
    // below the 200 MB/s limit.
    assert!(holds(&hw, 0.3 * 140e6) && mbps <= 1.05 * 42.0, "{mbps}");
    assert!(
        iops(&hw, "read") < 0.8 * iops(&md, "read"),
        "{} vs {}",
        iops(&hw, "read"),
        iops(&md, "read")
    );
}

#[test]
fn on_ssds_the_share_is_of_the_rate_limit() {
    let mut s = raid5_rebuilding(ssd(), Rw::Randwrite, 32, 200e6);
    w(&mut s).ios = 100_000;
    let starved = rebuild_mbps(&s);
    s.array.controller.rebuild_share_percent = Some(50.0);
    let mbps = rebuild_mbps(&s);
    assert!(starved < 90.0, "{starved}");
    assert!((0.95 * 100.0..=1.03 * 100.0).contains(&mbps), "{mbps}");
}

#[test]
fn the_larger_of_the_controller_s_rate_and_share_holds() {
    let mut s = hdd_raid5_rebuilding(32);
    s.array.controller.rebuild_rate_min_bytes_per_s = Some(20e6);
    s.array.controller.rebuild_share_percent = Some(1.0);
    let mbps = rebuild_mbps(&s);
    assert!((0.9 * 20.0..=1.1 * 20.0).contains(&mbps), "{mbps}");
}

#[test]
fn the_scenario_s_minimum_overrides_the_controller_s() {
    let mut s = hdd_raid5_rebuilding(32);
    s.array.controller.rebuild_share_percent = Some(30.0);
    s.array
        .rebuild
        .as_mut()
        .expect("a rebuild")
        .rate_min_bytes_per_s = Some(5e6);
    let mbps = rebuild_mbps(&s);
    assert!((0.95 * 5.0..=1.5 * 5.0).contains(&mbps), "{mbps}");
}

#[test]
fn the_minimum_never_exceeds_the_rate_limit() {
    let mut s = hdd_raid5_rebuilding(32);
    s.array
        .rebuild
        .as_mut()
        .expect("a rebuild")
        .rate_bytes_per_s = 10e6;
    s.array.controller.rebuild_rate_min_bytes_per_s = Some(50e6);
    let mbps = rebuild_mbps(&s);
    // The limit paces the units' starts; the units in flight when the measurement
    // starts finish inside it, a window's worth above the limit at most.
    assert!(mbps > 9.0 && mbps <= 10.0 * 1.03, "{mbps}");
}

#[test]
fn a_rebuild_already_above_its_minimum_runs_as_without_one() {
    // A light load: one unit at a time already beats md's minimum, so nothing changes,
    // event for event.
    let mut s = hdd_raid5_rebuilding(1);
    let without = serde_json::to_string(&simulate(&s)).expect("results serialise");
    assert!(rebuild_mbps(&s) > MD_MIN / 1e6);
    s.array.controller.rebuild_rate_min_bytes_per_s = Some(MD_MIN);
    let with = serde_json::to_string(&simulate(&s)).expect("results serialise");
    assert_eq!(with, without);
}

#[test]
fn a_lightly_loaded_array_still_rebuilds_at_its_rate_limit() {
    let mut s = raid5_rebuilding(ssd(), Rw::Randread, 1, 50e6);
    s.array.controller.rebuild_rate_min_bytes_per_s = Some(MD_MIN);
    let mbps = rebuild_mbps(&s);
    assert!(mbps > 45.0 && mbps <= 50.0 * 1.001, "{mbps}");
}

#[test]
fn a_rebuild_with_a_minimum_is_deterministic() {
    let mut s = hdd_raid5_rebuilding(32);
    s.array.controller.rebuild_share_percent = Some(30.0);
    let a = serde_json::to_string(&simulate(&s)).expect("results serialise");
    let b = serde_json::to_string(&simulate(&s)).expect("results serialise");
    assert_eq!(a, b);
}

#[test]
fn a_small_array_with_a_window_rebuilds_completely() {
    // Every unit of the window comes back before the rebuild counts as finished.
    let mut s = scenario(ssd(), 2, Rw::Randread, 4096, 32);
    s.array.level = Level::Number(1);
    let cap = 64 << 20;
    if let DriveSpec::Ssd(d) = &mut s.array.drive {
        d.capacity_bytes = cap;
    }
    w(&mut s).size_bytes = cap;
    w(&mut s).ios = 200_000;
    s.array.failed = vec![0];
    s.array.rebuild = Some(RebuildSpec {
        rate_min_bytes_per_s: Some(500e6),
        ..rebuild_of(0, 1e9)
    });
    let r = simulate(&s);
    let rebuild = r.rebuild.expect("rebuild reported");
    assert!(rebuild.finished, "{rebuild:?}");
}
