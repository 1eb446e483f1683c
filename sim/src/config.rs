//! Simulation parameters: routing modes, traffic (patterns from the controller's registry,
//! [`fabricflow_controller::traffic`], and transients between them) and the physical constants.
//!
//! # Time and phits
//!
//! One cycle is the time a link needs for one phit. The default phit is **128 octets**, so a
//! 1 KB packet is 8 phits (FOGSim's default packet length) and, at 40 Gb/s, one cycle is 25.6 ns.
//! Latencies given in nanoseconds are rounded to whole cycles (at least 1): 200 ns switch → 8,
//! 40 ns local link → 2, 400 ns global link → 16. Every host injects at most one phit per cycle,
//! so throughput in phits/node/cycle equals the fraction of injection bandwidth.

use std::fmt;
use std::str::FromStr;

use fabricflow_agent::cp::CpConfig;
use fabricflow_agent::link::PortLink;
use fabricflow_agent::policy::PolicyConfig;
use fabricflow_agent::policy::Variant;
use fabricflow_agent::weights::WeightsConfig;
pub use fabricflow_controller::traffic::Pattern;
use fabricflow_controller::TopologySpec;

/// Errors in a simulation spec.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("unknown routing mode {0:?}; expected minimal, valiant, ugal-l, pause, qcnsw-base, qcnsw-sp, qcnsw-fc, qcnsw-combined, drb or iba-cc")]
    Routing(String),
    #[error(
        "invalid traffic {0:?}; expected uniform, adv+K, hotspot[:C], hotspots:N[:P], linkhot[:C], shuffle or PATTERN->PATTERN@CYCLE"
    )]
    Traffic(String),
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// How packets are routed (decisions at injection, at the source switch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routing {
    /// Minimal (local-global-local).
    Minimal,
    /// Valiant: a random intermediate group chosen at injection.
    Valiant,
    /// UGAL-L: minimal iff q_min·H_min ≤ q_nm·H_nm + threshold, local queues at injection.
    UgalL,
    /// Misroute at injection (another global port of the source switch) when the minimal output
    /// has no credits or no output-queue space.
    Pause,
    /// QCN-SW with the agent's policy engine, the given variant.
    QcnSw(Variant),
    /// DRB with the agent's switch core (`policy.kind = "drb"`) on the controller's multipath
    /// plan: new packets draw a path from the pair's weights; CNMs name the culprit's path.
    Drb,
    /// Minimal routing with InfiniBand congestion control at the hosts: a CNM about a host's
    /// packet reaches its switch, every 10 raise the host's IRD by one (rate B/(1+IRD)), and a
    /// quiet period without one (100 µs) lowers it by one.
    IbaCc,
}

impl Routing {
    /// Every mode, in the order of the reports.
    pub const ALL: [Routing; 8] = [
        Routing::Minimal,
        Routing::Valiant,
        Routing::UgalL,
        Routing::Pause,
        Routing::QcnSw(Variant::Base),
        Routing::QcnSw(Variant::SourceProcessing),
        Routing::QcnSw(Variant::FeedbackComparison),
        Routing::QcnSw(Variant::Combined),
    ];
}

impl FromStr for Routing {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        Ok(match s {
            "minimal" | "min" => Routing::Minimal,
            "valiant" | "val" => Routing::Valiant,
            "ugal-l" | "ugal" => Routing::UgalL,
            "pause" => Routing::Pause,
            "qcnsw-base" => Routing::QcnSw(Variant::Base),
            "qcnsw-sp" => Routing::QcnSw(Variant::SourceProcessing),
            "qcnsw-fc" => Routing::QcnSw(Variant::FeedbackComparison),
            "qcnsw-combined" => Routing::QcnSw(Variant::Combined),
            "drb" => Routing::Drb,
            "iba-cc" => Routing::IbaCc,
            _ => return Err(SpecError::Routing(s.to_owned())),
        })
    }
}

