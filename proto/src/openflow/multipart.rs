//! OFPT_MULTIPART_REQUEST / OFPT_MULTIPART_REPLY for every OpenFlow 1.3 multipart type. Joining a
//! REPLY_MORE sequence is the channel's job ([`crate::openflow::channel::MultipartAssembler`]).

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use crate::openflow::group::{Bucket, GroupType};
use crate::openflow::header::end;
use crate::openflow::instruction::Instruction;
use crate::openflow::meter::MeterBand;
use crate::openflow::oxm::Match;
use crate::openflow::port::Port;
use crate::openflow::table_features::{fixed_str, put_fixed_str, TableFeatures};
use crate::wire::{self, PResult, Wire};

/// `OFPMPF_REQ_MORE`: more requests follow.
pub const OFPMPF_REQ_MORE: u16 = 1;
/// `OFPMPF_REPLY_MORE`: more replies follow.
pub const OFPMPF_REPLY_MORE: u16 = 1;

// The wildcards the requests use, defined where their concept lives.
pub use crate::openflow::group::{OFPG_ALL, OFPG_ANY};
pub use crate::openflow::port::OFPP_ANY;
pub use crate::openflow::table::OFPTT_ALL;
/// `OFPQ_ALL`.
pub const OFPQ_ALL: u32 = 0xffff_ffff;
/// `OFPM_ALL`.
pub const OFPM_ALL: u32 = 0xffff_ffff;

/// `enum ofp_multipart_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum MultipartType {
    Desc,
    Flow,
    Aggregate,
    Table,
    PortStats,
    Queue,
    Group,
    GroupDesc,
    GroupFeatures,
    Meter,
    MeterConfig,
    MeterFeatures,
    TableFeatures,
    PortDesc,
    Experimenter,
    Other(u16),
}

impl MultipartType {
    pub fn from_u16(v: u16) -> Self {
        match v {
            0 => Self::Desc,
            1 => Self::Flow,
            2 => Self::Aggregate,
            3 => Self::Table,
            4 => Self::PortStats,
            5 => Self::Queue,
            6 => Self::Group,
            7 => Self::GroupDesc,
            8 => Self::GroupFeatures,
            9 => Self::Meter,
            10 => Self::MeterConfig,
            11 => Self::MeterFeatures,
            12 => Self::TableFeatures,
            13 => Self::PortDesc,
            0xffff => Self::Experimenter,
            x => Self::Other(x),
        }
    }
    pub fn to_u16(self) -> u16 {
        match self {
            Self::Desc => 0,
            Self::Flow => 1,
            Self::Aggregate => 2,
            Self::Table => 3,
            Self::PortStats => 4,
            Self::Queue => 5,
            Self::Group => 6,
            Self::GroupDesc => 7,
            Self::GroupFeatures => 8,
            Self::Meter => 9,
            Self::MeterConfig => 10,
            Self::MeterFeatures => 11,
            Self::TableFeatures => 12,
            Self::PortDesc => 13,
            Self::Experimenter => 0xffff,
            Self::Other(x) => x,
        }
    }
    /// Open vSwitch's name, e.g. `OFPST_PORT`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Desc => "OFPST_DESC",
            Self::Flow => "OFPST_FLOW",
            Self::Aggregate => "OFPST_AGGREGATE",
            Self::Table => "OFPST_TABLE",
            Self::PortStats => "OFPST_PORT",
            Self::Queue => "OFPST_QUEUE",
            Self::Group => "OFPST_GROUP",
            Self::GroupDesc => "OFPST_GROUP_DESC",
            Self::GroupFeatures => "OFPST_GROUP_FEATURES",
            Self::Meter => "OFPST_METER",
            Self::MeterConfig => "OFPST_METER_CONFIG",
            Self::MeterFeatures => "OFPST_METER_FEATURES",
            Self::TableFeatures => "OFPST_TABLE_FEATURES",
            Self::PortDesc => "OFPST_PORT_DESC",
            Self::Experimenter => "OFPST_EXPERIMENTER",
            Self::Other(_) => "OFPST_UNKNOWN",
        }
    }
}

// ---- helpers ------------------------------------------------------------------------------------

/// Reads a structure that starts with a u16 length (at `len_at`) covering the whole structure:
/// returns (rest after the structure, the structure's bytes).
fn sized<'a>(
    input: &'a [u8],
    len_at: usize,
    min: usize,
    what: &'static str,
) -> PResult<'a, &'a [u8]> {
    let (after, _) = wire::take(input, len_at, what)?;
    let (_, len) = wire::u16_(after, what)?;
    let len = usize::from(len);
    if len < min {
        return wire::bad_length(input, what, len, "shorter than its fixed part");
    }
    wire::take(input, len, what)
}

// ---- request bodies -----------------------------------------------------------------------------

/// `struct ofp_flow_stats_request` / `ofp_aggregate_stats_request`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlowStatsRequest {
    pub table_id: u8,
    pub out_port: u32,
    pub out_group: u32,
    pub cookie: u64,
    pub cookie_mask: u64,
    pub r#match: Match,
}

impl Default for FlowStatsRequest {
    /// Every flow of every table.
    fn default() -> Self {
        FlowStatsRequest {
            table_id: OFPTT_ALL,
            out_port: OFPP_ANY,
            out_group: OFPG_ANY,
            cookie: 0,
            cookie_mask: 0,
            r#match: Match::default(),
        }
    }
}

impl Wire for FlowStatsRequest {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, table_id) = wire::u8_(input, "ofp_flow_stats_request.table_id")?;
        let (i, ()) = wire::skip(i, 3, "ofp_flow_stats_request.pad")?;
        let (i, out_port) = wire::u32_(i, "ofp_flow_stats_request.out_port")?;
        let (i, out_group) = wire::u32_(i, "ofp_flow_stats_request.out_group")?;
        let (i, ()) = wire::skip(i, 4, "ofp_flow_stats_request.pad2")?;
        let (i, cookie) = wire::u64_(i, "ofp_flow_stats_request.cookie")?;
        let (i, cookie_mask) = wire::u64_(i, "ofp_flow_stats_request.cookie_mask")?;
        let (i, m) = Match::decode(i)?;
        Ok((
            i,
            FlowStatsRequest {
                table_id,
                out_port,
                out_group,
                cookie,
                cookie_mask,
                r#match: m,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u8(self.table_id);
        wire::put_zeros(out, 3);
        out.put_u32(self.out_port);
        out.put_u32(self.out_group);
        wire::put_zeros(out, 4);
        out.put_u64(self.cookie);
        out.put_u64(self.cookie_mask);
        self.r#match.encode(out);
    }
}

/// `struct ofp_experimenter_multipart_header` and the bytes after it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ExperimenterMultipart {
    pub experimenter: u32,
    pub exp_type: u32,
    pub data: Vec<u8>,
}

