//! The controller's read balancing that needs the simulation's state, not only the layout: md raid10's
//! choice of copy by where each drive last was.

use raidlab_layout::{CopyChooser, LeastOutstanding};

/// md raid10's `read_balance` before Linux 5.3 (near layouts): the first copy whose
/// drive has nothing pending; else the copy whose drive last finished an I/O nearest
/// the copy's address (`head_position`, updated as each I/O completes), on SSDs too.
/// Ties go to the earlier copy. Linux 5.3 changed SSDs to the least-busy copy (G. Jiang,
/// "md/raid10: read balance chooses idlest disk for SSD", 2019), as raid1 had done
/// since 3.6.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MdRaid10Nearest<'a> {
    outstanding: &'a [u32],
    head_bytes: &'a [u64],
}

impl<'a> MdRaid10Nearest<'a> {
    /// `outstanding[m]`: operations in flight on member `m`; `head_bytes[m]`: the end
    /// of the last operation member `m` completed.
    pub(crate) fn new(outstanding: &'a [u32], head_bytes: &'a [u64]) -> Self {
        debug_assert_eq!(outstanding.len(), head_bytes.len());
        Self {
            outstanding,
            head_bytes,
        }
    }
}

impl CopyChooser for MdRaid10Nearest<'_> {
    fn choose(&mut self, candidates: &[u32]) -> usize {
        // Without addresses: an idle copy, else the least busy (never used by the
        // mirror planner, which gives addresses).
        LeastOutstanding::new(self.outstanding).choose(candidates)
    }

    fn choose_at(&mut self, candidates: &[u32], offsets_bytes: &[u64]) -> usize {
        debug_assert!(!candidates.is_empty() && candidates.len() == offsets_bytes.len());
        let mut best = 0;
        let mut best_distance = u64::MAX;
        for (i, (&m, &offset)) in candidates.iter().zip(offsets_bytes).enumerate() {
            if self.outstanding[m as usize] == 0 {
                return i;
            }
            let distance = offset.abs_diff(self.head_bytes[m as usize]);
            if distance < best_distance {
                best_distance = distance;
                best = i;
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_copy_wins_whatever_its_distance() {
        let (outstanding, heads) = ([3, 0], [4096, 1 << 30]);
        let mut c = MdRaid10Nearest::new(&outstanding, &heads);
        assert_eq!(c.choose_at(&[0, 1], &[8192, 8192]), 1);
    }

    #[test]
    fn busy_copies_go_to_the_nearest_head_not_the_least_busy() {
        let (outstanding, heads) = ([9, 1], [8192, 1 << 30]);
        let mut c = MdRaid10Nearest::new(&outstanding, &heads);
        assert_eq!(c.choose_at(&[0, 1], &[12288, 12288]), 0);
    }
}
