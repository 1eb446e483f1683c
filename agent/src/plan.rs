//! What the agent learns from its own switch: the decision points (SELECT groups), the fabric
//! ports, and which decision point serves which destination group. Pure: it reads the switch's
//! group-description and flow-stats replies, so the agent stays topology-agnostic (DESIGN §1).
//!
//! Conventions of the controller's plan (DESIGN §4, issue 5):
//! - one SELECT group per decision point, id = `group_id_base` + minimal port; **bucket 0 is the
//!   minimal port**, then the non-minimal candidates, then a weight-1 padding bucket to the
//!   minimal port. OpenFlow 1.3 groups carry no cookie, so "owned by the controller" means "a
//!   SELECT group whose id lies in `[group_id_base, group_id_base + group_id_span)`". Those are
//!   the *logical* buckets: a group in the slotted layout ([`fabricflow_proto::select_slots`])
//!   is learned as its catalog plus the padding bucket, weighed by its slot counts.
//! - every controller flow carries `cookie`; table `inject_table` (1) sends other-group traffic
//!   to the group of its minimal port, matching the destination MAC `02:00:GG:GG:…` (masked),
//!   table `transit_table` (2) forwards minimally.
//!
//! **Fabric ports** are the ports that appear in a decision point's buckets or in an output
//! action of a transit-table flow towards more than one host (a masked `eth_dst`: remote hosts
//! are always aggregated, the switch's own hosts are matched exactly). A CNM is accepted only
//! from a fabric port, the policy and feedback comparison average over fabric ports only, and
//! the emulated congestion point samples only them: a host port is never a choice of route.

use std::collections::{BTreeMap, BTreeSet};

use fabricflow_proto::conventions;
use fabricflow_proto::openflow::action::Action;
use fabricflow_proto::openflow::group::{Bucket, GroupType};
use fabricflow_proto::openflow::instruction::Instruction;
use fabricflow_proto::openflow::multipart::{BucketCounter, FlowStats, GroupDesc};
use fabricflow_proto::openflow::oxm::OxmField;
use fabricflow_proto::openflow::port::OFPP_MAX;
use fabricflow_proto::select_slots::{SlotError, SlotGroup};
use fabricflow_proto::MacAddr;
use serde::{Deserialize, Serialize};

use crate::drb::DstSwitch;
use crate::weights::DecisionPoint;
use crate::PortNo;

/// One multipath (DRB) group as installed: a SELECT group in the path range
/// ([`conventions::PATH_GROUP_BASE`]) for one remote destination host; bucket i sends on path i
/// of the pair (bucket 0 untagged, bucket i ≥ 1 writes the path-tagged destination MAC), then
/// the weight-1 padding bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnedPathGroup {
    /// The destination switch (from the tagged MAC bucket 1 writes).
    pub dst: DstSwitch,
    /// Paths (buckets without the padding bucket).
    pub paths: u8,
    /// The installed buckets, verbatim.
    pub buckets: Vec<Bucket>,
}

impl LearnedPathGroup {
    /// The buckets with `weights` (one per bucket).
    pub fn with_weights(&self, weights: &[u16]) -> Vec<Bucket> {
        with_weights(&self.buckets, weights)
    }

    /// The installed weights, bucket order.
    pub fn weights(&self) -> Vec<u16> {
        self.buckets.iter().map(|b| b.weight).collect()
    }

    fn same_structure(&self, other: &LearnedPathGroup) -> bool {
        self.dst == other.dst
            && self.paths == other.paths
            && self.buckets.len() == other.buckets.len()
            && self
                .buckets
                .iter()
                .zip(&other.buckets)
                .all(|(a, b)| a.actions == b.actions && a.watch_port == b.watch_port)
    }
}

pub use conventions::is_path_group;

fn learn_path_group(g: &GroupDesc) -> Option<LearnedPathGroup> {
    if g.group_type != GroupType::Select || g.buckets.len() < 3 {
        return None;
    }
    let dst = g.buckets.get(1)?.actions.iter().find_map(|a| match a {
        Action::SetField(OxmField::EthDst { value, .. }) => DstSwitch::of_mac(*value),
        _ => None,
    })?;
    Some(LearnedPathGroup {
        dst: dst.0,
        paths: u8::try_from(g.buckets.len() - 1).ok()?,
        buckets: g.buckets.clone(),
    })
}

