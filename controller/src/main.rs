//! `fabricflow-controller`: the fabric's proactive SDN controller.
//!
//! `plan` prints the rules the controller would install:
//! - `--format ofctl` (default): per switch, a groups section and a flows section in
//!   `ovs-ofctl` syntax, separated by `#` comments. With `--switch` and `--groups-out FILE
//!   --flows-out FILE` the two sections go to two files that load unchanged with
//!   `ovs-ofctl -O OpenFlow13 add-groups BR FILE` and `add-flows BR FILE` (groups first).
//! - `--format json`: the plan IR as JSON.
//! - `--format stats`: flows and groups per switch.
//!
//! `topology` prints the fabric as JSON and `traffic` the flows of a traffic pattern (both for the
//! Mininet harness). `bound` prints the throughput optimum of a pattern on a fabric (the ceiling
//! of each routing mode, `fabricflow_controller::bound`) as a table or JSON. `run --config FILE` runs the controller service: OpenFlow to every switch,
//! HTTP API and metrics, memory or etcd store. `ctl …` drives a running controller through its
//! HTTP API: drain and undrain links and switches, freeze and unfreeze a switch's weights,
//! resync, list links.
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand, ValueEnum};
use fabricflow_controller::bound::{self, DemandModel, LinkRates, Routing};
use fabricflow_controller::config::{Config, LogFormat};
use fabricflow_controller::desired::fixture::LineFixture;
use fabricflow_controller::desired::PlanSource;
use fabricflow_controller::plan::{CnmToAgent, Lossless, SelectLayout, SwitchPlan};
use fabricflow_controller::planner::FabricPlanner;
use fabricflow_controller::service::Controller;
use fabricflow_controller::traffic::Pattern;
use fabricflow_controller::{ctl, ofctl, Addressing, Fabric, Plan, PlanOptions, TopologySpec};

/// jemalloc gives freed pages back to the kernel (decay set in `.cargo/config.toml`); glibc's
/// per-thread arenas keep the peak of every connection storm, and a controller that survived a
/// few storms held hundreds of megabytes it no longer used.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Plans and installs fabricflow's conditional routing rules on OpenFlow 1.3 switches.
#[derive(Debug, Parser)]
#[command(name = "fabricflow-controller", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Ofctl,
    Json,
    Stats,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the rule plan of a fabric (or of one switch).
    Plan(PlanArgs),
    /// Print the fabric (switches, links, hosts with addresses) as JSON, for tools such as the
    /// Mininet harness that must build exactly the controller's wiring.
    Topology {
        /// dragonfly:p=P,a=A,h=H | fattree:k=K,n=N[,w=W] | file:PATH
        #[arg(long)]
        topology: TopologySpec,
        /// /8 network of the hosts' IPv4 addresses.
        #[arg(long, default_value = "10.0.0.0")]
        ipv4_base: Ipv4Addr,
    },
    /// Print the flows of a traffic pattern as JSON (one per sending host, by host name): the
    /// Mininet harness runs exactly these, and the same seed always gives the same flows.
    Traffic {
        /// dragonfly:p=P,a=A,h=H | fattree:k=K,n=N[,w=W] | file:PATH
        #[arg(long)]
        topology: TopologySpec,
        /// uniform | adv+K | hotspot[:C] | hotspots:N[:P] | linkhot[:C] | shuffle
        /// (controller/src/traffic.rs defines each).
        #[arg(long)]
        traffic: Pattern,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Print the throughput optimum of a traffic pattern on a fabric: the max-concurrent flow λ
    /// and the maximum aggregate throughput, as multi-commodity flow LPs over the fabric's links
    /// at the harness's rates, for unrestricted routing and each routing mode's own paths.
    Bound(BoundArgs),
    /// Route a communication phase on a fat-tree: read its flows (JSON `{"flows": [{"src":
    /// HOST, "dst": HOST, "weight": W?}]}`, host names as `topology` prints them, weight 1 if
    /// absent; `traffic`'s output is such a file), give each a path (`flowroute`), and print
    /// the per-flow rules (ovs-ofctl lines per switch), each flow's path and SAA rate (fraction
    /// of the line rate) and W as JSON.
    Phase(PhaseArgs),
    /// Run the controller service (OpenFlow, HTTP API, store).
    Run {
        /// Configuration file (.toml, .yaml or .yml).
        #[arg(long)]
        config: PathBuf,
    },
    /// Operator actions on a running controller, through its HTTP API.
    Ctl(CtlArgs),
    /// dFtree's detection loop on live port telemetry: follows the `port-stats.csv` a
    /// `fabricflow-agent port-stats` sampler writes (one reading = one sweep), runs the
    /// controller's detection on the edge ports' backlog time and prints each sweep and each
    /// repath/unpath as a JSON line, with the slow-lane flow (ovs-ofctl syntax) to add or the
    /// strict match to delete.
    DftreeWatch(DftreeWatchArgs),
}

