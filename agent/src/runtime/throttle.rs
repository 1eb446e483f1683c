//! `fabricflow-agent throttle`: the I/O shell of a host's IBA CC reaction point
//! ([`crate::throttle`]), run inside the host (its network namespace on Mininet).
//!
//! - receives CNMs from one `AF_PACKET` socket bound to the host's interface and EtherType
//!   0x22E7 (the kernel hands it nothing else), waited on with `poll` until the quiet timer's
//!   next deadline;
//! - applies B/(1+IRD) to the host's egress by changing the rate (and ceil) of the interface's
//!   HTB leaf class — Mininet's TCLink shapes every host link with `htb` root `5:0`, leaf class
//!   `5:1` at B with a 15 k bucket: the throttler changes only that class's rate and keeps its
//!   bucket in octets, and writes B back when IRD returns to 0 and when it exits. The message
//!   is an `RTM_NEWTCLASS` built with `netlink-packet-route`; that crate has no typed HTB
//!   options, so `TCA_HTB_PARMS` is [`HtbRate::tc_htb_opt`] in a raw attribute;
//! - writes its state as JSON to `--status` (after every rate change and at most every 200 ms
//!   while CNMs come), and prints the final state on SIGTERM/SIGINT.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use fabricflow_proto::MacAddr;
use netlink_packet_core::{
    DefaultNla, NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_REQUEST,
};
use netlink_packet_route::tc::{TcAttribute, TcHandle, TcMessage, TcOption};
use netlink_packet_route::RouteNetlinkMessage;
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{recv, send, socket, AddressFamily, MsgFlags, SockFlag, SockType};
use serde::Serialize;

use super::emulated_cp::bind_to_interface;
use super::now_ns;
use crate::throttle::{
    accept_cnm, HtbRate, IbaCc, IbaCcConfig, IbaCcCounters, TCA_HTB_CEIL64, TCA_HTB_PARMS,
    TCA_HTB_RATE64,
};
use fabricflow_proto::ethernet::ethertype;

/// What `fabricflow-agent throttle` runs with.
#[derive(Debug, Clone)]
pub struct ThrottleArgs {
    /// The host's interface.
    pub iface: String,
    /// B, bit/s: the rate the harness shaped the host link to.
    pub line_bps: u64,
    /// IBA CC's constants.
    pub cc: IbaCcConfig,
    /// The HTB class to rate (major, minor) and its parent.
    pub class: (u16, u16),
    /// Its parent.
    pub parent: (u16, u16),
    /// The class's bucket, octets (Mininet: 15k).
    pub burst_bytes: u32,
    /// Where to write the state.
    pub status: Option<PathBuf>,
}

/// The throttler's state, as written to `--status` and printed at the end.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ThrottleStatus {
    /// Interface.
    pub iface: String,
    /// B, bit/s.
    pub line_bps: u64,
    /// IRD now.
    pub ird: u32,
    /// Highest IRD.
    pub max_ird: u32,
    /// The class rate last written, bit/s.
    pub rate_bps: u64,
    /// CNMs charged, raises, lowers.
    pub counters: IbaCcCounters,
    /// Frames refused: malformed.
    pub malformed: u64,
    /// Frames refused: CNMs about another host.
    pub not_for_this_host: u64,
    /// Rate writes the kernel accepted.
    pub rate_writes: u64,
    /// Rate writes refused (the last error in `last_error`).
    pub rate_write_errors: u64,
    /// The last rate-write error.
    pub last_error: Option<String>,
}

