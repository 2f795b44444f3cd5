//! Where the control socket lives and who may use it.
//!
//! ```text
//!  $XDG_RUNTIME_DIR/raidlab/<uuid>.sock     (XDG_RUNTIME_DIR set: absolute, non-empty)
//!  $TMPDIR/raidlab-<uid>/<uuid>.sock        (else; TMPDIR defaults to /tmp)
//!        │ directory: a real directory (no symlink), owned by the server's user,
//!        │            mode 0700 (no group or other bits); created so, refused otherwise
//!        └ socket:    mode 0600, set after bind
//!  fallback, when $TMPDIR/raidlab-<uid> is not ours (another user made it first):
//!    /run/raidlab/                          (root: /run is root's alone)
//!    /run/user/<uid>/raidlab/               (others: their systemd runtime directory)
//!    <home>/.cache/raidlab/                 (else: the passwd entry's home directory)
//! ```
//!
//! `$TMPDIR` is shared: any user may create `raidlab-<uid>` there before its owner does.
//! Such a squatted directory is never used; the fallback lives in a directory only its
//! owner (or root) can write, so nobody else can make it first. Server and client both
//! take the fallback while the squatted directory stands, and a client also looks in the
//! other place, so they meet when it goes away meanwhile. `$XDG_RUNTIME_DIR` is the
//! user's own choice: a bad directory there is refused, not worked around.
//!
//! The server answers only peers of its own uid or root (`SO_PEERCRED`); a client talks
//! only to a socket in a directory owned by itself or root with no group/other bits,
//! owned likewise, answered by a process of its uid or root. A new member for `replace`
//! travels as an open file descriptor (`SCM_RIGHTS`), never as a path the server opens.

use crate::error::{Error, Result};
use rustix::net::{
    recvmsg, sendmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use std::fs::Permissions;
use std::io::{ErrorKind, IoSlice, IoSliceMut, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// The effective uid of this process: the user the socket belongs to.
pub(crate) fn our_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether a peer or owner of uid `uid` may be trusted: ourselves or root.
fn trusted(uid: u32) -> bool {
    uid == our_uid() || uid == 0
}

/// `$XDG_RUNTIME_DIR/raidlab` when it is set (absolute), else `$TMPDIR/raidlab-<uid>`;
/// whether it is the former.
fn primary_dir() -> (PathBuf, bool) {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(xdg) if xdg.is_absolute() => (xdg.join("raidlab"), true),
        _ => (
            std::env::temp_dir().join(format!("raidlab-{}", our_uid())),
            false,
        ),
    }
}

/// The private directory the control sockets of this user live in (see the module
/// doc): `$TMPDIR/raidlab-<uid>` gives way to [`fallback_dir`] while another user's
/// file or directory (or a loose one) stands there.
pub fn socket_dir() -> PathBuf {
    let (primary, xdg) = primary_dir();
    if xdg {
        return primary;
    }
    match dir_problem(&primary, |uid| uid == our_uid()) {
        Ok(Some(Some(_))) => fallback_dir().unwrap_or(primary),
        _ => primary,
    }
}

/// Every directory a client looks in for a server's socket, [`socket_dir`] first: the
/// other of `$TMPDIR/raidlab-<uid>` and the fallback too (a squatted directory made or
/// removed after the server started).
pub fn socket_dirs() -> Vec<PathBuf> {
    let first = socket_dir();
    let (primary, xdg) = primary_dir();
    let mut dirs = vec![first.clone()];
    if !xdg {
        dirs.extend(
            [fallback_dir(), Some(primary)]
                .into_iter()
                .flatten()
                .filter(|d| *d != first),
        );
    }
    dirs
}

/// Where this user's sockets go when `$TMPDIR/raidlab-<uid>` is squatted: a directory
/// under one that only this user (or root) may write, so no one else can create it
/// (see the module doc); `None` when there is none.
fn fallback_dir() -> Option<PathBuf> {
    let uid = our_uid();
    let writable_by_us_alone = |dir: &Path| {
        std::fs::symlink_metadata(dir)
            .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0)
    };
    if uid == 0 && writable_by_us_alone(Path::new("/run")) {
        return Some(PathBuf::from("/run/raidlab"));
    }
    let run_user = PathBuf::from(format!("/run/user/{uid}"));
    if writable_by_us_alone(&run_user) {
        return Some(run_user.join("raidlab"));
    }
    home_dir(uid)
        .filter(|h| writable_by_us_alone(h))
        .map(|h| h.join(".cache").join("raidlab"))
}

