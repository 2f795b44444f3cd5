//! The SSD cache tier between the host and the array (`docs/cache-tier.md`): the
//! policy of [`raidlab_cache`] decides, for every host request, which bytes go to the
//! cache's own SSD array and which to the main array; both arrays are then simulated by
//! the ordinary event loop with the I/O the policy sent them.
//!
//! ```text
//!  workloads ──► policy pass (raidlab-cache, every host I/O, warm-up first)
//!                   │ actions, tallied per workload into pieces:
//!                   │ (array, read/write, sequential/random, sizes, offsets)
//!          ┌────────┴─────────┐
//!   cache array run      main array run      each piece a closed-loop workload at the
//!   (its pieces at once) (its pieces at once) host workload's depth, for the same window
//!          └────────┬─────────┘
//!   host rate of workload w = its measured host I/Os / max over its pieces of
//!                             (piece ops / piece rate)
//! ```
//!
//! The two arrays are coupled through the pieces' op counts (the policy's decisions)
//! and contend inside each array run (every piece of that array runs at once); the
//! model's simplification is that a piece runs at its array's pace rather than being
//! held back by its workload's other pieces, so the contention a throttled workload
//! causes on its other array is overstated. A host I/O's latency is the piece's that
//! served it: a hit's is its cache-array piece's, a miss's its main-array piece's, so
//! each direction's latency figures are the mixture of those pieces' distributions
//! weighted by the host I/Os each served ([`mix`]); the pace (IOPS) stays the slowest
//! piece's.
//!
//! It sits at the top of the crate, beside the event loop rather than in a component's
//! folder, because it is no component of one array: it composes two runs of
//! [`crate::simulation`] (the cache's array and the main one) around the policy.

use crate::host::{Job, Workload};
/// The tier's report is part of the results (a leaf); named here too, where it is built.
pub use crate::results::{CacheReport, PieceReport};
use crate::results::{Explain, JobResults, OpStats, Resource, Results, Samples};
use crate::rng::Rng;
use crate::scenario::{ArraySpec, CacheSpec, Distribution, Rw, Scenario, WorkloadSpec};
use crate::scenario::{BLOCK_BYTES_MAX, IODEPTH_MAX, SCHEMA};
use crate::simulation::Simulation;
use crate::trace::{Reader, TraceError};
use raidlab_cache::{Action, Cache, CacheConfig, Counters, Op, Request};
use std::collections::BTreeMap;

mod mix;
use mix::Mixture;

/// Simulated time each array run measures its pieces for.
pub const PIECE_RUNTIME_NS: u64 = 500_000_000;
/// Host I/Os the policy pass measures per workload at most (a runtime-capped workload
/// may ask for up to `IOS_MAX`).
pub const POLICY_IOS_MAX: u64 = 20_000_000;
/// Largest transfer a piece's block-size mix carries; merged actions are cut here.
const PIECE_BLOCK_BYTES_MAX: u64 = 4 << 20;
/// Distinct transfer sizes a piece keeps (the most frequent).
const PIECE_SIZES_MAX: usize = 32;
const MIB: u64 = 1 << 20;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct PieceKey {
    workload: u32,
    cache: bool,
    write: bool,
    sequential: bool,
}

#[derive(Default)]
struct Piece {
    ops: u64,
    bytes: u64,
    /// (transfer bytes, requests): few distinct sizes, searched linearly.
    sizes: Vec<(u64, u64)>,
    lo: u64,
    hi: u64,
}

/// What the policy pass measured.
struct PolicyPass {
    pieces: BTreeMap<PieceKey, Piece>,
    /// Per workload: host I/Os and bytes per direction (read, write).
    host_ios: Vec<[u64; 2]>,
    host_bytes: Vec<[u64; 2]>,
    /// Per workload and direction: host I/Os the cache array alone served (hits; the
    /// rest waited for the main array).
    host_hits: Vec<[u64; 2]>,
    counters: BTreeMap<String, u64>,
}

