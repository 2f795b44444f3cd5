//! Every output form of the command line in one place: the status and scrub reports as
//! text or JSON on stdout, and rebuild progress lines on stderr (front ends parse
//! those: `rebuild member R: P% (DONE/TOTAL B)`).

use serde_json::Value;
use std::fmt::Write;

/// A report on stdout: the JSON document on one line, or `text` of it.
pub fn report(json: bool, v: &Value, text: fn(&Value) -> String) {
    if json {
        stdout(&format!("{v}\n"));
    } else {
        stdout(&text(v));
    }
}

/// `text` on stdout. A reader that stopped reading (`raidlab-engine --help | head -1`)
/// is no error of the command, whose work is done: a closed pipe ends the output
/// quietly, where `print!` would panic (the engine ignores SIGPIPE, as Rust programs
/// do, so that its server sees a client's closed socket as an error, not a signal).
pub fn stdout(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => eprintln!("warning: stdout: {e}"),
    }
}

/// A status report's first lines: the array, its geometry, state and failed members,
/// dirty regions and consistency policy.
fn array_lines(s: &Value) -> String {
    let u = |k: &str| s[k].as_u64().unwrap_or(0);
    let mut out = String::new();
    let _ = writeln!(out, "array {}", s["uuid"].as_str().unwrap_or(""));
    let _ = writeln!(
        out,
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
    let _ = writeln!(
        out,
        "  state {}{}, events {}, failed members {{{}}}",
        s["state"].as_str().unwrap_or(""),
        if s["served"].as_bool() == Some(true) {
            " (served: open in a server, whose bitmap marks the regions being written)"
        } else if s["dirty"].as_bool() == Some(true) {
            " (dirty: unclean stop; serve resyncs the dirty bitmap regions)"
        } else {
            ""
        },
        u("events"),
        failed.join(",")
    );
    let _ = writeln!(out, "  dirty bitmap regions {}", u("dirty_regions"));
    if let Some(p) = s["consistency_policy"].as_str().filter(|&p| p != "bitmap") {
        let _ = write!(out, "  consistency policy {p}");
        if p == "ppl" {
            let _ = write!(
                out,
                " ({} stripe parities recomputed from the log at assembly)",
                u("ppl_recovered")
            );
        }
        out.push('\n');
    }
    if let Some(i) = s["integrity"].as_str().filter(|&i| i != "none") {
        let _ = writeln!(
            out,
            "  integrity {i} (a checksum per 4 KiB block of every member)"
        );
    }
    out
}

/// A status report (the JSON of [`crate::net::control::status_json`]) as text.
pub fn status(s: &Value) -> String {
    let u = |k: &str| s[k].as_u64().unwrap_or(0);
    let mut out = array_lines(s);
    for f in s["faults"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "  injected fault: {f}");
    }
    if let Some(c) = s["cache_uuid"].as_str() {
        let _ = writeln!(
            out,
            "  cached: SSD cache {c} in front (its --cache-members hold its newest data)"
        );
    }
    if let Some(j) = s["journal"].as_str() {
        let _ = writeln!(
            out,
            "  write journal {j} ({} records replayed at assembly)",
            u("journal_replayed")
        );
    }
    if let Some(r) = s["rebuild"].as_object() {
        out.push_str(&rebuild_line(r));
    }
    for m in s["members"].as_array().into_iter().flatten() {
        out.push_str(&member_line(m));
    }
    for p in s["spares"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  spare: {} (no role until a member fails)",
            p.as_str().unwrap_or("-")
        );
    }
    if let Some(c) = s.get("cache").filter(|c| c.is_object()) {
        out.push_str(&cache_lines(c));
    }
    out
}

