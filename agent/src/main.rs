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
    /// Samples the egress qdiscs of a list of switch ports into port-stats.csv (the simulator's
    /// columns, fabricflow-report's input) until SIGINT/SIGTERM or --duration-s: `cycle` = ns
    /// since the start, `xmit_wait_cycles` = ns with a backlog (backlog time, not InfiniBand
    /// XmitWait), `xmit_data_phits` = ns of line time of the octets sent (octets without a
    /// rate). Prints a JSON summary at the end.
    PortStats {
        /// JSON list of ports: `[{"switch": "s0x0", "port": 1, "role": "host", "interface":
        /// "s0x0-eth1", "rate_mbps": 5.0}]`; roles are the controller's `PortRole` names.
        #[arg(long)]
        ports: PathBuf,
        /// The CSV to write.
        #[arg(long)]
        out: PathBuf,
        /// Read interval (a row per port per read), ms.
        #[arg(long, default_value_t = 100)]
        interval_ms: u64,
        /// Backlog poll period (one netlink dump of every qdisc), µs: the backlog time's
        /// resolution.
        #[arg(long, default_value_t = 2_000)]
        poll_us: u64,
        /// Stop after this many seconds.
        #[arg(long)]
        duration_s: Option<f64>,
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
        Some(Command::PortStats {
            ports,
            out,
            interval_ms,
            poll_us,
            duration_s,
        }) => match port_stats(&ports, &out, interval_ms, poll_us, duration_s) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("fabricflow-agent port-stats: {e:#}");
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

fn port_stats(
    ports: &std::path::Path,
    out: &std::path::Path,
    interval_ms: u64,
    poll_us: u64,
    duration_s: Option<f64>,
) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;
    let text = std::fs::read_to_string(ports).with_context(|| format!("{}", ports.display()))?;
    let list: Vec<fabricflow_agent::runtime::port_stats::WatchedPort> =
        serde_json::from_str(&text).with_context(|| format!("{}", ports.display()))?;
    anyhow::ensure!(poll_us > 0, "--poll-us must be > 0");
    anyhow::ensure!(
        interval_ms.saturating_mul(1000) >= poll_us,
        "--interval-ms must be at least --poll-us"
    );
    let file = std::fs::File::create(out).with_context(|| format!("{}", out.display()))?;
    let stop = Arc::new(AtomicBool::new(false));
    let theirs = stop.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let summary = rt.block_on(async move {
        let mut job = tokio::task::spawn_blocking(move || {
            let mut w = std::io::BufWriter::new(file);
            fabricflow_agent::runtime::port_stats::write_csv(
                list,
                &mut w,
                Duration::from_micros(poll_us),
                Duration::from_millis(interval_ms),
                &theirs,
            )
        });
        let until = async {
            match duration_s {
                Some(s) if s.is_finite() && s >= 0.0 => {
                    tokio::time::sleep(Duration::from_secs_f64(s)).await;
                }
                _ => std::future::pending::<()>().await,
            }
        };
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = &mut job => return r?,
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
            () = until => {}
        }
        stop.store(true, Ordering::Relaxed);
        job.await?
    })?;
    println!("{}", serde_json::to_string(&summary)?);
    Ok(())
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