/// Arguments of `dftree-watch`.
#[derive(Debug, Args)]
struct DftreeWatchArgs {
    /// dragonfly:p=P,a=A,h=H | fattree:k=K,n=N | leafspine:l=L,s=S,p=P | file:PATH
    #[arg(long)]
    topology: TopologySpec,
    /// The sampler's CSV (followed as it grows).
    #[arg(long)]
    port_stats: PathBuf,
    /// The slow lane's IPv4 DSCP (8 = CS1).
    #[arg(long, default_value_t = 8)]
    dscp: u8,
    /// Cookie of the slow-lane flows (not the plan's: the controller leaves them alone).
    #[arg(long, default_value = "0xdf7ee")]
    cookie: String,
    /// Stall fraction of a sweep that flags a hot spot.
    #[arg(long, default_value_t = fabricflow_controller::dftree::DftreeConfig::default().hot_congestion)]
    hot_congestion: f64,
    /// Below this for `clear_sweeps` sweeps, a hot spot clears.
    #[arg(long, default_value_t = fabricflow_controller::dftree::DftreeConfig::default().clear_congestion)]
    clear_congestion: f64,
    #[arg(long, default_value_t = fabricflow_controller::dftree::DftreeConfig::default().clear_sweeps)]
    clear_sweeps: u32,
    /// A hot spot's port must also drop this many frames per second (lossy links: a single
    /// TCP flow fills its receiver's queue too, but drops little).
    #[arg(long, default_value_t = 100.0)]
    hot_drops_per_s: f64,
    /// Stop after this many seconds.
    #[arg(long)]
    duration_s: Option<f64>,
    /// Read the file to its end and stop (its last reading counts) instead of following it.
    #[arg(long)]
    no_follow: bool,
}

/// Arguments of `phase`.
#[derive(Debug, Args)]
struct PhaseArgs {
    /// fattree:k=K,n=N[,w=W]
    #[arg(long)]
    topology: TopologySpec,
    /// The flows (JSON); `-` reads standard input.
    #[arg(long)]
    flows: PathBuf,
    /// dmodk | greedy | balanced
    #[arg(long, default_value = "balanced")]
    algorithm: fabricflow_controller::flowroute::Algorithm,
    /// Per-flow rules a switch may hold.
    #[arg(long, default_value_t = 1024)]
    max_per_switch: usize,
    /// Seconds without a packet before a per-flow rule expires.
    #[arg(long, default_value_t = 10)]
    idle_timeout: u16,
    /// Seconds before a per-flow rule expires in any case.
    #[arg(long, default_value_t = 300)]
    hard_timeout: u16,
}

/// Arguments of `ctl`. The token is `--token`, `--token-file`, `$FABRICFLOW_API_TOKEN` or the
/// controller config's, first found.
#[derive(Debug, Args)]
struct CtlArgs {
    /// The controller's API, http://HOST:PORT (default: `http_listen` of --config, else
    /// 127.0.0.1:9653).
    #[arg(long)]
    url: Option<String>,
    /// The controller's config file: its API address and token.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Bearer token (visible to `ps`: prefer --token-file or the environment).
    #[arg(long, conflicts_with = "token_file")]
    token: Option<String>,
    /// File holding the bearer token.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Print the API's JSON answer.
    #[arg(long)]
    json: bool,
    #[command(subcommand)]
    action: CtlAction,
}

#[derive(Debug, Subcommand)]
enum CtlAction {
    /// Every fabric link with its health (up, down, lldp_missing, miswired, drained).
    Links,
    /// Drained links and switches, frozen switches.
    Status,
    /// Take a link out of service before working on it: the fabric is re-planned around it as
    /// for a failure, hitlessly. LINK: one end as SWITCH:PORT (name or hex dpid), or an id from
    /// `links`.
    DrainLink { link: String },
    /// Put a drained link back into service (if healthy).
    UndrainLink { link: String },
    /// Drain every fabric link of a switch (its own hosts lose the fabric).
    DrainSwitch { switch: String },
    /// Put a drained switch's links back into service (those drained one by one stay so).
    UndrainSwitch { switch: String },
    /// Stop the switch's agent from changing bucket weights (takes effect at its next plan
    /// read, `runtime.plan_refresh_period_us`, 5 s by default).
    Freeze { switch: String },
    /// Let the switch's agent change weights again (from its policy's P).
    Unfreeze { switch: String },
    /// Dump and diff a switch again (every switch without SWITCH); unchanged ones get nothing.
    Resync { switch: Option<String> },
}

