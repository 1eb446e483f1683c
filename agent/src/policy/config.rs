//! The policy's configuration (`[policy]` of the agent's file): every constant of the QCN-SW
//! reaction point, with documented defaults and validation.

use fabricflow_proto::cnm::MAX_QNTZ_FB;
use serde::{Deserialize, Serialize};

use super::{UpdatePolicy, Variant};
use crate::drb::DrbConfig;
use crate::error::{as_f64, check, ConfigError};
use crate::link::PortLink;

/// Constants of the QCN-SW policy engine (DESIGN §5, QCN.md "QCN-SW constants").
///
/// The defaults are the configuration fabricflow-sim's sensitivity sweep picked for uniform and
/// ADV+1 traffic together on the 1 056-host reference Dragonfly at 40 Gb/s (sim/RESULTS.md §d:
/// `combined` with fabricflow's two additions, Fb age 20 µs; Gd 1/128 and Pmin 5 % as
/// published), with its increase rate (40 points per 30 000 octets) taken in half-size steps
/// (20 points per 15 000 octets), plus a byte limit of at least 0.8 drains of the port's buffer,
/// which changes nothing there and paces recovery on deep-buffered ports (Mininet's).
/// [`PolicyConfig::published`] gives the papers' constants (FOGSim / IEEE 802.1Qau) for
/// reproducing them. Every time constant is in octets of line time and every byte constant in
/// octets (or buffer drains), so one file serves every link rate: a port's
/// [`PortLink`](crate::link::PortLink) turns them into nanoseconds and octets.
///
/// Probabilities are in percent (0..=100), as in FOGSim's `portEnrouteMinProb`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Which reaction runs at this switch. Default `qcn-sw` (everything below but `drb`);
    /// `drb` runs [`crate::drb`] on the controller's multipath plan (`plan --multipath`);
    /// `static` never changes a weight (the hosts throttle: [`PolicyKind::Static`]).
    pub kind: PolicyKind,
    /// Which published variant runs. Default `combined` (source processing + feedback
    /// comparison): with `source_comparison` and Fb ageing it was the sweep's best; the
    /// published default is `base`.
    pub variant: Variant,
    /// How increases and decreases are applied. Default `aimd`, the published default.
    pub update: UpdatePolicy,
    /// Gd: multiplicative decrease per unit of QntzFb, P ← P·(1 − Gd·QntzFb). Default 1/128, the
    /// IEEE 802.1Qau value, so that R = 1 − Gd·QntzFb ∈ [0.508, 1]. Must keep Gd·63 ≤ 0.5.
    pub gd: f64,
    /// Additive decrease, in percentage points per unit of QntzFb (AIAD, MIAD):
    /// P ← P − ad_percent_per_fb·QntzFb. Default 100·Gd = 0.78125, so that a CNM at P = 100 cuts
    /// the same amount under AD as under MD (QntzFb 63 → −49.2 points). FOGSim subtracts Gd·QntzFb
    /// points (at most 0.49); set this to the value of `gd` to reproduce it exactly.
    pub ad_percent_per_fb: f64,
    /// Additive increase step, in percentage points (AIMD, AIAD). Default 20 (1 in `published`):
    /// from the 5 % floor back to 100 in 5 increases. With feedback comparison, source comparison
    /// and ageing deciding when to cut, fast recovery keeps uniform traffic minimal (sweep at
    /// 30 000 octets per increase, uniform@0.9: 0.67 with step 5, 0.71 with 10, 0.74 with 20,
    /// 0.76 with 40 and 60) while ADV+1 stays diverted; what matters is the rate of rise, so the
    /// default halves the step and the byte limit together: the same rate in finer steps
    /// (within ±3 % of +40 in most Mininet cells, +2 to +5 % on the fat-tree, the simulator's
    /// uniform cells at load 0.8–1.0 up to +0.8 %: mininet/README.md "Half-size steps"). The
    /// papers' tuned value is not public.
    pub increase_step_percent: f64,
    /// Multiplicative increase fraction x (MIMD, MIAD): P ← min(100, P·(1 + x)). Default 0.02:
    /// near P = 50 one increase moves P by one point, like the additive default. FOGSim multiplies
    /// by its R_AI; x = R_AI − 1.
    pub mi_increase_fraction: f64,
    /// B: bytes that must leave a port since its last CNM or increase to earn one increase.
    /// Default 15 000, with the 20-point step the sweep's 40 points per 30 000 (`published`:
    /// 150 000, the IEEE 802.1Qau reaction point's byte counter, QCN.md) — 3 µs of a busy
    /// 40 Gb/s port, 12 ms of a 10 Mb/s one: counted in octets, it follows the link rate by
    /// itself, so the same value serves both.
    pub byte_limit_bytes: u64,
    /// The byte limit in drains of the port's egress buffer (fabricflow's addition): a port's B
    /// is the larger of `byte_limit_bytes` and this many buffer drains (0 = `byte_limit_bytes`
    /// alone, the published rule). Default 0.8 (with the 20-point step: 1.6 drains per 40
    /// points). P should not come back before the queue that caused the cut can have drained
    /// and TCP answered it: the octet limit is 3.7 drains of the simulator's 4 096-octet buffers
    /// (unchanged by this default) but 0.2 of a Mininet port's 75 700, where P returned to 100 %
    /// before the bottleneck drained. The drain rule lifts Mininet's short ADV cells at
    /// 10 / 2.5 Mb/s by 6–19 % and costs Dragonfly(1,3,1) uniform 4–11 %, where the longer
    /// diversion does not pay (mininet/README.md, "The byte limit in buffer drains").
    pub byte_limit_buffer_drains: f64,
    /// Pmin: floor of P, in percent. Default 5: keeps ≈ 13 of the 255 weight quanta on the
    /// minimal port so the minimal path keeps being probed and its byte counter keeps running;
    /// under ADV+1 on the reference Dragonfly (p=4, a=8, h=4) at load 0.4 the minimal global
    /// link's fair share is ≈ 8 % of the group's traffic, above this floor.
    pub p_min_percent: f64,
    /// th1: feedback comparison increases P(p) when Fb(p) ≤ Fb_avg + th1 (QntzFb units).
    /// Default 0, as in FOGSim and DESIGN §5.
    pub fbcomp_th1: f64,
    /// th2: feedback comparison decreases P(p) when Fb(p) > Fb_avg + th2 (QntzFb units); nothing
    /// happens in between. Default 0. Must be ≥ 0 and ≥ th1.
    pub fbcomp_th2: f64,
    /// The idle-port increase timer, in octets of line time (absent = no timer, as in FOGSim):
    /// a port that has seen neither a CNM nor an increase for as long as it needs to send this
    /// many octets gets one increase per elapsed period on the next `Tick`. Default 200 000
    /// (40 µs at 40 Gb/s, 160 ms at 10 Mb/s): it brings back P on ports whose traffic stopped,
    /// which the byte counter cannot. Where the agent learns sent octets only every
    /// `runtime.port_stats_period_us`, the period is at least twice that (a busy port's octets
    /// may not have arrived yet).
    pub increase_timer_line_bytes: Option<u64>,
    /// Fb ageing, in octets of line time (fabricflow's addition, not in the papers; 0 = the
    /// published rule): with feedback comparison, a port's stored Fb older than the time the port
    /// needs to send this many octets counts as 0. Default 100 000 (20 µs at 40 Gb/s, a few CNM
    /// intervals of a congested port; 80 ms at 10 Mb/s). The published rule keeps every stored
    /// Fb forever, so after uniform congestion ends every port still holds a high Fb and a later
    /// adversarial pattern never rises above the average (fabricflow-sim, sim/RESULTS.md):
    /// ageing lets ports that stopped receiving CNMs drop out.
    pub fb_max_age_line_bytes: u64,
    /// Source comparison (fabricflow's addition; default true, false = the published rule): with
    /// source processing *and* feedback comparison (`combined`), a self-generated CNM goes
    /// through the same comparison as a received one (increase, dead band or decrease by
    /// Fb − Fb_avg) instead of a plain decrease, without being stored. The published rule's plain
    /// self decrease bypasses the comparison, so `combined` loses uniform throughput like
    /// `source-processing` does.
    pub source_comparison: bool,
    /// Source processing on the culprit's route only (fabricflow's addition; default true, false
    /// = the published rule): a self-generated CNM is charged only when the congested port is
    /// the culprit's minimal port from this switch (at an equal-cost decision point: one of its
    /// buckets, which is charged itself). A culprit sampled on another port was a detour or
    /// transit: charging the minimal port towards its destination with that port's Fb answers
    /// the detour's congestion on the wrong port (with `source_comparison`, mostly by raising P
    /// back onto the congested minimal path). Mininet, on route ÷ published: ADV cells +2 to
    /// +12 % in 10 of 13, −1 to −2 % in the others; uniform and hotspot 0.94–1.05
    /// (mininet/README.md "Source processing on the culprit's route").
    pub source_on_route: bool,
    /// What feedback comparison compares Fb(p) with (fabricflow's addition; default `both`;
    /// `fabric-average` is the published rule). `candidates`: the congestion of p's own
    /// non-minimal candidates instead of the mean over all fabric ports — per candidate port the
    /// larger of the Fb this switch's congestion point last found there and the Fb last received
    /// on it (both subject to Fb ageing), averaged over the candidates. Diverting only pays
    /// when the candidates are less congested than the minimal path; the fabric average cannot
    /// tell that when a switch injects few flows (most ports hold Fb 0, so every CNM is "above
    /// average"), as on Mininet's Dragonfly(2,4,2) under uniform traffic (mininet/README.md);
    /// the candidates alone cut too often where many flows keep them moderately congested
    /// (simulated Dragonfly(3,6,3), uniform at 0.8: 0.84 of minimal). `both` cuts only when p
    /// is more congested than the switch's average *and* its candidates, raises P only when p
    /// is at or below the average, and holds P in between: above average but no worse than
    /// where the traffic would go is no reason to move traffic either way. (Raising there, as
    /// the published rule does below its one reference, pulled traffic back onto a hopeless
    /// minimal path wherever the candidates carry other groups' transit, ADV+h: simulated
    /// Dragonfly(3,6,3) ADV+3 at 0.8, 0.266 raising, 0.289 holding; `sim/scripts/one-config.sh`.)
    pub fbcomp_reference: FbReference,
    /// How many times the candidates' congestion counts against the minimal port's before
    /// traffic moves (`candidates` and `both`): a detour crosses more congestion points than the
    /// minimal route it replaces (a Dragonfly's Valiant route two global links instead of one),
    /// so, as in UGAL's queue × hops comparison, equal congestion per hop is no reason to divert.
    /// Default 1 (per hop, as published). 2 (a Dragonfly detour's two global links for one)
    /// helps the simulator — Dragonfly(4,8,4) / (3,6,3), uniform at load 0.8: 0.968 / 0.978 of
    /// minimal with 1, 0.992 / 1.001 with 2, ADV+1 and ADV+h within 0.7 %
    /// (`sim/scripts/one-config.sh`) — and costs Mininet's Dragonfly(1,2,3) at 10 / 2.5 5–12 %
    /// in three of four patterns, the other matrix cells within ±3 % (mininet/README.md "The
    /// matrix"). Equal-cost decision points (every candidate minimal) always compare 1:1.
    pub fbcomp_nonminimal_factor: f64,
    /// Smoothing of the feedback comparison (fabricflow's addition; 0 = off, the comparison
    /// reads single Fb values): the weight of a new Fb in each port's running mean, which the
    /// comparison reads for the charged port and its candidates instead of the CNM's Fb and the
    /// candidates' last values; a cut is the CNM's Fb times the mean's relative excess over the
    /// reference. A mean decays towards 0 with the Fb age limit as time constant. Single values
    /// of equally congested ports exceed one another half the time, and on a Dragonfly whose
    /// global links are the bottleneck of minimal routing too (p > h) every such cut diverts
    /// traffic onto two global links: simulated, uniform at 0.8 on five such Dragonflies
    /// 0.887–0.936 of minimal with 0, 0.963–0.990 with 0.1, its ADV+h cells −7 to +2 %
    /// (sim/RESULTS.md §g "Tapered Dragonflies"). Default 0: on Mininet it takes Dragonfly(2,4,2)
    /// ADV+1 at 10 / 2.5 from 0.95× to 0.59× Valiant (mininet/README.md "A smoothed feedback
    /// comparison").
    pub fbcomp_smoothing: f64,
    /// Whether a comparison's cut needs the port persistently above its reference
    /// (fabricflow's addition; default false): each port keeps a running mean of its excess
    /// Fb(p) − reference over the CNMs compared on it (weight 1/16 per CNM, restarted once older
    /// than the Fb age limit), and a CNM above the reference cuts only while that mean, before
    /// it, is positive; otherwise P holds (counted as dead band). Two equally congested ports'
    /// single Fb values exceed one another about half the time, and on a Dragonfly whose global
    /// links bound minimal routing too (p > h) each such cut diverts traffic onto two global
    /// links; a port that minimal traffic overloads stays above its candidates on average, and
    /// its first CNMs cut as before. Simulated, 62 cells of 11 Dragonflies: 6 cells more than
    /// 5 % under the better of minimal and Valiant without it (lowest 0.870), 1 with it (0.911);
    /// 40 cells of 5 further Dragonflies with hotspot, seed 2: 10 (0.293) and 3 (0.465)
    /// (sim/RESULTS.md §g "A cut needs a persistent excess"). Off: on Mininet, where TCP keeps
    /// the candidates' queues full, it is lower in eight of eleven side-by-side cell runs (by
    /// 0.6–6 %; Dragonfly(2,4,2) ADV+1 by 2.5–3.7 %), equal in two and higher in one
    /// (mininet/README.md "A cut needs a persistent excess").
    pub fbcomp_persistent_excess: bool,
    /// Whether a CNM that the comparison answers by holding P (the dead band between its two
    /// references) restarts the port's byte counter and idle timer (the published rule restarts
    /// on every CNM). QCN's reaction point counts octets since its last *rate decrease*, and there
    /// every CNM decreases; with feedback comparison a held CNM decreases nothing, and restarting
    /// the counter on it keeps P from rising on a port whose queue TCP keeps full, however its
    /// candidates' queues compare. Default false (fabricflow's change: the counter runs through a
    /// held CNM); with `detour_cnm_feedback` it lifts the Mininet matrix's uniform cells that sat
    /// under minimal (mininet/README.md "Equal-cost buckets, held CNMs and detours' CNMs").
    pub dead_band_restarts_counter: bool,
    /// Whether a CNM that arrives on a port other than the one it is charged to — the CNM of a
    /// culprit this switch sent on a detour, back through the candidate it left by — also counts
    /// as that candidate's congestion for the comparison, as the switch's own congestion point's
    /// findings do (fabricflow's addition; default true). Without it a candidate's congestion is
    /// only what is known at this switch (its own queue, CNMs charged to it), not the remote
    /// global link its detour crosses.
    pub detour_cnm_feedback: bool,
    /// Whether a detour's CNM (one that arrives on a port other than the one it would be
    /// charged to: the CNM of a culprit this switch diverted) is also charged to the decision
    /// point's minimal port (default true, the published rule, which has no other place for
    /// it). Charged, a congested detour cuts the minimal port's P against candidates whose mean
    /// it raises only in part, so traffic moves further onto the detours it reports congested;
    /// false keeps it as its candidate's congestion only (`detour_cnm_feedback`). Off, it costs
    /// Mininet's Dragonfly(1,3,1) uniform at 10 / 2.5 4 % (every seed lower) and moves
    /// Dragonfly(1,2,3) ADV+1 by +2 % (mininet/README.md "A detour's CNM left uncharged"), so it
    /// stays on.
    pub charge_detour_cnms: bool,
    /// Whether the byte counter's increase asks the comparison first (fabricflow's addition;
    /// with feedback comparison only): a port whose own fresh congestion — the larger of the Fb
    /// last charged to it by a CNM and the Fb last observed on it (its switch's CP, detours'
    /// CNMs), both subject to Fb ageing — is above the reference a CNM would be cut against
    /// earns no increase for its bytes (they are consumed). The cut is already proportional to
    /// the excess over that reference; the rise, without this, comes every byte limit whatever
    /// the candidates carry, so P on a port that owns a bottleneck swings between the floor and
    /// 100 %. The idle timer, which serves ports whose traffic stopped, is not gated. Default
    /// false: it lifts Mininet's Dragonfly ADV cells 3–10 % (Dragonfly(2,4,2) ADV+h 1.07× →
    /// 1.17× Valiant) and costs Dragonfly(1,3,1) uniform 15 %, Dragonfly(2,3,2) hotspot 4 %,
    /// and the simulator's uniform traffic at load 1.0 2.5–3 % (mininet/README.md "The rise
    /// asking the comparison"); with CNMs charged at the culprit's switch, +4–5 % on
    /// Dragonfly(2,4,2)'s ADV cells and −13 % on Dragonfly(1,3,1) uniform.
    pub rise_follows_comparison: bool,
    /// The cut hold-off in drains of the port's egress buffer (fabricflow's addition; 0 = off,
    /// the published rule): after a decrease of P(p), CNMs charged to p within the time p's link
    /// needs to send this many buffers cut nothing (their Fb is stored and compared as usual,
    /// and the byte counter runs on, as through the dead band). A cut shows in the queue only
    /// once the queue has drained and the sources answered; every CNM before that reports the
    /// congestion already answered, and compounding those cuts drives P to the floor (as TCP
    /// takes one window reduction per round trip, not one per loss). Default 0: one drain lifts
    /// Mininet's Dragonfly(1,3,1) uniform 4 % and costs the adversarial cells 9–25 %, where P
    /// must stay low (mininet/README.md "A cut hold-off").
    pub cut_holdoff_buffer_drains: f64,
    /// Where a received CNM is charged (fabricflow's addition; the published rule, false,
    /// charges it where it first lands on a switch with decision points): true charges it only
    /// at the culprit's own switch — the one whose decision point chose the culprit's route —
    /// and every other switch relays it there (DESIGN §5, "Where a CNM is charged, and
    /// relayed"). On a Dragonfly the CNM of a detour's *second* global link first lands in the
    /// intermediate group, whose switches' decision points steer their own hosts' traffic, not
    /// the culprit's; the simulator delivers every CNM to the culprit's switch
    /// (mininet/README.md "CNMs charged at the culprit's switch" has the measured cells).
    pub cnm_at_culprit_switch: bool,
    /// The yield comparison (fabricflow's addition, off by default): a decision point's
    /// octets through its minimal choice against what its installed weights would give it if
    /// every path delivered alike ([`Event::DecisionBytes`](super::Event::DecisionBytes),
    /// from the groups' bucket counters), summed per minimal port over a window. Where TCP
    /// keeps every queue full, the CP's Fb says that a port is used, not whether it carries
    /// more than its share; the delivered octets per unit of weight say which path gives each
    /// stream more. A ratio at or above `1 + yield_band` holds the port's cuts (its streams do
    /// at least as well as the detours'), one at or below `1 − yield_band` withholds its
    /// increases; in between, and without a fresh ratio from a window in which both the minimal
    /// and the other choices carried octets, P moves as without it.
    pub yield_comparison: bool,
    /// The yield comparison's window, octets of the port's line time; a ratio stays fresh for
    /// two windows.
    pub yield_window_line_bytes: u64,
    /// The yield comparison's dead band around 1 (a fraction).
    pub yield_band: f64,
    /// DRB's constants (`[policy.drb]`), used when `kind = "drb"`.
    pub drb: DrbConfig,
}

