//! Symmetric messages: HELLO (with elements), ERROR (every OpenFlow 1.3 type and code), ECHO and
//! the opaque EXPERIMENTER body.

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use crate::openflow::header::end;
use crate::openflow::layout::ofp_struct;
use crate::openflow::tlv::{self, tlv_names, Tlv};
use crate::wire::{self, PResult, Wire};

// ---- HELLO ---------------------------------------------------------------------------------

/// `OFPHET_VERSIONBITMAP`.
pub const OFPHET_VERSIONBITMAP: u16 = 1;

/// The version bitmap of a HELLO: bit `v % 32` of word `v / 32` is set when version `v` is spoken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionBitmap {
    pub bitmaps: Vec<u32>,
}

impl VersionBitmap {
    /// A bitmap announcing exactly `versions`.
    pub fn from_versions(versions: &[u8]) -> Self {
        let top = versions.iter().copied().max().unwrap_or(0);
        let mut bitmaps = vec![0u32; usize::from(top / 32) + 1];
        for v in versions {
            if let Some(w) = bitmaps.get_mut(usize::from(v / 32)) {
                *w |= 1 << (v % 32);
            }
        }
        Self { bitmaps }
    }

    /// Whether the peer announces `version`.
    pub fn supports(&self, version: u8) -> bool {
        self.bitmaps
            .get(usize::from(version / 32))
            .is_some_and(|w| w & (1 << (version % 32)) != 0)
    }

    /// Every announced version, ascending.
    pub fn versions(&self) -> Vec<u8> {
        (0..=255u8).filter(|v| self.supports(*v)).collect()
    }
}

/// One `ofp_hello_elem_header` TLV.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum HelloElement {
    VersionBitmap(VersionBitmap),
    /// An element type this crate does not interpret (kept byte for byte, minus padding).
    Unknown {
        elem_type: u16,
        data: Vec<u8>,
    },
}

impl Wire for HelloElement {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, Tlv { ty, body, .. }) = tlv::read_padded(input, &tlv_names!("hello element"))?;
        let elem = if ty == OFPHET_VERSIONBITMAP && body.len() % 4 == 0 {
            let (_, bitmaps) = wire::many_exact::<U32>(body)?;
            HelloElement::VersionBitmap(VersionBitmap {
                bitmaps: bitmaps.into_iter().map(|w| w.0).collect(),
            })
        } else {
            HelloElement::Unknown {
                elem_type: ty,
                data: body.to_vec(),
            }
        };
        Ok((i, elem))
    }

    fn encode(&self, out: &mut BytesMut) {
        match self {
            HelloElement::VersionBitmap(b) => tlv::write_padded(out, OFPHET_VERSIONBITMAP, |out| {
                for w in &b.bitmaps {
                    out.put_u32(*w);
                }
            }),
            HelloElement::Unknown { elem_type, data } => {
                tlv::write_padded(out, *elem_type, |out| out.put_slice(data))
            }
        }
    }
}

/// A big-endian u32 as a `Wire` element (for `many_exact`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct U32(pub u32);
impl Wire for U32 {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, v) = wire::u32_(input, "u32")?;
        Ok((i, U32(v)))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u32(self.0);
    }
}

/// OFPT_HELLO body.
///
/// Decoding is lenient, as a HELLO must be understood from any peer: bytes after the last
/// well-formed element (OpenFlow 1.0 peers may send anything) are kept in `extra` so the message
/// still re-encodes byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Hello {
    pub elements: Vec<HelloElement>,
    pub extra: Vec<u8>,
}

impl Hello {
    /// A HELLO announcing `versions` in a version bitmap.
    pub fn with_versions(versions: &[u8]) -> Self {
        Hello {
            elements: vec![HelloElement::VersionBitmap(VersionBitmap::from_versions(
                versions,
            ))],
            extra: Vec::new(),
        }
    }

    /// The version bitmap element, if the peer sent one.
    pub fn version_bitmap(&self) -> Option<&VersionBitmap> {
        self.elements.iter().find_map(|e| match e {
            HelloElement::VersionBitmap(b) => Some(b),
            HelloElement::Unknown { .. } => None,
        })
    }