fn counters_map(c: &Counters) -> BTreeMap<String, u64> {
    let pairs = [
        ("requests", c.requests),
        ("requests_random", c.requests_random),
        ("requests_sequential", c.requests_sequential),
        ("requests_unaligned", c.requests_unaligned),
        ("read_lines", c.read_lines),
        ("read_hit_lines_rrc", c.read_hit_lines_rrc),
        ("read_hit_lines_rwc", c.read_hit_lines_rwc),
        ("read_hit_lines_main", c.read_hit_lines_main),
        ("write_lines", c.write_lines),
        ("write_hit_lines", c.write_hit_lines),
        ("write_cached_lines", c.write_cached_lines),
        ("write_bypass_lines", c.write_bypass_lines),
        ("read_admitted_lines", c.read_admitted_lines),
        ("refill_lines", c.refill_lines),
        ("evicted_clean_lines", c.evicted_clean_lines),
        ("evicted_dirty_lines", c.evicted_dirty_lines),
        ("evicted_regions_rrc", c.evicted_regions_rrc),
        ("evicted_regions_rwc", c.evicted_regions_rwc),
        ("invalidated_lines", c.invalidated_lines),
        ("destaged_bytes", c.destaged_bytes),
        ("cache_write_bytes_host", c.cache_write_bytes_host),
        ("cache_write_bytes_admit", c.cache_write_bytes_admit),
        ("cache_write_bytes_refill", c.cache_write_bytes_refill),
        ("cache_read_bytes_host", c.cache_read_bytes_host),
        ("array_read_bytes_host", c.array_read_bytes_host),
        ("array_write_bytes_host", c.array_write_bytes_host),
        ("array_read_bytes_refill", c.array_read_bytes_refill),
    ];
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// Tallies one workload's array requests into pieces; a request continuing the
/// previous one of its stream (workload, array, direction) is sequential.
/// Flat on the hot path (one slot per workload, array, direction and pattern), turned
/// into a map of pieces at the end.
struct Tally {
    pieces: Vec<Piece>,
    last_end: Vec<u64>,
    workload: u32,
}

fn slot(workload: u32, cache: bool, write: bool) -> usize {
    workload as usize * 4 + cache as usize * 2 + write as usize
}

impl Tally {
    fn new(workloads: usize) -> Tally {
        let empty = || Piece {
            lo: u64::MAX,
            ..Piece::default()
        };
        Tally {
            pieces: (0..workloads * 8).map(|_| empty()).collect(),
            last_end: vec![u64::MAX; workloads * 4],
            workload: 0,
        }
    }

    fn add(&mut self, cache: bool, write: bool, offset_bytes: u64, len_bytes: u64) {
        let stream = slot(self.workload, cache, write);
        let sequential = self.last_end[stream] == offset_bytes;
        self.last_end[stream] = offset_bytes + len_bytes;
        let piece = &mut self.pieces[stream * 2 + sequential as usize];
        piece.lo = piece.lo.min(offset_bytes);
        piece.hi = piece.hi.max(offset_bytes + len_bytes);
        piece.bytes += len_bytes;
        let mut left = len_bytes;
        while left > 0 {
            let n = left.min(PIECE_BLOCK_BYTES_MAX);
            piece.ops += 1;
            match piece.sizes.iter_mut().find(|s| s.0 == n) {
                Some(s) => s.1 += 1,
                None => piece.sizes.push((n, 1)),
            }
            left -= n;
        }
    }

    fn into_pieces(self) -> BTreeMap<PieceKey, Piece> {
        let mut map = BTreeMap::new();
        for (i, piece) in self.pieces.into_iter().enumerate() {
            if piece.ops == 0 {
                continue;
            }
            let stream = i / 2;
            let key = PieceKey {
                workload: (stream / 4) as u32,
                cache: stream % 4 >= 2,
                write: stream % 2 == 1,
                sequential: i % 2 == 1,
            };
            map.insert(key, piece);
        }
        map
    }

    fn action(&mut self, a: &Action) {
        match *a {
            Action::CacheRead {
                len_bytes,
                cache_offset_bytes,
                ..
            } => self.add(true, false, cache_offset_bytes, len_bytes),
            Action::CacheWrite {
                len_bytes,
                cache_offset_bytes,
                ..
            } => self.add(true, true, cache_offset_bytes, len_bytes),
            Action::ArrayRead {
                lba_bytes,
                len_bytes,
            } => self.add(false, false, lba_bytes, len_bytes),
            Action::ArrayWrite {
                lba_bytes,
                len_bytes,
            } => self.add(false, true, lba_bytes, len_bytes),
            Action::Fill {
                lba_bytes,
                len_bytes,
                cache_offset_bytes,
            } => {
                self.add(false, false, lba_bytes, len_bytes);
                self.add(true, true, cache_offset_bytes, len_bytes);
            }
            Action::Destage {
                lba_bytes,
                len_bytes,
                cache_offset_bytes,
            } => {
                self.add(true, false, cache_offset_bytes, len_bytes);
                self.add(false, true, lba_bytes, len_bytes);
            }
        }
    }
}

impl PolicyPass {
    /// A workload's requests to one array in one direction are one piece: the pattern
    /// of the larger share (sequential or random) takes the smaller when it is under a
    /// tenth (the first request of every log region, a seek between runs), so a few
    /// stray requests do not become a closed loop of their own.
    fn fold_minor_pieces(&mut self) {
        let keys: Vec<PieceKey> = self
            .pieces
            .keys()
            .copied()
            .filter(|k| k.sequential)
            .collect();
        for seq in keys {
            let rnd = PieceKey {
                sequential: false,
                ..seq
            };
            let (Some(a), Some(b)) = (self.pieces.get(&seq), self.pieces.get(&rnd)) else {
                continue;
            };
            let (minor, major) = if a.ops < b.ops {
                (seq, rnd)
            } else {
                (rnd, seq)
            };
            let total = a.ops + b.ops;
            if self.pieces[&minor].ops * 10 >= total {
                continue;
            }
            let m = self.pieces.remove(&minor).expect("present");
            let into = self.pieces.get_mut(&major).expect("present");
            into.ops += m.ops;
            into.bytes += m.bytes;
            into.lo = into.lo.min(m.lo);
            into.hi = into.hi.max(m.hi);
            for (size, n) in m.sizes {
                match into.sizes.iter_mut().find(|s| s.0 == size) {
                    Some(s) => s.1 += n,
                    None => into.sizes.push((size, n)),
                }
            }
        }
    }

    /// Every workload's warm-up, then its measured I/O, through the cache; jobs take
    /// turns one request at a time (each job is its own stream for the detector).
    fn run(scenario: &Scenario, config: CacheConfig) -> PolicyPass {
        let specs = scenario.workload_specs();
        let mut jobs: Vec<Job> = Vec::new();
        let workloads: Vec<Workload> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| Workload::new(i, s, &mut jobs))
            .collect();
        let mut rng = Rng::new(scenario.seed ^ 0xcac4_e000_0000_0001);
        let mut cache = Cache::new(config).expect("a validated cache");
        let mut actions = Vec::new();
        let n = workloads.len();
        let mut issued = vec![0u64; n];
        let warmup: Vec<u64> = workloads.iter().map(|w| w.warmup_ios).collect();
        let measured: Vec<u64> = workloads
            .iter()
            .map(|w| w.ios.min(POLICY_IOS_MAX))
            .collect();
        let mut pass = PolicyPass::empty(n);
        let mut tally = Tally::new(n);
        // Warm-up, then the measured phase.
        for phase in 0..2 {
            let goal: Vec<u64> = (0..n)
                .map(|w| warmup[w] + if phase == 1 { measured[w] } else { 0 })
                .collect();
            if phase == 1 {
                pass.counters = counters_map(cache.counters());
            }
            loop {
                let mut any = false;
                for (j, job) in jobs.iter_mut().enumerate() {
                    let w = job.workload as usize;
                    if issued[w] >= goal[w] {
                        continue;
                    }
                    any = true;
                    issued[w] += 1;
                    let ask = workloads[w].next(&mut rng, job);
                    let request = Request {
                        stream: j as u32,
                        op: if ask.write { Op::Write } else { Op::Read },
                        offset_bytes: ask.offset_bytes,
                        len_bytes: ask.len_bytes,
                    };
                    actions.clear();
                    cache.access(&request, &mut actions);
                    if phase == 1 {
                        pass.measure(&mut tally, w, &request, &actions);
                    }
                }
                if !any {
                    break;
                }
            }
        }
        pass.finish(tally, &cache);
        pass
    }

    /// A trace's records, in trace order, through the cache: one stream (as the
    /// engine's `--cache-trace` records what its one policy saw), no warm-up (the
    /// trace starts where its cache started), every record measured. Records are
    /// fitted into the main array as a replay without a cache fits them.
    fn replay<R: std::io::BufRead>(
        scenario: &Scenario,
        config: CacheConfig,
        reader: &mut Reader<R>,
    ) -> Result<PolicyPass, TraceError> {
        let capacity = scenario
            .array
            .geometry()
            .expect("a validated array")
            .capacity_bytes();
        let mut cache = Cache::new(config).expect("a validated cache");
        let mut actions = Vec::new();
        let mut pass = PolicyPass::empty(1);
        pass.counters = counters_map(cache.counters());
        let mut tally = Tally::new(1);
        while let Some(record) = reader.next_record()? {
            let r = record.fitted(capacity, BLOCK_BYTES_MAX);
            let request = Request {
                stream: 0,
                op: if r.write { Op::Write } else { Op::Read },
                offset_bytes: r.offset_bytes,
                len_bytes: r.len_bytes,
            };
            actions.clear();
            cache.access(&request, &mut actions);
            pass.measure(&mut tally, 0, &request, &actions);
        }
        pass.finish(tally, &cache);
        Ok(pass)
    }

    fn empty(workloads: usize) -> PolicyPass {
        PolicyPass {
            pieces: BTreeMap::new(),
            host_ios: vec![[0; 2]; workloads],
            host_bytes: vec![[0; 2]; workloads],
            host_hits: vec![[0; 2]; workloads],
            counters: BTreeMap::new(),
        }
    }

    /// A measured host request of workload `w` and the actions the policy took for it.
    fn measure(&mut self, tally: &mut Tally, w: usize, request: &Request, actions: &[Action]) {
        let dir = (request.op == Op::Write) as usize;
        self.host_ios[w][dir] += 1;
        self.host_bytes[w][dir] += request.len_bytes;
        // A host I/O waits for the main array when the policy sent it there: a read
        // that missed (read, or read and filled into the cache), a write that bypassed
        // or wrote through. Destages and fills of other lines are the arrays' load,
        // not this I/O's wait.
        let missed = actions.iter().any(|a| match a {
            Action::ArrayRead { .. } | Action::Fill { .. } => true,
            Action::ArrayWrite { .. } => dir == 1,
            _ => false,
        });
        if !missed {
            self.host_hits[w][dir] += 1;
        }
        tally.workload = w as u32;
        for a in actions {
            tally.action(a);
        }
    }

    /// The pieces tallied, and the counters over the measured interval (`counters`
    /// holds them at its start).
    fn finish(&mut self, tally: Tally, cache: &Cache) {
        self.pieces = tally.into_pieces();
        let end = counters_map(cache.counters());
        self.counters = end
            .iter()
            .map(|(k, v)| (k.clone(), v - self.counters[k]))
            .collect();
    }
}

