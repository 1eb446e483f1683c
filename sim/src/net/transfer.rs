//! Fixed-size transfers: a communication phase of flows, each a fixed number of packets, all
//! starting at cycle 0, each on its own path (pinned by the controller's flow-aware routing, or
//! set up by its first packet, the seed's reactive form), optionally paced at a rate (SAA at
//! injection). The run ends when the last packet of the phase is delivered: the phase's total
//! completion time.
//!
//! Pacing: packet j of a flow with rate r (a fraction of the line rate) is released into its
//! host's queue at cycle ⌊j · len / r⌋; without a rate every packet is released at cycle 0 and
//! the host's link serves its flows round robin, packet by packet.
//!
//! Reactive set-up ([`TransferPaths::Reactive`]): when a flow's first packet leaves its host,
//! the path is chosen by [`TreeRouter::greedy`] against the flows set up and not yet finished
//! (every switch on the path picks the output with the fewest flows); the flow's counts are
//! released when its last packet is delivered. The choice is made at once for the whole path
//! (the switches' counts do not change while a head crosses the fabric in this model).

use fabricflow_controller::flowroute::{Path, TreeRouter};
use fabricflow_controller::topology::{Fabric, HostId};

use super::{Ev, Sim, NONE, WHEEL};
use crate::config::{SimConfig, SpecError};

/// How the transfers find their paths.
#[derive(Debug, Clone)]
pub enum TransferPaths {
    /// One path per flow, set up before the phase (the controller's flow-set API).
    Pinned(Vec<Path>),
    /// Set up by each flow's first packet, least-loaded ([`TreeRouter::greedy`]).
    Reactive(TreeRouter),
}

/// A phase of fixed-size transfers.
#[derive(Debug, Clone)]
pub struct TransferSpec {
    /// (source, destination) hosts.
    pub flows: Vec<(HostId, HostId)>,
    /// Packets per flow.
    pub packets: u32,
    pub paths: TransferPaths,
    /// Rate of each flow as a fraction of the line rate (SAA); `None`: no rate control.
    pub rates: Option<Vec<f64>>,
}

#[derive(Debug)]
pub(super) struct Transfers {
    src: Vec<u32>,
    dst: Vec<u32>,
    packets: u32,
    injected: Vec<u32>,
    delivered: Vec<u32>,
    /// Per flow, (switch, output gp) of every hop.
    route: Vec<Vec<(u32, u32)>>,
    paths: Vec<Path>,
    /// Per host, (release cycle, flow), sorted; and the next one to release.
    release: Vec<Vec<(u64, u32)>>,
    cursor: Vec<usize>,
    open: usize,
    done_at: Option<u64>,
    reactive: Option<(TreeRouter, Vec<u32>)>,
}

impl Sim {
    /// An idle network on `fabric` that runs the phase `spec` (the offered load is ignored).
    pub fn with_transfers(
        cfg: SimConfig,
        fabric: &Fabric,
        spec: TransferSpec,
    ) -> Result<Sim, SpecError> {
        let cfg = SimConfig { load: 0.0, ..cfg };
        let mut sim = Sim::with_fabric(cfg, fabric)?;
        let n = spec.flows.len();
        let nh = fabric.hosts().len();
        let bad = |what: String| SpecError::Invalid(format!("transfers: {what}"));
        let id = |h: HostId| u32::try_from(h).ok().filter(|&x| (x as usize) < nh);
        let mut src = Vec::with_capacity(n);
        let mut dst = Vec::with_capacity(n);
        for &(s, d) in &spec.flows {
            let (Some(s), Some(d)) = (id(s), id(d)) else {
                return Err(bad(format!("unknown host in flow {s} -> {d}")));
            };
            src.push(s);
            dst.push(d);
        }
        let (paths, reactive) = match spec.paths {
            TransferPaths::Pinned(p) if p.len() == n => (p, None),
            TransferPaths::Pinned(p) => {
                return Err(bad(format!("{} paths for {n} flows", p.len())));
            }
            TransferPaths::Reactive(r) => {
                let load = vec![0u32; r.channels()];
                (vec![Vec::new(); n], Some((r, load)))
            }
        };
        let mut route = Vec::with_capacity(n);
        for p in &paths {
            route.push(
                sim.hops_to_gps(p)
                    .ok_or_else(|| bad(format!("bad path {p:?}")))?,
            );
        }
        let len = f64::from(sim.len);
        let mut per_host: Vec<Vec<(u64, u32, u32)>> = vec![Vec::new(); nh];
        for (f, &s) in src.iter().enumerate() {
            let rate = match &spec.rates {
                Some(r) => r.get(f).copied().unwrap_or(1.0),
                None => f64::INFINITY,
            };
            let fid = u32::try_from(f).unwrap_or(NONE);
            if let Some(v) = per_host.get_mut(s as usize) {
                for j in 0..spec.packets {
                    let at = if rate.is_finite() && rate > 0.0 {
                        (f64::from(j) * len / rate.min(1.0)).floor() as u64
                    } else {
                        0
                    };
                    v.push((at, j, fid));
                }
            }
        }
        let release: Vec<Vec<(u64, u32)>> = per_host
            .into_iter()
            .map(|mut v| {
                v.sort_unstable();
                v.into_iter().map(|(at, _, f)| (at, f)).collect()
            })
            .collect();
        for (h, r) in release.iter().enumerate() {
            if let Some(&(at, _)) = r.first() {
                let hid = u32::try_from(h).unwrap_or(NONE);
                sim.schedule(at.min(WHEEL as u64 - 1), Ev::Gen { host: hid });
            }
        }
        sim.xfers = Some(Transfers {
            src,
            dst,
            packets: spec.packets,
            injected: vec![0; n],
            delivered: vec![0; n],
            route,
            paths,
            cursor: vec![0; nh],
            release,
            open: if spec.packets == 0 { 0 } else { n },
            done_at: (spec.packets == 0 || n == 0).then_some(0),
            reactive,
        });
        Ok(sim)
    }