/// The plan's conventions the agent relies on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlanConventions {
    /// First decision-point group id. Default 1000 (group = 1000 + minimal port, + half the span
    /// for an equal-cost group).
    pub group_id_base: u32,
    /// Number of group ids reserved for decision points. Default 65 536.
    pub group_id_span: u32,
    /// Cookie of every controller flow. Default `0x0fab_f10a_0000_0001`.
    pub cookie: u64,
    /// Table of the conditional (inject) rules. Default 1.
    pub inject_table: u8,
    /// Table of the minimal transit rules. Default 2.
    pub transit_table: u8,
}

impl Default for PlanConventions {
    fn default() -> Self {
        PlanConventions {
            group_id_base: conventions::DECISION_GROUP_BASE,
            group_id_span: conventions::DECISION_GROUP_SPAN,
            cookie: conventions::PLAN_COOKIE,
            inject_table: conventions::table::INJECT,
            transit_table: conventions::table::TRANSIT,
        }
    }
}

impl PlanConventions {
    /// Whether `group_id` lies in the decision-point range.
    pub fn owns_group(&self, group_id: u32) -> bool {
        group_id
            .checked_sub(self.group_id_base)
            .is_some_and(|off| off < self.group_id_span)
    }

    /// Whether decision point `group_id` splits over equal-cost ports (its id is in the upper
    /// half of the range: [`conventions::EQUAL_COST_GROUP_OFFSET`]).
    pub fn is_equal_cost(&self, group_id: u32) -> bool {
        group_id
            .checked_sub(self.group_id_base)
            .is_some_and(|off| off >= self.group_id_span / 2 && off < self.group_id_span)
    }
}

/// One decision point as installed: its structure and its current weights.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnedGroup {
    /// Group id, minimal port and candidate count.
    pub dp: DecisionPoint,
    /// The logical buckets (minimal, candidates, padding: actions, watch port/group, weight),
    /// kept verbatim so that a weight MODIFY changes nothing else. For a group in the slotted
    /// layout, its catalog and the padding bucket, weighed by their slot counts.
    pub buckets: Vec<Bucket>,
    /// The group's slots when it is in the slotted layout
    /// ([`fabricflow_proto::select_slots`]): the switch holds the slots, not `buckets`.
    pub slots: Option<SlotGroup>,
}

impl LearnedGroup {
    /// Records `weights` (one per logical bucket, as [`crate::GroupWrite`] carries them) as
    /// installed and returns the buckets that install them: the weighted buckets, or the slots
    /// with the fewest moved.
    pub fn write(&mut self, weights: &[u16]) -> Result<Vec<Bucket>, SlotError> {
        if let Some(s) = self.slots.as_mut() {
            s.set_weights(weights)?;
        }
        self.buckets = with_weights(&self.buckets, weights);
        Ok(match &self.slots {
            Some(s) => s.buckets(),
            None => self.buckets.clone(),
        })
    }

    /// The bytes a group-stats reply counts on the minimal port's choice: bucket 0, or every
    /// slot copying it.
    pub fn minimal_bytes(&self, counters: &[BucketCounter]) -> Option<u64> {
        let Some(s) = &self.slots else {
            return counters.first().map(|c| c.byte_count);
        };
        let slots = counters.get(s.catalog().len()..)?;
        Some(
            slots
                .iter()
                .zip(s.slot_choices())
                .filter(|(_, &choice)| choice == 0)
                .map(|(c, _)| c.byte_count)
                .sum(),
        )
    }

    /// The installed weights, bucket order.
    pub fn weights(&self) -> Vec<u16> {
        self.buckets.iter().map(|b| b.weight).collect()
    }

    /// Whether two installs have the same structure (everything but the weights).
    pub fn same_structure(&self, other: &LearnedGroup) -> bool {
        self.dp == other.dp
            && self.slots.is_some() == other.slots.is_some()
            && self.buckets.len() == other.buckets.len()
            && self.buckets.iter().zip(&other.buckets).all(|(a, b)| {
                a.actions == b.actions
                    && a.watch_port == b.watch_port
                    && a.watch_group == b.watch_group
            })
    }