fn piece_rw(key: &PieceKey) -> Rw {
    match (key.write, key.sequential) {
        (false, false) => Rw::Randread,
        (false, true) => Rw::Read,
        (true, false) => Rw::Randwrite,
        (true, true) => Rw::Write,
    }
}

fn rw_name(rw: Rw) -> &'static str {
    match rw {
        Rw::Randread => "randread",
        Rw::Read => "read",
        Rw::Randwrite => "randwrite",
        _ => "write",
    }
}

/// The closed-loop workload a piece becomes on its array.
fn piece_workload(key: &PieceKey, piece: &Piece, depth: u32, capacity_bytes: u64) -> WorkloadSpec {
    let mut sizes: Vec<(u64, u64)> = piece.sizes.clone();
    sizes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    sizes.truncate(PIECE_SIZES_MAX);
    let total: u64 = sizes.iter().map(|s| s.1).sum();
    let mut bs: Vec<(u64, u32)> = sizes
        .iter()
        .map(|&(b, n)| (b, ((n as u128 * 1_000_000 / total as u128) as u32).max(1)))
        .collect();
    bs.sort_unstable();
    let bs_max = bs.iter().map(|b| b.0).max().expect("a piece has requests");
    let lo = piece.lo / MIB * MIB;
    let hi = piece.hi.div_ceil(MIB) * MIB;
    let size = (hi - lo)
        .max(bs_max.div_ceil(MIB) * MIB)
        .min(capacity_bytes / MIB * MIB);
    let offset = lo.min(capacity_bytes / MIB * MIB - size);
    WorkloadSpec {
        rw: piece_rw(key),
        bs,
        rwmixread: 50,
        iodepth: depth,
        numjobs: 1,
        offset_bytes: offset,
        size_bytes: size,
        ios: crate::scenario::limits::IOS_MAX,
        warmup_ios: u64::from(depth) * 2,
        runtime_ns: Some(PIECE_RUNTIME_NS),
        distribution: Distribution::Uniform,
        name: Some(format!("w{}.{}", key.workload, rw_name(piece_rw(key)))),
        bs_write: None,
        warmup_ns: 0,
        sample_interval_ns: PIECE_RUNTIME_NS,
    }
}

