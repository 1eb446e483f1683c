#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::desired::PlanSource;
use crate::pipeline::{End, SelectMode, Walker};
use crate::planner::FabricPlanner;
use crate::{Fabric, Link, Plan, PlanOptions, TopologySpec};

const SPEC: &str = "dragonfly:p=1,a=2,h=1";

fn fabric() -> Fabric {
    SPEC.parse::<TopologySpec>().unwrap().build().unwrap()
}

fn planner() -> FabricPlanner {
    FabricPlanner::new(fabric(), PlanOptions::default()).unwrap()
}

fn names(p: &FabricPlanner) -> BTreeMap<u64, String> {
    p.plan(&BTreeSet::new())
        .into_iter()
        .map(|(d, s)| (d, s.name))
        .collect()
}

fn dpid(p: &FabricPlanner, name: &str) -> u64 {
    resolve_switch(name, &names(p)).unwrap()
}

/// Every ordered host pair whose hosts are not on `skip`, walked through every live bucket:
/// the pairs that are not delivered on every path.
fn undelivered(failed: &BTreeSet<Link>, skip: Option<usize>) -> Vec<String> {
    let f = fabric();
    let plan = Plan::build(
        &f,
        &PlanOptions {
            failed: failed.clone(),
            ..PlanOptions::default()
        },
    )
    .unwrap();
    let w = Walker::new(&f, &plan, failed);
    let n = f.hosts().len();
    let mut bad = Vec::new();
    for s in 0..n {
        for d in (0..n).filter(|&d| d != s) {
            if skip.is_some_and(|sw| f.hosts()[s].switch == sw || f.hosts()[d].switch == sw) {
                continue;
            }
            for t in w.walk_pair(s, d, SelectMode::EveryBucket).unwrap() {
                if t.end != End::Delivered(d) {
                    bad.push(format!("{s}->{d}: {:?}", t.end));
                }
            }
        }
    }
    bad
}

#[test]
fn a_drained_link_is_planned_exactly_as_a_failed_one_and_every_pair_keeps_a_path() {
    let p = planner();
    let links = p.links();
    let link = resolve_link("g0s0:3", &links, &names(&p)).unwrap();
    let mut op = OperatorState::default();
    assert!(op.apply(Action::DrainLink(link)));
    assert!(!op.apply(Action::DrainLink(link)), "idempotent");
    let drained = op.drained(&links);
    assert_eq!(drained, BTreeSet::from([link]));
    let plan = p.plan(&drained);
    assert_eq!(plan, p.plan(&BTreeSet::from([link])));
    assert_ne!(plan, p.plan(&BTreeSet::new()), "the drain changes the plan");

    let f = fabric();
    let model: Link = f.link_at(f.switch_by_name("g0s0").unwrap(), 3).unwrap();
    assert_eq!(
        undelivered(&BTreeSet::from([model]), None),
        Vec::<String>::new()
    );

    assert!(op.apply(Action::UndrainLink(link)));
    assert!(op.drained(&links).is_empty());
    assert_eq!(p.plan(&op.drained(&links)), p.plan(&BTreeSet::new()));
}

#[test]
fn a_drained_switch_drains_its_links_and_the_rest_of_the_fabric_keeps_its_paths() {
    let p = planner();
    let links = p.links();
    let g1s1 = dpid(&p, "g1s1");
    let mut op = OperatorState::default();
    op.apply(Action::DrainSwitch(g1s1));
    let drained = op.drained(&links);
    let touching: BTreeSet<LinkId> = links
        .iter()
        .filter(|l| l.a.dpid == g1s1 || l.b.dpid == g1s1)
        .copied()
        .collect();
    assert_eq!(drained, touching);
    assert_eq!(drained.len(), 2, "one local and one global link");
    // A link drained by itself and through its switch: undraining the switch keeps it.
    let one = *touching.iter().next().unwrap();
    op.apply(Action::DrainLink(one));
    op.apply(Action::UndrainSwitch(g1s1));
    assert_eq!(op.drained(&links), BTreeSet::from([one]));

    let f = fabric();
    let sw = f.switch_by_name("g1s1").unwrap();
    let model: BTreeSet<Link> = f
        .links()
        .into_iter()
        .filter(|l| l.a().switch == sw || l.b().switch == sw)
        .collect();
    assert_eq!(model.len(), 2);
    assert_eq!(undelivered(&model, Some(sw)), Vec::<String>::new());
    assert_ne!(p.plan(&touching), p.plan(&BTreeSet::new()));
}

