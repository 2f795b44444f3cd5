//! TLS with pre-shared keys (`serve --tls-psk FILE`), as qemu-nbd's `tls-creds-psk`
//! offers it: a keys file of `identity:hexkey` lines, the client names its identity
//! and both prove the key. rustls has no external PSK, so these sessions run on
//! OpenSSL (the `openssl` crate): TLS 1.3 with an external PSK (the server callback,
//! which OpenSSL also uses for TLS 1.3 with a SHA-256 suite) and the TLS 1.2 PSK
//! suites for older clients. No certificate is involved.
//!
//! The session is shared by a connection's reader and writer as in [`crate::net::tls`]:
//! OpenSSL reads its records from an in-memory buffer ([`Io`]) that [`PskReader`]
//! fills from the socket without the lock, and writes its records straight to the
//! socket under the lock, so writers go on while the reader waits for the client.

use openssl::ssl::{ErrorCode, Ssl, SslContext, SslMethod, SslOptions, SslStream, SslVersion};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The longest key accepted, in bytes (OpenSSL's `PSK_MAX_PSK_LEN`).
const KEY_BYTES_MAX: usize = 256;
/// The longest identity accepted, in bytes (OpenSSL's `PSK_MAX_IDENTITY_LEN`).
const IDENTITY_BYTES_MAX: usize = 128;

/// The keys of a keys file: identity to key.
pub type Keys = HashMap<Vec<u8>, Vec<u8>>;

/// Reads a keys file in qemu-nbd's format (GnuTLS's psk file): one `identity:hexkey`
/// per line, blank lines ignored. Refused when the file can be read or written by
/// its group or by others, or when a line is malformed (the error names the line).
pub fn load_keys(path: &Path) -> Result<Keys, String> {
    let shown = path.display();
    let meta =
        std::fs::metadata(path).map_err(|e| format!("--tls-psk: cannot read {shown}: {e}"))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "--tls-psk: {shown} is open to its group or others (mode {mode:04o}); the keys \
             must be private: chmod 600 {shown}"
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--tls-psk: cannot read {shown}: {e}"))?;
    parse_keys(&text).map_err(|e| format!("--tls-psk: {shown}: {e}"))
}

/// Parses the lines of a keys file (see [`load_keys`]).
pub fn parse_keys(text: &str) -> Result<Keys, String> {
    let mut keys = Keys::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let Some((identity, hex)) = line.split_once(':') else {
            return Err(format!("line {n}: expected IDENTITY:HEXKEY"));
        };
        if identity.is_empty() || identity.len() > IDENTITY_BYTES_MAX {
            return Err(format!(
                "line {n}: the identity must have 1 to {IDENTITY_BYTES_MAX} bytes"
            ));
        }
        let key = decode_hex(hex.trim())
            .ok_or_else(|| format!("line {n}: the key must be an even number of hex digits"))?;
        if key.is_empty() || key.len() > KEY_BYTES_MAX {
            return Err(format!(
                "line {n}: the key must have 1 to {KEY_BYTES_MAX} bytes ({} hex digits)",
                2 * KEY_BYTES_MAX
            ));
        }
        if keys.insert(identity.as_bytes().to_vec(), key).is_some() {
            return Err(format!("line {n}: identity {identity:?} given twice"));
        }
    }
    if keys.is_empty() {
        return Err("holds no IDENTITY:HEXKEY line".into());
    }
    Ok(keys)
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.as_bytes()
        .chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

/// The OpenSSL context of a PSK server: the keys, TLS 1.2 and 1.3, no certificate.
pub struct PskServer {
    context: SslContext,
}

impl PskServer {
    /// Builds the server's context from the keys of [`load_keys`].
    pub fn new(keys: Keys) -> Result<Self, String> {
        let err = |e: openssl::error::ErrorStack| format!("--tls-psk: OpenSSL: {e}");
        let mut b = SslContext::builder(SslMethod::tls_server()).map_err(err)?;
        b.set_min_proto_version(Some(SslVersion::TLS1_2))
            .map_err(err)?;
        // TLS 1.2: the PSK suites with forward secrecy first (what GnuTLS's
        // "+ECDHE-PSK:+DHE-PSK:+PSK", qemu's and libnbd's priority, asks for), then plain
        // PSK. TLS 1.3 keeps OpenSSL's suites (the PSK's hash is SHA-256).
        b.set_cipher_list("ECDHEPSK+AESGCM:ECDHEPSK+CHACHA20:PSK+AESGCM:PSK+CHACHA20")
            .map_err(err)?;
        // No resumption: every connection proves the key again; nothing to keep.
        b.set_options(SslOptions::NO_TICKET | SslOptions::IGNORE_UNEXPECTED_EOF);
        b.set_num_tickets(0).map_err(err)?;
        b.set_psk_server_callback(move |_ssl, identity, out| {
            // An unknown identity proves nothing: 0 bytes, and the handshake fails.
            Ok(identity
                .and_then(|id| keys.get(id))
                .filter(|key| key.len() <= out.len())
                .map_or(0, |key| {
                    out[..key.len()].copy_from_slice(key);
                    key.len()
                }))
        });
        Ok(Self { context: b.build() })
    }
}

/// What OpenSSL reads and writes: ciphertext from `inbox` (filled by the reader; empty
/// reads as "would block"), records written straight to the socket.
struct Io {
    inbox: Vec<u8>,
    at: usize,
    eof: bool,
    socket: TcpStream,
}

impl Io {
    fn push(&mut self, data: &[u8]) {
        if self.at == self.inbox.len() {
            self.inbox.clear();
            self.at = 0;
        }
        self.inbox.extend_from_slice(data);
    }
}

impl Read for Io {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = &self.inbox[self.at..];
        if left.is_empty() {
            return if self.eof {
                Ok(0)
            } else {
                Err(io::ErrorKind::WouldBlock.into())
            };
        }
        let n = left.len().min(buf.len());
        buf[..n].copy_from_slice(&left[..n]);
        self.at += n;
        Ok(n)
    }
}

