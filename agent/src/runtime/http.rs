//! `/metrics` (OpenMetrics text, by prometheus-client) and `/api/v1/state` (JSON).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType::{self, Counter, Gauge, Histogram};
use tokio::sync::watch;

use super::port_stats::PortStallView;
use super::{Registry, SwitchView};
use crate::latency::LatencyHistogram;
use crate::port_stats::FitfHistogram;
use crate::runtime::emulated_cp::CpPortStatus;
use crate::session::{DropReason, PortStatus};

/// Serves until `stop` turns true.
pub async fn serve(
    listener: tokio::net::TcpListener,
    reg: Registry,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let app = router(reg);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = stop.changed().await;
        })
        .await?;
    Ok(())
}

/// What the handlers share: the switches' views and the metrics registry reading them.
#[derive(Debug, Clone)]
struct Http {
    views: Registry,
    metrics: Arc<prometheus_client::registry::Registry>,
}

/// The routes.
pub fn router(reg: Registry) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/api/v1/state", get(state))
        .with_state(Http {
            metrics: Arc::new(metrics_registry(reg.clone())),
            views: reg,
        })
}

async fn state(State(http): State<Http>) -> impl IntoResponse {
    Json(snapshot(&http.views))
}

/// The whole exposition, or only the families the `name` parameters select
/// (`/metrics?name=fabricflow_agent_p_percent`): a scraper that wants P every second need not
/// pay for every family of every switch (349 KB on 36 switches).
async fn metrics(State(http): State<Http>, Query(query): Query<Vec<(String, String)>>) -> Response {
    let rendered = if query.is_empty() {
        render(&http.metrics)
    } else {
        match select(&query) {
            Ok(families) => render(&family_registry(http.views.clone(), families)),
            Err(e) => return (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response(),
        }
    };
    match rendered {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(std::fmt::Error) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// A copy of every switch's view (empty if a writer panicked holding the lock).
fn snapshot(reg: &Registry) -> BTreeMap<String, SwitchView> {
    reg.lock().map(|m| m.clone()).unwrap_or_default()
}

/// The agent's metrics registry: one collector encoding a snapshot of `reg` at each scrape.
pub fn metrics_registry(reg: Registry) -> prometheus_client::registry::Registry {
    family_registry(reg, FAMILIES.iter().collect())
}

/// A registry encoding only `families` of `reg`.
fn family_registry(
    reg: Registry,
    families: Vec<&'static Family>,
) -> prometheus_client::registry::Registry {
    let mut r = prometheus_client::registry::Registry::default();
    r.register_collector(Box::new(Views { reg, families }));
    r
}

/// A `/metrics` query the exposition cannot answer.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MetricsQueryError {
    #[error("unknown query parameter {0:?} (only `name` selects families)")]
    UnknownParameter(String),
    #[error("no metric family named {0:?}")]
    UnknownFamily(String),
}

/// The families the query's `name` parameters select, in exposition order; a counter answers
/// to its family name and to its samples' `_total` name.
fn select(query: &[(String, String)]) -> Result<Vec<&'static Family>, MetricsQueryError> {
    let mut wanted: Vec<&'static str> = Vec::new();
    for (key, name) in query {
        if key != "name" {
            return Err(MetricsQueryError::UnknownParameter(key.clone()));
        }
        let family = FAMILIES
            .iter()
            .find(|f| {
                f.name == name
                    || (matches!(f.kind, Counter) && name.strip_suffix("_total") == Some(f.name))
            })
            .ok_or_else(|| MetricsQueryError::UnknownFamily(name.clone()))?;
        wanted.push(family.name);
    }
    Ok(FAMILIES
        .iter()
        .filter(|f| wanted.contains(&f.name))
        .collect())
}

/// The OpenMetrics text exposition of `metrics`, `# EOF` included.
pub fn render(metrics: &prometheus_client::registry::Registry) -> Result<String, std::fmt::Error> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, metrics)?;
    Ok(text)
}

/// Collects its families over every switch's view.
#[derive(Debug)]
struct Views {
    reg: Registry,
    families: Vec<&'static Family>,
}

impl Collector for Views {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let map = snapshot(&self.reg);
        for family in &self.families {
            let mut metric =
                encoder.encode_descriptor(family.name, family.help, None, family.kind)?;
            for (switch, view) in &map {
                for (labels, value) in (family.read)(view) {
                    let labels: Vec<(&str, &str)> = std::iter::once(("switch", switch.as_str()))
                        .chain(labels.iter().map(|(k, v)| (*k, v.as_str())))
                        .collect();
                    value.encode(family.kind, metric.encode_family(&labels)?)?;
                }
            }
        }
        Ok(())
    }
}

/// A sample's value.
#[derive(Debug, Clone, Copy)]
enum Value {
    Int(u64),
    Real(f64),
    Fitf(FitfHistogram),
    Latency(LatencyHistogram),
}

