//! The SSD cache tier in front of an array (`--cache-members`): data read back through
//! it always matches what was written (a shadow copy, real clients), across crashes,
//! restarts and a cache member failing; hot data hits; and the hits the engine counts
//! are the hits the policy crate gives for the same trace.

use crate::common::*;
use raidlab_cache::{Action, Cache, CacheConfig, Op, Policy, Request};
use raidlab_engine::cache::CachedArray;
use raidlab_engine::{Array, CreateOptions};
use raidlab_layout::Level;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// xorshift64*: the tests' own deterministic stream (the seed is printed on failure
/// through the assertion messages).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Lab {
    members: Vec<PathBuf>,
    cache: Vec<PathBuf>,
}

impl Lab {
    /// A RAID 5 of three 8 MiB members and a cache of `cache_members` 8 MiB members
    /// (1024 lines of 4 KiB after its log), with `policy`, regions of 256 KiB.
    fn create(dir: &Path, policy: Policy, cache_members: usize) -> (Self, CachedArray) {
        let lab = Lab {
            members: member_paths(dir, "m", 3),
            cache: member_paths(dir, "ssd", cache_members),
        };
        let mut opts = CreateOptions::new(Level::Raid5, 64 << 10, Some(8 << 20));
        opts.uuid = Some(0x5eed);
        let backing = Arc::new(retry_in_use(|| Array::create(&lab.members, &opts)));
        let tier = CachedArray::create(
            backing,
            &lab.cache,
            Some(8 << 20),
            policy,
            Some(256 << 10),
            false,
        )
        .unwrap();
        (lab, tier)
    }

    /// Assembles the array and opens its cache again (after a clean close or a crash).
    fn open(&self) -> CachedArray {
        let backing = Arc::new(retry_in_use(|| Array::assemble(&self.members)));
        retry_in_use(|| CachedArray::open(backing.clone(), &self.cache))
    }
}

/// `n` requests of a hot-set workload on `tier`, checked against `shadow`: 90 % of
/// them in the first 1 MiB, the rest anywhere in 6 MiB; reads and writes of 4 KiB to
/// 64 KiB, some not line-aligned (512 B multiples), now and then a 256 KiB stream.
fn hot_set_requests(tier: &CachedArray, shadow: &mut [u8], rng: &mut Rng, n: usize) {
    for i in 0..n {
        let span: u64 = if rng.below(10) < 9 { 1 << 20 } else { 6 << 20 };
        let aligned = rng.below(8) != 0;
        let unit = if aligned { 4096 } else { 512 };
        let len = if rng.below(50) == 0 {
            256 << 10
        } else {
            unit * (1 + rng.below(if aligned { 16 } else { 32 }))
        };
        let off = rng.below((span - len) / unit) * unit;
        let (a, b) = (off as usize, (off + len) as usize);
        if rng.below(2) == 0 {
            let mut buf = vec![0u8; len as usize];
            tier.read(off, &mut buf).unwrap();
            assert!(
                buf == shadow[a..b],
                "request {i}: read of {len} B at {off} differs from what was written"
            );
        } else {
            let fill = rng.next();
            let data: Vec<u8> = (0..len)
                .map(|k| (fill >> (k % 8 * 8)) as u8 ^ k as u8)
                .collect();
            tier.write(off, &data, false).unwrap();
            shadow[a..b].copy_from_slice(&data);
        }
    }
}

/// Reads the whole 6 MiB the workload touches and compares it with `shadow`.
fn assert_matches(tier: &CachedArray, shadow: &[u8], when: &str) {
    let mut buf = vec![0u8; 6 << 20];
    tier.read(0, &mut buf).unwrap();
    let first = buf
        .iter()
        .zip(&shadow[..buf.len()])
        .position(|(a, b)| a != b);
    assert_eq!(first, None, "{when}: first differing byte");
}

#[test]
fn every_policy_reads_back_what_was_written_across_restarts_and_crashes() {
    for policy in Policy::ALL {
        let dir = tempfile::tempdir().unwrap();
        let (lab, tier) = Lab::create(dir.path(), policy, 2);
        let mut shadow = vec![0u8; 8 << 20];
        let mut rng = Rng(0x00c0_ffee ^ policy as u64);
        hot_set_requests(&tier, &mut shadow, &mut rng, 800);
        assert_matches(&tier, &shadow, policy.name());
        let (_, dirty) = tier.occupancy();
        // A clean stop: dirty lines stay in the cache and come back with it.
        tier.close().unwrap();
        drop(tier);
        let tier = lab.open();
        assert_eq!(
            tier.occupancy().1,
            dirty,
            "{}: dirty lines after a restart",
            policy.name()
        );
        assert_matches(
            &tier,
            &shadow,
            &format!("{} after a restart", policy.name()),
        );
        hot_set_requests(&tier, &mut shadow, &mut rng, 800);
        // A crash: nothing closed or flushed (the page cache keeps what was written,
        // as after kill -9); the log is replayed.
        drop(tier);
        let tier = lab.open();
        assert_matches(&tier, &shadow, &format!("{} after a crash", policy.name()));
        hot_set_requests(&tier, &mut shadow, &mut rng, 300);
        assert_matches(
            &tier,
            &shadow,
            &format!("{} after more requests", policy.name()),
        );
    }
}

