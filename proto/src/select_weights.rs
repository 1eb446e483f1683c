//! How a probability of minimal routing becomes OpenFlow SELECT bucket weights.
//!
//! The convention shared by the controller (initial weights) and the agent (updates):
//! bucket 0 is the minimal port; buckets 1..=n are the non-minimal candidates; a final
//! padding bucket of weight 1 (outputting to the minimal port) follows.
//!
//! Why 255 + 1: Open vSwitch apportions a SELECT group to `max(16, pow2(total/min_weight))`
//! dp_hash slots, at most 256; beyond that it silently falls back to a non-proportional method.
//! A weight-1 bucket makes `min_weight = 1`, so weights summing to exactly 256 map one weight
//! unit to one slot: the split is exact to 1/256. The padding bucket's 1/256 goes minimally.
//! These are the *logical* weights; [`crate::select_slots`] installs them as 256 slot buckets,
//! so that a change moves only the slots it must.

/// Sum of the weights of the minimal and non-minimal buckets (the padding bucket adds 1).
pub const WEIGHT_QUANTA: u16 = 255;
/// Weight of the padding bucket.
pub const PADDING_WEIGHT: u16 = 1;

/// Bucket weights for `p_minimal_percent` (clamped to 0..=100) and `n_nonminimal` candidates.
///
/// Returns `1 + n_nonminimal + 1` weights: minimal, candidates, padding. The non-minimal share
/// is split as evenly as integers allow, the remainder going to the first candidates, so the
/// result is deterministic. With no candidate, everything goes minimally.
pub fn weights(p_minimal_percent: f64, n_nonminimal: usize) -> Vec<u16> {
    weights_iter(p_minimal_percent, n_nonminimal).collect()
}

/// [`weights`] without allocating, for the hot path that only compares them.
pub fn weights_iter(
    p_minimal_percent: f64,
    n_nonminimal: usize,
) -> impl Iterator<Item = u16> + Clone {
    let minimal = minimal_weight(p_minimal_percent, n_nonminimal);
    let rest = WEIGHT_QUANTA - minimal;
    // n_nonminimal fits u16 in any real switch (ports are u32 but a switch has < 65536).
    let n = u16::try_from(n_nonminimal).unwrap_or(u16::MAX).max(1);
    let (each, extra) = (rest / n, rest % n);
    let candidates = (0..n_nonminimal).map(move |i| each + u16::from(i < usize::from(extra)));
    std::iter::once(minimal)
        .chain(candidates)
        .chain(std::iter::once(PADDING_WEIGHT))
}

/// Weight of bucket 0 for a probability; the quantity the agent compares to decide whether a
/// rewrite is worth it (a change of at least one quantum).
pub fn minimal_weight(p_minimal_percent: f64, n_nonminimal: usize) -> u16 {
    if n_nonminimal == 0 || !p_minimal_percent.is_finite() {
        return WEIGHT_QUANTA;
    }
    let p = p_minimal_percent.clamp(0.0, 100.0);
    // Round to nearest; f64 -> u16 via an explicit clamp, so no `as` overflow is possible.
    let w = (p / 100.0 * f64::from(WEIGHT_QUANTA)).round();
    w.clamp(0.0, f64::from(WEIGHT_QUANTA)) as u16
}