    /// Whether a peer that sent this HELLO in a header of `header_version` speaks `version`:
    /// by its bitmap if it sent one, else by the header version (it speaks everything up to it).
    pub fn supports(&self, header_version: u8, version: u8) -> bool {
        match self.version_bitmap() {
            Some(b) => b.supports(version),
            None => version <= header_version,
        }
    }
}

impl Wire for Hello {
    fn decode(mut input: &[u8]) -> PResult<'_, Self> {
        let mut elements = Vec::new();
        while !input.is_empty() {
            match HelloElement::decode(input) {
                Ok((rest, e)) if rest.len() < input.len() => {
                    elements.push(e);
                    input = rest;
                }
                _ => break,
            }
        }
        let extra = input.to_vec();
        Ok((end(input), Hello { elements, extra }))
    }

    fn encode(&self, out: &mut BytesMut) {
        for e in &self.elements {
            e.encode(out);
        }
        out.put_slice(&self.extra);
    }
}

// ---- ERROR ---------------------------------------------------------------------------------

macro_rules! code_enum {
    ($(#[$m:meta])* $name:ident { $($var:ident = $val:literal => $s:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        pub enum $name {
            $($var,)*
            /// A code OpenFlow 1.3 does not define for this type.
            Unknown(u16),
        }
        impl $name {
            pub fn from_u16(v: u16) -> Self {
                match v {
                    $($val => Self::$var,)*
                    x => Self::Unknown(x),
                }
            }
            pub fn to_u16(self) -> u16 {
                match self {
                    $(Self::$var => $val,)*
                    Self::Unknown(x) => x,
                }
            }
            /// The specification's name of the code, e.g. `OFPBRC_BAD_LEN`.
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $(Self::$var => Some($s),)*
                    Self::Unknown(_) => None,
                }
            }
        }
    };
}

