//! The codec trait every wire type implements, and the nom plumbing shared by all of them.
//!
//! Parsers work on `&[u8]` slices of one buffer. An internal [`WireError`] remembers the address
//! of the input at which it failed, so the public [`DecodeError`] can report an exact offset
//! from the start of the caller's buffer even when the fault is deep inside nested TLVs.

use bytes::{BufMut, BytesMut};
use nom::error::{ErrorKind as NomKind, ParseError};

use crate::error::{DecodeError, ErrorKind};

/// Internal nom error: the kind, and the address of the input slice where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    pub kind: ErrorKind,
    /// Address (pointer value, never dereferenced) of the first byte at which decoding failed.
    pub at: usize,
}

impl WireError {
    pub fn new(input: &[u8], kind: ErrorKind) -> Self {
        Self {
            kind,
            at: input.as_ptr() as usize,
        }
    }

    /// Offset of the failure from the start of `base` (clamped to `base`'s length).
    pub fn into_decode_error(self, base: &[u8]) -> DecodeError {
        let offset = self
            .at
            .saturating_sub(base.as_ptr() as usize)
            .min(base.len());
        DecodeError::new(offset, self.kind)
    }
}

impl<'a> ParseError<&'a [u8]> for WireError {
    fn from_error_kind(input: &'a [u8], kind: NomKind) -> Self {
        let kind = match kind {
            NomKind::Eof | NomKind::Complete => ErrorKind::Truncated {
                what: "field",
                needed: 1,
            },
            k => ErrorKind::Nom(k),
        };
        Self::new(input, kind)
    }
    fn append(_: &'a [u8], _: NomKind, other: Self) -> Self {
        other
    }
}

/// Result of an internal parser.
pub type PResult<'a, T> = nom::IResult<&'a [u8], T, WireError>;

/// A value with a wire encoding.
///
/// `decode` reads one value from the front of `input` and returns the rest; it never panics.
/// `encode` appends the value's exact bytes to `out`. For every value `v` the codec guarantees
/// `decode(encode(v)) == v`, and for every accepted input `b`, `encode(decode(b)) == b`.
pub trait Wire: Sized {
    fn decode(input: &[u8]) -> PResult<'_, Self>;
    fn encode(&self, out: &mut BytesMut);

    /// Decodes exactly one value occupying all of `input`.
    fn from_bytes(input: &[u8]) -> Result<Self, DecodeError> {
        match Self::decode(input) {
            Ok(([], v)) => Ok(v),
            Ok((rest, _)) => Err(DecodeError::new(
                input.len() - rest.len(),
                ErrorKind::Trailing {
                    what: std::any::type_name::<Self>(),
                    count: rest.len(),
                },
            )),
            Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(e.into_decode_error(input)),
            Err(nom::Err::Incomplete(_)) => Err(DecodeError::new(
                input.len(),
                ErrorKind::Truncated {
                    what: "input",
                    needed: 1,
                },
            )),
        }
    }

    /// Encodes into a fresh buffer.
    fn to_bytes(&self) -> BytesMut {
        let mut out = BytesMut::new();
        self.encode(&mut out);
        out
    }
}

// ---- error constructors -------------------------------------------------------------------

/// A hard failure (no alternative parse can succeed).
pub fn fail<T>(input: &[u8], kind: ErrorKind) -> PResult<'_, T> {
    Err(nom::Err::Failure(WireError::new(input, kind)))
}

pub fn truncated<'a, T>(input: &'a [u8], what: &'static str, needed: usize) -> PResult<'a, T> {
    fail(input, ErrorKind::Truncated { what, needed })
}

pub fn bad_length<'a, T>(
    input: &'a [u8],
    what: &'static str,
    length: usize,
    reason: &'static str,
) -> PResult<'a, T> {
    fail(
        input,
        ErrorKind::BadLength {
            what,
            length,
            reason,
        },
    )
}

pub fn invalid<'a, T>(input: &'a [u8], what: &'static str, value: u64) -> PResult<'a, T> {
    fail(input, ErrorKind::InvalidValue { what, value })
}

// ---- primitive readers (named field in the error) ------------------------------------------

/// Takes `n` bytes, naming `what` if the input is short.
pub fn take<'a>(input: &'a [u8], n: usize, what: &'static str) -> PResult<'a, &'a [u8]> {
    if input.len() < n {
        return truncated(input, what, n - input.len());
    }
    let (head, rest) = input.split_at(n);
    Ok((rest, head))
}

