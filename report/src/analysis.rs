//! The study's statistics, computed in one pass over the records with state per port and per
//! class (Alali et al., "A Measurement Study of Congestion in an InfiniBand Network", §III-D).
//!
//! # Terms
//! - **Transmitter**: one `(switch, port, direction)` of `port-stats.csv`.
//! - **Interval**: two consecutive records of one transmitter, in file order; its FITF (forced
//!   idle time fraction) is Δ`xmit_wait_cycles` / Δ`cycle` — exact in the simulator, where the
//!   wait counter and the cycle come from the same clock (the study's τ·ΔW/Δt, without its
//!   turnaround error). From a live fabric (`fabricflow-agent port-stats`) both columns are
//!   nanoseconds of the sampler's one clock and the wait column is egress backlog time, a
//!   different quantity from XmitWait (agent/src/port_stats.rs).
//! - **Round**: a transmitter's run of consecutive intervals, at most `round_intervals` long
//!   (default 99: the study's 100 readings of one port), cut early where the transmitter's
//!   counters go backwards or its cycle does not advance (a reset, a restarted sampler). The
//!   study drew a random port per round; the simulator reads every port continuously, so each
//!   port's sequence is cut into rounds of that length.
//! - A **non-zero** interval has Δwait > 0; a non-zero round has at least one. As in the study,
//!   a round's max FITF is its largest interval FITF and its mean FITF the mean of its non-zero
//!   interval FITFs; box-plot statistics are over non-zero rounds only.
//! - **Class**: a `(role, direction)` pair, the study's (switch category × up/down).
//!
//! Memory: one small state per transmitter and two `f64` per non-zero round (exact quantiles);
//! rounds are records / `round_intervals`, so a 30 M-record file keeps about 5 MB of values.

use std::collections::{BTreeMap, HashMap};

use crate::ReportError;

/// One row of `port-stats.csv`, borrowed from the reader's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub cycle: u64,
    pub switch: &'a str,
    pub port: u32,
    pub role: &'a str,
    pub direction: &'a str,
    pub xmit_wait_cycles: u64,
    pub xmit_data_phits: u64,
    /// Frames dropped (0 where the input has no such column).
    pub xmit_discards: u64,
}

/// How records are grouped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Intervals per round (≥ 1).
    pub round_intervals: u32,
    /// Utilisation from which a transmitter counts as a congestion root (in (0, 1]).
    pub saturation: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            round_intervals: 99,
            saturation: 0.95,
        }
    }
}

/// A class: `(role, direction)`.
pub type Class = (String, String);

#[derive(Debug, Clone)]
struct PortState {
    class: usize,
    last: Option<(u64, u64, u64, u64)>,
    /// Intervals in the current round, its non-zero intervals, their FITF sum, its max FITF.
    round_len: u32,
    round_nonzero: u32,
    round_sum: f64,
    round_max: f64,
    wait: u64,
    data: u64,
    discards: u64,
    cycles: u64,
}

#[derive(Debug, Clone, Default)]
struct ClassState {
    intervals: u64,
    nonzero: u64,
    rounds: u64,
    round_max: Vec<f64>,
    round_mean: Vec<f64>,
}

/// Accumulates records; [`Analyzer::finish`] gives the [`Report`].
#[derive(Debug, Default)]
pub struct Analyzer {
    opts: Options,
    /// `switch,port,direction` → index into `ports`.
    index: HashMap<Vec<u8>, usize>,
    key: Vec<u8>,
    ports: Vec<(String, u32, PortState)>,
    classes: Vec<(Class, ClassState)>,
    records: u64,
}

impl Analyzer {
    /// An empty analysis.
    pub fn new(opts: Options) -> Result<Analyzer, ReportError> {
        if opts.round_intervals == 0 {
            return Err(ReportError::Options("round_intervals must be ≥ 1".into()));
        }
        if !(opts.saturation > 0.0 && opts.saturation <= 1.0) {
            return Err(ReportError::Options(format!(
                "saturation must be in (0, 1], not {}",
                opts.saturation
            )));
        }
        Ok(Analyzer {
            opts,
            ..Analyzer::default()
        })
    }