impl CtlAction {
    fn command(self) -> ctl::Command {
        match self {
            CtlAction::Links => ctl::Command::Links,
            CtlAction::Status => ctl::Command::Status,
            CtlAction::DrainLink { link } => ctl::Command::DrainLink(link),
            CtlAction::UndrainLink { link } => ctl::Command::UndrainLink(link),
            CtlAction::DrainSwitch { switch } => ctl::Command::DrainSwitch(switch),
            CtlAction::UndrainSwitch { switch } => ctl::Command::UndrainSwitch(switch),
            CtlAction::Freeze { switch } => ctl::Command::Freeze(switch),
            CtlAction::Unfreeze { switch } => ctl::Command::Unfreeze(switch),
            CtlAction::Resync { switch } => ctl::Command::Resync(switch),
        }
    }
}

fn run_ctl(args: CtlArgs) -> anyhow::Result<()> {
    let cfg = args.config.as_deref().map(Config::load).transpose()?;
    let url = match (&args.url, &cfg) {
        (Some(u), _) => u.clone(),
        (None, Some(c)) => {
            let mut a = c.http_listen;
            if a.ip().is_unspecified() {
                a.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
            }
            format!("http://{a}")
        }
        (None, None) => "http://127.0.0.1:9653".into(),
    };
    let token = match (&args.token, &args.token_file) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(f)) => Some(
            std::fs::read_to_string(f)
                .with_context(|| format!("token file {}", f.display()))?
                .trim()
                .to_owned(),
        ),
        (None, None) => match std::env::var("FABRICFLOW_API_TOKEN") {
            Ok(t) if !t.trim().is_empty() => Some(t.trim().to_owned()),
            _ => cfg.as_ref().map(Config::api_token).transpose()?.flatten(),
        },
    };
    let client = ctl::ApiClient::new(&url, token)?;
    let cmd = args.action.command();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let answer = rt.block_on(client.run(&cmd))?;
    let text = if args.json {
        serde_json::to_string_pretty(&answer)?
    } else {
        ctl_summary(&cmd, &answer)
    };
    write_stdout(&format!("{text}\n"))
}

/// A line per link, or what an action did.
fn ctl_summary(cmd: &ctl::Command, answer: &serde_json::Value) -> String {
    let s = |v: &serde_json::Value| v.as_str().unwrap_or("-").to_owned();
    match cmd {
        ctl::Command::Links => {
            let mut out = format!("{:<40} {:<13} drained", "link", "health");
            for l in answer.as_array().into_iter().flatten() {
                out.push_str(&format!(
                    "\n{:<40} {:<13} {}",
                    s(&l["id"]),
                    s(&l["health"]),
                    if l["drained"] == true { "yes" } else { "no" }
                ));
            }
            out
        }
        ctl::Command::Status => serde_json::to_string_pretty(answer).unwrap_or_default(),
        _ => {
            let o = &answer["outcome"];
            let what = if o["changed"] == true {
                "done"
            } else {
                "already so"
            };
            let mut line = format!(
                "{} {}: {what}, plan {}",
                s(&o["action"]),
                answer["target"],
                o["plan_version"]
            );
            if o["action"] == "resync" {
                line = format!(
                    "resync {}: {} connection(s) asked",
                    answer["target"], o["resync_requests"]
                );
            }
            line
        }
    }
}

