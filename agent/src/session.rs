//! The agent's OpenFlow session with one switch, sans-IO (STYLE "quinn"): bytes read and the
//! time go in, messages to send come out of [`Session::poll_transmit`]. The tokio task in
//! [`crate::runtime`] only moves bytes and reads the clock, so a whole conversation runs in a
//! unit test. Framing, the handshake, version negotiation, echo keepalive, xids and multipart
//! assembly are the OpenFlow [`Channel`]'s, shared with the controller.
//!
//! # Life of a connection
//! 1. [`Session::on_connected`]: the channel's HELLO and FEATURES_REQUEST; once the switch
//!    described itself: SET_CONFIG (miss_send_len, else OVS sends a management-socket
//!    connection no asynchronous message at all, DESIGN §4), NXT_SET_CONTROLLER_ID (the plan's
//!    agent id: OVS then delivers exactly the packet-ins of `controller(id=…)` actions carrying
//!    that id), ROLE_REQUEST EQUAL (optional: a rejection is counted and tolerated, the agent
//!    writes groups as EQUAL or as the default role, which on OVS is also EQUAL), PORT_DESC,
//!    then a *plan read*: GROUP_DESC + FLOW_STATS (cookie-masked).
//! 2. The plan read is learned ([`LearnedPlan::learn`]). A switch without the controller's plan
//!    yet (no flow with the plan's cookie, no decision point) is *waiting for the plan*, not an
//!    error: the read is repeated every `plan_refresh_period`. A switch whose installed plan has
//!    no decision point (a fat-tree's top level: every route there is minimal) is ready with
//!    nothing to adapt; its fabric ports still feed the emulated congestion point.
//!    The read is also repeated periodically, after a GROUP_MOD error, and after a PORT_STATUS,
//!    so the agent follows the controller's changes and resyncs.
//! 3. Running: CNM packet-ins are checked ([`check_cnm`]) and fed to the [`Policy`];
//!    OFPMP_PORT_STATS is polled every `port_stats_period` and tx_bytes deltas become
//!    `BytesSent` (or, with [`ByteCounter::MinimalBucket`], OFPMP_GROUP is polled and the
//!    deltas of each decision point's bucket 0 become `BytesSent` for its minimal port);
//!    `Tick` runs when the policy's idle timer is due (every `tick_period` under DRB).
//!    Changed probabilities go through the
//!    [`WeightPlanner`](crate::weights::WeightPlanner); its writes become GROUP_MOD MODIFY
//!    messages that keep every bucket's actions and watch port/group and change only the
//!    weights.
//!
//! Everything between a CNM or a congestion sample and a weight write is the [`SwitchCore`]'s;
//! the session only turns OpenFlow messages into its inputs and its writes into GROUP_MODs
//! ([`Session::poll_transmit`]). The core outlives connections: P and the write history survive
//! a reconnect; a relearned group whose structure is unchanged keeps its P.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use fabricflow_proto::cnm::Cnm;
use fabricflow_proto::ethernet::{ethertype, FrameInfo};
use fabricflow_proto::openflow::action::Action;
use fabricflow_proto::openflow::channel::{Channel, ChannelConfig, CloseReason, Event};
use fabricflow_proto::openflow::group::GroupMod;
use fabricflow_proto::openflow::group::OFPG_ALL;
use fabricflow_proto::openflow::message::{Body, Message};
use fabricflow_proto::openflow::multipart::{
    FlowStatsRequest, GroupStats, MultipartReplyBody, PortStats, OFPG_ANY, OFPP_ANY, OFPTT_ALL,
};
use fabricflow_proto::openflow::packet::{PacketIn, PacketOut};
use fabricflow_proto::openflow::port::{OFPP_CONTROLLER, OFPP_TABLE};
use fabricflow_proto::openflow::switch::ControllerRole;
use fabricflow_proto::openflow::symmetric::ErrorType;
use fabricflow_proto::MacAddr;
use serde::Serialize;

use crate::config::{AgentConfig, ByteCounter};
use crate::error::ConfigError;
use crate::latency::LatencyHistogram;
use crate::link::{LinkConfig, PortLink, PortLinkConfig, PortLinks};
use crate::plan::{LearnedPlan, PlanConventions};
use crate::policy::Policy;
use crate::switch_core::{
    CnmFate, CnmRoute, CongestionSample, Culprit, Learned, ReceivedCnm, SwitchCore, TickDue,
    TimedWrite,
};
use crate::PortNo;

/// How the session talks to its switch (the `[runtime]` section, see [`crate::config`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionConfig {
    /// Framing, handshake, echo keepalive and multipart limits of the OpenFlow channel.
    pub channel: ChannelConfig,
    /// NXT_SET_CONTROLLER_ID: the id the plan's `controller(id=…)` actions carry.
    pub controller_id: u16,
    /// SET_CONFIG miss_send_len (≥ 128 so a whole CNM arrives; 0xffff = no buffering).
    pub miss_send_len: u16,
    /// Send ROLE_REQUEST EQUAL after the handshake.
    pub request_role_equal: bool,
    /// OFPMP_PORT_STATS (or OFPMP_GROUP, see `byte_counter`) polling period, ns.
    pub port_stats_period_ns: u64,
    /// What feeds the byte counter.
    pub byte_counter: ByteCounter,
    /// Period of the plan read (GROUP_DESC + FLOW_STATS), ns.
    pub plan_refresh_period_ns: u64,
    /// Period of the `Tick` under DRB, ns (QCN-SW ticks at its idle timer's deadline).
    pub tick_period_ns: u64,
    /// Where self-generated CNMs enter the pipeline (PACKET_OUT in_port).
    pub cnm_inject_in_port: PortNo,
    /// The plan's conventions.
    pub plan: PlanConventions,
    /// Links of ports the switch's `curr_speed` does not describe, and overrides.
    pub link: LinkConfig,
    /// This switch's ports as stated in the agent's file (`[[switch]] ports`).
    pub stated_links: Vec<PortLinkConfig>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            channel: ChannelConfig::default(),
            controller_id: fabricflow_proto::conventions::AGENT_CONTROLLER_ID,
            miss_send_len: 0xffff,
            request_role_equal: true,
            port_stats_period_ns: 100_000_000,
            byte_counter: ByteCounter::Port,
            plan_refresh_period_ns: 5_000_000_000,
            tick_period_ns: 1_000_000,
            cnm_inject_in_port: OFPP_CONTROLLER,
            plan: PlanConventions::default(),
            link: LinkConfig::default(),
            stated_links: Vec::new(),
        }
    }
}

