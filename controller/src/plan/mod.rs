//! The rule plan: per switch, the flows and SELECT groups of DESIGN §4.
//!
//! **Table 0, classify** (priorities in [`priority`]):
//! - CNM (EtherType 0x22E7) from a fabric port → Nicira `controller(id=AGENT)`; from a host port
//!   → drop (the flow's counters count them: a host must not steer the fabric). With
//!   [`PlanOptions::cnm_to_hosts`] (the InfiniBand CC baseline, BECN to the source adapter) a CNM
//!   from a fabric port goes to table 2 instead: the fabric forwards it by its destination MAC —
//!   the culprit's source host — like data, and the host's edge switch delivers it out of the
//!   host's port, where the host's throttler (`fabricflow-agent throttle`) reacts. With
//!   [`CnmToAgent::Interface`] a CNM from a fabric port is dropped: the agent reads it from the
//!   port's interface, and the switch's forwarding thread does no upcall for it.
//! - LLDP → `output:CONTROLLER` (controller id 0, so the agent's connection does not get it).
//! - ARP requests from a host for an address in the fabric's /8 → an **edge responder** that
//!   turns the request into the reply and sends it back out of `IN_PORT`. Because the low 24
//!   bits of a host's IPv4 address equal the low 24 bits of its MAC ([`crate::addressing`]),
//!   the answer MAC is `02:00:00` followed by the requested IP's low 24 bits: one Nicira `move`
//!   computes it, so the responder is one rule per host port, independent of the fabric's size
//!   (per-IP `set_field` rules would need hosts × switches rules: 34 million for Dragonfly
//!   (8,16,8)). Any other ARP from a host is dropped: ARP never floods through the fabric.
//!   Requests for unassigned addresses in the /8 get a synthetic answer; the frames sent to it
//!   are dropped by a table miss at the destination group.
//! - Host ports → table 1, fabric ports → table 2, `in_port=CONTROLLER` (frames the agent
//!   injects with PACKET_OUT, e.g. CNMs) → table 2 so the fabric routes them.
//! - Lossless mode: host ports push an 802.1Q tag (PCP 0); arrivals on a *phase port* (Dragonfly:
//!   global ports) increment the PCP (PCP 7 arrivals are dropped, so a route needing more than
//!   eight phases shows up as a drop, not as a silent deadlock risk). Host delivery pops the tag.
//!
//! **Table 1, inject** (switches with hosts) and **table 2, transit**, per destination with
//! masked `eth_dst` on the hierarchical MAC: a whole other group in one rule when every
//! destination switch of it takes the same action (`/32`), otherwise per switch (`/40`), and the
//! switch's own hosts exactly (`/48`). The own group is never aggregated, so an address with no
//! host misses and is dropped instead of bouncing. Table 1 sends other-group destinations to the
//! SELECT group of their minimal port; everything else goes to the minimal port.
//!
//! **Decision points:** one SELECT group per minimal port m, id = `group_base + m` (equal-cost:
//! below); bucket 0 is m,
//! then the candidates, then the weight-1 padding bucket to m (weights from
//! [`fabricflow_proto::select_weights::weights`]); each bucket watches its output port. The
//! candidates of m are (1) ports that are minimal too for every destination using m (fat-tree up
//! ports, file-fabric ECMP), then (2) in a Dragonfly the switch's other live global ports, and (3)
//! if (1) and (2) are empty (h = 1, the switch owns the link to the destination group) the live
//! local ports towards switches that have a live global port. A decision point whose candidates
//! are all of kind (1) is *equal-cost*: id `group_base + EQUAL_COST_GROUP_OFFSET + m`, initial
//! weights an even split, and the agent weighs each bucket by its own port's P.
//!
//! **Diversion by arrival port:** a neighbour y receiving such a diverted packet from x would
//! route it straight back to x. Wherever y's minimal port for a destination is the port it came
//! in on from a switch that uses y as a candidate, table 2 of y gets a higher-priority rule
//! matching `in_port` + destination that sends it on another minimal port if one exists, else out
//! of one of y's own global ports. Minimal forwarding never sends a packet both x→y and y→x
//! (route costs strictly decrease), so these rules never catch minimal traffic; from the next
//! group on the packet is routed minimally, so it crosses exactly two global links.
//!
//! **No U-turns:** OpenFlow drops an output to the arrival port, so a packet must never reach a
//! switch that routes it straight back. Minimal forwarding cannot; only the first hop after a
//! non-minimal one can, and only around failed links (the intermediate group now reaches the
//! destination through the group the packet came from). So a global candidate whose peer would
//! send it back, or a detour global port whose peer would, is never chosen; a candidate that
//! cannot move on for every destination of its decision point is left out of the group.
//!
//! **Multipath (DRB, [`PlanOptions::multipath`]):** instead of decision points, every switch
//! with hosts gets, per remote destination host whose switch has alternative paths, a SELECT
//! group (id `PATH_GROUP_BASE` + host index) whose bucket i sends the packet on path i of the
//! pair ([`paths`]): bucket 0 the untagged minimal route, bucket i ≥ 1 writes the path-tagged
//! destination MAC and outputs to the path's first hop, then a weight-1 padding bucket to the
//! minimal route. Table 1 sends each such host (exact MAC) to its group; table 2 holds one rule
//! per alternative passing through the switch (tagged `/40`) and, at the destination, a rule per
//! host that matches any tag and writes the host's own MAC back before delivery. Initial weights
//! put every flow on path 0; the agent's DRB policy opens the others.

