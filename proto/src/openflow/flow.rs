//! OFPT_FLOW_MOD and OFPT_FLOW_REMOVED bodies.

use std::fmt;

use serde::Serialize;

use super::group::OFPG_ANY;
use super::instruction::{Instruction, InstructionList};
use super::layout::{ofp_struct, wire_enum};
use super::oxm::Match;
use super::packet::OFP_NO_BUFFER;
use super::port::{PortNo, OFPP_ANY};
use super::table::OFPTT_ALL;

/// `ofp_flow_mod_flags` bits.
pub mod flags {
    pub const SEND_FLOW_REM: u16 = 1 << 0;
    pub const CHECK_OVERLAP: u16 = 1 << 1;
    pub const RESET_COUNTS: u16 = 1 << 2;
    pub const NO_PKT_COUNTS: u16 = 1 << 3;
    pub const NO_BYT_COUNTS: u16 = 1 << 4;
}

/// Priority of a flow entry when none is given.
pub const OFP_DEFAULT_PRIORITY: u16 = 0x8000;

wire_enum! {
    /// `ofp_flow_mod_command`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
    pub enum FlowModCommand: u8 {
        #[default]
        Add = 0 => "ADD",
        Modify = 1 => "MOD",
        ModifyStrict = 2 => "MOD_STRICT",
        Delete = 3 => "DEL",
        DeleteStrict = 4 => "DEL_STRICT",
        _ => Other => "CMD",
    }
}

// ---- FLOW_MOD -----------------------------------------------------------------------------

ofp_struct! {
    /// OFPT_FLOW_MOD body: 40 fixed bytes, the match, then instructions to the end of the message.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize)]
    pub struct FlowMod("flow_mod" separator " ") {
        pub cookie: u64,
        /// For MODIFY/DELETE: which cookie bits must match (0: ignore cookies).
        pub cookie_mask: u64,
        pub table_id: u8,
        pub command: FlowModCommand,
        pub idle_timeout: u16,
        pub hard_timeout: u16,
        pub priority: u16,
        pub buffer_id: u32,
        /// For DELETE: only entries outputting to this port (`OFPP_ANY`: no restriction).
        pub out_port: u32,
        /// For DELETE: only entries outputting to this group (`OFPG_ANY`: no restriction).
        pub out_group: u32,
        /// `flags::*` bits.
        pub flags: u16,
        pad: [u8; 2],
        pub r#match: Match,
        pub instructions: Vec<Instruction>,
    }
}

/// Fixed part of the FLOW_MOD body before the match.
pub const FLOW_MOD_FIXED_LEN: usize = 40;

impl Default for FlowMod {
    fn default() -> Self {
        FlowMod {
            cookie: 0,
            cookie_mask: 0,
            table_id: 0,
            command: FlowModCommand::Add,
            idle_timeout: 0,
            hard_timeout: 0,
            priority: OFP_DEFAULT_PRIORITY,
            buffer_id: OFP_NO_BUFFER,
            out_port: OFPP_ANY,
            out_group: OFPG_ANY,
            flags: 0,
            r#match: Match::default(),
            instructions: Vec::new(),
        }
    }
}

impl FlowMod {
    /// ADD a flow entry (unbuffered, no timeouts, cookie 0; see the `with_*` builders).
    pub fn add(
        table_id: u8,
        priority: u16,
        r#match: Match,
        instructions: Vec<Instruction>,
    ) -> Self {
        FlowMod {
            table_id,
            priority,
            r#match,
            instructions,
            ..FlowMod::default()
        }
    }

