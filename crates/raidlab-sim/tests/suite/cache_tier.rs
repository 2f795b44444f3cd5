//! The SSD cache tier in front of an HDD array: policy decisions reach the two arrays.

use crate::common::{hdd, s3500_800g, scenario, w};
use raidlab_cache::{Action, Cache, CacheConfig, Op, Policy, Request};
use raidlab_sim::scenario::CacheSpec;
use raidlab_sim::scenario::{Distribution, Level, Precondition, Rw, Scenario};
use raidlab_sim::scenario::{TraceFormat, TraceMode, TraceSpec};
use std::io::Write;

fn cached(policy: &str, rw: Rw, hot_bytes: u64) -> Scenario {
    let mut s = scenario(hdd(), 6, rw, 4096, 16);
    s.array.level = Level::Number(6);
    s.array.controller.parity_rate_bytes_per_s = Some(2e9);
    let mut ssd = scenario(
        s3500_800g(10.0, 0.0, Precondition::Steady),
        4,
        Rw::Randread,
        4096,
        1,
    )
    .array;
    ssd.level = Level::Number(10);
    ssd.copies = Some(2);
    s.array.cache = Some(Box::new(CacheSpec {
        policy: policy.into(),
        array: ssd,
        capacity_bytes: Some(16 << 30),
        line_bytes: None,
        region_bytes: Some(256 << 20),
        rrc_share_pct: None,
        rrc_admit_touches: None,
        rwc_write_max_bytes: None,
        ghost_entries_max: None,
        sequential_cutoff_bytes: None,
    }));
    let wl = w(&mut s);
    wl.size_bytes = hot_bytes;
    wl.ios = 20_000;
    // Every hot line touched more than three times before measuring.
    wl.warmup_ios = hot_bytes / 4096 * 12;
    wl.distribution = Distribution::Uniform;
    s
}

fn run(s: &Scenario) -> raidlab_sim::Results {
    s.validate().expect("valid");
    raidlab_sim::simulate(s)
}

#[test]
fn hot_random_reads_are_served_by_the_ssd_array_after_admission() {
    let r = run(&cached("raidix", Rw::Randread, 64 << 20));
    let c = r.explain.cache.as_ref().expect("a cache report");
    assert!(c.read_hit_ratio > 0.99, "{}", c.read_hit_ratio);
    let ops = |array: &str| -> u64 {
        c.pieces
            .iter()
            .filter(|p| p.array == array)
            .map(|p| p.ops)
            .sum()
    };
    assert!(ops("main") * 100 < ops("cache"), "{:?}", c.pieces);
    let mut plain = cached("raidix", Rw::Randread, 64 << 20);
    plain.array.cache = None;
    let without = raidlab_sim::simulate(&plain);
    assert!(r.ops["read"].iops > 5.0 * without.ops["read"].iops);
}

#[test]
fn small_random_writes_go_to_the_ssd_log_sequentially_with_raidix_and_in_place_with_lru() {
    let raidix = run(&cached("raidix", Rw::Randwrite, 64 << 20));
    let lru = run(&cached("lru", Rw::Randwrite, 64 << 20));
    let rw = |r: &raidlab_sim::Results| -> Vec<String> {
        r.explain
            .cache
            .as_ref()
            .unwrap()
            .pieces
            .iter()
            .filter(|p| p.array == "cache")
            .map(|p| p.rw.clone())
            .collect()
    };
    assert_eq!(rw(&raidix), vec!["write"]);
    assert_eq!(rw(&lru), vec!["randwrite"]);
}

#[test]
fn lru_writes_the_ssds_on_every_read_miss_raidix_only_on_the_third_touch() {
    let mut raidix = cached("raidix", Rw::Randrw, 8 << 30);
    let mut lru = cached("lru", Rw::Randrw, 8 << 30);
    for s in [&mut raidix, &mut lru] {
        let wl = w(s);
        wl.warmup_ios = 1000;
        wl.distribution = Distribution::Zipf(0.9);
    }
    let a = run(&raidix).explain.cache.unwrap();
    let b = run(&lru).explain.cache.unwrap();
    assert!(
        b.ssd_write_hits.unwrap() > 1.5 * a.ssd_write_hits.unwrap(),
        "{a:?} {b:?}"
    );
}

