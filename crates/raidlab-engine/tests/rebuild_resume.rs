//! A rebuild stopped with the server resumes where it stood, as md resumes a recovery:
//! the replacement's superblock keeps the rebuilt offset, `status` shows it, and the
//! next `serve` continues from there; after an unclean stop too, once the rows of the
//! regions the write-intent bitmap marks below the checkpoint are done again.

use crate::common;

use crate::common::{
    engine, engine_stdout, qemu_io, retry_in_use, serve, spawn_server, status, tool,
};
use std::path::Path;
use std::time::{Duration, Instant};

const MEMBER_DATA: u64 = 32 << 20;

/// RAID 5 of four, written with a pattern, b failed and being rebuilt onto e at 8 MB/s
/// (about 4 s) by a running server. Returns the server.
fn rebuilding(d: &Path) -> common::Server {
    engine(
        d,
        &[
            "create", "--level", "5", "--chunk", "64K", "--size", "33M", "a", "b", "c", "d",
        ],
    );
    let s = serve(d, &["a", "b", "c", "d"]);
    let t = qemu_io(&s.uri(), &["write -P 0x6d 0 96M"]);
    assert!(!t.contains("failed"), "{t}");
    engine(d, &["fail", "b", "a", "b", "c", "d"]);
    engine(
        d,
        &[
            "replace",
            "b",
            "e",
            "--rate",
            "8M",
            "--no-wait",
            "a",
            "b",
            "c",
            "d",
        ],
    );
    s
}