impl fmt::Display for Routing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Routing::Minimal => "minimal",
            Routing::Valiant => "valiant",
            Routing::UgalL => "ugal-l",
            Routing::Pause => "pause",
            Routing::QcnSw(Variant::Base) => "qcnsw-base",
            Routing::QcnSw(Variant::SourceProcessing) => "qcnsw-sp",
            Routing::QcnSw(Variant::FeedbackComparison) => "qcnsw-fc",
            Routing::QcnSw(Variant::Combined) => "qcnsw-combined",
            Routing::Drb => "drb",
            Routing::IbaCc => "iba-cc",
        })
    }
}

/// The traffic of a run: one pattern, or a change of pattern at a given cycle (transient).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traffic {
    pub first: Pattern,
    /// `(pattern, cycle)`: from that cycle on, destinations follow `pattern`.
    pub then: Option<(Pattern, u64)>,
}

impl Traffic {
    /// A stationary pattern.
    pub fn steady(p: Pattern) -> Self {
        Traffic {
            first: p,
            then: None,
        }
    }
    /// The pattern in force at `cycle`.
    pub fn at(&self, cycle: u64) -> Pattern {
        match self.then {
            Some((p, t)) if cycle >= t => p,
            _ => self.first,
        }
    }
}

impl FromStr for Traffic {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let pattern = |p: &str| {
            p.parse::<Pattern>()
                .map_err(|_| SpecError::Traffic(s.to_owned()))
        };
        match s.split_once("->") {
            None => Ok(Traffic::steady(pattern(s)?)),
            Some((a, rest)) => {
                let (b, t) = rest
                    .split_once('@')
                    .ok_or_else(|| SpecError::Traffic(s.to_owned()))?;
                let t: u64 = t.parse().map_err(|_| SpecError::Traffic(s.to_owned()))?;
                Ok(Traffic {
                    first: pattern(a)?,
                    then: Some((pattern(b)?, t)),
                })
            }
        }
    }
}

impl fmt::Display for Traffic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.then {
            None => write!(f, "{}", self.first),
            Some((p, t)) => write!(f, "{}->{}@{}", self.first, p, t),
        }
    }
}

/// Which queues the QCN congestion points sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpQueue {
    /// Every input port (host and fabric), Q = its occupancy over the data VCs (the seed's
    /// setup: "QCN CP sampling at input queues").
    Input,
    /// Every fabric output port, Q = its output-queue occupancy over the data VCs.
    Output,
}

impl FromStr for CpQueue {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        match s {
            "input" => Ok(CpQueue::Input),
            "output" => Ok(CpQueue::Output),
            _ => Err(SpecError::Invalid(format!(
                "cp queue {s:?}: expected input or output"
            ))),
        }
    }
}

