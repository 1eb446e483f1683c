//! The ONF bundle extension for OpenFlow 1.3 (EXT-230), as Open vSwitch implements it
//! (`ONFT_BUNDLE_CONTROL` = 2300 and `ONFT_BUNDLE_ADD_MESSAGE` = 2301 under experimenter
//! [`ONF_EXPERIMENTER_ID`](super::ONF_EXPERIMENTER_ID)). The bodies after the 16-byte
//! experimenter header are OpenFlow 1.4's `ofp_bundle_ctrl_msg` / `ofp_bundle_add_msg`.
//!
//! A BUNDLE_ADD carries one complete OpenFlow message (same version; the specification and Open
//! vSwitch require its xid to equal the outer xid, which [`BundleAdd`] keeps but the codec does
//! not enforce). Properties, if any, follow the embedded message after padding to 8 bytes; Open
//! vSwitch sends none and no padding.

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use crate::openflow::layout::wire_enum;
use crate::openflow::message::Message;
use crate::openflow::tlv::{self, tlv_names, Tlv};
use crate::wire::{self, PResult, Wire};

pub const ONFT_BUNDLE_CONTROL: u32 = 2300;
pub const ONFT_BUNDLE_ADD_MESSAGE: u32 = 2301;

/// `OFPBF_ATOMIC`: apply all messages or none.
pub const OFPBF_ATOMIC: u16 = 1;
/// `OFPBF_ORDERED`: apply messages in order.
pub const OFPBF_ORDERED: u16 = 2;

wire_enum! {
    /// `enum ofp14_bundle_ctrl_type`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    pub enum BundleCtrlType: u16 {
        OpenRequest = 0,
        OpenReply = 1,
        CloseRequest = 2,
        CloseReply = 3,
        CommitRequest = 4,
        CommitReply = 5,
        DiscardRequest = 6,
        DiscardReply = 7,
        _ => Unknown,
    }
}

impl BundleCtrlType {
    /// Open vSwitch's name, e.g. `OPEN_REQUEST`.
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenRequest => "OPEN_REQUEST",
            Self::OpenReply => "OPEN_REPLY",
            Self::CloseRequest => "CLOSE_REQUEST",
            Self::CloseReply => "CLOSE_REPLY",
            Self::CommitRequest => "COMMIT_REQUEST",
            Self::CommitReply => "COMMIT_REPLY",
            Self::DiscardRequest => "DISCARD_REQUEST",
            Self::DiscardReply => "DISCARD_REPLY",
            Self::Unknown(_) => "UNKNOWN",
        }
    }
    /// The reply type that answers this request type (None for replies).
    pub fn reply(self) -> Option<Self> {
        match self {
            Self::OpenRequest => Some(Self::OpenReply),
            Self::CloseRequest => Some(Self::CloseReply),
            Self::CommitRequest => Some(Self::CommitReply),
            Self::DiscardRequest => Some(Self::DiscardReply),
            _ => None,
        }
    }
}

/// One `ofp_bundle_prop_header` property (padded to 8 bytes on the wire).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum BundleProp {
    /// `OFPBPT_EXPERIMENTER` (0xffff).
    Experimenter {
        experimenter: u32,
        exp_type: u32,
        data: Vec<u8>,
    },
    /// Any other property type: the bytes after the 4-byte header.
    Unknown { prop_type: u16, data: Vec<u8> },
}

impl Wire for BundleProp {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (rest, Tlv { ty, body, .. }) = tlv::read_padded(input, &tlv_names!("bundle property"))?;
        let prop = if ty == 0xffff {
            let (b, experimenter) = wire::u32_(body, "bundle property experimenter")?;
            let (b, exp_type) = wire::u32_(b, "bundle property exp_type")?;
            BundleProp::Experimenter {
                experimenter,
                exp_type,
                data: b.to_vec(),
            }
        } else {
            BundleProp::Unknown {
                prop_type: ty,
                data: body.to_vec(),
            }
        };
        Ok((rest, prop))
    }
    fn encode(&self, out: &mut BytesMut) {
        match self {
            BundleProp::Experimenter {
                experimenter,
                exp_type,
                data,
            } => tlv::write_padded(out, 0xffff, |out| {
                out.put_u32(*experimenter);
                out.put_u32(*exp_type);
                out.put_slice(data);
            }),
            BundleProp::Unknown { prop_type, data } => {
                tlv::write_padded(out, *prop_type, |out| out.put_slice(data))
            }
        }
    }
}

