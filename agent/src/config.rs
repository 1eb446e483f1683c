//! The agent's configuration file: the sections of every module composed into [`AgentConfig`],
//! the I/O shell's own `[runtime]` and `[[switch]]` sections, TOML loading and validation.
//!
//! Each module defines its own section next to its code ([`PolicyConfig`], [`WeightsConfig`],
//! [`CpConfig`]), so this file imports them and none of them imports it.
//!
//! Loaded from TOML (`deploy/agent.example.toml` lists and explains every key). Every section and
//! key is optional; a missing key takes the default documented with it. Unknown keys are rejected
//! so that a misspelt constant cannot silently fall back to its default.
//!
//! Durations are integers with their unit in the key name (`_us`); the pure core converts them to
//! nanoseconds, the unit of its `now` argument.

use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::cp::CpConfig;
use crate::error::{as_f64, check, ConfigError};
use crate::link::{LinkConfig, PortLinkConfig};
use crate::policy::PolicyConfig;
use crate::weights::WeightsConfig;

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
    /// Links the switch does not describe (default rate, buffer, overrides).
    pub link: LinkConfig,
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
    /// Period of DRB's tick, µs. Default 1000. QCN-SW wakes only when its idle timer or a
    /// deferred write is due, so it has no period.
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
    /// Per-port stall counters from the egress qdiscs (crate::port_stats).
    pub port_stall: PortStallConfig,
    /// How the agent's CNMs (the emulated CP's, relays) leave the switch. Default "interface".
    pub cnm_out: CnmOut,
}

/// How a CNM the agent sends leaves the switch (`runtime.cnm_out`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CnmOut {
    /// Written by the agent on the port the transit table routes the CNM's destination to, when
    /// that port is a local Linux interface (Open vSwitch beside the agent): the switch's
    /// forwarding thread handles no PACKET_OUT. Other ports: as `pipeline`.
    #[default]
    Interface,
    /// PACKET_OUT into the switch's pipeline (in_port `emulated_cp.inject_in_port`).
    Pipeline,
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
            port_stall: PortStallConfig::default(),
            cnm_out: CnmOut::Interface,
        }
    }
}

/// `[runtime.port_stall]`: per-port egress backlog time (not InfiniBand's XmitWait: see
/// crate::port_stats), FITF per interval, exported on `/metrics`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PortStallConfig {
    /// Sample every port of the switches that is a local Linux interface. Default true; a
    /// switch without local interfaces has no series.
    pub enabled: bool,
    /// Backlog poll period (one netlink dump of every qdisc), µs. Default 10 000: ten readings
    /// per interval, cheap (mininet/README.md "Port stall telemetry" has the cost); the
    /// backlog time's resolution is this period.
    pub poll_period_us: u64,
    /// FITF interval, µs. Default 100 000 (the study's 100 ms).
    pub interval_us: u64,
}

