//! The controller end of one OpenFlow 1.3 connection, sans-I/O (quinn-proto style): bytes and
//! time go in ([`Channel::handle_bytes`], [`Channel::handle_timeout`]), messages to write
//! ([`Channel::poll_transmit`]) and events ([`Channel::poll_event`]) come out. Time is a
//! monotonic count of nanoseconds from any origin the owner picks, so a conversation runs on
//! virtual time in tests.
//!
//! What every OpenFlow session needs and no session should write again lives here:
//! - framing (bad or oversized lengths close the connection, naming the stream offset), and the
//!   refusal of a peer whose first bytes are not an OpenFlow HELLO;
//! - the handshake: HELLO with a version bitmap, HELLO_FAILED to a peer without 1.3, then
//!   FEATURES_REQUEST; [`Event::Up`] carries the FEATURES_REPLY. Both must finish within the
//!   handshake timeout;
//! - ECHO keepalive both ways (a request after an idle interval, a close when it is not
//!   answered), with a cap on the peer's echo rate;
//! - a partial message with no further byte for too long closes the connection;
//! - xids and the pending-request table: a [`Channel::request`] is answered by one reply (a
//!   multipart sequence is joined first), a [`Channel::command`] only by an error. Each answer
//!   comes back as an event carrying the owner's tag. A command's entry is dropped when a later
//!   BARRIER_REPLY proves it succeeded (the switch answers a barrier only after every earlier
//!   message), or when more than `max_unanswered` commands are outstanding (oldest first).

mod assembler;

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

pub use assembler::{AssembleError, MultipartAssembler};

use crate::openflow::framer::Framer;
use crate::openflow::message::{Body, Message};
use crate::openflow::multipart::MultipartReply;
use crate::openflow::switch::FeaturesReply;
use crate::openflow::symmetric::ErrorMsg;
use crate::openflow::OFP_VERSION;

/// Limits and timers of a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelConfig {
    /// Longest accepted OpenFlow message (bytes, ≤ 65535).
    pub max_message_len: usize,
    /// HELLO + FEATURES_REPLY must arrive within this.
    pub handshake_timeout: Duration,
    /// Idle time (nothing received) after which an ECHO_REQUEST is sent.
    pub echo_interval: Duration,
    /// An ECHO_REQUEST unanswered for this long closes the connection.
    pub echo_timeout: Duration,
    /// Bytes of an incomplete message with no further byte for this long close the connection.
    pub partial_message_timeout: Duration,
    /// More ECHO_REQUESTs than this per second from the peer close the connection.
    pub max_echo_requests_per_sec: u32,
    /// Largest multipart sequence accepted (entries).
    pub max_multipart_entries: usize,
    /// Commands (answered only on failure) remembered at most; the oldest are forgotten.
    pub max_unanswered: usize,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        ChannelConfig {
            max_message_len: 65535,
            handshake_timeout: Duration::from_secs(10),
            echo_interval: Duration::from_secs(5),
            echo_timeout: Duration::from_secs(15),
            partial_message_timeout: Duration::from_secs(10),
            max_echo_requests_per_sec: 100,
            max_multipart_entries: 1_000_000,
            max_unanswered: 4096,
        }
    }
}

/// Why a channel closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    PeerClosed,
    PeerClosedMidMessage {
        buffered: usize,
    },
    Framing(String),
    Decode(String),
    NotOpenFlow,
    VersionMismatch(String),
    UnexpectedBeforeHello(String),
    HandshakeTimeout(&'static str),
    EchoTimeout,
    EchoFlood {
        per_sec: u32,
    },
    PartialMessageStalled {
        buffered: usize,
    },
    Multipart(String),
    Io(String),
    /// The owner gave up waiting for something (e.g. a sync).
    Timeout(&'static str),
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
            Self::Multipart(e) => write!(f, "multipart reply: {e}"),
            Self::Io(e) => write!(f, "i/o: {e}"),
            Self::Timeout(what) => write!(f, "{what} timed out"),
        }
    }
}

/// What the channel reports to its owner. `T` is the owner's tag of a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<T> {
    /// The handshake finished: OpenFlow 1.3 agreed, the switch described itself.
    Up(FeaturesReply),
    /// The answer to a request (a multipart sequence joined into one MULTIPART_REPLY).
    Reply {
        tag: T,
        msg: Message,
    },
    /// An OFPT_ERROR answering a request or a command.
    Refused {
        tag: T,
        xid: u32,
        error: ErrorMsg,
    },
    /// A message answering nothing pending (PACKET_IN, PORT_STATUS, a stray error or reply).
    Message(Message),
    Closed(CloseReason),
}

