//! Times the planning phases of one topology: `cargo run --release --example plan_time -- SPEC`.
use std::time::Instant;

use fabricflow_controller::{Plan, PlanOptions, Routes, TopologySpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let spec: TopologySpec = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "dragonfly:p=8,a=16,h=8".into())
        .parse()?;
    let t0 = Instant::now();
    let fabric = spec.build()?;
    let t1 = Instant::now();
    let opts = PlanOptions::default();
    let routes = Routes::compute(&fabric, &opts.failed);
    let t2 = Instant::now();
    let plan = Plan::build_with_routes(&fabric, &routes, &opts)?;
    let t3 = Instant::now();
    let (f, g) = plan.totals();
    println!(
        "{spec}: {} hosts, fabric {:?}, routes {:?}, plan {:?}; {f} flows {g} groups",
        fabric.hosts().len(),
        t1 - t0,
        t2 - t1,
        t3 - t2
    );
    Ok(())
}
