//! PLACEHOLDER (to be replaced by the structures workstream): opaque, length-correct stubs so
//! the rest of the crate compiles. Public names and `Wire` impls are the contract.
#![allow(missing_docs)]
use crate::wire::{self, PResult, Wire};
use bytes::{BufMut, BytesMut};
use serde::Serialize;

/// PLACEHOLDER: ofp_port, 64 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Port {
    pub raw: Vec<u8>,
}
impl Wire for Port {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (rest, raw) = wire::take(input, 64, "port")?;
        Ok((rest, Self { raw: raw.to_vec() }))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_slice(&self.raw);
    }
}

/// PLACEHOLDER message body: raw bytes after the OpenFlow header.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct PortMod {
    pub raw: Vec<u8>,
}
impl Wire for PortMod {
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

/// PLACEHOLDER message body: raw bytes after the OpenFlow header.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct PortStatus {
    pub raw: Vec<u8>,
}
impl Wire for PortStatus {
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
