//! Rebuild while writers keep writing: every write, before, during and after the
//! rebuild, reads back; the rebuilt member agrees with parity and copies (scrub finds no
//! mismatch) and carries the data alone when another member fails afterwards.

use crate::common::{member_paths, retry_in_use};
use raidlab_engine::format::superblock::DATA_OFFSET_BYTES;
use raidlab_engine::{Array, CreateOptions};
use raidlab_layout::{Layout, Level};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const BLOCK: u64 = 4096;

/// A block's content: its offset and generation, so a stale block is told from a new one.
fn pattern(off: u64, generation: u64) -> Vec<u8> {
    let mut b = vec![0u8; BLOCK as usize];
    for (i, x) in b.iter_mut().enumerate() {
        *x = (off / BLOCK)
            .wrapping_mul(31)
            .wrapping_add(generation.wrapping_mul(7))
            .wrapping_add(i as u64 / 8) as u8;
    }
    b
}

fn run(level: Level, n: usize, layout: Option<Layout>, spans: Option<u32>, rebuild: u32) {
    let dir = tempfile::tempdir().unwrap();
    let paths = member_paths(dir.path(), "m", n);
    let mut o = CreateOptions::new(level, 16 << 10, Some(DATA_OFFSET_BYTES + (8 << 20)));
    o.layout = layout;
    o.spans = spans;
    o.uuid = Some(3);
    let array = Arc::new(retry_in_use(|| Array::create(&paths, &o)));
    let blocks = array.capacity_bytes() / BLOCK;
    array.fail_member(rebuild).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // Writer t owns the blocks with index % 3 == t: neighbours in every stripe, so the
    // writers update the same parity blocks the rebuild reads.
    let writers: Vec<_> = (0..3u64)
        .map(|t| {
            let (array, stop) = (array.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut mine = BTreeMap::new();
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t;
                let mut generation = 0;
                while !stop.load(Ordering::Relaxed) || generation < 200 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let b = (x % (blocks / 3)) * 3 + t;
                    generation += 1;
                    let data = pattern(b * BLOCK, generation);
                    array.write(b * BLOCK, &data, false).unwrap();
                    mine.insert(b * BLOCK, data);
                }
                mine
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut calls = 0;
    array
        .rebuild(rebuild, &dir.path().join("new"), Some(64 << 20), |_, _| {
            calls += 1
        })
        .unwrap();
    assert!(calls > 0);
    stop.store(true, Ordering::Relaxed);
    let mut expect = BTreeMap::new();
    for w in writers {
        expect.extend(w.join().unwrap());
    }
    assert!(
        array.failed().is_empty(),
        "{level:?}: rebuilt member active"
    );
    assert!(array.rebuild_progress().is_none());
    let check = |what: &str| {
        for (off, data) in &expect {
            let mut back = vec![0u8; BLOCK as usize];
            array.read(*off, &mut back).unwrap();
            assert!(back == *data, "{level:?} {what}: block at {off} differs");
        }
    };
    check("after the rebuild");
    assert_eq!(
        array.scrub(false).unwrap().mismatched_stripes,
        0,
        "{level:?}: the rebuilt member disagrees with parity or copies"
    );
    // The rebuilt member must now carry its share alone: fail a partner.
    let partner = (0..n as u32)
        .find(|&m| {
            m != rebuild && {
                let mut f = array.failed();
                f.insert(m);
                f.insert(rebuild);
                !array.geometry().tolerates(&f)
            }
        })
        .unwrap_or((rebuild + 1) % n as u32);
    array.fail_member(partner).unwrap();
    check("with a partner of the rebuilt member failed");
}

#[test]
fn raid5_rebuilds_online_under_concurrent_writes() {
    run(Level::Raid5, 4, None, None, 1);
}

#[test]
fn raid6_rebuilds_online_under_concurrent_writes() {
    run(Level::Raid6, 5, None, None, 4);
}

#[test]
fn raid1_and_raid10_rebuild_online_under_concurrent_writes() {
    run(Level::Raid1, 2, None, None, 0);
    run(Level::Raid10, 4, Some(Layout::Near), None, 2);
    run(Level::Raid10, 4, Some(Layout::Far), None, 1);
    run(Level::Raid10, 3, Some(Layout::Offset), None, 0);
}

#[test]
fn raid50_rebuilds_online_under_concurrent_writes() {
    run(Level::Raid50, 6, None, Some(2), 4);
}
