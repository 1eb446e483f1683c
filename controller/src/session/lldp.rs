//! Link probing with LLDP: the frame the controller sends out of each fabric port and the
//! reading of what a neighbour received. The wire format is `fabricflow_proto::lldp`'s
//! [`TopologyProbe`]: chassis id `dpid:<16 hex digits>` and the OpenFlow port number in decimal,
//! both locally assigned, then TTL and End.

use fabricflow_proto::lldp::{ChassisStyle, TopologyProbe};
use fabricflow_proto::MacAddr;

use crate::desired::Endpoint;

/// LLDP EtherType.
pub const ETH_TYPE_LLDP: u16 = 0x88cc;
/// Long enough to outlive several probe periods; the controller, not the TTL, decides failure.
const TTL_SECONDS: u16 = 120;

/// The source MAC of probes from `ep`: locally administered, derived from dpid and port.
fn source_mac(ep: Endpoint) -> MacAddr {
    let d = ep.dpid.to_be_bytes();
    let p = ep.port.to_be_bytes();
    MacAddr([0x06, d[6], d[7], p[1], p[2], p[3]])
}

/// The LLDP frame (padded to 60 octets) probing the link behind `ep`.
pub fn build(ep: Endpoint) -> Vec<u8> {
    let probe = TopologyProbe {
        dpid: ep.dpid,
        port: ep.port,
        ttl: TTL_SECONDS,
        system_name: None,
    };
    probe
        .to_frame(source_mac(ep), ChassisStyle::DpidString)
        .to_vec()
}

/// The sender of a fabricflow LLDP probe, or `None` for anything else (other LLDP speakers,
/// other EtherTypes, malformed frames). Never panics.
pub fn parse(frame: &[u8]) -> Option<Endpoint> {
    let (_, probe) = TopologyProbe::parse_frame(frame).ok()??;
    Some(Endpoint {
        dpid: probe.dpid,
        port: probe.port,
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
