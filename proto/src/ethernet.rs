//! Ethernet II frames with any number of 802.1Q / 802.1ad tags and an optional 802.1Qau CN-TAG.
//!
//! Two levels, in the spirit of smoltcp:
//! - [`EthernetView`]: a checked, zero-copy view over a frame buffer. It walks the tags once at
//!   construction and then answers field queries without allocating; [`frame_info`] returns the
//!   `Copy` summary ([`FrameInfo`]: src, dst, inner EtherType, first VLAN tag) that the agent
//!   needs for every sampled frame.
//! - [`EthernetFrame`]: the owned semantic representation, a [`Wire`] value whose encoding is
//!   byte-exact: tags are kept in order, the CN-TAG is kept (a parser skips over it, but it is part
//!   of the frame), and the payload is everything after the inner EtherType, padding included.
//!
//! Frames are handled without FCS. Decoders need only the 14-octet header (frames sampled on the
//! transmit path of a Linux interface are not yet padded); builders pad to
//! [`MIN_FRAME_LEN`] octets.
//!
//! Tag parsing: after the addresses, every TPID 0x8100 or 0x88a8 starts a 4-octet VLAN tag; then an
//! optional CN-TAG (0x22E9 + RPID); the next 2 octets are the inner EtherType and the rest is the
//! payload. A VLAN TPID appearing *after* a CN-TAG is not a tag position the standard uses and is
//! taken as the inner EtherType (so it still re-encodes exactly). EtherType values below 0x0600
//! (802.3 length fields) are kept verbatim and the payload is not interpreted.

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use crate::error::DecodeError;
use crate::mac::MacAddr;
use crate::wire::{self, PResult, Wire};

/// EtherType values fabricflow uses.
pub mod ethertype {
    pub const IPV4: u16 = 0x0800;
    pub const ARP: u16 = 0x0806;
    /// 802.1Q customer VLAN tag (C-tag) TPID.
    pub const VLAN: u16 = 0x8100;
    /// 802.1ad service VLAN tag (S-tag) TPID.
    pub const QINQ: u16 = 0x88a8;
    pub const IPV6: u16 = 0x86dd;
    /// 802.1AB Link Layer Discovery Protocol.
    pub const LLDP: u16 = 0x88cc;
    /// 802.1Qau Congestion Notification Message.
    pub const CNM: u16 = 0x22e7;
    /// 802.1Qau CN-TAG (followed by a 2-octet RPID).
    pub const CN_TAG: u16 = 0x22e9;

    /// True for the TPIDs that start a VLAN tag (0x8100, 0x88a8).
    pub const fn is_vlan_tpid(v: u16) -> bool {
        v == VLAN || v == QINQ
    }
}

/// Length of the untagged header: dst, src, EtherType.
pub const HEADER_LEN: usize = 14;
/// Length of one VLAN tag or CN-TAG (TPID/EtherType + 2 octets).
pub const TAG_LEN: usize = 4;
/// Minimum Ethernet frame length without the FCS; builders pad up to it.
pub const MIN_FRAME_LEN: usize = 60;

/// One 802.1Q (TPID 0x8100) or 802.1ad (TPID 0x88a8) tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct VlanTag {
    /// 0x8100 or 0x88a8.
    pub tpid: u16,
    /// Priority code point, 0..=7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN id, 0..=4095.
    pub vid: u16,
}

impl VlanTag {
    /// An 802.1Q C-tag.
    pub const fn dot1q(vid: u16, pcp: u8) -> Self {
        Self {
            tpid: ethertype::VLAN,
            pcp,
            dei: false,
            vid,
        }
    }

    /// Splits a tag control information word.
    pub const fn from_tci(tpid: u16, tci: u16) -> Self {
        Self {
            tpid,
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0fff,
        }
    }

    /// The tag control information word (out-of-range PCP/VID bits are masked off).
    pub const fn tci(&self) -> u16 {
        ((self.pcp as u16 & 0x7) << 13) | ((self.dei as u16) << 12) | (self.vid & 0x0fff)
    }

    fn encode(&self, out: &mut BytesMut) {
        out.put_u16(self.tpid);
        out.put_u16(self.tci());
    }
}

/// The 802.1Qau CN-TAG: EtherType 0x22E9 and the reaction point's flow id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct CnTag {
    pub rpid: u16,
}

/// The cheap summary of a frame: what the agent reads from every sampled frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct FrameInfo {
    pub dst: MacAddr,
    pub src: MacAddr,
    /// The EtherType after all tags (and the CN-TAG, if any).
    pub ethertype: u16,
    /// The outermost VLAN tag, if the frame is tagged.
    pub vlan: Option<VlanTag>,
    pub cn_tag: Option<CnTag>,
}

