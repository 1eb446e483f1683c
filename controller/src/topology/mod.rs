//! The fabric model: switches, their numbered ports, the links between ports, and the hosts.
//!
//! Every topology (generated Dragonfly or fat-tree, or a fabric file) is built through
//! [`FabricBuilder`], which enforces the invariants the planner relies on: unique dpids and names,
//! each port used once, no self links, hosts on ports 1..=255, at most 256 switches per group, and
//! a connected switch graph. Errors name the offending item.
//!
//! Spec spelling shared by every tool ([`TopologySpec`]): `dragonfly:p=2,a=4,h=2`,
//! `fattree:k=4,n=3` (`fattree:k=4,n=3,w=2`: with horizontal links of width 2),
//! `leafspine:l=36,s=18,p=18`, `torus:k=4,n=2,p=1`, `mesh:k=4,n=2,p=2`, `file:PATH`.

pub mod cube;
pub mod dragonfly;
pub mod fattree;
pub mod file;
pub mod leafspine;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::Serialize;

use crate::addressing::Location;

/// Index of a switch in [`Fabric::switches`].
pub type SwitchId = usize;
/// Index of a host in [`Fabric::hosts`].
pub type HostId = usize;
/// An OpenFlow port number.
pub type PortNo = u32;

/// What a port is for; the planner picks candidates and lossless phases by role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum PortRole {
    /// Towards a host.
    Host,
    /// Dragonfly: to another switch of the same group.
    Local,
    /// Dragonfly: to another group.
    Global,
    /// Fat-tree: towards the roots.
    Up,
    /// Fat-tree: towards the leaves.
    Down,
    /// Extended fat-tree: to a switch of the same level standing for the same ideal node.
    Horizontal,
    /// A switch-to-switch link of a file fabric (no structure known).
    Fabric,
}

impl PortRole {
    /// The role's name in exports, rates and metrics (`host`, `local`, `global`, `up`, `down`,
    /// `fabric`): the one vocabulary the harness and the telemetry share.
    pub fn name(self) -> &'static str {
        match self {
            PortRole::Host => "host",
            PortRole::Local => "local",
            PortRole::Global => "global",
            PortRole::Up => "up",
            PortRole::Down => "down",
            PortRole::Horizontal => "horizontal",
            PortRole::Fabric => "fabric",
        }
    }

    /// Whether the port leads to another switch.
    pub fn is_fabric(self) -> bool {
        self != PortRole::Host
    }
}

/// What is on the other side of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Peer {
    /// A host.
    Host(HostId),
    /// A port of another switch.
    Switch { switch: SwitchId, port: PortNo },
}

/// One used port of a switch (unused ports are not modelled).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Port {
    pub no: PortNo,
    pub role: PortRole,
    pub peer: Peer,
}

/// One switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Switch {
    pub dpid: u64,
    pub name: String,
    /// Group (Dragonfly) or pod (fat-tree) whose addresses the switch's hosts carry; `None` for
    /// switches outside every group (fat-tree roots).
    pub group: Option<u16>,
    /// Index inside the group: the `SS` byte of its hosts' MACs.
    pub index: u8,
    /// Fat-tree level (0 = leaf); 0 elsewhere.
    pub level: u8,
    /// Used ports, sorted by number.
    pub ports: Vec<Port>,
}

impl Switch {
    /// The port numbered `no`, if used.
    pub fn port(&self, no: PortNo) -> Option<&Port> {
        self.ports
            .binary_search_by_key(&no, |p| p.no)
            .ok()
            .and_then(|i| self.ports.get(i))
    }
    /// Ports leading to hosts.
    pub fn host_ports(&self) -> impl Iterator<Item = &Port> + '_ {
        self.ports.iter().filter(|p| p.role == PortRole::Host)
    }
    /// Ports leading to other switches.
    pub fn fabric_ports(&self) -> impl Iterator<Item = &Port> + '_ {
        self.ports.iter().filter(|p| p.role.is_fabric())
    }
    /// Whether any host is attached.
    pub fn has_hosts(&self) -> bool {
        self.host_ports().next().is_some()
    }
}

/// One host: a port of a switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Host {
    pub name: String,
    pub switch: SwitchId,
    pub port: PortNo,
    pub location: Location,
}