/// Runs until `stop`; returns the final state (the class is back at B).
pub fn run(args: &ThrottleArgs, stop: &AtomicBool) -> anyhow::Result<ThrottleStatus> {
    let ifindex = nix::net::if_::if_nametoindex(args.iface.as_str())
        .with_context(|| format!("interface {}", args.iface))?;
    let own = interface_mac(&args.iface)?;
    let sock = cnm_socket(ifindex).context("CNM packet socket")?;
    let mut tc = ClassWriter::open(ifindex, args).context("rtnetlink socket")?;
    let mut cc = IbaCc::new(args.cc.clone(), args.line_bps, now_ns())?;
    let mut st = ThrottleStatus {
        iface: args.iface.clone(),
        line_bps: args.line_bps,
        rate_bps: args.line_bps,
        ..ThrottleStatus::default()
    };
    // Start from B whatever an earlier run left.
    apply(&mut tc, &mut st, args.line_bps);
    write_status(args.status.as_deref(), &st);
    tracing::info!(iface = %args.iface, %own, line_bps = args.line_bps, quiet_ns = cc.quiet_ns(), "throttler running");
    let mut buf = vec![0u8; 2048];
    let mut last_status = now_ns();
    let mut dirty = false;
    while !stop.load(Ordering::Relaxed) {
        let now = now_ns();
        let wait_ms = cc
            .next_deadline_ns()
            .map_or(200, |d| d.saturating_sub(now).div_ceil(1_000_000))
            .clamp(1, 200);
        let mut fds = [PollFd::new(sock.as_fd_ref(), PollFlags::POLLIN)];
        match poll(
            &mut fds,
            PollTimeout::try_from(wait_ms).unwrap_or(PollTimeout::MAX),
        ) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e).context("poll"),
        }
        let mut changed = false;
        loop {
            match recv(sock.as_raw_fd(), &mut buf, MsgFlags::MSG_DONTWAIT) {
                Ok(n) => {
                    let frame = buf.get(..n).unwrap_or_default();
                    match accept_cnm(frame, own) {
                        Ok(_) => {
                            changed |= cc.on_cnm(now_ns());
                            dirty = true;
                        }
                        Err(e) => {
                            match e {
                                crate::throttle::CnmRejected::Malformed(_) => st.malformed += 1,
                                crate::throttle::CnmRejected::NotForThisHost { .. } => {
                                    st.not_for_this_host += 1;
                                }
                            }
                            tracing::debug!(reason = e.label(), error = %e, "frame ignored");
                        }
                    }
                }
                Err(Errno::EAGAIN | Errno::EINTR) => break,
                Err(e) => return Err(e).context("recv"),
            }
        }
        changed |= cc.on_timer(now_ns());
        st.ird = cc.ird();
        st.max_ird = cc.max_ird_seen();
        st.counters = cc.counters();
        if changed {
            apply(&mut tc, &mut st, cc.rate_bps());
            tracing::debug!(ird = cc.ird(), rate_bps = cc.rate_bps(), "rate changed");
        }
        let now = now_ns();
        if changed || (dirty && now.saturating_sub(last_status) >= 200_000_000) {
            write_status(args.status.as_deref(), &st);
            last_status = now;
            dirty = false;
        }
    }
    apply(&mut tc, &mut st, args.line_bps);
    st.ird = cc.ird();
    write_status(args.status.as_deref(), &st);
    Ok(st)
}

fn apply(tc: &mut ClassWriter, st: &mut ThrottleStatus, rate_bps: u64) {
    match tc.set_rate(rate_bps) {
        Ok(()) => {
            st.rate_writes += 1;
            st.rate_bps = rate_bps;
        }
        Err(e) => {
            st.rate_write_errors += 1;
            tracing::warn!(error = %format!("{e:#}"), rate_bps, "cannot set the class rate");
            st.last_error = Some(format!("{e:#}"));
        }
    }
}

/// Writes `st` to `path` atomically (temporary file, rename); errors are logged only.
fn write_status(path: Option<&Path>, st: &ThrottleStatus) {
    let Some(path) = path else { return };
    let tmp = path.with_extension("tmp");
    let r = serde_json::to_vec(st)
        .map_err(std::io::Error::other)
        .and_then(|b| std::fs::write(&tmp, b))
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = r {
        tracing::warn!(error = %e, path = %path.display(), "cannot write the status");
    }
}

