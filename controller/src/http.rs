//! HTTP API and metrics (axum), and the TLS acceptor for OpenFlow.
//!
//! - `GET /healthz` → `ok`
//! - `GET /metrics` → Prometheus text
//! - `GET /api/v1/fabric` → spec, counts, failed links, leadership, store
//! - `GET /api/v1/switches` → planned and unknown switches (connected, synced, role, …)
//! - `GET /api/v1/switches/{dpid}/plan` → the switch's desired flows and groups (dpid in hex,
//!   with or without `0x`, or decimal with a `d` prefix is not needed: hex is the convention)
//! - `GET /api/v1/links` → every fabric link with its health (`up`, `down`, `lldp_missing`,
//!   `miswired`, `drained`) and whether the operator drained it
//! - `GET /api/v1/operator` → the operator's drained links and switches, frozen switches
//! - `POST /api/v1/phase?algorithm=balanced|greedy|dmodk` with a phase's flows
//!   (`{"flows": [{"src": HOST, "dst": HOST, "weight": W?}]}`) → each flow's path and SAA rate,
//!   W, and the per-flow rules per switch (`flowroute::plan_phase`; fat-trees only, 422
//!   otherwise). It computes and changes nothing: the caller installs the rules (they carry
//!   their own cookie, which the sync leaves alone) and paces its hosts.
//!
//! Write actions (`POST`, `Authorization: Bearer <token>`; 401 without the right token, 403
//! when no token is configured, 409 on a follower, 503 when the store cannot keep the change):
//! - `/api/v1/links/{link}/drain`, `/undrain` — `{link}`: one end `SWITCH:PORT` or the id
//!   `DPID:PORT-DPID:PORT`; a switch is a name (`g0s1`) or a dpid in hex
//! - `/api/v1/switches/{switch}/drain`, `/undrain`, `/freeze`, `/unfreeze`, `/resync`
//! - `/api/v1/resync` — every switch

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use tokio::net::TcpListener;
use tracing::warn;

use crate::operator::{check_bearer, resolve_link, resolve_switch, Action, Auth};
use crate::shared::{OperatorError, Shared};

/// The router over the shared controller state.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        .route("/api/v1/fabric", get(fabric))
        .route("/api/v1/switches", get(switches))
        .route("/api/v1/switches/{dpid}/plan", get(switch_plan))
        .route("/api/v1/links", get(links))
        .route("/api/v1/operator", get(operator))
        .route(
            "/api/v1/links/{link}/drain",
            post(|s, h, Path(l): Path<String>| link_action(s, h, l, Action::DrainLink)),
        )
        .route(
            "/api/v1/links/{link}/undrain",
            post(|s, h, Path(l): Path<String>| link_action(s, h, l, Action::UndrainLink)),
        )
        .route(
            "/api/v1/switches/{dpid}/drain",
            post(|s, h, Path(d): Path<String>| switch_action(s, h, d, Action::DrainSwitch)),
        )
        .route(
            "/api/v1/switches/{dpid}/undrain",
            post(|s, h, Path(d): Path<String>| switch_action(s, h, d, Action::UndrainSwitch)),
        )
        .route(
            "/api/v1/switches/{dpid}/freeze",
            post(|s, h, Path(d): Path<String>| switch_action(s, h, d, Action::Freeze)),
        )
        .route(
            "/api/v1/switches/{dpid}/unfreeze",
            post(|s, h, Path(d): Path<String>| switch_action(s, h, d, Action::Unfreeze)),
        )
        .route(
            "/api/v1/switches/{dpid}/resync",
            post(|s, h, Path(d): Path<String>| switch_action(s, h, d, |d| Action::Resync(Some(d)))),
        )
        .route("/api/v1/resync", post(resync_all))
        .route("/api/v1/phase", post(phase))
        .with_state(shared)
}

fn error(status: StatusCode, message: impl ToString) -> Response {
    (status, Json(json!({ "error": message.to_string() }))).into_response()
}

