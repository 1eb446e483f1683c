//! The congestion point's configuration (`[cp]` of the agent's file).

use serde::{Deserialize, Serialize};

use crate::error::{as_f64, check, ConfigError};

/// The QCN congestion point (IEEE 802.1Qau; QCN.md "Congestion point").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CpConfig {
    /// Qeq, the queue set point in octets. Default 26 000 (IEEE8021-CN-MIB). On an emulated
    /// fabric with queues of tens of packets scale it to the configured queue (e.g. 15 000 for a
    /// 50-packet qdisc of 1500-octet frames: a third of the queue).
    pub qeq_bytes: u64,
    /// w, the weight of the queue's growth Qδ in Fb = −(Qoff + w·Qδ). Default 2.
    pub w: f64,
    /// Sampling base in octets: the interval at QntzFb < 8. The table of 802.1Qau (150, 75, 50,
    /// 37.5, 30, 25, 21.5, 18.5 KB) is scaled by `sampling_base_bytes / 150 000`. Default 150 000.
    /// Scale it down with Qeq on an emulated fabric.
    pub sampling_base_bytes: u64,
    /// Relative randomisation of every sampling interval, ± this fraction. Default 0.15 (±15 %),
    /// to avoid synchronisation between congestion points. Must be in [0, 1).
    pub sampling_jitter_fraction: f64,
    /// fabricflow's addition for loaded TCP fabrics, emulated CP only (off at the default 1; the
    /// simulator ignores it): a congested sample yields a CNM only if at least this many
    /// distinct hosts sent data frames through the port within `source_window_us`. TCP fills
    /// every bottleneck queue whatever the oversubscription, so Fb alone cannot tell a link a
    /// few sources fill from a many-to-one hot spot. On a loaded fabric diverting the few
    /// mostly loads other full links; on an idle one it would pay, and the gate forgoes that.
    pub min_sources: u32,
    /// The window of `min_sources`, µs. Default 1 s: long enough for every active TCP source
    /// of a slow emulated link to show a frame.
    pub source_window_us: u64,
}

impl Default for CpConfig {
    fn default() -> Self {
        CpConfig {
            qeq_bytes: 26_000,
            w: 2.0,
            sampling_base_bytes: 150_000,
            sampling_jitter_fraction: 0.15,
            min_sources: 1,
            source_window_us: 1_000_000,
        }
    }
}

impl CpConfig {
    /// Checks every constant.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(
            self.qeq_bytes > 0,
            "cp.qeq_bytes",
            as_f64(self.qeq_bytes),
            "> 0",
        )?;
        // Qeq·(2w+1) must stay far from u64/f64 trouble: 1 TB is beyond any queue.
        check(
            self.qeq_bytes <= 1 << 40,
            "cp.qeq_bytes",
            as_f64(self.qeq_bytes),
            "≤ 2^40",
        )?;
        check(
            self.w.is_finite() && self.w > 0.0 && self.w <= 64.0,
            "cp.w",
            self.w,
            "0 < w ≤ 64",
        )?;
        check(
            self.sampling_base_bytes > 0 && self.sampling_base_bytes <= 1 << 40,
            "cp.sampling_base_bytes",
            as_f64(self.sampling_base_bytes),
            "0 < base ≤ 2^40",
        )?;
        check(
            self.sampling_jitter_fraction.is_finite()
                && (0.0..1.0).contains(&self.sampling_jitter_fraction),
            "cp.sampling_jitter_fraction",
            self.sampling_jitter_fraction,
            "0 ≤ jitter < 1",
        )?;
        check(
            self.min_sources >= 1,
            "cp.min_sources",
            f64::from(self.min_sources),
            "≥ 1 (1: every congested sample yields a CNM, as in 802.1Qau)",
        )?;
        check(
            self.source_window_us > 0 && self.source_window_us <= 3_600_000_000,
            "cp.source_window_us",
            as_f64(self.source_window_us),
            "0 < window ≤ 1 h",
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_constants_are_refused() {
        assert!(CpConfig {
            sampling_jitter_fraction: 1.0,
            ..CpConfig::default()
        }
        .validate()
        .is_err());
        assert!(CpConfig {
            qeq_bytes: 0,
            ..CpConfig::default()
        }
        .validate()
        .is_err());
        assert!(CpConfig {
            w: 0.0,
            ..CpConfig::default()
        }
        .validate()
        .is_err());
        assert!(CpConfig {
            min_sources: 0,
            ..CpConfig::default()
        }
        .validate()
        .is_err());
        assert!(CpConfig {
            source_window_us: 0,
            ..CpConfig::default()
        }
        .validate()
        .is_err());
    }
}
