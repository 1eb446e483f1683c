//! `struct ofp_table_features` and its properties (OFPMP_TABLE_FEATURES request and reply).

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use crate::openflow::tlv::{self, tlv_names, Tlv};
use crate::wire::{self, PResult, Wire};

/// Length of the fixed part of `struct ofp_table_features`.
pub const TABLE_FEATURES_LEN: usize = 64;
/// Length of `ofp_table_features.name`.
pub const OFP_MAX_TABLE_NAME_LEN: usize = 32;

/// Reads a NUL-padded fixed-size text field. Bytes from the first NUL on are padding; text that
/// is not UTF-8 is decoded lossily (the one case besides padding that does not round-trip).
pub(crate) fn fixed_str(bytes: &[u8]) -> String {
    let n = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(bytes.get(..n).unwrap_or_default()).into_owned()
}

/// Writes `s` into exactly `n` bytes, NUL-padded, or truncated at a character boundary.
pub(crate) fn put_fixed_str(out: &mut BytesMut, s: &str, n: usize) {
    let b = s.as_bytes();
    let mut k = b.len().min(n);
    while !s.is_char_boundary(k) {
        k -= 1;
    }
    out.put_slice(b.get(..k).unwrap_or_default());
    wire::put_zeros(out, n - k);
}

/// An instruction or action id in a table-features property: the TLV's type and whatever bytes
/// follow its 4-byte header (empty per the specification; Open vSwitch sends 8-byte ids with 4
/// zero bytes, experimenter ids carry the experimenter id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlvId {
    pub id_type: u16,
    pub data: Vec<u8>,
}

impl TlvId {
    pub fn new(id_type: u16) -> Self {
        TlvId {
            id_type,
            data: Vec::new(),
        }
    }
}

impl Wire for TlvId {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, id_type) = wire::u16_(input, "id type")?;
        let (i, len) = wire::u16_(i, "id length")?;
        let len = usize::from(len);
        if len < 4 {
            return wire::bad_length(input, "instruction/action id", len, "shorter than 4");
        }
        let (i, data) = wire::take(i, len - 4, "instruction/action id")?;
        Ok((
            i,
            TlvId {
                id_type,
                data: data.to_vec(),
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u16(self.id_type);
        out.put_u16(wire::len_u16(4 + self.data.len()));
        out.put_slice(&self.data);
    }
}

/// An OXM id (an OXM header without payload); experimenter OXMs (class 0xffff) carry the
/// experimenter id after the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OxmId {
    pub header: u32,
    pub experimenter: Option<u32>,
}

impl OxmId {
    pub fn class(self) -> u16 {
        u16::try_from(self.header >> 16).unwrap_or(u16::MAX)
    }
    pub fn field(self) -> u8 {
        u8::try_from((self.header >> 9) & 0x7f).unwrap_or(0)
    }
    pub fn has_mask(self) -> bool {
        self.header & 0x100 != 0
    }
}

impl Wire for OxmId {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, header) = wire::u32_(input, "oxm id")?;
        if header >> 16 == 0xffff {
            let (i, e) = wire::u32_(i, "oxm id experimenter")?;
            Ok((
                i,
                OxmId {
                    header,
                    experimenter: Some(e),
                },
            ))
        } else {
            Ok((
                i,
                OxmId {
                    header,
                    experimenter: None,
                },
            ))
        }
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u32(self.header);
        if self.header >> 16 == 0xffff {
            out.put_u32(self.experimenter.unwrap_or(0));
        }
    }
}

/// One `ofp_table_feature_prop_*`. `miss` selects the `*_MISS` variant of the property (which
/// applies to the table-miss flow entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum TableFeatureProp {
    /// OFPTFPT_INSTRUCTIONS (0) / _MISS (1).
    Instructions { miss: bool, ids: Vec<TlvId> },
    /// OFPTFPT_NEXT_TABLES (2) / _MISS (3).
    NextTables { miss: bool, tables: Vec<u8> },
    /// OFPTFPT_WRITE_ACTIONS (4) / _MISS (5).
    WriteActions { miss: bool, ids: Vec<TlvId> },
    /// OFPTFPT_APPLY_ACTIONS (6) / _MISS (7).
    ApplyActions { miss: bool, ids: Vec<TlvId> },
    /// OFPTFPT_MATCH (8).
    Match(Vec<OxmId>),
    /// OFPTFPT_WILDCARDS (10).
    Wildcards(Vec<OxmId>),
    /// OFPTFPT_WRITE_SETFIELD (12) / _MISS (13).
    WriteSetfield { miss: bool, ids: Vec<OxmId> },
    /// OFPTFPT_APPLY_SETFIELD (14) / _MISS (15).
    ApplySetfield { miss: bool, ids: Vec<OxmId> },
    /// OFPTFPT_EXPERIMENTER (0xfffe) / _MISS (0xffff).
    Experimenter {
        miss: bool,
        experimenter: u32,
        exp_type: u32,
        data: Vec<u8>,
    },
    /// A property type this crate does not interpret: the bytes after the 4-byte header.
    Unknown { prop_type: u16, data: Vec<u8> },
}

