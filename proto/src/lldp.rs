//! IEEE 802.1AB LLDP: the LLDPDU codec, and the topology-verification probe fabricflow sends.
//!
//! An LLDPDU is a sequence of TLVs (7-bit type, 9-bit length): Chassis ID, Port ID and TTL first
//! and in that order, then optional TLVs in any order, then (optionally, since 802.1AB-2009) the
//! End TLV. [`Lldpdu`] keeps the optional TLVs in their wire order, unknown and reserved TLV
//! types and ID subtypes opaque, and whether an End TLV was present, so `encode(decode(b)) == b`
//! for every accepted `b`.
//!
//! Validation (each error names the TLV, at the TLV's or the field's offset):
//! - the first three TLVs must be Chassis ID, Port ID, TTL; none of the three may occur again;
//! - Chassis/Port ID: 1..=255 octets of id after the subtype; the MAC subtype needs exactly 6;
//! - TTL: exactly 2 octets; System Capabilities: exactly 4; End: exactly 0;
//! - Port/System Description, System Name: at most 255 octets;
//! - Management Address: 9..=167 octets, address string 2..=32, OID at most 128, and the parts
//!   must add up to the TLV length; Organizationally Specific: at least 4 (OUI + subtype).
//!
//! Encoding never fails: values longer than their field's maximum are truncated to it
//! (documented exception to the round trip; every value within the limits round-trips).

use std::fmt;

use bytes::{BufMut, BytesMut};
use serde::{Serialize, Serializer};

use crate::error::{DecodeError, ErrorKind};
use crate::ethernet::{ethertype, pad_frame, EthernetView, FrameInfo};
use crate::mac::MacAddr;
use crate::wire::{self, PResult, Wire};

/// TLV type codes.
pub mod tlv_type {
    pub const END: u8 = 0;
    pub const CHASSIS_ID: u8 = 1;
    pub const PORT_ID: u8 = 2;
    pub const TTL: u8 = 3;
    pub const PORT_DESCRIPTION: u8 = 4;
    pub const SYSTEM_NAME: u8 = 5;
    pub const SYSTEM_DESCRIPTION: u8 = 6;
    pub const SYSTEM_CAPABILITIES: u8 = 7;
    pub const MANAGEMENT_ADDRESS: u8 = 8;
    pub const ORG_SPECIFIC: u8 = 127;
}

/// Maximum TLV value length the 9-bit length field can express.
pub const MAX_TLV_LEN: usize = 511;
/// Maximum id length (after the subtype) of Chassis ID and Port ID.
pub const MAX_ID_LEN: usize = 255;
/// Maximum length of the description and name strings.
pub const MAX_STRING_LEN: usize = 255;

/// Opaque octets that are usually text: serialised as a string when they are UTF-8, otherwise as
/// `"hex:…"`.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Octets(pub Vec<u8>);

impl Octets {
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }
}

impl From<&str> for Octets {
    fn from(s: &str) -> Self {
        Octets(s.as_bytes().to_vec())
    }
}

impl fmt::Debug for Octets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_str() {
            Some(s) => write!(f, "{s:?}"),
            None => write!(f, "hex:{}", hex::encode(&self.0)),
        }
    }
}

impl Serialize for Octets {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.as_str() {
            Some(t) => s.serialize_str(t),
            None => s.collect_str(&format_args!("hex:{}", hex::encode(&self.0))),
        }
    }
}

/// Chassis ID TLV (type 1), by subtype.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ChassisId {
    /// Subtype 1 (entPhysicalAlias of a chassis).
    ChassisComponent(Octets),
    /// Subtype 2 (ifAlias).
    InterfaceAlias(Octets),
    /// Subtype 3 (entPhysicalAlias of a port or backplane).
    PortComponent(Octets),
    /// Subtype 4.
    MacAddress(MacAddr),
    /// Subtype 5: IANA address family, then the address.
    NetworkAddress { family: u8, address: Vec<u8> },
    /// Subtype 6 (ifName).
    InterfaceName(Octets),
    /// Subtype 7.
    LocallyAssigned(Octets),
    /// Reserved subtypes (0, 8..=255), kept opaque.
    Other { subtype: u8, id: Vec<u8> },
}

/// Port ID TLV (type 2), by subtype.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum PortId {
    /// Subtype 1 (ifAlias).
    InterfaceAlias(Octets),
    /// Subtype 2 (entPhysicalAlias of a port).
    PortComponent(Octets),
    /// Subtype 3.
    MacAddress(MacAddr),
    /// Subtype 4: IANA address family, then the address.
    NetworkAddress { family: u8, address: Vec<u8> },
    /// Subtype 5 (ifName).
    InterfaceName(Octets),
    /// Subtype 6 (agent circuit id, RFC 3046).
    AgentCircuitId(Octets),
    /// Subtype 7.
    LocallyAssigned(Octets),
    /// Reserved subtypes (0, 8..=255), kept opaque.
    Other { subtype: u8, id: Vec<u8> },
}