/// One end of a switch-to-switch link in the model, by switch index; the runtime names a port by
/// datapath id instead ([`crate::desired::Endpoint`]), hence a name of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct LinkEnd {
    pub switch: SwitchId,
    pub port: PortNo,
}

/// A switch-to-switch link, stored with its smaller end first so that a link has one spelling
/// whichever side names it. The runtime's name for it is [`crate::desired::LinkId`] (by dpid).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Link {
    a: LinkEnd,
    b: LinkEnd,
}

impl Link {
    /// The link between two endpoints (order does not matter).
    pub fn new(x: LinkEnd, y: LinkEnd) -> Link {
        if x <= y {
            Link { a: x, b: y }
        } else {
            Link { a: y, b: x }
        }
    }
    /// The smaller endpoint.
    pub fn a(&self) -> LinkEnd {
        self.a
    }
    /// The larger endpoint.
    pub fn b(&self) -> LinkEnd {
        self.b
    }
}

/// Which generator built the fabric; routing uses the structure when it knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FabricKind {
    Dragonfly {
        p: u32,
        a: u32,
        h: u32,
    },
    FatTree {
        k: u32,
        n: u32,
        /// Horizontal width (0: the plain tree; not exported then).
        #[serde(skip_serializing_if = "is_zero")]
        w: u32,
    },
    LeafSpine {
        leaves: u32,
        spines: u32,
        hosts: u32,
    },
    /// k-ary n-cube with wrap-around links, p hosts per switch ([`cube`]).
    Torus {
        k: u32,
        n: u32,
        p: u32,
    },
    /// k-ary n-cube without wrap-around links ([`cube`]).
    Mesh {
        k: u32,
        n: u32,
        p: u32,
    },
    File,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// Errors describing a fabric: each names the offending item.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error("invalid topology spec {spec:?}: {reason}; expected dragonfly:p=P,a=A,h=H, fattree:k=K,n=N[,w=W], leafspine:l=L,s=S,p=P, torus:k=K,n=N[,p=P], mesh:k=K,n=N[,p=P] or file:PATH")]
    Spec { spec: String, reason: String },
    #[error("{topology} parameter {name}={value} out of range: {reason}")]
    ParamOutOfRange {
        topology: &'static str,
        name: &'static str,
        value: u64,
        reason: String,
    },
    #[error("cannot read fabric file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("fabric file: {0}")]
    Yaml(String),
    #[error("fabric has no switches")]
    NoSwitches,
    #[error("switch {name:?}: dpid {dpid:#018x} already used by switch {other:?}")]
    DuplicateDpid {
        name: String,
        dpid: u64,
        other: String,
    },
    #[error("switch name {0:?} used twice")]
    DuplicateSwitchName(String),
    #[error("host name {0:?} used twice")]
    DuplicateHostName(String),
    #[error("{context}: unknown switch {name:?}")]
    UnknownSwitch { context: String, name: String },
    #[error("{context}: switch {switch:?} has no port {port} (it declares ports 1..={ports})")]
    UnknownPort {
        context: String,
        switch: String,
        port: PortNo,
        ports: PortNo,
    },
    #[error("{context}: invalid port {port} on switch {switch:?}: {reason}")]
    InvalidPort {
        context: String,
        switch: String,
        port: PortNo,
        reason: String,
    },
    #[error("{context}: malformed endpoint {text:?}, expected SWITCH:PORT")]
    MalformedEndpoint { context: String, text: String },
    #[error("{context}: self link on switch {switch:?}")]
    SelfLink { context: String, switch: String },
    #[error("{context}: port {port} of switch {switch:?} is already used by {first}")]
    PortUsedTwice {
        context: String,
        switch: String,
        port: PortNo,
        first: String,
    },
    #[error("switch {switch:?}: index {index} in group {group} already used by switch {other:?}")]
    DuplicateIndex {
        switch: String,
        group: u16,
        index: u8,
        other: String,
    },
    #[error("group {group} has {count} switches; the address plan allows at most 256 per group")]
    GroupTooLarge { group: u16, count: usize },
    #[error("fabric is disconnected: switch {switch:?} cannot be reached from switch {from:?}")]
    Disconnected { switch: String, from: String },
}

