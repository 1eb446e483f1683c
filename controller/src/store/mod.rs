//! Where the controller keeps state, and who leads (DESIGN §6).
//!
//! Two implementations: [`memory::MemoryStore`] (default, single controller, role EQUAL) and
//! [`etcd::EtcdStore`] (state under `/fabricflow/`, leader election under a lease).
//!
//! Keys: `fabric` (spec), `links/<id>` (health JSON), `switches/<dpid>` (status JSON),
//! `operator/state` (the operator's drains and freezes, [`crate::operator::OperatorState`]).
//!
//! Everything but the operator's keys ([`DURABLE_PREFIX`]) is republished from the switches
//! within seconds; those are decisions nobody can re-derive, so a memory store given a state
//! file keeps them there.

pub mod etcd;
pub mod memory;

use std::future::Future;
use std::pin::Pin;

use serde::Serialize;
use tokio::sync::watch;

/// A boxed future (keeps [`Store`] object-safe without an extra crate).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Keys under this prefix are the operator's decisions: durable in every store.
pub const DURABLE_PREFIX: &str = "operator/";

/// A store operation failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("etcd: {0}")]
    Etcd(String),
    #[error("state file {path}: {reason}")]
    File { path: String, reason: String },
}

/// Who writes to the switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Leadership {
    /// No HA: the only controller, OpenFlow role EQUAL.
    Standalone,
    /// Elected: role MASTER with this generation_id (the election key's revision).
    Leader { generation: u64 },
    /// Not elected: role SLAVE; `generation` is the current leader's, when known.
    Follower { generation: u64 },
}

impl Leadership {
    pub fn writes(self) -> bool {
        !matches!(self, Leadership::Follower { .. })
    }
}

/// The controller's state store.
pub trait Store: Send + Sync + std::fmt::Debug {
    /// `memory` or `etcd`.
    fn kind(&self) -> &'static str;
    /// Writes `value` under `key` (relative to the store's prefix).
    fn put(&self, key: String, value: String) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Every (key, value) under `prefix` (relative keys).
    fn list(&self, prefix: String) -> BoxFuture<'_, Result<Vec<(String, String)>, StoreError>>;
    /// The leadership state, updated as elections happen.
    fn leadership(&self) -> watch::Receiver<Leadership>;
    /// Whether the store is reachable right now.
    fn healthy(&self) -> bool;
}
