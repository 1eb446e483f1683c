//! The per-switch OpenFlow session, sans-IO (quinn style): bytes, time and commands in;
//! messages out ([`Session::poll_transmit`]) and events ([`Session::poll_event`]). No sockets,
//! no tokio, no clock of its own, so whole conversations run in unit tests.
//!
//! Life of a connection:
//! 1. HELLO both ways with a version bitmap; a peer without OpenFlow 1.3 gets HELLO_FAILED and
//!    the connection closes. Framing errors (bad or oversized lengths), undecodable messages,
//!    a stalled partial message, or an echo flood close it too, each with a reason.
//! 2. FEATURES_REQUEST → dpid → [`Event::Identified`]; the shell answers with
//!    [`Session::set_desired`] (`None`: unknown switch, kept idle, not an error).
//! 3. SET_ASYNC (PORT_STATUS, and packet-ins sent by an action: our LLDP rule), ROLE_REQUEST
//!    (the role the shell asked for), PORT_DESC (initial link states).
//! 4. Once the role allows writing (MASTER or EQUAL) and the switch is known: sync (dump flows
//!    by cookie + groups, diff, one atomic ordered bundle, barrier). Any later change of the
//!    desired state or role runs the same procedure.
//! 5. ECHO keepalive both ways; LLDP probes on every fabric port every `lldp_interval`.

pub mod lldp;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fabricflow_proto::framer::Framer;
use fabricflow_proto::openflow::action::Action;
use fabricflow_proto::openflow::message::{Body, Message};
use fabricflow_proto::openflow::multipart::{
    FlowStats, GroupDesc, MultipartAssembler, MultipartReplyBody,
};
use fabricflow_proto::openflow::packet::PacketOut;
use fabricflow_proto::openflow::port::{config, state, Port, PortReason, OFPP_CONTROLLER};
use fabricflow_proto::openflow::switch::{AsyncConfig, ControllerRole};
use fabricflow_proto::openflow::OFP_VERSION;
use serde::Serialize;

use crate::desired::{DesiredSwitch, Endpoint};
use crate::sync::diff::{diff, flow_dump_request, OwnedGroups};

/// Timeouts and limits of a session.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Cookie of every controller flow (dump filter, deletes).
    pub cookie: u64,
    /// Group ids owned by the controller besides the planned ones.
    pub owned_groups: OwnedGroups,
    /// Longest accepted OpenFlow message (bytes, ≤ 65535).
    pub max_message_len: usize,
    /// HELLO + FEATURES must complete within this.
    pub handshake_timeout: Duration,
    /// Idle time after which we send ECHO_REQUEST.
    pub echo_interval: Duration,
    /// An ECHO_REQUEST unanswered for this long closes the connection.
    pub echo_timeout: Duration,
    /// Bytes of an incomplete message with no further byte for this long close the connection.
    pub partial_message_timeout: Duration,
    /// More ECHO_REQUESTs than this per second from the peer close the connection.
    pub max_echo_requests_per_sec: u32,
    /// Period of LLDP probes on fabric ports.
    pub lldp_interval: Duration,
    /// A sync (dump → barrier) taking longer than this closes the connection.
    pub sync_timeout: Duration,
    /// Delay before retrying a sync the switch refused.
    pub sync_retry: Duration,
    /// Largest multipart sequence accepted (entries).
    pub max_multipart_entries: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            cookie: 0x00ff_f10f_0000_0001,
            owned_groups: 1000..=999_999,
            max_message_len: 65535,
            handshake_timeout: Duration::from_secs(10),
            echo_interval: Duration::from_secs(5),
            echo_timeout: Duration::from_secs(15),
            partial_message_timeout: Duration::from_secs(10),
            max_echo_requests_per_sec: 100,
            lldp_interval: Duration::from_secs(1),
            sync_timeout: Duration::from_secs(60),
            sync_retry: Duration::from_secs(2),
            max_multipart_entries: 1_000_000,
        }
    }
}

/// The OpenFlow role the controller wants on a switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RoleWanted {
    /// No HA: every controller is EQUAL.
    Equal,
    /// HA leader, fenced by the election's generation.
    Master { generation: u64 },
    /// HA follower: keeps the connection, never writes.
    Slave { generation: u64 },
}