/// Shortest gap between two plan reads triggered by refused weight writes.
const REFUSAL_REREAD_MIN_NS: u64 = 1_000_000_000;

/// Why a packet-in was not charged to a decision point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// No plan learned yet: the fabric ports are unknown.
    NoPlan,
    /// The packet-in carries no IN_PORT.
    NoInPort,
    /// Arrived on a port that is not a fabric port (a host must not steer the fabric).
    NotFabricPort,
    /// Not a CNM (EtherType ≠ 0x22E7).
    NotCnm,
    /// The switch cut the frame (data shorter than total_len) before the CNM could be parsed.
    Truncated,
    /// A CNM that does not parse (version ≠ 0, MSDU length out of range, truncated PDU, …).
    Malformed,
    /// A CNM this switch cannot charge that was already relayed
    /// [`MAX_CNM_RELAYS`](crate::switch_core::MAX_CNM_RELAYS) times.
    RelayBudgetSpent,
}

impl DropReason {
    /// Every reason, for metrics.
    pub const ALL: [DropReason; 7] = [
        DropReason::NoPlan,
        DropReason::NoInPort,
        DropReason::NotFabricPort,
        DropReason::NotCnm,
        DropReason::Truncated,
        DropReason::Malformed,
        DropReason::RelayBudgetSpent,
    ];

    /// The label used in metrics.
    pub fn label(self) -> &'static str {
        match self {
            DropReason::NoPlan => "no_plan",
            DropReason::NoInPort => "no_in_port",
            DropReason::NotFabricPort => "not_fabric_port",
            DropReason::NotCnm => "not_cnm",
            DropReason::Truncated => "truncated",
            DropReason::Malformed => "malformed",
            DropReason::RelayBudgetSpent => "relay_budget_spent",
        }
    }
}

/// Checks a packet-in as a CNM: it must come from a fabric port of `plan` and parse as an IEEE
/// 802.1Qau CNM. Returns the arrival port, the frame's Ethernet header and the parsed CNM; the
/// [`SwitchCore`] decides whether it is charged here (and which port's P it cuts) or relayed
/// (DESIGN §5).
pub fn check_cnm(
    plan: Option<&LearnedPlan>,
    pi: &PacketIn,
) -> Result<(PortNo, FrameInfo, Cnm), DropReason> {
    check_cnm_frame(plan, pi.in_port(), &pi.data, usize::from(pi.total_len))
}

/// [`check_cnm`] for `data`, a frame of `total_len` octets that arrived on `port`: a packet-in's,
/// or one the shell read from the port's interface.
pub fn check_cnm_frame(
    plan: Option<&LearnedPlan>,
    port: Option<PortNo>,
    data: &[u8],
    total_len: usize,
) -> Result<(PortNo, FrameInfo, Cnm), DropReason> {
    let plan = plan.ok_or(DropReason::NoPlan)?;
    let port = port.ok_or(DropReason::NoInPort)?;
    if !plan.takes_cnm_from(port) {
        return Err(DropReason::NotFabricPort);
    }
    let is_cnm_type =
        fabricflow_proto::ethernet::frame_info(data).map(|fi| fi.ethertype == ethertype::CNM);
    match (is_cnm_type, Cnm::parse_frame(data)) {
        (_, Ok((info, cnm))) => Ok((port, info, cnm)),
        (Ok(false), Err(_)) => Err(DropReason::NotCnm),
        (_, Err(_)) if data.len() < total_len => Err(DropReason::Truncated),
        (_, Err(_)) => Err(DropReason::Malformed),
    }
}

/// Counters of one switch session (all monotonic, for metrics).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SessionCounters {
    /// Connections established.
    pub connects: u64,
    /// CNMs accepted and charged to a port.
    pub cnm_received: u64,
    /// CNMs accepted that this switch cannot charge (no decision point chose the culprit's
    /// route here), relayed towards the culprit's source.
    pub cnm_relayed: u64,
    /// CNM packet-ins and frames read from interfaces that were dropped, by reason.
    pub cnm_dropped: BTreeMap<DropReason, u64>,
    /// CNMs the emulated CP generated and injected.
    pub cnm_generated: u64,
    /// Generated CNMs also charged locally (source processing).
    pub cnm_generated_charged: u64,
    /// Generated CNMs source processing left alone: sampled off the culprit's minimal port
    /// (`policy.source_on_route`).
    pub cnm_generated_off_route: u64,
    /// Generated CNMs for a host of this very switch: not injected (the reaction point is the
    /// switch, and the host would drop the frame), only charged locally.
    pub cnm_to_own_host: u64,
    /// CNMs (generated or relayed) sent on the route port's interface, not by PACKET_OUT.
    pub cnm_sent_interface: u64,
    /// CNM frames the shell read from a port's interface (before the checks).
    pub cnm_read_interface: u64,
    /// CNMs for a port's interface the shell could not write (full queue, failed socket).
    pub cnm_send_errors: u64,
    /// GROUP_MOD messages sent.
    pub group_mods_sent: u64,
    /// OFPT_ERROR replies to GROUP_MODs.
    pub group_mod_errors: u64,
    /// Other OFPT_ERROR messages.
    pub other_errors: u64,
    /// Plan reads completed.
    pub plan_reads: u64,
    /// Plan reads whose structure differed from the previous one.
    pub plan_changes: u64,
    /// Policy events ignored because the operator froze the switch.
    pub frozen_events_ignored: u64,
    /// Port-stats replies processed.
    pub port_stats_replies: u64,
    /// Group-stats replies processed (`byte_counter = "minimal-bucket"`).
    pub group_stats_replies: u64,
}

/// The role situation on the current connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleState {
    /// Not requested (or not yet answered).
    Unknown,
    /// The switch confirmed EQUAL.
    Equal,
    /// The switch answered with another role.
    Other,
    /// The switch refused the request (the agent continues in its default role).
    Rejected,
}

