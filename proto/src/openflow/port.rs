//! Ports: `ofp_port` (64 bytes), the reserved port numbers, PORT_MOD and PORT_STATUS bodies.

use std::fmt;

use bytes::BufMut;
use serde::{Serialize, Serializer};

use super::layout::{ofp_struct, wire_enum, FixedField};
use crate::wire::{self, PResult};
use crate::MacAddr;

// ---- reserved port numbers (ofp_port_no) -------------------------------------------------

/// Maximum number of physical and logical switch ports.
pub const OFPP_MAX: u32 = 0xffff_ff00;
/// Send the packet out the input port.
pub const OFPP_IN_PORT: u32 = 0xffff_fff8;
/// Submit the packet to the first flow table (packet-out only).
pub const OFPP_TABLE: u32 = 0xffff_fff9;
/// Forward using the non-OpenFlow pipeline.
pub const OFPP_NORMAL: u32 = 0xffff_fffa;
/// Flood using the non-OpenFlow pipeline.
pub const OFPP_FLOOD: u32 = 0xffff_fffb;
/// All standard ports except the input port.
pub const OFPP_ALL: u32 = 0xffff_fffc;
/// Send to the controller.
pub const OFPP_CONTROLLER: u32 = 0xffff_fffd;
/// The local openflow "port".
pub const OFPP_LOCAL: u32 = 0xffff_fffe;
/// Wildcard port (no port).
pub const OFPP_ANY: u32 = 0xffff_ffff;

/// Name of a reserved port number, as `ovs-ofctl` prints it.
pub fn reserved_port_name(port: u32) -> Option<&'static str> {
    Some(match port {
        OFPP_IN_PORT => "IN_PORT",
        OFPP_TABLE => "TABLE",
        OFPP_NORMAL => "NORMAL",
        OFPP_FLOOD => "FLOOD",
        OFPP_ALL => "ALL",
        OFPP_CONTROLLER => "CONTROLLER",
        OFPP_LOCAL => "LOCAL",
        OFPP_ANY => "ANY",
        _ => return None,
    })
}

/// Displays a port number: reserved names (`LOCAL`, `ANY`, …) or the decimal number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortNo(pub u32);

impl fmt::Display for PortNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match reserved_port_name(self.0) {
            Some(n) => f.write_str(n),
            None => write!(f, "{}", self.0),
        }
    }
}

/// `ofp_port_config` bits.
pub mod config {
    pub const PORT_DOWN: u32 = 1 << 0;
    pub const NO_RECV: u32 = 1 << 2;
    pub const NO_FWD: u32 = 1 << 5;
    pub const NO_PACKET_IN: u32 = 1 << 6;
}

/// `ofp_port_state` bits.
pub mod state {
    pub const LINK_DOWN: u32 = 1 << 0;
    pub const BLOCKED: u32 = 1 << 1;
    pub const LIVE: u32 = 1 << 2;
}

/// `ofp_port_features` bits.
pub mod features {
    pub const F_10MB_HD: u32 = 1 << 0;
    pub const F_10MB_FD: u32 = 1 << 1;
    pub const F_100MB_HD: u32 = 1 << 2;
    pub const F_100MB_FD: u32 = 1 << 3;
    pub const F_1GB_HD: u32 = 1 << 4;
    pub const F_1GB_FD: u32 = 1 << 5;
    pub const F_10GB_FD: u32 = 1 << 6;
    pub const F_40GB_FD: u32 = 1 << 7;
    pub const F_100GB_FD: u32 = 1 << 8;
    pub const F_1TB_FD: u32 = 1 << 9;
    pub const F_OTHER: u32 = 1 << 10;
    pub const F_COPPER: u32 = 1 << 11;
    pub const F_FIBER: u32 = 1 << 12;
    pub const F_AUTONEG: u32 = 1 << 13;
    pub const F_PAUSE: u32 = 1 << 14;
    pub const F_PAUSE_ASYM: u32 = 1 << 15;
}

// ---- port name ----------------------------------------------------------------------------

/// The 16-byte, NUL-padded port name, kept byte for byte (so any name a switch sends
/// re-encodes exactly). Displays and serializes as the text before the first NUL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortName(pub [u8; 16]);

impl PortName {
    /// Builds a name from text, truncated to 15 bytes so a terminating NUL always fits.
    pub fn new(name: &str) -> Self {
        let mut out = [0u8; 16];
        for (o, b) in out.iter_mut().zip(name.bytes().take(15)) {
            *o = b;
        }
        PortName(out)
    }

    /// The name up to the first NUL (lossy UTF-8).
    pub fn as_string(&self) -> String {
        let end = self.0.iter().position(|b| *b == 0).unwrap_or(self.0.len());
        String::from_utf8_lossy(self.0.get(..end).unwrap_or_default()).into_owned()
    }
}

