//! Rate-limited log lines: a flood of refused or misbehaving connections prints at
//! most [`LINES_PER_SECOND`] lines a second, then one
//! `raidlab-engine: suppressed K similar messages` line for the rest.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Lines a [`LogLimit`] prints per one-second window before it suppresses.
pub const LINES_PER_SECOND: u32 = 10;

/// A limiter of similar log lines (to stderr).
pub struct LogLimit {
    per_second: u32,
    state: Mutex<Window>,
}

struct Window {
    start: Option<Instant>,
    printed: u32,
    suppressed: u64,
}

impl LogLimit {
    /// A limiter printing at most `per_second` lines per second.
    pub const fn new(per_second: u32) -> Self {
        Self {
            per_second,
            state: Mutex::new(Window {
                start: None,
                printed: 0,
                suppressed: 0,
            }),
        }
    }

    /// Prints `line` (to stderr) unless this window's lines are spent; then counts it.
    pub fn log(&self, line: &str) {
        if let Some(out) = self.admit(Instant::now(), line) {
            for l in out {
                eprintln!("{l}");
            }
        }
    }

    /// Prints the count of suppressed lines once their window is over (the server's
    /// accept loop calls it on its ticks, so a flood that stopped is still reported).
    pub fn flush(&self) {
        if let Some(l) = self.roll(Instant::now()) {
            eprintln!("{l}");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Window> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts a new window when the current one is a second old; returns the
    /// suppressed line of the one that ended, if any were.
    fn roll(&self, now: Instant) -> Option<String> {
        let mut w = self.lock();
        let over = w
            .start
            .is_none_or(|s| now.duration_since(s) >= Duration::from_secs(1));
        if !over {
            return None;
        }
        w.start = Some(now);
        w.printed = 0;
        let k = std::mem::take(&mut w.suppressed);
        (k > 0).then(|| format!("raidlab-engine: suppressed {k} similar messages"))
    }

    /// The lines to print for `line` at `now` (the suppressed count of the last window
    /// first), or `None` when it is suppressed.
    fn admit(&self, now: Instant, line: &str) -> Option<Vec<String>> {
        let mut out: Vec<String> = self.roll(now).into_iter().collect();
        let mut w = self.lock();
        if w.printed < self.per_second {
            w.printed += 1;
            out.push(line.to_string());
        } else {
            w.suppressed += 1;
        }
        (!out.is_empty()).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_prints_n_lines_then_one_count() {
        let limit = LogLimit::new(3);
        let t0 = Instant::now();
        let printed: Vec<_> = (0..700)
            .filter_map(|i| limit.admit(t0, &format!("refused {i}")))
            .flatten()
            .collect();
        assert_eq!(printed, ["refused 0", "refused 1", "refused 2"]);
        let next = limit.admit(t0 + Duration::from_millis(1001), "refused again");
        assert_eq!(
            next.unwrap(),
            [
                "raidlab-engine: suppressed 697 similar messages",
                "refused again"
            ]
        );
        assert_eq!(limit.roll(t0 + Duration::from_millis(1500)), None);
    }
}
