//! Policy decisions of an SSD cache tier placed in front of an HDD array: host requests
//! in, [`Action`]s out. Pure and deterministic: no I/O, no clocks, no global state, no
//! randomness. The simulator (`raidlab-sim`) and the real-data engine drive the same
//! [`Cache`] and turn its actions into I/O on their two arrays.
//!
//! ```text
//!            host request (stream, op, offset, len)
//!                          │
//!                  ┌───────▼────────┐    classifier: random / sequential per stream
//!                  │  Cache::access │──► policy: raidix | lru | smq | bcache
//!                  └───────┬────────┘
//!        actions, in order │ (execute in the order emitted)
//!      ┌───────────────────┼─────────────────────────┐
//!  CacheRead/CacheWrite   ArrayRead/ArrayWrite    Fill (array→cache), Destage (cache→array)
//!  (cache-device offsets) (array LBAs)            (both)
//! ```
//!
//! # Policies
//!
//! * **`raidix`** — the design described by RAIDIX in "SSD cache in RAIDIX" (the article
//!   behind `data/reference/raidix_cache.csv` and claims M01–M11 of
//!   `data/reference/misc_claims.csv`; M09: requests are classified by a load detector,
//!   M10: random reads enter the cache only after being requested more than twice,
//!   tracked in a ghost queue, M11: random writes below 32 KB enter the write cache and
//!   are recorded log-structured, regions of 1 GB, destaged sorted by LBA). The cache
//!   space is split into a Random Read Cache (RRC) and a Random Write Cache (RWC):
//!   - RRC admission: a random read miss touches the block's ghost-queue entry (metadata
//!     only, bounded length); the block is admitted on its `rrc_admit_touches`-th touch
//!     (3 by default: "requested more than 2 times").
//!   - RWC admission: every random write shorter than `rwc_write_max_bytes` (32 KiB).
//!   - Both areas record log-structured: data is appended to the area's open region
//!     (`region_bytes`, 1 GiB) regardless of LBA, so cache-device writes are sequential.
//!   - RRC eviction: the coldest region (fewest hits since it was filled, oldest first
//!     on a tie) is dropped and refilled from the ghost queue's hot blocks (those touched
//!     `rrc_admit_touches - 1` times, hottest first), read from the array in LBA order.
//!   - RWC eviction: regions leave in FIFO order; the valid blocks of the leaving region
//!     are destaged to the array sorted by LBA.
//!   - Sequential and large requests bypass both areas (a write invalidates the cached
//!     copies of the lines it overwrites).
//! * **`lru`** — the conventional second-level cache the article compares against
//!   (M02): every miss is admitted on first touch, writes are written in place into the
//!   line's cache slot (write-back), the least recently used line is evicted (and
//!   destaged first when dirty).
//! * **`smq`** — like dm-cache's stochastic multiqueue policy
//!   (Linux `Documentation/admin-guide/device-mapper/cache-policies.rst`, "Stochastic
//!   multiqueue (smq)": a hotspot queue whose entries cover a larger area than a cache
//!   block tracks which parts of the origin are hit, and blocks are promoted only after
//!   their hotspot was hit repeatedly). Modelled as: hotspots of `smq_hotspot_lines`
//!   lines counted in a bounded ghost queue; a missing line is promoted once its
//!   hotspot has been touched `smq_promote_hits` times; writes to uncached lines that
//!   are not promoted go to the array (dm-cache writeback mode only holds promoted
//!   blocks); eviction from the least recently used end. The kernel's multiqueue
//!   levels and stochastic level balancing are not modelled.
//! * **`bcache`** — like bcache in writeback mode (Linux
//!   `Documentation/admin-guide/bcache.rst` and `Documentation/ABI/testing/sysfs-block-bcache`:
//!   `sequential_cutoff`, default 4.0M: "Threshold past which sequential IO will skip
//!   the cache", with recent IOs tracked so a sequential stream is detected even when
//!   interleaved). Misses and writes are admitted (write-back) until the stream's
//!   contiguous run passes `sequential_cutoff_bytes`; from then on the stream bypasses
//!   the cache and its writes invalidate cached copies. bcache's bucket allocator is
//!   modelled as LRU line slots (writes in place), not as its log of buckets.
//!
//! # Granularity and alignment
//!
//! The cache works in lines of `line_bytes` (4 KiB by default). A request whose offset
//! and length are multiples of `line_bytes` is cached line by line. Any other request
//! passes through: the dirty lines it overlaps are destaged first, a write then drops
//! every overlapped line, and the host I/O goes to the array unchanged.
//!
//! # Executing actions
//!
//! [`Cache::access`] appends actions to a caller-owned `Vec` (cleared by the caller).
//! They must be executed in the order emitted (a `Destage` that empties a slot comes
//! before the `CacheWrite` or `Fill` that reuses it); adjacent actions of the same kind
//! whose array and cache ranges both continue each other are merged. See [`Action`]
//! for the meaning of each.