/// A fabric: switches, hosts and the indexes the planner needs.
#[derive(Debug, Clone, Serialize)]
pub struct Fabric {
    kind: FabricKind,
    switches: Vec<Switch>,
    hosts: Vec<Host>,
    #[serde(skip)]
    by_dpid: BTreeMap<u64, SwitchId>,
    #[serde(skip)]
    by_name: HashMap<String, SwitchId>,
    /// Host-bearing switches per group, in switch-index order: the destinations of the plan.
    #[serde(skip)]
    edge_groups: BTreeMap<u16, Vec<SwitchId>>,
    #[serde(skip)]
    by_mac: HashMap<fabricflow_proto::MacAddr, HostId>,
}

impl Fabric {
    /// Which generator built it.
    pub fn kind(&self) -> FabricKind {
        self.kind
    }
    /// All switches, indexed by [`SwitchId`].
    pub fn switches(&self) -> &[Switch] {
        &self.switches
    }
    /// One switch.
    pub fn switch(&self, id: SwitchId) -> Option<&Switch> {
        self.switches.get(id)
    }
    /// All hosts, indexed by [`HostId`].
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }
    /// One host.
    pub fn host(&self, id: HostId) -> Option<&Host> {
        self.hosts.get(id)
    }
    /// The switch with this datapath id.
    pub fn switch_by_dpid(&self, dpid: u64) -> Option<SwitchId> {
        self.by_dpid.get(&dpid).copied()
    }
    /// The switch with this name.
    pub fn switch_by_name(&self, name: &str) -> Option<SwitchId> {
        self.by_name.get(name).copied()
    }
    /// The host owning a MAC address.
    pub fn host_by_mac(&self, mac: fabricflow_proto::MacAddr) -> Option<HostId> {
        self.by_mac.get(&mac).copied()
    }
    /// Host-bearing switches per group (the plan's destinations), deterministic order.
    pub fn edge_groups(&self) -> &BTreeMap<u16, Vec<SwitchId>> {
        &self.edge_groups
    }
    /// The peer of a switch port.
    pub fn peer(&self, sw: SwitchId, port: PortNo) -> Option<Peer> {
        self.switches
            .get(sw)
            .and_then(|s| s.port(port))
            .map(|p| p.peer)
    }
    /// Every switch-to-switch link once, sorted.
    pub fn links(&self) -> Vec<Link> {
        let mut out = Vec::new();
        for (id, sw) in self.switches.iter().enumerate() {
            for p in &sw.ports {
                if let Peer::Switch { switch, port } = p.peer {
                    let here = LinkEnd {
                        switch: id,
                        port: p.no,
                    };
                    let there = LinkEnd { switch, port };
                    if here < there {
                        out.push(Link::new(here, there));
                    }
                }
            }
        }
        out
    }
    /// A switch's fabric ports whose link is not in `failed`, each with the switch at its far
    /// end, by port: the live adjacency every route computation walks.
    pub fn live_peers<'a>(
        &'a self,
        sw: SwitchId,
        failed: &'a BTreeSet<Link>,
    ) -> impl Iterator<Item = (&'a Port, SwitchId)> + 'a {
        self.switches
            .get(sw)
            .into_iter()
            .flat_map(|s| s.ports.iter())
            .filter_map(move |p| match p.peer {
                Peer::Switch { switch, port } => {
                    let l = Link::new(
                        LinkEnd {
                            switch: sw,
                            port: p.no,
                        },
                        LinkEnd { switch, port },
                    );
                    (!failed.contains(&l)).then_some((p, switch))
                }
                Peer::Host(_) => None,
            })
    }
    /// The link on a switch port, if it is a fabric port.
    pub fn link_at(&self, sw: SwitchId, port: PortNo) -> Option<Link> {
        match self.peer(sw, port)? {
            Peer::Switch {
                switch,
                port: peer_port,
            } => Some(Link::new(
                LinkEnd { switch: sw, port },
                LinkEnd {
                    switch,
                    port: peer_port,
                },
            )),
            Peer::Host(_) => None,
        }
    }
    /// Whether the switches are connected when `failed` links are removed; returns the connected
    /// component of each switch (component ids are the smallest switch id in it).
    pub fn components(&self, failed: &BTreeSet<Link>) -> Vec<SwitchId> {
        let n = self.switches.len();
        let mut comp = vec![usize::MAX; n];
        for start in 0..n {
            if comp.get(start) != Some(&usize::MAX) {
                continue;
            }
            let mut stack = vec![start];
            if let Some(c) = comp.get_mut(start) {
                *c = start;
            }
            while let Some(x) = stack.pop() {
                for (_, switch) in self.live_peers(x, failed) {
                    if let Some(c) = comp.get_mut(switch) {
                        if *c == usize::MAX {
                            *c = start;
                            stack.push(switch);
                        }
                    }
                }
            }
        }
        comp
    }
}

