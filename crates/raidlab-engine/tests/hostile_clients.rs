//! `raidlab-engine serve` against hostile clients on raw sockets: silent connections
//! (more than --connections-max), pipelined 32 MiB READs whose replies are never read,
//! slowloris handshakes (a byte a second), oversized option lengths. While each attack
//! runs, a normal client (qemu-io reading 4 KiB, and nbdinfo, each skipped with a
//! message when not installed) must be served within 2 s, and the server's RSS (VmRSS
//! of /proc/PID/status) must stay under --memory-limit + 64 MiB. Also: the handshake
//! deadline, rate-limited refusal logs, export names (NBD_REP_ERR_UNKNOWN), unknown
//! command flags (EINVAL), the advertised maximum payload and the plain-text warning.
//! And every wait's deadline, with short flags so the suite takes seconds: idle and
//! stalled connections evicted for a newcomer (--evict-idle-after), a request or a
//! reply trickled a byte at a time cut at --io-timeout whole, clients that leave while
//! waiting for the budget freeing their slots at once, WRITE_ZEROES floods within the
//! budget, BLOCK_STATUS answers bounded per request, BLOCK_STATUS and connection floods
//! leaving no threads behind, and SIGTERM stopping the server within 5 s under one.

use crate::common;

use crate::common::{engine, free_listen_address, spawn_server_with, tool, Server};
use raidlab_engine::net::nbd::{protocol, server};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The budget the attacked servers run with: small, so the RSS bound means something.
const LIMIT_MIB: u64 = 64;
/// What the server's RSS may exceed the budget by.
const RSS_SLACK_MIB: u64 = 64;
/// What the server's RSS may exceed the budget by under a flood of large requests whose
/// buffers all come from the budget (threads' stacks, the binary, the allocator's own).
const FLOOD_SLACK_MIB: u64 = 32;
/// A normal client must be served within this while an attack runs.
const SERVED_WITHIN: Duration = Duration::from_secs(2);
/// Any one run of a normal client is killed after this (a hang fails the test).
const CLIENT_DEADLINE: Duration = Duration::from_secs(30);
const MIB: u64 = 1 << 20;

/// A RAID 0 of two 40 MiB members (78 MiB: room for 32 MiB reads) in `d`.
fn create(d: &Path) -> [&'static str; 2] {
    engine(
        d,
        &[
            "create", "--level", "0", "--size", "40M", "--uuid", "16", "a", "b",
        ],
    );
    ["a", "b"]
}

/// The array served with `--memory-limit 64M` and `options`.
fn attacked_server(d: &Path, options: &[&str], capture_stderr: bool) -> Server {
    let members = create(d);
    let limit = format!("{LIMIT_MIB}M");
    let mut o = vec!["--memory-limit", limit.as_str()];
    o.extend_from_slice(options);
    spawn_server_with(d, &o, &members, capture_stderr)
}

fn addr(s: &Server) -> String {
    format!("127.0.0.1:{}", s.1)
}

/// VmRSS of `pid` in bytes.
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("VmRSS in /proc/PID/status");
    kib * 1024
}

