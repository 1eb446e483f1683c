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

use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fabricflow_agent::config::{AgentConfig, CpTap, SwitchConfig};
use fabricflow_agent::runtime::{switch::run_switch, Registry, SwitchView};
use fabricflow_agent::session::DropReason;
use fabricflow_proto::cnm::{Cnm, Cpid};
use fabricflow_proto::openflow::action::Action;
use fabricflow_proto::openflow::message::{Body, Message};
use fabricflow_proto::openflow::multipart::MultipartReplyBody;
use fabricflow_proto::openflow::packet::PacketOut;
use fabricflow_proto::openflow::port::OFPP_TABLE;
use fabricflow_proto::MacAddr;
use fabricflow_testkit::ovs::{self, sh, wait_for, Bridge, OfConn, PortKind};

const COOKIE: &str = "0x0fabf10a00000001";

fn skip() -> bool {
    ovs::skip("the agent's Open vSwitch tests")
}

/// A netdev bridge with the plan-shaped fixture (the shared [`Bridge`] plus the plan's group and
/// flows). Port 1 (host) and 2 (host, wrongly wired to the agent) are internal ports; 3 and 4
/// (fabric) are internal ports or, with `veth`, port 3 is a veth whose peer stays in the root
/// namespace.
struct PlanBridge {
    name: String,
    veth: bool,
    br: Option<Bridge>,
}

impl PlanBridge {
    fn create(tag: &str, veth: bool) -> PlanBridge {
        let mut b = PlanBridge {
            name: Bridge::unique_name(tag),
            veth,
            br: None,
        };
        b.install();
        b
    }

    /// (Re-)creates the bridge and installs the fixture.
    fn install(&mut self) {
        drop(self.br.take());
        let third = if self.veth {
            ("v", 3, PortKind::Veth)
        } else {
            ("c", 3, PortKind::Internal)
        };
        let ports = [
            ("a", 1, PortKind::Internal),
            ("b", 2, PortKind::Internal),
            third,
            ("d", 4, PortKind::Internal),
        ];
        self.br = Some(Bridge::create(&self.name, 0x0000_0200_0007_0107, &ports));
        let n = &self.name;
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
        self.br.as_ref().unwrap().ofctl(args)
    }

    fn mgmt(&self) -> String {
        format!("/var/run/openvswitch/{}.mgmt", self.name)
    }

