//! Multipath structure for DRB (dynamic routing balancing): per (source switch, destination
//! switch) up to 1 + A link-disjoint paths, installed as path-tagged rules.
//!
//! **Path sets.** Path 0 is the plan's minimal route (untagged, the rules every plan has).
//! Alternative i (1..=A) is a shortest path from the source switch to the destination switch
//! over the live directed links that no earlier path of the pair uses (breadth-first, so the
//! shortest first; ties broken by lower port number), kept only if it is at most
//! `max_stretch` links longer than the minimal route. The search stops at the first failure:
//! later alternatives would be no shorter.
//!
//! **Tags.** A packet on alternative i carries i in byte 1 of the destination MAC (the `00` of
//! `02:00:GG:GG:SS:HH`, the equivalent of InfiniBand's LMC bits) and the source switch's tag
//! ([`PathPlan::source_tag`], its position among the host-bearing switches) in byte 2 (the high
//! byte of the group, always 0 when every group is below 256, which multipath requires), so a
//! transit rule names exactly one path: `eth_dst = 02:ii:ss:GG:SS:00/ff:ff:ff:ff:ff:00`.
//! The source's SELECT group writes the tagged MAC (one group per remote destination host:
//! OpenFlow 1.3's set_field writes a whole field, and the host byte differs); the destination
//! switch matches its hosts with the tag bytes wildcarded and writes the host's own MAC back
//! before delivery. A CNM about a tagged frame therefore carries the path index to the source
//! switch's agent.
//!
//! **Bounded rules.** Transit rules at a switch = the alternatives passing through it. The
//! planner admits alternatives in rounds (every pair's alternative 1, then every pair's 2, …) and
//! drops an alternative whose admission would push any switch on it above
//! `max_transit_rules`; [`PathPlan::transit_rules`] reports the count per switch.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use fabricflow_proto::MacAddr;
use serde::Serialize;

use crate::routes::Routes;
use crate::topology::{Fabric, Link, Peer, PortNo, SwitchId};

/// Byte of the destination MAC carrying the path index.
pub const PATH_INDEX_BYTE: usize = 1;
/// Byte of the destination MAC carrying the source switch's tag.
pub const SOURCE_TAG_BYTE: usize = 2;
/// Most alternatives per pair (the seed's 4).
pub const MAX_ALTERNATIVES: u8 = 4;

/// What the multipath plan builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Multipath {
    /// Alternative paths per pair, 0..=[`MAX_ALTERNATIVES`].
    pub alternatives: u8,
    /// How many links longer than the minimal route an alternative may be.
    pub max_stretch: u16,
    /// Cap on the path transit rules of one switch.
    pub max_transit_rules: usize,
}

impl Default for Multipath {
    fn default() -> Self {
        Multipath {
            alternatives: MAX_ALTERNATIVES,
            max_stretch: 4,
            max_transit_rules: 4096,
        }
    }
}

/// One path: the output port at every switch from the source to the last switch before the
/// destination switch, in order.
pub type Path = Vec<(SwitchId, PortNo)>;

/// The paths of every pair and the rules they cost.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PathPlan {
    /// (source switch, destination switch) → paths, index = path index (0 = minimal).
    pub pairs: BTreeMap<(SwitchId, SwitchId), Vec<Path>>,
    /// Host-bearing switch → its source tag.
    tags: BTreeMap<SwitchId, u8>,
    /// Transit rules per switch.
    pub transit_rules: BTreeMap<SwitchId, usize>,
    /// Alternatives found but dropped by the rule cap.
    pub dropped_by_cap: usize,
}

impl PathPlan {
    /// The source tag of a host-bearing switch.
    pub fn source_tag(&self, x: SwitchId) -> Option<u8> {
        self.tags.get(&x).copied()
    }
    /// The paths of one pair (empty if none planned).
    pub fn paths(&self, s: SwitchId, t: SwitchId) -> &[Path] {
        self.pairs.get(&(s, t)).map(Vec::as_slice).unwrap_or(&[])
    }
    /// The largest transit rule count of any switch.
    pub fn max_transit_rules(&self) -> usize {
        self.transit_rules.values().copied().max().unwrap_or(0)
    }
}

/// `mac` with the path index and source tag written into its spare bytes.
pub fn tagged_mac(mac: MacAddr, path: u8, source_tag: u8) -> MacAddr {
    let mut o = mac.octets();
    if let Some(b) = o.get_mut(PATH_INDEX_BYTE) {
        *b = path;
    }
    if let Some(b) = o.get_mut(SOURCE_TAG_BYTE) {
        *b = source_tag;
    }
    MacAddr(o)
}

/// The path index a (possibly tagged) destination MAC carries (0: untagged, the minimal path).
pub fn path_index(mac: MacAddr) -> u8 {
    mac.octets().get(PATH_INDEX_BYTE).copied().unwrap_or(0)
}

