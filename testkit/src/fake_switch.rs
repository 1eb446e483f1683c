//! An in-memory OpenFlow 1.3 switch that executes the messages fabricflow sends: flow and group
//! tables (ADD/MODIFY/DELETE, strict and not, cookie masks, a group DELETE taking its flows
//! along), multipart (FLOW with cookie filter, GROUP_DESC, GROUP stats, PORT_DESC, PORT_STATS,
//! split into REPLY_MORE sequences), ONF bundles committed atomically, roles (a SLAVE may not
//! write), barriers, echo, and errors as a switch sends them. Refusals can be switched on to
//! test how the sessions handle them.
//!
//! Not modelled: packet forwarding through the tables. Frames arriving on a port become
//! packet-ins by EtherType, as the plan's rules make them on a real switch: LLDP to the
//! controller connections, CNMs to the connection whose controller id is the agent's.

use std::collections::{BTreeMap, HashMap};

use fabricflow_proto::conventions::AGENT_CONTROLLER_ID;
use fabricflow_proto::ethernet::{ethertype, frame_info};
use fabricflow_proto::openflow::action::Action;
use fabricflow_proto::openflow::bundle::BundleCtrlType;
use fabricflow_proto::openflow::flow::{FlowMod, FlowModCommand};
use fabricflow_proto::openflow::framer::Framer;
use fabricflow_proto::openflow::group::{GroupMod, GroupModCommand, OFPG_ALL, OFPG_ANY};
use fabricflow_proto::openflow::instruction::Instruction;
use fabricflow_proto::openflow::message::{Body, Message};
use fabricflow_proto::openflow::multipart::{
    BucketCounter, FlowStats, GroupDesc, GroupStats, MultipartReplyBody, MultipartRequestBody,
    PortStats, OFPMPF_REPLY_MORE, OFPP_ANY, OFPTT_ALL,
};
use fabricflow_proto::openflow::oxm::{Match, OxmField};
use fabricflow_proto::openflow::packet::{PacketIn, PacketInReason, OFP_NO_BUFFER};
use fabricflow_proto::openflow::port::Port;
use fabricflow_proto::openflow::switch::{ControllerRole, FeaturesReply, Role};
use fabricflow_proto::openflow::symmetric::{
    BadRequestCode, ErrorType, FlowModFailedCode, GroupModFailedCode,
};
use fabricflow_proto::select_slots::SlotGroup;

/// Entries per MULTIPART_REPLY message: small, so that real sequences are multi-part.
const ENTRIES_PER_REPLY: usize = 16;

/// What the switch refuses, to test the sessions' handling.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refusals {
    /// No bundle extension: BUNDLE_CONTROL and BUNDLE_ADD get OFPBRC_BAD_EXPERIMENTER.
    pub bundles: bool,
    /// Every GROUP_MOD gets OFPGMFC_EPERM.
    pub group_mods: bool,
    /// ROLE_REQUEST gets an error.
    pub role: bool,
}

/// What the switch executed, for assertions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SwitchCounters {
    pub flow_mods: u64,
    pub group_mods: u64,
    /// GROUP_MOD MODIFYs (weight writes).
    pub group_modifies: u64,
    pub bundles_committed: u64,
    pub errors_sent: u64,
    pub packet_outs: u64,
    pub connections: u64,
}

#[derive(Debug, Clone)]
struct GroupEntry {
    desc: GroupDesc,
    bucket_bytes: Vec<u64>,
}

/// One connection's state on the switch side.
#[derive(Debug)]
struct Conn {
    framer: Framer,
    out: Vec<u8>,
    controller_id: u16,
    role: ControllerRole,
    /// Open bundles: id → messages added.
    bundles: HashMap<u32, Vec<Message>>,
}

/// A connection handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(usize);

/// The flow and group tables and ports of one switch (they outlive connections).
#[derive(Debug, Clone, Default)]
pub struct Tables {
    flows: Vec<FlowStats>,
    groups: BTreeMap<u32, GroupEntry>,
}

