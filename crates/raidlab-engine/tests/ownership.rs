//! Who owns the files an array uses (issue 37): `create`, `replace` and `add-spare`
//! refuse a file that carries another array's member, spare, journal or cache (naming
//! it, its array and `--force-overwrite FILE`, which overwrites the files it names and
//! no other) and the array's own journal always; `serve` holds its
//! journal; a loop device over a member is refused; `replace` onto a full filesystem
//! changes nothing; every file is created 0600 whatever the umask; a squatted
//! `$TMPDIR/raidlab-<uid>` does not keep `serve`, `status` or `check` from working; a
//! failed `create` removes the files it made; `create --sparse` leaves the cache sparse.
//!
//! The tests that mount a tmpfs, chown to another user or set up a loop device need
//! root; they skip with a message otherwise.

use crate::common::{engine, engine_output, output_text, refused, serve, status, Tmpfs};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

const ENGINE: &str = env!("CARGO_BIN_EXE_raidlab-engine");
const UUID_A: &str = "0a0000000000000000000000000000a1";
/// A journal just over the least `create` takes for 3 members (sparse: no space used).
const JOURNAL_SIZE: &str = "101M";

fn path(d: &Path, name: &str) -> String {
    d.join(name).display().to_string()
}

fn paths(d: &Path, names: &[&str]) -> Vec<String> {
    names.iter().map(|n| path(d, n)).collect()
}

fn args<'a>(head: &[&'a str], tail: &'a [String]) -> Vec<&'a str> {
    let mut v = head.to_vec();
    v.extend(tail.iter().map(String::as_str));
    v
}

fn root() -> bool {
    rustix::process::geteuid().as_raw() == 0
}

/// Array A: RAID 5 of 3 sparse 8 MiB members `a0..a2` with journal `ja`.
fn create_a(d: &Path) -> (Vec<String>, String) {
    let m = paths(d, &["a0", "a1", "a2"]);
    let j = path(d, "ja");
    let head = [
        "create",
        "--level",
        "5",
        "--size",
        "8M",
        "--sparse",
        "--uuid",
        UUID_A,
        "--journal",
        &j,
        "--journal-size",
        JOURNAL_SIZE,
    ];
    engine(d, &args(&head, &m));
    (m, j)
}

/// A `create` of new members `n0..n2` with journal `journal`, expected refused; asserts
/// it names `journal` and `what`, and left no member behind.
fn create_with_journal_refused(d: &Path, journal: &str, what: &str) -> String {
    let m = paths(d, &["n0", "n1", "n2"]);
    let head = [
        "create",
        "--level",
        "5",
        "--size",
        "8M",
        "--sparse",
        "--journal",
        journal,
        "--journal-size",
        JOURNAL_SIZE,
    ];
    let err = refused(d, &args(&head, &m));
    assert!(err.contains(journal) && err.contains(what), "{err}");
    for n in &m {
        assert!(!Path::new(n).exists(), "{n} left behind: {err}");
    }
    err
}

#[test]
fn create_refuses_another_arrays_journal_member_and_cache_member() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (a, ja) = create_a(d);
    let b = paths(d, &["b0", "b1"]);
    let cache = format!("{},{}", path(d, "c0"), path(d, "c1"));
    let head = [
        "create",
        "--level",
        "1",
        "--size",
        "8M",
        "--sparse",
        "--cache-members",
        &cache,
        "--cache-size",
        "8M",
    ];
    engine(d, &args(&head, &b));

    let err = create_with_journal_refused(d, &ja, &format!("the write journal of array {UUID_A}"));
    assert!(err.contains(&format!("--force-overwrite {ja}")), "{err}");
    create_with_journal_refused(d, &a[1], &format!("member 1 of array {UUID_A}"));
    create_with_journal_refused(d, &path(d, "c0"), "cache member 0 of cache array");
    // The journal as a member is refused the same.
    let err = refused(
        d,
        &[
            "create",
            "--level",
            "1",
            "--size",
            "8M",
            &ja,
            &path(d, "n1"),
        ],
    );
    assert!(
        err.contains("the write journal of array")
            && err.contains(&format!("--force-overwrite {ja}")),
        "{err}"
    );
    // Both arrays assemble as they were.
    let s = status(d, &args(&["--journal", &ja], &a));
    assert_eq!(s["failed"], serde_json::json!([]), "{s}");
    let s = status(d, &args(&["--cache-members", &cache], &b));
    assert_eq!(s["failed"], serde_json::json!([]), "{s}");
    // --force-overwrite overwrites the file it names, as told.
    let head = [
        "create",
        "--level",
        "1",
        "--size",
        "8M",
        "--sparse",
        "--force-overwrite",
        &ja,
    ];
    engine(d, &args(&head, &[ja.clone(), path(d, "n1")]));
}

