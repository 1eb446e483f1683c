//! Flow-aware routing on (extended) fat-trees and SAA rate allocation — pure, no simulator, no
//! switch.
//!
//! An HPC job knows its communication phase: every source knows its destinations and how much
//! it sends. Given that flow set, [`TreeRouter::assign`] gives every flow one path:
//!
//! - [`Algorithm::DModK`]: oblivious destination-mod-k up*/down* (the up port at level l is digit
//!   l of the destination host's number, host = leaf·k + port − 1); horizontal links unused.
//! - [`Algorithm::Greedy`]: the seed's least-loaded setup, hop by hop in flow order: going up,
//!   the up port with the fewest flows; going down, at every level, the switch itself or one of
//!   its ring neighbours (one horizontal hop) whose down link towards the destination carries
//!   the fewest flows (the horizontal link's own count breaks ties against staying). Ties keep
//!   the D-mod-k choice.
//! - [`Algorithm::Balanced`]: the improved variant. Each flow takes the path of least total
//!   marginal cost, a link of current load c costing 16^c (so one link at load c outweighs every
//!   path's links at load c − 1 together: this is min-max with lexicographic tie-breaks, solved
//!   exactly by dynamic programming over the tree's levels); then every flow is ripped up and
//!   re-routed the same way once, in order, against all the others.
//!
//! **Paths.** From source leaf v to destination leaf u with nearest common ancestors at level L:
//! L up hops (any up port), then for each level l = L..1 an optional horizontal hop to a ring
//! neighbour at distance ±1..±w followed by the down hop towards u (unique from a given switch),
//! then the host port. At most one horizontal hop per level, never during ascent: ranking a
//! channel up(l) < horizontal(l') < down(l') < horizontal(l'−1) < … shows every path climbs the
//! ranks, so the channel dependency graph is acyclic and no path loops (checked on the plan by
//! the existing walker and CDG tests, `controller/tests/flowrules.rs`).
//!
//! **Loads and congestion.** The load of a directed link (a channel: a switch's output port, or
//! a host's link into its leaf) is the number of flows on it (or their total weight). A flow's
//! *encountered congestion* is the largest load on its path; [`Assignment::congestion`] gives its
//! maximum and its mean over flows (the seed's "maximum and average encountered congestion").
//!
//! **Per-flow rules** ([`phase_rules`]): a pinned flow gets one exact-match rule (`eth_src`,
//! `eth_dst`) on every switch of its path but the destination's leaf (whose host rule delivers),
//! in table 1 on the source leaf and table 2 elsewhere, at [`FLOW_PRIORITY`] (above every
//! destination and diversion rule), with idle and hard timeouts so a phase's rules go away by
//! themselves, and their own cookie ([`PHASE_COOKIE`]) so the controller's sync, which only
//! touches rules with the plan's cookie, leaves them alone. At most `max_per_switch` per
//! switch: a flow whose path crosses a full switch gets no rule at all and follows the
//! destination rules (the seed's "default port when no routing entry is free"). The rules tell
//! flows apart by their hosts only, so a repeated (source, destination) pair gets no rules of its
//! own: it follows the first one's.
//!
//! **SAA** ([`saa_rates`], Single Application Assignment): with W_l the total weight of the
//! flows on link l and W_f the largest W_l on f's path, r(f) = w_f / W_f (as a fraction of the
//! line rate) is feasible on every link and every flow finishes within W = max_l W_l time units
//! (of line time per unit weight).

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use std::collections::BTreeMap;

use crate::plan::ir::{Action, Flow, Instructions, Masked, Match};
use crate::plan::{TABLE_INJECT, TABLE_TRANSIT};
use crate::topology::fattree::FatTree;
use crate::topology::{Fabric, FabricKind, HostId, Peer, PortNo, SwitchId};

/// Why flows could not be routed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlowRouteError {
    #[error("flow-aware routing needs a generated fat-tree (fattree:k=K,n=N[,w=W])")]
    NotAFatTree,
    #[error(transparent)]
    Topology(#[from] TopologyParams),
    #[error("flow {index}: unknown host {host}")]
    UnknownHost { index: usize, host: HostId },
    #[error("unknown host {0:?}")]
    UnknownHostName(String),
}

/// The fat-tree parameters were rejected (kept as text so the error stays `Clone`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TopologyParams(pub String);

/// One flow of a phase: source and destination host and its weight w_f (its size).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PhaseFlow {
    pub src: HostId,
    pub dst: HostId,
    pub weight: f64,
}

