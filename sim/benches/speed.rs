//! Simulated cycles per CPU second on the seed's 1 056-host Dragonfly (p=4, a=8, h=4), at low
//! load and at saturation; prints a table. `cargo bench -p fabricflow-sim --bench speed`.

use std::time::Instant;

use fabricflow_sim::config::{Pattern, Routing, SimConfig, Traffic};
use fabricflow_sim::Sim;

fn main() {
    let cycles: u64 = std::env::var("SIM_BENCH_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    println!(
        "fabric                 routing     traffic  load  cycles   cycles/CPU-s  vs BookSim2"
    );
    for (routing, traffic, load, booksim) in [
        (Routing::Minimal, Pattern::Uniform, 0.1, 280.0),
        (Routing::Minimal, Pattern::Uniform, 1.0, 36.0),
        (
            Routing::QcnSw(fabricflow_agent::policy::Variant::Base),
            Pattern::Uniform,
            0.1,
            280.0,
        ),
        (
            Routing::QcnSw(fabricflow_agent::policy::Variant::Base),
            Pattern::Uniform,
            1.0,
            36.0,
        ),
        (Routing::Valiant, Pattern::Adv(1), 1.0, 36.0),
    ] {
        let cfg = SimConfig {
            routing,
            traffic: Traffic::steady(traffic),
            load,
            warmup_cycles: 0,
            measure_cycles: cycles,
            ..SimConfig::default()
        };
        let Ok(mut sim) = Sim::new(cfg.clone()) else {
            eprintln!("bad config");
            return;
        };
        let t = Instant::now();
        sim.run(cycles);
        let rate = cycles as f64 / t.elapsed().as_secs_f64();
        println!(
            "{:22} {:11} {:8} {:4.2}  {:7}  {:25.0}  {:6.1}x",
            cfg.topology.to_string(),
            routing.to_string(),
            traffic.to_string(),
            load,
            cycles,
            rate,
            rate / booksim
        );
    }
}
