//! The OpenFlow message envelope: [`Message`] = version + xid + typed [`Body`].
//!
//! [`Message::decode`] takes exactly one framed message (use [`crate::openflow::framer::Framer`] to cut a
//! TCP stream); its header length must equal the slice. HELLO and ERROR decode at any version
//! (so the controller can answer an old peer with HELLO_FAILED); every other message must carry
//! version 0x04, else [`ErrorKind::UnsupportedVersion`]. Experimenter messages are decoded to
//! typed bodies for Nicira `NXT_SET_CONTROLLER_ID` and the ONF bundle extension, and kept
//! opaque (byte-exact) otherwise.

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use crate::error::{DecodeError, ErrorKind};
use crate::openflow::bundle::{
    BundleAdd, BundleControl, BundleCtrlType, ONFT_BUNDLE_ADD_MESSAGE, ONFT_BUNDLE_CONTROL,
};
use crate::openflow::flow::{FlowMod, FlowRemoved};
use crate::openflow::group::GroupMod;
use crate::openflow::header::{end, Header, MsgType, HEADER_LEN};
use crate::openflow::meter::MeterMod;
use crate::openflow::multipart::{
    FlowStatsRequest, MultipartReply, MultipartReplyBody, MultipartRequest, MultipartRequestBody,
};
use crate::openflow::nicira::{SetControllerId, NXT_SET_CONTROLLER_ID};
use crate::openflow::packet::{PacketIn, PacketOut};
use crate::openflow::port::{PortMod, PortStatus};
use crate::openflow::switch::{
    AsyncConfig, ControllerRole, FeaturesReply, QueueGetConfigReply, QueueGetConfigRequest, Role,
    SwitchConfig,
};
use crate::openflow::symmetric::{Echo, ErrorMsg, ErrorType, Experimenter, Hello};
use crate::openflow::table::TableMod;
use crate::openflow::{NX_VENDOR_ID, OFP_VERSION, ONF_EXPERIMENTER_ID};
use crate::wire::{self, PResult, Wire};

/// A message body, one variant per OpenFlow 1.3 message (plus the typed experimenter messages).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Body {
    Hello(Hello),
    Error(ErrorMsg),
    EchoRequest(Echo),
    EchoReply(Echo),
    /// An experimenter message without a typed decoder, kept byte for byte.
    Experimenter(Experimenter),
    /// Nicira `NXT_SET_CONTROLLER_ID`.
    SetControllerId(SetControllerId),
    /// ONF `ONFT_BUNDLE_CONTROL`.
    BundleControl(BundleControl),
    /// ONF `ONFT_BUNDLE_ADD_MESSAGE`.
    BundleAdd(BundleAdd),
    FeaturesRequest,
    FeaturesReply(FeaturesReply),
    GetConfigRequest,
    GetConfigReply(SwitchConfig),
    SetConfig(SwitchConfig),
    PacketIn(PacketIn),
    FlowRemoved(FlowRemoved),
    PortStatus(PortStatus),
    PacketOut(PacketOut),
    FlowMod(FlowMod),
    GroupMod(GroupMod),
    PortMod(PortMod),
    TableMod(TableMod),
    MultipartRequest(MultipartRequest),
    MultipartReply(MultipartReply),
    BarrierRequest,
    BarrierReply,
    QueueGetConfigRequest(QueueGetConfigRequest),
    QueueGetConfigReply(QueueGetConfigReply),
    RoleRequest(Role),
    RoleReply(Role),
    GetAsyncRequest,
    GetAsyncReply(AsyncConfig),
    SetAsync(AsyncConfig),
    MeterMod(MeterMod),
    /// A message type OpenFlow 1.3 does not define: the bytes after the header.
    Unknown {
        msg_type: u8,
        data: Vec<u8>,
    },
}

