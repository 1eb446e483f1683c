//! Switch configuration messages: FEATURES_REPLY, GET/SET_CONFIG, ROLE request/reply,
//! GET/SET_ASYNC and QUEUE_GET_CONFIG request/reply. (FEATURES_REQUEST, GET_CONFIG_REQUEST,
//! BARRIER and GET_ASYNC_REQUEST have empty bodies and live only in [`super::message::Body`].)

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use crate::openflow::layout::{ofp_struct, wire_enum};
use crate::wire::{self, PResult, Wire};

// ---- FEATURES_REPLY ---------------------------------------------------------------------------

/// `enum ofp_capabilities` bits of [`FeaturesReply::capabilities`].
pub mod capabilities {
    pub const FLOW_STATS: u32 = 1 << 0;
    pub const TABLE_STATS: u32 = 1 << 1;
    pub const PORT_STATS: u32 = 1 << 2;
    pub const GROUP_STATS: u32 = 1 << 3;
    pub const IP_REASM: u32 = 1 << 5;
    pub const QUEUE_STATS: u32 = 1 << 6;
    pub const PORT_BLOCKED: u32 = 1 << 8;
    /// (bit, name) pairs for printing.
    pub const NAMES: [(u32, &str); 7] = [
        (FLOW_STATS, "FLOW_STATS"),
        (TABLE_STATS, "TABLE_STATS"),
        (PORT_STATS, "PORT_STATS"),
        (GROUP_STATS, "GROUP_STATS"),
        (IP_REASM, "IP_REASM"),
        (QUEUE_STATS, "QUEUE_STATS"),
        (PORT_BLOCKED, "PORT_BLOCKED"),
    ];
}

ofp_struct! {
    /// OFPT_FEATURES_REPLY body (`struct ofp_switch_features` after the header).
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct FeaturesReply("ofp_switch_features", 24 bytes) {
        pub datapath_id: u64,
        pub n_buffers: u32,
        pub n_tables: u8,
        /// 0 for the main connection, non-zero for auxiliary connections.
        pub auxiliary_id: u8,
        pad: [u8; 2],
        /// Bitmap of [`capabilities`].
        pub capabilities: u32,
        /// Reserved field, kept so the message re-encodes byte for byte.
        pub reserved: u32,
    }
}

// ---- GET_CONFIG_REPLY / SET_CONFIG ------------------------------------------------------------

/// `enum ofp_config_flags`.
pub mod config_flags {
    pub const FRAG_NORMAL: u16 = 0;
    pub const FRAG_DROP: u16 = 1;
    pub const FRAG_REASM: u16 = 2;
    pub const FRAG_MASK: u16 = 3;
}

/// `OFPCML_NO_BUFFER`: send whole packets to the controller, unbuffered.
pub const OFPCML_NO_BUFFER: u16 = 0xffff;
/// `OFPCML_MAX`.
pub const OFPCML_MAX: u16 = 0xffe5;

ofp_struct! {
    /// OFPT_GET_CONFIG_REPLY and OFPT_SET_CONFIG body (`struct ofp_switch_config`).
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct SwitchConfig("ofp_switch_config", 4 bytes) {
        /// [`config_flags`].
        pub flags: u16,
        /// Bytes of a table-miss packet sent to the controller. On Open vSwitch a management
        /// connection gets no asynchronous messages until this is non-zero.
        pub miss_send_len: u16,
    }
}

// ---- ROLE ---------------------------------------------------------------------------------------

wire_enum! {
    /// `enum ofp_controller_role`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
    pub enum ControllerRole: u32 {
        #[default]
        NoChange = 0,
        Equal = 1,
        Master = 2,
        Slave = 3,
        _ => Unknown,
    }
}

impl ControllerRole {
    pub fn name(self) -> &'static str {
        match self {
            Self::NoChange => "nochange",
            Self::Equal => "equal",
            Self::Master => "master",
            Self::Slave => "slave",
            Self::Unknown(_) => "unknown",
        }
    }
}

ofp_struct! {
    /// OFPT_ROLE_REQUEST and OFPT_ROLE_REPLY body (`struct ofp_role_request`).
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct Role("ofp_role_request", 16 bytes) {
        pub role: ControllerRole,
        pad: [u8; 4],
        /// Master election generation id (fencing); ignored by the switch for NoChange/Equal.
        pub generation_id: u64,
    }
}

