//! dFtree (Guay et al., "dFtree: a fat-tree routing algorithm using dynamic allocation of
//! virtual lanes to alleviate congestion in InfiniBand networks"): flows that feed an end-point
//! hot spot move to a second, *slow* lane, so the victims that share their paths keep the fast
//! lane and escape the hot spot's head-of-line blocking.
//!
//! This is the pure core, the seed's Algorithm 1 run once per performance sweep: no sockets, no
//! clock. The caller turns each sweep's counter deltas into one [`HostObservation`] per host and
//! applies the [`LaneChange`]s [`Detector::sweep`] returns — the simulator by steering its hosts'
//! packets onto the slow lane (`sim/src/dftree.rs`), the controller by adding or removing the
//! edge switch's slow-lane rule ([`slow_lane_flow`], [`with_slow_lanes`]).
//!
//! # Detection (per sweep, every value a fraction of the sweep interval)
//! - **Hot spot**: a host whose edge switch port towards it is congested: stall fraction
//!   `toward_host ≥ hot_congestion`. The seed uses ΔXmitWait/interval > 100 000 ticks/s on that
//!   port; InfiniBand's XmitWait there counts the hot host's own lack of credits. A host that
//!   sinks at line rate never stalls its port, so the evidence is the port's *backlog*: the
//!   simulator counts cycles its output queue is full, a live switch the time its egress qdisc
//!   held a backlog (`agent/src/port_stats.rs`, issue 18). Both run at 100 % on a hot spot.
//! - **Contributor** of every current hot spot: a host whose own transmitter is congested
//!   (`from_host ≥ contributor_congestion`) while it uses less than `contributor_utilisation`
//!   of its link (the seed: congested and utilisation < 50 %). A marked contributor stays marked
//!   until its hot spot clears (the seed keeps it too), so a contributor the slow lane has
//!   relieved is not moved back and forth.
//! - **Repath**: the first contributor found behind an edge switch yields
//!   [`LaneChange::Repath`] for (that edge switch, the hot spot): the switch's rule for
//!   `eth_dst = hot spot` sets the slow lane for every flow its hosts send there. A host
//!   without flows to the hot spot is untouched by it (the seed's repath trap likewise only
//!   moves queue pairs whose destination is the hot spot).
//! - **Hysteresis and unpath**: a hot spot clears after `clear_sweeps` consecutive sweeps with
//!   `toward_host < clear_congestion` (below the flagging threshold), and every edge switch
//!   repathed for it gets [`LaneChange::Unpath`].
//!
//! Every output is ordered (hot spots, then edge switches, ascending), so a run is
//! deterministic.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use fabricflow_proto::MacAddr;

use crate::plan::ir::{Action, Field, Flow, Masked, VID_PRESENT};
use crate::plan::{ethertype, Plan, SwitchPlan, TABLE_INJECT};
use crate::topology::{Fabric, HostId, PortNo, SwitchId};

/// Thresholds of the detection (fractions of a sweep interval) and the hysteresis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DftreeConfig {
    /// A host whose port stalls at least this fraction of a sweep is a hot spot.
    pub hot_congestion: f64,
    /// A hot spot whose port stalls less than this fraction …
    pub clear_congestion: f64,
    /// … for this many consecutive sweeps is cleared (unpath).
    pub clear_sweeps: u32,
    /// A host whose own transmitter stalls at least this fraction …
    pub contributor_congestion: f64,
    /// … while sending less than this fraction of its link rate is a contributor.
    pub contributor_utilisation: f64,
    /// Which hosts count as contributors.
    pub contributors: Contributors,
    /// Lossy fabrics: a hot spot's port must also drop at least this many frames per second
    /// (0: not required, as in a lossless fabric). A single TCP flow fills its receiver's
    /// queue as a many-to-one hot spot does, so backlog time alone flags it; only the
    /// converging senders' excess is dropped at the rate of the overload.
    pub hot_drops_per_s: f64,
}

/// Which hosts count as a hot spot's contributors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Contributors {
    /// The seed's rule: own transmitter stalled, link under-used. Needs back-pressure (credits,
    /// PFC): only then does a sender of a blocked flow stall.
    #[default]
    Stalled,
    /// Every observed host: a slow-lane rule at every edge switch. On a lossy Ethernet fabric
    /// no sender ever stalls, so there is no contributor evidence; the rule matches only
    /// `eth_dst = hot spot`, so a host without flows there is untouched.
    EveryEdge,
}

