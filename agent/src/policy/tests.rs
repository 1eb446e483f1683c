use super::*;

const GD: f64 = 1.0 / 128.0;
const B: u64 = 150_000;
/// Octets of line time per µs on the default 10 Gb/s link.
const US_AT_10G: u64 = 1_250;

fn policy(cfg: PolicyConfig, ports: &[PortNo]) -> Policy {
    Policy::new(cfg, ports.iter().copied()).unwrap()
}

fn base(ports: &[PortNo]) -> Policy {
    policy(PolicyConfig::published(), ports)
}

fn with(variant: Variant, update: UpdatePolicy) -> PolicyConfig {
    PolicyConfig {
        variant,
        update,
        ..PolicyConfig::published()
    }
}

fn cnm(port: PortNo, qntz_fb: u8) -> Event {
    Event::CnmReceived { port, qntz_fb }
}

fn bytes(port: PortNo, bytes: u64) -> Event {
    Event::BytesSent { port, bytes }
}

fn p(pol: &Policy, port: PortNo) -> f64 {
    pol.p_percent(port).unwrap()
}

#[test]
fn starts_at_100() {
    let pol = base(&[5, 6, 7]);
    assert!(pol.probabilities().all(|(_, p)| p == 100.0));
    assert_eq!(pol.ports(), &[5, 6, 7]);
    assert_eq!(pol.p_percent(1), None);
}

#[test]
fn base_aimd_decrease_at_63_is_the_published_value() {
    let mut pol = base(&[5, 6]);
    let fx = pol.handle(cnm(5, 63), 0);
    assert_eq!(p(&pol, 5), 100.0 * (1.0 - 63.0 / 128.0));
    assert_eq!(p(&pol, 5), 50.78125);
    assert_eq!(p(&pol, 6), 100.0);
    assert_eq!(
        fx.changes(),
        &[PChange {
            port: 5,
            old_percent: 100.0,
            new_percent: 50.78125,
            cause: Cause::CnmDecrease
        }]
    );
    // A second CNM multiplies again.
    pol.handle(cnm(5, 10), 1);
    assert_eq!(p(&pol, 5), 50.78125 * (1.0 - 10.0 * GD));
    assert_eq!(pol.counters().cnm_received, 2);
    assert_eq!(pol.counters().decreases, 2);
}

#[test]
fn qntz_fb_above_63_counts_as_63() {
    let mut pol = base(&[1]);
    pol.handle(cnm(1, 200), 0);
    assert_eq!(p(&pol, 1), 50.78125);
}

#[test]
fn byte_counter_increases_every_b_bytes() {
    let mut pol = base(&[1]);
    pol.handle(cnm(1, 63), 0);
    assert!(pol.handle(bytes(1, B - 1), 1).is_empty());
    let fx = pol.handle(bytes(1, 1), 2);
    assert_eq!(p(&pol, 1), 51.78125);
    assert_eq!(
        fx.changes().first().map(|c| c.cause),
        Some(Cause::ByteCounterIncrease)
    );
    // One batched report of 3·B + 10 bytes: three increases, 10 bytes carried over.
    pol.handle(bytes(1, 3 * B + 10), 3);
    assert_eq!(p(&pol, 1), 54.78125);
    assert!(pol.handle(bytes(1, B - 11), 4).is_empty());
    pol.handle(bytes(1, 1), 5);
    assert_eq!(p(&pol, 1), 55.78125);
    assert_eq!(pol.counters().increases, 5);
}

#[test]
fn byte_counter_restarts_after_a_cnm() {
    let mut pol = base(&[1]);
    pol.handle(cnm(1, 63), 0);
    pol.handle(bytes(1, 100_000), 1);
    // QntzFb 0: P does not move, but the counter restarts.
    assert!(pol.handle(cnm(1, 0), 2).is_empty());
    assert_eq!(p(&pol, 1), 50.78125);
    assert!(pol.handle(bytes(1, 100_000), 3).is_empty());
    assert_eq!(p(&pol, 1), 50.78125);
    pol.handle(bytes(1, 50_000), 4);
    assert_eq!(p(&pol, 1), 51.78125);
}

#[test]
fn increase_caps_at_100_and_reports_nothing_there() {
    let mut pol = base(&[1]);
    assert!(pol.handle(bytes(1, 10 * B), 0).is_empty());
    pol.handle(cnm(1, 1), 1); // 100 · (1 − 1/128) = 99.21875
    assert_eq!(p(&pol, 1), 99.21875);
    let fx = pol.handle(bytes(1, 5 * B), 2);
    assert_eq!(p(&pol, 1), 100.0);
    assert_eq!(fx.changes().len(), 1);
}

#[test]
fn pmin_floor_holds() {
    let mut pol = base(&[1]);
    for t in 0..20 {
        pol.handle(cnm(1, 63), t);
    }
    assert_eq!(p(&pol, 1), 5.0);
    // At the floor a further CNM changes nothing and reports nothing.
    assert!(pol.handle(cnm(1, 63), 100).is_empty());
    assert_eq!(p(&pol, 1), 5.0);

    let mut ad = policy(with(Variant::Base, UpdatePolicy::Aiad), &[1]);
    ad.handle(cnm(1, 63), 0); // 100 − 49.21875 = 50.78125
    ad.handle(cnm(1, 63), 1); // 1.5625 → floor
    assert_eq!(p(&ad, 1), 5.0);

    let zero = PolicyConfig {
        p_min_percent: 0.0,
        update: UpdatePolicy::Aiad,
        ..PolicyConfig::published()
    };
    let mut ad0 = policy(zero, &[1]);
    ad0.handle(cnm(1, 63), 0);
    ad0.handle(cnm(1, 63), 1);
    assert_eq!(p(&ad0, 1), 1.5625);
    ad0.handle(cnm(1, 63), 2);
    assert_eq!(p(&ad0, 1), 0.0);
}

#[test]
fn aiad_decreases_and_increases_by_points() {
    let mut pol = policy(with(Variant::Base, UpdatePolicy::Aiad), &[1]);
    pol.handle(cnm(1, 63), 0);
    assert_eq!(p(&pol, 1), 100.0 - 0.78125 * 63.0);
    assert_eq!(p(&pol, 1), 50.78125);
    pol.handle(cnm(1, 10), 1);
    assert_eq!(p(&pol, 1), 50.78125 - 7.8125);
    pol.handle(bytes(1, B), 2);
    assert_eq!(p(&pol, 1), 50.78125 - 7.8125 + 1.0);
}

#[test]
fn aiad_with_fogsim_constant() {
    // FOGSim subtracts g_qcn_gd · QntzFb percentage points.
    let cfg = PolicyConfig {
        update: UpdatePolicy::Aiad,
        ad_percent_per_fb: GD,
        ..PolicyConfig::published()
    };
    let mut pol = policy(cfg, &[1]);
    pol.handle(cnm(1, 63), 0);
    assert_eq!(p(&pol, 1), 100.0 - 63.0 / 128.0);
}

#[test]
fn mimd_multiplies_both_ways() {
    let mut pol = policy(with(Variant::Base, UpdatePolicy::Mimd), &[1]);
    pol.handle(cnm(1, 63), 0);
    assert_eq!(p(&pol, 1), 50.78125);
    pol.handle(bytes(1, B), 1);
    assert_eq!(p(&pol, 1), 50.78125 * 1.02);
    pol.handle(bytes(1, 2 * B), 2);
    assert_eq!(p(&pol, 1), 50.78125 * 1.02 * 1.02f64.powf(2.0));
    pol.handle(bytes(1, 1000 * B), 3);
    assert_eq!(p(&pol, 1), 100.0);
}

