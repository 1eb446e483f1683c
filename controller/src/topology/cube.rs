//! The k-ary n-cube: a torus (`torus:k=K,n=N,p=P`, wrap-around links) or a mesh
//! (`mesh:k=K,n=N,p=P`, no wrap-around), p hosts per switch.
//!
//! - Switch id = Σ c_i·k^i for coordinates c_0..c_{n−1} (each 0..k), k^n ≤ 256 switches so that
//!   every switch is a group of its own with a group number that fits the IPv4 plan's octet.
//! - **Port numbering:** host ports 1..=p; in dimension d, port p+1+2d goes to the "+"
//!   neighbour (c_d + 1, mod k on a torus) and port p+2+2d to the "−" neighbour. A mesh switch
//!   on a boundary does not use the port that would leave the mesh.
//! - **Groups:** switch id i is group i, index 0 (one switch per group, as a fat-tree leaf of
//!   k-ary 2-tree), so the high byte of the MAC's group field is always 0: the multipath plan
//!   ([`crate::plan::paths`]) uses it for the source tag.
//! - Datapath id `0x000c_0000_0000_00II` (tag 0x0c, torus) or `0x000e_…` (mesh); names `c{i}`
//!   (torus) or `m{i}` (mesh); hosts `h{i}.0.{port}`.
//! - **Minimal routing is dimension order** ([`Cube::dor_port`]): dimension 0 first, then 1, …;
//!   on a torus along the shorter way round, "+" on a tie (even k, distance k/2). It is minimal,
//!   and with one dateline virtual channel per dimension (a packet moves to the upper VC after
//!   crossing the wrap-around link of the dimension it travels in) deadlock-free in a credit-based
//!   network; a mesh needs no dateline.

use super::{FabricBuilder, FabricKind, PortNo, PortRole, SwitchSpec, TopologyError};
use crate::topology::Fabric;

/// Tag in the top bytes of a torus switch's datapath id.
pub const TORUS_DPID_TAG: u64 = 0x0c;
/// Tag in the top bytes of a mesh switch's datapath id.
pub const MESH_DPID_TAG: u64 = 0x0e;

/// The validated parameters of a k-ary n-cube and its coordinate arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cube {
    pub k: u32,
    pub n: u32,
    pub p: u32,
    /// Torus (wrap-around links) or mesh.
    pub wrap: bool,
}

impl Cube {
    /// Checks k ∈ 2..=16 (3.. for a torus, so that "+" and "−" neighbours differ), n ∈ 1..=8,
    /// k^n ≤ 256 and p ∈ 1..=64.
    pub fn new(k: u32, n: u32, p: u32, wrap: bool) -> Result<Self, TopologyError> {
        let topology = if wrap { "torus" } else { "mesh" };
        let out = |name, value: u32, reason: &str| TopologyError::ParamOutOfRange {
            topology,
            name,
            value: u64::from(value),
            reason: reason.to_owned(),
        };
        let kmin = if wrap { 3 } else { 2 };
        if !(kmin..=256).contains(&k) {
            return Err(out(
                "k",
                k,
                &format!("arity must be {kmin}..=256 (a 2-ary torus is a mesh with doubled links)"),
            ));
        }
        if !(1..=8).contains(&n) {
            return Err(out("n", n, "dimensions must be 1..=8"));
        }
        if (0..n)
            .try_fold(1u64, |acc, _| acc.checked_mul(u64::from(k)))
            .is_none_or(|s| s > 256)
        {
            return Err(out(
                "n",
                n,
                "k^n must be <= 256 switches (one group per switch, IPv4 group octet)",
            ));
        }
        if !(1..=64).contains(&p) {
            return Err(out("p", p, "hosts per switch must be 1..=64"));
        }
        Ok(Cube { k, n, p, wrap })
    }
    /// Number of switches, k^n.
    pub fn switches(&self) -> u32 {
        self.k.pow(self.n)
    }
    /// Coordinate `d` of switch `id`.
    pub fn coord(&self, id: u32, d: u32) -> u32 {
        (id / self.k.pow(d)) % self.k
    }
    /// `id` with coordinate `d` replaced by `c`.
    pub fn with_coord(&self, id: u32, d: u32, c: u32) -> u32 {
        let base = self.k.pow(d);
        id - self.coord(id, d) * base + c * base
    }
    /// The "+" port of dimension `d`.
    pub fn plus_port(&self, d: u32) -> PortNo {
        self.p + 1 + 2 * d
    }
    /// The "−" port of dimension `d`.
    pub fn minus_port(&self, d: u32) -> PortNo {
        self.p + 2 + 2 * d
    }
    /// The neighbour of `id` one step along `d` (`plus` or minus), if the step stays inside.
    pub fn neighbour(&self, id: u32, d: u32, plus: bool) -> Option<u32> {
        let c = self.coord(id, d);
        let next = match (plus, self.wrap) {
            (true, _) if c + 1 < self.k => c + 1,
            (true, true) => 0,
            (false, _) if c > 0 => c - 1,
            (false, true) => self.k - 1,
            _ => return None,
        };
        Some(self.with_coord(id, d, next))
    }
    /// Which dimension and direction a fabric port leads in, `None` for host ports.
    pub fn port_dim(&self, port: PortNo) -> Option<(u32, bool)> {
        let i = port.checked_sub(self.p + 1)?;
        (i < 2 * self.n).then_some((i / 2, i % 2 == 0))
    }
    /// Distance along dimension `d` from coordinate `a` to `b` and whether "+" is the way.
    fn dim_step(&self, a: u32, b: u32) -> (u32, bool) {
        if a == b {
            return (0, true);
        }
        let up = (b + self.k - a) % self.k;
        if !self.wrap {
            return if b > a { (b - a, true) } else { (a - b, false) };
        }
        let down = self.k - up;
        if up <= down {
            (up, true)
        } else {
            (down, false)
        }
    }
    /// Switch-to-switch hops of a minimal route.
    pub fn hops(&self, src: u32, dst: u32) -> u32 {
        (0..self.n)
            .map(|d| self.dim_step(self.coord(src, d), self.coord(dst, d)).0)
            .sum()
    }
    /// The dimension-order output port at `at` towards `dst` (`None` when equal).
    pub fn dor_port(&self, at: u32, dst: u32) -> Option<PortNo> {
        (0..self.n).find_map(|d| {
            let (dist, plus) = self.dim_step(self.coord(at, d), self.coord(dst, d));
            (dist > 0).then(|| {
                if plus {
                    self.plus_port(d)
                } else {
                    self.minus_port(d)
                }
            })
        })
    }
    /// Whether the link leaving `at` on `port` is the dateline (wrap-around) link of its
    /// dimension: from coordinate k−1 going "+", or from 0 going "−".
    pub fn crosses_dateline(&self, at: u32, port: PortNo) -> bool {
        match self.port_dim(port) {
            Some((d, true)) => self.wrap && self.coord(at, d) == self.k - 1,
            Some((d, false)) => self.wrap && self.coord(at, d) == 0,
            None => false,
        }
    }
    /// The switch's datapath id.
    pub fn dpid(&self, id: u32) -> u64 {
        let tag = if self.wrap {
            TORUS_DPID_TAG
        } else {
            MESH_DPID_TAG
        };
        (tag << 48) | u64::from(id)
    }
}

