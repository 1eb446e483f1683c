//! An in-memory OpenFlow 1.3 pipeline that executes a [`Plan`], in the spirit of Faucet's
//! `fakeoftable`: tests ask "does this packet reach that host, and how?" instead of comparing
//! rule text.
//!
//! Supported: tables with priorities and masked matches on the plan's fields, `goto_table`,
//! apply-actions and write-actions (the action set runs at the end of the pipeline in the
//! specification's order), push/pop VLAN, set_field, Nicira `move` and `controller(id)`, and
//! groups of every type: ALL (copies), SELECT, INDIRECT and FAST_FAILOVER, with bucket liveness
//! from `watch_port` and the failed links. A SELECT group either takes one chosen bucket index
//! ([`SelectMode::Bucket`]) or yields every live bucket with weight > 0 as an *alternative*
//! ([`SelectMode::EveryBucket`]), so a test can check every path a switch may draw.
//!
//! [`Walker`] follows a packet from a host through the planned switches over the fabric's links
//! hop by hop and reports every resulting path with how it ended (delivered, dropped with the
//! reason, loop, link down, sent to a controller).

use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;

use fabricflow_proto::MacAddr;
use serde::Serialize;

use crate::plan::ir::{
    ports, Action, Bucket, Field, FieldRange, Flow, GroupType, Match, VID_PRESENT,
};
use crate::plan::{ethertype, Plan, SwitchPlan, TABLE_CLASSIFY};
use crate::topology::{Fabric, HostId, Link, LinkEnd, Peer, PortNo, SwitchId};

/// One 802.1Q tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Vlan {
    pub vid: u16,
    pub pcp: u8,
}

/// ARP payload fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Arp {
    pub op: u16,
    pub sha: MacAddr,
    pub spa: Ipv4Addr,
    pub tha: MacAddr,
    pub tpa: Ipv4Addr,
}

/// The packet state the pipeline reads and writes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Packet {
    pub eth_src: MacAddr,
    pub eth_dst: MacAddr,
    /// Outermost tag first.
    pub vlans: Vec<Vlan>,
    /// EtherType after the tags.
    pub eth_type: u16,
    /// IPv4 DSCP (meaningful when `eth_type` is IPv4).
    pub ip_dscp: u8,
    pub arp: Option<Arp>,
    pub regs: [u32; 8],
}

impl Packet {
    /// An untagged frame of `eth_type`.
    pub fn ethernet(src: MacAddr, dst: MacAddr, eth_type: u16) -> Packet {
        Packet {
            eth_src: src,
            eth_dst: dst,
            vlans: Vec::new(),
            eth_type,
            ip_dscp: 0,
            arp: None,
            regs: [0; 8],
        }
    }
    /// An untagged IPv4 frame.
    pub fn ipv4(src: MacAddr, dst: MacAddr) -> Packet {
        Packet::ethernet(src, dst, ethertype::IPV4)
    }
    /// A broadcast ARP request from (sha, spa) for tpa.
    pub fn arp_request(sha: MacAddr, spa: Ipv4Addr, tpa: Ipv4Addr) -> Packet {
        let mut p = Packet::ethernet(sha, MacAddr::BROADCAST, ethertype::ARP);
        p.arp = Some(Arp {
            op: 1,
            sha,
            spa,
            tha: MacAddr::ZERO,
            tpa,
        });
        p
    }
    /// The outer tag's PCP, if tagged.
    pub fn pcp(&self) -> Option<u8> {
        self.vlans.first().map(|v| v.pcp)
    }