/// Whether a tracked message is answered by a reply or only by an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Reply,
    ErrorOnly,
}

#[derive(Debug)]
struct Pending<T> {
    tag: T,
    /// Send order, to tell which commands a barrier reply covers.
    seq: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    AwaitHello,
    AwaitFeatures { xid: u32 },
    Up,
    Closed,
}

/// Counters of one channel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChannelCounters {
    pub messages_received: u64,
    pub messages_sent: u64,
    pub echo_requests_received: u64,
    /// Commands forgotten unanswered because more than `max_unanswered` were outstanding.
    pub unanswered_forgotten: u64,
}

/// One OpenFlow connection, seen from the controller.
#[derive(Debug)]
pub struct Channel<T> {
    cfg: ChannelConfig,
    phase: Phase,
    framer: Framer,
    outbox: VecDeque<Message>,
    events: VecDeque<Event<T>>,
    next_xid: u32,
    seq: u64,
    pending: HashMap<u32, Pending<T>>,
    /// Commands in send order (seq, xid); entries already answered are skipped lazily.
    unanswered: VecDeque<(u64, u32)>,
    assembler: MultipartAssembler,
    started_ns: u64,
    last_rx_ns: u64,
    echo_outstanding: Option<(u32, u64)>,
    echo_window: (u64, u32),
    counters: ChannelCounters,
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl<T> Channel<T> {
    /// A channel for a fresh connection; HELLO is queued at once.
    pub fn new(cfg: ChannelConfig, now_ns: u64) -> Self {
        let mut c = Channel {
            framer: Framer::new(cfg.max_message_len),
            assembler: MultipartAssembler::with_limit(cfg.max_multipart_entries),
            cfg,
            phase: Phase::AwaitHello,
            outbox: VecDeque::new(),
            events: VecDeque::new(),
            next_xid: 1,
            seq: 0,
            pending: HashMap::new(),
            unanswered: VecDeque::new(),
            started_ns: now_ns,
            last_rx_ns: now_ns,
            echo_outstanding: None,
            echo_window: (now_ns, 0),
            counters: ChannelCounters::default(),
        };
        c.send(Message::hello);
        c
    }

    // ---- state ---------------------------------------------------------------------------------

    /// The handshake finished and the channel is open.
    pub fn is_up(&self) -> bool {
        self.phase == Phase::Up
    }
    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }
    pub fn counters(&self) -> ChannelCounters {
        self.counters
    }
    /// Requests and commands waiting for an answer.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
    /// Whether a request or command with this tag is waiting for an answer.
    pub fn is_pending(&self, pred: impl Fn(&T) -> bool) -> bool {
        self.pending.values().any(|p| pred(&p.tag))
    }

    // ---- outputs -------------------------------------------------------------------------------

    /// The next message to write.
    pub fn poll_transmit(&mut self) -> Option<Message> {
        self.outbox.pop_front()
    }

    /// The next event for the owner.
    pub fn poll_event(&mut self) -> Option<Event<T>> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must next be called.
    pub fn poll_timeout(&self) -> Option<u64> {
        if self.phase == Phase::Closed {
            return None;
        }
        let at = |base: u64, d: Duration| base.saturating_add(ns(d));
        // While an echo is outstanding only its timeout matters (the idle deadline has passed).
        let mut t = match self.echo_outstanding {
            Some((_, sent)) => at(sent, self.cfg.echo_timeout),
            None => at(self.last_rx_ns, self.cfg.echo_interval),
        };
        if self.phase != Phase::Up {
            t = t.min(at(self.started_ns, self.cfg.handshake_timeout));
        }
        if self.framer.buffered() > 0 {
            t = t.min(at(self.last_rx_ns, self.cfg.partial_message_timeout));
        }
        Some(t)
    }

    // ---- commands from the owner ---------------------------------------------------------------

    /// Queues a message that expects no answer (a PACKET_OUT, an ECHO_REPLY, SET_CONFIG…);
    /// returns its xid. A failure arrives as an unsolicited [`Event::Message`].
    pub fn send(&mut self, build: impl FnOnce(u32) -> Message) -> u32 {
        let xid = self.alloc_xid();
        self.push_out(build(xid));
        xid
    }

