//! The agent learns exactly its switch's decision points, fabric ports and own hosts from the
//! controller's plan, on every kind of fabric the controller plans.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::{BTreeMap, BTreeSet};

use fabricflow_agent::plan::{LearnedPlan, PlanConventions};
use fabricflow_controller::planner::desired_state;
use fabricflow_controller::topology::{Peer, PortRole};
use fabricflow_controller::{PlanOptions, TopologySpec};
use fabricflow_proto::openflow::multipart::{FlowStats, GroupDesc};

/// `all_used`: every fabric port of the topology carries some rule (Dragonflies; a fat-tree's
/// transit rules may leave an up port unused, which the agent then rightly ignores).
fn check(spec: &str, all_used: bool) {
    let fabric: TopologySpec = spec.parse().unwrap();
    let fabric = fabric.build().unwrap();
    let desired = desired_state(&fabric, &PlanOptions::default(), &BTreeSet::new()).unwrap();
    for sw in fabric.switches() {
        let d = &desired[&sw.dpid];
        let groups: Vec<GroupDesc> = d.groups.iter().map(GroupDesc::from).collect();
        let flows: Vec<FlowStats> = d.flows.iter().map(FlowStats::from).collect();
        let plan = LearnedPlan::learn(&PlanConventions::default(), &groups, &flows);
        let fabric_ports: BTreeSet<u32> = sw.fabric_ports().map(|p| p.no).collect();
        if all_used {
            assert_eq!(
                plan.fabric_ports, fabric_ports,
                "{spec} {}: fabric ports",
                sw.name
            );
        } else {
            assert!(
                plan.fabric_ports.is_subset(&fabric_ports),
                "{spec} {}: fabric ports {:?} of {fabric_ports:?}",
                sw.name,
                plan.fabric_ports
            );
        }
        let hosts: BTreeSet<_> = sw
            .ports
            .iter()
            .filter_map(|p| match p.peer {
                Peer::Host(h) => Some(fabric.hosts()[h].location.mac()),
                Peer::Switch { .. } => None,
            })
            .collect();
        assert_eq!(plan.local_hosts, hosts, "{spec} {}: own hosts", sw.name);
        // Every decision point's minimal port is a fabric port, and so are its candidates.
        let by_port: BTreeMap<u32, Vec<u32>> = plan
            .groups
            .values()
            .map(|g| (g.dp.minimal_port, g.candidate_ports()))
            .collect();
        for (m, cands) in &by_port {
            assert!(
                fabric_ports.contains(m),
                "{spec} {}: minimal port {m}",
                sw.name
            );
            assert!(
                cands.iter().all(|c| fabric_ports.contains(c)),
                "{spec} {}: candidates of {m}: {cands:?}",
                sw.name
            );
        }
        // Every switch holds the plan, with or without decision points (a fat-tree's top
        // level has none): the agent must tell that from a switch not programmed yet.
        assert!(plan.is_installed(), "{spec} {}: plan installed", sw.name);
        if sw.has_hosts() && sw.ports.iter().any(|p| p.role == PortRole::Global) {
            assert!(!plan.is_empty(), "{spec} {}: decision points", sw.name);
        }
    }
}

#[test]
fn on_dragonflies() {
    for spec in [
        "dragonfly:p=2,a=4,h=2",
        "dragonfly:p=1,a=2,h=3",
        "dragonfly:p=2,a=2,h=1",
        "dragonfly:p=1,a=4,h=2",
    ] {
        check(spec, true);
    }
}

#[test]
fn on_fat_trees() {
    for spec in ["fattree:k=4,n=2", "fattree:k=2,n=3", "fattree:k=4,n=3"] {
        check(spec, false);
    }
}
