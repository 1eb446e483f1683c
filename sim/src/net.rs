//! The packet-level engine: input-output-queued virtual cut-through switches, credit-based
//! lossless links with virtual channels, hosts with Bernoulli sources, QCN congestion points and,
//! per switch, the agent's own [`SwitchCore`] — learned from the controller's real plan for that
//! switch, fed the CNMs that reach it, its congestion point's samples and its bytes sent, and
//! drawing each new packet's output from the weights it has written, as the switch's SELECT group
//! would. The simulator models only links, queues and time.
//!
//! # Model (per cycle, in this order)
//! 1. Events due now: packet heads arriving at input buffers, credits returning, packets ejected
//!    at hosts, packet generation.
//! 2. For every switch with work: (a) each free output link sends the head packet of one VC that
//!    has enough downstream credits (CNM class first, then data VCs round robin); (b) each free
//!    input port moves the head packet of one VC (CNM first, then data VCs from the highest hop
//!    phase down) across the crossbar into its output queue when the output's crossbar port is
//!    free and the output VC has room; (c) each host link injects the oldest queued packet when
//!    the switch's host input buffer has credits.
//!
//! Timing: a head arriving at cycle t may cross the crossbar from t + switch latency; crossing
//! takes ceil(len / speedup) cycles; the link is busy `len` cycles per packet and the head
//! reaches the next switch one link latency after it starts (cut-through: rates are equal, so the
//! tail follows). Input space is returned as a credit one link latency after the packet has
//! crossed; output space is freed when the packet starts on the link.
//!
//! Virtual channels (Dragonfly): a packet's VC on every hop is its number of global hops so far
//! (0, 1, 2), so local → global → local chains only climb and the channel dependency graph is
//! acyclic for minimal (l g l), QCN-SW/PAUSE non-minimal (g l g l) and Valiant (l g l g l).
//! Fat-trees use VC 0 (up*/down* is deadlock-free). Tori and meshes (dimension order, and DRB's
//! alternative paths) use dateline classes: a packet's VC is 2·e + d, where e counts the times
//! its path went back to a lower dimension and d is 1 from the wrap-around (dateline) link of
//! the dimension it travels in on (reset when the dimension changes). Within one e the path
//! moves through dimensions in increasing order, one direction per dimension, never across a
//! dateline on d = 0, so the channel dependency graph is acyclic; dimension order uses VCs 0
//! and 1 only. DRB's alternative paths on other fabrics use their hop count as the VC. The
//! configuration must give enough data VCs for every planned path (checked at construction).
//! CNMs use their own class (the last VC) with
//! priority; a CNM that finds no room in its class at the congestion point is dropped (QCN
//! messages are advisory) and counted.

use std::collections::VecDeque;

use std::collections::BTreeSet;

use fabricflow_agent::config::ByteCounter;
use fabricflow_agent::cp::CongestionPoint;
use fabricflow_agent::link::{PortLink, PortLinks};
use fabricflow_agent::plan::{LearnedPlan, PlanConventions};
use fabricflow_agent::policy::{Policy, PolicyKind};
use fabricflow_agent::switch_core::{CnmRoute, CongestionSample, Culprit, SwitchCore};
use fabricflow_controller::plan::paths::tagged_mac;
use fabricflow_controller::planner::desired_state;
use fabricflow_controller::topology::cube::Cube;
use fabricflow_controller::topology::dragonfly::Dragonfly;
use fabricflow_controller::topology::{Fabric, FabricKind, Peer, PortRole};
use fabricflow_controller::traffic::{Destinations, Pattern};
use fabricflow_controller::{PlanOptions, Routes};
use fabricflow_proto::openflow::multipart::{FlowStats, GroupDesc};
use fabricflow_proto::MacAddr;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod transfer;

use crate::config::{CpQueue, Routing, SimConfig, SpecError};
pub use crate::port_stats::{Direction, PortCounters};
use transfer::Transfers;
pub use transfer::{TransferPaths, TransferSpec};

const NONE: u32 = u32::MAX;
/// Event wheel size (cycles); the configuration keeps every delay below it.
const WHEEL: usize = 4096;
/// Period of the switch cores' timer (policy tick, pending writes), cycles (~1 µs at 40 Gb/s).
const TIMER_CYCLES: u64 = 40;
/// IBA CC: the seed's timer, 100 µs.
const IBA_QUIET_NS: f64 = 100_000.0;
/// IBA CC: notifications per IRD step (the seed's 10).
const IBA_PER_STEP: u32 = 10;
/// IBA CC: the largest IRD (a 128-entry congestion control table).
const IBA_MAX_IRD: u32 = 127;

#[derive(Debug, Clone, Copy)]
struct Pkt {
    gen: u64,
    ready: u64,
    dst_host: u32,
    /// Sending host (data), or NONE (CNM).
    src_host: u32,
    /// CNM: the culprit's destination host (the CNM's encapsulated DA), else NONE.
    encap_dst: u32,
    src_sw: u32,
    dst_sw: u32,
    /// Intermediate group still to reach (Valiant, UGAL-L non-minimal), or NONE.
    via: u32,
    /// Output port forced at the source switch (QCN-SW, PAUSE non-minimal), or NONE.
    forced: u32,
    /// Cached output port at the current switch, or NONE.
    route: u32,
    len: u16,
    ghops: u8,
    cnm: bool,
    cnm_fb: u8,
    decided: bool,
    /// Sent by its source switch to a neighbour on a local candidate port (no global port of
    /// its own to divert by): the neighbour sends it out of one of its global ports, as the
    /// controller's diversion-by-arrival-port rule does.
    divert: bool,
    /// Its source switch's decision group chose the minimal bucket for it (what the agent's
    /// `minimal-bucket` counter counts; own-group packets bypass the decision groups).
    min_bucket: bool,
    /// Transfer (fixed-size flow) the packet belongs to, or NONE.
    flow: u32,
    /// Lane (0 fast, 1 slow, …): chosen where it leaves its host, kept to the destination.
    lane: u8,
    /// DRB: the path index (0: the minimal route); a CNM: its culprit's.
    path: u8,
    /// Switch-to-switch links crossed so far.
    hops: u8,
    /// Tori and meshes: the dimension of the last link (NO_DIM before the first), the count of
    /// returns to a lower dimension, and whether the current dimension's dateline was crossed.
    dim: u8,
    epoch: u8,
    dateline: bool,
    /// A CNM: the culprit's sending host (IBA CC charges it).
    culprit_src: u32,
}

/// `Pkt::dim` before the first switch-to-switch link.
const NO_DIM: u8 = u8::MAX;

#[derive(Debug, Clone, Copy)]
enum Ev {
    Head { gp: u32, v: u8, pkt: u32 },
    Credit { gp: u32, v: u8, len: u16 },
    HostCredit { host: u32, lane: u8, len: u16 },
    Eject { pkt: u32 },
    Gen { host: u32 },
}

/// Counters and samples of one run.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Phits delivered inside the measurement window.
    pub delivered_phits: u64,
    /// Packets delivered inside the measurement window.
    pub delivered_pkts: u64,
    /// Latencies (generation → tail at the destination host), cycles, of those packets.
    pub latencies: Vec<u32>,
    /// Phits delivered inside the window, by source switch.
    pub per_src_switch: Vec<u64>,
    /// Phits delivered inside the window, by destination host.
    pub per_dst_host: Vec<u64>,
    /// Phits delivered per time window (whole run).
    pub series_phits: Vec<u64>,
    /// Mean P over every policy port at the end of each time window (QCN-SW modes).
    pub series_p: Vec<f64>,
    /// Inter-group data packets leaving their source switch, and how many went non-minimally.
    pub inter_injected: u64,
    pub inter_nonminimal: u64,
    pub cnm_generated: u64,
    pub cnm_to_self: u64,
    pub cnm_delivered: u64,
    pub cnm_dropped: u64,
}

/// A host's queue of one lane: (generation cycle, destination host), oldest first.
type HostQueue = VecDeque<(u64, u32, u32)>;

/// One host's link counters at one instant ([`Sim::host_port_counters`]), cumulative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostPortCounters {
    /// The host's edge switch.
    pub switch: usize,
    /// The edge switch port facing the host: cycles its output queue was full on some data VC.
    pub backlog_cycles: u64,
    /// The host's own transmitter: XmitWait (link free, a packet queued, no credit).
    pub host_wait_cycles: u64,
    /// The host's own transmitter: phits sent.
    pub host_data_phits: u64,
}

/// One simulation.
#[derive(Debug)]
pub struct Sim {
    cfg: SimConfig,
    nv: usize,
    ndata: usize,
    cnm_vc: usize,
    len: u32,
    cnm_len: u32,
    sw_lat: u64,
    xfer: u64,
    routes: Routes,
    df: Option<Dragonfly>,
    ngroups: u32,
    // Topology, flattened. A "gp" is a global port index: switch base + position in its ports.
    sw_base: Vec<u32>,
    pno_base: Vec<u32>,
    pno_gp: Vec<u32>,
    sw_group: Vec<u32>,
    sw_idx: Vec<u32>,
    sw_hosts: Vec<Vec<u32>>,
    sw_globals: Vec<Vec<u32>>,
    gp_sw: Vec<u32>,
    gp_pno: Vec<u32>,
    gp_global: Vec<bool>,
    gp_peer: Vec<u32>,
    gp_host: Vec<u32>,
    gp_lat: Vec<u64>,
    gp_incap: Vec<u32>,
    host_sw: Vec<u32>,
    host_gp: Vec<u32>,
    host_mac: Vec<MacAddr>,
    // Switch state.
    in_q: Vec<VecDeque<u32>>,
    in_occ: Vec<u32>,
    in_data: Vec<u32>,
    in_busy: Vec<u64>,
    out_q: Vec<VecDeque<u32>>,
    out_occ: Vec<u32>,
    out_data: Vec<u32>,
    credits: Vec<u32>,
    link_busy: Vec<u64>,
    xbar_busy: Vec<u64>,
    out_rr: Vec<u8>,
    sw_load: Vec<u32>,
    sw_pending: Vec<u32>,
    sw_rr: Vec<u32>,
    // Hosts: one queue and one credit count per host and lane (`h * lanes + lane`); a queued
    // packet is (generated at, destination host, transfer or NONE).
    host_q: Vec<HostQueue>,
    host_credit: Vec<u32>,
    /// Lanes (`cfg.lanes`) and hop phases per lane: data VC = lane · phases + phase.
    lanes: usize,
    phases: usize,
    /// Per (source switch, destination host), `s * hosts + d`: packets that leave a host of
    /// `s` for `d` take the slow lane (lane 1) — what the edge switch's dFtree rule does.
    /// Empty with one lane.
    slow: Vec<bool>,
    /// Per host: the lane its injection looks at first (round robin).
    host_rr: Vec<u8>,
    host_busy: Vec<u64>,
    host_next: Vec<u64>,
    /// Fixed-size transfers ([`Sim::with_transfers`]); `None` in load-driven runs.
    xfers: Option<Transfers>,
    gen_p: f64,
    /// Destination laws of `cfg.traffic`: the first pattern's, and the later one with the cycle
    /// it takes over at.
    dests: Destinations,
    dests_then: Option<(u64, Destinations)>,
    // Packets and time.
    pkts: Vec<Pkt>,
    free: Vec<u32>,
    wheel: Vec<Vec<Ev>>,
    now: u64,
    rng: ChaCha8Rng,
    // QCN-SW.
    cores: Vec<SwitchCore>,
    cps: Vec<CongestionPoint>,
    ns_per_cycle: f64,
    /// Torus or mesh: its arithmetic (VC classes).
    cube: Option<Cube>,
    /// DRB: (source switch, destination switch) → paths (index ≥ 1), output gp per hop.
    paths: std::collections::HashMap<(u32, u32), Vec<Vec<u32>>>,
    /// DRB: each switch's source tag (the controller's multipath plan).
    src_tag: Vec<u8>,
    /// IBA CC per host: IRD, notifications since the last raise, start of the quiet period,
    /// and the cycle before which the host may not inject.
    ird: Vec<u32>,
    ird_count: Vec<u32>,
    ird_quiet_from: Vec<u64>,
    host_hold: Vec<u64>,
    quiet_cycles: u64,
    /// Port counters (`cfg.port_stats_interval`); every vector below is empty when off, and
    /// the engine tests `counting` before touching them, so an unobserved run pays one
    /// predictable branch per idle output port.
    counting: bool,
    sw_name: Vec<String>,
    gp_role: Vec<PortRole>,
    /// Per port, out of the switch: cycles a packet waited with the link free and no credit.
    xmit_wait: Vec<u64>,
    /// Per port, out of the switch: phits sent (data and CNMs).
    xmit_data: Vec<u64>,
    /// Per host, into its switch: the same two counters for the host's own transmitter.
    host_wait: Vec<u64>,
    host_data: Vec<u64>,
    /// Per port, out of the switch: cycles in which some data VC of its output queue could not
    /// take another packet (counted on host-facing ports only). A host port sends at line rate
    /// and so never XmitWaits; this is the simulator's counterpart of the live backlog time
    /// (`agent/src/port_stats.rs`) that marks a hot spot's port.
    backlog: Vec<u64>,
    /// Results so far.
    pub stats: Stats,
}

