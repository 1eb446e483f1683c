//! An in-process fabric: one [`FakeSwitch`] per switch of a real topology, the controller's
//! [`ControllerSession`] and the agent's [`AgentSession`] connected to each over byte pipes,
//! all on one virtual clock. The shells are the minimum the real ones do: the controller side
//! answers `Identified` with the plan's desired state for that datapath; frames a switch sends
//! out of a port (LLDP probes) arrive at the cabled peer.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fabricflow_agent::config::AgentConfig;
use fabricflow_agent::session::{Session as AgentSession, SessionConfig as AgentSessionConfig};
use fabricflow_agent::ConfigError;
use fabricflow_controller::desired::DesiredSwitch;
use fabricflow_controller::planner::{desired_state, PlannerError};
use fabricflow_controller::session::{
    Event as ControllerEvent, RoleWanted, Session as ControllerSession, SessionConfig,
};
use fabricflow_controller::topology::{Fabric, Peer};
use fabricflow_controller::{PlanOptions, TopologyError, TopologySpec};
use fabricflow_proto::openflow::port::Port;
use fabricflow_proto::MacAddr;

use crate::fake_switch::{ConnId, FakeSwitch};

/// Why a fabric could not be built.
#[derive(Debug, thiserror::Error)]
pub enum FabricError {
    #[error("topology: {0}")]
    Topology(#[from] TopologyError),
    #[error("plan: {0}")]
    Plan(#[from] PlannerError),
    #[error("agent config: {0}")]
    Agent(#[from] ConfigError),
    #[error("no switch with datapath id {0:#x}")]
    UnknownSwitch(u64),
}

#[derive(Debug)]
struct Node {
    switch: FakeSwitch,
    controller: Option<(ConnId, ControllerSession)>,
    agent: Option<AgentSession>,
    agent_conn: Option<ConnId>,
}

/// The in-process fabric.
#[derive(Debug)]
pub struct InProcessFabric {
    origin: Instant,
    now_ns: u64,
    fabric: Fabric,
    desired: BTreeMap<u64, Arc<DesiredSwitch>>,
    nodes: BTreeMap<u64, Node>,
    /// Every controller session event, with the datapath id it came from (0: not yet known).
    pub controller_events: Vec<(u64, ControllerEvent)>,
    /// The controller sessions' settings.
    pub session_cfg: SessionConfig,
}

impl InProcessFabric {
    /// Fake switches for `topology` (e.g. `dragonfly:p=1,a=2,h=1`) and the controller's plan for
    /// them; nothing connected yet.
    pub fn new(topology: &str) -> Result<Self, FabricError> {
        let spec: TopologySpec = topology.parse()?;
        let fabric = spec.build()?;
        let desired = desired_state(&fabric, &PlanOptions::default(), &BTreeSet::new())?
            .into_iter()
            .map(|(d, s)| (d, Arc::new(s)))
            .collect();
        let nodes = fabric
            .switches()
            .iter()
            .map(|sw| {
                let ports = sw.ports.iter().map(|p| {
                    let mac =
                        MacAddr::from_u64((sw.dpid << 8 | u64::from(p.no)) & 0xffff_ffff_ffff);
                    Port::new(p.no, mac, &format!("{}-p{}", sw.name, p.no))
                });
                let node = Node {
                    switch: FakeSwitch::new(sw.dpid, ports),
                    controller: None,
                    agent: None,
                    agent_conn: None,
                };
                (sw.dpid, node)
            })
            .collect();
        Ok(InProcessFabric {
            origin: Instant::now(),
            now_ns: 0,
            fabric,
            desired,
            nodes,
            controller_events: Vec::new(),
            session_cfg: SessionConfig::default(),
        })
    }

    // ---- access ------------------------------------------------------------------------------

    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }
    pub fn dpids(&self) -> Vec<u64> {
        self.nodes.keys().copied().collect()
    }
    /// The virtual time, ns since the fabric was built.
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }
    pub fn desired(&self, dpid: u64) -> Option<&Arc<DesiredSwitch>> {
        self.desired.get(&dpid)
    }
    pub fn switch(&self, dpid: u64) -> Option<&FakeSwitch> {
        self.nodes.get(&dpid).map(|n| &n.switch)
    }
    pub fn switch_mut(&mut self, dpid: u64) -> Option<&mut FakeSwitch> {
        self.nodes.get_mut(&dpid).map(|n| &mut n.switch)
    }
    pub fn controller(&self, dpid: u64) -> Option<&ControllerSession> {
        self.nodes
            .get(&dpid)
            .and_then(|n| n.controller.as_ref())
            .map(|(_, s)| s)
    }
    pub fn agent(&self, dpid: u64) -> Option<&AgentSession> {
        self.nodes.get(&dpid).and_then(|n| n.agent.as_ref())
    }
    /// Whether every switch's controller session holds the desired state.
    pub fn all_synced(&self) -> bool {
        self.nodes
            .values()
            .all(|n| n.controller.as_ref().is_some_and(|(_, s)| s.is_synced()))
    }

    // ---- connections -------------------------------------------------------------------------

    /// Connects a controller session (EQUAL) to every switch.
    pub fn connect_controllers(&mut self) {
        for dpid in self.dpids() {
            let _ = self.connect_controller(dpid, RoleWanted::Equal);
        }
    }

    /// Connects a controller session with `role` to one switch (replacing any).
    pub fn connect_controller(&mut self, dpid: u64, role: RoleWanted) -> Result<(), FabricError> {
        let now = self.instant();
        let cfg = self.session_cfg.clone();
        let node = self.node(dpid)?;
        if let Some((c, _)) = node.controller.take() {
            node.switch.disconnect(c);
        }
        let conn = node.switch.connect();
        node.controller = Some((conn, ControllerSession::new(cfg, role, now)));
        self.pump();
        Ok(())
    }

    /// Drops the controller's connection to one switch.
    pub fn disconnect_controller(&mut self, dpid: u64) -> Result<(), FabricError> {
        let node = self.node(dpid)?;
        if let Some((c, _)) = node.controller.take() {
            node.switch.disconnect(c);
        }
        Ok(())
    }

    /// Connects an agent to every switch, each with its own session built from `cfg`.
    pub fn connect_agents(&mut self, cfg: &AgentConfig) -> Result<(), FabricError> {
        for dpid in self.dpids() {
            self.connect_agent(dpid, cfg)?;
        }
        Ok(())
    }

    /// Connects (or reconnects, keeping the session and so its P and weights) the agent of one
    /// switch.
    pub fn connect_agent(&mut self, dpid: u64, cfg: &AgentConfig) -> Result<(), FabricError> {
        let now = self.now_ns;
        let node = self.node(dpid)?;
        if node.agent.is_none() {
            node.agent = Some(AgentSession::new(AgentSessionConfig::default(), cfg)?);
        }
        if let Some(c) = node.agent_conn.take() {
            node.switch.disconnect(c);
        }
        node.agent_conn = Some(node.switch.connect());
        if let Some(a) = node.agent.as_mut() {
            a.on_connected(now);
        }
        self.pump();
        Ok(())
    }

    /// Drops the agent's connection to one switch (its session lives on).
    pub fn disconnect_agent(&mut self, dpid: u64) -> Result<(), FabricError> {
        let node = self.node(dpid)?;
        if let Some(c) = node.agent_conn.take() {
            node.switch.disconnect(c);
        }
        if let Some(a) = node.agent.as_mut() {
            a.on_disconnected();
        }
        Ok(())
    }

    /// A new desired state for one switch, handed to its controller session.
    pub fn set_desired(&mut self, dpid: u64, d: Option<DesiredSwitch>) -> Result<(), FabricError> {
        let now = self.instant();
        let d = d.map(Arc::new);
        match &d {
            Some(s) => self.desired.insert(dpid, s.clone()),
            None => self.desired.remove(&dpid),
        };
        if let Some((_, s)) = self.node(dpid)?.controller.as_mut() {
            s.set_desired(d, now);
        }
        self.pump();
        Ok(())
    }

    /// A frame arrives at a switch port from outside (e.g. a CNM from the fabric).
    pub fn deliver_frame(
        &mut self,
        dpid: u64,
        in_port: u32,
        frame: &[u8],
    ) -> Result<(), FabricError> {
        self.node(dpid)?.switch.receive_frame(in_port, frame);
        self.pump();
        Ok(())
    }

    // ---- time --------------------------------------------------------------------------------

    /// Moves bytes, events and cabled frames until nothing moves.
    pub fn pump(&mut self) {
        let now = self.instant();
        let now_ns = self.now_ns;
        // Bounded: a conversation that never settles is a bug the caller sees as a timeout.
        for _ in 0..10_000 {
            let mut moved = false;
            let mut wires: Vec<(u64, u32, Vec<u8>)> = Vec::new();
            for (&dpid, node) in &mut self.nodes {
                if let Some((conn, s)) = node.controller.as_mut() {
                    let mut bytes = Vec::new();
                    while let Some(m) = s.poll_transmit() {
                        bytes.extend_from_slice(&m.to_bytes());
                    }
                    if !bytes.is_empty() {
                        moved = true;
                        node.switch.handle_bytes(*conn, &bytes);
                    }
                    let back = node.switch.take_output(*conn);
                    if !back.is_empty() {
                        moved = true;
                        s.handle_bytes(&back, now);
                    }
                    while let Some(ev) = s.poll_event() {
                        moved = true;
                        if let ControllerEvent::Identified { dpid: d, .. } = ev {
                            s.set_desired(self.desired.get(&d).cloned(), now);
                        }
                        self.controller_events.push((s.dpid().unwrap_or(0), ev));
                    }
                }
                if let (Some(conn), Some(a)) = (node.agent_conn, node.agent.as_mut()) {
                    let mut bytes = Vec::new();
                    while let Some(m) = a.poll_transmit() {
                        bytes.extend_from_slice(&m.to_bytes());
                    }
                    if !bytes.is_empty() {
                        moved = true;
                        node.switch.handle_bytes(conn, &bytes);
                    }
                    let back = node.switch.take_output(conn);
                    if !back.is_empty() {
                        moved = true;
                        a.handle_bytes(&back, now_ns);
                    }
                }
                for (port, frame) in node.switch.take_emitted() {
                    wires.push((dpid, port, frame));
                }
            }
            for (dpid, port, frame) in wires {
                let peer = self
                    .fabric
                    .switch_by_dpid(dpid)
                    .and_then(|id| self.fabric.peer(id, port));
                if let Some(Peer::Switch { switch, port: p }) = peer {
                    let peer_dpid = self.fabric.switch(switch).map(|s| s.dpid);
                    if let Some(n) = peer_dpid.and_then(|d| self.nodes.get_mut(&d)) {
                        moved = true;
                        n.switch.receive_frame(p, &frame);
                    }
                }
            }
            if !moved {
                return;
            }
        }
    }

    /// The earliest timer of any session.
    fn next_deadline_ns(&self) -> Option<u64> {
        let mut t: Option<u64> = None;
        for n in self.nodes.values() {
            if let Some((_, s)) = &n.controller {
                if let Some(d) = s.poll_timeout() {
                    let d = u64::try_from(d.saturating_duration_since(self.origin).as_nanos())
                        .unwrap_or(u64::MAX);
                    t = Some(t.map_or(d, |x| x.min(d)));
                }
            }
            if let Some(d) = n.agent.as_ref().and_then(AgentSession::next_deadline_ns) {
                t = Some(t.map_or(d, |x| x.min(d)));
            }
        }
        t
    }

    /// Runs every timer due up to `now + d`, in order, pumping after each; the clock ends at
    /// `now + d`.
    pub fn advance(&mut self, d: Duration) {
        let end = self
            .now_ns
            .saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        self.pump();
        while let Some(t) = self.next_deadline_ns().filter(|t| *t <= end) {
            self.now_ns = self.now_ns.max(t);
            let (now, now_ns) = (self.instant(), self.now_ns);
            for n in self.nodes.values_mut() {
                if let Some((_, s)) = n.controller.as_mut() {
                    s.handle_timeout(now);
                }
                if let Some(a) = n.agent.as_mut() {
                    a.on_timer(now_ns);
                }
            }
            self.pump();
        }
        self.now_ns = end;
    }

    /// Advances in `step`s until `done` holds or `limit` of virtual time has passed; returns
    /// whether `done` held.
    pub fn run_until(
        &mut self,
        limit: Duration,
        step: Duration,
        mut done: impl FnMut(&Self) -> bool,
    ) -> bool {
        let end = self
            .now_ns
            .saturating_add(u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX));
        loop {
            self.pump();
            if done(self) {
                return true;
            }
            if self.now_ns >= end {
                return false;
            }
            self.advance(step);
        }
    }

    fn instant(&self) -> Instant {
        self.origin + Duration::from_nanos(self.now_ns)
    }

    fn node(&mut self, dpid: u64) -> Result<&mut Node, FabricError> {
        self.nodes
            .get_mut(&dpid)
            .ok_or(FabricError::UnknownSwitch(dpid))
    }
}
