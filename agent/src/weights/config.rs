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
    /// minimal port. Default 100 000 (20 µs at 40 Gb/s, 80 ms at 10 Mb/s): a new split lives
    /// about as long as a congested path's queue takes to drain — the RTT TCP needs to settle
    /// after a weight write re-hashes its flows (DESIGN §4) — and P's own faster dynamics are
    /// coalesced meanwhile.
    pub min_update_interval_line_bytes: u64,
    /// A floor on that interval, µs, for switches whose group rewrites cost more than the link
    /// rate suggests. Default 0.
    pub min_update_interval_floor_us: u64,
    /// A write is considered only when some bucket weight moves by at least this many quanta
    /// (1/255 each). Default 1: any change OVS can represent.
    pub min_change_quanta: u16,
    /// Per-group fixed intervals, overriding the two above.
    pub group_overrides: Vec<GroupOverride>,
}

impl Default for WeightsConfig {
    fn default() -> Self {
        WeightsConfig {
            min_update_interval_line_bytes: 100_000,
            min_update_interval_floor_us: 0,
            min_change_quanta: 1,
            group_overrides: vec![],
        }
    }
}

impl WeightsConfig {
    /// The minimum update interval of `group_id`, whose minimal port has `link`, in nanoseconds.
    pub fn min_update_interval_ns(&self, group_id: u32, link: PortLink) -> u64 {
        match self.group_overrides.iter().find(|o| o.group_id == group_id) {
            Some(o) => o.min_update_interval_us.saturating_mul(1_000),
            None => link
                .line_time_ns(self.min_update_interval_line_bytes)
                .max(self.min_update_interval_floor_us.saturating_mul(1_000)),
        }
    }

    /// Checks every constant.
    pub fn validate(&self) -> Result<(), ConfigError> {
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
