//! Hierarchical host addresses (DESIGN §3): a host's MAC and IPv4 address encode where it is, so
//! one masked rule covers a whole group or switch and ARP can be answered without learning.
//!
//! - MAC `02:00:GG:GG:SS:HH`: locally administered unicast; 16-bit group (Dragonfly group, fat-tree
//!   pod), 8-bit switch index inside the group, 8-bit host port number.
//! - IPv4 `base + G.S.H` with a /8 base (default `10.0.0.0`, so `10.G.S.H`). Because the /8 leaves
//!   exactly 24 bits and the group must then fit one octet, the low 24 bits of the IPv4 address
//!   equal the low 24 bits of the MAC: the edge ARP responder derives the answer's MAC from the
//!   requested IP with one bit move (see [`crate::plan`]). Fabrics with more than 256 groups have
//!   MACs but no IPv4 plan ([`AddressError::GroupTooLargeForIpv4`]).
//!
//! Both mappings are reversible ([`Location::from_mac`], [`Addressing::location_of_ipv4`]).

use std::net::Ipv4Addr;

use fabricflow_proto::MacAddr;
use serde::{Deserialize, Serialize};

/// Where a host is: the fields its addresses encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Location {
    /// Dragonfly group or fat-tree pod (file fabrics: the switch's declared group).
    pub group: u16,
    /// Index of the switch inside its group.
    pub switch: u8,
    /// Host port number on that switch (ports 1..=255 can carry hosts).
    pub port: u8,
}

/// Mask selecting the group bytes of a hierarchical MAC (`ff:ff:ff:ff:00:00`).
pub const GROUP_MASK: MacAddr = MacAddr([0xff, 0xff, 0xff, 0xff, 0, 0]);
/// Mask selecting group and switch (`ff:ff:ff:ff:ff:00`).
pub const SWITCH_MASK: MacAddr = MacAddr([0xff, 0xff, 0xff, 0xff, 0xff, 0]);
/// Mask selecting one host (all ones).
pub const HOST_MASK: MacAddr = MacAddr([0xff; 6]);
/// The first octet of every hierarchical MAC: locally administered (bit 1), unicast (bit 0 clear).
pub const MAC_PREFIX: [u8; 2] = [0x02, 0x00];

impl Location {
    /// The host's MAC address.
    pub fn mac(self) -> MacAddr {
        let [g1, g0] = self.group.to_be_bytes();
        MacAddr([MAC_PREFIX[0], MAC_PREFIX[1], g1, g0, self.switch, self.port])
    }

    /// The MAC prefix of the whole group (use with [`GROUP_MASK`]).
    pub fn group_mac(group: u16) -> MacAddr {
        let [g1, g0] = group.to_be_bytes();
        MacAddr([MAC_PREFIX[0], MAC_PREFIX[1], g1, g0, 0, 0])
    }

    /// The MAC prefix of one switch (use with [`SWITCH_MASK`]).
    pub fn switch_mac(group: u16, switch: u8) -> MacAddr {
        let [g1, g0] = group.to_be_bytes();
        MacAddr([MAC_PREFIX[0], MAC_PREFIX[1], g1, g0, switch, 0])
    }

    /// Inverse of [`Location::mac`]; `None` for a MAC outside the hierarchical plan.
    pub fn from_mac(mac: MacAddr) -> Option<Location> {
        let [a, b, g1, g0, switch, port] = mac.0;
        if [a, b] != MAC_PREFIX || port == 0 {
            return None;
        }
        Some(Location {
            group: u16::from_be_bytes([g1, g0]),
            switch,
            port,
        })
    }
}

/// Errors of the address plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// The IPv4 base must be a /8 network address so the low 24 bits can carry G.S.H.
    #[error("IPv4 base {0} must be a /8 network address (x.0.0.0)")]
    BaseNotSlash8(Ipv4Addr),
    /// Group numbers above 255 do not fit the IPv4 plan's group octet.
    #[error("group {0} does not fit the IPv4 plan's group octet (max 255)")]
    GroupTooLargeForIpv4(u16),
}

/// The configurable part of the address plan: the IPv4 base network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Addressing {
    ipv4_base: Ipv4Addr,
}

impl Default for Addressing {
    fn default() -> Self {
        Addressing {
            ipv4_base: Ipv4Addr::new(10, 0, 0, 0),
        }
    }
}

impl Addressing {
    /// An address plan on the /8 network `ipv4_base`.
    pub fn new(ipv4_base: Ipv4Addr) -> Result<Self, AddressError> {
        if u32::from(ipv4_base) & 0x00ff_ffff != 0 {
            return Err(AddressError::BaseNotSlash8(ipv4_base));
        }
        Ok(Addressing { ipv4_base })
    }

    /// The /8 base network.
    pub fn ipv4_base(&self) -> Ipv4Addr {
        self.ipv4_base
    }

    /// The host's IPv4 address `base + G.S.H`.
    pub fn ipv4(&self, loc: Location) -> Result<Ipv4Addr, AddressError> {
        let g =
            u8::try_from(loc.group).map_err(|_| AddressError::GroupTooLargeForIpv4(loc.group))?;
        let [b, ..] = self.ipv4_base.octets();
        Ok(Ipv4Addr::new(b, g, loc.switch, loc.port))
    }

    /// Inverse of [`Addressing::ipv4`]; `None` outside the base network or with host octet 0.
    pub fn location_of_ipv4(&self, ip: Ipv4Addr) -> Option<Location> {
        let [a, g, switch, port] = ip.octets();
        if a != self.ipv4_base.octets()[0] || port == 0 {
            return None;
        }
        Some(Location {
            group: u16::from(g),
            switch,
            port,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn exact_values() {
        let loc = Location {
            group: 0x0102,
            switch: 3,
            port: 4,
        };
        assert_eq!(loc.mac().to_string(), "02:00:01:02:03:04");
        let a = Addressing::default();
        let l2 = Location {
            group: 7,
            switch: 3,
            port: 2,
        };
        assert_eq!(a.ipv4(l2).unwrap(), Ipv4Addr::new(10, 7, 3, 2));
        assert_eq!(a.ipv4(loc), Err(AddressError::GroupTooLargeForIpv4(0x0102)));
        assert!(Addressing::new(Ipv4Addr::new(10, 1, 0, 0)).is_err());
        assert_eq!(
            Location::from_mac("02:00:00:07:03:02".parse().unwrap()),
            Some(l2)
        );
        assert_eq!(
            Location::from_mac("03:00:00:07:03:02".parse().unwrap()),
            None
        );
    }

    proptest! {
        #[test]
        fn reversible(group in any::<u16>(), switch in any::<u8>(), port in 1u8..) {
            let loc = Location { group, switch, port };
            prop_assert_eq!(Location::from_mac(loc.mac()), Some(loc));
            let a = Addressing::new(Ipv4Addr::new(172, 0, 0, 0)).unwrap();
            if let Ok(ip) = a.ipv4(loc) {
                prop_assert_eq!(a.location_of_ipv4(ip), Some(loc));
                // The ARP responder's invariant: MAC low 24 bits == IPv4 low 24 bits.
                prop_assert_eq!(loc.mac().to_u64() & 0xff_ffff, u64::from(u32::from(ip) & 0xff_ffff));
            } else {
                prop_assert!(group > 255);
            }
        }
    }
}
