//! The IBA CC state machine, CNM acceptance and the HTB parameters, exhaustively over small
//! constants and deterministically.

use super::*;
use fabricflow_proto::cnm::Cpid;
use fabricflow_proto::error::ErrorKind;

const B: u64 = 10_000_000;
const MS: u64 = 1_000_000;
const HOST: MacAddr = MacAddr([2, 0, 0, 0, 1, 1]);
const OTHER: MacAddr = MacAddr([2, 0, 0, 0, 2, 1]);
const CP: MacAddr = MacAddr([2, 0, 0, 0, 0xff, 3]);

fn cc(per_step: u32, max_ird: u32) -> IbaCc {
    let cfg = IbaCcConfig {
        notifications_per_step: per_step,
        max_ird,
        ..IbaCcConfig::default()
    };
    IbaCc::new(cfg, B, 0).unwrap()
}

#[test]
fn defaults_are_the_seeds_constants_scaled_to_the_link() {
    let c = IbaCc::new(IbaCcConfig::default(), B, 0).unwrap();
    assert_eq!(IbaCcConfig::default().notifications_per_step, 10);
    assert_eq!(IbaCcConfig::default().max_ird, 127);
    // 500 000 octets: 0.4 s at 10 Mb/s, the seed's 100 µs at 40 Gb/s.
    assert_eq!(c.quiet_ns(), 400 * MS);
    assert_eq!(line_time_ns(500_000, 40_000_000_000), 100_000);
    assert_eq!(c.ird(), 0);
    assert_eq!(c.rate_bps(), B);
    assert_eq!(c.next_deadline_ns(), None);
}

#[test]
fn every_nth_cnm_raises_ird_up_to_the_table_end() {
    for per_step in 1..=12u32 {
        for max_ird in 0..=6u32 {
            let mut c = cc(per_step, max_ird);
            let mut raises = 0;
            for i in 1..=(per_step * (max_ird + 3)) {
                let raised = c.on_cnm(u64::from(i));
                let expect = i % per_step == 0 && i / per_step <= max_ird;
                assert_eq!(raised, expect, "step {per_step} max {max_ird} cnm {i}");
                raises += u32::from(raised);
                assert_eq!(c.ird(), (i / per_step).min(max_ird));
                assert_eq!(c.rate_bps(), B / (1 + u64::from(c.ird())));
            }
            assert_eq!(raises, max_ird);
            assert_eq!(c.max_ird_seen(), max_ird);
            assert_eq!(c.counters().raises, u64::from(max_ird));
            assert_eq!(c.counters().cnms, u64::from(per_step * (max_ird + 3)));
        }
    }
}

#[test]
fn the_quiet_timer_lowers_one_step_per_whole_period_and_restarts_the_count() {
    let mut c = cc(10, 127);
    let q = c.quiet_ns();
    for i in 0..30 {
        c.on_cnm(i);
    }
    assert_eq!(c.ird(), 3);
    // Nine CNMs towards the next step, the last at t0.
    let t0 = 1_000;
    for _ in 0..9 {
        c.on_cnm(t0);
    }
    assert_eq!(c.next_deadline_ns(), Some(t0 + q));
    // Nothing before a whole period.
    assert!(!c.on_timer(t0 + q - 1));
    assert_eq!(c.ird(), 3);
    // One period: one step down, the count restarted (a tenth CNM no longer raises).
    assert!(c.on_timer(t0 + q));
    assert_eq!(c.ird(), 2);
    assert!(!c.on_cnm(t0 + q));
    assert_eq!(c.ird(), 2);
    // A CNM restarts the period.
    assert_eq!(c.next_deadline_ns(), Some(t0 + 2 * q));
    // Three periods late: the two remaining steps at once, then nothing is due.
    assert!(c.on_timer(t0 + q + 5 * q));
    assert_eq!(c.ird(), 0);
    assert_eq!(c.rate_bps(), B);
    assert_eq!(c.next_deadline_ns(), None);
    assert!(!c.on_timer(u64::MAX));
    assert_eq!(c.counters().lowers, 3);
}

/// Every interleaving of CNMs and timer runs over a short horizon agrees with a direct model:
/// IRD = raises − lowers, never negative, never above max, rate = B/(1+IRD).
#[test]
fn exhaustive_event_sequences_match_the_model() {
    let q = cc(2, 3).quiet_ns();
    // Events: 0 = CNM now, 1 = half a period passes, 2 = a whole period passes (timer run).
    for seq in 0..3u32.pow(9) {
        let mut c = cc(2, 3);
        let (mut now, mut ird, mut count, mut from) = (0u64, 0u32, 0u32, 0u64);
        let mut s = seq;
        for _ in 0..9 {
            match s % 3 {
                0 => {
                    c.on_cnm(now);
                    from = now;
                    count += 1;
                    if count == 2 {
                        count = 0;
                        ird = (ird + 1).min(3);
                    }
                }
                step => {
                    now += q * u64::from(step) / 2;
                    c.on_timer(now);
                    while ird > 0 && now - from >= q {
                        ird -= 1;
                        count = 0;
                        from += q;
                    }
                }
            }
            s /= 3;
            assert_eq!(c.ird(), ird, "sequence {seq}");
            assert_eq!(c.rate_bps(), B / (1 + u64::from(ird)));
            assert_eq!(c.next_deadline_ns(), (ird > 0).then_some(from + q));
        }
    }
}