mod classifier;
mod ghost;
mod lines;
mod map;
mod raidix;

pub use classifier::{Classified, Classifier, Pattern};

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

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Host read.
    Read,
    /// Host write.
    Write,
}

/// One host request as the cache sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Who issued it (a job, a worker, a client): the sequential detector tracks runs
    /// per stream.
    pub stream: u32,
    /// Read or write.
    pub op: Op,
    /// Byte offset on the cached (array) volume.
    pub offset_bytes: u64,
    /// Length in bytes (> 0).
    pub len_bytes: u64,
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

/// Why the cache device is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteReason {
    /// The host's write data (write-back caching).
    Host,
    /// Admission of data the host just read from the array: the bytes of the same LBA
    /// range read by an earlier `ArrayRead` in the same action list.
    Admit,
}

/// One step of I/O. Offsets and lengths are bytes; `lba_bytes` is on the cached
/// (array) volume, `cache_offset_bytes` on the cache device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Read `[cache_offset, +len)` of the cache device: host data for `[lba, +len)`
    /// (a cache hit).
    CacheRead {
        lba_bytes: u64,
        len_bytes: u64,
        cache_offset_bytes: u64,
    },
    /// Write `[cache_offset, +len)` of the cache device with the data of `[lba, +len)`:
    /// the host's write data (`Host`) or the data just read from the array (`Admit`).
    CacheWrite {
        lba_bytes: u64,
        len_bytes: u64,
        cache_offset_bytes: u64,
        reason: WriteReason,
    },
    /// Read `[lba, +len)` from the array: host data (a miss or a bypass).
    ArrayRead { lba_bytes: u64, len_bytes: u64 },
    /// Write the host's data for `[lba, +len)` to the array (a bypass).
    ArrayWrite { lba_bytes: u64, len_bytes: u64 },
    /// Background admission: read `[lba, +len)` from the array and write it to the cache
    /// device at `cache_offset` (raidix's RRC refill from the ghost queue). No host data.
    Fill {
        lba_bytes: u64,
        len_bytes: u64,
        cache_offset_bytes: u64,
    },
    /// Write-back: read `[cache_offset, +len)` from the cache device and write it to the
    /// array at `[lba, +len)`. Emitted in runs sorted by LBA.
    Destage {
        lba_bytes: u64,
        len_bytes: u64,
        cache_offset_bytes: u64,
    },
}

impl Action {
    /// Bytes moved by this action.
    pub fn len_bytes(&self) -> u64 {
        match *self {
            Action::CacheRead { len_bytes, .. }
            | Action::CacheWrite { len_bytes, .. }
            | Action::ArrayRead { len_bytes, .. }
            | Action::ArrayWrite { len_bytes, .. }
            | Action::Fill { len_bytes, .. }
            | Action::Destage { len_bytes, .. } => len_bytes,
        }
    }

    /// Extends `self` by `next` when both are the same kind and both their array and
    /// cache ranges continue each other.
    // Long only on the page: one match whose three rules (same kind, same reason, both
    // extents contiguous) are spelled as struct patterns rustfmt lays out a field a
    // line; splitting it would scatter one rule over several functions.
    fn try_merge(&mut self, next: &Action) -> bool {
        use Action::*;
        match (self, next) {
            (
                CacheRead {
                    lba_bytes: a,
                    len_bytes: n,
                    cache_offset_bytes: c,
                },
                CacheRead {
                    lba_bytes: b,
                    len_bytes: m,
                    cache_offset_bytes: d,
                },
            )
            | (
                Fill {
                    lba_bytes: a,
                    len_bytes: n,
                    cache_offset_bytes: c,
                },
                Fill {
                    lba_bytes: b,
                    len_bytes: m,
                    cache_offset_bytes: d,
                },
            )
            | (
                Destage {
                    lba_bytes: a,
                    len_bytes: n,
                    cache_offset_bytes: c,
                },
                Destage {
                    lba_bytes: b,
                    len_bytes: m,
                    cache_offset_bytes: d,
                },
            ) if *a + *n == *b && *c + *n == *d => {
                *n += m;
                true
            }
            (
                CacheWrite {
                    lba_bytes: a,
                    len_bytes: n,
                    cache_offset_bytes: c,
                    reason: r,
                },
                CacheWrite {
                    lba_bytes: b,
                    len_bytes: m,
                    cache_offset_bytes: d,
                    reason: s,
                },
            ) if r == s && *a + *n == *b && *c + *n == *d => {
                *n += m;
                true
            }
            (
                ArrayRead {
                    lba_bytes: a,
                    len_bytes: n,
                },
                ArrayRead {
                    lba_bytes: b,
                    len_bytes: m,
                },
            )
            | (
                ArrayWrite {
                    lba_bytes: a,
                    len_bytes: n,
                },
                ArrayWrite {
                    lba_bytes: b,
                    len_bytes: m,
                },
            ) if *a + *n == *b => {
                *n += m;
                true
            }
            _ => false,
        }
    }
}