// ---- ASYNC --------------------------------------------------------------------------------------

ofp_struct! {
    /// OFPT_GET_ASYNC_REPLY and OFPT_SET_ASYNC body (`struct ofp_async_config`). Index 0 of each
    /// mask applies when the connection is master or equal, index 1 when it is slave.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct AsyncConfig("ofp_async_config", 24 bytes) {
        /// Bits of `ofp_packet_in_reason` (NO_MATCH=0, ACTION=1, INVALID_TTL=2).
        pub packet_in_mask: [u32; 2],
        /// Bits of `ofp_port_reason` (ADD=0, DELETE=1, MODIFY=2).
        pub port_status_mask: [u32; 2],
        /// Bits of `ofp_flow_removed_reason` (IDLE=0, HARD=1, DELETE=2, GROUP_DELETE=3).
        pub flow_removed_mask: [u32; 2],
    }
}

// ---- QUEUE_GET_CONFIG ---------------------------------------------------------------------------

ofp_struct! {
    /// OFPT_QUEUE_GET_CONFIG_REQUEST body.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct QueueGetConfigRequest("ofp_queue_get_config_request", 8 bytes) {
        /// Port to query (`OFPP_ANY` for all).
        pub port: u32,
        pad: [u8; 4],
    }
}

/// One `ofp_queue_prop_header` property of a queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum QueueProp {
    /// `OFPQT_MIN_RATE`, in 1/10 of a percent; >1000 means disabled.
    MinRate(u16),
    /// `OFPQT_MAX_RATE`, in 1/10 of a percent; >1000 means disabled.
    MaxRate(u16),
    /// `OFPQT_EXPERIMENTER`.
    Experimenter { experimenter: u32, data: Vec<u8> },
    /// A property type this crate does not interpret: the bytes after the 8-byte header.
    Unknown { prop_type: u16, data: Vec<u8> },
}

impl Wire for QueueProp {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, t) = wire::u16_(input, "ofp_queue_prop_header.property")?;
        let (i, len) = wire::u16_(i, "ofp_queue_prop_header.len")?;
        let len = usize::from(len);
        if len < 8 {
            return wire::bad_length(input, "queue property", len, "shorter than its header");
        }
        let (i, ()) = wire::skip(i, 4, "ofp_queue_prop_header.pad")?;
        let (rest, body) = wire::take(i, len - 8, "queue property")?;
        let prop = match t {
            1 | 2 => {
                if len != 16 {
                    return wire::bad_length(input, "rate queue property", len, "must be 16");
                }
                let (_, rate) = wire::u16_(body, "ofp_queue_prop_rate.rate")?;
                if t == 1 {
                    QueueProp::MinRate(rate)
                } else {
                    QueueProp::MaxRate(rate)
                }
            }
            0xffff => {
                let (b, experimenter) =
                    wire::u32_(body, "ofp_queue_prop_experimenter.experimenter")?;
                let (b, ()) = wire::skip(b, 4, "ofp_queue_prop_experimenter.pad")?;
                QueueProp::Experimenter {
                    experimenter,
                    data: b.to_vec(),
                }
            }
            t => QueueProp::Unknown {
                prop_type: t,
                data: body.to_vec(),
            },
        };
        Ok((rest, prop))
    }

    fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        let t = match self {
            QueueProp::MinRate(_) => 1,
            QueueProp::MaxRate(_) => 2,
            QueueProp::Experimenter { .. } => 0xffff,
            QueueProp::Unknown { prop_type, .. } => *prop_type,
        };
        out.put_u16(t);
        out.put_u16(0);
        wire::put_zeros(out, 4);
        match self {
            QueueProp::MinRate(r) | QueueProp::MaxRate(r) => {
                out.put_u16(*r);
                wire::put_zeros(out, 6);
            }
            QueueProp::Experimenter { experimenter, data } => {
                out.put_u32(*experimenter);
                wire::put_zeros(out, 4);
                out.put_slice(data);
            }
            QueueProp::Unknown { data, .. } => out.put_slice(data),
        }
        let len = out.len() - start;
        wire::patch_u16(out, start + 2, wire::len_u16(len));
    }
}

