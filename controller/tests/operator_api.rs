//! The operator API without switches (no root, no Open vSwitch): write actions refused without
//! the token and disabled without one configured, drains and freezes reaching the plan and
//! `/api/v1/links`, their counters, and a drain outliving a restart through the memory store's
//! state file. The `ctl` client and binary are what talks to the API.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use common::{config, http_get, COOKIE};
use fabricflow_controller::config::Config;
use fabricflow_controller::ctl::{ApiClient, Command, CtlError};
use fabricflow_controller::desired::fixture::LineFixture;
use fabricflow_controller::operator::freeze_marker;
use fabricflow_controller::service::Controller;

const TOKEN: &str = "test-token-0123456789abcdef";
const BASE: u64 = 0x00ff_0000_0000_0e00;

fn fixture() -> Arc<LineFixture> {
    Arc::new(LineFixture::new(BASE, 3, COOKIE))
}

fn client(c: &Controller, token: Option<&str>) -> ApiClient {
    ApiClient::new(&c.http_addr.to_string(), token.map(str::to_owned)).unwrap()
}

fn status(r: Result<serde_json::Value, CtlError>) -> u16 {
    match r {
        Ok(_) => 200,
        Err(CtlError::Refused { status, .. }) => status,
        Err(e) => panic!("{e}"),
    }
}

fn metric(c: &Controller, line_start: &str) -> String {
    let (_, m) = http_get(c.http_addr, "/metrics");
    m.lines()
        .find(|l| l.starts_with(line_start))
        .unwrap_or_else(|| panic!("no `{line_start}` in {m}"))
        .to_owned()
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ff-opapi-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_are_disabled_without_a_configured_token() {
    let c = Controller::start(config(0), fixture()).await.unwrap();
    let r = client(&c, Some(TOKEN))
        .run(&Command::DrainSwitch("line1".into()))
        .await;
    match r {
        Err(CtlError::Refused { status, message }) => {
            assert_eq!(status, 403);
            assert!(message.contains("disabled"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(c.shared.operator_state().drained_switches.is_empty());
    let op = client(&c, None).run(&Command::Status).await.unwrap();
    assert_eq!(op["writes_enabled"], false);
    assert!(metric(
        &c,
        "fabricflow_controller_api_refused_total{reason=\"disabled\"}"
    )
    .ends_with(" 1"));
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drains_and_freezes_need_the_token_reach_the_plan_and_survive_a_restart() {
    let dir = temp("restart");
    let token_file = dir.join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let cfg = |port: u16| -> Config {
        let mut c = config(port);
        c.http_token_file = Some(token_file.clone());
        c.state_file = Some(dir.join("state.json"));
        c
    };
    let fx = fixture();
    let c = Controller::start(cfg(0), fx.clone()).await.unwrap();
    let (anon, wrong, ok) = (
        client(&c, None),
        client(&c, Some("wrong-token-0123456789abcdef")),
        client(&c, Some(TOKEN)),
    );
    let drain = Command::DrainLink("line0:3".into());
    assert_eq!(status(anon.run(&drain).await), 401);
    assert_eq!(status(wrong.run(&drain).await), 401);
    assert!(
        c.shared.plan().failed.is_empty(),
        "refused: nothing drained"
    );
    assert_eq!(
        status(ok.run(&Command::DrainLink("line0:1".into())).await),
        404
    );
    assert_eq!(status(ok.run(&Command::Freeze("line9".into())).await), 404);

    let v = ok.run(&drain).await.unwrap();
    assert_eq!(v["outcome"]["changed"], true, "{v}");
    let link = v["target"]["link"].as_str().unwrap().to_owned();
    assert_eq!(link, format!("{:016x}:3-{:016x}:2", BASE, BASE + 1));
    let again = ok.run(&Command::DrainLink(link.clone())).await.unwrap();
    assert_eq!(again["outcome"]["changed"], false, "idempotent: {again}");
    assert_eq!(c.shared.plan().failed.len(), 1);
    let (_, links) = http_get(c.http_addr, "/api/v1/links");
    let links: serde_json::Value = serde_json::from_str(&links).unwrap();
    let l = links
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["id"] == link.as_str())
        .unwrap();
    assert_eq!(
        (&l["health"], &l["drained"]),
        (&"drained".into(), &true.into())
    );
    assert!(metric(&c, "fabricflow_controller_links_drained ").ends_with(" 1"));
    assert!(metric(
        &c,
        "fabricflow_controller_operator_actions_total{action=\"drain_link\"}"
    )
    .ends_with(" 2"));
    assert!(metric(
        &c,
        "fabricflow_controller_api_refused_total{reason=\"missing_token\"}"
    )
    .ends_with(" 1"));
    assert!(metric(
        &c,
        "fabricflow_controller_api_refused_total{reason=\"wrong_token\"}"
    )
    .ends_with(" 1"));

    // Freeze: the marker joins that switch's desired flows only.
    ok.run(&Command::Freeze(format!("{:x}", BASE + 2)))
        .await
        .unwrap();
    let marker = freeze_marker(COOKIE);
    let has_marker = |c: &Controller, i: u64| {
        c.shared.plan().switches[&(BASE + i)]
            .flows
            .contains(&marker)
    };
    assert!(has_marker(&c, 2) && !has_marker(&c, 0) && !has_marker(&c, 1));
    let r = ok.run(&Command::Resync(None)).await.unwrap();
    assert_eq!(r["outcome"]["resync_requests"], 0, "no switch connected");

    // The ctl binary reads the token from the environment and prints the links.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabricflow-controller"))
        .args(["ctl", "--url", &c.http_addr.to_string(), "links"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.lines()
            .any(|l| l.starts_with(&link) && l.contains("drained") && l.ends_with("yes")),
        "{text}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabricflow-controller"))
        .args([
            "ctl",
            "--url",
            &c.http_addr.to_string(),
            "drain-switch",
            "line1",
        ])
        .env_remove("FABRICFLOW_API_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("401"),
        "{out:?}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabricflow-controller"))
        .args([
            "ctl",
            "--url",
            &c.http_addr.to_string(),
            "drain-switch",
            "line1",
        ])
        .env("FABRICFLOW_API_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("drain_switch"),
        "{out:?}"
    );
    assert_eq!(c.shared.plan().failed.len(), 2, "line1 has both links");

    // Restart: the drains and the freeze come back from the state file before any switch.
    let port = c.openflow_addr.port();
    c.shutdown().await;
    let c = Controller::start(cfg(port), fx.clone()).await.unwrap();
    let op = c.shared.operator_state();
    assert_eq!(op.drained_links.len(), 1);
    assert_eq!(op.drained_switches, BTreeSet::from([BASE + 1]));
    assert!(has_marker(&c, 2));
    assert_eq!(c.shared.plan().failed.len(), 2);
    let ok = client(&c, Some(TOKEN));
    ok.run(&Command::UndrainSwitch("line1".into()))
        .await
        .unwrap();
    ok.run(&Command::UndrainLink(link)).await.unwrap();
    ok.run(&Command::Unfreeze("line2".into())).await.unwrap();
    assert!(c.shared.plan().failed.is_empty());
    assert!(!has_marker(&c, 2));
    c.shutdown().await;
    let c = Controller::start(cfg(port), fx).await.unwrap();
    assert_eq!(c.shared.operator_state(), Default::default());
    c.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