pub mod ir;
pub mod paths;

use std::collections::{BTreeMap, BTreeSet};

use fabricflow_proto::select_weights;
use fabricflow_proto::MacAddr;
use serde::Serialize;

pub use ir::*;

use crate::addressing::{self, AddressError, Addressing, Location};
use crate::routes::Routes;
use crate::topology::{Fabric, FabricKind, Link, Peer, PortNo, PortRole, SwitchId};

pub use fabricflow_proto::conventions::table::{
    CLASSIFY as TABLE_CLASSIFY, INJECT as TABLE_INJECT, TRANSIT as TABLE_TRANSIT,
};
pub use fabricflow_proto::ethernet::ethertype;

/// Flow priorities.
pub mod priority {
    pub const CNM: u16 = 400;
    pub const LLDP: u16 = 400;
    pub const ARP_RESPONDER: u16 = 300;
    pub const ARP_DROP: u16 = 290;
    pub const LOSSLESS_PHASE: u16 = 200;
    pub const DISPATCH: u16 = 100;
    /// Destination rules: base + mask length in bits (32 group, 40 switch, 48 host), so the
    /// more specific rule always wins.
    pub const FORWARD_BASE: u16 = 1000;
    /// Diversion-by-arrival-port rules: above every destination rule.
    pub const DIVERT_BASE: u16 = 2000;
    /// Multipath transit rules (tagged switch prefix, `/40` of the tagged MAC).
    pub const PATH_TRANSIT: u16 = FORWARD_BASE + 44;
    /// Multipath egress: a host's address with any tag, written back untagged.
    pub const PATH_EGRESS: u16 = FORWARD_BASE + 47;
}

pub use fabricflow_proto::conventions::{
    AGENT_CONTROLLER_ID as DEFAULT_AGENT_CONTROLLER_ID, DECISION_GROUP_BASE as DEFAULT_GROUP_BASE,
    PLAN_COOKIE as DEFAULT_COOKIE,
};
pub use fabricflow_proto::conventions::{
    EQUAL_COST_GROUP_OFFSET, PATH_GROUP_BASE, PATH_GROUP_SPAN,
};

/// Lossless (PFC) option: PCP by hop phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Lossless {
    /// VLAN id of the tag pushed at injection (1..=4094).
    pub vlan_vid: u16,
}

/// What to plan.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub cookie: u64,
    pub group_base: u32,
    /// Initial probability (percent) of routing minimally, for the initial bucket weights.
    pub p_minimal_percent: f64,
    pub agent_controller_id: u16,
    pub addressing: Addressing,
    /// Install the edge ARP responder (needs every group < 256, see [`crate::addressing`]).
    pub arp_responder: bool,
    pub lossless: Option<Lossless>,
    /// Links to plan around.
    pub failed: BTreeSet<Link>,
    /// Path-tagged multipath rules for DRB instead of decision points (`None`: off).
    pub multipath: Option<paths::Multipath>,
    /// CNMs from fabric ports are forwarded to the culprit's host (table 2) instead of the
    /// agent: the hosts are the reaction points (InfiniBand CC baseline).
    pub cnm_to_hosts: bool,
    /// How a CNM from a fabric port reaches the switch's agent (without `cnm_to_hosts`).
    pub cnm_to_agent: CnmToAgent,
    /// How a decision point's SELECT group carries its split on the switch.
    pub select_layout: SelectLayout,
}

/// How a decision point's SELECT group carries its split on the switch. The plan's groups are
/// always logical (minimal, candidates, padding, weights summing to 256); the layout is applied
/// when they become GROUP_MODs ([`crate::planner::group_mod`]).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum SelectLayout {
    /// One bucket per choice, the split in the bucket weights. A switch that rebuilds its hash
    /// table from the weights may move flows no weight change asked to move (Open vSwitch
    /// does: [`fabricflow_proto::select_slots`]).
    Weights,
    /// The choices as weight-0 catalog buckets, then 256 weight-1 slot buckets each copying
    /// one: the agent moves slots, and a write moves only the flows of the slots it reassigns.
    #[default]
    Slots,
}

/// How the classify table hands a CNM arriving on a fabric port to the switch's agent.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum CnmToAgent {
    /// A packet-in to the agent's connection (Nicira `controller(id=AGENT)`): any switch.
    #[default]
    PacketIn,
    /// Dropped at classify: the agent reads it from the port's Linux interface (a packet socket
    /// for EtherType 0x22E7). For switches whose ports are local interfaces (Open vSwitch), where
    /// a packet-in costs an upcall in the thread that forwards every packet.
    Interface,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            cookie: DEFAULT_COOKIE,
            group_base: DEFAULT_GROUP_BASE,
            p_minimal_percent: 100.0,
            agent_controller_id: DEFAULT_AGENT_CONTROLLER_ID,
            addressing: Addressing::default(),
            arp_responder: true,
            lossless: None,
            failed: BTreeSet::new(),
            multipath: None,
            cnm_to_hosts: false,
            cnm_to_agent: CnmToAgent::PacketIn,
            select_layout: SelectLayout::default(),
        }
    }
}

