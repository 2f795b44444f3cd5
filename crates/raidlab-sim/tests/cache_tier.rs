//! The SSD cache tier in front of an HDD array: policy decisions reach the two arrays.

mod common;

use common::{hdd, s3500_800g, scenario, w};
use raidlab_sim::scenario::{Distribution, Level, Precondition, Rw, Scenario};
use raidlab_sim::tier::CacheSpec;

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
