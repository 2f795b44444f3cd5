//! RAIDIX's split cache: Random Read Cache (RRC) and Random Write Cache (RWC), each a
//! set of log-structured regions (article claims M09–M11; see the crate docs).

use crate::action::{Action, Area, Entry, Out, WriteReason};
use crate::classifier::{Classified, Pattern};
use crate::config::{CacheConfig, ConfigError};
use crate::ghost::Ghost;
use crate::map::Map;
use crate::request::{Op, Request};
use std::collections::VecDeque;

const NONE: u64 = u64::MAX;

struct Region {
    area: Area,
    /// Line number stored in each appended slot (`NONE` once invalidated); its length is
    /// the region's fill pointer.
    lines: Vec<u64>,
    valid: u64,
    /// RRC: hits since the region was opened, halved at every RRC eviction (aging).
    heat: u64,
    /// Order in which regions were opened.
    epoch: u64,
    in_use: bool,
}

pub(crate) struct Raidix {
    line_bytes: u64,
    lines_per_region: u64,
    regions: Vec<Region>,
    rrc_ids: Vec<usize>,
    /// line → global slot (region * lines_per_region + index).
    rrc: Map<u64, u64>,
    rwc: Map<u64, u64>,
    rrc_open: Option<usize>,
    rrc_free: VecDeque<usize>,
    rwc_open: Option<usize>,
    rwc_free: VecDeque<usize>,
    /// RWC regions in use, oldest first (the open one last).
    rwc_fifo: VecDeque<usize>,
    ghost: Ghost,
    admit_touches: u32,
    rwc_write_max_bytes: u64,
    epoch_next: u64,
    admit_buf: Vec<u64>,
}

impl Raidix {
    pub fn new(config: &CacheConfig) -> Raidix {
        let total = (config.capacity_bytes / config.region_bytes) as usize;
        debug_assert!(total >= 2);
        let rrc_count = ((total * config.rrc_share_pct as usize + 50) / 100).clamp(1, total - 1);
        let regions = (0..total)
            .map(|i| Region {
                area: if i < rrc_count { Area::Rrc } else { Area::Rwc },
                lines: Vec::new(),
                valid: 0,
                heat: 0,
                epoch: 0,
                in_use: false,
            })
            .collect();
        Raidix {
            line_bytes: config.line_bytes,
            lines_per_region: config.region_bytes / config.line_bytes,
            regions,
            rrc_ids: (0..rrc_count).collect(),
            rrc: Map::default(),
            rwc: Map::default(),
            rrc_open: None,
            rrc_free: (0..rrc_count).collect(),
            rwc_open: None,
            rwc_free: (rrc_count..total).collect(),
            rwc_fifo: VecDeque::new(),
            ghost: Ghost::new(config.ghost_entries_max),
            admit_touches: config.rrc_admit_touches,
            rwc_write_max_bytes: config.rwc_write_max_bytes,
            epoch_next: 1,
            admit_buf: Vec::new(),
        }
    }

    fn offset(&self, slot: u64) -> u64 {
        slot * self.line_bytes
    }

    pub fn access(&mut self, r: &Request, c: &Classified, out: &mut Out) {
        let first = r.offset_bytes / self.line_bytes;
        let n = r.len_bytes / self.line_bytes;
        match r.op {
            Op::Read => self.read(first, n, c.pattern == Pattern::Random, out),
            Op::Write => {
                let cache_it =
                    c.pattern == Pattern::Random && r.len_bytes < self.rwc_write_max_bytes;
                self.write(r, first, n, cache_it, out)
            }
        }
    }

