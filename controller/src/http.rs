//! HTTP API and metrics (axum), and the TLS acceptor for OpenFlow.
//!
//! - `GET /healthz` → `ok`
//! - `GET /metrics` → Prometheus text
//! - `GET /api/v1/fabric` → spec, counts, failed links, leadership, store
//! - `GET /api/v1/switches` → planned and unknown switches (connected, synced, role, …)
//! - `GET /api/v1/switches/{dpid}/plan` → the switch's desired flows and groups (dpid in hex,
//!   with or without `0x`, or decimal with a `d` prefix is not needed: hex is the convention)
//! - `GET /api/v1/links` → every fabric link with its health

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use tokio::net::TcpListener;
use tracing::warn;

use crate::shared::Shared;

/// The router over the shared controller state.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        .route("/api/v1/fabric", get(fabric))
        .route("/api/v1/switches", get(switches))
        .route("/api/v1/switches/{dpid}/plan", get(switch_plan))
        .route("/api/v1/links", get(links))
        .with_state(shared)
}

/// Serves the API on `listener` until the task is aborted.
pub async fn serve(shared: Arc<Shared>, listener: TcpListener) {
    if let Err(e) = axum::serve(listener, router(shared)).await {
        warn!(error = %e, "HTTP server stopped");
    }
}

async fn metrics(State(s): State<Arc<Shared>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.metrics.render(),
    )
        .into_response()
}

async fn fabric(State(s): State<Arc<Shared>>) -> Json<serde_json::Value> {
    let plan = s.plan();
    Json(json!({
        "spec": s.cfg.fabric,
        "controller_id": s.cfg.controller_id,
        "plan_version": plan.version,
        "switches": plan.switches.len(),
        "links": s.links().len(),
        "failed_links": plan.failed.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "leadership": s.leadership(),
        "store": { "kind": s.store_kind(), "healthy": s.store_healthy() },
        "uptime_s": s.uptime().as_secs(),
        "recent_closes": s.recent_closes(),
    }))
}

async fn switches(State(s): State<Arc<Shared>>) -> Json<serde_json::Value> {
    Json(json!(s.switches()))
}

fn parse_dpid(s: &str) -> Option<u64> {
    let t = s.trim_start_matches("0x").replace(':', "");
    u64::from_str_radix(&t, 16).ok()
}

async fn switch_plan(State(s): State<Arc<Shared>>, Path(dpid): Path<String>) -> Response {
    let Some(d) = parse_dpid(&dpid) else {
        return (
            StatusCode::BAD_REQUEST,
            format!("bad dpid `{dpid}`: hex expected\n"),
        )
            .into_response();
    };
    match s.plan().switches.get(&d) {
        Some(sw) => Json(json!({
            "dpid": format!("{d:016x}"),
            "name": sw.name,
            "flows": sw.flows.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "groups": sw.groups.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "fabric_ports": sw.fabric_ports,
            "detail": &**sw,
        }))
        .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            format!("dpid {d:016x} is not in the plan\n"),
        )
            .into_response(),
    }
}

async fn links(State(s): State<Arc<Shared>>) -> Json<serde_json::Value> {
    Json(json!(s.links()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn dpid_forms() {
        assert_eq!(super::parse_dpid("0000000000000101"), Some(0x101));
        assert_eq!(super::parse_dpid("0x101"), Some(0x101));
        assert_eq!(super::parse_dpid("00:00:00:00:00:00:01:01"), Some(0x101));
        assert_eq!(super::parse_dpid("zz"), None);
    }
}
