//! The control socket of a served array, and the JSON every command reports in.
//!
//! While `serve` runs it owns the members: `status`, `fail`, `replace`, `check` and
//! `repair` given the same members find the server by the array's UUID
//! ([`socket_path`]) and ask it, so a member is failed, replaced and rebuilt online while
//! NBD clients keep working. The socket also keeps a second `serve` of the same array
//! from starting.
//!
//! ```text
//! client: one JSON line      {"cmd": "replace", "old": "/m1", "new": "/m4", "rate": null, "wait": true}
//! server: JSON lines         {"progress": {"role": 1, "done_bytes": .., "total_bytes": ..}} ...
//!         then exactly one   {"ok": <status or scrub report>} | {"error": "one line"}
//! ```

use crate::array::{Fault, RebuildProgress, ScrubReport, Status};
use crate::error::{Error, Result};
use crate::Array;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Where the server of array `uuid` listens: `$TMPDIR/raidlab-<uuid>.sock`.
pub fn socket_path(uuid: u128) -> PathBuf {
    std::env::temp_dir().join(format!("raidlab-{uuid:032x}.sock"))
}

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
    json!({
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
        "members": s.members.iter().enumerate().map(|(role, (path, st))| json!({
            "role": role,
            "path": path.as_ref().map(|p| p.display().to_string()),
            "state": st.to_string(),
            "read_errors_corrected": s.read_errors_corrected.get(role).copied().unwrap_or(0),
        })).collect::<Vec<_>>(),
    })
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
        "read_errors_corrected": r.read_errors_corrected,
    })
}

/// Binds the control socket of `uuid`. Refused when a server already answers on it; a
/// socket file left by a killed server is removed.
pub fn bind(uuid: u128) -> Result<UnixListener> {
    let path = socket_path(uuid);
    if UnixStream::connect(&path).is_ok() {
        return Err(Error::Input(format!(
            "array {uuid:032x} is already being served (control socket {})",
            path.display()
        )));
    }
    let _ = std::fs::remove_file(&path);
    UnixListener::bind(&path).map_err(|source| Error::Io {
        path,
        op: "bind control socket",
        source,
    })
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
    if listener.set_nonblocking(true).is_ok() {
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((stream, _)) => {
                    let (array, rebuild) = (array.clone(), rebuild.clone());
                    answering.retain(|t| !t.is_finished());
                    answering.push(std::thread::spawn(move || {
                        if let Err(e) = answer(&array, &rebuild, stream) {
                            eprintln!("raidlab-engine: control: {e}");
                        }
                    }));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
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
    let mut line = String::new();
    BufReader::new(stream.try_clone()?)
        .take(64 << 10)
        .read_line(&mut line)?;
    let mut out = stream;
    let reply = match serde_json::from_str::<Value>(&line) {
        Ok(req) => execute(array, rebuild, &req, &mut out),
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

fn execute(
    array: &Arc<Array>,
    rebuild: &Arc<Mutex<Option<JoinHandle<()>>>>,
    req: &Value,
    out: &mut UnixStream,
) -> Result<Value> {
    match text(req, "cmd")? {
        "status" => Ok(served_status_json(&array.status())),
        "fail" => {
            let role = array.role_of(text(req, "target")?)?;
            array.fail_member(role)?;
            Ok(served_status_json(&array.status()))
        }
        "inject" => {
            let member = array.role_of(text(req, "target")?)?;
            let num = |f: &str| {
                req.get(f).and_then(Value::as_u64).ok_or_else(|| {
                    Error::Input(format!("control request: {f}: a number is needed"))
                })
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
            }
            Ok(served_status_json(&array.status()))
        }
        "check" | "repair" => {
            let repair = text(req, "cmd")? == "repair";
            Ok(scrub_json(&array.scrub(repair)?))
        }
        "replace" => {
            let role = array.role_of(text(req, "old")?)?;
            let new = PathBuf::from(text(req, "new")?);
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
                    let r = array.rebuild(role, &new, rate, |_, _| {});
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
                            client_gone =
                                send(out, &json!({ "progress": progress_json(&p) })).is_err();
                        }
                    }
                }
            }
        }
        other => Err(Error::Input(format!(
            "control request: unknown cmd {other:?}; allowed: status, fail, replace, inject, check, repair"
        ))),
    }
}

/// Sends `req` to the server of `uuid`, calls `progress` with every progress line and
/// returns the final report. `Ok(None)` when no server answers for that array.
pub fn request(uuid: u128, req: &Value, mut progress: impl FnMut(&Value)) -> Result<Option<Value>> {
    let path = socket_path(uuid);
    let Ok(mut stream) = UnixStream::connect(&path) else {
        return Ok(None);
    };
    let io = |source| Error::Io {
        path: path.clone(),
        op: "control request",
        source,
    };
    send(&mut stream, req).map_err(io)?;
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
