//! Measurement and the report: the measured interval's counters, every resource's
//! busy time (for utilisation and the bottleneck), and the results assembled at the
//! end of a run in fio's terms (IOPS, MB/s, latency percentiles) plus the explanation
//! (member I/O per host I/O, parity bytes, read-ahead hits, write amplification,
//! scheduler and rebuild figures).

use super::{DriveModel, Simulation, READ, TRIM, WRITE};
use super::{PathTimes, Request};
use crate::histogram::Histogram;
use crate::results::{
    Explain, JobResults, MemberCounters, OpStats, RebuildReport, Resource, Results, Samples,
    SchedulerReport, SATURATION_UTILISATION, STAGES,
};
use crate::scenario::SCHEMA;
use std::collections::BTreeMap;

/// fio's default percentile list: (the key fio's JSON prints, the percentile). The
/// results' `percentiles_ns` use these keys, so reports read like fio's.
pub const PERCENTILES: [(&str, f64); 17] = [
    ("1.000000", 1.0),
    ("5.000000", 5.0),
    ("10.000000", 10.0),
    ("20.000000", 20.0),
    ("30.000000", 30.0),
    ("40.000000", 40.0),
    ("50.000000", 50.0),
    ("60.000000", 60.0),
    ("70.000000", 70.0),
    ("80.000000", 80.0),
    ("90.000000", 90.0),
    ("95.000000", 95.0),
    ("99.000000", 99.0),
    ("99.500000", 99.5),
    ("99.900000", 99.9),
    ("99.950000", 99.95),
    ("99.990000", 99.99),
];

/// Counters over the measured interval.
#[derive(Default, Clone)]
pub(super) struct Tally {
    host_ios: [u64; 2],
    host_bytes: [u64; 2],
    pub(super) member_ios: [u64; 2],
    pub(super) member_bytes: [u64; 2],
    pub(super) parity_bytes: [u64; 2],
    /// Host I/Os measured and their time per stage of the path (`STAGES` order).
    staged_ios: u64,
    stage_ns: [u64; 4],
    /// Per member (grown on first use, so `Tally::default()` needs no drive count).
    members: Vec<MemberCounters>,
}

/// One direction's figures from its histogram and counters over `secs`.
fn op_stats(h: &Histogram, ios: u64, bytes: u64, secs: f64) -> OpStats {
    OpStats {
        ios,
        bytes,
        iops: ios as f64 / secs,
        mbps: bytes as f64 / secs / 1e6,
        lat_mean_ns: h.mean_ns(),
        lat_min_ns: h.min_ns(),
        lat_max_ns: h.max_ns(),
        percentiles_ns: PERCENTILES
            .iter()
            .map(|&(key, p)| (key.to_string(), h.percentile_ns(p)))
            .collect(),
    }
}

impl Simulation {
    /// Every resource with its kind, the units its busy time is spread over, and its
    /// busy time so far. Names and busy times come from one place so they stay paired.
    fn resources_now(&self) -> Vec<(String, &'static str, u64, u64)> {
        let c = &self.controller;
        let mut v = vec![(
            "controller.cpu".to_string(),
            "controller",
            1,
            c.cpu.busy_ns(),
        )];
        for (name, path) in [
            ("controller.parity", &c.parity),
            ("bus.up", &c.bus_up),
            ("bus.down", &c.bus_down),
            ("uplink.up", &c.uplink_up),
            ("uplink.down", &c.uplink_down),
            ("controller.read_path", &c.read_path),
            ("controller.write_path", &c.write_path),
        ] {
            if let Some(path) = path {
                v.push((name.to_string(), "path", 1, path.busy_ns()));
            }
        }
        if let Some(engine) = &c.write_cache {
            // In-flight time up to now, without disturbing the engine's own accounting.
            let pending = u64::from(engine.in_flight) * (self.now_ns - engine.in_flight_since_ns)
                / u64::from(engine.concurrency);
            v.push((
                "controller.destage".to_string(),
                "controller",
                1,
                engine.busy_ns() + pending,
            ));
        }
        for (i, d) in self.drives.iter().enumerate() {
            match &d.model {
                DriveModel::Ssd(ssd) => {
                    let (dies, channels) = ssd.units();
                    let [firmware, link, flash, channel] = ssd.busy_ns();
                    v.push((format!("drive{i}.firmware"), "drive", 1, firmware));
                    v.push((format!("drive{i}.link"), "drive", 1, link));
                    v.push((format!("drive{i}.flash"), "drive", dies as u64, flash));
                    v.push((
                        format!("drive{i}.channels"),
                        "drive",
                        channels as u64,
                        channel,
                    ));
                }
                DriveModel::Hdd(hdd) => {
                    v.push((format!("drive{i}.mechanism"), "drive", 1, hdd.busy_ns()))
                }
            }
        }
        if let Some(sched) = &self.scheduler {
            // Busy while requests wait in the scheduler although the device has room:
            // bfq serving one process alone or idling for it.
            v.push((
                "host.scheduler".to_string(),
                "host",
                1,
                sched.withheld_ns(self.now_ns),
            ));
        }
        v
    }