/// How flows are given paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Algorithm {
    DModK,
    Greedy,
    Balanced,
}

impl Algorithm {
    /// Its name in CSVs and flags.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::DModK => "dmodk",
            Algorithm::Greedy => "greedy",
            Algorithm::Balanced => "balanced",
        }
    }
}

impl std::str::FromStr for Algorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "dmodk" => Ok(Algorithm::DModK),
            "greedy" => Ok(Algorithm::Greedy),
            "balanced" => Ok(Algorithm::Balanced),
            _ => Err(format!("unknown algorithm {s:?} (dmodk, greedy, balanced)")),
        }
    }
}

/// One switch output on a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Hop {
    pub switch: SwitchId,
    pub port: PortNo,
}

/// A flow's path: every switch output from the source leaf to the destination host's port.
pub type Path = Vec<Hop>;

/// Paths for a flow set, with the link loads they make.
#[derive(Debug, Clone)]
pub struct Assignment {
    pub paths: Vec<Path>,
    /// Flows per channel ([`TreeRouter::channel`] numbering).
    pub load: Vec<u32>,
}

/// Maximum and mean (over flows) encountered congestion.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Congestion {
    pub max: u32,
    pub mean: f64,
}

/// Routes flows on one (extended) fat-tree.
#[derive(Debug, Clone)]
pub struct TreeRouter {
    t: FatTree,
    /// (leaf label, host port) of every host.
    hosts: Vec<(u32, PortNo)>,
    /// First channel of each switch (its port p is base + p − 1).
    base: Vec<usize>,
    /// Channels of switch outputs; host injection channels follow.
    switch_channels: usize,
}

/// Marginal cost of adding a flow to a link carrying `load`: 16^load, capped.
fn marginal(load: u32) -> f64 {
    16f64.powi(i32::try_from(load.min(200)).unwrap_or(200))
}

impl TreeRouter {
    /// A router for `fabric`, which must be a generated fat-tree.
    pub fn new(fabric: &Fabric) -> Result<Self, FlowRouteError> {
        let FabricKind::FatTree { k, n, w } = fabric.kind() else {
            return Err(FlowRouteError::NotAFatTree);
        };
        let t = FatTree::with_width(k, n, w).map_err(|e| TopologyParams(e.to_string()))?;
        let mut base = Vec::with_capacity(fabric.switches().len());
        let mut next = 0usize;
        for sw in fabric.switches() {
            base.push(next);
            next += sw.ports.last().map_or(0, |p| p.no as usize);
        }
        let pl = t.per_level as usize;
        let hosts = fabric
            .hosts()
            .iter()
            .map(|h| ((h.switch % pl) as u32, h.port))
            .collect();
        Ok(TreeRouter {
            t,
            hosts,
            base,
            switch_channels: next,
        })
    }

    /// The tree's parameters.
    pub fn tree(&self) -> &FatTree {
        &self.t
    }

    /// Number of channels (switch outputs, then one per host injection link).
    pub fn channels(&self) -> usize {
        self.switch_channels + self.hosts.len()
    }

    /// The channel of a switch output.
    pub fn channel(&self, hop: Hop) -> usize {
        self.base.get(hop.switch).copied().unwrap_or(0) + hop.port as usize - 1
    }

    /// The channel of host `h`'s link into its leaf.
    pub fn injection(&self, h: HostId) -> usize {
        self.switch_channels + h
    }

    /// (leaf label, host port) of a host.
    fn place(&self, h: HostId) -> Option<(u32, PortNo)> {
        self.hosts.get(h).copied()
    }

    fn down_port(&self, u: u32, l: u32) -> PortNo {
        self.t.digit(u, l - 1) + 1
    }

    /// The D-mod-k path of a flow.
    pub fn dmodk(&self, src: HostId, dst: HostId) -> Option<Path> {
        let (v, _) = self.place(src)?;
        let (u, port) = self.place(dst)?;
        let k = self.t.k;
        let d = u * k + (port - 1);
        let top = self.t.nca_level(v, u);
        let ups: Vec<u32> = (0..top).map(|l| (d / k.pow(l)) % k).collect();
        Some(self.path(v, u, port, &ups, &vec![0; top as usize]))
    }

