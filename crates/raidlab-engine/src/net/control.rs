//! The control socket of a served array, and the JSON every command reports in.
//!
//! While `serve` runs it owns the members (it holds an exclusive lock on each): `status`,
//! `fail`, `replace`, `add-spare`, `check` and `repair` given the same members find the server by the
//! array's UUID ([`socket_path`]) and ask it, so a member is failed, replaced and
//! rebuilt online while NBD clients keep working.
//!
//! The socket lives in a private directory and answers only its own uid and root (see
//! [`crate::net::private_socket`]). The server never opens a path a client names: `replace`
//! sends the new member as an open file descriptor (`SCM_RIGHTS`) that the client opened
//! with its own rights, and a member named by a path that is not one of the served
//! members' is resolved by the client (`role` in the request).
//!
//! ```text
//! client: one JSON line      {"cmd": "replace", "old": "/m1", "new": "/m4", "rate": null, "wait": true}
//!                            + SCM_RIGHTS: the open new member
//! server: JSON lines         {"progress": {"role": 1, "done_bytes": .., "total_bytes": ..}} ...
//!         then exactly one   {"ok": <status or scrub report>} | {"error": "one line"}
//! ```

use crate::array::{Fault, RebuildProgress, ScrubReport, Status};
use crate::error::{Error, Result};
use crate::net::private_socket;
use crate::Array;
use serde_json::{json, Value};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where the server of array `uuid` listens: `<uuid>.sock` in this user's private
/// directory, `$XDG_RUNTIME_DIR/raidlab/` or else `$TMPDIR/raidlab-<uid>/` (or its
/// fallback when another user squats it: see [`private_socket`]). A path too long for
/// a Unix socket address (a deep `$TMPDIR`) moves to `/tmp/raidlab-<uid>/`; client and
/// server apply the same rule, so they still meet.
pub fn socket_path(uuid: u128) -> PathBuf {
    in_dir(&private_socket::socket_dir(), uuid)
}

/// `<uuid>.sock` in `dir`, or in `/tmp/raidlab-<uid>/` when too long (see [`socket_path`]).
fn in_dir(dir: &Path, uuid: u128) -> PathBuf {
    let name = format!("{uuid:032x}.sock");
    let path = dir.join(&name);
    if path.as_os_str().len() < SUN_PATH_BYTES {
        return path;
    }
    PathBuf::from("/tmp")
        .join(format!("raidlab-{}", private_socket::our_uid()))
        .join(name)
}

/// The first server of `uuid` answering in one of this user's socket directories
/// ([`private_socket::socket_dirs`]), with its socket path. A refusal of the first
/// place (a socket or directory that is not private) stands; the other places are
/// only looked at, never trusted when not private.
fn connect(uuid: u128) -> Result<Option<(UnixStream, PathBuf)>> {
    for (i, dir) in private_socket::socket_dirs().iter().enumerate() {
        let path = in_dir(dir, uuid);
        match private_socket::connect(&path) {
            Ok(Some(stream)) => return Ok(Some((stream, path))),
            Ok(None) => {}
            Err(e) if i == 0 => return Err(e),
            Err(_) => {}
        }
    }
    Ok(None)
}

/// `sizeof(sockaddr_un.sun_path)` on Linux, its terminating NUL included.
const SUN_PATH_BYTES: usize = 108;

/// The report of `status` (and of `create`, `fail`, `replace`) of an array no server
/// holds: `served` is false, and `dirty` means it was stopped uncleanly.
pub fn status_json(s: &Status) -> Value {
    status_report(s, false)
}

/// The report a server gives of the array it serves: `served` is true, and `dirty`
/// only says that it is open (md's superblock is dirty while an array runs), not that
/// it was stopped uncleanly.
fn served_status_json(s: &Status) -> Value {
    status_report(s, true)
}