code_enum!(
    /// OFPET_HELLO_FAILED codes.
    HelloFailedCode {
    Incompatible = 0 => "OFPHFC_INCOMPATIBLE",
    Eperm = 1 => "OFPHFC_EPERM",
});
code_enum!(
    /// OFPET_BAD_REQUEST codes.
    BadRequestCode {
    BadVersion = 0 => "OFPBRC_BAD_VERSION",
    BadType = 1 => "OFPBRC_BAD_TYPE",
    BadMultipart = 2 => "OFPBRC_BAD_MULTIPART",
    BadExperimenter = 3 => "OFPBRC_BAD_EXPERIMENTER",
    BadExpType = 4 => "OFPBRC_BAD_EXP_TYPE",
    Eperm = 5 => "OFPBRC_EPERM",
    BadLen = 6 => "OFPBRC_BAD_LEN",
    BufferEmpty = 7 => "OFPBRC_BUFFER_EMPTY",
    BufferUnknown = 8 => "OFPBRC_BUFFER_UNKNOWN",
    BadTableId = 9 => "OFPBRC_BAD_TABLE_ID",
    IsSlave = 10 => "OFPBRC_IS_SLAVE",
    BadPort = 11 => "OFPBRC_BAD_PORT",
    BadPacket = 12 => "OFPBRC_BAD_PACKET",
    MultipartBufferOverflow = 13 => "OFPBRC_MULTIPART_BUFFER_OVERFLOW",
});
code_enum!(
    /// OFPET_BAD_ACTION codes.
    BadActionCode {
    BadType = 0 => "OFPBAC_BAD_TYPE",
    BadLen = 1 => "OFPBAC_BAD_LEN",
    BadExperimenter = 2 => "OFPBAC_BAD_EXPERIMENTER",
    BadExpType = 3 => "OFPBAC_BAD_EXP_TYPE",
    BadOutPort = 4 => "OFPBAC_BAD_OUT_PORT",
    BadArgument = 5 => "OFPBAC_BAD_ARGUMENT",
    Eperm = 6 => "OFPBAC_EPERM",
    TooMany = 7 => "OFPBAC_TOO_MANY",
    BadQueue = 8 => "OFPBAC_BAD_QUEUE",
    BadOutGroup = 9 => "OFPBAC_BAD_OUT_GROUP",
    MatchInconsistent = 10 => "OFPBAC_MATCH_INCONSISTENT",
    UnsupportedOrder = 11 => "OFPBAC_UNSUPPORTED_ORDER",
    BadTag = 12 => "OFPBAC_BAD_TAG",
    BadSetType = 13 => "OFPBAC_BAD_SET_TYPE",
    BadSetLen = 14 => "OFPBAC_BAD_SET_LEN",
    BadSetArgument = 15 => "OFPBAC_BAD_SET_ARGUMENT",
});
code_enum!(
    /// OFPET_BAD_INSTRUCTION codes.
    BadInstructionCode {
    UnknownInst = 0 => "OFPBIC_UNKNOWN_INST",
    UnsupInst = 1 => "OFPBIC_UNSUP_INST",
    BadTableId = 2 => "OFPBIC_BAD_TABLE_ID",
    UnsupMetadata = 3 => "OFPBIC_UNSUP_METADATA",
    UnsupMetadataMask = 4 => "OFPBIC_UNSUP_METADATA_MASK",
    BadExperimenter = 5 => "OFPBIC_BAD_EXPERIMENTER",
    BadExpType = 6 => "OFPBIC_BAD_EXP_TYPE",
    BadLen = 7 => "OFPBIC_BAD_LEN",
    Eperm = 8 => "OFPBIC_EPERM",
});
code_enum!(
    /// OFPET_BAD_MATCH codes.
    BadMatchCode {
    BadType = 0 => "OFPBMC_BAD_TYPE",
    BadLen = 1 => "OFPBMC_BAD_LEN",
    BadTag = 2 => "OFPBMC_BAD_TAG",
    BadDlAddrMask = 3 => "OFPBMC_BAD_DL_ADDR_MASK",
    BadNwAddrMask = 4 => "OFPBMC_BAD_NW_ADDR_MASK",
    BadWildcards = 5 => "OFPBMC_BAD_WILDCARDS",
    BadField = 6 => "OFPBMC_BAD_FIELD",
    BadValue = 7 => "OFPBMC_BAD_VALUE",
    BadMask = 8 => "OFPBMC_BAD_MASK",
    BadPrereq = 9 => "OFPBMC_BAD_PREREQ",
    DupField = 10 => "OFPBMC_DUP_FIELD",
    Eperm = 11 => "OFPBMC_EPERM",
});
code_enum!(
    /// OFPET_FLOW_MOD_FAILED codes.
    FlowModFailedCode {
    Unspecified = 0 => "OFPFMFC_UNKNOWN",
    TableFull = 1 => "OFPFMFC_TABLE_FULL",
    BadTableId = 2 => "OFPFMFC_BAD_TABLE_ID",
    Overlap = 3 => "OFPFMFC_OVERLAP",
    Eperm = 4 => "OFPFMFC_EPERM",
    BadTimeout = 5 => "OFPFMFC_BAD_TIMEOUT",
    BadCommand = 6 => "OFPFMFC_BAD_COMMAND",
    BadFlags = 7 => "OFPFMFC_BAD_FLAGS",
});
code_enum!(
    /// OFPET_GROUP_MOD_FAILED codes.
    GroupModFailedCode {
    GroupExists = 0 => "OFPGMFC_GROUP_EXISTS",
    InvalidGroup = 1 => "OFPGMFC_INVALID_GROUP",
    WeightUnsupported = 2 => "OFPGMFC_WEIGHT_UNSUPPORTED",
    OutOfGroups = 3 => "OFPGMFC_OUT_OF_GROUPS",
    OutOfBuckets = 4 => "OFPGMFC_OUT_OF_BUCKETS",
    ChainingUnsupported = 5 => "OFPGMFC_CHAINING_UNSUPPORTED",
    WatchUnsupported = 6 => "OFPGMFC_WATCH_UNSUPPORTED",
    Loop = 7 => "OFPGMFC_LOOP",
    UnknownGroup = 8 => "OFPGMFC_UNKNOWN_GROUP",
    ChainedGroup = 9 => "OFPGMFC_CHAINED_GROUP",
    BadType = 10 => "OFPGMFC_BAD_TYPE",
    BadCommand = 11 => "OFPGMFC_BAD_COMMAND",
    BadBucket = 12 => "OFPGMFC_BAD_BUCKET",
    BadWatch = 13 => "OFPGMFC_BAD_WATCH",
    Eperm = 14 => "OFPGMFC_EPERM",
});
code_enum!(
    /// OFPET_PORT_MOD_FAILED codes.
    PortModFailedCode {
    BadPort = 0 => "OFPPMFC_BAD_PORT",
    BadHwAddr = 1 => "OFPPMFC_BAD_HW_ADDR",
    BadConfig = 2 => "OFPPMFC_BAD_CONFIG",
    BadAdvertise = 3 => "OFPPMFC_BAD_ADVERTISE",
    Eperm = 4 => "OFPPMFC_EPERM",
});
code_enum!(
    /// OFPET_TABLE_MOD_FAILED codes.
    TableModFailedCode {
    BadTable = 0 => "OFPTMFC_BAD_TABLE",
    BadConfig = 1 => "OFPTMFC_BAD_CONFIG",
    Eperm = 2 => "OFPTMFC_EPERM",
});
code_enum!(
    /// OFPET_QUEUE_OP_FAILED codes.
    QueueOpFailedCode {
    BadPort = 0 => "OFPQOFC_BAD_PORT",
    BadQueue = 1 => "OFPQOFC_BAD_QUEUE",
    Eperm = 2 => "OFPQOFC_EPERM",
});
code_enum!(
    /// OFPET_SWITCH_CONFIG_FAILED codes.
    SwitchConfigFailedCode {
    BadFlags = 0 => "OFPSCFC_BAD_FLAGS",
    BadLen = 1 => "OFPSCFC_BAD_LEN",
    Eperm = 2 => "OFPSCFC_EPERM",
});
code_enum!(
    /// OFPET_ROLE_REQUEST_FAILED codes.
    RoleRequestFailedCode {
    Stale = 0 => "OFPRRFC_STALE",
    Unsup = 1 => "OFPRRFC_UNSUP",
    BadRole = 2 => "OFPRRFC_BAD_ROLE",
});
code_enum!(
    /// OFPET_METER_MOD_FAILED codes.
    MeterModFailedCode {
    Unspecified = 0 => "OFPMMFC_UNKNOWN",
    MeterExists = 1 => "OFPMMFC_METER_EXISTS",
    InvalidMeter = 2 => "OFPMMFC_INVALID_METER",
    UnknownMeter = 3 => "OFPMMFC_UNKNOWN_METER",
    BadCommand = 4 => "OFPMMFC_BAD_COMMAND",
    BadFlags = 5 => "OFPMMFC_BAD_FLAGS",
    BadRate = 6 => "OFPMMFC_BAD_RATE",
    BadBurst = 7 => "OFPMMFC_BAD_BURST",
    BadBand = 8 => "OFPMMFC_BAD_BAND",
    BadBandValue = 9 => "OFPMMFC_BAD_BAND_VALUE",
    OutOfMeters = 10 => "OFPMMFC_OUT_OF_METERS",
    OutOfBands = 11 => "OFPMMFC_OUT_OF_BANDS",
});
code_enum!(
    /// OFPET_TABLE_FEATURES_FAILED codes.
    TableFeaturesFailedCode {
    BadTable = 0 => "OFPTFFC_BAD_TABLE",
    BadMetadata = 1 => "OFPTFFC_BAD_METADATA",
    BadType = 2 => "OFPTFFC_BAD_TYPE",
    BadLen = 3 => "OFPTFFC_BAD_LEN",
    BadArgument = 4 => "OFPTFFC_BAD_ARGUMENT",
    Eperm = 5 => "OFPTFFC_EPERM",
});

