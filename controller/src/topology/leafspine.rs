//! The two-level leaf/spine fat-tree with any radix split: `l` leaves of `p` hosts each, every
//! leaf joined once to each of `s` spines (`leafspine:l=36,s=18,p=18` is the 648-host fat-tree
//! of 36-port switches the dFtree seed simulates: full bisection when `s = p`).
//!
//! A k-ary 2-tree is the special case `l = s = p = k`; this generator exists because the 648-host
//! tree has twice as many leaves as spines, which no k-ary n-tree has.
//!
//! - **Port numbering:** a leaf's ports `1..=p` face its hosts, port `p+1+u` leads to spine `u`;
//!   spine `u`'s port `l+1` leads to leaf `l`.
//! - **Groups (the address plan's pods):** every leaf is a group of one switch (index 0), as in a
//!   k-ary 2-tree; spines belong to no group.
//! - Datapath id `0x001f_GGGG_LL00_IIII` (tag 0x1f, leaf index or 0xffff for spines, level,
//!   spine index); names `leaf{l}` and `spine{u}`; hosts `h{l}.{port}`.
//! - Routes are the generic shortest paths: up to any spine, down to the leaf.

use super::{FabricBuilder, FabricKind, PortRole, SwitchSpec, TopologyError};
use crate::topology::Fabric;

/// Tag in the top bytes of a leaf/spine switch's datapath id.
pub const DPID_TAG: u64 = 0x1f;

/// Checks the ranges: 2..=65535 leaves (a group per leaf), 1..=65535 spines, 1..=255 hosts per
/// leaf (the MAC's host byte).
fn check(leaves: u32, spines: u32, hosts: u32) -> Result<(), TopologyError> {
    let out = |name, value: u32, reason: &str| TopologyError::ParamOutOfRange {
        topology: "leafspine",
        name,
        value: u64::from(value),
        reason: reason.to_owned(),
    };
    if !(2..=65535).contains(&leaves) {
        return Err(out("l", leaves, "leaves must be 2..=65535"));
    }
    if !(1..=65535).contains(&spines) {
        return Err(out("s", spines, "spines must be 1..=65535"));
    }
    if !(1..=255).contains(&hosts) {
        return Err(out(
            "p",
            hosts,
            "hosts per leaf must be 1..=255 (the MAC's host byte)",
        ));
    }
    Ok(())
}

/// Builds `leaves` leaves of `hosts` hosts each under `spines` spines.
pub fn build(leaves: u32, spines: u32, hosts: u32) -> Result<Fabric, TopologyError> {
    check(leaves, spines, hosts)?;
    let mut b = FabricBuilder::new(FabricKind::LeafSpine {
        leaves,
        spines,
        hosts,
    });
    let mut leaf_ids = Vec::new();
    for l in 0..leaves {
        leaf_ids.push(b.add_switch(SwitchSpec {
            dpid: (DPID_TAG << 48) | (u64::from(l) << 32),
            name: format!("leaf{l}"),
            group: u16::try_from(l).ok(),
            index: 0,
            level: 0,
            max_port: Some(hosts + spines),
        })?);
    }
    let mut spine_ids = Vec::new();
    for u in 0..spines {
        spine_ids.push(b.add_switch(SwitchSpec {
            dpid: (DPID_TAG << 48) | (0xffff << 32) | (1 << 24) | u64::from(u),
            name: format!("spine{u}"),
            group: None,
            index: 0,
            level: 1,
            max_port: Some(leaves),
        })?);
    }
    for (l, &leaf) in (0u32..).zip(&leaf_ids) {
        for (u, &spine) in (0u32..).zip(&spine_ids) {
            b.connect(
                &format!("link leaf{l} up {u}"),
                leaf,
                hosts + 1 + u,
                PortRole::Up,
                spine,
                l + 1,
                PortRole::Down,
            )?;
        }
        for port in 1..=hosts {
            b.add_host(format!("h{l}.{port}"), leaf, port)?;
        }
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::topology::Peer;
    use crate::Routes;
    use std::collections::BTreeSet;

    #[test]
    fn the_648_host_tree_has_its_sizes_and_wiring() {
        let f = build(36, 18, 18).unwrap();
        assert_eq!(f.switches().len(), 54);
        assert_eq!(f.hosts().len(), 648);
        assert_eq!(f.links().len(), 36 * 18);
        // Every switch uses all 36 ports.
        for sw in f.switches() {
            assert_eq!(sw.ports.len(), 36, "{}", sw.name);
        }
        let leaf = f.switch_by_name("leaf5").unwrap();
        let Peer::Switch { switch, port } = f.peer(leaf, 18 + 1 + 7).unwrap() else {
            panic!("leaf port 26 is an up port")
        };
        assert_eq!(f.switches()[switch].name, "spine7");
        assert_eq!(port, 6);
        assert_eq!(f.hosts()[5 * 18].location.group, 5);
    }

    #[test]
    fn routes_go_up_any_spine_and_down_one_port() {
        let f = build(4, 3, 2).unwrap();
        let r = Routes::compute(&f, &BTreeSet::new());
        let (l0, l1) = (
            f.switch_by_name("leaf0").unwrap(),
            f.switch_by_name("leaf1").unwrap(),
        );
        assert_eq!(r.minimal(l0, l1), &[3, 4, 5]);
        assert_eq!(r.hops(l0, l1), Some(2));
        let s2 = f.switch_by_name("spine2").unwrap();
        assert_eq!(r.minimal(s2, l1), &[2]);
    }

    #[test]
    fn out_of_range_parameters_are_refused() {
        assert!(build(1, 2, 2).is_err());
        assert!(build(2, 0, 2).is_err());
        assert!(build(2, 2, 0).is_err());
        assert!(build(2, 2, 256).is_err());
    }
}
