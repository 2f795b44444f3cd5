//! `repair` keeps good data: RAID 6 locates the one bad block of a stripe from P and Q
//! and rewrites that block (data, P or Q); three copies outvote a bad one; where
//! nothing tells which block is right (RAID 5 data against parity, two copies, two bad
//! blocks of a RAID 6 stripe) it changes nothing and reports the stripe unresolved with
//! its logical bytes, instead of copying the bad block over the good one.

use crate::common::{member_paths, retry_in_use};
use raidlab_engine::format::superblock::DATA_OFFSET_BYTES;
use raidlab_engine::{Array, CreateOptions};
use raidlab_layout::{Layout, Level};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const CHUNK: u64 = 16 << 10;

fn pattern(offset: u64, len: u64) -> Vec<u8> {
    (offset..offset + len)
        .map(|o| ((o / 512) as u8).wrapping_mul(13) ^ (o as u8).rotate_left(3))
        .collect()
}

/// An array of `members` written whole with [`pattern`], stopped.
fn written(dir: &Path, level: Level, members: usize, copies: Option<u32>) -> (Vec<PathBuf>, u64) {
    let paths = member_paths(dir, "m", members);
    let mut o = CreateOptions::new(level, CHUNK, Some(DATA_OFFSET_BYTES + (512 << 10)));
    o.copies = copies;
    if level == Level::Raid10 {
        o.layout = Some(Layout::Near);
    }
    let array = retry_in_use(|| Array::create(&paths, &o));
    array.open_for_writes().unwrap();
    let cap = array.capacity_bytes();
    array.write(0, &pattern(0, cap), false).unwrap();
    array.close().unwrap();
    (paths, cap)
}

/// Flips byte `at` of member `m`'s data, with the array stopped (bit rot).
fn flip(paths: &[PathBuf], m: u32, at: u64) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&paths[m as usize])
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, DATA_OFFSET_BYTES + at).unwrap();
    b[0] ^= 0x5a;
    f.write_all_at(&b, DATA_OFFSET_BYTES + at).unwrap();
}

fn data_is_whole(array: &Array, cap: u64) -> bool {
    let mut buf = vec![0u8; cap as usize];
    array.read(0, &mut buf).unwrap();
    buf == pattern(0, cap)
}

#[test]
fn raid6_repair_rewrites_the_one_bad_block_p_and_q_point_at() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, cap) = written(dir.path(), Level::Raid6, 5, None);
    let logical = 7 * CHUNK + 100;
    // A data block (stripe 2), P of stripe 5, Q of stripe 8: three data chunks a stripe.
    let (data, p, q) = {
        let array = retry_in_use(|| Array::assemble(&paths));
        let g = array.geometry();
        (
            g.locate(logical),
            g.parity_of(logical + 9 * CHUNK).p.unwrap(),
            g.parity_of(logical + 18 * CHUNK).q.unwrap(),
        )
    };
    flip(&paths, data.member, data.offset_bytes);
    flip(&paths, p.member, p.offset_bytes);
    flip(&paths, q.member, q.offset_bytes + 9);
    let array = retry_in_use(|| Array::assemble(&paths));
    assert!(!data_is_whole(&array, cap), "the flipped data byte is read");
    assert_eq!(array.scrub(false).unwrap().mismatched_stripes, 3);
    let r = array.scrub(true).unwrap();
    assert_eq!(
        (
            r.mismatched_stripes,
            r.repaired_stripes,
            r.unresolved_stripes
        ),
        (3, 3, 0),
        "{r:?}"
    );
    assert!(data_is_whole(&array, cap), "repair restored the data byte");
    assert_eq!(array.scrub(false).unwrap().mismatched_stripes, 0);
}

#[test]
fn raid6_repair_leaves_two_bad_blocks_of_a_stripe_and_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, cap) = written(dir.path(), Level::Raid6, 5, None);
    let array = retry_in_use(|| Array::assemble(&paths));
    let (a, b) = (array.geometry().locate(0), array.geometry().locate(CHUNK));
    drop(array);
    flip(&paths, a.member, a.offset_bytes + 10);
    flip(&paths, b.member, b.offset_bytes + 20);
    let array = retry_in_use(|| Array::assemble(&paths));
    let r = array.scrub(true).unwrap();
    assert_eq!((r.repaired_stripes, r.unresolved_stripes), (0, 1), "{r:?}");
    assert_eq!(r.unresolved, vec![(0, 3 * CHUNK)]);
    assert_eq!(
        array.scrub(false).unwrap().mismatched_stripes,
        1,
        "unchanged"
    );
    assert!(!data_is_whole(&array, cap));
}

/// A flipped byte on the first data copy: `repair` must not copy it anywhere.
fn repair_reports_and_keeps(level: Level, members: usize, copies: Option<u32>) {
    let dir = tempfile::tempdir().unwrap();
    let (paths, _) = written(dir.path(), level, members, copies);
    let logical = 5 * CHUNK + 77;
    let loc = retry_in_use(|| Array::assemble(&paths))
        .geometry()
        .locate(logical);
    flip(&paths, loc.member, loc.offset_bytes);
    let array = retry_in_use(|| Array::assemble(&paths));
    let r = array.scrub(true).unwrap();
    assert_eq!(
        (
            r.mismatched_stripes,
            r.repaired_stripes,
            r.unresolved_stripes
        ),
        (1, 0, 1),
        "{level}: {r:?}"
    );
    let (start, len) = r.unresolved[0];
    assert!(start <= logical && logical < start + len, "{r:?}");
    // Nothing was copied over the good block: the mismatch is still there to be seen.
    assert_eq!(array.scrub(false).unwrap().mismatched_stripes, 1, "{level}");
}

#[test]
fn raid5_and_two_copy_repair_report_the_mismatch_and_copy_nothing() {
    repair_reports_and_keeps(Level::Raid5, 4, None);
    repair_reports_and_keeps(Level::Raid1, 2, None);
    repair_reports_and_keeps(Level::Raid10, 4, Some(2));
}

#[test]
fn three_copies_outvote_the_bad_one() {
    for (level, members, copies) in [(Level::Raid1, 3, None), (Level::Raid10, 3, Some(3))] {
        let dir = tempfile::tempdir().unwrap();
        let (paths, cap) = written(dir.path(), level, members, copies);
        let loc = retry_in_use(|| Array::assemble(&paths))
            .geometry()
            .locate(9 * CHUNK + 1);
        flip(&paths, loc.member, loc.offset_bytes);
        let array = retry_in_use(|| Array::assemble(&paths));
        let r = array.scrub(true).unwrap();
        assert_eq!(
            (r.repaired_stripes, r.unresolved_stripes),
            (1, 0),
            "{level}: {r:?}"
        );
        assert!(data_is_whole(&array, cap), "{level}");
        assert_eq!(array.scrub(false).unwrap().mismatched_stripes, 0);
    }
}
