//! md's limit on read-error correction: a member read that fails is recomputed from the
//! other members and written back (see `bad_blocks`), up to md's `max_read_errors`
//! corrections, counted with the hourly decay md's RAID 10 applies.

use super::Array;
use std::time::Instant;

/// Read errors corrected on one member before it is failed instead (md's default
/// `max_read_errors`), counted as md's RAID 10 counts them: halved for every hour
/// without one, so a disk is failed for a burst of errors, not for a few a day.
pub const MAX_READ_ERRORS: u64 = 20;

/// One member's corrected read errors.
#[derive(Debug, Default)]
pub(super) struct ReadErrors {
    /// All of them since assembly (what `status` reports).
    pub(super) total: u64,
    /// The count [`MAX_READ_ERRORS`] limits, as it stood at `last`.
    recent: u64,
    /// When the last one was corrected.
    last: Option<Instant>,
}

impl ReadErrors {
    /// The limited count at `now`: halved for every whole hour since the last error
    /// (md's `check_decay_read_errors`).
    fn recent_at(&self, now: Instant) -> u64 {
        let hours = self
            .last
            .map_or(0, |t| now.saturating_duration_since(t).as_secs() / 3600);
        self.recent
            .checked_shr(u32::try_from(hours).unwrap_or(u32::MAX))
            .unwrap_or(0)
    }

    /// Counts an error corrected at `now`; returns the limited count with it.
    fn record(&mut self, now: Instant) -> u64 {
        self.recent = self.recent_at(now) + 1;
        self.last = Some(now);
        self.total += 1;
        self.recent
    }
}

impl Array {
    /// Whether member `role` had [`MAX_READ_ERRORS`] corrections lately: another read
    /// error fails it (md's `max_read_errors`).
    pub(super) fn read_error_limit_reached(&self, role: u32) -> bool {
        let recent = self.read_errors[role as usize]
            .lock()
            .expect("read errors lock")
            .recent_at(Instant::now());
        if recent >= MAX_READ_ERRORS {
            eprintln!(
                "raidlab-engine: member {role}: another read error after {recent} corrected \
                 lately, the most allowed"
            );
        }
        recent >= MAX_READ_ERRORS
    }

    /// Counts a read error of member `role` corrected now; returns the limited count.
    pub(super) fn count_corrected(&self, role: u32) -> u64 {
        self.read_errors[role as usize]
            .lock()
            .expect("read errors lock")
            .record(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_read_error_count_halves_for_every_hour_without_one() {
        let t0 = Instant::now();
        let hour = Duration::from_secs(3600);
        let mut e = ReadErrors::default();
        for _ in 0..12 {
            e.record(t0);
        }
        assert_eq!(e.recent_at(t0 + hour - Duration::from_secs(1)), 12);
        assert_eq!(e.recent_at(t0 + hour), 6);
        assert_eq!(e.recent_at(t0 + 3 * hour), 1);
        assert_eq!(e.recent_at(t0 + 100_000 * hour), 0);
        // An error two hours on counts on top of what is left (12 / 4), and restarts
        // the clock; the total never decays.
        assert_eq!(e.record(t0 + 2 * hour), 4);
        assert_eq!(e.recent_at(t0 + 3 * hour - Duration::from_secs(1)), 4);
        assert_eq!(e.recent_at(t0 + 3 * hour), 2);
        assert_eq!(e.total, 13);
    }

    #[test]
    fn twenty_errors_in_a_burst_reach_the_limit_twenty_a_day_do_not() {
        let t0 = Instant::now();
        let mut burst = ReadErrors::default();
        for _ in 0..MAX_READ_ERRORS {
            burst.record(t0);
        }
        assert!(burst.recent_at(t0) >= MAX_READ_ERRORS);
        let mut spread = ReadErrors::default();
        let mut at = t0;
        for _ in 0..MAX_READ_ERRORS {
            spread.record(at);
            at += Duration::from_secs(72 * 60); // 20 a day
        }
        assert!(spread.recent_at(at) < 3, "{}", spread.recent_at(at));
    }
}