/// `OFPET_EXPERIMENTER`.
pub const OFPET_EXPERIMENTER: u16 = 0xffff;

/// The (type, code) of an OFPT_ERROR, typed for every OpenFlow 1.3 error type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum ErrorType {
    HelloFailed(HelloFailedCode),
    BadRequest(BadRequestCode),
    BadAction(BadActionCode),
    BadInstruction(BadInstructionCode),
    BadMatch(BadMatchCode),
    FlowModFailed(FlowModFailedCode),
    GroupModFailed(GroupModFailedCode),
    PortModFailed(PortModFailedCode),
    TableModFailed(TableModFailedCode),
    QueueOpFailed(QueueOpFailedCode),
    SwitchConfigFailed(SwitchConfigFailedCode),
    RoleRequestFailed(RoleRequestFailedCode),
    MeterModFailed(MeterModFailedCode),
    TableFeaturesFailed(TableFeaturesFailedCode),
    /// `OFPET_EXPERIMENTER`: the code field is the experimenter-defined type.
    Experimenter {
        exp_type: u16,
        experimenter: u32,
    },
    /// An error type OpenFlow 1.3 does not define.
    Unknown {
        err_type: u16,
        code: u16,
    },
}

impl ErrorType {
    pub fn from_type_code(t: u16, c: u16) -> Self {
        match t {
            0 => Self::HelloFailed(HelloFailedCode::from_u16(c)),
            1 => Self::BadRequest(BadRequestCode::from_u16(c)),
            2 => Self::BadAction(BadActionCode::from_u16(c)),
            3 => Self::BadInstruction(BadInstructionCode::from_u16(c)),
            4 => Self::BadMatch(BadMatchCode::from_u16(c)),
            5 => Self::FlowModFailed(FlowModFailedCode::from_u16(c)),
            6 => Self::GroupModFailed(GroupModFailedCode::from_u16(c)),
            7 => Self::PortModFailed(PortModFailedCode::from_u16(c)),
            8 => Self::TableModFailed(TableModFailedCode::from_u16(c)),
            9 => Self::QueueOpFailed(QueueOpFailedCode::from_u16(c)),
            10 => Self::SwitchConfigFailed(SwitchConfigFailedCode::from_u16(c)),
            11 => Self::RoleRequestFailed(RoleRequestFailedCode::from_u16(c)),
            12 => Self::MeterModFailed(MeterModFailedCode::from_u16(c)),
            13 => Self::TableFeaturesFailed(TableFeaturesFailedCode::from_u16(c)),
            t => Self::Unknown {
                err_type: t,
                code: c,
            },
        }
    }