/// Why a plan could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("ARP responder: {0} (disable the responder or use fewer groups)")]
    Address(#[from] AddressError),
    #[error(
        "switch {switch:?}: decision point of port {port} has no group id (base {base}; ports \
         of a switch with decision points must be below {EQUAL_COST_GROUP_OFFSET})"
    )]
    GroupIdOverflow {
        switch: String,
        base: u32,
        port: PortNo,
    },
    #[error("lossless VLAN id {0} out of range 1..=4094")]
    VlanId(u16),
    #[error("multipath: {0}")]
    Multipath(#[from] paths::PathError),
}

/// The desired state of one switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SwitchPlan {
    pub dpid: u64,
    pub name: String,
    /// Sorted by table, then priority (highest first), then match.
    pub flows: Vec<Flow>,
    /// Sorted by id.
    pub groups: Vec<Group>,
}

/// The desired state of the whole fabric, indexed by [`SwitchId`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub switches: Vec<SwitchPlan>,
}

impl Plan {
    /// Plans `fabric` (routes computed around `opts.failed`).
    pub fn build(fabric: &Fabric, opts: &PlanOptions) -> Result<Plan, PlanError> {
        let routes = Routes::compute(fabric, &opts.failed);
        Plan::build_with_routes(fabric, &routes, opts)
    }

    /// Plans `fabric` with precomputed routes (which must exclude `opts.failed`).
    pub fn build_with_routes(
        fabric: &Fabric,
        routes: &Routes,
        opts: &PlanOptions,
    ) -> Result<Plan, PlanError> {
        Planner::new(fabric, routes, opts)?.run()
    }

    /// The multipath path sets `opts.multipath` asks for (routes computed around
    /// `opts.failed`), as [`Plan::build`] installs them; `None` when multipath is off.
    pub fn path_plan(
        fabric: &Fabric,
        opts: &PlanOptions,
    ) -> Result<Option<paths::PathPlan>, PlanError> {
        let Some(mp) = &opts.multipath else {
            return Ok(None);
        };
        let routes = Routes::compute(fabric, &opts.failed);
        let planner = Planner::new(fabric, &routes, opts)?;
        let primary = |x: SwitchId, t: SwitchId| planner.primary(x, t);
        Ok(Some(paths::plan_paths(
            fabric,
            &routes,
            &opts.failed,
            mp,
            &primary,
        )?))
    }

    /// The plan of one switch.
    pub fn switch(&self, id: SwitchId) -> Option<&SwitchPlan> {
        self.switches.get(id)
    }

    /// The plan of the switch with this dpid.
    pub fn by_dpid(&self, dpid: u64) -> Option<&SwitchPlan> {
        self.switches.iter().find(|s| s.dpid == dpid)
    }

    /// Total flows and groups.
    pub fn totals(&self) -> (usize, usize) {
        self.switches
            .iter()
            .fold((0, 0), |(f, g), s| (f + s.flows.len(), g + s.groups.len()))
    }
}

/// The action of a destination rule, before it becomes actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Act {
    Output(PortNo),
    Group(u32),
}

/// The non-minimal ports of one decision point (keyed by its minimal port) while the planner
/// works them out; `DecisionPoint` names the installed group (agent/src/weights.rs).
#[derive(Debug, Default)]
struct CandidatePorts {
    /// Equal-cost alternatives common to every destination using this minimal port.
    ecmp: Option<BTreeSet<PortNo>>,
    candidates: Vec<PortNo>,
}

impl CandidatePorts {
    /// Every candidate is minimal too for every destination using the port (fat-tree up ports):
    /// diverting costs no hop, so the group starts as an even split (DESIGN §4).
    fn equal_cost(&self) -> bool {
        !self.candidates.is_empty()
            && self
                .ecmp
                .as_ref()
                .is_some_and(|e| self.candidates.iter().all(|c| e.contains(c)))
    }
}

struct Planner<'a> {
    fabric: &'a Fabric,
    routes: &'a Routes,
    opts: &'a PlanOptions,
    dragonfly: bool,
}

impl<'a> Planner<'a> {
    fn new(
        fabric: &'a Fabric,
        routes: &'a Routes,
        opts: &'a PlanOptions,
    ) -> Result<Self, PlanError> {
        if opts.arp_responder {
            if let Some(g) = fabric.edge_groups().keys().find(|&&g| g > 255) {
                return Err(AddressError::GroupTooLargeForIpv4(*g).into());
            }
        }
        if let Some(l) = opts.lossless {
            if !(1..=4094).contains(&l.vlan_vid) {
                return Err(PlanError::VlanId(l.vlan_vid));
            }
            if opts.multipath.is_some() {
                return Err(paths::PathError::Lossless.into());
            }
        }
        let dragonfly = matches!(fabric.kind(), FabricKind::Dragonfly { .. });
        Ok(Planner {
            fabric,
            routes,
            opts,
            dragonfly,
        })
    }

    fn alive(&self, x: SwitchId, port: PortNo) -> bool {
        !matches!(self.fabric.link_at(x, port), Some(l) if self.opts.failed.contains(&l))
    }

