//! Operator actions on real Open vSwitch, through the HTTP API with the `ctl` client: the real
//! planner's `dragonfly:p=1,a=2,h=1` (6 bridges, 6 hosts in namespaces). Draining a global link
//! while a host pair pings across it stops its traffic (patch-port tx counters still, polled;
//! OVS updates them from datapath flow statistics, so they may lag a packet by up to its
//! revalidation period, which makes the bound conservative) within 2 s, leaves every switch holding the plan with that link failed and every pair
//! pinging; undraining restores the no-failure plan and the traffic. A drained switch is planned
//! around the same way; a freeze puts the marker on its bridge; a resync of an unchanged switch
//! sends nothing; nothing is done without the token. `FABRICFLOW_SKIP_OVS=1` skips.
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
use std::time::{Duration, Instant};

use common::testbed::{plan_options, tx_packets, Testbed};
use common::{http_get, init_logs, skip, wait_for, COOKIE};
use fabricflow_controller::config::Config;
use fabricflow_controller::ctl::{ApiClient, Command, CtlError};
use fabricflow_controller::planner::FabricPlanner;
use fabricflow_controller::service::Controller;
use fabricflow_controller::{Fabric, Link, Plan, PlanOptions, TopologySpec};

const SPEC: &str = "dragonfly:p=1,a=2,h=1";
const TOKEN: &str = "ovs-operator-token-0123456789";

fn config() -> Config {
    let mut c = Config::with_fabric(SPEC);
    c.openflow_listen = SocketAddr::from(([127, 0, 0, 1], 0));
    c.http_listen = SocketAddr::from(([127, 0, 0, 1], 0));
    c.cookie = COOKIE;
    // LLDP probes are packets too: one probe round at connect, none while counters are read
    // (links are healthy until probes go missing, 5 periods).
    c.lldp_interval_ms = 60_000;
    c.lldp_missing_periods = 5;
    c.handshake_timeout_ms = 3000;
    c.http_token = Some(TOKEN.into());
    c
}

fn all_synced(c: &Controller, n: usize) -> bool {
    let s = c.shared.switches();
    s.len() == n && s.iter().all(|s| s.known && s.connected && s.synced)
}

