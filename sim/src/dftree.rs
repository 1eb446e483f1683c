//! dFtree in the simulator (issue 19): a slow lane for the flows that feed an end-point hot
//! spot, so the victims sharing their paths keep the fast lane.
//!
//! Lanes are virtual channels (`SimConfig::lanes` = 2: VC = lane · phases + phase, each with
//! its own credits and buffers), and each host keeps one queue per lane, as an InfiniBand HCA
//! keeps one per virtual lane. A packet takes its lane when it leaves its host, from the
//! slow-lane table of its edge switch ([`Sim::set_slow_lane`]) — the simulator's form of the
//! edge switch's rule "`eth_dst = hot spot` → slow lane".
//!
//! Three modes ([`LaneMode`]):
//! - `one-lane`: nothing ever takes the slow lane (the same two-lane hardware, unused);
//! - `oracle`: from cycle 0, every packet to a hot spot of the traffic pattern takes the slow
//!   lane (the seed's simulation: "the packet generator always allocates the slow lane for the
//!   packets directed to the hot spot");
//! - `detect`: the controller's own detection core ([`fabricflow_controller::dftree::Detector`])
//!   runs once per sweep on the simulated counters' deltas — the edge port's backlog towards
//!   each host, each host's own XmitWait and sent data — and its repath/unpath changes set and
//!   clear the edge switches' slow-lane entries.

use std::fmt;
use std::str::FromStr;

use fabricflow_controller::dftree::{Detector, DftreeConfig, HostObservation, LaneChange};

use crate::config::{SimConfig, SpecError};
use crate::net::{HostPortCounters, Sim};

/// How packets are put on lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneMode {
    /// Every packet on the fast lane.
    One,
    /// Packets to the pattern's hot spots on the slow lane, from the start.
    Oracle,
    /// The controller's detection, driven by the simulated counters.
    Detect,
}

impl LaneMode {
    /// Every mode, in the order of the table.
    pub const ALL: [LaneMode; 3] = [LaneMode::One, LaneMode::Oracle, LaneMode::Detect];
}

impl FromStr for LaneMode {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        match s {
            "one-lane" => Ok(LaneMode::One),
            "oracle" => Ok(LaneMode::Oracle),
            "detect" => Ok(LaneMode::Detect),
            _ => Err(SpecError::Invalid(format!(
                "lane mode {s:?}: expected one-lane, oracle or detect"
            ))),
        }
    }
}

impl fmt::Display for LaneMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LaneMode::One => "one-lane",
            LaneMode::Oracle => "oracle",
            LaneMode::Detect => "detect",
        })
    }
}

/// One sweep of `detect`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// Cycle at the end of the sweep's interval (when its changes were applied).
    pub cycle: u64,
    /// Hot spots flagged after the sweep.
    pub hot_spots: Vec<usize>,
    /// Changes the sweep applied.
    pub changes: Vec<LaneChange>,
    /// The traffic pattern's hot spots' observed port congestion over the sweep (the
    /// detection's `toward_host`), in the order of [`DftreeResult::hot_spots`].
    pub hot_spot_congestion: Vec<f64>,
}

/// What one run produced.
#[derive(Debug, Clone)]
pub struct DftreeResult {
    pub mode: LaneMode,
    /// The traffic pattern's hot spots (host indices).
    pub hot_spots: Vec<usize>,
    /// Accepted throughput in the measurement window, phits/node/cycle (= fraction of the
    /// injection bandwidth), every destination.
    pub throughput_per_node: f64,
    /// The same for packets to hosts that are not hot spots, per node (all nodes).
    pub victim_throughput: f64,
    /// `detect`: every sweep, in order (empty otherwise).
    pub sweeps: Vec<Sweep>,
    /// (edge switch, destination host) pairs on the slow lane at the end of the run.
    pub slow_lanes: Vec<(usize, usize)>,
}

/// One host's observation over `dt` cycles from its counters at the start and end.
fn observe(host: usize, a: &HostPortCounters, b: &HostPortCounters, dt: u64) -> HostObservation {
    let dt = dt.max(1) as f64;
    let d = |x: u64, y: u64| y.saturating_sub(x) as f64 / dt;
    HostObservation {
        host,
        edge: b.switch,
        toward_host: d(a.backlog_cycles, b.backlog_cycles),
        // Lossless: nothing is dropped.
        toward_host_drops_per_s: 0.0,
        from_host: d(a.host_wait_cycles, b.host_wait_cycles),
        from_host_utilisation: d(a.host_data_phits, b.host_data_phits),
    }
}