    fn group_of(&self, x: SwitchId) -> Option<u16> {
        self.fabric.switch(x).and_then(|s| s.group)
    }

    fn index_of(&self, x: SwitchId) -> u8 {
        self.fabric.switch(x).map_or(0, |s| s.index)
    }

    /// The port x uses for destination t: one of the equal-cost set, spread by destination group
    /// (other groups) or switch index (own group), so a whole other group shares one action and
    /// aggregates into one rule.
    fn primary(&self, x: SwitchId, t: SwitchId) -> Option<PortNo> {
        let ports = self.routes.minimal(x, t);
        if ports.is_empty() {
            return None;
        }
        let gt = self.group_of(t);
        let key = if gt != self.group_of(x) {
            usize::from(gt.unwrap_or(0))
        } else {
            usize::from(self.index_of(t))
        };
        ports.get(key % ports.len()).copied()
    }

    /// Decision point of minimal port `port`: base + port, or in the range's upper half when
    /// every candidate is minimal too (the agent then weighs every bucket by its own port's P).
    fn group_id(&self, x: SwitchId, port: PortNo, equal_cost: bool) -> Result<u32, PlanError> {
        let offset = if equal_cost {
            EQUAL_COST_GROUP_OFFSET
        } else {
            0
        };
        (port < EQUAL_COST_GROUP_OFFSET)
            .then(|| self.opts.group_base.checked_add(port)?.checked_add(offset))
            .flatten()
            .ok_or_else(|| PlanError::GroupIdOverflow {
                switch: self
                    .fabric
                    .switch(x)
                    .map(|s| s.name.clone())
                    .unwrap_or_default(),
                base: self.opts.group_base,
                port,
            })
    }

    fn ports_with_role(&self, x: SwitchId, role: PortRole) -> Vec<PortNo> {
        self.fabric.switch(x).map_or_else(Vec::new, |s| {
            s.ports
                .iter()
                .filter(|p| p.role == role && self.alive(x, p.no))
                .map(|p| p.no)
                .collect()
        })
    }

    fn peer_switch(&self, x: SwitchId, port: PortNo) -> Option<(SwitchId, PortNo)> {
        match self.fabric.peer(x, port)? {
            Peer::Switch { switch, port } => Some((switch, port)),
            Peer::Host(_) => None,
        }
    }

    /// Whether the switch behind x's port `port` sends a packet for t straight back out of the
    /// port it came in on. Minimal forwarding never does (route costs strictly decrease), so only
    /// a non-minimal hop can lead there: around failed links the peer may reach t through x again.
    /// OpenFlow drops an output to the arrival port (only `IN_PORT` sends back), so such a hop
    /// black-holes every packet taking it.
    fn sends_back(&self, x: SwitchId, port: PortNo, t: SwitchId) -> bool {
        self.peer_switch(x, port)
            .is_some_and(|(y, back)| self.primary(y, t) == Some(back))
    }

    /// Where y sends a packet for t (of group g) that a neighbour's local candidate diverted to
    /// it over y's port `back`, when y's own route would send it back: another minimal port if y
    /// has one, else one of y's global ports whose peer does not send it straight back (spread by
    /// g). `None`: no such port, so that neighbour must not use the candidate for t.
    fn detour(&self, y: SwitchId, back: PortNo, t: SwitchId, g: u16) -> Option<PortNo> {
        if let Some(p) = self
            .routes
            .minimal(y, t)
            .iter()
            .copied()
            .find(|&p| p != back)
        {
            return Some(p);
        }
        let globals: Vec<PortNo> = self
            .ports_with_role(y, PortRole::Global)
            .into_iter()
            .filter(|&p| p != back && !self.sends_back(y, p, t))
            .collect();
        globals.get(usize::from(g) % globals.len().max(1)).copied()
    }

    /// Whether a packet for t (of group g) that x sends out of candidate port `c` moves on from
    /// the next switch: the peer routes it on (from there on minimally, so it never turns back
    /// again), or, for a local candidate whose peer would send it back, the peer's detour does.
    fn moves_on(&self, x: SwitchId, c: PortNo, t: SwitchId, g: u16) -> bool {
        match self.peer_switch(x, c) {
            None => false,
            Some(_) if !self.sends_back(x, c, t) => true,
            Some((y, back)) => {
                let local = self
                    .fabric
                    .switch(x)
                    .and_then(|s| s.port(c))
                    .is_some_and(|p| p.role == PortRole::Local);
                local && self.detour(y, back, t, g).is_some()
            }
        }
    }