impl Sim {
    /// Builds the fabric of `cfg.topology` and an idle network.
    pub fn new(cfg: SimConfig) -> Result<Sim, SpecError> {
        cfg.validate()?;
        let fabric = cfg
            .topology
            .build()
            .map_err(|e| SpecError::Invalid(e.to_string()))?;
        Sim::with_fabric(cfg, &fabric)
    }

    /// An idle network on `fabric`.
    pub fn with_fabric(cfg: SimConfig, fabric: &Fabric) -> Result<Sim, SpecError> {
        cfg.validate()?;
        let df = match fabric.kind() {
            FabricKind::Dragonfly { p, a, h } => {
                Some(Dragonfly::new(p, a, h).map_err(|e| SpecError::Invalid(e.to_string()))?)
            }
            _ => None,
        };
        let cube = match fabric.kind() {
            FabricKind::Torus { k, n, p } => {
                Some(Cube::new(k, n, p, true).map_err(|e| SpecError::Invalid(e.to_string()))?)
            }
            FabricKind::Mesh { k, n, p } => {
                Some(Cube::new(k, n, p, false).map_err(|e| SpecError::Invalid(e.to_string()))?)
            }
            _ => None,
        };
        let fattree = matches!(fabric.kind(), FabricKind::FatTree { .. });
        let anywhere = matches!(
            cfg.routing,
            Routing::Minimal | Routing::Drb | Routing::IbaCc
        ) || (fattree && matches!(cfg.routing, Routing::QcnSw(_)));
        if df.is_none() && !anywhere {
            return Err(SpecError::Invalid(format!(
                "routing {} needs a Dragonfly",
                cfg.routing
            )));
        }
        if df.is_some() && cfg.data_vcs / cfg.lanes < 3 && !anywhere {
            return Err(SpecError::Invalid(
                "non-minimal Dragonfly routing needs 3 data VCs per lane (l g l g l)".into(),
            ));
        }
        let routes = Routes::compute(fabric, &Default::default());
        let ndata = cfg.data_vcs;
        let nv = ndata + 1;
        let sws = fabric.switches();
        let nsw = sws.len();
        let mut sw_base = Vec::with_capacity(nsw + 1);
        let mut pno_base = Vec::with_capacity(nsw + 1);
        let mut pno_gp = Vec::new();
        let mut gp_sw = Vec::new();
        let mut gp_pno = Vec::new();
        let mut gp_global = Vec::new();
        let mut gp_role = Vec::new();
        let mut sw_group = Vec::with_capacity(nsw);
        let mut sw_idx = Vec::with_capacity(nsw);
        let sw_name: Vec<String> = sws.iter().map(|sw| sw.name.clone()).collect();
        let mut total = 0u32;
        for (s, sw) in sws.iter().enumerate() {
            sw_base.push(total);
            pno_base.push(u32::try_from(pno_gp.len()).unwrap_or(NONE));
            let max = sw.ports.iter().map(|p| p.no).max().unwrap_or(0) as usize;
            let start = pno_gp.len();
            pno_gp.resize(start + max + 1, NONE);
            for (i, p) in sw.ports.iter().enumerate() {
                let gp = total + u32::try_from(i).unwrap_or(NONE);
                if let Some(slot) = pno_gp.get_mut(start + p.no as usize) {
                    *slot = gp;
                }
                gp_sw.push(u32::try_from(s).unwrap_or(NONE));
                gp_pno.push(p.no);
                gp_global.push(p.role == PortRole::Global);
                gp_role.push(p.role);
            }
            total += u32::try_from(sw.ports.len()).unwrap_or(0);
            sw_group.push(sw.group.map_or(NONE, u32::from));
            sw_idx.push(u32::from(sw.index));
        }
        sw_base.push(total);
        pno_base.push(u32::try_from(pno_gp.len()).unwrap_or(NONE));
        let ngp = total as usize;
        let mut sim_gp_peer = vec![NONE; ngp];
        let mut gp_host = vec![NONE; ngp];
        let (local, global, host) = (
            cfg.cycles(cfg.local_latency_ns),
            cfg.cycles(cfg.global_latency_ns),
            cfg.cycles(cfg.host_latency_ns),
        );
        let mut gp_lat = vec![local; ngp];
        let mut gp_incap = vec![cfg.in_local_phits; ngp];
        let gp_at = |sw_base: &[u32], pno_base: &[u32], pno_gp: &[u32], s: usize, no: u32| {
            let _ = sw_base;
            pno_base
                .get(s)
                .and_then(|&b| pno_gp.get(b as usize + no as usize))
                .copied()
                .unwrap_or(NONE)
        };
        for (s, sw) in sws.iter().enumerate() {
            for p in &sw.ports {
                let gp = gp_at(&sw_base, &pno_base, &pno_gp, s, p.no) as usize;
                match p.peer {
                    Peer::Host(h) => {
                        if let Some(x) = gp_host.get_mut(gp) {
                            *x = u32::try_from(h).unwrap_or(NONE);
                        }
                        if let Some(x) = gp_lat.get_mut(gp) {
                            *x = host;
                        }
                        if let Some(x) = gp_incap.get_mut(gp) {
                            *x = cfg.in_host_phits;
                        }
                    }
                    Peer::Switch { switch, port } => {
                        let peer = gp_at(&sw_base, &pno_base, &pno_gp, switch, port);
                        if let Some(x) = sim_gp_peer.get_mut(gp) {
                            *x = peer;
                        }
                        if p.role == PortRole::Global {
                            if let Some(x) = gp_lat.get_mut(gp) {
                                *x = global;
                            }
                            if let Some(x) = gp_incap.get_mut(gp) {
                                *x = cfg.in_global_phits;
                            }
                        }
                    }
                }
            }
        }
        let nh = fabric.hosts().len();
        let mut host_sw = Vec::with_capacity(nh);
        let mut host_gp = Vec::with_capacity(nh);
        let host_mac: Vec<MacAddr> = fabric.hosts().iter().map(|h| h.location.mac()).collect();
        let mut sw_hosts = vec![Vec::new(); nsw];
        let ngroups = match df {
            Some(d) => d.groups(),
            None => sw_group
                .iter()
                .filter(|&&g| g != NONE)
                .max()
                .map_or(1, |g| g + 1),
        };
        for (h, host) in fabric.hosts().iter().enumerate() {
            let hid = u32::try_from(h).unwrap_or(NONE);
            host_sw.push(u32::try_from(host.switch).unwrap_or(NONE));
            host_gp.push(gp_at(&sw_base, &pno_base, &pno_gp, host.switch, host.port));
            if let Some(v) = sw_hosts.get_mut(host.switch) {
                v.push(hid);
            }
        }
        let sw_globals: Vec<Vec<u32>> = (0..nsw)
            .map(|s| {
                let (b, e) = (
                    sw_base.get(s).copied().unwrap_or(0),
                    sw_base.get(s + 1).copied().unwrap_or(0),
                );
                (b..e)
                    .filter(|&gp| gp_global.get(gp as usize) == Some(&true))
                    .collect()
            })
            .collect();
        let len = cfg.packet_phits();
        let cnm_len = cfg.cnm_phits();
        let mut credits = vec![0u32; ngp * nv];
        for gp in 0..ngp {
            let peer = sim_gp_peer.get(gp).copied().unwrap_or(NONE);
            if peer == NONE {
                continue;
            }
            let cap = gp_incap.get(peer as usize).copied().unwrap_or(0);
            for v in 0..nv {
                if let Some(c) = credits.get_mut(gp * nv + v) {
                    *c = if v == ndata {
                        cfg.cnm_buffer_phits
                    } else {
                        cap
                    };
                }
            }
        }
        let law = |p: Pattern| {
            p.destinations(fabric, cfg.seed)
                .map_err(|e| SpecError::Invalid(e.to_string()))
        };
        let dests = law(cfg.traffic.first)?;
        let dests_then = match cfg.traffic.then {
            Some((p, t)) => Some((t, law(p)?)),
            None => None,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let qcn = matches!(
            cfg.routing,
            Routing::QcnSw(_) | Routing::Drb | Routing::IbaCc
        );
        let mut cores = Vec::new();
        let mut cps = Vec::new();
        let mut paths = std::collections::HashMap::new();
        let mut src_tag = vec![0u8; nsw];
        if cfg.routing == Routing::Drb {
            let opts = PlanOptions {
                multipath: Some(cfg.multipath),
                ..Default::default()
            };
            let pp = fabricflow_controller::Plan::path_plan(fabric, &opts)
                .map_err(|e| SpecError::Invalid(e.to_string()))?
                .unwrap_or_default();
            for (s, t) in src_tag.iter_mut().enumerate() {
                *t = pp.source_tag(s).unwrap_or(0);
            }
            let mut need = 1usize;
            for (&(a, b), list) in &pp.pairs {
                let mut gps = Vec::new();
                for path in list {
                    let hops: Vec<u32> = path
                        .iter()
                        .map(|&(x, pno)| gp_at(&sw_base, &pno_base, &pno_gp, x, pno))
                        .collect();
                    need = need.max(match cube {
                        Some(c) => vcs_needed(&c, path),
                        None => path.len(),
                    });
                    gps.push(hops);
                }
                paths.insert(
                    (
                        u32::try_from(a).unwrap_or(NONE),
                        u32::try_from(b).unwrap_or(NONE),
                    ),
                    gps,
                );
            }
            if ndata < need {
                return Err(SpecError::Invalid(format!(
                    "DRB's paths on this fabric need {need} data VCs (deadlock freedom); got {ndata}"
                )));
            }
        } else if cube.is_some_and(|c| c.wrap) && ndata < 2 {
            return Err(SpecError::Invalid(
                "a torus needs 2 data VCs (dateline)".into(),
            ));
        }
        if matches!(cfg.routing, Routing::QcnSw(_) | Routing::Drb) {
            let mut pcfg = cfg.policy.clone();
            if let Routing::QcnSw(v) = cfg.routing {
                pcfg.variant = v;
            }
            if !(0.0..=100.0).contains(&cfg.p_minimal_percent) {
                return Err(SpecError::Invalid(format!(
                    "p_minimal_percent {} is not in [0, 100]",
                    cfg.p_minimal_percent
                )));
            }
            let mut opts = PlanOptions {
                p_minimal_percent: cfg.p_minimal_percent,
                ..Default::default()
            };
            if cfg.routing == Routing::Drb {
                pcfg.kind = PolicyKind::Drb;
                opts.multipath = Some(cfg.multipath);
            }
            cores = learned_cores(
                fabric,
                &opts,
                &pcfg,
                &cfg.weights,
                cfg.port_link(cfg.in_local_phits),
            )?;
        }
        if qcn {
            for &incap in gp_incap.iter().take(ngp) {
                // The CP watches one port's data queue (every data VC), input or output.
                let buffer = match cfg.cp_queue {
                    CpQueue::Input => incap,
                    CpQueue::Output => cfg.out_phits,
                };
                cps.push(
                    CongestionPoint::new(cfg.cp.at(cfg.port_link(buffer)), rng.next_u32())
                        .map_err(|e| SpecError::Invalid(e.to_string()))?,
                );
            }
        }
        let gen_p = cfg.load / f64::from(len);
        let total_cycles = cfg.warmup_cycles + cfg.measure_cycles;
        let nwin = (total_cycles / cfg.window_cycles + 1) as usize;
        let sw_lat = cfg.cycles(cfg.switch_latency_ns);
        let xfer = u64::from(len.div_ceil(cfg.speedup));
        let ns_per_cycle = cfg.ns_per_cycle();
        let counting = cfg.port_stats_interval.is_some();
        let counters = |n: usize| if counting { vec![0u64; n] } else { Vec::new() };
        let mut sim = Sim {
            counting,
            sw_name,
            gp_role,
            xmit_wait: counters(ngp),
            xmit_data: counters(ngp),
            host_wait: counters(nh),
            host_data: counters(nh),
            backlog: counters(ngp),
            nv,
            ndata,
            cnm_vc: ndata,
            len,
            cnm_len,
            sw_lat,
            xfer,
            routes,
            df,
            ngroups,
            sw_base,
            pno_base,
            pno_gp,
            sw_group,
            sw_idx,
            sw_hosts,
            sw_globals,
            gp_sw,
            gp_pno,
            gp_global,
            gp_peer: sim_gp_peer,
            gp_host,
            gp_lat,
            gp_incap,
            host_sw,
            host_gp,
            host_mac,
            in_q: vec![VecDeque::new(); ngp * nv],
            in_occ: vec![0; ngp * nv],
            in_data: vec![0; ngp],
            in_busy: vec![0; ngp],
            out_q: vec![VecDeque::new(); ngp * nv],
            out_occ: vec![0; ngp * nv],
            out_data: vec![0; ngp],
            credits,
            link_busy: vec![0; ngp],
            xbar_busy: vec![0; ngp],
            out_rr: vec![0; ngp],
            sw_load: vec![0; nsw],
            sw_pending: vec![0; nsw],
            sw_rr: vec![0; nsw],
            host_q: vec![VecDeque::new(); nh * cfg.lanes],
            host_credit: vec![cfg.in_host_phits; nh * cfg.lanes],
            lanes: cfg.lanes,
            phases: ndata / cfg.lanes,
            slow: if cfg.lanes > 1 {
                vec![false; nsw * nh]
            } else {
                Vec::new()
            },
            host_rr: vec![0; nh],
            host_busy: vec![0; nh],
            host_next: vec![u64::MAX; nh],
            xfers: None,
            gen_p,
            dests,
            dests_then,
            pkts: Vec::new(),
            free: Vec::new(),
            wheel: vec![Vec::new(); WHEEL],
            now: 0,
            rng,
            cores,
            cps,
            ns_per_cycle,
            cube,
            paths,
            src_tag,
            ird: vec![0; nh],
            ird_count: vec![0; nh],
            ird_quiet_from: vec![0; nh],
            host_hold: vec![0; nh],
            quiet_cycles: cfg.cycles(IBA_QUIET_NS),
            stats: Stats {
                per_src_switch: vec![0; nsw],
                per_dst_host: vec![0; nh],
                series_phits: vec![0; nwin],
                ..Stats::default()
            },
            cfg,
        };
        for h in 0..nh {
            let gap = sim.gap();
            if gap != u64::MAX {
                if let Some(n) = sim.host_next.get_mut(h) {
                    *n = gap;
                }
                let hid = u32::try_from(h).unwrap_or(NONE);
                sim.schedule(gap.min(WHEEL as u64 - 1), Ev::Gen { host: hid });
            }
        }
        Ok(sim)
    }

    /// The configuration.
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// Current cycle.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Number of switches.
    pub fn switches(&self) -> usize {
        self.sw_load.len()
    }

    /// Group of a switch (`None` outside groups).
    pub fn group_of(&self, s: usize) -> Option<u32> {
        self.sw_group.get(s).copied().filter(|&g| g != NONE)
    }

    /// Hosts attached to switch `s`.
    pub fn hosts_of(&self, s: usize) -> usize {
        self.sw_hosts.get(s).map_or(0, Vec::len)
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        self.host_sw.len()
    }

    /// The policy of switch `s` (QCN-SW modes).
    pub fn policy(&self, s: usize) -> Option<&Policy> {
        self.cores.get(s).map(SwitchCore::policy)
    }

    /// The switch core of switch `s` (QCN-SW modes).
    pub fn core(&self, s: usize) -> Option<&SwitchCore> {
        self.cores.get(s)
    }

    /// The port counters now, cumulative since cycle 0 (empty unless
    /// `cfg.port_stats_interval` is set): per switch in fabric order and per port in port order,
    /// the port's own transmitter (`tx`) and, on a host port, the host's transmitter into it
    /// (`rx`) — every directed link once.
    pub fn port_counters(&self) -> Vec<PortCounters> {
        if !self.counting {
            return Vec::new();
        }
        let mut out = Vec::with_capacity(self.gp_sw.len() + self.host_sw.len());
        for (g, (&s, &port)) in self.gp_sw.iter().zip(&self.gp_pno).enumerate() {
            let role = self.gp_role.get(g).copied().unwrap_or(PortRole::Fabric);
            let counter = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
            out.push(PortCounters {
                switch: s,
                port,
                role,
                direction: Direction::Tx,
                xmit_wait_cycles: counter(&self.xmit_wait, g),
                xmit_data_phits: counter(&self.xmit_data, g),
            });
            let h = self.gp_host.get(g).copied().unwrap_or(NONE);
            if h != NONE {
                out.push(PortCounters {
                    switch: s,
                    port,
                    role,
                    direction: Direction::Rx,
                    xmit_wait_cycles: counter(&self.host_wait, h as usize),
                    xmit_data_phits: counter(&self.host_data, h as usize),
                });
            }
        }
        out
    }

    /// Name of switch `s` in the fabric model (`g0s1`, `l0p2s0`, …).
    pub fn switch_name(&self, s: usize) -> &str {
        self.sw_name.get(s).map_or("", String::as_str)
    }

    /// Runs `cycles` cycles.
    pub fn run(&mut self, cycles: u64) {
        for _ in 0..cycles {
            self.step();
        }
    }

    /// Cycles until the next generation at the offered load (geometric, Bernoulli per cycle).
    fn gap(&mut self) -> u64 {
        if self.gen_p <= 0.0 {
            return u64::MAX;
        }
        if self.gen_p >= 1.0 {
            return 1;
        }
        let u: f64 = self.rng.gen();
        let g = ((1.0 - u).ln() / (1.0 - self.gen_p).ln()).floor();
        if (0.0..1e15).contains(&g) {
            g as u64 + 1
        } else {
            u64::MAX
        }
    }

    fn schedule(&mut self, delay: u64, ev: Ev) {
        let slot = ((self.now + delay) as usize) & (WHEEL - 1);
        if let Some(b) = self.wheel.get_mut(slot) {
            b.push(ev);
        }
    }

    fn alloc(&mut self, p: Pkt) -> u32 {
        if let Some(id) = self.free.pop() {
            if let Some(x) = self.pkts.get_mut(id as usize) {
                *x = p;
            }
            id
        } else {
            self.pkts.push(p);
            u32::try_from(self.pkts.len() - 1).unwrap_or(NONE)
        }
    }

    /// Switch `s`'s SELECT group towards `dst` draws a hash slot for a new flow: the port it
    /// chose (`None`: no decision point) and whether that is the minimal bucket (what the
    /// `minimal-bucket` counter counts; looked up only when that counter runs).
    fn draw(&mut self, s: u32, dst: MacAddr) -> (Option<fabricflow_agent::PortNo>, bool) {
        let slot: u8 = self.rng.gen();
        let Some(core) = self.cores.get(s as usize) else {
            return (None, false);
        };
        let chosen = core.select(dst, slot);
        let min_bucket = self.cfg.byte_counter == ByteCounter::MinimalBucket
            && chosen.is_some()
            && chosen == core.minimal_port_towards(dst);
        (chosen, min_bucket)
    }

    fn gp_of(&self, s: u32, pno: u32) -> u32 {
        self.pno_base
            .get(s as usize)
            .and_then(|&b| self.pno_gp.get(b as usize + pno as usize))
            .copied()
            .unwrap_or(NONE)
    }

    fn minimal_gp(&self, s: u32, dst_sw: u32, salt: u32) -> u32 {
        let m = self.routes.minimal(s as usize, dst_sw as usize);
        if m.is_empty() {
            return NONE;
        }
        let i = (salt as usize ^ s as usize) % m.len();
        m.get(i).map_or(NONE, |&pno| self.gp_of(s, pno))
    }

    /// One cycle.
    pub fn step(&mut self) {
        self.step_events();
        self.step_switches();
    }

    /// Phase 1 of a cycle: the events due now.
    fn step_events(&mut self) {
        let slot = (self.now as usize) & (WHEEL - 1);
        let mut evs = std::mem::take(self.wheel.get_mut(slot).unwrap_or(&mut Vec::new()));
        for ev in evs.drain(..) {
            self.event(ev);
        }
        if let Some(b) = self.wheel.get_mut(slot) {
            if b.is_empty() {
                *b = evs;
            }
        }
    }

    /// Phase 2 of a cycle: every switch with work, then the clock and the cores' timers.
    fn step_switches(&mut self) {
        for s in 0..self.sw_load.len() {
            let busy = self.sw_load.get(s).copied().unwrap_or(0) > 0
                || self.sw_pending.get(s).copied().unwrap_or(0) > 0;
            if busy {
                self.step_switch(s as u32);
            }
        }
        self.now += 1;
        if self.cfg.routing == Routing::IbaCc && self.now.checked_rem(TIMER_CYCLES) == Some(0) {
            let now = self.now;
            for ((ird, from), count) in self
                .ird
                .iter_mut()
                .zip(self.ird_quiet_from.iter_mut())
                .zip(self.ird_count.iter_mut())
            {
                if *ird > 0 && now.saturating_sub(*from) >= self.quiet_cycles {
                    *ird -= 1;
                    *count = 0;
                    *from = now;
                }
            }
        }
        if !self.cores.is_empty() && self.now.checked_rem(TIMER_CYCLES) == Some(0) {
            let now_ns = self.now_ns();
            for c in &mut self.cores {
                c.on_tick(now_ns);
                // The simulated switch applies a write at once: the core's record is its table.
                while c.poll_write().is_some() {}
            }
        }
        if self.now.checked_rem(self.cfg.window_cycles) == Some(0) && !self.cores.is_empty() {
            let (sum, n) = self
                .cores
                .iter()
                .flat_map(|c| c.policy().probabilities())
                .fold((0.0, 0u32), |(s, n), (_, p)| (s + p, n + 1));
            self.stats.series_p.push(sum / f64::from(n.max(1)));
        }
    }

    // Every index below comes from tables built in `with_fabric` (gp < ngp, v < nv, pkt ids
    // from `alloc`, hosts < nh, switches < nsw), so direct indexing cannot go out of bounds.
    #[allow(clippy::indexing_slicing)]
    fn event(&mut self, ev: Ev) {
        match ev {
            Ev::Head { gp, v, pkt } => {
                let (gpi, vi) = (gp as usize, usize::from(v));
                let len = u32::from(self.pkts[pkt as usize].len);
                self.pkts[pkt as usize].ready = self.now + self.sw_lat;
                self.pkts[pkt as usize].route = NONE;
                self.in_q[gpi * self.nv + vi].push_back(pkt);
                self.in_occ[gpi * self.nv + vi] += len;
                let s = self.gp_sw[gpi];
                self.sw_load[s as usize] += 1;
                if vi != self.cnm_vc {
                    self.in_data[gpi] += len;
                    if self.cfg.cp_queue == CpQueue::Input && !self.cps.is_empty() {
                        let q = self.in_data[gpi];
                        self.sample(s, gpi, pkt, q);
                    }
                }
            }
            Ev::Credit { gp, v, len } => {
                self.credits[gp as usize * self.nv + usize::from(v)] += u32::from(len);
            }
            Ev::HostCredit { host, lane, len } => {
                self.host_credit[host as usize * self.lanes + usize::from(lane)] += u32::from(len);
            }
            Ev::Eject { pkt } => {
                let p = self.pkts[pkt as usize];
                self.free.push(pkt);
                if p.flow != NONE {
                    self.transfer_delivered(p.flow);
                }
                let w = (self.now / self.cfg.window_cycles) as usize;
                if let Some(x) = self.stats.series_phits.get_mut(w) {
                    *x += u64::from(p.len);
                }
                let start = self.cfg.warmup_cycles;
                if self.now >= start && self.now < start + self.cfg.measure_cycles {
                    self.stats.delivered_phits += u64::from(p.len);
                    self.stats.delivered_pkts += 1;
                    self.stats
                        .latencies
                        .push(u32::try_from(self.now - p.gen).unwrap_or(u32::MAX));
                    self.stats.per_src_switch[p.src_sw as usize] += u64::from(p.len);
                    if let Some(x) = self.stats.per_dst_host.get_mut(p.dst_host as usize) {
                        *x += u64::from(p.len);
                    }
                }
            }
            Ev::Gen { host } if self.xfers.is_some() => self.transfer_release(host),
            Ev::Gen { host } => {
                let h = host as usize;
                let next = self.host_next[h];
                if self.now >= next {
                    let dst = self.destination(host);
                    if dst != NONE {
                        let lane = self.lane_of(self.host_sw[h], dst);
                        self.host_q[h * self.lanes + lane].push_back((self.now, dst, NONE));
                        self.sw_pending[self.host_sw[h] as usize] += 1;
                    }
                    let gap = self.gap();
                    self.host_next[h] = self.now.saturating_add(gap);
                    if gap != u64::MAX {
                        self.schedule(gap.min(WHEEL as u64 - 1), ev);
                    }
                } else {
                    self.schedule((next - self.now).min(WHEEL as u64 - 1), ev);
                }
            }
        }
    }

    /// A new packet's destination host (NONE: the source sends nothing), drawn from the sim's
    /// one RNG by the pattern in force.
    fn destination(&mut self, src: u32) -> u32 {
        let law = match &self.dests_then {
            Some((t, d)) if self.now >= *t => d,
            _ => &self.dests,
        };
        law.draw(src as usize, &mut self.rng)
            .and_then(|d| u32::try_from(d).ok())
            .unwrap_or(NONE)
    }

    /// The fabric port whose outgoing traffic a congested sample at CP `gp` of switch `s` is
    /// about: `gp` itself for an output-queue CP; for an input-queue CP the port the sampled
    /// packet leaves `s` by (its forced port at its source, else the next hop towards its
    /// Valiant group or its destination), none when `s` delivers it. The input queue at `gp` is
    /// the link *into* `s`, whose sender is the neighbour: stored as `gp`'s own congestion it
    /// would tell feedback comparison the reverse direction of a candidate (Dragonfly(4,8,4),
    /// uniform at 0.8, seed 1: 0.943 of minimal with the input port, 0.968 with this).
    #[allow(clippy::indexing_slicing)] // gp < ngp, pkt from `alloc`, s < nsw (see `event`)
    fn outgoing_port(&self, s: u32, gp: usize, pkt: u32) -> Option<fabricflow_agent::PortNo> {
        if self.cfg.cp_queue == CpQueue::Output {
            return Some(self.gp_pno[gp]);
        }
        let p = &self.pkts[pkt as usize];
        let out = if p.dst_sw == s {
            NONE
        } else if p.forced != NONE && s == p.src_sw {
            p.forced
        } else if p.via != NONE && self.sw_group[s as usize] != p.via {
            self.toward_group(s, p.via)
        } else {
            self.minimal_gp(s, p.dst_sw, pkt)
        };
        (out != NONE).then(|| self.gp_pno[out as usize])
    }

    /// QCN congestion point of port `gp` (queue now `q_phits`) sees packet `pkt` enqueued.
    #[allow(clippy::indexing_slicing)] // gp < ngp = cps.len(), pkt from `alloc` (see `event`)
    fn sample(&mut self, s: u32, gp: usize, pkt: u32, q_phits: u32) {
        let pb = u64::from(self.cfg.phit_bytes);
        let p = self.pkts[pkt as usize];
        let r = self.rng.next_u32();
        let Some(fb) = self.cps[gp].on_enqueue(u64::from(p.len) * pb, u64::from(q_phits) * pb, r)
        else {
            return;
        };
        if !fb.congested() {
            return;
        }
        self.stats.cnm_generated += 1;
        let now_ns = self.now_ns();
        let sample = CongestionSample {
            port: self.outgoing_port(s, gp, pkt),
            qntz_fb: fb.qntz_fb,
            culprit: Culprit {
                src: self.host_mac[p.src_host as usize],
                dst: self.culprit_dst(&p),
            },
        };
        let own = match self.cores.get_mut(s as usize) {
            Some(core) => core.on_congestion(&sample, now_ns) == CnmRoute::OwnHost,
            None => {
                // IBA CC: the source host's adapter is the reaction point.
                let own = p.src_sw == s;
                if own {
                    self.iba_notify(p.src_host);
                }
                own
            }
        };
        if own {
            // The CNM is for one of this switch's own hosts: it never crosses a fabric port,
            // so only source processing reacts to it.
            self.stats.cnm_to_self += 1;
            return;
        }
        let out = self.minimal_gp(s, p.src_sw, 0);
        if out == NONE {
            return;
        }
        let idx = out as usize * self.nv + self.cnm_vc;
        if self.out_occ[idx] + self.cnm_len > self.cfg.cnm_buffer_phits {
            self.stats.cnm_dropped += 1;
            return;
        }
        let cnm = Pkt {
            gen: self.now,
            ready: self.now,
            dst_host: NONE,
            src_host: NONE,
            encap_dst: p.dst_host,
            src_sw: s,
            dst_sw: p.src_sw,
            via: NONE,
            forced: NONE,
            route: NONE,
            len: u16::try_from(self.cnm_len).unwrap_or(1),
            ghops: 0,
            cnm: true,
            cnm_fb: fb.qntz_fb,
            decided: true,
            divert: false,
            min_bucket: false,
            flow: NONE,
            lane: 0,
            path: p.path,
            hops: 0,
            dim: NO_DIM,
            epoch: 0,
            dateline: false,
            culprit_src: p.src_host,
        };
        let id = self.alloc(cnm);
        self.out_q[idx].push_back(id);
        self.out_occ[idx] += self.cnm_len;
        self.sw_load[s as usize] += 1;
    }

    /// The lane a packet from a host of switch `s` to host `dst` leaves on.
    fn lane_of(&self, s: u32, dst: u32) -> usize {
        let i = s as usize * self.host_sw.len() + dst as usize;
        usize::from(self.slow.get(i).copied().unwrap_or(false))
    }

    /// Whether packets leaving the hosts of switch `s` for host `dst` take the slow lane.
    pub fn slow_lane(&self, s: usize, dst: usize) -> bool {
        self.slow
            .get(s * self.host_sw.len() + dst)
            .copied()
            .unwrap_or(false)
    }

    /// Puts the packets that leave the hosts of switch `s` for host `dst` on the slow lane
    /// (`slow`) or back on the fast one, as the edge switch's dFtree rule for `eth_dst = dst`
    /// does from now on (a no-op with one lane). The packets of those hosts still queued for
    /// `dst` move to the new lane's queue, in generation order: a packet takes its lane when it
    /// leaves the host, so nothing queued keeps the old one.
    pub fn set_slow_lane(&mut self, s: usize, dst: usize, slow: bool) {
        let nh = self.host_sw.len();
        let Some(x) = self.slow.get_mut(s * nh + dst) else {
            return;
        };
        if *x == slow {
            return;
        }
        *x = slow;
        let (from, to) = if slow { (0, 1) } else { (1, 0) };
        let nl = self.lanes;
        let hosts = self.sw_hosts.get(s).cloned().unwrap_or_default();
        for h in hosts {
            let (fi, ti) = (h as usize * nl + from, h as usize * nl + to);
            let Some(q) = self.host_q.get_mut(fi) else {
                continue;
            };
            let (moving, staying): (HostQueue, HostQueue) =
                q.drain(..).partition(|&(_, d, _)| d as usize == dst);
            *q = staying;
            if moving.is_empty() {
                continue;
            }
            if let Some(t) = self.host_q.get_mut(ti) {
                let mut merged: Vec<(u64, u32, u32)> = t.drain(..).chain(moving).collect();
                merged.sort_by_key(|&(gen, _, _)| gen);
                *t = merged.into();
            }
        }
    }

    /// Per host, in host order: the counters the dFtree detection reads (empty unless
    /// `cfg.port_stats_interval` is set), cumulative from cycle 0.
    pub fn host_port_counters(&self) -> Vec<HostPortCounters> {
        if !self.counting {
            return Vec::new();
        }
        let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        (0..self.host_sw.len())
            .map(|h| {
                let gp = self.host_gp.get(h).copied().unwrap_or(NONE) as usize;
                HostPortCounters {
                    switch: self.host_sw.get(h).copied().unwrap_or(NONE) as usize,
                    backlog_cycles: at(&self.backlog, gp),
                    host_wait_cycles: at(&self.host_wait, h),
                    host_data_phits: at(&self.host_data, h),
                }
            })
            .collect()
    }

    fn now_ns(&self) -> u64 {
        let ns = self.now as f64 * self.ns_per_cycle;
        if ns.is_finite() && ns >= 0.0 {
            ns as u64
        } else {
            0
        }
    }

    /// Occupancy seen by UGAL-L at output `gp`: its output queue plus the downstream buffer space
    /// its credits say is in use, data VCs, phits.
    #[allow(clippy::indexing_slicing)] // gp < ngp, peer < ngp, v < nv (see `event`)
    fn queue_phits(&self, gp: u32) -> u32 {
        let g = gp as usize;
        let peer = self.gp_peer[g];
        let mut q = self.out_data[g];
        if peer != NONE {
            let cap = self.gp_incap[peer as usize];
            for v in 0..self.ndata {
                q += cap.saturating_sub(self.credits[g * self.nv + v]);
            }
        }
        q
    }

    /// Output port towards group `target` from switch `s` (Dragonfly).
    fn toward_group(&self, s: u32, target: u32) -> u32 {
        let (Some(df), Some(&g), Some(&idx)) = (
            self.df,
            self.sw_group.get(s as usize),
            self.sw_idx.get(s as usize),
        ) else {
            return NONE;
        };
        let (owner, gport) = df.owner(g, target);
        let pno = if owner == idx {
            gport
        } else {
            df.local_port(idx, owner)
        };
        self.gp_of(s, pno)
    }

    fn random_group(&mut self, a: u32, b: u32) -> u32 {
        if self.ngroups <= 2 - u32::from(a == b) {
            return NONE;
        }
        loop {
            let g = self.rng.gen_range(0..self.ngroups);
            if g != a && g != b {
                return g;
            }
        }
    }

    /// A uniformly drawn global port of `s` other than `not` (with room for a packet when
    /// `need_room`), or NONE. Uniform over the candidates: "first candidate after a random start"
    /// would give the port after `not` double weight and overload it.
    fn random_other_global(&mut self, s: u32, not: u32, need_room: bool) -> u32 {
        let n = self.other_globals(s, not, need_room).count();
        if n == 0 {
            return NONE;
        }
        let k = self.rng.gen_range(0..n);
        self.other_globals(s, not, need_room).nth(k).unwrap_or(NONE)
    }

    /// The candidates of [`random_other_global`](Self::random_other_global), in port order.
    fn other_globals(&self, s: u32, not: u32, need_room: bool) -> impl Iterator<Item = u32> + '_ {
        let len = self.len;
        self.sw_globals
            .get(s as usize)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .copied()
            .filter(move |&gp| gp != not && (!need_room || self.has_room(gp, 0, len)))
    }

