//! Whole conversations against a scripted switch, with a simulated clock.

use super::*;
use crate::desired::fixture::LineFixture;
use crate::desired::PlanSource;
use fabricflow_proto::openflow::bundle::BundleCtrlType;
use fabricflow_proto::openflow::flow::FlowModCommand;
use fabricflow_proto::openflow::message::Body;
use fabricflow_proto::openflow::multipart::{MultipartReply, OFPMPF_REPLY_MORE};
use fabricflow_proto::openflow::oxm::{Match, OxmField};
use fabricflow_proto::openflow::packet::PacketIn;
use fabricflow_proto::openflow::switch::{FeaturesReply, Role};
use fabricflow_proto::openflow::symmetric::{ErrorMsg, ErrorType};
use std::collections::BTreeSet;

const COOKIE: u64 = 0xabc;
const DPID: u64 = 0x101;

fn cfg() -> SessionConfig {
    SessionConfig {
        cookie: COOKIE,
        owned_groups: 1000..=1999,
        ..SessionConfig::default()
    }
}

fn desired() -> Arc<DesiredSwitch> {
    let f = LineFixture::new(0x100, 3, COOKIE);
    Arc::new(f.plan(&BTreeSet::new()).remove(&DPID).unwrap())
}

fn feed(s: &mut Session, m: Message, now: Instant) {
    s.handle_bytes(&m.to_bytes(), now);
}

fn out(s: &mut Session) -> Vec<Message> {
    std::iter::from_fn(|| s.poll_transmit()).collect()
}

fn events(s: &mut Session) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn closed_reason(s: &mut Session) -> CloseReason {
    events(s)
        .into_iter()
        .find_map(|e| match e {
            Event::Closed { reason } => Some(reason),
            _ => None,
        })
        .expect("session closed")
}

