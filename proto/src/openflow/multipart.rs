//! OFPT_MULTIPART_REQUEST / OFPT_MULTIPART_REPLY for every OpenFlow 1.3 multipart type. Joining a
//! REPLY_MORE sequence is the channel's job ([`crate::openflow::channel::MultipartAssembler`]).

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use crate::openflow::group::{Bucket, GroupType};
use crate::openflow::header::end;
use crate::openflow::instruction::Instruction;
use crate::openflow::layout::{ofp_struct, wire_enum};
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

wire_enum! {
    /// `enum ofp_multipart_type`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    pub enum MultipartType: u16 {
        Desc = 0,
        Flow = 1,
        Aggregate = 2,
        Table = 3,
        PortStats = 4,
        Queue = 5,
        Group = 6,
        GroupDesc = 7,
        GroupFeatures = 8,
        Meter = 9,
        MeterConfig = 10,
        MeterFeatures = 11,
        TableFeatures = 12,
        PortDesc = 13,
        Experimenter = 0xffff,
        _ => Other,
    }
}

impl MultipartType {
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

// ---- request bodies -----------------------------------------------------------------------------

ofp_struct! {
    /// `struct ofp_flow_stats_request` / `ofp_aggregate_stats_request`.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize)]
    pub struct FlowStatsRequest("ofp_flow_stats_request") {
        pub table_id: u8,
        pad: [u8; 3],
        pub out_port: u32,
        pub out_group: u32,
        pad2: [u8; 4],
        pub cookie: u64,
        pub cookie_mask: u64,
        pub r#match: Match,
    }
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

ofp_struct! {
    /// `struct ofp_experimenter_multipart_header` and the bytes after it.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct ExperimenterMultipart("ofp_experimenter_multipart_header") {
        pub experimenter: u32,
        pub exp_type: u32,
        pub data: Vec<u8>,
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

ofp_struct! {
    /// `struct ofp_flow_stats` (one entry of an OFPMP_FLOW reply).
    #[derive(Debug, Clone, PartialEq, Eq, Serialize)]
    pub struct FlowStats("ofp_flow_stats") {
        length: Length >= 48,
        pub table_id: u8,
        pad: [u8; 1],
        pub duration_sec: u32,
        pub duration_nsec: u32,
        pub priority: u16,
        pub idle_timeout: u16,
        pub hard_timeout: u16,
        pub flags: u16,
        pad2: [u8; 4],
        pub cookie: u64,
        pub packet_count: u64,
        pub byte_count: u64,
        pub r#match: Match,
        pub instructions: Vec<Instruction>,
    }
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

ofp_struct! {
    /// `struct ofp_aggregate_stats_reply`.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct AggregateStats("ofp_aggregate_stats_reply", 24 bytes) {
        pub packet_count: u64,
        pub byte_count: u64,
        pub flow_count: u32,
        pad: [u8; 4],
    }
}

ofp_struct! {
    /// `struct ofp_table_stats`.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct TableStats("ofp_table_stats", 24 bytes) {
        pub table_id: u8,
        pad: [u8; 3],
        pub active_count: u32,
        pub lookup_count: u64,
        pub matched_count: u64,
    }
}

ofp_struct! {
    /// `struct ofp_port_stats`.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct PortStats("ofp_port_stats", 112 bytes) {
        pub port_no: u32,
        pad: [u8; 4],
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
}

ofp_struct! {
    /// `struct ofp_queue_stats`.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct QueueStats("ofp_queue_stats", 40 bytes) {
        pub port_no: u32,
        pub queue_id: u32,
        pub tx_bytes: u64,
        pub tx_packets: u64,
        pub tx_errors: u64,
        pub duration_sec: u32,
        pub duration_nsec: u32,
    }
}

ofp_struct! {
    /// `struct ofp_bucket_counter`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
    pub struct BucketCounter("ofp_bucket_counter", 16 bytes) {
        pub packet_count: u64,
        pub byte_count: u64,
    }
}

ofp_struct! {
    /// `struct ofp_group_stats`.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct GroupStats("ofp_group_stats") {
        length: Length >= 40,
        pad: [u8; 2],
        pub group_id: u32,
        pub ref_count: u32,
        pad2: [u8; 4],
        pub packet_count: u64,
        pub byte_count: u64,
        pub duration_sec: u32,
        pub duration_nsec: u32,
        pub bucket_stats: Vec<BucketCounter>,
    }
}

ofp_struct! {
    /// `struct ofp_group_desc` (one entry of an OFPMP_GROUP_DESC reply).
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct GroupDesc("ofp_group_desc") {
        length: Length >= 8,
        pub group_type: GroupType as "type",
        pad: [u8; 1],
        pub group_id: u32,
        pub buckets: Vec<Bucket>,
    }
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

ofp_struct! {
    /// `struct ofp_group_features`.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct GroupFeatures("ofp_group_features", 40 bytes) {
        /// Bitmap of supported group types (1 << OFPGT_*).
        pub types: u32,
        /// Bitmap of `ofp_group_capabilities`.
        pub capabilities: u32,
        /// Maximum number of groups for each type (ALL, SELECT, INDIRECT, FF).
        pub max_groups: [u32; 4],
        /// Bitmaps of supported action types for each group type.
        pub actions: [u32; 4],
    }
}

ofp_struct! {
    /// `struct ofp_meter_band_stats`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
    pub struct MeterBandStats("ofp_meter_band_stats", 16 bytes) {
        pub packet_band_count: u64,
        pub byte_band_count: u64,
    }
}

ofp_struct! {
    /// `struct ofp_meter_stats`.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct MeterStats("ofp_meter_stats") {
        pub meter_id: u32,
        len: Length >= 40,
        pad: [u8; 6],
        pub flow_count: u32,
        pub packet_in_count: u64,
        pub byte_in_count: u64,
        pub duration_sec: u32,
        pub duration_nsec: u32,
        pub band_stats: Vec<MeterBandStats>,
    }
}

ofp_struct! {
    /// `struct ofp_meter_config` (one entry of an OFPMP_METER_CONFIG reply).
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct MeterConfig("ofp_meter_config") {
        length: Length >= 8,
        /// `ofp_meter_flags` (KBPS=1, PKTPS=2, BURST=4, STATS=8).
        pub flags: u16,
        pub meter_id: u32,
        pub bands: Vec<MeterBand>,
    }
}

ofp_struct! {
    /// `struct ofp_meter_features`.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct MeterFeatures("ofp_meter_features", 16 bytes) {
        pub max_meter: u32,
        /// Bitmap of 1 << OFPMBT_*.
        pub band_types: u32,
        /// Bitmap of `ofp_meter_flags`.
        pub capabilities: u32,
        pub max_bands: u8,
        pub max_color: u8,
        pad: [u8; 2],
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