    /// Decision points of switch x, minimal port → its candidates (only switches with hosts
    /// inject).
    ///
    /// A candidate's bucket carries every destination whose minimal port is m, so a port is a
    /// candidate only if the packet moves on from the next switch for all of them
    /// ([`Planner::moves_on`]): around failed links a Valiant intermediate group, or a local
    /// detour's global link, may lead straight back to where the packet came from, and the share
    /// of flows the agent's weights gave that bucket would be lost until the link is back.
    /// Dropping a candidate only removes paths, so the remaining ones keep the shapes the phase
    /// rules and the channel-dependency check are built on.
    fn decision_points(&self, x: SwitchId) -> BTreeMap<PortNo, CandidatePorts> {
        let mut dps: BTreeMap<PortNo, CandidatePorts> = BTreeMap::new();
        let Some(sw) = self.fabric.switch(x) else {
            return dps;
        };
        if !sw.has_hosts() {
            return dps;
        }
        // Minimal port → the (group, switch) destinations using it.
        let mut dests: BTreeMap<PortNo, Vec<(u16, SwitchId)>> = BTreeMap::new();
        for (&g, members) in self.fabric.edge_groups() {
            if Some(g) == sw.group {
                continue;
            }
            for &t in members {
                let Some(m) = self.primary(x, t) else {
                    continue;
                };
                let others: BTreeSet<PortNo> = self
                    .routes
                    .minimal(x, t)
                    .iter()
                    .copied()
                    .filter(|&p| p != m)
                    .collect();
                let dp = dps.entry(m).or_default();
                dp.ecmp = Some(match dp.ecmp.take() {
                    None => others,
                    Some(prev) => prev.intersection(&others).copied().collect(),
                });
                dests.entry(m).or_default().push((g, t));
            }
        }
        for (&m, dp) in dps.iter_mut() {
            let ts = dests.get(&m).map(Vec::as_slice).unwrap_or(&[]);
            let usable = |c: PortNo| ts.iter().all(|&(g, t)| self.moves_on(x, c, t, g));
            // Equal-cost ports are minimal for every destination here: they never turn back.
            let mut cands: Vec<PortNo> = dp.ecmp.clone().unwrap_or_default().into_iter().collect();
            if self.dragonfly {
                let globals = self.ports_with_role(x, PortRole::Global);
                for p in globals {
                    if p != m && !cands.contains(&p) && usable(p) {
                        cands.push(p);
                    }
                }
                if cands.is_empty() {
                    for l in self.ports_with_role(x, PortRole::Local) {
                        let towards_global = self.peer_switch(x, l).is_some_and(|(y, _)| {
                            !self.ports_with_role(y, PortRole::Global).is_empty()
                        });
                        if towards_global && l != m && usable(l) {
                            cands.push(l);
                        }
                    }
                }
            }
            dp.candidates = cands;
        }
        dps
    }

    fn run(&self) -> Result<Plan, PlanError> {
        let n = self.fabric.switches().len();
        let path_plan = match &self.opts.multipath {
            Some(mp) => {
                let primary = |x: SwitchId, t: SwitchId| self.primary(x, t);
                Some(paths::plan_paths(
                    self.fabric,
                    self.routes,
                    &self.opts.failed,
                    mp,
                    &primary,
                )?)
            }
            None => None,
        };
        let mut dps = Vec::with_capacity(n);
        for x in 0..n {
            dps.push(if path_plan.is_some() {
                BTreeMap::new()
            } else {
                self.decision_points(x)
            });
        }
        let diverts = self.diverts(&dps);
        let mut switches = Vec::with_capacity(n);
        for (x, dp) in dps.iter().enumerate() {
            let mut sp = self.switch_plan(x, dp, diverts.get(&x))?;
            if let Some(pp) = &path_plan {
                self.path_rules(x, pp, &mut sp);
            }
            switches.push(sp);
        }
        Ok(Plan { switches })
    }

    /// Diversion rules: switch y → arrival port → destination switch → action.
    #[allow(clippy::type_complexity)]
    fn diverts(
        &self,
        dps: &[BTreeMap<PortNo, CandidatePorts>],
    ) -> BTreeMap<SwitchId, BTreeMap<PortNo, BTreeMap<SwitchId, Act>>> {
        let mut out: BTreeMap<SwitchId, BTreeMap<PortNo, BTreeMap<SwitchId, Act>>> =
            BTreeMap::new();
        for (x, points) in dps.iter().enumerate() {
            let Some(sw) = self.fabric.switch(x) else {
                continue;
            };
            for (&m, dp) in points {
                let locals: Vec<PortNo> = dp
                    .candidates
                    .iter()
                    .copied()
                    .filter(|&c| sw.port(c).is_some_and(|p| p.role == PortRole::Local))
                    .collect();
                if locals.is_empty() {
                    continue;
                }
                for (&g, members) in self.fabric.edge_groups() {
                    if Some(g) == sw.group {
                        continue;
                    }
                    for &t in members {
                        if self.primary(x, t) != Some(m) {
                            continue;
                        }
                        for &l in &locals {
                            let Some((y, back)) = self.peer_switch(x, l) else {
                                continue;
                            };
                            if self.primary(y, t) != Some(back) {
                                continue;
                            }
                            if let Some(port) = self.detour(y, back, t, g) {
                                out.entry(y)
                                    .or_default()
                                    .entry(back)
                                    .or_default()
                                    .insert(t, Act::Output(port));
                            }
                        }
                    }
                }
            }
        }
        out
    }

    fn flow(&self, table: u8, priority: u16, matches: Match, instructions: Instructions) -> Flow {
        Flow {
            table,
            priority,
            cookie: self.opts.cookie,
            matches,
            instructions,
        }
    }

    fn acts_to_actions(&self, act: Act) -> Vec<Action> {
        match act {
            Act::Output(p) => vec![Action::Output(p)],
            Act::Group(g) => vec![Action::Group(g)],
        }
    }

