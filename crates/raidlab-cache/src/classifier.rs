//! The load detector: classifies each request as random or sequential by following the
//! contiguous runs of recent streams (RAIDIX's detector, article claim M09; bcache keeps
//! a similar window of recent I/Os for its `sequential_cutoff`).

use crate::config::CacheConfig;
use crate::request::{Op, Request};

/// Random or sequential.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Short and not continuing a long enough run.
    Random,
    /// Continues a run of at least `sequential_run_bytes`, or is that long itself.
    Sequential,
}

/// What the detector says about one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classified {
    /// Random or sequential.
    pub pattern: Pattern,
    /// Read or write.
    pub op: Op,
    /// Request length.
    pub len_bytes: u64,
    /// Bytes of the contiguous run this request extends, itself included.
    pub run_bytes: u64,
}

#[derive(Clone, Copy)]
struct Run {
    stream: u32,
    op: Op,
    next_offset_bytes: u64,
    run_bytes: u64,
    used: u64,
}

/// Per-stream run tracker, bounded to `streams_tracked` runs (least recently extended
/// one replaced).
pub struct Classifier {
    runs: Vec<Run>,
    runs_max: usize,
    sequential_run_bytes: u64,
    clock: u64,
}

impl Classifier {
    /// An empty detector.
    pub fn new(config: &CacheConfig) -> Classifier {
        Classifier {
            runs: Vec::with_capacity(config.streams_tracked),
            runs_max: config.streams_tracked,
            sequential_run_bytes: config.sequential_run_bytes,
            clock: 0,
        }
    }

    /// Classifies `r` and records it.
    pub fn classify(&mut self, r: &Request) -> Classified {
        self.clock += 1;
        let found = self.runs.iter().position(|x| {
            x.stream == r.stream && x.op == r.op && x.next_offset_bytes == r.offset_bytes
        });
        let run_bytes = match found {
            Some(i) => {
                let run = &mut self.runs[i];
                run.run_bytes += r.len_bytes;
                run.next_offset_bytes = r.offset_bytes + r.len_bytes;
                run.used = self.clock;
                run.run_bytes
            }
            None => {
                let run = Run {
                    stream: r.stream,
                    op: r.op,
                    next_offset_bytes: r.offset_bytes + r.len_bytes,
                    run_bytes: r.len_bytes,
                    used: self.clock,
                };
                if self.runs.len() < self.runs_max {
                    self.runs.push(run);
                } else {
                    let oldest = (0..self.runs.len())
                        .min_by_key(|&i| self.runs[i].used)
                        .expect("runs_max >= 1");
                    self.runs[oldest] = run;
                }
                r.len_bytes
            }
        };
        let pattern = if run_bytes >= self.sequential_run_bytes {
            Pattern::Sequential
        } else {
            Pattern::Random
        };
        Classified {
            pattern,
            op: r.op,
            len_bytes: r.len_bytes,
            run_bytes,
        }
    }
}
