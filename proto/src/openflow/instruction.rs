//! PLACEHOLDER (to be replaced by the structures workstream): opaque, length-correct stubs so
//! the rest of the crate compiles. Public names and `Wire` impls are the contract.
#![allow(missing_docs)]
use crate::wire::{self, PResult, Wire};
use bytes::{BufMut, BytesMut};
use serde::Serialize;

/// PLACEHOLDER: raw bytes of one instruction TLV (type u16, length u16 including header).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Instruction {
    pub raw: Vec<u8>,
}
impl Wire for Instruction {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (_, len) = wire::u16_(input.get(2..).unwrap_or(&[]), "instruction length")?;
        let len = usize::from(len);
        if len < 4 {
            return wire::bad_length(input, "instruction", len, "shorter than its header");
        }
        let (rest, raw) = wire::take(input, len, "instruction")?;
        Ok((rest, Self { raw: raw.to_vec() }))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_slice(&self.raw);
    }
}
