//! The QCN-SW policy engine: per fabric port p of one switch, the probability P(p) (percent) that
//! new inter-group traffic whose minimal route leaves through p is sent minimally.
//!
//! A pure state machine: [`Policy::handle`] takes an [`Event`] and the time, and returns which
//! probabilities changed. No clock, no I/O, no randomness, so the agent, the unit tests and the
//! fabric simulator run exactly the same code.
//!
//! # Semantics (DESIGN §5, QCN.md; FOGSim v5 `switchModule`)
//!
//! - P(p) starts at 100 and always stays in [Pmin, 100].
//! - **Decrease** on a CNM received on p with quantised feedback q = QntzFb (the magnitude |Fb|,
//!   see [`Event::CnmReceived`]): `base` and `source-processing` apply one decrease by q (AIMD:
//!   P ← P·(1 − Gd·q), so P = 100, q = 63 gives 100·(1 − 63/128) = 50.78125).
//! - **Feedback comparison** (`feedback-comparison`, `combined`) replaces that decrease: the port's
//!   stored Fb becomes q; Fb_avg is the mean of the stored Fb of *all* fabric (local + global)
//!   ports, 0 for a port that never received a CNM, including the value just stored. Then
//!   - Fb(p) ≤ Fb_avg + th1: one increase, although a CNM arrived (uniform congestion);
//!   - Fb(p) > Fb_avg + th2: one decrease by Fb(p) − Fb_avg (AIMD: P ← P·(1 − Gd·(Fb − Fb_avg)));
//!   - otherwise (the dead band) nothing.
//! - **Source processing** (`source-processing`, `combined`): a CNM this switch generates applies
//!   one plain decrease by its QntzFb to the switch's minimal port towards the culprit's
//!   destination (never the comparison, and the stored Fb is untouched — as FOGSim's `QCNSWSELF`).
//!   With `source_on_route` the switch core passes only samples taken on that very port.
//! - Two additions of fabricflow's, on in the shipped defaults and off in
//!   [`PolicyConfig::published`]:
//!   Fb ageing (stored Fb older than the limit count as 0 in Fb_avg, so the comparison
//!   recovers after uniform congestion ends) and `source_comparison` (in `combined`, a
//!   self-generated CNM goes through the comparison instead of a plain decrease, unstored).
//! - `fbcomp_reference = candidates` (fabricflow's addition; the default `both` uses it too):
//!   the comparison's reference for port p is not Fb_avg but the congestion of p's non-minimal
//!   candidates (see [`Policy::set_candidates`]): per candidate c the larger of its fresh stored Fb
//!   (received) and its fresh own Fb ([`Event::CongestionObserved`]), averaged over the
//!   candidates. A port without known candidates falls back to Fb_avg.
//! - `fbcomp_persistent_excess` (fabricflow's addition, off by default): a CNM above the cut
//!   reference cuts only while the port's running mean of its excess over that reference (weight
//!   1/16, restarted after the Fb age limit) was positive before it; otherwise P holds.
//! - **Byte counter**: bytes sent on p accumulate; each full byte limit B (`byte_limit_bytes`,
//!   raised to `byte_limit_buffer_drains` of p's buffer) gives one increase and is consumed
//!   (the remainder carries over, so a batched `BytesSent` of k·B bytes gives exactly k
//!   increases). Every CNM charged to p that changes P — received or self-generated — resets
//!   p's counter to 0. (FOGSim resets only on received CNMs; charging a self-generated CNM is a
//!   decrease too, and "since the last decrease" is the counter's meaning, so fabricflow resets
//!   on both.) A CNM the comparison answered by holding P decreased nothing and leaves the
//!   counter running (`dead_band_restarts_counter = true` restarts on it too, as the published
//!   rule restarts on every CNM). With `rise_follows_comparison` (off by default) a full B earns
//!   no increase while p's own fresh Fb is above the reference a CNM would be cut against (the
//!   octets are consumed all the same, and the idle timer restarts: the port is not idle).
//! - **Idle timer** (optional): if p has seen no CNM that restarted its counter and no increase
//!   for a whole period, the next [`Event::Tick`] applies one increase per whole elapsed period. Any increase, by bytes or by
//!   timer, restarts both the timer and the byte counter, so p gets one increase per B bytes or per
//!   idle period, whichever comes first.
//!
//! The update policies (AIMD, AIAD, MIMD, MIAD) define what one increase and one decrease are:
//! see [`UpdatePolicy`].

mod config;
mod event;
mod update;
mod variant;

pub use config::{FbReference, PolicyConfig, PolicyKind};
pub use event::{Cause, Counters, Effects, Event, PChange};
pub use update::{UpdatePolicy, P_MAX_PERCENT};
pub use variant::Variant;

use update::Rates;

