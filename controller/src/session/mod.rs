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
//!    by cookie + groups, diff, one atomic ordered bundle, barrier). A switch that refuses the
//!    bundle experimenter (or [`SyncMethod::Ordered`]) gets the diff as make-before-break steps
//!    of plain mods instead ([`crate::sync::ordered`]). Any later change of the desired state
//!    or role runs the same procedure.
//! 5. ECHO keepalive both ways; LLDP probes on every fabric port every `lldp_interval`.

pub mod lldp;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fabricflow_proto::openflow::action::Action;
use fabricflow_proto::openflow::channel::{Channel, ChannelConfig, Event as ChannelEvent};
use fabricflow_proto::openflow::message::{Body, Message};
use fabricflow_proto::openflow::multipart::{FlowStats, GroupDesc, MultipartReplyBody};
use fabricflow_proto::openflow::packet::PacketOut;
use fabricflow_proto::openflow::port::{config, state, Port, PortReason, OFPP_CONTROLLER};
use fabricflow_proto::openflow::switch::{AsyncConfig, ControllerRole};
use fabricflow_proto::openflow::symmetric::{BadRequestCode, ErrorType};
use serde::{Deserialize, Serialize};

use crate::desired::{DesiredSwitch, Endpoint};
use crate::sync::diff::{diff, flow_dump_request, OwnedGroups};
use crate::sync::ordered::{ordered_steps, Change};

/// How a sync applies its difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncMethod {
    /// One atomic bundle; make-before-break steps once the switch refuses the bundle
    /// experimenter.
    #[default]
    Auto,
    /// Always a bundle: a refusal is retried like any other.
    Bundle,
    /// Never a bundle: make-before-break steps of plain FLOW_MODs and GROUP_MODs.
    Ordered,
}

pub use fabricflow_proto::openflow::channel::CloseReason;

/// Timeouts and limits of a session.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Framing, handshake, echo and multipart limits of the OpenFlow channel.
    pub channel: ChannelConfig,
    /// Cookie of every controller flow (dump filter, deletes).
    pub cookie: u64,
    /// Group ids owned by the controller besides the planned ones.
    pub owned_groups: OwnedGroups,
    /// Period of LLDP probes on fabric ports.
    pub lldp_interval: Duration,
    /// A sync (dump → barrier) taking longer than this closes the connection.
    pub sync_timeout: Duration,
    /// Delay before retrying a sync the switch refused.
    pub sync_retry: Duration,
    /// Bundle or make-before-break steps.
    pub sync_method: SyncMethod,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            channel: ChannelConfig::default(),
            cookie: crate::plan::DEFAULT_COOKIE,
            owned_groups: 1000..=999_999,
            lldp_interval: Duration::from_secs(1),
            sync_timeout: Duration::from_secs(60),
            sync_retry: Duration::from_secs(2),
            sync_method: SyncMethod::Auto,
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
    /// The switch refused the bundle experimenter: this and later syncs of the connection use
    /// make-before-break steps.
    BundlesRefused {
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

/// What a request to the switch was for (the channel hands it back with the answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Req {
    PortDesc,
    /// The `n`th ROLE_REQUEST: only the latest one's answer counts.
    Role(u64),
    /// The dumps of sync `n`.
    DumpFlows(u64),
    DumpGroups(u64),
    /// The BUNDLE_CONTROL OPEN of sync `n` (its refusal tells whether bundles exist).
    BundleOpen(u64),
    /// A bundle message or plain mod of sync `n`.
    SyncMod(u64),
    /// The barrier closing sync `n` or one of its steps.
    SyncBarrier(u64),
}

