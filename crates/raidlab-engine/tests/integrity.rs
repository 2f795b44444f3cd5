//! Per-block checksums (`create --integrity crc32c`): a flipped byte fails its block's
//! checksum, so a read rebuilds the block from the other members and `repair` keeps
//! the good copy (RAID 1, 10) or rebuilds the bad chunk from parity (RAID 5), where
//! without checksums it can only report the stripe unresolved (see `repair.rs`). After
//! a crash between a block's write and its checksum's, the resync sums it again.

use crate::common::{
    engine, engine_command, engine_json, engine_output, free_listen_address, member_paths,
    qemu_io_outcome, retry_in_use, spawn_server, tool, wait_listening,
};
use raidlab_engine::format::superblock::{Integrity, DATA_OFFSET_BYTES};
use raidlab_engine::{Array, CreateOptions};
use raidlab_layout::{Layout, Level, MemberExtent};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const CHUNK: u64 = 16 << 10;

fn pattern(offset: u64, len: u64) -> Vec<u8> {
    (offset..offset + len)
        .map(|o| ((o / 512) as u8).wrapping_mul(29) ^ (o as u8).rotate_left(2))
        .collect()
}

/// An array with checksums (`integrity`) written whole with [`pattern`], stopped.
fn written(dir: &Path, level: Level, members: usize, integrity: Integrity) -> (Vec<PathBuf>, u64) {
    let paths = member_paths(dir, "m", members);
    let mut o = CreateOptions::new(level, CHUNK, Some(DATA_OFFSET_BYTES + (512 << 10)));
    o.integrity = integrity;
    if level == Level::Raid10 {
        o.layout = Some(Layout::Near);
        o.copies = Some(2);
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
    raidlab_engine::array::inject(&paths[m as usize], at, 0x5a).unwrap();
}

/// `len` bytes of member `m`'s data at `at`, as on disk.
fn raw(paths: &[PathBuf], e: MemberExtent) -> Vec<u8> {
    let f = std::fs::File::open(&paths[e.member as usize]).unwrap();
    let mut b = vec![0u8; e.len_bytes as usize];
    f.read_exact_at(&mut b, DATA_OFFSET_BYTES + e.offset_bytes)
        .unwrap();
    b
}

fn data_is_whole(array: &Array, cap: u64) -> bool {
    let mut buf = vec![0u8; cap as usize];
    array.read(0, &mut buf).unwrap();
    buf == pattern(0, cap)
}

/// The first copy of a two-copy mirror flipped: `repair` rewrites it from the copy
/// whose checksum matches. Returns what the repair reported unresolved.
fn repair_two_copies(level: Level, members: usize, integrity: Integrity) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let (paths, cap) = written(dir.path(), level, members, integrity);
    let logical = 5 * CHUNK + 77;
    let loc = retry_in_use(|| Array::assemble(&paths))
        .geometry()
        .locate(logical);
    flip(&paths, loc.member, loc.offset_bytes);
    let array = retry_in_use(|| Array::assemble(&paths));
    let r = array.scrub(true).unwrap();
    if integrity == Integrity::None {
        return r.unresolved_stripes;
    }
    assert_eq!(r.unresolved_stripes, 0, "{level}: {r:?}");
    assert_eq!(r.read_errors_corrected, 1, "{level}: {r:?}");
    let mut expect = vec![0; members];
    expect[loc.member as usize] = 1;
    assert_eq!(r.checksum_mismatches, expect, "{level}: {r:?}");
    drop(array);
    // The bytes on the flipped member are the written ones again.
    let block = MemberExtent {
        member: loc.member,
        offset_bytes: loc.offset_bytes - 77,
        len_bytes: 4096,
    };
    assert_eq!(raw(&paths, block), pattern(logical - 77, 4096), "{level}");
    let array = retry_in_use(|| Array::assemble(&paths));
    let again = array.scrub(false).unwrap();
    assert_eq!(again.mismatched_stripes, 0, "{level}: {again:?}");
    assert_eq!(again.checksum_mismatches, vec![0; members], "{level}");
    assert!(data_is_whole(&array, cap), "{level}");
    r.unresolved_stripes
}

#[test]
fn two_copies_repair_keeps_the_copy_whose_checksum_matches() {
    for (level, members) in [(Level::Raid1, 2), (Level::Raid10, 4)] {
        assert_eq!(repair_two_copies(level, members, Integrity::Crc32c), 0);
        // Without checksums nothing tells the copies apart (the test above is not
        // vacuous: the same flip is unresolved there).
        assert_eq!(repair_two_copies(level, members, Integrity::None), 1);
    }
}

