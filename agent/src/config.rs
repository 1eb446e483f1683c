//! The agent's configuration: every constant of the QCN-SW policy, the weight-write decision and
//! the emulated congestion point, with documented defaults and validation.
//!
//! Loaded from TOML (`deploy/agent.example.toml` lists and explains every key). Every section and
//! key is optional; a missing key takes the default documented here. Unknown keys are rejected so
//! that a misspelt constant cannot silently fall back to its default.
//!
//! Durations are integers with their unit in the key name (`_us`); the pure core converts them to
//! nanoseconds, the unit of its `now` argument.

use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::policy::{UpdatePolicy, Variant};

/// Largest quantised feedback a CNM can carry (6 bits).
pub const QNTZ_FB_MAX: u8 = 63;

/// Everything the agent's pure core is configured with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// The QCN-SW reaction point: how P(p) moves.
    pub policy: PolicyConfig,
    /// When quantised bucket weights are written to the switch.
    pub weights: WeightsConfig,
    /// The QCN congestion point (used by the emulated CP on Open vSwitch and by the simulator).
    pub cp: CpConfig,
    /// The I/O shell: switch sessions, emulated CP, HTTP, logs (`fabricflow-agent run`).
    pub runtime: RuntimeConfig,
    /// The switches this process serves (`[[switch]]`, or `--switch NAME=TARGET`).
    pub switch: Vec<SwitchConfig>,
}

/// The I/O shell's settings (`[runtime]`). Every key optional; defaults below.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RuntimeConfig {
    /// The agent's controller id (NXT_SET_CONTROLLER_ID); the plan's table-0 CNM rule sends to
    /// `controller(id=…)` with this id. Default 0x0fab = 4011.
    pub controller_id: u16,
    /// SET_CONFIG miss_send_len: octets of a packet-in's frame sent to the agent. Default 65535
    /// (whole frames, no buffering); at least 128 so a whole CNM (≤ 106 octets) arrives.
    pub miss_send_len: u16,
    /// Ask for role EQUAL after the handshake. Default true. A refusal is tolerated (counted,
    /// logged): on OVS the default role of every connection is already EQUAL.
    pub request_role_equal: bool,
    /// OFPMP_PORT_STATS polling period (tx_bytes deltas feed the byte counter), µs. Default
    /// 100 000 (100 ms). With `byte_counter = "minimal-bucket"` it is the group-statistics
    /// period instead (port statistics are then not polled).
    pub port_stats_period_us: u64,
    /// What the byte counter counts (see [`ByteCounter`]). Default "port".
    pub byte_counter: ByteCounter,
    /// Period of the plan read (GROUP_DESC + cookie-masked FLOW_STATS), µs. Default 5 000 000.
    /// Reads also follow every GROUP_MOD error and PORT_STATUS.
    pub plan_refresh_period_us: u64,
    /// Period of the policy's Tick and the planner's flush of deferred writes, µs. Default 1000.
    pub tick_period_us: u64,
    /// First reconnect delay, µs; doubled after every failure. Default 100 000.
    pub reconnect_min_us: u64,
    /// Largest reconnect delay, µs. Default 5 000 000.
    pub reconnect_max_us: u64,
    /// Listen address of the HTTP server (`/metrics`, `/api/v1/state`). Default
    /// "127.0.0.1:9464"; empty disables it.
    pub http_listen: String,
    /// Log format: "text" (default) or "json". The level comes from `RUST_LOG` (default info).
    pub log_format: LogFormat,
    /// The plan's conventions (group id base, cookie, tables).
    pub plan: crate::plan::PlanConventions,
    /// The emulated QCN congestion point (OVS has no QCN).
    pub emulated_cp: EmulatedCpConfig,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            controller_id: fabricflow_proto::conventions::AGENT_CONTROLLER_ID,
            miss_send_len: 0xffff,
            request_role_equal: true,
            port_stats_period_us: 100_000,
            byte_counter: ByteCounter::Port,
            plan_refresh_period_us: 5_000_000,
            tick_period_us: 1_000,
            reconnect_min_us: 100_000,
            reconnect_max_us: 5_000_000,
            http_listen: "127.0.0.1:9464".to_owned(),
            log_format: LogFormat::Text,
            plan: crate::plan::PlanConventions::default(),
            emulated_cp: EmulatedCpConfig::default(),
        }
    }
}