impl Body {
    /// The header type of this body.
    pub fn msg_type(&self) -> MsgType {
        match self {
            Body::Hello(_) => MsgType::Hello,
            Body::Error(_) => MsgType::Error,
            Body::EchoRequest(_) => MsgType::EchoRequest,
            Body::EchoReply(_) => MsgType::EchoReply,
            Body::Experimenter(_)
            | Body::SetControllerId(_)
            | Body::BundleControl(_)
            | Body::BundleAdd(_) => MsgType::Experimenter,
            Body::FeaturesRequest => MsgType::FeaturesRequest,
            Body::FeaturesReply(_) => MsgType::FeaturesReply,
            Body::GetConfigRequest => MsgType::GetConfigRequest,
            Body::GetConfigReply(_) => MsgType::GetConfigReply,
            Body::SetConfig(_) => MsgType::SetConfig,
            Body::PacketIn(_) => MsgType::PacketIn,
            Body::FlowRemoved(_) => MsgType::FlowRemoved,
            Body::PortStatus(_) => MsgType::PortStatus,
            Body::PacketOut(_) => MsgType::PacketOut,
            Body::FlowMod(_) => MsgType::FlowMod,
            Body::GroupMod(_) => MsgType::GroupMod,
            Body::PortMod(_) => MsgType::PortMod,
            Body::TableMod(_) => MsgType::TableMod,
            Body::MultipartRequest(_) => MsgType::MultipartRequest,
            Body::MultipartReply(_) => MsgType::MultipartReply,
            Body::BarrierRequest => MsgType::BarrierRequest,
            Body::BarrierReply => MsgType::BarrierReply,
            Body::QueueGetConfigRequest(_) => MsgType::QueueGetConfigRequest,
            Body::QueueGetConfigReply(_) => MsgType::QueueGetConfigReply,
            Body::RoleRequest(_) => MsgType::RoleRequest,
            Body::RoleReply(_) => MsgType::RoleReply,
            Body::GetAsyncRequest => MsgType::GetAsyncRequest,
            Body::GetAsyncReply(_) => MsgType::GetAsyncReply,
            Body::SetAsync(_) => MsgType::SetAsync,
            Body::MeterMod(_) => MsgType::MeterMod,
            Body::Unknown { msg_type, .. } => MsgType::Other(*msg_type),
        }
    }

    /// The message's name as Open vSwitch prints it (`OFPT_*`, `NXT_*`, `ONFT_*`).
    pub fn name(&self) -> &'static str {
        match self {
            Body::SetControllerId(_) => "NXT_SET_CONTROLLER_ID",
            Body::BundleControl(_) => "ONFT_BUNDLE_CONTROL",
            Body::BundleAdd(_) => "ONFT_BUNDLE_ADD_MESSAGE",
            b => b.msg_type().name(),
        }
    }

    /// Writes the bytes after the header.
    fn encode(&self, out: &mut BytesMut) {
        match self {
            Body::Hello(b) => b.encode(out),
            Body::Error(b) => b.encode(out),
            Body::EchoRequest(b) | Body::EchoReply(b) => b.encode(out),
            Body::Experimenter(b) => b.encode(out),
            Body::SetControllerId(b) => {
                out.put_u32(NX_VENDOR_ID);
                out.put_u32(NXT_SET_CONTROLLER_ID);
                b.encode(out);
            }
            Body::BundleControl(b) => {
                out.put_u32(ONF_EXPERIMENTER_ID);
                out.put_u32(ONFT_BUNDLE_CONTROL);
                b.encode(out);
            }
            Body::BundleAdd(b) => {
                out.put_u32(ONF_EXPERIMENTER_ID);
                out.put_u32(ONFT_BUNDLE_ADD_MESSAGE);
                b.encode(out);
            }
            Body::FeaturesRequest
            | Body::GetConfigRequest
            | Body::BarrierRequest
            | Body::BarrierReply
            | Body::GetAsyncRequest => {}
            Body::FeaturesReply(b) => b.encode(out),
            Body::GetConfigReply(b) | Body::SetConfig(b) => b.encode(out),
            Body::PacketIn(b) => b.encode(out),
            Body::FlowRemoved(b) => b.encode(out),
            Body::PortStatus(b) => b.encode(out),
            Body::PacketOut(b) => b.encode(out),
            Body::FlowMod(b) => b.encode(out),
            Body::GroupMod(b) => b.encode(out),
            Body::PortMod(b) => b.encode(out),
            Body::TableMod(b) => b.encode(out),
            Body::MultipartRequest(b) => b.encode(out),
            Body::MultipartReply(b) => b.encode(out),
            Body::QueueGetConfigRequest(b) => b.encode(out),
            Body::QueueGetConfigReply(b) => b.encode(out),
            Body::RoleRequest(b) | Body::RoleReply(b) => b.encode(out),
            Body::GetAsyncReply(b) | Body::SetAsync(b) => b.encode(out),
            Body::MeterMod(b) => b.encode(out),
            Body::Unknown { data, .. } => out.put_slice(data),
        }
    }
}