    /// The path from leaf v up by `ups` (one up index per level), then down with the
    /// horizontal moves `horiz` (one per level, from the top level down; 0 = stay).
    fn path(&self, v: u32, u: u32, port: PortNo, ups: &[u32], horiz: &[i64]) -> Path {
        let mut out = Vec::with_capacity(ups.len() * 3 + 1);
        let mut x = v;
        for (l, &q) in (0u32..).zip(ups) {
            out.push(Hop {
                switch: self.t.id(x, l),
                port: self.t.up_port(q),
            });
            x = self.t.with_digit(x, l, q);
        }
        let top = u32::try_from(ups.len()).unwrap_or(0);
        for (i, &h) in (0u32..).zip(horiz) {
            let l = top - i;
            if h != 0 {
                if let Some(p) = self.t.horizontal_port(l, h) {
                    out.push(Hop {
                        switch: self.t.id(x, l),
                        port: p,
                    });
                    x = self.t.ring_neighbour(x, l, h);
                }
            }
            out.push(Hop {
                switch: self.t.id(x, l),
                port: self.down_port(u, l),
            });
            x = self.t.with_digit(x, l - 1, self.t.digit(u, l - 1));
        }
        out.push(Hop {
            switch: self.t.id(u, 0),
            port,
        });
        out
    }

    fn moves(&self) -> Vec<i64> {
        let w = i64::from(self.t.w);
        std::iter::once(0)
            .chain((1..=w).flat_map(|d| [d, -d]))
            .collect()
    }

    fn load_of(&self, load: &[u32], hop: Hop) -> u32 {
        load.get(self.channel(hop)).copied().unwrap_or(0)
    }

    /// The seed's hop-by-hop least-loaded path for one flow against `load`.
    pub fn greedy(&self, src: HostId, dst: HostId, load: &[u32]) -> Option<Path> {
        let (v, _) = self.place(src)?;
        let (u, port) = self.place(dst)?;
        let k = self.t.k;
        let d = u * k + (port - 1);
        let top = self.t.nca_level(v, u);
        let mut ups = Vec::with_capacity(top as usize);
        let mut x = v;
        for l in 0..top {
            let default = (d / k.pow(l)) % k;
            let q = std::iter::once(default)
                .chain((0..k).filter(|&q| q != default))
                .min_by_key(|&q| {
                    self.load_of(
                        load,
                        Hop {
                            switch: self.t.id(x, l),
                            port: self.t.up_port(q),
                        },
                    )
                })
                .unwrap_or(default);
            ups.push(q);
            x = self.t.with_digit(x, l, q);
        }
        let mut horiz = Vec::with_capacity(top as usize);
        let moves = self.moves();
        for l in (1..=top).rev() {
            let h = moves
                .iter()
                .copied()
                .min_by_key(|&h| {
                    let y = self.t.ring_neighbour(x, l, h);
                    let down = self.load_of(
                        load,
                        Hop {
                            switch: self.t.id(y, l),
                            port: self.down_port(u, l),
                        },
                    );
                    let side = self.t.horizontal_port(l, h).map_or(0, |p| {
                        self.load_of(
                            load,
                            Hop {
                                switch: self.t.id(x, l),
                                port: p,
                            },
                        )
                    });
                    (down, side)
                })
                .unwrap_or(0);
            horiz.push(h);
            x = self.t.ring_neighbour(x, l, h);
            x = self.t.with_digit(x, l - 1, self.t.digit(u, l - 1));
        }
        Some(self.path(v, u, port, &ups, &horiz))
    }