    fn has_room(&self, gp: u32, v: usize, len: u32) -> bool {
        let i = gp as usize * self.nv + v;
        let credit = self.credits.get(i).copied().unwrap_or(0) >= len;
        let out = self.out_occ.get(i).copied().unwrap_or(u32::MAX) + len <= self.cfg.out_phits;
        credit && out
    }

    /// The output port of data packet `id` at switch `s` (and its injection decision when `s` is
    /// its source switch).
    #[allow(clippy::indexing_slicing)] // id from `alloc`, switch/host ids from the tables
    fn route_data(&mut self, s: u32, id: u32) -> u32 {
        let p = self.pkts[id as usize];
        if p.flow != NONE {
            if let Some(gp) = self.transfer_route(s, p.flow) {
                return gp;
            }
        }
        if p.dst_sw == s {
            return self.host_gp[p.dst_host as usize];
        }
        let at_source = s == p.src_sw && p.ghops == 0;
        if self.cfg.routing == Routing::Drb {
            if at_source && p.hops == 0 && !p.decided {
                // The pair's multipath group draws a hash slot for the new flow.
                let slot: u8 = self.rng.gen();
                let dst = self.host_mac[p.dst_host as usize];
                let path = self.cores[s as usize].select_path(dst, slot).unwrap_or(0);
                let q = &mut self.pkts[id as usize];
                q.path = path;
                q.decided = true;
            }
            let q = self.pkts[id as usize];
            if q.path > 0 {
                let hop = self
                    .paths
                    .get(&(q.src_sw, q.dst_sw))
                    .and_then(|l| l.get(usize::from(q.path)))
                    .and_then(|l| l.get(usize::from(q.hops)))
                    .copied();
                if let Some(gp) = hop {
                    return gp;
                }
            }
            return self.minimal_gp(s, p.dst_sw, id);
        }
        let inter = self.sw_group[s as usize] != self.sw_group[p.dst_sw as usize];
        if let (Routing::QcnSw(_), None, true, false, true) =
            (self.cfg.routing, self.df, at_source, p.decided, inter)
        {
            // A fat-tree's decision points choose among the up ports (all minimal).
            let (chosen, min_bucket) = self.draw(s, self.host_mac[p.dst_host as usize]);
            let forced = chosen.map_or(NONE, |pno| self.gp_of(s, pno));
            let q = &mut self.pkts[id as usize];
            q.forced = forced;
            q.min_bucket = min_bucket;
            q.decided = true;
        }
        if self.df.is_none() && p.hops == 0 && s == p.src_sw {
            let f = self.pkts[id as usize].forced;
            if f != NONE {
                return f;
            }
        }
        if at_source && !p.decided && !inter && self.cfg.routing == Routing::Valiant {
            // Valiant also sends intra-group traffic through another group.
            let g = self.sw_group[s as usize];
            let via = self.random_group(g, g);
            let q = &mut self.pkts[id as usize];
            q.via = via;
            q.decided = true;
        }
        if at_source && self.df.is_some() && inter {
            let g = self.sw_group[s as usize];
            let gd = self.sw_group[p.dst_sw as usize];
            match self.cfg.routing {
                Routing::Minimal => {}
                Routing::Valiant if !p.decided => {
                    // Any group but the source's; the destination group means minimal.
                    let via = self.random_group(g, g);
                    let q = &mut self.pkts[id as usize];
                    q.via = via;
                    q.decided = true;
                }
                Routing::UgalL if !p.decided => {
                    let via = self.ugal(s, &p, g, gd);
                    let q = &mut self.pkts[id as usize];
                    q.via = via;
                    q.decided = true;
                }
                Routing::Pause => {
                    let m = self.minimal_gp(s, p.dst_sw, id);
                    let forced = if self.has_room(m, 0, self.len) {
                        NONE
                    } else {
                        self.random_other_global(s, m, true)
                    };
                    self.pkts[id as usize].forced = forced;
                }
                Routing::QcnSw(_) if !p.decided => {
                    let (chosen, min_bucket) = self.draw(s, self.host_mac[p.dst_host as usize]);
                    let minimal = self.routes.minimal(s as usize, p.dst_sw as usize);
                    let (forced, divert) = match chosen {
                        Some(pno) if !minimal.contains(&pno) => {
                            let gp = self.gp_of(s, pno);
                            (gp, gp != NONE && !self.gp_global[gp as usize])
                        }
                        _ => (NONE, false),
                    };
                    let q = &mut self.pkts[id as usize];
                    q.forced = forced;
                    q.divert = divert;
                    q.min_bucket = min_bucket;
                    q.decided = true;
                }
                _ => {}
            }
            let f = self.pkts[id as usize].forced;
            if f != NONE {
                return f;
            }
        }
        if p.divert && s != p.src_sw {
            // The neighbour of a local-candidate diversion: out of one of its global ports.
            self.pkts[id as usize].divert = false;
            let g = self.random_other_global(s, NONE, false);
            if g != NONE {
                return g;
            }
        }
        let via = self.pkts[id as usize].via;
        if via != NONE {
            if self.sw_group[s as usize] == via {
                self.pkts[id as usize].via = NONE;
            } else {
                return self.toward_group(s, via);
            }
        }
        self.minimal_gp(s, p.dst_sw, id)
    }

