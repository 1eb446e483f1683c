//! 48-bit MAC addresses.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An IEEE 802 MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);
    pub const ZERO: MacAddr = MacAddr([0; 6]);
    /// LLDP nearest-bridge group address.
    pub const LLDP_NEAREST_BRIDGE: MacAddr = MacAddr([0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e]);

    pub const fn octets(self) -> [u8; 6] {
        self.0
    }
    pub const fn is_multicast(self) -> bool {
        self.0[0] & 1 == 1
    }
    pub fn to_u64(self) -> u64 {
        self.0
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
    }
    pub fn from_u64(v: u64) -> Self {
        let b = v.to_be_bytes();
        MacAddr([b[2], b[3], b[4], b[5], b[6], b[7]])
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Error parsing a MAC address from text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid MAC address {0:?}: expected six hex octets separated by ':'")]
pub struct ParseMacError(pub String);

impl FromStr for MacAddr {
    type Err = ParseMacError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut out = [0u8; 6];
        let mut parts = s.split([':', '-']);
        for o in out.iter_mut() {
            let p = parts.next().ok_or_else(|| ParseMacError(s.to_owned()))?;
            if p.is_empty() || p.len() > 2 {
                return Err(ParseMacError(s.to_owned()));
            }
            *o = u8::from_str_radix(p, 16).map_err(|_| ParseMacError(s.to_owned()))?;
        }
        if parts.next().is_some() {
            return Err(ParseMacError(s.to_owned()));
        }
        Ok(MacAddr(out))
    }
}

impl Serialize for MacAddr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MacAddr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_roundtrip() {
        let m: MacAddr = "02:00:00:01:03:02".parse().unwrap();
        assert_eq!(m.0, [2, 0, 0, 1, 3, 2]);
        assert_eq!(m.to_string(), "02:00:00:01:03:02");
        assert_eq!(MacAddr::from_u64(m.to_u64()), m);
        assert!("02:00:00:01:03".parse::<MacAddr>().is_err());
        assert!("02:00:00:01:03:02:01".parse::<MacAddr>().is_err());
        assert!("zz:00:00:01:03:02".parse::<MacAddr>().is_err());
    }
}
