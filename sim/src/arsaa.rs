//! Adaptive routing and SAA rate control on (extended) fat-trees: the pure study (link loads of
//! random permutations, no packets) and the rows of `ar-saa.csv`.
//!
//! Row columns: `hosts,width,traffic,mode,max_link_flows,mean_link_flows,completion_time`.
//! - `traffic`: `permP` = P superposed random permutations.
//! - `max_link_flows`: the largest number of flows on one directed link (host links included);
//!   `mean_link_flows`: the mean over flows of the largest number of flows on a link of the
//!   flow's path (the seed's "average encountered congestion"). Both averaged over the runs.
//! - `completion_time`: pure rows (`mode` = `pure-*`): SAA's completion time W, the largest link
//!   weight, in transfer times (unit flows); simulated rows: cycles until the last packet of the
//!   phase is delivered, averaged over the runs.

use fabricflow_controller::flowroute::{
    path_channels, random_permutations, saa_rates, Algorithm, Assignment, Path, TreeRouter,
};
use fabricflow_controller::topology::{Fabric, HostId};

use crate::config::{SimConfig, SpecError};
use crate::net::{Sim, TransferPaths, TransferSpec};

/// One row of `ar-saa.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub hosts: usize,
    pub width: u32,
    pub traffic: String,
    pub mode: String,
    pub max_link_flows: f64,
    pub mean_link_flows: f64,
    pub completion_time: f64,
}

/// The CSV header.
pub const HEADER: &str = "hosts,width,traffic,mode,max_link_flows,mean_link_flows,completion_time";

impl Row {
    /// The row as one CSV line (no newline).
    pub fn csv(&self) -> String {
        format!(
            "{},{},{},{},{:.4},{:.4},{:.4}",
            self.hosts,
            self.width,
            self.traffic,
            self.mode,
            self.max_link_flows,
            self.mean_link_flows,
            self.completion_time
        )
    }
}

/// Why a study could not run.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    #[error(transparent)]
    Route(#[from] fabricflow_controller::flowroute::FlowRouteError),
    #[error(transparent)]
    Sim(#[from] SpecError),
    #[error("{mode}: the phase did not complete within {cycles} cycles")]
    Unfinished { mode: String, cycles: u64 },
}

/// A simulated mode: which tree, which paths, whether SAA paces the flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimMode {
    /// D-mod-k on the plain tree, no rate control (the baseline).
    Oblivious,
    /// D-mod-k on the plain tree, SAA rates.
    Saa,
    /// Balanced flow-aware paths on the extended tree, no rate control.
    Ar,
    /// Balanced paths on the extended tree and SAA rates.
    ArSaa,
    /// The seed's reactive set-up (first packet, least-loaded) on the extended tree, no rates.
    ArReactive,
}

impl SimMode {
    /// Every mode, baseline first.
    pub const ALL: [SimMode; 5] = [
        SimMode::Oblivious,
        SimMode::Saa,
        SimMode::Ar,
        SimMode::ArSaa,
        SimMode::ArReactive,
    ];
    /// Its name in the CSV.
    pub fn name(self) -> &'static str {
        match self {
            SimMode::Oblivious => "oblivious",
            SimMode::Saa => "saa",
            SimMode::Ar => "ar",
            SimMode::ArSaa => "ar-saa",
            SimMode::ArReactive => "ar-reactive",
        }
    }
    /// Whether it runs on the extended tree.
    pub fn extended(self) -> bool {
        matches!(self, SimMode::Ar | SimMode::ArSaa | SimMode::ArReactive)
    }
}

fn loads(r: &TreeRouter, flows: &[(HostId, HostId)], paths: &[Path]) -> Assignment {
    let mut load = vec![0u32; r.channels()];
    for (&(s, _), p) in flows.iter().zip(paths) {
        r.add_load(&mut load, s, p, 1);
    }
    Assignment {
        paths: paths.to_vec(),
        load,
    }
}

/// Simulates one phase of `perms` superposed random permutations (seed `seed`) of transfers of
/// `packets` packets in `mode` on `fabric` (the plain tree for the oblivious modes, the
/// extended one for the adaptive ones; the caller picks): congestion of the paths and the
/// phase's completion time in cycles.
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    cfg: &SimConfig,
    fabric: &Fabric,
    mode: SimMode,
    perms: usize,
    packets: u32,
    seed: u64,
    max_cycles: u64,
) -> Result<Row, StudyError> {
    let r = TreeRouter::new(fabric)?;
    let hosts = fabric.hosts().len();
    let flows = random_permutations(hosts, perms, seed);
    let pinned = |algo| -> Result<Assignment, StudyError> { Ok(r.assign(&flows, algo)?) };
    let (paths, assignment) = match mode {
        SimMode::Oblivious | SimMode::Saa => {
            let a = pinned(Algorithm::DModK)?;
            (TransferPaths::Pinned(a.paths.clone()), Some(a))
        }
        SimMode::Ar | SimMode::ArSaa => {
            let a = pinned(Algorithm::Balanced)?;
            (TransferPaths::Pinned(a.paths.clone()), Some(a))
        }
        SimMode::ArReactive => (TransferPaths::Reactive(r.clone()), None),
    };
    let rates = match (&assignment, mode) {
        (Some(a), SimMode::Saa | SimMode::ArSaa) => {
            let chans = path_channels(&r, &flows, a);
            Some(saa_rates(&chans, &vec![1.0; flows.len()], r.channels()).0)
        }
        _ => None,
    };
    let spec = TransferSpec {
        flows: flows.clone(),
        packets,
        paths,
        rates,
    };
    let mut sim = Sim::with_transfers(cfg.clone(), fabric, spec)?;
    let done = sim
        .run_transfers(max_cycles)
        .ok_or_else(|| StudyError::Unfinished {
            mode: mode.name().to_owned(),
            cycles: max_cycles,
        })?;
    let a = match assignment {
        Some(a) => a,
        None => loads(&r, &flows, &sim.transfer_paths()),
    };
    let c = r.congestion(&flows, &a);
    Ok(Row {
        hosts,
        width: r.tree().w,
        traffic: format!("perm{perms}"),
        mode: mode.name().to_owned(),
        max_link_flows: f64::from(c.max),
        mean_link_flows: c.mean,
        completion_time: done as f64,
    })
}

