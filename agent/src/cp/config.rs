//! The congestion point's configuration (`[cp]` of the agent's file).

use serde::{Deserialize, Serialize};

use crate::error::{as_f64, check, ConfigError};
use crate::link::{LinkConfig, PortLink};

/// The QCN congestion point (IEEE 802.1Qau; QCN.md "Congestion point"), `[cp]`: constants
/// relative to a port's buffer and line rate, so one file serves every link
/// ([`CpConfig::at`] gives one port's [`CpParams`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CpConfig {
    /// Qeq, the queue set point, as a fraction of the port's egress buffer. Default 0.33
    /// (802.1Qau's 26 000 octets is about a fifth of a 100-frame buffer). A lower set point
    /// tells a TCP queue eight streams fill from one a permutation fills sooner; a higher one
    /// fires less under uniform load in the simulator's 4 KB VC buffers (mininet/README.md
    /// "QCN-SW settings": 0.33 against 0.4, 0.5 and 0.75 on both).
    pub qeq_buffer_fraction: f64,
    /// w, the weight of the queue's growth Qδ in Fb = −(Qoff + w·Qδ). Default 2.
    pub w: f64,
    /// Sampling base in octets: the interval at QntzFb < 8. The table of 802.1Qau (150, 75, 50,
    /// 37.5, 30, 25, 21.5, 18.5 KB) is scaled by `sampling_base_bytes / 150 000`. Default
    /// 15 000: about ten full frames, a sample per ten frames of a port's traffic at low
    /// feedback, eight times more at the highest (802.1Qau samples every 100 frames; shallow
    /// buffers fill in fewer).
    pub sampling_base_bytes: u64,
    /// Relative randomisation of every sampling interval, ± this fraction. Default 0.15 (±15 %),
    /// to avoid synchronisation between congestion points. Must be in [0, 1). The emulated CP's
    /// kernel draw (`presample_scale`) randomises its intervals instead.
    pub sampling_jitter_fraction: f64,
    /// fabricflow's addition for loaded TCP fabrics, emulated CP only (off at the default 1; the
    /// simulator ignores it): a congested sample yields a CNM only if at least this many
    /// distinct hosts sent data frames through the port within the source window. TCP fills
    /// every bottleneck queue whatever the oversubscription, so Fb alone cannot tell a link a
    /// few sources fill from a many-to-one hot spot.
    pub min_sources: u32,
    /// The window of `min_sources`, in octets of line time. Default 300 000 (1 s at 2.4 Mb/s).
    /// The census sees the frames the CP samples, one per sampling interval (about 20 in a
    /// window of a busy port at the default base), so a source with a small share of the port
    /// may go uncounted.
    pub source_window_line_bytes: u64,
}

impl Default for CpConfig {
    fn default() -> Self {
        CpConfig {
            qeq_buffer_fraction: 0.33,
            w: 2.0,
            sampling_base_bytes: 15_000,
            sampling_jitter_fraction: 0.15,
            min_sources: 1,
            source_window_line_bytes: 300_000,
        }
    }
}

/// One port's congestion-point constants in octets, as [`CpConfig::at`] derives them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpParams {
    /// Qeq, octets (> 0).
    pub qeq_bytes: u64,
    /// w.
    pub w: f64,
    /// Sampling base, octets.
    pub sampling_base_bytes: u64,
    /// ± jitter of every interval.
    pub sampling_jitter_fraction: f64,
}

impl CpParams {
    /// IEEE 802.1Qau's constants (Qeq 26 000, w 2, base 150 000, ±15 %).
    pub fn standard() -> Self {
        CpParams {
            qeq_bytes: 26_000,
            w: 2.0,
            sampling_base_bytes: 150_000,
            sampling_jitter_fraction: 0.15,
        }
    }

    /// Checks every constant (Qeq·(2w+1) must stay far from u64/f64 trouble).
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(
            self.qeq_bytes > 0 && self.qeq_bytes <= 1 << 40,
            "cp.qeq_bytes",
            as_f64(self.qeq_bytes),
            "0 < Qeq ≤ 2^40",
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
        )
    }
}

impl CpConfig {
    /// The constants of a port with `link`.
    pub fn at(&self, link: PortLink) -> CpParams {
        CpParams {
            qeq_bytes: link
                .buffer_fraction_bytes(self.qeq_buffer_fraction)
                .min(1 << 40),
            w: self.w,
            sampling_base_bytes: self.sampling_base_bytes,
            sampling_jitter_fraction: self.sampling_jitter_fraction,
        }
    }

    /// The source window of a port with `link`, µs (at least 1).
    pub fn source_window_us(&self, link: PortLink) -> u64 {
        (link.line_time_ns(self.source_window_line_bytes) / 1_000).max(1)
    }

    /// Checks every constant.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(
            self.qeq_buffer_fraction.is_finite()
                && self.qeq_buffer_fraction > 0.0
                && self.qeq_buffer_fraction <= 1.0,
            "cp.qeq_buffer_fraction",
            self.qeq_buffer_fraction,
            "0 < Qeq/buffer ≤ 1",
        )?;
        CpParams {
            qeq_bytes: 1,
            ..self.at(LinkConfig::default().default_link())
        }
        .validate()?;
        check(
            self.min_sources >= 1,
            "cp.min_sources",
            f64::from(self.min_sources),
            "≥ 1 (1: every congested sample yields a CNM, as in 802.1Qau)",
        )?;
        check(
            self.source_window_line_bytes > 0 && self.source_window_line_bytes <= 1 << 40,
            "cp.source_window_line_bytes",
            as_f64(self.source_window_line_bytes),
            "0 < window ≤ 2^40",
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn port_constants_follow_the_link() {
        let c = CpConfig::default();
        let sim = PortLink {
            rate_bps: 40e9,
            buffer_bytes: 4096,
        };
        let emu = PortLink {
            rate_bps: 2.5e6,
            buffer_bytes: 151_400,
        };
        assert_eq!(c.at(sim).qeq_bytes, 1352);
        assert_eq!(c.at(emu).qeq_bytes, 49_962);
        assert_eq!(c.at(emu).sampling_base_bytes, c.sampling_base_bytes);
        assert_eq!(c.source_window_us(emu), 960_000);
        assert_eq!(c.source_window_us(sim), 60);
    }

    #[test]
    fn out_of_range_constants_are_refused() {
        assert!(CpConfig {
            sampling_jitter_fraction: 1.0,
            ..CpConfig::default()
        }
        .validate()
        .is_err());
        assert!(CpConfig {
            qeq_buffer_fraction: 0.0,
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
            source_window_line_bytes: 0,
            ..CpConfig::default()
        }
        .validate()
        .is_err());
    }
}