fn status_report(s: &Status, served: bool) -> Value {
    let g = s.geometry;
    let state = if s.rebuild.is_some() {
        "rebuilding"
    } else if s.failed.is_empty() {
        "clean"
    } else {
        "degraded"
    };
    let mut report = json!({
        "uuid": format!("{:032x}", s.uuid),
        "level": g.level().to_string(),
        "layout": g.layout().map(|l| l.to_string()),
        "chunk_bytes": g.stripe_unit_bytes(),
        "member_count": g.members(),
        "capacity_bytes": g.capacity_bytes(),
        "tolerated_failures": g.tolerated_failures(),
        "state": state,
        "dirty": s.dirty,
        "served": served,
        "events": s.events,
        "failed": (0..g.members()).filter(|&m| s.failed.contains(m)).collect::<Vec<_>>(),
        "dirty_regions": s.dirty_regions,
        "rebuild": s.rebuild.as_ref().map(progress_json),
        "journal": s.journal.as_ref().map(|p| p.display().to_string()),
        "faults": s.faults.iter().map(fault_json).collect::<Vec<_>>(),
        "journal_replayed": s.journal_replayed,
        "consistency_policy": s.policy.name(),
        "ppl_recovered": s.ppl_recovered,
        "integrity": s.integrity.name(),
        "members": s.members.iter().enumerate().map(|(role, (path, st))| json!({
            "role": role,
            "path": path.as_ref().map(|p| p.display().to_string()),
            "state": st.to_string(),
            "read_errors_corrected": s.read_errors_corrected.get(role).copied().unwrap_or(0),
            "checksum_mismatches": s.checksum_mismatches.get(role).copied().unwrap_or(0),
            "bad_blocks": s.bad_blocks.get(role).map_or(Vec::new(), |l| l.iter()
                .map(|&(offset, len)| json!({"offset_bytes": offset, "len_bytes": len}))
                .collect()),
        })).collect::<Vec<_>>(),
        "spares": s.spares.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "cache_uuid": s.cache_uuid.map(|u| format!("{u:032x}")),
    });
    if let Some(c) = &s.cache {
        report["cache"] = c.clone();
    }
    report
}

fn fault_json(f: &Fault) -> Value {
    match *f {
        Fault::ReadError {
            member,
            offset_bytes,
            len_bytes,
        } => {
            json!({"member": member, "kind": "read-error", "offset_bytes": offset_bytes, "len_bytes": len_bytes})
        }
        Fault::BadSector {
            member,
            offset_bytes,
            len_bytes,
        } => {
            json!({"member": member, "kind": "bad-sector", "offset_bytes": offset_bytes, "len_bytes": len_bytes})
        }
        Fault::WriteError {
            member,
            offset_bytes,
            len_bytes,
        } => {
            json!({"member": member, "kind": "write-error", "offset_bytes": offset_bytes, "len_bytes": len_bytes})
        }
        Fault::Latency { member, delay } => {
            json!({"member": member, "kind": "latency", "delay_ms": delay.as_secs_f64() * 1e3})
        }
    }
}

fn progress_json(r: &RebuildProgress) -> Value {
    json!({
        "role": r.role,
        "path": r.path.display().to_string(),
        "done_bytes": r.done_bytes,
        "total_bytes": r.total_bytes,
    })
}

/// The report of `check` and `repair`.
pub fn scrub_json(r: &ScrubReport) -> Value {
    json!({
        "stripes_checked": r.stripes_checked,
        "mismatched_stripes": r.mismatched_stripes,
        "repaired_stripes": r.repaired_stripes,
        "unresolved_stripes": r.unresolved_stripes,
        "unresolved": r.unresolved.iter()
            .map(|&(offset, len)| json!({"offset_bytes": offset, "len_bytes": len}))
            .collect::<Vec<_>>(),
        "unreadable_stripes": r.unreadable_stripes,
        "read_errors_corrected": r.read_errors_corrected,
        "checksum_mismatches": r.checksum_mismatches,
    })
}

