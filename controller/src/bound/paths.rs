//! The planner's Valiant paths, read off the plan itself rather than re-derived, so the bound
//! follows whatever the planner builds (own global ports, local ports and diversion by arrival
//! port on h = 1 Dragonflies, ECMP up ports on fat-trees).

use std::collections::{BTreeMap, BTreeSet};

use super::{BoundError, Network, PathSet};
use crate::pipeline::{End, SelectMode, Walker};
use crate::plan::{GroupType, Plan, PlanOptions};
use crate::routes::Routes;
use crate::topology::{Fabric, HostId, SwitchId};

/// Per (source switch, destination switch): the distinct switch-to-switch arc sequences a packet
/// may take under the plan at P = 0, every live bucket of weight > 0 except the padding bucket.
///
/// The padding bucket (the last, weight 1 of 256, back to the minimal port: DESIGN §4) exists
/// only to force OVS's hash table size; counting it would make every Valiant ceiling include the
/// minimal path. A decision point without candidates keeps its bucket 0 (weight 256 at any P),
/// as the switch does. Destination rules match the destination switch's addresses, so one
/// host of each switch stands for all of them.
pub(super) fn valiant(
    fabric: &Fabric,
    net: &Network,
    pairs: &[(SwitchId, SwitchId)],
) -> Result<PathSet, BoundError> {
    let opts = PlanOptions {
        p_minimal_percent: 0.0,
        arp_responder: false,
        ..Default::default()
    };
    let mut plan = Plan::build(fabric, &opts)?;
    for sp in &mut plan.switches {
        for g in &mut sp.groups {
            let padding = g.kind == GroupType::Select
                && g.buckets.len() >= 2
                && g.buckets.first().map(|b| &b.actions) == g.buckets.last().map(|b| &b.actions);
            if padding {
                g.buckets.pop();
            }
        }
    }
    let mut host_at: Vec<Option<HostId>> = vec![None; fabric.switches().len()];
    for (id, h) in fabric.hosts().iter().enumerate() {
        if let Some(slot) = host_at.get_mut(h.switch) {
            slot.get_or_insert(id);
        }
    }
    let failed = BTreeSet::new();
    let walker = Walker::new(fabric, &plan, &failed);
    let mut out = BTreeMap::new();
    for &(s, t) in pairs {
        let (Some(hs), Some(ht)) = (
            host_at.get(s).copied().flatten(),
            host_at.get(t).copied().flatten(),
        ) else {
            continue;
        };
        let mut found: BTreeSet<Vec<usize>> = BTreeSet::new();
        for trace in walker.walk_pair(hs, ht, SelectMode::EveryBucket)? {
            if trace.end != End::Delivered(ht) {
                continue;
            }
            // Every hop but the last (out to the host) leaves over a fabric arc.
            let fabric_hops = trace.hops.len().saturating_sub(1);
            let arcs: Option<Vec<usize>> = trace
                .hops
                .iter()
                .take(fabric_hops)
                .map(|h| net.arc(h.switch, h.out_port))
                .collect();
            if let Some(arcs) = arcs {
                found.insert(arcs);
            }
        }
        out.insert((s, t), found.into_iter().collect());
    }
    Ok(out)
}

/// Above this many minimal paths for one pair the LP takes the minimal DAG's edge formulation
/// instead (a k-ary n-tree has k^(n-1) per pair of distant leaves).
pub(super) const MAX_MINIMAL_PATHS: usize = 16;

/// Every pair's minimal paths (arc sequences along [`Routes::minimal`]), or `None` if a pair has
/// more than [`MAX_MINIMAL_PATHS`] or no route.
pub(super) fn minimal(
    net: &Network,
    routes: &Routes,
    pairs: &[(SwitchId, SwitchId)],
) -> Option<PathSet> {
    let mut out = PathSet::new();
    for &(s, t) in pairs {
        let mut found = Vec::new();
        let mut stack = vec![(s, Vec::new())];
        while let Some((v, path)) = stack.pop() {
            if v == t {
                found.push(path);
                if found.len() > MAX_MINIMAL_PATHS {
                    return None;
                }
                continue;
            }
            // Costs strictly decrease along minimal ports, so this ends; a dead end (no port) is
            // an unreachable destination.
            for &p in routes.minimal(v, t) {
                let a = net.arc(v, p)?;
                let next = net.arcs.get(a)?.to;
                let mut longer = path.clone();
                longer.push(a);
                stack.push((next, longer));
            }
        }
        if found.is_empty() {
            return None;
        }
        found.sort_unstable();
        out.insert((s, t), found);
    }
    Some(out)
}
