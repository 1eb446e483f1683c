//! One switch: connect (unix or tcp), drive the session, reconnect with back-off.
//!
//! A missing management socket (bridge not created yet, or deleted) is a connection failure
//! like any other: the task retries with exponential back-off (`reconnect_min_us` doubling up to
//! `reconnect_max_us`) and keeps P and the write history across connections.

use std::sync::Arc;
use std::time::Duration;

use fabricflow_proto::openflow::channel::{ChannelConfig, CloseReason};
use fabricflow_proto::openflow::port::OFPP_CONTROLLER;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use super::cnm_io::{CnmInterfaces, InterfaceFrame};
use super::emulated_cp::{self, CpHandle, GeneratedCnm};
use super::port_stats::{self, StallHandle, WatchedPort};
use super::{now_ns, publish, Registry};
use crate::config::{AgentConfig, CnmOut, SwitchConfig};
use crate::latency::LatencyHistogram;
use crate::session::{Session, SessionConfig};
use crate::PortNo;

/// The session settings of `cfg.runtime` and `cfg.link` for switch `sw`.
pub fn session_config(cfg: &AgentConfig, sw: &SwitchConfig) -> SessionConfig {
    let r = &cfg.runtime;
    SessionConfig {
        channel: ChannelConfig::default(),
        controller_id: r.controller_id,
        miss_send_len: r.miss_send_len,
        request_role_equal: r.request_role_equal,
        port_stats_period_ns: r.port_stats_period_us.saturating_mul(1_000),
        byte_counter: r.byte_counter,
        plan_refresh_period_ns: r.plan_refresh_period_us.saturating_mul(1_000),
        tick_period_ns: r.tick_period_us.saturating_mul(1_000),
        cnm_inject_in_port: r.emulated_cp.inject_in_port.unwrap_or(OFPP_CONTROLLER),
        plan: r.plan.clone(),
        link: cfg.link.clone(),
        stated_links: sw.ports.clone(),
    }
}

/// A connection target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `unix:PATH`.
    Unix(String),
    /// `tcp:HOST:PORT`.
    Tcp(String),
}

impl Target {
    /// Parses `unix:PATH` or `tcp:HOST:PORT`.
    pub fn parse(s: &str) -> anyhow::Result<Target> {
        if let Some(p) = s.strip_prefix("unix:") {
            Ok(Target::Unix(p.to_owned()))
        } else if let Some(a) = s.strip_prefix("tcp:") {
            Ok(Target::Tcp(a.to_owned()))
        } else {
            anyhow::bail!("switch target {s:?}: expected unix:PATH or tcp:HOST:PORT")
        }
    }

    /// One connection to the switch, whichever the transport.
    async fn connect(&self) -> std::io::Result<Box<dyn Stream>> {
        Ok(match self {
            Target::Unix(p) => Box::new(tokio::net::UnixStream::connect(p).await?),
            Target::Tcp(a) => {
                let s = tokio::net::TcpStream::connect(a).await?;
                // OpenFlow messages are small and latency-bound (a CNM's GROUP_MOD); a
                // socket that refuses the option still works.
                let _ = s.set_nodelay(true);
                Box::new(s)
            }
        })
    }
}