#[test]
fn force_overwrite_overwrites_the_files_it_names_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (a, ja) = create_a(d);
    let b = paths(d, &["b0", "b1"]);
    engine(
        d,
        &args(&["create", "--level", "1", "--size", "8M", "--sparse"], &b),
    );
    // Two claimed files, one named: the other is refused, naming its own flag, and
    // nothing is written (a flag that meant "every file" overwrote both).
    let head = [
        "create",
        "--level",
        "1",
        "--size",
        "8M",
        "--force-overwrite",
        &a[0],
    ];
    let err = refused(d, &args(&head, &[a[0].clone(), b[1].clone()]));
    assert!(
        err.contains(&format!("--force-overwrite {}", b[1])) && err.contains("member 1 of array"),
        "{err}"
    );
    let s = status(d, &args(&["--journal", &ja], &a));
    assert_eq!(s["failed"], serde_json::json!([]), "{s}");
    let s = status(d, &args(&[], &b));
    assert_eq!(s["failed"], serde_json::json!([]), "{s}");
    // A named file the command does not write: exit 2, naming the flag and the file.
    let stray = path(d, "stray");
    let head = [
        "create",
        "--level",
        "1",
        "--size",
        "8M",
        "--force-overwrite",
        &stray,
    ];
    let err = refused(d, &args(&head, &paths(d, &["n0", "n1"])));
    assert!(
        err.starts_with("error: --force-overwrite: ") && err.contains(&stray),
        "{err}"
    );
    assert!(
        !d.join("n0").exists(),
        "refused before anything was created"
    );
    let err = refused(
        d,
        &args(
            &[
                "replace",
                &a[1],
                &b[0],
                "--force-overwrite",
                &b[1],
                "--journal",
                &ja,
            ],
            &a,
        ),
    );
    assert!(err.starts_with("error: --force-overwrite: "), "{err}");
    let s = status(d, &args(&[], &b));
    assert_eq!(s["failed"], serde_json::json!([]), "{s}");
}

#[test]
fn replace_and_add_spare_refuse_the_journal_and_other_arrays_members() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (a, ja) = create_a(d);
    let b = paths(d, &["b0", "b1"]);
    engine(
        d,
        &args(&["create", "--level", "1", "--size", "8M", "--sparse"], &b),
    );
    let with_journal = |head: &[&str]| {
        let mut v: Vec<String> = head.iter().map(|s| s.to_string()).collect();
        v.extend(["--journal".to_string(), ja.clone()]);
        v.extend(a.iter().cloned());
        v
    };
    let run = |v: &[String]| {
        let v: Vec<&str> = v.iter().map(String::as_str).collect();
        refused(d, &v)
    };
    // The array's own journal: refused, even named in --force-overwrite; nothing is
    // failed.
    for force in [&[][..], &["--force-overwrite", &ja][..]] {
        let mut head = vec!["replace", &a[1], &ja];
        head.extend(force);
        let err = run(&with_journal(&head));
        assert!(err.contains("the array's write journal"), "{err}");
    }
    // Another array's member: refused unless named, naming the array and the flag.
    let err = run(&with_journal(&["replace", &a[1], &b[0]]));
    assert!(
        err.contains("member 0 of array") && err.contains(&format!("--force-overwrite {}", b[0])),
        "{err}"
    );
    let s = status(
        d,
        &with_journal(&[])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(s["failed"], serde_json::json!([]), "{s}");
    // A journal as another array's spare: refused, the journal left whole.
    let err = refused(d, &args(&["add-spare", &ja], &b));
    assert!(err.contains("the write journal of array"), "{err}");
    status(d, &args(&["--journal", &ja], &a));

    // Served: the server holds its journal, so neither a replace onto it nor a create
    // --force-overwrite over it gets it.
    let server = serve(d, &args(&["--journal", &ja], &a));
    let err = run(&with_journal(&[
        "replace",
        &a[1],
        &ja,
        "--force-overwrite",
        &ja,
    ]));
    assert!(err.contains("in use by pid"), "{err}");
    let n = paths(d, &["n0", "n1", "n2"]);
    let head = [
        "create",
        "--level",
        "5",
        "--size",
        "8M",
        "--sparse",
        "--force-overwrite",
        &ja,
        "--journal",
        &ja,
        "--journal-size",
        JOURNAL_SIZE,
    ];
    let err = refused(d, &args(&head, &n));
    assert!(err.contains(&ja) && err.contains("in use by pid"), "{err}");
    let s = status(d, &args(&["--journal", &ja], &a));
    assert_eq!(
        (&s["served"], &s["failed"]),
        (&serde_json::json!(true), &serde_json::json!([])),
        "{s}"
    );
    server.stop();
    status(d, &args(&["--journal", &ja], &a));
}

