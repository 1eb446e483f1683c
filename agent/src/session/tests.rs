//! Whole conversations with a fake switch: messages in, messages out.

use super::*;
use fabricflow_proto::cnm::Cpid;
use fabricflow_proto::openflow::group::{Bucket, GroupType};
use fabricflow_proto::openflow::multipart::{FlowStats, GroupDesc};
use fabricflow_proto::openflow::oxm::{Match, OxmField};
use fabricflow_proto::openflow::packet::{PacketInReason, OFP_NO_BUFFER};
use fabricflow_proto::openflow::symmetric::{ErrorMsg, GroupModFailedCode, RoleRequestFailedCode};

const MS: u64 = 1_000_000;

fn out(port: u32) -> Vec<Action> {
    vec![Action::Output { port, max_len: 0 }]
}

/// The published base rule: these tests check exact weights after one plain decrease.
fn published() -> AgentConfig {
    AgentConfig {
        policy: crate::policy::PolicyConfig::published(),
        ..AgentConfig::default()
    }
}

fn session() -> Session {
    let mut agent = published();
    agent.weights.min_update_interval_line_bytes = 0;
    agent.weights.min_update_interval_buffer_drains = 0.0;
    Session::new(SessionConfig::default(), &agent).unwrap()
}

fn drain(s: &mut Session) -> Vec<Message> {
    std::iter::from_fn(|| s.poll_transmit()).collect()
}

fn feed(s: &mut Session, m: &Message, now: u64) {
    s.handle_bytes(&m.to_bytes(), now);
}

/// Connects at `now` and answers the channel's handshake (HELLO, FEATURES_REPLY of dpid 7);
/// returns everything the session sent.
fn connect_at(s: &mut Session, now: u64) -> Vec<Message> {
    s.on_connected(now);
    feed(s, &Message::hello(0xfff0), now);
    let mut sent = drain(s);
    let fx = xid_of(&sent, |b| matches!(b, Body::FeaturesRequest));
    let features = fabricflow_proto::openflow::switch::FeaturesReply {
        datapath_id: 7,
        n_buffers: 0,
        n_tables: 254,
        auxiliary_id: 0,
        capabilities: 0,
        reserved: 0,
    };
    feed(s, &Message::new(fx, Body::FeaturesReply(features)), now);
    sent.extend(drain(s));
    sent
}

fn xid_of(msgs: &[Message], pred: impl Fn(&Body) -> bool) -> u32 {
    msgs.iter().find(|m| pred(&m.body)).map(|m| m.xid).unwrap()
}

fn plan_groups() -> Vec<GroupDesc> {
    vec![GroupDesc {
        group_type: GroupType::Select,
        group_id: 1003,
        buckets: vec![
            Bucket::new(255, out(3)),
            Bucket::new(0, out(4)),
            Bucket::new(1, out(3)),
        ],
    }]
}

fn plan_flows() -> Vec<FlowStats> {
    let flow = |table: u8, actions: Vec<Action>| {
        let m = Match::new().with(OxmField::EthDst {
            value: "02:00:00:07:00:00".parse().unwrap(),
            mask: Some("ff:ff:ff:ff:00:00".parse().unwrap()),
        });
        crate::plan::tests::flow(table, PlanConventions::default().cookie, m, actions)
    };
    let mut host = flow(1, out(1));
    host.r#match = Match::new().with(OxmField::EthDst {
        value: OWN_HOST.parse().unwrap(),
        mask: None,
    });
    vec![flow(1, vec![Action::Group(1003)]), flow(2, out(5)), host]
}

/// The host on port 1 of the switch of [`plan_flows`].
const OWN_HOST: &str = "02:00:00:01:00:02";

/// Connects and answers the plan read; returns the session and the handshake.
fn running(groups: Vec<GroupDesc>) -> (Session, Vec<Message>) {
    connect(session(), groups)
}

fn connect(s: Session, groups: Vec<GroupDesc>) -> (Session, Vec<Message>) {
    connect_with(s, groups, plan_flows())
}

/// The xids of the plan read among `sent`: (GROUP_DESC request, FLOW request).
fn plan_read_xids(sent: &[Message]) -> (u32, u32) {
    use fabricflow_proto::openflow::multipart::MultipartRequestBody as Req;
    let gx = xid_of(
        sent,
        |b| matches!(b, Body::MultipartRequest(r) if matches!(r.body, Req::GroupDesc)),
    );
    let fx = xid_of(
        sent,
        |b| matches!(b, Body::MultipartRequest(r) if matches!(r.body, Req::Flow(_))),
    );
    (gx, fx)
}

/// Connects and answers the plan read with `groups` and `flows`.
fn connect_with(
    mut s: Session,
    groups: Vec<GroupDesc>,
    flows: Vec<FlowStats>,
) -> (Session, Vec<Message>) {
    let hs = connect_at(&mut s, 0);
    let (gx, fx) = plan_read_xids(&hs);
    feed(
        &mut s,
        &Message::multipart_reply(gx, 0, MultipartReplyBody::GroupDesc(groups)),
        MS,
    );
    feed(
        &mut s,
        &Message::multipart_reply(fx, 0, MultipartReplyBody::Flow(flows)),
        MS,
    );
    (s, hs)
}

fn cnm_frame(qntz_fb: u8) -> Vec<u8> {
    cnm_frame_to("02:00:00:01:00:01", qntz_fb)
}

