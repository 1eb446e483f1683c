//! What a port's constants are scaled by: its line rate and its egress buffer.
//!
//! The policy's, the weight planner's and the congestion point's constants are written once, in
//! units that mean the same on every link: octets (the byte limit, the sampling base), octets of
//! line time (Fb ageing, the idle timer, the write interval, the source window: "as long as the
//! port needs to send N octets") and a fraction of the port's buffer (Qeq). Per port they become
//! nanoseconds and octets through that port's [`PortLink`], so one configuration file serves a
//! 40 Gb/s simulated fabric and a 2.5 Mb/s emulated one (DESIGN §5 "Rate-relative constants").
//!
//! Where a port's link comes from, first found wins: `[link]`'s overrides, a `[[switch]] ports`
//! entry of the agent's file (the harness states the shaping it applied), the switch's own
//! OFPMP_PORT_DESC `curr_speed`, then `[link]`'s defaults.

use serde::{Deserialize, Serialize};

use crate::error::{check, ConfigError};

/// One port's line rate and egress buffer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PortLink {
    /// Line rate, bits per second (> 0).
    pub rate_bps: f64,
    /// Egress buffer, octets (> 0): what Qeq is a fraction of.
    pub buffer_bytes: u64,
}

impl PortLink {
    /// Nanoseconds the port needs to send `bytes` at its line rate (saturating).
    pub fn line_time_ns(&self, bytes: u64) -> u64 {
        #[allow(clippy::cast_precision_loss)] // octets of line time are far below 2^52
        let ns = bytes as f64 * 8e9 / self.rate_bps;
        if ns.is_finite() && ns >= 0.0 {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let v = ns.round().min(u64::MAX as f64) as u64;
            v
        } else {
            u64::MAX
        }
    }

    /// `fraction` of the buffer, in octets (at least 1).
    pub fn buffer_fraction_bytes(&self, fraction: f64) -> u64 {
        #[allow(clippy::cast_precision_loss)]
        let b = self.buffer_bytes as f64 * fraction;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let v = b.round().clamp(1.0, u64::MAX as f64) as u64;
        v
    }
}

/// Every port's link: those stated, and a default for the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct PortLinks {
    default: PortLink,
    stated: Vec<(crate::PortNo, PortLink)>,
}

impl PortLinks {
    /// `default` for every port but those in `stated`.
    pub fn new(default: PortLink, stated: Vec<(crate::PortNo, PortLink)>) -> Self {
        PortLinks { default, stated }
    }

    /// The link of `port`.
    pub fn get(&self, port: crate::PortNo) -> PortLink {
        self.stated
            .iter()
            .find(|(q, _)| *q == port)
            .map_or(self.default, |&(_, l)| l)
    }
}

impl Default for PortLinks {
    fn default() -> Self {
        PortLinks::new(LinkConfig::default().default_link(), Vec::new())
    }
}

/// `[link]` of the agent's file: the link of a port nothing else describes, and overrides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkConfig {
    /// Rate of a port whose switch reports none (`curr_speed` 0), Mb/s. Default 10 000.
    pub default_rate_mbps: f64,
    /// Buffer of a port nothing describes, octets. Default 150 000 (100 full frames; a typical
    /// shallow-buffer switch's per-port share).
    pub default_buffer_bytes: u64,
    /// Every port's rate, Mb/s, overriding everything else (absent = per port: stated, else
    /// reported, else the default).
    pub rate_mbps: Option<f64>,
    /// Every port's buffer, octets, overriding everything else (absent = stated, else default).
    pub buffer_bytes: Option<u64>,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            default_rate_mbps: 10_000.0,
            default_buffer_bytes: 150_000,
            rate_mbps: None,
            buffer_bytes: None,
        }
    }
}

/// One port's link as the harness or an operator states it (`[[switch]] ports`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortLinkConfig {
    /// OpenFlow port number.
    pub port: u32,
    /// Line rate, Mb/s (the shaping applied to the port's egress).
    pub rate_mbps: Option<f64>,
    /// Egress buffer, octets.
    pub buffer_bytes: Option<u64>,
}

