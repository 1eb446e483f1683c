//! OFPT_PACKET_IN and OFPT_PACKET_OUT bodies.

use std::fmt;

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use super::action::{decode_actions, encode_actions, packet_in_reason_name, Action, ActionList};
use super::layout::{ofp_struct, wire_enum};
use super::oxm::Match;
use super::port::{PortNo, OFPP_CONTROLLER};
use crate::wire::{self, PResult, Wire};

/// `buffer_id` meaning "not buffered, the packet is in the message".
pub const OFP_NO_BUFFER: u32 = 0xffff_ffff;

wire_enum! {
    /// `ofp_packet_in_reason`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
    pub enum PacketInReason: u8 {
        /// No matching flow (table-miss flow entry).
        #[default]
        NoMatch = 0,
        /// Action explicitly output to the controller.
        Action = 1,
        /// Packet has an invalid TTL.
        InvalidTtl = 2,
        _ => Other,
    }
}

impl fmt::Display for PacketInReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match packet_in_reason_name(self.to_u8()) {
            Some(n) => f.write_str(n),
            None => write!(f, "{}", self.to_u8()),
        }
    }
}

// ---- PACKET_IN ----------------------------------------------------------------------------

ofp_struct! {
    /// OFPT_PACKET_IN body: buffer_id, total_len, reason, table_id, cookie, match, 2 pad bytes,
    /// then the packet data to the end of the message.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct PacketIn("packet_in" separator " ") {
        pub buffer_id: u32,
        /// Full length of the frame (`data` may be shorter).
        pub total_len: u16,
        pub reason: PacketInReason,
        pub table_id: u8,
        /// Cookie of the flow entry that sent the packet.
        pub cookie: u64,
        /// Pipeline fields (at least IN_PORT).
        pub r#match: Match,
        pad: [u8; 2],
        #[serde(with = "hex_bytes")]
        pub data: Vec<u8>,
    }
}

/// Fixed part of the PACKET_IN body before the match.
pub const PACKET_IN_FIXED_LEN: usize = 16;

impl PacketIn {
    /// The ingress port (the match's IN_PORT field).
    pub fn in_port(&self) -> Option<u32> {
        self.r#match.in_port()
    }
}

impl fmt::Display for PacketIn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cookie={:#x} total_len={} {} (via {}) table_id={} data_len={}",
            self.cookie,
            self.total_len,
            self.r#match,
            self.reason,
            self.table_id,
            self.data.len()
        )?;
        if self.buffer_id == OFP_NO_BUFFER {
            f.write_str(" (unbuffered)")
        } else {
            write!(f, " buffer={:#010x}", self.buffer_id)
        }
    }
}

// ---- PACKET_OUT ---------------------------------------------------------------------------

/// OFPT_PACKET_OUT body: buffer_id, in_port, actions_len, 6 pad bytes, actions, then the
/// packet data to the end of the message (empty when `buffer_id` names a buffer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PacketOut {
    pub buffer_id: u32,
    pub in_port: u32,
    pub actions: Vec<Action>,
    #[serde(with = "hex_bytes")]
    pub data: Vec<u8>,
}

/// Fixed part of the PACKET_OUT body.
pub const PACKET_OUT_FIXED_LEN: usize = 16;

impl Default for PacketOut {
    fn default() -> Self {
        PacketOut {
            buffer_id: OFP_NO_BUFFER,
            in_port: OFPP_CONTROLLER,
            actions: Vec::new(),
            data: Vec::new(),
        }
    }
}

impl PacketOut {
    /// An unbuffered packet-out carrying `data`.
    pub fn new(in_port: u32, actions: Vec<Action>, data: Vec<u8>) -> Self {
        PacketOut {
            buffer_id: OFP_NO_BUFFER,
            in_port,
            actions,
            data,
        }
    }

    /// Releases a buffered packet.
    pub fn buffered(buffer_id: u32, in_port: u32, actions: Vec<Action>) -> Self {
        PacketOut {
            buffer_id,
            in_port,
            actions,
            data: Vec::new(),
        }
    }
}

