//! TLS for the NBD server: `NBD_OPT_STARTTLS` upgrades a connection in the handshake,
//! and the rest of the handshake and the whole transmission run over one rustls
//! session (ring provider; TLS 1.2 and 1.3; X.509 certificate and key in PEM).
//!
//! ```text
//! plain handshake ─► NBD_OPT_STARTTLS ─► NBD_REP_ACK ─► TLS handshake on the socket
//!     ─► options again (over TLS) ─► transmission (over TLS)
//! ```
//!
//! The transmission phase reads requests on one thread while others write replies, so
//! the session is shared: [`TlsReader`] reads ciphertext from the socket without the
//! session lock and takes it only to decrypt; [`TlsWriter`] encrypts and sends under
//! the lock, which keeps the records in order. A writer blocked on a client that does
//! not read its replies holds the lock, as a plain writer would hold the socket.
//!
//! Pre-shared keys (qemu-nbd's `tls-creds-psk`, `serve --tls-psk`): rustls (0.23) has
//! no external-PSK API, for TLS 1.2 PSK cipher suites nor for TLS 1.3 external PSKs
//! (it uses PSKs only to resume its own sessions), so a PSK server's sessions run on
//! OpenSSL ([`crate::net::psk`], cargo feature `psk`) behind the same [`TlsReader`] and
//! [`TlsWriter`].

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Whether a server offers TLS and whether it insists on it (`serve --tls`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// No TLS: `NBD_OPT_STARTTLS` is answered `NBD_REP_ERR_POLICY`.
    Off,
    /// TLS for the clients that ask for it (`NBD_OPT_STARTTLS`); plain clients are
    /// served too.
    On,
    /// Every option but `NBD_OPT_STARTTLS` (and `NBD_OPT_ABORT`) before TLS is answered
    /// `NBD_REP_ERR_TLS_REQD`, as qemu-nbd does; `NBD_OPT_EXPORT_NAME`, which cannot be
    /// refused with a reply, ends the connection.
    Required,
}

impl TlsMode {
    /// Parses `off`, `on` or `required` (the value of `serve --tls`).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(Self::Off),
            "on" => Ok(Self::On),
            "required" => Ok(Self::Required),
            _ => Err(format!("expected off, on or required, got {s:?}")),
        }
    }
}

/// A server's TLS: its mode and its credentials (a certificate chain and key for
/// rustls, or pre-shared keys for OpenSSL).
#[derive(Clone)]
pub struct TlsServer {
    /// On or required (a server without TLS has no `TlsServer`).
    pub mode: TlsMode,
    creds: Creds,
}

#[derive(Clone)]
enum Creds {
    X509(Arc<ServerConfig>),
    #[cfg(feature = "psk")]
    Psk(Arc<crate::net::psk::PskServer>),
}

impl std::fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsServer")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl TlsServer {
    /// Loads a PEM certificate chain (the server's certificate first) and its PEM
    /// private key (PKCS#8, PKCS#1 or SEC1). Errors name the flag at fault, one line.
    pub fn load(cert: &Path, key: &Path, mode: TlsMode) -> Result<Self, String> {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .and_then(|it| it.collect::<Result<_, _>>())
            .map_err(|e| format!("--tls-cert: cannot read {}: {e}", cert.display()))?;
        if certs.is_empty() {
            return Err(format!(
                "--tls-cert: {} holds no PEM certificate",
                cert.display()
            ));
        }
        let key = PrivateKeyDer::from_pem_file(key)
            .map_err(|e| format!("--tls-key: cannot read a PEM key in {}: {e}", key.display()))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("--tls: {e}"))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| format!("--tls-key: does not fit --tls-cert: {e}"))?;
        Ok(Self {
            mode,
            creds: Creds::X509(Arc::new(config)),
        })
    }

    /// Loads a keys file of `identity:hexkey` lines (qemu-nbd's `tls-creds-psk`
    /// format; see [`crate::net::psk::load_keys`]). Errors are one line naming `--tls-psk`.
    #[cfg(feature = "psk")]
    pub fn load_psk(keys: &Path, mode: TlsMode) -> Result<Self, String> {
        let server = crate::net::psk::PskServer::new(crate::net::psk::load_keys(keys)?)?;
        Ok(Self {
            mode,
            creds: Creds::Psk(Arc::new(server)),
        })
    }
}