/// A byte stream to a switch.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// Serves one switch until `stop` turns true.
pub async fn run_switch(
    sw: SwitchConfig,
    cfg: Arc<AgentConfig>,
    reg: Registry,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let target_text = sw.target();
    let target = Target::parse(&target_text)?;
    let name = sw.name.clone();
    let mut session = Session::new(session_config(&cfg, &sw), &cfg)?;
    publish(&reg, &name, |v| v.target.clone_from(&target_text));
    let min = Duration::from_micros(cfg.runtime.reconnect_min_us);
    let max = Duration::from_micros(cfg.runtime.reconnect_max_us);
    let mut backoff = min;
    let (cnm_tx, cnm_rx) = mpsc::channel::<GeneratedCnm>(1024);
    let (iface_tx, iface_rx) = mpsc::channel::<InterfaceFrame>(1024);
    let mut io = SwitchIo {
        cnm_tx,
        cnm_rx,
        iface_tx,
        iface_rx,
        cp: None,
        cnm_io: None,
        stall: None,
        reaction: LatencyHistogram::default(),
    };
    loop {
        if *stop.borrow() {
            break;
        }
        let result = match target.connect().await {
            Ok(s) => {
                tracing::info!(switch = %name, target = %target_text, "connected");
                backoff = min;
                serve(s, &name, &cfg, &mut session, &reg, &mut stop, &mut io).await
            }
            Err(e) => Err(anyhow::Error::from(e)),
        };
        session.on_disconnected();
        publish(&reg, &name, |v| {
            v.session = session.status();
            v.cnm_to_group_mod = io.reaction;
        });
        if let Err(e) = result {
            tracing::warn!(switch = %name, error = %e, retry_in = ?backoff, "switch connection failed");
        } else if !*stop.borrow() {
            tracing::warn!(switch = %name, retry_in = ?backoff, "switch closed the connection");
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stop.changed() => {}
        }
        backoff = backoff.saturating_mul(2).min(max);
    }
    if let Some(h) = io.cp.take() {
        h.stop();
    }
    if let Some(h) = io.stall.take() {
        h.stop();
    }
    Ok(())
}

/// What a switch task keeps across connections besides its session: the emulated CP and the
/// channel its CNMs come by, the CNM sockets and the channel of what they read, the stall
/// counters, and the CNM → GROUP_MOD latencies.
struct SwitchIo {
    cnm_tx: mpsc::Sender<GeneratedCnm>,
    cnm_rx: mpsc::Receiver<GeneratedCnm>,
    iface_tx: mpsc::Sender<InterfaceFrame>,
    iface_rx: mpsc::Receiver<InterfaceFrame>,
    cp: Option<CpHandle>,
    cnm_io: Option<CnmInterfaces>,
    stall: Option<StallHandle>,
    reaction: LatencyHistogram,
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    name: &str,
    cfg: &AgentConfig,
    session: &mut Session,
    reg: &Registry,
    stop: &mut watch::Receiver<bool>,
    io: &mut SwitchIo,
) -> anyhow::Result<()> {
    let (mut rd, mut wr) = tokio::io::split(stream);
    let mut buf = vec![0u8; 1 << 16];
    let mut out = bytes::BytesMut::with_capacity(1 << 16);
    session.on_connected(now_ns());
    let mut last_publish = 0u64;
    loop {
        // Send first: the reaction latency is CNM-in to GROUP_MOD-out.
        out.clear();
        while let Some(m) = session.poll_transmit() {
            m.encode(&mut out);
        }
        if !out.is_empty() {
            wr.write_all(&out).await?;
            let written = now_ns();
            for cnm_ns in session.take_cnm_reactions() {
                let ns = written.saturating_sub(cnm_ns);
                io.reaction.observe_ns(ns);
                tracing::trace!(cnm_ns, written_ns = written, ns, "CNM → GROUP_MOD written");
            }
        }
        for (port, frame) in session.take_port_frames() {
            if !io.cnm_io.as_mut().is_some_and(|c| c.send(port, &frame)) {
                session.on_cnm_send_failed();
            }
        }
        // What the channel queued before closing (HELLO_FAILED) went out above.
        if let Some(reason) = session.close_reason() {
            // Eof after everything was read is the switch's orderly goodbye.
            return match reason {
                CloseReason::PeerClosed => Ok(()),
                r => Err(anyhow::anyhow!("{r}")),
            };
        }
        if session.take_plan_changed() {
            reconfigure_cp(name, cfg, session, reg, &io.cnm_tx, &mut io.cp);
            reconfigure_cnm_io(name, cfg, session, &io.iface_tx, &mut io.cnm_io);
            reconfigure_stall(name, cfg, session, &mut io.stall);
        }
        let now = now_ns();
        if now.saturating_sub(last_publish) >= 10_000_000 {
            last_publish = now;
            let st = session.status();
            let cps = io.cp.as_ref().map(CpHandle::status);
            let stalls = io
                .stall
                .as_ref()
                .map(StallHandle::status)
                .unwrap_or_default();
            let reaction = io.reaction;
            publish(reg, name, |v| {
                v.session = st;
                v.emulated_cp = cps;
                v.port_stall = stalls;
                v.cnm_to_group_mod = reaction;
            });
        }
        let deadline = session
            .next_deadline_ns()
            .map_or(now.saturating_add(1_000_000_000), |d| {
                d.min(now.saturating_add(1_000_000_000))
            });
        tokio::select! {
            n = rd.read(&mut buf) => {
                match n? {
                    0 => session.handle_eof(now_ns()),
                    n => session.handle_bytes(buf.get(..n).unwrap_or_default(), now_ns()),
                }
            }
            _ = tokio::time::sleep_until(super::instant_of(deadline).into()) => {
                session.on_timer(now_ns());
            }
            Some(c) = io.cnm_rx.recv() => {
                let now = now_ns();
                session.inject_cnm(c.frame, c.port, c.culprit, c.qntz_fb, now);
                // The sampling thread hands over a batch's CNMs together: their PACKET_OUTs
                // leave in one write, which ovs-vswitchd reads in one pass of its main loop.
                while let Ok(c) = io.cnm_rx.try_recv() {
                    session.inject_cnm(c.frame, c.port, c.culprit, c.qntz_fb, now);
                }
            }
            Some(f) = io.iface_rx.recv() => {
                let now = now_ns();
                session.on_interface_frame(f.port, &f.frame, now);
                while let Ok(f) = io.iface_rx.try_recv() {
                    session.on_interface_frame(f.port, &f.frame, now);
                }
            }
            _ = stop.changed() => return Ok(()),
        }
    }
}