    fn busy_snapshot(&self) -> Vec<u64> {
        self.resources_now().into_iter().map(|r| r.3).collect()
    }

    pub(super) fn begin_measuring(&mut self) {
        self.measuring = true;
        self.start_ns = self.now_ns;
        self.busy_at_start = self.busy_snapshot();
        self.tally = Tally::default();
        if let Some(rb) = self.rebuild.as_mut() {
            rb.bytes_at_start = rb.bytes_done;
        }
        if let Some(sched) = &self.scheduler {
            self.scheduler_at_start = sched.counters();
        }
        for d in &mut self.drives {
            if let DriveModel::Ssd(ssd) = &mut d.model {
                ssd.reset_write_amplification();
            }
        }
    }

    /// Count member operation `id`, which its drive has just completed.
    pub(super) fn tally_member_done(&mut self, id: u32) {
        let op = self.ops[id as usize];
        let member = op.drive as usize;
        debug_assert!(member < self.drives.len(), "a member op targets a member");
        let members = &mut self.tally.members;
        if members.len() <= member {
            members.resize(self.drives.len(), MemberCounters::default());
        }
        let counters = &mut members[member];
        if op.trim {
            counters.trim_ops += 1;
        } else if op.write {
            counters.write_ops += 1;
            counters.write_bytes += op.len_bytes;
        } else {
            counters.read_ops += 1;
            counters.read_bytes += op.len_bytes;
        }
    }

    /// Count a measured host I/O's time per stage of its path (`STAGES`).
    pub(super) fn tally_stages(&mut self, r: &Request, path: PathTimes) {
        let total_ns = self.now_ns - r.issued_ns;
        let host_ns = path.controller_ns.saturating_sub(r.issued_ns).min(total_ns);
        let link_ns = path.link_ns.min(total_ns - host_ns);
        let drive_ns = path.drive_ns.min(total_ns - host_ns - link_ns);
        let controller_ns = total_ns - host_ns - link_ns - drive_ns;
        self.tally.staged_ios += 1;
        let stages = [host_ns, controller_ns, link_ns, drive_ns];
        for (sum, ns) in self.tally.stage_ns.iter_mut().zip(stages) {
            *sum += ns;
        }
    }