/// Samples the server's RSS every 50 ms until dropped; `max()` is the peak seen.
struct RssWatch {
    peak: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl RssWatch {
    fn start(pid: u32) -> Self {
        let peak = Arc::new(AtomicU64::new(rss_bytes(pid)));
        let done = Arc::new(AtomicBool::new(false));
        let thread = {
            let (peak, done) = (peak.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    peak.fetch_max(rss_bytes(pid), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        };
        Self {
            peak,
            done,
            thread: Some(thread),
        }
    }

    /// Stops sampling; asserts the peak stayed under the budget plus the slack.
    fn assert_bounded(self, what: &str) -> u64 {
        self.assert_bounded_by(what, RSS_SLACK_MIB)
    }

    /// Stops sampling; asserts the peak stayed under the budget plus `slack_mib`.
    fn assert_bounded_by(mut self, what: &str, slack_mib: u64) -> u64 {
        self.stop();
        let peak = self.peak.load(Ordering::Relaxed);
        eprintln!("{what}: server RSS peak {} MiB", peak / MIB);
        assert!(
            peak < (LIMIT_MIB + slack_mib) * MIB,
            "{what}: RSS {} MiB over {LIMIT_MIB} MiB + {slack_mib} MiB",
            peak / MIB
        );
        peak
    }

    fn stop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for RssWatch {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `cmd` killed after [`CLIENT_DEADLINE`]: whether it exited 0, how long it took,
/// and its output.
fn timed(cmd: &mut Command) -> (bool, Duration, String) {
    let t0 = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let o = child.wait_with_output().unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            return (status.success(), t0.elapsed(), text);
        }
        if t0.elapsed() > CLIENT_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            return (
                false,
                t0.elapsed(),
                format!("{cmd:?}: killed after {CLIENT_DEADLINE:?}"),
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The normal clients installed: qemu-io reading 4 KiB, nbdinfo (which reads the start
/// of the export to name its content). Empty, after saying so, when neither is.
fn normal_clients(uri: &str) -> Vec<(&'static str, Command)> {
    let mut clients = Vec::new();
    if tool("qemu-io") {
        let mut c = Command::new("qemu-io");
        c.args(["-f", "raw", uri, "-c", "read -P 0 0 4k"]);
        clients.push(("qemu-io read 4k", c));
    }
    if tool("nbdinfo") {
        let mut c = Command::new("nbdinfo");
        c.arg(uri);
        clients.push(("nbdinfo", c));
    }
    clients
}

/// Each normal client, run up to 3 times (the machine may be loaded): every run must
/// succeed, and one of them within [`SERVED_WITHIN`].
fn assert_normal_clients_served(uri: &str, what: &str) {
    for (name, mut cmd) in normal_clients(uri) {
        let mut times = Vec::new();
        for _ in 0..3 {
            let (ok, took, text) = timed(&mut cmd);
            assert!(ok, "{what}: {name} failed after {took:?}: {text}");
            times.push(took);
            if took < SERVED_WITHIN {
                break;
            }
        }
        eprintln!("{what}: {name} served in {times:?}");
        assert!(
            times.iter().any(|t| *t < SERVED_WITHIN),
            "{what}: {name} took {times:?}, never under {SERVED_WITHIN:?}"
        );
    }
}

/// Runs every normal client once before an attack: binaries and libraries are loaded,
/// so the timed runs measure the server.
fn warm_up(uri: &str) {
    for (name, mut cmd) in normal_clients(uri) {
        let (ok, took, text) = timed(&mut cmd);
        assert!(ok, "warm-up: {name} failed after {took:?}: {text}");
    }
}

fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// Reads the server's greeting and answers with fixed newstyle and NO_ZEROES.
fn greet(s: &mut TcpStream) {
    let mut hello = [0u8; 18];
    s.read_exact(&mut hello).unwrap();
    assert_eq!(&hello[..8], b"NBDMAGIC");
    s.write_all(&3u32.to_be_bytes()).unwrap();
}

fn option(opt: u32, data: &[u8]) -> Vec<u8> {
    let mut b = protocol::IHAVEOPT.to_be_bytes().to_vec();
    b.extend_from_slice(&opt.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    b
}

/// NBD_OPT_GO for `name`, asking for NBD_INFO_BLOCK_SIZE.
fn go_option(name: &[u8]) -> Vec<u8> {
    let mut data = (name.len() as u32).to_be_bytes().to_vec();
    data.extend_from_slice(name);
    data.extend_from_slice(&1u16.to_be_bytes());
    data.extend_from_slice(&protocol::INFO_BLOCK_SIZE.to_be_bytes());
    option(protocol::OPT_GO, &data)
}

/// One option reply: its type and payload.
fn opt_reply(s: &mut TcpStream) -> (u32, Vec<u8>) {
    let mut h = [0u8; 20];
    s.read_exact(&mut h).unwrap();
    assert_eq!(
        u64::from_be_bytes(h[..8].try_into().unwrap()),
        protocol::OPT_REPLY_MAGIC
    );
    let kind = u32::from_be_bytes(h[12..16].try_into().unwrap());
    let len = u32::from_be_bytes(h[16..20].try_into().unwrap());
    let mut data = vec![0u8; len as usize];
    s.read_exact(&mut data).unwrap();
    (kind, data)
}

/// NBD_OPT_GO for `name`: the final reply type and the advertised (min, preferred,
/// max) block sizes when the server sent them.
fn go(s: &mut TcpStream, name: &[u8]) -> (u32, Option<(u32, u32, u32)>) {
    s.write_all(&go_option(name)).unwrap();
    let mut block = None;
    loop {
        let (kind, data) = opt_reply(s);
        if kind != protocol::REP_INFO {
            return (kind, block);
        }
        if u16::from_be_bytes([data[0], data[1]]) == protocol::INFO_BLOCK_SIZE {
            let v = |at: usize| u32::from_be_bytes(data[at..at + 4].try_into().unwrap());
            block = Some((v(2), v(6), v(10)));
        }
    }
}

/// A connection in transmission (GO on the default export).
fn transmitting(addr: &str) -> TcpStream {
    let mut s = connect(addr);
    greet(&mut s);
    assert_eq!(go(&mut s, b"").0, protocol::REP_ACK);
    s
}

fn request(flags: u16, cmd: u16, cookie: u64, offset: u64, len: u32) -> Vec<u8> {
    let mut b = protocol::REQUEST_MAGIC.to_be_bytes().to_vec();
    b.extend_from_slice(&flags.to_be_bytes());
    b.extend_from_slice(&cmd.to_be_bytes());
    b.extend_from_slice(&cookie.to_be_bytes());
    b.extend_from_slice(&offset.to_be_bytes());
    b.extend_from_slice(&len.to_be_bytes());
    b
}

/// A simple reply's error and cookie.
fn simple_reply(s: &mut TcpStream) -> (u32, u64) {
    let mut h = [0u8; 16];
    s.read_exact(&mut h).unwrap();
    assert_eq!(
        u32::from_be_bytes(h[..4].try_into().unwrap()),
        protocol::SIMPLE_REPLY_MAGIC
    );
    (
        u32::from_be_bytes(h[4..8].try_into().unwrap()),
        u64::from_be_bytes(h[8..16].try_into().unwrap()),
    )
}

/// Whether the server closed `s` within `within` (EOF or a reset on read), reading and
/// dropping whatever it sends before.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let t0 = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut sink = [0u8; 4096];
    while t0.elapsed() < within {
        match s.read(&mut sink) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn silent_connections_beyond_every_slot_lock_no_one_out_and_meet_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = attacked_server(
        d,
        &[
            "--connections-max",
            "4",
            "--handshakes-max",
            "8",
            "--handshake-timeout",
            "4",
        ],
        false,
    );
    let uri = server.uri();
    warm_up(&uri);
    let watch = RssWatch::start(server.0.id());
    // Six times the transmission slots, three times the handshake slots: silent.
    let mut silent: Vec<TcpStream> = (0..24).map(|_| connect(&addr(&server))).collect();
    std::thread::sleep(Duration::from_millis(300));
    assert_normal_clients_served(&uri, "24 silent connections");
    // A working client keeps a transmission slot while silent ones come and go.
    let mut worker = transmitting(&addr(&server));
    let more: Vec<TcpStream> = (0..24).map(|_| connect(&addr(&server))).collect();
    worker
        .write_all(&request(0, protocol::CMD_READ, 7, 0, 4096))
        .unwrap();
    assert_eq!(simple_reply(&mut worker), (0, 7));
    worker.read_exact(&mut [0u8; 4096]).unwrap();
    assert_normal_clients_served(&uri, "48 silent connections");
    watch.assert_bounded("silent connections");
    // None of them finishes a handshake: every one is closed by the deadline (4 s) or
    // for a newcomer, well before 4 s + a generous margin.
    let t0 = Instant::now();
    silent.extend(more);
    for s in &mut silent {
        let left = Duration::from_secs(20).saturating_sub(t0.elapsed());
        assert!(
            closed_within(s, left),
            "a silent connection outlived the deadline"
        );
    }
    // The deadline alone: a silent connection in a free handshake slot.
    let mut lone = connect(&addr(&server));
    let t1 = Instant::now();
    assert!(closed_within(&mut lone, Duration::from_secs(20)));
    let lived = t1.elapsed();
    assert!(
        lived >= Duration::from_secs(3) && lived < Duration::from_secs(15),
        "closed after {lived:?} with a 4 s deadline"
    );
    // The worker was not closed by any of it.
    worker
        .write_all(&request(0, protocol::CMD_READ, 8, 4096, 4096))
        .unwrap();
    let (err, cookie) = simple_reply(&mut worker);
    assert_eq!((err, cookie), (0, 8));
    server.stop();
}

/// Connections in transmission that send `requests` READs of 32 MiB back to back and
/// never read a reply.
fn unread_reads(addr: &str, connections: usize, requests: usize) -> Vec<TcpStream> {
    (0..connections)
        .map(|c| {
            let mut s = transmitting(addr);
            let mut burst = Vec::new();
            for i in 0..requests {
                burst.extend(request(
                    0,
                    protocol::CMD_READ,
                    (c * requests + i) as u64,
                    0,
                    32 << 20,
                ));
            }
            s.write_all(&burst).unwrap();
            s
        })
        .collect()
}

#[test]
fn pipelined_unread_32_mib_reads_stay_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = attacked_server(
        d,
        &["--requests-in-flight", "64", "--io-timeout", "60"],
        false,
    );
    let uri = server.uri();
    warm_up(&uri);
    let watch = RssWatch::start(server.0.id());
    // 8 connections x 64 in flight x 32 MiB: 16 GiB without the budget.
    let attackers = unread_reads(&addr(&server), 8, 64);
    // Let the server fill every buffer it is allowed to.
    std::thread::sleep(Duration::from_secs(3));
    assert_normal_clients_served(&uri, "8 connections of unread 32 MiB reads");
    std::thread::sleep(Duration::from_secs(1));
    let peak = watch.assert_bounded("unread 32 MiB reads");
    // The attack did take memory (the budget is used, not bypassed).
    assert!(
        peak > 32 * MIB,
        "RSS peak {} MiB: the reads were not served",
        peak / MIB
    );
    drop(attackers);
    server.stop();
}

#[test]
fn a_client_that_never_reads_its_replies_gives_its_budget_back_after_the_io_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = attacked_server(d, &["--io-timeout", "2"], false);
    let mut stuck = unread_reads(&addr(&server), 1, 8).pop().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // The stuck client holds 32 MiB of the 48 MiB shared part: a second 32 MiB read
    // waits until the stuck reply has moved no byte for 2 s (the socket buffers grow
    // for a few seconds first) and the stuck connection is closed.
    let t0 = Instant::now();
    let mut next = transmitting(&addr(&server));
    next.write_all(&request(0, protocol::CMD_READ, 1, 0, 32 << 20))
        .unwrap();
    assert_eq!(simple_reply(&mut next), (0, 1));
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_millis(1500) && waited < Duration::from_secs(20),
        "the second 32 MiB read waited {waited:?}"
    );
    let mut data = vec![0u8; 32 << 20];
    next.read_exact(&mut data).unwrap();
    // What the kernel held of the stuck replies drains, then the connection ends.
    assert!(closed_within(&mut stuck, Duration::from_secs(20)));
    server.stop();
}

/// A handshake sent a byte a second over `connections` connections, reopened when the
/// server closes them, until `stop`; returns the longest a connection lived.
fn slowloris(addr: String, connections: usize, stop: Arc<AtomicBool>) -> JoinHandle<Duration> {
    std::thread::spawn(move || {
        let mut handshake = 3u32.to_be_bytes().to_vec();
        handshake.extend(go_option(b""));
        let mut conns: Vec<(TcpStream, Instant, usize)> = Vec::new();
        let mut longest = Duration::ZERO;
        while !stop.load(Ordering::Relaxed) {
            while conns.len() < connections {
                if let Ok(s) = TcpStream::connect(&addr) {
                    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
                    conns.push((s, Instant::now(), 0));
                }
            }
            conns.retain_mut(|(s, born, sent)| {
                let byte = [handshake[*sent % handshake.len()]];
                let wrote = s.write(&byte).is_ok_and(|n| n == 1);
                *sent += 1;
                let mut sink = [0u8; 64];
                let closed = !wrote
                    || matches!(s.read(&mut sink), Ok(0))
                    || matches!(s.read(&mut sink), Err(e) if e.kind() != std::io::ErrorKind::WouldBlock);
                if closed {
                    longest = longest.max(born.elapsed());
                }
                !closed
            });
            std::thread::sleep(Duration::from_secs(1));
        }
        for (s, born, _) in &conns {
            longest = longest.max(born.elapsed());
            let _ = s.shutdown(Shutdown::Both);
        }
        longest
    })
}

#[test]
fn slowloris_handshakes_are_cut_at_the_deadline_and_lock_no_one_out() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = attacked_server(
        d,
        &[
            "--connections-max",
            "4",
            "--handshakes-max",
            "16",
            "--handshake-timeout",
            "3",
        ],
        false,
    );
    let uri = server.uri();
    warm_up(&uri);
    let watch = RssWatch::start(server.0.id());
    let stop = Arc::new(AtomicBool::new(false));
    let attack = slowloris(addr(&server), 12, stop.clone());
    std::thread::sleep(Duration::from_secs(2));
    assert_normal_clients_served(&uri, "12 slowloris handshakes");
    // Long enough for the deadline to cut the first wave.
    std::thread::sleep(Duration::from_secs(5));
    assert_normal_clients_served(&uri, "12 slowloris handshakes, second wave");
    stop.store(true, Ordering::Relaxed);
    let longest = attack.join().unwrap();
    watch.assert_bounded("slowloris");
    // A connection lives until the deadline (3 s) and the attacker's next byte.
    assert!(
        longest >= Duration::from_secs(3) && longest < Duration::from_secs(10),
        "a slowloris connection lived {longest:?} with a 3 s deadline"
    );
    server.stop();
}

#[test]
fn oversized_options_are_refused_at_once_and_logged_rate_limited() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = attacked_server(d, &["--handshakes-max", "32"], true);
    let uri = server.uri();
    warm_up(&uri);
    let watch = RssWatch::start(server.0.id());
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let floods: Vec<_> = (0..3)
        .map(|_| {
            let (addr, stop) = (addr(&server), stop.clone());
            std::thread::spawn(move || {
                let mut refused = 0u32;
                // Options claiming 4 GiB, 64 KiB + 1 and 64 KiB (allowed, never sent).
                let lens = [
                    u32::MAX - 15,
                    server::OPTION_BYTES_MAX + 1,
                    server::OPTION_BYTES_MAX,
                ];
                let mut held = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    for len in lens {
                        let mut s = connect(&addr);
                        // On a loaded machine this connection's server thread may not
                        // run before the flood's own newer connections push it out of
                        // the handshake slots (the oldest unfinished goes): closed
                        // before its greeting, as the policy says.
                        let mut hello = [0u8; 18];
                        if s.read_exact(&mut hello).is_err() {
                            continue;
                        }
                        s.write_all(&3u32.to_be_bytes()).unwrap();
                        let mut o = protocol::IHAVEOPT.to_be_bytes().to_vec();
                        o.extend_from_slice(&protocol::OPT_GO.to_be_bytes());
                        o.extend_from_slice(&len.to_be_bytes());
                        o.extend_from_slice(&[0u8; 1024]);
                        let _ = s.write_all(&o);
                        if len > server::OPTION_BYTES_MAX {
                            assert!(
                                closed_within(&mut s, Duration::from_secs(10)),
                                "an option of {len} B was not refused"
                            );
                            refused += 1;
                        } else {
                            held.push(s);
                        }
                    }
                }
                refused
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    assert_normal_clients_served(&uri, "oversized options");
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    let refused: u32 = floods.into_iter().map(|f| f.join().unwrap()).sum();
    let flooded_s = t0.elapsed().as_secs() as usize + 1;
    watch.assert_bounded("oversized options");
    assert!(refused >= 20, "only {refused} oversized options sent");
    let stderr = server.stop_with_stderr();
    let refusals = stderr.lines().filter(|l| l.contains("option of")).count();
    assert!(
        stderr.contains("similar messages"),
        "{refused} refusals and no suppression: {stderr}"
    );
    // At most 10 lines a second while the attack ran.
    assert!(
        refusals < refused as usize && refusals <= 10 * flooded_s,
        "{refusals} refusal lines for {refused} refusals in {flooded_s} s"
    );
}

#[test]
fn export_names_flags_and_the_maximum_payload_follow_the_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let members = create(d);
    let server = spawn_server_with(
        d,
        &[
            "--name",
            "vol0",
            "--memory-limit",
            "2M",
            "--connections-max",
            "2",
        ],
        &members,
        false,
    );
    let a = addr(&server);
    // The named export and the empty (default) one; anything else is unknown.
    for (name, want) in [
        (&b"vol0"[..], protocol::REP_ACK),
        (b"", protocol::REP_ACK),
        (b"raidlab", protocol::REP_ERR_UNKNOWN),
        (b"VOL0", protocol::REP_ERR_UNKNOWN),
    ] {
        let mut s = connect(&a);
        greet(&mut s);
        let (kind, block) = go(&mut s, name);
        assert_eq!(kind, want, "{:?}", String::from_utf8_lossy(name));
        if want == protocol::REP_ACK {
            // Half the budget is shared (the rest: 2 x 512 KiB reserves).
            assert_eq!(block, Some((512, 4096, 1 << 20)));
            s.write_all(&request(0, protocol::CMD_DISC, 0, 0, 0))
                .unwrap();
            // Its transmission slot is free again once it is closed.
            assert!(closed_within(&mut s, Duration::from_secs(10)));
        }
    }
    // NBD_OPT_LIST names it.
    let mut s = connect(&a);
    greet(&mut s);
    s.write_all(&option(protocol::OPT_LIST, &[])).unwrap();
    let (kind, data) = opt_reply(&mut s);
    assert_eq!((kind, &data[4..]), (protocol::REP_SERVER, &b"vol0"[..]));
    // EXPORT_NAME of an unknown name: the protocol's only answer is hanging up.
    let mut s = connect(&a);
    greet(&mut s);
    s.write_all(&option(protocol::OPT_EXPORT_NAME, b"nosuch"))
        .unwrap();
    assert!(closed_within(&mut s, Duration::from_secs(10)));
    // Requests above the maximum payload, and unknown command flags: EINVAL.
    let mut s = transmitting(&a);
    s.write_all(&request(0, protocol::CMD_READ, 1, 0, 2 << 20))
        .unwrap();
    assert_eq!(simple_reply(&mut s), (protocol::EINVAL, 1));
    s.write_all(&request(1 << 5, protocol::CMD_READ, 2, 0, 4096))
        .unwrap();
    assert_eq!(simple_reply(&mut s), (protocol::EINVAL, 2));
    s.write_all(&request(
        protocol::CMD_FLAG_NO_HOLE,
        protocol::CMD_FLUSH,
        3,
        0,
        0,
    ))
    .unwrap();
    assert_eq!(simple_reply(&mut s), (protocol::EINVAL, 3));
    // A write with an unknown flag: its payload is skipped, the connection goes on.
    let mut w = request(1 << 9, protocol::CMD_WRITE, 4, 0, 4096);
    w.extend_from_slice(&[0xee; 4096]);
    s.write_all(&w).unwrap();
    assert_eq!(simple_reply(&mut s), (protocol::EINVAL, 4));
    // Known flags still work: FUA on a write, NO_HOLE on write zeroes, FUA on a read.
    let mut w = request(protocol::CMD_FLAG_FUA, protocol::CMD_WRITE, 5, 0, 4096);
    w.extend_from_slice(&[0xab; 4096]);
    s.write_all(&w).unwrap();
    assert_eq!(simple_reply(&mut s), (0, 5));
    let zero = protocol::CMD_FLAG_NO_HOLE | protocol::CMD_FLAG_FUA;
    s.write_all(&request(zero, protocol::CMD_WRITE_ZEROES, 6, 4096, 4096))
        .unwrap();
    assert_eq!(simple_reply(&mut s), (0, 6));
    s.write_all(&request(
        protocol::CMD_FLAG_FUA,
        protocol::CMD_READ,
        7,
        0,
        8192,
    ))
    .unwrap();
    assert_eq!(simple_reply(&mut s), (0, 7));
    let mut back = vec![0u8; 8192];
    s.read_exact(&mut back).unwrap();
    assert!(
        back[..4096].iter().all(|b| *b == 0xab),
        "the refused write left no trace"
    );
    assert!(back[4096..].iter().all(|b| *b == 0));
    // The largest request allowed is served.
    s.write_all(&request(0, protocol::CMD_READ, 8, 0, 1 << 20))
        .unwrap();
    assert_eq!(simple_reply(&mut s), (0, 8));
    let mut big = vec![0u8; 1 << 20];
    s.read_exact(&mut big).unwrap();
    server.stop();
}

#[test]
fn connections_past_the_transmission_slots_are_refused_at_go() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let members = create(d);
    // Never idle long enough to be evicted for a newcomer (that is the test above).
    let server = spawn_server_with(
        d,
        &["--connections-max", "1", "--evict-idle-after", "3600"],
        &members,
        false,
    );
    let a = addr(&server);
    // Two handshakes at once: both get slots to negotiate, one gets to transmit.
    let mut first = connect(&a);
    let mut second = connect(&a);
    greet(&mut first);
    greet(&mut second);
    assert_eq!(go(&mut first, b"").0, protocol::REP_ACK);
    assert_eq!(go(&mut second, b"").0, protocol::REP_ERR_POLICY);
    // Once the first leaves, the second may try again on the same connection.
    first
        .write_all(&request(0, protocol::CMD_DISC, 0, 0, 0))
        .unwrap();
    assert!(closed_within(&mut first, Duration::from_secs(10)));
    let t0 = Instant::now();
    loop {
        let (kind, _) = go(&mut second, b"");
        if kind == protocol::REP_ACK {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "slot never freed");
        std::thread::sleep(Duration::from_millis(100));
    }
    second
        .write_all(&request(0, protocol::CMD_READ, 1, 0, 4096))
        .unwrap();
    assert_eq!(simple_reply(&mut second), (0, 1));
    server.stop();
}

#[test]
fn an_idle_connection_is_closed_after_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let members = create(d);
    let server = spawn_server_with(d, &["--idle-timeout", "2"], &members, false);
    let mut busy = transmitting(&addr(&server));
    let mut idle = transmitting(&addr(&server));
    let t0 = Instant::now();
    // A request every half second keeps a connection open past the timeout.
    for cookie in 0..8 {
        busy.write_all(&request(0, protocol::CMD_READ, cookie, 0, 4096))
            .unwrap();
        assert_eq!(simple_reply(&mut busy), (0, cookie));
        let mut data = [0u8; 4096];
        busy.read_exact(&mut data).unwrap();
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(closed_within(&mut idle, Duration::from_secs(20)));
    let lived = t0.elapsed();
    assert!(lived >= Duration::from_secs(2), "closed after {lived:?}");
    busy.write_all(&request(0, protocol::CMD_FLUSH, 99, 0, 0))
        .unwrap();
    assert_eq!(simple_reply(&mut busy), (0, 99));
    server.stop();
}

/// `serve --listen listen` on `members`: what it printed on stderr from its start to
/// its clean stop (SIGINT once it said it is serving, so its handlers are in place).
fn serve_stderr(d: &Path, listen: &str, members: &[&str]) -> String {
    use std::io::BufRead;
    let mut c = common::engine_command(d);
    c.args(["serve", "--listen", listen])
        .args(members)
        .stderr(Stdio::piped());
    let port = listen.rsplit(':').next().unwrap().parse().unwrap();
    let mut server = Server(c.spawn().unwrap(), port, None);
    let mut err = std::io::BufReader::new(server.0.stderr.take().unwrap());
    let mut text = String::new();
    while !text.contains("serving") {
        assert!(err.read_line(&mut text).unwrap() > 0, "exited: {text}");
    }
    let pid = server.0.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    err.read_to_string(&mut text).unwrap();
    assert!(server.0.wait().unwrap().success(), "{text}");
    text
}

#[test]
fn listening_off_loopback_without_tls_warns() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let members = create(d);
    let (_, port) = free_listen_address();
    let stderr = serve_stderr(d, &format!("0.0.0.0:{port}"), &members);
    assert!(
        stderr.contains("warning: nbd://0.0.0.0") && stderr.contains("no TLS"),
        "{stderr}"
    );
    let (listen, _) = free_listen_address();
    let stderr = serve_stderr(d, &listen, &members);
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// Sends GO again on `s` every 100 ms until it is acknowledged; how long that took, or
/// `None` when `within` passed first.
fn go_until_admitted(s: &mut TcpStream, within: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < within {
        if go(s, b"").0 == protocol::REP_ACK {
            return Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

#[test]
fn idle_and_stalled_connections_are_evicted_for_a_newcomer_and_busy_ones_never() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = attacked_server(
        d,
        &["--connections-max", "3", "--evict-idle-after", "1"],
        false,
    );
    let a = addr(&server);
    // One silent after GO, one stalled mid-request (half a header), one working.
    let mut idle = transmitting(&a);
    let mut stalled = transmitting(&a);
    stalled
        .write_all(&request(0, protocol::CMD_READ, 1, 0, 4096)[..10])
        .unwrap();
    let mut busy = transmitting(&a);
    let work = |s: &mut TcpStream, cookie: u64| {
        s.write_all(&request(0, protocol::CMD_READ, cookie, 0, 4096))
            .unwrap();
        assert_eq!(simple_reply(s), (0, cookie));
        s.read_exact(&mut [0u8; 4096]).unwrap();
    };
    // Two newcomers, each let in within the eviction age (1 s) and the time the
    // evicted connection takes to let go, with margin for a loaded machine (4 s failed
    // once at load 11 on two cores; what this guards against is a newcomer kept out
    // until some other timeout, the I/O timeout's 30 s).
    let mut newcomers = Vec::new();
    for cookie in 0..2 {
        let mut n = connect(&a);
        greet(&mut n);
        let t0 = Instant::now();
        let mut admitted = None;
        while admitted.is_none() && t0.elapsed() < Duration::from_secs(12) {
            work(&mut busy, 10 + cookie);
            admitted = go_until_admitted(&mut n, Duration::from_millis(200));
        }
        let took = t0.elapsed();
        assert!(
            admitted.is_some(),
            "newcomer {cookie} locked out for {took:?}"
        );
        assert!(
            took < Duration::from_secs(7),
            "newcomer {cookie} took {took:?}"
        );
        work(&mut n, 20 + cookie);
        newcomers.push(n);
    }
    // The idle and the stalled connections went; the one working stayed.
    assert!(closed_within(&mut idle, Duration::from_secs(5)));
    assert!(closed_within(&mut stalled, Duration::from_secs(5)));
    work(&mut busy, 30);
    server.stop();
}

#[test]
fn a_request_trickled_a_byte_at_a_time_is_cut_at_the_io_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = attacked_server(d, &["--io-timeout", "2"], false);
    let mut s = transmitting(&addr(&server));
    let mut write = request(0, protocol::CMD_WRITE, 1, 0, 4096);
    write.extend_from_slice(&[0x5a; 4096]);
    // A byte every 200 ms: never 2 s without progress, but the request would take
    // 14 minutes.
    let t0 = Instant::now();
    let mut closed = None;
    for byte in &write {
        if s.write_all(&[*byte]).is_err() || closed_within(&mut s, Duration::from_millis(200)) {
            closed = Some(t0.elapsed());
            break;
        }
        if t0.elapsed() > Duration::from_secs(10) {
            break;
        }
    }
    let lived = closed.expect("a trickled request outlived 10 s at --io-timeout 2");
    assert!(
        lived >= Duration::from_millis(1800)
            && lived < Duration::from_secs(3) + Duration::from_millis(700),
        "closed after {lived:?} at --io-timeout 2"
    );
    server.stop();
}

#[test]
fn a_reply_read_a_trickle_at_a_time_is_cut_at_the_io_timeout_whole() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = attacked_server(d, &["--io-timeout", "2"], false);
    let mut stuck = unread_reads(&addr(&server), 1, 8).pop().unwrap();
    // The client takes 32 KiB every 250 ms: the socket moves a little every time, so
    // a timeout that restarts on progress never fires.
    let stop = Arc::new(AtomicBool::new(false));
    let trickle = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut sink = vec![0u8; 32 << 10];
            stuck
                .set_read_timeout(Some(Duration::from_millis(250)))
                .unwrap();
            while !stop.load(Ordering::Relaxed) {
                if matches!(stuck.read(&mut sink), Ok(0)) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(250));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    // The stuck connection holds 32 MiB of the 48 MiB shared part: a second 32 MiB
    // read is served once the stuck reply is cut, 2 s after it started.
    let t0 = Instant::now();
    let mut next = transmitting(&addr(&server));
    next.set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    next.write_all(&request(0, protocol::CMD_READ, 1, 0, 32 << 20))
        .unwrap();
    let mut h = [0u8; 16];
    let got = next.read_exact(&mut h);
    let waited = t0.elapsed();
    stop.store(true, Ordering::Relaxed);
    trickle.join().unwrap();
    assert!(got.is_ok(), "the second read still waits after {waited:?}");
    assert!(
        waited < Duration::from_secs(5),
        "the second 32 MiB read waited {waited:?} at --io-timeout 2"
    );
    server.stop();
}

#[test]
fn clients_that_leave_while_waiting_for_the_budget_free_their_slots_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = attacked_server(d, &["--connections-max", "4", "--io-timeout", "60"], false);
    let a = addr(&server);
    // The hog holds the shared part for a minute with replies it never reads.
    let _hog = unread_reads(&a, 1, 8);
    std::thread::sleep(Duration::from_millis(500));
    // Three clients ask for 32 MiB, wait for the budget, and give up.
    for _ in 0..3 {
        let mut s = transmitting(&a);
        s.write_all(&request(0, protocol::CMD_READ, 1, 0, 32 << 20))
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        drop(s);
    }
    // Their slots are free well before the hog's I/O timeout (or the eviction age).
    let mut n = connect(&a);
    greet(&mut n);
    let took = go_until_admitted(&mut n, Duration::from_secs(8));
    assert!(
        took.is_some_and(|t| t < Duration::from_secs(3)),
        "a newcomer waited {took:?} for the slots of clients gone"
    );
    n.write_all(&request(0, protocol::CMD_READ, 2, 0, 4096))
        .unwrap();
    assert_eq!(simple_reply(&mut n), (0, 2));
    server.stop();
}

#[test]
fn write_zeroes_floods_stay_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = attacked_server(d, &["--requests-in-flight", "64"], false);
    let watch = RssWatch::start(server.0.id());
    let a = addr(&server);
    // 16 connections x 64 WRITE_ZEROES of 32 MiB each, replies read.
    let floods: Vec<_> = (0..16)
        .map(|c| {
            let a = a.clone();
            std::thread::spawn(move || {
                let mut s = transmitting(&a);
                let mut burst = Vec::new();
                for i in 0..64u64 {
                    let offset = (i % 2) * (32 << 20);
                    burst.extend(request(0, protocol::CMD_WRITE_ZEROES, i, offset, 32 << 20));
                }
                s.write_all(&burst).unwrap();
                for _ in 0..64 {
                    assert_eq!(simple_reply(&mut s).0, 0, "connection {c}");
                }
            })
        })
        .collect();
    for f in floods {
        f.join().unwrap();
    }
    // Every buffer of the flood is counted by the budget, so the peak stays near it:
    // what the allocator keeps of freed buffers must not add another budget's worth.
    watch.assert_bounded_by("write zeroes flood", FLOOD_SLACK_MIB);
    server.stop();
}

/// Threads of process `pid` (`Threads:` of /proc/PID/status).
fn threads(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("Threads in /proc/PID/status")
}

/// A connection in transmission with structured replies and `base:allocation`, or
/// `None` when the server refused or closed it.
fn block_status_client(addr: &str) -> Option<TcpStream> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut hello = [0u8; 18];
    s.read_exact(&mut hello).ok()?;
    let mut handshake = 3u32.to_be_bytes().to_vec();
    handshake.extend(option(
        raidlab_engine::net::nbd::structured::OPT_STRUCTURED_REPLY,
        &[],
    ));
    let meta = crate::nbd_wire::meta_query(&["base:allocation"]);
    handshake.extend(option(
        raidlab_engine::net::nbd::structured::OPT_SET_META_CONTEXT,
        &meta,
    ));
    handshake.extend(go_option(b""));
    s.write_all(&handshake).ok()?;
    let mut last = 0;
    // STRUCTURED ACK, META_CONTEXT + ACK, then GO's INFOs and its ACK or refusal.
    let mut acks = 0;
    while acks < 3 {
        let mut h = [0u8; 20];
        s.read_exact(&mut h).ok()?;
        last = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let len = u32::from_be_bytes(h[16..20].try_into().unwrap());
        std::io::copy(&mut (&mut s).take(u64::from(len)), &mut std::io::sink()).ok()?;
        if last == protocol::REP_ACK || last & (1 << 31) != 0 {
            acks += 1;
        }
    }
    (last == protocol::REP_ACK).then_some(s)
}

#[test]
fn block_status_and_connection_floods_stop_with_their_clients_and_sigterm_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 4 GiB of sparse members: a walk of the whole export is many lseeks.
    engine(
        d,
        &[
            "create", "--level", "0", "--sparse", "--chunk", "64K", "--size", "2G", "--uuid", "17",
            "a", "b",
        ],
    );
    let server = spawn_server_with(d, &[], &["a", "b"], false);
    let pid = server.0.id();
    let a = addr(&server);
    let baseline = threads(pid);
    // One answer covers a bounded part of the export (the protocol lets a server
    // answer a prefix), so one request is a bounded walk.
    let mut one = block_status_client(&a).expect("a block status client");
    let t0 = Instant::now();
    one.write_all(&request(0, 7, 1, 0, 3 << 30)).unwrap();
    let mut h = [0u8; 20];
    one.read_exact(&mut h).unwrap();
    let len = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
    let mut payload = vec![0u8; len];
    one.read_exact(&mut payload).unwrap();
    let covered: u64 = payload[4..]
        .chunks(8)
        .map(|e| u64::from(u32::from_be_bytes(e[..4].try_into().unwrap())))
        .sum();
    eprintln!(
        "one BLOCK_STATUS of 3 GiB: {covered} B covered in {:?}",
        t0.elapsed()
    );
    assert!(
        covered > 0 && covered <= 128 * MIB,
        "one BLOCK_STATUS walked {covered} B"
    );
    drop(one);
    let flood = |a: String, stop: Arc<AtomicBool>| {
        std::thread::spawn(move || {
            let mut sent = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let Some(mut s) = block_status_client(&a) else {
                    continue;
                };
                // Whole-export walks, pipelined, never read; then the client leaves.
                let burst: Vec<u8> = (0..64).flat_map(|i| request(0, 7, i, 0, 3 << 30)).collect();
                let _ = s.write_all(&burst);
                sent += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            sent
        })
    };
    let stop = Arc::new(AtomicBool::new(false));
    let floods: Vec<_> = (0..8).map(|_| flood(a.clone(), stop.clone())).collect();
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::Relaxed);
    let sent: u32 = floods.into_iter().map(|f| f.join().unwrap()).sum();
    assert!(sent >= 16, "only {sent} flooding connections got in");
    // Their work ends with them: the server is back to its idle threads.
    let t0 = Instant::now();
    while threads(pid) > baseline + 2 && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = threads(pid);
    eprintln!(
        "{sent} flooding connections: back to {left} threads (idle {baseline}) in {:?}",
        t0.elapsed()
    );
    assert!(
        left <= baseline + 2 && t0.elapsed() < Duration::from_secs(3),
        "{left} threads (idle {baseline}) {:?} after the clients left",
        t0.elapsed()
    );
    // A flood again, then SIGTERM in the middle of it: the server exits within 5 s.
    let stop = Arc::new(AtomicBool::new(false));
    let floods: Vec<_> = (0..8).map(|_| flood(a.clone(), stop.clone())).collect();
    std::thread::sleep(Duration::from_secs(2));
    let mut server = server;
    let t0 = Instant::now();
    assert!(Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    let mut exited = None;
    while t0.elapsed() < Duration::from_secs(20) {
        if let Some(status) = server.0.try_wait().unwrap() {
            exited = Some((status, t0.elapsed()));
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    for f in floods {
        let _ = f.join();
    }
    let (status, took) = exited.expect("the server outlived SIGTERM by 20 s");
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_secs(5), "SIGTERM took {took:?}");
}

/// A FLUSH waits for the requests before it while holding the connection's reader; a
/// member that stops answering must not hold it for ever, nor may the FLUSH then claim
/// the unanswered write durable: it fails with EIO after the I/O timeout, and the write
/// is answered when its member comes back.
#[test]
fn a_flush_behind_a_stuck_write_fails_after_the_io_timeout_and_claims_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = attacked_server(d, &["--io-timeout", "1"], false);
    engine(d, &["inject", "a", "--latency", "4000ms"]);
    let mut s = transmitting(&addr(&server));
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut write = request(0, protocol::CMD_WRITE, 1, 0, 4096);
    write.extend_from_slice(&[0x5a; 4096]);
    let t0 = Instant::now();
    s.write_all(&write).unwrap();
    // The write is read and stuck on member a before the FLUSH comes.
    std::thread::sleep(Duration::from_millis(300));
    s.write_all(&request(0, protocol::CMD_FLUSH, 2, 0, 0))
        .unwrap();
    let (error, cookie) = simple_reply(&mut s);
    let flushed_after = t0.elapsed();
    assert_eq!(
        (error, cookie),
        (protocol::EIO, 2),
        "the FLUSH's reply first, an error ({flushed_after:?} after the write)"
    );
    assert!(
        flushed_after < Duration::from_millis(3500),
        "the FLUSH waited {flushed_after:?}: past the 1 s I/O timeout, until the write"
    );
    assert_eq!(
        simple_reply(&mut s),
        (0, 1),
        "the write, answered once a comes back"
    );
    engine(d, &["inject", "a", "--clear"]);
    s.write_all(&request(0, protocol::CMD_FLUSH, 3, 0, 0))
        .unwrap();
    assert_eq!(
        simple_reply(&mut s),
        (0, 3),
        "a FLUSH with nothing stuck before it"
    );
    server.stop();
}
