//! The pure core of fabricflow's controller: fabric model, hierarchical addresses, minimal and
//! non-minimal routes, the per-switch rule plan (conditional flow rules), and the tools that check
//! a plan without a switch (an in-memory OpenFlow 1.3 pipeline and a channel-dependency-graph
//! check). Nothing here opens a socket, spawns a task or reads a clock: the OpenFlow runtime
//! (a later module) only moves the plan's messages.
//!
//! Flow of data: [`topology::TopologySpec`] → [`topology::Fabric`] → [`routes::Routes`] →
//! [`plan::Plan`] → [`ofctl`] text, or [`pipeline::Walker`] / [`cdg::Cdg`] for verification.

pub mod addressing;
pub mod cdg;
pub mod export;
pub mod ofctl;
pub mod pipeline;
pub mod plan;
pub mod routes;
pub mod topology;

pub use addressing::{AddressError, Addressing, Location};
pub use plan::{Plan, PlanError, PlanOptions, SwitchPlan};
pub use routes::Routes;
pub use topology::{Fabric, FabricKind, Link, TopologyError, TopologySpec};
