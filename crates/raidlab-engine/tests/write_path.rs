//! The write path stores each member extent straight from the request's bytes (the
//! chunks of one request that lie end to end on a member go in one vectored write):
//! every member holds exactly what the layout puts there, on every level, with
//! checksums and through the journal, and a later, smaller write changes its own range
//! and nothing around it.

use crate::common::{member_paths, retry_in_use};
use raidlab_engine::format::superblock::{Integrity, DATA_OFFSET_BYTES};
use raidlab_engine::{Array, CreateOptions};
use raidlab_layout::{Layout, Level};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const CHUNK: u64 = 4096;
const CHUNKS_PER_MEMBER: u64 = 24;

fn pattern(seed: u64, len: u64) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7 ^ seed.wrapping_mul(0x9e37)) as u8)
        .collect()
}

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Plain,
    Checksums,
    Journal,
}

fn create(dir: &Path, level: Level, n: usize, v: Variant) -> (Array, Vec<PathBuf>) {
    let paths = member_paths(dir, "m", n);
    let size = DATA_OFFSET_BYTES + CHUNKS_PER_MEMBER * CHUNK + 64 * 1024;
    let mut o = CreateOptions::new(level, CHUNK, Some(size));
    if level == Level::Raid10 {
        o.layout = Some(Layout::Near);
        o.copies = Some(2);
    }
    match v {
        Variant::Plain => {}
        Variant::Checksums => o.integrity = Integrity::Crc32c,
        Variant::Journal => {
            o.journal = Some(dir.join("journal"));
            o.journal_bytes = Some(200 << 20);
        }
    }
    let array = retry_in_use(|| Array::create(&paths, &o));
    array.open_for_writes().unwrap();
    (array, paths)
}

fn read_all(array: &Array) -> Vec<u8> {
    let mut all = vec![0u8; array.capacity_bytes() as usize];
    array.read(0, &mut all).unwrap();
    all
}

/// Writes a pattern over the whole array, then writes that cross chunk borders with
/// partial first and last chunks, then a one-sector write inside the second: reads,
/// a reassembly (replaying the journal after an unclean stop) and a scrub agree with
/// a model; RAID 0 and RAID 1 members are also checked byte for byte on disk.
fn writes_land_where_the_layout_puts_them(level: Level, n: usize, v: Variant) {
    let dir = tempfile::tempdir().unwrap();
    let (array, paths) = create(dir.path(), level, n, v);
    let cap = array.capacity_bytes();
    let mut model = pattern(1, cap);
    array.write(0, &model, false).unwrap();
    let writes = [
        (3 * CHUNK + 512, 9 * CHUNK + 1024, true),
        (CHUNK - 512, 2 * CHUNK, false),
        (5 * CHUNK + 1024, 512, false),
    ];
    for (i, &(off, len, fua)) in writes.iter().enumerate() {
        let len = len.min(cap - off);
        let data = pattern(i as u64 + 2, len);
        array.write(off, &data, fua).unwrap();
        model[off as usize..(off + len) as usize].copy_from_slice(&data);
    }
    assert!(read_all(&array) == model, "{level:?} x{n}: read back");
    on_disk_matches(level, &paths, &model);
    let journal = dir.path().join("journal");
    let journal = (v == Variant::Journal).then_some(journal.as_path());
    if v == Variant::Journal {
        // Unclean: the assembly replays the journal's records over the members.
        drop(array);
    } else {
        array.close().unwrap();
        drop(array);
    }
    let array = retry_in_use(|| Array::assemble_with(&paths, journal));
    assert!(
        read_all(&array) == model,
        "{level:?} x{n}: after reassembly"
    );
    if array.geometry().tolerated_failures() > 0 {
        assert_eq!(array.scrub(false).unwrap().mismatched_stripes, 0);
    }
    on_disk_matches(level, &paths, &model);
}

/// RAID 0: chunk k on member k mod n at (k / n) chunks; RAID 1: every member holds
/// the whole image. Read from the files, not through the array.
fn on_disk_matches(level: Level, paths: &[PathBuf], model: &[u8]) {
    let files: Vec<std::fs::File> = paths
        .iter()
        .map(|p| std::fs::File::open(p).unwrap())
        .collect();
    let n = paths.len() as u64;
    let mut got = vec![0u8; CHUNK as usize];
    for (k, want) in model.chunks(CHUNK as usize).enumerate() {
        let k = k as u64;
        let places: Vec<(usize, u64)> = match level {
            Level::Raid0 => vec![((k % n) as usize, (k / n) * CHUNK)],
            Level::Raid1 => (0..n as usize).map(|m| (m, k * CHUNK)).collect(),
            _ => return,
        };
        for (m, off) in places {
            files[m]
                .read_exact_at(&mut got[..want.len()], DATA_OFFSET_BYTES + off)
                .unwrap();
            assert!(&got[..want.len()] == want, "chunk {k} on member {m}");
        }
    }
}

#[test]
fn writes_across_chunks_land_on_every_level() {
    for (level, n) in [
        (Level::Raid0, 3),
        (Level::Raid0, 1),
        (Level::Raid1, 2),
        (Level::Raid10, 3),
        (Level::Raid5, 4),
        (Level::Raid6, 5),
    ] {
        writes_land_where_the_layout_puts_them(level, n, Variant::Plain);
    }
}

#[test]
fn writes_across_chunks_land_with_checksums() {
    for (level, n) in [(Level::Raid0, 3), (Level::Raid10, 3), (Level::Raid5, 4)] {
        writes_land_where_the_layout_puts_them(level, n, Variant::Checksums);
    }
}

#[test]
fn writes_across_chunks_replay_from_the_journal() {
    for (level, n) in [(Level::Raid5, 3), (Level::Raid5, 4), (Level::Raid6, 5)] {
        writes_land_where_the_layout_puts_them(level, n, Variant::Journal);
    }
}
