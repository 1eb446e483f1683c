//! The core without a session: learned plans, CNMs, congestion samples and writes.

use super::*;
use crate::plan::PlanConventions;
use fabricflow_proto::openflow::action::Action;
use fabricflow_proto::openflow::group::{Bucket, GroupType};
use fabricflow_proto::openflow::multipart::{FlowStats, GroupDesc};
use fabricflow_proto::openflow::oxm::{Match, OxmField};

const MS: u64 = 1_000_000;

fn out(port: u32) -> Vec<Action> {
    vec![Action::Output { port, max_len: 0 }]
}

fn mac(s: &str) -> MacAddr {
    s.parse().unwrap()
}

fn flow(table: u8, dst: &str, mask: Option<&str>, actions: Vec<Action>) -> FlowStats {
    let m = Match::new().with(OxmField::EthDst {
        value: mac(dst),
        mask: mask.map(mac),
    });
    crate::plan::tests::flow(table, PlanConventions::default().cookie, m, actions)
}

/// A switch of group 1 with host 02:00:00:01:00:01 on port 1, fabric ports 3 and 4; group 7 is
/// reached minimally by port 3 (decision point 1003, candidate 4).
fn plan(weights: [u16; 3]) -> LearnedPlan {
    let groups = [GroupDesc {
        group_type: GroupType::Select,
        group_id: 1003,
        buckets: vec![
            Bucket::new(weights[0], out(3)),
            Bucket::new(weights[1], out(4)),
            Bucket::new(weights[2], out(3)),
        ],
    }];
    let flows = [
        flow(
            1,
            "02:00:00:07:00:00",
            Some("ff:ff:ff:ff:00:00"),
            vec![Action::Group(1003)],
        ),
        flow(1, "02:00:00:01:00:01", None, out(1)),
        flow(2, "02:00:00:07:00:00", Some("ff:ff:ff:ff:00:00"), out(4)),
    ];
    LearnedPlan::learn(&PlanConventions::default(), &groups, &flows)
}

fn core(variant: crate::policy::Variant, interval_us: u64) -> SwitchCore {
    let mut policy = PolicyConfig::published();
    policy.variant = variant;
    let weights = WeightsConfig {
        min_update_interval_line_bytes: interval_us * 1_250,
        min_update_interval_buffer_drains: 0.0,
        ..WeightsConfig::default()
    };
    SwitchCore::new(policy, weights).unwrap()
}

fn to7() -> MacAddr {
    mac("02:00:00:07:00:01")
}

fn writes(c: &mut SwitchCore) -> Vec<GroupWrite> {
    std::iter::from_fn(|| c.poll_write()).collect()
}

#[test]
fn only_host_frames_that_are_not_cnms_are_culprits() {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[2, 0, 0, 7, 0, 1]);
    f[6..12].copy_from_slice(&[2, 0, 0, 1, 0, 1]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    assert_eq!(
        Culprit::of_frame(&f),
        Some(Culprit {
            src: MacAddr([2, 0, 0, 1, 0, 1]),
            dst: MacAddr([2, 0, 0, 7, 0, 1])
        })
    );
    f[12..14].copy_from_slice(&[0x22, 0xe7]);
    assert_eq!(Culprit::of_frame(&f), None);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[6..12].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 1]);
    assert_eq!(Culprit::of_frame(&f), None);
    assert_eq!(Culprit::of_frame(&f[..10]), None);
}

#[test]
fn a_cnm_on_the_minimal_port_yields_one_write_with_the_cut_split() {
    let mut c = core(crate::policy::Variant::Base, 0);
    assert_eq!(c.learn(plan([255, 0, 1]), 0, 0), Learned::Changed);
    assert!(writes(&mut c).is_empty(), "installed weights match P = 100");
    c.on_cnm(3, to7(), 64, MS);
    let w = writes(&mut c);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].group_id, 1003);
    // P = 100·(1 − 63/128) = 50.78 %: bucket 0 gets 129 of 255 quanta.
    assert_eq!(w[0].weights, vec![129, 126, 1]);
    assert_eq!(c.weights().installed(1003), Some(&[129, 126, 1][..]));
    assert_eq!(c.counters().cnm_received, 1);
    assert_eq!(c.counters().writes, 1);
}

#[test]
fn a_cnm_is_charged_to_the_decision_point_of_its_culprit_not_the_port_it_came_by() {
    let mut c = core(crate::policy::Variant::Base, 0);
    c.learn(plan([255, 0, 1]), 0, 0);
    // Diverted traffic to group 7 left by candidate port 4; its CNM comes back on port 4.
    c.on_cnm(4, to7(), 64, MS);
    assert!(c.policy().p_percent(3).unwrap() < 100.0);
    assert_eq!(c.policy().p_percent(4), Some(100.0));
    // A culprit bound for this switch's own group has no decision point: the arrival port.
    c.on_cnm(4, mac("02:00:00:01:00:07"), 64, 2 * MS);
    assert!(c.policy().p_percent(4).unwrap() < 100.0);
}