#[test]
fn bad_cache_tables_name_the_field() {
    let mut s = cached("fifo", Rw::Randread, 64 << 20);
    let e = s.validate().unwrap_err();
    assert_eq!(e.field, "array.cache.policy");
    s.array.cache.as_mut().unwrap().policy = "lru".into();
    s.array.cache.as_mut().unwrap().array.drive_count = 1;
    let e = s.validate().unwrap_err();
    assert!(e.field.starts_with("array.cache.array"), "{e}");
}

#[test]
fn cached_runs_are_deterministic() {
    let s = cached("raidix", Rw::Randrw, 256 << 20);
    assert_eq!(run(&s), run(&s));
}

/// A hot-set MSR trace: 4 KiB reads and writes (one in four) over 512 lines, skewed so
/// low lines come back often, then a cold sweep that misses; returns the path (removed
/// by the caller) and the records as (write, offset, len).
fn hot_trace(tag: &str) -> (std::path::PathBuf, Vec<(bool, u64, u64)>) {
    let path = std::env::temp_dir().join(format!(
        "raidlab-cache-trace-{tag}-{}.csv",
        std::process::id()
    ));
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut records = Vec::new();
    let mut x: u64 = 17;
    for i in 0..6000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = (x >> 33) % 512;
        let line = if i < 5000 { r * r / 512 } else { 4096 + i };
        let write = (x >> 20).is_multiple_of(4);
        records.push((write, line * 4096, 4096));
        let kind = if write { "Write" } else { "Read" };
        writeln!(out, "{},raidlab,0,{kind},{},4096,0", i * 10, line * 4096).unwrap();
    }
    out.flush().unwrap();
    (path, records)
}

fn trace_scenario(policy: &str, path: &std::path::Path, mode: TraceMode) -> Scenario {
    let mut s = cached(policy, Rw::Randread, 64 << 20);
    s.workload = None;
    s.trace = Some(TraceSpec {
        path: path.to_str().unwrap().into(),
        format: TraceFormat::Msr,
        mode,
        iodepth: 8,
        time_scale: 1.0,
    });
    s
}