impl Wire for PacketOut {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, buffer_id) = wire::u32_(input, "packet_out buffer_id")?;
        let (i, in_port) = wire::u32_(i, "packet_out in_port")?;
        let (i, actions_len) = wire::u16_(i, "packet_out actions_len")?;
        let (i, ()) = wire::skip(i, 6, "packet_out pad")?;
        let (data, actions_bytes) = wire::take(i, usize::from(actions_len), "packet_out actions")?;
        let (_, actions) = decode_actions(actions_bytes)?;
        Ok((
            &[],
            PacketOut {
                buffer_id,
                in_port,
                actions,
                data: data.to_vec(),
            },
        ))
    }

    fn encode(&self, out: &mut BytesMut) {
        out.put_u32(self.buffer_id);
        out.put_u32(self.in_port);
        let len_at = out.len();
        out.put_u16(0); // patched below
        wire::put_zeros(out, 6);
        let start = out.len();
        encode_actions(&self.actions, out);
        let actions_len = out.len() - start;
        wire::patch_u16(out, len_at, wire::len_u16(actions_len));
        out.put_slice(&self.data);
    }
}

impl fmt::Display for PacketOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "in_port={} actions={}",
            PortNo(self.in_port),
            ActionList(&self.actions)
        )?;
        if self.buffer_id == OFP_NO_BUFFER {
            write!(f, " data_len={}", self.data.len())
        } else {
            write!(f, " buffer={:#010x}", self.buffer_id)
        }
    }
}

/// Serializes packet bytes as one hex string (readable in JSON dumps).
mod hex_bytes {
    use serde::Serializer;

    pub fn serialize<S: Serializer>(data: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(data))
    }
}

// ---- tests --------------------------------------------------------------------------------

#[cfg(test)]
pub(crate) mod arb {
    use super::*;
    use crate::openflow::action::arb::any_actions;
    use crate::openflow::oxm::arb::any_match;
    use crate::openflow::port::arb::any_port_no;
    use proptest::collection::vec;
    use proptest::prelude::*;

    pub fn any_packet_in() -> impl Strategy<Value = PacketIn> {
        (
            any::<(u32, u16, u8, u8, u64)>(),
            any_match(),
            vec(any::<u8>(), 0..80),
        )
            .prop_map(
                |((buffer_id, total_len, reason, table_id, cookie), m, data)| PacketIn {
                    buffer_id,
                    total_len,
                    reason: PacketInReason::from_u8(reason),
                    table_id,
                    cookie,
                    r#match: m,
                    data,
                },
            )
    }