/// Layout facts found by one walk over the header; no allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    dst: MacAddr,
    src: MacAddr,
    n_vlans: usize,
    first_vlan: Option<VlanTag>,
    cn_tag: Option<CnTag>,
    ethertype: u16,
    /// Offset of the first octet after the VLAN tags (the MSDU, in 802.1Q terms).
    msdu_offset: usize,
    /// Offset of the payload (after the inner EtherType).
    payload_offset: usize,
}

/// Walks the header. Errors carry the address of the fault (see [`wire::WireError`]).
fn walk(input: &[u8]) -> PResult<'_, Layout> {
    let (rest, dst) = wire::array::<6>(input, "Ethernet destination")?;
    let (mut rest, src) = wire::array::<6>(rest, "Ethernet source")?;
    let mut n_vlans = 0usize;
    let mut first_vlan = None;
    let (mut r, mut ty) = wire::u16_(rest, "EtherType")?;
    while ethertype::is_vlan_tpid(ty) {
        let (r2, tci) = wire::u16_(r, "VLAN tag control information")?;
        if first_vlan.is_none() {
            first_vlan = Some(VlanTag::from_tci(ty, tci));
        }
        n_vlans += 1;
        rest = r2;
        let (r3, t) = wire::u16_(r2, "EtherType after VLAN tag")?;
        r = r3;
        ty = t;
    }
    let msdu_offset = input.len() - rest.len();
    let mut cn_tag = None;
    if ty == ethertype::CN_TAG {
        let (r2, rpid) = wire::u16_(r, "CN-TAG RPID")?;
        cn_tag = Some(CnTag { rpid });
        let (r3, t) = wire::u16_(r2, "EtherType after CN-TAG")?;
        r = r3;
        ty = t;
    }
    Ok((
        r,
        Layout {
            dst: MacAddr(dst),
            src: MacAddr(src),
            n_vlans,
            first_vlan,
            cn_tag,
            ethertype: ty,
            msdu_offset,
            payload_offset: input.len() - r.len(),
        },
    ))
}

fn walk_checked(buf: &[u8]) -> Result<Layout, DecodeError> {
    match walk(buf) {
        Ok((_, l)) => Ok(l),
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(e.into_decode_error(buf)),
        Err(nom::Err::Incomplete(_)) => Err(DecodeError::new(
            buf.len(),
            crate::ErrorKind::Truncated {
                what: "Ethernet header",
                needed: 1,
            },
        )),
    }
}

/// A checked zero-copy view of an Ethernet frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetView<'a> {
    buf: &'a [u8],
    layout: Layout,
}

impl<'a> EthernetView<'a> {
    /// Checks that the header (addresses, all tags, inner EtherType) is complete.
    pub fn new_checked(buf: &'a [u8]) -> Result<Self, DecodeError> {
        Ok(Self {
            buf,
            layout: walk_checked(buf)?,
        })
    }

    pub fn dst(&self) -> MacAddr {
        self.layout.dst
    }
    pub fn src(&self) -> MacAddr {
        self.layout.src
    }
    /// The EtherType after all tags and the CN-TAG.
    pub fn ethertype(&self) -> u16 {
        self.layout.ethertype
    }
    /// The outermost VLAN tag.
    pub fn first_vlan(&self) -> Option<VlanTag> {
        self.layout.first_vlan
    }
    pub fn vlan_count(&self) -> usize {
        self.layout.n_vlans
    }
    /// All VLAN tags, outermost first.
    pub fn vlans(&self) -> impl Iterator<Item = VlanTag> + 'a {
        let tags = self
            .buf
            .get(12..12 + TAG_LEN * self.layout.n_vlans)
            .unwrap_or(&[]);
        tags.chunks_exact(TAG_LEN).filter_map(|c| match c {
            [a, b, c, d] => Some(VlanTag::from_tci(
                u16::from_be_bytes([*a, *b]),
                u16::from_be_bytes([*c, *d]),
            )),
            _ => None,
        })
    }
    pub fn cn_tag(&self) -> Option<CnTag> {
        self.layout.cn_tag
    }
    /// The 802.1Q MSDU: everything after the VLAN tags, starting with the CN-TAG (if any) or the
    /// inner EtherType.
    pub fn msdu(&self) -> &'a [u8] {
        self.buf.get(self.layout.msdu_offset..).unwrap_or(&[])
    }
    /// Everything after the inner EtherType (padding included).
    pub fn payload(&self) -> &'a [u8] {
        self.buf.get(self.layout.payload_offset..).unwrap_or(&[])
    }
    /// Offset of the payload from the start of the frame.
    pub fn payload_offset(&self) -> usize {
        self.layout.payload_offset
    }
    pub fn info(&self) -> FrameInfo {
        FrameInfo {
            dst: self.layout.dst,
            src: self.layout.src,
            ethertype: self.layout.ethertype,
            vlan: self.layout.first_vlan,
            cn_tag: self.layout.cn_tag,
        }
    }
    /// The whole frame.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }
}

