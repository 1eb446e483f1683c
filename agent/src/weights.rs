//! The write decision: when a changed probability becomes a group MODIFY.
//!
//! One SELECT group per decision point (DESIGN §4): bucket 0 is the minimal port, then the
//! non-minimal candidates, then the weight-1 padding bucket; weights come from
//! [`fabricflow_proto::select_weights::weights`] (255 quanta + 1, summing to 256).
//!
//! The weights are logical: the plan's layout decides how the switch holds them (bucket weights,
//! or slot buckets: [`crate::plan::LearnedGroup::write`]). Every MODIFY moves live flows (in the
//! weighted layout on Open vSwitch many more than the change needs) and makes ovs-vswitchd
//! re-translate its datapath flows, so a group is written only when
//! 1. some bucket weight would move by at least `min_change_quanta` (default 1) against the
//!    weights last written (or found installed), **and**
//! 2. the group's minimum update interval has passed since its last write.
//!
//! A change that passes (1) but not (2) stays *pending*: the group is written by the first
//! [`WeightPlanner::tick`] (or probability update) at or after the interval's end, rounded up
//! to the switch's write grid (`write_grid_fraction`), so deferred writes of many groups leave
//! together — unless P has meanwhile come back to the installed weights, in which case nothing
//! is written. The first write of a group is never delayed.
//!
//! What a write carries (`weights.written_p`): by default P's time-weighted mean since its first
//! change after the group's last write, so a P that swings within the interval (every CNM cuts
//! it, every byte limit raises it) is written as the split it held on average rather than as
//! wherever the swing stood at the interval's end; a change after a steady stretch is written
//! as it is. `latest` writes the latest P.
//! [`WeightPlanner::next_deadline_ns`] tells the I/O shell when to tick.

mod config;

pub use config::{GroupOverride, WeightsConfig, WrittenP};

use fabricflow_proto::select_weights::{equal_cost_weights, p_minimal_from_weights, weights_iter};

use crate::error::ConfigError;
use crate::link::PortLinks;
use crate::policy::P_MAX_PERCENT;
use crate::PortNo;

/// A SELECT group steered by the probability of one port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecisionPoint {
    /// OpenFlow group id.
    pub group_id: u32,
    /// The minimal port (bucket 0) whose P sets the split.
    pub minimal_port: PortNo,
    /// Number of non-minimal candidate buckets (between bucket 0 and the padding bucket).
    pub n_nonminimal: usize,
    /// Every candidate is minimal too (fat-tree up ports; the plan's
    /// [`EQUAL_COST_GROUP_OFFSET`](fabricflow_proto::conventions::EQUAL_COST_GROUP_OFFSET)):
    /// every bucket is weighed by its own port's P, so all P at 100 is an even split.
    pub equal_cost: bool,
}

impl DecisionPoint {
    /// A decision point from a group as installed on the switch, with `buckets` buckets in all
    /// (minimal + candidates + padding, so at least 2).
    pub fn from_bucket_count(
        group_id: u32,
        minimal_port: PortNo,
        buckets: usize,
        equal_cost: bool,
    ) -> Result<Self, WeightsError> {
        let n_nonminimal = buckets
            .checked_sub(2)
            .ok_or(WeightsError::TooFewBuckets { group_id, buckets })?;
        Ok(DecisionPoint {
            group_id,
            minimal_port,
            n_nonminimal,
            equal_cost,
        })
    }

    /// The P of the minimal port that installed `weights` encode, `None` for weights that sum
    /// to nothing. Equal-cost: the minimal bucket against the heaviest one (the other ports' P
    /// are their own groups' to tell).
    pub fn p_from_weights(&self, weights: &[u16]) -> Option<f64> {
        if !self.equal_cost {
            return p_minimal_from_weights(weights);
        }
        let (&minimal, rest) = weights.split_first()?;
        let body = rest.split_last().map(|(_, b)| b).unwrap_or(&[]);
        let top = body.iter().copied().chain([minimal]).max()?;
        (top > 0).then(|| f64::from(minimal) * 100.0 / f64::from(top))
    }

    /// Total bucket count, padding included.
    pub fn buckets(&self) -> usize {
        self.n_nonminimal.saturating_add(2)
    }
}

/// New weights for one group, to be sent as an OFPGC_MODIFY keeping the group's buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupWrite {
    /// OpenFlow group id.
    pub group_id: u32,
    /// One weight per bucket, in bucket order, padding last; they sum to 256.
    pub weights: Vec<u16>,
}