/// Decodes a `T` from `i` and wraps it.
fn typed<T: Wire>(i: &[u8], f: impl FnOnce(T) -> Body) -> PResult<'_, Body> {
    let (r, v) = T::decode(i)?;
    Ok((r, f(v)))
}

/// Decodes the body of a message of type `t` from exactly `i`.
fn decode_body(t: MsgType, i: &[u8], embedded: bool) -> PResult<'_, Body> {
    match t {
        MsgType::Hello => typed(i, Body::Hello),
        MsgType::Error => typed(i, Body::Error),
        MsgType::EchoRequest => typed(i, Body::EchoRequest),
        MsgType::EchoReply => typed(i, Body::EchoReply),
        MsgType::Experimenter => {
            let (r, e) = Experimenter::decode(i)?;
            let data = i.get(8..).unwrap_or_default();
            match (e.experimenter, e.exp_type) {
                (NX_VENDOR_ID, NXT_SET_CONTROLLER_ID) => typed(data, Body::SetControllerId),
                (ONF_EXPERIMENTER_ID, ONFT_BUNDLE_CONTROL | ONFT_BUNDLE_ADD_MESSAGE)
                    if embedded =>
                {
                    wire::invalid(i, "bundle message inside a bundle", u64::from(e.exp_type))
                }
                (ONF_EXPERIMENTER_ID, ONFT_BUNDLE_CONTROL) => typed(data, Body::BundleControl),
                (ONF_EXPERIMENTER_ID, ONFT_BUNDLE_ADD_MESSAGE) => typed(data, Body::BundleAdd),
                _ => Ok((r, Body::Experimenter(e))),
            }
        }
        MsgType::FeaturesRequest => Ok((i, Body::FeaturesRequest)),
        MsgType::FeaturesReply => typed(i, Body::FeaturesReply),
        MsgType::GetConfigRequest => Ok((i, Body::GetConfigRequest)),
        MsgType::GetConfigReply => typed(i, Body::GetConfigReply),
        MsgType::SetConfig => typed(i, Body::SetConfig),
        MsgType::PacketIn => typed(i, Body::PacketIn),
        MsgType::FlowRemoved => typed(i, Body::FlowRemoved),
        MsgType::PortStatus => typed(i, Body::PortStatus),
        MsgType::PacketOut => typed(i, Body::PacketOut),
        MsgType::FlowMod => typed(i, Body::FlowMod),
        MsgType::GroupMod => typed(i, Body::GroupMod),
        MsgType::PortMod => typed(i, Body::PortMod),
        MsgType::TableMod => typed(i, Body::TableMod),
        MsgType::MultipartRequest => typed(i, Body::MultipartRequest),
        MsgType::MultipartReply => typed(i, Body::MultipartReply),
        MsgType::BarrierRequest => Ok((i, Body::BarrierRequest)),
        MsgType::BarrierReply => Ok((i, Body::BarrierReply)),
        MsgType::QueueGetConfigRequest => typed(i, Body::QueueGetConfigRequest),
        MsgType::QueueGetConfigReply => typed(i, Body::QueueGetConfigReply),
        MsgType::RoleRequest => typed(i, Body::RoleRequest),
        MsgType::RoleReply => typed(i, Body::RoleReply),
        MsgType::GetAsyncRequest => Ok((i, Body::GetAsyncRequest)),
        MsgType::GetAsyncReply => typed(i, Body::GetAsyncReply),
        MsgType::SetAsync => typed(i, Body::SetAsync),
        MsgType::MeterMod => typed(i, Body::MeterMod),
        MsgType::Other(msg_type) => Ok((
            end(i),
            Body::Unknown {
                msg_type,
                data: i.to_vec(),
            },
        )),
    }
}

