//! `raidlab-engine`: create, assemble, serve over NBD, fail, replace, scrub and
//! fault-inject arrays on member files or block devices. See the crate README.
//! Bad input: one line `error: ...` on stderr and exit code 2.

use raidlab_engine::{control, nbd, Array, CreateOptions, Error};
use raidlab_layout::{Layout, Level};
use serde_json::{json, Value};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const USAGE: &str = "usage:
  raidlab-engine create --level L [--chunk 64K] [--size 64M] [--layout X] [--copies N]
                        [--spans N] [--uuid HEX] [--force] [--assume-clean]
                        [--journal PATH [--journal-size 256M]] [--json] MEMBER...
  raidlab-engine status [--json] MEMBER...   (alias: assemble)
  raidlab-engine serve [--listen 127.0.0.1:10809] [--connections-max 16]
                       [--requests-in-flight 8] [--bitmap-delay 5 (s)] MEMBER...
  raidlab-engine fail [--json] TARGET MEMBER...   (TARGET: a member path or a role index)
  raidlab-engine replace OLD NEW [--rate 200M] [--no-wait] [--json] MEMBER...
  raidlab-engine check [--json] MEMBER...    (exit 1 when stripes mismatch)
  raidlab-engine repair [--json] MEMBER...
While serve runs, status/fail/replace/check/repair on its members go to the server
(control socket $TMPDIR/raidlab-<uuid>.sock): replace then rebuilds online.
An array created with --journal needs --journal PATH wherever it is assembled.
  raidlab-engine inject MEMBER OFFSET [--mask 0xff]   (flip bits of a data byte)
  raidlab-engine inject MEMBER --read-error OFF[+LEN] | --bad-sector OFF[+LEN]
                        | --write-error OFF[+LEN] | --latency 20ms | --clear
                        (served arrays: faults in the server; a bad sector reads
                        EIO until written, and the array rewrites it, as md does)";

static STOP: AtomicBool = AtomicBool::new(false);

/// Every `delay_s` seconds until [`STOP`], clears the bitmap bits of regions no longer
/// written (md's bitmap daemon, mdadm's `--delay`).
fn clean_bitmap_until_stop(array: &Array, delay_s: u64) {
    let tick = std::time::Duration::from_millis(100);
    let mut waited = std::time::Duration::ZERO;
    while !STOP.load(Ordering::Relaxed) {
        std::thread::sleep(tick);
        waited += tick;
        if waited.as_secs() >= delay_s {
            waited = std::time::Duration::ZERO;
            if let Err(e) = array.clean_bitmap() {
                eprintln!("raidlab-engine: clearing the write-intent bitmap: {e}");
            }
        }
    }
}

extern "C" fn on_signal(_: i32) {
    STOP.store(true, Ordering::Relaxed);
}

extern "C" {
    fn signal(signum: i32, handler: usize) -> usize;
}

/// SIGINT and SIGTERM stop `serve` cleanly (flush, superblocks marked clean).
fn install_signal_handlers() {
    // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe.
    unsafe {
        signal(2, on_signal as *const () as usize);
        signal(15, on_signal as *const () as usize);
    }
}