#[test]
fn a_hot_set_hits_and_dirty_lines_live_only_in_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let (lab, tier) = Lab::create(dir.path(), Policy::Raidix, 2);
    let mut shadow = vec![0u8; 8 << 20];
    hot_set_requests(&tier, &mut shadow, &mut Rng(7), 3000);
    let s = tier.stats_json();
    assert!(s["read_hit_ratio"].as_f64().unwrap() > 0.3, "{s}");
    assert!(s["read_hit_lines_rrc"].as_u64().unwrap() > 0, "{s}");
    assert!(s["read_hit_lines_rwc"].as_u64().unwrap() > 0, "{s}");
    assert!(s["destaged_bytes"].as_u64().unwrap() > 0, "{s}");
    let dirty = s["dirty_lines"].as_u64().unwrap();
    assert!(dirty > 0, "{s}");
    tier.flush().unwrap();
    drop(tier);
    // The array alone lacks the dirty lines: the cache really holds them.
    let alone = retry_in_use(|| Array::assemble(&lab.members));
    let mut buf = vec![0u8; 6 << 20];
    alone.read(0, &mut buf).unwrap();
    assert_ne!(
        buf,
        shadow[..6 << 20],
        "the array alone already had everything"
    );
    drop(alone);
    // Destaged, it has everything.
    let tier = lab.open();
    assert_eq!(tier.destage_all().unwrap(), dirty * 4096);
    assert_eq!(tier.occupancy().1, 0);
    drop(tier);
    let alone = retry_in_use(|| Array::assemble(&lab.members));
    alone.read(0, &mut buf).unwrap();
    assert!(buf == shadow[..6 << 20], "destaged array differs");
    assert_eq!(alone.scrub(false).unwrap().mismatched_stripes, 0);
}

#[test]
fn a_cache_member_failing_loses_no_dirty_line() {
    let dir = tempfile::tempdir().unwrap();
    let (lab, tier) = Lab::create(dir.path(), Policy::Raidix, 4);
    let mut shadow = vec![0u8; 8 << 20];
    let mut rng = Rng(99);
    hot_set_requests(&tier, &mut shadow, &mut rng, 1000);
    assert!(tier.occupancy().1 > 0);
    tier.with_mirror(|m| m.fail_member(1)).unwrap();
    assert_matches(&tier, &shadow, "with a cache member failed");
    hot_set_requests(&tier, &mut shadow, &mut rng, 1000);
    tier.flush().unwrap();
    drop(tier);
    // Assembled again, the mirror degraded: the same bytes.
    let tier = lab.open();
    assert!(tier.stats_json()["mirror_failed"] == serde_json::json!([1]));
    assert_matches(&tier, &shadow, "reopened with a cache member failed");
    // Everything destaged: the array is whole and consistent on its own.
    tier.destage_all().unwrap();
    drop(tier);
    let alone = retry_in_use(|| Array::assemble(&lab.members));
    let mut buf = vec![0u8; 6 << 20];
    alone.read(0, &mut buf).unwrap();
    assert!(buf == shadow[..6 << 20]);
    assert_eq!(alone.scrub(false).unwrap().mismatched_stripes, 0);
}

/// Replays a trace written by `serve --cache-trace` through the policy crate alone
/// (the configuration the cache's status reports) and returns its counters.
fn replay(trace: &Path, policy: Policy, cache: &Value) -> raidlab_cache::Counters {
    let mut config = CacheConfig::new(policy, cache["slots"].as_u64().unwrap() * 4096);
    config.region_bytes = cache["region_bytes"].as_u64().unwrap();
    let mut c = Cache::new(config).unwrap();
    let mut actions: Vec<Action> = Vec::new();
    let mut ticks_last = 0u64;
    for line in std::fs::read_to_string(trace).unwrap().lines() {
        // MSR Cambridge CSV: Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime.
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 7, "{line}");
        let ticks: u64 = f[0].parse().unwrap();
        assert!(ticks >= ticks_last, "timestamps never decrease: {line}");
        ticks_last = ticks;
        let op = match f[3] {
            "Read" => Op::Read,
            "Write" => Op::Write,
            other => panic!("Type {other:?} in {line}"),
        };
        actions.clear();
        c.access(
            &Request {
                stream: 0,
                op,
                offset_bytes: f[4].parse().unwrap(),
                len_bytes: f[5].parse().unwrap(),
            },
            &mut actions,
        );
    }
    c.counters().clone()
}