    /// UGAL-L at the source switch: the intermediate group to use, or NONE for minimal.
    #[allow(clippy::indexing_slicing)] // ids from the tables (see `event`)
    fn ugal(&mut self, s: u32, p: &Pkt, g: u32, gd: u32) -> u32 {
        let Some(df) = self.df else { return NONE };
        let via = self.random_group(g, gd);
        if via == NONE {
            return NONE;
        }
        let m = self.minimal_gp(s, p.dst_sw, 0);
        let n = self.toward_group(s, via);
        if m == NONE || n == NONE {
            return NONE;
        }
        let h_min = self
            .routes
            .hops(s as usize, p.dst_sw as usize)
            .map_or(3.0, f64::from);
        let (owner, gport) = df.owner(g, via);
        let owner_sw = g * df.a + owner;
        let land_gp = self.gp_peer[self.gp_of(owner_sw, gport) as usize];
        let land = self.gp_sw[land_gp as usize];
        let h_nm = f64::from(u32::from(owner != self.sw_idx[s as usize]) + 1)
            + self
                .routes
                .hops(land as usize, p.dst_sw as usize)
                .map_or(3.0, f64::from);
        let (qm, qn) = (
            f64::from(self.queue_phits(m)),
            f64::from(self.queue_phits(n)),
        );
        if qm * h_min <= qn * h_nm + self.cfg.ugal_threshold {
            NONE
        } else {
            via
        }
    }