impl ChassisId {
    /// (subtype, id octets); a network address's id is the family octet then the address.
    fn raw(&self) -> (u8, Vec<u8>) {
        match self {
            Self::ChassisComponent(o) => (1, o.0.clone()),
            Self::InterfaceAlias(o) => (2, o.0.clone()),
            Self::PortComponent(o) => (3, o.0.clone()),
            Self::MacAddress(m) => (4, m.0.to_vec()),
            Self::NetworkAddress { family, address } => (5, join_family(*family, address)),
            Self::InterfaceName(o) => (6, o.0.clone()),
            Self::LocallyAssigned(o) => (7, o.0.clone()),
            Self::Other { subtype, id } => (*subtype, id.clone()),
        }
    }

    fn from_raw(subtype: u8, id: &[u8]) -> Self {
        let o = || Octets(id.to_vec());
        match subtype {
            1 => Self::ChassisComponent(o()),
            2 => Self::InterfaceAlias(o()),
            3 => Self::PortComponent(o()),
            4 => Self::MacAddress(mac_of(id)),
            5 => {
                let (family, address) = split_family(id);
                Self::NetworkAddress { family, address }
            }
            6 => Self::InterfaceName(o()),
            7 => Self::LocallyAssigned(o()),
            s => Self::Other {
                subtype: s,
                id: id.to_vec(),
            },
        }
    }
}

impl PortId {
    /// (subtype, id octets); a network address's id is the family octet then the address.
    fn raw(&self) -> (u8, Vec<u8>) {
        match self {
            Self::InterfaceAlias(o) => (1, o.0.clone()),
            Self::PortComponent(o) => (2, o.0.clone()),
            Self::MacAddress(m) => (3, m.0.to_vec()),
            Self::NetworkAddress { family, address } => (4, join_family(*family, address)),
            Self::InterfaceName(o) => (5, o.0.clone()),
            Self::AgentCircuitId(o) => (6, o.0.clone()),
            Self::LocallyAssigned(o) => (7, o.0.clone()),
            Self::Other { subtype, id } => (*subtype, id.clone()),
        }
    }

    fn from_raw(subtype: u8, id: &[u8]) -> Self {
        let o = || Octets(id.to_vec());
        match subtype {
            1 => Self::InterfaceAlias(o()),
            2 => Self::PortComponent(o()),
            3 => Self::MacAddress(mac_of(id)),
            4 => {
                let (family, address) = split_family(id);
                Self::NetworkAddress { family, address }
            }
            5 => Self::InterfaceName(o()),
            6 => Self::AgentCircuitId(o()),
            7 => Self::LocallyAssigned(o()),
            s => Self::Other {
                subtype: s,
                id: id.to_vec(),
            },
        }
    }
}

fn join_family(family: u8, address: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(1 + address.len());
    v.push(family);
    v.extend_from_slice(address);
    v
}

fn mac_of(id: &[u8]) -> MacAddr {
    let mut m = [0u8; 6];
    if let Some(src) = id.get(..6) {
        m.copy_from_slice(src);
    }
    MacAddr(m)
}

fn split_family(id: &[u8]) -> (u8, Vec<u8>) {
    match id.split_first() {
        Some((f, rest)) => (*f, rest.to_vec()),
        None => (0, Vec::new()),
    }
}

/// System Capabilities bits (802.1AB Table 8-4).
pub mod capability {
    pub const OTHER: u16 = 1 << 0;
    pub const REPEATER: u16 = 1 << 1;
    pub const MAC_BRIDGE: u16 = 1 << 2;
    pub const WLAN_ACCESS_POINT: u16 = 1 << 3;
    pub const ROUTER: u16 = 1 << 4;
    pub const TELEPHONE: u16 = 1 << 5;
    pub const DOCSIS: u16 = 1 << 6;
    pub const STATION_ONLY: u16 = 1 << 7;
    pub const C_VLAN_COMPONENT: u16 = 1 << 8;
    pub const S_VLAN_COMPONENT: u16 = 1 << 9;
    pub const TWO_PORT_MAC_RELAY: u16 = 1 << 10;
}

/// Management Address TLV (type 8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ManagementAddress {
    /// IANA address family (1 IPv4, 2 IPv6, 6 802 MAC).
    pub family: u8,
    /// 1..=31 octets.
    pub address: Vec<u8>,
    /// 1 unknown, 2 ifIndex, 3 system port number.
    pub interface_subtype: u8,
    pub interface_number: u32,
    /// Object identifier, 0..=128 octets (BER-encoded OID).
    pub oid: Vec<u8>,
}

/// One TLV after the mandatory three.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum LldpTlv {
    PortDescription(Octets),
    SystemName(Octets),
    SystemDescription(Octets),
    SystemCapabilities {
        capabilities: u16,
        enabled: u16,
    },
    ManagementAddress(ManagementAddress),
    OrgSpecific {
        oui: [u8; 3],
        subtype: u8,
        data: Vec<u8>,
    },
    /// Reserved TLV types 9..=126, kept opaque.
    Unknown {
        tlv_type: u8,
        value: Vec<u8>,
    },
}

/// An LLDPDU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lldpdu {
    pub chassis_id: ChassisId,
    pub port_id: PortId,
    /// Time to live, seconds (0 = withdraw).
    pub ttl: u16,
    /// Optional TLVs, in wire order.
    pub tlvs: Vec<LldpTlv>,
    /// Whether the LLDPDU ends with an End TLV (always written by fabricflow's builders).
    pub end: bool,
}