/// Binds the control socket of `uuid` (mode 0600, in the private directory, created or
/// checked). Refused when a server already answers on it; a socket file left by a killed
/// server is removed.
pub fn bind(uuid: u128) -> Result<UnixListener> {
    private_socket::bind(&socket_path(uuid), &format!("array {uuid:032x}"))
}

/// Refusals of other users' connections, logged at most once a second.
struct RefusalLog {
    last: Option<Instant>,
    suppressed: u64,
}

impl RefusalLog {
    fn note(&mut self, uid: u32, pid: i32) {
        if self
            .last
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            self.suppressed += 1;
            return;
        }
        let more = match std::mem::take(&mut self.suppressed) {
            0 => String::new(),
            n => format!(" ({n} more refused since the last line)"),
        };
        eprintln!(
            "raidlab-engine: control: refused pid {pid} of uid {uid} (only uid {} and root){more}",
            private_socket::our_uid()
        );
        self.last = Some(Instant::now());
    }
}

/// Whether the peer of `stream` may use this server; if not, it gets one refusal line,
/// the connection is closed and the refusal logged.
fn admit(stream: &mut UnixStream, log: &mut RefusalLog) -> bool {
    let (uid, pid) = match private_socket::peer(stream) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("raidlab-engine: control: cannot read a peer's credentials: {e}");
            return false;
        }
    };
    if private_socket::peer_allowed(uid) {
        return true;
    }
    let _ = stream.set_nonblocking(true);
    let _ = send(
        stream,
        &json!({"error": format!(
            "control socket: uid {uid} may not use this server (only uid {} and root)",
            private_socket::our_uid()
        )}),
    );
    log.note(uid, pid);
    false
}

/// Answers control requests until `stop`; then cancels a running rebuild, waits for it
/// and for the requests being answered, and removes the socket file.
pub fn serve(array: Arc<Array>, listener: UnixListener, stop: &'static AtomicBool) {
    let path = listener
        .local_addr()
        .ok()
        .and_then(|a| a.as_pathname().map(Path::to_path_buf));
    let rebuild: Arc<Mutex<Option<JoinHandle<()>>>> = Arc::default();
    if let Some((role, new, offset, rate)) = array.resumable_rebuild() {
        // md resumes an interrupted recovery when the array starts: so does `serve`.
        eprintln!(
            "raidlab-engine: resuming the rebuild of member {role} onto {} at {offset} of {} B, {}",
            new.display(),
            array.geometry().member_used_bytes(),
            rate.map_or("unlimited".into(), |r| format!("at most {r} B/s"))
        );
        let array = array.clone();
        *rebuild.lock().expect("rebuild handle") = Some(std::thread::spawn(move || {
            match array.resume_rebuild(|_, _| {}) {
                Ok(()) => eprintln!("raidlab-engine: member {role} rebuilt, array clean"),
                Err(e) => eprintln!("raidlab-engine: rebuild of member {role}: {e}"),
            }
        }));
    }
    let mut answering: Vec<JoinHandle<()>> = Vec::new();
    let mut refusals = RefusalLog {
        last: None,
        suppressed: 0,
    };
    if listener.set_nonblocking(true).is_ok() {
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    if !admit(&mut stream, &mut refusals) {
                        continue;
                    }
                    let (array, rebuild) = (array.clone(), rebuild.clone());
                    answering.retain(|t| !t.is_finished());
                    answering.push(std::thread::spawn(move || {
                        if let Err(e) = answer(&array, &rebuild, stream) {
                            eprintln!("raidlab-engine: control: {e}");
                        }
                    }));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    start_spare_rebuild(&array, &rebuild);
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    eprintln!("raidlab-engine: control socket: {e}");
                    break;
                }
            }
        }
    }
    array.cancel_rebuild();
    if let Some(h) = rebuild.lock().expect("rebuild handle").take() {
        let _ = h.join();
    }
    // A scrub or a fail in progress finishes before the array is closed.
    for t in answering {
        let _ = t.join();
    }
    if let Some(p) = path {
        let _ = std::fs::remove_file(p);
    }
}