/// Why a group could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeightsError {
    /// A group needs at least the minimal and the padding bucket.
    #[error("group {group_id} has {buckets} buckets; at least 2 (minimal + padding) are needed")]
    TooFewBuckets {
        /// OpenFlow group id.
        group_id: u32,
        /// Bucket count found.
        buckets: usize,
    },
    /// Installed weights given for a group do not match its bucket count.
    #[error("group {group_id}: {got} installed weights for {expected} buckets")]
    WeightCount {
        /// OpenFlow group id.
        group_id: u32,
        /// Bucket count of the decision point.
        expected: usize,
        /// Weights given.
        got: usize,
    },
    /// Candidate ports given for a group that is not equal-cost, or the wrong number of them.
    #[error("group {group_id}: {got} candidate ports for an equal-cost group of {expected}")]
    CandidatePorts {
        /// OpenFlow group id.
        group_id: u32,
        /// Candidate buckets of the decision point (0 when it is not equal-cost).
        expected: usize,
        /// Ports given.
        got: usize,
    },
    /// The group is not registered.
    #[error("unknown group {0}")]
    UnknownGroup(u32),
}

#[derive(Debug, Clone)]
struct GroupState {
    dp: DecisionPoint,
    interval_ns: u64,
    /// Weights last written or found on the switch.
    installed: Vec<u16>,
    /// The latest probability of the minimal port.
    p_percent: f64,
    /// Equal-cost groups: the candidates' ports and their latest P, bucket order (empty
    /// otherwise, or until [`WeightPlanner::set_equal_cost_ports`]: candidates then count at 100).
    candidate_ports: Vec<PortNo>,
    candidate_p: Vec<f64>,
    last_write_ns: Option<u64>,
    /// The earliest time of the next write (`None`: at once, as before the first write).
    due_ns: Option<u64>,
    /// The planner's write sequence number of this group's last write (0: never written).
    written_seq: u64,
    pending: bool,
    /// `written_p = interval-mean`: per probability (minimal, then candidates) Σ P·ns over
    /// [`window_start_ns`, `p_since_ns`]. The window opens at P's first change after a write
    /// (`None` until then), so a change after a steady stretch is written as it is, at once
    /// if the interval allows, and only a swing within the interval is averaged.
    p_integral: Vec<f64>,
    window_start_ns: Option<u64>,
    p_since_ns: u64,
}

impl GroupState {
    /// The group's probability `k` (0: the minimal port's, then the candidates').
    fn latest_p(&self, k: usize) -> f64 {
        match k.checked_sub(1) {
            None => self.p_percent,
            Some(c) => self.candidate_p.get(c).copied().unwrap_or(P_MAX_PERCENT),
        }
    }

    /// Adds the probabilities in force since the last update, up to `now_ns`, to the window's
    /// integrals. With `opening`, a change of P is about to happen: a closed window opens at
    /// `now_ns` (P was steady since the last write, so the stretch before does not count).
    fn accumulate(&mut self, now_ns: u64, opening: bool) {
        if self.window_start_ns.is_none() {
            if opening {
                self.window_start_ns = Some(now_ns);
                self.p_since_ns = now_ns;
            }
            return;
        }
        #[allow(clippy::cast_precision_loss)] // ns spans far below 2^52
        let dt = now_ns.saturating_sub(self.p_since_ns) as f64;
        self.p_integral.resize(self.candidate_p.len() + 1, 0.0);
        for k in 0..self.p_integral.len() {
            let p = self.latest_p(k);
            if let Some(acc) = self.p_integral.get_mut(k) {
                *acc += p * dt;
            }
        }
        self.p_since_ns = self.p_since_ns.max(now_ns);
    }

    /// Probability `k` as a write now carries it: the latest, or its mean over the window
    /// (accumulated up to now); the latest when the window is empty.
    fn written_p(&self, k: usize, mode: WrittenP) -> f64 {
        let latest = self.latest_p(k);
        let Some(start) = self
            .window_start_ns
            .filter(|_| mode == WrittenP::IntervalMean)
        else {
            return latest;
        };
        let span = self.p_since_ns.saturating_sub(start);
        match self.p_integral.get(k) {
            #[allow(clippy::cast_precision_loss)] // ns spans far below 2^52
            Some(&acc) if span > 0 => (acc / span as f64).clamp(0.0, P_MAX_PERCENT),
            _ => latest,
        }
    }

    /// Closes the averaging window: the next one opens at P's next change.
    fn restart_window(&mut self) {
        self.p_integral.iter_mut().for_each(|a| *a = 0.0);
        self.window_start_ns = None;
    }

