//! Streaming latency histogram in fio's log-linear bins (fio `stat.h`/`stat.c`:
//! `FIO_IO_U_PLAT_BITS` = 6, `FIO_IO_U_PLAT_VAL` = 64, `plat_val_to_idx`,
//! `plat_idx_to_val`, `calc_clat_percentiles`), so a percentile raidlab reports is the
//! value fio would report for the same latencies. Values below 128 ns have a bin each;
//! above, a value whose most significant bit is bit `n` keeps its next 6 bits, so its
//! bin is 2^(n-6) ns wide and its representative value (the bin's midpoint) is within
//! 1/2^7 (0.78 %) of any value in it. Memory is fixed.
//!
//! fio keeps 29 groups (values to 2^34 ns, 17 s, exactly; larger ones go into the last
//! bin). The bins here are fio's, index for index, over that range and go on in the same
//! pattern to 2^45 ns, so a run of long latencies (an HDD array rebuilding) keeps the
//! same error bound where fio would clamp.
//!
//! A leaf at the top of the crate: the host's workloads and the measurement both keep
//! histograms, and the results read them; it imports nothing.

/// fio's `FIO_IO_U_PLAT_BITS`: bits of a value kept below its most significant bit.
pub const PLAT_BITS: u32 = 6;
/// fio's `FIO_IO_U_PLAT_VAL`: bins per group.
pub const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Groups kept (fio: 29); values below 2^(GROUPS + PLAT_BITS - 1) ns are binned exactly.
const GROUPS: usize = 40;
/// Bins in all (fio's `FIO_IO_U_PLAT_NR` for 40 groups).
pub const PLAT_NR: usize = GROUPS * PLAT_VAL as usize;

/// fio's `plat_val_to_idx`: the bin of a latency of `val` ns.
#[inline]
pub fn plat_val_to_idx(val: u64) -> usize {
    let msb = 63 - (val | 1).leading_zeros();
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as usize) << PLAT_BITS;
    let offset = ((PLAT_VAL - 1) & (val >> error_bits)) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// fio's `plat_idx_to_val`: the value bin `idx` stands for, the midpoint of its range
