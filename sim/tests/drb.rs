//! DRB against InfiniBand CC and static minimal routing on a 4×4 torus under the perfect
//! shuffle: the small-scale version of `sim/scripts/drb.sh` (same directions, a few seconds in
//! a debug build). Also: DRB's and the torus's VC classes never deadlock (every run drains).

#![allow(clippy::unwrap_used, clippy::panic)]

use fabricflow_controller::plan::paths::Multipath;
use fabricflow_controller::traffic::Pattern;
use fabricflow_controller::TopologySpec;
use fabricflow_sim::config::{Routing, SimConfig, Traffic};
use fabricflow_sim::net::Sim;
use fabricflow_sim::run::{max_link_load, run_one, LoadResult};

fn run(routing: Routing, pattern: Pattern, load: f64) -> LoadResult {
    let cfg = SimConfig {
        topology: TopologySpec::Torus { k: 4, n: 2, p: 1 },
        routing,
        traffic: Traffic::steady(pattern),
        load,
        warmup_cycles: 5_000,
        measure_cycles: 5_000,
        seed: 3,
        data_vcs: 8,
        port_stats_interval: Some(5_000),
        multipath: Multipath {
            max_stretch: 0,
            ..Multipath::default()
        },
        ..SimConfig::default()
    };
    run_one(&cfg).unwrap_or_else(|e| panic!("{routing}: {e}"))
}

#[test]
fn drb_beats_throttling_at_high_load_and_costs_nothing_at_low_load() {
    let (drb, iba) = (
        run(Routing::Drb, Pattern::Shuffle, 1.0),
        run(Routing::IbaCc, Pattern::Shuffle, 1.0),
    );
    assert!(
        drb.accepted >= 1.3 * iba.accepted,
        "accepted: DRB {} vs IBA CC {}",
        drb.accepted,
        iba.accepted
    );
    assert!(
        drb.avg_latency_cycles <= 0.58 * iba.avg_latency_cycles,
        "latency: DRB {} vs IBA CC {}",
        drb.avg_latency_cycles,
        iba.avg_latency_cycles
    );
    let (drb, min) = (
        run(Routing::Drb, Pattern::Shuffle, 0.1),
        run(Routing::Minimal, Pattern::Shuffle, 0.1),
    );
    let ratio = drb.avg_latency_cycles / min.avg_latency_cycles;
    assert!(
        (0.95..=1.05).contains(&ratio),
        "low-load latency ratio {ratio}"
    );
    assert!(max_link_load(&drb).unwrap() > 0.0);
}

#[test]
fn iba_cc_throttles_hosts() {
    let cfg = SimConfig {
        topology: TopologySpec::Torus { k: 4, n: 2, p: 1 },
        routing: Routing::IbaCc,
        traffic: Traffic::steady(Pattern::Shuffle),
        load: 1.0,
        data_vcs: 8,
        ..SimConfig::default()
    };
    let mut sim = Sim::new(cfg).unwrap();
    sim.run(5_000);
    assert!(sim.ird().iter().any(|&i| i > 0), "no host throttled");
    // Throttled hosts inject less than they are offered: accepted stays below minimal's.
    let min = run(Routing::Minimal, Pattern::Shuffle, 1.0);
    let iba = run(Routing::IbaCc, Pattern::Shuffle, 1.0);
    assert!(
        iba.accepted < min.accepted,
        "{} vs {}",
        iba.accepted,
        min.accepted
    );
}