    /// The wire (type, code); for experimenter errors (0xffff, exp_type).
    pub fn type_code(self) -> (u16, u16) {
        match self {
            Self::HelloFailed(c) => (0, c.to_u16()),
            Self::BadRequest(c) => (1, c.to_u16()),
            Self::BadAction(c) => (2, c.to_u16()),
            Self::BadInstruction(c) => (3, c.to_u16()),
            Self::BadMatch(c) => (4, c.to_u16()),
            Self::FlowModFailed(c) => (5, c.to_u16()),
            Self::GroupModFailed(c) => (6, c.to_u16()),
            Self::PortModFailed(c) => (7, c.to_u16()),
            Self::TableModFailed(c) => (8, c.to_u16()),
            Self::QueueOpFailed(c) => (9, c.to_u16()),
            Self::SwitchConfigFailed(c) => (10, c.to_u16()),
            Self::RoleRequestFailed(c) => (11, c.to_u16()),
            Self::MeterModFailed(c) => (12, c.to_u16()),
            Self::TableFeaturesFailed(c) => (13, c.to_u16()),
            Self::Experimenter { exp_type, .. } => (OFPET_EXPERIMENTER, exp_type),
            Self::Unknown { err_type, code } => (err_type, code),
        }
    }

    /// The type's specification name, e.g. `OFPET_BAD_REQUEST`.
    pub fn type_name(self) -> &'static str {
        match self {
            Self::HelloFailed(_) => "OFPET_HELLO_FAILED",
            Self::BadRequest(_) => "OFPET_BAD_REQUEST",
            Self::BadAction(_) => "OFPET_BAD_ACTION",
            Self::BadInstruction(_) => "OFPET_BAD_INSTRUCTION",
            Self::BadMatch(_) => "OFPET_BAD_MATCH",
            Self::FlowModFailed(_) => "OFPET_FLOW_MOD_FAILED",
            Self::GroupModFailed(_) => "OFPET_GROUP_MOD_FAILED",
            Self::PortModFailed(_) => "OFPET_PORT_MOD_FAILED",
            Self::TableModFailed(_) => "OFPET_TABLE_MOD_FAILED",
            Self::QueueOpFailed(_) => "OFPET_QUEUE_OP_FAILED",
            Self::SwitchConfigFailed(_) => "OFPET_SWITCH_CONFIG_FAILED",
            Self::RoleRequestFailed(_) => "OFPET_ROLE_REQUEST_FAILED",
            Self::MeterModFailed(_) => "OFPET_METER_MOD_FAILED",
            Self::TableFeaturesFailed(_) => "OFPET_TABLE_FEATURES_FAILED",
            Self::Experimenter { .. } => "OFPET_EXPERIMENTER",
            Self::Unknown { .. } => "OFPET_UNKNOWN",
        }
    }

    /// The code's specification name, if known (e.g. `OFPBRC_BAD_LEN`).
    pub fn code_name(self) -> Option<&'static str> {
        match self {
            Self::HelloFailed(c) => c.name(),
            Self::BadRequest(c) => c.name(),
            Self::BadAction(c) => c.name(),
            Self::BadInstruction(c) => c.name(),
            Self::BadMatch(c) => c.name(),
            Self::FlowModFailed(c) => c.name(),
            Self::GroupModFailed(c) => c.name(),
            Self::PortModFailed(c) => c.name(),
            Self::TableModFailed(c) => c.name(),
            Self::QueueOpFailed(c) => c.name(),
            Self::SwitchConfigFailed(c) => c.name(),
            Self::RoleRequestFailed(c) => c.name(),
            Self::MeterModFailed(c) => c.name(),
            Self::TableFeaturesFailed(c) => c.name(),
            Self::Experimenter { .. } | Self::Unknown { .. } => None,
        }
    }
}