#[test]
fn miad_multiplies_up_and_subtracts_down() {
    let mut pol = policy(with(Variant::Base, UpdatePolicy::Miad), &[1]);
    pol.handle(cnm(1, 32), 0);
    assert_eq!(p(&pol, 1), 100.0 - 0.78125 * 32.0);
    assert_eq!(p(&pol, 1), 75.0);
    pol.handle(bytes(1, B), 1);
    assert_eq!(p(&pol, 1), 75.0 * 1.02);
}

#[test]
fn feedback_comparison_decreases_by_fb_minus_average() {
    let mut pol = policy(
        with(Variant::FeedbackComparison, UpdatePolicy::Aimd),
        &[1, 2, 3, 4],
    );
    let fx = pol.handle(cnm(1, 63), 0);
    // Fb_avg = 63/4 = 15.75 (the other ports count as 0); cut by 63 − 15.75 = 47.25.
    assert_eq!(pol.fb_avg(), 15.75);
    assert_eq!(p(&pol, 1), 100.0 * (1.0 - GD * (63.0 - 15.75)));
    assert_eq!(p(&pol, 1), 63.0859375);
    assert_eq!(
        fx.changes().first().map(|c| c.cause),
        Some(Cause::FeedbackDecrease)
    );
    assert_eq!(pol.last_fb(1), Some(63));
}

#[test]
fn feedback_comparison_increases_under_uniform_congestion() {
    let mut pol = policy(
        with(Variant::FeedbackComparison, UpdatePolicy::Aimd),
        &[1, 2, 3, 4],
    );
    pol.handle(cnm(1, 63), 0);
    pol.handle(cnm(2, 63), 1); // avg 31.5: cut by 31.5
    assert_eq!(p(&pol, 2), 100.0 * (1.0 - GD * 31.5));
    pol.handle(cnm(3, 63), 2); // avg 47.25: cut by 15.75
    assert_eq!(p(&pol, 3), 100.0 * (1.0 - GD * 15.75));
    // Now every port reported 63: Fb = Fb_avg ≤ Fb_avg + th1 → increase though a CNM arrived.
    assert!(pol.handle(cnm(4, 63), 3).is_empty()); // P(4) already 100
    assert_eq!(pol.fb_avg(), 63.0);
    let fx = pol.handle(cnm(1, 63), 4);
    assert_eq!(p(&pol, 1), 63.0859375 + 1.0);
    assert_eq!(
        fx.changes().first().map(|c| c.cause),
        Some(Cause::FeedbackIncrease)
    );
    // A lower Fb than the average also increases.
    pol.handle(cnm(2, 5), 5);
    assert_eq!(p(&pol, 2), 100.0 * (1.0 - GD * 31.5) + 1.0);
}

#[test]
fn feedback_comparison_dead_band() {
    let cfg = PolicyConfig {
        variant: Variant::FeedbackComparison,
        fbcomp_th1: 0.0,
        fbcomp_th2: 10.0,
        ..PolicyConfig::published()
    };
    let mut pol = policy(cfg, &[1, 2, 3, 4]);
    pol.handle(cnm(1, 20), 0); // avg 5, 20 > 5 + 10: cut by 15
    assert_eq!(p(&pol, 1), 100.0 * (1.0 - GD * 15.0));
    pol.handle(bytes(2, B - 1), 1);
    // avg (20 + 12)/4 = 8: 12 > 8 + th1 but 12 ≤ 8 + th2 → nothing.
    assert!(pol.handle(cnm(2, 12), 2).is_empty());
    assert_eq!(p(&pol, 2), 100.0);
    assert_eq!(pol.counters().dead_band, 1);
    // Even in the dead band, the CNM restarted the byte counter of port 2.
    pol.handle(cnm(2, 63), 3);
    let before = p(&pol, 2);
    assert!(pol.handle(bytes(2, 1), 4).is_empty());
    assert_eq!(p(&pol, 2), before);
}

#[test]
fn feedback_comparison_with_additive_decrease() {
    let mut pol = policy(
        with(Variant::FeedbackComparison, UpdatePolicy::Aiad),
        &[1, 2],
    );
    pol.handle(cnm(1, 40), 0); // avg 20, cut 20 · 0.78125 = 15.625 points
    assert_eq!(p(&pol, 1), 100.0 - 0.78125 * 20.0);
}

#[test]
fn source_processing_charges_own_minimal_port() {
    let mut pol = policy(
        with(Variant::SourceProcessing, UpdatePolicy::Aimd),
        &[1, 2, 3],
    );
    let fx = pol.handle(
        Event::CnmGenerated {
            minimal_port_towards_culprit: 3,
            qntz_fb: 63,
        },
        0,
    );
    assert_eq!(p(&pol, 3), 50.78125);
    assert_eq!(
        fx.changes().first().map(|c| c.cause),
        Some(Cause::SourceDecrease)
    );
    assert_eq!(pol.counters().cnm_self_charged, 1);
    // Received CNMs still apply the base decrease.
    pol.handle(cnm(1, 63), 1);
    assert_eq!(p(&pol, 1), 50.78125);
    // It restarts the byte counter of that port.
    pol.handle(bytes(3, B - 1), 2);
    pol.handle(
        Event::CnmGenerated {
            minimal_port_towards_culprit: 3,
            qntz_fb: 0,
        },
        3,
    );
    assert!(pol.handle(bytes(3, 1), 4).is_empty());
}

#[test]
fn source_processing_is_ignored_without_the_add_on() {
    for variant in [Variant::Base, Variant::FeedbackComparison] {
        let mut pol = policy(with(variant, UpdatePolicy::Aimd), &[1]);
        let fx = pol.handle(
            Event::CnmGenerated {
                minimal_port_towards_culprit: 1,
                qntz_fb: 63,
            },
            0,
        );
        assert!(fx.is_empty());
        assert_eq!(p(&pol, 1), 100.0);
        assert_eq!(pol.counters().cnm_generated_ignored, 1);
    }
}

#[test]
fn combined_is_both_add_ons() {
    let mut pol = policy(with(Variant::Combined, UpdatePolicy::Aimd), &[1, 2, 3, 4]);
    // Self-generated: plain decrease, stored Fb untouched.
    pol.handle(
        Event::CnmGenerated {
            minimal_port_towards_culprit: 2,
            qntz_fb: 63,
        },
        0,
    );
    assert_eq!(p(&pol, 2), 50.78125);
    assert_eq!(pol.last_fb(2), Some(0));
    assert_eq!(pol.fb_avg(), 0.0);
    // Received: feedback comparison.
    pol.handle(cnm(1, 63), 1);
    assert_eq!(p(&pol, 1), 63.0859375);
}