    /// MODIFY_STRICT the entry with this exact match and priority.
    pub fn modify_strict(
        table_id: u8,
        priority: u16,
        r#match: Match,
        instructions: Vec<Instruction>,
    ) -> Self {
        FlowMod {
            command: FlowModCommand::ModifyStrict,
            ..FlowMod::add(table_id, priority, r#match, instructions)
        }
    }

    /// DELETE (non-strict) every entry of `table_id` (`OFPTT_ALL`: every table) that the
    /// match covers.
    pub fn delete(table_id: u8, r#match: Match) -> Self {
        FlowMod {
            command: FlowModCommand::Delete,
            table_id,
            r#match,
            ..FlowMod::default()
        }
    }

    /// DELETE_STRICT the entry with this exact match and priority.
    pub fn delete_strict(table_id: u8, priority: u16, r#match: Match) -> Self {
        FlowMod {
            command: FlowModCommand::DeleteStrict,
            table_id,
            priority,
            r#match,
            ..FlowMod::default()
        }
    }

    /// DELETE every entry, in every table, carrying exactly this cookie.
    pub fn delete_by_cookie(cookie: u64) -> Self {
        FlowMod::delete(OFPTT_ALL, Match::default()).with_cookie_mask(cookie, u64::MAX)
    }

    /// Sets the cookie.
    pub fn with_cookie(mut self, cookie: u64) -> Self {
        self.cookie = cookie;
        self
    }

    /// Sets cookie and cookie mask (for MODIFY/DELETE filtering).
    pub fn with_cookie_mask(mut self, cookie: u64, mask: u64) -> Self {
        self.cookie = cookie;
        self.cookie_mask = mask;
        self
    }

    pub fn with_timeouts(mut self, idle: u16, hard: u16) -> Self {
        self.idle_timeout = idle;
        self.hard_timeout = hard;
        self
    }

    pub fn with_flags(mut self, flags: u16) -> Self {
        self.flags = flags;
        self
    }

    pub fn with_buffer_id(mut self, buffer_id: u32) -> Self {
        self.buffer_id = buffer_id;
        self
    }

    pub fn with_out_port(mut self, out_port: u32) -> Self {
        self.out_port = out_port;
        self
    }

    pub fn with_out_group(mut self, out_group: u32) -> Self {
        self.out_group = out_group;
        self
    }
}

fn fmt_flow_flags(f: &mut fmt::Formatter<'_>, v: u16) -> fmt::Result {
    for (bit, name) in [
        (flags::SEND_FLOW_REM, "send_flow_rem"),
        (flags::CHECK_OVERLAP, "check_overlap"),
        (flags::RESET_COUNTS, "reset_counts"),
        (flags::NO_PKT_COUNTS, "no_packet_counts"),
        (flags::NO_BYT_COUNTS, "no_byte_counts"),
    ] {
        if v & bit != 0 {
            write!(f, " {name}")?;
        }
    }
    let unknown = v & !0x1f;
    if unknown != 0 {
        write!(f, " flags:{unknown:#x}")?;
    }
    Ok(())
}

/// `ovs-ofctl -O OpenFlow13` style summary, e.g.
/// `ADD table:1 priority=100,in_port=1 cookie:0x1 actions=group:1003`.
impl fmt::Display for FlowMod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} table:", self.command)?;
        if self.table_id == OFPTT_ALL {
            f.write_str("all")?;
        } else {
            write!(f, "{}", self.table_id)?;
        }
        write!(f, " priority={}", self.priority)?;
        if !self.r#match.is_empty() {
            write!(f, ",{}", self.r#match)?;
        }
        if self.cookie != 0 || self.cookie_mask != 0 {
            write!(f, " cookie:{:#x}", self.cookie)?;
            if self.cookie_mask != 0 {
                write!(f, "/{:#x}", self.cookie_mask)?;
            }
        }
        if self.idle_timeout != 0 {
            write!(f, " idle:{}", self.idle_timeout)?;
        }
        if self.hard_timeout != 0 {
            write!(f, " hard:{}", self.hard_timeout)?;
        }
        if self.buffer_id != OFP_NO_BUFFER {
            write!(f, " buf:{:#x}", self.buffer_id)?;
        }
        if self.out_port != OFPP_ANY {
            write!(f, " out_port:{}", PortNo(self.out_port))?;
        }
        if self.out_group != OFPG_ANY {
            write!(f, " out_group:{}", self.out_group)?;
        }
        fmt_flow_flags(f, self.flags)?;
        write!(f, " actions={}", InstructionList(&self.instructions))
    }
}

