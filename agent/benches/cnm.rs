//! The agent's own CNM path, no OVS, no sockets: one CNM PACKET_IN's bytes (OpenFlow 1.3, as
//! the switch frames them) through the session and the switch core (framing, decoding, the CNM
//! check, the decision point, the QCN-SW policy, the weight planner) to the GROUP_MOD's bytes,
//! on a warmed-up agent holding the plan of a Dragonfly(2,4,2) switch (the controller's own
//! planner), with the shipped policy and line rates of 40 Gb/s (see `rig`).
//!
//! - `cnm_to_group_mod/write`: CNMs that produce a GROUP_MOD, with the minimum update interval
//!   set to 0 so that every change of a quantum is written at once;
//! - `cnm_to_group_mod/no_write`: CNMs that produce nothing (a change under a quantum, P at
//!   its floor or ceiling), same configuration;
//! - `cnm_to_group_mod/shipped_interval`: every CNM with the shipped interval (100 000 octets
//!   of line time, 20 µs at 40 Gb/s), written or not.
//!
//! Each iteration is one CNM; the timers due between CNMs run untimed. The latency
//! distribution (p50/p90/p99/max over 100 000 CNMs) is `--bench cnm_histogram`.
//!
//! Run: `cargo bench -p fabricflow-agent --bench cnm`
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod rig;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use rig::{Outcome, Rig};

/// Sums the time of `iters` steps with outcome `want` (`None`: any).
fn timed(rig: &mut Rig, iters: u64, want: Option<Outcome>) -> Duration {
    let mut total = Duration::ZERO;
    let mut n = 0;
    while n < iters {
        let (took, outcome) = rig.step();
        if want.is_none() || want == Some(outcome) {
            total += took;
            n += 1;
        }
    }
    total
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("cnm_to_group_mod");
    let mut rig = Rig::new(&rig::config(0), 20_000);
    group.bench_function("write", |b| {
        b.iter_custom(|iters| timed(&mut rig, iters, Some(Outcome::Write)));
    });
    group.bench_function("no_write", |b| {
        b.iter_custom(|iters| timed(&mut rig, iters, Some(Outcome::NoWrite)));
    });
    let shipped =
        fabricflow_agent::weights::WeightsConfig::default().min_update_interval_line_bytes;
    let mut rig = Rig::new(&rig::config(shipped), 20_000);
    group.bench_function("shipped_interval", |b| {
        b.iter_custom(|iters| timed(&mut rig, iters, None));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
