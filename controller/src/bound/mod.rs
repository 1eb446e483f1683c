//! The throughput optimum of a fabric under a traffic pattern: the ceiling a routing mode's
//! measured throughput is compared against (`fabricflow-controller bound`, the Mininet harness's
//! `fraction_of_optimum`).
//!
//! The traffic is the registry's ([`crate::traffic`]): either the harness's flows (one unlimited
//! TCP stream per sending host, so each flow's demand is its host link's rate) or the
//! simulator's matrix (every host offers its link rate, spread over its destination
//! distribution, [`Destinations::probability`]). The network is the fabric's directed links, each
//! with the rate of its class ([`LinkRates`], as the harness shapes them), plus the host links.
//!
//! Two multi-commodity flow linear programs per routing ([`lp`], solved by `good_lp` with the
//! pure-Rust Clarabel interior-point solver):
//! - **max-concurrent flow**: every demand gets the same fraction λ of itself; maximise λ
//!   (fairness as TCP approximates it),
//! - **maximum aggregate throughput**: maximise Σ of the demands' rates, each at most its demand.
//!
//! Flow is fluid and splittable. [`Routing`] restricts the paths, so every harness mode has its
//! own ceiling: `any` (every path: the fabric's optimum), `minimal` (the routes' equal-cost
//! minimal paths), `valiant` (the paths the planner's P = 0 rules can draw: out through a
//! non-minimal candidate, minimally from the intermediate group on) and `adaptive` (minimal and
//! valiant paths together: what the SELECT groups can split between, the QCN-SW modes' ceiling).
//!
//! Size: `any` is an edge formulation with commodities aggregated by destination switch (exact:
//! a flow to one sink decomposes into per-source flows), destination switches × directed links
//! variables. The restricted routings are path formulations, a few paths per (source switch,
//! destination switch) pair that carries demand; `minimal` falls back to the edge formulation
//! over the minimal DAG where pairs have many equal-cost paths (large fat-trees).

mod lp;
mod paths;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::pipeline::ExecError;
use crate::plan::PlanError;
use crate::routes::Routes;
use crate::topology::{Fabric, HostId, Peer, PortNo, PortRole, SwitchId};
use crate::traffic::{Pattern, TrafficError};

/// Rate of every link class in Mb/s, per direction, at the sending end: as the Mininet harness
/// shapes them (`mininet/fftopo.py`): host links both ways at `host`; Dragonfly `local` and
/// `global` symmetric; fat-tree `up` on the lower switch's side and `down` on the upper's
/// (an extended fat-tree's horizontal links at `up` both ways);
/// `fabric` for the links of a file fabric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinkRates {
    pub host: f64,
    pub local: f64,
    pub global: f64,
    pub up: f64,
    pub down: f64,
    pub fabric: f64,
}

impl LinkRates {
    /// Every class at `mbps`.
    pub fn uniform(mbps: f64) -> LinkRates {
        LinkRates {
            host: mbps,
            local: mbps,
            global: mbps,
            up: mbps,
            down: mbps,
            fabric: mbps,
        }
    }

    /// The rate of a port's egress.
    pub fn of(&self, role: PortRole) -> f64 {
        match role {
            PortRole::Host => self.host,
            PortRole::Local => self.local,
            PortRole::Global => self.global,
            PortRole::Up => self.up,
            PortRole::Down => self.down,
            PortRole::Horizontal => self.up,
            PortRole::Fabric => self.fabric,
        }
    }
}

/// Which paths the flow may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Routing {
    /// Every path: the fabric's optimum.
    Any,
    /// The routes' equal-cost minimal paths ([`Routes::minimal`]), split freely.
    Minimal,
    /// The planner's non-minimal paths at P = 0 (its padding bucket, a quantisation artefact,
    /// left out); traffic without a decision point (same group, same pod) keeps its minimal path.
    Valiant,
    /// Minimal and Valiant paths together: any setting of the SELECT groups' weights.
    Adaptive,
}

impl Routing {
    /// Every routing, in the order reports list them.
    pub const ALL: [Routing; 4] = [
        Routing::Any,
        Routing::Minimal,
        Routing::Valiant,
        Routing::Adaptive,
    ];
}

impl fmt::Display for Routing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Routing::Any => "any",
            Routing::Minimal => "minimal",
            Routing::Valiant => "valiant",
            Routing::Adaptive => "adaptive",
        })
    }
}

impl FromStr for Routing {
    type Err = BoundError;
    fn from_str(s: &str) -> Result<Self, BoundError> {
        Routing::ALL
            .into_iter()
            .find(|r| r.to_string() == s)
            .ok_or_else(|| BoundError::UnknownRouting(s.to_owned()))
    }
}