impl Write for Io {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&self.socket).write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

type Session = Arc<Mutex<SslStream<Io>>>;

fn lock(s: &Session) -> std::sync::MutexGuard<'_, SslStream<Io>> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// An OpenSSL error as an I/O error: the socket's own error (a timeout, a reset) when
/// that is what stopped it, else the TLS error in one line.
fn io_error(e: openssl::ssl::Error) -> io::Error {
    match e.into_io_error() {
        Ok(e) => e,
        Err(e) => io::Error::new(io::ErrorKind::InvalidData, format!("TLS (PSK): {e}")),
    }
}

/// Ciphertext bytes read from the socket at once.
const READ_CHUNK: usize = 64 << 10;

/// Runs the TLS handshake as the server, records read through `io` (which bounds the
/// time) and written to the socket; `early` is ciphertext already taken off it.
pub fn accept(
    server: &PskServer,
    socket: TcpStream,
    early: &[u8],
    io: &mut impl Read,
) -> io::Result<(PskReader, PskWriter)> {
    let ssl = Ssl::new(&server.context).map_err(io::Error::other)?;
    let mut stream = SslStream::new(
        ssl,
        Io {
            inbox: early.to_vec(),
            at: 0,
            eof: false,
            socket: socket.try_clone()?,
        },
    )
    .map_err(io::Error::other)?;
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match stream.accept() {
            Ok(()) => break,
            Err(e) if e.code() == ErrorCode::WANT_READ => {
                let n = loop {
                    match io.read(&mut buf) {
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        other => break other?,
                    }
                };
                if n == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the client left during the TLS handshake",
                    ));
                }
                stream.get_mut().push(&buf[..n]);
            }
            Err(e) => return Err(io_error(e)),
        }
    }
    let session = Arc::new(Mutex::new(stream));
    Ok((
        PskReader {
            session: session.clone(),
            socket,
            buf: buf.into_boxed_slice(),
            deadline: None,
        },
        PskWriter { session },
    ))
}

/// The plaintext reading half of a PSK connection.
pub struct PskReader {
    session: Session,
    socket: TcpStream,
    buf: Box<[u8]>,
    deadline: Option<Instant>,
}

impl PskReader {
    /// Bounds every later read of the socket by `until`.
    pub fn set_deadline(&mut self, until: Option<Instant>) {
        self.deadline = until;
    }
}

impl Read for PskReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            {
                let mut s = lock(&self.session);
                match s.ssl_read(buf) {
                    Ok(n) => return Ok(n),
                    // The client's close_notify, or the socket's end.
                    Err(e) if e.code() == ErrorCode::ZERO_RETURN => return Ok(0),
                    Err(e) if e.code() == ErrorCode::WANT_READ => {
                        if s.get_ref().eof {
                            return Ok(0);
                        }
                    }
                    Err(e) => return Err(io_error(e)),
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
                match (&self.socket).read(&mut self.buf) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    other => break other?,
                }
            };
            let mut s = lock(&self.session);
            if n == 0 {
                s.get_mut().eof = true;
            } else {
                s.get_mut().push(&self.buf[..n]);
            }
        }
    }
}

/// The plaintext writing half of a PSK connection: every `write` is encrypted and sent
/// at once (wrap it in a `BufWriter`).
pub struct PskWriter {
    session: Session,
}

impl Write for PskWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        lock(&self.session).ssl_write(data).map_err(io_error)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl PskWriter {
    /// Sends close_notify: the orderly end of the TLS session.
    pub fn close(&mut self) -> io::Result<()> {
        lock(&self.session).shutdown().map(|_| ()).map_err(io_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_and_bad_lines_are_named() {
        let keys = parse_keys("alice:00ff10\n\nbob:AbCd\r\n").unwrap();
        assert_eq!(keys[b"alice".as_slice()], vec![0x00, 0xff, 0x10]);
        assert_eq!(keys[b"bob".as_slice()], vec![0xab, 0xcd]);
        for (text, want) in [
            ("alice:00\nbob\n", "line 2: expected IDENTITY:HEXKEY"),
            (
                "alice:0g\n",
                "line 1: the key must be an even number of hex digits",
            ),
            (
                "alice:abc\n",
                "line 1: the key must be an even number of hex digits",
            ),
            (":abcd\n", "line 1: the identity must have"),
            ("alice:\n", "line 1: the key must have 1 to"),
            ("a:00\na:11\n", "line 2: identity \"a\" given twice"),
            ("\n\n", "holds no IDENTITY:HEXKEY line"),
        ] {
            let e = parse_keys(text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
    }
}
