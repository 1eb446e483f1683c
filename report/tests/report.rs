//! The report's figures on small hand-made inputs whose answers are known.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use fabricflow_report::output::{roots_csv, summary_csv, top_ports_csv};
use fabricflow_report::plot::{box_plot, Figure};
use fabricflow_report::{input, Analyzer, BoxStats, Options, ReportError};

const HEADER: &str = "cycle,switch,port,role,direction,xmit_wait_cycles,xmit_data_phits\n";

fn report(csv: &str, round_intervals: u32, direction: Option<&str>) -> fabricflow_report::Report {
    let mut a = Analyzer::new(Options {
        round_intervals,
        ..Options::default()
    })
    .unwrap();
    input::read_into(csv.as_bytes(), &mut a).unwrap();
    a.finish(10, direction)
}

/// Two transmitters read every 100 cycles. Port a: waits 0, 50, 0, 100 cycles in its four
/// intervals (FITF 0, 0.5, 0, 1); port b never waits. Rounds of two intervals: a's rounds are
/// [0, 0.5] and [0, 1], both non-zero; b's two rounds are zero.
#[test]
fn intervals_rounds_and_fitf_follow_the_study() {
    let mut csv = String::from(HEADER);
    for (i, w) in [0, 0, 50, 50, 150].iter().enumerate() {
        csv += &format!("{},s1,3,up,tx,{w},{}\n", i * 100, i * 80);
        csv += &format!("{},s2,1,down,tx,7,{}\n", i * 100, i * 100);
    }
    let r = report(&csv, 2, None);
    assert_eq!(r.records, 10);
    let up = &r.classes[&("up".to_owned(), "tx".to_owned())];
    assert_eq!((up.intervals, up.nonzero_intervals, up.rounds), (4, 2, 2));
    let mx = up.fitf_max.as_ref().unwrap();
    assert_eq!((mx.n, mx.min, mx.max, mx.median), (2, 0.5, 1.0, 0.75));
    let mean = up.fitf_mean.as_ref().unwrap();
    assert_eq!((mean.min, mean.max), (0.5, 1.0));
    let down = &r.classes[&("down".to_owned(), "tx".to_owned())];
    assert_eq!(
        (down.intervals, down.nonzero_intervals, down.rounds),
        (4, 0, 2)
    );
    assert!(down.fitf_max.is_none());
    assert_eq!(
        summary_csv(&r),
        "role,direction,intervals,nonzero_fraction,fitf_max_median,fitf_max_p90,fitf_max_max,fitf_mean_median\n\
         down,tx,4,0.000000,nan,nan,nan,nan\n\
         up,tx,4,0.500000,0.750000,0.950000,1.000000,0.750000\n"
    );
    // a: 150 wait cycles in 400, 320 phits; b: none.
    assert_eq!(
        top_ports_csv(&r),
        "switch,port,role,direction,fitf_mean\ns1,3,up,tx,0.375000\ns2,1,down,tx,0.000000\n"
    );
    assert_eq!(r.top[0].utilisation, 0.8);
    let only_rx = report(&csv, 2, Some("rx"));
    assert!(only_rx.top.is_empty());
}

/// A counter going backwards (a reset) is no interval and ends the round.
#[test]
fn a_reset_ends_the_round_and_is_not_an_interval() {
    let csv = format!(
        "{HEADER}0,s,1,global,tx,0,0\n100,s,1,global,tx,20,10\n200,s,1,global,tx,5,0\n300,s,1,global,tx,15,10\n"
    );
    let r = report(&csv, 99, None);
    let c = &r.classes[&("global".to_owned(), "tx".to_owned())];
    assert_eq!((c.intervals, c.rounds), (2, 2));
    let mx = c.fitf_max.as_ref().unwrap();
    assert_eq!((mx.n, mx.min, mx.max), (2, 0.1, 0.2));
}

/// Quartiles interpolate between order statistics; 1.5×IQR fences find the outlier.
#[test]
fn box_stats_quartiles_and_outliers() {
    let b = BoxStats::of(vec![0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 5.0]).unwrap();
    assert!((b.q1 - 0.3).abs() < 1e-12 && (b.median - 0.5).abs() < 1e-12);
    assert!((b.q3 - 0.7).abs() < 1e-12);
    assert_eq!(b.outliers, vec![5.0]);
    assert_eq!((b.whisker_low, b.whisker_high), (0.1, 0.8));
    assert!(BoxStats::of(Vec::new()).is_none());
}