    pub(super) fn results(&self) -> Results {
        let elapsed = (self.end_ns - self.start_ns).max(1);
        let secs = elapsed as f64 / 1e9;
        let mut ops = BTreeMap::new();
        let mut member_ios = BTreeMap::new();
        let mut member_bytes = BTreeMap::new();
        let mut parity_bytes = BTreeMap::new();
        // Host totals: every workload's figures together.
        let mut hist = [Histogram::new(), Histogram::new()];
        let mut t = self.tally.clone();
        for w in &self.workloads {
            for dir in [READ, WRITE] {
                hist[dir].merge(&w.hist[dir]);
                t.host_ios[dir] += w.ios_done[dir];
                t.host_bytes[dir] += w.bytes_done[dir];
            }
        }
        for (dir, name) in [(READ, "read"), (WRITE, "write")] {
            let h = &hist[dir];
            if h.count() == 0 {
                continue;
            }
            ops.insert(
                name.to_string(),
                op_stats(h, t.host_ios[dir], t.host_bytes[dir], secs),
            );
            member_ios.insert(
                name.to_string(),
                t.member_ios[dir] as f64 / t.host_ios[dir] as f64,
            );
            member_bytes.insert(
                name.to_string(),
                t.member_bytes[dir] as f64 / t.host_bytes[dir] as f64,
            );
            if t.parity_bytes[dir] > 0 {
                parity_bytes.insert(
                    name.to_string(),
                    t.parity_bytes[dir] as f64 / t.host_bytes[dir] as f64,
                );
            }
        }
        // Discards: host figures only (they move no data, so no member ratios).
        let mut trims = Histogram::new();
        let (mut trim_ios, mut trim_bytes) = (0, 0);
        for w in &self.workloads {
            trims.merge(&w.hist[TRIM]);
            trim_ios += w.ios_done[TRIM];
            trim_bytes += w.bytes_done[TRIM];
        }
        if trims.count() > 0 {
            ops.insert(
                "trim".to_string(),
                op_stats(&trims, trim_ios, trim_bytes, secs),
            );
        }
        let resources: Vec<Resource> = self
            .resources_now()
            .into_iter()
            .zip(&self.busy_at_start)
            .map(|((name, kind, units, b1), &b0)| {
                let busy = (b1 - b0) / units;
                Resource {
                    name,
                    kind: kind.to_string(),
                    busy_ns: busy,
                    utilisation: (busy as f64 / elapsed as f64).min(1.0),
                }
            })
            .collect();
        let bottleneck = resources
            .iter()
            .fold(None::<&Resource>, |best, r| match best {
                Some(b) if b.utilisation >= r.utilisation => Some(b),
                _ => Some(r),
            })
            .expect("the controller is always a resource");
        let mut members = t.members.clone();
        members.resize(self.drives.len(), MemberCounters::default());
        let staged_ios = t.staged_ios.max(1) as f64;
        let latency_ns_by_stage: BTreeMap<String, f64> = STAGES
            .iter()
            .zip(t.stage_ns)
            .map(|(stage, ns)| (stage.to_string(), ns as f64 / staged_ios))
            .collect();
        // Ties go to the stage nearer the host, so the choice is stable.
        let stage_longest = STAGES
            .iter()
            .zip(t.stage_ns)
            .fold(None::<(&str, u64)>, |best, (stage, ns)| match best {
                Some(b) if b.1 >= ns => Some(b),
                _ => Some((stage, ns)),
            })
            .map(|(stage, _)| stage.to_string())
            .expect("four stages");
        let bound = if bottleneck.utilisation >= SATURATION_UTILISATION {
            "resource"
        } else {
            "latency"
        };
        let drive_read_ahead_hits = self
            .drives
            .iter()
            .map(|d| match &d.model {
                DriveModel::Hdd(h) => h.read_ahead_hits(),
                DriveModel::Ssd(_) => 0,
            })
            .sum();
        let jobs = self
            .workloads
            .iter()
            .map(|w| {
                let end = if w.stopped { w.end_ns } else { self.end_ns };
                let runtime_ns = end.saturating_sub(self.start_ns).max(1);
                let secs = runtime_ns as f64 / 1e9;
                let mut ops = BTreeMap::new();
                for (dir, name) in [(READ, "read"), (WRITE, "write"), (TRIM, "trim")] {
                    if w.hist[dir].count() > 0 {
                        let stats =
                            op_stats(&w.hist[dir], w.ios_done[dir], w.bytes_done[dir], secs);
                        ops.insert(name.to_string(), stats);
                    }
                }
                let column = |dir: usize, bytes: bool| -> Vec<u64> {
                    w.samples[dir]
                        .iter()
                        .map(|s| if bytes { s.1 } else { s.0 })
                        .collect()
                };
                JobResults {
                    name: w.name.clone(),
                    ops,
                    runtime_ns,
                    samples: Samples {
                        interval_ns: w.sample_interval_ns,
                        read_ios: column(READ, false),
                        read_bytes: column(READ, true),
                        write_ios: column(WRITE, false),
                        write_bytes: column(WRITE, true),
                        trim_ios: if w.trims() {
                            column(TRIM, false)
                        } else {
                            Vec::new()
                        },
                        trim_bytes: if w.trims() {
                            column(TRIM, true)
                        } else {
                            Vec::new()
                        },
                    },
                }
            })
            .collect();
        Results {
            schema: SCHEMA,
            jobs,
            seed: self.seed,
            sim_time_ns: elapsed,
            events: self.events,
            ops,
            explain: Explain {
                bottleneck: bottleneck.name.clone(),
                bottleneck_utilisation: bottleneck.utilisation,
                bound: bound.to_string(),
                latency_ns_by_stage,
                stage_longest,
                resources: resources.clone(),
                member_ios_per_host_io: member_ios,
                member_bytes_per_host_byte: member_bytes,
                read_ahead_hits: self.controller.read_ahead.as_ref().map_or(0, |r| r.hits),
                drive_read_ahead_hits,
                parity_bytes_per_host_byte: parity_bytes,
                members,
                wear: self
                    .drives
                    .iter()
                    .enumerate()
                    .filter_map(|(i, d)| match &d.model {
                        DriveModel::Ssd(ssd) => ssd.wear(i as u32),
                        DriveModel::Hdd(_) => None,
                    })
                    .collect(),
                cache: None,
                ssd_write_amplification: {
                    let was: Vec<f64> = self
                        .drives
                        .iter()
                        .filter_map(|d| match &d.model {
                            DriveModel::Ssd(ssd) => ssd.write_amplification(),
                            DriveModel::Hdd(_) => None,
                        })
                        .collect();
                    (!was.is_empty()).then(|| was.iter().sum::<f64>() / was.len() as f64)
                },
                scheduler: self.scheduler.as_ref().map(|sched| {
                    let (now, start) = (sched.counters(), self.scheduler_at_start);
                    let merged = now.merges - start.merges;
                    let dispatched = now.dispatched - start.dispatched;
                    SchedulerReport {
                        name: sched.kind().name().to_string(),
                        queue_depth: sched.queue_depth(),
                        nr_requests: sched.nr_requests(),
                        max_request_bytes: sched.max_request_bytes(),
                        host_ios_merged: merged,
                        requests_dispatched: dispatched,
                        host_ios_per_request: if dispatched > 0 {
                            (dispatched + merged) as f64 / dispatched as f64
                        } else {
                            0.0
                        },
                        expired: now.expired - start.expired,
                        idle_expiries: now.idle_expiries - start.idle_expiries,
                    }
                }),
            },
            rebuild: self.rebuild.as_ref().map(|rb| {
                let bytes = rb.bytes_done - rb.bytes_at_start;
                // A member that failed during the measurement (a hot spare's rebuild)
                // has been rebuilt only since then.
                let rate = if rb.started_ns > self.start_ns {
                    let active_ns = self.end_ns.saturating_sub(rb.started_ns);
                    if active_ns == 0 {
                        0.0
                    } else {
                        bytes as f64 / (active_ns as f64 / 1e9)
                    }
                } else {
                    bytes as f64 / secs
                };
                RebuildReport {
                    member: rb.member,
                    bytes_done: bytes,
                    member_bytes: rb.member_bytes,
                    mbps: rate / 1e6,
                    finished: rb.finished_ns.is_some(),
                    time_ns_projected: match rb.finished_ns {
                        Some(t) => t - rb.started_ns,
                        None if rate > 0.0 => (rb.member_bytes as f64 / rate * 1e9) as u64,
                        None => u64::MAX,
                    },
                }
            }),
        }
    }
}
