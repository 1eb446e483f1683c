//! The bridge between the pure plan and the runtime: [`FabricPlanner`] implements
//! [`PlanSource`] by planning the fabric around the failed links and converting the plan IR into
//! the OpenFlow messages the switches must hold.
//!
//! The encoding is chosen so that what Open vSwitch reports back in a dump is byte-identical to
//! what was sent; otherwise every resync would see a difference and resend it:
//! - an all-ones mask is sent as no mask (OVS drops it), and masked values are pre-masked;
//! - `move` is Nicira `NXAST_REG_MOVE` with NXM field headers, exactly as `ovs-ofctl` writes it
//!   and OVS dumps it for OpenFlow 1.3 (see `proto/tests/golden/ovs-3.1`);
//! - `controller(id=…)` is `NXAST_CONTROLLER` with max_len 0xffff and reason OFPR_ACTION;
//! - instructions are written in the order OVS dumps them: apply, write, goto.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::sync::Mutex;

use fabricflow_proto::conventions::is_path_group;
use fabricflow_proto::openflow::action::Action as OfAction;
use fabricflow_proto::openflow::flow::FlowMod;
use fabricflow_proto::openflow::group::{Bucket as OfBucket, GroupMod, GroupType as OfGroupType};
use fabricflow_proto::openflow::instruction::Instruction;
use fabricflow_proto::openflow::oxm::{Match as OfMatch, OxmField};
use fabricflow_proto::openflow::{port::OFPP_ANY, NX_VENDOR_ID};
use fabricflow_proto::select_slots::SlotGroup;
use fabricflow_proto::MacAddr;

use crate::desired::{self, DesiredSwitch, LinkId, PlanSource};
use crate::plan::ir::{self, Field, FieldRange, GroupType, Masked};
use crate::plan::{Plan, PlanError, PlanOptions, SelectLayout, SwitchPlan};
use crate::topology::{Fabric, Link, Peer, SwitchId};
use crate::Routes;

/// Why a plan could not become OpenFlow messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlannerError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The IR holds an action this encoder has no wire form for.
    #[error("switch {switch}: cannot encode {what}")]
    Unsupported { switch: String, what: String },
}

/// Plans a fabric and hands each switch its desired OpenFlow state.
#[derive(Debug)]
pub struct FabricPlanner {
    fabric: Fabric,
    opts: PlanOptions,
    /// The last plan that converted cleanly: returned if a later plan fails (it should not:
    /// [`FabricPlanner::new`] proves the fabric plans), because an empty answer would make the
    /// runtime delete every rule.
    last_good: Mutex<BTreeMap<u64, DesiredSwitch>>,
}

impl FabricPlanner {
    /// Plans once with no failed links to prove the fabric and options are sound.
    pub fn new(fabric: Fabric, opts: PlanOptions) -> Result<Self, PlannerError> {
        let first = desired_state(&fabric, &opts, &BTreeSet::new())?;
        Ok(FabricPlanner {
            fabric,
            opts,
            last_good: Mutex::new(first),
        })
    }

    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// Fabric links named by datapath ids → the model's links (unknown ones are ignored: a
    /// miswired or foreign link cannot be routed around by name).
    fn model_links(&self, failed: &BTreeSet<LinkId>) -> BTreeSet<Link> {
        failed
            .iter()
            .filter_map(|l| {
                let a = self.fabric.switch_by_dpid(l.a.dpid)?;
                let b = self.fabric.switch_by_dpid(l.b.dpid)?;
                let link = self.fabric.link_at(a, l.a.port)?;
                (self.fabric.link_at(b, l.b.port) == Some(link)).then_some(link)
            })
            .collect()
    }
}

impl PlanSource for FabricPlanner {
    fn plan(&self, failed_links: &BTreeSet<LinkId>) -> BTreeMap<u64, DesiredSwitch> {
        let failed = self.model_links(failed_links);
        let mut last = self.last_good.lock().unwrap_or_else(|e| e.into_inner());
        match desired_state(&self.fabric, &self.opts, &failed) {
            Ok(state) => {
                *last = state.clone();
                state
            }
            Err(e) => {
                tracing::error!(error = %e, "re-plan failed; keeping the previous plan");
                last.clone()
            }
        }
    }

