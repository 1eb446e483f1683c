//! The tokio shell: accepts switch connections (TCP or TLS), moves bytes between sockets and
//! [`Session`]s, keeps link health, re-plans on failures, runs the store/election, and serves
//! HTTP. All protocol decisions live in the sans-IO session and the pure sync code.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tracing::{debug, info, warn};

use crate::config::{Config, StoreSpec};
use crate::desired::{Endpoint, PlanSource};
use crate::metrics::Metrics;
use crate::session::{CloseReason, Event, RoleWanted, Session};
use crate::shared::{ActivePlan, Shared, State, SwitchStatus};
use crate::store::etcd::EtcdStore;
use crate::store::memory::MemoryStore;
use crate::store::{Leadership, Store};
use crate::sync::links::LinkMonitor;

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("config: {0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("TLS: {0}")]
    Tls(String),
    #[error("store: {0}")]
    Store(#[from] crate::store::StoreError),
}

/// Resync requests queued per connection before the oldest are dropped (a connection that lags
/// that far resyncs anyway).
const RESYNC_QUEUE: usize = 64;

fn role_for(l: Leadership) -> RoleWanted {
    match l {
        Leadership::Standalone => RoleWanted::Equal,
        Leadership::Leader { generation } => RoleWanted::Master { generation },
        Leadership::Follower { generation } => RoleWanted::Slave { generation },
    }
}

/// A running controller. Dropping it (or [`shutdown`](Self::shutdown)) stops every task
/// abruptly, like a crash: switches keep their rules (fail-mode secure).
#[derive(Debug)]
pub struct Controller {
    pub shared: Arc<Shared>,
    pub openflow_addr: SocketAddr,
    pub http_addr: SocketAddr,
    tasks: JoinSet<()>,
}

impl Controller {
    /// Starts the controller with `planner` as its plan source.
    pub async fn start(
        cfg: Config,
        planner: Arc<dyn PlanSource>,
    ) -> Result<Controller, ServiceError> {
        cfg.validate()?;
        let store: Arc<dyn Store> = match cfg.store_spec()? {
            StoreSpec::Memory => match &cfg.state_file {
                Some(path) => Arc::new(MemoryStore::with_state_file(path.clone())?),
                None => Arc::new(MemoryStore::default()),
            },
            StoreSpec::Etcd(eps) => Arc::new(
                EtcdStore::connect(eps, cfg.controller_id.clone(), cfg.etcd_lease_ttl_s).await?,
            ),
        };
        let tls = match &cfg.tls {
            Some(t) => Some(crate::tls::tls_acceptor(t).map_err(ServiceError::Tls)?),
            None => None,
        };
        let api_token = cfg.api_token()?;
        if api_token.is_some() && !cfg.http_listen.ip().is_loopback() {
            warn!(addr = %cfg.http_listen,
                  "the API's write token travels in clear over plain HTTP on a non-loopback address");
        }
        let links = planner.links();
        let shared = Arc::new(Shared {
            api_token,
            resync: tokio::sync::broadcast::Sender::new(RESYNC_QUEUE),
            operator_lock: tokio::sync::Mutex::new(()),
            session_cfg: cfg.session(),
            planner,
            state: Mutex::new(State {
                links: LinkMonitor::new(&links, cfg.lldp_missing_after()),
                ..State::default()
            }),
            metrics: Metrics::default(),
            leadership: store.leadership(),
            store,
            plan: watch::Sender::new(Arc::new(ActivePlan::default())),
            started: SystemTime::now(),
            cfg,
        });
        // The operator's drains and freezes come back before the first plan reaches a switch.
        if !shared.load_operator().await? {
            shared.replan();
        }

        let of = TcpListener::bind(shared.cfg.openflow_listen)
            .await
            .map_err(|source| ServiceError::Listen {
                addr: shared.cfg.openflow_listen,
                source,
            })?;
        let openflow_addr = of.local_addr().map_err(|source| ServiceError::Listen {
            addr: shared.cfg.openflow_listen,
            source,
        })?;
        let http = TcpListener::bind(shared.cfg.http_listen)
            .await
            .map_err(|source| ServiceError::Listen {
                addr: shared.cfg.http_listen,
                source,
            })?;
        let http_addr = http.local_addr().map_err(|source| ServiceError::Listen {
            addr: shared.cfg.http_listen,
            source,
        })?;
        info!(%openflow_addr, %http_addr, store = shared.store.kind(), tls = tls.is_some(),
              fabric = %shared.cfg.fabric, "controller started");

        let mut tasks = JoinSet::new();
        tasks.spawn(accept_loop(shared.clone(), of, tls));
        tasks.spawn(crate::http::serve(shared.clone(), http));
        tasks.spawn(housekeeping(shared.clone()));
        Ok(Controller {
            shared,
            openflow_addr,
            http_addr,
            tasks,
        })
    }

    /// Stops every task at once (sockets close; no goodbye to switches or etcd).
    pub async fn shutdown(mut self) {
        self.tasks.shutdown().await;
    }

    /// Runs until a task ends (they do not, normally) or Ctrl-C.
    pub async fn wait(mut self) {
        tokio::select! {
            _ = self.tasks.join_next() => {}
            _ = tokio::signal::ctrl_c() => info!("interrupted: stopping"),
        }
        self.tasks.shutdown().await;
    }
}

/// Periodic work: link-liveness tick, leadership metrics, store publication.
async fn housekeeping(shared: Arc<Shared>) {
    let period = Duration::from_millis(shared.cfg.lldp_interval_ms).min(Duration::from_secs(1));
    let mut tick = tokio::time::interval(period);
    let mut leadership = shared.leadership.clone();
    let mut last_publish = Instant::now() - Duration::from_secs(3600);
    let mut published_fabric = false;
    let mut was_writer = leadership.borrow().writes();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = leadership.changed() => {}
        }
        let l = *leadership.borrow_and_update();
        if l.writes() && !was_writer {
            // The previous leader may have drained or frozen something since this one read.
            if let Err(e) = shared.load_operator().await {
                warn!(error = %e, "cannot read the operator state: keeping the one known");
            }
        }
        was_writer = l.writes();
        let m = &shared.metrics;
        m.leader.set(i64::from(l.writes()));
        m.generation.set(match l {
            Leadership::Leader { generation } | Leadership::Follower { generation } => generation,
            Leadership::Standalone => 0,
        });
        m.store_up.set(i64::from(shared.store.healthy()));
        let changed = shared.state().links.tick(Instant::now());
        if changed {
            for l in shared.links() {
                if !l.lldp_missing.is_empty() {
                    warn!(link = %l.id, ends = ?l.lldp_missing, "LLDP missing: link treated as failed");
                }
            }
            shared.replan();
        }
        // Only the writer publishes (followers would race it with stale views).
        if l.writes() && last_publish.elapsed() >= Duration::from_secs(2) {
            last_publish = Instant::now();
            let mut kvs = Vec::new();
            if !published_fabric {
                kvs.push(("fabric".to_string(), shared.cfg.fabric.clone()));
            }
            for link in shared.links() {
                kvs.push((
                    format!("links/{}", link.id),
                    serde_json::to_string(&link).unwrap_or_default(),
                ));
            }
            for s in shared.switches() {
                kvs.push((
                    format!("switches/{}", s.dpid),
                    serde_json::to_string(&s).unwrap_or_default(),
                ));
            }
            let mut ok = true;
            for (k, v) in kvs {
                if let Err(e) = shared.store.put(k, v).await {
                    ok = false;
                    m.store_errors.inc();
                    warn!(error = %e, "store unreachable: keeping switches as they are, retrying");
                    break;
                }
            }
            published_fabric |= ok;
        }
    }
}

