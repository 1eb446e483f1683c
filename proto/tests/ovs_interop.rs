//! Interop with a real Open vSwitch (userspace datapath): encoder-built messages go to
//! ovs-vswitchd over the bridge's management socket (and over TCP, captured and dissected by
//! tshark); OVS must answer without a single OFPT_ERROR, every reply must decode, and
//! `ovs-ofctl dump-flows/dump-groups` must show exactly what was sent.
//!
//! Needs `ovs-vswitchd` running (`scripts/ovs-start.sh`, done by `make test`). Set
//! `FABRICFLOW_SKIP_OVS=1` to skip (as `make unit` does); otherwise a missing OVS is a failure.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fabricflow_proto::openflow::action::Action;
use fabricflow_proto::openflow::bundle::BundleCtrlType;
use fabricflow_proto::openflow::flow::FlowMod;
use fabricflow_proto::openflow::group::{Bucket, GroupMod};
use fabricflow_proto::openflow::instruction::Instruction;
use fabricflow_proto::openflow::message::{Body, Message};
use fabricflow_proto::openflow::multipart::{FlowStatsRequest, MultipartReplyBody};
use fabricflow_proto::openflow::oxm::{Match, OxmField};
use fabricflow_proto::openflow::OFP_VERSION;
use fabricflow_proto::MacAddr;
use fabricflow_testkit::ovs::{self, sh, Bridge, OfConn, PortKind};

const COOKIE: u64 = 0x00ff_f10f_0000_0001;
const BUNDLE_ATOMIC_ORDERED: u16 = 0x3;

fn skip() -> bool {
    ovs::skip("the Open vSwitch interop test")
}

/// A netdev bridge with two internal ports (OpenFlow ports 1 and 2), deleted on drop.
fn bridge(tag: &str, dpid: u64) -> Bridge {
    let internal = |s, no| (s, no, PortKind::Internal);
    Bridge::create(
        &Bridge::unique_name(tag),
        dpid,
        &[internal("a", 1), internal("b", 2)],
    )
}

/// Every message from the switch must re-encode to exactly its bytes, and none may be an
/// OFPT_ERROR.
fn check(msg: &Message, frame: &[u8]) {
    assert_eq!(&msg.to_bytes()[..], frame, "re-encode differs: {msg:?}");
    if let Body::Error(err) = &msg.body {
        panic!("Open vSwitch answered with an error: {err:?}");
    }
}

type Conn<S> = OfConn<S>;

fn mac(s: &str) -> MacAddr {
    s.parse().expect("mac")
}

/// The flows and groups the exchange installs, so the dumps can be checked against them.
fn flow_a() -> FlowMod {
    let m = Match::new()
        .with(OxmField::InPort(1))
        .with(OxmField::EthDst {
            value: mac("02:00:00:01:00:00"),
            mask: Some(mac("ff:ff:ff:ff:00:00")),
        });
    FlowMod::add(
        0,
        100,
        m,
        vec![
            Instruction::ApplyActions(vec![Action::output(2)]),
            Instruction::GotoTable(1),
        ],
    )
    .with_cookie(COOKIE)
}

fn flow_b() -> FlowMod {
    let m = Match::new()
        .with(OxmField::EthType(0x0800))
        .with(OxmField::Ipv4Dst {
            value: Ipv4Addr::new(10, 1, 0, 0),
            mask: Some(Ipv4Addr::new(255, 255, 0, 0)),
        });
    FlowMod::add(
        1,
        200,
        m,
        vec![Instruction::ApplyActions(vec![Action::group(1003)])],
    )
    .with_cookie(COOKIE)
}

fn flow_cnm() -> FlowMod {
    let m = Match::new()
        .with(OxmField::InPort(2))
        .with(OxmField::EthType(0x22e7));
    FlowMod::add(
        0,
        300,
        m,
        vec![Instruction::ApplyActions(vec![Action::nx_controller(
            7, 128,
        )])],
    )
    .with_cookie(COOKIE)
}

fn group_select() -> GroupMod {
    GroupMod::add_select(
        1003,
        vec![
            Bucket::new(200, vec![Action::output(1)]),
            Bucket::new(55, vec![Action::output(2)]),
            Bucket::new(1, vec![Action::output(1)]),
        ],
    )
}

fn group_select_in_bundle() -> GroupMod {
    GroupMod::add_select(
        1004,
        vec![
            Bucket::new(255, vec![Action::output(2)]),
            Bucket::new(1, vec![Action::output(2)]),
        ],
    )
}