/// A description of a switch for [`FabricBuilder::add_switch`].
#[derive(Debug, Clone)]
pub struct SwitchSpec {
    pub dpid: u64,
    pub name: String,
    pub group: Option<u16>,
    pub index: u8,
    pub level: u8,
    /// Highest usable port number (`None`: any port up to OpenFlow's OFPP_MAX).
    pub max_port: Option<PortNo>,
}

/// Highest physical port number OpenFlow 1.3 allows (OFPP_MAX).
pub const OFPP_MAX: PortNo = 0xffff_ff00;

/// Builds a [`Fabric`], checking every invariant as items are added.
#[derive(Debug)]
pub struct FabricBuilder {
    kind: FabricKind,
    specs: Vec<SwitchSpec>,
    ports: Vec<BTreeMap<PortNo, (Port, String)>>,
    hosts: Vec<Host>,
    by_dpid: BTreeMap<u64, SwitchId>,
    by_name: HashMap<String, SwitchId>,
    host_names: BTreeSet<String>,
}

impl FabricBuilder {
    /// An empty fabric of the given kind.
    pub fn new(kind: FabricKind) -> Self {
        FabricBuilder {
            kind,
            specs: Vec::new(),
            ports: Vec::new(),
            hosts: Vec::new(),
            by_dpid: BTreeMap::new(),
            by_name: HashMap::new(),
            host_names: BTreeSet::new(),
        }
    }

    /// Adds a switch; fails on a duplicate dpid or name.
    pub fn add_switch(&mut self, spec: SwitchSpec) -> Result<SwitchId, TopologyError> {
        if let Some(&other) = self.by_dpid.get(&spec.dpid) {
            return Err(TopologyError::DuplicateDpid {
                name: spec.name,
                dpid: spec.dpid,
                other: self.name(other),
            });
        }
        if self.by_name.contains_key(&spec.name) {
            return Err(TopologyError::DuplicateSwitchName(spec.name));
        }
        let id = self.specs.len();
        self.by_dpid.insert(spec.dpid, id);
        self.by_name.insert(spec.name.clone(), id);
        self.specs.push(spec);
        self.ports.push(BTreeMap::new());
        Ok(id)
    }

    /// The switch named `name`.
    pub fn switch_by_name(&self, name: &str) -> Option<SwitchId> {
        self.by_name.get(name).copied()
    }

    fn name(&self, id: SwitchId) -> String {
        self.specs
            .get(id)
            .map(|s| s.name.clone())
            .unwrap_or_default()
    }

    fn claim(
        &mut self,
        context: &str,
        sw: SwitchId,
        port: PortNo,
        value: Port,
    ) -> Result<(), TopologyError> {
        let name = self.name(sw);
        let max = self.specs.get(sw).and_then(|s| s.max_port);
        if port == 0 || port > OFPP_MAX {
            return Err(TopologyError::InvalidPort {
                context: context.to_owned(),
                switch: name,
                port,
                reason: format!("OpenFlow ports are 1..={OFPP_MAX}"),
            });
        }
        if let Some(max) = max {
            if port > max {
                return Err(TopologyError::UnknownPort {
                    context: context.to_owned(),
                    switch: name,
                    port,
                    ports: max,
                });
            }
        }
        let Some(map) = self.ports.get_mut(sw) else {
            return Err(TopologyError::UnknownSwitch {
                context: context.to_owned(),
                name,
            });
        };
        if let Some((_, first)) = map.get(&port) {
            return Err(TopologyError::PortUsedTwice {
                context: context.to_owned(),
                switch: name,
                port,
                first: first.clone(),
            });
        }
        map.insert(port, (value, context.to_owned()));
        Ok(())
    }