// ---- FLOW_REMOVED -------------------------------------------------------------------------

wire_enum! {
    /// `ofp_flow_removed_reason`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
    pub enum FlowRemovedReason: u8 {
        #[default]
        IdleTimeout = 0 => "idle",
        HardTimeout = 1 => "hard",
        Delete = 2 => "delete",
        GroupDelete = 3 => "group_delete",
        _ => Other => "",
    }
}

ofp_struct! {
    /// OFPT_FLOW_REMOVED body: 40 fixed bytes, then the match.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct FlowRemoved("flow_removed" separator " ") {
        pub cookie: u64,
        pub priority: u16,
        pub reason: FlowRemovedReason,
        pub table_id: u8,
        pub duration_sec: u32,
        pub duration_nsec: u32,
        pub idle_timeout: u16,
        pub hard_timeout: u16,
        pub packet_count: u64,
        pub byte_count: u64,
        pub r#match: Match,
    }
}

/// Fixed part of the FLOW_REMOVED body before the match.
pub const FLOW_REMOVED_FIXED_LEN: usize = 40;

impl fmt::Display for FlowRemoved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "priority={}", self.priority)?;
        if !self.r#match.is_empty() {
            write!(f, ",{}", self.r#match)?;
        }
        write!(
            f,
            " reason={} table_id={} cookie:{:#x} duration{}.{:03}s idle{} hard{} pkts{} bytes{}",
            self.reason,
            self.table_id,
            self.cookie,
            self.duration_sec,
            self.duration_nsec / 1_000_000,
            self.idle_timeout,
            self.hard_timeout,
            self.packet_count,
            self.byte_count
        )
    }
}

// ---- tests --------------------------------------------------------------------------------

#[cfg(test)]
pub(crate) mod arb {
    use super::*;
    use crate::openflow::instruction::arb::any_instructions;
    use crate::openflow::oxm::arb::any_match;
    use crate::openflow::port::arb::any_port_no;
    use proptest::prelude::*;

    pub fn any_flow_mod() -> impl Strategy<Value = FlowMod> {
        (
            any::<(u64, u64, u8, u8)>(),
            any::<(u16, u16, u16, u32)>(),
            (any_port_no(), any::<u32>(), any::<u16>()),
            any_match(),
            any_instructions(),
        )
            .prop_map(
                |(
                    (cookie, cookie_mask, table_id, command),
                    (idle_timeout, hard_timeout, priority, buffer_id),
                    (out_port, out_group, flags),
                    m,
                    instructions,
                )| FlowMod {
                    cookie,
                    cookie_mask,
                    table_id,
                    command: FlowModCommand::from_u8(command),
                    idle_timeout,
                    hard_timeout,
                    priority,
                    buffer_id,
                    out_port,
                    out_group,
                    flags,
                    r#match: m,
                    instructions,
                },
            )
    }

    pub fn any_flow_removed() -> impl Strategy<Value = FlowRemoved> {
        (
            any::<(u64, u16, u8, u8)>(),
            any::<(u32, u32, u16, u16)>(),
            any::<(u64, u64)>(),
            any_match(),
        )
            .prop_map(
                |(
                    (cookie, priority, reason, table_id),
                    (duration_sec, duration_nsec, idle_timeout, hard_timeout),
                    (packet_count, byte_count),
                    m,
                )| FlowRemoved {
                    cookie,
                    priority,
                    reason: FlowRemovedReason::from_u8(reason),
                    table_id,
                    duration_sec,
                    duration_nsec,
                    idle_timeout,
                    hard_timeout,
                    packet_count,
                    byte_count,
                    r#match: m,
                },
            )
    }
}

