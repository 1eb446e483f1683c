//! `fabricflow-agent`: the switch-side QCN-SW agent.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use fabricflow_agent::AgentConfig;

/// Steers SELECT-group weights from QCN congestion notifications.
#[derive(Debug, Parser)]
#[command(name = "fabricflow-agent", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serves the configured switches: sessions, emulated CP, HTTP metrics/API.
    Run {
        /// The configuration file (see deploy/agent.example.toml); absent = all defaults.
        #[arg(long)]
        config: Option<PathBuf>,
        /// A switch to serve, `NAME=unix:PATH` / `NAME=tcp:HOST:PORT`, or `NAME` alone for
        /// `unix:/var/run/openvswitch/NAME.mgmt`; repeatable, added to the file's `[[switch]]`.
        #[arg(long = "switch", value_name = "NAME[=TARGET]")]
        switches: Vec<String>,
        /// Overrides `runtime.http_listen` ("" disables the HTTP server).
        #[arg(long)]
        http_listen: Option<String>,
    },
    /// Parses and validates a TOML configuration, then prints it with every default filled in.
    CheckConfig {
        /// The configuration file (see deploy/agent.example.toml).
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::CheckConfig { file }) => match AgentConfig::from_file(&file) {
            Ok(cfg) => {
                println!("{}: valid", file.display());
                match toml::to_string_pretty(&cfg) {
                    Ok(text) => print!("{text}"),
                    Err(e) => eprintln!("(cannot print the effective configuration: {e})"),
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{}: {e}", file.display());
                ExitCode::FAILURE
            }
        },
        Some(Command::Run {
            config,
            switches,
            http_listen,
        }) => run(config, switches, http_listen),
        None => {
            println!("fabricflow-agent: `run --config FILE` or `check-config FILE`; see --help");
            ExitCode::SUCCESS
        }
    }
}

fn run(config: Option<PathBuf>, switches: Vec<String>, http_listen: Option<String>) -> ExitCode {
    let mut cfg = match config.as_deref().map(AgentConfig::from_file) {
        Some(Ok(c)) => c,
        Some(Err(e)) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
        None => AgentConfig::default(),
    };
    for s in switches {
        let (name, target) = match s.split_once('=') {
            Some((n, t)) => (n.to_owned(), Some(t.to_owned())),
            None => (s.clone(), None),
        };
        cfg.switch.push(fabricflow_agent::config::SwitchConfig {
            name,
            target,
            ports: Vec::new(),
        });
    }
    if let Some(h) = http_listen {
        cfg.runtime.http_listen = h;
    }
    if let Err(e) = cfg.validate() {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match cfg.runtime.log_format {
        fabricflow_agent::config::LogFormat::Json => builder.json().init(),
        fabricflow_agent::config::LogFormat::Text => builder.init(),
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(fabricflow_agent::runtime::run(cfg)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fabricflow-agent: {e:#}");
            ExitCode::FAILURE
        }
    }
}
