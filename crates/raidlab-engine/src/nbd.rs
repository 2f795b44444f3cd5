//! An NBD server (fixed newstyle handshake, simple or structured replies, block status,
//! TLS) exporting one [`Export`]. Structured replies and `base:allocation` live in
//! [`crate::nbd_structured`], TLS (`NBD_OPT_STARTTLS`) in [`crate::tls`].
//!
//! ```text
//! server: NBDMAGIC IHAVEOPT flags(FIXED_NEWSTYLE|NO_ZEROES)
//! client: flags ─► options: EXPORT_NAME | INFO | GO | LIST | ABORT | STARTTLS
//!                   | STRUCTURED_REPLY | LIST/SET_META_CONTEXT | other ─► ERR_UNSUP
//! transmission: [magic flags type cookie offset length (payload)] ─► [magic error cookie (data)]
//! ```
//!
//! Limits (clear errors, never a panic): requests must be 512 B-aligned and inside the
//! export (else EINVAL, ENOSPC for writes past the end), at most [`BLOCK_BYTES_MAX`]
//! (a larger WRITE cannot be skipped safely: EINVAL, then the connection closes),
//! option payloads at most [`OPTION_BYTES_MAX`], [`OPTIONS_MAX`] options per handshake,
//! a bad request magic closes the connection. TRIM is accepted and does nothing (the
//! data stays readable, parity stays consistent); WRITE_ZEROES writes zeroes through
//! the array.

use crate::nbd_structured::{self as structured, Negotiated};
use crate::tls::{self, TlsMode, TlsServer};
use crate::Array;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// `NBDMAGIC`: the first 8 bytes the server sends, opening the newstyle handshake.
pub const NBD_MAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: opens the option haggling and prefixes every option.
pub const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
/// Magic that opens every option reply (server to client, during the handshake).
pub const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Magic that opens every transmission request (`NBD_REQUEST_MAGIC`).
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Magic that opens every simple reply to a request (`NBD_SIMPLE_REPLY_MAGIC`).
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

/// Handshake flag `NBD_FLAG_FIXED_NEWSTYLE`: unknown options get an error reply
/// instead of ending the connection.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
/// Handshake flag: no 124 zero bytes after NBD_OPT_EXPORT_NAME.
pub const FLAG_NO_ZEROES: u16 = 2;

/// Option `NBD_OPT_EXPORT_NAME`: names the export and enters transmission at once
/// (no reply on success, as the protocol's oldest way to end the handshake).
pub const OPT_EXPORT_NAME: u32 = 1;
/// Option `NBD_OPT_ABORT`: ends the handshake without transmission.
pub const OPT_ABORT: u32 = 2;
/// Option `NBD_OPT_LIST`: lists the exports (this server has one, [`EXPORT_NAME`]).
pub const OPT_LIST: u32 = 3;
/// Option `NBD_OPT_INFO`: export size, flags and block sizes, without transmission.
pub const OPT_INFO: u32 = 6;
/// Option `NBD_OPT_GO`: what `NBD_OPT_INFO` answers, then transmission.
pub const OPT_GO: u32 = 7;

/// Option reply `NBD_REP_ACK`: the option succeeded; its last reply.
pub const REP_ACK: u32 = 1;
/// Option reply `NBD_REP_SERVER`: one export name (to `NBD_OPT_LIST`).
pub const REP_SERVER: u32 = 2;
/// Option reply `NBD_REP_INFO`: one information item (to `NBD_OPT_INFO` and `GO`).
pub const REP_INFO: u32 = 3;
/// Option reply `NBD_REP_ERR_UNSUP`: the option is not supported.
pub const REP_ERR_UNSUP: u32 = 0x8000_0001;
/// Option reply `NBD_REP_ERR_INVALID`: the option's payload is malformed.
pub const REP_ERR_INVALID: u32 = 0x8000_0003;

/// Information item `NBD_INFO_EXPORT`: export size in bytes and transmission flags.
pub const INFO_EXPORT: u16 = 0;
/// Information item `NBD_INFO_BLOCK_SIZE`: minimum, preferred and maximum block bytes.
pub const INFO_BLOCK_SIZE: u16 = 3;

