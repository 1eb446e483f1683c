//! Per-port stall and utilisation counters of a live switch, from what it offers (issue 18;
//! the seed study's method, Alali et al., "A Measurement Study of Congestion in an InfiniBand
//! Network").
//!
//! # What is measured, and what it is not
//! InfiniBand's `PortXmitWait` counts ticks in which a transmitter had data and **no
//! flow-control credit**. Ethernet has no credits, and Open vSwitch no such counter. What a
//! Linux egress port offers is its qdisc: backlog, octets sent, drops. The stall counter here is
//! **backlog time**: the time the port's egress qdisc held at least one octet, estimated from
//! backlog readings at a fixed poll period (trapezoid rule: a gap between two readings counts
//! whole when both saw a backlog, half when one did). It is a different quantity from
//! XmitWait and is never called that:
//! - a saturated Ethernet link *has* a backlog (it is the link that queues), where a saturated
//!   InfiniBand link never waits (its victims do, upstream);
//! - a lossy qdisc drops instead of back-pressuring, so backlog time stops at the congested
//!   port and does not spread to victim ports the way XmitWait does.
//!
//! The forced idle time fraction of an interval is then `Δbacklog_time / Δt` (the study's
//! FITF = τ·ΔW/Δt with backlog time in place of τ·W), both on the sampler's one clock, so there
//! is no turnaround error; its resolution is the poll period over the interval.
//!
//! Utilisation comes from OpenFlow port statistics, with Δt from the switch's own
//! `duration_sec`/`duration_nsec` of the same reply ([`OfPortRate`]): no request turnaround in
//! the denominator either.
//!
//! Counters from the kernel and the switch are cumulative and may wrap (the qdisc's drops are
//! 32-bit) or restart (a qdisc replaced, a port re-created): [`extend_u32`] and [`delta_u64`]
//! turn them into monotonic 64-bit totals.

use serde::Serialize;

use crate::qdisc::QueueStats;

/// The upper bounds of the FITF histogram's buckets (a last `+Inf` bucket follows). `0` counts
/// intervals without stall, the study's "zero" share; the study's box plots sit mostly below
/// 0.1 with a tail to 1.
pub const FITF_BUCKETS: [f64; 9] = [0.0, 0.01, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0];

/// `total` advanced by a 32-bit counter that went from `prev` to `now` (modulo 2^32).
pub fn extend_u32(total: u64, prev: u32, now: u32) -> u64 {
    total.saturating_add(u64::from(now.wrapping_sub(prev)))
}

/// The growth of a 64-bit counter from `prev` to `now`; a counter that went backwards was
/// reset (a qdisc replaced, a port re-created) and counts from zero.
pub fn delta_u64(prev: u64, now: u64) -> u64 {
    if now >= prev {
        now - prev
    } else {
        now
    }
}

/// FITF histogram: per-bucket (not cumulative) counts over [`FITF_BUCKETS`] and `+Inf`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct FitfHistogram {
    /// Per bucket of [`FITF_BUCKETS`], then `+Inf`.
    pub buckets: [u64; FITF_BUCKETS.len() + 1],
    /// Sum of the observed FITFs.
    pub sum: f64,
    /// Observations.
    pub count: u64,
}

impl FitfHistogram {
    /// Counts one interval's FITF.
    pub fn observe(&mut self, fitf: f64) {
        let i = FITF_BUCKETS
            .iter()
            .position(|&b| fitf <= b)
            .unwrap_or(FITF_BUCKETS.len());
        if let Some(n) = self.buckets.get_mut(i) {
            *n += 1;
        }
        self.sum += fitf;
        self.count += 1;
    }

    /// `(upper bound, count)` per bucket, `+Inf` as `f64::MAX` (prometheus-client's
    /// convention).
    pub fn bounds(&self) -> Vec<(f64, u64)> {
        FITF_BUCKETS
            .iter()
            .copied()
            .chain(std::iter::once(f64::MAX))
            .zip(self.buckets.iter().copied())
            .collect()
    }
}

