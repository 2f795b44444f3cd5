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

mod action;
mod classifier;
mod config;
mod ghost;
mod lines;
mod map;
mod raidix;
mod request;

pub(crate) use action::Out;
pub use action::{Action, Area, Counters, Entry, WriteReason};
pub use classifier::{Classified, Classifier, Pattern};
pub use config::{
    region_bytes_default, CacheConfig, ConfigError, Policy, LINES_MAX, REGION_BYTES_MAX,
    STREAMS_TRACKED_MAX,
};
pub use request::{Op, Request};

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
