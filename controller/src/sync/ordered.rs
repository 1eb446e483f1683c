//! Applying a [`Diff`] without the ONF bundle extension (pure): plain FLOW_MODs and GROUP_MODs in
//! make-before-break steps, each closed by a barrier, for switches that refuse bundles.
//!
//! Without a barrier a switch may apply messages in any order (OpenFlow 1.3 §6.2), so order
//! only holds between steps:
//! 1. new groups (the flows of the next steps may point at them);
//! 2. new flows (new matches exist beside the old ones);
//! 3. group and flow modifications (each replaces one entry in place);
//! 4. stale flows deleted (their traffic is covered by step 2's flows already);
//! 5. stale groups deleted (no flow points at them any more; OVS deletes the flows using a
//!    deleted group, which would black-hole them).
//!
//! After every prefix of this sequence, under any order within a step, each flow's group exists
//! and no flow key that exists before and after the sync is missing; flows that exist only
//! before or only after never disappear before their replacements exist.

use fabricflow_proto::openflow::flow::FlowMod;
use fabricflow_proto::openflow::group::GroupMod;

use super::diff::Diff;

/// One FLOW_MOD or GROUP_MOD of a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Group(GroupMod),
    Flow(FlowMod),
}

/// The steps that apply `d` make-before-break; empty steps are left out. Send each step's
/// changes, then a barrier, and the next step only after that barrier's reply.
pub fn ordered_steps(d: &Diff) -> Vec<Vec<Change>> {
    let groups = |v: &[GroupMod]| v.iter().cloned().map(Change::Group).collect::<Vec<_>>();
    let flows = |v: &[FlowMod]| v.iter().cloned().map(Change::Flow).collect::<Vec<_>>();
    let mut modify = groups(&d.group_modifies);
    modify.extend(flows(&d.flow_modifies));
    [
        groups(&d.group_adds),
        flows(&d.flow_adds),
        modify,
        flows(&d.flow_deletes),
        groups(&d.group_deletes),
    ]
    .into_iter()
    .filter(|s| !s.is_empty())
    .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use fabricflow_proto::mac::MacAddr;
    use fabricflow_proto::openflow::action::Action;
    use fabricflow_proto::openflow::flow::FlowModCommand;
    use fabricflow_proto::openflow::group::{Bucket, GroupModCommand};
    use fabricflow_proto::openflow::instruction::Instruction;
    use fabricflow_proto::openflow::oxm::{Match, OxmField};
    use proptest::prelude::*;

    use super::*;
    use crate::desired::DesiredSwitch;
    use crate::sync::diff::{diff, match_key, FlowKey};

    const COOKIE: u64 = 0x77;
    const OWNED: std::ops::RangeInclusive<u32> = 1000..=1999;

    /// A flow of a generated state: destination `dst` (its match), the group it uses (or a
    /// plain output), and a variant of its instructions.
    type FlowSpec = (u8, Option<u32>, u8);

    fn flow(&(dst, group, variant): &FlowSpec) -> FlowMod {
        let mut actions = vec![Action::output(u32::from(variant) + 1)];
        if let Some(g) = group {
            actions = vec![Action::group(g)];
        }
        FlowMod::add(
            1,
            100,
            Match::new().with(OxmField::EthDst {
                value: MacAddr([2, 0, 0, 0, 0, dst]),
                mask: None,
            }),
            vec![Instruction::ApplyActions(actions)],
        )
        .with_cookie(COOKIE)
    }

    fn group(id: u32, ports: u8) -> GroupMod {
        GroupMod::add_select(
            id,
            (0..ports)
                .map(|p| Bucket::new(1, vec![Action::output(u32::from(p) + 1)]))
                .collect(),
        )
    }

    /// A consistent switch state: flows use only groups it has.
    fn state(flows: &[FlowSpec], groups: &BTreeMap<u32, u8>) -> DesiredSwitch {
        let mut by_dst = BTreeMap::new();
        for f in flows {
            let g = f.1.filter(|g| groups.contains_key(g));
            by_dst.insert(f.0, (f.0, g, f.2));
        }
        DesiredSwitch {
            dpid: 1,
            name: "s".into(),
            flows: by_dst.values().map(flow).collect(),
            groups: groups.iter().map(|(id, p)| group(*id, *p)).collect(),
            fabric_ports: BTreeMap::new(),
        }
    }

    /// The switch model the invariant is checked on: flows by key (→ groups they use), groups.
    #[derive(Debug, Clone)]
    struct Switch {
        flows: BTreeMap<FlowKey, BTreeSet<u32>>,
        groups: BTreeSet<u32>,
    }

    fn uses(f: &FlowMod) -> BTreeSet<u32> {
        f.instructions
            .iter()
            .flat_map(|i| match i {
                Instruction::ApplyActions(a) | Instruction::WriteActions(a) => a.clone(),
                _ => Vec::new(),
            })
            .filter_map(|a| match a {
                Action::Group(g) => Some(g),
                _ => None,
            })
            .collect()
    }

    fn key(f: &FlowMod) -> FlowKey {
        (f.table_id, f.priority, match_key(&f.r#match))
    }

    impl Switch {
        fn holding(d: &DesiredSwitch) -> Switch {
            Switch {
                flows: d.flows.iter().map(|f| (key(f), uses(f))).collect(),
                groups: d.groups.iter().map(|g| g.group_id).collect(),
            }
        }

        /// What OVS does with each message (a flow using a missing group is refused; deleting
        /// a group deletes the flows that use it).
        fn apply(&mut self, c: &Change) {
            match c {
                Change::Group(g) => match g.command {
                    GroupModCommand::Add | GroupModCommand::Modify => {
                        self.groups.insert(g.group_id);
                    }
                    GroupModCommand::Delete => {
                        self.groups.remove(&g.group_id);
                        self.flows.retain(|_, u| !u.contains(&g.group_id));
                    }
                    _ => {}
                },
                Change::Flow(f) => match f.command {
                    FlowModCommand::Add | FlowModCommand::Modify | FlowModCommand::ModifyStrict => {
                        let u = uses(f);
                        if u.is_subset(&self.groups) {
                            self.flows.insert(key(f), u);
                        }
                    }
                    FlowModCommand::Delete | FlowModCommand::DeleteStrict => {
                        self.flows.remove(&key(f));
                    }
                    FlowModCommand::Other(_) => {}
                },
            }
        }
    }

    use crate::sync::diff::installed as dump;

    /// Checks the invariant after every prefix of `steps`, the changes within a step applied
    /// in the order given; returns the final state.
    fn check_prefixes(
        old: &DesiredSwitch,
        new: &DesiredSwitch,
        steps: &[Vec<Change>],
    ) -> Result<Switch, String> {
        let (before, after) = (Switch::holding(old), Switch::holding(new));
        let old_only: BTreeSet<_> = before
            .flows
            .keys()
            .filter(|k| !after.flows.contains_key(*k))
            .cloned()
            .collect();
        let new_only: BTreeSet<_> = after
            .flows
            .keys()
            .filter(|k| !before.flows.contains_key(*k))
            .cloned()
            .collect();
        let mut sw = before.clone();
        let mut n = 0;
        for step in steps {
            for c in step {
                sw.apply(c);
                n += 1;
                for (k, u) in &sw.flows {
                    if !u.is_subset(&sw.groups) {
                        return Err(format!("after {n}: flow {k:?} uses a missing group"));
                    }
                }
                for k in before.flows.keys().filter(|k| after.flows.contains_key(*k)) {
                    if !sw.flows.contains_key(k) {
                        return Err(format!("after {n}: flow {k:?} missing mid-update"));
                    }
                }
                let old_all = old_only.iter().all(|k| sw.flows.contains_key(k));
                let new_all = new_only.iter().all(|k| sw.flows.contains_key(k));
                if !old_all && !new_all {
                    return Err(format!("after {n}: neither the old nor the new flows"));
                }
            }
        }
        Ok(sw)
    }

    fn any_state() -> impl Strategy<Value = (Vec<FlowSpec>, BTreeMap<u32, u8>)> {
        (
            proptest::collection::vec((0u8..6, proptest::option::of(1000u32..1004), 0u8..2), 0..8),
            proptest::collection::btree_map(1000u32..1004, 1u8..3, 0..4),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Any consistent switch state to any other: every prefix keeps the invariant, in the
        /// planned order and with each step's changes reversed (a switch may reorder within a
        /// step), and the end state is the new one.
        #[test]
        fn every_prefix_is_make_before_break((of, og) in any_state(), (nf, ng) in any_state()) {
            let old = state(&of, &og);
            let new = state(&nf, &ng);
            let (flows, groups) = dump(&old);
            let d = diff(&new, &flows, &groups, COOKIE, &OWNED);
            let steps = ordered_steps(&d);
            let end = check_prefixes(&old, &new, &steps).map_err(TestCaseError::fail)?;
            let reversed: Vec<Vec<Change>> =
                steps.iter().map(|s| s.iter().rev().cloned().collect()).collect();
            check_prefixes(&old, &new, &reversed).map_err(TestCaseError::fail)?;
            let want = Switch::holding(&new);
            prop_assert_eq!(&end.flows, &want.flows);
            prop_assert_eq!(&end.groups, &want.groups);
        }
    }

    #[test]
    fn steps_in_make_before_break_order() {
        let mut groups = BTreeMap::from([(1000, 2), (1001, 1)]);
        let old = state(
            &[(1, Some(1000), 0), (2, Some(1001), 0), (3, None, 0)],
            &groups,
        );
        groups.remove(&1001);
        groups.insert(1000, 1);
        groups.insert(1002, 2);
        let new = state(
            &[(1, Some(1002), 0), (3, None, 1), (4, Some(1000), 0)],
            &groups,
        );
        let (flows, g) = dump(&old);
        let steps = ordered_steps(&diff(&new, &flows, &g, COOKIE, &OWNED));
        let kinds: Vec<Vec<String>> = steps
            .iter()
            .map(|s| {
                s.iter()
                    .map(|c| match c {
                        Change::Group(g) => format!("group-{:?}-{}", g.command, g.group_id),
                        Change::Flow(f) => format!("flow-{:?}", f.command),
                    })
                    .collect()
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                vec!["group-Add-1002".to_string()],
                vec!["flow-Add".into()],
                vec![
                    "group-Modify-1000".into(),
                    "flow-ModifyStrict".into(),
                    "flow-ModifyStrict".into()
                ],
                vec!["flow-DeleteStrict".into()],
                vec!["group-Delete-1001".into()],
            ]
        );
        assert!(check_prefixes(&old, &new, &steps).is_ok());
        // The bundle order (deletes among the flows, one step) breaks the invariant here.
        let one: Vec<Vec<Change>> = vec![steps.iter().rev().flatten().cloned().collect()];
        assert!(check_prefixes(&old, &new, &one).is_err());
        assert!(ordered_steps(&Diff::default()).is_empty());
    }
}