/// One egress port's qdisc-derived counters.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct PortStall {
    /// Backlog time so far, ns (see the module doc: not XmitWait).
    pub backlog_ns: u64,
    /// Octets the qdisc sent so far (resets folded in).
    pub tx_bytes: u64,
    /// Packets the qdisc dropped so far (wraps folded in).
    pub drops: u64,
    /// Closed intervals.
    pub intervals: u64,
    /// Closed intervals with backlog time > 0.
    pub nonzero_intervals: u64,
    /// FITF of the closed intervals.
    pub fitf: FitfHistogram,
    /// The last reading: time (ns), backlog > 0, the raw octet and drop counters.
    #[serde(skip)]
    last: Option<(u64, bool, u64, u32)>,
    /// Where the open interval started: time, backlog time.
    #[serde(skip)]
    interval_start: Option<(u64, u64)>,
}

impl PortStall {
    /// Takes one reading of the port's root qdisc at `now_ns`; closes the open interval when
    /// `interval_ns` has passed since it started.
    pub fn observe(&mut self, now_ns: u64, q: &QueueStats, interval_ns: u64) {
        let busy = q.backlog_bytes > 0;
        if let Some((t0, busy0, bytes0, drops0)) = self.last {
            if now_ns <= t0 {
                return; // not after the last reading: nothing to integrate
            }
            let dt = now_ns - t0;
            let halves = u64::from(busy0) + u64::from(busy);
            self.backlog_ns = self
                .backlog_ns
                .saturating_add(dt.saturating_mul(halves) / 2);
            self.tx_bytes = self.tx_bytes.saturating_add(delta_u64(bytes0, q.bytes));
            // The 64-bit octet counter never wraps: if it went back, the qdisc was replaced and
            // its drops restarted too; otherwise a smaller drop count is a 32-bit wrap.
            self.drops = if q.bytes < bytes0 {
                self.drops.saturating_add(u64::from(q.drops))
            } else {
                extend_u32(self.drops, drops0, q.drops)
            };
        }
        self.last = Some((now_ns, busy, q.bytes, q.drops));
        match self.interval_start {
            None => self.interval_start = Some((now_ns, self.backlog_ns)),
            Some((t0, b0)) if now_ns.saturating_sub(t0) >= interval_ns => {
                self.close_interval(now_ns - t0, self.backlog_ns.saturating_sub(b0));
                self.interval_start = Some((now_ns, self.backlog_ns));
            }
            Some(_) => {}
        }
    }

    fn close_interval(&mut self, dt_ns: u64, dbacklog_ns: u64) {
        #[allow(clippy::cast_precision_loss)] // ns over an interval: far below 2^52
        let fitf = dbacklog_ns as f64 / dt_ns as f64;
        self.intervals += 1;
        if dbacklog_ns > 0 {
            self.nonzero_intervals += 1;
        }
        self.fitf.observe(fitf);
    }

    /// The time of the last reading, ns.
    pub fn last_ns(&self) -> Option<u64> {
        self.last.map(|(t, ..)| t)
    }
}

/// A port's transmit rate from OpenFlow port statistics, Δt from the switch's own `duration`
/// fields (the time the port has existed, at the moment the switch filled the reply).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct OfPortRate {
    /// `tx_bytes` so far (restarts folded in).
    pub tx_bytes: u64,
    /// `tx_dropped` so far (restarts folded in).
    pub tx_dropped: u64,
    /// Bits per second over the last two replies (0 until there are two).
    pub tx_bps: f64,
    /// The last reply: duration (ns), raw tx_bytes, raw tx_dropped.
    #[serde(skip)]
    last: Option<(u64, u64, u64)>,
}