/// `mac` with the tag bytes cleared: the host's own address.
pub fn untagged_mac(mac: MacAddr) -> MacAddr {
    tagged_mac(mac, 0, 0)
}

/// Mask matching a host's address whatever its tag (`ff:00:00:ff:ff:ff`).
pub const ANY_TAG_HOST_MASK: MacAddr = MacAddr([0xff, 0, 0, 0xff, 0xff, 0xff]);

/// Why multipath cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error(
        "multipath needs every group below 256 (the tag uses the group's high byte); group {0}"
    )]
    GroupTooLarge(u16),
    #[error("multipath tags at most 256 host-bearing switches; this fabric has {0}")]
    TooManySources(usize),
    #[error("multipath allows at most {MAX_ALTERNATIVES} alternatives, not {0}")]
    TooManyAlternatives(u8),
    #[error("multipath and lossless classes cannot be combined")]
    Lossless,
}

/// Plans the path sets of every pair of host-bearing switches. `primary(x, t)` is the plan's
/// minimal output port (path 0 follows it).
pub fn plan_paths(
    fabric: &Fabric,
    routes: &Routes,
    failed: &BTreeSet<Link>,
    mp: &Multipath,
    primary: &dyn Fn(SwitchId, SwitchId) -> Option<PortNo>,
) -> Result<PathPlan, PathError> {
    if mp.alternatives > MAX_ALTERNATIVES {
        return Err(PathError::TooManyAlternatives(mp.alternatives));
    }
    if let Some(&g) = fabric.edge_groups().keys().find(|&&g| g > 255) {
        return Err(PathError::GroupTooLarge(g));
    }
    let edges: Vec<SwitchId> = fabric.edge_groups().values().flatten().copied().collect();
    let mut out = PathPlan::default();
    for (i, &x) in edges.iter().enumerate() {
        let tag = u8::try_from(i).map_err(|_| PathError::TooManySources(edges.len()))?;
        out.tags.insert(x, tag);
    }
    let adj = adjacency(fabric, failed);
    // Path 0 and every pair's candidate alternatives.
    let mut candidates: BTreeMap<(SwitchId, SwitchId), Vec<Path>> = BTreeMap::new();
    for &s in &edges {
        for &t in &edges {
            if s == t {
                continue;
            }
            let Some(p0) = follow(fabric, s, t, primary) else {
                continue;
            };
            let Some(min_hops) = routes.hops(s, t) else {
                continue;
            };
            let limit = usize::from(min_hops) + usize::from(mp.max_stretch);
            let mut used: BTreeSet<(SwitchId, PortNo)> = p0.iter().copied().collect();
            let mut alts = Vec::new();
            for _ in 0..mp.alternatives {
                match shortest_avoiding(&adj, s, t, &used) {
                    Some(p) if p.len() <= limit => {
                        used.extend(p.iter().copied());
                        alts.push(p);
                    }
                    _ => break,
                }
            }
            out.pairs.insert((s, t), vec![p0]);
            candidates.insert((s, t), alts);
        }
    }
    // Admit alternatives round by round under the cap.
    for round in 0..usize::from(mp.alternatives) {
        for (pair, alts) in &candidates {
            let Some(p) = alts.get(round) else { continue };
            let Some(paths) = out.pairs.get_mut(pair) else {
                continue;
            };
            if paths.len() != round + 1 {
                continue; // an earlier alternative was dropped: indices stay dense
            }
            let transit = p.iter().skip(1).map(|&(y, _)| y);
            let fits = transit
                .clone()
                .all(|y| out.transit_rules.get(&y).copied().unwrap_or(0) < mp.max_transit_rules);
            if fits {
                for y in transit {
                    *out.transit_rules.entry(y).or_default() += 1;
                }
                paths.push(p.clone());
            } else {
                out.dropped_by_cap += 1;
            }
        }
    }
    Ok(out)
}

/// Live directed adjacency: per switch, (port, peer switch), by port.
fn adjacency(fabric: &Fabric, failed: &BTreeSet<Link>) -> Vec<Vec<(PortNo, SwitchId)>> {
    (0..fabric.switches().len())
        .map(|x| {
            fabric
                .live_peers(x, failed)
                .map(|(p, s)| (p.no, s))
                .collect()
        })
        .collect()
}

/// The minimal route from s to t by `primary`, as a path; `None` if it does not arrive.
fn follow(
    fabric: &Fabric,
    s: SwitchId,
    t: SwitchId,
    primary: &dyn Fn(SwitchId, SwitchId) -> Option<PortNo>,
) -> Option<Path> {
    let mut path = Vec::new();
    let mut x = s;
    while x != t {
        if path.len() > fabric.switches().len() {
            return None;
        }
        let port = primary(x, t)?;
        path.push((x, port));
        match fabric.peer(x, port)? {
            Peer::Switch { switch, .. } => x = switch,
            Peer::Host(_) => return None,
        }
    }
    Some(path)
}