/// A CNM to `source`, about a frame it sent to a host of group 7.
fn cnm_frame_to(source: &str, qntz_fb: u8) -> Vec<u8> {
    let sampled = fabricflow_proto::ethernet::EthernetFrame::new(
        "02:00:00:07:00:01".parse().unwrap(),
        source.parse().unwrap(),
        0x0800,
        vec![0x45; 46],
    );
    let mut bytes = bytes::BytesMut::new();
    sampled.encode_header(&mut bytes);
    bytes.extend_from_slice(&[0x45; 46]);
    let cp: MacAddr = "02:00:00:07:01:07".parse().unwrap();
    Cnm::for_sampled_frame(&bytes, cp, Cpid::new(cp, 3), qntz_fb, 100, 10)
        .unwrap()
        .to_vec()
}

fn culprit(src: &str, dst: &str) -> Culprit {
    Culprit {
        src: src.parse().unwrap(),
        dst: dst.parse().unwrap(),
    }
}

fn packet_in(port: u32, data: Vec<u8>) -> Message {
    Message::new(
        77,
        Body::PacketIn(PacketIn {
            buffer_id: OFP_NO_BUFFER,
            total_len: u16::try_from(data.len()).unwrap(),
            reason: PacketInReason::Action,
            table_id: 0,
            cookie: PlanConventions::default().cookie,
            r#match: Match::new().with(OxmField::InPort(port)),
            data,
        }),
    )
}

