//! The port-stall sampler: one thread reading the root qdisc of every watched port with one
//! netlink dump per poll ([`QdiscReader::dump_roots`], the emulated CP's reader) and feeding
//! [`PortStall`] (backlog time, octets, drops, FITF intervals — crate::port_stats says what
//! backlog time is and why it is not XmitWait).
//!
//! Two users: the agent (`[runtime.port_stall]`: every port of its switches, exported on
//! `/metrics`) and `fabricflow-agent port-stats` (a port list from a file, written as
//! `port-stats.csv` for `fabricflow-report`; the Mininet harness runs it in every mode, also
//! where no agent runs).

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::emulated_cp::QdiscReader;
use super::now_ns;
use crate::port_stats::{csv_row, PortStall, CSV_HEADER};
use crate::qdisc::QueueStats;
use crate::PortNo;

/// One watched egress port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchedPort {
    /// Switch name (on OVS the bridge).
    pub switch: String,
    /// OpenFlow port.
    pub port: PortNo,
    /// The controller's port role name (`PortRole::name()`: host, local, global, up, down,
    /// horizontal, fabric).
    pub role: String,
    /// The local interface whose egress qdisc is the port's queue.
    pub interface: String,
    /// Line rate, Mb/s, when known (the CSV's data column becomes line time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_mbps: Option<f64>,
}

/// A watched port and its counters.
#[derive(Debug, Clone, Serialize)]
pub struct PortStallView {
    /// The port.
    #[serde(flatten)]
    pub port: WatchedPort,
    /// Its counters.
    pub stall: PortStall,
}

/// Reads every port's root qdisc once per poll.
#[derive(Debug)]
pub struct StallSampler {
    qdisc: QdiscReader,
    roots: Vec<QueueStats>,
    interval_ns: u64,
    /// Polls that failed.
    pub errors: u64,
}

impl StallSampler {
    /// A sampler closing FITF intervals every `interval_ns`.
    pub fn open(interval_ns: u64) -> anyhow::Result<Self> {
        Ok(StallSampler {
            qdisc: QdiscReader::open()?,
            roots: Vec::new(),
            interval_ns,
            errors: 0,
        })
    }

    /// One dump; each port in `ports` (with its ifindex) takes its reading. The reading's time
    /// is the middle of the request's round trip. Returns it.
    pub fn poll(&mut self, ports: &mut [(u32, PortStallView)]) -> Option<u64> {
        let t0 = now_ns();
        if let Err(e) = self.qdisc.dump_roots(&mut self.roots) {
            self.errors += 1;
            tracing::debug!(error = %e, "qdisc dump failed");
            return None;
        }
        let t = t0 + now_ns().saturating_sub(t0) / 2;
        let by_index: HashMap<u32, &QueueStats> =
            self.roots.iter().map(|q| (q.ifindex, q)).collect();
        for (ifindex, v) in ports.iter_mut() {
            if let Some(q) = by_index.get(ifindex) {
                v.stall.observe(t, q, self.interval_ns);
            }
        }
        Some(t)
    }
}

/// Resolves interface names; ports whose interface does not exist are left out (logged).
pub fn resolve(ports: Vec<WatchedPort>) -> Vec<(u32, PortStallView)> {
    ports
        .into_iter()
        .filter_map(
            |p| match nix::net::if_::if_nametoindex(p.interface.as_str()) {
                Ok(i) => Some((
                    i,
                    PortStallView {
                        port: p,
                        stall: PortStall::default(),
                    },
                )),
                Err(e) => {
                    tracing::warn!(interface = %p.interface, error = %e, "no such interface: not sampled");
                    None
                }
            },
        )
        .collect()
}

/// A switch's registration with the agent's sampling thread.
#[derive(Debug)]
pub struct StallHandle {
    stop: Arc<AtomicBool>,
    ports: Arc<Mutex<Vec<(u32, PortStallView)>>>,
}

impl StallHandle {
    /// Asks the thread to forget these ports.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// A snapshot of the ports' counters.
    pub fn status(&self) -> Vec<PortStallView> {
        self.ports
            .lock()
            .map(|p| p.iter().map(|(_, v)| v.clone()).collect())
            .unwrap_or_default()
    }
}

