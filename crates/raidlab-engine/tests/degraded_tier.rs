//! Losing a piece of an array's redundancy while it is stopped: one SSD of its cache
//! mirror (the surviving copy holds every dirty line: assembled degraded, then
//! `replace-cache` rebuilds the lost member), or its write journal (`status --force`
//! assembles without it, says what may be lost, and the array goes on without one).

use crate::common::*;
use raidlab_cache::Policy;
use raidlab_engine::cache::CachedArray;
use raidlab_engine::{Array, CreateOptions};
use raidlab_layout::Level;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The bytes written through the cache: every 4 KiB line of the first 512 KiB its own.
fn pattern() -> Vec<u8> {
    (0..512u32 << 10)
        .map(|i| (i / 4096 * 7 + i % 251) as u8)
        .collect()
}

fn strs(paths: &[PathBuf]) -> Vec<&str> {
    paths.iter().map(|p| p.to_str().unwrap()).collect()
}

/// A RAID 5 of three 8 MiB members behind a RAID 1 cache of two 8 MiB SSDs, the
/// pattern written into it (dirty lines, FLUSHed), stopped without a destage.
fn cached_array_with_dirty_lines(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let members = member_paths(dir, "m", 3);
    let ssds = member_paths(dir, "ssd", 2);
    let opts = CreateOptions::new(Level::Raid5, 64 << 10, Some(8 << 20));
    let backing = Arc::new(retry_in_use(|| Array::create(&members, &opts)));
    let tier = CachedArray::create(
        backing.clone(),
        &ssds,
        Some(8 << 20),
        Policy::Lru,
        None,
        false,
    )
    .unwrap();
    tier.open_for_writes().unwrap();
    tier.write(0, &pattern(), false).unwrap();
    tier.flush().unwrap();
    let (_, dirty) = tier.occupancy();
    assert!(
        dirty >= 64,
        "the writes stay dirty in the cache ({dirty} lines)"
    );
    tier.close().unwrap();
    backing.close().unwrap();
    (members, ssds)
}

/// The array's first 512 KiB read without its cache (after detach-cache).
fn array_bytes(members: &[PathBuf]) -> Vec<u8> {
    let array = retry_in_use(|| Array::assemble(members));
    let mut buf = vec![0u8; 512 << 10];
    array.read(0, &mut buf).unwrap();
    buf
}

#[test]
fn a_lost_cache_ssd_is_served_degraded_and_rebuilt_onto_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (members, ssds) = cached_array_with_dirty_lines(d);
    std::fs::remove_file(&ssds[1]).unwrap();
    let m = strs(&members);
    let survivor = ssds[0].to_str().unwrap();
    // Named though lost: refused, saying to leave it out.
    let both = format!("{survivor},{}", ssds[1].display());
    let mut named = vec!["status"];
    named.extend(&m);
    named.extend(["--cache-members", &both]);
    let e = refused(d, &named);
    assert!(
        e.contains("does not exist") && e.contains("left out"),
        "{e}"
    );
    // The surviving SSD alone assembles the cache, degraded, with every dirty line.
    let mut args = vec!["status", "--json"];
    args.extend(&m);
    args.extend(["--cache-members", survivor]);
    let o = engine(d, &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cache mirror degraded"), "{err}");
    // A blank file in the lost one's place is refused with what to do instead.
    std::fs::write(&ssds[1], vec![0u8; 8 << 20]).unwrap();
    let e = refused(d, &named);
    assert!(
        e.contains("no raidlab superblock") && e.contains("replace-cache"),
        "{e}"
    );
    // replace-cache rebuilds the lost member onto it ...
    let mut args = vec!["replace-cache", ssds[1].to_str().unwrap()];
    args.extend(&m);
    args.extend(["--cache-members", survivor]);
    let o = engine(d, &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cache member 1 rebuilt onto"), "{err}");
    // ... and then a second replace-cache has nothing to do (and leaves no file).
    let spare = d.join("ssd2");
    let mut args = vec!["replace-cache", spare.to_str().unwrap()];
    args.extend(&m);
    args.extend(["--cache-members", &both]);
    let e = refused(d, &args);
    assert!(e.contains("lacks no member"), "{e}");
    assert!(!spare.exists(), "the NEW it created is removed");
    // The new member alone holds every dirty line: detach-cache from it alone hands
    // them to the array, which then reads back exactly what was written.
    let mut args = vec!["detach-cache"];
    args.extend(&m);
    args.extend(["--cache-members", ssds[1].to_str().unwrap()]);
    engine(d, &args);
    assert!(
        array_bytes(&members) == pattern(),
        "the dirty lines came back"
    );
}

#[test]
fn replace_cache_refuses_another_array_s_member_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (members, ssds) = cached_array_with_dirty_lines(d);
    std::fs::remove_file(&ssds[1]).unwrap();
    let other = member_paths(d, "o", 2);
    let opts = CreateOptions::new(Level::Raid1, 64 << 10, Some(8 << 20));
    drop(retry_in_use(|| Array::create(&other, &opts)));
    let before = std::fs::read(&other[0]).unwrap();
    let mut args = vec!["replace-cache", other[0].to_str().unwrap()];
    args.extend(strs(&members));
    args.extend(["--cache-members", ssds[0].to_str().unwrap()]);
    let e = refused(d, &args);
    assert!(e.contains("carries a raidlab superblock"), "{e}");
    assert!(
        std::fs::read(&other[0]).unwrap() == before,
        "nothing written"
    );
}

/// A journaled RAID 5 of three members, written, stopped without a clean close (the
/// array is left dirty, as by a crash), its journal then lost.
fn journaled_array_with_lost_journal(dir: &Path) -> Vec<PathBuf> {
    let members = member_paths(dir, "j", 3);
    let journal = dir.join("journal");
    let mut opts = CreateOptions::new(Level::Raid5, 64 << 10, Some(8 << 20));
    opts.journal = Some(journal.clone());
    opts.journal_bytes = Some(200 << 20);
    opts.sparse = true;
    drop(retry_in_use(|| Array::create(&members, &opts)));
    let array = retry_in_use(|| Array::assemble_with(&members, Some(&journal)));
    array.open_for_writes().unwrap();
    array.write(0, &pattern(), false).unwrap();
    array.flush().unwrap();
    drop(array); // no close: dirty, as after kill -9
    std::fs::remove_file(&journal).unwrap();
    members
}

#[test]
fn a_lost_journal_is_dropped_knowingly_with_status_force() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let members = journaled_array_with_lost_journal(d);
    let m = strs(&members);
    let mut serve = vec!["serve", "--listen", "127.0.0.1:0"];
    serve.extend(&m);
    let e = refused(d, &serve);
    assert!(
        e.contains("--journal") && e.contains("status --force"),
        "{e}"
    );
    let mut args = vec!["status", "--json", "--force"];
    args.extend(&m);
    let o = engine(d, &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("without its write journal after an unclean stop")
            && err.contains("write hole")
            && err.contains("run `raidlab-engine check`"),
        "{err}"
    );
    // Recorded: from now on the array assembles without a journal and without --force,
    // as a bitmap-policy array, and its flushed data is all there.
    let s = status(d, &m);
    assert_eq!(s["journal"], serde_json::Value::Null, "{s}");
    assert_eq!(s["consistency_policy"], "bitmap", "{s}");
    assert!(array_bytes(&members) == pattern(), "flushed data kept");
}
