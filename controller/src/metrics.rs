//! Prometheus metrics (prometheus-client, text exposition at `/metrics`).

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// Every controller metric. Cheap to clone (handles to shared atomics).
#[derive(Debug, Clone)]
pub struct Metrics {
    pub switches_connected: Gauge,
    pub switches_synced: Gauge,
    pub switches_unknown: Gauge,
    pub sync_duration_seconds: Histogram,
    pub flows_installed: Gauge,
    pub groups_installed: Gauge,
    pub flow_mods_sent: Counter,
    pub group_mods_sent: Counter,
    pub syncs: Counter,
    pub sync_failures: Counter,
    pub connections_closed: Counter,
    pub connections_refused: Counter,
    pub unidentified_peers: Gauge,
    pub links_up: Gauge,
    pub links_down: Gauge,
    pub links_lldp_missing: Gauge,
    pub links_miswired: Gauge,
    pub leader: Gauge,
    pub generation: Gauge<u64, AtomicU64>,
    pub store_up: Gauge,
    pub store_errors: Counter,
    pub replans: Counter,
    pub links_drained: Gauge,
    /// Operator actions carried out, by `action` ([`crate::operator::Action::label`]).
    pub operator_actions: Family<Vec<(&'static str, &'static str)>, Counter>,
    /// API write requests refused, by `reason` (disabled, missing, wrong, not_leader, unplannable).
    pub api_refused: Family<Vec<(&'static str, &'static str)>, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            switches_connected: Gauge::default(),
            switches_synced: Gauge::default(),
            switches_unknown: Gauge::default(),
            sync_duration_seconds: Histogram::new(exponential_buckets(0.0005, 2.0, 18)),
            flows_installed: Gauge::default(),
            groups_installed: Gauge::default(),
            flow_mods_sent: Counter::default(),
            group_mods_sent: Counter::default(),
            syncs: Counter::default(),
            sync_failures: Counter::default(),
            connections_closed: Counter::default(),
            connections_refused: Counter::default(),
            unidentified_peers: Gauge::default(),
            links_up: Gauge::default(),
            links_down: Gauge::default(),
            links_lldp_missing: Gauge::default(),
            links_miswired: Gauge::default(),
            leader: Gauge::default(),
            generation: Gauge::default(),
            store_up: Gauge::default(),
            store_errors: Counter::default(),
            replans: Counter::default(),
            links_drained: Gauge::default(),
            operator_actions: Family::default(),
            api_refused: Family::default(),
        }
    }
}

impl Metrics {
    /// A registry holding every metric under the `fabricflow_controller_` prefix.
    pub fn registry(&self) -> Registry {
        let mut r = Registry::with_prefix("fabricflow_controller");
        let m = self.clone();
        r.register(
            "switches_connected",
            "Switches with an identified OpenFlow connection",
            m.switches_connected,
        );
        r.register(
            "switches_synced",
            "Switches holding their desired state",
            m.switches_synced,
        );
        r.register(
            "switches_unknown",
            "Connected switches whose dpid is not in the plan",
            m.switches_unknown,
        );
        r.register(
            "sync_duration_seconds",
            "Time from dump request to barrier reply",
            m.sync_duration_seconds,
        );
        r.register(
            "flows_installed",
            "Controller flows on synced switches",
            m.flows_installed,
        );
        r.register(
            "groups_installed",
            "Controller groups on synced switches",
            m.groups_installed,
        );
        r.register(
            "flow_mods_sent",
            "FLOW_MODs sent (bundled or not)",
            m.flow_mods_sent,
        );
        r.register(
            "group_mods_sent",
            "GROUP_MODs sent (bundled or not)",
            m.group_mods_sent,
        );
        r.register("syncs", "Completed syncs", m.syncs);
        r.register("sync_failures", "Syncs the switch refused", m.sync_failures);
        r.register(
            "connections_closed",
            "Switch connections closed (any reason)",
            m.connections_closed,
        );
        r.register(
            "connections_refused",
            "Connections closed at accept because max_unidentified_peers were held",
            m.connections_refused,
        );
        r.register(
            "unidentified_peers",
            "Accepted connections not yet identified by a FEATURES_REPLY",
            m.unidentified_peers,
        );
        r.register("links_up", "Fabric links in service", m.links_up);
        r.register("links_down", "Fabric links with a port down", m.links_down);
        r.register(
            "links_lldp_missing",
            "Fabric links whose LLDP probes stopped",
            m.links_lldp_missing,
        );
        r.register(
            "links_miswired",
            "Fabric links hearing the wrong peer",
            m.links_miswired,
        );
        r.register(
            "leader",
            "1 when this controller writes to switches (leader or no HA)",
            m.leader,
        );
        r.register(
            "generation",
            "OpenFlow role generation_id in use",
            m.generation,
        );
        r.register("store_up", "1 when the store is reachable", m.store_up);
        r.register("store_errors", "Failed store operations", m.store_errors);
        r.register("replans", "Plans computed", m.replans);
        r.register(
            "links_drained",
            "Healthy fabric links the operator drained",
            m.links_drained,
        );
        for action in crate::operator::Action::LABELS {
            // Every action present from the start, so a rate() never misses the first one.
            let _ = m.operator_actions.get_or_create(&vec![("action", action)]);
        }
        r.register(
            "operator_actions",
            "Operator actions carried out through the API",
            m.operator_actions,
        );
        r.register(
            "api_refused",
            "API write requests refused (disabled, missing or wrong token, not the leader)",
            m.api_refused,
        );
        r
    }

    /// Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut s = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut s, &self.registry());
        s
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn renders_names() {
        let m = super::Metrics::default();
        m.flow_mods_sent.inc_by(3);
        m.sync_duration_seconds.observe(0.01);
        let t = m.render();
        assert!(
            t.contains("fabricflow_controller_flow_mods_sent_total 3"),
            "{t}"
        );
        assert!(
            t.contains("fabricflow_controller_sync_duration_seconds_bucket"),
            "{t}"
        );
        m.operator_actions
            .get_or_create(&vec![("action", "drain_link")])
            .inc();
        let t = m.render();
        assert!(
            t.contains("fabricflow_controller_operator_actions_total{action=\"drain_link\"} 1"),
            "{t}"
        );
        assert!(
            t.contains("fabricflow_controller_operator_actions_total{action=\"freeze\"} 0"),
            "{t}"
        );
    }
}
