//! md's bad-block list: unreadable sectors at the same place on more members than the
//! level tolerates fail only the blocks they hold (EIO), every other block is read or
//! rebuilt, no member is failed, the lists are in `status` and in the superblocks
//! (they survive a stop), and a write over the blocks clears them.

use crate::common::{member_paths, retry_in_use};
use raidlab_engine::array::Fault;
use raidlab_engine::format::superblock::DATA_OFFSET_BYTES;
use raidlab_engine::{Array, CreateOptions};
use raidlab_layout::{Layout, Level};
use std::path::PathBuf;

const CHUNK: u64 = 16 << 10;
const BLOCK: u64 = 4096;

/// The byte every logical offset holds: data that tells a misplaced block.
fn pattern(offset: u64, len: u64, seed: u8) -> Vec<u8> {
    (offset..offset + len)
        .map(|o| ((o / 512) as u8).wrapping_mul(31) ^ (o as u8) ^ seed)
        .collect()
}

struct Case {
    level: Level,
    layout: Option<Layout>,
    members: usize,
    /// The members whose sectors at the same offset are unreadable: one more than the
    /// level tolerates (every copy of a chunk, for mirrors).
    bad: &'static [u32],
    /// Logical bytes of one stripe's data (a chunk row), which a write covers whole
    /// without reading.
    stripe_bytes: u64,
}

fn create(dir: &std::path::Path, case: &Case) -> (Vec<PathBuf>, Array) {
    let paths = member_paths(dir, "m", case.members);
    let mut o = CreateOptions::new(case.level, CHUNK, Some(DATA_OFFSET_BYTES + (1 << 20)));
    o.layout = case.layout;
    let array = retry_in_use(|| Array::create(&paths, &o));
    array.open_for_writes().unwrap();
    let cap = array.capacity_bytes();
    array.write(0, &pattern(0, cap, 0), false).unwrap();
    (paths, array)
}

/// The logical blocks whose first copy is at member offset `at` of a bad member.
fn lost_blocks(array: &Array, case: &Case, at: u64) -> Vec<u64> {
    let geo = array.geometry();
    (0..array.capacity_bytes() / BLOCK)
        .map(|b| b * BLOCK)
        .filter(|&l| {
            let loc = geo.locate(l);
            case.bad.contains(&loc.member) && loc.offset_bytes == at
        })
        .collect()
}

/// Every 256 KiB read without a lost block succeeds with the data; the others fail,
/// and inside them exactly the lost 4 KiB blocks do, naming their logical bytes.
fn assert_only_lost_blocks_fail(array: &Array, lost: &[u64], seed: u8) {
    const PIECE: u64 = 256 << 10;
    let cap = array.capacity_bytes();
    for piece in (0..cap).step_by(PIECE as usize) {
        let len = PIECE.min(cap - piece);
        let mut buf = vec![0u8; len as usize];
        let has_lost = lost.iter().any(|&l| l >= piece && l < piece + len);
        let r = array.read(piece, &mut buf);
        if !has_lost {
            r.unwrap_or_else(|e| panic!("read at {piece}: {e}"));
            assert!(buf == pattern(piece, len, seed), "data at {piece}");
            continue;
        }
        let e = r.expect_err("a lost block in it").to_string();
        let first = lost.iter().find(|&&l| l >= piece).unwrap();
        assert!(e.contains(&format!("logical bytes {first}+")), "{e}");
        for b in (piece..piece + len).step_by(BLOCK as usize) {
            let mut one = vec![0u8; BLOCK as usize];
            match array.read(b, &mut one) {
                Ok(()) => {
                    assert!(!lost.contains(&b), "lost block {b} read");
                    assert!(one == pattern(b, BLOCK, seed), "data at {b}");
                }
                Err(e) => assert!(lost.contains(&b), "block {b}: {e}"),
            }
        }
    }
}

fn bad_blocks_of(array: &Array) -> Vec<Vec<(u64, u64)>> {
    array.status().bad_blocks
}

fn unreadable_sectors_fail_only_their_blocks(case: &Case) {
    let dir = tempfile::tempdir().unwrap();
    let (paths, array) = create(dir.path(), case);
    // Member offset: the second 4 KiB of chunk row 5.
    let at = 5 * CHUNK + BLOCK;
    for &m in case.bad {
        array
            .inject_fault(Fault::BadSector {
                member: m,
                offset_bytes: at,
                len_bytes: BLOCK,
            })
            .unwrap();
    }
    let lost = lost_blocks(&array, case, at);
    assert!(!lost.is_empty());
    assert_only_lost_blocks_fail(&array, &lost, 0);
    let st = array.status();
    assert!(st.failed.is_empty(), "no member failed: {}", st.failed);
    let expected: Vec<Vec<(u64, u64)>> = (0..case.members as u32)
        .map(|m| {
            if case.bad.contains(&m) {
                vec![(at, BLOCK)]
            } else {
                vec![]
            }
        })
        .collect();
    assert_eq!(bad_blocks_of(&array), expected);
    // The lists are in the superblocks: after a stop (the injected faults gone) the
    // blocks are still unreadable, as md keeps them until written.
    array.close().unwrap();
    drop(array);
    let array = retry_in_use(|| Array::assemble(&paths));
    assert_eq!(bad_blocks_of(&array), expected);
    assert_only_lost_blocks_fail(&array, &lost, 0);
    // A write of the whole stripes holding them clears every list, on disk too.
    array.open_for_writes().unwrap();
    for &l in &lost {
        let s = l / case.stripe_bytes * case.stripe_bytes;
        array
            .write(s, &pattern(s, case.stripe_bytes, 0), false)
            .unwrap();
    }
    assert!(bad_blocks_of(&array).iter().all(Vec::is_empty));
    array.close().unwrap();
    drop(array);
    let array = retry_in_use(|| Array::assemble(&paths));
    assert!(bad_blocks_of(&array).iter().all(Vec::is_empty));
    assert_only_lost_blocks_fail(&array, &[], 0);
    let r = array.scrub(false).unwrap();
    assert_eq!(r.mismatched_stripes, 0, "{r:?}");
}