    fn veth(&self) -> Option<(String, String)> {
        self.veth
            .then(|| (format!("{}v", self.name), format!("{}w", self.name)))
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

/// A plain OpenFlow connection to the bridge, for injecting frames and reading groups.
fn open(path: &str) -> OfConn<UnixStream> {
    let s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut c = OfConn::new(s);
    c.send(&Message::hello(1));
    c
}

fn packet_out(c: &mut OfConn<UnixStream>, in_port: u32, frame: &[u8], out: u32) {
    let po = PacketOut::new(
        in_port,
        vec![Action::Output {
            port: out,
            max_len: 0,
        }],
        frame.to_vec(),
    );
    let x = c.next_xid();
    c.send(&Message::packet_out(x, po));
}

fn group_weights(c: &mut OfConn<UnixStream>, group_id: u32) -> Vec<u16> {
    let x = c.next_xid();
    c.send(&Message::group_desc_request(x));
    loop {
        let m = c.recv();
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
            ports: Vec::new(),
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
    cfg.weights.min_update_interval_line_bytes = 0;
    cfg.weights.min_update_interval_buffer_drains = 0.0;
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
    let mut br = PlanBridge::create("ag", false);
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

    let mut conn = open(&br.mgmt());
    // A CNM from fabric port 3: P(3) falls, the group's weights change, structure unchanged.
    packet_out(&mut conn, 3, &cnm(63), OFPP_TABLE);
    wait_for("P(3) falls", 10, || agent.p(3).filter(|p| *p < 100.0));
    let (w1, s1) = wait_for("new weights", 10, || {
        let g = br.group_1003();
        (g.0 != w0).then_some(g)
    });
    assert_eq!(w1, vec![129, 126, 1]);
    assert_eq!(s1, structure, "bucket structure unchanged");
    // The write was timed, and OVS's reply to the barrier behind it confirmed it.
    wait_for("the reaction timed and confirmed", 10, || {
        let v = agent.view();
        (v.cnm_to_group_mod.count == 1 && v.session.cnm_to_group_mod_confirmed.count == 1)
            .then_some(())
    });

    // Forged CNMs from host port 1: dropped by the pipeline; from miswired host port 2: refused
    // by the agent. Malformed CNMs from a fabric port: counted and dropped.
    packet_out(&mut conn, 1, &cnm(63), OFPP_TABLE);
    packet_out(&mut conn, 2, &cnm(63), OFPP_TABLE);
    let mut bad = cnm(63);
    bad[14] = 0x10; // version 1
    packet_out(&mut conn, 4, &bad, OFPP_TABLE);
    wait_for("host-port CNM refused", 10, || {
        (agent.dropped(DropReason::NotFabricPort) == 1).then_some(())
    });
    wait_for("malformed CNM counted", 10, || {
        (agent.dropped(DropReason::Malformed) == 1).then_some(())
    });
    // Barrier from our connection: everything above has been processed by OVS.
    conn.transact(vec![]);
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
    let mut conn = open(&br.mgmt());
    packet_out(&mut conn, 3, &cnm(63), OFPP_TABLE);
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
    // The default taps the veth's far end (the peer stays in this namespace); `egress` the
    // port itself: both must see the port's frames.
    emulated_cp_generates_cnms_with(CpTap::Auto, true);
    emulated_cp_generates_cnms_with(CpTap::Egress, false);
}

fn emulated_cp_generates_cnms_with(tap: CpTap, far_end: bool) {
    let br = PlanBridge::create("cp", true);
    let (v, _) = br.veth().unwrap();
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
    cfg.runtime.emulated_cp.tap = tap;
    // Qeq 5 000 octets of the port's 100-frame buffer.
    cfg.link.buffer_bytes = Some(151_400);
    cfg.cp.qeq_buffer_fraction = 5_000.0 / 151_400.0;
    cfg.cp.sampling_base_bytes = 5_000;
    let agent = Agent::start(&br.name, &br.mgmt(), cfg);
    wait_for("emulated CP running", 10, || {
        agent
            .view()
            .emulated_cp
            .filter(|c| c.ports.iter().any(|p| p.port == 3 && p.far_end == far_end))
            .map(|_| ())
    });
    let mut conn = open(&br.mgmt());
    let mut frame = sampled();
    frame.resize(1000, 0x45);
    let mut max_backlog = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        for _ in 0..20 {
            packet_out(&mut conn, 0xffff_fffd, &frame, 3);
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

/// GET `/metrics` from the agent's HTTP server; the samples as (name{labels}, value).
fn scrape(addr: std::net::SocketAddr) -> Vec<(String, f64)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (_, body) = text.split_once("\r\n\r\n").unwrap();
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(k, v)| (k.to_owned(), v.parse().unwrap()))
        .collect()
}

/// The value of the sample whose name and labels start with `prefix` (0 if absent).
fn sample(metrics: &[(String, f64)], prefix: &str) -> f64 {
    metrics
        .iter()
        .find(|(k, _)| k.starts_with(prefix))
        .map_or(0.0, |(_, v)| *v)
}

#[test]
fn port_stall_families_are_scraped_and_move_under_load() {
    if skip() {
        return;
    }
    let br = PlanBridge::create("st", true);
    let (v, _) = br.veth().unwrap();
    // Port 3 behind a 1 Mb/s token bucket: frames sent faster queue there.
    sh(
        "tc",
        &[
            "qdisc", "add", "dev", &v, "root", "handle", "1:", "tbf", "rate", "1mbit", "burst",
            "1600", "limit", "100000",
        ],
    );
    let mut cfg = test_config();
    cfg.runtime.port_stall.poll_period_us = 2_000;
    cfg.runtime.port_stall.interval_us = 50_000;
    let agent = Agent::start(&br.name, &br.mgmt(), cfg);
    // The agent's own HTTP server on the agent's registry.
    let (listener, addr) = agent.rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let a = l.local_addr().unwrap();
        (l, a)
    });
    let (_http_stop, http_rx) = tokio::sync::watch::channel(false);
    agent.rt.spawn(fabricflow_agent::runtime::http::serve(
        listener,
        agent.reg.clone(),
        http_rx,
    ));
    let n = &br.name;
    let fabric3 = format!("{{switch=\"{n}\",port=\"3\",role=\"fabric\",direction=\"tx\"}}");
    wait_for(
        "port-stall series for port 3 (fabric) and 1 (host)",
        10,
        || {
            let m = scrape(addr);
            let host1 = format!("{{switch=\"{n}\",port=\"1\",role=\"host\",direction=\"tx\"}}");
            (m.iter().any(|(k, _)| k.ends_with(&fabric3))
                && m.iter().any(|(k, _)| k.ends_with(&host1)))
            .then_some(())
        },
    );
    let before = scrape(addr);
    let stall = |m: &[(String, f64)]| {
        sample(
            m,
            &format!("fabricflow_agent_port_stall_seconds_total{fabric3}"),
        )
    };
    assert_eq!(stall(&before), 0.0, "an idle port has no backlog time");
    let mut conn = open(&br.mgmt());
    let mut frame = sampled();
    frame.resize(1000, 0x45);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut after = before.clone();
    // 20 kB per round at 1 Mb/s is 160 ms of line time: the bucket queues.
    while Instant::now() < deadline {
        for _ in 0..20 {
            packet_out(&mut conn, 0xffff_fffd, &frame, 3);
        }
        after = scrape(addr);
        let rate = sample(
            &after,
            &format!("fabricflow_agent_port_tx_bits_per_second{{switch=\"{n}\",port=\"3\"}}"),
        );
        let nonzero = sample(
            &after,
            &format!("fabricflow_agent_port_stall_intervals_total{fabric3}"),
        );
        if stall(&after) > 0.0 && nonzero > 0.0 && rate > 0.0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    eprintln!(
        "{:?}",
        after
            .iter()
            .filter(|(k, _)| k.contains("_port_") && k.contains("port=\"3\""))
            .collect::<Vec<_>>()
    );
    assert!(stall(&after) > 0.0, "backlog time did not move");
    let get = |name: &str| sample(&after, &format!("{name}{fabric3}"));
    assert!(get("fabricflow_agent_port_stall_intervals_total") > 0.0);
    assert!(
        get("fabricflow_agent_port_intervals_total")
            >= get("fabricflow_agent_port_stall_intervals_total")
    );
    assert!(get("fabricflow_agent_port_qdisc_tx_bytes_total") > 0.0);
    assert!(get("fabricflow_agent_port_fitf_count") > 0.0);
    // A FITF is at most 1: every interval is in the `le="1.0"` bucket.
    let le1 = after
        .iter()
        .find(|(k, _)| {
            k.starts_with("fabricflow_agent_port_fitf_bucket{le=\"1.0\"")
                && k.contains(&format!("switch=\"{n}\",port=\"3\""))
        })
        .map(|(_, v)| *v);
    assert_eq!(le1, Some(get("fabricflow_agent_port_fitf_count")));
    assert!(
        sample(
            &after,
            &format!("fabricflow_agent_port_tx_bits_per_second{{switch=\"{n}\",port=\"3\"}}")
        ) > 0.0,
        "OpenFlow tx rate from the switch's duration fields"
    );
}

/// Reaction latency: PACKET_OUT of a CNM into the bridge on fabric port 3 → the new weights
/// visible in a GROUP_DESC reply on another connection (an upper bound: includes one
/// GROUP_DESC round trip per poll). Run by `scripts/bench-agent-latency.sh`.
/// The agent's own record of each CNM it answered, from its trace events, ns on
/// [`fabricflow_agent::runtime::now_ns`]'s clock (this process runs the agent, so the test
/// shares it): (packet-in read, GROUP_MOD written) and (packet-in read, BARRIER_REPLY read).
#[derive(Default)]
struct AgentLog {
    written: Vec<(u64, u64)>,
    confirmed: Vec<(u64, u64)>,
}

#[derive(Default)]
struct Reactions(std::sync::Mutex<AgentLog>, std::sync::Condvar);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for &'static Reactions {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        #[derive(Default)]
        struct Fields(Option<u64>, Option<u64>, Option<u64>);
        impl tracing::field::Visit for Fields {
            fn record_u64(&mut self, f: &tracing::field::Field, v: u64) {
                match f.name() {
                    "cnm_ns" => self.0 = Some(v),
                    "written_ns" => self.1 = Some(v),
                    "confirmed_ns" => self.2 = Some(v),
                    _ => {}
                }
            }
            fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
        }
        let mut f = Fields::default();
        event.record(&mut f);
        let mut log = self.0.lock().unwrap();
        match f {
            Fields(Some(c), Some(w), _) => log.written.push((c, w)),
            Fields(Some(c), _, Some(b)) => log.confirmed.push((c, b)),
            _ => return,
        }
        self.1.notify_all();
    }
}