/// The answer to a write request that is not admitted (`None`: admitted): 403 while writes
/// are disabled, 401 without the token.
fn refusal(s: &Shared, headers: &HeaderMap) -> Option<Response> {
    let given = headers.get(header::AUTHORIZATION).map(|v| v.as_bytes());
    let auth = check_bearer(given, s.api_token.as_deref());
    let (status, reason) = match auth {
        Auth::Granted => return None,
        Auth::Disabled => (StatusCode::FORBIDDEN, "disabled"),
        Auth::Missing => (StatusCode::UNAUTHORIZED, "missing_token"),
        Auth::Wrong => (StatusCode::UNAUTHORIZED, "wrong_token"),
    };
    s.metrics
        .api_refused
        .get_or_create(&vec![("reason", reason)])
        .inc();
    warn!(reason, "API write request refused");
    let mut r = error(status, auth);
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer realm=\"fabricflow\""),
        );
    }
    Some(r)
}

async fn act(s: &Shared, action: Action, target: serde_json::Value) -> Response {
    match s.operator_action(action).await {
        Ok(outcome) => Json(json!({ "target": target, "outcome": outcome })).into_response(),
        Err(e @ OperatorError::NotLeader) => {
            s.metrics
                .api_refused
                .get_or_create(&vec![("reason", "not_leader")])
                .inc();
            error(StatusCode::CONFLICT, e)
        }
        Err(e @ OperatorError::Store(_)) => error(StatusCode::SERVICE_UNAVAILABLE, e),
        Err(e @ OperatorError::Unplannable(_)) => {
            s.metrics
                .api_refused
                .get_or_create(&vec![("reason", "unplannable")])
                .inc();
            error(StatusCode::CONFLICT, e)
        }
    }
}

async fn link_action(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    spec: String,
    action: fn(crate::desired::LinkId) -> Action,
) -> Response {
    if let Some(r) = refusal(&s, &headers) {
        return r;
    }
    match resolve_link(&spec, &s.link_ids(), &s.switch_names()) {
        Ok(l) => act(&s, action(l), json!({ "link": l.to_string() })).await,
        Err(e) => error(StatusCode::NOT_FOUND, e),
    }
}

async fn switch_action(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    spec: String,
    action: impl FnOnce(u64) -> Action,
) -> Response {
    if let Some(r) = refusal(&s, &headers) {
        return r;
    }
    let names = s.switch_names();
    match resolve_switch(&spec, &names) {
        Ok(d) => {
            let target = json!({ "dpid": format!("{d:016x}"), "name": names.get(&d) });
            act(&s, action(d), target).await
        }
        Err(e) => error(StatusCode::NOT_FOUND, e),
    }
}

async fn resync_all(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if let Some(r) = refusal(&s, &headers) {
        return r;
    }
    act(&s, Action::Resync(None), json!("all")).await
}

#[derive(Debug, serde::Deserialize)]
struct PhaseQuery {
    algorithm: Option<String>,
}

async fn phase(
    State(s): State<Arc<Shared>>,
    Query(q): Query<PhaseQuery>,
    Json(req): Json<crate::flowroute::PhaseRequest>,
) -> Response {
    use crate::flowroute::{plan_phase, Algorithm, PhaseRuleOptions};
    let algo: Algorithm = match q.algorithm.as_deref().unwrap_or("balanced").parse() {
        Ok(a) => a,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let fabric = match s
        .cfg
        .fabric
        .parse::<crate::TopologySpec>()
        .and_then(|t| t.build())
    {
        Ok(f) => f,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e),
    };
    // Routing a large phase is CPU work: off the async workers.
    let answer = tokio::task::spawn_blocking(move || {
        plan_phase(&fabric, &req, algo, &PhaseRuleOptions::default())
    })
    .await;
    match answer {
        Ok(Ok(a)) => Json(a).into_response(),
        Ok(Err(e)) => error(StatusCode::UNPROCESSABLE_ENTITY, e),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

async fn operator(State(s): State<Arc<Shared>>) -> Json<serde_json::Value> {
    let op = s.operator_state();
    let names = s.switch_names();
    let switch = |d: &u64| json!({ "dpid": format!("{d:016x}"), "name": names.get(d) });
    Json(json!({
        "drained_links": op.drained_links.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "drained_switches": op.drained_switches.iter().map(switch).collect::<Vec<_>>(),
        "frozen_switches": op.frozen_switches.iter().map(switch).collect::<Vec<_>>(),
        "writes_enabled": s.api_token.is_some(),
    }))
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
        "operator": s.operator_state(),
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
    crate::operator::parse_dpid(s)
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