#[test]
fn raid5_repair_rebuilds_the_chunk_whose_checksum_fails_not_parity_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, cap) = written(dir.path(), Level::Raid5, 4, Integrity::Crc32c);
    let (data, parity) = {
        let array = retry_in_use(|| Array::assemble(&paths));
        let g = array.geometry();
        let d = g.locate(7 * CHUNK);
        let p = g.parity_of(7 * CHUNK + 9 * CHUNK).p.unwrap();
        (d, p)
    };
    let chunk = |m: u32, off: u64| MemberExtent {
        member: m,
        offset_bytes: off - off % CHUNK,
        len_bytes: CHUNK,
    };
    let (data_chunk, parity_chunk) = (
        chunk(data.member, data.offset_bytes),
        chunk(parity.member, parity.offset_bytes),
    );
    let (data_before, parity_before) = (raw(&paths, data_chunk), raw(&paths, parity_chunk));
    // The parity of the flipped data chunk's stripe: it must not follow the flip.
    let array = retry_in_use(|| Array::assemble(&paths));
    let own_parity = array.geometry().parity_of(7 * CHUNK).p.unwrap();
    drop(array);
    let own_parity = chunk(own_parity.member, own_parity.offset_bytes);
    let own_before = raw(&paths, own_parity);
    flip(&paths, data.member, data.offset_bytes + 1000);
    flip(&paths, parity.member, parity.offset_bytes + 5000);
    let array = retry_in_use(|| Array::assemble(&paths));
    let r = array.scrub(true).unwrap();
    assert_eq!(
        (r.unresolved_stripes, r.read_errors_corrected),
        (0, 2),
        "{r:?}"
    );
    assert_eq!(r.checksum_mismatches.iter().sum::<u64>(), 2, "{r:?}");
    drop(array);
    assert_eq!(
        raw(&paths, data_chunk),
        data_before,
        "data rebuilt from parity"
    );
    assert_eq!(raw(&paths, own_parity), own_before, "parity kept");
    assert_eq!(
        raw(&paths, parity_chunk),
        parity_before,
        "bad parity recomputed"
    );
    let array = retry_in_use(|| Array::assemble(&paths));
    assert!(data_is_whole(&array, cap));
    let again = array.scrub(false).unwrap();
    assert_eq!(again.mismatched_stripes, 0, "{again:?}");
    assert_eq!(again.checksum_mismatches, vec![0; 4]);
}

#[test]
fn a_read_of_a_flipped_block_returns_the_written_bytes_and_counts_it() {
    for (level, members) in [(Level::Raid5, 4), (Level::Raid1, 2), (Level::Raid6, 5)] {
        let dir = tempfile::tempdir().unwrap();
        let (paths, _) = written(dir.path(), level, members, Integrity::Crc32c);
        let logical = 3 * CHUNK + 4096;
        let loc = retry_in_use(|| Array::assemble(&paths))
            .geometry()
            .locate(logical);
        // Both blocks of the read: each is counted.
        flip(&paths, loc.member, loc.offset_bytes + 3);
        flip(&paths, loc.member, loc.offset_bytes + 4096 + 7);
        let array = retry_in_use(|| Array::assemble(&paths));
        // Twice: mirrors take turns between copies.
        let mut buf = vec![0u8; 8192];
        for _ in 0..2 {
            array.read(logical, &mut buf).unwrap();
            assert_eq!(buf, pattern(logical, 8192), "{level}");
        }
        let st = array.status();
        assert_eq!(st.checksum_mismatches[loc.member as usize], 2, "{level}");
        assert_eq!(st.read_errors_corrected[loc.member as usize], 1, "{level}");
        assert_eq!(st.integrity, Integrity::Crc32c);
        assert!(
            st.bad_blocks.iter().all(Vec::is_empty),
            "rewritten, not listed"
        );
        // Rewritten on the member: read again, it matches at once.
        array.read(logical, &mut buf).unwrap();
        assert_eq!(array.status().checksum_mismatches.iter().sum::<u64>(), 2);
    }
}

#[test]
fn without_redundancy_a_flipped_block_fails_the_read_instead_of_returning_it() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, cap) = written(dir.path(), Level::Raid0, 2, Integrity::Crc32c);
    let loc = retry_in_use(|| Array::assemble(&paths))
        .geometry()
        .locate(0);
    flip(&paths, loc.member, loc.offset_bytes + 10);
    let array = retry_in_use(|| Array::assemble(&paths));
    let mut buf = vec![0u8; 4096];
    let err = array.read(0, &mut buf).unwrap_err().to_string();
    assert!(err.contains("unreadable"), "{err}");
    // The blocks around it still read.
    let mut rest = vec![0u8; (cap - 4096) as usize];
    array.read(4096, &mut rest).unwrap();
    assert_eq!(rest, pattern(4096, cap - 4096));
}

