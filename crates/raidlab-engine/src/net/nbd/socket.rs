//! What the NBD server listens on and talks over: TCP, or a Unix socket in the user's
//! private directory (the control socket's, [`crate::net::private_socket`]), whose
//! peers must be of the server's uid or root.
//!
//! ```text
//! Listener::Tcp  ─► Socket::Tcp  (TLS possible)       nbd://HOST:PORT
//! Listener::Unix ─► Socket::Unix (peer uid checked)   nbd+unix:///?socket=PATH
//! ```

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

/// A listening socket of the NBD server.
pub enum Listener {
    /// A TCP address.
    Tcp(TcpListener),
    /// The socket and its path (removed when the server stops).
    Unix(UnixListener, PathBuf),
}

/// One accepted connection.
pub enum Socket {
    /// Over TCP.
    Tcp(TcpStream),
    /// Over the private Unix socket.
    Unix(UnixStream),
}

impl Listener {
    /// A connection and a printable name of its peer; `WouldBlock` when none waits.
    pub fn accept(&self) -> io::Result<(Socket, String)> {
        match self {
            Listener::Tcp(l) => l
                .accept()
                .map(|(s, peer)| (Socket::Tcp(s), peer.to_string())),
            Listener::Unix(l, _) => {
                let (s, _) = l.accept()?;
                let peer = match crate::net::private_socket::peer(&s) {
                    Ok((uid, pid)) => format!("pid {pid} (uid {uid})"),
                    Err(_) => "a Unix socket peer".to_string(),
                };
                Ok((Socket::Unix(s), peer))
            }
        }
    }

    /// Whether `accept` waits.
    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Listener::Tcp(l) => l.set_nonblocking(on),
            Listener::Unix(l, _) => l.set_nonblocking(on),
        }
    }

    /// The URI a client names this export by (`name`: the export's name).
    pub fn uri(&self, name: &str) -> String {
        match self {
            Listener::Tcp(l) => match l.local_addr() {
                Ok(a) => format!("nbd://{a}"),
                Err(_) => "nbd://?".to_string(),
            },
            Listener::Unix(_, path) => format!("nbd+unix:///{name}?socket={}", path.display()),
        }
    }
}

impl From<TcpListener> for Listener {
    fn from(l: TcpListener) -> Self {
        Listener::Tcp(l)
    }
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Listener::Tcp(l) => l.as_fd(),
            Listener::Unix(l, _) => l.as_fd(),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Socket {
    /// Another handle to the same socket.
    pub fn try_clone(&self) -> io::Result<Socket> {
        Ok(match self {
            Socket::Tcp(s) => Socket::Tcp(s.try_clone()?),
            Socket::Unix(s) => Socket::Unix(s.try_clone()?),
        })
    }

    /// Shuts both directions down: the peer sees the end, blocked calls return.
    pub fn shutdown(&self) {
        let _ = match self {
            Socket::Tcp(s) => s.shutdown(Shutdown::Both),
            Socket::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }

    /// `SO_RCVTIMEO`.
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.set_read_timeout(t),
            Socket::Unix(s) => s.set_read_timeout(t),
        }
    }

    /// `SO_SNDTIMEO`.
    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.set_write_timeout(t),
            Socket::Unix(s) => s.set_write_timeout(t),
        }
    }

    /// Blocking, and for TCP without Nagle's delay.
    pub fn prepare(&self) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => {
                s.set_nonblocking(false)?;
                s.set_nodelay(true)
            }
            Socket::Unix(s) => s.set_nonblocking(false),
        }
    }

    /// The TCP stream under it (TLS runs over TCP only).
    pub fn tcp(&self) -> Option<&TcpStream> {
        match self {
            Socket::Tcp(s) => Some(s),
            Socket::Unix(_) => None,
        }
    }

    /// Whether the peer has hung up and left nothing unread: what it sent before is
    /// still served, but no one waits for an answer any more.
    pub fn peer_gone(&self) -> bool {
        let mut fd = libc::pollfd {
            fd: self.as_fd().as_raw_fd(),
            events: libc::POLLRDHUP,
            revents: 0,
        };
        // SAFETY: one valid pollfd for a socket that outlives the call; no wait.
        if unsafe { libc::poll(&mut fd, 1, 0) } <= 0 {
            return false;
        }
        if fd.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
            return true;
        }
        let mut unread: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int, the bytes waiting to be read.
        let ok = unsafe { libc::ioctl(fd.fd, libc::FIONREAD, &mut unread) } == 0;
        fd.revents & libc::POLLRDHUP != 0 && ok && unread == 0
    }
}

impl AsFd for Socket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Socket::Tcp(s) => s.as_fd(),
            Socket::Unix(s) => s.as_fd(),
        }
    }
}

impl Read for &Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => (&*s).read(buf),
            Socket::Unix(s) => (&*s).read(buf),
        }
    }
}

impl Write for &Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => (&*s).write(buf),
            Socket::Unix(s) => (&*s).write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self).read(buf)
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self).write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