    pub fn any_packet_out() -> impl Strategy<Value = PacketOut> {
        (
            any::<u32>(),
            any_port_no(),
            any_actions(),
            vec(any::<u8>(), 0..80),
        )
            .prop_map(|(buffer_id, in_port, actions, data)| PacketOut {
                buffer_id,
                in_port,
                actions,
                data,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::arb::*;
    use super::*;
    use crate::openflow::oxm::test_util::*;
    use crate::openflow::oxm::OxmField;
    use crate::openflow::port::{OFPP_FLOOD, OFPP_LOCAL};
    use proptest::prelude::*;

    /// OVS tests/ofp-print.at "OFPT_PACKET_IN - OF1.3", body after the 8-byte header.
    const PACKET_IN_OVS: &str = "ff ff ff 00 00 2a 00 00 \
        01 02 03 04 05 06 07 08 00 01 00 0c 80 00 00 04 \
        ff ff ff fe 00 00 00 00 00 00 ff ff ff ff ff ff \
        00 23 20 83 c1 5f 80 35 00 01 08 00 06 04 00 03 \
        00 23 20 83 c1 5f 00 00 00 00 00 23 20 83 c1 5f \
        00 00 00 00";

    #[test]
    fn packet_in_golden_ovs() {
        let b = hex_bytes(PACKET_IN_OVS);
        let p = PacketIn::from_bytes(&b).unwrap();
        assert_eq!(p.buffer_id, 0xffffff00);
        assert_eq!(p.total_len, 42);
        assert_eq!(p.reason, PacketInReason::NoMatch);
        assert_eq!(p.table_id, 0);
        assert_eq!(p.cookie, 0x0102030405060708);
        assert_eq!(p.r#match.fields, vec![OxmField::InPort(OFPP_LOCAL)]);
        assert_eq!(p.in_port(), Some(OFPP_LOCAL));
        assert_eq!(p.data.len(), 42);
        assert_eq!(&p.data[..6], &[0xff; 6]);
        assert_eq!(&p.data[12..14], &[0x80, 0x35]); // RARP
        assert_eq!(&p.to_bytes()[..], &b[..]);
        assert!(p.to_string().contains("in_port=LOCAL (via no_match)"));
    }

    /// OVS tests/ofp-print.at "OFPT_PACKET_OUT - OF1.1" and "..., with packet" (messages
    /// of version 0x03; the PACKET_OUT layout is the same in 1.2 and 1.3).
    #[test]
    fn packet_out_golden_ovs() {
        let b = hex_bytes(
            "ff ff ff 00 ff ff ff fe 00 10 00 00 00 00 00 00 \
             00 00 00 10 ff ff ff fb 05 dc 00 00 00 00 00 00",
        );
        let p = PacketOut::from_bytes(&b).unwrap();
        assert_eq!(
            p,
            PacketOut::buffered(
                0xffffff00,
                OFPP_LOCAL,
                vec![Action::Output {
                    port: OFPP_FLOOD,
                    max_len: 1500
                }]
            )
        );
        assert_eq!(&p.to_bytes()[..], &b[..]);
        assert_eq!(
            p.to_string(),
            "in_port=LOCAL actions=FLOOD buffer=0xffffff00"
        );

        let b = hex_bytes(
            "ff ff ff ff ff ff ff fe 00 10 00 00 00 00 00 00 \
             00 00 00 10 ff ff ff fb 05 dc 00 00 00 00 00 00 \
             50 54 00 00 00 05 50 54 00 00 00 06 08 00 45 00 \
             00 28 00 00 40 00 40 06 b9 7c c0 a8 00 02 c0 a8 \
             00 01 00 00 2b 60 00 00 00 00 6a 4f 2b 58 50 14 \
             00 00 6d 75 00 00 00 00 00 00 00 00",
        );
        let p = PacketOut::from_bytes(&b).unwrap();
        assert_eq!(p.buffer_id, OFP_NO_BUFFER);
        assert_eq!(p.data.len(), 60);
        assert_eq!(&p.to_bytes()[..], &b[..]);
        assert_eq!(p.to_string(), "in_port=LOCAL actions=FLOOD data_len=60");
    }

    #[test]
    fn rejects_bad() {
        // actions_len longer than the message
        let b =
            hex_bytes("ff ff ff ff ff ff ff fe 00 18 00 00 00 00 00 00 00 00 00 10 ff ff ff fb");
        assert!(PacketOut::from_bytes(&b).is_err());
        // actions_len not covering whole actions
        let b = hex_bytes(
            "ff ff ff ff ff ff ff fe 00 08 00 00 00 00 00 00 \
             00 00 00 10 ff ff ff fb 05 dc 00 00 00 00 00 00",
        );
        assert!(PacketOut::from_bytes(&b).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn packet_in_roundtrip(v in any_packet_in()) {
            check_roundtrip(&v);
            let fixed = PACKET_IN_FIXED_LEN + v.r#match.to_bytes().len() + 2;
            check_prefixes(&v, fixed);
            let _ = v.to_string();
        }
        #[test]
        fn packet_out_roundtrip(v in any_packet_out()) {
            check_roundtrip(&v);
            let fixed = PACKET_OUT_FIXED_LEN + crate::openflow::action::actions_len(&v.actions);
            check_prefixes(&v, fixed);
            let _ = v.to_string();
        }
        #[test]
        fn packet_random(b in proptest::collection::vec(any::<u8>(), 0..96)) {
            let _ = PacketIn::decode(&b);
            let _ = PacketOut::decode(&b);
        }
    }
}
