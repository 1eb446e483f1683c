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

use fabricflow_controller::flowroute::{random_permutations, Algorithm, TreeRouter};
use fabricflow_controller::topology::Fabric;

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
}