/// A request the session tracks, and how to build it for an xid.
type Request = (Pending, fn(u32) -> Message);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Role,
    PortDesc,
    PortStats,
    /// The periodic OFPMP_GROUP read of every group.
    GroupStats,
    /// The read of one group's counters just before a MODIFY of it (which zeroes them on OVS).
    GroupStatsBeforeWrite(u32),
    GroupDesc(u64),
    Flows(u64),
    GroupMod(u32),
    /// The BARRIER_REQUEST after GROUP_MODs that answer CNMs (its number).
    Barrier(u64),
}

#[derive(Debug, Default)]
struct Round {
    id: u64,
    /// The core's write sequence when the read was sent.
    write_seq: u64,
    groups: Option<Vec<fabricflow_proto::openflow::multipart::GroupDesc>>,
    flows: Option<Vec<fabricflow_proto::openflow::multipart::FlowStats>>,
}

/// One port as the switch described it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortInfo {
    /// OpenFlow port number.
    pub port_no: PortNo,
    /// Interface name (on OVS, the Linux interface of a system/internal port).
    pub name: String,
    /// Port MAC.
    pub hw_addr: MacAddr,
    /// OFPPF `curr_speed`, kb/s (0 = unknown).
    pub curr_speed_kbps: u32,
}

/// A snapshot for the HTTP API and metrics.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SessionStatus {
    /// Connected right now.
    pub connected: bool,
    /// The controller's plan is learned: it is on the switch and was read. It may have no
    /// decision point (see `groups`): a fat-tree's top level has nothing to adapt.
    pub plan_ready: bool,
    /// The operator froze the weights (the controller's freeze marker is on the switch).
    pub frozen: bool,
    /// Datapath id from FEATURES_REPLY.
    pub datapath_id: Option<u64>,
    /// Role situation.
    pub role: Option<RoleState>,
    /// Fabric ports with P (percent) and the last Fb stored.
    pub ports: Vec<PortStatus>,
    /// Decision points with their installed weights.
    pub groups: Vec<GroupStatus>,
    /// Fb_avg over the fabric ports.
    pub fb_avg: f64,
    /// Counters.
    pub counters: SessionCounters,
    /// The policy's counters: how P moved, and the events that left it as it was.
    pub policy: crate::policy::Counters,
    /// Per port, transmit totals and rate from OFPMP_PORT_STATS, Δt from the switch's own
    /// `duration` fields (crate::port_stats).
    pub port_rates: BTreeMap<PortNo, crate::port_stats::OfPortRate>,
    /// Per GROUP_MOD answering a received CNM: from reading the CNM's packet-in to reading
    /// the switch's BARRIER_REPLY that follows the GROUP_MOD (the switch has processed it).
    pub cnm_to_group_mod_confirmed: LatencyHistogram,
}

/// One fabric port in a [`SessionStatus`].
#[derive(Debug, Clone, Serialize)]
pub struct PortStatus {
    /// OpenFlow port.
    pub port: PortNo,
    /// P(port), percent.
    pub p_percent: f64,
    /// Last QntzFb received.
    pub last_fb: u8,
}

/// One decision point in a [`SessionStatus`].
#[derive(Debug, Clone, Serialize)]
pub struct GroupStatus {
    /// Group id.
    pub group_id: u32,
    /// Minimal port.
    pub minimal_port: PortNo,
    /// Weights last written or found.
    pub weights: Vec<u16>,
    /// A change waits for the minimum interval.
    pub pending: bool,
}

/// The session state machine of one switch.
#[derive(Debug)]
pub struct Session {
    cfg: SessionConfig,
    core: SwitchCore,
    /// The connection's channel (`None`: not connected).
    channel: Option<Channel<Pending>>,
    /// Why the last connection closed, if the channel closed it.
    closed: Option<CloseReason>,
    round: Option<Round>,
    round_seq: u64,
    tx_bytes: HashMap<PortNo, u64>,
    /// Transmit totals and rates per port (telemetry; kept across reconnects).
    port_rates: BTreeMap<PortNo, crate::port_stats::OfPortRate>,
    /// Last byte counts read per decision point: its minimal choice's, and all its buckets'.
    bucket_bytes: HashMap<u32, (u64, u64)>,
    /// The weights a decision point held before the write a `GroupStatsBeforeWrite` precedes.
    weights_before_write: HashMap<u32, Vec<u16>>,
    /// Decision points whose counters a MODIFY zeroed after the last read.
    bucket_zeroed: BTreeSet<u32>,
    ports: BTreeMap<PortNo, PortInfo>,
    datapath_id: Option<u64>,
    role: RoleState,
    next_stats_ns: u64,
    next_refresh_ns: u64,
    next_tick_ns: u64,
    counters: SessionCounters,
    plan_changed: bool,
    /// Ports on which the shell sends CNMs itself ([`set_cnm_interfaces`](Self::set_cnm_interfaces)).
    cnm_interfaces: BTreeSet<PortNo>,
    /// CNM frames for those ports, oldest first, until the shell takes them.
    port_frames: Vec<(PortNo, Vec<u8>)>,
    /// When a refused GROUP_MOD last triggered a plan read.
    last_refusal_read_ns: Option<u64>,
    /// Arrival of the CNM each GROUP_MOD handed out since the last
    /// [`take_cnm_reactions`](Session::take_cnm_reactions) answers (at most
    /// [`CNM_REACTIONS_KEPT`], the newest).
    cnm_reactions: VecDeque<u64>,
    /// BARRIER_REQUESTs sent after GROUP_MODs answering CNMs, oldest first: (number, the
    /// arrival of each CNM answered).
    barriers: VecDeque<(u64, Vec<u64>)>,
    barrier_seq: u64,
    /// CNM → BARRIER_REPLY latencies.
    confirmed: LatencyHistogram,
}

/// How many CNM → GROUP_MOD start times the session keeps for its shell.
pub const CNM_REACTIONS_KEPT: usize = 1024;