    /// The ports of the non-minimal candidate buckets (between bucket 0 and the padding bucket),
    /// in bucket order, without the minimal port and without repeats.
    pub fn candidate_ports(&self) -> Vec<PortNo> {
        let mut out: Vec<PortNo> = Vec::new();
        for b in self.buckets.iter().skip(1).take(self.dp.n_nonminimal) {
            for p in physical_outputs(b.actions.iter()) {
                if p != self.dp.minimal_port && !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
    }
}

/// `buckets` with `weights` (one per bucket, missing ones 0), everything else kept verbatim.
fn with_weights(buckets: &[Bucket], weights: &[u16]) -> Vec<Bucket> {
    buckets
        .iter()
        .zip(weights.iter().copied().chain(std::iter::repeat(0)))
        .map(|(b, w)| b.clone().with_weight(w))
        .collect()
}

/// Why a group on the switch is not a decision point (counted, logged once per refresh).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroupSkip {
    /// Outside the decision-point id range: not the controller's, or not a decision point.
    NotOwned,
    /// In the range but not a SELECT group.
    NotSelect,
    /// Fewer than two buckets (minimal + padding).
    TooFewBuckets,
    /// Bucket 0 has no output action to a physical port.
    NoMinimalPort,
    /// Shaped as the slotted layout, but a slot copies no catalog bucket or the catalog repeats
    /// itself.
    BadSlots,
}

/// A transit-table flow matching only `eth_dst` (masked) and outputting to one physical port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransitRoute {
    /// Flow priority.
    pub priority: u16,
    /// Matched destination (already masked).
    pub value: MacAddr,
    /// Mask (all ones: exact).
    pub mask: MacAddr,
    /// Output port.
    pub port: PortNo,
}

impl TransitRoute {
    fn matches(&self, mac: MacAddr) -> bool {
        mac.0
            .iter()
            .zip(self.mask.0)
            .zip(self.value.0)
            .all(|((b, m), v)| b & m == v & m)
    }
}

/// Everything learned from one read of the switch's groups and flows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LearnedPlan {
    /// Decision points by group id.
    pub groups: BTreeMap<u32, LearnedGroup>,
    /// Multipath (DRB) groups by group id.
    pub path_groups: BTreeMap<u32, LearnedPathGroup>,
    /// Fabric ports: in some decision point's buckets or in the outputs of a transit flow for
    /// remote hosts (never a port of this switch's own hosts).
    pub fabric_ports: BTreeSet<PortNo>,
    /// Destination group (bytes 2–3 of the host MAC) → the decision point's minimal port, from
    /// the inject table. Only other-group destinations appear (same-group traffic never goes
    /// through a SELECT group).
    pub minimal_port_by_dest_group: BTreeMap<u16, PortNo>,
    /// Ports the classify table treats as fabric ports: a CNM arriving there goes to the agent,
    /// any other frame to the transit table. The fabric ports above are those the switch's
    /// routes use; a fat-tree's middle switch with more up ports than routes upwards (k = 2,
    /// n = 3: one of two) still receives CNMs on the others, which it relays.
    pub cnm_ports: BTreeSet<PortNo>,
    /// Fabric-side ports whose CNMs the classify table drops (the controller's
    /// `cnm_to_agent = "interface"`): the agent reads them from the port's Linux interface.
    pub cnm_interface_ports: BTreeSet<PortNo>,
    /// The transit table's routes by destination MAC alone, highest priority first: where the
    /// pipeline sends a frame for a host, so a CNM can leave by that port without a PACKET_OUT.
    pub transit_routes: Vec<TransitRoute>,
    /// Hosts attached to this switch: exact destinations of inject-table flows that output to
    /// a port that is not a fabric port. A CNM for one of them never needs the pipeline.
    pub local_hosts: BTreeSet<MacAddr>,
    /// Groups seen but not used, with the reason.
    pub skipped: Vec<(u32, GroupSkip)>,
    /// The controller's flows (any table, carrying the plan's cookie) on the switch: with
    /// `groups`, what tells "the plan is installed" from "not yet" (see
    /// [`is_installed`](Self::is_installed)).
    pub controller_flows: usize,
    /// The controller's freeze marker is on the switch (a flow of the plan's cookie matching
    /// [`conventions::FREEZE_MARKER_METADATA`]): the operator froze this switch's weights.
    pub frozen: bool,
}

