#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
use super::*;
use crate::topology::TopologySpec;
use crate::traffic::TrafficError;

fn fabric(spec: &str) -> Fabric {
    spec.parse::<TopologySpec>().unwrap().build().unwrap()
}

/// Host and local links at `edge`, global at `global` (the harness's --host-bw/--local-bw and
/// --global-bw).
fn rates(edge: f64, global: f64) -> LinkRates {
    LinkRates {
        global,
        ..LinkRates::uniform(edge)
    }
}

/// Hosts at `host`, every fabric link at `fabric`.
fn fast_fabric(host: f64, fabric: f64) -> LinkRates {
    LinkRates {
        host,
        ..LinkRates::uniform(fabric)
    }
}

fn flows(f: &Fabric, pattern: &str, host: f64) -> Vec<Demand> {
    demands(f, pattern, 1, DemandModel::Flows, host).unwrap()
}

fn all(f: &Fabric, r: &LinkRates, d: &[Demand]) -> BTreeMap<Routing, Bound> {
    bounds(f, r, d, &Routing::ALL)
        .unwrap()
        .into_iter()
        .map(|b| (b.routing, b))
        .collect()
}

#[track_caller]
fn close(got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-5 * want.abs().max(1.0),
        "got {got}, want {want}"
    );
}

#[test]
fn adv1_minimal_is_one_global_link_per_group() {
    // Under ADV+1 all of group G's traffic for G+1 meets on G's one global link to G+1, so
    // minimal routing carries exactly g global links' worth, shared equally by the group's
    // flows (max-concurrent = max-aggregate).
    for (spec, edge, global, groups, hosts) in [
        ("dragonfly:p=2,a=2,h=1", 5.0, 5.0, 3.0, 12.0),
        ("dragonfly:p=1,a=2,h=3", 10.0, 2.5, 7.0, 14.0),
        ("dragonfly:p=2,a=4,h=2", 10.0, 2.5, 9.0, 72.0),
    ] {
        let f = fabric(spec);
        let r = rates(edge, global);
        let b = bound(&f, &r, &flows(&f, "adv+1", edge), Routing::Minimal).unwrap();
        close(b.max_aggregate_mbps, groups * global);
        close(b.concurrent_mbps, groups * global);
        close(b.lambda, groups * global / (hosts * edge));
    }
}

#[test]
fn dragonfly_2_2_1_adv1_by_hand() {
    // Dragonfly(2,2,1): 3 groups of two switches with two hosts each, one global port per
    // switch; every link 5 Mb/s, 12 flows of 5 Mb/s, group G → G+1. Switch 0 of G owns the link
    // to G+1 (G's minimal link), switch 1 the link to G+2.
    //
    // Minimal: each group's 4 flows share its one link G→G+1: 3 × 5 = 15.
    // Diverted: G → G+2 → G+1 uses the two *reverse* directions G→G+2 and G+2→G+1 (the forward
    // direction G+2→G is G+2's own minimal link). Every reverse direction is the first hop of
    // one group's diverted traffic and the second hop of another's (G→G+2 carries G's and
    // G+1's), so each group diverts at most 5 / 2 = 2.5. Optimum 3 × (5 + 2.5) = 22.5 of 60
    // offered. All 12 flows can get the same 1.875 (λ = 0.375): in G+1, 5 arrive at switch 1
    // (from G) and 2.5 at switch 0 (via G+2) for 3.75 per switch's two hosts, so 1.25 crosses
    // the local link, which also carries G+1's own 1.25 minimal from switch 1 and G+2's 2.5 of
    // transit the other way: every local direction ≤ 2.5 of 5.
    //
    // The planner's Valiant paths are exactly the diverted ones (switch 0 has no other global
    // port, so it diverts over its local port to switch 1): 3 × 2.5 = 7.5.
    let f = fabric("dragonfly:p=2,a=2,h=1");
    let d = flows(&f, "adv+1", 5.0);
    assert_eq!(d.len(), 12);
    let b = all(&f, &LinkRates::uniform(5.0), &d);
    close(b[&Routing::Any].max_aggregate_mbps, 22.5);
    close(b[&Routing::Any].lambda, 0.375);
    close(b[&Routing::Any].concurrent_mbps, 22.5);
    close(b[&Routing::Minimal].max_aggregate_mbps, 15.0);
    close(b[&Routing::Valiant].max_aggregate_mbps, 7.5);
    close(b[&Routing::Valiant].lambda, 0.125);
    // Minimal and Valiant paths together reach the optimum here.
    close(b[&Routing::Adaptive].max_aggregate_mbps, 22.5);
}