/// Transmission flag `NBD_FLAG_HAS_FLAGS`: always set; the other flags are meaningful.
pub const TF_HAS_FLAGS: u16 = 1;
/// Transmission flag: `NBD_CMD_FLUSH` is supported.
pub const TF_SEND_FLUSH: u16 = 1 << 2;
/// Transmission flag: the FUA flag on writes is supported.
pub const TF_SEND_FUA: u16 = 1 << 3;
/// Transmission flag: `NBD_CMD_TRIM` is supported.
pub const TF_SEND_TRIM: u16 = 1 << 5;
/// Transmission flag: `NBD_CMD_WRITE_ZEROES` is supported.
pub const TF_SEND_WRITE_ZEROES: u16 = 1 << 6;
/// Transmission flag `NBD_FLAG_CAN_MULTI_CONN`: several connections see each other's
/// writes and one FLUSH covers them all (they share the member files).
pub const TF_CAN_MULTI_CONN: u16 = 1 << 8;
/// The transmission flags this server advertises: every flag above.
pub const TRANSMISSION_FLAGS: u16 = TF_HAS_FLAGS
    | TF_SEND_FLUSH
    | TF_SEND_FUA
    | TF_SEND_TRIM
    | TF_SEND_WRITE_ZEROES
    | TF_CAN_MULTI_CONN;

/// Command `NBD_CMD_READ`: the reply carries the bytes read.
pub const CMD_READ: u16 = 0;
/// Command `NBD_CMD_WRITE`: the payload follows the request header.
pub const CMD_WRITE: u16 = 1;
/// Command `NBD_CMD_DISC`: the client disconnects; no reply.
pub const CMD_DISC: u16 = 2;
/// Command `NBD_CMD_FLUSH`: every completed write made durable ([`Export::flush`]).
pub const CMD_FLUSH: u16 = 3;
/// Command `NBD_CMD_TRIM`: a hint that the range may be discarded; this server keeps
/// the bytes (trim is advisory) and only checks the range.
pub const CMD_TRIM: u16 = 4;
/// Command `NBD_CMD_WRITE_ZEROES`: the range reads back as zeros.
pub const CMD_WRITE_ZEROES: u16 = 6;
/// Command flag `NBD_CMD_FLAG_FUA`: the write is durable before its reply.
pub const CMD_FLAG_FUA: u16 = 1;

/// Error reply `EIO`: the export's read, write or flush failed (for the array, more
/// member failures than its level tolerates).
pub const EIO: u32 = 5;
/// Error reply `EINVAL`: an empty, misaligned (not whole 512 B sectors) or oversized
/// request.
pub const EINVAL: u32 = 22;
/// Error reply `ENOSPC`: a write past the end of the export.
pub const ENOSPC: u32 = 28;

/// Smallest block in bytes (a sector): offsets and lengths are multiples of it.
pub const BLOCK_BYTES_MIN: u32 = 512;
/// Preferred block in bytes announced to clients (a page).
pub const BLOCK_BYTES_PREFERRED: u32 = 4096;
/// Largest request in bytes: [`crate::array::REQUEST_BYTES_MAX`].
pub const BLOCK_BYTES_MAX: u32 = 32 << 20;
/// Requests of one connection served at once (by as many worker threads) unless told
/// otherwise: a client that keeps several requests in flight reaches several members
/// at once.
pub const REQUESTS_IN_FLIGHT_DEFAULT: usize = 8;
/// Most requests of one connection served at once that `serve` may be asked for.
pub const REQUESTS_IN_FLIGHT_LIMIT: usize = 64;
/// Largest option payload accepted, in bytes; a larger one ends the handshake.
pub const OPTION_BYTES_MAX: u32 = 64 << 10;
/// Most options one handshake may send before the connection is closed.
pub const OPTIONS_MAX: usize = 64;
/// Export name announced by NBD_OPT_LIST (any name is accepted).
pub const EXPORT_NAME: &str = "raidlab";