    fn get(&self, f: Field) -> Result<u64, ExecError> {
        let arp = || self.arp.ok_or(ExecError::MissingField(f));
        let vlan = || {
            self.vlans
                .first()
                .copied()
                .ok_or(ExecError::MissingField(f))
        };
        Ok(match f {
            Field::EthSrc => self.eth_src.to_u64(),
            Field::EthDst => self.eth_dst.to_u64(),
            Field::VlanVid => u64::from(vlan()?.vid | VID_PRESENT),
            Field::VlanPcp => u64::from(vlan()?.pcp),
            Field::IpDscp if self.eth_type == ethertype::IPV4 => u64::from(self.ip_dscp),
            Field::IpDscp => return Err(ExecError::MissingField(f)),
            Field::ArpOp => u64::from(arp()?.op),
            Field::ArpSpa => u64::from(u32::from(arp()?.spa)),
            Field::ArpTpa => u64::from(u32::from(arp()?.tpa)),
            Field::ArpSha => arp()?.sha.to_u64(),
            Field::ArpTha => arp()?.tha.to_u64(),
            Field::Reg(i) => u64::from(
                *self
                    .regs
                    .get(usize::from(i))
                    .ok_or(ExecError::MissingField(f))?,
            ),
        })
    }

    fn set(&mut self, f: Field, v: u64) -> Result<(), ExecError> {
        let missing = ExecError::MissingField(f);
        let v32 = (v & 0xffff_ffff) as u32;
        let v16 = (v & 0xffff) as u16;
        match f {
            Field::EthSrc => self.eth_src = MacAddr::from_u64(v),
            Field::EthDst => self.eth_dst = MacAddr::from_u64(v),
            Field::VlanVid => self.vlans.first_mut().ok_or(missing)?.vid = v16 & 0x0fff,
            Field::VlanPcp => self.vlans.first_mut().ok_or(missing)?.pcp = (v & 7) as u8,
            Field::IpDscp if self.eth_type == ethertype::IPV4 => self.ip_dscp = (v & 0x3f) as u8,
            Field::IpDscp => return Err(missing),
            Field::ArpOp => self.arp.as_mut().ok_or(missing)?.op = v16,
            Field::ArpSpa => self.arp.as_mut().ok_or(missing)?.spa = Ipv4Addr::from(v32),
            Field::ArpTpa => self.arp.as_mut().ok_or(missing)?.tpa = Ipv4Addr::from(v32),
            Field::ArpSha => self.arp.as_mut().ok_or(missing)?.sha = MacAddr::from_u64(v),
            Field::ArpTha => self.arp.as_mut().ok_or(missing)?.tha = MacAddr::from_u64(v),
            Field::Reg(i) => *self.regs.get_mut(usize::from(i)).ok_or(missing)? = v32,
        }
        Ok(())
    }

    fn matches(&self, m: &Match, in_port: PortNo) -> bool {
        if m.in_port.is_some_and(|p| p != in_port) || m.eth_type.is_some_and(|t| t != self.eth_type)
        {
            return false;
        }
        if let Some(d) = m.eth_dst {
            if self.eth_dst.to_u64() & d.mask.to_u64() != d.value.to_u64() & d.mask.to_u64() {
                return false;
            }
        }
        if let Some(d) = m.eth_src {
            if self.eth_src.to_u64() & d.mask.to_u64() != d.value.to_u64() & d.mask.to_u64() {
                return false;
            }
        }
        let outer = self.vlans.first();
        if let Some(v) = m.vlan_vid {
            let vid = outer.map_or(0, |t| t.vid | VID_PRESENT);
            if vid & v.mask != v.value & v.mask {
                return false;
            }
        }
        if let Some(pcp) = m.vlan_pcp {
            if outer.map(|t| t.pcp) != Some(pcp) {
                return false;
            }
        }
        if let Some(op) = m.arp_op {
            if self.arp.map(|a| a.op) != Some(op) {
                return false;
            }
        }
        if let Some(t) = m.arp_tpa {
            let Some(a) = self.arp else { return false };
            if u32::from(a.tpa) & u32::from(t.mask) != u32::from(t.value) & u32::from(t.mask) {
                return false;
            }
        }
        true
    }
}