    /// Records seen so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Takes the next record in file order. `line` (1-based) is for errors.
    pub fn push(&mut self, r: &Record<'_>, line: u64) -> Result<(), ReportError> {
        self.records += 1;
        self.key.clear();
        self.key.extend_from_slice(r.switch.as_bytes());
        self.key.push(b',');
        self.key.extend_from_slice(&r.port.to_le_bytes());
        self.key.extend_from_slice(r.direction.as_bytes());
        let i = match self.index.get(self.key.as_slice()) {
            Some(&i) => i,
            None => self.add_port(r),
        };
        let Some((_, _, st)) = self.ports.get_mut(i) else {
            return Ok(());
        };
        if self
            .classes
            .get(st.class)
            .is_some_and(|((role, _), _)| role != r.role)
        {
            return Err(ReportError::RoleChanged {
                line,
                switch: r.switch.to_owned(),
                port: r.port,
            });
        }
        let now = (
            r.cycle,
            r.xmit_wait_cycles,
            r.xmit_data_phits,
            r.xmit_discards,
        );
        let prev = st.last.replace(now);
        let Some((c0, w0, d0, x0)) = prev else {
            return Ok(());
        };
        let class = self.classes.get_mut(st.class).map(|(_, c)| c);
        let Some(class) = class else { return Ok(()) };
        if r.cycle <= c0
            || r.xmit_wait_cycles < w0
            || r.xmit_data_phits < d0
            || r.xmit_discards < x0
        {
            // A reset or restart: the interval is unknown and the round ends.
            close_round(st, class);
            return Ok(());
        }
        let dt = r.cycle - c0;
        let dw = r.xmit_wait_cycles - w0;
        let fitf = dw as f64 / dt as f64;
        class.intervals += 1;
        st.wait += dw;
        st.data += r.xmit_data_phits - d0;
        st.discards += r.xmit_discards - x0;
        st.cycles += dt;
        st.round_len += 1;
        if dw > 0 {
            class.nonzero += 1;
            st.round_nonzero += 1;
            st.round_sum += fitf;
            st.round_max = st.round_max.max(fitf);
        }
        if st.round_len >= self.opts.round_intervals {
            close_round(st, class);
        }
        Ok(())
    }

    fn add_port(&mut self, r: &Record<'_>) -> usize {
        let class = match self
            .classes
            .iter()
            .position(|((role, dir), _)| role == r.role && dir == r.direction)
        {
            Some(c) => c,
            None => {
                self.classes.push((
                    (r.role.to_owned(), r.direction.to_owned()),
                    ClassState::default(),
                ));
                self.classes.len() - 1
            }
        };
        self.ports.push((
            r.switch.to_owned(),
            r.port,
            PortState {
                class,
                last: None,
                round_len: 0,
                round_nonzero: 0,
                round_sum: 0.0,
                round_max: 0.0,
                wait: 0,
                data: 0,
                discards: 0,
                cycles: 0,
            },
        ));
        let i = self.ports.len() - 1;
        self.index.insert(self.key.clone(), i);
        i
    }

    /// Closes every open round and computes the tables; `top` is how many ports to rank in each
    /// ranking, of `direction` only when given (above saturation every blocked host's `rx` waits
    /// almost always, so `tx` ranks the switch ports alone).
    pub fn finish(mut self, top: usize, direction: Option<&str>) -> Report {
        for (_, _, st) in &mut self.ports {
            if let Some((_, c)) = self.classes.get_mut(st.class) {
                close_round(st, c);
            }
        }
        let names: Vec<Class> = self.classes.iter().map(|(k, _)| k.clone()).collect();
        let classes: BTreeMap<Class, ClassSummary> = self
            .classes
            .into_iter()
            .map(|(k, c)| {
                let s = ClassSummary {
                    intervals: c.intervals,
                    nonzero_intervals: c.nonzero,
                    rounds: c.rounds,
                    fitf_max: BoxStats::of(c.round_max),
                    fitf_mean: BoxStats::of(c.round_mean),
                };
                (k, s)
            })
            .collect();
        let mut ports: Vec<PortSummary> = self
            .ports
            .into_iter()
            .filter(|(_, _, st)| st.cycles > 0)
            .filter_map(|(switch, port, st)| {
                let (role, dir) = names.get(st.class).cloned().unwrap_or_default();
                (direction.is_none() || direction == Some(dir.as_str()))
                    .then_some((switch, port, st, role, dir))
            })
            .map(|(switch, port, st, role, direction)| PortSummary {
                switch,
                port,
                role,
                direction,
                fitf_mean: st.wait as f64 / st.cycles as f64,
                utilisation: st.data as f64 / st.cycles as f64,
                discards: st.discards,
            })
            .collect();
        let by_name = |a: &PortSummary, b: &PortSummary| {
            a.switch
                .cmp(&b.switch)
                .then(a.port.cmp(&b.port))
                .then_with(|| a.direction.cmp(&b.direction))
        };
        let mut roots: Vec<PortSummary> = ports
            .iter()
            .filter(|p| p.utilisation >= self.opts.saturation || p.discards > 0)
            .cloned()
            .collect();
        roots.sort_by(|a, b| {
            b.discards
                .cmp(&a.discards)
                .then(b.utilisation.total_cmp(&a.utilisation))
                .then(a.fitf_mean.total_cmp(&b.fitf_mean))
                .then_with(|| by_name(a, b))
        });
        roots.truncate(top);
        ports.sort_by(|a, b| {
            b.fitf_mean
                .total_cmp(&a.fitf_mean)
                .then_with(|| by_name(a, b))
        });
        ports.truncate(top);
        Report {
            records: self.records,
            classes,
            top: ports,
            roots,
            saturation: self.opts.saturation,
        }
    }
}

