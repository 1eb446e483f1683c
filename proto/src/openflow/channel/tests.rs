#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use super::*;
use crate::openflow::multipart::{MultipartReplyBody, PortStats, OFPMPF_REPLY_MORE};
use crate::openflow::symmetric::{ErrorType, GroupModFailedCode, Hello};

const S: u64 = 1_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Stats,
    Mod(u32),
    Barrier,
}

fn feed(c: &mut Channel<Tag>, m: Message, now: u64) {
    c.handle_bytes(&m.to_bytes(), now);
}

fn out(c: &mut Channel<Tag>) -> Vec<Message> {
    std::iter::from_fn(|| c.poll_transmit()).collect()
}

fn events(c: &mut Channel<Tag>) -> Vec<Event<Tag>> {
    std::iter::from_fn(|| c.poll_event()).collect()
}

fn features(dpid: u64) -> FeaturesReply {
    FeaturesReply {
        datapath_id: dpid,
        n_buffers: 0,
        n_tables: 254,
        auxiliary_id: 0,
        capabilities: 0,
        reserved: 0,
    }
}

/// A channel past the handshake, its output drained.
fn up() -> Channel<Tag> {
    let mut c = Channel::new(ChannelConfig::default(), 0);
    feed(&mut c, Message::hello(1), 0);
    let sent = out(&mut c);
    let fx = sent
        .iter()
        .find(|m| m.body == Body::FeaturesRequest)
        .unwrap()
        .xid;
    feed(
        &mut c,
        Message::new(fx, Body::FeaturesReply(features(7))),
        0,
    );
    assert_eq!(events(&mut c), vec![Event::Up(features(7))]);
    c
}

fn port_stats(xid: u32, more: bool, ports: &[u32]) -> Message {
    let body = MultipartReplyBody::PortStats(
        ports
            .iter()
            .map(|&p| PortStats {
                port_no: p,
                ..PortStats::default()
            })
            .collect(),
    );
    Message::multipart_reply(xid, if more { OFPMPF_REPLY_MORE } else { 0 }, body)
}

fn group_mod_failed(xid: u32) -> Message {
    Message::new(
        xid,
        Body::Error(ErrorMsg {
            error: ErrorType::GroupModFailed(GroupModFailedCode::UnknownGroup),
            data: vec![],
        }),
    )
}

#[test]
fn handshake_sends_hello_then_features_and_reports_the_switch() {
    let mut c: Channel<Tag> = Channel::new(ChannelConfig::default(), 0);
    let first = out(&mut c);
    assert!(matches!(
        first[..],
        [Message {
            body: Body::Hello(_),
            ..
        }]
    ));
    assert!(!c.is_up());
    feed(&mut c, Message::hello(9), 0);
    assert!(out(&mut c).iter().any(|m| m.body == Body::FeaturesRequest));
    assert!(!c.is_up(), "up only once FEATURES_REPLY arrives");
    let _ = up();
}

#[test]
fn a_peer_without_13_gets_hello_failed_and_the_channel_closes() {
    let mut c: Channel<Tag> = Channel::new(ChannelConfig::default(), 0);
    out(&mut c);
    let old = Message {
        version: 0x01,
        xid: 3,
        body: Body::Hello(Hello::default()),
    };
    feed(&mut c, old, 0);
    let sent = out(&mut c);
    assert!(matches!(
        &sent[..],
        [Message { version: 0x01, body: Body::Error(e), .. }]
            if matches!(e.error, ErrorType::HelloFailed(_))
    ));
    assert!(matches!(
        events(&mut c)[..],
        [Event::Closed(CloseReason::VersionMismatch(_))]
    ));
    assert!(c.is_closed());
}

#[test]
fn garbage_and_messages_before_hello_close_the_channel() {
    let mut c: Channel<Tag> = Channel::new(ChannelConfig::default(), 0);
    c.handle_bytes(b"GET / HTTP/1.1\r\n", 0);
    assert_eq!(
        events(&mut c),
        vec![Event::Closed(CloseReason::NotOpenFlow)]
    );

    // A message that is not HELLO, its first byte alone (so the garbage check passes).
    let mut c: Channel<Tag> = Channel::new(ChannelConfig::default(), 0);
    let bytes = Message::features_request(1).to_bytes();
    c.handle_bytes(&bytes[..1], 0);
    c.handle_bytes(&bytes[1..], 0);
    assert!(matches!(
        events(&mut c)[..],
        [Event::Closed(CloseReason::UnexpectedBeforeHello(_))]
    ));
}

#[test]
fn requests_are_answered_with_their_tag_and_multipart_sequences_joined() {
    let mut c = up();
    let x = c.request(Tag::Stats, |x| Message::port_stats_request(x, 0xffff_ffff));
    assert_eq!(out(&mut c).len(), 1);
    feed(&mut c, port_stats(x, true, &[1, 2]), S);
    assert!(events(&mut c).is_empty(), "nothing until the last part");
    feed(&mut c, port_stats(x, false, &[3]), S);
    let ev = events(&mut c);
    let [Event::Reply {
        tag: Tag::Stats,
        msg,
    }] = &ev[..]
    else {
        panic!("{ev:?}")
    };
    assert_eq!(*msg, port_stats(x, false, &[1, 2, 3]));
    assert_eq!(c.pending(), 0);
    // A second reply with the same xid answers nothing any more.
    feed(&mut c, port_stats(x, false, &[4]), S);
    assert!(matches!(events(&mut c)[..], [Event::Message(_)]));
}

