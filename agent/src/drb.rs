//! DRB (dynamic routing balancing) at a source switch: per destination switch, open more of the
//! controller's link-disjoint paths as congestion notifications for the pair accumulate, spread
//! new flows over the open paths in inverse proportion to each path's notifications, and close
//! the paths again one by one when notifications stop.
//!
//! A pure state machine like [`crate::policy::Policy`]: events and the time in, bucket weights
//! out. The paths come from the controller's multipath plan (controller `plan::paths`): path 0
//! is the untagged minimal route, path i ≥ 1 carries i in byte 1 of the destination MAC, so a
//! CNM's encapsulated destination names both the destination switch (group byte 3, switch byte
//! 4 of `02:ii:ss:GG:SS:HH`) and the exact path its culprit took.
//!
//! # Semantics (seed: Dynamic Routing Balancing for InfiniBand)
//! - **Charge:** a notification about path i of the pair to destination d adds 1 to B_i(d) (the
//!   path's notification count) and 1 to N(d), the pair's count since its last opening.
//! - **Open:** when N(d) reaches `notifications_per_path` (the seed's 10) and fewer than
//!   1 + `max_alternatives` paths are open (and the plan has another path), path number `open`
//!   opens and N(d) restarts at 0. Paths open in index order, which is the controller's
//!   shortest-first order.
//! - **Weights:** open path i gets a share ∝ 1/(B_i + 1). The seed's p(C_x) ∝ 1/B_x is undefined
//!   for a path without notifications; counting one more notification on every path keeps the
//!   ratio finite, gives a fresh path the largest share (it has shown no congestion) and equals
//!   the seed's rule as counts grow. The shares are quantised to 255 quanta (largest remainder,
//!   ties to the lower index) over the open paths; closed paths get 0; a last weight-1 padding
//!   bucket (path 0) makes the sum 256, as every fabricflow SELECT group (DESIGN §4).
//! - **Close:** when no notification for the pair arrived for a whole quiet period (the seed's
//!   100 µs), the [`Drb::tick`] closes the highest open path and halves every B_i (rounding
//!   down), and the next period starts; so paths close gradually back to the original one,
//!   whose counts then fade to 0.
//! - Notifications about an unknown pair or a path the plan does not have are counted and
//!   ignored; a path that is closed but still carries traffic is charged as usual.

use std::collections::BTreeMap;

use fabricflow_proto::MacAddr;
use serde::{Deserialize, Serialize};

use crate::error::{check, ConfigError};

/// Most alternatives per pair (the seed's 4; the controller plans at most this many).
pub const MAX_ALTERNATIVES: u8 = 4;
/// Weight quanta shared by the open paths (the padding bucket holds the 256th).
pub const QUANTA: u16 = 255;

/// DRB's constants (`[policy.drb]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DrbConfig {
    /// Notifications for a pair that open its next path. Default 10 (the seed).
    pub notifications_per_path: u32,
    /// Most alternative paths open at once, 0..=4. Default 4 (the seed).
    pub max_alternatives: u8,
    /// The quiet timer, in octets of line time: a pair without notification for as long as the
    /// switch's port needs to send this many octets closes one path. Default 500 000: the seed's
    /// 100 µs at the simulator's 40 Gb/s (0.4 s at 10 Mb/s). Must be > 0.
    pub quiet_line_bytes: u64,
}

impl Default for DrbConfig {
    fn default() -> Self {
        DrbConfig {
            notifications_per_path: 10,
            max_alternatives: MAX_ALTERNATIVES,
            quiet_line_bytes: 500_000,
        }
    }
}

impl DrbConfig {
    /// Checks every constant's range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(
            self.notifications_per_path >= 1,
            "policy.drb.notifications_per_path",
            f64::from(self.notifications_per_path),
            ">= 1",
        )?;
        check(
            self.max_alternatives <= MAX_ALTERNATIVES,
            "policy.drb.max_alternatives",
            f64::from(self.max_alternatives),
            "0..=4",
        )?;
        check(
            self.quiet_line_bytes > 0,
            "policy.drb.quiet_line_bytes",
            crate::error::as_f64(self.quiet_line_bytes),
            "> 0",
        )
    }
}