    /// Whether the weights `mode` would write move some bucket by `min_change` quanta against
    /// the switch's. Called on every change of P (the simulator: every few packets), so a
    /// group that is not equal-cost allocates nothing.
    fn moves(&self, mode: WrittenP, min_change: u16) -> bool {
        if self.dp.equal_cost {
            return max_move(self.weights(mode).into_iter(), &self.installed) >= min_change;
        }
        let desired = weights_iter(self.written_p(0, mode), self.dp.n_nonminimal);
        max_move(desired, &self.installed) >= min_change
    }

    /// The weights of the probabilities as `mode` writes them.
    fn weights(&self, mode: WrittenP) -> Vec<u16> {
        if self.dp.equal_cost {
            let ps: Vec<f64> = (0..=self.dp.n_nonminimal)
                .map(|k| self.written_p(k, mode))
                .collect();
            return equal_cost_weights(&ps);
        }
        weights_iter(self.written_p(0, mode), self.dp.n_nonminimal).collect()
    }
}

/// Decides, per group, when to write new weights, and is the one record of the weights the
/// switch holds (as last written or found). Pure: driven by probabilities and time.
///
/// Every write gets the next number of a sequence ([`write_seq`](Self::write_seq)): a reader of
/// the switch's groups notes the number when it sends its request, and a group written after
/// that ([`written_after`](Self::written_after)) is not to be believed from the reply.
#[derive(Debug, Clone)]
pub struct WeightPlanner {
    cfg: WeightsConfig,
    /// The links of the decision points' minimal ports, which scale the write interval.
    links: PortLinks,
    groups: Vec<GroupState>,
    seq: u64,
    /// The write grid's step, ns (`write_grid_fraction` of the shortest group interval; 0 =
    /// off), kept with the groups and links it follows.
    grid_ns: u64,
}

impl WeightPlanner {
    /// A planner without groups.
    pub fn new(cfg: WeightsConfig) -> Result<Self, ConfigError> {
        cfg.validate()?;
        Ok(WeightPlanner {
            cfg,
            links: PortLinks::default(),
            groups: Vec::new(),
            seq: 0,
            grid_ns: 0,
        })
    }

    /// Sets the links of the minimal ports: every group's write interval follows its minimal
    /// port's line rate.
    pub fn set_links(&mut self, links: PortLinks) {
        self.links = links;
        for g in &mut self.groups {
            g.interval_ns = self
                .cfg
                .min_update_interval_ns(g.dp.group_id, self.links.get(g.dp.minimal_port));
            g.due_ns = g.last_write_ns.map(|t| t.saturating_add(g.interval_ns));
        }
        self.set_grid();
    }

    /// The write grid's step from the groups' intervals.
    fn set_grid(&mut self) {
        let shortest = self.groups.iter().map(|g| g.interval_ns).min().unwrap_or(0);
        #[allow(clippy::cast_precision_loss)] // intervals far below 2^52 ns
        let step = (shortest as f64 * self.cfg.write_grid_fraction).floor();
        // A finite step ≥ 0 below u64::MAX (the fraction is in [0, 1]): `as` cannot wrap.
        self.grid_ns = step as u64;
    }

    /// The write grid's step, ns (0: off).
    pub fn grid_ns(&self) -> u64 {
        self.grid_ns
    }

    /// Registers (or re-registers) a group. `installed` are its current weights as read from the
    /// switch; `None` assumes the controller's initial weights (P = 100). Re-registering keeps the
    /// time of the last write, so a resync cannot be used to write more often than allowed.
    pub fn add_group(
        &mut self,
        dp: DecisionPoint,
        installed: Option<Vec<u16>>,
    ) -> Result<(), WeightsError> {
        let installed = match installed {
            Some(w) if w.len() != dp.buckets() => {
                return Err(WeightsError::WeightCount {
                    group_id: dp.group_id,
                    expected: dp.buckets(),
                    got: w.len(),
                })
            }
            Some(w) => w,
            None if dp.equal_cost => equal_cost_weights(&vec![P_MAX_PERCENT; dp.n_nonminimal + 1]),
            None => weights_iter(P_MAX_PERCENT, dp.n_nonminimal).collect(),
        };
        let interval_ns = self
            .cfg
            .min_update_interval_ns(dp.group_id, self.links.get(dp.minimal_port));
        let prev = self
            .groups
            .iter()
            .position(|g| g.dp.group_id == dp.group_id);
        let (last_write_ns, written_seq) = prev
            .and_then(|i| self.groups.get(i))
            .map_or((None, 0), |g| (g.last_write_ns, g.written_seq));
        let state = GroupState {
            dp,
            interval_ns,
            installed,
            p_percent: P_MAX_PERCENT,
            candidate_ports: Vec::new(),
            candidate_p: Vec::new(),
            last_write_ns,
            due_ns: last_write_ns.map(|t| t.saturating_add(interval_ns)),
            written_seq,
            pending: false,
            p_integral: Vec::new(),
            window_start_ns: None,
            p_since_ns: 0,
        };
        match prev.and_then(|i| self.groups.get_mut(i)) {
            Some(slot) => *slot = state,
            None => self.groups.push(state),
        }
        self.set_grid();
        Ok(())
    }