/// (truncated to whole ns, as fio's conversion to an integer does).
pub fn plat_idx_to_val(idx: usize) -> u64 {
    debug_assert!(idx < PLAT_NR);
    if idx < (PLAT_VAL as usize) << 1 {
        return idx as u64;
    }
    let error_bits = (idx >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = (idx as u64) % PLAT_VAL;
    // (k + 0.5) * 2^error_bits, in integers: error_bits >= 1 here.
    base + (k << error_bits) + (1u64 << (error_bits - 1))
}

/// Lowest value bin `idx` holds.
pub fn plat_idx_low(idx: usize) -> u64 {
    if idx < (PLAT_VAL as usize) << 1 {
        return idx as u64;
    }
    let error_bits = (idx >> PLAT_BITS) as u32 - 1;
    (1u64 << (error_bits + PLAT_BITS)) + (((idx as u64) % PLAT_VAL) << error_bits)
}

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
            counts: vec![0; PLAT_NR].into_boxed_slice(),
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }

    /// Count one value.
    #[inline]
    pub fn record(&mut self, value_ns: u64) {
        self.counts[plat_val_to_idx(value_ns)] += 1;
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

    /// The latency at `percent`, as fio's `calc_clat_percentiles` finds it: the value
    /// of the first bin at which the count so far reaches `percent` of all values. fio
    /// reports that value as it is, which can lie past the largest latency seen (the
    /// bin's midpoint); here it is clamped to the exact min and max, so every
    /// percentile lies in [min, max] and they rise with `percent`.
    pub fn percentile_ns(&self, percent: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let wanted = (percent / 100.0) * self.count as f64;
        let mut seen = 0u64;
        for (index, &n) in self.counts.iter().enumerate() {
            seen += n;
            if n > 0 && seen as f64 >= wanted {
                return plat_idx_to_val(index).clamp(self.min_ns, self.max_ns);
            }
        }
        self.max_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// Bins and values worked by hand from fio's formulas (stat.c): below 2^7 a value
    /// is its own bin; else error_bits = msb - 6, index = (error_bits + 1) * 64 +
    /// (63 & value >> error_bits), and bin i stands for 2^(e + 6) + (i % 64 + 0.5) * 2^e
    /// with e = i / 64 - 1.
    #[test]
    fn bins_are_fios_index_for_index() {
        let cases: [(u64, usize, u64); 9] = [
            (0, 0, 0),
            (1, 1, 1),
            (64, 64, 64),
            (127, 127, 127),
            // msb 7, e 1: base 128, offset 64 & 63 = 0; 128 + 0.5 * 2
            (128, 128, 129),
            (129, 128, 129),
            // msb 9, e 3: base 256, offset (1000 >> 3 = 125) & 63 = 61; 512 + 61.5 * 8
            (1_000, 317, 1_004),
            // 2,616.9 us: msb 21, e 15: base 1024, (2616900 >> 15 = 79) & 63 = 15;
            // 2^21 + 15.5 * 2^15
            (2_616_900, 1_039, 2_605_056),
            // 5 ms: msb 22, e 16: base 1088, (5e6 >> 16 = 76) & 63 = 12; 2^22 + 12.5 * 2^16
            (5_000_000, 1_100, 5_013_504),
        ];
        for (value, index, represents) in cases {
            assert_eq!(plat_val_to_idx(value), index, "bin of {value}");
            assert_eq!(plat_idx_to_val(index), represents, "value of bin {index}");
        }
        // fio's 29 groups end at index 1855; the last value it bins exactly is 2^34 - 1.
        assert_eq!(plat_val_to_idx((1 << 34) - 1), 29 * 64 - 1);
        assert_eq!(plat_val_to_idx(u64::MAX), PLAT_NR - 1);
    }

    /// fio's bound: a bin's value is within 1/2^(PLAT_BITS + 1) of every value in it,
    /// and exact below 128 ns; bins are contiguous and rise with the value.
    #[test]
    fn every_value_is_within_fios_error_bound_of_its_bin() {
        let mut rng = Rng::new(7);
        let mut values: Vec<u64> = (0..4096).collect();
        values.extend((0..200_000).map(|_| {
            let bits = rng.below(45) as u32;
            (1u64 << bits) + rng.below(1u64 << bits)
        }));
        values.sort_unstable();
        let mut last = 0;
        for v in values.into_iter().filter(|&v| v < 1 << 45) {
            let i = plat_val_to_idx(v);
            assert!(i >= last, "bins fall at {v}");
            last = i;
            assert!(
                plat_idx_low(i) <= v && v < plat_idx_low(i + 1),
                "{v} outside bin {i}"
            );
            let err = plat_idx_to_val(i).abs_diff(v) as f64;
            if v < 128 {
                assert_eq!(err, 0.0, "{v} not exact");
            } else {
                assert!(err <= v as f64 / 128.0, "{v}: bin value off by {err}");
            }
        }
    }

    #[test]
    fn percentiles_are_fios_and_within_its_bound() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 100);
        }
        for p in [1.0, 50.0, 90.0, 99.0, 99.9, 99.9999] {
            // fio: the first bin where the running count reaches p % of the values.
            let rank = (p / 100.0 * 100_000.0_f64).ceil() as u64;
            let exact = rank * 100;
            let got = h.percentile_ns(p);
            assert_eq!(got, plat_idx_to_val(plat_val_to_idx(exact)).min(10_000_000));
            assert!(
                got.abs_diff(exact) as f64 <= exact as f64 / 128.0,
                "p{p}: {got}"
            );
        }
        assert_eq!(h.min_ns(), 100);
        assert_eq!(h.max_ns(), 10_000_000);
    }

    /// A constant latency is every percentile, exactly (fio would print the bin's
    /// midpoint, off by up to 0.78 %); percentiles never leave [min, max].
    #[test]
    fn percentiles_stay_within_min_and_max() {
        let mut h = Histogram::new();
        for _ in 0..1000 {
            h.record(2_616_900);
        }
        for p in [1.0, 50.0, 99.0, 99.99] {
            assert_eq!(h.percentile_ns(p), 2_616_900);
        }
        let mut rng = Rng::new(3);
        for case in 0..200 {
            let mut h = Histogram::new();
            let n = 1 + rng.below(500);
            let scale = 1 + rng.below(10_000_000);
            for _ in 0..n {
                h.record(rng.below(scale) + rng.below(scale) * (case % 3));
            }
            let mut last = h.min_ns();
            for p in [0.0, 1.0, 5.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0] {
                let v = h.percentile_ns(p);
                assert!(v >= last && v <= h.max_ns(), "case {case} p{p}: {v}");
                last = v;
            }
        }
    }
}
