//! Cuts a TCP byte stream into OpenFlow messages.
//!
//! [`Framer::push`] appends whatever a read returned (any chunking: partial headers, partial
//! bodies, many messages at once); [`Framer::next_message`] returns each complete message's bytes
//! (header included) in order, or `None` until more bytes arrive. A header whose length is below
//! 8 or above the configured maximum is a [`FrameError`] naming the stream offset of that
//! header; it is sticky, because the stream cannot be resynchronised after a bad length.

use bytes::{Buf, Bytes, BytesMut};

use crate::openflow::header::HEADER_LEN;

/// A framing failure: the stream is corrupt from `offset` on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error(
        "at stream offset {offset}: message length {length} is shorter than the 8-byte header"
    )]
    TooShort { offset: u64, length: u16 },
    #[error("at stream offset {offset}: message length {length} exceeds the maximum {max}")]
    TooLong {
        offset: u64,
        length: u16,
        max: usize,
    },
}

impl FrameError {
    /// Stream offset of the header with the bad length.
    pub fn offset(&self) -> u64 {
        match self {
            FrameError::TooShort { offset, .. } | FrameError::TooLong { offset, .. } => *offset,
        }
    }
}

/// Capacity an empty buffer keeps between messages.
const KEEP_CAPACITY: usize = 8 * 1024;

/// Incremental OpenFlow framer. Pure: no I/O, no clocks.
#[derive(Debug)]
pub struct Framer {
    buf: BytesMut,
    max_len: usize,
    /// Stream offset of `buf[0]`.
    offset: u64,
    failed: Option<FrameError>,
}

impl Framer {
    /// A framer accepting messages of up to `max_len` bytes (clamped to 8..=65535).
    pub fn new(max_len: usize) -> Self {
        Framer {
            buf: BytesMut::new(),
            max_len: max_len.clamp(HEADER_LEN, usize::from(u16::MAX)),
            offset: 0,
            failed: None,
        }
    }

    /// Appends bytes read from the stream.
    pub fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The next complete message, `Ok(None)` if more bytes are needed, or the framing error.
    pub fn next_message(&mut self) -> Result<Option<Bytes>, FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let Some(len_bytes) = self.buf.get(2..4) else {
            return Ok(None);
        };
        let length = u16::from_be_bytes([
            len_bytes.first().copied().unwrap_or(0),
            len_bytes.get(1).copied().unwrap_or(0),
        ]);
        let len = usize::from(length);
        let err = if len < HEADER_LEN {
            Some(FrameError::TooShort {
                offset: self.offset,
                length,
            })
        } else if len > self.max_len {
            Some(FrameError::TooLong {
                offset: self.offset,
                length,
                max: self.max_len,
            })
        } else {
            None
        };
        if let Some(e) = err {
            self.failed = Some(e.clone());
            return Err(e);
        }
        if self.buf.len() < len {
            return Ok(None);
        }
        let msg = self.buf.split_to(len).freeze();
        self.offset += len as u64;
        if self.buf.is_empty() && self.buf.capacity() > KEEP_CAPACITY {
            // After a burst (a dump) the buffer would keep its peak size for the connection's
            // life; an idle connection holds none.
            self.buf = BytesMut::new();
        }
        Ok(Some(msg))
    }

    /// Bytes received but not yet returned as messages.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Stream offset of the next message to be returned.
    pub fn stream_offset(&self) -> u64 {
        self.offset
    }

    /// Discards buffered bytes and any error (for a new connection).
    pub fn reset(&mut self) {
        self.buf.clear();
        self.offset = 0;
        self.failed = None;
    }

    /// Drops `n` buffered bytes without framing them (e.g. to skip a message by hand).
    pub fn skip(&mut self, n: usize) {
        let n = n.min(self.buf.len());
        self.buf.advance(n);
        self.offset += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openflow::message::arb::any_message;
    use crate::openflow::message::Message;
    use proptest::prelude::*;

    #[test]
    fn partial_reads_and_batches() {
        let a = Message::hello(1).to_bytes();
        let b = Message::echo_request(2, vec![9; 20]).to_bytes();
        let mut f = Framer::new(65535);
        f.push(&a[..3]);
        assert_eq!(f.next_message(), Ok(None));
        f.push(&a[3..]);
        f.push(&b);
        assert_eq!(f.next_message().unwrap().unwrap(), a.freeze());
        assert_eq!(f.next_message().unwrap().unwrap(), b.freeze());
        assert_eq!(f.next_message(), Ok(None));
        assert_eq!(f.stream_offset(), 16 + 28);
    }

    #[test]
    fn a_burst_does_not_keep_its_buffer() {
        let big = Message::echo_request(1, vec![7; 60_000]).to_bytes();
        let mut f = Framer::new(65535);
        f.push(&big);
        f.push(&big[..10]);
        assert!(f.buf.capacity() > KEEP_CAPACITY);
        assert!(f.next_message().unwrap().is_some());
        assert!(f.buf.capacity() > KEEP_CAPACITY, "kept while bytes remain");
        f.push(&big[10..]);
        assert_eq!(f.next_message().unwrap().unwrap(), big.clone().freeze());
        assert!(f.buf.capacity() <= KEEP_CAPACITY, "{}", f.buf.capacity());
        assert_eq!(f.stream_offset(), 2 * big.len() as u64);
    }

    #[test]
    fn bad_lengths_are_errors_with_offsets() {
        let mut f = Framer::new(100);
        f.push(&Message::barrier_request(1).to_bytes());
        f.push(&[4, 20, 0, 4, 0, 0, 0, 0]);
        assert!(f.next_message().unwrap().is_some());
        let e = f.next_message().unwrap_err();
        assert_eq!(
            e,
            FrameError::TooShort {
                offset: 8,
                length: 4
            }
        );
        assert_eq!(f.next_message().unwrap_err(), e, "sticky");
        let mut f = Framer::new(100);
        f.push(&[4, 20, 0x10, 0, 0]);
        assert!(matches!(
            f.next_message(),
            Err(FrameError::TooLong {
                offset: 0,
                length: 4096,
                max: 100
            })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_chunking_yields_the_same_messages(
            msgs in proptest::collection::vec(any_message(), 1..6),
            cuts in proptest::collection::vec(1usize..64, 0..40),
        ) {
            let mut stream = Vec::new();
            for m in &msgs {
                stream.extend_from_slice(&m.to_bytes());
            }
            let mut f = Framer::new(65535);
            let mut out = Vec::new();
            let mut pos = 0;
            let mut cuts = cuts.into_iter();
            while pos < stream.len() {
                let n = cuts.next().unwrap_or(stream.len()).min(stream.len() - pos);
                f.push(&stream[pos..pos + n]);
                pos += n;
                while let Some(m) = f.next_message().unwrap() {
                    out.push(Message::decode(&m).unwrap());
                }
            }
            prop_assert_eq!(out, msgs);
            prop_assert_eq!(f.buffered(), 0);
        }

        #[test]
        fn random_streams_never_hang_or_panic(v in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut f = Framer::new(1024);
            f.push(&v);
            let mut consumed = 0usize;
            loop {
                match f.next_message() {
                    Ok(Some(m)) => consumed += m.len(),
                    Ok(None) => break,
                    Err(e) => { prop_assert_eq!(e.offset(), consumed as u64); break; }
                }
            }
        }
    }
}