impl Value {
    /// Encodes the sample as a `kind` metric (counters get their `_total` suffix here).
    fn encode(
        self,
        kind: MetricType,
        mut encoder: prometheus_client::encoding::MetricEncoder<'_>,
    ) -> Result<(), std::fmt::Error> {
        match (kind, self) {
            (_, Value::Fitf(h)) => encoder
                .encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                    h.sum,
                    h.count,
                    &h.bounds(),
                    None,
                ),
            (_, Value::Latency(h)) => encoder
                .encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                    h.sum_s,
                    h.count,
                    &h.bounds(),
                    None,
                ),
            (MetricType::Counter, Value::Int(n)) => ConstCounter::new(n).encode(encoder),
            (MetricType::Counter, Value::Real(x)) => ConstCounter::new(x).encode(encoder),
            // Gauges are i64 in the encoder (it refuses u64::MAX): saturate.
            (_, Value::Int(n)) => {
                ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX)).encode(encoder)
            }
            (_, Value::Real(x)) => ConstGauge::new(x).encode(encoder),
        }
    }
}

macro_rules! value_from {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for Value {
            fn from(x: $t) -> Self {
                Value::$v(x.into())
            }
        }
    )*};
}
value_from!(bool => Int, u8 => Int, u16 => Int, u32 => Int, u64 => Int, f64 => Real);