impl Session {
    /// A session with the policy/weights constants of `agent` and the I/O settings of `cfg`.
    pub fn new(cfg: SessionConfig, agent: &AgentConfig) -> Result<Self, ConfigError> {
        let mut session = Session {
            core: SwitchCore::new(agent.policy.clone(), agent.weights.clone())?,
            cfg,
            channel: None,
            closed: None,
            round: None,
            round_seq: 0,
            tx_bytes: HashMap::new(),
            port_rates: BTreeMap::new(),
            bucket_bytes: HashMap::new(),
            weights_before_write: HashMap::new(),
            bucket_zeroed: BTreeSet::new(),
            ports: BTreeMap::new(),
            datapath_id: None,
            role: RoleState::Unknown,
            next_stats_ns: 0,
            next_refresh_ns: 0,
            next_tick_ns: 0,
            counters: SessionCounters::default(),
            plan_changed: false,
            cnm_interfaces: BTreeSet::new(),
            port_frames: Vec::new(),
            last_refusal_read_ns: None,
            cnm_reactions: VecDeque::new(),
            barriers: VecDeque::new(),
            barrier_seq: 0,
            confirmed: LatencyHistogram::default(),
        };
        session.apply_links();
        Ok(session)
    }

    /// Every port's link from the stated ports, the switch's `curr_speed` and `[link]`, handed
    /// to the core (the rate-relative constants follow it).
    fn apply_links(&mut self) {
        let link = &self.cfg.link;
        let stated = |p: PortNo| self.cfg.stated_links.iter().find(|s| s.port == p);
        let mut table: Vec<(PortNo, PortLink)> = self
            .ports
            .values()
            .map(|i| {
                let rate = u64::from(i.curr_speed_kbps).saturating_mul(1_000);
                (i.port_no, link.resolve(stated(i.port_no), rate))
            })
            .collect();
        for s in &self.cfg.stated_links {
            if !self.ports.contains_key(&s.port) {
                table.push((s.port, link.resolve(Some(s), 0)));
            }
        }
        let links = PortLinks::new(link.default_link(), table);
        self.core.set_links(links, self.cfg.port_stats_period_ns);
    }

    /// The link of every port, as the constants are scaled by.
    pub fn links(&self) -> &PortLinks {
        self.core.policy().links()
    }

    fn request(&mut self, kind: Pending, build: impl FnOnce(u32) -> Message) {
        if let Some(c) = self.channel.as_mut() {
            c.request(kind, build);
        }
    }

    fn send(&mut self, build: impl FnOnce(u32) -> Message) {
        if let Some(c) = self.channel.as_mut() {
            c.send(build);
        }
    }

    /// A connection to the switch is up: the channel's handshake starts (HELLO); the session's
    /// own requests follow once the switch has described itself.
    pub fn on_connected(&mut self, now_ns: u64) {
        self.counters.connects += 1;
        self.channel = Some(Channel::new(self.cfg.channel.clone(), now_ns));
        self.closed = None;
        self.round = None;
        self.tx_bytes.clear();
        self.bucket_bytes.clear();
        self.weights_before_write.clear();
        self.bucket_zeroed.clear();
        self.barriers.clear();
        self.role = RoleState::Unknown;
    }

    /// The switch described itself: configure the connection and read the plan.
    fn on_up(&mut self, datapath_id: u64, now_ns: u64) {
        self.datapath_id = Some(datapath_id);
        let (msl, id) = (self.cfg.miss_send_len, self.cfg.controller_id);
        self.send(|x| Message::set_config(x, 0, msl));
        self.send(|x| Message::set_controller_id(x, id));
        if self.cfg.request_role_equal {
            self.request(Pending::Role, |x| {
                Message::role_request(x, ControllerRole::Equal, 0)
            });
        }
        self.request(Pending::PortDesc, Message::port_desc_request);
        self.start_plan_read(now_ns);
        self.next_stats_ns = now_ns.saturating_add(self.cfg.port_stats_period_ns);
        self.next_tick_ns = now_ns.saturating_add(self.cfg.tick_period_ns);
    }

    /// The connection is gone. P, the planner and the last plan are kept.
    pub fn on_disconnected(&mut self) {
        self.channel = None;
        self.round = None;
        self.barriers.clear();
    }

    /// Whether a connection is up.
    pub fn is_connected(&self) -> bool {
        self.channel.as_ref().is_some_and(|c| !c.is_closed())
    }

    /// Why the channel closed the connection (framing, version, echo timeout, …), if it did:
    /// the shell then drops the connection and reconnects.
    pub fn close_reason(&self) -> Option<&CloseReason> {
        self.closed.as_ref()
    }

    /// Bytes read from the connection.
    pub fn handle_bytes(&mut self, data: &[u8], now_ns: u64) {
        if let Some(c) = self.channel.as_mut() {
            c.handle_bytes(data, now_ns);
        }
        self.drain_channel(now_ns);
    }

    /// The peer closed its side.
    pub fn handle_eof(&mut self, now_ns: u64) {
        if let Some(c) = self.channel.as_mut() {
            c.handle_eof();
        }
        self.drain_channel(now_ns);
    }

    fn drain_channel(&mut self, now_ns: u64) {
        while let Some(ev) = self.channel.as_mut().and_then(Channel::poll_event) {
            match ev {
                Event::Up(f) => self.on_up(f.datapath_id, now_ns),
                Event::Reply { tag, msg } => self.on_reply(tag, msg, now_ns),
                Event::Refused { tag, xid, error } => {
                    self.on_refused(tag, xid, &error.error, now_ns)
                }
                Event::Message(msg) => self.on_unsolicited(msg, now_ns),
                Event::Closed(reason) => {
                    tracing::warn!(%reason, "OpenFlow connection closed");
                    self.closed = Some(reason);
                }
            }
        }
    }

    fn start_plan_read(&mut self, now_ns: u64) {
        // Writes the core has produced go out before the read, so that the reply reflects
        // every write numbered up to `write_seq`.
        self.transmit_writes();
        self.round_seq += 1;
        let id = self.round_seq;
        self.round = Some(Round {
            id,
            write_seq: self.core.write_seq(),
            ..Round::default()
        });
        self.request(Pending::GroupDesc(id), Message::group_desc_request);
        let req = FlowStatsRequest {
            table_id: OFPTT_ALL,
            out_port: OFPP_ANY,
            out_group: OFPG_ANY,
            cookie: self.cfg.plan.cookie,
            cookie_mask: u64::MAX,
            ..FlowStatsRequest::default()
        };
        self.request(Pending::Flows(id), |x| Message::flow_stats_request(x, req));
        self.next_refresh_ns = now_ns.saturating_add(self.cfg.plan_refresh_period_ns);
    }