/// A plan or packet the pipeline cannot execute (a planner bug, never a fabric condition).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    #[error("action reads or writes {0:?}, which the packet does not have")]
    MissingField(Field),
    #[error("goto_table {to} from table {from} does not move forward")]
    GotoBackwards { from: u8, to: u8 },
    #[error("unknown group {0}")]
    UnknownGroup(u32),
    #[error("pop_vlan on an untagged packet")]
    PopUntagged,
    #[error("move of {0} bits is out of the fields' range")]
    BadMove(u8),
    #[error("groups nested too deeply")]
    TooDeep,
}

/// How SELECT groups choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectMode {
    /// Take this bucket index (if live; otherwise nothing is emitted).
    Bucket(usize),
    /// Every live bucket with weight > 0, each as an alternative.
    EveryBucket,
}

/// A packet leaving the switch.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Emission {
    /// Output port; `IN_PORT` is resolved to the arrival port; `CONTROLLER` stays reserved.
    pub port: PortNo,
    /// Nicira controller id for `controller(id)`; `None` for plain `output:CONTROLLER`.
    pub controller_id: Option<u16>,
    pub packet: Packet,
}

/// One alternative behaviour of a switch for a packet: what it emits (copies), or why nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    pub emitted: Vec<Emission>,
    /// Why nothing or less was emitted (table miss, drop rule), if known.
    pub note: Option<String>,
}

#[derive(Debug, Clone)]
struct State {
    pkt: Packet,
    emitted: Vec<Emission>,
    action_set: Vec<Action>,
    note: Option<String>,
}

/// One switch's tables and groups, indexed for execution.
#[derive(Debug)]
pub struct SwitchPipeline<'a> {
    plan: &'a SwitchPlan,
    /// Flow indexes per table, highest priority first.
    tables: Vec<(u8, Vec<usize>)>,
    groups: HashMap<u32, &'a crate::plan::ir::Group>,
}

const MAX_GROUP_DEPTH: usize = 8;

impl<'a> SwitchPipeline<'a> {
    /// Indexes a switch plan.
    pub fn new(plan: &'a SwitchPlan) -> Self {
        let mut tables: Vec<(u8, Vec<usize>)> = Vec::new();
        let mut order: Vec<usize> = (0..plan.flows.len()).collect();
        let key = |i: &usize| {
            plan.flows
                .get(*i)
                .map(|f| (f.table, std::cmp::Reverse(f.priority)))
        };
        order.sort_by_key(key);
        for i in order {
            let Some(f) = plan.flows.get(i) else { continue };
            match tables.last_mut() {
                Some((t, v)) if *t == f.table => v.push(i),
                _ => tables.push((f.table, vec![i])),
            }
        }
        let groups = plan.groups.iter().map(|g| (g.id, g)).collect();
        SwitchPipeline {
            plan,
            tables,
            groups,
        }
    }

