//! Where the port counters say a fabric stalls, on small fabrics (debug build, a few seconds):
//! a Dragonfly under ADV+1 with minimal routing and a fat-tree with a hotspot.
//!
//! XmitWait counts cycles a transmitter had a packet, a free link and no credit, so the
//! saturated link itself (always sending) shows in XmitData and the ports feeding it, the victims
//! of its backpressure, show in XmitWait.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::BTreeSet;

use fabricflow_controller::topology::{Peer, PortRole};
use fabricflow_controller::TopologySpec;
use fabricflow_report::{input, Analyzer, Options};
use fabricflow_sim::config::{Pattern, Routing, SimConfig, Traffic};
use fabricflow_sim::net::Direction;
use fabricflow_sim::port_stats::write_csv;
use fabricflow_sim::run::{run_one, LoadResult};

/// Per transmitter (switch, port, direction): mean FITF and utilisation over the window.
type Ranked = Vec<((u32, u32, PortRole, Direction), f64, f64)>;

fn rank(cfg: &SimConfig, r: &LoadResult) -> Ranked {
    let (first, last) = (r.port_stats.first().unwrap(), r.port_stats.last().unwrap());
    let cycles = (last.cycle - first.cycle) as f64;
    assert_eq!(cycles, cfg.measure_cycles as f64);
    let mut out: Ranked = first
        .counters
        .iter()
        .zip(&last.counters)
        .map(|(a, b)| {
            assert_eq!(
                (a.switch, a.port, a.direction),
                (b.switch, b.port, b.direction)
            );
            let fitf = (b.xmit_wait_cycles - a.xmit_wait_cycles) as f64 / cycles;
            let util = (b.xmit_data_phits - a.xmit_data_phits) as f64 / cycles;
            ((b.switch, b.port, b.role, b.direction), fitf, util)
        })
        .collect();
    out.sort_by(|x, y| y.1.total_cmp(&x.1));
    out
}

/// The congestion roots `fabricflow-report` names from the run's `port-stats.csv`.
fn report_roots(r: &LoadResult) -> BTreeSet<(u32, u32)> {
    let mut csv = Vec::new();
    write_csv(&mut csv, &r.port_stats, |s| s.to_string()).unwrap();
    let mut a = Analyzer::new(Options::default()).unwrap();
    input::read_into(csv.as_slice(), &mut a).unwrap();
    let report = a.finish(usize::MAX, Some("tx"));
    report
        .roots
        .iter()
        .map(|p| (p.switch.parse().unwrap(), p.port))
        .collect()
}

fn cfg(topology: TopologySpec, pattern: Pattern, load: f64) -> SimConfig {
    SimConfig {
        topology,
        routing: Routing::Minimal,
        traffic: Traffic::steady(pattern),
        load,
        warmup_cycles: 3_000,
        measure_cycles: 3_000,
        seed: 3,
        port_stats_interval: Some(500),
        ..SimConfig::default()
    }
}

/// Dragonfly(2,4,2) under ADV+1, minimal: every group's one minimal global link to group G+1 is
/// the only saturated global link (and exactly the report's congestion roots), and the switch ports that stall are exactly the local ports
/// into the switch owning it — the group-to-group minimal global link's upstream, nothing else.
#[test]
fn dragonfly_adv1_minimal_stalls_point_at_the_minimal_global_links() {
    let topology = TopologySpec::Dragonfly { p: 2, a: 4, h: 2 };
    let fabric = topology.build().unwrap();
    let c = cfg(topology, Pattern::Adv(1), 0.5);
    let run = run_one(&c).unwrap();
    let ranked = rank(&c, &run);
    let sw = fabric.switches();
    let group = |s: usize| sw[s].group.unwrap();
    // The minimal global link of each group towards G+1, and the switch that owns it.
    let ngroups = sw.iter().filter_map(|s| s.group).max().unwrap() + 1;
    let mut owners = BTreeSet::new();
    let mut minimal_links = BTreeSet::new();
    for (s, x) in sw.iter().enumerate() {
        for p in &x.ports {
            if let Peer::Switch { switch, .. } = p.peer {
                if p.role == PortRole::Global && group(switch) == (group(s) + 1) % ngroups {
                    owners.insert(s);
                    minimal_links.insert((s as u32, p.no));
                }
            }
        }
    }
    assert_eq!(minimal_links.len(), usize::from(ngroups));
    assert_eq!(report_roots(&run), minimal_links);
    let saturated: BTreeSet<(u32, u32)> = ranked
        .iter()
        .filter(|(k, _, util)| k.2 == PortRole::Global && *util > 0.95)
        .map(|(k, _, _)| (k.0, k.1))
        .collect();
    assert_eq!(saturated, minimal_links);
    let feeding: BTreeSet<(u32, u32)> = sw
        .iter()
        .enumerate()
        .flat_map(|(s, x)| x.ports.iter().map(move |p| (s, p)))
        .filter(|(_, p)| matches!(p.peer, Peer::Switch { switch, .. } if owners.contains(&switch) && p.role == PortRole::Local))
        .map(|(s, p)| (s as u32, p.no))
        .collect();
    let stalled: BTreeSet<(u32, u32)> = ranked
        .iter()
        .filter(|(k, fitf, _)| k.3 == Direction::Tx && *fitf > 0.0)
        .map(|(k, _, _)| (k.0, k.1))
        .collect();
    assert_eq!(stalled, feeding);
    // Each of them is stalled most of the time: it carries 2 hosts' share of one link.
    assert!(ranked
        .iter()
        .filter(|(k, _, _)| feeding.contains(&(k.0, k.1)) && k.3 == Direction::Tx)
        .all(|(_, fitf, _)| *fitf > 0.5));
}