/// The byte counter's input: which bytes "left port p" (DESIGN §5) are counted towards P(p)'s
/// next increase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ByteCounter {
    /// Every octet transmitted on p (OFPMP_PORT_STATS tx_bytes): transit traffic and other
    /// switches' diverted traffic included. The literal reading, and what any OF1.3 switch reports.
    #[default]
    Port,
    /// Only the octets this switch injected minimally through p: bucket 0 of p's decision point
    /// (OFPMP_GROUP bucket counters). This is QCN's reaction-point byte counter — it counts the
    /// traffic the probability governs — so a switch whose own minimal traffic is held back by a
    /// congested link does not raise P because other traffic keeps the port busy. Needs bucket
    /// statistics; since OVS zeroes a group's counters on every MODIFY, the agent reads the
    /// group's counters in the same ordered stream just before each weight write.
    MinimalBucket,
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The emulated congestion point (`[runtime.emulated_cp]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmulatedCpConfig {
    /// Run it on the fabric ports that are local Linux interfaces. Default true. A switch whose
    /// ports are not local interfaces runs without it (logged).
    pub enabled: bool,
    /// Period of the backlog gauge refresh (netlink RTM_GETQDISC on every fabric port), µs.
    /// Default 100 000. A sample reads its own port's backlog when it happens, so this period
    /// only bounds how stale the metrics/API gauge is (and how long a stop takes).
    pub queue_poll_period_us: u64,
    /// How long the sampling thread sleeps between two drains of its packet socket, µs.
    /// Default 2000. The thread never blocks on the socket: a reader waiting in `recv` is woken
    /// by every transmitted frame, in the transmitting thread — on Open vSwitch's userspace
    /// datapath, the one thread that forwards every packet. Draining in batches delays a sample
    /// (and its CNM) by at most this period.
    pub batch_period_us: u64,
    /// PACKET_OUT in_port of injected CNMs; absent = OFPP_CONTROLLER (default). The plan's
    /// table 0 must forward CNMs from this in_port towards their destination (transit), not to
    /// the local agent.
    pub inject_in_port: Option<u32>,
}

impl Default for EmulatedCpConfig {
    fn default() -> Self {
        EmulatedCpConfig {
            enabled: true,
            queue_poll_period_us: 100_000,
            batch_period_us: 2_000,
            inject_in_port: None,
        }
    }
}

/// One switch served by this process (`[[switch]]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchConfig {
    /// A name for logs, metrics and the API (on OVS, the bridge name).
    pub name: String,
    /// `unix:PATH` or `tcp:HOST:PORT`; absent = `unix:/var/run/openvswitch/NAME.mgmt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl SwitchConfig {
    /// The connection target, with the OVS management-socket default.
    pub fn target(&self) -> String {
        self.target
            .clone()
            .unwrap_or_else(|| format!("unix:/var/run/openvswitch/{}.mgmt", self.name))
    }
}

impl RuntimeConfig {
    /// Checks every constant.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(
            self.miss_send_len >= 128,
            "runtime.miss_send_len",
            f64::from(self.miss_send_len),
            "≥ 128 (a whole CNM must reach the agent)",
        )?;
        for (v, field) in [
            (self.port_stats_period_us, "runtime.port_stats_period_us"),
            (
                self.plan_refresh_period_us,
                "runtime.plan_refresh_period_us",
            ),
            (self.tick_period_us, "runtime.tick_period_us"),
            (self.reconnect_min_us, "runtime.reconnect_min_us"),
            (
                self.emulated_cp.queue_poll_period_us,
                "runtime.emulated_cp.queue_poll_period_us",
            ),
            (
                self.emulated_cp.batch_period_us,
                "runtime.emulated_cp.batch_period_us",
            ),
        ] {
            check(v > 0, field, as_f64(v), "> 0")?;
        }
        if self.reconnect_max_us < self.reconnect_min_us {
            return Err(ConfigError::Inconsistent(
                "runtime.reconnect_max_us must be ≥ runtime.reconnect_min_us",
            ));
        }
        Ok(())
    }
}