    /// The path of least total marginal cost (16^load per link) for one flow against `load`,
    /// by dynamic programming: the best descent cost from every switch above the destination,
    /// level by level, then the ascent to the nearest common ancestors (a tree from the source).
    pub fn balanced(&self, src: HostId, dst: HostId, load: &[u32]) -> Option<Path> {
        let (v, _) = self.place(src)?;
        let (u, port) = self.place(dst)?;
        let top = self.t.nca_level(v, u);
        let moves = self.moves();
        let cost = |x: u32, l: u32, p: PortNo| {
            marginal(self.load_of(
                load,
                Hop {
                    switch: self.t.id(x, l),
                    port: p,
                },
            ))
        };
        // desc[l][pos]: best cost from the switch above u at level l whose ring position is
        // pos (digits 0..l−1; digits l.. equal u's) down to the host; and the move taken.
        let mut desc: Vec<Vec<(f64, i64)>> = Vec::with_capacity(top as usize + 1);
        desc.push(vec![(cost(u, 0, port), 0)]);
        for l in 1..=top {
            let m = self.t.ring(l);
            let ring_base = u - u % m;
            let below = desc.last().cloned().unwrap_or_default();
            let mut here = Vec::with_capacity(m as usize);
            for pos in 0..m {
                let x = ring_base + pos;
                let mut best = (f64::INFINITY, 0);
                for &h in &moves {
                    let y = self.t.ring_neighbour(x, l, h);
                    let side = self.t.horizontal_port(l, h).map_or(0.0, |p| cost(x, l, p));
                    let child = self.t.with_digit(y, l - 1, self.t.digit(u, l - 1));
                    let rest = below
                        .get((child % self.t.ring(l - 1)) as usize)
                        .map_or(f64::INFINITY, |c| c.0);
                    let c = side + cost(y, l, self.down_port(u, l)) + rest;
                    if c < best.0 {
                        best = (c, h);
                    }
                }
                here.push(best);
            }
            desc.push(here);
        }
        // Ascent: the NCA switch at ring position pos is reached by exactly one up path, whose
        // up index at level l is digit l of pos; its cost, level by level.
        let mut asc = vec![0.0f64];
        for l in 0..top {
            let span = self.t.ring(l);
            let mut next = vec![f64::INFINITY; (span * self.t.k) as usize];
            for (pos, &c) in (0u32..).zip(&asc) {
                let x = v - v % span + pos;
                for q in 0..self.t.k {
                    if let Some(slot) = next.get_mut((pos + q * span) as usize) {
                        *slot = c + cost(x, l, self.t.up_port(q));
                    }
                }
            }
            asc = next;
        }
        let last = desc.get(top as usize)?;
        let (best_pos, _) = (0u32..)
            .zip(asc.iter().zip(last))
            .map(|(pos, (a, d))| (pos, a + d.0))
            .fold((0, f64::INFINITY), |b, x| if x.1 < b.1 { x } else { b });
        let ups: Vec<u32> = (0..top).map(|l| self.t.digit(best_pos, l)).collect();
        // Replay the descent's choices from the chosen NCA switch.
        let mut x = v;
        for (l, &q) in (0u32..).zip(&ups) {
            x = self.t.with_digit(x, l, q);
        }
        let mut horiz = Vec::with_capacity(top as usize);
        for l in (1..=top).rev() {
            let h = desc
                .get(l as usize)
                .and_then(|d| d.get((x % self.t.ring(l)) as usize))
                .map_or(0, |d| d.1);
            horiz.push(h);
            x = self.t.ring_neighbour(x, l, h);
            x = self.t.with_digit(x, l - 1, self.t.digit(u, l - 1));
        }
        Some(self.path(v, u, port, &ups, &horiz))
    }

    /// Adds `delta` flows to the channels of `src`'s flow on `path`.
    pub fn add_load(&self, load: &mut [u32], src: HostId, path: &[Hop], delta: i32) {
        let chans =
            std::iter::once(self.injection(src)).chain(path.iter().map(|&h| self.channel(h)));
        for c in chans {
            if let Some(x) = load.get_mut(c) {
                *x = x.saturating_add_signed(delta);
            }
        }
    }

    /// Paths for `flows` by `algo` (flows are routed in order).
    pub fn assign(
        &self,
        flows: &[(HostId, HostId)],
        algo: Algorithm,
    ) -> Result<Assignment, FlowRouteError> {
        let mut load = vec![0u32; self.channels()];
        let mut paths = Vec::with_capacity(flows.len());
        let route = |s, d, load: &[u32]| match algo {
            Algorithm::DModK => self.dmodk(s, d),
            Algorithm::Greedy => self.greedy(s, d, load),
            Algorithm::Balanced => self.balanced(s, d, load),
        };
        for (index, &(s, d)) in flows.iter().enumerate() {
            let bad = || FlowRouteError::UnknownHost {
                index,
                host: if self.place(s).is_none() { s } else { d },
            };
            let p = route(s, d, &load).ok_or_else(bad)?;
            self.add_load(&mut load, s, &p, 1);
            paths.push(p);
        }
        if algo == Algorithm::Balanced {
            for (i, &(s, d)) in flows.iter().enumerate() {
                let Some(old) = paths.get(i).cloned() else {
                    continue;
                };
                self.add_load(&mut load, s, &old, -1);
                let p = self.balanced(s, d, &load).unwrap_or(old);
                self.add_load(&mut load, s, &p, 1);
                if let Some(slot) = paths.get_mut(i) {
                    *slot = p;
                }
            }
        }
        Ok(Assignment { paths, load })
    }

