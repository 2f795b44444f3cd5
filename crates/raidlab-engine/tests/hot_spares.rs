//! Hot spares, as md keeps them: `create --spares` and `add-spare` record members with
//! no role; assembly finds them in any order; when a member of a served array fails,
//! the first spare takes its role and is rebuilt online by itself (fio writing and
//! verifying through it); without a spare the array stays degraded; a spare smaller
//! than a member is refused.

use crate::common;

use crate::common::{engine, engine_json, refused, serve, spawn_server, tool, Server};
use raidlab_engine::format::superblock::DATA_OFFSET_BYTES;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Data bytes of every member.
const MEMBER_DATA: u64 = 8 << 20;

/// `--size` of every member and spare.
fn member_size() -> String {
    (DATA_OFFSET_BYTES + MEMBER_DATA).to_string()
}

/// `cmd`, then `--json`, then `args`.
fn json(d: &Path, cmd: &str, args: &[&str]) -> Value {
    let mut a = vec![cmd];
    a.extend(args);
    engine_json(d, &a)
}

/// Creates a RAID 5 of `m0 m1 m2` with `spares` (comma-separated, may be empty).
fn create_raid5(d: &Path, spares: &str) -> Value {
    let size = member_size();
    let mut a = vec![
        "create", "--level", "5", "--chunk", "16K", "--size", &size, "m0", "m1", "m2",
    ];
    if !spares.is_empty() {
        a.extend(["--spares", spares]);
    }
    engine_json(d, &a)
}