/// `ONFT_BUNDLE_CONTROL` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BundleControl {
    pub bundle_id: u32,
    pub ctrl_type: BundleCtrlType,
    /// [`OFPBF_ATOMIC`] | [`OFPBF_ORDERED`].
    pub flags: u16,
    pub properties: Vec<BundleProp>,
}

impl BundleControl {
    pub fn new(bundle_id: u32, ctrl_type: BundleCtrlType, flags: u16) -> Self {
        BundleControl {
            bundle_id,
            ctrl_type,
            flags,
            properties: Vec::new(),
        }
    }
}

impl Wire for BundleControl {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, bundle_id) = wire::u32_(input, "ofp_bundle_ctrl_msg.bundle_id")?;
        let (i, t) = wire::u16_(i, "ofp_bundle_ctrl_msg.type")?;
        let (i, flags) = wire::u16_(i, "ofp_bundle_ctrl_msg.flags")?;
        let (rest, properties) = wire::many_exact::<BundleProp>(i)?;
        Ok((
            rest,
            BundleControl {
                bundle_id,
                ctrl_type: BundleCtrlType::from_u16(t),
                flags,
                properties,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u32(self.bundle_id);
        out.put_u16(self.ctrl_type.to_u16());
        out.put_u16(self.flags);
        for p in &self.properties {
            p.encode(out);
        }
    }
}

/// `ONFT_BUNDLE_ADD_MESSAGE` body: one message added to an open bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BundleAdd {
    pub bundle_id: u32,
    pub flags: u16,
    /// The embedded message (never itself a bundle message).
    pub message: Box<Message>,
    pub properties: Vec<BundleProp>,
}

impl Wire for BundleAdd {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, bundle_id) = wire::u32_(input, "ofp_bundle_add_msg.bundle_id")?;
        let (i, ()) = wire::skip(i, 2, "ofp_bundle_add_msg.pad")?;
        let (i, flags) = wire::u16_(i, "ofp_bundle_add_msg.flags")?;
        let before = i.len();
        let (i, message) = Message::parse_embedded(i)?;
        let inner_len = before - i.len();
        let (rest, properties) = if i.is_empty() {
            (i, Vec::new())
        } else {
            let (i, ()) = wire::skip(i, wire::pad8(inner_len), "ofp_bundle_add_msg padding")?;
            wire::many_exact::<BundleProp>(i)?
        };
        Ok((
            rest,
            BundleAdd {
                bundle_id,
                flags,
                message: Box::new(message),
                properties,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u32(self.bundle_id);
        wire::put_zeros(out, 2);
        out.put_u16(self.flags);
        let start = out.len();
        self.message.encode(out);
        if !self.properties.is_empty() {
            let len = out.len() - start;
            wire::put_zeros(out, wire::pad8(len));
            for p in &self.properties {
                p.encode(out);
            }
        }
    }
}

#[cfg(test)]
pub mod arb {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    pub fn any_bundle_prop() -> impl Strategy<Value = BundleProp> {
        prop_oneof![
            (any::<u32>(), any::<u32>(), vec(any::<u8>(), 0..10)).prop_map(
                |(experimenter, exp_type, data)| BundleProp::Experimenter {
                    experimenter,
                    exp_type,
                    data
                }
            ),
            (0u16..0xffff, vec(any::<u8>(), 0..10))
                .prop_map(|(prop_type, data)| BundleProp::Unknown { prop_type, data }),
        ]
    }

    pub fn any_bundle_control() -> impl Strategy<Value = BundleControl> {
        (
            any::<u32>(),
            0u16..10,
            0u16..4,
            vec(any_bundle_prop(), 0..3),
        )
            .prop_map(|(bundle_id, t, flags, properties)| BundleControl {
                bundle_id,
                ctrl_type: BundleCtrlType::from_u16(t),
                flags,
                properties,
            })
    }
}
