//! The difference between desired and installed state, and the bundle that applies it.
//!
//! - Flows are keyed by (table, priority, match); the match is compared as a *set* of OXM
//!   fields because a switch may report them in another order. Only flows carrying the
//!   controller cookie are dumped, so rules with other cookies are never touched.
//! - Groups are keyed by id. A group is modified only when its *structure* differs (type,
//!   bucket count, each bucket's actions and watch port/group): the agent owns bucket weights
//!   (DESIGN §4), so a weight-only difference is left alone.
//! - Order inside the bundle: group adds/modifies, flow adds/modifies (which may use those
//!   groups), flow deletes (strict, by cookie), then group deletes (deleting a group in use
//!   would make OVS delete the flows that use it).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

use bytes::BytesMut;
use fabricflow_proto::openflow::bundle::{OFPBF_ATOMIC, OFPBF_ORDERED};
use fabricflow_proto::openflow::flow::{FlowMod, FlowModCommand};
use fabricflow_proto::openflow::group::{Bucket, GroupMod, GroupModCommand, GroupType};
use fabricflow_proto::openflow::message::Message;
use fabricflow_proto::openflow::multipart::{FlowStats, FlowStatsRequest, GroupDesc};
use fabricflow_proto::openflow::oxm::Match;
use fabricflow_proto::select_slots::SlotGroup;
use fabricflow_proto::Wire;

use crate::desired::DesiredSwitch;

/// Flags of every sync bundle.
pub const BUNDLE_FLAGS: u16 = OFPBF_ATOMIC | OFPBF_ORDERED;

/// Group ids the controller owns besides those in the plan: installed groups in this range
/// that the plan no longer has are deleted; groups outside it are never touched.
pub type OwnedGroups = RangeInclusive<u32>;

/// The flow-stats request that dumps exactly the controller's flows.
pub fn flow_dump_request(cookie: u64) -> FlowStatsRequest {
    FlowStatsRequest {
        cookie,
        cookie_mask: u64::MAX,
        ..FlowStatsRequest::default()
    }
}

/// A match as a set of encoded OXM fields (order-insensitive key).
pub fn match_key(m: &Match) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = m
        .fields
        .iter()
        .map(|f| {
            let mut b = BytesMut::new();
            f.encode(&mut b);
            b.to_vec()
        })
        .collect();
    v.sort_unstable();
    v
}

/// Flow identity: (table, priority, match as a set).
pub type FlowKey = (u8, u16, Vec<Vec<u8>>);

fn flow_key(table: u8, priority: u16, m: &Match) -> FlowKey {
    (table, priority, match_key(m))
}

/// What a bucket is apart from its weight.
fn bucket_structure(b: &Bucket) -> (u32, u32, &[fabricflow_proto::openflow::action::Action]) {
    (b.watch_port, b.watch_group, &b.actions)
}

/// Whether two groups have the same structure (type and buckets apart from weights; for two
/// groups in the slotted layout, the catalog: which slot copies which choice is the agent's).
pub fn same_structure(t1: GroupType, b1: &[Bucket], t2: GroupType, b2: &[Bucket]) -> bool {
    if let (Ok(Some(s1)), Ok(Some(s2))) = (SlotGroup::parse(b1), SlotGroup::parse(b2)) {
        return t1 == t2 && s1.same_catalog(&s2);
    }
    t1 == t2
        && b1.len() == b2.len()
        && b1
            .iter()
            .zip(b2)
            .all(|(x, y)| bucket_structure(x) == bucket_structure(y))
}

/// The changes that bring a switch to its desired state, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    pub group_adds: Vec<GroupMod>,
    pub group_modifies: Vec<GroupMod>,
    pub flow_adds: Vec<FlowMod>,
    pub flow_modifies: Vec<FlowMod>,
    pub flow_deletes: Vec<FlowMod>,
    pub group_deletes: Vec<GroupMod>,
}

impl Diff {
    pub fn is_empty(&self) -> bool {
        self.flow_mod_count() == 0 && self.group_mod_count() == 0
    }

    pub fn flow_mod_count(&self) -> usize {
        self.flow_adds.len() + self.flow_modifies.len() + self.flow_deletes.len()
    }

    pub fn group_mod_count(&self) -> usize {
        self.group_adds.len() + self.group_modifies.len() + self.group_deletes.len()
    }

    /// Messages of the whole [`bundle`](Self::bundle): OPEN, one ADD per mod, COMMIT.
    pub fn message_count(&self) -> usize {
        self.flow_mod_count() + self.group_mod_count() + 2
    }

