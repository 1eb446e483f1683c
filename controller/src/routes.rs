//! Minimal routes: for every switch and every destination switch that carries hosts, the set of
//! equal-cost output ports and the switch-to-switch hop count.
//!
//! - Dragonfly: local-global-local (one port; theory of Kim et al. 2008).
//! - Fat-tree: up over every up port to the nearest common ancestor, then the one down path.
//! - Torus and mesh (k-ary n-cube): dimension order, one port ([`Cube::dor_port`]; with dateline
//!   virtual channels deadlock-free in the simulator's credit-based links).
//! - File fabrics, and any fabric with failed links: shortest paths by Dijkstra over the live
//!   links. For a Dragonfly the cost is lexicographic (global hops, then all hops), so without
//!   failures the generic search reproduces the closed form (a test checks this), and with a
//!   failed global link traffic takes the fewest global links available (non-minimally through
//!   another group). Costs strictly decrease along every route, so minimal forwarding from any
//!   point is loop-free — the property the planner's non-minimal choices rely on.
//!
//! Storage is one flat table indexed by (destination, switch), so planning a 2 000-switch
//! Dragonfly allocates three vectors, not four million.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use crate::topology::cube::Cube;
use crate::topology::dragonfly::Dragonfly;
use crate::topology::fattree::FatTree;
use crate::topology::{Fabric, FabricKind, Link, PortNo, PortRole, SwitchId};

/// Hop count stored for "no route".
const UNREACHABLE: u16 = u16::MAX;
/// Dragonfly cost of one global link beyond its hop: any path with fewer global links wins.
const GLOBAL_COST: u32 = 1 << 12;

/// Minimal routes of a fabric (with a set of failed links removed).
#[derive(Debug, Clone)]
pub struct Routes {
    n: usize,
    offsets: Vec<u32>,
    ports: Vec<PortNo>,
    hops: Vec<u16>,
}

impl Routes {
    /// Computes the routes of `fabric` without the `failed` links.
    pub fn compute(fabric: &Fabric, failed: &BTreeSet<Link>) -> Routes {
        let mut r = Routes {
            n: fabric.switches().len(),
            offsets: Vec::with_capacity(fabric.switches().len().pow(2) + 1),
            ports: Vec::new(),
            hops: Vec::with_capacity(fabric.switches().len().pow(2)),
        };
        r.offsets.push(0);
        match (fabric.kind(), failed.is_empty()) {
            (FabricKind::Dragonfly { p, a, h }, true) => {
                r.fill_dragonfly(fabric, Dragonfly { p, a, h })
            }
            (FabricKind::FatTree { k, n, .. }, true) => match FatTree::new(k, n) {
                Ok(t) => r.fill_fattree(fabric, &t),
                Err(_) => r.fill_generic(fabric, failed),
            },
            (FabricKind::Torus { k, n, p }, true) => match Cube::new(k, n, p, true) {
                Ok(c) => r.fill_cube(fabric, &c),
                Err(_) => r.fill_generic(fabric, failed),
            },
            (FabricKind::Mesh { k, n, p }, true) => match Cube::new(k, n, p, false) {
                Ok(c) => r.fill_cube(fabric, &c),
                Err(_) => r.fill_generic(fabric, failed),
            },
            _ => r.fill_generic(fabric, failed),
        }
        r
    }

    /// Computes routes by the generic shortest-path search even where a closed form exists (the
    /// oracle for the closed forms in tests).
    pub fn compute_generic(fabric: &Fabric, failed: &BTreeSet<Link>) -> Routes {
        let mut r = Routes {
            n: fabric.switches().len(),
            offsets: vec![0],
            ports: Vec::new(),
            hops: Vec::new(),
        };
        r.fill_generic(fabric, failed);
        r
    }

    fn push(&mut self, ports: &[PortNo], hops: u16) {
        self.ports.extend_from_slice(ports);
        self.hops.push(hops);
        self.offsets
            .push(u32::try_from(self.ports.len()).unwrap_or(u32::MAX));
    }

