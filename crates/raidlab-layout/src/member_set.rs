//! A set of member indices as a fixed 256-bit bitset: copyable, allocation-free, and
//! big enough for `MEMBERS_MAX` members.

use crate::MEMBERS_MAX;

/// A set of member indices below [`MEMBERS_MAX`], stored as a 256-bit bitset.
///
/// Used for failed members ([`FailedSet`]) and for the members a stripe plan reads or
/// writes. Iteration is in ascending member order, so plans built from it are stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MemberSet {
    words: [u64; 4],
}

/// The members that have failed (or are being rebuilt): a [`MemberSet`].
pub type FailedSet = MemberSet;

impl MemberSet {
    /// The empty set.
    pub const fn new() -> Self {
        Self { words: [0; 4] }
    }

    /// The set holding exactly `members`. Panics on a member >= [`MEMBERS_MAX`].
    pub fn from_members(members: &[u32]) -> Self {
        let mut set = Self::new();
        for &m in members {
            set.insert(m);
        }
        set
    }

    /// Adds `member`; returns whether it was absent. Panics on a member >= [`MEMBERS_MAX`].
    pub fn insert(&mut self, member: u32) -> bool {
        assert!(member < MEMBERS_MAX, "member {member} >= {MEMBERS_MAX}");
        let (w, b) = (member as usize / 64, member % 64);
        let absent = self.words[w] & (1 << b) == 0;
        self.words[w] |= 1 << b;
        absent
    }

    /// Removes `member`; returns whether it was present.
    pub fn remove(&mut self, member: u32) -> bool {
        if member >= MEMBERS_MAX {
            return false;
        }
        let (w, b) = (member as usize / 64, member % 64);
        let present = self.words[w] & (1 << b) != 0;
        self.words[w] &= !(1 << b);
        present
    }

    /// Whether `member` is in the set (always false at or beyond [`MEMBERS_MAX`]).
    pub fn contains(&self, member: u32) -> bool {
        member < MEMBERS_MAX && self.words[member as usize / 64] & (1 << (member % 64)) != 0
    }

    /// The members `first..first + count` (a span or a whole array), clipped at
    /// [`MEMBERS_MAX`]; built a word at a time, so its cost does not grow with `count`.
    pub fn range(first: u32, count: u32) -> Self {
        let end = first.saturating_add(count).min(MEMBERS_MAX);
        let mut words = [0u64; 4];
        for (w, word) in words.iter_mut().enumerate() {
            let (lo, hi) = (w as u32 * 64, w as u32 * 64 + 64);
            let (a, b) = (first.max(lo), end.min(hi));
            if a < b {
                let upper = if b - lo == 64 {
                    u64::MAX
                } else {
                    (1u64 << (b - lo)) - 1
                };
                *word = upper & !((1u64 << (a - lo)) - 1);
            }
        }
        Self { words }
    }

    /// Number of members in the set.
    pub fn len(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Members of the set in `first..first + count` (a span or a whole array).
    pub fn count_in(&self, first: u32, count: u32) -> u32 {
        // Word by word with a mask of the range: the planner asks this for every
        // request (usually of an empty failed set), and testing members one at a time
        // made its cost grow with the array's width.
        let end = (first.saturating_add(count)).min(MEMBERS_MAX);
        if first >= end || self.is_empty() {
            return 0;
        }
        let mut n = 0;
        for w in (first / 64)..=((end - 1) / 64) {
            let lo = first.max(w * 64) - w * 64;
            let hi = end.min(w * 64 + 64) - w * 64; // exclusive, 1..=64
            let upper = if hi == 64 { u64::MAX } else { (1u64 << hi) - 1 };
            let mask = upper & !((1u64 << lo) - 1);
            n += (self.words[w as usize] & mask).count_ones();
        }
        n
    }

    /// The largest member in the set, if any.
    pub fn max_member(&self) -> Option<u32> {
        (0..4).rev().find_map(|w| {
            let word = self.words[w];
            (word != 0).then(|| w as u32 * 64 + 63 - word.leading_zeros())
        })
    }

    /// Members in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        // Set bits only, lowest first: the same order as testing every member, without
        // the 256 tests per call.
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros();
                    bits &= bits - 1;
                    w as u32 * 64 + b
                })
            })
        })
    }

    /// Members in both sets.
    pub fn intersection(&self, other: &Self) -> Self {
        let mut words = self.words;
        for (w, o) in words.iter_mut().zip(other.words) {
            *w &= o;
        }
        Self { words }
    }

    /// Members of this set that are not in `other`.
    pub fn difference(&self, other: &Self) -> Self {
        let mut words = self.words;
        for (w, o) in words.iter_mut().zip(other.words) {
            *w &= !o;
        }
        Self { words }
    }

    /// Members in either set.
    pub fn union(&self, other: &Self) -> Self {
        let mut words = self.words;
        for (w, o) in words.iter_mut().zip(other.words) {
            *w |= o;
        }
        Self { words }
    }
}

impl std::fmt::Display for MemberSet {
    /// `{0, 3}`: the members in ascending order.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{{")?;
        for (i, m) in self.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{m}")?;
        }
        write!(f, "}}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_and_difference_match_member_by_member_sets() {
        for (first, count) in [
            (0, 0),
            (0, 1),
            (3, 61),
            (60, 10),
            (0, 256),
            (64, 64),
            (200, 100),
        ] {
            let expected: Vec<u32> = (first..(first + count).min(MEMBERS_MAX)).collect();
            assert_eq!(
                MemberSet::range(first, count).iter().collect::<Vec<_>>(),
                expected
            );
        }
        let a = MemberSet::from_members(&[1, 64, 65, 200]);
        let b = MemberSet::from_members(&[64, 200, 7]);
        assert_eq!(a.difference(&b), MemberSet::from_members(&[1, 65]));
    }

    #[test]
    fn insert_contains_remove_over_all_words() {
        let mut s = MemberSet::new();
        for m in [0, 63, 64, 255] {
            assert!(s.insert(m));
            assert!(!s.insert(m));
        }
        assert_eq!(s.len(), 4);
        assert_eq!(s.max_member(), Some(255));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 63, 64, 255]);
        assert_eq!(s.count_in(60, 10), 2);
        assert!(s.remove(255));
        assert_eq!(s.max_member(), Some(64));
        assert!(!s.contains(256));
        assert_eq!(format!("{s}"), "{0, 63, 64}");
    }

    proptest::proptest! {
        /// Set-bit iteration and masked counting agree with testing every member.
        #[test]
        fn iter_and_count_in_agree_with_member_by_member(
            members in proptest::collection::vec(0u32..MEMBERS_MAX, 0..40),
            first in 0u32..300,
            count in 0u32..300,
        ) {
            let s = MemberSet::from_members(&members);
            let naive: Vec<u32> = (0..MEMBERS_MAX).filter(|&m| s.contains(m)).collect();
            proptest::prop_assert_eq!(s.iter().collect::<Vec<_>>(), naive);
            let naive_count = (first..first + count).filter(|&m| s.contains(m)).count() as u32;
            proptest::prop_assert_eq!(s.count_in(first, count), naive_count);
        }
    }
}