impl Lldpdu {
    pub fn system_name(&self) -> Option<&Octets> {
        self.tlvs.iter().find_map(|t| match t {
            LldpTlv::SystemName(s) => Some(s),
            _ => None,
        })
    }
    pub fn port_description(&self) -> Option<&Octets> {
        self.tlvs.iter().find_map(|t| match t {
            LldpTlv::PortDescription(s) => Some(s),
            _ => None,
        })
    }
    pub fn system_description(&self) -> Option<&Octets> {
        self.tlvs.iter().find_map(|t| match t {
            LldpTlv::SystemDescription(s) => Some(s),
            _ => None,
        })
    }
    /// (capabilities, enabled).
    pub fn system_capabilities(&self) -> Option<(u16, u16)> {
        self.tlvs.iter().find_map(|t| match t {
            LldpTlv::SystemCapabilities {
                capabilities,
                enabled,
            } => Some((*capabilities, *enabled)),
            _ => None,
        })
    }
    pub fn management_addresses(&self) -> impl Iterator<Item = &ManagementAddress> {
        self.tlvs.iter().filter_map(|t| match t {
            LldpTlv::ManagementAddress(m) => Some(m),
            _ => None,
        })
    }

    /// Parses the LLDPDU of an Ethernet frame (EtherType 0x88cc, tagged or not); padding after
    /// the End TLV is ignored. Offsets in errors are from the start of the frame.
    pub fn parse_frame(frame: &[u8]) -> Result<(FrameInfo, Lldpdu), DecodeError> {
        let view = EthernetView::new_checked(frame)?;
        if view.ethertype() != ethertype::LLDP {
            return Err(DecodeError::new(
                view.payload_offset().saturating_sub(2),
                ErrorKind::InvalidValue {
                    what: "EtherType (expected LLDP 0x88cc)",
                    value: u64::from(view.ethertype()),
                },
            ));
        }
        match Lldpdu::decode(view.payload()) {
            Ok((_padding, pdu)) => Ok((view.info(), pdu)),
            Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(e.into_decode_error(frame)),
            Err(nom::Err::Incomplete(_)) => Err(DecodeError::new(
                frame.len(),
                ErrorKind::Truncated {
                    what: "LLDPDU",
                    needed: 1,
                },
            )),
        }
    }

    /// The Ethernet frame carrying this LLDPDU to the nearest-bridge group address, padded.
    pub fn to_frame(&self, src: MacAddr) -> BytesMut {
        let mut out = BytesMut::with_capacity(64);
        out.put_slice(&MacAddr::LLDP_NEAREST_BRIDGE.0);
        out.put_slice(&src.0);
        out.put_u16(ethertype::LLDP);
        self.encode(&mut out);
        pad_frame(&mut out, 0);
        out
    }
}

// ---- decoding ------------------------------------------------------------------------------

fn tlv_name(t: u8) -> &'static str {
    match t {
        tlv_type::END => "LLDP End TLV",
        tlv_type::CHASSIS_ID => "LLDP Chassis ID TLV",
        tlv_type::PORT_ID => "LLDP Port ID TLV",
        tlv_type::TTL => "LLDP TTL TLV",
        tlv_type::PORT_DESCRIPTION => "LLDP Port Description TLV",
        tlv_type::SYSTEM_NAME => "LLDP System Name TLV",
        tlv_type::SYSTEM_DESCRIPTION => "LLDP System Description TLV",
        tlv_type::SYSTEM_CAPABILITIES => "LLDP System Capabilities TLV",
        tlv_type::MANAGEMENT_ADDRESS => "LLDP Management Address TLV",
        tlv_type::ORG_SPECIFIC => "LLDP Organizationally Specific TLV",
        _ => "LLDP reserved TLV",
    }
}

/// One raw TLV: (type, value, the input at the TLV's header for error positions).
struct RawTlv<'a> {
    tlv_type: u8,
    value: &'a [u8],
    at: &'a [u8],
}

fn raw_tlv(input: &[u8]) -> PResult<'_, RawTlv<'_>> {
    let (r, h) = wire::u16_(input, "LLDP TLV header")?;
    let tlv_type = (h >> 9) as u8;
    let len = usize::from(h & 0x1ff);
    let (r, value) = match wire::take(r, len, tlv_name(tlv_type)) {
        Ok(x) => x,
        Err(_) => return wire::truncated(input, tlv_name(tlv_type), 2 + len - input.len()),
    };
    Ok((
        r,
        RawTlv {
            tlv_type,
            value,
            at: input,
        },
    ))
}

fn check_len<'a>(
    t: &RawTlv<'a>,
    ok: impl Fn(usize) -> bool,
    reason: &'static str,
) -> PResult<'a, ()> {
    if ok(t.value.len()) {
        Ok((t.value, ()))
    } else {
        wire::bad_length(t.at, tlv_name(t.tlv_type), t.value.len(), reason)
    }
}

/// Splits an id TLV's value into (subtype, id), validating the lengths.
fn id_value<'a>(t: &RawTlv<'a>, mac_subtype: u8) -> PResult<'a, (u8, &'a [u8])> {
    check_len(
        t,
        |l| (2..=MAX_ID_LEN + 1).contains(&l),
        "id must be 1..=255 octets after the subtype",
    )?;
    let (id, subtype) = wire::u8_(t.value, tlv_name(t.tlv_type))?;
    if subtype == mac_subtype && id.len() != 6 {
        return wire::bad_length(
            t.at,
            tlv_name(t.tlv_type),
            t.value.len(),
            "MAC address subtype needs 6 octets",
        );
    }
    Ok((&[], (subtype, id)))
}