/// The home directory of `uid` in the passwd database (not `$HOME`: client and server
/// of one user must agree, whatever their environments say).
fn home_dir(uid: u32) -> Option<PathBuf> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0 as libc::c_char; 16 << 10];
    // SAFETY: getpwuid_r writes a passwd record into `pw` whose strings point into
    // `buf`, both alive and sized as passed; `found` says whether it did.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    let rc = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() || pw.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir is a NUL-terminated string inside `buf`, checked non-null.
    let dir = unsafe { CStr::from_ptr(pw.pw_dir) };
    let dir = PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes()));
    dir.is_absolute().then_some(dir)
}

/// What is wrong with `dir` as a private directory whose owner must satisfy `owner_ok`,
/// if anything; `Ok(None)` when it does not exist.
fn dir_problem(dir: &Path, owner_ok: impl Fn(u32) -> bool) -> Result<Option<Option<String>>> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(Error::Io {
                path: dir.to_path_buf(),
                op: "control socket directory",
                source,
            })
        }
    };
    let ft = meta.file_type();
    let problem = if ft.is_symlink() {
        Some("a symlink, not a directory".to_string())
    } else if !ft.is_dir() {
        Some("not a directory".to_string())
    } else if !owner_ok(meta.uid()) {
        Some(format!(
            "owned by uid {}, not by uid {} (another user may have made it)",
            meta.uid(),
            our_uid()
        ))
    } else if meta.mode() & 0o077 != 0 {
        Some(format!(
            "mode {:04o}, a private directory has 0700",
            meta.mode() & 0o7777
        ))
    } else {
        None
    };
    Ok(Some(problem))
}

/// The one-line refusal of a control socket directory.
fn refuse_dir(dir: &Path, problem: &str) -> Error {
    Error::Input(format!(
        "control socket directory {}: {problem}; refusing to use it (remove it, or set \
         XDG_RUNTIME_DIR to a private directory)",
        dir.display()
    ))
}

/// Creates (mode 0700) or checks the server's private directory: a real directory owned
/// by this uid with no group or other permission bits.
fn ensure_private_dir(dir: &Path) -> Result<()> {
    // The fallback under a home directory may need its `.cache` made too.
    let recursive = dir != primary_dir().0;
    match std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(recursive)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(Error::Io {
                path: dir.to_path_buf(),
                op: "create the control socket directory",
                source,
            })
        }
    }
    match dir_problem(dir, |uid| uid == our_uid())? {
        Some(None) => Ok(()),
        Some(Some(p)) => Err(refuse_dir(dir, &p)),
        None => Err(refuse_dir(dir, "vanished after it was created")),
    }
}

/// The uid and pid of the process at the other end of `stream` (`SO_PEERCRED`).
pub(crate) fn peer(stream: &UnixStream) -> std::io::Result<(u32, i32)> {
    let cred = rustix::net::sockopt::socket_peercred(stream)?;
    Ok((cred.uid.as_raw(), cred.pid.as_raw_nonzero().get()))
}

/// Whether the peer of an accepted connection may use this server: its uid or root.
pub(crate) fn peer_allowed(peer_uid: u32) -> bool {
    trusted(peer_uid)
}

/// Binds the control socket `path` for a server: its directory made private (or refused),
/// refused while a live server answers there (naming its pid), a stale socket file
/// removed, the new one set to mode 0600.
pub(crate) fn bind(path: &Path, what: &str) -> Result<UnixListener> {
    let dir = path.parent().expect("a socket path has a directory");
    ensure_private_dir(dir)?;
    let (primary, _) = primary_dir();
    if dir != primary {
        if let Ok(Some(Some(problem))) = dir_problem(&primary, |uid| uid == our_uid()) {
            eprintln!(
                "raidlab-engine: control socket directory {}: {problem}; not using it, the \
                 control socket is in {} instead",
                primary.display(),
                dir.display()
            );
        }
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_socket() => {
            return Err(Error::Input(format!(
                "control socket {}: exists and is not a socket; refusing to replace it",
                path.display()
            )));
        }
        Ok(_) => match UnixStream::connect(path) {
            Ok(s) => {
                let by = peer(&s).map_or(String::new(), |(_, pid)| format!(" by pid {pid}"));
                return Err(Error::Input(format!(
                    "{what} is already being served{by} (control socket {})",
                    path.display()
                )));
            }
            // No listener: a socket file left by a killed server.
            Err(_) => {
                std::fs::remove_file(path).map_err(|source| Error::Io {
                    path: path.to_path_buf(),
                    op: "remove the stale control socket",
                    source,
                })?;
            }
        },
        Err(_) => {}
    }
    let io = |op| {
        move |source| Error::Io {
            path: path.to_path_buf(),
            op,
            source,
        }
    };
    let listener = UnixListener::bind(path).map_err(io("bind control socket"))?;
    // The directory already keeps others out; the socket's own mode says it too.
    std::fs::set_permissions(path, Permissions::from_mode(0o600))
        .map_err(io("chmod control socket"))?;
    Ok(listener)
}

