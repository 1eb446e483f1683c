//! The weight planner's configuration (`[weights]` of the agent's file).

use serde::{Deserialize, Serialize};

use crate::error::{check, ConfigError};
use crate::link::PortLink;

/// When a changed probability is written as new bucket weights (DESIGN §4: an OVS weight MODIFY
/// rebuilds the dp_hash table and moves many flows, so writes must be few and meaningful).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WeightsConfig {
    /// Minimum time between two writes of one group, in octets of line time of the group's
    /// minimal port. Default 100 000 (20 µs at 40 Gb/s, 80 ms at 10 Mb/s); P's own faster
    /// dynamics are coalesced meanwhile. The interval is the larger of this and the next.
    pub min_update_interval_line_bytes: u64,
    /// Minimum time between two writes of one group, in drain times of its minimal port's
    /// buffer. A write re-hashes flows (DESIGN §4) and a moved TCP flow needs some round trips
    /// to regrow its window; a congested flow's round trip is dominated by that queue's drain
    /// time, so the interval must follow the buffer as well as the rate. Default 24: equal to the
    /// line-time term on the simulator's 4 KB VC buffers, 11.6 s on a 1.25 Mb/s port with 50
    /// full frames of queue (mininet/README.md "The weight-write interval").
    pub min_update_interval_buffer_drains: f64,
    /// A floor on that interval, µs, for switches whose group rewrites cost more than the link
    /// rate suggests. Default 0.
    pub min_update_interval_floor_us: u64,
    /// Deferred writes leave on a grid: instants that are multiples of this fraction of the
    /// shortest write interval among the switch's groups (on the agent's clock, shared by every
    /// switch one agent serves). Open vSwitch re-translates every datapath flow after a group
    /// MODIFY, once per batch of MODIFYs that arrive together; writes released one by one as
    /// each group's interval ends cost one such pass each (mininet/README.md "Writes on a
    /// grid"). A deferred write waits at most this fraction of its interval more. Default 0.25;
    /// 0 = off (each group's write leaves when its own interval ends).
    pub write_grid_fraction: f64,
    /// A write is considered only when some bucket weight moves by at least this many quanta
    /// (1/255 each). Default 1: any change OVS can represent.
    pub min_change_quanta: u16,
    /// Which probability a write carries: P's time-weighted mean since the group's last write,
    /// or the latest P. Default `interval-mean` (mininet/README.md "The written P").
    pub written_p: WrittenP,
    /// Per-group fixed intervals, overriding the two above.
    pub group_overrides: Vec<GroupOverride>,
}

/// The probability a group write carries (`weights.written_p`).
///
/// P moves on every CNM and every byte limit, far faster than a group may be rewritten; the
/// latest value is one sample of that swing, so successive writes can jump between P's floor
/// and 100 % although the swing's mean stays put. The mean over the interval is the share the
/// policy asked for during it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WrittenP {
    /// The probability at the moment of the write.
    Latest,
    /// The time-weighted mean of P since the last write (the latest P for a group's first
    /// write, which has no interval behind it).
    #[default]
    IntervalMean,
}

impl Default for WeightsConfig {
    fn default() -> Self {
        WeightsConfig {
            min_update_interval_line_bytes: 100_000,
            min_update_interval_buffer_drains: 24.0,
            min_update_interval_floor_us: 0,
            min_change_quanta: 1,
            write_grid_fraction: 0.25,
            written_p: WrittenP::IntervalMean,
            group_overrides: vec![],
        }
    }
}

impl WeightsConfig {
    /// The minimum update interval of `group_id`, whose minimal port has `link`, in nanoseconds.
    pub fn min_update_interval_ns(&self, group_id: u32, link: PortLink) -> u64 {
        self.interval_ns(group_id, link, self.drain_interval_ns(link))
    }

    /// The minimum update interval of a group that carries one switch pair's flows (DRB's path
    /// groups), in nanoseconds: the line-time term and the floor without the drain term. A
    /// rewrite moves only that pair's few flows, not every destination's behind a port, and on
    /// Mininet the drain term cost DRB 1.26× → 1.18× the throttled baseline (mininet/README.md
    /// "DRB results").
    pub fn pair_update_interval_ns(&self, group_id: u32, link: PortLink) -> u64 {
        self.interval_ns(group_id, link, 0)
    }

