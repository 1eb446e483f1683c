//! Tori and meshes (k-ary n-cubes): the planner's dimension-order plan walked hop by hop, and
//! the dateline virtual channels that make it deadlock-free.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::BTreeSet;

use fabricflow_controller::cdg::Cdg;
use fabricflow_controller::pipeline::{End, SelectMode, Trace, Walker};
use fabricflow_controller::topology::cube::Cube;
use fabricflow_controller::topology::{Fabric, FabricKind};
use fabricflow_controller::{Plan, PlanOptions, TopologySpec};

fn fabric(spec: &str) -> Fabric {
    spec.parse::<TopologySpec>().unwrap().build().unwrap()
}

fn cube_of(f: &Fabric) -> Cube {
    match f.kind() {
        FabricKind::Torus { k, n, p } => Cube::new(k, n, p, true).unwrap(),
        FabricKind::Mesh { k, n, p } => Cube::new(k, n, p, false).unwrap(),
        other => panic!("not a cube: {other:?}"),
    }
}

/// Every host pair's walks through the plan; each must be delivered.
fn all_pairs(f: &Fabric, plan: &Plan) -> Vec<Trace> {
    let none = BTreeSet::new();
    let w = Walker::new(f, plan, &none);
    let n = f.hosts().len();
    let mut out = Vec::new();
    for s in 0..n {
        for d in (0..n).filter(|&d| d != s) {
            let traces = w.walk_pair(s, d, SelectMode::EveryBucket).unwrap();
            assert!(!traces.is_empty());
            for t in &traces {
                assert_eq!(t.end, End::Delivered(d), "{s} -> {d}: {t:?}");
            }
            out.extend(traces);
        }
    }
    out
}

#[test]
fn dimension_order_plans_deliver_every_pair_minimally() {
    for spec in [
        "torus:k=4,n=2,p=1",
        "torus:k=3,n=3,p=1",
        "mesh:k=4,n=2,p=2",
        "torus:k=5,n=1,p=2",
    ] {
        let f = fabric(spec);
        let c = cube_of(&f);
        let plan = Plan::build(&f, &PlanOptions::default()).unwrap();
        let traces = all_pairs(&f, &plan);
        for t in &traces {
            let (src, dst) = (t.hops[0].switch, t.hops.last().unwrap().switch);
            assert_eq!(t.links(), c.hops(src as u32, dst as u32) as usize, "{spec}");
            // Dimension order: the dimensions of the switch-to-switch hops never decrease.
            let dims: Vec<u32> = t.hops[..t.hops.len() - 1]
                .iter()
                .map(|h| c.port_dim(h.out_port).unwrap().0)
                .collect();
            assert!(dims.windows(2).all(|w| w[0] <= w[1]), "{spec}: {dims:?}");
        }
    }
}

/// The walked traces with each hop's class set to its dateline virtual channel: 1 once the
/// packet has crossed the wrap-around link of the dimension it is travelling in, 0 otherwise
/// (and again 0 on entering the next dimension).
fn with_dateline_classes(c: &Cube, traces: &[Trace]) -> Vec<Trace> {
    traces
        .iter()
        .map(|t| {
            let mut t = t.clone();
            let (mut dim, mut vc) = (u32::MAX, 0u8);
            for h in &mut t.hops {
                if let Some((d, _)) = c.port_dim(h.out_port) {
                    if d != dim {
                        (dim, vc) = (d, 0);
                    }
                    if c.crosses_dateline(h.switch as u32, h.out_port) {
                        h.pcp = Some(vc);
                        vc = 1;
                        continue;
                    }
                }
                h.pcp = Some(vc);
            }
            t
        })
        .collect()
}

#[test]
fn torus_needs_dateline_channels_and_they_suffice() {
    // Minimal routes in a 3-ring take one hop per dimension, so only k ≥ 4 rings wait in a cycle.
    for (spec, cycles) in [
        ("torus:k=4,n=2,p=1", true),
        ("torus:k=5,n=2,p=1", true),
        ("torus:k=3,n=3,p=1", false),
    ] {
        let f = fabric(spec);
        let c = cube_of(&f);
        let plan = Plan::build(&f, &PlanOptions::default()).unwrap();
        let traces = all_pairs(&f, &plan);
        let mut one_class = Cdg::new();
        for t in &traces {
            one_class.add_trace(&f, t);
        }
        assert_eq!(one_class.find_cycle().is_some(), cycles, "{spec}");
        let mut dateline = Cdg::new();
        for t in with_dateline_classes(&c, &traces) {
            dateline.add_trace(&f, &t);
        }
        assert_eq!(dateline.find_cycle(), None, "{spec}");
        if cycles {
            assert_eq!(dateline.classes(), BTreeSet::from([0, 1]), "{spec}");
        }
    }
    // A mesh under dimension order is acyclic with one class.
    let f = fabric("mesh:k=4,n=2,p=1");
    let plan = Plan::build(&f, &PlanOptions::default()).unwrap();
    let mut cdg = Cdg::new();
    for t in &all_pairs(&f, &plan) {
        cdg.add_trace(&f, t);
    }
    assert_eq!(cdg.find_cycle(), None);
}

