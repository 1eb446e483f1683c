//! The host's reaction point of the InfiniBand CC baseline (issue 20; the seed's "IBA CC"):
//! pure state machine, CNM acceptance and the HTB class parameters it writes. The I/O shell is
//! [`crate::runtime::throttle`] (`fabricflow-agent throttle`).
//!
//! **Mechanism** (the seed, as the simulator's `iba-cc` mode runs it, sim/src/net.rs): every
//! `notifications_per_step` CNMs about the host's frames raise its injection-rate delay IRD by
//! one (at most `max_ird`, a 128-entry congestion control table); whenever a whole quiet period
//! passes without a CNM, IRD drops by one and the count restarts. The host may inject at most
//! B/(1+IRD), B = its link rate. The quiet period is in octets of line time like the agent's
//! other rate-relative constants: 500 000 octets is the seed's 100 µs at the simulator's
//! 40 Gb/s, 0.4 s at Mininet's 10 Mb/s host links.
//!
//! **Difference from the seed:** IBA throttles per queue pair (per destination); this kernel
//! has no classifiers (and no `sch_prio`), so a host has one egress class and the throttler
//! limits the whole host: a CNM about any of its flows slows all of them.
//!
//! **The CNM:** the emulated congestion point addresses it to the culprit frame's source (the
//! CNM's DA); the controller's `cnm_to_hosts` plan forwards it there. [`accept_cnm`] takes a
//! frame off the host's interface and says, with a typed reason, why it is not a CNM for this
//! host.

use fabricflow_proto::cnm::Cnm;
use fabricflow_proto::error::DecodeError;
use fabricflow_proto::MacAddr;
use serde::{Deserialize, Serialize};

use crate::error::{as_f64, check, ConfigError};

/// IBA CC's constants (the `throttle` subcommand's options).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IbaCcConfig {
    /// CNMs per IRD step. Default 10 (the seed).
    pub notifications_per_step: u32,
    /// Largest IRD. Default 127 (a 128-entry congestion control table; the simulator's).
    pub max_ird: u32,
    /// The quiet timer in octets of line time at the host's link rate. Default 500 000: the
    /// seed's 100 µs at 40 Gb/s (the simulator's links), 0.4 s at 10 Mb/s. Must be > 0.
    pub quiet_line_bytes: u64,
}

impl Default for IbaCcConfig {
    fn default() -> Self {
        IbaCcConfig {
            notifications_per_step: 10,
            max_ird: 127,
            quiet_line_bytes: 500_000,
        }
    }
}

impl IbaCcConfig {
    /// Checks every constant's range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(
            self.notifications_per_step >= 1,
            "throttle.notifications_per_step",
            f64::from(self.notifications_per_step),
            ">= 1",
        )?;
        check(
            self.max_ird <= 1 << 20,
            "throttle.max_ird",
            f64::from(self.max_ird),
            "<= 2^20",
        )?;
        check(
            self.quiet_line_bytes > 0 && self.quiet_line_bytes <= 1 << 40,
            "throttle.quiet_line_bytes",
            as_f64(self.quiet_line_bytes),
            "0 < octets <= 2^40",
        )
    }
}

/// Counters of one reaction point (monotonic).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IbaCcCounters {
    /// CNMs charged.
    pub cnms: u64,
    /// IRD raises.
    pub raises: u64,
    /// IRD decreases by the quiet timer.
    pub lowers: u64,
}

/// One host's IBA CC state: IRD, the notifications since the last step, the quiet period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbaCc {
    cfg: IbaCcConfig,
    line_bps: u64,
    quiet_ns: u64,
    ird: u32,
    count: u32,
    quiet_from_ns: u64,
    max_ird_seen: u32,
    counters: IbaCcCounters,
}