fn cached_members(dir: &Path, policy: &str) -> Vec<String> {
    engine(
        dir,
        &[
            "create",
            "--level",
            "5",
            "--size",
            "24M",
            "m0",
            "m1",
            "m2",
            "--cache-members",
            "ssd0,ssd1",
            "--cache-size",
            "8M",
            "--cache-policy",
            policy,
            "--cache-region",
            "256K",
        ],
    );
    ["m0", "m1", "m2", "--cache-members", "ssd0,ssd1"]
        .map(String::from)
        .to_vec()
}

#[test]
fn fio_through_the_cache_verifies_and_hits_as_the_policy_replayed() {
    if !tool("fio") {
        return;
    }
    for policy in [Policy::Raidix, Policy::Lru] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let members = cached_members(d, policy.name());
        let m: Vec<&str> = members.iter().map(String::as_str).collect();
        let server = spawn_server_with(d, &["--cache-trace", "trace"], &m, false);
        let out = fio_randwrite_verify(d, &server.uri(), "verify", "4M", 4);
        assert!(out.contains("err= 0"), "{out}");
        // A hot set: zipf-distributed 4 KiB random reads over 16 MiB.
        let out = run(std::process::Command::new("fio").current_dir(d).args([
            "--name=hot",
            "--ioengine=nbd",
            &format!("--uri={}", server.uri()),
            "--rw=randread",
            "--bs=4k",
            "--size=16M",
            "--random_distribution=zipf:1.1",
            "--number_ios=6000",
            "--randseed=17",
            "--iodepth=1",
        ]));
        assert!(out.contains("err= 0"), "{out}");
        let served = status(d, &m);
        server.stop();
        let cache = &served["cache"];
        let replayed = replay(&d.join("trace"), policy, cache);
        let engine_ratio = cache["read_hit_ratio"].as_f64().unwrap();
        let policy_ratio = replayed.read_hit_lines() as f64 / replayed.read_lines as f64;
        eprintln!(
            "{}: read hit ratio engine {engine_ratio:.4} ({} of {} lines), policy replay {policy_ratio:.4} ({} of {})",
            policy.name(),
            cache["read_hit_lines"],
            cache["read_lines"],
            replayed.read_hit_lines(),
            replayed.read_lines
        );
        assert!(
            engine_ratio > 0.2,
            "{}: a hot set should hit: {cache}",
            policy.name()
        );
        assert_eq!(cache["read_lines"].as_u64().unwrap(), replayed.read_lines);
        assert_eq!(
            cache["read_hit_lines"].as_u64().unwrap(),
            replayed.read_hit_lines()
        );
        // What the engine executed is what the policy decided: its own count of lines
        // read from slots equals the policy's hits.
        assert_eq!(cache["engine_read_hit_lines"], cache["read_hit_lines"]);
        assert_eq!(
            cache["write_cached_lines"].as_u64().unwrap(),
            replayed.write_cached_lines
        );
    }
}

#[test]
fn kill_9_during_writes_then_every_flushed_block_reads_back() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let members = cached_members(d, "raidix");
    let m: Vec<&str> = members.iter().map(String::as_str).collect();
    let server = spawn_server_with(d, &[], &m, false);
    // 64 random 4 KiB writes, each its own pattern, then a flush: they are dirty lines
    // of the write cache, on the cache mirror only.
    let mut rng = Rng(2024);
    let blocks: Vec<(u64, u8)> = {
        let mut seen = std::collections::BTreeSet::new();
        std::iter::from_fn(|| Some((rng.below(4096) * 4096, 1 + rng.below(250) as u8)))
            .filter(|(o, _)| seen.insert(*o))
            .take(64)
            .collect()
    };
    let writes: Vec<String> = blocks
        .iter()
        .map(|(o, p)| format!("write -P {p} {o} 4k"))
        .chain(["flush".to_string()])
        .collect();
    let w: Vec<&str> = writes.iter().map(String::as_str).collect();
    qemu_io(&server.uri(), &w);
    let dirty = status(d, &m)["cache"]["dirty_lines"].as_u64().unwrap();
    assert!(
        dirty >= 32,
        "the writes should be dirty in the cache: {dirty}"
    );
    // More writes in flight elsewhere (above 16 MiB) when the server is killed.
    let more: Vec<String> = (0..2000)
        .map(|i| format!("write -P 7 {} 4k", (16 << 20) + (i * 7 % 1024) * 4096))
        .collect();
    let mut client = qemu_io_in_background(&server.uri(), &more);
    std::thread::sleep(std::time::Duration::from_millis(300));
    server.kill();
    let _ = client.kill();
    let _ = client.wait();
    let server = spawn_server_with(d, &[], &m, false);
    let reads: Vec<String> = blocks
        .iter()
        .map(|(o, p)| format!("read -P {p} {o} 4k"))
        .collect();
    let r: Vec<&str> = reads.iter().map(String::as_str).collect();
    let out = qemu_io(&server.uri(), &r);
    assert!(!out.contains("failed"), "{out}");
    server.stop();
}

