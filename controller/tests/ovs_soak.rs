//! Soak: rounds of connect/HELLO/close churn beyond `max_unidentified_peers` and a storm of
//! garbage connections against the controller, while one real Open vSwitch bridge stays synced.
//! Memory must stay flat across rounds, the cap must refuse exactly the excess, and the bridge
//! must keep every flow. Loopback only; `FABRICFLOW_SKIP_OVS=1` skips. The controller runs in
//! this process with the binary's allocator, so RSS here is what an operator would see; a leak
//! is judged on the bytes allocated (jemalloc's count), which do not depend on when jemalloc
//! returns freed pages to the kernel.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use fabricflow_controller::service::Controller;
use fabricflow_proto::openflow::message::Message;
use rand::{Rng, SeedableRng};

/// The allocator of `fabricflow-controller` (controller/src/main.rs).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const ROUNDS: usize = 5;
const GARBAGE_PER_ROUND: usize = 300;

/// Resident set size of this process (the controller runs in it), in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// Bytes this process holds allocated, in KiB: what a leak grows, unlike RSS, which also holds
/// the freed pages jemalloc has not yet returned (its background thread may sleep past a round).
fn allocated_kib() -> u64 {
    tikv_jemalloc_ctl::epoch::advance().unwrap();
    tikv_jemalloc_ctl::stats::allocated::read().unwrap() as u64 / 1024
}

/// RSS once the allocator has given back what it will: polled until it changes by less than
/// 1 % over a second (jemalloc returns freed pages after about a second), 15 s at most.
async fn settled_rss_kib() -> u64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let mut last = rss_kib();
    loop {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let now = rss_kib();
        if now.abs_diff(last) * 100 <= last || std::time::Instant::now() >= deadline {
            return now;
        }
        last = now;
    }
}

/// The soft limit on open files: each held peer costs two descriptors in this process.
fn open_files_limit() -> usize {
    std::fs::read_to_string("/proc/self/limits")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(1024)
}

/// Opens `n` connections and sends each a HELLO (a refused one may fail to write: ignored).
fn hello_only(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let hello = Message::hello(1).to_bytes();
    (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            let _ = s.write_all(&hello);
            s
        })
        .collect()
}

/// `n` connections each writing 1..2000 random bytes, closed at once.
fn garbage(addr: SocketAddr, n: usize, seed: u64) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for _ in 0..n {
        let len = rng.gen_range(1..2000);
        let bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        if let Ok(mut s) = TcpStream::connect(addr) {
            let _ = s.write_all(&bytes);
        }
    }
}