    /// Joins `(sa, pa)` and `(sb, pb)`; `context` names the link in errors.
    #[allow(clippy::too_many_arguments)]
    pub fn connect(
        &mut self,
        context: &str,
        sa: SwitchId,
        pa: PortNo,
        role_a: PortRole,
        sb: SwitchId,
        pb: PortNo,
        role_b: PortRole,
    ) -> Result<(), TopologyError> {
        if sa == sb {
            return Err(TopologyError::SelfLink {
                context: context.to_owned(),
                switch: self.name(sa),
            });
        }
        // Check both ends before claiming either, so a failed call leaves the builder unchanged.
        for (sw, port) in [(sa, pa), (sb, pb)] {
            if let Some((_, first)) = self.ports.get(sw).and_then(|m| m.get(&port)) {
                return Err(TopologyError::PortUsedTwice {
                    context: context.to_owned(),
                    switch: self.name(sw),
                    port,
                    first: first.clone(),
                });
            }
        }
        self.claim(
            context,
            sa,
            pa,
            Port {
                no: pa,
                role: role_a,
                peer: Peer::Switch {
                    switch: sb,
                    port: pb,
                },
            },
        )?;
        self.claim(
            context,
            sb,
            pb,
            Port {
                no: pb,
                role: role_b,
                peer: Peer::Switch {
                    switch: sa,
                    port: pa,
                },
            },
        )
    }

    /// Attaches a host to `(sw, port)`; the port must be 1..=255 (the MAC's `HH` byte).
    pub fn add_host(
        &mut self,
        name: String,
        sw: SwitchId,
        port: PortNo,
    ) -> Result<HostId, TopologyError> {
        let context = format!("host {name:?}");
        let spec = self
            .specs
            .get(sw)
            .ok_or_else(|| TopologyError::UnknownSwitch {
                context: context.clone(),
                name: sw.to_string(),
            })?;
        let (Some(group), index) = (spec.group, spec.index) else {
            return Err(TopologyError::InvalidPort {
                context,
                switch: spec.name.clone(),
                port,
                reason: "switch belongs to no group, so it cannot carry hosts".into(),
            });
        };
        let Ok(hh) = u8::try_from(port) else {
            return Err(TopologyError::InvalidPort {
                context,
                switch: spec.name.clone(),
                port,
                reason: "host ports must be 1..=255 (the MAC's host byte)".into(),
            });
        };
        if self.host_names.contains(&name) {
            return Err(TopologyError::DuplicateHostName(name));
        }
        let id = self.hosts.len();
        self.claim(
            &context,
            sw,
            port,
            Port {
                no: port,
                role: PortRole::Host,
                peer: Peer::Host(id),
            },
        )?;
        self.host_names.insert(name.clone());
        self.hosts.push(Host {
            name,
            switch: sw,
            port,
            location: Location {
                group,
                switch: index,
                port: hh,
            },
        });
        Ok(id)
    }

    /// Checks group sizes, index uniqueness and connectivity, and builds the indexes.
    pub fn finish(self) -> Result<Fabric, TopologyError> {
        if self.specs.is_empty() {
            return Err(TopologyError::NoSwitches);
        }
        let mut group_count: BTreeMap<u16, usize> = BTreeMap::new();
        for s in &self.specs {
            if let Some(g) = s.group {
                *group_count.entry(g).or_default() += 1;
            }
        }
        if let Some((&group, &count)) = group_count.iter().find(|(_, &c)| c > 256) {
            return Err(TopologyError::GroupTooLarge { group, count });
        }
        let switches: Vec<Switch> = self
            .specs
            .into_iter()
            .zip(self.ports)
            .map(|(s, ports)| Switch {
                dpid: s.dpid,
                name: s.name,
                group: s.group,
                index: s.index,
                level: s.level,
                ports: ports.into_values().map(|(p, _)| p).collect(),
            })
            .collect();
        let mut edge_groups: BTreeMap<u16, Vec<SwitchId>> = BTreeMap::new();
        for (id, s) in switches.iter().enumerate() {
            if let (Some(g), true) = (s.group, s.has_hosts()) {
                edge_groups.entry(g).or_default().push(id);
            }
        }
        for members in edge_groups.values_mut() {
            members.sort_by_key(|&id| switches.get(id).map(|s| s.index));
        }
        let by_mac = self
            .hosts
            .iter()
            .enumerate()
            .map(|(i, h)| (h.location.mac(), i))
            .collect();
        let fabric = Fabric {
            kind: self.kind,
            switches,
            hosts: self.hosts,
            by_dpid: self.by_dpid,
            by_name: self.by_name,
            edge_groups,
            by_mac,
        };
        let comp = fabric.components(&BTreeSet::new());
        if let Some(lost) = comp.iter().position(|&c| c != 0) {
            let name = |i: usize| {
                fabric
                    .switches
                    .get(i)
                    .map(|s| s.name.clone())
                    .unwrap_or_default()
            };
            return Err(TopologyError::Disconnected {
                switch: name(lost),
                from: name(0),
            });
        }
        Ok(fabric)
    }
}

