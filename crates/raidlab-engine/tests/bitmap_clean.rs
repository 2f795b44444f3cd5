//! The write-intent bitmap is cleared while the array is served, as md's bitmap daemon
//! clears it: a region's bit goes once no write is in progress there and none came for a
//! whole pass, so an unclean stop resyncs only the regions written lately.

use crate::common::{member_paths, retry_in_use};
use raidlab_engine::array::Fault;
use raidlab_engine::format::superblock::{BITMAP_REGION_BYTES, DATA_OFFSET_BYTES};
use raidlab_engine::{Array, CreateOptions};
use raidlab_layout::Level;
use std::sync::Arc;
use std::time::Duration;

/// An array of `n` members with three bitmap regions of member data each.
fn array(dir: &tempfile::TempDir, level: Level, n: usize) -> Array {
    let paths = member_paths(dir.path(), "m", n);
    let o = CreateOptions::new(
        level,
        64 << 10,
        Some(DATA_OFFSET_BYTES + 3 * BITMAP_REGION_BYTES),
    );
    let array = retry_in_use(|| Array::create(&paths, &o));
    array.open_for_writes().unwrap();
    array
}

#[test]
fn a_region_is_cleared_after_a_whole_pass_without_writes_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = array(&dir, Level::Raid5, 4);
    // Member region 0 (array offset 0) and member region 2 (array offset 3 x 130 MiB).
    a.write(0, &[0x5a; 4096], false).unwrap();
    a.write(3 * (130 << 20), &[0x5b; 4096], false).unwrap();
    assert_eq!(a.dirty_regions(), 2);
    assert_eq!(a.clean_bitmap().unwrap(), 0, "both were written this pass");
    a.write(8192, &[0x5c; 4096], false).unwrap();
    assert_eq!(
        a.clean_bitmap().unwrap(),
        1,
        "region 2 had a quiet pass, region 0 did not"
    );
    assert_eq!(a.dirty_regions(), 1);
    assert_eq!(a.clean_bitmap().unwrap(), 1);
    assert_eq!(a.dirty_regions(), 0);
    // Written again, the bit is set again before the data moves.
    a.write(0, &[0x5d; 4096], false).unwrap();
    assert_eq!(a.dirty_regions(), 1);
    let mut back = vec![0; 4096];
    a.read(0, &mut back).unwrap();
    assert_eq!(back, vec![0x5d; 4096]);
}

#[test]
fn a_write_in_progress_keeps_its_region_set() {
    let dir = tempfile::tempdir().unwrap();
    let a = Arc::new(array(&dir, Level::Raid1, 2));
    a.inject_fault(Fault::Latency {
        member: 1,
        delay: Duration::from_millis(1500),
    })
    .unwrap();
    let writer = {
        let a = a.clone();
        std::thread::spawn(move || a.write(0, &[0x77; 4096], false).unwrap())
    };
    // A mirror write has no read phase: its bit is set at once, then member 1 sleeps.
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(a.dirty_regions(), 1);
    assert_eq!(a.clean_bitmap().unwrap(), 0);
    assert_eq!(
        a.clean_bitmap().unwrap(),
        0,
        "a quiet pass, but the write is still in progress"
    );
    assert_eq!(a.dirty_regions(), 1);
    writer.join().unwrap();
    a.clear_faults();
    assert_eq!(a.clean_bitmap().unwrap(), 1);
    assert_eq!(a.dirty_regions(), 0);
}

#[test]
fn a_degraded_array_keeps_its_bits() {
    let dir = tempfile::tempdir().unwrap();
    let a = array(&dir, Level::Raid5, 4);
    a.write(0, &[0x11; 4096], false).unwrap();
    a.fail_member(2).unwrap();
    for _ in 0..3 {
        assert_eq!(a.clean_bitmap().unwrap(), 0);
    }
    assert_eq!(a.dirty_regions(), 1);
}