/// Which reaction a switch runs (`policy.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyKind {
    /// QCN-SW: P(p) per decision point (this module).
    #[default]
    QcnSw,
    /// DRB: multipath expansion per destination switch ([`crate::drb`]).
    Drb,
    /// No switch reaction: the weights stay as the controller's plan installed them. The
    /// switch's congestion point still marks, and every CNM it generates — one about a host of
    /// this very switch too — enters the pipeline towards the culprit's host, whose throttler
    /// (`fabricflow-agent throttle`, [`crate::throttle`]) is the reaction point: the InfiniBand
    /// CC baseline, with the controller's `cnm_to_hosts`. CNMs reaching the agent are counted
    /// and ignored.
    Static,
}

/// The reference feedback comparison measures Fb(p) against (see `PolicyConfig::fbcomp_reference`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FbReference {
    /// Fb_avg over all fabric ports (DESIGN §5, FOGSim).
    #[default]
    FabricAverage,
    /// The mean congestion of p's non-minimal candidate ports.
    Candidates,
    /// The larger of the two: p must be more congested than both the switch's average and its
    /// own candidates before traffic moves off it.
    Both,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            variant: Variant::Combined,
            increase_step_percent: 20.0,
            byte_limit_bytes: 15_000,
            byte_limit_buffer_drains: 0.8,
            fb_max_age_line_bytes: 100_000,
            increase_timer_line_bytes: Some(200_000),
            source_comparison: true,
            source_on_route: true,
            fbcomp_reference: FbReference::Both,
            dead_band_restarts_counter: false,
            detour_cnm_feedback: true,
            charge_detour_cnms: true,
            cnm_at_culprit_switch: true,
            ..PolicyConfig::published()
        }
    }
}