    fn read(&mut self, first: u64, n: u64, random: bool, out: &mut Out) {
        let lb = self.line_bytes;
        out.counters.read_lines += n;
        self.admit_buf.clear();
        for line in first..first + n {
            let lba_bytes = line * lb;
            if let Some(&slot) = self.rwc.get(&line) {
                out.counters.read_hit_lines_rwc += 1;
                out.push(Action::CacheRead {
                    lba_bytes,
                    len_bytes: lb,
                    cache_offset_bytes: self.offset(slot),
                });
            } else if let Some(&slot) = self.rrc.get(&line) {
                out.counters.read_hit_lines_rrc += 1;
                self.regions[(slot / self.lines_per_region) as usize].heat += 1;
                out.push(Action::CacheRead {
                    lba_bytes,
                    len_bytes: lb,
                    cache_offset_bytes: self.offset(slot),
                });
            } else {
                out.push(Action::ArrayRead {
                    lba_bytes,
                    len_bytes: lb,
                });
                if random && self.ghost.touch(line) >= self.admit_touches {
                    self.admit_buf.push(line);
                }
            }
        }
        // Out of the ghost queue first, so a refill triggered below cannot pick them.
        for &line in &self.admit_buf {
            self.ghost.remove(line);
        }
        let admit = std::mem::take(&mut self.admit_buf);
        for &line in &admit {
            let slot = self.rrc_append(line, out);
            out.counters.read_admitted_lines += 1;
            out.push(Action::CacheWrite {
                lba_bytes: line * lb,
                len_bytes: lb,
                cache_offset_bytes: self.offset(slot),
                reason: WriteReason::Admit,
            });
        }
        self.admit_buf = admit;
    }

    fn write(&mut self, r: &Request, first: u64, n: u64, cache_it: bool, out: &mut Out) {
        let lb = self.line_bytes;
        out.counters.write_lines += n;
        for line in first..first + n {
            if let Some(slot) = self.rrc.remove(&line) {
                self.invalidate(slot);
                out.counters.invalidated_lines += 1;
            }
            if let Some(slot) = self.rwc.remove(&line) {
                self.invalidate(slot);
                if cache_it {
                    out.counters.write_hit_lines += 1;
                } else {
                    out.counters.invalidated_lines += 1;
                }
            }
            if cache_it {
                let slot = self.rwc_append(line, out);
                out.counters.write_cached_lines += 1;
                out.push(Action::CacheWrite {
                    lba_bytes: line * lb,
                    len_bytes: lb,
                    cache_offset_bytes: self.offset(slot),
                    reason: WriteReason::Host,
                });
            }
        }
        if !cache_it {
            out.counters.write_bypass_lines += n;
            out.push(Action::ArrayWrite {
                lba_bytes: r.offset_bytes,
                len_bytes: r.len_bytes,
            });
        }
    }

    fn invalidate(&mut self, slot: u64) {
        let region = &mut self.regions[(slot / self.lines_per_region) as usize];
        let idx = (slot % self.lines_per_region) as usize;
        debug_assert!(region.lines[idx] != NONE);
        region.lines[idx] = NONE;
        region.valid -= 1;
    }

    fn open_region(&mut self, r: usize, area: Area) {
        let epoch = self.epoch_next;
        self.epoch_next += 1;
        let region = &mut self.regions[r];
        debug_assert_eq!(region.area, area);
        region.lines.clear();
        region.valid = 0;
        region.heat = 0;
        region.epoch = epoch;
        region.in_use = true;
    }

    fn append(&mut self, r: usize, line: u64) -> u64 {
        let region = &mut self.regions[r];
        debug_assert!((region.lines.len() as u64) < self.lines_per_region);
        let slot = r as u64 * self.lines_per_region + region.lines.len() as u64;
        region.lines.push(line);
        region.valid += 1;
        slot
    }

    fn is_full(&self, r: usize) -> bool {
        self.regions[r].lines.len() as u64 >= self.lines_per_region
    }

    fn rwc_append(&mut self, line: u64, out: &mut Out) -> u64 {
        let r = match self.rwc_open {
            Some(r) if !self.is_full(r) => r,
            _ => self.rwc_open_next(out),
        };
        let slot = self.append(r, line);
        self.rwc.insert(line, slot);
        slot
    }

    /// A free RWC region, or else the oldest one destaged (FIFO).
    fn rwc_open_next(&mut self, out: &mut Out) -> usize {
        let r = match self.rwc_free.pop_front() {
            Some(r) => r,
            None => {
                let r = self
                    .rwc_fifo
                    .pop_front()
                    .expect("an RWC region in use when none is free");
                self.destage_region(r, out);
                out.counters.evicted_regions_rwc += 1;
                r
            }
        };
        self.open_region(r, Area::Rwc);
        self.rwc_fifo.push_back(r);
        self.rwc_open = Some(r);
        r
    }

