//! Trace replay: open and closed loop, streamed, malformed lines named.

use crate::common::{hdd, scenario, ssd};
use raidlab_sim::scenario::{Rw, SchedulerKind};
use raidlab_sim::simulate_trace_json;
use std::io::Write;

fn msr_trace(lines: u64, gap_ticks: u64) -> tempfile_path::Path {
    let mut file = tempfile_path::Path::new("msr");
    for i in 0..lines {
        let kind = if i % 4 == 0 { "Write" } else { "Read" };
        writeln!(
            file.file,
            "{},host,0,{kind},{},4096,100",
            1_000_000 + i * gap_ticks,
            (i * 7919 % 100_000) * 4096
        )
        .unwrap();
    }
    file.file.flush().unwrap();
    file
}

/// A temporary file removed on drop (no extra crate needed).
mod tempfile_path {
    pub struct Path {
        pub path: std::path::PathBuf,
        pub file: std::fs::File,
    }
    impl Path {
        pub fn new(tag: &str) -> Self {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = std::env::temp_dir().join(format!(
                "raidlab-replay-{tag}-{}-{n}.txt",
                std::process::id()
            ));
            let file = std::fs::File::create(&path).unwrap();
            Self { path, file }
        }
    }
    impl Drop for Path {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn array_json() -> String {
    let mut s = scenario(ssd(), 2, Rw::Randread, 4096, 1);
    s.workload = None;
    serde_json::to_string(&s).unwrap()
}

fn replay(path: &std::path::Path, mode: &str, iodepth: u32, scale: f64) -> serde_json::Value {
    let out = simulate_trace_json(
        &array_json(),
        path.to_str().unwrap(),
        "msr",
        mode,
        iodepth,
        scale,
    )
    .unwrap();
    serde_json::from_str(&out).unwrap()
}

#[test]
fn closed_loop_replays_every_request_in_order() {
    let t = msr_trace(2_000, 10);
    let r = replay(&t.path, "closed", 8, 1.0);
    assert_eq!(r["ops"]["read"]["ios"], 1_500);
    assert_eq!(r["ops"]["write"]["ios"], 500);
    assert_eq!(r["jobs"][0]["name"], "trace");
}

#[test]
fn open_loop_follows_the_timestamps_and_time_scale_compresses_them() {
    // 1,000 requests 1 ms apart: an idle array finishes just after the last arrival.
    let t = msr_trace(1_000, 10_000);
    let r = replay(&t.path, "open", 64, 1.0);
    let span_s = r["sim_time_ns"].as_f64().unwrap() / 1e9;
    assert!(span_s > 0.99 && span_s < 1.01, "{span_s}");
    let fast = replay(&t.path, "open", 64, 10.0);
    let fast_s = fast["sim_time_ns"].as_f64().unwrap() / 1e9;
    assert!(fast_s > 0.099 && fast_s < 0.101, "{fast_s}");
}

#[test]
fn a_malformed_trace_line_is_an_error_naming_the_line() {
    let mut t = tempfile_path::Path::new("bad");
    writeln!(t.file, "1,h,0,Read,0,4096,1\n2,h,0,Read,zero,4096,1").unwrap();
    t.file.flush().unwrap();
    let err = simulate_trace_json(
        &array_json(),
        t.path.to_str().unwrap(),
        "msr",
        "closed",
        4,
        1.0,
    )
    .unwrap_err();
    assert!(err.to_string().contains("line 2"), "{err}");
}

#[test]
fn a_replay_goes_through_the_io_scheduler_which_merges_a_sequential_trace() {
    let mut t = tempfile_path::Path::new("seq");
    for i in 0..4_000u64 {
        writeln!(
            t.file,
            "{},host,0,Read,{},4096,100",
            1_000_000 + i,
            i * 4096
        )
        .unwrap();
    }
    t.file.flush().unwrap();
    let run = |kind: SchedulerKind| -> serde_json::Value {
        let mut s = scenario(hdd(), 1, Rw::Read, 4096, 1);
        s.workload = None;
        s.array.host.scheduler = kind;
        let json = serde_json::to_string(&s).unwrap();
        let out =
            simulate_trace_json(&json, t.path.to_str().unwrap(), "msr", "closed", 64, 1.0).unwrap();
        serde_json::from_str(&out).unwrap()
    };
    let none = run(SchedulerKind::None);
    let deadline = run(SchedulerKind::MqDeadline);
    assert_eq!(deadline["ops"]["read"]["ios"], 4_000);
    let merged = deadline["explain"]["scheduler"]["host_ios_merged"]
        .as_u64()
        .unwrap();
    assert!(merged > 1_000, "{merged}");
    let mbps = |r: &serde_json::Value| r["ops"]["read"]["mbps"].as_f64().unwrap();
    assert!(
        mbps(&deadline) > 1.3 * mbps(&none),
        "{} vs {}",
        mbps(&deadline),
        mbps(&none)
    );
}

fn trace_scenario(path: &std::path::Path, format: &str, mode: &str) -> serde_json::Value {
    let mut s: serde_json::Value = serde_json::from_str(&array_json()).unwrap();
    s["workload"] = serde_json::json!({"kind": "trace", "path": path.to_str().unwrap(),
                                       "format": format, "mode": mode, "iodepth": 8});
    s
}

#[test]
fn a_trace_workload_in_a_stored_scenario_reproduces_the_replay() {
    let t = msr_trace(500, 10);
    let stored = trace_scenario(&t.path, "msr", "closed").to_string();
    let out = raidlab_sim::simulate_json(&stored).unwrap();
    let from_scenario: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(from_scenario, replay(&t.path, "closed", 8, 1.0));
    // The typed scenario writes the same workload back.
    let parsed = raidlab_sim::Scenario::from_json(&stored).unwrap();
    let written = serde_json::to_value(&parsed).unwrap();
    assert_eq!(written["workload"]["kind"], "trace");
    assert_eq!(written["workload"]["iodepth"], 8);
}

#[test]
fn a_missing_trace_file_and_a_file_that_is_no_trace_are_told_apart() {
    let missing = std::env::temp_dir().join("raidlab-no-such-trace.csv");
    let s = trace_scenario(&missing, "msr", "open");
    let err = raidlab_sim::Scenario::from_value(s).unwrap_err();
    assert_eq!(err.field, "workload.path");
    assert!(err.message.contains("no such trace file"), "{err}");

    let mut not_a_trace = tempfile_path::Path::new("readme");
    writeln!(not_a_trace.file, "# raidlab\n\nA lab for RAID arrays.").unwrap();
    not_a_trace.file.flush().unwrap();
    for format in ["msr", "blkparse"] {
        let s = trace_scenario(&not_a_trace.path, format, "open");
        let err = raidlab_sim::Scenario::from_value(s).unwrap_err();
        assert_eq!(err.field, "workload.path");
        assert!(!err.message.contains("no such"), "{err}");
        assert!(err.message.contains(format), "{err}");
    }

    let dir = trace_scenario(&std::env::temp_dir(), "msr", "open");
    let err = raidlab_sim::Scenario::from_value(dir).unwrap_err();
    assert!(err.message.contains("directory"), "{err}");
}

#[test]
fn a_trace_workload_is_refused_field_by_field() {
    let t = msr_trace(10, 10);
    let refused = |key: &str, value: serde_json::Value| {
        let mut s = trace_scenario(&t.path, "msr", "closed");
        s["workload"][key] = value;
        raidlab_sim::Scenario::from_value(s).unwrap_err().field
    };
    assert_eq!(refused("format", "csv".into()), "workload.format");
    assert_eq!(refused("mode", "half-open".into()), "workload.mode");
    assert_eq!(refused("iodepth", 0.into()), "workload.iodepth");
    assert_eq!(refused("iodepth", 65_537.into()), "workload.iodepth");
    assert_eq!(refused("time_scale", 0.0.into()), "workload.time_scale");
    assert_eq!(refused("rw", "read".into()), "workload.rw");
}
