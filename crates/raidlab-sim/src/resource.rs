//! A first-come first-served server with a known service time: the building block of
//! links, buses, flash dies and firmware processors. Reserving returns when the work
//! starts and ends; the server remembers when it is next free and how long it has been
//! busy, which is what utilisation and the bottleneck are computed from.
//!
//! A leaf at the top of the crate: the drives' dies and links and the controller's CPU,
//! paths and ports are all built from it, and it imports nothing.

/// Converts a rate to picoseconds per byte once, so every transfer time after that is
/// integer arithmetic.
#[inline]
pub fn ps_per_byte(rate_bytes_per_s: f64) -> u64 {
    assert!(rate_bytes_per_s > 0.0, "rate must be positive");
    (1e12 / rate_bytes_per_s).round().max(1.0) as u64
}

/// Transfer time of `bytes` at `ps_per_byte`.
#[inline]
pub fn transfer_ns(bytes: u64, ps_per_byte: u64) -> u64 {
    (bytes * ps_per_byte).div_ceil(1000)
}

/// A divisor fixed for a run (a page size, a die count): a power of two, as they
/// nearly always are, divides by a shift, which takes a cycle where a 64-bit division
/// takes tens. The quotients and remainders are those of `/` and `%`.
#[derive(Debug, Clone, Copy)]
pub struct Divisor {
    value: u64,
    /// log2 of `value` when it is a power of two, else `u32::MAX`.
    shift: u32,
}

impl Divisor {
    /// Divides by `value` (nonzero).
    pub fn new(value: u64) -> Self {
        assert!(value > 0, "a divisor is nonzero");
        Self {
            value,
            shift: if value.is_power_of_two() {
                value.trailing_zeros()
            } else {
                u32::MAX
            },
        }
    }

    /// `a / value`.
    #[inline]
    pub fn quotient(self, a: u64) -> u64 {
        if self.shift != u32::MAX {
            a >> self.shift
        } else {
            a / self.value
        }
    }

    /// `a % value`.
    #[inline]
    pub fn remainder(self, a: u64) -> u64 {
        if self.shift != u32::MAX {
            a & (self.value - 1)
        } else {
            a % self.value
        }
    }
}

/// One FIFO server (a CPU, a drive's firmware, a die, a link): work is served one piece
/// at a time in the order it is reserved, so its completion time is known at once and
/// needs no event. Times are simulated ns; busy time is the work reserved.
#[derive(Debug, Clone, Default)]
pub struct Server {
    free_at_ns: u64,
    busy_ns: u64,
}

impl Server {
    /// Serve `service_ns` of work arriving at `arrival_ns`: returns (start, end).
    #[inline]
    pub fn reserve(&mut self, arrival_ns: u64, service_ns: u64) -> (u64, u64) {
        let start = arrival_ns.max(self.free_at_ns);
        let end = start + service_ns;
        self.free_at_ns = end;
        self.busy_ns += service_ns;
        (start, end)
    }

    /// When the server is next idle.
    #[inline]
    pub fn free_at_ns(&self) -> u64 {
        self.free_at_ns
    }

    /// Total work reserved so far.
    #[inline]
    pub fn busy_ns(&self) -> u64 {
        self.busy_ns
    }

    /// Keep the server occupied until `end_ns` (work that holds it past its service).
    #[inline]
    pub fn hold_until(&mut self, end_ns: u64) {
        if end_ns > self.free_at_ns {
            self.busy_ns += end_ns - self.free_at_ns;
            self.free_at_ns = end_ns;
        }
    }

    /// Count `service_ns` of work toward utilisation without queueing it.
    #[inline]
    pub fn account(&mut self, service_ns: u64) {
        self.busy_ns += service_ns;
    }

    /// Account work done outside `reserve` (a mechanism that schedules itself).
    #[inline]
    pub fn occupy(&mut self, start_ns: u64, end_ns: u64) {
        debug_assert!(end_ns >= start_ns);
        self.busy_ns += end_ns - start_ns;
        self.free_at_ns = self.free_at_ns.max(end_ns);
    }
}

/// A server that is reserved out of time order and serves each piece of work in the
/// earliest idle gap at or after its arrival that holds it, rather than after all work
/// reserved before it: a flash channel or a PCIe link of an NVMe drive, whose
/// controller moves a page as soon as its die has sensed it, whatever the order the
/// commands came in. Booked intervals that end before the caller's present are
/// forgotten, so memory is bounded by the work in flight.
#[derive(Debug, Clone, Default)]
pub struct GapServer {
    /// Booked (start, end), sorted and disjoint.
    booked: std::collections::VecDeque<(u64, u64)>,
    busy_ns: u64,
}