    /// The next message to send (the core's weight writes become GROUP_MODs here).
    pub fn poll_transmit(&mut self) -> Option<Message> {
        self.transmit_writes();
        self.channel.as_mut().and_then(Channel::poll_transmit)
    }

    /// The earliest time [`on_timer`](Self::on_timer) has something to do.
    pub fn next_deadline_ns(&self) -> Option<u64> {
        let channel = self.channel.as_ref().filter(|c| !c.is_closed())?;
        let mut t = channel.poll_timeout().unwrap_or(u64::MAX);
        if channel.is_up() {
            t = t
                .min(self.next_stats_ns)
                .min(self.next_refresh_ns)
                .min(self.tick_due_ns().unwrap_or(u64::MAX));
        }
        if let Some(p) = self.core.next_deadline_ns() {
            t = t.min(p);
        }
        Some(t)
    }

    /// When the core's tick is due: every `tick_period` where it ticks periodically (DRB),
    /// else at the policy's next idle-timer instant.
    fn tick_due_ns(&self) -> Option<u64> {
        match self.core.next_tick() {
            TickDue::Periodic => Some(self.next_tick_ns),
            TickDue::At(t) => t,
        }
    }

    /// Runs what is due at `now_ns`: policy tick and pending writes, port-stats poll, plan read.
    pub fn on_timer(&mut self, now_ns: u64) {
        if let Some(c) = self.channel.as_mut() {
            c.handle_timeout(now_ns);
        }
        self.drain_channel(now_ns);
        if !self.channel.as_ref().is_some_and(Channel::is_up) {
            return;
        }
        if self.tick_due_ns().is_some_and(|t| now_ns >= t) {
            self.next_tick_ns = now_ns.saturating_add(self.cfg.tick_period_ns);
            self.core.on_tick(now_ns);
        } else {
            self.core.on_timer(now_ns);
        }
        if now_ns >= self.next_stats_ns {
            self.next_stats_ns = now_ns.saturating_add(self.cfg.port_stats_period_ns);
            let yields = self.core.policy().config().yield_comparison;
            let (ports, groups) = match self.cfg.byte_counter {
                ByteCounter::Port => (true, yields),
                ByteCounter::MinimalBucket => (false, true),
            };
            let port_stats: Request = (Pending::PortStats, |x| {
                Message::port_stats_request(x, OFPP_ANY)
            });
            let group_stats: Request = (Pending::GroupStats, |x| {
                Message::group_stats_request(x, OFPG_ALL)
            });
            let polls = [ports.then_some(port_stats), groups.then_some(group_stats)];
            for (kind, build) in polls.into_iter().flatten() {
                let in_flight = self
                    .channel
                    .as_ref()
                    .is_some_and(|c| c.is_pending(|p| *p == kind));
                if self.core.plan().is_some() && !in_flight {
                    self.request(kind, build);
                }
            }
        }
        if now_ns >= self.next_refresh_ns {
            if self.round.is_none() {
                self.start_plan_read(now_ns);
            } else {
                // A read still unanswered after a whole period: start over.
                self.next_refresh_ns = now_ns.saturating_add(self.cfg.plan_refresh_period_ns);
                self.round = None;
            }
        }
    }

    /// A message the switch sent on its own (PACKET_IN, PORT_STATUS, an error to a message
    /// that expected no answer).
    fn on_unsolicited(&mut self, msg: Message, now_ns: u64) {
        match &msg.body {
            Body::PacketIn(pi) => self.on_packet_in(pi, now_ns),
            Body::Error(e) => {
                self.counters.other_errors += 1;
                tracing::warn!(xid = msg.xid, error = %e.error, "switch error");
            }
            // A port came or went: the plan may follow; read it again soon.
            Body::PortStatus(_) if self.round.is_none() => self.start_plan_read(now_ns),
            _ => {}
        }
    }

    fn on_reply(&mut self, kind: Pending, msg: Message, now_ns: u64) {
        match msg.body {
            Body::RoleReply(r) => {
                self.role = if r.role == ControllerRole::Equal {
                    RoleState::Equal
                } else {
                    RoleState::Other
                };
            }
            Body::MultipartReply(r) => self.on_multipart(kind, r.body, now_ns),
            Body::BarrierReply => {
                if let Pending::Barrier(seq) = kind {
                    self.on_barrier(seq, true, now_ns);
                }
            }
            _ => {}
        }
    }

    fn on_refused(&mut self, kind: Pending, xid: u32, error: &ErrorType, now_ns: u64) {
        match kind {
            Pending::Role => {
                self.role = RoleState::Rejected;
                tracing::warn!(%error, "switch refused ROLE_REQUEST EQUAL; continuing in the default role");
            }
            Pending::GroupMod(group_id) => {
                self.counters.group_mod_errors += 1;
                // The refused MODIFY zeroed nothing.
                self.bucket_zeroed.remove(&group_id);
                tracing::warn!(group_id, %error, "GROUP_MOD refused; re-reading the plan");
                // Relearning re-issues the write; a switch that keeps refusing must not turn
                // that into a write/read loop at the speed of its replies.
                let next_allowed = self
                    .last_refusal_read_ns
                    .map_or(0, |t| t.saturating_add(REFUSAL_REREAD_MIN_NS));
                if now_ns < next_allowed {
                    self.next_refresh_ns = self.next_refresh_ns.min(next_allowed);
                } else if self.round.is_none() {
                    self.last_refusal_read_ns = Some(now_ns);
                    self.start_plan_read(now_ns);
                }
            }
            Pending::Barrier(seq) => {
                self.counters.other_errors += 1;
                tracing::warn!(%error, "switch refused BARRIER_REQUEST");
                self.on_barrier(seq, false, now_ns);
            }
            Pending::GroupDesc(_) | Pending::Flows(_) => {
                self.counters.other_errors += 1;
                tracing::warn!(%error, "plan read refused");
                self.round = None;
            }
            _ => {
                self.counters.other_errors += 1;
                tracing::warn!(xid, %error, "switch error");
            }
        }
    }