/// One OpenFlow message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    pub version: u8,
    pub xid: u32,
    pub body: Body,
}

impl Message {
    /// An OpenFlow 1.3 message.
    pub fn new(xid: u32, body: Body) -> Self {
        Message {
            version: OFP_VERSION,
            xid,
            body,
        }
    }

    pub fn msg_type(&self) -> MsgType {
        self.body.msg_type()
    }

    /// Decodes exactly one message occupying all of `buf`.
    pub fn decode(buf: &[u8]) -> Result<Message, DecodeError> {
        if let Some(h) = Header::peek(buf) {
            let declared = usize::from(h.length);
            if declared >= HEADER_LEN && declared > buf.len() {
                return Err(DecodeError::new(
                    buf.len(),
                    ErrorKind::Truncated {
                        what: "message",
                        needed: declared - buf.len(),
                    },
                ));
            }
        }
        match Self::parse(buf) {
            Ok(([], m)) => Ok(m),
            Ok((rest, _)) => Err(DecodeError::new(
                buf.len() - rest.len(),
                ErrorKind::Trailing {
                    what: "message (beyond its header length)",
                    count: rest.len(),
                },
            )),
            Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(e.into_decode_error(buf)),
            Err(nom::Err::Incomplete(_)) => Err(DecodeError::new(
                buf.len(),
                ErrorKind::Truncated {
                    what: "message",
                    needed: 1,
                },
            )),
        }
    }

