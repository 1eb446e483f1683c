//! The controller service against real Open vSwitch bridges (userspace datapath): sync,
//! restart without FLOW_MODs, deltas, link failures, bad peers. `FABRICFLOW_SKIP_OVS=1` skips.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use fabricflow_controller::desired::PlanSource;
use fabricflow_controller::service::Controller;
use fabricflow_proto::openflow::message::Message;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_sync_restart_delta_and_link_failure() {
    if skip() {
        return;
    }
    init_logs();
    let line = Line::create("s", 0x00ff_0000_0000_0a00, 3);

    let c = Controller::start(config(0), line.fixture.clone())
        .await
        .unwrap();
    let target = format!("tcp:{}", c.openflow_addr);
    line.set_controllers(std::slice::from_ref(&target));
    assert!(
        wait_for(20, || synced(&c) == 3).await,
        "3 switches synced: {:?}",
        c.shared.switches()
    );

    // Dumps equal the plan.
    let plan = line.fixture.plan(&BTreeSet::new());
    for i in 0..3 {
        let d = &plan[&line.fixture.dpid(i as u32)];
        assert_eq!(
            line.our_flows(i).len(),
            d.flows.len(),
            "bridge {i}: {:?}",
            line.our_flows(i)
        );
        let groups = line.groups(i);
        assert!(
            groups
                .iter()
                .any(|g| g.starts_with("group_id=1000,type=select")),
            "{groups:?}"
        );
    }
    let first_mods = flow_mods(&c);
    let total: usize = plan.values().map(|d| d.flows.len()).sum();
    assert_eq!(first_mods, total as u64);
    // A rule and a group that belong to someone else (added after set-controller, which makes
    // OVS flush the tables): never touched by any later sync.
    sh(
        "ovs-ofctl",
        &[
            "-O",
            "OpenFlow13",
            "add-flow",
            line.bridges[1].name(),
            "cookie=0x99,table=5,priority=7,in_port=1,actions=drop",
        ],
    );
    sh(
        "ovs-ofctl",
        &[
            "-O",
            "OpenFlow13",
            "add-group",
            line.bridges[1].name(),
            "group_id=5,type=select,bucket=output:1",
        ],
    );

    // HTTP API and metrics.
    let (st, body) = http_get(c.http_addr, "/healthz");
    assert!(st.contains("200"), "{st}");
    assert_eq!(body.trim(), "ok");
    let (_, m) = http_get(c.http_addr, "/metrics");
    assert!(m.contains("fabricflow_controller_switches_synced 3"), "{m}");
    assert!(
        m.contains(&format!(
            "fabricflow_controller_flow_mods_sent_total {total}"
        )),
        "{m}"
    );
    let (_, sw) = http_get(c.http_addr, "/api/v1/switches");
    let sw: serde_json::Value = serde_json::from_str(&sw).unwrap();
    assert_eq!(sw.as_array().unwrap().len(), 3);
    assert!(
        sw.as_array().unwrap().iter().all(|s| s["synced"] == true),
        "{sw}"
    );
    let (st, plan_json) = http_get(
        c.http_addr,
        &format!("/api/v1/switches/{:016x}/plan", line.fixture.dpid(1)),
    );
    assert!(st.contains("200"), "{st}");
    assert!(plan_json.contains("group:1000"), "{plan_json}");
    let (_, fab) = http_get(c.http_addr, "/api/v1/fabric");
    assert!(fab.contains("\"standalone\""), "{fab}");

    // LLDP over the patch links: both links up and staying up for several periods.
    assert!(wait_for(10, || c.shared.switches().iter().all(|s| s.synced)).await);
    tokio::time::sleep(Duration::from_millis(2500)).await; // > lldp_missing_periods × interval
    let (_, links) = http_get(c.http_addr, "/api/v1/links");
    let links: serde_json::Value = serde_json::from_str(&links).unwrap();
    assert_eq!(links.as_array().unwrap().len(), 2);
    assert!(
        links
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["health"] == "up"),
        "{links}"
    );

    // The agent changes weights: the controller must leave them alone.
    sh("ovs-ofctl", &["-O", "OpenFlow13", "mod-group", line.bridges[1].name(),
        "group_id=1000,type=select,bucket=weight:100,actions=output:2,bucket=weight:156,actions=output:3"]);

    // Controller restart: same procedure, zero FLOW_MODs / GROUP_MODs.
    let port = c.openflow_addr.port();
    c.shutdown().await;
    let c = Controller::start(config(port), line.fixture.clone())
        .await
        .unwrap();
    assert!(
        wait_for(20, || synced(&c) == 3).await,
        "resynced after restart"
    );
    assert_eq!(flow_mods(&c), 0, "an unchanged switch receives no FLOW_MOD");
    assert_eq!(
        group_mods(&c),
        0,
        "an unchanged switch receives no GROUP_MOD"
    );
    let g = line.groups(1).join("\n");
    assert!(
        g.contains("weight:100") && g.contains("weight:156"),
        "weights kept: {g}"
    );
    assert!(line.ofctl(1, "dump-flows").contains("cookie=0x99"));
    assert!(line.groups(1).iter().any(|g| g.starts_with("group_id=5,")));

    // A fixture change: only the delta (2 flows per switch).
    line.fixture.set_variant(2);
    c.shared.replan();
    assert!(
        wait_for(10, || flow_mods(&c) == 6 && synced(&c) == 3).await,
        "delta only: {}",
        flow_mods(&c)
    );
    assert_eq!(group_mods(&c), 0);
    assert_eq!(
        line.our_flows(0).len(),
        line.fixture.plan(&BTreeSet::new())[&line.fixture.dpid(0)]
            .flows
            .len()
    );

    // Link down (several PORT_STATUS from OVS): both ends lose the bucket, third switch untouched.
    line.bridges[0].unpatch(3, &line.bridges[1], 2);
    assert!(
        wait_for(10, || line.groups(1).iter().any(|g| g
            .starts_with("group_id=1000")
            && g.matches("bucket=").count() == 1))
        .await,
        "bucket to the failed link removed: {:?}",
        line.groups(1)
    );
    assert!(wait_for(10, || synced(&c) == 3).await);
    let g2 = line.groups(2).join("\n");
    let (_, links) = http_get(c.http_addr, "/api/v1/links");
    assert!(links.contains("\"down\""), "{links}");
    assert_eq!(c.shared.plan().failed.len(), 1);
    // Back up: structure restored (weights from the plan for the rebuilt group).
    line.bridges[0].patch(3, &line.bridges[1], 2);
    assert!(
        wait_for(10, || line.groups(1).iter().any(|g| g
            .starts_with("group_id=1000")
            && g.matches("bucket=").count() == 2))
        .await,
        "bucket back: {:?}",
        line.groups(1)
    );
    assert!(wait_for(10, || c.shared.plan().failed.is_empty()).await);
    assert_eq!(
        line.groups(2).join("\n"),
        g2,
        "switch 2 untouched by the link events"
    );
    assert!(line.ofctl(1, "dump-flows").contains("cookie=0x99"));
    assert!(line.groups(1).iter().any(|g| g.starts_with("group_id=5,")));
    c.shutdown().await;
}

