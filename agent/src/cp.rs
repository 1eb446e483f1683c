//! The QCN congestion point (IEEE 802.1Qau), pure: the maths shared by the agent's emulated CP
//! on Open vSwitch and the fabric simulator.
//!
//! Per egress queue (QCN.md "Congestion point"):
//! - on each sample, Qoff = Q − Qeq, Qδ = Q − Qold, **Fb = −(Qoff + w·Qδ)** clamped to
//!   [−Qeq·(2w+1), 0], then Qold ← Q; a CNM is sent only when Fb < 0;
//! - QntzFb = round(|Fb|·63 / (Qeq·(2w+1))), 0..=63 (FOGSim truncates instead; the standard's
//!   pseudo-code and QCN.md round);
//! - the next sample is taken after a number of enqueued octets that shrinks as QntzFb grows:
//!   150, 75, 50, 37.5, 30, 25, 21.5, 18.5 KB for QntzFb >> 3 = 0..7, scaled here by
//!   `sampling_base_bytes / 150 000` for small emulated queues, and randomised by ±jitter
//!   (default 15 %) from a random value the caller supplies: no global RNG, so runs replay.

mod config;

pub use config::{CpConfig, CpParams};

use fabricflow_proto::cnm::MAX_QNTZ_FB;
use fabricflow_proto::MacAddr;

use crate::error::ConfigError;

/// The 802.1Qau sampling intervals, octets, indexed by QntzFb >> 3 (at the standard base).
pub const SAMPLING_TABLE_BYTES: [u64; 8] = [
    150_000, 75_000, 50_000, 37_500, 30_000, 25_000, 21_500, 18_500,
];

/// The base the table above is expressed at; `sampling_base_bytes` scales it.
pub const STANDARD_SAMPLING_BASE_BYTES: u64 = 150_000;

/// One sample's feedback.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Feedback {
    /// Qoff = Q − Qeq, octets.
    pub q_off_bytes: i64,
    /// Qδ = Q − Qold, octets.
    pub q_delta_bytes: i64,
    /// Fb = −(Qoff + w·Qδ), clamped to [−Qeq·(2w+1), 0].
    pub fb: f64,
    /// round(|Fb|·63 / (Qeq·(2w+1))), what the CNM carries.
    pub qntz_fb: u8,
}

impl Feedback {
    /// Whether this sample calls for a CNM (Fb < 0).
    pub fn congested(&self) -> bool {
        self.fb < 0.0
    }

    /// Qoff for the CNM's informational `cnmQOffset` field (i16, saturating).
    pub fn cnm_q_offset(&self) -> i16 {
        saturate_i16(self.q_off_bytes)
    }

    /// Qδ for the CNM's informational `cnmQDelta` field (i16, saturating).
    pub fn cnm_q_delta(&self) -> i16 {
        saturate_i16(self.q_delta_bytes)
    }
}

fn saturate_i16(v: i64) -> i16 {
    i16::try_from(v).unwrap_or(if v < 0 { i16::MIN } else { i16::MAX })
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[allow(clippy::cast_precision_loss)] // queue lengths are far below 2^53 octets
fn to_f64(v: i64) -> f64 {
    v as f64
}

/// The queue length a sample of a tail-drop queue stands for: its backlog now, or its whole
/// buffer when it dropped frames since the port's previous sample. A drop means the queue was
/// full in between; TCP streams that lost frames back off and leave the queue short while the
/// link starves, so a sample drawn after the burst would report the congestion as gone.
pub fn sampled_queue_bytes(
    backlog_bytes: u64,
    dropped_since_last_sample: bool,
    buffer_bytes: u64,
) -> u64 {
    if dropped_since_last_sample {
        backlog_bytes.max(buffer_bytes)
    } else {
        backlog_bytes
    }
}

/// A peer port's drop rate and load, for [`drop_excess`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeerDrops {
    /// Drops per second (a running mean).
    pub drops_per_s: f64,
    /// Octets sent per second over the line rate (a running mean).
    pub load: f64,
}