#[test]
fn a_trace_replays_through_the_cache_as_the_policy_decides_it() {
    let (path, records) = hot_trace("policy");
    for policy in [Policy::Raidix, Policy::Lru] {
        let s = trace_scenario(policy.name(), &path, TraceMode::Closed);
        s.validate().expect("a closed replay with a cache is valid");
        let r = raidlab_sim::run(&s).unwrap();
        assert_eq!(r, raidlab_sim::run(&s).unwrap(), "deterministic");
        assert_eq!(r.jobs.len(), 1);
        assert_eq!(r.jobs[0].name, "trace");
        let ios: u64 = r.ops.values().map(|o| o.ios).sum();
        assert_eq!(ios, records.len() as u64);
        // The policy crate alone, fed the same records, decides the same hits.
        let mut config = CacheConfig::new(policy, 16 << 30);
        config.region_bytes = 256 << 20;
        let mut cache = Cache::new(config).unwrap();
        let mut actions: Vec<Action> = Vec::new();
        for &(write, offset_bytes, len_bytes) in &records {
            actions.clear();
            let op = if write { Op::Write } else { Op::Read };
            let request = Request {
                stream: 0,
                op,
                offset_bytes,
                len_bytes,
            };
            cache.access(&request, &mut actions);
        }
        let alone = cache.counters();
        let c = r.explain.cache.as_ref().expect("a cache report");
        assert_eq!(c.counters["read_lines"], alone.read_lines);
        assert_eq!(
            c.counters["read_hit_lines_rrc"]
                + c.counters["read_hit_lines_rwc"]
                + c.counters["read_hit_lines_main"],
            alone.read_hit_lines()
        );
        assert_eq!(c.counters["write_cached_lines"], alone.write_cached_lines);
        assert!(
            c.read_hit_ratio > 0.3 && c.read_hit_ratio < 0.95,
            "{}: {}",
            policy.name(),
            c.read_hit_ratio
        );
        assert!(
            c.pieces.iter().any(|p| p.array == "cache"),
            "{:?}",
            c.pieces
        );
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_trace_with_a_cache_replays_in_closed_mode_only() {
    let (path, _) = hot_trace("open");
    let e = trace_scenario("lru", &path, TraceMode::Open)
        .validate()
        .unwrap_err();
    assert_eq!(e.field, "workload.mode");
    assert!(e.message.contains("closed"), "{e}");
    std::fs::remove_file(&path).unwrap();
}

/// The user's run, scaled down: LRU over random 4 KiB I/O, 90 % reads, over 8 GiB.
fn lru_randrw_90() -> Scenario {
    let mut s = cached("lru", Rw::Randrw, 8 << 30);
    let wl = w(&mut s);
    wl.rwmixread = 90;
    wl.warmup_ios = 1000;
    s
}

/// min <= p50 <= max and the mean between the extremes, per direction.
fn assert_ordered(r: &raidlab_sim::Results) {
    for (dir, o) in &r.ops {
        let p50 = o.percentiles_ns["50.000000"];
        assert!(o.lat_min_ns <= p50 && p50 <= o.lat_max_ns, "{dir}: {o:?}");
        assert!(o.lat_min_ns as f64 <= o.lat_mean_ns, "{dir}: {o:?}");
        assert!(o.lat_mean_ns <= o.lat_max_ns as f64, "{dir}: {o:?}");
    }
}

#[test]
fn reads_and_writes_have_their_own_latency_when_writes_go_to_the_ssds() {
    // LRU caches every write on the SSDs; random reads over 8 GiB mostly miss to the
    // HDDs: a write waits for an SSD, a read for a disk.
    let r = run(&lru_randrw_90());
    let (read, write) = (&r.ops["read"], &r.ops["write"]);
    assert!(
        read.lat_mean_ns > 3.0 * write.lat_mean_ns,
        "read {read:?} write {write:?}"
    );
    assert_ne!(read.percentiles_ns, write.percentiles_ns);
    assert_ordered(&r);
    let job = &r.jobs[0].ops;
    assert_eq!(job["read"].lat_mean_ns, read.lat_mean_ns);
}

#[test]
fn a_run_of_mostly_hits_has_a_hits_median_under_its_mean() {
    // A 64 MiB hot set touched about four times a line in warm-up: RAIDIX admitted
    // most lines (on their third touch), so most reads hit the SSDs; the misses' disk
    // time lifts the mean, not the median.
    let mut s = cached("raidix", Rw::Randread, 64 << 20);
    w(&mut s).warmup_ios = (64 << 20 >> 12) * 4;
    let r = run(&s);
    let c = r.explain.cache.as_ref().expect("a cache report");
    let read = &r.ops["read"];
    assert!(c.pieces.len() >= 2, "hits and misses: {:?}", c.pieces);
    assert!(
        c.read_hit_ratio > 0.5 && c.read_hit_ratio < 0.999,
        "{}",
        c.read_hit_ratio
    );
    let p50 = read.percentiles_ns["50.000000"];
    assert!((p50 as f64) < read.lat_mean_ns, "{read:?}");
    // A hit's latency is an SSD's: well under a disk's seek.
    assert!(p50 < 2_000_000, "{read:?}");
    assert_ordered(&r);
}

#[test]
fn explain_names_the_longest_stage_of_a_host_io() {
    let r = run(&lru_randrw_90());
    let e = &r.explain;
    assert!(!e.stage_longest.is_empty(), "{:?}", e.latency_ns_by_stage);
    let longest = e.latency_ns_by_stage[&e.stage_longest];
    assert!(e.latency_ns_by_stage.values().all(|&ns| ns <= longest));
    assert!(e
        .latency_ns_by_stage
        .keys()
        .any(|k| k.starts_with("cache.")));
    assert!(e.latency_ns_by_stage.keys().any(|k| k.starts_with("main.")));
}

#[test]
fn a_small_cache_gets_regions_a_sixteenth_of_it_and_only_what_cannot_hold_two_is_refused() {
    let mut s = cached("raidix", Rw::Randread, 64 << 20);
    {
        let c = s.array.cache.as_mut().unwrap();
        c.region_bytes = None;
        c.capacity_bytes = Some(256 << 20);
    }
    let spec = s.array.cache.as_ref().unwrap();
    let config = spec
        .config(800 << 30, "array.cache")
        .expect("256 MiB is a cache");
    assert_eq!(config.region_bytes, 16 << 20);
    run(&s);
    let c = s.array.cache.as_mut().unwrap();
    c.capacity_bytes = Some(4096);
    let e = s.validate().unwrap_err();
    assert_eq!(e.field, "array.cache.capacity_bytes", "{e}");
    assert!(e.message.contains("8192"), "{e}");
    // A region the table sets is still its own to refuse.
    let c = s.array.cache.as_mut().unwrap();
    c.capacity_bytes = Some(256 << 20);
    c.region_bytes = Some(200 << 20);
    assert_eq!(s.validate().unwrap_err().field, "array.cache.region_bytes");
}
