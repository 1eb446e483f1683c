//! The two linear programs of one routing, built for `good_lp` and solved by Clarabel.
//!
//! Variables: the demands' rates (maximum aggregate: one per demand, 0 ≤ r ≤ demand;
//! max-concurrent: one λ, rate = λ·demand); per destination switch t, the flow to t on every
//! directed arc the routing allows towards t (edge formulation); per explicit path, its flow
//! (path formulation); with both, per (source switch, t), the part sent over the edge network.
//! Rows: conservation at every switch but t, per t; the paths of a pair carrying the rest of
//! the pair's rate; one capacity row per directed arc; two per host (its link's two directions).

use std::collections::BTreeMap;

use good_lp::{clarabel, variable, Expression, ProblemVariables, SolverModel, Variable};

use super::{BoundError, Demand, LpSize, Network, PathSet, Routing};
use crate::routes::Routes;
use crate::topology::{Fabric, SwitchId};

/// The arcs the edge formulation may use.
#[derive(Debug, Clone, Copy)]
pub(super) enum Arcs<'r> {
    /// No edge formulation: paths only.
    None,
    /// Every directed link.
    All,
    /// Towards t, only the routes' minimal ports (a DAG: costs strictly decrease).
    Minimal(&'r Routes),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Objective {
    /// Maximise λ, every demand at λ·demand.
    Concurrent,
    /// Maximise Σ rate, each rate ≤ its demand.
    MaxAggregate,
    /// Maximise λ with the host links uncapped: 1/λ is the lowest peak utilisation of the
    /// fabric's links at which every demand is carried in full.
    FabricConcurrent,
}

impl Objective {
    pub(super) fn name(self) -> &'static str {
        match self {
            Objective::Concurrent => "max-concurrent",
            Objective::MaxAggregate => "max-aggregate",
            Objective::FabricConcurrent => "fabric-concurrent",
        }
    }
}

/// One routing's LP inputs.
#[derive(Debug)]
pub(super) struct Problem<'a> {
    pub fabric: &'a Fabric,
    pub net: &'a Network,
    pub host_mbps: f64,
    pub demands: &'a [Demand],
    pub pairs: &'a [(SwitchId, SwitchId)],
    pub arcs: Arcs<'a>,
    pub paths: Option<&'a PathSet>,
    pub routing: Routing,
}

