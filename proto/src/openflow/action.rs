//! OpenFlow 1.3 actions (`ofp_action_*`), plus the Nicira controller actions Open vSwitch needs.
//!
//! Every action is a TLV (type:16, length:16 including the header) whose length is a multiple
//! of 8. Standard actions are typed and their length checked exactly. Nicira
//! `NXAST_CONTROLLER` (subtype 20) and `NXAST_CONTROLLER2` (subtype 37, property based) are
//! typed; any other experimenter action, and any action type OpenFlow 1.3 does not define,
//! is kept opaque and re-encodes byte for byte.

use std::fmt;

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use super::oxm::{OxmField, OFPVID_PRESENT};
use super::port::{PortNo, OFPP_CONTROLLER};
use super::tlv::{self, tlv_names, Tlv, TlvNames};
use super::NX_VENDOR_ID;
use crate::wire::{self, PResult, Wire};

pub const OFPAT_OUTPUT: u16 = 0;
pub const OFPAT_COPY_TTL_OUT: u16 = 11;
pub const OFPAT_COPY_TTL_IN: u16 = 12;
pub const OFPAT_SET_MPLS_TTL: u16 = 15;
pub const OFPAT_DEC_MPLS_TTL: u16 = 16;
pub const OFPAT_PUSH_VLAN: u16 = 17;
pub const OFPAT_POP_VLAN: u16 = 18;
pub const OFPAT_PUSH_MPLS: u16 = 19;
pub const OFPAT_POP_MPLS: u16 = 20;
pub const OFPAT_SET_QUEUE: u16 = 21;
pub const OFPAT_GROUP: u16 = 22;
pub const OFPAT_SET_NW_TTL: u16 = 23;
pub const OFPAT_DEC_NW_TTL: u16 = 24;
pub const OFPAT_SET_FIELD: u16 = 25;
pub const OFPAT_PUSH_PBB: u16 = 26;
pub const OFPAT_POP_PBB: u16 = 27;
pub const OFPAT_EXPERIMENTER: u16 = 0xffff;

/// `max_len` meaning "send the whole packet, do not buffer".
pub const OFPCML_NO_BUFFER: u16 = 0xffff;
/// Largest `max_len` that may be buffered.
pub const OFPCML_MAX: u16 = 0xffe5;

/// Nicira action subtype of `controller(...)`.
pub const NXAST_CONTROLLER: u16 = 20;
/// Nicira action subtype of the property-based `controller(...)`.
pub const NXAST_CONTROLLER2: u16 = 37;

/// `NXAC2PT_*` property types of NXAST_CONTROLLER2.
pub const NXAC2PT_MAX_LEN: u16 = 0;
pub const NXAC2PT_CONTROLLER_ID: u16 = 1;
pub const NXAC2PT_REASON: u16 = 2;
pub const NXAC2PT_USERDATA: u16 = 3;
pub const NXAC2PT_PAUSE: u16 = 4;
pub const NXAC2PT_METER_ID: u16 = 5;

/// `OFPR_ACTION`: the packet-in reason a controller action normally carries.
pub const OFPR_ACTION: u8 = 1;

/// `ovs-ofctl` name of a packet-in reason (`OFPR_*`).
pub fn packet_in_reason_name(reason: u8) -> Option<&'static str> {
    Some(match reason {
        0 => "no_match",
        1 => "action",
        2 => "invalid_ttl",
        3 => "action_set",
        4 => "group",
        5 => "packet_out",
        _ => return None,
    })
}

fn fmt_reason(f: &mut fmt::Formatter<'_>, reason: u8) -> fmt::Result {
    match packet_in_reason_name(reason) {
        Some(n) => f.write_str(n),
        None => write!(f, "{reason}"),
    }
}

fn fmt_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8], sep: &str) -> fmt::Result {
    for (n, b) in bytes.iter().enumerate() {
        if n > 0 {
            f.write_str(sep)?;
        }
        write!(f, "{b:02x}")?;
    }
    Ok(())
}

// ---- Nicira controller actions ------------------------------------------------------------

/// `NXAST_CONTROLLER`: send the packet to the controllers with the given id (16 bytes:
/// header, vendor, subtype, max_len, controller_id, reason, one zero byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NxController {
    pub max_len: u16,
    pub controller_id: u16,
    /// `OFPR_*` reason the packet-in carries.
    pub reason: u8,
}

