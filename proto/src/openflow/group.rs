//! Groups: `ofp_bucket`, the group types and OFPT_GROUP_MOD.

use std::fmt;

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use super::action::{decode_actions, encode_actions, Action, ActionList};
use super::layout::{mod_command, ofp_struct, wire_enum};
use super::port::{PortNo, OFPP_ANY};
use crate::wire::{self, PResult, Wire};

/// Last usable group number.
pub const OFPG_MAX: u32 = 0xffff_ff00;
/// All groups (GROUP_MOD delete, stats requests).
pub const OFPG_ALL: u32 = 0xffff_fffc;
/// Wildcard group (no group), e.g. for `watch_group`.
pub const OFPG_ANY: u32 = 0xffff_ffff;

/// Fixed part of `ofp_bucket`.
pub const BUCKET_HEADER_LEN: usize = 16;

wire_enum! {
    /// OFPGT_* group types.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
    pub enum GroupType: u8 {
        #[default]
        All = 0 => "all",
        Select = 1 => "select",
        Indirect = 2 => "indirect",
        FastFailover = 3 => "ff",
        _ => Unknown => "type",
    }
}

// ---- ofp_bucket ---------------------------------------------------------------------------

/// `ofp_bucket`: length, weight, watch port and group, then actions. The length field is
/// computed on encode from the actions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Bucket {
    /// Relative weight (SELECT groups only; 0 otherwise).
    pub weight: u16,
    /// Port whose liveness the bucket depends on (FAST_FAILOVER), `OFPP_ANY` if none.
    pub watch_port: u32,
    /// Group whose liveness the bucket depends on (FAST_FAILOVER), `OFPG_ANY` if none.
    pub watch_group: u32,
    pub actions: Vec<Action>,
}

impl Default for Bucket {
    fn default() -> Self {
        Bucket {
            weight: 0,
            watch_port: OFPP_ANY,
            watch_group: OFPG_ANY,
            actions: Vec::new(),
        }
    }
}

impl Bucket {
    /// A bucket with a weight and actions, watching nothing.
    pub fn new(weight: u16, actions: Vec<Action>) -> Self {
        Bucket {
            weight,
            actions,
            ..Bucket::default()
        }
    }

    /// A fast-failover bucket watching a port.
    pub fn watching(watch_port: u32, actions: Vec<Action>) -> Self {
        Bucket {
            watch_port,
            actions,
            ..Bucket::default()
        }
    }

    /// Sets the weight (builder style).
    pub fn with_weight(mut self, weight: u16) -> Self {
        self.weight = weight;
        self
    }

    /// The `len` field this bucket encodes with.
    pub fn len(&self) -> usize {
        BUCKET_HEADER_LEN + super::action::actions_len(&self.actions)
    }

    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// The port of the first `output` action, if any (bucket 0 of a fabricflow SELECT group
    /// is the minimal port).
    pub fn output_port(&self) -> Option<u32> {
        self.actions.iter().find_map(|a| match a {
            Action::Output { port, .. } => Some(*port),
            _ => None,
        })
    }
}

impl Wire for Bucket {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (_, len) = wire::u16_(input, "bucket length")?;
        let len = usize::from(len);
        if len < BUCKET_HEADER_LEN {
            return wire::bad_length(input, "bucket", len, "shorter than its header");
        }
        let (rest, whole) = wire::take(input, len, "bucket")?;
        let (b, weight) = wire::u16_(whole.get(2..).unwrap_or_default(), "bucket weight")?;
        let (b, watch_port) = wire::u32_(b, "bucket watch_port")?;
        let (b, watch_group) = wire::u32_(b, "bucket watch_group")?;
        let (b, ()) = wire::skip(b, 4, "bucket pad")?;
        let (_, actions) = decode_actions(b)?;
        Ok((
            rest,
            Bucket {
                weight,
                watch_port,
                watch_group,
                actions,
            },
        ))
    }

    fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_u16(0); // patched below
        out.put_u16(self.weight);
        out.put_u32(self.watch_port);
        out.put_u32(self.watch_group);
        wire::put_zeros(out, 4);
        encode_actions(&self.actions, out);
        let len = out.len() - start;
        wire::patch_u16(out, start, wire::len_u16(len));
    }
}