/// The whole conversation; returns the flow-stats entries and the group-desc entries.
fn exchange<S: Read + Write>(conn: &mut Conn<S>, dpid: u64) {
    // HELLO both ways, with a version bitmap that includes 1.3.
    conn.send(&Message::hello(1));
    let hello = conn.recv();
    assert!(
        matches!(hello.body, Body::Hello(_)),
        "expected HELLO, got {hello:?}"
    );
    assert_eq!(hello.version, OFP_VERSION);

    let xid = conn.next_xid();
    conn.send(&Message::features_request(xid));
    let features = conn.recv();
    let Body::FeaturesReply(f) = &features.body else {
        panic!("expected FEATURES_REPLY: {features:?}")
    };
    assert_eq!(f.datapath_id, dpid);

    // Groups before the flows that use them.
    let x1 = conn.next_xid();
    let x2 = conn.next_xid();
    let x3 = conn.next_xid();
    let out = conn.transact(vec![
        Message::group_mod(x1, group_select()),
        Message::flow_mod(x2, flow_a()),
        Message::flow_mod(x3, flow_cnm()),
    ]);
    assert!(out.is_empty(), "unexpected replies to mods: {out:?}");

    // One atomic, ordered bundle holding a group and a flow that uses... group 1003.
    let bid = 42;
    let xo = conn.next_xid();
    conn.send(&Message::bundle_open(xo, bid, BUNDLE_ATOMIC_ORDERED));
    let open = conn.recv();
    assert_bundle_reply(&open, BundleCtrlType::OpenReply);
    let xa = conn.next_xid();
    let xb = conn.next_xid();
    // OVS requires the bundle-add's xid to equal the embedded message's (ONFBFC_MSG_BAD_XID).
    let add1 = Message::bundle_add(
        bid,
        BUNDLE_ATOMIC_ORDERED,
        Message::group_mod(xa, group_select_in_bundle()),
    );
    let add2 = Message::bundle_add(bid, BUNDLE_ATOMIC_ORDERED, Message::flow_mod(xb, flow_b()));
    assert_eq!((add1.xid, add2.xid), (xa, xb));
    conn.send(&add1);
    conn.send(&add2);
    let xc = conn.next_xid();
    conn.send(&Message::bundle_commit(xc, bid, BUNDLE_ATOMIC_ORDERED));
    let commit = conn.recv();
    assert_bundle_reply(&commit, BundleCtrlType::CommitReply);

    // Multipart: port desc, flow stats, group desc, port stats; all replies decode.
    let xp = conn.next_xid();
    let xf = conn.next_xid();
    let xg = conn.next_xid();
    let xs = conn.next_xid();
    let replies = conn.transact(vec![
        Message::port_desc_request(xp),
        Message::flow_stats_request(xf, FlowStatsRequest::default()),
        Message::group_desc_request(xg),
        Message::port_stats_request(xs, fabricflow_proto::openflow::port::OFPP_ANY),
    ]);
    let mut flows = Vec::new();
    let mut groups = Vec::new();
    let mut port_descs = 0;
    let mut port_stats = 0;
    for r in &replies {
        let Body::MultipartReply(mp) = &r.body else {
            panic!("expected multipart reply: {r:?}")
        };
        match &mp.body {
            MultipartReplyBody::Flow(v) => flows.extend(v.iter().cloned()),
            MultipartReplyBody::GroupDesc(v) => groups.extend(v.iter().cloned()),
            MultipartReplyBody::PortDesc(v) => port_descs += v.len(),
            MultipartReplyBody::PortStats(v) => port_stats += v.len(),
            other => panic!("unexpected multipart body {other:?}"),
        }
    }
    // Two internal ports plus the bridge's LOCAL port.
    assert_eq!(port_descs, 3, "port desc entries");
    assert_eq!(port_stats, 3, "port stats entries");

    // The switch holds exactly what was sent, as OVS reports it in our own decoded replies.
    let sent = [flow_a(), flow_cnm(), flow_b()];
    assert_eq!(flows.len(), sent.len(), "flow count: {flows:?}");
    for fm in &sent {
        let found = flows.iter().find(|s| {
            s.table_id == fm.table_id
                && s.priority == fm.priority
                && s.cookie == fm.cookie
                && s.r#match == fm.r#match
                && s.instructions == fm.instructions
        });
        assert!(
            found.is_some(),
            "flow {fm:?} not in the switch's flow stats: {flows:?}"
        );
    }
    assert_eq!(groups.len(), 2, "group count: {groups:?}");
    for g in [group_select(), group_select_in_bundle()] {
        let found = groups.iter().find(|d| d.group_id == g.group_id);
        let d = found.unwrap_or_else(|| panic!("group {} missing: {groups:?}", g.group_id));
        assert_eq!(d.group_type, g.group_type);
        assert_eq!(d.buckets, g.buckets, "buckets of group {}", g.group_id);
    }
}

fn assert_bundle_reply(m: &Message, want: BundleCtrlType) {
    let Body::BundleControl(b) = &m.body else {
        panic!("expected bundle reply, got {m:?}")
    };
    assert_eq!(b.ctrl_type, want);
}