#[test]
fn malformed_input_is_a_typed_error_with_its_line() {
    let mut a = Analyzer::new(Options::default()).unwrap();
    let e = input::read_into("cycle,switch\n0,s\n".as_bytes(), &mut a).unwrap_err();
    assert!(matches!(e, ReportError::Header { .. }), "{e}");
    let bad = format!("{HEADER}0,s,1,up,tx,0,0\n100,s,1,up,tx,-3,0\n");
    let e = input::read_into(bad.as_bytes(), &mut a).unwrap_err();
    assert!(
        matches!(
            e,
            ReportError::Field {
                line: 3,
                field: "xmit_wait_cycles",
                ..
            }
        ),
        "{e}"
    );
    let changed = format!("{HEADER}0,s,1,up,tx,0,0\n100,s,1,down,tx,0,0\n");
    let mut a = Analyzer::new(Options::default()).unwrap();
    let e = input::read_into(changed.as_bytes(), &mut a).unwrap_err();
    assert!(matches!(e, ReportError::RoleChanged { line: 3, .. }), "{e}");
    assert!(Analyzer::new(Options {
        round_intervals: 0,
        ..Options::default()
    })
    .is_err());
    for saturation in [0.0, 1.5, f64::NAN] {
        assert!(Analyzer::new(Options {
            saturation,
            ..Options::default()
        })
        .is_err());
    }
}

#[test]
fn box_plots_are_png_files() {
    let mut csv = String::from(HEADER);
    for i in 0..20u64 {
        csv += &format!("{},s1,3,up,tx,{},0\n", i * 10, i * i);
        csv += &format!("{},s2,1,host,rx,{},0\n", i * 10, i * 3);
    }
    let r = report(&csv, 4, None);
    let dir = std::env::temp_dir().join(format!("fabricflow-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (fig, name) in [(Figure::Max, "max.png"), (Figure::Mean, "mean.png")] {
        let p = dir.join(name);
        box_plot(&r, fig, &p).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert!(bytes.len() > 5_000, "{name}: {} bytes", bytes.len());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The congestion roots are the saturated transmitters, busiest first, whatever they wait:
/// g (always sending, never waiting) is the root; l (stalled, half busy) its victim, ranked
/// first among the stalled ports but not a root; h (96 % busy) is a root after g.
#[test]
fn roots_are_the_saturated_transmitters_and_victims_the_stalled_ones() {
    let mut csv = String::from(HEADER);
    for i in 0..5u64 {
        csv += &format!("{},g,1,global,tx,0,{}\n", i * 100, i * 100);
        csv += &format!("{},l,2,local,tx,{},{}\n", i * 100, i * 80, i * 50);
        csv += &format!("{},h,3,host,tx,{},{}\n", i * 100, i * 2, i * 96);
    }
    let r = report(&csv, 99, None);
    assert_eq!(r.top[0].switch, "l");
    assert_eq!(
        roots_csv(&r),
        "switch,port,role,direction,discards,utilisation,fitf_mean\n\
         g,1,global,tx,0,1.000000,0.000000\n\
         h,3,host,tx,0,0.960000,0.020000\n"
    );
    let mut strict = Analyzer::new(Options {
        saturation: 0.99,
        ..Options::default()
    })
    .unwrap();
    input::read_into(csv.as_bytes(), &mut strict).unwrap();
    let strict = strict.finish(10, None);
    assert_eq!(strict.roots.len(), 1);
}

/// A live sampler's eighth column: a port that drops is a root whatever its utilisation, and
/// more drops rank first; a discard counter going backwards is a reset like any other.
#[test]
fn discards_rank_a_lossy_fabrics_roots() {
    let mut csv = String::from(HEADER.trim_end());
    csv += ",xmit_discards\n";
    for i in 0..4u64 {
        csv += &format!(
            "{},hot,1,host,tx,{},{},{}\n",
            i * 100,
            i * 99,
            i * 99,
            i * 30
        );
        csv += &format!("{},one,2,global,tx,{},{},{}\n", i * 100, i * 99, i * 100, i);
        csv += &format!("{},low,3,local,tx,0,{},{}\n", i * 100, i * 40, i * 2);
    }
    csv += "400,low,3,local,tx,0,160,0\n";
    let r = report(&csv, 99, None);
    let roots: Vec<(&str, u64)> = r
        .roots
        .iter()
        .map(|p| (p.switch.as_str(), p.discards))
        .collect();
    assert_eq!(roots, [("hot", 90), ("low", 6), ("one", 3)]);
    // A seven-column row under an eight-column header is malformed, with its line.
    let bad = format!(
        "{}0,s,1,host,tx,0,0\n",
        csv.lines().next().unwrap().to_owned() + "\n"
    );
    let mut a = Analyzer::new(Options::default()).unwrap();
    let e = input::read_into(bad.as_bytes(), &mut a).unwrap_err();
    assert!(
        matches!(
            e,
            ReportError::Width { line: 2, .. } | ReportError::Csv { line: 2, .. }
        ),
        "{e:?}"
    );
}