/// The controller's flows on the line's only bridge, without counters and ages, sorted.
fn our_flows_no_stats(line: &Line) -> Vec<String> {
    let cookie = format!("cookie={COOKIE:#x}");
    let mut v: Vec<String> = line.bridges[0]
        .ofctl(&["dump-flows", "--no-stats", line.bridges[0].name()])
        .lines()
        .filter(|l| l.contains(&cookie))
        .map(|l| l.trim().to_owned())
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn churn_and_garbage_keep_memory_flat_and_the_bridge_synced() {
    if skip() {
        return;
    }
    // No log subscriber: captured test output would itself grow across rounds.
    let line = Line::create("k", 0x00ff_0000_0000_0c00, 1);
    let cap = ((open_files_limit().saturating_sub(256)) / 3).clamp(100, 500);
    let excess = cap / 5;
    let mut cfg = config(0);
    cfg.max_unidentified_peers = cap;
    // Held peers must outlive a round, whose length depends on this machine's load.
    cfg.handshake_timeout_ms = 60_000;
    let c = Controller::start(cfg, line.fixture.clone()).await.unwrap();
    line.set_controllers(&[format!("tcp:{}", c.openflow_addr)]);
    assert!(wait_for(20, || synced(&c) == 1).await, "bridge synced");
    let flows = our_flows_no_stats(&line);
    assert!(!flows.is_empty());
    let mods = (flow_mods(&c), group_mods(&c));
    let m = c.shared.metrics.clone();

    // Watches the bridge's controller flows for the whole soak.
    let stop = Arc::new(AtomicBool::new(false));
    let fewest = Arc::new(AtomicUsize::new(usize::MAX));
    let samples = Arc::new(AtomicUsize::new(0));
    let watcher = {
        let (stop, fewest, samples) = (stop.clone(), fewest.clone(), samples.clone());
        let bridge = line.names[0].clone();
        let cookie = format!("cookie={COOKIE:#x}");
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let dump = sh("ovs-ofctl", &["-O", "OpenFlow13", "dump-flows", &bridge]);
                let n = dump.lines().filter(|l| l.contains(&cookie)).count();
                fewest.fetch_min(n, Ordering::Relaxed);
                samples.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };

    let addr = c.openflow_addr;
    let rss_start = settled_rss_kib().await;
    let mut after = Vec::new();
    let mut held = Vec::new();
    let mut allocated = Vec::new();
    for round in 0..ROUNDS {
        let refused_before = m.connections_refused.get();
        let socks = tokio::task::spawn_blocking(move || hello_only(addr, cap + excess))
            .await
            .unwrap();
        assert!(
            wait_for(30, || m.unidentified_peers.get() == cap as i64
                && m.connections_refused.get() - refused_before == excess as u64)
            .await,
            "round {round}: {} held (cap {cap}), {} refused (excess {excess})",
            m.unidentified_peers.get(),
            m.connections_refused.get() - refused_before
        );
        let rss_held = rss_kib();
        drop(socks);
        assert!(
            wait_for(30, || m.unidentified_peers.get() == 0).await,
            "round {round}: {} still unidentified after close",
            m.unidentified_peers.get()
        );
        let refused = m.connections_refused.get();
        tokio::task::spawn_blocking(move || garbage(addr, GARBAGE_PER_ROUND, round as u64))
            .await
            .unwrap();
        assert!(
            wait_for(30, || m.unidentified_peers.get() == 0).await,
            "round {round}: garbage peers still held"
        );
        assert_eq!(
            m.connections_refused.get(),
            refused,
            "garbage within the cap"
        );
        let rss_after = settled_rss_kib().await;
        let allocated_after = allocated_kib();
        held.push(rss_held);
        after.push(rss_after);
        allocated.push(allocated_after);
        eprintln!(
            "round {round}: RSS {rss_held} KiB with {cap} peers held, {rss_after} KiB after \
             close, {allocated_after} KiB allocated"
        );
    }
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();

    // Steady cost of held peers: the last round's RSS while holding them over the RSS before
    // any churn.
    let per_1000 = held.last().unwrap().saturating_sub(rss_start) * 1000 / cap as u64;
    eprintln!(
        "RSS {rss_start} KiB before; held {held:?} KiB, after close {after:?} KiB; \
         {per_1000} KiB per 1000 held peers (cap {cap})"
    );
    // No leak: what stays allocated after a storm does not grow with the storms (the slack
    // covers the watcher's and the runtime's buffers of the moment).
    let (first, last) = (allocated[0], *allocated.last().unwrap());
    assert!(
        last * 10 <= first * 11 + 5120,
        "allocated after {ROUNDS} rounds {last} KiB > 1.1 × {first} KiB + 512 after the first: {allocated:?}"
    );
    // And memory does not ratchet: after any storm RSS is at most a held storm's.
    let peak = held[0] * 12 / 10;
    assert!(
        after.iter().all(|&a| a <= peak),
        "RSS after close {after:?} KiB above 1.2 × the first round's held {} KiB",
        held[0]
    );
    // The bridge kept every flow, was never resynced and is still in sync.
    assert!(samples.load(Ordering::Relaxed) >= ROUNDS, "flows sampled");
    assert_eq!(
        fewest.load(Ordering::Relaxed),
        flows.len(),
        "a flow was lost"
    );
    assert_eq!(our_flows_no_stats(&line), flows);
    assert_eq!((flow_mods(&c), group_mods(&c)), mods, "no resync happened");
    assert_eq!(synced(&c), 1);
    let sw = c.shared.switches();
    assert!(
        sw.iter().all(|s| s.last_close_reason.is_none()),
        "the bridge's connection never closed: {sw:?}"
    );
    c.shutdown().await;
}