impl PolicyConfig {
    /// The published constants: variant `base`, Gd 1/128, step 1 point per 150 000 octets
    /// (IEEE 802.1Qau's byte counter), Pmin 5 %, thresholds 0, no timer, neither of fabricflow's
    /// additions.
    pub fn published() -> Self {
        PolicyConfig {
            variant: Variant::Base,
            update: UpdatePolicy::Aimd,
            gd: 1.0 / 128.0,
            ad_percent_per_fb: 100.0 / 128.0,
            increase_step_percent: 1.0,
            mi_increase_fraction: 0.02,
            byte_limit_bytes: 150_000,
            byte_limit_buffer_drains: 0.0,
            p_min_percent: 5.0,
            fbcomp_th1: 0.0,
            fbcomp_th2: 0.0,
            increase_timer_line_bytes: None,
            fb_max_age_line_bytes: 0,
            source_comparison: false,
            source_on_route: false,
            fbcomp_reference: FbReference::FabricAverage,
            fbcomp_nonminimal_factor: 1.0,
            fbcomp_smoothing: 0.0,
            fbcomp_persistent_excess: false,
            dead_band_restarts_counter: true,
            detour_cnm_feedback: false,
            charge_detour_cnms: true,
            rise_follows_comparison: false,
            cut_holdoff_buffer_drains: 0.0,
            cnm_at_culprit_switch: false,
            yield_comparison: false,
            yield_window_line_bytes: 400_000,
            yield_band: 0.1,
            kind: PolicyKind::QcnSw,
            drb: DrbConfig::default(),
        }
    }

