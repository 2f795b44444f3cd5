//! The workload, with fio's names: direction and access pattern, offset distribution,
//! and the job itself.

use super::limits;
use serde::{Deserialize, Serialize};

/// Direction and access pattern, with fio's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    Randread,
    /// Random writes.
    Randwrite,
    /// Sequential mix.
    Rw,
    /// Random mix.
    Randrw,
    /// Sequential discards.
    Trim,
    /// Random discards.
    Randtrim,
    /// Sequential discard of each block, then a write of it.
    Trimwrite,
    /// Random discard of each block, then a write of it.
    Randtrimwrite,
}

impl Rw {
    /// Random offsets?
    pub fn is_random(self) -> bool {
        matches!(
            self,
            Rw::Randread | Rw::Randwrite | Rw::Randrw | Rw::Randtrim | Rw::Randtrimwrite
        )
    }

    /// Does the pattern discard?
    pub fn trims(self) -> bool {
        matches!(
            self,
            Rw::Trim | Rw::Randtrim | Rw::Trimwrite | Rw::Randtrimwrite
        )
    }

    /// Share of reads in percent for this pattern.
    pub fn read_percent(self, rwmixread: u32) -> u32 {
        match self {
            Rw::Read | Rw::Randread => 100,
            Rw::Write | Rw::Randwrite => 0,
            Rw::Rw | Rw::Randrw => rwmixread,
            Rw::Trim | Rw::Randtrim | Rw::Trimwrite | Rw::Randtrimwrite => 0,
        }
    }
}

/// Offset distribution of random workloads (fio's `random_distribution`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// Every aligned block equally likely.
    #[default]
    Uniform,
    /// Zipf with exponent theta (> 0).
    Zipf(f64),
    /// Pareto with h in (0, 1).
    Pareto(f64),
    /// Normal around the middle, sigma as a percentage of the region (> 0).
    Normal(f64),
    /// Zones: (access percent, size percent), each column adding to 100.
    Zoned(Vec<(f64, f64)>),
}

/// What the host asks of the array.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Pattern.
    pub rw: Rw,
    /// Block-size mix: (bytes, weight).
    pub bs: Vec<(u64, u32)>,
    /// Read share for mixes, percent.
    #[serde(default = "default_rwmixread")]
    pub rwmixread: u32,
    /// Outstanding requests per job.
    pub iodepth: u32,
    /// Independent jobs.
    #[serde(default = "default_one")]
    pub numjobs: u32,
    /// Start of the region.
    #[serde(default)]
    pub offset_bytes: u64,
    /// Length of the region.
    pub size_bytes: u64,
    /// Host I/Os measured after warm-up.
    pub ios: u64,
    /// Host I/Os discarded first.
    #[serde(default)]
    pub warmup_ios: u64,
    /// Cap on measured simulated time.
    #[serde(default)]
    pub runtime_ns: Option<u64>,
    /// Offset distribution.
    #[serde(default)]
    pub distribution: Distribution,
    /// Name reported back (fio's job name).
    #[serde(default)]
    pub name: Option<String>,
    /// Block-size mix for writes when it differs from reads (fio's `bs=r,w`).
    #[serde(default)]
    pub bs_write: Option<Vec<(u64, u32)>>,
    /// Simulated time discarded at the start (fio's `ramp_time`).
    #[serde(default)]
    pub warmup_ns: u64,
    /// Interval of the per-job IOPS and bandwidth samples.
    #[serde(default = "default_sample_interval")]
    pub sample_interval_ns: u64,
}

fn default_sample_interval() -> u64 {
    limits::SAMPLE_INTERVAL.default.int()
}

fn default_rwmixread() -> u32 {
    limits::RWMIXREAD.default.int() as u32
}

fn default_one() -> u32 {
    limits::NUMJOBS.default.int() as u32
}