    fn check(
        &self,
        failed_links: &BTreeSet<LinkId>,
        drained: &BTreeSet<u64>,
    ) -> Result<(), String> {
        let failed = self.model_links(failed_links);
        let drained: BTreeSet<SwitchId> = drained
            .iter()
            .filter_map(|&d| self.fabric.switch_by_dpid(d))
            .collect();
        if let Some((a, b)) = partitioned(&self.fabric, &failed, &drained) {
            let name = |s: SwitchId| self.fabric.switch(s).map_or("?", |x| x.name.as_str());
            return Err(format!(
                "hosts on {} and {} would have no path",
                name(a),
                name(b)
            ));
        }
        desired_state(&self.fabric, &self.opts, &failed)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn links(&self) -> Vec<LinkId> {
        self.fabric
            .links()
            .into_iter()
            .filter_map(|l| Some(LinkId::new(self.endpoint(l.a())?, self.endpoint(l.b())?)))
            .collect()
    }
}

impl FabricPlanner {
    fn endpoint(&self, e: crate::topology::LinkEnd) -> Option<desired::Endpoint> {
        Some(desired::Endpoint {
            dpid: self.fabric.switch(e.switch)?.dpid,
            port: e.port,
        })
    }
}

/// Two switches with hosts, neither in `ignore`, that no path joins once `failed` is out of
/// service, if any (the planner plans a partitioned fabric without complaint: its routes simply
/// end).
fn partitioned(
    fabric: &Fabric,
    failed: &BTreeSet<Link>,
    ignore: &BTreeSet<SwitchId>,
) -> Option<(SwitchId, SwitchId)> {
    let routes = Routes::compute(fabric, failed);
    let mut with_hosts = fabric
        .hosts()
        .iter()
        .map(|h| h.switch)
        .filter(|s| !ignore.contains(s));
    let first = with_hosts.next()?;
    with_hosts
        .find(|&s| s != first && routes.hops(first, s).is_none())
        .map(|s| (first, s))
}

/// Every switch's desired OpenFlow state with `failed` links out of service.
pub fn desired_state(
    fabric: &Fabric,
    opts: &PlanOptions,
    failed: &BTreeSet<Link>,
) -> Result<BTreeMap<u64, DesiredSwitch>, PlannerError> {
    let opts = PlanOptions {
        failed: failed.clone(),
        ..opts.clone()
    };
    let plan = Plan::build(fabric, &opts)?;
    let mut out = BTreeMap::new();
    for (id, sw) in fabric.switches().iter().enumerate() {
        let Some(sp) = plan.switch(id) else { continue };
        let mut d = to_desired(sp, opts.select_layout)?;
        for port in sw.fabric_ports() {
            if let Peer::Switch { switch, port: pp } = port.peer {
                if let Some(peer) = fabric.switch(switch) {
                    d.fabric_ports.insert(
                        port.no,
                        desired::Endpoint {
                            dpid: peer.dpid,
                            port: pp,
                        },
                    );
                }
            }
        }
        out.insert(sw.dpid, d);
    }
    Ok(out)
}

/// One switch's plan as OpenFlow messages (fabric ports left empty for the caller), its decision
/// points in `layout`.
pub fn to_desired(sp: &SwitchPlan, layout: SelectLayout) -> Result<DesiredSwitch, PlannerError> {
    let unsupported = |what: String| PlannerError::Unsupported {
        switch: sp.name.clone(),
        what,
    };
    let flows = sp
        .flows
        .iter()
        .map(|f| flow_mod(f).map_err(&unsupported))
        .collect::<Result<Vec<_>, _>>()?;
    let groups = sp
        .groups
        .iter()
        .map(|g| group_mod(g, layout).map_err(&unsupported))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(DesiredSwitch {
        dpid: sp.dpid,
        name: sp.name.clone(),
        flows,
        groups,
        fabric_ports: BTreeMap::new(),
    })
}

/// A planned flow as an OFPFC_ADD.
pub fn flow_mod(f: &ir::Flow) -> Result<FlowMod, String> {
    let i = &f.instructions;
    let mut instructions = Vec::new();
    if !i.apply.is_empty() {
        instructions.push(Instruction::ApplyActions(actions(&i.apply)?));
    }
    if !i.write.is_empty() {
        instructions.push(Instruction::WriteActions(actions(&i.write)?));
    }
    if let Some(t) = i.goto_table {
        instructions.push(Instruction::GotoTable(t));
    }
    Ok(FlowMod::add(f.table, f.priority, of_match(&f.matches), instructions).with_cookie(f.cookie))
}

/// A planned group as an OFPGC_ADD; a decision point (a SELECT group outside the multipath
/// range) in `layout`.
pub fn group_mod(g: &ir::Group, layout: SelectLayout) -> Result<GroupMod, String> {
    let kind = of_group_type(g.kind);
    if let Some(slotted) = slotted(g, layout)? {
        return Ok(GroupMod::add(kind, g.id, slotted.buckets()));
    }
    Ok(GroupMod::add(kind, g.id, of_buckets(g)?))
}

/// `g` in the slotted layout, or `None` where `layout` installs it as planned (the weighted
/// layout, or not a decision point). The one conversion both the installed GROUP_MODs and the
/// `ovs-ofctl` text ([`crate::ofctl::group_line`]) use.
pub fn slotted(g: &ir::Group, layout: SelectLayout) -> Result<Option<SlotGroup>, String> {
    if layout != SelectLayout::Slots || g.kind != GroupType::Select || is_path_group(g.id) {
        return Ok(None);
    }
    SlotGroup::from_logical(&of_buckets(g)?)
        .map(Some)
        .map_err(|e| format!("group {} in the slotted layout: {e}", g.id))
}

fn of_group_type(kind: GroupType) -> OfGroupType {
    match kind {
        GroupType::All => OfGroupType::All,
        GroupType::Select => OfGroupType::Select,
        GroupType::Indirect => OfGroupType::Indirect,
        GroupType::FastFailover => OfGroupType::FastFailover,
    }
}

fn of_buckets(g: &ir::Group) -> Result<Vec<OfBucket>, String> {
    g.buckets
        .iter()
        .map(|b| {
            let mut out = OfBucket::new(b.weight, actions(&b.actions)?);
            out.watch_port = b.watch_port.unwrap_or(OFPP_ANY);
            Ok(out)
        })
        .collect()
}

fn mask_mac(m: Masked<MacAddr>) -> (MacAddr, Option<MacAddr>) {
    if m.mask == MacAddr::BROADCAST {
        return (m.value, None);
    }
    let mut v = m.value.octets();
    for (b, k) in v.iter_mut().zip(m.mask.octets()) {
        *b &= k;
    }
    (MacAddr(v), Some(m.mask))
}

fn mask_ip(m: Masked<Ipv4Addr>) -> (Ipv4Addr, Option<Ipv4Addr>) {
    if m.mask == Ipv4Addr::BROADCAST {
        return (m.value, None);
    }
    let v = u32::from(m.value) & u32::from(m.mask);
    (Ipv4Addr::from(v), Some(m.mask))
}

fn of_match(m: &ir::Match) -> OfMatch {
    let mut out = OfMatch::new();
    if let Some(p) = m.in_port {
        out.push(OxmField::InPort(p));
    }
    if let Some(d) = m.eth_dst {
        let (value, mask) = mask_mac(d);
        out.push(OxmField::EthDst { value, mask });
    }
    if let Some(d) = m.eth_src {
        let (value, mask) = mask_mac(d);
        out.push(OxmField::EthSrc { value, mask });
    }
    if let Some(t) = m.eth_type {
        out.push(OxmField::EthType(t));
    }
    if let Some(v) = m.vlan_vid {
        let mask = (v.mask != 0x1fff).then_some(v.mask);
        out.push(OxmField::VlanVid {
            value: v.value & v.mask,
            mask,
        });
    }
    if let Some(p) = m.vlan_pcp {
        out.push(OxmField::VlanPcp(p));
    }
    if let Some(op) = m.arp_op {
        out.push(OxmField::ArpOp(op));
    }
    if let Some(t) = m.arp_tpa {
        let (value, mask) = mask_ip(t);
        out.push(OxmField::ArpTpa { value, mask });
    }
    out
}

fn actions(list: &[ir::Action]) -> Result<Vec<OfAction>, String> {
    list.iter().map(action).collect()
}

/// `max_len` for output to the controller: the whole packet (OFPCML_NO_BUFFER).
const NO_BUFFER: u16 = 0xffff;

fn action(a: &ir::Action) -> Result<OfAction, String> {
    Ok(match *a {
        ir::Action::Output(port) if port == ir::ports::CONTROLLER => OfAction::Output {
            port,
            max_len: NO_BUFFER,
        },
        ir::Action::Output(port) => OfAction::output(port),
        ir::Action::Group(id) => OfAction::group(id),
        ir::Action::SetField { field, value } => OfAction::SetField(set_field(field, value)?),
        ir::Action::PushVlan(tpid) => OfAction::PushVlan(tpid),
        ir::Action::PopVlan => OfAction::PopVlan,
        ir::Action::NxController { id } => OfAction::nx_controller(id, NO_BUFFER),
        ir::Action::Move { src, dst } => reg_move(src, dst)?,
    })
}

fn mac_of(value: u64) -> MacAddr {
    MacAddr::from_u64(value)
}

fn set_field(field: Field, value: u64) -> Result<OxmField, String> {
    // Truncating casts are intended: `value` holds the field right-aligned and the planner never
    // sets bits above the field's width.
    Ok(match field {
        Field::EthSrc => OxmField::EthSrc {
            value: mac_of(value),
            mask: None,
        },
        Field::EthDst => OxmField::EthDst {
            value: mac_of(value),
            mask: None,
        },
        Field::VlanVid => OxmField::VlanVid {
            value: (value & 0x1fff) as u16,
            mask: None,
        },
        Field::VlanPcp => OxmField::VlanPcp((value & 0x7) as u8),
        Field::IpDscp => OxmField::IpDscp((value & 0x3f) as u8),
        Field::ArpOp => OxmField::ArpOp((value & 0xffff) as u16),
        Field::ArpSpa => OxmField::ArpSpa {
            value: Ipv4Addr::from((value & 0xffff_ffff) as u32),
            mask: None,
        },
        Field::ArpTpa => OxmField::ArpTpa {
            value: Ipv4Addr::from((value & 0xffff_ffff) as u32),
            mask: None,
        },
        Field::ArpSha => OxmField::ArpSha {
            value: mac_of(value),
            mask: None,
        },
        Field::ArpTha => OxmField::ArpTha {
            value: mac_of(value),
            mask: None,
        },
        Field::Reg(n) => return Err(format!("set_field on reg{n} (no OXM basic field)")),
    })
}

/// NXM header (class, field, length) of a field, as `NXAST_REG_MOVE` carries it.
fn nxm_header(field: Field) -> Result<u32, String> {
    let (class, field_no, len): (u32, u32, u32) = match field {
        Field::EthDst => (0, 1, 6),
        Field::EthSrc => (0, 2, 6),
        Field::ArpOp => (0, 15, 2),
        Field::ArpSpa => (0, 16, 4),
        Field::ArpTpa => (0, 17, 4),
        Field::ArpSha => (1, 17, 6),
        Field::ArpTha => (1, 18, 6),
        Field::Reg(n) if n < 8 => (1, u32::from(n), 4),
        other => return Err(format!("move of {other:?}")),
    };
    Ok((class << 16) | (field_no << 9) | len)
}

/// Nicira `NXAST_REG_MOVE` (subtype 6): n_bits, src_ofs, dst_ofs, src header, dst header.
fn reg_move(src: FieldRange, dst: FieldRange) -> Result<OfAction, String> {
    const NXAST_REG_MOVE: u16 = 6;
    let mut data = Vec::with_capacity(16);
    data.extend_from_slice(&NXAST_REG_MOVE.to_be_bytes());
    data.extend_from_slice(&u16::from(dst.n_bits).to_be_bytes());
    data.extend_from_slice(&u16::from(src.ofs).to_be_bytes());
    data.extend_from_slice(&u16::from(dst.ofs).to_be_bytes());
    data.extend_from_slice(&nxm_header(src.field)?.to_be_bytes());
    data.extend_from_slice(&nxm_header(dst.field)?.to_be_bytes());
    Ok(OfAction::Experimenter {
        experimenter: NX_VENDOR_ID,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TopologySpec;
    use fabricflow_proto::openflow::message::Message;

    fn planner(spec: &str) -> FabricPlanner {
        let fabric = spec.parse::<TopologySpec>().unwrap().build().unwrap();
        FabricPlanner::new(fabric, PlanOptions::default()).unwrap()
    }

    #[test]
    fn reg_move_matches_ovs_ofctl_bytes() {
        // `move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[]` as captured from ovs-ofctl 3.1
        // (proto/tests/golden/ovs-3.1/bundle-add-flows-c2s-3.bin).
        let a = reg_move(
            FieldRange::whole(Field::EthSrc),
            FieldRange::whole(Field::EthDst),
        )
        .unwrap();
        assert_eq!(
            a,
            OfAction::Experimenter {
                experimenter: NX_VENDOR_ID,
                data: vec![0, 6, 0, 48, 0, 0, 0, 0, 0, 0, 4, 6, 0, 0, 2, 6]
            }
        );
        let a = reg_move(
            FieldRange::whole(Field::ArpSha),
            FieldRange::whole(Field::ArpTha),
        )
        .unwrap();
        let OfAction::Experimenter { data, .. } = a else {
            panic!()
        };
        assert_eq!(data, [0, 6, 0, 48, 0, 0, 0, 0, 0, 1, 34, 6, 0, 1, 36, 6]);
    }

    #[test]
    fn every_dragonfly_rule_encodes_and_round_trips() {
        let p = planner("dragonfly:p=2,a=4,h=2");
        let state = p.plan(&BTreeSet::new());
        assert_eq!(state.len(), 36);
        for d in state.values() {
            assert!(!d.flows.is_empty() && !d.groups.is_empty(), "{}", d.name);
            // Every switch of a (2,4,2) Dragonfly has 3 local + 2 global fabric ports.
            assert_eq!(d.fabric_ports.len(), 5, "{}", d.name);
            for f in &d.flows {
                let m = Message::flow_mod(1, f.clone());
                assert_eq!(Message::decode(&m.to_bytes()).unwrap(), m);
                assert_eq!(f.cookie, crate::plan::DEFAULT_COOKIE);
            }
            for g in &d.groups {
                let m = Message::group_mod(1, g.clone());
                assert_eq!(Message::decode(&m.to_bytes()).unwrap(), m);
                // Decision points in the default (slotted) layout: every slot on the minimal port.
                let slots = SlotGroup::parse(&g.buckets).unwrap().unwrap();
                let w = slots.logical_weights();
                assert_eq!(w.iter().map(|&x| u32::from(x)).sum::<u32>(), 256);
                assert_eq!(w.first(), Some(&255));
                assert_eq!(w.last(), Some(&1));
            }
        }
        // Links are named by datapath id, each once.
        assert_eq!(p.links().len(), 9 * 6 + 36);
    }

    #[test]
    fn failed_link_replans_only_around_it() {
        let p = planner("dragonfly:p=1,a=2,h=1");
        let before = p.plan(&BTreeSet::new());
        let link = p.links()[0];
        let after = p.plan(&BTreeSet::from([link]));
        let changed: Vec<_> = before
            .iter()
            .filter(|(k, v)| after.get(k).map(|a| &a.flows) != Some(&v.flows))
            .map(|(k, _)| *k)
            .collect();
        assert!(!changed.is_empty(), "a failed link must change some switch");
        // An unknown link changes nothing.
        let bogus = LinkId::new(
            desired::Endpoint { dpid: 1, port: 1 },
            desired::Endpoint { dpid: 2, port: 2 },
        );
        let same = p.plan(&BTreeSet::from([bogus]));
        assert!(same
            .iter()
            .all(|(k, v)| before.get(k).map(|b| &b.flows) == Some(&v.flows)));
    }

    /// A failed set that partitions the hosts is reported by `check` (an operator's drain is
    /// refused on it); `plan` would plan it without complaint.
    #[test]
    fn check_reports_an_unplannable_failed_set() {
        let p = planner("dragonfly:p=1,a=2,h=1");
        let links = p.links();
        let none = BTreeSet::new();
        assert_eq!(p.check(&BTreeSet::new(), &none), Ok(()));
        assert_eq!(p.check(&BTreeSet::from([links[0]]), &none), Ok(()));
        let all: BTreeSet<_> = links.iter().copied().collect();
        let err = p.check(&all, &none).unwrap_err();
        assert!(err.contains("no path"), "{err}");
        // Every link of one switch: its hosts are cut off, refused for a link drain, fine when
        // the switch itself is drained.
        let dpid = links[0].a.dpid;
        let its: BTreeSet<_> = links
            .iter()
            .filter(|l| l.a.dpid == dpid || l.b.dpid == dpid)
            .copied()
            .collect();
        assert!(p.check(&its, &none).is_err());
        assert_eq!(p.check(&its, &BTreeSet::from([dpid])), Ok(()));
    }

    #[test]
    fn masks_are_normalised() {
        let m = of_match(&ir::Match {
            eth_dst: Some(Masked {
                value: "02:00:00:01:05:07".parse().unwrap(),
                mask: "ff:ff:ff:ff:00:00".parse().unwrap(),
            }),
            arp_tpa: Some(Masked {
                value: Ipv4Addr::new(10, 1, 2, 3),
                mask: Ipv4Addr::BROADCAST,
            }),
            ..Default::default()
        });
        assert_eq!(
            m.fields,
            vec![
                OxmField::EthDst {
                    value: "02:00:00:01:00:00".parse().unwrap(),
                    mask: Some("ff:ff:ff:ff:00:00".parse().unwrap())
                },
                OxmField::ArpTpa {
                    value: Ipv4Addr::new(10, 1, 2, 3),
                    mask: None
                },
            ]
        );
    }
}