/// Multipath plans: every pair, every path bucket, delivered untagged without loops over exactly
/// the planned path; path 0 is the untagged minimal route.
#[test]
fn path_tagged_rules_deliver_every_pair_on_every_path() {
    use fabricflow_controller::plan::paths::{Multipath, PathPlan};
    use fabricflow_controller::plan::{Action, PATH_GROUP_BASE};
    for spec in [
        "torus:k=4,n=2,p=1",
        "mesh:k=4,n=2,p=2",
        "dragonfly:p=1,a=2,h=2",
        "fattree:k=2,n=3",
    ] {
        let f = fabric(spec);
        let none = BTreeSet::new();
        let opts = PlanOptions {
            multipath: Some(Multipath::default()),
            ..Default::default()
        };
        let plan = Plan::build(&f, &opts).unwrap();
        let pp: PathPlan = Plan::path_plan(&f, &opts).unwrap().unwrap();
        let w = Walker::new(&f, &plan, &none);
        let mut alternatives = 0;
        for (s, hs) in f.hosts().iter().enumerate() {
            for (d, hd) in f.hosts().iter().enumerate() {
                if hs.switch == hd.switch {
                    continue;
                }
                let sp = &plan.switches[hs.switch];
                let group = sp
                    .groups
                    .iter()
                    .find(|g| g.id == PATH_GROUP_BASE + d as u32);
                let paths = pp.paths(hs.switch, hd.switch);
                let Some(group) = group else {
                    assert!(paths.len() <= 1, "{spec}: {s}->{d} has paths but no group");
                    continue;
                };
                // One bucket per path plus the padding bucket; only path 0 weighted at first.
                assert_eq!(group.buckets.len(), paths.len() + 1, "{spec}");
                assert!(group.buckets[1..paths.len()].iter().all(|b| b.weight == 0));
                for (i, path) in paths.iter().enumerate() {
                    let traces = w.walk_pair(s, d, SelectMode::Bucket(i)).unwrap();
                    assert_eq!(traces.len(), 1, "{spec} {s}->{d} path {i}");
                    let t = &traces[0];
                    assert_eq!(t.end, End::Delivered(d), "{spec} {s}->{d} path {i}: {t:?}");
                    assert_eq!(t.packet.eth_dst, hd.location.mac(), "{spec}: tag left");
                    let walked: Vec<(usize, u32)> = t.hops[..t.hops.len() - 1]
                        .iter()
                        .map(|h| (h.switch, h.out_port))
                        .collect();
                    assert_eq!(&walked, path, "{spec} {s}->{d} path {i}");
                    alternatives += usize::from(i > 0);
                }
                // The tag is written only on alternatives.
                let writes = |b: &fabricflow_controller::plan::Bucket| {
                    b.actions
                        .iter()
                        .any(|a| matches!(a, Action::SetField { .. }))
                };
                assert!(!writes(&group.buckets[0]));
                assert!(group.buckets[1..paths.len()].iter().all(writes));
            }
        }
        assert!(alternatives > 0, "{spec}: no alternative walked");
        // No decision points in a multipath plan.
        assert!(plan
            .switches
            .iter()
            .all(|sp| sp.groups.iter().all(|g| g.id >= PATH_GROUP_BASE)));
    }
}

/// The InfiniBand CC baseline's CNM delivery (`cnm_to_hosts`): a CNM an agent injects at any
/// switch (PACKET_OUT, in_port CONTROLLER) about a frame of host s — destination MAC s, the
/// culprit's source — is forwarded hop by hop and delivered out of s's host port, on the plain
/// and on the multipath plan. Without the option the first switch that receives it from a
/// fabric port hands it to the agent (controller id 2); a CNM a host sends is dropped either way.
#[test]
fn cnms_reach_the_culprits_host_with_cnm_to_hosts() {
    use fabricflow_controller::pipeline::Packet;
    use fabricflow_controller::plan::ir::ports;
    use fabricflow_controller::plan::paths::Multipath;
    use fabricflow_proto::ethernet::ethertype;
    let f = fabric("torus:k=4,n=2,p=1");
    let none = BTreeSet::new();
    let cp_mac = fabricflow_proto::MacAddr([2, 0, 0, 0, 0xff, 0]);
    for multipath in [None, Some(Multipath::default())] {
        let to_hosts = PlanOptions {
            cnm_to_hosts: true,
            multipath,
            ..PlanOptions::default()
        };
        let plan = Plan::build(&f, &to_hosts).unwrap();
        let w = Walker::new(&f, &plan, &none);
        let n = f.hosts().len();
        for s in 0..n {
            let culprit = f.host(s).unwrap().location.mac();
            for sw in 0..f.switches().len() {
                let cnm = Packet::ethernet(cp_mac, culprit, ethertype::CNM);
                let traces = w
                    .walk_from(sw, ports::CONTROLLER, cnm, SelectMode::EveryBucket)
                    .unwrap();
                assert!(!traces.is_empty());
                for t in &traces {
                    assert_eq!(t.end, End::Delivered(s), "CNM at {sw} for {s}: {t:?}");
                }
            }
            // A host's own CNM never enters the fabric.
            let forged = Packet::ethernet(culprit, culprit, ethertype::CNM);
            for t in w.walk(s, forged, SelectMode::EveryBucket).unwrap() {
                assert!(matches!(t.end, End::Dropped { .. }), "{t:?}");
            }
        }
        // The shipped delivery: the first switch hands it to the agent.
        let plan = Plan::build(
            &f,
            &PlanOptions {
                multipath,
                ..PlanOptions::default()
            },
        )
        .unwrap();
        let w = Walker::new(&f, &plan, &none);
        let far = f.host(10).unwrap().location.mac();
        let traces = w
            .walk_from(
                0,
                ports::CONTROLLER,
                Packet::ethernet(cp_mac, far, ethertype::CNM),
                SelectMode::EveryBucket,
            )
            .unwrap();
        for t in &traces {
            assert!(
                matches!(t.end, End::ToController { id: Some(_), .. }),
                "{t:?}"
            );
            assert_eq!(t.links(), 1, "{t:?}");
        }
    }
}
