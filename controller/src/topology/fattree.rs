//! The k-ary n-tree (Petrini & Vanneschi), n ≥ 2; n = 2 is the common leaf/spine.
//!
//! - Levels 0 (leaves) ..= n−1 (roots), each with k^(n−1) switches labelled by an (n−1)-digit
//!   base-k word w (digit i = (w / k^i) mod k). Leaves carry k hosts each: k^n hosts.
//! - Switch ⟨w, l⟩ (l < n−1) and ⟨w', l+1⟩ are linked iff w and w' differ at most in digit l.
//! - **Port numbering, host/down ports first, then up ports:** ports 1..=k face down (to hosts
//!   on a leaf; on level l ≥ 1 port d+1 leads to the child whose digit l−1 is d), ports
//!   k+1..=2k face up (port k+1+u leads to the parent whose digit l is u). Roots have no up ports.
//! - **Pods (the address plan's groups):** the pod of a non-root switch is its top digit
//!   w_{n−2}: the subtree under one root-level fan-out. The switch index inside the pod is
//!   w mod k^(n−2) (so k^(n−2) ≤ 256). Roots belong to no pod. For n = 2 every leaf is a pod
//!   of one switch (index 0).
//! - Datapath id `0x000f_PPPP_LLII_IIII` (tag 0x0f, pod or 0xffff for roots, level, index
//!   inside the pod, or w for roots); names `l{level}p{pod}s{index}` and roots `l{level}s{w}`.
//! - Hosts are named `h{pod}.{index}.{port}`.
//!
//! **Extended ("modified") tree, width w ≥ 1** (`fattree:k=K,n=N,w=W`): the switches of one level
//! l ≥ 1 that share digits l..n−2 stand for one node of the ideal fat tree (they reach the same
//! leaves); they form a ring ordered by w mod k^l, and each is linked to the ring neighbours at
//! distances 1..=w. Switch ⟨x, l⟩ gets 2w *horizontal* ports after its down and up ports: port
//! `base + d − 1` leads to the neighbour at +d, port `base + w + d − 1` to the one at −d
//! (base = 2k+1 below the roots, k+1 on the roots). Leaves have none. w < k (so no link closes on
//! its own switch; at ring size 2d the ±d links are parallel). w = 0 is the plain tree, wired
//! exactly as above. Horizontal links are never on a minimal path (up*/down* is always shorter),
//! so destination routing is unchanged; the flow-aware routes ([`crate::flowroute`]) use them
//! during descent, at most one per level.

use super::{FabricBuilder, FabricKind, PortNo, PortRole, SwitchSpec, TopologyError};
use crate::topology::Fabric;

/// Tag in the top bytes of a fat-tree switch's datapath id.
pub const DPID_TAG: u64 = 0x0f;

/// The validated parameters of a k-ary n-tree and its label arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FatTree {
    pub k: u32,
    pub n: u32,
    /// k^(n−1): switches per level.
    pub per_level: u32,
    /// k^(n−2): leaves per pod.
    pub per_pod: u32,
    /// Width of the horizontal links (0: the plain tree).
    pub w: u32,
}