/// One accepted connection not yet identified by a FEATURES_REPLY: holds one of the
/// `max_unidentified_peers` permits and counts in the `unidentified_peers` gauge until dropped.
#[derive(Debug)]
struct Unidentified {
    _permit: OwnedSemaphorePermit,
    shared: Arc<Shared>,
}

impl Unidentified {
    fn new(permit: OwnedSemaphorePermit, shared: Arc<Shared>) -> Self {
        shared.metrics.unidentified_peers.inc();
        Unidentified {
            _permit: permit,
            shared,
        }
    }
}

impl Drop for Unidentified {
    fn drop(&mut self) {
        self.shared.metrics.unidentified_peers.dec();
    }
}

async fn accept_loop(
    shared: Arc<Shared>,
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let mut conns = JoinSet::new();
    let mut next_id = 0u64;
    let permits = Arc::new(Semaphore::new(shared.cfg.max_unidentified_peers));
    let mut last_refusal_warning: Option<Instant> = None;
    loop {
        tokio::select! {
            r = listener.accept() => {
                let (stream, peer) = match r {
                    Ok(x) => x,
                    Err(e) => {
                        warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    // Closing at once costs nothing; a real switch retries with its backoff.
                    drop(stream);
                    shared.metrics.connections_refused.inc();
                    if last_refusal_warning.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                        last_refusal_warning = Some(Instant::now());
                        warn!(%peer, max = shared.cfg.max_unidentified_peers,
                              refused_total = shared.metrics.connections_refused.get(),
                              "too many unidentified peers: refusing connections");
                    }
                    continue;
                };
                let unidentified = Unidentified::new(permit, shared.clone());
                let _ = stream.set_nodelay(true);
                next_id += 1;
                let id = next_id;
                let shared = shared.clone();
                let tls = tls.clone();
                conns.spawn(async move {
                    match tls {
                        None => run_connection(shared, stream, peer, id, unidentified).await,
                        Some(acc) => match acc.accept(stream).await {
                            Ok(s) => run_connection(shared, s, peer, id, unidentified).await,
                            Err(e) => {
                                warn!(%peer, error = %e, "TLS handshake failed: connection closed");
                                shared.metrics.connections_closed.inc();
                            }
                        },
                    }
                });
            }
            Some(_) = conns.join_next() => {}
        }
    }
}

