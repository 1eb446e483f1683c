//! Sync without wiping (pure): the dump requests, the diff between a switch's desired state and
//! what it holds, and how the difference is applied: one atomic, ordered ONF bundle, or, for
//! switches without bundles, make-before-break steps of plain mods separated by barriers.
//!
//! Following OVN's ovn-controller: a reconnect to an unchanged switch sends nothing, and a
//! change never opens a window without rules.

pub mod diff;
pub mod links;
pub mod ordered;

pub use diff::{diff, Diff, OwnedGroups};
