//! Human-readable one-line rendering of messages in the spirit of `ovs-ofctl ofp-print`, e.g.
//! `OFPT_FLOW_MOD (OF1.3) (xid=0x5): ADD table:1 priority=100,eth_dst=… actions=group:1003`,
//! and JSON via serde.

use std::fmt::{self, Display, Formatter, Write as _};

use crate::openflow::bundle::{BundleProp, OFPBF_ATOMIC, OFPBF_ORDERED};
use crate::openflow::header::Header;
use crate::openflow::instruction::InstructionList;
use crate::openflow::message::{Body, Message};
use crate::openflow::multipart::{
    FlowStatsRequest, MultipartReplyBody as R, MultipartRequestBody as Q, OFPG_ALL, OFPM_ALL,
    OFPQ_ALL, OFPTT_ALL,
};
use crate::openflow::port::PortNo;
use crate::openflow::switch::{capabilities, AsyncConfig, QueueProp};
use crate::openflow::symmetric::{ErrorMsg, Hello, HelloElement};

/// `(OF1.3)` style version tag; `(OF 0x07)` for versions without a name.
pub fn version_tag(version: u8) -> String {
    match version {
        1..=6 => format!("OF1.{}", version - 1),
        v => format!("OF 0x{v:02x}"),
    }
}

/// The message's printed name: `OFPT_*`, `NXT_*`, `ONFT_*`, or `OFPST_* request|reply` for
/// multipart messages.
pub fn message_name(m: &Message) -> String {
    match &m.body {
        Body::MultipartRequest(r) => format!("{} request", r.body.mp_type().name()),
        Body::MultipartReply(r) => format!("{} reply", r.body.mp_type().name()),
        b => b.name().to_string(),
    }
}

/// The message as one line of text (same as its `Display`).
pub fn format_message(m: &Message) -> String {
    m.to_string()
}

/// The message as JSON (serde's externally tagged representation of [`Message`]).
pub fn to_json(m: &Message) -> serde_json::Value {
    serde_json::to_value(m).unwrap_or(serde_json::Value::Null)
}

/// The message as a one-line JSON string.
pub fn to_json_string(m: &Message) -> String {
    serde_json::to_string(m).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

impl Display for Message {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}) (xid={:#x}):",
            message_name(self),
            version_tag(self.version),
            self.xid
        )?;
        let mut s = String::new();
        body_text(&mut s, &self.body)?;
        if !s.is_empty() {
            write!(f, " {s}")?;
        }
        Ok(())
    }
}

fn flags_text(bits: u16, names: &[(u16, &str)]) -> String {
    let mut parts: Vec<String> = names
        .iter()
        .filter(|(b, _)| bits & b != 0)
        .map(|(_, n)| (*n).to_string())
        .collect();
    let known = names.iter().fold(0, |acc, (b, _)| acc | b);
    if bits & !known != 0 {
        parts.push(format!("{:#x}", bits & !known));
    }
    if parts.is_empty() {
        "0".into()
    } else {
        parts.join(" ")
    }
}

fn hello_text(s: &mut String, h: &Hello) -> fmt::Result {
    let mut parts = Vec::new();
    for e in &h.elements {
        match e {
            HelloElement::VersionBitmap(b) => {
                let v: Vec<String> = b.versions().iter().map(|v| format!("{v:#04x}")).collect();
                parts.push(format!("version bitmap: {}", v.join(", ")));
            }
            HelloElement::Unknown { elem_type, data } => {
                parts.push(format!("element type={elem_type} len={}", data.len()))
            }
        }
    }
    if !h.extra.is_empty() {
        parts.push(format!("{} bytes of unknown data", h.extra.len()));
    }
    write!(s, "{}", parts.join("; "))
}

fn error_text(s: &mut String, e: &ErrorMsg) -> fmt::Result {
    write!(s, "{}", e.error)?;
    if let Some(t) = e.text() {
        if !t.is_empty() {
            write!(s, " \"{}\"", t.escape_debug())?;
        }
        return Ok(());
    }
    match Header::peek(&e.data) {
        Some(h) => write!(
            s,
            " offending {} ({}) (xid={:#x}) len={} ({} bytes kept)",
            h.msg_type.name(),
            version_tag(h.version),
            h.xid,
            h.length,
            e.data.len()
        ),
        None => write!(s, " {} bytes of data", e.data.len()),
    }
}