    fn lookup(&self, table: u8, pkt: &Packet, in_port: PortNo) -> Option<&'a Flow> {
        let (_, flows) = self.tables.iter().find(|(t, _)| *t == table)?;
        let plan: &'a SwitchPlan = self.plan;
        flows
            .iter()
            .filter_map(|&i| plan.flows.get(i))
            .find(|f| pkt.matches(&f.matches, in_port))
    }

    /// Runs `pkt` arriving on `in_port` through the pipeline; returns every alternative.
    pub fn execute(
        &self,
        in_port: PortNo,
        pkt: &Packet,
        mode: SelectMode,
        live: &dyn Fn(PortNo) -> bool,
    ) -> Result<Vec<Outcome>, ExecError> {
        let mut done = Vec::new();
        let mut pending = vec![(
            TABLE_CLASSIFY,
            State {
                pkt: pkt.clone(),
                emitted: Vec::new(),
                action_set: Vec::new(),
                note: None,
            },
        )];
        while let Some((table, mut st)) = pending.pop() {
            let Some(flow) = self.lookup(table, &st.pkt, in_port) else {
                st.note = Some(format!("table miss in table {table}"));
                done.extend(self.finish(st, in_port, mode, live)?);
                continue;
            };
            let ins = &flow.instructions;
            let states = self.run_actions(vec![st], &ins.apply, in_port, mode, live, 0)?;
            for mut s in states {
                for a in &ins.write {
                    write_action(&mut s.action_set, a.clone());
                }
                match ins.goto_table {
                    Some(next) if next <= table => {
                        return Err(ExecError::GotoBackwards {
                            from: table,
                            to: next,
                        })
                    }
                    Some(next) => pending.push((next, s)),
                    None => {
                        if ins.apply.is_empty() && ins.write.is_empty() && s.action_set.is_empty() {
                            s.note = Some(format!(
                                "dropped by table {table} priority {} rule",
                                flow.priority
                            ));
                        }
                        done.extend(self.finish(s, in_port, mode, live)?);
                    }
                }
            }
        }
        let mut out: Vec<Outcome> = Vec::new();
        for st in done {
            let o = Outcome {
                emitted: st.emitted,
                note: st.note,
            };
            if !out.contains(&o) {
                out.push(o);
            }
        }
        Ok(out)
    }

    /// Executes the action set (pop, push, set_field, then group or output).
    fn finish(
        &self,
        mut st: State,
        in_port: PortNo,
        mode: SelectMode,
        live: &dyn Fn(PortNo) -> bool,
    ) -> Result<Vec<State>, ExecError> {
        let set = std::mem::take(&mut st.action_set);
        let rank = |a: &Action| match a {
            Action::PopVlan => 0,
            Action::PushVlan(_) => 1,
            Action::Move { .. } | Action::SetField { .. } => 2,
            Action::Group(_) => 3,
            Action::NxController { .. } | Action::Output(_) => 4,
        };
        let mut ordered = set;
        ordered.sort_by_key(rank);
        if ordered.iter().any(|a| matches!(a, Action::Group(_))) {
            ordered.retain(|a| !matches!(a, Action::Output(_)));
        }
        self.run_actions(vec![st], &ordered, in_port, mode, live, 0)
    }

    fn run_actions(
        &self,
        mut states: Vec<State>,
        actions: &[Action],
        in_port: PortNo,
        mode: SelectMode,
        live: &dyn Fn(PortNo) -> bool,
        depth: usize,
    ) -> Result<Vec<State>, ExecError> {
        for a in actions {
            let mut next = Vec::with_capacity(states.len());
            for mut st in states {
                match a {
                    // OpenFlow sends to the arrival port only by IN_PORT: a switch drops an
                    // output to it by number (Open vSwitch does), so the model must too or it
                    // hides U-turns that lose packets on a real fabric.
                    Action::Output(p) if *p == in_port => {
                        st.note
                            .get_or_insert_with(|| format!("output to arrival port {p} dropped"));
                    }
                    Action::Output(p) => {
                        let port = if *p == ports::IN_PORT { in_port } else { *p };
                        st.emitted.push(Emission {
                            port,
                            controller_id: None,
                            packet: st.pkt.clone(),
                        });
                    }
                    Action::NxController { id } => st.emitted.push(Emission {
                        port: ports::CONTROLLER,
                        controller_id: Some(*id),
                        packet: st.pkt.clone(),
                    }),
                    Action::SetField { field, value } => st.pkt.set(*field, *value)?,
                    Action::PushVlan(_) => {
                        let tag = st
                            .pkt
                            .vlans
                            .first()
                            .copied()
                            .unwrap_or(Vlan { vid: 0, pcp: 0 });
                        st.pkt.vlans.insert(0, tag);
                    }
                    Action::PopVlan => {
                        if st.pkt.vlans.is_empty() {
                            return Err(ExecError::PopUntagged);
                        }
                        st.pkt.vlans.remove(0);
                    }
                    Action::Move { src, dst } => do_move(&mut st.pkt, *src, *dst)?,
                    Action::Group(id) => {
                        for alt in self.group(*id, &st.pkt, in_port, mode, live, depth)? {
                            let mut s = st.clone();
                            s.emitted.extend(alt);
                            next.push(s);
                        }
                        continue;
                    }
                }
                next.push(st);
            }
            states = next;
        }
        Ok(states)
    }

    /// Alternatives of emissions a group produces for `pkt`.
    fn group(
        &self,
        id: u32,
        pkt: &Packet,
        in_port: PortNo,
        mode: SelectMode,
        live: &dyn Fn(PortNo) -> bool,
        depth: usize,
    ) -> Result<Vec<Vec<Emission>>, ExecError> {
        if depth >= MAX_GROUP_DEPTH {
            return Err(ExecError::TooDeep);
        }
        let g = self.groups.get(&id).ok_or(ExecError::UnknownGroup(id))?;
        let is_live = |b: &Bucket| !matches!(b.watch_port, Some(p) if !live(p));
        let run = |b: &Bucket| -> Result<Vec<Vec<Emission>>, ExecError> {
            let st = State {
                pkt: pkt.clone(),
                emitted: Vec::new(),
                action_set: Vec::new(),
                note: None,
            };
            let out = self.run_actions(vec![st], &b.actions, in_port, mode, live, depth + 1)?;
            Ok(out.into_iter().map(|s| s.emitted).collect())
        };
        let chosen: Vec<&Bucket> = match g.kind {
            GroupType::Select => match mode {
                SelectMode::Bucket(i) => g
                    .buckets
                    .get(i)
                    .filter(|b| is_live(b))
                    .into_iter()
                    .collect(),
                SelectMode::EveryBucket => g
                    .buckets
                    .iter()
                    .filter(|b| b.weight > 0 && is_live(b))
                    .collect(),
            },
            GroupType::Indirect => g.buckets.first().into_iter().collect(),
            GroupType::FastFailover => g.buckets.iter().find(|b| is_live(b)).into_iter().collect(),
            GroupType::All => {
                // Copies: the cartesian product of every bucket's alternatives.
                let mut acc: Vec<Vec<Emission>> = vec![Vec::new()];
                for b in &g.buckets {
                    let alts = run(b)?;
                    let mut next = Vec::new();
                    for prefix in &acc {
                        for alt in &alts {
                            let mut v = prefix.clone();
                            v.extend(alt.iter().cloned());
                            next.push(v);
                        }
                    }
                    acc = next;
                }
                return Ok(acc);
            }
        };
        let mut out: Vec<Vec<Emission>> = Vec::new();
        for b in chosen {
            for alt in run(b)? {
                if !out.contains(&alt) {
                    out.push(alt);
                }
            }
        }
        if out.is_empty() {
            out.push(Vec::new());
        }
        Ok(out)
    }
}