/// The fake switch.
#[derive(Debug)]
pub struct FakeSwitch {
    dpid: u64,
    ports: BTreeMap<u32, (Port, u64)>,
    tables: Tables,
    conns: BTreeMap<ConnId, Conn>,
    next_conn: usize,
    /// What the switch refuses.
    pub refuse: Refusals,
    counters: SwitchCounters,
    /// Frames sent out of ports by PACKET_OUT: (port, frame).
    emitted: Vec<(u32, Vec<u8>)>,
}

/// An error while executing one message (becomes an OFPT_ERROR).
type Refusal = ErrorType;

impl FakeSwitch {
    /// A switch with datapath id `dpid` and these ports (all up).
    pub fn new(dpid: u64, ports: impl IntoIterator<Item = Port>) -> Self {
        FakeSwitch {
            dpid,
            ports: ports.into_iter().map(|p| (p.port_no, (p, 0))).collect(),
            tables: Tables::default(),
            conns: BTreeMap::new(),
            next_conn: 0,
            refuse: Refusals::default(),
            counters: SwitchCounters::default(),
            emitted: Vec::new(),
        }
    }

    pub fn dpid(&self) -> u64 {
        self.dpid
    }
    pub fn counters(&self) -> SwitchCounters {
        self.counters
    }
    /// The flow table, as a FLOW_STATS dump would show it.
    pub fn flows(&self) -> &[FlowStats] {
        &self.tables.flows
    }
    /// The group table.
    pub fn groups(&self) -> impl Iterator<Item = &GroupDesc> + '_ {
        self.tables.groups.values().map(|g| &g.desc)
    }
    /// One group's logical weights: its bucket weights, or for a group in the slotted layout
    /// its slot counts ([`SlotGroup::logical_weights`]).
    pub fn weights(&self, group_id: u32) -> Option<Vec<u16>> {
        let buckets = &self.tables.groups.get(&group_id)?.desc.buckets;
        Some(match SlotGroup::parse(buckets) {
            Ok(Some(s)) => s.logical_weights(),
            _ => buckets.iter().map(|b| b.weight).collect(),
        })
    }
    /// Sets a port's transmitted-bytes counter (what PORT_STATS reports).
    pub fn set_tx_bytes(&mut self, port: u32, bytes: u64) {
        if let Some(p) = self.ports.get_mut(&port) {
            p.1 = bytes;
        }
    }
    /// Empties the tables (a bridge re-created).
    pub fn wipe(&mut self) {
        self.tables = Tables::default();
    }
    /// Frames the switch sent out of its ports since the last call.
    pub fn take_emitted(&mut self) -> Vec<(u32, Vec<u8>)> {
        std::mem::take(&mut self.emitted)
    }

    // ---- connections -------------------------------------------------------------------------

    /// A new connection from a controller; the switch's HELLO is queued.
    pub fn connect(&mut self) -> ConnId {
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        self.counters.connections += 1;
        let mut conn = Conn {
            framer: Framer::new(65535),
            out: Vec::new(),
            controller_id: 0,
            role: ControllerRole::Equal,
            bundles: HashMap::new(),
        };
        put(&mut conn.out, &Message::hello(1));
        self.conns.insert(id, conn);
        id
    }

    /// The connection is gone (open bundles are discarded).
    pub fn disconnect(&mut self, c: ConnId) {
        self.conns.remove(&c);
    }

    /// Bytes the switch has to send on `c`.
    pub fn take_output(&mut self, c: ConnId) -> Vec<u8> {
        self.conns
            .get_mut(&c)
            .map(|k| std::mem::take(&mut k.out))
            .unwrap_or_default()
    }

    /// Bytes from the controller on `c`: every complete message is executed. A framing or
    /// decoding error drops the connection, as a switch does.
    pub fn handle_bytes(&mut self, c: ConnId, data: &[u8]) {
        let mut msgs = Vec::new();
        let Some(conn) = self.conns.get_mut(&c) else {
            return;
        };
        conn.framer.push(data);
        loop {
            match conn.framer.next_message() {
                Ok(Some(frame)) => match Message::decode(&frame) {
                    Ok(m) => msgs.push(m),
                    Err(_) => {
                        self.conns.remove(&c);
                        return;
                    }
                },
                Ok(None) => break,
                Err(_) => {
                    self.conns.remove(&c);
                    return;
                }
            }
        }
        for m in msgs {
            let replies = self.execute(c, m);
            if let Some(conn) = self.conns.get_mut(&c) {
                for r in replies {
                    put(&mut conn.out, &r);
                }
            }
        }
    }

    /// A frame arrived on `in_port`: LLDP goes to the controller connections (id 0), a CNM to
    /// the agent's (the plan's rules on a real switch).
    pub fn receive_frame(&mut self, in_port: u32, frame: &[u8]) {
        let Ok(info) = frame_info(frame) else {
            return;
        };
        let want_id = match info.ethertype {
            ethertype::LLDP => 0,
            ethertype::CNM => AGENT_CONTROLLER_ID,
            _ => return,
        };
        let pi = PacketIn {
            buffer_id: OFP_NO_BUFFER,
            total_len: u16::try_from(frame.len()).unwrap_or(u16::MAX),
            reason: PacketInReason::Action,
            table_id: 0,
            cookie: 0,
            r#match: Match::new().with(OxmField::InPort(in_port)),
            data: frame.to_vec(),
        };
        let msg = Message::new(0, Body::PacketIn(pi));
        for conn in self.conns.values_mut() {
            if conn.controller_id == want_id {
                put(&mut conn.out, &msg);
            }
        }
    }

    // ---- execution ---------------------------------------------------------------------------

    /// Executes one message from connection `c`; returns the replies.
    pub fn execute(&mut self, c: ConnId, m: Message) -> Vec<Message> {
        let xid = m.xid;
        let writer = self
            .conns
            .get(&c)
            .is_some_and(|k| k.role != ControllerRole::Slave);
        let refuse = |this: &mut Self, e: ErrorType, m: &Message| {
            this.counters.errors_sent += 1;
            vec![Message::error_reply(&m.to_bytes(), e)]
        };
        match &m.body {
            Body::Hello(_) | Body::SetAsync(_) | Body::EchoReply(_) => vec![],
            Body::EchoRequest(_) => vec![Message::echo_reply_to(&m)],
            Body::FeaturesRequest => vec![Message::new(
                xid,
                Body::FeaturesReply(FeaturesReply {
                    datapath_id: self.dpid,
                    n_buffers: 0,
                    n_tables: 254,
                    auxiliary_id: 0,
                    capabilities: 0,
                    reserved: 0,
                }),
            )],
            Body::SetConfig(_) => vec![],
            Body::SetControllerId(s) => {
                if let Some(k) = self.conns.get_mut(&c) {
                    k.controller_id = s.controller_id;
                }
                vec![]
            }
            Body::RoleRequest(r) => {
                if self.refuse.role {
                    let e = ErrorType::RoleRequestFailed(
                        fabricflow_proto::openflow::symmetric::RoleRequestFailedCode::Unsup,
                    );
                    return refuse(self, e, &m);
                }
                if let Some(k) = self.conns.get_mut(&c) {
                    if r.role != ControllerRole::NoChange {
                        k.role = r.role;
                    }
                }
                let role = self.conns.get(&c).map_or(r.role, |k| k.role);
                vec![Message::new(
                    xid,
                    Body::RoleReply(Role {
                        role,
                        generation_id: r.generation_id,
                    }),
                )]
            }
            Body::BarrierRequest => vec![Message::barrier_reply(xid)],
            Body::PacketOut(po) => {
                self.counters.packet_outs += 1;
                for a in &po.actions {
                    if let Action::Output { port, .. } = a {
                        self.emitted.push((*port, po.data.clone()));
                    }
                }
                vec![]
            }
            Body::FlowMod(_) | Body::GroupMod(_) if !writer => {
                refuse(self, ErrorType::BadRequest(BadRequestCode::IsSlave), &m)
            }
            Body::FlowMod(f) => match apply_flow_mod(&mut self.tables, f) {
                Ok(()) => {
                    self.counters.flow_mods += 1;
                    vec![]
                }
                Err(e) => refuse(self, e, &m),
            },
            Body::GroupMod(g) => {
                if self.refuse.group_mods {
                    let e = ErrorType::GroupModFailed(GroupModFailedCode::Eperm);
                    return refuse(self, e, &m);
                }
                match apply_group_mod(&mut self.tables, g) {
                    Ok(()) => {
                        self.counters.group_mods += 1;
                        if g.command == GroupModCommand::Modify {
                            self.counters.group_modifies += 1;
                        }
                        vec![]
                    }
                    Err(e) => refuse(self, e, &m),
                }
            }
            Body::BundleControl(_) | Body::BundleAdd(_) if self.refuse.bundles => refuse(
                self,
                ErrorType::BadRequest(BadRequestCode::BadExperimenter),
                &m,
            ),
            Body::BundleControl(_) | Body::BundleAdd(_) if !writer => {
                refuse(self, ErrorType::BadRequest(BadRequestCode::IsSlave), &m)
            }
            Body::BundleAdd(b) => {
                match self
                    .conns
                    .get_mut(&c)
                    .and_then(|k| k.bundles.get_mut(&b.bundle_id))
                {
                    Some(list) => {
                        list.push((*b.message).clone());
                        vec![]
                    }
                    None => refuse(self, ErrorType::BadRequest(BadRequestCode::BadType), &m),
                }
            }
            Body::BundleControl(bc) => {
                let reply = |t: BundleCtrlType| {
                    Message::new(
                        xid,
                        Body::BundleControl(
                            fabricflow_proto::openflow::bundle::BundleControl::new(
                                bc.bundle_id,
                                t,
                                bc.flags,
                            ),
                        ),
                    )
                };
                match bc.ctrl_type {
                    BundleCtrlType::OpenRequest => {
                        if let Some(k) = self.conns.get_mut(&c) {
                            k.bundles.insert(bc.bundle_id, Vec::new());
                        }
                        vec![reply(BundleCtrlType::OpenReply)]
                    }
                    BundleCtrlType::CommitRequest => {
                        let msgs = self
                            .conns
                            .get_mut(&c)
                            .and_then(|k| k.bundles.remove(&bc.bundle_id));
                        let Some(msgs) = msgs else {
                            return refuse(
                                self,
                                ErrorType::BadRequest(BadRequestCode::BadType),
                                &m,
                            );
                        };
                        // Atomic: applied to a copy, kept only if every message succeeds.
                        let mut t = self.tables.clone();
                        for inner in &msgs {
                            let r = match &inner.body {
                                Body::FlowMod(f) => apply_flow_mod(&mut t, f),
                                Body::GroupMod(g) if self.refuse.group_mods => {
                                    Err(ErrorType::GroupModFailed(GroupModFailedCode::Eperm))
                                }
                                Body::GroupMod(g) => apply_group_mod(&mut t, g),
                                _ => Err(ErrorType::BadRequest(BadRequestCode::BadType)),
                            };
                            if let Err(e) = r {
                                return refuse(self, e, inner);
                            }
                        }
                        for inner in &msgs {
                            match &inner.body {
                                Body::FlowMod(_) => self.counters.flow_mods += 1,
                                Body::GroupMod(_) => self.counters.group_mods += 1,
                                _ => {}
                            }
                        }
                        self.tables = t;
                        self.counters.bundles_committed += 1;
                        vec![reply(BundleCtrlType::CommitReply)]
                    }
                    BundleCtrlType::DiscardRequest | BundleCtrlType::CloseRequest => {
                        if let Some(k) = self.conns.get_mut(&c) {
                            k.bundles.remove(&bc.bundle_id);
                        }
                        let t = if bc.ctrl_type == BundleCtrlType::CloseRequest {
                            BundleCtrlType::CloseReply
                        } else {
                            BundleCtrlType::DiscardReply
                        };
                        vec![reply(t)]
                    }
                    _ => refuse(self, ErrorType::BadRequest(BadRequestCode::BadType), &m),
                }
            }
            Body::MultipartRequest(r) => match self.multipart(&r.body) {
                Some(bodies) => {
                    let n = bodies.len();
                    bodies
                        .into_iter()
                        .enumerate()
                        .map(|(i, b)| {
                            let flags = if i + 1 < n { OFPMPF_REPLY_MORE } else { 0 };
                            Message::multipart_reply(xid, flags, b)
                        })
                        .collect()
                }
                None => refuse(
                    self,
                    ErrorType::BadRequest(BadRequestCode::BadMultipart),
                    &m,
                ),
            },
            _ => refuse(self, ErrorType::BadRequest(BadRequestCode::BadType), &m),
        }
    }

    /// The reply bodies of a multipart request (split into parts), `None` if unsupported.
    fn multipart(&self, req: &MultipartRequestBody) -> Option<Vec<MultipartReplyBody>> {
        fn parts<T: Clone>(
            v: Vec<T>,
            wrap: fn(Vec<T>) -> MultipartReplyBody,
        ) -> Vec<MultipartReplyBody> {
            if v.is_empty() {
                return vec![wrap(v)];
            }
            v.chunks(ENTRIES_PER_REPLY)
                .map(|c| wrap(c.to_vec()))
                .collect()
        }
        Some(match req {
            MultipartRequestBody::Flow(f) => {
                let v = self
                    .tables
                    .flows
                    .iter()
                    .filter(|e| f.table_id == OFPTT_ALL || e.table_id == f.table_id)
                    .filter(|e| e.cookie & f.cookie_mask == f.cookie & f.cookie_mask)
                    .filter(|e| f.out_port == OFPP_ANY || outputs_to(e, f.out_port))
                    .filter(|e| f.out_group == OFPG_ANY || uses_group(e, f.out_group))
                    .cloned()
                    .collect();
                parts(v, MultipartReplyBody::Flow)
            }
            MultipartRequestBody::GroupDesc => parts(
                self.tables
                    .groups
                    .values()
                    .map(|g| g.desc.clone())
                    .collect(),
                MultipartReplyBody::GroupDesc,
            ),
            MultipartRequestBody::Group { group_id: id } => parts(
                self.tables
                    .groups
                    .values()
                    .filter(|g| *id == OFPG_ALL || g.desc.group_id == *id)
                    .map(|g| GroupStats {
                        group_id: g.desc.group_id,
                        ref_count: 0,
                        packet_count: 0,
                        byte_count: g.bucket_bytes.iter().sum(),
                        duration_sec: 0,
                        duration_nsec: 0,
                        bucket_stats: g
                            .bucket_bytes
                            .iter()
                            .map(|&b| BucketCounter {
                                packet_count: 0,
                                byte_count: b,
                            })
                            .collect(),
                    })
                    .collect(),
                MultipartReplyBody::Group,
            ),
            MultipartRequestBody::PortDesc => parts(
                self.ports.values().map(|(p, _)| p.clone()).collect(),
                MultipartReplyBody::PortDesc,
            ),
            MultipartRequestBody::PortStats { port_no: port } => parts(
                self.ports
                    .values()
                    .filter(|(p, _)| *port == OFPP_ANY || p.port_no == *port)
                    .map(|(p, tx)| PortStats {
                        port_no: p.port_no,
                        tx_bytes: *tx,
                        ..PortStats::default()
                    })
                    .collect(),
                MultipartReplyBody::PortStats,
            ),
            _ => return None,
        })
    }
}

