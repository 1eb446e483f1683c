//! Conversation-level behaviour of the controller and the agent against in-memory switches,
//! on virtual time: no root, no Open vSwitch, milliseconds each.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::BTreeSet;
use std::time::Duration;

use fabricflow_agent::config::AgentConfig;
use fabricflow_controller::session::{Event, RoleWanted, SyncMethod};
use fabricflow_proto::cnm::{Cnm, Cpid};
use fabricflow_proto::ethernet::EthernetFrame;
use fabricflow_proto::openflow::multipart::{FlowStats, GroupDesc};
use fabricflow_proto::MacAddr;
use fabricflow_testkit::fabric::InProcessFabric;

const TOPO: &str = "dragonfly:p=1,a=2,h=1";
const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);

fn synced_fabric() -> InProcessFabric {
    let mut f = InProcessFabric::new(TOPO).unwrap();
    f.connect_controllers();
    assert!(f.run_until(10 * S, 10 * MS, InProcessFabric::all_synced));
    f
}

/// The switch's tables as the desired state would describe them.
fn holds_desired(f: &InProcessFabric, dpid: u64) -> bool {
    let d = f.desired(dpid).unwrap();
    let sw = f.switch(dpid).unwrap();
    let want_flows: BTreeSet<String> = d
        .flows
        .iter()
        .map(|m| format!("{:?}", FlowStats::from(m)))
        .collect();
    let have_flows: BTreeSet<String> = sw.flows().iter().map(|e| format!("{e:?}")).collect();
    let want_groups: BTreeSet<String> = d
        .groups
        .iter()
        .map(|g| format!("{:?}", GroupDesc::from(g)))
        .collect();
    let have_groups: BTreeSet<String> = sw.groups().map(|g| format!("{g:?}")).collect();
    want_flows == have_flows && want_groups == have_groups
}

/// A synced fabric with an agent on every switch, each having learned its decision points.
fn with_agents() -> InProcessFabric {
    let mut f = synced_fabric();
    f.connect_agents(&agent_config()).unwrap();
    assert!(f.run_until(10 * S, 10 * MS, |f| f.dpids().iter().all(|d| f
        .agent(*d)
        .unwrap()
        .status()
        .plan_ready)));
    f
}

fn all_agents_ready(f: &InProcessFabric) -> bool {
    f.dpids()
        .iter()
        .all(|d| f.agent(*d).is_some_and(|a| a.status().plan_ready))
}

#[test]
fn agents_on_a_fat_tree_are_ready_at_every_level_once_the_plan_is_installed() {
    let mut f = InProcessFabric::new("fattree:k=4,n=2").unwrap();
    // Agents before the controller: every switch is empty, so every agent waits for the plan.
    f.connect_agents(&agent_config()).unwrap();
    f.advance(S);
    for d in f.dpids() {
        let st = f.agent(d).unwrap().status();
        assert!(st.connected && !st.plan_ready, "switch {d:#x}");
    }
    f.connect_controllers();
    assert!(f.run_until(10 * S, 10 * MS, InProcessFabric::all_synced));
    // The agents find the plan at their next periodic read.
    assert!(f.run_until(10 * S, 10 * MS, all_agents_ready));
    let (mut tops, mut leaves) = (0, 0);
    for d in f.dpids() {
        let agent = f.agent(d).unwrap();
        let plan = agent.plan().unwrap();
        assert!(!plan.fabric_ports.is_empty(), "switch {d:#x}");
        if f.desired(d).unwrap().groups.is_empty() {
            // The top level: ready, nothing to adapt, its down links still fabric ports.
            tops += 1;
            assert!(plan.is_empty() && agent.status().groups.is_empty());
        } else {
            leaves += 1;
            assert!(!plan.is_empty() && !agent.status().groups.is_empty());
        }
    }
    assert_eq!((tops, leaves), (4, 4));
}

fn agent_config() -> AgentConfig {
    let mut a = AgentConfig::default();
    a.weights.min_update_interval_line_bytes = 0;
    a.weights.min_update_interval_buffer_drains = 0.0;
    // No idle timer: a cut P stays cut, so a refused write keeps being re-issued.
    a.policy.increase_timer_line_bytes = None;
    a
}