#[test]
fn bad_constants_are_refused() {
    let bad = [
        IbaCcConfig {
            notifications_per_step: 0,
            ..IbaCcConfig::default()
        },
        IbaCcConfig {
            quiet_line_bytes: 0,
            ..IbaCcConfig::default()
        },
        IbaCcConfig {
            max_ird: (1 << 20) + 1,
            ..IbaCcConfig::default()
        },
    ];
    for cfg in bad {
        assert!(matches!(
            IbaCc::new(cfg, B, 0),
            Err(ConfigError::OutOfRange { .. })
        ));
    }
    assert!(IbaCc::new(IbaCcConfig::default(), 0, 0).is_err());
}

fn cnm_frame(to: MacAddr) -> Vec<u8> {
    let mut sampled = Vec::new();
    sampled.extend_from_slice(&OTHER.0);
    sampled.extend_from_slice(&to.0);
    sampled.extend_from_slice(&[0x08, 0x00]);
    sampled.extend_from_slice(&[0x45; 40]);
    Cnm::for_sampled_frame(&sampled, CP, Cpid::new(CP, 2), 40, 10, 3)
        .unwrap()
        .to_vec()
}

#[test]
fn a_cnm_about_this_hosts_frame_is_accepted() {
    let cnm = accept_cnm(&cnm_frame(HOST), HOST).unwrap();
    assert_eq!(cnm.qntz_fb, 40);
    assert_eq!(cnm.encap_da, OTHER);
    assert_eq!(cnm.cpid, Cpid::new(CP, 2));
}

#[test]
fn malformed_or_foreign_frames_get_typed_errors() {
    let good = cnm_frame(HOST);
    assert_eq!(
        accept_cnm(&cnm_frame(OTHER), HOST),
        Err(CnmRejected::NotForThisHost {
            dst: OTHER,
            own: HOST
        })
    );
    // Version 1.
    let mut v1 = good.clone();
    v1[14] = 0x10;
    let e = accept_cnm(&v1, HOST).unwrap_err();
    assert_eq!(e.label(), "malformed");
    assert!(matches!(
        e,
        CnmRejected::Malformed(DecodeError {
            offset: 14,
            kind: ErrorKind::InvalidValue { .. }
        })
    ));
    // Not a CNM EtherType.
    let mut ip = good.clone();
    ip[12] = 0x08;
    ip[13] = 0x00;
    assert!(matches!(
        accept_cnm(&ip, HOST),
        Err(CnmRejected::Malformed(DecodeError { offset: 12, .. }))
    ));
    // MSDU length beyond 64.
    let mut long = good.clone();
    long[36] = 0;
    long[37] = 65;
    assert!(matches!(
        accept_cnm(&long, HOST),
        Err(CnmRejected::Malformed(DecodeError {
            kind: ErrorKind::BadLength { .. },
            ..
        }))
    ));
    // Every truncation of the header is refused, never a panic.
    for n in 0..38 {
        assert!(
            matches!(accept_cnm(&good[..n], HOST), Err(CnmRejected::Malformed(_))),
            "{n}"
        );
    }
}

#[test]
fn htb_parameters_match_what_tc_writes_for_mininets_links() {
    // `tc class add ... htb rate 10Mbit burst 15k`: 1 250 000 octets/s, 15 360 octets =
    // 12.288 ms = 192 000 ticks of 64 ns.
    let r = HtbRate {
        rate_bps: B,
        burst_bytes: 15 * 1024,
    };
    assert_eq!(r.buffer_ticks(), 192_000);
    let opt = r.tc_htb_opt();
    let word = |at: usize| u32::from_ne_bytes(opt[at..at + 4].try_into().unwrap());
    for spec in [0, 12] {
        assert_eq!(opt[spec], 0, "cell_log");
        assert_eq!(opt[spec + 1], TC_LINKLAYER_ETHERNET);
        assert_eq!(word(spec + 8), 1_250_000);
    }
    assert_eq!(word(24), 192_000);
    assert_eq!(word(28), 192_000);
    assert_eq!(&opt[32..], &[0u8; 12]);
    assert_eq!(r.rate64(), None);
    // B/(1+IRD) at IRD 7: the bucket keeps its octets, so its time grows.
    let slow = HtbRate {
        rate_bps: B / 8,
        ..r
    };
    assert_eq!(slow.buffer_ticks(), 8 * 192_000);
    // Past 32 bits of octets/s the 64-bit attributes carry it.
    let fast = HtbRate {
        rate_bps: 40_000_000_000,
        ..r
    };
    assert_eq!(fast.rate64(), Some(5_000_000_000));
    assert_eq!(
        u32::from_ne_bytes(fast.tc_htb_opt()[8..12].try_into().unwrap()),
        u32::MAX
    );
    // Never a zero-octet rate or bucket.
    let tiny = HtbRate {
        rate_bps: 1,
        burst_bytes: 0,
    };
    assert_eq!(tiny.bytes_per_s(), 1);
    assert_eq!(tiny.buffer_ticks(), 1);
}
