//! DRB's rules with exact expected values.

use super::*;

const Q: u64 = 100_000; // quiet period, ns
const D: DstSwitch = DstSwitch { group: 7, index: 0 };
const E: DstSwitch = DstSwitch { group: 9, index: 0 };

fn drb(available: u8) -> Drb {
    let mut d = Drb::new(DrbConfig::default(), Q).unwrap();
    d.set_pairs([(D, available), (E, 2)], 0);
    d
}

/// Sends `n` notifications about `path` of D at time `t`.
fn notify(d: &mut Drb, path: u8, n: u32, t: u64) {
    for _ in 0..n {
        d.on_notification(D, path, t);
    }
}

#[test]
fn a_fresh_pair_sends_everything_minimally() {
    let d = drb(5);
    assert_eq!(d.weights(D).unwrap(), [255, 0, 0, 0, 0, 1]);
    assert_eq!(d.open_paths(D), Some(1));
    assert_eq!(d.weights(DstSwitch { group: 1, index: 0 }), None);
}

#[test]
fn every_tenth_notification_opens_the_next_path() {
    let mut d = drb(5);
    notify(&mut d, 0, 9, 10);
    assert_eq!(d.open_paths(D), Some(1));
    assert_eq!(d.weights(D).unwrap(), [255, 0, 0, 0, 0, 1]);
    d.on_notification(D, 0, 10);
    assert_eq!(d.open_paths(D), Some(2));
    // B = [10, 0]: shares 1/11 : 1/1 → 255·1/12 = 21.25, 255·11/12 = 233.75 → 21, 234.
    assert_eq!(d.weights(D).unwrap(), [21, 234, 0, 0, 0, 1]);
    notify(&mut d, 1, 10, 20);
    // B = [10, 10, 0], open 3: 1/11, 1/11, 1 → 255/13 = 19.615.., 19.615.., 215.77..: floors 19,
    // 19, 215 and the two quanta left by largest remainder (.77, then .615 at the lower index).
    assert_eq!(d.open_paths(D), Some(3));
    assert_eq!(d.weights(D).unwrap(), [20, 19, 216, 0, 0, 1]);
    let c = d.counters();
    assert_eq!((c.charged, c.opened, c.ignored), (20, 2, 0));
}

#[test]
fn weights_sum_to_256_and_follow_the_inverse_counts() {
    let mut d = drb(5);
    for i in 0..60u32 {
        d.on_notification(D, (i % 3) as u8, 1);
        let w = d.weights(D).unwrap();
        assert_eq!(w.iter().map(|&x| u32::from(x)).sum::<u32>(), 256, "{w:?}");
        let b = d.notifications(D).unwrap();
        let open = usize::from(d.open_paths(D).unwrap());
        // Among open paths fewer notifications never means a smaller weight.
        for i in 0..open {
            for j in 0..open {
                if b[i] < b[j] {
                    assert!(w[i] + 1 >= w[j], "{b:?} {w:?}");
                }
            }
        }
        assert!(w[open..5].iter().all(|&x| x == 0), "{w:?}");
    }
}

#[test]
fn at_most_four_alternatives_and_never_more_than_the_plan_has() {
    let mut d = drb(5);
    notify(&mut d, 0, 200, 1);
    assert_eq!(d.open_paths(D), Some(5));
    let mut two = drb(2);
    notify(&mut two, 0, 200, 1);
    assert_eq!(two.open_paths(D), Some(2));
    let mut capped = Drb::new(
        DrbConfig {
            max_alternatives: 1,
            ..DrbConfig::default()
        },
        Q,
    )
    .unwrap();
    capped.set_pairs([(D, 5)], 0);
    for _ in 0..100 {
        capped.on_notification(D, 0, 1);
    }
    assert_eq!(capped.open_paths(D), Some(2));
}

#[test]
fn quiet_periods_close_paths_one_by_one_and_fade_the_counts() {
    let mut d = drb(5);
    notify(&mut d, 0, 30, 1000);
    assert_eq!(d.open_paths(D), Some(4));
    assert_eq!(d.notifications(D).unwrap(), [30, 0, 0, 0, 0]);
    // Not a whole period yet.
    assert!(d.tick(1000 + Q - 1).is_empty());
    assert_eq!(d.open_paths(D), Some(4));
    // One period: one path closes, counts halve.
    assert_eq!(d.tick(1000 + Q), vec![D]);
    assert_eq!(d.open_paths(D), Some(3));
    assert_eq!(d.notifications(D).unwrap(), [15, 0, 0, 0, 0]);
    // Two more periods at once: two closures.
    d.tick(1000 + 3 * Q);
    assert_eq!(d.open_paths(D), Some(1));
    assert_eq!(d.notifications(D).unwrap(), [3, 0, 0, 0, 0]);
    assert_eq!(d.weights(D).unwrap(), [255, 0, 0, 0, 0, 1]);
    assert_eq!(d.counters().closed, 3);
    // A notification restarts the period.
    d.on_notification(D, 0, 1000 + 3 * Q + 10);
    d.tick(1000 + 4 * Q + 9);
    assert_eq!(d.notifications(D).unwrap(), [4, 0, 0, 0, 0]);
}

#[test]
fn pairs_are_independent_and_unknown_notifications_are_ignored() {
    let mut d = drb(5);
    notify(&mut d, 0, 10, 1);
    assert_eq!(d.open_paths(D), Some(2));
    assert_eq!(d.open_paths(E), Some(1));
    assert!(!d.on_notification(DstSwitch { group: 3, index: 0 }, 0, 1));
    assert!(!d.on_notification(E, 2, 1)); // E has paths 0 and 1 only
    assert_eq!(d.counters().ignored, 2);
}

#[test]
fn a_replan_keeps_unchanged_pairs_and_restarts_changed_ones() {
    let mut d = drb(5);
    notify(&mut d, 0, 10, 1);
    d.on_notification(E, 0, 1);
    d.set_pairs([(D, 5), (E, 3)], 5);
    assert_eq!(d.open_paths(D), Some(2));
    assert_eq!(d.notifications(E).unwrap(), [0, 0, 0]);
    d.set_pairs([(E, 3)], 6);
    assert_eq!(d.pairs().collect::<Vec<_>>(), [E]);
}

#[test]
fn the_destination_and_path_come_from_the_tagged_mac() {
    let mac = MacAddr([2, 3, 11, 7, 0, 1]);
    assert_eq!(DstSwitch::of_mac(mac), Some((D, 3)));
    assert_eq!(DstSwitch::of_mac(MacAddr([2, 0, 0, 7, 0, 1])), Some((D, 0)));
    assert_eq!(DstSwitch::of_mac(MacAddr([0xff; 6])), None);
}

#[test]
fn config_ranges() {
    assert!(DrbConfig::default().validate().is_ok());
    for bad in [
        DrbConfig {
            notifications_per_path: 0,
            ..DrbConfig::default()
        },
        DrbConfig {
            max_alternatives: 5,
            ..DrbConfig::default()
        },
        DrbConfig {
            quiet_line_bytes: 0,
            ..DrbConfig::default()
        },
    ] {
        assert!(Drb::new(bad, Q).is_err());
    }
}