/// The plan source for a configured fabric: the planner for `dragonfly:…`, `fattree:…` and
/// `file:…`; `fixture:line:N[:DPID_BASE_HEX]` is a line of N bare switches used by the
/// runtime's own tests.
fn plan_source(cfg: &Config) -> anyhow::Result<Arc<dyn PlanSource>> {
    let spec = cfg.fabric.as_str();
    if let Some(rest) = spec.strip_prefix("fixture:line:") {
        let mut parts = rest.split(':');
        let n: u32 = parts
            .next()
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("fabric `{spec}`: expected fixture:line:N[:DPID_BASE_HEX]"))?;
        let base = match parts.next() {
            Some(h) => u64::from_str_radix(h.trim_start_matches("0x"), 16)
                .with_context(|| format!("fabric `{spec}`: dpid base"))?,
            None => 0x100,
        };
        return Ok(Arc::new(LineFixture::new(base, n, cfg.cookie)));
    }
    let topology: TopologySpec = spec.parse().with_context(|| format!("fabric `{spec}`"))?;
    let fabric = topology
        .build()
        .with_context(|| format!("fabric `{spec}`"))?;
    let opts = PlanOptions {
        cookie: cfg.cookie,
        group_base: cfg.group_base,
        p_minimal_percent: cfg.p_minimal_percent,
        agent_controller_id: cfg.agent_controller_id,
        addressing: Addressing::new(cfg.ipv4_base)?,
        lossless: cfg.lossless_vlan.map(|vlan_vid| Lossless { vlan_vid }),
        multipath: cfg.multipath_alternatives.map(|alternatives| {
            fabricflow_controller::plan::paths::Multipath {
                alternatives,
                ..Default::default()
            }
        }),
        cnm_to_hosts: cfg.cnm_to_hosts,
        cnm_to_agent: cfg.cnm_to_agent,
        select_layout: cfg.select_layout,
        ..Default::default()
    };
    Ok(Arc::new(
        FabricPlanner::new(fabric, opts).with_context(|| format!("planning `{spec}`"))?,
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

fn run_service(config: PathBuf) -> anyhow::Result<()> {
    let cfg = Config::load(&config)?;
    init_logging(cfg.log_format);
    let planner = plan_source(&cfg)?;
    let rt = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
    rt.block_on(async move {
        let c = Controller::start(cfg, planner).await?;
        c.wait().await;
        anyhow::Ok(())
    })
}

/// Arguments of `plan`.
#[derive(Debug, Args)]
struct PlanArgs {
    /// dragonfly:p=P,a=A,h=H | fattree:k=K,n=N[,w=W] | file:PATH
    #[arg(long)]
    topology: TopologySpec,
    /// Only this switch: datapath id (0x… or decimal) or name.
    #[arg(long)]
    switch: Option<String>,
    #[arg(long, value_enum, default_value = "ofctl")]
    format: Format,
    /// Initial probability of minimal routing, percent (bucket weights).
    #[arg(long, default_value_t = 100.0)]
    p_minimal: f64,
    /// Lossless mode: VLAN PCP by hop phase, with this VLAN id pushed at injection.
    #[arg(long)]
    lossless_vid: Option<u16>,
    /// Cookie of every rule and group.
    #[arg(long, value_parser = parse_u64, default_value = "0x0fabf10a00000001")]
    cookie: u64,
    /// Group id base (group id = base + minimal port, + 32768 for an equal-cost group).
    #[arg(long, default_value_t = fabricflow_controller::plan::DEFAULT_GROUP_BASE)]
    group_base: u32,
    /// Controller id of the agent's connection (CNM packet-ins).
    #[arg(long, default_value_t = fabricflow_controller::plan::DEFAULT_AGENT_CONTROLLER_ID)]
    agent_id: u16,
    /// /8 network of the hosts' IPv4 addresses.
    #[arg(long, default_value = "10.0.0.0")]
    ipv4_base: Ipv4Addr,
    /// Multipath (DRB) plan with this many alternative paths per pair (0..=4) instead of
    /// decision points.
    #[arg(long)]
    multipath: Option<u8>,
    /// Cap on the multipath transit rules of one switch.
    #[arg(long, default_value_t = fabricflow_controller::plan::paths::Multipath::default().max_transit_rules)]
    multipath_cap: usize,
    /// Forward CNMs from fabric ports to the culprit's host instead of the agent (InfiniBand
    /// CC baseline: the hosts throttle).
    #[arg(long)]
    cnm_to_hosts: bool,
    /// How a CNM from a fabric port reaches the agent: packet-in, or interface (dropped by the
    /// switch; the agent reads the port's Linux interface).
    #[arg(long, value_enum, default_value_t = CnmToAgent::PacketIn)]
    cnm_to_agent: CnmToAgent,
    /// How decision points carry their split in the ofctl groups: slots (as the controller
    /// service installs them by default) or weights.
    #[arg(long, value_enum, default_value_t = SelectLayout::Slots)]
    select_layout: SelectLayout,
    /// Write the groups of --switch here (ofctl format).
    #[arg(long, requires_all = ["switch", "flows_out"])]
    groups_out: Option<PathBuf>,
    /// Write the flows of --switch here (ofctl format).
    #[arg(long, requires_all = ["switch", "groups_out"])]
    flows_out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum BoundFormat {
    Table,
    Json,
}

/// Arguments of `bound`; the rate options are `mininet/run.py`'s.
#[derive(Debug, Args)]
struct BoundArgs {
    /// dragonfly:p=P,a=A,h=H | fattree:k=K,n=N[,w=W] | file:PATH
    #[arg(long)]
    topology: TopologySpec,
    /// uniform | adv+K | hotspot[:C] | hotspots:N[:P] | linkhot[:C] | shuffle
    /// (controller/src/traffic.rs defines each).
    #[arg(long)]
    traffic: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// flows: the harness's flows, one per sending host demanding its link's rate; matrix: the
    /// simulator's destination distribution, every host offering its link's rate.
    #[arg(long, default_value = "flows")]
    demand: DemandModel,
    /// Comma-separated: any (every path), minimal, valiant (the planner's P = 0 paths),
    /// adaptive (minimal and valiant paths together).
    #[arg(long, value_delimiter = ',', default_value = "any")]
    routing: Vec<Routing>,
    /// Host links, Mb/s.
    #[arg(long, default_value_t = 5.0)]
    host_bw: f64,
    /// Dragonfly local links (and fat-tree up links unless --up-bw), Mb/s.
    #[arg(long, default_value_t = 5.0)]
    local_bw: f64,
    /// Dragonfly global links (and fat-tree down links unless --down-bw), Mb/s.
    #[arg(long, default_value_t = 5.0)]
    global_bw: f64,
    /// Fat-tree links upwards (at the lower switch), Mb/s (default: --local-bw).
    #[arg(long)]
    up_bw: Option<f64>,
    /// Fat-tree links downwards (at the upper switch), Mb/s (default: --global-bw).
    #[arg(long)]
    down_bw: Option<f64>,
    /// Links of a file fabric, Mb/s (default: --local-bw).
    #[arg(long)]
    fabric_bw: Option<f64>,
    #[arg(long, value_enum, default_value = "table")]
    format: BoundFormat,
    /// Also solve, per routing, the lowest peak utilisation of the fabric's links at which
    /// it carries every demand in full (host links uncapped; one more LP each).
    #[arg(long)]
    min_peak: bool,
}

/// `bound --format json`: the request and one entry per routing.
#[derive(Debug, serde::Serialize)]
struct BoundReport {
    topology: String,
    traffic: String,
    seed: u64,
    demand: DemandModel,
    link_rates_mbps: LinkRates,
    demands: usize,
    offered_mbps: f64,
    bounds: Vec<TimedBound>,
}

#[derive(Debug, serde::Serialize)]
struct TimedBound {
    #[serde(flatten)]
    bound: bound::Bound,
    /// `--min-peak`: the lowest peak fabric-link utilisation carrying every demand.
    #[serde(skip_serializing_if = "Option::is_none")]
    min_peak_utilisation: Option<f64>,
    /// Wall time of the LPs, building included.
    seconds: f64,
}

fn print_bound(args: BoundArgs) -> anyhow::Result<()> {
    let fabric = args
        .topology
        .build()
        .with_context(|| format!("topology {}", args.topology))?;
    let rates = LinkRates {
        host: args.host_bw,
        local: args.local_bw,
        global: args.global_bw,
        up: args.up_bw.unwrap_or(args.local_bw),
        down: args.down_bw.unwrap_or(args.global_bw),
        fabric: args.fabric_bw.unwrap_or(args.local_bw),
    };
    let demands = bound::demands(&fabric, &args.traffic, args.seed, args.demand, rates.host)?;
    let mut bounds = Vec::with_capacity(args.routing.len());
    for &routing in &args.routing {
        let t0 = std::time::Instant::now();
        let b = bound::bound(&fabric, &rates, &demands, routing)?;
        let min_peak_utilisation = if args.min_peak {
            Some(bound::min_peak_utilisation(
                &fabric, &rates, &demands, routing,
            )?)
        } else {
            None
        };
        let seconds = t0.elapsed().as_secs_f64();
        tracing::debug!(%routing, seconds, variables = b.lp.variables, "bound");
        bounds.push(TimedBound {
            bound: b,
            min_peak_utilisation,
            seconds,
        });
    }
    let report = BoundReport {
        topology: args.topology.to_string(),
        traffic: args.traffic,
        seed: args.seed,
        demand: args.demand,
        link_rates_mbps: rates,
        demands: demands.len(),
        offered_mbps: demands.iter().map(|d| d.mbps).sum(),
        bounds,
    };
    let text = match args.format {
        BoundFormat::Json => {
            let mut t = serde_json::to_string_pretty(&report)?;
            t.push('\n');
            t
        }
        BoundFormat::Table => bound_table(&report),
    };
    write_stdout(&text)
}

fn bound_table(r: &BoundReport) -> String {
    use std::fmt::Write as _;
    let l = &r.link_rates_mbps;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  traffic {}  seed {}  demand {}: {} demands, {:.2} Mb/s offered",
        r.topology, r.traffic, r.seed, r.demand, r.demands, r.offered_mbps
    );
    let _ = writeln!(
        out,
        "links host {} / local {} / global {} Mb/s (fat-tree up {} / down {}, file {})",
        l.host, l.local, l.global, l.up, l.down, l.fabric
    );
    let _ = writeln!(
        out,
        "{:<10}{:>8}{:>17}{:>20}{:>12}{:>10}{:>9}{:>8}{:>9}{}",
        "routing",
        "lambda",
        "concurrent Mb/s",
        "max aggregate Mb/s",
        "of offered",
        "LP vars",
        "rows",
        "paths",
        "seconds",
        if r.bounds.iter().any(|t| t.min_peak_utilisation.is_some()) {
            "  min peak"
        } else {
            ""
        }
    );
    for t in &r.bounds {
        let b = &t.bound;
        let share = if r.offered_mbps > 0.0 {
            100.0 * b.max_aggregate_mbps / r.offered_mbps
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "{:<10}{:>8.4}{:>17.3}{:>20.3}{:>11.1}%{:>10}{:>9}{:>8}{:>9.3}{}",
            b.routing.to_string(),
            b.lambda,
            b.concurrent_mbps,
            b.max_aggregate_mbps,
            share,
            b.lp.variables,
            b.lp.constraints,
            b.lp.paths,
            t.seconds,
            t.min_peak_utilisation
                .map(|u| format!("{u:>10.4}"))
                .unwrap_or_default()
        );
    }
    out
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let t = s.replace('_', "");
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).map_err(|e| e.to_string()),
        None => t
            .parse()
            .map_err(|e: std::num::ParseIntError| e.to_string()),
    }
}