/// One array's run of its pieces: the pieces' results in order, and the run's.
fn run_array(
    array: &ArraySpec,
    keys: &[PieceKey],
    pass: &PolicyPass,
    depths: &BTreeMap<PieceKey, u32>,
    scenario: &Scenario,
    salt: u64,
) -> Option<Results> {
    if keys.is_empty() {
        return None;
    }
    let capacity = array
        .geometry()
        .expect("a validated array")
        .capacity_bytes();
    let workloads = keys
        .iter()
        .map(|k| piece_workload(k, &pass.pieces[k], depths[k], capacity))
        .collect();
    let mut array = array.clone();
    array.cache = None;
    let s = Scenario {
        schema: SCHEMA,
        seed: scenario.seed ^ salt,
        array,
        workload: None,
        workloads,
        trace: None,
    };
    s.validate()
        .expect("a piece is a valid workload on its array");
    Some(Simulation::new(&s).run())
}

fn op_rate(r: &Results, job: usize, write: bool) -> (f64, &OpStats) {
    let ops = &r.jobs[job].ops;
    let stats = ops
        .get(if write { "write" } else { "read" })
        .expect("a piece did its direction");
    (stats.iops, stats)
}

/// The validated `[cache]` table of a cached scenario and the policy's configuration.
fn cache_config(scenario: &Scenario) -> (&CacheSpec, CacheConfig) {
    let spec = scenario.array.cache.as_deref().expect("a cached scenario");
    let cache_capacity = spec.array.geometry().expect("validated").capacity_bytes();
    let config = spec
        .config(cache_capacity, "array.cache")
        .expect("validated");
    (spec, config)
}

