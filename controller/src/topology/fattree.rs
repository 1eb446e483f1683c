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
            }),
            _ => Err(out(
                "n",
                n,
                "k^(n-2) must be <= 256 leaves per pod and k^(n-1) <= 65536 switches per level",
            )),
        }
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
    let t = FatTree::new(k, n)?;
    let mut b = FabricBuilder::new(FabricKind::FatTree { k, n });
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
                max_port: Some(if root { k } else { 2 * k }),
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
}
