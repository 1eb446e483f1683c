//! `POST /api/v1/phase` (no root, no Open vSwitch): a phase's flows in, paths, SAA rates and
//! per-flow rules out, computed from the controller's configured fat-tree; errors as JSON.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use common::{config, COOKIE};
use fabricflow_controller::desired::fixture::LineFixture;
use fabricflow_controller::service::Controller;

fn post(addr: SocketAddr, path: &str, body: &str) -> (String, serde_json::Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut r = String::new();
    s.read_to_string(&mut r).unwrap();
    let (head, body) = r.split_once("\r\n\r\n").unwrap_or((&r, ""));
    (
        head.lines().next().unwrap_or("").to_owned(),
        serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phase_is_routed_on_the_configured_fat_tree() {
    let mut cfg = config(0);
    cfg.fabric = "fattree:k=4,n=2,w=1".into();
    let c = Controller::start(
        cfg,
        Arc::new(LineFixture::new(0x00ff_0000_0000_0f00, 2, COOKIE)),
    )
    .await
    .unwrap();
    let addr = c.http_addr;
    let flows = r#"{"flows": [{"src": "h0.0.1", "dst": "h1.0.1"}, {"src": "h0.0.2", "dst": "h1.0.2"},
        {"src": "h0.0.3", "dst": "h1.0.3"}, {"src": "h0.0.4", "dst": "h1.0.4"}]}"#;
    let answers = tokio::task::spawn_blocking(move || {
        (
            post(addr, "/api/v1/phase", flows),
            post(addr, "/api/v1/phase?algorithm=dmodk", flows),
            post(addr, "/api/v1/phase?algorithm=nope", flows),
            post(
                addr,
                "/api/v1/phase",
                r#"{"flows": [{"src": "h7.0.1", "dst": "h1.0.1"}]}"#,
            ),
        )
    })
    .await
    .unwrap();
    let ((st, bal), (st2, dmodk), (st3, bad), (st4, unknown)) = answers;
    assert!(st.contains("200"), "{st} {bal}");
    assert!(st2.contains("200"), "{st2}");
    assert_eq!(bal["algorithm"], "balanced");
    assert_eq!(dmodk["algorithm"], "dmodk");
    // Four flows from one leaf to another: the balanced paths use four roots, one flow per
    // link, so every flow runs at the line rate.
    assert_eq!(bal["max_link_flows"], 1);
    for f in bal["flows"].as_array().unwrap() {
        assert_eq!(f["rate"], 1.0, "{f}");
        assert_eq!(f["pinned"], true);
    }
    let rules: usize = bal["rules"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_array().unwrap().len())
        .sum();
    assert_eq!(rules, 8, "{bal}");
    assert!(st3.contains("400"), "{st3} {bad}");
    assert!(st4.contains("422"), "{st4}");
    assert!(unknown["error"].as_str().unwrap().contains("h7.0.1"));
    c.shutdown().await;
}