/// Run a validated scenario of fio-style workloads whose array has a cache.
pub fn simulate(scenario: &Scenario) -> Results {
    let (spec, config) = cache_config(scenario);
    let (line_bytes, capacity_bytes) = (config.line_bytes, config.capacity_bytes);
    let pass = PolicyPass::run(scenario, config);
    let specs: Vec<WorkloadSpec> = scenario.workload_specs().into_iter().cloned().collect();
    run_arrays(scenario, spec, pass, &specs, capacity_bytes, line_bytes)
}

/// Run a validated trace replay (closed mode) whose array has a cache: the policy sees
/// the trace's requests in order (streamed from `reader`), then its pieces run on both
/// arrays at the trace's iodepth as a generated workload's do. The results' one job is
/// `trace`, as a replay's without a cache.
pub fn replay<R: std::io::BufRead>(
    scenario: &Scenario,
    reader: &mut Reader<R>,
) -> Result<Results, TraceError> {
    let trace = scenario.trace.as_ref().expect("a trace replay");
    let (spec, config) = cache_config(scenario);
    let (line_bytes, capacity_bytes) = (config.line_bytes, config.capacity_bytes);
    let pass = PolicyPass::replay(scenario, config, reader)?;
    let capacity = scenario
        .array
        .geometry()
        .expect("validated")
        .capacity_bytes();
    let specs = vec![crate::scenario::trace_host_workload(
        trace.iodepth,
        capacity,
    )];
    Ok(run_arrays(
        scenario,
        spec,
        pass,
        &specs,
        capacity_bytes,
        line_bytes,
    ))
}

/// Both arrays' runs of the pieces the policy pass tallied, composed into the host's
/// results; `specs` are the host workloads the pass's workload indices refer to.
fn run_arrays(
    scenario: &Scenario,
    spec: &CacheSpec,
    mut pass: PolicyPass,
    specs: &[WorkloadSpec],
    capacity_bytes: u64,
    line_bytes: u64,
) -> Results {
    pass.fold_minor_pieces();
    let cache_keys: Vec<PieceKey> = pass.pieces.keys().filter(|k| k.cache).copied().collect();
    let main_keys: Vec<PieceKey> = pass.pieces.keys().filter(|k| !k.cache).copied().collect();
    let host_depth = |w: u32| {
        let s = &specs[w as usize];
        (s.iodepth * s.numjobs).min(IODEPTH_MAX)
    };
    // First run: every piece at its workload's whole depth. Then the depth is shared out
    // as a closed loop shares it (Little's law: a piece holds requests in proportion to
    // its requests times their latency), and the arrays run again.
    let full: BTreeMap<PieceKey, u32> = pass
        .pieces
        .keys()
        .map(|k| (*k, host_depth(k.workload)))
        .collect();
    let cache_run = run_array(&spec.array, &cache_keys, &pass, &full, scenario, 0xcac4e);
    let main_run = run_array(&scenario.array, &main_keys, &pass, &full, scenario, 0x3a14);
    let mut held: BTreeMap<PieceKey, f64> = BTreeMap::new();
    for (keys, run) in [(&cache_keys, &cache_run), (&main_keys, &main_run)] {
        let Some(run) = run else { continue };
        for (i, k) in keys.iter().enumerate() {
            let (_, stats) = op_rate(run, i, k.write);
            held.insert(*k, pass.pieces[k].ops as f64 * stats.lat_mean_ns);
        }
    }
    let depths: BTreeMap<PieceKey, u32> = held
        .iter()
        .map(|(k, h)| {
            let total: f64 = held
                .iter()
                .filter(|(q, _)| q.workload == k.workload)
                .map(|(_, v)| v)
                .sum();
            let share = if total > 0.0 { h / total } else { 1.0 };
            (
                *k,
                ((f64::from(host_depth(k.workload)) * share).round() as u32).max(1),
            )
        })
        .collect();
    let cache_run = run_array(&spec.array, &cache_keys, &pass, &depths, scenario, 0xcac4e);
    let main_run = run_array(
        &scenario.array,
        &main_keys,
        &pass,
        &depths,
        scenario,
        0x3a14,
    );
    compose(
        scenario,
        specs,
        spec,
        &pass,
        (&cache_keys, cache_run.as_ref()),
        (&main_keys, main_run.as_ref()),
        capacity_bytes,
        line_bytes,
    )
}