#[test]
fn old_arrays_have_no_checksums_and_keep_their_data_size() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, plain_cap) = written(dir.path(), Level::Raid1, 2, Integrity::None);
    let array = retry_in_use(|| Array::assemble(&plain));
    assert_eq!(array.status().integrity, Integrity::None);
    drop(array);
    let dir2 = tempfile::tempdir().unwrap();
    let (_, cap) = written(dir2.path(), Level::Raid1, 2, Integrity::Crc32c);
    // 512 KiB of data per member: one 4 KiB block of checksums, and the data rounded
    // down to whole chunks.
    assert!(
        cap < plain_cap && cap >= plain_cap - CHUNK,
        "{cap} {plain_cap}"
    );
}

const MEMBERS: [&str; 3] = ["m0", "m1", "m2"];

#[test]
fn the_create_flag_names_its_algorithms_and_status_says_integrity_is_on() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = ["create", "--level", "5", "--size", "4M"];
    for (extra, says) in [
        (&["--integrity", "md5"][..], "none, crc32c"),
        (
            &["--integrity", "crc32c", "--consistency-policy", "ppl"],
            "bitmap or resync",
        ),
        (&["--integrity", "crc32c", "--chunk", "2K"], "stripe unit"),
    ] {
        let mut args = base.to_vec();
        args.extend(extra);
        args.extend(MEMBERS);
        let o = engine_output(d, &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("--integrity") && err.contains(says), "{err}");
        assert!(!d.join("m0").exists(), "{args:?} touched no file");
    }
    let mut args = base.to_vec();
    args.extend(["--integrity", "crc32c"]);
    args.extend(MEMBERS);
    let st = engine_json(d, &args);
    assert_eq!(st["integrity"], "crc32c", "{st}");
    // RAID 5's default ppl gives way to the bitmap, whose resync sums blocks again.
    assert_eq!(st["consistency_policy"], "bitmap", "{st}");
    let text =
        String::from_utf8_lossy(&engine(d, &["status", "m0", "m1", "m2"]).stdout).to_string();
    assert!(text.contains("integrity crc32c"), "{text}");
}

/// A served read of a flipped block returns the written bytes; a crash between a
/// block's write and its checksum's (the crash point) leaves no false mismatch after
/// the resync, and every flushed block intact.
#[test]
fn served_reads_are_checked_and_a_crash_between_block_and_checksum_is_no_corruption() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut args = vec![
        "create",
        "--level",
        "1",
        "--size",
        "6M",
        "--integrity",
        "crc32c",
    ];
    args.extend(&MEMBERS[..2]);
    engine(d, &args);
    let members = &MEMBERS[..2];
    let s = spawn_server(d, members, false);
    let (ok, t) = qemu_io_outcome(&s.uri(), &["write -P 0xab 0 4M", "flush"]);
    assert!(ok, "{t}");
    s.stop();
    // Bit rot on the first copy: served reads give the written bytes.
    engine(d, &["inject", "m0", "12345"]);
    let s = spawn_server(d, members, false);
    // Four times: mirrors take turns between copies.
    let (ok, t) = qemu_io_outcome(&s.uri(), &["read -P 0xab 0 64k"; 4]);
    assert!(ok, "{t}");
    let st = engine_json(d, &["status", "m0", "m1"]);
    assert_eq!(st["members"][0]["checksum_mismatches"], 1, "{st}");
    s.stop();
    // The crash point stops the server after m0's data write, before its checksum.
    let (listen, _) = free_listen_address();
    let mut server = engine_command(d)
        .env("RAIDLAB_ENGINE_CRASH_AFTER_WRITES", "1")
        .args(["serve", "--listen", &listen])
        .args(members)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_listening(&listen);
    let (ok, _) = qemu_io_outcome(&format!("nbd://{listen}"), &["write -P 0xcd 1M 4k"]);
    assert!(!ok, "the crash point must stop the write");
    assert!(!server.wait().unwrap().success(), "the server aborted");
    let s = spawn_server(d, members, true);
    let (ok, t) = qemu_io_outcome(&s.uri(), &["read -P 0xab 0 1M", "read -P 0xab 1028k 2M"]);
    assert!(ok, "a flushed block came back wrong: {t}");
    // The torn block reads as one copy or the other (both copies: four reads), and no
    // read found a block that fails its checksum.
    let (ok, t) = qemu_io_outcome(&s.uri(), &["read 1M 4k"; 4]);
    assert!(ok, "{t}");
    let st = engine_json(d, &["status", "m0", "m1"]);
    for m in 0..2 {
        assert_eq!(st["members"][m]["checksum_mismatches"], 0, "{st}");
    }
    let said = s.stop_with_stderr();
    assert!(said.contains("resynced 1 dirty bitmap regions"), "{said}");
    let mut check = vec!["check"];
    check.extend(members);
    let r = engine_json(d, &check);
    assert_eq!(r["checksum_mismatches"], serde_json::json!([0, 0]), "{r}");
    assert_eq!(r["mismatched_stripes"], 0, "{r}");
}