/// One property of `NXAST_CONTROLLER2` (layout of OVS `lib/ofp-actions.c`: each property is
/// type:16, length:16, payload, zero-padded to 8; 16-bit values are written with length 8).
///
/// A standard property whose length differs from the one OVS writes is kept as
/// [`Controller2Prop::Other`], so it still re-encodes byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Controller2Prop {
    /// `NXAC2PT_MAX_LEN` (length 8: value and 2 pad bytes).
    MaxLen(u16),
    /// `NXAC2PT_CONTROLLER_ID` (length 8).
    ControllerId(u16),
    /// `NXAC2PT_REASON` (length 5).
    Reason(u8),
    /// `NXAC2PT_USERDATA` (length 4 + data).
    Userdata(Vec<u8>),
    /// `NXAC2PT_PAUSE` (length 4, a flag).
    Pause,
    /// `NXAC2PT_METER_ID` (length 8).
    MeterId(u32),
    /// Any other property (or a standard one with an unusual length): payload kept as is.
    Other { prop_type: u16, value: Vec<u8> },
}

impl Controller2Prop {
    fn decode_prop(input: &[u8]) -> PResult<'_, Self> {
        let (i, ty) = wire::u16_(input, "controller2 property type")?;
        let (_, len) = wire::u16_(i, "controller2 property length")?;
        let len = usize::from(len);
        if len < 4 {
            return wire::bad_length(input, "controller2 property", len, "shorter than 4");
        }
        let (rest, whole) = wire::take(input, len + wire::pad8(len), "controller2 property")?;
        let payload = whole.get(4..len).unwrap_or_default();
        let (_, v16) = wire::u16_(payload, "value").unwrap_or((&[], 0));
        let (_, v32) = wire::u32_(payload, "value").unwrap_or((&[], 0));
        let prop = match (ty, len) {
            (NXAC2PT_MAX_LEN, 8) => Self::MaxLen(v16),
            (NXAC2PT_CONTROLLER_ID, 8) => Self::ControllerId(v16),
            (NXAC2PT_REASON, 5) => Self::Reason(payload.first().copied().unwrap_or_default()),
            (NXAC2PT_USERDATA, _) => Self::Userdata(payload.to_vec()),
            (NXAC2PT_PAUSE, 4) => Self::Pause,
            (NXAC2PT_METER_ID, 8) => Self::MeterId(v32),
            _ => Self::Other {
                prop_type: ty,
                value: payload.to_vec(),
            },
        };
        Ok((rest, prop))
    }

    fn encode_prop(&self, out: &mut BytesMut) {
        let start = out.len();
        let (ty, payload): (u16, &[u8]);
        let tmp;
        match self {
            Self::MaxLen(v) => {
                tmp = [v.to_be_bytes()[0], v.to_be_bytes()[1], 0, 0];
                (ty, payload) = (NXAC2PT_MAX_LEN, &tmp[..]);
            }
            Self::ControllerId(v) => {
                tmp = [v.to_be_bytes()[0], v.to_be_bytes()[1], 0, 0];
                (ty, payload) = (NXAC2PT_CONTROLLER_ID, &tmp[..]);
            }
            Self::Reason(r) => {
                tmp = [*r, 0, 0, 0];
                (ty, payload) = (NXAC2PT_REASON, &tmp[..1]);
            }
            Self::Userdata(d) => (ty, payload) = (NXAC2PT_USERDATA, &d[..]),
            Self::Pause => (ty, payload) = (NXAC2PT_PAUSE, &[][..]),
            Self::MeterId(m) => {
                tmp = m.to_be_bytes();
                (ty, payload) = (NXAC2PT_METER_ID, &tmp[..]);
            }
            Self::Other { prop_type, value } => (ty, payload) = (*prop_type, &value[..]),
        }
        out.put_u16(ty);
        out.put_u16(wire::len_u16(4 + payload.len()));
        out.put_slice(payload);
        let len = out.len() - start;
        wire::put_zeros(out, wire::pad8(len));
    }
}

/// `NXAST_CONTROLLER2`: the property-based controller action (16-byte header: type, length,
/// vendor, subtype, 6 pad bytes; then properties). Properties are kept in wire order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct NxController2 {
    pub props: Vec<Controller2Prop>,
}

impl NxController2 {
    /// `controller(id=controller_id,max_len=max_len)` in the property form, as OVS writes it
    /// (max_len then controller_id). Add more with the `with_*` builders.
    pub fn new(controller_id: u16, max_len: u16) -> Self {
        NxController2 {
            props: vec![
                Controller2Prop::MaxLen(max_len),
                Controller2Prop::ControllerId(controller_id),
            ],
        }
    }
    pub fn with_reason(mut self, reason: u8) -> Self {
        self.props.push(Controller2Prop::Reason(reason));
        self
    }
    pub fn with_userdata(mut self, userdata: Vec<u8>) -> Self {
        self.props.push(Controller2Prop::Userdata(userdata));
        self
    }
    pub fn with_pause(mut self) -> Self {
        self.props.push(Controller2Prop::Pause);
        self
    }
    pub fn with_meter_id(mut self, meter_id: u32) -> Self {
        self.props.push(Controller2Prop::MeterId(meter_id));
        self
    }