/// A destination switch as the multipath plan's MACs name it: (group, switch index), both
/// bytes (multipath plans need every group below 256).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct DstSwitch {
    pub group: u8,
    pub index: u8,
}

impl DstSwitch {
    /// The destination switch and path index a (possibly tagged) destination MAC names;
    /// `None` outside the `02:…` plan.
    pub fn of_mac(mac: MacAddr) -> Option<(DstSwitch, u8)> {
        let [a, path, _tag, group, index, _host] = mac.octets();
        (a == 0x02).then_some((DstSwitch { group, index }, path))
    }
}

#[derive(Debug, Clone)]
struct Pair {
    /// Paths the plan installed (1 + alternatives).
    available: u8,
    /// Paths open now (1..=available, at most 1 + max_alternatives).
    open: u8,
    /// Notifications per path.
    b: Vec<u32>,
    /// Notifications since the last opening.
    since_open: u32,
    /// Start of the current quiet period.
    quiet_from_ns: u64,
    /// The weights last computed, one per path (without the padding bucket).
    weights: Vec<u16>,
}

impl Pair {
    fn new(available: u8, now_ns: u64) -> Pair {
        let n = usize::from(available);
        let mut p = Pair {
            available,
            open: 1,
            b: vec![0; n],
            since_open: 0,
            quiet_from_ns: now_ns,
            weights: vec![0; n],
        };
        p.weights = p.compute_weights();
        p
    }

    /// Shares ∝ 1/(B+1) over the open paths, quantised to [`QUANTA`].
    fn compute_weights(&self) -> Vec<u16> {
        let open = usize::from(self.open).min(self.b.len());
        let inv: Vec<f64> = self
            .b
            .iter()
            .take(open)
            .map(|&b| 1.0 / (f64::from(b) + 1.0))
            .collect();
        let total: f64 = inv.iter().sum();
        let mut out = vec![0u16; self.b.len()];
        if total <= 0.0 {
            return out;
        }
        let exact: Vec<f64> = inv.iter().map(|x| x / total * f64::from(QUANTA)).collect();
        let mut given: u16 = 0;
        for (o, e) in out.iter_mut().zip(&exact) {
            // 0 ≤ e ≤ 255, so the cast cannot truncate anything but the fraction.
            *o = e.floor() as u16;
            given += *o;
        }
        // Largest remainder, ties to the lower index.
        let mut order: Vec<usize> = (0..exact.len()).collect();
        order.sort_by(|&i, &j| {
            let ri = exact.get(i).map_or(0.0, |e| e - e.floor());
            let rj = exact.get(j).map_or(0.0, |e| e - e.floor());
            rj.total_cmp(&ri).then(i.cmp(&j))
        });
        for i in order
            .into_iter()
            .take(usize::from(QUANTA.saturating_sub(given)))
        {
            if let Some(o) = out.get_mut(i) {
                *o += 1;
            }
        }
        out
    }
}

/// Counters (monotonic).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DrbCounters {
    /// Notifications charged to a path.
    pub charged: u64,
    /// Notifications about a pair or path the plan does not have.
    pub ignored: u64,
    /// Paths opened.
    pub opened: u64,
    /// Paths closed by the quiet timer.
    pub closed: u64,
}

/// DRB at one source switch.
#[derive(Debug, Clone)]
pub struct Drb {
    cfg: DrbConfig,
    quiet_ns: u64,
    pairs: BTreeMap<DstSwitch, Pair>,
    counters: DrbCounters,
}

impl Drb {
    /// DRB with `cfg`; the quiet period is `quiet_ns` (the caller turns
    /// `quiet_line_bytes` into time with the port's line rate).
    pub fn new(cfg: DrbConfig, quiet_ns: u64) -> Result<Drb, ConfigError> {
        cfg.validate()?;
        Ok(Drb {
            cfg,
            quiet_ns: quiet_ns.max(1),
            pairs: BTreeMap::new(),
            counters: DrbCounters::default(),
        })
    }