    /// One cycle of switch `s`: output links, crossbar, host injection.
    #[allow(clippy::indexing_slicing)] // gp ∈ sw_base[s]..sw_base[s+1] < ngp, v < nv, ids from `alloc`
    fn step_switch(&mut self, s: u32) {
        let now = self.now;
        let nv = self.nv;
        let (b, e) = (self.sw_base[s as usize], self.sw_base[s as usize + 1]);
        // (a) Output links.
        for gp in b..e {
            let g = gp as usize;
            let host = self.gp_host[g] != NONE;
            if self.counting && host {
                let full = (0..self.ndata)
                    .any(|v| self.out_occ[g * nv + v] + self.len > self.cfg.out_phits);
                if full {
                    self.backlog[g] += 1;
                }
            }
            if self.link_busy[g] > now {
                continue;
            }
            let mut chosen = None;
            let cq = g * nv + self.cnm_vc;
            if let Some(&id) = self.out_q[cq].front() {
                if host || self.credits[cq] >= u32::from(self.pkts[id as usize].len) {
                    chosen = Some(self.cnm_vc);
                }
            }
            if chosen.is_none() {
                let start = usize::from(self.out_rr[g]);
                for k in 0..self.ndata {
                    let v = (start + k) % self.ndata;
                    if let Some(&id) = self.out_q[g * nv + v].front() {
                        if host || self.credits[g * nv + v] >= u32::from(self.pkts[id as usize].len)
                        {
                            chosen = Some(v);
                            self.out_rr[g] = u8::try_from((v + 1) % self.ndata).unwrap_or(0);
                            break;
                        }
                    }
                }
            }
            let Some(v) = chosen else {
                // The link is free and nothing could go: XmitWait if a packet is waiting (a
                // host port always sends, so only credits can hold a fabric port here).
                if self.counting
                    && self.out_q[g * nv..(g + 1) * nv]
                        .iter()
                        .any(|q| !q.is_empty())
                {
                    self.xmit_wait[g] += 1;
                }
                continue;
            };
            let Some(id) = self.out_q[g * nv + v].pop_front() else {
                continue;
            };
            let len = u32::from(self.pkts[id as usize].len);
            if self.counting {
                self.xmit_data[g] += u64::from(len);
            }
            self.out_occ[g * nv + v] -= len;
            if v != self.cnm_vc {
                self.out_data[g] -= len;
            }
            self.sw_load[s as usize] -= 1;
            self.link_busy[g] = now + u64::from(len);
            let lat = self.gp_lat[g];
            if host {
                self.schedule(lat + u64::from(len), Ev::Eject { pkt: id });
                continue;
            }
            self.credits[g * nv + v] -= len;
            let is_cnm = self.pkts[id as usize].cnm;
            if !is_cnm {
                if self.gp_global[g] {
                    self.pkts[id as usize].ghops += 1;
                }
                let q = &mut self.pkts[id as usize];
                q.hops = q.hops.saturating_add(1);
                if q.rp_counts(self.cfg.byte_counter, s) && !self.cores.is_empty() {
                    let now_ns = self.now_ns();
                    let bytes = u64::from(len) * u64::from(self.cfg.phit_bytes);
                    self.cores[s as usize].on_bytes(self.gp_pno[g], bytes, now_ns);
                }
            }
            let peer = self.gp_peer[g];
            let vv = u8::try_from(v).unwrap_or(0);
            self.schedule(
                lat,
                Ev::Head {
                    gp: peer,
                    v: vv,
                    pkt: id,
                },
            );
        }
        // (b) Crossbar.
        let np = e - b;
        let rr = self.sw_rr[s as usize];
        self.sw_rr[s as usize] = (rr + 1) % np.max(1);
        for k in 0..np {
            let gp = b + (rr + k) % np;
            let g = gp as usize;
            if self.in_busy[g] > now {
                continue;
            }
            // CNM class first, then data VCs from the highest hop phase down; with several lanes,
            // the lanes of one phase in an order that rotates every cycle.
            let lane_rr = (now % self.lanes as u64) as usize;
            for vi in 0..nv {
                let v = if vi == 0 {
                    self.cnm_vc
                } else {
                    let j = vi - 1;
                    let phase = self.phases - 1 - j / self.lanes;
                    let lane = (j % self.lanes + lane_rr) % self.lanes;
                    lane * self.phases + phase
                };
                let q = g * nv + v;
                let Some(&id) = self.in_q[q].front() else {
                    continue;
                };
                let p = self.pkts[id as usize];
                if p.ready > now {
                    continue;
                }
                if p.cnm && p.dst_sw == s {
                    self.consume_cnm(s, g, v, id);
                    break;
                }
                let out = if p.route != NONE {
                    p.route
                } else {
                    let o = if p.cnm {
                        self.minimal_gp(s, p.dst_sw, 0)
                    } else {
                        self.route_data(s, id)
                    };
                    if self.cfg.routing != Routing::Pause || p.ghops > 0 || s != p.src_sw {
                        self.pkts[id as usize].route = o;
                    }
                    o
                };
                if out == NONE {
                    continue;
                }
                let (ov, class) = if p.cnm {
                    (self.cnm_vc, None)
                } else if self.gp_host[out as usize] != NONE {
                    // Delivery: the packet's lane, first phase.
                    (usize::from(p.lane) * self.phases, None)
                } else if let Some(c) = self.cube {
                    let cl = cube_class(&c, &self.pkts[id as usize], s, self.gp_pno[out as usize]);
                    (cl.0.min(self.ndata - 1), Some(cl))
                } else if self.cfg.routing == Routing::Drb {
                    (usize::from(p.hops).min(self.ndata - 1), None)
                } else {
                    let q = &self.pkts[id as usize];
                    (
                        usize::from(q.lane) * self.phases
                            + usize::from(q.ghops).min(self.phases - 1),
                        None,
                    )
                };
                let o = out as usize;
                let cap = if p.cnm {
                    self.cfg.cnm_buffer_phits
                } else {
                    self.cfg.out_phits
                };
                let len = u32::from(p.len);
                if self.xbar_busy[o] > now || self.out_occ[o * nv + ov] + len > cap {
                    continue;
                }
                // Grant.
                self.in_q[q].pop_front();
                self.in_occ[q] -= len;
                if !p.cnm {
                    self.in_data[g] -= len;
                }
                let xfer = if p.cnm {
                    u64::from(len.div_ceil(self.cfg.speedup))
                } else {
                    self.xfer
                };
                self.in_busy[g] = now + xfer;
                self.xbar_busy[o] = now + xfer;
                let lat = self.gp_lat[g];
                let host = self.gp_host[g];
                let l16 = u16::try_from(len).unwrap_or(u16::MAX);
                if host != NONE {
                    let lane = u8::try_from(v / self.phases).unwrap_or(0);
                    self.schedule(
                        xfer + lat,
                        Ev::HostCredit {
                            host,
                            lane,
                            len: l16,
                        },
                    );
                } else {
                    let up = self.gp_peer[g];
                    let vv = u8::try_from(v).unwrap_or(0);
                    self.schedule(
                        xfer + lat,
                        Ev::Credit {
                            gp: up,
                            v: vv,
                            len: l16,
                        },
                    );
                }
                self.pkts[id as usize].route = NONE;
                if let Some((_, dim, epoch, dateline)) = class {
                    let q = &mut self.pkts[id as usize];
                    (q.dim, q.epoch, q.dateline) = (dim, epoch, dateline);
                }
                if !p.cnm && s == p.src_sw && p.ghops == 0 {
                    let inter = self.sw_group[s as usize] != self.sw_group[p.dst_sw as usize];
                    if inter && self.df.is_some() {
                        self.stats.inter_injected += 1;
                        let q2 = self.pkts[id as usize];
                        if q2.forced != NONE || q2.via != NONE {
                            self.stats.inter_nonminimal += 1;
                        }
                    }
                }
                self.out_q[o * nv + ov].push_back(id);
                self.out_occ[o * nv + ov] += len;
                if !p.cnm {
                    self.out_data[o] += len;
                    if self.cfg.cp_queue == CpQueue::Output
                        && !self.cps.is_empty()
                        && self.gp_host[o] == NONE
                    {
                        let qd = self.out_data[o];
                        self.sample(s, o, id, qd);
                    }
                }
                break;
            }
        }
        // (c) Host injection.
        if self.sw_pending[s as usize] > 0 {
            let n = self.sw_hosts[s as usize].len();
            for i in 0..n {
                let h = self.sw_hosts[s as usize][i] as usize;
                if self.host_busy[h] > now || self.host_hold[h] > now {
                    continue;
                }
                // The first lane, from the round-robin start, with a packet and its credits.
                let nl = self.lanes;
                let start = usize::from(self.host_rr[h]);
                let mut queued = false;
                let mut pick = None;
                for k in 0..nl {
                    let lane = (start + k) % nl;
                    if self.host_q[h * nl + lane].is_empty() {
                        continue;
                    }
                    queued = true;
                    if self.host_credit[h * nl + lane] >= self.len {
                        pick = Some(lane);
                        break;
                    }
                }
                let Some(lane) = pick else {
                    if self.counting && queued {
                        self.host_wait[h] += 1;
                    }
                    continue;
                };
                self.host_rr[h] = u8::try_from((lane + 1) % nl).unwrap_or(0);
                let Some((gen, dst, flow)) = self.host_q[h * nl + lane].pop_front() else {
                    continue;
                };
                self.sw_pending[s as usize] -= 1;
                let pkt = Pkt {
                    gen,
                    ready: 0,
                    dst_host: dst,
                    src_host: u32::try_from(h).unwrap_or(NONE),
                    encap_dst: NONE,
                    src_sw: s,
                    dst_sw: self.host_sw[dst as usize],
                    via: NONE,
                    forced: NONE,
                    route: NONE,
                    len: u16::try_from(self.len).unwrap_or(u16::MAX),
                    ghops: 0,
                    cnm: false,
                    cnm_fb: 0,
                    decided: false,
                    divert: false,
                    min_bucket: false,
                    flow,
                    lane: u8::try_from(lane).unwrap_or(0),
                    path: 0,
                    hops: 0,
                    dim: NO_DIM,
                    epoch: 0,
                    dateline: false,
                    culprit_src: NONE,
                };
                if flow != NONE {
                    self.transfer_injected(flow);
                }
                let id = self.alloc(pkt);
                if self.counting {
                    self.host_data[h] += u64::from(self.len);
                }
                self.host_busy[h] = now + u64::from(self.len);
                if self.ird[h] > 0 {
                    // Rate B/(1+IRD): the packet's own time on the link, IRD times over.
                    self.host_hold[h] = now + u64::from(self.len) * (1 + u64::from(self.ird[h]));
                }
                self.host_credit[h * nl + lane] -= self.len;
                let gp = self.host_gp[h];
                let lat = self.gp_lat[gp as usize];
                let v = u8::try_from(lane * self.phases).unwrap_or(0);
                self.schedule(lat, Ev::Head { gp, v, pkt: id });
            }
        }
    }

