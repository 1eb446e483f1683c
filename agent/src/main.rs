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
    /// A host's InfiniBand CC reaction point (the throttled baseline): receives the CNMs about
    /// the host's frames on `--iface` (EtherType 0x22E7), raises IRD every
    /// `--notifications-per-step` of them, lowers it per quiet period without one, and sets the
    /// interface's HTB class to B/(1+IRD) (B restored on exit). Runs until SIGINT/SIGTERM;
    /// prints its final state as JSON.
    Throttle {
        /// The host's interface (on Mininet hX-eth0, inside the host).
        #[arg(long)]
        iface: String,
        /// B, the host link's rate in Mb/s (the harness's shaping).
        #[arg(long)]
        line_mbit: f64,
        /// CNMs per IRD step (the seed's 10).
        #[arg(long, default_value_t = fabricflow_agent::throttle::IbaCcConfig::default().notifications_per_step)]
        notifications_per_step: u32,
        /// Largest IRD.
        #[arg(long, default_value_t = fabricflow_agent::throttle::IbaCcConfig::default().max_ird)]
        max_ird: u32,
        /// Quiet timer, octets of line time at B (500000: the seed's 100 µs at 40 Gb/s).
        #[arg(long, default_value_t = fabricflow_agent::throttle::IbaCcConfig::default().quiet_line_bytes)]
        quiet_line_bytes: u64,
        /// The HTB class to rate, MAJOR:MINOR in hex as tc writes it (Mininet's TCLink: 5:1).
        #[arg(long, default_value = "5:1")]
        class: String,
        /// Its parent (Mininet's TCLink: 5:0).
        #[arg(long, default_value = "5:0")]
        parent: String,
        /// The class's bucket, octets (Mininet's `burst 15k`).
        #[arg(long, default_value_t = 15 * 1024)]
        burst_bytes: u32,
        /// Write the state here as JSON (on every rate change, at most every 200 ms).
        #[arg(long)]
        status: Option<PathBuf>,
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
        Some(Command::Throttle {
            iface,
            line_mbit,
            notifications_per_step,
            max_ird,
            quiet_line_bytes,
            class,
            parent,
            burst_bytes,
            status,
        }) => {
            let args = (|| -> anyhow::Result<_> {
                anyhow::ensure!(
                    line_mbit.is_finite() && line_mbit > 0.0 && line_mbit <= 1e7,
                    "--line-mbit must be in (0, 1e7]"
                );
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let line_bps = (line_mbit * 1e6).round() as u64;
                Ok(fabricflow_agent::runtime::throttle::ThrottleArgs {
                    iface,
                    line_bps,
                    cc: fabricflow_agent::throttle::IbaCcConfig {
                        notifications_per_step,
                        max_ird,
                        quiet_line_bytes,
                    },
                    class: tc_handle(&class)?,
                    parent: tc_handle(&parent)?,
                    burst_bytes,
                    status,
                })
            })();
            match args.and_then(|a| throttle(&a)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("fabricflow-agent throttle: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
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

/// `MAJOR:MINOR` in hex, as tc writes class handles.
fn tc_handle(s: &str) -> anyhow::Result<(u16, u16)> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| anyhow::anyhow!("class handle {s:?}: expected MAJOR:MINOR"))?;
    let part = |x: &str| {
        u16::from_str_radix(if x.is_empty() { "0" } else { x }, 16)
            .map_err(|e| anyhow::anyhow!("class handle {s:?}: {e}"))
    };
    Ok((part(a)?, part(b)?))
}

fn throttle(args: &fabricflow_agent::runtime::throttle::ThrottleArgs) -> anyhow::Result<()> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).init();
    let stop = Arc::new(AtomicBool::new(false));
    let theirs = stop.clone();
    let job_args = args.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let st = rt.block_on(async move {
        let mut job = tokio::task::spawn_blocking(move || {
            fabricflow_agent::runtime::throttle::run(&job_args, &theirs)
        });
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = &mut job => return r?,
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        stop.store(true, Ordering::Relaxed);
        job.await?
    })?;
    println!("{}", serde_json::to_string(&st)?);
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
