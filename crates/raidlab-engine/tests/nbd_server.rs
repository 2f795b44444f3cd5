//! The NBD server against a minimal client written here: handshake variants, write,
//! read back, flush, trim, write zeroes, bounds, several connections at once, and
//! garbage on the wire (an error reply or a clean disconnect, never a panic).

use crate::common::{member_paths, retry_in_use};
use proptest::prelude::*;
use raidlab_engine::net::nbd::export::Export;
use raidlab_engine::net::nbd::protocol;
use raidlab_engine::net::nbd::server::{self, handle_connection};
use raidlab_engine::{Array, CreateOptions};
use raidlab_layout::Level;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn raid5(dir: &std::path::Path) -> Arc<Array> {
    let paths = member_paths(dir, "m", 4);
    let mut opts = CreateOptions::new(Level::Raid5, 16 << 10, Some(3 << 20));
    opts.uuid = Some(5);
    Arc::new(retry_in_use(|| Array::create(&paths, &opts)))
}

struct Client {
    s: TcpStream,
    size: u64,
    flags: u16,
}

fn u32_of(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}

impl Client {
    /// Fixed newstyle, NO_ZEROES, NBD_OPT_GO (or EXPORT_NAME).
    fn connect(addr: std::net::SocketAddr, go: bool) -> Client {
        let mut s = TcpStream::connect(addr).unwrap();
        let mut hello = [0u8; 18];
        s.read_exact(&mut hello).unwrap();
        assert_eq!(&hello[..8], b"NBDMAGIC");
        assert_eq!(&hello[8..16], b"IHAVEOPT");
        assert_eq!(u16::from_be_bytes([hello[16], hello[17]]), 3);
        s.write_all(&3u32.to_be_bytes()).unwrap();
        if go {
            let name = b"";
            let mut data = (name.len() as u32).to_be_bytes().to_vec();
            data.extend_from_slice(name);
            data.extend_from_slice(&1u16.to_be_bytes());
            data.extend_from_slice(&3u16.to_be_bytes()); // ask for NBD_INFO_BLOCK_SIZE
            Self::option(&mut s, protocol::OPT_GO, &data);
            let (mut size, mut flags, mut block) = (0, 0, None);
            loop {
                let (kind, payload) = Self::opt_reply(&mut s, protocol::OPT_GO);
                if kind == protocol::REP_ACK {
                    break;
                }
                assert_eq!(kind, protocol::REP_INFO);
                match u16::from_be_bytes([payload[0], payload[1]]) {
                    0 => {
                        size = u64::from_be_bytes(payload[2..10].try_into().unwrap());
                        flags = u16::from_be_bytes([payload[10], payload[11]]);
                    }
                    3 => {
                        block = Some((
                            u32_of(&payload[2..]),
                            u32_of(&payload[6..]),
                            u32_of(&payload[10..]),
                        ))
                    }
                    other => panic!("info {other}"),
                }
            }
            assert_eq!(block, Some((512, 4096, 32 << 20)));
            Client { s, size, flags }
        } else {
            Self::option(&mut s, protocol::OPT_EXPORT_NAME, b"raidlab");
            let mut b = [0u8; 10];
            s.read_exact(&mut b).unwrap();
            Client {
                s,
                size: u64::from_be_bytes(b[..8].try_into().unwrap()),
                flags: u16::from_be_bytes([b[8], b[9]]),
            }
        }
    }

    fn option(s: &mut TcpStream, opt: u32, data: &[u8]) {
        let mut b = protocol::IHAVEOPT.to_be_bytes().to_vec();
        b.extend_from_slice(&opt.to_be_bytes());
        b.extend_from_slice(&(data.len() as u32).to_be_bytes());
        b.extend_from_slice(data);
        s.write_all(&b).unwrap();
    }

    fn opt_reply(s: &mut TcpStream, opt: u32) -> (u32, Vec<u8>) {
        let mut h = [0u8; 20];
        s.read_exact(&mut h).unwrap();
        assert_eq!(
            u64::from_be_bytes(h[..8].try_into().unwrap()),
            protocol::OPT_REPLY_MAGIC
        );
        assert_eq!(u32_of(&h[8..]), opt);
        let mut payload = vec![0u8; u32_of(&h[16..]) as usize];
        s.read_exact(&mut payload).unwrap();
        (u32_of(&h[12..]), payload)
    }