    /// The destination MAC of a data packet as the fabric sees it: path-tagged on a DRB
    /// alternative, the host's own otherwise.
    fn culprit_dst(&self, p: &Pkt) -> MacAddr {
        self.tagged(p.dst_host, p.path, p.src_sw)
    }

    fn tagged(&self, host: u32, path: u8, src_sw: u32) -> MacAddr {
        let mac = self
            .host_mac
            .get(host as usize)
            .copied()
            .unwrap_or(MacAddr::ZERO);
        if path == 0 {
            return mac;
        }
        let tag = self.src_tag.get(src_sw as usize).copied().unwrap_or(0);
        tagged_mac(mac, path, tag)
    }

    /// IBA CC: a notification about host `h`'s packet.
    fn iba_notify(&mut self, h: u32) {
        let now = self.now;
        let (Some(ird), Some(count), Some(from)) = (
            self.ird.get_mut(h as usize),
            self.ird_count.get_mut(h as usize),
            self.ird_quiet_from.get_mut(h as usize),
        ) else {
            return;
        };
        *from = now;
        *count += 1;
        if *count >= IBA_PER_STEP {
            *count = 0;
            *ird = (*ird + 1).min(IBA_MAX_IRD);
        }
    }

    /// IBA CC: the hosts' IRD now.
    pub fn ird(&self) -> &[u32] {
        &self.ird
    }