#[derive(Debug)]
enum SyncState {
    Idle,
    Dumping {
        flows: Option<Vec<FlowStats>>,
        groups: Option<Vec<GroupDesc>>,
        started: Instant,
    },
    Applying {
        failed: Option<String>,
        /// The bundle OPEN was refused as an unknown experimenter.
        bundle_refused: bool,
        /// Make-before-break steps not yet sent (each after the previous step's barrier).
        steps: VecDeque<Vec<Change>>,
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
    /// The channel's clock is nanoseconds since this instant.
    origin: Instant,
    channel: Channel<Req>,
    closed: bool,
    events: VecDeque<Event>,
    next_bundle_id: u32,
    /// The switch refused the bundle experimenter on this connection.
    bundles_refused: bool,
    dpid: Option<u64>,
    desired: Option<Arc<DesiredSwitch>>,
    desired_known: bool,
    role_wanted: RoleWanted,
    role_granted: Option<RoleWanted>,
    role_seq: u64,
    /// Sync generation: answers tagged with an older one are ignored.
    sync_seq: u64,
    sync: SyncState,
    dirty: bool,
    synced: bool,
    retry_at: Option<Instant>,
    next_lldp_at: Option<Instant>,
    counters: SessionCounters,
}

impl Session {
    /// A session for a fresh connection; HELLO is queued at once.
    pub fn new(cfg: SessionConfig, role: RoleWanted, now: Instant) -> Self {
        Session {
            channel: Channel::new(cfg.channel.clone(), 0),
            cfg,
            origin: now,
            closed: false,
            events: VecDeque::new(),
            next_bundle_id: 1,
            bundles_refused: false,
            dpid: None,
            desired: None,
            desired_known: false,
            role_wanted: role,
            role_granted: None,
            role_seq: 0,
            sync_seq: 0,
            sync: SyncState::Idle,
            dirty: true,
            synced: false,
            retry_at: None,
            next_lldp_at: None,
            counters: SessionCounters::default(),
        }
    }

    // ---- accessors ---------------------------------------------------------------------------

    pub fn dpid(&self) -> Option<u64> {
        self.dpid
    }
    pub fn is_closed(&self) -> bool {
        self.closed
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
        SessionCounters {
            echo_requests_received: self.channel.counters().echo_requests_received,
            ..self.counters
        }
    }
    pub fn desired(&self) -> Option<&Arc<DesiredSwitch>> {
        self.desired.as_ref()
    }

    /// The next message to write.
    pub fn poll_transmit(&mut self) -> Option<Message> {
        self.channel.poll_transmit()
    }

    /// The next event for the shell.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.closed {
            return None;
        }
        let sync_deadline = match &self.sync {
            SyncState::Dumping { started, .. } | SyncState::Applying { started, .. } => {
                Some(*started + self.cfg.sync_timeout)
            }
            SyncState::Idle => None,
        };
        [
            self.channel.poll_timeout().map(|t| self.instant(t)),
            self.retry_at,
            self.next_lldp_at,
            sync_deadline,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    // ---- inputs ------------------------------------------------------------------------------

    /// Bytes read from the connection.
    pub fn handle_bytes(&mut self, data: &[u8], now: Instant) {
        self.channel.handle_bytes(data, self.ns(now));
        self.drain_channel(now);
    }

    /// The peer closed its side.
    pub fn handle_eof(&mut self) {
        self.channel.handle_eof();
        self.drain_channel(self.origin);
    }

    /// An I/O error on the connection.
    pub fn handle_io_error(&mut self, e: String) {
        self.channel.handle_io_error(e);
        self.drain_channel(self.origin);
    }

    /// Timers: the channel's (handshake, echo, stalled partial messages), LLDP, sync retry and
    /// timeout.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.channel.handle_timeout(self.ns(now));
        self.drain_channel(now);
        if self.closed {
            return;
        }
        let sync_started = match &self.sync {
            SyncState::Dumping { started, .. } | SyncState::Applying { started, .. } => {
                Some(*started)
            }
            SyncState::Idle => None,
        };
        if sync_started.is_some_and(|s| now >= s + self.cfg.sync_timeout) {
            self.channel.close(CloseReason::Timeout("sync"));
            return self.drain_channel(now);
        }
        if self.retry_at.is_some_and(|r| now >= r) {
            self.retry_at = None;
            self.maybe_sync(now);
        }
        if self.next_lldp_at.is_some_and(|l| now >= l) {
            self.send_lldp_probes();
            self.next_lldp_at = Some(now + self.cfg.lldp_interval);
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

    /// The operator asked for a resync: dump and diff again at once (after a sync in flight, and
    /// cancelling a retry back-off). An unchanged switch receives nothing.
    pub fn resync(&mut self, now: Instant) {
        self.dirty = true;
        self.retry_at = None;
        self.maybe_sync(now);
    }

    /// The role to hold; a change is sent at once (and a new MASTER resyncs).
    pub fn set_role(&mut self, role: RoleWanted, now: Instant) {
        if role == self.role_wanted {
            return;
        }
        self.role_wanted = role;
        if self.channel.is_up() {
            self.send_role_request();
        }
        if !role.writes() {
            self.next_lldp_at = None;
        }
        let _ = now;
    }

    // ---- internals ---------------------------------------------------------------------------

    fn ns(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.origin).as_nanos()).unwrap_or(u64::MAX)
    }