    /// Destages the region's valid lines sorted by LBA and empties it.
    fn destage_region(&mut self, r: usize, out: &mut Out) {
        let lb = self.line_bytes;
        let base = r as u64 * self.lines_per_region;
        let mut dirty: Vec<(u64, u64)> = self.regions[r]
            .lines
            .iter()
            .enumerate()
            .filter(|(_, &l)| l != NONE)
            .map(|(i, &l)| (l, base + i as u64))
            .collect();
        dirty.sort_unstable();
        for &(line, slot) in &dirty {
            let removed = self.rwc.remove(&line);
            debug_assert_eq!(removed, Some(slot));
            out.push(Action::Destage {
                lba_bytes: line * lb,
                len_bytes: lb,
                cache_offset_bytes: slot * lb,
            });
        }
        out.counters.evicted_dirty_lines += dirty.len() as u64;
        let region = &mut self.regions[r];
        region.lines.clear();
        region.valid = 0;
        region.in_use = false;
    }

    pub fn destage_oldest(&mut self, out: &mut Out) -> bool {
        let Some(r) = self.rwc_fifo.pop_front() else {
            return false;
        };
        if self.rwc_open == Some(r) {
            self.rwc_open = None;
        }
        self.destage_region(r, out);
        self.rwc_free.push_back(r);
        true
    }

    pub fn flush(&mut self, out: &mut Out) {
        while self.destage_oldest(out) {}
        debug_assert!(self.rwc.is_empty());
    }

    fn rrc_append(&mut self, line: u64, out: &mut Out) -> u64 {
        let r = match self.rrc_open {
            Some(r) if !self.is_full(r) => r,
            _ => self.rrc_open_next(out),
        };
        let slot = self.append(r, line);
        self.rrc.insert(line, slot);
        slot
    }

    /// A free RRC region, or else the coldest one evicted and refilled from the ghost
    /// queue's hot blocks, leaving one slot for the admission that asked.
    fn rrc_open_next(&mut self, out: &mut Out) -> usize {
        if let Some(r) = self.rrc_free.pop_front() {
            self.open_region(r, Area::Rrc);
            self.rrc_open = Some(r);
            return r;
        }
        let r = *self
            .rrc_ids
            .iter()
            .filter(|&&i| self.regions[i].in_use)
            .min_by_key(|&&i| (self.regions[i].heat, self.regions[i].epoch))
            .expect("an RRC region in use when none is free");
        for line in std::mem::take(&mut self.regions[r].lines) {
            if line != NONE {
                self.rrc.remove(&line);
                out.counters.evicted_clean_lines += 1;
            }
        }
        out.counters.evicted_regions_rrc += 1;
        for &i in &self.rrc_ids {
            self.regions[i].heat /= 2;
        }
        self.open_region(r, Area::Rrc);
        self.rrc_open = Some(r);
        self.refill(r, out);
        r
    }

    fn refill(&mut self, r: usize, out: &mut Out) {
        let lb = self.line_bytes;
        let room = (self.lines_per_region - 1) as usize;
        let hot_touches = self.admit_touches.saturating_sub(1).max(1);
        let (rrc, rwc) = (&self.rrc, &self.rwc);
        let mut hot = self.ghost.hottest(hot_touches, room, |l| {
            !rrc.contains_key(&l) && !rwc.contains_key(&l)
        });
        hot.sort_unstable();
        for line in hot {
            self.ghost.remove(line);
            let slot = self.append(r, line);
            self.rrc.insert(line, slot);
            out.counters.refill_lines += 1;
            out.push(Action::Fill {
                lba_bytes: line * lb,
                len_bytes: lb,
                cache_offset_bytes: slot * lb,
            });
        }
    }

