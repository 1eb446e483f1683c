//! Sync without bundles on real Open vSwitch: `sync_method = "ordered"` (OVS cannot refuse
//! bundles by configuration; the automatic fallback is tested against a fake switch in
//! testkit/tests/conversations.rs). Two bridges, a host on each, pings running while the plan
//! flips between two variants that add, modify and delete flows and groups on the pinged path:
//! no ping may be lost, and afterwards each bridge holds exactly its plan. Pings go every 2 ms,
//! so a gap of one round trip between a delete and its replacement is seen (deleting stale
//! flows before adding new ones loses pings here).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use fabricflow_controller::desired::{DesiredSwitch, LinkId, PlanSource};
use fabricflow_controller::service::Controller;
use fabricflow_controller::session::SyncMethod;
use fabricflow_controller::sync::diff::{diff, flow_dump_request};
use fabricflow_proto::openflow::action::Action;
use fabricflow_proto::openflow::flow::FlowMod;
use fabricflow_proto::openflow::group::{Bucket, GroupMod};
use fabricflow_proto::openflow::instruction::Instruction;
use fabricflow_proto::openflow::message::{Body, Message};
use fabricflow_proto::openflow::multipart::{FlowStats, GroupDesc, MultipartReplyBody};
use fabricflow_proto::openflow::oxm::{Match, OxmField};
use fabricflow_proto::MacAddr;
use fabricflow_testkit::ovs::{Bridge, Host, OfConn};

const HOST_PORT: u32 = 1;
/// Switch 0's fabric port is 3, switch 1's is 2 (one patch link).
const FABRIC_PORT: [u32; 2] = [3, 2];
const MAC: [[u8; 6]; 2] = [[2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 1, 1]];
const IP: [&str; 2] = ["10.0.0.1", "10.0.0.2"];

/// Two switches, two hosts, two ways to reach the other host.
struct Path {
    dpid_base: u64,
    variant: AtomicU32,
}

fn dst(mac: [u8; 6], mask: Option<[u8; 6]>) -> Match {
    Match::new().with(OxmField::EthDst {
        value: MacAddr(mac),
        mask: mask.map(MacAddr),
    })
}

fn select(id: u32, port: u32) -> GroupMod {
    GroupMod::add_select(id, vec![Bucket::new(100, vec![Action::output(port)])])
}

impl Path {
    fn switch(&self, i: usize) -> DesiredSwitch {
        let flow = |t: u8, p: u16, m: Match, ins: Vec<Instruction>| {
            FlowMod::add(t, p, m, ins).with_cookie(COOKIE)
        };
        let apply = |a: Action| vec![Instruction::ApplyActions(vec![a])];
        let (fabric, own, peer) = (FABRIC_PORT[i], MAC[i], MAC[1 - i]);
        let mut flows = vec![
            flow(
                0,
                100,
                Match::new().with(OxmField::InPort(HOST_PORT)),
                vec![Instruction::GotoTable(1)],
            ),
            flow(
                0,
                90,
                Match::new().with(OxmField::InPort(fabric)),
                vec![Instruction::GotoTable(2)],
            ),
            flow(1, 200, dst(own, None), apply(Action::output(HOST_PORT))),
        ];
        let groups = if self.variant.load(Ordering::SeqCst).is_multiple_of(2) {
            // The peer by prefix through group 1000; arrivals straight to the host.
            flows.push(flow(
                1,
                100,
                dst([2, 0, 0, 0, 0, 0], Some([0xff, 0xff, 0xff, 0, 0, 0])),
                apply(Action::group(1000)),
            ));
            flows.push(flow(
                2,
                200,
                dst(own, None),
                apply(Action::output(HOST_PORT)),
            ));
            vec![select(1000, fabric)]
        } else {
            // The peer by exact address through group 1001; arrivals through group 1002.
            flows.push(flow(1, 150, dst(peer, None), apply(Action::group(1001))));
            flows.push(flow(2, 200, dst(own, None), apply(Action::group(1002))));
            vec![select(1001, fabric), select(1002, HOST_PORT)]
        };
        DesiredSwitch {
            dpid: self.dpid_base + i as u64,
            name: format!("path{i}"),
            flows,
            groups,
            fabric_ports: BTreeMap::new(),
        }
    }
}

impl PlanSource for Path {
    fn plan(&self, _failed: &BTreeSet<LinkId>) -> BTreeMap<u64, DesiredSwitch> {
        (0..2)
            .map(|i| (self.dpid_base + i as u64, self.switch(i)))
            .collect()
    }
    fn links(&self) -> Vec<LinkId> {
        Vec::new()
    }
}