    pub fn max_len(&self) -> Option<u16> {
        self.props.iter().find_map(|p| match p {
            Controller2Prop::MaxLen(v) => Some(*v),
            _ => None,
        })
    }
    pub fn controller_id(&self) -> Option<u16> {
        self.props.iter().find_map(|p| match p {
            Controller2Prop::ControllerId(v) => Some(*v),
            _ => None,
        })
    }
    pub fn reason(&self) -> Option<u8> {
        self.props.iter().find_map(|p| match p {
            Controller2Prop::Reason(v) => Some(*v),
            _ => None,
        })
    }
    pub fn userdata(&self) -> Option<&[u8]> {
        self.props.iter().find_map(|p| match p {
            Controller2Prop::Userdata(v) => Some(&v[..]),
            _ => None,
        })
    }
    pub fn pause(&self) -> bool {
        self.props
            .iter()
            .any(|p| matches!(p, Controller2Prop::Pause))
    }
    pub fn meter_id(&self) -> Option<u32> {
        self.props.iter().find_map(|p| match p {
            Controller2Prop::MeterId(v) => Some(*v),
            _ => None,
        })
    }
}

// ---- the action enum ----------------------------------------------------------------------

/// One OpenFlow 1.3 action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Action {
    /// `OFPAT_OUTPUT`: `max_len` matters only when `port` is `OFPP_CONTROLLER`.
    Output {
        port: u32,
        max_len: u16,
    },
    CopyTtlOut,
    CopyTtlIn,
    SetMplsTtl(u8),
    DecMplsTtl,
    /// Push a VLAN tag with this ethertype (0x8100 or 0x88a8).
    PushVlan(u16),
    PopVlan,
    PushMpls(u16),
    /// Pop an MPLS label; the ethertype of the payload.
    PopMpls(u16),
    SetQueue(u32),
    Group(u32),
    SetNwTtl(u8),
    DecNwTtl,
    /// `OFPAT_SET_FIELD` with one OXM (padded to 8).
    SetField(OxmField),
    PushPbb(u16),
    PopPbb,
    /// Nicira `NXAST_CONTROLLER`.
    NxController(NxController),
    /// Nicira `NXAST_CONTROLLER2`.
    NxController2(NxController2),
    /// Any other experimenter action: the id and the bytes after it, verbatim.
    Experimenter {
        experimenter: u32,
        data: Vec<u8>,
    },
    /// An action type OpenFlow 1.3 does not define: the bytes after type and length.
    Unknown {
        action_type: u16,
        body: Vec<u8>,
    },
}

impl Action {
    /// `output:port` (to the controller: the whole packet, unbuffered).
    pub fn output(port: u32) -> Self {
        let max_len = if port == OFPP_CONTROLLER {
            OFPCML_NO_BUFFER
        } else {
            0
        };
        Action::Output { port, max_len }
    }

    /// `output:CONTROLLER` with a `max_len`.
    pub fn to_controller(max_len: u16) -> Self {
        Action::Output {
            port: OFPP_CONTROLLER,
            max_len,
        }
    }

    /// Nicira `controller(id=..., max_len=...)` with reason `action`.
    pub fn nx_controller(controller_id: u16, max_len: u16) -> Self {
        Action::NxController(NxController {
            max_len,
            controller_id,
            reason: OFPR_ACTION,
        })
    }

    /// Nicira `NXAST_CONTROLLER2` built from properties.
    pub fn nx_controller2(c: NxController2) -> Self {
        Action::NxController2(c)
    }

    pub fn group(group_id: u32) -> Self {
        Action::Group(group_id)
    }

    pub fn set_field(field: OxmField) -> Self {
        Action::SetField(field)
    }

    /// `set_field:vid->vlan_vid` with the OFPVID_PRESENT bit set.
    pub fn set_vlan_vid(vid: u16) -> Self {
        Action::SetField(OxmField::VlanVid {
            value: vid | OFPVID_PRESENT,
            mask: None,
        })
    }

    pub fn push_vlan(ethertype: u16) -> Self {
        Action::PushVlan(ethertype)
    }

    pub fn pop_vlan() -> Self {
        Action::PopVlan
    }

