//! The emulated QCN congestion point of one switch (OVS has no QCN; DESIGN §5).
//!
//! A thread per switch (the work is microseconds per frame):
//! - when a frame is the sample of its port (its bytes use up the sampling interval) it reads
//!   that port's egress qdisc backlog with one rtnetlink request ([`crate::qdisc`]) — that is
//!   Q, fresh at the sample. Polling every port every millisecond instead cost one request per
//!   port per millisecond whether or not a sample was due: on Dragonfly(2,4,2) (36 switches,
//!   180 fabric ports) 180 000 requests/s. Every `queue_poll_period` it also refreshes the
//!   backlog gauge of every port (metrics, API);
//! - it receives transmitted frames from one `AF_PACKET` socket (ETH_P_ALL) per fabric port,
//!   bound to the port's interface ([`port_socket`]), drained every `batch_period`, and keeps
//!   those with `sll_pkttype == PACKET_OUTGOING`. Every such frame counts towards that port's
//!   [`CongestionPoint`] sampling interval; the sampled frame gets a CNM when Fb < 0 — if it is
//!   a culprit: a frame from a host (source MAC in the `02:00` plan) that is not itself a CNM —
//!   and, with `cp.min_sources` > 1, if the port's [`SourceCensus`] admits it (enough distinct
//!   hosts sent data through the port lately);
//! - the CNM (`Cnm::for_sampled_frame`, SA = switch MAC, CPID = switch MAC + port) goes to the
//!   switch task, which injects it with PACKET_OUT and charges source processing.
//!
//! Each packet socket carries a classic BPF filter ([`outgoing_on`], attached with socket2's
//! safe `attach_filter`) that passes only frames *transmitted* on its interface. History, since
//! every frame the CP looks at costs the switch's forwarding thread (on OVS's userspace datapath
//! the one thread that forwards every packet): unfiltered, every switch's socket received a
//! copy of every frame of the namespace (agent ~55 % of a core); filtered but unbound and
//! blocking, every frame event on any interface still visited all 36 sockets of
//! Dragonfly(2,4,2) and woke a reader — with P frozen at 5 % the emulated CP cut that fabric's
//! ADV+1 throughput from 87.4 to 37.3 Mb/s; batch draining gave 48.9 and binding 52.7 (single
//! runs, mininet/README.md). The thread still checks `sll_pkttype` and `sll_ifindex` (read
//! safely from `nix::sys::socket::LinkAddr`). Frames are seen when the driver transmits them
//! (after the qdisc), which is "transmitted frames" as the brief asks; sampling by dequeued
//! bytes equals sampling by enqueued bytes in the long run.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fabricflow_proto::cnm::{Cnm, Cpid};
use fabricflow_proto::ethernet::EthernetView;
use fabricflow_proto::MacAddr;
use nix::errno::Errno;
use nix::sys::socket::{
    recv, recvfrom, send, setsockopt, socket, sockopt, AddressFamily, LinkAddr, MsgFlags, SockFlag,
    SockProtocol, SockType,
};
use nix::sys::time::TimeVal;
use rand::Rng;
use serde::Serialize;
use tokio::sync::mpsc;

use crate::config::AgentConfig;
use crate::cp::{CongestionPoint, SourceCensus};
use crate::plan::host_group;
use crate::qdisc::{get_root_qdisc_request, parse_root_backlog, QueueStats};
use crate::switch_core::Culprit;
use crate::PortNo;

/// `PACKET_OUTGOING` (linux/if_packet.h).
const PACKET_OUTGOING: u8 = 4;

/// A fabric port with its local interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpPort {
    /// OpenFlow port.
    pub port: PortNo,
    /// Interface name.
    pub ifname: String,
    /// Interface index.
    pub ifindex: u32,
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
    /// Last backlog read, octets.
    pub backlog_bytes: u64,
    /// Packets the qdisc had dropped at the last gauge refresh (the emulated link's losses).
    pub qdisc_drops: u32,
    /// Samples taken.
    pub samples: u64,
    /// CNMs generated.
    pub cnms: u64,
    /// Congested samples without a CNM because fewer than `cp.min_sources` hosts sent data
    /// through the port within the window.
    pub samples_few_sources: u64,
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
    /// Outgoing frames seen on fabric ports.
    pub frames_seen: u64,
    /// Generated CNMs dropped because the switch task was busy.
    pub cnms_dropped_busy: u64,
}