fn close_round(st: &mut PortState, class: &mut ClassState) {
    if st.round_len > 0 {
        class.rounds += 1;
        if st.round_nonzero > 0 {
            class.round_max.push(st.round_max);
            class
                .round_mean
                .push(st.round_sum / f64::from(st.round_nonzero));
        }
    }
    st.round_len = 0;
    st.round_nonzero = 0;
    st.round_sum = 0.0;
    st.round_max = 0.0;
}

/// Box-plot statistics of a sample: quartiles (linear interpolation between order statistics),
/// p90, whiskers at the furthest values within 1.5×IQR of the quartiles, and the outliers
/// beyond them.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxStats {
    pub n: usize,
    pub min: f64,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub p90: f64,
    pub max: f64,
    pub whisker_low: f64,
    pub whisker_high: f64,
    pub outliers: Vec<f64>,
}

impl BoxStats {
    /// `None` for an empty sample; NaNs are dropped.
    pub fn of(mut v: Vec<f64>) -> Option<BoxStats> {
        v.retain(|x| !x.is_nan());
        v.sort_by(f64::total_cmp);
        let (&min, &max) = (v.first()?, v.last()?);
        let q = |p: f64| quantile(&v, p);
        let (q1, median, q3, p90) = (q(0.25), q(0.5), q(0.75), q(0.9));
        let iqr = q3 - q1;
        let (lo, hi) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
        let inside = |x: &&f64| **x >= lo && **x <= hi;
        let whisker_low = v.iter().find(inside).copied().unwrap_or(q1);
        let whisker_high = v.iter().rev().find(inside).copied().unwrap_or(q3);
        let outliers = v.iter().copied().filter(|x| *x < lo || *x > hi).collect();
        Some(BoxStats {
            n: v.len(),
            min,
            q1,
            median,
            q3,
            p90,
            max,
            whisker_low,
            whisker_high,
            outliers,
        })
    }
}

/// The `p`-quantile of sorted `v` (type 7, R's default: linear between order statistics).
fn quantile(v: &[f64], p: f64) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let frac = h - lo as f64;
    let a = v.get(lo).copied().unwrap_or(f64::NAN);
    let b = v.get(lo + 1).copied().unwrap_or(a);
    a + frac * (b - a)
}

/// One class's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassSummary {
    pub intervals: u64,
    pub nonzero_intervals: u64,
    pub rounds: u64,
    /// Per non-zero round: max FITF (the study's Fig. 6) and mean non-zero FITF (Fig. 7).
    pub fitf_max: Option<BoxStats>,
    pub fitf_mean: Option<BoxStats>,
}

impl ClassSummary {
    /// Share of intervals with a non-zero wait (NaN without intervals).
    pub fn nonzero_fraction(&self) -> f64 {
        if self.intervals == 0 {
            f64::NAN
        } else {
            self.nonzero_intervals as f64 / self.intervals as f64
        }
    }
}

/// One transmitter in the ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct PortSummary {
    pub switch: String,
    pub port: u32,
    pub role: String,
    pub direction: String,
    /// Σ Δwait / Σ Δcycle over all its intervals (the interval-weighted mean FITF).
    pub fitf_mean: f64,
    /// Σ Δdata / Σ Δcycle: the share of the link's capacity it used.
    pub utilisation: f64,
    /// Σ Δdiscards: frames it dropped (0 in the lossless simulator).
    pub discards: u64,
}

/// Everything the outputs show.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub records: u64,
    /// By `(role, direction)`, in name order.
    pub classes: BTreeMap<Class, ClassSummary>,
    /// The most stalled transmitters, by mean FITF (ties by switch and port): the *victims*.
    /// A saturated link always has credit, so it never waits and is not among them.
    pub top: Vec<PortSummary>,
    /// The congestion roots: transmitters that drop frames (a lossy fabric's congestion points,
    /// which back-pressure nobody) or are busy at least `saturation` of the time (a lossless
    /// one's, whose upstream ports are the ones in `top`); most drops first, then busiest, then
    /// least stalled.
    pub roots: Vec<PortSummary>,
    /// The utilisation threshold `roots` used.
    pub saturation: f64,
}
