//! Controller configuration (TOML or YAML, chosen by the file's extension).
//!
//! ```toml
//! fabric = "dragonfly:p=2,a=4,h=2"
//! openflow_listen = "0.0.0.0:6653"
//! http_listen = "127.0.0.1:9653"
//! http_token_file = "/etc/fabricflow/api-token"   # enables the API's write actions
//! state_file = "/var/lib/fabricflow/controller-state.json"   # memory store: keep drains
//! store = "memory"                  # or "etcd://10.0.0.1:2379,10.0.0.2:2379"
//! log_format = "text"               # or "json"
//! cookie = 0x0fabf10a00000001        # TOML accepts hex integers; the agent must agree
//! agent_controller_id = 4011         # 0x0fab: the agent's NXT_SET_CONTROLLER_ID
//! [tls]                             # optional
//! cert = "/etc/fabricflow/controller.crt"
//! key = "/etc/fabricflow/controller.key"
//! client_ca = "/etc/fabricflow/switch-ca.crt"   # optional: verify switch certificates
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::session::{SessionConfig, SyncMethod};
use fabricflow_proto::openflow::channel::ChannelConfig;

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config {path}: unknown extension (use .toml, .yaml or .yml)")]
    UnknownExtension { path: PathBuf },
    #[error("config {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("config field `{field}`: {reason}")]
    Invalid { field: &'static str, reason: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// OpenFlow over TLS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM server certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
    /// PEM CA bundle: when set, switches must present a certificate it signed.
    #[serde(default)]
    pub client_ca: Option<PathBuf>,
}

/// Where state lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSpec {
    Memory,
    /// etcd endpoints as `http://host:port`.
    Etcd(Vec<String>),
}

impl StoreSpec {
    pub fn parse(s: &str) -> Result<StoreSpec, ConfigError> {
        if s.is_empty() || s == "memory" {
            return Ok(StoreSpec::Memory);
        }
        let Some(rest) = s.strip_prefix("etcd://") else {
            return Err(ConfigError::Invalid {
                field: "store",
                reason: format!("`{s}`: expected `memory` or `etcd://HOST:PORT[,HOST:PORT…]`"),
            });
        };
        let eps: Vec<String> = rest
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|e| format!("http://{e}"))
            .collect();
        if eps.is_empty() {
            return Err(ConfigError::Invalid {
                field: "store",
                reason: "etcd:// needs at least one HOST:PORT".into(),
            });
        }
        for e in rest.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let port_ok = e
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
            if !port_ok {
                return Err(ConfigError::Invalid {
                    field: "store",
                    reason: format!("etcd endpoint `{e}` is not HOST:PORT"),
                });
            }
        }
        Ok(StoreSpec::Etcd(eps))
    }
}

fn default_of_listen() -> SocketAddr {
    SocketAddr::from(([0, 0, 0, 0], 6653))
}
fn default_http_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 9653))
}
fn default_store() -> String {
    "memory".into()
}
/// The planner's and the agent's cookie: all three must agree, or the agent would not
/// recognise the plan's groups.
fn default_cookie() -> u64 {
    crate::plan::DEFAULT_COOKIE
}
/// The planner's and the agent's controller id for CNM packet-ins.
fn default_agent_id() -> u16 {
    crate::plan::DEFAULT_AGENT_CONTROLLER_ID
}
fn default_group_min() -> u32 {
    1000
}
fn default_group_max() -> u32 {
    999_999
}
fn default_echo_ms() -> u64 {
    5000
}
fn default_echo_timeout_ms() -> u64 {
    15000
}
fn default_handshake_ms() -> u64 {
    10000
}
fn default_partial_ms() -> u64 {
    10000
}
fn default_echo_rate() -> u32 {
    100
}
fn default_lldp_ms() -> u64 {
    1000
}
fn default_lldp_missing() -> u32 {
    3
}
fn default_lease_s() -> i64 {
    3
}
fn default_max_len() -> usize {
    65535
}
fn default_max_unidentified() -> usize {
    1024
}
fn default_controller_id() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "controller".into());
    format!("{host}-{}", std::process::id())
}