/// Constants of the QCN-SW policy engine (DESIGN §5, QCN.md "QCN-SW constants").
///
/// The defaults are the configuration fabricflow-sim's sensitivity sweep picked for uniform and
/// ADV+1 traffic together on the 1 056-host reference Dragonfly at 40 Gb/s (sim/RESULTS.md §d:
/// `combined` with fabricflow's two additions, increase step 40, byte limit 30 000, Fb age 20 µs;
/// Gd 1/128 and Pmin 5 % as published). [`PolicyConfig::published`] gives the papers' constants
/// (FOGSim / IEEE 802.1Qau) for reproducing them. Time and byte constants scale with the link
/// rate: on slower links multiply `byte_limit_bytes`'s time and `fb_max_age_us` accordingly
/// (mininet/agent-emulated.toml does it for 2.5–10 Mb/s links).
///
/// Probabilities are in percent (0..=100), as in FOGSim's `portEnrouteMinProb`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Which published variant runs. Default `combined` (source processing + feedback
    /// comparison): with `source_comparison` and `fb_max_age_us` it was the sweep's best; the
    /// published default is `base`.
    pub variant: Variant,
    /// How increases and decreases are applied. Default `aimd`, the published default.
    pub update: UpdatePolicy,
    /// Gd: multiplicative decrease per unit of QntzFb, P ← P·(1 − Gd·QntzFb). Default 1/128, the
    /// IEEE 802.1Qau value, so that R = 1 − Gd·QntzFb ∈ [0.508, 1]. Must keep Gd·63 ≤ 0.5.
    pub gd: f64,
    /// Additive decrease, in percentage points per unit of QntzFb (AIAD, MIAD):
    /// P ← P − ad_percent_per_fb·QntzFb. Default 100·Gd = 0.78125, so that a CNM at P = 100 cuts
    /// the same amount under AD as under MD (QntzFb 63 → −49.2 points). FOGSim subtracts Gd·QntzFb
    /// points (at most 0.49); set this to the value of `gd` to reproduce it exactly.
    pub ad_percent_per_fb: f64,
    /// Additive increase step, in percentage points (AIMD, AIAD). Default 40 (sweep; 1 in
    /// `published`): from the 5 % floor back to 100 in 3 increases. With feedback comparison,
    /// source comparison and ageing deciding when to cut, fast recovery keeps uniform traffic
    /// minimal (sweep, uniform@0.9: 0.67 with step 5, 0.71 with 10, 0.74 with 20, 0.76 with 40
    /// and 60) while ADV+1 stays diverted (0.40 at load 0.4, reaction 120–160 µs). The papers'
    /// tuned value is not public.
    pub increase_step_percent: f64,
    /// Multiplicative increase fraction x (MIMD, MIAD): P ← min(100, P·(1 + x)). Default 0.02:
    /// near P = 50 one increase moves P by one point, like the additive default. FOGSim multiplies
    /// by its R_AI; x = R_AI − 1.
    pub mi_increase_fraction: f64,
    /// B: bytes that must leave a port since its last CNM or increase to earn one increase.
    /// Default 30 000 (sweep; `published`: 150 000, the IEEE 802.1Qau reaction point's byte
    /// counter, QCN.md) — 6 µs of a busy 40 Gb/s port. Scale it with the link rate on an emulated
    /// fabric (mininet/agent-emulated.toml uses 30 000 for 2.5–10 Mb/s links).
    pub byte_limit_bytes: u64,
    /// Pmin: floor of P, in percent. Default 5: keeps ≈ 13 of the 255 weight quanta on the
    /// minimal port so the minimal path keeps being probed and its byte counter keeps running;
    /// under ADV+1 on the reference Dragonfly (p=4, a=8, h=4) at load 0.4 the minimal global
    /// link's fair share is ≈ 8 % of the group's traffic, above this floor.
    pub p_min_percent: f64,
    /// th1: feedback comparison increases P(p) when Fb(p) ≤ Fb_avg + th1 (QntzFb units).
    /// Default 0, as in FOGSim and DESIGN §5.
    pub fbcomp_th1: f64,
    /// th2: feedback comparison decreases P(p) when Fb(p) > Fb_avg + th2 (QntzFb units); nothing
    /// happens in between. Default 0. Must be ≥ 0 and ≥ th1.
    pub fbcomp_th2: f64,
    /// Period of the idle-port increase timer, µs; absent = no timer (FOGSim has none). When set,
    /// a port that has seen neither a CNM nor an increase for a whole period gets one increase
    /// per elapsed period on the next `Tick`. Default: absent, because the byte counter already
    /// recovers every port that carries traffic (transit included) and a port without traffic
    /// has no flows to steer; set it (e.g. 15 000, the 802.1Qau RP timer) when idle ports must
    /// recover before their traffic returns.
    pub increase_timer_period_us: Option<u64>,
    /// Fb ageing, µs (fabricflow's addition, not in the papers; 0 = the published rule;
    /// default 20 µs, a few CNM intervals of a congested 40 Gb/s port; 0 turns it off):
    /// with feedback comparison, a port's stored Fb older than this counts as 0 in Fb_avg. The
    /// published rule keeps every stored Fb forever, so after uniform congestion ends every port
    /// still holds a high Fb and a later adversarial pattern never rises above the average
    /// (fabricflow-sim, sim/RESULTS.md): ageing lets ports that stopped receiving CNMs drop out.
    pub fb_max_age_us: u64,
    /// Source comparison (fabricflow's addition; default true, false = the published rule): with
    /// source processing *and* feedback comparison (`combined`), a self-generated CNM goes
    /// through the same comparison as a received one (increase, dead band or decrease by
    /// Fb − Fb_avg) instead of a plain decrease, without being stored. The published rule's plain
    /// self decrease bypasses the comparison, so `combined` loses uniform throughput like
    /// `source-processing` does.
    pub source_comparison: bool,
    /// What feedback comparison compares Fb(p) with (fabricflow's addition; default
    /// `fabric-average`, the published rule). `candidates`: the congestion of p's own
    /// non-minimal candidates instead of the mean over all fabric ports — per candidate port the
    /// larger of the Fb this switch's congestion point last found there and the Fb last received
    /// on it (both subject to `fb_max_age_us`), averaged over the candidates. Diverting only pays
    /// when the candidates are less congested than the minimal path; the fabric average cannot
    /// tell that when a switch injects few flows (most ports hold Fb 0, so every CNM is "above
    /// average"), as on Mininet's Dragonfly(2,4,2) under uniform traffic (mininet/README.md).
    pub fbcomp_reference: FbReference,
}