/// One series of a family: its labels after `switch`, and its value.
type Series = (Vec<(&'static str, String)>, Value);

/// A metric family: name (a counter's without the `_total` the encoder appends to samples),
/// help, type, and how to read its series from one switch's view.
#[derive(Debug)]
struct Family {
    name: &'static str,
    help: &'static str,
    kind: MetricType,
    read: fn(&SwitchView) -> Vec<Series>,
}

/// A [`Family`] (a table row).
const fn family(
    kind: MetricType,
    name: &'static str,
    help: &'static str,
    read: fn(&SwitchView) -> Vec<Series>,
) -> Family {
    Family {
        name,
        help,
        kind,
        read,
    }
}

/// A per-switch series (only the `switch` label).
fn per_switch(value: impl Into<Value>) -> Vec<Series> {
    vec![(Vec::new(), value.into())]
}

/// A series per fabric port of the session (`port`).
fn per_fabric_port<T: Into<Value>>(v: &SwitchView, f: fn(&PortStatus) -> T) -> Vec<Series> {
    v.session
        .ports
        .iter()
        .map(|p| (vec![("port", p.port.to_string())], f(p).into()))
        .collect()
}

/// A series per port of the emulated CP (`port`, `interface`); none without a CP.
fn per_cp_port<T: Into<Value>>(v: &SwitchView, f: fn(&CpPortStatus) -> T) -> Vec<Series> {
    v.emulated_cp
        .iter()
        .flat_map(|c| &c.ports)
        .map(|p| {
            (
                vec![
                    ("port", p.port.to_string()),
                    ("interface", p.ifname.clone()),
                ],
                f(p).into(),
            )
        })
        .collect()
}

/// A series per port with stall counters (`port`, `role`, `direction`: the live switch sees
/// only its own egress, `tx`).
fn per_stall_port<T: Into<Value>>(v: &SwitchView, f: fn(&PortStallView) -> T) -> Vec<Series> {
    v.port_stall
        .iter()
        .map(|p| {
            (
                vec![
                    ("port", p.port.port.to_string()),
                    ("role", p.port.role.clone()),
                    ("direction", "tx".to_owned()),
                ],
                f(p).into(),
            )
        })
        .collect()
}

/// A series per port in the switch's OpenFlow port statistics (`port`).
fn per_of_port(v: &SwitchView, f: fn(&crate::port_stats::OfPortRate) -> Value) -> Vec<Series> {
    v.session
        .port_rates
        .iter()
        .map(|(port, r)| (vec![("port", port.to_string())], f(r)))
        .collect()
}

/// Nanoseconds as seconds.
#[allow(clippy::cast_precision_loss)] // a counter's seconds: f64's 52 bits hold 142 years of ns
fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Every family, in exposition order.
static FAMILIES: [Family; 34] = [
    family(
        Gauge,
        "fabricflow_agent_connected",
        "1 while the switch connection is up.",
        |v| per_switch(v.session.connected),
    ),
    family(
        Gauge,
        "fabricflow_agent_plan_ready",
        "1 once the controller's plan is learned (it may have no decision point).",
        |v| per_switch(v.session.plan_ready),
    ),
    family(
        Gauge,
        "fabricflow_agent_frozen",
        "1 while the operator has frozen the switch's weights (controller freeze marker).",
        |v| per_switch(v.session.frozen),
    ),
    family(
        Gauge,
        "fabricflow_agent_p_percent",
        "P(port): probability of minimal routing, percent.",
        |v| per_fabric_port(v, |p| p.p_percent),
    ),
    family(
        Gauge,
        "fabricflow_agent_last_fb",
        "Last QntzFb received per fabric port.",
        |v| per_fabric_port(v, |p| p.last_fb),
    ),
    family(
        Gauge,
        "fabricflow_agent_fb_avg",
        "Fb_avg over the fabric ports (feedback comparison).",
        |v| per_switch(v.session.fb_avg),
    ),
    family(
        Gauge,
        "fabricflow_agent_group_weight",
        "Installed bucket weight per decision point.",
        |v| {
            v.session
                .groups
                .iter()
                .flat_map(|g| {
                    g.weights.iter().enumerate().map(|(bucket, w)| {
                        (
                            vec![
                                ("group", g.group_id.to_string()),
                                ("bucket", bucket.to_string()),
                            ],
                            Value::from(*w),
                        )
                    })
                })
                .collect()
        },
    ),
    family(
        Counter,
        "fabricflow_agent_cnm_received",
        "CNMs accepted and charged to a fabric port.",
        |v| per_switch(v.session.counters.cnm_received),
    ),
    family(
        Counter,
        "fabricflow_agent_cnm_relayed",
        "CNMs received that no decision point of this switch chose the route of, relayed towards the culprit's source.",
        |v| per_switch(v.session.counters.cnm_relayed),
    ),
    family(
        Counter,
        "fabricflow_agent_cnm_generated",
        "CNMs generated by the emulated CP and injected.",
        |v| per_switch(v.session.counters.cnm_generated),
    ),
    family(
        Counter,
        "fabricflow_agent_cnm_sent_interface",
        "CNMs (generated or relayed) the agent wrote on the route port's interface instead of a PACKET_OUT.",
        |v| per_switch(v.session.counters.cnm_sent_interface),
    ),
    family(
        Counter,
        "fabricflow_agent_cnm_read_interface",
        "CNM frames the agent read from a port's interface (the plan drops CNMs there).",
        |v| per_switch(v.session.counters.cnm_read_interface),
    ),
    family(
        Counter,
        "fabricflow_agent_cnm_send_errors",
        "CNMs for a port's interface that could not be written.",
        |v| per_switch(v.session.counters.cnm_send_errors),
    ),
    family(
        Counter,
        "fabricflow_agent_policy_events",
        "QCN-SW policy events per switch: P's decreases and increases (each step), and the CNMs and increases that left P as it was, by reason.",
        |v| {
            v.session
                .policy
                .moves()
                .iter()
                .map(|&(event, n)| (vec![("event", event.to_owned())], Value::from(n)))
                .collect()
        },
    ),
    family(
        Counter,
        "fabricflow_agent_group_mods",
        "GROUP_MOD messages sent.",
        |v| per_switch(v.session.counters.group_mods_sent),
    ),
    family(
        Counter,
        "fabricflow_agent_group_mod_errors",
        "GROUP_MODs refused by the switch.",
        |v| per_switch(v.session.counters.group_mod_errors),
    ),
    family(
        Histogram,
        "fabricflow_agent_cnm_to_group_mod_seconds",
        concat!(
            "Per GROUP_MOD answering a received CNM: from reading the CNM's packet-in to having ",
            "written the GROUP_MOD (a write deferred by the minimum update interval included)."
        ),
        |v| per_switch(Value::Latency(v.cnm_to_group_mod)),
    ),
    family(
        Histogram,
        "fabricflow_agent_cnm_to_group_mod_confirmed_seconds",
        concat!(
            "Per GROUP_MOD answering a received CNM: from reading the CNM's packet-in to reading ",
            "the switch's reply to the barrier behind the GROUP_MOD (the switch has processed it)."
        ),
        |v| per_switch(Value::Latency(v.session.cnm_to_group_mod_confirmed)),
    ),
    family(
        Counter,
        "fabricflow_agent_connects",
        "Connections established.",
        |v| per_switch(v.session.counters.connects),
    ),
    family(
        Counter,
        "fabricflow_agent_plan_reads",
        "Plan reads (group desc + flows) completed.",
        |v| per_switch(v.session.counters.plan_reads),
    ),
    family(
        Counter,
        "fabricflow_agent_plan_changes",
        "Plan reads whose structure changed.",
        |v| per_switch(v.session.counters.plan_changes),
    ),
    family(
        Counter,
        "fabricflow_agent_cnm_dropped",
        "Packet-ins dropped, by reason.",
        |v| {
            DropReason::ALL
                .iter()
                .map(|r| {
                    let n = v.session.counters.cnm_dropped.get(r).copied().unwrap_or(0);
                    (vec![("reason", r.label().to_owned())], Value::from(n))
                })
                .collect()
        },
    ),
    family(
        Gauge,
        "fabricflow_agent_queue_backlog_bytes",
        "Egress qdisc backlog per fabric port (emulated CP).",
        |v| per_cp_port(v, |p| p.backlog_bytes),
    ),
    family(
        Counter,
        "fabricflow_agent_queue_drops",
        "Packets dropped by the egress qdisc per fabric port (emulated CP; wraps at 2^32).",
        |v| per_cp_port(v, |p| p.qdisc_drops),
    ),
    family(
        Counter,
        "fabricflow_agent_cp_cnms",
        "CNMs generated per congested port (emulated CP).",
        |v| per_cp_port(v, |p| p.cnms),
    ),
    family(
        Counter,
        "fabricflow_agent_cp_samples_few_sources",
        concat!(
            "Congested samples without a CNM: fewer than cp.min_sources hosts sent data through ",
            "the port (emulated CP)."
        ),
        |v| per_cp_port(v, |p| p.samples_few_sources),
    ),
    family(
        Counter,
        "fabricflow_agent_cp_samples_drop_scaled",
        concat!(
            "Congested samples whose QntzFb the port's drop excess over its loaded peers raised ",
            "(runtime.emulated_cp.drop_scaled_fb)."
        ),
        |v| per_cp_port(v, |p| p.samples_drop_scaled),
    ),
    family(
        Counter,
        "fabricflow_agent_port_stall_seconds",
        concat!(
            "Time the port's egress qdisc held a backlog, sampled every ",
            "runtime.port_stall.poll_period_us. Backlog time, not InfiniBand XmitWait."
        ),
        |v| per_stall_port(v, |p| seconds(p.stall.backlog_ns)),
    ),
    family(
        Histogram,
        "fabricflow_agent_port_fitf",
        "Forced idle time fraction per interval (runtime.port_stall.interval_us): backlog time / interval.",
        |v| per_stall_port(v, |p| Value::Fitf(p.stall.fitf)),
    ),
    family(
        Counter,
        "fabricflow_agent_port_stall_intervals",
        "Intervals with backlog time > 0.",
        |v| per_stall_port(v, |p| p.stall.nonzero_intervals),
    ),
    family(
        Counter,
        "fabricflow_agent_port_intervals",
        "Intervals observed.",
        |v| per_stall_port(v, |p| p.stall.intervals),
    ),
    family(
        Counter,
        "fabricflow_agent_port_qdisc_tx_bytes",
        "Octets the port's egress qdisc sent.",
        |v| per_stall_port(v, |p| p.stall.tx_bytes),
    ),
    family(
        Counter,
        "fabricflow_agent_port_qdisc_drops",
        "Packets the port's egress qdisc dropped (64-bit: the kernel's 32-bit counter unwrapped).",
        |v| per_stall_port(v, |p| p.stall.drops),
    ),
    family(
        Gauge,
        "fabricflow_agent_port_tx_bits_per_second",
        concat!(
            "Transmit rate over the last two OpenFlow port statistics, the switch's own ",
            "duration fields as the time between them."
        ),
        |v| per_of_port(v, |r| Value::Real(r.tx_bps)),
    ),
];

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::runtime::emulated_cp::CpStatus;
    use crate::session::{GroupStatus, PortStatus, SessionStatus};

    /// Two switches: s0 connected with everything set, s1 idle without an emulated CP.
    fn sample() -> BTreeMap<String, SwitchView> {
        let mut s0 = SwitchView {
            session: SessionStatus {
                connected: true,
                plan_ready: true,
                frozen: true,
                ports: vec![
                    PortStatus {
                        port: 3,
                        p_percent: 50.5,
                        last_fb: 63,
                    },
                    PortStatus {
                        port: 4,
                        p_percent: 100.0,
                        last_fb: 0,
                    },
                ],
                groups: vec![GroupStatus {
                    group_id: 7,
                    minimal_port: 3,
                    weights: vec![60, 40],
                    pending: false,
                }],
                fb_avg: 31.5,
                ..SessionStatus::default()
            },
            ..SwitchView::default()
        };
        let c = &mut s0.session.counters;
        c.cnm_received = 21;
        c.cnm_relayed = 28;
        c.cnm_generated = 22;
        c.cnm_sent_interface = 31;
        c.cnm_read_interface = 32;
        c.cnm_send_errors = 33;
        c.group_mods_sent = 23;
        c.group_mod_errors = 24;
        c.connects = 25;
        c.plan_reads = 26;
        c.plan_changes = 27;
        c.cnm_dropped.insert(DropReason::Malformed, 2);
        let pc = &mut s0.session.policy;
        pc.decreases = 41;
        pc.increases = 42;
        pc.dead_band = 43;
        pc.rises_held = 44;
        pc.cuts_held_off = 45;
        pc.cuts_held_by_yield = 46;
        pc.rises_held_by_yield = 47;
        pc.yield_windows = 48;
        pc.yield_ratios = 49;
        s0.emulated_cp = Some(CpStatus {
            ports: vec![CpPortStatus {
                port: 6,
                ifname: "s0-eth6".to_owned(),
                backlog_bytes: 7_570,
                qdisc_drops: 9,
                cnms: 11,
                samples_few_sources: 13,
                samples_drop_scaled: 17,
                ..CpPortStatus::default()
            }],
            ..CpStatus::default()
        });
        // Port 1: a host port stalled for 1.5 s, 2 of 3 intervals non-zero (FITF 0, 0.5, 1).
        let mut stall = crate::port_stats::PortStall::default();
        stall.backlog_ns = 1_500_000_000;
        stall.tx_bytes = 30_000;
        stall.drops = 5;
        stall.intervals = 3;
        stall.nonzero_intervals = 2;
        for f in [0.0, 0.5, 1.0] {
            stall.fitf.observe(f);
        }
        s0.port_stall = vec![PortStallView {
            port: crate::runtime::port_stats::WatchedPort {
                switch: "s0".to_owned(),
                port: 1,
                role: "host".to_owned(),
                interface: "s0-eth1".to_owned(),
                rate_mbps: None,
            },
            stall,
        }];
        // Two CNMs answered: in 40 µs and, deferred, in 3 ms.
        s0.cnm_to_group_mod.observe_ns(40_000);
        s0.cnm_to_group_mod.observe_ns(3_000_000);
        let mut rate = crate::port_stats::OfPortRate::default();
        rate.observe(1, 0, 0, 0);
        rate.observe(2, 0, 625_000, 0);
        s0.session.port_rates.insert(1, rate);
        [
            ("s0".to_owned(), s0),
            ("s1".to_owned(), SwitchView::default()),
        ]
        .into()
    }

    fn registry(map: BTreeMap<String, SwitchView>) -> Registry {
        Arc::new(Mutex::new(map))
    }

    /// The whole exposition, line by line: sample names (counters with `_total`), label names
    /// and values are what the harness (mininet/, tests/) and the docs read.
    #[test]
    fn renders_the_exact_exposition() {
        let text = render(&metrics_registry(registry(sample()))).unwrap();
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            EXPECTED.lines().collect::<Vec<_>>()
        );
    }

    /// The collector reads the views at each scrape, not when it is registered.
    #[test]
    fn reads_the_views_at_scrape_time() {
        let reg = registry(BTreeMap::new());
        let metrics = metrics_registry(reg.clone());
        assert!(!render(&metrics)
            .unwrap()
            .contains("fabricflow_agent_connected{"));
        crate::runtime::publish(&reg, "s9", |v| v.session.connected = true);
        let text = render(&metrics).unwrap();
        assert!(
            text.contains("\nfabricflow_agent_connected{switch=\"s9\"} 1\n"),
            "{text}"
        );
    }

    /// A gauge the encoder would refuse (u64::MAX) saturates instead of failing the scrape.
    #[test]
    fn a_huge_gauge_saturates() {
        let mut map = sample();
        if let Some(cp) = map.get_mut("s0").and_then(|v| v.emulated_cp.as_mut()) {
            cp.ports.iter_mut().for_each(|p| p.backlog_bytes = u64::MAX);
        }
        let text = render(&metrics_registry(registry(map))).unwrap();
        assert!(text.contains(
            "\nfabricflow_agent_queue_backlog_bytes{switch=\"s0\",port=\"6\",interface=\"s0-eth6\"} 9223372036854775807\n"
        ));
        assert!(text.ends_with("# EOF\n"));
    }

    /// The raw HTTP/1.0 responses of a server on [`sample`] to a GET of each path in turn.
    async fn get(paths: &[&str]) -> Vec<String> {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop_tx, stop) = watch::channel(false);
        let server = tokio::spawn(serve(listener, registry(sample()), stop));
        let mut responses = Vec::new();
        for path in paths {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut response = String::new();
            s.read_to_string(&mut response).await.unwrap();
            responses.push(response);
        }
        stop_tx.send(true).unwrap();
        server.await.unwrap().unwrap();
        responses
    }

    /// Over HTTP: OpenMetrics content type and the exposition.
    #[tokio::test]
    async fn serves_openmetrics() {
        let responses = get(&["/metrics"]).await;
        let (head, body) = responses[0].split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.0 200 OK\r\n"), "{head}");
        assert!(
            head.to_ascii_lowercase().contains(
                "\r\ncontent-type: application/openmetrics-text; version=1.0.0; charset=utf-8"
            ),
            "{head}"
        );
        assert_eq!(body, EXPECTED);
    }

    /// A scrape naming families gets those, in exposition order, a counter by either name.
    #[test]
    fn a_query_selects_families() {
        let q = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let names = |r: Result<Vec<&'static Family>, _>| -> Vec<&str> {
            r.unwrap().iter().map(|f| f.name).collect()
        };
        assert_eq!(
            names(select(&q(&[
                ("name", "fabricflow_agent_p_percent"),
                ("name", "fabricflow_agent_connected"),
                ("name", "fabricflow_agent_cnm_generated_total"),
            ]))),
            [
                "fabricflow_agent_connected",
                "fabricflow_agent_p_percent",
                "fabricflow_agent_cnm_generated"
            ]
        );
        assert_eq!(
            names(select(&q(&[("name", "fabricflow_agent_cnm_generated")]))),
            ["fabricflow_agent_cnm_generated"]
        );
        assert_eq!(
            select(&q(&[("name", "fabricflow_agent_p_percent_total")])).unwrap_err(),
            MetricsQueryError::UnknownFamily("fabricflow_agent_p_percent_total".into())
        );
        assert_eq!(
            select(&q(&[("match[]", "up")])).unwrap_err(),
            MetricsQueryError::UnknownParameter("match[]".into())
        );
    }

    /// The selected families' lines are exactly the whole exposition's lines of those families.
    #[test]
    fn a_selected_family_renders_as_in_the_whole_exposition() {
        let families = select(&[("name".into(), "fabricflow_agent_p_percent".into())]).unwrap();
        let text = render(&family_registry(registry(sample()), families)).unwrap();
        let expected: Vec<&str> = EXPECTED
            .lines()
            .filter(|l| l.contains("fabricflow_agent_p_percent") || *l == "# EOF")
            .collect();
        assert_eq!(text.lines().collect::<Vec<_>>(), expected);
        assert_eq!(expected.len(), 5, "HELP, TYPE, two ports, EOF");
    }

    /// Over HTTP: a query selects, a bad one is a 400 naming what is wrong.
    #[tokio::test]
    async fn serves_selected_families_and_refuses_unknown_ones() {
        let responses = get(&[
            "/metrics?name=fabricflow_agent_p_percent",
            "/metrics?name=fabricflow_agent_nonesuch",
        ])
        .await;
        let (ok, bad) = (&responses[0], &responses[1]);
        let (head, body) = ok.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.0 200 OK\r\n"), "{head}");
        assert!(body.contains("\nfabricflow_agent_p_percent{switch=\"s0\",port=\"3\"} 50.5\n"));
        assert!(!body.contains("fabricflow_agent_connected"), "{body}");
        let (head, body) = bad.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.0 400 "), "{head}");
        assert_eq!(
            body,
            "no metric family named \"fabricflow_agent_nonesuch\"\n"
        );
    }

    const EXPECTED: &str = r#"# HELP fabricflow_agent_connected 1 while the switch connection is up.