fn write_action(set: &mut Vec<Action>, a: Action) {
    let same = |x: &Action| match (x, &a) {
        (Action::SetField { field: f1, .. }, Action::SetField { field: f2, .. }) => f1 == f2,
        (Action::Move { dst: d1, .. }, Action::Move { dst: d2, .. }) => d1 == d2,
        _ => std::mem::discriminant(x) == std::mem::discriminant(&a),
    };
    set.retain(|x| !same(x));
    set.push(a);
}

fn do_move(pkt: &mut Packet, src: FieldRange, dst: FieldRange) -> Result<(), ExecError> {
    let n = src.n_bits;
    if n == 0
        || n != dst.n_bits
        || n > 64
        || u16::from(src.ofs) + u16::from(n) > u16::from(src.field.bits())
        || u16::from(dst.ofs) + u16::from(n) > u16::from(dst.field.bits())
    {
        return Err(ExecError::BadMove(n));
    }
    let mask = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
    let bits = (pkt.get(src.field)? >> src.ofs) & mask;
    let old = pkt.get(dst.field)?;
    let new = (old & !(mask << dst.ofs)) | (bits << dst.ofs);
    pkt.set(dst.field, new)
}

/// One switch visit on a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hop {
    pub switch: SwitchId,
    pub in_port: PortNo,
    pub out_port: PortNo,
    /// PCP of the outer tag when leaving (lossless mode).
    pub pcp: Option<u8>,
}