    /// The mods in bundle order (see the module docs), each as (is_flow_mod, message body).
    pub fn ordered_messages(&self, first_xid: u32) -> Vec<Message> {
        let mut xid = first_xid;
        let mut next = || {
            let x = xid;
            xid = xid.wrapping_add(1);
            x
        };
        let mut out = Vec::with_capacity(self.flow_mod_count() + self.group_mod_count());
        for g in self.group_adds.iter().chain(&self.group_modifies) {
            out.push(Message::group_mod(next(), g.clone()));
        }
        for f in self
            .flow_adds
            .iter()
            .chain(&self.flow_modifies)
            .chain(&self.flow_deletes)
        {
            out.push(Message::flow_mod(next(), f.clone()));
        }
        for g in &self.group_deletes {
            out.push(Message::group_mod(next(), g.clone()));
        }
        out
    }

    /// The whole bundle: OPEN, one ADD per mod (xids from `first_xid` on; the ADD's xid equals
    /// its embedded message's, as OVS requires), COMMIT. Returns the messages and the commit
    /// xid.
    pub fn bundle(&self, bundle_id: u32, first_xid: u32) -> (Vec<Message>, u32) {
        let mods = self.ordered_messages(first_xid.wrapping_add(1));
        let commit_xid = first_xid.wrapping_add(1).wrapping_add(mods.len() as u32);
        let mut out = Vec::with_capacity(mods.len() + 2);
        out.push(Message::bundle_open(first_xid, bundle_id, BUNDLE_FLAGS));
        out.extend(
            mods.into_iter()
                .map(|m| Message::bundle_add(bundle_id, BUNDLE_FLAGS, m)),
        );
        out.push(Message::bundle_commit(commit_xid, bundle_id, BUNDLE_FLAGS));
        (out, commit_xid)
    }
}