impl OfPortRate {
    /// Takes one `ofp_port_stats` entry's counters.
    pub fn observe(&mut self, duration_sec: u32, duration_nsec: u32, tx_bytes: u64, dropped: u64) {
        let d = u64::from(duration_sec)
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(duration_nsec));
        match self.last {
            // The port was re-created (its duration restarted): no rate across it.
            Some((d0, ..)) if d < d0 => {
                self.tx_bytes = self.tx_bytes.saturating_add(tx_bytes);
                self.tx_dropped = self.tx_dropped.saturating_add(dropped);
                self.tx_bps = 0.0;
            }
            Some((d0, b0, x0)) => {
                let db = delta_u64(b0, tx_bytes);
                self.tx_bytes = self.tx_bytes.saturating_add(db);
                self.tx_dropped = self.tx_dropped.saturating_add(delta_u64(x0, dropped));
                if d > d0 {
                    #[allow(clippy::cast_precision_loss)]
                    let bps = db as f64 * 8e9 / (d - d0) as f64;
                    self.tx_bps = bps;
                }
            }
            None => {}
        }
        self.last = Some((d, tx_bytes, dropped));
    }
}

/// One `port-stats.csv` row (the simulator's columns, `fabricflow-report`'s input) of a live
/// port: `cycle` = ns since the sampler started, `xmit_wait_cycles` = backlog time in ns (not
/// XmitWait: module doc), `xmit_data_phits` = ns of line time the octets sent take at the
/// port's rate (so Δdata/Δcycle is the utilisation, as phits per cycle are in the simulator),
/// or octets when the rate is unknown, `xmit_discards` = the qdisc's drops (the column the
/// simulator, lossless, has not: where a lossy fabric's congestion roots show). `direction` is
/// `tx`: a switch sees only its own egress.
pub fn csv_row(
    now_ns: u64,
    switch: &str,
    port: crate::PortNo,
    role: &str,
    stall: &PortStall,
    rate_bps: Option<f64>,
) -> String {
    let data = match rate_bps {
        Some(r) if r > 0.0 => crate::link::PortLink {
            rate_bps: r,
            buffer_bytes: 1,
        }
        .line_time_ns(stall.tx_bytes),
        _ => stall.tx_bytes,
    };
    format!(
        "{now_ns},{switch},{port},{role},tx,{},{data},{}\n",
        stall.backlog_ns, stall.drops
    )
}

