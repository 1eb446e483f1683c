//! Typed decode errors that say what was wrong and where.

use thiserror::Error;

/// What went wrong while decoding, without the position.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ErrorKind {
    /// The input ended inside a field or structure.
    #[error("truncated {what}: needs {needed} more bytes")]
    Truncated { what: &'static str, needed: usize },
    /// A length field is impossible (too short for its header, longer than its container,
    /// not a multiple of the required alignment).
    #[error("bad length {length} for {what}: {reason}")]
    BadLength {
        what: &'static str,
        length: usize,
        reason: &'static str,
    },
    /// A field holds a value the format does not allow.
    #[error("invalid {what}: {value:#x}")]
    InvalidValue { what: &'static str, value: u64 },
    /// An OpenFlow message other than HELLO/ERROR carries a version other than 1.3 (0x04).
    #[error("unsupported OpenFlow version {0:#04x} (only 0x04, OpenFlow 1.3, is spoken)")]
    UnsupportedVersion(u8),
    /// Bytes left over after a structure whose length says it ended.
    #[error("{count} trailing bytes after {what}")]
    Trailing { what: &'static str, count: usize },
    /// A nom combinator failed without a more specific reason.
    #[error("malformed input ({0:?})")]
    Nom(nom::error::ErrorKind),
}

/// A decode failure: the kind and the byte offset from the start of the decoded buffer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("at offset {offset}: {kind}")]
pub struct DecodeError {
    pub offset: usize,
    pub kind: ErrorKind,
}

impl DecodeError {
    pub fn new(offset: usize, kind: ErrorKind) -> Self {
        Self { offset, kind }
    }
}
