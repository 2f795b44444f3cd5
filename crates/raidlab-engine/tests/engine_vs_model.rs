//! Random operations on every level against an in-memory model, with members failing
//! (within what the level tolerates) in the middle: the array returns the model's bytes,
//! survives reassembly, rebuilds, and scrubs clean afterwards.

use crate::common::{member_paths, retry_in_use};
use proptest::prelude::*;
use raidlab_engine::format::superblock::DATA_OFFSET_BYTES;
use raidlab_engine::{Array, CreateOptions};
use raidlab_layout::{Layout, Level};

const S: u64 = 512;

/// Small random valid options for `level` and a member count.
fn options(level: Level, r: [u32; 6]) -> (CreateOptions, usize) {
    let su = S << (r[0] % 4);
    let chunks = 2 + u64::from(r[1] % 5) + if level == Level::Raid10 { 3 } else { 0 };
    let size = DATA_OFFSET_BYTES + chunks * su + u64::from(r[2] % 3) * S;
    let mut o = CreateOptions::new(level, su, Some(size));
    o.uuid = Some(u128::from(r[5]) << 64 | u128::from(r[4]));
    let pick = |lo: u32, hi: u32| (lo + r[4] % (hi - lo + 1)) as usize;
    let layout = Layout::PARITY[(r[3] % 4) as usize];
    let n = match level {
        Level::Raid0 | Level::Concat => pick(1, 5),
        Level::Raid1 => pick(2, 4),
        Level::Raid4 => pick(3, 6),
        Level::Raid5 => {
            o.layout = Some(layout);
            pick(3, 7)
        }
        Level::Raid6 => {
            o.layout = Some(layout);
            pick(4, 8)
        }
        Level::Raid10 => {
            let n = pick(2, 6) as u32;
            o.copies = Some(2 + r[5] % (n - 1).min(3));
            o.layout = Some(Layout::RAID10[(r[3] % 3) as usize]);
            n as usize
        }
        Level::Raid50 | Level::Raid60 => {
            let spans = 1 + r[5] % 2;
            let width = if level == Level::Raid50 { 3 } else { 4 } + r[4] % 2;
            o.layout = Some(layout);
            o.spans = Some(spans);
            (spans * width) as usize
        }
    };
    (o, n)
}

fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_ops_with_failures_match_the_model_and_rebuild(
        level in 0usize..9, r in any::<[u32; 6]>(), seed in any::<u64>(),
        ops in proptest::collection::vec((any::<u64>(), any::<u64>(), 0u8..8), 1..24)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (opts, n) = options(Level::ALL[level], r);
        let paths = member_paths(dir.path(), "m", n);
        let array = retry_in_use(|| Array::create(&paths, &opts));
        let cap = array.capacity_bytes();
        let mut model = vec![0u8; cap as usize];
        let sectors = cap / S;
        for (i, (a, b, kind)) in ops.into_iter().enumerate() {
            let start = a % sectors;
            let len = (1 + b % (sectors - start)).min(64);
            let (off, len) = (start * S, len * S);
            match kind {
                0..=3 => {
                    let data = bytes(seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9), len as usize);
                    array.write(off, &data, kind == 3).unwrap();
                    model[off as usize..(off + len) as usize].copy_from_slice(&data);
                }
                4..=6 => {
                    let mut buf = vec![0u8; len as usize];
                    array.read(off, &mut buf).unwrap();
                    prop_assert!(buf == model[off as usize..(off + len) as usize], "read {off}+{len} op {i} failed {}", array.failed());
                }
                _ => {
                    // Pull a member out if the level survives it.
                    let m = (a % n as u64) as u32;
                    let mut f = array.failed();
                    f.insert(m);
                    if array.geometry().tolerates(&f) {
                        array.fail_member(m).unwrap();
                    } else {
                        prop_assert!(array.fail_member(m).is_err() || array.failed().contains(m));
                    }
                }
            }
        }
        let mut all = vec![0u8; cap as usize];
        for (k, piece) in all.chunks_mut(1 << 20).enumerate() {
            array.read(k as u64 * (1 << 20), piece).unwrap();
        }
        prop_assert!(all == model, "whole image, failed {}", array.failed());
        array.close().unwrap();
        drop(array);
        // Reassemble from the surviving files: stale (failed) members are left out.
        let array = retry_in_use(|| Array::assemble(&paths));
        let failed = array.failed();
        let mut all = vec![0u8; cap as usize];
        for (k, piece) in all.chunks_mut(1 << 20).enumerate() {
            array.read(k as u64 * (1 << 20), piece).unwrap();
        }
        prop_assert!(all == model, "after reassembly, failed {}", failed);
        // Put new members in.
        for m in failed.iter() {
            let new = dir.path().join(format!("new{m}"));
            array.rebuild(m, &new, None, |_, _| {}).unwrap();
        }
        prop_assert!(array.failed().is_empty());
        if array.geometry().tolerated_failures() > 0 {
            let report = array.scrub(false).unwrap();
            prop_assert_eq!(report.mismatched_stripes, 0);
        }
        let mut all = vec![0u8; cap as usize];
        for (k, piece) in all.chunks_mut(1 << 20).enumerate() {
            array.read(k as u64 * (1 << 20), piece).unwrap();
        }
        prop_assert!(all == model);
    }
}