impl Reactions {
    /// Waits (at most 2 s) for the agent's confirmation of a CNM it read after `t`.
    fn confirmed_after(&self, t: u64) -> Option<(u64, u64)> {
        let find = |l: &AgentLog| l.confirmed.iter().copied().find(|(c, _)| *c >= t);
        let log = self.0.lock().unwrap();
        let (log, _) = self
            .1
            .wait_timeout_while(log, Duration::from_secs(2), |l| find(l).is_none())
            .unwrap();
        find(&log)
    }
}

fn reactions() -> &'static Reactions {
    static R: std::sync::OnceLock<&'static Reactions> = std::sync::OnceLock::new();
    R.get_or_init(|| {
        use tracing_subscriber::layer::SubscriberExt;
        let r: &'static Reactions = Box::leak(Box::default());
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(r)).unwrap();
        r
    })
}

/// A second connection with the agent's controller id: OVS sends it every packet-in it sends the
/// agent, and a thread that does nothing but block in `read` notes when each arrives — when
/// OVS sent it, give or take a wake-up that needs no scheduler but the kernel's.
struct Tap {
    arrivals: Arc<std::sync::Mutex<Vec<u64>>>,
    stream: UnixStream,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Tap {
    fn open(path: &str) -> Tap {
        use std::io::{Read, Write};
        let mut s = UnixStream::connect(path).unwrap();
        for m in [
            Message::hello(1),
            Message::set_config(2, 0, 0xffff),
            Message::set_controller_id(3, fabricflow_proto::conventions::AGENT_CONTROLLER_ID),
        ] {
            s.write_all(&m.to_bytes()).unwrap();
        }
        let arrivals: Arc<std::sync::Mutex<Vec<u64>>> = Arc::default();
        let (mut rd, log) = (s.try_clone().unwrap(), arrivals.clone());
        let thread = std::thread::spawn(move || {
            let mut framer = fabricflow_proto::openflow::framer::Framer::new(65535);
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n @ 1..) = rd.read(&mut buf) {
                let t = fabricflow_agent::runtime::now_ns();
                framer.push(&buf[..n]);
                while let Ok(Some(frame)) = framer.next_message() {
                    if let Ok(Message {
                        body: Body::PacketIn(_),
                        ..
                    }) = Message::decode(&frame)
                    {
                        log.lock().unwrap().push(t);
                    }
                }
            }
        });
        Tap {
            arrivals,
            stream: s,
            thread: Some(thread),
        }
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// p50 / p90 / p99 / max of `v` (ns, shown in µs), sorted in place.
fn percentiles(v: &mut [i64]) -> String {
    v.sort_unstable();
    let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize] as f64 / 1e3;
    format!(
        "p50 {:>8.1} µs  p90 {:>8.1}  p99 {:>8.1}  max {:>8.1}",
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0)
    )
}

