//! Sync without wiping (pure): the dump requests, the diff between a switch's desired state and
//! what it holds, and the one atomic, ordered ONF bundle that applies the difference.
//!
//! Following OVN's ovn-controller: a reconnect to an unchanged switch sends nothing, and a
//! change never opens a window without rules.

pub mod diff;
pub mod links;

pub use diff::{diff, Diff, OwnedGroups};
