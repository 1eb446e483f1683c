//! Runs (one load, a sweep in parallel) and their outputs (CSV, plots).

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use fabricflow_controller::bound::{self, BoundError, DemandModel, LinkRates, Routing};
use fabricflow_controller::TopologyError;

use crate::config::{SimConfig, SpecError};
use crate::net::Sim;
use crate::port_stats::{self, PortSample};

/// What one load produced.
#[derive(Debug, Clone)]
pub struct LoadResult {
    pub offered: f64,
    /// Accepted throughput, phits/node/cycle (= fraction of injection bandwidth).
    pub accepted: f64,
    pub avg_latency_cycles: f64,
    pub p99_latency_cycles: f64,
    /// Group 0's switches: (switch id, accepted phits/node/cycle of its hosts' traffic).
    pub group0: Vec<(usize, f64)>,
    /// Throughput (phits/node/cycle) per time window over the whole run.
    pub series_throughput: Vec<f64>,
    /// Mean P per time window (QCN-SW).
    pub series_p: Vec<f64>,
    pub nonminimal_fraction: f64,
    pub cnm_generated: u64,
    pub cnm_delivered: u64,
    pub cnm_dropped: u64,
    pub cnm_to_self: u64,
    /// Port counters read at the start of the measurement window and every
    /// `cfg.port_stats_interval` cycles after it (and at its end); empty when off.
    pub port_stats: Vec<PortSample>,
    /// Switch names by index, for `port-stats.csv`.
    pub switch_names: Vec<String>,
    /// The throughput optimum at this load, phits/node/cycle ([`optimum`]); `None` until asked.
    pub optimum: Option<f64>,
    /// Simulated cycles and the wall time they took (not written to the CSVs: not reproducible).
    pub cycles: u64,
    pub wall_secs: f64,
}

/// Simulates `cfg` (warm-up then measurement).
pub fn run_one(cfg: &SimConfig) -> Result<LoadResult, SpecError> {
    let started = Instant::now();
    let mut sim = Sim::new(cfg.clone())?;
    let cycles = cfg.warmup_cycles + cfg.measure_cycles;
    let mut port_stats = Vec::new();
    match cfg.port_stats_interval {
        None => sim.run(cycles),
        Some(interval) => {
            sim.run(cfg.warmup_cycles);
            let read = |sim: &Sim| PortSample {
                cycle: sim.now(),
                counters: sim.port_counters(),
            };
            port_stats.push(read(&sim));
            while sim.now() < cycles {
                sim.run(interval.min(cycles - sim.now()));
                port_stats.push(read(&sim));
            }
        }
    }
    let switch_names = (0..sim.switches())
        .map(|s| sim.switch_name(s).to_owned())
        .collect();
    let wall_secs = started.elapsed().as_secs_f64();
    let hosts = sim.hosts().max(1) as f64;
    let measure = cfg.measure_cycles.max(1) as f64;
    let st = &mut sim.stats;
    let accepted = st.delivered_phits as f64 / (hosts * measure);
    let n = st.latencies.len();
    let avg = if n == 0 {
        f64::NAN
    } else {
        st.latencies.iter().map(|&l| f64::from(l)).sum::<f64>() / n as f64
    };
    let p99 = if n == 0 {
        f64::NAN
    } else {
        let k = ((n as f64) * 0.99).ceil() as usize;
        let k = k.clamp(1, n) - 1;
        let (_, v, _) = st.latencies.select_nth_unstable(k);
        f64::from(*v)
    };
    let w = cfg.window_cycles as f64;
    let series_throughput = st
        .series_phits
        .iter()
        .map(|&p| p as f64 / (hosts * w))
        .collect();
    let series_p = st.series_p.clone();
    let per_src = st.per_src_switch.clone();
    let nonmin = if st.inter_injected == 0 {
        0.0
    } else {
        st.inter_nonminimal as f64 / st.inter_injected as f64
    };
    let (g, d, dr, me) = (
        st.cnm_generated,
        st.cnm_delivered,
        st.cnm_dropped,
        st.cnm_to_self,
    );
    let group0 = (0..sim.switches())
        .filter(|&s| sim.group_of(s) == Some(0) && sim.hosts_of(s) > 0)
        .map(|s| {
            let ph = per_src.get(s).copied().unwrap_or(0) as f64;
            (s, ph / (sim.hosts_of(s) as f64 * measure))
        })
        .collect();
    Ok(LoadResult {
        offered: cfg.load,
        accepted,
        avg_latency_cycles: avg,
        p99_latency_cycles: p99,
        group0,
        series_throughput,
        series_p,
        nonminimal_fraction: nonmin,
        cnm_generated: g,
        cnm_delivered: d,
        cnm_dropped: dr,
        cnm_to_self: me,
        port_stats,
        switch_names,
        optimum: None,
        cycles,
        wall_secs,
    })
}