/// Builds the torus (`wrap`) or mesh k-ary n-cube with p hosts per switch.
pub fn build(k: u32, n: u32, p: u32, wrap: bool) -> Result<Fabric, TopologyError> {
    let c = Cube::new(k, n, p, wrap)?;
    let kind = if wrap {
        FabricKind::Torus { k, n, p }
    } else {
        FabricKind::Mesh { k, n, p }
    };
    let letter = if wrap { 'c' } else { 'm' };
    let mut b = FabricBuilder::new(kind);
    for id in 0..c.switches() {
        // k^n ≤ 256 was checked, so the id fits the group field.
        b.add_switch(SwitchSpec {
            dpid: c.dpid(id),
            name: format!("{letter}{id}"),
            group: u16::try_from(id).ok(),
            index: 0,
            level: 0,
            max_port: Some(p + 2 * n),
        })?;
    }
    for id in 0..c.switches() {
        for d in 0..n {
            let Some(peer) = c.neighbour(id, d, true) else {
                continue;
            };
            b.connect(
                &format!("link {letter}{id} dim {d} +"),
                id as usize,
                c.plus_port(d),
                PortRole::Fabric,
                peer as usize,
                c.minus_port(d),
                PortRole::Fabric,
            )?;
        }
    }
    for id in 0..c.switches() {
        for port in 1..=p {
            b.add_host(format!("h{id}.0.{port}"), id as usize, port)?;
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
        let t = build(4, 2, 1, true).unwrap();
        assert_eq!(t.switches().len(), 16);
        assert_eq!(t.hosts().len(), 16);
        assert_eq!(t.links().len(), 2 * 16);
        let m = build(4, 2, 2, false).unwrap();
        assert_eq!(m.hosts().len(), 32);
        assert_eq!(m.links().len(), 2 * 4 * 3);
        // Torus c3 (coords 3,0): "+" in dimension 0 wraps to c0, arriving on its "−" port.
        let Peer::Switch { switch, port } = t.peer(3, 2).unwrap() else {
            panic!()
        };
        assert_eq!((t.switches()[switch].name.as_str(), port), ("c0", 3));
        // Mesh m3 has no "+" port in dimension 0.
        assert!(m.peer(3, 3).is_none());
        assert_eq!(t.switches()[5].dpid, 0x000c_0000_0000_0005);
        assert!(Cube::new(2, 2, 1, true).is_err());
        assert!(Cube::new(2, 2, 1, false).is_ok());
        assert!(Cube::new(17, 2, 1, true).is_err());
        assert!(Cube::new(4, 2, 0, true).is_err());
    }

    #[test]
    fn dimension_order_is_minimal_and_dateline_marks_wraps() {
        let c = Cube::new(8, 2, 1, true).unwrap();
        // (1,0) → (7,0): two hops "−" through the wrap-around.
        assert_eq!(c.hops(1, 7), 2);
        assert_eq!(c.dor_port(1, 7), Some(c.minus_port(0)));
        // (0,0) → (4,0): tie at k/2, "+" wins.
        assert_eq!(c.dor_port(0, 4), Some(c.plus_port(0)));
        // Dimension 0 before dimension 1.
        assert_eq!(c.dor_port(0, 8 + 1), Some(c.plus_port(0)));
        assert_eq!(c.dor_port(1, 8 + 1), Some(c.plus_port(1)));
        assert!(c.crosses_dateline(7, c.plus_port(0)));
        assert!(c.crosses_dateline(0, c.minus_port(1)));
        assert!(!c.crosses_dateline(3, c.plus_port(0)));
        let m = Cube::new(4, 2, 1, false).unwrap();
        assert_eq!(m.hops(0, 15), 6);
        assert!(!m.crosses_dateline(3, m.plus_port(0)));
    }
}