impl Drop for StallHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

type Inbox = Arc<Mutex<Vec<(Arc<AtomicBool>, Arc<Mutex<Vec<(u32, PortStallView)>>>)>>>;

/// Registers `ports` with the agent's sampling thread (started on first use with the first
/// caller's periods).
pub fn spawn(
    ports: Vec<WatchedPort>,
    poll_period: Duration,
    interval: Duration,
) -> anyhow::Result<StallHandle> {
    static THREAD: Mutex<Option<Inbox>> = Mutex::new(None);
    let mut slot = THREAD
        .lock()
        .map_err(|_| anyhow::anyhow!("port-stall sampler poisoned"))?;
    let inbox = match slot.as_ref() {
        Some(i) => i.clone(),
        None => {
            let interval_ns = u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX);
            let mut sampler = StallSampler::open(interval_ns)?;
            let inbox: Inbox = Arc::default();
            let theirs = inbox.clone();
            std::thread::Builder::new()
                .name("port-stall".to_owned())
                .spawn(move || loop {
                    let next = Instant::now() + poll_period;
                    let mut regs = match theirs.lock() {
                        Ok(mut r) => {
                            r.retain(|(stop, _)| !stop.load(Ordering::Relaxed));
                            r.clone()
                        }
                        Err(_) => return,
                    };
                    for (_, ports) in &mut regs {
                        if let Ok(mut p) = ports.lock() {
                            sampler.poll(&mut p);
                        }
                    }
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                })?;
            *slot = Some(inbox.clone());
            inbox
        }
    };
    let handle = StallHandle {
        stop: Arc::new(AtomicBool::new(false)),
        ports: Arc::new(Mutex::new(resolve(ports))),
    };
    inbox
        .lock()
        .map_err(|_| anyhow::anyhow!("port-stall sampler poisoned"))?
        .push((handle.stop.clone(), handle.ports.clone()));
    Ok(handle)
}

/// `fabricflow-agent port-stats`: samples `ports` every `poll_period` and appends every port's
/// row to `out` every `interval` (the CSV's header first) until `stop` turns true.
pub fn write_csv(
    ports: Vec<WatchedPort>,
    out: &mut impl Write,
    poll_period: Duration,
    interval: Duration,
    stop: &AtomicBool,
) -> anyhow::Result<CsvSummary> {
    let interval_ns = u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX);
    let mut sampler = StallSampler::open(interval_ns)?;
    let mut ports = resolve(ports);
    if ports.is_empty() {
        anyhow::bail!("none of the ports' interfaces exists");
    }
    out.write_all(CSV_HEADER.as_bytes())?;
    let origin = now_ns();
    let mut next_row: Option<u64> = None;
    let mut summary = CsvSummary::default();
    let mut text = String::new();
    while !stop.load(Ordering::Relaxed) {
        let wake = Instant::now() + poll_period;
        if let Some(t) = sampler.poll(&mut ports) {
            summary.polls += 1;
            if next_row.is_none_or(|n| t >= n) {
                // Rows share the reading's time; the next read is due an interval later (an
                // interval after this one if the sampler fell behind).
                let due = next_row.unwrap_or(t).saturating_add(interval_ns);
                next_row = Some(if due <= t {
                    t.saturating_add(interval_ns)
                } else {
                    due
                });
                text.clear();
                let since = t.saturating_sub(origin);
                for (_, v) in &ports {
                    let p = &v.port;
                    let rate = p.rate_mbps.map(|m| m * 1e6);
                    text.push_str(&csv_row(since, &p.switch, p.port, &p.role, &v.stall, rate));
                }
                out.write_all(text.as_bytes())?;
                out.flush()?;
                summary.reads += 1;
            }
        }
        std::thread::sleep(wake.saturating_duration_since(Instant::now()));
    }
    summary.errors = sampler.errors;
    summary.ports = ports.len();
    Ok(summary)
}

/// What a CSV run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CsvSummary {
    /// Ports sampled.
    pub ports: usize,
    /// Qdisc dumps taken.
    pub polls: u64,
    /// Reads written (rows = reads × ports).
    pub reads: u64,
    /// Dumps that failed.
    pub errors: u64,
}