/// The cache tier's lines: policy and size, hit ratios per area, admissions,
/// evictions and destage traffic.
fn cache_lines(c: &Value) -> String {
    let u = |k: &str| c[k].as_u64().unwrap_or(0);
    let pct = |k: &str| c[k].as_f64().unwrap_or(0.0) * 100.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  cache {} on {} ({}), {} of {} lines of {} B cached, {} dirty{}",
        c["policy"].as_str().unwrap_or(""),
        c["members"]
            .as_array()
            .map(|m| m
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","))
            .unwrap_or_default(),
        c["mirror_level"].as_str().unwrap_or(""),
        u("cached_lines"),
        u("slots"),
        u("line_bytes"),
        u("dirty_lines"),
        match c["mirror_failed"].as_array() {
            Some(f) if !f.is_empty() => format!(
                ", cache members failed {{{}}}",
                f.iter()
                    .map(|m| m.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            _ => String::new(),
        }
    );
    let _ = writeln!(
        out,
        "    read hits {:.1} % ({} of {} lines: RRC {}, RWC {}, main {}), write hits {:.1} % ({} of {} lines), {} written into the cache",
        pct("read_hit_ratio"),
        u("read_hit_lines"),
        u("read_lines"),
        u("read_hit_lines_rrc"),
        u("read_hit_lines_rwc"),
        u("read_hit_lines_main"),
        pct("write_hit_ratio"),
        u("write_hit_lines"),
        u("write_lines"),
        u("write_cached_lines"),
    );
    let _ = writeln!(
        out,
        "    admitted {} lines on read, {} refilled; evicted {} clean, {} dirty lines ({} RRC, {} RWC regions); {} invalidated; destaged {} B",
        u("read_admitted_lines"),
        u("refill_lines"),
        u("evicted_clean_lines"),
        u("evicted_dirty_lines"),
        u("evicted_regions_rrc"),
        u("evicted_regions_rwc"),
        u("invalidated_lines"),
        u("destaged_bytes"),
    );
    out
}

/// `  rebuilding member R onto PATH: P% (DONE/TOTAL B)`.
fn rebuild_line(r: &serde_json::Map<String, Value>) -> String {
    let (done, total) = (
        r["done_bytes"].as_u64().unwrap_or(0),
        r["total_bytes"].as_u64().unwrap_or(1).max(1),
    );
    format!(
        "  rebuilding member {} onto {}: {}% ({done}/{total} B)\n",
        r["role"],
        r["path"].as_str().unwrap_or(""),
        done * 100 / total
    )
}

/// `  member R: PATH STATE`, with its corrected read errors and its bad-block list if
/// any (`OFFSET+LEN` in bytes of its data).
fn member_line(m: &Value) -> String {
    let corrected = m["read_errors_corrected"].as_u64().unwrap_or(0);
    let mismatches = m["checksum_mismatches"].as_u64().unwrap_or(0);
    let bad: Vec<String> = m["bad_blocks"]
        .as_array()
        .map_or(&[][..], |v| v.as_slice())
        .iter()
        .map(|r| format!("{}+{}", r["offset_bytes"], r["len_bytes"]))
        .collect();
    format!(
        "  member {}: {} {}{}{}{}\n",
        m["role"],
        m["path"].as_str().unwrap_or("-"),
        m["state"].as_str().unwrap_or(""),
        if corrected > 0 {
            format!(" ({corrected} read errors corrected)")
        } else {
            String::new()
        },
        if mismatches > 0 {
            format!(" ({mismatches} checksum mismatches)")
        } else {
            String::new()
        },
        if bad.is_empty() {
            String::new()
        } else {
            format!(" (bad blocks: {})", bad.join(" "))
        }
    )
}