impl LearnedPlan {
    /// Learns the plan from a GROUP_DESC reply and the controller's flows of the inject and
    /// transit tables (flows of other tables or cookies are ignored).
    pub fn learn(conv: &PlanConventions, groups: &[GroupDesc], flows: &[FlowStats]) -> LearnedPlan {
        let mut plan = LearnedPlan::default();
        let (mut cnm_to_agent, mut to_transit) = (BTreeSet::new(), BTreeSet::new());
        let mut cnm_dropped = BTreeSet::new();
        for g in groups {
            if is_path_group(g.group_id) {
                if let Some(pg) = learn_path_group(g) {
                    for b in &pg.buckets {
                        plan.fabric_ports.extend(physical_outputs(b.actions.iter()));
                    }
                    plan.path_groups.insert(g.group_id, pg);
                }
                continue;
            }
            match learn_group(conv, g) {
                Ok(lg) => {
                    for b in &lg.buckets {
                        plan.fabric_ports.extend(physical_outputs(b.actions.iter()));
                    }
                    plan.groups.insert(g.group_id, lg);
                }
                Err(GroupSkip::NotOwned) => {}
                Err(why) => plan.skipped.push((g.group_id, why)),
            }
        }
        for f in flows.iter().filter(|f| f.cookie == conv.cookie) {
            plan.controller_flows += 1;
            plan.frozen |= is_freeze_marker(f);
            let actions = flow_actions(f);
            if f.table_id == conventions::table::CLASSIFY {
                if let Some(port) = f.r#match.in_port() {
                    match f.r#match.eth_type() {
                        Some(fabricflow_proto::ethernet::ethertype::CNM)
                            if actions.clone().next().is_some() =>
                        {
                            cnm_to_agent.insert(port);
                        }
                        Some(fabricflow_proto::ethernet::ethertype::CNM)
                            if f.instructions.is_empty() =>
                        {
                            cnm_dropped.insert(port);
                        }
                        None if f.r#match.fields.len() == 1
                            && f.instructions
                                .contains(&Instruction::GotoTable(conv.transit_table)) =>
                        {
                            to_transit.insert(port);
                        }
                        _ => {}
                    }
                }
            }
            if f.table_id == conv.transit_table && !matches_one_host(f) {
                plan.fabric_ports.extend(physical_outputs(actions.clone()));
            }
            if f.table_id == conv.transit_table {
                if let Some(r) = transit_route(f) {
                    plan.transit_routes.push(r);
                }
            }
            if f.table_id == conv.inject_table {
                let group = actions.clone().find_map(|a| match a {
                    Action::Group(id) => Some(*id),
                    _ => None,
                });
                let port = group
                    .and_then(|id| plan.groups.get(&id))
                    .map(|g| g.dp.minimal_port);
                if let (Some(port), Some(dest)) = (port, dest_group_of_match(f)) {
                    plan.minimal_port_by_dest_group.insert(dest, port);
                }
            }
        }
        plan.cnm_ports = cnm_to_agent.intersection(&to_transit).copied().collect();
        plan.cnm_interface_ports = cnm_dropped.intersection(&to_transit).copied().collect();
        // Stable: among equal priorities the reply's order (OVS: the installed order) stays.
        plan.transit_routes
            .sort_by_key(|r| std::cmp::Reverse(r.priority));
        // Second pass: the fabric ports are complete only now.
        for f in flows
            .iter()
            .filter(|f| f.cookie == conv.cookie && f.table_id == conv.inject_table)
        {
            let outputs = physical_outputs(flow_actions(f));
            let to_host = !outputs.is_empty() && outputs.iter().all(|p| !plan.is_fabric_port(*p));
            if let (true, Some(mac)) = (to_host, exact_eth_dst(f)) {
                plan.local_hosts.insert(mac);
            }
        }
        plan
    }

    /// Whether the plan has no decision point. An installed plan may legitimately have none:
    /// a switch without hosts whose every route is minimal (a fat-tree's top level) has nothing
    /// to adapt, yet forwards, classifies CNMs and is a congestion point.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Whether the controller's plan is on the switch: some flow carries the plan's cookie, or
    /// some decision point exists. `false` is a switch the controller has not programmed yet
    /// (it installs flows and groups together, in one atomic bundle, and never wipes a switch).
    pub fn is_installed(&self) -> bool {
        self.controller_flows > 0 || !self.groups.is_empty() || !self.path_groups.is_empty()
    }

    /// Whether `port` is a fabric port.
    pub fn is_fabric_port(&self, port: PortNo) -> bool {
        self.fabric_ports.contains(&port)
    }

    /// Whether a CNM arriving on `port` is taken: a fabric port, or one the plan's classify
    /// table hands CNMs to the agent from ([`cnm_ports`](Self::cnm_ports)).
    pub fn takes_cnm_from(&self, port: PortNo) -> bool {
        self.is_fabric_port(port)
            || self.cnm_ports.contains(&port)
            || self.cnm_interface_ports.contains(&port)
    }

    /// The port the transit table sends a frame for `dst` to (the highest-priority route by
    /// destination alone), if any.
    pub fn route_to(&self, dst: MacAddr) -> Option<PortNo> {
        self.transit_routes
            .iter()
            .find(|r| r.matches(dst))
            .map(|r| r.port)
    }

    /// The decision point whose minimal port is `port`, if any.
    pub fn group_of_port(&self, port: PortNo) -> Option<&LearnedGroup> {
        self.groups.values().find(|g| g.dp.minimal_port == port)
    }

    /// Whether `other` differs from `self` in anything but weights.
    pub fn same_structure(&self, other: &LearnedPlan) -> bool {
        self.is_installed() == other.is_installed()
            && self.fabric_ports == other.fabric_ports
            && self.cnm_ports == other.cnm_ports
            && self.cnm_interface_ports == other.cnm_interface_ports
            && self.minimal_port_by_dest_group == other.minimal_port_by_dest_group
            && self.groups.len() == other.groups.len()
            && self
                .groups
                .iter()
                .zip(&other.groups)
                .all(|((ia, a), (ib, b))| ia == ib && a.same_structure(b))
            && self.path_groups.len() == other.path_groups.len()
            && self
                .path_groups
                .iter()
                .zip(&other.path_groups)
                .all(|((ia, a), (ib, b))| ia == ib && a.same_structure(b))
    }

    /// Destination switch → its paths and multipath groups (one per destination host).
    pub fn path_pairs(&self) -> BTreeMap<DstSwitch, (u8, Vec<u32>)> {
        let mut out: BTreeMap<DstSwitch, (u8, Vec<u32>)> = BTreeMap::new();
        for (&id, g) in &self.path_groups {
            let e = out.entry(g.dst).or_insert((g.paths, Vec::new()));
            e.0 = e.0.min(g.paths);
            e.1.push(id);
        }
        out
    }
}

