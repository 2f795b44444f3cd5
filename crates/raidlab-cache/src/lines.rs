//! One area of line slots with recency order: the LRU second-level cache, and the
//! smq-like and bcache-like policies that differ from it only in what they admit.

use crate::action::{Action, Area, Entry, Out, WriteReason};
use crate::classifier::Classified;
use crate::config::{CacheConfig, ConfigError, Policy};
use crate::ghost::Ghost;
use crate::map::Map;
use crate::request::{Op, Request};

const NIL: u32 = u32::MAX;
const NONE: u64 = u64::MAX;

pub(crate) struct Lines {
    policy: Policy,
    line_bytes: u64,
    slots_max: u64,
    map: Map<u64, u32>,
    slot_line: Vec<u64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    dirty: Vec<bool>,
    /// Least recently used end.
    head: u32,
    /// Most recently used end.
    tail: u32,
    free: Vec<u32>,
    dirty_count: u64,
    hotspots: Ghost,
    hotspot_lines: u64,
    promote_hits: u32,
    cutoff_bytes: u64,
    admit_buf: Vec<u64>,
}

impl Lines {
    pub fn new(config: &CacheConfig) -> Lines {
        Lines {
            policy: config.policy,
            line_bytes: config.line_bytes,
            slots_max: config.capacity_bytes / config.line_bytes,
            map: Map::default(),
            slot_line: Vec::new(),
            prev: Vec::new(),
            next: Vec::new(),
            dirty: Vec::new(),
            head: NIL,
            tail: NIL,
            free: Vec::new(),
            dirty_count: 0,
            hotspots: Ghost::new(config.ghost_entries_max),
            hotspot_lines: config.smq_hotspot_lines,
            promote_hits: config.smq_promote_hits,
            cutoff_bytes: config.sequential_cutoff_bytes,
            admit_buf: Vec::new(),
        }
    }