    /// Sends a request; returns the error and the read data.
    fn request(
        &mut self,
        cmd: u16,
        flags: u16,
        offset: u64,
        len: u32,
        payload: &[u8],
    ) -> (u32, Vec<u8>) {
        let mut b = protocol::REQUEST_MAGIC.to_be_bytes().to_vec();
        b.extend_from_slice(&flags.to_be_bytes());
        b.extend_from_slice(&cmd.to_be_bytes());
        b.extend_from_slice(&0x00C0_0C1E_u64.to_be_bytes());
        b.extend_from_slice(&offset.to_be_bytes());
        b.extend_from_slice(&len.to_be_bytes());
        b.extend_from_slice(payload);
        self.s.write_all(&b).unwrap();
        let mut h = [0u8; 16];
        self.s.read_exact(&mut h).unwrap();
        assert_eq!(u32_of(&h), protocol::SIMPLE_REPLY_MAGIC);
        assert_eq!(u64::from_be_bytes(h[8..].try_into().unwrap()), 0x00C0_0C1E);
        let err = u32_of(&h[4..]);
        let mut data = Vec::new();
        if err == 0 && cmd == protocol::CMD_READ {
            data = vec![0u8; len as usize];
            self.s.read_exact(&mut data).unwrap();
        }
        (err, data)
    }

    fn disconnect(mut self) {
        let mut b = protocol::REQUEST_MAGIC.to_be_bytes().to_vec();
        b.extend_from_slice(&0u16.to_be_bytes());
        b.extend_from_slice(&protocol::CMD_DISC.to_be_bytes());
        b.extend_from_slice(&[0u8; 20]);
        self.s.write_all(&b).unwrap();
        let mut rest = Vec::new();
        assert_eq!(
            self.s.read_to_end(&mut rest).unwrap(),
            0,
            "server closes after DISC"
        );
    }
}

fn start(array: Arc<Array>) -> (std::net::SocketAddr, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    std::thread::spawn(move || server::serve(array, listener, &eight_connections(), &s2).unwrap());
    (addr, stop)
}

#[test]
fn a_client_writes_reads_back_flushes_and_disconnects() {
    let dir = tempfile::tempdir().unwrap();
    let array = raid5(dir.path());
    let (addr, _stop) = start(array.clone());
    for go in [true, false] {
        let mut c = Client::connect(addr, go);
        assert_eq!(c.size, array.capacity_bytes());
        assert_eq!(c.flags, server::TRANSMISSION_FLAGS);
        let data: Vec<u8> = (0..40960u32)
            .map(|i| (i * 7 + u32::from(go)) as u8)
            .collect();
        assert_eq!(
            c.request(
                protocol::CMD_WRITE,
                protocol::CMD_FLAG_FUA,
                8192,
                40960,
                &data
            )
            .0,
            0
        );
        let (err, back) = c.request(protocol::CMD_READ, 0, 8192, 40960, &[]);
        assert_eq!((err, back == data), (0, true));
        assert_eq!(c.request(protocol::CMD_FLUSH, 0, 0, 0, &[]).0, 0);
        assert_eq!(c.request(protocol::CMD_TRIM, 0, 8192, 4096, &[]).0, 0);
        assert_eq!(
            c.request(protocol::CMD_WRITE_ZEROES, 0, 8192, 1024, &[]).0,
            0
        );
        let (_, back) = c.request(protocol::CMD_READ, 0, 8192, 2048, &[]);
        assert!(back[..1024].iter().all(|&b| b == 0) && back[1024..] == data[1024..2048]);
        c.disconnect();
    }
    assert_eq!(array.scrub(false).unwrap().mismatched_stripes, 0);
}

