//! rtnetlink messages for reading an egress qdisc's backlog (the emulated congestion point's Q),
//! pure: the request bytes and the reply parser. The socket lives in [`crate::runtime`].
//!
//! One request per reading (DESIGN §4): `RTM_GETQDISC` with `NLM_F_REQUEST | NLM_F_ECHO`,
//! `tcm_ifindex` = the interface and `tcm_parent = TC_H_ROOT`, which makes the kernel
//! (`tc_get_qdisc`) answer with exactly one `RTM_NEWQDISC`: the root qdisc. A classful root (tbf,
//! htb) accounts its children's backlog, so the root's backlog is the interface's queue. The
//! backlog is read from `TCA_STATS2 / TCA_STATS_QUEUE` (`struct gnet_stats_queue`), or from the
//! legacy `TCA_STATS` (`struct tc_stats`) when STATS2 is absent. The parser also accepts a dump
//! (`NLM_F_DUMP`, several qdiscs and `NLMSG_DONE`) and picks the root qdisc of the interface.
//!
//! The port-stall sampler ([`crate::port_stats`]) reads every interface at once instead: one
//! dump request ([`dump_qdiscs_request`]) whose replies [`parse_root_qdiscs`] turns into the
//! root qdisc of each interface — one request per poll for the whole namespace, where a
//! request per port would cost as many round trips as there are ports.
//!
//! Netlink headers are in host byte order.

/// `RTM_NEWQDISC`.
pub const RTM_NEWQDISC: u16 = 36;
/// `RTM_GETQDISC`.
pub const RTM_GETQDISC: u16 = 38;
/// `NLMSG_ERROR`.
pub const NLMSG_ERROR: u16 = 2;
/// `NLMSG_DONE`.
pub const NLMSG_DONE: u16 = 3;
/// `NLM_F_REQUEST`.
pub const NLM_F_REQUEST: u16 = 1;
/// `NLM_F_ECHO`.
pub const NLM_F_ECHO: u16 = 8;
/// `NLM_F_DUMP` (`NLM_F_ROOT | NLM_F_MATCH`).
pub const NLM_F_DUMP: u16 = 0x300;
/// `TC_H_ROOT`.
pub const TC_H_ROOT: u32 = 0xffff_ffff;

const NLMSG_HDR_LEN: usize = 16;
const TCMSG_LEN: usize = 20;
const TCA_STATS: u16 = 3;
const TCA_STATS2: u16 = 7;
const TCA_STATS_BASIC: u16 = 1;
const TCA_STATS_QUEUE: u16 = 3;
/// Offsets of `qlen` and `backlog` in `struct tc_stats` (u64 bytes, then u32 packets, drops,
/// overlimits, bps, pps, qlen, backlog).
const TC_STATS_BACKLOG_OFFSET: usize = 32;
const TC_STATS_QLEN_OFFSET: usize = 28;
const TC_STATS_DROPS_OFFSET: usize = 12;
/// Offset of `drops` in `struct gnet_stats_queue` (u32 qlen, backlog, drops, requeues, overlimits).
const GNET_QUEUE_DROPS_OFFSET: usize = 8;

/// Queue statistics of one qdisc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueStats {
    /// Interface index.
    pub ifindex: u32,
    /// Qdisc handle.
    pub handle: u32,
    /// Parent handle (`TC_H_ROOT` for the root qdisc).
    pub parent: u32,
    /// Queued octets.
    pub backlog_bytes: u32,
    /// Queued packets.
    pub qlen: u32,
    /// Packets dropped since the qdisc was created (wraps).
    pub drops: u32,
    /// Octets the qdisc has sent (dequeued to the device) since it was created
    /// (`gnet_stats_basic.bytes`; the legacy `tc_stats.bytes`).
    pub bytes: u64,
}

/// Why a netlink reply could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QdiscError {
    /// The kernel answered with an error (`-errno`).
    #[error("netlink error {0}")]
    Netlink(i32),
    /// The bytes are not a well-formed netlink message.
    #[error("malformed netlink reply at offset {0}")]
    Malformed(usize),
    /// No statistics of the root qdisc of the interface in the reply.
    #[error("no root qdisc statistics for ifindex {0} in the reply")]
    NotFound(u32),
}

