//! The agent's I/O shell (tokio): one task per switch moving bytes between the socket and the
//! sans-IO [`Session`](crate::session::Session), one emulated congestion point per switch (a
//! thread: blocking netlink and packet sockets), the port-stall sampler (a thread), and the
//! HTTP server. Nothing here decides
//! anything; the pure core does.

pub mod cnm_io;
pub mod emulated_cp;
pub mod http;
pub mod port_stats;
pub mod switch;
pub mod throttle;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tracing::Instrument;

use serde::Serialize;

use crate::config::{AgentConfig, SwitchConfig};
use crate::session::SessionStatus;

/// Monotonic nanoseconds since the first call (the pure core's `now_ns`).
pub fn now_ns() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = *ORIGIN.get_or_init(Instant::now);
    u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The instant of a `now_ns` value.
pub fn instant_of(ns: u64) -> Instant {
    let origin = Instant::now()
        .checked_sub(Duration::from_nanos(now_ns()))
        .unwrap_or_else(Instant::now);
    origin
        .checked_add(Duration::from_nanos(ns))
        .unwrap_or_else(Instant::now)
}

/// What the API shows for one switch.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SwitchView {
    /// Connection target.
    pub target: String,
    /// The session's snapshot.
    pub session: SessionStatus,
    /// The emulated CP, if running.
    pub emulated_cp: Option<emulated_cp::CpStatus>,
    /// Why the emulated CP is not running, if it is not.
    pub emulated_cp_off: Option<String>,
    /// Per-port stall counters (`[runtime.port_stall]`); empty when off.
    pub port_stall: Vec<port_stats::PortStallView>,
    /// Per GROUP_MOD that answers a received CNM: from reading the CNM's packet-in to having
    /// written the GROUP_MOD to the socket (a write the minimum update interval deferred
    /// included).
    pub cnm_to_group_mod: crate::latency::LatencyHistogram,
}

/// Every switch's view, by name; shared by the switch tasks and the HTTP server.
pub type Registry = Arc<Mutex<BTreeMap<String, SwitchView>>>;

/// Updates one switch's view.
pub fn publish(reg: &Registry, name: &str, f: impl FnOnce(&mut SwitchView)) {
    if let Ok(mut map) = reg.lock() {
        f(map.entry(name.to_owned()).or_default());
    }
}

/// Runs the agent for every switch of `cfg` until Ctrl-C / SIGTERM.
pub async fn run(cfg: AgentConfig) -> anyhow::Result<()> {
    if cfg.switch.is_empty() {
        anyhow::bail!("no switch configured: add [[switch]] entries or --switch NAME=TARGET");
    }
    let cfg = Arc::new(cfg);
    let registry: Registry = Arc::default();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    for sw in &cfg.switch {
        let sw: SwitchConfig = sw.clone();
        let (cfg, reg, stop) = (cfg.clone(), registry.clone(), stop_rx.clone());
        // Every event of this switch's task (session and policy included) names the switch.
        let span = tracing::info_span!("switch", name = %sw.name);
        tasks.spawn(async move { switch::run_switch(sw, cfg, reg, stop).await }.instrument(span));
    }
    if !cfg.runtime.http_listen.is_empty() {
        let listener = tokio::net::TcpListener::bind(&cfg.runtime.http_listen).await?;
        tracing::info!(addr = %cfg.runtime.http_listen, "HTTP: /metrics, /api/v1/state");
        let (reg, stop) = (registry.clone(), stop_rx.clone());
        tasks.spawn(async move { http::serve(listener, reg, stop).await });
    }
    shutdown_signal().await;
    tracing::info!("shutting down");
    let _ = stop_tx.send(true);
    while let Some(r) = tasks.join_next().await {
        if let Ok(Err(e)) = r {
            tracing::warn!(error = %e, "task ended with an error");
        }
    }
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        if let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = ctrl_c.await;
}