#[test]
fn a_read_older_than_a_write_does_not_undo_it() {
    let mut c = core(crate::policy::Variant::Base, 0);
    c.learn(plan([255, 0, 1]), 0, 0);
    let before = c.write_seq();
    c.on_cnm(3, to7(), 64, MS);
    let written = writes(&mut c).remove(0).weights;
    // A reply to a read sent before the write still shows the old weights.
    assert_eq!(
        c.learn(plan([255, 0, 1]), before, 2 * MS),
        Learned::Unchanged
    );
    assert_eq!(c.weights().installed(1003), Some(written.as_slice()));
    assert!(writes(&mut c).is_empty());
    // A read sent after it that shows other weights (someone else wrote) is believed, and the
    // core writes its own split back.
    c.learn(plan([200, 55, 1]), c.write_seq(), 3 * MS);
    assert_eq!(writes(&mut c).remove(0).weights, written);
}

/// [`plan`] with its decision point in the slotted layout, its slots as `weights` give them
/// out from the controller's initial layout.
fn slotted_plan(weights: [u16; 3]) -> LearnedPlan {
    let mut p = plan([255, 0, 1]);
    let slotted = |w: [u16; 3]| {
        let logical = plan([255, 0, 1]).groups[&1003].buckets.clone();
        let mut s = fabricflow_proto::select_slots::SlotGroup::from_logical(&logical).unwrap();
        s.set_weights(&w).unwrap();
        s.buckets()
    };
    let groups = [GroupDesc {
        group_type: GroupType::Select,
        group_id: 1003,
        buckets: slotted(weights),
    }];
    let learned = LearnedPlan::learn(&PlanConventions::default(), &groups, &[]);
    p.groups = learned.groups;
    p
}

/// The switch holds the slots the core wrote, so its next write moves only what it must: a read
/// sent before a write, which still shows the slots before it, does not replace them.
#[test]
fn a_read_older_than_a_write_keeps_the_slots_written() {
    let mut c = core(crate::policy::Variant::Base, 0);
    c.learn(slotted_plan([255, 0, 1]), 0, 0);
    let before = c.write_seq();
    c.on_cnm(3, to7(), 64, MS);
    let w = writes(&mut c).remove(0);
    let written = c.write_buckets(&w).unwrap().unwrap();
    assert_eq!(written.len(), 2 + fabricflow_proto::select_slots::SLOTS);
    assert_eq!(
        written
            .iter()
            .filter(|b| b.output_port() == Some(4))
            .count(),
        usize::from(w.weights[1]) + 1,
        "the candidate's slots, and its catalog bucket"
    );
    c.learn(slotted_plan([255, 0, 1]), before, 2 * MS);
    let held = c.plan().unwrap().groups[&1003].slots.clone().unwrap();
    assert_eq!(held.buckets(), written);
    // A later read that shows the written slots changes nothing either, and keeps the record
    // of which slots moved when (the next cut detours others).
    c.learn(
        slotted_plan([w.weights[0], w.weights[1], 1]),
        c.write_seq(),
        3 * MS,
    );
    assert!(writes(&mut c).is_empty());
    assert_eq!(c.plan().unwrap().groups[&1003].slots.as_ref(), Some(&held));
}

#[test]
fn a_restarted_core_continues_from_the_installed_split() {
    let mut c = core(crate::policy::Variant::Base, 0);
    c.learn(plan([128, 127, 1]), 0, 0);
    let p = c.policy().p_percent(3).unwrap();
    assert!((p - 50.2).abs() < 0.5, "P from the installed split: {p}");
    assert!(writes(&mut c).is_empty());
}

#[test]
fn writes_wait_for_the_minimum_interval_and_leave_on_the_timer() {
    let mut c = core(crate::policy::Variant::Base, 10_000);
    c.learn(plan([255, 0, 1]), 0, 0);
    c.on_cnm(3, to7(), 10, MS);
    assert_eq!(writes(&mut c).len(), 1, "the first write is never delayed");
    c.on_cnm(3, to7(), 10, 2 * MS);
    assert!(writes(&mut c).is_empty());
    // The interval ends at 11 ms; the write grid (a quarter of it) rounds that up to 12.5 ms.
    assert_eq!(c.next_deadline_ns(), Some(12_500_000));
    c.on_timer(11 * MS);
    assert!(writes(&mut c).is_empty());
    c.on_timer(12_500_000);
    assert_eq!(writes(&mut c).len(), 1);
    assert_eq!(c.next_deadline_ns(), None);
}

fn timed(c: &mut SwitchCore) -> Vec<TimedWrite> {
    std::iter::from_fn(|| c.poll_timed_write()).collect()
}

#[test]
fn a_write_carries_the_arrival_of_the_earliest_cnm_it_answers() {
    let mut c = core(crate::policy::Variant::Base, 10_000);
    c.learn(plan([255, 0, 1]), 0, 0);
    c.on_cnm(3, to7(), 10, MS);
    let w = timed(&mut c);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].cnm_ns, Some(MS), "an immediate write answers its CNM");
    // Two CNMs deferred by the interval: the write the timer releases answers the first.
    c.on_cnm(3, to7(), 10, 2 * MS);
    c.on_cnm(3, to7(), 10, 3 * MS);
    assert!(timed(&mut c).is_empty());
    c.on_timer(12_500_000);
    let w = timed(&mut c);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].cnm_ns, Some(2 * MS), "the deferral counts");
    // An increase on sent octets answers no CNM.
    c.on_bytes(3, 100_000_000, 30 * MS);
    let w = timed(&mut c);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].cnm_ns, None);
    assert!(c.cnm_unwritten.is_empty());
}