/// The MAC of `iface` (getifaddrs answers for the calling namespace; /sys may show another).
fn interface_mac(iface: &str) -> anyhow::Result<MacAddr> {
    nix::ifaddrs::getifaddrs()?
        .filter(|a| a.interface_name == iface)
        .find_map(|a| {
            a.address
                .and_then(|s| s.as_link_addr().and_then(|l| l.addr()))
        })
        .map(MacAddr)
        .with_context(|| format!("no link-layer address on {iface}"))
}

/// A packet socket on `ifindex` that receives CNM frames only.
struct CnmSocket(OwnedFd);

impl CnmSocket {
    fn as_fd_ref(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.0.as_fd()
    }
}

impl AsRawFd for CnmSocket {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0.as_raw_fd()
    }
}

fn cnm_socket(ifindex: u32) -> std::io::Result<CnmSocket> {
    // Protocol 0 until bound: nothing is queued before the bind selects 0x22E7.
    let fd = socket(
        AddressFamily::Packet,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    bind_to_interface(&fd, ifindex, ethertype::CNM)?;
    Ok(CnmSocket(fd))
}

/// Writes one HTB class's rate over rtnetlink and waits for the kernel's acknowledgement.
struct ClassWriter {
    fd: OwnedFd,
    ifindex: u32,
    class: (u16, u16),
    parent: (u16, u16),
    burst_bytes: u32,
    seq: u32,
    buf: Vec<u8>,
}

impl ClassWriter {
    fn open(ifindex: u32, args: &ThrottleArgs) -> nix::Result<Self> {
        let fd = socket(
            AddressFamily::Netlink,
            SockType::Raw,
            SockFlag::SOCK_CLOEXEC,
            nix::sys::socket::SockProtocol::NetlinkRoute,
        )?;
        nix::sys::socket::setsockopt(
            &fd,
            nix::sys::socket::sockopt::ReceiveTimeout,
            &nix::sys::time::TimeVal::new(1, 0),
        )?;
        Ok(ClassWriter {
            fd,
            ifindex,
            class: args.class,
            parent: args.parent,
            burst_bytes: args.burst_bytes,
            seq: 0,
            buf: vec![0; 8192],
        })
    }

    fn set_rate(&mut self, rate_bps: u64) -> anyhow::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        let req = class_change_request(
            self.ifindex,
            self.class,
            self.parent,
            HtbRate {
                rate_bps,
                burst_bytes: self.burst_bytes,
            },
            self.seq,
        )?;
        send(self.fd.as_raw_fd(), &req, MsgFlags::empty()).context("netlink send")?;
        loop {
            let n = recv(self.fd.as_raw_fd(), &mut self.buf, MsgFlags::empty())
                .context("netlink ack")?;
            let reply = self.buf.get(..n).unwrap_or_default();
            if let Some(r) = parse_ack(reply, self.seq)? {
                return r;
            }
        }
    }
}

/// `RTM_NEWTCLASS` (flags REQUEST | ACK, no CREATE: the class must exist) setting class
/// `class` under `parent` on `ifindex` to `rate` — what `tc class change dev IF parent P
/// classid C htb rate R ceil R burst B` sends.
pub fn class_change_request(
    ifindex: u32,
    class: (u16, u16),
    parent: (u16, u16),
    rate: HtbRate,
    seq: u32,
) -> anyhow::Result<Vec<u8>> {
    let mut tcm = TcMessage::with_index(i32::try_from(ifindex).context("ifindex")?);
    tcm.header.handle = TcHandle {
        major: class.0,
        minor: class.1,
    };
    tcm.header.parent = TcHandle {
        major: parent.0,
        minor: parent.1,
    };
    let mut opts = vec![TcOption::Other(DefaultNla::new(
        TCA_HTB_PARMS,
        rate.tc_htb_opt().to_vec(),
    ))];
    if let Some(r64) = rate.rate64() {
        for kind in [TCA_HTB_RATE64, TCA_HTB_CEIL64] {
            opts.push(TcOption::Other(DefaultNla::new(
                kind,
                r64.to_ne_bytes().to_vec(),
            )));
        }
    }
    tcm.attributes.push(TcAttribute::Kind("htb".to_owned()));
    tcm.attributes.push(TcAttribute::Options(opts));
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_ACK;
    header.sequence_number = seq;
    let mut msg = NetlinkMessage::new(
        header,
        NetlinkPayload::from(RouteNetlinkMessage::NewTrafficClass(tcm)),
    );
    msg.finalize();
    let mut out = vec![0u8; msg.buffer_len()];
    msg.serialize(&mut out);
    Ok(out)
}