impl FatTree {
    /// Checks k ∈ 2..=255, n ∈ 2..=16, k^(n−2) ≤ 256 and k^(n−1) ≤ 65536.
    pub fn new(k: u32, n: u32) -> Result<Self, TopologyError> {
        let out = |name, value: u32, reason: &str| TopologyError::ParamOutOfRange {
            topology: "fattree",
            name,
            value: u64::from(value),
            reason: reason.to_owned(),
        };
        if !(2..=255).contains(&k) {
            return Err(out(
                "k",
                k,
                "arity must be 2..=255 (hosts per leaf fit the MAC's host byte)",
            ));
        }
        if !(2..=16).contains(&n) {
            return Err(out("n", n, "levels must be 2..=16"));
        }
        let pow = |e: u32| (0..e).try_fold(1u64, |acc, _| acc.checked_mul(u64::from(k)));
        let per_pod = pow(n - 2).filter(|&v| v <= 256);
        let per_level = pow(n - 1).filter(|&v| v <= 65536);
        match (per_pod, per_level) {
            (Some(pp), Some(pl)) => Ok(FatTree {
                k,
                n,
                per_level: u32::try_from(pl).unwrap_or(u32::MAX),
                per_pod: u32::try_from(pp).unwrap_or(u32::MAX),
                w: 0,
            }),
            _ => Err(out(
                "n",
                n,
                "k^(n-2) must be <= 256 leaves per pod and k^(n-1) <= 65536 switches per level",
            )),
        }
    }
    /// The extended tree of width `w` (checks w < k).
    pub fn with_width(k: u32, n: u32, w: u32) -> Result<Self, TopologyError> {
        let t = FatTree::new(k, n)?;
        if w >= k {
            return Err(TopologyError::ParamOutOfRange {
                topology: "fattree",
                name: "w",
                value: u64::from(w),
                reason: format!("horizontal width must be below k = {k}"),
            });
        }
        Ok(FatTree { w, ..t })
    }
    /// Size of the ring of switches at level `l` that stand for one ideal fat-tree node (k^l).
    pub fn ring(&self, l: u32) -> u32 {
        self.k.pow(l)
    }
    /// The switch at signed ring distance `d` from `x` on level `l`.
    pub fn ring_neighbour(&self, x: u32, l: u32, d: i64) -> u32 {
        let m = i64::from(self.ring(l));
        let pos = i64::from(x % self.ring(l));
        let to = (pos + d).rem_euclid(m.max(1));
        x - x % self.ring(l) + u32::try_from(to).unwrap_or(0)
    }
    /// First horizontal port at level `l`.
    pub fn horizontal_base(&self, l: u32) -> PortNo {
        if l == self.n - 1 {
            self.k + 1
        } else {
            2 * self.k + 1
        }
    }
    /// The horizontal port of a level-`l` switch towards ring distance `d` (±1..=±w).
    pub fn horizontal_port(&self, l: u32, d: i64) -> Option<PortNo> {
        let a = u32::try_from(d.unsigned_abs()).ok()?;
        if a == 0 || a > self.w || l == 0 {
            return None;
        }
        let off = if d > 0 { a - 1 } else { self.w + a - 1 };
        Some(self.horizontal_base(l) + off)
    }
    /// Digit `i` of label `w`.
    pub fn digit(&self, w: u32, i: u32) -> u32 {
        (w / self.k.pow(i)) % self.k
    }
    /// `w` with digit `i` replaced by `d`.
    pub fn with_digit(&self, w: u32, i: u32, d: u32) -> u32 {
        let base = self.k.pow(i);
        w - self.digit(w, i) * base + d * base
    }
    /// Switch id of ⟨w, l⟩.
    pub fn id(&self, w: u32, l: u32) -> usize {
        (l * self.per_level + w) as usize
    }
    /// Pod of label w (non-roots).
    pub fn pod(&self, w: u32) -> u32 {
        w / self.per_pod
    }
    /// Up port number for up index u.
    pub fn up_port(&self, u: u32) -> PortNo {
        self.k + 1 + u
    }
    /// Level of the nearest common ancestors of leaves v and w (0 when v = w).
    pub fn nca_level(&self, v: u32, w: u32) -> u32 {
        (0..self.n - 1)
            .rev()
            .find(|&i| self.digit(v, i) != self.digit(w, i))
            .map_or(0, |i| i + 1)
    }
}

/// The datapath id of ⟨w, l⟩.
pub fn dpid(t: &FatTree, w: u32, l: u32) -> u64 {
    let (group, index) = if l == t.n - 1 {
        (0xffff_u64, u64::from(w))
    } else {
        (u64::from(t.pod(w)), u64::from(w % t.per_pod))
    };
    (DPID_TAG << 48) | (group << 32) | (u64::from(l) << 24) | index
}

/// Builds the k-ary n-tree.
pub fn build(k: u32, n: u32) -> Result<Fabric, TopologyError> {
    build_extended(k, n, 0)
}