    /// The action's type on the wire.
    pub fn action_type(&self) -> u16 {
        match self {
            Self::Output { .. } => OFPAT_OUTPUT,
            Self::CopyTtlOut => OFPAT_COPY_TTL_OUT,
            Self::CopyTtlIn => OFPAT_COPY_TTL_IN,
            Self::SetMplsTtl(_) => OFPAT_SET_MPLS_TTL,
            Self::DecMplsTtl => OFPAT_DEC_MPLS_TTL,
            Self::PushVlan(_) => OFPAT_PUSH_VLAN,
            Self::PopVlan => OFPAT_POP_VLAN,
            Self::PushMpls(_) => OFPAT_PUSH_MPLS,
            Self::PopMpls(_) => OFPAT_POP_MPLS,
            Self::SetQueue(_) => OFPAT_SET_QUEUE,
            Self::Group(_) => OFPAT_GROUP,
            Self::SetNwTtl(_) => OFPAT_SET_NW_TTL,
            Self::DecNwTtl => OFPAT_DEC_NW_TTL,
            Self::SetField(_) => OFPAT_SET_FIELD,
            Self::PushPbb(_) => OFPAT_PUSH_PBB,
            Self::PopPbb => OFPAT_POP_PBB,
            Self::NxController(_) | Self::NxController2(_) | Self::Experimenter { .. } => {
                OFPAT_EXPERIMENTER
            }
            Self::Unknown { action_type, .. } => *action_type,
        }
    }
}

const NAMES: TlvNames = tlv_names!("action");

fn need<'a>(input: &'a [u8], len: usize, want: usize) -> PResult<'a, ()> {
    tlv::expect_len(input, &NAMES, len, want)
}

fn decode_nx<'a>(
    input: &'a [u8],
    len: usize,
    data: &'a [u8],
) -> Option<Result<Action, nom::Err<wire::WireError>>> {
    let (b, subtype) = wire::u16_(data, "nx subtype").ok()?;
    match subtype {
        NXAST_CONTROLLER => Some((|| {
            need(input, len, 16)?;
            let (b, max_len) = wire::u16_(b, "controller max_len")?;
            let (b, controller_id) = wire::u16_(b, "controller id")?;
            let (_, reason) = wire::u8_(b, "controller reason")?;
            Ok(Action::NxController(NxController {
                max_len,
                controller_id,
                reason,
            }))
        })()),
        NXAST_CONTROLLER2 => Some((|| {
            if len < 16 {
                return wire::bad_length(input, "controller2 action", len, "shorter than 16")
                    .map(|(_, a)| a);
            }
            let props_bytes = b.get(6..).unwrap_or_default();
            let mut props = Vec::new();
            let mut p = props_bytes;
            while !p.is_empty() {
                let (r, prop) = Controller2Prop::decode_prop(p)?;
                props.push(prop);
                p = r;
            }
            Ok(Action::NxController2(NxController2 { props }))
        })()),
        _ => None,
    }
}