/// Drives a session through HELLO/FEATURES/ROLE; returns it with the outbox drained.
fn up(role: RoleWanted, now: Instant) -> Session {
    let mut s = Session::new(cfg(), role, now);
    let o = out(&mut s);
    assert!(matches!(o[0].body, Body::Hello(_)));
    feed(&mut s, Message::hello(1), now);
    let o = out(&mut s);
    assert!(matches!(
        o[..],
        [Message {
            body: Body::FeaturesRequest,
            ..
        }]
    ));
    feed(
        &mut s,
        Message::new(
            o[0].xid,
            Body::FeaturesReply(FeaturesReply {
                datapath_id: DPID,
                n_tables: 254,
                ..FeaturesReply::default()
            }),
        ),
        now,
    );
    let o = out(&mut s);
    let names: Vec<_> = o.iter().map(|m| m.body.name()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(matches!(o[0].body, Body::SetAsync(_)));
    let Body::RoleRequest(r) = &o[1].body else {
        panic!("{o:?}")
    };
    assert_eq!((r.role, r.generation_id), role.to_wire());
    assert!(matches!(&o[2].body, Body::MultipartRequest(_)));
    assert_eq!(
        events(&mut s),
        [Event::Identified {
            dpid: DPID,
            n_tables: 254
        }]
    );
    feed(
        &mut s,
        Message::new(o[1].xid, Body::RoleReply(r.clone())),
        now,
    );
    assert!(matches!(events(&mut s)[..], [Event::RoleGranted { .. }]));
    s
}

/// Answers the two dump requests in `o` with `flows`/`groups` (flows in two REPLY_MORE parts).
fn answer_dumps(
    s: &mut Session,
    o: &[Message],
    flows: Vec<FlowStats>,
    groups: Vec<GroupDesc>,
    now: Instant,
) {
    let fx = o
        .iter()
        .find(|m| matches!(&m.body, Body::MultipartRequest(r) if matches!(r.body, fabricflow_proto::openflow::multipart::MultipartRequestBody::Flow(_))))
        .expect("flow stats request");
    let Body::MultipartRequest(r) = &fx.body else {
        unreachable!()
    };
    let fabricflow_proto::openflow::multipart::MultipartRequestBody::Flow(req) = &r.body else {
        unreachable!()
    };
    assert_eq!((req.cookie, req.cookie_mask), (COOKIE, u64::MAX));
    let gx = o
        .iter()
        .find(|m| matches!(&m.body, Body::MultipartRequest(r) if matches!(r.body, fabricflow_proto::openflow::multipart::MultipartRequestBody::GroupDesc)))
        .expect("group desc request");
    let half = flows.len() / 2;
    let (a, b) = flows.split_at(half);
    feed(
        s,
        Message::new(
            fx.xid,
            Body::MultipartReply(MultipartReply {
                flags: OFPMPF_REPLY_MORE,
                body: MultipartReplyBody::Flow(a.to_vec()),
            }),
        ),
        now,
    );
    feed(
        s,
        Message::multipart_reply(gx.xid, 0, MultipartReplyBody::GroupDesc(groups)),
        now,
    );
    feed(
        s,
        Message::multipart_reply(fx.xid, 0, MultipartReplyBody::Flow(b.to_vec())),
        now,
    );
}

fn as_installed(d: &DesiredSwitch) -> (Vec<FlowStats>, Vec<GroupDesc>) {
    (
        d.flows
            .iter()
            .map(|f| FlowStats {
                table_id: f.table_id,
                priority: f.priority,
                cookie: f.cookie,
                r#match: f.r#match.clone(),
                instructions: f.instructions.clone(),
                ..crate::sync::diff::blank_stats()
            })
            .collect(),
        d.groups
            .iter()
            .map(|g| GroupDesc {
                group_type: g.group_type,
                group_id: g.group_id,
                buckets: g.buckets.clone(),
            })
            .collect(),
    )
}

fn barrier_xid(o: &[Message]) -> u32 {
    o.iter()
        .rev()
        .find(|m| matches!(m.body, Body::BarrierRequest))
        .expect("barrier")
        .xid
}

#[test]
fn empty_switch_gets_one_bundle_then_synced() {
    let t0 = Instant::now();
    let mut s = up(RoleWanted::Equal, t0);
    s.set_desired(Some(desired()), t0);
    let o = out(&mut s);
    assert_eq!(o.len(), 2, "two dump requests: {o:?}");
    answer_dumps(&mut s, &o, vec![], vec![], t0);
    let o = out(&mut s);
    let d = desired();
    // OPEN, group add, flows, COMMIT, BARRIER.
    assert_eq!(o.len(), d.flows.len() + d.groups.len() + 3);
    let Body::BundleControl(open) = &o[0].body else {
        panic!()
    };
    assert_eq!(open.ctrl_type, BundleCtrlType::OpenRequest);
    let Body::BundleAdd(first) = &o[1].body else {
        panic!()
    };
    assert!(matches!(first.message.body, Body::GroupMod(_)));
    assert_eq!(o[1].xid, first.message.xid);
    let Body::BundleControl(commit) = &o[o.len() - 2].body else {
        panic!()
    };
    assert_eq!(commit.ctrl_type, BundleCtrlType::CommitRequest);
    assert_eq!(s.counters().flow_mods_sent, d.flows.len() as u64);
    assert!(!s.is_synced());
    let later = t0 + Duration::from_millis(5);
    feed(&mut s, Message::barrier_reply(barrier_xid(&o)), later);
    let ev = events(&mut s);
    assert!(
        ev.contains(&Event::SyncDone {
            flow_mods: d.flows.len(),
            group_mods: 1,
            flows: d.flows.len(),
            groups: 1,
            duration: Duration::from_millis(5)
        }),
        "{ev:?}"
    );
    assert!(s.is_synced());
}

#[test]
fn unchanged_switch_gets_zero_mods() {
    let t0 = Instant::now();
    let mut s = up(RoleWanted::Equal, t0);
    let d = desired();
    s.set_desired(Some(d.clone()), t0);
    let o = out(&mut s);
    let (mut f, mut g) = as_installed(&d);
    // The agent changed a weight: still nothing to do.
    g[0].buckets[0].weight = 17;
    f.reverse();
    answer_dumps(&mut s, &o, f, g, t0);
    let o = out(&mut s);
    assert!(
        matches!(
            o[..],
            [Message {
                body: Body::BarrierRequest,
                ..
            }]
        ),
        "{o:?}"
    );
    feed(&mut s, Message::barrier_reply(o[0].xid), t0);
    assert_eq!(s.counters().flow_mods_sent, 0);
    assert_eq!(s.counters().group_mods_sent, 0);
    assert!(s.is_synced());
    // Same desired state again: no new sync.
    s.set_desired(Some(desired()), t0);
    assert!(out(&mut s).is_empty());
}

#[test]
fn desired_change_during_sync_resyncs_after() {
    let t0 = Instant::now();
    let mut s = up(RoleWanted::Equal, t0);
    let d = desired();
    s.set_desired(Some(d.clone()), t0);
    let o = out(&mut s);
    let (f, g) = as_installed(&d);
    let mut d2 = (*d).clone();
    d2.flows.pop();
    s.set_desired(Some(Arc::new(d2)), t0);
    assert!(
        out(&mut s).is_empty(),
        "no second dump while the first is in flight"
    );
    answer_dumps(&mut s, &o, f.clone(), g.clone(), t0);
    let o = out(&mut s);
    // Computed against the newest desired state: one delete.
    let dels: Vec<_> = o
        .iter()
        .filter_map(|m| match &m.body {
            Body::BundleAdd(b) => match &b.message.body {
                Body::FlowMod(fm) => Some(fm.command),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(dels, [FlowModCommand::DeleteStrict]);
}

#[test]
fn slave_never_writes_until_master() {
    let t0 = Instant::now();
    let mut s = up(RoleWanted::Slave { generation: 3 }, t0);
    s.set_desired(Some(desired()), t0);
    assert!(out(&mut s).is_empty());
    s.set_role(RoleWanted::Master { generation: 9 }, t0);
    let o = out(&mut s);
    let Body::RoleRequest(r) = &o[0].body else {
        panic!("{o:?}")
    };
    assert_eq!((r.role, r.generation_id), (ControllerRole::Master, 9));
    feed(
        &mut s,
        Message::new(
            o[0].xid,
            Body::RoleReply(Role {
                role: ControllerRole::Master,
                generation_id: 9,
            }),
        ),
        t0,
    );
    let o = out(&mut s);
    assert!(
        o.iter()
            .any(|m| matches!(m.body, Body::MultipartRequest(_))),
        "{o:?}"
    );
}

#[test]
fn refused_bundle_is_retried() {
    let t0 = Instant::now();
    let mut s = up(RoleWanted::Equal, t0);
    s.set_desired(Some(desired()), t0);
    let o = out(&mut s);
    answer_dumps(&mut s, &o, vec![], vec![], t0);
    let o = out(&mut s);
    feed(
        &mut s,
        Message::new(
            o[2].xid,
            Body::Error(ErrorMsg {
                error: ErrorType::from_type_code(5, 0),
                data: vec![],
            }),
        ),
        t0,
    );
    feed(&mut s, Message::barrier_reply(barrier_xid(&o)), t0);
    assert!(events(&mut s)
        .iter()
        .any(|e| matches!(e, Event::SyncFailed { .. })));
    assert!(!s.is_synced());
    s.handle_timeout(t0 + Duration::from_secs(1));
    assert!(!out(&mut s)
        .iter()
        .any(|m| matches!(m.body, Body::MultipartRequest(_))));
    s.handle_timeout(t0 + Duration::from_secs(3));
    assert!(out(&mut s)
        .iter()
        .any(|m| matches!(m.body, Body::MultipartRequest(_))));
}

#[test]
fn unknown_dpid_stays_idle() {
    let t0 = Instant::now();
    let mut s = up(RoleWanted::Equal, t0);
    s.set_desired(None, t0);
    assert!(out(&mut s).is_empty());
    s.handle_timeout(t0 + Duration::from_secs(2));
    assert!(!s.is_closed());
    assert_eq!(s.counters().flow_mods_sent, 0);
}

#[test]
fn hello_without_13_gets_hello_failed() {
    let t0 = Instant::now();
    let mut s = Session::new(cfg(), RoleWanted::Equal, t0);
    out(&mut s);
    let mut h = Message::hello(1);
    h.version = 1;
    h.body = Body::Hello(Default::default());
    feed(&mut s, h, t0);
    let o = out(&mut s);
    assert!(
        matches!(
            &o[..],
            [Message {
                version: 1,
                body: Body::Error(_),
                ..
            }]
        ),
        "{o:?}"
    );
    assert!(matches!(
        closed_reason(&mut s),
        CloseReason::VersionMismatch(_)
    ));
}

#[test]
fn bitmap_with_13_accepted() {
    let t0 = Instant::now();
    let mut s = Session::new(cfg(), RoleWanted::Equal, t0);
    out(&mut s);
    let mut h = Message::new(
        1,
        Body::Hello(fabricflow_proto::openflow::symmetric::Hello::with_versions(
            &[1, 4, 5],
        )),
    );
    h.version = 5;
    feed(&mut s, h, t0);
    assert!(matches!(
        out(&mut s)[..],
        [Message {
            body: Body::FeaturesRequest,
            ..
        }]
    ));
}

#[test]
fn garbage_closes() {
    let t0 = Instant::now();
    let mut s = Session::new(cfg(), RoleWanted::Equal, t0);
    s.handle_bytes(b"GET / HTTP/1.1\r\n\r\n", t0);
    assert_eq!(closed_reason(&mut s), CloseReason::NotOpenFlow);
}

#[test]
fn bad_length_closes() {
    let t0 = Instant::now();
    let mut s = Session::new(cfg(), RoleWanted::Equal, t0);
    s.handle_bytes(&[4, 0, 0, 4, 0, 0, 0, 1], t0);
    assert!(matches!(closed_reason(&mut s), CloseReason::Framing(_)));
    let mut small = cfg();
    small.channel.max_message_len = 1024;
    let mut s = Session::new(small, RoleWanted::Equal, t0);
    s.handle_bytes(&[4, 0, 0x10, 0, 0, 0, 0, 1], t0);
    assert!(matches!(closed_reason(&mut s), CloseReason::Framing(_)));
}

#[test]
fn truncated_message_closes() {
    let t0 = Instant::now();
    let mut s = Session::new(cfg(), RoleWanted::Equal, t0);
    feed(&mut s, Message::hello(1), t0);
    // FEATURES_REPLY whose header says 8 bytes: no body.
    s.handle_bytes(&[4, 6, 0, 8, 0, 0, 0, 2], t0);
    assert!(matches!(closed_reason(&mut s), CloseReason::Decode(_)));
}

#[test]
fn stalled_partial_message_closes() {
    let t0 = Instant::now();
    let mut s = Session::new(cfg(), RoleWanted::Equal, t0);
    feed(&mut s, Message::hello(1), t0);
    s.handle_bytes(&[4, 6, 0x03, 0xe8, 0, 0, 0, 2, 1, 2], t0);
    s.handle_timeout(t0 + Duration::from_secs(5));
    assert!(!s.is_closed());
    s.handle_timeout(t0 + Duration::from_secs(11));
    assert_eq!(
        closed_reason(&mut s),
        CloseReason::PartialMessageStalled { buffered: 10 }
    );
}

#[test]
fn eof_mid_message_reports_it() {
    let t0 = Instant::now();
    let mut s = Session::new(cfg(), RoleWanted::Equal, t0);
    s.handle_bytes(&[4, 0, 0, 16], t0);
    s.handle_eof();
    assert_eq!(
        closed_reason(&mut s),
        CloseReason::PeerClosedMidMessage { buffered: 4 }
    );
}

#[test]
fn echo_both_ways_and_timeout() {
    let t0 = Instant::now();
    let mut s = up(RoleWanted::Equal, t0);
    feed(&mut s, Message::echo_request(77, vec![1, 2]), t0);
    let o = out(&mut s);
    assert!(
        matches!(&o[..], [Message { xid: 77, body: Body::EchoReply(e), .. }] if e.data == [1, 2])
    );
    let t1 = t0 + Duration::from_secs(5);
    assert_eq!(s.poll_timeout(), Some(t1));
    s.handle_timeout(t1);
    let o = out(&mut s);
    let Body::EchoRequest(_) = &o[0].body else {
        panic!("{o:?}")
    };
    feed(
        &mut s,
        Message::new(o[0].xid, Body::EchoReply(Default::default())),
        t1,
    );
    s.handle_timeout(t1 + Duration::from_secs(5));
    let o = out(&mut s);
    assert_eq!(o.len(), 1);
    s.handle_timeout(t1 + Duration::from_secs(21));
    assert_eq!(closed_reason(&mut s), CloseReason::EchoTimeout);
}

#[test]
fn echo_flood_closes() {
    let t0 = Instant::now();
    let mut s = up(RoleWanted::Equal, t0);
    for i in 0..101 {
        feed(&mut s, Message::echo_request(i, vec![]), t0);
    }
    assert_eq!(
        closed_reason(&mut s),
        CloseReason::EchoFlood { per_sec: 100 }
    );
}

#[test]
fn lldp_probes_and_packet_in() {
    let t0 = Instant::now();
    let mut s = up(RoleWanted::Equal, t0);
    s.set_desired(Some(desired()), t0);
    out(&mut s);
    s.handle_timeout(t0);
    let probes: Vec<_> = out(&mut s)
        .into_iter()
        .filter_map(|m| match m.body {
            Body::PacketOut(p) => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(probes.len(), 2, "switch 1 of 3 has two fabric ports");
    assert_eq!(
        lldp::parse(&probes[0].data),
        Some(Endpoint {
            dpid: DPID,
            port: 2
        })
    );
    let peer = Endpoint {
        dpid: 0x100,
        port: 3,
    };
    feed(
        &mut s,
        Message::new(
            0,
            Body::PacketIn(PacketIn {
                r#match: Match::new().with(OxmField::InPort(2)),
                data: lldp::build(peer),
                ..PacketIn::default()
            }),
        ),
        t0,
    );
    assert!(events(&mut s).contains(&Event::Lldp { in_port: 2, peer }));
}

#[test]
fn port_status_reported() {
    let t0 = Instant::now();
    let mut s = up(RoleWanted::Equal, t0);
    let mut p = Port::new(3, fabricflow_proto::MacAddr::ZERO, "p3");
    p.state = state::LINK_DOWN;
    feed(
        &mut s,
        Message::new(
            0,
            Body::PortStatus(fabricflow_proto::openflow::port::PortStatus {
                reason: fabricflow_proto::openflow::port::PortReason::from_u8(2),
                port: p,
            }),
        ),
        t0,
    );
    assert_eq!(events(&mut s), [Event::PortState { port: 3, up: false }]);
}
