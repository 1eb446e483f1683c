//! The one Open vSwitch fixture of the integration tests: netdev bridges built with
//! `ovs-vsctl` (internal, veth and patch ports at fixed OpenFlow numbers), deleted on drop, and a
//! blocking OpenFlow connection. Test code: failures panic with the command and its stderr.
#![allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

use fabricflow_proto::openflow::framer::Framer;
use fabricflow_proto::openflow::message::{Body, Message};

/// `FABRICFLOW_SKIP_OVS` set: the caller skips its Open vSwitch test. Otherwise Open vSwitch is
/// started (userspace datapath) if it is not running.
pub fn skip(what: &str) -> bool {
    if std::env::var_os("FABRICFLOW_SKIP_OVS").is_some() {
        eprintln!("FABRICFLOW_SKIP_OVS set: skipping {what}");
        return true;
    }
    let _ = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/ovs-start.sh"
    ))
    .status();
    false
}

/// Runs a command; panics with its stderr if it fails.
pub fn sh(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap_or_else(|e| {
        panic!("cannot run {cmd}: {e} (is Open vSwitch installed? run scripts/install-deps.sh)")
    });
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Polls `f` until it returns `Some`, or panics after `secs`.
pub fn wait_for<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A port to create on a bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortKind {
    /// An internal port.
    Internal,
    /// A veth whose peer (`<name>w`) stays in the root namespace.
    Veth,
}

/// A netdev OpenFlow 1.3 bridge in secure fail mode, deleted (with its veths) on drop.
#[derive(Debug)]
pub struct Bridge {
    name: String,
    veths: Vec<String>,
}

impl Bridge {
    /// A unique bridge name for `tag` in this process (interface names are ≤ 15 characters).
    pub fn unique_name(tag: &str) -> String {
        format!("ff{tag}{}", std::process::id() % 100_000)
    }

    /// Creates bridge `name` with datapath id `dpid` and `ports` (name suffix, OpenFlow number,
    /// kind); the port interface is `<name><suffix>`. Any bridge left by an earlier run goes.
    pub fn create(name: &str, dpid: u64, ports: &[(&str, u32, PortKind)]) -> Bridge {
        let _ = Command::new("ovs-vsctl")
            .args(["--if-exists", "del-br", name])
            .status();
        let mut b = Bridge {
            name: name.to_owned(),
            veths: Vec::new(),
        };
        let mut args: Vec<String> = vec![
            "add-br".into(),
            name.into(),
            "--".into(),
            "set".into(),
            "bridge".into(),
            name.into(),
            "datapath_type=netdev".into(),
            "protocols=OpenFlow13".into(),
            "fail-mode=secure".into(),
            format!("other-config:datapath-id={dpid:016x}"),
            // No hidden in-band flows: the tests compare dumps with plans.
            "other-config:disable-in-band=true".into(),
        ];
        for (suffix, no, kind) in ports {
            let iface = format!("{name}{suffix}");
            if *kind == PortKind::Veth {
                let peer = format!("{name}w");
                let _ = Command::new("ip").args(["link", "del", &iface]).status();
                sh(
                    "ip",
                    &["link", "add", &iface, "type", "veth", "peer", "name", &peer],
                );
                sh("ip", &["link", "set", &iface, "up"]);
                sh("ip", &["link", "set", &peer, "up"]);
                b.veths.push(iface.clone());
            }
            args.extend(["--".into(), "add-port".into(), name.into(), iface.clone()]);
            args.extend(["--".into(), "set".into(), "interface".into(), iface]);
            if *kind == PortKind::Internal {
                args.push("type=internal".into());
            }
            args.push(format!("ofport_request={no}"));
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        sh("ovs-vsctl", &refs);
        b
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The bridge's OpenFlow management socket.
    pub fn mgmt_socket(&self) -> String {
        format!("/var/run/openvswitch/{}.mgmt", self.name)
    }

    /// `ovs-ofctl -O OpenFlow13 ARGS…`.
    pub fn ofctl(&self, args: &[&str]) -> String {
        let mut a = vec!["-O", "OpenFlow13"];
        a.extend_from_slice(args);
        sh("ovs-ofctl", &a)
    }

    /// `ovs-ofctl -O OpenFlow13 WHAT <bridge>` (dump-flows, dump-groups, …).
    pub fn dump(&self, what: &str) -> String {
        self.ofctl(&[what, &self.name])
    }

    /// Cables port `a_no` of `self` to port `b_no` of `other` with a patch pair (interfaces
    /// `<bridge>p<no>`).
    pub fn patch(&self, a_no: u32, other: &Bridge, b_no: u32) {
        let (pa, pb) = (self.patch_port(a_no), other.patch_port(b_no));
        let half = |br: &Bridge, me: &str, peer: &str, no: u32| -> Vec<String> {
            vec![
                "--".into(),
                "add-port".into(),
                br.name.clone(),
                me.into(),
                "--".into(),
                "set".into(),
                "interface".into(),
                me.into(),
                "type=patch".into(),
                format!("options:peer={peer}"),
                format!("ofport_request={no}"),
            ]
        };
        let mut args = half(self, &pa, &pb, a_no);
        args.extend(half(other, &pb, &pa, b_no));
        let refs: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
        sh("ovs-vsctl", &refs);
    }

    /// Removes the patch pair [`Bridge::patch`] made: how a patch link goes down, since
    /// `ovs-ofctl mod-port … down` has no effect on patch ports (OVS 3.1 sends no PORT_STATUS).
    pub fn unpatch(&self, a_no: u32, other: &Bridge, b_no: u32) {
        let (pa, pb) = (self.patch_port(a_no), other.patch_port(b_no));
        sh(
            "ovs-vsctl",
            &[
                "del-port",
                &self.name,
                &pa,
                "--",
                "del-port",
                &other.name,
                &pb,
            ],
        );
    }

    fn patch_port(&self, no: u32) -> String {
        format!("{}p{no}", self.name)
    }

    /// Whether OVS reports the bridge connected to (one of) its controllers.
    pub fn is_connected(&self) -> bool {
        controller_records(&self.name)
            .iter()
            .any(|u| sh("ovs-vsctl", &["get", "controller", u, "is_connected"]).trim() == "true")
    }

    /// Points the bridge at these controller targets (reconnect backoff 1 s).
    pub fn set_controllers(&self, targets: &[String]) {
        let mut args = vec!["set-controller", self.name.as_str()];
        args.extend(targets.iter().map(String::as_str));
        sh("ovs-vsctl", &args);
        for u in controller_records(&self.name) {
            sh("ovs-vsctl", &["set", "controller", &u, "max_backoff=1000"]);
        }
    }
}

/// The uuids of `bridge`'s controller records (`ovs-vsctl get bridge B controller`: `[a, b]`).
pub fn controller_records(bridge: &str) -> Vec<String> {
    sh("ovs-vsctl", &["get", "bridge", bridge, "controller"])
        .trim()
        .trim_matches(['[', ']'])
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_owned)
        .collect()
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = Command::new("ovs-vsctl")
            .args(["--if-exists", "del-br", &self.name])
            .status();
        for v in &self.veths {
            let _ = Command::new("ip").args(["link", "del", v]).status();
        }
    }
}

/// A host: a network namespace with one veth into a bridge port, deleted on drop.
#[derive(Debug)]
pub struct Host {
    namespace: String,
    /// The switch-side end (the inner end is `<namespace>i`).
    veth: String,
    ip: String,
}

impl Host {
    /// Namespace `name` with MAC `mac` and IPv4 `ip`/8, cabled to port `port` of
    /// `bridge`. Leftovers of an earlier run with the same name go first.
    pub fn create(name: &str, bridge: &Bridge, port: u32, mac: &str, ip: &str) -> Host {
        let h = Host {
            namespace: name.to_owned(),
            veth: format!("{name}v"),
            ip: ip.to_owned(),
        };
        h.remove();
        let inner = format!("{name}i");
        sh("ip", &["netns", "add", name]);
        sh(
            "ip",
            &[
                "link", "add", &h.veth, "type", "veth", "peer", "name", &inner, "netns", name,
            ],
        );
        sh("ip", &["link", "set", &h.veth, "up"]);
        h.exec(&["ip", "link", "set", &inner, "address", mac]);
        h.exec(&["ip", "addr", "add", &format!("{ip}/8"), "dev", &inner]);
        h.exec(&["ip", "link", "set", &inner, "up"]);
        h.exec(&["ip", "link", "set", "lo", "up"]);
        // Checksums in software: the userspace datapath does not complete offloaded ones.
        let _ = Command::new("ip")
            .args(["netns", "exec", name, "ethtool", "-K", &inner, "tx", "off"])
            .output();
        sh(
            "ovs-vsctl",
            &[
                "add-port",
                bridge.name(),
                &h.veth,
                "--",
                "set",
                "interface",
                &h.veth,
                &format!("ofport_request={port}"),
            ],
        );
        h
    }

    /// Runs a command in the namespace; panics if it fails.
    pub fn exec(&self, args: &[&str]) -> String {
        let mut v = vec!["netns", "exec", self.namespace.as_str()];
        v.extend_from_slice(args);
        sh("ip", &v)
    }

    pub fn ip(&self) -> &str {
        &self.ip
    }

    /// The host's network namespace (for commands run in the background).
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// `count` pings (50 ms apart, 1 s wait) to `ip`; how many were answered.
    pub fn ping(&self, ip: &str, count: u32) -> u32 {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.namespace, "ping", "-n", "-q", "-c"])
            .arg(count.to_string())
            .args(["-i", "0.05", "-W", "1", ip])
            .output()
            .unwrap();
        // "3 packets transmitted, 3 received, 0% packet loss, time 102ms"
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| {
                let (_, rest) = l.split_once(" transmitted, ")?;
                rest.split_once(" received")?.0.parse().ok()
            })
            .unwrap_or(0)
    }

    fn remove(&self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.veth])
            .output();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.namespace])
            .output();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.remove();
    }
}