#[test]
fn replace_onto_a_full_filesystem_fails_before_failing_the_member() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(small) = Tmpfs::mount(&d.join("small"), "4m") else {
        return;
    };
    let a = paths(d, &["a0", "a1", "a2"]);
    engine(d, &args(&["create", "--level", "5", "--size", "8M"], &a));
    let new = small.0.join("new").display().to_string();
    let err = refused(d, &args(&["replace", &a[1], &new], &a));
    assert!(
        err.contains(&new) && err.contains("not enough space"),
        "{err}"
    );
    assert!(!Path::new(&new).exists(), "the refused NEW is left behind");
    let s = status(d, &args(&[], &a));
    assert_eq!(s["failed"], serde_json::json!([]), "{s}");
    // The same through a server: refused before the server fails anything.
    let server = serve(d, &args(&[], &a));
    let err = refused(d, &args(&["replace", &a[1], &new], &a));
    assert!(err.contains("not enough space"), "{err}");
    assert!(!Path::new(&new).exists(), "the refused NEW is left behind");
    let s = status(d, &args(&[], &a));
    assert_eq!(
        (&s["served"], &s["failed"]),
        (&serde_json::json!(true), &serde_json::json!([])),
        "{s}"
    );
    server.stop();
}

/// Runs the engine with umask 000 in `d` (`sh -c 'umask 000; exec ENGINE "$@"'`, with
/// the environment `engine_command` gives it), asserting success.
fn engine_umask_000(d: &Path, a: &[&str]) {
    let o = Command::new("sh")
        .current_dir(d)
        .env("TMPDIR", d)
        .env_remove("XDG_RUNTIME_DIR")
        .env("ENGINE", ENGINE)
        .args(["-c", "umask 000; exec \"$ENGINE\" \"$@\"", "sh"])
        .args(a)
        .output()
        .unwrap();
    assert!(o.status.success(), "{a:?}: {}", output_text(&o));
}

#[test]
fn every_file_is_created_0600_whatever_the_umask() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = paths(d, &["m0", "m1", "m2"]);
    let (j, sp) = (path(d, "j"), path(d, "spare"));
    let cache = format!("{},{}", path(d, "c0"), path(d, "c1"));
    let head = [
        "create",
        "--level",
        "5",
        "--size",
        "8M",
        "--sparse",
        "--journal",
        &j,
        "--journal-size",
        JOURNAL_SIZE,
        "--spares",
        &sp,
        "--cache-members",
        &cache,
        "--cache-size",
        "8M",
    ];
    engine_umask_000(d, &args(&head, &m));
    let new = path(d, "new");
    let mut replace = vec![
        "replace",
        &m[1],
        &new,
        "--journal",
        &j,
        "--cache-members",
        &cache,
    ];
    replace.extend(m.iter().map(String::as_str));
    replace.push(&sp);
    engine_umask_000(d, &replace);
    for f in ["m0", "m1", "m2", "j", "spare", "c0", "c1", "new"] {
        let mode = std::fs::metadata(d.join(f)).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600, "{f}: {mode:o}");
    }
}

#[test]
fn a_squatted_tmpdir_socket_directory_does_not_block_serve_status_or_check() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if !root() {
        eprintln!("skipped: making another user's directory needs root");
        return;
    }
    let m = paths(d, &["m0", "m1", "m2"]);
    // No --uuid: the socket may live in a directory other tests share.
    engine(
        d,
        &args(&["create", "--level", "5", "--size", "8M", "--sparse"], &m),
    );
    // What another user does first: $TMPDIR/raidlab-0, theirs, private to them.
    let squat = d.join("raidlab-0");
    std::fs::create_dir(&squat).unwrap();
    std::fs::set_permissions(&squat, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&squat, Some(65534), Some(65534)).unwrap();
    let server = serve(d, &args(&[], &m));
    let s = status(d, &args(&[], &m));
    assert_eq!(s["served"], serde_json::json!(true), "{s}");
    let o = engine_output(d, &args(&["check"], &m));
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    server.stop();
    let s = status(d, &args(&[], &m));
    assert_eq!(s["served"], serde_json::json!(false), "{s}");
    assert!(
        std::fs::read_dir(&squat).unwrap().next().is_none(),
        "wrote into the squat"
    );
}