    fn on_multipart(&mut self, kind: Pending, body: MultipartReplyBody, now_ns: u64) {
        match (kind, body) {
            (Pending::PortDesc, MultipartReplyBody::PortDesc(ports)) => {
                self.ports = ports
                    .into_iter()
                    .map(|p| {
                        let info = PortInfo {
                            port_no: p.port_no,
                            name: p.name.as_string(),
                            hw_addr: p.hw_addr,
                            curr_speed_kbps: p.curr_speed,
                        };
                        (p.port_no, info)
                    })
                    .collect();
                self.apply_links();
                self.plan_changed = true;
            }
            (Pending::PortStats, MultipartReplyBody::PortStats(stats)) => {
                self.on_port_stats(&stats, now_ns);
            }
            (Pending::GroupStats, MultipartReplyBody::Group(stats)) => {
                self.on_group_stats(&stats, None, now_ns);
            }
            (Pending::GroupStatsBeforeWrite(id), MultipartReplyBody::Group(stats)) => {
                self.on_group_stats(&stats, Some(id), now_ns);
            }
            (Pending::GroupDesc(id), MultipartReplyBody::GroupDesc(groups)) => {
                if let Some(r) = self.round.as_mut().filter(|r| r.id == id) {
                    r.groups = Some(groups);
                }
                self.maybe_finish_round(now_ns);
            }
            (Pending::Flows(id), MultipartReplyBody::Flow(flows)) => {
                if let Some(r) = self.round.as_mut().filter(|r| r.id == id) {
                    r.flows = Some(flows);
                }
                self.maybe_finish_round(now_ns);
            }
            _ => {}
        }
    }

    fn maybe_finish_round(&mut self, now_ns: u64) {
        let complete = self
            .round
            .as_ref()
            .is_some_and(|r| r.groups.is_some() && r.flows.is_some());
        if !complete {
            return;
        }
        let Some(round) = self.round.take() else {
            return;
        };
        let groups = round.groups.unwrap_or_default();
        let flows = round.flows.unwrap_or_default();
        let plan = LearnedPlan::learn(&self.cfg.plan, &groups, &flows);
        self.counters.plan_reads += 1;
        self.apply_plan(plan, round.write_seq, now_ns);
    }

    fn apply_plan(&mut self, plan: LearnedPlan, round_write_seq: u64, now_ns: u64) {
        for (id, why) in &plan.skipped {
            tracing::debug!(group_id = id, ?why, "group is not a decision point");
        }
        let (groups, fabric_ports) = (plan.groups.len(), plan.fabric_ports.clone());
        let path_groups = plan.path_groups.len();
        let was_frozen = self.core.is_frozen();
        let learned = self.core.learn(plan, round_write_seq, now_ns);
        match (was_frozen, self.core.is_frozen()) {
            (false, true) => tracing::info!("weights frozen by the operator (controller marker)"),
            (true, false) => tracing::info!("weights unfrozen: the policy resumes"),
            _ => {}
        }
        match learned {
            Learned::Unchanged => {}
            Learned::NotInstalled => {
                tracing::info!("the controller's plan is not on the switch yet: waiting for it");
                self.plan_changed = true;
            }
            Learned::Changed if path_groups > 0 => {
                self.plan_changed = true;
                tracing::info!(path_groups, ?fabric_ports, "plan learned: multipath groups");
            }
            Learned::Changed if groups == 0 => {
                self.plan_changed = true;
                tracing::info!(
                    ?fabric_ports,
                    "plan learned: no decision point on this switch, nothing to adapt"
                );
            }
            Learned::Changed => {
                self.plan_changed = true;
                tracing::info!(groups, ?fabric_ports, "plan learned");
            }
        }
    }

    fn on_port_stats(&mut self, stats: &[PortStats], now_ns: u64) {
        self.counters.port_stats_replies += 1;
        for s in stats {
            let prev = self.tx_bytes.insert(s.port_no, s.tx_bytes);
            self.port_rates.entry(s.port_no).or_default().observe(
                s.duration_sec,
                s.duration_nsec,
                s.tx_bytes,
                s.tx_dropped,
            );
            let fabric = self
                .core
                .plan()
                .is_some_and(|p| p.is_fabric_port(s.port_no));
            if let (Some(prev), true) = (prev, fabric) {
                // A counter that went backwards (port re-created) restarts the delta.
                let bytes = s.tx_bytes.saturating_sub(prev);
                if bytes > 0 {
                    self.core.on_bytes(s.port_no, bytes, now_ns);
                }
            }
        }
    }

    /// Deltas of the decision points' minimal choice (bucket 0, or its slots) become `BytesSent`
    /// for their minimal ports.
    /// Replies arrive in request order and OVS applies a MODIFY between the read before it and
    /// the next read, so a read taken just before a write (`before_write`) closes the counter's
    /// epoch exactly and the next read counts from zero.
    fn on_group_stats(&mut self, stats: &[GroupStats], before_write: Option<u32>, now_ns: u64) {
        self.counters.group_stats_replies += 1;
        let minimal_bucket = self.cfg.byte_counter == ByteCounter::MinimalBucket;
        let yields = self.core.policy().config().yield_comparison;
        for s in stats {
            let Some((port, Some(now_min))) = self
                .core
                .plan()
                .and_then(|p| p.groups.get(&s.group_id))
                .map(|g| (g.dp.minimal_port, g.minimal_bytes(&s.bucket_stats)))
            else {
                continue;
            };
            let now_total: u64 = s.bucket_stats.iter().map(|c| c.byte_count).sum();
            let prev = if self.bucket_zeroed.remove(&s.group_id) {
                Some((0, 0))
            } else {
                self.bucket_bytes.get(&s.group_id).copied()
            };
            self.bucket_bytes.insert(s.group_id, (now_min, now_total));
            // The epoch a read before a write closes ran with the weights before that write.
            let before = if before_write == Some(s.group_id) {
                self.bucket_zeroed.insert(s.group_id);
                self.weights_before_write.remove(&s.group_id)
            } else {
                None
            };
            // A counter that went backwards (group re-created) restarts from zero.
            let delta = |prev: Option<u64>, now: u64| match prev {
                Some(p) if now >= p => now - p,
                Some(_) => now,
                None => 0,
            };
            let bytes = delta(prev.map(|p| p.0), now_min);
            let total = delta(prev.map(|p| p.1), now_total);
            if minimal_bucket && bytes > 0 {
                self.core.on_bytes(port, bytes, now_ns);
            }
            if yields && total > 0 {
                let weights = before.or_else(|| {
                    let g = self.core.plan()?.groups.get(&s.group_id)?;
                    Some(g.weights())
                });
                if let Some(w) = weights {
                    self.core
                        .on_group_bytes(s.group_id, bytes, total, &w, now_ns);
                }
            }
        }
    }