/// The request for the root qdisc of `ifindex`, with sequence number `seq`.
pub fn get_root_qdisc_request(ifindex: u32, seq: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(NLMSG_HDR_LEN + TCMSG_LEN);
    let len = u32::try_from(NLMSG_HDR_LEN + TCMSG_LEN).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_ne_bytes());
    out.extend_from_slice(&RTM_GETQDISC.to_ne_bytes());
    out.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ECHO).to_ne_bytes());
    out.extend_from_slice(&seq.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it in
    out.extend_from_slice(&[0, 0, 0, 0]); // family AF_UNSPEC, pads
    out.extend_from_slice(&ifindex.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes()); // handle: any
    out.extend_from_slice(&TC_H_ROOT.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes()); // info
    out
}

/// The request for every qdisc of the namespace (a dump), with sequence number `seq`.
pub fn dump_qdiscs_request(seq: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(NLMSG_HDR_LEN + TCMSG_LEN);
    let len = u32::try_from(NLMSG_HDR_LEN + TCMSG_LEN).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_ne_bytes());
    out.extend_from_slice(&RTM_GETQDISC.to_ne_bytes());
    out.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    out.extend_from_slice(&seq.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes());
    out.extend_from_slice(&[0; TCMSG_LEN]); // any family, interface, handle, parent
    out
}

/// An `NLMSG_ERROR` body: `Ok` for an acknowledgement (error 0), else the kernel's error.
fn netlink_error(off: usize, body: &[u8]) -> Result<(), QdiscError> {
    let code = u32_at(body, 0).ok_or(QdiscError::Malformed(off))?;
    match i32::from_ne_bytes(code.to_ne_bytes()) {
        0 => Ok(()),
        code => Err(QdiscError::Netlink(code)),
    }
}

/// Parses one datagram of a dump: appends the statistics of every root qdisc in it to `out`.
/// `Ok(true)` once `NLMSG_DONE` is seen (the dump is complete).
pub fn parse_root_qdiscs(buf: &[u8], out: &mut Vec<QueueStats>) -> Result<bool, QdiscError> {
    let mut done = false;
    for_each_message(buf, |off, ty, body| {
        match ty {
            NLMSG_ERROR => netlink_error(off, body)?,
            NLMSG_DONE => {
                done = true;
                return Ok(false);
            }
            RTM_NEWQDISC => {
                if let Some(s) = parse_qdisc(body).ok_or(QdiscError::Malformed(off))? {
                    if s.parent == TC_H_ROOT {
                        out.push(s);
                    }
                }
            }
            _ => {}
        }
        Ok(true)
    })?;
    Ok(done)
}

/// Calls `f(offset, type, body)` for each netlink message of `buf` while it returns `Ok(true)`.
fn for_each_message(
    buf: &[u8],
    mut f: impl FnMut(usize, u16, &[u8]) -> Result<bool, QdiscError>,
) -> Result<(), QdiscError> {
    let mut off = 0usize;
    while off < buf.len() {
        let len = u32_at(buf, off).ok_or(QdiscError::Malformed(off))?;
        let len = usize::try_from(len).map_err(|_| QdiscError::Malformed(off))?;
        let ty = u16_at(buf, off + 4).ok_or(QdiscError::Malformed(off))?;
        let end = off.checked_add(len).ok_or(QdiscError::Malformed(off))?;
        if len < NLMSG_HDR_LEN || end > buf.len() {
            return Err(QdiscError::Malformed(off));
        }
        let body = buf
            .get(off + NLMSG_HDR_LEN..end)
            .ok_or(QdiscError::Malformed(off))?;
        if !f(off, ty, body)? {
            return Ok(());
        }
        off = align4(end);
    }
    Ok(())
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    let s = b.get(off..off.checked_add(8)?)?;
    let a: [u8; 8] = s.try_into().ok()?;
    Some(u64::from_ne_bytes(a))
}

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    let s = b.get(off..off.checked_add(2)?)?;
    Some(u16::from_ne_bytes([*s.first()?, *s.get(1)?]))
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off.checked_add(4)?)?;
    let a: [u8; 4] = s.try_into().ok()?;
    Some(u32::from_ne_bytes(a))
}

fn align4(n: usize) -> usize {
    n.saturating_add(3) & !3
}

/// Iterates the rtattrs of `b` as (type without flags, payload).
fn attrs(b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> + '_ {
    let mut off = 0usize;
    std::iter::from_fn(move || {
        let len = usize::from(u16_at(b, off)?);
        let ty = u16_at(b, off.checked_add(2)?)? & 0x3fff;
        if len < 4 {
            return None;
        }
        let payload = b.get(off.checked_add(4)?..off.checked_add(len)?)?;
        off = off.checked_add(align4(len))?;
        Some((ty, payload))
    })
}