#[test]
fn a_cnm_that_moves_no_weight_by_a_quantum_leaves_nothing_to_time() {
    let weights = WeightsConfig {
        min_update_interval_line_bytes: 0,
        min_update_interval_buffer_drains: 0.0,
        min_change_quanta: 5,
        ..WeightsConfig::default()
    };
    let mut c = SwitchCore::new(PolicyConfig::published(), weights).unwrap();
    c.learn(plan([255, 0, 1]), 0, 0);
    // QntzFb 1: P 100 → 99.2, bucket 0 255 → 253, under 5 quanta.
    c.on_cnm(3, to7(), 1, MS);
    assert!(c.policy().p_percent(3).unwrap() < 100.0);
    assert!(timed(&mut c).is_empty());
    assert!(c.cnm_unwritten.is_empty());
}

#[test]
fn a_congestion_sample_charges_source_processing_and_routes_the_cnm() {
    let mut c = core(crate::policy::Variant::SourceProcessing, 0);
    c.learn(plan([255, 0, 1]), 0, 0);
    let remote = Culprit {
        src: mac("02:00:00:02:00:01"),
        dst: mac("02:00:00:07:00:01"),
    };
    let sample = |culprit| CongestionSample {
        port: Some(4),
        qntz_fb: 40,
        culprit,
    };
    assert_eq!(c.on_congestion(&sample(remote), MS), CnmRoute::Fabric);
    assert!(
        c.policy().p_percent(3).unwrap() < 100.0,
        "port towards group 7 cut"
    );
    assert_eq!(c.policy().counters().congestion_observed, 1);
    assert_eq!(c.counters().cnm_generated_charged, 1);
    // A culprit bound for this switch's own group has no decision point: nothing charged.
    let same_group = Culprit {
        dst: mac("02:00:00:01:00:09"),
        ..remote
    };
    assert_eq!(c.on_congestion(&sample(same_group), MS), CnmRoute::Fabric);
    assert_eq!(c.counters().cnm_generated_charged, 1);
    // The culprit is a host of this switch: charged here, not sent.
    let own = Culprit {
        src: mac("02:00:00:01:00:01"),
        ..remote
    };
    assert_eq!(c.on_congestion(&sample(own), MS), CnmRoute::OwnHost);
    assert_eq!(c.counters().cnm_to_own_host, 1);
    assert_eq!(c.counters().cnm_generated, 3);
    assert_eq!(c.counters().cnm_generated_charged, 2);
}

#[test]
fn a_sample_without_an_outgoing_port_stores_no_feedback_but_still_charges_the_source() {
    let mut c = core(crate::policy::Variant::Combined, 0);
    c.learn(plan([255, 0, 1]), 0, 0);
    let sample = CongestionSample {
        port: None,
        qntz_fb: 40,
        culprit: Culprit {
            src: mac("02:00:00:02:00:01"),
            dst: mac("02:00:00:07:00:01"),
        },
    };
    assert_eq!(c.on_congestion(&sample, MS), CnmRoute::Fabric);
    assert_eq!(c.policy().counters().congestion_observed, 0);
    assert_eq!(c.counters().cnm_generated_charged, 1);
    assert_eq!(c.policy().counters().unknown_port, 0);
}

#[test]
fn select_follows_the_installed_weights_bucket_by_bucket() {
    let mut c = core(crate::policy::Variant::Base, 0);
    c.learn(plan([100, 155, 1]), 0, 0);
    let to7 = mac("02:00:00:07:00:05");
    assert_eq!(c.select(to7, 0), Some(3));
    assert_eq!(c.select(to7, 99), Some(3));
    assert_eq!(c.select(to7, 100), Some(4));
    assert_eq!(c.select(to7, 254), Some(4));
    assert_eq!(c.select(to7, 255), Some(3), "padding bucket");
    let shares = (0..=255u8).filter(|&s| c.select(to7, s) == Some(4)).count();
    assert_eq!(shares, 155);
    assert_eq!(c.select(mac("02:00:00:01:00:01"), 0), None, "own group");
    assert_eq!(c.select(mac("52:54:00:00:00:01"), 0), None, "not a host");
}

#[test]
fn a_switch_without_the_plan_keeps_p_and_the_weights() {
    let mut c = core(crate::policy::Variant::Base, 0);
    c.learn(plan([255, 0, 1]), 0, 0);
    c.on_cnm(3, to7(), 64, MS);
    writes(&mut c);
    let p = c.policy().p_percent(3);
    assert_eq!(
        c.learn(LearnedPlan::default(), c.write_seq(), 2 * MS),
        Learned::NotInstalled
    );
    assert_eq!(c.policy().p_percent(3), p);
    assert!(c.weights().installed(1003).is_some());
}

/// A fat-tree's top switch: transit flows down to groups 0 and 1 on ports 1 and 2, no group.
fn top_plan() -> LearnedPlan {
    let flows = [
        flow(2, "02:00:00:00:00:00", Some("ff:ff:ff:ff:00:00"), out(1)),
        flow(2, "02:00:00:01:00:00", Some("ff:ff:ff:ff:00:00"), out(2)),
    ];
    LearnedPlan::learn(&PlanConventions::default(), &[], &flows)
}