    /// Parses one message from the front of `input` (its header length says where it ends).
    pub fn parse(input: &[u8]) -> PResult<'_, Message> {
        Self::parse_inner(input, false)
    }

    /// Parses a message embedded in a bundle: bundle messages themselves are refused.
    pub(crate) fn parse_embedded(input: &[u8]) -> PResult<'_, Message> {
        Self::parse_inner(input, true)
    }

    fn parse_inner(input: &[u8], embedded: bool) -> PResult<'_, Message> {
        let (_, h) = Header::decode(input)?;
        let len = usize::from(h.length);
        if len < HEADER_LEN {
            return wire::bad_length(
                input.get(2..).unwrap_or(input),
                "ofp_header.length",
                len,
                "shorter than the 8-byte header",
            );
        }
        if !matches!(h.msg_type, MsgType::Hello | MsgType::Error) && h.version != OFP_VERSION {
            return wire::fail(input, ErrorKind::UnsupportedVersion(h.version));
        }
        let (rest, whole) = wire::take(input, len, "message")?;
        let body_bytes = whole.get(HEADER_LEN..).unwrap_or_default();
        let (after, body) = decode_body(h.msg_type, body_bytes, embedded)?;
        if !after.is_empty() {
            return wire::fail(
                after,
                ErrorKind::Trailing {
                    what: h.msg_type.name(),
                    count: after.len(),
                },
            );
        }
        Ok((
            rest,
            Message {
                version: h.version,
                xid: h.xid,
                body,
            },
        ))
    }

    /// Appends the message's bytes; the header length is patched to the real size (saturating
    /// at 65535 for bodies that cannot be expressed).
    pub fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_u8(self.version);
        out.put_u8(self.body.msg_type().to_u8());
        out.put_u16(0);
        out.put_u32(self.xid);
        self.body.encode(out);
        let len = out.len() - start;
        wire::patch_u16(out, start + 2, wire::len_u16(len));
    }

    /// Encodes into a fresh buffer.
    pub fn to_bytes(&self) -> BytesMut {
        let mut out = BytesMut::new();
        self.encode(&mut out);
        out
    }

    // ---- constructors -------------------------------------------------------------------------

    /// HELLO announcing OpenFlow 1.3 only (version bitmap).
    pub fn hello(xid: u32) -> Self {
        Self::new(xid, Body::Hello(Hello::with_versions(&[OFP_VERSION])))
    }

    /// ERROR HELLO_FAILED/INCOMPATIBLE with an explanation, in the peer's `version` header.
    pub fn hello_failed(xid: u32, version: u8, explanation: &str) -> Self {
        Message {
            version,
            xid,
            body: Body::Error(ErrorMsg {
                error: ErrorType::HelloFailed(
                    crate::openflow::symmetric::HelloFailedCode::Incompatible,
                ),
                data: explanation.as_bytes().to_vec(),
            }),
        }
    }

    /// An ERROR answering `offending` (the raw request): same xid, its first 64 bytes as data.
    pub fn error_reply(offending: &[u8], error: ErrorType) -> Self {
        let xid = Header::peek(offending).map_or(0, |h| h.xid);
        Self::new(xid, Body::Error(ErrorMsg::about(error, offending)))
    }

    pub fn echo_request(xid: u32, data: Vec<u8>) -> Self {
        Self::new(xid, Body::EchoRequest(Echo { data }))
    }

    /// The ECHO_REPLY to `req`: same version, xid and payload.
    pub fn echo_reply_to(req: &Message) -> Self {
        let data = match &req.body {
            Body::EchoRequest(e) => e.data.clone(),
            _ => Vec::new(),
        };
        Message {
            version: req.version,
            xid: req.xid,
            body: Body::EchoReply(Echo { data }),
        }
    }

    pub fn features_request(xid: u32) -> Self {
        Self::new(xid, Body::FeaturesRequest)
    }

    pub fn get_config_request(xid: u32) -> Self {
        Self::new(xid, Body::GetConfigRequest)
    }

    pub fn set_config(xid: u32, flags: u16, miss_send_len: u16) -> Self {
        Self::new(
            xid,
            Body::SetConfig(SwitchConfig {
                flags,
                miss_send_len,
            }),
        )
    }

    pub fn barrier_request(xid: u32) -> Self {
        Self::new(xid, Body::BarrierRequest)
    }

    pub fn barrier_reply(xid: u32) -> Self {
        Self::new(xid, Body::BarrierReply)
    }

    pub fn role_request(xid: u32, role: ControllerRole, generation_id: u64) -> Self {
        Self::new(
            xid,
            Body::RoleRequest(Role {
                role,
                generation_id,
            }),
        )
    }

    pub fn get_async_request(xid: u32) -> Self {
        Self::new(xid, Body::GetAsyncRequest)
    }

    pub fn set_async(xid: u32, config: AsyncConfig) -> Self {
        Self::new(xid, Body::SetAsync(config))
    }

    /// Nicira NXT_SET_CONTROLLER_ID.
    pub fn set_controller_id(xid: u32, controller_id: u16) -> Self {
        Self::new(
            xid,
            Body::SetControllerId(SetControllerId { controller_id }),
        )
    }

    pub fn flow_mod(xid: u32, flow_mod: FlowMod) -> Self {
        Self::new(xid, Body::FlowMod(flow_mod))
    }

    pub fn group_mod(xid: u32, group_mod: GroupMod) -> Self {
        Self::new(xid, Body::GroupMod(group_mod))
    }

    pub fn meter_mod(xid: u32, meter_mod: MeterMod) -> Self {
        Self::new(xid, Body::MeterMod(meter_mod))
    }

    pub fn packet_out(xid: u32, packet_out: PacketOut) -> Self {
        Self::new(xid, Body::PacketOut(packet_out))
    }

    pub fn multipart_request(xid: u32, body: MultipartRequestBody) -> Self {
        Self::new(xid, Body::MultipartRequest(MultipartRequest::new(body)))
    }

    pub fn multipart_reply(xid: u32, flags: u16, body: MultipartReplyBody) -> Self {
        Self::new(xid, Body::MultipartReply(MultipartReply { flags, body }))
    }

    /// OFPMP_FLOW request (dump flows matching `req`).
    pub fn flow_stats_request(xid: u32, req: FlowStatsRequest) -> Self {
        Self::multipart_request(xid, MultipartRequestBody::Flow(req))
    }

    /// OFPMP_GROUP_DESC request (dump all groups).
    pub fn group_desc_request(xid: u32) -> Self {
        Self::multipart_request(xid, MultipartRequestBody::GroupDesc)
    }

    /// OFPMP_GROUP request for `group_id` (`OFPG_ALL` for every group).
    pub fn group_stats_request(xid: u32, group_id: u32) -> Self {
        Self::multipart_request(xid, MultipartRequestBody::Group { group_id })
    }

    /// OFPMP_PORT_DESC request.
    pub fn port_desc_request(xid: u32) -> Self {
        Self::multipart_request(xid, MultipartRequestBody::PortDesc)
    }

    /// OFPMP_PORT_STATS request for `port_no` (`OFPP_ANY` for all).
    pub fn port_stats_request(xid: u32, port_no: u32) -> Self {
        Self::multipart_request(xid, MultipartRequestBody::PortStats { port_no })
    }

    /// ONF BUNDLE_CONTROL of `ctrl_type`.
    pub fn bundle_control(xid: u32, bundle_id: u32, ctrl_type: BundleCtrlType, flags: u16) -> Self {
        Self::new(
            xid,
            Body::BundleControl(BundleControl::new(bundle_id, ctrl_type, flags)),
        )
    }

    /// ONF BUNDLE_CONTROL OPEN_REQUEST.
    pub fn bundle_open(xid: u32, bundle_id: u32, flags: u16) -> Self {
        Self::bundle_control(xid, bundle_id, BundleCtrlType::OpenRequest, flags)
    }

    /// ONF BUNDLE_CONTROL CLOSE_REQUEST.
    pub fn bundle_close(xid: u32, bundle_id: u32, flags: u16) -> Self {
        Self::bundle_control(xid, bundle_id, BundleCtrlType::CloseRequest, flags)
    }

    /// ONF BUNDLE_CONTROL COMMIT_REQUEST.
    pub fn bundle_commit(xid: u32, bundle_id: u32, flags: u16) -> Self {
        Self::bundle_control(xid, bundle_id, BundleCtrlType::CommitRequest, flags)
    }

    /// ONF BUNDLE_CONTROL DISCARD_REQUEST.
    pub fn bundle_discard(xid: u32, bundle_id: u32, flags: u16) -> Self {
        Self::bundle_control(xid, bundle_id, BundleCtrlType::DiscardRequest, flags)
    }

    /// ONF BUNDLE_ADD_MESSAGE carrying `message`; the outer xid is the embedded message's, as
    /// the extension requires.
    pub fn bundle_add(bundle_id: u32, flags: u16, message: Message) -> Self {
        Message {
            version: message.version,
            xid: message.xid,
            body: Body::BundleAdd(BundleAdd {
                bundle_id,
                flags,
                message: Box::new(message),
                properties: Vec::new(),
            }),
        }
    }
}

