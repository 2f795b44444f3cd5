//! Run scenario files through the simulator without Python: what a profiler or a
//! byte-for-byte comparison of results needs.
//!
//! ```text
//! cargo run --release -p raidlab-sim --example simulate -- scenario.json [more.json ...]
//! ```
//!
//! Prints each scenario's results JSON on its own line, and on stderr the wall-clock
//! time of the simulation alone (parsing and validation excluded) with the rate of
//! simulated host I/Os.

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
        let results = raidlab_sim::run(&scenario).unwrap_or_else(|e| panic!("{path}: {e:?}"));
        let wall_s = start.elapsed().as_secs_f64();
        let out = serde_json::to_string(&results).expect("results serialise");
        let value: serde_json::Value = serde_json::from_str(&out).expect("results parse");
        let ios: u64 = value["ops"]
            .as_object()
            .map(|ops| ops.values().filter_map(|op| op["ios"].as_u64()).sum())
            .unwrap_or(0);
        eprintln!(
            "{path}: {ios} host I/Os in {wall_s:.3} s, {:.0} I/Os per s",
            ios as f64 / wall_s
        );
        println!("{out}");
    }
}