#[test]
fn fb_ageing_drops_stale_ports_from_the_average() {
    let aged = PolicyConfig {
        fb_max_age_line_bytes: 100 * US_AT_10G,
        ..with(Variant::FeedbackComparison, UpdatePolicy::Aimd)
    };
    let published = with(Variant::FeedbackComparison, UpdatePolicy::Aimd);
    let mut old = policy(published, &[1, 2, 3, 4]);
    let mut new = policy(aged, &[1, 2, 3, 4]);
    // Uniform congestion: every port reports 40 at t = 0 (port 4 first, so it was cut).
    for pol in [&mut old, &mut new] {
        for port in (1..=4).rev() {
            pol.handle(cnm(port, 40), 0);
        }
    }
    let p4 = p(&old, 4);
    assert_eq!(p4, 100.0 * (1.0 - GD * 30.0));
    assert_eq!(p(&new, 4), p4);
    // 200 µs later only port 4 is congested, at 30 (< the stale average of 40).
    let t = 200_000;
    let fx_old = old.handle(cnm(4, 30), t);
    let fx_new = new.handle(cnm(4, 30), t);
    // Published: avg (40·3 + 30)/4 = 37.5 ≥ 30 → increase: the adversarial port is never cut.
    assert_eq!(old.fb_avg_at(t), 37.5);
    assert_eq!(p(&old, 4), p4 + 1.0);
    assert_eq!(
        fx_old.changes().first().map(|c| c.cause),
        Some(Cause::FeedbackIncrease)
    );
    // Aged: only port 4's fresh 30 counts, avg 7.5 → cut by 22.5.
    assert_eq!(new.fb_avg_at(t), 7.5);
    assert_eq!(p(&new, 4), p4 * (1.0 - GD * 22.5));
    assert_eq!(
        fx_new.changes().first().map(|c| c.cause),
        Some(Cause::FeedbackDecrease)
    );
    // Within the age limit nothing is dropped: the ageing policy equals the published one.
    assert_eq!(new.fb_avg_at(t + 100_000), 7.5);
    assert_eq!(new.fb_avg_at(t + 100_001), 0.0);
    assert_eq!(new.fb_avg(), old.fb_avg());
}

#[test]
fn source_comparison_compares_self_generated_cnms() {
    let cfg = PolicyConfig {
        source_comparison: true,
        ..with(Variant::Combined, UpdatePolicy::Aimd)
    };
    let mut pol = policy(cfg, &[1, 2, 3, 4]);
    let gen = |port, qntz_fb| Event::CnmGenerated {
        minimal_port_towards_culprit: port,
        qntz_fb,
    };
    // Received CNMs on every port at 40: Fb_avg 40 after the first decreases.
    for port in 1..=4 {
        pol.handle(cnm(port, 40), 0);
    }
    let p2 = p(&pol, 2);
    // A self-generated CNM at the average: increase (uniform congestion), not a plain cut.
    let fx = pol.handle(gen(2, 40), 1);
    assert_eq!(p(&pol, 2), p2 + 1.0);
    assert_eq!(
        fx.changes().first().map(|c| c.cause),
        Some(Cause::FeedbackIncrease)
    );
    // Above the average: cut by Fb − Fb_avg, and the stored Fb stays the received one.
    pol.handle(gen(2, 60), 2);
    assert_eq!(p(&pol, 2), (p2 + 1.0) * (1.0 - GD * 20.0));
    assert_eq!(pol.last_fb(2), Some(40));
    // Without feedback comparison the knob changes nothing: source processing cuts plainly.
    let sp = PolicyConfig {
        source_comparison: true,
        ..with(Variant::SourceProcessing, UpdatePolicy::Aimd)
    };
    let mut pol = policy(sp, &[1, 2]);
    pol.handle(gen(2, 63), 0);
    assert_eq!(p(&pol, 2), 50.78125);
}

#[test]
fn candidate_reference_compares_with_the_candidates_congestion() {
    let cfg = PolicyConfig {
        fbcomp_reference: FbReference::Candidates,
        source_comparison: true,
        fb_max_age_line_bytes: 100 * US_AT_10G,
        ..with(Variant::Combined, UpdatePolicy::Aimd)
    };
    // Ports 1-3 local, 6 and 7 global; port 6's decision point diverts to 7 (and 7's to 6);
    // port 1 (a local minimal port) diverts to both.
    let mut pol = policy(cfg, &[1, 2, 3, 6, 7]);
    pol.set_candidates([(6, &[7, 6][..]), (7, &[6][..]), (1, &[6, 7, 99][..])]);
    assert_eq!(
        pol.candidates(6),
        vec![7],
        "itself and unknown ports dropped"
    );
    assert_eq!(pol.candidates(1), vec![6, 7]);
    assert_eq!(pol.candidates(2), Vec::<PortNo>::new());
    let obs = |port, qntz_fb| Event::CongestionObserved { port, qntz_fb };
    let gen = |port, qntz_fb| Event::CnmGenerated {
        minimal_port_towards_culprit: port,
        qntz_fb,
    };
    // Adversarial start: port 6's minimal path congested, its candidate quiet: the whole Fb cuts.
    pol.handle(cnm(6, 50), 0);
    let p6 = 100.0 * (1.0 - GD * 50.0);
    assert_eq!(p(&pol, 6), p6);
    // Then this switch's CP finds both of its global ports congested (uniform traffic): its own
    // CNM for port 6 compares with 7's 40 and increases instead of cutting.
    assert!(
        pol.handle(obs(7, 40), 0).is_empty(),
        "an observation moves no P"
    );
    pol.handle(obs(6, 40), 0);
    assert_eq!(pol.candidate_congestion(6, 0), Some(40.0));
    let fx = pol.handle(gen(6, 40), 1);
    assert_eq!(p(&pol, 6), p6 + 1.0);
    assert_eq!(
        fx.changes().first().map(|c| c.cause),
        Some(Cause::FeedbackIncrease)
    );
    // Port 7 also received 20 from downstream: the candidate counts the larger, its own 40.
    pol.handle(cnm(7, 20), 1);
    assert_eq!(pol.candidate_congestion(6, 1), Some(40.0));
    // A received CNM on port 1 (local) at 50: candidates 6 and 7 hold max(received, own) =
    // max(50, 40) and max(20, 40) -> mean 45 -> cut by 5. The fabric average would have been
    // (50 + 50 + 20) / 5 = 24, a cut by 26.
    pol.handle(cnm(1, 50), 2);
    assert_eq!(pol.candidate_congestion(1, 2), Some(45.0));
    assert_eq!(p(&pol, 1), 100.0 * (1.0 - GD * 5.0));
    assert_eq!(pol.fb_avg_at(2), 24.0);
    // Adversarial: the candidates fall quiet (their Fb ages out after 100 µs), the minimal
    // port stays congested: the whole Fb counts.
    let t = 200_000;
    assert_eq!(pol.candidate_congestion(1, t), Some(0.0));
    let p1 = p(&pol, 1);
    pol.handle(cnm(1, 50), t);
    assert_eq!(p(&pol, 1), p1 * (1.0 - GD * 50.0));
    // A port without candidates falls back to Fb_avg (fresh ones only): port 2 at 20 against
    // (50 + 20) / 5 = 14.
    pol.handle(cnm(2, 20), t);
    assert_eq!(p(&pol, 2), 100.0 * (1.0 - GD * 6.0));
    assert_eq!(pol.counters().congestion_observed, 2);
    assert_eq!(pol.counters().candidate_comparisons, 5);
    // Candidate indices do not survive a change of ports; the caller sets them again.
    pol.set_fabric_ports([1, 2, 3, 6, 7, 8]);
    assert_eq!(pol.candidates(6), Vec::<PortNo>::new());
}