/// Bucket weights for a group whose ports are all minimal (equal-cost: a fat-tree's up ports),
/// one probability per port in bucket order: each port's share is its P over the sum of them,
/// so every P at 100 is an even split and a cut of P(c) moves traffic off c in every group c is
/// in. Largest remainders make the shares sum to exactly 255; the padding bucket follows. All P
/// at 0 (or not finite) is treated as all equal.
pub fn equal_cost_weights(p_percent: &[f64]) -> Vec<u16> {
    let clean = |p: f64| {
        if p.is_finite() {
            p.clamp(0.0, 100.0)
        } else {
            0.0
        }
    };
    let total: f64 = p_percent.iter().map(|&p| clean(p)).sum();
    let shares: Vec<f64> = if total > 0.0 {
        p_percent.iter().map(|&p| clean(p) / total).collect()
    } else {
        #[allow(clippy::cast_precision_loss)] // a group has far fewer than 2^52 buckets
        let n = p_percent.len().max(1) as f64;
        p_percent.iter().map(|_| 1.0 / n).collect()
    };
    let quanta = f64::from(WEIGHT_QUANTA);
    // Floors first (each below 255, so the casts are exact), then one quantum each to the
    // largest remainders, ties to the earlier bucket: deterministic.
    let mut w: Vec<u16> = shares.iter().map(|s| (s * quanta).floor() as u16).collect();
    let given: u16 = w.iter().sum();
    let mut order: Vec<usize> = (0..w.len()).collect();
    order.sort_by(|&a, &b| {
        let rem = |i: usize| {
            shares
                .get(i)
                .map_or(0.0, |s| s * quanta - (s * quanta).floor())
        };
        rem(b).total_cmp(&rem(a)).then(a.cmp(&b))
    });
    for &i in order
        .iter()
        .take(usize::from(WEIGHT_QUANTA.saturating_sub(given)))
    {
        if let Some(x) = w.get_mut(i) {
            *x += 1;
        }
    }
    if w.is_empty() {
        w.push(WEIGHT_QUANTA);
    }
    w.push(PADDING_WEIGHT);
    w
}

/// Probability of minimal routing (percent) that a set of weights encodes: the inverse of
/// [`weights`] up to one quantum (the padding bucket is excluded).
pub fn p_minimal_from_weights(w: &[u16]) -> Option<f64> {
    let (&minimal, rest) = w.split_first()?;
    let body = rest.split_last().map(|(_, b)| b).unwrap_or(&[]);
    let total: u32 = u32::from(minimal) + body.iter().map(|&x| u32::from(x)).sum::<u32>();
    if total == 0 {
        return None;
    }
    Some(f64::from(minimal) * 100.0 / f64::from(total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn exact_values() {
        assert_eq!(weights(100.0, 3), vec![255, 0, 0, 0, 1]);
        assert_eq!(weights(0.0, 3), vec![0, 85, 85, 85, 1]);
        assert_eq!(weights(50.0, 2), vec![128, 64, 63, 1]);
        assert_eq!(weights(37.0, 0), vec![255, 1]);
        assert_eq!(weights(f64::NAN, 2), vec![255, 0, 0, 1]);
        assert_eq!(weights(150.0, 1), vec![255, 0, 1]);
        assert_eq!(weights(-3.0, 1), vec![0, 255, 1]);
    }

    #[test]
    fn equal_cost_weights_are_proportional_to_p() {
        assert_eq!(equal_cost_weights(&[100.0; 4]), vec![64, 64, 64, 63, 1]);
        assert_eq!(
            equal_cost_weights(&[20.0, 100.0, 100.0, 100.0]),
            vec![16, 80, 80, 79, 1]
        );
        assert_eq!(equal_cost_weights(&[0.0, 0.0]), vec![128, 127, 1]);
        assert_eq!(equal_cost_weights(&[f64::NAN, 50.0]), vec![0, 255, 1]);
        assert_eq!(equal_cost_weights(&[]), vec![255, 1]);
    }

    proptest! {
        #[test]
        fn equal_cost_weights_sum_to_256(ps in proptest::collection::vec(0.0f64..=100.0, 1..40)) {
            let w = equal_cost_weights(&ps);
            prop_assert_eq!(w.len(), ps.len() + 1);
            prop_assert_eq!(w.iter().map(|&x| u32::from(x)).sum::<u32>(), 256);
            let total: f64 = ps.iter().sum();
            if total > 0.0 {
                for (p, &x) in ps.iter().zip(&w) {
                    prop_assert!((f64::from(x) - p / total * 255.0).abs() < 1.0);
                }
            }
        }

        #[test]
        fn sums_to_256_and_inverts(p in 0.0f64..=100.0, n in 0usize..64) {
            let w = weights(p, n);
            prop_assert_eq!(w.len(), n + 2);
            prop_assert_eq!(w.iter().map(|&x| u32::from(x)).sum::<u32>(), 256);
            prop_assert_eq!(*w.last().unwrap(), 1);
            let back = p_minimal_from_weights(&w).unwrap();
            if n > 0 {
                prop_assert!((back - p).abs() <= 100.0 / 255.0 / 2.0 + 1e-9);
            }
        }
    }
}
