//! The distribution of the agent's own CNM → GROUP_MOD time (see `cnm.rs` and `rig`): p50, p90,
//! p99, p99.9 and max over 100 000 CNMs on a warmed-up agent holding a Dragonfly(2,4,2)
//! switch's plan, split by what the CNM produced — with the minimum update interval at 0 (every
//! change of a quantum written at once) and with the shipped interval. Each CNM is timed alone
//! (`Instant` around `handle_bytes` + `poll_transmit` + encoding); the machine's noise
//! (preemption, interrupts) is in the tail, so repeat and compare.
//!
//! Run: `cargo bench -p fabricflow-agent --bench cnm_histogram` (`FABRICFLOW_BENCH_CNMS=N`
//! for another count; without `--bench`, as under `cargo test --benches`, 2 000).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod rig;

use std::time::Duration;

use rig::{Outcome, Rig};

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn report(name: &str, mut v: Vec<Duration>, total: usize) {
    if v.is_empty() {
        println!("{name:<28} none");
        return;
    }
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{name:<28} n {:>6} ({:>5.1} %)  p50 {:>6.2} µs  p90 {:>6.2}  p99 {:>6.2}  p99.9 {:>7.2}  max {:>8.2}",
        v.len(),
        100.0 * v.len() as f64 / total as f64,
        us(quantile(&v, 0.5)),
        us(quantile(&v, 0.9)),
        us(quantile(&v, 0.99)),
        us(quantile(&v, 0.999)),
        us(v[v.len() - 1]),
    );
}

fn run(label: &str, interval_line_bytes: u64, cnms: usize) {
    let mut rig = Rig::new(&rig::config(interval_line_bytes), 20_000.min(cnms));
    let (mut write, mut no_write, mut all) = (Vec::new(), Vec::new(), Vec::with_capacity(cnms));
    for _ in 0..cnms {
        let (took, outcome) = rig.step();
        all.push(took);
        match outcome {
            Outcome::Write => write.push(took),
            Outcome::NoWrite => no_write.push(took),
        }
    }
    println!(
        "{label}: {cnms} CNMs, one every {} µs of virtual time, {} GROUP_MODs",
        rig::CNM_EVERY_NS / 1_000,
        rig.group_mods
    );
    report("  CNM → GROUP_MOD", write, cnms);
    report("  CNM → nothing to write", no_write, cnms);
    report("  every CNM", all, cnms);
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let cnms = std::env::var("FABRICFLOW_BENCH_CNMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { 100_000 } else { 2_000 });
    println!(
        "agent CNM path in process, {}, 40 Gb/s ports",
        rig::TOPOLOGY
    );
    run("min_update_interval 0", 0, cnms);
    let shipped =
        fabricflow_agent::weights::WeightsConfig::default().min_update_interval_line_bytes;
    run(
        &format!("min_update_interval {shipped} octets of line time (shipped)"),
        shipped,
        cnms,
    );
}