#[test]
fn an_installed_plan_without_decision_points_is_learned_and_writes_nothing() {
    let mut c = core(crate::policy::Variant::SourceProcessing, 0);
    let top = top_plan();
    assert!(top.is_installed() && top.is_empty());
    assert_eq!(c.learn(top_plan(), 0, 0), Learned::Changed);
    assert_eq!(c.learn(top_plan(), 0, MS), Learned::Unchanged);
    assert_eq!(c.counters().plan_changes, 1);
    // Its fabric ports are the policy's, so its congestion point has feedback to keep.
    assert_eq!(c.policy().p_percent(1), Some(100.0));
    assert_eq!(c.policy().p_percent(2), Some(100.0));
    let sample = CongestionSample {
        port: Some(1),
        qntz_fb: 63,
        culprit: Culprit {
            src: mac("02:00:00:01:00:01"),
            dst: mac("02:00:00:00:00:01"),
        },
    };
    assert_eq!(c.on_congestion(&sample, 2 * MS), CnmRoute::Fabric);
    assert_eq!(c.minimal_port_towards(sample.culprit.dst), None);
    c.on_cnm(2, sample.culprit.src, 63, 3 * MS);
    c.on_tick(4 * MS);
    assert!(
        writes(&mut c).is_empty(),
        "no decision point, nothing to write"
    );
    // A plan that loses its last decision point forgets it.
    assert_eq!(c.learn(plan([255, 0, 1]), 0, 5 * MS), Learned::Changed);
    assert!(c.weights().installed(1003).is_some());
    assert_eq!(c.learn(top_plan(), 0, 6 * MS), Learned::Changed);
    assert!(c.weights().installed(1003).is_none());
}

/// [`plan`] with the controller's freeze marker.
fn frozen_plan(weights: [u16; 3]) -> LearnedPlan {
    let mut p = plan(weights);
    p.frozen = true;
    p
}

#[test]
fn a_frozen_core_writes_nothing_and_keeps_p_until_the_marker_is_gone() {
    let mut c = core(crate::policy::Variant::SourceProcessing, 10_000);
    c.learn(plan([255, 0, 1]), 0, 0);
    c.on_cnm(3, to7(), 64, MS);
    c.on_cnm(3, to7(), 64, 2 * MS);
    assert_eq!(writes(&mut c).len(), 1, "one write, one pending");
    assert!(c.next_deadline_ns().is_some());
    let p = c.policy().p_percent(3);
    let installed = c.weights().installed(1003).map(<[u16]>::to_vec);

    assert_eq!(
        c.learn(frozen_plan([129, 126, 1]), c.write_seq(), 3 * MS),
        Learned::Unchanged,
        "the marker is not structure"
    );
    assert!(c.is_frozen());
    assert_eq!(c.next_deadline_ns(), None, "the pending write is held");
    c.on_cnm(3, to7(), 64, 20 * MS);
    c.on_bytes(3, 10_000_000, 21 * MS);
    let sample = CongestionSample {
        port: Some(4),
        qntz_fb: 63,
        culprit: Culprit {
            src: mac("02:00:00:02:00:01"),
            dst: to7(),
        },
    };
    assert_eq!(c.on_congestion(&sample, 22 * MS), CnmRoute::Fabric);
    c.on_tick(30 * MS);
    assert!(writes(&mut c).is_empty(), "frozen: no weight write");
    assert_eq!(c.policy().p_percent(3), p, "frozen: P stands still");
    // CNM, bytes, the congestion sample (observed + source charge), tick.
    assert_eq!(c.counters().frozen_events_ignored, 5);
    assert_eq!(c.counters().cnm_generated, 1, "the CP still signals");
    // Someone else's weights found while frozen are adopted, not overwritten.
    c.learn(frozen_plan([200, 55, 1]), c.write_seq(), 40 * MS);
    assert!(writes(&mut c).is_empty());
    assert_eq!(c.weights().installed(1003), Some(&[200, 55, 1][..]));
    assert_ne!(c.weights().installed(1003).map(<[u16]>::to_vec), installed);
    // A wiped switch says nothing about the freeze.
    c.learn(LearnedPlan::default(), c.write_seq(), 50 * MS);
    assert!(c.is_frozen());

    // Thawed: the policy's P is written back, and CNMs act again.
    c.learn(plan([200, 55, 1]), c.write_seq(), 60 * MS);
    assert!(!c.is_frozen());
    let w = writes(&mut c);
    assert_eq!(w.len(), 1, "P written back on thaw: {w:?}");
    assert_ne!(w[0].weights, vec![200, 55, 1]);
    c.on_cnm(3, to7(), 64, 100 * MS);
    assert!(c.policy().p_percent(3) < p, "CNMs cut P again");
}

/// `policy.kind = "static"` (the InfiniBand CC baseline): every congestion sample's CNM goes
/// into the fabric, the own host's too, and neither samples, received CNMs, sent octets nor
/// ticks move P or write a weight.
#[test]
fn static_kind_routes_every_cnm_to_the_host_and_never_writes() {
    let mut policy = PolicyConfig::published();
    policy.kind = PolicyKind::Static;
    policy.variant = crate::policy::Variant::Combined;
    let mut c = SwitchCore::new(policy, WeightsConfig::default()).unwrap();
    c.learn(plan([255, 0, 1]), 0, 0);
    while c.poll_write().is_some() {}
    let remote = Culprit {
        src: mac("02:00:00:02:00:01"),
        dst: mac("02:00:00:07:00:01"),
    };
    let own = Culprit {
        src: mac("02:00:00:01:00:01"),
        ..remote
    };
    for (i, culprit) in [remote, own].into_iter().enumerate() {
        let s = CongestionSample {
            port: Some(3),
            qntz_fb: 63,
            culprit,
        };
        let at = (i as u64 + 1) * MS;
        assert_eq!(c.on_congestion(&s, at), CnmRoute::Fabric);
        c.on_cnm(3, to7(), 63, at);
        c.on_bytes(3, 1_000_000, at);
        c.on_tick(at + MS);
    }
    assert_eq!(c.policy().p_percent(3), Some(100.0));
    assert_eq!(c.policy().counters().congestion_observed, 0);
    assert_eq!(c.counters().cnm_generated, 2);
    assert_eq!(c.counters().cnm_to_own_host, 1);
    assert_eq!(c.counters().cnm_generated_charged, 0);
    assert_eq!(c.counters().cnm_received, 2);
    assert_eq!(c.poll_write(), None);
}

