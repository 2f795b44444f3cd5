//! The control socket and member ownership against other users and squatters (issue 16):
//! another uid cannot fail a member or check through a root server's socket; a squatted
//! socket or directory is refused by the client (exit code 2, no fake report); `replace`
//! onto a file the client cannot open fails in the client and leaves it untouched; a
//! second `serve` and an offline `fail` on served members are refused naming the pid.
//!
//! The other-user cases run clients as `nobody` through `setpriv` and skip, saying why,
//! when the tests do not run as root, setpriv or python3 (the raw socket peer) is
//! missing, or `nobody` cannot run the binary.

use crate::common::{
    engine, engine_command, engine_output, free_listen_address, wait_listening, Server,
};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ENGINE: &str = env!("CARGO_BIN_EXE_raidlab-engine");
const UUID: &str = "5ec0000000000000000000000000cafe";
const NOBODY: u32 = 65534;

fn members(d: &Path) -> Vec<String> {
    (0..4)
        .map(|i| d.join(format!("m{i}")).display().to_string())
        .collect()
}

/// A 4-member RAID 5 of 8 MiB files in `d`, with the test's UUID.
fn create(d: &Path) -> Vec<String> {
    let m = members(d);
    let mut args = vec!["create", "--level", "5", "--size", "8M", "--uuid", UUID];
    args.extend(m.iter().map(String::as_str));
    engine(d, &args);
    m
}

fn with<'a>(head: &[&'a str], members: &'a [String]) -> Vec<&'a str> {
    let mut v = head.to_vec();
    v.extend(members.iter().map(String::as_str));
    v
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

/// Runs `cmd` to its end, killed after 30 s (a client that trusted a squatter could
/// wait for it forever).
fn bounded(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// `program args` run as nobody:nogroup without supplementary groups.
fn as_nobody(program: &str) -> Command {
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=nobody",
        "--regid=nogroup",
        "--clear-groups",
        program,
    ]);
    c
}