/// (src, dst, EtherType, first VLAN tag, CN-TAG) of a frame, without allocating.
pub fn frame_info(frame: &[u8]) -> Result<FrameInfo, DecodeError> {
    Ok(EthernetView::new_checked(frame)?.info())
}

/// An owned Ethernet II frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EthernetFrame {
    pub dst: MacAddr,
    pub src: MacAddr,
    /// VLAN tags, outermost first.
    pub vlans: Vec<VlanTag>,
    /// A CN-TAG after the VLAN tags, kept so that re-encoding is exact.
    pub cn_tag: Option<CnTag>,
    /// The inner EtherType.
    pub ethertype: u16,
    /// Everything after the inner EtherType, padding included.
    pub payload: Vec<u8>,
}

impl EthernetFrame {
    /// An untagged frame.
    pub fn new(dst: MacAddr, src: MacAddr, ethertype: u16, payload: Vec<u8>) -> Self {
        Self {
            dst,
            src,
            vlans: Vec::new(),
            cn_tag: None,
            ethertype,
            payload,
        }
    }

    /// Length of the header (addresses, tags, CN-TAG, EtherType).
    pub fn header_len(&self) -> usize {
        HEADER_LEN + TAG_LEN * (self.vlans.len() + usize::from(self.cn_tag.is_some()))
    }

    /// Appends zeros to the payload until the frame is at least [`MIN_FRAME_LEN`] octets.
    pub fn pad(&mut self) {
        let len = self.header_len() + self.payload.len();
        if len < MIN_FRAME_LEN {
            self.payload
                .resize(self.payload.len() + (MIN_FRAME_LEN - len), 0);
        }
    }

    pub fn info(&self) -> FrameInfo {
        FrameInfo {
            dst: self.dst,
            src: self.src,
            ethertype: self.ethertype,
            vlan: self.vlans.first().copied(),
            cn_tag: self.cn_tag,
        }
    }

    /// Writes the header only (addresses, tags, CN-TAG, EtherType).
    pub fn encode_header(&self, out: &mut BytesMut) {
        out.put_slice(&self.dst.0);
        out.put_slice(&self.src.0);
        for t in &self.vlans {
            t.encode(out);
        }
        if let Some(cn) = self.cn_tag {
            out.put_u16(ethertype::CN_TAG);
            out.put_u16(cn.rpid);
        }
        out.put_u16(self.ethertype);
    }
}

impl Wire for EthernetFrame {
    /// Consumes all of `input`: an Ethernet frame has no length field, its payload is the rest.
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (payload, l) = walk(input)?;
        let view = EthernetView {
            buf: input,
            layout: l,
        };
        Ok((
            &[],
            Self {
                dst: l.dst,
                src: l.src,
                vlans: view.vlans().collect(),
                cn_tag: l.cn_tag,
                ethertype: l.ethertype,
                payload: payload.to_vec(),
            },
        ))
    }

    fn encode(&self, out: &mut BytesMut) {
        out.reserve(self.header_len() + self.payload.len());
        self.encode_header(out);
        out.put_slice(&self.payload);
    }
}