/// Proptest strategies for whole messages (bodies owned by other modules come from their `arb`).
#[cfg(test)]
pub mod arb {
    use super::*;
    use crate::openflow::bundle::arb::{any_bundle_control, any_bundle_prop};
    use crate::openflow::flow::arb::{any_flow_mod, any_flow_removed};
    use crate::openflow::group::arb::any_group_mod;
    use crate::openflow::meter::arb::any_meter_mod;
    use crate::openflow::multipart::arb::{any_multipart_reply, any_multipart_request};
    use crate::openflow::nicira::arb::any_set_controller_id;
    use crate::openflow::packet::arb::{any_packet_in, any_packet_out};
    use crate::openflow::port::arb::{any_port_mod, any_port_status};
    use crate::openflow::switch::arb::*;
    use crate::openflow::symmetric::arb::*;
    use crate::openflow::table::arb::any_table_mod;
    use proptest::collection::vec;
    use proptest::prelude::*;

    /// Bodies that are valid inside a bundle (everything but HELLO-level and bundle messages).
    pub fn any_plain_body() -> impl Strategy<Value = Body> {
        prop_oneof![
            any_hello().prop_map(Body::Hello),
            any_error_msg().prop_map(Body::Error),
            any_echo().prop_map(Body::EchoRequest),
            any_echo().prop_map(Body::EchoReply),
            any_experimenter().prop_map(Body::Experimenter),
            any_set_controller_id().prop_map(Body::SetControllerId),
            Just(Body::FeaturesRequest),
            any_features_reply().prop_map(Body::FeaturesReply),
            Just(Body::GetConfigRequest),
            any_switch_config().prop_map(Body::GetConfigReply),
            any_switch_config().prop_map(Body::SetConfig),
            any_multipart_request().prop_map(Body::MultipartRequest),
            any_multipart_reply().prop_map(Body::MultipartReply),
            Just(Body::BarrierRequest),
            Just(Body::BarrierReply),
            any_queue_get_config_request().prop_map(Body::QueueGetConfigRequest),
            any_queue_get_config_reply().prop_map(Body::QueueGetConfigReply),
            any_role().prop_map(Body::RoleRequest),
            any_role().prop_map(Body::RoleReply),
            Just(Body::GetAsyncRequest),
            any_async_config().prop_map(Body::GetAsyncReply),
            any_async_config().prop_map(Body::SetAsync),
            any_packet_in().prop_map(Body::PacketIn),
            any_flow_removed().prop_map(Body::FlowRemoved),
            any_port_status().prop_map(Body::PortStatus),
            any_packet_out().prop_map(Body::PacketOut),
            any_flow_mod().prop_map(Body::FlowMod),
            any_group_mod().prop_map(Body::GroupMod),
            any_port_mod().prop_map(Body::PortMod),
            any_table_mod().prop_map(Body::TableMod),
            any_meter_mod().prop_map(Body::MeterMod),
            (30u8..=255, vec(any::<u8>(), 0..24))
                .prop_map(|(msg_type, data)| Body::Unknown { msg_type, data }),
        ]
    }