impl TableFeatureProp {
    /// The wire property type.
    pub fn prop_type(&self) -> u16 {
        let m = |miss: &bool, base: u16| base + u16::from(*miss);
        match self {
            Self::Instructions { miss, .. } => m(miss, 0),
            Self::NextTables { miss, .. } => m(miss, 2),
            Self::WriteActions { miss, .. } => m(miss, 4),
            Self::ApplyActions { miss, .. } => m(miss, 6),
            Self::Match(_) => 8,
            Self::Wildcards(_) => 10,
            Self::WriteSetfield { miss, .. } => m(miss, 12),
            Self::ApplySetfield { miss, .. } => m(miss, 14),
            Self::Experimenter { miss, .. } => m(miss, 0xfffe),
            Self::Unknown { prop_type, .. } => *prop_type,
        }
    }
}

impl Wire for TableFeatureProp {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let names = tlv_names!("table feature property");
        let (rest, Tlv { ty: t, body, .. }) = tlv::read_padded(input, &names)?;
        let miss = t & 1 == 1;
        // The id lists fill the property.
        let ids = || wire::many_exact::<TlvId>(body).map(|(_, v)| v);
        let oxms = || wire::many_exact::<OxmId>(body).map(|(_, v)| v);
        let prop = match t {
            0 | 1 => Self::Instructions { miss, ids: ids()? },
            2 | 3 => Self::NextTables {
                miss,
                tables: body.to_vec(),
            },
            4 | 5 => Self::WriteActions { miss, ids: ids()? },
            6 | 7 => Self::ApplyActions { miss, ids: ids()? },
            8 => Self::Match(oxms()?),
            10 => Self::Wildcards(oxms()?),
            12 | 13 => Self::WriteSetfield { miss, ids: oxms()? },
            14 | 15 => Self::ApplySetfield { miss, ids: oxms()? },
            0xfffe | 0xffff => {
                let (b, experimenter) = wire::u32_(body, "table feature experimenter")?;
                let (b, exp_type) = wire::u32_(b, "table feature exp_type")?;
                Self::Experimenter {
                    miss,
                    experimenter,
                    exp_type,
                    data: b.to_vec(),
                }
            }
            t => Self::Unknown {
                prop_type: t,
                data: body.to_vec(),
            },
        };
        Ok((rest, prop))
    }

    fn encode(&self, out: &mut BytesMut) {
        tlv::write_padded(out, self.prop_type(), |out| match self {
            Self::Instructions { ids, .. }
            | Self::WriteActions { ids, .. }
            | Self::ApplyActions { ids, .. } => ids.iter().for_each(|x| x.encode(out)),
            Self::NextTables { tables, .. } => out.put_slice(tables),
            Self::Match(ids)
            | Self::Wildcards(ids)
            | Self::WriteSetfield { ids, .. }
            | Self::ApplySetfield { ids, .. } => ids.iter().for_each(|x| x.encode(out)),
            Self::Experimenter {
                experimenter,
                exp_type,
                data,
                ..
            } => {
                out.put_u32(*experimenter);
                out.put_u32(*exp_type);
                out.put_slice(data);
            }
            Self::Unknown { data, .. } => out.put_slice(data),
        });
    }
}

/// `struct ofp_table_features`: one table's capabilities (multipart body element).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct TableFeatures {
    pub table_id: u8,
    pub name: String,
    pub metadata_match: u64,
    pub metadata_write: u64,
    pub config: u32,
    pub max_entries: u32,
    pub properties: Vec<TableFeatureProp>,
}