/// `64K`, `32M`, `1G`, `512` (K/M/G/T = 1024^n, like fio).
fn parse_bytes(flag: &str, s: &str) -> Result<u64, Error> {
    let bad = || {
        Error::Input(format!(
            "{flag}: expected a size like 64K, 32M, 1G, got {s:?}"
        ))
    };
    let t = s.trim();
    let (num, mult) = match t.char_indices().last().ok_or_else(bad)? {
        (i, c) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'B' => 1,
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return Err(bad()),
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(bad)
}

fn parse_num<T: std::str::FromStr>(flag: &str, s: &str) -> Result<T, Error> {
    s.parse()
        .map_err(|_| Error::Input(format!("{flag}: expected a number, got {s:?}")))
}

/// The number given as `--name` (else `default`), which must lie in `allowed`.
fn bounded_num<T>(
    a: &Args,
    name: &str,
    allowed: std::ops::RangeInclusive<T>,
    default: T,
) -> Result<T, Error>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
{
    let flag = format!("--{name}");
    let v = a
        .value(name)
        .map(|s| parse_num::<T>(&flag, s))
        .transpose()?
        .unwrap_or(default);
    if !allowed.contains(&v) {
        return Err(Error::Input(format!(
            "{flag}: {}..={}, got {v}",
            allowed.start(),
            allowed.end()
        )));
    }
    Ok(v)
}

/// Flags with values, boolean flags and positional arguments.
struct Args {
    values: Vec<(String, String)>,
    switches: Vec<String>,
    positional: Vec<String>,
}

impl Args {
    fn parse(raw: &[String], with_value: &[&str], switches: &[&str]) -> Result<Self, Error> {
        let mut a = Args {
            values: Vec::new(),
            switches: Vec::new(),
            positional: Vec::new(),
        };
        let mut it = raw.iter();
        while let Some(x) = it.next() {
            if let Some(name) = x.strip_prefix("--") {
                let (name, inline) = match name.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (name, None),
                };
                if with_value.contains(&name) {
                    let v = match inline {
                        Some(v) => v,
                        None => it
                            .next()
                            .ok_or_else(|| Error::Input(format!("--{name}: needs a value")))?
                            .clone(),
                    };
                    a.values.push((name.to_string(), v));
                } else if switches.contains(&name) && inline.is_none() {
                    a.switches.push(name.to_string());
                } else {
                    let mut allowed: Vec<String> = with_value
                        .iter()
                        .chain(switches)
                        .map(|f| format!("--{f}"))
                        .collect();
                    allowed.sort();
                    return Err(Error::Input(format!(
                        "--{name}: unknown option; allowed: {}",
                        if allowed.is_empty() {
                            "none".into()
                        } else {
                            allowed.join(", ")
                        }
                    )));
                }
            } else {
                a.positional.push(x.clone());
            }
        }
        Ok(a)
    }

    fn value(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    fn members(&self, from: usize) -> Result<Vec<PathBuf>, Error> {
        let m: Vec<PathBuf> = self.positional[from.min(self.positional.len())..]
            .iter()
            .map(PathBuf::from)
            .collect();
        if m.is_empty() {
            return Err(Error::Input(
                "MEMBER: at least one member file or device needed".into(),
            ));
        }
        Ok(m)
    }
}

/// Prints a status report (the JSON of [`control::status_json`]) as text.
fn print_status(s: &Value) {
    let u = |k: &str| s[k].as_u64().unwrap_or(0);
    println!("array {}", s["uuid"].as_str().unwrap_or(""));
    println!(
        "  level {}{}, chunk {} B, {} members, capacity {} B",
        s["level"].as_str().unwrap_or(""),
        s["layout"]
            .as_str()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default(),
        u("chunk_bytes"),
        u("member_count"),
        u("capacity_bytes")
    );
    let failed: Vec<String> = s["failed"]
        .as_array()
        .map(|a| a.iter().map(|m| m.to_string()).collect())
        .unwrap_or_default();
    println!(
        "  state {}{}, events {}, failed members {{{}}}",
        s["state"].as_str().unwrap_or(""),
        if s["dirty"].as_bool() == Some(true) {
            " (dirty: unclean stop; serve resyncs the dirty bitmap regions)"
        } else {
            ""
        },
        u("events"),
        failed.join(",")
    );
    println!("  dirty bitmap regions {}", u("dirty_regions"));
    for f in s["faults"].as_array().into_iter().flatten() {
        println!("  injected fault: {f}");
    }
    if let Some(j) = s["journal"].as_str() {
        println!(
            "  write journal {j} ({} records replayed at assembly)",
            u("journal_replayed")
        );
    }
    if let Some(r) = s["rebuild"].as_object() {
        let (done, total) = (
            r["done_bytes"].as_u64().unwrap_or(0),
            r["total_bytes"].as_u64().unwrap_or(1).max(1),
        );
        println!(
            "  rebuilding member {} onto {}: {}% ({done}/{total} B)",
            r["role"],
            r["path"].as_str().unwrap_or(""),
            done * 100 / total
        );
    }
    for m in s["members"].as_array().into_iter().flatten() {
        let corrected = m["read_errors_corrected"].as_u64().unwrap_or(0);
        println!(
            "  member {}: {} {}{}",
            m["role"],
            m["path"].as_str().unwrap_or("-"),
            m["state"].as_str().unwrap_or(""),
            if corrected > 0 {
                format!(" ({corrected} read errors corrected)")
            } else {
                String::new()
            }
        );
    }
}

fn print_scrub(r: &Value) {
    println!(
        "stripes checked {}, mismatched {}, repaired {}, read errors corrected {}",
        r["stripes_checked"],
        r["mismatched_stripes"],
        r["repaired_stripes"],
        r["read_errors_corrected"].as_u64().unwrap_or(0)
    );
}

fn report(json: bool, v: &Value, text: fn(&Value)) {
    if json {
        println!("{v}");
    } else {
        text(v);
    }
}

/// Absolute member paths: a server keeps them, and clients name members to it.
fn absolute(paths: Vec<PathBuf>) -> Result<Vec<PathBuf>, Error> {
    paths
        .into_iter()
        .map(|p| std::path::absolute(&p).map_err(|e| Error::Input(format!("{}: {e}", p.display()))))
        .collect()
}

/// A path argument made absolute when it names an existing file (else as given: a role).
fn target_arg(t: &str) -> String {
    let p = Path::new(t);
    if p.exists() {
        std::path::absolute(p).map_or(t.to_string(), |a| a.display().to_string())
    } else {
        t.to_string()
    }
}

/// Asks the server of the array these members belong to, if one is running.
fn ask_server(
    members: &[PathBuf],
    req: Value,
    progress: impl FnMut(&Value),
) -> Result<Option<Value>, Error> {
    let Some(uuid) = members
        .iter()
        .find_map(|m| raidlab_engine::array::read_superblock(m).ok())
        .map(|sb| sb.array_uuid)
    else {
        return Ok(None);
    };
    control::request(uuid, &req, progress)
}

/// Prints rebuild progress on stderr each time it enters a new 5 % band, and at the end.
/// A band, not a multiple of 5: a served array reports progress every 200 ms, whose
/// percentages rarely land on a multiple of 5, and front ends draw their bars from these
/// lines.
fn progress_printer() -> impl FnMut(u32, u64, u64) {
    let mut last_pct = u64::MAX;
    move |role, done, total| {
        let pct = done * 100 / total.max(1);
        let new_band = last_pct == u64::MAX || pct / 5 != last_pct / 5;
        if pct != last_pct && (new_band || done == total) {
            eprintln!("rebuild member {role}: {pct}% ({done}/{total} B)");
            last_pct = pct;
        }
    }
}

fn run(argv: &[String]) -> Result<ExitCode, Error> {
    let Some(cmd) = argv.first() else {
        return Err(Error::Input(format!("a command is needed\n{USAGE}")));
    };
    let rest = &argv[1..];
    match cmd.as_str() {
        "create" => {
            let a = Args::parse(
                rest,
                &["level", "chunk", "size", "layout", "copies", "spans", "uuid", "journal", "journal-size"],
                &["force", "assume-clean", "json"],
            )?;
            let level: Level = a
                .value("level")
                .ok_or_else(|| Error::Input("--level: required (0, 1, 4, 5, 6, 10, 50, 60, concat)".into()))?
                .parse()
                .map_err(|e| Error::Input(format!("--{e}")))?;
            let chunk = parse_bytes("--chunk", a.value("chunk").unwrap_or("64K"))?;
            let size = a.value("size").map(|s| parse_bytes("--size", s)).transpose()?;
            let mut opts = CreateOptions::new(level, chunk, size);
            opts.layout = a
                .value("layout")
                .map(|s| s.parse::<Layout>().map_err(|e| Error::Input(format!("--{e}"))))
                .transpose()?;
            opts.copies = a.value("copies").map(|s| parse_num("--copies", s)).transpose()?;
            opts.spans = a.value("spans").map(|s| parse_num("--spans", s)).transpose()?;
            opts.uuid = a
                .value("uuid")
                .map(|s| {
                    u128::from_str_radix(s.trim_start_matches("0x"), 16)
                        .map_err(|_| Error::Input(format!("--uuid: expected up to 32 hex digits, got {s:?}")))
                })
                .transpose()?;
            opts.force = a.switch("force");
            opts.assume_clean = a.switch("assume-clean");
            opts.journal = a.value("journal").map(PathBuf::from);
            opts.journal_bytes = a
                .value("journal-size")
                .map(|s| parse_bytes("--journal-size", s))
                .transpose()?;
            if opts.journal_bytes.is_some() && opts.journal.is_none() {
                return Err(Error::Input("--journal-size: needs --journal PATH".into()));
            }
            let members = absolute(a.members(0)?)?;
            if ask_server(&members, json!({"cmd": "status"}), |_| {})?.is_some() {
                return Err(Error::Input(
                    "MEMBER: these members are being served; stop the server first".into(),
                ));
            }
            let array = Array::create(&members, &opts)?;
            report(a.switch("json"), &control::status_json(&array.status()), print_status);
            Ok(ExitCode::SUCCESS)
        }
        "status" | "assemble" => {
            let a = Args::parse(rest, &["journal"], &["json"])?;
            let members = absolute(a.members(0)?)?;
            let s = match ask_server(&members, json!({"cmd": "status"}), |_| {})? {
                Some(s) => s,
                None => control::status_json(&Array::assemble_with(&members, a.value("journal").map(Path::new))?.status()),
            };
            report(a.switch("json"), &s, print_status);
            Ok(ExitCode::SUCCESS)
        }
        "serve" => {
            let a = Args::parse(
                rest,
                &[
                    "listen",
                    "connections-max",
                    "requests-in-flight",
                    "bitmap-delay",
                    "journal",
                ],
                &[],
            )?;
            let listen = a.value("listen").unwrap_or("127.0.0.1:10809");
            let max = bounded_num(&a, "connections-max", 1..=1024, 16)?;
            let in_flight = bounded_num(
                &a,
                "requests-in-flight",
                1..=nbd::REQUESTS_IN_FLIGHT_LIMIT,
                nbd::REQUESTS_IN_FLIGHT_DEFAULT,
            )?;
            // Seconds.
            let bitmap_delay = bounded_num(&a, "bitmap-delay", 1..=3600u64, 5)?;
            let array = Arc::new(Array::assemble_with(
                &absolute(a.members(0)?)?,
                a.value("journal").map(Path::new),
            )?);
            let control_socket = control::bind(array.status().uuid)?;
            let listener = TcpListener::bind(listen)
                .map_err(|e| Error::Input(format!("--listen: cannot listen on {listen}: {e}")))?;
            let replayed = array.status().journal_replayed;
            if replayed > 0 {
                eprintln!("raidlab-engine: unclean stop: replayed {replayed} journal records");
            }
            if let Some((regions, r)) = array.resync_dirty_regions()? {
                eprintln!(
                    "raidlab-engine: unclean stop: resynced {regions} dirty bitmap regions \
                     ({} stripes checked, {} rewritten)",
                    r.stripes_checked, r.repaired_stripes
                );
            }
            array.open_for_writes()?;
            install_signal_handlers();
            let control_path = control::socket_path(array.status().uuid);
            let control_thread = {
                let array = array.clone();
                std::thread::spawn(move || control::serve(array, control_socket, &STOP))
            };
            eprintln!(
                "raidlab-engine: serving {} B ({} {}) on nbd://{} (control socket {})",
                array.capacity_bytes(),
                array.geometry().level(),
                if array.failed().is_empty() { "clean" } else { "degraded" },
                listener.local_addr().map(|a| a.to_string()).unwrap_or_default(),
                control_path.display()
            );
            let cleaner = {
                let array = array.clone();
                std::thread::spawn(move || clean_bitmap_until_stop(&array, bitmap_delay))
            };
            let served = nbd::serve(array.clone(), listener, max, in_flight, &STOP);
            STOP.store(true, Ordering::Relaxed);
            let _ = control_thread.join();
            let _ = cleaner.join();
            array.close()?;
            served.map_err(|e| Error::Input(format!("serve: {e}")))?;
            eprintln!(
                "raidlab-engine: stopped, array {}",
                if array.failed().is_empty() { "clean" } else { "degraded" }
            );
            Ok(ExitCode::SUCCESS)
        }
        "fail" => {
            let a = Args::parse(rest, &["journal"], &["json"])?;
            let target = a
                .positional
                .first()
                .ok_or_else(|| Error::Input("TARGET: the member to fail is needed".into()))?;
            let target = target_arg(target);
            let members = absolute(a.members(1)?)?;
            let s = match ask_server(&members, json!({"cmd": "fail", "target": target}), |_| {})? {
                Some(s) => s,
                None => {
                    let array = Array::assemble_with(&members, a.value("journal").map(Path::new))?;
                    array.fail_member(array.role_of(&target)?)?;
                    control::status_json(&array.status())
                }
            };
            report(a.switch("json"), &s, print_status);
            Ok(ExitCode::SUCCESS)
        }
        "replace" => {
            let a = Args::parse(rest, &["rate", "journal"], &["json", "no-wait"])?;
            if a.positional.len() < 3 {
                return Err(Error::Input("replace: OLD NEW MEMBER... needed".into()));
            }
            let rate = a.value("rate").map(|s| parse_bytes("--rate", s)).transpose()?;
            let old = target_arg(&a.positional[0]);
            let new = absolute(vec![PathBuf::from(&a.positional[1])])?.remove(0);
            let members: Vec<PathBuf> = absolute(a.members(2)?)?
                .into_iter()
                .filter(|p| p.as_os_str() != old.as_str())
                .collect();
            let mut print = progress_printer();
            let req = json!({
                "cmd": "replace", "old": old, "new": new.display().to_string(),
                "rate": rate, "wait": !a.switch("no-wait"),
            });
            let remote = ask_server(&members, req, |p| {
                print(
                    p["role"].as_u64().unwrap_or(0) as u32,
                    p["done_bytes"].as_u64().unwrap_or(0),
                    p["total_bytes"].as_u64().unwrap_or(0),
                )
            })?;
            let s = match remote {
                Some(s) => s,
                None => {
                    if a.switch("no-wait") {
                        return Err(Error::Input(
                            "--no-wait: only for an array being served (the rebuild runs in the server)".into(),
                        ));
                    }
                    let array = Array::assemble_with(&members, a.value("journal").map(Path::new))?;
                    let role = array.role_of(&old)?;
                    if !array.failed().contains(role) {
                        array.fail_member(role)?;
                    }
                    array.rebuild(role, &new, rate, |done, total| print(role, done, total))?;
                    control::status_json(&array.status())
                }
            };
            report(a.switch("json"), &s, print_status);
            Ok(ExitCode::SUCCESS)
        }
        "check" | "repair" => {
            let a = Args::parse(rest, &["journal"], &["json"])?;
            let members = absolute(a.members(0)?)?;
            let r = match ask_server(&members, json!({ "cmd": cmd }), |_| {})? {
                Some(r) => r,
                None => {
                    let array = Array::assemble_with(&members, a.value("journal").map(Path::new))?;
                    let r = array.scrub(cmd == "repair")?;
                    if cmd == "repair" {
                        array.close()?;
                    }
                    control::scrub_json(&r)
                }
            };
            report(a.switch("json"), &r, print_scrub);
            Ok(if cmd == "check" && r["mismatched_stripes"].as_u64() != Some(0) {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        "inject" => {
            let a = Args::parse(
                rest,
                &["mask", "read-error", "bad-sector", "write-error", "latency"],
                &["clear", "json"],
            )?;
            let runtime: Vec<&str> = ["read-error", "bad-sector", "write-error", "latency"]
                .into_iter()
                .filter(|f| a.value(f).is_some())
                .chain(a.switch("clear").then_some("clear"))
                .collect();
            if runtime.len() > 1 || (!runtime.is_empty() && a.value("mask").is_some()) {
                return Err(Error::Input(
                    "inject: one of OFFSET [--mask], --read-error, --bad-sector, --write-error, --latency, --clear"
                        .into(),
                ));
            }
            let Some(kind) = runtime.first().copied() else {
                // Silent corruption: flip bits on the member itself, served or not.
                if a.positional.len() != 2 {
                    return Err(Error::Input("inject: MEMBER OFFSET needed".into()));
                }
                let offset = parse_bytes("OFFSET", &a.positional[1])?;
                let mask = match a.value("mask") {
                    Some(m) => u8::from_str_radix(m.trim_start_matches("0x"), 16)
                        .ok()
                        .filter(|&m| m != 0)
                        .ok_or_else(|| Error::Input(format!("--mask: a nonzero hex byte, got {m:?}")))?,
                    None => 0xff,
                };
                raidlab_engine::array::inject(&PathBuf::from(&a.positional[0]), offset, mask)?;
                return Ok(ExitCode::SUCCESS);
            };
            if a.positional.len() != 1 {
                return Err(Error::Input(format!("inject --{kind}: MEMBER needed (one)")));
            }
            let member = absolute(vec![PathBuf::from(&a.positional[0])])?;
            let mut req = json!({"cmd": "inject", "target": member[0].display().to_string(), "kind": kind});
            match kind {
                "read-error" | "bad-sector" | "write-error" => {
                    let v = a.value(kind).expect("given");
                    let (off, len) = v.split_once('+').unwrap_or((v, "4K"));
                    req["offset_bytes"] = json!(parse_bytes(&format!("--{kind}"), off)?);
                    req["len_bytes"] = json!(parse_bytes(&format!("--{kind}"), len)?);
                }
                "latency" => {
                    let v = a.value("latency").expect("given");
                    let us = v
                        .strip_suffix("ms")
                        .and_then(|n| n.parse::<f64>().ok())
                        .map(|ms| ms * 1e3)
                        .or_else(|| v.strip_suffix("us").and_then(|n| n.parse::<f64>().ok()))
                        .filter(|us| us.is_finite() && *us >= 0.0 && *us <= 60e6)
                        .ok_or_else(|| Error::Input(format!("--latency: a delay like 20ms or 500us (up to 60 s), got {v:?}")))?;
                    req["delay_us"] = json!(us as u64);
                }
                _ => {}
            }
            let s = ask_server(&member, req, |_| {})?.ok_or_else(|| {
                Error::Input(format!(
                    "inject --{kind}: {} is not a member of a served array (these faults live in the server)",
                    member[0].display()
                ))
            })?;
            report(a.switch("json"), &s, print_status);
            Ok(ExitCode::SUCCESS)
        }
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        other => Err(Error::Input(format!(
            "unknown command {other:?}; allowed: create, status, assemble, serve, fail, replace, check, repair, inject"
        ))),
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match run(&argv) {
        Ok(code) => code,
        Err(e) => {
            let msg = e.to_string();
            eprintln!("error: {}", msg.lines().next().unwrap_or(""));
            ExitCode::from(2)
        }
    }
}
