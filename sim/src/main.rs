//! `fabricflow-sim`: simulate one load or a sweep of loads and write CSVs and plots.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Parser;
use fabricflow_agent::AgentConfig;
use fabricflow_controller::TopologySpec;
use fabricflow_sim::config::{CpQueue, Routing, SimConfig, Traffic};
use fabricflow_sim::run::{loads, optimum, reaction_cycles, sweep, write_csvs};

/// Packet-level simulation of a Dragonfly or fat-tree fabric with minimal, Valiant, UGAL-L,
/// PAUSE or QCN-SW routing.
#[derive(Debug, Parser)]
#[command(name = "fabricflow-sim", version)]
struct Cli {
    /// dragonfly:p=P,a=A,h=H | fattree:k=K,n=N[,w=W] | file:PATH
    #[arg(long, default_value = "dragonfly:p=4,a=8,h=4")]
    topology: TopologySpec,
    /// minimal | valiant | ugal-l | pause | qcnsw-base | qcnsw-sp | qcnsw-fc | qcnsw-combined | drb | iba-cc
    #[arg(long, default_value = "minimal")]
    routing: Routing,
    /// uniform | adv+K | hotspot[:C] | hotspots:N[:P] | linkhot[:C] | shuffle | A->B@CYCLE (e.g. uniform->adv+1@20000)
    #[arg(long, default_value = "uniform")]
    traffic: Traffic,
    /// One offered load (fraction of injection bandwidth).
    #[arg(long, conflicts_with = "sweep")]
    load: Option<f64>,
    /// Loads FROM:TO:STEP.
    #[arg(long)]
    sweep: Option<String>,
    #[arg(long, default_value_t = 10_000)]
    warmup: u64,
    #[arg(long, default_value_t = 10_000)]
    measure: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads (loads run in parallel); capped at the available cores.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// Do not run the matplotlib script.
    #[arg(long)]
    no_plot: bool,
    /// Read every port's XmitWait and XmitData counters every CYCLES cycles of the measurement
    /// window into OUT/port-stats.csv (one load only). Off: nothing is counted.
    #[arg(long, value_name = "CYCLES")]
    port_stats_interval: Option<u64>,
    /// Also compute the throughput optimum (an LP over the fabric: seconds to minutes at the
    /// seeds' scale) into results.csv's optimum_phits_node_cycle and fraction_of_optimum.
    #[arg(long)]
    optimum: bool,
    /// Throughput-over-time window, cycles.
    #[arg(long, default_value_t = 200)]
    window: u64,
    /// Octets per phit (cycle).
    #[arg(long, default_value_t = 128)]
    phit_bytes: u32,
    #[arg(long, default_value_t = 1024)]
    packet_bytes: u32,
    #[arg(long, default_value_t = 40.0)]
    link_gbps: f64,
    #[arg(long, default_value_t = 200.0)]
    switch_latency_ns: f64,
    #[arg(long, default_value_t = 40.0)]
    local_latency_ns: f64,
    #[arg(long, default_value_t = 400.0)]
    global_latency_ns: f64,
    /// Input buffer per data VC (phits): local, global, host ports.
    #[arg(long, default_value_t = 32)]
    in_local: u32,
    #[arg(long, default_value_t = 256)]
    in_global: u32,
    #[arg(long, default_value_t = 32)]
    in_host: u32,
    /// Output buffer per data VC (phits).
    #[arg(long, default_value_t = 32)]
    out_buffer: u32,
    #[arg(long, default_value_t = 2)]
    speedup: u32,
    #[arg(long, default_value_t = 0.0)]
    ugal_threshold: f64,
    /// QCN-SW: the P (percent) the controller's plan installs and the switches start from
    /// (the controller's `p_minimal_percent`; default its default).
    #[arg(long)]
    p_minimal: Option<f64>,
    /// QCN CP: input | output queues.
    #[arg(long, default_value = "input")]
    cp_queue: CpQueue,
    /// The agent's configuration file (`deploy/agent.example.toml` format) whose `[policy]`,
    /// `[weights]`, `[cp]` and `runtime.byte_counter` the simulated switches run; absent = the
    /// agent's shipped defaults.
    #[arg(long)]
    agent_config: Option<PathBuf>,
    /// One-off agent keys on top of `--agent-config`, e.g. `--agent-set cp.qeq_buffer_fraction=0.25`
    /// (repeatable; VALUE in TOML syntax).
    #[arg(long = "agent-set")]
    agent_set: Vec<String>,
    /// QCN-SW increase step (percentage points).
    #[arg(long)]
    qcn_step: Option<f64>,
    /// QCN-SW Gd.
    #[arg(long)]
    qcn_gd: Option<f64>,
    /// QCN-SW byte limit per increase.
    #[arg(long)]
    qcn_byte_limit: Option<u64>,
    /// QCN-SW floor of P (percent).
    #[arg(long)]
    qcn_pmin: Option<f64>,
    /// Start from the published QCN-SW constants (FOGSim / 802.1Qau: step 1, byte limit
    /// 150 000, no Fb ageing, no source comparison) instead of the agent's defaults; the
    /// other --qcn-* flags still apply on top.
    #[arg(long)]
    published_constants: bool,
    /// `qcnsw-combined`: whether self-generated CNMs go through the comparison (fabricflow's
    /// addition; the agent's default is true, the published rule false).
    #[arg(long)]
    source_comparison: Option<bool>,
}

