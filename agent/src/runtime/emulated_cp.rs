//! The emulated QCN congestion points of the agent's switches (OVS has no QCN; DESIGN §5).
//!
//! One sampling thread for every switch of the agent (the work is microseconds per frame, and
//! one thread wakes once where a thread per switch woke once per switch):
//! - when a frame is the sample of its port (its bytes use up the sampling interval) it reads
//!   that port's egress qdisc backlog with one rtnetlink request ([`crate::qdisc`]) — that is
//!   Q, fresh at the sample. Polling every port every millisecond instead cost one request per
//!   port per millisecond whether or not a sample was due: on Dragonfly(2,4,2) (36 switches,
//!   180 fabric ports) 180 000 requests/s. Every `queue_poll_period` it also refreshes the
//!   backlog gauge of every port (metrics, API);
//! - it receives a port's transmitted frames from one `AF_PACKET` socket (ETH_P_ALL) per fabric
//!   port, bound where the link's far end receives them when that is a local veth peer, else to
//!   the port's interface ([`Tap`], `port_socket`), drained at most every `batch_period`
//!   while frames come and waited on with `poll` when none do. The socket's classic BPF
//!   filter ([`data_sample_on`]) passes only the port's *data* frames (transmitted by it, or
//!   received at its far end), and of those only the samples: a frame of `len` octets with
//!   probability `len / interval`, drawn with the kernel's random number
//!   ([`crate::cp::presample_scale`]), so the sampling rate per octet is 802.1Qau's for any
//!   mix of frame sizes and every frame the CP receives is a sample: the CP needs one frame
//!   per sampling interval (tens of frames at low feedback), and a frame the filter drops is
//!   never queued, woken for or copied. The filter is replaced when a sample changes the
//!   interval. The sampled frame gets a CNM when
//!   Fb < 0 — if it is a culprit: a frame from a host (source MAC in the `02:00` plan) — and,
//!   with `cp.min_sources` > 1, if the port's [`SourceCensus`] admits it (enough distinct hosts
//!   among the frames passed lately);
//! - the CNM (`Cnm::for_sampled_frame`, SA = switch MAC, CPID = switch MAC + port) goes to the
//!   switch task, which injects it with PACKET_OUT and charges source processing.
//!
//! Why the filter does this work: every frame a packet socket receives costs the switch's
//! forwarding thread (on OVS's userspace datapath the one thread that forwards every packet) a
//! queueing and a wake-up, and the CP thread a copy; mininet/README.md "Cost of the emulated
//! CP" measures it side by side. The thread still checks `sll_pkttype` (read safely from
//! `nix::sys::socket::LinkAddr`). Frames are seen when the driver transmits them
//! (after the qdisc); sampling by dequeued bytes equals sampling by enqueued bytes in the long
//! run. ACKs, ARP and CNMs do not count towards the interval: they neither fill a queue nor
//! may be sent a CNM.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fabricflow_proto::cnm::{Cnm, Cpid};
use fabricflow_proto::ethernet::EthernetView;
use fabricflow_proto::MacAddr;
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{
    recv, recvfrom, send, setsockopt, socket, sockopt, AddressFamily, LinkAddr, MsgFlags, SockFlag,
    SockProtocol, SockType,
};
use nix::sys::time::TimeVal;
use rand::Rng;
use serde::Serialize;
use tokio::sync::mpsc;

use crate::config::AgentConfig;
use crate::cp::{
    presample_scale, sampled_queue_bytes, CongestionPoint, SourceCensus, CENSUS_MIN_FRAME_BYTES,
};
use crate::plan::host_group;
use crate::qdisc::{
    dump_qdiscs_request, get_root_qdisc_request, parse_root_backlog, parse_root_qdiscs, QueueStats,
};
use crate::switch_core::Culprit;
use crate::PortNo;

/// Weight of a gauge read's drop rate in a port's running mean (`drop_scaled_fb`): about the
/// last eight reads (0.8 s at the default 100 ms period).
const DROP_RATE_WEIGHT: f64 = 1.0 / 8.0;
/// The drop-rate floor of `drop_scaled_fb`, as a fraction of the line's full-frame rate: 0.1 %
/// loss counts as none.
const DROP_FLOOR_OF_FRAME_RATE: f64 = 0.001;
/// A full standard frame on the wire, octets: what the floor's frame rate is counted in.
const FULL_FRAME_BYTES: f64 = 1514.0;

/// `PACKET_OUTGOING` (linux/if_packet.h).
const PACKET_OUTGOING: u8 = 4;

/// A fabric port with its local interface.
#[derive(Debug, Clone, PartialEq)]
pub struct CpPort {
    /// OpenFlow port.
    pub port: PortNo,
    /// Interface name.
    pub ifname: String,
    /// Interface index.
    pub ifindex: u32,
    /// Its link: Qeq and the source window follow it.
    pub link: crate::link::PortLink,
    /// Where its frames are tapped.
    pub tap: Tap,
}

/// Where a port's frames are read: what the socket binds to and which direction it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tap {
    /// The port's own interface (this index), frames it transmits.
    Egress(u32),
    /// The link's far end (a veth peer in this namespace, this index), frames it receives:
    /// the same frames, after the port's qdisc, without a clone of every frame.
    FarEnd(u32),
}

