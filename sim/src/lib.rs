//! `fabricflow-sim`: a packet-level, deterministic simulator of Ethernet HPC fabrics that runs
//! the controller's fabric model and minimal routes and the agent's QCN-SW policy engine and QCN
//! congestion-point maths unchanged.
//!
//! - [`config`]: routing modes, traffic patterns, physical constants (time unit: one phit per
//!   cycle; 128-octet phits by default, so a 1 KB packet is 8 phits and a cycle is 25.6 ns at
//!   40 Gb/s).
//! - [`net`]: the engine (virtual cut-through IOQ switches, credits, VCs, CNMs as packets).
//! - [`port_stats`]: per-port XmitWait/XmitData counters and `port-stats.csv`.
//! - [`run`]: one load, parallel sweeps, CSV outputs, reaction time.
//! - [`arsaa`]: adaptive routing and SAA rate control on (extended) fat-trees (`ar-saa`).
//!
//! Determinism: one ChaCha8 RNG per run seeded from `--seed`; no hash-map iteration anywhere; the
//! CSVs of a run are byte-identical for the same seed and configuration, whatever the threads.

pub mod arsaa;
pub mod config;
pub mod dftree;
pub mod net;
pub mod port_stats;
pub mod run;

pub use config::{CpQueue, Pattern, Routing, SimConfig, SpecError, Traffic};
pub use net::Sim;
pub use run::{run_one, sweep, write_csvs, LoadResult};