/// Everything one simulation run needs.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub topology: TopologySpec,
    pub routing: Routing,
    pub traffic: Traffic,
    /// Offered load, fraction of injection bandwidth (phits/node/cycle).
    pub load: f64,
    pub warmup_cycles: u64,
    pub measure_cycles: u64,
    pub seed: u64,
    /// Octets per phit (one cycle of a link).
    pub phit_bytes: u32,
    /// Data packet size, octets (rounded up to whole phits).
    pub packet_bytes: u32,
    /// CNM size on the wire, octets (64: the 60-octet minimum frame + FCS).
    pub cnm_bytes: u32,
    pub link_gbps: f64,
    pub switch_latency_ns: f64,
    pub local_latency_ns: f64,
    pub global_latency_ns: f64,
    /// Host link latency (host ↔ its switch).
    pub host_latency_ns: f64,
    /// Data virtual channels (hop phases). Dragonfly needs 3 (Valiant: l g l g l); the CNM class
    /// is one more, so the default is the seed's 4 classes of service.
    pub data_vcs: usize,
    /// Lanes (dFtree): the data VCs are split into `lanes` lanes of `data_vcs / lanes` hop
    /// phases each (VC = lane · phases + phase); hosts keep a queue per lane. 1 by default.
    pub lanes: usize,
    /// Input buffer per data VC, phits, on local/fat-tree fabric ports.
    pub in_local_phits: u32,
    /// Input buffer per data VC, phits, on global ports.
    pub in_global_phits: u32,
    /// Input buffer per data VC, phits, on host ports.
    pub in_host_phits: u32,
    /// Output buffer per data VC, phits.
    pub out_phits: u32,
    /// Input and output buffer of the CNM class, phits.
    pub cnm_buffer_phits: u32,
    /// Crossbar speedup (a packet crosses in ceil(len / speedup) cycles).
    pub speedup: u32,
    /// UGAL-L threshold, in queue-phits·hops.
    pub ugal_threshold: f64,
    pub cp_queue: CpQueue,
    pub cp: CpConfig,
    pub policy: PolicyConfig,
    /// When the switch cores write weights (the agent's `[weights]`).
    pub weights: WeightsConfig,
    /// What the policy's byte counter counts (the agent's `runtime.byte_counter`).
    pub byte_counter: fabricflow_agent::config::ByteCounter,
    /// Width of the throughput-over-time windows, cycles.
    pub window_cycles: u64,
    /// Read every port's XmitWait/XmitData counters every this many cycles of the measurement
    /// window (`port-stats.csv`); `None` does not count at all.
    pub port_stats_interval: Option<u64>,
    /// DRB: the controller's multipath plan (alternatives, stretch, rule cap).
    pub multipath: fabricflow_controller::plan::paths::Multipath,
    /// QCN-SW: the P (percent) the controller's plan installs, where the switch cores start
    /// (the controller's `p_minimal_percent`).
    pub p_minimal_percent: f64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            topology: TopologySpec::Dragonfly { p: 4, a: 8, h: 4 },
            routing: Routing::Minimal,
            traffic: Traffic::steady(Pattern::Uniform),
            load: 0.1,
            warmup_cycles: 10_000,
            measure_cycles: 10_000,
            seed: 1,
            phit_bytes: 128,
            packet_bytes: 1024,
            cnm_bytes: 64,
            link_gbps: 40.0,
            switch_latency_ns: 200.0,
            local_latency_ns: 40.0,
            global_latency_ns: 400.0,
            host_latency_ns: 40.0,
            data_vcs: 3,
            lanes: 1,
            in_local_phits: 32,
            in_global_phits: 256,
            in_host_phits: 32,
            out_phits: 32,
            cnm_buffer_phits: 16,
            speedup: 2,
            ugal_threshold: 0.0,
            cp_queue: CpQueue::Input,
            // The agent's shipped configuration: its constants are rate- and buffer-relative,
            // so the same values serve a 40 Gb/s simulated fabric and a Mininet one.
            cp: CpConfig::default(),
            policy: PolicyConfig::default(),
            weights: WeightsConfig::default(),
            byte_counter: fabricflow_agent::config::ByteCounter::default(),
            window_cycles: 200,
            port_stats_interval: None,
            multipath: fabricflow_controller::plan::paths::Multipath::default(),
            p_minimal_percent: fabricflow_controller::PlanOptions::default().p_minimal_percent,
        }
    }
}

impl SimConfig {
    /// Nanoseconds per cycle.
    pub fn ns_per_cycle(&self) -> f64 {
        f64::from(self.phit_bytes) * 8.0 / self.link_gbps
    }
    /// A latency in cycles (rounded, at least 1).
    pub fn cycles(&self, ns: f64) -> u64 {
        let c = (ns / self.ns_per_cycle()).round();
        if c.is_finite() && c >= 1.0 {
            c as u64
        } else {
            1
        }
    }
    /// The link the agent's rate-relative constants see on a port whose queue holds
    /// `vc_phits` per data VC: the line rate, and one VC's buffer in octets — what a congested
    /// flow can fill (a packet holds one VC per hop, so a hot spot backs up one VC of a port,
    /// not all of them).
    pub fn port_link(&self, vc_phits: u32) -> PortLink {
        PortLink {
            rate_bps: self.link_gbps * 1e9,
            buffer_bytes: (u64::from(vc_phits) * u64::from(self.phit_bytes)).max(1),
        }
    }

