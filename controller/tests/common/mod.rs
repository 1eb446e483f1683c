//! Helpers for integration tests against the real Open vSwitch (userspace datapath).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fabricflow_controller::config::Config;
use fabricflow_controller::desired::fixture::LineFixture;
use fabricflow_controller::service::Controller;

pub const COOKIE: u64 = 0x00ff_f10f_0000_0001;

pub fn skip() -> bool {
    if std::env::var_os("FABRICFLOW_SKIP_OVS").is_some() {
        eprintln!("FABRICFLOW_SKIP_OVS set: skipping Open vSwitch integration test");
        return true;
    }
    let _ = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/ovs-start.sh"
    ))
    .status();
    false
}

pub fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_test_writer()
        .try_init();
}

pub fn sh(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Bridges of one line fixture: `n` netdev bridges joined by patch ports (port 3 of switch i ↔
/// port 2 of switch i+1), port 1 internal. Deleted on drop.
pub struct Line {
    pub names: Vec<String>,
    pub fixture: Arc<LineFixture>,
}

impl Line {
    pub fn create(tag: &str, dpid_base: u64, n: u32) -> Line {
        let pid = std::process::id() % 10_000;
        let names: Vec<String> = (0..n).map(|i| format!("ff{tag}{pid}{i}")).collect();
        for name in &names {
            let _ = Command::new("ovs-vsctl")
                .args(["--if-exists", "del-br", name])
                .status();
        }
        for (i, name) in names.iter().enumerate() {
            let dpid = format!("other-config:datapath-id={:016x}", dpid_base + i as u64);
            let host = format!("{name}h");
            sh(
                "ovs-vsctl",
                &[
                    "add-br",
                    name,
                    "--",
                    "set",
                    "bridge",
                    name,
                    "datapath_type=netdev",
                    "protocols=OpenFlow13",
                    "fail-mode=secure",
                    &dpid,
                    "--",
                    "add-port",
                    name,
                    &host,
                    "--",
                    "set",
                    "interface",
                    &host,
                    "type=internal",
                    "ofport_request=1",
                ],
            );
        }
        for i in 0..names.len().saturating_sub(1) {
            let (a, b) = (&names[i], &names[i + 1]);
            let pa = format!("{a}r");
            let pb = format!("{b}l");
            sh(
                "ovs-vsctl",
                &[
                    "add-port",
                    a,
                    &pa,
                    "--",
                    "set",
                    "interface",
                    &pa,
                    "type=patch",
                    &format!("options:peer={pb}"),
                    "ofport_request=3",
                    "--",
                    "add-port",
                    b,
                    &pb,
                    "--",
                    "set",
                    "interface",
                    &pb,
                    "type=patch",
                    &format!("options:peer={pa}"),
                    "ofport_request=2",
                ],
            );
        }
        Line {
            names,
            fixture: Arc::new(LineFixture::new(dpid_base, n, COOKIE)),
        }
    }

    /// Points every bridge at these controller targets (reconnect backoff 1 s).
    pub fn set_controllers(&self, targets: &[String]) {
        for name in &self.names {
            let mut args = vec!["set-controller", name.as_str()];
            args.extend(targets.iter().map(String::as_str));
            sh("ovs-vsctl", &args);
            let uuids = sh("ovs-vsctl", &["get", "bridge", name, "controller"]);
            for u in uuids.trim().trim_matches(['[', ']']).split(',') {
                let u = u.trim();
                if !u.is_empty() {
                    sh("ovs-vsctl", &["set", "controller", u, "max_backoff=1000"]);
                }
            }
        }
    }

    pub fn ofctl(&self, i: usize, what: &str) -> String {
        sh("ovs-ofctl", &["-O", "OpenFlow13", what, &self.names[i]])
    }

    /// Controller flows on bridge `i` (lines with our cookie).
    pub fn our_flows(&self, i: usize) -> Vec<String> {
        let cookie = format!("cookie={COOKIE:#x}");
        self.ofctl(i, "dump-flows")
            .lines()
            .filter(|l| l.contains(&cookie))
            .map(|l| l.trim().to_string())
            .collect()
    }

    pub fn groups(&self, i: usize) -> Vec<String> {
        self.ofctl(i, "dump-groups")
            .lines()
            .skip(1)
            .map(|l| l.trim().to_string())
            .collect()
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ovs-vsctl")
                .args(["--if-exists", "del-br", n])
                .status();
        }
    }
}

/// A config listening on loopback (`of_port` 0: any free port) with fast timers.
pub fn config(of_port: u16) -> Config {
    let mut c = Config::with_fabric("fixture:line");
    c.openflow_listen = SocketAddr::from(([127, 0, 0, 1], of_port));
    c.http_listen = SocketAddr::from(([127, 0, 0, 1], 0));
    c.cookie = COOKIE;
    c.lldp_interval_ms = 300;
    c.lldp_missing_periods = 5;
    c.partial_message_timeout_ms = 1000;
    c.handshake_timeout_ms = 3000;
    c
}

/// Polls `f` every 50 ms until it is true or `secs` pass.
pub async fn wait_for(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub fn synced(c: &Controller) -> usize {
    c.shared.metrics.switches_synced.get() as usize
}

pub fn flow_mods(c: &Controller) -> u64 {
    c.shared.metrics.flow_mods_sent.get()
}

pub fn group_mods(c: &Controller) -> u64 {
    c.shared.metrics.group_mods_sent.get()
}

/// A blocking HTTP/1.0 GET; returns (status line, body).
pub fn http_get(addr: SocketAddr, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut r = String::new();
    s.read_to_string(&mut r).unwrap();
    let (head, body) = r.split_once("\r\n\r\n").unwrap_or((&r, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}
