//! Where a CNM ends, on the controller's real plans: every switch's core learns its switch's
//! plan as the agent does; for every host pair, every path the pair's packets may take and every
//! congested fabric port on it, the CNM its congestion point generates is walked through the
//! plan's pipelines (PACKET_OUT at in_port CONTROLLER, table 0 → transit; a fabric arrival of a
//! CNM → the agent) and handed to the core of each switch whose agent gets it, which charges it
//! or relays it on, until some core charges it.
//!
//! Asserted: every CNM is charged, never dropped or looped; where, and after how many relays.
//! On a fat-tree of n ≥ 3 levels every CNM reaches the culprit's leaf (the only level with
//! decision points) after at most 2n − 4 relays, and some need them (the first switch back has
//! no decision point: what a switch that charges every CNM itself leaves without effect). On a
//! 2-level fat-tree and a Dragonfly nothing is relayed: every CNM is charged by the first switch
//! it reaches, as without relays.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::BTreeSet;

use fabricflow_agent::plan::{LearnedPlan, PlanConventions};
use fabricflow_agent::policy::PolicyConfig;
use fabricflow_agent::switch_core::{
    CnmFate, CnmRoute, CongestionSample, Culprit, ReceivedCnm, MAX_CNM_RELAYS,
};
use fabricflow_agent::weights::WeightsConfig;
use fabricflow_agent::SwitchCore;
use fabricflow_controller::pipeline::{End, Packet, SelectMode, Walker};
use fabricflow_controller::plan::{ethertype, DEFAULT_AGENT_CONTROLLER_ID};
use fabricflow_controller::planner::desired_state;
use fabricflow_controller::topology::{Fabric, Peer};
use fabricflow_controller::{Plan, PlanOptions, TopologySpec};
use fabricflow_proto::openflow::multipart::{FlowStats, GroupDesc};
use fabricflow_proto::openflow::port::OFPP_CONTROLLER;
use fabricflow_proto::MacAddr;

/// Where one CNM was charged.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    /// The congestion point's switch.
    cp: usize,
    /// The culprit's source switch.
    src_switch: usize,
    /// The culprit's destination group.
    dst_group: u16,
    /// The first switch whose agent got the CNM (the only one without relays).
    first: usize,
    /// Whether that switch had a decision point for the culprit's destination.
    first_has_dp: bool,
    /// The switch that charged it (`None`: the CP's own host, charged by source processing).
    charged_at: Option<usize>,
    relays: u8,
}

fn fabric(spec: &str) -> Fabric {
    spec.parse::<TopologySpec>().unwrap().build().unwrap()
}

/// Every switch's plan as its agent learns it from the switch.
fn learned(f: &Fabric, opts: &PlanOptions) -> Vec<LearnedPlan> {
    let desired = desired_state(f, opts, &BTreeSet::new()).unwrap();
    f.switches()
        .iter()
        .map(|sw| {
            let d = &desired[&sw.dpid];
            let groups: Vec<GroupDesc> = d.groups.iter().map(GroupDesc::from).collect();
            let flows: Vec<FlowStats> = d.flows.iter().map(FlowStats::from).collect();
            LearnedPlan::learn(&PlanConventions::default(), &groups, &flows)
        })
        .collect()
}

fn cores(f: &Fabric, opts: &PlanOptions, policy: &PolicyConfig) -> Vec<SwitchCore> {
    learned(f, opts)
        .into_iter()
        .map(|plan| {
            let mut c = SwitchCore::new(policy.clone(), WeightsConfig::default()).unwrap();
            c.learn(plan, 0, 0);
            c
        })
        .collect()
}

/// Every CNM of every congested fabric port on every path of every host pair, followed to
/// where it is charged.
fn outcomes(f: &Fabric) -> Vec<Outcome> {
    outcomes_with(f, &PolicyConfig::default())
}