/// The reference feedback comparison measures Fb(p) against (see `PolicyConfig::fbcomp_reference`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FbReference {
    /// Fb_avg over all fabric ports (DESIGN §5, FOGSim).
    #[default]
    FabricAverage,
    /// The mean congestion of p's non-minimal candidate ports.
    Candidates,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            variant: Variant::Combined,
            increase_step_percent: 40.0,
            byte_limit_bytes: 30_000,
            fb_max_age_us: 20,
            source_comparison: true,
            ..PolicyConfig::published()
        }
    }
}

impl PolicyConfig {
    /// The published constants: variant `base`, Gd 1/128, step 1 point per 150 000 octets
    /// (IEEE 802.1Qau's byte counter), Pmin 5 %, thresholds 0, no timer, neither of fabricflow's
    /// additions.
    pub fn published() -> Self {
        PolicyConfig {
            variant: Variant::Base,
            update: UpdatePolicy::Aimd,
            gd: 1.0 / 128.0,
            ad_percent_per_fb: 100.0 / 128.0,
            increase_step_percent: 1.0,
            mi_increase_fraction: 0.02,
            byte_limit_bytes: 150_000,
            p_min_percent: 5.0,
            fbcomp_th1: 0.0,
            fbcomp_th2: 0.0,
            increase_timer_period_us: None,
            fb_max_age_us: 0,
            source_comparison: false,
            fbcomp_reference: FbReference::FabricAverage,
        }
    }
}

/// When a changed probability is written as new bucket weights (DESIGN §4: an OVS weight MODIFY
/// rebuilds the dp_hash table and moves many flows, so writes must be few and meaningful).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WeightsConfig {
    /// Minimum time between two writes of one group, µs. Default 10 000 (10 ms): at most 100
    /// table rebuilds per second per group, yet each new split lives for several RTTs of a
    /// data-centre fabric before the next one, and P's own dynamics (one increase per 120 µs of
    /// traffic at 10 Gb/s) are far faster, so pending changes are coalesced.
    pub min_update_interval_us: u64,
    /// A write is considered only when some bucket weight moves by at least this many quanta
    /// (1/255 each). Default 1: any change OVS can represent.
    pub min_change_quanta: u16,
    /// Per-group overrides of `min_update_interval_us`.
    pub group_overrides: Vec<GroupOverride>,
}

