//! `fabricflow-controller`: the fabric's proactive SDN controller.
//!
//! Runtime modules (this branch): [`desired`] (the planner interface), [`session`] (per-switch
//! OpenFlow state machine, sans-IO), [`sync`] (diff and bundle, pure), [`store`] (memory/etcd),
//! [`config`], [`metrics`], [`http`], [`service`] (the tokio shell). The planner's modules are
//! merged in beside these.

pub mod config;
pub mod desired;
pub mod http;
pub mod metrics;
pub mod service;
pub mod session;
pub mod store;
pub mod sync;