    /// Runs until the phase is complete or `max_cycles` have passed: the cycle the last packet
    /// was delivered, or `None` if the phase did not finish (or this is no transfer run).
    pub fn run_transfers(&mut self, max_cycles: u64) -> Option<u64> {
        while self.now < max_cycles {
            if let Some(t) = self.xfers.as_ref().and_then(|x| x.done_at) {
                return Some(t);
            }
            self.step();
        }
        self.xfers.as_ref().and_then(|x| x.done_at)
    }

    /// The path each flow took (reactive flows: the one set up; empty if never started).
    pub fn transfer_paths(&self) -> Vec<Path> {
        self.xfers
            .as_ref()
            .map(|x| x.paths.clone())
            .unwrap_or_default()
    }

    fn hops_to_gps(&self, p: &Path) -> Option<Vec<(u32, u32)>> {
        p.iter()
            .map(|h| {
                let s = u32::try_from(h.switch).ok()?;
                let gp = self.gp_of(s, h.port);
                (gp != NONE).then_some((s, gp))
            })
            .collect()
    }

    /// Releases the host's packets due by now into its queue; schedules the next release.
    pub(super) fn transfer_release(&mut self, host: u32) {
        let now = self.now;
        let Some(x) = self.xfers.as_mut() else {
            return;
        };
        let h = host as usize;
        let (Some(list), Some(cur)) = (x.release.get(h), x.cursor.get_mut(h)) else {
            return;
        };
        let mut released = 0u32;
        // Transfers use the fast lane (lane 0).
        let q = self.host_q.get_mut(h * self.lanes);
        let mut q = q;
        while let Some(&(at, f)) = list.get(*cur) {
            if at > now {
                break;
            }
            let d = x.dst.get(f as usize).copied().unwrap_or(NONE);
            if let Some(q) = q.as_mut() {
                q.push_back((now, d, f));
            }
            released += 1;
            *cur += 1;
        }
        let next = list.get(*cur).map(|&(at, _)| at);
        if let Some(sw) = self.host_sw.get(h).copied() {
            if let Some(p) = self.sw_pending.get_mut(sw as usize) {
                *p += released;
            }
        }
        if let Some(at) = next {
            self.schedule((at - now).clamp(1, WHEEL as u64 - 1), Ev::Gen { host });
        }
    }

    /// A packet of `flow` leaves its host: the first one sets up a reactive path.
    pub(super) fn transfer_injected(&mut self, flow: u32) {
        let f = flow as usize;
        let Some(x) = self.xfers.as_mut() else {
            return;
        };
        let first = x.injected.get(f) == Some(&0);
        if let Some(c) = x.injected.get_mut(f) {
            *c += 1;
        }
        if !first {
            return;
        }
        let (Some(&s), Some(&d)) = (x.src.get(f), x.dst.get(f)) else {
            return;
        };
        let Some((router, load)) = x.reactive.as_mut() else {
            return;
        };
        let Some(path) = router.greedy(s as usize, d as usize, load) else {
            return;
        };
        router.add_load(load, s as usize, &path, 1);
        if let Some(slot) = x.paths.get_mut(f) {
            slot.clone_from(&path);
        }
        let gps = self.hops_to_gps(&path).unwrap_or_default();
        if let Some(slot) = self.xfers.as_mut().and_then(|x| x.route.get_mut(f)) {
            *slot = gps;
        }
    }

    /// The output of `flow`'s packet at switch `s` (None: off its path).
    pub(super) fn transfer_route(&self, s: u32, flow: u32) -> Option<u32> {
        self.xfers
            .as_ref()?
            .route
            .get(flow as usize)?
            .iter()
            .find(|&&(sw, _)| sw == s)
            .map(|&(_, gp)| gp)
    }

    /// A packet of `flow` reached its host.
    pub(super) fn transfer_delivered(&mut self, flow: u32) {
        let now = self.now;
        let f = flow as usize;
        let Some(x) = self.xfers.as_mut() else {
            return;
        };
        let Some(c) = x.delivered.get_mut(f) else {
            return;
        };
        *c += 1;
        if *c != x.packets {
            return;
        }
        x.open = x.open.saturating_sub(1);
        if x.open == 0 {
            x.done_at = Some(now);
        }
        if let (Some((router, load)), Some(path), Some(&s)) =
            (x.reactive.as_mut(), x.paths.get(f), x.src.get(f))
        {
            router.add_load(load, s as usize, path, -1);
        }
    }
}