    /// Encountered congestion of an assignment of `flows`.
    pub fn congestion(&self, flows: &[(HostId, HostId)], a: &Assignment) -> Congestion {
        let mut max = 0;
        let mut sum = 0.0;
        for (&(s, _), p) in flows.iter().zip(&a.paths) {
            let c = std::iter::once(self.injection(s))
                .chain(p.iter().map(|&h| self.channel(h)))
                .filter_map(|c| a.load.get(c).copied())
                .max()
                .unwrap_or(0);
            max = max.max(c);
            sum += f64::from(c);
        }
        Congestion {
            max,
            mean: if flows.is_empty() {
                0.0
            } else {
                sum / flows.len() as f64
            },
        }
    }

    /// Whether every hop of `path` leads where it says: consecutive hops are joined by links,
    /// the first leaves the source's leaf and the last is the destination's host port.
    pub fn is_valid(fabric: &Fabric, src: HostId, dst: HostId, path: &[Hop]) -> bool {
        let (Some(hs), Some(hd)) = (fabric.host(src), fabric.host(dst)) else {
            return false;
        };
        let Some(first) = path.first() else {
            return false;
        };
        if first.switch != hs.switch {
            return false;
        }
        for pair in path.windows(2) {
            let [a, b] = pair else { return false };
            match fabric.peer(a.switch, a.port) {
                Some(Peer::Switch { switch, .. }) if switch == b.switch => {}
                _ => return false,
            }
        }
        path.last().is_some_and(|l| {
            fabric.peer(l.switch, l.port) == Some(Peer::Host(dst)) && l.switch == hd.switch
        })
    }
}

/// SAA rates r(f) = w_f / W_f as a fraction of the line rate, and W = max_l W_l: each flow's
/// path is the injection channel of its source and its hops (`channels`, from
/// [`TreeRouter::injection`] and [`TreeRouter::channel`]).
pub fn saa_rates(channels: &[Vec<usize>], weights: &[f64], n_channels: usize) -> (Vec<f64>, f64) {
    let mut link = vec![0.0f64; n_channels];
    for (cs, &w) in channels.iter().zip(weights) {
        for &c in cs {
            if let Some(x) = link.get_mut(c) {
                *x += w;
            }
        }
    }
    let rates = channels
        .iter()
        .zip(weights)
        .map(|(cs, &w)| {
            let wf = cs
                .iter()
                .filter_map(|&c| link.get(c).copied())
                .fold(0.0f64, f64::max);
            if wf > 0.0 {
                w / wf
            } else {
                1.0
            }
        })
        .collect();
    let max = link.iter().copied().fold(0.0f64, f64::max);
    (rates, max)
}

/// The channels of each flow's path (injection first), for [`saa_rates`].
pub fn path_channels(
    r: &TreeRouter,
    flows: &[(HostId, HostId)],
    a: &Assignment,
) -> Vec<Vec<usize>> {
    flows
        .iter()
        .zip(&a.paths)
        .map(|(&(s, _), p)| {
            std::iter::once(r.injection(s))
                .chain(p.iter().map(|&h| r.channel(h)))
                .collect()
        })
        .collect()
}

/// Cookie of the per-flow rules of a phase (the plan's is `0x0fab_f10a_0000_0001`).
pub const PHASE_COOKIE: u64 = 0x0fab_f10a_0000_0002;
/// Priority of the per-flow rules: above the destination (1000 + 48) and diversion (2000 + 48)
/// rules.
pub const FLOW_PRIORITY: u16 = 3000;

/// Limits and lifetimes of a phase's per-flow rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PhaseRuleOptions {
    /// Per-flow rules a switch may hold.
    pub max_per_switch: usize,
    /// Seconds without a packet before a rule expires (0: never).
    pub idle_timeout: u16,
    /// Seconds before a rule expires in any case (0: never).
    pub hard_timeout: u16,
    pub cookie: u64,
}

impl Default for PhaseRuleOptions {
    fn default() -> Self {
        PhaseRuleOptions {
            max_per_switch: 1024,
            idle_timeout: 10,
            hard_timeout: 300,
            cookie: PHASE_COOKIE,
        }
    }
}

/// One per-flow rule on one switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhaseRule {
    pub switch: SwitchId,
    pub flow: Flow,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
}

impl PhaseRule {
    /// The `ovs-ofctl add-flow` line.
    pub fn ofctl_line(&self) -> String {
        format!(
            "idle_timeout={},hard_timeout={},{}",
            self.idle_timeout,
            self.hard_timeout,
            crate::ofctl::flow_line(&self.flow)
        )
    }
}