/// The python3 nobody can run, if any.
fn python_for_nobody() -> Option<&'static str> {
    ["/usr/bin/python3", "python3"].into_iter().find(|p| {
        as_nobody(p)
            .args(["-c", "pass"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// True, after saying why, when clients cannot be run as another uid here.
fn without_other_uid(test_dir: &Path) -> bool {
    let why = if rustix::process::geteuid().as_raw() != 0 {
        Some("not running as root")
    } else if !as_nobody("true").output().is_ok_and(|o| o.status.success()) {
        Some("setpriv (util-linux) or the user nobody/nogroup is missing")
    } else if !as_nobody(ENGINE)
        .arg("--version")
        .current_dir(test_dir)
        .output()
        .is_ok_and(|o| o.status.success())
    {
        Some("nobody cannot run the engine binary (its directory is private)")
    } else {
        None
    };
    if let Some(why) = why {
        eprintln!("skipped: {why}");
    }
    why.is_some()
}

/// A test directory others may enter (tempfile makes it 0700).
fn open_tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    chmod(dir.path(), 0o755);
    dir
}

/// `serve` on the members, with `env` set (XDG_RUNTIME_DIR, TMPDIR), its stderr in
/// `log`.
fn serve_with(d: &Path, env: &[(&str, &Path)], members: &[String], log: &Path) -> Server {
    let (listen, port) = free_listen_address();
    let mut c = engine_command(d);
    for (k, v) in env {
        c.env(k, v);
    }
    let child = c
        .args(["serve", "--listen", &listen])
        .args(members)
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let s = Server(child, port, None);
    wait_listening(&listen);
    s
}

/// The status report of the served array (as root, through the server).
fn served_status(d: &Path, env: &[(&str, &Path)], members: &[String]) -> Value {
    let mut c = engine_command(d);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = bounded(c.args(with(&["status", "--json"], members)));
    assert!(o.status.success(), "{:?}", text(&o));
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["served"], true, "{s}");
    s
}

/// A raw connection as nobody to socket `sock`: sends `request`, returns the reply line.
fn raw_request_as_nobody(python: &str, sock: &Path, request: &str) -> String {
    let o = bounded(as_nobody(python).args([
        "-c",
        "import socket, sys\n\
         s = socket.socket(socket.AF_UNIX); s.settimeout(20); s.connect(sys.argv[1])\n\
         s.sendall(sys.argv[2].encode() + b'\\n')\n\
         print(s.makefile().readline().strip())\n",
        &sock.display().to_string(),
        request,
    ]));
    let (out, err) = text(&o);
    assert!(o.status.success(), "raw client: {out}{err}");
    out
}

/// A fake server as nobody (python3) on `sock`: every request gets a clean scrub
/// report. Killed on drop.
struct NobodyListener(Child);

impl NobodyListener {
    fn start(python: &str, sock: &Path) -> Self {
        let mut child = as_nobody(python)
            .args([
                "-c",
                "import socket, sys, signal\n\
                 signal.alarm(60)\n\
                 s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)\n\
                 print('ready', flush=True)\n\
                 while True:\n\
                 \x20   c, _ = s.accept()\n\
                 \x20   try:\n\
                 \x20       c.recv(65536)\n\
                 \x20       c.sendall(b'{\"ok\": {\"stripes_checked\": 1, \"mismatched_stripes\": 0, \"repaired_stripes\": 0, \"read_errors_corrected\": 0}}\\n')\n\
                 \x20   except OSError:\n\
                 \x20       pass\n\
                 \x20   c.close()\n",
                &sock.display().to_string(),
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready", "the fake listener did not start");
        Self(child)
    }
}

impl Drop for NobodyListener {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fake server in this process (root) on `sock`, answering a clean scrub report and
/// counting the requests it got. Stopped on drop.
struct FakeListener {
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeListener {
    fn start(sock: &Path) -> Self {
        let listener = UnixListener::bind(sock).unwrap();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicUsize::new(0));
        let (s, a) = (stop.clone(), answered.clone());
        let thread = std::thread::spawn(move || {
            let t0 = Instant::now();
            while !s.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(60) {
                match listener.accept() {
                    Ok((mut c, _)) => {
                        c.set_nonblocking(false).unwrap();
                        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                        let mut b = [0u8; 4096];
                        let _ = c.read(&mut b);
                        let _ = c.write_all(
                            b"{\"ok\": {\"stripes_checked\": 1, \"mismatched_stripes\": 0, \
                              \"repaired_stripes\": 0, \"read_errors_corrected\": 0}}\n",
                        );
                        a.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Self {
            stop,
            answered,
            thread: Some(thread),
        }
    }
}

impl Drop for FakeListener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `check` as root with XDG_RUNTIME_DIR `xdg`: asserts it refuses (exit code 2, one
/// error line containing `why`, no report on stdout).
fn check_refuses(d: &Path, xdg: &Path, members: &[String], why: &str) {
    let o = bounded(
        engine_command(d)
            .env("XDG_RUNTIME_DIR", xdg)
            .args(with(&["check"], members)),
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(out.is_empty(), "a report from a squatter: {out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains(why), "{err}");
    assert!(err.contains("refusing"), "{err}");
}

#[test]
fn another_uid_cannot_fail_a_member_or_check_through_the_socket() {
    let dir = open_tempdir();
    let d = dir.path();
    if without_other_uid(d) {
        return;
    }
    let m = create(d);
    // Members are made 0600; opened to reading (0644), nobody finds the array's UUID
    // in their superblocks and reaches for its socket: what this test is about.
    for f in &m {
        chmod(Path::new(f), 0o644);
    }
    let run = d.join("run");
    std::fs::create_dir(&run).unwrap();
    chmod(&run, 0o755);
    let env = [("XDG_RUNTIME_DIR", run.as_path())];
    let log = d.join("serve.log");
    let server = serve_with(d, &env, &m, &log);

    // Where the socket is, and its modes: 0700 directory, 0600 socket, owned by root.
    let sock_dir = run.join("raidlab");
    let sock = sock_dir.join(format!("{UUID}.sock"));
    let (dm, sm) = (
        std::fs::symlink_metadata(&sock_dir).unwrap(),
        std::fs::symlink_metadata(&sock).unwrap(),
    );
    assert_eq!((dm.mode() & 0o7777, dm.uid()), (0o700, 0));
    assert_eq!((sm.mode() & 0o777, sm.uid()), (0o600, 0));
    let events = served_status(d, &env, &m)["events"].clone();

    // The engine as nobody, told where root's socket is: the private directory keeps
    // it out; nothing is failed, no report printed.
    for args in [with(&["fail", "1"], &m), with(&["check"], &m)] {
        let o = bounded(
            as_nobody(ENGINE)
                .current_dir(d)
                .env("XDG_RUNTIME_DIR", &run)
                .args(&args),
        );
        let (out, err) = text(&o);
        assert_ne!(o.status.code(), Some(0), "{args:?}: {out}{err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(err.contains("Permission denied"), "{args:?}: {err}");
    }

    // Even with the directory and socket opened to everyone (what umask 000 did), the
    // server answers another uid with one refusal line and does nothing.
    match python_for_nobody() {
        None => eprintln!("skipped the raw-socket part: no python3 nobody can run"),
        Some(py) => {
            chmod(&sock_dir, 0o777);
            chmod(&sock, 0o666);
            for req in [r#"{"cmd": "fail", "target": "1"}"#, r#"{"cmd": "check"}"#] {
                let reply = raw_request_as_nobody(py, &sock, req);
                let v: Value = serde_json::from_str(&reply).unwrap();
                let e = v["error"].as_str().unwrap_or_default();
                assert!(e.contains("uid 65534 may not use this server"), "{reply}");
            }
            // Now the engine's own client refuses the loose directory as well.
            let o = bounded(
                as_nobody(ENGINE)
                    .current_dir(d)
                    .env("XDG_RUNTIME_DIR", &run)
                    .args(with(&["fail", "1"], &m)),
            );
            let (out, err) = text(&o);
            assert_eq!(o.status.code(), Some(2), "{out}{err}");
            assert!(err.contains("mode 0777"), "{err}");
            chmod(&sock_dir, 0o700);
        }
    }
    let s = served_status(d, &env, &m);
    assert_eq!(s["failed"], serde_json::json!([]), "{s}");
    assert_eq!(s["events"], events, "{s}");
    server.stop();
    let log = std::fs::read_to_string(&log).unwrap();
    if python_for_nobody().is_some() {
        assert!(
            log.contains("refused pid") && log.contains("uid 65534"),
            "{log}"
        );
    }
}

#[test]
fn a_squatted_socket_or_directory_is_refused_by_the_client() {
    let dir = open_tempdir();
    let d = dir.path();
    let m = create(d);

    // A directory with group/other bits, a listener in it answering "0 mismatched".
    let run = d.join("run-loose");
    std::fs::create_dir_all(run.join("raidlab")).unwrap();
    chmod(&run.join("raidlab"), 0o755);
    let fake = FakeListener::start(&run.join("raidlab").join(format!("{UUID}.sock")));
    check_refuses(d, &run, &m, "mode 0755");
    // serve refuses that directory too, rather than sharing it.
    let o = bounded(
        engine_command(d)
            .env("XDG_RUNTIME_DIR", &run)
            .args(with(&["serve", "--listen", "127.0.0.1:0"], &m)),
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("mode 0755") && err.contains("refusing"),
        "{err}"
    );
    // A symlink where the directory should be.
    let link = d.join("run-link");
    std::fs::create_dir_all(&link).unwrap();
    std::os::unix::fs::symlink(run.join("raidlab"), link.join("raidlab")).unwrap();
    check_refuses(d, &link, &m, "a symlink");
    assert_eq!(fake.answered.load(Ordering::SeqCst), 0);
    drop(fake);

    // A private directory, but the socket in it belongs to another user.
    let run = d.join("run-owner");
    let sock_dir = run.join("raidlab");
    std::fs::create_dir_all(&sock_dir).unwrap();
    chmod(&sock_dir, 0o700);
    let sock = sock_dir.join(format!("{UUID}.sock"));
    let fake = FakeListener::start(&sock);
    if rustix::process::geteuid().as_raw() == 0 {
        std::os::unix::fs::chown(&sock, Some(NOBODY), Some(NOBODY)).unwrap();
        check_refuses(d, &run, &m, "owned by uid 65534");
        assert_eq!(fake.answered.load(Ordering::SeqCst), 0);
    }
    drop(fake);

    if without_other_uid(d) {
        return;
    }
    let Some(py) = python_for_nobody() else {
        eprintln!("skipped the other-uid listeners: no python3 nobody can run");
        return;
    };
    // A directory another user made (0700, theirs), their listener in it.
    let run = d.join("run-theirs");
    let sock_dir = run.join("raidlab");
    std::fs::create_dir_all(&sock_dir).unwrap();
    chmod(&sock_dir, 0o700);
    std::os::unix::fs::chown(&sock_dir, Some(NOBODY), Some(NOBODY)).unwrap();
    let _theirs = NobodyListener::start(py, &sock_dir.join(format!("{UUID}.sock")));
    check_refuses(d, &run, &m, "owned by uid 65534");

    // Our directory, a root-owned socket file, but another uid's process answers on
    // it (bound elsewhere, moved in): the peer's credentials give it away.
    let theirs = d.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
    let bound = theirs.join("s.sock");
    let _listener = NobodyListener::start(py, &bound);
    let run = d.join("run-moved");
    let sock_dir = run.join("raidlab");
    std::fs::create_dir_all(&sock_dir).unwrap();
    chmod(&sock_dir, 0o700);
    let sock = sock_dir.join(format!("{UUID}.sock"));
    std::fs::rename(&bound, &sock).unwrap();
    std::os::unix::fs::chown(&sock, Some(0), Some(0)).unwrap();
    check_refuses(d, &run, &m, "of uid 65534");
}

#[test]
fn replace_onto_a_file_the_client_cannot_open_fails_in_the_client() {
    let dir = open_tempdir();
    let d = dir.path();
    if without_other_uid(d) {
        return;
    }
    // nobody's array, served by nobody: nobody's client is welcome on its socket.
    let nb = d.join("nb");
    std::fs::create_dir(&nb).unwrap();
    let m = create(&nb);
    for p in std::iter::once(nb.clone()).chain(m.iter().map(PathBuf::from)) {
        std::os::unix::fs::chown(&p, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let secret = d.join("secret");
    std::fs::write(&secret, b"root's own bytes\n").unwrap();
    chmod(&secret, 0o600);
    let before = std::fs::metadata(&secret).unwrap();

    let (listen, port) = free_listen_address();
    let log = d.join("serve.log");
    let child = as_nobody(ENGINE)
        .current_dir(&nb)
        .env("TMPDIR", &nb)
        .env_remove("XDG_RUNTIME_DIR")
        .args(with(&["serve", "--listen", &listen], &m))
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let server = Server(child, port, None);
    wait_listening(&listen);
    let nobody = |args: &[&str]| {
        bounded(
            as_nobody(ENGINE)
                .current_dir(&nb)
                .env("TMPDIR", &nb)
                .env_remove("XDG_RUNTIME_DIR")
                .args(args),
        )
    };
    let status = |who: &dyn Fn(&[&str]) -> Output| -> Value {
        let o = who(&with(&["status", "--json"], &m));
        assert!(o.status.success(), "{:?}", text(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let s0 = status(&nobody);
    assert_eq!(s0["served"], true, "{s0}");

    let secret_arg = secret.display().to_string();
    let o = nobody(&with(&["replace", "1", &secret_arg], &m));
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("secret") && err.contains("Permission denied"),
        "{err}"
    );
    let after = std::fs::metadata(&secret).unwrap();
    assert_eq!(std::fs::read(&secret).unwrap(), b"root's own bytes\n");
    assert_eq!(
        (after.len(), after.mode(), after.uid(), after.mtime()),
        (before.len(), before.mode(), before.uid(), before.mtime())
    );
    let s1 = status(&nobody);
    assert_eq!(s1["failed"], serde_json::json!([]), "{s1}");
    assert_eq!(s1["events"], s0["events"], "{s1}");

    // The same client onto a file it may open: the descriptor it passes is rebuilt.
    let m4 = nb.join("m4").display().to_string();
    let o = nobody(&with(&["replace", "1", &m4], &m));
    assert!(o.status.success(), "{:?}", text(&o));
    let s2 = status(&nobody);
    assert_eq!(s2["failed"], serde_json::json!([]), "{s2}");
    assert_eq!(s2["members"][1]["path"], m4.as_str(), "{s2}");
    assert_eq!(std::fs::metadata(&m4).unwrap().uid(), NOBODY);
    server.stop();
}

#[test]
fn a_second_serve_on_served_members_is_refused_naming_the_pid() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = create(d);
    let first = serve_with(d, &[], &m, &d.join("serve.log"));
    let pid = format!("pid {}", first.0.id());
    let other = d.join("other");
    std::fs::create_dir(&other).unwrap();
    // Another TMPDIR, then another XDG_RUNTIME_DIR: another control socket, the same
    // members.
    for (k, v) in [("TMPDIR", &other), ("XDG_RUNTIME_DIR", &other)] {
        let o = bounded(
            engine_command(d)
                .env(k, v)
                .args(with(&["serve", "--listen", "127.0.0.1:0"], &m)),
        );
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{k}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&pid) && err.contains("in use"), "{k}: {err}");
    }
    // Nor may create overwrite them.
    let o = bounded(engine_command(d).env("TMPDIR", &other).args(with(
        &["create", "--force-overwrite", &m[0], "--level", "5"],
        &m,
    )));
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(err.contains(&pid), "{err}");
    first.stop();
    // Once the server is gone, the members are free again.
    let o = engine_output(d, &with(&["status"], &m));
    assert!(o.status.success(), "{:?}", text(&o));
}

#[test]
fn an_offline_fail_while_served_is_refused_and_marks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = create(d);
    let server = serve_with(d, &[], &m, &d.join("serve.log"));
    let pid = format!("pid {}", server.0.id());
    let before = served_status(d, &[], &m);
    let other = d.join("other");
    std::fs::create_dir(&other).unwrap();
    // Its socket out of sight (another TMPDIR), the client would go offline: the
    // members' owner refuses it.
    let o = bounded(
        engine_command(d)
            .env("TMPDIR", &other)
            .args(with(&["fail", "1"], &m)),
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(err.contains(&pid), "{err}");
    let during = served_status(d, &[], &m);
    assert_eq!(during["failed"], serde_json::json!([]), "{during}");
    assert_eq!(during["events"], before["events"], "{during}");
    server.stop();
    let after: Value =
        serde_json::from_slice(&engine_output(d, &with(&["status", "--json"], &m)).stdout).unwrap();
    assert_eq!(after["served"], false, "{after}");
    assert_eq!(after["failed"], serde_json::json!([]), "{after}");
    for role in after["members"].as_array().unwrap() {
        assert_eq!(role["state"], "active", "{after}");
    }
}
