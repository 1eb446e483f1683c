//! The agent against a real Open vSwitch 3.1 (userspace datapath): a plan-shaped fixture is
//! installed with `ovs-ofctl`, the agent's switch task runs in this process, CNMs enter the
//! bridge with PACKET_OUT (in_port = a fabric or host port, actions=TABLE) from a second
//! connection, and the effects are read back with `ovs-ofctl dump-groups` and the agent's state.
//!
//! Needs `ovs-vswitchd` running (`scripts/ovs-start.sh`) and root. `FABRICFLOW_SKIP_OVS=1`
//! skips. The reaction-latency benchmark is `#[ignore]`d: `scripts/bench-agent-latency.sh`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fabricflow_agent::config::{AgentConfig, SwitchConfig};
use fabricflow_agent::runtime::{switch::run_switch, Registry, SwitchView};
use fabricflow_agent::session::DropReason;
use fabricflow_proto::cnm::{Cnm, Cpid};
use fabricflow_proto::framer::Framer;
use fabricflow_proto::openflow::action::Action;
use fabricflow_proto::openflow::message::{Body, Message};
use fabricflow_proto::openflow::multipart::MultipartReplyBody;
use fabricflow_proto::openflow::packet::PacketOut;
use fabricflow_proto::openflow::port::OFPP_TABLE;
use fabricflow_proto::MacAddr;

const COOKIE: &str = "0x0fabf10a00000001";

fn skip() -> bool {
    if std::env::var_os("FABRICFLOW_SKIP_OVS").is_some() {
        eprintln!("FABRICFLOW_SKIP_OVS set: skipping the agent's Open vSwitch tests");
        return true;
    }
    false
}