/// A blocking OpenFlow connection over any byte stream (the test is the controller).
#[derive(Debug)]
pub struct OfConn<S: Read + Write> {
    stream: S,
    framer: Framer,
    xid: u32,
    /// Runs on every received message and its exact bytes (e.g. a re-encode check).
    check: Option<fn(&Message, &[u8])>,
    /// Every message received so far.
    pub received: Vec<Message>,
}

impl<S: Read + Write> OfConn<S> {
    pub fn new(stream: S) -> Self {
        OfConn {
            stream,
            framer: Framer::new(65535),
            xid: 100,
            check: None,
            received: Vec::new(),
        }
    }

    /// Runs `check` on every message received from now on.
    pub fn checked(mut self, check: fn(&Message, &[u8])) -> Self {
        self.check = Some(check);
        self
    }

    pub fn next_xid(&mut self) -> u32 {
        self.xid += 1;
        self.xid
    }

    pub fn send(&mut self, msg: &Message) {
        self.stream
            .write_all(&msg.to_bytes())
            .expect("write to switch");
    }

    /// The next message and its exact bytes (10 s at most).
    pub fn recv_raw(&mut self) -> (Message, Vec<u8>) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(frame) = self.framer.next_message().expect("framing") {
                let msg = Message::decode(&frame).unwrap_or_else(|e| {
                    panic!("message does not decode: {e}: {:02x?}", &frame[..])
                });
                if let Some(check) = self.check {
                    check(&msg, &frame);
                }
                self.received.push(msg.clone());
                return (msg, frame.to_vec());
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for the switch"
            );
            let mut buf = [0u8; 65536];
            let n = self.stream.read(&mut buf).expect("read from switch");
            assert!(n > 0, "switch closed the connection");
            self.framer.push(&buf[..n]);
        }
    }

    pub fn recv(&mut self) -> Message {
        self.recv_raw().0
    }

    /// Sends `msgs` then a barrier; returns every message received before the barrier reply.
    pub fn transact(&mut self, msgs: Vec<Message>) -> Vec<Message> {
        for m in &msgs {
            self.send(m);
        }
        let bxid = self.next_xid();
        self.send(&Message::barrier_request(bxid));
        let mut out = Vec::new();
        loop {
            let m = self.recv();
            if m.xid == bxid && matches!(m.body, Body::BarrierReply) {
                return out;
            }
            out.push(m);
        }
    }
}