fn expect_type<'a>(input: &'a [u8], want: u8, what: &'static str) -> PResult<'a, RawTlv<'a>> {
    let (rest, t) = raw_tlv(input)?;
    if t.tlv_type != want {
        return wire::invalid(input, what, u64::from(t.tlv_type));
    }
    Ok((rest, t))
}

fn management_address<'a>(t: &RawTlv<'a>) -> PResult<'a, ManagementAddress> {
    check_len(t, |l| (9..=167).contains(&l), "must be 9..=167 octets")?;
    let what = tlv_name(t.tlv_type);
    let (r, str_len) = wire::u8_(t.value, "LLDP management address string length")?;
    if !(2..=32).contains(&str_len) {
        return wire::bad_length(
            t.value,
            "LLDP management address string length",
            usize::from(str_len),
            "must be 2..=32",
        );
    }
    let (r, family) = wire::u8_(r, "LLDP management address subtype")?;
    let (r, address) = wire::take(r, usize::from(str_len) - 1, "LLDP management address")?;
    let (r, interface_subtype) = wire::u8_(r, "LLDP management interface numbering subtype")?;
    let (r, interface_number) = wire::u32_(r, "LLDP management interface number")?;
    let (r2, oid_len) = wire::u8_(r, "LLDP management OID length")?;
    if oid_len > 128 {
        return wire::bad_length(
            r,
            "LLDP management OID length",
            usize::from(oid_len),
            "must be at most 128",
        );
    }
    let (r, oid) = wire::take(r2, usize::from(oid_len), "LLDP management OID")?;
    if !r.is_empty() {
        return wire::bad_length(t.at, what, t.value.len(), "longer than its parts");
    }
    Ok((
        r,
        ManagementAddress {
            family,
            address: address.to_vec(),
            interface_subtype,
            interface_number,
            oid: oid.to_vec(),
        },
    ))
}

fn string_tlv<'a>(t: &RawTlv<'a>) -> PResult<'a, Octets> {
    check_len(t, |l| l <= MAX_STRING_LEN, "longer than 255 octets")?;
    Ok((&[], Octets(t.value.to_vec())))
}

fn optional_tlv<'a>(t: &RawTlv<'a>) -> PResult<'a, LldpTlv> {
    let tlv = match t.tlv_type {
        tlv_type::CHASSIS_ID | tlv_type::PORT_ID | tlv_type::TTL => {
            return wire::invalid(
                t.at,
                "LLDP TLV type (Chassis ID, Port ID and TTL occur once, first)",
                u64::from(t.tlv_type),
            )
        }
        tlv_type::PORT_DESCRIPTION => LldpTlv::PortDescription(string_tlv(t)?.1),
        tlv_type::SYSTEM_NAME => LldpTlv::SystemName(string_tlv(t)?.1),
        tlv_type::SYSTEM_DESCRIPTION => LldpTlv::SystemDescription(string_tlv(t)?.1),
        tlv_type::SYSTEM_CAPABILITIES => {
            check_len(t, |l| l == 4, "must be 4 octets")?;
            let (r, capabilities) = wire::u16_(t.value, "LLDP system capabilities")?;
            let (_, enabled) = wire::u16_(r, "LLDP enabled capabilities")?;
            LldpTlv::SystemCapabilities {
                capabilities,
                enabled,
            }
        }
        tlv_type::MANAGEMENT_ADDRESS => LldpTlv::ManagementAddress(management_address(t)?.1),
        tlv_type::ORG_SPECIFIC => {
            check_len(t, |l| l >= 4, "needs OUI and subtype (4 octets)")?;
            let (r, oui) = wire::array::<3>(t.value, "LLDP OUI")?;
            let (data, subtype) = wire::u8_(r, "LLDP organizationally defined subtype")?;
            LldpTlv::OrgSpecific {
                oui,
                subtype,
                data: data.to_vec(),
            }
        }
        other => LldpTlv::Unknown {
            tlv_type: other,
            value: t.value.to_vec(),
        },
    };
    Ok((&[], tlv))
}

impl Wire for Lldpdu {
    /// Reads TLVs up to and including the End TLV, or to the end of `input` if there is none;
    /// whatever follows the End TLV (frame padding) is returned unconsumed. A single zero
    /// octet where a TLV header would start is taken as padding, not as a truncated TLV.
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (r, t) = expect_type(
            input,
            tlv_type::CHASSIS_ID,
            "LLDP first TLV type (expected Chassis ID, 1)",
        )?;
        let (_, (sub, id)) = id_value(&t, 4)?;
        let chassis_id = ChassisId::from_raw(sub, id);

        let (r, t) = expect_type(
            r,
            tlv_type::PORT_ID,
            "LLDP second TLV type (expected Port ID, 2)",
        )?;
        let (_, (sub, id)) = id_value(&t, 3)?;
        let port_id = PortId::from_raw(sub, id);

        let (mut r, t) = expect_type(r, tlv_type::TTL, "LLDP third TLV type (expected TTL, 3)")?;
        check_len(&t, |l| l == 2, "must be 2 octets")?;
        let (_, ttl) = wire::u16_(t.value, "LLDP TTL")?;

