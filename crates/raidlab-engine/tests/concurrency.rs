//! Threads writing interleaved sectors of the same stripes at once: the stripe locks keep
//! parity and copies consistent, and every thread reads back its own last write.

use crate::common::{member_paths, retry_in_use};
use raidlab_engine::format::superblock::DATA_OFFSET_BYTES;
use raidlab_engine::{Array, CreateOptions};
use raidlab_layout::{Layout, Level};
use std::sync::Arc;

fn run(level: Level, n: usize, layout: Option<Layout>) {
    let dir = tempfile::tempdir().unwrap();
    let paths = member_paths(dir.path(), "m", n);
    let mut o = CreateOptions::new(level, 4096, Some(DATA_OFFSET_BYTES + (256 << 10)));
    o.layout = layout;
    o.uuid = Some(1);
    let array = Arc::new(retry_in_use(|| Array::create(&paths, &o)));
    let geo = *array.geometry();
    let su = geo.stripe_unit_bytes();
    let full = geo.full_stripe_bytes();
    let mirrored = geo.copies() > 1;
    // Members enough that a 512 B write is a read-modify-write, which carries a lost
    // parity update forward (a reconstruct-write would heal it on the next write).
    // Parity levels: thread t owns data chunk t of every stripe, at the same columns as
    // the others, so all of them update the same parity bytes. Mirrors: every thread
    // writes the same sectors, so only the locks keep the copies equal.
    let threads = if mirrored {
        4
    } else {
        u64::from(geo.data_members_per_stripe())
    };
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let array = array.clone();
            std::thread::spawn(move || {
                let mut last = Vec::new();
                for i in 0..3000u64 {
                    let col = (i * 512) % su;
                    let off = if mirrored {
                        (i % 16) * su + col
                    } else {
                        (i % 16) * full + t * su + col
                    };
                    let data = vec![(t * 50 + i % 50) as u8; 512];
                    array.write(off, &data, false).unwrap();
                    last.push((off, data));
                }
                last
            })
        })
        .collect();
    let mut expect = std::collections::BTreeMap::new();
    for h in handles {
        for (off, data) in h.join().unwrap() {
            expect.insert(off, data);
        }
    }
    for (off, data) in expect.into_iter().filter(|_| !mirrored) {
        let mut back = vec![0u8; 512];
        array.read(off, &mut back).unwrap();
        assert_eq!(back, data, "{level:?} offset {off}");
    }
    assert_eq!(
        array.scrub(false).unwrap().mismatched_stripes,
        0,
        "{level:?}"
    );
}

#[test]
fn concurrent_writers_keep_raid5_parity_consistent() {
    run(Level::Raid5, 6, None);
}

#[test]
fn concurrent_writers_keep_raid6_p_and_q_consistent() {
    run(Level::Raid6, 8, Some(Layout::LeftAsymmetric));
}

#[test]
fn concurrent_writers_keep_mirror_copies_equal() {
    run(Level::Raid1, 3, None);
    run(Level::Raid10, 4, Some(Layout::Far));
}