impl Problem<'_> {
    /// The objective's optimum (λ or Mb/s) and the LP's size.
    pub fn solve(&self, objective: Objective) -> Result<(f64, LpSize), BoundError> {
        let hosts = self.fabric.hosts();
        let switch_of = |h: usize| hosts.get(h).map_or(0, |x| x.switch);
        let mut vars = ProblemVariables::new();
        let mut rows = Vec::new();

        // Each demand's rate as coefficient × variable.
        let (rates, objective_expr): (Vec<(f64, Variable)>, Expression) = match objective {
            Objective::Concurrent | Objective::FabricConcurrent => {
                let lambda = vars.add(variable().min(0.0));
                (
                    self.demands.iter().map(|d| (d.mbps, lambda)).collect(),
                    lambda.into(),
                )
            }
            Objective::MaxAggregate => {
                let rs: Vec<(f64, Variable)> = self
                    .demands
                    .iter()
                    .map(|d| (1.0, vars.add(variable().min(0.0).max(d.mbps))))
                    .collect();
                let mut total = Expression::with_capacity(rs.len());
                for &(_, r) in &rs {
                    total.add_mul(1.0, r);
                }
                (rs, total)
            }
        };

        // Host links: a host's sending and receiving direction.
        let mut sent: BTreeMap<usize, Expression> = BTreeMap::new();
        let mut received: BTreeMap<usize, Expression> = BTreeMap::new();
        let mut pair_rate: BTreeMap<(SwitchId, SwitchId), Expression> = BTreeMap::new();
        let mut pair_demand: BTreeMap<(SwitchId, SwitchId), &Demand> = BTreeMap::new();
        for (d, &(c, v)) in self.demands.iter().zip(&rates) {
            sent.entry(d.src).or_default().add_mul(c, v);
            received.entry(d.dst).or_default().add_mul(c, v);
            let (s, t) = (switch_of(d.src), switch_of(d.dst));
            if s != t {
                pair_rate.entry((s, t)).or_default().add_mul(c, v);
                pair_demand.entry((s, t)).or_insert(d);
            }
        }
        if objective != Objective::FabricConcurrent {
            for e in sent.into_values().chain(received.into_values()) {
                rows.push(e.leq(self.host_mbps));
            }
        }

        let n = self.fabric.switches().len();
        let mut load: Vec<Expression> = vec![Expression::default(); self.net.arcs.len()];
        let mut loaded = vec![false; self.net.arcs.len()];
        let mut paths_total = 0;
        let edge = !matches!(self.arcs, Arcs::None);
        // The part of each pair's rate that the edge formulation carries.
        let mut edge_supply: BTreeMap<(SwitchId, SwitchId), Expression> = BTreeMap::new();
        for &(s, t) in self.pairs {
            let Some(rate) = pair_rate.remove(&(s, t)) else {
                continue;
            };
            let no_path = || {
                let d = pair_demand.get(&(s, t));
                BoundError::NoPath {
                    routing: self.routing,
                    src: d.map_or(0, |d| d.src),
                    dst: d.map_or(0, |d| d.dst),
                }
            };
            let paths: &[Vec<usize>] = self
                .paths
                .and_then(|p| p.get(&(s, t)))
                .map_or(&[], Vec::as_slice);
            let edge_here = match self.arcs {
                Arcs::None => false,
                Arcs::All => true,
                Arcs::Minimal(r) => !r.minimal(s, t).is_empty(),
            };
            if paths.is_empty() && !edge_here {
                return Err(no_path());
            }
            // rate = edge part + Σ path flows.
            let mut split = Expression::with_capacity(paths.len() + 1);
            if edge_here {
                if paths.is_empty() {
                    edge_supply.insert((s, t), rate.clone());
                    continue;
                }
                let y = vars.add(variable().min(0.0));
                split.add_mul(1.0, y);
                edge_supply.insert((s, t), y.into());
            }
            for path in paths {
                let x = vars.add(variable().min(0.0));
                paths_total += 1;
                split.add_mul(1.0, x);
                for &a in path {
                    if let (Some(l), Some(u)) = (load.get_mut(a), loaded.get_mut(a)) {
                        l.add_mul(1.0, x);
                        *u = true;
                    }
                }
            }
            rows.push(split.eq(rate));
        }

        if edge {
            let mut by_dst: BTreeMap<SwitchId, Vec<(SwitchId, Expression)>> = BTreeMap::new();
            for ((s, t), e) in edge_supply {
                by_dst.entry(t).or_default().push((s, e));
            }
            let all: Vec<usize> = (0..self.net.arcs.len()).collect();
            for (t, supplies) in by_dst {
                let allowed: Vec<usize> = match self.arcs {
                    Arcs::All => all.clone(),
                    Arcs::Minimal(r) => (0..n)
                        .flat_map(|v| r.minimal(v, t).iter().map(move |&p| (v, p)))
                        .filter_map(|(v, p)| self.net.arc(v, p))
                        .collect(),
                    Arcs::None => Vec::new(),
                };
                // Net outflow of every switch towards t.
                let mut net_out: Vec<Expression> = vec![Expression::default(); n];
                let mut touched = vec![false; n];
                for a in allowed {
                    let Some(arc) = self.net.arcs.get(a) else {
                        continue;
                    };
                    let f = vars.add(variable().min(0.0));
                    for (v, sign) in [(arc.from, 1.0), (arc.to, -1.0)] {
                        if let (Some(e), Some(u)) = (net_out.get_mut(v), touched.get_mut(v)) {
                            e.add_mul(sign, f);
                            *u = true;
                        }
                    }
                    if let (Some(l), Some(u)) = (load.get_mut(a), loaded.get_mut(a)) {
                        l.add_mul(1.0, f);
                        *u = true;
                    }
                }
                let mut supply: Vec<Expression> = vec![Expression::default(); n];
                for (s, e) in supplies {
                    if let (Some(x), Some(u)) = (supply.get_mut(s), touched.get_mut(s)) {
                        x.add_mul(1.0, e);
                        *u = true;
                    }
                }
                let nodes = net_out.into_iter().zip(supply).zip(touched).enumerate();
                for (v, ((out, sup), used)) in nodes {
                    if v != t && used {
                        rows.push(out.eq(sup));
                    }
                }
            }
        }

        for ((l, arc), used) in load.into_iter().zip(&self.net.arcs).zip(loaded) {
            if used {
                rows.push(l.leq(arc.mbps));
            }
        }

        let size = LpSize {
            variables: vars.len(),
            constraints: rows.len(),
            paths: paths_total,
        };
        let solver_error = |reason: String| BoundError::Solver {
            routing: self.routing,
            objective: objective.name(),
            reason,
        };
        let mut model = vars.maximise(objective_expr.clone()).using(clarabel);
        for r in rows {
            model.add_constraint(r);
        }
        let solution = model.solve().map_err(|e| solver_error(e.to_string()))?;
        let value = objective_expr.eval_with(&solution);
        if !value.is_finite() {
            return Err(solver_error(format!("objective {value}")));
        }
        // An interior-point optimum sits a hair inside the bounds: no negative zero or 1e-9.
        Ok((value.max(0.0), size))
    }
}