/// Pads `out` with zeros from `frame_start` to at least [`MIN_FRAME_LEN`] octets.
pub fn pad_frame(out: &mut BytesMut, frame_start: usize) {
    let len = out.len().saturating_sub(frame_start);
    if len < MIN_FRAME_LEN {
        wire::put_zeros(out, MIN_FRAME_LEN - len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use proptest::prelude::*;

    const A: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
    const B: MacAddr = MacAddr([2, 0, 0, 0, 0, 9]);

    fn qinq_frame() -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&B.0);
        f.extend_from_slice(&A.0);
        f.extend_from_slice(&[0x88, 0xa8, 0x20, 0x64]); // S-tag PCP 1, VID 100
        f.extend_from_slice(&[0x81, 0x00, 0xb0, 0x0a]); // C-tag PCP 5, DEI, VID 10
        f.extend_from_slice(&[0x22, 0xe9, 0x12, 0x34]); // CN-TAG RPID 0x1234
        f.extend_from_slice(&[0x08, 0x00, 0x45, 0x00]);
        f
    }

    #[test]
    fn golden_tagged_frame() {
        let bytes = qinq_frame();
        let f = EthernetFrame::from_bytes(&bytes).unwrap();
        assert_eq!(f.dst, B);
        assert_eq!(f.src, A);
        assert_eq!(
            f.vlans,
            vec![
                VlanTag {
                    tpid: 0x88a8,
                    pcp: 1,
                    dei: false,
                    vid: 100
                },
                VlanTag {
                    tpid: 0x8100,
                    pcp: 5,
                    dei: true,
                    vid: 10
                }
            ]
        );
        assert_eq!(f.cn_tag, Some(CnTag { rpid: 0x1234 }));
        assert_eq!(f.ethertype, ethertype::IPV4);
        assert_eq!(f.payload, vec![0x45, 0x00]);
        assert_eq!(&f.to_bytes()[..], &bytes[..]);

        let v = EthernetView::new_checked(&bytes).unwrap();
        assert_eq!(v.info(), f.info());
        assert_eq!(v.vlan_count(), 2);
        assert_eq!(v.vlans().collect::<Vec<_>>(), f.vlans);
        assert_eq!(v.msdu(), &bytes[20..]);
        assert_eq!(v.payload(), &[0x45, 0x00]);
        assert_eq!(v.payload_offset(), 26);
        assert_eq!(frame_info(&bytes).unwrap().vlan.unwrap().vid, 100);
    }

    #[test]
    fn untagged_and_padding() {
        let mut f = EthernetFrame::new(B, A, ethertype::ARP, vec![1, 2, 3]);
        f.pad();
        assert_eq!(f.to_bytes().len(), MIN_FRAME_LEN);
        assert_eq!(f.header_len(), 14);
        let back = EthernetFrame::from_bytes(&f.to_bytes()).unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn truncations_name_the_field() {
        let bytes = qinq_frame();
        for n in 0..26 {
            let e = EthernetView::new_checked(&bytes[..n]).unwrap_err();
            assert!(matches!(e.kind, ErrorKind::Truncated { .. }), "{n}: {e}");
            assert!(EthernetFrame::from_bytes(&bytes[..n]).is_err());
        }
        let e = frame_info(&bytes[..17]).unwrap_err();
        assert_eq!(e.offset, 16);
        assert!(matches!(
            e.kind,
            ErrorKind::Truncated {
                what: "EtherType after VLAN tag",
                ..
            }
        ));
    }

    fn arb_tag() -> impl Strategy<Value = VlanTag> {
        (prop::bool::ANY, 0u8..8, any::<bool>(), 0u16..4096).prop_map(|(s, pcp, dei, vid)| {
            VlanTag {
                tpid: if s { ethertype::QINQ } else { ethertype::VLAN },
                pcp,
                dei,
                vid,
            }
        })
    }

    fn arb_frame() -> impl Strategy<Value = EthernetFrame> {
        (
            any::<[u8; 6]>(),
            any::<[u8; 6]>(),
            prop::collection::vec(arb_tag(), 0..4),
            prop::option::of(any::<u16>()),
            any::<u16>().prop_filter("not a tag", |t| {
                !ethertype::is_vlan_tpid(*t) && *t != ethertype::CN_TAG
            }),
            prop::collection::vec(any::<u8>(), 0..100),
        )
            .prop_map(|(d, s, vlans, cn, ethertype, payload)| EthernetFrame {
                dst: MacAddr(d),
                src: MacAddr(s),
                vlans,
                cn_tag: cn.map(|rpid| CnTag { rpid }),
                ethertype,
                payload,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn roundtrip(f in arb_frame()) {
            let bytes = f.to_bytes();
            let back = EthernetFrame::from_bytes(&bytes).unwrap();
            prop_assert_eq!(&back, &f);
            prop_assert_eq!(EthernetView::new_checked(&bytes).unwrap().info(), f.info());
            for n in 0..f.header_len() {
                prop_assert!(EthernetFrame::from_bytes(&bytes[..n]).is_err());
            }
        }

        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..80)) {
            if let Ok(f) = EthernetFrame::from_bytes(&bytes) {
                prop_assert_eq!(&f.to_bytes()[..], &bytes[..]);
            }
            if let Ok(v) = EthernetView::new_checked(&bytes) {
                let _ = (v.info(), v.vlans().count(), v.msdu(), v.payload());
            }
        }
    }
}