impl Default for WeightsConfig {
    fn default() -> Self {
        WeightsConfig {
            min_update_interval_us: 10_000,
            min_change_quanta: 1,
            group_overrides: vec![],
        }
    }
}

impl WeightsConfig {
    /// The minimum update interval of `group_id`, in nanoseconds.
    pub fn min_update_interval_ns(&self, group_id: u32) -> u64 {
        let us = self
            .group_overrides
            .iter()
            .find(|o| o.group_id == group_id)
            .map_or(self.min_update_interval_us, |o| o.min_update_interval_us);
        us.saturating_mul(1_000)
    }
}

/// A group whose minimum update interval differs from the default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupOverride {
    /// OpenFlow group id.
    pub group_id: u32,
    /// Minimum time between two writes of this group, µs.
    pub min_update_interval_us: u64,
}

/// The QCN congestion point (IEEE 802.1Qau; QCN.md "Congestion point").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CpConfig {
    /// Qeq, the queue set point in octets. Default 26 000 (IEEE8021-CN-MIB). On an emulated
    /// fabric with queues of tens of packets scale it to the configured queue (e.g. 15 000 for a
    /// 50-packet qdisc of 1500-octet frames: a third of the queue).
    pub qeq_bytes: u64,
    /// w, the weight of the queue's growth Qδ in Fb = −(Qoff + w·Qδ). Default 2.
    pub w: f64,
    /// Sampling base in octets: the interval at QntzFb < 8. The table of 802.1Qau (150, 75, 50,
    /// 37.5, 30, 25, 21.5, 18.5 KB) is scaled by `sampling_base_bytes / 150 000`. Default 150 000.
    /// Scale it down with Qeq on an emulated fabric.
    pub sampling_base_bytes: u64,
    /// Relative randomisation of every sampling interval, ± this fraction. Default 0.15 (±15 %),
    /// to avoid synchronisation between congestion points. Must be in [0, 1).
    pub sampling_jitter_fraction: f64,
    /// fabricflow's addition for loaded TCP fabrics, emulated CP only (off at the default 1; the
    /// simulator ignores it): a congested sample yields a CNM only if at least this many
    /// distinct hosts sent data frames through the port within `source_window_us`. TCP fills
    /// every bottleneck queue whatever the oversubscription, so Fb alone cannot tell a link a
    /// few sources fill from a many-to-one hot spot. On a loaded fabric diverting the few
    /// mostly loads other full links; on an idle one it would pay, and the gate forgoes that.
    pub min_sources: u32,
    /// The window of `min_sources`, µs. Default 1 s: long enough for every active TCP source
    /// of a slow emulated link to show a frame.
    pub source_window_us: u64,
}

impl Default for CpConfig {
    fn default() -> Self {
        CpConfig {
            qeq_bytes: 26_000,
            w: 2.0,
            sampling_base_bytes: 150_000,
            sampling_jitter_fraction: 0.15,
            min_sources: 1,
            source_window_us: 1_000_000,
        }
    }
}

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The text is not valid TOML for this schema (syntax, type, unknown key).
    #[error("invalid configuration: {0}")]
    Toml(#[from] toml::de::Error),
    /// A numeric constant is outside its valid range.
    #[error("{field} = {value} is out of range: {expected}")]
    OutOfRange {
        /// Dotted key, e.g. `policy.gd`.
        field: &'static str,
        /// The value given.
        value: f64,
        /// The valid range, in words.
        expected: &'static str,
    },
    /// Two constants contradict each other.
    #[error("inconsistent configuration: {0}")]
    Inconsistent(&'static str),
}

fn check(
    ok: bool,
    field: &'static str,
    value: f64,
    expected: &'static str,
) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::OutOfRange {
            field,
            value,
            expected,
        })
    }
}

#[allow(clippy::cast_precision_loss)] // values only reported in error messages
fn as_f64(v: u64) -> f64 {
    v as f64
}