impl Default for DftreeConfig {
    fn default() -> Self {
        DftreeConfig {
            hot_congestion: 0.65,
            clear_congestion: 0.05,
            clear_sweeps: 2,
            contributor_congestion: 0.1,
            contributor_utilisation: 0.5,
            contributors: Contributors::Stalled,
            hot_drops_per_s: 0.0,
        }
    }
}

/// Why a [`DftreeConfig`] is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DftreeError {
    #[error("dftree: {0}")]
    Invalid(&'static str),
}

impl DftreeConfig {
    /// Checks the ranges: fractions in (0, 1], `clear_congestion ≤ hot_congestion`,
    /// `clear_sweeps ≥ 1`.
    pub fn validate(&self) -> Result<(), DftreeError> {
        let frac = |x: f64| x > 0.0 && x <= 1.0;
        if !frac(self.hot_congestion)
            || !frac(self.clear_congestion)
            || !frac(self.contributor_congestion)
            || !frac(self.contributor_utilisation)
        {
            return Err(DftreeError::Invalid("every threshold must be in (0, 1]"));
        }
        if self.clear_congestion > self.hot_congestion {
            return Err(DftreeError::Invalid(
                "clear_congestion must not exceed hot_congestion (hysteresis)",
            ));
        }
        if !(self.hot_drops_per_s >= 0.0 && self.hot_drops_per_s.is_finite()) {
            return Err(DftreeError::Invalid("hot_drops_per_s must be ≥ 0"));
        }
        if self.clear_sweeps == 0 {
            return Err(DftreeError::Invalid("clear_sweeps must be at least 1"));
        }
        Ok(())
    }
}

/// One host's counters over one sweep interval, as fractions of the interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostObservation {
    pub host: HostId,
    /// The host's edge switch.
    pub edge: SwitchId,
    /// Stall (congestion) fraction of the edge switch port towards the host.
    pub toward_host: f64,
    /// Frames that port dropped per second (0 in a lossless fabric).
    pub toward_host_drops_per_s: f64,
    /// Stall fraction of the host's own transmitter (InfiniBand XmitWait/interval).
    pub from_host: f64,
    /// The host's own transmitter's utilisation (sent / line rate over the interval).
    pub from_host_utilisation: f64,
}

/// What one sweep changes: the edge switch's slow-lane rule for a hot spot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LaneChange {
    /// Flows from `edge`'s hosts to `hot_spot` take the slow lane from now on.
    Repath { edge: SwitchId, hot_spot: HostId },
    /// Back to the fast lane: the hot spot cleared.
    Unpath { edge: SwitchId, hot_spot: HostId },
}

#[derive(Debug, Clone, Default, PartialEq)]
struct HotSpot {
    contributors: BTreeSet<HostId>,
    edges: BTreeSet<SwitchId>,
    /// Consecutive sweeps below `clear_congestion`.
    quiet: u32,
}

/// The detection loop's state: the current hot spots, their contributors and the edge switches
/// holding a slow-lane rule for them.
#[derive(Debug, Clone)]
pub struct Detector {
    cfg: DftreeConfig,
    hot: BTreeMap<HostId, HotSpot>,
    sweeps: u64,
}

