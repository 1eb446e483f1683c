//! Per-flow rules of a phase on extended fat-trees, checked as a program: the plan plus the
//! phase's rules walked hop by hop through the in-memory pipeline (every flow delivered on
//! exactly its assigned path, no loop) and the channel dependency graph of every path the rules
//! allow (destination rules and per-flow rules together) acyclic: up*/down* with one
//! horizontal hop per level of descent is deadlock-free.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::collections::BTreeSet;

use fabricflow_controller::cdg::Cdg;
use fabricflow_controller::flowroute::{
    phase_rules, random_permutations, Algorithm, PhaseRuleOptions, PhaseRules, TreeRouter,
};
use fabricflow_controller::pipeline::{End, SelectMode, Walker};
use fabricflow_controller::plan::Flow;
use fabricflow_controller::topology::{Fabric, HostId, PortRole};
use fabricflow_controller::{Plan, PlanOptions, TopologySpec};

fn fabric(spec: &str) -> Fabric {
    spec.parse::<TopologySpec>().unwrap().build().unwrap()
}

/// The plan with the phase's rules added to their switches.
fn with_rules(f: &Fabric, rules: &PhaseRules) -> Plan {
    let mut plan = Plan::build(f, &PlanOptions::default()).unwrap();
    for r in &rules.rules {
        plan.switches[r.switch].flows.push(r.flow.clone());
    }
    for sp in &mut plan.switches {
        sp.flows.sort_by(|a: &Flow, b: &Flow| {
            (a.table, std::cmp::Reverse(a.priority), &a.matches).cmp(&(
                b.table,
                std::cmp::Reverse(b.priority),
                &b.matches,
            ))
        });
    }
    plan
}

fn check(spec: &str, perms: usize, algo: Algorithm, opts: PhaseRuleOptions) -> PhaseRules {
    let f = fabric(spec);
    let r = TreeRouter::new(&f).unwrap();
    // Distinct host pairs: the rules tell flows apart by their hosts only.
    let mut seen = BTreeSet::new();
    let flows: Vec<(HostId, HostId)> = random_permutations(f.hosts().len(), perms, 5)
        .into_iter()
        .filter(|&p| seen.insert(p))
        .collect();
    let a = r.assign(&flows, algo).unwrap();
    let rules = phase_rules(&f, &flows, &a.paths, &opts);
    let plan = with_rules(&f, &rules);
    let none = BTreeSet::new();
    let w = Walker::new(&f, &plan, &none);
    let mut cdg = Cdg::from_plan(&f, &plan, &none).unwrap();
    let mut horizontal = 0;
    for (i, &(s, d)) in flows.iter().enumerate() {
        let traces = w.walk_pair(s, d, SelectMode::EveryBucket).unwrap();
        assert!(!traces.is_empty());
        for t in &traces {
            assert_eq!(t.end, End::Delivered(d), "{spec} flow {i}: {t:?}");
            cdg.add_trace(&f, t);
        }
        if rules.pinned[i] {
            // One path only (the rules override the SELECT group), exactly the assigned one.
            assert_eq!(traces.len(), 1, "{spec} flow {i}");
            let got: Vec<(usize, u32)> = traces[0]
                .hops
                .iter()
                .map(|h| (h.switch, h.out_port))
                .collect();
            let want: Vec<(usize, u32)> = a.paths[i].iter().map(|h| (h.switch, h.port)).collect();
            assert_eq!(got, want, "{spec} flow {i}");
            horizontal += a.paths[i]
                .iter()
                .filter(|h| {
                    f.switches()[h.switch].port(h.port).unwrap().role == PortRole::Horizontal
                })
                .count();
        }
    }
    assert_eq!(cdg.find_cycle(), None, "{spec}");
    if algo != Algorithm::DModK && rules.pinned.iter().all(|&p| p) {
        assert!(horizontal > 0, "{spec}: no horizontal hop exercised");
    }
    for (&sw, &n) in &rules.per_switch() {
        assert!(n <= opts.max_per_switch, "{spec} switch {sw}: {n} rules");
    }
    rules
}

#[test]
fn pinned_flows_follow_their_paths_and_the_cdg_stays_acyclic() {
    for spec in [
        "fattree:k=4,n=2,w=1",
        "fattree:k=4,n=3,w=2",
        "fattree:k=3,n=3,w=2",
    ] {
        for algo in [Algorithm::Greedy, Algorithm::Balanced] {
            let rules = check(spec, 2, algo, PhaseRuleOptions::default());
            assert!(rules.pinned.iter().all(|&p| p));
        }
    }
}

#[test]
fn a_full_switch_leaves_flows_on_the_destination_rules() {
    let opts = PhaseRuleOptions {
        max_per_switch: 3,
        ..PhaseRuleOptions::default()
    };
    let rules = check("fattree:k=4,n=3,w=2", 2, Algorithm::Balanced, opts);
    let pinned = rules.pinned.iter().filter(|&&p| p).count();
    assert!(pinned > 0 && pinned < rules.pinned.len(), "{pinned}");
}

#[test]
fn rules_print_as_ofctl_lines_with_timeouts() {
    let f = fabric("fattree:k=4,n=2,w=1");
    let r = TreeRouter::new(&f).unwrap();
    let flows = vec![(0, 15)];
    let a = r.assign(&flows, Algorithm::Balanced).unwrap();
    let rules = phase_rules(&f, &flows, &a.paths, &PhaseRuleOptions::default());
    let line = rules.rules[0].ofctl_line();
    assert!(
        line.starts_with("idle_timeout=10,hard_timeout=300,table=1,priority=3000,cookie=0xfabf10a00000002,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:03:00:04,actions=output:"),
        "{line}"
    );
}