impl PolicyConfig {
    /// Checks every constant; the policy engine accepts only validated configurations.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let max_fb = f64::from(QNTZ_FB_MAX);
        check(
            self.gd.is_finite() && self.gd > 0.0 && self.gd * max_fb <= 0.5,
            "policy.gd",
            self.gd,
            "0 < gd and gd·63 ≤ 0.5 (R = 1 − gd·QntzFb must stay in [0.5, 1])",
        )?;
        check(
            self.ad_percent_per_fb.is_finite()
                && self.ad_percent_per_fb > 0.0
                && self.ad_percent_per_fb * max_fb <= 100.0,
            "policy.ad_percent_per_fb",
            self.ad_percent_per_fb,
            "0 < ad_percent_per_fb and ad_percent_per_fb·63 ≤ 100",
        )?;
        check(
            self.increase_step_percent.is_finite()
                && self.increase_step_percent > 0.0
                && self.increase_step_percent <= 100.0,
            "policy.increase_step_percent",
            self.increase_step_percent,
            "0 < step ≤ 100",
        )?;
        check(
            self.mi_increase_fraction.is_finite()
                && self.mi_increase_fraction > 0.0
                && self.mi_increase_fraction <= 1.0,
            "policy.mi_increase_fraction",
            self.mi_increase_fraction,
            "0 < x ≤ 1 (P ← P·(1 + x) at most doubles)",
        )?;
        check(
            self.byte_limit_bytes > 0,
            "policy.byte_limit_bytes",
            as_f64(self.byte_limit_bytes),
            "> 0",
        )?;
        check(
            self.p_min_percent.is_finite()
                && self.p_min_percent >= 0.0
                && self.p_min_percent < 100.0,
            "policy.p_min_percent",
            self.p_min_percent,
            "0 ≤ Pmin < 100",
        )?;
        if self.update.multiplicative_increase() && self.p_min_percent <= 0.0 {
            return Err(ConfigError::Inconsistent(
                "a multiplicative-increase policy (mimd, miad) needs p_min_percent > 0: P = 0 never grows",
            ));
        }
        check(
            self.fbcomp_th1.is_finite() && self.fbcomp_th1.abs() <= max_fb,
            "policy.fbcomp_th1",
            self.fbcomp_th1,
            "−63 ≤ th1 ≤ 63",
        )?;
        check(
            self.fbcomp_th2.is_finite() && self.fbcomp_th2 >= 0.0 && self.fbcomp_th2 <= max_fb,
            "policy.fbcomp_th2",
            self.fbcomp_th2,
            "0 ≤ th2 ≤ 63 (a negative th2 would turn the decrease into an increase)",
        )?;
        if self.fbcomp_th1 > self.fbcomp_th2 {
            return Err(ConfigError::Inconsistent(
                "policy.fbcomp_th1 must not exceed policy.fbcomp_th2",
            ));
        }
        if let Some(t) = self.increase_timer_period_us {
            check(
                t > 0,
                "policy.increase_timer_period_us",
                as_f64(t),
                "> 0 (omit the key to disable)",
            )?;
        }
        Ok(())
    }

    /// The Fb age limit in nanoseconds, if enabled (0 = off, the published rule).
    pub fn fb_max_age_ns(&self) -> Option<u64> {
        (self.fb_max_age_us > 0).then(|| self.fb_max_age_us.saturating_mul(1_000))
    }

    /// The increase timer's period in nanoseconds, if enabled.
    pub fn increase_timer_period_ns(&self) -> Option<u64> {
        self.increase_timer_period_us
            .map(|us| us.saturating_mul(1_000))
    }
}

impl WeightsConfig {
    /// Checks every constant.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(
            (1..=fabricflow_proto::select_weights::WEIGHT_QUANTA).contains(&self.min_change_quanta),
            "weights.min_change_quanta",
            f64::from(self.min_change_quanta),
            "1 ≤ min_change_quanta ≤ 255",
        )?;
        let mut ids: Vec<u32> = self.group_overrides.iter().map(|o| o.group_id).collect();
        ids.sort_unstable();
        if ids.windows(2).any(|w| w.first() == w.get(1)) {
            return Err(ConfigError::Inconsistent(
                "weights.group_overrides lists a group twice",
            ));
        }
        Ok(())
    }
}