    /// Destination rules for one table: aggregated per group where possible.
    fn destination_rules(
        &self,
        x: SwitchId,
        table: u8,
        base: u16,
        in_port: Option<PortNo>,
        act_of: &dyn Fn(SwitchId) -> Option<Act>,
        out: &mut Vec<Flow>,
    ) {
        let own_group = self.group_of(x);
        let mut acts: Vec<(SwitchId, Option<Act>)> = Vec::new();
        for (&g, members) in self.fabric.edge_groups() {
            acts.clear();
            acts.extend(members.iter().filter(|&&t| t != x).map(|&t| (t, act_of(t))));
            let first = acts.first().and_then(|&(_, a)| a);
            let uniform = Some(g) != own_group
                && acts.len() == members.len()
                && first.is_some()
                && acts.iter().all(|&(_, a)| a == first);
            if let (true, Some(act)) = (uniform, first) {
                let m = Match {
                    in_port,
                    eth_dst: Some(Masked {
                        value: Location::group_mac(g),
                        mask: addressing::GROUP_MASK,
                    }),
                    ..Default::default()
                };
                out.push(self.flow(
                    table,
                    base + 32,
                    m,
                    Instructions::apply(self.acts_to_actions(act)),
                ));
                continue;
            }
            for &(t, act) in &acts {
                let Some(act) = act else { continue };
                let m = Match {
                    in_port,
                    eth_dst: Some(Masked {
                        value: Location::switch_mac(g, self.index_of(t)),
                        mask: addressing::SWITCH_MASK,
                    }),
                    ..Default::default()
                };
                out.push(self.flow(
                    table,
                    base + 40,
                    m,
                    Instructions::apply(self.acts_to_actions(act)),
                ));
            }
        }
    }

    fn host_rules(&self, x: SwitchId, table: u8, out: &mut Vec<Flow>) {
        let Some(sw) = self.fabric.switch(x) else {
            return;
        };
        for p in sw.host_ports() {
            let Peer::Host(h) = p.peer else { continue };
            let Some(host) = self.fabric.host(h) else {
                continue;
            };
            let mut m = Match {
                eth_dst: Some(Masked {
                    value: host.location.mac(),
                    mask: addressing::HOST_MASK,
                }),
                ..Default::default()
            };
            let mut actions = vec![Action::Output(p.no)];
            if self.opts.lossless.is_some() {
                m.vlan_vid = Some(Masked {
                    value: VID_PRESENT,
                    mask: VID_PRESENT,
                });
                actions.insert(0, Action::PopVlan);
            }
            out.push(self.flow(
                table,
                priority::FORWARD_BASE + 48,
                m,
                Instructions::apply(actions),
            ));
        }
    }

    fn classify_rules(&self, x: SwitchId, out: &mut Vec<Flow>) {
        let Some(sw) = self.fabric.switch(x) else {
            return;
        };
        let t0 = TABLE_CLASSIFY;
        for p in &sw.ports {
            let m = Match {
                in_port: Some(p.no),
                eth_type: Some(ethertype::CNM),
                ..Default::default()
            };
            let ins = if p.role.is_fabric() && self.opts.cnm_to_hosts {
                Instructions::goto(Vec::new(), TABLE_TRANSIT)
            } else if p.role.is_fabric() && self.opts.cnm_to_agent == CnmToAgent::PacketIn {
                Instructions::apply(vec![Action::NxController {
                    id: self.opts.agent_controller_id,
                }])
            } else {
                Instructions::drop()
            };
            out.push(self.flow(t0, priority::CNM, m, ins));
        }
        out.push(self.flow(
            t0,
            priority::LLDP,
            Match {
                eth_type: Some(ethertype::LLDP),
                ..Default::default()
            },
            Instructions::apply(vec![Action::Output(ports::CONTROLLER)]),
        ));
        for p in sw.host_ports() {
            if self.opts.arp_responder {
                let base = self.opts.addressing.ipv4_base();
                let m = Match {
                    in_port: Some(p.no),
                    eth_type: Some(ethertype::ARP),
                    arp_op: Some(1),
                    arp_tpa: Some(Masked {
                        value: base,
                        mask: std::net::Ipv4Addr::new(255, 0, 0, 0),
                    }),
                    ..Default::default()
                };
                out.push(self.flow(
                    t0,
                    priority::ARP_RESPONDER,
                    m,
                    Instructions::apply(arp_responder_actions()),
                ));
            }
            let m = Match {
                in_port: Some(p.no),
                eth_type: Some(ethertype::ARP),
                ..Default::default()
            };
            out.push(self.flow(t0, priority::ARP_DROP, m, Instructions::drop()));
        }
        if self.opts.lossless.is_some() && self.dragonfly {
            for p in sw.ports.iter().filter(|p| p.role == PortRole::Global) {
                for pcp in 0u8..=7 {
                    let m = Match {
                        in_port: Some(p.no),
                        vlan_pcp: Some(pcp),
                        ..Default::default()
                    };
                    let ins = if pcp < 7 {
                        Instructions::goto(
                            vec![Action::SetField {
                                field: Field::VlanPcp,
                                value: u64::from(pcp + 1),
                            }],
                            TABLE_TRANSIT,
                        )
                    } else {
                        Instructions::drop()
                    };
                    out.push(self.flow(t0, priority::LOSSLESS_PHASE, m, ins));
                }
            }
        }
        for p in &sw.ports {
            let m = Match {
                in_port: Some(p.no),
                ..Default::default()
            };
            let ins = if p.role.is_fabric() {
                Instructions::goto(Vec::new(), TABLE_TRANSIT)
            } else if let Some(l) = self.opts.lossless {
                Instructions::goto(
                    vec![
                        Action::PushVlan(ethertype::VLAN),
                        Action::SetField {
                            field: Field::VlanVid,
                            value: u64::from(VID_PRESENT | l.vlan_vid),
                        },
                        Action::SetField {
                            field: Field::VlanPcp,
                            value: 0,
                        },
                    ],
                    TABLE_INJECT,
                )
            } else {
                Instructions::goto(Vec::new(), TABLE_INJECT)
            };
            out.push(self.flow(t0, priority::DISPATCH, m, ins));
        }
        out.push(self.flow(
            t0,
            priority::DISPATCH,
            Match {
                in_port: Some(ports::CONTROLLER),
                ..Default::default()
            },
            Instructions::goto(Vec::new(), TABLE_TRANSIT),
        ));
    }

