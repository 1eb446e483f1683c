//! PLACEHOLDER (to be replaced by the structures workstream): opaque, length-correct stubs so
//! the rest of the crate compiles. Public names and `Wire` impls are the contract.
#![allow(missing_docs)]
use crate::wire::{self, PResult, Wire};
use bytes::{BufMut, BytesMut};
use serde::Serialize;

/// PLACEHOLDER message body: raw bytes after the OpenFlow header.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct TableMod {
    pub raw: Vec<u8>,
}
impl Wire for TableMod {
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