/// A shortest path from s to t using no directed link in `used` (BFS, lower ports first).
fn shortest_avoiding(
    adj: &[Vec<(PortNo, SwitchId)>],
    s: SwitchId,
    t: SwitchId,
    used: &BTreeSet<(SwitchId, PortNo)>,
) -> Option<Path> {
    let mut prev: Vec<Option<(SwitchId, PortNo)>> = vec![None; adj.len()];
    let mut seen = vec![false; adj.len()];
    *seen.get_mut(s)? = true;
    let mut queue = VecDeque::from([s]);
    while let Some(x) = queue.pop_front() {
        if x == t {
            break;
        }
        for &(port, y) in adj.get(x).map(Vec::as_slice).unwrap_or(&[]) {
            if used.contains(&(x, port)) || seen.get(y).copied().unwrap_or(true) {
                continue;
            }
            if let Some(v) = seen.get_mut(y) {
                *v = true;
            }
            if let Some(pv) = prev.get_mut(y) {
                *pv = Some((x, port));
            }
            queue.push_back(y);
        }
    }
    let mut path = Vec::new();
    let mut y = t;
    while y != s {
        let (x, port) = (*prev.get(y)?)?;
        path.push((x, port));
        y = x;
    }
    path.reverse();
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::TopologySpec;

    fn plan_for(spec: &str, mp: Multipath) -> (Fabric, PathPlan) {
        let f = spec.parse::<TopologySpec>().unwrap().build().unwrap();
        let none = BTreeSet::new();
        let routes = Routes::compute(&f, &none);
        let primary = |x: SwitchId, t: SwitchId| routes.minimal(x, t).first().copied();
        let pp = plan_paths(&f, &routes, &none, &mp, &primary).unwrap();
        (f, pp)
    }

    #[test]
    fn tags_round_trip() {
        let mac = MacAddr([2, 0, 0, 7, 0, 1]);
        let t = tagged_mac(mac, 3, 9);
        assert_eq!(t, MacAddr([2, 3, 9, 7, 0, 1]));
        assert_eq!(path_index(t), 3);
        assert_eq!(untagged_mac(t), mac);
        assert_eq!(path_index(mac), 0);
    }

    #[test]
    fn torus_pairs_get_disjoint_paths_shortest_first() {
        let (f, pp) = plan_for("torus:k=4,n=2,p=1", Multipath::default());
        let n = f.switches().len();
        assert_eq!(pp.pairs.len(), n * (n - 1));
        for (&(s, t), paths) in &pp.pairs {
            // Four ports per switch: the minimal route plus three disjoint alternatives.
            assert_eq!(paths.len(), 4, "{s}->{t}");
            let mut links = BTreeSet::new();
            for p in paths {
                assert_eq!(p.first().map(|h| h.0), Some(s));
                for &hop in p {
                    assert!(links.insert(hop), "{s}->{t}: link {hop:?} used twice");
                }
                let switches: BTreeSet<SwitchId> = p.iter().map(|h| h.0).collect();
                assert_eq!(switches.len(), p.len(), "{s}->{t}: a switch repeats");
            }
            let lens: Vec<usize> = paths.iter().skip(1).map(Vec::len).collect();
            assert!(lens.windows(2).all(|w| w[0] <= w[1]), "{lens:?}");
        }
        assert_eq!(pp.dropped_by_cap, 0);
    }

    #[test]
    fn the_cap_bounds_transit_rules_and_keeps_indices_dense() {
        let free = plan_for("torus:k=4,n=2,p=1", Multipath::default()).1;
        let cap = free.max_transit_rules() / 2;
        let (_, capped) = plan_for(
            "torus:k=4,n=2,p=1",
            Multipath {
                max_transit_rules: cap,
                ..Multipath::default()
            },
        );
        assert!(capped.max_transit_rules() <= cap);
        assert!(capped.dropped_by_cap > 0);
        for paths in capped.pairs.values() {
            assert!(!paths.is_empty() && paths.len() <= 5);
        }
        let none = Multipath {
            alternatives: 0,
            ..Multipath::default()
        };
        let (_, zero) = plan_for("torus:k=4,n=2,p=1", none);
        assert!(zero.pairs.values().all(|p| p.len() == 1));
        assert_eq!(zero.max_transit_rules(), 0);
    }

    #[test]
    fn stretch_limits_alternatives() {
        let (_, pp) = plan_for(
            "mesh:k=4,n=2,p=1",
            Multipath {
                max_stretch: 0,
                ..Multipath::default()
            },
        );
        // Corner to opposite corner of a 4x4 mesh: exactly two disjoint minimal paths leave a corner.
        assert_eq!(pp.paths(0, 15).len(), 2);
        // Neighbours in a mesh have no second minimal path.
        assert_eq!(pp.paths(0, 1).len(), 1);
    }
}