/// The one warning `serve` prints about plain text on the network: `None` when `addr`
/// is a loopback address or TLS is required (`mode`); else what it risks: with no TLS
/// at all, anyone who reaches the port reads and writes the array in the clear; with
/// TLS offered but not required (`on`), plain clients still do.
pub fn plaintext_warning(addr: &SocketAddr, mode: TlsMode) -> Option<String> {
    if mode == TlsMode::Required || addr.ip().is_loopback() {
        return None;
    }
    Some(if mode == TlsMode::Off {
        format!(
            "raidlab-engine: warning: nbd://{addr} is not a loopback address and the \
             export has no TLS: anyone who reaches it can read and write the array in the \
             clear (--tls-cert, --tls-key, --tls required)"
        )
    } else {
        format!(
            "raidlab-engine: warning: nbd://{addr} is not a loopback address and TLS is \
             not required: plain clients on the network read and write the array in the \
             clear (--tls required)"
        )
    })
}

/// Prints [`plaintext_warning`] on stderr, if any.
pub fn warn_if_plain_on_network(addr: SocketAddr, mode: TlsMode) {
    if let Some(warning) = plaintext_warning(&addr, mode) {
        eprintln!("{warning}");
    }
}

/// The rustls session and the socket, shared by a connection's reader and writer.
struct Shared {
    conn: Mutex<ServerConnection>,
    socket: TcpStream,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, ServerConnection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Sends every TLS record the session has queued.
fn send_queued(conn: &mut ServerConnection, mut socket: &TcpStream) -> io::Result<()> {
    while conn.wants_write() {
        conn.write_tls(&mut socket)?;
    }
    Ok(())
}

/// Ciphertext bytes read from the socket at once.
const READ_CHUNK: usize = 64 << 10;

/// The plaintext reading half of a TLS connection.
pub struct TlsReader(ReaderKind);

enum ReaderKind {
    X509(X509Reader),
    #[cfg(feature = "psk")]
    Psk(crate::net::psk::PskReader),
}

/// The plaintext writing half of a TLS connection: every `write` is encrypted and sent
/// at once (wrap it in a `BufWriter`).
pub struct TlsWriter(WriterKind);

enum WriterKind {
    X509(X509Writer),
    #[cfg(feature = "psk")]
    Psk(crate::net::psk::PskWriter),
}

/// The reading half of a rustls connection.
struct X509Reader {
    shared: Arc<Shared>,
    socket: TcpStream,
    /// Ciphertext read from the socket: `pending[at..filled]` is not yet given to the
    /// session.
    pending: Box<[u8]>,
    at: usize,
    filled: usize,
    eof: bool,
    /// While set (the NBD handshake), the socket is read only until then: each read
    /// waits the time left at most, and none is tried once it has passed.
    deadline: Option<Instant>,
}

/// The writing half of a rustls connection.
struct X509Writer {
    shared: Arc<Shared>,
}

/// Runs the TLS handshake on `socket` as the server, its records read and written
/// through `io` (the socket itself, or a wrapper that bounds the time, as the NBD
/// server's handshake deadline). `early` is ciphertext the client sent after
/// `NBD_OPT_STARTTLS` that the plain reader already took off the socket.
pub fn accept(
    server: &TlsServer,
    socket: TcpStream,
    early: &[u8],
    io: &mut (impl Read + Write),
) -> io::Result<(TlsReader, TlsWriter)> {
    match &server.creds {
        Creds::X509(config) => {
            let (r, w) = accept_x509(config, socket, early, io)?;
            Ok((
                TlsReader(ReaderKind::X509(r)),
                TlsWriter(WriterKind::X509(w)),
            ))
        }
        #[cfg(feature = "psk")]
        Creds::Psk(psk) => {
            let (r, w) = crate::net::psk::accept(psk, socket, early, io)?;
            Ok((TlsReader(ReaderKind::Psk(r)), TlsWriter(WriterKind::Psk(w))))
        }
    }
}

impl Read for TlsReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.0 {
            ReaderKind::X509(r) => r.read(buf),
            #[cfg(feature = "psk")]
            ReaderKind::Psk(r) => r.read(buf),
        }
    }
}