    /// Names the candidate ports (bucket order) of equal-cost group `group_id`, whose weights
    /// follow each port's P from now on (at 100 until [`on_probability`](Self::on_probability)
    /// reports it).
    pub fn set_equal_cost_ports(
        &mut self,
        group_id: u32,
        candidates: &[PortNo],
    ) -> Result<(), WeightsError> {
        let g = self
            .groups
            .iter_mut()
            .find(|g| g.dp.group_id == group_id)
            .ok_or(WeightsError::UnknownGroup(group_id))?;
        if !g.dp.equal_cost || candidates.len() != g.dp.n_nonminimal {
            return Err(WeightsError::CandidatePorts {
                group_id,
                expected: if g.dp.equal_cost {
                    g.dp.n_nonminimal
                } else {
                    0
                },
                got: candidates.len(),
            });
        }
        g.candidate_ports = candidates.to_vec();
        g.candidate_p = vec![P_MAX_PERCENT; candidates.len()];
        // The window's integrals belonged to the probabilities just reset.
        g.restart_window();
        Ok(())
    }

    /// Forgets a group (the controller removed it).
    pub fn remove_group(&mut self, group_id: u32) -> Result<(), WeightsError> {
        let i = self
            .groups
            .iter()
            .position(|g| g.dp.group_id == group_id)
            .ok_or(WeightsError::UnknownGroup(group_id))?;
        self.groups.swap_remove(i);
        self.set_grid();
        Ok(())
    }

    /// The probability of `port` is now `p_percent` (time `now_ns`): every group steered by that
    /// port is re-evaluated, and the writes due now are appended to `out`.
    pub fn on_probability(
        &mut self,
        port: PortNo,
        p_percent: f64,
        now_ns: u64,
        out: &mut Vec<GroupWrite>,
    ) {
        let mean = self.cfg.written_p == WrittenP::IntervalMean;
        for g in &mut self.groups {
            let hit = g.dp.minimal_port == port || g.candidate_ports.contains(&port);
            if !hit {
                continue;
            }
            if mean {
                // The old probabilities held until now; a report of the same P opens no window.
                let changes = (g.dp.minimal_port == port && g.p_percent != p_percent)
                    || g.candidate_ports
                        .iter()
                        .zip(&g.candidate_p)
                        .any(|(&c, &p)| c == port && p != p_percent);
                g.accumulate(now_ns, changes);
            }
            if g.dp.minimal_port == port {
                g.p_percent = p_percent;
            }
            for (c, p) in g.candidate_ports.iter().zip(g.candidate_p.iter_mut()) {
                if *c == port {
                    *p = p_percent;
                }
            }
            evaluate(g, &self.cfg, self.grid_ns, now_ns, &mut self.seq, out);
        }
    }

    /// Flushes pending changes whose interval has expired, appending the writes to `out`.
    pub fn tick(&mut self, now_ns: u64, out: &mut Vec<GroupWrite>) {
        let mean = self.cfg.written_p == WrittenP::IntervalMean;
        for g in self.groups.iter_mut().filter(|g| g.pending) {
            if mean {
                g.accumulate(now_ns, false);
            }
            evaluate(g, &self.cfg, self.grid_ns, now_ns, &mut self.seq, out);
        }
    }

    /// The earliest time at which a pending change may be written, if any is pending.
    pub fn next_deadline_ns(&self) -> Option<u64> {
        self.groups
            .iter()
            .filter(|g| g.pending)
            .map(|g| g.due_ns.map_or(0, |t| on_grid(t, self.grid_ns)))
            .min()
    }

    /// The number of the latest write (0 before the first).
    pub fn write_seq(&self) -> u64 {
        self.seq
    }

