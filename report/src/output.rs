//! The report's text outputs: `summary.csv`, `top-ports.csv` and `report.md`.

use std::fmt::Write as _;

use crate::analysis::{BoxStats, Report};

/// Non-finite values are written `nan`, as the simulator's CSVs do.
fn f(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.6}")
    } else {
        "nan".to_owned()
    }
}

fn stat(b: Option<&BoxStats>, g: impl Fn(&BoxStats) -> f64) -> f64 {
    b.map_or(f64::NAN, g)
}

/// `summary.csv`: one row per `(role, direction)`; FITF quartiles over non-zero rounds.
pub fn summary_csv(r: &Report) -> String {
    let mut s = String::from(
        "role,direction,intervals,nonzero_fraction,fitf_max_median,fitf_max_p90,fitf_max_max,fitf_mean_median\n",
    );
    for ((role, dir), c) in &r.classes {
        let (mx, mean) = (c.fitf_max.as_ref(), c.fitf_mean.as_ref());
        let _ = writeln!(
            s,
            "{role},{dir},{},{},{},{},{},{}",
            c.intervals,
            f(c.nonzero_fraction()),
            f(stat(mx, |b| b.median)),
            f(stat(mx, |b| b.p90)),
            f(stat(mx, |b| b.max)),
            f(stat(mean, |b| b.median)),
        );
    }
    s
}

/// `top-ports.csv`: the most stalled transmitters, most stalled first.
pub fn top_ports_csv(r: &Report) -> String {
    let mut s = String::from("switch,port,role,direction,fitf_mean\n");
    for p in &r.top {
        let _ = writeln!(
            s,
            "{},{},{},{},{}",
            p.switch,
            p.port,
            p.role,
            p.direction,
            f(p.fitf_mean)
        );
    }
    s
}

/// `roots.csv`: the congestion roots, busiest first.
pub fn roots_csv(r: &Report) -> String {
    let mut s = String::from("switch,port,role,direction,discards,utilisation,fitf_mean\n");
    for p in &r.roots {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{}",
            p.switch,
            p.port,
            p.role,
            p.direction,
            p.discards,
            f(p.utilisation),
            f(p.fitf_mean)
        );
    }
    s
}

fn m(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "–".to_owned()
    }
}

/// `report.md`: the class table with box-plot figures and outliers, and the ranking.
pub fn markdown(r: &Report) -> String {
    let mut s = format!(
        "# Forced idle time per port class\n\n{} records. FITF = Δxmit_wait / Δcycle per interval; \
         per-round statistics over non-zero rounds (max FITF of the round; mean of its non-zero \
         FITFs); outliers beyond 1.5×IQR of the quartiles.\n\n",
        r.records
    );
    s.push_str(
        "| role | dir | intervals | non-zero | rounds | non-zero rounds | max FITF q1 / median / q3 | p90 | max | outliers | mean FITF median |\n\
         |---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|\n",
    );
    for ((role, dir), c) in &r.classes {
        let mx = c.fitf_max.as_ref();
        let _ = writeln!(
            s,
            "| {role} | {dir} | {} | {:.1} % | {} | {} | {} / {} / {} | {} | {} | {} | {} |",
            c.intervals,
            100.0 * c.nonzero_fraction(),
            c.rounds,
            mx.map_or(0, |b| b.n),
            m(stat(mx, |b| b.q1)),
            m(stat(mx, |b| b.median)),
            m(stat(mx, |b| b.q3)),
            m(stat(mx, |b| b.p90)),
            m(stat(mx, |b| b.max)),
            mx.map_or(0, |b| b.outliers.len()),
            m(stat(c.fitf_mean.as_ref(), |b| b.median)),
        );
    }
    let _ = write!(
        s,
        "\n## Most stalled ports\n\n| switch | port | role | dir | mean FITF | utilisation |\n|---|---:|---|---|---:|---:|\n"
    );
    for p in &r.top {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            p.switch,
            p.port,
            p.role,
            p.direction,
            m(p.fitf_mean),
            m(p.utilisation)
        );
    }
    let _ = write!(
        s,
        "\n## Congestion roots\n\nTransmitters that dropped frames or were busy ≥ {} of the \
         time, most drops first. A saturated port of a lossless fabric always has credit and \
         never waits, so it is absent above; the ports above are its upstream victims.\n\n\
         | switch | port | role | dir | discards | utilisation | mean FITF |\n|---|---:|---|---|---:|---:|---:|\n",
        m(r.saturation)
    );
    for p in &r.roots {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            p.switch,
            p.port,
            p.role,
            p.direction,
            p.discards,
            m(p.utilisation),
            m(p.fitf_mean)
        );
    }
    s.push_str("\nBox plots: `fitf-max.png`, `fitf-mean.png`.\n");
    s
}
