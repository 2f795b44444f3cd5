//! What a cache is asked to be: its policy and parameters, checked before it is built.

use std::fmt;

/// Which policy decides admissions and evictions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// RAIDIX: Random Read Cache + Random Write Cache, ghost queue, log-structured regions.
    Raidix,
    /// Conventional LRU second-level cache: admit on first touch, write-back in place.
    Lru,
    /// dm-cache smq-like: promotion after repeated hotspot hits.
    Smq,
    /// bcache-like writeback with the sequential cutoff.
    Bcache,
}

impl Policy {
    /// Every policy, in the order the front ends list them.
    pub const ALL: [Policy; 4] = [Policy::Raidix, Policy::Lru, Policy::Smq, Policy::Bcache];

    /// The name used in TOML, flags and reports.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Raidix => "raidix",
            Policy::Lru => "lru",
            Policy::Smq => "smq",
            Policy::Bcache => "bcache",
        }
    }

    /// Parses a name produced by [`Policy::name`].
    pub fn from_name(name: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Upper bound on tracked streams of the sequential detector.
pub const STREAMS_TRACKED_MAX: usize = 1024;
/// Upper bound on cache lines (slot indexes are `u32`).
pub const LINES_MAX: u64 = u32::MAX as u64 - 1;

/// Parameters of a cache. `CacheConfig::new(policy, capacity)` gives the defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    /// Which policy.
    pub policy: Policy,
    /// Usable bytes of the cache device (the SSD array's capacity given to the cache).
    pub capacity_bytes: u64,
    /// Cache line (block) size; requests aligned to it are cached. Default 4 KiB.
    pub line_bytes: u64,
    /// Log-structured region size (raidix). Default 1 GiB (article, M11).
    pub region_bytes: u64,
    /// Share of regions given to the Random Read Cache, percent (raidix). Default 50.
    pub rrc_share_pct: u32,
    /// A random read miss is admitted on this touch of the block (raidix). Default 3
    /// ("requested more than 2 times").
    pub rrc_admit_touches: u32,
    /// Random writes strictly shorter than this enter the RWC (raidix). Default 32 KiB.
    pub rwc_write_max_bytes: u64,
    /// Ghost-queue length bound, in entries (raidix ghost queue, smq hotspot queue).
    /// Default: as many entries as the cache has lines, at most 4 Mi.
    pub ghost_entries_max: u64,
    /// bcache's `sequential_cutoff`: a stream whose contiguous run passes this bypasses
    /// the cache. Default 4 MiB.
    pub sequential_cutoff_bytes: u64,
    /// Detector: a stream's contiguous run (this request included) at least this long is
    /// sequential; so is any single request this long. Default 64 KiB.
    pub sequential_run_bytes: u64,
    /// Detector: how many recent runs it remembers. Default 32.
    pub streams_tracked: usize,
    /// smq: lines per hotspot. Default 16.
    pub smq_hotspot_lines: u64,
    /// smq: hotspot touches that promote a missing line. Default 2.
    pub smq_promote_hits: u32,
}

impl CacheConfig {
    /// Defaults for `policy` with `capacity_bytes` of cache.
    pub fn new(policy: Policy, capacity_bytes: u64) -> CacheConfig {
        let line_bytes = 4096;
        CacheConfig {
            policy,
            capacity_bytes,
            line_bytes,
            region_bytes: 1 << 30,
            rrc_share_pct: 50,
            rrc_admit_touches: 3,
            rwc_write_max_bytes: 32 << 10,
            ghost_entries_max: (capacity_bytes / line_bytes).clamp(1, 4 << 20),
            sequential_cutoff_bytes: 4 << 20,
            sequential_run_bytes: 64 << 10,
            streams_tracked: 32,
            smq_hotspot_lines: 16,
            smq_promote_hits: 2,
        }
    }

    /// Checks every bound; the error names the field and what is allowed.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: &'static str, allowed: String| Err(ConfigError { field, allowed });
        if self.line_bytes < 512 || !self.line_bytes.is_power_of_two() {
            return err("line_bytes", "a power of two >= 512".into());
        }
        let lines = self.capacity_bytes / self.line_bytes;
        if lines == 0 || lines > LINES_MAX {
            return err(
                "capacity_bytes",
                format!(
                    "between one line ({} bytes) and {LINES_MAX} lines",
                    self.line_bytes
                ),
            );
        }
        if self.policy == Policy::Raidix {
            if self.region_bytes < self.line_bytes
                || !self.region_bytes.is_multiple_of(self.line_bytes)
            {
                return err("region_bytes", "a multiple of line_bytes".into());
            }
            if self.capacity_bytes / self.region_bytes < 2 {
                return err(
                    "region_bytes",
                    "at most half of capacity_bytes (RRC and RWC need a region each)".into(),
                );
            }
            if self.region_bytes / self.line_bytes > u32::MAX as u64 {
                return err("region_bytes", "at most 2^32 lines".into());
            }
        }
        if !(1..=99).contains(&self.rrc_share_pct) {
            return err("rrc_share_pct", "1..=99".into());
        }
        if !(1..=1000).contains(&self.rrc_admit_touches) {
            return err("rrc_admit_touches", "1..=1000".into());
        }
        if self.rwc_write_max_bytes == 0 {
            return err("rwc_write_max_bytes", "> 0".into());
        }
        if !(1..=(1 << 26)).contains(&self.ghost_entries_max) {
            return err("ghost_entries_max", "1..=67108864".into());
        }
        if self.sequential_cutoff_bytes == 0 {
            return err("sequential_cutoff_bytes", "> 0".into());
        }
        if self.sequential_run_bytes == 0 {
            return err("sequential_run_bytes", "> 0".into());
        }
        if !(1..=STREAMS_TRACKED_MAX).contains(&self.streams_tracked) {
            return err("streams_tracked", format!("1..={STREAMS_TRACKED_MAX}"));
        }
        if !(1..=(1 << 20)).contains(&self.smq_hotspot_lines) {
            return err("smq_hotspot_lines", "1..=1048576".into());
        }
        if !(1..=1000).contains(&self.smq_promote_hits) {
            return err("smq_promote_hits", "1..=1000".into());
        }
        Ok(())
    }
}

/// A rejected configuration or restore: which field, and what is allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The field (a [`CacheConfig`] field name, or `entries` on restore).
    pub field: &'static str,
    /// What is allowed.
    pub allowed: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.allowed)
    }
}

impl std::error::Error for ConfigError {}

/// Largest raidix log region: the RAIDIX article's 1 GB regions.
pub const REGION_BYTES_MAX: u64 = 1 << 30;

/// The raidix region a cache of `capacity_bytes` gets when none is set: a sixteenth
/// of it in whole lines of `line_bytes` (so each area has several regions to evict in
/// turn), at least a line, at most [`REGION_BYTES_MAX`]. One rule for the engine's
/// cache tier and the simulator's, so a `--cache-trace` the engine recorded replays
/// with the engine's regions; a cache of 16 GiB or more keeps the article's 1 GiB.
pub fn region_bytes_default(capacity_bytes: u64, line_bytes: u64) -> u64 {
    let line = line_bytes.max(1);
    (capacity_bytes / 16 / line * line).clamp(line, REGION_BYTES_MAX.max(line))
}
