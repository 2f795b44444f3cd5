//! One byte budget over every request payload and reply buffer of the NBD server
//! (`serve --memory-limit`), across all connections.
//!
//! ```text
//! request header read ─► Budget::buffer(len) ─► fits the connection's reserve? take it
//!                                                 │ else queue (FIFO) for the shared part
//!                                                 │ (the reader waits: backpressure, the
//!                                                 │  socket is not read meanwhile)
//! reply sent ─► Buffer dropped ─► bytes back (the buffer kept in a small pool, itself
//!                                 counted, for the next request)
//! ```
//!
//! The limit is split: every transmission slot has a small reserve of its own
//! ([`Budget::reserve_bytes`], 1 MiB at most), the rest is shared. A request that fits
//! what its connection has left of its reserve never waits, so clients that keep
//! requests of a few KiB in flight are served however much of the shared part others
//! hold (for example with 32 MiB replies they never read). Larger requests queue for
//! the shared part, first come, first served, so a stream of small requests cannot
//! starve a large one. A buffer is allocated only once its bytes are granted; pooled
//! buffers count too and are freed first when a request needs their room, so the
//! buffers never hold more than the limit together.

use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// The smallest buffer handed out (a page): smaller requests share its size class.
const BUFFER_BYTES_MIN: u64 = 4096;
/// The largest reserve of one connection.
pub const RESERVE_BYTES_MAX: u64 = 1 << 20;
/// How often a waiter looks at its give-up condition (the connection closing, the
/// server stopping).
const POLL: Duration = Duration::from_millis(100);

/// The byte budget. Shared by reference by every connection of a server.
pub struct Budget {
    limit_bytes: u64,
    reserve_bytes: u64,
    shared_bytes: u64,
    state: Mutex<State>,
    released: Condvar,
}

struct State {
    /// Bytes granted to live buffers from the shared part (their capacity).
    shared: u64,
    /// Bytes granted to live buffers from the connections' reserves.
    reserved: u64,
    /// Free buffers kept for reuse; their capacity counts against the limit.
    pool: Vec<Vec<u8>>,
    pooled: u64,
    /// Tickets of the waiters for the shared part, oldest first: only the front one
    /// may take bytes.
    queue: VecDeque<u64>,
    next_ticket: u64,
}

/// What one connection has taken of its reserve.
#[derive(Default)]
pub struct Reserve {
    used: AtomicU64,
}

impl Reserve {
    /// Nothing taken yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Budget {
    /// A budget of `limit_bytes` for at most `connections` connections at once: each
    /// has a reserve of `limit / (2 x connections)` (whole pages, 1 MiB at most), the
    /// rest (at least half) is shared.
    pub fn new(limit_bytes: u64, connections: usize) -> Self {
        let limit_bytes = limit_bytes.max(BUFFER_BYTES_MIN);
        let connections = connections.max(1) as u64;
        let reserve_bytes = (limit_bytes / (2 * connections) / BUFFER_BYTES_MIN * BUFFER_BYTES_MIN)
            .min(RESERVE_BYTES_MAX);
        Self {
            limit_bytes,
            reserve_bytes,
            shared_bytes: limit_bytes - connections * reserve_bytes,
            state: Mutex::new(State {
                shared: 0,
                reserved: 0,
                pool: Vec::new(),
                pooled: 0,
                queue: VecDeque::new(),
                next_ticket: 0,
            }),
            released: Condvar::new(),
        }
    }

    /// The limit in bytes.
    pub fn limit_bytes(&self) -> u64 {
        self.limit_bytes
    }

    /// Each connection's reserve in bytes.
    pub fn reserve_bytes(&self) -> u64 {
        self.reserve_bytes
    }

    /// The shared part in bytes: the largest buffer one request can get.
    pub fn shared_bytes(&self) -> u64 {
        self.shared_bytes
    }

