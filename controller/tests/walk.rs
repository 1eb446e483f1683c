//! The plan checked as a program: packets walked hop by hop through the in-memory pipeline.

// Test helpers panic on purpose: a failed expectation is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::collections::BTreeSet;

use fabricflow_controller::cdg::Cdg;
use fabricflow_controller::pipeline::{End, Packet, SelectMode, Trace, Walker};
use fabricflow_controller::plan::{ethertype, Action, Flow, Lossless, DEFAULT_AGENT_CONTROLLER_ID};
use fabricflow_controller::topology::{Fabric, HostId, PortRole};
use fabricflow_controller::{Link, Plan, PlanOptions, TopologySpec};

fn fabric(spec: &str) -> Fabric {
    spec.parse::<TopologySpec>().unwrap().build().unwrap()
}

fn plan(f: &Fabric, p: f64, failed: &BTreeSet<Link>, lossless: bool) -> Plan {
    let opts = PlanOptions {
        p_minimal_percent: p,
        failed: failed.clone(),
        lossless: lossless.then_some(Lossless { vlan_vid: 1 }),
        ..Default::default()
    };
    Plan::build(f, &opts).unwrap()
}

/// Host pairs to walk: every pair on small fabrics; on big ones every ordered pair of switches
/// with rotating host ports (rules never distinguish a switch's hosts except at delivery).
fn pairs(f: &Fabric) -> Vec<(HostId, HostId)> {
    let n = f.hosts().len();
    if n <= 80 {
        return (0..n)
            .flat_map(|s| (0..n).map(move |d| (s, d)))
            .filter(|(s, d)| s != d)
            .collect();
    }
    let mut by_switch: Vec<Vec<HostId>> = vec![Vec::new(); f.switches().len()];
    for (i, h) in f.hosts().iter().enumerate() {
        by_switch[h.switch].push(i);
    }
    let edges: Vec<&Vec<HostId>> = by_switch.iter().filter(|v| !v.is_empty()).collect();
    let mut out = Vec::new();
    for (i, a) in edges.iter().enumerate() {
        for (j, b) in edges.iter().enumerate() {
            let s = a[j % a.len()];
            let d = b[(i + 1) % b.len()];
            if s != d {
                out.push((s, d));
            }
        }
    }
    out
}

/// Dragonfly theory, from the wiring convention alone: (source owns the link ? 0 : 1) + 1 +
/// (arrival switch is the destination ? 0 : 1).
fn dragonfly_hops(p: u32, a: u32, h: u32, f: &Fabric, s: HostId, d: HostId) -> usize {
    let _ = p;
    let g = a * h + 1;
    let (ls, ld) = (f.hosts()[s].location, f.hosts()[d].location);
    let (gs, ss, gd, sd) = (
        u32::from(ls.group),
        u32::from(ls.switch),
        u32::from(ld.group),
        u32::from(ld.switch),
    );
    if (gs, ss) == (gd, sd) {
        return 0;
    }
    if gs == gd {
        return 1;
    }
    let owner = ((gd + g - gs - 1) % g) / h;
    let arrival = ((gs + g - gd - 1) % g) / h;
    usize::from(owner != ss) + 1 + usize::from(arrival != sd)
}

/// Fat-tree theory: up to the nearest common ancestor and down, 2·level.
fn fattree_hops(k: u32, n: u32, f: &Fabric, s: HostId, d: HostId) -> usize {
    let (a, b) = (f.hosts()[s].switch as u32, f.hosts()[d].switch as u32);
    let digit = |w: u32, i: u32| (w / k.pow(i)) % k;
    let level = (0..n - 1)
        .rev()
        .find(|&i| digit(a, i) != digit(b, i))
        .map_or(0, |i| i + 1);
    2 * level as usize
}

fn theory(spec: &str, f: &Fabric, s: HostId, d: HostId) -> usize {
    match spec.parse::<TopologySpec>().unwrap() {
        TopologySpec::Dragonfly { p, a, h } => dragonfly_hops(p, a, h, f, s, d),
        TopologySpec::FatTree { k, n, .. } => fattree_hops(k, n, f, s, d),
        TopologySpec::LeafSpine { .. } => {
            2 * usize::from(f.hosts()[s].switch != f.hosts()[d].switch)
        }
        TopologySpec::File(_) | TopologySpec::Torus { .. } | TopologySpec::Mesh { .. } => {
            unreachable!()
        }
    }
}