impl From<&str> for PortName {
    fn from(s: &str) -> Self {
        PortName::new(s)
    }
}

/// Control characters are escaped: a name comes from the switch, and a raw newline in it would
/// split one printed message (or log line) into two.
impl fmt::Display for PortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.as_string().chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                fmt::Write::write_char(f, c)?;
            }
        }
        Ok(())
    }
}

impl FixedField for PortName {
    const SIZE: usize = 16;
    fn read<'a>(input: &'a [u8], what: &'static str) -> PResult<'a, Self> {
        let (i, name) = wire::array::<16>(input, what)?;
        Ok((i, PortName(name)))
    }
    fn write<B: BufMut>(&self, out: &mut B) {
        out.put_slice(&self.0);
    }
}

impl Serialize for PortName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.as_string())
    }
}

// ---- ofp_port -----------------------------------------------------------------------------

ofp_struct! {
    /// `ofp_port`: the description of one port (64 bytes).
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct Port("port", 64 bytes) {
        pub port_no: u32,
        pad: [u8; 4],
        pub hw_addr: MacAddr,
        pad2: [u8; 2],
        pub name: PortName,
        /// `config::*` bits.
        pub config: u32,
        /// `state::*` bits.
        pub state: u32,
        /// `features::*` bits: current, advertised, supported, advertised by peer.
        pub curr: u32,
        pub advertised: u32,
        pub supported: u32,
        pub peer: u32,
        /// Current and maximum bit rate, in kbps.
        pub curr_speed: u32,
        pub max_speed: u32,
    }
}

/// Wire size of `ofp_port`.
pub const PORT_LEN: usize = 64;

impl Port {
    /// A port with the given number, address and name; all flags zero.
    pub fn new(port_no: u32, hw_addr: MacAddr, name: &str) -> Self {
        Port {
            port_no,
            hw_addr,
            name: PortName::new(name),
            ..Port::default()
        }
    }

    pub fn is_down(&self) -> bool {
        self.config & config::PORT_DOWN != 0 || self.state & state::LINK_DOWN != 0
    }
}

impl fmt::Display for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}({}): addr:{} config:{:#x} state:{:#x} speed:{}/{}kbps",
            PortNo(self.port_no),
            self.name,
            self.hw_addr,
            self.config,
            self.state,
            self.curr_speed,
            self.max_speed
        )
    }
}

// ---- PORT_MOD -----------------------------------------------------------------------------

ofp_struct! {
    /// OFPT_PORT_MOD body (32 bytes after the header).
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct PortMod("port_mod", 32 bytes) {
        pub port_no: u32,
        pad: [u8; 4],
        pub hw_addr: MacAddr,
        pad2: [u8; 2],
        /// New `config::*` bits, applied where `mask` has a 1.
        pub config: u32,
        pub mask: u32,
        /// `features::*` to advertise; 0 leaves advertisement unchanged.
        pub advertise: u32,
        pad3: [u8; 4],
    }
}

impl PortMod {
    /// Sets or clears `config::PORT_DOWN` on a port.
    pub fn set_down(port_no: u32, hw_addr: MacAddr, down: bool) -> Self {
        PortMod {
            port_no,
            hw_addr,
            config: if down { config::PORT_DOWN } else { 0 },
            mask: config::PORT_DOWN,
            advertise: 0,
        }
    }
}

impl fmt::Display for PortMod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "port:{} addr:{} config:{:#x} mask:{:#x} advertise:{:#x}",
            PortNo(self.port_no),
            self.hw_addr,
            self.config,
            self.mask,
            self.advertise
        )
    }
}

// ---- PORT_STATUS --------------------------------------------------------------------------

wire_enum! {
    /// `ofp_port_reason`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
    pub enum PortReason: u8 {
        #[default]
        Add = 0 => "ADD",
        Delete = 1 => "DEL",
        Modify = 2 => "MOD",
        _ => Other => "reason",
    }
}

ofp_struct! {
    /// OFPT_PORT_STATUS body: reason, 7 pad bytes, `ofp_port` (72 bytes).
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct PortStatus("port_status", 72 bytes) {
        pub reason: PortReason,
        pad: [u8; 7],
        pub port: Port,
    }
}

impl fmt::Display for PortStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.reason, self.port)
    }
}

// ---- tests --------------------------------------------------------------------------------

#[cfg(test)]
pub(crate) mod arb {
    use super::*;
    use proptest::prelude::*;

    pub fn any_mac() -> impl Strategy<Value = MacAddr> {
        any::<[u8; 6]>().prop_map(MacAddr)
    }

    pub fn any_port_no() -> impl Strategy<Value = u32> {
        prop_oneof![
            0u32..64,
            any::<u32>(),
            Just(OFPP_LOCAL),
            Just(OFPP_CONTROLLER),
            Just(OFPP_ANY),
            Just(OFPP_IN_PORT),
        ]
    }