/// The per-flow rules of a phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhaseRules {
    pub rules: Vec<PhaseRule>,
    /// Per flow: whether it got its rules (else it follows the destination rules).
    pub pinned: Vec<bool>,
}

impl PhaseRules {
    /// Rules per switch.
    pub fn per_switch(&self) -> BTreeMap<SwitchId, usize> {
        let mut out = BTreeMap::new();
        for r in &self.rules {
            *out.entry(r.switch).or_default() += 1;
        }
        out
    }
}

/// Per-flow rules for `flows` on `paths` (see the module docs).
pub fn phase_rules(
    fabric: &Fabric,
    flows: &[(HostId, HostId)],
    paths: &[Path],
    opts: &PhaseRuleOptions,
) -> PhaseRules {
    let mut used: BTreeMap<SwitchId, usize> = BTreeMap::new();
    let mut rules = Vec::new();
    let mut pinned = Vec::with_capacity(flows.len());
    let mut seen = std::collections::BTreeSet::new();
    for (&(s, d), path) in flows.iter().zip(paths) {
        let (Some(hs), Some(hd), true) = (fabric.host(s), fabric.host(d), seen.insert((s, d)))
        else {
            pinned.push(false);
            continue;
        };
        // Every hop but the delivery.
        let hops = path.get(..path.len().saturating_sub(1)).unwrap_or(&[]);
        let fits = hops
            .iter()
            .all(|h| used.get(&h.switch).copied().unwrap_or(0) < opts.max_per_switch);
        pinned.push(fits);
        if !fits {
            continue;
        }
        for (i, h) in hops.iter().enumerate() {
            *used.entry(h.switch).or_default() += 1;
            let exact = |mac| Masked {
                value: mac,
                mask: fabricflow_proto::MacAddr::BROADCAST,
            };
            rules.push(PhaseRule {
                switch: h.switch,
                flow: Flow {
                    table: if i == 0 { TABLE_INJECT } else { TABLE_TRANSIT },
                    priority: FLOW_PRIORITY,
                    cookie: opts.cookie,
                    matches: Match {
                        eth_src: Some(exact(hs.location.mac())),
                        eth_dst: Some(exact(hd.location.mac())),
                        ..Default::default()
                    },
                    instructions: Instructions::apply(vec![Action::Output(h.port)]),
                },
                idle_timeout: opts.idle_timeout,
                hard_timeout: opts.hard_timeout,
            });
        }
    }
    PhaseRules { rules, pinned }
}

/// One flow of a phase request, hosts by name (as `fabricflow-controller topology` prints them).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, Serialize)]
pub struct PhaseFlowRequest {
    pub src: String,
    pub dst: String,
    /// w_f, the flow's size in any unit (1 if absent).
    #[serde(default)]
    pub weight: Option<f64>,
}

/// A phase's flow set: the body of `POST /api/v1/phase` and the file of
/// `fabricflow-controller phase`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, Serialize)]
pub struct PhaseRequest {
    pub flows: Vec<PhaseFlowRequest>,
}

/// One hop of an answered path, by switch name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedHop {
    pub switch: String,
    pub port: PortNo,
}

/// One flow of a phase answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseFlowAnswer {
    pub src: String,
    pub dst: String,
    /// SAA rate, a fraction of the line rate.
    pub rate: f64,
    /// Whether it got per-flow rules.
    pub pinned: bool,
    pub path: Vec<NamedHop>,
}

/// Paths, SAA rates and per-flow rules for a phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseAnswer {
    pub algorithm: &'static str,
    /// SAA's completion time: the largest link weight.
    pub w: f64,
    pub max_link_flows: u32,
    pub mean_link_flows: f64,
    pub flows: Vec<PhaseFlowAnswer>,
    /// `ovs-ofctl add-flow` lines per switch name.
    pub rules: BTreeMap<String, Vec<String>>,
}