/// A member rebuilt onto a new file gets the checksums of its blocks (RAID 5 and
/// RAID 1), and a write of part of a block (one sector) keeps its block's checksum
/// right.
#[test]
fn a_rebuilt_member_and_a_sector_write_carry_their_checksums() {
    for (level, members) in [(Level::Raid5, 4), (Level::Raid1, 2)] {
        let dir = tempfile::tempdir().unwrap();
        let (paths, cap) = written(dir.path(), level, members, Integrity::Crc32c);
        let array = retry_in_use(|| Array::assemble(&paths));
        array.open_for_writes().unwrap();
        array.write(8192 + 512, &[0x77; 512], false).unwrap();
        array.fail_member(1).unwrap();
        let new = dir.path().join("new");
        array.rebuild(1, &new, None, |_, _| {}).unwrap();
        let mut expect = pattern(0, cap);
        expect[8192 + 512..8192 + 1024].fill(0x77);
        let mut buf = vec![0u8; cap as usize];
        array.read(0, &mut buf).unwrap();
        assert!(buf == expect, "{level}");
        let r = array.scrub(false).unwrap();
        assert_eq!(r.mismatched_stripes, 0, "{level}: {r:?}");
        assert_eq!(r.checksum_mismatches, vec![0; members], "{level}: {r:?}");
        array.close().unwrap();
    }
}

/// kill -9 while writes are in flight: the next server resyncs the dirty regions (and
/// sums their blocks again), every flushed block reads back, and no read or `check`
/// finds a block that fails its checksum.
#[test]
fn kill_9_during_writes_leaves_no_false_mismatch_and_loses_no_flushed_block() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let members = ["m0", "m1", "m2", "m3"];
    let mut args = vec![
        "create",
        "--level",
        "5",
        "--size",
        "3M",
        "--integrity",
        "crc32c",
    ];
    args.extend(members);
    engine(d, &args);
    let s = spawn_server(d, &members, false);
    let (ok, t) = qemu_io_outcome(&s.uri(), &["write -P 0xab 0 5M", "flush"]);
    assert!(ok, "{t}");
    // A clean stop clears the bitmap: a region it marks from now on is a write begun.
    s.stop();
    let s = spawn_server(d, &members, false);
    // 4 KiB writes to the first block of every 64 KiB, over and over; the rest of
    // each 64 KiB was flushed above and is not written again.
    let cmds: Vec<String> = (0..64)
        .flat_map(|round| (0..80).map(move |i| format!("aio_write -P {round} {} 4k", i * 65536)))
        .collect();
    let mut writer = crate::common::qemu_io_in_background(&s.uri(), &cmds);
    // Kill once writes are under way: the bitmap marks their regions.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut st_args = vec!["status"];
    st_args.extend(members);
    while engine_json(d, &st_args)["dirty_regions"] == 0 {
        assert!(std::time::Instant::now() < deadline, "no write began");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    s.kill();
    let _ = writer.kill();
    writer.wait().unwrap();
    let s = spawn_server(d, &members, true);
    let reads: Vec<String> = (0..80)
        .map(|i| format!("read -P 0xab {} 60k", i * 65536 + 4096))
        .collect();
    let refs: Vec<&str> = reads.iter().map(String::as_str).collect();
    let (ok, t) = qemu_io_outcome(&s.uri(), &refs);
    assert!(ok, "a flushed block came back wrong: {t}");
    let (ok, t) = qemu_io_outcome(&s.uri(), &["read 0 5M"]);
    assert!(ok, "{t}");
    let st = engine_json(d, &st_args);
    for m in 0..4 {
        assert_eq!(st["members"][m]["checksum_mismatches"], 0, "{st}");
    }
    let said = s.stop_with_stderr();
    assert!(said.contains("unclean stop: resynced"), "{said}");
    let mut check = vec!["check"];
    check.extend(members);
    let r = engine_json(d, &check);
    assert_eq!(
        r["checksum_mismatches"],
        serde_json::json!([0, 0, 0, 0]),
        "{r}"
    );
    assert_eq!(r["mismatched_stripes"], 0, "{r}");
}