/// Computes the difference between `desired` and the switch's dumps. `flows` must be the dump
/// filtered by the controller `cookie` (entries with other cookies are ignored anyway).
pub fn diff(
    desired: &DesiredSwitch,
    flows: &[FlowStats],
    groups: &[GroupDesc],
    cookie: u64,
    owned_groups: &OwnedGroups,
) -> Diff {
    let mut d = Diff::default();

    // ---- groups
    let installed_groups: BTreeMap<u32, &GroupDesc> =
        groups.iter().map(|g| (g.group_id, g)).collect();
    let mut desired_group_ids = BTreeSet::new();
    for g in &desired.groups {
        desired_group_ids.insert(g.group_id);
        match installed_groups.get(&g.group_id) {
            None => d.group_adds.push(GroupMod {
                command: GroupModCommand::Add,
                ..g.clone()
            }),
            Some(have) => {
                if !same_structure(have.group_type, &have.buckets, g.group_type, &g.buckets) {
                    d.group_modifies.push(GroupMod {
                        command: GroupModCommand::Modify,
                        ..g.clone()
                    });
                }
            }
        }
    }
    for id in installed_groups.keys() {
        if owned_groups.contains(id) && !desired_group_ids.contains(id) {
            d.group_deletes.push(GroupMod::delete(*id));
        }
    }

    // ---- flows
    let installed: BTreeMap<FlowKey, &FlowStats> = flows
        .iter()
        .filter(|f| f.cookie == cookie)
        .map(|f| (flow_key(f.table_id, f.priority, &f.r#match), f))
        .collect();
    let mut wanted = BTreeSet::new();
    for f in &desired.flows {
        let key = flow_key(f.table_id, f.priority, &f.r#match);
        match installed.get(&key) {
            None => d.flow_adds.push(FlowMod {
                command: FlowModCommand::Add,
                cookie,
                cookie_mask: 0,
                ..f.clone()
            }),
            Some(have) => {
                let timeouts_same =
                    have.idle_timeout == f.idle_timeout && have.hard_timeout == f.hard_timeout;
                if !timeouts_same {
                    // MODIFY does not change timeouts: replace the entry.
                    d.flow_modifies.push(FlowMod {
                        command: FlowModCommand::Add,
                        cookie,
                        cookie_mask: 0,
                        ..f.clone()
                    });
                } else if have.instructions != f.instructions {
                    d.flow_modifies.push(FlowMod {
                        command: FlowModCommand::ModifyStrict,
                        cookie,
                        cookie_mask: u64::MAX,
                        ..f.clone()
                    });
                }
            }
        }
        wanted.insert(key);
    }
    for (key, f) in &installed {
        if !wanted.contains(key) {
            d.flow_deletes.push(
                FlowMod::delete_strict(f.table_id, f.priority, f.r#match.clone())
                    .with_cookie_mask(cookie, u64::MAX),
            );
        }
    }
    d
}

/// An all-zero flow-stats entry (tests build dumps from it).
#[cfg(test)]
pub(crate) fn blank_stats() -> FlowStats {
    FlowStats {
        table_id: 0,
        duration_sec: 0,
        duration_nsec: 0,
        priority: 0,
        idle_timeout: 0,
        hard_timeout: 0,
        flags: 0,
        cookie: 0,
        packet_count: 0,
        byte_count: 0,
        r#match: Match::default(),
        instructions: Vec::new(),
    }
}

#[cfg(test)]
/// What a switch would report after installing `d` exactly.
pub(crate) fn installed(d: &DesiredSwitch) -> (Vec<FlowStats>, Vec<GroupDesc>) {
    let flows = d
        .flows
        .iter()
        .map(|f| FlowStats {
            table_id: f.table_id,
            priority: f.priority,
            idle_timeout: f.idle_timeout,
            hard_timeout: f.hard_timeout,
            cookie: f.cookie,
            r#match: f.r#match.clone(),
            instructions: f.instructions.clone(),
            ..blank_stats()
        })
        .collect();
    let groups = d
        .groups
        .iter()
        .map(|g| GroupDesc {
            group_type: g.group_type,
            group_id: g.group_id,
            buckets: g.buckets.clone(),
        })
        .collect();
    (flows, groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desired::fixture::{LineFixture, FIXTURE_GROUP_ID};
    use fabricflow_proto::openflow::action::Action;
    use fabricflow_proto::openflow::instruction::Instruction;
    use fabricflow_proto::openflow::message::Body;
    use fabricflow_proto::openflow::oxm::OxmField;
    use std::collections::BTreeSet;

    const COOKIE: u64 = 0xff_0001;
    const OWNED: OwnedGroups = 1000..=1999;

    fn desired() -> DesiredSwitch {
        let f = LineFixture::new(0x10, 3, COOKIE);
        f.plan(&BTreeSet::new()).remove(&0x11).unwrap()
    }

    use crate::desired::PlanSource;

    #[test]
    fn identical_gives_nothing() {
        let d = desired();
        let (f, g) = installed(&d);
        let x = diff(&d, &f, &g, COOKIE, &OWNED);
        assert!(x.is_empty(), "{x:?}");
    }

    #[test]
    fn empty_switch_gets_everything_groups_first() {
        let d = desired();
        let x = diff(&d, &[], &[], COOKIE, &OWNED);
        assert_eq!(x.flow_adds.len(), d.flows.len());
        assert_eq!(x.group_adds.len(), 1);
        let (msgs, commit) = x.bundle(7, 100);
        assert!(matches!(msgs[0].body, Body::BundleControl(_)));
        assert_eq!(msgs[0].xid, 100);
        let Body::BundleAdd(first) = &msgs[1].body else {
            panic!()
        };
        assert!(matches!(first.message.body, Body::GroupMod(_)));
        assert_eq!(msgs[1].xid, first.message.xid);
        assert_eq!(msgs.last().unwrap().xid, commit);
        assert_eq!(msgs.len(), d.flows.len() + 3);
    }

    #[test]
    fn match_field_order_is_irrelevant() {
        let d = desired();
        let (mut f, g) = installed(&d);
        for fs in &mut f {
            fs.r#match.fields.reverse();
        }
        // Give one flow two fields so the reversal matters.
        let mut d2 = d.clone();
        let m = Match::new()
            .with(OxmField::EthType(0x0800))
            .with(OxmField::InPort(1));
        d2.flows
            .push(FlowMod::add(0, 5, m.clone(), vec![]).with_cookie(COOKIE));
        let mut m_rev = m;
        m_rev.fields.reverse();
        f.push(FlowStats {
            priority: 5,
            cookie: COOKIE,
            r#match: m_rev,
            ..blank_stats()
        });
        assert!(diff(&d2, &f, &g, COOKIE, &OWNED).is_empty());
    }

    #[test]
    fn weight_only_change_gives_nothing() {
        let d = desired();
        let (f, mut g) = installed(&d);
        for b in &mut g[0].buckets {
            b.weight = 1 + b.weight / 3;
        }
        let x = diff(&d, &f, &g, COOKIE, &OWNED);
        assert!(x.is_empty(), "{x:?}");
    }

    #[test]
    fn bucket_change_gives_modify() {
        let d = desired();
        let (f, mut g) = installed(&d);
        // Bucket action differs.
        g[0].buckets[0].actions = vec![Action::output(9)];
        let x = diff(&d, &f, &g, COOKIE, &OWNED);
        assert_eq!(x.group_modifies.len(), 1);
        assert_eq!(x.group_modifies[0].command, GroupModCommand::Modify);
        assert_eq!(x.group_modifies[0].buckets, d.groups[0].buckets);
        assert_eq!(x.flow_mod_count(), 0);
        // Bucket count differs.
        let (_, mut g2) = installed(&d);
        g2[0].buckets.pop();
        assert_eq!(diff(&d, &f, &g2, COOKIE, &OWNED).group_modifies.len(), 1);
        // Watch port differs.
        let (_, mut g3) = installed(&d);
        g3[0].buckets[0].watch_port = 4;
        assert_eq!(diff(&d, &f, &g3, COOKIE, &OWNED).group_modifies.len(), 1);
        // Type differs.
        let (_, mut g4) = installed(&d);
        g4[0].group_type = GroupType::All;
        assert_eq!(diff(&d, &f, &g4, COOKIE, &OWNED).group_modifies.len(), 1);
    }

    #[test]
    fn foreign_cookie_untouched_and_foreign_group_range_untouched() {
        let d = desired();
        let (mut f, mut g) = installed(&d);
        f.push(FlowStats {
            table_id: 0,
            priority: 1,
            cookie: 0xdead,
            ..blank_stats()
        });
        g.push(GroupDesc {
            group_type: GroupType::Select,
            group_id: 5,
            buckets: vec![],
        });
        let x = diff(&d, &f, &g, COOKIE, &OWNED);
        assert!(x.is_empty(), "{x:?}");
    }

    #[test]
    fn stale_flow_and_group_deleted_flows_before_groups() {
        let d = desired();
        let (mut f, mut g) = installed(&d);
        f.push(FlowStats {
            table_id: 1,
            priority: 7,
            cookie: COOKIE,
            r#match: Match::new().with(OxmField::InPort(3)),
            ..blank_stats()
        });
        g.push(GroupDesc {
            group_type: GroupType::Select,
            group_id: 1500,
            buckets: vec![],
        });
        let x = diff(&d, &f, &g, COOKIE, &OWNED);
        assert_eq!(x.flow_deletes.len(), 1);
        assert_eq!(x.flow_deletes[0].command, FlowModCommand::DeleteStrict);
        assert_eq!(x.flow_deletes[0].cookie_mask, u64::MAX);
        assert_eq!(x.flow_deletes[0].priority, 7);
        assert_eq!(x.group_deletes, vec![GroupMod::delete(1500)]);
        let msgs = x.ordered_messages(1);
        assert!(matches!(msgs[0].body, Body::FlowMod(_)));
        assert!(matches!(msgs[1].body, Body::GroupMod(_)));
    }

    #[test]
    fn changed_instructions_modify_strict_with_cookie() {
        let d = desired();
        let (mut f, g) = installed(&d);
        f[1].instructions = vec![Instruction::GotoTable(2)];
        let x = diff(&d, &f, &g, COOKIE, &OWNED);
        assert_eq!(x.flow_modifies.len(), 1);
        assert_eq!(x.flow_modifies[0].command, FlowModCommand::ModifyStrict);
        assert_eq!(x.flow_modifies[0].cookie_mask, u64::MAX);
        // Changed timeouts replace the entry.
        let (mut f2, _) = installed(&d);
        f2[1].idle_timeout = 9;
        assert_eq!(
            diff(&d, &f2, &g, COOKIE, &OWNED).flow_modifies[0].command,
            FlowModCommand::Add
        );
    }

    #[test]
    fn full_order_groups_then_flows_then_deletes() {
        let mut d = desired();
        let (mut f, mut g) = installed(&d);
        // New group 1001 + flow using it; stale flow; stale group; modified group 1000.
        d.groups.push(GroupMod::add_select(
            1001,
            vec![Bucket::new(1, vec![Action::output(2)])],
        ));
        d.flows.push(
            FlowMod::add(
                1,
                60,
                Match::new().with(OxmField::InPort(2)),
                vec![Instruction::ApplyActions(vec![Action::group(1001)])],
            )
            .with_cookie(COOKIE),
        );
        g[0].buckets.pop();
        g.push(GroupDesc {
            group_type: GroupType::Select,
            group_id: 1002,
            buckets: vec![],
        });
        f.push(FlowStats {
            table_id: 2,
            priority: 3,
            cookie: COOKIE,
            ..blank_stats()
        });
        let x = diff(&d, &f, &g, COOKIE, &OWNED);
        let kinds: Vec<String> = x
            .ordered_messages(1)
            .iter()
            .map(|m| match &m.body {
                Body::GroupMod(g) => format!("group-{:?}-{}", g.command, g.group_id),
                Body::FlowMod(f) => format!("flow-{:?}", f.command),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "group-Add-1001",
                format!("group-Modify-{FIXTURE_GROUP_ID}").as_str(),
                "flow-Add",
                "flow-DeleteStrict",
                "group-Delete-1002"
            ]
        );
    }
}
