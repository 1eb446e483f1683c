//! Meters: meter bands and OFPT_METER_MOD.

use std::fmt;

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use super::layout::{mod_command, ofp_struct};
use crate::wire::{self, PResult, Wire};

/// Last usable meter number.
pub const OFPM_MAX: u32 = 0xffff_0000;
/// Virtual meter of the slow datapath.
pub const OFPM_SLOWPATH: u32 = 0xffff_fffd;
/// Virtual meter of the controller connection.
pub const OFPM_CONTROLLER: u32 = 0xffff_fffe;
/// All meters (METER_MOD delete, stats requests).
pub const OFPM_ALL: u32 = 0xffff_ffff;

pub const OFPMBT_DROP: u16 = 1;
pub const OFPMBT_DSCP_REMARK: u16 = 2;
pub const OFPMBT_EXPERIMENTER: u16 = 0xffff;

/// `ofp_meter_flags` bits.
pub mod flags {
    /// Rates in kb/s.
    pub const KBPS: u16 = 1 << 0;
    /// Rates in packets/s.
    pub const PKTPS: u16 = 1 << 1;
    /// Use the burst size.
    pub const BURST: u16 = 1 << 2;
    /// Collect statistics.
    pub const STATS: u16 = 1 << 3;
}

/// Length of `ofp_meter_band_header` (type, len, rate, burst_size).
pub const BAND_HEADER_LEN: usize = 12;

/// One meter band.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum MeterBand {
    /// `OFPMBT_DROP` (16 bytes).
    Drop { rate: u32, burst_size: u32 },
    /// `OFPMBT_DSCP_REMARK` (16 bytes): raise the drop precedence by `prec_level`.
    DscpRemark {
        rate: u32,
        burst_size: u32,
        prec_level: u8,
    },
    /// `OFPMBT_EXPERIMENTER`: the id and the bytes after it, verbatim.
    Experimenter {
        rate: u32,
        burst_size: u32,
        experimenter: u32,
        data: Vec<u8>,
    },
    /// A band type OpenFlow 1.3 does not define: the bytes after the 12-byte header.
    Other {
        band_type: u16,
        rate: u32,
        burst_size: u32,
        body: Vec<u8>,
    },
}

impl MeterBand {
    pub fn drop(rate: u32, burst_size: u32) -> Self {
        MeterBand::Drop { rate, burst_size }
    }

    pub fn band_type(&self) -> u16 {
        match self {
            Self::Drop { .. } => OFPMBT_DROP,
            Self::DscpRemark { .. } => OFPMBT_DSCP_REMARK,
            Self::Experimenter { .. } => OFPMBT_EXPERIMENTER,
            Self::Other { band_type, .. } => *band_type,
        }
    }

    pub fn rate(&self) -> u32 {
        match self {
            Self::Drop { rate, .. }
            | Self::DscpRemark { rate, .. }
            | Self::Experimenter { rate, .. }
            | Self::Other { rate, .. } => *rate,
        }
    }

    pub fn burst_size(&self) -> u32 {
        match self {
            Self::Drop { burst_size, .. }
            | Self::DscpRemark { burst_size, .. }
            | Self::Experimenter { burst_size, .. }
            | Self::Other { burst_size, .. } => *burst_size,
        }
    }
}

