//! A hand-built [`PlanSource`] for tests and benchmarks. **A test fixture, not a planner**: a
//! line of switches with a few flows and one SELECT group each, so the runtime can be exercised
//! before the real planner (branch `controller-core`) is merged.
//!
//! Switch `i` has dpid `dpid_base + i`; port 1 is its host port, port 2 leads to switch `i-1`
//! and port 3 to switch `i+1` (edge switches have one fabric port). Every switch holds:
//! - table 0: LLDP → controller (priority 1000), host port → table 1, fabric ports → table 2;
//! - table 1/2: its own host MAC → port 1, other MACs → SELECT group 1000 whose buckets output to
//!   the live fabric ports (bucket 0 weight 200, the others 55: the agent may change them);
//! - `filler_flows` extra table-1 drop rules (benchmarks), and `variant` extra rules that tests
//!   bump to produce a small delta.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, Ordering};

use fabricflow_proto::openflow::action::Action;
use fabricflow_proto::openflow::flow::FlowMod;
use fabricflow_proto::openflow::group::{Bucket, GroupMod};
use fabricflow_proto::openflow::instruction::Instruction;
use fabricflow_proto::openflow::oxm::{Match, OxmField};
use fabricflow_proto::MacAddr;

use super::{DesiredSwitch, Endpoint, LinkId, PlanSource};

/// Group id of every fixture switch's SELECT group.
pub const FIXTURE_GROUP_ID: u32 = 1000;
/// The host port of every fixture switch.
pub const HOST_PORT: u32 = 1;
/// EtherType of LLDP.
pub const ETH_TYPE_LLDP: u16 = 0x88cc;

/// A line of `n` switches (see the module docs).
#[derive(Debug)]
pub struct LineFixture {
    pub dpid_base: u64,
    pub n: u32,
    pub cookie: u64,
    pub filler_flows: u32,
    variant: AtomicU32,
}

impl LineFixture {
    pub fn new(dpid_base: u64, n: u32, cookie: u64) -> Self {
        LineFixture {
            dpid_base,
            n,
            cookie,
            filler_flows: 0,
            variant: AtomicU32::new(0),
        }
    }

    /// Adds `count` filler flows per switch (benchmarks).
    pub fn with_filler(mut self, count: u32) -> Self {
        self.filler_flows = count;
        self
    }

    /// Sets the number of variant rules (each switch gets that many extra drop rules).
    pub fn set_variant(&self, v: u32) {
        self.variant.store(v, Ordering::SeqCst);
    }

    pub fn dpid(&self, i: u32) -> u64 {
        self.dpid_base + u64::from(i)
    }

    fn host_mac(i: u32) -> MacAddr {
        let b = i.to_be_bytes();
        MacAddr([0x02, 0, 0, b[2], b[3], 0x01])
    }

    fn fabric_ports(&self, i: u32) -> BTreeMap<u32, Endpoint> {
        let mut m = BTreeMap::new();
        if i > 0 {
            m.insert(
                2,
                Endpoint {
                    dpid: self.dpid(i - 1),
                    port: 3,
                },
            );
        }
        if i + 1 < self.n {
            m.insert(
                3,
                Endpoint {
                    dpid: self.dpid(i + 1),
                    port: 2,
                },
            );
        }
        m
    }

    fn flow(&self, table: u8, priority: u16, m: Match, ins: Vec<Instruction>) -> FlowMod {
        FlowMod::add(table, priority, m, ins).with_cookie(self.cookie)
    }

    fn switch(&self, i: u32, failed: &BTreeSet<LinkId>) -> DesiredSwitch {
        let dpid = self.dpid(i);
        let fabric_ports = self.fabric_ports(i);
        let live: Vec<u32> = fabric_ports
            .iter()
            .filter(|(p, peer)| {
                let here = Endpoint { dpid, port: **p };
                !failed.contains(&LinkId::new(here, **peer))
            })
            .map(|(p, _)| *p)
            .collect();
        let buckets = live
            .iter()
            .enumerate()
            .map(|(k, p)| Bucket::new(if k == 0 { 200 } else { 55 }, vec![Action::output(*p)]))
            .collect();
        let groups = vec![GroupMod::add_select(FIXTURE_GROUP_ID, buckets)];

        let mut flows = vec![
            self.flow(
                0,
                1000,
                Match::new().with(OxmField::EthType(ETH_TYPE_LLDP)),
                vec![Instruction::ApplyActions(vec![Action::to_controller(
                    0xffff,
                )])],
            ),
            self.flow(
                0,
                100,
                Match::new().with(OxmField::InPort(HOST_PORT)),
                vec![Instruction::GotoTable(1)],
            ),
        ];
        for p in fabric_ports.keys() {
            flows.push(self.flow(
                0,
                90,
                Match::new().with(OxmField::InPort(*p)),
                vec![Instruction::GotoTable(2)],
            ));
        }
        let own = Match::new().with(OxmField::EthDst {
            value: Self::host_mac(i),
            mask: None,
        });
        for table in [1u8, 2] {
            flows.push(self.flow(
                table,
                200,
                own.clone(),
                vec![Instruction::ApplyActions(vec![Action::output(HOST_PORT)])],
            ));
            flows.push(self.flow(
                table,
                100,
                Match::new().with(OxmField::EthDst {
                    value: MacAddr([0x02, 0, 0, 0, 0, 0]),
                    mask: Some(MacAddr([0xff, 0xff, 0xff, 0, 0, 0])),
                }),
                vec![Instruction::ApplyActions(vec![Action::group(
                    FIXTURE_GROUP_ID,
                )])],
            ));
        }
        let variant = self.variant.load(Ordering::SeqCst);
        for k in 0..(self.filler_flows + variant) {
            let b = k.to_be_bytes();
            flows.push(self.flow(
                1,
                50,
                Match::new().with(OxmField::EthDst {
                    value: MacAddr([0x02, 0xff, b[0], b[1], b[2], b[3]]),
                    mask: None,
                }),
                Vec::new(),
            ));
        }
        DesiredSwitch {
            dpid,
            name: format!("line{i}"),
            flows,
            groups,
            fabric_ports,
        }
    }
}

impl PlanSource for LineFixture {
    fn plan(&self, failed_links: &BTreeSet<LinkId>) -> BTreeMap<u64, DesiredSwitch> {
        (0..self.n)
            .map(|i| (self.dpid(i), self.switch(i, failed_links)))
            .collect()
    }

    fn links(&self) -> Vec<LinkId> {
        (1..self.n)
            .map(|i| {
                LinkId::new(
                    Endpoint {
                        dpid: self.dpid(i - 1),
                        port: 3,
                    },
                    Endpoint {
                        dpid: self.dpid(i),
                        port: 2,
                    },
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_link_removes_bucket_on_both_ends_only() {
        let f = LineFixture::new(0x100, 3, 7);
        let ok = f.plan(&BTreeSet::new());
        let link = f.links()[0];
        let failed = f.plan(&BTreeSet::from([link]));
        assert_ne!(ok[&0x100], failed[&0x100]);
        assert_ne!(ok[&0x101], failed[&0x101]);
        assert_eq!(ok[&0x102], failed[&0x102]);
        assert_eq!(failed[&0x101].groups[0].buckets.len(), 1);
    }
}
