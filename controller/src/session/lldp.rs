//! A minimal LLDP builder and parser for link probing (the `proto` crate's `lldp` module is
//! still empty; replace this with it once it lands).
//!
//! The probe carries chassis id = `dpid:<16 hex digits>` and port id = the OpenFlow port number
//! in decimal, both with subtype 7 ("locally assigned"), then TTL and End TLVs.

use fabricflow_proto::MacAddr;

use crate::desired::Endpoint;

/// LLDP EtherType.
pub const ETH_TYPE_LLDP: u16 = 0x88cc;
const TLV_END: u8 = 0;
const TLV_CHASSIS_ID: u8 = 1;
const TLV_PORT_ID: u8 = 2;
const TLV_TTL: u8 = 3;
const SUBTYPE_LOCAL: u8 = 7;
const TTL_SECONDS: u16 = 120;

fn push_tlv(out: &mut Vec<u8>, tlv_type: u8, value: &[u8]) {
    // 7-bit type, 9-bit length; our values are far below 512 bytes.
    let len = value.len().min(511) as u16;
    let head = (u16::from(tlv_type) << 9) | len;
    out.extend_from_slice(&head.to_be_bytes());
    out.extend_from_slice(value.get(..usize::from(len)).unwrap_or(value));
}

/// The source MAC of probes from `ep`: locally administered, derived from dpid and port.
fn source_mac(ep: Endpoint) -> MacAddr {
    let d = ep.dpid.to_be_bytes();
    let p = ep.port.to_be_bytes();
    MacAddr([0x06, d[6], d[7], p[1], p[2], p[3]])
}

/// The LLDP frame probing the link behind `ep`.
pub fn build(ep: Endpoint) -> Vec<u8> {
    let mut f = Vec::with_capacity(64);
    f.extend_from_slice(&MacAddr::LLDP_NEAREST_BRIDGE.octets());
    f.extend_from_slice(&source_mac(ep).octets());
    f.extend_from_slice(&ETH_TYPE_LLDP.to_be_bytes());
    let mut chassis = vec![SUBTYPE_LOCAL];
    chassis.extend_from_slice(format!("dpid:{:016x}", ep.dpid).as_bytes());
    push_tlv(&mut f, TLV_CHASSIS_ID, &chassis);
    let mut port = vec![SUBTYPE_LOCAL];
    port.extend_from_slice(ep.port.to_string().as_bytes());
    push_tlv(&mut f, TLV_PORT_ID, &port);
    push_tlv(&mut f, TLV_TTL, &TTL_SECONDS.to_be_bytes());
    push_tlv(&mut f, TLV_END, &[]);
    // Pad to the 60-byte Ethernet minimum.
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f
}

/// The sender of a fabricflow LLDP probe, or `None` for anything else (other LLDP speakers,
/// other EtherTypes, malformed frames). Never panics.
pub fn parse(frame: &[u8]) -> Option<Endpoint> {
    let ethertype = frame.get(12..14)?;
    if ethertype != ETH_TYPE_LLDP.to_be_bytes() {
        return None;
    }
    let mut rest = frame.get(14..)?;
    let mut dpid = None;
    let mut port = None;
    while rest.len() >= 2 {
        let head = u16::from_be_bytes([*rest.first()?, *rest.get(1)?]);
        let t = (head >> 9) as u8;
        let len = usize::from(head & 0x1ff);
        let value = rest.get(2..2 + len)?;
        rest = rest.get(2 + len..)?;
        match t {
            TLV_END => break,
            TLV_CHASSIS_ID => {
                let (sub, v) = value.split_first()?;
                if *sub == SUBTYPE_LOCAL {
                    let s = std::str::from_utf8(v).ok()?;
                    dpid = u64::from_str_radix(s.strip_prefix("dpid:")?, 16).ok();
                }
            }
            TLV_PORT_ID => {
                let (sub, v) = value.split_first()?;
                if *sub == SUBTYPE_LOCAL {
                    port = std::str::from_utf8(v).ok()?.parse().ok();
                }
            }
            _ => {}
        }
    }
    Some(Endpoint {
        dpid: dpid?,
        port: port?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn roundtrip() {
        let ep = Endpoint {
            dpid: 0x00ff_0000_0000_0101,
            port: 3,
        };
        let f = build(ep);
        assert_eq!(f.len(), 60);
        assert_eq!(parse(&f), Some(ep));
    }

    #[test]
    fn other_frames_are_none() {
        assert_eq!(parse(&[0u8; 60]), None);
        assert_eq!(parse(&[]), None);
        let mut f = build(Endpoint { dpid: 1, port: 1 });
        f.truncate(20);
        assert_eq!(parse(&f), None);
    }

    proptest! {
        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse(&data);
        }
    }
}