    /// The byte limit B of a port on `link`: `byte_limit_bytes`, or `byte_limit_buffer_drains`
    /// of its buffer where that is more.
    pub fn byte_limit_for(&self, link: &PortLink) -> u64 {
        let drains = if self.byte_limit_buffer_drains > 0.0 {
            link.buffer_fraction_bytes(self.byte_limit_buffer_drains)
        } else {
            0
        };
        self.byte_limit_bytes.max(drains).max(1)
    }

    /// Checks every constant; the policy engine accepts only validated configurations.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let max_fb = f64::from(MAX_QNTZ_FB);
        check(
            self.gd.is_finite() && self.gd > 0.0 && self.gd * max_fb <= 0.5,
            "policy.gd",
            self.gd,
            "0 < gd and gd·63 ≤ 0.5 (R = 1 − gd·QntzFb must stay in [0.5, 1])",
        )?;
        check(
            self.ad_percent_per_fb.is_finite()
                && self.ad_percent_per_fb > 0.0
                && self.ad_percent_per_fb * max_fb <= 100.0,
            "policy.ad_percent_per_fb",
            self.ad_percent_per_fb,
            "0 < ad_percent_per_fb and ad_percent_per_fb·63 ≤ 100",
        )?;
        check(
            self.increase_step_percent.is_finite()
                && self.increase_step_percent > 0.0
                && self.increase_step_percent <= 100.0,
            "policy.increase_step_percent",
            self.increase_step_percent,
            "0 < step ≤ 100",
        )?;
        check(
            self.mi_increase_fraction.is_finite()
                && self.mi_increase_fraction > 0.0
                && self.mi_increase_fraction <= 1.0,
            "policy.mi_increase_fraction",
            self.mi_increase_fraction,
            "0 < x ≤ 1 (P ← P·(1 + x) at most doubles)",
        )?;
        check(
            self.byte_limit_bytes > 0,
            "policy.byte_limit_bytes",
            as_f64(self.byte_limit_bytes),
            "> 0",
        )?;
        check(
            self.byte_limit_buffer_drains.is_finite()
                && (0.0..=1000.0).contains(&self.byte_limit_buffer_drains),
            "policy.byte_limit_buffer_drains",
            self.byte_limit_buffer_drains,
            "0 ≤ drains ≤ 1000",
        )?;
        check(
            self.cut_holdoff_buffer_drains.is_finite()
                && (0.0..=1000.0).contains(&self.cut_holdoff_buffer_drains),
            "policy.cut_holdoff_buffer_drains",
            self.cut_holdoff_buffer_drains,
            "0 ≤ drains ≤ 1000",
        )?;
        check(
            self.p_min_percent.is_finite()
                && self.p_min_percent >= 0.0
                && self.p_min_percent < 100.0,
            "policy.p_min_percent",
            self.p_min_percent,
            "0 ≤ Pmin < 100",
        )?;
        if self.update.multiplicative_increase() && self.p_min_percent <= 0.0 {
            return Err(ConfigError::Inconsistent(
                "a multiplicative-increase policy (mimd, miad) needs p_min_percent > 0: P = 0 never grows",
            ));
        }
        check(
            self.fbcomp_th1.is_finite() && self.fbcomp_th1.abs() <= max_fb,
            "policy.fbcomp_th1",
            self.fbcomp_th1,
            "−63 ≤ th1 ≤ 63",
        )?;
        check(
            self.fbcomp_th2.is_finite() && self.fbcomp_th2 >= 0.0 && self.fbcomp_th2 <= max_fb,
            "policy.fbcomp_th2",
            self.fbcomp_th2,
            "0 ≤ th2 ≤ 63 (a negative th2 would turn the decrease into an increase)",
        )?;
        if self.fbcomp_th1 > self.fbcomp_th2 {
            return Err(ConfigError::Inconsistent(
                "policy.fbcomp_th1 must not exceed policy.fbcomp_th2",
            ));
        }
        check(
            self.fbcomp_nonminimal_factor.is_finite()
                && (1.0..=8.0).contains(&self.fbcomp_nonminimal_factor),
            "policy.fbcomp_nonminimal_factor",
            self.fbcomp_nonminimal_factor,
            "1 ≤ factor ≤ 8",
        )?;
        check(
            self.fbcomp_smoothing.is_finite() && (0.0..=1.0).contains(&self.fbcomp_smoothing),
            "policy.fbcomp_smoothing",
            self.fbcomp_smoothing,
            "0 ≤ weight ≤ 1",
        )?;
        check(
            self.yield_window_line_bytes > 0,
            "policy.yield_window_line_bytes",
            as_f64(self.yield_window_line_bytes),
            "> 0",
        )?;
        check(
            self.yield_band.is_finite() && (0.0..1.0).contains(&self.yield_band),
            "policy.yield_band",
            self.yield_band,
            "0 ≤ band < 1",
        )?;
        self.drb.validate()?;
        if let Some(t) = self.increase_timer_line_bytes {
            check(
                t > 0,
                "policy.increase_timer_line_bytes",
                as_f64(t),
                "> 0 (omit the key to disable)",
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_published_are_the_papers_constants() {
        let p = PolicyConfig::default();
        p.validate().unwrap();
        assert_eq!(p.gd, 1.0 / 128.0);
        assert_eq!(p.variant, Variant::Combined);
        assert_eq!(p.update, UpdatePolicy::Aimd);
        assert!(p.source_comparison);
        assert!(p.source_on_route);
        assert_eq!(p.fb_max_age_line_bytes, 100_000);
        // The sweep's rate of rise (40 points per 30 000 octets) in half-size steps.
        assert_eq!(
            p.increase_step_percent / as_f64(p.byte_limit_bytes),
            40.0 / 30_000.0
        );
        let published = PolicyConfig::published();
        published.validate().unwrap();
        assert_eq!(published.variant, Variant::Base);
        assert_eq!(published.increase_step_percent, 1.0);
        assert_eq!(published.byte_limit_bytes, 150_000);
        assert_eq!(published.byte_limit_buffer_drains, 0.0);
        assert!(!published.source_comparison);
        assert!(!published.source_on_route);
        assert_eq!(published.fb_max_age_line_bytes, 0);
        assert_eq!(published.increase_timer_line_bytes, None);
    }

    #[test]
    fn gd_must_keep_r_in_half_to_one() {
        // 1/126 gives R = 0.5 exactly at QntzFb 63: allowed.
        let ok = PolicyConfig {
            gd: 1.0 / 126.0,
            ..PolicyConfig::default()
        };
        ok.validate().unwrap();
        let bad = PolicyConfig {
            gd: 1.0 / 120.0,
            ..PolicyConfig::default()
        };
        assert!(matches!(
            bad.validate(),
            Err(ConfigError::OutOfRange {
                field: "policy.gd",
                ..
            })
        ));
        let zero = PolicyConfig {
            gd: 0.0,
            ..PolicyConfig::default()
        };
        assert!(zero.validate().is_err());
        let nan = PolicyConfig {
            gd: f64::NAN,
            ..PolicyConfig::default()
        };
        assert!(nan.validate().is_err());
    }

    #[test]
    fn other_ranges() {
        let d = PolicyConfig::default;
        assert!(PolicyConfig {
            p_min_percent: 100.0,
            ..d()
        }
        .validate()
        .is_err());
        assert!(PolicyConfig {
            p_min_percent: -1.0,
            ..d()
        }
        .validate()
        .is_err());
        PolicyConfig {
            p_min_percent: 0.0,
            ..d()
        }
        .validate()
        .unwrap();
        assert!(matches!(
            PolicyConfig {
                p_min_percent: 0.0,
                update: UpdatePolicy::Mimd,
                ..d()
            }
            .validate(),
            Err(ConfigError::Inconsistent(_))
        ));
        assert!(PolicyConfig {
            byte_limit_bytes: 0,
            ..d()
        }
        .validate()
        .is_err());
        assert!(PolicyConfig {
            increase_step_percent: 0.0,
            ..d()
        }
        .validate()
        .is_err());
        assert!(PolicyConfig {
            mi_increase_fraction: 0.0,
            ..d()
        }
        .validate()
        .is_err());
        assert!(PolicyConfig {
            fbcomp_th2: -1.0,
            fbcomp_th1: -2.0,
            ..d()
        }
        .validate()
        .is_err());
        assert!(matches!(
            PolicyConfig {
                fbcomp_th1: 3.0,
                fbcomp_th2: 2.0,
                ..d()
            }
            .validate(),
            Err(ConfigError::Inconsistent(_))
        ));
        PolicyConfig {
            fbcomp_th1: -3.0,
            fbcomp_th2: 2.0,
            ..d()
        }
        .validate()
        .unwrap();
        assert!(PolicyConfig {
            increase_timer_line_bytes: Some(0),
            ..d()
        }
        .validate()
        .is_err());
        for bad in [-0.5, f64::NAN, f64::INFINITY, 1001.0] {
            assert!(PolicyConfig {
                byte_limit_buffer_drains: bad,
                ..d()
            }
            .validate()
            .is_err());
        }
    }

    #[test]
    fn the_byte_limit_is_the_larger_of_octets_and_buffer_drains() {
        let shallow = PortLink {
            rate_bps: 40e9,
            buffer_bytes: 4096,
        };
        let deep = PortLink {
            rate_bps: 2.5e6,
            buffer_bytes: 75_700,
        };
        let on = PolicyConfig::default();
        // 0.8 × 4 096 = 3 277 < 15 000: a shallow buffer keeps the octet limit.
        assert_eq!(on.byte_limit_for(&shallow), 15_000);
        assert_eq!(on.byte_limit_for(&deep), 60_560);
        let off = PolicyConfig {
            byte_limit_buffer_drains: 0.0,
            ..on
        };
        assert_eq!(off.byte_limit_for(&shallow), 15_000);
        assert_eq!(off.byte_limit_for(&deep), 15_000);
    }
}