impl Detector {
    /// A detector with no hot spot.
    pub fn new(cfg: DftreeConfig) -> Result<Self, DftreeError> {
        cfg.validate()?;
        Ok(Detector {
            cfg,
            hot: BTreeMap::new(),
            sweeps: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &DftreeConfig {
        &self.cfg
    }

    /// Sweeps run so far.
    pub fn sweeps(&self) -> u64 {
        self.sweeps
    }

    /// The current hot spots, ascending.
    pub fn hot_spots(&self) -> impl Iterator<Item = HostId> + '_ {
        self.hot.keys().copied()
    }

    /// The contributors marked for `hot_spot`, ascending.
    pub fn contributors(&self, hot_spot: HostId) -> impl Iterator<Item = HostId> + '_ {
        self.hot
            .get(&hot_spot)
            .into_iter()
            .flat_map(|h| h.contributors.iter().copied())
    }

    /// Every (edge switch, hot spot) holding a slow-lane rule now, ordered.
    pub fn slow_lanes(&self) -> BTreeSet<(SwitchId, HostId)> {
        self.hot
            .iter()
            .flat_map(|(&hot, h)| h.edges.iter().map(move |&e| (e, hot)))
            .collect()
    }

    /// Runs Algorithm 1 on one sweep's observations (any order; a host seen twice counts its
    /// last observation) and returns the changes to apply: unpaths first, then repaths, each
    /// ordered by hot spot and edge switch. Non-finite values count as zero.
    pub fn sweep(&mut self, observations: &[HostObservation]) -> Vec<LaneChange> {
        self.sweeps += 1;
        let clean = |x: f64| if x.is_finite() { x } else { 0.0 };
        let by_host: BTreeMap<HostId, &HostObservation> =
            observations.iter().map(|o| (o.host, o)).collect();
        let mut unpaths = Vec::new();
        // Hot spots: flag, keep, or count towards clearing.
        for (&host, o) in &by_host {
            let c = clean(o.toward_host);
            let dropping = clean(o.toward_host_drops_per_s) >= self.cfg.hot_drops_per_s;
            if c >= self.cfg.hot_congestion && dropping {
                self.hot.entry(host).or_default().quiet = 0;
            } else if let Some(h) = self.hot.get_mut(&host) {
                if c < self.cfg.clear_congestion {
                    h.quiet += 1;
                } else {
                    h.quiet = 0;
                }
                if h.quiet >= self.cfg.clear_sweeps {
                    if let Some(gone) = self.hot.remove(&host) {
                        unpaths.extend(gone.edges.into_iter().map(|edge| LaneChange::Unpath {
                            edge,
                            hot_spot: host,
                        }));
                    }
                }
            }
        }
        // Contributors of every hot spot: congested and under-utilised.
        let contributors: Vec<&HostObservation> = by_host
            .values()
            .copied()
            .filter(|o| {
                self.cfg.contributors == Contributors::EveryEdge
                    || (clean(o.from_host) >= self.cfg.contributor_congestion
                        && clean(o.from_host_utilisation) < self.cfg.contributor_utilisation)
            })
            .collect();
        let mut repaths = Vec::new();
        for (&hot, h) in &mut self.hot {
            for o in contributors.iter().filter(|o| o.host != hot) {
                h.contributors.insert(o.host);
                if h.edges.insert(o.edge) {
                    repaths.push(LaneChange::Repath {
                        edge: o.edge,
                        hot_spot: hot,
                    });
                }
            }
        }
        unpaths.sort_unstable();
        repaths.sort_unstable();
        unpaths.extend(repaths);
        unpaths
    }
}

/// One row of a `port-stats.csv` (the agent's live sampler `fabricflow-agent port-stats`, or
/// the simulator's): a port's cumulative stall counter at one reading. Live, `stall` is the
/// egress qdisc's backlog time in ns and `time` ns since the sampler started
/// (`agent/src/port_stats.rs`); both share one clock, so Δstall/Δtime is the stall fraction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortStatsRow {
    pub time: u64,
    pub switch: String,
    pub port: PortNo,
    pub stall: u64,
    /// Frames dropped (the live CSV's `xmit_discards`; 0 when the column is absent).
    pub drops: u64,
}

/// Parses one data row (`cycle,switch,port,role,direction,xmit_wait_cycles,…`); `None` for the
/// header, a `rx` row, or anything malformed (never panics on input).
pub fn parse_port_stats_row(line: &str) -> Option<PortStatsRow> {
    let mut f = line.trim_end().split(',');
    let time = f.next()?.parse().ok()?;
    let switch = f.next()?.to_owned();
    let port = f.next()?.parse().ok()?;
    let _role = f.next()?;
    if f.next()? != "tx" {
        return None;
    }
    let stall = f.next()?.parse().ok()?;
    let _data = f.next();
    let drops = match f.next() {
        Some(d) => d.parse().ok()?,
        None => 0,
    };
    Some(PortStatsRow {
        time,
        switch,
        port,
        stall,
        drops,
    })
}

/// One sweep's observations from two readings of the edge ports: per host of `fabric` whose
/// edge port appears in both, `toward_host` = Δstall / Δtime of that port and its drops per
/// second (times in ns, as the live sampler writes them). The host's own
/// transmitter is not observed (a switch sees its own egress only): `from_host` and its
/// utilisation are 0, so use [`Contributors::EveryEdge`] with these.
pub fn edge_observations(
    fabric: &Fabric,
    before: &[PortStatsRow],
    after: &[PortStatsRow],
) -> Vec<HostObservation> {
    let index = |rows: &[PortStatsRow]| -> BTreeMap<(String, PortNo), (u64, u64, u64)> {
        rows.iter()
            .map(|r| ((r.switch.clone(), r.port), (r.time, r.stall, r.drops)))
            .collect()
    };
    let (b, a) = (index(before), index(after));
    let mut out = Vec::new();
    for (h, host) in fabric.hosts().iter().enumerate() {
        let Some(sw) = fabric.switch(host.switch) else {
            continue;
        };
        let key = (sw.name.clone(), host.port);
        let (Some(&(t0, s0, d0)), Some(&(t1, s1, d1))) = (b.get(&key), a.get(&key)) else {
            continue;
        };
        if t1 <= t0 {
            continue;
        }
        out.push(HostObservation {
            host: h,
            edge: host.switch,
            toward_host: s1.saturating_sub(s0) as f64 / (t1 - t0) as f64,
            toward_host_drops_per_s: d1.saturating_sub(d0) as f64 * 1e9 / (t1 - t0) as f64,
            from_host: 0.0,
            from_host_utilisation: 0.0,
        });
    }
    out
}