/// The one spelling of a topology shared by every tool: `dragonfly:p=2,a=4,h=2`,
/// `fattree:k=4,n=3`, `file:PATH`. A fat-tree's `w` is its horizontal width (0, the default and
/// not printed, for the plain tree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopologySpec {
    Dragonfly {
        p: u32,
        a: u32,
        h: u32,
    },
    FatTree {
        k: u32,
        n: u32,
        w: u32,
    },
    /// `leafspine:l=L,s=S,p=P` ([`leafspine`]).
    LeafSpine {
        l: u32,
        s: u32,
        p: u32,
    },
    /// `torus:k=K,n=N,p=P` (p optional, default 1).
    Torus {
        k: u32,
        n: u32,
        p: u32,
    },
    /// `mesh:k=K,n=N,p=P` (p optional, default 1).
    Mesh {
        k: u32,
        n: u32,
        p: u32,
    },
    File(PathBuf),
}

impl TopologySpec {
    /// Builds the fabric this spec names.
    pub fn build(&self) -> Result<Fabric, TopologyError> {
        match self {
            TopologySpec::Dragonfly { p, a, h } => dragonfly::build(*p, *a, *h),
            TopologySpec::FatTree { k, n, w } => fattree::build_extended(*k, *n, *w),
            TopologySpec::LeafSpine { l, s, p } => leafspine::build(*l, *s, *p),
            TopologySpec::Torus { k, n, p } => cube::build(*k, *n, *p, true),
            TopologySpec::Mesh { k, n, p } => cube::build(*k, *n, *p, false),
            TopologySpec::File(path) => file::load(path),
        }
    }
}

impl fmt::Display for TopologySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologySpec::Dragonfly { p, a, h } => write!(f, "dragonfly:p={p},a={a},h={h}"),
            TopologySpec::FatTree { k, n, w: 0 } => write!(f, "fattree:k={k},n={n}"),
            TopologySpec::FatTree { k, n, w } => write!(f, "fattree:k={k},n={n},w={w}"),
            TopologySpec::LeafSpine { l, s, p } => write!(f, "leafspine:l={l},s={s},p={p}"),
            TopologySpec::Torus { k, n, p } => write!(f, "torus:k={k},n={n},p={p}"),
            TopologySpec::Mesh { k, n, p } => write!(f, "mesh:k={k},n={n},p={p}"),
            TopologySpec::File(path) => write!(f, "file:{}", path.display()),
        }
    }
}