fn assert_ofctl_dumps(br: &Bridge) {
    let flows = br.dump("dump-flows");
    let lines: Vec<&str> = flows.lines().filter(|l| l.contains("cookie=")).collect();
    assert_eq!(lines.len(), 3, "dump-flows: {flows}");
    let has = |needles: &[&str]| lines.iter().any(|l| needles.iter().all(|n| l.contains(n)));
    let cookie = format!("cookie={COOKIE:#x}");
    assert!(
        has(&[
            &cookie,
            "priority=100",
            "in_port=",
            "dl_dst=02:00:00:01:00:00/ff:ff:ff:ff:00:00",
            "actions=output:",
            "goto_table:1"
        ]),
        "{flows}"
    );
    assert!(
        has(&[
            &cookie,
            "table=1",
            "priority=200",
            "nw_dst=10.1.0.0/16",
            "actions=group:1003"
        ]),
        "{flows}"
    );
    assert!(
        has(&[
            &cookie,
            "priority=300",
            "dl_type=0x22e7",
            "controller(",
            "id=7"
        ]),
        "{flows}"
    );

    // OVS prints weight 1 as no weight at all (it is the default).
    let groups = br.dump("dump-groups");
    // Dump order follows OVS's hash table, not insertion order.
    let mut lines: Vec<&str> = groups.lines().skip(1).map(str::trim).collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "group_id=1003,type=select,bucket=weight:200,actions=output:1,bucket=weight:55,actions=output:2,bucket=actions=output:1",
            "group_id=1004,type=select,bucket=weight:255,actions=output:2,bucket=actions=output:2",
        ],
        "{groups}"
    );
}

#[test]
fn ovs_accepts_encoder_messages_over_mgmt_socket() {
    if skip() {
        return;
    }
    let dpid = 0x0000_0000_00ff_0001;
    let br = bridge("i", dpid);
    let stream =
        UnixStream::connect(br.mgmt_socket()).expect("connect to bridge management socket");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut conn = Conn::new(stream).checked(check);
    exchange(&mut conn, dpid);
    assert_ofctl_dumps(&br);
}

/// A packet capture on loopback (tcpdump, flushed per packet); killed on drop.
struct Capture {
    child: Child,
    file: String,
}

impl Capture {
    fn start(port: u16) -> Capture {
        let file = format!("/tmp/ff-interop-{}.pcap", std::process::id());
        let log = format!("{file}.log");
        let _ = std::fs::remove_file(&file);
        let filter = format!("tcp port {port}");
        let child = Command::new("tcpdump")
            .args(["-U", "-i", "lo", "-w", &file, &filter])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("tcpdump log"))
            .spawn()
            .expect("start tcpdump (installed by scripts/install-deps.sh)");
        // tcpdump says "listening on" once its filter is attached.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !std::fs::read_to_string(&log)
            .map(|s| s.contains("listening on"))
            .unwrap_or(false)
        {
            assert!(Instant::now() < deadline, "tcpdump did not start capturing");
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_file(&log);
        Capture { child, file }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.file);
    }
}

#[test]
fn ovs_over_tcp_and_tshark_finds_nothing_malformed() {
    if skip() {
        return;
    }
    let dpid = 0x0000_0000_00ff_0002;
    let br = bridge("t", dpid);
    let port = 16_000 + (std::process::id() % 1000) as u16;
    let target = format!("ptcp:{port}:127.0.0.1");
    sh("ovs-vsctl", &["set-controller", br.name(), &target]);
    let cap = Capture::start(port);

    let deadline = Instant::now() + Duration::from_secs(10);
    let stream = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => break s,
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "bridge never listened on {target}: {e}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut conn = Conn::new(stream).checked(check);
    exchange(&mut conn, dpid);
    let conn_msgs = conn.received.len();
    drop(conn);
    assert_ofctl_dumps(&br);

    let decode_as = format!("tcp.port=={port},openflow");
    let count = |filter: &str| -> usize {
        sh(
            "tshark",
            &[
                "-r",
                &cap.file,
                "-d",
                &decode_as,
                "-Y",
                filter,
                "-T",
                "fields",
                "-e",
                "frame.number",
            ],
        )
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
    };
    // Every message we sent or received travelled in at least one segment; wait until the
    // capture holds at least as many OpenFlow frames as there were replies.
    let want = conn_msgs.min(10);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut of_frames = count("openflow_v4");
    while of_frames < want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        of_frames = count("openflow_v4");
    }
    assert!(
        of_frames >= want,
        "tshark saw only {of_frames} OpenFlow 1.3 frames:\n{}",
        sh("tshark", &["-r", &cap.file, "-d", &decode_as])
    );
    let malformed = count("_ws.malformed || _ws.expert.severity == error");
    assert_eq!(
        malformed,
        0,
        "tshark flags malformed OpenFlow:\n{}",
        sh(
            "tshark",
            &[
                "-r",
                &cap.file,
                "-d",
                &decode_as,
                "-Y",
                "_ws.malformed || _ws.expert.severity == error",
                "-V"
            ]
        )
    );
}