#[test]
fn every_switch_gets_the_plan_in_one_bundle_and_a_reconnect_sends_nothing() {
    let mut f = synced_fabric();
    for dpid in f.dpids() {
        assert!(holds_desired(&f, dpid), "switch {dpid:#x}");
        let c = f.switch(dpid).unwrap().counters();
        assert_eq!(c.bundles_committed, 1);
        assert!(c.flow_mods > 0 && c.group_mods > 0);
    }
    let before: Vec<_> = f
        .dpids()
        .iter()
        .map(|d| f.switch(*d).unwrap().counters())
        .collect();
    f.connect_controllers();
    assert!(f.run_until(10 * S, 10 * MS, InProcessFabric::all_synced));
    for (dpid, b) in f.dpids().into_iter().zip(before) {
        let c = f.switch(dpid).unwrap().counters();
        assert_eq!(
            (c.flow_mods, c.group_mods, c.bundles_committed),
            (b.flow_mods, b.group_mods, b.bundles_committed),
            "a reconnect to an up-to-date switch re-adds nothing"
        );
    }
}

#[test]
fn a_wiped_switch_is_restored_and_a_changed_plan_sent_as_a_diff() {
    let mut f = synced_fabric();
    let dpid = f.dpids()[0];
    f.switch_mut(dpid).unwrap().wipe();
    f.connect_controller(dpid, RoleWanted::Equal).unwrap();
    assert!(f.run_until(10 * S, 10 * MS, InProcessFabric::all_synced));
    assert!(holds_desired(&f, dpid));

    // One flow fewer in the plan: exactly one FLOW_MOD (the delete) goes out.
    let mut d = (**f.desired(dpid).unwrap()).clone();
    d.flows.pop();
    let mods = f.switch(dpid).unwrap().counters().flow_mods;
    f.set_desired(dpid, Some(d)).unwrap();
    assert!(f.run_until(10 * S, 10 * MS, InProcessFabric::all_synced));
    assert!(holds_desired(&f, dpid));
    assert_eq!(f.switch(dpid).unwrap().counters().flow_mods, mods + 1);
}

#[test]
fn a_refused_bundle_is_reported_retried_and_applied_once_accepted() {
    let mut f = InProcessFabric::new(TOPO).unwrap();
    f.session_cfg.sync_method = SyncMethod::Bundle;
    let dpid = f.dpids()[0];
    f.switch_mut(dpid).unwrap().refuse.bundles = true;
    f.connect_controllers();
    f.advance(5 * S);
    assert!(!f.controller(dpid).unwrap().is_synced());
    assert!(
        f.switch(dpid).unwrap().flows().is_empty(),
        "nothing half-applied"
    );
    let failures = f
        .controller_events
        .iter()
        .filter(|(d, e)| *d == dpid && matches!(e, Event::SyncFailed { .. }))
        .count();
    assert!(failures >= 2, "retried: {failures} failures");
    f.switch_mut(dpid).unwrap().refuse.bundles = false;
    assert!(f.run_until(10 * S, 10 * MS, InProcessFabric::all_synced));
    assert!(holds_desired(&f, dpid));
}

#[test]
fn a_switch_without_bundles_is_synced_by_ordered_steps_at_once() {
    let mut f = InProcessFabric::new(TOPO).unwrap();
    let dpid = f.dpids()[0];
    f.switch_mut(dpid).unwrap().refuse.bundles = true;
    f.connect_controllers();
    // Well within the 2 s retry delay: the fallback does not wait for it.
    assert!(f.run_until(S, MS, InProcessFabric::all_synced));
    assert!(holds_desired(&f, dpid));
    let c = f.switch(dpid).unwrap().counters();
    assert_eq!(c.bundles_committed, 0);
    assert!(c.flow_mods > 0 && c.group_mods > 0);
    let events = |f: &InProcessFabric, pred: fn(&Event) -> bool| {
        f.controller_events
            .iter()
            .filter(|(d, e)| *d == dpid && pred(e))
            .count()
    };
    assert_eq!(events(&f, |e| matches!(e, Event::BundlesRefused { .. })), 1);
    assert_eq!(events(&f, |e| matches!(e, Event::SyncFailed { .. })), 0);
    // Switches with bundles still get bundles.
    for other in f.dpids().into_iter().filter(|d| *d != dpid) {
        assert_eq!(f.switch(other).unwrap().counters().bundles_committed, 1);
    }

    // A changed plan goes out as steps too, without trying a bundle again.
    let mut d = (**f.desired(dpid).unwrap()).clone();
    d.flows.pop();
    let mods = f.switch(dpid).unwrap().counters().flow_mods;
    f.set_desired(dpid, Some(d)).unwrap();
    assert!(f.run_until(S, MS, InProcessFabric::all_synced));
    assert!(holds_desired(&f, dpid));
    assert_eq!(f.switch(dpid).unwrap().counters().flow_mods, mods + 1);
    assert_eq!(events(&f, |e| matches!(e, Event::BundlesRefused { .. })), 1);
}