pub fn u8_<'a>(input: &'a [u8], what: &'static str) -> PResult<'a, u8> {
    let (rest, b) = take(input, 1, what)?;
    Ok((rest, b.first().copied().unwrap_or_default()))
}

pub fn u16_<'a>(input: &'a [u8], what: &'static str) -> PResult<'a, u16> {
    let (rest, b) = take(input, 2, what)?;
    let mut a = [0u8; 2];
    a.copy_from_slice(b);
    Ok((rest, u16::from_be_bytes(a)))
}

pub fn u32_<'a>(input: &'a [u8], what: &'static str) -> PResult<'a, u32> {
    let (rest, b) = take(input, 4, what)?;
    let mut a = [0u8; 4];
    a.copy_from_slice(b);
    Ok((rest, u32::from_be_bytes(a)))
}

pub fn u64_<'a>(input: &'a [u8], what: &'static str) -> PResult<'a, u64> {
    let (rest, b) = take(input, 8, what)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Ok((rest, u64::from_be_bytes(a)))
}

/// Reads a fixed-size array.
pub fn array<'a, const N: usize>(input: &'a [u8], what: &'static str) -> PResult<'a, [u8; N]> {
    let (rest, b) = take(input, N, what)?;
    let mut a = [0u8; N];
    a.copy_from_slice(b);
    Ok((rest, a))
}

/// Skips `n` padding bytes. Padding content is ignored on decode and written as zeros, as the
/// specification requires; inputs with non-zero padding therefore do not round-trip, which is
/// the one documented exception to `encode(decode(b)) == b`.
pub fn skip<'a>(input: &'a [u8], n: usize, what: &'static str) -> PResult<'a, ()> {
    let (rest, _) = take(input, n, what)?;
    Ok((rest, ()))
}

/// Decodes a sequence of `T` that exactly fills `input`.
pub fn many_exact<T: Wire>(mut input: &[u8]) -> PResult<'_, Vec<T>> {
    let mut out = Vec::new();
    while !input.is_empty() {
        let before = input.len();
        let (rest, v) = T::decode(input)?;
        if rest.len() >= before {
            // A zero-length element would loop forever.
            return bad_length(
                input,
                std::any::type_name::<T>(),
                0,
                "element consumed no bytes",
            );
        }
        out.push(v);
        input = rest;
    }
    Ok((input, out))
}

// ---- encoding helpers ----------------------------------------------------------------------

/// Bytes needed to pad `len` to a multiple of 8.
pub const fn pad8(len: usize) -> usize {
    (8 - len % 8) % 8
}

pub fn put_zeros(out: &mut BytesMut, n: usize) {
    out.put_bytes(0, n);
}

/// Overwrites a big-endian u16 at `pos` (used to patch length fields after the body is written).
pub fn patch_u16(out: &mut BytesMut, pos: usize, v: u16) {
    if let Some(s) = out.get_mut(pos..pos + 2) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}

/// Overwrites a big-endian u32 at `pos`.
pub fn patch_u32(out: &mut BytesMut, pos: usize, v: u32) {
    if let Some(s) = out.get_mut(pos..pos + 4) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}

/// Length as u16 for a length field; saturates (a >64 KiB structure cannot be expressed, and
/// saturating yields a message the peer rejects rather than a silently wrapped one).
pub fn len_u16(len: usize) -> u16 {
    u16::try_from(len).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Two(u16);
    impl Wire for Two {
        fn decode(input: &[u8]) -> PResult<'_, Self> {
            let (rest, v) = u16_(input, "two")?;
            Ok((rest, Two(v)))
        }
        fn encode(&self, out: &mut BytesMut) {
            out.put_u16(self.0);
        }
    }

    #[test]
    fn offsets_point_at_the_fault() {
        let buf = [0u8, 1, 2];
        let err = Two::from_bytes(&buf).unwrap_err();
        assert_eq!(err.offset, 2);
        assert!(matches!(err.kind, ErrorKind::Trailing { count: 1, .. }));
        let (_, v) = many_exact::<Two>(&buf[..2]).unwrap();
        assert_eq!(v, vec![Two(1)]);
        let e = many_exact::<Two>(&buf).unwrap_err();
        let nom::Err::Failure(e) = e else { panic!() };
        assert_eq!(e.into_decode_error(&buf).offset, 2);
    }

    #[test]
    fn pad8_values() {
        assert_eq!(pad8(0), 0);
        assert_eq!(pad8(1), 7);
        assert_eq!(pad8(8), 0);
        assert_eq!(pad8(12), 4);
    }
}
