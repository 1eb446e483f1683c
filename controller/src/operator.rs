//! Operator actions, pure: what an operator asked for (drained links and switches, frozen
//! switches), how it changes the planner's input, how targets given by name are resolved, and
//! how a write request is authenticated. The HTTP handlers and the store only move it around.
//!
//! - A **drained** link is handed to the planner exactly like a failed one, so the fabric is
//!   re-planned around it and the sync path applies the change hitlessly (one bundle, or
//!   make-before-break steps). A drained switch drains every fabric link it has. Draining is
//!   independent of health: a drained link that goes down and comes back stays drained.
//! - A **frozen** switch gets the freeze marker among its desired flows
//!   ([`fabricflow_proto::conventions::FREEZE_MARKER_METADATA`]); its agent reads it with the
//!   plan and stops changing bucket weights until the marker is gone. The agent is not connected
//!   to the controller, the switch is what both share, and the marker survives a restart of
//!   either.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use fabricflow_proto::conventions::{FREEZE_MARKER_METADATA, FREEZE_MARKER_PRIORITY};
use fabricflow_proto::openflow::flow::FlowMod;
use fabricflow_proto::openflow::oxm::{Match, OxmField};
use serde::{Deserialize, Serialize};

use crate::desired::{DesiredSwitch, Endpoint, LinkId};

/// The store key of the operator's state (JSON of [`OperatorState`]).
pub const STORE_KEY: &str = "operator/state";

/// What the operator decided; survives controller restarts through the store.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OperatorState {
    /// Links drained one by one.
    pub drained_links: BTreeSet<LinkId>,
    /// Switches drained (every fabric link of theirs is out of service), by dpid.
    pub drained_switches: BTreeSet<u64>,
    /// Switches whose agent must not change weights, by dpid.
    pub frozen_switches: BTreeSet<u64>,
}

/// One operator action on a resolved target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    DrainLink(LinkId),
    UndrainLink(LinkId),
    DrainSwitch(u64),
    UndrainSwitch(u64),
    Freeze(u64),
    Unfreeze(u64),
    /// Dump and diff one switch again, or every switch (`None`).
    Resync(Option<u64>),
}

impl Action {
    /// Every action's label (metrics are pre-created with these).
    pub const LABELS: [&'static str; 7] = [
        "drain_link",
        "undrain_link",
        "drain_switch",
        "undrain_switch",
        "freeze",
        "unfreeze",
        "resync",
    ];

    /// The `action` label of `fabricflow_controller_operator_actions_total`.
    pub fn label(self) -> &'static str {
        match self {
            Action::DrainLink(_) => "drain_link",
            Action::UndrainLink(_) => "undrain_link",
            Action::DrainSwitch(_) => "drain_switch",
            Action::UndrainSwitch(_) => "undrain_switch",
            Action::Freeze(_) => "freeze",
            Action::Unfreeze(_) => "unfreeze",
            Action::Resync(_) => "resync",
        }
    }
}

impl OperatorState {
    /// Applies `action`; returns whether the state changed (a resync never changes it).
    pub fn apply(&mut self, action: Action) -> bool {
        match action {
            Action::DrainLink(l) => self.drained_links.insert(l),
            Action::UndrainLink(l) => self.drained_links.remove(&l),
            Action::DrainSwitch(d) => self.drained_switches.insert(d),
            Action::UndrainSwitch(d) => self.drained_switches.remove(&d),
            Action::Freeze(d) => self.frozen_switches.insert(d),
            Action::Unfreeze(d) => self.frozen_switches.remove(&d),
            Action::Resync(_) => false,
        }
    }

    /// Whether `link` is drained, by itself or through one of its switches.
    pub fn is_drained(&self, link: &LinkId) -> bool {
        self.drained_links.contains(link)
            || self.drained_switches.contains(&link.a.dpid)
            || self.drained_switches.contains(&link.b.dpid)
    }

    /// The links of `links` that are drained.
    pub fn drained<'a>(&self, links: impl IntoIterator<Item = &'a LinkId>) -> BTreeSet<LinkId> {
        links
            .into_iter()
            .filter(|l| self.is_drained(l))
            .copied()
            .collect()
    }

    /// Adds the freeze marker to every frozen switch of `plan` (the planner's output).
    pub fn mark_frozen(&self, plan: &mut BTreeMap<u64, DesiredSwitch>, cookie: u64) {
        for dpid in &self.frozen_switches {
            if let Some(d) = plan.get_mut(dpid) {
                d.flows.push(freeze_marker(cookie));
            }
        }
    }
}