#[test]
fn ordered_by_config_never_tries_a_bundle() {
    let mut f = InProcessFabric::new(TOPO).unwrap();
    f.session_cfg.sync_method = SyncMethod::Ordered;
    f.connect_controllers();
    assert!(f.run_until(S, MS, InProcessFabric::all_synced));
    for dpid in f.dpids() {
        assert!(holds_desired(&f, dpid));
        assert_eq!(f.switch(dpid).unwrap().counters().bundles_committed, 0);
    }
    assert!(!f
        .controller_events
        .iter()
        .any(|(_, e)| matches!(e, Event::BundlesRefused { .. })));
}

#[test]
fn a_slave_controller_never_writes_and_a_master_does() {
    let mut f = InProcessFabric::new(TOPO).unwrap();
    let dpid = f.dpids()[0];
    f.connect_controller(dpid, RoleWanted::Slave { generation: 1 })
        .unwrap();
    f.advance(3 * S);
    assert_eq!(f.switch(dpid).unwrap().counters().flow_mods, 0);
    f.connect_controller(dpid, RoleWanted::Master { generation: 2 })
        .unwrap();
    assert!(f.run_until(10 * S, 10 * MS, |f| f
        .controller(dpid)
        .is_some_and(|s| s.is_synced())));
    assert!(holds_desired(&f, dpid));
}

#[test]
fn lldp_probes_reach_the_cabled_peer_and_come_back_as_link_reports() {
    let mut f = synced_fabric();
    f.advance(2 * S);
    let seen: BTreeSet<(u64, u32)> = f
        .controller_events
        .iter()
        .filter_map(|(d, e)| match e {
            Event::Lldp { in_port, .. } => Some((*d, *in_port)),
            _ => None,
        })
        .collect();
    let fabric_ports: usize = f
        .fabric()
        .switches()
        .iter()
        .map(|s| s.fabric_ports().count())
        .sum();
    assert_eq!(seen.len(), fabric_ports, "every fabric port hears its peer");
}

/// A CNM about a frame from `src` (a host of the switch) to `dst`.
fn cnm(src: MacAddr, dst: MacAddr, qntz_fb: u8) -> Vec<u8> {
    let sampled = EthernetFrame::new(dst, src, 0x0800, vec![0x45; 46]);
    let mut bytes = bytes::BytesMut::new();
    sampled.encode_header(&mut bytes);
    bytes.extend_from_slice(&[0x45; 46]);
    let cp: MacAddr = "02:00:00:09:09:09".parse().unwrap();
    Cnm::for_sampled_frame(&bytes, cp, Cpid::new(cp, 1), qntz_fb, 100, 10)
        .unwrap()
        .to_vec()
}

/// A switch with a host, one of its hosts, and a host of another group with the switch's
/// minimal port towards it.
fn culprit_pair(f: &InProcessFabric) -> (u64, MacAddr, MacAddr, u32) {
    let fabric = f.fabric();
    for h in fabric.hosts() {
        let sw = fabric.switch(h.switch).unwrap();
        let core = f.agent(sw.dpid).unwrap().core();
        for other in fabric.hosts() {
            if other.location.group == h.location.group {
                continue;
            }
            if let Some(port) = core.minimal_port_towards(other.location.mac()) {
                return (sw.dpid, h.location.mac(), other.location.mac(), port);
            }
        }
    }
    panic!("no decision point towards another group");
}

