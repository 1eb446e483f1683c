//! PLACEHOLDER (to be replaced by the structures workstream): opaque, length-correct stubs so
//! the rest of the crate compiles. Public names and `Wire` impls are the contract.
#![allow(missing_docs)]
use crate::wire::{self, PResult, Wire};
use bytes::{BufMut, BytesMut};
use serde::Serialize;

/// PLACEHOLDER: ofp_match (type, length, OXM fields, padding to 8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Match {
    pub raw: Vec<u8>,
}
impl Default for Match {
    fn default() -> Self {
        Match {
            raw: vec![0, 1, 0, 4, 0, 0, 0, 0],
        }
    }
}
impl Wire for Match {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (_, len) = wire::u16_(input.get(2..).unwrap_or(&[]), "match length")?;
        let len = usize::from(len);
        if len < 4 {
            return wire::bad_length(input, "match", len, "shorter than its header");
        }
        let total = len + wire::pad8(len);
        let (rest, raw) = wire::take(input, total, "match")?;
        Ok((rest, Self { raw: raw.to_vec() }))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_slice(&self.raw);
    }
}