/// Fat-tree(4,3) with a hotspot (4 contributors outside the hot host's pod) over light uniform
/// traffic, minimal, shortly after the hot link saturates: the hot host's own port is saturated
/// and never waits (hosts sink at line rate) — a congestion root in the report; the switch ports ranked first are the down ports
/// carrying traffic into the hot host's pod, then their upstream victims (up ports); no down port
/// leading anywhere else is among the top ten.
#[test]
fn fat_tree_hotspot_stalls_rank_the_hot_down_ports_and_their_upstream_first() {
    let topology = TopologySpec::FatTree { k: 4, n: 3, w: 0 };
    let fabric = topology.build().unwrap();
    let pattern = Pattern::Hotspot { contributors: 4 };
    let c = SimConfig {
        warmup_cycles: 1_000,
        ..cfg(topology, pattern, 0.26)
    };
    let law = pattern.destinations(&fabric, c.seed).unwrap();
    let n = fabric.hosts().len();
    let senders = |d: usize| (0..n).filter(|&s| law.probability(s, d) == 1.0).count();
    let hot = (0..n).max_by_key(|&d| senders(d)).unwrap();
    assert_eq!(senders(hot), 4);
    let (hot_leaf, hot_port) = (fabric.hosts()[hot].switch, fabric.hosts()[hot].port);
    let run = run_one(&c).unwrap();
    let ranked = rank(&c, &run);
    let (_, fitf, util) = ranked
        .iter()
        .find(|(k, _, _)| (k.0 as usize, k.1, k.3) == (hot_leaf, hot_port, Direction::Tx))
        .unwrap();
    assert_eq!(*fitf, 0.0);
    assert!(*util > 0.95, "hot port utilisation {util}");
    let roots = report_roots(&run);
    assert!(
        roots.contains(&(hot_leaf as u32, hot_port)),
        "{roots:?} lacks the hot port"
    );
    let sw = fabric.switches();
    let hot_pod = sw[hot_leaf].group;
    let into_hot_pod = |s: u32, port: u32| {
        matches!(sw[s as usize].port(port).map(|p| p.peer),
            Some(Peer::Switch { switch, .. }) if sw[switch].group == hot_pod)
    };
    let top: Vec<_> = ranked
        .iter()
        .filter(|(k, _, _)| k.3 == Direction::Tx && k.2 != PortRole::Host)
        .take(10)
        .collect();
    for (k, fitf, _) in top.iter().take(2) {
        assert!(k.2 == PortRole::Down && into_hot_pod(k.0, k.1), "{top:?}");
        assert!(*fitf > 0.5, "{k:?}: {fitf}");
    }
    for (k, fitf, _) in &top {
        let upstream = k.2 == PortRole::Up || into_hot_pod(k.0, k.1);
        assert!(
            upstream,
            "{k:?} (FITF {fitf}) leads away from the hotspot: {top:?}"
        );
        assert!(*fitf > 0.1, "{k:?}: {fitf}");
    }
}
