//! The controller's runtime state shared by every task of the service (connections,
//! housekeeping, HTTP): the active plan, switch and link status, metrics, store and leadership.
//! The tokio tasks live in [`crate::service`]; the HTTP API reads this and nothing else.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use tokio::sync::watch;
use tracing::info;

use crate::config::Config;
use crate::desired::{DesiredSwitch, LinkId, PlanSource};
use crate::metrics::Metrics;
use crate::session::{RoleWanted, SessionConfig};
use crate::store::{Leadership, Store};
use crate::sync::links::{LinkMonitor, LinkReport};

/// One plan: every switch's desired state for one failed-link set.
#[derive(Debug, Default)]
pub struct ActivePlan {
    pub version: u64,
    pub failed: BTreeSet<LinkId>,
    pub switches: BTreeMap<u64, Arc<DesiredSwitch>>,
}

/// A switch as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct SwitchStatus {
    pub dpid: String,
    pub name: Option<String>,
    pub known: bool,
    pub connected: bool,
    pub peer: Option<String>,
    pub role: Option<RoleWanted>,
    pub synced: bool,
    pub last_sync_ms: Option<f64>,
    pub last_sync_flow_mods: Option<usize>,
    pub flow_mods_sent: u64,
    pub group_mods_sent: u64,
    pub last_close_reason: Option<String>,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) links: LinkMonitor,
    pub(crate) switches: BTreeMap<u64, SwitchStatus>,
    /// Connection ids per dpid currently up (a switch may reconnect before the old one closes).
    pub(crate) conns: BTreeMap<u64, BTreeSet<u64>>,
    pub(crate) recent_closes: VecDeque<(String, String)>,
}

impl SwitchStatus {
    /// A switch seen for the first time: not connected, never synced.
    pub(crate) fn new(dpid: u64, name: Option<String>, known: bool) -> Self {
        SwitchStatus {
            dpid: format!("{dpid:016x}"),
            name,
            known,
            connected: false,
            peer: None,
            role: None,
            synced: false,
            last_sync_ms: None,
            last_sync_flow_mods: None,
            flow_mods_sent: 0,
            group_mods_sent: 0,
            last_close_reason: None,
        }
    }
}

/// State shared by every task.
pub struct Shared {
    pub cfg: Config,
    pub(crate) session_cfg: SessionConfig,
    pub(crate) planner: Arc<dyn PlanSource>,
    pub(crate) state: Mutex<State>,
    pub metrics: Metrics,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) plan: watch::Sender<Arc<ActivePlan>>,
    pub(crate) leadership: watch::Receiver<Leadership>,
    pub(crate) started: SystemTime,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("fabric", &self.cfg.fabric)
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock is a bug elsewhere; keep serving.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current plan.
    pub fn plan(&self) -> Arc<ActivePlan> {
        self.plan.borrow().clone()
    }

    pub fn leadership(&self) -> Leadership {
        *self.leadership.borrow()
    }

    pub fn store_kind(&self) -> &'static str {
        self.store.kind()
    }

    pub fn store_healthy(&self) -> bool {
        self.store.healthy()
    }

    /// Every planned switch plus unknown connected dpids.
    pub fn switches(&self) -> Vec<SwitchStatus> {
        let plan = self.plan();
        let st = self.state();
        let mut out: BTreeMap<u64, SwitchStatus> = plan
            .switches
            .iter()
            .map(|(dpid, d)| (*dpid, SwitchStatus::new(*dpid, Some(d.name.clone()), true)))
            .collect();
        for (dpid, s) in &st.switches {
            out.insert(*dpid, s.clone());
        }
        out.into_values().collect()
    }

    pub fn links(&self) -> Vec<LinkReport> {
        self.state().links.report()
    }

    pub fn recent_closes(&self) -> Vec<(String, String)> {
        self.state().recent_closes.iter().cloned().collect()
    }

    /// Recomputes the plan from the current failed-link set; sessions resync the switches
    /// whose desired state changed.
    pub fn replan(&self) {
        let failed = self.state().links.failed();
        let mut switches = self.planner.plan(&failed);
        let old = self.plan();
        let mut next = BTreeMap::new();
        for (dpid, d) in std::mem::take(&mut switches) {
            // Keep the old Arc for an unchanged switch (cheap comparisons downstream).
            let arc = match old.switches.get(&dpid) {
                Some(o) if **o == d => o.clone(),
                _ => Arc::new(d),
            };
            next.insert(dpid, arc);
        }
        let changed: Vec<String> = next
            .iter()
            .filter(|(k, v)| old.switches.get(k).is_none_or(|o| !Arc::ptr_eq(o, v)))
            .map(|(k, _)| format!("{k:016x}"))
            .collect();
        self.metrics.replans.inc();
        info!(
            failed_links = failed.len(),
            changed_switches = changed.len(),
            "re-planned"
        );
        self.plan.send_replace(Arc::new(ActivePlan {
            version: old.version + 1,
            failed,
            switches: next,
        }));
        self.update_link_metrics();
    }

    pub(crate) fn update_link_metrics(&self) {
        let [up, down, missing, miswired] = self.state().links.counts();
        let m = &self.metrics;
        m.links_up.set(up as i64);
        m.links_down.set(down as i64);
        m.links_lldp_missing.set(missing as i64);
        m.links_miswired.set(miswired as i64);
    }

    pub(crate) fn update_switch_metrics(&self) {
        let plan = self.plan();
        let st = self.state();
        let connected = st.switches.values().filter(|s| s.connected).count();
        let unknown = st
            .switches
            .values()
            .filter(|s| s.connected && !s.known)
            .count();
        let synced: Vec<u64> = st
            .switches
            .iter()
            .filter(|(_, s)| s.connected && s.synced)
            .map(|(d, _)| *d)
            .collect();
        drop(st);
        let (flows, groups) = synced
            .iter()
            .filter_map(|d| plan.switches.get(d))
            .fold((0, 0), |(f, g), d| (f + d.flows.len(), g + d.groups.len()));
        let m = &self.metrics;
        m.switches_connected.set(connected as i64);
        m.switches_unknown.set(unknown as i64);
        m.switches_synced.set(synced.len() as i64);
        m.flows_installed.set(flows as i64);
        m.groups_installed.set(groups as i64);
    }

    pub fn uptime(&self) -> Duration {
        self.started.elapsed().unwrap_or_default()
    }
}