impl CpConfig {
    /// Checks every constant.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(
            self.qeq_bytes > 0,
            "cp.qeq_bytes",
            as_f64(self.qeq_bytes),
            "> 0",
        )?;
        // Qeq·(2w+1) must stay far from u64/f64 trouble: 1 TB is beyond any queue.
        check(
            self.qeq_bytes <= 1 << 40,
            "cp.qeq_bytes",
            as_f64(self.qeq_bytes),
            "≤ 2^40",
        )?;
        check(
            self.w.is_finite() && self.w > 0.0 && self.w <= 64.0,
            "cp.w",
            self.w,
            "0 < w ≤ 64",
        )?;
        check(
            self.sampling_base_bytes > 0 && self.sampling_base_bytes <= 1 << 40,
            "cp.sampling_base_bytes",
            as_f64(self.sampling_base_bytes),
            "0 < base ≤ 2^40",
        )?;
        check(
            self.sampling_jitter_fraction.is_finite()
                && (0.0..1.0).contains(&self.sampling_jitter_fraction),
            "cp.sampling_jitter_fraction",
            self.sampling_jitter_fraction,
            "0 ≤ jitter < 1",
        )?;
        check(
            self.min_sources >= 1,
            "cp.min_sources",
            f64::from(self.min_sources),
            "≥ 1 (1: every congested sample yields a CNM, as in 802.1Qau)",
        )?;
        check(
            self.source_window_us > 0 && self.source_window_us <= 3_600_000_000,
            "cp.source_window_us",
            as_f64(self.source_window_us),
            "0 < window ≤ 1 h",
        )?;
        Ok(())
    }
}

