//! An NBD server (fixed newstyle handshake, simple or structured replies, block status,
//! TLS) exporting one [`Export`]. Structured replies and `base:allocation` live in
//! [`super::structured`], TLS (`NBD_OPT_STARTTLS`) in [`crate::net::tls`].
//!
//! ```text
//! server: NBDMAGIC IHAVEOPT flags(FIXED_NEWSTYLE|NO_ZEROES)
//! client: flags ─► options: EXPORT_NAME | INFO | GO | LIST | ABORT | STARTTLS
//!                   | STRUCTURED_REPLY | LIST/SET_META_CONTEXT | other ─► ERR_UNSUP
//! transmission: [magic flags type cookie offset length (payload)] ─► [magic error cookie (data)]
//! ```
//!
//! Limits (clear errors, never a panic): requests must be 512 B-aligned and inside the
//! export (else EINVAL, ENOSPC for writes past the end), at most [`max_payload_bytes`]
//! ([`BLOCK_BYTES_MAX`] or less; a larger WRITE cannot be skipped safely: EINVAL, then
//! the connection closes), known command flags only (else EINVAL), option payloads at
//! most [`OPTION_BYTES_MAX`], [`OPTIONS_MAX`] options per handshake, export names the
//! server's or the empty one (else NBD_REP_ERR_UNKNOWN), a bad request magic closes
//! the connection. TRIM is accepted and does nothing (the
//! data stays readable, parity stays consistent); WRITE_ZEROES writes zeroes through
//! the array.
//!
//! Against hostile clients ([`ServeOptions`]): a handshake must end within its deadline
//! and takes a handshake slot, never a transmission one (when the handshake slots are
//! full the oldest unfinished handshake is closed for the newcomer); when the
//! transmission slots are full, the longest-idle holder is closed for a newcomer
//! ([`super::slots`]), and an idle connection may be closed anyway (`idle_timeout`);
//! one [`Budget`] bounds the request and reply buffers of all connections (a request
//! waits for its bytes, the socket unread meanwhile, and gives up when its client
//! leaves); a reply not taken whole, or a request not received whole, within the I/O
//! timeout closes the connection (a watch per connection cuts a blocked reply, which a
//! client reading a trickle would otherwise hold for a timeout per write); refusals and
//! protocol errors are logged rate-limited. Over TLS the same holds: the TLS handshake
//! and the options after it count against the handshake deadline, and the
//! transmission's buffers come from the same budget.

use super::export::Export;
use super::protocol::*;
use super::slots::{Activity, Slots};
use super::socket::{Listener, Socket};
use super::structured::{self, Negotiated};
use crate::net::budget::{Budget, Buffer, Reserve};
use crate::net::log_limit::{LogLimit, LINES_PER_SECOND};
use crate::net::tls::{self, TlsMode, TlsServer};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The command flags this server knows for `cmd`; any other flag gets EINVAL.
pub fn command_flags_known(cmd: u16) -> u16 {
    match cmd {
        CMD_WRITE_ZEROES => CMD_FLAG_FUA | CMD_FLAG_NO_HOLE,
        structured::CMD_BLOCK_STATUS => CMD_FLAG_FUA | structured::CMD_FLAG_REQ_ONE,
        _ => CMD_FLAG_FUA,
    }
}

/// The transmission flags this server advertises: every flag above.
pub const TRANSMISSION_FLAGS: u16 = TF_HAS_FLAGS
    | TF_SEND_FLUSH
    | TF_SEND_FUA
    | TF_SEND_TRIM
    | TF_SEND_WRITE_ZEROES
    | TF_CAN_MULTI_CONN;

/// Smallest block in bytes (a sector): offsets and lengths are multiples of it.
pub const BLOCK_BYTES_MIN: u32 = 512;
/// Preferred block in bytes announced to clients (a page).
pub const BLOCK_BYTES_PREFERRED: u32 = 4096;
/// Largest request in bytes: [`crate::array::REQUEST_BYTES_MAX`]; a smaller
/// [`ServeOptions::memory_limit_bytes`] lowers it ([`max_payload_bytes`]).
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
/// Export name announced by NBD_OPT_LIST unless `serve --name` says otherwise. The
/// empty name (the protocol's default export) names the export too.
pub const EXPORT_NAME: &str = "raidlab";
/// Longest export name `--name` accepts (the protocol's string limit).
pub const EXPORT_NAME_BYTES_MAX: usize = 4096;
/// Seconds a connection may take to finish its handshake unless told otherwise.
pub const HANDSHAKE_TIMEOUT_S_DEFAULT: u64 = 10;
/// Connections in their handshake at once unless told otherwise.
pub const HANDSHAKES_MAX_DEFAULT: usize = 64;
/// Seconds a reply may wait for a client that does not read it (or the rest of a
/// started request for a client that does not send it) unless told otherwise.
pub const IO_TIMEOUT_S_DEFAULT: u64 = 30;
/// Bytes of the buffer budget unless told otherwise (256 MiB).
pub const MEMORY_LIMIT_DEFAULT: u64 = 256 << 20;
/// Smallest `--memory-limit` (1 MiB): room for the largest request of most clients.
pub const MEMORY_LIMIT_MIN: u64 = 1 << 20;
/// Seconds a connection must have been idle before a newcomer finding every
/// transmission slot taken may close it (see [`super::slots`]) unless told otherwise.
pub const EVICT_IDLE_AFTER_S_DEFAULT: u64 = 5;
/// How often a transmission-phase reader wakes at most to check its deadlines and the
/// stop (more often for short timeouts: a deadline holds within a quarter of itself).
const READ_TICK: Duration = Duration::from_millis(500);

/// Refusals and per-connection errors: rate-limited, so a flood prints a few lines.
static REFUSALS: LogLimit = LogLimit::new(LINES_PER_SECOND);

/// How [`serve`] treats its clients.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Connections in transmission at once; a client past it is closed at accept, or
    /// refused with `NBD_REP_ERR_POLICY` at its GO.
    pub connections_max: usize,
    /// Connections still in their handshake at once, counted apart: a newcomer past it
    /// closes the oldest unfinished handshake.
    pub handshakes_max: usize,
    /// Requests of one connection served at once.
    pub requests_in_flight: usize,
    /// Time to finish the handshake, from accept.
    pub handshake_timeout: Duration,
    /// Time a transmission-phase connection with no request in flight may send none;
    /// `None`: no limit.
    pub idle_timeout: Option<Duration>,
    /// Time a connection must have been idle (no request in flight, none sent) before
    /// a newcomer that finds every transmission slot taken may close it.
    pub evict_idle_after: Duration,
    /// Time a reply may make no progress to the client, or a started request may make
    /// none from it, before the connection is closed.
    pub io_timeout: Duration,
    /// The byte budget over every request payload and reply buffer of all connections.
    pub memory_limit_bytes: u64,
    /// The export's name (the empty name is accepted too).
    pub export_name: String,
    /// TLS offered or required (`NBD_OPT_STARTTLS`); `None`: plain text only.
    pub tls: Option<Arc<TlsServer>>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            connections_max: 16,
            handshakes_max: HANDSHAKES_MAX_DEFAULT,
            requests_in_flight: REQUESTS_IN_FLIGHT_DEFAULT,
            handshake_timeout: Duration::from_secs(HANDSHAKE_TIMEOUT_S_DEFAULT),
            idle_timeout: None,
            evict_idle_after: Duration::from_secs(EVICT_IDLE_AFTER_S_DEFAULT),
            io_timeout: Duration::from_secs(IO_TIMEOUT_S_DEFAULT),
            memory_limit_bytes: MEMORY_LIMIT_DEFAULT,
            export_name: EXPORT_NAME.to_string(),
            tls: None,
        }
    }
}

