//! `raidlab-engine serve` on a free loopback port: started, waited for, stopped.

use super::binary::engine_command;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running server, its port and, for a server started with its stderr kept, the
/// thread that reads that stderr (what `stop_with_stderr` returns). Dropping it kills
/// the server, so a test that fails leaves none behind.
pub struct Server(pub Child, pub u16, pub Option<JoinHandle<String>>);

/// Starts `serve` on the array of `members` (options may lead: `--journal j`, ...).
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
    // Port 0: the server binds a port the kernel picks and names it in its "serving ...
    // on nbd://127.0.0.1:PORT" line. A port probed free and released beforehand could
    // be taken by a server another test starts in between, which `wait_listening` would
    // then find in place of this one.
    let mut command = engine_command(dir);
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(options)
        .args(members)
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let stderr = child.stderr.take().expect("stderr piped");
    let (port, said) = match std::panic::catch_unwind(|| served_port(stderr)) {
        Ok(served) => served,
        Err(panic) => {
            // Leave no server behind.
            let _ = child.kill();
            let _ = child.wait();
            std::panic::resume_unwind(panic)
        }
    };
    wait_listening(&format!("127.0.0.1:{port}"));
    Server(child, port, capture_stderr.then_some(said))
}

/// The port of the "serving ... on nbd://127.0.0.1:PORT" line `serve` prints once it
/// listens, and the thread that reads its stderr to the end (so the server never
/// blocks on a full pipe) and returns all of it, that line included.
fn served_port(stderr: std::process::ChildStderr) -> (u16, JoinHandle<String>) {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut said = String::new();
        let mut tx = Some(tx);
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let port = line
                .split("127.0.0.1:")
                .nth(1)
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|digits| digits.parse::<u16>().ok())
                .filter(|_| line.contains("serving"));
            if let Some(port) = port {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(Ok(port));
                }
            }
            said.push_str(&line);
            said.push('\n');
        }
        if let Some(tx) = tx {
            let _ = tx.send(Err(said.clone()));
        }
        said
    });
    // A dirty array resyncs before it listens.
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Ok(port)) => (port, reader),
        Ok(Err(said)) => panic!("server did not start: {said}"),
        Err(e) => panic!("server did not start: {e}"),
    }
}

/// A loopback address no one listens on (`127.0.0.1:port`) and its port, for a test
/// that must name its server's port before starting it. Taken below the kernel's
/// ephemeral range (`ip_local_port_range`), where servers on port 0 and client sockets
/// get theirs: all the tests share one process and run at once, so a port released
/// here and then given to another test's port-0 server would send this test's clients
/// to that server. Each call tries the next port of this process's own run of them.
pub fn free_listen_address() -> (String, u16) {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ephemeral_min: u32 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let low = ephemeral_min.saturating_sub(10_000).max(1024);
    let span = ephemeral_min.saturating_sub(low).max(1);
    let start = std::process::id() * 97 % span;
    for _ in 0..span {
        let port = (low + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return (format!("127.0.0.1:{port}"), port);
        }
    }
    panic!("no free loopback port in {low}..{ephemeral_min}");
}

/// Waits (20 s at most) until a server accepts connections on `listen`.
pub fn wait_listening(listen: &str) {
    let t0 = Instant::now();
    while TcpStream::connect(listen).is_err() {
        // A dirty array resyncs before it listens.
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A test that fails leaves no server behind.
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Server {
    /// The export's NBD URI.
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
        let status = self.0.wait().unwrap();
        let err = match self.2.take() {
            Some(reader) => reader.join().expect("stderr reader"),
            None => {
                let mut err = String::new();
                let mut stderr = self.0.stderr.take().expect("started with its stderr kept");
                stderr.read_to_string(&mut err).unwrap();
                err
            }
        };
        assert!(status.success(), "{err}");
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

    /// SIGKILL: no flush, no clean superblock, no bitmap clear (an unclean stop).
    pub fn kill(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}