impl Wire for ExperimenterMultipart {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, experimenter) =
            wire::u32_(input, "ofp_experimenter_multipart_header.experimenter")?;
        let (i, exp_type) = wire::u32_(i, "ofp_experimenter_multipart_header.exp_type")?;
        Ok((
            end(i),
            ExperimenterMultipart {
                experimenter,
                exp_type,
                data: i.to_vec(),
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u32(self.experimenter);
        out.put_u32(self.exp_type);
        out.put_slice(&self.data);
    }
}

/// The body of a MULTIPART_REQUEST, by type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum MultipartRequestBody {
    Desc,
    Flow(FlowStatsRequest),
    Aggregate(FlowStatsRequest),
    Table,
    /// OFPMP_PORT_STATS for `port_no` (`OFPP_ANY` for all).
    PortStats {
        port_no: u32,
    },
    /// OFPMP_QUEUE for `port_no` (`OFPP_ANY`) and `queue_id` (`OFPQ_ALL`).
    Queue {
        port_no: u32,
        queue_id: u32,
    },
    /// OFPMP_GROUP for `group_id` (`OFPG_ALL`).
    Group {
        group_id: u32,
    },
    GroupDesc,
    GroupFeatures,
    /// OFPMP_METER for `meter_id` (`OFPM_ALL`).
    Meter {
        meter_id: u32,
    },
    /// OFPMP_METER_CONFIG for `meter_id` (`OFPM_ALL`).
    MeterConfig {
        meter_id: u32,
    },
    MeterFeatures,
    /// OFPMP_TABLE_FEATURES: empty to query, non-empty to set.
    TableFeatures(Vec<TableFeatures>),
    PortDesc,
    Experimenter(ExperimenterMultipart),
    /// A multipart type OpenFlow 1.3 does not define: the bytes after the multipart header.
    Unknown {
        mp_type: u16,
        data: Vec<u8>,
    },
}

impl MultipartRequestBody {
    pub fn mp_type(&self) -> MultipartType {
        match self {
            Self::Desc => MultipartType::Desc,
            Self::Flow(_) => MultipartType::Flow,
            Self::Aggregate(_) => MultipartType::Aggregate,
            Self::Table => MultipartType::Table,
            Self::PortStats { .. } => MultipartType::PortStats,
            Self::Queue { .. } => MultipartType::Queue,
            Self::Group { .. } => MultipartType::Group,
            Self::GroupDesc => MultipartType::GroupDesc,
            Self::GroupFeatures => MultipartType::GroupFeatures,
            Self::Meter { .. } => MultipartType::Meter,
            Self::MeterConfig { .. } => MultipartType::MeterConfig,
            Self::MeterFeatures => MultipartType::MeterFeatures,
            Self::TableFeatures(_) => MultipartType::TableFeatures,
            Self::PortDesc => MultipartType::PortDesc,
            Self::Experimenter(_) => MultipartType::Experimenter,
            Self::Unknown { mp_type, .. } => MultipartType::from_u16(*mp_type),
        }
    }
}

/// OFPT_MULTIPART_REQUEST body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MultipartRequest {
    /// `OFPMPF_REQ_MORE` and reserved bits.
    pub flags: u16,
    pub body: MultipartRequestBody,
}

impl MultipartRequest {
    pub fn new(body: MultipartRequestBody) -> Self {
        MultipartRequest { flags: 0, body }
    }
}

/// Reads a u32 id followed by 4 pad bytes, exactly filling `i`.
fn id_pad<'a>(i: &'a [u8], what: &'static str) -> PResult<'a, u32> {
    let (i, v) = wire::u32_(i, what)?;
    let (i, ()) = wire::skip(i, 4, what)?;
    Ok((i, v))
}

impl Wire for MultipartRequest {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, t) = wire::u16_(input, "ofp_multipart_request.type")?;
        let (i, flags) = wire::u16_(i, "ofp_multipart_request.flags")?;
        let (i, ()) = wire::skip(i, 4, "ofp_multipart_request.pad")?;
        let (rest, body) = match MultipartType::from_u16(t) {
            MultipartType::Desc => (i, MultipartRequestBody::Desc),
            MultipartType::Table => (i, MultipartRequestBody::Table),
            MultipartType::GroupDesc => (i, MultipartRequestBody::GroupDesc),
            MultipartType::GroupFeatures => (i, MultipartRequestBody::GroupFeatures),
            MultipartType::MeterFeatures => (i, MultipartRequestBody::MeterFeatures),
            MultipartType::PortDesc => (i, MultipartRequestBody::PortDesc),
            MultipartType::Flow => {
                let (r, f) = FlowStatsRequest::decode(i)?;
                (r, MultipartRequestBody::Flow(f))
            }
            MultipartType::Aggregate => {
                let (r, f) = FlowStatsRequest::decode(i)?;
                (r, MultipartRequestBody::Aggregate(f))
            }
            MultipartType::PortStats => {
                let (r, port_no) = id_pad(i, "ofp_port_stats_request")?;
                (r, MultipartRequestBody::PortStats { port_no })
            }
            MultipartType::Queue => {
                let (r, port_no) = wire::u32_(i, "ofp_queue_stats_request.port_no")?;
                let (r, queue_id) = wire::u32_(r, "ofp_queue_stats_request.queue_id")?;
                (r, MultipartRequestBody::Queue { port_no, queue_id })
            }
            MultipartType::Group => {
                let (r, group_id) = id_pad(i, "ofp_group_stats_request")?;
                (r, MultipartRequestBody::Group { group_id })
            }
            MultipartType::Meter => {
                let (r, meter_id) = id_pad(i, "ofp_meter_multipart_request")?;
                (r, MultipartRequestBody::Meter { meter_id })
            }
            MultipartType::MeterConfig => {
                let (r, meter_id) = id_pad(i, "ofp_meter_multipart_request")?;
                (r, MultipartRequestBody::MeterConfig { meter_id })
            }
            MultipartType::TableFeatures => {
                let (r, v) = wire::many_exact::<TableFeatures>(i)?;
                (r, MultipartRequestBody::TableFeatures(v))
            }
            MultipartType::Experimenter => {
                let (r, e) = ExperimenterMultipart::decode(i)?;
                (r, MultipartRequestBody::Experimenter(e))
            }
            MultipartType::Other(mp_type) => (
                end(i),
                MultipartRequestBody::Unknown {
                    mp_type,
                    data: i.to_vec(),
                },
            ),
        };
        Ok((rest, MultipartRequest { flags, body }))
    }

    fn encode(&self, out: &mut BytesMut) {
        out.put_u16(self.body.mp_type().to_u16());
        out.put_u16(self.flags);
        wire::put_zeros(out, 4);
        match &self.body {
            MultipartRequestBody::Desc
            | MultipartRequestBody::Table
            | MultipartRequestBody::GroupDesc
            | MultipartRequestBody::GroupFeatures
            | MultipartRequestBody::MeterFeatures
            | MultipartRequestBody::PortDesc => {}
            MultipartRequestBody::Flow(f) | MultipartRequestBody::Aggregate(f) => f.encode(out),
            MultipartRequestBody::PortStats { port_no: id }
            | MultipartRequestBody::Group { group_id: id }
            | MultipartRequestBody::Meter { meter_id: id }
            | MultipartRequestBody::MeterConfig { meter_id: id } => {
                out.put_u32(*id);
                wire::put_zeros(out, 4);
            }
            MultipartRequestBody::Queue { port_no, queue_id } => {
                out.put_u32(*port_no);
                out.put_u32(*queue_id);
            }
            MultipartRequestBody::TableFeatures(v) => v.iter().for_each(|t| t.encode(out)),
            MultipartRequestBody::Experimenter(e) => e.encode(out),
            MultipartRequestBody::Unknown { data, .. } => out.put_slice(data),
        }
    }
}

