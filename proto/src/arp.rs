//! ARP for IPv4 over Ethernet (RFC 826): requests and replies only.
//!
//! The decoder validates the fixed header (htype 1, ptype 0x0800, hlen 6, plen 4) and the
//! operation (1 request, 2 reply); anything else is an [`ErrorKind::InvalidValue`] naming the
//! field, at its offset. [`Arp::reply_to`] and [`answer_frame`] implement the edge responder
//! (DESIGN.md §3: ARP is answered at the edge from the address plan, never flooded).

use std::net::Ipv4Addr;

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use crate::error::{DecodeError, ErrorKind};
use crate::ethernet::{ethertype, EthernetFrame, EthernetView, VlanTag};
use crate::mac::MacAddr;
use crate::wire::{self, PResult, Wire};

/// Length of an Ethernet/IPv4 ARP packet.
pub const ARP_LEN: usize = 28;
/// Hardware type Ethernet.
pub const HTYPE_ETHERNET: u16 = 1;

/// ARP operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum ArpOp {
    Request,
    Reply,
}

impl ArpOp {
    pub const fn code(self) -> u16 {
        match self {
            Self::Request => 1,
            Self::Reply => 2,
        }
    }
}

/// An Ethernet/IPv4 ARP request or reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Arp {
    pub op: ArpOp,
    pub sender_mac: MacAddr,
    pub sender_ip: Ipv4Addr,
    pub target_mac: MacAddr,
    pub target_ip: Ipv4Addr,
}

impl Arp {
    /// A request for `target_ip` (target MAC zero, as RFC 826 hosts send it).
    pub fn request(sender_mac: MacAddr, sender_ip: Ipv4Addr, target_ip: Ipv4Addr) -> Self {
        Self {
            op: ArpOp::Request,
            sender_mac,
            sender_ip,
            target_mac: MacAddr::ZERO,
            target_ip,
        }
    }

    /// Gratuitous ARP: the sender announces its own address (sender IP = target IP).
    pub fn is_gratuitous(&self) -> bool {
        self.sender_ip == self.target_ip
    }

    /// RFC 5227 probe: a request with an unspecified sender IP (duplicate address detection).
    pub fn is_probe(&self) -> bool {
        self.op == ArpOp::Request && self.sender_ip.is_unspecified()
    }

    /// The reply announcing that `request.target_ip` is at `my_mac`.
    ///
    /// `None` when there is nothing to answer: not a request, a gratuitous announcement, or an
    /// RFC 5227 probe (the prober is normally the address's owner, and a reply would make it
    /// believe its address is taken). Deciding *whether* `my_mac` owns the target IP is the
    /// caller's job (the address plan).
    pub fn reply_to(request: &Arp, my_mac: MacAddr) -> Option<Arp> {
        if request.op != ArpOp::Request || request.is_gratuitous() || request.is_probe() {
            return None;
        }
        Some(Arp {
            op: ArpOp::Reply,
            sender_mac: my_mac,
            sender_ip: request.target_ip,
            target_mac: request.sender_mac,
            target_ip: request.sender_ip,
        })
    }

    /// The Ethernet frame carrying this packet, padded to the minimum frame size: replies go to
    /// the target MAC, requests are broadcast; the source is the sender MAC.
    pub fn to_frame(&self, vlans: &[VlanTag]) -> EthernetFrame {
        let dst = match self.op {
            ArpOp::Request => MacAddr::BROADCAST,
            ArpOp::Reply => self.target_mac,
        };
        let mut f = EthernetFrame::new(
            dst,
            self.sender_mac,
            ethertype::ARP,
            self.to_bytes().to_vec(),
        );
        f.vlans = vlans.to_vec();
        f.pad();
        f
    }

    /// Parses an Ethernet frame carrying ARP (tagged or not; padding after the 28 octets is
    /// ignored). Offsets in errors are from the start of the frame.
    pub fn parse_frame(frame: &[u8]) -> Result<(EthernetView<'_>, Arp), DecodeError> {
        let view = EthernetView::new_checked(frame)?;
        if view.ethertype() != ethertype::ARP {
            return Err(DecodeError::new(
                view.payload_offset().saturating_sub(2),
                ErrorKind::InvalidValue {
                    what: "EtherType (expected ARP 0x0806)",
                    value: u64::from(view.ethertype()),
                },
            ));
        }
        match Arp::decode(view.payload()) {
            Ok((_padding, arp)) => Ok((view, arp)),
            Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(e.into_decode_error(frame)),
            Err(nom::Err::Incomplete(_)) => Err(DecodeError::new(
                frame.len(),
                ErrorKind::Truncated {
                    what: "ARP packet",
                    needed: 1,
                },
            )),
        }
    }
}