impl AgentConfig {
    /// Checks every section.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.policy.validate()?;
        self.weights.validate()?;
        self.cp.validate()?;
        self.runtime.validate()?;
        let mut names: Vec<&str> = self.switch.iter().map(|s| s.name.as_str()).collect();
        names.sort_unstable();
        if names.windows(2).any(|w| w.first() == w.get(1)) {
            return Err(ConfigError::Inconsistent(
                "a [[switch]] name is listed twice",
            ));
        }
        Ok(())
    }

    /// Parses and validates TOML text.
    pub fn from_toml_str(text: &str) -> Result<Self, ConfigError> {
        let cfg: AgentConfig = toml::from_str(text)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Reads, parses and validates a TOML file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_toml_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        AgentConfig::default().validate().unwrap();
        let p = PolicyConfig::default();
        assert_eq!(p.gd, 1.0 / 128.0);
        assert_eq!(p.variant, Variant::Combined);
        assert_eq!(p.update, UpdatePolicy::Aimd);
        assert!(p.source_comparison);
        assert_eq!(p.fb_max_age_us, 20);
        let published = PolicyConfig::published();
        published.validate().unwrap();
        assert_eq!(published.variant, Variant::Base);
        assert_eq!(published.increase_step_percent, 1.0);
        assert_eq!(published.byte_limit_bytes, 150_000);
        assert!(!published.source_comparison);
        assert_eq!(published.fb_max_age_us, 0);
    }

    #[test]
    fn empty_toml_is_the_default() {
        assert_eq!(
            AgentConfig::from_toml_str("").unwrap(),
            AgentConfig::default()
        );
    }

    #[test]
    fn parses_names_and_keys() {
        let cfg = AgentConfig::from_toml_str(
            r#"
            [policy]
            variant = "feedback-comparison"
            update = "miad"
            increase_timer_period_us = 15000
            [weights]
            min_update_interval_us = 2000
            [[weights.group_overrides]]
            group_id = 1005
            min_update_interval_us = 50
            [cp]
            qeq_bytes = 15000
            "#,
        )
        .unwrap();
        assert_eq!(cfg.policy.variant, Variant::FeedbackComparison);
        assert_eq!(cfg.policy.update, UpdatePolicy::Miad);
        assert_eq!(cfg.policy.increase_timer_period_ns(), Some(15_000_000));
        assert_eq!(cfg.weights.min_update_interval_ns(1005), 50_000);
        assert_eq!(cfg.weights.min_update_interval_ns(1006), 2_000_000);
        assert_eq!(cfg.cp.qeq_bytes, 15_000);
    }

    #[test]
    fn rejects_unknown_keys_and_bad_names() {
        assert!(matches!(
            AgentConfig::from_toml_str("[policy]\ngd_typo = 1"),
            Err(ConfigError::Toml(_))
        ));
        assert!(matches!(
            AgentConfig::from_toml_str("[policy]\nvariant = \"valiant\""),
            Err(ConfigError::Toml(_))
        ));
    }

    #[test]
    fn gd_must_keep_r_in_half_to_one() {
        // 1/126 gives R = 0.5 exactly at QntzFb 63: allowed.
        let ok = PolicyConfig {
            gd: 1.0 / 126.0,
            ..PolicyConfig::default()
        };
        ok.validate().unwrap();
        let bad = PolicyConfig {
            gd: 1.0 / 120.0,
            ..PolicyConfig::default()
        };
        assert!(matches!(
            bad.validate(),
            Err(ConfigError::OutOfRange {
                field: "policy.gd",
                ..
            })
        ));
        let zero = PolicyConfig {
            gd: 0.0,
            ..PolicyConfig::default()
        };
        assert!(zero.validate().is_err());
        let nan = PolicyConfig {
            gd: f64::NAN,
            ..PolicyConfig::default()
        };
        assert!(nan.validate().is_err());
    }

    #[test]
    fn other_ranges() {
        let d = PolicyConfig::default;
        assert!(PolicyConfig {
            p_min_percent: 100.0,
            ..d()
        }
        .validate()
        .is_err());
        assert!(PolicyConfig {
            p_min_percent: -1.0,
            ..d()
        }
        .validate()
        .is_err());
        PolicyConfig {
            p_min_percent: 0.0,
            ..d()
        }
        .validate()
        .unwrap();
        assert!(matches!(
            PolicyConfig {
                p_min_percent: 0.0,
                update: UpdatePolicy::Mimd,
                ..d()
            }
            .validate(),
            Err(ConfigError::Inconsistent(_))
        ));
        assert!(PolicyConfig {
            byte_limit_bytes: 0,
            ..d()
        }
        .validate()
        .is_err());
        assert!(PolicyConfig {
            increase_step_percent: 0.0,
            ..d()
        }
        .validate()
        .is_err());
        assert!(PolicyConfig {
            mi_increase_fraction: 0.0,
            ..d()
        }
        .validate()
        .is_err());
        assert!(PolicyConfig {
            fbcomp_th2: -1.0,
            fbcomp_th1: -2.0,
            ..d()
        }
        .validate()
        .is_err());
        assert!(matches!(
            PolicyConfig {
                fbcomp_th1: 3.0,
                fbcomp_th2: 2.0,
                ..d()
            }
            .validate(),
            Err(ConfigError::Inconsistent(_))
        ));
        PolicyConfig {
            fbcomp_th1: -3.0,
            fbcomp_th2: 2.0,
            ..d()
        }
        .validate()
        .unwrap();
        assert!(PolicyConfig {
            increase_timer_period_us: Some(0),
            ..d()
        }
        .validate()
        .is_err());
        assert!(WeightsConfig {
            min_change_quanta: 0,
            ..WeightsConfig::default()
        }
        .validate()
        .is_err());
        assert!(CpConfig {
            sampling_jitter_fraction: 1.0,
            ..CpConfig::default()
        }
        .validate()
        .is_err());
        assert!(CpConfig {
            qeq_bytes: 0,
            ..CpConfig::default()
        }
        .validate()
        .is_err());
        assert!(CpConfig {
            w: 0.0,
            ..CpConfig::default()
        }
        .validate()
        .is_err());
        assert!(CpConfig {
            min_sources: 0,
            ..CpConfig::default()
        }
        .validate()
        .is_err());
        assert!(CpConfig {
            source_window_us: 0,
            ..CpConfig::default()
        }
        .validate()
        .is_err());
    }

    #[test]
    fn duplicate_override_is_refused() {
        let o = GroupOverride {
            group_id: 7,
            min_update_interval_us: 1,
        };
        let w = WeightsConfig {
            group_overrides: vec![o.clone(), o],
            ..WeightsConfig::default()
        };
        assert!(matches!(w.validate(), Err(ConfigError::Inconsistent(_))));
    }

    #[test]
    fn serialises_back_to_the_same_config() {
        let cfg = AgentConfig {
            policy: PolicyConfig {
                increase_timer_period_us: Some(15_000),
                ..PolicyConfig::default()
            },
            ..AgentConfig::default()
        };
        let text = toml::to_string_pretty(&cfg).unwrap();
        assert_eq!(AgentConfig::from_toml_str(&text).unwrap(), cfg);
        let text = toml::to_string_pretty(&AgentConfig::default()).unwrap();
        assert_eq!(
            AgentConfig::from_toml_str(&text).unwrap(),
            AgentConfig::default()
        );
    }

    #[test]
    fn example_file_is_valid() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/agent.example.toml");
        let cfg = AgentConfig::from_file(&path).unwrap();
        // The example documents the defaults; it must not drift from them.
        assert_eq!(cfg, AgentConfig::default());
    }
}