/// Routes a phase on `fabric` (a generated fat-tree): paths by `algo`, SAA rates, per-flow
/// rules under `opts`.
pub fn plan_phase(
    fabric: &Fabric,
    req: &PhaseRequest,
    algo: Algorithm,
    opts: &PhaseRuleOptions,
) -> Result<PhaseAnswer, FlowRouteError> {
    let by_name: BTreeMap<&str, HostId> = fabric
        .hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| (h.name.as_str(), i))
        .collect();
    let host = |n: &str| {
        by_name
            .get(n)
            .copied()
            .ok_or_else(|| FlowRouteError::UnknownHostName(n.to_owned()))
    };
    let flows: Vec<(HostId, HostId)> = req
        .flows
        .iter()
        .map(|f| Ok((host(&f.src)?, host(&f.dst)?)))
        .collect::<Result<_, FlowRouteError>>()?;
    let weights: Vec<f64> = req.flows.iter().map(|f| f.weight.unwrap_or(1.0)).collect();
    let router = TreeRouter::new(fabric)?;
    let a = router.assign(&flows, algo)?;
    let chans = path_channels(&router, &flows, &a);
    let (rates, w) = saa_rates(&chans, &weights, router.channels());
    let rules = phase_rules(fabric, &flows, &a.paths, opts);
    let name = |s: SwitchId| {
        fabric
            .switch(s)
            .map_or_else(String::new, |x| x.name.clone())
    };
    let mut per_switch: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in &rules.rules {
        per_switch
            .entry(name(r.switch))
            .or_default()
            .push(r.ofctl_line());
    }
    let c = router.congestion(&flows, &a);
    Ok(PhaseAnswer {
        algorithm: algo.name(),
        w,
        max_link_flows: c.max,
        mean_link_flows: c.mean,
        flows: req
            .flows
            .iter()
            .zip(&a.paths)
            .zip(rates.iter().zip(&rules.pinned))
            .map(|((f, p), (&rate, &pinned))| PhaseFlowAnswer {
                src: f.src.clone(),
                dst: f.dst.clone(),
                rate,
                pinned,
                path: p
                    .iter()
                    .map(|h| NamedHop {
                        switch: name(h.switch),
                        port: h.port,
                    })
                    .collect(),
            })
            .collect(),
        rules: per_switch,
    })
}