    /// Bytes held by live buffers and by the pool (never above the limit).
    pub fn used_bytes(&self) -> u64 {
        let s = self.lock();
        s.shared + s.reserved + s.pooled
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The bytes a buffer of `len` takes from a part of `part` bytes: its size class
    /// (a power of two, at least a page), or `len` itself when the class would not fit.
    fn class(len: u64, part: u64) -> u64 {
        let class = len.max(BUFFER_BYTES_MIN).next_power_of_two();
        if class <= part {
            class
        } else {
            len
        }
    }

    /// A buffer of at least `len` bytes (its first `len` bytes hold stale data: the
    /// caller overwrites or zeroes them). From the connection's `reserve` at once when
    /// it fits there, else from the shared part, waiting first come, first served until
    /// it fits. `None` when `give_up` turns true while waiting (checked every 100 ms).
    /// A `len` above [`Budget::shared_bytes`] is the caller's error: it is clamped, so
    /// the buffer would be too short; callers cap requests first.
    pub fn buffer<'a>(
        &'a self,
        len: usize,
        reserve: &'a Reserve,
        give_up: &dyn Fn() -> bool,
    ) -> Option<Buffer<'a>> {
        let len = len as u64;
        let private = Self::class(len, self.reserve_bytes);
        if len <= self.reserve_bytes
            && reserve
                .used
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                    (u + private <= self.reserve_bytes).then_some(u + private)
                })
                .is_ok()
        {
            let mut s = self.lock();
            s.reserved += private;
            let data = self.allocate(&mut s, private);
            return Some(Buffer {
                budget: self,
                reserve: Some(reserve),
                data,
            });
        }
        let bytes = Self::class(len.min(self.shared_bytes), self.shared_bytes);
        let mut s = self.lock();
        let ticket = s.next_ticket;
        s.next_ticket += 1;
        s.queue.push_back(ticket);
        loop {
            if s.queue.front() == Some(&ticket) && s.shared + bytes <= self.shared_bytes {
                s.queue.pop_front();
                s.shared += bytes;
                let data = self.allocate(&mut s, bytes);
                drop(s);
                // The next waiter may fit in what is left.
                self.released.notify_all();
                return Some(Buffer {
                    budget: self,
                    reserve: None,
                    data,
                });
            }
            if give_up() {
                s.queue.retain(|t| *t != ticket);
                drop(s);
                self.released.notify_all();
                return None;
            }
            s = self
                .released
                .wait_timeout(s, POLL)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// A pooled buffer of `bytes` (already granted; the one freed last, likely still
    /// in a cache), or a new one after freeing pooled buffers (the largest first) to
    /// make room for it.
    fn allocate(&self, s: &mut State, bytes: u64) -> Vec<u8> {
        if let Some(i) = s.pool.iter().rposition(|b| b.len() as u64 == bytes) {
            s.pooled -= bytes;
            return s.pool.remove(i);
        }
        s.pool.sort_by_key(|b| b.len());
        while s.shared + s.reserved + s.pooled > self.limit_bytes {
            let Some(freed) = s.pool.pop() else { break };
            s.pooled -= freed.len() as u64;
        }
        vec![0u8; bytes as usize]
    }

    fn give_back(&self, data: Vec<u8>, reserve: Option<&Reserve>) {
        let bytes = data.len() as u64;
        let mut s = self.lock();
        match reserve {
            Some(r) => {
                r.used.fetch_sub(bytes, Ordering::SeqCst);
                s.reserved -= bytes;
            }
            None => s.shared -= bytes,
        }
        // Keep a quarter of the limit at most for reuse; free the rest at once.
        if s.pooled + bytes <= self.limit_bytes / 4 {
            s.pooled += bytes;
            s.pool.push(data);
            drop(s);
        } else {
            drop(s);
            drop(data);
        }
        if reserve.is_none() {
            self.released.notify_all();
        }
    }
}

/// A buffer granted by a [`Budget`]; dropping it gives its bytes back.
pub struct Buffer<'a> {
    budget: &'a Budget,
    reserve: Option<&'a Reserve>,
    data: Vec<u8>,
}

impl Deref for Buffer<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.data
    }
}

impl DerefMut for Buffer<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }
}

