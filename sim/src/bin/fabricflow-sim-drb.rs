//! `fabricflow-sim-drb`: the DRB experiment grid (issue 20) into `OUT/drb.csv`, and the
//! acceptance ratios it implies on stdout.
//!
//! Rows: `topology,traffic,mode,offered_load,accepted,avg_latency_cycles,max_link_load`
//! (accepted in phits/node/cycle, max_link_load the busiest switch-to-switch link's phits per
//! cycle over the measurement window). Every mode of one topology runs with the same buffers
//! and the same number of data VCs (what DRB's paths need for deadlock freedom). `--hot-only`:
//! just the hot-spot rows, into `OUT/drb-hot.csv`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::Context;
use clap::{Parser, ValueEnum};
use fabricflow_agent::AgentConfig;
use fabricflow_controller::plan::paths::Multipath;
use fabricflow_controller::traffic::Pattern;
use fabricflow_controller::TopologySpec;
use fabricflow_sim::config::{Routing, SimConfig, Traffic};
use fabricflow_sim::run::{max_link_load, run_one};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Scale {
    /// The seed's scale: 8×8 torus (64 nodes), 32-node mesh, plus a Dragonfly and a fat-tree.
    Seed,
    /// A small, fast grid of the same directions (4×4 torus, 4×4 mesh).
    Small,
}

/// Runs the DRB grid and writes OUT/drb.csv.
#[derive(Debug, Parser)]
struct Cli {
    #[arg(long)]
    out: PathBuf,
    #[arg(long, value_enum, default_value = "seed")]
    scale: Scale,
    /// Warm-up and measurement cycles per run.
    #[arg(long, default_value_t = 20_000)]
    warmup: u64,
    #[arg(long, default_value_t = 20_000)]
    measure: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// DRB on tori and meshes: how many links longer than minimal an alternative path may be
    /// (0: minimal-length disjoint paths only; measured best, sim/RESULTS.md §g).
    #[arg(long, default_value_t = 0)]
    stretch: u16,
    /// DRB on the Dragonfly and the fat-tree: the same (a Dragonfly has one minimal route per
    /// pair, so its alternatives are all longer).
    #[arg(long, default_value_t = Multipath::default().max_stretch)]
    stretch_other: u16,
    /// DRB: alternative paths per pair (0..=4).
    #[arg(long, default_value_t = Multipath::default().alternatives)]
    alternatives: u8,
    /// Only the torus and the mesh.
    #[arg(long)]
    cubes_only: bool,
    /// Only the hot-spot rows (`hotspot` and `linkhot` on the torus and the mesh), into
    /// OUT/drb-hot.csv instead of OUT/drb.csv.
    #[arg(long)]
    hot_only: bool,
    /// The link hot spots on the torus and the mesh (`linkhot[:C]`, comma-separated). A cube
    /// whose rows are shorter than 2C switches skips that pattern (said on stderr).
    /// `linkhot:3` on the 8×8 torus at load 0.3 is the seed's shape: 5 hot links in a row
    /// carrying 1, 2, 3, 2, 1 hot flows, the hottest at 3.3× the 30 % background.
    #[arg(long, value_delimiter = ',', default_value = "linkhot")]
    linkhot: Vec<Pattern>,
    /// Offered loads of the hot-spot rows (comma-separated). IBA CC delivers about half of 0.3,
    /// so peak link loads compare at equal delivered load only at a load it does not throttle.
    #[arg(long, value_delimiter = ',', default_value = "0.3")]
    hot_loads: Vec<f64>,
    /// One-off agent keys for every switch core (DRB's and QCN-SW's), as `fabricflow-sim
    /// --agent-set`, e.g. `--agent-set policy.drb.notifications_per_path=5` (repeatable).
    #[arg(long = "agent-set")]
    agent_set: Vec<String>,
}

#[derive(Debug, Clone)]
struct Job {
    topology: &'static str,
    traffic: String,
    mode: Routing,
    load: f64,
}

