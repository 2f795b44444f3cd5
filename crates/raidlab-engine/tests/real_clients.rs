//! Real NBD clients against `raidlab-engine serve`: qemu-io (Debian package
//! `qemu-utils`) and fio's nbd engine (package `fio`, built with libnbd). Each test
//! skips, saying why, when its tool is missing. The story: write a pattern, stop,
//! pull a member out, serve degraded and read the pattern back, put a new member in,
//! check.

use crate::common::{
    engine, engine_stdout, fio_randwrite_verify, qemu_io, qemu_io_in_background, run, serve,
    spawn_server, spawn_server_with, tool,
};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

#[test]
fn qemu_io_pattern_survives_a_pulled_member_and_a_replacement() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    engine(
        d,
        &[
            "create", "--level", "6", "--chunk", "64K", "--size", "16M", "a", "b", "c", "d", "e",
        ],
    );
    let s = serve(d, &["a", "b", "c", "d", "e"]);
    let t = qemu_io(
        &s.uri(),
        &[
            "write -P 0xab 0 1M",
            "write -P 0xcd 3584 8704",
            "read -P 0xab 0 3584",
            "read -P 0xcd 3584 8704",
        ],
    );
    assert!(!t.contains("Pattern verification failed"), "{t}");
    s.stop();
    engine(d, &["fail", "b", "a", "b", "c", "d", "e"]);
    engine(d, &["fail", "d", "a", "c", "d", "e"]);
    let s = serve(d, &["a", "c", "e"]);
    let t = qemu_io(
        &s.uri(),
        &[
            "read -P 0xab 0 3584",
            "read -P 0xcd 3584 8704",
            "read -P 0xab 12288 1036288",
            "write -P 0xef 2M 256K",
        ],
    );
    assert!(!t.contains("Pattern verification failed"), "{t}");
    s.stop();
    engine(d, &["replace", "b", "f", "a", "c", "e"]);
    engine(d, &["replace", "d", "g", "a", "c", "e", "f"]);
    let t = engine_stdout(d, &["check", "a", "f", "c", "g", "e"]);
    assert!(t.contains("mismatched 0"), "{t}");
    let s = serve(d, &["a", "f", "c", "g", "e"]);
    let t = qemu_io(
        &s.uri(),
        &[
            "read -P 0xab 0 3584",
            "read -P 0xcd 3584 8704",
            "read -P 0xef 2M 256K",
        ],
    );
    assert!(!t.contains("Pattern verification failed"), "{t}");
    s.stop();
}

#[test]
fn fio_randwrite_verifies_crc32c_on_a_degraded_raid5() {
    if !tool("fio") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    engine(
        d,
        &[
            "create", "--level", "5", "--chunk", "16K", "--size", "24M", "a", "b", "c", "d",
        ],
    );
    engine(d, &["fail", "c", "a", "b", "c", "d"]);
    let s = serve(d, &["a", "b", "d"]);
    // fio leaves its verify state file in its working directory: keep it in the tempdir.
    let t = fio_randwrite_verify(d, &s.uri(), "verify", "32M", 16);
    assert!(t.contains("err= 0"), "{t}");
    s.stop();
    engine(d, &["replace", "c", "e", "a", "b", "d"]);
    let t = engine_stdout(d, &["check", "a", "b", "e", "d"]);
    assert!(t.contains("mismatched 0"), "{t}");
}

/// Random bytes from a fixed seed (xorshift64*), so a failing run reproduces.
fn random_bytes(seed: u64, len_bytes: usize) -> Vec<u8> {
    assert!(seed != 0, "xorshift needs a non-zero seed");
    let mut x = seed;
    let mut out = Vec::with_capacity(len_bytes + 8);
    while out.len() < len_bytes {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len_bytes);
    out
}

/// The export read back by nbdcopy holds `want` at offset 0 and zeros after it
/// (the members were created sparse, so the unwritten tail reads as zeros).
fn assert_export_holds(path: &Path, want: &[u8]) {
    let got = std::fs::read(path).unwrap();
    assert!(
        got.len() >= want.len(),
        "export {} < {}",
        got.len(),
        want.len()
    );
    if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
        panic!("first differing byte at offset {i}");
    }
    assert!(got[want.len()..].iter().all(|&b| b == 0), "tail not zero");
}

#[test]
fn nbdcopy_round_trips_random_bytes_through_a_raid5_healthy_and_degraded() {
    if !tool("nbdcopy") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    engine(
        d,
        &[
            "create", "--level", "5", "--chunk", "64K", "--size", "16M", "a", "b", "c", "d",
        ],
    );
    let seed = 0x5eed_0000_0000_0001_u64;
    eprintln!("seed {seed:#x}");
    // 20 MiB + 12 KiB: spans many stripes and ends inside a chunk.
    let want = random_bytes(seed, 20 * 1024 * 1024 + 12 * 1024);
    std::fs::write(d.join("in.bin"), &want).unwrap();
    let s = serve(d, &["a", "b", "c", "d"]);
    run(Command::new("nbdcopy")
        .current_dir(d)
        .args(["in.bin", &s.uri()]));
    run(Command::new("nbdcopy")
        .current_dir(d)
        .args([&s.uri(), "out.bin"]));
    assert_export_holds(&d.join("out.bin"), &want);
    s.stop();
    engine(d, &["fail", "b", "a", "b", "c", "d"]);
    let s = serve(d, &["a", "c", "d"]);
    std::fs::remove_file(d.join("out.bin")).unwrap();
    run(Command::new("nbdcopy")
        .current_dir(d)
        .args([&s.uri(), "out.bin"]));
    assert_export_holds(&d.join("out.bin"), &want);
    s.stop();
}