impl FromStr for TopologySpec {
    type Err = TopologyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason: &str| TopologyError::Spec {
            spec: s.to_owned(),
            reason: reason.to_owned(),
        };
        let (kind, rest) = s.split_once(':').ok_or_else(|| bad("missing ':'"))?;
        if kind == "file" {
            if rest.is_empty() {
                return Err(bad("empty path"));
            }
            return Ok(TopologySpec::File(PathBuf::from(rest)));
        }
        let names: &[&str] = match kind {
            "dragonfly" => &["p", "a", "h"],
            "fattree" => &["k", "n", "w"],
            "leafspine" => &["l", "s", "p"],
            "torus" | "mesh" => &["k", "n", "p"],
            _ => return Err(bad(&format!("unknown topology kind {kind:?}"))),
        };
        let mut values: BTreeMap<&str, u32> = BTreeMap::new();
        for part in rest.split(',') {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| bad(&format!("{part:?} is not NAME=VALUE")))?;
            let name = name.trim();
            if !names.contains(&name) {
                return Err(bad(&format!("unknown parameter {name:?} for {kind}")));
            }
            let v: u32 = value
                .trim()
                .parse()
                .map_err(|_| bad(&format!("{name}={value:?} is not a number")))?;
            if values.insert(name, v).is_some() {
                return Err(bad(&format!("parameter {name} given twice")));
            }
        }
        let get = |n: &str| {
            values
                .get(n)
                .copied()
                .ok_or_else(|| bad(&format!("missing {n}")))
        };
        match kind {
            "torus" | "mesh" => {
                let (k, n, p) = (get("k")?, get("n")?, values.get("p").copied().unwrap_or(1));
                Ok(if kind == "torus" {
                    TopologySpec::Torus { k, n, p }
                } else {
                    TopologySpec::Mesh { k, n, p }
                })
            }
            "dragonfly" => Ok(TopologySpec::Dragonfly {
                p: get("p")?,
                a: get("a")?,
                h: get("h")?,
            }),
            "leafspine" => Ok(TopologySpec::LeafSpine {
                l: get("l")?,
                s: get("s")?,
                p: get("p")?,
            }),
            _ => Ok(TopologySpec::FatTree {
                k: get("k")?,
                n: get("n")?,
                w: values.get("w").copied().unwrap_or(0),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_roundtrip() {
        for s in [
            "dragonfly:p=2,a=4,h=2",
            "fattree:k=4,n=3",
            "fattree:k=4,n=3,w=2",
            "leafspine:l=36,s=18,p=18",
            "torus:k=4,n=2,p=1",
            "mesh:k=4,n=2,p=2",
            "file:/tmp/x.yaml",
        ] {
            let spec: TopologySpec = s.parse().unwrap();
            assert_eq!(spec.to_string(), s);
        }
        let spec: TopologySpec = "dragonfly:h=1,a=2,p=1".parse().unwrap();
        assert_eq!(spec, TopologySpec::Dragonfly { p: 1, a: 2, h: 1 });
        let spec: TopologySpec = "torus:k=8,n=2".parse().unwrap();
        assert_eq!(spec, TopologySpec::Torus { k: 8, n: 2, p: 1 });
        for bad in [
            "dragonfly",
            "dragonfly:p=2,a=4",
            "dragonfly:p=2,a=4,h=x",
            "dragonfly:p=2,a=4,h=2,q=1",
            "dragonfly:p=2,p=2,a=4,h=2",
            "torus:k=2",
            "torus:n=2",
            "mesh:k=4,n=2,q=1",
            "file:",
            "fattree:k=4;n=3",
        ] {
            assert!(bad.parse::<TopologySpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn live_peers_are_the_fabric_ports_minus_the_failed_links() {
        let fabric = dragonfly::build(2, 4, 2).unwrap();
        for (x, sw) in fabric.switches().iter().enumerate() {
            let live: Vec<_> = fabric
                .live_peers(x, &BTreeSet::new())
                .map(|(p, s)| (p.no, s))
                .collect();
            let all: Vec<_> = sw
                .fabric_ports()
                .filter_map(|p| match p.peer {
                    Peer::Switch { switch, .. } => Some((p.no, switch)),
                    Peer::Host(_) => None,
                })
                .collect();
            assert_eq!(live, all, "switch {x}");
        }
        // Failing one link removes it from both ends, and nothing else.
        let link = *fabric.links().first().unwrap();
        let failed = BTreeSet::from([link]);
        for end in [link.a(), link.b()] {
            let before = fabric.live_peers(end.switch, &BTreeSet::new()).count();
            let after: Vec<_> = fabric
                .live_peers(end.switch, &failed)
                .map(|(p, _)| p.no)
                .collect();
            assert_eq!(after.len() + 1, before);
            assert!(!after.contains(&end.port));
        }
        assert!(fabric
            .live_peers(fabric.switches().len(), &failed)
            .next()
            .is_none());
    }
}
