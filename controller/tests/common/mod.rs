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
use std::sync::Arc;
use std::time::{Duration, Instant};

use fabricflow_controller::config::Config;
use fabricflow_controller::desired::fixture::LineFixture;
use fabricflow_controller::service::Controller;

pub const COOKIE: u64 = 0x00ff_f10f_0000_0001;

pub mod testbed;

#[allow(unused_imports)]
pub use fabricflow_testkit::ovs::sh;
use fabricflow_testkit::ovs::{self, Bridge, PortKind};

pub fn skip() -> bool {
    ovs::skip("Open vSwitch integration test")
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

/// Bridges of one line fixture: `n` netdev bridges joined by patch ports (port 3 of switch i ↔
/// port 2 of switch i+1), port 1 internal. Deleted on drop.
pub struct Line {
    pub names: Vec<String>,
    pub bridges: Vec<Bridge>,
    pub fixture: Arc<LineFixture>,
}

impl Line {
    pub fn create(tag: &str, dpid_base: u64, n: u32) -> Line {
        let pid = std::process::id() % 10_000;
        let bridges: Vec<Bridge> = (0..n)
            .map(|i| {
                let name = format!("ff{tag}{pid}{i}");
                Bridge::create(
                    &name,
                    dpid_base + u64::from(i),
                    &[("h", 1, PortKind::Internal)],
                )
            })
            .collect();
        for pair in bridges.windows(2) {
            pair[0].patch(3, &pair[1], 2);
        }
        Line {
            names: bridges.iter().map(|b| b.name().to_owned()).collect(),
            bridges,
            fixture: Arc::new(LineFixture::new(dpid_base, n, COOKIE)),
        }
    }

    /// Points every bridge at these controller targets (reconnect backoff 1 s).
    pub fn set_controllers(&self, targets: &[String]) {
        for b in &self.bridges {
            b.set_controllers(targets);
        }
    }

    pub fn ofctl(&self, i: usize, what: &str) -> String {
        self.bridges[i].dump(what)
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