#[test]
fn valiant_is_at_most_half_the_global_capacity() {
    // Every Valiant path between groups crosses two global links.
    for (spec, edge, global) in [
        ("dragonfly:p=2,a=2,h=1", 5.0, 5.0),
        ("dragonfly:p=1,a=2,h=3", 10.0, 2.5),
        ("dragonfly:p=1,a=4,h=2", 5.0, 5.0),
    ] {
        let f = fabric(spec);
        let r = rates(edge, global);
        let globals = f
            .switches()
            .iter()
            .flat_map(|s| &s.ports)
            .filter(|p| p.role == PortRole::Global)
            .count() as f64; // each link twice: one per direction
                             // Only traffic between groups: ADV+K.
        for pattern in ["adv+1", "adv+2"] {
            let b = bound(&f, &r, &flows(&f, pattern, edge), Routing::Valiant).unwrap();
            assert!(
                b.max_aggregate_mbps <= globals * global / 2.0 + 1e-6,
                "{spec} {pattern}: {}",
                b.max_aggregate_mbps
            );
        }
    }
}

#[test]
fn planned_valiant_paths_cross_two_global_links() {
    for spec in ["dragonfly:p=2,a=2,h=1", "dragonfly:p=1,a=2,h=3"] {
        let f = fabric(spec);
        let net = Network::new(&f, &LinkRates::uniform(1.0)).unwrap();
        let group = |s: SwitchId| f.switches()[s].group;
        let pairs: Vec<(SwitchId, SwitchId)> = (0..f.switches().len())
            .flat_map(|s| (0..f.switches().len()).map(move |t| (s, t)))
            .filter(|(s, t)| s != t)
            .collect();
        let paths = paths::valiant(&f, &net, &pairs).unwrap();
        for (&(s, t), ps) in &paths {
            assert!(!ps.is_empty(), "{spec} {s}->{t}");
            for p in ps {
                let globals = p
                    .iter()
                    .filter(|&&a| {
                        let arc = net.arcs[a];
                        group(arc.from) != group(arc.to)
                    })
                    .count();
                let want = if group(s) == group(t) { 0 } else { 2 };
                assert_eq!(globals, want, "{spec} {s}->{t}: {p:?}");
            }
        }
    }
}

#[test]
fn uniform_permutation_on_dragonfly_1_4_2_runs_every_flow_at_its_host_rate() {
    // 36 hosts, 9 groups: the registry's uniform flows (seed 1), a derangement, each at 5 Mb/s.
    // Any routing carries every flow at its host link's rate: 36 × 5 = 180.
    let f = fabric("dragonfly:p=1,a=4,h=2");
    let d = flows(&f, "uniform", 5.0);
    assert_eq!(d.len(), 36);
    assert_eq!(
        d.iter().map(|x| (x.src, x.dst)).collect::<Vec<_>>(),
        Pattern::Uniform.flows(&f, 1).unwrap()
    );
    let b = bound(&f, &LinkRates::uniform(5.0), &d, Routing::Any).unwrap();
    close(b.max_aggregate_mbps, 180.0);
    close(b.lambda, 1.0);
}

#[test]
fn routings_are_ordered_on_a_fat_tree_and_a_dragonfly() {
    for (spec, pattern) in [
        ("fattree:k=4,n=2", "uniform"),
        ("fattree:k=4,n=2", "adv+1"),
        ("dragonfly:p=2,a=4,h=2", "uniform"),
        ("dragonfly:p=2,a=4,h=2", "hotspot"),
    ] {
        let f = fabric(spec);
        let b = all(&f, &rates(5.0, 2.5), &flows(&f, pattern, 5.0));
        let m = |r: Routing| b[&r].max_aggregate_mbps;
        let eps = 1e-5 * m(Routing::Any);
        assert!(
            m(Routing::Minimal) <= m(Routing::Adaptive) + eps,
            "{spec} {pattern}"
        );
        assert!(
            m(Routing::Valiant) <= m(Routing::Adaptive) + eps,
            "{spec} {pattern}"
        );
        assert!(
            m(Routing::Adaptive) <= m(Routing::Any) + eps,
            "{spec} {pattern}"
        );
        for x in b.values() {
            assert!(
                x.concurrent_mbps <= x.max_aggregate_mbps + eps,
                "{spec} {pattern}"
            );
        }
    }
}

#[test]
fn a_full_bisection_fat_tree_carries_a_permutation_minimally() {
    // fattree k=4 n=2: 16 hosts, 4 leaves with 4 up ports each to 4 roots, every link 5.
    let f = fabric("fattree:k=4,n=2");
    let d = flows(&f, "uniform", 5.0);
    let b = all(&f, &LinkRates::uniform(5.0), &d);
    close(b[&Routing::Any].max_aggregate_mbps, 5.0 * d.len() as f64);
    close(
        b[&Routing::Minimal].max_aggregate_mbps,
        5.0 * d.len() as f64,
    );
}