fn group_towards(f: &InProcessFabric, dpid: u64, port: u32) -> u32 {
    let plan = f.agent(dpid).unwrap().plan().unwrap();
    plan.group_of_port(port).unwrap().dp.group_id
}

#[test]
fn a_cnm_on_a_fabric_port_rewrites_the_weights_on_the_switch_and_a_resync_keeps_them() {
    let mut f = with_agents();
    let (dpid, src, dst, port) = culprit_pair(&f);
    let group = group_towards(&f, dpid, port);
    let before = f.switch(dpid).unwrap().weights(group).unwrap();
    let writes = f.switch(dpid).unwrap().counters().group_modifies;

    f.deliver_frame(dpid, port, &cnm(src, dst, 63)).unwrap();
    f.advance(5 * MS);
    let after = f.switch(dpid).unwrap().weights(group).unwrap();
    assert_eq!(f.agent(dpid).unwrap().counters().cnm_received, 1);
    assert!(
        f.switch(dpid).unwrap().counters().group_modifies > writes,
        "a GROUP_MOD MODIFY reached the switch"
    );
    assert!(
        after[0] < before[0],
        "minimal bucket cut: {before:?} → {after:?}"
    );

    // The controller resyncs (reconnect): the agent's weights are not the controller's
    // business, so they stay.
    f.connect_controller(dpid, RoleWanted::Equal).unwrap();
    assert!(f.run_until(10 * S, 10 * MS, InProcessFabric::all_synced));
    assert_eq!(f.switch(dpid).unwrap().weights(group).unwrap(), after);
}

#[test]
fn an_agent_reconnect_keeps_p_and_a_recreated_switch_gets_the_weights_back() {
    let mut f = with_agents();
    let cfg = agent_config();
    let (dpid, src, dst, port) = culprit_pair(&f);
    let group = group_towards(&f, dpid, port);
    f.deliver_frame(dpid, port, &cnm(src, dst, 63)).unwrap();
    f.advance(5 * MS);
    let cut = f.switch(dpid).unwrap().weights(group).unwrap();
    let p = f.agent(dpid).unwrap().policy().p_percent(port).unwrap();
    assert!(p < 100.0);

    // Reconnect to an unchanged switch: nothing rewritten, P kept.
    let writes = f.switch(dpid).unwrap().counters().group_modifies;
    f.disconnect_agent(dpid).unwrap();
    f.connect_agent(dpid, &cfg).unwrap();
    f.advance(10 * MS);
    assert_eq!(f.switch(dpid).unwrap().counters().group_modifies, writes);
    assert_eq!(f.agent(dpid).unwrap().policy().p_percent(port), Some(p));

    // The bridge is re-created and the controller re-installs its plan: the agent, reading the
    // plan again, writes its weights back.
    f.disconnect_agent(dpid).unwrap();
    f.switch_mut(dpid).unwrap().wipe();
    f.connect_controller(dpid, RoleWanted::Equal).unwrap();
    assert!(f.run_until(10 * S, 10 * MS, InProcessFabric::all_synced));
    f.connect_agent(dpid, &cfg).unwrap();
    assert!(f.run_until(10 * S, MS, |f| f.switch(f.dpids()[0]).is_some()
        && f.switch(dpid).unwrap().weights(group).as_ref() == Some(&cut)));
}

