//! Faults injected into a served array: a read error and a write error each take their
//! member out and the data stays whole (RAID 6 survives both); a bad sector is rewritten
//! from the other members and its member stays, up to md's 20 corrections; latency
//! slows the member's I/O; faults need a server, and bad fault flags are one error line.

use crate::common::{
    engine, engine_stdout, qemu_io, qemu_io_in_background, refused, serve, status, tool,
};
use std::time::Instant;

#[test]
fn read_and_write_errors_fail_their_members_and_keep_the_data() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = ["a", "b", "c", "d", "e"];
    let mut create = vec!["create", "--level", "6", "--chunk", "16K", "--size", "5M"];
    create.extend(m);
    engine(d, &create);
    let s = serve(d, &m);
    let t = qemu_io(&s.uri(), &["write -P 0x3c 0 12M", "flush"]);
    assert!(!t.contains("failed"), "{t}");
    engine(d, &["inject", "b", "--read-error", "0+1M"]);
    let st = status(d, &m);
    assert_eq!(st["faults"][0]["kind"], "read-error", "{st}");
    let t = qemu_io(&s.uri(), &["read -P 0x3c 0 12M"]);
    assert!(!t.contains("Pattern verification failed"), "{t}");
    let st = status(d, &m);
    assert_eq!(
        st["failed"],
        serde_json::json!([1]),
        "the read error failed b: {st}"
    );
    engine(d, &["inject", "d", "--write-error", "0+4M"]);
    let t = qemu_io(
        &s.uri(),
        &[
            "write -P 0x7e 0 1M",
            "read -P 0x7e 0 1M",
            "read -P 0x3c 1M 11M",
        ],
    );
    assert!(!t.contains("failed"), "{t}");
    let st = status(d, &m);
    assert_eq!(st["failed"], serde_json::json!([1, 3]), "{st}");
    // Clear, bring both back online, scrub.
    engine(d, &["inject", "a", "--clear"]);
    engine(d, &["replace", "b", "f", "a", "b", "c", "d", "e"]);
    engine(d, &["replace", "d", "g", "a", "f", "c", "d", "e"]);
    let t = engine_stdout(d, &["check", "a", "f", "c", "g", "e"]);
    assert!(t.contains("mismatched 0"), "{t}");
    s.stop();
}

#[test]
fn latency_slows_the_member_and_faults_need_a_server() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    engine(d, &["create", "--level", "1", "--size", "3M", "a", "b"]);
    // Faults live in a server: none runs yet.
    refused(d, &["inject", "a", "--latency", "20ms"]);
    refused(d, &["inject", "a", "--read-error", "0", "--latency", "5ms"]);
    let s = serve(d, &["a", "b"]);
    assert!(refused(d, &["inject", "a", "--latency", "soon"]).starts_with("error: --latency:"));
    engine(d, &["inject", "a", "--latency", "40ms"]);
    engine(d, &["inject", "b", "--latency", "40ms"]);
    // Each read waits for its member's delay: 4 reads, at least 4 delays.
    let t0 = Instant::now();
    let t = qemu_io(
        &s.uri(),
        &["read 0 4k", "read 64k 4k", "read 128k 4k", "read 192k 4k"],
    );
    assert!(t0.elapsed().as_millis() >= 160, "{:?} {t}", t0.elapsed());
    let st = status(d, &["a", "b"]);
    assert_eq!(st["faults"].as_array().unwrap().len(), 2, "{st}");
    engine(d, &["inject", "b", "--clear"]);
    assert_eq!(status(d, &["a", "b"])["faults"], serde_json::json!([]));
    s.stop();
}

