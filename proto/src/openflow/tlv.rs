//! The TLV shapes OpenFlow repeats: a type:16 / length:16 header, a body and zero padding to a
//! multiple of 8. Actions and instructions count the padding in their length ([`read_tlv8`],
//! [`write_tlv8`]); HELLO elements and table-feature and bundle properties do not
//! ([`read_padded`], [`write_padded`]).

use bytes::{BufMut, BytesMut};

use crate::wire::{self, PResult};

/// What a kind of TLV is called in errors: its name, and its type, length and padding fields.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TlvNames {
    pub tlv: &'static str,
    pub ty: &'static str,
    pub len: &'static str,
    pub pad: &'static str,
}

/// The [`TlvNames`] of a TLV called `$name`: `"$name"`, `"$name type"`, `"$name length"`,
/// `"$name padding"`.
macro_rules! tlv_names {
    ($name:literal) => {
        $crate::openflow::tlv::TlvNames {
            tlv: $name,
            ty: concat!($name, " type"),
            len: concat!($name, " length"),
            pad: concat!($name, " padding"),
        }
    };
}
pub(crate) use tlv_names;

/// A TLV read from the front of the input.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tlv<'a> {
    pub ty: u16,
    /// The length field.
    pub len: usize,
    /// The bytes after the 4-byte header (for [`read_tlv8`], padding included).
    pub body: &'a [u8],
}

/// Reads a TLV whose length, header and padding included, is a positive multiple of 8.
pub(crate) fn read_tlv8<'a>(input: &'a [u8], names: &TlvNames) -> PResult<'a, Tlv<'a>> {
    let (i, ty) = wire::u16_(input, names.ty)?;
    let (_, len) = wire::u16_(i, names.len)?;
    let len = usize::from(len);
    if len < 8 || len % 8 != 0 {
        return wire::bad_length(input, names.tlv, len, "not a positive multiple of 8");
    }
    let (rest, whole) = wire::take(input, len, names.tlv)?;
    let body = whole.get(4..).unwrap_or_default();
    Ok((rest, Tlv { ty, len, body }))
}

/// Checks that a TLV read by [`read_tlv8`] (starting at `input`) has the one length its type
/// allows.
pub(crate) fn expect_len<'a>(
    input: &'a [u8],
    names: &TlvNames,
    len: usize,
    want: usize,
) -> PResult<'a, ()> {
    if len == want {
        Ok((input, ()))
    } else {
        wire::bad_length(input, names.tlv, len, "wrong length for its type")
    }
}

/// Writes a TLV of type `ty` whose body `body` writes, zero-padded to a multiple of 8; the length
/// counts the padding.
pub(crate) fn write_tlv8(out: &mut BytesMut, ty: u16, body: impl FnOnce(&mut BytesMut)) {
    let start = out.len();
    out.put_u16(ty);
    out.put_u16(0); // patched below
    body(out);
    let len = out.len() - start;
    wire::put_zeros(out, wire::pad8(len));
    wire::patch_u16(out, start + 2, wire::len_u16(len + wire::pad8(len)));
}

/// Reads a TLV whose length covers header and body but not the padding to 8 that follows.
pub(crate) fn read_padded<'a>(input: &'a [u8], names: &TlvNames) -> PResult<'a, Tlv<'a>> {
    let (i, ty) = wire::u16_(input, names.ty)?;
    let (i, len) = wire::u16_(i, names.len)?;
    let len = usize::from(len);
    if len < 4 {
        return wire::bad_length(input, names.tlv, len, "shorter than its header");
    }
    let (i, body) = wire::take(i, len - 4, names.tlv)?;
    let (rest, ()) = wire::skip(i, wire::pad8(len), names.pad)?;
    Ok((rest, Tlv { ty, len, body }))
}

/// Writes a TLV of type `ty` whose body `body` writes; the length leaves out the zero padding to
/// a multiple of 8 that follows.
pub(crate) fn write_padded(out: &mut BytesMut, ty: u16, body: impl FnOnce(&mut BytesMut)) {
    let start = out.len();
    out.put_u16(ty);
    out.put_u16(0); // patched below
    body(out);
    let len = out.len() - start;
    wire::patch_u16(out, start + 2, wire::len_u16(len));
    wire::put_zeros(out, wire::pad8(len));
}
