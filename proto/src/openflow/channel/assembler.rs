//! Joins the replies of a REPLY_MORE multipart sequence into one body.

use std::collections::HashMap;

use crate::openflow::multipart::{MultipartReply, MultipartReplyBody, MultipartType};

/// Why a multipart reply could not be joined to its sequence.
/// Why a multipart reply could not be joined to its sequence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssembleError {
    /// A reply of another type arrived in the middle of a sequence.
    #[error("multipart type changed mid-sequence: expected {expected:?}, got {got:?}")]
    TypeChanged {
        expected: MultipartType,
        got: MultipartType,
    },
    /// REPLY_MORE was set on a single-valued body (DESC, AGGREGATE, GROUP_FEATURES, ...).
    #[error("multipart type {mp_type:?} has one value and cannot span several replies")]
    NotJoinable { mp_type: MultipartType },
    /// A sequence grew beyond the assembler's entry limit.
    #[error("multipart sequence for xid {xid:#x} exceeds {limit} entries")]
    TooManyEntries { xid: u32, limit: usize },
}

/// Joins the replies of multipart sequences (one per xid) into single bodies.
///
/// Feed every MULTIPART_REPLY to [`push`](Self::push); it returns the whole body once the reply
/// without REPLY_MORE arrives. A type change within one xid is an error, and the partial
/// sequence is dropped. Several xids may be in flight at once. Pure: no clocks; the caller
/// decides when a sequence has timed out and calls [`cancel`](Self::cancel).
#[derive(Debug, Clone, Default)]
pub struct MultipartAssembler {
    partial: HashMap<u32, MultipartReplyBody>,
    max_entries: Option<usize>,
}

impl MultipartAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// An assembler that refuses sequences of more than `max_entries` entries (memory bound
    /// against a misbehaving switch).
    pub fn with_limit(max_entries: usize) -> Self {
        MultipartAssembler {
            partial: HashMap::new(),
            max_entries: Some(max_entries),
        }
    }

    /// Adds one reply of sequence `xid`; returns the joined body when the sequence is complete.
    pub fn push(
        &mut self,
        xid: u32,
        reply: MultipartReply,
    ) -> Result<Option<MultipartReplyBody>, AssembleError> {
        let more = reply.more();
        let joined = match self.partial.remove(&xid) {
            None => reply.body,
            Some(mut acc) => {
                append(&mut acc, reply.body)?;
                acc
            }
        };
        if let Some(limit) = self.max_entries {
            if joined.len() > limit {
                return Err(AssembleError::TooManyEntries { xid, limit });
            }
        }
        if more {
            if matches!(
                joined,
                MultipartReplyBody::Desc(_)
                    | MultipartReplyBody::Aggregate(_)
                    | MultipartReplyBody::GroupFeatures(_)
                    | MultipartReplyBody::MeterFeatures(_)
            ) {
                return Err(AssembleError::NotJoinable {
                    mp_type: joined.mp_type(),
                });
            }
            self.partial.insert(xid, joined);
            Ok(None)
        } else {
            Ok(Some(joined))
        }
    }

    /// Whether a sequence for `xid` is waiting for more replies.
    pub fn is_pending(&self, xid: u32) -> bool {
        self.partial.contains_key(&xid)
    }

    /// Number of sequences waiting for more replies.
    pub fn pending(&self) -> usize {
        self.partial.len()
    }

    /// Drops the partial sequence of `xid` (timeout, error reply), returning what had arrived.
    pub fn cancel(&mut self, xid: u32) -> Option<MultipartReplyBody> {
        self.partial.remove(&xid)
    }
}