#[cfg(test)]
mod tests {
    use super::arb::*;
    use super::*;
    use crate::openflow::action::Action;
    use crate::openflow::oxm::test_util::*;
    use crate::openflow::oxm::OxmField;
    use crate::wire::Wire;
    use crate::MacAddr;
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    /// OVS tests/ofp-print.at "OFPT_FLOW_MOD - OF1.3 - flags - low verbosity", body after
    /// the 8-byte header.
    const FLOW_MOD_OVS: &str = "00 00 00 00 00 00 00 00 \
        00 00 00 00 00 00 00 00 ff 00 00 00 00 00 ff ff \
        ff ff ff ff ff ff ff ff ff ff ff ff 00 1f 00 00 \
        00 01 00 42 80 00 00 04 00 00 00 01 80 00 08 06 \
        50 54 00 00 00 06 80 00 06 06 50 54 00 00 00 05 \
        80 00 0a 02 08 06 80 00 0c 02 00 00 80 00 2a 02 \
        00 02 80 00 2c 04 c0 a8 00 02 80 00 2e 04 c0 a8 \
        00 01 00 00 00 00 00 00 00 04 00 18 00 00 00 00 \
        00 00 00 10 00 00 00 03 00 00 00 00 00 00 00 00";

    #[test]
    fn flow_mod_golden_ovs() {
        let b = hex_bytes(FLOW_MOD_OVS);
        let fm = FlowMod::from_bytes(&b).unwrap();
        assert_eq!(fm.cookie, 0);
        assert_eq!(fm.cookie_mask, 0);
        assert_eq!(fm.table_id, 255);
        assert_eq!(fm.command, FlowModCommand::Add);
        assert_eq!((fm.idle_timeout, fm.hard_timeout), (0, 0));
        assert_eq!(fm.priority, 65535);
        assert_eq!(fm.buffer_id, OFP_NO_BUFFER);
        assert_eq!(fm.out_port, OFPP_ANY);
        assert_eq!(fm.out_group, OFPG_ANY);
        assert_eq!(fm.flags, 0x1f);
        assert_eq!(fm.r#match.fields.len(), 8);
        assert_eq!(fm.r#match.in_port(), Some(1));
        assert_eq!(fm.r#match.eth_type(), Some(0x0806));
        assert_eq!(
            fm.instructions,
            vec![Instruction::ApplyActions(vec![Action::output(3)])]
        );
        assert_eq!(&fm.to_bytes()[..], &b[..]);
        assert_eq!(
            fm.to_string(),
            "ADD table:all priority=65535,in_port=1,eth_src=50:54:00:00:00:06,\
             eth_dst=50:54:00:00:00:05,eth_type=0x0806,vlan_vid=0,arp_op=2,\
             arp_spa=192.168.0.2,arp_tpa=192.168.0.1 send_flow_rem check_overlap \
             reset_counts no_packet_counts no_byte_counts actions=output:3"
        );
    }

    /// OVS tests/ofp-print.at "OFPT_FLOW_MOD - OF1.2 - set-field ip_src" (the OF1.2
    /// FLOW_MOD body is the one of OF1.3).
    #[test]
    fn flow_mod_set_field_golden_ovs() {
        let b = hex_bytes(
            "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 \
             00 00 00 00 00 00 00 ff ff ff ff ff ff ff ff ff \
             ff ff ff ff 00 00 00 00 \
             00 01 00 0a 80 00 0a 02 08 00 00 00 00 00 00 00 \
             00 04 00 18 00 00 00 00 00 19 00 10 80 00 16 04 \
             c0 a8 03 5c 00 00 00 00",
        );
        let fm = FlowMod::from_bytes(&b).unwrap();
        assert_eq!(fm.priority, 255);
        assert_eq!(fm.table_id, 0);
        assert_eq!(fm.r#match.fields, vec![OxmField::EthType(0x0800)]);
        assert_eq!(
            fm.instructions,
            vec![Instruction::ApplyActions(vec![Action::SetField(
                OxmField::Ipv4Src {
                    value: Ipv4Addr::new(192, 168, 3, 92),
                    mask: None
                }
            )])]
        );
        assert_eq!(&fm.to_bytes()[..], &b[..]);
        assert_eq!(
            fm.to_string(),
            "ADD table:0 priority=255,eth_type=0x0800 actions=set_field:192.168.3.92->ipv4_src"
        );
    }

    /// OVS tests/ofp-print.at "OFPT_FLOW_REMOVED - OF1.3", body after the header.
    #[test]
    fn flow_removed_golden_ovs() {
        let b = hex_bytes(
            "fe dc ba 98 76 54 32 10 \
             80 00 01 05 00 00 00 01 00 98 96 80 00 3c 00 78 \
             00 00 00 00 00 12 d6 87 00 00 00 00 6f 68 ba 66 \
             00 01 00 0a 80 00 0c 02 10 09 00 00 00 00 00 00",
        );
        let fr = FlowRemoved::from_bytes(&b).unwrap();
        assert_eq!(fr.cookie, 0xfedcba9876543210);
        assert_eq!(fr.priority, 0x8000);
        assert_eq!(fr.reason, FlowRemovedReason::HardTimeout);
        assert_eq!(fr.table_id, 5);
        assert_eq!((fr.duration_sec, fr.duration_nsec), (1, 10_000_000));
        assert_eq!((fr.idle_timeout, fr.hard_timeout), (60, 120));
        assert_eq!(fr.packet_count, 1234567);
        assert_eq!(fr.byte_count, 1869134438);
        assert_eq!(
            fr.r#match.fields,
            vec![OxmField::VlanVid {
                value: 0x1009,
                mask: None
            }]
        );
        assert_eq!(&fr.to_bytes()[..], &b[..]);
        assert_eq!(
            fr.to_string(),
            "priority=32768,vlan_vid=4105 reason=hard table_id=5 cookie:0xfedcba9876543210 \
             duration1.010s idle60 hard120 pkts1234567 bytes1869134438"
        );
    }

    #[test]
    fn constructors() {
        let m = Match::new()
            .with(OxmField::InPort(1))
            .with(OxmField::EthDst {
                value: MacAddr([2, 0, 0, 1, 0, 0]),
                mask: Some(MacAddr([0xff, 0xff, 0xff, 0xff, 0, 0])),
            });
        let fm = FlowMod::add(
            1,
            100,
            m,
            vec![Instruction::apply_actions(vec![Action::group(1003)])],
        )
        .with_cookie(0xfab);
        assert_eq!(
            fm.to_string(),
            "ADD table:1 priority=100,in_port=1,eth_dst=02:00:00:01:00:00/ff:ff:ff:ff:00:00 \
             cookie:0xfab actions=group:1003"
        );
        check_roundtrip(&fm);
        let d = FlowMod::delete_by_cookie(0xfab);
        assert_eq!(
            d.to_string(),
            "DEL table:all priority=32768 cookie:0xfab/0xffffffffffffffff actions=drop"
        );
        check_roundtrip(&d);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn flow_mod_roundtrip(v in any_flow_mod()) {
            check_roundtrip(&v);
            let fixed = FLOW_MOD_FIXED_LEN + v.r#match.to_bytes().len();
            check_prefixes(&v, fixed);
            let _ = v.to_string();
        }
        #[test]
        fn flow_removed_roundtrip(v in any_flow_removed()) {
            check_roundtrip(&v);
            check_truncations(&v);
            let _ = v.to_string();
        }
        #[test]
        fn flow_random(b in proptest::collection::vec(any::<u8>(), 0..128)) {
            if let Ok(fm) = FlowMod::from_bytes(&b) {
                prop_assert_eq!(fm.to_bytes().len(), b.len());
            }
            let _ = FlowRemoved::decode(&b);
        }
    }
}