impl IbaCc {
    /// A reaction point at IRD 0 on a link of `line_bps` bit/s (> 0), the clock at `now_ns`.
    pub fn new(cfg: IbaCcConfig, line_bps: u64, now_ns: u64) -> Result<IbaCc, ConfigError> {
        cfg.validate()?;
        check(
            line_bps > 0 && line_bps <= 1 << 45,
            "throttle.line_bps",
            as_f64(line_bps),
            "0 < rate <= 2^45 bit/s",
        )?;
        let quiet_ns = line_time_ns(cfg.quiet_line_bytes, line_bps);
        Ok(IbaCc {
            cfg,
            line_bps,
            quiet_ns,
            ird: 0,
            count: 0,
            quiet_from_ns: now_ns,
            max_ird_seen: 0,
            counters: IbaCcCounters::default(),
        })
    }

    /// A CNM about this host's frame arrived at `now_ns`. True if IRD rose (the rate fell).
    pub fn on_cnm(&mut self, now_ns: u64) -> bool {
        self.counters.cnms += 1;
        self.quiet_from_ns = now_ns;
        self.count += 1;
        if self.count < self.cfg.notifications_per_step {
            return false;
        }
        self.count = 0;
        if self.ird >= self.cfg.max_ird {
            return false;
        }
        self.ird += 1;
        self.max_ird_seen = self.max_ird_seen.max(self.ird);
        self.counters.raises += 1;
        true
    }

    /// Runs the quiet timer up to `now_ns`: one IRD step down per whole quiet period without a
    /// CNM (each step restarts the count and the period). True if IRD fell.
    pub fn on_timer(&mut self, now_ns: u64) -> bool {
        let mut lowered = false;
        while self.ird > 0 && now_ns.saturating_sub(self.quiet_from_ns) >= self.quiet_ns {
            self.ird -= 1;
            self.count = 0;
            self.quiet_from_ns = self.quiet_from_ns.saturating_add(self.quiet_ns);
            self.counters.lowers += 1;
            lowered = true;
        }
        lowered
    }

    /// When [`on_timer`](Self::on_timer) lowers IRD next if no CNM comes (None at IRD 0).
    pub fn next_deadline_ns(&self) -> Option<u64> {
        (self.ird > 0).then(|| self.quiet_from_ns.saturating_add(self.quiet_ns))
    }

    /// The injection-rate delay now.
    pub fn ird(&self) -> u32 {
        self.ird
    }

    /// The highest IRD reached.
    pub fn max_ird_seen(&self) -> u32 {
        self.max_ird_seen
    }

    /// The allowed rate, B/(1+IRD) bit/s (at least 1).
    pub fn rate_bps(&self) -> u64 {
        (self.line_bps / (1 + u64::from(self.ird))).max(1)
    }

    /// The link rate B, bit/s.
    pub fn line_bps(&self) -> u64 {
        self.line_bps
    }

    /// The quiet period, ns.
    pub fn quiet_ns(&self) -> u64 {
        self.quiet_ns
    }

    /// Counters.
    pub fn counters(&self) -> IbaCcCounters {
        self.counters
    }
}

/// Nanoseconds `bytes` octets take at `bps` bit/s (at least 1; u64::MAX if it overflows).
pub fn line_time_ns(bytes: u64, bps: u64) -> u64 {
    let ns = u128::from(bytes) * 8 * 1_000_000_000 / u128::from(bps.max(1));
    u64::try_from(ns).unwrap_or(u64::MAX).max(1)
}

/// Why a frame off the host's interface is not charged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CnmRejected {
    /// Not a well-formed CNM frame (the codec's error, with its offset).
    #[error("malformed CNM: {0}")]
    Malformed(#[from] DecodeError),
    /// A CNM about another host's frame.
    #[error("CNM addressed to {dst}, not to this host ({own})")]
    NotForThisHost {
        /// The CNM's destination (the culprit's source).
        dst: MacAddr,
        /// This host's MAC.
        own: MacAddr,
    },
}

impl CnmRejected {
    /// A short label for counters.
    pub fn label(&self) -> &'static str {
        match self {
            CnmRejected::Malformed(_) => "malformed",
            CnmRejected::NotForThisHost { .. } => "not_for_this_host",
        }
    }
}