    fn instant(&self, ns: u64) -> Instant {
        self.origin + Duration::from_nanos(ns)
    }

    fn count_mod(&mut self, m: &Message) {
        let inner = match &m.body {
            Body::BundleAdd(b) => &b.message.body,
            b => b,
        };
        match inner {
            Body::FlowMod(_) => self.counters.flow_mods_sent += 1,
            Body::GroupMod(_) => self.counters.group_mods_sent += 1,
            _ => {}
        }
    }

    fn drain_channel(&mut self, now: Instant) {
        while let Some(ev) = self.channel.poll_event() {
            match ev {
                ChannelEvent::Up(f) => self.on_up(f.datapath_id, f.n_tables),
                ChannelEvent::Reply { tag, msg } => self.on_reply(tag, msg, now),
                ChannelEvent::Refused { tag, xid, error } => {
                    let text = format!("{} (xid {xid:#x})", error.error);
                    self.on_refused(tag, error.error, text, now);
                }
                ChannelEvent::Message(msg) => self.on_unsolicited(msg),
                ChannelEvent::Closed(reason) => {
                    self.closed = true;
                    self.events.push_back(Event::Closed { reason });
                }
            }
        }
    }

    fn on_up(&mut self, dpid: u64, n_tables: u8) {
        self.dpid = Some(dpid);
        self.events.push_back(Event::Identified { dpid, n_tables });
        self.channel.send(|x| {
            Message::set_async(
                x,
                AsyncConfig {
                    // Packet-ins sent by an action (our LLDP → controller rule) only.
                    packet_in_mask: [1 << 1, 0],
                    // ADD, DELETE, MODIFY in every role.
                    port_status_mask: [0b111, 0b111],
                    flow_removed_mask: [0, 0],
                },
            )
        });
        self.send_role_request();
        self.channel
            .request(Req::PortDesc, Message::port_desc_request);
    }

