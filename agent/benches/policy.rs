//! Policy events per second on one core: a 16-port switch fed a mix of BytesSent (90 %) and
//! CnmReceived (10 %), for the base and the combined variant. Goal ≥ 5 M events/s.
//!
//! Run: `cargo bench -p fabricflow-agent --bench policy`
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use fabricflow_agent::policy::PolicyConfig;
use fabricflow_agent::policy::{Effects, Event, Policy, UpdatePolicy, Variant};

const PORTS: u32 = 16;
const EVENTS: usize = 4096;

/// A fixed, reproducible event mix (xorshift, no RNG dependency).
fn events() -> Vec<Event> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..EVENTS)
        .map(|_| {
            let r = next();
            let port = 1 + (r % u64::from(PORTS)) as u32;
            if (r >> 8) % 10 == 0 {
                Event::CnmReceived {
                    port,
                    qntz_fb: ((r >> 16) % 64) as u8,
                }
            } else {
                Event::BytesSent {
                    port,
                    bytes: 64 + (r >> 24) % 1_500,
                }
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let evs = events();
    let mut group = c.benchmark_group("policy");
    group.throughput(Throughput::Elements(EVENTS as u64));
    for (name, variant, update) in [
        ("base_aimd", Variant::Base, UpdatePolicy::Aimd),
        ("combined_aimd", Variant::Combined, UpdatePolicy::Aimd),
        (
            "feedback_comparison_miad",
            Variant::FeedbackComparison,
            UpdatePolicy::Miad,
        ),
    ] {
        let cfg = PolicyConfig {
            variant,
            update,
            byte_limit_bytes: 15_000,
            ..PolicyConfig::default()
        };
        group.bench_function(name, |b| {
            b.iter_batched_ref(
                || (Policy::new(cfg.clone(), 1..=PORTS).ok(), Effects::new()),
                |(pol, fx)| {
                    if let Some(pol) = pol.as_mut() {
                        for (i, ev) in evs.iter().enumerate() {
                            pol.handle_into(*ev, i as u64, fx);
                            black_box(fx.changes().len());
                        }
                    }
                },
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