/// Which realisation of a pattern is the demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DemandModel {
    /// The harness's flows ([`crate::traffic::Destinations::flows`]): one per sending host,
    /// demanding its host link's rate (an unlimited TCP stream).
    Flows,
    /// The simulator's matrix: every sending host offers its link rate, to each destination in
    /// proportion to [`crate::traffic::Destinations::probability`].
    Matrix,
}

impl fmt::Display for DemandModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DemandModel::Flows => "flows",
            DemandModel::Matrix => "matrix",
        })
    }
}

impl FromStr for DemandModel {
    type Err = BoundError;
    fn from_str(s: &str) -> Result<Self, BoundError> {
        match s {
            "flows" => Ok(DemandModel::Flows),
            "matrix" => Ok(DemandModel::Matrix),
            _ => Err(BoundError::UnknownDemandModel(s.to_owned())),
        }
    }
}

/// What one source host wants to send to one destination host, Mb/s.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Demand {
    pub src: HostId,
    pub dst: HostId,
    pub mbps: f64,
}

/// Why a bound cannot be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BoundError {
    #[error(transparent)]
    Traffic(#[from] TrafficError),
    #[error("unknown routing {0:?}; expected any, minimal, valiant or adaptive")]
    UnknownRouting(String),
    #[error("unknown demand model {0:?}; expected flows or matrix")]
    UnknownDemandModel(String),
    #[error("no traffic: the demand list is empty")]
    NoTraffic,
    #[error(
        "{class} links: rate {mbps} Mb/s; every link class the fabric uses needs a finite rate > 0"
    )]
    BadRate { class: &'static str, mbps: f64 },
    #[error("demand {src} -> {dst}: {mbps} Mb/s; a demand must be finite and > 0")]
    BadDemand { src: HostId, dst: HostId, mbps: f64 },
    #[error("demand {src} -> {dst}: the fabric has {hosts} hosts")]
    UnknownHost {
        src: HostId,
        dst: HostId,
        hosts: usize,
    },
    #[error("demand {0} -> {0}: a host does not send to itself over the fabric")]
    SelfDemand(HostId),
    #[error("routing {routing}: no path from host {src} to host {dst}")]
    NoPath {
        routing: Routing,
        src: HostId,
        dst: HostId,
    },
    #[error("planning the Valiant paths: {0}")]
    Plan(#[from] PlanError),
    #[error("walking the Valiant paths: {0}")]
    Walk(#[from] ExecError),
    #[error("LP solver ({routing}, {objective}): {reason}")]
    Solver {
        routing: Routing,
        objective: &'static str,
        reason: String,
    },
}

/// The demands of traffic pattern `pattern` (a registry name) on `fabric` for `seed`; every
/// host's link runs at `host_mbps`.
pub fn demands(
    fabric: &Fabric,
    pattern: &str,
    seed: u64,
    model: DemandModel,
    host_mbps: f64,
) -> Result<Vec<Demand>, BoundError> {
    let pattern: Pattern = pattern.parse()?;
    let dests = pattern.destinations(fabric, seed)?;
    let out: Vec<Demand> = match model {
        DemandModel::Flows => dests
            .flows(seed)
            .into_iter()
            .map(|(src, dst)| Demand {
                src,
                dst,
                mbps: host_mbps,
            })
            .collect(),
        DemandModel::Matrix => {
            let n = dests.hosts();
            (0..n)
                .flat_map(|src| (0..n).map(move |dst| (src, dst)))
                .filter_map(|(src, dst)| {
                    let p = dests.probability(src, dst);
                    (p > 0.0).then_some(Demand {
                        src,
                        dst,
                        mbps: host_mbps * p,
                    })
                })
                .collect()
        }
    };
    if out.is_empty() {
        return Err(BoundError::NoTraffic);
    }
    Ok(out)
}

/// The LP's size, for the size limits (mininet/README.md "The throughput optimum").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LpSize {
    pub variables: usize,
    pub constraints: usize,
    /// Explicit paths (path formulation), 0 for pure edge formulations.
    pub paths: usize,
}

/// One routing's ceiling.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bound {
    pub routing: Routing,
    /// Max-concurrent flow: the largest fraction of its demand that every demand gets at once.
    pub lambda: f64,
    /// λ · Σ demand, Mb/s.
    pub concurrent_mbps: f64,
    /// Maximum aggregate throughput, each demand at most itself, Mb/s.
    pub max_aggregate_mbps: f64,
    /// Size of the maximum-throughput LP (the larger of the two).
    pub lp: LpSize,
}