/// (Re)starts the port-stall counters on every port of the switch that is a local Linux
/// interface. Roles are the controller's names the plan can tell: `fabric` for the plan's
/// fabric ports, `host` for the others (the finer local/global/up/down are in the controller's
/// fabric model, which the agent does not have; `fabricflow-agent port-stats` takes them from
/// the controller's export).
fn reconfigure_stall(
    name: &str,
    cfg: &AgentConfig,
    session: &Session,
    stall: &mut Option<StallHandle>,
) {
    let c = &cfg.runtime.port_stall;
    let Some(plan) = session.plan().filter(|p| p.is_installed()) else {
        return;
    };
    if !c.enabled {
        return;
    }
    let ports: Vec<WatchedPort> = session
        .ports()
        .iter()
        // Physical ports only: OFPP_LOCAL and the reserved numbers are above OFPP_MAX.
        .filter(|(&p, _)| p <= fabricflow_proto::openflow::port::OFPP_MAX)
        .filter(|(_, info)| nix::net::if_::if_nametoindex(info.name.as_str()).is_ok())
        .map(|(&p, info)| WatchedPort {
            switch: name.to_owned(),
            port: p,
            role: if plan.is_fabric_port(p) {
                "fabric"
            } else {
                "host"
            }
            .to_owned(),
            interface: info.name.clone(),
            rate_mbps: None,
        })
        .collect();
    if stall.as_ref().is_some_and(|h| {
        let now: Vec<_> = h.status().into_iter().map(|v| v.port).collect();
        now == ports
    }) {
        return;
    }
    if let Some(h) = stall.take() {
        h.stop();
    }
    if ports.is_empty() {
        return;
    }
    let period = Duration::from_micros(c.poll_period_us);
    match port_stats::spawn(ports, period, Duration::from_micros(c.interval_us)) {
        Ok(h) => *stall = Some(h),
        Err(e) => tracing::warn!(switch = %name, error = %e, "port-stall counters off"),
    }
}