impl GapServer {
    /// Serve `service_ns` of work arriving at `arrival_ns`, asked at `now_ns` (no later
    /// than the arrival): returns (start, end).
    pub fn reserve(&mut self, now_ns: u64, arrival_ns: u64, service_ns: u64) -> (u64, u64) {
        debug_assert!(
            now_ns <= arrival_ns,
            "work arrives no earlier than it is booked"
        );
        while self.booked.front().is_some_and(|&(_, end)| end <= now_ns) {
            self.booked.pop_front();
        }
        let mut start = arrival_ns;
        let mut at = self.booked.len();
        for (i, &(s, e)) in self.booked.iter().enumerate() {
            if e <= start {
                continue;
            }
            if s >= start + service_ns {
                at = i;
                break;
            }
            start = start.max(e);
        }
        let end = start + service_ns;
        if service_ns > 0 {
            self.booked.insert(at, (start, end));
        }
        self.busy_ns += service_ns;
        debug_assert!(at == 0 || self.booked[at - 1].1 <= start);
        debug_assert!(self.booked.get(at + 1).is_none_or(|next| end <= next.0));
        (start, end)
    }

    /// Total work reserved so far.
    pub fn busy_ns(&self) -> u64 {
        self.busy_ns
    }
}

/// A bandwidth path (a bus, a controller data path): a transfer may overlap the
/// transfer that feeds it, so it starts when its first byte could arrive, not when the
/// feeding transfer ended.
#[derive(Debug, Clone)]
pub struct Path {
    server: Server,
    ps_per_byte: u64,
}

impl Path {
    /// A path of `rate_bytes_per_s`.
    pub fn new(rate_bytes_per_s: f64) -> Self {
        Self {
            server: Server::default(),
            ps_per_byte: ps_per_byte(rate_bytes_per_s),
        }
    }

    /// Carry `bytes` whose feeding transfer ran from `feed_start_ns` to `feed_end_ns`:
    /// returns when the last byte is through.
    #[inline]
    pub fn carry(&mut self, bytes: u64, feed_start_ns: u64, feed_end_ns: u64) -> u64 {
        let (_, end) = self
            .server
            .reserve(feed_start_ns, transfer_ns(bytes, self.ps_per_byte));
        end.max(feed_end_ns)
    }

    /// Busy time so far.
    pub fn busy_ns(&self) -> u64 {
        self.server.busy_ns()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_arrivals_queue_behind_earlier_work() {
        let mut s = Server::default();
        assert_eq!(s.reserve(10, 5), (10, 15));
        assert_eq!(s.reserve(12, 5), (15, 20));
        assert_eq!(s.reserve(30, 1), (30, 31));
        assert_eq!(s.busy_ns(), 11);
    }

    #[test]
    fn a_gap_server_fits_late_booked_work_into_earlier_idle_time() {
        let mut s = GapServer::default();
        assert_eq!(s.reserve(0, 100, 10), (100, 110));
        // Booked later but ready earlier: it goes before, in the idle gap.
        assert_eq!(s.reserve(0, 20, 10), (20, 30));
        // No room between 95 and 100 for 10: after the work at 100.
        assert_eq!(s.reserve(0, 95, 10), (110, 120));
        assert_eq!(s.reserve(0, 30, 70), (30, 100));
        assert_eq!(s.busy_ns(), 100);
        // Work over before `now` is forgotten.
        assert_eq!(s.reserve(200, 200, 5), (200, 205));
        assert_eq!(s.booked.len(), 1);
    }

    #[test]
    fn a_divisor_divides_as_the_operators_do() {
        for value in [1, 2, 3, 7, 8, 4096, 16384, 100_000, 1 << 40, u64::MAX] {
            let d = Divisor::new(value);
            for a in [
                0,
                1,
                5,
                4095,
                4096,
                4097,
                123_456_789,
                1 << 50,
                u64::MAX - 1,
                u64::MAX,
            ] {
                assert_eq!(d.quotient(a), a / value, "{a} / {value}");
                assert_eq!(d.remainder(a), a % value, "{a} % {value}");
            }
        }
    }

    #[test]
    fn transfer_time_follows_the_rate() {
        let ps = ps_per_byte(500e6);
        assert_eq!(ps, 2000);
        assert_eq!(transfer_ns(4096, ps), 8192);
    }
}
