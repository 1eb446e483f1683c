//! dFtree's repath and unpath as rules, walked through the in-memory pipeline: the slow-lane
//! rule at a contributor's edge switch re-marks only the traffic to the hot spot, which then
//! takes exactly the paths it took before.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::BTreeSet;

use fabricflow_controller::dftree::{slow_lane_flow, with_slow_lanes, LaneMark};
use fabricflow_controller::pipeline::{End, Hop, Packet, SelectMode, Walker};
use fabricflow_controller::plan::{ethertype, Lossless};
use fabricflow_controller::topology::{Fabric, HostId};
use fabricflow_controller::{Plan, PlanOptions, TopologySpec};

fn fabric(spec: &str) -> Fabric {
    spec.parse::<TopologySpec>().unwrap().build().unwrap()
}

/// Every path of an IPv4 packet from `s` to `d`: (hops without the PCP, the packet's DSCP and
/// the PCPs on the way), all delivered to `d`.
type Path = (Vec<Hop>, u8, Vec<Option<u8>>);

fn paths(f: &Fabric, plan: &Plan, s: HostId, d: HostId) -> Vec<Path> {
    let none = BTreeSet::new();
    let w = Walker::new(f, plan, &none);
    let traces = w.walk_pair(s, d, SelectMode::EveryBucket).unwrap();
    assert!(!traces.is_empty());
    traces
        .into_iter()
        .map(|t| {
            assert_eq!(t.end, End::Delivered(d), "{s} -> {d}: {t:?}");
            let pcps = t.hops.iter().map(|h| h.pcp).collect();
            let hops = t.hops.into_iter().map(|h| Hop { pcp: None, ..h }).collect();
            (hops, t.packet.ip_dscp, pcps)
        })
        .collect()
}

#[test]
fn repath_marks_only_traffic_to_the_hot_spot_and_keeps_its_paths() {
    for spec in ["leafspine:l=4,s=2,p=3", "fattree:k=4,n=3"] {
        let f = fabric(spec);
        let plan = Plan::build(&f, &PlanOptions::default()).unwrap();
        let n = f.hosts().len();
        let hot = 0;
        // Contributors behind two edge switches other than the hot spot's.
        let hot_edge = f.hosts()[hot].switch;
        let edges: Vec<usize> = (0..n)
            .map(|h| f.hosts()[h].switch)
            .filter(|&e| e != hot_edge)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .take(2)
            .collect();
        let lanes: BTreeSet<(usize, HostId)> = edges.iter().map(|&e| (e, hot)).collect();
        let slow = with_slow_lanes(&f, &plan, &lanes, LaneMark::Dscp(8));
        for s in 0..n {
            for d in 0..n {
                if s == d {
                    continue;
                }
                let before = paths(&f, &plan, s, d);
                let after = paths(&f, &slow, s, d);
                let marked = d == hot && edges.contains(&f.hosts()[s].switch);
                let want = if marked { 8 } else { 0 };
                assert!(after.iter().all(|p| p.1 == want), "{spec}: {s} -> {d}");
                let hops = |v: &[Path]| {
                    let mut h: Vec<String> = v.iter().map(|p| format!("{:?}", p.0)).collect();
                    h.sort();
                    h
                };
                assert_eq!(hops(&before), hops(&after), "{spec}: {s} -> {d}");
            }
        }
        // One rule per repathed edge switch; the unpath (an empty set) is the plan itself.
        let (b, a) = (plan.totals().0, slow.totals().0);
        assert_eq!(a, b + edges.len());
        assert_eq!(
            with_slow_lanes(&f, &plan, &BTreeSet::new(), LaneMark::Dscp(8)),
            plan
        );
        // Non-IPv4 traffic to the hot spot is not re-marked (DSCP needs IPv4) and still flows.
        let none = BTreeSet::new();
        let w = Walker::new(&f, &slow, &none);
        let src = (0..n).find(|&h| f.hosts()[h].switch == edges[0]).unwrap();
        let pkt = Packet::ethernet(
            f.hosts()[src].location.mac(),
            f.hosts()[hot].location.mac(),
            0x88b5,
        );
        for t in w.walk(src, pkt, SelectMode::EveryBucket).unwrap() {
            assert_eq!(t.end, End::Delivered(hot));
            assert_eq!(t.packet.ip_dscp, 0);
        }
    }
}

#[test]
fn in_lossless_mode_the_slow_lane_is_a_pcp_on_every_hop() {
    let f = fabric("leafspine:l=3,s=2,p=2");
    let opts = PlanOptions {
        lossless: Some(Lossless { vlan_vid: 1 }),
        ..Default::default()
    };
    let plan = Plan::build(&f, &opts).unwrap();
    let hot = 0;
    let src = 4; // on leaf2
    let edge = f.hosts()[src].switch;
    let slow = with_slow_lanes(&f, &plan, &BTreeSet::from([(edge, hot)]), LaneMark::Pcp(3));
    for (hops, _, pcps) in paths(&f, &slow, src, hot) {
        // Every hop but delivery (which pops the tag) carries the slow PCP.
        assert!(hops.len() >= 3);
        assert!(
            pcps[..pcps.len() - 1].iter().all(|&p| p == Some(3)),
            "{pcps:?}"
        );
    }
    for (_, _, pcps) in paths(&f, &slow, src, 2) {
        assert!(
            pcps[..pcps.len() - 1].iter().all(|&p| p == Some(0)),
            "{pcps:?}"
        );
    }
    // Without the lossless tag there is no PCP: the rule matches tagged frames only, so
    // untagged traffic keeps its paths, untagged.
    let plain = Plan::build(&f, &PlanOptions::default()).unwrap();
    let mac = f.hosts()[hot].location.mac();
    let pcp_plain = with_slow_lanes(&f, &plain, &BTreeSet::from([(edge, hot)]), LaneMark::Pcp(3));
    for (_, dscp, pcps) in paths(&f, &pcp_plain, src, hot) {
        assert_eq!(dscp, 0);
        assert!(pcps.iter().all(Option::is_none), "{pcps:?}");
    }
    // A spine has no table-1 rule: no slow lane there.
    let spine = f.switch_by_name("spine0").unwrap();
    assert!(slow_lane_flow(&plain.switches[spine], mac, LaneMark::Dscp(8)).is_none());
    let rule = slow_lane_flow(&plain.switches[edge], mac, LaneMark::Dscp(8)).unwrap();
    assert_eq!(rule.matches.eth_type, Some(ethertype::IPV4));
}