fn async_text(s: &mut String, a: &AsyncConfig) -> fmt::Result {
    for (i, who) in ["master", "slave"].iter().enumerate() {
        let g = |m: &[u32; 2]| m.get(i).copied().unwrap_or(0);
        write!(
            s,
            "{}{who}: packet_in={:#x} port_status={:#x} flow_removed={:#x}",
            if i == 0 { "" } else { " " },
            g(&a.packet_in_mask),
            g(&a.port_status_mask),
            g(&a.flow_removed_mask)
        )?;
    }
    Ok(())
}

fn table_text(t: u8) -> String {
    if t == OFPTT_ALL {
        "all".into()
    } else {
        t.to_string()
    }
}

fn flow_req_text(s: &mut String, r: &FlowStatsRequest) -> fmt::Result {
    write!(s, "table={}", table_text(r.table_id))?;
    if r.out_port != crate::openflow::multipart::OFPP_ANY {
        write!(s, " out_port={}", PortNo(r.out_port))?;
    }
    if r.out_group != crate::openflow::multipart::OFPG_ANY {
        write!(s, " out_group={}", r.out_group)?;
    }
    if r.cookie_mask != 0 {
        write!(s, " cookie={:#x}/{:#x}", r.cookie, r.cookie_mask)?;
    }
    if !r.r#match.is_empty() {
        write!(s, " {}", r.r#match)?;
    }
    Ok(())
}

fn all_or<T: Display>(v: u32, all: u32, x: T) -> String {
    if v == all {
        "ALL".into()
    } else {
        x.to_string()
    }
}

fn request_text(s: &mut String, b: &Q) -> fmt::Result {
    match b {
        Q::Desc | Q::Table | Q::GroupDesc | Q::GroupFeatures | Q::MeterFeatures | Q::PortDesc => {
            Ok(())
        }
        Q::Flow(r) | Q::Aggregate(r) => flow_req_text(s, r),
        Q::PortStats { port_no } => write!(s, "port_no={}", PortNo(*port_no)),
        Q::Queue { port_no, queue_id } => write!(
            s,
            "port={} queue={}",
            PortNo(*port_no),
            all_or(*queue_id, OFPQ_ALL, queue_id)
        ),
        Q::Group { group_id } => write!(s, "group_id={}", all_or(*group_id, OFPG_ALL, group_id)),
        Q::Meter { meter_id } | Q::MeterConfig { meter_id } => {
            write!(s, "meter={}", all_or(*meter_id, OFPM_ALL, meter_id))
        }
        Q::TableFeatures(v) => write!(s, "{} tables", v.len()),
        Q::Experimenter(e) => write!(
            s,
            "experimenter={:#010x} exp_type={} {} bytes",
            e.experimenter,
            e.exp_type,
            e.data.len()
        ),
        Q::Unknown { mp_type, data } => write!(s, "type={mp_type} {} bytes", data.len()),
    }
}

fn dur(sec: u32, nsec: u32) -> String {
    if nsec == 0 {
        format!("{sec}s")
    } else {
        format!("{sec}.{nsec:09}s")
            .trim_end_matches('0')
            .to_string()
    }
}

