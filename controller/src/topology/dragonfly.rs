//! Dragonfly(p, a, h) with the wiring of DESIGN §3.
//!
//! - g = a·h + 1 groups; switch s (0..a) of group G has host ports 1..=p, local ports
//!   p+1..=p+a-1 to the other switches of the group in increasing switch order (so the port to
//!   switch t is p+1+t for t < s and p+t for t > s), and global ports p+a..=p+a+h-1.
//! - Global link j = s·h + k (switch s, global port index k) of group G joins group
//!   G' = (G + j + 1) mod g. **Peer side:** on G' the same link has index j' = g − 2 − j, i.e.
//!   switch j' / h, global port index j' mod h. This is the unique choice consistent with the
//!   rule applied from G' (G' + j' + 1 ≡ G mod g), and it is an involution (j'' = j).
//! - Datapath id `0x000d_GGGG_0000_00SS` (tag 0x0d, group, switch); names `g{G}s{S}`.
//! - Hosts are named `h{G}.{S}.{port}` and get the location (G, S, port).

use super::{FabricBuilder, FabricKind, PortNo, PortRole, SwitchSpec, TopologyError};
use crate::topology::Fabric;

/// Tag in the top bytes of a Dragonfly switch's datapath id.
pub const DPID_TAG: u64 = 0x0d;

/// The datapath id of switch `s` of group `group`.
pub fn dpid(group: u16, s: u8) -> u64 {
    (DPID_TAG << 48) | (u64::from(group) << 32) | u64::from(s)
}

/// The validated parameters of a Dragonfly and its port arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dragonfly {
    pub p: u32,
    pub a: u32,
    pub h: u32,
}

impl Dragonfly {
    /// Checks p ∈ 1..=255 (hosts' MAC byte), a ∈ 1..=256 (switch byte), h ≥ 1 and
    /// g = a·h+1 ≤ 65536 (group field).
    pub fn new(p: u32, a: u32, h: u32) -> Result<Self, TopologyError> {
        let out = |name, value: u32, reason: &str| TopologyError::ParamOutOfRange {
            topology: "dragonfly",
            name,
            value: u64::from(value),
            reason: reason.to_owned(),
        };
        if !(1..=255).contains(&p) {
            return Err(out(
                "p",
                p,
                "hosts per switch must be 1..=255 (the MAC's host byte)",
            ));
        }
        if !(1..=256).contains(&a) {
            return Err(out(
                "a",
                a,
                "switches per group must be 1..=256 (the MAC's switch byte)",
            ));
        }
        if h == 0 || u64::from(a) * u64::from(h) > 65535 {
            return Err(out("h", h, "need h >= 1 and g = a*h+1 <= 65536 groups"));
        }
        Ok(Dragonfly { p, a, h })
    }
    /// Number of groups g = a·h + 1.
    pub fn groups(&self) -> u32 {
        self.a * self.h + 1
    }
    /// Local port of switch `s` towards switch `t` (t ≠ s) of the same group.
    pub fn local_port(&self, s: u32, t: u32) -> PortNo {
        if t < s {
            self.p + 1 + t
        } else {
            self.p + t
        }
    }
    /// The switch a local port of switch `s` leads to (inverse of [`Dragonfly::local_port`]).
    pub fn local_peer(&self, s: u32, port: PortNo) -> u32 {
        let t = port - self.p - 1;
        if t < s {
            t
        } else {
            t + 1
        }
    }
    /// Global port number for global port index `k`.
    pub fn global_port(&self, k: u32) -> PortNo {
        self.p + self.a + k
    }
    /// Global link index of group `from` leading to group `to` (from ≠ to).
    pub fn link_index(&self, from: u32, to: u32) -> u32 {
        let g = self.groups();
        (to + g - from - 1) % g
    }
    /// (switch, global port number) of group `from` owning the link to group `to`.
    pub fn owner(&self, from: u32, to: u32) -> (u32, PortNo) {
        let j = self.link_index(from, to);
        (j / self.h, self.global_port(j % self.h))
    }
    /// The group that global port index `k` of switch `s` of group `group` leads to.
    pub fn global_target(&self, group: u32, s: u32, k: u32) -> u32 {
        (group + s * self.h + k + 1) % self.groups()
    }
    /// Switch-to-switch hop count of the minimal route (local-global-local).
    pub fn minimal_hops(&self, src: (u32, u32), dst: (u32, u32)) -> u32 {
        let ((gs, ss), (gd, sd)) = (src, dst);
        if src == dst {
            return 0;
        }
        if gs == gd {
            return 1;
        }
        let (owner, _) = self.owner(gs, gd);
        let (arrival, _) = self.owner(gd, gs);
        u32::from(owner != ss) + 1 + u32::from(arrival != sd)
    }
}