#[test]
fn a_cache_member_failed_while_serving_keeps_clients_working() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let members = cached_members(d, "raidix");
    let m: Vec<&str> = members.iter().map(String::as_str).collect();
    let server = spawn_server_with(d, &[], &m, false);
    qemu_io(
        &server.uri(),
        &["write -P 0x5a 1M 4k", "write -P 0x3c 3M 8k", "flush"],
    );
    // The cache mirror answers on its own control socket: fail a cache member there.
    let failed = engine_json(d, &["fail", "ssd0", "ssd0", "ssd1"]);
    assert_eq!(failed["failed"], serde_json::json!([0]), "{failed}");
    let out = qemu_io(
        &server.uri(),
        &[
            "read -P 0x5a 1M 4k",
            "read -P 0x3c 3M 8k",
            "write -P 0x77 5M 4k",
            "flush",
        ],
    );
    assert!(!out.contains("failed"), "{out}");
    let s = status(d, &m);
    assert_eq!(s["cache"]["mirror_failed"], serde_json::json!([0]), "{s}");
    server.stop();
    let server = spawn_server_with(d, &[], &m, false);
    let out = qemu_io(
        &server.uri(),
        &[
            "read -P 0x5a 1M 4k",
            "read -P 0x3c 3M 8k",
            "read -P 0x77 5M 4k",
        ],
    );
    assert!(!out.contains("failed"), "{out}");
    server.stop();
    // The array is consistent (parity agrees with data); it is checked with its cache
    // named, as every command on a cached array is.
    let o = engine_output(
        d,
        &["check", "m0", "m1", "m2", "--cache-members", "ssd0,ssd1"],
    );
    assert!(o.status.success(), "{}", output_text(&o));
}

#[test]
fn cache_flags_without_cache_members_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = refused(
        dir.path(),
        &[
            "create",
            "--level",
            "1",
            "--size",
            "8M",
            "a",
            "b",
            "--cache-policy",
            "lru",
        ],
    );
    assert!(e.contains("--cache-policy"), "{e}");
    let e = refused(
        dir.path(),
        &[
            "create",
            "--level",
            "1",
            "--size",
            "8M",
            "a",
            "b",
            "--cache-members",
            "s0,s1,s2",
        ],
    );
    assert!(e.contains("cache-members"), "{e}");
    let e = refused(
        dir.path(),
        &[
            "create",
            "--level",
            "1",
            "--size",
            "8M",
            "a",
            "b",
            "--cache-members",
            "s0,s1",
            "--cache-policy",
            "fifo",
        ],
    );
    assert!(e.contains("--cache-policy"), "{e}");
}

#[test]
fn attach_cache_puts_an_empty_cache_in_front_of_an_existing_array() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    engine(d, &["create", "--level", "1", "--size", "16M", "m0", "m1"]);
    let server = serve(d, &["m0", "m1"]);
    qemu_io(&server.uri(), &["write -P 0x11 0 64k", "flush"]);
    server.stop();
    let attached = engine_json(
        d,
        &[
            "attach-cache",
            "m0",
            "m1",
            "--cache-members",
            "ssd0,ssd1,ssd2,ssd3",
            "--cache-size",
            "8M",
            "--cache-policy",
            "lru",
        ],
    );
    assert_eq!(attached["cache"]["mirror_level"], "RAID 10", "{attached}");
    assert_eq!(attached["cache"]["cached_lines"], 0, "{attached}");
    let m = ["m0", "m1", "--cache-members", "ssd0,ssd1,ssd2,ssd3"];
    let server = serve(d, &m);
    let out = qemu_io(
        &server.uri(),
        &[
            "read -P 0x11 0 64k",
            "read -P 0x11 0 64k",
            "write -P 0x22 64k 4k",
            "flush",
        ],
    );
    assert!(!out.contains("failed"), "{out}");
    // lru admits the first read's 16 lines; the second read hits all of them.
    let s = status(d, &m);
    assert_eq!(s["cache"]["read_hit_lines"], 16, "{s}");
    server.stop();
    let s = status(d, &m);
    assert_eq!(
        s["cache"]["dirty_lines"], 1,
        "the write stays in the cache: {s}"
    );
    let e = refused(d, &["attach-cache", "m0", "m1"]);
    assert!(e.contains("--cache-members"), "{e}");
}