/// `struct ofp_packet_queue`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct PacketQueue {
    pub queue_id: u32,
    pub port: u32,
    pub properties: Vec<QueueProp>,
}

impl Wire for PacketQueue {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, queue_id) = wire::u32_(input, "ofp_packet_queue.queue_id")?;
        let (i, port) = wire::u32_(i, "ofp_packet_queue.port")?;
        let (i, len) = wire::u16_(i, "ofp_packet_queue.len")?;
        let len = usize::from(len);
        if len < 16 {
            return wire::bad_length(input, "ofp_packet_queue", len, "shorter than its header");
        }
        let (i, ()) = wire::skip(i, 6, "ofp_packet_queue.pad")?;
        let (rest, props) = wire::take(i, len - 16, "ofp_packet_queue properties")?;
        let (_, properties) = wire::many_exact::<QueueProp>(props)?;
        Ok((
            rest,
            PacketQueue {
                queue_id,
                port,
                properties,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_u32(self.queue_id);
        out.put_u32(self.port);
        out.put_u16(0);
        wire::put_zeros(out, 6);
        for p in &self.properties {
            p.encode(out);
        }
        let len = out.len() - start;
        wire::patch_u16(out, start + 8, wire::len_u16(len));
    }
}

ofp_struct! {
    /// OFPT_QUEUE_GET_CONFIG_REPLY body.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct QueueGetConfigReply("ofp_queue_get_config_reply") {
        pub port: u32,
        pad: [u8; 4],
        pub queues: Vec<PacketQueue>,
    }
}

/// Proptest strategies for the switch configuration messages.
#[cfg(test)]
pub mod arb {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    pub fn any_features_reply() -> impl Strategy<Value = FeaturesReply> {
        (
            any::<u64>(),
            any::<u32>(),
            any::<u8>(),
            any::<u8>(),
            any::<u32>(),
            any::<u32>(),
        )
            .prop_map(|(d, b, t, a, c, r)| FeaturesReply {
                datapath_id: d,
                n_buffers: b,
                n_tables: t,
                auxiliary_id: a,
                capabilities: c,
                reserved: r,
            })
    }

    pub fn any_switch_config() -> impl Strategy<Value = SwitchConfig> {
        (any::<u16>(), any::<u16>()).prop_map(|(flags, miss_send_len)| SwitchConfig {
            flags,
            miss_send_len,
        })
    }

    pub fn any_role() -> impl Strategy<Value = Role> {
        (0u32..6, any::<u64>()).prop_map(|(r, generation_id)| Role {
            role: ControllerRole::from_u32(r),
            generation_id,
        })
    }

    pub fn any_async_config() -> impl Strategy<Value = AsyncConfig> {
        any::<[u32; 6]>().prop_map(|m| AsyncConfig {
            packet_in_mask: [m[0], m[1]],
            port_status_mask: [m[2], m[3]],
            flow_removed_mask: [m[4], m[5]],
        })
    }

    pub fn any_queue_prop() -> impl Strategy<Value = QueueProp> {
        prop_oneof![
            any::<u16>().prop_map(QueueProp::MinRate),
            any::<u16>().prop_map(QueueProp::MaxRate),
            (any::<u32>(), vec(any::<u8>(), 0..12))
                .prop_map(|(experimenter, data)| QueueProp::Experimenter { experimenter, data }),
            (3u16..0xfff0, vec(any::<u8>(), 0..12))
                .prop_map(|(prop_type, data)| QueueProp::Unknown { prop_type, data }),
        ]
    }

    pub fn any_packet_queue() -> impl Strategy<Value = PacketQueue> {
        (any::<u32>(), any::<u32>(), vec(any_queue_prop(), 0..3)).prop_map(
            |(queue_id, port, properties)| PacketQueue {
                queue_id,
                port,
                properties,
            },
        )
    }

    pub fn any_queue_get_config_request() -> impl Strategy<Value = QueueGetConfigRequest> {
        any::<u32>().prop_map(|port| QueueGetConfigRequest { port })
    }

    pub fn any_queue_get_config_reply() -> impl Strategy<Value = QueueGetConfigReply> {
        (any::<u32>(), vec(any_packet_queue(), 0..3))
            .prop_map(|(port, queues)| QueueGetConfigReply { port, queues })
    }
}