/// Priority of a slow-lane rule in table 1: above every destination rule of the table
/// (`FORWARD_BASE` + mask bits ≤ 1048), below the diversion rules (2000, table 2 only).
pub const SLOW_LANE_PRIORITY: u16 = 1500;

/// How the slow lane is carried on the wire, and so which queue a switch puts it in.
///
/// - `Dscp(d)` (the default, 8 = CS1): untagged IPv4 traffic, the plan without lossless mode.
///   Only IPv4 frames are re-marked (OpenFlow's prerequisite); others stay on the fast lane.
/// - `Pcp(p)`: the 802.1Q priority of the lossless plan's tag (pushed at injection with
///   PCP 0 = hop phase 0); the rule matches tagged frames only, so without lossless mode it
///   never fires. On a fat-tree, whose phase never changes, the slow lane is one more priority;
///   a Dragonfly's phase PCPs would need one slow PCP per phase, which this does not plan.
///
/// On a hardware switch the lane is a queue: one `set_queue` per PCP/DSCP value in the egress
/// port's QoS map (or the switch's trust-DSCP/PCP map), the slow lane's queue with its own
/// buffer and (PFC) pause class. Open vSwitch's userspace datapath ignores `set_queue`; the
/// Mininet harness gives each switch-side interface a two-band qdisc classifying on the mark
/// instead (`mininet/README.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LaneMark {
    Pcp(u8),
    Dscp(u8),
}

impl Default for LaneMark {
    fn default() -> Self {
        LaneMark::Dscp(8)
    }
}

/// The slow-lane rule for traffic that the hosts of the switch planned in `plan` send to
/// `hot_spot`: table 1's rule that forwards it now (the highest-priority table-1 flow whose
/// match covers `eth_dst = hot_spot`), narrowed to that exact address (and to IPv4 for DSCP),
/// raised to [`SLOW_LANE_PRIORITY`], with the lane mark written before its own actions — so
/// the traffic continues exactly as before, on the slow lane. `None` when table 1 has no rule
/// for `hot_spot` (a switch without hosts), or the mark needs a tag the rule's traffic lacks.
pub fn slow_lane_flow(plan: &SwitchPlan, hot_spot: MacAddr, mark: LaneMark) -> Option<Flow> {
    let covers = |f: &&Flow| {
        f.table == TABLE_INJECT
            && f.priority < SLOW_LANE_PRIORITY
            && f.matches.in_port.is_none()
            && f.matches.arp_op.is_none()
            && f.matches.arp_tpa.is_none()
            && f.matches.eth_type.is_none_or(|t| t == ethertype::IPV4)
            && f.matches.eth_dst.is_some_and(|d| {
                hot_spot.to_u64() & d.mask.to_u64() == d.value.to_u64() & d.mask.to_u64()
            })
    };
    let base = plan
        .flows
        .iter()
        .filter(covers)
        .max_by_key(|f| f.priority)?;
    let mut matches = base.matches.clone();
    matches.eth_dst = Some(Masked {
        value: hot_spot,
        mask: MacAddr::from_u64(0xffff_ffff_ffff),
    });
    let action = match mark {
        LaneMark::Dscp(d) => {
            matches.eth_type = Some(ethertype::IPV4);
            Action::SetField {
                field: Field::IpDscp,
                value: u64::from(d & 0x3f),
            }
        }
        LaneMark::Pcp(p) => {
            // Only tagged frames have a PCP (the lossless plan tags at injection).
            matches.vlan_vid = Some(Masked {
                value: VID_PRESENT,
                mask: VID_PRESENT,
            });
            Action::SetField {
                field: Field::VlanPcp,
                value: u64::from(p & 7),
            }
        }
    };
    let mut instructions = base.instructions.clone();
    instructions.apply.insert(0, action);
    Some(Flow {
        table: TABLE_INJECT,
        priority: SLOW_LANE_PRIORITY,
        cookie: base.cookie,
        matches,
        instructions,
    })
}