/// md's spare recovery, on the control thread's tick: when a member is failed and a hot
/// spare is there (see [`Array::take_spare`]), the spare takes the member's role and
/// its rebuild starts, online, in the rebuild slot a `replace` would use. Nothing while
/// a rebuild runs or its thread has not finished.
fn start_spare_rebuild(array: &Arc<Array>, rebuild: &Arc<Mutex<Option<JoinHandle<()>>>>) {
    let mut slot = rebuild.lock().expect("rebuild handle");
    if slot.as_ref().is_some_and(|h| !h.is_finished()) {
        return;
    }
    let Some((role, path, file)) = array.take_spare() else {
        return;
    };
    if let Some(h) = slot.take() {
        let _ = h.join();
    }
    eprintln!(
        "raidlab-engine: member {role} failed: hot spare {} takes its role, rebuilding",
        path.display()
    );
    let array = array.clone();
    *slot = Some(std::thread::spawn(move || {
        match array.rebuild_onto(role, file, &path, None, |_, _| {}) {
            Ok(()) => {
                eprintln!("raidlab-engine: member {role} rebuilt onto the hot spare, array clean")
            }
            Err(e) => eprintln!(
                "raidlab-engine: rebuild of member {role} onto hot spare {}: {e}",
                path.display()
            ),
        }
    }));
}

fn send(stream: &mut UnixStream, v: &Value) -> std::io::Result<()> {
    let mut line = v.to_string();
    line.push('\n');
    stream.write_all(line.as_bytes())
}

fn answer(
    array: &Arc<Array>,
    rebuild: &Arc<Mutex<Option<JoinHandle<()>>>>,
    stream: UnixStream,
) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    // A client that connects and says nothing must not hold a stopping server.
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let (line, mut fds) = private_socket::recv_line(&stream, 64 << 10)?;
    let mut out = stream;
    let reply = match serde_json::from_slice::<Value>(&line) {
        Ok(req) => execute(array, rebuild, &req, fds.pop(), &mut out),
        Err(e) => Err(Error::Input(format!("control request: not JSON: {e}"))),
    };
    match reply {
        Ok(v) => send(&mut out, &json!({ "ok": v })),
        Err(e) => send(&mut out, &json!({ "error": e.to_string() })),
    }
}

fn text<'a>(req: &'a Value, field: &str) -> Result<&'a str> {
    req.get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| Error::Input(format!("control request: {field}: a string is needed")))
}

/// The role a request names in `field`: one of the served member paths or a role index,
/// else the role the client read from that file's superblock (`role`). The server opens
/// no path a client names.
fn served_role(array: &Array, req: &Value, field: &str) -> Result<u32> {
    let target = text(req, field)?;
    let st = array.status();
    let members = st.geometry.members();
    if let Some(r) = st
        .members
        .iter()
        .position(|(p, _)| p.as_deref() == Some(Path::new(target)))
    {
        return Ok(r as u32);
    }
    let hint = req.get("role").and_then(Value::as_u64);
    match target.parse::<u32>().ok().or(hint.map(|r| r as u32)) {
        Some(r) if r < members => Ok(r),
        _ => Err(Error::Input(format!(
            "{target}: not a member of this array (give one of the member paths or a role 0..={})",
            members - 1
        ))),
    }
}

