//! DRB in the switch core, on the controller's real multipath plan of a 4×4 torus: learned from
//! the plan's groups and flows as the agent learns them from a switch, steered by CNMs about
//! path-tagged culprits, and written back to every group of the pair.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeSet;

use fabricflow_agent::drb::DstSwitch;
use fabricflow_agent::link::{PortLink, PortLinks};
use fabricflow_agent::plan::{LearnedPlan, PlanConventions};
use fabricflow_agent::policy::{PolicyConfig, PolicyKind};
use fabricflow_agent::weights::WeightsConfig;
use fabricflow_agent::SwitchCore;
use fabricflow_controller::plan::paths::{tagged_mac, Multipath};
use fabricflow_controller::planner::desired_state;
use fabricflow_controller::{PlanOptions, TopologySpec};
use fabricflow_proto::openflow::multipart::{FlowStats, GroupDesc};

const US: u64 = 1_000;

fn core_of(kind: PolicyKind, switch: usize) -> (SwitchCore, fabricflow_controller::Fabric) {
    let fabric = "torus:k=4,n=2,p=2"
        .parse::<TopologySpec>()
        .unwrap()
        .build()
        .unwrap();
    let opts = PlanOptions {
        multipath: Some(Multipath::default()),
        ..Default::default()
    };
    let desired = desired_state(&fabric, &opts, &BTreeSet::new()).unwrap();
    let d = &desired[&fabric.switches()[switch].dpid];
    let groups: Vec<GroupDesc> = d.groups.iter().map(GroupDesc::from).collect();
    let flows: Vec<FlowStats> = d.flows.iter().map(FlowStats::from).collect();
    let policy = PolicyConfig {
        kind,
        ..PolicyConfig::default()
    };
    let weights = WeightsConfig {
        min_update_interval_line_bytes: 0,
        min_update_interval_buffer_drains: 0.0,
        ..WeightsConfig::default()
    };
    let mut core = SwitchCore::new(policy, weights).unwrap();
    // The simulator's 40 Gb/s links.
    let link = PortLink {
        rate_bps: 40e9,
        buffer_bytes: 100_000,
    };
    core.set_links(PortLinks::new(link, Vec::new()), 0);
    core.learn(
        LearnedPlan::learn(&PlanConventions::default(), &groups, &flows),
        0,
        0,
    );
    (core, fabric)
}

#[test]
fn cnms_about_a_pair_open_its_paths_and_write_every_group_of_the_pair() {
    let (mut core, fabric) = core_of(PolicyKind::Drb, 0);
    let plan = core.plan().unwrap();
    // 15 remote switches × 2 hosts, four paths each (the torus's four ports), no decision point.
    assert_eq!(plan.path_groups.len(), 30);
    assert!(plan.groups.is_empty());
    // Host ports (1, 2) are not fabric ports, although the any-tag egress rules are masked.
    assert_eq!(
        plan.fabric_ports.iter().copied().collect::<Vec<_>>(),
        [3, 4, 5, 6]
    );
    let pairs = plan.path_pairs();
    assert_eq!(pairs.len(), 15);
    assert!(pairs
        .values()
        .all(|(paths, groups)| *paths == 4 && groups.len() == 2));
    // Nothing to write at first: the installed weights are DRB's initial ones.
    assert!(core.poll_write().is_none());
    let dst_host = &fabric.hosts()[2 * 5]; // switch c5
    let dst = DstSwitch::of_mac(dst_host.location.mac()).unwrap().0;
    for i in 0..9 {
        core.on_cnm(3, dst_host.location.mac(), 20, i * US);
        assert!(
            core.poll_write().is_none(),
            "CNM {i}: one path, nothing changes"
        );
    }
    core.on_cnm(3, dst_host.location.mac(), 20, 9 * US);
    let writes: Vec<_> = std::iter::from_fn(|| core.poll_write()).collect();
    assert_eq!(writes.len(), 2, "both hosts' groups of the pair");
    for w in &writes {
        assert_eq!(w.weights, [21, 234, 0, 0, 1]);
        assert!(pairs[&dst].1.contains(&w.group_id));
    }
    // A CNM about path 1 (the tag in the culprit's MAC) is charged to path 1.
    core.on_cnm(3, tagged_mac(dst_host.location.mac(), 1, 0), 20, 10 * US);
    assert_eq!(
        core.drb().unwrap().notifications(dst).unwrap(),
        [10, 1, 0, 0]
    );
    // New flows follow the weights: slots 0..20 path 0, 21.. path 1, the padding slot path 0.
    assert_eq!(core.select_path(dst_host.location.mac(), 0), Some(0));
    assert_eq!(core.select_path(dst_host.location.mac(), 200), Some(1));
    assert_eq!(core.select_path(dst_host.location.mac(), 255), Some(0));
    // The quiet timer (500 000 octets of line time: the seed's 100 µs at 40 Gb/s) closes path
    // 1 again.
    let quiet = core.drb().unwrap().quiet_ns();
    assert_eq!(quiet, 100 * US);
    while core.poll_write().is_some() {}
    core.on_tick(10 * US + quiet);
    assert_eq!(core.drb().unwrap().open_paths(dst), Some(1));
    let writes: Vec<_> = std::iter::from_fn(|| core.poll_write()).collect();
    assert_eq!(writes.len(), 2);
    assert!(writes.iter().all(|w| w.weights == [255, 0, 0, 0, 1]));
}

#[test]
fn qcn_sw_cores_ignore_multipath_groups() {
    let (mut core, fabric) = core_of(PolicyKind::QcnSw, 0);
    assert!(core.drb().is_none());
    core.on_cnm(3, fabric.hosts()[10].location.mac(), 63, 0);
    assert!(core.poll_write().is_none());
    assert_eq!(core.select_path(fabric.hosts()[10].location.mac(), 0), None);
}

#[test]
fn the_quiet_timer_follows_the_fabric_ports_line_rate_once_the_plan_names_them() {
    let fabric = "torus:k=4,n=2,p=2"
        .parse::<TopologySpec>()
        .unwrap()
        .build()
        .unwrap();
    let opts = PlanOptions {
        multipath: Some(Multipath::default()),
        ..Default::default()
    };
    let desired = desired_state(&fabric, &opts, &BTreeSet::new()).unwrap();
    let d = &desired[&fabric.switches()[0].dpid];
    let groups: Vec<GroupDesc> = d.groups.iter().map(GroupDesc::from).collect();
    let flows: Vec<FlowStats> = d.flows.iter().map(FlowStats::from).collect();
    let policy = PolicyConfig {
        kind: PolicyKind::Drb,
        ..PolicyConfig::default()
    };
    let mut core = SwitchCore::new(policy, WeightsConfig::default()).unwrap();
    // The harness states its shaping (10 Mb/s) for the fabric ports 3..=6 only; the default
    // link (40 Gb/s) is what the core knows before the plan.
    let fast = PortLink {
        rate_bps: 40e9,
        buffer_bytes: 100_000,
    };
    let slow = PortLink {
        rate_bps: 10e6,
        buffer_bytes: 100_000,
    };
    core.set_links(
        PortLinks::new(fast, (3..=6).map(|p| (p, slow)).collect()),
        0,
    );
    assert_eq!(core.drb().unwrap().quiet_ns(), 100 * US);
    core.learn(
        LearnedPlan::learn(&PlanConventions::default(), &groups, &flows),
        0,
        0,
    );
    // 500 000 octets at 10 Mb/s.
    assert_eq!(core.drb().unwrap().quiet_ns(), 400_000 * US);
}