fn jobs(
    scale: Scale,
    cubes_only: bool,
    hot_only: bool,
    linkhot: &[Pattern],
    hot_loads: &[f64],
) -> Vec<Job> {
    let shuffle_loads = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0];
    let mut out = Vec::new();
    let cubes: &[&str] = match scale {
        Scale::Seed => &["torus:k=8,n=2,p=1", "mesh:k=4,n=2,p=2"],
        Scale::Small => &["torus:k=4,n=2,p=1", "mesh:k=4,n=2,p=1"],
    };
    let cube_modes = [Routing::Minimal, Routing::IbaCc, Routing::Drb];
    for &topology in cubes {
        let fits = |p: &Pattern| match (p, topology.parse::<TopologySpec>()) {
            (
                Pattern::LinkHot { sources },
                Ok(TopologySpec::Torus { k, .. } | TopologySpec::Mesh { k, .. }),
            ) => sources.saturating_mul(2) <= k,
            _ => true,
        };
        let mut hot = vec!["hotspot".to_owned()];
        for p in linkhot {
            if fits(p) {
                hot.push(p.to_string());
            } else {
                eprintln!("{topology}: rows too short for {p}, skipped");
            }
        }
        for mode in cube_modes {
            if !hot_only {
                for load in shuffle_loads {
                    out.push(Job {
                        topology,
                        traffic: "shuffle".to_owned(),
                        mode,
                        load,
                    });
                }
            }
            // An endpoint hot spot (4 hosts to one) and a link hot spot (2 switches' hosts
            // whose minimal routes share one link, distinct destinations), both over
            // background traffic at the same offered load.
            for traffic in &hot {
                for &load in hot_loads {
                    out.push(Job {
                        topology,
                        traffic: traffic.clone(),
                        mode,
                        load,
                    });
                }
            }
        }
    }
    if scale == Scale::Seed && !cubes_only && !hot_only {
        let qcn = Routing::QcnSw(fabricflow_agent::policy::Variant::Combined);
        for (topology, traffics) in [
            ("dragonfly:p=2,a=4,h=2", ["uniform", "adv+1", "shuffle"]),
            ("fattree:k=4,n=3", ["uniform", "hotspot", "shuffle"]),
        ] {
            for traffic in traffics {
                for mode in [Routing::Minimal, qcn, Routing::Drb] {
                    for load in [0.2, 0.4, 0.6, 0.8] {
                        out.push(Job {
                            topology,
                            traffic: traffic.to_owned(),
                            mode,
                            load,
                        });
                    }
                }
            }
        }
    }
    out
}

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fabricflow-sim-drb: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let agent = AgentConfig::from_toml_str_with("", &cli.agent_set).context("--agent-set")?;
    std::fs::create_dir_all(&cli.out).with_context(|| format!("{}", cli.out.display()))?;
    let all = jobs(
        cli.scale,
        cli.cubes_only,
        cli.hot_only,
        &cli.linkhot,
        &cli.hot_loads,
    );
    let next = Mutex::new(0usize);
    let rows: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());
    let failed: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..cli.threads.max(1) {
            scope.spawn(|| loop {
                let i = {
                    let mut n = next.lock().unwrap_or_else(|e| e.into_inner());
                    let i = *n;
                    *n += 1;
                    i
                };
                let Some(job) = all.get(i) else { break };
                match run(&cli, &agent, job) {
                    Ok(row) => {
                        eprintln!("{row}");
                        rows.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((i, row));
                    }
                    Err(e) => {
                        *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                        break;
                    }
                }
            });
        }
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    let mut rows = rows.into_inner().unwrap_or_else(|e| e.into_inner());
    rows.sort_by_key(|(i, _)| *i);
    let mut csv = String::from(
        "topology,traffic,mode,offered_load,accepted,avg_latency_cycles,max_link_load\n",
    );
    for (_, r) in &rows {
        csv.push_str(r);
        csv.push('\n');
    }
    let path = cli.out.join(if cli.hot_only {
        "drb-hot.csv"
    } else {
        "drb.csv"
    });
    std::fs::write(&path, csv).with_context(|| format!("{}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

fn run(cli: &Cli, agent: &AgentConfig, job: &Job) -> anyhow::Result<String> {
    let topology: TopologySpec = job.topology.parse()?;
    let pattern: Pattern = job.traffic.parse()?;
    let cfg = SimConfig {
        topology,
        routing: job.mode,
        traffic: Traffic::steady(pattern),
        load: job.load,
        warmup_cycles: cli.warmup,
        measure_cycles: cli.measure,
        seed: cli.seed,
        // DRB's alternative paths need up to 8 classes on these fabrics (checked by the
        // simulator); every mode gets the same.
        data_vcs: 8,
        port_stats_interval: Some(cli.measure),
        multipath: Multipath {
            alternatives: cli.alternatives,
            max_stretch: if job.topology.starts_with("torus") || job.topology.starts_with("mesh") {
                cli.stretch
            } else {
                cli.stretch_other
            },
            ..Multipath::default()
        },
        cp: agent.cp.clone(),
        policy: agent.policy.clone(),
        weights: agent.weights.clone(),
        ..SimConfig::default()
    };
    let r = run_one(&cfg).map_err(|e| anyhow::anyhow!("{} {}: {e}", job.topology, job.mode))?;
    Ok(format!(
        "\"{}\",{},{},{},{:.4},{:.1},{:.4}",
        job.topology,
        job.traffic,
        job.mode,
        job.load,
        r.accepted,
        r.avg_latency_cycles,
        max_link_load(&r).unwrap_or(f64::NAN)
    ))
}