impl Wire for MeterBand {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, ty) = wire::u16_(input, "meter band type")?;
        let (_, len) = wire::u16_(i, "meter band length")?;
        let len = usize::from(len);
        if len < BAND_HEADER_LEN {
            return wire::bad_length(input, "meter band", len, "shorter than its header");
        }
        let (rest, whole) = wire::take(input, len, "meter band")?;
        let b = whole.get(4..).unwrap_or_default();
        let (b, rate) = wire::u32_(b, "meter band rate")?;
        let (b, burst_size) = wire::u32_(b, "meter band burst_size")?;
        let band = match ty {
            OFPMBT_DROP | OFPMBT_DSCP_REMARK => {
                if len != 16 {
                    return wire::bad_length(input, "meter band", len, "must be 16");
                }
                if ty == OFPMBT_DROP {
                    MeterBand::Drop { rate, burst_size }
                } else {
                    let (_, prec_level) = wire::u8_(b, "meter band prec_level")?;
                    MeterBand::DscpRemark {
                        rate,
                        burst_size,
                        prec_level,
                    }
                }
            }
            OFPMBT_EXPERIMENTER => {
                if len < 16 {
                    return wire::bad_length(input, "experimenter meter band", len, "below 16");
                }
                let (data, experimenter) = wire::u32_(b, "meter band experimenter")?;
                MeterBand::Experimenter {
                    rate,
                    burst_size,
                    experimenter,
                    data: data.to_vec(),
                }
            }
            band_type => MeterBand::Other {
                band_type,
                rate,
                burst_size,
                body: b.to_vec(),
            },
        };
        Ok((rest, band))
    }

    fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_u16(self.band_type());
        out.put_u16(0); // patched below
        out.put_u32(self.rate());
        out.put_u32(self.burst_size());
        match self {
            Self::Drop { .. } => wire::put_zeros(out, 4),
            Self::DscpRemark { prec_level, .. } => {
                out.put_u8(*prec_level);
                wire::put_zeros(out, 3);
            }
            Self::Experimenter {
                experimenter, data, ..
            } => {
                out.put_u32(*experimenter);
                out.put_slice(data);
            }
            Self::Other { body, .. } => out.put_slice(body),
        }
        let len = out.len() - start;
        wire::patch_u16(out, start + 2, wire::len_u16(len));
    }
}

impl fmt::Display for MeterBand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Drop { rate, burst_size } => {
                write!(f, "type=drop rate={rate} burst_size={burst_size}")
            }
            Self::DscpRemark {
                rate,
                burst_size,
                prec_level,
            } => write!(
                f,
                "type=dscp_remark rate={rate} burst_size={burst_size} prec_level={prec_level}"
            ),
            Self::Experimenter {
                rate,
                burst_size,
                experimenter,
                data,
            } => write!(
                f,
                "type=experimenter({experimenter:#010x}) rate={rate} burst_size={burst_size} \
                 data_len={}",
                data.len()
            ),
            Self::Other {
                band_type,
                rate,
                burst_size,
                body,
            } => write!(
                f,
                "type={band_type} rate={rate} burst_size={burst_size} body_len={}",
                body.len()
            ),
        }
    }
}

// ---- METER_MOD ----------------------------------------------------------------------------

mod_command!(
    /// `ofp_meter_mod_command`.
    MeterModCommand
);

ofp_struct! {
    /// OFPT_METER_MOD body: command, flags, meter_id, bands (to the end of the message).
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct MeterMod("meter_mod" separator " ") {
        pub command: MeterModCommand,
        /// `flags::*` bits.
        pub flags: u16,
        pub meter_id: u32,
        pub bands: Vec<MeterBand>,
    }
}

/// Fixed part of the METER_MOD body.
pub const METER_MOD_FIXED_LEN: usize = 8;

impl MeterMod {
    pub fn add(meter_id: u32, flags: u16, bands: Vec<MeterBand>) -> Self {
        MeterMod {
            command: MeterModCommand::Add,
            flags,
            meter_id,
            bands,
        }
    }

    pub fn modify(meter_id: u32, flags: u16, bands: Vec<MeterBand>) -> Self {
        MeterMod {
            command: MeterModCommand::Modify,
            flags,
            meter_id,
            bands,
        }
    }

    pub fn delete(meter_id: u32) -> Self {
        MeterMod {
            command: MeterModCommand::Delete,
            flags: 0,
            meter_id,
            bands: Vec::new(),
        }
    }
}

impl fmt::Display for MeterMod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} meter=", self.command)?;
        match self.meter_id {
            OFPM_ALL => f.write_str("all")?,
            OFPM_CONTROLLER => f.write_str("controller")?,
            OFPM_SLOWPATH => f.write_str("slowpath")?,
            m => write!(f, "{m}")?,
        }
        for (bit, name) in [
            (flags::KBPS, "kbps"),
            (flags::PKTPS, "pktps"),
            (flags::BURST, "burst"),
            (flags::STATS, "stats"),
        ] {
            if self.flags & bit != 0 {
                write!(f, " {name}")?;
            }
        }
        f.write_str(" bands=")?;
        for (n, b) in self.bands.iter().enumerate() {
            if n > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{b}")?;
        }
        Ok(())
    }
}