fn reply_text(s: &mut String, b: &R) -> fmt::Result {
    match b {
        R::Desc(d) => write!(
            s,
            "mfr={:?} hw={:?} sw={:?} serial={:?} dp={:?}",
            d.mfr_desc, d.hw_desc, d.sw_desc, d.serial_num, d.dp_desc
        ),
        R::Flow(v) => {
            write!(s, "{} flows", v.len())?;
            for e in v {
                write!(
                    s,
                    "; cookie={:#x}, duration={}, table={}, n_packets={}, n_bytes={}, priority={}",
                    e.cookie,
                    dur(e.duration_sec, e.duration_nsec),
                    e.table_id,
                    e.packet_count,
                    e.byte_count,
                    e.priority
                )?;
                if e.idle_timeout != 0 {
                    write!(s, ", idle_timeout={}", e.idle_timeout)?;
                }
                if e.hard_timeout != 0 {
                    write!(s, ", hard_timeout={}", e.hard_timeout)?;
                }
                if !e.r#match.is_empty() {
                    write!(s, ",{}", e.r#match)?;
                }
                write!(s, " actions={}", InstructionList(&e.instructions))?;
            }
            Ok(())
        }
        R::Aggregate(a) => write!(
            s,
            "packet_count={} byte_count={} flow_count={}",
            a.packet_count, a.byte_count, a.flow_count
        ),
        R::Table(v) => {
            write!(s, "{} tables", v.len())?;
            for t in v {
                write!(
                    s,
                    "; table {}: active={}, lookup={}, matched={}",
                    t.table_id, t.active_count, t.lookup_count, t.matched_count
                )?;
            }
            Ok(())
        }
        R::PortStats(v) => {
            write!(s, "{} ports", v.len())?;
            for p in v {
                write!(
                    s,
                    "; port {}: rx pkts={}, bytes={}, drop={}, errs={}, frame={}, over={}, crc={} \
                     tx pkts={}, bytes={}, drop={}, errs={}, coll={}",
                    PortNo(p.port_no),
                    p.rx_packets,
                    p.rx_bytes,
                    p.rx_dropped,
                    p.rx_errors,
                    p.rx_frame_err,
                    p.rx_over_err,
                    p.rx_crc_err,
                    p.tx_packets,
                    p.tx_bytes,
                    p.tx_dropped,
                    p.tx_errors,
                    p.collisions
                )?;
                if p.duration_sec != u32::MAX {
                    write!(s, " duration={}", dur(p.duration_sec, p.duration_nsec))?;
                }
            }
            Ok(())
        }
        R::Queue(v) => {
            write!(s, "{} queues", v.len())?;
            for q in v {
                write!(
                    s,
                    "; port {} queue {}: bytes={}, pkts={}, errors={}",
                    PortNo(q.port_no),
                    q.queue_id,
                    q.tx_bytes,
                    q.tx_packets,
                    q.tx_errors
                )?;
                if q.duration_sec != u32::MAX {
                    write!(s, ", duration={}", dur(q.duration_sec, q.duration_nsec))?;
                }
            }
            Ok(())
        }
        R::Group(v) => {
            write!(s, "{} groups", v.len())?;
            for g in v {
                write!(
                    s,
                    "; group_id={},duration={},ref_count={},packet_count={},byte_count={}",
                    g.group_id,
                    dur(g.duration_sec, g.duration_nsec),
                    g.ref_count,
                    g.packet_count,
                    g.byte_count
                )?;
                for (i, b) in g.bucket_stats.iter().enumerate() {
                    write!(
                        s,
                        ",bucket{i}:packet_count={},byte_count={}",
                        b.packet_count, b.byte_count
                    )?;
                }
            }
            Ok(())
        }
        R::GroupDesc(v) => {
            write!(s, "{} groups", v.len())?;
            for g in v {
                write!(s, "; group_id={},type={}", g.group_id, g.group_type)?;
                for b in &g.buckets {
                    write!(s, ",bucket={b}")?;
                }
            }
            Ok(())
        }
        R::GroupFeatures(g) => write!(
            s,
            "types={:#x} capabilities={:#x} max_groups={:?} actions={:x?}",
            g.types, g.capabilities, g.max_groups, g.actions
        ),
        R::Meter(v) => {
            write!(s, "{} meters", v.len())?;
            for m in v {
                write!(
                    s,
                    "; meter:{} flow_count:{} packet_in_count:{} byte_in_count:{} duration:{} bands:",
                    m.meter_id,
                    m.flow_count,
                    m.packet_in_count,
                    m.byte_in_count,
                    dur(m.duration_sec, m.duration_nsec)
                )?;
                for (i, b) in m.band_stats.iter().enumerate() {
                    write!(
                        s,
                        " {i}: packet_count:{} byte_count:{}",
                        b.packet_band_count, b.byte_band_count
                    )?;
                }
            }
            Ok(())
        }
        R::MeterConfig(v) => {
            write!(s, "{} meters", v.len())?;
            for m in v {
                write!(s, "; meter={} flags={:#x} bands=", m.meter_id, m.flags)?;
                let bands: Vec<String> = m.bands.iter().map(|b| b.to_string()).collect();
                write!(s, "{}", bands.join(","))?;
            }
            Ok(())
        }
        R::MeterFeatures(m) => write!(
            s,
            "max_meter:{} max_bands:{} max_color:{} band_types:{:#x} capabilities:{:#x}",
            m.max_meter, m.max_bands, m.max_color, m.band_types, m.capabilities
        ),
        R::TableFeatures(v) => {
            write!(s, "{} tables", v.len())?;
            for t in v {
                write!(
                    s,
                    "; table {} ({:?}): max_entries={} metadata_match={:#x} metadata_write={:#x} {} properties",
                    t.table_id,
                    t.name,
                    t.max_entries,
                    t.metadata_match,
                    t.metadata_write,
                    t.properties.len()
                )?;
            }
            Ok(())
        }
        R::PortDesc(v) => {
            write!(s, "{} ports", v.len())?;
            for p in v {
                write!(s, "; {p}")?;
            }
            Ok(())
        }
        R::Experimenter(e) => write!(
            s,
            "experimenter={:#010x} exp_type={} {} bytes",
            e.experimenter,
            e.exp_type,
            e.data.len()
        ),
        R::Unknown { mp_type, data } => write!(s, "type={mp_type} {} bytes", data.len()),
    }
}