    /// A group's override, else the longest of the line-time term, `drain_ns` and the floor.
    fn interval_ns(&self, group_id: u32, link: PortLink, drain_ns: u64) -> u64 {
        match self.group_overrides.iter().find(|o| o.group_id == group_id) {
            Some(o) => o.min_update_interval_us.saturating_mul(1_000),
            None => link
                .line_time_ns(self.min_update_interval_line_bytes)
                .max(drain_ns)
                .max(self.min_update_interval_floor_us.saturating_mul(1_000)),
        }
    }

    /// `min_update_interval_buffer_drains` drain times of `link`'s buffer (0 when it is 0).
    fn drain_interval_ns(&self, link: PortLink) -> u64 {
        if self.min_update_interval_buffer_drains > 0.0 {
            link.line_time_ns(link.buffer_fraction_bytes(self.min_update_interval_buffer_drains))
        } else {
            0
        }
    }

    /// Checks every constant.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(
            self.min_update_interval_buffer_drains.is_finite()
                && self.min_update_interval_buffer_drains >= 0.0,
            "weights.min_update_interval_buffer_drains",
            self.min_update_interval_buffer_drains,
            "a finite number ≥ 0",
        )?;
        check(
            (0.0..=1.0).contains(&self.write_grid_fraction),
            "weights.write_grid_fraction",
            self.write_grid_fraction,
            "0 ≤ write_grid_fraction ≤ 1",
        )?;
        check(
            (1..=fabricflow_proto::select_weights::WEIGHT_QUANTA).contains(&self.min_change_quanta),
            "weights.min_change_quanta",
            f64::from(self.min_change_quanta),
            "1 ≤ min_change_quanta ≤ 255",
        )?;
        let mut ids: Vec<u32> = self.group_overrides.iter().map(|o| o.group_id).collect();
        ids.sort_unstable();
        if ids.windows(2).any(|w| w.first() == w.get(1)) {
            return Err(ConfigError::Inconsistent(
                "weights.group_overrides lists a group twice",
            ));
        }
        Ok(())
    }
}

/// A group whose minimum update interval differs from the default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupOverride {
    /// OpenFlow group id.
    pub group_id: u32,
    /// Minimum time between two writes of this group, µs.
    pub min_update_interval_us: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_the_longer_of_line_time_and_buffer_drains() {
        let w = WeightsConfig::default();
        // The simulator's port: 40 Gb/s, one 4 KB VC buffer: the line-time term (20 µs) wins.
        let sim = PortLink {
            rate_bps: 40e9,
            buffer_bytes: 4096,
        };
        assert_eq!(w.min_update_interval_ns(1, sim), 20_000);
        // Mininet's 1.25 Mb/s port with 50 full frames: 24 drains of 75 700 octets.
        let mn = PortLink {
            rate_bps: 1.25e6,
            buffer_bytes: 75_700,
        };
        assert_eq!(w.min_update_interval_ns(1, mn), 24 * 75_700 * 8 * 800);
        // A switch pair's group (DRB): the line-time term only.
        assert_eq!(w.pair_update_interval_ns(1, mn), 100_000 * 8 * 800);
        let off = WeightsConfig {
            min_update_interval_line_bytes: 0,
            min_update_interval_buffer_drains: 0.0,
            ..WeightsConfig::default()
        };
        assert_eq!(off.min_update_interval_ns(1, mn), 0);
        let bad = WeightsConfig {
            min_update_interval_buffer_drains: f64::NAN,
            ..WeightsConfig::default()
        };
        assert!(bad.validate().is_err());
    }

    #[test]
    fn zero_change_quanta_is_refused() {
        assert!(WeightsConfig {
            min_change_quanta: 0,
            ..WeightsConfig::default()
        }
        .validate()
        .is_err());
    }

    #[test]
    fn duplicate_override_is_refused() {
        let o = GroupOverride {
            group_id: 7,
            min_update_interval_us: 1,
        };
        let w = WeightsConfig {
            group_overrides: vec![o.clone(), o],
            ..WeightsConfig::default()
        };
        assert!(matches!(w.validate(), Err(ConfigError::Inconsistent(_))));
    }
}