fn received(port: PortNo, src: &str, dst: &str, relays: u8) -> ReceivedCnm {
    ReceivedCnm {
        port,
        culprit: Culprit {
            src: mac(src),
            dst: mac(dst),
        },
        qntz_fb: 63,
        relays,
    }
}

#[test]
fn a_received_cnm_with_a_decision_point_for_its_destination_is_charged_here_whoever_sent_it() {
    // Dragonfly and 2-level fat-tree: the switch a CNM reaches has the decision point for the
    // culprit's destination, own host or not, relayed or not: charged to that decision point,
    // exactly as `on_cnm` (the same write as in
    // a_cnm_on_the_minimal_port_yields_one_write_with_the_cut_split).
    for (src, relays) in [
        ("02:00:00:01:00:01", 0),
        ("02:00:00:02:00:01", 0),
        ("02:00:00:02:00:01", MAX_CNM_RELAYS),
    ] {
        let mut c = core(crate::policy::Variant::Base, 0);
        c.learn(plan([255, 0, 1]), 0, 0);
        let cnm = received(4, src, "02:00:00:07:00:01", relays);
        assert_eq!(c.on_received_cnm(&cnm, MS), CnmFate::Charged);
        assert_eq!(c.policy().p_percent(4), Some(100.0));
        let w = writes(&mut c);
        assert_eq!(w.len(), 1);
        assert_eq!(
            (w[0].group_id, w[0].weights.clone()),
            (1003, vec![129, 126, 1])
        );
        assert_eq!(c.counters().cnm_received, 1);
        assert_eq!(c.counters().cnm_relayed, 0);
    }
}

#[test]
fn a_received_cnm_for_an_own_host_without_a_decision_point_is_charged_to_its_arrival_port() {
    // The culprit went minimally from here (its destination is in this switch's group): the
    // source switch, nothing further to send it to; charged as `on_cnm` always did.
    let mut c = core(crate::policy::Variant::Base, 0);
    c.learn(plan([255, 0, 1]), 0, 0);
    let cnm = received(4, "02:00:00:01:00:01", "02:00:00:01:00:09", 0);
    assert_eq!(c.on_received_cnm(&cnm, MS), CnmFate::Charged);
    assert!(c.policy().p_percent(4).unwrap() < 100.0);
    assert_eq!(c.policy().p_percent(3), Some(100.0));
    assert_eq!(c.counters().cnm_received, 1);
    assert_eq!(c.counters().cnm_relayed, 0);
}

#[test]
fn a_received_cnm_on_a_switch_with_decision_points_is_charged_there_even_without_one_for_it() {
    // A Dragonfly switch of the culprit's destination group on the CNM's way back: no decision
    // point for its own group, not the culprit's switch; charged to the arrival port as
    // `on_cnm` always did (Dragonfly behaviour unchanged).
    let mut c = core(crate::policy::Variant::Base, 0);
    c.learn(plan([255, 0, 1]), 0, 0);
    let cnm = received(4, "02:00:00:02:00:01", "02:00:00:01:00:09", 0);
    assert_eq!(c.on_received_cnm(&cnm, MS), CnmFate::Charged);
    assert!(c.policy().p_percent(4).unwrap() < 100.0);
    assert_eq!(c.counters().cnm_relayed, 0);
}

#[test]
fn at_the_culprits_switch_only_a_switch_with_decision_points_relays_other_hosts_cnms() {
    // `cnm_at_culprit_switch`: the CNM of another switch's host is relayed on even where this
    // switch has the decision point for its destination; its own host's is charged there.
    let policy = PolicyConfig {
        cnm_at_culprit_switch: true,
        ..PolicyConfig::published()
    };
    let mut c = SwitchCore::new(policy, WeightsConfig::default()).unwrap();
    c.learn(plan([255, 0, 1]), 0, 0);
    let other = received(4, "02:00:00:02:00:01", "02:00:00:07:00:01", 2);
    assert_eq!(c.on_received_cnm(&other, MS), CnmFate::Relay { relays: 3 });
    assert!(writes(&mut c).is_empty());
    assert_eq!(c.counters().cnm_relayed, 1);
    let own = received(4, "02:00:00:01:00:01", "02:00:00:07:00:01", 2);
    assert_eq!(c.on_received_cnm(&own, 2 * MS), CnmFate::Charged);
    assert_eq!(writes(&mut c).len(), 1);
    assert_eq!(c.counters().cnm_received, 1);
}