/// A connection's read buffer: small while the peer sends little (handshakes, echoes, port
/// status), so thousands of idle or unidentified peers cost little memory, and grown while
/// reads fill it (flow and group dumps), so a large dump takes few reads.
#[derive(Debug)]
struct ReadBuf {
    buf: Vec<u8>,
}

impl ReadBuf {
    const MIN: usize = 4 * 1024;
    const MAX: usize = 64 * 1024;

    fn new() -> Self {
        ReadBuf {
            buf: vec![0; Self::MIN],
        }
    }

    fn space(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// Adapts the size to a read of `n` bytes: a full buffer grows 4×, a read that would have
    /// fitted the smallest size returns to it (the large allocation is freed).
    fn after_read(&mut self, n: usize) {
        let len = self.buf.len();
        if n >= len && len < Self::MAX {
            self.buf = vec![0; (len * 4).min(Self::MAX)];
        } else if n < Self::MIN && len > Self::MIN {
            self.buf = vec![0; Self::MIN];
        }
    }
}

/// Output kept allocated between writes; a larger buffer is freed after its write.
const OUT_KEEP_BYTES: usize = 16 * 1024;

/// Accepts nothing but a TcpStream-like byte stream.
async fn run_connection<S>(
    shared: Arc<Shared>,
    stream: S,
    peer: SocketAddr,
    conn_id: u64,
    unidentified: Unidentified,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let (mut rd, mut wr) = tokio::io::split(stream);
    let mut plan_rx = shared.plan.subscribe();
    let mut role_rx = shared.leadership.clone();
    let mut resync_rx = shared.resync.subscribe();
    let mut resync_open = true;
    let now = Instant::now();
    let role = role_for(*role_rx.borrow_and_update());
    let mut session = Session::new(shared.session_cfg.clone(), role, now);
    let mut unidentified = Some(unidentified);
    let mut buf = ReadBuf::new();
    let mut out = BytesMut::new();
    let mut sent = (0u64, 0u64);
    let mut dpid: Option<u64> = None;
    debug!(%peer, "switch connected");
    loop {
        // Let the session and the shell settle: events may produce more output.
        loop {
            while let Some(m) = session.poll_transmit() {
                m.encode(&mut out);
            }
            let mut progressed = false;
            while let Some(ev) = session.poll_event() {
                progressed = true;
                handle_event(
                    &shared,
                    &mut session,
                    &mut dpid,
                    conn_id,
                    peer,
                    ev,
                    &plan_rx,
                );
            }
            if !progressed {
                break;
            }
        }
        if dpid.is_some() {
            drop(unidentified.take());
        }
        let c = session.counters();
        let (df, dg) = (c.flow_mods_sent - sent.0, c.group_mods_sent - sent.1);
        if df > 0 || dg > 0 {
            shared.metrics.flow_mods_sent.inc_by(df);
            shared.metrics.group_mods_sent.inc_by(dg);
            sent = (c.flow_mods_sent, c.group_mods_sent);
            if let Some(d) = dpid {
                if let Some(s) = shared.state().switches.get_mut(&d) {
                    s.flow_mods_sent += df;
                    s.group_mods_sent += dg;
                }
            }
        }
        if !out.is_empty() {
            let r = wr.write_all(&out).await;
            // A sync's bundle may have grown the buffer to megabytes: give that back.
            if out.capacity() > OUT_KEEP_BYTES {
                out = BytesMut::new();
            } else {
                out.clear();
            }
            if let Err(e) = r {
                session.handle_io_error(e.to_string());
                continue;
            }
        }
        if session.is_closed() {
            break;
        }
        let deadline = session
            .poll_timeout()
            .map(tokio::time::Instant::from_std)
            .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            r = rd.read(buf.space()) => match r {
                Ok(0) => session.handle_eof(),
                Ok(n) => {
                    session.handle_bytes(buf.space().get(..n).unwrap_or_default(), Instant::now());
                    buf.after_read(n);
                }
                Err(e) => session.handle_io_error(e.to_string()),
            },
            _ = tokio::time::sleep_until(deadline) => session.handle_timeout(Instant::now()),
            r = plan_rx.changed() => {
                if r.is_ok() {
                    if let Some(d) = dpid {
                        let plan = plan_rx.borrow_and_update().clone();
                        session.set_desired(plan.switches.get(&d).cloned(), Instant::now());
                    }
                }
            }
            r = resync_rx.recv(), if resync_open => {
                use tokio::sync::broadcast::error::RecvError;
                let wanted = match r {
                    Ok(target) => dpid.is_some() && (target.is_none() || target == dpid),
                    Err(RecvError::Lagged(_)) => dpid.is_some(),
                    Err(RecvError::Closed) => {
                        resync_open = false;
                        false
                    }
                };
                if wanted {
                    info!(dpid = %format!("{:016x}", dpid.unwrap_or_default()), "resync requested by the operator");
                    session.resync(Instant::now());
                }
            }
            r = role_rx.changed() => {
                if r.is_ok() {
                    let role = role_for(*role_rx.borrow_and_update());
                    session.set_role(role, Instant::now());
                    if !role.writes() {
                        if let Some(d) = dpid {
                            shared.state().links.set_probing(d, None);
                        }
                    }
                }
            }
        }
    }
    let _ = wr.shutdown().await;
    if let Some(d) = dpid {
        let mut st = shared.state();
        let last = st.conns.get_mut(&d).is_some_and(|c| {
            c.remove(&conn_id);
            c.is_empty()
        });
        if last {
            st.links.set_probing(d, None);
            if let Some(s) = st.switches.get_mut(&d) {
                s.connected = false;
                s.synced = false;
            }
        }
        drop(st);
        shared.update_switch_metrics();
    }
}

