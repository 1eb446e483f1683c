//! The controller's runtime state shared by every task of the service (connections,
//! housekeeping, HTTP): the active plan, switch and link status, metrics, store and leadership.
//! The tokio tasks live in [`crate::service`]; the HTTP API reads this and nothing else.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use tokio::sync::{broadcast, watch};
use tracing::{info, warn};

use crate::config::Config;
use crate::desired::{DesiredSwitch, LinkId, PlanSource};
use crate::metrics::Metrics;
use crate::operator::{Action, OperatorState};
use crate::session::{RoleWanted, SessionConfig};
use crate::store::{Leadership, Store, StoreError};
use crate::sync::links::{LinkMonitor, LinkReport};

/// One plan: every switch's desired state for one out-of-service link set.
#[derive(Debug, Default)]
pub struct ActivePlan {
    pub version: u64,
    /// Links out of service: unhealthy or drained (what the planner was given).
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
    /// The operator's drains and freezes (persisted under [`crate::operator::STORE_KEY`]).
    pub(crate) operator: OperatorState,
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
    /// Bearer token of the API's write actions (`None`: disabled).
    pub(crate) api_token: Option<String>,
    /// Resync requests to the connections: a dpid, or `None` for every switch.
    pub(crate) resync: broadcast::Sender<Option<u64>>,
    /// Serialises operator actions (each persists before it applies).
    pub(crate) operator_lock: tokio::sync::Mutex<()>,
}

/// Why an operator action was not carried out.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    #[error("this controller is a follower: send write actions to the leader")]
    NotLeader,
    #[error("not applied: the store did not keep it ({0})")]
    Store(#[from] StoreError),
    #[error("not applied: no plan routes the fabric without these links ({0})")]
    Unplannable(String),
}

/// What an operator action did.
#[derive(Debug, Clone, Serialize)]
pub struct ActionOutcome {
    pub action: &'static str,
    /// Whether the operator state changed (a repeated drain does not).
    pub changed: bool,
    /// The plan in force afterwards.
    pub plan_version: u64,
    /// Identified switch connections asked to resync (resync only).
    pub resync_requests: usize,
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

    /// The operator's drains and freezes.
    pub fn operator_state(&self) -> OperatorState {
        self.state().operator.clone()
    }

    /// Planned switches by dpid with their names (to resolve operator targets).
    pub fn switch_names(&self) -> BTreeMap<u64, String> {
        self.plan()
            .switches
            .iter()
            .map(|(d, s)| (*d, s.name.clone()))
            .collect()
    }

    /// Every fabric link.
    pub fn link_ids(&self) -> Vec<LinkId> {
        self.state().links.links().copied().collect()
    }

    /// Carries out `action`: a changed state is written to the store first (so what is applied
    /// is what a restart finds), then the fabric is re-planned; a resync asks the switch's
    /// connections to dump and diff again. Only the controller that writes to switches acts.
    pub async fn operator_action(&self, action: Action) -> Result<ActionOutcome, OperatorError> {
        if !self.leadership().writes() {
            return Err(OperatorError::NotLeader);
        }
        let _serial = self.operator_lock.lock().await;
        let mut resync_requests = 0;
        let mut next = self.operator_state();
        let changed = next.apply(action);
        if let Action::Resync(target) = action {
            resync_requests = {
                let st = self.state();
                match target {
                    Some(d) => st.conns.get(&d).map_or(0, BTreeSet::len),
                    None => st.conns.values().map(BTreeSet::len).sum(),
                }
            };
            // No receiver means no connection: nothing to resync.
            let _ = self.resync.send(target);
        } else if changed {
            if matches!(action, Action::DrainLink(_) | Action::DrainSwitch(_)) {
                let failed = {
                    let st = self.state();
                    st.links
                        .failed_with_drained(&next.drained(st.links.links()))
                };
                self.planner
                    .check(&failed, &next.drained_switches)
                    .map_err(OperatorError::Unplannable)?;
            }
            let json = serde_json::to_string(&next).unwrap_or_default();
            if let Err(e) = self
                .store
                .put(crate::operator::STORE_KEY.to_owned(), json)
                .await
            {
                self.metrics.store_errors.inc();
                return Err(e.into());
            }
            self.set_operator(next);
        }
        self.metrics
            .operator_actions
            .get_or_create(&vec![("action", action.label())])
            .inc();
        info!(action = action.label(), target = ?action, changed, "operator action");
        Ok(ActionOutcome {
            action: action.label(),
            changed,
            plan_version: self.plan().version,
            resync_requests,
        })
    }

    /// Installs `op` as the operator state and re-plans.
    pub(crate) fn set_operator(&self, op: OperatorState) {
        {
            let mut st = self.state();
            let drained = op.drained(st.links.links());
            st.links.set_drained(drained);
            st.operator = op;
        }
        self.replan();
    }

    /// Reads the operator state from the store (at start, and when this controller becomes the
    /// writer: the previous leader may have changed it). Returns whether it differed.
    pub(crate) async fn load_operator(&self) -> Result<bool, StoreError> {
        let kvs = self
            .store
            .list(crate::operator::STORE_KEY.to_owned())
            .await?;
        let Some((_, json)) = kvs.iter().find(|(k, _)| k == crate::operator::STORE_KEY) else {
            return Ok(false);
        };
        let op: OperatorState = match serde_json::from_str(json) {
            Ok(op) => op,
            Err(e) => {
                warn!(error = %e, "operator state in the store does not parse: ignored");
                return Ok(false);
            }
        };
        if op == self.operator_state() {
            return Ok(false);
        }
        info!(
            drained_links = op.drained_links.len(),
            drained_switches = op.drained_switches.len(),
            frozen_switches = op.frozen_switches.len(),
            "operator state loaded from the store"
        );
        self.set_operator(op);
        Ok(true)
    }

    pub fn recent_closes(&self) -> Vec<(String, String)> {
        self.state().recent_closes.iter().cloned().collect()
    }

    /// Recomputes the plan from the current failed-link set; sessions resync the switches
    /// whose desired state changed.
    pub fn replan(&self) {
        let (failed, operator) = {
            let st = self.state();
            (st.links.failed(), st.operator.clone())
        };
        let mut switches = self.planner.plan(&failed);
        operator.mark_frozen(&mut switches, self.cfg.cookie);
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
        let [up, down, missing, miswired, drained] = self.state().links.counts();
        let m = &self.metrics;
        m.links_up.set(up as i64);
        m.links_down.set(down as i64);
        m.links_lldp_missing.set(missing as i64);
        m.links_miswired.set(miswired as i64);
        m.links_drained.set(drained as i64);
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
