#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! dFtree at small scale (the 648-host table is `sim/scripts/dftree.sh`): on a 16-host
//! leaf/spine tree with one hot spot, the slow lane beats one lane, the controller's detection
//! flags the hot spot within two sweeps, moves only flows to it, gets at least 80 % of the
//! oracle's gain, and unpaths once the hot spot's traffic stops.

use fabricflow_controller::dftree::{DftreeConfig, LaneChange};
use fabricflow_controller::TopologySpec;
use fabricflow_sim::config::SimConfig;
use fabricflow_sim::dftree::{run, LaneMode};

const SWEEP: u64 = 1_000;
const LOAD: f64 = 0.5;

fn cfg(traffic: &str, load: f64) -> SimConfig {
    SimConfig {
        topology: TopologySpec::LeafSpine { l: 4, s: 4, p: 4 },
        traffic: traffic.parse().unwrap(),
        load,
        warmup_cycles: 6_000,
        measure_cycles: 6_000,
        data_vcs: 2,
        lanes: 2,
        ..SimConfig::default()
    }
}

#[test]
fn slow_lanes_beat_one_lane_and_detection_gets_most_of_the_oracles_gain() {
    let c = cfg("hotspots:1:20", LOAD);
    let det = DftreeConfig::default();
    let one = run(&c, LaneMode::One, SWEEP, &det).unwrap();
    let oracle = run(&c, LaneMode::Oracle, SWEEP, &det).unwrap();
    let detect = run(&c, LaneMode::Detect, SWEEP, &det).unwrap();
    eprintln!("{one:?}\n{oracle:?}\n{detect:?}");
    assert_eq!(one.hot_spots, vec![0]);
    let gain = oracle.throughput_per_node / one.throughput_per_node;
    assert!(gain > 1.5, "oracle gain {gain}");
    assert!(oracle.victim_throughput > 1.5 * one.victim_throughput);
    let detect_gain = detect.throughput_per_node / one.throughput_per_node;
    assert!(
        detect_gain - 1.0 >= 0.8 * (gain - 1.0),
        "detect {detect_gain} vs oracle {gain}"
    );
    // Flagged within two sweeps, and only flows to the hot spot move: every edge switch.
    let flagged = detect
        .sweeps
        .iter()
        .position(|s| s.hot_spots.contains(&0))
        .unwrap();
    assert!(flagged < 2, "flagged at sweep {}", flagged + 1);
    for s in &detect.sweeps {
        for c in &s.changes {
            assert!(
                matches!(c, LaneChange::Repath { hot_spot: 0, .. }),
                "sweep at {}: {c:?}",
                s.cycle
            );
        }
    }
    // Every other leaf's hosts feed the hot spot across the spines: all are repathed (the hot
    // spot's own leaf only if its hosts stalled too).
    assert_eq!(oracle.slow_lanes, vec![(0, 0), (1, 0), (2, 0), (3, 0)]);
    assert!(detect
        .slow_lanes
        .iter()
        .all(|l| oracle.slow_lanes.contains(l)));
    assert!([(1, 0), (2, 0), (3, 0)]
        .iter()
        .all(|l| detect.slow_lanes.contains(l)));
    assert!(one.slow_lanes.is_empty());
}

/// The hot spot's traffic stops (the pattern turns uniform); once the queued traffic for it
/// has drained and its port's congestion fell below the clearing threshold, the next sweep
/// unpaths every edge switch.
#[test]
fn the_hot_spot_is_unpathed_within_two_sweeps_once_it_clears() {
    let stop = 3_000;
    let c = SimConfig {
        measure_cycles: 9_000,
        ..cfg(&format!("hotspots:1:20->uniform@{stop}"), 0.5)
    };
    let det = DftreeConfig::default();
    let r = run(&c, LaneMode::Detect, SWEEP, &det).unwrap();
    for s in &r.sweeps {
        eprintln!("{s:?}");
    }
    let changes = |f: fn(&LaneChange) -> bool| {
        r.sweeps
            .iter()
            .position(|s| s.changes.iter().any(f))
            .unwrap()
    };
    let repath = changes(|c| matches!(c, LaneChange::Repath { hot_spot: 0, .. }));
    let unpath = changes(|c| matches!(c, LaneChange::Unpath { hot_spot: 0, .. }));
    assert!(r.sweeps[repath].cycle <= stop, "repathed before the stop");
    assert!(r.sweeps[unpath].cycle > stop);
    // The first sweep after the stop in which the hot spot's port was below the threshold.
    let cleared = r
        .sweeps
        .iter()
        .position(|s| s.cycle > stop && s.hot_spot_congestion[0] < det.clear_congestion)
        .unwrap();
    assert!(
        unpath >= cleared && unpath - cleared < 2,
        "cleared at sweep {cleared}, unpath at {unpath}"
    );
    assert!(
        !r.slow_lanes.iter().any(|&(_, d)| d == 0),
        "{:?}",
        r.slow_lanes
    );
}
