//! `fabricflow-report`: the InfiniBand congestion study's tables and box plots for any
//! `port-stats.csv` (the simulator's `--port-stats-interval`, or a sampler of a live fabric).
//!
//! - [`analysis`]: the pure core — intervals, rounds, FITF, per-class statistics, the ranking
//!   (terms defined there).
//! - [`input`]: streams the CSV into an [`analysis::Analyzer`] in bounded memory.
//! - [`output`]: `summary.csv`, `top-ports.csv`, `report.md`.
//! - [`plot`]: the box plots as PNG, with an embedded font.

pub mod analysis;
pub mod input;
pub mod output;
pub mod plot;

pub use analysis::{Analyzer, BoxStats, ClassSummary, Options, PortSummary, Record, Report};

/// What can go wrong reading a `port-stats.csv` or writing the report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("line {line}: {source}")]
    Csv { line: u64, source: csv::Error },
    #[error("header {found:?}: expected {expected:?}")]
    Header { expected: String, found: String },
    #[error("line {line}: field {field} {value:?} is not a {what}")]
    Field {
        line: u64,
        field: &'static str,
        value: String,
        what: &'static str,
    },
    #[error("line {line}: {found} fields, expected {expected}")]
    Width {
        line: u64,
        found: usize,
        expected: usize,
    },
    #[error("line {line}: switch {switch} port {port} changed its role")]
    RoleChanged {
        line: u64,
        switch: String,
        port: u32,
    },
    #[error("invalid options: {0}")]
    Options(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("plot {path}: {message}")]
    Plot { path: String, message: String },
}