    fn push_none(&mut self, n: usize) {
        for _ in 0..n {
            self.push(&[], UNREACHABLE);
        }
    }

    /// Equal-cost minimal output ports at `at` towards destination switch `dst`, sorted; empty
    /// when `at == dst`, when `dst` has no hosts, or when `dst` is unreachable.
    pub fn minimal(&self, at: SwitchId, dst: SwitchId) -> &[PortNo] {
        let i = dst * self.n + at;
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&s), Some(&e)) => self.ports.get(s as usize..e as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// Switch-to-switch hops of the minimal route; `None` if unreachable.
    pub fn hops(&self, at: SwitchId, dst: SwitchId) -> Option<u16> {
        self.hops
            .get(dst * self.n + at)
            .copied()
            .filter(|&h| h != UNREACHABLE)
    }

    fn fill_dragonfly(&mut self, fabric: &Fabric, df: Dragonfly) {
        let a = df.a as usize;
        for (t, tsw) in fabric.switches().iter().enumerate() {
            if !tsw.has_hosts() {
                self.push_none(self.n);
                continue;
            }
            let (gd, sd) = ((t / a) as u32, (t % a) as u32);
            for x in 0..self.n {
                let (g, s) = ((x / a) as u32, (x % a) as u32);
                let hops = u16::try_from(df.minimal_hops((g, s), (gd, sd))).unwrap_or(UNREACHABLE);
                if x == t {
                    self.push(&[], 0);
                } else if g == gd {
                    self.push(&[df.local_port(s, sd)], hops);
                } else {
                    let (owner, gport) = df.owner(g, gd);
                    let port = if owner == s {
                        gport
                    } else {
                        df.local_port(s, owner)
                    };
                    self.push(&[port], hops);
                }
            }
        }
    }

    fn fill_fattree(&mut self, fabric: &Fabric, t: &FatTree) {
        let up: Vec<PortNo> = (0..t.k).map(|u| t.up_port(u)).collect();
        for (dst, dsw) in fabric.switches().iter().enumerate() {
            if !dsw.has_hosts() || dsw.level != 0 {
                self.push_none(self.n);
                continue;
            }
            let v = (dst % t.per_level as usize) as u32;
            for x in 0..self.n {
                let (l, w) = (
                    (x / t.per_level as usize) as u32,
                    (x % t.per_level as usize) as u32,
                );
                let above = (l..t.n - 1).all(|i| t.digit(w, i) == t.digit(v, i));
                if l == 0 && w == v {
                    self.push(&[], 0);
                } else if above && l > 0 {
                    let hops = u16::try_from(l).unwrap_or(UNREACHABLE);
                    self.push(&[t.digit(v, l - 1) + 1], hops);
                } else {
                    let nca = (l..t.n - 1)
                        .rev()
                        .find(|&i| t.digit(w, i) != t.digit(v, i))
                        .map_or(l, |i| i + 1);
                    let hops = u16::try_from(nca - l + nca).unwrap_or(UNREACHABLE);
                    self.push(&up, hops);
                }
            }
        }
    }

    fn fill_cube(&mut self, fabric: &Fabric, c: &Cube) {
        for (t, tsw) in fabric.switches().iter().enumerate() {
            if !tsw.has_hosts() {
                self.push_none(self.n);
                continue;
            }
            for x in 0..self.n {
                let (xs, ts) = (x as u32, t as u32);
                let hops = u16::try_from(c.hops(xs, ts)).unwrap_or(UNREACHABLE);
                match c.dor_port(xs, ts) {
                    Some(port) => self.push(&[port], hops),
                    None => self.push(&[], 0),
                }
            }
        }
    }

    fn fill_generic(&mut self, fabric: &Fabric, failed: &BTreeSet<Link>) {
        let dragonfly = matches!(fabric.kind(), FabricKind::Dragonfly { .. });
        let cost = |role: PortRole| {
            if dragonfly && role == PortRole::Global {
                GLOBAL_COST + 1
            } else {
                1
            }
        };
        let sws = fabric.switches();
        // Live adjacency once: (port, role, peer switch) per switch.
        let adj: Vec<Vec<(PortNo, u32, SwitchId)>> = (0..sws.len())
            .map(|x| {
                fabric
                    .live_peers(x, failed)
                    .map(|(p, s)| (p.no, cost(p.role), s))
                    .collect()
            })
            .collect();
        let mut dist = vec![u32::MAX; self.n];
        let mut heap = BinaryHeap::new();
        let mut ports = Vec::new();
        for (t, tsw) in sws.iter().enumerate() {
            if !tsw.has_hosts() {
                self.push_none(self.n);
                continue;
            }
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            if let Some(d) = dist.get_mut(t) {
                *d = 0;
            }
            heap.push(Reverse((0u32, t)));
            while let Some(Reverse((d, x))) = heap.pop() {
                if dist.get(x).is_some_and(|&dx| d > dx) {
                    continue;
                }
                for &(_, c, y) in adj.get(x).map(Vec::as_slice).unwrap_or(&[]) {
                    let nd = d.saturating_add(c);
                    if let Some(dy) = dist.get_mut(y) {
                        if nd < *dy {
                            *dy = nd;
                            heap.push(Reverse((nd, y)));
                        }
                    }
                }
            }
            for x in 0..self.n {
                let dx = dist.get(x).copied().unwrap_or(u32::MAX);
                if dx == u32::MAX {
                    self.push(&[], UNREACHABLE);
                    continue;
                }
                ports.clear();
                for &(port, c, y) in adj.get(x).map(Vec::as_slice).unwrap_or(&[]) {
                    let dy = dist.get(y).copied().unwrap_or(u32::MAX);
                    if dy != u32::MAX && dy.saturating_add(c) == dx {
                        ports.push(port);
                    }
                }
                ports.sort_unstable();
                let hops = if dragonfly { dx % GLOBAL_COST } else { dx };
                self.push(&ports.clone(), u16::try_from(hops).unwrap_or(UNREACHABLE));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::TopologySpec;

    fn same(spec: &str) {
        let f: Fabric = spec.parse::<TopologySpec>().unwrap().build().unwrap();
        let none = BTreeSet::new();
        let closed = Routes::compute(&f, &none);
        let generic = Routes::compute_generic(&f, &none);
        for t in 0..f.switches().len() {
            for x in 0..f.switches().len() {
                assert_eq!(
                    closed.minimal(x, t),
                    generic.minimal(x, t),
                    "{spec} {x}->{t}"
                );
                assert_eq!(closed.hops(x, t), generic.hops(x, t), "{spec} {x}->{t}");
            }
        }
    }

    #[test]
    fn dimension_order_is_one_of_the_shortest_paths() {
        for spec in [
            "torus:k=4,n=2,p=1",
            "torus:k=5,n=2,p=2",
            "mesh:k=4,n=2,p=1",
            "torus:k=3,n=3,p=1",
        ] {
            let f: Fabric = spec.parse::<TopologySpec>().unwrap().build().unwrap();
            let none = BTreeSet::new();
            let dor = Routes::compute(&f, &none);
            let generic = Routes::compute_generic(&f, &none);
            for t in 0..f.switches().len() {
                for x in 0..f.switches().len() {
                    assert_eq!(dor.hops(x, t), generic.hops(x, t), "{spec} {x}->{t}");
                    let ports = dor.minimal(x, t);
                    assert_eq!(ports.len(), usize::from(x != t), "{spec} {x}->{t}");
                    for p in ports {
                        assert!(generic.minimal(x, t).contains(p), "{spec} {x}->{t}");
                    }
                }
            }
        }
    }

    #[test]
    fn closed_forms_match_shortest_paths() {
        for spec in [
            "dragonfly:p=1,a=2,h=1",
            "dragonfly:p=2,a=4,h=2",
            "dragonfly:p=1,a=3,h=3",
            "fattree:k=4,n=2",
            "fattree:k=4,n=3",
            "fattree:k=2,n=4",
            "fattree:k=4,n=2,w=1",
            "fattree:k=4,n=3,w=2",
            "fattree:k=3,n=3,w=2",
        ] {
            same(spec);
        }
    }
}