        let mut tlvs = Vec::new();
        let mut end = false;
        while !r.is_empty() {
            if r == [0] {
                // One octet of frame padding after an LLDPDU without End TLV (two or more read
                // as an End TLV): left unconsumed, like the padding after an End TLV.
                break;
            }
            let (rest, t) = raw_tlv(r)?;
            if t.tlv_type == tlv_type::END {
                check_len(&t, |l| l == 0, "must be 0 octets")?;
                end = true;
                r = rest;
                break;
            }
            tlvs.push(optional_tlv(&t)?.1);
            r = rest;
        }
        Ok((
            r,
            Lldpdu {
                chassis_id,
                port_id,
                ttl,
                tlvs,
                end,
            },
        ))
    }

    fn encode(&self, out: &mut BytesMut) {
        put_id(out, tlv_type::CHASSIS_ID, self.chassis_id.raw());
        put_id(out, tlv_type::PORT_ID, self.port_id.raw());
        put_tlv(out, tlv_type::TTL, &self.ttl.to_be_bytes());
        for t in &self.tlvs {
            match t {
                LldpTlv::PortDescription(s) => put_string(out, tlv_type::PORT_DESCRIPTION, s),
                LldpTlv::SystemName(s) => put_string(out, tlv_type::SYSTEM_NAME, s),
                LldpTlv::SystemDescription(s) => put_string(out, tlv_type::SYSTEM_DESCRIPTION, s),
                LldpTlv::SystemCapabilities {
                    capabilities,
                    enabled,
                } => {
                    let mut v = [0u8; 4];
                    v[..2].copy_from_slice(&capabilities.to_be_bytes());
                    v[2..].copy_from_slice(&enabled.to_be_bytes());
                    put_tlv(out, tlv_type::SYSTEM_CAPABILITIES, &v);
                }
                LldpTlv::ManagementAddress(m) => {
                    let address = m.address.get(..31).unwrap_or(&m.address);
                    let oid = m.oid.get(..128).unwrap_or(&m.oid);
                    let mut v = Vec::with_capacity(8 + address.len() + oid.len());
                    v.push(address.len() as u8 + 1);
                    v.push(m.family);
                    v.extend_from_slice(address);
                    v.push(m.interface_subtype);
                    v.extend_from_slice(&m.interface_number.to_be_bytes());
                    v.push(oid.len() as u8);
                    v.extend_from_slice(oid);
                    put_tlv(out, tlv_type::MANAGEMENT_ADDRESS, &v);
                }
                LldpTlv::OrgSpecific { oui, subtype, data } => {
                    let data = data.get(..MAX_TLV_LEN - 4).unwrap_or(data);
                    let mut v = Vec::with_capacity(4 + data.len());
                    v.extend_from_slice(oui);
                    v.push(*subtype);
                    v.extend_from_slice(data);
                    put_tlv(out, tlv_type::ORG_SPECIFIC, &v);
                }
                LldpTlv::Unknown { tlv_type, value } => put_tlv(out, *tlv_type, value),
            }
        }
        if self.end {
            put_tlv(out, tlv_type::END, &[]);
        }
    }
}

// ---- encoding ------------------------------------------------------------------------------

/// Writes a TLV, truncating the value to what the 9-bit length can express; the type is masked
/// to 7 bits.
fn put_tlv(out: &mut BytesMut, t: u8, value: &[u8]) {
    let value = value.get(..MAX_TLV_LEN).unwrap_or(value);
    out.put_u16((u16::from(t & 0x7f) << 9) | value.len() as u16);
    out.put_slice(value);
}

fn put_string(out: &mut BytesMut, t: u8, s: &Octets) {
    put_tlv(out, t, s.0.get(..MAX_STRING_LEN).unwrap_or(&s.0));
}

/// Writes a Chassis/Port ID TLV, truncating the id to 255 octets.
fn put_id(out: &mut BytesMut, t: u8, (subtype, id): (u8, Vec<u8>)) {
    let id = id.get(..MAX_ID_LEN).unwrap_or(&id);
    let mut v = Vec::with_capacity(1 + id.len());
    v.push(subtype);
    v.extend_from_slice(id);
    put_tlv(out, t, &v);
}

// ---- fabricflow's topology probe -----------------------------------------------------------

/// How the probe's Chassis ID carries the datapath id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum ChassisStyle {
    /// Locally assigned, the text `dpid:%016x` (the convention of Ryu and others).
    DpidString,
    /// MAC address subtype holding the low 48 bits of the datapath id (OVS derives its default
    /// dpid from the bridge MAC, so the top 16 bits are normally 0; they are lost otherwise).
    Mac,
}

/// Text prefix of a [`ChassisStyle::DpidString`] chassis id.
pub const DPID_PREFIX: &str = "dpid:";

/// The LLDP probe fabricflow sends out of every switch port for topology verification, and what
/// it reads back from a probe received by a neighbour.
///
/// Wire form: DA 01:80:c2:00:00:0e, SA the port's MAC, Chassis ID per [`ChassisStyle`], Port ID
/// locally assigned with the OpenFlow port number in decimal, TTL, System Name, End.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TopologyProbe {
    pub dpid: u64,
    pub port: u32,
    pub ttl: u16,
    pub system_name: Option<String>,
}