/// A running CP thread.
#[derive(Debug)]
pub struct CpHandle {
    stop: Arc<AtomicBool>,
    status: Arc<Mutex<CpStatus>>,
}

impl CpHandle {
    /// Asks the thread to end (it notices within one poll period).
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

    /// The backlog of the root qdisc of `ifindex`, octets.
    pub fn backlog_bytes(&mut self, ifindex: u32) -> anyhow::Result<u64> {
        Ok(u64::from(self.stats(ifindex)?.backlog_bytes))
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

/// Starts the CP thread of switch `name` on `ports`.
pub fn spawn(
    name: &str,
    ports: Vec<CpPort>,
    switch_mac: MacAddr,
    cfg: &AgentConfig,
    tx: mpsc::Sender<GeneratedCnm>,
) -> anyhow::Result<CpHandle> {
    let mut qdisc = QdiscReader::open()?;
    let period = Duration::from_micros(cfg.runtime.emulated_cp.queue_poll_period_us);
    let batch = Duration::from_micros(cfg.runtime.emulated_cp.batch_period_us);
    let mut socks = Vec::with_capacity(ports.len());
    for p in &ports {
        socks.push(port_socket(p.ifindex)?);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let status = Arc::new(Mutex::new(CpStatus {
        ports: ports
            .iter()
            .map(|p| CpPortStatus {
                port: p.port,
                ifname: p.ifname.clone(),
                ..CpPortStatus::default()
            })
            .collect(),
        ..CpStatus::default()
    }));
    let mut rng = rand::thread_rng();
    let mut cps = Vec::with_capacity(ports.len());
    for _ in &ports {
        cps.push(CongestionPoint::new(cfg.cp.clone(), rng.gen())?);
    }
    let mut censuses = vec![SourceCensus::new(cfg.cp.source_window_us); ports.len()];
    let min_sources = cfg.cp.min_sources;
    let by_ifindex: HashMap<u32, usize> = ports
        .iter()
        .enumerate()
        .map(|(i, p)| (p.ifindex, i))
        .collect();
    let (stop2, status2) = (stop.clone(), status.clone());
    let thread_name = format!("cp-{name}");
    tracing::info!(switch = %name, ports = ?ports.iter().map(|p| (p.port, p.ifname.as_str())).collect::<Vec<_>>(), "emulated congestion point running");
    std::thread::Builder::new()
        .name(thread_name)
        .spawn(move || {
            let mut rng = rand::thread_rng();
            let mut q = vec![0u64; ports.len()];
            let mut drops = vec![0u32; ports.len()];
            let mut next_poll = Instant::now();
            let mut buf = vec![0u8; 2048];
            let mut cursor = 0usize;
            let start = Instant::now();
            while !stop2.load(Ordering::Relaxed) {
                if Instant::now() >= next_poll {
                    next_poll = Instant::now() + period;
                    let mut errs = 0;
                    for (i, p) in ports.iter().enumerate() {
                        match qdisc.stats(p.ifindex) {
                            Ok(st) => {
                                if let Some(slot) = q.get_mut(i) {
                                    *slot = u64::from(st.backlog_bytes);
                                }
                                if let Some(slot) = drops.get_mut(i) {
                                    *slot = st.drops;
                                }
                            }
                            Err(_) => errs += 1,
                        }
                    }
                    if let Ok(mut s) = status2.lock() {
                        s.netlink_errors += errs;
                        for ((st, &b), &d) in s.ports.iter_mut().zip(&q).zip(&drops) {
                            st.backlog_bytes = b;
                            st.qdisc_drops = d;
                        }
                    }
                }
                // One drain of every port's socket per batch period.
                let Some(pkt) = socks.get(cursor) else {
                    cursor = 0;
                    std::thread::sleep(batch);
                    continue;
                };
                let (n, addr) = match recvfrom::<LinkAddr>(pkt.as_raw_fd(), &mut buf) {
                    Ok(r) => r,
                    Err(Errno::EINTR) => continue,
                    Err(_) => {
                        // EAGAIN: this socket is drained, on to the next.
                        cursor += 1;
                        continue;
                    }
                };
                let Some(addr) = addr else { continue };
                if addr.pkttype() != PACKET_OUTGOING {
                    continue;
                }
                let Some(&i) = u32::try_from(addr.ifindex())
                    .ok()
                    .and_then(|x| by_ifindex.get(&x))
                else {
                    continue;
                };
                let (Some(cp), Some(p), Some(&qb)) = (cps.get_mut(i), ports.get(i), q.get(i))
                else {
                    continue;
                };
                let frame = buf.get(..n).unwrap_or_default();
                // Only with the gate on: the census costs a clock read and a look-up per frame.
                let now_us = if min_sources > 1 {
                    let now = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
                    if let (Some(c), Some(src)) = (censuses.get_mut(i), host_source(frame)) {
                        c.observe(src, n as u64, now);
                    }
                    now
                } else {
                    0
                };
                // Only the sample uses Q: read it then, for this port only.
                let qb = if n as u64 >= cp.until_sample_bytes() {
                    match qdisc.backlog_bytes(p.ifindex) {
                        Ok(b) => {
                            if let Some(slot) = q.get_mut(i) {
                                *slot = b;
                            }
                            b
                        }
                        Err(_) => {
                            if let Ok(mut s) = status2.lock() {
                                s.netlink_errors += 1;
                            }
                            qb
                        }
                    }
                } else {
                    qb
                };
                let Some(fb) = cp.on_enqueue(n as u64, qb, rng.gen()) else {
                    if let Ok(mut s) = status2.lock() {
                        s.frames_seen += 1;
                    }
                    continue;
                };
                // `admitted`: congested, and the census (if on) lets it through.
                let (admitted, sources) = if fb.congested() {
                    censuses
                        .get_mut(i)
                        .map_or((true, 0), |c| c.admits(min_sources, now_us))
                } else {
                    (false, 0)
                };
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
                let sent = cnm.map(|c| tx.try_send(c).is_ok());
                if let Ok(mut s) = status2.lock() {
                    s.frames_seen += 1;
                    if sent == Some(false) {
                        s.cnms_dropped_busy += 1;
                    }
                    if let Some(st) = s.ports.get_mut(i) {
                        st.samples += 1;
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
                    }
                }
            }
        })?;
    Ok(CpHandle { stop, status })
}

/// A non-blocking packet socket receiving the frames transmitted on interface `ifindex`.
///
/// Bound to the interface, the socket sits on that device's tap list: the kernel hands it only
/// that device's frames. An unbound ETH_P_ALL socket sits on the namespace-wide list instead and
/// every frame sent or received on any interface visits it (and runs its filter) — with one
/// socket per switch, 36 visits per frame event on Dragonfly(2,4,2), all in the forwarding
/// thread's context. Non-blocking and drained in batches (`batch_period_us`): no reader sleeps
/// in `recv`, so a frame costs its sender a clone and a queue, not a wake-up.
fn port_socket(ifindex: u32) -> std::io::Result<OwnedFd> {
    let fd = socket(
        AddressFamily::Packet,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        SockProtocol::EthAll,
    )?;
    bind_to_interface(&fd, ifindex)?;
    // Room for a batch period of frames (the kernel caps it at rmem_max).
    let _ = setsockopt(&fd, sockopt::RcvBuf, &(1 << 20));
    let sock = socket2::Socket::from(fd);
    sock.attach_filter(&outgoing_on(&[ifindex])?)?;
    Ok(OwnedFd::from(sock))
}

/// `bind(2)` of packet socket `fd` to interface `ifindex`, all protocols. The one unsafe call
/// of the agent: neither nix nor socket2 builds a `sockaddr_ll` safely.
#[allow(unsafe_code)]
fn bind_to_interface(fd: &OwnedFd, ifindex: u32) -> std::io::Result<()> {
    use nix::libc;
    let invalid = |what| std::io::Error::new(std::io::ErrorKind::InvalidInput, what);
    let sll = libc::sockaddr_ll {
        sll_family: u16::try_from(libc::AF_PACKET).map_err(|_| invalid("AF_PACKET"))?,
        sll_protocol: u16::try_from(libc::ETH_P_ALL)
            .map_err(|_| invalid("ETH_P_ALL"))?
            .to_be(),
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
const BPF_JEQ_K: u16 = 0x15;
const BPF_RET_K: u16 = 0x06;
const SKF_AD_PKTTYPE: u32 = 0xffff_f000 + 4;
const SKF_AD_IFINDEX: u32 = 0xffff_f000 + 8;

/// A BPF program passing whole frames whose `pkttype` is `PACKET_OUTGOING` and whose interface
/// is one of `ifindexes`, dropping everything else in the kernel (before any copy).
pub fn outgoing_on(ifindexes: &[u32]) -> std::io::Result<Vec<socket2::SockFilter>> {
    let prog = bpf_outgoing_on(ifindexes).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "more than 250 interfaces for one BPF filter",
        )
    })?;
    Ok(prog
        .iter()
        .map(|&(code, jt, jf, k)| socket2::SockFilter::new(code, jt, jf, k))
        .collect())
}

/// The program as (code, jt, jf, k) tuples; `None` if the jumps would not fit in a u8.
fn bpf_outgoing_on(ifindexes: &[u32]) -> Option<Vec<(u16, u8, u8, u32)>> {
    let n = u8::try_from(ifindexes.len()).ok().filter(|&n| n <= 250)?;
    let mut p = vec![
        (BPF_LD_W_ABS, 0, 0, SKF_AD_PKTTYPE),
        // Not outgoing: skip the ifindex load and the n comparisons, to "drop".
        (BPF_JEQ_K, 0, n + 1, u32::from(PACKET_OUTGOING)),
        (BPF_LD_W_ABS, 0, 0, SKF_AD_IFINDEX),
    ];
    for (i, &ifx) in (0u8..).zip(ifindexes) {
        // Match: jump over the remaining comparisons and "drop" to "accept".
        p.push((BPF_JEQ_K, n - i, 0, ifx));
    }
    p.push((BPF_RET_K, 0, 0, 0)); // drop
    p.push((BPF_RET_K, 0, 0, u32::MAX)); // accept the whole frame
    Some(p)
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

    /// Runs the filter program the way the kernel would for a frame with these ancillary values.
    fn run(prog: &[(u16, u8, u8, u32)], pkttype: u32, ifindex: u32) -> u32 {
        let (mut pc, mut a) = (0usize, 0u32);
        loop {
            let (code, jt, jf, k) = prog[pc];
            match code {
                BPF_LD_W_ABS => {
                    a = match k {
                        SKF_AD_PKTTYPE => pkttype,
                        SKF_AD_IFINDEX => ifindex,
                        _ => panic!("unexpected load {k:#x}"),
                    };
                    pc += 1;
                }
                BPF_JEQ_K => pc += 1 + usize::from(if a == k { jt } else { jf }),
                BPF_RET_K => return k,
                _ => panic!("unexpected opcode {code:#x}"),
            }
        }
    }

    #[test]
    fn filter_passes_only_outgoing_frames_of_the_given_interfaces() {
        for ifs in [
            vec![],
            vec![7],
            vec![3, 9, 12, 40],
            (1..=250).collect::<Vec<u32>>(),
        ] {
            let prog = bpf_outgoing_on(&ifs).unwrap();
            for ifx in 0..=260 {
                for pkttype in [0, 1, 2, 3, 4, 5] {
                    let pass = run(&prog, pkttype, ifx) != 0;
                    let want = pkttype == u32::from(PACKET_OUTGOING) && ifs.contains(&ifx);
                    assert_eq!(pass, want, "ifs {ifs:?} ifindex {ifx} pkttype {pkttype}");
                }
            }
        }
        assert!(bpf_outgoing_on(&(0..251).collect::<Vec<u32>>()).is_none());
        assert_eq!(outgoing_on(&[1, 2]).unwrap().len(), 7);
    }
}