#[test]
fn a_failed_command_is_refused_with_its_tag_and_a_barrier_retires_the_rest() {
    let mut c = up();
    let a = c.command(Tag::Mod(1), Message::barrier_request);
    let b = c.command(Tag::Mod(2), Message::barrier_request);
    let bar = c.request(Tag::Barrier, Message::barrier_request);
    let late = c.command(Tag::Mod(3), Message::barrier_request);
    assert_eq!(c.pending(), 4);
    feed(&mut c, group_mod_failed(b), S);
    feed(&mut c, Message::new(bar, Body::BarrierReply), S);
    let ev = events(&mut c);
    assert!(
        matches!(&ev[..], [Event::Refused { tag: Tag::Mod(2), xid, .. }, Event::Reply { tag: Tag::Barrier, .. }] if *xid == b),
        "{ev:?}"
    );
    // `a` succeeded (the barrier covers it); `late` was sent after the barrier: still pending.
    assert_eq!(c.pending(), 1);
    feed(&mut c, group_mod_failed(a), S);
    assert!(matches!(events(&mut c)[..], [Event::Message(_)]));
    feed(&mut c, group_mod_failed(late), S);
    assert!(matches!(
        events(&mut c)[..],
        [Event::Refused {
            tag: Tag::Mod(3),
            ..
        }]
    ));
}

#[test]
fn unanswered_commands_are_bounded_oldest_forgotten_first() {
    let mut c = up();
    let cap = ChannelConfig::default().max_unanswered;
    let first = c.command(Tag::Mod(0), Message::barrier_request);
    for i in 1..=cap {
        c.command(Tag::Mod(u32::try_from(i).unwrap()), |x| {
            Message::barrier_request(x)
        });
    }
    assert_eq!(c.pending(), cap);
    assert_eq!(c.counters().unanswered_forgotten, 1);
    feed(&mut c, group_mod_failed(first), S);
    assert!(matches!(events(&mut c)[..], [Event::Message(_)]));
}

#[test]
fn echo_keepalive_answers_requests_and_closes_on_silence() {
    let cfg = ChannelConfig::default();
    let mut c = up();
    feed(&mut c, Message::echo_request(40, b"hi".to_vec()), S);
    assert_eq!(
        out(&mut c),
        vec![Message::echo_reply_to(&Message::echo_request(
            40,
            b"hi".to_vec()
        ))]
    );
    // Idle for the echo interval: the channel asks.
    let t = c.poll_timeout().unwrap();
    assert_eq!(t, S + ns(cfg.echo_interval));
    c.handle_timeout(t);
    let sent = out(&mut c);
    let [Message {
        xid,
        body: Body::EchoRequest(_),
        ..
    }] = sent[..]
    else {
        panic!("{sent:?}")
    };
    // Answered: the keepalive starts over.
    feed(
        &mut c,
        Message::new(xid, Body::EchoReply(Default::default())),
        t + 1,
    );
    assert!(events(&mut c).is_empty());
    let t2 = c.poll_timeout().unwrap();
    c.handle_timeout(t2);
    assert_eq!(out(&mut c).len(), 1);
    // Not answered: closed after the echo timeout.
    let t3 = c.poll_timeout().unwrap();
    assert_eq!(t3, t2 + ns(cfg.echo_timeout));
    c.handle_timeout(t3);
    assert_eq!(
        events(&mut c),
        vec![Event::Closed(CloseReason::EchoTimeout)]
    );
    assert_eq!(c.poll_timeout(), None);
}

#[test]
fn an_echo_flood_closes_the_channel() {
    let mut c = up();
    let cap = ChannelConfig::default().max_echo_requests_per_sec;
    for i in 0..=cap {
        feed(&mut c, Message::echo_request(i, vec![]), S);
    }
    assert_eq!(
        events(&mut c),
        vec![Event::Closed(CloseReason::EchoFlood { per_sec: cap })]
    );
}

#[test]
fn handshake_and_stalled_partial_messages_time_out() {
    let cfg = ChannelConfig::default();
    let mut c: Channel<Tag> = Channel::new(cfg.clone(), 0);
    feed(&mut c, Message::hello(1), 0);
    c.handle_timeout(ns(cfg.handshake_timeout));
    assert_eq!(
        events(&mut c),
        vec![Event::Closed(CloseReason::HandshakeTimeout(
            "FEATURES_REPLY"
        ))]
    );

    let mut c = up();
    let bytes = port_stats(5, false, &[1]).to_bytes();
    c.handle_bytes(&bytes[..10], S);
    c.handle_timeout(S + ns(cfg.partial_message_timeout));
    assert_eq!(
        events(&mut c),
        vec![Event::Closed(CloseReason::PartialMessageStalled {
            buffered: 10
        })]
    );
}

#[test]
fn unsolicited_messages_and_framing_errors_reach_the_owner() {
    let mut c = up();
    feed(&mut c, Message::barrier_request(77), S);
    assert!(matches!(events(&mut c)[..], [Event::Message(_)]));
    c.handle_bytes(&[4, 0, 0, 3, 0, 0, 0, 0], S);
    assert!(matches!(
        events(&mut c)[..],
        [Event::Closed(CloseReason::Framing(_))]
    ));
}