/// Builds Dragonfly(p, a, h).
pub fn build(p: u32, a: u32, h: u32) -> Result<Fabric, TopologyError> {
    let df = Dragonfly::new(p, a, h)?;
    let g = df.groups();
    let mut b = FabricBuilder::new(FabricKind::Dragonfly { p, a, h });
    let id = |group: u32, s: u32| (group * a + s) as usize;
    for group in 0..g {
        for s in 0..a {
            // a ≤ 256 and g ≤ 65536 were checked, so these conversions cannot fail.
            let (gg, ss) = (
                u16::try_from(group).unwrap_or(u16::MAX),
                u8::try_from(s).unwrap_or(u8::MAX),
            );
            b.add_switch(SwitchSpec {
                dpid: dpid(gg, ss),
                name: format!("g{group}s{s}"),
                group: Some(gg),
                index: ss,
                level: 0,
                max_port: Some(p + a + h - 1),
            })?;
        }
    }
    for group in 0..g {
        for s in 0..a {
            for t in (s + 1)..a {
                b.connect(
                    &format!("local link g{group}s{s}-g{group}s{t}"),
                    id(group, s),
                    df.local_port(s, t),
                    PortRole::Local,
                    id(group, t),
                    df.local_port(t, s),
                    PortRole::Local,
                )?;
            }
            for k in 0..h {
                let j = s * h + k;
                let peer = df.global_target(group, s, k);
                let jp = g - 2 - j;
                if (group, j) < (peer, jp) {
                    b.connect(
                        &format!("global link {j} of group {group}"),
                        id(group, s),
                        df.global_port(k),
                        PortRole::Global,
                        id(peer, jp / h),
                        df.global_port(jp % h),
                        PortRole::Global,
                    )?;
                }
            }
            for port in 1..=p {
                b.add_host(format!("h{group}.{s}.{port}"), id(group, s), port)?;
            }
        }
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Peer;

    #[test]
    fn wiring_2_4_2() {
        let f = build(2, 4, 2).unwrap();
        assert_eq!(f.switches().len(), 9 * 4);
        assert_eq!(f.hosts().len(), 72);
        // g0s0 port 6 = global index 0 -> group 1; peer side j' = 9-2-0 = 7 -> switch 3, k=1.
        let s = f.switch_by_name("g0s0").unwrap();
        let Peer::Switch { switch, port } = f.peer(s, 6).unwrap() else {
            panic!()
        };
        assert_eq!(f.switches()[switch].name, "g1s3");
        assert_eq!(port, 7);
        // Local ports of g0s2: 3 -> s0, 4 -> s1, 5 -> s3.
        let s2 = f.switch_by_name("g0s2").unwrap();
        for (port, peer) in [(3, "g0s0"), (4, "g0s1"), (5, "g0s3")] {
            let Peer::Switch { switch, .. } = f.peer(s2, port).unwrap() else {
                panic!()
            };
            assert_eq!(f.switches()[switch].name, peer);
        }
        assert_eq!(f.switches()[s2].dpid, 0x000d_0000_0000_0002);
        // Every pair of groups is joined exactly once.
        let mut pairs = std::collections::BTreeSet::new();
        for l in f.links() {
            let (ga, gb) = (
                f.switches()[l.a().switch].group,
                f.switches()[l.b().switch].group,
            );
            if ga != gb {
                assert!(pairs.insert((ga.min(gb), ga.max(gb))));
            }
        }
        assert_eq!(pairs.len(), 9 * 8 / 2);
    }

    #[test]
    fn parameters_out_of_range() {
        for (p, a, h, name) in [
            (0, 2, 1, "p"),
            (256, 2, 1, "p"),
            (1, 0, 1, "a"),
            (1, 257, 1, "a"),
            (1, 2, 0, "h"),
            (1, 256, 300, "h"),
        ] {
            match build(p, a, h) {
                Err(TopologyError::ParamOutOfRange { name: n, .. }) => assert_eq!(n, name),
                other => panic!("{p},{a},{h}: {other:?}"),
            }
        }
    }
}