#[test]
fn idle_timer_increases_per_elapsed_period() {
    let cfg = PolicyConfig {
        increase_timer_line_bytes: Some(1_000 * US_AT_10G),
        ..PolicyConfig::published()
    };
    let ms = 1_000_000;
    let mut pol = policy(cfg, &[1, 2]);
    pol.handle(cnm(1, 63), 0);
    assert!(pol.handle(Event::Tick, ms / 2).is_empty());
    let fx = pol.handle(Event::Tick, ms);
    assert_eq!(p(&pol, 1), 51.78125);
    assert_eq!(
        fx.changes().first().map(|c| c.cause),
        Some(Cause::TimerIncrease)
    );
    // 2.5 periods later: two more increases, the phase is kept (next at 4 ms).
    pol.handle(Event::Tick, 3 * ms + ms / 2);
    assert_eq!(p(&pol, 1), 53.78125);
    // A byte-counter increase at 3.9 ms restarts the timer: nothing at 4.5 ms, one at 4.9 ms.
    pol.handle(bytes(1, B), 3 * ms + 9 * ms / 10);
    assert_eq!(p(&pol, 1), 54.78125);
    assert!(pol.handle(Event::Tick, 4 * ms + ms / 2).is_empty());
    pol.handle(Event::Tick, 4 * ms + 9 * ms / 10);
    assert_eq!(p(&pol, 1), 55.78125);
    // A timer increase restarts the byte counter.
    pol.handle(bytes(1, B - 1), 5 * ms);
    pol.handle(Event::Tick, 6 * ms);
    assert_eq!(p(&pol, 1), 56.78125);
    assert!(pol.handle(bytes(1, 1), 6 * ms).is_empty());
    // Port 2 stayed at 100 throughout and was never reported.
    assert_eq!(p(&pol, 2), 100.0);
    // Time going backwards is harmless.
    assert!(pol.handle(Event::Tick, 0).is_empty());
}

#[test]
fn no_timer_by_default() {
    let mut pol = base(&[1]);
    pol.handle(cnm(1, 63), 0);
    assert!(pol.handle(Event::Tick, u64::MAX).is_empty());
    assert_eq!(p(&pol, 1), 50.78125);
}

#[test]
fn unknown_ports_are_ignored_and_counted() {
    let mut pol = base(&[1]);
    assert!(pol.handle(cnm(9, 63), 0).is_empty());
    assert!(pol.handle(bytes(9, 10 * B), 0).is_empty());
    assert_eq!(pol.counters().unknown_port, 2);
    assert_eq!(pol.counters().cnm_received, 0);
}

#[test]
fn set_config_moves_p_into_new_bounds() {
    let mut pol = base(&[1, 2]);
    pol.handle(cnm(1, 63), 0);
    let cfg = PolicyConfig {
        p_min_percent: 60.0,
        ..PolicyConfig::published()
    };
    let fx = pol.set_config(cfg).unwrap();
    assert_eq!(p(&pol, 1), 60.0);
    assert_eq!(
        fx.changes(),
        &[PChange {
            port: 1,
            old_percent: 50.78125,
            new_percent: 60.0,
            cause: Cause::ConfigChange
        }]
    );
    assert!(pol
        .set_config(PolicyConfig {
            gd: 1.0,
            ..PolicyConfig::published()
        })
        .is_err());
    assert_eq!(pol.config().p_min_percent, 60.0);
}

#[test]
fn handle_into_reuses_the_buffer() {
    let mut pol = base(&[1]);
    let mut fx = Effects::new();
    pol.handle_into(cnm(1, 63), 0, &mut fx);
    assert_eq!(fx.changes().len(), 1);
    pol.handle_into(bytes(1, 1), 1, &mut fx);
    assert!(fx.is_empty());
}

mod props {
    use super::*;
    use crate::weights::{DecisionPoint, WeightPlanner, WeightsConfig};
    use proptest::prelude::*;

    const PORTS: [PortNo; 6] = [3, 4, 5, 6, 7, 8];

    fn event() -> impl Strategy<Value = Event> {
        let port = prop_oneof![prop::sample::select(PORTS.to_vec()), Just(99u32)];
        prop_oneof![
            (port.clone(), any::<u8>())
                .prop_map(|(port, qntz_fb)| Event::CnmReceived { port, qntz_fb }),
            (port.clone(), 0u8..=63).prop_map(|(p, qntz_fb)| Event::CnmGenerated {
                minimal_port_towards_culprit: p,
                qntz_fb
            }),
            (port.clone(), any::<u8>())
                .prop_map(|(port, qntz_fb)| Event::CongestionObserved { port, qntz_fb }),
            (
                port,
                prop_oneof![0u64..2_000, 0u64..1_000_000, Just(u64::MAX)]
            )
                .prop_map(|(port, bytes)| Event::BytesSent { port, bytes }),
            Just(Event::Tick),
        ]
    }