impl Default for PortStallConfig {
    fn default() -> Self {
        PortStallConfig {
            enabled: true,
            poll_period_us: 10_000,
            interval_us: 100_000,
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
    /// After a drain that found frames, how long the sampling thread sleeps before the next, µs.
    /// Default 20 000. A reader woken by every frame would be woken in the transmitting thread —
    /// on Open vSwitch's userspace datapath, the one thread that forwards every packet — so a
    /// busy CP drains at most once per period (delaying a sample and its CNM by at most this);
    /// after a drain that found nothing it blocks until a port filter passes a frame. A longer
    /// period sends a busy CP's CNMs to ovs-vswitchd in bursts and sweeps the sockets less
    /// often: 20 ms carries 13 % more than 2 ms on Dragonfly(2,4,2) at 5 Mb/s and the same on
    /// Dragonfly(1,2,3) ADV+1 (mininet/README.md, "CNMs' own cost").
    pub batch_period_us: u64,
    /// PACKET_OUT in_port of injected CNMs; absent = OFPP_CONTROLLER (default). The plan's
    /// table 0 must forward CNMs from this in_port towards their destination (transit), not to
    /// the local agent.
    pub inject_in_port: Option<u32>,
    /// Where a port's frames are tapped. Default `auto`: on the far end of the link, as frames
    /// it *receives*, when the port is a veth whose peer is an interface of this namespace (an
    /// emulated fabric's switch-to-switch link), else on the port itself. A tap on a device's
    /// transmit side makes the kernel clone every frame the device sends before any filter
    /// runs; on the receive side the filter reads the frame in place and only the frames it
    /// passes are copied. `egress`: always the port itself (transmitted frames).
    pub tap: CpTap,
    /// A sample of a port whose qdisc dropped frames since the port's previous sample reads the
    /// queue as full (`crate::cp::sampled_queue_bytes`). Default false.
    pub drops_fill_queue: bool,
    /// A congested sample's QntzFb is multiplied by its port's drop excess over
    /// `drop_excess_onset`: the port's qdisc drop rate (a running mean over about eight gauge
    /// periods) over the mean of the switch's other ports of the same line rate that carry at
    /// least `drop_peer_min_load` of it, each raised by a floor of 0.1 % of the line's
    /// full-frame rate (`crate::cp::drop_excess`). With TCP a full queue reads the same Fb
    /// whatever load is offered to it; its drops grow with that load. Default true
    /// (mininet/README.md "Fb scaled by the port's drop excess").
    pub drop_scaled_fb: bool,
    /// With `drop_scaled_fb`, Fb is scaled by the excess over this (an excess up to it scales
    /// nothing): a uniform permutation's busiest ports drop up to 2.3× their loaded peers. ≥ 1;
    /// default 3.
    pub drop_excess_onset: f64,
    /// With `drop_scaled_fb`, only the peers that sent at least this fraction of their line
    /// rate (a running mean) are compared with; none: no scaling (a lone TCP flow next to an
    /// idle peer drops as an overloaded port does). In [0, 1]; default 0.7.
    pub drop_peer_min_load: f64,
}

/// Where the emulated CP taps a port's frames (`runtime.emulated_cp.tap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpTap {
    /// The far end of a veth link when it is local, else the port itself.
    #[default]
    Auto,
    /// The port's own interface, transmitted frames.
    Egress,
}

impl Default for EmulatedCpConfig {
    fn default() -> Self {
        EmulatedCpConfig {
            enabled: true,
            queue_poll_period_us: 100_000,
            batch_period_us: 20_000,
            inject_in_port: None,
            tap: CpTap::Auto,
            drops_fill_queue: false,
            drop_scaled_fb: true,
            drop_excess_onset: 3.0,
            drop_peer_min_load: 0.7,
        }
    }
}

/// One switch served by this process (`[[switch]]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchConfig {
    /// A name for logs, metrics and the API (on OVS, the bridge name).
    pub name: String,
    /// `unix:PATH` or `tcp:HOST:PORT`; absent = `unix:/var/run/openvswitch/NAME.mgmt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Ports whose line rate or buffer the switch does not report (on Open vSwitch, the shaping
    /// applied to a port's egress): they scale the rate-relative constants.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortLinkConfig>,
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
            (
                self.port_stall.poll_period_us,
                "runtime.port_stall.poll_period_us",
            ),
        ] {
            check(v > 0, field, as_f64(v), "> 0")?;
        }
        let e = &self.emulated_cp;
        check(
            e.drop_excess_onset.is_finite() && e.drop_excess_onset >= 1.0,
            "runtime.emulated_cp.drop_excess_onset",
            e.drop_excess_onset,
            "≥ 1",
        )?;
        check(
            (0.0..=1.0).contains(&e.drop_peer_min_load),
            "runtime.emulated_cp.drop_peer_min_load",
            e.drop_peer_min_load,
            "in [0, 1]",
        )?;
        if self.reconnect_max_us < self.reconnect_min_us {
            return Err(ConfigError::Inconsistent(
                "runtime.reconnect_max_us must be ≥ runtime.reconnect_min_us",
            ));
        }
        if self.port_stall.interval_us < self.port_stall.poll_period_us {
            return Err(ConfigError::Inconsistent(
                "runtime.port_stall.interval_us must be ≥ runtime.port_stall.poll_period_us",
            ));
        }
        Ok(())
    }
}