fn global_links(f: &Fabric, t: &Trace) -> usize {
    t.hops
        .iter()
        .filter(|h| {
            f.switches()[h.switch]
                .port(h.out_port)
                .is_some_and(|p| p.role == PortRole::Global)
        })
        .count()
}

fn assert_delivered(traces: &[Trace], d: HostId, ctx: &str) {
    assert!(!traces.is_empty(), "{ctx}: no trace");
    for t in traces {
        assert_eq!(t.end, End::Delivered(d), "{ctx}: {t:?}");
    }
}

const TOPOLOGIES: [&str; 6] = [
    "dragonfly:p=1,a=2,h=1",
    "dragonfly:p=2,a=4,h=2",
    "dragonfly:p=4,a=8,h=4",
    "fattree:k=4,n=2",
    "fattree:k=4,n=3",
    "fattree:k=4,n=3,w=2",
];

#[test]
fn minimal_paths_deliver_every_pair_with_theoretical_hop_counts() {
    for spec in TOPOLOGIES {
        let f = fabric(spec);
        let none = BTreeSet::new();
        let plan = plan(&f, 100.0, &none, false);
        let w = Walker::new(&f, &plan, &none);
        let mut checked = 0;
        for (s, d) in pairs(&f) {
            let traces = w.walk_pair(s, d, SelectMode::EveryBucket).unwrap();
            let ctx = format!("{spec} {} -> {}", f.hosts()[s].name, f.hosts()[d].name);
            assert_delivered(&traces, d, &ctx);
            // Also bucket 0 explicitly: the minimal port.
            let b0 = w.walk_pair(s, d, SelectMode::Bucket(0)).unwrap();
            assert_delivered(&b0, d, &ctx);
            for t in traces.iter().chain(&b0) {
                assert_eq!(t.links(), theory(spec, &f, s, d), "{ctx}: {t:?}");
                if spec.starts_with("dragonfly") {
                    assert!(t.links() <= 3, "{ctx}");
                }
            }
            checked += 1;
        }
        assert!(checked > 0);
    }
}

#[test]
fn p_zero_crosses_exactly_two_global_links() {
    for spec in [
        "dragonfly:p=1,a=2,h=1",
        "dragonfly:p=2,a=2,h=1",
        "dragonfly:p=2,a=4,h=2",
        "dragonfly:p=4,a=8,h=4",
    ] {
        let f = fabric(spec);
        let none = BTreeSet::new();
        let plan = plan(&f, 0.0, &none, false);
        let w = Walker::new(&f, &plan, &none);
        for (s, d) in pairs(&f) {
            let ctx = format!("{spec} {} -> {}", f.hosts()[s].name, f.hosts()[d].name);
            let traces = w.walk_pair(s, d, SelectMode::EveryBucket).unwrap();
            assert_delivered(&traces, d, &ctx);
            let inter = f.hosts()[s].location.group != f.hosts()[d].location.group;
            for t in &traces {
                // Bucket draws with weight 0 are skipped, so at P=0 only the candidates and the
                // 1/256 padding bucket remain: skip the padding's minimal path.
                let globals = global_links(&f, t);
                if inter && globals == 1 {
                    assert_eq!(
                        t.links(),
                        theory(spec, &f, s, d),
                        "{ctx}: padding path must be minimal"
                    );
                    continue;
                }
                assert_eq!(globals, usize::from(inter) * 2, "{ctx}: {t:?}");
            }
            if inter {
                assert!(
                    traces.iter().any(|t| global_links(&f, t) == 2),
                    "{ctx}: no non-minimal path"
                );
            }
        }
    }
}