/// What an NBD export needs. [`Array`] implements it.
pub trait Export: Send + Sync {
    /// Bytes of the export.
    fn size_bytes(&self) -> u64;
    /// Reads `buf.len()` bytes at `offset_bytes` (aligned, in bounds: checked before).
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Writes; `fua`: durable on return.
    fn write_at(&self, offset_bytes: u64, data: &[u8], fua: bool) -> io::Result<()>;
    /// Makes every completed write durable.
    fn flush(&self) -> io::Result<()>;
    /// Allocation of `len_bytes` at `offset_bytes` (in bounds: checked before): runs of
    /// `(bytes, hole)` from the range's start, at most `max_runs`, covering the range
    /// or a prefix of it. `hole`: unallocated, reads as zeros. Without a way to tell,
    /// everything is data.
    fn allocation(
        &self,
        offset_bytes: u64,
        len_bytes: u64,
        max_runs: usize,
    ) -> io::Result<Vec<(u64, bool)>> {
        let _ = (offset_bytes, max_runs);
        Ok(vec![(len_bytes, false)])
    }
}

fn to_io(e: crate::Error) -> io::Error {
    if e.is_no_space() {
        // Kept as the OS error, so that the reply is ENOSPC (see `write_errno`).
        return io::Error::from_raw_os_error(libc::ENOSPC);
    }
    io::Error::other(e.to_string())
}

/// The error reply of a failed write: `ENOSPC` when a member's filesystem is full
/// (the array is intact; the client may retry once there is space), else `EIO`.
fn write_errno(e: io::Error) -> u32 {
    if crate::error::is_no_space(&e) {
        ENOSPC
    } else {
        EIO
    }
}

impl Export for Array {
    fn size_bytes(&self) -> u64 {
        self.capacity_bytes()
    }
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<()> {
        self.read(offset_bytes, buf).map_err(to_io)
    }
    fn write_at(&self, offset_bytes: u64, data: &[u8], fua: bool) -> io::Result<()> {
        self.write(offset_bytes, data, fua).map_err(to_io)
    }
    fn flush(&self) -> io::Result<()> {
        Array::flush(self).map_err(to_io)
    }
    fn allocation(&self, offset: u64, len: u64, max_runs: usize) -> io::Result<Vec<(u64, bool)>> {
        Array::allocation(self, offset, len, max_runs).map_err(to_io)
    }
}

fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