fn sh(cmd: &str, args: &[&str]) -> String {
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

/// Polls `f` until it returns `Some`, or fails after `secs`.
fn wait_for<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A netdev bridge with the plan-shaped fixture, deleted on drop. Port 1 (host) and 2 (host,
/// wrongly wired to the agent) are internal ports; 3 and 4 (fabric) are internal ports or, with
/// `veth`, port 3 is a veth whose peer stays in the root namespace.
struct Bridge {
    name: String,
    veth: Option<(String, String)>,
}

impl Bridge {
    fn create(tag: &str, veth: bool) -> Bridge {
        let name = format!("ff{tag}{}", std::process::id() % 100_000);
        let veth = veth.then(|| (format!("{name}v"), format!("{name}w")));
        let b = Bridge { name, veth };
        b.install();
        b
    }

    fn install(&self) {
        let n = &self.name;
        let _ = Command::new("ovs-vsctl")
            .args(["--if-exists", "del-br", n])
            .status();
        let mut args: Vec<String> = vec![
            "add-br".into(),
            n.clone(),
            "--".into(),
            "set".into(),
            "bridge".into(),
            n.clone(),
            "datapath_type=netdev".into(),
            "protocols=OpenFlow13".into(),
            "fail-mode=secure".into(),
            "other-config:datapath-id=0000020000070107".into(),
        ];
        let mut port = |p: &str, no: u32, internal: bool| {
            args.extend(["--".into(), "add-port".into(), n.clone(), p.to_owned()]);
            args.extend(["--".into(), "set".into(), "interface".into(), p.to_owned()]);
            if internal {
                args.push("type=internal".into());
            }
            args.push(format!("ofport_request={no}"));
        };
        port(&format!("{n}a"), 1, true);
        port(&format!("{n}b"), 2, true);
        match &self.veth {
            Some((v, w)) => {
                let _ = Command::new("ip").args(["link", "del", v]).status();
                sh("ip", &["link", "add", v, "type", "veth", "peer", "name", w]);
                sh("ip", &["link", "set", v, "up"]);
                sh("ip", &["link", "set", w, "up"]);
                port(v, 3, false);
            }
            None => port(&format!("{n}c"), 3, true),
        }
        port(&format!("{n}d"), 4, true);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        sh("ovs-vsctl", &refs);
        self.ofctl(&[
            "add-group",
            n,
            "group_id=1003,type=select,bucket=weight:255,output:3,bucket=weight:0,output:4,bucket=weight:1,output:3",
        ]);
        let flows = [
            // CNMs from fabric ports go to the agent; from host port 1 they are dropped.
            format!("table=0,cookie={COOKIE},priority=200,in_port=3,dl_type=0x22e7,actions=controller(id=4011)"),
            format!("table=0,cookie={COOKIE},priority=200,in_port=4,dl_type=0x22e7,actions=controller(id=4011)"),
            format!("table=0,cookie={COOKIE},priority=200,in_port=1,dl_type=0x22e7,actions=drop"),
            // A miswired rule: host port 2's CNMs reach the agent, which must refuse them.
            format!("table=0,cookie={COOKIE},priority=200,in_port=2,dl_type=0x22e7,actions=controller(id=4011)"),
            format!("table=0,cookie={COOKIE},priority=100,in_port=1,actions=goto_table:1"),
            format!("table=1,cookie={COOKIE},priority=100,dl_dst=02:00:00:07:00:00/ff:ff:ff:ff:00:00,actions=group:1003"),
            format!("table=2,cookie={COOKIE},priority=100,dl_dst=02:00:00:07:00:00/ff:ff:ff:ff:00:00,actions=output:4"),
        ];
        for f in &flows {
            self.ofctl(&["add-flow", n, f]);
        }
    }

    fn ofctl(&self, args: &[&str]) -> String {
        let mut a = vec!["-O", "OpenFlow13"];
        a.extend_from_slice(args);
        sh("ovs-ofctl", &a)
    }

    fn mgmt(&self) -> String {
        format!("/var/run/openvswitch/{}.mgmt", self.name)
    }

    /// The weights of group 1003 as `ovs-ofctl dump-groups` shows them, and the bucket outputs.
    fn group_1003(&self) -> (Vec<u16>, Vec<String>) {
        let text = self.ofctl(&["dump-groups", &self.name]);
        let line = text
            .lines()
            .find(|l| l.contains("group_id=1003"))
            .unwrap_or_else(|| panic!("group 1003 missing: {text}"));
        let mut weights = Vec::new();
        let mut outputs = Vec::new();
        for b in line.split("bucket=").skip(1) {
            // ovs-ofctl omits `weight:1`, the default.
            let mut weight = 1;
            for part in b.split(',') {
                if let Some(w) = part.strip_prefix("weight:") {
                    weight = w.parse().unwrap();
                }
                if part.starts_with("output:") || part.starts_with("actions=output:") {
                    outputs.push(part.trim_start_matches("actions=").to_owned());
                }
            }
            weights.push(weight);
        }
        (weights, outputs)
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = Command::new("ovs-vsctl")
            .args(["--if-exists", "del-br", &self.name])
            .status();
        if let Some((v, _)) = &self.veth {
            let _ = Command::new("ip").args(["link", "del", v]).status();
        }
    }
}

/// A plain OpenFlow connection for injecting frames and reading groups.
struct Conn {
    s: UnixStream,
    framer: Framer,
    xid: u32,
}

impl Conn {
    fn open(path: &str) -> Conn {
        let s = UnixStream::connect(path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut c = Conn {
            s,
            framer: Framer::new(1 << 16),
            xid: 1,
        };
        c.send(&Message::hello(1));
        c
    }

    fn send(&mut self, m: &Message) {
        self.s.write_all(&m.to_bytes()).unwrap();
    }

    fn recv(&mut self) -> Message {
        loop {
            if let Some(f) = self.framer.next_message().unwrap() {
                return Message::decode(&f).unwrap();
            }
            let mut buf = [0u8; 65536];
            let n = self.s.read(&mut buf).unwrap();
            assert!(n > 0, "switch closed");
            self.framer.push(&buf[..n]);
        }
    }

    fn packet_out(&mut self, in_port: u32, frame: &[u8], out: u32) {
        self.xid += 1;
        let po = PacketOut::new(
            in_port,
            vec![Action::Output {
                port: out,
                max_len: 0,
            }],
            frame.to_vec(),
        );
        let m = Message::packet_out(self.xid, po);
        self.send(&m);
    }

    fn group_weights(&mut self, group_id: u32) -> Vec<u16> {
        self.xid += 1;
        let x = self.xid;
        self.send(&Message::group_desc_request(x));
        loop {
            let m = self.recv();
            if m.xid != x {
                continue;
            }
            if let Body::MultipartReply(r) = &m.body {
                if let MultipartReplyBody::GroupDesc(gs) = &r.body {
                    return gs
                        .iter()
                        .find(|g| g.group_id == group_id)
                        .map(|g| g.buckets.iter().map(|b| b.weight).collect())
                        .unwrap_or_default();
                }
            }
        }
    }
}

fn sampled() -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&[2, 0, 0, 7, 0, 1]);
    f.extend_from_slice(&[2, 0, 0, 1, 0, 1]);
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend_from_slice(&[0x45; 46]);
    f
}

fn cnm(qntz_fb: u8) -> Vec<u8> {
    let cp: MacAddr = "02:00:00:07:01:07".parse().unwrap();
    Cnm::for_sampled_frame(&sampled(), cp, Cpid::new(cp, 3), qntz_fb, 100, 10)
        .unwrap()
        .to_vec()
}

struct Agent {
    rt: tokio::runtime::Runtime,
    reg: Registry,
    stop: tokio::sync::watch::Sender<bool>,
    name: String,
}

impl Agent {
    fn start(name: &str, mgmt: &str, cfg: AgentConfig) -> Agent {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let reg: Registry = Arc::default();
        let (stop, rx) = tokio::sync::watch::channel(false);
        let sw = SwitchConfig {
            name: name.to_owned(),
            target: Some(format!("unix:{mgmt}")),
        };
        let (c, r) = (Arc::new(cfg), reg.clone());
        rt.spawn(async move { run_switch(sw, c, r, rx).await });
        Agent {
            rt,
            reg,
            stop,
            name: name.to_owned(),
        }
    }

    fn view(&self) -> SwitchView {
        self.reg
            .lock()
            .unwrap()
            .get(&self.name)
            .cloned()
            .unwrap_or_default()
    }

    fn p(&self, port: u32) -> Option<f64> {
        self.view()
            .session
            .ports
            .iter()
            .find(|p| p.port == port)
            .map(|p| p.p_percent)
    }

    fn dropped(&self, r: DropReason) -> u64 {
        self.view()
            .session
            .counters
            .cnm_dropped
            .get(&r)
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        let _ = &self.rt;
    }
}

fn test_config() -> AgentConfig {
    // These tests check the runtime against exact weights: the published base rule keeps the
    // arithmetic simple (one CNM, one plain decrease).
    let mut cfg = AgentConfig {
        policy: fabricflow_agent::policy::PolicyConfig::published(),
        ..AgentConfig::default()
    };
    cfg.weights.min_update_interval_us = 0;
    cfg.runtime.reconnect_min_us = 20_000;
    cfg.runtime.reconnect_max_us = 200_000;
    cfg.runtime.plan_refresh_period_us = 200_000;
    cfg.runtime.http_listen = String::new();
    cfg.runtime.emulated_cp.enabled = false;
    cfg
}

#[test]
fn agent_reacts_to_cnms_on_a_real_switch_and_survives_bridge_recreation() {
    if skip() {
        return;
    }
    let br = Bridge::create("ag", false);
    let agent = Agent::start(&br.name, &br.mgmt(), test_config());
    wait_for("plan learned", 10, || {
        agent.view().session.plan_ready.then_some(())
    });
    let v = agent.view();
    eprintln!("role on the management socket: {:?}", v.session.role);
    assert_eq!(
        v.session.ports.iter().map(|p| p.port).collect::<Vec<_>>(),
        vec![3, 4],
        "fabric ports = group buckets + transit outputs"
    );
    let (w0, structure) = br.group_1003();
    assert_eq!(w0, vec![255, 0, 1]);

    let mut conn = Conn::open(&br.mgmt());
    // A CNM from fabric port 3: P(3) falls, the group's weights change, structure unchanged.
    conn.packet_out(3, &cnm(63), OFPP_TABLE);
    wait_for("P(3) falls", 10, || agent.p(3).filter(|p| *p < 100.0));
    let (w1, s1) = wait_for("new weights", 10, || {
        let g = br.group_1003();
        (g.0 != w0).then_some(g)
    });
    assert_eq!(w1, vec![129, 126, 1]);
    assert_eq!(s1, structure, "bucket structure unchanged");

    // Forged CNMs from host port 1: dropped by the pipeline; from miswired host port 2: refused
    // by the agent. Malformed CNMs from a fabric port: counted and dropped.
    conn.packet_out(1, &cnm(63), OFPP_TABLE);
    conn.packet_out(2, &cnm(63), OFPP_TABLE);
    let mut bad = cnm(63);
    bad[14] = 0x10; // version 1
    conn.packet_out(4, &bad, OFPP_TABLE);
    wait_for("host-port CNM refused", 10, || {
        (agent.dropped(DropReason::NotFabricPort) == 1).then_some(())
    });
    wait_for("malformed CNM counted", 10, || {
        (agent.dropped(DropReason::Malformed) == 1).then_some(())
    });
    // Barrier from our connection: everything above has been processed by OVS.
    conn.xid += 1;
    let bx = conn.xid;
    conn.send(&Message::barrier_request(bx));
    while conn.recv().xid != bx {}
    std::thread::sleep(Duration::from_millis(50)); // let the agent's own processing settle
    assert_eq!(
        br.group_1003().0,
        w1,
        "no forged or malformed CNM changed a weight"
    );
    assert_eq!(agent.view().session.counters.cnm_received, 1);
    assert_eq!(agent.p(4), Some(100.0));

    // The bridge disappears and comes back with the controller's initial weights: the agent
    // reconnects, relearns, and writes P's weights again.
    drop(conn);
    let connects = agent.view().session.counters.connects;
    br.install();
    wait_for("reconnect", 20, || {
        (agent.view().session.counters.connects > connects).then_some(())
    });
    wait_for("weights restored", 20, || {
        (br.group_1003().0 == w1).then_some(())
    });
    let mut conn = Conn::open(&br.mgmt());
    conn.packet_out(3, &cnm(63), OFPP_TABLE);
    wait_for("reacts after reconnect", 10, || {
        let w = br.group_1003().0;
        (w[0] < w1[0]).then_some(())
    });
}

#[test]
fn emulated_cp_reads_the_backlog_and_generates_cnms_under_load() {
    if skip() {
        return;
    }
    let br = Bridge::create("cp", true);
    let (v, _) = br.veth.clone().unwrap();
    // A bounded queue behind a 1 Mb/s token bucket on the switch-side interface.
    sh(
        "tc",
        &[
            "qdisc", "add", "dev", &v, "root", "handle", "1:", "tbf", "rate", "1mbit", "burst",
            "1600", "limit", "100000",
        ],
    );
    sh(
        "tc",
        &[
            "qdisc", "add", "dev", &v, "parent", "1:1", "handle", "10:", "pfifo", "limit", "100",
        ],
    );
    let mut cfg = test_config();
    cfg.runtime.emulated_cp.enabled = true;
    cfg.runtime.emulated_cp.queue_poll_period_us = 1_000;
    cfg.cp.qeq_bytes = 5_000;
    cfg.cp.sampling_base_bytes = 5_000;
    let agent = Agent::start(&br.name, &br.mgmt(), cfg);
    wait_for("emulated CP running", 10, || {
        agent
            .view()
            .emulated_cp
            .filter(|c| c.ports.iter().any(|p| p.port == 3))
            .map(|_| ())
    });
    let mut conn = Conn::open(&br.mgmt());
    let mut frame = sampled();
    frame.resize(1000, 0x45);
    let mut max_backlog = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        for _ in 0..20 {
            conn.packet_out(0xffff_fffd, &frame, 3);
        }
        let v = agent.view();
        let cp = v.emulated_cp.unwrap_or_default();
        let b = cp
            .ports
            .iter()
            .find(|p| p.port == 3)
            .map_or(0, |p| p.backlog_bytes);
        max_backlog = max_backlog.max(b);
        if max_backlog > 0 && v.session.counters.cnm_generated > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let v = agent.view();
    eprintln!(
        "max backlog {max_backlog} B, CP {:?}, generated {}",
        v.emulated_cp, v.session.counters.cnm_generated
    );
    assert!(
        max_backlog > 0,
        "netlink backlog reading stays 0 under load"
    );
    assert!(v.session.counters.cnm_generated > 0, "no CNM generated");
}

/// Reaction latency: PACKET_OUT of a CNM into the bridge on fabric port 3 → the new weights
/// visible in a GROUP_DESC reply on another connection (an upper bound: includes one
/// GROUP_DESC round trip per poll). Run by `scripts/bench-agent-latency.sh`.
#[test]
#[ignore = "benchmark; run with --ignored --nocapture"]
fn reaction_latency() {
    if skip() {
        return;
    }
    let br = Bridge::create("lt", false);
    let mut cfg = test_config();
    // Each CNM (QntzFb 1) moves P by 0.5 points = 1.3 weight quanta: every CNM is a write.
    cfg.policy.update = fabricflow_agent::policy::UpdatePolicy::Aiad;
    cfg.policy.ad_percent_per_fb = 0.5;
    let agent = Agent::start(&br.name, &br.mgmt(), cfg);
    wait_for("plan learned", 10, || {
        agent.view().session.plan_ready.then_some(())
    });
    let mut conn = Conn::open(&br.mgmt());
    let mut samples = Vec::new();
    let mut last = conn.group_weights(1003);
    let poll_us: u64 = std::env::var("FABRICFLOW_BENCH_POLL_US")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    for _ in 0..150 {
        let t0 = Instant::now();
        conn.packet_out(3, &cnm(1), OFPP_TABLE);
        loop {
            let w = conn.group_weights(1003);
            if w != last {
                samples.push(t0.elapsed());
                last = w;
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(2), "no reaction");
            // FABRICFLOW_BENCH_POLL_US > 0 polls gently; 0 (default) polls back to back, which
            // keeps ovs-vswitchd's main loop awake (see the issue note for both figures).
            if poll_us > 0 {
                std::thread::sleep(Duration::from_micros(poll_us));
            }
        }
    }
    let mut poll = Vec::new();
    for _ in 0..100 {
        let t0 = Instant::now();
        conn.group_weights(1003);
        poll.push(t0.elapsed());
    }
    samples.sort();
    poll.sort();
    let q = |v: &Vec<Duration>, f: f64| v[((v.len() - 1) as f64 * f) as usize];
    println!(
        "reaction latency over {} CNMs: min {:?} median {:?} p90 {:?} p99 {:?} max {:?}; one GROUP_DESC round trip: median {:?}",
        samples.len(),
        samples[0],
        q(&samples, 0.5),
        q(&samples, 0.9),
        q(&samples, 0.99),
        samples[samples.len() - 1],
        q(&poll, 0.5)
    );
}