/// The new member of a `replace` (or the spare of an `add-spare`), as the client opened
/// it: a regular file or block device open for reading and writing.
fn passed_member(fd: Option<OwnedFd>, label: &Path) -> Result<File> {
    let Some(fd) = fd else {
        return Err(Error::Input(
            "replace, add-spare: the new member must come as an open file descriptor (SCM_RIGHTS); \
             this server opens no path for a client"
                .into(),
        ));
    };
    let bad = |why: &str| Error::Member {
        path: label.to_path_buf(),
        message: format!("the descriptor passed for it is {why}"),
    };
    let flags = rustix::fs::fcntl_getfl(fd.as_fd()).map_err(|_| bad("not open"))?;
    if flags & rustix::fs::OFlags::RWMODE != rustix::fs::OFlags::RDWR {
        return Err(bad("not open for reading and writing"));
    }
    let file = File::from(fd);
    let ft = file.metadata().map_err(|_| bad("not a file"))?.file_type();
    use std::os::unix::fs::FileTypeExt;
    if !(ft.is_file() || ft.is_block_device()) {
        return Err(bad("neither a regular file nor a block device"));
    }
    Ok(file)
}

fn execute(
    array: &Arc<Array>,
    rebuild: &Arc<Mutex<Option<JoinHandle<()>>>>,
    req: &Value,
    fd: Option<OwnedFd>,
    out: &mut UnixStream,
) -> Result<Value> {
    match text(req, "cmd")? {
        "status" => Ok(served_status_json(&array.status())),
        "fail" => {
            let role = served_role(array, req, "target")?;
            array.fail_member(role)?;
            Ok(served_status_json(&array.status()))
        }
        "inject" => {
            inject(array, req)?;
            Ok(served_status_json(&array.status()))
        }
        "add-spare" => {
            let path = PathBuf::from(text(req, "spare")?);
            let file = passed_member(fd, &path)?;
            array.add_spare(file, &path)?;
            Ok(served_status_json(&array.status()))
        }
        "check" | "repair" => {
            let repair = text(req, "cmd")? == "repair";
            Ok(scrub_json(&array.scrub(repair)?))
        }
        "replace" => replace(array, rebuild, req, fd, out),
        other => Err(Error::Input(format!(
            "control request: unknown cmd {other:?}; allowed: status, fail, replace, add-spare, inject, check, repair"
        ))),
    }
}

/// `inject`: a fault on a served member (or `clear`: none left).
fn inject(array: &Array, req: &Value) -> Result<()> {
    let member = served_role(array, req, "target")?;
    let num = |f: &str| {
        req.get(f)
            .and_then(Value::as_u64)
            .ok_or_else(|| Error::Input(format!("control request: {f}: a number is needed")))
    };
    match text(req, "kind")? {
        "clear" => array.clear_faults(),
        "read-error" => array.inject_fault(Fault::ReadError {
            member,
            offset_bytes: num("offset_bytes")?,
            len_bytes: num("len_bytes")?,
        })?,
        "bad-sector" => array.inject_fault(Fault::BadSector {
            member,
            offset_bytes: num("offset_bytes")?,
            len_bytes: num("len_bytes")?,
        })?,
        "write-error" => array.inject_fault(Fault::WriteError {
            member,
            offset_bytes: num("offset_bytes")?,
            len_bytes: num("len_bytes")?,
        })?,
        "latency" => array.inject_fault(Fault::Latency {
            member,
            delay: Duration::from_micros(num("delay_us")?),
        })?,
        other => {
            return Err(Error::Input(format!(
                "control request: kind {other:?}; allowed: read-error, bad-sector, write-error, latency, clear"
            )))
        }
    };
    Ok(())
}