impl RoleWanted {
    pub fn writes(self) -> bool {
        !matches!(self, RoleWanted::Slave { .. })
    }

    fn to_wire(self) -> (ControllerRole, u64) {
        match self {
            RoleWanted::Equal => (ControllerRole::Equal, 0),
            RoleWanted::Master { generation } => (ControllerRole::Master, generation),
            RoleWanted::Slave { generation } => (ControllerRole::Slave, generation),
        }
    }
}

/// Why a session closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    PeerClosed,
    PeerClosedMidMessage { buffered: usize },
    Framing(String),
    Decode(String),
    NotOpenFlow,
    VersionMismatch(String),
    UnexpectedBeforeHello(String),
    HandshakeTimeout(&'static str),
    EchoTimeout,
    EchoFlood { per_sec: u32 },
    PartialMessageStalled { buffered: usize },
    SyncTimeout,
    Multipart(String),
    Io(String),
}

impl std::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::PeerClosed => write!(f, "peer closed the connection"),
            Self::PeerClosedMidMessage { buffered } => {
                write!(f, "peer closed mid-message ({buffered} bytes of an incomplete message)")
            }
            Self::Framing(e) => write!(f, "framing error: {e}"),
            Self::Decode(e) => write!(f, "undecodable message: {e}"),
            Self::NotOpenFlow => write!(f, "garbage: first bytes are not an OpenFlow HELLO"),
            Self::VersionMismatch(e) => write!(f, "version negotiation failed: {e}"),
            Self::UnexpectedBeforeHello(m) => write!(f, "{m} before HELLO"),
            Self::HandshakeTimeout(p) => write!(f, "handshake timed out waiting for {p}"),
            Self::EchoTimeout => write!(f, "echo reply timed out"),
            Self::EchoFlood { per_sec } => {
                write!(f, "echo flood: more than {per_sec} ECHO_REQUESTs per second")
            }
            Self::PartialMessageStalled { buffered } => write!(
                f,
                "message longer than its stream: {buffered} bytes of an incomplete message and no more"
            ),
            Self::SyncTimeout => write!(f, "sync timed out"),
            Self::Multipart(e) => write!(f, "multipart reply: {e}"),
            Self::Io(e) => write!(f, "i/o: {e}"),
        }
    }
}

/// What a session reports to the shell.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// FEATURES_REPLY arrived: the shell must call [`Session::set_desired`].
    Identified {
        dpid: u64,
        n_tables: u8,
    },
    RoleGranted {
        role: RoleWanted,
    },
    RoleRefused {
        reason: String,
    },
    SyncStarted,
    /// The switch holds the desired state. `flow_mods`/`group_mods`: what this sync sent.
    SyncDone {
        flow_mods: usize,
        group_mods: usize,
        flows: usize,
        groups: usize,
        duration: Duration,
    },
    SyncFailed {
        reason: String,
    },
    /// Port state at connect (PORT_DESC) or on change (PORT_STATUS): `up` = not down.
    PortState {
        port: u32,
        up: bool,
    },
    /// An LLDP probe from `peer` arrived on `in_port`.
    Lldp {
        in_port: u32,
        peer: Endpoint,
    },
    /// An OFPT_ERROR not tied to a sync.
    SwitchError {
        text: String,
    },
    Closed {
        reason: CloseReason,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    AwaitHello,
    AwaitFeatures,
    Up,
    Closed,
}

#[derive(Debug)]
enum SyncState {
    Idle,
    Dumping {
        flows_xid: u32,
        groups_xid: u32,
        flows: Option<Vec<FlowStats>>,
        groups: Option<Vec<GroupDesc>>,
        started: Instant,
    },
    Applying {
        first_xid: u32,
        last_xid: u32,
        barrier_xid: u32,
        failed: Option<String>,
        flow_mods: usize,
        group_mods: usize,
        started: Instant,
    },
}