    pub fn any_plain_message() -> impl Strategy<Value = Message> {
        (any::<u32>(), any_plain_body()).prop_map(|(xid, body)| Message::new(xid, body))
    }

    /// Any message, including typed experimenter (Nicira, ONF bundle) messages.
    pub fn any_message() -> impl Strategy<Value = Message> {
        prop_oneof![
            4 => any_plain_message(),
            1 => (any::<u32>(), any_bundle_control())
                .prop_map(|(xid, c)| Message::new(xid, Body::BundleControl(c))),
            1 => (any::<u32>(), any::<u16>(), any_plain_message(), vec(any_bundle_prop(), 0..2))
                .prop_map(|(bundle_id, flags, inner, properties)| {
                    let mut m = Message::bundle_add(bundle_id, flags, inner);
                    if let Body::BundleAdd(b) = &mut m.body {
                        b.properties = properties;
                    }
                    m
                }),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::arb::*;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn version_rules() {
        // HELLO at OpenFlow 1.0 decodes; FEATURES_REQUEST at 1.0 does not.
        assert!(Message::decode(&[1, 0, 0, 8, 0, 0, 0, 0]).is_ok());
        let e = Message::decode(&[1, 5, 0, 8, 0, 0, 0, 1]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnsupportedVersion(1));
        assert_eq!(e.offset, 0);
    }

    #[test]
    fn length_must_equal_slice() {
        let e = Message::decode(&[4, 20, 0, 9, 0, 0, 0, 1]).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Truncated { needed: 1, .. }));
        let e = Message::decode(&[4, 20, 0, 8, 0, 0, 0, 1, 0]).unwrap_err();
        assert_eq!(e.offset, 8);
        assert!(matches!(e.kind, ErrorKind::Trailing { count: 1, .. }));
        let e = Message::decode(&[4, 20, 0, 4, 0, 0, 0, 1]).unwrap_err();
        assert_eq!(e.offset, 2);
        let e = Message::decode(&[4, 20, 0, 12, 0, 0, 0, 1, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(e.offset, 8, "{e}");
    }

    #[test]
    fn nested_bundles_are_refused() {
        let inner = Message::bundle_open(1, 1, 0);
        let outer = Message::bundle_add(1, 0, inner);
        let bytes = outer.to_bytes();
        let e = Message::decode(&bytes).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::InvalidValue { .. }), "{e}");
        assert_eq!(e.offset, 24 + 8);
    }

