//! The channel dependency graph (Dally & Seitz): a lossless (PFC) fabric cannot deadlock if the
//! graph whose vertices are (directed link, priority class) and whose edges say "a packet holding
//! this channel waits for that one" has no cycle.
//!
//! The graph is built from the plan itself, by walking packets through the in-memory pipeline
//! with every SELECT bucket enumerated, so it covers exactly the paths the rules allow (minimal,
//! non-minimal and diverted), not the paths the planner meant to allow. The class of a channel
//! is the PCP of the outer tag when the packet leaves on it (0 when untagged).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::pipeline::{ExecError, SelectMode, Trace, Walker};
use crate::plan::Plan;
use crate::topology::{Fabric, Link, Peer, PortNo, SwitchId};

/// A directed switch-to-switch link in one priority class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Channel {
    pub switch: SwitchId,
    pub port: PortNo,
    pub class: u8,
}

/// A channel dependency graph.
#[derive(Debug, Clone, Default)]
pub struct Cdg {
    edges: BTreeMap<Channel, BTreeSet<Channel>>,
}

impl Cdg {
    /// An empty graph.
    pub fn new() -> Self {
        Cdg::default()
    }

    /// Adds the dependencies of one path.
    pub fn add_trace(&mut self, fabric: &Fabric, trace: &Trace) {
        let channels: Vec<Option<Channel>> = trace
            .hops
            .iter()
            .map(|h| match fabric.peer(h.switch, h.out_port) {
                Some(Peer::Switch { .. }) => Some(Channel {
                    switch: h.switch,
                    port: h.out_port,
                    class: h.pcp.unwrap_or(0),
                }),
                _ => None,
            })
            .collect();
        for pair in channels.windows(2) {
            if let [Some(a), Some(b)] = pair {
                self.edges.entry(*a).or_default().insert(*b);
                self.edges.entry(*b).or_default();
            }
        }
    }

    /// Builds the graph of a plan: one host of every host-bearing switch sends to one host of
    /// every other such switch, with every SELECT bucket enumerated. Hosts of one switch share
    /// all rules except their own port, so this covers every host pair's switch-level paths.
    pub fn from_plan(
        fabric: &Fabric,
        plan: &Plan,
        failed: &BTreeSet<Link>,
    ) -> Result<Cdg, ExecError> {
        let walker = Walker::new(fabric, plan, failed);
        let reps: Vec<usize> = {
            let mut seen = BTreeSet::new();
            (0..fabric.hosts().len())
                .filter(|&h| fabric.host(h).is_some_and(|x| seen.insert(x.switch)))
                .collect()
        };
        let mut cdg = Cdg::new();
        for &s in &reps {
            for &d in &reps {
                if s == d {
                    continue;
                }
                for t in walker.walk_pair(s, d, SelectMode::EveryBucket)? {
                    cdg.add_trace(fabric, &t);
                }
            }
        }
        Ok(cdg)
    }

    /// Number of channels and dependencies.
    pub fn size(&self) -> (usize, usize) {
        (
            self.edges.len(),
            self.edges.values().map(BTreeSet::len).sum(),
        )
    }

    /// Distinct classes used.
    pub fn classes(&self) -> BTreeSet<u8> {
        self.edges.keys().map(|c| c.class).collect()
    }

    /// A dependency cycle, if any (the channels in order, the first repeated at the end).
    pub fn find_cycle(&self) -> Option<Vec<Channel>> {
        #[derive(Clone, Copy, PartialEq)]
        enum Color {
            White,
            Grey,
            Black,
        }
        let index: BTreeMap<Channel, usize> = self
            .edges
            .keys()
            .enumerate()
            .map(|(i, c)| (*c, i))
            .collect();
        let nodes: Vec<Channel> = self.edges.keys().copied().collect();
        let succ: Vec<Vec<usize>> = self
            .edges
            .values()
            .map(|s| s.iter().filter_map(|c| index.get(c).copied()).collect())
            .collect();
        let mut color = vec![Color::White; nodes.len()];
        for root in 0..nodes.len() {
            if color.get(root) != Some(&Color::White) {
                continue;
            }
            // (node, next successor position); the stack is the current DFS path.
            let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
            if let Some(c) = color.get_mut(root) {
                *c = Color::Grey;
            }
            while let Some(&mut (v, ref mut pos)) = stack.last_mut() {
                let next = succ.get(v).and_then(|s| s.get(*pos)).copied();
                *pos += 1;
                match next {
                    None => {
                        if let Some(c) = color.get_mut(v) {
                            *c = Color::Black;
                        }
                        stack.pop();
                    }
                    Some(w) => match color.get(w) {
                        Some(Color::White) => {
                            if let Some(c) = color.get_mut(w) {
                                *c = Color::Grey;
                            }
                            stack.push((w, 0));
                        }
                        Some(Color::Grey) => {
                            let start = stack.iter().position(|&(x, _)| x == w).unwrap_or(0);
                            let mut cycle: Vec<Channel> = stack
                                .iter()
                                .skip(start)
                                .filter_map(|&(x, _)| nodes.get(x).copied())
                                .collect();
                            if let Some(n) = nodes.get(w) {
                                cycle.push(*n);
                            }
                            return Some(cycle);
                        }
                        _ => {}
                    },
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_cycle() {
        let mut cdg = Cdg::new();
        let c = |s| Channel {
            switch: s,
            port: 1,
            class: 0,
        };
        for (a, b) in [(0, 1), (1, 2), (2, 3)] {
            cdg.edges.entry(c(a)).or_default().insert(c(b));
            cdg.edges.entry(c(b)).or_default();
        }
        assert_eq!(cdg.find_cycle(), None);
        cdg.edges.entry(c(3)).or_default().insert(c(1));
        assert_eq!(cdg.find_cycle(), Some(vec![c(1), c(2), c(3), c(1)]));
    }
}
