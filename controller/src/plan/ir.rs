//! A small typed representation of the OpenFlow 1.3 rules the planner emits.
//!
//! Why not `fabricflow_proto::openflow` directly: the planner, the in-memory pipeline, the
//! `ovs-ofctl` text writer and the tests only need the handful of fields and actions below, and
//! keeping them here lets the plan be compared, sorted, hashed and serialised as plain data. The
//! conversion to wire messages is a separate, mechanical step.
//!
//! Semantics follow OpenFlow 1.3 (OXM fields; `vlan_vid` carries OFPVID_PRESENT = 0x1000) and,
//! for [`Action::Move`] and [`Action::NxController`], the Nicira extensions of Open vSwitch.

use std::net::Ipv4Addr;

use fabricflow_proto::MacAddr;
use serde::Serialize;

use crate::topology::PortNo;

/// Reserved OpenFlow port numbers used by the plan.
pub mod ports {
    use super::PortNo;
    /// OFPP_IN_PORT: send back out of the arrival port.
    pub const IN_PORT: PortNo = 0xffff_fff8;
    /// OFPP_CONTROLLER.
    pub const CONTROLLER: PortNo = 0xffff_fffd;
}

/// OFPVID_PRESENT: the bit of an OXM `vlan_vid` saying a tag is present.
pub const VID_PRESENT: u16 = 0x1000;

/// A value with a mask (bits set in `mask` must match).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Masked<T> {
    pub value: T,
    pub mask: T,
}

/// The match fields the plan uses; `None` means wildcarded.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Match {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_port: Option<PortNo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eth_type: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eth_dst: Option<Masked<MacAddr>>,
    /// OXM semantics: value/mask include [`VID_PRESENT`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vlan_vid: Option<Masked<u16>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vlan_pcp: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arp_op: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arp_tpa: Option<Masked<Ipv4Addr>>,
    /// Used only by the per-flow rules of a phase ([`crate::flowroute::phase_rules`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eth_src: Option<Masked<MacAddr>>,
}

/// Packet fields that actions can write or move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Field {
    EthSrc,
    EthDst,
    VlanVid,
    VlanPcp,
    /// IPv4 DSCP (6 bits; OpenFlow's prerequisite: `eth_type = 0x0800`).
    IpDscp,
    ArpOp,
    ArpSpa,
    ArpTpa,
    ArpSha,
    ArpTha,
    /// Nicira register `reg0..reg7` (32 bits).
    Reg(u8),
}

impl Field {
    /// Width in bits.
    pub fn bits(self) -> u8 {
        match self {
            Field::EthSrc | Field::EthDst | Field::ArpSha | Field::ArpTha => 48,
            Field::VlanVid => 12,
            Field::VlanPcp => 3,
            Field::IpDscp => 6,
            Field::ArpOp => 16,
            Field::ArpSpa | Field::ArpTpa | Field::Reg(_) => 32,
        }
    }
}

/// A bit range of a field: `n_bits` bits starting at bit `ofs` (bit 0 = least significant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FieldRange {
    pub field: Field,
    pub ofs: u8,
    pub n_bits: u8,
}

impl FieldRange {
    /// The whole field.
    pub fn whole(field: Field) -> Self {
        FieldRange {
            field,
            ofs: 0,
            n_bits: field.bits(),
        }
    }
}

/// One action.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Action {
    /// Output to a port (physical or reserved; CONTROLLER uses max_len = OFPCML_NO_BUFFER).
    Output(PortNo),
    /// Process by a group.
    Group(u32),
    /// Write a constant into a field (`value` right-aligned in the low bits; for
    /// [`Field::VlanVid`] it includes [`VID_PRESENT`] as OXM requires).
    SetField { field: Field, value: u64 },
    /// Push an 802.1Q tag with this TPID.
    PushVlan(u16),
    /// Pop the outer 802.1Q tag.
    PopVlan,
    /// Nicira `controller(id=…)`: packet-in only to connections with this controller id.
    NxController { id: u16 },
    /// Nicira `move`: copy bits between fields (OpenFlow 1.5 copy_field).
    Move { src: FieldRange, dst: FieldRange },
}

/// The instructions of a flow. An empty set drops.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Instructions {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub apply: Vec<Action>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<Action>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goto_table: Option<u8>,
}

impl Instructions {
    /// Apply-actions only.
    pub fn apply(actions: Vec<Action>) -> Self {
        Instructions {
            apply: actions,
            ..Default::default()
        }
    }
    /// Apply-actions then goto.
    pub fn goto(actions: Vec<Action>, table: u8) -> Self {
        Instructions {
            apply: actions,
            write: Vec::new(),
            goto_table: Some(table),
        }
    }
    /// Drop (no instruction).
    pub fn drop() -> Self {
        Instructions::default()
    }
}

/// One flow entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Flow {
    pub table: u8,
    pub priority: u16,
    pub cookie: u64,
    #[serde(rename = "match")]
    pub matches: Match,
    pub instructions: Instructions,
}

/// OpenFlow group types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum GroupType {
    All,
    Select,
    Indirect,
    FastFailover,
}

/// One bucket.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Bucket {
    pub weight: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watch_port: Option<PortNo>,
    pub actions: Vec<Action>,
}

/// One group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Group {
    pub id: u32,
    pub kind: GroupType,
    pub buckets: Vec<Bucket>,
}