/// Loads `from..=to` by `step` (rounded to 1e-9 to avoid drift).
pub fn loads(from: f64, to: f64, step: f64) -> Vec<f64> {
    let mut out = Vec::new();
    if step.is_nan() || step <= 0.0 {
        return vec![from];
    }
    let mut i = 0u32;
    loop {
        let l = ((from + f64::from(i) * step) * 1e9).round() / 1e9;
        if l > to + 1e-9 || i > 10_000 {
            break;
        }
        out.push(l);
        i += 1;
    }
    out
}

/// Runs every load of `loads` on `threads` worker threads (results in load order; each load
/// uses the same seed, so results do not depend on the number of threads), calling `tick` after
/// each finished load.
pub fn sweep(
    base: &SimConfig,
    loads: &[f64],
    threads: usize,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<LoadResult>, SpecError> {
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<Result<LoadResult, SpecError>>>> =
        Mutex::new((0..loads.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, loads.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&load) = loads.get(i) else { break };
                let cfg = SimConfig {
                    load,
                    ..base.clone()
                };
                let r = run_one(&cfg);
                if let Ok(mut s) = slots.lock() {
                    if let Some(slot) = s.get_mut(i) {
                        *slot = Some(r);
                    }
                }
                tick();
            });
        }
    });
    let slots = slots
        .into_inner()
        .map_err(|_| SpecError::Invalid("a worker thread panicked".into()))?;
    slots
        .into_iter()
        .map(|s| s.unwrap_or_else(|| Err(SpecError::Invalid("load not simulated".into()))))
        .collect()
}

fn f(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.6}")
    } else {
        "nan".to_owned()
    }
}

/// Reaction time after a transient at `t_switch`: cycles from the switch until the first window
/// whose throughput is back at ≥ 90 % of the final level (the mean of the last quarter of the
/// windows after the switch), searched from the lowest window after the switch; 0 if throughput
/// never fell below that level, `None` if it never came back.
pub fn reaction_cycles(r: &LoadResult, cfg: &SimConfig, t_switch: u64) -> Option<u64> {
    let w = cfg.window_cycles;
    let first = usize::try_from(t_switch.div_ceil(w)).ok()?;
    let series = r.series_throughput.get(first..)?;
    // Ignore the last, partial window.
    let series = series.get(..series.len().saturating_sub(1))?;
    if series.is_empty() {
        return None;
    }
    let tail = series.get(series.len() - series.len().div_ceil(4)..)?;
    let target = 0.9 * tail.iter().sum::<f64>() / tail.len() as f64;
    if series.iter().all(|&x| x >= target) {
        return Some(0);
    }
    let (imin, _) =
        series.iter().enumerate().fold(
            (0, f64::INFINITY),
            |(bi, bv), (i, &x)| {
                if x < bv {
                    (i, x)
                } else {
                    (bi, bv)
                }
            },
        );
    let k = series.iter().skip(imin).position(|&x| x >= target)? + imin;
    let start = (first + k) as u64 * w;
    Some(start.saturating_sub(t_switch))
}

/// The final throughput level after a transient (mean of the last quarter of the windows after
/// `t_switch`).
pub fn final_level(r: &LoadResult, cfg: &SimConfig, t_switch: u64) -> f64 {
    let first = usize::try_from(t_switch.div_ceil(cfg.window_cycles)).unwrap_or(usize::MAX);
    let series = r.series_throughput.get(first..).unwrap_or(&[]);
    let series = series.get(..series.len().saturating_sub(1)).unwrap_or(&[]);
    let tail = series
        .get(series.len() - series.len().div_ceil(4)..)
        .unwrap_or(&[]);
    if tail.is_empty() {
        f64::NAN
    } else {
        tail.iter().sum::<f64>() / tail.len() as f64
    }
}

/// Why the throughput optimum could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum OptimumError {
    #[error("building the fabric: {0}")]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    Bound(#[from] BoundError),
}

/// The throughput optimum of `cfg`'s steady pattern at offered load `load`, phits/node/cycle:
/// the maximum aggregate throughput of the simulator's destination matrix
/// (`bound::DemandModel::Matrix`, every sending host offering `load`), each demand at most
/// itself, over links of one phit per cycle with unrestricted routing — the LP of
/// `fabricflow-controller bound --demand matrix`. Not the max-concurrent flow: under a hotspot
/// the hot flows' bottleneck would cap every other flow too. `None` for a transient pattern (its
/// matrix changes mid-run). The LP grows with the pattern's switch pairs: well under a second
/// on Dragonfly(2,4,2), minutes at the seeds' scale.
pub fn optimum(cfg: &SimConfig, load: f64) -> Result<Option<f64>, OptimumError> {
    if cfg.traffic.then.is_some() {
        return Ok(None);
    }
    let fabric = cfg.topology.build()?;
    let demands = bound::demands(
        &fabric,
        &cfg.traffic.first.to_string(),
        cfg.seed,
        DemandModel::Matrix,
        load,
    )?;
    let b = bound::bound(&fabric, &LinkRates::uniform(1.0), &demands, Routing::Any)?;
    Ok(Some(
        b.max_aggregate_mbps / fabric.hosts().len().max(1) as f64,
    ))
}