#[test]
fn a_failed_create_removes_the_files_it_made_and_sparse_leaves_the_cache_sparse() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let kept = d.join("kept");
    std::fs::write(&kept, vec![0u8; 8 << 20]).unwrap();
    let m = vec![kept.display().to_string(), path(d, "n1"), path(d, "n2")];
    let cache = format!("{},{}", path(d, "s0"), path(d, "s1"));
    // A cache too small for its log: refused after the array was made.
    let head = [
        "create",
        "--level",
        "5",
        "--size",
        "8M",
        "--cache-members",
        &cache,
        "--cache-size",
        "1200K",
    ];
    let err = refused(d, &args(&head, &m));
    assert!(err.contains("too small"), "{err}");
    for f in ["n1", "n2", "s0", "s1"] {
        assert!(!d.join(f).exists(), "{f} left behind by the failed create");
    }
    assert!(kept.exists(), "a file that was there before is kept");

    let m = paths(d, &["m0", "m1", "m2"]);
    let head = [
        "create",
        "--level",
        "5",
        "--size",
        "8M",
        "--sparse",
        "--cache-members",
        &cache,
        "--cache-size",
        "16M",
    ];
    engine(d, &args(&head, &m));
    for f in ["m0", "s0", "s1"] {
        let allocated = std::fs::metadata(d.join(f)).unwrap().blocks() * 512;
        assert!(
            allocated < 4 << 20,
            "{f}: {allocated} B allocated under --sparse"
        );
    }
}

/// A loop device set up over `file` for one test, detached when dropped.
struct Loop(String);

impl Loop {
    fn over(file: &str) -> Option<Loop> {
        if !root() {
            eprintln!("skipped: losetup needs root");
            return None;
        }
        let o = Command::new("losetup")
            .args(["-f", "--show", file])
            .output();
        match o {
            Ok(o) if o.status.success() => {
                Some(Loop(String::from_utf8_lossy(&o.stdout).trim().to_string()))
            }
            Ok(o) => {
                eprintln!("skipped: losetup refused: {}", output_text(&o).trim());
                None
            }
            Err(e) => {
                eprintln!("skipped: no losetup: {e}");
                None
            }
        }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

#[test]
fn a_member_behind_a_loop_device_is_refused_naming_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = paths(d, &["m0", "m1", "m2"]);
    engine(
        d,
        &args(&["create", "--level", "5", "--size", "8M", "--sparse"], &m),
    );
    let Some(dev) = Loop::over(&m[1]) else {
        return;
    };
    let err = refused(d, &args(&["check"], &m));
    assert!(
        err.contains(&m[1]) && err.contains(&format!("backs loop device {}", dev.0)),
        "{err}"
    );
    drop(dev);
    // The other way round: a loop device set up over the journal a server holds,
    // given to `create --force-overwrite` as its journal, is refused naming the server.
    let (a, ja) = create_a(d);
    let server = serve(d, &args(&["--journal", &ja], &a));
    let Some(dev) = Loop::over(&ja) else {
        return;
    };
    let n = paths(d, &["n0", "n1", "n2"]);
    let head = [
        "create",
        "--level",
        "5",
        "--size",
        "8M",
        "--sparse",
        "--force-overwrite",
        &dev.0,
        "--journal",
        &dev.0,
        "--journal-size",
        JOURNAL_SIZE,
    ];
    let err = refused(d, &args(&head, &n));
    assert!(
        err.contains(&dev.0) && err.contains(&format!("a loop device over {ja}")),
        "{err}"
    );
    assert!(err.contains("in use by pid"), "{err}");
    drop(dev);
    server.stop();
    // The journal is whole: the array assembles with it.
    let s = status(d, &args(&["--journal", &ja], &a));
    assert_eq!(s["failed"], serde_json::json!([]), "{s}");
}

#[test]
fn a_journal_on_a_block_device_is_claimed_exclusively_while_served() {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let backing = path(d, "jdev");
    std::fs::File::create(&backing)
        .unwrap()
        .set_len(101 << 20)
        .unwrap();
    let Some(dev) = Loop::over(&backing) else {
        return;
    };
    let m = paths(d, &["a0", "a1", "a2"]);
    let head = [
        "create",
        "--level",
        "5",
        "--size",
        "8M",
        "--sparse",
        "--journal",
        &dev.0,
    ];
    engine(d, &args(&head, &m));
    let server = serve(d, &args(&["--journal", &dev.0], &m));
    // The kernel's exclusive claim is the server's: another O_EXCL open gets EBUSY
    // (md and mkfs claim devices the same way).
    let excl = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(&dev.0);
    assert_eq!(
        excl.as_ref().map_err(|e| e.raw_os_error()).err(),
        Some(Some(libc::EBUSY)),
        "{} opened O_EXCL while it is a served journal",
        dev.0
    );
    // Nor may create take it, even told to overwrite it.
    let n = paths(d, &["n0", "n1", "n2"]);
    let head = [
        "create",
        "--level",
        "5",
        "--size",
        "8M",
        "--sparse",
        "--force-overwrite",
        &dev.0,
        "--journal",
        &dev.0,
    ];
    let err = refused(d, &args(&head, &n));
    assert!(err.contains(&dev.0), "{err}");
    server.stop();
    // The journal is whole: the array assembles with it.
    let s = status(d, &args(&["--journal", &dev.0], &m));
    assert_eq!(s["failed"], serde_json::json!([]), "{s}");
}