/// [`outcomes`] with the agents' policy configuration `policy`.
fn outcomes_with(f: &Fabric, policy: &PolicyConfig) -> Vec<Outcome> {
    // P = 50 %: every candidate bucket has weight, so every path a decision point may draw
    // is walked.
    let opts = PlanOptions {
        p_minimal_percent: 50.0,
        ..PlanOptions::default()
    };
    let plan = Plan::build(f, &opts).unwrap();
    let none = BTreeSet::new();
    let walker = Walker::new(f, &plan, &none);
    let mut cores = cores(f, &opts, policy);
    let hosts = f.hosts();
    let mut out = Vec::new();
    let mut now = 0u64;
    for (s, src) in hosts.iter().enumerate() {
        for (d, dst) in hosts.iter().enumerate() {
            if s == d {
                continue;
            }
            let culprit = Culprit {
                src: src.location.mac(),
                dst: dst.location.mac(),
            };
            let traces = walker.walk_pair(s, d, SelectMode::EveryBucket).unwrap();
            let mut cps = BTreeSet::new();
            for t in &traces {
                assert_eq!(t.end, End::Delivered(d), "{t:?}");
                // Every hop but the last (out to the destination host) leaves by a fabric port.
                for h in &t.hops[..t.hops.len() - 1] {
                    cps.insert((h.switch, h.out_port));
                }
            }
            for (cp, port) in cps {
                now += 1_000;
                let sample = CongestionSample {
                    port: Some(port),
                    qntz_fb: 20,
                    culprit,
                };
                if cores[cp].on_congestion(&sample, now) == CnmRoute::OwnHost {
                    assert_eq!(cp, src.switch);
                    out.push(Outcome {
                        cp,
                        src_switch: src.switch,
                        dst_group: dst.location.group,
                        first: cp,
                        first_has_dp: cores[cp].minimal_port_towards(culprit.dst).is_some(),
                        charged_at: None,
                        relays: 0,
                    });
                    continue;
                }
                let at = (src.switch, dst.location.group);
                out.extend(follow(&walker, &mut cores, cp, culprit, at, now));
            }
        }
    }
    out
}

/// The CNM switch `cp` injects about `culprit`, hop by hop and agent by agent.
fn follow(
    walker: &Walker<'_>,
    cores: &mut [SwitchCore],
    cp: usize,
    culprit: Culprit,
    (src_switch, dst_group): (usize, u16),
    now: u64,
) -> Vec<Outcome> {
    let mut done = Vec::new();
    // (switch injecting it, its relay count, the first agent that got it)
    let mut pending = vec![(cp, 0u8, None::<(usize, bool)>)];
    while let Some((x, relays, first)) = pending.pop() {
        let cnm = Packet::ethernet(MacAddr([2, 0xff, 0, 0, 0, 1]), culprit.src, ethertype::CNM);
        let traces = walker
            .walk_from(x, OFPP_CONTROLLER, cnm, SelectMode::EveryBucket)
            .unwrap();
        assert!(!traces.is_empty());
        for t in traces {
            let End::ToController { switch: y, id } = t.end else {
                panic!("a CNM from switch {x} did not reach an agent: {t:?}");
            };
            assert_eq!(id, Some(DEFAULT_AGENT_CONTROLLER_ID));
            assert_ne!(y, x, "handed back to the agent that sent it");
            let port = t.hops.last().unwrap().in_port;
            // The session takes it (`check_cnm`): a port the agent knows CNMs come in by.
            let plan = cores[y].plan().unwrap();
            assert!(
                plan.takes_cnm_from(port),
                "switch {y} refuses a CNM on port {port}"
            );
            // Where decision points are, the ports are the fabric ports learned from routes,
            // as before.
            if !plan.groups.is_empty() {
                assert!(plan.cnm_ports.is_subset(&plan.fabric_ports), "switch {y}");
            }
            let first = first.unwrap_or((y, cores[y].minimal_port_towards(culprit.dst).is_some()));
            let received = ReceivedCnm {
                port,
                culprit,
                qntz_fb: 20,
                relays,
            };
            match cores[y].on_received_cnm(&received, now) {
                CnmFate::Charged => done.push(Outcome {
                    cp,
                    src_switch,
                    dst_group,
                    first: first.0,
                    first_has_dp: first.1,
                    charged_at: Some(y),
                    relays,
                }),
                CnmFate::Relay { relays: r } => {
                    assert_eq!(r, relays + 1);
                    pending.push((y, r, Some(first)));
                }
                CnmFate::RelayBudgetSpent => {
                    panic!("CNM from {cp} about {culprit:?} spent its relay budget at {y}")
                }
            }
        }
    }
    done
}

fn level(f: &Fabric, sw: usize) -> u8 {
    // Fat-tree dpids carry the level in byte 3 (see `fabricflow-controller plan`): leaves 0.
    ((f.switches()[sw].dpid >> 24) & 0xff) as u8
}