/// How a path ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum End {
    Delivered(HostId),
    Dropped { switch: SwitchId, reason: String },
    Loop { switch: SwitchId },
    LinkDown { switch: SwitchId, port: PortNo },
    ToController { switch: SwitchId, id: Option<u16> },
    UnusedPort { switch: SwitchId, port: PortNo },
}

/// One path a packet may take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Trace {
    pub hops: Vec<Hop>,
    pub end: End,
    /// The packet as it left the last switch.
    pub packet: Packet,
}

impl Trace {
    /// Switch-to-switch links crossed.
    pub fn links(&self) -> usize {
        self.hops.len().saturating_sub(1)
    }
}

/// Walks packets through a planned fabric.
#[derive(Debug)]
pub struct Walker<'a> {
    fabric: &'a Fabric,
    pipelines: Vec<SwitchPipeline<'a>>,
    failed: &'a BTreeSet<Link>,
    /// Paths longer than this many switches are reported as loops.
    pub max_hops: usize,
}

impl<'a> Walker<'a> {
    /// A walker over `plan` (built for `fabric`) with `failed` links down.
    pub fn new(fabric: &'a Fabric, plan: &'a Plan, failed: &'a BTreeSet<Link>) -> Self {
        let pipelines = plan.switches.iter().map(SwitchPipeline::new).collect();
        Walker {
            fabric,
            pipelines,
            failed,
            max_hops: 64,
        }
    }

    fn live(&self, sw: SwitchId, port: PortNo) -> bool {
        !matches!(self.fabric.link_at(sw, port), Some(l) if self.failed.contains(&l))
    }

    /// Sends `packet` from host `src` and returns every path it may take.
    pub fn walk(
        &self,
        src: HostId,
        packet: Packet,
        mode: SelectMode,
    ) -> Result<Vec<Trace>, ExecError> {
        let Some(h) = self.fabric.host(src) else {
            return Ok(Vec::new());
        };
        self.walk_from(h.switch, h.port, packet, mode)
    }

    /// An IPv4 packet from host `src` to host `dst`'s MAC.
    pub fn walk_pair(
        &self,
        src: HostId,
        dst: HostId,
        mode: SelectMode,
    ) -> Result<Vec<Trace>, ExecError> {
        let (Some(s), Some(d)) = (self.fabric.host(src), self.fabric.host(dst)) else {
            return Ok(Vec::new());
        };
        self.walk(src, Packet::ipv4(s.location.mac(), d.location.mac()), mode)
    }

