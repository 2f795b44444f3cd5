//! Whole-simulator behaviour, one behaviour per test.

use crate::common::{hdd, iops, scenario, ssd, w};
use raidlab_sim::scenario::{DriveSpec, Precondition, Rw};
use raidlab_sim::{simulate, simulate_json};

#[test]
fn same_scenario_and_seed_give_identical_results() {
    let mut s = scenario(ssd(), 3, Rw::Randrw, 4096, 16);
    w(&mut s).bs = vec![(4096, 3), (65536, 1)];
    let text = serde_json::to_string(&s).unwrap();
    let a = simulate_json(&text).unwrap();
    let b = simulate_json(&text).unwrap();
    assert_eq!(a, b);
}

#[test]
fn different_seeds_give_different_random_workloads() {
    let s1 = scenario(ssd(), 2, Rw::Randread, 4096, 8);
    let mut s2 = s1.clone();
    s2.seed = 2;
    assert_ne!(simulate(&s1), simulate(&s2));
}

#[test]
fn measured_io_count_is_what_was_asked_after_warm_up() {
    let r = simulate(&scenario(ssd(), 2, Rw::Randread, 4096, 8));
    assert_eq!(r.ops["read"].ios, 5_000);
    assert!(!r.ops.contains_key("write"));
}

#[test]
fn random_read_iops_scale_with_ssd_count_at_deep_queues() {
    let one = iops(
        &simulate(&scenario(ssd(), 1, Rw::Randread, 4096, 64)),
        "read",
    );
    let four = iops(
        &simulate(&scenario(ssd(), 4, Rw::Randread, 4096, 64)),
        "read",
    );
    let ratio = four / one;
    assert!(ratio > 3.3 && ratio < 4.4, "one {one:.0} four {four:.0}");
}

#[test]
fn queue_depth_one_gains_nothing_from_more_drives() {
    let one = iops(
        &simulate(&scenario(ssd(), 1, Rw::Randread, 4096, 1)),
        "read",
    );
    let four = iops(
        &simulate(&scenario(ssd(), 4, Rw::Randread, 4096, 1)),
        "read",
    );
    assert!(
        (four / one - 1.0).abs() < 0.05,
        "one {one:.0} four {four:.0}"
    );
}

#[test]
fn a_controller_read_path_cap_bounds_large_reads() {
    let mut s = scenario(ssd(), 4, Rw::Read, 1 << 20, 8);
    s.array.controller.read_rate_bytes_per_s_max = Some(800e6);
    let r = simulate(&s);
    let mbps = r.ops["read"].mbps;
    assert!(mbps > 760.0 && mbps <= 801.0, "{mbps}");
    assert_eq!(r.explain.bottleneck, "controller.read_path");
}

#[test]
fn controller_read_ahead_serves_small_sequential_reads() {
    let mut s = scenario(ssd(), 2, Rw::Read, 4096, 1);
    let without = iops(&simulate(&s), "read");
    s.array.controller.read_ahead_bytes = 65536;
    s.array.controller.read_ahead_segments = 4;
    s.array.controller.read_hit_overhead_ns = 2_000;
    let r = simulate(&s);
    assert!(
        r.explain.read_ahead_hits > 4_000,
        "{}",
        r.explain.read_ahead_hits
    );
    assert!(
        r.ops["read"].iops > 2.0 * without,
        "{} vs {without}",
        r.ops["read"].iops
    );
}

#[test]
fn read_ahead_data_crosses_the_bus_to_the_host_once() {
    // Three drives feed more than the 1 GB/s bus: sequential 1 MiB reads served from
    // read-ahead run at the bus rate, not half of it (the segment stops in the
    // controller's buffer; only the hit goes on to the host).
    let mut s = scenario(ssd(), 3, Rw::Read, 1 << 20, 1);
    s.array.stripe_unit_bytes = 16384;
    s.array.controller.bus_rate_bytes_per_s = Some(1e9);
    s.array.controller.read_ahead_bytes = 1 << 20;
    s.array.controller.read_ahead_segments = 4;
    w(&mut s).ios = 1000;
    let r = simulate(&s);
    assert!(
        r.explain.read_ahead_hits > 500,
        "{}",
        r.explain.read_ahead_hits
    );
    assert!(r.ops["read"].mbps > 800.0, "{} MB/s", r.ops["read"].mbps);
}