    /// Phits of a data packet.
    pub fn packet_phits(&self) -> u32 {
        self.packet_bytes.div_ceil(self.phit_bytes.max(1)).max(1)
    }
    /// Phits of a CNM.
    pub fn cnm_phits(&self) -> u32 {
        self.cnm_bytes.div_ceil(self.phit_bytes.max(1)).max(1)
    }
    /// Checks the ranges the engine relies on.
    pub fn validate(&self) -> Result<(), SpecError> {
        let bad = |m: &str| Err(SpecError::Invalid(m.to_owned()));
        if !(0.0..=1.0).contains(&self.load) {
            return bad("load must be in [0, 1]");
        }
        if self.phit_bytes == 0 || self.link_gbps.is_nan() || self.link_gbps <= 0.0 {
            return bad("phit size and link rate must be positive");
        }
        if self.data_vcs == 0 || self.data_vcs > 8 {
            return bad("data VCs must be 1..=8");
        }
        if self.lanes == 0 || self.lanes > 2 || !self.data_vcs.is_multiple_of(self.lanes) {
            return bad("lanes must be 1 or 2 and divide the data VCs");
        }
        if self.speedup == 0 {
            return bad("speedup must be ≥ 1");
        }
        let len = self.packet_phits();
        if len > 4096 {
            return bad("packets above 4096 phits are not supported");
        }
        for b in [
            self.in_local_phits,
            self.in_global_phits,
            self.in_host_phits,
            self.out_phits,
        ] {
            if b < len {
                return bad("every data buffer must hold at least one packet");
            }
        }
        if self.cnm_buffer_phits < self.cnm_phits() {
            return bad("the CNM buffer must hold at least one CNM");
        }
        let max = [
            self.switch_latency_ns,
            self.local_latency_ns,
            self.global_latency_ns,
            self.host_latency_ns,
        ]
        .iter()
        .map(|&ns| self.cycles(ns))
        .max()
        .unwrap_or(1);
        if max + u64::from(len) >= 2048 {
            return bad("latencies above ~2000 cycles are not supported");
        }
        if self.window_cycles == 0 {
            return bad("window must be ≥ 1 cycle");
        }
        if self.port_stats_interval == Some(0) {
            return bad("the port-stats interval must be ≥ 1 cycle");
        }
        self.cp
            .validate()
            .map_err(|e| SpecError::Invalid(e.to_string()))?;
        self.policy
            .validate()
            .map_err(|e| SpecError::Invalid(e.to_string()))?;
        self.weights
            .validate()
            .map_err(|e| SpecError::Invalid(e.to_string()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_modes_and_traffic() {
        for r in Routing::ALL {
            assert_eq!(r.to_string().parse::<Routing>().ok(), Some(r));
        }
        assert!("qcnsw".parse::<Routing>().is_err());
        let t: Traffic = "uniform->adv+1@20000".parse().unwrap();
        assert_eq!(t.first, Pattern::Uniform);
        assert_eq!(t.then, Some((Pattern::Adv(1), 20_000)));
        assert_eq!(t.at(19_999), Pattern::Uniform);
        assert_eq!(t.at(20_000), Pattern::Adv(1));
        assert_eq!(t.to_string(), "uniform->adv+1@20000");
        assert_eq!("adv+4".parse::<Traffic>().unwrap().first, Pattern::Adv(4));
        for bad in [
            "adv+0",
            "adv+x",
            "foo",
            "uniform->adv+1",
            "uniform->adv+1@x",
            "hotspot:0",
            "uniform->hotspot:x@5",
        ] {
            assert!(bad.parse::<Traffic>().is_err(), "{bad}");
        }
    }

    #[test]
    fn time_units() {
        let c = SimConfig::default();
        assert_eq!(c.packet_phits(), 8);
        assert_eq!(c.cnm_phits(), 1);
        assert!((c.ns_per_cycle() - 25.6).abs() < 1e-9);
        assert_eq!(c.cycles(c.switch_latency_ns), 8);
        assert_eq!(c.cycles(c.local_latency_ns), 2);
        assert_eq!(c.cycles(c.global_latency_ns), 16);
        assert!(c.validate().is_ok());
        let bad = SimConfig {
            out_phits: 4,
            ..SimConfig::default()
        };
        assert!(bad.validate().is_err());
    }
}