use fabricflow_proto::cnm::MAX_QNTZ_FB;

use crate::error::ConfigError;
use crate::link::PortLinks;
use crate::PortNo;

/// Weight of a new comparison's excess in a port's running mean (`fbcomp_persistent_excess`):
/// about the last sixteen CNMs charged to the port.
const EXCESS_WEIGHT: f64 = 1.0 / 16.0;

#[derive(Debug, Clone)]
struct PortState {
    /// P(p), percent.
    p: f64,
    /// Bytes sent since the last counter-restarting CNM or increase, below the byte limit between
    /// events.
    bytes: u64,
    /// The port's byte limit B, octets (≥ 1): `byte_limit_bytes`, or more on a deep buffer.
    byte_limit: u64,
    /// Last QntzFb received on this port (feedback comparison), 0 if none.
    last_fb: u8,
    /// When `last_fb` was stored (for Fb ageing).
    fb_at_ns: u64,
    /// Last QntzFb this switch's own CP found on this port (`CongestionObserved`), 0 if none.
    own_fb: u8,
    /// When `own_fb` was stored.
    own_fb_at_ns: u64,
    /// Running mean of the port's Fb values (`fbcomp_smoothing`), and when it was last updated.
    fb_mean: f64,
    fb_mean_at_ns: u64,
    /// Running mean of the port's excess over its reference in the comparison
    /// (`fbcomp_persistent_excess`), and when it was last updated; `None` before the first.
    excess: Option<(f64, u64)>,
    /// Indices of the port's non-minimal candidates (`fbcomp_reference = candidates`).
    candidates: Vec<usize>,
    /// The candidates are minimal too (an equal-cost decision point): no detour stretch.
    equal_cost: bool,
    /// Start of the current idle-timer period; `None` until the port's first event or tick.
    timer_base_ns: Option<u64>,
    /// The port's Fb age limit, ns (`fb_max_age_line_bytes` at its line rate); `None` = off.
    fb_max_age_ns: Option<u64>,
    /// The port's idle-timer period, ns; `None` = no timer.
    timer_period_ns: Option<u64>,
    /// When P(p) was last cut (`cut_holdoff_buffer_drains`); `None` before the first cut.
    cut_at_ns: Option<u64>,
    /// The port's cut hold-off, ns; `None` = off.
    cut_holdoff_ns: Option<u64>,
    /// The yield comparison's window (`yield_comparison`), ns; `None` = off.
    yield_window_ns: Option<u64>,
    /// The current window: its start and its octets (minimal, all, expected minimal).
    yield_start_ns: Option<u64>,
    yield_minimal: u64,
    yield_total: u64,
    yield_expected: u64,
    /// The last window's ratio of minimal to expected minimal octets, and when it closed.
    yield_ratio: Option<(f64, u64)>,
}

impl PortState {
    /// A port never seen before: P = 100, no history.
    fn fresh() -> Self {
        PortState {
            p: P_MAX_PERCENT,
            bytes: 0,
            byte_limit: 1,
            last_fb: 0,
            fb_at_ns: 0,
            own_fb: 0,
            own_fb_at_ns: 0,
            fb_mean: 0.0,
            fb_mean_at_ns: 0,
            excess: None,
            candidates: Vec::new(),
            equal_cost: false,
            timer_base_ns: None,
            fb_max_age_ns: None,
            timer_period_ns: None,
            cut_at_ns: None,
            cut_holdoff_ns: None,
            yield_window_ns: None,
            yield_start_ns: None,
            yield_minimal: 0,
            yield_total: 0,
            yield_expected: 0,
            yield_ratio: None,
        }
    }
}

/// The QCN-SW reaction point of one switch.
#[derive(Debug, Clone)]
pub struct Policy {
    cfg: PolicyConfig,
    rates: Rates,
    /// Every port's link, which scales its time constants.
    links: PortLinks,
    /// The idle timer's least period, ns: twice the interval at which sent octets arrive.
    timer_floor_ns: u64,
    /// Fabric ports, ascending; `state[i]` belongs to `ports[i]`.
    ports: Vec<PortNo>,
    state: Vec<PortState>,
    /// Σ last_fb over all ports, kept incrementally so Fb_avg is O(1).
    fb_sum: u32,
    counters: Counters,
}