/// SIGINT while slow writes are in flight: the server lets every request in progress
/// finish before it flushes and marks the array clean, so the clean array's parity
/// agrees everywhere. Stopped at several points of the write cycle.
#[test]
fn a_stop_during_writes_waits_for_them_and_leaves_parity_consistent() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = ["a", "b", "c", "d"];
    let mut create = vec!["create", "--level", "5", "--chunk", "16K", "--size", "3M"];
    create.extend(m);
    engine(d, &create);
    for (round, stop_after_ms) in [150u64, 260, 370, 480].into_iter().enumerate() {
        let s = serve(d, &m);
        for member in m {
            // Every member I/O waits 50 ms: a 4 KiB write takes two rounds of it.
            engine(d, &["inject", member, "--latency", "50ms"]);
        }
        let cmds: Vec<String> = (0..40)
            .map(|i| format!("write -P 0x{:02x} {} 4k", round + 1, i * 20480))
            .collect();
        let mut writer = qemu_io_in_background(&s.uri(), &cmds);
        std::thread::sleep(std::time::Duration::from_millis(stop_after_ms));
        assert!(
            writer.try_wait().unwrap().is_none(),
            "writes over before the stop"
        );
        s.stop();
        let _ = writer.wait();
        let st = status(d, &m);
        assert_eq!(st["state"], "clean", "{st}");
        assert_eq!(st["dirty"], false, "{st}");
        let t = engine_stdout(d, &["check", "a", "b", "c", "d"]);
        assert!(
            t.contains("mismatched 0"),
            "stop after {stop_after_ms} ms: {t}"
        );
    }
}

#[test]
fn a_bad_sector_is_rewritten_from_the_other_members_and_the_member_stays() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = ["a", "b", "c", "d"];
    let mut create = vec!["create", "--level", "5", "--chunk", "16K", "--size", "5M"];
    create.extend(m);
    engine(d, &create);
    let s = serve(d, &m);
    let t = qemu_io(&s.uri(), &["write -P 0x5a 0 12M", "flush"]);
    assert!(!t.contains("failed"), "{t}");
    // An unreadable 4 KiB in b's first chunk row (data of stripe 0) and in its third
    // (stripe 2's parity, which reads never touch).
    engine(d, &["inject", "b", "--bad-sector", "4K"]);
    engine(d, &["inject", "b", "--bad-sector", "36K+4K"]);
    let t = qemu_io(&s.uri(), &["read -P 0x5a 0 12M"]);
    assert!(!t.contains("failed"), "{t}");
    let st = status(d, &m);
    assert_eq!(st["failed"], serde_json::json!([]), "b stays in: {st}");
    assert_eq!(st["members"][1]["read_errors_corrected"], 1, "{st}");
    assert_eq!(
        st["faults"].as_array().unwrap().len(),
        1,
        "the data row was rewritten: {st}"
    );
    // The scrub finds the latent one on the parity block, rewrites it, and every stripe
    // agrees with its parity.
    let t = engine_stdout(d, &["check", "a", "b", "c", "d"]);
    assert!(
        t.contains("mismatched 0") && t.contains("read errors corrected 1"),
        "{t}"
    );
    let st = status(d, &m);
    assert_eq!(st["faults"], serde_json::json!([]), "{st}");
    assert_eq!(st["failed"], serde_json::json!([]), "{st}");
    assert_eq!(st["members"][1]["read_errors_corrected"], 2, "{st}");
    s.stop();
    // Read again from the members alone: the data is whole without the server.
    let s = serve(d, &m);
    let t = qemu_io(&s.uri(), &["read -P 0x5a 0 12M"]);
    assert!(!t.contains("failed"), "{t}");
    s.stop();
}

#[test]
fn a_member_with_more_than_twenty_read_errors_is_failed_as_md_does() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = ["a", "b"];
    engine(
        d,
        &[
            "create", "--level", "1", "--chunk", "16K", "--size", "3M", "a", "b",
        ],
    );
    let s = serve(d, &m);
    let t = qemu_io(&s.uri(), &["write -P 0x21 0 2M", "flush"]);
    assert!(!t.contains("failed"), "{t}");
    // 25 bad sectors on a; reading each chunk twice reaches a for every one of them
    // whichever copy the first read chose.
    for row in 0..25u64 {
        engine(
            d,
            &["inject", "a", "--bad-sector", &format!("{}", row * 16384)],
        );
    }
    let mut cmds = Vec::new();
    for row in 0..25u64 {
        cmds.push(format!("read -P 0x21 {} 16K", row * 16384));
        cmds.push(format!("read -P 0x21 {} 16K", row * 16384));
    }
    let cmds: Vec<&str> = cmds.iter().map(String::as_str).collect();
    let t = qemu_io(&s.uri(), &cmds);
    assert!(!t.contains("failed"), "the data is served throughout: {t}");
    let st = status(d, &m);
    assert_eq!(st["failed"], serde_json::json!([0]), "{st}");
    assert_eq!(st["members"][0]["read_errors_corrected"], 20, "{st}");
    s.stop();
}