#[test]
fn bad_requests_get_error_replies_and_the_connection_survives() {
    let dir = tempfile::tempdir().unwrap();
    let array = raid5(dir.path());
    let size = array.capacity_bytes();
    let (addr, _stop) = start(array);
    let mut c = Client::connect(addr, true);
    assert_eq!(
        c.request(protocol::CMD_READ, 0, size, 512, &[]).0,
        protocol::EINVAL
    );
    assert_eq!(
        c.request(protocol::CMD_READ, 0, u64::MAX - 511, 512, &[]).0,
        protocol::EINVAL
    );
    assert_eq!(
        c.request(protocol::CMD_READ, 0, 100, 512, &[]).0,
        protocol::EINVAL
    );
    assert_eq!(
        c.request(protocol::CMD_READ, 0, 0, 0, &[]).0,
        protocol::EINVAL
    );
    assert_eq!(
        c.request(protocol::CMD_READ, 0, 0, (32 << 20) + 512, &[]).0,
        protocol::EINVAL
    );
    assert_eq!(
        c.request(protocol::CMD_WRITE, 0, size - 512, 1024, &[1u8; 1024])
            .0,
        protocol::ENOSPC
    );
    assert_eq!(
        c.request(protocol::CMD_WRITE, 0, 1, 512, &[1u8; 512]).0,
        protocol::EINVAL
    );
    assert_eq!(
        c.request(protocol::CMD_WRITE_ZEROES, 0, size, 512, &[]).0,
        protocol::ENOSPC
    );
    assert_eq!(c.request(99, 0, 0, 512, &[]).0, protocol::EINVAL);
    // Still in sync after all that.
    assert_eq!(c.request(protocol::CMD_WRITE, 0, 0, 512, &[9u8; 512]).0, 0);
    assert_eq!(
        c.request(protocol::CMD_READ, 0, 0, 512, &[]).1,
        vec![9u8; 512]
    );
    c.disconnect();
}

#[test]
fn unknown_options_are_unsupported_and_abort_ends_the_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, _stop) = start(raid5(dir.path()));
    let mut s = TcpStream::connect(addr).unwrap();
    let mut hello = [0u8; 18];
    s.read_exact(&mut hello).unwrap();
    s.write_all(&3u32.to_be_bytes()).unwrap();
    Client::option(&mut s, 0x77, &[]); // no such option
    assert_eq!(Client::opt_reply(&mut s, 0x77).0, protocol::REP_ERR_UNSUP);
    Client::option(&mut s, protocol::OPT_INFO, &[0, 0, 0, 9, 1]); // truncated
    assert_eq!(
        Client::opt_reply(&mut s, protocol::OPT_INFO).0,
        protocol::REP_ERR_INVALID
    );
    Client::option(&mut s, protocol::OPT_LIST, &[]);
    let (kind, payload) = Client::opt_reply(&mut s, protocol::OPT_LIST);
    assert_eq!(
        (kind, &payload[4..]),
        (protocol::REP_SERVER, &b"raidlab"[..])
    );
    assert_eq!(
        Client::opt_reply(&mut s, protocol::OPT_LIST).0,
        protocol::REP_ACK
    );
    Client::option(&mut s, protocol::OPT_ABORT, &[]);
    assert_eq!(
        Client::opt_reply(&mut s, protocol::OPT_ABORT).0,
        protocol::REP_ACK
    );
    let mut rest = Vec::new();
    assert_eq!(s.read_to_end(&mut rest).unwrap(), 0);
}

#[test]
fn several_connections_write_disjoint_and_shared_stripes_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let array = raid5(dir.path());
    let (addr, _stop) = start(array.clone());
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr, true);
                for i in 0..50u64 {
                    // Every thread writes its own sectors of the same stripes.
                    let off = (i % 10) * 48 * 1024 + u64::from(t) * 512 * 3;
                    let data = vec![t.wrapping_mul(31).wrapping_add(i as u8); 1536];
                    assert_eq!(c.request(protocol::CMD_WRITE, 0, off, 1536, &data).0, 0);
                    assert_eq!(c.request(protocol::CMD_READ, 0, off, 1536, &[]).1, data);
                }
                c.disconnect();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        array.scrub(false).unwrap().mismatched_stripes,
        0,
        "parity consistent"
    );
}

/// An export of 1 MiB in memory, for the parser fuzz.
struct Mem(std::sync::Mutex<Vec<u8>>);

