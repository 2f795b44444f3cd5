//! The write-back cache's contents: the dirty extents waiting to be destaged, their
//! marks and the order destages take them in (pure state; `write_back` runs it).
//!
//! A write is acknowledged once its data is in the cache. Dirty data is kept as merged
//! extents, so adjacent writes coalesce (and sequential writes gather into full
//! stripes). Destaging picks extents in address order, as an elevator does, and writes
//! them through the RAID planner (read-modify-write and all) with a bounded number of
//! destages in flight. When the cache is full, new writes wait for a destage: the
//! cache then runs at the destage rate.

use std::collections::BTreeMap;

/// Dirty extents and the space they hold.
#[derive(Debug, Default)]
pub struct WriteCache {
    /// Dirty extents, start -> end, disjoint and not adjacent (merged).
    dirty: BTreeMap<u64, u64>,
    dirty_bytes: u64,
    /// Bytes being destaged: still occupying cache space until written.
    destaging_bytes: u64,
    capacity_bytes: u64,
    /// Destaging stops at or below this many dirty bytes.
    low_mark_bytes: u64,
    /// An idle cache starts destaging above this many dirty bytes.
    high_mark_bytes: u64,
    /// Destaging is under way (between the marks it goes on; idle, it waits).
    destaging: bool,
    /// Where the elevator continues from.
    cursor: u64,
}

impl WriteCache {
    /// A cache of `capacity_bytes` that starts destaging once more than
    /// `high_mark_bytes` are dirty (more than `low_mark_bytes`, if that is higher) and
    /// goes on until `low_mark_bytes` or fewer are.
    pub fn new(capacity_bytes: u64, low_mark_bytes: u64, high_mark_bytes: u64) -> Self {
        Self {
            capacity_bytes,
            low_mark_bytes,
            high_mark_bytes: high_mark_bytes.max(low_mark_bytes),
            ..Self::default()
        }
    }

    /// Whether `len` more bytes fit now.
    pub fn has_room(&self, len: u64) -> bool {
        self.dirty_bytes + self.destaging_bytes + len <= self.capacity_bytes
    }

    /// Whether `[start, end)` is entirely dirty (a read hit).
    pub fn holds(&self, start: u64, end: u64) -> bool {
        self.dirty
            .range(..=start)
            .next_back()
            .is_some_and(|(_, &e)| e >= end)
    }

    /// Put `[start, start + len)` in the cache, merging with neighbours. Rewriting dirty
    /// data takes no new space.
    pub fn insert(&mut self, start: u64, len: u64) {
        let mut s = start;
        let mut e = start + len;
        // Absorb every extent that overlaps or touches [s, e), highest start first, so
        // no list of them is collected on the write path.
        while let Some((&a, &b)) = self.dirty.range(..=e).next_back() {
            if b < s {
                break;
            }
            self.dirty.remove(&a);
            self.dirty_bytes -= b - a;
            s = s.min(a);
            e = e.max(b);
        }
        self.dirty.insert(s, e);
        self.dirty_bytes += e - s;
        debug_assert!(self.dirty_bytes + self.destaging_bytes <= self.capacity_bytes + len);
    }

    /// The next extent to destage (at most `max_bytes`, cut at multiples of
    /// `align_bytes` so full stripes go out whole), or None while the dirty data is at
    /// or below the low mark, or an idle cache has not passed the high mark.
    pub fn take_destage(&mut self, max_bytes: u64, align_bytes: u64) -> Option<(u64, u64)> {
        if self.dirty_bytes == 0 || self.dirty_bytes <= self.low_mark_bytes {
            self.destaging = false;
            return None;
        }
        if !self.destaging && self.dirty_bytes <= self.high_mark_bytes {
            return None;
        }
        self.destaging = true;
        let (&s, &e) = self
            .dirty
            .range(self.cursor..)
            .next()
            .or_else(|| self.dirty.iter().next())?;
        let mut end = e.min(s + max_bytes);
        let aligned = end / align_bytes * align_bytes;
        if aligned > s && end < e {
            end = aligned;
        }
        self.dirty.remove(&s);
        if end < e {
            self.dirty.insert(end, e);
        }
        let len = end - s;
        self.dirty_bytes -= len;
        self.destaging_bytes += len;
        self.cursor = end;
        Some((s, len))
    }