/// Explicit paths per (source switch, destination switch): each a sequence of arc indexes into
/// the [`Network`].
type PathSet = BTreeMap<(SwitchId, SwitchId), Vec<Vec<usize>>>;

/// The fabric as a flow network: directed switch-to-switch arcs with capacities.
#[derive(Debug)]
struct Network {
    arcs: Vec<Arc>,
    index: BTreeMap<(SwitchId, PortNo), usize>,
    /// Arcs leaving / entering each switch.
    out: Vec<Vec<usize>>,
    into: Vec<Vec<usize>>,
}

#[derive(Debug, Clone, Copy)]
struct Arc {
    from: SwitchId,
    to: SwitchId,
    mbps: f64,
}

impl Network {
    /// Checks that every class the fabric uses has a usable rate.
    fn new(fabric: &Fabric, rates: &LinkRates) -> Result<Network, BoundError> {
        let usable = |role: PortRole| {
            let mbps = rates.of(role);
            if mbps.is_finite() && mbps > 0.0 {
                Ok(mbps)
            } else {
                Err(BoundError::BadRate {
                    class: role.name(),
                    mbps,
                })
            }
        };
        if !fabric.hosts().is_empty() {
            usable(PortRole::Host)?;
        }
        let n = fabric.switches().len();
        let mut net = Network {
            arcs: Vec::new(),
            index: BTreeMap::new(),
            out: vec![Vec::new(); n],
            into: vec![Vec::new(); n],
        };
        for (from, sw) in fabric.switches().iter().enumerate() {
            for p in &sw.ports {
                let Peer::Switch { switch: to, .. } = p.peer else {
                    continue;
                };
                let id = net.arcs.len();
                net.arcs.push(Arc {
                    from,
                    to,
                    mbps: usable(p.role)?,
                });
                net.index.insert((from, p.no), id);
                if let Some(v) = net.out.get_mut(from) {
                    v.push(id);
                }
                if let Some(v) = net.into.get_mut(to) {
                    v.push(id);
                }
            }
        }
        Ok(net)
    }

    fn arc(&self, at: SwitchId, port: PortNo) -> Option<usize> {
        self.index.get(&(at, port)).copied()
    }
}

fn check_demands(fabric: &Fabric, demands: &[Demand]) -> Result<(), BoundError> {
    if demands.is_empty() {
        return Err(BoundError::NoTraffic);
    }
    let hosts = fabric.hosts().len();
    for d in demands {
        if d.src >= hosts || d.dst >= hosts {
            return Err(BoundError::UnknownHost {
                src: d.src,
                dst: d.dst,
                hosts,
            });
        }
        if d.src == d.dst {
            return Err(BoundError::SelfDemand(d.src));
        }
        if !(d.mbps.is_finite() && d.mbps > 0.0) {
            return Err(BoundError::BadDemand {
                src: d.src,
                dst: d.dst,
                mbps: d.mbps,
            });
        }
    }
    Ok(())
}

/// The ceiling of `routing` for `demands` on `fabric` with links at `rates`.
pub fn bound(
    fabric: &Fabric,
    rates: &LinkRates,
    demands: &[Demand],
    routing: Routing,
) -> Result<Bound, BoundError> {
    Prepared::new(fabric, rates, demands, &[routing])?.solve(routing)
}

/// [`bound`] for several routings, sharing the network, routes and planned paths.
pub fn bounds(
    fabric: &Fabric,
    rates: &LinkRates,
    demands: &[Demand],
    routings: &[Routing],
) -> Result<Vec<Bound>, BoundError> {
    let prepared = Prepared::new(fabric, rates, demands, routings)?;
    routings.iter().map(|&r| prepared.solve(r)).collect()
}

/// The lowest peak utilisation (load ÷ rate) of the fabric's switch-to-switch links at which
/// `routing` carries every demand in full, host links left out: what a load-balancing scheme
/// can at best do to the busiest link (a hot spot's peak link load, at the demands' scale).
/// 0 when no demand crosses the fabric.
pub fn min_peak_utilisation(
    fabric: &Fabric,
    rates: &LinkRates,
    demands: &[Demand],
    routing: Routing,
) -> Result<f64, BoundError> {
    let prepared = Prepared::new(fabric, rates, demands, &[routing])?;
    if prepared.pairs.is_empty() {
        return Ok(0.0);
    }
    let objective = lp::Objective::FabricConcurrent;
    let (lambda, _) = prepared.problem(routing).solve(objective)?;
    if lambda > 0.0 {
        Ok(1.0 / lambda)
    } else {
        Err(BoundError::Solver {
            routing,
            objective: objective.name(),
            reason: "λ = 0: some demand has no capacity".into(),
        })
    }
}

