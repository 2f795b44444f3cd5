//! A rebuild stopped with the server resumes where it stood, as md resumes a recovery:
//! the replacement's superblock keeps the rebuilt offset, `status` shows it, and the
//! next `serve` continues from there; after an unclean stop it starts over.

mod common;

use common::{engine, run, serve, spawn_server, without_qemu_io};
use std::io::Read;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const MEMBER_DATA: u64 = 32 << 20;

fn status(d: &Path, members: &[&str]) -> serde_json::Value {
    let mut a = vec!["status", "--json"];
    a.extend(members);
    serde_json::from_slice(&engine(d, &a).stdout).unwrap()
}

fn qemu(uri: &str, cmd: &str) -> String {
    run(Command::new("qemu-io").args(["-f", "raw", uri, "-c", cmd]))
}

/// RAID 5 of four, written with a pattern, b failed and being rebuilt onto e at 8 MB/s
/// (about 4 s) by a running server. Returns the server.
fn rebuilding(d: &Path) -> common::Server {
    engine(
        d,
        &[
            "create", "--level", "5", "--chunk", "64K", "--size", "33M", "a", "b", "c", "d",
        ],
    );
    let s = serve(d, &["a", "b", "c", "d"]);
    let t = qemu(&s.uri(), "write -P 0x6d 0 96M");
    assert!(!t.contains("failed"), "{t}");
    engine(d, &["fail", "b", "a", "b", "c", "d"]);
    engine(
        d,
        &[
            "replace",
            "b",
            "e",
            "--rate",
            "8M",
            "--no-wait",
            "a",
            "b",
            "c",
            "d",
        ],
    );
    s
}

/// The offset the replacement's superblock says is rebuilt, from an offline status.
fn recovering_offset(st: &serde_json::Value) -> u64 {
    let state = st["members"][1]["state"].as_str().unwrap();
    assert!(state.starts_with("recovering ("), "{st}");
    state["recovering (".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_rebuild_stopped_cleanly_resumes_at_its_checkpoint() {
    if without_qemu_io() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = rebuilding(d);
    std::thread::sleep(Duration::from_millis(1800));
    // Written while the rebuild runs: below and above where it stands.
    let t = qemu(&s.uri(), "write -P 0x7e 0 1M");
    assert!(!t.contains("failed"), "{t}");
    let t = qemu(&s.uri(), "write -P 0x7e 90M 1M");
    assert!(!t.contains("failed"), "{t}");
    s.stop();

    let members = ["a", "e", "c", "d"];
    let st = status(d, &members);
    assert_eq!(st["failed"], serde_json::json!([1]), "{st}");
    let offset = recovering_offset(&st);
    assert!(offset > 0 && offset < MEMBER_DATA, "{offset}: {st}");

    let mut s = spawn_server(d, &members, true);
    let t0 = Instant::now();
    while status(d, &members)["failed"] != serde_json::json!([]) {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the rebuild did not finish"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The resumed rebuild keeps its --rate: the rest takes seconds, not a blink.
    let rest_s = (MEMBER_DATA - offset) as f64 / f64::from(8u32 << 20);
    assert!(
        t0.elapsed().as_secs_f64() > 0.6 * rest_s,
        "{:?} for {rest_s} s of rebuild at the rate",
        t0.elapsed()
    );
    let t = qemu(&s.uri(), "read -P 0x7e 0 1M");
    assert!(!t.contains("Pattern verification failed"), "{t}");
    let t = qemu(&s.uri(), "read -P 0x6d 1M 89M");
    assert!(!t.contains("Pattern verification failed"), "{t}");
    let t = qemu(&s.uri(), "read -P 0x7e 90M 1M");
    assert!(!t.contains("Pattern verification failed"), "{t}");
    assert!(Command::new("kill")
        .args(["-INT", &s.0.id().to_string()])
        .status()
        .unwrap()
        .success());
    let mut err = String::new();
    s.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(s.0.wait().unwrap().success(), "{err}");
    assert!(
        err.contains(&format!(
            "resuming the rebuild of member 1 onto {}",
            d.join("e").display()
        )) && err.contains(&format!(
            " at {offset} of {MEMBER_DATA} B, at most 8388608 B/s"
        )),
        "{err}"
    );
    assert!(err.contains("member 1 rebuilt"), "{err}");
    // Every stripe agrees with its parity: the rows rebuilt before the stop and after.
    let t = String::from_utf8_lossy(&engine(d, &["check", "a", "e", "c", "d"]).stdout).to_string();
    assert!(t.contains("mismatched 0"), "{t}");
}

#[test]
fn after_an_unclean_stop_the_rebuild_starts_over() {
    if without_qemu_io() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut s = rebuilding(d);
    std::thread::sleep(Duration::from_millis(1800));
    s.0.kill().unwrap();
    s.0.wait().unwrap();
    drop(s);
    let members = ["a", "e", "c", "d"];
    let st = status(d, &members);
    assert_eq!(st["failed"], serde_json::json!([1]), "{st}");
    assert_eq!(
        st["members"][1]["state"], "failed",
        "not resumed when dirty: {st}"
    );
    // The replacement is then given again, from the start.
    let s = serve(d, &members);
    engine(d, &["replace", "e", "f", "a", "e", "c", "d"]);
    let t = qemu(&s.uri(), "read -P 0x6d 0 96M");
    assert!(!t.contains("Pattern verification failed"), "{t}");
    s.stop();
    let t = String::from_utf8_lossy(&engine(d, &["check", "a", "f", "c", "d"]).stdout).to_string();
    assert!(t.contains("mismatched 0"), "{t}");
}