fn protocol(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Sends one option reply (`NBD_REP_*`) with its data.
pub(crate) fn opt_reply(w: &mut impl Write, opt: u32, reply: u32, data: &[u8]) -> io::Result<()> {
    let mut b = Vec::with_capacity(20 + data.len());
    b.extend_from_slice(&OPT_REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&opt.to_be_bytes());
    b.extend_from_slice(&reply.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    w.write_all(&b)
}

/// How the handshake ended.
enum Handshake {
    /// Go to transmission.
    Transmit,
    /// The client aborted or closed.
    Done,
    /// `NBD_OPT_STARTTLS` was acknowledged: run TLS, then the options again.
    StartTls,
}

/// What one connection's handshake has agreed so far.
struct Session<'a> {
    /// The server's TLS, if it offers it.
    tls: Option<&'a TlsServer>,
    /// The connection runs over TLS now.
    tls_active: bool,
    /// The client asked for no 124 zero bytes after NBD_OPT_EXPORT_NAME.
    no_zeroes: bool,
    /// Options received, over plain and TLS.
    options: usize,
    neg: Negotiated,
}

impl<'a> Session<'a> {
    /// A new connection's: nothing agreed, in the clear.
    fn new(tls: Option<&'a TlsServer>) -> Self {
        Self {
            tls,
            tls_active: false,
            no_zeroes: false,
            options: 0,
            neg: Negotiated::default(),
        }
    }

    /// TLS is required and not running yet.
    fn tls_required(&self) -> bool {
        !self.tls_active && self.tls.is_some_and(|t| t.mode == TlsMode::Required)
    }
}

/// Serves one connection: handshake, then requests until DISC or EOF. Returns `Ok` on
/// an orderly end, an error on a protocol violation or I/O error of the socket (the
/// caller closes the connection). Never panics on any input.
pub fn handle_connection(
    export: &dyn Export,
    reader: &mut (impl Read + Send),
    writer: &mut (impl Write + Send),
) -> io::Result<()> {
    handle_connection_with(export, reader, writer, REQUESTS_IN_FLIGHT_DEFAULT)
}

/// [`handle_connection`] serving at most `in_flight` requests at once (1: one after
/// the other, the least CPU per request when the members answer in microseconds).
pub fn handle_connection_with(
    export: &dyn Export,
    reader: &mut (impl Read + Send),
    writer: &mut (impl Write + Send),
    in_flight: usize,
) -> io::Result<()> {
    let mut session = Session::new(None);
    match handshake(export, reader, writer, &mut session)? {
        Handshake::Done => Ok(()),
        Handshake::StartTls => Err(protocol("NBD_OPT_STARTTLS without TLS")),
        Handshake::Transmit => transmission(export, reader, writer, in_flight.max(1), session.neg),
    }
}

/// The greeting, then the options.
fn handshake(
    export: &dyn Export,
    r: &mut impl Read,
    w: &mut impl Write,
    session: &mut Session,
) -> io::Result<Handshake> {
    let mut hello = Vec::with_capacity(18);
    hello.extend_from_slice(&NBD_MAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    w.write_all(&hello)?;
    w.flush()?;
    let client = read_u32(r)?;
    if client & !u32::from(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES) != 0 {
        return Err(protocol(format!("unknown client flags {client:#x}")));
    }
    session.no_zeroes = client & u32::from(FLAG_NO_ZEROES) != 0;
    options(export, r, w, session)
}

/// The option haggling, until transmission, abort or STARTTLS.
fn options(
    export: &dyn Export,
    r: &mut impl Read,
    w: &mut impl Write,
    session: &mut Session,
) -> io::Result<Handshake> {
    let no_zeroes = session.no_zeroes;
    while session.options < OPTIONS_MAX {
        session.options += 1;
        if read_u64(r)? != IHAVEOPT {
            return Err(protocol("option without IHAVEOPT"));
        }
        let opt = read_u32(r)?;
        let len = read_u32(r)?;
        if len > OPTION_BYTES_MAX {
            return Err(protocol(format!("option of {len} B")));
        }
        let mut data = vec![0u8; len as usize];
        r.read_exact(&mut data)?;
        let size = export.size_bytes();
        if session.tls_required() && opt != structured::OPT_STARTTLS && opt != OPT_ABORT {
            if opt == OPT_EXPORT_NAME {
                // No reply can refuse it: hang up, as qemu-nbd does.
                return Err(protocol("NBD_OPT_EXPORT_NAME before TLS (--tls required)"));
            }
            opt_reply(w, opt, structured::REP_ERR_TLS_REQD, b"TLS is required")?;
            w.flush()?;
            continue;
        }
        match opt {
            structured::OPT_STARTTLS => {
                if len != 0 {
                    opt_reply(w, opt, REP_ERR_INVALID, b"NBD_OPT_STARTTLS takes no data")?;
                } else if session.tls_active {
                    opt_reply(w, opt, REP_ERR_INVALID, b"TLS is already running")?;
                } else if session.tls.is_none() {
                    opt_reply(w, opt, structured::REP_ERR_POLICY, b"TLS is not configured")?;
                } else {
                    opt_reply(w, opt, REP_ACK, &[])?;
                    w.flush()?;
                    return Ok(Handshake::StartTls);
                }
            }
            structured::OPT_STRUCTURED_REPLY => {
                structured::structured_reply_option(w, opt, &data, &mut session.neg)?
            }
            structured::OPT_LIST_META_CONTEXT | structured::OPT_SET_META_CONTEXT => {
                structured::meta_context_option(w, opt, &data, &mut session.neg)?
            }
            OPT_EXPORT_NAME => {
                let mut b = Vec::with_capacity(134);
                b.extend_from_slice(&size.to_be_bytes());
                b.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
                if !no_zeroes {
                    b.extend_from_slice(&[0u8; 124]);
                }
                w.write_all(&b)?;
                w.flush()?;
                return Ok(Handshake::Transmit);
            }
            OPT_ABORT => {
                // The client may already be gone; an error here is no error.
                let _ = opt_reply(w, opt, REP_ACK, &[]).and_then(|()| w.flush());
                return Ok(Handshake::Done);
            }
            OPT_LIST => {
                if len != 0 {
                    opt_reply(w, opt, REP_ERR_INVALID, b"NBD_OPT_LIST takes no data")?;
                } else {
                    let mut b = (EXPORT_NAME.len() as u32).to_be_bytes().to_vec();
                    b.extend_from_slice(EXPORT_NAME.as_bytes());
                    opt_reply(w, opt, REP_SERVER, &b)?;
                    opt_reply(w, opt, REP_ACK, &[])?;
                }
            }
            OPT_INFO | OPT_GO => {
                if !info_request_valid(&data) {
                    opt_reply(w, opt, REP_ERR_INVALID, b"malformed NBD_OPT_INFO/GO")?;
                } else {
                    let mut b = INFO_EXPORT.to_be_bytes().to_vec();
                    b.extend_from_slice(&size.to_be_bytes());
                    b.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
                    opt_reply(w, opt, REP_INFO, &b)?;
                    let mut b = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
                    for v in [BLOCK_BYTES_MIN, BLOCK_BYTES_PREFERRED, BLOCK_BYTES_MAX] {
                        b.extend_from_slice(&v.to_be_bytes());
                    }
                    opt_reply(w, opt, REP_INFO, &b)?;
                    opt_reply(w, opt, REP_ACK, &[])?;
                    if opt == OPT_GO {
                        w.flush()?;
                        return Ok(Handshake::Transmit);
                    }
                }
            }
            _ => opt_reply(w, opt, REP_ERR_UNSUP, &[])?,
        }
        w.flush()?;
    }
    Err(protocol(format!("more than {OPTIONS_MAX} options")))
}

/// `u32 name length, name, u16 count, count x u16`, exactly filling the option.
fn info_request_valid(data: &[u8]) -> bool {
    if data.len() < 6 {
        return false;
    }
    let name_len = u32::from_be_bytes([data[0], data[1], data[2], data[3]]) as usize;
    let Some(rest) = data
        .len()
        .checked_sub(4)
        .and_then(|x| x.checked_sub(name_len))
    else {
        return false;
    };
    if rest < 2 {
        return false;
    }
    let at = 4 + name_len;
    let count = u16::from_be_bytes([data[at], data[at + 1]]) as usize;
    rest == 2 + 2 * count
}

fn reply(w: &mut impl Write, error: u32, cookie: u64, data: &[u8]) -> io::Result<()> {
    let mut head = [0u8; 16];
    head[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    head[4..8].copy_from_slice(&error.to_be_bytes());
    head[8..16].copy_from_slice(&cookie.to_be_bytes());
    w.write_all(&head)?;
    if error == 0 {
        w.write_all(data)?;
    }
    w.flush()
}

/// EINVAL for misaligned or empty ranges, `past_end` for ranges beyond the export.
fn range_error(export: &dyn Export, offset: u64, len: u32, past_end: u32) -> Option<u32> {
    let sector = u64::from(BLOCK_BYTES_MIN);
    if len == 0 || !offset.is_multiple_of(sector) || !u64::from(len).is_multiple_of(sector) {
        return Some(EINVAL);
    }
    match offset.checked_add(u64::from(len)) {
        Some(end) if end <= export.size_bytes() => None,
        _ => Some(past_end),
    }
}

/// What the threads of one connection share: the socket's reading half (taken in
/// turns), its writing half, and the requests being served.
struct Connection<'a, R, W> {
    export: &'a dyn Export,
    reader: Mutex<&'a mut R>,
    writer: Mutex<&'a mut W>,
    /// Requests taken off the wire and not yet answered.
    in_flight: Mutex<usize>,
    answered: Condvar,
    /// Set at DISC, EOF or an error: the threads stop taking requests.
    closing: AtomicBool,
    /// Structured replies and metadata contexts agreed in the handshake.
    neg: Negotiated,
}

/// One request, read under the reader lock.
struct Request {
    cmd: u16,
    fua: bool,
    /// BLOCK_STATUS's `NBD_CMD_FLAG_REQ_ONE`.
    req_one: bool,
    cookie: u64,
    offset: u64,
    len: u32,
    /// A write's payload.
    data: Vec<u8>,
}

impl<R: Read + Send, W: Write + Send> Connection<'_, R, W> {
    fn send(&self, error: u32, cookie: u64, data: &[u8]) -> io::Result<()> {
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        reply(&mut **w, error, cookie, data)
    }

    /// Replies to a READ or BLOCK_STATUS: a structured chunk once structured replies
    /// are agreed (`data` is then a READ's bytes at `offset`), else a simple reply.
    fn send_chunk(&self, error: u32, cookie: u64, offset: u64, data: &[u8]) -> io::Result<()> {
        if !self.neg.structured {
            return self.send(error, cookie, data);
        }
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if error != 0 {
            structured::write_error(&mut **w, cookie, error, structured::error_message(error))
        } else {
            structured::write_offset_data(&mut **w, cookie, offset, data)
        }
    }

    /// Serves BLOCK_STATUS (checked by [`Connection::read_request`]).
    fn block_status(&self, q: &Request) -> io::Result<()> {
        match structured::extents(self.export, q.offset, q.len, q.req_one) {
            Ok(extents) => {
                let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
                structured::write_block_status(&mut **w, q.cookie, &extents)
            }
            Err(_) => self.send_chunk(EIO, q.cookie, q.offset, &[]),
        }
    }

    /// Waits until no request but the caller's is being served.
    fn drain(&self) {
        let mut n = self.in_flight.lock().expect("in-flight lock");
        while *n > 1 {
            n = self.answered.wait(n).expect("in-flight lock");
        }
    }

    /// One thread's loop: take the reader, read a request, let the reader go (so
    /// another thread reads the next one), serve the request, reply. Returns at DISC,
    /// EOF or an error, which it also tells the other threads.
    fn run(&self) -> io::Result<()> {
        let mut buf: Vec<u8> = Vec::new();
        loop {
            let request = {
                let mut r = self.reader.lock().unwrap_or_else(|p| p.into_inner());
                if self.closing.load(Ordering::Relaxed) {
                    return Ok(());
                }
                match self.read_request(&mut **r) {
                    Ok(Some(request)) => {
                        *self.in_flight.lock().expect("in-flight lock") += 1;
                        // FLUSH and TRIM with FUA wait for the requests before them;
                        // holding the reader meanwhile keeps later ones out.
                        if request.cmd == CMD_FLUSH || (request.cmd == CMD_TRIM && request.fua) {
                            self.drain();
                        }
                        request
                    }
                    Ok(None) => {
                        self.closing.store(true, Ordering::Relaxed);
                        return Ok(());
                    }
                    Err(e) => {
                        self.closing.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                }
            };
            let outcome = self.serve(request, &mut buf);
            *self.in_flight.lock().expect("in-flight lock") -= 1;
            self.answered.notify_all();
            if let Err(e) = outcome {
                self.closing.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
    }

    /// Reads the next request; `None` at DISC or EOF. Requests answered at once
    /// (invalid ones) are answered here and the next one read.
    fn read_request(&self, r: &mut R) -> io::Result<Option<Request>> {
        loop {
            let mut head = [0u8; 28];
            // EOF before a request is an orderly (if impolite) end.
            match r.read(&mut head[..1]) {
                Ok(0) => return Ok(None),
                Ok(_) => r.read_exact(&mut head[1..])?,
                Err(e) => return Err(e),
            }
            let magic = u32::from_be_bytes(head[0..4].try_into().expect("4"));
            if magic != REQUEST_MAGIC {
                return Err(protocol(format!("bad request magic {magic:#x}")));
            }
            let flags = u16::from_be_bytes([head[4], head[5]]);
            let request = Request {
                cmd: u16::from_be_bytes([head[6], head[7]]),
                fua: flags & CMD_FLAG_FUA != 0,
                req_one: flags & structured::CMD_FLAG_REQ_ONE != 0,
                cookie: u64::from_be_bytes(head[8..16].try_into().expect("8")),
                offset: u64::from_be_bytes(head[16..24].try_into().expect("8")),
                len: u32::from_be_bytes(head[24..28].try_into().expect("4")),
                data: Vec::new(),
            };
            let (cookie, offset, len) = (request.cookie, request.offset, request.len);
            match request.cmd {
                CMD_DISC => return Ok(None),
                CMD_READ => {
                    if let Some(e) = (len > BLOCK_BYTES_MAX)
                        .then_some(EINVAL)
                        .or_else(|| range_error(self.export, offset, len, EINVAL))
                    {
                        self.send_chunk(e, cookie, offset, &[])?;
                        continue;
                    }
                }
                structured::CMD_BLOCK_STATUS => {
                    // Any byte range inside the export, in a selected context.
                    let inside = offset
                        .checked_add(u64::from(len))
                        .is_some_and(|end| end <= self.export.size_bytes());
                    if !self.neg.base_allocation || len == 0 || !inside {
                        self.send_chunk(EINVAL, cookie, offset, &[])?;
                        continue;
                    }
                }
                CMD_WRITE => {
                    if len > BLOCK_BYTES_MAX {
                        // The payload cannot be skipped safely: refuse and hang up.
                        self.send(EINVAL, cookie, &[])?;
                        return Err(protocol(format!("write of {len} B")));
                    }
                    let mut data = vec![0u8; len as usize];
                    r.read_exact(&mut data)?;
                    if let Some(e) = range_error(self.export, offset, len, ENOSPC) {
                        self.send(e, cookie, &[])?;
                        continue;
                    }
                    return Ok(Some(Request { data, ..request }));
                }
                CMD_FLUSH | CMD_TRIM | CMD_WRITE_ZEROES => {}
                _ => {
                    self.send(EINVAL, cookie, &[])?;
                    continue;
                }
            }
            return Ok(Some(request));
        }
    }

    /// Serves a request read by [`Connection::read_request`] and replies.
    fn serve(&self, q: Request, buf: &mut Vec<u8>) -> io::Result<()> {
        let export = self.export;
        let err = match q.cmd {
            CMD_READ => {
                buf.resize(q.len as usize, 0);
                let err = export.read_at(q.offset, buf).map_or(EIO, |()| 0);
                return self.send_chunk(err, q.cookie, q.offset, buf);
            }
            structured::CMD_BLOCK_STATUS => return self.block_status(&q),
            CMD_WRITE => export
                .write_at(q.offset, &q.data, q.fua)
                .map_or_else(write_errno, |()| 0),
            CMD_FLUSH => export.flush().map_or_else(write_errno, |()| 0),
            CMD_TRIM => match range_error(export, q.offset, q.len, EINVAL) {
                Some(e) => e,
                None if q.fua => export.flush().map_or(EIO, |()| 0),
                None => 0,
            },
            CMD_WRITE_ZEROES => match range_error(export, q.offset, q.len, ENOSPC) {
                Some(e) => e,
                None => {
                    let piece = (q.len as usize).min(4 << 20);
                    buf.clear();
                    buf.resize(piece, 0);
                    let mut err = 0;
                    let mut at = 0u64;
                    while at < u64::from(q.len) && err == 0 {
                        let n = (u64::from(q.len) - at).min(piece as u64) as usize;
                        err = export
                            .write_at(q.offset + at, &buf[..n], q.fua)
                            .map_or_else(write_errno, |()| 0);
                        at += n as u64;
                    }
                    err
                }
            },
            _ => EINVAL,
        };
        self.send(err, q.cookie, &[])
    }
}

/// The transmission phase, served by `threads` threads in turns: one
/// reads a request and lets the socket go to the next while it serves it, so a client
/// that keeps several requests in flight has them served at once, and replies come as
/// requests finish (an NBD reply carries its request's cookie). A client that waits for
/// each reply is served by one thread with no hand-off. FLUSH and TRIM with FUA first
/// wait for every request before them, so a flush covers every write the client sent
/// before it, more than the protocol asks. Returning waits for the requests in flight.
fn transmission<R: Read + Send, W: Write + Send>(
    export: &dyn Export,
    r: &mut R,
    w: &mut W,
    threads: usize,
    neg: Negotiated,
) -> io::Result<()> {
    let connection = Connection {
        export,
        reader: Mutex::new(r),
        writer: Mutex::new(w),
        in_flight: Mutex::new(0),
        answered: Condvar::new(),
        closing: AtomicBool::new(false),
        neg,
    };
    std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads)
            .map(|_| scope.spawn(|| connection.run()))
            .collect();
        let mut outcome = connection.run();
        for t in others {
            let theirs = t
                .join()
                .unwrap_or_else(|_| Err(protocol("request thread panicked")));
            if outcome.is_ok() {
                outcome = theirs;
            }
        }
        outcome
    })
}

/// Accepts connections until `stop` is set, a thread per connection (serving up to
/// `in_flight` of its requests at once), at most `connections_max` connections at once
/// (more are closed at once). Polls `stop` every 100 ms.
/// Before it returns, every open connection is shut down and its thread joined: a
/// request in progress finishes, so the caller can flush and mark the array clean
/// knowing no write is still moving.
pub fn serve(
    export: Arc<dyn Export>,
    listener: TcpListener,
    connections_max: usize,
    in_flight: usize,
    stop: &AtomicBool,
) -> io::Result<()> {
    serve_tls(export, listener, connections_max, in_flight, None, stop)
}

/// [`serve`], offering TLS (`NBD_OPT_STARTTLS`) or requiring it as `tls` says.
pub fn serve_tls(
    export: Arc<dyn Export>,
    listener: TcpListener,
    connections_max: usize,
    in_flight: usize,
    tls: Option<Arc<TlsServer>>,
    stop: &AtomicBool,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let active = Arc::new(AtomicUsize::new(0));
    let mut open: Vec<(TcpStream, std::thread::JoinHandle<()>)> = Vec::new();
    let mut outcome = Ok(());
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, peer)) => {
                if active.load(Ordering::Relaxed) >= connections_max {
                    eprintln!(
                        "raidlab-engine: {peer}: refused, {connections_max} connections open"
                    );
                    continue;
                }
                let Ok(handle_side) = stream.try_clone() else {
                    continue;
                };
                active.fetch_add(1, Ordering::Relaxed);
                let export = export.clone();
                let active = active.clone();
                let tls = tls.clone();
                // The clone kept here (to shut the connection down at stop) holds the
                // socket open: the thread shuts it down itself when it is done, so the
                // client sees the end of the connection at once.
                let closer = handle_side.try_clone().ok();
                let thread = std::thread::spawn(move || {
                    match serve_stream(&*export, stream, in_flight, tls.as_deref()) {
                        // A client that hangs up mid-handshake (a port probe), or a
                        // connection shut down at stop, is no news.
                        Err(e) if e.kind() != io::ErrorKind::UnexpectedEof => {
                            eprintln!("raidlab-engine: {peer}: {e}");
                        }
                        _ => {}
                    }
                    if let Some(c) = closer {
                        let _ = c.shutdown(std::net::Shutdown::Both);
                    }
                    active.fetch_sub(1, Ordering::Relaxed);
                });
                open.retain(|(_, t)| !t.is_finished());
                open.push((handle_side, thread));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                open.retain(|(_, t)| !t.is_finished());
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    for (stream, _) in &open {
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }
    for (_, thread) in open {
        let _ = thread.join();
    }
    outcome
}