impl Wire for Action {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (rest, Tlv { ty, len, body }) = tlv::read_tlv8(input, &NAMES)?;
        let action = match ty {
            OFPAT_OUTPUT => {
                need(input, len, 16)?;
                let (b, port) = wire::u32_(body, "output port")?;
                let (_, max_len) = wire::u16_(b, "output max_len")?;
                Action::Output { port, max_len }
            }
            OFPAT_COPY_TTL_OUT | OFPAT_COPY_TTL_IN | OFPAT_DEC_MPLS_TTL | OFPAT_POP_VLAN
            | OFPAT_DEC_NW_TTL | OFPAT_POP_PBB => {
                need(input, len, 8)?;
                match ty {
                    OFPAT_COPY_TTL_OUT => Action::CopyTtlOut,
                    OFPAT_COPY_TTL_IN => Action::CopyTtlIn,
                    OFPAT_DEC_MPLS_TTL => Action::DecMplsTtl,
                    OFPAT_POP_VLAN => Action::PopVlan,
                    OFPAT_DEC_NW_TTL => Action::DecNwTtl,
                    _ => Action::PopPbb,
                }
            }
            OFPAT_SET_MPLS_TTL | OFPAT_SET_NW_TTL => {
                need(input, len, 8)?;
                let (_, ttl) = wire::u8_(body, "ttl")?;
                if ty == OFPAT_SET_MPLS_TTL {
                    Action::SetMplsTtl(ttl)
                } else {
                    Action::SetNwTtl(ttl)
                }
            }
            OFPAT_PUSH_VLAN | OFPAT_PUSH_MPLS | OFPAT_POP_MPLS | OFPAT_PUSH_PBB => {
                need(input, len, 8)?;
                let (_, et) = wire::u16_(body, "ethertype")?;
                match ty {
                    OFPAT_PUSH_VLAN => Action::PushVlan(et),
                    OFPAT_PUSH_MPLS => Action::PushMpls(et),
                    OFPAT_POP_MPLS => Action::PopMpls(et),
                    _ => Action::PushPbb(et),
                }
            }
            OFPAT_SET_QUEUE | OFPAT_GROUP => {
                need(input, len, 8)?;
                let (_, v) = wire::u32_(body, "id")?;
                if ty == OFPAT_SET_QUEUE {
                    Action::SetQueue(v)
                } else {
                    Action::Group(v)
                }
            }
            OFPAT_SET_FIELD => {
                let (after, field) = OxmField::decode(body)?;
                if after.len() >= 8 {
                    return wire::bad_length(
                        input,
                        "set_field action",
                        len,
                        "longer than its field padded to 8",
                    );
                }
                Action::SetField(field)
            }
            OFPAT_EXPERIMENTER => {
                let (data, experimenter) = wire::u32_(body, "experimenter id")?;
                let typed = if experimenter == NX_VENDOR_ID {
                    decode_nx(input, len, data)
                } else {
                    None
                };
                match typed {
                    Some(r) => r?,
                    None => Action::Experimenter {
                        experimenter,
                        data: data.to_vec(),
                    },
                }
            }
            other => Action::Unknown {
                action_type: other,
                body: body.to_vec(),
            },
        };
        Ok((rest, action))
    }

    fn encode(&self, out: &mut BytesMut) {
        tlv::write_tlv8(out, self.action_type(), |out| match self {
            Self::Output { port, max_len } => {
                out.put_u32(*port);
                out.put_u16(*max_len);
                wire::put_zeros(out, 6);
            }
            Self::CopyTtlOut
            | Self::CopyTtlIn
            | Self::DecMplsTtl
            | Self::PopVlan
            | Self::DecNwTtl
            | Self::PopPbb => wire::put_zeros(out, 4),
            Self::SetMplsTtl(t) | Self::SetNwTtl(t) => {
                out.put_u8(*t);
                wire::put_zeros(out, 3);
            }
            Self::PushVlan(e) | Self::PushMpls(e) | Self::PopMpls(e) | Self::PushPbb(e) => {
                out.put_u16(*e);
                wire::put_zeros(out, 2);
            }
            Self::SetQueue(v) | Self::Group(v) => out.put_u32(*v),
            Self::SetField(f) => f.encode(out),
            Self::NxController(c) => {
                out.put_u32(NX_VENDOR_ID);
                out.put_u16(NXAST_CONTROLLER);
                out.put_u16(c.max_len);
                out.put_u16(c.controller_id);
                out.put_u8(c.reason);
                out.put_u8(0);
            }
            Self::NxController2(c) => {
                out.put_u32(NX_VENDOR_ID);
                out.put_u16(NXAST_CONTROLLER2);
                wire::put_zeros(out, 6);
                for p in &c.props {
                    p.encode_prop(out);
                }
            }
            Self::Experimenter { experimenter, data } => {
                out.put_u32(*experimenter);
                out.put_slice(data);
            }
            Self::Unknown { body, .. } => out.put_slice(body),
        });
    }
}

/// Decodes a list of actions that exactly fills `input`.
pub fn decode_actions(input: &[u8]) -> PResult<'_, Vec<Action>> {
    wire::many_exact::<Action>(input)
}

/// Encodes a list of actions.
pub fn encode_actions(actions: &[Action], out: &mut BytesMut) {
    for a in actions {
        a.encode(out);
    }
}