impl fmt::Display for Bucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "weight:{}", self.weight)?;
        if self.watch_port != OFPP_ANY {
            write!(f, ",watch_port:{}", PortNo(self.watch_port))?;
        }
        if self.watch_group != OFPG_ANY {
            write!(f, ",watch_group:{}", self.watch_group)?;
        }
        write!(f, ",actions={}", ActionList(&self.actions))
    }
}

// ---- GROUP_MOD ----------------------------------------------------------------------------

mod_command!(
    /// `ofp_group_mod_command`.
    GroupModCommand
);

ofp_struct! {
    /// OFPT_GROUP_MOD body: command, type, pad, group_id, buckets (to the end of the message).
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct GroupMod("group_mod" separator " ") {
        pub command: GroupModCommand,
        pub group_type: GroupType as "type",
        pad: [u8; 1],
        pub group_id: u32,
        pub buckets: Vec<Bucket>,
    }
}

/// Fixed part of the GROUP_MOD body.
pub const GROUP_MOD_FIXED_LEN: usize = 8;

impl GroupMod {
    pub fn add(group_type: GroupType, group_id: u32, buckets: Vec<Bucket>) -> Self {
        GroupMod {
            command: GroupModCommand::Add,
            group_type,
            group_id,
            buckets,
        }
    }

    pub fn modify(group_type: GroupType, group_id: u32, buckets: Vec<Bucket>) -> Self {
        GroupMod {
            command: GroupModCommand::Modify,
            group_type,
            group_id,
            buckets,
        }
    }

    /// Deletes a group (`OFPG_ALL` deletes every group).
    pub fn delete(group_id: u32) -> Self {
        GroupMod {
            command: GroupModCommand::Delete,
            group_type: GroupType::All,
            group_id,
            buckets: Vec::new(),
        }
    }

    pub fn add_select(group_id: u32, buckets: Vec<Bucket>) -> Self {
        GroupMod::add(GroupType::Select, group_id, buckets)
    }

    pub fn modify_select(group_id: u32, buckets: Vec<Bucket>) -> Self {
        GroupMod::modify(GroupType::Select, group_id, buckets)
    }

    /// The bucket weights, in order.
    pub fn weights(&self) -> Vec<u16> {
        self.buckets.iter().map(|b| b.weight).collect()
    }
}

impl fmt::Display for GroupMod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} group_id=", self.command)?;
        match self.group_id {
            OFPG_ALL => f.write_str("ALL")?,
            OFPG_ANY => f.write_str("ANY")?,
            g => write!(f, "{g}")?,
        }
        write!(f, ",type={}", self.group_type)?;
        for b in &self.buckets {
            write!(f, ",bucket={b}")?;
        }
        Ok(())
    }
}

// ---- tests --------------------------------------------------------------------------------

#[cfg(test)]
pub(crate) mod arb {
    use super::*;
    use crate::openflow::action::arb::any_actions;
    use crate::openflow::port::arb::any_port_no;
    use proptest::prelude::*;

    pub fn any_group_type() -> impl Strategy<Value = GroupType> {
        any::<u8>().prop_map(GroupType::from_u8)
    }

    pub fn any_bucket() -> impl Strategy<Value = Bucket> {
        (any::<u16>(), any_port_no(), any::<u32>(), any_actions()).prop_map(
            |(weight, watch_port, watch_group, actions)| Bucket {
                weight,
                watch_port,
                watch_group,
                actions,
            },
        )
    }

