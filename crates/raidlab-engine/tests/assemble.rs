//! Creating and assembling from superblocks: what is refused (naming the member) and
//! what assembles degraded.

use crate::common::{member_paths, retry_in_use};
use raidlab_engine::format::superblock::{Superblock, DATA_OFFSET_BYTES};
use raidlab_engine::{Array, CreateOptions, MemberState};
use raidlab_layout::Level;
use std::path::{Path, PathBuf};

fn create(paths: &[PathBuf], level: Level, uuid: u128) -> Array {
    let mut o = CreateOptions::new(level, 4096, Some(DATA_OFFSET_BYTES + (64 << 10)));
    o.uuid = Some(uuid);
    retry_in_use(|| Array::create(paths, &o))
}

fn err(paths: &[PathBuf]) -> String {
    match Array::assemble(paths) {
        Ok(_) => panic!("assembled"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_member_of_another_array_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let a = member_paths(dir.path(), "a", 3);
    let b = member_paths(dir.path(), "b", 3);
    create(&a, Level::Raid5, 1);
    create(&b, Level::Raid5, 2);
    let msg = err(&[a[0].clone(), a[1].clone(), b[2].clone()]);
    assert!(msg.contains("belongs to array"), "{msg}");
    assert!(
        msg.contains("b2") || msg.contains("a0") || msg.contains("a1"),
        "{msg}"
    );
}

#[test]
fn the_same_file_twice_and_two_files_of_one_role_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = member_paths(dir.path(), "a", 3);
    create(&a, Level::Raid5, 1);
    let msg = err(&[a[0].clone(), a[1].clone(), a[1].clone()]);
    assert!(msg.contains("a1") && msg.contains("given twice"), "{msg}");
    let copy = dir.path().join("copy-of-a1");
    std::fs::copy(&a[1], &copy).unwrap();
    let msg = err(&[a[0].clone(), a[1].clone(), copy]);
    assert!(
        msg.contains("duplicate member") && msg.contains("role 1"),
        "{msg}"
    );
}

#[test]
fn more_members_than_the_array_has_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = member_paths(dir.path(), "a", 3);
    create(&a, Level::Raid5, 1);
    let four = member_paths(dir.path(), "c", 4);
    create(&four, Level::Raid5, 1);
    // Same UUID on purpose: role 3 does not exist in a 3-member array.
    let msg = err(&[a[0].clone(), a[1].clone(), a[2].clone(), four[3].clone()]);
    assert!(
        msg.contains("3 members") && msg.contains("4 members"),
        "{msg}"
    );
}

#[test]
fn a_corrupt_superblock_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let a = member_paths(dir.path(), "a", 3);
    create(&a, Level::Raid5, 1);
    let mut bytes = std::fs::read(&a[2]).unwrap();
    bytes[81] ^= 1;
    std::fs::write(&a[2], &bytes).unwrap();
    let msg = err(&a);
    assert!(msg.contains("a2") && msg.contains("checksum"), "{msg}");
    let junk = dir.path().join("junk");
    std::fs::write(&junk, vec![0u8; 8192]).unwrap();
    let msg = err(&[a[0].clone(), junk]);
    assert!(
        msg.contains("junk") && msg.contains("no raidlab superblock"),
        "{msg}"
    );
}

#[test]
fn a_stale_member_is_left_out_and_the_array_runs_degraded() {
    let dir = tempfile::tempdir().unwrap();
    let a = member_paths(dir.path(), "a", 4);
    let array = create(&a, Level::Raid5, 1);
    array.write(0, &[7u8; 8192], false).unwrap();
    array.fail_member(2).unwrap();
    array.write(0, &[8u8; 8192], false).unwrap();
    drop(array);
    assert!(read_superblock(&a[2]).events < read_superblock(&a[0]).events);
    let array = retry_in_use(|| Array::assemble(&a));
    let st = array.status();
    assert!(matches!(st.members[2].1, MemberState::Stale { .. }));
    assert_eq!(array.failed().iter().collect::<Vec<_>>(), vec![2]);
    let mut back = vec![0u8; 8192];
    array.read(0, &mut back).unwrap();
    assert_eq!(
        back,
        vec![8u8; 8192],
        "the stale member's old data is not used"
    );
}

#[test]
fn missing_members_assemble_degraded_within_tolerance_and_are_refused_beyond() {
    let dir = tempfile::tempdir().unwrap();
    let a = member_paths(dir.path(), "a", 4);
    create(&a, Level::Raid6, 1)
        .write(4096, &[3u8; 4096], true)
        .unwrap();
    let two = retry_in_use(|| Array::assemble(&a[1..3]));
    assert_eq!(two.failed().len(), 2);
    let mut back = vec![0u8; 4096];
    two.read(4096, &mut back).unwrap();
    assert_eq!(back, vec![3u8; 4096]);
    drop(two);
    let msg = err(&a[..1]);
    assert!(
        msg.contains("cannot assemble") && msg.contains("RAID 6 survives 2"),
        "{msg}"
    );
}

#[test]
fn create_refuses_existing_members_without_force_and_bad_geometry_before_touching_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = member_paths(dir.path(), "a", 3);
    create(&a, Level::Raid5, 1);
    let o = CreateOptions::new(Level::Raid5, 4096, Some(DATA_OFFSET_BYTES + (64 << 10)));
    let msg = Array::create(&a, &o).err().unwrap().to_string();
    assert!(msg.contains("a0") && msg.contains("--force"), "{msg}");
    let fresh = member_paths(dir.path(), "n", 2);
    let msg = Array::create(&fresh, &o).err().unwrap().to_string();
    assert!(msg.contains("MEMBER: "), "{msg}");
    assert!(!fresh[0].exists(), "no file created for a refused geometry");
}