/// The largest request payload under `budget`: 32 MiB, or the budget's shared part
/// (rounded down to whole sectors) when smaller, so one request always fits.
pub fn max_payload_bytes(budget: &Budget) -> u32 {
    let sector = u64::from(BLOCK_BYTES_MIN);
    (budget.shared_bytes() / sector * sector).clamp(sector, u64::from(BLOCK_BYTES_MAX)) as u32
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

fn timed_out(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, msg.into())
}

/// A socket timeout (`SO_RCVTIMEO`/`SO_SNDTIMEO` expiring reads `EAGAIN` on Linux).
fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
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

/// What one connection is served with, besides its socket: the server's side, the same
/// for the handshake (plain or over TLS) and the transmission.
struct Context<'a> {
    export: &'a dyn Export,
    /// The export's name; the empty name is accepted too.
    name: &'a str,
    budget: &'a Budget,
    /// The largest request payload (advertised in NBD_INFO_BLOCK_SIZE).
    max_payload: u32,
    in_flight: usize,
    idle_timeout: Option<Duration>,
    io_timeout: Duration,
    /// The server stops: waits give up.
    stop: &'a AtomicBool,
    /// Called at GO or EXPORT_NAME: takes a transmission slot; false when none is free.
    admit: &'a (dyn Fn() -> bool + Sync),
    /// The server's TLS, if it offers it.
    tls: Option<&'a TlsServer>,
    /// When the connection last did something, and whether it was evicted.
    activity: &'a Activity,
    /// Whether the client hung up (its requests read, no one waiting for a reply).
    peer_gone: &'a (dyn Fn() -> bool + Sync),
    /// Shuts the socket down: a reply not taken whole within the I/O timeout is cut
    /// off this way (`None`: no socket, as for [`handle_connection`]).
    cut: Option<&'a (dyn Fn() + Sync)>,
}

impl Context<'_> {
    fn knows(&self, name: &[u8]) -> bool {
        name.is_empty() || name == self.name.as_bytes()
    }
}

/// What one connection's handshake has agreed so far: the client's side.
struct HandshakeState {
    /// The connection runs over TLS now.
    tls_active: bool,
    /// TLS is required (`--tls required`).
    tls_required: bool,
    /// The client asked for no 124 zero bytes after NBD_OPT_EXPORT_NAME.
    no_zeroes: bool,
    /// Options received, over plain and TLS.
    options: usize,
    neg: Negotiated,
}

impl HandshakeState {
    /// A new connection's: nothing agreed, in the clear.
    fn new(tls: Option<&TlsServer>) -> Self {
        Self {
            tls_active: false,
            tls_required: tls.is_some_and(|t| t.mode == TlsMode::Required),
            no_zeroes: false,
            options: 0,
            neg: Negotiated::default(),
        }
    }