/// `count` superposed random permutations of `hosts` hosts (a host's flow to itself left out),
/// drawn from `seed`.
pub fn random_permutations(hosts: usize, count: usize, seed: u64) -> Vec<(HostId, HostId)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(hosts * count);
    for _ in 0..count {
        let mut dst: Vec<HostId> = (0..hosts).collect();
        dst.shuffle(&mut rng);
        out.extend((0..hosts).zip(dst).filter(|(s, d)| s != d));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::topology::TopologySpec;

    fn fabric(spec: &str) -> Fabric {
        spec.parse::<TopologySpec>().unwrap().build().unwrap()
    }

    #[test]
    fn every_algorithm_gives_valid_paths() {
        for spec in [
            "fattree:k=4,n=2,w=1",
            "fattree:k=4,n=3,w=2",
            "fattree:k=3,n=3",
        ] {
            let f = fabric(spec);
            let r = TreeRouter::new(&f).unwrap();
            let flows = random_permutations(f.hosts().len(), 3, 7);
            for algo in [Algorithm::DModK, Algorithm::Greedy, Algorithm::Balanced] {
                let a = r.assign(&flows, algo).unwrap();
                for (&(s, d), p) in flows.iter().zip(&a.paths) {
                    assert!(
                        TreeRouter::is_valid(&f, s, d, p),
                        "{spec} {algo:?} {s}->{d}: {p:?}"
                    );
                }
                let total: u32 = a.load.iter().sum();
                let hops: usize = a.paths.iter().map(|p| p.len() + 1).sum();
                assert_eq!(total as usize, hops, "{spec} {algo:?}");
            }
        }
    }

    #[test]
    fn dmodk_never_uses_horizontal_links_and_adaptive_does() {
        let f = fabric("fattree:k=4,n=3,w=2");
        let r = TreeRouter::new(&f).unwrap();
        let flows = random_permutations(f.hosts().len(), 4, 3);
        let horizontal = |a: &Assignment| {
            a.paths
                .iter()
                .flatten()
                .filter(|h| {
                    f.switches()[h.switch].port(h.port).unwrap().role
                        == crate::topology::PortRole::Horizontal
                })
                .count()
        };
        assert_eq!(horizontal(&r.assign(&flows, Algorithm::DModK).unwrap()), 0);
        assert!(horizontal(&r.assign(&flows, Algorithm::Balanced).unwrap()) > 0);
    }

    /// The pure acceptance's direction at a CI-sized scale: 4-ary 3-tree (64 hosts), w = 2,
    /// 50 random permutations: adaptive on the extended tree lowers the max and the mean
    /// encountered congestion of D-mod-k on the plain tree (the release-scale run is the
    /// `ar-saa pure` subcommand of `fabricflow-sim`).
    #[test]
    fn adaptive_on_the_extended_tree_beats_dmodk_on_the_plain_tree() {
        let plain = fabric("fattree:k=4,n=3");
        let ext = fabric("fattree:k=4,n=3,w=2");
        let (rp, re) = (
            TreeRouter::new(&plain).unwrap(),
            TreeRouter::new(&ext).unwrap(),
        );
        let (mut obl, mut greedy, mut bal) = ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0));
        for seed in 0..50 {
            let flows = random_permutations(64, 1, seed);
            let acc = |acc: &mut (f64, f64), c: Congestion| {
                acc.0 += f64::from(c.max);
                acc.1 += c.mean;
            };
            acc(
                &mut obl,
                rp.congestion(&flows, &rp.assign(&flows, Algorithm::DModK).unwrap()),
            );
            acc(
                &mut greedy,
                re.congestion(&flows, &re.assign(&flows, Algorithm::Greedy).unwrap()),
            );
            acc(
                &mut bal,
                re.congestion(&flows, &re.assign(&flows, Algorithm::Balanced).unwrap()),
            );
        }
        assert!(
            bal.0 <= 0.55 * obl.0,
            "max: balanced {} vs D-mod-k {}",
            bal.0,
            obl.0
        );
        assert!(
            bal.1 <= 0.85 * obl.1,
            "mean: balanced {} vs D-mod-k {}",
            bal.1,
            obl.1
        );
        assert!(
            greedy.0 < obl.0 && greedy.1 < obl.1,
            "greedy {greedy:?} vs {obl:?}"
        );
    }

    #[test]
    fn a_phase_request_is_answered_with_paths_rates_and_rules() {
        let f = fabric("fattree:k=4,n=2,w=1");
        let req: PhaseRequest = serde_json::from_str(
            r#"{"flows": [{"src": "h0.0.1", "dst": "h1.0.1"}, {"src": "h0.0.2", "dst": "h1.0.2", "weight": 3}]}"#,
        )
        .unwrap();
        let a = plan_phase(&f, &req, Algorithm::Balanced, &PhaseRuleOptions::default()).unwrap();
        assert_eq!(a.flows.len(), 2);
        assert!(a.flows.iter().all(|x| x.pinned && x.path.len() == 3));
        // Balanced paths share no fabric link (two of leaf 0's four roots), so each flow's
        // heaviest link carries only itself: rates 1 and 1, W = 3 (the weight-3 flow).
        assert_eq!(a.w, 3.0);
        assert_eq!(a.flows[0].rate, 1.0);
        assert_eq!(a.flows[1].rate, 1.0);
        // One rule per switch of each path but the destination leaf.
        assert_eq!(a.rules.values().map(Vec::len).sum::<usize>(), 4);
        let bad: PhaseRequest =
            serde_json::from_str(r#"{"flows": [{"src": "h9.9.9", "dst": "h1.0.1"}]}"#).unwrap();
        assert_eq!(
            plan_phase(&f, &bad, Algorithm::Greedy, &PhaseRuleOptions::default()),
            Err(FlowRouteError::UnknownHostName("h9.9.9".into()))
        );
    }

    #[test]
    fn saa_rates_are_feasible_and_finish_in_w() {
        let f = fabric("fattree:k=4,n=3,w=1");
        let r = TreeRouter::new(&f).unwrap();
        let flows = random_permutations(64, 3, 11);
        let a = r.assign(&flows, Algorithm::Greedy).unwrap();
        let chans = path_channels(&r, &flows, &a);
        let weights: Vec<f64> = (0..flows.len()).map(|i| 1.0 + (i % 3) as f64).collect();
        let (rates, w) = saa_rates(&chans, &weights, r.channels());
        // Feasible: no channel carries more than the line rate.
        let mut used = vec![0.0; r.channels()];
        for (cs, rate) in chans.iter().zip(&rates) {
            for &c in cs {
                used[c] += rate;
            }
        }
        assert!(used.iter().all(|&u| u <= 1.0 + 1e-9));
        // Every flow finishes by W, and the flow on the heaviest link exactly at W.
        let times: Vec<f64> = weights.iter().zip(&rates).map(|(w, r)| w / r).collect();
        assert!(times.iter().all(|&t| t <= w + 1e-9));
        assert!(times.iter().any(|&t| (t - w).abs() < 1e-9));
        // Weight-proportional on a shared bottleneck: one link, weights 1 and 3.
        let (r2, w2) = saa_rates(&[vec![0], vec![0, 1]], &[1.0, 3.0], 2);
        assert_eq!((r2, w2), (vec![0.25, 0.75], 4.0));
    }
}