#[test]
fn create_over_old_data_resyncs_so_a_degraded_read_is_right() {
    let dir = tempfile::tempdir().unwrap();
    let a = member_paths(dir.path(), "a", 3);
    for (i, p) in a.iter().enumerate() {
        std::fs::write(
            p,
            vec![i as u8 * 40 + 1; (DATA_OFFSET_BYTES + (64 << 10)) as usize],
        )
        .unwrap();
    }
    let mut o = CreateOptions::new(Level::Raid5, 4096, None);
    o.uuid = Some(9);
    let array = retry_in_use(|| Array::create(&a, &o));
    assert_eq!(array.scrub(false).unwrap().mismatched_stripes, 0);
    let mut healthy = vec![0u8; 65536];
    array.read(0, &mut healthy).unwrap();
    array.fail_member(0).unwrap();
    let mut degraded = vec![0u8; 65536];
    array.read(0, &mut degraded).unwrap();
    assert_eq!(healthy, degraded);
}

/// `repair` fixes what it can tell is bad (RAID 6 from P and Q, RAID 1's four copies by
/// majority); RAID 5 and two-copy RAID 10 report the stripe unresolved and keep it.
#[test]
fn check_counts_an_injected_corruption_and_repair_fixes_it() {
    let dir = tempfile::tempdir().unwrap();
    for level in [Level::Raid1, Level::Raid5, Level::Raid6, Level::Raid10] {
        let resolvable = matches!(level, Level::Raid1 | Level::Raid6);
        let a = member_paths(dir.path(), &format!("{level:?}"), 4);
        let array = create(&a, level, 3);
        array.write(0, &vec![0x5a; 65536], false).unwrap();
        drop(array);
        raidlab_engine::array::inject(&a[1], 4096 + 17, 0xff).unwrap();
        let array = retry_in_use(|| Array::assemble(&a));
        let r = array.scrub(false).unwrap();
        assert_eq!(r.mismatched_stripes, 1, "{level:?}");
        let r = array.scrub(true).unwrap();
        assert_eq!(r.repaired_stripes, u64::from(resolvable), "{level:?}");
        assert_eq!(r.unresolved_stripes, u64::from(!resolvable), "{level:?}");
        assert_eq!(
            array.scrub(false).unwrap().mismatched_stripes,
            u64::from(!resolvable)
        );
    }
}

#[test]
fn a_member_that_disappears_mid_run_is_failed_and_io_continues() {
    let dir = tempfile::tempdir().unwrap();
    let a = member_paths(dir.path(), "a", 3);
    let array = create(&a, Level::Raid5, 1);
    array.write(0, &[1u8; 65536], false).unwrap();
    // Truncate a member under the running array: its reads now fail (short read).
    std::fs::OpenOptions::new()
        .write(true)
        .open(&a[1])
        .unwrap()
        .set_len(4096)
        .unwrap();
    let mut back = vec![0u8; 65536];
    array.read(0, &mut back).unwrap();
    assert_eq!(back, vec![1u8; 65536]);
    assert!(array.failed().contains(1));
    array.write(8192, &[2u8; 4096], false).unwrap();
    array.read(8192, &mut back[..4096]).unwrap();
    assert_eq!(&back[..4096], &[2u8; 4096]);
}

/// A member whose superblock is `events` behind the others (as a crash between two
/// members' superblock writes leaves it).
fn read_superblock(path: &Path) -> Superblock {
    let block: [u8; 4096] = std::fs::read(path).unwrap()[..4096].try_into().unwrap();
    Superblock::decode(&block).unwrap()
}

fn lag_superblock(path: &Path, events: u64) {
    let mut sb = read_superblock(path);
    sb.events -= events;
    let mut bytes = std::fs::read(path).unwrap();
    bytes[..4096].copy_from_slice(&sb.encode());
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_member_one_superblock_write_behind_is_current_two_behind_is_stale() {
    // A state change writes the members' superblocks one after another; a crash in
    // between leaves some one event behind. They missed only that superblock, so the
    // array assembles whole (mdadm and the kernel allow the same margin of one).
    let dir = tempfile::tempdir().unwrap();
    let a = member_paths(dir.path(), "a", 3);
    let array = create(&a, Level::Raid5, 1);
    array.write(0, &[5u8; 8192], true).unwrap();
    array.close().unwrap();
    drop(array);
    for p in &a[1..] {
        lag_superblock(p, 1);
    }
    let array = retry_in_use(|| Array::assemble(&a));
    assert!(array.failed().is_empty(), "{:?}", array.status().members);
    let mut back = vec![0u8; 8192];
    array.read(0, &mut back).unwrap();
    assert_eq!(back, vec![5u8; 8192]);
    array.close().unwrap();
    drop(array);
    // Two events behind is a member that missed a real change: stale, left out.
    lag_superblock(&a[2], 2);
    let array = retry_in_use(|| Array::assemble(&a));
    assert!(matches!(
        array.status().members[2].1,
        MemberState::Stale { .. }
    ));
    assert_eq!(array.failed().iter().collect::<Vec<_>>(), vec![2]);
}
