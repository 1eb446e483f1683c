//! Link health (pure): port states and LLDP sightings → the failed-link set the planner gets.
//!
//! A link is failed when either end's port is down, when LLDP from the expected peer has not
//! been seen on an end for `missing_after` while both switches were connected and probing, or
//! when an end hears LLDP from the wrong peer (miswired). A link the operator drained is out of
//! service too, whatever its health: the planner gets both sets as one. OVS sends several
//! PORT_STATUS messages per event; every input here is idempotent and reports whether the
//! out-of-service set changed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::desired::{Endpoint, LinkId};

/// Health of one link as the API shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkHealth {
    Up,
    Down,
    LldpMissing,
    Miswired,
    /// Healthy, but taken out of service by the operator.
    Drained,
}

/// One link in the API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LinkReport {
    pub id: String,
    pub a: Endpoint,
    pub b: Endpoint,
    pub health: LinkHealth,
    /// Out of service by the operator's drain (reported even when the link is also down).
    pub drained: bool,
    /// For a miswired link: what each miswired end actually hears.
    pub miswired: Vec<(Endpoint, Endpoint)>,
    pub ports_down: Vec<Endpoint>,
    pub lldp_missing: Vec<Endpoint>,
}

#[derive(Debug, Default, Clone)]
struct EndState {
    port_down: bool,
    last_lldp: Option<Instant>,
    lldp_missing: bool,
    miswired: Option<Endpoint>,
}

/// The health of every fabric link.
#[derive(Debug, Default)]
pub struct LinkMonitor {
    links: BTreeSet<LinkId>,
    peer_of: BTreeMap<Endpoint, (LinkId, Endpoint)>,
    ends: BTreeMap<Endpoint, EndState>,
    /// When each switch became able to probe (connected, writing, desired known).
    probing_since: BTreeMap<u64, Instant>,
    missing_after: Duration,
    /// Links the operator drained.
    drained: BTreeSet<LinkId>,
}

impl LinkMonitor {
    pub fn new(links: &[LinkId], missing_after: Duration) -> Self {
        let mut m = LinkMonitor {
            missing_after,
            ..LinkMonitor::default()
        };
        for &l in links {
            m.links.insert(l);
            m.peer_of.insert(l.a, (l, l.b));
            m.peer_of.insert(l.b, (l, l.a));
            m.ends.insert(l.a, EndState::default());
            m.ends.insert(l.b, EndState::default());
        }
        m
    }