/// Encoded length of a list of actions.
pub fn actions_len(actions: &[Action]) -> usize {
    let mut b = BytesMut::new();
    encode_actions(actions, &mut b);
    b.len()
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Output { port, max_len } => {
                if *port == OFPP_CONTROLLER {
                    write!(f, "CONTROLLER:{max_len}")
                } else if super::port::reserved_port_name(*port).is_some() {
                    write!(f, "{}", PortNo(*port))
                } else {
                    write!(f, "output:{port}")
                }
            }
            Self::CopyTtlOut => f.write_str("copy_ttl_out"),
            Self::CopyTtlIn => f.write_str("copy_ttl_in"),
            Self::SetMplsTtl(t) => write!(f, "set_mpls_ttl({t})"),
            Self::DecMplsTtl => f.write_str("dec_mpls_ttl"),
            Self::PushVlan(e) => write!(f, "push_vlan:{e:#06x}"),
            Self::PopVlan => f.write_str("pop_vlan"),
            Self::PushMpls(e) => write!(f, "push_mpls:{e:#06x}"),
            Self::PopMpls(e) => write!(f, "pop_mpls:{e:#06x}"),
            Self::SetQueue(q) => write!(f, "set_queue:{q}"),
            Self::Group(g) => write!(f, "group:{g}"),
            Self::SetNwTtl(t) => write!(f, "mod_nw_ttl:{t}"),
            Self::DecNwTtl => f.write_str("dec_ttl"),
            Self::SetField(field) => match field {
                OxmField::Other(r) => write!(f, "set_field:{r}"),
                _ => write!(f, "set_field:{}->{}", field.value_string(), field.name()),
            },
            Self::PushPbb(e) => write!(f, "push_pbb:{e:#06x}"),
            Self::PopPbb => f.write_str("pop_pbb"),
            Self::NxController(c) => {
                write!(f, "controller(id={},max_len={}", c.controller_id, c.max_len)?;
                if c.reason != OFPR_ACTION {
                    f.write_str(",reason=")?;
                    fmt_reason(f, c.reason)?;
                }
                f.write_str(")")
            }
            Self::NxController2(c) => {
                f.write_str("controller(")?;
                for (n, p) in c.props.iter().enumerate() {
                    if n > 0 {
                        f.write_str(",")?;
                    }
                    match p {
                        Controller2Prop::MaxLen(v) => write!(f, "max_len={v}")?,
                        Controller2Prop::ControllerId(v) => write!(f, "id={v}")?,
                        Controller2Prop::Reason(r) => {
                            f.write_str("reason=")?;
                            fmt_reason(f, *r)?;
                        }
                        Controller2Prop::Userdata(d) => {
                            f.write_str("userdata=")?;
                            fmt_hex(f, d, ".")?;
                        }
                        Controller2Prop::Pause => f.write_str("pause")?,
                        Controller2Prop::MeterId(m) => write!(f, "meter_id={m}")?,
                        Controller2Prop::Other { prop_type, value } => {
                            write!(f, "prop{prop_type}=0x")?;
                            fmt_hex(f, value, "")?;
                        }
                    }
                }
                f.write_str(")")
            }
            Self::Experimenter { experimenter, data } => {
                write!(f, "experimenter({experimenter:#010x},data=0x")?;
                fmt_hex(f, data, "")?;
                f.write_str(")")
            }
            Self::Unknown { action_type, body } => {
                write!(f, "unknown_action(type={action_type},body=0x")?;
                fmt_hex(f, body, "")?;
                f.write_str(")")
            }
        }
    }
}

/// Displays a list of actions comma-separated, `drop` when empty (as `ovs-ofctl` does).
#[derive(Debug, Clone, Copy)]
pub struct ActionList<'a>(pub &'a [Action]);

impl fmt::Display for ActionList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("drop");
        }
        for (n, a) in self.0.iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            write!(f, "{a}")?;
        }
        Ok(())
    }
}

// ---- tests --------------------------------------------------------------------------------

#[cfg(test)]
pub(crate) mod arb {
    use super::*;
    use crate::openflow::oxm::arb::any_oxm_field;
    use crate::openflow::port::arb::any_port_no;
    use proptest::collection::vec;
    use proptest::prelude::*;

    fn bytes_8n_plus(extra: usize) -> impl Strategy<Value = Vec<u8>> {
        (0usize..3).prop_flat_map(move |n| vec(any::<u8>(), 8 * n + extra))
    }

    pub fn any_controller2_prop() -> impl Strategy<Value = Controller2Prop> {
        prop_oneof![
            any::<u16>().prop_map(Controller2Prop::MaxLen),
            any::<u16>().prop_map(Controller2Prop::ControllerId),
            any::<u8>().prop_map(Controller2Prop::Reason),
            vec(any::<u8>(), 0..12).prop_map(Controller2Prop::Userdata),
            Just(Controller2Prop::Pause),
            any::<u32>().prop_map(Controller2Prop::MeterId),
            (6u16..=0xffff, vec(any::<u8>(), 0..12))
                .prop_map(|(prop_type, value)| Controller2Prop::Other { prop_type, value }),
        ]
    }

    pub fn any_action() -> impl Strategy<Value = Action> {
        prop_oneof![
            (any_port_no(), any::<u16>())
                .prop_map(|(port, max_len)| Action::Output { port, max_len }),
            Just(Action::CopyTtlOut),
            Just(Action::CopyTtlIn),
            any::<u8>().prop_map(Action::SetMplsTtl),
            Just(Action::DecMplsTtl),
            any::<u16>().prop_map(Action::PushVlan),
            Just(Action::PopVlan),
            any::<u16>().prop_map(Action::PushMpls),
            any::<u16>().prop_map(Action::PopMpls),
            any::<u32>().prop_map(Action::SetQueue),
            any::<u32>().prop_map(Action::Group),
            any::<u8>().prop_map(Action::SetNwTtl),
            Just(Action::DecNwTtl),
            any_oxm_field().prop_map(Action::SetField),
            any::<u16>().prop_map(Action::PushPbb),
            Just(Action::PopPbb),
            any::<(u16, u16, u8)>().prop_map(|(max_len, controller_id, reason)| {
                Action::NxController(NxController {
                    max_len,
                    controller_id,
                    reason,
                })
            }),
            vec(any_controller2_prop(), 0..5)
                .prop_map(|props| Action::NxController2(NxController2 { props })),
            (
                any::<u32>().prop_filter("not nicira", |e| *e != NX_VENDOR_ID),
                bytes_8n_plus(0)
            )
                .prop_map(|(experimenter, data)| Action::Experimenter { experimenter, data }),
            (
                prop_oneof![1u16..=10, 13u16..=14, 28u16..0xffff],
                bytes_8n_plus(4)
            )
                .prop_map(|(action_type, body)| Action::Unknown { action_type, body }),
        ]
    }