    /// A CNM reached the switch it was sent to (through input port `g`): its core takes it.
    #[allow(clippy::indexing_slicing)] // g < ngp, v < nv, id from `alloc`, s < nsw
    fn consume_cnm(&mut self, s: u32, g: usize, v: usize, id: u32) {
        let q = g * self.nv + v;
        self.in_q[q].pop_front();
        let p = self.pkts[id as usize];
        let len = u32::from(p.len);
        self.in_occ[q] -= len;
        self.sw_load[s as usize] -= 1;
        let up = self.gp_peer[g];
        let lat = self.gp_lat[g];
        let vv = u8::try_from(v).unwrap_or(0);
        self.schedule(
            lat,
            Ev::Credit {
                gp: up,
                v: vv,
                len: p.len,
            },
        );
        self.free.push(id);
        self.stats.cnm_delivered += 1;
        let now_ns = self.now_ns();
        let port = self.gp_pno[g];
        let culprit_dst = self.tagged(p.encap_dst, p.path, s);
        if let Some(core) = self.cores.get_mut(s as usize) {
            core.on_cnm(port, culprit_dst, p.cnm_fb, now_ns);
        } else if self.cfg.routing == Routing::IbaCc {
            self.iba_notify(p.culprit_src);
        }
    }
}

/// The dateline class of a packet leaving switch `s` on port `pno` of a torus or mesh: its VC
/// and the state after the hop (see the module documentation).
fn cube_class(c: &Cube, p: &Pkt, s: u32, pno: u32) -> (usize, u8, u8, bool) {
    let Some((d, _)) = c.port_dim(pno) else {
        return (0, p.dim, p.epoch, p.dateline);
    };
    let d = u8::try_from(d).unwrap_or(0);
    let (epoch, mut dateline) = if p.dim == NO_DIM || d > p.dim {
        (p.epoch, false)
    } else if d < p.dim {
        (p.epoch.saturating_add(1), false)
    } else {
        (p.epoch, p.dateline)
    };
    if c.crosses_dateline(s, pno) {
        dateline = true;
    }
    (
        2 * usize::from(epoch) + usize::from(dateline),
        d,
        epoch,
        dateline,
    )
}

impl Pkt {
    /// Whether switch `s`'s reaction-point byte counter counts this packet leaving a fabric
    /// port: every packet (the port's tx octets), or only one `s` injected through its
    /// decision group's minimal bucket (QCN's RP counter, the agent's `minimal-bucket`).
    fn rp_counts(&self, counter: ByteCounter, s: u32) -> bool {
        match counter {
            ByteCounter::Port => true,
            ByteCounter::MinimalBucket => self.src_sw == s && self.min_bucket,
        }
    }

    /// A one-phit data packet from switch `src_sw` to `dst_sw` with no hosts and nothing
    /// decided: what route and class computations are asked about outside the event loop.
    fn probe(src_sw: u32, dst_sw: u32) -> Pkt {
        Pkt {
            gen: 0,
            ready: 0,
            dst_host: NONE,
            src_host: NONE,
            encap_dst: NONE,
            src_sw,
            dst_sw,
            via: NONE,
            forced: NONE,
            route: NONE,
            len: 1,
            ghops: 0,
            cnm: false,
            cnm_fb: 0,
            decided: false,
            divert: false,
            min_bucket: false,
            flow: NONE,
            lane: 0,
            path: 0,
            hops: 0,
            dim: NO_DIM,
            epoch: 0,
            dateline: false,
            culprit_src: NONE,
        }
    }
}

/// The data VCs a path needs on a torus or mesh (one more than its highest class).
fn vcs_needed(c: &Cube, path: &[(usize, u32)]) -> usize {
    let mut p = Pkt::probe(0, 0);
    let mut need = 1;
    for &(x, pno) in path {
        let (vc, dim, epoch, dateline) = cube_class(c, &p, u32::try_from(x).unwrap_or(0), pno);
        need = need.max(vc + 1);
        (p.dim, p.epoch, p.dateline) = (dim, epoch, dateline);
    }
    need
}