impl TopologyProbe {
    pub fn to_lldpdu(&self, style: ChassisStyle) -> Lldpdu {
        let chassis_id = match style {
            ChassisStyle::DpidString => ChassisId::LocallyAssigned(Octets::from(
                format!("{DPID_PREFIX}{:016x}", self.dpid).as_str(),
            )),
            ChassisStyle::Mac => ChassisId::MacAddress(MacAddr::from_u64(self.dpid)),
        };
        let mut tlvs = Vec::new();
        if let Some(n) = &self.system_name {
            tlvs.push(LldpTlv::SystemName(Octets::from(n.as_str())));
        }
        Lldpdu {
            chassis_id,
            port_id: PortId::LocallyAssigned(Octets::from(self.port.to_string().as_str())),
            ttl: self.ttl,
            tlvs,
            end: true,
        }
    }

    /// The complete Ethernet frame (padded to 60 octets), from the port's MAC `src`.
    pub fn to_frame(&self, src: MacAddr, style: ChassisStyle) -> BytesMut {
        self.to_lldpdu(style).to_frame(src)
    }

    /// Reads (dpid, port) back. `None` when the LLDPDU is not in a form a fabricflow probe uses.
    /// Accepted: chassis `dpid:` + 16 hex digits (locally assigned) or a MAC (dpid = its 48 bits);
    /// port locally assigned decimal, or port component with a 4-octet big-endian number (Ryu).
    pub fn from_lldpdu(pdu: &Lldpdu) -> Option<Self> {
        let dpid = match &pdu.chassis_id {
            ChassisId::LocallyAssigned(o) => {
                let hex = o.as_str()?.strip_prefix(DPID_PREFIX)?;
                if hex.len() != 16 {
                    return None;
                }
                u64::from_str_radix(hex, 16).ok()?
            }
            ChassisId::MacAddress(m) => m.to_u64(),
            _ => return None,
        };
        let port = match &pdu.port_id {
            PortId::LocallyAssigned(o) => {
                let s = o.as_str()?;
                if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                s.parse().ok()?
            }
            PortId::PortComponent(o) => {
                let b: [u8; 4] = o.0.as_slice().try_into().ok()?;
                u32::from_be_bytes(b)
            }
            _ => return None,
        };
        Some(Self {
            dpid,
            port,
            ttl: pdu.ttl,
            system_name: pdu
                .system_name()
                .and_then(|s| s.as_str())
                .map(str::to_owned),
        })
    }