    fn unlink(&mut self, s: u32) {
        let (p, n) = (self.prev[s as usize], self.next[s as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
    }

    fn link_tail(&mut self, s: u32) {
        self.prev[s as usize] = self.tail;
        self.next[s as usize] = NIL;
        if self.tail == NIL {
            self.head = s;
        } else {
            self.next[self.tail as usize] = s;
        }
        self.tail = s;
    }

    fn touch(&mut self, s: u32) {
        if self.tail != s {
            self.unlink(s);
            self.link_tail(s);
        }
    }

    /// A slot for a new line: free, never used, or the least recently used line's
    /// (destaged first when dirty).
    fn alloc(&mut self, out: &mut Out) -> u32 {
        if let Some(s) = self.free.pop() {
            return s;
        }
        if (self.slot_line.len() as u64) < self.slots_max {
            self.slot_line.push(NONE);
            self.prev.push(NIL);
            self.next.push(NIL);
            self.dirty.push(false);
            return (self.slot_line.len() - 1) as u32;
        }
        let s = self.head;
        assert!(s != NIL, "a full cache has a least recently used line");
        let line = self.slot_line[s as usize];
        self.map.remove(&line);
        if self.dirty[s as usize] {
            let lb = self.line_bytes;
            out.push(Action::Destage {
                lba_bytes: line * lb,
                len_bytes: lb,
                cache_offset_bytes: s as u64 * lb,
            });
            out.counters.evicted_dirty_lines += 1;
            self.dirty[s as usize] = false;
            self.dirty_count -= 1;
        } else {
            out.counters.evicted_clean_lines += 1;
        }
        self.unlink(s);
        self.slot_line[s as usize] = NONE;
        s
    }

    fn insert(&mut self, line: u64, dirty: bool, out: &mut Out) -> u32 {
        let s = self.alloc(out);
        self.slot_line[s as usize] = line;
        self.dirty[s as usize] = dirty;
        self.dirty_count += dirty as u64;
        self.map.insert(line, s);
        self.link_tail(s);
        s
    }

    fn drop_line(&mut self, line: u64) -> Option<u32> {
        let s = self.map.remove(&line)?;
        self.unlink(s);
        if self.dirty[s as usize] {
            self.dirty[s as usize] = false;
            self.dirty_count -= 1;
        }
        self.slot_line[s as usize] = NONE;
        self.free.push(s);
        Some(s)
    }

    /// Whether a missing line is admitted.
    fn admits(&mut self, line: u64, bypass: bool, last_hotspot: &mut (u64, u32)) -> bool {
        match self.policy {
            Policy::Lru => true,
            Policy::Bcache => !bypass,
            Policy::Smq => {
                // One touch per hotspot per request: dm-cache asks policies not to count
                // a block more than once per tick, so a large bio is one hit.
                let h = line / self.hotspot_lines;
                if last_hotspot.0 != h {
                    *last_hotspot = (h, self.hotspots.touch(h));
                }
                last_hotspot.1 >= self.promote_hits
            }
            Policy::Raidix => unreachable!("raidix has its own areas"),
        }
    }

    pub fn access(&mut self, r: &Request, c: &Classified, out: &mut Out) {
        let lb = self.line_bytes;
        let first = r.offset_bytes / lb;
        let lines = first..first + r.len_bytes / lb;
        // bcache: "sequential IO will skip the cache" once the run passes the cutoff.
        let bypass = self.policy == Policy::Bcache && c.run_bytes > self.cutoff_bytes;
        match r.op {
            Op::Read => self.read(lines, bypass, out),
            Op::Write => self.write(lines, bypass, out),
        }
    }

    /// A host read of `lines`: hits from the cache, misses from the array, then the
    /// misses the policy admits written into the cache.
    fn read(&mut self, lines: std::ops::Range<u64>, bypass: bool, out: &mut Out) {
        let lb = self.line_bytes;
        let mut last_hotspot = (NONE, 0);
        out.counters.read_lines += lines.end - lines.start;
        self.admit_buf.clear();
        for line in lines {
            if let Some(&s) = self.map.get(&line) {
                out.counters.read_hit_lines_main += 1;
                self.touch(s);
                out.push(Action::CacheRead {
                    lba_bytes: line * lb,
                    len_bytes: lb,
                    cache_offset_bytes: s as u64 * lb,
                });
            } else {
                out.push(Action::ArrayRead {
                    lba_bytes: line * lb,
                    len_bytes: lb,
                });
                if self.admits(line, bypass, &mut last_hotspot) {
                    self.admit_buf.push(line);
                }
            }
        }
        let admit = std::mem::take(&mut self.admit_buf);
        for &line in &admit {
            let s = self.insert(line, false, out);
            out.counters.read_admitted_lines += 1;
            out.push(Action::CacheWrite {
                lba_bytes: line * lb,
                len_bytes: lb,
                cache_offset_bytes: s as u64 * lb,
                reason: WriteReason::Admit,
            });
        }
        self.admit_buf = admit;
    }

    /// A host write of `lines`: each line into the cache (a hit, or a miss the policy
    /// admits) or past it to the array (a bypassed hit is invalidated).
    fn write(&mut self, lines: std::ops::Range<u64>, bypass: bool, out: &mut Out) {
        let lb = self.line_bytes;
        let mut last_hotspot = (NONE, 0);
        out.counters.write_lines += lines.end - lines.start;
        for line in lines {
            match self.write_slot(line, bypass, &mut last_hotspot, out) {
                Some(s) => {
                    out.counters.write_cached_lines += 1;
                    out.push(Action::CacheWrite {
                        lba_bytes: line * lb,
                        len_bytes: lb,
                        cache_offset_bytes: s as u64 * lb,
                        reason: WriteReason::Host,
                    });
                }
                None => {
                    out.counters.write_bypass_lines += 1;
                    out.push(Action::ArrayWrite {
                        lba_bytes: line * lb,
                        len_bytes: lb,
                    });
                }
            }
        }
    }

    /// The cache slot a written line goes to (marked dirty), or None when it goes to
    /// the array.
    fn write_slot(
        &mut self,
        line: u64,
        bypass: bool,
        last_hotspot: &mut (u64, u32),
        out: &mut Out,
    ) -> Option<u32> {
        match self.map.get(&line).copied() {
            Some(s) if !bypass => {
                out.counters.write_hit_lines += 1;
                self.touch(s);
                if !self.dirty[s as usize] {
                    self.dirty[s as usize] = true;
                    self.dirty_count += 1;
                }
                Some(s)
            }
            Some(_) => {
                self.drop_line(line);
                out.counters.invalidated_lines += 1;
                None
            }
            None if self.admits(line, bypass, last_hotspot) => Some(self.insert(line, true, out)),
            None => None,
        }
    }

    pub fn pass_through(&mut self, r: &Request, out: &mut Out) {
        let lb = self.line_bytes;
        let first = r.offset_bytes / lb;
        let last = (r.offset_bytes + r.len_bytes - 1) / lb;
        for line in first..=last {
            let Some(&s) = self.map.get(&line) else {
                continue;
            };
            if self.dirty[s as usize] {
                out.push(Action::Destage {
                    lba_bytes: line * lb,
                    len_bytes: lb,
                    cache_offset_bytes: s as u64 * lb,
                });
                self.dirty[s as usize] = false;
                self.dirty_count -= 1;
            }
            if r.op == Op::Write {
                self.drop_line(line);
                out.counters.invalidated_lines += 1;
            }
        }
        out.push(match r.op {
            Op::Read => Action::ArrayRead {
                lba_bytes: r.offset_bytes,
                len_bytes: r.len_bytes,
            },
            Op::Write => Action::ArrayWrite {
                lba_bytes: r.offset_bytes,
                len_bytes: r.len_bytes,
            },
        });
    }

    pub fn flush(&mut self, out: &mut Out) {
        let lb = self.line_bytes;
        let mut dirty: Vec<(u64, u32)> = (0..self.slot_line.len())
            .filter(|&s| self.dirty[s])
            .map(|s| (self.slot_line[s], s as u32))
            .collect();
        dirty.sort_unstable();
        for (line, s) in dirty {
            out.push(Action::Destage {
                lba_bytes: line * lb,
                len_bytes: lb,
                cache_offset_bytes: s as u64 * lb,
            });
            self.dirty[s as usize] = false;
        }
        self.dirty_count = 0;
    }

    pub fn dirty_lines(&self) -> u64 {
        self.dirty_count
    }

    pub fn entries(&self) -> Vec<Entry> {
        let lb = self.line_bytes;
        let mut entries = Vec::with_capacity(self.map.len());
        let mut s = self.head;
        while s != NIL {
            entries.push(Entry {
                lba_bytes: self.slot_line[s as usize] * lb,
                cache_offset_bytes: s as u64 * lb,
                area: Area::Main,
                dirty: self.dirty[s as usize],
                region_epoch: 0,
            });
            s = self.next[s as usize];
        }
        entries
    }

    pub fn restore(&mut self, config: &CacheConfig, entries: &[Entry]) -> Result<(), ConfigError> {
        let bad = |allowed: &str| {
            Err(ConfigError {
                field: "entries",
                allowed: allowed.to_string(),
            })
        };
        let lb = config.line_bytes;
        for e in entries {
            if e.area != Area::Main {
                return bad("main-area entries for this policy");
            }
            if !e.lba_bytes.is_multiple_of(lb)
                || !e.cache_offset_bytes.is_multiple_of(lb)
                || e.cache_offset_bytes / lb >= self.slots_max
            {
                return bad("line-aligned offsets inside the cache");
            }
            let s = (e.cache_offset_bytes / lb) as usize;
            if self.slot_line.len() <= s {
                self.slot_line.resize(s + 1, NONE);
                self.prev.resize(s + 1, NIL);
                self.next.resize(s + 1, NIL);
                self.dirty.resize(s + 1, false);
            }
            let line = e.lba_bytes / lb;
            if self.slot_line[s] != NONE {
                return bad("one entry per cache offset");
            }
            if self.map.contains_key(&line) {
                return bad("one entry per line");
            }
            self.slot_line[s] = line;
            self.dirty[s] = e.dirty;
            self.dirty_count += e.dirty as u64;
            self.map.insert(line, s as u32);
            self.link_tail(s as u32);
        }
        self.free = (0..self.slot_line.len() as u32)
            .rev()
            .filter(|&s| self.slot_line[s as usize] == NONE)
            .collect();
        Ok(())
    }
}