fn find_switch<'p>(fabric: &Fabric, plan: &'p Plan, key: &str) -> anyhow::Result<&'p SwitchPlan> {
    let id = fabric
        .switch_by_name(key)
        .or_else(|| parse_u64(key).ok().and_then(|d| fabric.switch_by_dpid(d)))
        .with_context(|| format!("no switch named or with dpid {key:?}"))?;
    plan.switch(id).context("switch has no plan")
}

/// `dftree-watch`: the thin I/O shell around `dftree::Detector` (module docs there).
fn dftree_watch(args: &DftreeWatchArgs) -> anyhow::Result<()> {
    use fabricflow_controller::dftree::{
        parse_port_stats_row, Contributors, Detector, DftreeConfig, PortStatsRow,
    };
    use std::io::BufRead as _;
    let fabric = args
        .topology
        .build()
        .with_context(|| format!("topology {}", args.topology))?;
    let plan = Plan::build(&fabric, &PlanOptions::default())?;
    let cookie = parse_u64(&args.cookie).map_err(|e| anyhow::anyhow!("--cookie: {e}"))?;
    let mut detector = Detector::new(DftreeConfig {
        hot_congestion: args.hot_congestion,
        clear_congestion: args.clear_congestion,
        clear_sweeps: args.clear_sweeps,
        contributors: Contributors::EveryEdge,
        hot_drops_per_s: args.hot_drops_per_s,
        ..DftreeConfig::default()
    })?;
    let deadline = args
        .duration_s
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| std::time::Instant::now() + std::time::Duration::from_secs_f64(s));
    let file = std::fs::File::open(&args.port_stats)
        .with_context(|| format!("{}", args.port_stats.display()))?;
    let mut reader = std::io::BufReader::new(file);
    let mut partial = String::new();
    let (mut last, mut current): (Vec<PortStatsRow>, Vec<PortStatsRow>) = (vec![], vec![]);
    let mut rows_per_reading: Option<usize> = None;
    let mut processed = false;
    loop {
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Ok(());
        }
        let n = reader.read_line(&mut partial)?;
        if n == 0 && args.no_follow {
            // The end of a finished file completes its last reading: a sentinel row.
            partial = format!("{},,0,,tx,0\n", u64::MAX);
        } else if n == 0 || !partial.ends_with('\n') {
            // Nothing complete yet: the sampler writes a reading at a time.
            std::thread::sleep(std::time::Duration::from_millis(20));
            continue;
        }
        let line = std::mem::take(&mut partial);
        let Some(row) = parse_port_stats_row(&line) else {
            continue;
        };
        let done = row.time == u64::MAX;
        if current.first().is_some_and(|r| r.time != row.time) {
            // A new reading began, so the last one is complete (if its row count did not
            // already say so): one sweep against the one before it.
            rows_per_reading.get_or_insert(current.len());
            if !processed && !last.is_empty() {
                watch_sweep(
                    &mut detector,
                    &fabric,
                    &plan,
                    args.dscp,
                    cookie,
                    &last,
                    &current,
                )?;
            }
            last = std::mem::take(&mut current);
            processed = false;
        }
        if done {
            return Ok(());
        }
        current.push(row);
        // A reading with as many rows as the first: complete now, not one reading later.
        if !processed && !last.is_empty() && rows_per_reading == Some(current.len()) {
            watch_sweep(
                &mut detector,
                &fabric,
                &plan,
                args.dscp,
                cookie,
                &last,
                &current,
            )?;
            processed = true;
        }
    }
}