impl Policy {
    /// A policy for a switch whose fabric (local + global) ports are `fabric_ports`; every P
    /// starts at 100. Duplicate ports are merged. Host ports must not be listed: CNMs from hosts
    /// are dropped by the pipeline, and feedback comparison averages over fabric ports only.
    pub fn new(
        cfg: PolicyConfig,
        fabric_ports: impl IntoIterator<Item = PortNo>,
    ) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let mut ports: Vec<PortNo> = fabric_ports.into_iter().collect();
        ports.sort_unstable();
        ports.dedup();
        let state = ports.iter().map(|_| PortState::fresh()).collect();
        let mut policy = Policy {
            rates: Rates::new(&cfg),
            links: PortLinks::default(),
            timer_floor_ns: 0,
            cfg,
            ports,
            state,
            fb_sum: 0,
            counters: Counters::default(),
        };
        policy.derive_times();
        Ok(policy)
    }

    /// Sets the links the rate-relative constants are scaled by (also for ports added later),
    /// and the interval at which sent octets arrive: the idle timer never fires sooner than
    /// twice that.
    pub fn set_links(&mut self, links: PortLinks, bytes_every_ns: u64) {
        self.links = links;
        self.timer_floor_ns = bytes_every_ns.saturating_mul(2);
        self.derive_times();
    }

    /// The links the constants are scaled by.
    pub fn links(&self) -> &PortLinks {
        &self.links
    }

    /// Every port's Fb age, timer period and byte limit from its link and the configuration.
    fn derive_times(&mut self) {
        for (&port, st) in self.ports.iter().zip(self.state.iter_mut()) {
            let link = self.links.get(port);
            st.byte_limit = self.cfg.byte_limit_for(&link);
            st.fb_max_age_ns = (self.cfg.fb_max_age_line_bytes > 0)
                .then(|| link.line_time_ns(self.cfg.fb_max_age_line_bytes));
            st.timer_period_ns = self
                .cfg
                .increase_timer_line_bytes
                .map(|b| link.line_time_ns(b).max(self.timer_floor_ns).max(1));
            st.cut_holdoff_ns = (self.cfg.cut_holdoff_buffer_drains > 0.0).then(|| {
                link.line_time_ns(link.buffer_fraction_bytes(self.cfg.cut_holdoff_buffer_drains))
            });
            st.yield_window_ns = self
                .cfg
                .yield_comparison
                .then(|| link.line_time_ns(self.cfg.yield_window_line_bytes).max(1));
        }
    }

    /// Replaces the constants at run time (DESIGN §6), keeping every P, byte counter and stored
    /// Fb; probabilities outside the new [Pmin, 100] are moved into it and reported.
    pub fn set_config(&mut self, cfg: PolicyConfig) -> Result<Effects, ConfigError> {
        cfg.validate()?;
        self.rates = Rates::new(&cfg);
        self.cfg = cfg;
        self.derive_times();
        let mut out = Effects::new();
        for (&port, st) in self.ports.iter().zip(self.state.iter_mut()) {
            let old = st.p;
            st.p = self.rates.increase(old, 0);
            if st.p != old {
                out.push(PChange {
                    port,
                    old_percent: old,
                    new_percent: st.p,
                    cause: Cause::ConfigChange,
                });
            }
        }
        Ok(out)
    }

    /// Changes the set of fabric ports (the controller changed the plan): ports that stay keep
    /// their P, byte counter and stored Fb; new ports start at 100; removed ports are forgotten.
    pub fn set_fabric_ports(&mut self, fabric_ports: impl IntoIterator<Item = PortNo>) {
        let mut ports: Vec<PortNo> = fabric_ports.into_iter().collect();
        ports.sort_unstable();
        ports.dedup();
        let state: Vec<PortState> = ports
            .iter()
            .map(|&p| {
                self.index(p)
                    .and_then(|i| self.state.get(i))
                    .cloned()
                    .unwrap_or_else(PortState::fresh)
            })
            .collect();
        self.fb_sum = state.iter().map(|s| u32::from(s.last_fb)).sum();
        self.ports = ports;
        self.state = state;
        // Candidate indices refer to the old port list: the caller sets them again.
        for st in &mut self.state {
            st.candidates.clear();
        }
        self.derive_times();
    }

    /// Sets, per minimal port, its non-minimal candidate ports (the decision point's other
    /// buckets), for `fbcomp_reference = candidates`. Ports that are not fabric ports are
    /// ignored, and so is a candidate equal to its minimal port; ports not listed have none.
    pub fn set_candidates<'a>(
        &mut self,
        candidates: impl IntoIterator<Item = (PortNo, &'a [PortNo])>,
    ) {
        for st in &mut self.state {
            st.candidates.clear();
            st.equal_cost = false;
        }
        for (port, cands) in candidates {
            let Some(i) = self.index(port) else { continue };
            let mut idx: Vec<usize> = cands
                .iter()
                .filter(|&&c| c != port)
                .filter_map(|&c| self.index(c))
                .collect();
            idx.sort_unstable();
            idx.dedup();
            if let Some(st) = self.state.get_mut(i) {
                st.candidates = idx;
            }
        }
    }

    /// Marks `ports` as buckets of equal-cost decision points (a fat-tree's up ports):
    /// their candidates are minimal too, so `fbcomp_nonminimal_factor` does not apply to them.
    /// [`set_candidates`](Self::set_candidates) clears the marks.
    pub fn mark_equal_cost(&mut self, ports: impl IntoIterator<Item = PortNo>) {
        for port in ports {
            if let Some(st) = self.index(port).and_then(|i| self.state.get_mut(i)) {
                st.equal_cost = true;
            }
        }
    }

    /// The candidates of `port` set by [`set_candidates`](Self::set_candidates), ascending.
    pub fn candidates(&self, port: PortNo) -> Vec<PortNo> {
        self.index(port)
            .and_then(|i| self.state.get(i))
            .map(|st| {
                st.candidates
                    .iter()
                    .filter_map(|&c| self.ports.get(c).copied())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Sets P(port) (clamped to [Pmin, 100]), e.g. from the weights found on the switch when the
    /// agent starts, so a restart continues from the installed split instead of jumping back to
    /// 100. Returns the value set, `None` for a port that is not a fabric port.
    pub fn set_p_percent(&mut self, port: PortNo, p_percent: f64) -> Option<f64> {
        let i = self.index(port)?;
        let floor = self.cfg.p_min_percent;
        let st = self.state.get_mut(i)?;
        let p = if p_percent.is_finite() {
            p_percent
        } else {
            P_MAX_PERCENT
        };
        st.p = p.max(floor).min(P_MAX_PERCENT);
        Some(st.p)
    }

    /// The configuration in force.
    pub fn config(&self) -> &PolicyConfig {
        &self.cfg
    }

    /// Applies one event at time `now_ns` and returns the probabilities it changed.
    pub fn handle(&mut self, event: Event, now_ns: u64) -> Effects {
        let mut out = Effects::new();
        self.handle_into(event, now_ns, &mut out);
        out
    }

    /// As [`handle`](Self::handle), writing into a reused buffer (cleared first): no allocation
    /// once the buffer has grown, for the agent's hot path and the simulator.
    pub fn handle_into(&mut self, event: Event, now_ns: u64, out: &mut Effects) {
        out.clear();
        match event {
            Event::CnmReceived { port, qntz_fb } => {
                self.on_cnm_received(port, qntz_fb, now_ns, out)
            }
            Event::CnmGenerated {
                minimal_port_towards_culprit,
                qntz_fb,
            } => {
                self.on_cnm_generated(minimal_port_towards_culprit, qntz_fb, now_ns, out);
            }
            Event::CongestionObserved { port, qntz_fb } => {
                self.on_congestion_observed(port, qntz_fb, now_ns);
            }
            Event::BytesSent { port, bytes } => self.on_bytes_sent(port, bytes, now_ns, out),
            Event::DecisionBytes {
                port,
                minimal_bytes,
                total_bytes,
                expected_minimal_bytes,
            } => self.on_decision_bytes(
                port,
                [minimal_bytes, total_bytes, expected_minimal_bytes],
                now_ns,
            ),
            Event::Tick => self.on_tick(now_ns, out),
        }
    }

    /// P(port) in percent, or `None` for a port that is not a fabric port.
    pub fn p_percent(&self, port: PortNo) -> Option<f64> {
        self.index(port)
            .and_then(|i| self.state.get(i))
            .map(|s| s.p)
    }

    /// Every fabric port with its P, ascending by port.
    pub fn probabilities(&self) -> impl Iterator<Item = (PortNo, f64)> + '_ {
        self.ports
            .iter()
            .copied()
            .zip(self.state.iter().map(|s| s.p))
    }

    /// The fabric ports, ascending.
    pub fn ports(&self) -> &[PortNo] {
        &self.ports
    }

    /// The last QntzFb received on `port` (0 if none), as feedback comparison stores it.
    pub fn last_fb(&self, port: PortNo) -> Option<u8> {
        self.index(port)
            .and_then(|i| self.state.get(i))
            .map(|s| s.last_fb)
    }

    /// Fb_avg: the mean stored Fb over all fabric ports (0 without ports).
    pub fn fb_avg(&self) -> f64 {
        if self.ports.is_empty() {
            return 0.0;
        }
        #[allow(clippy::cast_precision_loss)] // a switch has far fewer than 2^52 ports
        let n = self.ports.len() as f64;
        f64::from(self.fb_sum) / n
    }

    /// Running totals.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    fn index(&self, port: PortNo) -> Option<usize> {
        self.ports.binary_search(&port).ok()
    }

    /// Index of `port`, counting an unknown port.
    fn lookup(&mut self, port: PortNo) -> Option<usize> {
        let i = self.index(port);
        if i.is_none() {
            self.counters.unknown_port += 1;
        }
        i
    }

    fn on_cnm_received(&mut self, port: PortNo, qntz_fb: u8, now_ns: u64, out: &mut Effects) {
        let Some(i) = self.lookup(port) else { return };
        self.counters.cnm_received += 1;
        let q = qntz_fb.min(MAX_QNTZ_FB);
        let held = self.held_total();
        if self.cfg.variant.feedback_comparison() {
            self.feedback_comparison(i, port, q, now_ns, out);
        } else {
            self.decrease(i, port, f64::from(q), Cause::CnmDecrease, now_ns, out);
        }
        self.restart_counters_after_cnm(i, held, now_ns);
    }

    fn on_cnm_generated(&mut self, port: PortNo, qntz_fb: u8, now_ns: u64, out: &mut Effects) {
        if !self.cfg.variant.source_processing() {
            self.counters.cnm_generated_ignored += 1;
            return;
        }
        let Some(i) = self.lookup(port) else { return };
        self.counters.cnm_self_charged += 1;
        let q = qntz_fb.min(MAX_QNTZ_FB);
        let held = self.held_total();
        if self.cfg.source_comparison && self.cfg.variant.feedback_comparison() {
            let (lo, hi) = self.reference_counted(i, now_ns);
            let fb = self.compared_fb(i, q, now_ns);
            self.compare_value(i, port, fb, q, lo, hi, now_ns, out);
        } else {
            self.decrease(i, port, f64::from(q), Cause::SourceDecrease, now_ns, out);
        }
        self.restart_counters_after_cnm(i, held, now_ns);
    }

    /// CNMs that left P as it was: the comparison's dead band and held cuts.
    fn held_total(&self) -> u64 {
        self.counters
            .dead_band
            .saturating_add(self.counters.cuts_held_off)
            .saturating_add(self.counters.cuts_held_by_yield)
    }

    /// Octets of the decision points behind port `port` ([`Event::DecisionBytes`]): added to
    /// the port's window, which closes into a ratio once it is a window long.
    fn on_decision_bytes(&mut self, port: PortNo, [min, total, expected]: [u64; 3], now_ns: u64) {
        let Some(i) = self.lookup(port) else { return };
        let Some(st) = self.state.get_mut(i) else {
            return;
        };
        let Some(window) = st.yield_window_ns else {
            return;
        };
        st.yield_minimal = st.yield_minimal.saturating_add(min);
        st.yield_total = st.yield_total.saturating_add(total);
        st.yield_expected = st.yield_expected.saturating_add(expected);
        let start = *st.yield_start_ns.get_or_insert(now_ns);
        if now_ns.saturating_sub(start) < window {
            return;
        }
        // A ratio only when both the minimal and the other choices carried octets: a choice
        // without streams says nothing about what a stream would get there.
        let (m, t, e) = (st.yield_minimal, st.yield_total, st.yield_expected);
        #[allow(clippy::cast_precision_loss)] // octet counts far below 2^52 per window
        let ratio = (m > 0 && m < t && e > 0).then(|| m as f64 / e as f64);
        st.yield_ratio = ratio.map(|r| (r, now_ns));
        st.yield_start_ns = Some(now_ns);
        self.counters.yield_windows += 1;
        self.counters.yield_ratios += u64::from(ratio.is_some());
        st.yield_minimal = 0;
        st.yield_total = 0;
        st.yield_expected = 0;
    }

    /// Port `i`'s fresh yield ratio (at most two windows old).
    fn yield_ratio(&self, i: usize, now_ns: u64) -> Option<f64> {
        let st = self.state.get(i)?;
        let window = st.yield_window_ns?;
        let (r, at) = st.yield_ratio?;
        (now_ns.saturating_sub(at) <= window.saturating_mul(2)).then_some(r)
    }

    /// After a CNM charged to port `i` (`held_before` = [`held_total`](Self::held_total) before
    /// it): the byte counter and the idle timer start again, unless P was held (the dead band,
    /// a cut held off) and `dead_band_restarts_counter` is off.
    fn restart_counters_after_cnm(&mut self, i: usize, held_before: u64, now_ns: u64) {
        let held = self.held_total() != held_before;
        if self.cfg.dead_band_restarts_counter || !held {
            self.restart_counters(i, now_ns);
        }
    }

    fn feedback_comparison(
        &mut self,
        i: usize,
        port: PortNo,
        q: u8,
        now_ns: u64,
        out: &mut Effects,
    ) {
        let Some(st) = self.state.get_mut(i) else {
            return;
        };
        self.fb_sum = self.fb_sum - u32::from(st.last_fb) + u32::from(q);
        st.last_fb = q;
        st.fb_at_ns = now_ns;
        let w = self.cfg.fbcomp_smoothing;
        Self::add_to_mean(st, q, w, now_ns);
        let (lo, hi) = self.reference_counted(i, now_ns);
        let fb = self.compared_fb(i, q, now_ns);
        self.compare_value(i, port, fb, q, lo, hi, now_ns, out);
    }

    fn on_congestion_observed(&mut self, port: PortNo, qntz_fb: u8, now_ns: u64) {
        let Some(i) = self.lookup(port) else { return };
        tracing::trace!(port, fb = qntz_fb, "congestion observed");
        self.counters.congestion_observed += 1;
        let w = self.cfg.fbcomp_smoothing;
        if let Some(st) = self.state.get_mut(i) {
            st.own_fb = qntz_fb.min(MAX_QNTZ_FB);
            st.own_fb_at_ns = now_ns;
            Self::add_to_mean(st, st.own_fb, w, now_ns);
        }
    }

    /// Whether port `i`'s byte-counter increase is withheld (`rise_follows_comparison`): its
    /// own fresh congestion is above the reference a CNM would be cut against.
    fn rise_held(&self, i: usize, now_ns: u64) -> bool {
        if !self.cfg.rise_follows_comparison || !self.cfg.variant.feedback_comparison() {
            return false;
        }
        let Some(st) = self.state.get(i) else {
            return false;
        };
        let own = Self::fresh_congestion(st, now_ns);
        if own == 0 {
            // Nothing fresh: the reference (≥ 0) cannot be exceeded; skip computing it.
            return false;
        }
        // Uncounted: no CNM is compared here.
        let (_, hi, _) = self.reference_of(i, now_ns);
        f64::from(own) > hi + self.cfg.fbcomp_th2
    }

    /// A port's fresh congestion: the larger of the Fb last charged to it by a CNM and the Fb
    /// last observed on it (`CongestionObserved`: its switch's CP, detours' CNMs), each 0 once
    /// older than the port's age limit.
    fn fresh_congestion(st: &PortState, now_ns: u64) -> u32 {
        let fresh = |v: u8, at: u64| match st.fb_max_age_ns {
            Some(age) if now_ns.saturating_sub(at) > age => 0,
            _ => u32::from(v),
        };
        fresh(st.last_fb, st.fb_at_ns).max(fresh(st.own_fb, st.own_fb_at_ns))
    }

    /// [`reference_of`](Self::reference_of) for a CNM's comparison, counting it when the
    /// candidates were the reference.
    fn reference_counted(&mut self, i: usize, now_ns: u64) -> (f64, f64) {
        let (lo, hi, by_candidates) = self.reference_of(i, now_ns);
        if by_candidates {
            self.counters.candidate_comparisons += 1;
        }
        (lo, hi)
    }

    /// What Fb(port `i`) is compared with at `now_ns`, as `(raise at or below, cut above)`:
    /// Fb_avg for both, or the candidates' mean congestion for both, or with `both` the
    /// average and the larger of the two (P holds in between); and whether the candidates were
    /// the reference.
    fn reference_of(&self, i: usize, now_ns: u64) -> (f64, f64, bool) {
        let candidates = match self.cfg.fbcomp_reference {
            FbReference::FabricAverage => None,
            _ => self.candidate_congestion_at(i, now_ns),
        };
        let Some(c) = candidates else {
            let a = self.fb_avg_at(now_ns);
            return (a, a, false);
        };
        let stretch = match self.state.get(i) {
            Some(st) if !st.equal_cost => self.cfg.fbcomp_nonminimal_factor,
            _ => 1.0,
        };
        let c = c * stretch;
        match self.cfg.fbcomp_reference {
            FbReference::Both => {
                let a = self.fb_avg_at(now_ns);
                (a, c.max(a), true)
            }
            _ => (c, c, true),
        }
    }

    /// The mean over port `i`'s candidates of max(fresh received Fb, fresh own Fb); `None` when
    /// the port has no candidates.
    pub fn candidate_congestion(&self, port: PortNo, now_ns: u64) -> Option<f64> {
        self.candidate_congestion_at(self.index(port)?, now_ns)
    }

    fn candidate_congestion_at(&self, i: usize, now_ns: u64) -> Option<f64> {
        let cands = &self.state.get(i)?.candidates;
        if cands.is_empty() {
            return None;
        }
        let smoothed = self.smoothed();
        let sum: f64 = cands
            .iter()
            .filter_map(|&c| self.state.get(c))
            .map(|c| {
                if smoothed {
                    Self::mean_at(c, now_ns)
                } else {
                    f64::from(Self::fresh_congestion(c, now_ns))
                }
            })
            .sum();
        #[allow(clippy::cast_precision_loss)] // a switch has far fewer than 2^52 ports
        let n = cands.len() as f64;
        Some(sum / n)
    }

    /// The comparison itself (DESIGN §5): Fb(p) ≤ `lo` + th1 raises P, Fb(p) > `hi` + th2 cuts
    /// it by Fb(p) − `hi`, anything between is the dead band. With `fbcomp_smoothing`, Fb(p) is
    /// the port's running mean and the cut is the CNM's `q` × (Fb(p) − `hi`) / Fb(p).
    #[allow(clippy::too_many_arguments)] // one comparison's inputs; a struct would only rename them
    fn compare_value(
        &mut self,
        i: usize,
        port: PortNo,
        fb: f64,
        q: u8,
        lo: f64,
        hi: f64,
        now_ns: u64,
        out: &mut Effects,
    ) {
        tracing::trace!(port, fb, lo, hi, "feedback comparison");
        let persistent = self.excess_persistent(i, fb - hi, now_ns);
        if fb <= lo + self.cfg.fbcomp_th1 {
            self.increase(i, port, 1, Cause::FeedbackIncrease, now_ns, out);
        } else if fb > hi + self.cfg.fbcomp_th2 && persistent {
            // Smoothed, the mean's excess is a share of the mean and the CNM's own Fb is cut by
            // that share: a port consistently above its reference is cut as hard as without
            // smoothing, one only as congested as its reference barely at all.
            let amount = if self.smoothed() {
                f64::from(q) * (fb - hi) / fb
            } else {
                fb - hi
            };
            self.decrease(i, port, amount, Cause::FeedbackDecrease, now_ns, out);
        } else {
            self.counters.dead_band += 1;
        }
    }

    /// Adds `excess` (Fb(p) − the cut reference) to port `i`'s running mean and returns whether
    /// the mean *before* it was positive (`fbcomp_persistent_excess`; always true when off, for
    /// the port's first comparison, and for one whose last is older than its Fb age limit).
    fn excess_persistent(&mut self, i: usize, excess: f64, now_ns: u64) -> bool {
        if !self.cfg.fbcomp_persistent_excess {
            return true;
        }
        let Some(st) = self.state.get_mut(i) else {
            return true;
        };
        let age = st.fb_max_age_ns;
        let prev = st
            .excess
            .filter(|&(_, at)| age.is_none_or(|a| now_ns.saturating_sub(at) <= a))
            .map(|(mean, _)| mean);
        let mean = prev.map_or(excess, |m| m + (excess - m) * EXCESS_WEIGHT);
        st.excess = Some((mean, now_ns));
        prev.is_none_or(|m| m > 0.0)
    }

    /// Whether the comparison reads running means (`fbcomp_smoothing`).
    fn smoothed(&self) -> bool {
        self.cfg.fbcomp_smoothing > 0.0
    }

    /// What the comparison reads as port `i`'s Fb for a CNM carrying `q`: `q`, or with
    /// `fbcomp_smoothing` the port's running mean.
    fn compared_fb(&self, i: usize, q: u8, now_ns: u64) -> f64 {
        match self.state.get(i) {
            Some(st) if self.smoothed() => Self::mean_at(st, now_ns),
            _ => f64::from(q),
        }
    }

    /// Adds Fb `q` to a port's running mean with weight `w` (nothing when `w` is 0).
    fn add_to_mean(st: &mut PortState, q: u8, w: f64, now_ns: u64) {
        if w <= 0.0 {
            return;
        }
        st.fb_mean = (1.0 - w) * Self::mean_at(st, now_ns) + w * f64::from(q);
        st.fb_mean_at_ns = now_ns;
    }

    /// A port's running mean at `now_ns`, decayed since its last value with the Fb age limit
    /// as time constant.
    fn mean_at(st: &PortState, now_ns: u64) -> f64 {
        match st.fb_max_age_ns {
            Some(age) if age > 0 => {
                #[allow(clippy::cast_precision_loss)] // ns spans far below 2^52
                let x = now_ns.saturating_sub(st.fb_mean_at_ns) as f64 / age as f64;
                st.fb_mean * (-x).exp()
            }
            _ => st.fb_mean,
        }
    }

    /// Fb_avg at `now_ns`: with Fb ageing, a port's stored Fb older than its limit counts as 0.
    pub fn fb_avg_at(&self, now_ns: u64) -> f64 {
        if self.cfg.fb_max_age_line_bytes == 0 {
            return self.fb_avg();
        }
        if self.ports.is_empty() {
            return 0.0;
        }
        let fresh: u32 = self
            .state
            .iter()
            .filter(|s| {
                s.fb_max_age_ns
                    .is_none_or(|age| now_ns.saturating_sub(s.fb_at_ns) <= age)
            })
            .map(|s| u32::from(s.last_fb))
            .sum();
        #[allow(clippy::cast_precision_loss)] // a switch has far fewer than 2^52 ports
        let n = self.ports.len() as f64;
        f64::from(fresh) / n
    }

    fn on_bytes_sent(&mut self, port: PortNo, bytes: u64, now_ns: u64, out: &mut Effects) {
        let Some(i) = self.lookup(port) else { return };
        let Some(st) = self.state.get_mut(i) else {
            return;
        };
        let limit = st.byte_limit;
        st.bytes = st.bytes.saturating_add(bytes);
        if st.bytes < limit {
            return;
        }
        // `limit` ≥ 1 (`byte_limit_for`); checked_* keep clippy and the impossible case quiet.
        let n = st.bytes.checked_div(limit).unwrap_or(0);
        st.bytes = st.bytes.checked_rem(limit).unwrap_or(0);
        st.timer_base_ns = Some(now_ns);
        if self.rise_held(i, now_ns) {
            self.counters.rises_held = self.counters.rises_held.saturating_add(n);
            return;
        }
        self.increase(i, port, n, Cause::ByteCounterIncrease, now_ns, out);
    }

    /// When the next `Tick` has an idle-timer increase to give (0: a port's timer has not
    /// started yet, so the next tick starts it), `None` without a timer. A shell that ticks at
    /// this instant instead of periodically does the same increases without waking per port
    /// thousands of times a second for nothing.
    pub fn next_timer_ns(&self) -> Option<u64> {
        self.cfg.increase_timer_line_bytes?;
        self.state
            .iter()
            .filter_map(|st| {
                let period = st.timer_period_ns?;
                Some(st.timer_base_ns.map_or(0, |b| b.saturating_add(period)))
            })
            .min()
    }

    fn on_tick(&mut self, now_ns: u64, out: &mut Effects) {
        if self.cfg.increase_timer_line_bytes.is_none() {
            return;
        }
        for i in 0..self.state.len() {
            let Some(st) = self.state.get_mut(i) else {
                continue;
            };
            let Some(period) = st.timer_period_ns else {
                continue;
            };
            let base = *st.timer_base_ns.get_or_insert(now_ns);
            let n = now_ns.saturating_sub(base).checked_div(period).unwrap_or(0);
            if n == 0 {
                continue;
            }
            st.timer_base_ns = Some(base.saturating_add(n.saturating_mul(period)));
            st.bytes = 0;
            let port = self.ports.get(i).copied().unwrap_or_default();
            self.increase(i, port, n, Cause::TimerIncrease, now_ns, out);
        }
    }

    /// After a CNM charged to port `i`: the byte counter and the idle timer start again.
    fn restart_counters(&mut self, i: usize, now_ns: u64) {
        if let Some(st) = self.state.get_mut(i) {
            st.bytes = 0;
            st.timer_base_ns = Some(now_ns);
        }
    }

    fn increase(
        &mut self,
        i: usize,
        port: PortNo,
        n: u64,
        cause: Cause,
        now_ns: u64,
        out: &mut Effects,
    ) {
        if self
            .yield_ratio(i, now_ns)
            .is_some_and(|r| r <= 1.0 - self.cfg.yield_band)
        {
            self.counters.rises_held_by_yield = self.counters.rises_held_by_yield.saturating_add(n);
            return;
        }
        self.counters.increases = self.counters.increases.saturating_add(n);
        self.change(i, port, cause, out, |rates, p| rates.increase(p, n));
    }

    /// One decrease of P(port `i`) by `amount`, unless the port's cut hold-off since its last
    /// cut has not passed (then counted in `cuts_held_off`, P unchanged).
    fn decrease(
        &mut self,
        i: usize,
        port: PortNo,
        amount: f64,
        cause: Cause,
        now_ns: u64,
        out: &mut Effects,
    ) {
        if self
            .yield_ratio(i, now_ns)
            .is_some_and(|r| r >= 1.0 + self.cfg.yield_band)
        {
            self.counters.cuts_held_by_yield += 1;
            return;
        }
        if let Some(st) = self.state.get_mut(i) {
            if let (Some(hold), Some(at)) = (st.cut_holdoff_ns, st.cut_at_ns) {
                if now_ns.saturating_sub(at) < hold {
                    self.counters.cuts_held_off += 1;
                    return;
                }
            }
            st.cut_at_ns = Some(now_ns);
        }
        self.counters.decreases += 1;
        self.change(i, port, cause, out, |rates, p| rates.decrease(p, amount));
    }

    /// Applies `step` to port `i`'s P and reports the change, if any.
    fn change(
        &mut self,
        i: usize,
        port: PortNo,
        cause: Cause,
        out: &mut Effects,
        step: impl FnOnce(&Rates, f64) -> f64,
    ) {
        let Some(st) = self.state.get_mut(i) else {
            return;
        };
        let old = st.p;
        st.p = step(&self.rates, old);
        if st.p != old {
            out.push(PChange {
                port,
                old_percent: old,
                new_percent: st.p,
                cause,
            });
        }
    }
}

#[cfg(test)]
mod tests;