struct PieceResult<'a> {
    key: PieceKey,
    ops: u64,
    bytes: u64,
    iops: f64,
    time_s: f64,
    stats: &'a OpStats,
}

#[allow(clippy::too_many_arguments)]
fn compose(
    scenario: &Scenario,
    specs: &[WorkloadSpec],
    spec: &CacheSpec,
    pass: &PolicyPass,
    cache: (&[PieceKey], Option<&Results>),
    main: (&[PieceKey], Option<&Results>),
    capacity_bytes: u64,
    line_bytes: u64,
) -> Results {
    let pieces = piece_results(pass, cache, main);
    let mut jobs = Vec::new();
    let mut total: HostTotals = [(0, 0, 0.0, 0.0); 2];
    let mut sim_time_s: f64 = 0.0;
    let mut bottlenecks = Vec::new();
    for (w, spec_w) in specs.iter().enumerate() {
        let (job, slowest, t) = workload_result(w, spec_w, pass, &pieces, &mut total);
        jobs.push(job);
        bottlenecks.push(slowest);
        sim_time_s = sim_time_s.max(t);
    }
    let ops = host_ops(&total, pass, &pieces);
    let hits: u64 = pass.host_hits.iter().map(|h| h[0] + h[1]).sum();
    let ios: u64 = pass.host_ios.iter().map(|h| h[0] + h[1]).sum();
    let mut explain = explain(cache.1, main.1, ratio(hits, ios));
    explain.cache = Some(cache_report(
        spec,
        pass,
        &pieces,
        &bottlenecks,
        cache.1,
        capacity_bytes,
        line_bytes,
        specs,
    ));
    Results {
        schema: SCHEMA,
        seed: scenario.seed,
        sim_time_ns: ((sim_time_s * 1e9) as u64).max(1),
        events: cache.1.map_or(0, |r| r.events)
            + main.1.map_or(0, |r| r.events)
            + pass.counters["requests"],
        ops,
        explain,
        jobs,
        rebuild: None,
    }
}

/// Per direction, over every workload: host I/Os, bytes, IOPS and MB/s.
type HostTotals = [(u64, u64, f64, f64); 2];

/// Every piece of the array runs that took place, with the rate its array ran it at.
fn piece_results<'a>(
    pass: &PolicyPass,
    cache: (&[PieceKey], Option<&'a Results>),
    main: (&[PieceKey], Option<&'a Results>),
) -> Vec<PieceResult<'a>> {
    let mut pieces: Vec<PieceResult> = Vec::new();
    for (keys, run) in [cache, main] {
        let Some(run) = run else { continue };
        for (i, k) in keys.iter().enumerate() {
            let p = &pass.pieces[k];
            let (iops, stats) = op_rate(run, i, k.write);
            pieces.push(PieceResult {
                key: *k,
                ops: p.ops,
                bytes: p.bytes,
                iops,
                time_s: p.ops as f64 / iops.max(1e-9),
                stats,
            });
        }
    }
    pieces
}

/// Workload `w`'s results, paced by its slowest piece: the job, that piece's key and
/// its time (s); its figures are added to `total`.
fn workload_result(
    w: usize,
    spec_w: &WorkloadSpec,
    pass: &PolicyPass,
    pieces: &[PieceResult],
    total: &mut HostTotals,
) -> (JobResults, PieceKey, f64) {
    let slowest = pieces
        .iter()
        .filter(|p| p.key.workload == w as u32)
        .max_by(|a, b| a.time_s.total_cmp(&b.time_s))
        .expect("every host I/O reaches an array");
    let t = slowest.time_s.max(1e-9);
    let mut ops = BTreeMap::new();
    for (dir, name) in [(0, "read"), (1, "write")] {
        let ios = pass.host_ios[w][dir];
        if ios == 0 {
            continue;
        }
        let bytes = pass.host_bytes[w][dir];
        let stats = mixed_stats(
            &direction_mixture(w, dir, pass, pieces),
            ios,
            bytes,
            ios as f64 / t,
            bytes as f64 / t / 1e6,
        );
        let tot = &mut total[dir];
        tot.0 += ios;
        tot.1 += bytes;
        tot.2 += stats.iops;
        tot.3 += stats.mbps;
        ops.insert(name.to_string(), stats);
    }
    let job = JobResults {
        name: spec_w.name.clone().unwrap_or_else(|| format!("job{w}")),
        ops,
        runtime_ns: (t * 1e9) as u64,
        samples: Samples {
            interval_ns: spec_w.sample_interval_ns.max(1),
            read_ios: Vec::new(),
            read_bytes: Vec::new(),
            write_ios: Vec::new(),
            write_bytes: Vec::new(),
            trim_ios: Vec::new(),
            trim_bytes: Vec::new(),
        },
    };
    (job, slowest.key, t)
}