/// [`simulate`] averaged over `runs` seeds from `seed`.
#[allow(clippy::too_many_arguments)]
pub fn simulate_runs(
    cfg: &SimConfig,
    fabric: &Fabric,
    mode: SimMode,
    perms: usize,
    packets: u32,
    runs: u64,
    seed: u64,
    max_cycles: u64,
) -> Result<Row, StudyError> {
    let mut acc: Option<Row> = None;
    for s in seed..seed + runs.max(1) {
        let row = simulate(cfg, fabric, mode, perms, packets, s, max_cycles)?;
        acc = Some(match acc {
            None => row,
            Some(mut a) => {
                a.max_link_flows += row.max_link_flows;
                a.mean_link_flows += row.mean_link_flows;
                a.completion_time += row.completion_time;
                a
            }
        });
    }
    let n = runs.max(1) as f64;
    Ok(acc
        .map(|mut a| {
            a.max_link_flows /= n;
            a.mean_link_flows /= n;
            a.completion_time /= n;
            a
        })
        .unwrap_or(Row {
            hosts: 0,
            width: 0,
            traffic: String::new(),
            mode: String::new(),
            max_link_flows: 0.0,
            mean_link_flows: 0.0,
            completion_time: 0.0,
        }))
}

/// The pure study on `fabric`: `runs` draws of `perms` superposed random permutations (seeds
/// `seed..seed+runs`), each routed by `algo`; congestion and SAA's W averaged over the draws.
pub fn pure(
    fabric: &Fabric,
    algo: Algorithm,
    perms: usize,
    runs: u64,
    seed: u64,
) -> Result<Row, StudyError> {
    let r = TreeRouter::new(fabric)?;
    let hosts = fabric.hosts().len();
    let (mut max, mut mean, mut w) = (0.0, 0.0, 0.0);
    for s in seed..seed + runs {
        let flows = random_permutations(hosts, perms, s);
        let a = r.assign(&flows, algo)?;
        let c = r.congestion(&flows, &a);
        max += f64::from(c.max);
        mean += c.mean;
        w += f64::from(a.load.iter().copied().max().unwrap_or(0));
    }
    let n = runs.max(1) as f64;
    Ok(Row {
        hosts,
        width: r.tree().w,
        traffic: format!("perm{perms}"),
        mode: format!("pure-{}", algo.name()),
        max_link_flows: max / n,
        mean_link_flows: mean / n,
        completion_time: w / n,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use fabricflow_controller::TopologySpec;

    #[test]
    fn pure_rows_average_the_runs() {
        let f = "fattree:k=4,n=2,w=1"
            .parse::<TopologySpec>()
            .unwrap()
            .build()
            .unwrap();
        let one = pure(&f, Algorithm::DModK, 1, 1, 5).unwrap();
        let two = pure(&f, Algorithm::DModK, 1, 2, 5).unwrap();
        let next = pure(&f, Algorithm::DModK, 1, 1, 6).unwrap();
        assert!(
            (two.max_link_flows - (one.max_link_flows + next.max_link_flows) / 2.0).abs() < 1e-12
        );
        assert_eq!(one.csv().split(',').count(), HEADER.split(',').count());
        assert!(one.mean_link_flows >= 1.0 && one.mean_link_flows <= one.max_link_flows);
        // With unit flows SAA's W is the largest link load.
        assert_eq!(one.completion_time, one.max_link_flows);
    }

    fn tree(spec: &str) -> Fabric {
        spec.parse::<TopologySpec>().unwrap().build().unwrap()
    }

    /// Every mode completes; the packets delivered are the phase's; SAA's pacing never lets a
    /// phase finish before its fluid bound W · packet length (every flow carries `packets`
    /// packets at rate 1/W_f ≥ 1/W); and on a contended phase SAA+AR beats oblivious routing
    /// without rate control.
    #[test]
    fn transfers_complete_and_saa_respects_its_bound() {
        let cfg = SimConfig::default();
        let plain = tree("fattree:k=4,n=3");
        let ext = tree("fattree:k=4,n=3,w=2");
        let packets = 8;
        let len = f64::from(cfg.packet_phits());
        let mut t = std::collections::BTreeMap::new();
        for mode in SimMode::ALL {
            let f = if mode.extended() { &ext } else { &plain };
            let row = simulate(&cfg, f, mode, 4, packets, 3, 1_000_000).unwrap();
            // Lower bound: the busiest link must carry max_link_flows · packets packets.
            assert!(
                row.completion_time >= row.max_link_flows * f64::from(packets) * len,
                "{mode:?} {row:?}"
            );
            t.insert(mode.name(), row.completion_time);
        }
        assert!(t["ar-saa"] < t["oblivious"], "{t:?}");
    }
}