impl Wire for TableFeatures {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, len) = wire::u16_(input, "ofp_table_features.length")?;
        let len = usize::from(len);
        if len < TABLE_FEATURES_LEN {
            return wire::bad_length(input, "ofp_table_features", len, "shorter than 64");
        }
        let (rest, _) = wire::take(input, len, "ofp_table_features")?;
        let (i, table_id) = wire::u8_(i, "ofp_table_features.table_id")?;
        let (i, ()) = wire::skip(i, 5, "ofp_table_features.pad")?;
        let (i, name) = wire::take(i, OFP_MAX_TABLE_NAME_LEN, "ofp_table_features.name")?;
        let (i, metadata_match) = wire::u64_(i, "ofp_table_features.metadata_match")?;
        let (i, metadata_write) = wire::u64_(i, "ofp_table_features.metadata_write")?;
        let (i, config) = wire::u32_(i, "ofp_table_features.config")?;
        let (i, max_entries) = wire::u32_(i, "ofp_table_features.max_entries")?;
        let (_, props) = wire::take(i, len - TABLE_FEATURES_LEN, "table features properties")?;
        let (_, properties) = wire::many_exact::<TableFeatureProp>(props)?;
        Ok((
            rest,
            TableFeatures {
                table_id,
                name: fixed_str(name),
                metadata_match,
                metadata_write,
                config,
                max_entries,
                properties,
            },
        ))
    }

    fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_u16(0);
        out.put_u8(self.table_id);
        wire::put_zeros(out, 5);
        put_fixed_str(out, &self.name, OFP_MAX_TABLE_NAME_LEN);
        out.put_u64(self.metadata_match);
        out.put_u64(self.metadata_write);
        out.put_u32(self.config);
        out.put_u32(self.max_entries);
        for p in &self.properties {
            p.encode(out);
        }
        let len = out.len() - start;
        wire::patch_u16(out, start, wire::len_u16(len));
    }
}

/// Proptest strategies for table features.
#[cfg(test)]
pub mod arb {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    /// Text without NUL that fits a field of `max` bytes.
    pub fn any_name(max: usize) -> impl Strategy<Value = String> {
        vec(proptest::char::range(' ', '~'), 0..=max).prop_map(|v| v.into_iter().collect())
    }

    pub fn any_tlv_id() -> impl Strategy<Value = TlvId> {
        (
            any::<u16>(),
            prop_oneof![Just(vec![]), Just(vec![0u8; 4]), vec(any::<u8>(), 0..8)],
        )
            .prop_map(|(id_type, data)| TlvId { id_type, data })
    }

    pub fn any_oxm_id() -> impl Strategy<Value = OxmId> {
        prop_oneof![
            (0u32..0xffff_0000).prop_map(|header| OxmId {
                header,
                experimenter: None
            }),
            (any::<u16>(), any::<u32>()).prop_map(|(low, e)| OxmId {
                header: 0xffff_0000 | u32::from(low),
                experimenter: Some(e)
            }),
        ]
    }

    pub fn any_table_feature_prop() -> impl Strategy<Value = TableFeatureProp> {
        prop_oneof![
            (any::<bool>(), vec(any_tlv_id(), 0..4))
                .prop_map(|(miss, ids)| TableFeatureProp::Instructions { miss, ids }),
            (any::<bool>(), vec(any::<u8>(), 0..10))
                .prop_map(|(miss, tables)| TableFeatureProp::NextTables { miss, tables }),
            (any::<bool>(), vec(any_tlv_id(), 0..4))
                .prop_map(|(miss, ids)| TableFeatureProp::WriteActions { miss, ids }),
            (any::<bool>(), vec(any_tlv_id(), 0..4))
                .prop_map(|(miss, ids)| TableFeatureProp::ApplyActions { miss, ids }),
            vec(any_oxm_id(), 0..4).prop_map(TableFeatureProp::Match),
            vec(any_oxm_id(), 0..4).prop_map(TableFeatureProp::Wildcards),
            (any::<bool>(), vec(any_oxm_id(), 0..4))
                .prop_map(|(miss, ids)| TableFeatureProp::WriteSetfield { miss, ids }),
            (any::<bool>(), vec(any_oxm_id(), 0..4))
                .prop_map(|(miss, ids)| TableFeatureProp::ApplySetfield { miss, ids }),
            (
                any::<bool>(),
                any::<u32>(),
                any::<u32>(),
                vec(any::<u8>(), 0..10)
            )
                .prop_map(|(miss, experimenter, exp_type, data)| {
                    TableFeatureProp::Experimenter {
                        miss,
                        experimenter,
                        exp_type,
                        data,
                    }
                }),
            (
                prop_oneof![Just(9u16), Just(11u16), 16u16..0xfffe],
                vec(any::<u8>(), 0..10)
            )
                .prop_map(|(prop_type, data)| TableFeatureProp::Unknown { prop_type, data }),
        ]
    }

    pub fn any_table_features() -> impl Strategy<Value = TableFeatures> {
        (
            any::<u8>(),
            any_name(OFP_MAX_TABLE_NAME_LEN - 1),
            any::<(u64, u64, u32, u32)>(),
            vec(any_table_feature_prop(), 0..4),
        )
            .prop_map(
                |(table_id, name, (mm, mw, config, max_entries), properties)| TableFeatures {
                    table_id,
                    name,
                    metadata_match: mm,
                    metadata_write: mw,
                    config,
                    max_entries,
                    properties,
                },
            )
    }
}