fn bundle_flags(flags: u16) -> String {
    flags_text(
        flags,
        &[(OFPBF_ATOMIC, "atomic"), (OFPBF_ORDERED, "ordered")],
    )
}

fn bundle_props(s: &mut String, props: &[BundleProp]) -> fmt::Result {
    if !props.is_empty() {
        write!(s, " properties={}", props.len())?;
    }
    Ok(())
}

fn body_text(s: &mut String, b: &Body) -> fmt::Result {
    match b {
        Body::Hello(h) => hello_text(s, h),
        Body::Error(e) => error_text(s, e),
        Body::EchoRequest(e) | Body::EchoReply(e) => {
            write!(s, "{} bytes of payload", e.data.len())
        }
        Body::Experimenter(e) => write!(
            s,
            "experimenter={:#010x} exp_type={} {} bytes",
            e.experimenter,
            e.exp_type,
            e.data.len()
        ),
        Body::SetControllerId(c) => write!(s, "id={}", c.controller_id),
        Body::BundleControl(c) => {
            write!(
                s,
                "bundle_id={:#x} type={} flags={}",
                c.bundle_id,
                c.ctrl_type.name(),
                bundle_flags(c.flags)
            )?;
            bundle_props(s, &c.properties)
        }
        Body::BundleAdd(a) => {
            write!(
                s,
                "bundle_id={:#x} flags={}",
                a.bundle_id,
                bundle_flags(a.flags)
            )?;
            bundle_props(s, &a.properties)?;
            write!(s, " | {}", a.message)
        }
        Body::FeaturesRequest
        | Body::GetConfigRequest
        | Body::BarrierRequest
        | Body::BarrierReply
        | Body::GetAsyncRequest => Ok(()),
        Body::FeaturesReply(r) => {
            write!(
                s,
                "dpid:{:016x} n_tables:{}, n_buffers:{}",
                r.datapath_id, r.n_tables, r.n_buffers
            )?;
            if r.auxiliary_id != 0 {
                write!(s, ", auxiliary_id:{}", r.auxiliary_id)?;
            }
            let caps: Vec<&str> = capabilities::NAMES
                .iter()
                .filter(|(bit, _)| r.capabilities & bit != 0)
                .map(|(_, n)| *n)
                .collect();
            write!(s, " capabilities: {}", caps.join(" "))
        }
        Body::GetConfigReply(c) | Body::SetConfig(c) => {
            let frags = match c.flags & 3 {
                0 => "normal",
                1 => "drop",
                2 => "reassemble",
                _ => "nx-match",
            };
            write!(s, "frags={frags} miss_send_len={}", c.miss_send_len)
        }
        Body::PacketIn(p) => write!(s, "{p}"),
        Body::FlowRemoved(r) => write!(s, "{r}"),
        Body::PortStatus(p) => write!(s, "{p}"),
        Body::PacketOut(p) => write!(s, "{p}"),
        Body::FlowMod(m) => write!(s, "{m}"),
        Body::GroupMod(m) => write!(s, "{m}"),
        Body::PortMod(m) => write!(s, "{m}"),
        Body::TableMod(m) => write!(s, "{m}"),
        Body::MeterMod(m) => write!(s, "{m}"),
        Body::MultipartRequest(r) => {
            request_text(s, &r.body)?;
            if r.flags != 0 {
                write!(s, " flags={}", flags_text(r.flags, &[(1, "more")]))?;
            }
            Ok(())
        }
        Body::MultipartReply(r) => {
            reply_text(s, &r.body)?;
            if r.flags != 0 {
                write!(s, " flags={}", flags_text(r.flags, &[(1, "more")]))?;
            }
            Ok(())
        }
        Body::QueueGetConfigRequest(q) => write!(s, "port={}", PortNo(q.port)),
        Body::QueueGetConfigReply(r) => {
            write!(s, "port={}", PortNo(r.port))?;
            for q in &r.queues {
                write!(s, "; queue {}:", q.queue_id)?;
                for p in &q.properties {
                    match p {
                        QueueProp::MinRate(r) => write!(s, " min_rate:{}", rate(*r))?,
                        QueueProp::MaxRate(r) => write!(s, " max_rate:{}", rate(*r))?,
                        QueueProp::Experimenter { experimenter, data } => write!(
                            s,
                            " experimenter:{experimenter:#010x}({} bytes)",
                            data.len()
                        )?,
                        QueueProp::Unknown { prop_type, data } => {
                            write!(s, " prop{prop_type}({} bytes)", data.len())?
                        }
                    }
                }
            }
            Ok(())
        }
        Body::RoleRequest(r) | Body::RoleReply(r) => {
            write!(s, "role={}", r.role.name())?;
            if let crate::openflow::switch::ControllerRole::Unknown(x) = r.role {
                write!(s, "({x})")?;
            }
            if matches!(
                r.role,
                crate::openflow::switch::ControllerRole::Master
                    | crate::openflow::switch::ControllerRole::Slave
            ) {
                write!(s, " generation_id={}", r.generation_id)?;
            }
            Ok(())
        }
        Body::GetAsyncReply(a) | Body::SetAsync(a) => async_text(s, a),
        Body::Unknown { msg_type, data } => {
            write!(s, "type={msg_type} {} bytes", data.len())
        }
    }
}