    pub fn any_group_mod() -> impl Strategy<Value = GroupMod> {
        (
            any::<u16>(),
            any_group_type(),
            any::<u32>(),
            proptest::collection::vec(any_bucket(), 0..4),
        )
            .prop_map(|(c, group_type, group_id, buckets)| GroupMod {
                command: GroupModCommand::from_u16(c),
                group_type,
                group_id,
                buckets,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::arb::*;
    use super::*;
    use crate::openflow::oxm::test_util::*;
    use proptest::prelude::*;

    /// OVS tests/ofp-print.at "OFPT_GROUP_MOD" (OF1.1, whose group_mod and bucket layout
    /// is the one of OpenFlow 1.3), body after the 8-byte header.
    const GROUP_MOD_OVS: &str = "00 00 01 00 87 65 43 21 \
        00 20 00 64 00 00 00 01 ff ff ff ff 00 00 00 00 \
        00 00 00 10 00 00 00 01 00 00 00 00 00 00 00 00 \
        00 20 00 c8 00 00 00 02 ff ff ff ff 00 00 00 00 \
        00 00 00 10 00 00 00 02 00 00 00 00 00 00 00 00 \
        00 20 00 c8 00 00 00 03 ff ff ff ff 00 00 00 00 \
        00 00 00 10 00 00 00 03 00 00 00 00 00 00 00 00";

    #[test]
    fn group_mod_select_golden_ovs() {
        let b = hex_bytes(GROUP_MOD_OVS);
        let g = GroupMod::from_bytes(&b).unwrap();
        assert_eq!(g.command, GroupModCommand::Add);
        assert_eq!(g.group_type, GroupType::Select);
        assert_eq!(g.group_id, 2271560481);
        assert_eq!(g.weights(), vec![100, 200, 200]);
        for (n, bucket) in g.buckets.iter().enumerate() {
            let port = n as u32 + 1;
            assert_eq!(bucket.watch_port, port);
            assert_eq!(bucket.watch_group, OFPG_ANY);
            assert_eq!(bucket.actions, vec![Action::output(port)]);
            assert_eq!(bucket.len(), 32);
        }
        assert_eq!(&g.to_bytes()[..], &b[..]);
        assert_eq!(
            g.to_string(),
            "ADD group_id=2271560481,type=select,\
             bucket=weight:100,watch_port:1,actions=output:1,\
             bucket=weight:200,watch_port:2,actions=output:2,\
             bucket=weight:200,watch_port:3,actions=output:3"
        );
    }

    #[test]
    fn constructors() {
        let g = GroupMod::add_select(
            1003,
            vec![
                Bucket::new(200, vec![Action::output(5)]),
                Bucket::new(55, vec![Action::output(6)]),
                Bucket::new(1, vec![Action::output(5)]),
            ],
        );
        assert_eq!(g.buckets[0].to_string(), "weight:200,actions=output:5");
        assert_eq!(g.buckets[0].output_port(), Some(5));
        assert_eq!(g.weights(), vec![200, 55, 1]);
        check_roundtrip(&g);
        let d = GroupMod::delete(OFPG_ALL);
        assert_eq!(d.to_string(), "DEL group_id=ALL,type=all");
        assert_eq!(d.to_bytes().len(), 8);
    }

    #[test]
    fn rejects_bad_buckets() {
        // bucket length 8 < 16
        let b = hex_bytes("00 00 01 00 00 00 00 01 00 08 00 64 00 00 00 01");
        let e = GroupMod::from_bytes(&b).unwrap_err();
        assert_eq!(e.offset, 8);
        // bucket longer than the message
        let b =
            hex_bytes("00 00 01 00 00 00 00 01 00 28 00 64 00 00 00 01 ff ff ff ff 00 00 00 00");
        assert!(GroupMod::from_bytes(&b).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn bucket_roundtrip(v in any_bucket()) {
            check_roundtrip(&v);
            check_truncations(&v);
            let _ = v.to_string();
        }
        #[test]
        fn group_mod_roundtrip(v in any_group_mod()) {
            check_roundtrip(&v);
            check_prefixes(&v, GROUP_MOD_FIXED_LEN);
            let _ = v.to_string();
        }
        #[test]
        fn group_random(b in proptest::collection::vec(any::<u8>(), 0..96)) {
            let _ = Bucket::decode(&b);
            if let Ok(g) = GroupMod::from_bytes(&b) {
                prop_assert_eq!(g.to_bytes().len(), b.len());
            }
        }
    }
}