fn put(out: &mut Vec<u8>, m: &Message) {
    out.extend_from_slice(&m.to_bytes());
}

fn same_match(a: &Match, b: &Match) -> bool {
    a.fields.len() == b.fields.len() && a.fields.iter().all(|f| b.fields.contains(f))
}

/// Non-strict: every field of `req` is in the entry's match.
fn covers(req: &Match, entry: &Match) -> bool {
    req.fields.iter().all(|f| entry.fields.contains(f))
}

fn actions(e: &FlowStats) -> impl Iterator<Item = &Action> + '_ {
    e.instructions.iter().flat_map(|i| match i {
        Instruction::ApplyActions(a) | Instruction::WriteActions(a) => a.as_slice(),
        _ => &[],
    })
}

fn outputs_to(e: &FlowStats, port: u32) -> bool {
    actions(e).any(|a| matches!(a, Action::Output { port: p, .. } if *p == port))
}

fn uses_group(e: &FlowStats, group: u32) -> bool {
    actions(e).any(|a| matches!(a, Action::Group(g) if *g == group))
}

fn apply_flow_mod(t: &mut Tables, f: &FlowMod) -> Result<(), Refusal> {
    let in_table = |e: &FlowStats| f.table_id == OFPTT_ALL || e.table_id == f.table_id;
    let cookie_ok = |e: &FlowStats| e.cookie & f.cookie_mask == f.cookie & f.cookie_mask;
    let strict = |e: &FlowStats| {
        e.table_id == f.table_id && e.priority == f.priority && same_match(&e.r#match, &f.r#match)
    };
    match f.command {
        FlowModCommand::Add => {
            if f.table_id == OFPTT_ALL {
                return Err(ErrorType::FlowModFailed(FlowModFailedCode::BadTableId));
            }
            if let Some(g) = f.instructions.iter().find_map(|i| match i {
                Instruction::ApplyActions(a) | Instruction::WriteActions(a) => {
                    a.iter().find_map(|x| match x {
                        Action::Group(g) if !t.groups.contains_key(g) => Some(*g),
                        _ => None,
                    })
                }
                _ => None,
            }) {
                let _ = g;
                return Err(ErrorType::BadAction(
                    fabricflow_proto::openflow::symmetric::BadActionCode::BadOutGroup,
                ));
            }
            t.flows.retain(|e| !strict(e));
            t.flows.push(FlowStats::from(f));
        }
        FlowModCommand::Modify | FlowModCommand::ModifyStrict => {
            let strict_cmd = f.command == FlowModCommand::ModifyStrict;
            for e in t.flows.iter_mut().filter(|e| {
                cookie_ok(e)
                    && if strict_cmd {
                        strict(e)
                    } else {
                        in_table(e) && covers(&f.r#match, &e.r#match)
                    }
            }) {
                e.instructions.clone_from(&f.instructions);
            }
        }
        FlowModCommand::Delete | FlowModCommand::DeleteStrict => {
            let strict_cmd = f.command == FlowModCommand::DeleteStrict;
            t.flows.retain(|e| {
                let hit = cookie_ok(e)
                    && (f.out_port == OFPP_ANY || outputs_to(e, f.out_port))
                    && (f.out_group == OFPG_ANY || uses_group(e, f.out_group))
                    && if strict_cmd {
                        strict(e)
                    } else {
                        in_table(e) && covers(&f.r#match, &e.r#match)
                    };
                !hit
            });
        }
        FlowModCommand::Other(_) => {
            return Err(ErrorType::FlowModFailed(FlowModFailedCode::BadCommand))
        }
    }
    Ok(())
}

fn apply_group_mod(t: &mut Tables, g: &GroupMod) -> Result<(), Refusal> {
    let failed = |c| Err(ErrorType::GroupModFailed(c));
    match g.command {
        GroupModCommand::Add => {
            if t.groups.contains_key(&g.group_id) {
                return failed(GroupModFailedCode::GroupExists);
            }
            t.groups.insert(
                g.group_id,
                GroupEntry {
                    desc: GroupDesc::from(g),
                    bucket_bytes: vec![0; g.buckets.len()],
                },
            );
        }
        GroupModCommand::Modify => {
            let Some(e) = t.groups.get_mut(&g.group_id) else {
                return failed(GroupModFailedCode::UnknownGroup);
            };
            e.desc = GroupDesc::from(g);
            // OVS zeroes a modified group's counters.
            e.bucket_bytes = vec![0; g.buckets.len()];
        }
        GroupModCommand::Delete => {
            let gone: Vec<u32> = if g.group_id == OFPG_ALL {
                t.groups.keys().copied().collect()
            } else {
                vec![g.group_id]
            };
            for id in gone {
                t.groups.remove(&id);
                t.flows.retain(|e| !uses_group(e, id));
            }
        }
        GroupModCommand::Other(_) => return failed(GroupModFailedCode::BadCommand),
    }
    Ok(())
}