#[test]
fn the_log_fills_its_areas_in_turn_and_replay_still_finds_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let (lab, tier) = Lab::create(dir.path(), Policy::Lru, 2);
    let mut shadow = vec![0u8; 8 << 20];
    let mut rng = Rng(5);
    // One-line writes over 512 lines (all fit): one record each; an area holds 16383.
    for i in 0..17_000u64 {
        let off = rng.below(512) * 4096;
        let data = vec![(i % 251) as u8 + 1; 4096];
        tier.write(off, &data, false).unwrap();
        shadow[off as usize..off as usize + 4096].copy_from_slice(&data);
    }
    let generation = tier.stats_json()["log_generation"].as_u64().unwrap();
    // 1 at creation, 2 once the first area filled and the second took a snapshot.
    assert!(
        generation >= 2,
        "the first area should have filled: generation {generation}"
    );
    drop(tier);
    let tier = lab.open();
    assert_eq!(tier.occupancy(), (512, 512));
    assert_matches(
        &tier,
        &shadow,
        "after the log wrapped, crashed and was replayed",
    );
}

/// Writes `lines` one-line writes (each its own pattern) through `tier` at lines spread
/// over the first 4 MiB, flushes, and returns the shadow of the array's 8 MiB.
fn write_flushed_lines(tier: &CachedArray, lines: u64, seed: u64) -> Vec<u8> {
    let mut shadow = vec![0u8; 8 << 20];
    let mut rng = Rng(seed);
    for _ in 0..lines {
        let off = rng.below(1024) * 4096;
        let data = vec![1 + rng.below(250) as u8; 4096];
        tier.write(off, &data, false).unwrap();
        shadow[off as usize..off as usize + 4096].copy_from_slice(&data);
    }
    tier.flush().unwrap();
    shadow
}

/// Reads `members` alone (no cache) and compares the 8 MiB capacity's first 6 MiB.
fn assert_alone_matches(members: &[PathBuf], shadow: &[u8], when: &str) {
    let array = retry_in_use(|| Array::assemble(members));
    assert_eq!(array.cache_uuid(), None, "{when}: no cache recorded");
    let mut buf = vec![0u8; 6 << 20];
    array.read(0, &mut buf).unwrap();
    let first = buf.iter().zip(shadow).position(|(a, b)| a != b);
    assert_eq!(first, None, "{when}: first differing byte read alone");
}

#[test]
fn the_superblocks_record_the_cache_from_create_to_detach() {
    let dir = tempfile::tempdir().unwrap();
    let (lab, tier) = Lab::create(dir.path(), Policy::Lru, 2);
    let cache = tier.with_mirror(|m| m.status().uuid);
    assert_eq!(tier.backing().cache_uuid(), Some(cache));
    for m in &lab.members {
        let sb = raidlab_engine::array::read_superblock(m).unwrap();
        assert_eq!(sb.cache_uuid, Some(cache), "{}", m.display());
    }
    // The mirror's own superblocks record no cache: it is not cached itself.
    for c in &lab.cache {
        let sb = raidlab_engine::array::read_superblock(c).unwrap();
        assert_eq!((sb.array_uuid, sb.cache_uuid), (cache, None));
    }
    // A second cache on the same array is refused, nothing written to its members.
    let other = member_paths(dir.path(), "other", 2);
    let e = CachedArray::create(
        tier.backing().clone(),
        &other,
        Some(8 << 20),
        Policy::Lru,
        None,
        false,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("already has a cache"), "{e}");
    assert!(!other[0].exists(), "refused before creating anything");
    tier.close().unwrap();
    drop(tier);
    // A member failed and rebuilt onto a new one: the new member records it too.
    let backing = retry_in_use(|| Array::assemble(&lab.members));
    backing.fail_member(1).unwrap();
    let new = dir.path().join("m1-new");
    backing.rebuild(1, &new, None, |_, _| {}).unwrap();
    backing.close().unwrap();
    let sb = raidlab_engine::array::read_superblock(&new).unwrap();
    assert_eq!(
        sb.cache_uuid,
        Some(cache),
        "a rebuilt member keeps the cache"
    );
}