fn config(cli: &Cli) -> anyhow::Result<SimConfig> {
    let text = match &cli.agent_config {
        Some(p) => {
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?
        }
        None => String::new(),
    };
    let agent =
        AgentConfig::from_toml_str_with(&text, &cli.agent_set).context("agent configuration")?;
    let mut c = SimConfig {
        topology: cli.topology.clone(),
        routing: cli.routing,
        traffic: cli.traffic,
        warmup_cycles: cli.warmup,
        measure_cycles: cli.measure,
        seed: cli.seed,
        phit_bytes: cli.phit_bytes,
        packet_bytes: cli.packet_bytes,
        link_gbps: cli.link_gbps,
        switch_latency_ns: cli.switch_latency_ns,
        local_latency_ns: cli.local_latency_ns,
        global_latency_ns: cli.global_latency_ns,
        in_local_phits: cli.in_local,
        in_global_phits: cli.in_global,
        in_host_phits: cli.in_host,
        out_phits: cli.out_buffer,
        speedup: cli.speedup,
        ugal_threshold: cli.ugal_threshold,
        cp_queue: cli.cp_queue,
        window_cycles: cli.window,
        cp: agent.cp,
        policy: agent.policy,
        weights: agent.weights,
        byte_counter: agent.runtime.byte_counter,
        port_stats_interval: cli.port_stats_interval,
        ..SimConfig::default()
    };
    if cli.published_constants {
        c.policy = fabricflow_agent::policy::PolicyConfig::published();
    }
    if let Some(x) = cli.p_minimal {
        c.p_minimal_percent = x;
    }
    if let Some(x) = cli.qcn_step {
        c.policy.increase_step_percent = x;
    }
    if let Some(x) = cli.qcn_gd {
        c.policy.gd = x;
    }
    if let Some(x) = cli.qcn_byte_limit {
        c.policy.byte_limit_bytes = x;
    }
    if let Some(x) = cli.qcn_pmin {
        c.policy.p_min_percent = x;
    }
    if let Some(x) = cli.source_comparison {
        c.policy.source_comparison = x;
    }
    Ok(c)
}

fn plot(dir: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("plots/plot.py");
    let python = Path::new("/usr/bin/python3");
    if !python.exists() || !script.exists() {
        eprintln!("plots skipped: no /usr/bin/python3 or {}", script.display());
        return;
    }
    match std::process::Command::new(python)
        .arg(&script)
        .arg(dir)
        .status()
    {
        Ok(s) if s.success() => {}
        Ok(s) => eprintln!("plot script failed: {s}"),
        Err(e) => eprintln!("plot script not run: {e}"),
    }
}

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fabricflow-sim: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let cfg = config(&cli)?;
    let ls = match (&cli.load, &cli.sweep) {
        (Some(l), None) => vec![*l],
        (None, Some(s)) => {
            let parts: Vec<f64> = s
                .split(':')
                .map(str::parse)
                .collect::<Result<_, _>>()
                .with_context(|| format!("--sweep {s:?}: expected FROM:TO:STEP"))?;
            let [a, b, st] = parts.as_slice() else {
                bail!("--sweep {s:?}: expected FROM:TO:STEP");
            };
            loads(*a, *b, *st)
        }
        _ => bail!("give --load L or --sweep FROM:TO:STEP"),
    };
    if cfg.port_stats_interval.is_some() && ls.len() != 1 {
        bail!("--port-stats-interval needs one load (--load L): port-stats.csv has no load column");
    }
    cfg.validate()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cli.threads.clamp(1, cores);
    let bar = indicatif::ProgressBar::new(ls.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} loads")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut results = sweep(&cfg, &ls, threads, &|| bar.inc(1))?;
    bar.finish_and_clear();
    if cli.optimum {
        for r in &mut results {
            r.optimum = optimum(&cfg, r.offered).context("--optimum")?;
        }
    }
    write_csvs(&cli.out, &cfg, &results)
        .with_context(|| format!("writing {}", cli.out.display()))?;
    println!(
        "{} {} {}  (cycle = {:.2} ns, packet = {} phits)",
        cfg.topology,
        cfg.routing,
        cfg.traffic,
        cfg.ns_per_cycle(),
        cfg.packet_phits()
    );
    println!("load   accepted  avg_lat  p99_lat  nonmin  cycles/s");
    for r in &results {
        print!(
            "{:.3}  {:.4}    {:7.1}  {:7.1}  {:.3}  {:.0}",
            r.offered,
            r.accepted,
            r.avg_latency_cycles,
            r.p99_latency_cycles,
            r.nonminimal_fraction,
            r.cycles as f64 / r.wall_secs.max(1e-9)
        );
        if let Some((_, t)) = cfg.traffic.then {
            match reaction_cycles(r, &cfg, t) {
                Some(c) => print!(
                    "  reaction {c} cycles ({:.0} ns)",
                    c as f64 * cfg.ns_per_cycle()
                ),
                None => print!("  reaction: never"),
            }
        }
        println!();
    }
    if !cli.no_plot {
        plot(&cli.out);
    }
    Ok(())
}
