//! End to end: the real planner ([`FabricPlanner`]) through the real controller service on real
//! Open vSwitch (userspace datapath), for `dragonfly:p=1,a=2,h=1` (6 switches, 6 hosts in
//! network namespaces). Checks that the switches hold exactly the plan, that every host pair
//! pings with no static ARP, that a controller restart sends nothing (the wire encoding is what
//! OVS dumps back) while forwarding continues, that a failed link is routed around and its
//! recovery restores the minimal routes, and that agent-owned weights survive a restart.
//! `FABRICFLOW_SKIP_OVS=1` skips.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use common::testbed::{plan_options, Testbed};
use common::{http_get, init_logs, skip, wait_for, COOKIE};
use fabricflow_controller::config::Config;
use fabricflow_controller::plan::SelectLayout;
use fabricflow_controller::planner::FabricPlanner;
use fabricflow_controller::service::Controller;
use fabricflow_controller::{ofctl, Fabric, Link, Plan, PlanOptions, TopologySpec};

const SPEC: &str = "dragonfly:p=1,a=2,h=1";

fn config(of_port: u16) -> Config {
    let mut c = Config::with_fabric(SPEC);
    c.openflow_listen = SocketAddr::from(([127, 0, 0, 1], of_port));
    c.http_listen = SocketAddr::from(([127, 0, 0, 1], 0));
    c.cookie = COOKIE;
    c.lldp_interval_ms = 300;
    c.lldp_missing_periods = 5;
    c.handshake_timeout_ms = 3000;
    c
}

/// Every planned switch connected and synced, as the HTTP API reports it.
fn api_all_synced(c: &Controller, n: usize) -> bool {
    let (_, body) = http_get(c.http_addr, "/api/v1/switches");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let sw = v.as_array().unwrap();
    sw.len() == n
        && sw
            .iter()
            .all(|s| s["known"] == true && s["connected"] == true && s["synced"] == true)
}

fn api_links_up(c: &Controller) -> bool {
    let (_, body) = http_get(c.http_addr, "/api/v1/links");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let links = v.as_array().unwrap();
    !links.is_empty() && links.iter().all(|l| l["health"] == "up")
}