/// How many times its peers' drop rate a port drops at (`runtime.emulated_cp.drop_scaled_fb`):
/// `own` over the mean of the `peers` (the switch's other ports of the same line rate) that
/// carry at least `min_load` of their line, both raised by `floor` so that a port dropping
/// next to silent peers counts by how far it is above a negligible rate, not infinitely. 1
/// when no peer qualifies: a port whose peers are idle is compared with nothing, since a lone
/// TCP flow drops as surely as an overloaded port does.
pub fn drop_excess(own: f64, peers: &[PeerDrops], floor: f64, min_load: f64) -> f64 {
    if !own.is_finite() || !floor.is_finite() || floor <= 0.0 {
        return 1.0;
    }
    let (mut sum, mut n) = (0.0, 0u32);
    for p in peers
        .iter()
        .filter(|p| p.drops_per_s.is_finite() && p.load >= min_load)
    {
        sum += p.drops_per_s.max(0.0);
        n += 1;
    }
    if n == 0 {
        return 1.0;
    }
    (own.max(0.0) + floor) / (sum / f64::from(n) + floor)
}

/// A congested sample's QntzFb scaled by its port's drop excess over `onset` (only upwards, at
/// most [`MAX_QNTZ_FB`]). With TCP a full queue gives the same Fb whatever load is offered to
/// it, while its drop rate grows with that load: the excess carries that into the CNM.
pub fn drop_scaled_qntz_fb(qntz_fb: u8, excess: f64, onset: f64) -> u8 {
    let scale = excess / onset;
    if !scale.is_finite() || scale <= 1.0 {
        return qntz_fb;
    }
    let v = (f64::from(qntz_fb) * scale).round();
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let q = v.min(f64::from(MAX_QNTZ_FB)) as u8;
    q.max(qntz_fb)
}

/// Feedback of a sample with queue length `q_bytes` and previous sample's length `q_old_bytes`.
pub fn feedback(cfg: &CpParams, q_bytes: u64, q_old_bytes: u64) -> Feedback {
    let q = to_i64(q_bytes);
    let q_off = q.saturating_sub(to_i64(cfg.qeq_bytes));
    let q_delta = q.saturating_sub(to_i64(q_old_bytes));
    let fb_max = fb_magnitude_max(cfg);
    let raw = -(to_f64(q_off) + cfg.w * to_f64(q_delta));
    // `max`/`min` rather than `clamp`: no panic even for a non-validated configuration.
    let fb = raw.max(-fb_max).min(0.0);
    let q_fb = if fb_max > 0.0 {
        (-fb * f64::from(MAX_QNTZ_FB) / fb_max).round()
    } else {
        0.0
    };
    // In [0, 63] by construction; the clamp makes the `as` conversion obviously lossless.
    let qntz_fb = q_fb.max(0.0).min(f64::from(MAX_QNTZ_FB)) as u8;
    Feedback {
        q_off_bytes: q_off,
        q_delta_bytes: q_delta,
        fb,
        qntz_fb,
    }
}

/// |Fb| at the clamp: Qeq·(2w+1).
pub fn fb_magnitude_max(cfg: &CpParams) -> f64 {
    #[allow(clippy::cast_precision_loss)] // Qeq ≤ 2^40 by validation
    let qeq = cfg.qeq_bytes as f64;
    qeq * (2.0 * cfg.w + 1.0)
}

/// The sampling interval after a sample with `qntz_fb`, before randomisation, octets.
pub fn sampling_interval_bytes(cfg: &CpParams, qntz_fb: u8) -> u64 {
    let idx = usize::from(qntz_fb.min(MAX_QNTZ_FB) >> 3);
    let standard = SAMPLING_TABLE_BYTES
        .get(idx)
        .copied()
        .unwrap_or(STANDARD_SAMPLING_BASE_BYTES);
    // u128 so that base·table never overflows; the result is ≤ base.
    let scaled = u128::from(standard) * u128::from(cfg.sampling_base_bytes)
        / u128::from(STANDARD_SAMPLING_BASE_BYTES);
    u64::try_from(scaled).unwrap_or(u64::MAX).max(1)
}