    fn on_packet_in(&mut self, pi: &PacketIn, now_ns: u64) {
        let checked = check_cnm(self.core.plan(), pi);
        self.on_checked_cnm(checked, pi.in_port(), now_ns);
    }

    /// A frame the shell read from port `port`'s interface (the plan drops CNMs there at
    /// classify, [`LearnedPlan::cnm_interface_ports`]): handled as a CNM packet-in from `port`.
    pub fn on_interface_frame(&mut self, port: PortNo, data: &[u8], now_ns: u64) {
        self.counters.cnm_read_interface += 1;
        let checked = check_cnm_frame(self.core.plan(), Some(port), data, data.len());
        self.on_checked_cnm(checked, Some(port), now_ns);
    }

    fn on_checked_cnm(
        &mut self,
        checked: Result<(PortNo, FrameInfo, Cnm), DropReason>,
        in_port: Option<PortNo>,
        now_ns: u64,
    ) {
        let why = match checked {
            Ok((port, info, mut cnm)) => {
                let received = ReceivedCnm {
                    port,
                    culprit: Culprit {
                        src: info.dst,
                        dst: cnm.encap_da,
                    },
                    qntz_fb: cnm.qntz_fb,
                    relays: cnm.reserved,
                };
                match self.core.on_received_cnm(&received, now_ns) {
                    CnmFate::Charged => return,
                    CnmFate::Relay { relays } => {
                        // The same CNM, its relay count in the ReservedV bits, into the
                        // pipeline as the switch's own CNMs go: the fabric carries it on towards
                        // the culprit's source, whose switch's agent gets it from table 0.
                        cnm.reserved = relays;
                        let frame = cnm.to_frame(info.dst, info.src, info.vlan).to_vec();
                        tracing::trace!(in_port = port, relays, src = %info.dst, "CNM relayed");
                        self.cnm_to_fabric(frame, info.dst);
                        return;
                    }
                    CnmFate::RelayBudgetSpent => DropReason::RelayBudgetSpent,
                }
            }
            Err(why) => why,
        };
        let n = self.counters.cnm_dropped.entry(why).or_insert(0);
        *n = n.saturating_add(1);
        tracing::debug!(reason = why.label(), ?in_port, "CNM dropped");
    }

    /// Sends CNM `frame` for host `dst` towards it: on the transit route's port when the shell
    /// sends there itself ([`set_cnm_interfaces`](Self::set_cnm_interfaces)), the frame leaving
    /// as the pipeline would send it without the switch handling a PACKET_OUT; else into the
    /// pipeline.
    fn cnm_to_fabric(&mut self, frame: Vec<u8>, dst: MacAddr) {
        let port = self
            .core
            .plan()
            .and_then(|p| p.route_to(dst))
            .filter(|p| self.cnm_interfaces.contains(p));
        match port {
            Some(port) => {
                self.counters.cnm_sent_interface += 1;
                self.port_frames.push((port, frame));
            }
            None => self.packet_out_to_pipeline(frame),
        }
    }

    /// The ports on which the shell sends CNMs itself (a packet socket on the port's Linux
    /// interface); the others get PACKET_OUTs.
    pub fn set_cnm_interfaces(&mut self, ports: BTreeSet<PortNo>) {
        self.cnm_interfaces = ports;
    }

    /// The shell could not write one of [`take_port_frames`](Self::take_port_frames)' CNMs.
    pub fn on_cnm_send_failed(&mut self) {
        self.counters.cnm_send_errors += 1;
    }

    /// The CNM frames to send on ports' interfaces (port, frame), oldest first.
    pub fn take_port_frames(&mut self) -> Vec<(PortNo, Vec<u8>)> {
        std::mem::take(&mut self.port_frames)
    }

    /// Sends `frame` into the switch's pipeline: PACKET_OUT, in_port = `cnm_inject_in_port`,
    /// output:TABLE (the plan's table 0 sends that in_port to transit).
    fn packet_out_to_pipeline(&mut self, frame: Vec<u8>) {
        let out = PacketOut::new(
            self.cfg.cnm_inject_in_port,
            vec![Action::Output {
                port: OFPP_TABLE,
                max_len: 0,
            }],
            frame,
        );
        self.send(|x| Message::packet_out(x, out));
    }

    /// The emulated congestion point built `frame`, a CNM for the culprit of a frame it sampled
    /// on this switch's port `egress_port`. The [`SwitchCore`] decides what it means (own
    /// feedback, source processing, own-host suppression); a CNM for the fabric is injected into
    /// the pipeline (PACKET_OUT, in_port = `cnm_inject_in_port`, output:TABLE) so the fabric
    /// carries it back to the culprit's switch.
    pub fn inject_cnm(
        &mut self,
        frame: Vec<u8>,
        egress_port: PortNo,
        culprit: Culprit,
        qntz_fb: u8,
        now_ns: u64,
    ) {
        if !self.is_connected() {
            return;
        }
        let sample = CongestionSample {
            port: Some(egress_port),
            qntz_fb,
            culprit,
        };
        if self.core.on_congestion(&sample, now_ns) == CnmRoute::Fabric {
            self.cnm_to_fabric(frame, culprit.src);
        }
    }