impl Tap {
    /// The tap for port interface `ifname` (index `ifindex`) under `cfg`: its veth peer when
    /// `auto` finds one here, else the interface itself.
    pub fn for_port(cfg: crate::config::CpTap, ifname: &str, ifindex: u32) -> Tap {
        match cfg {
            crate::config::CpTap::Auto => {
                far_end(ifname, ifindex).map_or(Tap::Egress(ifindex), Tap::FarEnd)
            }
            crate::config::CpTap::Egress => Tap::Egress(ifindex),
        }
    }

    fn ifindex(self) -> u32 {
        match self {
            Tap::Egress(i) | Tap::FarEnd(i) => i,
        }
    }

    /// Whether a frame of `pkttype` (sll_pkttype) is one the port transmitted.
    fn keeps(self, pkttype: u8) -> bool {
        match self {
            Tap::Egress(_) => pkttype == PACKET_OUTGOING,
            Tap::FarEnd(_) => pkttype != PACKET_OUTGOING,
        }
    }
}

/// The index of the veth peer of `ifname` when it is an interface of this namespace and names
/// `ifindex` as its own peer (sysfs `iflink`: a veth's peer index, an interface's own index
/// otherwise; an index from another namespace could name an unrelated local interface, hence
/// the check both ways).
fn far_end(ifname: &str, ifindex: u32) -> Option<u32> {
    let iflink = |name: &str| -> Option<u32> {
        std::fs::read_to_string(format!("/sys/class/net/{name}/iflink"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let peer = iflink(ifname)?;
    if peer == ifindex || peer == 0 {
        return None;
    }
    let peer_name = nix::net::if_::if_nameindex()
        .ok()?
        .iter()
        .find(|i| i.index() == peer)?
        .name()
        .to_str()
        .ok()?
        .to_owned();
    (iflink(&peer_name)? == ifindex).then_some(peer)
}

/// A CNM built by the emulated CP, for the switch task to inject.
#[derive(Debug, Clone)]
pub struct GeneratedCnm {
    /// The complete CNM frame.
    pub frame: Vec<u8>,
    /// The sampled frame's source and destination.
    pub culprit: Culprit,
    /// QntzFb carried.
    pub qntz_fb: u8,
    /// The congested port.
    pub port: PortNo,
}

/// One port of the CP, for the API and metrics.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CpPortStatus {
    /// OpenFlow port.
    pub port: PortNo,
    /// Interface.
    pub ifname: String,
    /// Its frames are read where the link's far end receives them ([`Tap::FarEnd`]).
    pub far_end: bool,
    /// Last backlog read, octets.
    pub backlog_bytes: u64,
    /// Packets the qdisc had dropped at the last gauge refresh (the emulated link's losses).
    pub qdisc_drops: u32,
    /// Samples taken.
    pub samples: u64,
    /// The sampling interval the port's filter draws with, octets (802.1Qau's table at the
    /// last sample's QntzFb).
    pub sampling_interval_bytes: u64,
    /// CNMs generated.
    pub cnms: u64,
    /// Congested samples without a CNM because fewer than `cp.min_sources` hosts sent data
    /// through the port within the window.
    pub samples_few_sources: u64,
    /// Congested samples whose QntzFb the port's drop excess raised
    /// (`runtime.emulated_cp.drop_scaled_fb`).
    pub samples_drop_scaled: u64,
    /// Distinct data sources at the last congested sample (only counted with
    /// `cp.min_sources` > 1; 0 otherwise).
    pub sources: u32,
    /// Last Fb.
    pub last_fb: f64,
}

/// The CP of one switch, for the API and metrics.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CpStatus {
    /// Per port.
    pub ports: Vec<CpPortStatus>,
    /// Backlog readings that failed.
    pub netlink_errors: u64,
    /// Data frames the port filters passed to the CP: one per sample.
    pub frames_seen: u64,
    /// Generated CNMs dropped because the switch task was busy.
    pub cnms_dropped_busy: u64,
}

/// A switch's registration with the sampling thread.
#[derive(Debug)]
pub struct CpHandle {
    stop: Arc<AtomicBool>,
    status: Arc<Mutex<CpStatus>>,
}

impl CpHandle {
    /// Asks the sampling thread to forget this switch (it does within 100 ms) and close its
    /// sockets.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// A snapshot.
    pub fn status(&self) -> CpStatus {
        self.status.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for CpHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A blocking rtnetlink socket reading root-qdisc backlogs.
#[derive(Debug)]
pub struct QdiscReader {
    fd: OwnedFd,
    seq: u32,
    buf: Vec<u8>,
}

impl QdiscReader {
    /// Opens the socket (receive timeout 100 ms: the kernel answers in microseconds).
    pub fn open() -> nix::Result<Self> {
        let fd = socket(
            AddressFamily::Netlink,
            SockType::Raw,
            SockFlag::SOCK_CLOEXEC,
            SockProtocol::NetlinkRoute,
        )?;
        setsockopt(&fd, sockopt::ReceiveTimeout, &TimeVal::new(0, 100_000))?;
        Ok(QdiscReader {
            fd,
            seq: 0,
            buf: vec![0; 1 << 16],
        })
    }

    /// The root qdisc of every interface of the namespace, in one dump (replaces `out`'s
    /// contents).
    pub fn dump_roots(&mut self, out: &mut Vec<QueueStats>) -> anyhow::Result<()> {
        out.clear();
        self.seq = self.seq.wrapping_add(1);
        send(
            self.fd.as_raw_fd(),
            &dump_qdiscs_request(self.seq),
            MsgFlags::empty(),
        )?;
        loop {
            let n = recv(self.fd.as_raw_fd(), &mut self.buf, MsgFlags::empty())?;
            let reply = self.buf.get(..n).unwrap_or_default();
            if parse_root_qdiscs(reply, out)? {
                return Ok(());
            }
        }
    }

    /// The statistics of the root qdisc of `ifindex`.
    pub fn stats(&mut self, ifindex: u32) -> anyhow::Result<QueueStats> {
        self.seq = self.seq.wrapping_add(1);
        let req = get_root_qdisc_request(ifindex, self.seq);
        send(self.fd.as_raw_fd(), &req, MsgFlags::empty())?;
        loop {
            let n = recv(self.fd.as_raw_fd(), &mut self.buf, MsgFlags::empty())?;
            let reply = self.buf.get(..n).unwrap_or_default();
            if let Some(s) = parse_root_backlog(reply, ifindex)? {
                return Ok(s);
            }
        }
    }
}

/// Registers the CP of switch `name` on `ports` with the agent's sampling thread (started by
/// the first registration). One thread serves every switch: a frame wakes one thread, not the
/// one of its switch among 36, and a busy CP wakes at most once per `batch_period` in all.
pub fn spawn(
    name: &str,
    ports: Vec<CpPort>,
    switch_mac: MacAddr,
    cfg: &AgentConfig,
    tx: mpsc::Sender<GeneratedCnm>,
) -> anyhow::Result<CpHandle> {
    let (cp, handle) = SwitchCp::new(ports, switch_mac, cfg, tx)?;
    tracing::info!(switch = %name, ports = ?cp.ports.iter().map(|p| (p.port, p.ifname.as_str())).collect::<Vec<_>>(), "emulated congestion point running");
    sampler()?
        .lock()
        .map_err(|_| anyhow::anyhow!("CP sampler poisoned"))?
        .push(cp);
    Ok(handle)
}

/// Switches registered but not yet adopted by the sampling thread.
type Pending = Arc<Mutex<Vec<SwitchCp>>>;

/// The sampling thread's inbox, starting the thread on first use.
fn sampler() -> anyhow::Result<Pending> {
    static SAMPLER: Mutex<Option<Pending>> = Mutex::new(None);
    let mut slot = SAMPLER
        .lock()
        .map_err(|_| anyhow::anyhow!("CP sampler poisoned"))?;
    if let Some(p) = slot.as_ref() {
        return Ok(p.clone());
    }
    let qdisc = QdiscReader::open()?;
    let pending: Pending = Arc::default();
    let inbox = pending.clone();
    std::thread::Builder::new()
        .name("cp".to_owned())
        .spawn(move || sample_forever(&inbox, qdisc))?;
    *slot = Some(pending.clone());
    Ok(pending)
}

/// The sampling thread: adopts new switches, retires stopped ones, refreshes gauges when due,
/// drains every socket, then sleeps a batch period (frames came) or until a frame comes.
fn sample_forever(inbox: &Mutex<Vec<SwitchCp>>, mut qdisc: QdiscReader) {
    /// How long an idle thread waits before looking for new switches.
    const IDLE: Duration = Duration::from_millis(100);
    let mut rng = rand::thread_rng();
    let mut buf = vec![0u8; 2048];
    let mut switches: Vec<SwitchCp> = Vec::new();
    loop {
        if let Ok(mut new) = inbox.lock() {
            switches.append(&mut new);
        }
        switches.retain(|s| !s.stop.load(Ordering::Relaxed));
        let now = Instant::now();
        let mut next_gauge = now + IDLE;
        for s in &mut switches {
            if now >= s.next_gauge {
                s.refresh_gauges(&mut qdisc);
                s.next_gauge = now + s.gauge_period;
            }
            next_gauge = next_gauge.min(s.next_gauge);
        }
        let mut frames = 0u64;
        let ready = readable(&switches);
        for (s, ready) in switches.iter_mut().zip(&ready) {
            frames += s.drain(ready, &mut qdisc, &mut rng, &mut buf);
        }
        if frames > 0 {
            let batch = switches.iter().map(|s| s.batch).min().unwrap_or(IDLE);
            std::thread::sleep(batch);
        } else {
            let socks: Vec<&socket2::Socket> = switches
                .iter()
                .flat_map(|s| s.socks.iter().map(|(sock, _)| sock))
                .collect();
            wait_readable(&socks, next_gauge.saturating_duration_since(Instant::now()));
        }
    }
}

/// The CP of one switch: per fabric port a packet socket, a congestion point and a census.
#[derive(Debug)]
struct SwitchCp {
    ports: Vec<CpPort>,
    switch_mac: MacAddr,
    /// Per port: its socket and the sampling interval its filter draws with, octets.
    socks: Vec<(socket2::Socket, u64)>,
    cps: Vec<CongestionPoint>,
    censuses: Vec<SourceCensus>,
    min_sources: u32,
    /// Per port: the last backlog read (octets) and the qdisc's drop count.
    q: Vec<u64>,
    drops: Vec<u32>,
    /// Per port: the qdisc's drop count at the port's previous sample (`None` before the first).
    sample_drops: Vec<Option<u32>>,
    /// `runtime.emulated_cp.drops_fill_queue`.
    drops_fill_queue: bool,
    /// `runtime.emulated_cp.drop_scaled_fb` (with its onset and peers' minimum load); per port
    /// its drop rate (drops/s) and load (octets/s over the line rate), running means over the
    /// gauge reads from `drops` and `sent` between two of them, and when the last read was.
    drop_scaled_fb: bool,
    drop_excess_onset: f64,
    drop_peer_min_load: f64,
    drop_rate: Vec<f64>,
    sent: Vec<u64>,
    load: Vec<f64>,
    /// Per port its drop excess as of the last gauge read (1 when off): samples come tens of
    /// times more often than the rates it derives from change.
    excess: Vec<f64>,
    gauge_at: Option<Instant>,
    tx: mpsc::Sender<GeneratedCnm>,
    stop: Arc<AtomicBool>,
    status: Arc<Mutex<CpStatus>>,
    gauge_period: Duration,
    next_gauge: Instant,
    batch: Duration,
    start: Instant,
}

impl SwitchCp {
    fn new(
        ports: Vec<CpPort>,
        switch_mac: MacAddr,
        cfg: &AgentConfig,
        tx: mpsc::Sender<GeneratedCnm>,
    ) -> anyhow::Result<(SwitchCp, CpHandle)> {
        let mut rng = rand::thread_rng();
        let mut cps = Vec::with_capacity(ports.len());
        for p in &ports {
            cps.push(CongestionPoint::new(cfg.cp.at(p.link), rng.gen())?);
        }
        let mut socks = Vec::with_capacity(ports.len());
        for (p, cp) in ports.iter().zip(&cps) {
            let interval = cp.nominal_interval_bytes();
            socks.push((port_socket(p.tap, interval)?, interval));
        }
        let status = Arc::new(Mutex::new(CpStatus {
            ports: ports
                .iter()
                .map(|p| CpPortStatus {
                    port: p.port,
                    ifname: p.ifname.clone(),
                    far_end: matches!(p.tap, Tap::FarEnd(_)),
                    ..CpPortStatus::default()
                })
                .collect(),
            ..CpStatus::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let e = &cfg.runtime.emulated_cp;
        let n = ports.len();
        let cp = SwitchCp {
            censuses: ports
                .iter()
                .map(|p| SourceCensus::new(cfg.cp.source_window_us(p.link)))
                .collect(),
            min_sources: cfg.cp.min_sources,
            q: vec![0; n],
            drops: vec![0; n],
            sample_drops: vec![None; n],
            drops_fill_queue: e.drops_fill_queue,
            drop_scaled_fb: e.drop_scaled_fb,
            drop_excess_onset: e.drop_excess_onset,
            drop_peer_min_load: e.drop_peer_min_load,
            drop_rate: vec![0.0; n],
            sent: vec![0; n],
            load: vec![0.0; n],
            excess: vec![1.0; n],
            gauge_at: None,
            ports,
            switch_mac,
            socks,
            cps,
            tx,
            stop: stop.clone(),
            status: status.clone(),
            gauge_period: Duration::from_micros(e.queue_poll_period_us),
            next_gauge: Instant::now(),
            batch: Duration::from_micros(e.batch_period_us),
            start: Instant::now(),
        };
        Ok((cp, CpHandle { stop, status }))
    }

    /// Reads every port's backlog and drops for the metrics and the API (and, with
    /// `drop_scaled_fb`, each port's drop rate).
    fn refresh_gauges(&mut self, qdisc: &mut QdiscReader) {
        let mut errs = 0;
        let now = Instant::now();
        let since = self
            .gauge_at
            .replace(now)
            .map(|t| now.saturating_duration_since(t).as_secs_f64())
            .filter(|&dt| dt > 0.0);
        for (i, p) in self.ports.iter().enumerate() {
            match qdisc.stats(p.ifindex) {
                Ok(st) => {
                    if let Some(slot) = self.q.get_mut(i) {
                        *slot = u64::from(st.backlog_bytes);
                    }
                    if let Some(slot) = self.drops.get_mut(i) {
                        if let (Some(dt), Some(rate)) = (since, self.drop_rate.get_mut(i)) {
                            let inst = f64::from(st.drops.wrapping_sub(*slot)) / dt;
                            *rate += (inst - *rate) * DROP_RATE_WEIGHT;
                        }
                        *slot = st.drops;
                    }
                    if let Some(slot) = self.sent.get_mut(i) {
                        if let (Some(dt), Some(load)) = (since, self.load.get_mut(i)) {
                            #[allow(clippy::cast_precision_loss)] // octets in 100 ms
                            let bits = st.bytes.wrapping_sub(*slot) as f64 * 8.0;
                            let inst = bits / dt / p.link.rate_bps.max(1.0);
                            *load += (inst - *load) * DROP_RATE_WEIGHT;
                        }
                        *slot = st.bytes;
                    }
                }
                Err(_) => errs += 1,
            }
        }
        if self.drop_scaled_fb {
            self.excess = (0..self.ports.len()).map(|i| self.drop_excess(i)).collect();
        }
        if let Ok(mut s) = self.status.lock() {
            s.netlink_errors += errs;
            for ((st, &b), &d) in s.ports.iter_mut().zip(&self.q).zip(&self.drops) {
                st.backlog_bytes = b;
                st.qdisc_drops = d;
            }
        }
    }

    /// Reads every frame waiting on this switch's sockets marked in `ready` (all when it is
    /// shorter); how many there were.
    fn drain(
        &mut self,
        ready: &[bool],
        qdisc: &mut QdiscReader,
        rng: &mut impl Rng,
        buf: &mut [u8],
    ) -> u64 {
        let mut frames = 0;
        for i in 0..self.socks.len() {
            if !ready.get(i).copied().unwrap_or(true) {
                continue;
            }
            while let Some((sock, _)) = self.socks.get(i) {
                let (n, addr) = match recvfrom::<LinkAddr>(sock.as_raw_fd(), buf) {
                    Ok(r) => r,
                    Err(Errno::EINTR) => continue,
                    // EAGAIN: this socket is drained.
                    Err(_) => break,
                };
                frames += 1;
                let Some(addr) = addr else { continue };
                let keeps = self
                    .ports
                    .get(i)
                    .is_some_and(|p| p.tap.keeps(addr.pkttype()));
                if !keeps {
                    continue;
                }
                let frame = buf.get(..n).unwrap_or_default();
                self.on_frame(i, frame, qdisc, rng);
            }
        }
        frames
    }

    /// Port `i`'s drop excess over the switch's loaded other ports of its line rate (1 when
    /// off), from the rates of the last gauge read.
    fn drop_excess(&self, i: usize) -> f64 {
        let (true, Some(p), Some(&own)) = (
            self.drop_scaled_fb,
            self.ports.get(i),
            self.drop_rate.get(i),
        ) else {
            return 1.0;
        };
        #[allow(clippy::float_cmp)] // the same configured rate, not a computed one
        let peers: Vec<crate::cp::PeerDrops> = self
            .ports
            .iter()
            .zip(self.drop_rate.iter().zip(&self.load))
            .enumerate()
            .filter(|(j, (q, _))| *j != i && q.link.rate_bps == p.link.rate_bps)
            .map(|(_, (_, (&drops_per_s, &load)))| crate::cp::PeerDrops { drops_per_s, load })
            .collect();
        let floor = DROP_FLOOR_OF_FRAME_RATE * p.link.rate_bps / (8.0 * FULL_FRAME_BYTES);
        crate::cp::drop_excess(own, &peers, floor, self.drop_peer_min_load)
    }

    /// One frame the filter of port `i` passed.
    fn on_frame(&mut self, i: usize, frame: &[u8], qdisc: &mut QdiscReader, rng: &mut impl Rng) {
        let n = frame.len() as u64;
        let min_sources = self.min_sources;
        let excess = self.excess.get(i).copied().unwrap_or(1.0);
        let (Some(cp), Some(p), Some(&qb), Some((sock, interval))) = (
            self.cps.get_mut(i),
            self.ports.get(i),
            self.q.get(i),
            self.socks.get_mut(i),
        ) else {
            return;
        };
        // Only with the gate on: the census costs a clock read and a look-up per frame.
        let now_us = if min_sources > 1 {
            let now = u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX);
            if let (Some(c), Some(src)) = (self.censuses.get_mut(i), host_source(frame)) {
                c.observe(src, n, now);
            }
            now
        } else {
            0
        };
        // The kernel drew this frame as the sample (`data_sample_on`): Q now, for this port.
        let qb = match qdisc.stats(p.ifindex) {
            Ok(st) => {
                let b = u64::from(st.backlog_bytes);
                if let Some(slot) = self.q.get_mut(i) {
                    *slot = b;
                }
                let dropped = match self.sample_drops.get_mut(i) {
                    Some(last) => {
                        let d = last.is_some_and(|l| l != st.drops);
                        *last = Some(st.drops);
                        d
                    }
                    None => false,
                };
                sampled_queue_bytes(b, self.drops_fill_queue && dropped, p.link.buffer_bytes)
            }
            Err(_) => {
                if let Ok(mut s) = self.status.lock() {
                    s.netlink_errors += 1;
                }
                qb
            }
        };
        let mut fb = cp.sample(qb, rng.gen());
        let mut drop_scaled = false;
        if fb.congested() {
            let q = crate::cp::drop_scaled_qntz_fb(fb.qntz_fb, excess, self.drop_excess_onset);
            drop_scaled = q != fb.qntz_fb;
            fb.qntz_fb = q;
        }
        // The next interval may differ (a congested port samples more often); a filter that
        // cannot be replaced keeps drawing at the old one.
        let next = cp.nominal_interval_bytes();
        if next != *interval && sock.attach_filter(&data_sample_on(p.tap, next)).is_ok() {
            *interval = next;
        }
        // `admitted`: congested, and the census (if on) lets it through.
        let (admitted, sources) = if fb.congested() {
            self.censuses
                .get_mut(i)
                .map_or((true, 0), |c| c.admits(min_sources, now_us))
        } else {
            (false, 0)
        };
        let switch_mac = self.switch_mac;
        let cnm = Culprit::of_frame(frame)
            .filter(|_| admitted)
            .and_then(|culprit| {
                let cpid = Cpid::new(switch_mac, u16::try_from(p.port).unwrap_or(u16::MAX));
                Cnm::for_sampled_frame(
                    frame,
                    switch_mac,
                    cpid,
                    fb.qntz_fb,
                    fb.cnm_q_offset(),
                    fb.cnm_q_delta(),
                )
                .ok()
                .map(|f| GeneratedCnm {
                    frame: f.to_vec(),
                    culprit,
                    qntz_fb: fb.qntz_fb,
                    port: p.port,
                })
            });
        let sent = cnm.map(|c| self.tx.try_send(c).is_ok());
        let interval = *interval;
        if let Ok(mut s) = self.status.lock() {
            s.frames_seen += 1;
            if sent == Some(false) {
                s.cnms_dropped_busy += 1;
            }
            if let Some(st) = s.ports.get_mut(i) {
                st.samples += 1;
                st.sampling_interval_bytes = interval;
                st.last_fb = fb.fb;
                if fb.congested() && min_sources > 1 {
                    st.sources = u32::try_from(sources).unwrap_or(u32::MAX);
                    if !admitted {
                        st.samples_few_sources += 1;
                    }
                }
                if sent == Some(true) {
                    st.cnms += 1;
                }
                if drop_scaled {
                    st.samples_drop_scaled += 1;
                }
            }
        }
    }
}

/// Per switch, per socket: whether a frame waits, from one `poll` over every socket, so a
/// sweep reads only the sockets that have frames (most ports see no sample in a batch period;
/// a `recv` on each would be one failing system call per port per sweep). When `poll` fails,
/// every socket is marked, which is always safe.
fn readable(switches: &[SwitchCp]) -> Vec<Vec<bool>> {
    use std::os::fd::AsFd;
    let mut fds: Vec<PollFd<'_>> = switches
        .iter()
        .flat_map(|s| s.socks.iter())
        .map(|(sock, _)| PollFd::new(sock.as_fd(), PollFlags::POLLIN))
        .collect();
    let polled = poll(&mut fds, PollTimeout::ZERO).is_ok();
    let mut flags = fds
        .iter()
        .map(|f| !polled || f.revents().is_none_or(|r| !r.is_empty()));
    switches
        .iter()
        .map(|s| flags.by_ref().take(s.socks.len()).collect())
        .collect()
}

/// Blocks until one of `socks` has a frame to read, or `timeout` passes.
fn wait_readable(socks: &[&socket2::Socket], timeout: Duration) {
    use std::os::fd::AsFd;
    let mut fds: Vec<PollFd<'_>> = socks
        .iter()
        .map(|s| PollFd::new(s.as_fd(), PollFlags::POLLIN))
        .collect();
    // A timeout beyond poll's range (never, for the gauge period) waits the longest it can.
    let timeout = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
    // EINTR or any other failure: the caller sweeps the sockets again, which is always safe.
    let _ = poll(&mut fds, timeout);
}

/// A non-blocking packet socket receiving, at `tap`, the data frames the port transmitted that
/// are samples at a sampling interval of `interval_bytes` ([`data_sample_on`]).
///
/// Bound to the interface, the socket sits on that device's tap list: the kernel hands it only
/// that device's frames. On a device's transmit side every tap costs a clone of every frame
/// before its filter runs; on the receive side the filter reads the frame in place, which is
/// why [`Tap::FarEnd`] is preferred. An unbound ETH_P_ALL socket sits on the namespace-wide
/// list instead and every frame sent or received on any interface visits it (and runs its
/// filter) — with one socket per switch, 36 visits per frame event on Dragonfly(2,4,2), all in
/// the forwarding thread's context. The filter decides before the frame is queued: a frame it
/// drops costs a few BPF instructions (and, at [`Tap::Egress`], the clone), no queueing,
/// wake-up or copy to user space. Non-blocking and drained in batches (`batch_period_us`): no
/// reader sleeps in `recv`.
fn port_socket(tap: Tap, interval_bytes: u64) -> std::io::Result<socket2::Socket> {
    let fd = socket(
        AddressFamily::Packet,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        SockProtocol::EthAll,
    )?;
    if let Tap::FarEnd(_) = tap {
        // Off the far end's transmit path entirely (its frames are the other direction).
        ignore_outgoing(&fd)?;
    }
    bind_to_interface(&fd, tap.ifindex(), ETH_P_ALL)?;
    // Room for a batch period of frames (the kernel caps it at rmem_max).
    let _ = setsockopt(&fd, sockopt::RcvBuf, &(1 << 20));
    let sock = socket2::Socket::from(fd);
    sock.attach_filter(&data_sample_on(tap, interval_bytes))?;
    Ok(sock)
}

/// `PACKET_IGNORE_OUTGOING` (linux/if_packet.h, Linux 4.20).
const PACKET_IGNORE_OUTGOING: i32 = 23;

/// Sets `PACKET_IGNORE_OUTGOING` on packet socket `fd`: the kernel skips the socket when the
/// device transmits, before it clones the frame. Neither nix nor socket2 names the option.
#[allow(unsafe_code)]
pub(crate) fn ignore_outgoing(fd: &OwnedFd) -> std::io::Result<()> {
    use nix::libc;
    let on: libc::c_int = 1;
    let len = libc::socklen_t::try_from(std::mem::size_of::<libc::c_int>())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "c_int size"))?;
    // SAFETY: `fd` is an open socket; the pointer and length describe `on`, an initialised
    // c_int that lives until the call returns; setsockopt copies it.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            PACKET_IGNORE_OUTGOING,
            std::ptr::from_ref(&on).cast::<libc::c_void>(),
            len,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `ETH_P_ALL` (linux/if_ether.h): every protocol.
pub(crate) const ETH_P_ALL: u16 = 0x0003;

/// `bind(2)` of packet socket `fd` to interface `ifindex` and EtherType `protocol` (host order;
/// [`ETH_P_ALL`] for all). The one unsafe call of the agent: neither nix nor socket2 builds a
/// `sockaddr_ll` safely.
#[allow(unsafe_code)]
pub(crate) fn bind_to_interface(fd: &OwnedFd, ifindex: u32, protocol: u16) -> std::io::Result<()> {
    use nix::libc;
    let invalid = |what| std::io::Error::new(std::io::ErrorKind::InvalidInput, what);
    let sll = libc::sockaddr_ll {
        sll_family: u16::try_from(libc::AF_PACKET).map_err(|_| invalid("AF_PACKET"))?,
        sll_protocol: protocol.to_be(),
        sll_ifindex: i32::try_from(ifindex).map_err(|_| invalid("ifindex out of range"))?,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 0,
        sll_addr: [0; 8],
    };
    let len = libc::socklen_t::try_from(std::mem::size_of::<libc::sockaddr_ll>())
        .map_err(|_| invalid("sockaddr_ll size"))?;
    // SAFETY: `fd` is an open socket; the pointer and length describe `sll`, a fully
    // initialised sockaddr_ll that lives until the call returns; bind does not keep it.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            std::ptr::from_ref(&sll).cast::<libc::sockaddr>(),
            len,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

// Classic BPF (linux/filter.h): opcodes and the ancillary-data offsets the kernel fills in.
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_LD_W_LEN: u16 = 0x80;
const BPF_JEQ_K: u16 = 0x15;
const BPF_JGE_K: u16 = 0x35;
const BPF_JGE_X: u16 = 0x3d;
const BPF_MUL_K: u16 = 0x24;
const BPF_TAX: u16 = 0x07;
const BPF_RET_K: u16 = 0x06;
const SKF_AD_PKTTYPE: u32 = 0xffff_f000 + 4;
const SKF_AD_IFINDEX: u32 = 0xffff_f000 + 8;
const SKF_AD_RANDOM: u32 = 0xffff_f000 + 56;

/// Where a filter instruction's comparison goes.
#[derive(Debug, Clone, Copy)]
enum Go {
    Next,
    Drop,
    Accept,
}

/// The kernel half of the emulated CP's sampling: a BPF program passing, whole, the frames
/// the port transmitted (outgoing on its interface, or incoming at its far end) that are data
/// (at least [`CENSUS_MIN_FRAME_BYTES`]: ACKs, ARP and CNMs neither fill a queue nor earn one)
/// and are drawn as the sample: a frame of `len` octets with probability `len /
/// interval_bytes` (the kernel's random number against `len` · [`presample_scale`]), always
/// once `len` ≥ the interval. Everything else is dropped before it is queued to the socket, so
/// the CP receives one frame per sample and nothing between samples.
pub fn data_sample_on(tap: Tap, interval_bytes: u64) -> Vec<socket2::SockFilter> {
    bpf_data_sample_on(tap, interval_bytes)
        .iter()
        .map(|&(code, jt, jf, k)| socket2::SockFilter::new(code, jt, jf, k))
        .collect()
}

/// The program as (code, jt, jf, k) tuples.
fn bpf_data_sample_on(tap: Tap, interval_bytes: u64) -> Vec<(u16, u8, u8, u32)> {
    let min_len = u32::try_from(CENSUS_MIN_FRAME_BYTES).unwrap_or(u32::MAX);
    // A frame this long is always a sample; below it len · scale < 2^32 (presample_scale).
    let interval = u32::try_from(interval_bytes)
        .unwrap_or(u32::MAX)
        .max(min_len);
    // Egress keeps the outgoing frames of the port, the far end its incoming ones.
    let (outgoing, other) = match tap {
        Tap::Egress(_) => (Go::Next, Go::Drop),
        Tap::FarEnd(_) => (Go::Drop, Go::Next),
    };
    let scale = presample_scale(interval_bytes);
    let body: Vec<(u16, Go, Go, u32)> = vec![
        (BPF_LD_W_ABS, Go::Next, Go::Next, SKF_AD_PKTTYPE),
        (BPF_JEQ_K, outgoing, other, u32::from(PACKET_OUTGOING)),
        (BPF_LD_W_ABS, Go::Next, Go::Next, SKF_AD_IFINDEX),
        (BPF_JEQ_K, Go::Next, Go::Drop, tap.ifindex()),
        (BPF_LD_W_LEN, Go::Next, Go::Next, 0),
        (BPF_JGE_K, Go::Next, Go::Drop, min_len),
        (BPF_JGE_K, Go::Accept, Go::Next, interval),
        // X = len · scale; accept iff random < X.
        (BPF_MUL_K, Go::Next, Go::Next, scale),
        (BPF_TAX, Go::Next, Go::Next, 0),
        (BPF_LD_W_ABS, Go::Next, Go::Next, SKF_AD_RANDOM),
        (BPF_JGE_X, Go::Drop, Go::Accept, 0),
    ];
    // Drop, then accept, after the body; the body is < 16 instructions, so offsets fit a u8.
    let (drop_at, accept_at) = (body.len(), body.len() + 1);
    let offset = |i: usize, go: Go| -> u8 {
        let to = match go {
            Go::Next => i + 1,
            Go::Drop => drop_at,
            Go::Accept => accept_at,
        };
        u8::try_from(to - (i + 1)).unwrap_or(0)
    };
    let mut prog: Vec<(u16, u8, u8, u32)> = (body.iter().enumerate())
        .map(|(i, &(code, jt, jf, k))| (code, offset(i, jt), offset(i, jf), k))
        .collect();
    prog.push((BPF_RET_K, 0, 0, 0));
    prog.push((BPF_RET_K, 0, 0, u32::MAX));
    prog
}

/// The destination of a sampled frame if it may be sent a CNM: sent by a host of the plan
/// (`02:00:…` source) and not a CNM itself.
/// The source of a frame a host sent (source MAC in the `02:00` plan): what the census counts.
fn host_source(frame: &[u8]) -> Option<MacAddr> {
    let src = EthernetView::new_checked(frame).ok()?.src();
    host_group(src).map(|_| src)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame as the kernel's filter sees it.
    struct Frame {
        pkttype: u32,
        ifindex: u32,
        len: u32,
        random: u32,
    }

    /// Runs the filter program the way the kernel would.
    fn run(prog: &[(u16, u8, u8, u32)], f: &Frame) -> u32 {
        let (mut pc, mut a, mut x) = (0usize, 0u32, 0u32);
        loop {
            let (code, jt, jf, k) = prog[pc];
            let jump = |taken: bool| 1 + usize::from(if taken { jt } else { jf });
            match code {
                BPF_LD_W_ABS => {
                    a = match k {
                        SKF_AD_PKTTYPE => f.pkttype,
                        SKF_AD_IFINDEX => f.ifindex,
                        SKF_AD_RANDOM => f.random,
                        _ => panic!("unexpected load {k:#x}"),
                    };
                    pc += 1;
                }
                BPF_LD_W_LEN => {
                    a = f.len;
                    pc += 1;
                }
                BPF_JEQ_K => pc += jump(a == k),
                BPF_JGE_K => pc += jump(a >= k),
                BPF_JGE_X => pc += jump(a >= x),
                BPF_MUL_K => {
                    // The kernel's ALU is 32-bit and wraps.
                    a = a.wrapping_mul(k);
                    pc += 1;
                }
                BPF_TAX => {
                    x = a;
                    pc += 1;
                }
                BPF_RET_K => return k,
                _ => panic!("unexpected opcode {code:#x}"),
            }
        }
    }

    #[test]
    fn filter_passes_outgoing_data_frames_of_the_port() {
        let prog = bpf_data_sample_on(Tap::Egress(7), 1);
        for ifindex in [6, 7, 8] {
            for pkttype in 0..=5 {
                for len in [60, 66, 511, 512, 1514] {
                    let f = Frame {
                        pkttype,
                        ifindex,
                        len,
                        random: 0,
                    };
                    let want = pkttype == u32::from(PACKET_OUTGOING) && ifindex == 7 && len >= 512;
                    assert_eq!(run(&prog, &f) != 0, want, "{pkttype} {ifindex} {len}");
                }
            }
        }
        assert_eq!(
            run(
                &prog,
                &Frame {
                    pkttype: 4,
                    ifindex: 7,
                    len: 1514,
                    random: 0
                }
            ),
            u32::MAX
        );
    }

    /// At the far end the same frames arrive: incoming data frames of the peer pass, and the
    /// peer's own transmissions (the link's other direction) do not.
    #[test]
    fn far_end_filter_passes_incoming_data_frames_of_the_peer() {
        let prog = bpf_data_sample_on(Tap::FarEnd(9), 1);
        for ifindex in [8, 9] {
            for pkttype in 0..=5 {
                for len in [66, 512, 1514] {
                    let f = Frame {
                        pkttype,
                        ifindex,
                        len,
                        random: 0,
                    };
                    let want = pkttype != u32::from(PACKET_OUTGOING) && ifindex == 9 && len >= 512;
                    assert_eq!(run(&prog, &f) != 0, want, "{pkttype} {ifindex} {len}");
                }
            }
        }
        assert!(Tap::FarEnd(9).keeps(3) && !Tap::FarEnd(9).keeps(PACKET_OUTGOING));
        assert!(Tap::Egress(9).keeps(PACKET_OUTGOING) && !Tap::Egress(9).keeps(0));
    }

    /// Loopback has no peer; an interface that does not exist has none either.
    #[test]
    fn a_port_without_a_local_peer_is_tapped_itself() {
        let lo = nix::net::if_::if_nametoindex("lo").unwrap();
        assert_eq!(
            Tap::for_port(crate::config::CpTap::Auto, "lo", lo),
            Tap::Egress(lo)
        );
        assert_eq!(far_end("no-such-if0", 12345), None);
        assert_eq!(
            Tap::for_port(crate::config::CpTap::Egress, "lo", lo),
            Tap::Egress(lo)
        );
    }

    /// The share of `len`-octet frames the filter passes over an even spread of draws.
    fn passed_share(prog: &[(u16, u8, u8, u32)], len: u32) -> f64 {
        let steps = 1u64 << 16;
        let passed = (0..steps)
            .filter(|i| {
                let random = u32::try_from((i << 32) / steps).unwrap();
                run(
                    prog,
                    &Frame {
                        pkttype: 4,
                        ifindex: 3,
                        len,
                        random,
                    },
                ) != 0
            })
            .count();
        passed as f64 / steps as f64
    }

    /// Every octet has one chance in `interval` of making its frame the sample: a frame passes
    /// with probability len / interval, a frame at least `interval` long always, a non-data
    /// frame never.
    #[test]
    fn filter_passes_a_frame_with_probability_len_over_interval() {
        for interval in [600u64, 1514, 2000, 15_000, 18_500, 150_000, 1 << 33] {
            let prog = bpf_data_sample_on(Tap::Egress(3), interval);
            for len in [512u32, 1000, 1514, 9000, 65_535] {
                let want = (f64::from(len) / interval as f64).min(1.0);
                let got = passed_share(&prog, len);
                assert!(
                    (got - want).abs() <= 2.0 / 65_536.0 + want * 1e-4,
                    "interval {interval}, len {len}: {got} vs {want}"
                );
            }
            assert_eq!(passed_share(&prog, 66), 0.0, "{interval}");
        }
    }
}