/// A RAID 5 of a, b, c, d with 159 MiB of data per member: bitmap regions 0..64M,
/// 64M..128M and 128M..159M of each member. Returns its members.
fn create_three_region_raid5(d: &Path) -> [&'static str; 4] {
    // The bitmap policy named: these tests are about its regions (RAID 5's default is ppl).
    engine(
        d,
        &[
            "create",
            "--level",
            "5",
            "--chunk",
            "64K",
            "--size",
            "160M",
            "--consistency-policy",
            "bitmap",
            "a",
            "b",
            "c",
            "d",
        ],
    );
    ["a", "b", "c", "d"]
}

#[test]
fn after_kill_9_serve_resyncs_only_dirty_regions_and_flushed_writes_survive() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let members = create_three_region_raid5(d);
    let s = serve(d, &members);
    qemu_io(&s.uri(), &["write -P 0xab 0 4M", "flush"]);
    // Writes in flight when the server dies: array 8M.. is member 8M/3.. (region 0).
    let cmds: Vec<String> = (0..200)
        .map(|i| format!("write -P 0xcd {} 64K", 8 * 1024 * 1024 + i * 65536))
        .collect();
    let mut writer = qemu_io_in_background(&s.uri(), &cmds);
    std::thread::sleep(Duration::from_millis(150));
    s.kill(); // SIGKILL: no flush, no clean superblock, no bitmap clear
    let _ = writer.kill();
    writer.wait().unwrap();

    let t = engine_stdout(d, &["status", "a", "b", "c", "d"]);
    assert!(t.contains("dirty"), "{t}");
    assert!(t.contains("dirty bitmap regions 1"), "{t}");
    // A torn stripe in the dirty region (a bit of b's block at member offset 50 MiB,
    // never written through NBD): the resync must make its parity agree again.
    engine(d, &["inject", "b", &(50 * 1024 * 1024).to_string()]);

    let s = spawn_server(d, &members, true);
    let t = qemu_io(&s.uri(), &["read -P 0xab 0 4M"]);
    assert!(!t.contains("Pattern verification failed"), "{t}");
    let err = s.stop_with_stderr();
    assert!(err.contains("resynced 1 dirty bitmap regions"), "{err}");
    let t = engine_stdout(d, &["check", "a", "b", "c", "d"]);
    assert!(t.contains("mismatched 0"), "{t}");
    let t = engine_stdout(d, &["status", "a", "b", "c", "d"]);
    assert!(t.contains("dirty bitmap regions 0"), "{t}");
}

/// The status line that counts dirty bitmap regions, asked of the server or the files.
fn dirty_regions(d: &Path, members: &[&str]) -> String {
    let mut args = vec!["status"];
    args.extend(members);
    let t = engine_stdout(d, &args);
    t.lines()
        .find(|l| l.trim_start().starts_with("dirty bitmap regions"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[test]
fn a_served_array_clears_quiet_regions_so_kill_9_resyncs_only_the_latest() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Array bytes 0.. are member region 0, 200M.. (member 66M..) region 1.
    let members = create_three_region_raid5(d);
    let s = spawn_server_with(d, &["--bitmap-delay", "1"], &members, false);
    qemu_io(&s.uri(), &["write -P 0xab 0 4M", "write -P 0xac 400M 4M"]);
    assert!(
        dirty_regions(d, &members).ends_with(" 2"),
        "{}",
        dirty_regions(d, &members)
    );
    let t0 = std::time::Instant::now();
    while !dirty_regions(d, &members).ends_with(" 0") {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{}",
            dirty_regions(d, &members)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // A write, then kill -9 well within a pass: its region alone is left set.
    qemu_io(&s.uri(), &["write -P 0xad 200M 4M"]);
    s.kill();
    assert_eq!(dirty_regions(d, &members), "dirty bitmap regions 1");

    let s = spawn_server_with(d, &[], &members, true);
    for (pattern, at) in [("0xab", "0"), ("0xad", "200M"), ("0xac", "400M")] {
        let t = qemu_io(&s.uri(), &[&format!("read -P {pattern} {at} 4M")]);
        assert!(!t.contains("Pattern verification failed"), "{t}");
    }
    let err = s.stop_with_stderr();
    assert!(err.contains("resynced 1 dirty bitmap regions"), "{err}");
    let t = engine_stdout(d, &["check", "a", "b", "c", "d"]);
    assert!(t.contains("mismatched 0"), "{t}");
}
