//! `ar-saa`: adaptive routing and SAA rate control on (extended) fat-trees — the pure link-load
//! study (`pure`) and, in the simulator, completion times of superposed permutations (`sim`).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use fabricflow_controller::flowroute::Algorithm;
use fabricflow_controller::TopologySpec;
use fabricflow_sim::arsaa::{self, Row, SimMode, HEADER};
use fabricflow_sim::SimConfig;

#[derive(Debug, Parser)]
#[command(name = "ar-saa", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Link loads of random permutations, no packets: D-mod-k on the plain tree against the
    /// adaptive algorithms on the extended tree of width `--width`.
    Pure {
        /// k and n of the k-ary n-tree.
        #[arg(long, default_value_t = 16)]
        k: u32,
        #[arg(long, default_value_t = 3)]
        n: u32,
        /// Horizontal width of the extended tree.
        #[arg(long, default_value_t = 2)]
        width: u32,
        /// Draws of random permutations.
        #[arg(long, default_value_t = 1000)]
        runs: u64,
        /// Superposed permutations per draw.
        #[arg(long, default_value_t = 1)]
        perms: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Append the rows to this CSV (header written if the file is new).
        #[arg(long)]
        csv: Option<PathBuf>,
    },
    /// Completion time of superposed permutations of fixed-size transfers in the simulator:
    /// oblivious D-mod-k and SAA on the plain tree, balanced AR (with and without SAA) and the
    /// reactive AR on the extended tree of width `--width`.
    Sim {
        #[arg(long, default_value_t = 32)]
        k: u32,
        #[arg(long, default_value_t = 2)]
        n: u32,
        #[arg(long, default_value_t = 2)]
        width: u32,
        /// Superposed permutation counts to sweep, comma-separated.
        #[arg(long, default_value = "1,2,4,8")]
        perms: String,
        /// Packets per transfer.
        #[arg(long, default_value_t = 16)]
        packets: u32,
        /// Phases (seeds) averaged per point.
        #[arg(long, default_value_t = 3)]
        runs: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Give up on a phase after this many cycles.
        #[arg(long, default_value_t = 5_000_000)]
        max_cycles: u64,
        /// Modes (oblivious, saa, ar, ar-saa, ar-reactive), comma-separated.
        #[arg(long, default_value = "oblivious,saa,ar,ar-saa,ar-reactive")]
        modes: String,
        #[arg(long)]
        csv: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ar-saa: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn append(csv: Option<&PathBuf>, rows: &[Row]) -> anyhow::Result<()> {
    let Some(path) = csv else { return Ok(()) };
    let new = !path.exists();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    if new {
        writeln!(f, "{HEADER}")?;
    }
    for r in rows {
        writeln!(f, "{}", r.csv())?;
    }
    Ok(())
}

fn real_main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Pure {
            k,
            n,
            width,
            runs,
            perms,
            seed,
            csv,
        } => {
            let plain = TopologySpec::FatTree { k, n, w: 0 }.build()?;
            let ext = TopologySpec::FatTree { k, n, w: width }.build()?;
            let mut rows = Vec::new();
            println!("{HEADER},ratio_max,ratio_mean,seconds");
            let mut base: Option<Row> = None;
            for (fabric, algo) in [
                (&plain, Algorithm::DModK),
                (&plain, Algorithm::Greedy),
                (&plain, Algorithm::Balanced),
                (&ext, Algorithm::Greedy),
                (&ext, Algorithm::Balanced),
            ] {
                let started = std::time::Instant::now();
                let row = arsaa::pure(fabric, algo, perms, runs, seed)?;
                let b = base.get_or_insert_with(|| row.clone());
                println!(
                    "{},{:.3},{:.3},{:.1}",
                    row.csv(),
                    row.max_link_flows / b.max_link_flows,
                    row.mean_link_flows / b.mean_link_flows,
                    started.elapsed().as_secs_f64()
                );
                rows.push(row);
            }
            append(csv.as_ref(), &rows)?;
        }
        Cmd::Sim {
            k,
            n,
            width,
            perms,
            packets,
            runs,
            seed,
            max_cycles,
            modes,
            csv,
        } => {
            let plain = TopologySpec::FatTree { k, n, w: 0 }.build()?;
            let ext = TopologySpec::FatTree { k, n, w: width }.build()?;
            let modes: Vec<SimMode> = modes
                .split(',')
                .map(|m| {
                    SimMode::ALL
                        .into_iter()
                        .find(|x| x.name() == m.trim())
                        .with_context(|| format!("unknown mode {m:?}"))
                })
                .collect::<anyhow::Result<_>>()?;
            let cfg = SimConfig::default();
            println!("{HEADER},over_oblivious,seconds");
            for p in perms.split(',') {
                let p: usize = p.trim().parse().with_context(|| format!("--perms {p:?}"))?;
                let mut rows = Vec::new();
                let mut base: Option<f64> = None;
                for &mode in &modes {
                    let started = std::time::Instant::now();
                    let f = if mode.extended() { &ext } else { &plain };
                    let row =
                        arsaa::simulate_runs(&cfg, f, mode, p, packets, runs, seed, max_cycles)?;
                    let b = *base.get_or_insert(row.completion_time);
                    println!(
                        "{},{:.3},{:.1}",
                        row.csv(),
                        row.completion_time / b,
                        started.elapsed().as_secs_f64()
                    );
                    rows.push(row);
                }
                append(csv.as_ref(), &rows)?;
            }
        }
    }
    Ok(())
}
