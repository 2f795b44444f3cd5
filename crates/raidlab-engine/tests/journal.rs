//! The write journal on its own: records in order, a torn tail ends the log, the wrong
//! journal or none is refused at assembly, and a clean close retires every record.

use crate::common::{member_paths, retry_in_use, Tmpfs};
use raidlab_engine::format::journal::Journal;
use raidlab_engine::format::superblock::DATA_OFFSET_BYTES;
use raidlab_engine::{Array, CreateOptions};
use raidlab_layout::Level;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

fn journaled(dir: &std::path::Path, uuid: u128, journal: &str) -> (Vec<PathBuf>, PathBuf) {
    let paths = member_paths(dir, &format!("{journal}-m"), 3);
    let mut o = CreateOptions::new(Level::Raid5, 16 << 10, Some(DATA_OFFSET_BYTES + (1 << 20)));
    o.uuid = Some(uuid);
    o.journal = Some(dir.join(journal));
    o.journal_bytes = Some(200 << 20);
    drop(retry_in_use(|| Array::create(&paths, &o)));
    (paths, dir.join(journal))
}

#[test]
fn records_follow_writes_and_a_torn_tail_ends_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, j) = journaled(dir.path(), 11, "j");
    let array = retry_in_use(|| Array::assemble_with(&paths, Some(&j)));
    array.open_for_writes().unwrap();
    for i in 0..5u64 {
        array.write(i * 4096, &[i as u8 + 1; 4096], false).unwrap();
    }
    let journal = Journal::open(&j, 11).unwrap();
    let records = journal.records().unwrap();
    assert_eq!(records.len(), 5);
    // A 4 KiB RAID 5 write: one data extent and one parity extent.
    assert!(
        records.iter().all(|r| r.len() == 2),
        "{:?}",
        records[0].len()
    );
    assert_eq!(records[2][0].data, vec![3u8; 4096]);
    // Tear the last record: the log ends before it.
    let f = std::fs::OpenOptions::new().write(true).open(&j).unwrap();
    let last_data_at = 4096 + 4 * (40 + 2 * 24 + 2 * 4096) + 40 + 2 * 24 + 10;
    f.write_all_at(&[0x5a], last_data_at as u64).unwrap();
    assert_eq!(Journal::open(&j, 11).unwrap().records().unwrap().len(), 4);
    array.close().unwrap();
    assert_eq!(Journal::open(&j, 11).unwrap().records().unwrap().len(), 0);
}

#[test]
fn assembly_needs_the_array_s_own_journal() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, _) = journaled(dir.path(), 12, "j1");
    let (_, other) = journaled(dir.path(), 13, "j2");
    let e = Array::assemble(&paths).err().unwrap().to_string();
    assert!(
        e.contains("--journal") && e.contains("give its path"),
        "{e}"
    );
    let e = Array::assemble_with(&paths, Some(&other))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("journal of array"), "{e}");
    let e = Array::assemble_with(&paths, Some(&paths[0]))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("not a raidlab write journal"), "{e}");
}

#[test]
fn a_journal_needs_parity_and_room_for_one_request() {
    let dir = tempfile::tempdir().unwrap();
    let paths = member_paths(dir.path(), "m", 4);
    let mut o = CreateOptions::new(Level::Raid0, 16 << 10, Some(DATA_OFFSET_BYTES + (1 << 20)));
    o.journal = Some(dir.path().join("j"));
    for level in [Level::Raid0, Level::Raid1, Level::Raid10] {
        o.level = level;
        let e = Array::create(&paths, &o).err().unwrap().to_string();
        assert!(e.starts_with("--journal: only for parity levels"), "{e}");
    }
    o.level = Level::Raid6;
    o.journal_bytes = Some(1 << 20);
    let e = Array::create(&paths, &o).err().unwrap().to_string();
    assert!(e.starts_with("--journal-size: at least"), "{e}");
}

#[test]
fn a_full_journal_checkpoints_and_keeps_going() {
    let dir = tempfile::tempdir().unwrap();
    let paths = member_paths(dir.path(), "m", 3);
    let j = dir.path().join("j");
    let mut o = CreateOptions::new(Level::Raid5, 16 << 10, Some(DATA_OFFSET_BYTES + (1 << 20)));
    o.uuid = Some(14);
    o.journal = Some(j.clone());
    let min = 4096 + Journal::record_bytes_max(raidlab_engine::array::REQUEST_BYTES_MAX, 3);
    o.journal_bytes = Some(min);
    let array = retry_in_use(|| Array::create(&paths, &o));
    array.open_for_writes().unwrap();
    // 1 MiB writes put 1.5 MiB of data and parity in the journal: ~65 fill it.
    for i in 0..200u64 {
        array
            .write((i % 2) << 20, &vec![(i % 251) as u8; 1 << 20], false)
            .unwrap();
    }
    let left = Journal::open(&j, 14).unwrap().records().unwrap().len();
    assert!(
        left > 0 && left < 100,
        "{left} records: no checkpoint happened"
    );
    let mut back = vec![0u8; 1 << 20];
    array.read(0, &mut back).unwrap();
    assert!(back.iter().all(|&b| b == 198));
    array.read(1 << 20, &mut back).unwrap();
    assert!(back.iter().all(|&b| b == 199));
    assert_eq!(array.scrub(false).unwrap().mismatched_stripes, 0);
}

/// Bytes of `path` allocated on its filesystem.
fn allocated(path: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().blocks() * 512
}

/// Sparse members with a journal on a filesystem that fills up: the journal is
/// allocated whole (at create, and at assembly when an older create left it sparse), so
/// rewrites of member blocks already allocated keep working on the full filesystem.
#[test]
fn with_sparse_members_a_full_filesystem_still_takes_rewrites_through_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount(&dir.path().join("fs"), "150m") else {
        return;
    };
    let paths = member_paths(&fs.0, "m", 3);
    let j = fs.0.join("j");
    let mut o = CreateOptions::new(Level::Raid5, 64 << 10, Some(DATA_OFFSET_BYTES + (4 << 20)));
    o.uuid = Some(15);
    o.sparse = true;
    o.journal = Some(j.clone());
    o.journal_bytes = Some(110 << 20);
    drop(retry_in_use(|| Array::create(&paths, &o)));
    assert!(allocated(&j) >= 110 << 20, "create allocates the journal");
    // As an older create left it: sparse past its header. Assembly allocates it again.
    let f = std::fs::OpenOptions::new().write(true).open(&j).unwrap();
    let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    // SAFETY: fallocate on an open descriptor; no memory is passed.
    let r = unsafe {
        use std::os::fd::AsRawFd;
        libc::fallocate(f.as_raw_fd(), punch, 1 << 20, 109 << 20)
    };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
    assert!(allocated(&j) < 2 << 20);
    let array = retry_in_use(|| Array::assemble_with(&paths, Some(&j)));
    assert!(
        allocated(&j) >= 110 << 20,
        "assembly allocates a sparse journal"
    );
    array.open_for_writes().unwrap();
    array.write(0, &[1u8; 1 << 20], false).unwrap();
    array.flush().unwrap();
    fs.fill();
    for round in 2..6u8 {
        array.write(0, &[round; 1 << 20], false).unwrap();
    }
    array.flush().unwrap();
    let mut back = vec![0u8; 1 << 20];
    array.read(0, &mut back).unwrap();
    assert!(back.iter().all(|&b| b == 5));
    drop(array);
}
