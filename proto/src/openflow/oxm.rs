//! OXM (OpenFlow Extensible Match) TLVs and `ofp_match`.
//!
//! An OXM TLV is a 32-bit header (class:16, field:7, has-mask:1, length:8) followed by
//! `length` payload bytes (value, then mask when has-mask is set). Every OpenFlow-basic field
//! of OpenFlow 1.3 (class 0x8000, fields 0..=39) is typed, its length checked, and a mask is
//! accepted only where the specification allows one. Other classes (NXM_0, NXM_1, the
//! experimenter class 0xFFFF with its experimenter id) and unassigned basic fields decode to
//! [`RawOxm`], which re-encodes byte for byte.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use super::port::PortNo;
use crate::wire::{self, PResult, Wire};
use crate::MacAddr;

/// OXM class of the Nicira extensible match, part 0 (OpenFlow 1.0 compatible fields).
pub const OFPXMC_NXM_0: u16 = 0x0000;
/// OXM class of the Nicira extensible match, part 1.
pub const OFPXMC_NXM_1: u16 = 0x0001;
/// OXM class of the OpenFlow-basic fields.
pub const OFPXMC_OPENFLOW_BASIC: u16 = 0x8000;
/// OXM class of experimenter fields (a 32-bit experimenter id follows the header).
pub const OFPXMC_EXPERIMENTER: u16 = 0xffff;
/// `ofp_match.type` for OXM matches.
pub const OFPMT_OXM: u16 = 1;
/// Bit in `vlan_vid` meaning "a VLAN tag is present".
pub const OFPVID_PRESENT: u16 = 0x1000;
/// `vlan_vid` value for "no VLAN tag".
pub const OFPVID_NONE: u16 = 0x0000;

// ---- value types --------------------------------------------------------------------------

/// A type an OXM value (or mask) is made of. `read` is given exactly the field's width.
trait OxmValue: Copy {
    fn read(b: &[u8]) -> Self;
    /// Writes the low `len` bytes, big-endian.
    fn write(self, out: &mut BytesMut, len: usize);
    /// `ovs-ofctl` style: integers in decimal (or hex), addresses in their usual notation.
    fn show(self, f: &mut fmt::Formatter<'_>, hex: bool) -> fmt::Result;
    /// The value as a port number, for fields printed as ports.
    fn as_u32(self) -> Option<u32> {
        None
    }
}

macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl OxmValue for $t {
            fn read(b: &[u8]) -> Self {
                b.iter().fold(0, |acc: $t, x| acc.wrapping_shl(8) | <$t>::from(*x))
            }
            fn write(self, out: &mut BytesMut, len: usize) {
                let b = self.to_be_bytes();
                out.put_slice(b.get(b.len().saturating_sub(len)..).unwrap_or_default());
            }
            fn show(self, f: &mut fmt::Formatter<'_>, hex: bool) -> fmt::Result {
                if hex { write!(f, "{:#x}", self) } else { write!(f, "{}", self) }
            }
            fn as_u32(self) -> Option<u32> {
                u32::try_from(self).ok()
            }
        }
    )*};
}
int_value!(u8, u16, u32, u64);