fn check_fat_tree(spec: &str, n: u8) {
    let f = fabric(spec);
    let all = outcomes(&f);
    assert!(!all.is_empty());
    let mut relayed = 0;
    for o in &all {
        // Charged at the culprit's own leaf, whatever the congested level.
        assert_eq!(o.charged_at.unwrap_or(o.cp), o.src_switch, "{spec}: {o:?}");
        assert!(o.relays <= 2 * n.saturating_sub(2), "{spec}: {o:?}");
        if o.relays > 0 {
            relayed += 1;
            assert!(!o.first_has_dp && o.first != o.src_switch, "{spec}: {o:?}");
            assert!(level(&f, o.first) > 0);
        } else {
            assert_eq!(o.first, o.src_switch, "{spec}: {o:?}");
        }
    }
    if n >= 3 {
        // Congestion above the second level: the first switch back has no decision point.
        assert!(relayed > 0, "{spec}: nothing relayed");
        let max = all.iter().map(|o| o.relays).max().unwrap();
        assert_eq!(max, 2 * (n - 2), "{spec}: the longest relay chain");
    } else {
        assert_eq!(relayed, 0, "{spec}: a 2-level tree relays nothing");
    }
}

#[test]
fn fat_trees_of_three_and_four_levels_charge_every_cnm_at_the_culprits_leaf() {
    check_fat_tree("fattree:k=2,n=3", 3);
    check_fat_tree("fattree:k=3,n=3", 3);
    check_fat_tree("fattree:k=2,n=4", 4);
}

#[test]
fn a_fat_tree_with_horizontal_links_charges_every_cnm_at_the_culprits_leaf() {
    let f = fabric("fattree:k=2,n=3,w=1");
    for o in outcomes(&f) {
        assert_eq!(o.charged_at.unwrap_or(o.cp), o.src_switch, "{o:?}");
        assert!(o.relays < MAX_CNM_RELAYS);
    }
}

#[test]
fn two_level_fat_trees_charge_where_the_cnm_first_lands_as_without_relays() {
    check_fat_tree("fattree:k=4,n=2", 2);
    check_fat_tree("fattree:k=2,n=2", 2);
}

#[test]
fn dragonflies_charge_every_cnm_at_the_culprits_switch() {
    // The default `policy.cnm_at_culprit_switch`: a CNM that first lands anywhere but the
    // culprit's switch (a detour's second global link, the culprit's destination group) is
    // relayed there.
    for spec in [
        "dragonfly:p=1,a=2,h=3",
        "dragonfly:p=2,a=2,h=1",
        "dragonfly:p=1,a=4,h=1",
    ] {
        let f = fabric(spec);
        let all = outcomes(&f);
        assert!(!all.is_empty());
        let mut relayed = 0;
        for o in &all {
            assert_eq!(o.charged_at.unwrap_or(o.cp), o.src_switch, "{spec}: {o:?}");
            assert!(o.relays <= 2, "{spec}: {o:?}");
            assert_eq!(o.relays > 0, o.first != o.src_switch, "{spec}: {o:?}");
            relayed += usize::from(o.relays > 0);
        }
        assert!(relayed > 0, "{spec}: nothing relayed");
        println!("{spec}: {} CNMs, {relayed} relayed", all.len());
    }
}

#[test]
fn dragonflies_charge_every_cnm_where_it_first_lands_when_asked() {
    // `policy.cnm_at_culprit_switch = false`: the first switch with a decision point for the
    // culprit's destination charges it, nothing is relayed.
    let policy = PolicyConfig {
        cnm_at_culprit_switch: false,
        ..PolicyConfig::default()
    };
    for spec in [
        "dragonfly:p=1,a=2,h=3",
        "dragonfly:p=2,a=2,h=1",
        "dragonfly:p=1,a=4,h=1",
    ] {
        let f = fabric(spec);
        let all = outcomes_with(&f, &policy);
        assert!(!all.is_empty());
        let mut no_dp = 0;
        for o in &all {
            assert_eq!(
                (o.charged_at.unwrap_or(o.cp), o.relays),
                (o.first, 0),
                "{spec}: {o:?}"
            );
            if !o.first_has_dp && o.first != o.src_switch {
                // Landed in the culprit's destination group (Valiant culprits): charged to
                // the arrival port there.
                assert_eq!(
                    f.switches()[o.first].group,
                    Some(o.dst_group),
                    "{spec}: {o:?}"
                );
                no_dp += 1;
            }
        }
        println!(
            "{spec}: {} CNMs, {no_dp} first land on a switch without their decision point",
            all.len()
        );
    }
}