/// The whole configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Fabric description handed to the planner (opaque here), e.g. `dragonfly:p=2,a=4,h=2`.
    pub fabric: String,
    #[serde(default = "default_of_listen")]
    pub openflow_listen: SocketAddr,
    #[serde(default)]
    pub tls: Option<TlsConfig>,
    /// `memory` or `etcd://HOST:PORT[,HOST:PORT…]`.
    #[serde(default = "default_store")]
    pub store: String,
    /// The HTTP API and metrics. Loopback by default: the API's write actions carry a bearer
    /// token, and plain HTTP carries it in clear.
    #[serde(default = "default_http_listen")]
    pub http_listen: SocketAddr,
    /// Bearer token of the API's write actions (drain, freeze, resync). Prefer
    /// `http_token_file`; with neither, write actions are disabled (403).
    #[serde(default)]
    pub http_token: Option<String>,
    /// File holding the bearer token (surrounding whitespace ignored), read at start.
    #[serde(default)]
    pub http_token_file: Option<PathBuf>,
    /// With the memory store: the file that keeps the operator's decisions (drained links and
    /// switches, frozen switches) across restarts. Unset, they last as long as the process.
    /// With etcd they live in etcd and this is ignored.
    #[serde(default)]
    pub state_file: Option<PathBuf>,
    #[serde(default)]
    pub log_format: LogFormat,
    /// Cookie of every controller flow.
    #[serde(default = "default_cookie")]
    pub cookie: u64,
    /// Controller id (NXT_SET_CONTROLLER_ID) the agents use; the planner's CNM rules send to it.
    #[serde(default = "default_agent_id")]
    pub agent_controller_id: u16,
    /// Group ids owned by the controller (installed groups in range and not planned are deleted).
    #[serde(default = "default_group_min")]
    pub group_id_min: u32,
    #[serde(default = "default_group_max")]
    pub group_id_max: u32,
    /// This controller's name in the leader election and the API.
    #[serde(default = "default_controller_id")]
    pub controller_id: String,
    #[serde(default = "default_echo_ms")]
    pub echo_interval_ms: u64,
    #[serde(default = "default_echo_timeout_ms")]
    pub echo_timeout_ms: u64,
    #[serde(default = "default_handshake_ms")]
    pub handshake_timeout_ms: u64,
    #[serde(default = "default_partial_ms")]
    pub partial_message_timeout_ms: u64,
    #[serde(default = "default_echo_rate")]
    pub max_echo_requests_per_sec: u32,
    #[serde(default = "default_max_len")]
    pub max_message_len: usize,
    /// Connections accepted but not yet identified by a FEATURES_REPLY (TLS and OpenFlow
    /// handshakes in progress) held at once; more are closed at accept, so a connection storm
    /// or a port scan costs bounded memory. Switches refused this way retry with their backoff.
    #[serde(default = "default_max_unidentified")]
    pub max_unidentified_peers: usize,
    /// `auto`: one atomic bundle per sync, make-before-break steps of plain mods for a switch
    /// that refuses bundles; `bundle`: bundles only; `ordered`: never bundles.
    #[serde(default)]
    pub sync_method: SyncMethod,
    #[serde(default = "default_lldp_ms")]
    pub lldp_interval_ms: u64,
    /// A link end that hears no LLDP for this many periods is failed.
    #[serde(default = "default_lldp_missing")]
    pub lldp_missing_periods: u32,
    /// etcd lease TTL (seconds): a dead leader is replaced about this long after it stops.
    #[serde(default = "default_lease_s")]
    pub etcd_lease_ttl_s: i64,
    /// Initial probability (percent) of routing minimally, written into new SELECT groups'
    /// weights; the agents own the weights afterwards. 100 = minimal, 0 = Valiant.
    #[serde(default = "default_p_minimal")]
    pub p_minimal_percent: f64,
    /// Decision-point group id = `group_base` + minimal port.
    #[serde(default = "default_group_base")]
    pub group_base: u32,
    /// The /8 network of the hosts' IPv4 addresses (`10.G.S.H` with the default).
    #[serde(default = "default_ipv4_base")]
    pub ipv4_base: std::net::Ipv4Addr,
    /// Lossless mode: push this VLAN id at injection and assign PCP by hop phase.
    #[serde(default)]
    pub lossless_vlan: Option<u16>,
    /// Multipath (DRB) plan with this many alternative paths per pair (0..=4) instead of
    /// decision points; for agents running `policy.kind = "drb"`.
    #[serde(default)]
    pub multipath_alternatives: Option<u8>,
    /// Forward CNMs from fabric ports to the culprit's source host instead of the agent (the
    /// InfiniBand CC baseline: hosts throttle, `fabricflow-agent throttle`; agents run
    /// `policy.kind = "static"`). Default false.
    #[serde(default)]
    pub cnm_to_hosts: bool,
    /// How a CNM from a fabric port reaches the agent: `"packet-in"` (default, any switch) or
    /// `"interface"` (dropped by the switch, read by the agent from the port's Linux interface;
    /// Open vSwitch with the agent on the same host).
    #[serde(default)]
    pub cnm_to_agent: crate::plan::CnmToAgent,
    /// How a decision point's SELECT group carries its split: `"slots"` (default: 256 equal
    /// slot buckets, a weight change moves only the flows it must) or `"weights"` (one bucket
    /// per choice, the split in the weights).
    #[serde(default)]
    pub select_layout: crate::plan::SelectLayout,
}