    /// Every fabric link.
    pub fn links(&self) -> impl Iterator<Item = &LinkId> + '_ {
        self.links.iter()
    }

    /// The links the operator drained (unknown ones are ignored). Returns whether the
    /// out-of-service set changed.
    pub fn set_drained(&mut self, drained: BTreeSet<LinkId>) -> bool {
        let before = self.failed();
        self.drained = drained.intersection(&self.links).copied().collect();
        before != self.failed()
    }

    /// The links currently out of service: unhealthy or drained.
    pub fn failed(&self) -> BTreeSet<LinkId> {
        self.links
            .iter()
            .filter(|l| self.health(l) != LinkHealth::Up)
            .copied()
            .collect()
    }

    /// The out-of-service set [`failed`](Self::failed) would give with `drained` as the
    /// operator's drains (to check a drain can be planned before applying it).
    pub fn failed_with_drained(&self, drained: &BTreeSet<LinkId>) -> BTreeSet<LinkId> {
        self.links
            .iter()
            .filter(|l| {
                drained.contains(l)
                    || !matches!(self.health(l), LinkHealth::Up | LinkHealth::Drained)
            })
            .copied()
            .collect()
    }

    fn health(&self, l: &LinkId) -> LinkHealth {
        let ends = [self.ends.get(&l.a), self.ends.get(&l.b)];
        if ends.iter().flatten().any(|e| e.port_down) {
            LinkHealth::Down
        } else if ends.iter().flatten().any(|e| e.miswired.is_some()) {
            LinkHealth::Miswired
        } else if ends.iter().flatten().any(|e| e.lldp_missing) {
            LinkHealth::LldpMissing
        } else if self.drained.contains(l) {
            LinkHealth::Drained
        } else {
            LinkHealth::Up
        }
    }

    /// Whether `ep` is an end of a fabric link.
    pub fn is_fabric_port(&self, ep: Endpoint) -> bool {
        self.peer_of.contains_key(&ep)
    }

    /// A port's state changed (or was reported again). Returns whether the failed set changed.
    pub fn port_state(&mut self, ep: Endpoint, up: bool) -> bool {
        let before = self.failed();
        if let Some(e) = self.ends.get_mut(&ep) {
            e.port_down = !up;
        }
        before != self.failed()
    }

    /// LLDP from `heard` arrived on `ep` at `now`. Returns whether the failed set changed.
    pub fn lldp(&mut self, ep: Endpoint, heard: Endpoint, now: Instant) -> bool {
        let before = self.failed();
        let expected = self.peer_of.get(&ep).map(|(_, p)| *p);
        if let Some(e) = self.ends.get_mut(&ep) {
            if expected == Some(heard) {
                e.miswired = None;
                e.lldp_missing = false;
                e.last_lldp = Some(now);
            } else {
                e.miswired = Some(heard);
            }
        }
        before != self.failed()
    }

    /// Switch `dpid` started (`Some(now)`) or stopped (`None`) probing its fabric ports.
    pub fn set_probing(&mut self, dpid: u64, since: Option<Instant>) {
        match since {
            Some(t) => {
                self.probing_since.entry(dpid).or_insert(t);
            }
            None => {
                self.probing_since.remove(&dpid);
            }
        }
    }

    /// Declares LLDP missing on ends that heard nothing for `missing_after` while both
    /// switches were probing. Returns whether the failed set changed.
    pub fn tick(&mut self, now: Instant) -> bool {
        let before = self.failed();
        for (ep, (_, peer)) in &self.peer_of {
            let (Some(a), Some(b)) = (
                self.probing_since.get(&ep.dpid),
                self.probing_since.get(&peer.dpid),
            ) else {
                continue;
            };
            let both_since = (*a).max(*b);
            if let Some(e) = self.ends.get_mut(ep) {
                let last = e.last_lldp.map_or(both_since, |l| l.max(both_since));
                if now.saturating_duration_since(last) >= self.missing_after && !e.port_down {
                    e.lldp_missing = true;
                }
            }
        }
        before != self.failed()
    }

    /// Every link with its health.
    pub fn report(&self) -> Vec<LinkReport> {
        self.links
            .iter()
            .map(|l| {
                let ends = [l.a, l.b];
                let st = |ep: &Endpoint| self.ends.get(ep).cloned().unwrap_or_default();
                LinkReport {
                    id: l.to_string(),
                    a: l.a,
                    b: l.b,
                    health: self.health(l),
                    drained: self.drained.contains(l),
                    miswired: ends
                        .iter()
                        .filter_map(|ep| st(ep).miswired.map(|h| (*ep, h)))
                        .collect(),
                    ports_down: ends.iter().filter(|ep| st(ep).port_down).copied().collect(),
                    lldp_missing: ends
                        .iter()
                        .filter(|ep| st(ep).lldp_missing)
                        .copied()
                        .collect(),
                }
            })
            .collect()
    }

    /// Counts by health (up, down, lldp missing, miswired, drained).
    pub fn counts(&self) -> [usize; 5] {
        let mut c = [0usize; 5];
        for l in &self.links {
            let i = match self.health(l) {
                LinkHealth::Up => 0,
                LinkHealth::Down => 1,
                LinkHealth::LldpMissing => 2,
                LinkHealth::Miswired => 3,
                LinkHealth::Drained => 4,
            };
            if let Some(x) = c.get_mut(i) {
                *x += 1;
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(dpid: u64, port: u32) -> Endpoint {
        Endpoint { dpid, port }
    }

    fn mon() -> LinkMonitor {
        LinkMonitor::new(
            &[
                LinkId::new(ep(1, 3), ep(2, 2)),
                LinkId::new(ep(2, 3), ep(3, 2)),
            ],
            Duration::from_secs(3),
        )
    }

    #[test]
    fn port_down_is_idempotent() {
        let mut m = mon();
        assert!(m.port_state(ep(1, 3), false));
        assert!(!m.port_state(ep(1, 3), false));
        assert!(!m.port_state(ep(2, 2), false));
        assert_eq!(m.failed().len(), 1);
        assert!(!m.port_state(ep(1, 3), true));
        assert!(m.port_state(ep(2, 2), true));
        assert!(m.failed().is_empty());
        // Not a fabric port: ignored.
        assert!(!m.port_state(ep(1, 1), false));
    }

    #[test]
    fn lldp_missing_only_when_both_probe() {
        let t0 = Instant::now();
        let mut m = mon();
        m.set_probing(1, Some(t0));
        assert!(!m.tick(t0 + Duration::from_secs(10)));
        m.set_probing(2, Some(t0 + Duration::from_secs(10)));
        assert!(!m.tick(t0 + Duration::from_secs(12)));
        assert!(!m.lldp(ep(1, 3), ep(2, 2), t0 + Duration::from_secs(12)));
        assert!(m.tick(t0 + Duration::from_secs(13)));
        assert_eq!(m.report()[0].health, LinkHealth::LldpMissing);
        assert_eq!(m.report()[0].lldp_missing, [ep(2, 2)]);
        assert!(m.lldp(ep(2, 2), ep(1, 3), t0 + Duration::from_secs(14)));
        assert!(m.failed().is_empty());
    }

    #[test]
    fn miswired_detected_and_cleared() {
        let t0 = Instant::now();
        let mut m = mon();
        assert!(m.lldp(ep(1, 3), ep(3, 2), t0));
        assert_eq!(m.report()[0].health, LinkHealth::Miswired);
        assert_eq!(m.counts(), [1, 0, 0, 1, 0]);
        assert!(m.lldp(ep(1, 3), ep(2, 2), t0));
        assert!(m.failed().is_empty());
    }

    #[test]
    fn a_drained_link_is_out_of_service_and_reported_apart_from_down() {
        let mut m = mon();
        let l = LinkId::new(ep(1, 3), ep(2, 2));
        assert!(m.set_drained(BTreeSet::from([l, LinkId::new(ep(8, 1), ep(9, 1))])));
        assert!(
            !m.set_drained(BTreeSet::from([l])),
            "the unknown link is ignored"
        );
        assert_eq!(m.failed(), BTreeSet::from([l]));
        assert_eq!(m.report()[0].health, LinkHealth::Drained);
        assert!(m.report()[0].drained && !m.report()[1].drained);
        assert_eq!(m.counts(), [1, 0, 0, 0, 1]);
        // Down while drained: reported down (and still drained), the planner's input unchanged.
        assert!(!m.port_state(ep(1, 3), false));
        assert_eq!(m.report()[0].health, LinkHealth::Down);
        assert!(m.report()[0].drained);
        assert!(!m.port_state(ep(1, 3), true));
        assert_eq!(m.failed_with_drained(&BTreeSet::new()), BTreeSet::new());
        assert!(m.set_drained(BTreeSet::new()));
        assert!(m.failed().is_empty());
        assert_eq!(
            m.failed_with_drained(&BTreeSet::from([l])),
            BTreeSet::from([l])
        );
        assert_eq!(m.report()[0].health, LinkHealth::Up);
    }
}
