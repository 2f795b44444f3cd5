//! Shared by the tests that drive the `raidlab-engine` binary and real NBD clients.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// The binary run in `dir`, with `dir` as its TMPDIR: a test's servers and clients
/// meet on control sockets inside its own temporary directory.
pub fn engine_command(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_raidlab-engine"));
    c.current_dir(dir).env("TMPDIR", dir);
    c
}

pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

pub fn engine(dir: &Path, args: &[&str]) -> Output {
    let o = engine_command(dir).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

pub struct Server(pub Child, pub u16);

pub fn serve(dir: &Path, members: &[&str]) -> Server {
    spawn_server(dir, members, false)
}

/// Starts `raidlab-engine serve` on a free loopback port and waits until it accepts
/// connections; `capture_stderr` keeps its stderr readable (what it says it resynced),
/// else it is discarded.
pub fn spawn_server(dir: &Path, members: &[&str], capture_stderr: bool) -> Server {
    spawn_server_with(dir, &[], members, capture_stderr)
}

/// [`spawn_server`] with more `serve` options.
pub fn spawn_server_with(
    dir: &Path,
    options: &[&str],
    members: &[&str],
    capture_stderr: bool,
) -> Server {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let mut command = engine_command(dir);
    command
        .args(["serve", "--listen", &listen])
        .args(options)
        .args(members);
    // Not kept: discarded, so its "serving ..." and "stopped" lines do not run through
    // the test output.
    command.stderr(if capture_stderr {
        std::process::Stdio::piped()
    } else {
        std::process::Stdio::null()
    });
    let child = command.spawn().unwrap();
    let t0 = Instant::now();
    while TcpStream::connect(&listen).is_err() {
        // A dirty array resyncs before it listens.
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Server(child, port)
}

/// A test that fails leaves no server behind.
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Server {
    pub fn uri(&self) -> String {
        format!("nbd://127.0.0.1:{}", self.1)
    }
    /// SIGINT, for a server started with its stderr kept: asserts a clean exit and
    /// returns what it printed.
    pub fn stop_with_stderr(mut self) -> String {
        use std::io::Read;
        assert!(Command::new("kill")
            .args(["-INT", &self.0.id().to_string()])
            .status()
            .unwrap()
            .success());
        let mut err = String::new();
        let mut stderr = self.0.stderr.take().expect("started with its stderr kept");
        stderr.read_to_string(&mut err).unwrap();
        assert!(self.0.wait().unwrap().success(), "{err}");
        err
    }

    /// SIGINT: the server flushes and marks the array clean.
    pub fn stop(mut self) {
        let pid = self.0.id().to_string();
        assert!(Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success());
        assert!(self.0.wait().unwrap().success());
    }
}

pub fn run(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap();
    let t = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{cmd:?}: {t}");
    t
}

/// True, after saying the test is skipped, when qemu-io is missing.
pub fn without_qemu_io() -> bool {
    let missing = !have("qemu-io");
    if missing {
        eprintln!("skipped: qemu-io not installed (apt-get install qemu-utils)");
    }
    missing
}

/// True, after saying the test is skipped, when fio lacks its nbd engine.
pub fn without_fio_nbd() -> bool {
    let missing = !Command::new("fio")
        .arg("--enghelp")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("nbd"));
    if missing {
        eprintln!("skipped: fio with the nbd engine not installed (apt-get install fio)");
    }
    missing
}

/// Runs the binary expecting bad input: exit code 2 and one `error:` line, returned.
pub fn refused(dir: &Path, args: &[&str]) -> String {
    let o = engine_command(dir).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    err
}

/// qemu-io running `cmds` against `uri` in the background, its output discarded: a
/// stream of writes in flight while a test stops or kills the server.
pub fn qemu_io_in_background(uri: &str, cmds: &[String]) -> Child {
    Command::new("qemu-io")
        .args(["-f", "raw", uri])
        .args(cmds.iter().flat_map(|c| ["-c", c.as_str()]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}