impl AgentConfig {
    /// Checks every section.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.policy.validate()?;
        self.weights.validate()?;
        self.cp.validate()?;
        self.link.validate()?;
        self.runtime.validate()?;
        for p in self.switch.iter().flat_map(|s| &s.ports) {
            p.validate()?;
        }
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

    /// Parses TOML text, applies `sets` (`section.key=VALUE`, VALUE in TOML syntax, a bare word
    /// taken as a string) in order, then validates: one file plus a few one-off keys, as the
    /// simulator's `--agent-set` and sweeps use it.
    pub fn from_toml_str_with(text: &str, sets: &[String]) -> Result<Self, ConfigError> {
        let mut doc: toml::Table = toml::from_str(text)?;
        for set in sets {
            apply_set(&mut doc, set)?;
        }
        let cfg: AgentConfig = doc.try_into()?;
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

/// Sets one dotted key of `doc` to a TOML value.
fn apply_set(doc: &mut toml::Table, set: &str) -> Result<(), ConfigError> {
    let bad = || ConfigError::Setting(set.to_owned());
    let (key, raw) = set.split_once('=').ok_or_else(bad)?;
    let path: Vec<&str> = key.trim().split('.').collect();
    let Some((last, sections)) = path.split_last() else {
        return Err(bad());
    };
    if path.iter().any(|p| p.is_empty()) {
        return Err(bad());
    }
    let value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t.remove("v").ok_or_else(bad)?,
        Err(_) => toml::Value::String(raw.trim().to_owned()),
    };
    let mut table = doc;
    for sec in sections {
        table = table
            .entry((*sec).to_owned())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or_else(bad)?;
    }
    table.insert((*last).to_owned(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{UpdatePolicy, Variant};

    #[test]
    fn sets_override_the_file_and_are_validated() {
        let sets = [
            "policy.gd=0.0078125".to_owned(),
            "policy.fbcomp_reference=candidates".to_owned(),
            "cp.qeq_buffer_fraction = 0.25".to_owned(),
        ];
        let c = AgentConfig::from_toml_str_with("[policy]\ngd = 0.001\n", &sets).unwrap();
        assert_eq!(c.policy.gd, 0.0078125);
        assert_eq!(c.cp.qeq_buffer_fraction, 0.25);
        assert_eq!(
            c.policy.fbcomp_reference,
            crate::policy::FbReference::Candidates
        );
        for bad in ["policy.gd", "=1", "policy..gd=1", "policy.gd.x=1"] {
            let r = AgentConfig::from_toml_str_with("[policy]\ngd = 0.001\n", &[bad.to_owned()]);
            assert!(r.is_err(), "{bad}");
        }
        for bad in [
            "policy.gd=1.0",
            "runtime.emulated_cp.drop_excess_onset=0.5",
            "runtime.emulated_cp.drop_peer_min_load=1.5",
        ] {
            assert!(
                matches!(
                    AgentConfig::from_toml_str_with("", &[bad.to_owned()]),
                    Err(ConfigError::OutOfRange { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn defaults_are_valid() {
        AgentConfig::default().validate().unwrap();
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
            increase_timer_line_bytes = 15000
            [weights]
            min_update_interval_line_bytes = 2500000
            min_update_interval_buffer_drains = 0
            [[weights.group_overrides]]
            group_id = 1005
            min_update_interval_us = 50
            [cp]
            qeq_buffer_fraction = 0.1
            "#,
        )
        .unwrap();
        assert_eq!(cfg.policy.variant, Variant::FeedbackComparison);
        assert_eq!(cfg.policy.update, UpdatePolicy::Miad);
        assert_eq!(cfg.policy.increase_timer_line_bytes, Some(15_000));
        let link = cfg.link.default_link();
        assert_eq!(cfg.weights.min_update_interval_ns(1005, link), 50_000);
        assert_eq!(cfg.weights.min_update_interval_ns(1006, link), 2_000_000);
        assert_eq!(cfg.cp.at(link).qeq_bytes, 15_000);
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
    fn serialises_back_to_the_same_config() {
        let cfg = AgentConfig {
            policy: PolicyConfig {
                increase_timer_line_bytes: Some(15_000),
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