/// Builds the k-ary n-tree with horizontal links of width `w` (0: the plain tree).
pub fn build_extended(k: u32, n: u32, w: u32) -> Result<Fabric, TopologyError> {
    let t = FatTree::with_width(k, n, w)?;
    let mut b = FabricBuilder::new(FabricKind::FatTree { k, n, w });
    for l in 0..n {
        for w in 0..t.per_level {
            let root = l == n - 1;
            let (group, index) = if root {
                (None, 0)
            } else {
                // pod < k ≤ 255 and index < per_pod ≤ 256 were checked in FatTree::new.
                (
                    u16::try_from(t.pod(w)).ok(),
                    u8::try_from(w % t.per_pod).unwrap_or(u8::MAX),
                )
            };
            let name = match group {
                Some(pod) => format!("l{l}p{pod}s{index}"),
                None => format!("l{l}s{w}"),
            };
            b.add_switch(SwitchSpec {
                dpid: dpid(&t, w, l),
                name,
                group,
                index,
                level: u8::try_from(l).unwrap_or(u8::MAX),
                max_port: Some(if root { k } else { 2 * k } + 2 * t.w),
            })?;
        }
    }
    for l in 0..n - 1 {
        for w in 0..t.per_level {
            for u in 0..k {
                let parent = t.with_digit(w, l, u);
                b.connect(
                    &format!("link l{l}w{w} up {u}"),
                    t.id(w, l),
                    t.up_port(u),
                    PortRole::Up,
                    t.id(parent, l + 1),
                    t.digit(w, l) + 1,
                    PortRole::Down,
                )?;
            }
        }
    }
    for l in 1..n {
        for x in 0..t.per_level {
            for d in 1..=t.w {
                let y = t.ring_neighbour(x, l, i64::from(d));
                let (Some(right), Some(left)) = (
                    t.horizontal_port(l, i64::from(d)),
                    t.horizontal_port(l, -i64::from(d)),
                ) else {
                    continue;
                };
                b.connect(
                    &format!("link l{l}w{x} horizontal +{d}"),
                    t.id(x, l),
                    right,
                    PortRole::Horizontal,
                    t.id(y, l),
                    left,
                    PortRole::Horizontal,
                )?;
            }
        }
    }
    for w in 0..t.per_level {
        for port in 1..=k {
            let name = format!("h{}.{}.{port}", t.pod(w), w % t.per_pod);
            b.add_host(name, t.id(w, 0), port)?;
        }
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Peer;

    #[test]
    fn sizes_and_wiring() {
        let f = build(4, 3).unwrap();
        assert_eq!(f.switches().len(), 48);
        assert_eq!(f.hosts().len(), 64);
        assert_eq!(f.links().len(), 2 * 16 * 4);
        let f2 = build(4, 2).unwrap();
        assert_eq!(f2.switches().len(), 8);
        assert_eq!(f2.hosts().len(), 16);
        // Leaf w=2 (pod 2) up port 5+1=6 (u=1) goes to spine w=1, arriving on its port 3.
        let leaf = f2.switch_by_name("l0p2s0").unwrap();
        let Peer::Switch { switch, port } = f2.peer(leaf, 6).unwrap() else {
            panic!()
        };
        assert_eq!(f2.switches()[switch].name, "l1s1");
        assert_eq!(port, 3);
        assert_eq!(f2.switches()[switch].dpid, 0x000f_ffff_0100_0001);
        assert!(build(1, 2).is_err());
        assert!(build(16, 5).is_err());
    }

    #[test]
    fn horizontal_links_join_the_switches_of_one_ideal_node() {
        let (k, n, w) = (4, 3, 2);
        let t = FatTree::with_width(k, n, w).unwrap();
        let f = build_extended(k, n, w).unwrap();
        let plain = build(k, n).unwrap();
        // w links per switch of levels 1 and 2, on top of the plain tree's, ports unchanged.
        assert_eq!(f.links().len(), plain.links().len() + 2 * 16 * 2);
        for l in plain.links() {
            assert!(f.links().contains(&l));
        }
        let mut seen = 0;
        for (id, sw) in f.switches().iter().enumerate() {
            let (l, x) = ((id / 16) as u32, (id % 16) as u32);
            let horizontal: Vec<_> = sw
                .ports
                .iter()
                .filter(|p| p.role == PortRole::Horizontal)
                .collect();
            assert_eq!(horizontal.len(), if l == 0 { 0 } else { 2 * w as usize });
            for p in horizontal {
                let Peer::Switch { switch, port } = p.peer else {
                    panic!("{p:?}")
                };
                let (l2, y) = ((switch / 16) as u32, (switch % 16) as u32);
                assert_eq!(l2, l);
                // Same ideal node: equal digits l..n-2, so equal quotient by k^l.
                assert_eq!(x / t.ring(l), y / t.ring(l), "{} {}", sw.name, p.no);
                let d = if p.no < t.horizontal_base(l) + w {
                    1
                } else {
                    -1
                } * i64::from((p.no - t.horizontal_base(l)) % w + 1);
                assert_eq!(t.ring_neighbour(x, l, d), y);
                assert_eq!(t.horizontal_port(l, -d), Some(port));
                seen += 1;
            }
        }
        assert_eq!(seen, 2 * 2 * 16 * 2);
        assert!(build_extended(4, 3, 4).is_err());
        assert_eq!(
            build_extended(4, 2, 0).unwrap().links(),
            build(4, 2).unwrap().links()
        );
    }
}
