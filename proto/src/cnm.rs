//! IEEE 802.1Qau Congestion Notification Message (CNM), exactly as laid out in `QCN.md`.
//!
//! ```text
//! octets  field
//! 0-1     Version (bits 15..12) | ReservedV (11..6) | QntzFb (5..0)
//! 2-9     CPID
//! 10-11   cnmQOffset (i16)
//! 12-13   cnmQDelta (i16)
//! 14-15   Encapsulated priority
//! 16-21   Encapsulated destination MAC
//! 22-23   Encapsulated MSDU length n (0..=64)
//! 24..    Encapsulated MSDU (n octets)
//! ```
//!
//! Decoding rejects, each with its own error and the offset of the offending field:
//! - version ≠ 0: [`ErrorKind::InvalidValue`] `what = `[`WHAT_VERSION`], at offset 0;
//! - MSDU length > 64: [`ErrorKind::BadLength`] `what = `[`WHAT_MSDU_LEN`], at offset 22;
//! - MSDU extending beyond the input: [`ErrorKind::Truncated`] `what = `[`WHAT_MSDU`], at 24;
//! - PDU shorter than its 24-octet header: [`ErrorKind::Truncated`] naming the cut field.
//!
//! **Reserved bits**: the 6 ReservedV bits are transmitted as 0 by fabricflow but kept verbatim
//! in [`Cnm::reserved`] on decode, so `encode(decode(b)) == b` holds for every accepted `b`, a
//! future sender's use of those bits survives a relay, and tests can compare bytes exactly.
//! Likewise the 13 low bits of the encapsulated priority field are kept in
//! [`Cnm::encap_priority`] (the raw 16 bits).
//!
//! The encapsulated priority's layout is not certain from the sources fabricflow has (QCN.md:
//! "3-bit PCP, likely in the top bits"). fabricflow writes the sampled PCP in bits 15..13 and
//! reads it from there ([`Cnm::encap_pcp`]); decisions never depend on it.

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use crate::error::{DecodeError, ErrorKind};
use crate::ethernet::{ethertype, pad_frame, EthernetView, FrameInfo, VlanTag};
use crate::mac::MacAddr;
use crate::wire::{self, PResult, Wire};

/// Octets before the encapsulated MSDU.
pub const HEADER_LEN: usize = 24;
/// Maximum encapsulated MSDU length.
pub const MAX_MSDU_LEN: usize = 64;
/// PCP of a CNM sent into a VLAN (802.1Qau default CNM priority).
pub const CNM_PCP: u8 = 6;
/// Largest quantised feedback (6 bits).
pub const MAX_QNTZ_FB: u8 = 63;

/// `what` of the version error.
pub const WHAT_VERSION: &str = "CNM version";
/// `what` of the MSDU-length-over-64 error.
pub const WHAT_MSDU_LEN: &str = "CNM encapsulated MSDU length";
/// `what` of the MSDU-beyond-the-frame error.
pub const WHAT_MSDU: &str = "CNM encapsulated MSDU";

/// Congestion point identifier: 8 octets, unique per CP. fabricflow's convention is the switch
/// MAC followed by the 16-bit port (queue) index, see [`Cpid::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize)]
pub struct Cpid(pub [u8; 8]);

impl Cpid {
    /// `mac` (6 octets) then `port_index` big-endian.
    pub fn new(mac: MacAddr, port_index: u16) -> Self {
        let m = mac.0;
        let p = port_index.to_be_bytes();
        Cpid([m[0], m[1], m[2], m[3], m[4], m[5], p[0], p[1]])
    }
    /// The MAC part (meaningful for CPIDs built by [`Cpid::new`]).
    pub fn mac(&self) -> MacAddr {
        let c = self.0;
        MacAddr([c[0], c[1], c[2], c[3], c[4], c[5]])
    }
    /// The port index part.
    pub fn port_index(&self) -> u16 {
        u16::from_be_bytes([self.0[6], self.0[7]])
    }
    pub fn to_u64(&self) -> u64 {
        u64::from_be_bytes(self.0)
    }
}