    /// The quiet period, ns.
    pub fn quiet_ns(&self) -> u64 {
        self.quiet_ns
    }

    /// Changes the quiet period (a port's link became known).
    pub fn set_quiet_ns(&mut self, quiet_ns: u64) {
        self.quiet_ns = quiet_ns.max(1);
    }

    /// Declares the pairs the plan serves and how many paths each has (1 + alternatives); a
    /// pair whose path count is unchanged keeps its state, others start over (one path open),
    /// pairs not listed are forgotten.
    pub fn set_pairs(&mut self, pairs: impl IntoIterator<Item = (DstSwitch, u8)>, now_ns: u64) {
        let mut next = BTreeMap::new();
        for (d, available) in pairs {
            if available == 0 {
                continue;
            }
            let kept = self
                .pairs
                .remove(&d)
                .filter(|p| p.available == available)
                .unwrap_or_else(|| Pair::new(available, now_ns));
            next.insert(d, kept);
        }
        self.pairs = next;
    }

    /// A congestion notification about a frame to `dst` on path `path`. Returns whether the
    /// pair's weights changed.
    pub fn on_notification(&mut self, dst: DstSwitch, path: u8, now_ns: u64) -> bool {
        let limit = 1 + self.cfg.max_alternatives;
        let per_path = self.cfg.notifications_per_path;
        let Some(pair) = self.pairs.get_mut(&dst) else {
            self.counters.ignored += 1;
            return false;
        };
        let Some(b) = pair.b.get_mut(usize::from(path)) else {
            self.counters.ignored += 1;
            return false;
        };
        *b = b.saturating_add(1);
        self.counters.charged += 1;
        pair.since_open += 1;
        pair.quiet_from_ns = now_ns;
        if pair.since_open >= per_path && pair.open < pair.available.min(limit) {
            pair.open += 1;
            pair.since_open = 0;
            self.counters.opened += 1;
        }
        let w = pair.compute_weights();
        let changed = w != pair.weights;
        pair.weights = w;
        changed
    }

    /// Runs the quiet timers; returns the pairs whose weights changed.
    pub fn tick(&mut self, now_ns: u64) -> Vec<DstSwitch> {
        let mut changed = Vec::new();
        for (&d, pair) in &mut self.pairs {
            let mut touched = false;
            while now_ns.saturating_sub(pair.quiet_from_ns) >= self.quiet_ns {
                pair.quiet_from_ns += self.quiet_ns;
                if pair.open > 1 {
                    pair.open -= 1;
                    self.counters.closed += 1;
                }
                pair.b.iter_mut().for_each(|b| *b /= 2);
                pair.since_open = 0;
                touched = true;
                if pair.open == 1 && pair.b.iter().all(|&b| b == 0) {
                    pair.quiet_from_ns = now_ns;
                    break;
                }
            }
            if touched {
                let w = pair.compute_weights();
                if w != pair.weights {
                    pair.weights = w;
                    changed.push(d);
                }
            }
        }
        changed
    }

    /// The pair's bucket weights: one per path, then the padding bucket's 1.
    pub fn weights(&self, dst: DstSwitch) -> Option<Vec<u16>> {
        self.pairs
            .get(&dst)
            .map(|p| p.weights.iter().copied().chain([1]).collect())
    }

    /// Paths open for the pair.
    pub fn open_paths(&self, dst: DstSwitch) -> Option<u8> {
        self.pairs.get(&dst).map(|p| p.open)
    }

    /// The pair's notification counts per path.
    pub fn notifications(&self, dst: DstSwitch) -> Option<&[u32]> {
        self.pairs.get(&dst).map(|p| p.b.as_slice())
    }

    /// The pairs known, ascending.
    pub fn pairs(&self) -> impl Iterator<Item = DstSwitch> + '_ {
        self.pairs.keys().copied()
    }

    /// Counters.
    pub fn counters(&self) -> DrbCounters {
        self.counters
    }
}

#[cfg(test)]
mod tests;