impl Export for Mem {
    fn size_bytes(&self) -> u64 {
        1 << 20
    }
    fn read_at(&self, o: u64, buf: &mut [u8]) -> std::io::Result<()> {
        buf.copy_from_slice(&self.0.lock().unwrap()[o as usize..o as usize + buf.len()]);
        Ok(())
    }
    fn write_at(&self, o: u64, d: &[u8], _: bool) -> std::io::Result<()> {
        self.0.lock().unwrap()[o as usize..o as usize + d.len()].copy_from_slice(d);
        Ok(())
    }
    fn flush(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A valid handshake (fixed newstyle, EXPORT_NAME) followed by `tail`.
fn after_handshake(tail: &[u8]) -> Vec<u8> {
    let mut b = 3u32.to_be_bytes().to_vec();
    b.extend_from_slice(&protocol::IHAVEOPT.to_be_bytes());
    b.extend_from_slice(&protocol::OPT_EXPORT_NAME.to_be_bytes());
    b.extend_from_slice(&0u32.to_be_bytes());
    b.extend_from_slice(tail);
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic_the_server(input in proptest::collection::vec(any::<u8>(), 0..300), handshaken in any::<bool>()) {
        let export = Mem(std::sync::Mutex::new(vec![0u8; 1 << 20]));
        let bytes = if handshaken { after_handshake(&input) } else { input };
        let mut out = Vec::new();
        let _ = handle_connection(&export, &mut bytes.as_slice(), &mut out);
    }

    #[test]
    fn mutated_valid_requests_never_panic_the_server(
        cmd in 0u16..10, flags in any::<u16>(), offset in prop_oneof![0u64..(2 << 20), any::<u64>()],
        len in prop_oneof![0u32..70_000, any::<u32>()], cut in any::<usize>(), flip in any::<(usize, u8)>()
    ) {
        let export = Mem(std::sync::Mutex::new(vec![0u8; 1 << 20]));
        let mut req = protocol::REQUEST_MAGIC.to_be_bytes().to_vec();
        req.extend_from_slice(&flags.to_be_bytes());
        req.extend_from_slice(&cmd.to_be_bytes());
        req.extend_from_slice(&7u64.to_be_bytes());
        req.extend_from_slice(&offset.to_be_bytes());
        req.extend_from_slice(&len.to_be_bytes());
        if cmd == protocol::CMD_WRITE && len < 70_000 {
            req.extend(std::iter::repeat_n(0xA5, len as usize));
        }
        let mut input = after_handshake(&req);
        let i = flip.0 % input.len();
        if flip.1 % 4 == 0 { input[i] ^= flip.1 | 1; }
        input.truncate(input.len() - cut % 8);
        let mut out = Vec::new();
        let _ = handle_connection(&export, &mut input.as_slice(), &mut out);
    }
}

/// An export whose read at offset 0 waits for a read at 4 KiB to have finished (at
/// most 10 s, then EIO): it only answers both when requests run concurrently.
struct Gate {
    second_done: std::sync::Mutex<bool>,
    changed: std::sync::Condvar,
}

impl Export for Gate {
    fn size_bytes(&self) -> u64 {
        1 << 20
    }
    fn read_at(&self, o: u64, buf: &mut [u8]) -> std::io::Result<()> {
        buf.fill(o as u8 ^ 0x5a);
        if o == 0 {
            let done = self.second_done.lock().unwrap();
            let (done, _) = self
                .changed
                .wait_timeout_while(done, std::time::Duration::from_secs(10), |d| !*d)
                .unwrap();
            if !*done {
                return Err(std::io::Error::other("the second read never ran"));
            }
        } else {
            *self.second_done.lock().unwrap() = true;
            self.changed.notify_all();
        }
        Ok(())
    }
    fn write_at(&self, _: u64, _: &[u8], _: bool) -> std::io::Result<()> {
        Ok(())
    }
    fn flush(&self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn requests_in_flight_on_one_connection_run_at_once() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let gate: Arc<dyn Export> = Arc::new(Gate {
        second_done: std::sync::Mutex::new(false),
        changed: std::sync::Condvar::new(),
    });
    let server = std::thread::spawn(move || {
        server::serve(gate, listener, &eight_connections(), &s2).unwrap()
    });
    let mut c = Client::connect(addr, true);
    // Two reads sent back to back, the first of which cannot finish before the second.
    for (cookie, offset) in [(1u64, 0u64), (2, 4096)] {
        let mut b = protocol::REQUEST_MAGIC.to_be_bytes().to_vec();
        b.extend_from_slice(&0u16.to_be_bytes());
        b.extend_from_slice(&protocol::CMD_READ.to_be_bytes());
        b.extend_from_slice(&cookie.to_be_bytes());
        b.extend_from_slice(&offset.to_be_bytes());
        b.extend_from_slice(&4096u32.to_be_bytes());
        c.s.write_all(&b).unwrap();
    }
    let mut order = Vec::new();
    for _ in 0..2 {
        let mut h = [0u8; 16];
        c.s.read_exact(&mut h).unwrap();
        assert_eq!(u32_of(&h), protocol::SIMPLE_REPLY_MAGIC);
        assert_eq!(u32_of(&h[4..]), 0, "both reads succeed");
        let cookie = u64::from_be_bytes(h[8..].try_into().unwrap());
        let mut data = vec![0u8; 4096];
        c.s.read_exact(&mut data).unwrap();
        let offset = if cookie == 1 { 0u64 } else { 4096 };
        assert!(
            data.iter().all(|&b| b == offset as u8 ^ 0x5a),
            "cookie {cookie}"
        );
        order.push(cookie);
    }
    // Read 0 could only finish because read 4 KiB ran meanwhile (served one at a time,
    // it fails after 10 s); each reply carries its own request's cookie and data.
    order.sort_unstable();
    assert_eq!(order, [1, 2]);
    c.disconnect();
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap();
}

/// The server's defaults with 8 connections at most.
fn eight_connections() -> server::ServeOptions {
    server::ServeOptions {
        connections_max: 8,
        ..server::ServeOptions::default()
    }
}

/// An export whose write at offset 0 finishes when a flush comes or after 300 ms,
/// whichever is first, and whose flush notes whether a write was still running.
#[derive(Default)]
struct SlowWrite {
    /// (writes running, flush seen, a flush came while a write ran)
    state: std::sync::Mutex<(u32, bool, bool)>,
    changed: std::sync::Condvar,
}

impl Export for SlowWrite {
    fn size_bytes(&self) -> u64 {
        1 << 20
    }
    fn read_at(&self, _: u64, buf: &mut [u8]) -> std::io::Result<()> {
        buf.fill(0);
        Ok(())
    }
    fn write_at(&self, _: u64, _: &[u8], _: bool) -> std::io::Result<()> {
        let mut s = self.state.lock().unwrap();
        s.0 += 1;
        let (mut s, _) = self
            .changed
            .wait_timeout_while(s, std::time::Duration::from_millis(300), |s| !s.1)
            .unwrap();
        s.0 -= 1;
        Ok(())
    }
    fn flush(&self) -> std::io::Result<()> {
        let mut s = self.state.lock().unwrap();
        s.2 |= s.0 > 0;
        s.1 = true;
        self.changed.notify_all();
        Ok(())
    }
}

#[test]
fn a_flush_waits_for_the_writes_sent_before_it() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let export = Arc::new(SlowWrite::default());
    let e2: Arc<dyn Export> = export.clone();
    let server =
        std::thread::spawn(move || server::serve(e2, listener, &eight_connections(), &s2).unwrap());
    let mut c = Client::connect(addr, true);
    c.s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    // A write and a flush back to back: the flush is read while the write runs.
    let mut b = Vec::new();
    for (cmd, cookie, len) in [
        (protocol::CMD_WRITE, 1u64, 4096u32),
        (protocol::CMD_FLUSH, 2, 0),
    ] {
        b.extend_from_slice(&protocol::REQUEST_MAGIC.to_be_bytes());
        b.extend_from_slice(&0u16.to_be_bytes());
        b.extend_from_slice(&cmd.to_be_bytes());
        b.extend_from_slice(&cookie.to_be_bytes());
        b.extend_from_slice(&0u64.to_be_bytes());
        b.extend_from_slice(&len.to_be_bytes());
        b.extend(std::iter::repeat_n(0x5a, len as usize));
    }
    c.s.write_all(&b).unwrap();
    let mut order = Vec::new();
    for _ in 0..2 {
        let mut h = [0u8; 16];
        c.s.read_exact(&mut h).expect("both replies within 20 s");
        assert_eq!(u32_of(&h[4..]), 0);
        order.push(u64::from_be_bytes(h[8..].try_into().unwrap()));
    }
    assert_eq!(order, [1, 2], "the write answered before the flush");
    assert!(
        !export.state.lock().unwrap().2,
        "the flush ran while the write did"
    );
    c.disconnect();
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap();
}