/// One [`SwitchCore`] per switch, each having learned its switch's decision points from the
/// controller's plan exactly as the agent learns them from a switch (group descriptions and the
/// controller's flows), so the simulated QCN-SW is the agent's.
fn learned_cores(
    fabric: &Fabric,
    opts: &PlanOptions,
    policy: &fabricflow_agent::policy::PolicyConfig,
    weights: &fabricflow_agent::weights::WeightsConfig,
    link: PortLink,
) -> Result<Vec<SwitchCore>, SpecError> {
    let invalid = |e: String| SpecError::Invalid(e);
    let desired =
        desired_state(fabric, opts, &BTreeSet::new()).map_err(|e| invalid(e.to_string()))?;
    let conv = PlanConventions::default();
    let mut cores = Vec::with_capacity(fabric.switches().len());
    for sw in fabric.switches() {
        let mut core =
            SwitchCore::new(policy.clone(), weights.clone()).map_err(|e| invalid(e.to_string()))?;
        // Every link has one rate; octets reach the core as they leave (no polling period).
        core.set_links(PortLinks::new(link, Vec::new()), 0);
        if let Some(d) = desired.get(&sw.dpid) {
            let groups: Vec<GroupDesc> = d.groups.iter().map(GroupDesc::from).collect();
            let flows: Vec<FlowStats> = d.flows.iter().map(FlowStats::from).collect();
            core.learn(LearnedPlan::learn(&conv, &groups, &flows), 0, 0);
            while core.poll_write().is_some() {}
        }
        cores.push(core);
    }
    Ok(cores)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used)]
    use super::*;
    use fabricflow_controller::TopologySpec;

    /// Every packet's destination lies in the support of the pattern in force, as the registry
    /// defines it for the run's fabric and seed (so the hotspot's hot host is the harness's).
    #[test]
    fn packet_destinations_stay_in_the_patterns_support() {
        for traffic in ["uniform", "adv+2", "hotspot", "hotspot:1->adv+1@500"] {
            let cfg = SimConfig {
                topology: TopologySpec::Dragonfly { p: 2, a: 2, h: 1 },
                traffic: traffic.parse().unwrap(),
                seed: 5,
                ..SimConfig::default()
            };
            let fabric = cfg.topology.build().unwrap();
            let mut sim = Sim::new(cfg.clone()).unwrap();
            let n = u32::try_from(sim.hosts()).unwrap();
            for now in [0, 499, 500, 10_000] {
                sim.now = now;
                let law = cfg.traffic.at(now).destinations(&fabric, 5).unwrap();
                for src in (0..n).cycle().take(2_000) {
                    let dst = sim.destination(src);
                    if dst == NONE {
                        assert!((0..n as usize).all(|d| law.probability(src as usize, d) == 0.0));
                    } else {
                        let p = law.probability(src as usize, dst as usize);
                        assert!(p > 0.0, "{traffic} at {now}: {src} -> {dst}");
                    }
                }
            }
        }
    }

    /// An input-queue CP attributes a sample to the port the packet leaves by, never to the
    /// input it arrived on (whose traffic the neighbour sends); a packet delivered here has no
    /// outgoing fabric port. An output-queue CP names its own port.
    #[test]
    fn an_input_queue_sample_names_the_outgoing_port() {
        let cfg = SimConfig {
            topology: TopologySpec::Dragonfly { p: 2, a: 4, h: 2 },
            routing: "qcnsw-combined".parse().unwrap(),
            ..SimConfig::default()
        };
        let mut sim = Sim::new(cfg.clone()).unwrap();
        let (s, far_sw) = (0u32, *sim.gp_sw.last().unwrap());
        let input = (0..sim.gp_sw.len())
            .find(|&g| sim.gp_sw[g] == s && sim.gp_host[g] == NONE)
            .unwrap();
        let mut pkt = |dst_sw: u32| sim.alloc(Pkt::probe(s, dst_sw));
        let (away, here) = (pkt(far_sw), pkt(s));
        let minimal = sim.gp_pno[sim.minimal_gp(s, far_sw, away) as usize];
        assert_ne!(minimal, sim.gp_pno[input]);
        assert_eq!(sim.outgoing_port(s, input, away), Some(minimal));
        assert_eq!(sim.outgoing_port(s, input, here), None);
        sim.cfg.cp_queue = CpQueue::Output;
        assert_eq!(sim.outgoing_port(s, input, here), Some(sim.gp_pno[input]));
    }

    /// The port counter counts every packet a fabric port sends; the minimal-bucket counter
    /// only those the switch's decision group sent by its minimal bucket (not transit, not
    /// its own diversions, not own-group packets, which no decision group sees).
    #[test]
    fn the_minimal_bucket_counter_counts_only_own_minimal_injections() {
        let own = Pkt {
            min_bucket: true,
            ..Pkt::probe(3, 9)
        };
        let transit = Pkt {
            min_bucket: true,
            ..Pkt::probe(2, 9)
        };
        let diverted = Pkt {
            forced: 5,
            ..Pkt::probe(3, 9)
        };
        let own_group = Pkt::probe(3, 4);
        for p in [&own, &transit, &diverted, &own_group] {
            assert!(p.rp_counts(ByteCounter::Port, 3));
        }
        assert!(own.rp_counts(ByteCounter::MinimalBucket, 3));
        assert!(!transit.rp_counts(ByteCounter::MinimalBucket, 3));
        assert!(!diverted.rp_counts(ByteCounter::MinimalBucket, 3));
        assert!(!own_group.rp_counts(ByteCounter::MinimalBucket, 3));
    }

    /// A draw is marked as the minimal bucket's exactly when the decision group chose its
    /// minimal port, and only when the `minimal-bucket` counter runs.
    #[test]
    fn a_draw_marks_the_minimal_bucket() {
        let cfg = |byte_counter| SimConfig {
            topology: TopologySpec::Dragonfly { p: 2, a: 4, h: 2 },
            routing: Routing::QcnSw(fabricflow_agent::policy::Variant::Combined),
            p_minimal_percent: 50.0,
            byte_counter,
            ..SimConfig::default()
        };
        for counter in [ByteCounter::MinimalBucket, ByteCounter::Port] {
            let mut sim = Sim::new(cfg(counter)).unwrap();
            let fabric = sim.config().topology.build().unwrap();
            let far = fabric.hosts().iter().position(|h| h.location.group == 1);
            let dst = sim.host_mac[far.unwrap()];
            let m = sim.cores[0].minimal_port_towards(dst).unwrap();
            let (mut minimal, mut marked) = (0, 0);
            for _ in 0..400 {
                let (chosen, min_bucket) = sim.draw(0, dst);
                minimal += usize::from(chosen == Some(m));
                marked += usize::from(min_bucket);
                assert!(!min_bucket || chosen == Some(m));
            }
            assert!(
                (100..300).contains(&minimal),
                "{minimal} of 400 minimal at P = 50"
            );
            let expect = if counter == ByteCounter::MinimalBucket {
                minimal
            } else {
                0
            };
            assert_eq!(marked, expect, "{counter:?}");
        }
    }

    /// XmitWait counted directly from the state each cycle — after the cycle's events, before
    /// its switches act: link free, a packet queued, no credit for any queued head (a host:
    /// link free, a packet queued, no credit in its switch's host buffer) — equals the engine's
    /// counters, and FITF read from the sampled counters per interval equals the direct stall
    /// cycles of that interval over its length.
    #[test]
    fn fitf_from_the_counters_equals_stall_cycles_counted_directly() {
        let interval = 250u64;
        for (topology, traffic) in [
            (TopologySpec::Dragonfly { p: 2, a: 4, h: 2 }, "adv+1"),
            (TopologySpec::FatTree { k: 4, n: 2, w: 0 }, "hotspot"),
        ] {
            let cfg = SimConfig {
                topology,
                traffic: traffic.parse().unwrap(),
                load: 0.6,
                port_stats_interval: Some(interval),
                ..SimConfig::default()
            };
            let mut sim = Sim::new(cfg).unwrap();
            let ngp = sim.gp_sw.len();
            let nh = sim.hosts();
            let (nv, len) = (sim.nv, sim.len);
            let mut direct = vec![0u64; ngp];
            let mut direct_host = vec![0u64; nh];
            let mut per_interval = Vec::new();
            let mut last = sim.port_counters();
            let mut last_direct: Vec<u64> = vec![0; ngp + nh];
            for _ in 0..8 {
                for _ in 0..interval {
                    sim.step_events();
                    let now = sim.now;
                    for (g, stalls) in direct.iter_mut().enumerate() {
                        if sim.gp_host[g] != NONE || sim.link_busy[g] > now {
                            continue;
                        }
                        let heads: Vec<(usize, u32)> = (0..nv)
                            .filter_map(|v| {
                                let id = *sim.out_q[g * nv + v].front()?;
                                Some((v, u32::from(sim.pkts[id as usize].len)))
                            })
                            .collect();
                        if !heads.is_empty()
                            && heads.iter().all(|&(v, l)| sim.credits[g * nv + v] < l)
                        {
                            *stalls += 1;
                        }
                    }
                    for (h, stalls) in direct_host.iter_mut().enumerate() {
                        let nl = sim.lanes;
                        let blocked = (h * nl..(h + 1) * nl)
                            .any(|i| !sim.host_q[i].is_empty() && sim.host_credit[i] < len);
                        if sim.host_busy[h] <= now && blocked {
                            *stalls += 1;
                        }
                    }
                    sim.step_switches();
                }
                let now = sim.port_counters();
                let d: Vec<u64> = direct.iter().chain(&direct_host).copied().collect();
                per_interval.push((last, now.clone(), last_direct, d.clone()));
                last = now;
                last_direct = d;
            }
            let mut stalled = 0;
            for (before, after, d0, d1) in &per_interval {
                assert_eq!(before.len(), ngp + nh);
                for (i, (b, a)) in before.iter().zip(after).enumerate() {
                    // Row order: ports in order, a host port's rx right after its tx.
                    let key = match a.direction {
                        Direction::Tx => sim.gp_of(a.switch, a.port) as usize,
                        Direction::Rx => {
                            ngp + sim.gp_host[sim.gp_of(a.switch, a.port) as usize] as usize
                        }
                    };
                    let fitf = (a.xmit_wait_cycles - b.xmit_wait_cycles) as f64 / interval as f64;
                    let expected = (d1[key] - d0[key]) as f64 / interval as f64;
                    assert_eq!(fitf, expected, "row {i}: {a:?}");
                    // Data counts a packet when it starts: at most one packet over the link rate.
                    let data = a.xmit_data_phits - b.xmit_data_phits;
                    assert!(data < interval + u64::from(len), "{a:?}");
                    if fitf > 0.0 {
                        stalled += 1;
                    }
                }
            }
            // The loads stall some ports, so the comparison is not all zeros.
            assert!(stalled > 10, "{traffic}: only {stalled} stalled intervals");
        }
    }

    /// Without `port_stats_interval` nothing is allocated or counted.
    #[test]
    fn port_counters_are_off_by_default() {
        let cfg = SimConfig {
            topology: TopologySpec::Dragonfly { p: 2, a: 2, h: 1 },
            load: 0.9,
            ..SimConfig::default()
        };
        let mut sim = Sim::new(cfg).unwrap();
        sim.run(500);
        assert!(sim.port_counters().is_empty());
        assert!(sim.xmit_wait.is_empty() && sim.host_data.is_empty());
    }

    /// The non-minimal draw is uniform over the other global ports. Drawing "the first candidate
    /// after a random start" gave the port after the excluded one double weight (1/2, 1/4, 1/4
    /// with h = 4), which overloaded one port of the switch owning the congested link and made
    /// source processing look useless (sim/RESULTS.md §f).
    #[test]
    fn non_minimal_global_port_is_drawn_uniformly() {
        let cfg = SimConfig {
            topology: TopologySpec::Dragonfly { p: 1, a: 2, h: 4 },
            ..SimConfig::default()
        };
        let mut sim = Sim::new(cfg).unwrap();
        let globals = sim.sw_globals[0].clone();
        assert_eq!(globals.len(), 4);
        for &not in &globals {
            let mut counts = [0u32; 4];
            let n = 30_000;
            for _ in 0..n {
                let gp = sim.random_other_global(0, not, false);
                let k = globals.iter().position(|&g| g == gp).unwrap();
                counts[k] += 1;
            }
            for (k, &c) in counts.iter().enumerate() {
                if globals[k] == not {
                    assert_eq!(c, 0, "the excluded port is never drawn");
                } else {
                    let share = f64::from(c) / f64::from(n);
                    assert!(
                        (share - 1.0 / 3.0).abs() < 0.02,
                        "share {share} for port {k}: {counts:?}"
                    );
                }
            }
        }
    }

    /// Every switch's core holds its switch's decision points as the agent would learn them from
    /// the controller's plan — with candidates, so feedback comparison against candidates works
    /// in the simulator as on a switch — and a CNM moves the installed weights the simulated
    /// SELECT group draws from.
    #[test]
    fn switch_cores_learn_the_controllers_plan_and_their_writes_steer_the_draw() {
        let cfg = SimConfig {
            topology: TopologySpec::Dragonfly { p: 2, a: 4, h: 2 },
            routing: Routing::QcnSw(fabricflow_agent::policy::Variant::Base),
            ..SimConfig::default()
        };
        let mut sim = Sim::new(cfg).unwrap();
        let fabric = sim.config().topology.build().unwrap();
        for (s, sw) in fabric.switches().iter().enumerate() {
            let core = sim.core(s).unwrap();
            let plan = core.plan().unwrap();
            // Dragonfly(2,4,2): 9 groups, one decision point per minimal port towards the 8
            // others: the switch's 2 global ports and its 3 local ports.
            assert_eq!(plan.groups.len(), 5, "switch {}", sw.name);
            let fabric_ports: BTreeSet<u32> = sw.fabric_ports().map(|p| p.no).collect();
            assert_eq!(plan.fabric_ports, fabric_ports);
            for g in plan.groups.values() {
                assert!(
                    !core.policy().candidates(g.dp.minimal_port).is_empty(),
                    "switch {} port {} has candidates",
                    sw.name,
                    g.dp.minimal_port
                );
            }
        }
        // Switch 0 of group 0, towards a host of group 1 (minimal: its global port 7).
        let first_of_group_1 = fabric.hosts().iter().position(|h| h.location.group == 1);
        let dst = sim.host_mac[first_of_group_1.unwrap()];
        let core = &mut sim.cores[0];
        let m = core.minimal_port_towards(dst).unwrap();
        assert!((0..=255).all(|slot| core.select(dst, slot) == Some(m)));
        core.on_cnm(m, dst, 63, 1_000);
        let diverted = (0..=255u8)
            .filter(|&slot| core.select(dst, slot) != Some(m))
            .count();
        // P = 100 · (1 − 63/128) ≈ 50.8 %: 129 of 255 quanta stay minimal, 126 are diverted.
        assert_eq!(diverted, 126);
    }

    /// The cores start from the P the controller's plan installs (`p_minimal_percent`), as the
    /// agent continues from the weights it finds; a P outside [0, 100] is refused.
    #[test]
    fn the_cores_start_from_the_plans_p() {
        let cfg = |p| SimConfig {
            topology: TopologySpec::Dragonfly { p: 2, a: 4, h: 2 },
            routing: Routing::QcnSw(fabricflow_agent::policy::Variant::Combined),
            p_minimal_percent: p,
            ..SimConfig::default()
        };
        let sim = Sim::new(cfg(50.0)).unwrap();
        let fabric = sim.config().topology.build().unwrap();
        let far = fabric.hosts().iter().position(|h| h.location.group == 1);
        let dst = sim.host_mac[far.unwrap()];
        let core = &sim.cores[0];
        let m = core.minimal_port_towards(dst).unwrap();
        let minimal = (0..=255u8)
            .filter(|&slot| core.select(dst, slot) == Some(m))
            .count();
        // Half of the 255 quanta, rounded, plus the padding slot (minimal).
        assert!((127..=129).contains(&minimal), "{minimal} slots minimal");
        assert!(matches!(Sim::new(cfg(150.0)), Err(SpecError::Invalid(_))));
    }
}