#[test]
fn each_member_a_request_touches_gets_one_operation() {
    let mut s = scenario(ssd(), 4, Rw::Randread, 65536, 4);
    s.array.stripe_unit_bytes = 16384;
    let r = simulate(&s);
    assert_eq!(r.explain.member_ios_per_host_io["read"], 4.0);
    assert_eq!(r.explain.member_bytes_per_host_byte["read"], 1.0);
}

#[test]
fn hdd_random_reads_pay_seek_and_rotation() {
    let mut s = scenario(hdd(), 1, Rw::Randread, 4096, 1);
    w(&mut s).size_bytes = 200_000_000_000;
    w(&mut s).ios = 500;
    w(&mut s).warmup_ios = 20;
    let r = simulate(&s);
    let mean_ms = r.ops["read"].lat_mean_ns / 1e6;
    // Random over 80 % of the stroke: about a 8-9 ms seek plus half a revolution.
    assert!(mean_ms > 9.0 && mean_ms < 16.0, "{mean_ms} ms");
}

#[test]
fn hdd_ncq_reorders_random_reads_for_more_iops() {
    let mut s = scenario(hdd(), 1, Rw::Randread, 4096, 1);
    w(&mut s).size_bytes = 200_000_000_000;
    w(&mut s).ios = 1_000;
    let qd1 = iops(&simulate(&s), "read");
    w(&mut s).iodepth = 32;
    let qd32 = iops(&simulate(&s), "read");
    assert!(qd32 > 1.8 * qd1, "qd1 {qd1:.0} qd32 {qd32:.0}");
}

#[test]
fn hdd_without_write_cache_loses_a_revolution_per_sequential_write() {
    let mut s = scenario(hdd(), 1, Rw::Write, 4096, 1);
    w(&mut s).ios = 300;
    w(&mut s).warmup_ios = 10;
    let r = simulate(&s);
    let rev_ms = 60_000.0 / 7200.0;
    let per_write_ms = r.ops["write"].lat_mean_ns / 1e6;
    assert!(
        (per_write_ms / rev_ms - 1.0).abs() < 0.1,
        "{per_write_ms} ms"
    );
}

#[test]
fn the_bottleneck_is_the_busiest_resource() {
    let r = simulate(&scenario(ssd(), 2, Rw::Randread, 4096, 64));
    let max = r
        .explain
        .resources
        .iter()
        .map(|x| x.utilisation)
        .fold(0.0, f64::max);
    assert_eq!(r.explain.bottleneck_utilisation, max);
    assert!(r.explain.bottleneck.starts_with("drive"));
}

