//! `fabricflow-dftree`: the dFtree table (issue 19) — per hot-spot count and contributor share,
//! one lane, oracle lanes and detection-driven lanes on one fabric — into `OUT/dftree.csv`,
//! and every detection sweep into `OUT/dftree-sweeps.csv`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use fabricflow_controller::dftree::{DftreeConfig, LaneChange};
use fabricflow_controller::traffic::Pattern;
use fabricflow_controller::TopologySpec;
use fabricflow_sim::config::{SimConfig, Traffic};
use fabricflow_sim::dftree::{run, DftreeResult, LaneMode};

/// Simulates dFtree's slow lanes under the seed's traffic (`hotspots:N:P`: P % of each
/// contributor's packets to its block's hot spot, the rest uniform).
#[derive(Debug, Parser)]
#[command(name = "fabricflow-dftree", version)]
struct Cli {
    /// The fabric (the seed's 648-host fat-tree by default).
    #[arg(long, default_value = "leafspine:l=36,s=18,p=18")]
    topology: TopologySpec,
    /// Hot-spot counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,3,9")]
    hotspots: Vec<u32>,
    /// Contributor shares to the hot spot, percent, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "5")]
    percent: Vec<u32>,
    /// Modes, comma-separated: one-lane, oracle, detect.
    #[arg(long, value_delimiter = ',', default_value = "one-lane,oracle,detect")]
    modes: Vec<String>,
    /// Offered load (fraction of injection bandwidth).
    #[arg(long, default_value_t = 1.0)]
    load: f64,
    #[arg(long, default_value_t = 20_000)]
    warmup: u64,
    #[arg(long, default_value_t = 20_000)]
    measure: u64,
    /// Detection sweep interval, cycles.
    #[arg(long, default_value_t = 5_000)]
    sweep: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Input buffer per lane on fabric ports, phits.
    #[arg(long, default_value_t = 32)]
    in_buffer: u32,
    /// The detection's thresholds (fractions of a sweep interval).
    #[arg(long, default_value_t = DftreeConfig::default().hot_congestion)]
    hot_congestion: f64,
    #[arg(long, default_value_t = DftreeConfig::default().clear_congestion)]
    clear_congestion: f64,
    #[arg(long, default_value_t = DftreeConfig::default().contributor_congestion)]
    contributor_congestion: f64,
    #[arg(long, default_value_t = DftreeConfig::default().contributor_utilisation)]
    contributor_utilisation: f64,
    #[arg(long, default_value_t = DftreeConfig::default().clear_sweeps)]
    clear_sweeps: u32,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
}

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fabricflow-dftree: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let modes: Vec<LaneMode> = cli
        .modes
        .iter()
        .map(|m| m.parse())
        .collect::<Result<_, _>>()?;
    let det = DftreeConfig {
        hot_congestion: cli.hot_congestion,
        clear_congestion: cli.clear_congestion,
        contributor_congestion: cli.contributor_congestion,
        contributor_utilisation: cli.contributor_utilisation,
        clear_sweeps: cli.clear_sweeps,
        ..DftreeConfig::default()
    };
    std::fs::create_dir_all(&cli.out).with_context(|| format!("{}", cli.out.display()))?;
    let mut table = String::from(
        "hotspots,mode,throughput_per_node,victim_throughput,gain_vs_one_lane,percent\n",
    );
    let mut sweeps = String::from("hotspots,percent,sweep,cycle,hot_spots,repaths,unpaths\n");
    for &percent in &cli.percent {
        for &spots in &cli.hotspots {
            let cfg = SimConfig {
                topology: cli.topology.clone(),
                traffic: Traffic::steady(Pattern::HotSpots { spots, percent }),
                load: cli.load,
                warmup_cycles: cli.warmup,
                measure_cycles: cli.measure,
                seed: cli.seed,
                data_vcs: 2,
                lanes: 2,
                in_local_phits: cli.in_buffer,
                in_host_phits: cli.in_buffer,
                ..SimConfig::default()
            };
            let mut base: Option<f64> = None;
            for &mode in &modes {
                let started = std::time::Instant::now();
                let r: DftreeResult = run(&cfg, mode, cli.sweep, &det)?;
                if mode == LaneMode::One {
                    base = Some(r.throughput_per_node);
                }
                let gain = base.map_or(f64::NAN, |b| r.throughput_per_node / b);
                writeln!(
                    table,
                    "{spots},{mode},{:.6},{:.6},{:.4},{percent}",
                    r.throughput_per_node, r.victim_throughput, gain
                )?;
                for (i, s) in r.sweeps.iter().enumerate() {
                    let count =
                        |f: fn(&LaneChange) -> bool| s.changes.iter().filter(|c| f(c)).count();
                    writeln!(
                        sweeps,
                        "{spots},{percent},{},{},{},{},{}",
                        i + 1,
                        s.cycle,
                        s.hot_spots.len(),
                        count(|c| matches!(c, LaneChange::Repath { .. })),
                        count(|c| matches!(c, LaneChange::Unpath { .. })),
                    )?;
                }
                eprintln!(
                    "hotspots={spots} percent={percent} {mode}: {:.4} phits/node/cycle (victims {:.4}), gain {gain:.2}, {} slow lanes, {:.1} s",
                    r.throughput_per_node,
                    r.victim_throughput,
                    r.slow_lanes.len(),
                    started.elapsed().as_secs_f64()
                );
            }
        }
    }
    let path = cli.out.join("dftree.csv");
    std::fs::write(&path, table).with_context(|| format!("{}", path.display()))?;
    let path = cli.out.join("dftree-sweeps.csv");
    std::fs::write(&path, sweeps).with_context(|| format!("{}", path.display()))?;
    Ok(())
}