/// The host's figures per direction over every workload; its latency the mixture of
/// every workload's.
fn host_ops(
    total: &HostTotals,
    pass: &PolicyPass,
    pieces: &[PieceResult],
) -> BTreeMap<String, OpStats> {
    let mut ops = BTreeMap::new();
    for (dir, name) in [(0, "read"), (1, "write")] {
        let (ios, bytes, iops, mbps) = total[dir];
        if ios == 0 {
            continue;
        }
        let mut mixture = Mixture::default();
        for w in 0..pass.host_ios.len() {
            mixture.extend(&direction_mixture(w, dir, pass, pieces));
        }
        ops.insert(
            name.to_string(),
            mixed_stats(&mixture, ios, bytes, iops, mbps),
        );
    }
    ops
}

/// Workload `w`'s latency in direction `dir` (0 read, 1 write): its hits are the cache
/// array's pieces of that direction, its misses the main array's, each set weighted by
/// its host I/Os and shared among its pieces (sequential, random) by their requests.
fn direction_mixture<'a>(
    w: usize,
    dir: usize,
    pass: &PolicyPass,
    pieces: &'a [PieceResult<'a>],
) -> Mixture<'a> {
    let hits = pass.host_hits[w][dir];
    let misses = pass.host_ios[w][dir] - hits;
    let set = |cache: bool| -> Vec<&'a PieceResult<'a>> {
        pieces
            .iter()
            .filter(|p| {
                p.key.workload == w as u32 && p.key.cache == cache && p.key.write == (dir == 1)
            })
            .collect()
    };
    let (hit_set, miss_set) = (set(true), set(false));
    let mut mixture = Mixture::default();
    for (host_ios, own, other) in [(hits, &hit_set, &miss_set), (misses, &miss_set, &hit_set)] {
        // A set with no piece of its own (not expected) lends its I/Os the other's.
        let set = if own.is_empty() { other } else { own };
        let requests: u64 = set.iter().map(|p| p.ops).sum();
        for p in set {
            mixture.add(
                host_ios as f64 * p.ops as f64 / requests.max(1) as f64,
                p.stats,
            );
        }
    }
    mixture
}

/// One direction's figures: its counts and rates, and its latency from `mixture`.
fn mixed_stats(mixture: &Mixture, ios: u64, bytes: u64, iops: f64, mbps: f64) -> OpStats {
    OpStats {
        ios,
        bytes,
        iops,
        mbps,
        lat_mean_ns: mixture.mean_ns(),
        lat_min_ns: mixture.min_ns(),
        lat_max_ns: mixture.max_ns(),
        percentiles_ns: mixture.percentiles_ns(),
    }
}

/// Both arrays' resources, named `cache.*` and `main.*`; the busiest is the bottleneck.
/// A host I/O's stages are its array's (a hit's the cache array's, a miss's the main
/// array's), weighted by the share of host I/Os that were hits, `hit_share`.
fn explain(cache: Option<&Results>, main: Option<&Results>, hit_share: f64) -> Explain {
    let mut resources: Vec<Resource> = Vec::new();
    let mut members = Vec::new();
    // Flash wear: the cache SSDs' (the main array's HDDs have none), in member order.
    let mut wear = Vec::new();
    for (prefix, run) in [("cache", cache), ("main", main)] {
        let Some(run) = run else { continue };
        resources.extend(run.explain.resources.iter().map(|r| Resource {
            name: format!("{prefix}.{}", r.name),
            ..r.clone()
        }));
        members.extend(run.explain.members.iter().cloned());
        wear.extend(run.explain.wear.iter().cloned());
    }
    let busiest = resources
        .iter()
        .max_by(|a, b| a.utilisation.total_cmp(&b.utilisation))
        .cloned();
    let (bottleneck, utilisation) =
        busiest.map_or((String::new(), 0.0), |r| (r.name, r.utilisation));
    let (latency_ns_by_stage, stage_longest) = stages(cache, main, hit_share);
    Explain {
        resources,
        bottleneck,
        bottleneck_utilisation: utilisation,
        bound: if utilisation >= crate::results::SATURATION_UTILISATION {
            "resource"
        } else {
            "latency"
        }
        .into(),
        latency_ns_by_stage,
        stage_longest,
        member_ios_per_host_io: BTreeMap::new(),
        member_bytes_per_host_byte: BTreeMap::new(),
        read_ahead_hits: 0,
        drive_read_ahead_hits: 0,
        parity_bytes_per_host_byte: BTreeMap::new(),
        ssd_write_amplification: cache.and_then(|r| r.explain.ssd_write_amplification),
        scheduler: None,
        members,
        wear,
        cache: None,
    }
}