    /// Parses a received frame: `Err` if it is not a well-formed LLDP frame, `Ok(None)` if it is
    /// LLDP from something other than a fabricflow probe (a host's lldpd, say).
    pub fn parse_frame(frame: &[u8]) -> Result<Option<(FrameInfo, Self)>, DecodeError> {
        let (info, pdu) = Lldpdu::parse_frame(frame)?;
        Ok(Self::from_lldpdu(&pdu).map(|p| (info, p)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SRC: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x01, 0x00, 0x05]);

    #[test]
    fn golden_probe_frame() {
        let p = TopologyProbe {
            dpid: 0x0000_0200_0001_0000,
            port: 5,
            ttl: 120,
            system_name: Some("ff-s1".into()),
        };
        let frame = p.to_frame(SRC, ChassisStyle::DpidString);
        let want = hex::decode(concat!(
            "0180c200000e",
            "020000010005",
            "88cc",
            "0216",
            "07",
            "647069643a30303030303230303030303130303030", // "dpid:0000020000010000"
            "0402",
            "07",
            "35", // port "5"
            "0602",
            "0078", // TTL 120
            "0a05",
            "66662d7331", // "ff-s1"
            "0000",
        ))
        .unwrap();
        assert_eq!(&frame[..want.len()], &want[..]);
        assert_eq!(frame.len(), want.len().max(60));
        let (info, back) = TopologyProbe::parse_frame(&frame).unwrap().unwrap();
        assert_eq!(back, p);
        assert_eq!(info.src, SRC);
        assert_eq!(info.dst, MacAddr::LLDP_NEAREST_BRIDGE);

        let frame = p.to_frame(SRC, ChassisStyle::Mac);
        assert_eq!(
            &frame[14..23],
            &hex::decode("020704020000010000").unwrap()[..]
        );
        let (_, back) = TopologyProbe::parse_frame(&frame).unwrap().unwrap();
        assert_eq!(back, p);
    }

    /// A frame as lldpd on Linux sends it (MAC chassis, ifname port, capabilities, mgmt address).
    fn lldpd_frame() -> Vec<u8> {
        hex::decode(concat!(
            "0180c200000e",
            "525400123456",
            "88cc",
            "0207",
            "04525400123456",
            "0405",
            "0565746830", // ifname eth0
            "0602",
            "0078",
            "0a04",
            "686f7374", // "host"
            "0c03",
            "4f5321", // "OS!"
            "0e04",
            "00800080", // station only
            "100c",
            "0501c0a80001",
            "0200000002",
            "00", // mgmt 192.168.0.1 ifIndex 2
            "0809",
            "65746830",
            "2d706f7274", // port description "eth0-port"
            "fe09",
            "0012",
            "0f",
            "04",
            "05dc",
            "000000", // 802.3 org TLV (max frame size) + 3
            "1202",
            "abcd", // reserved type 9
            "0000",
        ))
        .unwrap()
    }

    #[test]
    fn golden_lldpd_frame() {
        let frame = lldpd_frame();
        let (info, pdu) = Lldpdu::parse_frame(&frame).unwrap();
        assert_eq!(info.ethertype, ethertype::LLDP);
        assert_eq!(
            pdu.chassis_id,
            ChassisId::MacAddress(MacAddr([0x52, 0x54, 0, 0x12, 0x34, 0x56]))
        );
        assert_eq!(pdu.port_id, PortId::InterfaceName("eth0".into()));
        assert_eq!(pdu.ttl, 120);
        assert_eq!(pdu.system_name().unwrap().as_str(), Some("host"));
        assert_eq!(pdu.system_description().unwrap().as_str(), Some("OS!"));
        assert_eq!(pdu.port_description().unwrap().as_str(), Some("eth0-port"));
        assert_eq!(pdu.system_capabilities(), Some((0x80, 0x80)));
        let m = pdu.management_addresses().next().unwrap();
        assert_eq!((m.family, m.address.as_slice()), (1, &[192, 168, 0, 1][..]));
        assert_eq!((m.interface_subtype, m.interface_number), (2, 2));
        assert!(matches!(
            pdu.tlvs[5],
            LldpTlv::OrgSpecific {
                oui: [0x00, 0x12, 0x0f],
                subtype: 4,
                ..
            }
        ));
        assert_eq!(
            pdu.tlvs[6],
            LldpTlv::Unknown {
                tlv_type: 9,
                value: vec![0xab, 0xcd]
            }
        );
        assert!(pdu.end);
        assert_eq!(&pdu.to_bytes()[..], &frame[14..]);
        // An lldpd frame is LLDP but not a fabricflow probe with a decimal port.
        assert_eq!(TopologyProbe::parse_frame(&frame).unwrap(), None);
        serde_json::to_string(&pdu).unwrap();
    }

    fn err_of(frame: &[u8]) -> DecodeError {
        Lldpdu::parse_frame(frame).unwrap_err()
    }

    #[test]
    fn errors_name_the_tlv() {
        let good = lldpd_frame();
        // Port ID first.
        let mut f = good.clone();
        f.drain(14..23);
        let e = err_of(&f);
        assert_eq!(e.offset, 14);
        assert!(
            matches!(e.kind, ErrorKind::InvalidValue { what, value: 2 } if what.contains("Chassis ID"))
        );
        // TTL of 3 octets.
        let mut f = good.clone();
        f[30..32].copy_from_slice(&[0x06, 0x03]);
        let e = err_of(&f);
        assert_eq!(e.offset, 30);
        assert!(matches!(
            e.kind,
            ErrorKind::BadLength {
                what: "LLDP TTL TLV",
                length: 3,
                ..
            }
        ));
        // MAC chassis id of 5 octets.
        let mut f = good.clone();
        f[14..16].copy_from_slice(&[0x02, 0x06]);
        f.remove(21);
        let e = err_of(&f);
        assert_eq!(e.offset, 14);
        assert!(matches!(
            e.kind,
            ErrorKind::BadLength {
                what: "LLDP Chassis ID TLV",
                ..
            }
        ));
        // A second Chassis ID among the optional TLVs.
        let mut f = good.clone();
        let end = f.len() - 2;
        f.splice(end..end, hex::decode("0207045254001234ff").unwrap());
        let e = err_of(&f);
        assert_eq!(e.offset, end);
        // System capabilities of 2 octets.
        let mut f = good.clone();
        let pos = 14 + 9 + 7 + 4 + 6 + 5;
        assert_eq!(f[pos], 0x0e);
        f[pos + 1] = 2;
        assert!(matches!(
            err_of(&f).kind,
            ErrorKind::BadLength {
                what: "LLDP System Capabilities TLV",
                ..
            }
        ));
        // End TLV with a length.
        let mut f = good.clone();
        let n = f.len();
        f[n - 1] = 1;
        f.push(0);
        assert!(matches!(
            err_of(&f).kind,
            ErrorKind::BadLength {
                what: "LLDP End TLV",
                ..
            }
        ));
        // Management address whose parts do not add up.
        let mut f = good.clone();
        let pos = pos + 6;
        assert_eq!(f[pos], 0x10);
        f[pos + 2] = 6; // address string length 6 instead of 5
        assert!(Lldpdu::parse_frame(&f).is_err());
        // A TLV longer than the frame.
        let mut f = good.clone();
        let n = f.len();
        f[n - 2] = 0x0a;
        f[n - 1] = 0x10;
        let e = err_of(&f);
        assert_eq!(e.offset, n - 2);
        assert!(matches!(
            e.kind,
            ErrorKind::Truncated {
                what: "LLDP System Name TLV",
                needed: 16
            }
        ));
    }

    #[test]
    fn every_truncation_fails_or_is_shorter() {
        let frame = lldpd_frame();
        let pdu = &frame[14..];
        for n in 0..pdu.len() {
            // Cutting exactly at a TLV boundary yields a valid LLDPDU without End TLV.
            if let Ok(p) = Lldpdu::from_bytes(&pdu[..n]) {
                assert!(!p.end);
                assert_eq!(&p.to_bytes()[..], &pdu[..n]);
            }
        }
        for n in 0..14 + 20 {
            assert!(Lldpdu::parse_frame(&frame[..n]).is_err(), "{n}");
        }
    }

    fn arb_octets(max: usize) -> impl Strategy<Value = Octets> {
        prop::collection::vec(any::<u8>(), 0..=max).prop_map(Octets)
    }

    fn arb_id() -> impl Strategy<Value = (u8, Vec<u8>)> {
        (any::<u8>(), prop::collection::vec(any::<u8>(), 1..40))
    }

    fn arb_chassis() -> impl Strategy<Value = ChassisId> {
        prop_oneof![
            arb_id().prop_map(|(s, id)| {
                if s == 4 {
                    ChassisId::MacAddress(mac_of(&[id.clone(), vec![0; 6]].concat()))
                } else {
                    ChassisId::from_raw(s, &id)
                }
            }),
            any::<[u8; 6]>().prop_map(|m| ChassisId::MacAddress(MacAddr(m))),
        ]
    }

    fn arb_port() -> impl Strategy<Value = PortId> {
        prop_oneof![
            arb_id().prop_map(|(s, id)| {
                if s == 3 {
                    PortId::MacAddress(mac_of(&[id.clone(), vec![0; 6]].concat()))
                } else {
                    PortId::from_raw(s, &id)
                }
            }),
            any::<u32>()
                .prop_map(|p| PortId::LocallyAssigned(Octets::from(p.to_string().as_str()))),
        ]
    }

    fn arb_tlv() -> impl Strategy<Value = LldpTlv> {
        prop_oneof![
            arb_octets(255).prop_map(LldpTlv::PortDescription),
            arb_octets(255).prop_map(LldpTlv::SystemName),
            arb_octets(255).prop_map(LldpTlv::SystemDescription),
            (any::<u16>(), any::<u16>()).prop_map(|(capabilities, enabled)| {
                LldpTlv::SystemCapabilities {
                    capabilities,
                    enabled,
                }
            }),
            (
                any::<u8>(),
                prop::collection::vec(any::<u8>(), 1..=31),
                any::<u8>(),
                any::<u32>(),
                prop::collection::vec(any::<u8>(), 0..=128)
            )
                .prop_map(
                    |(family, address, interface_subtype, interface_number, oid)| {
                        LldpTlv::ManagementAddress(ManagementAddress {
                            family,
                            address,
                            interface_subtype,
                            interface_number,
                            oid,
                        })
                    }
                ),
            (
                any::<[u8; 3]>(),
                any::<u8>(),
                prop::collection::vec(any::<u8>(), 0..=507)
            )
                .prop_map(|(oui, subtype, data)| LldpTlv::OrgSpecific {
                    oui,
                    subtype,
                    data
                }),
            (9u8..=126, prop::collection::vec(any::<u8>(), 0..=511))
                .prop_map(|(tlv_type, value)| LldpTlv::Unknown { tlv_type, value }),
        ]
    }

    fn arb_pdu() -> impl Strategy<Value = Lldpdu> {
        (
            arb_chassis(),
            arb_port(),
            any::<u16>(),
            prop::collection::vec(arb_tlv(), 0..5),
            any::<bool>(),
        )
            .prop_map(|(chassis_id, port_id, ttl, tlvs, end)| Lldpdu {
                chassis_id,
                port_id,
                ttl,
                tlvs,
                end,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn roundtrip(pdu in arb_pdu()) {
            let b = pdu.to_bytes();
            prop_assert_eq!(&Lldpdu::from_bytes(&b).unwrap(), &pdu);
            let frame = pdu.to_frame(SRC);
            // Without an End TLV, the frame's zero padding reads as one.
            let back = Lldpdu::parse_frame(&frame).unwrap().1;
            prop_assert_eq!(&back, &Lldpdu { end: back.end, ..pdu.clone() });
        }

        #[test]
        fn probe_roundtrip(dpid in any::<u64>(), port in any::<u32>(), ttl in any::<u16>(),
                           name in prop::option::of("[a-z0-9-]{0,40}"), mac in any::<bool>()) {
            let style = if mac { ChassisStyle::Mac } else { ChassisStyle::DpidString };
            let p = TopologyProbe { dpid, port, ttl, system_name: name };
            let (_, back) = TopologyProbe::parse_frame(&p.to_frame(SRC, style)).unwrap().unwrap();
            let want_dpid = if mac { dpid & 0xffff_ffff_ffff } else { dpid };
            prop_assert_eq!(back, TopologyProbe { dpid: want_dpid, ..p });
        }

        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..120)) {
            if let Ok(p) = Lldpdu::from_bytes(&bytes) {
                prop_assert_eq!(&p.to_bytes()[..], &bytes[..]);
            }
            let _ = Lldpdu::parse_frame(&bytes);
            let _ = TopologyProbe::parse_frame(&bytes);
        }

        #[test]
        fn mutated_lldpd_never_panics(pos in 0usize..80, val in any::<u8>(), cut in 0usize..100) {
            let mut f = lldpd_frame();
            if let Some(b) = f.get_mut(pos) { *b = val; }
            f.truncate(cut.max(14));
            if let Ok((_, p)) = Lldpdu::parse_frame(&f) {
                let b = p.to_bytes();
                prop_assert_eq!(&b[..], &f[14..14 + b.len()]);
            }
        }
    }
}