/// The sampling interval randomised by ±`sampling_jitter_fraction` using `random`, a uniformly
/// distributed `u32` from the caller's RNG: 0 gives −jitter, 2^31 gives the nominal interval,
/// `u32::MAX` gives just under +jitter. At least 1 octet.
pub fn randomised_interval_bytes(cfg: &CpParams, qntz_fb: u8, random: u32) -> u64 {
    let nominal = sampling_interval_bytes(cfg, qntz_fb);
    let u = f64::from(random) / 4_294_967_296.0; // [0, 1)
    let factor = 1.0 + cfg.sampling_jitter_fraction * (2.0 * u - 1.0);
    #[allow(clippy::cast_precision_loss)] // intervals are far below 2^53 octets
    let v = (nominal as f64 * factor).round();
    if v.is_finite() && v >= 1.0 {
        // Below nominal·2 ≤ 2^41 by validation, so the conversion is exact.
        v as u64
    } else {
        1
    }
}

/// The congestion point of one egress queue.
#[derive(Debug, Clone)]
pub struct CongestionPoint {
    cfg: CpParams,
    q_old_bytes: u64,
    until_sample_bytes: u64,
    last: Option<Feedback>,
}

impl CongestionPoint {
    /// A congestion point whose first sample comes after a randomised base interval.
    pub fn new(cfg: CpParams, random: u32) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let until_sample_bytes = randomised_interval_bytes(&cfg, 0, random);
        Ok(CongestionPoint {
            cfg,
            q_old_bytes: 0,
            until_sample_bytes,
            last: None,
        })
    }

    /// A frame of `frame_bytes` octets was enqueued; the queue now holds `q_bytes`. When the
    /// sampling interval is used up this frame is the sample: returns its feedback (send a CNM to
    /// the frame's source iff [`Feedback::congested`]), updates Qold and draws the next interval
    /// from `random`. Otherwise returns `None`.
    pub fn on_enqueue(&mut self, frame_bytes: u64, q_bytes: u64, random: u32) -> Option<Feedback> {
        self.until_sample_bytes = self.until_sample_bytes.saturating_sub(frame_bytes);
        if self.until_sample_bytes > 0 {
            return None;
        }
        Some(self.sample(q_bytes, random))
    }

    /// Takes a sample now regardless of the byte count (e.g. a periodic poll of the emulated
    /// queue): computes the feedback, sets Qold ← Q, and restarts the sampling interval.
    pub fn sample(&mut self, q_bytes: u64, random: u32) -> Feedback {
        let fb = feedback(&self.cfg, q_bytes, self.q_old_bytes);
        self.q_old_bytes = q_bytes;
        self.until_sample_bytes = randomised_interval_bytes(&self.cfg, fb.qntz_fb, random);
        self.last = Some(fb);
        fb
    }

    /// The nominal (not randomised) interval the last sample set: what a pre-sampler sizes
    /// itself to ([`presample_scale`]).
    pub fn nominal_interval_bytes(&self) -> u64 {
        sampling_interval_bytes(&self.cfg, self.last.map_or(0, |f| f.qntz_fb))
    }

    /// Octets still to be enqueued before the next sample.
    pub fn until_sample_bytes(&self) -> u64 {
        self.until_sample_bytes
    }

    /// Qold: the queue length at the last sample.
    pub fn q_old_bytes(&self) -> u64 {
        self.q_old_bytes
    }

    /// The last sample's feedback.
    pub fn last(&self) -> Option<Feedback> {
        self.last
    }

    /// The port's constants.
    pub fn params(&self) -> &CpParams {
        &self.cfg
    }
}

/// Frames shorter than this are not data (TCP ACKs, ARP): they do not make a host a source.
pub const CENSUS_MIN_FRAME_BYTES: u64 = 512;

/// The emulated CP's kernel pre-sampler ([`presample_scale`]): a frame of `len` octets becomes
/// a sample with probability `len / interval`, decided by one 32-bit random draw against
/// `len · scale`, so every octet sent has one chance in `interval` of making its frame the
/// sample — the 802.1Qau sampling rate for any mix of frame sizes, with one frame copied to the
/// CP per sample and none in between. The draw randomises the interval, as the standard's
/// jitter does. The scale for a nominal interval of `interval_bytes`: ⌊2³² / interval⌋, at
/// least 1. A frame at least `interval_bytes` long is always a sample (the filter checks
/// that before multiplying, so `len · scale` never exceeds 2³²).
pub fn presample_scale(interval_bytes: u64) -> u32 {
    let scale = (1u64 << 32) / interval_bytes.max(1);
    u32::try_from(scale).unwrap_or(u32::MAX).max(1)
}