#[test]
fn a_received_cnm_on_a_switch_without_decision_points_is_relayed_with_its_count_one_higher() {
    // A fat-tree's top or middle switch: whatever the culprit, relayed, P and weights untouched.
    for dst in ["02:00:00:00:00:01", "02:00:00:07:00:01"] {
        let mut c = core(crate::policy::Variant::Combined, 0);
        c.learn(top_plan(), 0, 0);
        let ps: Vec<_> = c
            .policy()
            .ports()
            .iter()
            .map(|&q| c.policy().p_percent(q))
            .collect();
        for (i, relays) in [0u8, 1, MAX_CNM_RELAYS - 1].into_iter().enumerate() {
            let cnm = received(2, "02:00:00:02:00:01", dst, relays);
            assert_eq!(
                c.on_received_cnm(&cnm, (i as u64 + 1) * MS),
                CnmFate::Relay { relays: relays + 1 }
            );
        }
        c.on_tick(10 * MS);
        let after: Vec<_> = c
            .policy()
            .ports()
            .iter()
            .map(|&q| c.policy().p_percent(q))
            .collect();
        assert_eq!(ps, after, "a relayed CNM charges no port");
        assert!(writes(&mut c).is_empty());
        assert_eq!(c.policy().counters().cnm_received, 0);
        assert_eq!(c.counters().cnm_received, 0);
        assert_eq!(c.counters().cnm_relayed, 3);
    }
}

#[test]
fn a_switch_without_a_plan_relays() {
    // No plan learned yet (the session drops such CNMs before the core sees them): nothing
    // here to charge.
    let mut c = core(crate::policy::Variant::Base, 0);
    let cnm = received(2, "02:00:00:02:00:01", "02:00:00:07:00:01", 0);
    assert_eq!(c.on_received_cnm(&cnm, MS), CnmFate::Relay { relays: 1 });
}

#[test]
fn a_cnm_that_spent_its_relay_budget_is_dropped_never_relayed_again() {
    let mut c = core(crate::policy::Variant::Base, 0);
    c.learn(top_plan(), 0, 0);
    for relays in [MAX_CNM_RELAYS, MAX_CNM_RELAYS + 1, 63] {
        let cnm = received(1, "02:00:00:01:00:01", "02:00:00:00:00:01", relays);
        assert_eq!(c.on_received_cnm(&cnm, MS), CnmFate::RelayBudgetSpent);
    }
    assert_eq!(c.counters().cnm_relay_budget_spent, 3);
    assert_eq!(c.counters().cnm_relayed, 0);
    assert_eq!(c.counters().cnm_received, 0);
}

#[test]
fn a_frozen_transit_switch_still_relays() {
    // The freeze stops this switch's weights; a CNM that is not this switch's to charge is
    // another switch's business and goes on.
    let mut c = core(crate::policy::Variant::Base, 0);
    let mut top = top_plan();
    top.frozen = true;
    c.learn(top, 0, 0);
    assert!(c.is_frozen());
    let cnm = received(1, "02:00:00:01:00:01", "02:00:00:00:00:01", 0);
    assert_eq!(c.on_received_cnm(&cnm, MS), CnmFate::Relay { relays: 1 });
}

#[test]
fn relaying_never_loops_a_cnm_forever() {
    // Whatever a (broken) fabric does with relayed CNMs, one CNM passing any number of
    // transit switches, or coming back to the same one, is relayed at most MAX_CNM_RELAYS
    // times in all.
    let mut cores: Vec<SwitchCore> = (0..3)
        .map(|_| {
            let mut c = core(crate::policy::Variant::Base, 0);
            c.learn(top_plan(), 0, 0);
            c
        })
        .collect();
    let mut cnm = received(1, "02:00:00:01:00:01", "02:00:00:00:00:01", 0);
    let mut hops = 0u32;
    loop {
        let c = &mut cores[hops as usize % 3];
        hops += 1;
        match c.on_received_cnm(&cnm, u64::from(hops) * MS) {
            CnmFate::Relay { relays } => cnm.relays = relays,
            CnmFate::RelayBudgetSpent => break,
            CnmFate::Charged => panic!("charged on a switch without its source or decision point"),
        }
        assert!(
            hops <= u32::from(MAX_CNM_RELAYS),
            "relayed more than the budget"
        );
    }
    assert_eq!(hops, u32::from(MAX_CNM_RELAYS) + 1);
    let relayed: u64 = cores.iter().map(|c| c.counters().cnm_relayed).sum();
    assert_eq!(relayed, u64::from(MAX_CNM_RELAYS));
}

/// A fat-tree leaf: host on port 1, up ports 3 and 4 both minimal towards pod 7; the decision
/// point of port 3 is equal-cost (upper half of the group range) and so is port 4's (pod 8).
fn leaf(weights3: [u16; 3], weights4: [u16; 3]) -> LearnedPlan {
    let base = PlanConventions::default().group_id_base + 32_768;
    let group = |m: u32, c: u32, w: [u16; 3]| GroupDesc {
        group_type: GroupType::Select,
        group_id: base + m,
        buckets: vec![
            Bucket::new(w[0], out(m)),
            Bucket::new(w[1], out(c)),
            Bucket::new(w[2], out(m)),
        ],
    };
    let groups = [group(3, 4, weights3), group(4, 3, weights4)];
    let flows = [
        flow(
            1,
            "02:00:00:07:00:00",
            Some("ff:ff:ff:ff:00:00"),
            vec![Action::Group(base + 3)],
        ),
        flow(
            1,
            "02:00:00:08:00:00",
            Some("ff:ff:ff:ff:00:00"),
            vec![Action::Group(base + 4)],
        ),
        flow(1, "02:00:00:01:00:01", None, out(1)),
    ];
    LearnedPlan::learn(&PlanConventions::default(), &groups, &flows)
}