impl TlsReader {
    /// Bounds every later read of the socket by `until` (`None`: by the socket's own
    /// read timeout only).
    pub fn set_deadline(&mut self, until: Option<Instant>) {
        match &mut self.0 {
            ReaderKind::X509(r) => r.deadline = until,
            #[cfg(feature = "psk")]
            ReaderKind::Psk(r) => r.set_deadline(until),
        }
    }
}

impl Write for TlsWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match &mut self.0 {
            WriterKind::X509(w) => w.write(data),
            #[cfg(feature = "psk")]
            WriterKind::Psk(w) => w.write(data),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.0 {
            WriterKind::X509(w) => w.flush(),
            #[cfg(feature = "psk")]
            WriterKind::Psk(w) => w.flush(),
        }
    }
}

impl TlsWriter {
    /// Sends close_notify: the orderly end of the TLS session.
    pub fn close(&mut self) -> io::Result<()> {
        match &mut self.0 {
            WriterKind::X509(w) => w.close(),
            #[cfg(feature = "psk")]
            WriterKind::Psk(w) => w.close(),
        }
    }
}

fn accept_x509(
    config: &Arc<ServerConfig>,
    socket: TcpStream,
    early: &[u8],
    io: &mut (impl Read + Write),
) -> io::Result<(X509Reader, X509Writer)> {
    let mut conn = ServerConnection::new(config.clone()).map_err(io::Error::other)?;
    let mut rest = early;
    while !rest.is_empty() {
        conn.read_tls(&mut rest)?;
        conn.process_new_packets().map_err(tls_error)?;
    }
    while conn.is_handshaking() {
        let (read, _) = match conn.complete_io(io) {
            Ok(n) => n,
            Err(e) => {
                // Tell the client why (an alert), if it still listens.
                let _ = send_queued(&mut conn, &socket);
                return Err(e);
            }
        };
        if read == 0 && conn.is_handshaking() && !conn.wants_write() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the client left during the TLS handshake",
            ));
        }
    }
    send_queued(&mut conn, &socket)?;
    let shared = Arc::new(Shared {
        conn: Mutex::new(conn),
        socket: socket.try_clone()?,
    });
    Ok((
        X509Reader {
            shared: shared.clone(),
            socket,
            pending: vec![0u8; READ_CHUNK].into_boxed_slice(),
            at: 0,
            filled: 0,
            eof: false,
            deadline: None,
        },
        X509Writer { shared },
    ))
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("TLS: {e}"))
}

impl Read for X509Reader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            {
                let mut conn = self.shared.lock();
                match conn.reader().read(buf) {
                    // 0: the client's close_notify, an orderly end.
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    // Socket EOF without close_notify: NBD's own framing tells a cut
                    // request from an end between requests.
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                    Err(e) => return Err(e),
                }
                if self.at < self.filled {
                    let n = conn.read_tls(&mut &self.pending[self.at..self.filled])?;
                    self.at += n;
                    let processed = conn.process_new_packets();
                    // Alerts, key updates, session tickets: whatever the session wants
                    // to send now.
                    send_queued(&mut conn, &self.shared.socket)?;
                    processed.map_err(tls_error)?;
                    continue;
                }
                if self.eof {
                    return Ok(0);
                }
            }
            if let Some(until) = self.deadline {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the deadline passed during TLS",
                    ));
                }
                self.socket.set_read_timeout(Some(left))?;
            }
            // The socket is read without the lock: writers go on meanwhile.
            let n = loop {
                match (&self.socket).read(&mut self.pending) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    other => break other?,
                }
            };
            (self.at, self.filled) = (0, n);
            if n == 0 {
                self.eof = true;
            }
        }
    }
}

impl Write for X509Writer {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut conn = self.shared.lock();
        let mut done = 0;
        let mut refused = false;
        while done < data.len() {
            // The session takes what fits its buffer limit; sending empties it.
            let n = conn.writer().write(&data[done..])?;
            done += n;
            send_queued(&mut conn, &self.shared.socket)?;
            if n == 0 {
                if refused {
                    break;
                }
                refused = true;
            } else {
                refused = false;
            }
        }
        if done == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        Ok(done)
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut conn = self.shared.lock();
        send_queued(&mut conn, &self.shared.socket)
    }
}

impl X509Writer {
    fn close(&mut self) -> io::Result<()> {
        let mut conn = self.shared.lock();
        conn.send_close_notify();
        send_queued(&mut conn, &self.shared.socket)
    }
}
