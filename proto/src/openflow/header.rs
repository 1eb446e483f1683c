//! The 8-byte OpenFlow header (`struct ofp_header`) and the message type numbers of OpenFlow 1.3.

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use crate::wire::{self, PResult, Wire};

/// Length of `struct ofp_header`.
pub const HEADER_LEN: usize = 8;

/// `enum ofp_type` of OpenFlow 1.3 (0..=29); anything else is kept as `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum MsgType {
    Hello,
    Error,
    EchoRequest,
    EchoReply,
    Experimenter,
    FeaturesRequest,
    FeaturesReply,
    GetConfigRequest,
    GetConfigReply,
    SetConfig,
    PacketIn,
    FlowRemoved,
    PortStatus,
    PacketOut,
    FlowMod,
    GroupMod,
    PortMod,
    TableMod,
    MultipartRequest,
    MultipartReply,
    BarrierRequest,
    BarrierReply,
    QueueGetConfigRequest,
    QueueGetConfigReply,
    RoleRequest,
    RoleReply,
    GetAsyncRequest,
    GetAsyncReply,
    SetAsync,
    MeterMod,
    /// A type number OpenFlow 1.3 does not define.
    Other(u8),
}

const TYPES: [(MsgType, &str); 30] = [
    (MsgType::Hello, "OFPT_HELLO"),
    (MsgType::Error, "OFPT_ERROR"),
    (MsgType::EchoRequest, "OFPT_ECHO_REQUEST"),
    (MsgType::EchoReply, "OFPT_ECHO_REPLY"),
    (MsgType::Experimenter, "OFPT_EXPERIMENTER"),
    (MsgType::FeaturesRequest, "OFPT_FEATURES_REQUEST"),
    (MsgType::FeaturesReply, "OFPT_FEATURES_REPLY"),
    (MsgType::GetConfigRequest, "OFPT_GET_CONFIG_REQUEST"),
    (MsgType::GetConfigReply, "OFPT_GET_CONFIG_REPLY"),
    (MsgType::SetConfig, "OFPT_SET_CONFIG"),
    (MsgType::PacketIn, "OFPT_PACKET_IN"),
    (MsgType::FlowRemoved, "OFPT_FLOW_REMOVED"),
    (MsgType::PortStatus, "OFPT_PORT_STATUS"),
    (MsgType::PacketOut, "OFPT_PACKET_OUT"),
    (MsgType::FlowMod, "OFPT_FLOW_MOD"),
    (MsgType::GroupMod, "OFPT_GROUP_MOD"),
    (MsgType::PortMod, "OFPT_PORT_MOD"),
    (MsgType::TableMod, "OFPT_TABLE_MOD"),
    (MsgType::MultipartRequest, "OFPT_MULTIPART_REQUEST"),
    (MsgType::MultipartReply, "OFPT_MULTIPART_REPLY"),
    (MsgType::BarrierRequest, "OFPT_BARRIER_REQUEST"),
    (MsgType::BarrierReply, "OFPT_BARRIER_REPLY"),
    (
        MsgType::QueueGetConfigRequest,
        "OFPT_QUEUE_GET_CONFIG_REQUEST",
    ),
    (MsgType::QueueGetConfigReply, "OFPT_QUEUE_GET_CONFIG_REPLY"),
    (MsgType::RoleRequest, "OFPT_ROLE_REQUEST"),
    (MsgType::RoleReply, "OFPT_ROLE_REPLY"),
    (MsgType::GetAsyncRequest, "OFPT_GET_ASYNC_REQUEST"),
    (MsgType::GetAsyncReply, "OFPT_GET_ASYNC_REPLY"),
    (MsgType::SetAsync, "OFPT_SET_ASYNC"),
    (MsgType::MeterMod, "OFPT_METER_MOD"),
];

impl MsgType {
    pub fn from_u8(v: u8) -> Self {
        TYPES
            .get(usize::from(v))
            .map_or(MsgType::Other(v), |(t, _)| *t)
    }

    pub fn to_u8(self) -> u8 {
        if let MsgType::Other(v) = self {
            return v;
        }
        TYPES
            .iter()
            .position(|(t, _)| *t == self)
            .and_then(|i| u8::try_from(i).ok())
            .unwrap_or(u8::MAX)
    }

    /// The specification's name, e.g. `OFPT_FLOW_MOD`; `OFPT_UNKNOWN` for `Other`.
    pub fn name(self) -> &'static str {
        match self {
            MsgType::Other(_) => "OFPT_UNKNOWN",
            t => TYPES
                .iter()
                .find(|(x, _)| *x == t)
                .map_or("OFPT_UNKNOWN", |(_, n)| n),
        }
    }
}

/// `struct ofp_header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Header {
    pub version: u8,
    pub msg_type: MsgType,
    /// Total length of the message including this header.
    pub length: u16,
    pub xid: u32,
}

impl Header {
    /// Reads the header at the front of `input` without consuming it (None if fewer than 8 bytes).
    pub fn peek(input: &[u8]) -> Option<Header> {
        Header::decode(input).ok().map(|(_, h)| h)
    }
}

impl Wire for Header {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, version) = wire::u8_(input, "ofp_header.version")?;
        let (i, t) = wire::u8_(i, "ofp_header.type")?;
        let (i, length) = wire::u16_(i, "ofp_header.length")?;
        let (i, xid) = wire::u32_(i, "ofp_header.xid")?;
        Ok((
            i,
            Header {
                version,
                msg_type: MsgType::from_u8(t),
                length,
                xid,
            },
        ))
    }

    fn encode(&self, out: &mut BytesMut) {
        out.put_u8(self.version);
        out.put_u8(self.msg_type.to_u8());
        out.put_u16(self.length);
        out.put_u32(self.xid);
    }
}

/// The empty tail of `input` (what a parser that consumed everything returns).
pub(crate) fn end(input: &[u8]) -> &[u8] {
    input.split_at(input.len()).1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_round_trips() {
        for v in 0..=255u8 {
            assert_eq!(MsgType::from_u8(v).to_u8(), v);
        }
        assert_eq!(MsgType::from_u8(29), MsgType::MeterMod);
        assert_eq!(MsgType::from_u8(30), MsgType::Other(30));
        assert_eq!(MsgType::FlowMod.name(), "OFPT_FLOW_MOD");
    }

    #[test]
    fn header_codec() {
        let b = [4u8, 14, 0, 0x50, 0, 0, 0, 5];
        let h = Header::from_bytes(&b).unwrap();
        assert_eq!(h.msg_type, MsgType::FlowMod);
        assert_eq!(h.length, 0x50);
        assert_eq!(&h.to_bytes()[..], &b);
        assert!(Header::peek(&b[..7]).is_none());
    }
}