/// Applies one detection change to the simulated edge switches.
fn apply(sim: &mut Sim, c: LaneChange) {
    match c {
        LaneChange::Repath { edge, hot_spot } => sim.set_slow_lane(edge, hot_spot, true),
        LaneChange::Unpath { edge, hot_spot } => sim.set_slow_lane(edge, hot_spot, false),
    }
}

/// Runs `cfg` (which must have 2 lanes) in `mode`; `detect` sweeps every `sweep_cycles`
/// cycles from cycle 0 with the thresholds of `det`.
pub fn run(
    cfg: &SimConfig,
    mode: LaneMode,
    sweep_cycles: u64,
    det: &DftreeConfig,
) -> Result<DftreeResult, SpecError> {
    if cfg.lanes != 2 {
        return Err(SpecError::Invalid("dFtree runs need 2 lanes".into()));
    }
    if sweep_cycles == 0 {
        return Err(SpecError::Invalid(
            "the sweep interval must be ≥ 1 cycle".into(),
        ));
    }
    let fabric = cfg
        .topology
        .build()
        .map_err(|e| SpecError::Invalid(e.to_string()))?;
    let hot_spots = cfg
        .traffic
        .first
        .destinations(&fabric, cfg.seed)
        .map_err(|e| SpecError::Invalid(e.to_string()))?
        .hot_spots();
    let mut run_cfg = cfg.clone();
    if mode == LaneMode::Detect {
        // Counting is what the detection reads; the other modes skip its cost.
        run_cfg.port_stats_interval = Some(sweep_cycles);
    }
    let mut sim = Sim::with_fabric(run_cfg, &fabric)?;
    let total = cfg.warmup_cycles + cfg.measure_cycles;
    let mut sweeps = Vec::new();
    match mode {
        LaneMode::One => sim.run(total),
        LaneMode::Oracle => {
            for s in 0..sim.switches() {
                if sim.hosts_of(s) > 0 {
                    for &h in &hot_spots {
                        sim.set_slow_lane(s, h, true);
                    }
                }
            }
            sim.run(total);
        }
        LaneMode::Detect => {
            let mut detector =
                Detector::new(det.clone()).map_err(|e| SpecError::Invalid(e.to_string()))?;
            let mut before = sim.host_port_counters();
            while sim.now() < total {
                let start = sim.now();
                sim.run(sweep_cycles.min(total - start));
                let after = sim.host_port_counters();
                let dt = sim.now() - start;
                let obs: Vec<HostObservation> = before
                    .iter()
                    .zip(&after)
                    .enumerate()
                    .map(|(h, (a, b))| observe(h, a, b, dt))
                    .collect();
                let changes = detector.sweep(&obs);
                for &c in &changes {
                    apply(&mut sim, c);
                }
                let hot_spot_congestion = hot_spots
                    .iter()
                    .map(|&h| obs.get(h).map_or(0.0, |o| o.toward_host))
                    .collect();
                sweeps.push(Sweep {
                    cycle: sim.now(),
                    hot_spots: detector.hot_spots().collect(),
                    changes,
                    hot_spot_congestion,
                });
                before = after;
            }
        }
    }
    let nh = sim.hosts().max(1) as f64;
    let measure = cfg.measure_cycles.max(1) as f64;
    let per_dst = &sim.stats.per_dst_host;
    let victims: u64 = per_dst
        .iter()
        .enumerate()
        .filter(|(h, _)| !hot_spots.contains(h))
        .map(|(_, &p)| p)
        .sum();
    let slow_lanes = (0..sim.switches())
        .flat_map(|s| (0..sim.hosts()).map(move |d| (s, d)))
        .filter(|&(s, d)| sim.slow_lane(s, d))
        .collect();
    Ok(DftreeResult {
        mode,
        throughput_per_node: sim.stats.delivered_phits as f64 / (nh * measure),
        victim_throughput: victims as f64 / (nh * measure),
        hot_spots,
        sweeps,
        slow_lanes,
    })
}