    /// The core's weight writes as GROUP_MOD MODIFYs that keep every bucket's actions and watch
    /// port/group (preceded, with the minimal-bucket byte counter, by a read of the group's
    /// counters, which the MODIFY zeroes on OVS).
    fn transmit_writes(&mut self) {
        // Writes wait in the core while there is no switch to write to.
        if !self.channel.as_ref().is_some_and(Channel::is_up) {
            return;
        }
        let mut answered = Vec::new();
        while let Some(TimedWrite { write: w, cnm_ns }) = self.core.poll_timed_write() {
            let yields = self.core.policy().config().yield_comparison;
            let before = yields
                .then(|| {
                    self.core
                        .plan()?
                        .groups
                        .get(&w.group_id)
                        .map(|g| g.weights())
                })
                .flatten();
            let buckets = match self.core.write_buckets(&w) {
                Some(Ok(b)) => b,
                Some(Err(e)) => {
                    tracing::warn!(group = w.group_id, error = %e, "weights not written");
                    continue;
                }
                None => continue,
            };
            self.counters.group_mods_sent += 1;
            let group_id = w.group_id;
            if self.cfg.byte_counter == ByteCounter::MinimalBucket || yields {
                if let Some(b) = before {
                    self.weights_before_write.insert(group_id, b);
                }
                self.request(Pending::GroupStatsBeforeWrite(group_id), |x| {
                    Message::group_stats_request(x, group_id)
                });
            }
            if let Some(c) = self.channel.as_mut() {
                c.command(Pending::GroupMod(group_id), |x| {
                    Message::group_mod(x, GroupMod::modify_select(group_id, buckets))
                });
            }
            if let Some(t) = cnm_ns {
                if self.cnm_reactions.len() >= CNM_REACTIONS_KEPT {
                    self.cnm_reactions.pop_front();
                }
                self.cnm_reactions.push_back(t);
                answered.push(t);
            }
        }
        // The switch's answer to a barrier behind them says when it has processed them: the
        // CNM → weights-applied time, with no reading of the groups.
        if !answered.is_empty() {
            self.barrier_seq += 1;
            let seq = self.barrier_seq;
            self.request(Pending::Barrier(seq), Message::barrier_request);
            self.barriers.push_back((seq, answered));
        }
    }

    /// A BARRIER_REPLY (`Some`) or a refused barrier (`None`) for barrier `seq`: replies come
    /// in order, so every earlier barrier is answered too.
    fn on_barrier(&mut self, seq: u64, replied: bool, now_ns: u64) {
        while let Some((s, cnms)) = self.barriers.pop_front() {
            if s > seq {
                self.barriers.push_front((s, cnms));
                break;
            }
            if !replied {
                continue;
            }
            for cnm_ns in cnms {
                let ns = now_ns.saturating_sub(cnm_ns);
                self.confirmed.observe_ns(ns);
                tracing::trace!(
                    cnm_ns,
                    confirmed_ns = now_ns,
                    ns,
                    "CNM → GROUP_MOD confirmed"
                );
            }
        }
    }

    /// The arrival (`now_ns` of the [`handle_bytes`](Self::handle_bytes) that brought it) of
    /// the CNM each GROUP_MOD handed out by [`poll_transmit`](Self::poll_transmit) since the
    /// last call answers, one per GROUP_MOD that answers one: the shell, having written the
    /// messages, observes its CNM → GROUP_MOD latencies from them.
    pub fn take_cnm_reactions(&mut self) -> std::collections::vec_deque::Drain<'_, u64> {
        self.cnm_reactions.drain(..)
    }

    /// Whether the plan or the port list changed since the last call (the shell then
    /// reconfigures the emulated CP).
    pub fn take_plan_changed(&mut self) -> bool {
        std::mem::take(&mut self.plan_changed)
    }

    /// The learned plan, if any.
    pub fn plan(&self) -> Option<&LearnedPlan> {
        self.core.plan()
    }

    /// The policy (P per port).
    pub fn policy(&self) -> &Policy {
        self.core.policy()
    }

    /// The switch core.
    pub fn core(&self) -> &SwitchCore {
        &self.core
    }

    /// The ports the switch described.
    pub fn ports(&self) -> &BTreeMap<PortNo, PortInfo> {
        &self.ports
    }

    /// The switch's MAC, for the emulated CP's CNM source and CPID: the low 48 bits of the
    /// datapath id (OVS derives the datapath id from a MAC by default).
    pub fn switch_mac(&self) -> Option<MacAddr> {
        self.datapath_id
            .map(|d| MacAddr::from_u64(d & 0xffff_ffff_ffff))
    }

    /// Counters (the session's and the core's).
    pub fn counters(&self) -> SessionCounters {
        let c = self.core.counters();
        SessionCounters {
            cnm_received: c.cnm_received,
            cnm_relayed: c.cnm_relayed,
            cnm_generated: c.cnm_generated,
            cnm_generated_charged: c.cnm_generated_charged,
            cnm_generated_off_route: c.cnm_generated_off_route,
            cnm_to_own_host: c.cnm_to_own_host,
            plan_changes: c.plan_changes,
            frozen_events_ignored: c.frozen_events_ignored,
            ..self.counters.clone()
        }
    }

    /// A snapshot for the API.
    pub fn status(&self) -> SessionStatus {
        SessionStatus {
            connected: self.is_connected(),
            plan_ready: self.core.plan().is_some_and(LearnedPlan::is_installed),
            frozen: self.core.is_frozen(),
            datapath_id: self.datapath_id,
            role: self.is_connected().then_some(self.role),
            ports: self
                .policy()
                .probabilities()
                .map(|(port, p)| PortStatus {
                    port,
                    p_percent: p,
                    last_fb: self.policy().last_fb(port).unwrap_or(0),
                })
                .collect(),
            groups: self
                .core
                .weights()
                .groups()
                .map(|dp| GroupStatus {
                    group_id: dp.group_id,
                    minimal_port: dp.minimal_port,
                    weights: self
                        .core
                        .weights()
                        .installed(dp.group_id)
                        .map(<[u16]>::to_vec)
                        .unwrap_or_default(),
                    pending: self.core.weights().is_pending(dp.group_id),
                })
                .collect(),
            fb_avg: self.policy().fb_avg(),
            counters: self.counters(),
            port_rates: self.port_rates.clone(),
            cnm_to_group_mod_confirmed: self.confirmed,
            policy: *self.policy().counters(),
        }
    }
}

#[cfg(test)]
mod tests;
