//! Plan generation time for large fabrics, and rules per switch.
//!
//! `cargo bench -p fabricflow-controller --bench plan`. Goals: the 1 056-host Dragonfly(4,8,4)
//! under 100 ms and the 16 512-host Dragonfly(8,16,8) under 2 s on one core.
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use fabricflow_controller::{Plan, PlanOptions, TopologySpec};

const SPECS: [&str; 3] = [
    "dragonfly:p=4,a=8,h=4",
    "dragonfly:p=8,a=16,h=8",
    "fattree:k=16,n=3",
];

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("plan");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    for spec in SPECS {
        let Ok(fabric) = spec.parse::<TopologySpec>().and_then(|s| s.build()) else {
            eprintln!("cannot build {spec}");
            continue;
        };
        let opts = PlanOptions::default();
        if let Ok(plan) = Plan::build(&fabric, &opts) {
            let per: Vec<usize> = plan.switches.iter().map(|s| s.flows.len()).collect();
            let (flows, groups) = plan.totals();
            let (min, max) = (
                per.iter().min().copied().unwrap_or(0),
                per.iter().max().copied().unwrap_or(0),
            );
            println!(
                "{spec}: {} hosts, {} switches, {flows} flows ({min}..={max} per switch, mean {:.1}), {groups} groups",
                fabric.hosts().len(),
                fabric.switches().len(),
                flows as f64 / per.len().max(1) as f64
            );
        }
        group.bench_function(spec, |b| b.iter(|| Plan::build(&fabric, &opts)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
