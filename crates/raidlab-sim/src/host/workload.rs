//! The host's workloads: what each job asks for next (direction, size, offset) and
//! what each workload measured. Offsets follow fio's `random_distribution` choices.

use crate::histogram::Histogram;
use crate::rng::Rng;
use crate::scenario::{Distribution, Rw, WorkloadSpec};

/// Samples kept per workload; later intervals are not recorded (bounded memory).
pub const SAMPLES_MAX: usize = 100_000;

/// Draws block indices in `0..blocks` by a fio distribution.
#[derive(Debug, Clone)]
pub enum Sampler {
    /// Every block equally likely.
    Uniform,
    /// Zipf over block ranks (rejection-inversion, Hörmann and Derflinger 1996), ranks
    /// scattered over the region by a fixed bijection so hot blocks are not adjacent.
    Zipf {
        /// The exponent: larger is more skewed (> 0; fio's `zipf:1.2` is 1.2).
        theta: f64,
    },
    /// Pareto: rank = blocks * u^(h / (1 - h)); h = 0.9 puts ~80 % of accesses on
    /// ~20 % of the blocks, as fio's `pareto:0.9`.
    Pareto {
        /// The shape, in (0, 1); fio's `pareto:h`.
        h: f64,
    },
    /// Normal around the middle of the region with sigma a percentage of it.
    Normal {
        /// The standard deviation as a percentage of the region (> 0).
        sigma_percent: f64,
    },
    /// Zones of the region with their share of accesses: (access %, size %).
    Zoned {
        /// (access %, size %) per zone from the start of the region; a pick past the
        /// listed access shares falls anywhere in the region.
        zones: Vec<(f64, f64)>,
    },
}

impl Sampler {
    /// The sampler for a validated distribution.
    pub fn new(distribution: &Distribution) -> Self {
        match distribution {
            Distribution::Uniform => Sampler::Uniform,
            Distribution::Zipf(theta) => Sampler::Zipf { theta: *theta },
            Distribution::Pareto(h) => Sampler::Pareto { h: *h },
            Distribution::Normal(sigma) => Sampler::Normal {
                sigma_percent: *sigma,
            },
            Distribution::Zoned(zones) => Sampler::Zoned {
                zones: zones.clone(),
            },
        }
    }

    /// A block index below `blocks`.
    pub fn block(&self, rng: &mut Rng, blocks: u64) -> u64 {
        debug_assert!(blocks > 0);
        let b = match self {
            Sampler::Uniform => rng.below(blocks),
            Sampler::Zipf { theta } => scatter(zipf_rank(rng, blocks, *theta), blocks),
            Sampler::Pareto { h } => {
                let u = unit(rng);
                let rank = (blocks as f64 * u.powf(h / (1.0 - h))) as u64;
                scatter(rank.min(blocks - 1), blocks)
            }
            Sampler::Normal { sigma_percent } => {
                // Box-Muller; the tails fold back into the region.
                let (u1, u2) = (unit(rng).max(f64::MIN_POSITIVE), unit(rng));
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                let x = blocks as f64 / 2.0 + z * sigma_percent / 100.0 * blocks as f64;
                (x.rem_euclid(blocks as f64) as u64).min(blocks - 1)
            }
            Sampler::Zoned { zones } => {
                let pick = unit(rng) * 100.0;
                let mut access = 0.0;
                let mut start = 0.0;
                let mut chosen = (0.0, 100.0);
                for &(a, size) in zones {
                    access += a;
                    if pick < access {
                        chosen = (start, size);
                        break;
                    }
                    start += size;
                }
                let first = (chosen.0 / 100.0 * blocks as f64) as u64;
                let len = ((chosen.1 / 100.0 * blocks as f64) as u64).max(1);
                (first + rng.below(len)).min(blocks - 1)
            }
        };
        debug_assert!(b < blocks);
        b
    }
}