# TYPE fabricflow_agent_connected gauge
fabricflow_agent_connected{switch="s0"} 1
fabricflow_agent_connected{switch="s1"} 0
# HELP fabricflow_agent_plan_ready 1 once the controller's plan is learned (it may have no decision point).
# TYPE fabricflow_agent_plan_ready gauge
fabricflow_agent_plan_ready{switch="s0"} 1
fabricflow_agent_plan_ready{switch="s1"} 0
# HELP fabricflow_agent_frozen 1 while the operator has frozen the switch's weights (controller freeze marker).
# TYPE fabricflow_agent_frozen gauge
fabricflow_agent_frozen{switch="s0"} 1
fabricflow_agent_frozen{switch="s1"} 0
# HELP fabricflow_agent_p_percent P(port): probability of minimal routing, percent.
# TYPE fabricflow_agent_p_percent gauge
fabricflow_agent_p_percent{switch="s0",port="3"} 50.5
fabricflow_agent_p_percent{switch="s0",port="4"} 100.0
# HELP fabricflow_agent_last_fb Last QntzFb received per fabric port.
# TYPE fabricflow_agent_last_fb gauge
fabricflow_agent_last_fb{switch="s0",port="3"} 63
fabricflow_agent_last_fb{switch="s0",port="4"} 0
# HELP fabricflow_agent_fb_avg Fb_avg over the fabric ports (feedback comparison).
# TYPE fabricflow_agent_fb_avg gauge
fabricflow_agent_fb_avg{switch="s0"} 31.5
fabricflow_agent_fb_avg{switch="s1"} 0.0
# HELP fabricflow_agent_group_weight Installed bucket weight per decision point.
# TYPE fabricflow_agent_group_weight gauge
fabricflow_agent_group_weight{switch="s0",group="7",bucket="0"} 60
fabricflow_agent_group_weight{switch="s0",group="7",bucket="1"} 40
# HELP fabricflow_agent_cnm_received CNMs accepted and charged to a fabric port.
# TYPE fabricflow_agent_cnm_received counter
fabricflow_agent_cnm_received_total{switch="s0"} 21
fabricflow_agent_cnm_received_total{switch="s1"} 0
# HELP fabricflow_agent_cnm_relayed CNMs received that no decision point of this switch chose the route of, relayed towards the culprit's source.
# TYPE fabricflow_agent_cnm_relayed counter
fabricflow_agent_cnm_relayed_total{switch="s0"} 28
fabricflow_agent_cnm_relayed_total{switch="s1"} 0
# HELP fabricflow_agent_cnm_generated CNMs generated by the emulated CP and injected.
# TYPE fabricflow_agent_cnm_generated counter
fabricflow_agent_cnm_generated_total{switch="s0"} 22
fabricflow_agent_cnm_generated_total{switch="s1"} 0
# HELP fabricflow_agent_cnm_sent_interface CNMs (generated or relayed) the agent wrote on the route port's interface instead of a PACKET_OUT.
# TYPE fabricflow_agent_cnm_sent_interface counter
fabricflow_agent_cnm_sent_interface_total{switch="s0"} 31
fabricflow_agent_cnm_sent_interface_total{switch="s1"} 0
# HELP fabricflow_agent_cnm_read_interface CNM frames the agent read from a port's interface (the plan drops CNMs there).
# TYPE fabricflow_agent_cnm_read_interface counter
fabricflow_agent_cnm_read_interface_total{switch="s0"} 32
fabricflow_agent_cnm_read_interface_total{switch="s1"} 0
# HELP fabricflow_agent_cnm_send_errors CNMs for a port's interface that could not be written.
# TYPE fabricflow_agent_cnm_send_errors counter
fabricflow_agent_cnm_send_errors_total{switch="s0"} 33
fabricflow_agent_cnm_send_errors_total{switch="s1"} 0
# HELP fabricflow_agent_policy_events QCN-SW policy events per switch: P's decreases and increases (each step), and the CNMs and increases that left P as it was, by reason.
# TYPE fabricflow_agent_policy_events counter
fabricflow_agent_policy_events_total{switch="s0",event="decrease"} 41
fabricflow_agent_policy_events_total{switch="s0",event="increase"} 42
fabricflow_agent_policy_events_total{switch="s0",event="dead_band"} 43
fabricflow_agent_policy_events_total{switch="s0",event="rise_held"} 44
fabricflow_agent_policy_events_total{switch="s0",event="cut_held_off"} 45
fabricflow_agent_policy_events_total{switch="s0",event="cut_held_by_yield"} 46
fabricflow_agent_policy_events_total{switch="s0",event="rise_held_by_yield"} 47
fabricflow_agent_policy_events_total{switch="s0",event="yield_window"} 48
fabricflow_agent_policy_events_total{switch="s0",event="yield_ratio"} 49
fabricflow_agent_policy_events_total{switch="s1",event="decrease"} 0
fabricflow_agent_policy_events_total{switch="s1",event="increase"} 0
fabricflow_agent_policy_events_total{switch="s1",event="dead_band"} 0
fabricflow_agent_policy_events_total{switch="s1",event="rise_held"} 0
fabricflow_agent_policy_events_total{switch="s1",event="cut_held_off"} 0
fabricflow_agent_policy_events_total{switch="s1",event="cut_held_by_yield"} 0
fabricflow_agent_policy_events_total{switch="s1",event="rise_held_by_yield"} 0
fabricflow_agent_policy_events_total{switch="s1",event="yield_window"} 0
fabricflow_agent_policy_events_total{switch="s1",event="yield_ratio"} 0
# HELP fabricflow_agent_group_mods GROUP_MOD messages sent.
# TYPE fabricflow_agent_group_mods counter
fabricflow_agent_group_mods_total{switch="s0"} 23
fabricflow_agent_group_mods_total{switch="s1"} 0
# HELP fabricflow_agent_group_mod_errors GROUP_MODs refused by the switch.
# TYPE fabricflow_agent_group_mod_errors counter
fabricflow_agent_group_mod_errors_total{switch="s0"} 24
fabricflow_agent_group_mod_errors_total{switch="s1"} 0
# HELP fabricflow_agent_cnm_to_group_mod_seconds Per GROUP_MOD answering a received CNM: from reading the CNM's packet-in to having written the GROUP_MOD (a write deferred by the minimum update interval included).
# TYPE fabricflow_agent_cnm_to_group_mod_seconds histogram
fabricflow_agent_cnm_to_group_mod_seconds_sum{switch="s0"} 0.00304
fabricflow_agent_cnm_to_group_mod_seconds_count{switch="s0"} 2
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.00001",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.000025",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.00005",switch="s0"} 1
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.0001",switch="s0"} 1
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.00025",switch="s0"} 1
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.0005",switch="s0"} 1
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.001",switch="s0"} 1
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.0025",switch="s0"} 1
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.005",switch="s0"} 2
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.01",switch="s0"} 2
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.025",switch="s0"} 2
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.05",switch="s0"} 2
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.1",switch="s0"} 2
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.25",switch="s0"} 2
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="1.0",switch="s0"} 2
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="+Inf",switch="s0"} 2
fabricflow_agent_cnm_to_group_mod_seconds_sum{switch="s1"} 0.0
fabricflow_agent_cnm_to_group_mod_seconds_count{switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.00001",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.000025",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.00005",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.0001",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.00025",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.0005",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.001",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.0025",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.005",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.01",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.025",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.05",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.1",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="0.25",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="1.0",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_seconds_bucket{le="+Inf",switch="s1"} 0
# HELP fabricflow_agent_cnm_to_group_mod_confirmed_seconds Per GROUP_MOD answering a received CNM: from reading the CNM's packet-in to reading the switch's reply to the barrier behind the GROUP_MOD (the switch has processed it).
# TYPE fabricflow_agent_cnm_to_group_mod_confirmed_seconds histogram
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_sum{switch="s0"} 0.0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_count{switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.00001",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.000025",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.00005",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.0001",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.00025",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.0005",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.001",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.0025",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.005",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.01",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.025",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.05",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.1",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.25",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="1.0",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="+Inf",switch="s0"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_sum{switch="s1"} 0.0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_count{switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.00001",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.000025",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.00005",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.0001",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.00025",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.0005",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.001",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.0025",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.005",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.01",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.025",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.05",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.1",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="0.25",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="1.0",switch="s1"} 0
fabricflow_agent_cnm_to_group_mod_confirmed_seconds_bucket{le="+Inf",switch="s1"} 0
# HELP fabricflow_agent_connects Connections established.
# TYPE fabricflow_agent_connects counter
fabricflow_agent_connects_total{switch="s0"} 25
fabricflow_agent_connects_total{switch="s1"} 0
# HELP fabricflow_agent_plan_reads Plan reads (group desc + flows) completed.
# TYPE fabricflow_agent_plan_reads counter
fabricflow_agent_plan_reads_total{switch="s0"} 26
fabricflow_agent_plan_reads_total{switch="s1"} 0
# HELP fabricflow_agent_plan_changes Plan reads whose structure changed.
# TYPE fabricflow_agent_plan_changes counter
fabricflow_agent_plan_changes_total{switch="s0"} 27
fabricflow_agent_plan_changes_total{switch="s1"} 0
# HELP fabricflow_agent_cnm_dropped Packet-ins dropped, by reason.
# TYPE fabricflow_agent_cnm_dropped counter
fabricflow_agent_cnm_dropped_total{switch="s0",reason="no_plan"} 0
fabricflow_agent_cnm_dropped_total{switch="s0",reason="no_in_port"} 0
fabricflow_agent_cnm_dropped_total{switch="s0",reason="not_fabric_port"} 0
fabricflow_agent_cnm_dropped_total{switch="s0",reason="not_cnm"} 0
fabricflow_agent_cnm_dropped_total{switch="s0",reason="truncated"} 0
fabricflow_agent_cnm_dropped_total{switch="s0",reason="malformed"} 2
fabricflow_agent_cnm_dropped_total{switch="s0",reason="relay_budget_spent"} 0
fabricflow_agent_cnm_dropped_total{switch="s1",reason="no_plan"} 0
fabricflow_agent_cnm_dropped_total{switch="s1",reason="no_in_port"} 0
fabricflow_agent_cnm_dropped_total{switch="s1",reason="not_fabric_port"} 0
fabricflow_agent_cnm_dropped_total{switch="s1",reason="not_cnm"} 0
fabricflow_agent_cnm_dropped_total{switch="s1",reason="truncated"} 0
fabricflow_agent_cnm_dropped_total{switch="s1",reason="malformed"} 0
fabricflow_agent_cnm_dropped_total{switch="s1",reason="relay_budget_spent"} 0
# HELP fabricflow_agent_queue_backlog_bytes Egress qdisc backlog per fabric port (emulated CP).
# TYPE fabricflow_agent_queue_backlog_bytes gauge
fabricflow_agent_queue_backlog_bytes{switch="s0",port="6",interface="s0-eth6"} 7570
# HELP fabricflow_agent_queue_drops Packets dropped by the egress qdisc per fabric port (emulated CP; wraps at 2^32).
# TYPE fabricflow_agent_queue_drops counter
fabricflow_agent_queue_drops_total{switch="s0",port="6",interface="s0-eth6"} 9
# HELP fabricflow_agent_cp_cnms CNMs generated per congested port (emulated CP).
# TYPE fabricflow_agent_cp_cnms counter
fabricflow_agent_cp_cnms_total{switch="s0",port="6",interface="s0-eth6"} 11
# HELP fabricflow_agent_cp_samples_few_sources Congested samples without a CNM: fewer than cp.min_sources hosts sent data through the port (emulated CP).
# TYPE fabricflow_agent_cp_samples_few_sources counter
fabricflow_agent_cp_samples_few_sources_total{switch="s0",port="6",interface="s0-eth6"} 13
# HELP fabricflow_agent_cp_samples_drop_scaled Congested samples whose QntzFb the port's drop excess over its loaded peers raised (runtime.emulated_cp.drop_scaled_fb).
# TYPE fabricflow_agent_cp_samples_drop_scaled counter
fabricflow_agent_cp_samples_drop_scaled_total{switch="s0",port="6",interface="s0-eth6"} 17
# HELP fabricflow_agent_port_stall_seconds Time the port's egress qdisc held a backlog, sampled every runtime.port_stall.poll_period_us. Backlog time, not InfiniBand XmitWait.
# TYPE fabricflow_agent_port_stall_seconds counter
fabricflow_agent_port_stall_seconds_total{switch="s0",port="1",role="host",direction="tx"} 1.5
# HELP fabricflow_agent_port_fitf Forced idle time fraction per interval (runtime.port_stall.interval_us): backlog time / interval.
# TYPE fabricflow_agent_port_fitf histogram
fabricflow_agent_port_fitf_sum{switch="s0",port="1",role="host",direction="tx"} 1.5
fabricflow_agent_port_fitf_count{switch="s0",port="1",role="host",direction="tx"} 3
fabricflow_agent_port_fitf_bucket{le="0.0",switch="s0",port="1",role="host",direction="tx"} 1
fabricflow_agent_port_fitf_bucket{le="0.01",switch="s0",port="1",role="host",direction="tx"} 1
fabricflow_agent_port_fitf_bucket{le="0.05",switch="s0",port="1",role="host",direction="tx"} 1
fabricflow_agent_port_fitf_bucket{le="0.1",switch="s0",port="1",role="host",direction="tx"} 1
fabricflow_agent_port_fitf_bucket{le="0.2",switch="s0",port="1",role="host",direction="tx"} 1
fabricflow_agent_port_fitf_bucket{le="0.4",switch="s0",port="1",role="host",direction="tx"} 1
fabricflow_agent_port_fitf_bucket{le="0.6",switch="s0",port="1",role="host",direction="tx"} 2
fabricflow_agent_port_fitf_bucket{le="0.8",switch="s0",port="1",role="host",direction="tx"} 2
fabricflow_agent_port_fitf_bucket{le="1.0",switch="s0",port="1",role="host",direction="tx"} 3
fabricflow_agent_port_fitf_bucket{le="+Inf",switch="s0",port="1",role="host",direction="tx"} 3
# HELP fabricflow_agent_port_stall_intervals Intervals with backlog time > 0.
# TYPE fabricflow_agent_port_stall_intervals counter
fabricflow_agent_port_stall_intervals_total{switch="s0",port="1",role="host",direction="tx"} 2
# HELP fabricflow_agent_port_intervals Intervals observed.
# TYPE fabricflow_agent_port_intervals counter
fabricflow_agent_port_intervals_total{switch="s0",port="1",role="host",direction="tx"} 3
# HELP fabricflow_agent_port_qdisc_tx_bytes Octets the port's egress qdisc sent.
# TYPE fabricflow_agent_port_qdisc_tx_bytes counter
fabricflow_agent_port_qdisc_tx_bytes_total{switch="s0",port="1",role="host",direction="tx"} 30000
# HELP fabricflow_agent_port_qdisc_drops Packets the port's egress qdisc dropped (64-bit: the kernel's 32-bit counter unwrapped).
# TYPE fabricflow_agent_port_qdisc_drops counter
fabricflow_agent_port_qdisc_drops_total{switch="s0",port="1",role="host",direction="tx"} 5
# HELP fabricflow_agent_port_tx_bits_per_second Transmit rate over the last two OpenFlow port statistics, the switch's own duration fields as the time between them.
# TYPE fabricflow_agent_port_tx_bits_per_second gauge
fabricflow_agent_port_tx_bits_per_second{switch="s0",port="1"} 5000000.0
# EOF
"#;
}
