//! Run scenario files through the simulator without Python: what a profiler or a
//! byte-for-byte comparison of results needs.
//!
//! ```text
//! cargo run --release -p raidlab-sim --example simulate -- scenario.json [more.json ...]
//! ```
//!
//! Prints each scenario's results JSON on its own line, and on stderr the time of the
//! simulation alone (parsing and validation excluded) with the rate of simulated host
//! I/Os: wall-clock, and the thread's time on a CPU (Linux's schedstat), which a
//! machine shared with other work leaves nearly untouched where the wall clock is not.

use std::time::Instant;

fn main() {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: simulate SCENARIO.json [SCENARIO.json ...]");
        std::process::exit(2);
    }
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let scenario =
            raidlab_sim::Scenario::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e:?}"));
        let start = Instant::now();
        let cpu_start_ns = thread_cpu_ns();
        let results = raidlab_sim::run(&scenario).unwrap_or_else(|e| panic!("{path}: {e:?}"));
        let cpu_s = thread_cpu_ns()
            .zip(cpu_start_ns)
            .map(|(end, s)| (end - s) as f64 / 1e9);
        let wall_s = start.elapsed().as_secs_f64();
        let out = serde_json::to_string(&results).expect("results serialise");
        let value: serde_json::Value = serde_json::from_str(&out).expect("results parse");
        let ios: u64 = value["ops"]
            .as_object()
            .map(|ops| ops.values().filter_map(|op| op["ios"].as_u64()).sum())
            .unwrap_or(0);
        let cpu_s = cpu_s.unwrap_or(wall_s);
        eprintln!(
            "{path}: {ios} host I/Os in {wall_s:.3} s wall, {cpu_s:.3} s cpu, {:.0} I/Os per cpu s",
            ios as f64 / cpu_s
        );
        println!("{out}");
    }
}

/// Nanoseconds this thread has run on a CPU, if the kernel says (Linux).
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}