    /// TLS is required and not running yet.
    fn tls_missing(&self) -> bool {
        self.tls_required && !self.tls_active
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
/// the other, the least CPU per request when the members answer in microseconds), with
/// the defaults of [`ServeOptions`] and a budget of its own.
pub fn handle_connection_with(
    export: &dyn Export,
    reader: &mut (impl Read + Send),
    writer: &mut (impl Write + Send),
    in_flight: usize,
) -> io::Result<()> {
    static NEVER: AtomicBool = AtomicBool::new(false);
    let options = ServeOptions::default();
    let activity = Activity::default();
    let budget = Budget::new(options.memory_limit_bytes, 1);
    let ctx = Context {
        export,
        name: &options.export_name,
        budget: &budget,
        max_payload: max_payload_bytes(&budget),
        in_flight: in_flight.max(1),
        idle_timeout: None,
        io_timeout: options.io_timeout,
        stop: &NEVER,
        admit: &|| true,
        tls: None,
        activity: &activity,
        peer_gone: &|| false,
        cut: None,
    };
    let mut state = HandshakeState::new(None);
    match handshake(&ctx, &mut state, reader, writer)? {
        Handshake::Done => Ok(()),
        Handshake::StartTls => Err(protocol("NBD_OPT_STARTTLS without TLS")),
        Handshake::Transmit => transmission(&ctx, state.neg, reader, writer),
    }
}

/// The greeting, then the options.
fn handshake(
    ctx: &Context,
    state: &mut HandshakeState,
    r: &mut impl Read,
    w: &mut impl Write,
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
    state.no_zeroes = client & u32::from(FLAG_NO_ZEROES) != 0;
    options(ctx, state, r, w)
}

/// The reply to an export name this server does not have.
fn unknown_name(ctx: &Context, name: &[u8]) -> String {
    format!(
        "no export named {:?} (this server's: {:?} or the empty name)",
        String::from_utf8_lossy(name),
        ctx.name
    )
}

/// The option haggling, until transmission, abort or STARTTLS; over TLS, the same
/// again (the options count over both).
fn options(
    ctx: &Context,
    state: &mut HandshakeState,
    r: &mut impl Read,
    w: &mut impl Write,
) -> io::Result<Handshake> {
    while state.options < OPTIONS_MAX {
        state.options += 1;
        let (opt, data) = read_option(r)?;
        if state.tls_missing() && opt != structured::OPT_STARTTLS && opt != OPT_ABORT {
            if opt == OPT_EXPORT_NAME {
                // No reply can refuse it: hang up, as qemu-nbd does.
                return Err(protocol("NBD_OPT_EXPORT_NAME before TLS (--tls required)"));
            }
            opt_reply(w, opt, structured::REP_ERR_TLS_REQD, b"TLS is required")?;
            w.flush()?;
            continue;
        }
        let ended = match opt {
            structured::OPT_STARTTLS => starttls_option(ctx, state, w, &data)?,
            structured::OPT_STRUCTURED_REPLY => {
                structured::structured_reply_option(w, opt, &data, &mut state.neg)?;
                None
            }
            structured::OPT_LIST_META_CONTEXT | structured::OPT_SET_META_CONTEXT => {
                meta_context_option(ctx, state, w, opt, &data)?;
                None
            }
            OPT_EXPORT_NAME => Some(export_name_option(ctx, state, w, &data)?),
            OPT_ABORT => {
                // The client may already be gone; an error here is no error.
                let _ = opt_reply(w, opt, REP_ACK, &[]).and_then(|()| w.flush());
                Some(Handshake::Done)
            }
            OPT_LIST => {
                list_option(ctx, w, &data)?;
                None
            }
            OPT_INFO | OPT_GO => info_option(ctx, w, opt, &data)?,
            _ => {
                opt_reply(w, opt, REP_ERR_UNSUP, &[])?;
                None
            }
        };
        if let Some(end) = ended {
            return Ok(end);
        }
        w.flush()?;
    }
    Err(protocol(format!("more than {OPTIONS_MAX} options")))
}

/// One option from the client: its number and payload (at most [`OPTION_BYTES_MAX`];
/// a larger one ends the handshake).
fn read_option(r: &mut impl Read) -> io::Result<(u32, Vec<u8>)> {
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
    Ok((opt, data))
}

/// `NBD_OPT_STARTTLS`: acknowledged (the handshake then goes on over TLS) when TLS is
/// configured and not running yet.
fn starttls_option(
    ctx: &Context,
    state: &HandshakeState,
    w: &mut impl Write,
    data: &[u8],
) -> io::Result<Option<Handshake>> {
    let opt = structured::OPT_STARTTLS;
    if !data.is_empty() {
        opt_reply(w, opt, REP_ERR_INVALID, b"NBD_OPT_STARTTLS takes no data")?;
    } else if state.tls_active {
        opt_reply(w, opt, REP_ERR_INVALID, b"TLS is already running")?;
    } else if ctx.tls.is_none() {
        opt_reply(w, opt, REP_ERR_POLICY, b"TLS is not configured")?;
    } else {
        opt_reply(w, opt, REP_ACK, &[])?;
        w.flush()?;
        return Ok(Some(Handshake::StartTls));
    }
    Ok(None)
}

/// `NBD_OPT_LIST_META_CONTEXT` / `SET_META_CONTEXT`: the export name is checked as
/// INFO/GO check it, the contexts by [`structured::meta_context_option`].
fn meta_context_option(
    ctx: &Context,
    state: &mut HandshakeState,
    w: &mut impl Write,
    opt: u32,
    data: &[u8],
) -> io::Result<()> {
    match structured::meta_export_name(data) {
        Some(name) if state.neg.structured && !ctx.knows(name) => {
            if opt == structured::OPT_SET_META_CONTEXT {
                state.neg.base_allocation = false;
            }
            opt_reply(w, opt, REP_ERR_UNKNOWN, unknown_name(ctx, name).as_bytes())
        }
        _ => structured::meta_context_option(w, opt, data, &mut state.neg),
    }
}

/// `NBD_OPT_EXPORT_NAME`: the export's size and flags, then transmission. The
/// protocol leaves no way to answer an error here but hanging up.
fn export_name_option(
    ctx: &Context,
    state: &HandshakeState,
    w: &mut impl Write,
    data: &[u8],
) -> io::Result<Handshake> {
    if !ctx.knows(data) {
        return Err(protocol(format!(
            "unknown export name {:?}",
            String::from_utf8_lossy(data)
        )));
    }
    if !(ctx.admit)() {
        return Err(protocol("refused: every transmission slot is taken"));
    }
    let mut b = Vec::with_capacity(134);
    b.extend_from_slice(&ctx.export.size_bytes().to_be_bytes());
    b.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
    if !state.no_zeroes {
        b.extend_from_slice(&[0u8; 124]);
    }
    w.write_all(&b)?;
    w.flush()?;
    Ok(Handshake::Transmit)
}

/// `NBD_OPT_LIST`: the one export's name.
fn list_option(ctx: &Context, w: &mut impl Write, data: &[u8]) -> io::Result<()> {
    let opt = OPT_LIST;
    if !data.is_empty() {
        return opt_reply(w, opt, REP_ERR_INVALID, b"NBD_OPT_LIST takes no data");
    }
    let mut b = (ctx.name.len() as u32).to_be_bytes().to_vec();
    b.extend_from_slice(ctx.name.as_bytes());
    opt_reply(w, opt, REP_SERVER, &b)?;
    opt_reply(w, opt, REP_ACK, &[])
}

/// `NBD_OPT_INFO` / `NBD_OPT_GO`: size, flags and block sizes of the named export;
/// GO then enters transmission if a transmission slot is free.
fn info_option(
    ctx: &Context,
    w: &mut impl Write,
    opt: u32,
    data: &[u8],
) -> io::Result<Option<Handshake>> {
    match info_request_name(data) {
        None => opt_reply(w, opt, REP_ERR_INVALID, b"malformed NBD_OPT_INFO/GO")?,
        Some(name) if !ctx.knows(name) => {
            opt_reply(w, opt, REP_ERR_UNKNOWN, unknown_name(ctx, name).as_bytes())?;
        }
        Some(_) if opt == OPT_GO && !(ctx.admit)() => {
            opt_reply(
                w,
                opt,
                REP_ERR_POLICY,
                b"every transmission slot is taken, retry later",
            )?;
        }
        Some(_) => {
            let mut b = INFO_EXPORT.to_be_bytes().to_vec();
            b.extend_from_slice(&ctx.export.size_bytes().to_be_bytes());
            b.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
            opt_reply(w, opt, REP_INFO, &b)?;
            let mut b = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
            for v in [BLOCK_BYTES_MIN, BLOCK_BYTES_PREFERRED, ctx.max_payload] {
                b.extend_from_slice(&v.to_be_bytes());
            }
            opt_reply(w, opt, REP_INFO, &b)?;
            opt_reply(w, opt, REP_ACK, &[])?;
            if opt == OPT_GO {
                w.flush()?;
                return Ok(Some(Handshake::Transmit));
            }
        }
    }
    Ok(None)
}

/// The export name of an NBD_OPT_INFO/GO payload (`u32 name length, name, u16 count,
/// count x u16`, exactly filling the option); `None` when malformed.
fn info_request_name(data: &[u8]) -> Option<&[u8]> {
    if data.len() < 6 {
        return None;
    }
    let name_len = u32::from_be_bytes([data[0], data[1], data[2], data[3]]) as usize;
    let rest = data.len().checked_sub(4)?.checked_sub(name_len)?;
    if rest < 2 {
        return None;
    }
    let at = 4 + name_len;
    let count = u16::from_be_bytes([data[at], data[at + 1]]) as usize;
    (rest == 2 + 2 * count).then(|| &data[4..at])
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

/// Bytes of the buffer WRITE_ZEROES writes its zeroes from, piece by piece.
const ZEROES_PIECE_BYTES: u32 = 1 << 20;

/// The piece WRITE_ZEROES of `len` bytes writes at a time: its budget buffer is twice
/// that, the zeroes and what the array may allocate to write them (a copy joined for
/// checksums or a journal record, parity; a write's payload may cost as much, but
/// arrives at the network's pace; zeroes cost the client 28 bytes, so a flood of them
/// would otherwise hold several times the budget in such buffers).
fn zeroes_piece(len: u32, max_payload: u32) -> u32 {
    let half = max_payload / 2 / BLOCK_BYTES_MIN * BLOCK_BYTES_MIN;
    len.min(ZEROES_PIECE_BYTES).min(half.max(BLOCK_BYTES_MIN))
}

/// What the threads of one connection share: the socket's reading half (taken in
/// turns), its writing half, and the requests being served.
struct Connection<'a, R, W> {
    ctx: &'a Context<'a>,
    /// Structured replies and metadata contexts agreed in the handshake.
    neg: Negotiated,
    reader: Mutex<&'a mut R>,
    writer: Mutex<&'a mut W>,
    /// Requests taken off the wire and not yet answered.
    in_flight: Mutex<usize>,
    answered: Condvar,
    /// Set at DISC, EOF or an error: the threads stop taking requests.
    closing: AtomicBool,
    /// A reply failed to go out: later replies are not tried.
    broken: AtomicBool,
    /// What this connection has taken of its reserve in the budget.
    reserve: &'a Reserve,
    /// The start of [`Connection::sending_ms`].
    epoch: Instant,
    /// Milliseconds from `epoch` plus one to when the reply being written started
    /// (0: none is): the watch closes the connection when it is not out whole within
    /// the I/O timeout, however the client trickles its reading.
    sending_ms: AtomicU64,
    /// The watch cut the connection for a reply not taken in time.
    reply_cut: AtomicBool,
    /// Set when the connection's threads are done: the watch ends.
    done: Mutex<bool>,
    ended: Condvar,
}
/// What becomes of a request just read: served, refused (its error reply sent; the
/// next request is read), or the end of the connection.
enum Step<'b> {
    Serve(Request<'b>),
    Refused,
    End,
}

/// One request, read under the reader lock.
struct Request<'b> {
    cmd: u16,
    fua: bool,
    /// BLOCK_STATUS's `NBD_CMD_FLAG_REQ_ONE`.
    req_one: bool,
    cookie: u64,
    offset: u64,
    len: u32,
    /// The budget's buffer: a write's payload, a read's reply, write zeroes' zeroes,
    /// a block status reply.
    buf: Option<Buffer<'b>>,
    /// A FLUSH (or TRIM with FUA) whose earlier requests were not all answered within
    /// the I/O timeout: it fails with EIO rather than report them durable.
    unsettled: bool,
}

impl<'a, R: Read + Send, W: Write + Send> Connection<'a, R, W> {
    /// Sends a reply. After a reply failed (the thread that saw it returns its error
    /// and the connection closes), later ones are dropped unsent.
    fn send(&self, error: u32, cookie: u64, data: &[u8]) -> io::Result<()> {
        self.send_with(|w| reply(w, error, cookie, data))
    }