/// Counters of one session (the shell aggregates them into metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SessionCounters {
    pub flow_mods_sent: u64,
    pub group_mods_sent: u64,
    pub syncs: u64,
    pub echo_requests_received: u64,
    pub lldp_sent: u64,
    pub lldp_received: u64,
}

/// One switch connection's protocol state.
#[derive(Debug)]
pub struct Session {
    cfg: SessionConfig,
    phase: Phase,
    framer: Framer,
    outbox: VecDeque<Message>,
    events: VecDeque<Event>,
    next_xid: u32,
    next_bundle_id: u32,
    started_at: Instant,
    dpid: Option<u64>,
    desired: Option<Arc<DesiredSwitch>>,
    desired_known: bool,
    role_wanted: RoleWanted,
    role_granted: Option<RoleWanted>,
    role_xid: Option<u32>,
    sync: SyncState,
    dirty: bool,
    synced: bool,
    retry_at: Option<Instant>,
    assembler: MultipartAssembler,
    port_desc_xid: Option<u32>,
    last_rx: Instant,
    echo_outstanding: Option<(u32, Instant)>,
    echo_window: (Instant, u32),
    next_lldp_at: Option<Instant>,
    counters: SessionCounters,
}

impl Session {
    /// A session for a fresh connection; HELLO is queued at once.
    pub fn new(cfg: SessionConfig, role: RoleWanted, now: Instant) -> Self {
        let framer = Framer::new(cfg.max_message_len);
        let max_entries = cfg.max_multipart_entries;
        let mut s = Session {
            cfg,
            phase: Phase::AwaitHello,
            framer,
            outbox: VecDeque::new(),
            events: VecDeque::new(),
            next_xid: 1,
            next_bundle_id: 1,
            started_at: now,
            dpid: None,
            desired: None,
            desired_known: false,
            role_wanted: role,
            role_granted: None,
            role_xid: None,
            sync: SyncState::Idle,
            dirty: true,
            synced: false,
            retry_at: None,
            assembler: MultipartAssembler::with_limit(max_entries),
            port_desc_xid: None,
            last_rx: now,
            echo_outstanding: None,
            echo_window: (now, 0),
            next_lldp_at: None,
            counters: SessionCounters::default(),
        };
        let x = s.xid();
        s.send(Message::hello(x));
        s
    }

    // ---- accessors ---------------------------------------------------------------------------

