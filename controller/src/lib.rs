//! `fabricflow-controller`: the fabric's proactive SDN controller.
//!
//! The pure core: fabric model ([`topology`]), hierarchical addresses ([`addressing`]), minimal
//! and non-minimal routes ([`routes`]), the per-switch rule plan of conditional flow rules
//! ([`plan`]), and the tools that check a plan without a switch (an in-memory OpenFlow 1.3
//! [`pipeline`] and a channel-dependency-graph check, [`cdg`]). [`planner`] turns a plan into
//! OpenFlow messages for the runtime. [`traffic`] is the registry of traffic patterns that the
//! simulator and the Mininet harness share; [`bound`] is the throughput optimum of a fabric
//! under one of those patterns (a multi-commodity flow LP), the ceiling each routing mode is
//! measured against. [`flowroute`] gives a phase's flows least-loaded paths on (extended)
//! fat-trees and their SAA rates.
//!
//! The runtime: [`desired`] (what each switch must hold: the planner interface), [`session`]
//! (per-switch OpenFlow state machine, sans-IO), [`sync`] (diff and bundle, pure), [`store`]
//! (memory/etcd), [`config`], [`metrics`], [`http`], and [`service`], the tokio shell that only
//! moves bytes and reads the clock.
//!
//! Flow of data: [`topology::TopologySpec`] → [`topology::Fabric`] → [`routes::Routes`] →
//! [`plan::Plan`] → [`planner`] → [`desired::DesiredSwitch`] → [`sync`] → the switch.

pub mod addressing;
pub mod bound;
pub mod cdg;
pub mod dftree;
pub mod export;
pub mod flowroute;
pub mod ofctl;
pub mod pipeline;
pub mod plan;
pub mod planner;
pub mod routes;
pub mod topology;
pub mod traffic;

pub mod config;
pub mod ctl;
pub mod desired;
pub mod http;
pub mod metrics;
pub mod operator;
pub mod service;
pub mod session;
pub mod shared;
pub mod store;
pub mod sync;
pub mod tls;

pub use addressing::{AddressError, Addressing, Location};
pub use plan::{Plan, PlanError, PlanOptions, SwitchPlan};
pub use routes::Routes;
pub use topology::{Fabric, FabricKind, Link, TopologyError, TopologySpec};