    /// Sends a reply `write` writes (simple or structured), as [`Connection::send`].
    fn send_with(&self, write: impl FnOnce(&mut W) -> io::Result<()>) -> io::Result<()> {
        if self.broken.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let started = self.epoch.elapsed().as_millis() as u64 + 1;
        self.sending_ms.store(started, Ordering::Relaxed);
        let sent = write(&mut **w);
        self.sending_ms.store(0, Ordering::Relaxed);
        drop(w);
        match sent {
            Ok(()) => {
                self.touch();
                Ok(())
            }
            Err(e) => {
                self.broken.store(true, Ordering::Relaxed);
                self.closing.store(true, Ordering::Relaxed);
                Err(
                    if is_timeout(&e) || self.reply_cut.load(Ordering::Relaxed) {
                        timed_out(format!(
                            "closed: the client took no reply data for {} s",
                            self.ctx.io_timeout.as_secs()
                        ))
                    } else {
                        e
                    },
                )
            }
        }
    }

    /// Replies to a READ or BLOCK_STATUS: a structured chunk once structured replies
    /// are agreed (`data` is then a READ's bytes at `offset`), else a simple reply.
    fn send_chunk(&self, error: u32, cookie: u64, offset: u64, data: &[u8]) -> io::Result<()> {
        if !self.neg.structured {
            return self.send(error, cookie, data);
        }
        self.send_with(|w| {
            if error != 0 {
                structured::write_error(w, cookie, error, structured::error_message(error))
            } else {
                structured::write_offset_data(w, cookie, offset, data)
            }
        })
    }

    /// Most extents in one BLOCK_STATUS reply: its chunk fits the max payload (and the
    /// budget's buffer [`Connection::read_request`] took for it).
    fn extents_max(&self, req_one: bool) -> usize {
        if req_one {
            return 1;
        }
        let room =
            (self.ctx.max_payload as usize).saturating_sub(structured::BLOCK_STATUS_HEAD_BYTES);
        (room / structured::EXTENT_BYTES).clamp(1, structured::EXTENTS_MAX)
    }

    /// Serves BLOCK_STATUS (checked by [`Connection::read_request`]) into `buf`, the
    /// budget's buffer for its reply.
    fn block_status(
        &self,
        cookie: u64,
        offset: u64,
        len: u32,
        req_one: bool,
        buf: &mut [u8],
    ) -> io::Result<()> {
        let max = self.extents_max(req_one);
        match structured::extents(self.ctx.export, offset, len, max, &|| self.giving_up()) {
            Ok(extents) => {
                let n = structured::encode_block_status(buf, cookie, &extents);
                self.send_with(|w| {
                    w.write_all(&buf[..n])?;
                    w.flush()
                })
            }
            Err(_) => self.send_chunk(EIO, cookie, offset, &[]),
        }
    }

    fn touch(&self) {
        self.ctx.activity.touch();
    }

    /// The connection closes, the server stops, the connection was evicted, or its
    /// client left: waits and walks for it give up.
    fn giving_up(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
            || self.ctx.stop.load(Ordering::Relaxed)
            || self.ctx.activity.evicted()
            || (self.ctx.peer_gone)()
    }

    /// Until the connection's threads are done: closes the connection when a reply has
    /// been going out for the I/O timeout (a blocked write waits on the socket's send
    /// timeout, which each byte the client takes restarts; this bounds the whole reply,
    /// and the writers queued behind it fail at once).
    fn watch_replies(&self, cut: &(dyn Fn() + Sync)) {
        let limit = self.ctx.io_timeout.as_millis() as u64;
        let tick = self.watch_tick();
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        while !*done {
            done = self
                .ended
                .wait_timeout(done, tick)
                .unwrap_or_else(|p| p.into_inner())
                .0;
            let since = self.sending_ms.load(Ordering::Relaxed);
            let now = self.epoch.elapsed().as_millis() as u64 + 1;
            if since != 0 && now.saturating_sub(since) >= limit {
                self.reply_cut.store(true, Ordering::Relaxed);
                self.closing.store(true, Ordering::Relaxed);
                cut();
                return;
            }
        }
    }

    /// A buffer of `len` bytes from the budget, waiting for it (the caller holds the
    /// reader: the socket is not read meanwhile); `None` when the connection closes or
    /// the server stops first.
    fn buffer(&self, len: u32) -> Option<Buffer<'a>> {
        // Waiting on the server, not idle: never evicted for it.
        self.ctx.activity.busy(true);
        let buffer = self
            .ctx
            .budget
            .buffer(len as usize, self.reserve, &|| self.giving_up());
        self.ctx.activity.busy(false);
        buffer
    }