    /// Whether `group_id` was written after write number `seq`.
    pub fn written_after(&self, group_id: u32, seq: u64) -> bool {
        self.group(group_id).is_some_and(|g| g.written_seq > seq)
    }

    /// The weights last written (or found installed) for a group.
    pub fn installed(&self, group_id: u32) -> Option<&[u16]> {
        self.group(group_id).map(|g| g.installed.as_slice())
    }

    /// Whether a group has a change waiting for its interval to pass.
    pub fn is_pending(&self, group_id: u32) -> bool {
        self.group(group_id).is_some_and(|g| g.pending)
    }

    /// The registered decision points.
    pub fn groups(&self) -> impl Iterator<Item = &DecisionPoint> + '_ {
        self.groups.iter().map(|g| &g.dp)
    }

    fn group(&self, group_id: u32) -> Option<&GroupState> {
        self.groups.iter().find(|g| g.dp.group_id == group_id)
    }
}

/// The largest per-bucket move, in quanta, between two weight vectors of equal length.
fn max_move(a: impl Iterator<Item = u16>, b: &[u16]) -> u16 {
    a.zip(b).map(|(x, &y)| x.abs_diff(y)).max().unwrap_or(0)
}

/// The first instant of the write grid (multiples of `grid_ns`) at or after `t` (`t` itself
/// without a grid).
fn on_grid(t: u64, grid_ns: u64) -> u64 {
    match t.checked_rem(grid_ns) {
        Some(r) if r > 0 => t.saturating_add(grid_ns.saturating_sub(r)),
        _ => t,
    }
}

