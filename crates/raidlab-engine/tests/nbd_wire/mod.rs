//! A raw NBD client for the structured-reply and TLS tests: the handshake, options,
//! requests and both kinds of reply, byte by byte, over any stream (a TCP socket or a
//! rustls client stream after STARTTLS). Every read has the socket's timeout.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

pub const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
pub const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_STARTTLS: u32 = 5;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;
pub const OPT_STRUCTURED_REPLY: u32 = 8;
pub const OPT_LIST_META_CONTEXT: u32 = 9;
pub const OPT_SET_META_CONTEXT: u32 = 10;
pub const REP_ACK: u32 = 1;
pub const REP_INFO: u32 = 3;
pub const REP_META_CONTEXT: u32 = 4;
pub const REP_ERR_UNSUP: u32 = 0x8000_0001;
pub const REP_ERR_POLICY: u32 = 0x8000_0002;
pub const REP_ERR_INVALID: u32 = 0x8000_0003;
pub const REP_ERR_TLS_REQD: u32 = 0x8000_0005;
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_BLOCK_STATUS: u16 = 7;
pub const CMD_FLAG_REQ_ONE: u16 = 1 << 3;
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
pub const REPLY_TYPE_BLOCK_STATUS: u16 = 5;
pub const REPLY_TYPE_ERROR: u16 = 0x8001;
pub const REPLY_FLAG_DONE: u16 = 1;
pub const EINVAL: u32 = 22;

/// Connects to `127.0.0.1:port` with 30 s read and write timeouts.
pub fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// One reply chunk (structured) or simple reply.
#[derive(Debug)]
pub struct Reply {
    /// Simple reply: `None`; structured: (flags, type).
    pub chunk: Option<(u16, u16)>,
    /// Simple reply's error; for a structured ERROR chunk, its errno.
    pub error: u32,
    pub cookie: u64,
    /// Structured: the chunk's payload; simple: the data read after it (READ only).
    pub payload: Vec<u8>,
}

/// The client side of one connection.
pub struct Client<S> {
    pub s: S,
}

impl<S: Read + Write> Client<S> {
    /// Reads the server's greeting and answers it (FIXED_NEWSTYLE | NO_ZEROES).
    pub fn greet(mut s: S) -> Self {
        let mut hello = [0u8; 18];
        s.read_exact(&mut hello).unwrap();
        assert_eq!(&hello[..8], b"NBDMAGIC");
        assert_eq!(
            u64::from_be_bytes(hello[8..16].try_into().unwrap()),
            IHAVEOPT
        );
        s.write_all(&3u32.to_be_bytes()).unwrap();
        Self { s }
    }

    pub fn send_option(&mut self, opt: u32, data: &[u8]) {
        let mut b = IHAVEOPT.to_be_bytes().to_vec();
        b.extend_from_slice(&opt.to_be_bytes());
        b.extend_from_slice(&(data.len() as u32).to_be_bytes());
        b.extend_from_slice(data);
        self.s.write_all(&b).unwrap();
        self.s.flush().unwrap();
    }

    /// One option reply: (type, data).
    pub fn option_reply(&mut self, opt: u32) -> (u32, Vec<u8>) {
        let mut h = [0u8; 20];
        self.s.read_exact(&mut h).unwrap();
        assert_eq!(
            u64::from_be_bytes(h[..8].try_into().unwrap()),
            OPT_REPLY_MAGIC
        );
        assert_eq!(u32::from_be_bytes(h[8..12].try_into().unwrap()), opt);
        let kind = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let len = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
        let mut data = vec![0u8; len];
        self.s.read_exact(&mut data).unwrap();
        (kind, data)
    }

    /// Sends an option and collects its replies up to ACK or an error (included).
    pub fn option(&mut self, opt: u32, data: &[u8]) -> Vec<(u32, Vec<u8>)> {
        self.send_option(opt, data);
        let mut out = Vec::new();
        loop {
            let r = self.option_reply(opt);
            let last = r.0 == REP_ACK || r.0 & 0x8000_0000 != 0;
            out.push(r);
            if last {
                return out;
            }
        }
    }

    /// NBD_OPT_GO on the default export, asserting its ACK.
    pub fn go(&mut self) {
        let replies = self.option(OPT_GO, &[0, 0, 0, 0, 0, 0]);
        assert_eq!(replies.last().unwrap().0, REP_ACK, "{replies:?}");
    }

    /// STRUCTURED_REPLY, then SET_META_CONTEXT base:allocation, asserting both.
    pub fn structured_with_base_allocation(&mut self) {
        let r = self.option(OPT_STRUCTURED_REPLY, &[]);
        assert_eq!(r, vec![(REP_ACK, vec![])]);
        let r = self.option(OPT_SET_META_CONTEXT, &meta_query(&["base:allocation"]));
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(r[0].0, REP_META_CONTEXT);
        assert_eq!(&r[0].1[4..], b"base:allocation");
    }