/// The freeze marker flow: classify table, a metadata value no packet carries there, no
/// instruction. Inert for forwarding; the agent's plan read sees it (it carries the plan's
/// cookie).
pub fn freeze_marker(cookie: u64) -> FlowMod {
    FlowMod::add(
        fabricflow_proto::conventions::table::CLASSIFY,
        FREEZE_MARKER_PRIORITY,
        Match::new().with(OxmField::Metadata {
            value: FREEZE_MARKER_METADATA,
            mask: None,
        }),
        Vec::new(),
    )
    .with_cookie(cookie)
}

/// Why a target given by the operator names nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("no switch `{0}` in the plan (a name, or a dpid in hex)")]
    UnknownSwitch(String),
    #[error("`{0}` is not a link: expected SWITCH:PORT (either end) or the link id A-B of /api/v1/links")]
    BadLink(String),
    #[error("no fabric link at {0}")]
    UnknownLink(String),
}

/// A switch given by name (`g0s1`) or dpid in hex (`0000000000000101`, `0x101`, `00:00:…`).
/// Names win: a name is never mistaken for a dpid.
pub fn resolve_switch(spec: &str, names: &BTreeMap<u64, String>) -> Result<u64, ResolveError> {
    let spec = spec.trim();
    if let Some((dpid, _)) = names.iter().find(|(_, n)| n.as_str() == spec) {
        return Ok(*dpid);
    }
    parse_dpid(spec)
        .filter(|d| names.contains_key(d))
        .ok_or_else(|| ResolveError::UnknownSwitch(spec.to_owned()))
}

/// A dpid in hex, with or without `0x` and colons.
pub fn parse_dpid(s: &str) -> Option<u64> {
    let t = s.trim_start_matches("0x").replace(':', "");
    if t.is_empty() || t.len() > 16 {
        return None;
    }
    u64::from_str_radix(&t, 16).ok()
}

/// A link given by one of its ends (`SWITCH:PORT`, the switch as in [`resolve_switch`]) or by
/// its id as `/api/v1/links` shows it (`DPID:PORT-DPID:PORT`).
pub fn resolve_link(
    spec: &str,
    links: &[LinkId],
    names: &BTreeMap<u64, String>,
) -> Result<LinkId, ResolveError> {
    let spec = spec.trim();
    let bad = || ResolveError::BadLink(spec.to_owned());
    let endpoint = |s: &str| -> Result<Endpoint, ResolveError> {
        // The port follows the last ':' (colon-separated dpids have more).
        let (sw, port) = s.rsplit_once(':').ok_or_else(bad)?;
        let port: u32 = port.parse().map_err(|_| bad())?;
        Ok(Endpoint {
            dpid: resolve_switch(sw, names)?,
            port,
        })
    };
    let ends: Vec<Endpoint> = match spec.split_once('-') {
        Some((a, b)) => vec![endpoint(a)?, endpoint(b)?],
        None => vec![endpoint(spec)?],
    };
    links
        .iter()
        .find(|l| ends.iter().all(|e| l.touches(*e)))
        .copied()
        .ok_or_else(|| ResolveError::UnknownLink(spec.to_owned()))
}

/// The outcome of checking a write request's credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// No token is configured: write actions are disabled.
    Disabled,
    /// No `Authorization: Bearer …` header.
    Missing,
    /// A token that is not the configured one.
    Wrong,
    Granted,
}

impl fmt::Display for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Auth::Disabled => {
                "write actions are disabled: no API token configured (http_token_file in the controller's config)"
            }
            Auth::Missing => "missing `Authorization: Bearer <token>`",
            Auth::Wrong => "wrong token",
            Auth::Granted => "granted",
        })
    }
}

/// Checks an `Authorization` header value against the configured token, in time independent
/// of where the two differ.
pub fn check_bearer(header: Option<&[u8]>, token: Option<&str>) -> Auth {
    let Some(token) = token else {
        return Auth::Disabled;
    };
    let Some(given) = header.and_then(|h| h.strip_prefix(b"Bearer ".as_slice())) else {
        return Auth::Missing;
    };
    let given = given.trim_ascii();
    let want = token.as_bytes();
    let mut diff = u8::from(given.len() != want.len());
    for (i, w) in want.iter().enumerate() {
        diff |= w ^ given.get(i).copied().unwrap_or(!*w);
    }
    if diff == 0 {
        Auth::Granted
    } else {
        Auth::Wrong
    }
}

#[cfg(test)]
mod tests;