#[test]
fn a_refused_weight_write_makes_the_agent_read_the_plan_again() {
    let mut f = with_agents();
    let (dpid, src, dst, port) = culprit_pair(&f);
    let reads = f.agent(dpid).unwrap().counters().plan_reads;
    let group = group_towards(&f, dpid, port);
    let before = f.switch(dpid).unwrap().weights(group).unwrap();
    f.switch_mut(dpid).unwrap().refuse.group_mods = true;
    f.deliver_frame(dpid, port, &cnm(src, dst, 63)).unwrap();
    f.advance(5 * MS);
    // Refused, read again, relearned (which re-issues the write: refused once more).
    let c = f.agent(dpid).unwrap().counters();
    assert_eq!(c.group_mod_errors, 2);
    assert_eq!(c.plan_reads, reads + 1);
    // A switch that keeps refusing gets the write again a couple of times a second (each
    // throttled re-read relearns and re-issues it), not in a loop at the speed of its replies.
    f.advance(10 * S);
    let c = f.agent(dpid).unwrap().counters();
    assert!(
        (10..=25).contains(&c.group_mod_errors),
        "{} refused writes in 10 s",
        c.group_mod_errors
    );
    // Accepted again: the weights land.
    f.switch_mut(dpid).unwrap().refuse.group_mods = false;
    assert!(f.run_until(3 * S, 10 * MS, |f| f
        .switch(dpid)
        .unwrap()
        .weights(group)
        .unwrap()[0]
        < before[0]));
}

#[test]
fn a_cnm_from_a_host_port_changes_nothing() {
    let mut f = with_agents();
    let (dpid, src, dst, _) = culprit_pair(&f);
    let fabric = f.fabric();
    let sw = fabric.switch(fabric.switch_by_dpid(dpid).unwrap()).unwrap();
    let host_port = sw.host_ports().next().unwrap().no;
    let writes = f.switch(dpid).unwrap().counters().group_modifies;
    f.deliver_frame(dpid, host_port, &cnm(src, dst, 63))
        .unwrap();
    f.advance(5 * MS);
    assert_eq!(f.switch(dpid).unwrap().counters().group_modifies, writes);
    assert_eq!(f.agent(dpid).unwrap().counters().cnm_received, 0);
}

#[test]
fn the_controllers_freeze_marker_stops_weight_writes_across_an_agent_restart_until_removed() {
    let mut f = with_agents();
    let (dpid, src, dst, port) = culprit_pair(&f);
    let group = group_towards(&f, dpid, port);
    let plain = (**f.desired(dpid).unwrap()).clone();
    let mut frozen = plain.clone();
    frozen
        .flows
        .push(fabricflow_controller::operator::freeze_marker(
            plain.flows[0].cookie,
        ));
    let frozen_seen = |f: &InProcessFabric| f.agent(dpid).unwrap().status().frozen;

    // The operator freezes: the marker reaches the switch, the agent's next plan read sees it.
    f.set_desired(dpid, Some(frozen)).unwrap();
    assert!(f.run_until(10 * S, 10 * MS, frozen_seen));
    assert!(holds_desired(&f, dpid));
    let before = f.switch(dpid).unwrap().weights(group).unwrap();
    let writes = f.switch(dpid).unwrap().counters().group_modifies;
    let p = f.agent(dpid).unwrap().policy().p_percent(port);
    f.deliver_frame(dpid, port, &cnm(src, dst, 63)).unwrap();
    f.advance(5 * MS);
    assert_eq!(f.agent(dpid).unwrap().counters().cnm_received, 1);
    assert_eq!(f.agent(dpid).unwrap().policy().p_percent(port), p);
    assert_eq!(f.switch(dpid).unwrap().weights(group).unwrap(), before);
    assert_eq!(f.switch(dpid).unwrap().counters().group_modifies, writes);

    // A restarted agent finds the marker on the switch and stays frozen.
    f.disconnect_agent(dpid).unwrap();
    f.connect_agent(dpid, &agent_config()).unwrap();
    assert!(f.run_until(10 * S, 10 * MS, |f| f
        .agent(dpid)
        .unwrap()
        .status()
        .plan_ready));
    assert!(frozen_seen(&f));
    f.deliver_frame(dpid, port, &cnm(src, dst, 63)).unwrap();
    f.advance(5 * MS);
    assert_eq!(f.switch(dpid).unwrap().weights(group).unwrap(), before);

    // Unfrozen: the next CNM cuts the minimal bucket again.
    f.set_desired(dpid, Some(plain)).unwrap();
    assert!(f.run_until(10 * S, 10 * MS, |f| !frozen_seen(f)));
    f.deliver_frame(dpid, port, &cnm(src, dst, 63)).unwrap();
    f.advance(5 * MS);
    let after = f.switch(dpid).unwrap().weights(group).unwrap();
    assert!(after[0] < before[0], "{before:?} → {after:?}");
}