/// One sweep of `dftree-watch`: the detection on two readings, its JSON lines on stdout.
fn watch_sweep(
    detector: &mut fabricflow_controller::dftree::Detector,
    fabric: &Fabric,
    plan: &Plan,
    dscp: u8,
    cookie: u64,
    last: &[fabricflow_controller::dftree::PortStatsRow],
    current: &[fabricflow_controller::dftree::PortStatsRow],
) -> anyhow::Result<()> {
    use fabricflow_controller::dftree::{edge_observations, slow_lane_flow, LaneChange, LaneMark};
    use std::io::Write as _;
    let out = std::io::stdout();
    let name = |h: usize| fabric.host(h).map(|x| x.name.clone()).unwrap_or_default();
    let sw_name = |s: usize| fabric.switch(s).map(|x| x.name.clone()).unwrap_or_default();
    let t_ns = current.first().map_or(0, |r| r.time);
    let changes = detector.sweep(&edge_observations(fabric, last, current));
    let mut w = out.lock();
    let hot: Vec<String> = detector.hot_spots().map(name).collect();
    let line = serde_json::json!({
        "sweep": detector.sweeps(), "t_ns": t_ns, "hot_spots": hot,
    });
    writeln!(w, "{line}")?;
    for c in changes {
        let (kind, edge, hot) = match c {
            LaneChange::Repath { edge, hot_spot } => ("repath", edge, hot_spot),
            LaneChange::Unpath { edge, hot_spot } => ("unpath", edge, hot_spot),
        };
        let (Some(sp), Some(h)) = (plan.switch(edge), fabric.host(hot)) else {
            continue;
        };
        let Some(mut flow) = slow_lane_flow(sp, h.location.mac(), LaneMark::Dscp(dscp)) else {
            continue;
        };
        flow.cookie = cookie;
        let strict = format!(
            "table={},priority={},{}",
            flow.table,
            flow.priority,
            ofctl::match_text(&flow.matches)
        );
        let line = serde_json::json!({
            "sweep": detector.sweeps(), "t_ns": t_ns, "change": kind,
            "switch": sw_name(edge), "hot_spot": h.name,
            "flow": ofctl::flow_line(&flow), "strict_match": strict,
        });
        writeln!(w, "{line}")?;
    }
    w.flush()?;
    Ok(())
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::DftreeWatch(args) => dftree_watch(&args),
        Command::Topology {
            topology,
            ipv4_base,
        } => {
            let fabric = topology
                .build()
                .with_context(|| format!("topology {topology}"))?;
            let t = fabricflow_controller::export::export(&fabric, &Addressing::new(ipv4_base)?)?;
            let mut text = serde_json::to_string_pretty(&t)?;
            text.push('\n');
            write_stdout(&text)
        }
        Command::Traffic {
            topology,
            traffic,
            seed,
        } => {
            let fabric = topology
                .build()
                .with_context(|| format!("topology {topology}"))?;
            let t = fabricflow_controller::export::traffic(&fabric, traffic, seed)?;
            let mut text = serde_json::to_string_pretty(&t)?;
            text.push('\n');
            write_stdout(&text)
        }
        Command::Bound(args) => print_bound(args),
        Command::Run { config } => run_service(config),
        Command::Ctl(args) => run_ctl(args),
        Command::Plan(args) => print_plan(args),
        Command::Phase(args) => print_phase(args),
    }
}