/// Uniform in [0, 1) with 53 random bits.
fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// A fixed bijection of `0..n`: multiplication by an odd constant coprime to `n`.
fn scatter(rank: u64, n: u64) -> u64 {
    let mut a: u64 = 0x9E37_79B9_7F4A_7C15 % n.max(1);
    while gcd(a, n) != 1 {
        a += 1;
    }
    ((u128::from(rank) * u128::from(a)) % u128::from(n)) as u64
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A Zipf rank in `0..n` with exponent `theta` (rejection-inversion sampling).
fn zipf_rank(rng: &mut Rng, n: u64, theta: f64) -> u64 {
    let s = theta;
    let h = |x: f64| -> f64 {
        if (s - 1.0).abs() < 1e-9 {
            x.ln()
        } else {
            (x.powf(1.0 - s) - 1.0) / (1.0 - s)
        }
    };
    let h_inv = |x: f64| -> f64 {
        if (s - 1.0).abs() < 1e-9 {
            x.exp()
        } else {
            (1.0 + x * (1.0 - s)).powf(1.0 / (1.0 - s))
        }
    };
    let n_f = n as f64;
    let h_x1 = h(1.5) - 1.0;
    let h_n = h(n_f + 0.5);
    let threshold = 2.0 - h_inv(h(2.5) - 2f64.powf(-s));
    loop {
        let u = h_n + unit(rng) * (h_x1 - h_n);
        let x = h_inv(u);
        let k = x.round().clamp(1.0, n_f);
        if k - x <= threshold || u >= h(k + 0.5) - k.powf(-s) {
            return k as u64 - 1;
        }
    }
}

/// One workload (a fio job section): its generator and what it measured.
pub struct Workload {
    /// Reported name.
    pub name: String,
    rw: Rw,
    read_percent: u32,
    /// Cumulative block-size mixes for reads and writes: (bytes, cumulative weight).
    bs_read: Vec<(u64, u64)>,
    bs_write: Vec<(u64, u64)>,
    sampler: Sampler,
    /// Jobs running this workload's pattern (fio's `numjobs`), each with `iodepth`
    /// requests outstanding.
    pub numjobs: u32,
    /// Outstanding requests per job.
    pub iodepth: u32,
    /// Measured I/Os to complete.
    pub ios: u64,
    /// Measured time to run, ns, if capped (fio's `runtime`).
    pub runtime_ns: Option<u64>,
    /// Completions to discard before measuring.
    pub warmup_ios: u64,
    /// Time to discard before measuring, ns (fio's `ramp_time`).
    pub warmup_ns: u64,
    /// Completions so far (warm-up included).
    pub completed: u64,
    /// Completions while measuring.
    pub measured: u64,
    /// No more issuing: its measurement is complete.
    pub stopped: bool,
    /// When it stopped (measured-end time).
    pub end_ns: u64,
    /// Latency per direction (read, write, trim).
    pub hist: [Histogram; 3],
    /// Host I/Os measured per direction (read, write, trim).
    pub ios_done: [u64; 3],
    /// Host bytes per direction.
    pub bytes_done: [u64; 3],
    /// Length of one sample interval, ns.
    pub sample_interval_ns: u64,
    /// Per-interval (ios, bytes) per direction, from the start of measurement.
    pub samples: [Vec<(u64, u64)>; 3],
}

fn cumulative(mix: &[(u64, u32)]) -> Vec<(u64, u64)> {
    let mut total = 0;
    mix.iter()
        .map(|&(bytes, weight)| {
            total += u64::from(weight);
            (bytes, total)
        })
        .collect()
}

fn pick(rng: &mut Rng, mix: &[(u64, u64)]) -> u64 {
    if mix.len() == 1 {
        return mix[0].0;
    }
    let x = rng.below(mix[mix.len() - 1].1);
    mix.iter()
        .find(|b| x < b.1)
        .expect("weights cover the range")
        .0
}

/// What one job asks for next.
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    /// Byte offset in the array.
    pub offset_bytes: u64,
    /// Bytes.
    pub len_bytes: u64,
    /// Direction.
    pub write: bool,
    /// A discard (TRIM) rather than a read or a write.
    pub trim: bool,
}

/// One job's stream: its share of the region and its sequential cursor.
#[derive(Debug, Clone)]
pub struct Job {
    /// The workload it belongs to.
    pub workload: u32,
    cursor: u64,
    start: u64,
    end: u64,
    /// fio's trimwrite: the block just discarded, written next.
    rewrite: Option<(u64, u64)>,
}

impl Workload {
    /// The workload of a validated spec, its jobs appended to `jobs`.
    pub fn new(index: usize, spec: &WorkloadSpec, jobs: &mut Vec<Job>) -> Self {
        let share = spec.size_bytes / u64::from(spec.numjobs);
        for j in 0..u64::from(spec.numjobs) {
            let start = spec.offset_bytes + j * share;
            jobs.push(Job {
                workload: index as u32,
                cursor: start,
                start,
                end: start + share,
                rewrite: None,
            });
        }
        let bs_read = cumulative(&spec.bs);
        let bs_write = spec
            .bs_write
            .as_deref()
            .map_or_else(|| bs_read.clone(), cumulative);
        Self {
            name: spec.name.clone().unwrap_or_else(|| format!("job{index}")),
            rw: spec.rw,
            read_percent: spec.rw.read_percent(spec.rwmixread),
            bs_read,
            bs_write,
            sampler: Sampler::new(&spec.distribution),
            numjobs: spec.numjobs,
            iodepth: spec.iodepth,
            ios: spec.ios,
            runtime_ns: spec.runtime_ns,
            warmup_ios: spec.warmup_ios,
            warmup_ns: spec.warmup_ns,
            completed: 0,
            measured: 0,
            stopped: false,
            end_ns: 0,
            hist: [Histogram::new(), Histogram::new(), Histogram::new()],
            ios_done: [0; 3],
            bytes_done: [0; 3],
            sample_interval_ns: spec.sample_interval_ns.max(1),
            samples: [Vec::new(), Vec::new(), Vec::new()],
        }
    }

