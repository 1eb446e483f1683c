//! The fabric and its traffic as plain JSON for other tools (the Mininet harness builds its
//! topology from it and runs its flows), so that wiring, datapath ids, addresses and traffic
//! have exactly one source: this crate.

use serde::Serialize;

use crate::addressing::{AddressError, Addressing};
use crate::topology::{Fabric, FabricKind};
use crate::traffic::{Pattern, TrafficError};

/// The whole fabric: switches, switch-to-switch links (each once) and hosts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopologyExport {
    /// `dragonfly`, `fattree` or `file`.
    pub kind: &'static str,
    pub switches: Vec<SwitchExport>,
    pub links: Vec<LinkExport>,
    pub hosts: Vec<HostExport>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwitchExport {
    pub name: String,
    /// 16 hex digits, as `ovs-vsctl set bridge … other-config:datapath-id=` wants it.
    pub dpid: String,
    pub group: Option<u16>,
    pub index: u8,
    pub level: u8,
}

/// A link; `class` is the role of the port at end `a` (`local`, `global`, `up`, `down`,
/// `fabric`), which the harness uses to pick the link's rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkExport {
    pub a: String,
    pub a_port: u32,
    pub b: String,
    pub b_port: u32,
    pub class: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostExport {
    pub name: String,
    pub switch: String,
    pub port: u32,
    pub mac: String,
    pub ip: String,
    pub group: u16,
}

/// Exports `fabric` with host IPv4 addresses from `addressing`.
pub fn export(fabric: &Fabric, addressing: &Addressing) -> Result<TopologyExport, AddressError> {
    let switch_name = |id: usize| {
        fabric
            .switch(id)
            .map(|s| s.name.clone())
            .unwrap_or_default()
    };
    let switches = fabric
        .switches()
        .iter()
        .map(|s| SwitchExport {
            name: s.name.clone(),
            dpid: format!("{:016x}", s.dpid),
            group: s.group,
            index: s.index,
            level: s.level,
        })
        .collect();
    let links = fabric
        .links()
        .into_iter()
        .map(|l| {
            let (a, b) = (l.a(), l.b());
            let class = fabric
                .switch(a.switch)
                .and_then(|s| s.port(a.port))
                .map_or("fabric", |p| p.role.name());
            LinkExport {
                a: switch_name(a.switch),
                a_port: a.port,
                b: switch_name(b.switch),
                b_port: b.port,
                class,
            }
        })
        .collect();
    let hosts = fabric
        .hosts()
        .iter()
        .map(|h| {
            Ok(HostExport {
                name: h.name.clone(),
                switch: switch_name(h.switch),
                port: h.port,
                mac: h.location.mac().to_string(),
                ip: addressing.ipv4(h.location)?.to_string(),
                group: h.location.group,
            })
        })
        .collect::<Result<_, AddressError>>()?;
    Ok(TopologyExport {
        kind: match fabric.kind() {
            FabricKind::Dragonfly { .. } => "dragonfly",
            FabricKind::FatTree { .. } => "fattree",
            FabricKind::LeafSpine { .. } => "leafspine",
            FabricKind::Torus { .. } => "torus",
            FabricKind::Mesh { .. } => "mesh",
            FabricKind::File => "file",
        },
        switches,
        links,
        hosts,
    })
}

/// The flows of a traffic pattern ([`Pattern::flows`]), hosts by name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrafficExport {
    /// The pattern's canonical name.
    pub pattern: String,
    pub seed: u64,
    /// Sorted by source host index (the order of [`TopologyExport::hosts`]).
    pub flows: Vec<FlowExport>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowExport {
    pub src: String,
    pub dst: String,
}

/// Exports the balanced flow sample of `pattern` on `fabric` for `seed`.
pub fn traffic(
    fabric: &Fabric,
    pattern: Pattern,
    seed: u64,
) -> Result<TrafficExport, TrafficError> {
    let name = |h| fabric.host(h).map(|x| x.name.clone()).unwrap_or_default();
    Ok(TrafficExport {
        pattern: pattern.to_string(),
        seed,
        flows: pattern
            .flows(fabric, seed)?
            .into_iter()
            .map(|(s, d)| FlowExport {
                src: name(s),
                dst: name(d),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn dragonfly_export_matches_the_model() {
        let spec: crate::TopologySpec = "dragonfly:p=2,a=4,h=2".parse().unwrap();
        let fabric = spec.build().unwrap();
        let t = export(
            &fabric,
            &Addressing::new(Ipv4Addr::new(10, 0, 0, 0)).unwrap(),
        )
        .unwrap();
        // g = a*h + 1 = 9 groups of 4 switches, 2 hosts each.
        assert_eq!(t.switches.len(), 36);
        assert_eq!(t.hosts.len(), 72);
        // Local links: 9 groups * C(4,2); global links: C(9,2).
        assert_eq!(t.links.iter().filter(|l| l.class == "local").count(), 54);
        assert_eq!(t.links.iter().filter(|l| l.class == "global").count(), 36);
        let h = &t.hosts[0];
        assert_eq!(
            (h.mac.as_str(), h.ip.as_str(), h.port),
            ("02:00:00:00:00:01", "10.0.0.1", 1)
        );
        assert!(t.switches.iter().all(|s| s.dpid.len() == 16));
        assert_eq!(t.kind, "dragonfly");
    }

    #[test]
    fn traffic_export_names_the_hosts_of_the_registrys_flows() {
        let fabric = "dragonfly:p=1,a=2,h=1"
            .parse::<crate::TopologySpec>()
            .unwrap()
            .build()
            .unwrap();
        let p: Pattern = "adv+1".parse().unwrap();
        let t = traffic(&fabric, p, 2).unwrap();
        assert_eq!((t.pattern.as_str(), t.seed, t.flows.len()), ("adv+1", 2, 6));
        let flows = p.flows(&fabric, 2).unwrap();
        for (f, (s, d)) in t.flows.iter().zip(flows) {
            assert_eq!(f.src, fabric.hosts()[s].name);
            assert_eq!(f.dst, fabric.hosts()[d].name);
        }
        assert!(traffic(&fabric, Pattern::Adv(3), 2).is_err());
    }
}