    pub fn request(
        &mut self,
        cmd: u16,
        flags: u16,
        cookie: u64,
        offset: u64,
        len: u32,
        data: &[u8],
    ) {
        let mut b = Vec::with_capacity(28 + data.len());
        b.extend_from_slice(&0x2560_9513u32.to_be_bytes());
        b.extend_from_slice(&flags.to_be_bytes());
        b.extend_from_slice(&cmd.to_be_bytes());
        b.extend_from_slice(&cookie.to_be_bytes());
        b.extend_from_slice(&offset.to_be_bytes());
        b.extend_from_slice(&len.to_be_bytes());
        b.extend_from_slice(data);
        self.s.write_all(&b).unwrap();
        self.s.flush().unwrap();
    }

    /// The next reply; `read_len`: bytes a simple reply to a READ carries.
    pub fn reply(&mut self, read_len: usize) -> Reply {
        let mut m = [0u8; 4];
        self.s.read_exact(&mut m).unwrap();
        match u32::from_be_bytes(m) {
            SIMPLE_REPLY_MAGIC => {
                let mut h = [0u8; 12];
                self.s.read_exact(&mut h).unwrap();
                let error = u32::from_be_bytes(h[..4].try_into().unwrap());
                let mut payload = vec![0u8; if error == 0 { read_len } else { 0 }];
                self.s.read_exact(&mut payload).unwrap();
                Reply {
                    chunk: None,
                    error,
                    cookie: u64::from_be_bytes(h[4..12].try_into().unwrap()),
                    payload,
                }
            }
            STRUCTURED_REPLY_MAGIC => {
                let mut h = [0u8; 16];
                self.s.read_exact(&mut h).unwrap();
                let flags = u16::from_be_bytes([h[0], h[1]]);
                let kind = u16::from_be_bytes([h[2], h[3]]);
                let len = u32::from_be_bytes(h[12..16].try_into().unwrap()) as usize;
                let mut payload = vec![0u8; len];
                self.s.read_exact(&mut payload).unwrap();
                let error = if kind == REPLY_TYPE_ERROR {
                    u32::from_be_bytes(payload[..4].try_into().unwrap())
                } else {
                    0
                };
                Reply {
                    chunk: Some((flags, kind)),
                    error,
                    cookie: u64::from_be_bytes(h[4..12].try_into().unwrap()),
                    payload,
                }
            }
            other => panic!("bad reply magic {other:#x}"),
        }
    }

    /// WRITE, asserting success.
    pub fn write(&mut self, offset: u64, data: &[u8]) {
        self.request(CMD_WRITE, 0, 7, offset, data.len() as u32, data);
        let r = self.reply(0);
        assert_eq!((r.error, r.cookie), (0, 7), "{r:?}");
    }

    /// READ, asserting success; the bytes (from a simple reply or one OFFSET_DATA
    /// chunk at `offset`).
    pub fn read(&mut self, offset: u64, len: u32) -> Vec<u8> {
        self.request(CMD_READ, 0, 8, offset, len, &[]);
        let r = self.reply(len as usize);
        assert_eq!((r.error, r.cookie), (0, 8), "{:?}", (r.chunk, r.error));
        match r.chunk {
            None => r.payload,
            Some((flags, kind)) => {
                assert_eq!((flags, kind), (REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA));
                assert_eq!(
                    u64::from_be_bytes(r.payload[..8].try_into().unwrap()),
                    offset
                );
                r.payload[8..].to_vec()
            }
        }
    }

    /// BLOCK_STATUS: `(length, flags)` extents of the one `base:allocation` chunk.
    pub fn block_status(&mut self, offset: u64, len: u32, flags: u16) -> Vec<(u32, u32)> {
        self.request(CMD_BLOCK_STATUS, flags, 9, offset, len, &[]);
        let r = self.reply(0);
        assert_eq!(
            r.chunk,
            Some((REPLY_FLAG_DONE, REPLY_TYPE_BLOCK_STATUS)),
            "{r:?}"
        );
        assert_eq!(r.cookie, 9);
        let p = &r.payload;
        assert_eq!(
            u32::from_be_bytes(p[..4].try_into().unwrap()),
            1,
            "context id"
        );
        p[4..]
            .chunks(8)
            .map(|c| {
                (
                    u32::from_be_bytes(c[..4].try_into().unwrap()),
                    u32::from_be_bytes(c[4..].try_into().unwrap()),
                )
            })
            .collect()
    }

    pub fn disconnect(mut self) {
        self.request(CMD_DISC, 0, 0, 0, 0, &[]);
    }
}

/// A META_CONTEXT option payload: the default export, these queries.
pub fn meta_query(queries: &[&str]) -> Vec<u8> {
    let mut b = 0u32.to_be_bytes().to_vec();
    b.extend_from_slice(&(queries.len() as u32).to_be_bytes());
    for q in queries {
        b.extend_from_slice(&(q.len() as u32).to_be_bytes());
        b.extend_from_slice(q.as_bytes());
    }
    b
}

/// Bytes of a pattern that differs at every 8-byte word (no two blocks alike).
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    (0..len / 8)
        .flat_map(|i| (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i as u64).to_le_bytes())
        .collect()
}
