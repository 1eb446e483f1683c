//! Benchmarks against the real Open vSwitch (prints tables; numbers, not pass/fail):
//! 1. FLOW_MODs/s into one bridge over its management socket, plain vs one ONF bundle;
//! 2. the controller's connect → fully programmed time for N bridges (line fixture).
//!
//! `cargo bench -p fabricflow-controller --bench ovs_sync` (root, OVS running).
//! `FABRICFLOW_SKIP_OVS=1` skips. `FF_BENCH_FLOWS` (default 20000) sets the flow count.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use common::*;
use fabricflow_controller::desired::fixture::LineFixture;
use fabricflow_controller::desired::PlanSource;
use fabricflow_controller::service::Controller;
use fabricflow_controller::sync::diff::{diff, Diff};
use fabricflow_proto::openflow::framer::Framer;
use fabricflow_proto::openflow::message::{Body, Message};

fn roundtrip_until_barrier(s: &mut UnixStream, bytes: &[u8], barrier_xid: u32) -> usize {
    s.write_all(bytes).unwrap();
    let mut f = Framer::new(65535);
    let mut buf = vec![0u8; 1 << 16];
    let mut errors = 0;
    loop {
        while let Some(frame) = f.next_message().unwrap() {
            let m = Message::decode(&frame).unwrap();
            if matches!(m.body, Body::Error(_)) {
                errors += 1;
            }
            if m.xid == barrier_xid && matches!(m.body, Body::BarrierReply) {
                return errors;
            }
        }
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "switch closed");
        f.push(&buf[..n]);
    }
}

fn flow_mod_rate(n_flows: u32) {
    let line = Line::create("r", 0x00ff_0000_0000_0f00, 1);
    let fx = LineFixture::new(0x00ff_0000_0000_0f00, 1, COOKIE).with_filler(n_flows);
    let d = fx.plan(&BTreeSet::new()).remove(&fx.dpid(0)).unwrap();
    let all: Diff = diff(&d, &[], &[], COOKIE, &(1000..=1999));
    let mgmt = format!("/var/run/openvswitch/{}.mgmt", line.names[0]);
    let mut s = UnixStream::connect(&mgmt).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    s.write_all(&Message::hello(1).to_bytes()).unwrap();

    let clear = |s: &mut UnixStream| {
        let mut b = Message::flow_mod(
            2,
            fabricflow_proto::openflow::flow::FlowMod::delete_by_cookie(COOKIE),
        )
        .to_bytes();
        Message::barrier_request(3).encode(&mut b);
        roundtrip_until_barrier(s, &b, 3);
    };
    clear(&mut s);

    // Plain FLOW_MODs (groups first), then a barrier.
    let mut plain = bytes::BytesMut::new();
    for m in all.ordered_messages(100) {
        m.encode(&mut plain);
    }
    Message::barrier_request(7).encode(&mut plain);
    let t = Instant::now();
    let errs = roundtrip_until_barrier(&mut s, &plain, 7);
    let plain_s = t.elapsed().as_secs_f64();
    assert_eq!(errs, 0);
    clear(&mut s);
    let _ = roundtrip_until_barrier(
        &mut s,
        &Message::group_mod(4, fabricflow_proto::openflow::group::GroupMod::delete(1000))
            .to_bytes()
            .iter()
            .copied()
            .chain(Message::barrier_request(5).to_bytes().iter().copied())
            .collect::<Vec<u8>>(),
        5,
    );

    // The same mods as one atomic ordered bundle.
    let (msgs, _) = all.bundle(1, 1_000_000);
    let mut bundled = bytes::BytesMut::new();
    for m in msgs {
        m.encode(&mut bundled);
    }
    Message::barrier_request(8).encode(&mut bundled);
    let t = Instant::now();
    let errs = roundtrip_until_barrier(&mut s, &bundled, 8);
    let bundle_s = t.elapsed().as_secs_f64();
    assert_eq!(errs, 0);
    let n = all.flow_mod_count() as f64;
    println!("| FLOW_MODs into one bridge | flows | seconds | FLOW_MODs/s |");
    println!("|---|---:|---:|---:|");
    println!(
        "| plain (no bundle) | {n} | {plain_s:.3} | {:.0} |",
        n / plain_s
    );
    println!(
        "| one ONF bundle (atomic, ordered) | {n} | {bundle_s:.3} | {:.0} |",
        n / bundle_s
    );
}

async fn connect_to_programmed(n: u32, filler: u32) {
    let line = Line::create("n", 0x00ff_0000_0000_0c00, n);
    let fx =
        std::sync::Arc::new(LineFixture::new(0x00ff_0000_0000_0c00, n, COOKIE).with_filler(filler));
    let c = Controller::start(config(0), fx.clone()).await.unwrap();
    let t = Instant::now();
    line.set_controllers(&[format!("tcp:{}", c.openflow_addr)]);
    assert!(wait_for(300, || synced(&c) == n as usize).await);
    let took = t.elapsed();
    let flows: usize = fx
        .plan(&BTreeSet::new())
        .values()
        .map(|d| d.flows.len())
        .sum();
    println!(
        "| {n} | {} | {flows} | {:.3} | {:.0} |",
        flows / n as usize,
        took.as_secs_f64(),
        flows as f64 / took.as_secs_f64()
    );
    // Reconnect: same state, zero mods.
    let port = c.openflow_addr.port();
    c.shutdown().await;
    let c = Controller::start(config(port), fx.clone()).await.unwrap();
    let t = Instant::now();
    assert!(wait_for(300, || synced(&c) == n as usize).await);
    println!(
        "|   ↳ controller restart, unchanged | | {} FLOW_MODs | {:.3} | |",
        flow_mods(&c),
        t.elapsed().as_secs_f64()
    );
    c.shutdown().await;
}

fn main() {
    if std::env::var_os("FABRICFLOW_SKIP_OVS").is_some() || std::env::args().any(|a| a == "--list")
    {
        eprintln!("FABRICFLOW_SKIP_OVS set (or --list): skipping OVS benchmarks");
        return;
    }
    if !skip() {
        let n: u32 = std::env::var("FF_BENCH_FLOWS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(20_000);
        flow_mod_rate(n);
        let rt = tokio::runtime::Runtime::new().unwrap();
        println!();
        println!("| bridges | flows/bridge | flows total | connect → programmed (s) | flows/s |");
        println!("|---:|---:|---:|---:|---:|");
        for (bridges, filler) in [(1, 1000), (4, 1000), (8, 1000), (16, 1000), (4, 10_000)] {
            rt.block_on(connect_to_programmed(bridges, filler));
        }
    }
}