/// Deterministic xorshift, so failures are reproducible without a rand dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[test]
fn failed_links_still_deliver_every_connected_pair() {
    let mut rng = Rng(0x5eed_fab0_0000_0001);
    for spec in [
        "dragonfly:p=1,a=2,h=1",
        "dragonfly:p=2,a=2,h=1",
        "dragonfly:p=2,a=4,h=2",
        "fattree:k=4,n=2",
        "fattree:k=4,n=3",
    ] {
        let f = fabric(spec);
        let links = f.links();
        for round in 0..12 {
            let mut failed = BTreeSet::new();
            for _ in 0..(1 + round % 2) {
                failed.insert(links[rng.next(links.len())]);
            }
            let comp = f.components(&failed);
            for p in [100.0, 50.0] {
                let plan = plan(&f, p, &failed, false);
                let w = Walker::new(&f, &plan, &failed);
                for (s, d) in pairs(&f) {
                    let (ss, ds) = (f.hosts()[s].switch, f.hosts()[d].switch);
                    let traces = w.walk_pair(s, d, SelectMode::EveryBucket).unwrap();
                    let ctx = format!(
                        "{spec} failed {failed:?} P={p} {} -> {}",
                        f.hosts()[s].name,
                        f.hosts()[d].name
                    );
                    if comp[ss] == comp[ds] {
                        assert_delivered(&traces, d, &ctx);
                    } else {
                        for t in &traces {
                            assert!(matches!(t.end, End::Dropped { .. }), "{ctx}: {t:?}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn failed_global_link_goes_non_minimally() {
    let f = fabric("dragonfly:p=2,a=4,h=2");
    let g0s0 = f.switch_by_name("g0s0").unwrap();
    let failed: BTreeSet<Link> = [f.link_at(g0s0, 2 + 4).unwrap()].into(); // group 0 <-> group 1
    let plan = plan(&f, 100.0, &failed, false);
    let w = Walker::new(&f, &plan, &failed);
    let src = f.hosts().iter().position(|h| h.name == "h0.1.1").unwrap();
    let dst = f.hosts().iter().position(|h| h.name == "h1.2.2").unwrap();
    let traces = w.walk_pair(src, dst, SelectMode::EveryBucket).unwrap();
    assert_delivered(&traces, dst, "0->1 without its link");
    for t in &traces {
        assert_eq!(global_links(&f, t), 2, "{t:?}");
    }
    // The failed port is in no group's bucket of g0s0.
    let sp = plan.switch(g0s0).unwrap();
    assert!(sp
        .groups
        .iter()
        .all(|g| g.buckets.iter().all(|b| b.watch_port != Some(6))));
}

#[test]
fn lossless_plans_have_acyclic_channel_dependencies() {
    for spec in [
        "dragonfly:p=1,a=2,h=1",
        "dragonfly:p=2,a=2,h=1",
        "dragonfly:p=2,a=4,h=2",
        "fattree:k=4,n=2",
        "fattree:k=4,n=3",
    ] {
        let f = fabric(spec);
        let none = BTreeSet::new();
        for p in [100.0, 50.0, 0.0] {
            let plan = plan(&f, p, &none, true);
            // Still delivers (the tag is popped at the edge).
            let w = Walker::new(&f, &plan, &none);
            for (s, d) in pairs(&f).into_iter().step_by(7) {
                let traces = w.walk_pair(s, d, SelectMode::EveryBucket).unwrap();
                assert_delivered(&traces, d, spec);
                for t in &traces {
                    assert!(t.packet.vlans.is_empty(), "{spec}: tag left on delivery");
                }
            }
            let cdg = Cdg::from_plan(&f, &plan, &none).unwrap();
            assert!(
                cdg.size().1 > 0 || spec.contains("a=2,h=1") || spec.contains("n=2"),
                "{spec}: empty CDG"
            );
            assert_eq!(cdg.find_cycle(), None, "{spec} P={p}");
            if spec.starts_with("dragonfly") {
                assert!(cdg.classes().len() <= 3, "{spec}: {:?}", cdg.classes());
            }
        }
    }
}

#[test]
fn without_lossless_classes_the_dragonfly_cdg_has_a_cycle() {
    // The reason for the lossless option: Valiant paths share one class and deadlock-prone.
    let f = fabric("dragonfly:p=2,a=4,h=2");
    let none = BTreeSet::new();
    let plan = plan(&f, 50.0, &none, false);
    let cdg = Cdg::from_plan(&f, &plan, &none).unwrap();
    assert!(cdg.find_cycle().is_some());
}

#[test]
fn arp_is_answered_at_the_edge() {
    let f = fabric("dragonfly:p=2,a=4,h=2");
    let none = BTreeSet::new();
    let plan = plan(&f, 100.0, &none, false);
    let w = Walker::new(&f, &plan, &none);
    let addressing = fabricflow_controller::Addressing::default();
    let (s, d) = (3, 40);
    let (hs, hd) = (&f.hosts()[s], &f.hosts()[d]);
    let req = Packet::arp_request(
        hs.location.mac(),
        addressing.ipv4(hs.location).unwrap(),
        addressing.ipv4(hd.location).unwrap(),
    );
    let traces = w.walk(s, req, SelectMode::EveryBucket).unwrap();
    assert_eq!(traces.len(), 1);
    let t = &traces[0];
    assert_eq!(t.end, End::Delivered(s));
    assert_eq!(t.hops.len(), 1);
    let arp = t.packet.arp.unwrap();
    assert_eq!(arp.op, 2);
    assert_eq!(arp.sha, hd.location.mac());
    assert_eq!(arp.spa, addressing.ipv4(hd.location).unwrap());
    assert_eq!(arp.tha, hs.location.mac());
    assert_eq!(arp.tpa, addressing.ipv4(hs.location).unwrap());
    assert_eq!(t.packet.eth_src, hd.location.mac());
    assert_eq!(t.packet.eth_dst, hs.location.mac());
    // A gratuitous/other ARP is dropped, never flooded.
    let mut reply = Packet::arp_request(
        hs.location.mac(),
        addressing.ipv4(hs.location).unwrap(),
        addressing.ipv4(hd.location).unwrap(),
    );
    reply.arp.as_mut().unwrap().op = 2;
    let traces = w.walk(s, reply, SelectMode::EveryBucket).unwrap();
    assert!(matches!(traces[0].end, End::Dropped { .. }));
}

#[test]
fn cnm_lldp_and_unknown_destinations() {
    let f = fabric("dragonfly:p=2,a=4,h=2");
    let none = BTreeSet::new();
    let plan = plan(&f, 100.0, &none, false);
    let w = Walker::new(&f, &plan, &none);
    let h = &f.hosts()[0];
    let other = f.hosts()[50].location.mac();
    // CNM from a host: dropped.
    let t = w
        .walk(
            0,
            Packet::ethernet(h.location.mac(), other, ethertype::CNM),
            SelectMode::EveryBucket,
        )
        .unwrap();
    assert!(matches!(t[0].end, End::Dropped { .. }), "{t:?}");
    // CNM from a fabric port: to the agent.
    let t = w
        .walk_from(
            h.switch,
            3,
            Packet::ethernet(other, h.location.mac(), ethertype::CNM),
            SelectMode::EveryBucket,
        )
        .unwrap();
    assert_eq!(
        t[0].end,
        End::ToController {
            switch: h.switch,
            id: Some(DEFAULT_AGENT_CONTROLLER_ID)
        }
    );
    // LLDP: to the controller (id 0).
    let t = w
        .walk_from(
            h.switch,
            3,
            Packet::ethernet(
                other,
                fabricflow_proto::MacAddr::LLDP_NEAREST_BRIDGE,
                ethertype::LLDP,
            ),
            SelectMode::EveryBucket,
        )
        .unwrap();
    assert_eq!(
        t[0].end,
        End::ToController {
            switch: h.switch,
            id: None
        }
    );
    // No host there: dropped, no loop, whichever group.
    for mac in [
        "02:00:00:05:00:09",
        "02:00:00:05:77:01",
        "02:00:00:00:00:07",
        "02:00:01:00:00:01",
        "0a:00:00:00:00:01",
    ] {
        let t = w
            .walk(
                0,
                Packet::ipv4(h.location.mac(), mac.parse().unwrap()),
                SelectMode::EveryBucket,
            )
            .unwrap();
        for tr in &t {
            assert!(matches!(tr.end, End::Dropped { .. }), "{mac}: {tr:?}");
        }
    }
}

#[test]
fn groups_follow_the_convention() {
    let f = fabric("dragonfly:p=2,a=4,h=2");
    let plan = plan(&f, 40.0, &BTreeSet::new(), false);
    for (x, sp) in plan.switches.iter().enumerate() {
        assert!(!sp.groups.is_empty());
        for g in &sp.groups {
            let minimal = g.id - fabricflow_controller::plan::DEFAULT_GROUP_BASE;
            assert_eq!(g.buckets[0].watch_port, Some(minimal));
            assert_eq!(g.buckets.last().unwrap().weight, 1);
            assert_eq!(g.buckets.last().unwrap().watch_port, Some(minimal));
            assert_eq!(
                g.buckets.iter().map(|b| u32::from(b.weight)).sum::<u32>(),
                256
            );
            let w: Vec<u16> = g.buckets.iter().map(|b| b.weight).collect();
            assert_eq!(
                w,
                fabricflow_proto::select_weights::weights(40.0, g.buckets.len() - 2)
            );
            // Candidates of a Dragonfly(2,4,2) are global ports (h = 2 always leaves one).
            for b in &g.buckets[1..g.buckets.len() - 1] {
                let port = b.watch_port.unwrap();
                assert_eq!(f.switches()[x].port(port).unwrap().role, PortRole::Global);
                assert_ne!(port, minimal);
            }
        }
        for fl in &sp.flows {
            assert_eq!(fl.cookie, fabricflow_controller::plan::DEFAULT_COOKIE);
        }
    }
    // Deterministic.
    let again = self::plan(&f, 40.0, &BTreeSet::new(), false);
    assert_eq!(plan, again);
    assert_eq!(
        serde_json::to_string(&plan).unwrap(),
        serde_json::to_string(&again).unwrap()
    );
}

#[test]
fn file_fabric_routes_by_shortest_paths() {
    let yaml = r#"
switches:
  - {name: a, dpid: 1}
  - {name: b, dpid: 2}
  - {name: c, dpid: 3}
  - {name: d, dpid: 4, group: 1}
links:
  - [a:10, b:10]
  - [a:11, c:10]
  - [b:11, d:10]
  - [c:11, d:11]
hosts:
  - {at: "a:1"}
  - {at: "d:1"}
  - {at: "b:1"}
"#;
    let f = fabricflow_controller::topology::file::parse(yaml).unwrap();
    let none = BTreeSet::new();
    let plan = plan(&f, 0.0, &none, false);
    let w = Walker::new(&f, &plan, &none);
    for s in 0..3 {
        for d in 0..3 {
            if s != d {
                let t = w.walk_pair(s, d, SelectMode::EveryBucket).unwrap();
                assert_delivered(&t, d, "file");
            }
        }
    }
    // a -> d: two equal-cost paths, both used by the ECMP decision point at P=0.
    let t = w.walk_pair(0, 1, SelectMode::EveryBucket).unwrap();
    let second: BTreeSet<usize> = t.iter().map(|t| t.hops[1].switch).collect();
    assert_eq!(second.len(), 2, "{t:?}");
    assert!(t.iter().all(|t| t.links() == 2));
}

#[test]
fn h1_dragonfly_diverts_by_arrival_port() {
    use fabricflow_controller::plan::priority::DIVERT_BASE;
    let none = BTreeSet::new();
    let f = fabric("dragonfly:p=1,a=2,h=1");
    let p0 = plan(&f, 0.0, &none, false);
    let diverts = |p: &Plan| {
        p.switches
            .iter()
            .flat_map(|s| &s.flows)
            .filter(|fl| fl.priority >= DIVERT_BASE)
            .count()
    };
    assert!(diverts(&p0) > 0);
    assert_eq!(
        diverts(&plan(&fabric("dragonfly:p=2,a=4,h=2"), 0.0, &none, false)),
        0
    );
    // g0s0 owns the only link to group 1: at P=0 it goes local first, then g0s1's global.
    let w = Walker::new(&f, &p0, &none);
    let src = f.hosts().iter().position(|h| h.name == "h0.0.1").unwrap();
    let dst = f.hosts().iter().position(|h| h.name == "h1.0.1").unwrap();
    let traces = w.walk_pair(src, dst, SelectMode::Bucket(1)).unwrap();
    assert_delivered(&traces, dst, "diverted");
    let roles: Vec<PortRole> = traces[0]
        .hops
        .iter()
        .map(|h| f.switches()[h.switch].port(h.out_port).unwrap().role)
        .collect();
    assert_eq!(
        roles[..2],
        [PortRole::Local, PortRole::Global],
        "{traces:?}"
    );
    assert_eq!(global_links(&f, &traces[0]), 2);
}

/// One host of every host-bearing switch, every ordered pair of them: a switch's hosts share all
/// rules but their delivery port, so this covers every switch-level path at a fraction of the
/// host pairs.
fn switch_pairs(f: &Fabric) -> Vec<(HostId, HostId)> {
    let mut seen = BTreeSet::new();
    let reps: Vec<HostId> = (0..f.hosts().len())
        .filter(|&h| seen.insert(f.hosts()[h].switch))
        .collect();
    reps.iter()
        .flat_map(|&s| reps.iter().map(move |&d| (s, d)))
        .filter(|(s, d)| s != d)
        .collect()
}

/// Every connected pair arrives on every path the plan allows — every SELECT bucket with a
/// weight at the source, each followed through the transit and diversion rules under OpenFlow's
/// arrival-port rule — and the walked first hops are exactly the source group's live weighted
/// buckets (so no bucket is skipped). Disconnected pairs are dropped, never looped.
fn assert_every_bucket_delivers(f: &Fabric, plan: &Plan, failed: &BTreeSet<Link>, ctx: &str) {
    let comp = f.components(failed);
    let w = Walker::new(f, plan, failed);
    let live = |x: usize, port| f.link_at(x, port).is_none_or(|l| !failed.contains(&l));
    for (s, d) in switch_pairs(f) {
        let (ss, ds) = (f.hosts()[s].switch, f.hosts()[d].switch);
        let ctx = format!("{ctx} {} -> {}", f.hosts()[s].name, f.hosts()[d].name);
        let traces = w.walk_pair(s, d, SelectMode::EveryBucket).unwrap();
        if comp[ss] != comp[ds] {
            for t in &traces {
                assert!(matches!(t.end, End::Dropped { .. }), "{ctx}: {t:?}");
            }
            continue;
        }
        assert_delivered(&traces, d, &ctx);
        if f.switches()[ss].group == f.switches()[ds].group {
            continue;
        }
        let b0 = w.walk_pair(s, d, SelectMode::Bucket(0)).unwrap();
        let m = b0[0].hops[0].out_port;
        let id = fabricflow_controller::plan::DEFAULT_GROUP_BASE + m;
        let ec = id + fabricflow_controller::plan::EQUAL_COST_GROUP_OFFSET;
        let group = plan.switches[ss]
            .groups
            .iter()
            .find(|g| g.id == id || g.id == ec);
        let group = group.unwrap_or_else(|| panic!("{ctx}: no group {id}"));
        let expected: BTreeSet<u32> = group
            .buckets
            .iter()
            .filter(|b| b.weight > 0)
            .filter_map(|b| b.watch_port)
            .filter(|&p| live(ss, p))
            .collect();
        let walked: BTreeSet<u32> = traces.iter().map(|t| t.hops[0].out_port).collect();
        assert_eq!(walked, expected, "{ctx}: first hops");
    }
}

/// Specs of the U-turn regression: Dragonflies with h = 1 (local detours) and h > 1 (global
/// Valiant candidates), and k-ary n-trees.
const UTURN_SPECS: [&str; 7] = [
    "dragonfly:p=1,a=2,h=1",
    "dragonfly:p=1,a=2,h=3",
    "dragonfly:p=1,a=3,h=1",
    "dragonfly:p=2,a=4,h=2",
    "fattree:k=4,n=2",
    "fattree:k=4,n=3",
    "fattree:k=4,n=3,w=2",
];

/// What an [`SelectMode::EveryBucket`] walk of a plan depends on: the flows and, per group, the
/// distinct buckets of weight > 0 (not the weights themselves). Plans with equal keys walk
/// identically.
#[allow(clippy::type_complexity)]
fn walk_key(plan: &Plan) -> Vec<(&[Flow], Vec<(u32, BTreeSet<(Option<u32>, &[Action])>)>)> {
    plan.switches
        .iter()
        .map(|s| {
            let groups = s
                .groups
                .iter()
                .map(|g| {
                    let live = g.buckets.iter().filter(|b| b.weight > 0);
                    let set: BTreeSet<_> =
                        live.map(|b| (b.watch_port, b.actions.as_slice())).collect();
                    (g.id, set)
                })
                .collect();
            (s.flows.as_slice(), groups)
        })
        .collect()
}

/// Checks the plans of every P around `failed` (a P whose plan walks like the previous one's is
/// not walked again: P = 0 and P = 50 differ only in weights).
fn check_failed_set(f: &Fabric, spec: &str, failed: &BTreeSet<Link>) {
    let plans: Vec<(f64, Plan)> = [50.0, 0.0]
        .into_iter()
        .map(|p| (p, plan(f, p, failed, false)))
        .collect();
    for (i, (p, pl)) in plans.iter().enumerate() {
        if i > 0 && walk_key(pl) == walk_key(&plans[i - 1].1) {
            continue;
        }
        assert_every_bucket_delivers(f, pl, failed, &format!("{spec} P={p} {failed:?}"));
    }
}

/// Checks every failed set, split over two threads.
fn check_failed_sets(f: &Fabric, spec: &str, sets: &[BTreeSet<Link>]) {
    std::thread::scope(|s| {
        for chunk in sets.chunks(sets.len().div_ceil(2).max(1)) {
            s.spawn(move || {
                for failed in chunk {
                    check_failed_set(f, spec, failed);
                }
            });
        }
    });
}

/// Every single failed link of `spec`.
fn single_failures_deliver_through_every_bucket(spec: &str) {
    let f = fabric(spec);
    let sets: Vec<BTreeSet<Link>> = f.links().into_iter().map(|l| BTreeSet::from([l])).collect();
    check_failed_sets(&f, spec, &sets);
}

/// The chaos e2e finding: Dragonfly(1,2,1) with g0s0:3–g1s1:3 down kept g2s0's Valiant bucket
/// into group 0, which now reaches group 1 back through g2s0: black-holed on a real switch.
#[test]
fn uturn_chaos_case_is_delivered() {
    let f = fabric("dragonfly:p=1,a=2,h=1");
    let (a, b) = (
        f.switch_by_name("g0s0").unwrap(),
        f.switch_by_name("g1s1").unwrap(),
    );
    let link = f.link_at(a, 3).unwrap();
    assert_eq!(f.link_at(b, 3), Some(link));
    let failed = BTreeSet::from([link]);
    for p in [100.0, 50.0, 0.0] {
        let plan = plan(&f, p, &failed, false);
        assert_every_bucket_delivers(&f, &plan, &failed, &format!("chaos P={p}"));
    }
}

#[test]
fn uturn_single_failures_dragonfly_1_2_1() {
    single_failures_deliver_through_every_bucket(UTURN_SPECS[0]);
}

#[test]
fn uturn_single_failures_dragonfly_1_2_3() {
    single_failures_deliver_through_every_bucket(UTURN_SPECS[1]);
}

#[test]
fn uturn_single_failures_dragonfly_1_3_1() {
    single_failures_deliver_through_every_bucket(UTURN_SPECS[2]);
}

#[test]
fn uturn_single_failures_dragonfly_2_4_2() {
    single_failures_deliver_through_every_bucket(UTURN_SPECS[3]);
}

#[test]
fn uturn_single_failures_fattrees() {
    single_failures_deliver_through_every_bucket(UTURN_SPECS[4]);
    single_failures_deliver_through_every_bucket(UTURN_SPECS[5]);
}

/// Double failures: every pair of links on the smallest Dragonflies, a fixed random sample on
/// the others.
#[test]
fn uturn_double_failures() {
    let mut rng = Rng(0x0075_7475_726e_0002);
    for spec in UTURN_SPECS {
        let f = fabric(spec);
        let links = f.links();
        let mut sets: Vec<BTreeSet<Link>> = Vec::new();
        if links.len() <= 18 {
            for i in 0..links.len() {
                for j in i + 1..links.len() {
                    sets.push(BTreeSet::from([links[i], links[j]]));
                }
            }
        } else {
            for _ in 0..24 {
                let (i, j) = (rng.next(links.len()), rng.next(links.len()));
                sets.push(BTreeSet::from([links[i], links[j]]));
            }
        }
        check_failed_sets(&f, spec, &sets);
    }
}

/// Lossless plans around failed links keep an acyclic channel dependency graph: dropping a
/// candidate that would turn back, or choosing another detour port, must not add a cycle.
#[test]
fn uturn_free_lossless_plans_stay_acyclic_around_failures() {
    for spec in [
        "dragonfly:p=1,a=2,h=1",
        "dragonfly:p=1,a=3,h=1",
        "dragonfly:p=1,a=2,h=3",
    ] {
        let f = fabric(spec);
        for link in f.links() {
            let failed = BTreeSet::from([link]);
            for p in [50.0, 0.0] {
                let plan = plan(&f, p, &failed, true);
                let cdg = Cdg::from_plan(&f, &plan, &failed).unwrap();
                assert_eq!(cdg.find_cycle(), None, "{spec} P={p} {link:?}");
            }
        }
    }
}

mod uturn_props {
    use super::*;
    use proptest::prelude::*;

    const SPECS: [&str; 4] = [
        "dragonfly:p=1,a=2,h=1",
        "dragonfly:p=1,a=3,h=1",
        "dragonfly:p=1,a=2,h=3",
        "fattree:k=2,n=3",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Any set of failed links, any P: every connected pair arrives through every bucket.
        #[test]
        fn random_failures_deliver_through_every_bucket(
            spec in 0..SPECS.len(),
            picks in proptest::collection::vec(any::<prop::sample::Index>(), 1..5),
            p in prop_oneof![Just(0.0), Just(30.0), Just(50.0), Just(90.0)],
        ) {
            let f = fabric(SPECS[spec]);
            let links = f.links();
            let failed: BTreeSet<Link> = picks.iter().map(|i| links[i.index(links.len())]).collect();
            let plan = plan(&f, p, &failed, false);
            assert_every_bucket_delivers(&f, &plan, &failed, &format!("{} P={p} {failed:?}", SPECS[spec]));
        }
    }
}

/// Without failed links nothing turns back, so no candidate is left out: every decision point of
/// an h > 1 Dragonfly keeps all the switch's other global ports.
#[test]
fn uturn_filter_leaves_unfailed_plans_alone() {
    for (spec, h) in [("dragonfly:p=1,a=2,h=3", 3), ("dragonfly:p=2,a=4,h=2", 2)] {
        let f = fabric(spec);
        let plan = plan(&f, 50.0, &BTreeSet::new(), false);
        for (x, sp) in plan.switches.iter().enumerate() {
            for g in &sp.groups {
                let m = g.id - fabricflow_controller::plan::DEFAULT_GROUP_BASE;
                let global = f.switches()[x].port(m).unwrap().role == PortRole::Global;
                let candidates = g.buckets.len() - 2;
                assert_eq!(candidates, h - usize::from(global), "{spec} {}", sp.name);
            }
        }
    }
}

/// Fat-tree up ports are all minimal: their decision points sit in the equal-cost half of the
/// group range and start as an even split; a Dragonfly's never do.
#[test]
fn equal_cost_decision_points_start_even_and_only_where_every_candidate_is_minimal() {
    use fabricflow_controller::plan::{DEFAULT_GROUP_BASE, EQUAL_COST_GROUP_OFFSET};
    let ec = |id: u32| id >= DEFAULT_GROUP_BASE + EQUAL_COST_GROUP_OFFSET;
    let none = BTreeSet::new();
    for spec in [
        "fattree:k=4,n=2",
        "fattree:k=4,n=3",
        "leafspine:l=4,s=2,p=3",
    ] {
        let f = fabric(spec);
        let valiant = plan(&f, 0.0, &none, false);
        for g in valiant.switches.iter().flat_map(|s| &s.groups) {
            assert_eq!(
                g.buckets[0].weight, 0,
                "{spec}: P = 0 leaves the minimal port"
            );
        }
        let plan = plan(&f, 100.0, &none, false);
        let groups: Vec<_> = plan.switches.iter().flat_map(|s| &s.groups).collect();
        assert!(!groups.is_empty(), "{spec}");
        for g in groups {
            assert!(ec(g.id), "{spec}: group {} is not equal-cost", g.id);
            let w: Vec<u16> = g.buckets.iter().map(|b| b.weight).collect();
            let body = &w[..w.len() - 1];
            let (lo, hi) = (body.iter().min().unwrap(), body.iter().max().unwrap());
            assert!(
                hi - lo <= 1,
                "{spec}: group {} weights {w:?} are not even",
                g.id
            );
        }
    }
    let f = fabric("dragonfly:p=2,a=4,h=2");
    let plan = plan(&f, 100.0, &none, false);
    for g in plan.switches.iter().flat_map(|s| &s.groups) {
        assert!(
            !ec(g.id),
            "Dragonfly group {} in the equal-cost range",
            g.id
        );
        assert_eq!(g.buckets[0].weight, 255);
    }
}
