//! The NBD server's transmission slots (`serve --connections-max`), and who gives one up
//! when every slot is taken.
//!
//! ```text
//! GO ─► a slot free? take it
//!       │ else the holder idle longest (no request in flight, none sent for at least
//!       │ --evict-idle-after) is closed for the newcomer; its slot is taken once its
//!       │ thread has let go (within EVICTION_WAIT), else NBD_REP_ERR_POLICY
//! end of a connection ─► its slot back
//! ```
//!
//! Why this policy: qemu-nbd and nbdkit keep an idle client as long as it likes, so a
//! few clients that connect and fall silent lock everyone else out. Closing only the
//! longest-idle holder, only when someone else needs the slot and only once it has
//! been idle a while, leaves clients that work alone (however long they pause while the
//! server has room) and takes from no client in the middle of a request it sends or a
//! reply it waits for. A client stalled mid-request counts as idle: it sends nothing.

use crate::net::log_limit::LogLimit;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a newcomer waits for an evicted holder's thread to let go of its slot.
pub const EVICTION_WAIT: Duration = Duration::from_secs(2);

/// What the slots know of one connection: when it last did something, whether it has
/// requests in flight, and whether it was told to go.
pub struct Activity {
    epoch: Instant,
    /// Milliseconds from `epoch` to the last request read or reply sent.
    last_ms: AtomicU64,
    /// Requests read and not yet answered.
    busy: AtomicUsize,
    /// Closed for a newcomer: its waits give up.
    evicted: AtomicBool,
}

impl Default for Activity {
    fn default() -> Self {
        Self {
            epoch: Instant::now(),
            last_ms: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
            evicted: AtomicBool::new(false),
        }
    }
}