/// The member paths of a status report, by role, as file names.
fn member_names(st: &Value) -> Vec<String> {
    st["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| file_name(&m["path"]))
        .collect()
}

/// The spares of a status report, as file names, sorted.
fn spare_names(st: &Value) -> Vec<String> {
    let mut v: Vec<String> = st["spares"]
        .as_array()
        .unwrap()
        .iter()
        .map(file_name)
        .collect();
    v.sort();
    v
}

fn file_name(p: &Value) -> String {
    Path::new(p.as_str().unwrap_or("-"))
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string()
}

/// Polls `status` of `members` (through the server) until `done` holds, at most
/// `limit`; returns the last report.
fn wait_status(
    d: &Path,
    members: &[&str],
    limit: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let t0 = Instant::now();
    loop {
        let st = json(d, "status", members);
        if done(&st) {
            return st;
        }
        assert!(t0.elapsed() < limit, "not reached in {limit:?}: {st}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process killed when dropped (a failing test leaves no fio behind).
struct Killed(Option<Child>);

impl Killed {
    /// Waits for the child, at most `limit`; returns its exit success and stdout.
    fn wait(mut self, limit: Duration) -> (bool, String) {
        let mut child = self.0.take().unwrap();
        let t0 = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t0.elapsed() > limit {
                let _ = child.kill();
                panic!("still running after {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let o = child.wait_with_output().unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).to_string(),
        )
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// fio's nbd engine over the first `size` bytes of the export, crc32c verify, in `dir`.
fn fio(d: &Path, uri: &str, size: u64, extra: &[&str]) -> Command {
    let mut c = Command::new("fio");
    c.current_dir(d).args([
        "--name=spare".to_string(),
        "--ioengine=nbd".into(),
        format!("--uri={uri}"),
        format!("--size={size}"),
        "--bs=4k".into(),
        "--iodepth=4".into(),
        "--verify=crc32c".into(),
        "--verify_fatal=1".into(),
        "--randseed=19".into(),
    ]);
    c.args(extra);
    c
}

#[test]
fn create_with_spares_then_assemble_in_any_member_order() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let created = create_raid5(d, "s0,s1");
    assert_eq!(spare_names(&created), ["s0", "s1"]);
    for order in [
        ["s1", "m2", "s0", "m1", "m0"],
        ["m0", "s0", "m1", "s1", "m2"],
        ["s0", "s1", "m0", "m1", "m2"],
    ] {
        let st = json(d, "status", &order);
        assert_eq!(st["state"], "clean", "{order:?}: {st}");
        assert_eq!(member_names(&st), ["m0", "m1", "m2"], "{order:?}");
        assert_eq!(spare_names(&st), ["s0", "s1"], "{order:?}");
    }
    // Without its spares the array is whole; given alone, spares are no array.
    let st = json(d, "status", &["m2", "m0", "m1"]);
    assert_eq!(
        (st["state"].as_str(), spare_names(&st).len()),
        (Some("clean"), 0)
    );
    let e = refused(d, &["status", "s0", "s1"]);
    assert!(e.contains("only hot spares"), "{e}");
    let text =
        String::from_utf8_lossy(&engine(d, &["status", "m0", "m1", "m2", "s0"]).stdout).to_string();
    assert!(text.contains("spare: ") && text.contains("s0"), "{text}");
}

#[test]
fn a_spare_smaller_than_the_members_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let small = (DATA_OFFSET_BYTES + MEMBER_DATA / 2).to_string();
    for name in ["m0", "m1", "m2"] {
        std::fs::File::create(d.join(name))
            .unwrap()
            .set_len(DATA_OFFSET_BYTES + MEMBER_DATA)
            .unwrap();
    }
    std::fs::File::create(d.join("small"))
        .unwrap()
        .set_len(small.parse().unwrap())
        .unwrap();
    // At create (members used as they are)...
    let e = refused(
        d,
        &[
            "create", "--level", "5", "--spares", "small", "m0", "m1", "m2",
        ],
    );
    assert!(
        e.contains("small: spare holds") && e.contains("smaller than"),
        "{e}"
    );
    // Nothing was created: the members carry no superblock.
    let o = common::engine_output(d, &["status", "m0", "m1", "m2"]);
    assert_eq!(o.status.code(), Some(2));
    // ... and when added.
    engine(d, &["create", "--level", "5", "m0", "m1", "m2"]);
    let e = refused(d, &["add-spare", "small", "m0", "m1", "m2"]);
    assert!(
        e.contains("small: spare holds") && e.contains("smaller than"),
        "{e}"
    );
    assert_eq!(
        spare_names(&json(d, "status", &["m0", "m1", "m2"])).len(),
        0
    );
}

#[test]
fn a_failure_without_a_spare_leaves_the_array_degraded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    create_raid5(d, "");
    let members = ["m0", "m1", "m2"];
    let s = serve(d, &members);
    let st = json(d, "fail", &["m1", "m0", "m1", "m2"]);
    assert_eq!(st["state"], "degraded", "{st}");
    // The control thread looks for a spare every 50 ms: a second is many looks.
    std::thread::sleep(Duration::from_secs(1));
    let st = json(d, "status", &members);
    assert_eq!(st["state"], "degraded", "{st}");
    assert_eq!(st["failed"], serde_json::json!([1]), "{st}");
    assert!(st["rebuild"].is_null(), "{st}");
    s.stop();
}

#[test]
fn add_spare_online_rebuilds_a_degraded_array_onto_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    create_raid5(d, "");
    let members = ["m0", "m1", "m2"];
    let s = serve(d, &members);
    json(d, "fail", &["m2", "m0", "m1", "m2"]);
    std::fs::File::create(d.join("s0"))
        .unwrap()
        .set_len(DATA_OFFSET_BYTES + MEMBER_DATA)
        .unwrap();
    let st = json(d, "add-spare", &["s0", "m0", "m1"]);
    assert_eq!(st["served"], true, "{st}");
    let st = wait_status(d, &["m0", "m1"], Duration::from_secs(60), |st| {
        st["state"] == "clean"
    });
    assert_eq!(member_names(&st), ["m0", "m1", "s0"], "{st}");
    assert_eq!(spare_names(&st).len(), 0, "{st}");
    let r = json(d, "check", &["m0", "m1"]);
    assert_eq!(r["mismatched_stripes"], 0, "{r}");
    // A second spare added online waits, unused, in a clean array.
    std::fs::File::create(d.join("s1"))
        .unwrap()
        .set_len(DATA_OFFSET_BYTES + MEMBER_DATA)
        .unwrap();
    let st = json(d, "add-spare", &["s1", "m0", "m1"]);
    assert_eq!(
        (st["state"].as_str(), spare_names(&st)),
        (Some("clean"), vec!["s1".to_string()])
    );
    s.stop();
    // Its superblock says spare: the next assembly finds it.
    let st = json(d, "status", &["s1", "s0", "m1", "m0"]);
    assert_eq!(spare_names(&st), ["s1"], "{st}");
    assert_eq!(member_names(&st), ["m0", "m1", "s0"], "{st}");
}

#[test]
fn a_member_failed_offline_is_taken_over_when_serve_starts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    create_raid5(d, "");
    engine(d, &["fail", "m0", "m0", "m1", "m2"]);
    std::fs::File::create(d.join("s0"))
        .unwrap()
        .set_len(DATA_OFFSET_BYTES + MEMBER_DATA)
        .unwrap();
    // Offline: recorded, and the array stays degraded until it is served.
    let st = json(d, "add-spare", &["s0", "m1", "m2"]);
    assert_eq!(
        (st["state"].as_str(), spare_names(&st)),
        (Some("degraded"), vec!["s0".to_string()])
    );
    let s = spawn_server(d, &["m1", "s0", "m2"], true);
    let st = wait_status(d, &["m1", "m2"], Duration::from_secs(60), |st| {
        st["state"] == "clean"
    });
    assert_eq!(member_names(&st), ["s0", "m1", "m2"], "{st}");
    let err = s.stop_with_stderr();
    assert!(
        err.contains("hot spare") && err.contains("takes its role"),
        "{err}"
    );
}

/// The acceptance: fio writes and verifies (crc32c) through the export while a
/// member fails by an injected write error; the spare takes its role, the rebuild runs
/// and completes by itself, fio finds 0 verify errors and `check` 0 mismatched stripes.
#[test]
fn hot_spare_takes_over_a_failed_member_while_fio_writes_and_verifies() {
    if !tool("fio") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let created = create_raid5(d, "s0");
    let export = created["capacity_bytes"].as_u64().unwrap();
    let members = ["m0", "m1", "m2", "s0"];
    let s: Server = spawn_server(d, &members, true);
    let uri = s.uri();
    // About 3 s of writing at 2 MiB/s, then fio reads every block back and checks it.
    let size = 6 << 20;
    assert!(size <= export);
    let writer = Killed(Some(
        fio(
            d,
            &uri,
            size,
            &["--rw=randwrite", "--rate=2m", "--do_verify=1"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap(),
    ));
    std::thread::sleep(Duration::from_millis(500));
    // Every write to member 1 fails from now on: the next one fails the member.
    let inject = json(
        d,
        "inject",
        &["m1", "--write-error", &format!("0+{MEMBER_DATA}")],
    );
    assert_eq!(inject["faults"].as_array().unwrap().len(), 1, "{inject}");
    let st = wait_status(d, &["m0", "m2"], Duration::from_secs(30), |st| {
        member_names(st)[1] == "s0"
    });
    assert!(spare_names(&st).is_empty(), "{st}");
    // The spare took over while fio was still writing: the failure was online.
    let mut writer = writer;
    assert!(
        writer.0.as_mut().unwrap().try_wait().unwrap().is_none(),
        "fio finished before the spare took over: not through the failure"
    );
    let (ok, out) = writer.wait(Duration::from_secs(120));
    assert!(ok && out.contains("err= 0"), "{out}");
    let st = wait_status(d, &["m0", "m2"], Duration::from_secs(60), |st| {
        st["state"] == "clean"
    });
    assert_eq!(member_names(&st), ["m0", "s0", "m2"], "{st}");
    assert_eq!(st["faults"].as_array().unwrap().len(), 0, "{st}");
    let r = json(d, "check", &["m0", "m2"]);
    assert_eq!(r["mismatched_stripes"], 0, "{r}");
    // Everything fio wrote reads back verified, now partly from the spare.
    let t = common::run(&mut fio(
        d,
        &uri,
        size,
        &["--rw=randwrite", "--verify_only=1"],
    ));
    assert!(t.contains("err= 0"), "{t}");
    let err = s.stop_with_stderr();
    assert!(
        err.contains("member 1")
            && err.contains("hot spare")
            && err.contains("rebuilt onto the hot spare"),
        "{err}"
    );
    // Offline, the spare is member 1 for good.
    let st = json(d, "status", &["s0", "m2", "m0"]);
    assert_eq!(
        (st["state"].as_str(), member_names(&st)),
        (Some("clean"), vec!["m0".into(), "s0".into(), "m2".into()])
    );
    let r = json(d, "check", &["s0", "m2", "m0"]);
    assert_eq!(r["mismatched_stripes"], 0, "{r}");
}