/// Mean time per host I/O in each array's stages (`cache.drive`, `main.controller`)
/// and the longest of them; ties go to the first named, so the choice is stable.
fn stages(
    cache: Option<&Results>,
    main: Option<&Results>,
    hit_share: f64,
) -> (BTreeMap<String, f64>, String) {
    let mut by_stage = BTreeMap::new();
    for (prefix, run, share) in [("cache", cache, hit_share), ("main", main, 1.0 - hit_share)] {
        let Some(run) = run else { continue };
        for (stage, ns) in &run.explain.latency_ns_by_stage {
            by_stage.insert(format!("{prefix}.{stage}"), ns * share);
        }
    }
    let longest = by_stage
        .iter()
        .fold(None::<(&String, f64)>, |best, (stage, &ns)| match best {
            Some(b) if b.1 >= ns => Some(b),
            _ => Some((stage, ns)),
        })
        .map_or_else(String::new, |(stage, _)| stage.clone());
    (by_stage, longest)
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

#[allow(clippy::too_many_arguments)]
fn cache_report(
    spec: &CacheSpec,
    pass: &PolicyPass,
    pieces: &[PieceResult],
    bottlenecks: &[PieceKey],
    cache_run: Option<&Results>,
    capacity_bytes: u64,
    line_bytes: u64,
    specs: &[WorkloadSpec],
) -> CacheReport {
    let c = &pass.counters;
    let host_write_bytes: u64 = pass.host_bytes.iter().map(|b| b[1]).sum();
    let host_bytes: u64 = pass.host_bytes.iter().map(|b| b[0] + b[1]).sum();
    let cache_written =
        c["cache_write_bytes_host"] + c["cache_write_bytes_admit"] + c["cache_write_bytes_refill"];
    let wa = cache_run.and_then(|r| r.explain.ssd_write_amplification);
    // Member bytes the cache array writes per byte written to it (2 on RAID 10).
    let member_per_byte = cache_run
        .and_then(|r| r.explain.member_bytes_per_host_byte.get("write").copied())
        .unwrap_or(1.0);
    let name = |w: u32| {
        specs[w as usize]
            .name
            .clone()
            .unwrap_or_else(|| format!("job{w}"))
    };
    let read_lines = c["read_lines"];
    CacheReport {
        policy: spec.policy.clone(),
        capacity_bytes,
        line_bytes,
        read_hit_ratio: ratio(
            c["read_hit_lines_rrc"] + c["read_hit_lines_rwc"] + c["read_hit_lines_main"],
            read_lines,
        ),
        read_hit_ratio_rrc: ratio(c["read_hit_lines_rrc"], read_lines),
        read_hit_ratio_rwc: ratio(c["read_hit_lines_rwc"], read_lines),
        write_cached_ratio: ratio(c["write_cached_lines"], c["write_lines"]),
        ssd_write_hits: (host_write_bytes > 0).then(|| ratio(cache_written, host_write_bytes)),
        cache_write_bytes_per_host_byte: ratio(cache_written, host_bytes),
        ssd_nand_write_bytes: cache_written as f64 * member_per_byte * wa.unwrap_or(1.0),
        ssd_write_amplification: wa,
        destaged_bytes: c["destaged_bytes"],
        host_write_bytes,
        host_read_bytes: host_bytes - host_write_bytes,
        counters: c.clone(),
        pieces: pieces
            .iter()
            .map(|p| PieceReport {
                workload: name(p.key.workload),
                array: if p.key.cache { "cache" } else { "main" }.into(),
                rw: rw_name(piece_rw(&p.key)).into(),
                ops: p.ops,
                bytes: p.bytes,
                iops: p.iops,
                time_ns: (p.time_s * 1e9) as u64,
                bottleneck: bottlenecks.contains(&p.key),
            })
            .collect(),
    }
}