/// What the LPs of several routings share.
#[derive(Debug)]
struct Prepared<'a> {
    fabric: &'a Fabric,
    demands: &'a [Demand],
    host_mbps: f64,
    net: Network,
    /// (source switch, destination switch) of every demand that crosses the fabric, sorted.
    pairs: Vec<(SwitchId, SwitchId)>,
    routes: Option<Routes>,
    valiant: PathSet,
    /// Every pair's minimal paths, when no pair has more than [`paths::MAX_MINIMAL_PATHS`]
    /// (Dragonfly: one): a path per pair instead of an arc per switch and destination (Dragonfly
    /// (4,8,4) ADV+1: 1 971 variables and 0.03 s instead of 70 488 and 10 s). `None`: the
    /// minimal DAG's edge formulation.
    minimal: Option<PathSet>,
    /// `minimal` and `valiant` together.
    adaptive: Option<PathSet>,
}

impl<'a> Prepared<'a> {
    fn new(
        fabric: &'a Fabric,
        rates: &LinkRates,
        demands: &'a [Demand],
        routings: &[Routing],
    ) -> Result<Self, BoundError> {
        check_demands(fabric, demands)?;
        let net = Network::new(fabric, rates)?;
        let hosts = fabric.hosts();
        let switch_of = |h: HostId| hosts.get(h).map_or(0, |x| x.switch);
        let mut pairs: Vec<(SwitchId, SwitchId)> = demands
            .iter()
            .map(|d| (switch_of(d.src), switch_of(d.dst)))
            .filter(|(s, t)| s != t)
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        let needs_minimal = routings
            .iter()
            .any(|r| matches!(r, Routing::Minimal | Routing::Adaptive));
        let needs_paths = routings
            .iter()
            .any(|r| matches!(r, Routing::Valiant | Routing::Adaptive));
        let routes = needs_minimal.then(|| Routes::compute(fabric, &Default::default()));
        let valiant = if needs_paths {
            paths::valiant(fabric, &net, &pairs)?
        } else {
            BTreeMap::new()
        };
        let minimal = routes
            .as_ref()
            .and_then(|r| paths::minimal(&net, r, &pairs));
        let adaptive = minimal.as_ref().map(|m| {
            let mut both = m.clone();
            for (pair, ps) in &valiant {
                let e = both.entry(*pair).or_default();
                e.extend(
                    ps.iter()
                        .filter(|p| !m.get(pair).is_some_and(|x| x.contains(p)))
                        .cloned(),
                );
            }
            both
        });
        Ok(Prepared {
            fabric,
            demands,
            host_mbps: rates.host,
            net,
            pairs,
            routes,
            valiant,
            minimal,
            adaptive,
        })
    }

    fn problem(&self, routing: Routing) -> lp::Problem<'_> {
        let (arcs, paths) = match (routing, &self.routes, &self.minimal, &self.adaptive) {
            (Routing::Any, ..) => (lp::Arcs::All, None),
            (Routing::Valiant, ..) => (lp::Arcs::None, Some(&self.valiant)),
            (Routing::Minimal, _, Some(m), _) => (lp::Arcs::None, Some(m)),
            (Routing::Adaptive, _, _, Some(a)) => (lp::Arcs::None, Some(a)),
            (Routing::Minimal, Some(r), None, _) => (lp::Arcs::Minimal(r), None),
            (Routing::Adaptive, Some(r), _, None) => (lp::Arcs::Minimal(r), Some(&self.valiant)),
            (Routing::Minimal | Routing::Adaptive, None, ..) => (lp::Arcs::None, None),
        };
        lp::Problem {
            fabric: self.fabric,
            net: &self.net,
            host_mbps: self.host_mbps,
            demands: self.demands,
            pairs: &self.pairs,
            arcs,
            paths,
            routing,
        }
    }

    fn solve(&self, routing: Routing) -> Result<Bound, BoundError> {
        let problem = self.problem(routing);
        let (lambda, _) = problem.solve(lp::Objective::Concurrent)?;
        let (max_aggregate_mbps, lp) = problem.solve(lp::Objective::MaxAggregate)?;
        let offered: f64 = self.demands.iter().map(|d| d.mbps).sum();
        Ok(Bound {
            routing,
            lambda,
            concurrent_mbps: lambda * offered,
            max_aggregate_mbps,
            lp,
        })
    }
}

#[cfg(test)]
mod tests;
