//! A host I/O's latency in the cache tier: a hit's is a cache-array piece's, a miss's a
//! main-array piece's, so a direction's latency distribution is the mixture of its
//! pieces' distributions weighted by how many host I/Os each served.
//!
//! A piece's run reports its distribution as fio does (min, fio's percentiles, max,
//! mean); the mixture reads it as the piecewise-linear distribution through those
//! points, never the histogram's bins, and inverts the weighted sum of them. So the
//! composed figures are ordered (min <= p50 <= max) and a run of 90 % hits has a hit's
//! latency for its median.

use crate::results::{OpStats, PERCENTILES};
use std::collections::BTreeMap;

/// Steps of the bisection inverting the mixture: a range of at most 2^64 ns halved 96
/// times is far below a nanosecond.
const BISECTION_STEPS: u32 = 96;

/// Weighted latency distributions of pieces.
#[derive(Default)]
pub(super) struct Mixture<'a> {
    parts: Vec<(f64, &'a OpStats)>,
}

impl<'a> Mixture<'a> {
    /// Add a piece's distribution for `weight` host I/Os (ignored when either is nil).
    pub(super) fn add(&mut self, weight: f64, stats: &'a OpStats) {
        if weight > 0.0 && stats.ios > 0 {
            self.parts.push((weight, stats));
        }
    }

    /// Every part of `other` too.
    pub(super) fn extend(&mut self, other: &Mixture<'a>) {
        self.parts.extend(other.parts.iter().copied());
    }

    fn weight(&self) -> f64 {
        self.parts.iter().map(|p| p.0).sum()
    }

    /// The weighted mean of the parts' means.
    pub(super) fn mean_ns(&self) -> f64 {
        let sum: f64 = self.parts.iter().map(|(w, s)| w * s.lat_mean_ns).sum();
        sum / self.weight().max(f64::MIN_POSITIVE)
    }

    pub(super) fn min_ns(&self) -> u64 {
        self.parts.iter().map(|p| p.1.lat_min_ns).min().unwrap_or(0)
    }

    pub(super) fn max_ns(&self) -> u64 {
        self.parts.iter().map(|p| p.1.lat_max_ns).max().unwrap_or(0)
    }

    /// Share of the mixture at or below `x_ns`.
    fn cdf(&self, x_ns: f64) -> f64 {
        let sum: f64 = self.parts.iter().map(|(w, s)| w * part_cdf(s, x_ns)).sum();
        sum / self.weight().max(f64::MIN_POSITIVE)
    }

    /// The smallest latency at or below which `percent` of the mixture lies.
    pub(super) fn percentile_ns(&self, percent: f64) -> u64 {
        let (min, max) = (self.min_ns(), self.max_ns());
        let target = percent / 100.0;
        let (mut lo, mut hi) = (min as f64, max as f64);
        if self.cdf(lo) >= target {
            return min;
        }
        for _ in 0..BISECTION_STEPS {
            let mid = lo + (hi - lo) / 2.0;
            if self.cdf(mid) >= target {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        (hi.round() as u64).clamp(min, max)
    }

    /// fio's percentiles of the mixture, keyed as a run's are.
    pub(super) fn percentiles_ns(&self) -> BTreeMap<String, u64> {
        PERCENTILES
            .iter()
            .map(|(key, p)| (key.to_string(), self.percentile_ns(*p)))
            .collect()
    }
}

/// A piece's distribution at `x_ns`: linear between its reported points (min at 0, each
/// percentile at its share, max at 1); at a run of equal points, the last one's share.
fn part_cdf(s: &OpStats, x_ns: f64) -> f64 {
    let mut points: Vec<(f64, f64)> = Vec::with_capacity(PERCENTILES.len() + 2);
    points.push((s.lat_min_ns as f64, 0.0));
    for (key, p) in PERCENTILES {
        if let Some(&v) = s.percentiles_ns.get(key) {
            points.push((v as f64, p / 100.0));
        }
    }
    points.push((s.lat_max_ns as f64, 1.0));
    let Some(i) = points.iter().rposition(|&(v, _)| v <= x_ns) else {
        return 0.0;
    };
    let Some(&(v1, q1)) = points.get(i + 1) else {
        return 1.0;
    };
    let (v0, q0) = points[i];
    q0 + (q1 - q0) * (x_ns - v0) / (v1 - v0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(min: u64, p: u64, max: u64) -> OpStats {
        OpStats {
            ios: 100,
            bytes: 0,
            iops: 0.0,
            mbps: 0.0,
            lat_mean_ns: p as f64,
            lat_min_ns: min,
            lat_max_ns: max,
            percentiles_ns: PERCENTILES
                .iter()
                .map(|(k, q)| (k.to_string(), min + ((max - min) as f64 * q / 100.0) as u64))
                .collect(),
        }
    }

    #[test]
    fn one_part_keeps_its_own_percentiles() {
        let s = stats(100, 600, 1_100);
        let mut m = Mixture::default();
        m.add(7.0, &s);
        assert_eq!(m.percentiles_ns(), s.percentiles_ns);
        assert_eq!(m.mean_ns(), 600.0);
    }

    #[test]
    fn ninety_percent_hits_have_a_hits_median_under_the_mean() {
        let (hit, miss) = (stats(100, 150, 200), stats(5_000, 7_500, 10_000));
        let mut m = Mixture::default();
        m.add(90.0, &hit);
        m.add(10.0, &miss);
        let p50 = m.percentile_ns(50.0);
        assert!((100..=200).contains(&p50), "{p50}");
        assert!((p50 as f64) < m.mean_ns());
        assert!(m.min_ns() <= p50 && p50 <= m.max_ns());
        assert!(m.percentile_ns(95.0) >= 5_000);
    }
}