/// `plan` with the slow-lane rule of every (edge switch, hot spot) in `lanes` added (pairs
/// that yield no rule are skipped, see [`slow_lane_flow`]); removing a pair from `lanes` and
/// planning again is the unpath. Each switch's flows stay in the plan's order.
pub fn with_slow_lanes(
    fabric: &Fabric,
    plan: &Plan,
    lanes: &BTreeSet<(SwitchId, HostId)>,
    mark: LaneMark,
) -> Plan {
    let mut out = plan.clone();
    for &(edge, hot) in lanes {
        let (Some(sw), Some(h)) = (out.switches.get_mut(edge), fabric.host(hot)) else {
            continue;
        };
        if let Some(f) = slow_lane_flow(sw, h.location.mac(), mark) {
            sw.flows.push(f);
            sw.flows.sort_by(|a, b| {
                (a.table, std::cmp::Reverse(a.priority), &a.matches).cmp(&(
                    b.table,
                    std::cmp::Reverse(b.priority),
                    &b.matches,
                ))
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn obs(host: HostId, edge: SwitchId, toward: f64, from: f64, util: f64) -> HostObservation {
        HostObservation {
            host,
            edge,
            toward_host: toward,
            toward_host_drops_per_s: 0.0,
            from_host: from,
            from_host_utilisation: util,
        }
    }

    /// Hosts 0..6, two per edge switch; host 0 is the hot spot.
    fn fabric(hot: f64, contrib: &[HostId]) -> Vec<HostObservation> {
        (0..6)
            .map(|h| {
                let c = contrib.contains(&h);
                obs(
                    h,
                    h / 2,
                    if h == 0 { hot } else { 0.0 },
                    if c { 0.9 } else { 0.0 },
                    if c { 0.1 } else { 0.9 },
                )
            })
            .collect()
    }

    #[test]
    fn a_hot_spot_is_flagged_in_one_sweep_and_its_contributors_edges_repathed() {
        let mut d = Detector::new(DftreeConfig::default()).unwrap();
        let changes = d.sweep(&fabric(1.0, &[3, 4, 5]));
        assert_eq!(
            changes,
            vec![
                LaneChange::Repath {
                    edge: 1,
                    hot_spot: 0
                },
                LaneChange::Repath {
                    edge: 2,
                    hot_spot: 0
                },
            ]
        );
        assert_eq!(d.hot_spots().collect::<Vec<_>>(), vec![0]);
        assert_eq!(d.contributors(0).collect::<Vec<_>>(), vec![3, 4, 5]);
        // Relieved contributors stay marked; nothing changes while the hot spot stays hot.
        assert!(d.sweep(&fabric(1.0, &[])).is_empty());
        assert_eq!(d.slow_lanes().len(), 2);
    }

    #[test]
    fn a_busy_host_is_no_contributor_and_a_loaded_port_no_hot_spot() {
        let cfg = DftreeConfig::default();
        let hot = cfg.hot_congestion;
        let mut d = Detector::new(cfg).unwrap();
        // Host 0's port is busy but below the threshold; host 3 stalls at full utilisation.
        let mut o = fabric(hot - 0.01, &[]);
        o[3] = obs(3, 1, 0.0, 0.9, 0.8);
        assert!(d.sweep(&o).is_empty());
        assert_eq!(d.hot_spots().count(), 0);
        o[0].toward_host = hot;
        assert!(
            d.sweep(&o).is_empty(),
            "hot, but no under-utilised contributor"
        );
        assert_eq!(d.hot_spots().collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn the_hot_spot_clears_with_hysteresis_and_every_edge_is_unpathed() {
        let cfg = DftreeConfig {
            clear_sweeps: 2,
            ..DftreeConfig::default()
        };
        let between = (cfg.clear_congestion + cfg.hot_congestion) / 2.0;
        let quiet = cfg.clear_congestion / 2.0;
        let mut d = Detector::new(cfg).unwrap();
        d.sweep(&fabric(1.0, &[2, 5]));
        // Between the thresholds: still hot, the quiet count restarts.
        assert!(d.sweep(&fabric(between, &[])).is_empty());
        assert!(
            d.sweep(&fabric(quiet, &[])).is_empty(),
            "one quiet sweep of two"
        );
        assert!(d.sweep(&fabric(between, &[])).is_empty(), "restarted");
        assert!(d.sweep(&fabric(quiet, &[])).is_empty());
        let changes = d.sweep(&fabric(0.0, &[]));
        assert_eq!(
            changes,
            vec![
                LaneChange::Unpath {
                    edge: 1,
                    hot_spot: 0
                },
                LaneChange::Unpath {
                    edge: 2,
                    hot_spot: 0
                },
            ]
        );
        assert!(d.slow_lanes().is_empty());
        assert_eq!(d.contributors(0).count(), 0);
    }

    /// Lossy fabrics: a saturated port that drops little (one TCP flow) is no hot spot; one
    /// dropping at the overload's rate is.
    #[test]
    fn with_a_drop_threshold_only_a_dropping_port_is_a_hot_spot() {
        let cfg = DftreeConfig {
            hot_drops_per_s: 100.0,
            ..DftreeConfig::default()
        };
        let mut d = Detector::new(cfg).unwrap();
        let mut o = fabric(1.0, &[3]);
        o[0].toward_host_drops_per_s = 5.0;
        assert!(d.sweep(&o).is_empty());
        assert_eq!(d.hot_spots().count(), 0);
        o[0].toward_host_drops_per_s = 900.0;
        assert_eq!(d.sweep(&o).len(), 1);
        assert_eq!(d.hot_spots().collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn every_edge_repaths_every_observed_edge_switch() {
        let cfg = DftreeConfig {
            contributors: Contributors::EveryEdge,
            ..DftreeConfig::default()
        };
        let mut d = Detector::new(cfg).unwrap();
        let changes = d.sweep(&fabric(1.0, &[]));
        assert_eq!(changes.len(), 3, "{changes:?}");
        assert_eq!(
            d.slow_lanes().into_iter().collect::<Vec<_>>(),
            vec![(0, 0), (1, 0), (2, 0)]
        );
    }

    #[test]
    fn live_port_stats_rows_become_edge_observations() {
        let f = crate::TopologySpec::LeafSpine { l: 2, s: 1, p: 2 }
            .build()
            .unwrap();
        let rows = |t: u64, stall0: u64| -> Vec<PortStatsRow> {
            [
                format!("{t},leaf0,1,host,tx,{stall0},0,0"),
                format!("{t},leaf0,2,host,tx,0,0,0"),
                format!("{t},leaf1,1,host,tx,{},0,0", t / 10),
                format!("{t},leaf0,3,up,tx,{t},0,0"),
                format!("{t},leaf1,2,host,rx,{t},0,0"),
            ]
            .iter()
            .filter_map(|l| parse_port_stats_row(l))
            .collect()
        };
        let (a, b) = (rows(1_000, 0), rows(3_000, 1_600));
        assert_eq!(
            parse_port_stats_row("5,leaf0,1,host,tx,7,0,42").map(|r| r.drops),
            Some(42)
        );
        assert_eq!(a.len(), 4, "the rx row is not an egress reading");
        let obs = edge_observations(&f, &a, &b);
        // Hosts 0, 1 (leaf0 ports 1, 2) and 2 (leaf1 port 1); host 3 has no row.
        assert_eq!(
            obs.iter().map(|o| o.host).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        assert!((obs[0].toward_host - 0.8).abs() < 1e-12);
        assert_eq!(obs[1].toward_host, 0.0);
        assert!((obs[2].toward_host - 0.1).abs() < 1e-12);
        for bad in [
            "",
            "cycle,switch,port",
            "x,leaf0,1,host,tx,1,0",
            "1,leaf0,-1,host,tx,1",
            "1,leaf0,1,host,tx,1,0,x",
        ] {
            assert!(parse_port_stats_row(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn nonsense_input_and_bad_configurations_are_harmless() {
        let mut d = Detector::new(DftreeConfig::default()).unwrap();
        let o = vec![obs(0, 0, f64::NAN, f64::INFINITY, f64::NAN)];
        assert!(d.sweep(&o).is_empty());
        assert!(d.sweep(&[]).is_empty());
        for bad in [
            DftreeConfig {
                hot_congestion: 0.0,
                ..DftreeConfig::default()
            },
            DftreeConfig {
                clear_congestion: 0.9,
                ..DftreeConfig::default()
            },
            DftreeConfig {
                clear_sweeps: 0,
                ..DftreeConfig::default()
            },
        ] {
            assert!(Detector::new(bad).is_err());
        }
    }
}
