//! Codec throughput: decode and encode of the messages on fabricflow's hot paths.
//! Throughput is one message per iteration, so criterion reports messages per second.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    missing_docs
)]

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fabricflow_proto::openflow::message::Message;
use fabricflow_proto::openflow::multipart::{MultipartReplyBody, PortStats, OFPMPF_REPLY_MORE};

fn hx(s: &str) -> Vec<u8> {
    let clean: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    hex::decode(clean).expect("hex")
}

/// FLOW_MOD ADD table 1 priority 100: in_port=1, eth_dst=02:00:00:01:00:00/ff:ff:ff:ff:00:00,
/// apply(output:3, group:1003), goto_table:2.
fn flow_mod() -> Vec<u8> {
    hx("04 0e 00 78 00 00 00 05
        00 00 00 00 00 00 00 ff  00 00 00 00 00 00 00 00
        01 00 00 00 00 00 00 64  ff ff ff ff ff ff ff ff
        ff ff ff ff 00 01 00 00
        00 01 00 1c 80 00 00 04 00 00 00 01
        80 00 07 0c 02 00 00 01 00 00 ff ff ff ff 00 00  00 00 00 00
        00 04 00 20 00 00 00 00
        00 00 00 10 00 00 00 03 ff ff 00 00 00 00 00 00
        00 16 00 08 00 00 03 eb
        00 01 00 08 02 00 00 00")
}

/// GROUP_MOD ADD SELECT group 1003 with 8 weighted buckets, each output to one port.
fn group_mod() -> Vec<u8> {
    let mut s = String::from("04 0f 01 10 00 00 00 06 00 00 01 00 00 00 03 eb");
    for i in 0..8u32 {
        s.push_str(&format!(
            " 00 20 00 {:02x} ff ff ff ff ff ff ff ff 00 00 00 00 00 00 00 10 {:08x} ff ff 00 00 00 00 00 00",
            20 + i,
            i + 1
        ));
    }
    hx(&s)
}

/// PACKET_IN (action, table 0) with in_port and a 100-byte frame.
fn packet_in() -> Vec<u8> {
    let mut b = hx("04 0a 00 8e 00 00 00 00 ff ff ff ff 00 64 01 00
                    00 00 00 00 00 00 00 2a
                    00 01 00 0c 80 00 00 04 00 00 00 07 00 00 00 00
                    00 00");
    b.extend((0..100u8).map(|i| i.wrapping_mul(37)));
    b
}

/// MULTIPART_REPLY OFPMP_PORT_STATS for 48 ports.
fn port_stats() -> Vec<u8> {
    let ports = (1..=48u32)
        .map(|p| PortStats {
            port_no: p,
            rx_packets: u64::from(p) * 1_000_003,
            tx_packets: u64::from(p) * 999_983,
            rx_bytes: u64::from(p) * 1_500_000_000,
            tx_bytes: u64::from(p) * 1_400_000_000,
            duration_sec: 3600,
            duration_nsec: 5,
            ..Default::default()
        })
        .collect();
    Message::multipart_reply(9, OFPMPF_REPLY_MORE, MultipartReplyBody::PortStats(ports))
        .to_bytes()
        .to_vec()
}

fn bench(c: &mut Criterion) {
    for (name, bytes) in [
        ("flow_mod", flow_mod()),
        ("group_mod_8_buckets", group_mod()),
        ("packet_in_100B", packet_in()),
        ("port_stats_reply_48", port_stats()),
    ] {
        let msg = Message::decode(&bytes).expect("benchmark message decodes");
        assert_eq!(msg.to_bytes()[..], bytes[..], "{name} round-trips");
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Elements(1));
        g.bench_function("decode", |b| {
            b.iter(|| Message::decode(black_box(&bytes)).expect("decode"))
        });
        let mut buf = BytesMut::with_capacity(bytes.len());
        g.bench_function("encode", |b| {
            b.iter(|| {
                buf.clear();
                black_box(&msg).encode(&mut buf);
                black_box(buf.len())
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