#[test]
fn equal_cost_groups_charge_the_arrival_port_and_move_traffic_off_it_in_every_group() {
    let mut c = core(crate::policy::Variant::Base, 0);
    let base = PlanConventions::default().group_id_base + 32_768;
    assert_eq!(
        c.learn(leaf([128, 127, 1], [128, 127, 1]), 0, 0),
        Learned::Changed
    );
    assert_eq!(
        c.policy().p_percent(3),
        Some(100.0),
        "an even split is P = 100"
    );
    assert!(writes(&mut c).is_empty());
    // A culprit to pod 7 hashed onto up port 4: its CNM comes back on 4 and cuts P(4), which
    // moves traffic off 4 in both groups, not off port 3 (D-mod-k's choice, not congested).
    c.on_cnm(4, to7(), 64, MS);
    assert_eq!(c.policy().p_percent(3), Some(100.0));
    let p4 = c.policy().p_percent(4).unwrap();
    assert!(p4 < 60.0, "{p4}");
    let mut w = writes(&mut c);
    w.sort_by_key(|x| x.group_id);
    assert_eq!(w.len(), 2, "{w:?}");
    assert_eq!(w[0].group_id, base + 3);
    assert!(w[0].weights[0] > w[0].weights[1], "{w:?}");
    assert_eq!(w[1].group_id, base + 4);
    assert!(w[1].weights[0] < w[1].weights[1], "{w:?}");
    // A restart continues from the installed splits.
    let mut d = core(crate::policy::Variant::Base, 0);
    d.learn(
        leaf(
            w[0].weights.clone().try_into().unwrap(),
            w[1].weights.clone().try_into().unwrap(),
        ),
        0,
        0,
    );
    let q4 = d.policy().p_percent(4).unwrap();
    assert!((q4 - p4).abs() < 1.0, "{q4} vs {p4}");
    assert_eq!(d.policy().p_percent(3), Some(100.0));
}

/// Every bucket of an equal-cost decision point is compared with the others, not only bucket
/// 0's port: a leaf whose only group has its minimal bucket on port 3 still gives port 4 the
/// candidate 3 (and marks both equal-cost), so a CNM on 4 is weighed against 3's congestion.
#[test]
fn every_bucket_of_an_equal_cost_decision_point_has_the_others_as_candidates() {
    let mut c = core(crate::policy::Variant::Base, 0);
    let base = PlanConventions::default().group_id_base + 32_768;
    let groups = [GroupDesc {
        group_type: GroupType::Select,
        group_id: base + 3,
        buckets: vec![
            Bucket::new(128, out(3)),
            Bucket::new(127, out(4)),
            Bucket::new(1, out(3)),
        ],
    }];
    let flows = [flow(
        1,
        "02:00:00:07:00:00",
        Some("ff:ff:ff:ff:00:00"),
        vec![Action::Group(base + 3)],
    )];
    let plan = LearnedPlan::learn(&PlanConventions::default(), &groups, &flows);
    assert_eq!(c.learn(plan, 0, 0), Learned::Changed);
    assert_eq!(c.policy().candidates(3), vec![4]);
    assert_eq!(c.policy().candidates(4), vec![3]);
}

/// Source processing with `policy.source_on_route`.
fn on_route_core() -> SwitchCore {
    let mut policy = PolicyConfig::published();
    policy.variant = crate::policy::Variant::SourceProcessing;
    policy.source_on_route = true;
    SwitchCore::new(policy, WeightsConfig::default()).unwrap()
}

#[test]
fn source_processing_on_route_charges_only_samples_taken_on_the_culprits_minimal_port() {
    let remote = Culprit {
        src: mac("02:00:00:02:00:01"),
        dst: to7(),
    };
    let sample = |port| CongestionSample {
        port,
        qntz_fb: 40,
        culprit: remote,
    };
    let mut on_route = on_route_core();
    on_route.learn(plan([255, 0, 1]), 0, 0);
    // Sampled on port 4, a candidate of group 7's decision point (minimal port 3): a detour
    // or transit frame. Cutting P(3) would send more of this switch's traffic to port 4.
    for port in [Some(4), None] {
        assert_eq!(on_route.on_congestion(&sample(port), MS), CnmRoute::Fabric);
        assert_eq!(on_route.policy().p_percent(3), Some(100.0));
        assert_eq!(on_route.policy().p_percent(4), Some(100.0));
    }
    assert_eq!(on_route.counters().cnm_generated_charged, 0);
    assert_eq!(on_route.counters().cnm_generated_off_route, 2);
    assert_eq!(on_route.counters().cnm_generated, 2);
    // Sampled on its minimal port: charged there.
    on_route.on_congestion(&sample(Some(3)), 2 * MS);
    assert!(on_route.policy().p_percent(3).unwrap() < 100.0);
    assert_eq!(on_route.counters().cnm_generated_charged, 1);
    // The published rule charges the minimal port whatever port the sample was taken on.
    let mut any = core(crate::policy::Variant::SourceProcessing, 0);
    any.learn(plan([255, 0, 1]), 0, 0);
    any.on_congestion(&sample(Some(4)), MS);
    assert!(any.policy().p_percent(3).unwrap() < 100.0);
    assert_eq!(any.counters().cnm_generated_charged, 1);
    assert_eq!(any.counters().cnm_generated_off_route, 0);
}