fn print_phase(args: PhaseArgs) -> anyhow::Result<()> {
    use fabricflow_controller::flowroute::{plan_phase, PhaseRequest, PhaseRuleOptions};
    let fabric = args
        .topology
        .build()
        .with_context(|| format!("topology {}", args.topology))?;
    let text = if args.flows.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(&args.flows)
            .with_context(|| format!("cannot read {}", args.flows.display()))?
    };
    let req: PhaseRequest = serde_json::from_str(&text).context("flows file")?;
    let opts = PhaseRuleOptions {
        max_per_switch: args.max_per_switch,
        idle_timeout: args.idle_timeout,
        hard_timeout: args.hard_timeout,
        ..PhaseRuleOptions::default()
    };
    let answer = plan_phase(&fabric, &req, args.algorithm, &opts)?;
    let mut text = serde_json::to_string_pretty(&answer)?;
    text.push('\n');
    write_stdout(&text)
}

fn print_plan(args: PlanArgs) -> anyhow::Result<()> {
    let PlanArgs {
        topology,
        switch,
        format,
        p_minimal,
        lossless_vid,
        cookie,
        group_base,
        agent_id,
        ipv4_base,
        multipath,
        multipath_cap,
        cnm_to_hosts,
        cnm_to_agent,
        select_layout,
        groups_out,
        flows_out,
    } = args;
    let fabric = topology
        .build()
        .with_context(|| format!("topology {topology}"))?;
    let opts = PlanOptions {
        cookie,
        group_base,
        p_minimal_percent: p_minimal,
        agent_controller_id: agent_id,
        addressing: Addressing::new(ipv4_base)?,
        lossless: lossless_vid.map(|vlan_vid| Lossless { vlan_vid }),
        multipath: multipath.map(
            |alternatives| fabricflow_controller::plan::paths::Multipath {
                alternatives,
                max_transit_rules: multipath_cap,
                ..Default::default()
            },
        ),
        cnm_to_hosts,
        cnm_to_agent,
        select_layout,
        ..Default::default()
    };
    let plan = Plan::build(&fabric, &opts)?;
    let selected: Vec<&SwitchPlan> = match &switch {
        Some(key) => vec![find_switch(&fabric, &plan, key)?],
        None => plan.switches.iter().collect(),
    };
    if let (Some(g), Some(f)) = (&groups_out, &flows_out) {
        let Some(sp) = selected.first() else {
            bail!("no switch selected")
        };
        std::fs::write(
            g,
            ofctl::groups_text(sp, select_layout).map_err(anyhow::Error::msg)?,
        )
        .with_context(|| format!("writing {}", g.display()))?;
        std::fs::write(f, ofctl::flows_text(sp))
            .with_context(|| format!("writing {}", f.display()))?;
        return Ok(());
    }
    let mut out = String::new();
    match format {
        Format::Ofctl => {
            for sp in &selected {
                out.push_str(&ofctl::switch_text(sp, select_layout).map_err(anyhow::Error::msg)?);
            }
        }
        Format::Json => {
            out = if switch.is_some() {
                serde_json::to_string_pretty(&selected)?
            } else {
                serde_json::to_string_pretty(&plan)?
            };
            out.push('\n');
        }
        Format::Stats => {
            out.push_str("switch\tdpid\tflows\tgroups\n");
            for sp in &selected {
                out.push_str(&format!(
                    "{}\t0x{:016x}\t{}\t{}\n",
                    sp.name,
                    sp.dpid,
                    sp.flows.len(),
                    sp.groups.len()
                ));
            }
            let (f, g) = plan.totals();
            out.push_str(&format!("total\t-\t{f}\t{g}\n"));
        }
    }
    write_stdout(&out)
}

/// Writes to stdout, returning an error (not panicking like `println!`) if the reader is gone,
/// e.g. `fabricflow-controller topology … | head`.
fn write_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing stdout")
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fabricflow-controller: {e:#}");
            ExitCode::FAILURE
        }
    }
}