#[test]
fn a_file_fabric_with_a_transit_only_switch_relays_to_the_source() {
    // a and d have hosts (decision points), b, c and e are transit only; a reaches d over
    // b–c or e–c (an ECMP decision point). c's congested port towards d sends its CNMs to a
    // through b or e, which relay them.
    let yaml = r#"
switches:
  - {name: a, dpid: 1}
  - {name: b, dpid: 2}
  - {name: c, dpid: 3}
  - {name: d, dpid: 4, group: 1}
  - {name: e, dpid: 5}
links:
  - [a:10, b:10]
  - [b:11, c:10]
  - [c:11, d:10]
  - [a:11, e:10]
  - [e:11, c:12]
hosts:
  - {at: "a:1"}
  - {at: "d:1"}
  - {at: "a:2"}
"#;
    let f = fabricflow_controller::topology::file::parse(yaml).unwrap();
    let all = outcomes(&f);
    let transit: BTreeSet<usize> = [1, 2, 4].into();
    let mut relayed = 0;
    for o in &all {
        assert_eq!(o.charged_at.unwrap_or(o.cp), o.src_switch, "{o:?}");
        if transit.contains(&o.first) {
            relayed += 1;
            assert_eq!(o.relays, 1, "{o:?}");
        }
    }
    assert!(relayed > 0);
}

/// CNMs through the ports' interfaces (controller `cnm_to_agent = "interface"`, agent
/// `runtime.cnm_out = "interface"`): the port the agent writes a CNM on ([`LearnedPlan::route_to`])
/// is the port the pipeline sends an injected CNM out of, and where the packet-in plan hands a
/// CNM to the agent, the interface plan drops it at a port the agent reads
/// ([`LearnedPlan::cnm_interface_ports`], the same ports as the packet-in plan's `cnm_ports`).
#[test]
fn cnms_through_interfaces_leave_by_the_pipelines_port_and_are_read_where_packet_ins_were() {
    use fabricflow_controller::plan::CnmToAgent;
    let cp_mac = MacAddr([2, 0xff, 0, 0, 0, 1]);
    let none = BTreeSet::new();
    for spec in [
        "dragonfly:p=1,a=2,h=3",
        "dragonfly:p=2,a=4,h=2",
        "fattree:k=4,n=2",
        "fattree:k=2,n=3",
        "torus:k=4,n=2,p=1",
    ] {
        let f = fabric(spec);
        let packet_in = PlanOptions::default();
        let interface = PlanOptions {
            cnm_to_agent: CnmToAgent::Interface,
            ..PlanOptions::default()
        };
        let (pi, ifc) = (learned(&f, &packet_in), learned(&f, &interface));
        for (x, (a, b)) in pi.iter().zip(&ifc).enumerate() {
            assert!(a.cnm_interface_ports.is_empty(), "{spec} {x}");
            assert!(!b.cnm_interface_ports.is_empty(), "{spec} {x}");
            assert_eq!(b.cnm_interface_ports, a.cnm_ports, "{spec} {x}");
            assert!(b.cnm_ports.is_empty(), "{spec} {x}");
            assert!(b.same_structure(b) && !a.same_structure(b), "{spec} {x}");
        }
        let pi_plan = Plan::build(&f, &packet_in).unwrap();
        let if_plan = Plan::build(&f, &interface).unwrap();
        let (pi_walk, if_walk) = (
            Walker::new(&f, &pi_plan, &none),
            Walker::new(&f, &if_plan, &none),
        );
        let mut checked = 0;
        for x in 0..f.switches().len() {
            for host in f.hosts().iter().filter(|h| h.switch != x) {
                let cnm = Packet::ethernet(cp_mac, host.location.mac(), ethertype::CNM);
                let out = ifc[x].route_to(host.location.mac());
                assert!(out.is_some_and(|p| ifc[x].is_fabric_port(p)), "{spec} {x}");
                for t in pi_walk
                    .walk_from(x, OFPP_CONTROLLER, cnm.clone(), SelectMode::EveryBucket)
                    .unwrap()
                {
                    assert_eq!(Some(t.hops[0].out_port), out, "{spec} {x}: {t:?}");
                }
                for t in if_walk
                    .walk_from(x, OFPP_CONTROLLER, cnm, SelectMode::EveryBucket)
                    .unwrap()
                {
                    let End::Dropped { switch: y, .. } = t.end else {
                        panic!("{spec}: a CNM from {x} was not dropped for the agent: {t:?}");
                    };
                    assert_ne!(y, x);
                    // The trace ends at the last switch that forwarded it: y's arrival port is
                    // the far end of that hop's output.
                    let last = t.hops.last().unwrap();
                    let peer = f.switches()[last.switch]
                        .ports
                        .iter()
                        .find(|p| p.no == last.out_port)
                        .map(|p| p.peer);
                    let Some(Peer::Switch { switch, port }) = peer else {
                        panic!("{spec}: {t:?} does not end on a link");
                    };
                    assert_eq!(switch, y);
                    assert!(ifc[y].cnm_interface_ports.contains(&port), "{spec}: {t:?}");
                    assert!(ifc[y].takes_cnm_from(port));
                    checked += 1;
                }
            }
        }
        assert!(checked > 0);
    }
}
