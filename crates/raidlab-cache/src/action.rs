//! What the cache answers with: the actions (I/O on the cache device and the array) in
//! the order to run them, the counters they add to, and the entries of its map.

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
