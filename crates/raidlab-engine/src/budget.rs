//! One byte budget over every request payload and reply buffer of the NBD server
//! (`serve --memory-limit`), across all connections.
//!
//! ```text
//! request header read ─► Budget::buffer(len) ─► wait (FIFO) until len fits ─► Buffer
//!                                                  │ (the reader waits: backpressure,
//!                                                  │  the socket is not read meanwhile)
//! reply sent ─► Buffer dropped ─► bytes back to the budget (the buffer kept in a small
//!                                 pool, itself counted, for the next request)
//! ```
//!
//! A buffer is allocated only once its bytes are granted, so the buffers never hold
//! more than the limit together: pooled buffers count too and are freed first when a
//! request needs their room. Waiters are served first come, first served, so a stream
//! of small requests cannot starve a large one and a new client queues behind at most
//! the requests already waiting.

use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// The smallest buffer handed out (a page): smaller requests share its size class.
const BUFFER_BYTES_MIN: u64 = 4096;
/// How often a waiter looks at its give-up condition (the connection closing, the
/// server stopping).
const POLL: Duration = Duration::from_millis(100);

/// The byte budget. Shared by reference by every connection of a server.
pub struct Budget {
    limit_bytes: u64,
    state: Mutex<State>,
    released: Condvar,
}

struct State {
    /// Bytes granted to live buffers (their capacity).
    leased: u64,
    /// Free buffers kept for reuse; their capacity counts against the limit.
    pool: Vec<Vec<u8>>,
    pooled: u64,
    /// Tickets of the waiters, oldest first: only the front one may take bytes.
    queue: VecDeque<u64>,
    next_ticket: u64,
}

impl Budget {
    /// A budget of `limit_bytes` (at least one byte).
    pub fn new(limit_bytes: u64) -> Self {
        Self {
            limit_bytes: limit_bytes.max(1),
            state: Mutex::new(State {
                leased: 0,
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

    /// Bytes held by live buffers and by the pool (never above the limit).
    pub fn used_bytes(&self) -> u64 {
        let s = self.lock();
        s.leased + s.pooled
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The bytes a buffer of `len` takes: its size class (a power of two, at least a
    /// page), or `len` itself when the class would not fit in the limit.
    fn class(&self, len: u64) -> u64 {
        let class = len.max(BUFFER_BYTES_MIN).next_power_of_two();
        if class <= self.limit_bytes {
            class
        } else {
            len
        }
    }

    /// A buffer of at least `len` bytes (its first `len` bytes hold stale data: the
    /// caller overwrites or zeroes them), waiting first come, first served until its
    /// bytes fit in the budget. `None` when `give_up` turns true while waiting (checked
    /// every 100 ms). A `len` above the limit is the caller's error: it is clamped, so
    /// the buffer would be too short; callers cap requests at the limit first.
    pub fn buffer(&self, len: usize, give_up: &dyn Fn() -> bool) -> Option<Buffer<'_>> {
        let bytes = self.class((len as u64).min(self.limit_bytes));
        let mut s = self.lock();
        let ticket = s.next_ticket;
        s.next_ticket += 1;
        s.queue.push_back(ticket);
        loop {
            if s.queue.front() == Some(&ticket) {
                if let Some(data) = self.take(&mut s, bytes) {
                    s.queue.pop_front();
                    drop(s);
                    // The next waiter may fit in what is left.
                    self.released.notify_all();
                    return Some(Buffer { budget: self, data });
                }
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

    /// A pooled buffer of class `bytes`, or a new one when pooled buffers can be freed
    /// to make room; `None` when the live buffers leave no room.
    fn take(&self, s: &mut State, bytes: u64) -> Option<Vec<u8>> {
        if let Some(i) = s.pool.iter().position(|b| b.len() as u64 == bytes) {
            let data = s.pool.swap_remove(i);
            s.pooled -= bytes;
            s.leased += bytes;
            return Some(data);
        }
        if s.leased + bytes > self.limit_bytes {
            return None;
        }
        // Free pooled buffers (the largest first) until the new one fits.
        s.pool.sort_by_key(|b| b.len());
        while s.leased + s.pooled + bytes > self.limit_bytes {
            let freed = s.pool.pop().expect("pooled bytes are in the pool");
            s.pooled -= freed.len() as u64;
        }
        s.leased += bytes;
        Some(vec![0u8; bytes as usize])
    }

    fn give_back(&self, data: Vec<u8>) {
        let bytes = data.len() as u64;
        let mut s = self.lock();
        s.leased -= bytes;
        // Keep a quarter of the limit at most for reuse; free the rest at once.
        if s.pooled + bytes <= self.limit_bytes / 4 {
            s.pooled += bytes;
            s.pool.push(data);
            drop(s);
        } else {
            drop(s);
            drop(data);
        }
        self.released.notify_all();
    }
}

/// A buffer granted by a [`Budget`]; dropping it gives its bytes back.
pub struct Buffer<'a> {
    budget: &'a Budget,
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
        self.budget.give_back(std::mem::take(&mut self.data));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn buffers_never_exceed_the_limit_and_waiters_get_released_bytes() {
        let budget = Arc::new(Budget::new(64 << 10));
        let a = budget.buffer(40 << 10, &|| false).unwrap();
        assert!(a.len() >= 40 << 10);
        assert_eq!(budget.used_bytes(), 64 << 10, "40 KiB takes its 64 KiB class");
        let waited = {
            let budget = budget.clone();
            std::thread::spawn(move || {
                let t0 = Instant::now();
                let b = budget.buffer(4096, &|| false).unwrap();
                assert!(budget.used_bytes() <= 64 << 10);
                drop(b);
                t0.elapsed()
            })
        };
        std::thread::sleep(Duration::from_millis(300));
        drop(a);
        let waited = waited.join().unwrap();
        assert!(waited >= Duration::from_millis(250), "{waited:?}");
        assert!(budget.used_bytes() <= 64 << 10);
    }

    #[test]
    fn a_waiter_gives_up_and_leaves_the_queue() {
        let budget = Budget::new(8192);
        let held = budget.buffer(8192, &|| false).unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let t = s.spawn(|| budget.buffer(4096, &|| stop.load(Ordering::Relaxed)));
            std::thread::sleep(Duration::from_millis(150));
            stop.store(true, Ordering::Relaxed);
            assert!(t.join().unwrap().is_none());
        });
        drop(held);
        // The queue is empty again: a new request is served at once.
        assert!(budget.buffer(8192, &|| true).is_some());
    }

    #[test]
    fn pooled_buffers_are_freed_to_make_room() {
        let budget = Budget::new(1 << 20);
        drop(budget.buffer(4096, &|| false).unwrap());
        drop(budget.buffer(64 << 10, &|| false).unwrap());
        assert!(budget.used_bytes() > 0, "kept for reuse");
        let whole = budget.buffer(1 << 20, &|| true).expect("pool freed for it");
        assert_eq!(whole.len(), 1 << 20);
        assert_eq!(budget.used_bytes(), 1 << 20);
    }

    #[test]
    fn a_length_whose_class_does_not_fit_gets_its_exact_size() {
        let budget = Budget::new(3 << 20);
        let b = budget.buffer(3 << 20, &|| true).unwrap();
        assert_eq!(b.len(), 3 << 20);
    }
}