/// The CNM in `frame` if it is a well-formed CNM about a frame of host `own` (the CNM's
/// destination MAC is the culprit's source).
pub fn accept_cnm(frame: &[u8], own: MacAddr) -> Result<Cnm, CnmRejected> {
    let (info, cnm) = Cnm::parse_frame(frame)?;
    if info.dst != own {
        return Err(CnmRejected::NotForThisHost { dst: info.dst, own });
    }
    Ok(cnm)
}

/// `TCA_HTB_PARMS` (linux/pkt_sched.h).
pub const TCA_HTB_PARMS: u16 = 1;
/// `TCA_HTB_RATE64`.
pub const TCA_HTB_RATE64: u16 = 6;
/// `TCA_HTB_CEIL64`.
pub const TCA_HTB_CEIL64: u16 = 7;
/// `TC_LINKLAYER_ETHERNET`: the kernel computes the rate's timing itself, no rate table.
pub const TC_LINKLAYER_ETHERNET: u8 = 1;
/// Nanoseconds per psched tick (`PSCHED_SHIFT` 6 in the kernel; /proc/net/psched's 64 per µs
/// is 1000/64 ticks per µs, the same).
pub const PSCHED_NS_PER_TICK: u64 = 64;
/// Octets of a `struct tc_htb_opt`.
pub const TC_HTB_OPT_LEN: usize = 44;

/// The parameters of an HTB leaf class: `rate` = `ceil` bit/s and a bucket of `burst_bytes`
/// (Mininet's TCLink: `htb rate R burst 15k`, ceil = rate), as `struct tc_htb_opt` (native byte
/// order) for `TCA_HTB_PARMS`, plus the 64-bit rate attributes' values when the rate exceeds
/// the 32-bit octets/s field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HtbRate {
    /// bit/s.
    pub rate_bps: u64,
    /// Bucket, octets.
    pub burst_bytes: u32,
}

impl HtbRate {
    /// Octets per second.
    pub fn bytes_per_s(&self) -> u64 {
        (self.rate_bps / 8).max(1)
    }

    /// The bucket as psched ticks: the time `burst_bytes` take at the rate (what `tc` computes
    /// from `burst`), at least one tick.
    pub fn buffer_ticks(&self) -> u32 {
        let ns = u128::from(self.burst_bytes) * 1_000_000_000 / u128::from(self.bytes_per_s());
        u32::try_from(ns / u128::from(PSCHED_NS_PER_TICK))
            .unwrap_or(u32::MAX)
            .max(1)
    }

    /// `struct tc_htb_opt`: rate and ceil `tc_ratespec`s (cell_log 0, linklayer Ethernet,
    /// overhead 0, cell_align 0, mpu 0, rate octets/s saturated to 32 bits), buffer = cbuffer,
    /// quantum 0 (the kernel derives it from r2q), level 0, prio 0.
    pub fn tc_htb_opt(&self) -> [u8; TC_HTB_OPT_LEN] {
        let mut out = [0u8; TC_HTB_OPT_LEN];
        let rate32 = u32::try_from(self.bytes_per_s()).unwrap_or(u32::MAX);
        let mut spec = [0u8; 12];
        spec[1] = TC_LINKLAYER_ETHERNET;
        spec[8..12].copy_from_slice(&rate32.to_ne_bytes());
        let buffer = self.buffer_ticks().to_ne_bytes();
        let parts: [&[u8]; 4] = [&spec, &spec, &buffer, &buffer];
        let mut at = 0;
        for p in parts {
            if let Some(dst) = out.get_mut(at..at + p.len()) {
                dst.copy_from_slice(p);
            }
            at += p.len();
        }
        out
    }

    /// The 64-bit rate (octets/s) for `TCA_HTB_RATE64` / `TCA_HTB_CEIL64`, when the 32-bit
    /// field cannot hold it.
    pub fn rate64(&self) -> Option<u64> {
        (self.bytes_per_s() > u64::from(u32::MAX)).then_some(self.bytes_per_s())
    }
}

#[cfg(test)]
mod tests;
