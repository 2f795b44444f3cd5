//! The run's measurement and report: the measured interval's counters, every resource's
//! busy time (for utilisation and the bottleneck), and the results assembled at the
//! end of a run in fio's terms (IOPS, MB/s, latency percentiles) plus the explanation
//! (member I/O per host I/O, parity bytes, read-ahead hits, write amplification,
//! scheduler and rebuild figures).

use super::{PathTimes, Request, Simulation, Tally, READ, TRIM, WRITE};
use crate::drive::DriveModel;
use crate::histogram::Histogram;
use crate::host::Workload;
use crate::results::{
    Explain, JobResults, MemberCounters, OpStats, RebuildReport, Resource, Results, Samples,
    SchedulerReport, PERCENTILES, SATURATION_UTILISATION, STAGES,
};
use crate::scenario::SCHEMA;
use std::collections::BTreeMap;

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

    pub(crate) fn begin_measuring(&mut self) {
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
    pub(crate) fn tally_member_done(&mut self, id: u32) {
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
    pub(crate) fn tally_stages(&mut self, r: &Request, path: PathTimes) {
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

    /// The measured interval's results: host figures, the explanation (resources, the
    /// bottleneck, stages, member and drive figures), each job's, the rebuild's.
    pub(crate) fn results(&self) -> Results {
        let elapsed = (self.end_ns - self.start_ns).max(1);
        let secs = elapsed as f64 / 1e9;
        let t = self.host_tally();
        let host = self.host_figures(&t, secs);
        let resources = self.measured_resources(elapsed);
        let bottleneck = busiest(&resources);
        let mut members = t.members.clone();
        members.resize(self.drives.len(), MemberCounters::default());
        let (latency_ns_by_stage, stage_longest) = stage_figures(&t);
        let bound = if bottleneck.utilisation >= SATURATION_UTILISATION {
            "resource"
        } else {
            "latency"
        };
        let jobs = self.workloads.iter().map(|w| self.job_results(w)).collect();
        Results {
            schema: SCHEMA,
            jobs,
            seed: self.seed,
            sim_time_ns: elapsed,
            events: self.events,
            ops: host.ops,
            explain: Explain {
                bottleneck: bottleneck.name.clone(),
                bottleneck_utilisation: bottleneck.utilisation,
                bound: bound.to_string(),
                latency_ns_by_stage,
                stage_longest,
                resources: resources.clone(),
                member_ios_per_host_io: host.member_ios,
                member_bytes_per_host_byte: host.member_bytes,
                read_ahead_hits: self.controller.read_ahead.as_ref().map_or(0, |r| r.hits),
                drive_read_ahead_hits: self.drive_read_ahead_hits(),
                parity_bytes_per_host_byte: host.parity_bytes,
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
                ssd_write_amplification: self.ssd_write_amplification(),
                scheduler: self.scheduler_report(),
            },
            rebuild: self.rebuild_report(secs),
        }
    }

    /// The tally with every workload's host I/Os and bytes added in.
    fn host_tally(&self) -> Tally {
        let mut t = self.tally.clone();
        for w in &self.workloads {
            for dir in [READ, WRITE] {
                t.host_ios[dir] += w.ios_done[dir];
                t.host_bytes[dir] += w.bytes_done[dir];
            }
        }
        t
    }

    /// Host totals (every workload's figures together) per direction, and the member
    /// I/O and parity each host I/O became; discards get host figures only (they move
    /// no data, so no member ratios).
    fn host_figures(&self, t: &Tally, secs: f64) -> HostFigures {
        let mut host = HostFigures::default();
        let mut hist = [Histogram::new(), Histogram::new(), Histogram::new()];
        let (mut trim_ios, mut trim_bytes) = (0, 0);
        for w in &self.workloads {
            for dir in [READ, WRITE, TRIM] {
                hist[dir].merge(&w.hist[dir]);
            }
            trim_ios += w.ios_done[TRIM];
            trim_bytes += w.bytes_done[TRIM];
        }
        for (dir, name) in [(READ, "read"), (WRITE, "write")] {
            let h = &hist[dir];
            if h.count() == 0 {
                continue;
            }
            let (ios, bytes) = (t.host_ios[dir], t.host_bytes[dir]);
            host.ops
                .insert(name.to_string(), op_stats(h, ios, bytes, secs));
            host.member_ios
                .insert(name.to_string(), t.member_ios[dir] as f64 / ios as f64);
            host.member_bytes
                .insert(name.to_string(), t.member_bytes[dir] as f64 / bytes as f64);
            if t.parity_bytes[dir] > 0 {
                host.parity_bytes
                    .insert(name.to_string(), t.parity_bytes[dir] as f64 / bytes as f64);
            }
        }
        if hist[TRIM].count() > 0 {
            host.ops.insert(
                "trim".to_string(),
                op_stats(&hist[TRIM], trim_ios, trim_bytes, secs),
            );
        }
        host
    }

    /// Every resource's busy time over the measured interval, per unit, and its
    /// utilisation.
    fn measured_resources(&self, elapsed: u64) -> Vec<Resource> {
        self.resources_now()
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
            .collect()
    }

    fn drive_read_ahead_hits(&self) -> u64 {
        self.drives
            .iter()
            .map(|d| match &d.model {
                DriveModel::Hdd(h) => h.read_ahead_hits(),
                DriveModel::Ssd(_) => 0,
            })
            .sum()
    }

    /// The SSD members' mean flash write amplification (None without an FTL model).
    fn ssd_write_amplification(&self) -> Option<f64> {
        let was: Vec<f64> = self
            .drives
            .iter()
            .filter_map(|d| match &d.model {
                DriveModel::Ssd(ssd) => ssd.write_amplification(),
                DriveModel::Hdd(_) => None,
            })
            .collect();
        (!was.is_empty()).then(|| was.iter().sum::<f64>() / was.len() as f64)
    }

    /// One workload's figures over its own measured time (it may stop before the run).
    fn job_results(&self, w: &Workload) -> JobResults {
        let end = if w.stopped { w.end_ns } else { self.end_ns };
        let runtime_ns = end.saturating_sub(self.start_ns).max(1);
        let secs = runtime_ns as f64 / 1e9;
        let mut ops = BTreeMap::new();
        for (dir, name) in [(READ, "read"), (WRITE, "write"), (TRIM, "trim")] {
            if w.hist[dir].count() > 0 {
                let stats = op_stats(&w.hist[dir], w.ios_done[dir], w.bytes_done[dir], secs);
                ops.insert(name.to_string(), stats);
            }
        }
        let column = |dir: usize, bytes: bool| -> Vec<u64> {
            w.samples[dir]
                .iter()
                .map(|s| if bytes { s.1 } else { s.0 })
                .collect()
        };
        let trim_column = |bytes: bool| {
            if w.trims() {
                column(TRIM, bytes)
            } else {
                Vec::new()
            }
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
                trim_ios: trim_column(false),
                trim_bytes: trim_column(true),
            },
        }
    }

    /// The I/O scheduler's figures over the measured interval.
    fn scheduler_report(&self) -> Option<SchedulerReport> {
        let sched = self.scheduler.as_ref()?;
        let (now, start) = (sched.counters(), self.scheduler_at_start);
        let merged = now.merges - start.merges;
        let dispatched = now.dispatched - start.dispatched;
        Some(SchedulerReport {
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
        })
    }

    /// The rebuild's progress over the measured interval of `secs`.
    fn rebuild_report(&self, secs: f64) -> Option<RebuildReport> {
        let rb = self.rebuild.as_ref()?;
        let bytes = rb.bytes_done - rb.bytes_at_start;
        // A member that failed during the measurement (a hot spare's rebuild) has been
        // rebuilt only since then.
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
        Some(RebuildReport {
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
        })
    }
}

/// The host's figures per direction: fio's, and what each host I/O became.
#[derive(Default)]
struct HostFigures {
    ops: BTreeMap<String, OpStats>,
    member_ios: BTreeMap<String, f64>,
    member_bytes: BTreeMap<String, f64>,
    parity_bytes: BTreeMap<String, f64>,
}

/// The busiest resource; ties go to the first listed, so the choice is stable.
fn busiest(resources: &[Resource]) -> &Resource {
    resources
        .iter()
        .fold(None::<&Resource>, |best, r| match best {
            Some(b) if b.utilisation >= r.utilisation => Some(b),
            _ => Some(r),
        })
        .expect("the controller is always a resource")
}

/// Mean latency per stage of the path, and the longest stage.
fn stage_figures(t: &Tally) -> (BTreeMap<String, f64>, String) {
    let staged_ios = t.staged_ios.max(1) as f64;
    let latency_ns_by_stage = STAGES
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
    (latency_ns_by_stage, stage_longest)
}
