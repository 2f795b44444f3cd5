//! A bounded queue of metadata-only entries (no data): key → touch count, the least
//! recently touched entry dropped past the bound. RAIDIX's ghost queue (article M10)
//! and the smq-like hotspot queue.

use crate::map::Map;
use std::collections::VecDeque;

pub(crate) struct Ghost {
    counts: Map<u64, (u32, u64)>,
    order: VecDeque<(u64, u64)>,
    entries_max: usize,
    clock: u64,
}

impl Ghost {
    pub fn new(entries_max: u64) -> Ghost {
        Ghost {
            counts: Map::default(),
            order: VecDeque::new(),
            entries_max: entries_max as usize,
            clock: 0,
        }
    }

    /// Counts one more touch of `key`; returns its count.
    pub fn touch(&mut self, key: u64) -> u32 {
        self.clock += 1;
        let stamp = self.clock;
        let e = self.counts.entry(key).or_insert((0, 0));
        e.0 = e.0.saturating_add(1);
        e.1 = stamp;
        let count = e.0;
        self.order.push_back((key, stamp));
        while self.counts.len() > self.entries_max {
            self.pop_oldest();
        }
        if self.order.len() > 2 * self.entries_max + 16 {
            let counts = &self.counts;
            self.order
                .retain(|(k, s)| counts.get(k).is_some_and(|e| e.1 == *s));
        }
        debug_assert!(self.counts.len() <= self.entries_max);
        count
    }

    fn pop_oldest(&mut self) {
        while let Some((k, s)) = self.order.pop_front() {
            if self.counts.get(&k).is_some_and(|e| e.1 == s) {
                self.counts.remove(&k);
                return;
            }
        }
    }

    pub fn remove(&mut self, key: u64) {
        self.counts.remove(&key);
    }

    /// Keys touched at least `touches_min` times for which `keep` holds, hottest first
    /// (most touches, then most recent), at most `n`.
    pub fn hottest(&self, touches_min: u32, n: usize, keep: impl Fn(u64) -> bool) -> Vec<u64> {
        let mut hot: Vec<(u32, u64, u64)> = self
            .counts
            .iter()
            .filter(|(k, e)| e.0 >= touches_min && keep(**k))
            .map(|(k, e)| (e.0, e.1, *k))
            .collect();
        hot.sort_unstable_by(|a, b| b.cmp(a));
        hot.truncate(n);
        hot.into_iter().map(|(_, _, k)| k).collect()
    }
}
