//! results.csv's throughput optimum: the LP's answer against what is known of small cases.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use fabricflow_controller::TopologySpec;
use fabricflow_sim::config::{Pattern, SimConfig, Traffic};
use fabricflow_sim::run::optimum;

fn cfg(pattern: Pattern) -> SimConfig {
    SimConfig {
        topology: TopologySpec::Dragonfly { p: 2, a: 4, h: 2 },
        traffic: Traffic::steady(pattern),
        seed: 1,
        ..SimConfig::default()
    }
}

/// Dragonfly(2,4,2) (9 groups of 8 hosts): uniform traffic is carried in full at any load
/// (the fabric is balanced); ADV+1 is carried in full while light, and saturated it exceeds
/// minimal routing's ceiling (one global link per group: 1/8 phit/node/cycle) but stays under
/// half the global capacity per host plus that link (Valiant uses two global hops).
#[test]
fn the_optimum_matches_the_closed_forms() {
    let u = optimum(&cfg(Pattern::Uniform), 0.7).unwrap().unwrap();
    assert!((u - 0.7).abs() < 1e-6, "uniform {u}");
    let light = optimum(&cfg(Pattern::Adv(1)), 0.1).unwrap().unwrap();
    assert!((light - 0.1).abs() < 1e-6, "adv+1 at 0.1: {light}");
    let full = optimum(&cfg(Pattern::Adv(1)), 1.0).unwrap().unwrap();
    // 8 global links per group, 8 hosts: the minimal one direct, the other 7 at two hops each.
    let ceiling = (1.0 + 7.0 / 2.0) / 8.0;
    assert!(
        full > 0.125 && full <= ceiling + 1e-6,
        "adv+1 at 1.0: {full}"
    );
}

/// A hotspot: the hot host's link caps its senders, not everyone (max aggregate, not
/// max-concurrent); a transient pattern has no single matrix and gets no optimum.
#[test]
fn hotspot_caps_only_its_senders_and_transients_have_none() {
    let load = 0.8;
    let h = optimum(&cfg(Pattern::Hotspot { contributors: 4 }), load)
        .unwrap()
        .unwrap();
    // 72 hosts, the hot one only receives: at most 71 senders' load, and 4 of them share one link.
    assert!(h < load * 71.0 / 72.0, "{h}");
    assert!(h > load * 67.0 / 72.0, "{h}");
    let mut t = cfg(Pattern::Uniform);
    t.traffic = Traffic {
        first: Pattern::Uniform,
        then: Some((Pattern::Adv(1), 1000)),
    };
    assert_eq!(optimum(&t, load).unwrap(), None);
}