#[test]
fn a_refused_scenario_names_the_field() {
    let mut s = scenario(ssd(), 2, Rw::Read, 4096, 1);
    w(&mut s).iodepth = 0;
    let err = simulate_json(&serde_json::to_string(&s).unwrap()).unwrap_err();
    assert_eq!(err.field, "workload.iodepth");
    w(&mut s).iodepth = 1;
    s.array.stripe_unit_bytes = 3000;
    let err = simulate_json(&serde_json::to_string(&s).unwrap()).unwrap_err();
    assert_eq!(err.field, "array.stripe_unit_bytes");
    let err = simulate_json(r#"{"schema":1,"seed":1,"bogus":2}"#).unwrap_err();
    assert!(err.message.contains("bogus"), "{}", err.message);
}

#[test]
fn concurrent_workloads_are_reported_per_job_and_in_total() {
    let mut s = scenario(ssd(), 2, Rw::Randread, 4096, 8);
    let mut reader = s.workload.take().expect("one workload");
    reader.name = Some("reader".into());
    let mut writer = reader.clone();
    writer.name = Some("writer".into());
    writer.rw = Rw::Write;
    writer.bs = vec![(65536, 1)];
    writer.ios = 1_000;
    writer.offset_bytes = 4 << 30;
    writer.size_bytes = 1 << 30;
    s.workloads = vec![reader, writer];
    let r = simulate(&s);
    assert_eq!(r.jobs.len(), 2);
    assert_eq!(r.jobs[0].name, "reader");
    assert_eq!(r.jobs[0].ops["read"].ios, 5_000);
    assert_eq!(r.jobs[1].ops["write"].ios, 1_000);
    assert!(!r.jobs[0].ops.contains_key("write"));
    assert_eq!(r.ops["read"].ios, 5_000);
    // The writer finished first, so its runtime is shorter than the run.
    assert!(r.jobs[1].runtime_ns < r.jobs[0].runtime_ns);
}

#[test]
fn samples_add_up_to_the_measured_io() {
    let mut s = scenario(ssd(), 2, Rw::Randread, 4096, 8);
    w(&mut s).sample_interval_ns = 10_000_000;
    let r = simulate(&s);
    let samples = &r.jobs[0].samples;
    assert!(samples.read_ios.len() > 2);
    assert_eq!(samples.read_ios.iter().sum::<u64>(), 5_000);
    assert_eq!(samples.read_bytes.iter().sum::<u64>(), 5_000 * 4096);
}

#[test]
fn ramp_time_is_discarded() {
    let mut s = scenario(ssd(), 1, Rw::Randread, 4096, 8);
    w(&mut s).warmup_ios = 0;
    w(&mut s).warmup_ns = 50_000_000;
    let r = simulate(&s);
    assert_eq!(r.ops["read"].ios, 5_000);
    // Measurement starts after the ramp, so the first sample is a full interval's worth.
    assert!(r.jobs[0].samples.read_ios[0] > 0);
}

#[test]
fn read_ahead_always_costs_random_reads_and_adaptive_does_not() {
    let mut s = scenario(ssd(), 2, Rw::Randread, 4096, 8);
    s.array.controller.read_ahead_bytes = 65536;
    s.array.controller.read_ahead_segments = 2;
    let adaptive = simulate(&s);
    s.array.controller.read_ahead_always = true;
    let always = simulate(&s);
    // Adaptive never fetches ahead of random reads; always fetches a segment after a
    // read whenever a read-ahead buffer is free, and it is wasted.
    assert_eq!(adaptive.explain.member_bytes_per_host_byte["read"], 1.0);
    let fetched = always.explain.member_bytes_per_host_byte["read"];
    assert!(fetched > 1.5, "{fetched}");
    assert!(always.ops["read"].iops < adaptive.ops["read"].iops);
}

#[test]
fn the_run_is_resource_bound_only_at_saturation() {
    use raidlab_sim::results::SATURATION_UTILISATION;
    // One small read at a time leaves every resource mostly idle; large writes at
    // depth keep the flash busy all along.
    let qd1 = simulate(&scenario(ssd(), 1, Rw::Randread, 4096, 1));
    assert!(qd1.explain.bottleneck_utilisation < SATURATION_UTILISATION);
    assert_eq!(qd1.explain.bound, "latency");
    let streaming = simulate(&scenario(ssd(), 1, Rw::Write, 1 << 20, 8));
    assert!(streaming.explain.bottleneck_utilisation >= SATURATION_UTILISATION);
    assert_eq!(streaming.explain.bound, "resource");
}

#[test]
fn the_stages_of_the_path_add_up_to_the_mean_latency() {
    for drive in [ssd(), hdd()] {
        let r = simulate(&scenario(drive, 2, Rw::Randrw, 65536, 4));
        let stages = &r.explain.latency_ns_by_stage;
        assert_eq!(
            stages.keys().map(String::as_str).collect::<Vec<_>>(),
            ["controller", "drive", "host", "link"]
        );
        let ios: u64 = r.ops.values().map(|op| op.ios).sum();
        let mean_ns: f64 = r
            .ops
            .values()
            .map(|op| op.lat_mean_ns * op.ios as f64)
            .sum::<f64>()
            / ios as f64;
        let total_ns: f64 = stages.values().sum();
        assert!(
            (total_ns / mean_ns - 1.0).abs() < 1e-9,
            "{total_ns} vs {mean_ns}"
        );
        // Random I/O at QD 4 on two drives: the I/Os wait on the drives, and the host
        // stage is the host's per-request overhead.
        assert_eq!(r.explain.stage_longest, "drive");
        assert!((stages["host"] - 5_000.0).abs() < 1.0, "{}", stages["host"]);
    }
}

#[test]
fn a_sequential_run_starts_from_the_state_sequential_writes_leave() {
    // SNIA PTS preconditions with the workload it measures: a steady drive that only
    // sees sequential writes is the drive written in address order (the fresh drive's
    // state for such a stream), not one fragmented by random writes.
    let run = |rw: Rw, precondition: Precondition| {
        let mut drive = ssd();
        if let DriveSpec::Ssd(s) = &mut drive {
            s.ftl = Some(crate::common::s3500_ftl(10.0, 0.0, precondition));
        }
        let mut s = scenario(drive, 1, rw, 1 << 20, 16);
        w(&mut s).ios = 2000;
        simulate(&s).ops["write"].iops
    };
    let steady = run(Rw::Write, Precondition::Steady);
    assert_eq!(steady, run(Rw::Write, Precondition::Fob));
    assert!(run(Rw::Randwrite, Precondition::Steady) < run(Rw::Randwrite, Precondition::Fob));
}