impl Activity {
    /// A request came or a reply went now.
    pub fn touch(&self) {
        let ms = self.epoch.elapsed().as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// A request was read (`true`) or answered (`false`).
    pub fn busy(&self, started: bool) {
        if started {
            self.busy.fetch_add(1, Ordering::Relaxed);
        } else {
            self.busy.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// How long it has done nothing with no request in flight; `None` while busy.
    pub fn idle_for(&self) -> Option<Duration> {
        if self.busy.load(Ordering::Relaxed) > 0 {
            return None;
        }
        let now = self.epoch.elapsed().as_millis() as u64;
        Some(Duration::from_millis(
            now.saturating_sub(self.last_ms.load(Ordering::Relaxed)),
        ))
    }

    /// Whether it was closed for a newcomer.
    pub fn evicted(&self) -> bool {
        self.evicted.load(Ordering::Relaxed)
    }
}

/// A connection holding a slot.
struct Holder {
    id: u64,
    peer: String,
    activity: Arc<Activity>,
    /// Shuts its socket down.
    cut: Box<dyn Fn() + Send + Sync>,
}

/// What [`Slots::evict_one`] did.
enum Eviction {
    /// Closed the longest-idle holder.
    Done,
    /// One closed before still lets go.
    Pending,
    /// The longest-idle holder may be closed after this.
    In(Duration),
    /// Every holder is busy.
    Never,
}

/// The transmission slots of one server.
pub struct Slots {
    max: usize,
    evict_after: Duration,
    held: Mutex<Vec<Holder>>,
}

impl Slots {
    /// `max` slots; a holder idle `evict_after` or longer may be closed for a newcomer.
    pub fn new(max: usize, evict_after: Duration) -> Self {
        Self {
            max: max.max(1),
            evict_after,
            held: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Holder>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a slot for connection `id` (`cut` shuts its socket down, should it be
    /// evicted later). When none is free, the longest-idle holder is evicted once it
    /// has been idle long enough, waiting for that until `until` at most (the
    /// newcomer's handshake deadline), then for its thread to let go
    /// ([`EVICTION_WAIT`]); false when no slot can be had by then. A refusal is at
    /// once when every holder is busy or none would be idle long enough in time.
    pub fn take(
        &self,
        id: u64,
        peer: String,
        activity: Arc<Activity>,
        cut: Box<dyn Fn() + Send + Sync>,
        log: &LogLimit,
        until: Instant,
    ) -> bool {
        let mut until = until;
        loop {
            {
                let mut held = self.lock();
                if held.len() < self.max {
                    held.push(Holder {
                        id,
                        peer,
                        activity,
                        cut,
                    });
                    return true;
                }
                match self.evict_one(&held, log) {
                    Eviction::Done => until = until.max(Instant::now() + EVICTION_WAIT),
                    Eviction::Pending => {}
                    Eviction::In(wait) if Instant::now() + wait < until => {}
                    Eviction::In(_) | Eviction::Never => return false,
                }
            }
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Closes the holder idle longest, if one has been idle long enough and none was
    /// closed already.
    fn evict_one(&self, held: &[Holder], log: &LogLimit) -> Eviction {
        if held.iter().any(|h| h.activity.evicted()) {
            return Eviction::Pending;
        }
        let Some((idle, h)) = held
            .iter()
            .filter_map(|h| h.activity.idle_for().map(|idle| (idle, h)))
            .max_by_key(|(idle, _)| *idle)
        else {
            return Eviction::Never;
        };
        if idle < self.evict_after {
            return Eviction::In(self.evict_after - idle);
        }
        h.activity.evicted.store(true, Ordering::Relaxed);
        (h.cut)();
        log.log(&format!(
            "raidlab-engine: {}: closed, idle for {} s while a newcomer found all {} \
             connections taken",
            h.peer,
            idle.as_secs(),
            self.max
        ));
        Eviction::Done
    }

    /// Connection `id`'s slot back.
    pub fn release(&self, id: u64) {
        self.lock().retain(|h| h.id != id);
    }

    /// Slots taken.
    pub fn taken(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static LOG: LogLimit = LogLimit::new(10);

    fn holder(slots: &Slots, id: u64, cut: &Arc<AtomicBool>) -> (bool, Arc<Activity>) {
        let a = Arc::new(Activity::default());
        let c = cut.clone();
        let took = slots.take(
            id,
            format!("peer{id}"),
            a.clone(),
            Box::new(move || c.store(true, Ordering::Relaxed)),
            &LOG,
            Instant::now() + Duration::from_secs(5),
        );
        (took, a)
    }

    #[test]
    fn the_longest_idle_holder_is_evicted_and_a_busy_one_never() {
        let slots = Slots::new(2, Duration::ZERO);
        let cuts: Vec<_> = (0..3).map(|_| Arc::new(AtomicBool::new(false))).collect();
        let (_, first) = holder(&slots, 0, &cuts[0]);
        std::thread::sleep(Duration::from_millis(20));
        let (_, second) = holder(&slots, 1, &cuts[1]);
        second.touch();
        first.busy(true);
        // The first is busy: the second, idle, is cut; its thread lets go.
        std::thread::scope(|s| {
            s.spawn(|| {
                while !cuts[1].load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                slots.release(1);
            });
            assert!(holder(&slots, 2, &cuts[2]).0);
        });
        assert!(!cuts[0].load(Ordering::Relaxed) && cuts[1].load(Ordering::Relaxed));
        assert_eq!(slots.taken(), 2);
    }

    #[test]
    fn no_holder_idle_long_enough_in_time_means_a_refusal_at_once() {
        let slots = Slots::new(1, Duration::from_secs(60));
        let cut = Arc::new(AtomicBool::new(false));
        assert!(holder(&slots, 0, &cut).0);
        let t0 = Instant::now();
        assert!(!holder(&slots, 1, &cut).0);
        assert!(t0.elapsed() < Duration::from_millis(500));
        assert!(!cut.load(Ordering::Relaxed));
        slots.release(0);
        assert!(holder(&slots, 1, &cut).0);
    }

    #[test]
    fn a_newcomer_waits_for_the_longest_idle_holder_to_come_of_age() {
        let slots = Slots::new(1, Duration::from_millis(300));
        let cut = Arc::new(AtomicBool::new(false));
        let (_, a) = holder(&slots, 0, &cut);
        a.touch();
        let t0 = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                while !cut.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                slots.release(0);
            });
            assert!(holder(&slots, 1, &Arc::new(AtomicBool::new(false))).0);
        });
        let waited = t0.elapsed();
        assert!(waited >= Duration::from_millis(250) && waited < Duration::from_secs(2));
    }
}