impl Drop for Buffer<'_> {
    fn drop(&mut self) {
        self.budget
            .give_back(std::mem::take(&mut self.data), self.reserve);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn the_limit_splits_into_reserves_and_a_shared_part() {
        let b = Budget::new(64 << 20, 16);
        assert_eq!((b.reserve_bytes(), b.shared_bytes()), (1 << 20, 48 << 20));
        let b = Budget::new(1 << 20, 16);
        assert_eq!((b.reserve_bytes(), b.shared_bytes()), (32 << 10, 512 << 10));
        let b = Budget::new(1 << 20, 1024);
        assert_eq!((b.reserve_bytes(), b.shared_bytes()), (0, 1 << 20));
    }

    #[test]
    fn shared_buffers_never_exceed_it_and_waiters_get_released_bytes() {
        let budget = Arc::new(Budget::new(128 << 10, 2));
        assert_eq!(budget.shared_bytes(), 64 << 10);
        let reserve = Reserve::new();
        let a = budget.buffer(40 << 10, &reserve, &|| false).unwrap();
        assert!(a.len() >= 40 << 10);
        assert_eq!(
            budget.used_bytes(),
            64 << 10,
            "40 KiB takes its 64 KiB class"
        );
        let waited = {
            let budget = budget.clone();
            std::thread::spawn(move || {
                let reserve = Reserve::new();
                let t0 = Instant::now();
                let b = budget.buffer(48 << 10, &reserve, &|| false).unwrap();
                assert!(budget.used_bytes() <= 128 << 10);
                drop(b);
                t0.elapsed()
            })
        };
        std::thread::sleep(Duration::from_millis(300));
        drop(a);
        let waited = waited.join().unwrap();
        assert!(waited >= Duration::from_millis(250), "{waited:?}");
        assert!(budget.used_bytes() <= 128 << 10);
    }

    #[test]
    fn a_small_request_takes_its_reserve_while_the_shared_part_is_full() {
        let budget = Budget::new(64 << 20, 16);
        let (hog, small) = (Reserve::new(), Reserve::new());
        let held: Vec<_> = (0..3)
            .map(|_| budget.buffer(16 << 20, &hog, &|| false).unwrap())
            .collect();
        assert!(
            budget.buffer(16 << 20, &hog, &|| true).is_none(),
            "shared full"
        );
        // Up to its reserve, a connection is served at once.
        let mine: Vec<_> = (0..256)
            .map(|_| budget.buffer(4096, &small, &|| true).unwrap())
            .collect();
        assert!(
            budget.buffer(4096, &small, &|| true).is_none(),
            "reserve spent"
        );
        assert!(budget.used_bytes() <= 64 << 20);
        drop(mine);
        drop(held);
        assert!(budget.used_bytes() <= 16 << 20, "a quarter pooled at most");
    }

    #[test]
    fn a_waiter_gives_up_and_leaves_the_queue() {
        let budget = Budget::new(32768, 2);
        let reserve = Reserve::new();
        let held = budget.buffer(16384, &reserve, &|| false).unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let t = s.spawn(|| {
                let reserve = Reserve::new();
                let got = budget.buffer(16384, &reserve, &|| stop.load(Ordering::Relaxed));
                got.is_some()
            });
            std::thread::sleep(Duration::from_millis(150));
            stop.store(true, Ordering::Relaxed);
            assert!(!t.join().unwrap());
        });
        drop(held);
        // The queue is empty again: a new request is served at once.
        assert!(budget.buffer(16384, &reserve, &|| true).is_some());
    }

    #[test]
    fn pooled_buffers_are_freed_to_make_room() {
        let budget = Budget::new(2 << 20, 1);
        let reserve = Reserve::new();
        drop(budget.buffer(4096, &reserve, &|| false).unwrap());
        drop(budget.buffer(64 << 10, &reserve, &|| false).unwrap());
        assert!(budget.used_bytes() > 0, "kept for reuse");
        let whole = budget.buffer(1 << 20, &reserve, &|| true).unwrap();
        let more = budget
            .buffer(1 << 20, &reserve, &|| true)
            .expect("pool freed");
        assert_eq!((whole.len(), more.len()), (1 << 20, 1 << 20));
        assert_eq!(budget.used_bytes(), 2 << 20);
    }

    #[test]
    fn a_length_whose_class_does_not_fit_gets_its_exact_size() {
        let budget = Budget::new(8 << 20, 1);
        let reserve = Reserve::new();
        let b = budget.buffer(6 << 20, &reserve, &|| true).unwrap();
        assert_eq!(b.len(), 6 << 20);
    }
}