#[test]
fn only_frozen_switches_get_one_inert_marker() {
    let p = planner();
    let mut plan = p.plan(&BTreeSet::new());
    let base = plan.clone();
    let g0s1 = dpid(&p, "g0s1");
    let mut op = OperatorState::default();
    assert!(op.apply(Action::Freeze(g0s1)));
    op.apply(Action::Freeze(0xdead)); // not in the plan: ignored
    op.mark_frozen(&mut plan, 0x77);
    for (d, s) in &plan {
        let extra: Vec<&FlowMod> = s
            .flows
            .iter()
            .filter(|f| !base[d].flows.contains(f))
            .collect();
        if *d == g0s1 {
            assert_eq!(extra, vec![&freeze_marker(0x77)]);
            assert_eq!(s.flows.len(), base[d].flows.len() + 1);
        } else {
            assert!(extra.is_empty() && s == &base[d]);
        }
    }
    let m = freeze_marker(0x77);
    assert_eq!((m.table_id, m.cookie), (0, 0x77));
    assert!(m.instructions.is_empty(), "matches nothing, does nothing");
    assert!(op.apply(Action::Unfreeze(g0s1)));
    assert!(!op.apply(Action::Resync(Some(g0s1))));
}

#[test]
fn state_round_trips_through_json() {
    let p = planner();
    let links = p.links();
    let mut op = OperatorState::default();
    op.apply(Action::DrainLink(links[0]));
    op.apply(Action::DrainSwitch(7));
    op.apply(Action::Freeze(9));
    let text = serde_json::to_string(&op).unwrap();
    assert_eq!(serde_json::from_str::<OperatorState>(&text).unwrap(), op);
    assert_eq!(
        serde_json::from_str::<OperatorState>("{}").unwrap(),
        OperatorState::default()
    );
    assert!(serde_json::from_str::<OperatorState>("{\"bogus\":1}").is_err());
}

#[test]
fn targets_resolve_by_name_dpid_end_or_id() {
    let p = planner();
    let links = p.links();
    let n = names(&p);
    let g0s0 = dpid(&p, "g0s0");
    assert_eq!(resolve_switch(&format!("{g0s0:016x}"), &n), Ok(g0s0));
    assert_eq!(resolve_switch(&format!("0x{g0s0:x}"), &n), Ok(g0s0));
    assert!(matches!(
        resolve_switch("g9s9", &n),
        Err(ResolveError::UnknownSwitch(_))
    ));
    assert!(matches!(
        resolve_switch("ffffffffffffff", &n),
        Err(ResolveError::UnknownSwitch(_))
    ));
    let l = resolve_link("g0s0:3", &links, &n).unwrap();
    assert!(l.touches(Endpoint {
        dpid: g0s0,
        port: 3
    }));
    assert_eq!(resolve_link(&l.to_string(), &links, &n), Ok(l));
    let other = if l.a.dpid == g0s0 { l.b } else { l.a };
    assert_eq!(
        resolve_link(&format!("{:x}:{}", other.dpid, other.port), &links, &n),
        Ok(l)
    );
    assert!(matches!(
        resolve_link("g0s0:1", &links, &n),
        Err(ResolveError::UnknownLink(_))
    ));
    assert!(matches!(
        resolve_link("g0s0", &links, &n),
        Err(ResolveError::BadLink(_))
    ));
    assert!(matches!(
        resolve_link("g0s0:x", &links, &n),
        Err(ResolveError::BadLink(_))
    ));
    // Both ends given but of two different links.
    let l2 = links.iter().find(|x| **x != l).unwrap();
    assert!(matches!(
        resolve_link(&format!("{}-{}", l.a, l2.b), &links, &n),
        Err(ResolveError::UnknownLink(_))
    ));
}

#[test]
fn bearer_tokens_are_checked_exactly() {
    let t = Some("0123456789abcdef0123");
    assert_eq!(check_bearer(None, None), Auth::Disabled);
    assert_eq!(
        check_bearer(Some(b"Bearer 0123456789abcdef0123"), None),
        Auth::Disabled
    );
    assert_eq!(check_bearer(None, t), Auth::Missing);
    assert_eq!(
        check_bearer(Some(b"Basic 0123456789abcdef0123"), t),
        Auth::Missing
    );
    assert_eq!(
        check_bearer(Some(b"Bearer 0123456789abcdef0123"), t),
        Auth::Granted
    );
    assert_eq!(
        check_bearer(Some(b"Bearer 0123456789abcdef0123 "), t),
        Auth::Granted
    );
    assert_eq!(
        check_bearer(Some(b"Bearer 0123456789abcdef012"), t),
        Auth::Wrong
    );
    assert_eq!(
        check_bearer(Some(b"Bearer 0123456789abcdef01234"), t),
        Auth::Wrong
    );
    assert_eq!(
        check_bearer(Some(b"Bearer 0123456789abcdef0124"), t),
        Auth::Wrong
    );
    assert_eq!(check_bearer(Some(b"Bearer "), t), Auth::Wrong);
}