impl OxmValue for MacAddr {
    fn read(b: &[u8]) -> Self {
        MacAddr(<[u8; 6]>::try_from(b).unwrap_or_default())
    }
    fn write(self, out: &mut BytesMut, _len: usize) {
        out.put_slice(&self.0);
    }
    fn show(self, f: &mut fmt::Formatter<'_>, _hex: bool) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl OxmValue for Ipv4Addr {
    fn read(b: &[u8]) -> Self {
        Ipv4Addr::from(<u32 as OxmValue>::read(b))
    }
    fn write(self, out: &mut BytesMut, _len: usize) {
        out.put_slice(&self.octets());
    }
    fn show(self, f: &mut fmt::Formatter<'_>, _hex: bool) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl OxmValue for Ipv6Addr {
    fn read(b: &[u8]) -> Self {
        Ipv6Addr::from(b.iter().fold(0u128, |acc, x| (acc << 8) | u128::from(*x)))
    }
    fn write(self, out: &mut BytesMut, _len: usize) {
        out.put_slice(&self.octets());
    }
    fn show(self, f: &mut fmt::Formatter<'_>, _hex: bool) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// How a field's value is printed.
#[derive(Clone, Copy)]
enum Style {
    Dec,
    Hex,
    Port,
    /// Hex, 4 digits (`0x0800`), as `ovs-ofctl` prints ethertypes.
    EthType,
}

fn show_field<T: OxmValue>(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    value: T,
    mask: Option<T>,
    style: Style,
    num: Option<u32>,
) -> fmt::Result {
    write!(f, "{name}=")?;
    match (style, num, mask) {
        (Style::Port, Some(p), _) => write!(f, "{}", PortNo(p)),
        (Style::EthType, Some(t), None) => write!(f, "{t:#06x}"),
        (_, _, Some(m)) => {
            value.show(f, true)?;
            f.write_str("/")?;
            m.show(f, true)
        }
        (s, _, None) => value.show(f, matches!(s, Style::Hex)),
    }
}

fn put_oxm_header(out: &mut BytesMut, class: u16, field: u8, has_mask: bool, len: usize) {
    out.put_u16(class);
    out.put_u8((field << 1) | u8::from(has_mask));
    out.put_u8(u8::try_from(len).unwrap_or(u8::MAX));
}

// ---- the typed fields ---------------------------------------------------------------------

macro_rules! oxm_basic {
    (
        plain: [ $( ($pn:literal, $pv:ident, $pt:ty, $pl:literal, $pname:literal, $ps:ident) ),* $(,)? ],
        masked: [ $( ($mn:literal, $mv:ident, $mt:ty, $ml:literal, $mname:literal, $ms:ident) ),* $(,)? ]
    ) => {
        /// One OXM TLV: a typed OpenFlow-basic field, or an opaque field of another class.
        ///
        /// Maskable fields carry `mask: Option<_>`; `None` encodes without the has-mask bit.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize)]
        pub enum OxmField {
            $( #[doc = concat!("`", $pname, "` (OpenFlow-basic field ", stringify!($pn), ").")]
               $pv($pt), )*
            $( #[doc = concat!("`", $mname, "` (OpenFlow-basic field ", stringify!($mn), ", maskable).")]
               $mv { value: $mt, mask: Option<$mt> }, )*
            /// Any other OXM class, or an unassigned OpenFlow-basic field: opaque, byte-exact.
            Other(RawOxm),
        }

        impl OxmField {
            /// Value width and maskability of an OpenFlow-basic field number.
            fn basic_shape(field: u8) -> Option<(usize, bool)> {
                match field {
                    $( $pn => Some(($pl, false)), )*
                    $( $mn => Some(($ml, true)), )*
                    _ => None,
                }
            }

            fn from_basic(field: u8, value: &[u8], mask: Option<&[u8]>) -> Option<Self> {
                match field {
                    $( $pn => Some(Self::$pv(<$pt as OxmValue>::read(value))), )*
                    $( $mn => Some(Self::$mv {
                        value: <$mt as OxmValue>::read(value),
                        mask: mask.map(<$mt as OxmValue>::read),
                    }), )*
                    _ => None,
                }
            }

            /// The OpenFlow-basic field number (`OFPXMT_OFB_*`), `None` for [`OxmField::Other`].
            pub fn basic_field(&self) -> Option<u8> {
                match self {
                    $( Self::$pv(..) => Some($pn), )*
                    $( Self::$mv { .. } => Some($mn), )*
                    Self::Other(_) => None,
                }
            }

            /// The field's name as `ovs-ofctl` style text uses it (`in_port`, `eth_dst`, …).
            pub fn name(&self) -> &'static str {
                match self {
                    $( Self::$pv(..) => $pname, )*
                    $( Self::$mv { .. } => $mname, )*
                    Self::Other(_) => "oxm",
                }
            }

            /// True if the TLV carries a mask.
            pub fn has_mask(&self) -> bool {
                match self {
                    $( Self::$pv(..) => false, )*
                    $( Self::$mv { mask, .. } => mask.is_some(), )*
                    Self::Other(r) => r.has_mask,
                }
            }

            /// The field without its mask (what a SET_FIELD action carries).
            pub fn without_mask(&self) -> Self {
                match self {
                    $( Self::$mv { value, .. } => Self::$mv { value: *value, mask: None }, )*
                    other => other.clone(),
                }
            }

            fn encode_field(&self, out: &mut BytesMut) {
                match self {
                    $( Self::$pv(v) => {
                        put_oxm_header(out, OFPXMC_OPENFLOW_BASIC, $pn, false, $pl);
                        v.write(out, $pl);
                    } )*
                    $( Self::$mv { value, mask } => {
                        let len = if mask.is_some() { 2 * $ml } else { $ml };
                        put_oxm_header(out, OFPXMC_OPENFLOW_BASIC, $mn, mask.is_some(), len);
                        value.write(out, $ml);
                        if let Some(m) = mask {
                            m.write(out, $ml);
                        }
                    } )*
                    Self::Other(r) => r.encode_raw(out),
                }
            }

            fn fmt_field(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $( Self::$pv(v) => show_field(f, $pname, *v, None, Style::$ps, v.as_u32()), )*
                    $( Self::$mv { value, mask } => show_field(f, $mname, *value, *mask, Style::$ms, None), )*
                    Self::Other(r) => write!(f, "{r}"),
                }
            }
        }

        #[cfg(test)]
        fn arb_basic_fields() -> Vec<proptest::strategy::BoxedStrategy<OxmField>> {
            use proptest::prelude::*;
            vec![
                $( <$pt as arb::ArbValue>::arb($pl).prop_map(OxmField::$pv).boxed(), )*
                $( (<$mt as arb::ArbValue>::arb($ml), proptest::option::of(<$mt as arb::ArbValue>::arb($ml)))
                    .prop_map(|(value, mask)| OxmField::$mv { value, mask }).boxed(), )*
            ]
        }
    };
}

oxm_basic! {
    plain: [
        (0, InPort, u32, 4, "in_port", Port),
        (1, InPhyPort, u32, 4, "in_phy_port", Port),
        (5, EthType, u16, 2, "eth_type", EthType),
        (7, VlanPcp, u8, 1, "vlan_pcp", Dec),
        (8, IpDscp, u8, 1, "ip_dscp", Dec),
        (9, IpEcn, u8, 1, "ip_ecn", Dec),
        (10, IpProto, u8, 1, "ip_proto", Dec),
        (13, TcpSrc, u16, 2, "tcp_src", Dec),
        (14, TcpDst, u16, 2, "tcp_dst", Dec),
        (15, UdpSrc, u16, 2, "udp_src", Dec),
        (16, UdpDst, u16, 2, "udp_dst", Dec),
        (17, SctpSrc, u16, 2, "sctp_src", Dec),
        (18, SctpDst, u16, 2, "sctp_dst", Dec),
        (19, Icmpv4Type, u8, 1, "icmpv4_type", Dec),
        (20, Icmpv4Code, u8, 1, "icmpv4_code", Dec),
        (21, ArpOp, u16, 2, "arp_op", Dec),
        (29, Icmpv6Type, u8, 1, "icmpv6_type", Dec),
        (30, Icmpv6Code, u8, 1, "icmpv6_code", Dec),
        (31, Ipv6NdTarget, Ipv6Addr, 16, "nd_target", Dec),
        (32, Ipv6NdSll, MacAddr, 6, "nd_sll", Dec),
        (33, Ipv6NdTll, MacAddr, 6, "nd_tll", Dec),
        (34, MplsLabel, u32, 4, "mpls_label", Dec),
        (35, MplsTc, u8, 1, "mpls_tc", Dec),
        (36, MplsBos, u8, 1, "mpls_bos", Dec),
    ],
    masked: [
        (2, Metadata, u64, 8, "metadata", Hex),
        (3, EthDst, MacAddr, 6, "eth_dst", Dec),
        (4, EthSrc, MacAddr, 6, "eth_src", Dec),
        (6, VlanVid, u16, 2, "vlan_vid", Dec),
        (11, Ipv4Src, Ipv4Addr, 4, "ipv4_src", Dec),
        (12, Ipv4Dst, Ipv4Addr, 4, "ipv4_dst", Dec),
        (22, ArpSpa, Ipv4Addr, 4, "arp_spa", Dec),
        (23, ArpTpa, Ipv4Addr, 4, "arp_tpa", Dec),
        (24, ArpSha, MacAddr, 6, "arp_sha", Dec),
        (25, ArpTha, MacAddr, 6, "arp_tha", Dec),
        (26, Ipv6Src, Ipv6Addr, 16, "ipv6_src", Dec),
        (27, Ipv6Dst, Ipv6Addr, 16, "ipv6_dst", Dec),
        (28, Ipv6Flabel, u32, 4, "ipv6_label", Hex),
        (37, PbbIsid, u32, 3, "pbb_isid", Dec),
        (38, TunnelId, u64, 8, "tunnel_id", Hex),
        (39, Ipv6Exthdr, u16, 2, "ipv6_exthdr", Hex),
    ]
}

/// An OXM TLV kept opaque: its class, field, has-mask bit, the experimenter id (present iff
/// the class is 0xFFFF) and the payload bytes (value and mask, after the experimenter id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RawOxm {
    pub class: u16,
    pub field: u8,
    pub has_mask: bool,
    pub experimenter: Option<u32>,
    pub payload: Vec<u8>,
}

impl RawOxm {
    fn encode_raw(&self, out: &mut BytesMut) {
        let exp_len = if self.experimenter.is_some() { 4 } else { 0 };
        put_oxm_header(
            out,
            self.class,
            self.field,
            self.has_mask,
            self.payload.len() + exp_len,
        );
        if let Some(e) = self.experimenter {
            out.put_u32(e);
        }
        out.put_slice(&self.payload);
    }
}

impl fmt::Display for RawOxm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.experimenter {
            Some(e) => write!(f, "exp({e:#010x}):{}", self.field)?,
            None => write!(f, "oxm({:#06x}:{})", self.class, self.field)?,
        }
        f.write_str(if self.has_mask { "/m=0x" } else { "=0x" })?;
        for b in &self.payload {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl Wire for OxmField {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, class) = wire::u16_(input, "oxm class")?;
        let (i, fm) = wire::u8_(i, "oxm field")?;
        let (i, len) = wire::u8_(i, "oxm length")?;
        let (field, has_mask) = (fm >> 1, fm & 1 == 1);
        let (rest, payload) = wire::take(i, usize::from(len), "oxm payload")?;
        if class == OFPXMC_OPENFLOW_BASIC {
            if let Some((width, maskable)) = OxmField::basic_shape(field) {
                if has_mask && !maskable {
                    return wire::invalid(
                        input,
                        "oxm has-mask bit on an unmaskable field",
                        fm.into(),
                    );
                }
                let want = if has_mask { 2 * width } else { width };
                if payload.len() != want {
                    return wire::bad_length(
                        input,
                        "oxm field",
                        payload.len(),
                        "does not match the field's width",
                    );
                }
                let (value, mask) = payload.split_at(width);
                let mask = if has_mask { Some(mask) } else { None };
                return match OxmField::from_basic(field, value, mask) {
                    Some(v) => Ok((rest, v)),
                    None => wire::invalid(input, "oxm field", field.into()),
                };
            }
        }
        let (experimenter, payload) = if class == OFPXMC_EXPERIMENTER {
            if payload.len() < 4 {
                return wire::bad_length(
                    input,
                    "experimenter oxm",
                    payload.len(),
                    "shorter than its experimenter id",
                );
            }
            let (p, exp) = wire::u32_(payload, "oxm experimenter id")?;
            (Some(exp), p)
        } else {
            (None, payload)
        };
        Ok((
            rest,
            OxmField::Other(RawOxm {
                class,
                field,
                has_mask,
                experimenter,
                payload: payload.to_vec(),
            }),
        ))
    }