#[test]
fn matrix_and_flows_agree_where_only_switch_aggregates_matter() {
    // ADV+1 on Dragonfly(2,2,1): every host offers 5 to group G+1, as flows or spread evenly
    // over its 4 hosts; the ceilings depend only on per-switch totals and host links.
    let f = fabric("dragonfly:p=2,a=2,h=1");
    let m = demands(&f, "adv+1", 1, DemandModel::Matrix, 5.0).unwrap();
    assert_eq!(m.len(), 48);
    let b = all(&f, &LinkRates::uniform(5.0), &m);
    close(b[&Routing::Any].max_aggregate_mbps, 22.5);
    close(b[&Routing::Minimal].max_aggregate_mbps, 15.0);
    close(b[&Routing::Valiant].max_aggregate_mbps, 7.5);
}

#[test]
fn a_hot_spot_is_capped_by_its_host_link() {
    // 4 contributors converge on one host: they share its 5 Mb/s, λ = 5 / 20. With fabric
    // links far faster than host links, every other flow runs at its 5.
    let f = fabric("dragonfly:p=2,a=4,h=2");
    let d = flows(&f, "hotspot", 5.0);
    let b = bound(&f, &fast_fabric(5.0, 100.0), &d, Routing::Any).unwrap();
    close(b.lambda, 0.25);
    close(b.max_aggregate_mbps, 5.0 * (d.len() - 4) as f64 + 5.0);
}

#[test]
fn malformed_requests_are_typed_errors() {
    let f = fabric("dragonfly:p=1,a=2,h=1");
    let ok = LinkRates::uniform(5.0);
    let d = flows(&f, "uniform", 5.0);
    for bad in ["bogus", "adv+0", ""] {
        assert_eq!(
            demands(&f, bad, 1, DemandModel::Flows, 5.0).unwrap_err(),
            BoundError::Traffic(TrafficError::Parse(bad.to_owned()))
        );
    }
    assert!(matches!(
        demands(&f, "adv+3", 1, DemandModel::Flows, 5.0).unwrap_err(),
        BoundError::Traffic(TrafficError::AdvOwnGroup { .. })
    ));
    assert_eq!(
        bound(&f, &ok, &[], Routing::Any).unwrap_err(),
        BoundError::NoTraffic
    );
    for (class, r) in [
        ("global", LinkRates { global: 0.0, ..ok }),
        ("local", LinkRates { local: -1.0, ..ok }),
        (
            "host",
            LinkRates {
                host: f64::NAN,
                ..ok
            },
        ),
    ] {
        match bound(&f, &r, &d, Routing::Any).unwrap_err() {
            BoundError::BadRate { class: c, .. } => assert_eq!(c, class),
            e => panic!("{class}: {e}"),
        }
    }
    // A class the fabric does not use may be anything.
    let unused = LinkRates {
        up: 0.0,
        down: f64::NAN,
        fabric: -3.0,
        ..ok
    };
    assert!(bound(&f, &unused, &d, Routing::Any).is_ok());
    let one = |src, dst, mbps| [Demand { src, dst, mbps }];
    assert_eq!(
        bound(&f, &ok, &one(0, 0, 5.0), Routing::Any).unwrap_err(),
        BoundError::SelfDemand(0)
    );
    assert!(matches!(
        bound(&f, &ok, &one(0, 99, 5.0), Routing::Any).unwrap_err(),
        BoundError::UnknownHost {
            dst: 99,
            hosts: 6,
            ..
        }
    ));
    for mbps in [0.0, -1.0, f64::INFINITY] {
        assert!(matches!(
            bound(&f, &ok, &one(0, 1, mbps), Routing::Any).unwrap_err(),
            BoundError::BadDemand { src: 0, dst: 1, .. }
        ));
    }
    assert_eq!(
        "fastest".parse::<Routing>().unwrap_err(),
        BoundError::UnknownRouting("fastest".into())
    );
    assert_eq!(
        "rates".parse::<DemandModel>().unwrap_err(),
        BoundError::UnknownDemandModel("rates".into())
    );
}

#[test]
fn names_parse_and_print_back() {
    for r in Routing::ALL {
        assert_eq!(r.to_string().parse::<Routing>().unwrap(), r);
    }
    for m in [DemandModel::Flows, DemandModel::Matrix] {
        assert_eq!(m.to_string().parse::<DemandModel>().unwrap(), m);
    }
}

