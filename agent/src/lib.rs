//! `fabricflow-agent`: the switch-side QCN-SW agent.
//!
//! Everything but [`runtime`] is the agent's pure core — no tokio, no sockets, no clocks, no global RNG. Every
//! state machine takes events together with the time (`now_ns`, nanoseconds from any monotonic
//! origin) and returns what to do, so the agent's I/O shell, the unit tests and the fabric
//! simulator run exactly the same code (DESIGN §5, STYLE "quinn").
//!
//! - [`switch_core`]: one switch's decision points, policy and installed weights, and the glue
//!   from a CNM or a congestion sample to a weight write — what the session and the simulator
//!   both drive.
//! - [`policy`]: the QCN-SW reaction point — per fabric port, the probability P(p) of routing new
//!   inter-group traffic minimally; variants base / source processing / feedback comparison /
//!   combined, update policies AIMD / AIAD / MIMD / MIAD.
//! - [`weights`]: when a changed probability is written as SELECT-group bucket weights (at least a
//!   quantum of change, at most once per minimum update interval).
//! - [`cp`]: the QCN congestion point maths (Fb, QntzFb, sampling intervals) for the emulated CP.
//! - [`config`]: the agent's file: every module's section composed, TOML loading, validation.
//! - [`link`]: a port's line rate and buffer, which scale the rate-relative constants.
//! - [`error`]: [`ConfigError`], shared by every section's validation.
//! - [`plan`]: decision points and fabric ports learned from the switch's groups and flows.
//! - [`session`]: the sans-IO OpenFlow session with one switch (messages + time in, messages out).
//! - [`qdisc`]: rtnetlink request/parser for an egress qdisc's backlog (the emulated CP's Q)
//!   and a dump of every root qdisc (the port-stall sampler's readings).
//! - [`latency`]: the CNM → GROUP_MOD latency histogram the shell fills and the metrics show.
//! - [`port_stats`]: per-port stall (egress backlog time — not XmitWait) and utilisation
//!   counters, FITF intervals and the `port-stats.csv` row.
//! - [`runtime`]: the I/O shell (tokio tasks, sockets, emulated CP thread, HTTP), the only module
//!   that does I/O.

pub mod config;
pub mod cp;
pub mod drb;
pub mod error;
pub mod latency;
pub mod link;
pub mod plan;
pub mod policy;
pub mod port_stats;
pub mod qdisc;
pub mod runtime;
pub mod session;
pub mod switch_core;
pub mod throttle;
pub mod weights;

/// An OpenFlow port number.
pub type PortNo = u32;

pub use config::AgentConfig;
pub use error::ConfigError;
pub use policy::{Effects, Event, Policy};
pub use switch_core::SwitchCore;
pub use weights::{DecisionPoint, GroupWrite, WeightPlanner};