    fn encode(&self, out: &mut BytesMut) {
        self.encode_field(out);
    }
}

impl fmt::Display for OxmField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_field(f)
    }
}

impl OxmField {
    /// `ovs-ofctl` style value only (for `set_field:VALUE->name`).
    pub fn value_string(&self) -> String {
        let s = self.to_string();
        match s.split_once('=') {
            Some((_, v)) if !matches!(self, OxmField::Other(_)) => v.to_owned(),
            _ => s,
        }
    }

    /// Encoded length of the TLV, header included.
    pub fn wire_len(&self) -> usize {
        let mut b = BytesMut::new();
        self.encode(&mut b);
        b.len()
    }
}

// ---- ofp_match ----------------------------------------------------------------------------

/// `ofp_match` of type OXM: a list of OXM TLVs, zero-padded to a multiple of 8.
/// The default value is the empty match (matches everything).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Match {
    pub fields: Vec<OxmField>,
}

impl Match {
    /// The empty match.
    pub fn new() -> Self {
        Match::default()
    }

    /// Adds a field (builder style).
    pub fn with(mut self, field: OxmField) -> Self {
        self.fields.push(field);
        self
    }

    /// Adds a field.
    pub fn push(&mut self, field: OxmField) {
        self.fields.push(field);
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The IN_PORT field, if matched.
    pub fn in_port(&self) -> Option<u32> {
        self.fields.iter().find_map(|f| match f {
            OxmField::InPort(p) => Some(*p),
            _ => None,
        })
    }

    /// The ETH_TYPE field, if matched.
    pub fn eth_type(&self) -> Option<u16> {
        self.fields.iter().find_map(|f| match f {
            OxmField::EthType(t) => Some(*t),
            _ => None,
        })
    }

    /// The first field with the given OpenFlow-basic field number.
    pub fn get(&self, basic_field: u8) -> Option<&OxmField> {
        self.fields
            .iter()
            .find(|f| f.basic_field() == Some(basic_field))
    }

    /// Length of the `ofp_match` without padding (the value of its length field).
    pub fn unpadded_len(&self) -> usize {
        4 + self.fields.iter().map(OxmField::wire_len).sum::<usize>()
    }
}

/// A match delimits itself, so it can stand anywhere in an `ofp_struct!` layout.
impl crate::openflow::layout::Field for Match {
    fn read<'a>(input: &'a [u8], _what: &'static str) -> PResult<'a, Self> {
        Match::decode(input)
    }
    fn write(&self, out: &mut BytesMut) {
        self.encode(out);
    }
}

impl Wire for Match {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, ty) = wire::u16_(input, "match type")?;
        let (_, len) = wire::u16_(i, "match length")?;
        if ty != OFPMT_OXM {
            return wire::invalid(input, "match type (only OFPMT_OXM)", ty.into());
        }
        let len = usize::from(len);
        if len < 4 {
            return wire::bad_length(input, "match", len, "shorter than its header");
        }
        let (rest, whole) = wire::take(input, len + wire::pad8(len), "match")?;
        let body = whole.get(4..len).unwrap_or_default();
        let (_, fields) = wire::many_exact::<OxmField>(body)?;
        Ok((rest, Match { fields }))
    }

    fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_u16(OFPMT_OXM);
        out.put_u16(0);
        for f in &self.fields {
            f.encode(out);
        }
        let len = out.len() - start;
        wire::patch_u16(out, start + 2, wire::len_u16(len));
        wire::put_zeros(out, wire::pad8(len));
    }
}