#[test]
fn source_processing_on_route_charges_the_sampled_bucket_of_an_equal_cost_decision_point() {
    let mut c = on_route_core();
    c.learn(leaf([128, 127, 1], [128, 127, 1]), 0, 0);
    // A culprit to pod 7 (minimal port 3) hashed onto up port 4, sampled there: both ports are
    // minimal, so the congested one is charged.
    let sample = CongestionSample {
        port: Some(4),
        qntz_fb: 40,
        culprit: Culprit {
            src: mac("02:00:00:02:00:01"),
            dst: to7(),
        },
    };
    c.on_congestion(&sample, MS);
    assert_eq!(c.policy().p_percent(3), Some(100.0));
    assert!(c.policy().p_percent(4).unwrap() < 100.0);
    assert_eq!(c.counters().cnm_generated_charged, 1);
}

/// `policy.detour_cnm_feedback`: a CNM about a culprit sent on a detour comes back through the
/// candidate it left by; it is charged to the decision point's minimal port as ever, and with the
/// option its Fb also counts as that candidate's congestion.
#[test]
fn a_detours_cnm_can_count_as_its_candidates_congestion() {
    for (on, expected) in [(false, 0.0), (true, 40.0)] {
        let mut policy = PolicyConfig::published();
        policy.variant = crate::policy::Variant::Combined;
        policy.fbcomp_reference = crate::policy::FbReference::Both;
        policy.detour_cnm_feedback = on;
        let mut c = SwitchCore::new(policy, WeightsConfig::default()).unwrap();
        c.learn(plan([255, 0, 1]), 0, 0);
        assert_eq!(c.policy().candidates(3), vec![4]);
        assert_eq!(c.policy().p_percent(3), Some(100.0));
        c.on_cnm(4, to7(), 40, MS);
        assert_eq!(
            c.policy().candidate_congestion(3, MS),
            Some(expected),
            "{on}"
        );
        assert_eq!(c.policy().counters().cnm_received, 1);
        assert_eq!(
            c.policy().p_percent(4),
            Some(100.0),
            "not charged to the arrival port"
        );
        // Charged to port 3: cut against a quiet candidate, held against one as congested.
        let p3 = c.policy().p_percent(3).unwrap();
        assert_eq!(p3 < 100.0, !on, "{p3}");
    }
}

/// `policy.charge_detour_cnms = false`: a detour's CNM is kept as its candidate's congestion and
/// leaves the minimal port's P and Fb alone; the minimal port's own CNM is compared with it.
#[test]
fn a_detours_cnm_can_be_left_uncharged() {
    for charge in [true, false] {
        let policy = PolicyConfig {
            charge_detour_cnms: charge,
            ..PolicyConfig::default()
        };
        let mut c = SwitchCore::new(policy, WeightsConfig::default()).unwrap();
        c.learn(plan([255, 0, 1]), 0, 0);
        assert_eq!(c.policy().candidates(3), vec![4]);
        c.on_cnm(4, to7(), 40, MS);
        assert_eq!(c.policy().candidate_congestion(3, MS), Some(40.0));
        assert_eq!(c.counters().cnm_received, 1);
        assert_eq!(c.counters().cnm_detour_uncharged, u64::from(!charge));
        assert_eq!(c.policy().last_fb(3), Some(if charge { 40 } else { 0 }));
        assert_eq!(
            c.policy().p_percent(3),
            Some(100.0),
            "held: as congested as its candidate"
        );
        // The minimal port's own CNM, more congested than the detour: cut either way.
        c.on_cnm(3, to7(), 60, 2 * MS);
        assert!(c.policy().p_percent(3).unwrap() < 100.0, "{charge}");
    }
    // A CNM that arrives on the port it is charged to is never a detour's.
    let policy = PolicyConfig {
        charge_detour_cnms: false,
        ..PolicyConfig::default()
    };
    let mut c = SwitchCore::new(policy, WeightsConfig::default()).unwrap();
    c.learn(plan([255, 0, 1]), 0, 0);
    c.on_cnm(3, to7(), 60, MS);
    assert_eq!(c.counters().cnm_detour_uncharged, 0);
    assert!(c.policy().p_percent(3).unwrap() < 100.0);
}

/// The yield comparison's input: a decision point's bucket octets, against the share its
/// installed weights give the minimal choice, reach the policy as its minimal port's window;
/// a window in which the minimal choice delivered 1.8× its share holds the next cut. Unknown
/// groups are ignored.
#[test]
fn group_octets_feed_the_yield_comparison_of_the_minimal_port() {
    let policy = PolicyConfig {
        yield_comparison: true,
        ..PolicyConfig::published()
    };
    let mut c = SwitchCore::new(policy, WeightsConfig::default()).unwrap();
    c.learn(plan([128, 127, 1]), 0, 0);
    assert!(writes(&mut c).is_empty());
    let before = c.policy().p_percent(3);
    // 400 000 octets of line time on the default 10 Gb/s link: a 320 µs window.
    c.on_group_bytes(1003, 900, 1_000, &[128, 127, 1], 0);
    c.on_group_bytes(9999, 0, 1_000, &[128, 127, 1], MS / 2);
    c.on_group_bytes(1003, 900, 1_000, &[128, 127, 1], MS / 2);
    c.on_cnm(3, to7(), 64, MS / 2 + 1);
    assert!(
        writes(&mut c).is_empty(),
        "1 800 octets where 1 000 were expected: held"
    );
    assert_eq!(c.policy().counters().cuts_held_by_yield, 1);
    assert_eq!(c.policy().p_percent(3), before);
}