/// The acknowledgement of request `seq` in `reply`: `Some(Ok)` for an ACK, `Some(Err)` for a
/// netlink error, `None` if `reply` does not answer `seq`.
pub fn parse_ack(reply: &[u8], seq: u32) -> anyhow::Result<Option<anyhow::Result<()>>> {
    let msg = NetlinkMessage::<RouteNetlinkMessage>::deserialize(reply)
        .map_err(|e| anyhow::anyhow!("netlink reply: {e}"))?;
    if msg.header.sequence_number != seq {
        return Ok(None);
    }
    Ok(match msg.payload {
        NetlinkPayload::Error(e) if e.code.is_none() => Some(Ok(())),
        NetlinkPayload::Error(e) => {
            Some(Err(anyhow::Error::new(e.to_io()).context("RTM_NEWTCLASS")))
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn the_class_change_request_carries_the_htb_parameters() {
        let rate = HtbRate {
            rate_bps: 5_000_000,
            burst_bytes: 15_360,
        };
        let req = class_change_request(7, (5, 1), (5, 0), rate, 42).unwrap();
        let msg = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&req).unwrap();
        assert_eq!(msg.header.flags, NLM_F_REQUEST | NLM_F_ACK);
        assert_eq!(msg.header.sequence_number, 42);
        assert_eq!(msg.header.length as usize, req.len());
        let NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewTrafficClass(tcm)) = msg.payload
        else {
            panic!("not RTM_NEWTCLASS: {:?}", msg.payload);
        };
        assert_eq!(tcm.header.index, 7);
        assert_eq!(tcm.header.handle, TcHandle { major: 5, minor: 1 });
        assert_eq!(tcm.header.parent, TcHandle { major: 5, minor: 0 });
        assert!(tcm.attributes.contains(&TcAttribute::Kind("htb".into())));
        // The options: TCA_HTB_PARMS = tc_htb_opt, found by its bytes in the request.
        let opt = rate.tc_htb_opt();
        assert!(req.windows(opt.len()).any(|w| w == opt));
        // 5 Mb/s fits 32 bits: no 64-bit rate attributes.
        assert!(rate.rate64().is_none());
    }

    #[test]
    fn acks_and_errors_are_told_apart() {
        // NLMSG_ERROR with error 0 (ACK) and -EINVAL, for sequence 9.
        let ack = |code: i32, seq: u32| {
            let mut v = Vec::new();
            v.extend_from_slice(&36u32.to_ne_bytes());
            v.extend_from_slice(&2u16.to_ne_bytes());
            v.extend_from_slice(&0u16.to_ne_bytes());
            v.extend_from_slice(&seq.to_ne_bytes());
            v.extend_from_slice(&0u32.to_ne_bytes());
            v.extend_from_slice(&code.to_ne_bytes());
            v.extend_from_slice(&[0u8; 16]); // the request's header
            v
        };
        assert!(matches!(parse_ack(&ack(0, 9), 9).unwrap(), Some(Ok(()))));
        assert!(matches!(parse_ack(&ack(-22, 9), 9).unwrap(), Some(Err(_))));
        assert!(parse_ack(&ack(0, 8), 9).unwrap().is_none());
        assert!(parse_ack(&[1, 2, 3], 9).is_err());
    }
}