    /// Unaligned request: destage the dirty lines it overlaps, drop overlapped lines on a
    /// write, then send it to the array.
    pub fn pass_through(&mut self, r: &Request, out: &mut Out) {
        let lb = self.line_bytes;
        let first = r.offset_bytes / lb;
        let last = (r.offset_bytes + r.len_bytes - 1) / lb;
        for line in first..=last {
            if let Some(slot) = self.rwc.remove(&line) {
                out.push(Action::Destage {
                    lba_bytes: line * lb,
                    len_bytes: lb,
                    cache_offset_bytes: slot * lb,
                });
                self.invalidate(slot);
            }
            if r.op == Op::Write {
                if let Some(slot) = self.rrc.remove(&line) {
                    self.invalidate(slot);
                    out.counters.invalidated_lines += 1;
                }
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

    pub fn dirty_lines(&self) -> u64 {
        self.rwc.len() as u64
    }

    pub fn entries(&self) -> Vec<Entry> {
        let mut ids: Vec<usize> = (0..self.regions.len())
            .filter(|&i| self.regions[i].in_use)
            .collect();
        ids.sort_by_key(|&i| self.regions[i].epoch);
        let lb = self.line_bytes;
        let mut entries = Vec::with_capacity(self.rrc.len() + self.rwc.len());
        for r in ids {
            let region = &self.regions[r];
            for (i, &line) in region.lines.iter().enumerate() {
                if line == NONE {
                    continue;
                }
                entries.push(Entry {
                    lba_bytes: line * lb,
                    cache_offset_bytes: (r as u64 * self.lines_per_region + i as u64) * lb,
                    area: region.area,
                    dirty: region.area == Area::Rwc,
                    region_epoch: region.epoch,
                });
            }
        }
        entries
    }

    pub fn restore(&mut self, config: &CacheConfig, entries: &[Entry]) -> Result<(), ConfigError> {
        debug_assert_eq!(self.line_bytes, config.line_bytes);
        for e in entries {
            self.restore_entry(e).map_err(|allowed| ConfigError {
                field: "entries",
                allowed: allowed.to_string(),
            })?;
        }
        self.reopen_regions();
        Ok(())
    }

    /// Put one entry back in its region and its area's map; what the entries must be
    /// when it does not fit.
    fn restore_entry(&mut self, e: &Entry) -> Result<(), &'static str> {
        let lb = self.line_bytes;
        let slots = self.regions.len() as u64 * self.lines_per_region;
        if !e.lba_bytes.is_multiple_of(lb)
            || !e.cache_offset_bytes.is_multiple_of(lb)
            || e.cache_offset_bytes / lb >= slots
        {
            return Err("line-aligned offsets inside the cache's regions");
        }
        let slot = e.cache_offset_bytes / lb;
        let r = (slot / self.lines_per_region) as usize;
        let idx = (slot % self.lines_per_region) as usize;
        let line = e.lba_bytes / lb;
        let region = &mut self.regions[r];
        if e.area != region.area || e.dirty != (e.area == Area::Rwc) || e.region_epoch == 0 {
            return Err(
                "each entry in its area's regions (RRC clean, RWC dirty) with an epoch >= 1",
            );
        }
        if region.in_use && region.epoch != e.region_epoch {
            return Err("one epoch per region");
        }
        if region.lines.len() <= idx {
            region.lines.resize(idx + 1, NONE);
        }
        if region.lines[idx] != NONE {
            return Err("one entry per cache offset");
        }
        if self.rrc.contains_key(&line) || self.rwc.contains_key(&line) {
            return Err("one entry per line");
        }
        region.lines[idx] = line;
        region.valid += 1;
        region.in_use = true;
        region.epoch = e.region_epoch;
        self.epoch_next = self.epoch_next.max(e.region_epoch + 1);
        match e.area {
            Area::Rwc => self.rwc.insert(line, slot),
            _ => self.rrc.insert(line, slot),
        };
        Ok(())
    }

    /// After a restore: the RWC's regions in epoch order, the open region of each area
    /// the newest in use, the rest free.
    fn reopen_regions(&mut self) {
        let mut used: Vec<usize> = (0..self.regions.len())
            .filter(|&i| self.regions[i].in_use)
            .collect();
        used.sort_by_key(|&i| self.regions[i].epoch);
        let is_rrc = |i: &usize, regions: &[Region]| regions[*i].area == Area::Rrc;
        self.rwc_fifo = used
            .iter()
            .copied()
            .filter(|i| !is_rrc(i, &self.regions))
            .collect();
        self.rwc_open = self.rwc_fifo.back().copied();
        self.rrc_open = used.iter().copied().rfind(|i| is_rrc(i, &self.regions));
        self.rrc_free = self
            .rrc_ids
            .iter()
            .copied()
            .filter(|&i| !self.regions[i].in_use)
            .collect();
        self.rwc_free = (self.rrc_ids.len()..self.regions.len())
            .filter(|&i| !self.regions[i].in_use)
            .collect();
    }
}