fn group_mods(msgs: &[Message]) -> Vec<GroupMod> {
    msgs.iter()
        .filter_map(|m| match &m.body {
            Body::GroupMod(g) => Some(g.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn handshake_configures_the_connection_and_reads_the_plan() {
    let mut s = session();
    assert_eq!(s.next_deadline_ns(), None);
    s.on_connected(0);
    let first: Vec<&str> = drain(&mut s).iter().map(|m| m.body.name()).collect();
    assert_eq!(
        first,
        vec!["OFPT_HELLO"],
        "nothing else before the switch's HELLO"
    );
    let mut s = session();
    let msgs = connect_at(&mut s, 0);
    let names: Vec<&str> = msgs.iter().map(|m| m.body.name()).collect();
    assert_eq!(names.len(), 8, "{names:?}");
    assert!(matches!(msgs[0].body, Body::Hello(_)));
    assert!(matches!(msgs[1].body, Body::FeaturesRequest));
    assert!(matches!(&msgs[2].body, Body::SetConfig(c) if c.miss_send_len == 0xffff));
    assert!(matches!(&msgs[3].body, Body::SetControllerId(c) if c.controller_id == 0x0fab));
    assert!(matches!(&msgs[4].body, Body::RoleRequest(r) if r.role == ControllerRole::Equal));
    assert!(matches!(&msgs[6].body, Body::MultipartRequest(_)));
    match &msgs[7].body {
        Body::MultipartRequest(r) => match &r.body {
            fabricflow_proto::openflow::multipart::MultipartRequestBody::Flow(f) => {
                assert_eq!(f.cookie, 0x0fab_f10a_0000_0001);
                assert_eq!(f.cookie_mask, u64::MAX);
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    // Echo is answered.
    let echo = Message::echo_request(5, vec![1, 2]);
    feed(&mut s, &echo, 1);
    assert!(matches!(drain(&mut s)[0].body, Body::EchoReply(_)));
}

#[test]
fn learns_the_plan_then_a_cnm_on_a_fabric_port_rewrites_weights_keeping_structure() {
    let (mut s, _) = running(plan_groups());
    assert!(s.status().plan_ready);
    assert!(
        drain(&mut s).is_empty(),
        "installed weights match P = 100: nothing to write"
    );
    assert_eq!(s.policy().ports(), &[3, 4, 5]);
    feed(&mut s, &packet_in(3, cnm_frame(63)), 2 * MS);
    let p = s.policy().p_percent(3).unwrap();
    assert!((p - 50.78125).abs() < 1e-9, "{p}");
    let sent = drain(&mut s);
    let mods = group_mods(&sent);
    assert_eq!(mods.len(), 1);
    let m = &mods[0];
    assert_eq!(
        m.command,
        fabricflow_proto::openflow::group::GroupModCommand::Modify
    );
    assert_eq!(m.group_type, GroupType::Select);
    assert_eq!(m.group_id, 1003);
    assert_eq!(m.weights(), vec![129, 126, 1]);
    let structure: Vec<_> = m
        .buckets
        .iter()
        .map(|b| (b.actions.clone(), b.watch_port, b.watch_group))
        .collect();
    let expected: Vec<_> = plan_groups()[0]
        .buckets
        .iter()
        .map(|b| (b.actions.clone(), b.watch_port, b.watch_group))
        .collect();
    assert_eq!(structure, expected);
    assert_eq!(s.counters().cnm_received, 1);
    assert_eq!(s.counters().group_mods_sent, 1);
    assert_eq!(s.status().groups[0].weights, vec![129, 126, 1]);
}

#[test]
fn each_group_mod_answering_a_cnm_hands_out_the_cnms_arrival_and_a_barrier_confirms_it() {
    let (mut s, _) = running(plan_groups());
    drain(&mut s);
    assert_eq!(s.take_cnm_reactions().count(), 0);
    feed(&mut s, &packet_in(3, cnm_frame(63)), 2 * MS);
    let sent = drain(&mut s);
    assert_eq!(group_mods(&sent).len(), 1);
    // A barrier follows the GROUP_MOD; its reply confirms the write 3 ms after the CNM.
    assert!(matches!(
        sent.last().map(|m| &m.body),
        Some(Body::BarrierRequest)
    ));
    let barrier = sent.last().unwrap().xid;
    assert_eq!(s.take_cnm_reactions().collect::<Vec<_>>(), vec![2 * MS]);
    assert_eq!(s.take_cnm_reactions().count(), 0, "taken once");
    assert_eq!(s.status().cnm_to_group_mod_confirmed.count, 0);
    feed(&mut s, &Message::new(barrier, Body::BarrierReply), 5 * MS);
    let confirmed = s.status().cnm_to_group_mod_confirmed;
    assert_eq!(confirmed.count, 1);
    assert!((confirmed.sum_s - 0.003).abs() < 1e-12);
    // A CNM from a host port changes nothing and answers nothing.
    feed(&mut s, &packet_in(1, cnm_frame(63)), 3 * MS);
    assert!(group_mods(&drain(&mut s)).is_empty());
    assert_eq!(s.take_cnm_reactions().count(), 0);
}

#[test]
fn cnms_from_host_ports_malformed_or_before_the_plan_are_counted_and_dropped() {
    let mut s = session();
    connect_at(&mut s, 0);
    feed(&mut s, &packet_in(3, cnm_frame(63)), MS);
    assert_eq!(s.counters().cnm_dropped.get(&DropReason::NoPlan), Some(&1));

    let (mut s, _) = running(plan_groups());
    drain(&mut s);
    // Port 1 is a host port: not in any bucket nor transit flow.
    feed(&mut s, &packet_in(1, cnm_frame(63)), 2 * MS);
    // Version 1: malformed.
    let mut bad = cnm_frame(63);
    bad[14] = 0x10;
    feed(&mut s, &packet_in(3, bad), 3 * MS);
    // Truncated by the switch.
    let full = cnm_frame(63);
    let mut pi = packet_in(3, full[..20].to_vec());
    if let Body::PacketIn(p) = &mut pi.body {
        p.total_len = 60;
    }
    feed(&mut s, &pi, 4 * MS);
    // Not a CNM at all.
    let mut arp = cnm_frame(1);
    arp[12] = 0x08;
    arp[13] = 0x06;
    feed(&mut s, &packet_in(4, arp), 5 * MS);
    // No IN_PORT.
    let mut nip = packet_in(3, cnm_frame(63));
    if let Body::PacketIn(p) = &mut nip.body {
        p.r#match = Match::new();
    }
    feed(&mut s, &nip, 6 * MS);
    let d = &s.counters().cnm_dropped;
    assert_eq!(d.get(&DropReason::NotFabricPort), Some(&1));
    assert_eq!(d.get(&DropReason::Malformed), Some(&1));
    assert_eq!(d.get(&DropReason::Truncated), Some(&1));
    assert_eq!(d.get(&DropReason::NotCnm), Some(&1));
    assert_eq!(d.get(&DropReason::NoInPort), Some(&1));
    assert_eq!(s.counters().cnm_received, 0);
    assert_eq!(s.policy().p_percent(3), Some(100.0));
    assert!(group_mods(&drain(&mut s)).is_empty());
}

fn is_group_desc_request(m: &Message) -> bool {
    matches!(&m.body, Body::MultipartRequest(r) if matches!(r.body, fabricflow_proto::openflow::multipart::MultipartRequestBody::GroupDesc))
}

#[test]
fn a_switch_without_the_plan_is_waited_for() {
    // No controller flow and no decision point: the controller has not programmed it yet.
    let (mut s, _) = connect_with(session(), vec![], vec![]);
    assert!(!s.status().plan_ready);
    assert!(s.take_plan_changed());
    // The next read comes at the refresh period.
    let t = s.next_deadline_ns().unwrap();
    assert!(t <= 5_000 * MS);
    s.on_timer(5_000 * MS + MS);
    let msgs = drain(&mut s);
    assert!(msgs.iter().any(is_group_desc_request));
}

/// A fat-tree's top switch: the controller's flows, among them transit rules down to groups 0
/// and 7 on ports 1 and 2, and no SELECT group (every route there is minimal).
fn top_switch_flows() -> Vec<FlowStats> {
    let cookie = PlanConventions::default().cookie;
    let down = |group: &str, port: u32| {
        let m = Match::new().with(OxmField::EthDst {
            value: group.parse().unwrap(),
            mask: Some("ff:ff:ff:ff:00:00".parse().unwrap()),
        });
        crate::plan::tests::flow(2, cookie, m, out(port))
    };
    let classify = crate::plan::tests::flow(
        0,
        cookie,
        Match::new().with(OxmField::InPort(1)),
        vec![Action::Output {
            port: OFPP_CONTROLLER,
            max_len: 0xffff,
        }],
    );
    vec![
        classify,
        down("02:00:00:00:00:00", 1),
        down("02:00:00:07:00:00", 2),
    ]
}

#[test]
fn a_plan_without_decision_points_is_ready_with_nothing_to_adapt() {
    let (mut s, _) = connect_with(session(), vec![], top_switch_flows());
    let st = s.status();
    assert!(st.connected);
    assert!(
        st.plan_ready,
        "the controller's plan is installed: nothing to wait for"
    );
    assert!(st.groups.is_empty());
    assert!(s.take_plan_changed(), "the emulated CP starts on its ports");
    let plan = s.plan().unwrap();
    assert!(plan.is_installed() && plan.is_empty());
    assert_eq!(
        plan.fabric_ports.iter().copied().collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(s.policy().ports(), &[1, 2]);
    // A CNM from a fabric port is accepted and, nothing here having chosen its culprit's
    // route, relayed towards the culprit's source; there is nothing to write.
    feed(&mut s, &packet_in(2, cnm_frame(63)), 2 * MS);
    assert_eq!(s.counters().cnm_received, 0);
    assert_eq!(s.counters().cnm_relayed, 1);
    let sent = drain(&mut s);
    assert!(group_mods(&sent).is_empty());
    assert_eq!(packet_outs(&sent).len(), 1);
    // The periodic read finds the same plan: still ready, nothing changed.
    s.on_timer(5_000 * MS + MS);
    let msgs = drain(&mut s);
    assert!(msgs.iter().any(is_group_desc_request));
    let reads = s.counters().plan_reads;
    let xid = |pred: fn(&Message) -> bool| msgs.iter().find(|m| pred(m)).unwrap().xid;
    let gx = xid(is_group_desc_request);
    let fx = xid(
        |m| matches!(&m.body, Body::MultipartRequest(r) if matches!(r.body, fabricflow_proto::openflow::multipart::MultipartRequestBody::Flow(_))),
    );
    let now = 5_000 * MS + 2 * MS;
    feed(
        &mut s,
        &Message::multipart_reply(gx, 0, MultipartReplyBody::GroupDesc(vec![])),
        now,
    );
    feed(
        &mut s,
        &Message::multipart_reply(fx, 0, MultipartReplyBody::Flow(top_switch_flows())),
        now,
    );
    assert_eq!(s.counters().plan_reads, reads + 1);
    assert!(s.status().plan_ready);
    assert!(!s.take_plan_changed());
    assert_eq!(s.counters().plan_changes, 1);
}

#[test]
fn role_rejection_is_tolerated_and_group_mod_errors_trigger_a_plan_read() {
    let (mut s, hs) = running(plan_groups());
    let rx = xid_of(&hs, |b| matches!(b, Body::RoleRequest(_)));
    feed(
        &mut s,
        &Message::new(
            rx,
            Body::Error(ErrorMsg {
                error: ErrorType::RoleRequestFailed(RoleRequestFailedCode::Unsup),
                data: vec![],
            }),
        ),
        MS,
    );
    assert_eq!(s.status().role, Some(RoleState::Rejected));
    drain(&mut s);
    feed(&mut s, &packet_in(3, cnm_frame(63)), 2 * MS);
    let sent = drain(&mut s);
    let gm = xid_of(&sent, |b| matches!(b, Body::GroupMod(_)));
    feed(
        &mut s,
        &Message::new(
            gm,
            Body::Error(ErrorMsg {
                error: ErrorType::GroupModFailed(GroupModFailedCode::UnknownGroup),
                data: vec![],
            }),
        ),
        3 * MS,
    );
    assert_eq!(s.counters().group_mod_errors, 1);
    let again = drain(&mut s);
    assert!(again.iter().any(|m| matches!(&m.body, Body::MultipartRequest(r) if matches!(r.body, fabricflow_proto::openflow::multipart::MultipartRequestBody::GroupDesc))));
}

#[test]
fn port_stats_deltas_feed_the_byte_counter() {
    let (mut s, _) = running(plan_groups());
    feed(&mut s, &packet_in(3, cnm_frame(63)), 2 * MS);
    drain(&mut s);
    let stats = |tx: u64| {
        MultipartReplyBody::PortStats(vec![PortStats {
            port_no: 3,
            tx_bytes: tx,
            ..PortStats::default()
        }])
    };
    for (i, tx) in [1_000u64, 1_000 + 3 * 150_000].into_iter().enumerate() {
        let now = (200 + 100 * i as u64) * MS;
        s.on_timer(now);
        let msgs = drain(&mut s);
        let x = xid_of(
            &msgs,
            |b| matches!(b, Body::MultipartRequest(r) if matches!(r.body, fabricflow_proto::openflow::multipart::MultipartRequestBody::PortStats { .. })),
        );
        feed(&mut s, &Message::multipart_reply(x, 0, stats(tx)), now);
    }
    let p = s.policy().p_percent(3).unwrap();
    assert!(
        (p - 53.78125).abs() < 1e-9,
        "three increases of 1 point: {p}"
    );
    assert!(!group_mods(&drain(&mut s)).is_empty());
}

#[test]
fn relearning_an_unchanged_plan_writes_nothing_and_keeps_p() {
    let (mut s, _) = running(plan_groups());
    feed(&mut s, &packet_in(3, cnm_frame(63)), 2 * MS);
    drain(&mut s);
    // Reconnect (bridge re-created with the weights we wrote).
    s.on_disconnected();
    let hs = connect_at(&mut s, 10 * MS);
    let (gx, fx) = plan_read_xids(&hs);
    let mut g = plan_groups();
    for (b, w) in g[0].buckets.iter_mut().zip([129, 126, 1]) {
        b.weight = w;
    }
    feed(
        &mut s,
        &Message::multipart_reply(gx, 0, MultipartReplyBody::GroupDesc(g)),
        11 * MS,
    );
    feed(
        &mut s,
        &Message::multipart_reply(fx, 0, MultipartReplyBody::Flow(plan_flows())),
        11 * MS,
    );
    assert!(group_mods(&drain(&mut s)).is_empty());
    assert!((s.policy().p_percent(3).unwrap() - 50.78125).abs() < 1e-9);
    // A re-created bridge with the controller's initial weights gets P's weights back.
    s.on_disconnected();
    let hs = connect_at(&mut s, 20 * MS);
    let (gx, fx) = plan_read_xids(&hs);
    feed(
        &mut s,
        &Message::multipart_reply(gx, 0, MultipartReplyBody::GroupDesc(plan_groups())),
        21 * MS,
    );
    feed(
        &mut s,
        &Message::multipart_reply(fx, 0, MultipartReplyBody::Flow(plan_flows())),
        21 * MS,
    );
    let mods = group_mods(&drain(&mut s));
    assert_eq!(mods.len(), 1);
    assert_eq!(mods[0].weights(), vec![129, 126, 1]);
}

#[test]
fn a_generated_cnm_is_injected_and_charged_with_source_processing() {
    let mut agent = published();
    agent.weights.min_update_interval_line_bytes = 0;
    agent.weights.min_update_interval_buffer_drains = 0.0;
    agent.policy.variant = crate::policy::Variant::SourceProcessing;
    let mut s = Session::new(SessionConfig::default(), &agent).unwrap();
    let hs = connect_at(&mut s, 0);
    let (gx, fx) = plan_read_xids(&hs);
    feed(
        &mut s,
        &Message::multipart_reply(gx, 0, MultipartReplyBody::GroupDesc(plan_groups())),
        MS,
    );
    feed(
        &mut s,
        &Message::multipart_reply(fx, 0, MultipartReplyBody::Flow(plan_flows())),
        MS,
    );
    drain(&mut s);
    let frame = cnm_frame(40);
    // Culprit towards group 7, whose decision point is port 3.
    feed(&mut s, &Message::hello(1), MS);
    assert_eq!(
        s.policy().candidates(3),
        vec![4],
        "group 1003's candidate bucket"
    );
    s.inject_cnm(
        frame.clone(),
        4,
        culprit("02:00:00:01:00:01", "02:00:00:07:00:01"),
        40,
        2 * MS,
    );
    assert_eq!(s.policy().counters().congestion_observed, 1);
    assert_eq!(s.policy().candidate_congestion(3, 2 * MS), Some(40.0));
    let sent = drain(&mut s);
    let po = sent
        .iter()
        .find_map(|m| match &m.body {
            Body::PacketOut(p) => Some(p.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(po.in_port, OFPP_CONTROLLER);
    assert_eq!(
        po.actions,
        vec![Action::Output {
            port: OFPP_TABLE,
            max_len: 0
        }]
    );
    assert_eq!(po.data, frame);
    assert!(s.policy().p_percent(3).unwrap() < 100.0);
    assert_eq!(s.counters().cnm_generated_charged, 1);
    // Same-group culprit (not in the inject table): injected, not charged.
    s.inject_cnm(
        frame,
        4,
        culprit("02:00:00:01:00:01", "02:00:00:01:00:02"),
        40,
        3 * MS,
    );
    assert_eq!(s.counters().cnm_generated, 2);
    assert_eq!(s.counters().cnm_generated_charged, 1);
    assert_eq!(
        s.plan()
            .unwrap()
            .local_hosts
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        vec![OWN_HOST.to_owned()]
    );
    // A CNM to a host of this switch: charged, but not injected into the pipeline.
    let sent_before = drain(&mut s).len();
    let p3 = s.policy().p_percent(3).unwrap();
    s.inject_cnm(
        cnm_frame_to(OWN_HOST, 40),
        4,
        culprit(OWN_HOST, "02:00:00:07:00:01"),
        40,
        4 * MS,
    );
    assert!(
        !drain(&mut s)
            .iter()
            .any(|m| matches!(m.body, Body::PacketOut(_))),
        "no PACKET_OUT for an own host (drained {sent_before} before)"
    );
    assert_eq!(s.counters().cnm_to_own_host, 1);
    assert_eq!(s.counters().cnm_generated_charged, 2);
    assert!(
        s.policy().p_percent(3).unwrap() != p3,
        "still charged locally"
    );
}

fn group_stats_reply(xid: u32, bucket0_bytes: u64) -> Message {
    group_stats_reply_of(xid, [bucket0_bytes, 7_000_000, 9])
}

/// The index of the GROUP_MOD among `msgs`, which must follow a read of group 1003's counters
/// (OVS zeroes them on MODIFY).
fn write_after_its_read(msgs: &[Message]) -> usize {
    let at = msgs
        .iter()
        .position(|m| matches!(m.body, Body::GroupMod(_)))
        .unwrap();
    assert!(at > 0 && is_group_stats(&msgs[at - 1].body, 1003));
    at
}

fn is_group_stats(b: &Body, group_id: u32) -> bool {
    matches!(b, Body::MultipartRequest(r)
        if r.body == fabricflow_proto::openflow::multipart::MultipartRequestBody::Group { group_id })
}

#[test]
fn minimal_bucket_bytes_feed_the_byte_counter_across_weight_writes() {
    let mut agent = published();
    agent.weights.min_update_interval_line_bytes = 0;
    agent.weights.min_update_interval_buffer_drains = 0.0;
    let cfg = SessionConfig {
        byte_counter: ByteCounter::MinimalBucket,
        ..SessionConfig::default()
    };
    let (mut s, _) = connect(Session::new(cfg, &agent).unwrap(), plan_groups());
    feed(&mut s, &packet_in(3, cnm_frame(63)), 2 * MS);
    let msgs = drain(&mut s);
    // The write is preceded by a read of that group's counters (OVS zeroes them on MODIFY).
    let at = write_after_its_read(&msgs);
    // Bytes before the write: only a baseline (the first reading).
    feed(&mut s, &group_stats_reply(msgs[at - 1].xid, 10_000), 3 * MS);
    assert!((s.policy().p_percent(3).unwrap() - 50.78125).abs() < 1e-9);

    // The periodic read asks for every group and no port statistics; the MODIFY zeroed the
    // counter, so all 450 000 octets are new: three increases (B = 150 000).
    s.on_timer(200 * MS);
    let msgs = drain(&mut s);
    assert!(!msgs.iter().any(|m| is_port_stats(&m.body)));
    let x = xid_of(&msgs, |b| is_group_stats(b, OFPG_ALL));
    feed(&mut s, &group_stats_reply(x, 3 * 150_000), 200 * MS);
    let p = s.policy().p_percent(3).unwrap();
    assert!(
        (p - 53.78125).abs() < 1e-9,
        "three increases of 1 point: {p}"
    );
    assert_eq!(s.counters().group_stats_replies, 2);

    // The increases were written, again right after a read of the group; OVS answers in
    // order: the read before the MODIFY (100 000 more octets in the old epoch), then the
    // periodic one (60 000 since the MODIFY zeroed the counter): 160 000, one increase.
    s.on_timer(300 * MS);
    let msgs = drain(&mut s);
    let at = msgs
        .iter()
        .position(|m| matches!(m.body, Body::GroupMod(_)))
        .unwrap();
    assert!(is_group_stats(&msgs[at - 1].body, 1003));
    let periodic = xid_of(&msgs, |b| is_group_stats(b, OFPG_ALL));
    feed(
        &mut s,
        &group_stats_reply(msgs[at - 1].xid, 550_000),
        300 * MS,
    );
    assert!((s.policy().p_percent(3).unwrap() - p).abs() < 1e-9);
    feed(&mut s, &group_stats_reply(periodic, 60_000), 300 * MS);
    let q = s.policy().p_percent(3).unwrap();
    assert!((q - (p + 1.0)).abs() < 1e-9, "one more increase: {q}");

    // A refused MODIFY zeroes nothing: the next reading continues the old epoch.
    s.on_timer(400 * MS);
    let msgs = drain(&mut s);
    let at = msgs
        .iter()
        .position(|m| matches!(m.body, Body::GroupMod(_)))
        .unwrap();
    let periodic = xid_of(&msgs, |b| is_group_stats(b, OFPG_ALL));
    feed(
        &mut s,
        &group_stats_reply(msgs[at - 1].xid, 70_000),
        400 * MS,
    );
    feed(
        &mut s,
        &Message::new(
            msgs[at].xid,
            Body::Error(ErrorMsg {
                error: ErrorType::GroupModFailed(GroupModFailedCode::UnknownGroup),
                data: vec![],
            }),
        ),
        400 * MS,
    );
    // 20 000 + 270 000 octets since the last increase: one more; had the counter been taken as
    // zeroed, 20 000 + 340 000 would give two.
    feed(&mut s, &group_stats_reply(periodic, 340_000), 400 * MS);
    let r = s.policy().p_percent(3).unwrap();
    assert!(
        (r - (q + 1.0)).abs() < 1e-9,
        "exactly one more increase: {r}"
    );
}

fn group_stats_reply_of(xid: u32, bytes: [u64; 3]) -> Message {
    use fabricflow_proto::openflow::multipart::{BucketCounter, GroupStats};
    Message::multipart_reply(
        xid,
        0,
        MultipartReplyBody::Group(vec![GroupStats {
            group_id: 1003,
            bucket_stats: bytes
                .iter()
                .map(|&byte_count| BucketCounter {
                    packet_count: 0,
                    byte_count,
                })
                .collect(),
            ..GroupStats::default()
        }]),
    )
}

fn is_port_stats(b: &Body) -> bool {
    matches!(b, Body::MultipartRequest(r)
        if matches!(r.body, fabricflow_proto::openflow::multipart::MultipartRequestBody::PortStats { .. }))
}

/// With the yield comparison on (and the port byte counter), every stats period reads the
/// ports and the groups; a write is preceded by a read of its group, whose octets count
/// against the weights installed before the write; a decision point whose minimal choice
/// delivered ~1.8× its weight's share holds the next cut.
#[test]
fn group_octets_reach_the_yield_comparison() {
    let mut agent = published();
    agent.policy.yield_comparison = true;
    agent.weights.min_update_interval_line_bytes = 0;
    agent.weights.min_update_interval_buffer_drains = 0.0;
    let (mut s, _) = connect(
        Session::new(SessionConfig::default(), &agent).unwrap(),
        plan_groups(),
    );
    feed(&mut s, &packet_in(3, cnm_frame(63)), 2 * MS);
    let p = s.policy().p_percent(3).unwrap();
    let msgs = drain(&mut s);
    let at = write_after_its_read(&msgs);
    // The first reading is the baseline; the MODIFY zeroes the counters after it.
    feed(
        &mut s,
        &group_stats_reply_of(msgs[at - 1].xid, [5, 0, 0]),
        3 * MS,
    );
    let mut port_reads = 0;
    for (t, bytes) in [(200, [900_000, 100_000, 0]), (300, [1_800_000, 200_000, 0])] {
        s.on_timer(t * MS);
        let msgs = drain(&mut s);
        port_reads += msgs.iter().filter(|m| is_port_stats(&m.body)).count();
        let x = xid_of(&msgs, |b| is_group_stats(b, OFPG_ALL));
        feed(&mut s, &group_stats_reply_of(x, bytes), t * MS);
    }
    assert_eq!(s.counters().group_stats_replies, 3);
    assert!(
        port_reads > 0,
        "the port byte counter still reads the ports"
    );
    // 1 800 000 of 2 000 000 octets minimal where ~50 % was installed: the cut is held.
    feed(&mut s, &packet_in(3, cnm_frame(63)), 300 * MS + 1);
    assert_eq!(s.policy().p_percent(3), Some(p));
    assert_eq!(s.policy().counters().cuts_held_by_yield, 1);
    assert_eq!(s.status().policy.cuts_held_by_yield, 1);
}

/// A CNM to `source` about a frame it sent to `dst`, already relayed `relays` times, as it
/// arrives (VLAN-tagged when `vlan`).
fn relayed_cnm_frame(source: &str, dst: &str, relays: u8, vlan: bool) -> Vec<u8> {
    let cp: MacAddr = "02:00:00:07:01:07".parse().unwrap();
    let cnm = Cnm {
        reserved: relays,
        qntz_fb: 33,
        cpid: Cpid::new(cp, 2),
        q_offset: -40,
        q_delta: 7,
        encap_priority: 0,
        encap_da: dst.parse().unwrap(),
        encap_msdu: vec![0x45; 30],
    };
    let tag = vlan.then_some(fabricflow_proto::ethernet::VlanTag {
        tpid: 0x8100,
        pcp: 6,
        dei: false,
        vid: 1,
    });
    cnm.to_frame(source.parse().unwrap(), cp, tag).to_vec()
}

fn packet_outs(msgs: &[Message]) -> Vec<PacketOut> {
    msgs.iter()
        .filter_map(|m| match &m.body {
            Body::PacketOut(p) => Some(p.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_cnm_a_switch_without_decision_points_receives_goes_back_into_the_pipeline_counted_up() {
    let (mut s, _) = connect_with(session(), vec![], top_switch_flows());
    drain(&mut s);
    for vlan in [false, true] {
        let before = s.counters().cnm_relayed;
        let arriving = relayed_cnm_frame("02:00:00:00:00:01", "02:00:00:07:00:01", 2, vlan);
        feed(&mut s, &packet_in(2, arriving.clone()), 2 * MS);
        let pos = packet_outs(&drain(&mut s));
        assert_eq!(pos.len(), 1, "one relay");
        let po = &pos[0];
        assert_eq!(
            po.in_port, OFPP_CONTROLLER,
            "the in_port table 0 sends to transit"
        );
        assert_eq!(
            po.actions,
            vec![Action::Output {
                port: OFPP_TABLE,
                max_len: 0
            }]
        );
        // The same frame but for the count: 2 → 3 in the ReservedV bits.
        let expected = relayed_cnm_frame("02:00:00:00:00:01", "02:00:00:07:00:01", 3, vlan);
        assert_eq!(po.data, expected);
        assert_ne!(po.data, arriving);
        let (_, cnm) = Cnm::parse_frame(&po.data).unwrap();
        assert_eq!(cnm.reserved, 3);
        assert_eq!(s.counters().cnm_relayed, before + 1);
    }
    assert_eq!(s.counters().cnm_received, 0);
    assert_eq!(s.policy().p_percent(1), Some(100.0));
    assert_eq!(s.policy().p_percent(2), Some(100.0));
}

#[test]
fn a_switch_with_decision_points_charges_every_cnm_it_receives_never_relays() {
    let (mut s, _) = running(plan_groups());
    drain(&mut s);
    for (i, (src, dst)) in [
        // Its decision point's destination, relayed before or not.
        ("02:00:00:02:00:01", "02:00:00:07:00:01"),
        // Own group, another switch's host: the arrival port.
        ("02:00:00:02:00:01", "02:00:00:01:00:09"),
        // Own host.
        (OWN_HOST, "02:00:00:01:00:09"),
    ]
    .into_iter()
    .enumerate()
    {
        let frame = relayed_cnm_frame(src, dst, 5, false);
        feed(&mut s, &packet_in(4, frame), (i as u64 + 2) * MS);
        assert!(packet_outs(&drain(&mut s)).is_empty());
        assert_eq!(s.counters().cnm_received, i as u64 + 1);
    }
    assert_eq!(s.counters().cnm_relayed, 0);
}

#[test]
fn a_relay_uses_the_configured_in_port_and_a_spent_budget_is_a_counted_drop() {
    let mut agent = published();
    agent.runtime.emulated_cp.inject_in_port = Some(0xffff_fff0);
    let cfg = SessionConfig {
        cnm_inject_in_port: 0xffff_fff0,
        ..SessionConfig::default()
    };
    let (mut s, _) = connect_with(
        Session::new(cfg, &agent).unwrap(),
        vec![],
        top_switch_flows(),
    );
    drain(&mut s);
    let frame = relayed_cnm_frame("02:00:00:00:00:01", "02:00:00:07:00:01", 0, false);
    feed(&mut s, &packet_in(2, frame), 2 * MS);
    assert_eq!(packet_outs(&drain(&mut s))[0].in_port, 0xffff_fff0);
    let spent = crate::switch_core::MAX_CNM_RELAYS;
    let frame = relayed_cnm_frame("02:00:00:00:00:01", "02:00:00:07:00:01", spent, false);
    feed(&mut s, &packet_in(2, frame), 3 * MS);
    assert!(packet_outs(&drain(&mut s)).is_empty());
    assert_eq!(
        s.counters().cnm_dropped.get(&DropReason::RelayBudgetSpent),
        Some(&1)
    );
    assert_eq!(s.counters().cnm_relayed, 1);
    assert_eq!(s.counters().cnm_received, 0);
}

#[test]
fn with_cnm_interfaces_a_relay_and_a_generated_cnm_leave_by_the_route_port_not_packet_out() {
    let (mut s, _) = connect_with(session(), vec![], top_switch_flows());
    drain(&mut s);
    s.set_cnm_interfaces([1, 2].into());
    // A CNM read from port 2's interface for a host of group 0: relayed on port 1, the transit
    // route to group 0, by the shell; nothing for the switch.
    let arriving = relayed_cnm_frame("02:00:00:00:00:01", "02:00:00:07:00:01", 0, false);
    s.on_interface_frame(2, &arriving, 2 * MS);
    assert!(packet_outs(&drain(&mut s)).is_empty());
    let frames = s.take_port_frames();
    let expected = relayed_cnm_frame("02:00:00:00:00:01", "02:00:00:07:00:01", 1, false);
    assert_eq!(frames, vec![(1, expected)]);
    assert!(s.take_port_frames().is_empty(), "taken once");
    let c = s.counters();
    assert_eq!((c.cnm_read_interface, c.cnm_sent_interface), (1, 1));
    assert_eq!(c.cnm_relayed, 1);
    // From a port the plan takes no CNM from, or not a CNM: counted and dropped.
    s.on_interface_frame(9, &arriving, 3 * MS);
    s.on_interface_frame(2, &arriving[..20], 3 * MS);
    let c = s.counters();
    assert_eq!(c.cnm_dropped.get(&DropReason::NotFabricPort), Some(&1));
    assert_eq!(c.cnm_dropped.get(&DropReason::Malformed), Some(&1));
    assert_eq!(c.cnm_read_interface, 3);
    // A destination without a transit route, or a route port the shell does not send on:
    // the pipeline.
    s.set_cnm_interfaces([2].into());
    s.on_interface_frame(2, &arriving, 4 * MS);
    assert_eq!(packet_outs(&drain(&mut s)).len(), 1);
    assert!(s.take_port_frames().is_empty());
}

#[test]
fn with_cnm_interfaces_a_generated_cnm_follows_the_transit_route_or_falls_back() {
    let (mut s, _) = running(plan_groups());
    drain(&mut s);
    s.set_cnm_interfaces([3, 4, 5].into());
    // A culprit of group 7: the transit table routes group 7 to port 5.
    let to_group7 = cnm_frame_to("02:00:00:07:00:09", 40);
    s.inject_cnm(
        to_group7.clone(),
        4,
        culprit("02:00:00:07:00:09", "02:00:00:01:00:01"),
        40,
        2 * MS,
    );
    assert!(packet_outs(&drain(&mut s)).is_empty());
    assert_eq!(s.take_port_frames(), vec![(5, to_group7)]);
    // Group 1 has no transit rule on this switch: into the pipeline.
    s.inject_cnm(
        cnm_frame(40),
        4,
        culprit("02:00:00:01:00:01", "02:00:00:07:00:01"),
        40,
        3 * MS,
    );
    assert_eq!(packet_outs(&drain(&mut s)).len(), 1);
    assert!(s.take_port_frames().is_empty());
    assert_eq!(s.counters().cnm_sent_interface, 1);
    assert_eq!(s.counters().cnm_generated, 2);
}

/// Without DRB the session does not wake every `tick_period`: it wakes for its polls and for
/// the policy's idle timer, which then raises P when the timer says, not a tick period later.
#[test]
fn the_session_wakes_for_the_idle_timer_not_every_tick_period() {
    let tick = SessionConfig::default().tick_period_ns;
    // The published policy has no idle timer: the first wake is a poll, many ticks away.
    let (mut s, _) = running(plan_groups());
    drain(&mut s);
    let first = s.next_deadline_ns().unwrap();
    assert!(first >= MS + 50 * tick, "woke at {first}");

    let mut agent = published();
    agent.policy.increase_timer_line_bytes = Some(1_000);
    agent.weights.min_update_interval_line_bytes = 0;
    agent.weights.min_update_interval_buffer_drains = 0.0;
    let (mut s, _) = connect(
        Session::new(SessionConfig::default(), &agent).unwrap(),
        plan_groups(),
    );
    s.on_timer(MS);
    feed(&mut s, &packet_in(3, cnm_frame(63)), 2 * MS);
    let cut = s.policy().p_percent(3).unwrap();
    assert!(cut < 100.0);
    // The timer is at least twice the port-stats period: 200 ms after the CNM.
    let period = 2 * SessionConfig::default().port_stats_period_ns;
    let mut wakes = 0;
    let mut now = 2 * MS;
    while s.policy().p_percent(3).unwrap() <= cut {
        now = s.next_deadline_ns().unwrap();
        s.on_timer(now);
        drain(&mut s);
        wakes += 1;
        assert!(wakes < 50, "P never rose by {now}");
    }
    assert_eq!(now, 2 * MS + period, "the rise came at the timer's instant");
    assert!(wakes < 10, "{wakes} wakes for one {period} ns timer");
}