#[test]
fn detach_hands_every_dirty_line_to_the_array_which_then_reads_alone() {
    for policy in [Policy::Raidix, Policy::Lru, Policy::Bcache] {
        let dir = tempfile::tempdir().unwrap();
        let (lab, tier) = Lab::create(dir.path(), policy, 2);
        let shadow = write_flushed_lines(&tier, 300, 0xdeac ^ policy as u64);
        let dirty = tier.occupancy().1;
        assert!(
            dirty > 100,
            "{}: the writes are dirty in the cache: {dirty}",
            policy.name()
        );
        // A crash right after every line was destaged (a detach killed before its
        // superblock writes): still cached, its cache intact and right.
        tier.destage_all().unwrap();
        drop(tier);
        let tier = lab.open();
        assert_matches(&tier, &shadow, "destaged, crashed, reopened");
        let backing = tier.backing().clone();
        let destaged = tier.detach().unwrap();
        backing.close().unwrap();
        drop(backing);
        assert_eq!(destaged, 0, "{}: destaged before the crash", policy.name());
        assert_alone_matches(&lab.members, &shadow, policy.name());
        // The old cache no longer fits the array.
        let backing = Arc::new(retry_in_use(|| Array::assemble(&lab.members)));
        let e = CachedArray::open(backing, &lab.cache)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("has no cache"), "{e}");
    }
}

/// The mirror offsets of the cache's slots whose bytes are all `pattern`.
fn slots_holding(mirror: &Array, pattern: u8) -> Vec<u64> {
    use raidlab_engine::cache::meta::{Header, HEADER_BYTES};
    let mut hb = vec![0u8; HEADER_BYTES as usize];
    mirror.read(0, &mut hb).unwrap();
    let h = Header::decode(&hb).unwrap();
    let mut line = vec![0u8; h.block_bytes as usize];
    (0..h.slots)
        .map(|slot| h.data_offset_bytes + slot * h.block_bytes)
        .filter(|&at| {
            mirror.read(at, &mut line).unwrap();
            line.iter().all(|&b| b == pattern)
        })
        .collect()
}

/// Overwrites the slots at `offsets` of the cache mirror on `cache` with garbage: what
/// a write torn by a power cut leaves (neither the old bytes nor the new).
fn garble(cache: &[PathBuf], offsets: impl Fn(&Array) -> Vec<u64>) -> usize {
    let mirror = retry_in_use(|| Array::assemble(cache));
    let offsets = offsets(&mirror);
    let torn: Vec<u8> = (0..4096).map(|i| (i * 31 + 7) as u8).collect();
    for &at in &offsets {
        mirror.write(at, &torn, false).unwrap();
    }
    mirror.flush().unwrap();
    offsets.len()
}

fn assert_lines(tier: &CachedArray, lines: &[u64], pattern: u8, when: &str) {
    for &off in lines {
        let mut buf = vec![0u8; 4096];
        tier.read(off, &mut buf).unwrap();
        assert!(
            buf.iter().all(|&b| b == pattern),
            "{when}: block at {off} reads {:#x}, not {pattern:#x}",
            buf[0]
        );
    }
}

#[test]
fn a_torn_rewrite_of_a_cached_line_loses_no_flushed_block() {
    // 32 lines written and flushed (dirty in the cache: their only copy), then
    // rewritten (write hits: in place for lru, smq and bcache).
    let lines: Vec<u64> = (0..32).map(|i| (i * 37 % 1024) * 4096).collect();
    for policy in Policy::ALL {
        let name = policy.name();
        // The power is cut while the rewrites reach the cache, before any FLUSH: each
        // slot they went to is torn. The flushed bytes are read back.
        let dir = tempfile::tempdir().unwrap();
        let (lab, tier) = Lab::create(dir.path(), policy, 2);
        for &off in &lines {
            tier.write(off, &[0xa1; 4096], false).unwrap();
        }
        tier.flush().unwrap();
        for &off in &lines {
            tier.write(off, &[0xb2; 4096], false).unwrap();
        }
        tier.write(lines[0], &[0xb2; 4096], false).unwrap();
        assert_lines(&tier, &lines, 0xb2, &format!("{name}, rewritten"));
        drop(tier);
        let garbled = garble(&lab.cache, |m| slots_holding(m, 0xb2));
        assert!(
            garbled >= 32,
            "{name}: the rewrites are in slots: {garbled}"
        );
        let tier = lab.open();
        assert_lines(&tier, &lines, 0xa1, &format!("{name}, rewrites torn"));
        drop(tier);
        // The power is cut while a FLUSH writes the rewrites home: the slots that held
        // the first bytes are torn. The rewrites, which the FLUSH made durable
        // elsewhere first, are read back.
        let dir = tempfile::tempdir().unwrap();
        let (lab, tier) = Lab::create(dir.path(), policy, 2);
        for &off in &lines {
            tier.write(off, &[0xa1; 4096], false).unwrap();
        }
        tier.flush().unwrap();
        let homes = tier.with_mirror(|m| slots_holding(m, 0xa1));
        if policy == Policy::Lru {
            assert_eq!(homes.len(), 32, "lru caches every write");
        }
        for &off in &lines {
            tier.write(off, &[0xb2; 4096], false).unwrap();
        }
        tier.flush().unwrap();
        let c = tier.counters();
        if policy == Policy::Lru {
            assert_eq!(
                (c.rewrites_home, c.rewrite_destages, c.destaged_bytes),
                (32, 0, 0),
                "lru: every rewrite shadowed and copied home, nothing destaged"
            );
        }
        drop(tier);
        garble(&lab.cache, |_| homes.clone());
        let tier = lab.open();
        assert_lines(&tier, &lines, 0xb2, &format!("{name}, homes torn"));
    }
}