/// One CNM's hops, ns on the agent's clock.
struct Hops {
    /// The test sent the PACKET_OUT.
    sent: u64,
    /// The tap read the packet-in (`None`: it read none before the next CNM).
    tapped: Option<u64>,
    /// The agent read the packet-in.
    read: u64,
    /// The agent had written the GROUP_MOD.
    wrote: Option<u64>,
    /// The agent read the switch's BARRIER_REPLY behind the GROUP_MOD.
    confirmed: u64,
    /// The test saw the new weights in a GROUP_DESC reply (only when polling).
    seen: Option<u64>,
}

/// Reaction latency of the agent on OVS: a CNM enters the bridge (PACKET_OUT on another
/// connection, in_port = fabric port 3, actions=TABLE → table 0 → controller(id) → the agent)
/// until the switch has processed the agent's GROUP_MOD (its BARRIER_REPLY to the barrier the
/// agent sends behind the GROUP_MODs that answer CNMs), hop by hop on one clock: the test's
/// send, a tap connection's read of the same packet-in, the agent's read, its GROUP_MOD
/// written, the BARRIER_REPLY read — no reading of the groups, which would load the switch and
/// the machine with the measurement. Rounds of 100 CNMs, each from a fresh agent on a group
/// reset to P = 100 (every CNM is a write: AIAD, 0.5 points each).
///
/// `FABRICFLOW_BENCH_CNMS` (default 600) CNMs in all. `FABRICFLOW_BENCH_POLL_US=N` also reads
/// GROUP_DESC until the new weights show, every N µs (0: back to back), the observable this
/// benchmark used before. `FABRICFLOW_BENCH_NICE=N` runs the test (agent and instruments) at
/// nice N.
#[test]
#[ignore = "benchmark; run with --ignored --nocapture"]
fn reaction_latency() {
    if skip() {
        return;
    }
    use fabricflow_agent::runtime::now_ns;
    const ROUND: usize = 100;
    let cnms: usize = std::env::var("FABRICFLOW_BENCH_CNMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600);
    let poll_us: Option<u64> = std::env::var("FABRICFLOW_BENCH_POLL_US")
        .ok()
        .and_then(|v| v.parse().ok());
    // This thread, and so every thread it starts (the agent's, the tap's), at that nice value:
    // ovs-vswitchd's is -10.
    if let Ok(n) = std::env::var("FABRICFLOW_BENCH_NICE") {
        let me = std::fs::read_link("/proc/thread-self").unwrap();
        let tid = me.file_name().unwrap().to_string_lossy().into_owned();
        sh("renice", &["-n", &n, "-p", &tid]);
    }
    let agent_log = reactions();
    let br = PlanBridge::create("lt", false);
    let mut cfg = test_config();
    // Each CNM (QntzFb 1) moves P by 0.5 points = 1.3 weight quanta: every CNM is a write.
    cfg.policy.update = fabricflow_agent::policy::UpdatePolicy::Aiad;
    cfg.policy.ad_percent_per_fb = 0.5;
    let mut samples: Vec<Hops> = Vec::new();
    while samples.len() < cnms {
        br.ofctl(&[
            "mod-group",
            &br.name,
            "group_id=1003,type=select,bucket=weight:255,output:3,bucket=weight:0,output:4,bucket=weight:1,output:3",
        ]);
        let agent = Agent::start(&br.name, &br.mgmt(), cfg.clone());
        wait_for("plan learned", 10, || {
            agent.view().session.plan_ready.then_some(())
        });
        let mut conn = open(&br.mgmt());
        let tap = Tap::open(&br.mgmt());
        let mut last = group_weights(&mut conn, 1003);
        assert_eq!(last, vec![255, 0, 1], "round starts at P = 100");
        let mut round = Vec::new();
        for _ in 0..ROUND.min(cnms - samples.len()) {
            let sent = now_ns();
            packet_out(&mut conn, 3, &cnm(1), OFPP_TABLE);
            let seen = poll_us.map(|us| loop {
                let w = group_weights(&mut conn, 1003);
                let seen = now_ns();
                if w != last {
                    last = w;
                    break seen;
                }
                assert!(seen - sent < 2_000_000_000, "no reaction");
                if us > 0 {
                    std::thread::sleep(Duration::from_micros(us));
                }
            });
            let (read, confirmed) = agent_log
                .confirmed_after(sent)
                .expect("the agent confirmed the CNM's GROUP_MOD");
            round.push((sent, read, confirmed, seen));
        }
        drop(agent);
        let tapped = tap.arrivals.lock().unwrap().clone();
        drop(tap);
        let p = 100.0 - 0.5 * round.len() as f64;
        assert_eq!(
            group_weights(&mut conn, 1003),
            fabricflow_proto::select_weights::weights(p, 1),
            "OVS holds the agent's last write, P = {p}"
        );
        let written = agent_log.0.lock().unwrap().written.clone();
        // A hop's record is the first after this CNM was sent and before the next one.
        let nexts: Vec<u64> = round
            .iter()
            .skip(1)
            .map(|r| r.0)
            .chain([u64::MAX])
            .collect();
        for (&(sent, read, confirmed, seen), &next) in round.iter().zip(&nexts) {
            samples.push(Hops {
                sent,
                tapped: tapped.iter().copied().find(|t| (sent..next).contains(t)),
                read,
                wrote: written.iter().find(|(r, _)| *r == read).map(|w| w.1),
                confirmed,
                seen,
            });
        }
    }
    fn d(a: u64, b: u64) -> i64 {
        b as i64 - a as i64
    }
    let hop = |f: &dyn Fn(&Hops) -> Option<i64>| -> String {
        let mut v: Vec<i64> = samples.iter().filter_map(f).collect();
        if v.is_empty() {
            return "(n 0)".to_owned();
        }
        format!("{} (n {})", percentiles(&mut v), v.len())
    };
    println!(
        "reaction latency over {} CNMs (GROUP_DESC {}):",
        samples.len(),
        match poll_us {
            None => "not read".to_owned(),
            Some(0) => "read back to back".to_owned(),
            Some(us) => format!("read every {us} µs"),
        }
    );
    for (what, f) in [
        (
            "end to end, PACKET_OUT sent → switch confirmed   ",
            &(|s: &Hops| Some(d(s.sent, s.confirmed))) as &dyn Fn(&Hops) -> Option<i64>,
        ),
        (
            "OVS, PACKET_OUT sent → packet-in at the tap     ",
            &|s: &Hops| s.tapped.map(|t| d(s.sent, t)),
        ),
        (
            "agent wake-up, at the tap → agent read           ",
            &|s: &Hops| s.tapped.map(|t| d(t, s.read)),
        ),
        (
            "agent, packet-in read → GROUP_MOD written        ",
            &|s: &Hops| s.wrote.map(|w| d(s.read, w)),
        ),
        (
            "OVS, GROUP_MOD written → BARRIER_REPLY read      ",
            &|s: &Hops| s.wrote.map(|w| d(w, s.confirmed)),
        ),
        (
            "agent, packet-in read → BARRIER_REPLY read       ",
            &|s: &Hops| Some(d(s.read, s.confirmed)),
        ),
        (
            "GROUP_DESC, PACKET_OUT sent → new weights seen   ",
            &|s: &Hops| s.seen.map(|t| d(s.sent, t)),
        ),
    ] {
        let text = hop(f);
        if !text.ends_with("(n 0)") {
            println!("reaction latency  {what}{text}");
        }
    }
}
