//! PLACEHOLDER (to be replaced by the structures workstream): opaque, length-correct stubs so
//! the rest of the crate compiles. Public names and `Wire` impls are the contract.
#![allow(missing_docs)]
use crate::wire::{self, PResult, Wire};
use bytes::{BufMut, BytesMut};
use serde::Serialize;

/// PLACEHOLDER: ofp_bucket (len u16 first).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Bucket {
    pub raw: Vec<u8>,
}
impl Wire for Bucket {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (_, len) = wire::u16_(input, "bucket length")?;
        let len = usize::from(len);
        if len < 16 {
            return wire::bad_length(input, "bucket", len, "shorter than its header");
        }
        let (rest, raw) = wire::take(input, len, "bucket")?;
        Ok((rest, Self { raw: raw.to_vec() }))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_slice(&self.raw);
    }
}
/// OFPGT_* group types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum GroupType {
    #[default]
    All,
    Select,
    Indirect,
    FastFailover,
    Unknown(u8),
}
impl GroupType {
    pub fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::All,
            1 => Self::Select,
            2 => Self::Indirect,
            3 => Self::FastFailover,
            x => Self::Unknown(x),
        }
    }
    pub fn to_u8(self) -> u8 {
        match self {
            Self::All => 0,
            Self::Select => 1,
            Self::Indirect => 2,
            Self::FastFailover => 3,
            Self::Unknown(x) => x,
        }
    }
}

/// PLACEHOLDER message body: raw bytes after the OpenFlow header.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct GroupMod {
    pub raw: Vec<u8>,
}
impl Wire for GroupMod {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        Ok((
            &[],
            Self {
                raw: input.to_vec(),
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_slice(&self.raw);
    }
}