fn serve_stream(
    export: &dyn Export,
    stream: TcpStream,
    in_flight: usize,
    tls: Option<&TlsServer>,
) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_nodelay(true)?;
    let mut reader = io::BufReader::with_capacity(256 << 10, stream.try_clone()?);
    let mut writer = io::BufWriter::with_capacity(256 << 10, stream.try_clone()?);
    let mut session = Session::new(tls);
    match handshake(export, &mut reader, &mut writer, &mut session)? {
        Handshake::Done => Ok(()),
        Handshake::Transmit => transmission(
            export,
            &mut reader,
            &mut writer,
            in_flight.max(1),
            session.neg,
        ),
        Handshake::StartTls => {
            let server = tls.ok_or_else(|| protocol("STARTTLS without TLS"))?;
            // Bytes the client sent after STARTTLS belong to the TLS handshake.
            let (mut reader, writer) = tls::accept(server, stream, reader.buffer())?;
            let mut writer = io::BufWriter::with_capacity(256 << 10, writer);
            session.tls_active = true;
            // Nothing agreed in the clear carries over into TLS.
            session.neg = Negotiated::default();
            let outcome = match options(export, &mut reader, &mut writer, &mut session)? {
                Handshake::Transmit => transmission(
                    export,
                    &mut reader,
                    &mut writer,
                    in_flight.max(1),
                    session.neg,
                ),
                _ => Ok(()),
            };
            if let Ok(mut w) = writer.into_inner() {
                let _ = w.close();
            }
            outcome
        }
    }
}