/// Parses one netlink reply buffer (one or several messages): the root qdisc statistics of
/// `ifindex`. `Ok(None)` when the buffer holds only other qdiscs and no `NLMSG_DONE` yet (a
/// dump continues in the next datagram).
pub fn parse_root_backlog(buf: &[u8], ifindex: u32) -> Result<Option<QueueStats>, QdiscError> {
    let mut found = None;
    for_each_message(buf, |off, ty, body| {
        match ty {
            NLMSG_ERROR => netlink_error(off, body)?,
            NLMSG_DONE => return Err(QdiscError::NotFound(ifindex)),
            RTM_NEWQDISC => {
                if let Some(s) = parse_qdisc(body).ok_or(QdiscError::Malformed(off))? {
                    if s.ifindex == ifindex && s.parent == TC_H_ROOT {
                        found = Some(s);
                        return Ok(false);
                    }
                }
            }
            _ => {}
        }
        Ok(true)
    })?;
    Ok(found)
}

/// One `RTM_NEWQDISC` body; `Some(None)` when it has no statistics, `None` when malformed.
fn parse_qdisc(body: &[u8]) -> Option<Option<QueueStats>> {
    let ifindex = u32_at(body, 4)?;
    let handle = u32_at(body, 8)?;
    let parent = u32_at(body, 12)?;
    let mut from_stats2 = None;
    let mut from_stats = None;
    let mut basic_bytes = None;
    for (ty, payload) in attrs(body.get(TCMSG_LEN..)?) {
        match ty {
            TCA_STATS2 => {
                for (ty2, p2) in attrs(payload) {
                    if ty2 == TCA_STATS_BASIC {
                        basic_bytes = Some(u64_at(p2, 0)?);
                    }
                    if ty2 == TCA_STATS_QUEUE {
                        from_stats2 = Some((
                            u32_at(p2, 4)?,
                            u32_at(p2, 0)?,
                            u32_at(p2, GNET_QUEUE_DROPS_OFFSET)?,
                        ));
                    }
                }
            }
            TCA_STATS => {
                from_stats = Some((
                    u32_at(payload, TC_STATS_BACKLOG_OFFSET)?,
                    u32_at(payload, TC_STATS_QLEN_OFFSET)?,
                    u32_at(payload, TC_STATS_DROPS_OFFSET)?,
                    u64_at(payload, 0)?,
                ));
            }
            _ => {}
        }
    }
    let from_stats2 = from_stats2.map(|(b, q, d)| (b, q, d, basic_bytes.unwrap_or(0)));
    Some(
        from_stats2
            .or(from_stats)
            .map(|(backlog_bytes, qlen, drops, bytes)| QueueStats {
                ifindex,
                handle,
                parent,
                backlog_bytes,
                qlen,
                drops,
                bytes,
            }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured on Linux (x86-64) from `RTM_GETQDISC` (REQUEST|ECHO, parent root) for a veth
    /// (ifindex 290) with `tbf rate 1mbit burst 1600 limit 30000` + child `pfifo limit 20`,
    /// while 15 frames of 1000 octets were queued: backlog 14 000 octets, 14 packets.
    const TBF_LOADED: &str = "bc000000240000002a00000052320000000000002201000000000100ffffffff0300000008000100746266002c00020028000100000100000000000048e8010000000000000000000000000030750000400d03000000000005000c000000000030000700140001009c040000000000000300000000000000180003000e000000b036000000000000000000000e0000002c0003009c0400000000000003000000000000000e00000000000000000000000e000000b036000000000000";

    /// The same qdisc idle (ifindex 288): backlog 0.
    const TBF_IDLE: &str = "bc000000240000002a0000006d310000000000002001000000000100ffffffff0300000008000100746266002c00020028000100000100000000000048e8010000000000000000000000000030750000400d03000000000005000c00000000003000070014000100b00000000000000002000000000000001800030000000000000000000000000000000000000000002c000300b0000000000000000200000000000000000000000000000000000000000000000000000000000000";

    #[test]
    fn parses_a_captured_loaded_tbf() {
        let buf = hex::decode(TBF_LOADED).unwrap();
        let s = parse_root_backlog(&buf, 290).unwrap().unwrap();
        assert_eq!(s.backlog_bytes, 14_000);
        assert_eq!(s.qlen, 14);
        assert_eq!(s.handle, 0x0001_0000);
        assert_eq!(s.parent, TC_H_ROOT);
        // gnet_stats_basic: 1 180 octets sent (3 packets) before the 15 frames queued.
        assert_eq!(s.bytes, 1_180);
        // Another interface: not in this reply.
        assert_eq!(parse_root_backlog(&buf, 7).unwrap(), None);
    }

    #[test]
    fn parses_a_captured_idle_tbf_and_the_legacy_stats() {
        let buf = hex::decode(TBF_IDLE).unwrap();
        let s = parse_root_backlog(&buf, 288).unwrap().unwrap();
        assert_eq!((s.backlog_bytes, s.qlen), (0, 0));
        // Without TCA_STATS2 the legacy TCA_STATS is used: drop the STATS2 attribute.
        let mut buf = hex::decode(TBF_LOADED).unwrap();
        // Attribute at 0x60 (len 0x30, type 7) → rename its type to 0x7f (unknown).
        let pos = buf
            .windows(4)
            .position(|w| w == [0x30, 0x00, 0x07, 0x00])
            .unwrap();
        buf[pos + 2] = 0x7f;
        let s = parse_root_backlog(&buf, 290).unwrap().unwrap();
        assert_eq!((s.backlog_bytes, s.qlen), (14_000, 14));
    }

    #[test]
    fn drops_from_either_statistics() {
        let mut buf = hex::decode(TBF_LOADED).unwrap();
        assert_eq!(parse_root_backlog(&buf, 290).unwrap().unwrap().drops, 0);
        // gnet_stats_queue {qlen 14, backlog 14 000, drops, ...}: set drops to 7.
        let q = buf
            .windows(12)
            .position(|w| w == hex::decode("0e000000b036000000000000").unwrap())
            .unwrap();
        buf[q + 8] = 7;
        assert_eq!(parse_root_backlog(&buf, 290).unwrap().unwrap().drops, 7);
        // Legacy tc_stats {bytes u64, packets, drops, ...}: 9 drops, STATS2 renamed away.
        let t = buf
            .windows(4)
            .position(|w| w == [0x2c, 0x00, 0x03, 0x00])
            .unwrap();
        buf[t + 4 + 12] = 9;
        let s2 = buf
            .windows(4)
            .position(|w| w == [0x30, 0x00, 0x07, 0x00])
            .unwrap();
        buf[s2 + 2] = 0x7f;
        let s = parse_root_backlog(&buf, 290).unwrap().unwrap();
        assert_eq!((s.backlog_bytes, s.drops), (14_000, 9));
    }

    #[test]
    fn errors_and_garbage_never_panic() {
        let mut err = Vec::new();
        err.extend_from_slice(&36u32.to_ne_bytes());
        err.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        err.extend_from_slice(&[0; 10]);
        err.extend_from_slice(&(-19i32).to_ne_bytes());
        err.extend_from_slice(&[0; 16]);
        assert_eq!(parse_root_backlog(&err, 1), Err(QdiscError::Netlink(-19)));
        let buf = hex::decode(TBF_LOADED).unwrap();
        for n in 0..buf.len() {
            let _ = parse_root_backlog(&buf[..n], 290);
        }
        assert!(parse_root_backlog(&buf[..10], 290).is_err());
    }

    #[test]
    fn a_dump_yields_every_root_qdisc_until_done() {
        let mut buf = hex::decode(TBF_LOADED).unwrap();
        buf.extend(hex::decode(TBF_IDLE).unwrap());
        let mut out = Vec::new();
        // No NLMSG_DONE yet: the dump continues in the next datagram.
        assert_eq!(parse_root_qdiscs(&buf, &mut out), Ok(false));
        assert_eq!(
            out.iter()
                .map(|s| (s.ifindex, s.backlog_bytes))
                .collect::<Vec<_>>(),
            vec![(290, 14_000), (288, 0)]
        );
        let mut done = Vec::new();
        done.extend_from_slice(&20u32.to_ne_bytes());
        done.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
        done.extend_from_slice(&[0; 14]);
        assert_eq!(parse_root_qdiscs(&done, &mut out), Ok(true));
        assert_eq!(out.len(), 2);
        for n in 0..buf.len() {
            let _ = parse_root_qdiscs(&buf[..n], &mut Vec::new());
        }
        assert_eq!(
            hex::encode(dump_qdiscs_request(7)),
            "240000002600010307000000000000000000000000000000000000000000000000000000"
        );
    }

    #[test]
    fn request_bytes() {
        let r = get_root_qdisc_request(290, 42);
        assert_eq!(r.len(), 36);
        assert_eq!(
            hex::encode(&r),
            "24000000260009002a00000000000000000000002201000000000000ffffffff00000000"
        );
    }
}