    fn config() -> impl Strategy<Value = PolicyConfig> {
        (
            prop::sample::select(Variant::ALL.to_vec()),
            prop::sample::select(UpdatePolicy::ALL.to_vec()),
            0.1f64..60.0,
            prop::option::of(1u64..5_000),
            -5.0f64..5.0,
            0.0f64..10.0,
            0u64..5_000,
            any::<bool>(),
            prop::sample::select(vec![
                FbReference::FabricAverage,
                FbReference::Candidates,
                FbReference::Both,
            ]),
            (prop_oneof![Just(0.0), 0.01f64..=1.0], any::<bool>()),
        )
            .prop_map(
                |(
                    variant,
                    update,
                    p_min,
                    timer,
                    th1,
                    th2,
                    age,
                    srccmp,
                    reference,
                    (smoothing, persistent),
                )| {
                    PolicyConfig {
                        variant,
                        update,
                        p_min_percent: p_min,
                        increase_timer_line_bytes: timer.map(|t| t * US_AT_10G),
                        fbcomp_th1: th1.min(th2),
                        fbcomp_th2: th2,
                        fb_max_age_line_bytes: age * US_AT_10G,
                        source_comparison: srccmp,
                        fbcomp_reference: reference,
                        fbcomp_smoothing: smoothing,
                        fbcomp_persistent_excess: persistent,
                        byte_limit_bytes: 10_000,
                        ..PolicyConfig::published()
                    }
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn p_stays_in_bounds_and_weights_sum_to_256(
            cfg in config(),
            events in prop::collection::vec((event(), 0u64..3_000_000), 1..200),
            candidates in 0usize..8,
            interval_us in 0u64..2_000,
        ) {
            let p_min = cfg.p_min_percent;
            let mut pol = Policy::new(cfg, PORTS).unwrap();
            pol.set_candidates(PORTS.iter().map(|&p| (p, &PORTS[..])));
            let wcfg = WeightsConfig { min_update_interval_line_bytes: interval_us * US_AT_10G, ..WeightsConfig::default() };
            let mut planner = WeightPlanner::new(wcfg).unwrap();
            for (k, &port) in PORTS.iter().enumerate() {
                let dp = DecisionPoint { group_id: 1000 + port, minimal_port: port, n_nonminimal: (candidates + k) % 8, equal_cost: false };
                planner.add_group(dp, None).unwrap();
            }
            let mut now = 0u64;
            let mut writes = Vec::new();
            for (ev, dt) in events {
                now = now.saturating_add(dt);
                let fx = pol.handle(ev, now);
                for c in &fx {
                    prop_assert!(c.new_percent != c.old_percent);
                    planner.on_probability(c.port, c.new_percent, now, &mut writes);
                }
                planner.tick(now, &mut writes);
                for (_, pp) in pol.probabilities() {
                    prop_assert!(pp >= p_min && pp <= 100.0, "P = {pp} outside [{p_min}, 100]");
                }
                for w in writes.drain(..) {
                    prop_assert_eq!(w.weights.iter().map(|&x| u32::from(x)).sum::<u32>(), 256);
                    prop_assert_eq!(w.weights.last().copied(), Some(1));
                }
            }
            for &port in &PORTS {
                let installed = planner.installed(1000 + port).unwrap();
                prop_assert_eq!(installed.iter().map(|&x| u32::from(x)).sum::<u32>(), 256);
                prop_assert_eq!(installed.last().copied(), Some(1));
            }
        }
    }
}

/// Time constants follow each port's own line rate: a 2.5 Mb/s port's idle timer and Fb age are
/// 4 000 times a 10 Gb/s port's, and the timer never fires sooner than twice the byte-report
/// period.
#[test]
fn time_constants_scale_with_each_ports_rate() {
    use crate::link::{PortLink, PortLinks};
    let cfg = PolicyConfig {
        variant: Variant::FeedbackComparison,
        increase_timer_line_bytes: Some(10_000),
        fb_max_age_line_bytes: 10_000,
        ..PolicyConfig::published()
    };
    let mut p = policy(cfg, &[1, 2]);
    let fast = PortLink {
        rate_bps: 10e9,
        buffer_bytes: 1,
    };
    let slow = PortLink {
        rate_bps: 2.5e6,
        buffer_bytes: 1,
    };
    p.set_links(PortLinks::new(fast, vec![(2, slow)]), 0);
    assert_eq!(p.links().get(2), slow);
    // Both at P 50; a tick at t = 0 starts the timers.
    for port in [1, 2] {
        p.set_p_percent(port, 50.0);
    }
    p.handle(Event::Tick, 0);
    let p1 = p.p_percent(1).unwrap();
    let p2 = p.p_percent(2).unwrap();
    // 10 000 octets: 8 µs at 10 Gb/s, 32 ms at 2.5 Mb/s.
    let fx = p.handle(Event::Tick, 8_000);
    assert!(fx
        .changes()
        .iter()
        .any(|c| c.port == 1 && c.cause == Cause::TimerIncrease));
    assert!(!fx.changes().iter().any(|c| c.port == 2));
    assert!(p.p_percent(1).unwrap() > p1);
    let fx = p.handle(Event::Tick, 31_999_999);
    assert!(!fx.changes().iter().any(|c| c.port == 2));
    let fx = p.handle(Event::Tick, 32_000_000);
    assert!(fx
        .changes()
        .iter()
        .any(|c| c.port == 2 && c.cause == Cause::TimerIncrease));
    assert!(p.p_percent(2).unwrap() > p2);
    // Fb ageing: port 1's stored Fb is stale after 8 µs, port 2's is still fresh at 31 ms.
    p.handle(
        Event::CnmReceived {
            port: 1,
            qntz_fb: 40,
        },
        40_000_000,
    );
    p.handle(
        Event::CnmReceived {
            port: 2,
            qntz_fb: 20,
        },
        40_000_000,
    );
    assert_eq!(p.fb_avg_at(40_000_000 + 9_000), 10.0);
    assert_eq!(p.fb_avg_at(40_000_000 + 31_000_000), 10.0);
    assert_eq!(p.fb_avg_at(40_000_000 + 33_000_000), 0.0);
    // A byte-report period of 100 ms holds the fast port's timer at 200 ms.
    p.set_links(PortLinks::new(fast, vec![(2, slow)]), 100_000_000);
    let t0 = 100_000_000_000;
    p.set_p_percent(1, 50.0);
    p.handle(
        Event::CnmReceived {
            port: 1,
            qntz_fb: 0,
        },
        t0,
    );
    let fx = p.handle(Event::Tick, t0 + 199_999_999);
    assert!(!fx.changes().iter().any(|c| c.port == 1));
    let fx = p.handle(Event::Tick, t0 + 200_000_000);
    assert!(fx.changes().iter().any(|c| c.port == 1));
}

/// `both`: a port is cut only when it is more congested than the fabric average *and* its
/// candidates, raised only when it is at or below the average, and held in between.
#[test]
fn both_reference_takes_the_larger_of_average_and_candidates() {
    let cfg = PolicyConfig {
        fbcomp_reference: FbReference::Both,
        ..with(Variant::FeedbackComparison, UpdatePolicy::Aimd)
    };
    let mut pol = policy(cfg, &[1, 2, 3, 4]);
    pol.set_candidates([(1, &[2][..])]);
    // Port 2 (1's candidate) quiet, ports 3 and 4 heavily congested: the average (after 1's own
    // 30 is stored) is (30 + 0 + 60 + 60) / 4 = 37.5 > candidates 0, so 30 is below it: increase.
    pol.handle(cnm(3, 60), 0);
    pol.handle(cnm(4, 60), 0);
    pol.set_p_percent(1, 50.0);
    let fx = pol.handle(cnm(1, 30), 0);
    assert_eq!(
        fx.changes().first().map(|c| c.cause),
        Some(Cause::FeedbackIncrease)
    );
    assert!(p(&pol, 1) > 50.0);
    // Candidate congested (50), average lower (10 once 1's 40 is stored): 40 is above the
    // average but not above the candidate, so P holds — no cut, and no pull back onto a port
    // reported congested either.
    let mut pol = policy(cfg_both(), &[1, 2, 3, 4]);
    pol.set_candidates([(1, &[2][..])]);
    pol.handle(
        Event::CongestionObserved {
            port: 2,
            qntz_fb: 50,
        },
        0,
    );
    pol.set_p_percent(1, 50.0);
    let fx = pol.handle(cnm(1, 40), 0);
    assert!(fx.changes().is_empty(), "{:?}", fx.changes());
    assert_eq!(p(&pol, 1), 50.0);
    assert_eq!(pol.counters().dead_band, 1);
    // Both low: a 40 on port 1 against max(avg 10, candidates 0) cuts by 30.
    let mut pol = policy(cfg_both(), &[1, 2, 3, 4]);
    pol.set_candidates([(1, &[2][..])]);
    pol.handle(cnm(1, 40), 0);
    assert_eq!(p(&pol, 1), 100.0 * (1.0 - GD * 30.0));
}

fn cfg_both() -> PolicyConfig {
    PolicyConfig {
        fbcomp_reference: FbReference::Both,
        ..with(Variant::FeedbackComparison, UpdatePolicy::Aimd)
    }
}

/// `fbcomp_nonminimal_factor`: the candidates' congestion counts that many times (a detour
/// crosses more congested hops), except at equal-cost decision points.
#[test]
fn nonminimal_factor_scales_the_candidates_except_at_equal_cost_points() {
    let cfg = PolicyConfig {
        fbcomp_nonminimal_factor: 2.0,
        ..cfg_both()
    };
    let observe = |pol: &mut Policy| {
        pol.handle(
            Event::CongestionObserved {
                port: 2,
                qntz_fb: 20,
            },
            0,
        );
    };
    // Candidate at 20, so the cut threshold is max(avg, 2 × 20) = 40: a 35 holds P.
    let mut pol = policy(cfg.clone(), &[1, 2, 3, 4]);
    pol.set_candidates([(1, &[2][..])]);
    observe(&mut pol);
    pol.handle(cnm(1, 35), 0);
    assert_eq!(p(&pol, 1), 100.0);
    // A 50 is cut by 50 − 40 = 10 units.
    pol.handle(cnm(1, 50), 0);
    assert_eq!(p(&pol, 1), 100.0 * (1.0 - GD * 10.0));
    // The same port as the minimal port of an equal-cost point compares 1:1: 35 − 20 = 15.
    let mut pol = policy(cfg.clone(), &[1, 2, 3, 4]);
    pol.set_candidates([(1, &[2][..])]);
    pol.mark_equal_cost([1]);
    observe(&mut pol);
    pol.handle(cnm(1, 35), 0);
    assert_eq!(p(&pol, 1), 100.0 * (1.0 - GD * 15.0));
    // set_candidates clears the mark.
    pol.set_candidates([(1, &[2][..])]);
    pol.set_p_percent(1, 100.0);
    pol.handle(cnm(1, 35), 0);
    assert_eq!(p(&pol, 1), 100.0);
    assert!(PolicyConfig {
        fbcomp_nonminimal_factor: 0.5,
        ..cfg
    }
    .validate()
    .is_err());
}

/// `fbcomp_smoothing`: the comparison reads each port's running mean of Fb, not the last value,
/// and a mean decays with the Fb age limit as its time constant.
#[test]
fn smoothing_compares_running_means() {
    let cfg = PolicyConfig {
        fbcomp_smoothing: 0.5,
        ..cfg_both()
    };
    let mut pol = policy(cfg.clone(), &[1, 2, 3, 4]);
    pol.set_candidates([(1, &[2][..])]);
    // A first 40 on port 1 against a quiet candidate: the mean is 20 against the average
    // 40 / 4 = 10, an excess of half the mean, so the cut is half the CNM's 40: 20 units.
    pol.handle(cnm(1, 40), 0);
    let p1 = 100.0 * (1.0 - GD * 20.0);
    assert_eq!(p(&pol, 1), p1);
    // A second 40: the mean is 30, two thirds of it above the reference: a cut of 80 / 3.
    pol.handle(cnm(1, 40), 0);
    let p2 = p1 * (1.0 - GD * 80.0 / 3.0);
    assert!((p(&pol, 1) - p2).abs() < 1e-9);
    // The candidate's own 40 twice: its mean 30 is the reference, and a third 40 on port 1
    // (mean 35) is cut by 40 × 5 / 35, where the last values (40 against 40) would hold P.
    for _ in 0..2 {
        pol.handle(
            Event::CongestionObserved {
                port: 2,
                qntz_fb: 40,
            },
            0,
        );
    }
    assert_eq!(pol.candidate_congestion(1, 0), Some(30.0));
    pol.handle(cnm(1, 40), 0);
    assert!((p(&pol, 1) - p2 * (1.0 - GD * 40.0 / 7.0)).abs() < 1e-9);
    // A CNM whose mean is at or below the average raises P, as without smoothing: port 3's
    // 4 gives a mean of 2 against (40 + 4) / 4 = 11.
    pol.set_p_percent(3, 50.0);
    let fx = pol.handle(cnm(3, 4), 0);
    assert_eq!(p(&pol, 3), 51.0);
    assert_eq!(
        fx.changes().first().map(|c| c.cause),
        Some(Cause::FeedbackIncrease)
    );
    // Without an age limit a mean holds; with one it decays: e^-1 of it one age later.
    let aged = PolicyConfig {
        fb_max_age_line_bytes: 100 * US_AT_10G,
        ..cfg.clone()
    };
    let mut pol = policy(aged, &[1, 2, 3, 4]);
    pol.set_candidates([(1, &[2][..])]);
    pol.handle(
        Event::CongestionObserved {
            port: 2,
            qntz_fb: 40,
        },
        0,
    );
    let c = pol.candidate_congestion(1, 100_000).unwrap();
    assert!((c - 20.0 * (-1.0f64).exp()).abs() < 1e-9, "{c}");
    for bad in [-0.1, 1.5, f64::NAN] {
        assert!(PolicyConfig {
            fbcomp_smoothing: bad,
            ..cfg.clone()
        }
        .validate()
        .is_err());
    }
}

/// `fbcomp_persistent_excess`: a CNM above its reference cuts only while the port's running
/// excess over its reference (weight 1/16, before this CNM) is positive; the first CNM, and the
/// first after the Fb age limit, cut as without it.
#[test]
fn cuts_need_a_persistent_excess() {
    let cfg = PolicyConfig {
        fbcomp_persistent_excess: true,
        fb_max_age_line_bytes: 100 * US_AT_10G,
        ..cfg_both()
    };
    let mut pol = policy(cfg, &[1, 2, 3, 4]);
    pol.set_candidates([(1, &[2][..])]);
    let observe = |pol: &mut Policy, qntz_fb: u8, at: u64| {
        pol.handle(Event::CongestionObserved { port: 2, qntz_fb }, at);
    };
    // First CNM: 40 against the average 10, a cut by 30 (mean excess 30).
    pol.handle(cnm(1, 40), 0);
    let p1 = 100.0 * (1.0 - GD * 30.0);
    assert_eq!(p(&pol, 1), p1);
    // The candidate at 60: fifteen CNMs of 40 sit in the dead band (40 between 10 and 60) and
    // pull the mean excess to -20 + 50 × (15/16)^15 < 0.
    for k in 1..=15 {
        observe(&mut pol, 60, k);
        pol.handle(cnm(1, 40), k);
    }
    assert_eq!(p(&pol, 1), p1);
    // The candidate back at 20: 40 is above it, but the mean before this CNM is negative, so P
    // holds; the CNM lifts the mean above 0, and the next one cuts by 40 - 20.
    observe(&mut pol, 20, 16);
    let held = pol.counters().dead_band;
    pol.handle(cnm(1, 40), 16);
    assert_eq!(p(&pol, 1), p1);
    assert_eq!(pol.counters().dead_band, held + 1);
    observe(&mut pol, 20, 17);
    pol.handle(cnm(1, 40), 17);
    let p2 = p1 * (1.0 - GD * 20.0);
    assert!((p(&pol, 1) - p2).abs() < 1e-9, "{}", p(&pol, 1));
    // Drive the mean negative again, then let it age out (100 µs): the next CNM above its
    // reference cuts at once.
    for k in 18..=60 {
        observe(&mut pol, 60, k);
        pol.handle(cnm(1, 40), k);
    }
    assert_eq!(p(&pol, 1), p2);
    let later = 60 + 100_001;
    observe(&mut pol, 20, later);
    pol.handle(cnm(1, 40), later);
    assert!((p(&pol, 1) - p2 * (1.0 - GD * 20.0)).abs() < 1e-9);
}

/// `byte_limit_buffer_drains` raises the byte limit of a deep-buffered port only, also across a
/// links change and a configuration change.
#[test]
fn byte_limit_follows_each_ports_buffer() {
    use crate::link::{PortLink, PortLinks};
    let cfg = PolicyConfig {
        byte_limit_buffer_drains: 2.0,
        ..PolicyConfig::published()
    };
    let mut pol = policy(cfg.clone(), &[1, 2]);
    let shallow = PortLink {
        rate_bps: 10e9,
        buffer_bytes: 4_096,
    };
    let deep = PortLink {
        rate_bps: 10e6,
        buffer_bytes: 100_000,
    };
    pol.set_links(PortLinks::new(shallow, vec![(2, deep)]), 0);
    for port in [1, 2] {
        pol.set_p_percent(port, 50.0);
        pol.handle(bytes(port, B - 1), 0);
    }
    // Port 1 keeps B = 150 000 (2 drains are 8 192); port 2 needs 200 000.
    let fx = pol.handle(bytes(1, 1), 1);
    assert_eq!(fx.changes().len(), 1);
    assert_eq!(p(&pol, 1), 51.0);
    assert!(pol.handle(bytes(2, 1), 1).is_empty());
    assert!(pol.handle(bytes(2, 200_000 - B - 1), 2).is_empty());
    pol.handle(bytes(2, 1), 3);
    assert_eq!(p(&pol, 2), 51.0);
    // Back to the octet limit alone at run time.
    pol.set_config(PolicyConfig {
        byte_limit_buffer_drains: 0.0,
        ..cfg
    })
    .unwrap();
    pol.handle(bytes(2, B), 4);
    assert_eq!(p(&pol, 2), 52.0);
}

/// A policy whose port 2 (P 50) holds B − 1 octets and has just had a CNM the dead band held.
fn held_cnm_after_b_minus_one(restarts: bool) -> Policy {
    let cfg = PolicyConfig {
        variant: Variant::FeedbackComparison,
        fbcomp_th2: 10.0,
        dead_band_restarts_counter: restarts,
        ..PolicyConfig::published()
    };
    let mut pol = policy(cfg, &[1, 2, 3, 4]);
    pol.handle(cnm(1, 20), 0); // avg 5: cut by 15
    pol.set_p_percent(2, 50.0);
    pol.handle(bytes(2, B - 1), 1);
    // avg (20 + 12) / 4 = 8: the dead band holds P.
    assert!(pol.handle(cnm(2, 12), 2).is_empty());
    assert_eq!(pol.counters().dead_band, 1);
    pol
}

/// `dead_band_restarts_counter = true` (the published rule): the held CNM restarts the counter,
/// so the octet that would complete B earns nothing.
#[test]
fn dead_band_can_restart_the_byte_counter() {
    let mut pol = held_cnm_after_b_minus_one(true);
    assert!(pol.handle(bytes(2, 1), 3).is_empty());
    assert_eq!(p(&pol, 2), 50.0);
}

/// `dead_band_restarts_counter = false`: a CNM that holds P leaves the byte counter running (an
/// increase follows when its octets complete); a CNM that cuts restarts it as ever.
#[test]
fn dead_band_can_leave_the_byte_counter_running() {
    let mut pol = held_cnm_after_b_minus_one(false);
    // The counter keeps its B − 1 octets: one more earns the increase.
    let fx = pol.handle(bytes(2, 1), 3);
    assert_eq!(
        fx.changes().first().map(|c| c.cause),
        Some(Cause::ByteCounterIncrease)
    );
    assert_eq!(p(&pol, 2), 51.0);
    // A cut still restarts it.
    pol.handle(bytes(1, B - 1), 4);
    pol.handle(cnm(1, 63), 5);
    assert!(pol.handle(bytes(1, 1), 6).is_empty());
}

/// `rise_follows_comparison`: the byte counter's octets earn no increase while the port's own
/// fresh Fb (received or observed) is above the reference a CNM would be cut against; they do
/// once a candidate is as congested, or once the port's Fb has aged; without the rule they earn
/// it at once.
#[test]
fn rise_can_follow_the_comparison() {
    let cfg = |gated| PolicyConfig {
        variant: Variant::FeedbackComparison,
        fbcomp_reference: FbReference::Both,
        fb_max_age_line_bytes: 100 * US_AT_10G,
        rise_follows_comparison: gated,
        ..PolicyConfig::published()
    };
    let obs = |port, qntz_fb| Event::CongestionObserved { port, qntz_fb };
    let start = |gated| {
        let mut pol = policy(cfg(gated), &[1, 2]);
        pol.set_candidates([(1, &[2][..])]);
        // Port 1 at 40, its candidate quiet: cut by 40 − max(avg 20, candidates 0).
        pol.handle(cnm(1, 40), 0);
        assert_eq!(p(&pol, 1), 100.0 * (1.0 - GD * 20.0));
        pol
    };
    let mut free = start(false);
    assert_eq!(
        free.handle(bytes(1, B), 1)
            .changes()
            .first()
            .map(|c| c.cause),
        Some(Cause::ByteCounterIncrease)
    );
    let mut pol = start(true);
    let p1 = p(&pol, 1);
    assert!(pol.handle(bytes(1, 2 * B), 1).is_empty(), "40 > 20: held");
    assert_eq!(pol.counters().rises_held, 2);
    assert_eq!(
        pol.counters().candidate_comparisons,
        1,
        "only the CNM's comparison counts"
    );
    // The candidate as congested as port 1: the next B earns its increase (the held octets were
    // consumed, not kept).
    pol.handle(obs(2, 40), 2);
    assert!(pol.handle(bytes(1, B - 1), 3).is_empty());
    pol.handle(bytes(1, 1), 3);
    assert_eq!(p(&pol, 1), p1 + 1.0);
    // 200 µs later every Fb so far has aged (100 µs); port 1's own CP now finds 30 there, its
    // candidate still quiet: held again, on the observed Fb alone.
    let t = 200_000;
    pol.handle(obs(1, 30), t);
    assert!(pol.handle(bytes(1, B), t).is_empty());
    assert_eq!(pol.counters().rises_held, 3);
    // Once that has aged too, nothing fresh on port 1: its octets count again.
    pol.handle(bytes(1, B), 2 * t);
    assert_eq!(p(&pol, 1), p1 + 2.0);
    assert_eq!(pol.counters().rises_held, 3);
}

/// `cut_holdoff_buffer_drains`: after a cut, CNMs within the port's hold-off (drains of its
/// buffer at its line rate) cut nothing and leave the byte counter running; the first CNM
/// after it cuts again, and so does every CNM with the hold-off off.
#[test]
fn cuts_hold_off_for_buffer_drains() {
    use crate::link::{PortLink, PortLinks};
    let cfg = |drains| PolicyConfig {
        cut_holdoff_buffer_drains: drains,
        dead_band_restarts_counter: false,
        ..PolicyConfig::published()
    };
    // 10 000 octets at 10 Mb/s drain in 8 ms; two drains hold off for 16 ms.
    let link = PortLink {
        rate_bps: 10e6,
        buffer_bytes: 10_000,
    };
    let start = |drains| {
        let mut pol = policy(cfg(drains), &[1]);
        pol.set_links(PortLinks::new(link, Vec::new()), 0);
        pol.handle(cnm(1, 64), 0);
        assert_eq!(p(&pol, 1), 100.0 * (1.0 - GD * 63.0));
        pol
    };
    let mut free = start(0.0);
    free.handle(cnm(1, 63), 1_000_000);
    assert_eq!(free.counters().decreases, 2);
    assert_eq!(free.counters().cuts_held_off, 0);

    let mut pol = start(2.0);
    let p1 = p(&pol, 1);
    assert!(pol.handle(bytes(1, B - 1), 1).is_empty());
    assert!(pol.handle(cnm(1, 63), 15_999_999).is_empty(), "held off");
    assert_eq!(pol.counters().cuts_held_off, 1);
    assert_eq!(pol.counters().decreases, 1);
    // The held CNM did not restart the counter: one more octet completes B.
    let fx = pol.handle(bytes(1, 1), 15_999_999);
    assert_eq!(
        fx.changes().first().map(|c| c.cause),
        Some(Cause::ByteCounterIncrease)
    );
    assert_eq!(p(&pol, 1), p1 + 1.0);
    // 16 ms after the first cut the next CNM cuts, and starts a new hold-off.
    let fx = pol.handle(cnm(1, 63), 16_000_000);
    assert_eq!(
        fx.changes().first().map(|c| c.cause),
        Some(Cause::CnmDecrease)
    );
    assert!(pol.handle(cnm(1, 63), 31_999_999).is_empty());
    assert_eq!(pol.counters().cuts_held_off, 2);
    assert_eq!(pol.counters().decreases, 2);
}

/// `yield_comparison`: a window in which the minimal choice delivered at least (1 + band) of its
/// weight's share holds the port's cuts; one in which it delivered at most (1 − band) withholds
/// its increases; a window in which one side carried nothing, or a ratio two windows old, gates
/// nothing; with the comparison off the same octets change nothing.
#[test]
fn yield_gates_cuts_and_rises() {
    use crate::link::{PortLink, PortLinks};
    let cfg = |on| PolicyConfig {
        yield_comparison: on,
        yield_window_line_bytes: 10_000,
        yield_band: 0.1,
        dead_band_restarts_counter: false,
        ..PolicyConfig::published()
    };
    // 10 000 octets at 10 Mb/s: an 8 ms window.
    let link = PortLink {
        rate_bps: 10e6,
        buffer_bytes: 10_000,
    };
    let share = |port, minimal_bytes, total_bytes, expected_minimal_bytes| Event::DecisionBytes {
        port,
        minimal_bytes,
        total_bytes,
        expected_minimal_bytes,
    };
    let start = |on| {
        let mut pol = policy(cfg(on), &[1]);
        pol.set_links(PortLinks::new(link, Vec::new()), 0);
        // A window: 600 of 1 000 octets minimal where the weights expected 400 (ratio 1.5).
        assert!(pol.handle(share(1, 300, 500, 200), 0).is_empty());
        assert!(pol.handle(share(1, 300, 500, 200), 8_000_000).is_empty());
        pol
    };
    let mut off = start(false);
    off.handle(cnm(1, 63), 8_000_001);
    assert_eq!(off.counters().decreases, 1);
    assert_eq!(off.counters().cuts_held_by_yield, 0);

    let mut pol = start(true);
    assert!(
        pol.handle(cnm(1, 63), 8_000_001).is_empty(),
        "1.5 ≥ 1.1: held"
    );
    assert_eq!(pol.counters().cuts_held_by_yield, 1);
    assert_eq!(pol.counters().decreases, 0);
    // The held CNM left the byte counter running; increases are not gated at 1.5.
    pol.handle(bytes(1, B), 8_000_002);
    assert_eq!(pol.counters().increases, 1);
    // The next window: 100 of 1 000 minimal where 400 were expected (0.25): cuts pass, rises
    // are withheld.
    pol.handle(share(1, 100, 1_000, 400), 16_000_000);
    pol.handle(cnm(1, 63), 16_000_001);
    let cut = p(&pol, 1);
    assert_eq!(cut, 100.0 * (1.0 - GD * 63.0));
    assert!(pol.handle(bytes(1, 2 * B), 16_000_002).is_empty());
    assert_eq!(pol.counters().rises_held_by_yield, 2);
    // Two windows later that ratio is stale: the octets earn their increase again.
    pol.handle(bytes(1, B), 32_000_001);
    assert_eq!(p(&pol, 1), cut + 1.0);
    // A window in which the candidates carried nothing gives no ratio: nothing gated.
    pol.handle(share(1, 500, 500, 450), 40_000_001);
    pol.handle(cnm(1, 63), 40_000_002);
    assert_eq!(pol.counters().decreases, 2);
    // Within the band (0.95): nothing gated either.
    pol.handle(share(1, 380, 1_000, 400), 48_000_002);
    pol.handle(cnm(1, 63), 48_000_003);
    assert_eq!(pol.counters().decreases, 3);
    pol.handle(bytes(1, B), 48_000_004);
    assert_eq!(pol.counters().rises_held_by_yield, 2);
    assert_eq!(
        (pol.counters().yield_windows, pol.counters().yield_ratios),
        (4, 3)
    );
}

/// A yield comparison setting out of range is a typed error naming the key.
#[test]
fn yield_settings_are_validated() {
    for cfg in [
        PolicyConfig {
            yield_band: 1.0,
            ..PolicyConfig::default()
        },
        PolicyConfig {
            yield_band: f64::NAN,
            ..PolicyConfig::default()
        },
        PolicyConfig {
            yield_window_line_bytes: 0,
            ..PolicyConfig::default()
        },
    ] {
        let err = cfg.validate().unwrap_err().to_string();
        assert!(err.contains("policy.yield_"), "{err}");
    }
}

/// A shell that ticks only at [`Policy::next_timer_ns`] gives every port the same idle-timer
/// increases, at the same instants, as one that ticks on a grid fine enough to hit each of them:
/// the deadline is exact, so the agent need not wake per switch every millisecond.
#[test]
fn ticking_at_the_timer_deadline_matches_a_fine_periodic_tick() {
    use crate::link::{PortLink, PortLinks};
    let cfg = PolicyConfig {
        variant: Variant::Combined,
        increase_timer_line_bytes: Some(10_000),
        ..PolicyConfig::published()
    };
    // 8 µs and 32 µs timer periods (10 Gb/s and 2.5 Gb/s); every instant below is a multiple of
    // 250 ns, so a 250 ns grid hits every deadline.
    let links = PortLinks::new(
        PortLink {
            rate_bps: 10e9,
            buffer_bytes: 1,
        },
        vec![(
            2,
            PortLink {
                rate_bps: 2.5e9,
                buffer_bytes: 1,
            },
        )],
    );
    let fresh = || {
        let mut p = policy(cfg.clone(), &[1, 2, 3]);
        p.set_links(links.clone(), 0);
        p
    };
    assert_eq!(
        fresh().next_timer_ns(),
        Some(0),
        "an unstarted timer is due at once"
    );
    let mut without = policy(PolicyConfig::published(), &[1, 2, 3]);
    assert_eq!(without.next_timer_ns(), None);
    assert!(without.handle(Event::Tick, 5).is_empty());
    // Events at pseudo-random multiples of 250 ns: CNMs and sent octets (both restart timers).
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rnd = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut t = 0;
    let mut events = Vec::new();
    for _ in 0..400 {
        t += 250 * (1 + rnd(120));
        let port = 1 + u32::try_from(rnd(3)).unwrap();
        let ev = if rnd(2) == 0 {
            cnm(port, u8::try_from(rnd(64)).unwrap())
        } else {
            bytes(port, rnd(40_000))
        };
        events.push((t, ev));
    }
    let end = t + 100_000;
    let changes = |p: &mut Policy, ev: Event, at: u64, log: &mut Vec<(u64, PChange)>| {
        for c in p.handle(ev, at).changes() {
            log.push((at, *c));
        }
    };
    // Fine periodic ticks (a tick before an event at the same instant).
    let (mut grid, mut grid_log) = (fresh(), Vec::new());
    let mut evs = events.iter().peekable();
    for now in (0..=end).step_by(250) {
        changes(&mut grid, Event::Tick, now, &mut grid_log);
        while let Some((_, ev)) = evs.next_if(|(at, _)| *at == now) {
            changes(&mut grid, *ev, now, &mut grid_log);
        }
    }
    // Ticks only at the deadline.
    let (mut exact, mut exact_log) = (fresh(), Vec::new());
    let mut ticks = 0;
    let mut evs = events.iter().peekable();
    loop {
        let next_event = evs.peek().map_or(end, |(at, _)| *at);
        match exact.next_timer_ns() {
            Some(d) if d <= next_event => {
                changes(&mut exact, Event::Tick, d, &mut exact_log);
                ticks += 1;
            }
            _ => match evs.next() {
                Some((at, ev)) => changes(&mut exact, *ev, *at, &mut exact_log),
                None => break,
            },
        }
    }
    let timer_rises = |log: &[(u64, PChange)]| {
        log.iter()
            .filter(|(_, c)| c.cause == Cause::TimerIncrease)
            .count()
    };
    assert!(timer_rises(&grid_log) > 10, "the timer fired: {grid_log:?}");
    assert_eq!(exact_log, grid_log);
    assert!(
        ticks < end / 250 / 10,
        "{ticks} ticks against {} on the grid",
        end / 250
    );
}