fn plan_with(fabric: &Fabric, opts: &PlanOptions, failed: BTreeSet<Link>) -> Plan {
    Plan::build(
        fabric,
        &PlanOptions {
            failed,
            ..opts.clone()
        },
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn drain_undrain_freeze_and_resync_on_ovs() {
    if skip() {
        return;
    }
    init_logs();
    let fabric: Fabric = SPEC.parse::<TopologySpec>().unwrap().build().unwrap();
    let bed = Testbed::create_tagged(&fabric, "ffx");
    let n = bed.bridges.len();
    let cfg = config();
    let opts = plan_options(&cfg);
    let planner = Arc::new(FabricPlanner::new(fabric.clone(), opts.clone()).unwrap());
    let baseline = plan_with(&fabric, &opts, BTreeSet::new());
    let c = Controller::start(cfg, planner).await.unwrap();
    bed.set_controller(&format!("tcp:{}", c.openflow_addr));
    assert!(
        wait_for(30, || all_synced(&c, n)
            && bed.differences(&baseline).is_empty())
        .await,
        "programmed: {:?} {:#?}",
        c.shared.switches(),
        bed.differences(&baseline)
    );
    let api = ApiClient::new(&c.http_addr.to_string(), Some(TOKEN.into())).unwrap();

    // The global link g0s0:3 and a host at each end: their pings cross it minimally.
    let (lsw, lport) = ("g0s0", 3);
    let le = bed
        .topo
        .links
        .iter()
        .find(|l| (l.a == lsw && l.a_port == lport) || (l.b == lsw && l.b_port == lport))
        .unwrap()
        .clone();
    let (pa, pb) = (bed.bridge_of(&le.a), bed.bridge_of(&le.b));
    let host_on = |sw: &str| bed.topo.hosts.iter().position(|h| h.switch == sw).unwrap();
    let (ha, hb) = (host_on(&le.a), host_on(&le.b));
    let ip_b = bed.topo.hosts[hb].ip.clone();
    let tx = || tx_packets(pa, le.a_port) + tx_packets(pb, le.b_port);
    assert_eq!(bed.hosts[ha].ping(&ip_b, 3), 3, "the pair pings before");

    // Without the token nothing happens.
    let anon = ApiClient::new(&c.http_addr.to_string(), None).unwrap();
    let drain = Command::DrainLink(format!("{lsw}:{lport}"));
    assert!(matches!(
        anon.run(&drain).await,
        Err(CtlError::Refused { status: 401, .. })
    ));
    assert!(c.shared.plan().failed.is_empty());

    // Pings across the link every 10 ms for 12 s, in the background.
    const PINGS: u32 = 1200;
    let pinger = {
        let ns = bed.hosts[ha].namespace().to_owned();
        let ip = ip_b.clone();
        std::thread::spawn(move || {
            let out = std::process::Command::new("ip")
                .args(["netns", "exec", &ns, "ping", "-n", "-q", "-c"])
                .arg(PINGS.to_string())
                .args(["-i", "0.01", "-W", "1", &ip])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
    };
    let before = tx();
    assert!(
        wait_for(5, || tx() >= before + 20).await,
        "the link carries the pings before the drain"
    );

    // Drain: poll the link's counters until they stand still.
    let (mut last, mut last_change) = (tx(), Duration::ZERO);
    let syncs = c.shared.metrics.syncs.get();
    let t0 = Instant::now();
    let r = api.run(&drain).await.unwrap();
    let answered = t0.elapsed();
    assert_eq!(r["outcome"]["changed"], true, "{r}");
    let mut applied = None;
    while t0.elapsed() < Duration::from_secs(4) {
        let now = tx();
        if now != last {
            (last, last_change) = (now, t0.elapsed());
        }
        if applied.is_none() && c.shared.metrics.syncs.get() > syncs && all_synced(&c, n) {
            applied = Some(t0.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "drain: API answered after {answered:?}, switches synced by {applied:?}, \
         last counter increase on the link {last_change:?} after the request"
    );
    assert!(
        last_change < Duration::from_secs(2),
        "the drained link still carried packets {last_change:?} after the drain"
    );
    let model: Link = fabric
        .link_at(fabric.switch_by_name(lsw).unwrap(), lport)
        .unwrap();
    let degraded = plan_with(&fabric, &opts, BTreeSet::from([model]));
    assert!(!bed.differences(&baseline).is_empty());
    assert!(
        wait_for(10, || all_synced(&c, n)
            && bed.differences(&degraded).is_empty())
        .await,
        "dumps equal the plan with the link failed: {:#?}",
        bed.differences(&degraded)
    );
    let out = tokio::task::spawn_blocking(move || pinger.join().unwrap())
        .await
        .unwrap();
    eprintln!("pings across the drain: {}", out.trim());
    assert!(
        out.contains(&format!("{PINGS} packets transmitted")),
        "{out}"
    );
    assert_eq!(tx(), last, "still nothing on the drained link");
    let (_, links) = http_get(c.http_addr, "/api/v1/links");
    let links: serde_json::Value = serde_json::from_str(&links).unwrap();
    let drained: Vec<&serde_json::Value> = links
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["drained"] == true)
        .collect();
    assert_eq!(drained.len(), 1, "{links}");
    assert_eq!(drained[0]["health"], "drained");
    let failed = tokio::task::block_in_place(|| bed.all_pairs_ping());
    assert!(
        failed.is_empty(),
        "pings failed with the link drained: {failed:?}"
    );
    assert_eq!(tx(), last, "all-pairs pings avoid the drained link");

    // Undrain: the no-failure plan, and the pair's traffic back on the link.
    api.run(&Command::UndrainLink(format!("{lsw}:{lport}")))
        .await
        .unwrap();
    assert!(
        wait_for(10, || c.shared.plan().failed.is_empty()
            && all_synced(&c, n)
            && bed.differences(&baseline).is_empty())
        .await,
        "undrained: {:#?}",
        bed.differences(&baseline)
    );
    assert_eq!(bed.hosts[ha].ping(&ip_b, 5), 5);
    // Patch ports count what the datapath's flows report, pushed by OVS's revalidators: poll.
    assert!(
        wait_for(5, || tx() >= last + 10).await,
        "the pings cross the link again: {} vs {last}",
        tx()
    );

    // A drained switch: planned around like all its links failed; back after undrain.
    let sw = "g1s1";
    let sid = fabric.switch_by_name(sw).unwrap();
    let its_links: BTreeSet<Link> = fabric
        .links()
        .into_iter()
        .filter(|l| l.a().switch == sid || l.b().switch == sid)
        .collect();
    let without = plan_with(&fabric, &opts, its_links);
    api.run(&Command::DrainSwitch(sw.into())).await.unwrap();
    assert!(
        wait_for(10, || all_synced(&c, n)
            && bed.differences(&without).is_empty())
        .await,
        "switch drained: {:#?}",
        bed.differences(&without)
    );
    api.run(&Command::UndrainSwitch(sw.into())).await.unwrap();
    assert!(
        wait_for(10, || all_synced(&c, n)
            && bed.differences(&baseline).is_empty())
        .await,
        "switch undrained: {:#?}",
        bed.differences(&baseline)
    );

    // Freeze: the marker on that bridge only; OVS dumps it back as planned, so a resync of the
    // frozen switch sends nothing.
    let marker = "metadata=0xfabf2ee2e000001";
    let has_marker = |name: &str| {
        let br = bed.bridge_of(name);
        br.dump("dump-flows").contains(marker)
    };
    api.run(&Command::Freeze("g0s1".into())).await.unwrap();
    assert!(wait_for(10, || has_marker("g0s1") && all_synced(&c, n)).await);
    assert!(!has_marker("g0s0"));
    let (mods, syncs) = (
        c.shared.metrics.flow_mods_sent.get(),
        c.shared.metrics.syncs.get(),
    );
    let r = api
        .run(&Command::Resync(Some("g0s1".into())))
        .await
        .unwrap();
    assert_eq!(r["outcome"]["resync_requests"], 1, "{r}");
    assert!(
        wait_for(10, || c.shared.metrics.syncs.get() > syncs
            && all_synced(&c, n))
        .await,
        "resynced"
    );
    assert_eq!(
        c.shared.metrics.flow_mods_sent.get(),
        mods,
        "an unchanged switch gets nothing"
    );
    api.run(&Command::Unfreeze("g0s1".into())).await.unwrap();
    assert!(wait_for(10, || !has_marker("g0s1") && all_synced(&c, n)).await);
    assert!(bed.differences(&baseline).is_empty());

    let (_, m) = http_get(c.http_addr, "/metrics");
    for (action, count) in [
        ("drain_link", 1),
        ("undrain_link", 1),
        ("freeze", 1),
        ("resync", 1),
    ] {
        let line =
            format!("fabricflow_controller_operator_actions_total{{action=\"{action}\"}} {count}");
        assert!(m.contains(&line), "{line} in {m}");
    }
    c.shutdown().await;
}