fn mods(c: &Controller) -> (u64, u64) {
    let m = &c.shared.metrics;
    (m.flow_mods_sent.get(), m.group_mods_sent.get())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dragonfly_planner_on_ovs_end_to_end() {
    if skip() {
        return;
    }
    init_logs();
    let t0 = Instant::now();
    let fabric: Fabric = SPEC.parse::<TopologySpec>().unwrap().build().unwrap();
    let bed = Testbed::create(&fabric);
    let n = bed.bridges.len();
    assert_eq!((n, bed.topo.hosts.len()), (6, 6));

    let cfg = config(0);
    let opts = plan_options(&cfg);
    let planner = Arc::new(FabricPlanner::new(fabric.clone(), opts.clone()).unwrap());
    let baseline = Plan::build(&fabric, &opts).unwrap();

    // 1. Fully programmed: API says synced, every bridge's dump equals the plan.
    let c = Controller::start(cfg.clone(), planner.clone())
        .await
        .unwrap();
    let port = c.openflow_addr.port();
    bed.set_controller(&format!("tcp:{}", c.openflow_addr));
    assert!(
        wait_for(30, || api_all_synced(&c, n)).await,
        "all synced: {:?}",
        c.shared.switches()
    );
    let diffs = bed.differences(&baseline);
    assert!(diffs.is_empty(), "dumps differ from the plan: {diffs:#?}");
    let (f, g) = mods(&c);
    assert_eq!(
        f as usize,
        baseline.totals().0,
        "one FLOW_MOD per planned flow"
    );
    assert_eq!(
        g as usize,
        baseline.totals().1,
        "one GROUP_MOD per planned group"
    );
    assert!(wait_for(10, || api_links_up(&c)).await, "links up by LLDP");
    eprintln!("programmed after {:?}", t0.elapsed());

    // 2. All-pairs ping, ARP answered by the edge responders.
    let failed = tokio::task::block_in_place(|| bed.all_pairs_ping());
    assert!(failed.is_empty(), "pings failed: {failed:?}");

    // 3. Restart: forwarding continues while the controller is down; the new instance sends
    //    nothing.
    c.shutdown().await;
    assert!(
        wait_for(10, || !bed.any_connected()).await,
        "OVS noticed the controller is gone"
    );
    let failed = tokio::task::block_in_place(|| bed.all_pairs_ping());
    assert!(
        failed.is_empty(),
        "pings failed with no controller: {failed:?}"
    );
    let c = Controller::start(config(port), planner.clone())
        .await
        .unwrap();
    assert!(
        wait_for(30, || api_all_synced(&c, n)).await,
        "resynced after restart: {:?}",
        c.shared.switches()
    );
    assert!(wait_for(10, || api_links_up(&c)).await, "links up by LLDP");
    assert_eq!(
        mods(&c),
        (0, 0),
        "an unchanged fabric receives no FLOW_MOD/GROUP_MOD after a restart"
    );
    let (_, sw) = http_get(c.http_addr, "/api/v1/switches");
    let sw: serde_json::Value = serde_json::from_str(&sw).unwrap();
    assert!(
        sw.as_array()
            .unwrap()
            .iter()
            .all(|s| s["flow_mods_sent"] == 0 && s["group_mods_sent"] == 0),
        "{sw}"
    );

    // 4. A global link down (both ends): re-planned around it, every pair still pings; back up:
    //    the no-failure plan again.
    let (lsw, lport) = ("g0s0", 3);
    let model_link: Link = fabric
        .link_at(fabric.switch_by_name(lsw).unwrap(), lport)
        .unwrap();
    let degraded = Plan::build(
        &fabric,
        &PlanOptions {
            failed: BTreeSet::from([model_link]),
            ..opts.clone()
        },
    )
    .unwrap();
    assert!(
        !bed.differences(&degraded).is_empty(),
        "the failure must change the plan"
    );
    bed.set_link(lsw, lport, false);
    assert!(
        wait_for(15, || c.shared.plan().failed.len() == 1
            && api_all_synced(&c, n)
            && bed.differences(&degraded).is_empty())
        .await,
        "re-planned around the link: failed {:?}, {:#?}",
        c.shared.plan().failed,
        bed.differences(&degraded)
    );
    let failed = tokio::task::block_in_place(|| bed.all_pairs_ping());
    assert!(
        failed.is_empty(),
        "pings failed with a link down: {failed:?}"
    );
    bed.set_link(lsw, lport, true);
    assert!(
        wait_for(15, || c.shared.plan().failed.is_empty()
            && api_all_synced(&c, n)
            && bed.differences(&baseline).is_empty())
        .await,
        "minimal routes back: failed {:?}, {:#?}",
        c.shared.plan().failed,
        bed.differences(&baseline)
    );
    let failed = tokio::task::block_in_place(|| bed.all_pairs_ping());
    assert!(failed.is_empty(), "pings failed after recovery: {failed:?}");

    // 5. The agent's weights survive a restart: same catalog, other slots.
    let sp = baseline.switches.iter().find(|s| s.name == "g0s0").unwrap();
    let mut grp = sp
        .groups
        .iter()
        .find(|g| g.buckets.len() >= 3)
        .unwrap()
        .clone();
    let weights = [200u16, 55, 1];
    for (b, w) in grp.buckets.iter_mut().zip(weights) {
        b.weight = w;
    }
    let line = ofctl::group_line(&grp, SelectLayout::Slots).unwrap();
    let br = bed.bridge_of("g0s0");
    br.ofctl(&["mod-group", br.name(), &line]);
    let want = ofctl::normalize_group_line(&line).unwrap();
    assert!(bed.groups(br).contains(&want), "{:?}", bed.groups(br));
    c.shutdown().await;
    let c = Controller::start(config(port), planner.clone())
        .await
        .unwrap();
    assert!(
        wait_for(30, || api_all_synced(&c, n)).await,
        "resynced after the second restart: {:?}",
        c.shared.switches()
    );
    assert!(wait_for(10, || api_links_up(&c)).await, "links up by LLDP");
    assert_eq!(mods(&c), (0, 0), "weights are the agent's: nothing sent");
    assert!(
        bed.groups(br).contains(&want),
        "weights kept: {:?}",
        bed.groups(br)
    );
    let failed = tokio::task::block_in_place(|| bed.all_pairs_ping());
    assert!(failed.is_empty(), "pings failed: {failed:?}");
    c.shutdown().await;
    eprintln!("e2e dragonfly done in {:?}", t0.elapsed());
}