    pub fn any_port() -> impl Strategy<Value = Port> {
        (
            any_port_no(),
            any_mac(),
            any::<[u8; 16]>(),
            any::<[u32; 2]>(),
            any::<[u32; 4]>(),
            any::<[u32; 2]>(),
        )
            .prop_map(
                |(port_no, hw_addr, name, [c, s], [cu, ad, su, pe], [cs, ms])| Port {
                    port_no,
                    hw_addr,
                    name: PortName(name),
                    config: c,
                    state: s,
                    curr: cu,
                    advertised: ad,
                    supported: su,
                    peer: pe,
                    curr_speed: cs,
                    max_speed: ms,
                },
            )
    }

    pub fn any_port_mod() -> impl Strategy<Value = PortMod> {
        (any_port_no(), any_mac(), any::<[u32; 3]>()).prop_map(|(port_no, hw_addr, [c, m, a])| {
            PortMod {
                port_no,
                hw_addr,
                config: c,
                mask: m,
                advertise: a,
            }
        })
    }

    pub fn any_port_status() -> impl Strategy<Value = PortStatus> {
        (any::<u8>(), any_port()).prop_map(|(r, port)| PortStatus {
            reason: PortReason::from_u8(r),
            port,
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn port_name_display_escapes_control_characters() {
        assert_eq!(PortName::new("eth0\nX\t").to_string(), "eth0\\nX\\t");
        assert_eq!(PortName::new("s1-eth3").to_string(), "s1-eth3");
    }

    use super::arb::*;
    use super::*;
    use crate::openflow::oxm::test_util::*;
    use crate::wire::Wire;
    use proptest::prelude::*;

    /// OVS tests/ofp-print.at, "OFPT_PORT_STATUS - OF1.1" (ofp11_port == OF1.3 ofp_port),
    /// body after the 8-byte header.
    const PORT_STATUS_OVS: &str = "02 00 00 00 00 00 00 00 \
        00 00 00 03 00 00 00 00 50 54 00 00 00 01 00 00 \
        65 74 68 30 00 00 00 00 00 00 00 00 00 00 00 00 \
        00 00 00 00 00 00 00 00 00 00 20 08 00 00 28 0f \
        00 00 28 0f 00 00 00 00 00 01 86 a0 00 01 86 a0";

    #[test]
    fn port_status_golden() {
        let bytes = hex_bytes(PORT_STATUS_OVS);
        let ps = PortStatus::from_bytes(&bytes).unwrap();
        assert_eq!(ps.reason, PortReason::Modify);
        assert_eq!(ps.port.port_no, 3);
        assert_eq!(ps.port.hw_addr.to_string(), "50:54:00:00:00:01");
        assert_eq!(ps.port.name.to_string(), "eth0");
        assert_eq!(ps.port.config, 0);
        assert_eq!(ps.port.state, 0);
        assert_eq!(ps.port.curr, features::F_100MB_FD | features::F_AUTONEG);
        assert_eq!(ps.port.advertised, 0x280f);
        assert_eq!(ps.port.supported, 0x280f);
        assert_eq!(ps.port.peer, 0);
        assert_eq!(ps.port.curr_speed, 100_000);
        assert_eq!(ps.port.max_speed, 100_000);
        assert_eq!(&ps.to_bytes()[..], &bytes[..]);
    }

    /// OVS tests/ofp-print.at, "OFPT_PORT_MOD - OF1.3", body after the header.
    #[test]
    fn port_mod_golden() {
        let bytes = hex_bytes(
            "00 00 00 03 00 00 00 00 50 54 00 00 00 01 00 00 \
             00 00 00 01 00 00 00 01 00 00 00 00 00 00 00 00",
        );
        let pm = PortMod::from_bytes(&bytes).unwrap();
        assert_eq!(
            pm,
            PortMod::set_down(3, "50:54:00:00:00:01".parse().unwrap(), true)
        );
        assert_eq!(&pm.to_bytes()[..], &bytes[..]);
    }

    #[test]
    fn port_names() {
        assert_eq!(PortNo(OFPP_LOCAL).to_string(), "LOCAL");
        assert_eq!(PortNo(7).to_string(), "7");
        assert_eq!(PortName::new("a-very-long-port-name").to_string().len(), 15);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn port_roundtrip(v in any_port()) { check_roundtrip(&v); check_truncations(&v); }
        #[test]
        fn port_mod_roundtrip(v in any_port_mod()) { check_roundtrip(&v); check_truncations(&v); }
        #[test]
        fn port_status_roundtrip(v in any_port_status()) { check_roundtrip(&v); check_truncations(&v); }
        #[test]
        fn port_random(b in proptest::collection::vec(any::<u8>(), 0..100)) {
            let _ = Port::decode(&b);
            let _ = PortMod::decode(&b);
            let _ = PortStatus::decode(&b);
        }
    }
}