fn handle_event(
    shared: &Arc<Shared>,
    session: &mut Session,
    dpid: &mut Option<u64>,
    conn_id: u64,
    peer: SocketAddr,
    ev: Event,
    plan_rx: &watch::Receiver<Arc<ActivePlan>>,
) {
    let now = Instant::now();
    let dstr = dpid
        .map(|d| format!("{d:016x}"))
        .unwrap_or_else(|| "-".into());
    match ev {
        Event::Identified { dpid: d, n_tables } => {
            *dpid = Some(d);
            let plan = plan_rx.borrow().clone();
            let desired = plan.switches.get(&d).cloned();
            let known = desired.is_some();
            if known {
                info!(dpid = %format!("{d:016x}"), %peer, n_tables, "switch identified");
            } else {
                warn!(dpid = %format!("{d:016x}"), %peer, "unknown dpid: not in the plan; connection kept idle");
            }
            {
                let mut st = shared.state();
                st.conns.entry(d).or_default().insert(conn_id);
                st.switches.insert(
                    d,
                    SwitchStatus {
                        connected: true,
                        peer: Some(peer.to_string()),
                        ..SwitchStatus::new(d, desired.as_ref().map(|x| x.name.clone()), known)
                    },
                );
            }
            session.set_desired(desired, now);
            shared.update_switch_metrics();
        }
        Event::RoleGranted { role } => {
            info!(dpid = %dstr, ?role, "role granted");
            if let Some(d) = *dpid {
                let mut st = shared.state();
                if let Some(s) = st.switches.get_mut(&d) {
                    s.role = Some(role);
                }
                if role.writes() && session.desired().is_some() {
                    st.links.set_probing(d, Some(now));
                }
            }
        }
        Event::RoleRefused { reason } => {
            warn!(dpid = %dstr, %reason, "role request refused");
        }
        Event::SyncStarted => debug!(dpid = %dstr, "sync started"),
        Event::SyncDone {
            flow_mods,
            group_mods,
            flows,
            groups,
            duration,
        } => {
            info!(dpid = %dstr, flow_mods, group_mods, flows, groups,
                  ms = duration.as_secs_f64() * 1e3, "switch synced");
            shared
                .metrics
                .sync_duration_seconds
                .observe(duration.as_secs_f64());
            shared.metrics.syncs.inc();
            if let Some(d) = *dpid {
                let mut st = shared.state();
                if let Some(s) = st.switches.get_mut(&d) {
                    s.synced = session.is_synced();
                    s.last_sync_ms = Some(duration.as_secs_f64() * 1e3);
                    s.last_sync_flow_mods = Some(flow_mods);
                }
                if session.desired().is_some() {
                    st.links.set_probing(d, Some(now));
                }
            }
            shared.update_switch_metrics();
        }
        Event::BundlesRefused { reason } => {
            warn!(dpid = %dstr, %reason,
                  "switch refuses bundles: syncing by make-before-break steps of plain mods");
        }
        Event::SyncFailed { reason } => {
            warn!(dpid = %dstr, %reason, "sync refused by the switch: will retry");
            shared.metrics.sync_failures.inc();
        }
        Event::PortState { port, up } => {
            let Some(d) = *dpid else { return };
            let ep = Endpoint { dpid: d, port };
            debug!(endpoint = %ep, up, "port state");
            let changed = shared.state().links.port_state(ep, up);
            if changed {
                info!(endpoint = %ep, up, "fabric port state changed");
                shared.replan();
            }
        }
        Event::Lldp {
            in_port,
            peer: heard,
        } => {
            let Some(d) = *dpid else { return };
            let ep = Endpoint {
                dpid: d,
                port: in_port,
            };
            let changed = shared.state().links.lldp(ep, heard, now);
            if changed {
                let miswired = shared
                    .links()
                    .into_iter()
                    .any(|l| l.miswired.iter().any(|(e, _)| *e == ep));
                if miswired {
                    warn!(endpoint = %ep, heard = %heard, "miswired link: treated as failed");
                } else {
                    info!(endpoint = %ep, "LLDP heard again: link back in service");
                }
                shared.replan();
            }
        }
        Event::SwitchError { text } => warn!(dpid = %dstr, %text, "switch error"),
        Event::Closed { reason } => {
            let level_warn = !matches!(reason, CloseReason::PeerClosed);
            if level_warn {
                warn!(dpid = %dstr, %peer, reason = %reason, "connection closed");
            } else {
                info!(dpid = %dstr, %peer, reason = %reason, "connection closed");
            }
            shared.metrics.connections_closed.inc();
            let mut st = shared.state();
            st.recent_closes
                .push_back((peer.to_string(), reason.to_string()));
            while st.recent_closes.len() > 50 {
                st.recent_closes.pop_front();
            }
            if let Some(s) = dpid.and_then(|d| st.switches.get_mut(&d)) {
                s.last_close_reason = Some(reason.to_string());
            }
        }
    }
    if let Some(d) = *dpid {
        // A session can come back in sync without a `Synced` event (a re-plan that left this
        // switch's rules as they were): the gauge must follow the state, or it reads one
        // switch short while the API says every switch is synced.
        let changed = shared
            .state()
            .switches
            .get_mut(&d)
            .is_some_and(|s| std::mem::replace(&mut s.synced, session.is_synced()) != s.synced);
        if changed {
            shared.update_switch_metrics();
        }
    }
}

/// Seconds since the epoch (API timestamps).
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::ReadBuf;

    #[test]
    fn read_buffer_grows_while_full_and_shrinks_when_reads_are_small() {
        let mut b = ReadBuf::new();
        assert_eq!(b.space().len(), ReadBuf::MIN);
        b.after_read(100);
        assert_eq!(b.space().len(), ReadBuf::MIN);
        b.after_read(ReadBuf::MIN);
        assert_eq!(b.space().len(), 16 * 1024);
        b.after_read(16 * 1024);
        assert_eq!(b.space().len(), ReadBuf::MAX);
        b.after_read(ReadBuf::MAX);
        assert_eq!(b.space().len(), ReadBuf::MAX, "never above MAX");
        b.after_read(ReadBuf::MIN);
        assert_eq!(
            b.space().len(),
            ReadBuf::MAX,
            "a read of MIN bytes keeps the size"
        );
        b.after_read(8);
        assert_eq!(b.space().len(), ReadBuf::MIN);
    }
}