impl fmt::Display for Match {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, field) in self.fields.iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            write!(f, "{field}")?;
        }
        Ok(())
    }
}

impl FromIterator<OxmField> for Match {
    fn from_iter<I: IntoIterator<Item = OxmField>>(iter: I) -> Self {
        Match {
            fields: iter.into_iter().collect(),
        }
    }
}

// ---- tests --------------------------------------------------------------------------------

#[cfg(test)]
pub(crate) mod test_util {
    //! Shared test helpers for the structure and message modules.
    use crate::wire::Wire;
    use std::fmt::Debug;

    /// Parses whitespace-separated hex (as in OVS test files).
    pub fn hex_bytes(s: &str) -> Vec<u8> {
        let compact: String = s.split_whitespace().collect();
        hex::decode(compact).expect("valid hex")
    }

    /// encode → decode equal → encode identical bytes.
    pub fn check_roundtrip<T: Wire + PartialEq + Debug>(v: &T) {
        let b = v.to_bytes();
        let d = T::from_bytes(&b).unwrap_or_else(|e| panic!("{e} decoding {v:?} from {b:x?}"));
        assert_eq!(&d, v);
        assert_eq!(d.to_bytes(), b);
    }

    /// Every strict prefix of a self-delimiting encoding fails to decode.
    pub fn check_truncations<T: Wire + Debug>(v: &T) {
        let b = v.to_bytes();
        for n in 0..b.len() {
            assert!(
                T::decode(&b[..n]).is_err(),
                "prefix of {n} bytes decoded: {v:?}"
            );
        }
    }

