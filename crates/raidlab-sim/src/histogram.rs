//! Streaming latency histogram: log-linear buckets (64 sub-buckets per power of two),
//! so memory is fixed and any percentile is within 1/64 (1.6 %) of the true value.
//!
//! A leaf at the top of the crate: the host's workloads and the measurement both keep
//! histograms, and the results read them; it imports nothing.

const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;
/// Values up to 2^44 ns (about 4.9 hours) are kept exactly in range; larger ones clamp.
const GROUPS: usize = 44 - SUB_BITS as usize + 1;
const BUCKETS: usize = (GROUPS + 1) * (SUB as usize / 2);

/// Latency histogram in nanoseconds with exact count, sum, min and max.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    /// An empty histogram (the only allocation it ever makes).
    pub fn new() -> Self {
        Self {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }

    #[inline]
    fn bucket(value_ns: u64) -> usize {
        if value_ns < SUB {
            return value_ns as usize;
        }
        let msb = 63 - value_ns.leading_zeros();
        let group = (msb + 1 - SUB_BITS) as usize;
        if group >= GROUPS {
            return BUCKETS - 1;
        }
        let sub = (value_ns >> (msb + 1 - SUB_BITS)) as usize - SUB as usize / 2;
        group * SUB as usize / 2 + SUB as usize / 2 + sub
    }

    /// Lower edge of a bucket; its upper edge is the next bucket's lower edge.
    fn bucket_low(index: usize) -> u64 {
        let half = SUB as usize / 2;
        if index < SUB as usize {
            return index as u64;
        }
        let group = (index - half) / half;
        let sub = (index - half) % half + half;
        (sub as u64) << (group as u32)
    }

    /// Count one value.
    #[inline]
    pub fn record(&mut self, value_ns: u64) {
        self.counts[Self::bucket(value_ns)] += 1;
        self.count += 1;
        self.sum_ns += u128::from(value_ns);
        self.min_ns = self.min_ns.min(value_ns);
        self.max_ns = self.max_ns.max(value_ns);
    }

    /// Add every value `other` recorded.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Exact mean, 0 when empty.
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }

    /// Smallest value, 0 when empty.
    pub fn min_ns(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min_ns
        }
    }

    /// Largest value.
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// The value below which `percent` of the values lie (bucket midpoint, clamped to
    /// the exact min and max).
    pub fn percentile_ns(&self, percent: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((percent / 100.0) * self.count as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (index, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let low = Self::bucket_low(index);
                let high = if index + 1 < BUCKETS {
                    Self::bucket_low(index + 1)
                } else {
                    low
                };
                let mid = low + (high.saturating_sub(low)) / 2;
                return mid.clamp(self.min_ns, self.max_ns);
            }
        }
        self.max_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_tight() {
        let mut last = 0;
        for v in (0..1_000_000u64).step_by(7).chain([u64::MAX / 2]) {
            let b = Histogram::bucket(v);
            assert!(b >= last);
            last = b;
            if v < 1 << 40 {
                let low = Histogram::bucket_low(b);
                assert!(low <= v, "{v} below bucket {b} low {low}");
                assert!(v - low <= v / 32 + 1, "{v} low {low}");
            }
        }
    }

    #[test]
    fn percentiles_are_within_two_percent() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 100);
        }
        for p in [1.0, 50.0, 90.0, 99.0, 99.9] {
            let exact = (p / 100.0 * 100_000.0) * 100.0;
            let got = h.percentile_ns(p) as f64;
            assert!((got - exact).abs() / exact < 0.02, "p{p}: {got} vs {exact}");
        }
        assert_eq!(h.min_ns(), 100);
        assert_eq!(h.max_ns(), 10_000_000);
    }
}