// ---- reply bodies -------------------------------------------------------------------------------

pub const DESC_STR_LEN: usize = 256;
pub const SERIAL_NUM_LEN: usize = 32;

/// `struct ofp_desc` (OFPMP_DESC reply). Text fields are NUL-padded on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Desc {
    pub mfr_desc: String,
    pub hw_desc: String,
    pub sw_desc: String,
    pub serial_num: String,
    pub dp_desc: String,
}

impl Wire for Desc {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, mfr) = wire::take(input, DESC_STR_LEN, "ofp_desc.mfr_desc")?;
        let (i, hw) = wire::take(i, DESC_STR_LEN, "ofp_desc.hw_desc")?;
        let (i, sw) = wire::take(i, DESC_STR_LEN, "ofp_desc.sw_desc")?;
        let (i, serial) = wire::take(i, SERIAL_NUM_LEN, "ofp_desc.serial_num")?;
        let (i, dp) = wire::take(i, DESC_STR_LEN, "ofp_desc.dp_desc")?;
        Ok((
            i,
            Desc {
                mfr_desc: fixed_str(mfr),
                hw_desc: fixed_str(hw),
                sw_desc: fixed_str(sw),
                serial_num: fixed_str(serial),
                dp_desc: fixed_str(dp),
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        put_fixed_str(out, &self.mfr_desc, DESC_STR_LEN);
        put_fixed_str(out, &self.hw_desc, DESC_STR_LEN);
        put_fixed_str(out, &self.sw_desc, DESC_STR_LEN);
        put_fixed_str(out, &self.serial_num, SERIAL_NUM_LEN);
        put_fixed_str(out, &self.dp_desc, DESC_STR_LEN);
    }
}

/// `struct ofp_flow_stats` (one entry of an OFPMP_FLOW reply).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlowStats {
    pub table_id: u8,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub flags: u16,
    pub cookie: u64,
    pub packet_count: u64,
    pub byte_count: u64,
    pub r#match: Match,
    pub instructions: Vec<Instruction>,
}

impl From<&crate::openflow::flow::FlowMod> for FlowStats {
    /// What a switch reports for a flow it was told to add (counters and age zero).
    fn from(f: &crate::openflow::flow::FlowMod) -> Self {
        FlowStats {
            table_id: f.table_id,
            duration_sec: 0,
            duration_nsec: 0,
            priority: f.priority,
            idle_timeout: f.idle_timeout,
            hard_timeout: f.hard_timeout,
            flags: f.flags,
            cookie: f.cookie,
            packet_count: 0,
            byte_count: 0,
            r#match: f.r#match.clone(),
            instructions: f.instructions.clone(),
        }
    }
}