    /// For a message body whose tail is a list or data "to the end": every prefix decodes to
    /// an error or to a value that re-encodes to exactly that prefix; the fixed part must not
    /// be cut.
    pub fn check_prefixes<T: Wire + Debug>(v: &T, fixed: usize) {
        let b = v.to_bytes();
        for n in 0..b.len() {
            match T::from_bytes(&b[..n]) {
                Ok(d) => {
                    assert!(n >= fixed, "fixed part cut at {n} yet decoded: {d:?}");
                    assert_eq!(&d.to_bytes()[..], &b[..n]);
                }
                Err(e) => assert!(e.offset <= n),
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod arb {
    use super::*;
    use proptest::prelude::*;

    /// Value strategies for OXM value types, restricted to `len` bytes.
    pub(super) trait ArbValue: Sized + std::fmt::Debug {
        fn arb(len: usize) -> BoxedStrategy<Self>;
    }
    macro_rules! arb_int {
        ($($t:ty),*) => {$(
            impl ArbValue for $t {
                fn arb(len: usize) -> BoxedStrategy<Self> {
                    any::<$t>()
                        .prop_map(move |v| {
                            let bits = 8 * len as u32;
                            if bits >= <$t>::BITS { v } else { v & ((1 << bits) - 1) }
                        })
                        .boxed()
                }
            }
        )*};
    }
    arb_int!(u8, u16, u32, u64);
    impl ArbValue for MacAddr {
        fn arb(_: usize) -> BoxedStrategy<Self> {
            any::<[u8; 6]>().prop_map(MacAddr).boxed()
        }
    }
    impl ArbValue for Ipv4Addr {
        fn arb(_: usize) -> BoxedStrategy<Self> {
            any::<u32>().prop_map(Ipv4Addr::from).boxed()
        }
    }
    impl ArbValue for Ipv6Addr {
        fn arb(_: usize) -> BoxedStrategy<Self> {
            any::<u128>().prop_map(Ipv6Addr::from).boxed()
        }
    }

    /// Opaque OXMs that must stay opaque: NXM classes, experimenter class, unassigned basic.
    pub fn any_raw_oxm() -> impl Strategy<Value = RawOxm> {
        prop_oneof![
            (
                prop_oneof![Just(OFPXMC_NXM_0), Just(OFPXMC_NXM_1), 2u16..0x8000],
                0u8..128,
                any::<bool>(),
                proptest::collection::vec(any::<u8>(), 0..24)
            )
                .prop_map(|(class, field, has_mask, payload)| RawOxm {
                    class,
                    field,
                    has_mask,
                    experimenter: None,
                    payload
                }),
            (
                40u8..128,
                any::<bool>(),
                proptest::collection::vec(any::<u8>(), 0..24)
            )
                .prop_map(|(field, has_mask, payload)| RawOxm {
                    class: OFPXMC_OPENFLOW_BASIC,
                    field,
                    has_mask,
                    experimenter: None,
                    payload
                }),
            (
                0u8..128,
                any::<bool>(),
                any::<u32>(),
                proptest::collection::vec(any::<u8>(), 0..24)
            )
                .prop_map(|(field, has_mask, e, payload)| RawOxm {
                    class: OFPXMC_EXPERIMENTER,
                    field,
                    has_mask,
                    experimenter: Some(e),
                    payload
                }),
        ]
    }

    pub fn any_oxm_field() -> impl Strategy<Value = OxmField> {
        let mut all = arb_basic_fields();
        all.push(any_raw_oxm().prop_map(OxmField::Other).boxed());
        proptest::strategy::Union::new(all)
    }

    pub fn any_match() -> impl Strategy<Value = Match> {
        proptest::collection::vec(any_oxm_field(), 0..6).prop_map(|fields| Match { fields })
    }
}

#[cfg(test)]
mod tests {
    use super::arb::*;
    use super::test_util::*;
    use super::*;
    use proptest::prelude::*;

    /// Match of OVS tests/ofp-print.at "OFPT_FLOW_MOD - OF1.3 - flags - low verbosity".
    const OVS_MATCH: &str = "00 01 00 42 80 00 00 04 00 00 00 01 80 00 08 06 \
        50 54 00 00 00 06 80 00 06 06 50 54 00 00 00 05 \
        80 00 0a 02 08 06 80 00 0c 02 00 00 80 00 2a 02 \
        00 02 80 00 2c 04 c0 a8 00 02 80 00 2e 04 c0 a8 \
        00 01 00 00 00 00 00 00";

    #[test]
    fn match_golden_ovs() {
        let b = hex_bytes(OVS_MATCH);
        let m = Match::from_bytes(&b).unwrap();
        let mac = |s: &str| s.parse::<MacAddr>().unwrap();
        assert_eq!(
            m.fields,
            vec![
                OxmField::InPort(1),
                OxmField::EthSrc {
                    value: mac("50:54:00:00:00:06"),
                    mask: None
                },
                OxmField::EthDst {
                    value: mac("50:54:00:00:00:05"),
                    mask: None
                },
                OxmField::EthType(0x0806),
                OxmField::VlanVid {
                    value: 0,
                    mask: None
                },
                OxmField::ArpOp(2),
                OxmField::ArpSpa {
                    value: Ipv4Addr::new(192, 168, 0, 2),
                    mask: None
                },
                OxmField::ArpTpa {
                    value: Ipv4Addr::new(192, 168, 0, 1),
                    mask: None
                },
            ]
        );
        assert_eq!(&m.to_bytes()[..], &b[..]);
        assert_eq!(
            m.to_string(),
            "in_port=1,eth_src=50:54:00:00:00:06,eth_dst=50:54:00:00:00:05,eth_type=0x0806,\
             vlan_vid=0,arp_op=2,arp_spa=192.168.0.2,arp_tpa=192.168.0.1"
        );
    }

    /// OVS tests/ofp-print.at "OFPT_PACKET_IN - OF1.3": match with in_port=LOCAL.
    #[test]
    fn match_in_port_local() {
        let b = hex_bytes("00 01 00 0c 80 00 00 04 ff ff ff fe 00 00 00 00");
        let m = Match::from_bytes(&b).unwrap();
        assert_eq!(m.in_port(), Some(crate::openflow::port::OFPP_LOCAL));
        assert_eq!(m.to_string(), "in_port=LOCAL");
        assert_eq!(&m.to_bytes()[..], &b[..]);
    }

    #[test]
    fn builder_and_display() {
        let m = Match::new()
            .with(OxmField::InPort(1))
            .with(OxmField::EthType(0x0800))
            .with(OxmField::EthDst {
                value: "02:00:00:01:00:00".parse().unwrap(),
                mask: Some("ff:ff:ff:ff:00:00".parse().unwrap()),
            });
        assert_eq!(
            m.to_string(),
            "in_port=1,eth_type=0x0800,eth_dst=02:00:00:01:00:00/ff:ff:ff:ff:00:00"
        );
        assert_eq!(
            Match::default().to_bytes().as_ref(),
            &[0, 1, 0, 4, 0, 0, 0, 0]
        );
        check_roundtrip(&m);
    }

    #[test]
    fn rejects_bad_fields() {
        // in_port with has-mask set
        let b = hex_bytes("80 00 01 08 00 00 00 01 ff ff ff ff");
        assert!(OxmField::from_bytes(&b).is_err());
        // eth_type with 4-byte payload
        let b = hex_bytes("80 00 0a 04 08 00 00 00");
        let e = OxmField::from_bytes(&b).unwrap_err();
        assert_eq!(e.offset, 0);
        // match type 0 (standard) is not OXM
        let b = hex_bytes("00 00 00 04 00 00 00 00");
        assert!(Match::from_bytes(&b).is_err());
        // error offset inside a match points at the bad TLV
        let b =
            hex_bytes("00 01 00 13 80 00 00 04 00 00 00 01 80 00 0a 03 08 00 01 00 00 00 00 00");
        let b = &b[..];
        let e = Match::from_bytes(b).unwrap_err();
        assert_eq!(e.offset, 12);
        // experimenter class needs its id
        let b = hex_bytes("ff ff 00 02 00 00");
        assert!(OxmField::from_bytes(&b).is_err());
    }

    #[test]
    fn opaque_classes() {
        // NXM_NX_REG0 (class 1, field 0) and an experimenter OXM (ONF id), byte-exact.
        for h in ["00 01 00 04 00 00 00 7b", "ff ff 04 06 4f 4e 46 00 12 34"] {
            let b = hex_bytes(h);
            let f = OxmField::from_bytes(&b).unwrap();
            assert!(matches!(f, OxmField::Other(_)));
            assert_eq!(&f.to_bytes()[..], &b[..]);
        }
        // PBB_ISID is 3 bytes
        let b = hex_bytes("80 00 4a 03 12 34 56");
        assert_eq!(
            OxmField::from_bytes(&b).unwrap(),
            OxmField::PbbIsid {
                value: 0x123456,
                mask: None
            }
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn oxm_roundtrip(v in any_oxm_field()) { check_roundtrip(&v); check_truncations(&v); }
        #[test]
        fn match_roundtrip(v in any_match()) {
            check_roundtrip(&v);
            check_truncations(&v);
            let _ = v.to_string();
        }
        #[test]
        fn oxm_random(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = OxmField::decode(&b);
            let _ = Match::decode(&b);
        }
        #[test]
        fn match_random_body(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut v = vec![0u8, 1, 0, 0];
            v.extend_from_slice(&b);
            let len = v.len() as u16;
            v[2..4].copy_from_slice(&len.to_be_bytes());
            v.resize(v.len() + crate::wire::pad8(v.len()), 0);
            if let Ok(m) = Match::from_bytes(&v) {
                prop_assert_eq!(&m.to_bytes()[..], &v[..]);
            }
        }
    }
}