    pub fn any_actions() -> impl Strategy<Value = Vec<Action>> {
        vec(any_action(), 0..5)
    }
}

#[cfg(test)]
mod tests {
    use super::arb::*;
    use super::*;
    use crate::openflow::oxm::test_util::*;
    use crate::openflow::port::{OFPP_FLOOD, OFPP_LOCAL};
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    fn one(h: &str) -> (Vec<u8>, Action) {
        let b = hex_bytes(h);
        let a = Action::from_bytes(&b).unwrap_or_else(|e| panic!("{e}: {h}"));
        assert_eq!(&a.to_bytes()[..], &b[..], "re-encode of {h}");
        (b, a)
    }

    /// OVS tests/ofp-actions.at ("OpenFlow 1.0 action translation"), Nicira actions, which
    /// are the same in every OpenFlow version.
    #[test]
    fn nx_controller_golden_ovs() {
        // actions=controller(reason=invalid_ttl,max_len=1234,id=5678)
        let (_, a) = one("ffff 0010 00002320 0014 04d2 162e 02 00");
        assert_eq!(
            a,
            Action::NxController(NxController {
                max_len: 1234,
                controller_id: 5678,
                reason: 2
            })
        );
        assert_eq!(
            a.to_string(),
            "controller(id=5678,max_len=1234,reason=invalid_ttl)"
        );
        // actions=controller(reason=invalid_ttl,max_len=1234,id=5678,userdata=01.02.03.04.05,pause)
        let (_, a) = one("ffff 0040 00002320 0025 000000000000 \
             0000 0008 04d2 0000 \
             0001 0008 162e 0000 \
             0002 0005 02 000000 \
             0003 0009 0102030405 00000000000000 \
             0004 0004 00000000");
        let Action::NxController2(c) = &a else {
            panic!("{a:?}")
        };
        assert_eq!(c.max_len(), Some(1234));
        assert_eq!(c.controller_id(), Some(5678));
        assert_eq!(c.reason(), Some(2));
        assert_eq!(c.userdata(), Some(&[1u8, 2, 3, 4, 5][..]));
        assert!(c.pause());
        assert_eq!(c.meter_id(), None);
        assert_eq!(
            a.to_string(),
            "controller(max_len=1234,id=5678,reason=invalid_ttl,userdata=01.02.03.04.05,pause)"
        );
        let built = Action::nx_controller2(
            NxController2::new(5678, 1234)
                .with_reason(2)
                .with_userdata(vec![1, 2, 3, 4, 5])
                .with_pause(),
        );
        assert_eq!(built, a);
        // actions=group:5 (NXAST_GROUP, subtype 40): another Nicira action, kept opaque
        let (_, a) = one("ffff 0010 00002320 0028 0000 00000005");
        assert!(matches!(
            a,
            Action::Experimenter {
                experimenter: NX_VENDOR_ID,
                ..
            }
        ));
    }

    /// OVS tests/ofp-actions.at ("OpenFlow 1.1 action translation"), whose OpenFlow 1.1
    /// encodings of these actions are those of OpenFlow 1.3.
    #[test]
    fn standard_golden_ovs() {
        let (_, a) = one("0000 0010 fffffffe 04d2 000000000000");
        assert_eq!(
            a,
            Action::Output {
                port: OFPP_LOCAL,
                max_len: 1234
            }
        );
        assert_eq!(a.to_string(), "LOCAL");
        let (_, a) = one("0000 0010 fffffffd 04d2 000000000000");
        assert_eq!(a, Action::to_controller(1234));
        assert_eq!(a.to_string(), "CONTROLLER:1234");
        let (_, a) = one("0012 0008 00000000");
        assert_eq!(a, Action::PopVlan);
        let (_, a) = one("0015 0008 89abcd01");
        assert_eq!(a, Action::SetQueue(2309737729));
        let (_, a) = one("0011 0008 8100 0000");
        assert_eq!(a, Action::PushVlan(0x8100));
        // OF1.1 "mod_vlan_vid" (type 1) does not exist in 1.3: kept opaque, byte-exact.
        let (_, a) = one("0001 0008 0009 0000");
        assert!(matches!(a, Action::Unknown { action_type: 1, .. }));
    }