/// The hosts that recently sent data through one port (`cp.min_sources`): the oversubscription
/// a full queue alone does not show. Time is the caller's, in µs.
#[derive(Debug, Clone)]
pub struct SourceCensus {
    window_us: u64,
    /// Each source with the time of its last data frame; a handful of entries on any real port.
    seen: Vec<(MacAddr, u64)>,
}

/// Beyond this many remembered sources the stale ones are dropped on every observation, so a
/// flood of distinct source addresses costs bounded memory.
const CENSUS_PRUNE_AT: usize = 256;

impl SourceCensus {
    /// An empty census forgetting a source `window_us` after its last data frame.
    pub fn new(window_us: u64) -> Self {
        SourceCensus {
            window_us,
            seen: Vec::new(),
        }
    }

    /// A frame of `frame_bytes` octets from `src` crossed the port at `now_us`.
    pub fn observe(&mut self, src: MacAddr, frame_bytes: u64, now_us: u64) {
        if frame_bytes < CENSUS_MIN_FRAME_BYTES {
            return;
        }
        if let Some(e) = self.seen.iter_mut().find(|(m, _)| *m == src) {
            e.1 = now_us;
            return;
        }
        if self.seen.len() >= CENSUS_PRUNE_AT {
            self.prune(now_us);
        }
        if self.seen.len() < CENSUS_PRUNE_AT {
            self.seen.push((src, now_us));
        }
    }

    /// The distinct sources seen within the window before `now_us` (forgets the older ones).
    pub fn count(&mut self, now_us: u64) -> usize {
        self.prune(now_us);
        self.seen.len()
    }

    /// Whether a congested sample at `now_us` may yield a CNM, with the sources counted: always
    /// for `min_sources` ≤ 1 (802.1Qau; nothing counted, 0), else when at least `min_sources`
    /// were seen within the window.
    pub fn admits(&mut self, min_sources: u32, now_us: u64) -> (bool, usize) {
        if min_sources <= 1 {
            return (true, 0);
        }
        let n = self.count(now_us);
        (n >= usize::try_from(min_sources).unwrap_or(usize::MAX), n)
    }

