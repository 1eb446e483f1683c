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

use common::{http_get, init_logs, skip, wait_for, COOKIE};
use fabricflow_controller::config::Config;
use fabricflow_controller::export::{export, LinkExport, TopologyExport};
use fabricflow_controller::planner::FabricPlanner;
use fabricflow_controller::service::Controller;
use fabricflow_controller::{ofctl, Addressing, Fabric, Link, Plan, PlanOptions, TopologySpec};
use fabricflow_testkit::ovs::{Bridge, Host};

const SPEC: &str = "dragonfly:p=1,a=2,h=1";

/// The fabric built on OVS: one bridge per switch (patch ports between switches), one network
/// namespace per host (a veth into its switch's host port). Everything is deleted on drop.
struct Testbed {
    topo: TopologyExport,
    /// Per switch, in `topo.switches` order.
    bridges: Vec<Bridge>,
    /// Per host, in `topo.hosts` order.
    hosts: Vec<Host>,
}

impl Testbed {
    fn create(fabric: &Fabric) -> Testbed {
        let topo = export(fabric, &Addressing::default()).unwrap();
        // `ff` + pid: parallel runs do not collide.
        let tag = format!("ffd{}", std::process::id() % 10_000);
        let bridges: Vec<Bridge> = topo
            .switches
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let dpid = u64::from_str_radix(&s.dpid, 16).unwrap();
                Bridge::create(&format!("{tag}b{i}"), dpid, &[])
            })
            .collect();
        let mut bed = Testbed {
            topo,
            bridges,
            hosts: Vec::new(),
        };
        for l in &bed.topo.links {
            bed.patch_link(l, true);
        }
        let hosts = (bed.topo.hosts.iter().enumerate())
            .map(|(i, h)| {
                let br = bed.bridge_of(&h.switch);
                Host::create(&format!("{tag}n{i}"), br, h.port, &h.mac, &h.ip)
            })
            .collect();
        bed.hosts = hosts;
        bed
    }

    fn bridge_of(&self, switch: &str) -> &Bridge {
        let i = self
            .topo
            .switches
            .iter()
            .position(|s| s.name == switch)
            .unwrap();
        &self.bridges[i]
    }

    /// Points every bridge at `target` (reconnect back-off at most 1 s).
    fn set_controller(&self, target: &str) {
        for br in &self.bridges {
            br.set_controllers(&[target.to_owned()]);
        }
    }

    /// Whether OVS reports any bridge connected to its controller.
    fn any_connected(&self) -> bool {
        self.bridges.iter().any(Bridge::is_connected)
    }

    /// The controller's flows on `br`, normalised and sorted.
    fn flows(&self, br: &Bridge) -> Vec<String> {
        let cookie = format!("cookie={COOKIE:#x}");
        let mut v: Vec<String> = br
            .ofctl(&["--no-stats", "dump-flows", br.name()])
            .lines()
            .filter(|l| l.contains(&cookie))
            .filter_map(ofctl::normalize_flow_line)
            .collect();
        v.sort();
        v
    }

    /// Every group on `br`, normalised and sorted.
    fn groups(&self, br: &Bridge) -> Vec<String> {
        let mut v: Vec<String> = br
            .ofctl(&["--no-stats", "dump-groups", br.name()])
            .lines()
            .filter_map(ofctl::normalize_group_line)
            .collect();
        v.sort();
        v
    }

    /// Bridges whose flows or groups differ from `plan` (with the first difference).
    fn differences(&self, plan: &Plan) -> Vec<String> {
        let mut out = Vec::new();
        for sp in &plan.switches {
            let br = self.bridge_of(&sp.name);
            let mut want_f: Vec<String> = ofctl::flows_text(sp)
                .lines()
                .filter_map(ofctl::normalize_flow_line)
                .collect();
            want_f.sort();
            let mut want_g: Vec<String> = ofctl::groups_text(sp)
                .lines()
                .filter_map(ofctl::normalize_group_line)
                .collect();
            want_g.sort();
            let (got_f, got_g) = (self.flows(br), self.groups(br));
            if got_f != want_f {
                let missing: Vec<_> = want_f.iter().filter(|f| !got_f.contains(f)).collect();
                let extra: Vec<_> = got_f.iter().filter(|f| !want_f.contains(f)).collect();
                out.push(format!(
                    "{} flows: missing {missing:#?} extra {extra:#?}",
                    sp.name
                ));
            }
            if got_g != want_g {
                out.push(format!(
                    "{} groups: want {want_g:#?} got {got_g:#?}",
                    sp.name
                ));
            }
        }
        out
    }

    /// Pings every ordered host pair: a first packet (retried once: it may wait for ARP), then
    /// a burst that must lose nothing. Returns the pairs that failed, with what they got.
    ///
    /// A lossy burst is repeated at most [`BURST_RETRIES`] times (each repeat is logged): one
    /// ovs-vswitchd serves every bridge on the host, and under other tests' bulk traffic its
    /// userspace datapath drops packets even on a plain `actions=NORMAL` bridge (measured
    /// 35–47 % ping loss during a neighbour's iperf3). A routing fault is not hidden by this:
    /// ICMP between two hosts always hashes to the same bucket, so a black hole or loop loses
    /// every burst.
    fn all_pairs_ping(&self) -> Vec<String> {
        const BURST: u32 = 5;
        const BURST_RETRIES: u32 = 4;
        let n = self.topo.hosts.len();
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|a| {
                    s.spawn(move || {
                        let mut bad = Vec::new();
                        for b in (0..n).filter(|&b| b != a) {
                            let first = self.hosts[a].ping(&self.topo.hosts[b].ip, 1) == 1
                                || self.hosts[a].ping(&self.topo.hosts[b].ip, 1) == 1;
                            let mut got = self.hosts[a].ping(&self.topo.hosts[b].ip, BURST);
                            for _ in 0..BURST_RETRIES {
                                if !first || got == BURST {
                                    break;
                                }
                                eprintln!(
                                    "{}->{}: {got}/{BURST} (busy vswitchd?), repeating the burst",
                                    self.topo.hosts[a].name, self.topo.hosts[b].name
                                );
                                // Back off so a neighbour's burst of traffic can pass.
                                std::thread::sleep(std::time::Duration::from_millis(500));
                                got = self.hosts[a].ping(&self.topo.hosts[b].ip, BURST);
                            }
                            if !first || got != BURST {
                                bad.push(format!(
                                    "{}->{}: first {first}, {got}/{BURST}",
                                    self.topo.hosts[a].name, self.topo.hosts[b].name
                                ));
                            }
                        }
                        bad
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        })
    }

    /// Takes the link at (switch, port) down or up.
    fn set_link(&self, switch: &str, port: u32, up: bool) {
        let l = self
            .topo
            .links
            .iter()
            .find(|l| (l.a == switch && l.a_port == port) || (l.b == switch && l.b_port == port))
            .unwrap();
        self.patch_link(l, up);
    }

    /// Adds (`up`) or deletes the patch ports at both ends of `l`.
    fn patch_link(&self, l: &LinkExport, up: bool) {
        let (a, b) = (self.bridge_of(&l.a), self.bridge_of(&l.b));
        if up {
            a.patch(l.a_port, b, l.b_port);
        } else {
            a.unpatch(l.a_port, b, l.b_port);
        }
    }
}

/// The options `fabricflow-controller run` derives from `cfg` (see `plan_source` in main.rs).
fn plan_options(cfg: &Config) -> PlanOptions {
    PlanOptions {
        cookie: cfg.cookie,
        group_base: cfg.group_base,
        p_minimal_percent: cfg.p_minimal_percent,
        agent_controller_id: cfg.agent_controller_id,
        addressing: Addressing::new(cfg.ipv4_base).unwrap(),
        ..Default::default()
    }
}

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

    // 5. The agent's weights survive a restart: same buckets, other weights.
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
    let line = ofctl::group_line(&grp);
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