/// Which part of the cache a line lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Area {
    /// raidix Random Read Cache (clean).
    Rrc,
    /// raidix Random Write Cache (dirty until destaged).
    Rwc,
    /// The single area of lru / smq / bcache.
    Main,
}

/// Counters; lines are `line_bytes` each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Host requests seen.
    pub requests: u64,
    /// Requests the detector called random.
    pub requests_random: u64,
    /// Requests the detector called sequential (or large).
    pub requests_sequential: u64,
    /// Requests not aligned to lines (passed through).
    pub requests_unaligned: u64,
    /// Lines read by the host (aligned requests).
    pub read_lines: u64,
    /// Read lines found in the RRC.
    pub read_hit_lines_rrc: u64,
    /// Read lines found in the RWC.
    pub read_hit_lines_rwc: u64,
    /// Read lines found in the main area (lru/smq/bcache).
    pub read_hit_lines_main: u64,
    /// Lines written by the host (aligned requests).
    pub write_lines: u64,
    /// Written lines that already had a (dirty) copy in the write area / a cached copy.
    pub write_hit_lines: u64,
    /// Written lines stored in the cache (RWC or main area).
    pub write_cached_lines: u64,
    /// Written lines sent to the array instead.
    pub write_bypass_lines: u64,
    /// Lines admitted on a read miss (RRC admission or main-area admission).
    pub read_admitted_lines: u64,
    /// Lines filled in the background (raidix RRC refill).
    pub refill_lines: u64,
    /// Clean lines evicted.
    pub evicted_clean_lines: u64,
    /// Dirty lines evicted (destaged first).
    pub evicted_dirty_lines: u64,
    /// Regions evicted from the RRC (coldest first).
    pub evicted_regions_rrc: u64,
    /// Regions evicted from the RWC (FIFO).
    pub evicted_regions_rwc: u64,
    /// Cached lines dropped because the host overwrote them elsewhere.
    pub invalidated_lines: u64,
    /// Bytes destaged (cache → array).
    pub destaged_bytes: u64,
    /// Cache-device bytes written with host write data.
    pub cache_write_bytes_host: u64,
    /// Cache-device bytes written by read admissions.
    pub cache_write_bytes_admit: u64,
    /// Cache-device bytes written by refills.
    pub cache_write_bytes_refill: u64,
    /// Cache-device bytes read for host hits.
    pub cache_read_bytes_host: u64,
    /// Array bytes read for the host.
    pub array_read_bytes_host: u64,
    /// Array bytes written for the host (bypass).
    pub array_write_bytes_host: u64,
    /// Array bytes read by refills.
    pub array_read_bytes_refill: u64,
}

impl Counters {
    /// All cache-device bytes written (host + admit + refill).
    pub fn cache_write_bytes(&self) -> u64 {
        self.cache_write_bytes_host + self.cache_write_bytes_admit + self.cache_write_bytes_refill
    }

    /// Read hit lines of every area.
    pub fn read_hit_lines(&self) -> u64 {
        self.read_hit_lines_rrc + self.read_hit_lines_rwc + self.read_hit_lines_main
    }

    fn count(&mut self, a: &Action) {
        let n = a.len_bytes();
        match a {
            Action::CacheRead { .. } => self.cache_read_bytes_host += n,
            Action::CacheWrite {
                reason: WriteReason::Host,
                ..
            } => self.cache_write_bytes_host += n,
            Action::CacheWrite {
                reason: WriteReason::Admit,
                ..
            } => self.cache_write_bytes_admit += n,
            Action::ArrayRead { .. } => self.array_read_bytes_host += n,
            Action::ArrayWrite { .. } => self.array_write_bytes_host += n,
            Action::Fill { .. } => {
                self.cache_write_bytes_refill += n;
                self.array_read_bytes_refill += n;
            }
            Action::Destage { .. } => self.destaged_bytes += n,
        }
    }
}

/// The action sink every policy writes through: counts bytes, merges neighbours.
pub(crate) struct Out<'a> {
    pub actions: &'a mut Vec<Action>,
    pub counters: &'a mut Counters,
}

impl Out<'_> {
    pub fn push(&mut self, a: Action) {
        debug_assert!(a.len_bytes() > 0);
        self.counters.count(&a);
        if let Some(last) = self.actions.last_mut() {
            if last.try_merge(&a) {
                return;
            }
        }
        self.actions.push(a);
    }
}