/// Appends `other`'s entries (same type). Single-valued bodies cannot be joined, except
/// experimenter and unknown bodies with the same ids, whose data are concatenated.
fn append(acc: &mut MultipartReplyBody, other: MultipartReplyBody) -> Result<(), AssembleError> {
    let got = other.mp_type();
    let expected = acc.mp_type();
    match (acc, other) {
        (MultipartReplyBody::Flow(a), MultipartReplyBody::Flow(b)) => a.extend(b),
        (MultipartReplyBody::Table(a), MultipartReplyBody::Table(b)) => a.extend(b),
        (MultipartReplyBody::PortStats(a), MultipartReplyBody::PortStats(b)) => a.extend(b),
        (MultipartReplyBody::Queue(a), MultipartReplyBody::Queue(b)) => a.extend(b),
        (MultipartReplyBody::Group(a), MultipartReplyBody::Group(b)) => a.extend(b),
        (MultipartReplyBody::GroupDesc(a), MultipartReplyBody::GroupDesc(b)) => a.extend(b),
        (MultipartReplyBody::Meter(a), MultipartReplyBody::Meter(b)) => a.extend(b),
        (MultipartReplyBody::MeterConfig(a), MultipartReplyBody::MeterConfig(b)) => a.extend(b),
        (MultipartReplyBody::TableFeatures(a), MultipartReplyBody::TableFeatures(b)) => a.extend(b),
        (MultipartReplyBody::PortDesc(a), MultipartReplyBody::PortDesc(b)) => a.extend(b),
        (MultipartReplyBody::Experimenter(a), MultipartReplyBody::Experimenter(b))
            if a.experimenter == b.experimenter && a.exp_type == b.exp_type =>
        {
            a.data.extend(b.data)
        }
        (
            MultipartReplyBody::Unknown {
                mp_type: x,
                data: a,
            },
            MultipartReplyBody::Unknown {
                mp_type: y,
                data: b,
            },
        ) if *x == y => a.extend(b),
        _ if expected == got => return Err(AssembleError::NotJoinable { mp_type: got }),
        _ => return Err(AssembleError::TypeChanged { expected, got }),
    }
    Ok(())
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::openflow::multipart::{Desc, PortStats, OFPMPF_REPLY_MORE};

    fn port(n: u32) -> PortStats {
        PortStats {
            port_no: n,
            ..Default::default()
        }
    }

    #[test]
    fn assembler_joins_reply_more_sequences() {
        let mut a = MultipartAssembler::new();
        let r1 = MultipartReply {
            flags: OFPMPF_REPLY_MORE,
            body: MultipartReplyBody::PortStats(vec![port(1), port(2)]),
        };
        let r2 = MultipartReply {
            flags: 0,
            body: MultipartReplyBody::PortStats(vec![port(3)]),
        };
        assert_eq!(a.push(7, r1).unwrap(), None);
        assert!(a.is_pending(7));
        let done = a.push(7, r2).unwrap().unwrap();
        assert_eq!(
            done,
            MultipartReplyBody::PortStats(vec![port(1), port(2), port(3)])
        );
        assert_eq!(a.pending(), 0);
    }

    #[test]
    fn assembler_rejects_type_change_and_single_values() {
        let mut a = MultipartAssembler::new();
        let r1 = MultipartReply {
            flags: OFPMPF_REPLY_MORE,
            body: MultipartReplyBody::PortStats(vec![port(1)]),
        };
        a.push(1, r1).unwrap();
        let err = a
            .push(1, MultipartReply::new(MultipartReplyBody::Flow(vec![])))
            .unwrap_err();
        assert!(matches!(err, AssembleError::TypeChanged { .. }));
        assert!(!a.is_pending(1));
        let d = MultipartReply {
            flags: OFPMPF_REPLY_MORE,
            body: MultipartReplyBody::Desc(Desc::default()),
        };
        assert!(matches!(
            a.push(2, d),
            Err(AssembleError::NotJoinable { .. })
        ));
        let mut l = MultipartAssembler::with_limit(2);
        let big = MultipartReply {
            flags: OFPMPF_REPLY_MORE,
            body: MultipartReplyBody::PortStats(vec![port(1), port(2), port(3)]),
        };
        assert!(matches!(
            l.push(3, big),
            Err(AssembleError::TooManyEntries { .. })
        ));
    }
}