impl std::fmt::Display for ErrorType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self, self.code_name()) {
            (_, Some(n)) => f.write_str(n),
            (
                Self::Experimenter {
                    exp_type,
                    experimenter,
                },
                None,
            ) => write!(
                f,
                "OFPET_EXPERIMENTER(experimenter={experimenter:#010x},exp_type={exp_type})"
            ),
            (t, None) => {
                let (ty, code) = t.type_code();
                write!(f, "{}(type={ty},code={code})", t.type_name())
            }
        }
    }
}

/// OFPT_ERROR body: the error and the offending data (normally the first bytes of the request
/// that failed, at least 64 bytes of it; for HELLO_FAILED an ASCII explanation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorMsg {
    pub error: ErrorType,
    pub data: Vec<u8>,
}

impl ErrorMsg {
    /// Bytes of the offending request an error reply carries (the specification's minimum).
    pub const OFFENDING_LEN: usize = 64;

    /// An error about `offending` (a whole received message), keeping its first 64 bytes.
    pub fn about(error: ErrorType, offending: &[u8]) -> Self {
        let n = offending.len().min(Self::OFFENDING_LEN);
        ErrorMsg {
            error,
            data: offending.get(..n).unwrap_or_default().to_vec(),
        }
    }

    /// The data as text when it is printable ASCII (HELLO_FAILED explanations).
    pub fn text(&self) -> Option<&str> {
        let s = std::str::from_utf8(&self.data).ok()?;
        s.chars()
            .all(|c| c.is_ascii_graphic() || c.is_ascii_whitespace())
            .then_some(s)
    }
}