/// One cached line, for persisting and restoring the cache map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Byte offset of the line on the cached volume.
    pub lba_bytes: u64,
    /// Byte offset of the line on the cache device.
    pub cache_offset_bytes: u64,
    /// Which area.
    pub area: Area,
    /// True when the array does not have this data yet.
    pub dirty: bool,
    /// raidix: the fill order of the line's region (RWC regions leave in this order);
    /// lru/smq/bcache: 0 (entries are listed least recently used first).
    pub region_epoch: u64,
}

enum Inner {
    Raidix(raidix::Raidix),
    Lines(lines::Lines),
}

/// A cache: configuration, map, detector and counters.
pub struct Cache {
    config: CacheConfig,
    classifier: Classifier,
    counters: Counters,
    inner: Inner,
}

impl Cache {
    /// An empty cache. Errors name the bad field.
    pub fn new(config: CacheConfig) -> Result<Cache, ConfigError> {
        config.validate()?;
        let inner = match config.policy {
            Policy::Raidix => Inner::Raidix(raidix::Raidix::new(&config)),
            _ => Inner::Lines(lines::Lines::new(&config)),
        };
        Ok(Cache {
            classifier: Classifier::new(&config),
            counters: Counters::default(),
            inner,
            config,
        })
    }

    /// A cache holding `entries` (as listed by [`Cache::entries`]); the detector, ghost
    /// queue and counters start empty.
    pub fn restore(
        config: CacheConfig,
        entries: impl IntoIterator<Item = Entry>,
    ) -> Result<Cache, ConfigError> {
        let mut cache = Cache::new(config)?;
        let entries: Vec<Entry> = entries.into_iter().collect();
        match &mut cache.inner {
            Inner::Raidix(r) => r.restore(&cache.config, &entries)?,
            Inner::Lines(l) => l.restore(&cache.config, &entries)?,
        }
        Ok(cache)
    }

    /// The configuration.
    pub fn config(&self) -> &CacheConfig {
        &self.config
    }

    /// Counters since creation.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Decides one host request; appends its actions to `actions` (not cleared here).
    pub fn access(&mut self, request: &Request, actions: &mut Vec<Action>) {
        assert!(request.len_bytes > 0, "empty request");
        let c = self.classifier.classify(request);
        self.counters.requests += 1;
        match c.pattern {
            Pattern::Random => self.counters.requests_random += 1,
            Pattern::Sequential => self.counters.requests_sequential += 1,
        }
        let line = self.config.line_bytes;
        let aligned =
            request.offset_bytes.is_multiple_of(line) && request.len_bytes.is_multiple_of(line);
        let mut out = Out {
            actions,
            counters: &mut self.counters,
        };
        match &mut self.inner {
            Inner::Raidix(r) if aligned => r.access(request, &c, &mut out),
            Inner::Lines(l) if aligned => l.access(request, &c, &mut out),
            Inner::Raidix(r) => {
                out.counters.requests_unaligned += 1;
                r.pass_through(request, &mut out)
            }
            Inner::Lines(l) => {
                out.counters.requests_unaligned += 1;
                l.pass_through(request, &mut out)
            }
        }
    }

    /// Destages every dirty line (raidix: every RWC region, oldest first, each sorted by
    /// LBA, and frees them; others: all dirty lines sorted by LBA, kept as clean).
    pub fn flush(&mut self, actions: &mut Vec<Action>) {
        let mut out = Out {
            actions,
            counters: &mut self.counters,
        };
        match &mut self.inner {
            Inner::Raidix(r) => r.flush(&mut out),
            Inner::Lines(l) => l.flush(&mut out),
        }
    }

    /// Destages the oldest RWC region (raidix) or nothing (other policies destage on
    /// eviction and flush). Returns whether anything was destaged.
    pub fn destage_oldest(&mut self, actions: &mut Vec<Action>) -> bool {
        let mut out = Out {
            actions,
            counters: &mut self.counters,
        };
        match &mut self.inner {
            Inner::Raidix(r) => r.destage_oldest(&mut out),
            Inner::Lines(_) => false,
        }
    }

    /// Bytes of dirty data held.
    pub fn dirty_bytes(&self) -> u64 {
        match &self.inner {
            Inner::Raidix(r) => r.dirty_lines() * self.config.line_bytes,
            Inner::Lines(l) => l.dirty_lines() * self.config.line_bytes,
        }
    }

    /// Every cached line, for persisting the map: raidix lists regions by epoch, each in
    /// slot order; lru/smq/bcache list least recently used first.
    pub fn entries(&self) -> Vec<Entry> {
        match &self.inner {
            Inner::Raidix(r) => r.entries(),
            Inner::Lines(l) => l.entries(),
        }
    }
}