    /// How often a wait bounded by the I/O timeout looks at its clock and at the
    /// connection: an eighth of the timeout, between 10 ms and the read tick.
    fn watch_tick(&self) -> Duration {
        (self.ctx.io_timeout / 8).clamp(Duration::from_millis(10), READ_TICK)
    }

    /// Waits until no request but the caller's is being served: `false` when they are
    /// not all answered within the I/O timeout (a member that stopped answering), or the
    /// connection closes first. The caller holds the reader, so the wait stops the whole
    /// connection: it must end, and what waited must not claim the earlier writes durable.
    fn drain(&self) -> bool {
        let started = Instant::now();
        let tick = self.watch_tick();
        let mut n = self.in_flight.lock().expect("in-flight lock");
        while *n > 1 {
            if self.giving_up() || started.elapsed() >= self.ctx.io_timeout {
                return false;
            }
            n = self
                .answered
                .wait_timeout(n, tick)
                .expect("in-flight lock")
                .0;
        }
        true
    }

    /// One thread's loop: take the reader, read a request, let the reader go (so
    /// another thread reads the next one), serve the request, reply. Returns at DISC,
    /// EOF or an error, which it also tells the other threads.
    fn run(&self) -> io::Result<()> {
        loop {
            let request = {
                let mut r = self.reader.lock().unwrap_or_else(|p| p.into_inner());
                if self.closing.load(Ordering::Relaxed) {
                    return Ok(());
                }
                match self.read_request(&mut **r) {
                    Ok(Some(request)) => {
                        *self.in_flight.lock().expect("in-flight lock") += 1;
                        self.ctx.activity.busy(true);
                        self.touch();
                        // FLUSH and TRIM with FUA wait for the requests before them;
                        // holding the reader meanwhile keeps later ones out.
                        let mut request = request;
                        if request.cmd == CMD_FLUSH || (request.cmd == CMD_TRIM && request.fua) {
                            request.unsettled = !self.drain();
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
            let outcome = self.serve(request);
            {
                let mut n = self.in_flight.lock().expect("in-flight lock");
                *n -= 1;
                // Only `drain` waits, for the count to come down to its own request:
                // waking it at every answer cost a futex system call per request.
                if *n <= 1 {
                    self.answered.notify_all();
                }
            }
            self.ctx.activity.busy(false);
            if let Err(e) = outcome {
                self.closing.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
    }

    /// Waits for the first byte of a request: `false` at EOF, or when the connection
    /// closes or the server stops while it waits; an error when the connection stays
    /// idle past the idle timeout. Wakes every read tick (the socket's read timeout).
    fn await_request(&self, r: &mut R, first: &mut [u8]) -> io::Result<bool> {
        loop {
            match r.read(first) {
                Ok(0) => return Ok(false),
                Ok(_) => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_timeout(&e) => {
                    if self.giving_up() {
                        return Ok(false);
                    }
                    if let Some(idle) = self.ctx.idle_timeout {
                        let since = self.ctx.activity.idle_for();
                        if since.is_some_and(|since| since >= idle) {
                            return Err(timed_out(format!(
                                "closed: idle for {} s",
                                idle.as_secs()
                            )));
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Fills `buf` from the rest of a request whose first byte came at `started`; an
    /// error when the whole request has not come within the I/O timeout of it (a client
    /// stalling mid-request, or trickling it a byte at a time, holding its buffer).
    fn read_rest(&self, r: &mut R, buf: &mut [u8], started: Instant) -> io::Result<()> {
        let mut at = 0;
        while at < buf.len() {
            match r.read(&mut buf[at..]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => at += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_timeout(&e) => {
                    if self.ctx.stop.load(Ordering::Relaxed) || self.ctx.activity.evicted() {
                        return Err(e);
                    }
                }
                Err(e) => return Err(e),
            }
            if at < buf.len() && started.elapsed() >= self.ctx.io_timeout {
                return Err(timed_out(format!(
                    "closed: a request not received whole within {} s",
                    self.ctx.io_timeout.as_secs()
                )));
            }
        }
        Ok(())
    }

    /// Reads the next request; `None` at DISC or EOF (or the connection closing or the
    /// server stopping while it waits). Requests answered at once (invalid ones) are
    /// answered here and the next one read. The buffer a request needs is taken from
    /// the budget here, before its payload is read.
    fn read_request(&self, r: &mut R) -> io::Result<Option<Request<'a>>> {
        loop {
            let mut head = [0u8; 28];
            // EOF before a request is an orderly (if impolite) end.
            if !self.await_request(r, &mut head[..1])? {
                return Ok(None);
            }
            // A client sending a request is not idle (a stalled one is, from here).
            self.touch();
            let started = Instant::now();
            self.read_rest(r, &mut head[1..], started)?;
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
                buf: None,
                unsettled: false,
            };
            let flags_known = flags & !command_flags_known(request.cmd) == 0;
            let step = match request.cmd {
                CMD_DISC => Step::End,
                CMD_READ => self.admit_read(request, flags_known)?,
                CMD_WRITE => self.admit_write(r, request, flags_known)?,
                structured::CMD_BLOCK_STATUS => self.admit_block_status(request, flags_known)?,
                CMD_WRITE_ZEROES if flags_known => {
                    let (offset, len) = (request.offset, request.len);
                    if range_error(self.ctx.export, offset, len, ENOSPC).is_none() {
                        let piece = zeroes_piece(len, self.ctx.max_payload);
                        self.with_buffer(request, 2 * piece)
                    } else {
                        Step::Serve(request)
                    }
                }
                CMD_FLUSH | CMD_TRIM if flags_known => Step::Serve(request),
                _ => {
                    self.send(EINVAL, request.cookie, &[])?;
                    Step::Refused
                }
            };
            match step {
                Step::Serve(request) => return Ok(Some(request)),
                Step::Refused => continue,
                Step::End => return Ok(None),
            }
        }
    }

    /// `request` with a buffer of `bytes` from the budget, or the end when the
    /// connection gives up waiting for one.
    fn with_buffer(&self, request: Request<'a>, bytes: u32) -> Step<'a> {
        match self.buffer(bytes) {
            Some(buf) => Step::Serve(Request {
                buf: Some(buf),
                ..request
            }),
            None => Step::End,
        }
    }

    /// A READ: refused (EINVAL) when too large, with unknown flags or outside the
    /// export, else given its reply's buffer.
    fn admit_read(&self, request: Request<'a>, flags_known: bool) -> io::Result<Step<'a>> {
        let (cookie, offset, len) = (request.cookie, request.offset, request.len);
        if let Some(e) = (len > self.ctx.max_payload || !flags_known)
            .then_some(EINVAL)
            .or_else(|| range_error(self.ctx.export, offset, len, EINVAL))
        {
            self.send_chunk(e, cookie, offset, &[])?;
            return Ok(Step::Refused);
        }
        Ok(self.with_buffer(request, len))
    }

    /// A WRITE: its payload read into a buffer from the budget, then refused (EINVAL,
    /// ENOSPC past the end) or served; one too large to skip safely ends the connection.
    fn admit_write(
        &self,
        r: &mut R,
        request: Request<'a>,
        flags_known: bool,
    ) -> io::Result<Step<'a>> {
        let (cookie, offset, len) = (request.cookie, request.offset, request.len);
        if len > self.ctx.max_payload {
            // The payload cannot be skipped safely: refuse and hang up.
            self.send(EINVAL, cookie, &[])?;
            return Err(protocol(format!("write of {len} B")));
        }
        let Some(mut buf) = self.buffer(len) else {
            return Ok(Step::End);
        };
        // The payload's time starts once it has a buffer: while the request waited for
        // one, the socket was not read, the client held back by its flow control.
        self.read_rest(r, &mut buf[..len as usize], Instant::now())?;
        let refused = (!flags_known)
            .then_some(EINVAL)
            .or_else(|| range_error(self.ctx.export, offset, len, ENOSPC));
        if let Some(e) = refused {
            drop(buf);
            self.send(e, cookie, &[])?;
            return Ok(Step::Refused);
        }
        Ok(Step::Serve(Request {
            buf: Some(buf),
            ..request
        }))
    }

    /// A BLOCK_STATUS: any byte range inside the export, in a selected context; its
    /// reply's bytes come from the budget as a read's do.
    fn admit_block_status(&self, request: Request<'a>, flags_known: bool) -> io::Result<Step<'a>> {
        let (cookie, offset, len) = (request.cookie, request.offset, request.len);
        let inside = offset
            .checked_add(u64::from(len))
            .is_some_and(|end| end <= self.ctx.export.size_bytes());
        if !self.neg.base_allocation || !flags_known || len == 0 || !inside {
            self.send_chunk(EINVAL, cookie, offset, &[])?;
            return Ok(Step::Refused);
        }
        let bytes = structured::block_status_bytes(self.extents_max(request.req_one));
        Ok(self.with_buffer(request, bytes as u32))
    }

    /// Serves a request read by [`Connection::read_request`] and replies; its buffer
    /// goes back to the budget once the reply is sent.
    fn serve(&self, q: Request<'a>) -> io::Result<()> {
        let export = self.ctx.export;
        let len = q.len as usize;
        let err = match (q.cmd, q.buf) {
            (CMD_READ, Some(mut buf)) => {
                let err = export
                    .read_at(q.offset, &mut buf[..len])
                    .map_or(EIO, |()| 0);
                return self.send_chunk(err, q.cookie, q.offset, &buf[..len]);
            }
            (structured::CMD_BLOCK_STATUS, Some(mut buf)) => {
                return self.block_status(q.cookie, q.offset, q.len, q.req_one, &mut buf);
            }
            (CMD_WRITE, Some(buf)) => {
                let err = export
                    .write_at(q.offset, &buf[..len], q.fua)
                    .map_or_else(write_errno, |()| 0);
                drop(buf);
                err
            }
            (CMD_FLUSH | CMD_TRIM, _) if q.unsettled => EIO,
            (CMD_FLUSH, _) => export.flush().map_or_else(write_errno, |()| 0),
            (CMD_TRIM, _) => match range_error(export, q.offset, q.len, EINVAL) {
                Some(e) => e,
                None if q.fua => export.flush().map_or(EIO, |()| 0),
                None => 0,
            },
            (CMD_WRITE_ZEROES, buf) => match (range_error(export, q.offset, q.len, ENOSPC), buf) {
                (Some(e), _) => e,
                (None, None) => EINVAL,
                (None, Some(mut buf)) => {
                    // The buffer's second half is never touched: it counts what the
                    // array may allocate to write each piece (see `zeroes_piece`).
                    let piece = (q.len as usize).min(buf.len() / 2);
                    buf[..piece].fill(0);
                    let mut err = 0;
                    let mut at = 0u64;
                    while at < u64::from(q.len) && err == 0 {
                        let n = (u64::from(q.len) - at).min(piece as u64) as usize;
                        err = export
                            .write_at(q.offset + at, &buf[..n], q.fua)
                            .map_or(EIO, |()| 0);
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

/// The transmission phase, served by `ctx.in_flight` threads in turns: one
/// reads a request and lets the socket go to the next while it serves it, so a client
/// that keeps several requests in flight has them served at once, and replies come as
/// requests finish (an NBD reply carries its request's cookie). A client that waits for
/// each reply is served by one thread with no hand-off. FLUSH and TRIM with FUA first
/// wait for every request before them, so a flush covers every write the client sent
/// before it, more than the protocol asks. Returning waits for the requests in flight.
fn transmission<R: Read + Send, W: Write + Send>(
    ctx: &Context,
    neg: Negotiated,
    r: &mut R,
    w: &mut W,
) -> io::Result<()> {
    let reserve = Reserve::new();
    ctx.activity.touch();
    let connection = Connection {
        ctx,
        neg,
        reserve: &reserve,
        reader: Mutex::new(r),
        writer: Mutex::new(w),
        in_flight: Mutex::new(0),
        answered: Condvar::new(),
        closing: AtomicBool::new(false),
        broken: AtomicBool::new(false),
        epoch: Instant::now(),
        sending_ms: AtomicU64::new(0),
        reply_cut: AtomicBool::new(false),
        done: Mutex::new(false),
        ended: Condvar::new(),
    };
    std::thread::scope(|scope| {
        let watch = ctx
            .cut
            .map(|cut| scope.spawn(|| connection.watch_replies(cut)));
        let others: Vec<_> = (1..ctx.in_flight.max(1))
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
        *connection.done.lock().unwrap_or_else(|p| p.into_inner()) = true;
        connection.ended.notify_all();
        if let Some(w) = watch {
            let _ = w.join();
        }
        outcome
    })
}

/// Connections in their handshake: id, a handle to close it, its peer; oldest first.
type Handshaking = Mutex<VecDeque<(u64, Arc<Socket>, String)>>;

/// Accepts connections on `listener` until `stop` is set, a thread per connection
/// (serving up to `options.requests_in_flight` of its requests at once). A connection
/// first takes a handshake slot (`handshakes_max`; a newcomer past it closes the oldest
/// unfinished handshake), then at GO a transmission slot (`connections_max`; when every
/// one is taken, the longest-idle holder is closed for it, see [`super::slots`], else
/// it is refused with `NBD_REP_ERR_POLICY`). On a Unix socket only peers of the
/// server's uid or root are served. Looks at `stop` every 100 ms. Before it returns,
/// every open connection is shut down and its thread joined: a request in progress
/// finishes, so the caller can flush and mark the array clean knowing no write is
/// still moving.
pub fn serve(
    export: Arc<dyn Export>,
    listener: impl Into<Listener>,
    options: &ServeOptions,
    stop: &AtomicBool,
) -> io::Result<()> {
    serve_all(export, vec![listener.into()], options, stop)
}

/// [`serve`] on several listeners at once (TCP and a Unix socket), sharing the slots
/// and the budget.
pub fn serve_all(
    export: Arc<dyn Export>,
    listeners: Vec<Listener>,
    options: &ServeOptions,
    stop: &AtomicBool,
) -> io::Result<()> {
    for l in &listeners {
        l.set_nonblocking(true)?;
    }
    let shared = Shared {
        export,
        options: Arc::new(options.clone()),
        budget: Arc::new(Budget::new(
            options.memory_limit_bytes,
            options.connections_max,
        )),
        slots: Arc::new(Slots::new(
            options.connections_max,
            options.evict_idle_after,
        )),
        handshaking: Arc::new(Mutex::new(VecDeque::new())),
        stopping: Arc::new(AtomicBool::new(false)),
    };
    let mut next_id = 0u64;
    let mut open: Vec<(Arc<Socket>, std::thread::JoinHandle<()>)> = Vec::new();
    let mut outcome = Ok(());
    'serving: while !stop.load(Ordering::Relaxed) {
        let mut accepted = false;
        for listener in &listeners {
            match accept_one(listener) {
                Ok(Some((stream, peer))) => {
                    accepted = true;
                    if let Some(started) = shared.start(stream, peer, next_id) {
                        next_id += 1;
                        open.push(started);
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    outcome = Err(e);
                    break 'serving;
                }
            }
        }
        open.retain(|(_, t)| !t.is_finished());
        if !accepted {
            REFUSALS.flush();
            wait_readable(&listeners, Duration::from_millis(100));
        }
    }
    shared.stopping.store(true, Ordering::Relaxed);
    for (stream, _) in &open {
        stream.shutdown();
    }
    for (_, thread) in open {
        let _ = thread.join();
    }
    REFUSALS.flush();
    outcome
}

/// One connection from `listener`, `None` when none waits; an error only when the
/// listener itself fails. On a Unix socket, a peer of another uid is closed here.
fn accept_one(listener: &Listener) -> io::Result<Option<(Socket, String)>> {
    match listener.accept() {
        Ok((Socket::Unix(s), peer)) => {
            let uid = crate::net::private_socket::peer(&s).map(|(uid, _)| uid);
            if uid.is_ok_and(crate::net::private_socket::peer_allowed) {
                return Ok(Some((Socket::Unix(s), peer)));
            }
            REFUSALS.log(&format!(
                "raidlab-engine: {peer}: refused, the NBD socket serves only its own user \
                 and root"
            ));
            Ok(None)
        }
        Ok(accepted) => Ok(Some(accepted)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(None),
        // Out of descriptors or memory (a flood), or a peer gone before accept:
        // the connections open still get served; accept again shortly.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                    | Some(libc::ECONNABORTED)
            ) =>
        {
            REFUSALS.log(&format!("raidlab-engine: accept: {e}"));
            std::thread::sleep(Duration::from_millis(100));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// What the accept loop of [`serve`] shares with every connection thread.
#[derive(Clone)]
struct Shared {
    export: Arc<dyn Export>,
    options: Arc<ServeOptions>,
    budget: Arc<Budget>,
    /// Connections in transmission.
    slots: Arc<Slots>,
    handshaking: Arc<Handshaking>,
    /// Set when [`serve`] returns: connection threads waiting on the budget give up.
    stopping: Arc<AtomicBool>,
}

impl Shared {
    /// Starts connection `id` on its own thread; returns a handle to shut it down at
    /// stop and its thread. Every connection gets to its GO (a handshake slot is
    /// bounded in number and time), where it is given a transmission slot or refused
    /// with a reason.
    fn start(
        &self,
        stream: Socket,
        peer: String,
        id: u64,
    ) -> Option<(Arc<Socket>, std::thread::JoinHandle<()>)> {
        // Shared, not duplicated: one descriptor per connection however many hold
        // it (the accept loop to shut it down at stop, the handshake slots to close
        // it for a newcomer), so a flood of connections closed for newcomers whose
        // threads have not ended yet does not run the server out of descriptors.
        let stream = Arc::new(stream);
        self.take_handshake_slot(id, stream.clone(), peer.clone());
        let connection = self.clone();
        let served = stream.clone();
        let thread = std::thread::spawn(move || connection.serve(id, peer, &served));
        Some((stream, thread))
    }

    /// Registers connection `id` as handshaking, first closing the oldest unfinished
    /// handshakes while the handshake slots are full.
    fn take_handshake_slot(&self, id: u64, registered: Arc<Socket>, peer: String) {
        let mut h = self.handshaking.lock().unwrap_or_else(|p| p.into_inner());
        while h.len() >= self.options.handshakes_max.max(1) {
            let Some((_, oldest, oldest_peer)) = h.pop_front() else {
                break;
            };
            oldest.shutdown();
            REFUSALS.log(&format!(
                "raidlab-engine: {oldest_peer}: closed, handshake unfinished \
                 with {} handshakes open",
                self.options.handshakes_max
            ));
        }
        h.push_back((id, registered, peer));
    }

    /// At GO: connection `id` leaves the handshake slots for a transmission slot, if
    /// it was not closed for a newcomer and one is free (or can be freed); whether it
    /// got one.
    fn admit(
        &self,
        (id, peer): (u64, &str),
        accepted: Instant,
        activity: &Arc<Activity>,
        stream: &Arc<Socket>,
    ) -> bool {
        // A wait for an idle holder to come of age ends before the newcomer's own
        // handshake deadline, with time left to send the answer.
        let until = accepted + self.options.handshake_timeout * 3 / 4;
        {
            let h = self.handshaking.lock().unwrap_or_else(|p| p.into_inner());
            // Closed for a newcomer: its socket is shut already.
            if !h.iter().any(|(i, ..)| *i == id) {
                return false;
            }
        }
        let cutter = stream.clone();
        let cut = Box::new(move || cutter.shutdown());
        if !self.slots.take(
            id,
            peer.to_string(),
            activity.clone(),
            cut,
            &REFUSALS,
            until,
        ) {
            return false;
        }
        let mut h = self.handshaking.lock().unwrap_or_else(|p| p.into_inner());
        h.retain(|(i, ..)| *i != id);
        true
    }

    /// Connection `id`'s thread: its handshake, a transmission slot at GO (if one is
    /// free and it was not closed for a newcomer), its requests; then its slots back.
    fn serve(self, id: u64, peer: String, stream: &Arc<Socket>) {
        let admitted = AtomicBool::new(false);
        let activity = Arc::new(Activity::default());
        let accepted = Instant::now();
        let admit = || {
            let took = self.admit((id, &peer), accepted, &activity, stream);
            admitted.store(took, Ordering::SeqCst);
            took
        };
        let peer_gone = || stream.peer_gone();
        let cut = || stream.shutdown();
        let ctx = Context {
            export: &*self.export,
            name: &self.options.export_name,
            budget: &self.budget,
            max_payload: max_payload_bytes(&self.budget),
            in_flight: self.options.requests_in_flight.max(1),
            idle_timeout: self.options.idle_timeout,
            io_timeout: self.options.io_timeout,
            stop: &self.stopping,
            admit: &admit,
            // TLS runs over TCP; a Unix socket is private to its user already.
            tls: stream.tcp().and(self.options.tls.as_deref()),
            activity: &activity,
            peer_gone: &peer_gone,
            cut: Some(&cut),
        };
        match serve_stream(&ctx, stream, self.options.handshake_timeout) {
            // A client that hangs up mid-handshake (a port probe), or a
            // connection shut down at stop, is no news.
            Err(e) if e.kind() != io::ErrorKind::UnexpectedEof => {
                REFUSALS.log(&format!("raidlab-engine: {peer}: {e}"));
            }
            _ => {}
        }
        // Its slot is free before the client sees the end, so a client
        // that reconnects at once finds it.
        self.handshaking
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(i, ..)| *i != id);
        if admitted.load(Ordering::SeqCst) {
            self.slots.release(id);
        }
        // The accept loop's handle holds the socket open: shut it down here,
        // so the client sees the end at once.
        stream.shutdown();
    }
}

/// Waits until one of `listeners` has a connection to accept, `timeout` at most.
fn wait_readable(listeners: &[Listener], timeout: Duration) {
    use std::os::fd::{AsFd, AsRawFd};
    let mut fds: Vec<libc::pollfd> = listeners
        .iter()
        .map(|l| libc::pollfd {
            fd: l.as_fd().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: valid pollfds for the listeners, which outlive the call.
    let ready = unsafe {
        libc::poll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            timeout.as_millis() as libc::c_int,
        )
    };
    if ready < 0 {
        // EINTR (a signal: the caller looks at the stop flag) or worse: no busy loop.
        std::thread::sleep(timeout.min(Duration::from_millis(10)));
    }
}

/// Reads and writes of the handshake through `inner` (the socket, or TLS over it),
/// which must end by `until` (from accept): the socket's timeouts are set to the time
/// left before each call.
struct Deadline<'a, S> {
    socket: &'a Socket,
    inner: S,
    until: Instant,
    timeout: Duration,
}
impl<S> Deadline<'_, S> {
    /// Time left, or the timeout error when none is.
    fn left(&self) -> io::Result<Duration> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(self.expired())
        } else {
            Ok(left)
        }
    }

    fn expired(&self) -> io::Error {
        timed_out(format!(
            "closed: handshake not finished in {} s",
            self.timeout.as_secs()
        ))
    }

    fn check<T>(&self, r: io::Result<T>) -> io::Result<T> {
        r.map_err(|e| if is_timeout(&e) { self.expired() } else { e })
    }
}

impl<S: Read> Read for Deadline<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.socket.set_read_timeout(Some(self.left()?))?;
        let r = self.inner.read(buf);
        self.check(r)
    }
}

impl<S: Write> Write for Deadline<'_, S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.socket.set_write_timeout(Some(self.left()?))?;
        let r = self.inner.write(buf);
        self.check(r)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.socket.set_write_timeout(Some(self.left()?))?;
        let r = self.inner.flush();
        self.check(r)
    }
}

/// The socket's timeouts for the transmission phase: the reader wakes every read tick,
/// a reply may wait for the client the I/O timeout.
fn transmission_timeouts(ctx: &Context, stream: &Socket) -> io::Result<()> {
    let shortest = ctx
        .idle_timeout
        .map_or(ctx.io_timeout, |i| i.min(ctx.io_timeout));
    let tick = (shortest / 4).clamp(Duration::from_millis(10), READ_TICK);
    stream.set_read_timeout(Some(tick))?;
    stream.set_write_timeout(Some(ctx.io_timeout.max(Duration::from_millis(1))))
}

/// One connection on its socket: the handshake by its deadline (unbuffered, so
/// nothing of the transmission is read ahead and no large buffer is held by a
/// connection that has not finished it), then transmission through 256 KiB buffers,
/// the socket waking its reader every read tick. After STARTTLS, the TLS handshake and
/// the options over TLS keep the same deadline (the TLS reader checks it before every
/// read of the socket, so a client trickling a record cannot outlast it), then the
/// transmission runs over TLS with the same timeouts and budget.
fn serve_stream(ctx: &Context, stream: &Socket, handshake_timeout: Duration) -> io::Result<()> {
    stream.prepare()?;
    let until = Instant::now() + handshake_timeout;
    let t = handshake_timeout;
    let mut state = HandshakeState::new(ctx.tls);
    match handshake(
        ctx,
        &mut state,
        &mut deadline(stream, stream, until, t),
        &mut deadline(stream, stream, until, t),
    )? {
        Handshake::Done => Ok(()),
        Handshake::Transmit => {
            transmission_timeouts(ctx, stream)?;
            let mut reader = io::BufReader::with_capacity(256 << 10, stream);
            let mut writer = io::BufWriter::with_capacity(256 << 10, stream);
            transmission(ctx, state.neg, &mut reader, &mut writer)
        }
        Handshake::StartTls => serve_over_tls(ctx, stream, state, until, t),
    }
}

/// `inner` (the socket or a TLS side of it) bound to the handshake's deadline.
fn deadline<S>(socket: &Socket, inner: S, until: Instant, timeout: Duration) -> Deadline<'_, S> {
    Deadline {
        socket,
        inner,
        until,
        timeout,
    }
}

/// After STARTTLS: the TLS handshake, the options again over TLS (within the same
/// handshake deadline), then the transmission over TLS, ended with close_notify.
fn serve_over_tls(
    ctx: &Context,
    stream: &Socket,
    mut state: HandshakeState,
    until: Instant,
    t: Duration,
) -> io::Result<()> {
    let server = ctx.tls.ok_or_else(|| protocol("STARTTLS without TLS"))?;
    let tcp = stream
        .tcp()
        .ok_or_else(|| protocol("STARTTLS on a Unix socket"))?;
    // The handshake is read unbuffered: nothing of the TLS handshake was taken
    // off the socket yet.
    let (mut reader, mut writer) = tls::accept(
        server,
        tcp.try_clone()?,
        &[],
        &mut deadline(stream, stream, until, t),
    )?;
    reader.set_deadline(Some(until));
    state.tls_active = true;
    // Nothing agreed in the clear carries over into TLS.
    state.neg = Negotiated::default();
    let ended = options(
        ctx,
        &mut state,
        &mut deadline(stream, &mut reader, until, t),
        &mut deadline(stream, &mut writer, until, t),
    );
    let outcome = match ended {
        Ok(Handshake::Transmit) => {
            reader.set_deadline(None);
            transmission_timeouts(ctx, stream)?;
            let mut buffered = io::BufWriter::with_capacity(256 << 10, &mut writer);
            let outcome = transmission(ctx, state.neg, &mut reader, &mut buffered);
            drop(buffered);
            outcome
        }
        Ok(_) => Ok(()),
        Err(e) => Err(e),
    };
    // close_notify, unless the client is gone or stuck (the write would wait).
    if outcome.is_ok() {
        let _ = writer.close();
    }
    outcome
}