/// Writes `chunks` to a fresh connection and waits until the controller closes it.
fn closed_by_controller(addr: std::net::SocketAddr, chunks: &[Vec<u8>]) -> bool {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
    for c in chunks {
        if s.write_all(c).is_err() {
            return true;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(8);
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_peers_closed_with_reason_while_a_switch_stays_synced() {
    if skip() {
        return;
    }
    init_logs();
    let line = Line::create("b", 0x00ff_0000_0000_0b00, 1);
    let c = Controller::start(config(0), line.fixture.clone())
        .await
        .unwrap();
    line.set_controllers(&[format!("tcp:{}", c.openflow_addr)]);
    assert!(wait_for(20, || synced(&c) == 1).await);
    let mods = flow_mods(&c);
    let addr = c.openflow_addr;

    let hello = Message::hello(1).to_bytes().to_vec();
    let mut v1_hello = hello.clone();
    v1_hello[0] = 1;
    v1_hello.truncate(8);
    v1_hello[3] = 8;
    let truncated = vec![4u8, 6, 0, 8, 0, 0, 0, 2]; // FEATURES_REPLY without a body
    let longer = vec![4u8, 6, 0x03, 0xe8, 0, 0, 0, 2, 1, 2, 3]; // says 1000 bytes, sends 11
    let echo_flood: Vec<u8> = (0..500)
        .flat_map(|i| Message::echo_request(i, vec![]).to_bytes().to_vec())
        .collect();
    let cases: Vec<(&str, Vec<Vec<u8>>, &str)> = vec![
        (
            "garbage",
            vec![b"GET / HTTP/1.1\r\n\r\n".to_vec()],
            "garbage",
        ),
        (
            "wrong version",
            vec![v1_hello],
            "version negotiation failed",
        ),
        (
            "truncated",
            vec![hello.clone(), truncated],
            "undecodable message",
        ),
        (
            "longer than its stream",
            vec![hello.clone(), longer],
            "message longer than its stream",
        ),
        ("echo flood", vec![hello.clone(), echo_flood], "echo flood"),
        (
            "bad length",
            vec![vec![4u8, 0, 0, 2, 0, 0, 0, 1]],
            "framing error",
        ),
    ];
    for (name, chunks, reason) in cases {
        let ok = tokio::task::spawn_blocking(move || closed_by_controller(addr, &chunks))
            .await
            .unwrap();
        assert!(ok, "{name}: connection not closed");
        assert!(
            wait_for(5, || c
                .shared
                .recent_closes()
                .iter()
                .any(|(_, r)| r.contains(reason)))
            .await,
            "{name}: no close reason containing `{reason}`: {:?}",
            c.shared.recent_closes()
        );
    }
    // An unknown dpid: kept idle, reported.
    let stranger = Line::create("u", 0x00ff_0000_0000_0bff, 1);
    stranger.set_controllers(&[format!("tcp:{}", c.openflow_addr)]);
    assert!(
        wait_for(10, || c
            .shared
            .switches()
            .iter()
            .any(|s| !s.known && s.connected))
        .await
    );
    let (_, sw) = http_get(c.http_addr, "/api/v1/switches");
    assert!(sw.contains("\"known\":false"), "{sw}");
    assert!(stranger.our_flows(0).is_empty());
    assert_eq!(c.shared.metrics.switches_unknown.get(), 1);

    // The real switch never noticed.
    assert_eq!(synced(&c), 1);
    assert_eq!(flow_mods(&c), mods);
    let _ = Arc::clone(&line.fixture);
    c.shutdown().await;
}
