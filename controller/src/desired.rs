//! The narrow interface between the planner (pure: fabric model → routes → rule plan) and the
//! runtime (sessions, sync, store, HTTP).
//!
//! The planner implements [`PlanSource`]; the runtime asks it for every switch's
//! [`DesiredSwitch`] given the set of links it currently believes failed, and for the list of
//! fabric links (so it can probe them with LLDP and map a port event to a link).
//!
//! Ownership (DESIGN §4): every flow in [`DesiredSwitch::flows`] carries the controller cookie;
//! groups carry no cookie in OpenFlow 1.3, so the runtime owns the group ids that appear in a
//! plan plus the configured `group_id_range` (groups outside both are never touched).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use fabricflow_proto::openflow::flow::FlowMod;
use fabricflow_proto::openflow::group::GroupMod;
use serde::{Deserialize, Serialize};

/// One end of a link: a switch port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Endpoint {
    pub dpid: u64,
    pub port: u32,
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}:{}", self.dpid, self.port)
    }
}

/// The peer a fabric port must be cabled to.
pub type ExpectedPeer = Endpoint;

/// A fabric link (switch to switch) as the runtime knows it: its two endpoints by dpid, the
/// smaller first (so `a–b` and `b–a` are one link). The model's link is [`crate::topology::Link`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LinkId {
    pub a: Endpoint,
    pub b: Endpoint,
}

impl LinkId {
    /// The canonical id of the link between `x` and `y`.
    pub fn new(x: Endpoint, y: Endpoint) -> Self {
        if x <= y {
            LinkId { a: x, b: y }
        } else {
            LinkId { a: y, b: x }
        }
    }

    /// Whether `e` is one of the link's ends.
    pub fn touches(&self, e: Endpoint) -> bool {
        self.a == e || self.b == e
    }
}

impl fmt::Display for LinkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.a, self.b)
    }
}

/// What one switch must hold (built by the planner; flows and groups carry the controller
/// cookie). Flows are ADDs; the runtime turns them into the difference with the switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DesiredSwitch {
    pub dpid: u64,
    pub name: String,
    pub flows: Vec<FlowMod>,
    pub groups: Vec<GroupMod>,
    /// Fabric ports (port number → the peer it must be cabled to), probed with LLDP.
    pub fabric_ports: BTreeMap<u32, ExpectedPeer>,
}

/// The planner, seen from the runtime. Pure and deterministic: the same failed set gives the
/// same plan (the runtime relies on that to send nothing to unchanged switches).
pub trait PlanSource: Send + Sync {
    /// Every switch's desired state with the links in `failed_links` out of service.
    fn plan(&self, failed_links: &BTreeSet<LinkId>) -> BTreeMap<u64, DesiredSwitch>;
    /// Whether every host still has a path to every other with `failed_links` out of service,
    /// leaving aside the hosts of the switches in `drained` (a drained switch takes its own
    /// hosts with it). An operator's drain is refused when not.
    fn check(
        &self,
        failed_links: &BTreeSet<LinkId>,
        drained: &BTreeSet<u64>,
    ) -> Result<(), String> {
        let _ = (failed_links, drained);
        Ok(())
    }
    /// Every fabric link of the topology (failed or not); host links are not probed.
    fn links(&self) -> Vec<LinkId>;
}

pub mod fixture;