/// (Re)opens the CNM sockets ([`super::cnm_io`]): for sending on every fabric port that is a
/// local Linux interface (with `runtime.cnm_out = "interface"`), for reading on every port
/// whose CNMs the plan drops at classify.
fn reconfigure_cnm_io(
    name: &str,
    cfg: &AgentConfig,
    session: &mut Session,
    tx: &mpsc::Sender<InterfaceFrame>,
    cnm_io: &mut Option<CnmInterfaces>,
) {
    *cnm_io = None;
    session.set_cnm_interfaces(std::collections::BTreeSet::new());
    let Some(plan) = session.plan().filter(|p| p.is_installed()) else {
        return;
    };
    let ifindex = |p: &PortNo| {
        session
            .ports()
            .get(p)
            .and_then(|info| nix::net::if_::if_nametoindex(info.name.as_str()).ok())
            .map(|i| (*p, i))
    };
    let send: Vec<(PortNo, u32)> = if cfg.runtime.cnm_out == CnmOut::Interface {
        plan.fabric_ports
            .union(&plan.cnm_interface_ports)
            .filter_map(ifindex)
            .collect()
    } else {
        Vec::new()
    };
    let recv: Vec<(PortNo, u32)> = plan
        .cnm_interface_ports
        .iter()
        .filter_map(ifindex)
        .collect();
    if recv.len() < plan.cnm_interface_ports.len() {
        let unread: Vec<_> = plan
            .cnm_interface_ports
            .iter()
            .filter(|p| !recv.iter().any(|(r, _)| r == *p))
            .collect();
        tracing::warn!(switch = %name, ?unread, "the plan drops CNMs on ports that are no local interface: they are lost (controller cnm_to_agent = \"packet-in\" delivers them)");
    }
    if send.is_empty() && recv.is_empty() {
        return;
    }
    match CnmInterfaces::open(&send, &recv, tx) {
        Ok(io) => {
            tracing::info!(switch = %name, send = ?io.send_ports(), read = ?recv.iter().map(|(p, _)| p).collect::<Vec<_>>(), "CNMs through the ports' interfaces");
            session.set_cnm_interfaces(io.send_ports());
            *cnm_io = Some(io);
        }
        Err(e) => {
            tracing::warn!(switch = %name, error = %e, "CNM sockets not opened: CNMs by OpenFlow");
        }
    }
}

/// (Re)starts the emulated CP on the fabric ports that are local Linux interfaces.
fn reconfigure_cp(
    name: &str,
    cfg: &AgentConfig,
    session: &Session,
    reg: &Registry,
    cnm_tx: &mpsc::Sender<GeneratedCnm>,
    cp: &mut Option<CpHandle>,
) {
    if let Some(h) = cp.take() {
        h.stop();
    }
    let off = |why: String| {
        tracing::info!(switch = %name, reason = %why, "emulated congestion point off");
        publish(reg, name, |v| {
            v.emulated_cp = None;
            v.emulated_cp_off = Some(why);
        });
    };
    if !cfg.runtime.emulated_cp.enabled {
        return off("disabled by configuration".to_owned());
    }
    // A plan without decision points still has fabric ports to watch (a fat-tree's top level:
    // its down links are where contention towards a leaf shows).
    let Some(plan) = session.plan().filter(|p| p.is_installed()) else {
        return off("no plan yet".to_owned());
    };
    let Some(mac) = session.switch_mac() else {
        return off("datapath id unknown".to_owned());
    };
    let mut ports = Vec::new();
    let mut missing = Vec::new();
    for &p in &plan.fabric_ports {
        match session.ports().get(&p) {
            Some(info) => match nix::net::if_::if_nametoindex(info.name.as_str()) {
                Ok(idx) => ports.push(emulated_cp::CpPort {
                    port: p,
                    ifname: info.name.clone(),
                    ifindex: idx,
                    link: session.links().get(p),
                    tap: emulated_cp::Tap::for_port(cfg.runtime.emulated_cp.tap, &info.name, idx),
                }),
                Err(_) => missing.push(info.name.clone()),
            },
            None => missing.push(format!("port {p}")),
        }
    }
    if ports.is_empty() {
        return off(format!(
            "no fabric port is a local Linux interface ({})",
            missing.join(", ")
        ));
    }
    if !missing.is_empty() {
        tracing::info!(switch = %name, ?missing, "fabric ports without a local interface: no emulated CP there");
    }
    match emulated_cp::spawn(name, ports, mac, cfg, cnm_tx.clone()) {
        Ok(h) => {
            publish(reg, name, |v| v.emulated_cp_off = None);
            *cp = Some(h);
        }
        Err(e) => off(format!("cannot open sockets: {e}")),
    }
}