fn learn_group(conv: &PlanConventions, g: &GroupDesc) -> Result<LearnedGroup, GroupSkip> {
    if !conv.owns_group(g.group_id) {
        return Err(GroupSkip::NotOwned);
    }
    if g.group_type != GroupType::Select {
        return Err(GroupSkip::NotSelect);
    }
    let slots = SlotGroup::parse(&g.buckets).map_err(|_| GroupSkip::BadSlots)?;
    let logical = slots.as_ref().map(SlotGroup::logical);
    let buckets = logical.as_deref().unwrap_or(&g.buckets);
    let minimal_port = buckets
        .first()
        .and_then(Bucket::output_port)
        .filter(|&p| p != 0 && p <= OFPP_MAX)
        .ok_or(GroupSkip::NoMinimalPort)?;
    let equal_cost = conv.is_equal_cost(g.group_id);
    let dp = DecisionPoint::from_bucket_count(g.group_id, minimal_port, buckets.len(), equal_cost)
        .map_err(|_| GroupSkip::TooFewBuckets)?;
    Ok(LearnedGroup {
        dp,
        buckets: buckets.to_vec(),
        slots,
    })
}

/// `f` as a [`TransitRoute`]: its match is `eth_dst` alone and its actions output to exactly one
/// physical port.
fn transit_route(f: &FlowStats) -> Option<TransitRoute> {
    let [OxmField::EthDst { value, mask }] = f.r#match.fields.as_slice() else {
        return None;
    };
    let [port] = physical_outputs(flow_actions(f))[..] else {
        return None;
    };
    Some(TransitRoute {
        priority: f.priority,
        value: *value,
        mask: mask.unwrap_or(MacAddr([0xff; 6])),
        port,
    })
}

/// Whether `f` is the controller's freeze marker (its match holds the marker's metadata).
fn is_freeze_marker(f: &FlowStats) -> bool {
    f.r#match.fields.iter().any(|field| {
        matches!(field, OxmField::Metadata { value, mask }
            if *value == conventions::FREEZE_MARKER_METADATA && mask.is_none_or(|m| m == u64::MAX))
    })
}

/// The destination of a flow matching one host (`eth_dst` unmasked or with an all-ones mask).
fn exact_eth_dst(f: &FlowStats) -> Option<MacAddr> {
    f.r#match.fields.iter().find_map(|field| match field {
        OxmField::EthDst { value, mask } if mask.is_none_or(|m| m.0 == [0xff; 6]) => Some(*value),
        _ => None,
    })
}

/// Whether `f` matches one host: its `eth_dst` match covers the host byte (exact, or a
/// multipath plan's egress rule that wildcards only the path tag).
fn matches_one_host(f: &FlowStats) -> bool {
    f.r#match.fields.iter().any(|field| match field {
        OxmField::EthDst { mask, .. } => mask.is_none_or(|m| m.0[5] == 0xff),
        _ => false,
    })
}