    /// A destage of `len` bytes reached the members: its space is free.
    pub fn destaged(&mut self, len: u64) {
        self.destaging_bytes -= len;
    }

    /// Drop the dirty data in `[start, end)` (a TRIM: the host no longer wants it, so it
    /// is never destaged). Returns the bytes freed.
    pub fn discard(&mut self, start: u64, end: u64) -> u64 {
        let mut freed = 0;
        while let Some((&a, &b)) = self.dirty.range(..end).next_back() {
            if b <= start {
                break;
            }
            self.dirty.remove(&a);
            let (lo, hi) = (a.max(start), b.min(end));
            freed += hi - lo;
            if a < start {
                self.dirty.insert(a, start);
            }
            if b > end {
                self.dirty.insert(end, b);
            }
            if a < start {
                break; // the extent that began before the range was the last one
            }
        }
        self.dirty_bytes -= freed;
        freed
    }

    /// Dirty bytes not yet being destaged.
    pub fn dirty_bytes(&self) -> u64 {
        self.dirty_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_writes_coalesce_and_rewrites_take_no_space() {
        let mut c = WriteCache::new(1 << 20, 0, 0);
        c.insert(0, 4096);
        c.insert(4096, 4096);
        c.insert(0, 4096);
        assert_eq!(c.dirty_bytes(), 8192);
        assert!(c.holds(0, 8192));
        assert!(!c.holds(4096, 12288));
    }

    #[test]
    fn a_trim_drops_the_dirty_data_it_covers_and_splits_extents() {
        let mut c = WriteCache::new(1 << 20, 0, 0);
        c.insert(0, 16384);
        c.insert(32768, 8192);
        c.insert(65536, 4096);
        assert_eq!(c.discard(4096, 36864), 12288 + 4096);
        assert!(c.holds(0, 4096) && !c.holds(4096, 8192));
        assert!(c.holds(36864, 40960) && !c.holds(32768, 36864));
        assert!(c.holds(65536, 69632));
        assert_eq!(c.dirty_bytes(), 4096 + 4096 + 4096);
        assert_eq!(c.discard(100_000, 200_000), 0);
        assert_eq!(c.discard(0, 1 << 20), 12288);
        assert_eq!(c.dirty_bytes(), 0);
        assert!(c.take_destage(1 << 20, 4096).is_none());
    }

    #[test]
    fn an_idle_cache_waits_for_the_high_mark_then_destages_down_to_the_low_mark() {
        let mut c = WriteCache::new(100 << 10, 20 << 10, 60 << 10);
        for i in 0..15 {
            c.insert(i * 8192, 4096); // 60 KiB dirty, in 15 extents
        }
        assert!(
            c.take_destage(4096, 4096).is_none(),
            "at the high mark: waits"
        );
        c.insert(15 * 8192, 4096);
        let mut taken = 0;
        while let Some((_, len)) = c.take_destage(4096, 4096) {
            c.destaged(len);
            taken += 1;
        }
        assert_eq!(
            (taken, c.dirty_bytes()),
            (11, 20 << 10),
            "down to the low mark"
        );
        c.insert(100 << 10, 4096);
        assert!(
            c.take_destage(4096, 4096).is_none(),
            "idle again below the high mark"
        );
    }

    #[test]
    fn destage_walks_in_address_order_and_cuts_at_stripes() {
        let mut c = WriteCache::new(1 << 20, 0, 0);
        c.insert(100 << 10, 300 << 10);
        c.insert(0, 4096);
        let (s, len) = c.take_destage(192 << 10, 192 << 10).unwrap();
        assert_eq!(s, 0);
        assert_eq!(len, 4096);
        let (s, len) = c.take_destage(192 << 10, 192 << 10).unwrap();
        assert_eq!((s, len), (100 << 10, (192 << 10) - (100 << 10)));
        assert!(!c.has_room(1 << 20));
        c.destaged(len);
        assert!(c.has_room((1 << 20) - (300 << 10)));
    }
}