    fn switch_plan(
        &self,
        x: SwitchId,
        dps: &BTreeMap<PortNo, CandidatePorts>,
        diverts: Option<&BTreeMap<PortNo, BTreeMap<SwitchId, Act>>>,
    ) -> Result<SwitchPlan, PlanError> {
        let Some(sw) = self.fabric.switch(x) else {
            return Ok(SwitchPlan {
                dpid: 0,
                name: String::new(),
                flows: Vec::new(),
                groups: Vec::new(),
            });
        };
        // Reserve once: flows are large and a 2 000-switch plan has ~800 000 of them.
        let estimate = 16 * sw.ports.len() + 2 * (self.fabric.edge_groups().len() + 2 * 256);
        let mut flows = Vec::with_capacity(estimate);
        self.classify_rules(x, &mut flows);
        // Group ids first, so the inject rules can name them.
        let mut group_of_port: BTreeMap<PortNo, u32> = BTreeMap::new();
        let mut groups = Vec::with_capacity(dps.len());
        for (&m, dp) in dps {
            let n = dp.candidates.len();
            let id = self.group_id(x, m, dp.equal_cost())?;
            group_of_port.insert(m, id);
            let weights = if dp.equal_cost() {
                // The minimal port at the plan's P, its equals at 100 (the agent's view of a
                // group nobody has cut): P = 100 is ECMP, P = 0 spreads over the others.
                let mut ps = vec![100.0; n + 1];
                if let Some(p0) = ps.first_mut() {
                    *p0 = self.opts.p_minimal_percent;
                }
                select_weights::equal_cost_weights(&ps)
            } else {
                select_weights::weights(self.opts.p_minimal_percent, n)
            };
            let ports = std::iter::once(m)
                .chain(dp.candidates.iter().copied())
                .chain(std::iter::once(m));
            let buckets = ports
                .zip(weights)
                .map(|(port, weight)| Bucket {
                    weight,
                    watch_port: Some(port),
                    actions: vec![Action::Output(port)],
                })
                .collect();
            groups.push(Group {
                id,
                kind: GroupType::Select,
                buckets,
            });
        }
        let own = sw.group;
        if sw.has_hosts() {
            let inject = |t: SwitchId| {
                let m = self.primary(x, t)?;
                if self.group_of(t) != own {
                    if let Some(&g) = group_of_port.get(&m) {
                        return Some(Act::Group(g));
                    }
                }
                Some(Act::Output(m))
            };
            self.destination_rules(
                x,
                TABLE_INJECT,
                priority::FORWARD_BASE,
                None,
                &inject,
                &mut flows,
            );
            self.host_rules(x, TABLE_INJECT, &mut flows);
        }
        let transit = |t: SwitchId| self.primary(x, t).map(Act::Output);
        self.destination_rules(
            x,
            TABLE_TRANSIT,
            priority::FORWARD_BASE,
            None,
            &transit,
            &mut flows,
        );
        self.host_rules(x, TABLE_TRANSIT, &mut flows);
        if let Some(diverts) = diverts {
            for (&in_port, dests) in diverts {
                let act = |t: SwitchId| dests.get(&t).copied();
                self.destination_rules(
                    x,
                    TABLE_TRANSIT,
                    priority::DIVERT_BASE,
                    Some(in_port),
                    &act,
                    &mut flows,
                );
            }
        }
        // Unstable is deterministic here: no two flows share (table, priority, match).
        flows.sort_unstable_by(|a, b| {
            (a.table, std::cmp::Reverse(a.priority), &a.matches).cmp(&(
                b.table,
                std::cmp::Reverse(b.priority),
                &b.matches,
            ))
        });
        Ok(SwitchPlan {
            dpid: sw.dpid,
            name: sw.name.clone(),
            flows,
            groups,
        })
    }
}