/// The offset the replacement's superblock says is rebuilt, from an offline status.
fn recovering_offset(st: &serde_json::Value) -> u64 {
    let state = st["members"][1]["state"].as_str().unwrap();
    assert!(state.starts_with("recovering ("), "{st}");
    state["recovering (".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Waits (30 s at most) until the served array has no failed member.
fn wait_rebuilt(d: &Path, members: &[&str]) {
    let t0 = Instant::now();
    while status(d, members)["failed"] != serde_json::json!([]) {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the rebuild did not finish"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_rebuild_stopped_cleanly_resumes_at_its_checkpoint() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = rebuilding(d);
    std::thread::sleep(Duration::from_millis(1800));
    // Written while the rebuild runs: below and above where it stands.
    let t = qemu_io(&s.uri(), &["write -P 0x7e 0 1M"]);
    assert!(!t.contains("failed"), "{t}");
    let t = qemu_io(&s.uri(), &["write -P 0x7e 90M 1M"]);
    assert!(!t.contains("failed"), "{t}");
    s.stop();

    let members = ["a", "e", "c", "d"];
    let st = status(d, &members);
    assert_eq!(st["failed"], serde_json::json!([1]), "{st}");
    let offset = recovering_offset(&st);
    assert!(offset > 0 && offset < MEMBER_DATA, "{offset}: {st}");

    let s = spawn_server(d, &members, true);
    let t0 = Instant::now();
    wait_rebuilt(d, &members);
    // The resumed rebuild keeps its --rate: the rest takes seconds, not a blink.
    let rest_s = (MEMBER_DATA - offset) as f64 / f64::from(8u32 << 20);
    assert!(
        t0.elapsed().as_secs_f64() > 0.6 * rest_s,
        "{:?} for {rest_s} s of rebuild at the rate",
        t0.elapsed()
    );
    let t = qemu_io(&s.uri(), &["read -P 0x7e 0 1M"]);
    assert!(!t.contains("Pattern verification failed"), "{t}");
    let t = qemu_io(&s.uri(), &["read -P 0x6d 1M 89M"]);
    assert!(!t.contains("Pattern verification failed"), "{t}");
    let t = qemu_io(&s.uri(), &["read -P 0x7e 90M 1M"]);
    assert!(!t.contains("Pattern verification failed"), "{t}");
    let err = s.stop_with_stderr();
    assert!(
        err.contains(&format!(
            "resuming the rebuild of member 1 onto {}",
            d.join("e").display()
        )) && err.contains(&format!(
            " at {offset} of {MEMBER_DATA} B, at most 8388608 B/s"
        )),
        "{err}"
    );
    assert!(err.contains("member 1 rebuilt"), "{err}");
    // Every stripe agrees with its parity: the rows rebuilt before the stop and after.
    let t = engine_stdout(d, &["check", "a", "e", "c", "d"]);
    assert!(t.contains("mismatched 0"), "{t}");
}

#[test]
fn after_an_unclean_stop_the_rebuild_resumes_at_its_checkpoint() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = rebuilding(d);
    std::thread::sleep(Duration::from_millis(1800));
    // Written below where the rebuild stands (array 0.. is member 0..), then kill -9.
    let t = qemu_io(&s.uri(), &["write -P 0x7e 0 1M"]);
    assert!(!t.contains("failed"), "{t}");
    s.kill();
    let members = ["a", "e", "c", "d"];
    let st = status(d, &members);
    assert_eq!(st["failed"], serde_json::json!([1]), "{st}");
    assert_eq!(st["dirty"], true, "{st}");
    let offset = recovering_offset(&st);
    assert!(offset > 0 && offset < MEMBER_DATA, "{offset}: {st}");

    let s = spawn_server(d, &members, false);
    wait_rebuilt(d, &members);
    // The replacement carries the data alone once another member is gone.
    engine(d, &["fail", "c", "a", "e", "c", "d"]);
    let t = qemu_io(&s.uri(), &["read -P 0x7e 0 1M"]);
    assert!(!t.contains("Pattern verification failed"), "{t}");
    let t = qemu_io(&s.uri(), &["read -P 0x6d 1M 95M"]);
    assert!(!t.contains("Pattern verification failed"), "{t}");
    s.stop();
}

/// Every member's superblock says dirty and its bitmap marks region 0: what an unclean
/// stop leaves after writes to the first 64 MiB of every member.
fn mark_dirty_region_0(paths: &[std::path::PathBuf]) {
    use raidlab_engine::format::superblock::{Superblock, BITMAP_OFFSET_BYTES, SUPERBLOCK_BYTES};
    use std::os::unix::fs::FileExt;
    for p in paths {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(p)
            .unwrap();
        let mut b = [0u8; SUPERBLOCK_BYTES];
        f.read_exact_at(&mut b, 0).unwrap();
        let sb = Superblock {
            dirty: true,
            ..Superblock::decode(&b).unwrap()
        };
        f.write_all_at(&sb.encode(), 0).unwrap();
        f.write_all_at(&[1], BITMAP_OFFSET_BYTES).unwrap();
    }
}

#[test]
fn rows_below_the_checkpoint_in_dirty_regions_are_rebuilt_again() {
    use raidlab_engine::format::superblock::DATA_OFFSET_BYTES;
    use raidlab_engine::{Array, CreateOptions};
    use raidlab_layout::Level;
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n);
    let members: Vec<_> = ["a", "b", "c", "d"].iter().map(|n| path(n)).collect();
    let o = CreateOptions::new(Level::Raid5, 16 << 10, Some(DATA_OFFSET_BYTES + (8 << 20)));
    let array = retry_in_use(|| Array::create(&members, &o));
    let data: Vec<u8> = (0..array.capacity_bytes())
        .map(|i| (i / 4096 * 7) as u8)
        .collect();
    array.write(0, &data, false).unwrap();
    array.fail_member(1).unwrap();
    // A rebuild onto e, stopped cleanly half way (its checkpoint is then saved).
    let array = std::sync::Arc::new(array);
    let rebuild = {
        let (array, e) = (array.clone(), path("e"));
        std::thread::spawn(move || array.rebuild(1, &e, Some(4 << 20), |_, _| {}))
    };
    std::thread::sleep(Duration::from_millis(1000));
    array.cancel_rebuild();
    assert!(rebuild.join().unwrap().is_err(), "cancelled");
    array.close().unwrap();
    drop(array);
    let now: Vec<_> = ["a", "e", "c", "d"].iter().map(|n| path(n)).collect();
    let stopped = retry_in_use(|| Array::assemble(&now));
    let (_, _, offset, _) = stopped.resumable_rebuild().expect("a checkpoint");
    assert!((16 << 10..8 << 20).contains(&offset), "{offset}");
    drop(stopped);
    // Then an unclean stop: a write to row 0 reached a, c and d but not e.
    std::fs::OpenOptions::new()
        .write(true)
        .open(path("e"))
        .unwrap()
        .write_all_at(&[0xee; 16 << 10], DATA_OFFSET_BYTES)
        .unwrap();
    mark_dirty_region_0(&now);

    let array = retry_in_use(|| Array::assemble(&now));
    assert_eq!(array.resumable_rebuild().map(|r| r.2), Some(offset));
    array.resume_rebuild(|_, _| {}).unwrap();
    assert!(array.failed().is_empty());
    let report = array.scrub(false).unwrap();
    assert_eq!(report.mismatched_stripes, 0, "{report:?}");
    array.fail_member(0).unwrap();
    let mut back = vec![0u8; data.len()];
    array.read(0, &mut back).unwrap();
    assert!(back == data, "e's data, with a failed, reads back wrong");
}