/// A CNM PDU (the part after EtherType 0x22E7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cnm {
    /// The 6 ReservedV bits (0 on transmit; kept on receive, see the module docs).
    pub reserved: u8,
    /// Quantised |Fb|, 0..=63. Encoding clamps larger values to 63.
    pub qntz_fb: u8,
    pub cpid: Cpid,
    /// Queue offset at the sample (informational).
    pub q_offset: i16,
    /// Queue change since the previous sample (informational).
    pub q_delta: i16,
    /// Raw encapsulated priority field (PCP in bits 15..13, see [`Cnm::encap_pcp`]).
    pub encap_priority: u16,
    /// DA of the sampled frame.
    pub encap_da: MacAddr,
    /// First octets (at most 64) of the sampled frame's MSDU. Encoding truncates to 64.
    pub encap_msdu: Vec<u8>,
}

impl Cnm {
    /// The sampled frame's PCP, from the top 3 bits of the encapsulated priority.
    pub fn encap_pcp(&self) -> u8 {
        (self.encap_priority >> 13) as u8
    }

    /// Encapsulated priority field for a PCP.
    pub const fn priority_field(pcp: u8) -> u16 {
        ((pcp & 0x7) as u16) << 13
    }

    /// Length of the encoded PDU.
    pub fn len(&self) -> usize {
        HEADER_LEN + self.encap_msdu.len().min(MAX_MSDU_LEN)
    }

    /// Never true: a PDU has at least its 24-octet header.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Builds the complete CNM Ethernet frame for a frame sampled at a congestion point.
    ///
    /// DA = the sample's source, SA = `cp_mac`. If the sample is VLAN-tagged, the CNM carries
    /// one tag with the outermost tag's TPID and VID and PCP [`CNM_PCP`]; the encapsulated
    /// priority is the sample's (outermost) PCP, 0 when untagged. The encapsulated DA is the
    /// sample's DA, and the encapsulated MSDU its first ≤64 octets after the VLAN tags (starting
    /// with the CN-TAG, when present, so the reaction point can read the RPID, else with the
    /// EtherType). The frame is padded to 60 octets. `qntz_fb` is clamped to 63.
    ///
    /// Fails only if `sampled` does not hold a complete Ethernet header.
    pub fn for_sampled_frame(
        sampled: &[u8],
        cp_mac: MacAddr,
        cpid: Cpid,
        qntz_fb: u8,
        q_offset: i16,
        q_delta: i16,
    ) -> Result<BytesMut, DecodeError> {
        let view = EthernetView::new_checked(sampled)?;
        let msdu = view.msdu();
        let cnm = Cnm {
            reserved: 0,
            qntz_fb: qntz_fb.min(MAX_QNTZ_FB),
            cpid,
            q_offset,
            q_delta,
            encap_priority: Cnm::priority_field(view.first_vlan().map_or(0, |t| t.pcp)),
            encap_da: view.dst(),
            encap_msdu: msdu.get(..MAX_MSDU_LEN).unwrap_or(msdu).to_vec(),
        };
        let vlan = view.first_vlan().map(|t| VlanTag {
            tpid: t.tpid,
            pcp: CNM_PCP,
            dei: false,
            vid: t.vid,
        });
        Ok(cnm.to_frame(view.src(), cp_mac, vlan))
    }

    /// The Ethernet frame carrying this CNM (optionally tagged), padded to 60 octets.
    pub fn to_frame(&self, dst: MacAddr, src: MacAddr, vlan: Option<VlanTag>) -> BytesMut {
        let mut out = BytesMut::with_capacity(18 + self.len().max(46));
        out.put_slice(&dst.0);
        out.put_slice(&src.0);
        if let Some(t) = vlan {
            out.put_u16(t.tpid);
            out.put_u16(t.tci());
        }
        out.put_u16(ethertype::CNM);
        self.encode(&mut out);
        pad_frame(&mut out, 0);
        out
    }