impl Planner<'_> {
    /// Adds switch x's multipath groups and rules (module docs, "Multipath").
    fn path_rules(&self, x: SwitchId, pp: &paths::PathPlan, sp: &mut SwitchPlan) {
        let Some(sw) = self.fabric.switch(x) else {
            return;
        };
        let flows = &mut sp.flows;
        let mut tagged_switch_mac = |t: SwitchId, i: u8, tag: u8, port: PortNo| {
            let g = self.group_of(t).unwrap_or(0);
            let m = Match {
                eth_dst: Some(Masked {
                    value: paths::tagged_mac(Location::switch_mac(g, self.index_of(t)), i, tag),
                    mask: addressing::SWITCH_MASK,
                }),
                ..Default::default()
            };
            flows.push(self.flow(
                TABLE_TRANSIT,
                priority::PATH_TRANSIT,
                m,
                Instructions::apply(vec![Action::Output(port)]),
            ));
        };
        // Transit: every alternative through x (not starting at x).
        for (&(s, t), list) in &pp.pairs {
            let Some(tag) = pp.source_tag(s) else {
                continue;
            };
            for (i, path) in list.iter().enumerate().skip(1) {
                let Ok(i) = u8::try_from(i) else { continue };
                for &(y, port) in path.iter().skip(1) {
                    if y == x {
                        tagged_switch_mac(t, i, tag, port);
                    }
                }
            }
        }
        // Egress: own hosts with any tag, untagged on delivery.
        for p in sw.host_ports() {
            let Peer::Host(h) = p.peer else { continue };
            let Some(host) = self.fabric.host(h) else {
                continue;
            };
            let m = Match {
                eth_dst: Some(Masked {
                    value: host.location.mac(),
                    mask: paths::ANY_TAG_HOST_MASK,
                }),
                ..Default::default()
            };
            sp.flows.push(self.flow(
                TABLE_TRANSIT,
                priority::PATH_EGRESS,
                m,
                Instructions::apply(vec![
                    Action::SetField {
                        field: Field::EthDst,
                        value: host.location.mac().to_u64(),
                    },
                    Action::Output(p.no),
                ]),
            ));
        }
        // Inject: one group per remote host whose pair has alternatives.
        if let Some(tag) = pp.source_tag(x) {
            for (h, host) in self.fabric.hosts().iter().enumerate() {
                let list = pp.paths(x, host.switch);
                if list.len() < 2 {
                    continue;
                }
                let Some(id) = u32::try_from(h)
                    .ok()
                    .filter(|&h| h < PATH_GROUP_SPAN)
                    .and_then(|h| PATH_GROUP_BASE.checked_add(h))
                else {
                    continue;
                };
                let mac = host.location.mac();
                let bucket = |i: usize, weight: u16| -> Option<Bucket> {
                    let &(_, port) = list.get(i)?.first()?;
                    let mut actions = Vec::new();
                    if i > 0 {
                        let i = u8::try_from(i).ok()?;
                        actions.push(Action::SetField {
                            field: Field::EthDst,
                            value: paths::tagged_mac(mac, i, tag).to_u64(),
                        });
                    }
                    actions.push(Action::Output(port));
                    Some(Bucket {
                        weight,
                        watch_port: Some(port),
                        actions,
                    })
                };
                let buckets: Vec<Bucket> = (0..list.len())
                    .filter_map(|i| bucket(i, if i == 0 { 255 } else { 0 }))
                    .chain(bucket(0, 1))
                    .collect();
                sp.groups.push(Group {
                    id,
                    kind: GroupType::Select,
                    buckets,
                });
                sp.flows.push(self.flow(
                    TABLE_INJECT,
                    priority::FORWARD_BASE + 48,
                    Match {
                        eth_dst: Some(Masked {
                            value: mac,
                            mask: addressing::HOST_MASK,
                        }),
                        ..Default::default()
                    },
                    Instructions::apply(vec![Action::Group(id)]),
                ));
            }
        }
        sp.groups.sort_unstable_by_key(|g| g.id);
        sp.flows.sort_unstable_by(|a, b| {
            (a.table, std::cmp::Reverse(a.priority), &a.matches).cmp(&(
                b.table,
                std::cmp::Reverse(b.priority),
                &b.matches,
            ))
        });
    }
}

/// The edge ARP responder: turns a request from a host into the reply, in place.
///
/// Order matters: the requester's MAC moves to `eth_dst` before `eth_src` is overwritten, and
/// the IP swap goes through `reg0`.
pub fn arp_responder_actions() -> Vec<Action> {
    let mv = |src: FieldRange, dst: FieldRange| Action::Move { src, dst };
    let w = FieldRange::whole;
    vec![
        mv(w(Field::EthSrc), w(Field::EthDst)),
        Action::SetField {
            field: Field::EthSrc,
            value: MacAddr([2, 0, 0, 0, 0, 0]).to_u64(),
        },
        mv(
            FieldRange {
                field: Field::ArpTpa,
                ofs: 0,
                n_bits: 24,
            },
            FieldRange {
                field: Field::EthSrc,
                ofs: 0,
                n_bits: 24,
            },
        ),
        Action::SetField {
            field: Field::ArpOp,
            value: 2,
        },
        mv(w(Field::ArpSha), w(Field::ArpTha)),
        mv(w(Field::EthSrc), w(Field::ArpSha)),
        mv(w(Field::ArpTpa), w(Field::Reg(0))),
        mv(w(Field::ArpSpa), w(Field::ArpTpa)),
        mv(w(Field::Reg(0)), w(Field::ArpSpa)),
        Action::Output(ports::IN_PORT),
    ]
}