    /// OVS tests/ofp-print.at "OFPT_FLOW_MOD - OF1.2 - set-field ip_src", the action list
    /// (apply_actions instruction body), and "OFPT_PACKET_OUT - OF1.1" (output:FLOOD).
    #[test]
    fn set_field_and_flood_golden_ovs() {
        let (_, a) = one("00 19 00 10 80 00 16 04 c0 a8 03 5c 00 00 00 00");
        assert_eq!(
            a,
            Action::SetField(OxmField::Ipv4Src {
                value: Ipv4Addr::new(192, 168, 3, 92),
                mask: None
            })
        );
        assert_eq!(a.to_string(), "set_field:192.168.3.92->ipv4_src");
        let (_, a) = one("00 00 00 10 ff ff ff fb 05 dc 00 00 00 00 00 00");
        assert_eq!(
            a,
            Action::Output {
                port: OFPP_FLOOD,
                max_len: 1500
            }
        );
        assert_eq!(a.to_string(), "FLOOD");
    }

    #[test]
    fn constructors_and_display() {
        assert_eq!(Action::output(3).to_string(), "output:3");
        assert_eq!(Action::group(1003).to_string(), "group:1003");
        assert_eq!(
            Action::nx_controller(7, 128).to_string(),
            "controller(id=7,max_len=128)"
        );
        assert_eq!(
            Action::set_vlan_vid(10).to_string(),
            "set_field:4106->vlan_vid"
        );
        assert_eq!(ActionList(&[]).to_string(), "drop");
        assert_eq!(
            &Action::nx_controller(7, 128).to_bytes()[..],
            &hex_bytes("ffff 0010 00002320 0014 0080 0007 01 00")[..]
        );
    }

    #[test]
    fn rejects_bad_lengths() {
        // OVS: "OpenFlow action OFPAT_OUTPUT length 240 exceeds action buffer length 8"
        assert!(Action::from_bytes(&hex_bytes("00 00 00 f0 00 00 00 00")).is_err());
        // output of length 8
        assert!(Action::from_bytes(&hex_bytes("00 00 00 08 ff fe ff ff")).is_err());
        // length not a multiple of 8 (OVS NXAST_DEC_TTL_CNT_IDS length 17)
        let b = hex_bytes("ffff 0011 00002320 0015 0001 00000000 0000000000000000");
        assert!(Action::from_bytes(&b).is_err());
        // set_field with too much padding
        let b =
            hex_bytes("00 19 00 18 80 00 16 04 c0 a8 03 5c 00 00 00 00 00 00 00 00 00 00 00 00");
        assert!(Action::from_bytes(&b).is_err());
        // NXAST_CONTROLLER with the wrong length
        let b = hex_bytes("ffff 0018 00002320 0014 04d2 162e 02 00 0000000000000000");
        assert!(Action::from_bytes(&b).is_err());
        // error offsets in a list point at the faulty action
        let b = hex_bytes("0012 0008 00000000 0000 0008 ffffffff");
        let err = match decode_actions(&b) {
            Err(nom::Err::Failure(e)) => e.into_decode_error(&b),
            other => panic!("{other:?}"),
        };
        assert_eq!(err.offset, 8);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn action_roundtrip(v in any_action()) {
            check_roundtrip(&v);
            check_truncations(&v);
            let _ = v.to_string();
        }
        #[test]
        fn action_list_roundtrip(v in any_actions()) {
            let mut b = BytesMut::new();
            encode_actions(&v, &mut b);
            prop_assert_eq!(b.len(), actions_len(&v));
            let (_, d) = decode_actions(&b).unwrap();
            prop_assert_eq!(d, v);
        }
        #[test]
        fn action_random(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok((rest, a)) = Action::decode(&b) {
                // anything accepted re-encodes to the bytes it came from, padding aside
                let used = b.len() - rest.len();
                prop_assert_eq!(a.to_bytes().len(), used);
            }
            let _ = decode_actions(&b);
        }
        #[test]
        fn action_random_typed(ty in prop_oneof![0u16..30, Just(0xffff)],
                               body in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut b = ty.to_be_bytes().to_vec();
            let len = (body.len() + 4) as u16;
            b.extend_from_slice(&len.to_be_bytes());
            b.extend_from_slice(&body);
            let _ = Action::decode(&b);
            let mut nx = vec![0xff, 0xff, 0, 0, 0, 0, 0x23, 0x20, 0, 37, 0, 0, 0, 0, 0, 0];
            nx.extend_from_slice(&body);
            let l = nx.len() as u16;
            nx[2..4].copy_from_slice(&l.to_be_bytes());
            let _ = Action::decode(&nx);
        }
    }
}