    #[test]
    fn constructors() {
        let req = Message::echo_request(9, vec![1, 2, 3]);
        let rep = Message::echo_reply_to(&req);
        assert_eq!(rep.xid, 9);
        assert_eq!(
            rep.body,
            Body::EchoReply(Echo {
                data: vec![1, 2, 3]
            })
        );
        let add = Message::bundle_add(7, 3, Message::barrier_request(42));
        assert_eq!(add.xid, 42);
        let b = add.to_bytes();
        assert_eq!(Message::decode(&b).unwrap(), add);
        let err = Message::error_reply(&b, ErrorType::from_type_code(1, 1));
        assert_eq!(err.xid, 42);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn round_trip(m in any_message()) {
            let b = m.to_bytes();
            let d = Message::decode(&b).unwrap();
            prop_assert_eq!(&d, &m);
            prop_assert_eq!(d.to_bytes(), b);
        }

        #[test]
        fn truncations_fail(m in any_message()) {
            let b = m.to_bytes();
            for n in 0..b.len() {
                prop_assert!(Message::decode(&b[..n]).is_err());
                // A shortened message with a patched length must fail or decode to a different
                // message, never panic.
                if n >= 8 {
                    let mut c = b[..n].to_vec();
                    c[2..4].copy_from_slice(&u16::try_from(n).unwrap().to_be_bytes());
                    let _ = Message::decode(&c);
                }
            }
        }

        #[test]
        fn random_bytes_never_panic(v in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Message::decode(&v);
            let _ = Message::parse(&v);
        }

        #[test]
        fn random_bodies_never_panic(t in any::<u8>(), v in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut b = vec![4u8, t, 0, 0, 0, 0, 0, 1];
            b.extend_from_slice(&v);
            let n = u16::try_from(b.len()).unwrap();
            b[2..4].copy_from_slice(&n.to_be_bytes());
            if let Ok(m) = Message::decode(&b) {
                // The re-encoding of an accepted input is canonical: it decodes and re-encodes
                // to itself.
                let c = m.to_bytes();
                let d = Message::decode(&c).unwrap();
                prop_assert_eq!(d.to_bytes(), c);
            }
        }
    }
}