/// Queue rate in 1/10 percent: `50.0%`, or `disabled` above 1000.
fn rate(r: u16) -> String {
    if r > 1000 {
        "disabled".into()
    } else {
        format!("{}.{}%", r / 10, r % 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openflow::message::arb::any_message;
    use proptest::prelude::*;

    #[test]
    fn lines() {
        assert_eq!(
            Message::barrier_request(1).to_string(),
            "OFPT_BARRIER_REQUEST (OF1.3) (xid=0x1):"
        );
        assert_eq!(
            Message::hello(0).to_string(),
            "OFPT_HELLO (OF1.3) (xid=0x0): version bitmap: 0x04"
        );
        assert_eq!(
            Message::set_controller_id(3, 123).to_string(),
            "NXT_SET_CONTROLLER_ID (OF1.3) (xid=0x3): id=123"
        );
        assert_eq!(
            Message::bundle_open(0, 1, 3).to_string(),
            "ONFT_BUNDLE_CONTROL (OF1.3) (xid=0x0): bundle_id=0x1 type=OPEN_REQUEST flags=atomic ordered"
        );
        assert_eq!(
            Message::port_stats_request(2, 0xffff_ffff).to_string(),
            "OFPST_PORT request (OF1.3) (xid=0x2): port_no=ANY"
        );
        assert_eq!(version_tag(1), "OF1.0");
        assert_eq!(version_tag(0x3f), "OF 0x3f");
        let j = to_json(&Message::barrier_request(7));
        assert_eq!(j["xid"], 7);
        assert_eq!(j["body"], "BarrierRequest");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn every_message_prints_one_line(m in any_message()) {
            let s = m.to_string();
            prop_assert!(!s.contains('\n'), "{}", s);
            prop_assert!(to_json(&m).is_object());
        }
    }
}