    /// The next request of `job`.
    pub fn next(&self, rng: &mut Rng, job: &mut Job) -> Ask {
        if let Some((offset_bytes, len_bytes)) = job.rewrite.take() {
            return Ask {
                offset_bytes,
                len_bytes,
                write: true,
                trim: false,
            };
        }
        let write = match self.read_percent {
            100 => false,
            0 => true,
            p => rng.below(100) >= u64::from(p),
        };
        let len = pick(rng, if write { &self.bs_write } else { &self.bs_read });
        let offset_bytes = if self.rw.is_random() {
            let blocks = (job.end - job.start) / len;
            job.start + self.sampler.block(rng, blocks) * len
        } else {
            if job.cursor + len > job.end {
                job.cursor = job.start;
            }
            let o = job.cursor;
            job.cursor += len;
            o
        };
        let trim = self.rw.trims();
        if matches!(self.rw, Rw::Trimwrite | Rw::Randtrimwrite) {
            job.rewrite = Some((offset_bytes, len));
        }
        Ask {
            offset_bytes,
            len_bytes: len,
            write: write && !trim,
            trim,
        }
    }

    /// Whether its pattern discards (it reports trims).
    pub fn trims(&self) -> bool {
        self.rw.trims()
    }

    /// Whether it is still warming up at `now_ns`: fewer than `warmup_ios` completions
    /// so far, or `now_ns` before `run_start_ns + warmup_ns` (fio's `ramp_time`).
    pub fn warming_up(&self, run_start_ns: u64, now_ns: u64) -> bool {
        self.completed < self.warmup_ios || now_ns < run_start_ns + self.warmup_ns
    }

    /// How far the workload is, in [0, 1], at `now_ns` (the run started at 0): its
    /// completions against its warm-up and measured I/O counts, or its time against its
    /// warm-up and runtime, whichever is further (either ends it). For a progress bar.
    pub(crate) fn progress(&self, now_ns: u64) -> f64 {
        if self.stopped {
            return 1.0;
        }
        let by_ios = self.completed as f64 / (self.warmup_ios + self.ios).max(1) as f64;
        let by_time = self.runtime_ns.map_or(0.0, |runtime| {
            now_ns as f64 / (self.warmup_ns + runtime).max(1) as f64
        });
        by_ios.max(by_time).min(1.0)
    }

    /// Count a measured completion; returns whether the workload is now done.
    /// `dir` is 0 for a read, 1 for a write, 2 for a trim.
    pub fn record(
        &mut self,
        dir: usize,
        len_bytes: u64,
        latency_ns: u64,
        since_start_ns: u64,
    ) -> bool {
        self.hist[dir].record(latency_ns);
        self.ios_done[dir] += 1;
        self.bytes_done[dir] += len_bytes;
        self.measured += 1;
        let slot = (since_start_ns / self.sample_interval_ns) as usize;
        if slot < SAMPLES_MAX {
            for samples in &mut self.samples {
                if samples.len() <= slot {
                    samples.resize(slot + 1, (0, 0));
                }
            }
            let s = &mut self.samples[dir][slot];
            s.0 += 1;
            s.1 += len_bytes;
        }
        self.measured >= self.ios || self.runtime_ns.is_some_and(|limit| since_start_ns >= limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(sampler: &Sampler, blocks: u64, draws: u64) -> Vec<u64> {
        let mut rng = Rng::new(3);
        let mut h = vec![0u64; blocks as usize];
        for _ in 0..draws {
            h[sampler.block(&mut rng, blocks) as usize] += 1;
        }
        h
    }

    fn top_share(mut h: Vec<u64>, fraction: f64) -> f64 {
        let total: u64 = h.iter().sum();
        h.sort_unstable_by(|a, b| b.cmp(a));
        let top = (h.len() as f64 * fraction) as usize;
        h[..top].iter().sum::<u64>() as f64 / total as f64
    }

    #[test]
    fn pareto_point_nine_is_roughly_eighty_twenty() {
        let share = top_share(hits(&Sampler::Pareto { h: 0.9 }, 1000, 200_000), 0.2);
        assert!(share > 0.75 && share < 0.9, "{share}");
    }

    #[test]
    fn zipf_concentrates_on_few_blocks_and_uniform_does_not() {
        let zipf = top_share(hits(&Sampler::Zipf { theta: 1.2 }, 1000, 200_000), 0.1);
        let uniform = top_share(hits(&Sampler::Uniform, 1000, 200_000), 0.1);
        assert!(zipf > 0.6, "{zipf}");
        assert!(uniform < 0.15, "{uniform}");
    }

    #[test]
    fn zoned_sends_each_zone_its_share() {
        let h = hits(
            &Sampler::Zoned {
                zones: vec![(60.0, 10.0), (40.0, 90.0)],
            },
            1000,
            100_000,
        );
        let first: u64 = h[..100].iter().sum();
        let share = first as f64 / 100_000.0;
        assert!((share - 0.6).abs() < 0.02, "{share}");
    }

    #[test]
    fn normal_clusters_around_the_middle() {
        let h = hits(&Sampler::Normal { sigma_percent: 5.0 }, 1000, 100_000);
        let middle: u64 = h[400..600].iter().sum();
        assert!(middle as f64 / 100_000.0 > 0.9);
    }
}