#[test]
fn two_unreadable_sectors_in_a_raid5_row_fail_only_their_blocks() {
    unreadable_sectors_fail_only_their_blocks(&Case {
        level: Level::Raid5,
        layout: None,
        members: 4,
        bad: &[1, 2],
        stripe_bytes: 3 * CHUNK,
    });
}

#[test]
fn three_unreadable_sectors_in_a_raid6_row_fail_only_their_blocks() {
    unreadable_sectors_fail_only_their_blocks(&Case {
        level: Level::Raid6,
        layout: None,
        members: 5,
        bad: &[0, 2, 4],
        stripe_bytes: 3 * CHUNK,
    });
}

#[test]
fn both_copies_unreadable_on_raid1_and_raid10_fail_only_their_blocks() {
    unreadable_sectors_fail_only_their_blocks(&Case {
        level: Level::Raid1,
        layout: None,
        members: 2,
        bad: &[0, 1],
        stripe_bytes: BLOCK,
    });
    unreadable_sectors_fail_only_their_blocks(&Case {
        level: Level::Raid10,
        layout: Some(Layout::Near),
        members: 4,
        bad: &[2, 3],
        stripe_bytes: BLOCK,
    });
}

/// RAID 5 of 4, the same 4 KiB lost on members 1 and 2 in row 4 (parity on member 3):
/// writing member 0's block beside them needs no lost block (read-modify-write of it and
/// the parity instead of reconstruct-write from them), so it succeeds; the lost blocks
/// stay lost.
#[test]
fn a_write_beside_lost_blocks_that_does_not_read_them_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let case = Case {
        level: Level::Raid5,
        layout: None,
        members: 4,
        bad: &[1, 2],
        stripe_bytes: 3 * CHUNK,
    };
    let (_paths, array) = create(dir.path(), &case);
    let at = 4 * CHUNK + BLOCK;
    for &m in case.bad {
        array
            .inject_fault(Fault::BadSector {
                member: m,
                offset_bytes: at,
                len_bytes: BLOCK,
            })
            .unwrap();
    }
    let lost = lost_blocks(&array, &case, at);
    assert_eq!(lost.len(), 2);
    assert_only_lost_blocks_fail(&array, &lost, 0);
    let beside = 4 * 3 * CHUNK + BLOCK;
    assert_eq!(array.geometry().locate(beside).member, 0);
    array
        .write(beside, &vec![0xee; BLOCK as usize], false)
        .unwrap();
    let mut back = vec![0u8; BLOCK as usize];
    array.read(beside, &mut back).unwrap();
    assert_eq!(back, vec![0xee; BLOCK as usize]);
    assert!(array.read(lost[0], &mut back).is_err());
    assert!(array.status().failed.is_empty());
    // Once both are written (their stripe whole), parity agrees everywhere.
    let s = 4 * 3 * CHUNK;
    let mut stripe = pattern(s, 3 * CHUNK, 0);
    stripe[BLOCK as usize..2 * BLOCK as usize].fill(0xee);
    array.write(s, &stripe, false).unwrap();
    assert_eq!(array.scrub(false).unwrap().mismatched_stripes, 0);
}

#[test]
fn one_unreadable_sector_is_rewritten_and_not_listed() {
    let dir = tempfile::tempdir().unwrap();
    let case = Case {
        level: Level::Raid5,
        layout: None,
        members: 4,
        bad: &[1],
        stripe_bytes: 3 * CHUNK,
    };
    let (_paths, array) = create(dir.path(), &case);
    // Chunk row 0 of member 1 holds data (its parity is on member 3).
    let at = 512;
    array
        .inject_fault(Fault::BadSector {
            member: 1,
            offset_bytes: at,
            len_bytes: 512,
        })
        .unwrap();
    assert_only_lost_blocks_fail(&array, &[], 0);
    let st = array.status();
    assert!(st.failed.is_empty());
    assert!(
        st.faults.is_empty(),
        "the rewrite remapped it: {:?}",
        st.faults
    );
    assert_eq!(st.read_errors_corrected[1], 1);
    assert!(
        st.bad_blocks.iter().all(Vec::is_empty),
        "{:?}",
        st.bad_blocks
    );
}
