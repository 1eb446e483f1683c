//! What drives the policy engine, and what it reports back.

use crate::PortNo;

/// An input to [`Policy::handle`](super::Policy::handle). Every event comes with the time it
/// happened (`now_ns`, any monotonic origin); only [`Event::Tick`] and the idle-port timer use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A CNM for traffic whose decision point is fabric port `port` reached this switch: it is
    /// charged to `port` (the [`SwitchCore`](crate::switch_core::SwitchCore) resolves the port
    /// from the CNM's encapsulated destination, DESIGN §5).
    ///
    /// `qntz_fb` is the CNM's 6-bit QntzFb: the quantised *magnitude* |Fb| of the congestion
    /// point's feedback (Fb ≤ 0 at the CP; 0 = no congestion, 63 = the clamp). The reaction point
    /// works on this non-negative magnitude throughout, so "a larger Fb" below always means "more
    /// congested". Values above 63 are treated as 63.
    CnmReceived {
        /// The minimal port of the culprit's decision point (or the arrival port without one).
        port: PortNo,
        /// Quantised |Fb|, 0..=63.
        qntz_fb: u8,
    },
    /// This switch's (emulated) congestion point generated a CNM towards a source in another
    /// group. With source processing the switch also charges it to its own minimal port towards
    /// the sampled frame's destination. The caller resolves that port and filters out
    /// intra-group culprits (FOGSim applies source processing only to inter-group traffic).
    CnmGenerated {
        /// This switch's minimal output port towards the culprit frame's destination.
        minimal_port_towards_culprit: PortNo,
        /// The QntzFb the generated CNM carries.
        qntz_fb: u8,
    },
    /// This switch's own congestion point sampled fabric port `port` and found it congested with
    /// quantised |Fb| `qntz_fb` (it generated a CNM). Stored as the port's own feedback, which
    /// feedback comparison with `fbcomp_reference = candidates` uses as the congestion of the
    /// port when it is a non-minimal candidate. Changes no probability by itself; feed it before
    /// the matching [`Event::CnmGenerated`].
    CongestionObserved {
        /// The congested port of this switch.
        port: PortNo,
        /// Quantised |Fb|, 0..=63.
        qntz_fb: u8,
    },
    /// `bytes` octets left fabric port `port` (all traffic: injected, transit, non-minimal),
    /// since the previous `BytesSent` for that port. Feeds the byte counter.
    BytesSent {
        /// Fabric output port.
        port: PortNo,
        /// Octets sent.
        bytes: u64,
    },
    /// Octets this switch's decision points with minimal port `port` sent since their previous
    /// report (the groups' bucket counters): `minimal_bytes` through the minimal choice of
    /// `total_bytes` in all, where their installed weights expected `expected_minimal_bytes`.
    /// Feeds the yield comparison (`yield_comparison`).
    DecisionBytes {
        /// The decision points' minimal port.
        port: PortNo,
        /// Octets through the minimal choice.
        minimal_bytes: u64,
        /// Octets through every choice.
        total_bytes: u64,
        /// Σ over the groups of their octets × their installed minimal weight share.
        expected_minimal_bytes: u64,
    },
    /// Time passes: runs the idle-port increase timer if it is configured.
    Tick,
}

/// Why a probability changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    /// A received CNM decreased P (base, source processing).
    CnmDecrease,
    /// A self-generated CNM decreased P (source processing, combined).
    SourceDecrease,
    /// Feedback comparison: Fb(p) ≤ Fb_avg + th1, P increased.
    FeedbackIncrease,
    /// Feedback comparison: Fb(p) > Fb_avg + th2, P decreased by Fb(p) − Fb_avg.
    FeedbackDecrease,
    /// The byte counter reached its limit (possibly several times in one event).
    ByteCounterIncrease,
    /// The idle-port timer expired (possibly several periods in one tick).
    TimerIncrease,
    /// A new configuration moved P into its new [Pmin, 100].
    ConfigChange,
}

/// One port's probability changed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PChange {
    /// The fabric port.
    pub port: PortNo,
    /// P before, percent.
    pub old_percent: f64,
    /// P after, percent.
    pub new_percent: f64,
    /// Why.
    pub cause: Cause,
}

/// The probabilities an event changed. Reusable: [`Policy::handle_into`](super::Policy::handle_into)
/// clears and refills it without allocating once its buffer has grown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effects {
    changes: Vec<PChange>,
}

impl Effects {
    /// An empty set of effects.
    pub fn new() -> Self {
        Effects::default()
    }

    /// The ports whose P changed, in the order the changes happened (ascending port for a tick).
    pub fn changes(&self) -> &[PChange] {
        &self.changes
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Forgets every change, keeping the buffer.
    pub fn clear(&mut self) {
        self.changes.clear();
    }

    pub(crate) fn push(&mut self, change: PChange) {
        self.changes.push(change);
    }
}

impl<'a> IntoIterator for &'a Effects {
    type Item = &'a PChange;
    type IntoIter = std::slice::Iter<'a, PChange>;
    fn into_iter(self) -> Self::IntoIter {
        self.changes.iter()
    }
}

/// Running totals, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counters {
    /// CNMs received on a fabric port.
    pub cnm_received: u64,
    /// Self-generated CNMs charged to a port (source processing).
    pub cnm_self_charged: u64,
    /// Events naming a port that is not a fabric port of this policy (ignored).
    pub unknown_port: u64,
    /// Self-generated CNMs ignored because the variant has no source processing.
    pub cnm_generated_ignored: u64,
    /// Decreases applied (including those the Pmin floor made no-ops).
    pub decreases: u64,
    /// Increases applied, counting each step of a multi-step event.
    pub increases: u64,
    /// Feedback comparisons that fell in the dead band (th1, th2].
    pub dead_band: u64,
    /// Congestion this switch's own CP observed on its ports.
    pub congestion_observed: u64,
    /// Comparisons made against the candidates' congestion (`fbcomp_reference = candidates`).
    pub candidate_comparisons: u64,
    /// Byte-counter increases withheld because the port was more congested than its
    /// comparison's reference (`rise_follows_comparison`).
    pub rises_held: u64,
    /// Decreases skipped because the port's last cut was less than its hold-off ago
    /// (`cut_holdoff_buffer_drains`).
    pub cuts_held_off: u64,
    /// Decreases skipped because the minimal choice delivered at least its weight's share
    /// (`yield_comparison`).
    pub cuts_held_by_yield: u64,
    /// Increases withheld because the minimal choice delivered less than its weight's share
    /// (`yield_comparison`), counting each step.
    pub rises_held_by_yield: u64,
    /// Yield-comparison windows closed (`yield_comparison`), and those of them in which both
    /// the minimal and the other choices carried octets (a ratio).
    pub yield_windows: u64,
    /// See `yield_windows`.
    pub yield_ratios: u64,
}

impl Counters {
    /// The counters that say how P moved and why it did not, by metric label.
    pub fn moves(&self) -> [(&'static str, u64); 9] {
        [
            ("decrease", self.decreases),
            ("increase", self.increases),
            ("dead_band", self.dead_band),
            ("rise_held", self.rises_held),
            ("cut_held_off", self.cuts_held_off),
            ("cut_held_by_yield", self.cuts_held_by_yield),
            ("rise_held_by_yield", self.rises_held_by_yield),
            ("yield_window", self.yield_windows),
            ("yield_ratio", self.yield_ratios),
        ]
    }
}