    fn prune(&mut self, now_us: u64) {
        let w = self.window_us;
        self.seen.retain(|&(_, t)| now_us.saturating_sub(t) <= w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn drop_excess_scales_only_above_the_peers() {
        let peer = |drops_per_s, load| PeerDrops { drops_per_s, load };
        // No peer: nothing to compare with.
        assert_eq!(drop_excess(10.0, &[], 0.2, 0.0), 1.0);
        // Seven times the peers' mean (the floor small beside both).
        let e = drop_excess(7.0, &[peer(1.0, 0.9), peer(1.0, 0.9)], 0.0001, 0.0);
        assert!((e - 7.0).abs() < 0.01, "{e}");
        // Silent peers: the floor bounds the excess.
        let silent = [peer(0.0, 0.9), peer(0.0, 0.9)];
        assert!((drop_excess(1.8, &silent, 0.2, 0.0) - 10.0).abs() < 1e-9);
        // Below the peers: an excess under 1, which never lowers Fb.
        assert!(drop_excess(1.0, &[peer(3.0, 0.9)], 0.2, 0.0) < 1.0);
        // Only loaded peers count: an idle peer leaves nothing to compare with, and among
        // a loaded and an idle one only the loaded one sets the mean.
        assert_eq!(drop_excess(5.0, &[peer(0.0, 0.1)], 0.2, 0.7), 1.0);
        let mixed = [peer(0.8, 0.8), peer(0.0, 0.1)];
        assert!((drop_excess(5.0, &mixed, 0.2, 0.7) - 5.2).abs() < 1e-9);
        assert_eq!(drop_excess(f64::NAN, &[peer(1.0, 0.9)], 0.2, 0.0), 1.0);
        assert_eq!(drop_scaled_qntz_fb(26, 0.5, 1.0), 26);
        assert_eq!(drop_scaled_qntz_fb(26, 1.5, 1.0), 39);
        assert_eq!(drop_scaled_qntz_fb(26, 7.0, 1.0), MAX_QNTZ_FB);
        assert_eq!(drop_scaled_qntz_fb(26, f64::NAN, 1.0), 26);
        // The onset: an excess up to it leaves Fb alone, above it scales by the rest.
        assert_eq!(drop_scaled_qntz_fb(26, 2.0, 2.5), 26);
        assert_eq!(drop_scaled_qntz_fb(26, 3.75, 2.5), 39);
    }

    const MID: u32 = 1 << 31;

    fn std_cfg() -> CpParams {
        CpParams::standard()
    }

    #[test]
    fn presample_scale_is_the_per_octet_probability_in_a_32_bit_draw() {
        // One chance in `interval` per octet: a full frame at 802.1Qau's 150 KB passes with
        // probability 1514 / 150 000.
        let k = presample_scale(150_000);
        assert_eq!(k, 28_633);
        let p = f64::from(1514 * k) / 4_294_967_296.0;
        assert!((p - 1514.0 / 150_000.0).abs() < 1e-6, "{p}");
        // The harness's base at QntzFb 0 and the shortest interval of 802.1Qau's table.
        assert_eq!(presample_scale(15_000), 286_331);
        assert_eq!(presample_scale(18_500), 232_160);
        // Degenerate intervals stay usable: 0 octets is "every octet", 2^40 never overflows.
        assert_eq!(presample_scale(0), u32::MAX);
        assert_eq!(presample_scale(1), u32::MAX);
        assert_eq!(presample_scale(1 << 40), 1);
    }

    /// Below the interval, len · scale < 2^32: the filter's multiplication cannot wrap.
    #[test]
    fn presample_product_fits_below_the_interval() {
        for interval in [2u64, 512, 1514, 9000, 15_000, 150_000, 1 << 20] {
            let k = u64::from(presample_scale(interval));
            assert!((interval - 1) * k < 1 << 32, "{interval}");
        }
    }

    #[test]
    fn nominal_interval_follows_the_last_sample() {
        let mut cp = CongestionPoint::new(std_cfg(), MID).unwrap();
        assert_eq!(cp.nominal_interval_bytes(), 150_000);
        cp.sample(400_000, MID); // QntzFb 63
        assert_eq!(cp.nominal_interval_bytes(), 18_500);
        cp.sample(0, MID);
        assert_eq!(cp.nominal_interval_bytes(), 150_000);
    }

    #[test]
    fn a_drop_since_the_last_sample_reads_the_queue_as_full() {
        assert_eq!(sampled_queue_bytes(3_000, false, 75_700), 3_000);
        assert_eq!(sampled_queue_bytes(3_000, true, 75_700), 75_700);
        // A backlog above the stated buffer (a larger qdisc limit) is kept.
        assert_eq!(sampled_queue_bytes(90_000, true, 75_700), 90_000);
    }

    #[test]
    fn feedback_exact_values() {
        let cfg = std_cfg(); // Qeq 26 000, w 2: |Fb| max = 130 000
        assert_eq!(fb_magnitude_max(&cfg), 130_000.0);
        // Q = 52 000 growing from 39 000: Qoff 26 000, Qδ 13 000, Fb = −52 000.
        let f = feedback(&cfg, 52_000, 39_000);
        assert_eq!((f.q_off_bytes, f.q_delta_bytes), (26_000, 13_000));
        assert_eq!(f.fb, -52_000.0);
        assert_eq!(f.qntz_fb, 25); // round(25.2)
        assert!(f.congested());
        // At the set point and steady: Fb = 0, no CNM.
        let f = feedback(&cfg, 26_000, 26_000);
        assert_eq!((f.fb, f.qntz_fb), (0.0, 0));
        assert!(!f.congested());
        // Below the set point: positive Fb clamps to 0.
        let f = feedback(&cfg, 10_000, 20_000);
        assert_eq!(f.q_off_bytes, -16_000);
        assert_eq!(f.q_delta_bytes, -10_000);
        assert_eq!((f.fb, f.qntz_fb), (0.0, 0));
        // Far above: clamped to −130 000 → 63.
        let f = feedback(&cfg, 400_000, 0);
        assert_eq!((f.fb, f.qntz_fb), (-130_000.0, 63));
        assert_eq!(f.cnm_q_offset(), i16::MAX);
        // Above the set point but draining fast: Qoff + 2·Qδ = 4 000 − 20 000 < 0 → no CNM.
        let f = feedback(&cfg, 30_000, 40_000);
        assert_eq!((f.fb, f.qntz_fb), (0.0, 0));
        // Rounding: |Fb| = 1 032 → 1032·63/130000 = 0.5001 → 1; 1 031 → 0.49964 → 0.
        assert_eq!(feedback(&cfg, 26_000 + 1_032, 26_000 + 1_032).qntz_fb, 1);
        let f = feedback(&cfg, 26_000 + 1_031, 26_000 + 1_031);
        assert_eq!(f.qntz_fb, 0);
        assert!(f.congested(), "Fb < 0 even if it quantises to 0");
        assert_eq!(f.cnm_q_offset(), 1_031);
        assert_eq!(f.cnm_q_delta(), 0);
    }

    #[test]
    fn feedback_with_small_emulated_queue() {
        let cfg = CpParams {
            qeq_bytes: 15_000,
            ..std_cfg()
        }; // |Fb| max 75 000
        let f = feedback(&cfg, 30_000, 22_500); // −(15 000 + 15 000)
        assert_eq!(f.fb, -30_000.0);
        assert_eq!(f.qntz_fb, 25); // 30 000·63/75 000 = 25.2
    }

    #[test]
    fn sampling_table() {
        let cfg = std_cfg();
        let expect = [
            150_000, 75_000, 50_000, 37_500, 30_000, 25_000, 21_500, 18_500,
        ];
        for (band, &bytes) in expect.iter().enumerate() {
            for low in 0..8u8 {
                let q = (band as u8) << 3 | low;
                assert_eq!(sampling_interval_bytes(&cfg, q), bytes, "QntzFb {q}");
            }
        }
        assert_eq!(sampling_interval_bytes(&cfg, 200), 18_500);
        // Scaled for a small emulated queue: base 15 000 → a tenth of every entry.
        let small = CpParams {
            sampling_base_bytes: 15_000,
            ..std_cfg()
        };
        assert_eq!(sampling_interval_bytes(&small, 0), 15_000);
        assert_eq!(sampling_interval_bytes(&small, 24), 3_750);
        assert_eq!(sampling_interval_bytes(&small, 63), 1_850);
    }

    #[test]
    fn randomisation_is_plus_minus_15_percent() {
        let cfg = std_cfg();
        assert_eq!(randomised_interval_bytes(&cfg, 0, MID), 150_000);
        assert_eq!(randomised_interval_bytes(&cfg, 0, 0), 127_500);
        assert_eq!(randomised_interval_bytes(&cfg, 0, u32::MAX), 172_500);
        assert_eq!(randomised_interval_bytes(&cfg, 63, 0), 15_725);
        let none = CpParams {
            sampling_jitter_fraction: 0.0,
            ..cfg
        };
        assert_eq!(randomised_interval_bytes(&none, 9, 12345), 75_000);
    }

    #[test]
    fn congestion_point_samples_and_updates_qold() {
        let mut cp = CongestionPoint::new(std_cfg(), MID).unwrap();
        assert_eq!(cp.until_sample_bytes(), 150_000);
        for _ in 0..99 {
            assert_eq!(cp.on_enqueue(1_500, 40_000, MID), None);
        }
        // The 100th frame of 1 500 octets completes 150 000: sample.
        let f = cp.on_enqueue(1_500, 40_000, MID).unwrap();
        // Qoff 14 000, Qδ 40 000 (Qold 0): Fb = −94 000 → round(45.55) = 46.
        assert_eq!(f.fb, -94_000.0);
        assert_eq!(f.qntz_fb, 46);
        assert_eq!(cp.q_old_bytes(), 40_000);
        assert_eq!(cp.last(), Some(f));
        // 46 >> 3 = 5: next interval 25 KB.
        assert_eq!(cp.until_sample_bytes(), 25_000);
        // A forced sample with the queue steady: Fb = −14 000 → round(6.78) = 7 → 150 KB.
        let f = cp.sample(40_000, MID);
        assert_eq!(f.fb, -14_000.0);
        assert_eq!(f.qntz_fb, 7);
        assert_eq!(cp.until_sample_bytes(), 150_000);
        assert!(CongestionPoint::new(
            CpParams {
                qeq_bytes: 0,
                ..std_cfg()
            },
            0
        )
        .is_err());
        assert_eq!(cp.params().w, 2.0);
    }

    #[test]
    fn census_counts_data_sources_within_the_window() {
        let mac = |b: u8| MacAddr([2, 0, 0, 0, 0, b]);
        let mut c = SourceCensus::new(1_000);
        assert_eq!(c.count(0), 0);
        c.observe(mac(1), 1_514, 0);
        c.observe(mac(1), 1_514, 100);
        c.observe(mac(2), 1_514, 200);
        c.observe(mac(3), 66, 300); // an ACK: not a source
        c.observe(mac(4), CENSUS_MIN_FRAME_BYTES - 1, 300); // just below: not data either
        assert_eq!(c.count(300), 2);
        // mac(1) last sent at 100: still inside at 1 100, gone at 1 101.
        assert_eq!(c.count(1_100), 2);
        assert_eq!(c.count(1_101), 1);
        c.observe(mac(1), CENSUS_MIN_FRAME_BYTES, 1_150);
        assert_eq!(c.count(1_200), 2);
        assert_eq!(c.count(5_000), 0);
    }

    #[test]
    fn census_admits_only_crowded_ports() {
        let mac = |b: u8| MacAddr([2, 0, 0, 0, 0, b]);
        let mut c = SourceCensus::new(1_000);
        assert_eq!(c.admits(1, 0), (true, 0), "1 = off: every congested sample");
        assert_eq!(c.admits(3, 0), (false, 0));
        c.observe(mac(1), 1_514, 0);
        c.observe(mac(2), 1_514, 0);
        assert_eq!(c.admits(3, 10), (false, 2));
        assert_eq!(c.admits(2, 10), (true, 2));
        c.observe(mac(3), 1_514, 20);
        assert_eq!(c.admits(3, 30), (true, 3));
        // The first two fall out of the window: back below the threshold.
        assert_eq!(c.admits(3, 1_001), (false, 1));
        assert_eq!(c.admits(u32::MAX, 1_001), (false, 1));
    }

    #[test]
    fn census_memory_is_bounded() {
        let mut c = SourceCensus::new(10);
        for i in 0..1_000u32 {
            let b = i.to_be_bytes();
            c.observe(MacAddr([2, 0, b[0], b[1], b[2], b[3]]), 1_514, 0);
        }
        assert_eq!(c.count(0), CENSUS_PRUNE_AT);
        // Once the old ones are stale a new source finds room again.
        c.observe(MacAddr([2, 1, 0, 0, 0, 0]), 1_514, 100);
        assert_eq!(c.count(100), 1);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn feedback_is_in_range(q in any::<u64>(), old in any::<u64>(), qeq in 1u64..1_000_000, w in 0.1f64..8.0, r in any::<u32>()) {
            let cfg = CpParams { qeq_bytes: qeq, w, ..CpParams::standard() };
            let f = feedback(&cfg, q, old);
            prop_assert!(f.fb <= 0.0 && f.fb >= -fb_magnitude_max(&cfg));
            prop_assert!(f.qntz_fb <= 63);
            let n = randomised_interval_bytes(&cfg, f.qntz_fb, r);
            let nominal = sampling_interval_bytes(&cfg, f.qntz_fb) as f64;
            prop_assert!(n as f64 >= (nominal * 0.85).floor() && n as f64 <= (nominal * 1.15).ceil());
        }
    }
}