    /// Queues a request answered by one reply (or an error), reported with `tag`.
    pub fn request(&mut self, tag: T, build: impl FnOnce(u32) -> Message) -> u32 {
        let xid = self.alloc_xid();
        self.track(xid, tag, Expect::Reply);
        self.push_out(build(xid));
        xid
    }

    /// Queues a command answered only when it fails (a FLOW_MOD, a GROUP_MOD, a bundle part),
    /// the failure reported with `tag`.
    pub fn command(&mut self, tag: T, build: impl FnOnce(u32) -> Message) -> u32 {
        let xid = self.alloc_xid();
        self.track(xid, tag, Expect::ErrorOnly);
        self.push_out(build(xid));
        xid
    }

    /// Reserves `n` consecutive xids for messages built elsewhere (a bundle), sent with
    /// [`command_with_xid`](Self::command_with_xid); returns the first.
    pub fn reserve_xids(&mut self, n: u32) -> u32 {
        // The range must not wrap through xid 0.
        if self.next_xid.checked_add(n).is_none() {
            self.next_xid = 1;
        }
        let first = self.next_xid;
        self.next_xid = first.wrapping_add(n).max(1);
        first
    }

    /// Queues a prebuilt command whose xid came from [`reserve_xids`](Self::reserve_xids).
    pub fn command_with_xid(&mut self, tag: T, msg: Message) {
        self.track(msg.xid, tag, Expect::ErrorOnly);
        self.push_out(msg);
    }

    /// Closes the channel (the owner's own reason, e.g. [`CloseReason::Timeout`]).
    pub fn close(&mut self, reason: CloseReason) {
        if self.phase == Phase::Closed {
            return;
        }
        self.phase = Phase::Closed;
        self.events.push_back(Event::Closed(reason));
    }

    // ---- inputs --------------------------------------------------------------------------------