/// The edge responder in one call: parses a request frame and builds the reply frame (same VLAN
/// tags, padded), or `Ok(None)` when [`Arp::reply_to`] declines.
pub fn answer_frame(
    request_frame: &[u8],
    my_mac: MacAddr,
) -> Result<Option<BytesMut>, DecodeError> {
    let (view, req) = Arp::parse_frame(request_frame)?;
    let Some(reply) = Arp::reply_to(&req, my_mac) else {
        return Ok(None);
    };
    let vlans: Vec<VlanTag> = view.vlans().collect();
    Ok(Some(reply.to_frame(&vlans).to_bytes()))
}

fn expect<'a>(input: &'a [u8], what: &'static str, want: u64, width: usize) -> PResult<'a, ()> {
    let (rest, v) = match width {
        1 => wire::u8_(input, what).map(|(r, v)| (r, u64::from(v)))?,
        _ => wire::u16_(input, what).map(|(r, v)| (r, u64::from(v)))?,
    };
    if v != want {
        return wire::invalid(input, what, v);
    }
    Ok((rest, ()))
}

impl Wire for Arp {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (r, ()) = expect(input, "ARP hardware type", u64::from(HTYPE_ETHERNET), 2)?;
        let (r, ()) = expect(r, "ARP protocol type", u64::from(ethertype::IPV4), 2)?;
        let (r, ()) = expect(r, "ARP hardware address length", 6, 1)?;
        let (r, ()) = expect(r, "ARP protocol address length", 4, 1)?;
        let (r2, code) = wire::u16_(r, "ARP operation")?;
        let op = match code {
            1 => ArpOp::Request,
            2 => ArpOp::Reply,
            v => return wire::invalid(r, "ARP operation", u64::from(v)),
        };
        let (r, sha) = wire::array::<6>(r2, "ARP sender hardware address")?;
        let (r, spa) = wire::array::<4>(r, "ARP sender protocol address")?;
        let (r, tha) = wire::array::<6>(r, "ARP target hardware address")?;
        let (r, tpa) = wire::array::<4>(r, "ARP target protocol address")?;
        Ok((
            r,
            Arp {
                op,
                sender_mac: MacAddr(sha),
                sender_ip: Ipv4Addr::from(spa),
                target_mac: MacAddr(tha),
                target_ip: Ipv4Addr::from(tpa),
            },
        ))
    }

    fn encode(&self, out: &mut BytesMut) {
        out.reserve(ARP_LEN);
        out.put_u16(HTYPE_ETHERNET);
        out.put_u16(ethertype::IPV4);
        out.put_u8(6);
        out.put_u8(4);
        out.put_u16(self.op.code());
        out.put_slice(&self.sender_mac.0);
        out.put_slice(&self.sender_ip.octets());
        out.put_slice(&self.target_mac.0);
        out.put_slice(&self.target_ip.octets());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HOST: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x01, 0x03, 0x02]);
    const PEER: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x02, 0x00, 0x01]);

    /// A request from 10.1.3.2 (02:00:00:01:03:02) for 10.2.0.1, as Linux sends it, padded.
    fn request_frame() -> Vec<u8> {
        let mut f = hex::decode(concat!(
            "ffffffffffff",
            "020000010302",
            "0806",
            "0001",
            "0800",
            "06",
            "04",
            "0001",
            "020000010302",
            "0a010302",
            "000000000000",
            "0a020001",
        ))
        .unwrap();
        f.resize(60, 0);
        f
    }

    #[test]
    fn golden_request_and_reply() {
        let frame = request_frame();
        let (view, req) = Arp::parse_frame(&frame).unwrap();
        assert_eq!(view.dst(), MacAddr::BROADCAST);
        assert_eq!(
            req,
            Arp::request(HOST, Ipv4Addr::new(10, 1, 3, 2), Ipv4Addr::new(10, 2, 0, 1))
        );
        assert_eq!(&req.to_bytes()[..], &frame[14..42]);
        let reply = Arp::reply_to(&req, PEER).unwrap();
        assert_eq!(reply.op, ArpOp::Reply);
        assert_eq!(reply.sender_mac, PEER);
        assert_eq!(reply.sender_ip, Ipv4Addr::new(10, 2, 0, 1));
        assert_eq!(reply.target_mac, HOST);
        assert_eq!(reply.target_ip, Ipv4Addr::new(10, 1, 3, 2));

        let out = answer_frame(&frame, PEER).unwrap().unwrap();
        let mut want = hex::decode(concat!(
            "020000010302",
            "020000020001",
            "0806",
            "0001",
            "0800",
            "06",
            "04",
            "0002",
            "020000020001",
            "0a020001",
            "020000010302",
            "0a010302",
        ))
        .unwrap();
        want.resize(60, 0);
        assert_eq!(&out[..], &want[..]);
    }

    #[test]
    fn tagged_request_gets_tagged_reply() {
        let req = Arp::request(HOST, Ipv4Addr::new(10, 1, 3, 2), Ipv4Addr::new(10, 2, 0, 1));
        let frame = req.to_frame(&[VlanTag::dot1q(10, 3)]).to_bytes();
        assert_eq!(frame.len(), 60);
        let out = answer_frame(&frame, PEER).unwrap().unwrap();
        let v = EthernetView::new_checked(&out).unwrap();
        assert_eq!(v.first_vlan(), Some(VlanTag::dot1q(10, 3)));
        assert_eq!(v.dst(), HOST);
        assert_eq!(out.len(), 60);
    }

    #[test]
    fn no_reply_to_replies_announcements_probes() {
        let ip = Ipv4Addr::new(10, 1, 3, 2);
        let garp = Arp::request(HOST, ip, ip);
        assert!(Arp::reply_to(&garp, PEER).is_none());
        let probe = Arp::request(HOST, Ipv4Addr::UNSPECIFIED, ip);
        assert!(Arp::reply_to(&probe, PEER).is_none());
        let req = Arp::request(HOST, ip, Ipv4Addr::new(10, 2, 0, 1));
        let rep = Arp::reply_to(&req, PEER).unwrap();
        assert!(Arp::reply_to(&rep, HOST).is_none());
    }

    #[test]
    fn validation_names_field_and_offset() {
        let frame = request_frame();
        let cases: [(usize, u8, usize, &str); 5] = [
            (15, 6, 14, "ARP hardware type"),
            (16, 0x86, 16, "ARP protocol type"),
            (18, 8, 18, "ARP hardware address length"),
            (19, 16, 19, "ARP protocol address length"),
            (21, 3, 20, "ARP operation"),
        ];
        for (pos, val, at, what) in cases {
            let mut f = frame.clone();
            f[pos] = val;
            let e = Arp::parse_frame(&f).unwrap_err();
            let ErrorKind::InvalidValue { what: w, .. } = e.kind else {
                panic!("{e}")
            };
            assert_eq!(w, what);
            assert_eq!(e.offset, at, "{what}");
        }
        let mut f = frame.clone();
        f[13] = 0x00;
        assert!(Arp::parse_frame(&f).is_err());
    }

    #[test]
    fn truncations() {
        let frame = request_frame();
        for n in 0..42 {
            assert!(Arp::parse_frame(&frame[..n]).is_err(), "{n}");
        }
        let pkt = &frame[14..42];
        for n in 0..28 {
            let e = Arp::from_bytes(&pkt[..n]).unwrap_err();
            assert!(matches!(e.kind, ErrorKind::Truncated { .. }));
        }
    }

    fn arb_arp() -> impl Strategy<Value = Arp> {
        (
            any::<bool>(),
            any::<[u8; 6]>(),
            any::<[u8; 4]>(),
            any::<[u8; 6]>(),
            any::<[u8; 4]>(),
        )
            .prop_map(|(req, sm, si, tm, ti)| Arp {
                op: if req { ArpOp::Request } else { ArpOp::Reply },
                sender_mac: MacAddr(sm),
                sender_ip: Ipv4Addr::from(si),
                target_mac: MacAddr(tm),
                target_ip: Ipv4Addr::from(ti),
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn roundtrip(a in arb_arp()) {
            let b = a.to_bytes();
            prop_assert_eq!(b.len(), ARP_LEN);
            prop_assert_eq!(Arp::from_bytes(&b).unwrap(), a);
            let f = a.to_frame(&[]).to_bytes();
            prop_assert_eq!(Arp::parse_frame(&f).unwrap().1, a);
        }

        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(a) = Arp::from_bytes(&bytes) {
                prop_assert_eq!(&a.to_bytes()[..], &bytes[..]);
            }
            let _ = Arp::parse_frame(&bytes);
            let _ = answer_frame(&bytes, PEER);
        }
    }
}