/// `replace`: fails the old member (if it is not failed yet) and rebuilds onto the
/// new one in the background; with `wait`, streams the rebuild's progress to the
/// client until it ends (the rebuild goes on if the client goes away).
fn replace(
    array: &Arc<Array>,
    rebuild: &Arc<Mutex<Option<JoinHandle<()>>>>,
    req: &Value,
    fd: Option<OwnedFd>,
    out: &mut UnixStream,
) -> Result<Value> {
    let role = served_role(array, req, "old")?;
    let new = PathBuf::from(text(req, "new")?);
    let file = passed_member(fd, &new)?;
    let rate = req.get("rate").and_then(Value::as_u64);
    let wait = req.get("wait").and_then(Value::as_bool).unwrap_or(true);
    if !array.failed().contains(role) {
        array.fail_member(role)?;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let mut slot = rebuild.lock().expect("rebuild handle");
        if let Some(r) = array.rebuild_progress() {
            return Err(Error::Input(format!(
                "a rebuild of member {} is running; wait for it",
                r.role
            )));
        }
        if let Some(h) = slot.take() {
            let _ = h.join();
        }
        let array = array.clone();
        *slot = Some(std::thread::spawn(move || {
            let r = array.rebuild_onto(role, file, &new, rate, |_, _| {});
            match &r {
                Ok(()) => eprintln!("raidlab-engine: member {role} rebuilt, array clean"),
                Err(e) => eprintln!("raidlab-engine: rebuild of member {role}: {e}"),
            }
            let _ = tx.send(r.map_err(|e| e.to_string()));
        }));
    }
    if !wait {
        // Let the rebuild register itself, so status shows it.
        while array.rebuild_progress().is_none() && !array.failed().is_empty() {
            if let Ok(r) = rx.recv_timeout(Duration::from_millis(5)) {
                r.map_err(Error::Input)?;
                break;
            }
        }
        return Ok(served_status_json(&array.status()));
    }
    wait_for_rebuild(array, role, req, &rx, out)
}

/// Streams a rebuild's progress to the client every 200 ms until it ends (the
/// rebuild goes on when the client goes away), then its last line and the status.
fn wait_for_rebuild(
    array: &Array,
    role: u32,
    req: &Value,
    rx: &std::sync::mpsc::Receiver<std::result::Result<(), String>>,
    out: &mut UnixStream,
) -> Result<Value> {
    let mut client_gone = false;
    loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(r) => {
                r.map_err(Error::Input)?;
                let total = array.geometry().member_used_bytes();
                let done = RebuildProgress {
                    role,
                    path: PathBuf::from(text(req, "new")?),
                    done_bytes: total,
                    total_bytes: total,
                };
                if !client_gone {
                    let _ = send(out, &json!({ "progress": progress_json(&done) }));
                }
                return Ok(served_status_json(&array.status()));
            }
            Err(_) if client_gone => {}
            Err(_) => {
                if let Some(p) = array.rebuild_progress() {
                    // The rebuild goes on when the client goes away.
                    client_gone = send(out, &json!({ "progress": progress_json(&p) })).is_err();
                }
            }
        }
    }
}

/// Sends `req` to the server of `uuid` (with `member`'s descriptor when given: the new
/// member of a `replace`), calls `progress` with every progress line and returns the
/// final report. `Ok(None)` when no server answers for that array; refused when the
/// socket or its directory is not private to this uid or root, or another uid answers.
pub fn request(
    uuid: u128,
    req: &Value,
    member: Option<&File>,
    mut progress: impl FnMut(&Value),
) -> Result<Option<Value>> {
    let Some((mut stream, path)) = connect(uuid)? else {
        return Ok(None);
    };
    let io = |source| Error::Io {
        path: path.clone(),
        op: "control request",
        source,
    };
    let mut line = req.to_string();
    line.push('\n');
    private_socket::send_line(&mut stream, line.as_bytes(), member.map(|f| f.as_fd()))
        .map_err(io)?;
    for line in BufReader::new(stream).lines() {
        let v: Value = serde_json::from_str(&line.map_err(io)?)
            .map_err(|e| Error::Input(format!("control reply: not JSON: {e}")))?;
        if let Some(p) = v.get("progress") {
            progress(p);
        } else if let Some(ok) = v.get("ok") {
            return Ok(Some(ok.clone()));
        } else if let Some(e) = v.get("error").and_then(Value::as_str) {
            return Err(Error::Input(e.to_string()));
        }
    }
    Err(Error::Input(format!(
        "control socket {}: the server closed without a reply",
        path.display()
    )))
}
