//! `fabricflow-report PORT_STATS.csv --out DIR`: the congestion study's tables and box plots.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use fabricflow_report::plot::{box_plot, Figure};
use fabricflow_report::{input, output, Analyzer, Options};

/// Forced idle time fraction (FITF) per port class, the most stalled ports and the congestion
/// roots (saturated ports), from a port-stats.csv (`fabricflow-sim --port-stats-interval`, or a
/// live fabric's `fabricflow-agent port-stats`: backlog time, not XmitWait): DIR/summary.csv,
/// DIR/top-ports.csv, DIR/roots.csv, DIR/report.md, DIR/fitf-max.png, DIR/fitf-mean.png.
#[derive(Debug, Parser)]
#[command(name = "fabricflow-report", version)]
struct Cli {
    /// port-stats.csv: cycle,switch,port,role,direction,xmit_wait_cycles,xmit_data_phits
    input: PathBuf,
    /// Output directory (created).
    #[arg(long)]
    out: PathBuf,
    /// Ports in the ranking.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Rank only transmitters of this direction (tx: switch ports; rx: hosts into them).
    #[arg(long)]
    direction: Option<String>,
    /// Intervals per round (the study: 100 readings, 99 intervals).
    #[arg(long, default_value_t = 99)]
    round_intervals: u32,
    /// Utilisation from which a transmitter is a congestion root (DIR/roots.csv).
    #[arg(long, default_value_t = 0.95)]
    saturation: f64,
    /// Skip the PNG box plots.
    #[arg(long)]
    no_plot: bool,
}

fn main() -> ExitCode {
    match run(&Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fabricflow-report: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    let file = File::open(&cli.input).with_context(|| format!("{}", cli.input.display()))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut analyzer = Analyzer::new(Options {
        round_intervals: cli.round_intervals,
        saturation: cli.saturation,
    })?;
    input::read_into(BufReader::new(bar.wrap_read(file)), &mut analyzer)
        .with_context(|| format!("{}", cli.input.display()))?;
    bar.finish_and_clear();
    let report = analyzer.finish(cli.top, cli.direction.as_deref());
    std::fs::create_dir_all(&cli.out).with_context(|| format!("{}", cli.out.display()))?;
    let write = |name: &str, text: String| {
        let p = cli.out.join(name);
        std::fs::write(&p, text).with_context(|| format!("{}", p.display()))
    };
    write("summary.csv", output::summary_csv(&report))?;
    write("top-ports.csv", output::top_ports_csv(&report))?;
    write("roots.csv", output::roots_csv(&report))?;
    let md = output::markdown(&report);
    write("report.md", md.clone())?;
    if !cli.no_plot {
        box_plot(&report, Figure::Max, &cli.out.join("fitf-max.png"))?;
        box_plot(&report, Figure::Mean, &cli.out.join("fitf-mean.png"))?;
    }
    print!("{md}");
    Ok(())
}