impl Wire for ErrorMsg {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, t) = wire::u16_(input, "ofp_error_msg.type")?;
        let (i, c) = wire::u16_(i, "ofp_error_msg.code")?;
        let (i, error) = if t == OFPET_EXPERIMENTER {
            let (i, experimenter) = wire::u32_(i, "ofp_error_experimenter_msg.experimenter")?;
            (
                i,
                ErrorType::Experimenter {
                    exp_type: c,
                    experimenter,
                },
            )
        } else {
            (i, ErrorType::from_type_code(t, c))
        };
        Ok((
            end(i),
            ErrorMsg {
                error,
                data: i.to_vec(),
            },
        ))
    }

    fn encode(&self, out: &mut BytesMut) {
        let (t, c) = self.error.type_code();
        out.put_u16(t);
        out.put_u16(c);
        if let ErrorType::Experimenter { experimenter, .. } = self.error {
            out.put_u32(experimenter);
        }
        out.put_slice(&self.data);
    }
}

// ---- ECHO, EXPERIMENTER ----------------------------------------------------------------------

/// OFPT_ECHO_REQUEST / OFPT_ECHO_REPLY body: arbitrary payload.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Echo {
    pub data: Vec<u8>,
}

impl Wire for Echo {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        Ok((
            end(input),
            Echo {
                data: input.to_vec(),
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_slice(&self.data);
    }
}

ofp_struct! {
    /// An OFPT_EXPERIMENTER body this crate does not interpret: experimenter id, experimenter type
    /// and the remaining bytes, kept exactly.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct Experimenter("ofp_experimenter_header") {
        pub experimenter: u32,
        pub exp_type: u32,
        pub data: Vec<u8>,
    }
}

/// Proptest strategies for the symmetric messages.
#[cfg(test)]
pub mod arb {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    pub fn any_hello_element() -> impl Strategy<Value = HelloElement> {
        prop_oneof![
            vec(any::<u32>(), 0..4)
                .prop_map(|bitmaps| HelloElement::VersionBitmap(VersionBitmap { bitmaps })),
            (2u16..0xffff, vec(any::<u8>(), 0..20))
                .prop_map(|(elem_type, data)| HelloElement::Unknown { elem_type, data }),
        ]
    }

    pub fn any_hello() -> impl Strategy<Value = Hello> {
        vec(any_hello_element(), 0..4).prop_map(|elements| Hello {
            elements,
            extra: Vec::new(),
        })
    }

    pub fn any_error_type() -> impl Strategy<Value = ErrorType> {
        prop_oneof![
            (0u16..16, 0u16..20).prop_map(|(t, c)| ErrorType::from_type_code(t, c)),
            (any::<u16>(), any::<u32>()).prop_map(|(exp_type, experimenter)| {
                ErrorType::Experimenter {
                    exp_type,
                    experimenter,
                }
            }),
        ]
    }

    pub fn any_error_msg() -> impl Strategy<Value = ErrorMsg> {
        (any_error_type(), vec(any::<u8>(), 0..80))
            .prop_map(|(error, data)| ErrorMsg { error, data })
    }

    pub fn any_echo() -> impl Strategy<Value = Echo> {
        vec(any::<u8>(), 0..40).prop_map(|data| Echo { data })
    }

    /// Opaque experimenter bodies (ids other than the ones with typed decoders).
    pub fn any_experimenter() -> impl Strategy<Value = Experimenter> {
        (
            any::<u32>().prop_filter("typed vendors", |e| {
                *e != crate::openflow::NX_VENDOR_ID && *e != crate::openflow::ONF_EXPERIMENTER_ID
            }),
            any::<u32>(),
            vec(any::<u8>(), 0..40),
        )
            .prop_map(|(experimenter, exp_type, data)| Experimenter {
                experimenter,
                exp_type,
                data,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_supports() {
        let b = VersionBitmap::from_versions(&[1, 4, 40]);
        assert!(b.supports(4) && b.supports(1) && b.supports(40));
        assert!(!b.supports(5) && !b.supports(200));
        assert_eq!(b.versions(), vec![1, 4, 40]);
    }

    #[test]
    fn every_code_round_trips() {
        for t in 0..=14u16 {
            for c in 0..=20u16 {
                let e = ErrorType::from_type_code(t, c);
                assert_eq!(e.type_code(), (t, c));
            }
        }
        assert_eq!(
            ErrorType::from_type_code(1, 6).to_string(),
            "OFPBRC_BAD_LEN"
        );
    }
}