/// The CSV's header: the simulator's columns and the drops.
pub const CSV_HEADER: &str =
    "cycle,switch,port,role,direction,xmit_wait_cycles,xmit_data_phits,xmit_discards\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn q(backlog: u32, bytes: u64, drops: u32) -> QueueStats {
        QueueStats {
            ifindex: 1,
            handle: 0x5_0000,
            parent: crate::qdisc::TC_H_ROOT,
            backlog_bytes: backlog,
            qlen: u32::from(backlog > 0),
            drops,
            bytes,
        }
    }

    #[test]
    fn backlog_time_is_the_trapezoid_of_the_readings() {
        let mut s = PortStall::default();
        s.observe(0, &q(0, 0, 0), 1_000);
        s.observe(100, &q(1500, 0, 0), 1_000); // one end busy: half of 100
        s.observe(300, &q(3000, 0, 0), 1_000); // both: 200
        s.observe(400, &q(0, 0, 0), 1_000); // half of 100
        s.observe(500, &q(0, 0, 0), 1_000); // none
        assert_eq!(s.backlog_ns, 50 + 200 + 50);
        // A reading that is not later than the last changes nothing.
        s.observe(500, &q(9000, 0, 0), 1_000);
        s.observe(450, &q(9000, 0, 0), 1_000);
        assert_eq!(s.backlog_ns, 300);
    }

    #[test]
    fn intervals_give_fitf_nonzero_and_histogram() {
        let mut s = PortStall::default();
        // 100 ns intervals, a reading every 10 ns; busy in the second interval from t = 150.
        for t in (0..=300u64).step_by(10) {
            let b = if (150..200).contains(&t) { 1500 } else { 0 };
            s.observe(t, &q(b, 0, 0), 100);
        }
        assert_eq!(s.intervals, 3);
        assert_eq!(s.nonzero_intervals, 1);
        // Busy 150..190 whole (40) + halves at 140..150 and 190..200 (5 + 5) = 50 of 100.
        assert_eq!(s.backlog_ns, 50);
        assert_eq!(s.fitf.count, 3);
        assert!((s.fitf.sum - 0.5).abs() < 1e-12);
        // Two zero intervals in the `0` bucket, the 0.5 one in the `≤ 0.6` bucket.
        assert_eq!(s.fitf.buckets, [2, 0, 0, 0, 0, 0, 1, 0, 0, 0]);
        let b = s.fitf.bounds();
        assert_eq!(b.last(), Some(&(f64::MAX, 0)));
        assert_eq!(b.len(), FITF_BUCKETS.len() + 1);
    }

    #[test]
    fn always_busy_is_fitf_one() {
        let mut s = PortStall::default();
        for t in (0..=1_000u64).step_by(10) {
            s.observe(t, &q(100, 0, 0), 100);
        }
        assert_eq!(s.intervals, 10);
        assert_eq!(s.nonzero_intervals, 10);
        assert_eq!(s.fitf.buckets[FITF_BUCKETS.len() - 1], 10, "{:?}", s.fitf);
        assert_eq!(s.backlog_ns, 1_000);
    }

    #[test]
    fn drops_wrap_and_bytes_reset() {
        assert_eq!(extend_u32(10, u32::MAX - 1, 3), 15);
        assert_eq!(extend_u32(10, 7, 7), 10);
        assert_eq!(delta_u64(100, 250), 150);
        assert_eq!(delta_u64(100, 40), 40, "a reset counts from zero");
        let mut s = PortStall::default();
        s.observe(0, &q(0, 1_000, u32::MAX), 1_000);
        s.observe(10, &q(0, 4_000, 1), 1_000);
        assert_eq!(s.drops, 2, "wrapped from 2^32 - 1 to 1");
        // The qdisc was replaced: its counters restart (octets back to 500, drops to 4).
        s.observe(20, &q(0, 500, 4), 1_000);
        assert_eq!(s.tx_bytes, 3_000 + 500);
        assert_eq!(s.drops, 2 + 4);
    }

    #[test]
    fn of_rate_uses_the_switch_duration() {
        let mut r = OfPortRate::default();
        r.observe(10, 0, 1_000, 0);
        assert_eq!(r.tx_bps, 0.0);
        // 125 000 octets in 0.5 s of the switch's time = 2 Mb/s, whenever the reply arrived.
        r.observe(10, 500_000_000, 126_000, 2);
        assert!((r.tx_bps - 2e6).abs() < 1e-6, "{}", r.tx_bps);
        assert_eq!((r.tx_bytes, r.tx_dropped), (125_000, 2));
        // The same duration again (a duplicate reply): totals unchanged, rate kept.
        r.observe(10, 500_000_000, 126_000, 2);
        assert!((r.tx_bps - 2e6).abs() < 1e-6);
        // Port re-created: duration and counters restart; no rate across the restart.
        r.observe(0, 100, 300, 0);
        assert_eq!(r.tx_bps, 0.0);
        assert_eq!(r.tx_bytes, 125_300);
        r.observe(1, 100, 300 + 250_000, 0);
        assert!((r.tx_bps - 2e6).abs() < 1e-6);
    }

    #[test]
    fn csv_rows_in_the_simulator_columns() {
        let mut s = PortStall::default();
        s.observe(0, &q(0, 0, 0), 1_000_000);
        s.observe(1_000_000, &q(10, 1_250, 0), 1_000_000);
        // 1 250 octets at 10 Mb/s = 1 ms of line time.
        assert_eq!(
            csv_row(1_000_000, "s0x1", 3, "global", &s, Some(10e6)),
            "1000000,s0x1,3,global,tx,500000,1000000,0\n"
        );
        assert_eq!(
            csv_row(1_000_000, "s0x1", 3, "global", &s, None),
            "1000000,s0x1,3,global,tx,500000,1250,0\n"
        );
        assert!(CSV_HEADER.starts_with("cycle,switch,port,role,direction,"));
    }
}