/// The CSV files of a sweep: `results.csv` (one row per load), `group0.csv` (per switch of
/// group 0), `timeseries.csv` (throughput and mean P per window) and, for a transient,
/// `reaction.csv`, and `port-stats.csv` when one load was simulated with port counters.
/// Byte-identical for the same seed and configuration.
pub fn write_csvs(dir: &Path, cfg: &SimConfig, results: &[LoadResult]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let ns = cfg.ns_per_cycle();
    let mut s = String::from(
        "topology,routing,traffic,offered_load,accepted_fraction,accepted_phits_node_cycle,avg_latency_cycles,p99_latency_cycles,avg_latency_ns,p99_latency_ns,nonminimal_fraction,cnm_generated,cnm_delivered,cnm_dropped,cnm_to_self,optimum_phits_node_cycle,fraction_of_optimum\n",
    );
    for r in results {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            // Commas of the spec would split the column: `p=4;a=8;h=4`.
            cfg.topology.to_string().replace(',', ";"),
            cfg.routing,
            cfg.traffic,
            f(r.offered),
            f(r.accepted),
            f(r.accepted),
            f(r.avg_latency_cycles),
            f(r.p99_latency_cycles),
            f(r.avg_latency_cycles * ns),
            f(r.p99_latency_cycles * ns),
            f(r.nonminimal_fraction),
            r.cnm_generated,
            r.cnm_delivered,
            r.cnm_dropped,
            r.cnm_to_self,
            f(r.optimum.unwrap_or(f64::NAN)),
            f(r.optimum.map_or(f64::NAN, |o| r.accepted / o)),
        );
    }
    std::fs::write(dir.join("results.csv"), s)?;
    let mut s = String::from("offered_load,switch,accepted_phits_node_cycle\n");
    for r in results {
        for (sw, x) in &r.group0 {
            let _ = writeln!(s, "{},{},{}", f(r.offered), sw, f(*x));
        }
    }
    std::fs::write(dir.join("group0.csv"), s)?;
    let mut s = String::from("offered_load,cycle,throughput,mean_p\n");
    for r in results {
        for (i, x) in r.series_throughput.iter().enumerate() {
            let p = r.series_p.get(i).copied().unwrap_or(f64::NAN);
            let _ = writeln!(
                s,
                "{},{},{},{}",
                f(r.offered),
                i as u64 * cfg.window_cycles,
                f(*x),
                f(p)
            );
        }
    }
    std::fs::write(dir.join("timeseries.csv"), s)?;
    if let Some((_, t)) = cfg.traffic.then {
        let mut s = String::from(
            "offered_load,switch_cycle,final_throughput,reaction_cycles,reaction_ns\n",
        );
        for r in results {
            let fin = f(final_level(r, cfg, t));
            match reaction_cycles(r, cfg, t) {
                Some(c) => {
                    let _ = writeln!(
                        s,
                        "{},{},{},{},{}",
                        f(r.offered),
                        t,
                        fin,
                        c,
                        f(c as f64 * ns)
                    );
                }
                None => {
                    let _ = writeln!(s, "{},{},{},never,never", f(r.offered), t, fin);
                }
            }
        }
        std::fs::write(dir.join("reaction.csv"), s)?;
    }
    if let [r] = results {
        if !r.port_stats.is_empty() {
            let file = std::fs::File::create(dir.join("port-stats.csv"))?;
            port_stats::write_csv(std::io::BufWriter::new(file), &r.port_stats, |s| {
                r.switch_names
                    .get(s as usize)
                    .cloned()
                    .unwrap_or_else(|| s.to_string())
            })?;
        }
    }
    Ok(())
}

/// The busiest switch-to-switch link's load over the measurement window, phits per cycle
/// (1 = the link never idle), from the first and last port-counter samples; `None` without
/// port counters (`port_stats_interval` off).
pub fn max_link_load(r: &LoadResult) -> Option<f64> {
    let (first, last) = (r.port_stats.first()?, r.port_stats.last()?);
    let cycles = last.cycle.checked_sub(first.cycle).filter(|&c| c > 0)? as f64;
    first
        .counters
        .iter()
        .zip(&last.counters)
        .filter(|(a, _)| a.direction == port_stats::Direction::Tx && a.role.is_fabric())
        .map(|(a, b)| b.xmit_data_phits.saturating_sub(a.xmit_data_phits) as f64 / cycles)
        .reduce(f64::max)
}