fn refused_saying(d: &Path, args: &[&str], says: &str) {
    let e = refused(d, args);
    assert!(
        e.contains("--cache-members") && e.contains(says),
        "{args:?}: {e}"
    );
}

#[test]
fn commands_refuse_a_cached_array_without_its_cache_or_with_another() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    cached_members(d, "lru");
    let no_cache = "has an SSD cache in front";
    for args in [
        &["serve", "--listen", "127.0.0.1:0", "m0", "m1", "m2"][..],
        &["status", "m0", "m1", "m2"],
        &["assemble", "m0", "m1", "m2", "--json"],
        &["check", "m0", "m1", "m2"],
        &["repair", "m0", "m1", "m2"],
        &["fail", "1", "m0", "m1", "m2"],
        &["replace", "1", "new", "m0", "m1", "m2"],
    ] {
        refused_saying(d, args, no_cache);
    }
    std::fs::write(d.join("spare"), vec![0u8; 24 << 20]).unwrap();
    refused_saying(d, &["add-spare", "spare", "m0", "m1", "m2"], no_cache);
    // Another array's cache.
    engine(
        d,
        &[
            "create",
            "--level",
            "1",
            "--size",
            "16M",
            "n0",
            "n1",
            "--cache-members",
            "other0,other1",
            "--cache-size",
            "8M",
        ],
    );
    for cmd in ["serve", "status", "check", "detach-cache"] {
        let mut args = vec![cmd, "m0", "m1", "m2", "--cache-members", "other0,other1"];
        if cmd == "serve" {
            args.extend(["--listen", "127.0.0.1:0"]);
        }
        refused_saying(d, &args, "these are the members of cache");
    }
    // A second cache on a cached array.
    refused_saying(
        d,
        &[
            "attach-cache",
            "m0",
            "m1",
            "m2",
            "--cache-members",
            "s2,s3",
            "--cache-size",
            "8M",
        ],
        "already has a cache",
    );
    assert!(
        !d.join("s2").exists(),
        "refused before anything was created"
    );
    // A cache named for an array that has none.
    engine(d, &["create", "--level", "1", "--size", "16M", "u0", "u1"]);
    for cmd in ["serve", "status", "check", "detach-cache"] {
        refused_saying(
            d,
            &[cmd, "u0", "u1", "--cache-members", "ssd0,ssd1"],
            "has no cache",
        );
    }
    // The right cache is taken everywhere, and the status says the array is cached.
    let s = status(d, &["m0", "m1", "m2", "--cache-members", "ssd0,ssd1"]);
    assert!(s["cache_uuid"].is_string(), "{s}");
    let text = engine_stdout(
        d,
        &["status", "m0", "m1", "m2", "--cache-members", "ssd0,ssd1"],
    );
    assert!(text.contains("cached: SSD cache"), "{text}");
    let o = engine_output(
        d,
        &["check", "m0", "m1", "m2", "--cache-members", "ssd0,ssd1"],
    );
    assert!(o.status.success(), "{}", output_text(&o));
}

#[test]
fn detach_cache_then_the_array_is_served_alone_with_every_block() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let members = cached_members(d, "raidix");
    let m: Vec<&str> = members.iter().map(String::as_str).collect();
    let server = spawn_server_with(d, &[], &m, false);
    let writes: Vec<String> = (0..48u64)
        .map(|i| format!("write -P {} {} 4k", 1 + i, (i * 53 % 4096) * 4096))
        .chain(["flush".to_string()])
        .collect();
    let w: Vec<&str> = writes.iter().map(String::as_str).collect();
    qemu_io(&server.uri(), &w);
    // Refused while served: the server holds the cache.
    refused_saying_server(d, &m);
    server.stop();
    let dirty = status(d, &m)["cache"]["dirty_lines"].as_u64().unwrap();
    assert!(dirty >= 32, "the writes are dirty in the cache: {dirty}");
    let detached = engine_json(
        d,
        &[
            "detach-cache",
            "m0",
            "m1",
            "m2",
            "--cache-members",
            "ssd0,ssd1",
            "--json",
        ],
    );
    assert_eq!(detached["destaged_bytes"], dirty * 4096, "{detached}");
    assert_eq!(
        detached["cache_uuid"],
        serde_json::Value::Null,
        "{detached}"
    );
    // Alone now; the cache is refused.
    let server = serve(d, &["m0", "m1", "m2"]);
    let reads: Vec<String> = (0..48u64)
        .map(|i| format!("read -P {} {} 4k", 1 + i, (i * 53 % 4096) * 4096))
        .collect();
    let r: Vec<&str> = reads.iter().map(String::as_str).collect();
    let out = qemu_io(&server.uri(), &r);
    assert!(!out.contains("failed"), "{out}");
    server.stop();
    refused_saying(
        d,
        &[
            "detach-cache",
            "m0",
            "m1",
            "m2",
            "--cache-members",
            "ssd0,ssd1",
        ],
        "has no cache",
    );
    let o = engine_output(d, &["check", "m0", "m1", "m2"]);
    assert!(o.status.success(), "{}", output_text(&o));
    // A new cache can be attached again (the old members reused, each named).
    let attached = engine_json(
        d,
        &[
            "attach-cache",
            "m0",
            "m1",
            "m2",
            "--cache-members",
            "ssd0,ssd1",
            "--force-overwrite",
            "ssd0",
            "--force-overwrite",
            "ssd1",
        ],
    );
    assert!(attached["cache_uuid"].is_string(), "{attached}");
}