    fn on_reply(&mut self, tag: Req, msg: Message, now: Instant) {
        match (tag, msg.body) {
            (Req::Role(n), Body::RoleReply(r)) if n == self.role_seq => {
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
            (Req::PortDesc, Body::MultipartReply(r)) => {
                if let MultipartReplyBody::PortDesc(ports) = r.body {
                    for p in ports {
                        self.events.push_back(Event::PortState {
                            port: p.port_no,
                            up: port_up(&p),
                        });
                    }
                }
            }
            (Req::DumpFlows(n) | Req::DumpGroups(n), Body::MultipartReply(r))
                if n == self.sync_seq =>
            {
                self.on_dump(r.body, now);
            }
            (Req::SyncBarrier(n), Body::BarrierReply) if n == self.sync_seq => {
                self.on_sync_barrier(now)
            }
            _ => {}
        }
    }

    fn on_refused(&mut self, tag: Req, error: ErrorType, text: String, now: Instant) {
        match tag {
            Req::BundleOpen(n) if n == self.sync_seq => {
                // OpenFlow 1.3 §7.4.4: an unsupported experimenter (or experimenter type) is
                // OFPBRC_BAD_EXPERIMENTER (or OFPBRC_BAD_EXP_TYPE); older switches say BAD_TYPE.
                let unsupported = matches!(
                    error,
                    ErrorType::BadRequest(
                        BadRequestCode::BadExperimenter
                            | BadRequestCode::BadExpType
                            | BadRequestCode::BadType
                    )
                );
                if let SyncState::Applying {
                    failed,
                    bundle_refused,
                    ..
                } = &mut self.sync
                {
                    *bundle_refused |= unsupported && self.cfg.sync_method == SyncMethod::Auto;
                    failed.get_or_insert(text);
                }
            }
            Req::Role(n) if n == self.role_seq => {
                self.events.push_back(Event::RoleRefused { reason: text });
            }
            Req::SyncMod(n) | Req::SyncBarrier(n) if n == self.sync_seq => {
                if let SyncState::Applying { failed, .. } = &mut self.sync {
                    failed.get_or_insert(text);
                }
            }
            Req::DumpFlows(n) | Req::DumpGroups(n)
                if n == self.sync_seq && matches!(self.sync, SyncState::Dumping { .. }) =>
            {
                self.sync = SyncState::Idle;
                self.sync_failed(format!("dump refused: {text}"), now);
            }
            _ => self.events.push_back(Event::SwitchError { text }),
        }
    }

    fn on_unsolicited(&mut self, msg: Message) {
        match msg.body {
            Body::Error(e) => self.events.push_back(Event::SwitchError {
                text: format!("{} (xid {:#x})", e.error, msg.xid),
            }),
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
        self.role_seq += 1;
        self.channel.request(Req::Role(self.role_seq), |x| {
            Message::role_request(x, role, generation)
        });
    }

    fn can_write(&self) -> bool {
        self.channel.is_up()
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
            self.counters.lldp_sent += 1;
            self.channel.send(|x| {
                Message::packet_out(
                    x,
                    PacketOut::new(OFPP_CONTROLLER, vec![Action::output(*port)], frame),
                )
            });
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
        self.sync_seq += 1;
        let n = self.sync_seq;
        let req = flow_dump_request(self.cfg.cookie);
        self.channel
            .request(Req::DumpFlows(n), |x| Message::flow_stats_request(x, req));
        self.channel
            .request(Req::DumpGroups(n), Message::group_desc_request);
        self.sync = SyncState::Dumping {
            flows: None,
            groups: None,
            started: now,
        };
        self.events.push_back(Event::SyncStarted);
    }

    fn on_dump(&mut self, body: MultipartReplyBody, now: Instant) {
        let SyncState::Dumping {
            flows,
            groups,
            started,
        } = &mut self.sync
        else {
            return;
        };
        match body {
            MultipartReplyBody::Flow(v) => *flows = Some(v),
            MultipartReplyBody::GroupDesc(v) => *groups = Some(v),
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
        let n = self.sync_seq;
        let (flow_mods, group_mods) = (d.flow_mod_count(), d.group_mod_count());
        let use_bundle = match self.cfg.sync_method {
            SyncMethod::Auto => !self.bundles_refused,
            SyncMethod::Bundle => true,
            SyncMethod::Ordered => false,
        };
        let mut steps = VecDeque::new();
        if use_bundle && !d.is_empty() {
            let bundle_id = self.next_bundle_id;
            self.next_bundle_id = self.next_bundle_id.wrapping_add(1);
            let count = u32::try_from(d.message_count()).unwrap_or(u32::MAX);
            let first = self.channel.reserve_xids(count);
            let (msgs, _) = d.bundle(bundle_id, first);
            for (i, m) in msgs.into_iter().enumerate() {
                self.count_mod(&m);
                let tag = if i == 0 {
                    Req::BundleOpen(n)
                } else {
                    Req::SyncMod(n)
                };
                self.channel.command_with_xid(tag, m);
            }
        } else if !use_bundle {
            steps = ordered_steps(&d).into();
        }
        self.sync = SyncState::Applying {
            failed: None,
            bundle_refused: false,
            steps,
            flow_mods,
            group_mods,
            started,
        };
        self.send_next_step();
        let _ = now;
    }

    /// Sends the next make-before-break step, if any, and the barrier that closes it (or the
    /// barrier that closes the sync's bundle).
    fn send_next_step(&mut self) {
        let n = self.sync_seq;
        let step = match &mut self.sync {
            SyncState::Applying { steps, .. } => steps.pop_front(),
            _ => return,
        };
        for c in step.unwrap_or_default() {
            let m = match c {
                Change::Flow(f) => Message::flow_mod(0, f),
                Change::Group(g) => Message::group_mod(0, g),
            };
            self.count_mod(&m);
            self.channel
                .command(Req::SyncMod(n), |x| Message { xid: x, ..m });
        }
        self.channel
            .request(Req::SyncBarrier(n), Message::barrier_request);
    }

    fn on_sync_barrier(&mut self, now: Instant) {
        let SyncState::Applying {
            failed,
            bundle_refused,
            steps,
            flow_mods,
            group_mods,
            started,
        } = &mut self.sync
        else {
            return;
        };
        if failed.is_none() && !steps.is_empty() {
            return self.send_next_step();
        }
        let (failed, bundle_refused) = (failed.take(), *bundle_refused);
        let (flow_mods, group_mods, started) = (*flow_mods, *group_mods, *started);
        self.sync = SyncState::Idle;
        if bundle_refused {
            // Nothing was applied (every part of the bundle was refused): sync again at once,
            // without bundles.
            self.bundles_refused = true;
            self.dirty = true;
            self.events.push_back(Event::BundlesRefused {
                reason: failed.unwrap_or_default(),
            });
            return self.maybe_sync(now);
        }
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

#[cfg(test)]
mod tests;