    /// Sends `packet` into switch `sw` as if it arrived on `in_port`.
    pub fn walk_from(
        &self,
        sw: SwitchId,
        in_port: PortNo,
        packet: Packet,
        mode: SelectMode,
    ) -> Result<Vec<Trace>, ExecError> {
        let mut out = Vec::new();
        let mut stack: Vec<(SwitchId, PortNo, Packet, Vec<Hop>)> =
            vec![(sw, in_port, packet, Vec::new())];
        while let Some((x, port, pkt, hops)) = stack.pop() {
            let Some(pipe) = self.pipelines.get(x) else {
                continue;
            };
            let live = |p: PortNo| self.live(x, p);
            for outcome in pipe.execute(port, &pkt, mode, &live)? {
                if outcome.emitted.is_empty() {
                    let reason = outcome.note.unwrap_or_else(|| "no output".to_owned());
                    out.push(Trace {
                        hops: hops.clone(),
                        end: End::Dropped { switch: x, reason },
                        packet: pkt.clone(),
                    });
                }
                for e in outcome.emitted {
                    let mut path = hops.clone();
                    path.push(Hop {
                        switch: x,
                        in_port: port,
                        out_port: e.port,
                        pcp: e.packet.pcp(),
                    });
                    let end = if e.port == ports::CONTROLLER {
                        Some(End::ToController {
                            switch: x,
                            id: e.controller_id,
                        })
                    } else {
                        match self.fabric.peer(x, e.port) {
                            None => Some(End::UnusedPort {
                                switch: x,
                                port: e.port,
                            }),
                            Some(Peer::Host(h)) => Some(End::Delivered(h)),
                            Some(Peer::Switch { switch, port: pp }) => {
                                let l = Link::new(
                                    LinkEnd {
                                        switch: x,
                                        port: e.port,
                                    },
                                    LinkEnd { switch, port: pp },
                                );
                                if self.failed.contains(&l) {
                                    Some(End::LinkDown {
                                        switch: x,
                                        port: e.port,
                                    })
                                } else if path.len() >= self.max_hops
                                    || path.iter().any(|h| h.switch == switch && h.in_port == pp)
                                {
                                    Some(End::Loop { switch })
                                } else {
                                    stack.push((switch, pp, e.packet.clone(), path.clone()));
                                    None
                                }
                            }
                        }
                    };
                    if let Some(end) = end {
                        out.push(Trace {
                            hops: path,
                            end,
                            packet: e.packet,
                        });
                    }
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::plan::ir::{Group, Instructions};

    /// One table-0 rule sending everything to `actions`, and a SELECT group 7 over ports 1 and 2.
    fn switch(actions: Vec<Action>) -> SwitchPlan {
        let bucket = |port| Bucket {
            weight: 128,
            watch_port: Some(port),
            actions: vec![Action::Output(port)],
        };
        SwitchPlan {
            dpid: 1,
            name: "s".to_owned(),
            flows: vec![Flow {
                table: TABLE_CLASSIFY,
                priority: 1,
                cookie: 0,
                matches: Match::default(),
                instructions: Instructions::apply(actions),
            }],
            groups: vec![Group {
                id: 7,
                kind: GroupType::Select,
                buckets: vec![bucket(1), bucket(2)],
            }],
        }
    }

    fn ports_of(outcomes: &[Outcome]) -> Vec<Vec<PortNo>> {
        outcomes
            .iter()
            .map(|o| o.emitted.iter().map(|e| e.port).collect())
            .collect()
    }

    #[test]
    fn output_to_the_arrival_port_is_dropped_unless_by_in_port() {
        let pkt = Packet::ipv4(MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]));
        let live = |_: PortNo| true;
        let run = |sp: &SwitchPlan, mode| {
            SwitchPipeline::new(sp)
                .execute(1, &pkt, mode, &live)
                .unwrap()
        };
        // By number: dropped, with the reason.
        let sp = switch(vec![Action::Output(1)]);
        let out = run(&sp, SelectMode::EveryBucket);
        assert_eq!(ports_of(&out), [Vec::<PortNo>::new()]);
        assert!(out[0].note.as_deref().unwrap().contains("arrival port"));
        // By IN_PORT: sent back (the ARP responder relies on it).
        let sp = switch(vec![Action::Output(ports::IN_PORT)]);
        assert_eq!(ports_of(&run(&sp, SelectMode::EveryBucket)), [[1]]);
        // Other ports are unaffected.
        let sp = switch(vec![Action::Output(2)]);
        assert_eq!(ports_of(&run(&sp, SelectMode::EveryBucket)), [[2]]);
        // A SELECT bucket to the arrival port is an alternative that emits nothing.
        let sp = switch(vec![Action::Group(7)]);
        let out = run(&sp, SelectMode::EveryBucket);
        assert_eq!(ports_of(&out), [vec![], vec![2]]);
        assert_eq!(
            ports_of(&run(&sp, SelectMode::Bucket(0))),
            [Vec::<PortNo>::new()]
        );
        assert_eq!(ports_of(&run(&sp, SelectMode::Bucket(1))), [[2]]);
    }
}