#[test]
fn minimal_paths_and_the_minimal_dag_give_the_same_ceiling() {
    // The path formulation stands in for the DAG's edge formulation where pairs have few
    // minimal paths; both must agree, on a Dragonfly (one path) and a fat-tree (up to 4).
    for (spec, pattern) in [
        ("dragonfly:p=1,a=4,h=2", "uniform"),
        ("dragonfly:p=2,a=2,h=1", "adv+1"),
        ("fattree:k=4,n=3", "uniform"),
    ] {
        let f = fabric(spec);
        let r = rates(5.0, 2.5);
        let d = flows(&f, pattern, 5.0);
        let prepared = Prepared::new(&f, &r, &d, &[Routing::Minimal, Routing::Adaptive]).unwrap();
        assert!(prepared.minimal.is_some(), "{spec}");
        for routing in [Routing::Minimal, Routing::Adaptive] {
            let by_paths = prepared.solve(routing).unwrap();
            let dag = lp::Problem {
                fabric: &f,
                net: &prepared.net,
                host_mbps: r.host,
                demands: &d,
                pairs: &prepared.pairs,
                arcs: lp::Arcs::Minimal(prepared.routes.as_ref().unwrap()),
                paths: (routing == Routing::Adaptive).then_some(&prepared.valiant),
                routing,
            };
            let (agg, _) = dag.solve(lp::Objective::MaxAggregate).unwrap();
            let (lambda, _) = dag.solve(lp::Objective::Concurrent).unwrap();
            close(by_paths.max_aggregate_mbps, agg);
            close(by_paths.lambda, lambda);
        }
    }
}

#[test]
fn min_peak_of_adv1_minimal_is_a_group_on_one_global_link() {
    // Minimal ADV+1 puts a group's a·p flows on one global link: peak a·p·host ÷ global.
    for (spec, edge, global, group_hosts) in [
        ("dragonfly:p=2,a=2,h=1", 5.0, 5.0, 4.0),
        ("dragonfly:p=2,a=4,h=2", 10.0, 2.5, 8.0),
    ] {
        let f = fabric(spec);
        let r = rates(edge, global);
        let d = flows(&f, "adv+1", edge);
        let peak = min_peak_utilisation(&f, &r, &d, Routing::Minimal).unwrap();
        close(peak, group_hosts * edge / global);
    }
}

#[test]
fn min_peak_of_dragonfly_2_2_1_adv1_by_hand() {
    // dragonfly_2_2_1_adv1_by_hand: a group's 20 Mb/s leaves over its minimal link (at most
    // U·5) and diverted (at most U·2.5, two groups share each reverse direction), so U = 20 /
    // 7.5; the host links are not what binds there, so U = 1/λ.
    let f = fabric("dragonfly:p=2,a=2,h=1");
    let d = flows(&f, "adv+1", 5.0);
    let r = LinkRates::uniform(5.0);
    close(
        min_peak_utilisation(&f, &r, &d, Routing::Any).unwrap(),
        20.0 / 7.5,
    );
    close(
        min_peak_utilisation(&f, &r, &d, Routing::Valiant).unwrap(),
        20.0 / 2.5,
    );
}

#[test]
fn min_peak_orders_the_routings_and_never_exceeds_the_inverse_lambda() {
    // Host links only add rows: λ ≤ the fabric's λ, so the min peak ≤ 1/λ; more paths never
    // raise it.
    for (spec, pattern) in [
        ("dragonfly:p=1,a=2,h=3", "uniform"),
        ("dragonfly:p=1,a=3,h=1", "hotspot"),
        ("fattree:k=2,n=3", "uniform"),
    ] {
        let f = fabric(spec);
        let r = rates(10.0, 2.5);
        let d = flows(&f, pattern, 10.0);
        let peak = |routing| min_peak_utilisation(&f, &r, &d, routing).unwrap();
        let b = all(&f, &r, &d);
        for routing in Routing::ALL {
            assert!(
                peak(routing) <= 1.0 / b[&routing].lambda + 1e-4,
                "{spec} {pattern} {routing}"
            );
        }
        assert!(peak(Routing::Any) <= peak(Routing::Minimal) + 1e-4);
        assert!(peak(Routing::Any) <= peak(Routing::Adaptive) + 1e-4);
        assert!(peak(Routing::Adaptive) <= peak(Routing::Minimal) + 1e-4);
    }
}

#[test]
fn min_peak_without_fabric_traffic_is_zero() {
    let f = fabric("dragonfly:p=2,a=2,h=1");
    let d = [Demand {
        src: 0,
        dst: 1,
        mbps: 5.0,
    }];
    assert_eq!(
        min_peak_utilisation(&f, &LinkRates::uniform(5.0), &d, Routing::Any).unwrap(),
        0.0
    );
}
