//! Update policies: how one increase and one decrease change P.
//!
//! | policy | increase (one step)          | decrease by an amount `a` (QntzFb, or Fb − Fb_avg) |
//! |--------|------------------------------|----------------------------------------------------|
//! | AIMD   | P ← P + step                 | P ← P·(1 − Gd·a)                                   |
//! | AIAD   | P ← P + step                 | P ← P − AD·a                                       |
//! | MIMD   | P ← P·(1 + x)                | P ← P·(1 − Gd·a)                                   |
//! | MIAD   | P ← P·(1 + x)                | P ← P − AD·a                                       |
//!
//! then P is clamped to [Pmin, 100]. `step` = `increase_step_percent` (percentage points),
//! `x` = `mi_increase_fraction`, `Gd` = `gd`, `AD` = `ad_percent_per_fb` (percentage points per
//! QntzFb unit).
//!
//! FOGSim (v5, `switchModule::qcnMinProbabilityDecrease`, the RP timer block and
//! `qcnFeedbackComparison`) implements the same four: AI adds `g_qcn_r_ai`, MI multiplies by
//! `g_qcn_r_ai` (so its MI factor is 1 + x here), MD multiplies by `1 − g_qcn_gd·Fb` and AD
//! subtracts `g_qcn_gd·Fb` percentage points. The one deliberate difference: AD here has its own
//! constant instead of reusing Gd (whose additive effect, at most 0.49 points per CNM, is too small
//! to matter); `ad_percent_per_fb = gd` reproduces FOGSim.

use serde::{Deserialize, Serialize};

use super::PolicyConfig;

/// Upper bound of P, percent.
pub const P_MAX_PERCENT: f64 = 100.0;

/// How P is increased and decreased.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpdatePolicy {
    /// Additive increase, multiplicative decrease: the published default.
    #[default]
    Aimd,
    /// Additive increase, additive decrease.
    Aiad,
    /// Multiplicative increase, multiplicative decrease.
    Mimd,
    /// Multiplicative increase, additive decrease.
    Miad,
}

impl UpdatePolicy {
    /// All policies, for sweeps and tests.
    pub const ALL: [UpdatePolicy; 4] = [
        UpdatePolicy::Aimd,
        UpdatePolicy::Aiad,
        UpdatePolicy::Mimd,
        UpdatePolicy::Miad,
    ];

    /// Whether an increase multiplies P (MIMD, MIAD) rather than adding to it.
    pub fn multiplicative_increase(self) -> bool {
        matches!(self, UpdatePolicy::Mimd | UpdatePolicy::Miad)
    }

    /// Whether a decrease multiplies P (AIMD, MIMD) rather than subtracting from it.
    pub fn multiplicative_decrease(self) -> bool {
        matches!(self, UpdatePolicy::Aimd | UpdatePolicy::Mimd)
    }
}

/// The constants of one validated [`PolicyConfig`], ready for the hot path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rates {
    policy: UpdatePolicy,
    gd: f64,
    ad: f64,
    step: f64,
    mi_factor: f64,
    pub(crate) p_min: f64,
}

impl Rates {
    pub(crate) fn new(cfg: &PolicyConfig) -> Self {
        Rates {
            policy: cfg.update,
            gd: cfg.gd,
            ad: cfg.ad_percent_per_fb,
            step: cfg.increase_step_percent,
            mi_factor: 1.0 + cfg.mi_increase_fraction,
            p_min: cfg.p_min_percent,
        }
    }

    fn clamp(&self, p: f64) -> f64 {
        // `max` then `min` (not `clamp`) so that a NaN could never survive; none can arise from a
        // validated configuration, but the invariant P ∈ [Pmin, 100] must hold unconditionally.
        if p.is_nan() {
            return self.p_min;
        }
        p.max(self.p_min).min(P_MAX_PERCENT)
    }

    /// `n` consecutive increases.
    pub(crate) fn increase(&self, p: f64, n: u64) -> f64 {
        if n == 0 {
            return self.clamp(p);
        }
        #[allow(clippy::cast_precision_loss)] // n ≤ 2^53 in any real run; beyond, P is 100 anyway
        let nf = n as f64;
        let raised = if self.policy.multiplicative_increase() {
            // (1 + x)^n overflows to +inf for huge n; the clamp turns that into 100.
            p * self.mi_factor.powf(nf)
        } else {
            p + self.step * nf
        };
        self.clamp(raised)
    }

    /// One decrease by `amount` QntzFb units (a CNM's QntzFb, or Fb − Fb_avg).
    pub(crate) fn decrease(&self, p: f64, amount: f64) -> f64 {
        let lowered = if self.policy.multiplicative_decrease() {
            p * (1.0 - self.gd * amount)
        } else {
            p - self.ad * amount
        };
        self.clamp(lowered)
    }
}
