//! A fixed-bucket latency histogram, the agent's CNM → GROUP_MOD reaction time as operators see
//! it (`fabricflow_agent_cnm_to_group_mod_seconds`). Pure: the shell measures, this counts.

use serde::Serialize;

/// Upper bounds of the buckets, seconds: 10 µs to 1 s (then `+Inf`). The agent's own processing
/// is a few µs; the rest is the scheduling of its task and, with the default minimum update
/// interval, the interval a deferred write waits for.
pub const LATENCY_BUCKETS_S: [f64; 15] = [
    10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3,
    250e-3, 1.0,
];

/// Counts of latencies per bucket of [`LATENCY_BUCKETS_S`].
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct LatencyHistogram {
    /// Per bucket (not cumulative), then `+Inf`.
    pub buckets: [u64; LATENCY_BUCKETS_S.len() + 1],
    /// Sum of the observed latencies, seconds.
    pub sum_s: f64,
    /// Observations.
    pub count: u64,
}

impl LatencyHistogram {
    /// Counts one latency of `ns` nanoseconds.
    #[allow(clippy::cast_precision_loss)] // ns below 2^52 (52 days) are exact
    pub fn observe_ns(&mut self, ns: u64) {
        let s = ns as f64 / 1e9;
        let i = LATENCY_BUCKETS_S
            .iter()
            .position(|&b| s <= b)
            .unwrap_or(LATENCY_BUCKETS_S.len());
        if let Some(n) = self.buckets.get_mut(i) {
            *n = n.saturating_add(1);
        }
        self.sum_s += s;
        self.count = self.count.saturating_add(1);
    }

    /// `(upper bound, count)` per bucket, `+Inf` as `f64::MAX` (prometheus-client's
    /// convention; counts per bucket, the encoder accumulates them).
    pub fn bounds(&self) -> Vec<(f64, u64)> {
        LATENCY_BUCKETS_S
            .iter()
            .copied()
            .chain(std::iter::once(f64::MAX))
            .zip(self.buckets.iter().copied())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_into_the_first_bucket_that_holds_it() {
        let mut h = LatencyHistogram::default();
        for ns in [5_000, 10_000, 10_001, 700_000, 2_000_000_000] {
            h.observe_ns(ns);
        }
        assert_eq!(h.count, 5);
        assert_eq!(h.buckets[0], 2, "≤ 10 µs, the bound included");
        assert_eq!(h.buckets[1], 1, "≤ 25 µs");
        assert_eq!(h.buckets[6], 1, "≤ 1 ms");
        assert_eq!(h.buckets[15], 1, "+Inf");
        assert!((h.sum_s - 2.000_725_001).abs() < 1e-12);
        let b = h.bounds();
        assert_eq!(b.len(), 16);
        assert_eq!(b[15], (f64::MAX, 1));
    }
}
