//! The RAID write hole, made to happen: the server is aborted between a stripe's data
//! write and its parity write (`RAIDLAB_ENGINE_CRASH_AFTER_WRITES`), and a member is gone
//! when the array comes back. Under the bitmap policy (no journal, no PPL) the missing
//! member's chunk of that stripe, written and flushed long before, is rebuilt from stale
//! parity and comes back wrong; with `--journal` the half-done write is replayed and
//! every flushed byte is intact (`ppl.rs` runs the same for PPL, RAID 5's default).
//! Skips, saying why, without qemu-io.

use crate::common::{
    engine, engine_command, engine_stdout, fio_randwrite_verify, free_listen_address,
    qemu_io_in_background, qemu_io_outcome, run, serve, spawn_server, tool, wait_listening,
};
use std::path::Path;

const MEMBERS: [&str; 4] = ["m0", "m1", "m2", "m3"];

/// Returns whether the flushed chunk of the missing member reads back intact.
fn crash_then_lose_a_member(d: &Path, journal: bool) -> bool {
    let mut create = vec!["create", "--level", "5", "--chunk", "64K", "--size", "5M"];
    let mut with_journal: Vec<&str> = Vec::new();
    if journal {
        create.extend(["--journal", "j"]);
        with_journal.extend(["--journal", "j"]);
    } else {
        // Named: RAID 5's default (ppl) closes the hole; this is the policy that does not.
        create.extend(["--consistency-policy", "bitmap"]);
    }
    create.extend(MEMBERS);
    engine(d, &create);
    let mut args = with_journal.clone();
    args.extend(MEMBERS);
    // The data set, flushed: 0xab everywhere.
    let s = serve(d, &args);
    let (ok, t) = qemu_io_outcome(&s.uri(), &["write -P 0xab 0 12M", "flush"]);
    assert!(ok, "{t}");
    s.stop();
    // Stripe 0: data chunks on m0, m1, m2, parity on m3 (left-symmetric). A 4 KiB write
    // to m0's chunk is a read-modify-write: m0 then m3. Abort after the first.
    let (listen, _) = free_listen_address();
    let mut server = engine_command(d)
        .env("RAIDLAB_ENGINE_CRASH_AFTER_WRITES", "1")
        .args(["serve", "--listen", &listen])
        .args(&args)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_listening(&listen);
    let (ok, _) = qemu_io_outcome(&format!("nbd://{listen}"), &["write -P 0xcd 0 4k"]);
    assert!(!ok, "the crash point must stop the write");
    assert!(!server.wait().unwrap().success(), "the server aborted");
    // m1 is lost with the crash: the array comes back without it.
    let mut degraded = with_journal.clone();
    degraded.extend(["m0", "m2", "m3"]);
    let s = spawn_server(d, &degraded, false);
    let (intact, t) = qemu_io_outcome(&s.uri(), &["read -P 0xab 64k 64k"]);
    // The rest of the data set is intact either way.
    let (rest, t2) = qemu_io_outcome(&s.uri(), &["read -P 0xab 192k 3M"]);
    assert!(rest, "{t2}");
    if journal {
        // The journaled write was replayed whole.
        let (ok, t3) = qemu_io_outcome(&s.uri(), &["read -P 0xcd 0 4k", "read -P 0xab 4k 60k"]);
        assert!(ok, "{t3}");
        let st = run(engine_command(d).args(["status", "--json", "m0", "m2", "m3"]));
        assert!(st.contains("\"journal_replayed\":1"), "{st}");
    }
    s.stop();
    if !intact {
        eprintln!("journal={journal}: {t}");
    }
    intact
}

#[test]
fn under_the_bitmap_policy_the_write_hole_loses_flushed_data() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    assert!(
        !crash_then_lose_a_member(dir.path(), false),
        "the crash point did not open a write hole: this test would prove nothing"
    );
}

#[test]
fn with_a_journal_a_crash_then_a_lost_member_keeps_every_flushed_byte() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert!(crash_then_lose_a_member(d, true));
    // Put a member back online and scrub: parity agrees everywhere.
    let s = spawn_server(d, &["--journal", "j", "m0", "m2", "m3"], false);
    engine(d, &["replace", "m1", "m4", "m0", "m2", "m3"]);
    let t = engine_stdout(d, &["check", "m0", "m4", "m2", "m3"]);
    assert!(t.contains("mismatched 0"), "{t}");
    s.stop();
}

#[test]
fn a_journaled_raid6_verifies_under_fio() {
    if !tool("fio") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    engine(
        d,
        &[
            "create",
            "--level",
            "6",
            "--chunk",
            "16K",
            "--size",
            "9M",
            "--journal",
            "j",
            "--journal-size",
            "200M",
            "a",
            "b",
            "c",
            "d",
            "e",
        ],
    );
    let s = serve(d, &["--journal", "j", "a", "b", "c", "d", "e"]);
    let t = fio_randwrite_verify(d, &s.uri(), "journaled", "24M", 8);
    assert!(t.contains("err= 0"), "{t}");
    s.stop();
    let t = engine_stdout(d, &["check", "--journal", "j", "a", "b", "c", "d", "e"]);
    assert!(t.contains("mismatched 0"), "{t}");
}

#[test]
fn with_a_journal_kill_9_during_writes_then_a_lost_member_keeps_every_flushed_byte() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    engine(
        d,
        &[
            "create",
            "--level",
            "5",
            "--chunk",
            "64K",
            "--size",
            "9M",
            "--journal",
            "j",
            "m0",
            "m1",
            "m2",
            "m3",
        ],
    );
    let args = ["--journal", "j", "m0", "m1", "m2", "m3"];
    let s = serve(d, &args);
    let (ok, t) = qemu_io_outcome(&s.uri(), &["write -P 0xab 0 24M", "flush"]);
    assert!(ok, "{t}");
    // Heavy writes to the first data chunk of every stripe (192 KiB of data each), so
    // every stripe's parity is in motion when the server dies.
    let stripes = 24 * 1024 / 192;
    let cmds: Vec<String> = (0..16)
        .flat_map(|round| {
            (0..stripes)
                .map(move |st| format!("aio_write -P 0xcd {} 4K", st * 192 * 1024 + round * 4096))
        })
        .collect();
    let mut writer = qemu_io_in_background(&s.uri(), &cmds);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        writer.try_wait().unwrap().is_none(),
        "writes over before the kill"
    );
    s.kill(); // SIGKILL mid-writes
    let _ = writer.kill();
    writer.wait().unwrap();
    // m1 fails straight after the crash: it is not given back.
    let s = spawn_server(d, &["--journal", "j", "m0", "m2", "m3"], false);
    let reads: Vec<String> = (0..stripes)
        .map(|st| format!("read -P 0xab {} 128K", st * 192 * 1024 + 64 * 1024))
        .collect();
    let refs: Vec<&str> = reads.iter().map(String::as_str).collect();
    let (ok, t) = qemu_io_outcome(&s.uri(), &refs);
    assert!(ok, "a flushed chunk came back wrong: {t}");
    s.stop();
}