/// The bridge's flows (our cookie) and groups, read over its management socket.
fn dump(bridge: &Bridge) -> (Vec<FlowStats>, Vec<GroupDesc>) {
    let s = UnixStream::connect(bridge.mgmt_socket()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut c = OfConn::new(s);
    c.send(&Message::hello(1));
    let (fx, gx) = (c.next_xid(), c.next_xid());
    c.send(&Message::flow_stats_request(fx, flow_dump_request(COOKIE)));
    c.send(&Message::group_desc_request(gx));
    let (mut flows, mut groups) = (None, None);
    while flows.is_none() || groups.is_none() {
        let m = c.recv();
        if let Body::MultipartReply(r) = m.body {
            assert_eq!(r.flags, 0, "small tables fit one reply");
            match r.body {
                MultipartReplyBody::Flow(f) if m.xid == fx => flows = Some(f),
                MultipartReplyBody::GroupDesc(g) if m.xid == gx => groups = Some(g),
                _ => {}
            }
        }
    }
    (flows.unwrap(), groups.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replans_without_bundles_lose_no_ping_and_leave_the_plan_installed() {
    if skip() {
        return;
    }
    init_logs();
    let dpid_base = 0x00ff_0000_0000_0d00;
    let pid = std::process::id() % 10_000;
    let bridges: Vec<Bridge> = (0..2)
        .map(|i| Bridge::create(&format!("ffo{pid}{i}"), dpid_base + i, &[]))
        .collect();
    bridges[0].patch(FABRIC_PORT[0], &bridges[1], FABRIC_PORT[1]);
    let hosts: Vec<Host> = (0..2)
        .map(|i| {
            let mac = MacAddr(MAC[i]).to_string();
            Host::create(
                &format!("ffoh{pid}{i}"),
                &bridges[i],
                HOST_PORT,
                &mac,
                IP[i],
            )
        })
        .collect();
    // No ARP responder in this plan: static neighbours.
    for i in 0..2 {
        let peer_mac = MacAddr(MAC[1 - i]).to_string();
        let dev = format!("ffoh{pid}{i}i");
        hosts[i].exec(&[
            "ip",
            "neigh",
            "replace",
            IP[1 - i],
            "lladdr",
            &peer_mac,
            "dev",
            &dev,
            "nud",
            "permanent",
        ]);
    }

    let path = Arc::new(Path {
        dpid_base,
        variant: AtomicU32::new(0),
    });
    let mut cfg = config(0);
    cfg.sync_method = SyncMethod::Ordered;
    let c = Controller::start(cfg, path.clone()).await.unwrap();
    for b in &bridges {
        b.set_controllers(&[format!("tcp:{}", c.openflow_addr)]);
    }
    assert!(wait_for(20, || synced(&c) == 2).await, "both synced");
    assert_eq!(
        hosts[0].ping(IP[1], 3),
        3,
        "the path works before the re-plans"
    );

    const PINGS: u32 = 3000; // 6 s at 2 ms: a gap of a few milliseconds loses pings
    let pinger = {
        let ns = format!("ffoh{pid}0");
        std::thread::spawn(move || {
            let out = std::process::Command::new("ip")
                .args(["netns", "exec", &ns, "ping", "-n", "-q", "-c"])
                .arg(PINGS.to_string())
                .args(["-i", "0.002", "-W", "1", IP[1]])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
    };
    let mut replans = 0;
    for v in 1..=6 {
        let before = flow_mods(&c);
        path.variant.store(v, Ordering::SeqCst);
        c.shared.replan();
        assert!(
            wait_for(10, || flow_mods(&c) > before && synced(&c) == 2).await,
            "re-plan {v} applied: flow mods {} (before it {before}), switches synced {}, API {:?}",
            flow_mods(&c),
            synced(&c),
            c.shared.switches()
        );
        replans += 1;
        // Pacing, not synchronisation: spread the re-plans over the ping run.
        tokio::time::sleep(Duration::from_millis(600)).await;
    }
    let out = tokio::task::spawn_blocking(move || pinger.join().unwrap())
        .await
        .unwrap();
    assert_eq!(replans, 6);
    assert!(
        out.contains(&format!("{PINGS} packets transmitted, {PINGS} received")),
        "pings lost across re-plans: {out}"
    );

    // Each bridge holds its plan exactly: the controller's own diff finds nothing to do.
    let plan = path.plan(&BTreeSet::new());
    for (i, b) in bridges.iter().enumerate() {
        let want = &plan[&(dpid_base + i as u64)];
        let (flows, groups) = dump(b);
        assert_eq!(flows.len(), want.flows.len());
        let ids: BTreeSet<u32> = groups.iter().map(|g| g.group_id).collect();
        let want_ids: BTreeSet<u32> = want.groups.iter().map(|g| g.group_id).collect();
        assert_eq!(ids, want_ids);
        let d = diff(want, &flows, &groups, COOKIE, &(1000..=999_999));
        assert!(d.is_empty(), "bridge {i} differs from its plan: {d:?}");
    }
    c.shutdown().await;
    drop(hosts);
}