fn refused_saying_server(d: &Path, m: &[&str]) {
    let mut args = vec!["detach-cache"];
    args.extend(m);
    let e = refused(d, &args);
    assert!(e.contains("stop the server first"), "{e}");
}

#[test]
fn a_cache_made_before_the_superblocks_recorded_it_is_detached_with_adopt() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (lab, tier) = Lab::create(d, Policy::Lru, 2);
    let shadow = write_flushed_lines(&tier, 200, 77);
    let dirty = tier.occupancy().1;
    let backing = tier.backing().clone();
    tier.close().unwrap();
    drop(tier);
    // What a build before the flag left: the superblocks say nothing of the cache.
    backing.set_cache_uuid(None).unwrap();
    backing.close().unwrap();
    drop(backing);
    let name = |p: &PathBuf| p.file_name().unwrap().to_str().unwrap().to_string();
    let members: Vec<String> = lab.members.iter().map(name).collect();
    let cache = lab.cache.iter().map(name).collect::<Vec<_>>().join(",");
    let mut args: Vec<&str> = vec!["detach-cache"];
    args.extend(members.iter().map(String::as_str));
    args.extend(["--cache-members", &cache, "--json"]);
    refused_saying(d, &args, "detach-cache --adopt");
    args.push("--adopt");
    let detached = engine_json(d, &args);
    assert_eq!(detached["destaged_bytes"], dirty * 4096, "{detached}");
    assert_alone_matches(&lab.members, &shadow, "adopted and detached");
}

#[test]
fn kill_9_during_detach_cache_leaves_every_block_readable() {
    // A first detach runs to its end and is timed; the others are killed at fractions
    // of that time: early (replaying the log), while destaging, while writing the
    // superblocks, or after the end. Each time the array is either still cached with
    // its cache intact, or detached with every block. (Which one depends on the
    // machine's speed: the outcomes are printed, not asserted.)
    let mut full = std::time::Duration::ZERO;
    let mut outcomes = Vec::new();
    for (i, fraction) in [
        None,
        Some(0.05),
        Some(0.2),
        Some(0.4),
        Some(0.6),
        Some(0.8),
        Some(0.95),
    ]
    .into_iter()
    .enumerate()
    {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (lab, tier) = Lab::create(d, Policy::Lru, 2);
        let shadow = write_flushed_lines(&tier, 600, 900 + i as u64);
        let backing = tier.backing().clone();
        tier.close().unwrap();
        drop(tier);
        backing.close().unwrap();
        drop(backing);
        let started = std::time::Instant::now();
        let mut child = engine_command(d)
            .args([
                "detach-cache",
                "m0",
                "m1",
                "m2",
                "--cache-members",
                "ssd0,ssd1",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let when = match fraction {
            None => {
                assert!(child.wait().unwrap().success());
                full = started.elapsed();
                "run to its end".to_string()
            }
            Some(f) => {
                std::thread::sleep(full.mul_f64(f));
                let _ = child.kill();
                let _ = child.wait();
                format!("killed at {:.0} % of a whole detach", f * 100.0)
            }
        };
        let backing = Arc::new(retry_in_use(|| Array::assemble(&lab.members)));
        if backing.cache_uuid().is_some() {
            let tier = retry_in_use(|| CachedArray::open(backing.clone(), &lab.cache));
            assert_matches(&tier, &shadow, &format!("{when}, still cached"));
            outcomes.push((when, "cached"));
        } else {
            drop(backing);
            assert_alone_matches(&lab.members, &shadow, &format!("{when}, detached"));
            outcomes.push((when, "detached"));
        }
    }
    eprintln!("a whole detach took {full:?}; outcomes: {outcomes:?}");
}