/// Writes group `g` if its weights moved and its interval has passed, else notes it pending.
fn evaluate(
    g: &mut GroupState,
    cfg: &WeightsConfig,
    grid_ns: u64,
    now_ns: u64,
    seq: &mut u64,
    out: &mut Vec<GroupWrite>,
) {
    let min_change = cfg.min_change_quanta;
    let moved = g.moves(cfg.written_p, min_change);
    // With the mean, the latest P away from the switch's keeps the group pending although the
    // mean is not (yet): the mean follows it as time passes.
    let latest_moved = |g: &GroupState| {
        cfg.written_p == WrittenP::IntervalMean && g.moves(WrittenP::Latest, min_change)
    };
    let due = g.due_ns.is_none_or(|t| now_ns >= on_grid(t, grid_ns));
    if !moved {
        // Within a quantum of what the switch has.
        g.pending = latest_moved(g);
        if g.pending && due {
            // The interval behind matched the switch: look again one interval on.
            g.restart_window();
            g.due_ns = Some(now_ns.saturating_add(g.interval_ns));
        }
        return;
    }
    if !due {
        g.pending = true;
        return;
    }
    let desired = g.weights(cfg.written_p);
    g.installed.clone_from(&desired);
    g.last_write_ns = Some(now_ns);
    g.due_ns = Some(now_ns.saturating_add(g.interval_ns));
    *seq += 1;
    g.written_seq = *seq;
    g.restart_window();
    g.pending = latest_moved(g);
    out.push(GroupWrite {
        group_id: g.dp.group_id,
        weights: desired,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabricflow_proto::select_weights::weights;

    const MS: u64 = 1_000_000;

    fn planner(interval_us: u64) -> WeightPlanner {
        planner_writing(interval_us, WrittenP::Latest)
    }

    fn mean_planner(interval_us: u64) -> WeightPlanner {
        planner_writing(interval_us, WrittenP::IntervalMean)
    }

    fn planner_writing(interval_us: u64, written_p: WrittenP) -> WeightPlanner {
        let cfg = WeightsConfig {
            min_update_interval_line_bytes: interval_us * 1_250,
            min_update_interval_buffer_drains: 0.0,
            written_p,
            ..WeightsConfig::default()
        };
        let mut p = WeightPlanner::new(cfg).unwrap();
        p.add_group(
            DecisionPoint {
                group_id: 1005,
                minimal_port: 5,
                n_nonminimal: 3,
                equal_cost: false,
            },
            None,
        )
        .unwrap();
        p
    }

    #[test]
    fn starts_from_the_controllers_weights() {
        let p = planner(10_000);
        assert_eq!(p.installed(1005), Some(&[255, 0, 0, 0, 1][..]));
    }

    #[test]
    fn writes_only_when_a_weight_moves_by_a_quantum() {
        let mut p = planner(0);
        let mut out = Vec::new();
        // 99.9 % → 254.745 → 255: no weight moves.
        p.on_probability(5, 99.9, 0, &mut out);
        assert!(out.is_empty());
        assert!(!p.is_pending(1005));
        // 99.7 % → 254.235 → 254: one quantum.
        p.on_probability(5, 99.7, 1, &mut out);
        assert_eq!(
            out,
            vec![GroupWrite {
                group_id: 1005,
                weights: vec![254, 1, 0, 0, 1]
            }]
        );
        // Another port's probability does not touch this group.
        out.clear();
        p.on_probability(6, 10.0, 2, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn min_change_quanta_is_honoured() {
        let cfg = WeightsConfig {
            min_update_interval_line_bytes: 0,
            min_update_interval_buffer_drains: 0.0,
            min_change_quanta: 3,
            ..WeightsConfig::default()
        };
        let mut p = WeightPlanner::new(cfg).unwrap();
        p.add_group(
            DecisionPoint {
                group_id: 1,
                minimal_port: 1,
                n_nonminimal: 1,
                equal_cost: false,
            },
            None,
        )
        .unwrap();
        let mut out = Vec::new();
        p.on_probability(1, 99.0, 0, &mut out); // 252.45 → 252: moves 3
        assert_eq!(out.len(), 1);
        out.clear();
        p.on_probability(1, 98.5, 1, &mut out); // 251.175 → 251: moves 1 < 3
        assert!(out.is_empty());
    }

    /// Two groups whose intervals end 0.8 ms apart are written together at the next grid
    /// instant (a quarter of the 10 ms interval); without a grid, each at its own interval's end.
    #[test]
    fn deferred_writes_leave_together_on_the_grid() {
        let run = |fraction: f64| {
            let cfg = WeightsConfig {
                min_update_interval_line_bytes: 10_000 * 1_250,
                min_update_interval_buffer_drains: 0.0,
                write_grid_fraction: fraction,
                written_p: WrittenP::Latest,
                ..WeightsConfig::default()
            };
            let mut p = WeightPlanner::new(cfg).unwrap();
            for (group_id, port) in [(1, 1), (2, 2)] {
                let dp = DecisionPoint {
                    group_id,
                    minimal_port: port,
                    n_nonminimal: 2,
                    equal_cost: false,
                };
                p.add_group(dp, None).unwrap();
            }
            let mut out = Vec::new();
            p.on_probability(1, 60.0, 300_000, &mut out);
            p.on_probability(2, 60.0, 1_100_000, &mut out);
            assert_eq!(out.len(), 2, "first writes are never delayed");
            out.clear();
            p.on_probability(1, 40.0, 2 * MS, &mut out);
            p.on_probability(2, 40.0, 4 * MS, &mut out);
            assert!(out.is_empty());
            // Wake at each deadline, as the shell does, and note when each group is written.
            let mut when = Vec::new();
            while let Some(d) = p.next_deadline_ns() {
                p.tick(d, &mut out);
                when.extend(out.drain(..).map(|w| (w.group_id, d)));
            }
            (p.grid_ns(), when)
        };
        assert_eq!(
            run(0.25),
            (2_500_000, vec![(1, 12_500_000), (2, 12_500_000)])
        );
        assert_eq!(run(0.0), (0, vec![(1, 10_300_000), (2, 11_100_000)]));
        assert!(WeightsConfig {
            write_grid_fraction: 1.5,
            ..WeightsConfig::default()
        }
        .validate()
        .is_err());
    }

    #[test]
    fn min_interval_defers_and_tick_flushes_latest() {
        let mut p = planner(10_000); // 10 ms
        let mut out = Vec::new();
        p.on_probability(5, 50.0, 0, &mut out);
        assert_eq!(out.len(), 1, "the first write is immediate");
        out.clear();
        p.on_probability(5, 40.0, 3 * MS, &mut out);
        assert!(out.is_empty());
        assert!(p.is_pending(1005));
        assert_eq!(p.next_deadline_ns(), Some(10 * MS));
        p.on_probability(5, 30.0, 6 * MS, &mut out);
        p.tick(9 * MS, &mut out);
        assert!(out.is_empty());
        // The interval expires: the latest probability (30 %) is written.
        p.tick(10 * MS, &mut out);
        assert_eq!(
            out,
            vec![GroupWrite {
                group_id: 1005,
                weights: weights(30.0, 3)
            }]
        );
        assert_eq!(
            out.first().map(|w| w.weights.clone()),
            Some(vec![77, 60, 59, 59, 1])
        );
        assert!(!p.is_pending(1005));
        assert_eq!(p.next_deadline_ns(), None);
        assert_eq!(p.installed(1005), Some(&[77, 60, 59, 59, 1][..]));
        // An update after the interval is written at once.
        out.clear();
        p.on_probability(5, 20.0, 25 * MS, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn interval_mean_writes_the_swings_mean_not_its_last_sample() {
        let mut latest = planner(10_000); // 10 ms
        let mut mean = mean_planner(10_000);
        let (mut out_l, mut out_m) = (Vec::new(), Vec::new());
        // The first write has no interval behind it: both write the latest P.
        latest.on_probability(5, 100.0 - 0.5, 0, &mut out_l);
        mean.on_probability(5, 100.0 - 0.5, 0, &mut out_m);
        assert_eq!(out_l, out_m);
        assert_eq!(out_m.len(), 1);
        // P swings every ms between 10 % and 90 % (mean 50 %), ending on 10 % at 9 ms.
        out_l.clear();
        out_m.clear();
        for ms in 1..10 {
            let p = if ms % 2 == 1 { 90.0 } else { 10.0 };
            let p = if ms == 9 { 10.0 } else { p };
            latest.on_probability(5, p, ms * MS, &mut out_l);
            mean.on_probability(5, p, ms * MS, &mut out_m);
        }
        assert!(out_l.is_empty() && out_m.is_empty(), "within the interval");
        latest.tick(10 * MS, &mut out_l);
        mean.tick(10 * MS, &mut out_m);
        assert_eq!(
            out_l.first().map(|w| w.weights.clone()),
            Some(weights(10.0, 3))
        );
        // The window opens at the first change after the write (1 ms): [1,2) 90, [2,3) 10, …
        // [8,9) 10, [9,10) 10.
        let m = (4.0 * 90.0 + 5.0 * 10.0) / 9.0;
        assert_eq!(
            out_m.first().map(|w| w.weights.clone()),
            Some(weights(m, 3))
        );
        // P stays at 10 %: the mean group is still pending and writes 10 % one interval on.
        assert!(mean.is_pending(1005));
        assert!(!latest.is_pending(1005));
        assert_eq!(mean.next_deadline_ns(), Some(20 * MS));
        out_m.clear();
        mean.tick(20 * MS, &mut out_m);
        assert_eq!(
            out_m.first().map(|w| w.weights.clone()),
            Some(weights(10.0, 3))
        );
        assert!(!mean.is_pending(1005));
        assert_eq!(mean.next_deadline_ns(), None);
    }

    #[test]
    fn interval_mean_matching_the_switch_writes_nothing_and_looks_again() {
        let mut p = mean_planner(10_000);
        let mut out = Vec::new();
        p.on_probability(5, 50.0, 0, &mut out);
        assert_eq!(out.len(), 1);
        out.clear();
        // 20 % for 4 ms, then 80 % for 4 ms: the mean is 50 %.
        p.on_probability(5, 20.0, 2 * MS, &mut out);
        p.on_probability(5, 80.0, 6 * MS, &mut out);
        p.tick(10 * MS, &mut out);
        assert!(out.is_empty(), "the mean equals the installed split");
        // The latest P (80 %) still differs: pending, checked one interval later, not at once.
        assert!(p.is_pending(1005));
        assert_eq!(p.next_deadline_ns(), Some(20 * MS));
        p.tick(19 * MS, &mut out);
        assert!(out.is_empty());
        p.tick(20 * MS, &mut out);
        assert_eq!(
            out.first().map(|w| w.weights.clone()),
            Some(weights(80.0, 3))
        );
    }

    #[test]
    fn interval_mean_writes_a_change_after_a_steady_stretch_at_once() {
        let mut p = mean_planner(10_000);
        let mut out = Vec::new();
        p.on_probability(5, 50.0, 0, &mut out);
        // A report of the same P opens no window: P was 50 % since the write.
        p.on_probability(5, 50.0, 40 * MS, &mut out);
        out.clear();
        // Long after the interval, P drops: the write is immediate and carries the new P, not
        // a mean dragged towards the 50 % it held before.
        p.on_probability(5, 20.0, 100 * MS, &mut out);
        assert_eq!(
            out.first().map(|w| w.weights.clone()),
            Some(weights(20.0, 3))
        );
        assert!(!p.is_pending(1005));
    }

    #[test]
    fn a_pending_change_that_reverts_is_dropped() {
        let mut p = planner(10_000);
        let mut out = Vec::new();
        p.on_probability(5, 50.0, 0, &mut out);
        out.clear();
        p.on_probability(5, 40.0, MS, &mut out);
        assert!(p.is_pending(1005));
        p.on_probability(5, 50.0, 2 * MS, &mut out);
        assert!(!p.is_pending(1005));
        p.tick(20 * MS, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn per_group_override_and_installed_weights() {
        let cfg = WeightsConfig {
            // 10 ms at the default 10 Gb/s.
            min_update_interval_line_bytes: 12_500_000,
            min_update_interval_buffer_drains: 0.0,
            group_overrides: vec![GroupOverride {
                group_id: 7,
                min_update_interval_us: 1_000,
            }],
            ..WeightsConfig::default()
        };
        let mut p = WeightPlanner::new(cfg).unwrap();
        let dp = DecisionPoint::from_bucket_count(7, 3, 4, false).unwrap();
        assert_eq!(dp.n_nonminimal, 2);
        assert!(matches!(
            p.add_group(dp, Some(vec![255, 1])),
            Err(WeightsError::WeightCount {
                expected: 4,
                got: 2,
                ..
            })
        ));
        // Found at 50 % on the switch (weights the agent wrote before a restart).
        p.add_group(dp, Some(weights(50.0, 2))).unwrap();
        let mut out = Vec::new();
        p.on_probability(3, 50.0, 0, &mut out);
        assert!(out.is_empty(), "already installed");
        p.on_probability(3, 10.0, 0, &mut out);
        out.clear();
        p.on_probability(3, 20.0, MS / 2, &mut out);
        assert!(out.is_empty());
        p.tick(MS, &mut out);
        assert_eq!(out.len(), 1, "the override's 1 ms applies");
        assert!(DecisionPoint::from_bucket_count(7, 3, 1, false).is_err());
        p.remove_group(7).unwrap();
        assert!(p.remove_group(7).is_err());
        assert_eq!(p.groups().count(), 0);
    }

    #[test]
    fn equal_cost_groups_weigh_every_bucket_by_its_own_ports_p() {
        let mut p = WeightPlanner::new(WeightsConfig::default()).unwrap();
        let dp = DecisionPoint::from_bucket_count(1000 + 32_768 + 5, 5, 5, true).unwrap();
        p.add_group(dp, None).unwrap();
        assert_eq!(p.installed(dp.group_id), Some(&[64, 64, 64, 63, 1][..]));
        assert!(
            p.set_equal_cost_ports(dp.group_id, &[6, 7]).is_err(),
            "three candidates"
        );
        p.set_equal_cost_ports(dp.group_id, &[6, 7, 8]).unwrap();
        let mut out = Vec::new();
        p.on_probability(5, 100.0, 0, &mut out);
        assert!(
            out.is_empty(),
            "all P = 100 is the even split already installed"
        );
        // A cut of a candidate's P moves traffic off it in this group too.
        p.on_probability(7, 20.0, 0, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].weights, vec![80, 80, 16, 79, 1]);
        assert!((dp.p_from_weights(&out[0].weights).unwrap() - 100.0).abs() < 1e-9);
        let w = [16, 80, 80, 79, 1];
        assert!((dp.p_from_weights(&w).unwrap() - 20.0).abs() < 1e-9);
        // Not equal-cost: no candidate ports to name.
        let plain = DecisionPoint::from_bucket_count(1009, 9, 3, false).unwrap();
        p.add_group(plain, None).unwrap();
        assert!(matches!(
            p.set_equal_cost_ports(1009, &[1]),
            Err(WeightsError::CandidatePorts { expected: 0, .. })
        ));
    }

    #[test]
    fn groups_without_candidates_never_write() {
        let mut p = WeightPlanner::new(WeightsConfig::default()).unwrap();
        p.add_group(
            DecisionPoint {
                group_id: 1,
                minimal_port: 1,
                n_nonminimal: 0,
                equal_cost: false,
            },
            None,
        )
        .unwrap();
        let mut out = Vec::new();
        p.on_probability(1, 5.0, 0, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn several_groups_per_port() {
        let mut p = planner(0);
        p.add_group(
            DecisionPoint {
                group_id: 2005,
                minimal_port: 5,
                n_nonminimal: 1,
                equal_cost: false,
            },
            None,
        )
        .unwrap();
        let mut out = Vec::new();
        p.on_probability(5, 50.0, 0, &mut out);
        let ids: Vec<u32> = out.iter().map(|w| w.group_id).collect();
        assert_eq!(ids, vec![1005, 2005]);
    }
}
