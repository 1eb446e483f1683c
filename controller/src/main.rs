//! `fabricflow-controller`: the fabric's proactive SDN controller.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use fabricflow_controller::config::{Config, LogFormat};
use fabricflow_controller::desired::fixture::LineFixture;
use fabricflow_controller::desired::PlanSource;
use fabricflow_controller::service::Controller;

/// Plans and installs fabricflow's conditional routing rules on OpenFlow 1.3 switches.
#[derive(Debug, Parser)]
#[command(name = "fabricflow-controller", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the controller service (OpenFlow, HTTP API, store).
    Run {
        /// Configuration file (.toml, .yaml or .yml).
        #[arg(long)]
        config: PathBuf,
    },
}

/// The plan source for a fabric spec. The planner (dragonfly, fat-tree, file) is merged from
/// branch `controller-core`; until then only the test fixture `fixture:line:N[:DPID_BASE_HEX]`
/// is available.
fn plan_source(spec: &str, cookie: u64) -> Result<Arc<dyn PlanSource>, String> {
    if let Some(rest) = spec.strip_prefix("fixture:line:") {
        let mut parts = rest.split(':');
        let n: u32 = parts
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("fabric `{spec}`: expected fixture:line:N[:DPID_BASE_HEX]"))?;
        let base = match parts.next() {
            Some(h) => u64::from_str_radix(h.trim_start_matches("0x"), 16)
                .map_err(|e| format!("fabric `{spec}`: dpid base: {e}"))?,
            None => 0x100,
        };
        return Ok(Arc::new(LineFixture::new(base, n, cookie)));
    }
    Err(format!(
        "fabric `{spec}`: no planner for this spec in this build (only `fixture:line:N` until the planner is merged)"
    ))
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let b = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Text => b.init(),
        LogFormat::Json => b.json().init(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { config } => {
            let cfg = match Config::load(&config) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("fabricflow-controller: {e}");
                    return ExitCode::from(2);
                }
            };
            init_logging(cfg.log_format);
            let planner = match plan_source(&cfg.fabric, cfg.cookie) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("fabricflow-controller: {e}");
                    return ExitCode::from(2);
                }
            };
            let rt = match tokio::runtime::Runtime::new() {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("fabricflow-controller: cannot start the runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            rt.block_on(async move {
                match Controller::start(cfg, planner).await {
                    Ok(c) => {
                        c.wait().await;
                        ExitCode::SUCCESS
                    }
                    Err(e) => {
                        eprintln!("fabricflow-controller: {e}");
                        ExitCode::FAILURE
                    }
                }
            })
        }
    }
}