/// The actions of a flow's apply- and write-actions instructions.
fn flow_actions(f: &FlowStats) -> impl Iterator<Item = &Action> + Clone {
    f.instructions.iter().flat_map(|i| match i {
        Instruction::ApplyActions(a) | Instruction::WriteActions(a) => a.as_slice(),
        _ => &[],
    })
}

/// Output actions to physical ports (reserved ports such as CONTROLLER or TABLE excluded).
fn physical_outputs<'a>(actions: impl Iterator<Item = &'a Action>) -> Vec<PortNo> {
    actions
        .filter_map(|a| match a {
            Action::Output { port, .. } if *port != 0 && *port <= OFPP_MAX => Some(*port),
            _ => None,
        })
        .collect()
}

/// The destination group of an inject rule: bytes 2–3 of its (masked) `eth_dst` in the
/// `02:00:GG:GG:SS:HH` plan.
fn dest_group_of_match(f: &FlowStats) -> Option<u16> {
    f.r#match.fields.iter().find_map(|field| match field {
        OxmField::EthDst { value, .. } => host_group(*value),
        _ => None,
    })
}

/// The group of a host MAC in the hierarchical plan (`02:00:GG:GG:SS:HH`), `None` for any other
/// address.
pub fn host_group(mac: MacAddr) -> Option<u16> {
    let [a, b, g0, g1, _, _] = mac.0;
    (a == 0x02 && b == 0x00).then_some(u16::from_be_bytes([g0, g1]))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use fabricflow_proto::openflow::oxm::Match;

    fn out(port: u32) -> Vec<Action> {
        vec![Action::Output { port, max_len: 0 }]
    }

    pub(crate) fn select(id: u32, ports: &[(u32, u16)]) -> GroupDesc {
        GroupDesc {
            group_type: GroupType::Select,
            group_id: id,
            buckets: ports.iter().map(|&(p, w)| Bucket::new(w, out(p))).collect(),
        }
    }

    /// A plan flow as a FLOW_STATS dump shows it (shared by the agent's tests).
    pub(crate) fn flow(table: u8, cookie: u64, m: Match, actions: Vec<Action>) -> FlowStats {
        FlowStats {
            table_id: table,
            duration_sec: 0,
            duration_nsec: 0,
            priority: 100,
            idle_timeout: 0,
            hard_timeout: 0,
            flags: 0,
            cookie,
            packet_count: 0,
            byte_count: 0,
            r#match: m,
            instructions: vec![Instruction::ApplyActions(actions)],
        }
    }

    #[test]
    fn learns_decision_points_from_a_group_desc_reply() {
        let conv = PlanConventions::default();
        let groups = vec![
            select(1003, &[(3, 255), (4, 0), (3, 1)]),
            select(1005, &[(5, 200), (6, 28), (7, 27), (5, 1)]),
            // Equal-cost (upper half of the range): a fat-tree leaf's up port 11.
            select(1000 + 32_768 + 11, &[(11, 128), (12, 127), (11, 1)]),
            // Not owned (below the base), not select, too few buckets, no output.
            select(7, &[(1, 1), (2, 1)]),
            GroupDesc {
                group_type: GroupType::All,
                group_id: 1009,
                buckets: vec![Bucket::new(0, out(9))],
            },
            select(1010, &[(10, 256)]),
            GroupDesc {
                group_type: GroupType::Select,
                group_id: 1011,
                buckets: vec![
                    Bucket::new(1, vec![Action::Group(3)]),
                    Bucket::new(1, out(1)),
                ],
            },
        ];
        let cookie = conv.cookie;
        let flows = vec![
            flow(
                2,
                cookie,
                Match::new().with(OxmField::EthDst {
                    value: "02:00:00:07:00:00".parse().unwrap(),
                    mask: Some("ff:ff:ff:ff:00:00".parse().unwrap()),
                }),
                out(8),
            ),
            // Another cookie: ignored.
            flow(2, 1, Match::new(), out(20)),
            flow(
                1,
                cookie,
                Match::new().with(OxmField::EthDst {
                    value: "02:00:00:07:00:00".parse().unwrap(),
                    mask: Some("ff:ff:ff:ff:00:00".parse().unwrap()),
                }),
                vec![Action::Group(1005)],
            ),
        ];
        let plan = LearnedPlan::learn(&conv, &groups, &flows);
        assert_eq!(plan.groups.len(), 3);
        let ec = &plan.groups[&(1000 + 32_768 + 11)].dp;
        assert!(ec.equal_cost && ec.minimal_port == 11 && ec.n_nonminimal == 1);
        assert!(!plan.groups[&1003].dp.equal_cost);
        let g = &plan.groups[&1005];
        assert_eq!(
            g.dp,
            DecisionPoint {
                group_id: 1005,
                minimal_port: 5,
                n_nonminimal: 2,
                equal_cost: false,
            }
        );
        assert_eq!(g.weights(), vec![200, 28, 27, 1]);
        assert_eq!(
            plan.fabric_ports.iter().copied().collect::<Vec<_>>(),
            vec![3, 4, 5, 6, 7, 8, 11, 12]
        );
        assert_eq!(plan.minimal_port_by_dest_group.get(&7), Some(&5));
        assert_eq!(
            plan.skipped,
            vec![
                (1009, GroupSkip::NotSelect),
                (1010, GroupSkip::TooFewBuckets),
                (1011, GroupSkip::NoMinimalPort)
            ]
        );
        assert!(plan.is_fabric_port(8) && !plan.is_fabric_port(1));
        assert_eq!(plan.group_of_port(3).map(|g| g.dp.group_id), Some(1003));
    }

    #[test]
    fn the_freeze_marker_is_recognised_only_with_the_plan_cookie_and_its_value() {
        let conv = PlanConventions::default();
        let marker = |cookie, value| {
            flow(
                0,
                cookie,
                Match::new().with(OxmField::Metadata { value, mask: None }),
                vec![],
            )
        };
        let m = conventions::FREEZE_MARKER_METADATA;
        assert!(LearnedPlan::learn(&conv, &[], &[marker(conv.cookie, m)]).frozen);
        assert!(!LearnedPlan::learn(&conv, &[], &[marker(conv.cookie, m + 1)]).frozen);
        assert!(!LearnedPlan::learn(&conv, &[], &[marker(7, m)]).frozen);
        assert!(!LearnedPlan::learn(&conv, &[], &[]).frozen);
    }

    #[test]
    fn transit_routes_pick_the_highest_priority_match_on_the_destination_alone() {
        let conv = PlanConventions::default();
        let dst = |v: &str, m: Option<&str>| {
            Match::new().with(OxmField::EthDst {
                value: v.parse().unwrap(),
                mask: m.map(|m| m.parse().unwrap()),
            })
        };
        let at = |prio: u16, m: Match, actions: Vec<Action>| {
            let mut f = flow(2, conv.cookie, m, actions);
            f.priority = prio;
            f
        };
        let group = Some("ff:ff:ff:ff:00:00");
        let flows = vec![
            at(100, dst("02:00:00:07:00:00", group), out(5)),
            at(
                200,
                dst("02:00:00:07:01:00", Some("ff:ff:ff:ff:ff:00")),
                out(6),
            ),
            // A divert (in_port too), two outputs, the inject table: no route.
            at(
                300,
                dst("02:00:00:07:00:00", group).with(OxmField::InPort(9)),
                out(7),
            ),
            at(
                300,
                dst("02:00:00:08:00:00", group),
                [out(1), out(2)].concat(),
            ),
            flow(1, conv.cookie, dst("02:00:00:09:00:00", group), out(3)),
        ];
        let plan = LearnedPlan::learn(&conv, &[], &flows);
        let route = |m: &str| plan.route_to(m.parse().unwrap());
        assert_eq!(route("02:00:00:07:01:04"), Some(6));
        assert_eq!(route("02:00:00:07:02:04"), Some(5));
        assert_eq!(route("02:00:00:08:00:01"), None);
        assert_eq!(route("02:00:00:09:00:01"), None);
        assert_eq!(plan.transit_routes.len(), 2);
    }

    #[test]
    fn cnm_rules_that_drop_at_classify_are_the_agents_interface_ports() {
        let conv = PlanConventions::default();
        let classify = |port: u32, cnm: bool, instructions: Vec<Instruction>| {
            let mut m = Match::new().with(OxmField::InPort(port));
            if cnm {
                m = m.with(OxmField::EthType(
                    fabricflow_proto::ethernet::ethertype::CNM,
                ));
            }
            let mut f = flow(0, conv.cookie, m, vec![]);
            f.instructions = instructions;
            f
        };
        let to_transit = vec![Instruction::GotoTable(conv.transit_table)];
        let flows = vec![
            // Fabric port 4: CNMs dropped, the rest to transit.
            classify(4, true, vec![]),
            classify(4, false, to_transit.clone()),
            // Host port 1: CNMs dropped, the rest to inject.
            classify(1, true, vec![]),
            classify(1, false, vec![Instruction::GotoTable(conv.inject_table)]),
            // Fabric port 5: CNMs to the agent.
            classify(
                5,
                true,
                vec![Instruction::ApplyActions(vec![Action::Output {
                    port: fabricflow_proto::openflow::port::OFPP_CONTROLLER,
                    max_len: 0xffff,
                }])],
            ),
            classify(5, false, to_transit),
        ];
        let plan = LearnedPlan::learn(&conv, &[], &flows);
        assert_eq!(plan.cnm_interface_ports, [4].into());
        assert_eq!(plan.cnm_ports, [5].into());
        assert!(plan.takes_cnm_from(4) && plan.takes_cnm_from(5) && !plan.takes_cnm_from(1));
    }

    #[test]
    fn structure_ignores_weights() {
        let conv = PlanConventions::default();
        let a = LearnedPlan::learn(&conv, &[select(1003, &[(3, 255), (4, 0), (3, 1)])], &[]);
        let b = LearnedPlan::learn(&conv, &[select(1003, &[(3, 100), (4, 155), (3, 1)])], &[]);
        let c = LearnedPlan::learn(&conv, &[select(1003, &[(3, 100), (5, 155), (3, 1)])], &[]);
        assert!(a.same_structure(&b));
        assert!(!a.same_structure(&c));
        let mut lg = a.groups[&1003].clone();
        let buckets = lg.write(&[10, 245, 1]).unwrap();
        assert_eq!(buckets[1].actions, out(4));
        assert_eq!(buckets[1].weight, 245);
        assert_eq!(lg.weights(), vec![10, 245, 1]);
    }

    /// A slotted group as installed: learned as its logical buckets, weighed by slot counts;
    /// another slot assignment is the same structure, the weighted layout is not; a write moves
    /// only the slots it must and the minimal port's bytes are its slots' bytes.
    #[test]
    fn slotted_groups_are_learned_as_their_logical_buckets() {
        let conv = PlanConventions::default();
        let logical = select(1003, &[(3, 250), (4, 5), (5, 0), (3, 1)]).buckets;
        let slotted = |w: &[u16]| {
            let mut s = SlotGroup::from_logical(&logical).unwrap();
            s.set_weights(w).unwrap();
            GroupDesc {
                group_type: GroupType::Select,
                group_id: 1003,
                buckets: s.buckets(),
            }
        };
        let a = LearnedPlan::learn(&conv, &[slotted(&[250, 5, 0, 1])], &[]);
        let g = &a.groups[&1003];
        assert_eq!(g.dp.minimal_port, 3);
        assert_eq!(g.dp.n_nonminimal, 2);
        assert_eq!(g.weights(), vec![250, 5, 0, 1]);
        assert_eq!(g.candidate_ports(), vec![4, 5]);
        assert_eq!(a.fabric_ports, [3, 4, 5].into());
        let b = LearnedPlan::learn(&conv, &[slotted(&[100, 100, 55, 1])], &[]);
        assert!(a.same_structure(&b));
        let weighted = LearnedPlan::learn(
            &conv,
            &[select(1003, &[(3, 250), (4, 5), (5, 0), (3, 1)])],
            &[],
        );
        assert!(!a.same_structure(&weighted));

        let mut g = g.clone();
        let before = g.slots.clone().unwrap();
        let buckets = g.write(&[245, 7, 3, 1]).unwrap();
        let moved = before
            .buckets()
            .iter()
            .zip(&buckets)
            .filter(|(x, y)| x != y)
            .count();
        assert_eq!(moved, 5);
        assert_eq!(g.weights(), vec![245, 7, 3, 1]);
        let counters: Vec<BucketCounter> = buckets
            .iter()
            .map(|b| BucketCounter {
                packet_count: 1,
                byte_count: if b.output_port() == Some(3) { 10 } else { 1 },
            })
            .collect();
        // 246 slots on port 3 at 10 bytes; the catalog's bucket 0 (weight 0) is not counted.
        assert_eq!(g.minimal_bytes(&counters), Some(2460));

        let mut bad = slotted(&[250, 5, 0, 1]);
        if let Some(last) = bad.buckets.last_mut() {
            *last = Bucket::new(1, out(9));
        }
        let skipped = LearnedPlan::learn(&conv, &[bad], &[]);
        assert!(skipped.groups.is_empty());
        assert_eq!(skipped.skipped, vec![(1003, GroupSkip::BadSlots)]);
    }

    #[test]
    fn host_groups() {
        assert_eq!(
            host_group("02:00:01:02:03:04".parse().unwrap()),
            Some(0x0102)
        );
        assert_eq!(host_group("52:54:00:00:00:01".parse().unwrap()), None);
    }
}