/// A scrub report (the JSON of [`crate::net::control::scrub_json`]) as text: one line,
/// then one naming the logical bytes of the stripes `repair` could not resolve, if any.
pub fn scrub(r: &Value) -> String {
    let mut t = format!(
        "stripes checked {}, mismatched {}, repaired {}, read errors corrected {}",
        r["stripes_checked"],
        r["mismatched_stripes"],
        r["repaired_stripes"],
        r["read_errors_corrected"].as_u64().unwrap_or(0)
    );
    let mismatches: Vec<String> = r["checksum_mismatches"]
        .as_array()
        .map_or(&[][..], |v| v.as_slice())
        .iter()
        .enumerate()
        .filter(|(_, n)| n.as_u64().unwrap_or(0) > 0)
        .map(|(m, n)| format!("member {m}: {n}"))
        .collect();
    if !mismatches.is_empty() {
        t += &format!(", checksum mismatches ({})", mismatches.join(", "));
    }
    for (key, what) in [
        ("unresolved_stripes", "unresolved"),
        ("unreadable_stripes", "unreadable"),
    ] {
        if let Some(n) = r[key].as_u64().filter(|&n| n > 0) {
            t += &format!(", {what} {n}");
        }
    }
    t.push('\n');
    let unresolved: Vec<String> = r["unresolved"]
        .as_array()
        .map_or(&[][..], |v| v.as_slice())
        .iter()
        .map(|x| format!("{}+{}", x["offset_bytes"], x["len_bytes"]))
        .collect();
    if !unresolved.is_empty() {
        t += &format!(
            "unresolved: nothing tells which block is right; logical bytes {}\n",
            unresolved.join(" ")
        );
    }
    t
}

/// Prints rebuild progress on stderr each time it enters a new 5 % band, and at the end.
/// A band, not a multiple of 5: a served array reports progress every 200 ms, whose
/// percentages rarely land on a multiple of 5, and front ends draw their bars from these
/// lines.
pub fn progress_printer() -> impl FnMut(u32, u64, u64) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_text_names_the_state_and_every_member() {
        let s = json!({
            "uuid": "ab", "level": "RAID 5", "layout": "left-symmetric", "chunk_bytes": 65536,
            "member_count": 2, "capacity_bytes": 1024, "state": "degraded", "failed": [1],
            "events": 3, "dirty_regions": 0,
            "members": [
                {"role": 0, "path": "/a", "state": "active", "read_errors_corrected": 2},
                {"role": 1, "path": null, "state": "failed"}
            ]
        });
        let t = status(&s);
        assert!(
            t.contains("level RAID 5 (left-symmetric), chunk 65536 B"),
            "{t}"
        );
        assert!(
            t.contains("state degraded, events 3, failed members {1}"),
            "{t}"
        );
        assert!(
            t.contains("member 0: /a active (2 read errors corrected)"),
            "{t}"
        );
        assert!(t.contains("member 1: - failed\n"), "{t}");
    }

    #[test]
    fn a_served_array_is_open_not_stopped_uncleanly() {
        let report = |served: bool| {
            status(&json!({
                "uuid": "ab", "level": "RAID 1", "layout": null, "chunk_bytes": 65536,
                "member_count": 2, "capacity_bytes": 1024, "state": "clean", "failed": [],
                "events": 3, "dirty_regions": 0, "dirty": true, "served": served,
                "members": []
            }))
        };
        let served = report(true);
        assert!(
            served.contains("state clean (served: open in a server"),
            "{served}"
        );
        assert!(!served.contains("unclean"), "{served}");
        assert!(report(false).contains("state clean (dirty: unclean stop"));
    }

    #[test]
    fn scrub_text_is_one_line() {
        let r = json!({"stripes_checked": 4, "mismatched_stripes": 1, "repaired_stripes": 0});
        assert_eq!(
            scrub(&r),
            "stripes checked 4, mismatched 1, repaired 0, read errors corrected 0\n"
        );
    }

    #[test]
    fn unresolved_stripes_and_bad_blocks_are_named() {
        let r = json!({"stripes_checked": 4, "mismatched_stripes": 2, "repaired_stripes": 1,
            "unresolved_stripes": 1, "unresolved": [{"offset_bytes": 0, "len_bytes": 49152}],
            "unreadable_stripes": 0});
        assert_eq!(
            scrub(&r),
            "stripes checked 4, mismatched 2, repaired 1, read errors corrected 0, \
             unresolved 1\nunresolved: nothing tells which block is right; logical bytes \
             0+49152\n"
        );
        let m = json!({"role": 1, "path": "/b", "state": "active",
            "bad_blocks": [{"offset_bytes": 4096, "len_bytes": 512}]});
        assert_eq!(
            member_line(&m),
            "  member 1: /b active (bad blocks: 4096+512)\n"
        );
    }
}