fn default_p_minimal() -> f64 {
    100.0
}

fn default_group_base() -> u32 {
    crate::plan::DEFAULT_GROUP_BASE
}

fn default_ipv4_base() -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::new(10, 0, 0, 0)
}

impl Config {
    /// Loads and validates `path` (`.toml`, `.yaml`, `.yml`).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let cfg: Config = match ext {
            "toml" => toml::from_str(&text).map_err(|e| ConfigError::Parse {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?,
            "yaml" | "yml" => serde_yaml::from_str(&text).map_err(|e| ConfigError::Parse {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?,
            _ => {
                return Err(ConfigError::UnknownExtension {
                    path: path.to_path_buf(),
                })
            }
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// A configuration with every default (tests).
    pub fn with_fabric(fabric: &str) -> Config {
        // Only `fabric` is required, so this cannot fail.
        toml::from_str(&format!("fabric = {fabric:?}")).unwrap_or_else(|_| Config {
            fabric: fabric.into(),
            openflow_listen: default_of_listen(),
            tls: None,
            store: default_store(),
            http_listen: default_http_listen(),
            http_token: None,
            http_token_file: None,
            state_file: None,
            log_format: LogFormat::Text,
            cookie: default_cookie(),
            agent_controller_id: default_agent_id(),
            group_id_min: default_group_min(),
            group_id_max: default_group_max(),
            controller_id: default_controller_id(),
            echo_interval_ms: default_echo_ms(),
            echo_timeout_ms: default_echo_timeout_ms(),
            handshake_timeout_ms: default_handshake_ms(),
            partial_message_timeout_ms: default_partial_ms(),
            max_echo_requests_per_sec: default_echo_rate(),
            max_message_len: default_max_len(),
            max_unidentified_peers: default_max_unidentified(),
            sync_method: SyncMethod::Auto,
            lldp_interval_ms: default_lldp_ms(),
            lldp_missing_periods: default_lldp_missing(),
            etcd_lease_ttl_s: default_lease_s(),
            p_minimal_percent: default_p_minimal(),
            group_base: default_group_base(),
            ipv4_base: default_ipv4_base(),
            lossless_vlan: None,
            multipath_alternatives: None,
            cnm_to_hosts: false,
            cnm_to_agent: crate::plan::CnmToAgent::PacketIn,
            select_layout: crate::plan::SelectLayout::default(),
        })
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.fabric.trim().is_empty() {
            return Err(ConfigError::Invalid {
                field: "fabric",
                reason: "empty".into(),
            });
        }
        StoreSpec::parse(&self.store)?;
        if self.cookie == 0 {
            return Err(ConfigError::Invalid {
                field: "cookie",
                reason: "0 would claim every cookie-less rule".into(),
            });
        }
        if !(0.0..=100.0).contains(&self.p_minimal_percent) {
            return Err(ConfigError::Invalid {
                field: "p_minimal_percent",
                reason: "must be within 0..=100".into(),
            });
        }
        if self.group_base < self.group_id_min || self.group_base > self.group_id_max {
            return Err(ConfigError::Invalid {
                field: "group_base",
                reason: "must lie in group_id_min..=group_id_max, or the controller would not own its own groups".into(),
            });
        }
        if self.group_id_min > self.group_id_max {
            return Err(ConfigError::Invalid {
                field: "group_id_min",
                reason: "greater than group_id_max".into(),
            });
        }
        if !(64..=65535).contains(&self.max_message_len) {
            return Err(ConfigError::Invalid {
                field: "max_message_len",
                reason: "must be within 64..=65535".into(),
            });
        }
        if self.max_unidentified_peers == 0 {
            return Err(ConfigError::Invalid {
                field: "max_unidentified_peers",
                reason: "0 would refuse every switch".into(),
            });
        }
        if self.lldp_interval_ms == 0 || self.echo_interval_ms == 0 {
            return Err(ConfigError::Invalid {
                field: "lldp_interval_ms",
                reason: "intervals must be > 0".into(),
            });
        }
        if self.http_token.is_some() && self.http_token_file.is_some() {
            return Err(ConfigError::Invalid {
                field: "http_token",
                reason: "set http_token or http_token_file, not both".into(),
            });
        }
        if let Some(t) = &self.http_token {
            check_token(t).map_err(|reason| ConfigError::Invalid {
                field: "http_token",
                reason,
            })?;
        }
        if self.etcd_lease_ttl_s < 1 {
            return Err(ConfigError::Invalid {
                field: "etcd_lease_ttl_s",
                reason: "must be ≥ 1".into(),
            });
        }
        Ok(())
    }

    /// The API token: `http_token`, or the contents of `http_token_file` (read now).
    pub fn api_token(&self) -> Result<Option<String>, ConfigError> {
        if let Some(t) = &self.http_token {
            return Ok(Some(t.clone()));
        }
        let Some(path) = &self.http_token_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        let token = text.trim().to_owned();
        check_token(&token).map_err(|reason| ConfigError::Invalid {
            field: "http_token_file",
            reason,
        })?;
        Ok(Some(token))
    }

    pub fn store_spec(&self) -> Result<StoreSpec, ConfigError> {
        StoreSpec::parse(&self.store)
    }

    /// The session settings this configuration implies.
    pub fn session(&self) -> SessionConfig {
        SessionConfig {
            channel: ChannelConfig {
                max_message_len: self.max_message_len,
                handshake_timeout: Duration::from_millis(self.handshake_timeout_ms),
                echo_interval: Duration::from_millis(self.echo_interval_ms),
                echo_timeout: Duration::from_millis(self.echo_timeout_ms),
                partial_message_timeout: Duration::from_millis(self.partial_message_timeout_ms),
                max_echo_requests_per_sec: self.max_echo_requests_per_sec,
                ..ChannelConfig::default()
            },
            cookie: self.cookie,
            owned_groups: self.group_id_min..=self.group_id_max,
            lldp_interval: Duration::from_millis(self.lldp_interval_ms),
            sync_method: self.sync_method,
            ..SessionConfig::default()
        }
    }

    pub fn lldp_missing_after(&self) -> Duration {
        Duration::from_millis(self.lldp_interval_ms * u64::from(self.lldp_missing_periods))
    }
}

/// A token an HTTP header can carry and nobody guesses.
fn check_token(t: &str) -> Result<(), String> {
    if t.len() < 16 {
        return Err("at least 16 characters (e.g. `openssl rand -hex 32`)".into());
    }
    if !t.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("printable ASCII without spaces only".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("ffcfg-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn toml_and_yaml() {
        let t = write(
            "a.toml",
            "fabric = \"dragonfly:p=2,a=4,h=2\"\ncookie = 0x10\nstore = \"etcd://127.0.0.1:2379,h:1\"\n[tls]\ncert = \"c\"\nkey = \"k\"\n",
        );
        let c = Config::load(&t).unwrap();
        assert_eq!(c.cookie, 16);
        assert_eq!(
            c.store_spec().unwrap(),
            StoreSpec::Etcd(vec!["http://127.0.0.1:2379".into(), "http://h:1".into()])
        );
        assert_eq!(c.tls.unwrap().client_ca, None);
        let y = write(
            "b.yaml",
            "fabric: x\nlog_format: json\nhttp_listen: 0.0.0.0:1\n",
        );
        let c = Config::load(&y).unwrap();
        assert_eq!(c.log_format, LogFormat::Json);
        let o = write("o.toml", "fabric = \"x\"\nsync_method = \"ordered\"\n");
        assert_eq!(
            Config::load(&o).unwrap().session().sync_method,
            SyncMethod::Ordered
        );
        assert_eq!(c.store_spec().unwrap(), StoreSpec::Memory);
    }

    #[test]
    fn deploy_examples_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/examples");
        let single = Config::load(&dir.join("controller-single.toml")).unwrap();
        assert_eq!(single.max_unidentified_peers, 1024);
        assert_eq!(single.sync_method, SyncMethod::Auto);
        assert!(single.state_file.is_some(), "drains survive a restart");
        assert_eq!(
            single.api_token().unwrap(),
            None,
            "writes stay off until a token exists"
        );
        let ha = Config::load(&dir.join("controller-ha.yaml")).unwrap();
        assert!(matches!(ha.store_spec().unwrap(), StoreSpec::Etcd(_)));
        assert!(matches!(
            Config::load(&write(
                "i.toml",
                "fabric = \"x\"\nmax_unidentified_peers = 0"
            )),
            Err(ConfigError::Invalid {
                field: "max_unidentified_peers",
                ..
            })
        ));
    }

    #[test]
    fn api_token_from_the_config_or_a_file() {
        let c = Config::with_fabric("x");
        assert_eq!(c.api_token().unwrap(), None);
        let f = write("token", "  0123456789abcdef0123\n");
        let c = Config::load(&write(
            "t.toml",
            &format!("fabric = \"x\"\nhttp_token_file = {f:?}\n"),
        ))
        .unwrap();
        assert_eq!(
            c.api_token().unwrap().as_deref(),
            Some("0123456789abcdef0123")
        );
        let c = Config::load(&write(
            "t2.toml",
            "fabric = \"x\"\nhttp_token = \"0123456789abcdef\"\n",
        ))
        .unwrap();
        assert_eq!(c.api_token().unwrap().as_deref(), Some("0123456789abcdef"));
        for (name, text) in [
            ("t3.toml", "fabric = \"x\"\nhttp_token = \"short\"\n"),
            (
                "t4.toml",
                "fabric = \"x\"\nhttp_token = \"0123456789 abcdef\"\n",
            ),
            (
                "t5.toml",
                "fabric = \"x\"\nhttp_token = \"0123456789abcdef\"\nhttp_token_file = \"/x\"\n",
            ),
        ] {
            assert!(
                matches!(
                    Config::load(&write(name, text)),
                    Err(ConfigError::Invalid {
                        field: "http_token",
                        ..
                    })
                ),
                "{text}"
            );
        }
        let short = write("short-token", "abc\n");
        let c = Config::load(&write(
            "t6.toml",
            &format!("fabric = \"x\"\nhttp_token_file = {short:?}\n"),
        ))
        .unwrap();
        assert!(matches!(
            c.api_token(),
            Err(ConfigError::Invalid {
                field: "http_token_file",
                ..
            })
        ));
        let missing = Config::load(&write(
            "t7.toml",
            "fabric = \"x\"\nhttp_token_file = \"/nonexistent/token\"\n",
        ))
        .unwrap();
        assert!(matches!(missing.api_token(), Err(ConfigError::Read { .. })));
    }

    #[test]
    fn typed_errors() {
        assert!(matches!(
            Config::load(&write("c.ini", "")),
            Err(ConfigError::UnknownExtension { .. })
        ));
        assert!(matches!(
            Config::load(Path::new("/nonexistent/x.toml")),
            Err(ConfigError::Read { .. })
        ));
        assert!(matches!(
            Config::load(&write("d.toml", "fabric = 1")),
            Err(ConfigError::Parse { .. })
        ));
        assert!(matches!(
            Config::load(&write("e.toml", "fabric = \"x\"\nbogus = 1")),
            Err(ConfigError::Parse { .. })
        ));
        assert!(matches!(
            Config::load(&write("f.toml", "fabric = \"x\"\nstore = \"redis://a\"")),
            Err(ConfigError::Invalid { field: "store", .. })
        ));
        assert!(matches!(
            Config::load(&write(
                "g.toml",
                "fabric = \"x\"\nstore = \"etcd://nohost\""
            )),
            Err(ConfigError::Invalid { field: "store", .. })
        ));
        assert!(matches!(
            Config::load(&write("h.toml", "fabric = \"x\"\ncookie = 0")),
            Err(ConfigError::Invalid {
                field: "cookie",
                ..
            })
        ));
    }
}