/// Connects a client to the control socket `path`: `Ok(None)` when no server listens
/// there; refused (one line) when the directory or socket is not private to this uid or
/// root, or when the process answering is of another uid.
pub(crate) fn connect(path: &Path) -> Result<Option<UnixStream>> {
    let dir = path.parent().expect("a socket path has a directory");
    match dir_problem(dir, trusted)? {
        None => return Ok(None),
        Some(Some(p)) => return Err(refuse_dir(dir, &p)),
        Some(None) => {}
    }
    let refuse = |why: String| {
        Err(Error::Input(format!(
            "control socket {}: {why}; refusing to talk to it",
            path.display()
        )))
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return refuse(e.to_string()),
    };
    if !meta.file_type().is_socket() {
        return refuse("not a socket".into());
    }
    if !trusted(meta.uid()) {
        return refuse(format!(
            "owned by uid {}, not by uid {} or root",
            meta.uid(),
            our_uid()
        ));
    }
    let stream = match UnixStream::connect(path) {
        Ok(s) => s,
        // A socket file left by a killed server: no server.
        Err(e) if matches!(e.kind(), ErrorKind::ConnectionRefused | ErrorKind::NotFound) => {
            return Ok(None)
        }
        Err(e) => return refuse(e.to_string()),
    };
    match peer(&stream) {
        Ok((uid, _)) if trusted(uid) => Ok(Some(stream)),
        Ok((uid, pid)) => refuse(format!(
            "answered by pid {pid} of uid {uid}, not uid {} or root",
            our_uid()
        )),
        Err(e) => refuse(format!("cannot read its peer credentials: {e}")),
    }
}

/// Writes `line` on `stream`, with `fd` attached (`SCM_RIGHTS`) when given.
pub(crate) fn send_line(
    stream: &mut UnixStream,
    line: &[u8],
    fd: Option<BorrowedFd<'_>>,
) -> std::io::Result<()> {
    let Some(fd) = fd else {
        return stream.write_all(line);
    };
    let fds = [fd];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(std::io::Error::other(
            "SCM_RIGHTS: no room for the descriptor",
        ));
    }
    let sent = loop {
        match sendmsg(
            stream.as_fd(),
            &[IoSlice::new(line)],
            &mut control,
            SendFlags::NOSIGNAL,
        ) {
            Ok(n) => break n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    };
    // The descriptor went with the first bytes; the rest (if any) follows plainly.
    stream.write_all(&line[sent..])
}

/// Descriptors a request may carry at most (more are closed and refused).
const FDS_MAX: usize = 2;

/// Reads one request line (at most `limit` bytes, newline excluded) and the descriptors
/// that came with it. EOF before a newline ends the line.
pub(crate) fn recv_line(
    stream: &UnixStream,
    limit: usize,
) -> std::io::Result<(Vec<u8>, Vec<OwnedFd>)> {
    let mut line = Vec::new();
    let mut fds = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(FDS_MAX))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = match recvmsg(
            stream.as_fd(),
            &mut [IoSliceMut::new(&mut buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Ok(r) => r,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        for msg in control.drain() {
            if let RecvAncillaryMessage::ScmRights(received) = msg {
                fds.extend(received);
            }
        }
        if got.flags.contains(rustix::net::ReturnFlags::CTRUNC) || fds.len() > FDS_MAX {
            return Err(std::io::Error::other("too many file descriptors passed"));
        }
        if got.bytes == 0 {
            return Ok((line, fds));
        }
        let chunk = &buf[..got.bytes];
        if let Some(end) = chunk.iter().position(|&b| b == b'\n') {
            line.extend_from_slice(&chunk[..end]);
            return Ok((line, fds));
        }
        line.extend_from_slice(chunk);
        if line.len() > limit {
            return Err(std::io::Error::other(format!(
                "request longer than {limit} bytes"
            )));
        }
    }
}