    /// Bytes read from the connection.
    pub fn handle_bytes(&mut self, data: &[u8], now_ns: u64) {
        if self.phase == Phase::Closed {
            return;
        }
        self.last_rx_ns = now_ns;
        self.framer.push(data);
        // Anything that is not an OpenFlow HELLO at the very start is garbage (an HTTP client,
        // a port scanner): refuse it at once instead of waiting for a length that never comes.
        if self.phase == Phase::AwaitHello
            && self.framer.stream_offset() == 0
            && self.framer.buffered() == data.len()
        {
            let version_ok = data.first().is_none_or(|v| (1..=6).contains(v));
            let type_ok = data.get(1).is_none_or(|t| *t == 0);
            if !(version_ok && type_ok) {
                return self.close(CloseReason::NotOpenFlow);
            }
        }
        while self.phase != Phase::Closed {
            match self.framer.next_message() {
                Ok(Some(frame)) => match Message::decode(&frame) {
                    Ok(msg) => self.handle_message(msg, now_ns),
                    Err(e) => {
                        let head: String =
                            frame.iter().take(16).map(|x| format!("{x:02x}")).collect();
                        self.close(CloseReason::Decode(format!("{e} (bytes {head})")));
                    }
                },
                Ok(None) => break,
                Err(e) => self.close(CloseReason::Framing(e.to_string())),
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

    /// Timers: handshake, echo keepalive, stalled partial messages.
    pub fn handle_timeout(&mut self, now_ns: u64) {
        if self.phase == Phase::Closed {
            return;
        }
        let after = |base: u64, d: Duration| now_ns >= base.saturating_add(ns(d));
        let buffered = self.framer.buffered();
        if buffered > 0 && after(self.last_rx_ns, self.cfg.partial_message_timeout) {
            return self.close(CloseReason::PartialMessageStalled { buffered });
        }
        if self.phase != Phase::Up && after(self.started_ns, self.cfg.handshake_timeout) {
            let waiting = match self.phase {
                Phase::AwaitHello => "HELLO",
                _ => "FEATURES_REPLY",
            };
            return self.close(CloseReason::HandshakeTimeout(waiting));
        }
        if let Some((_, sent)) = self.echo_outstanding {
            if after(sent, self.cfg.echo_timeout) {
                self.close(CloseReason::EchoTimeout);
            }
        } else if self.phase == Phase::Up && after(self.last_rx_ns, self.cfg.echo_interval) {
            let x = self.send(|x| Message::echo_request(x, Vec::new()));
            self.echo_outstanding = Some((x, now_ns));
        }
    }

    // ---- internals -----------------------------------------------------------------------------

    fn alloc_xid(&mut self) -> u32 {
        let x = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1).max(1);
        x
    }

    fn push_out(&mut self, m: Message) {
        self.counters.messages_sent += 1;
        self.outbox.push_back(m);
    }

    fn track(&mut self, xid: u32, tag: T, expect: Expect) {
        self.seq += 1;
        let seq = self.seq;
        self.pending.insert(xid, Pending { tag, seq });
        if expect == Expect::ErrorOnly {
            self.unanswered.push_back((seq, xid));
            while self.unanswered.len() > self.cfg.max_unanswered {
                if let Some((s, x)) = self.unanswered.pop_front() {
                    if self.pending.get(&x).is_some_and(|p| p.seq == s) {
                        self.pending.remove(&x);
                        self.counters.unanswered_forgotten += 1;
                    }
                }
            }
        }
    }

    /// A barrier request sent as `barrier_seq` was answered: every command sent before it
    /// succeeded.
    fn commands_done_before(&mut self, barrier_seq: u64) {
        while let Some(&(s, x)) = self.unanswered.front() {
            if s >= barrier_seq {
                break;
            }
            self.unanswered.pop_front();
            if self.pending.get(&x).is_some_and(|p| p.seq == s) {
                self.pending.remove(&x);
            }
        }
    }

    fn handle_message(&mut self, msg: Message, now_ns: u64) {
        self.counters.messages_received += 1;
        match self.phase {
            Phase::AwaitHello => return self.handle_hello(msg),
            Phase::AwaitFeatures { xid } => {
                if let (Body::FeaturesReply(f), true) = (&msg.body, msg.xid == xid) {
                    self.phase = Phase::Up;
                    self.events.push_back(Event::Up(f.clone()));
                    return;
                }
            }
            Phase::Up | Phase::Closed => {}
        }
        match &msg.body {
            Body::EchoRequest(_) => return self.handle_echo_request(&msg, now_ns),
            Body::EchoReply(_) if self.echo_outstanding.map(|(x, _)| x) == Some(msg.xid) => {
                self.echo_outstanding = None;
                return;
            }
            Body::Hello(_) => return,
            _ => {}
        }
        let answers = matches!(
            msg.body,
            Body::Error(_)
                | Body::FeaturesReply(_)
                | Body::GetConfigReply(_)
                | Body::MultipartReply(_)
                | Body::BarrierReply
                | Body::QueueGetConfigReply(_)
                | Body::RoleReply(_)
                | Body::GetAsyncReply(_)
                | Body::BundleControl(_)
                | Body::EchoReply(_)
                | Body::Experimenter(_)
        );
        if !answers || !self.pending.contains_key(&msg.xid) {
            return self.events.push_back(Event::Message(msg));
        }
        let xid = msg.xid;
        let msg = match msg.body {
            Body::MultipartReply(r) => match self.assembler.push(xid, r) {
                Ok(Some(body)) => Message {
                    body: Body::MultipartReply(MultipartReply { flags: 0, body }),
                    ..msg
                },
                Ok(None) => return,
                Err(e) => return self.close(CloseReason::Multipart(e.to_string())),
            },
            body => Message { body, ..msg },
        };
        let Some(p) = self.pending.remove(&xid) else {
            return;
        };
        match msg.body {
            Body::Error(error) => {
                self.assembler.cancel(xid);
                self.events.push_back(Event::Refused {
                    tag: p.tag,
                    xid,
                    error,
                });
            }
            Body::BarrierReply => {
                self.commands_done_before(p.seq);
                self.events.push_back(Event::Reply { tag: p.tag, msg });
            }
            _ => self.events.push_back(Event::Reply { tag: p.tag, msg }),
        }
    }

    fn handle_hello(&mut self, msg: Message) {
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
            let version = msg.version;
            self.send(|x| Message::hello_failed(x, version, &why));
            return self.close(CloseReason::VersionMismatch(why));
        }
        let xid = self.send(Message::features_request);
        self.phase = Phase::AwaitFeatures { xid };
    }

    fn handle_echo_request(&mut self, msg: &Message, now_ns: u64) {
        self.counters.echo_requests_received += 1;
        let (start, count) = self.echo_window;
        if now_ns.saturating_sub(start) >= 1_000_000_000 {
            self.echo_window = (now_ns, 1);
        } else {
            self.echo_window = (start, count + 1);
            if count + 1 > self.cfg.max_echo_requests_per_sec {
                let per_sec = self.cfg.max_echo_requests_per_sec;
                return self.close(CloseReason::EchoFlood { per_sec });
            }
        }
        self.push_out(Message::echo_reply_to(msg));
    }
}

#[cfg(test)]
mod tests;