    pub fn dpid(&self) -> Option<u64> {
        self.dpid
    }
    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }
    /// Whether the switch held the desired state at the last completed sync and nothing
    /// changed since.
    pub fn is_synced(&self) -> bool {
        self.synced && !self.dirty
    }
    pub fn role_granted(&self) -> Option<RoleWanted> {
        self.role_granted
    }
    pub fn counters(&self) -> SessionCounters {
        self.counters
    }
    pub fn desired(&self) -> Option<&Arc<DesiredSwitch>> {
        self.desired.as_ref()
    }

    /// The next message to write.
    pub fn poll_transmit(&mut self) -> Option<Message> {
        self.outbox.pop_front()
    }

    /// The next event for the shell.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.phase == Phase::Closed {
            return None;
        }
        let mut t = vec![self.last_rx + self.cfg.echo_interval];
        if self.phase != Phase::Up {
            t.push(self.started_at + self.cfg.handshake_timeout);
        }
        if let Some((_, sent)) = self.echo_outstanding {
            t.push(sent + self.cfg.echo_timeout);
        }
        if self.framer.buffered() > 0 {
            t.push(self.last_rx + self.cfg.partial_message_timeout);
        }
        if let Some(r) = self.retry_at {
            t.push(r);
        }
        if let Some(l) = self.next_lldp_at {
            t.push(l);
        }
        match &self.sync {
            SyncState::Dumping { started, .. } | SyncState::Applying { started, .. } => {
                t.push(*started + self.cfg.sync_timeout)
            }
            SyncState::Idle => {}
        }
        t.into_iter().min()
    }

    // ---- inputs ------------------------------------------------------------------------------

    /// Bytes read from the connection.
    pub fn handle_bytes(&mut self, data: &[u8], now: Instant) {
        if self.phase == Phase::Closed {
            return;
        }
        self.last_rx = now;
        self.framer.push(data);
        // Anything that is not an OpenFlow HELLO at the very start is garbage (an HTTP client,
        // a port scanner): refuse it at once instead of waiting for a length that never comes.
        if self.phase == Phase::AwaitHello
            && self.framer.stream_offset() == 0
            && self.framer.buffered() == data.len()
        {
            let mut head = [0u8; 2];
            let n = data.len().min(2);
            if let (Some(dst), Some(src)) = (head.get_mut(..n), data.get(..n)) {
                dst.copy_from_slice(src);
            }
            let version_ok = n < 1 || (1..=6).contains(&head[0]);
            let type_ok = n < 2 || head[1] == 0;
            if !(version_ok && type_ok) {
                self.close(CloseReason::NotOpenFlow);
                return;
            }
        }
        loop {
            match self.framer.next_message() {
                Ok(Some(frame)) => match Message::decode(&frame) {
                    Ok(msg) => self.handle_message(msg, now),
                    Err(e) => {
                        let head = hex_prefix(&frame);
                        self.close(CloseReason::Decode(format!("{e} (bytes {head})")));
                    }
                },
                Ok(None) => break,
                Err(e) => self.close(CloseReason::Framing(e.to_string())),
            }
            if self.phase == Phase::Closed {
                return;
            }
        }
    }

    /// The peer closed its side.
    pub fn handle_eof(&mut self) {
        let buffered = self.framer.buffered();
        if buffered > 0 {
            self.close(CloseReason::PeerClosedMidMessage { buffered });
        } else {
            self.close(CloseReason::PeerClosed);
        }
    }

    /// An I/O error on the connection.
    pub fn handle_io_error(&mut self, e: String) {
        self.close(CloseReason::Io(e));
    }

    /// Timers: handshake, echo, stalled partial messages, LLDP, sync retry and timeout.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.phase == Phase::Closed {
            return;
        }
        let buffered = self.framer.buffered();
        if buffered > 0 && now >= self.last_rx + self.cfg.partial_message_timeout {
            return self.close(CloseReason::PartialMessageStalled { buffered });
        }
        match self.phase {
            Phase::AwaitHello if now >= self.started_at + self.cfg.handshake_timeout => {
                return self.close(CloseReason::HandshakeTimeout("HELLO"));
            }
            Phase::AwaitFeatures if now >= self.started_at + self.cfg.handshake_timeout => {
                return self.close(CloseReason::HandshakeTimeout("FEATURES_REPLY"));
            }
            _ => {}
        }
        if let Some((_, sent)) = self.echo_outstanding {
            if now >= sent + self.cfg.echo_timeout {
                return self.close(CloseReason::EchoTimeout);
            }
        } else if self.phase == Phase::Up && now >= self.last_rx + self.cfg.echo_interval {
            let x = self.xid();
            self.echo_outstanding = Some((x, now));
            self.send(Message::echo_request(x, Vec::new()));
        }
        let sync_started = match &self.sync {
            SyncState::Dumping { started, .. } | SyncState::Applying { started, .. } => {
                Some(*started)
            }
            SyncState::Idle => None,
        };
        if let Some(s) = sync_started {
            if now >= s + self.cfg.sync_timeout {
                return self.close(CloseReason::SyncTimeout);
            }
        }
        if let Some(r) = self.retry_at {
            if now >= r {
                self.retry_at = None;
                self.maybe_sync(now);
            }
        }
        if let Some(l) = self.next_lldp_at {
            if now >= l {
                self.send_lldp_probes();
                self.next_lldp_at = Some(now + self.cfg.lldp_interval);
            }
        }
    }

    // ---- commands from the shell -------------------------------------------------------------

    /// The switch's desired state (`None`: this dpid is not in the plan). Starts a sync when it
    /// changed and the session may write.
    pub fn set_desired(&mut self, desired: Option<Arc<DesiredSwitch>>, now: Instant) {
        let changed = !self.desired_known || self.desired.as_deref() != desired.as_deref();
        self.desired_known = true;
        if !changed {
            return;
        }
        self.desired = desired;
        self.dirty = true;
        self.update_lldp_timer(now);
        self.maybe_sync(now);
    }

    /// The role to hold; a change is sent at once (and a new MASTER resyncs).
    pub fn set_role(&mut self, role: RoleWanted, now: Instant) {
        if role == self.role_wanted {
            return;
        }
        self.role_wanted = role;
        if self.phase == Phase::Up {
            self.send_role_request();
        }
        if !role.writes() {
            self.next_lldp_at = None;
        }
        let _ = now;
    }

    // ---- internals ---------------------------------------------------------------------------

    fn xid(&mut self) -> u32 {
        let x = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1).max(1);
        x
    }

    fn send(&mut self, m: Message) {
        match &m.body {
            Body::FlowMod(_) => self.counters.flow_mods_sent += 1,
            Body::GroupMod(_) => self.counters.group_mods_sent += 1,
            Body::BundleAdd(b) => match b.message.body {
                Body::FlowMod(_) => self.counters.flow_mods_sent += 1,
                Body::GroupMod(_) => self.counters.group_mods_sent += 1,
                _ => {}
            },
            _ => {}
        }
        self.outbox.push_back(m);
    }

    fn close(&mut self, reason: CloseReason) {
        if self.phase == Phase::Closed {
            return;
        }
        self.phase = Phase::Closed;
        self.events.push_back(Event::Closed { reason });
    }

    fn handle_message(&mut self, msg: Message, now: Instant) {
        if self.phase == Phase::AwaitHello {
            let Body::Hello(h) = &msg.body else {
                return self.close(CloseReason::UnexpectedBeforeHello(
                    msg.body.name().to_string(),
                ));
            };
            if !h.supports(msg.version, OFP_VERSION) {
                let versions = h
                    .version_bitmap()
                    .map(|b| format!("{:?}", b.versions()))
                    .unwrap_or_else(|| format!("up to {:#x}", msg.version));
                let why = format!("peer speaks {versions}, we need OpenFlow 1.3 (0x04)");
                let x = self.xid();
                self.send(Message::hello_failed(x, msg.version, &why));
                return self.close(CloseReason::VersionMismatch(why));
            }
            self.phase = Phase::AwaitFeatures;
            let x = self.xid();
            self.send(Message::features_request(x));
            return;
        }
        match msg.body {
            Body::EchoRequest(_) => {
                self.counters.echo_requests_received += 1;
                let (start, count) = self.echo_window;
                if now.duration_since(start) >= Duration::from_secs(1) {
                    self.echo_window = (now, 1);
                } else {
                    self.echo_window = (start, count + 1);
                    if count + 1 > self.cfg.max_echo_requests_per_sec {
                        let per_sec = self.cfg.max_echo_requests_per_sec;
                        return self.close(CloseReason::EchoFlood { per_sec });
                    }
                }
                let reply = Message::echo_reply_to(&msg);
                self.send(reply);
            }
            Body::EchoReply(_) if self.echo_outstanding.map(|(x, _)| x) == Some(msg.xid) => {
                self.echo_outstanding = None;
            }
            Body::Hello(_) => {}
            Body::FeaturesReply(f) if self.phase == Phase::AwaitFeatures => {
                self.phase = Phase::Up;
                self.dpid = Some(f.datapath_id);
                self.events.push_back(Event::Identified {
                    dpid: f.datapath_id,
                    n_tables: f.n_tables,
                });
                let x = self.xid();
                self.send(Message::set_async(
                    x,
                    AsyncConfig {
                        // Packet-ins sent by an action (our LLDP → controller rule) only.
                        packet_in_mask: [1 << 1, 0],
                        // ADD, DELETE, MODIFY in every role.
                        port_status_mask: [0b111, 0b111],
                        flow_removed_mask: [0, 0],
                    },
                ));
                self.send_role_request();
                let x = self.xid();
                self.port_desc_xid = Some(x);
                self.send(Message::port_desc_request(x));
            }
            Body::RoleReply(r) if self.role_xid == Some(msg.xid) => {
                self.role_xid = None;
                let granted = match r.role {
                    ControllerRole::Master => RoleWanted::Master {
                        generation: r.generation_id,
                    },
                    ControllerRole::Slave => RoleWanted::Slave {
                        generation: r.generation_id,
                    },
                    _ => RoleWanted::Equal,
                };
                let was_writer = self.role_granted.is_some_and(RoleWanted::writes);
                self.role_granted = Some(granted);
                self.events.push_back(Event::RoleGranted { role: granted });
                if granted.writes() && !was_writer {
                    // A new master resyncs by diff (the old one may have left changes).
                    self.dirty = true;
                }
                if !granted.writes() {
                    self.synced = false;
                }
                self.update_lldp_timer(now);
                self.maybe_sync(now);
            }
            Body::MultipartReply(_) => self.handle_multipart(msg, now),
            Body::BundleControl(_) => {}
            Body::BarrierReply => self.handle_barrier(msg.xid, now),
            Body::Error(e) => {
                let text = format!("{} (xid {:#x})", e.error, msg.xid);
                if self.role_xid == Some(msg.xid) {
                    self.role_xid = None;
                    self.events.push_back(Event::RoleRefused { reason: text });
                    return;
                }
                match &mut self.sync {
                    SyncState::Applying {
                        first_xid,
                        last_xid,
                        failed,
                        ..
                    } if (*first_xid..=*last_xid).contains(&msg.xid) => {
                        failed.get_or_insert(text);
                    }
                    SyncState::Dumping {
                        flows_xid,
                        groups_xid,
                        ..
                    } if msg.xid == *flows_xid || msg.xid == *groups_xid => {
                        self.sync = SyncState::Idle;
                        self.sync_failed(format!("dump refused: {text}"), now);
                    }
                    _ => self.events.push_back(Event::SwitchError { text }),
                }
            }
            Body::PortStatus(ps) => self.events.push_back(Event::PortState {
                port: ps.port.port_no,
                // A deleted port carries no link, whatever its last flags said.
                up: port_up(&ps.port) && ps.reason != PortReason::Delete,
            }),
            Body::PacketIn(pi) => {
                if let (Some(in_port), Some(peer)) = (pi.in_port(), lldp::parse(&pi.data)) {
                    self.counters.lldp_received += 1;
                    self.events.push_back(Event::Lldp { in_port, peer });
                }
            }
            _ => {}
        }
    }

    fn send_role_request(&mut self) {
        let (role, generation) = self.role_wanted.to_wire();
        let x = self.xid();
        self.role_xid = Some(x);
        self.send(Message::role_request(x, role, generation));
    }

    fn can_write(&self) -> bool {
        self.phase == Phase::Up
            && self.role_granted.is_some_and(RoleWanted::writes)
            && self.role_wanted.writes()
    }

    fn update_lldp_timer(&mut self, now: Instant) {
        let probing = self.can_write()
            && self
                .desired
                .as_ref()
                .is_some_and(|d| !d.fabric_ports.is_empty());
        match (probing, self.next_lldp_at) {
            (true, None) => self.next_lldp_at = Some(now),
            (false, Some(_)) => self.next_lldp_at = None,
            _ => {}
        }
    }

    fn send_lldp_probes(&mut self) {
        let (Some(dpid), Some(d)) = (self.dpid, self.desired.clone()) else {
            return;
        };
        for port in d.fabric_ports.keys() {
            let frame = lldp::build(Endpoint { dpid, port: *port });
            let x = self.xid();
            self.counters.lldp_sent += 1;
            self.send(Message::packet_out(
                x,
                PacketOut::new(OFPP_CONTROLLER, vec![Action::output(*port)], frame),
            ));
        }
    }

    fn maybe_sync(&mut self, now: Instant) {
        if !self.dirty
            || !self.can_write()
            || self.desired.is_none()
            || self.retry_at.is_some()
            || !matches!(self.sync, SyncState::Idle)
        {
            return;
        }
        self.dirty = false;
        self.synced = false;
        let flows_xid = self.xid();
        let groups_xid = self.xid();
        self.send(Message::flow_stats_request(
            flows_xid,
            flow_dump_request(self.cfg.cookie),
        ));
        self.send(Message::group_desc_request(groups_xid));
        self.sync = SyncState::Dumping {
            flows_xid,
            groups_xid,
            flows: None,
            groups: None,
            started: now,
        };
        self.events.push_back(Event::SyncStarted);
    }

    fn handle_multipart(&mut self, msg: Message, now: Instant) {
        let xid = msg.xid;
        let body = match self.assembler.push_message(&msg) {
            Ok(Some(b)) => b,
            Ok(None) => return,
            Err(e) => return self.close(CloseReason::Multipart(e.to_string())),
        };
        if self.port_desc_xid == Some(xid) {
            self.port_desc_xid = None;
            if let MultipartReplyBody::PortDesc(ports) = body {
                for p in ports {
                    self.events.push_back(Event::PortState {
                        port: p.port_no,
                        up: port_up(&p),
                    });
                }
            }
            return;
        }
        let SyncState::Dumping {
            flows_xid,
            groups_xid,
            flows,
            groups,
            started,
        } = &mut self.sync
        else {
            return;
        };
        match body {
            MultipartReplyBody::Flow(v) if xid == *flows_xid => *flows = Some(v),
            MultipartReplyBody::GroupDesc(v) if xid == *groups_xid => *groups = Some(v),
            _ => return,
        }
        let (Some(_), Some(_)) = (flows.as_ref(), groups.as_ref()) else {
            return;
        };
        let started = *started;
        let flows = flows.take().unwrap_or_default();
        let groups = groups.take().unwrap_or_default();
        let Some(desired) = self.desired.clone() else {
            self.sync = SyncState::Idle;
            return;
        };
        let d = diff(
            &desired,
            &flows,
            &groups,
            self.cfg.cookie,
            &self.cfg.owned_groups,
        );
        let barrier_xid;
        let (first_xid, last_xid) = if d.is_empty() {
            barrier_xid = self.xid();
            (barrier_xid, barrier_xid)
        } else {
            let bundle_id = self.next_bundle_id;
            self.next_bundle_id = self.next_bundle_id.wrapping_add(1);
            let first = self.next_xid;
            let (msgs, commit_xid) = d.bundle(bundle_id, first);
            self.next_xid = commit_xid.wrapping_add(1).max(1);
            for m in msgs {
                self.send(m);
            }
            barrier_xid = self.xid();
            (first, commit_xid)
        };
        self.send(Message::barrier_request(barrier_xid));
        self.sync = SyncState::Applying {
            first_xid,
            last_xid,
            barrier_xid,
            failed: None,
            flow_mods: d.flow_mod_count(),
            group_mods: d.group_mod_count(),
            started,
        };
        let _ = now;
    }

    fn handle_barrier(&mut self, xid: u32, now: Instant) {
        let SyncState::Applying {
            barrier_xid,
            failed,
            flow_mods,
            group_mods,
            started,
            ..
        } = &mut self.sync
        else {
            return;
        };
        if *barrier_xid != xid {
            return;
        }
        let failed = failed.take();
        let (flow_mods, group_mods, started) = (*flow_mods, *group_mods, *started);
        self.sync = SyncState::Idle;
        if let Some(reason) = failed {
            return self.sync_failed(reason, now);
        }
        self.counters.syncs += 1;
        self.synced = true;
        let (flows, groups) = self
            .desired
            .as_ref()
            .map_or((0, 0), |d| (d.flows.len(), d.groups.len()));
        self.events.push_back(Event::SyncDone {
            flow_mods,
            group_mods,
            flows,
            groups,
            duration: now.saturating_duration_since(started),
        });
        // The desired state may have changed while this sync was in flight.
        self.maybe_sync(now);
    }

    fn sync_failed(&mut self, reason: String, now: Instant) {
        self.synced = false;
        self.dirty = true;
        self.retry_at = Some(now + self.cfg.sync_retry);
        self.events.push_back(Event::SyncFailed { reason });
    }
}

fn port_up(p: &Port) -> bool {
    p.config & config::PORT_DOWN == 0 && p.state & state::LINK_DOWN == 0
}

fn hex_prefix(b: &[u8]) -> String {
    b.iter().take(16).map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests;