impl LinkConfig {
    /// The link of a port: the `[link]` overrides over `stated` (a `[[switch]] ports` entry)
    /// over `reported_rate_bps` (the switch's `curr_speed`, 0 = unknown) over the defaults.
    pub fn resolve(&self, stated: Option<&PortLinkConfig>, reported_rate_bps: u64) -> PortLink {
        let mbps = self
            .rate_mbps
            .or_else(|| stated.and_then(|s| s.rate_mbps))
            .map(|m| m * 1e6);
        #[allow(clippy::cast_precision_loss)]
        let reported = (reported_rate_bps > 0).then_some(reported_rate_bps as f64);
        let rate_bps = mbps.or(reported).unwrap_or(self.default_rate_mbps * 1e6);
        let buffer_bytes = self
            .buffer_bytes
            .or_else(|| stated.and_then(|s| s.buffer_bytes))
            .unwrap_or(self.default_buffer_bytes);
        PortLink {
            rate_bps,
            buffer_bytes,
        }
    }

    /// The link of a port nothing describes.
    pub fn default_link(&self) -> PortLink {
        self.resolve(None, 0)
    }

    /// Checks every constant.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let rate_ok = |m: f64| m.is_finite() && m > 0.0 && m <= 1e7;
        check(
            rate_ok(self.default_rate_mbps),
            "link.default_rate_mbps",
            self.default_rate_mbps,
            "0 < rate ≤ 10 000 000 Mb/s",
        )?;
        if let Some(m) = self.rate_mbps {
            check(
                rate_ok(m),
                "link.rate_mbps",
                m,
                "0 < rate ≤ 10 000 000 Mb/s",
            )?;
        }
        for (key, b) in [
            ("link.default_buffer_bytes", Some(self.default_buffer_bytes)),
            ("link.buffer_bytes", self.buffer_bytes),
        ] {
            if let Some(b) = b {
                #[allow(clippy::cast_precision_loss)]
                check(b > 0 && b <= 1 << 40, key, b as f64, "0 < buffer ≤ 2^40")?;
            }
        }
        Ok(())
    }
}

impl PortLinkConfig {
    /// Checks the entry.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(m) = self.rate_mbps {
            check(
                m.is_finite() && m > 0.0 && m <= 1e7,
                "switch.ports.rate_mbps",
                m,
                "0 < rate ≤ 10 000 000 Mb/s",
            )?;
        }
        if let Some(b) = self.buffer_bytes {
            #[allow(clippy::cast_precision_loss)]
            check(
                b > 0 && b <= 1 << 40,
                "switch.ports.buffer_bytes",
                b as f64,
                "0 < buffer ≤ 2^40",
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn line_time_is_octets_at_the_rate() {
        let l = PortLink {
            rate_bps: 40e9,
            buffer_bytes: 4096,
        };
        assert_eq!(l.line_time_ns(100_000), 20_000);
        let slow = PortLink {
            rate_bps: 2.5e6,
            buffer_bytes: 151_400,
        };
        assert_eq!(slow.line_time_ns(100_000), 320_000_000);
        assert_eq!(slow.buffer_fraction_bytes(1.0 / 3.0), 50_467);
        assert_eq!(slow.buffer_fraction_bytes(0.0), 1);
    }

    #[test]
    fn resolve_prefers_override_then_stated_then_reported_then_default() {
        let mut c = LinkConfig::default();
        let stated = PortLinkConfig {
            port: 1,
            rate_mbps: Some(2.5),
            buffer_bytes: Some(1000),
        };
        assert_eq!(c.resolve(Some(&stated), 10_000_000).rate_bps, 2.5e6);
        assert_eq!(c.resolve(Some(&stated), 0).buffer_bytes, 1000);
        assert_eq!(c.resolve(None, 1_000_000_000).rate_bps, 1e9);
        assert_eq!(c.resolve(None, 0).rate_bps, 1e10);
        assert_eq!(c.resolve(None, 0).buffer_bytes, 150_000);
        c.rate_mbps = Some(5.0);
        c.buffer_bytes = Some(7);
        assert_eq!(c.resolve(None, 1_000_000_000).rate_bps, 5e6);
        assert_eq!(c.resolve(Some(&stated), 0).rate_bps, 5e6);
        assert_eq!(c.resolve(Some(&stated), 0).buffer_bytes, 7);
    }

    #[test]
    fn validation_rejects_nonsense() {
        LinkConfig::default().validate().unwrap();
        for c in [
            LinkConfig {
                default_rate_mbps: 0.0,
                ..LinkConfig::default()
            },
            LinkConfig {
                rate_mbps: Some(f64::NAN),
                ..LinkConfig::default()
            },
            LinkConfig {
                buffer_bytes: Some(0),
                ..LinkConfig::default()
            },
        ] {
            assert!(c.validate().is_err(), "{c:?}");
        }
    }
}
