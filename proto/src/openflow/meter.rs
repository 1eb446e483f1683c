//! PLACEHOLDER (to be replaced by the structures workstream): opaque, length-correct stubs so
//! the rest of the crate compiles. Public names and `Wire` impls are the contract.
#![allow(missing_docs)]
use crate::wire::{self, PResult, Wire};
use bytes::{BufMut, BytesMut};
use serde::Serialize;

/// PLACEHOLDER: raw bytes of one meter band TLV (type u16, length u16 including header).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct MeterBand {
    pub raw: Vec<u8>,
}
impl Wire for MeterBand {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (_, len) = wire::u16_(input.get(2..).unwrap_or(&[]), "meter band length")?;
        let len = usize::from(len);
        if len < 4 {
            return wire::bad_length(input, "meter band", len, "shorter than its header");
        }
        let (rest, raw) = wire::take(input, len, "meter band")?;
        Ok((rest, Self { raw: raw.to_vec() }))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_slice(&self.raw);
    }
}

/// PLACEHOLDER message body: raw bytes after the OpenFlow header.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct MeterMod {
    pub raw: Vec<u8>,
}
impl Wire for MeterMod {
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