    /// Parses a CNM Ethernet frame (tagged or not). Octets after the PDU (padding) are ignored.
    /// Errors carry offsets from the start of the frame; a frame whose EtherType is not 0x22E7 is
    /// an [`ErrorKind::InvalidValue`] at the EtherType.
    pub fn parse_frame(frame: &[u8]) -> Result<(FrameInfo, Cnm), DecodeError> {
        let view = EthernetView::new_checked(frame)?;
        if view.ethertype() != ethertype::CNM {
            return Err(DecodeError::new(
                view.payload_offset().saturating_sub(2),
                ErrorKind::InvalidValue {
                    what: "EtherType (expected CNM 0x22E7)",
                    value: u64::from(view.ethertype()),
                },
            ));
        }
        match Cnm::decode(view.payload()) {
            Ok((_padding, cnm)) => Ok((view.info(), cnm)),
            Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(e.into_decode_error(frame)),
            Err(nom::Err::Incomplete(_)) => Err(DecodeError::new(
                frame.len(),
                ErrorKind::Truncated {
                    what: "CNM PDU",
                    needed: 1,
                },
            )),
        }
    }
}

impl Wire for Cnm {
    /// Reads one PDU; octets after the encapsulated MSDU (padding) are returned unconsumed.
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (r, first) = wire::u16_(input, "CNM version/QntzFb")?;
        let version = first >> 12;
        if version != 0 {
            return wire::invalid(input, WHAT_VERSION, u64::from(version));
        }
        let (r, cpid) = wire::array::<8>(r, "CNM CPID")?;
        let (r, q_offset) = wire::u16_(r, "CNM cnmQOffset")?;
        let (r, q_delta) = wire::u16_(r, "CNM cnmQDelta")?;
        let (r, encap_priority) = wire::u16_(r, "CNM encapsulated priority")?;
        let (r, encap_da) = wire::array::<6>(r, "CNM encapsulated destination")?;
        let (r2, n) = wire::u16_(r, "CNM encapsulated MSDU length")?;
        let n = usize::from(n);
        if n > MAX_MSDU_LEN {
            return wire::bad_length(r, WHAT_MSDU_LEN, n, "exceeds 64 octets");
        }
        if r2.len() < n {
            return wire::truncated(r2, WHAT_MSDU, n - r2.len());
        }
        let (rest, msdu) = wire::take(r2, n, WHAT_MSDU)?;
        Ok((
            rest,
            Cnm {
                reserved: ((first >> 6) & 0x3f) as u8,
                qntz_fb: (first & 0x3f) as u8,
                cpid: Cpid(cpid),
                q_offset: q_offset as i16,
                q_delta: q_delta as i16,
                encap_priority,
                encap_da: MacAddr(encap_da),
                encap_msdu: msdu.to_vec(),
            },
        ))
    }

    fn encode(&self, out: &mut BytesMut) {
        let msdu = self
            .encap_msdu
            .get(..MAX_MSDU_LEN)
            .unwrap_or(&self.encap_msdu);
        out.reserve(HEADER_LEN + msdu.len());
        out.put_u16(
            (u16::from(self.reserved & 0x3f) << 6) | u16::from(self.qntz_fb.min(MAX_QNTZ_FB)),
        );
        out.put_slice(&self.cpid.0);
        out.put_i16(self.q_offset);
        out.put_i16(self.q_delta);
        out.put_u16(self.encap_priority);
        out.put_slice(&self.encap_da.0);
        out.put_u16(msdu.len() as u16);
        out.put_slice(msdu);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SRC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
    const DST: MacAddr = MacAddr([2, 0, 0, 0, 0, 9]);
    const CP: MacAddr = MacAddr([2, 0, 0, 0, 1, 7]);

    /// 28 octets of a sampled MSDU: EtherType IPv4 + the first 26 octets of an IPv4/UDP header.
    fn msdu28() -> Vec<u8> {
        hex::decode("08004500002e1c4640004011d66d0a0000010a000009c0001389001a").unwrap()
    }

    /// QCN.md's example, completed with a concrete 28-octet MSDU.
    fn qcn_md_example() -> Vec<u8> {
        let mut v = hex::decode(concat!(
            "020000000001",     // DA = source of the sampled frame
            "020000000107",     // SA = CP
            "8100c00a",         // 802.1Q, PCP 6, VID 10
            "22e7",             // CNM
            "002a",             // version 0, QntzFb 42
            "0200000001070000", // CPID
            "00300005",         // cnmQOffset 48, cnmQDelta 5
            "0000",             // encapsulated priority
            "020000000009",     // encapsulated DA
            "001c",             // encapsulated MSDU length 28
        ))
        .unwrap();
        v.extend_from_slice(&msdu28());
        v
    }

    /// The frame whose sampling produces the example: tagged VID 10, PCP 0, 28-octet MSDU.
    fn sampled() -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&DST.0);
        v.extend_from_slice(&SRC.0);
        v.extend_from_slice(&[0x81, 0x00, 0x00, 0x0a]);
        v.extend_from_slice(&msdu28());
        v
    }

    #[test]
    fn golden_qcn_md_example() {
        let bytes = qcn_md_example();
        assert_eq!(bytes.len(), 70);
        let (info, cnm) = Cnm::parse_frame(&bytes).unwrap();
        assert_eq!(info.dst, SRC);
        assert_eq!(info.src, CP);
        assert_eq!(info.vlan, Some(VlanTag::dot1q(10, 6)));
        assert_eq!(cnm.qntz_fb, 42);
        assert_eq!(cnm.reserved, 0);
        assert_eq!(cnm.cpid, Cpid::new(CP, 0));
        assert_eq!(cnm.cpid.mac(), CP);
        assert_eq!(cnm.cpid.port_index(), 0);
        assert_eq!((cnm.q_offset, cnm.q_delta), (48, 5));
        assert_eq!(cnm.encap_pcp(), 0);
        assert_eq!(cnm.encap_da, DST);
        assert_eq!(cnm.encap_msdu, msdu28());
        assert_eq!(&cnm.to_bytes()[..], &bytes[18..]);

        let built = Cnm::for_sampled_frame(&sampled(), CP, Cpid::new(CP, 0), 42, 48, 5).unwrap();
        assert_eq!(&built[..], &bytes[..]);
    }

    #[test]
    fn untagged_minimal_is_padded() {
        let mut s = Vec::new();
        s.extend_from_slice(&DST.0);
        s.extend_from_slice(&SRC.0);
        s.extend_from_slice(&[0x88, 0xb5]); // local experimental EtherType, empty payload
        let f = Cnm::for_sampled_frame(&s, CP, Cpid::new(CP, 3), 99, -7, -1).unwrap();
        assert_eq!(f.len(), 60);
        assert_eq!(&f[40..], &[0u8; 20][..]); // 14 + 24 + 2 MSDU octets, then zeros
        let (info, cnm) = Cnm::parse_frame(&f).unwrap();
        assert_eq!(info.vlan, None);
        assert_eq!(info.dst, SRC);
        assert_eq!(cnm.qntz_fb, 63);
        assert_eq!(cnm.encap_msdu, vec![0x88, 0xb5]);
        assert_eq!((cnm.q_offset, cnm.q_delta), (-7, -1));
        assert_eq!(cnm.cpid.port_index(), 3);
        // Untagged with n = 0 is 38 octets before padding (QCN.md).
        let c = Cnm {
            encap_msdu: vec![],
            ..cnm
        };
        let mut b = BytesMut::new();
        b.put_slice(&[0; 12]);
        b.put_u16(ethertype::CNM);
        c.encode(&mut b);
        assert_eq!(b.len(), 38);
    }

    #[test]
    fn sample_with_pcp_and_cn_tag() {
        let mut s = Vec::new();
        s.extend_from_slice(&DST.0);
        s.extend_from_slice(&SRC.0);
        s.extend_from_slice(&[0x81, 0x00, 0xa0, 0x14]); // PCP 5, VID 20
        s.extend_from_slice(&[0x22, 0xe9, 0xbe, 0xef]); // CN-TAG
        s.extend_from_slice(&[0x08, 0x00]);
        s.extend_from_slice(&[0x45; 80]);
        let f = Cnm::for_sampled_frame(&s, CP, Cpid::new(CP, 1), 1, 0, 0).unwrap();
        let (info, cnm) = Cnm::parse_frame(&f).unwrap();
        assert_eq!(info.vlan, Some(VlanTag::dot1q(20, 6)));
        assert_eq!(cnm.encap_pcp(), 5);
        assert_eq!(cnm.encap_priority, 0xa000);
        assert_eq!(cnm.encap_msdu.len(), 64);
        assert_eq!(&cnm.encap_msdu[..6], &[0x22, 0xe9, 0xbe, 0xef, 0x08, 0x00]);
        assert_eq!(f.len(), 18 + 24 + 64);
    }

    #[test]
    fn reserved_bits_are_kept() {
        let mut b = qcn_md_example();
        b[18] = 0x0f; // reserved bits 11..8 set
        b[19] = 0xea; // reserved bits 7..6 set, QntzFb 42
        let (_, cnm) = Cnm::parse_frame(&b).unwrap();
        assert_eq!(cnm.reserved, 0x3f);
        assert_eq!(cnm.qntz_fb, 42);
        assert_eq!(&cnm.to_bytes()[..], &b[18..]);
    }

    #[test]
    fn distinct_errors_with_offsets() {
        let good = qcn_md_example();
        // Version 1.
        let mut b = good.clone();
        b[18] = 0x10;
        let e = Cnm::parse_frame(&b).unwrap_err();
        assert_eq!(e.offset, 18);
        assert_eq!(
            e.kind,
            ErrorKind::InvalidValue {
                what: WHAT_VERSION,
                value: 1
            }
        );
        // MSDU length 65.
        let mut b = good.clone();
        b[41] = 65;
        b.resize(200, 0);
        let e = Cnm::parse_frame(&b).unwrap_err();
        assert_eq!(e.offset, 40);
        assert!(matches!(
            e.kind,
            ErrorKind::BadLength {
                what: WHAT_MSDU_LEN,
                length: 65,
                ..
            }
        ));
        // MSDU beyond the frame.
        let mut b = good.clone();
        b[41] = 40;
        let e = Cnm::parse_frame(&b).unwrap_err();
        assert_eq!(e.offset, 42);
        assert_eq!(
            e.kind,
            ErrorKind::Truncated {
                what: WHAT_MSDU,
                needed: 12
            }
        );
        // Truncated PDU header.
        let e = Cnm::parse_frame(&good[..25]).unwrap_err();
        assert_eq!(e.offset, 20);
        assert!(matches!(
            e.kind,
            ErrorKind::Truncated {
                what: "CNM CPID",
                ..
            }
        ));
        // Not a CNM.
        let mut b = good.clone();
        b[17] = 0xe9;
        let e = Cnm::parse_frame(&b).unwrap_err();
        assert_eq!(e.offset, 20); // a CN-TAG now; the EtherType is read after it
        let mut b = good;
        b[16] = 0x08;
        b[17] = 0x00;
        assert_eq!(Cnm::parse_frame(&b).unwrap_err().offset, 16);
    }

    #[test]
    fn every_truncation_fails() {
        let good = qcn_md_example();
        for n in 0..good.len() {
            assert!(Cnm::parse_frame(&good[..n]).is_err(), "{n}");
        }
        let pdu = &good[18..];
        for n in 0..pdu.len() {
            let e = Cnm::from_bytes(&pdu[..n]).unwrap_err();
            assert!(matches!(e.kind, ErrorKind::Truncated { .. }), "{n}: {e}");
        }
        assert!(Cnm::for_sampled_frame(&sampled()[..13], CP, Cpid::default(), 1, 0, 0).is_err());
    }

    fn arb_cnm() -> impl Strategy<Value = Cnm> {
        (
            0u8..64,
            0u8..64,
            any::<[u8; 8]>(),
            any::<i16>(),
            any::<i16>(),
            any::<u16>(),
            any::<[u8; 6]>(),
            prop::collection::vec(any::<u8>(), 0..=64),
        )
            .prop_map(
                |(reserved, qntz_fb, cpid, q_offset, q_delta, pri, da, msdu)| Cnm {
                    reserved,
                    qntz_fb,
                    cpid: Cpid(cpid),
                    q_offset,
                    q_delta,
                    encap_priority: pri,
                    encap_da: MacAddr(da),
                    encap_msdu: msdu,
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn roundtrip(c in arb_cnm(), tagged in any::<bool>(), vid in 0u16..4096) {
            let b = c.to_bytes();
            prop_assert_eq!(b.len(), c.len());
            prop_assert_eq!(&Cnm::from_bytes(&b).unwrap(), &c);
            let vlan = tagged.then_some(VlanTag::dot1q(vid, CNM_PCP));
            let f = c.to_frame(MacAddr(c.encap_da.0), CP, vlan);
            prop_assert!(f.len() >= 60);
            let (info, back) = Cnm::parse_frame(&f).unwrap();
            prop_assert_eq!(back, c);
            prop_assert_eq!(info.vlan, vlan);
            for n in 0..b.len() {
                prop_assert!(Cnm::from_bytes(&b[..n]).is_err());
            }
        }

        #[test]
        fn sampled_roundtrip(payload in prop::collection::vec(any::<u8>(), 0..200),
                             tag in prop::option::of((0u8..8, 0u16..4096)),
                             fb in any::<u8>(), qo in any::<i16>(), qd in any::<i16>()) {
            let mut s = Vec::new();
            s.extend_from_slice(&DST.0);
            s.extend_from_slice(&SRC.0);
            if let Some((pcp, vid)) = tag {
                s.extend_from_slice(&[0x81, 0x00]);
                s.extend_from_slice(&VlanTag::dot1q(vid, pcp).tci().to_be_bytes());
            }
            s.extend_from_slice(&[0x08, 0x00]);
            s.extend_from_slice(&payload);
            let f = Cnm::for_sampled_frame(&s, CP, Cpid::new(CP, 9), fb, qo, qd).unwrap();
            let (info, c) = Cnm::parse_frame(&f).unwrap();
            prop_assert_eq!(info.dst, SRC);
            prop_assert_eq!(info.src, CP);
            prop_assert_eq!(info.vlan.map(|t| (t.pcp, t.vid)), tag.map(|(_, v)| (CNM_PCP, v)));
            prop_assert_eq!(c.encap_pcp(), tag.map_or(0, |(p, _)| p));
            prop_assert_eq!(c.qntz_fb, fb.min(63));
            let msdu_at = if tag.is_some() { 16 } else { 12 };
            let n = (s.len() - msdu_at).min(64);
            prop_assert_eq!(&c.encap_msdu[..], &s[msdu_at..msdu_at + n]);
        }

        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..120)) {
            if let Ok(c) = Cnm::from_bytes(&bytes) {
                prop_assert_eq!(&c.to_bytes()[..], &bytes[..]);
            }
            let _ = Cnm::parse_frame(&bytes);
            let _ = Cnm::for_sampled_frame(&bytes, CP, Cpid::default(), 1, 0, 0);
        }
    }
}