impl Wire for FlowStats {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (rest, b) = sized(input, 0, 48, "ofp_flow_stats")?;
        let (i, _) = wire::u16_(b, "ofp_flow_stats.length")?;
        let (i, table_id) = wire::u8_(i, "ofp_flow_stats.table_id")?;
        let (i, ()) = wire::skip(i, 1, "ofp_flow_stats.pad")?;
        let (i, duration_sec) = wire::u32_(i, "ofp_flow_stats.duration_sec")?;
        let (i, duration_nsec) = wire::u32_(i, "ofp_flow_stats.duration_nsec")?;
        let (i, priority) = wire::u16_(i, "ofp_flow_stats.priority")?;
        let (i, idle_timeout) = wire::u16_(i, "ofp_flow_stats.idle_timeout")?;
        let (i, hard_timeout) = wire::u16_(i, "ofp_flow_stats.hard_timeout")?;
        let (i, flags) = wire::u16_(i, "ofp_flow_stats.flags")?;
        let (i, ()) = wire::skip(i, 4, "ofp_flow_stats.pad2")?;
        let (i, cookie) = wire::u64_(i, "ofp_flow_stats.cookie")?;
        let (i, packet_count) = wire::u64_(i, "ofp_flow_stats.packet_count")?;
        let (i, byte_count) = wire::u64_(i, "ofp_flow_stats.byte_count")?;
        let (i, m) = Match::decode(i)?;
        let (_, instructions) = wire::many_exact::<Instruction>(i)?;
        Ok((
            rest,
            FlowStats {
                table_id,
                duration_sec,
                duration_nsec,
                priority,
                idle_timeout,
                hard_timeout,
                flags,
                cookie,
                packet_count,
                byte_count,
                r#match: m,
                instructions,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_u16(0);
        out.put_u8(self.table_id);
        wire::put_zeros(out, 1);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
        out.put_u16(self.priority);
        out.put_u16(self.idle_timeout);
        out.put_u16(self.hard_timeout);
        out.put_u16(self.flags);
        wire::put_zeros(out, 4);
        out.put_u64(self.cookie);
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        self.r#match.encode(out);
        for ins in &self.instructions {
            ins.encode(out);
        }
        let len = out.len() - start;
        wire::patch_u16(out, start, wire::len_u16(len));
    }
}

/// `struct ofp_aggregate_stats_reply`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct AggregateStats {
    pub packet_count: u64,
    pub byte_count: u64,
    pub flow_count: u32,
}

impl Wire for AggregateStats {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, packet_count) = wire::u64_(input, "ofp_aggregate_stats_reply.packet_count")?;
        let (i, byte_count) = wire::u64_(i, "ofp_aggregate_stats_reply.byte_count")?;
        let (i, flow_count) = wire::u32_(i, "ofp_aggregate_stats_reply.flow_count")?;
        let (i, ()) = wire::skip(i, 4, "ofp_aggregate_stats_reply.pad")?;
        Ok((
            i,
            AggregateStats {
                packet_count,
                byte_count,
                flow_count,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        out.put_u32(self.flow_count);
        wire::put_zeros(out, 4);
    }
}

/// `struct ofp_table_stats`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct TableStats {
    pub table_id: u8,
    pub active_count: u32,
    pub lookup_count: u64,
    pub matched_count: u64,
}

impl Wire for TableStats {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, table_id) = wire::u8_(input, "ofp_table_stats.table_id")?;
        let (i, ()) = wire::skip(i, 3, "ofp_table_stats.pad")?;
        let (i, active_count) = wire::u32_(i, "ofp_table_stats.active_count")?;
        let (i, lookup_count) = wire::u64_(i, "ofp_table_stats.lookup_count")?;
        let (i, matched_count) = wire::u64_(i, "ofp_table_stats.matched_count")?;
        Ok((
            i,
            TableStats {
                table_id,
                active_count,
                lookup_count,
                matched_count,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u8(self.table_id);
        wire::put_zeros(out, 3);
        out.put_u32(self.active_count);
        out.put_u64(self.lookup_count);
        out.put_u64(self.matched_count);
    }
}

/// `struct ofp_port_stats` (112 bytes).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct PortStats {
    pub port_no: u32,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    pub rx_frame_err: u64,
    pub rx_over_err: u64,
    pub rx_crc_err: u64,
    pub collisions: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

/// Size of `struct ofp_port_stats`.
const PORT_STATS_LEN: usize = 112;

impl Wire for PortStats {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, port_no) = wire::u32_(input, "ofp_port_stats.port_no")?;
        let (mut i, ()) = wire::skip(i, 4, "ofp_port_stats.pad")?;
        let mut c = [0u64; 12];
        for v in &mut c {
            let (r, x) = wire::u64_(i, "ofp_port_stats counter")?;
            *v = x;
            i = r;
        }
        let (i, duration_sec) = wire::u32_(i, "ofp_port_stats.duration_sec")?;
        let (i, duration_nsec) = wire::u32_(i, "ofp_port_stats.duration_nsec")?;
        let [rx_packets, tx_packets, rx_bytes, tx_bytes, rx_dropped, tx_dropped, rx_errors, tx_errors, rx_frame_err, rx_over_err, rx_crc_err, collisions] =
            c;
        Ok((
            i,
            PortStats {
                port_no,
                rx_packets,
                tx_packets,
                rx_bytes,
                tx_bytes,
                rx_dropped,
                tx_dropped,
                rx_errors,
                tx_errors,
                rx_frame_err,
                rx_over_err,
                rx_crc_err,
                collisions,
                duration_sec,
                duration_nsec,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        // Built on the stack and appended once: 14 separate `put_*` calls each pay BytesMut's
        // capacity check, which made a 48-port reply encode several times slower than decode.
        let mut e = [0u8; PORT_STATS_LEN];
        let counters = [
            self.rx_packets,
            self.tx_packets,
            self.rx_bytes,
            self.tx_bytes,
            self.rx_dropped,
            self.tx_dropped,
            self.rx_errors,
            self.tx_errors,
            self.rx_frame_err,
            self.rx_over_err,
            self.rx_crc_err,
            self.collisions,
        ];
        let mut dst = e.iter_mut();
        let mut put = |bytes: &[u8]| {
            // `bytes` first: zip then stops without taking (and losing) one more `dst` byte.
            for (b, d) in bytes.iter().zip(dst.by_ref()) {
                *d = *b;
            }
        };
        put(&self.port_no.to_be_bytes());
        put(&[0; 4]);
        for v in counters {
            put(&v.to_be_bytes());
        }
        put(&self.duration_sec.to_be_bytes());
        put(&self.duration_nsec.to_be_bytes());
        out.put_slice(&e);
    }
}

/// `struct ofp_queue_stats`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct QueueStats {
    pub port_no: u32,
    pub queue_id: u32,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

impl Wire for QueueStats {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, port_no) = wire::u32_(input, "ofp_queue_stats.port_no")?;
        let (i, queue_id) = wire::u32_(i, "ofp_queue_stats.queue_id")?;
        let (i, tx_bytes) = wire::u64_(i, "ofp_queue_stats.tx_bytes")?;
        let (i, tx_packets) = wire::u64_(i, "ofp_queue_stats.tx_packets")?;
        let (i, tx_errors) = wire::u64_(i, "ofp_queue_stats.tx_errors")?;
        let (i, duration_sec) = wire::u32_(i, "ofp_queue_stats.duration_sec")?;
        let (i, duration_nsec) = wire::u32_(i, "ofp_queue_stats.duration_nsec")?;
        Ok((
            i,
            QueueStats {
                port_no,
                queue_id,
                tx_bytes,
                tx_packets,
                tx_errors,
                duration_sec,
                duration_nsec,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u32(self.port_no);
        out.put_u32(self.queue_id);
        out.put_u64(self.tx_bytes);
        out.put_u64(self.tx_packets);
        out.put_u64(self.tx_errors);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
    }
}

/// `struct ofp_bucket_counter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct BucketCounter {
    pub packet_count: u64,
    pub byte_count: u64,
}

impl Wire for BucketCounter {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, packet_count) = wire::u64_(input, "ofp_bucket_counter.packet_count")?;
        let (i, byte_count) = wire::u64_(i, "ofp_bucket_counter.byte_count")?;
        Ok((
            i,
            BucketCounter {
                packet_count,
                byte_count,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
    }
}

/// `struct ofp_group_stats`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct GroupStats {
    pub group_id: u32,
    pub ref_count: u32,
    pub packet_count: u64,
    pub byte_count: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub bucket_stats: Vec<BucketCounter>,
}

impl Wire for GroupStats {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (rest, b) = sized(input, 0, 40, "ofp_group_stats")?;
        let (i, _) = wire::u16_(b, "ofp_group_stats.length")?;
        let (i, ()) = wire::skip(i, 2, "ofp_group_stats.pad")?;
        let (i, group_id) = wire::u32_(i, "ofp_group_stats.group_id")?;
        let (i, ref_count) = wire::u32_(i, "ofp_group_stats.ref_count")?;
        let (i, ()) = wire::skip(i, 4, "ofp_group_stats.pad2")?;
        let (i, packet_count) = wire::u64_(i, "ofp_group_stats.packet_count")?;
        let (i, byte_count) = wire::u64_(i, "ofp_group_stats.byte_count")?;
        let (i, duration_sec) = wire::u32_(i, "ofp_group_stats.duration_sec")?;
        let (i, duration_nsec) = wire::u32_(i, "ofp_group_stats.duration_nsec")?;
        let (_, bucket_stats) = wire::many_exact::<BucketCounter>(i)?;
        Ok((
            rest,
            GroupStats {
                group_id,
                ref_count,
                packet_count,
                byte_count,
                duration_sec,
                duration_nsec,
                bucket_stats,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_u16(0);
        wire::put_zeros(out, 2);
        out.put_u32(self.group_id);
        out.put_u32(self.ref_count);
        wire::put_zeros(out, 4);
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
        for b in &self.bucket_stats {
            b.encode(out);
        }
        let len = out.len() - start;
        wire::patch_u16(out, start, wire::len_u16(len));
    }
}

/// `struct ofp_group_desc` (one entry of an OFPMP_GROUP_DESC reply).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct GroupDesc {
    pub group_type: GroupType,
    pub group_id: u32,
    pub buckets: Vec<Bucket>,
}

impl From<&crate::openflow::group::GroupMod> for GroupDesc {
    /// What a switch describes for a group it was told to add.
    fn from(g: &crate::openflow::group::GroupMod) -> Self {
        GroupDesc {
            group_type: g.group_type,
            group_id: g.group_id,
            buckets: g.buckets.clone(),
        }
    }
}

impl Wire for GroupDesc {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (rest, b) = sized(input, 0, 8, "ofp_group_desc")?;
        let (i, _) = wire::u16_(b, "ofp_group_desc.length")?;
        let (i, t) = wire::u8_(i, "ofp_group_desc.type")?;
        let (i, ()) = wire::skip(i, 1, "ofp_group_desc.pad")?;
        let (i, group_id) = wire::u32_(i, "ofp_group_desc.group_id")?;
        let (_, buckets) = wire::many_exact::<Bucket>(i)?;
        Ok((
            rest,
            GroupDesc {
                group_type: GroupType::from_u8(t),
                group_id,
                buckets,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_u16(0);
        out.put_u8(self.group_type.to_u8());
        wire::put_zeros(out, 1);
        out.put_u32(self.group_id);
        for b in &self.buckets {
            b.encode(out);
        }
        let len = out.len() - start;
        wire::patch_u16(out, start, wire::len_u16(len));
    }
}

/// `struct ofp_group_features`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct GroupFeatures {
    /// Bitmap of supported group types (1 << OFPGT_*).
    pub types: u32,
    /// Bitmap of `ofp_group_capabilities`.
    pub capabilities: u32,
    /// Maximum number of groups for each type (ALL, SELECT, INDIRECT, FF).
    pub max_groups: [u32; 4],
    /// Bitmaps of supported action types for each group type.
    pub actions: [u32; 4],
}

impl Wire for GroupFeatures {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (mut i, types) = wire::u32_(input, "ofp_group_features.types")?;
        let (r, capabilities) = wire::u32_(i, "ofp_group_features.capabilities")?;
        i = r;
        let mut v = [0u32; 8];
        for x in &mut v {
            let (r, y) = wire::u32_(i, "ofp_group_features.max_groups/actions")?;
            *x = y;
            i = r;
        }
        let [a, b, c, d, e, f, g, h] = v;
        Ok((
            i,
            GroupFeatures {
                types,
                capabilities,
                max_groups: [a, b, c, d],
                actions: [e, f, g, h],
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u32(self.types);
        out.put_u32(self.capabilities);
        for x in self.max_groups.iter().chain(self.actions.iter()) {
            out.put_u32(*x);
        }
    }
}

/// `struct ofp_meter_band_stats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct MeterBandStats {
    pub packet_band_count: u64,
    pub byte_band_count: u64,
}

impl Wire for MeterBandStats {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, packet_band_count) = wire::u64_(input, "ofp_meter_band_stats.packet_band_count")?;
        let (i, byte_band_count) = wire::u64_(i, "ofp_meter_band_stats.byte_band_count")?;
        Ok((
            i,
            MeterBandStats {
                packet_band_count,
                byte_band_count,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u64(self.packet_band_count);
        out.put_u64(self.byte_band_count);
    }
}

/// `struct ofp_meter_stats`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct MeterStats {
    pub meter_id: u32,
    pub flow_count: u32,
    pub packet_in_count: u64,
    pub byte_in_count: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub band_stats: Vec<MeterBandStats>,
}

impl Wire for MeterStats {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (rest, b) = sized(input, 4, 40, "ofp_meter_stats")?;
        let (i, meter_id) = wire::u32_(b, "ofp_meter_stats.meter_id")?;
        let (i, _) = wire::u16_(i, "ofp_meter_stats.len")?;
        let (i, ()) = wire::skip(i, 6, "ofp_meter_stats.pad")?;
        let (i, flow_count) = wire::u32_(i, "ofp_meter_stats.flow_count")?;
        let (i, packet_in_count) = wire::u64_(i, "ofp_meter_stats.packet_in_count")?;
        let (i, byte_in_count) = wire::u64_(i, "ofp_meter_stats.byte_in_count")?;
        let (i, duration_sec) = wire::u32_(i, "ofp_meter_stats.duration_sec")?;
        let (i, duration_nsec) = wire::u32_(i, "ofp_meter_stats.duration_nsec")?;
        let (_, band_stats) = wire::many_exact::<MeterBandStats>(i)?;
        Ok((
            rest,
            MeterStats {
                meter_id,
                flow_count,
                packet_in_count,
                byte_in_count,
                duration_sec,
                duration_nsec,
                band_stats,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_u32(self.meter_id);
        out.put_u16(0);
        wire::put_zeros(out, 6);
        out.put_u32(self.flow_count);
        out.put_u64(self.packet_in_count);
        out.put_u64(self.byte_in_count);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
        for b in &self.band_stats {
            b.encode(out);
        }
        let len = out.len() - start;
        wire::patch_u16(out, start + 4, wire::len_u16(len));
    }
}

/// `struct ofp_meter_config` (one entry of an OFPMP_METER_CONFIG reply).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct MeterConfig {
    /// `ofp_meter_flags` (KBPS=1, PKTPS=2, BURST=4, STATS=8).
    pub flags: u16,
    pub meter_id: u32,
    pub bands: Vec<MeterBand>,
}

impl Wire for MeterConfig {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (rest, b) = sized(input, 0, 8, "ofp_meter_config")?;
        let (i, _) = wire::u16_(b, "ofp_meter_config.length")?;
        let (i, flags) = wire::u16_(i, "ofp_meter_config.flags")?;
        let (i, meter_id) = wire::u32_(i, "ofp_meter_config.meter_id")?;
        let (_, bands) = wire::many_exact::<MeterBand>(i)?;
        Ok((
            rest,
            MeterConfig {
                flags,
                meter_id,
                bands,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_u16(0);
        out.put_u16(self.flags);
        out.put_u32(self.meter_id);
        for b in &self.bands {
            b.encode(out);
        }
        let len = out.len() - start;
        wire::patch_u16(out, start, wire::len_u16(len));
    }
}

/// `struct ofp_meter_features`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct MeterFeatures {
    pub max_meter: u32,
    /// Bitmap of 1 << OFPMBT_*.
    pub band_types: u32,
    /// Bitmap of `ofp_meter_flags`.
    pub capabilities: u32,
    pub max_bands: u8,
    pub max_color: u8,
}

impl Wire for MeterFeatures {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, max_meter) = wire::u32_(input, "ofp_meter_features.max_meter")?;
        let (i, band_types) = wire::u32_(i, "ofp_meter_features.band_types")?;
        let (i, capabilities) = wire::u32_(i, "ofp_meter_features.capabilities")?;
        let (i, max_bands) = wire::u8_(i, "ofp_meter_features.max_bands")?;
        let (i, max_color) = wire::u8_(i, "ofp_meter_features.max_color")?;
        let (i, ()) = wire::skip(i, 2, "ofp_meter_features.pad")?;
        Ok((
            i,
            MeterFeatures {
                max_meter,
                band_types,
                capabilities,
                max_bands,
                max_color,
            },
        ))
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u32(self.max_meter);
        out.put_u32(self.band_types);
        out.put_u32(self.capabilities);
        out.put_u8(self.max_bands);
        out.put_u8(self.max_color);
        wire::put_zeros(out, 2);
    }
}

/// The body of a MULTIPART_REPLY, by type. List-valued bodies hold the entries of one message;
/// [`crate::openflow::channel::MultipartAssembler`] joins a REPLY_MORE sequence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum MultipartReplyBody {
    Desc(Desc),
    Flow(Vec<FlowStats>),
    Aggregate(AggregateStats),
    Table(Vec<TableStats>),
    PortStats(Vec<PortStats>),
    Queue(Vec<QueueStats>),
    Group(Vec<GroupStats>),
    GroupDesc(Vec<GroupDesc>),
    GroupFeatures(GroupFeatures),
    Meter(Vec<MeterStats>),
    MeterConfig(Vec<MeterConfig>),
    MeterFeatures(MeterFeatures),
    TableFeatures(Vec<TableFeatures>),
    PortDesc(Vec<Port>),
    Experimenter(ExperimenterMultipart),
    /// A multipart type OpenFlow 1.3 does not define: the bytes after the multipart header.
    Unknown {
        mp_type: u16,
        data: Vec<u8>,
    },
}

impl MultipartReplyBody {
    pub fn mp_type(&self) -> MultipartType {
        match self {
            Self::Desc(_) => MultipartType::Desc,
            Self::Flow(_) => MultipartType::Flow,
            Self::Aggregate(_) => MultipartType::Aggregate,
            Self::Table(_) => MultipartType::Table,
            Self::PortStats(_) => MultipartType::PortStats,
            Self::Queue(_) => MultipartType::Queue,
            Self::Group(_) => MultipartType::Group,
            Self::GroupDesc(_) => MultipartType::GroupDesc,
            Self::GroupFeatures(_) => MultipartType::GroupFeatures,
            Self::Meter(_) => MultipartType::Meter,
            Self::MeterConfig(_) => MultipartType::MeterConfig,
            Self::MeterFeatures(_) => MultipartType::MeterFeatures,
            Self::TableFeatures(_) => MultipartType::TableFeatures,
            Self::PortDesc(_) => MultipartType::PortDesc,
            Self::Experimenter(_) => MultipartType::Experimenter,
            Self::Unknown { mp_type, .. } => MultipartType::from_u16(*mp_type),
        }
    }

    /// Number of entries (1 for single-valued bodies).
    pub fn len(&self) -> usize {
        match self {
            Self::Flow(v) => v.len(),
            Self::Table(v) => v.len(),
            Self::PortStats(v) => v.len(),
            Self::Queue(v) => v.len(),
            Self::Group(v) => v.len(),
            Self::GroupDesc(v) => v.len(),
            Self::Meter(v) => v.len(),
            Self::MeterConfig(v) => v.len(),
            Self::TableFeatures(v) => v.len(),
            Self::PortDesc(v) => v.len(),
            _ => 1,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// OFPT_MULTIPART_REPLY body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MultipartReply {
    /// `OFPMPF_REPLY_MORE` and reserved bits.
    pub flags: u16,
    pub body: MultipartReplyBody,
}

impl MultipartReply {
    pub fn new(body: MultipartReplyBody) -> Self {
        MultipartReply { flags: 0, body }
    }
    /// Whether more replies with the same xid follow.
    pub fn more(&self) -> bool {
        self.flags & OFPMPF_REPLY_MORE != 0
    }
}

impl Wire for MultipartReply {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, t) = wire::u16_(input, "ofp_multipart_reply.type")?;
        let (i, flags) = wire::u16_(i, "ofp_multipart_reply.flags")?;
        let (i, ()) = wire::skip(i, 4, "ofp_multipart_reply.pad")?;
        type B = MultipartReplyBody;
        let (rest, body) = match MultipartType::from_u16(t) {
            MultipartType::Desc => {
                let (r, d) = Desc::decode(i)?;
                (r, B::Desc(d))
            }
            MultipartType::Flow => {
                let (r, v) = wire::many_exact(i)?;
                (r, B::Flow(v))
            }
            MultipartType::Aggregate => {
                let (r, v) = AggregateStats::decode(i)?;
                (r, B::Aggregate(v))
            }
            MultipartType::Table => {
                let (r, v) = wire::many_exact(i)?;
                (r, B::Table(v))
            }
            MultipartType::PortStats => {
                let (r, v) = wire::many_exact(i)?;
                (r, B::PortStats(v))
            }
            MultipartType::Queue => {
                let (r, v) = wire::many_exact(i)?;
                (r, B::Queue(v))
            }
            MultipartType::Group => {
                let (r, v) = wire::many_exact(i)?;
                (r, B::Group(v))
            }
            MultipartType::GroupDesc => {
                let (r, v) = wire::many_exact(i)?;
                (r, B::GroupDesc(v))
            }
            MultipartType::GroupFeatures => {
                let (r, v) = GroupFeatures::decode(i)?;
                (r, B::GroupFeatures(v))
            }
            MultipartType::Meter => {
                let (r, v) = wire::many_exact(i)?;
                (r, B::Meter(v))
            }
            MultipartType::MeterConfig => {
                let (r, v) = wire::many_exact(i)?;
                (r, B::MeterConfig(v))
            }
            MultipartType::MeterFeatures => {
                let (r, v) = MeterFeatures::decode(i)?;
                (r, B::MeterFeatures(v))
            }
            MultipartType::TableFeatures => {
                let (r, v) = wire::many_exact(i)?;
                (r, B::TableFeatures(v))
            }
            MultipartType::PortDesc => {
                let (r, v) = wire::many_exact(i)?;
                (r, B::PortDesc(v))
            }
            MultipartType::Experimenter => {
                let (r, v) = ExperimenterMultipart::decode(i)?;
                (r, B::Experimenter(v))
            }
            MultipartType::Other(mp_type) => (
                end(i),
                B::Unknown {
                    mp_type,
                    data: i.to_vec(),
                },
            ),
        };
        Ok((rest, MultipartReply { flags, body }))
    }

    fn encode(&self, out: &mut BytesMut) {
        out.put_u16(self.body.mp_type().to_u16());
        out.put_u16(self.flags);
        wire::put_zeros(out, 4);
        fn all<T: Wire>(v: &[T], out: &mut BytesMut) {
            v.iter().for_each(|x| x.encode(out));
        }
        match &self.body {
            MultipartReplyBody::Desc(d) => d.encode(out),
            MultipartReplyBody::Flow(v) => all(v, out),
            MultipartReplyBody::Aggregate(a) => a.encode(out),
            MultipartReplyBody::Table(v) => all(v, out),
            MultipartReplyBody::PortStats(v) => all(v, out),
            MultipartReplyBody::Queue(v) => all(v, out),
            MultipartReplyBody::Group(v) => all(v, out),
            MultipartReplyBody::GroupDesc(v) => all(v, out),
            MultipartReplyBody::GroupFeatures(g) => g.encode(out),
            MultipartReplyBody::Meter(v) => all(v, out),
            MultipartReplyBody::MeterConfig(v) => all(v, out),
            MultipartReplyBody::MeterFeatures(m) => m.encode(out),
            MultipartReplyBody::TableFeatures(v) => all(v, out),
            MultipartReplyBody::PortDesc(v) => all(v, out),
            MultipartReplyBody::Experimenter(e) => e.encode(out),
            MultipartReplyBody::Unknown { data, .. } => out.put_slice(data),
        }
    }
}

/// Proptest strategies for multipart messages. Structures owned by other modules (matches,
/// instructions, buckets, bands, ports) come from their own `arb` modules where available.
#[cfg(test)]
pub mod arb {
    use super::*;
    use crate::openflow::group::arb::any_bucket;
    use crate::openflow::instruction::arb::any_instructions;
    use crate::openflow::meter::arb::any_meter_band;
    use crate::openflow::oxm::arb::any_match;
    use crate::openflow::port::arb::any_port;
    use crate::openflow::table_features::arb::{any_name, any_table_features};
    use proptest::collection::vec;
    use proptest::prelude::*;

    pub fn any_flow_stats_request() -> impl Strategy<Value = FlowStatsRequest> {
        (
            any::<u8>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<u64>(),
            any_match(),
        )
            .prop_map(|(table_id, out_port, out_group, cookie, cookie_mask, m)| {
                FlowStatsRequest {
                    table_id,
                    out_port,
                    out_group,
                    cookie,
                    cookie_mask,
                    r#match: m,
                }
            })
    }

    pub fn any_experimenter_multipart() -> impl Strategy<Value = ExperimenterMultipart> {
        (any::<u32>(), any::<u32>(), vec(any::<u8>(), 0..24)).prop_map(
            |(experimenter, exp_type, data)| ExperimenterMultipart {
                experimenter,
                exp_type,
                data,
            },
        )
    }

    pub fn any_multipart_request() -> impl Strategy<Value = MultipartRequest> {
        type R = MultipartRequestBody;
        let body = prop_oneof![
            Just(R::Desc),
            any_flow_stats_request().prop_map(R::Flow),
            any_flow_stats_request().prop_map(R::Aggregate),
            Just(R::Table),
            any::<u32>().prop_map(|port_no| R::PortStats { port_no }),
            (any::<u32>(), any::<u32>())
                .prop_map(|(port_no, queue_id)| R::Queue { port_no, queue_id }),
            any::<u32>().prop_map(|group_id| R::Group { group_id }),
            Just(R::GroupDesc),
            Just(R::GroupFeatures),
            any::<u32>().prop_map(|meter_id| R::Meter { meter_id }),
            any::<u32>().prop_map(|meter_id| R::MeterConfig { meter_id }),
            Just(R::MeterFeatures),
            vec(any_table_features(), 0..3).prop_map(R::TableFeatures),
            Just(R::PortDesc),
            any_experimenter_multipart().prop_map(R::Experimenter),
            (14u16..0xfff0, vec(any::<u8>(), 0..16))
                .prop_map(|(mp_type, data)| R::Unknown { mp_type, data }),
        ];
        (0u16..4, body).prop_map(|(flags, body)| MultipartRequest { flags, body })
    }

    pub fn any_desc() -> impl Strategy<Value = Desc> {
        (
            any_name(40),
            any_name(40),
            any_name(40),
            any_name(SERIAL_NUM_LEN - 1),
            any_name(40),
        )
            .prop_map(|(a, b, c, d, e)| Desc {
                mfr_desc: a,
                hw_desc: b,
                sw_desc: c,
                serial_num: d,
                dp_desc: e,
            })
    }

    pub fn any_flow_stats() -> impl Strategy<Value = FlowStats> {
        (
            any::<(u8, u32, u32, u16, u16, u16, u16)>(),
            any::<(u64, u64, u64)>(),
            any_match(),
            any_instructions(),
        )
            .prop_map(
                |((t, ds, dn, p, it, ht, f), (c, pc, bc), m, ins)| FlowStats {
                    table_id: t,
                    duration_sec: ds,
                    duration_nsec: dn,
                    priority: p,
                    idle_timeout: it,
                    hard_timeout: ht,
                    flags: f,
                    cookie: c,
                    packet_count: pc,
                    byte_count: bc,
                    r#match: m,
                    instructions: ins,
                },
            )
    }

    pub fn any_port_stats() -> impl Strategy<Value = PortStats> {
        (any::<u32>(), any::<[u64; 12]>(), any::<u32>(), any::<u32>()).prop_map(|(p, c, s, n)| {
            PortStats {
                port_no: p,
                rx_packets: c[0],
                tx_packets: c[1],
                rx_bytes: c[2],
                tx_bytes: c[3],
                rx_dropped: c[4],
                tx_dropped: c[5],
                rx_errors: c[6],
                tx_errors: c[7],
                rx_frame_err: c[8],
                rx_over_err: c[9],
                rx_crc_err: c[10],
                collisions: c[11],
                duration_sec: s,
                duration_nsec: n,
            }
        })
    }

    pub fn any_multipart_reply_body() -> impl Strategy<Value = MultipartReplyBody> {
        type B = MultipartReplyBody;
        prop_oneof![
            any_desc().prop_map(B::Desc),
            vec(any_flow_stats(), 0..3).prop_map(B::Flow),
            any::<(u64, u64, u32)>().prop_map(|(p, b, f)| B::Aggregate(AggregateStats {
                packet_count: p,
                byte_count: b,
                flow_count: f
            })),
            vec(any::<(u8, u32, u64, u64)>(), 0..3).prop_map(|v| B::Table(
                v.into_iter()
                    .map(|(t, a, l, m)| TableStats {
                        table_id: t,
                        active_count: a,
                        lookup_count: l,
                        matched_count: m
                    })
                    .collect()
            )),
            vec(any_port_stats(), 0..3).prop_map(B::PortStats),
            vec(any::<(u32, u32, u64, u64, u64, u32, u32)>(), 0..3).prop_map(|v| B::Queue(
                v.into_iter()
                    .map(|(p, q, b, k, e, s, n)| QueueStats {
                        port_no: p,
                        queue_id: q,
                        tx_bytes: b,
                        tx_packets: k,
                        tx_errors: e,
                        duration_sec: s,
                        duration_nsec: n
                    })
                    .collect()
            )),
            vec(
                (
                    any::<(u32, u32, u64, u64, u32, u32)>(),
                    vec(any::<(u64, u64)>(), 0..3)
                ),
                0..3
            )
            .prop_map(|v| B::Group(
                v.into_iter()
                    .map(|((g, r, p, b, s, n), bs)| GroupStats {
                        group_id: g,
                        ref_count: r,
                        packet_count: p,
                        byte_count: b,
                        duration_sec: s,
                        duration_nsec: n,
                        bucket_stats: bs
                            .into_iter()
                            .map(|(packet_count, byte_count)| BucketCounter {
                                packet_count,
                                byte_count
                            })
                            .collect()
                    })
                    .collect()
            )),
            vec((0u8..6, any::<u32>(), vec(any_bucket(), 0..3)), 0..3).prop_map(|v| B::GroupDesc(
                v.into_iter()
                    .map(|(t, g, buckets)| GroupDesc {
                        group_type: GroupType::from_u8(t),
                        group_id: g,
                        buckets
                    })
                    .collect()
            )),
            (
                any::<u32>(),
                any::<u32>(),
                any::<[u32; 4]>(),
                any::<[u32; 4]>()
            )
                .prop_map(|(types, capabilities, max_groups, actions)| {
                    B::GroupFeatures(GroupFeatures {
                        types,
                        capabilities,
                        max_groups,
                        actions,
                    })
                }),
            vec(
                (
                    any::<(u32, u32, u64, u64, u32, u32)>(),
                    vec(any::<(u64, u64)>(), 0..3)
                ),
                0..3
            )
            .prop_map(|v| B::Meter(
                v.into_iter()
                    .map(|((m, f, p, b, s, n), bs)| MeterStats {
                        meter_id: m,
                        flow_count: f,
                        packet_in_count: p,
                        byte_in_count: b,
                        duration_sec: s,
                        duration_nsec: n,
                        band_stats: bs
                            .into_iter()
                            .map(|(packet_band_count, byte_band_count)| MeterBandStats {
                                packet_band_count,
                                byte_band_count
                            })
                            .collect()
                    })
                    .collect()
            )),
            vec((any::<(u16, u32)>(), vec(any_meter_band(), 0..3)), 0..3).prop_map(|v| {
                B::MeterConfig(
                    v.into_iter()
                        .map(|((flags, meter_id), bands)| MeterConfig {
                            flags,
                            meter_id,
                            bands,
                        })
                        .collect(),
                )
            }),
            any::<(u32, u32, u32, u8, u8)>().prop_map(|(a, b, c, d, e)| B::MeterFeatures(
                MeterFeatures {
                    max_meter: a,
                    band_types: b,
                    capabilities: c,
                    max_bands: d,
                    max_color: e
                }
            )),
            vec(any_table_features(), 0..3).prop_map(B::TableFeatures),
            vec(any_port(), 0..3).prop_map(B::PortDesc),
            any_experimenter_multipart().prop_map(B::Experimenter),
            (14u16..0xfff0, vec(any::<u8>(), 0..16))
                .prop_map(|(mp_type, data)| B::Unknown { mp_type, data }),
        ]
    }

    pub fn any_multipart_reply() -> impl Strategy<Value = MultipartReply> {
        (0u16..4, any_multipart_reply_body())
            .prop_map(|(flags, body)| MultipartReply { flags, body })
    }
}