// ---- tests --------------------------------------------------------------------------------

#[cfg(test)]
pub(crate) mod arb {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    pub fn any_meter_band() -> impl Strategy<Value = MeterBand> {
        prop_oneof![
            any::<(u32, u32)>().prop_map(|(rate, burst_size)| MeterBand::Drop { rate, burst_size }),
            any::<(u32, u32, u8)>().prop_map(|(rate, burst_size, prec_level)| {
                MeterBand::DscpRemark {
                    rate,
                    burst_size,
                    prec_level,
                }
            }),
            (any::<(u32, u32, u32)>(), vec(any::<u8>(), 0..16)).prop_map(
                |((rate, burst_size, experimenter), data)| MeterBand::Experimenter {
                    rate,
                    burst_size,
                    experimenter,
                    data
                }
            ),
            (
                prop_oneof![Just(0u16), 3u16..0xffff],
                any::<(u32, u32)>(),
                vec(any::<u8>(), 0..16)
            )
                .prop_map(|(band_type, (rate, burst_size), body)| MeterBand::Other {
                    band_type,
                    rate,
                    burst_size,
                    body
                }),
        ]
    }

    pub fn any_meter_mod() -> impl Strategy<Value = MeterMod> {
        (
            any::<u16>(),
            any::<u16>(),
            any::<u32>(),
            vec(any_meter_band(), 0..4),
        )
            .prop_map(|(c, flags, meter_id, bands)| MeterMod {
                command: MeterModCommand::from_u16(c),
                flags,
                meter_id,
                bands,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::arb::*;
    use super::*;
    use crate::openflow::oxm::test_util::*;
    use proptest::prelude::*;

    /// OVS tests/ofp-print.at "OFPT_METER_MOD request - OF1.3", body after the header.
    #[test]
    fn meter_mod_golden_ovs() {
        let b = hex_bytes(
            "00 00 00 0d 00 00 00 05 \
             00 01 00 10 00 00 04 00 00 00 00 80 00 00 00 00",
        );
        let m = MeterMod::from_bytes(&b).unwrap();
        assert_eq!(
            m,
            MeterMod::add(
                5,
                flags::KBPS | flags::BURST | flags::STATS,
                vec![MeterBand::drop(1024, 128)]
            )
        );
        assert_eq!(&m.to_bytes()[..], &b[..]);
        assert_eq!(
            m.to_string(),
            "ADD meter=5 kbps burst stats bands=type=drop rate=1024 burst_size=128"
        );
    }

    /// Bands of OVS tests/ofp-print.at "OFPST_METER_CONFIG reply - OF1.3".
    #[test]
    fn bands_golden_ovs() {
        let b = hex_bytes(
            "00 01 00 10 00 01 00 00 00 00 05 00 00 00 00 00 \
             00 02 00 10 00 10 00 00 00 00 f0 00 00 00 00 00",
        );
        let (_, bands) = wire::many_exact::<MeterBand>(&b).unwrap();
        assert_eq!(
            bands,
            vec![
                MeterBand::drop(65536, 1280),
                MeterBand::DscpRemark {
                    rate: 1048576,
                    burst_size: 61440,
                    prec_level: 0
                }
            ]
        );
    }

    #[test]
    fn rejects_bad_bands() {
        assert!(MeterBand::from_bytes(&hex_bytes("00 01 00 0c 00 00 04 00 00 00 00 80")).is_err());
        assert!(MeterBand::from_bytes(&hex_bytes("00 01 00 08 00 00 04 00")).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn band_roundtrip(v in any_meter_band()) {
            check_roundtrip(&v);
            check_truncations(&v);
            let _ = v.to_string();
        }
        #[test]
        fn meter_mod_roundtrip(v in any_meter_mod()) {
            check_roundtrip(&v);
            check_prefixes(&v, METER_MOD_FIXED_LEN);
            let _ = v.to_string();
        }
        #[test]
        fn meter_random(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = MeterBand::decode(&b);
            if let Ok(m) = MeterMod::from_bytes(&b) {
                prop_assert_eq!(m.to_bytes().len(), b.len());
            }
        }
    }
}
