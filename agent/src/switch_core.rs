//! The switch core: everything the agent decides for one switch between a congestion signal and
//! a weight write, with no I/O. The agent's OpenFlow session ([`crate::session`]), its emulated
//! congestion point (through the session) and the fabric simulator all drive this one type; they
//! only move bytes and time (STYLE "quinn").
//!
//! It holds
//! - the learned decision points ([`LearnedPlan`]): which SELECT group serves which minimal port,
//!   its buckets, the fabric ports, the switch's own hosts;
//! - the QCN-SW [`Policy`] (P per fabric port);
//! - the [`WeightPlanner`], the one record of the weights the switch holds, whose writes leave
//!   through [`SwitchCore::poll_write`];
//! - the glue from a congestion sample of the switch's own congestion point to policy events:
//!   the congested port's own feedback, own-host suppression, source charging;
//! - with `policy.kind = "drb"`, the [`Drb`] state of the switch's multipath groups: CNMs and
//!   own congestion samples charge the culprit's exact path, the tick runs the quiet timers,
//!   and a pair's changed weights are written to every group of the pair (at most once per the
//!   weight planner's minimum update interval per pair; the last change is written when the
//!   interval has passed);
//! - whether the operator froze the switch ([`SwitchCore::is_frozen`]): the controller's freeze
//!   marker in the learned plan stops every weight change until it is gone.

use std::collections::{BTreeSet, VecDeque};

use fabricflow_proto::ethernet::{ethertype, EthernetView};
use fabricflow_proto::openflow::group::Bucket;
use fabricflow_proto::select_slots::SlotError;
use fabricflow_proto::MacAddr;

use crate::drb::{Drb, DstSwitch};
use crate::error::ConfigError;
use crate::link::PortLinks;
use crate::plan::{host_group, LearnedPlan};
use crate::policy::{Effects, Event, Policy, PolicyConfig, PolicyKind};
use crate::weights::{GroupWrite, WeightPlanner, WeightsConfig};
use crate::PortNo;

/// The frame a congestion point sampled, as far as the reaction needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Culprit {
    /// The host that sent it (the CNM goes back to it).
    pub src: MacAddr,
    /// Where it was going (source processing charges the port towards it).
    pub dst: MacAddr,
}

impl Culprit {
    /// The culprit of a sampled frame: a data frame a host sent (source MAC in the
    /// `02:00:GG:GG:SS:HH` plan). CNMs and frames of anything but a host are never culprits.
    pub fn of_frame(frame: &[u8]) -> Option<Culprit> {
        let v = EthernetView::new_checked(frame).ok()?;
        if v.ethertype() == ethertype::CNM || host_group(v.src()).is_none() {
            return None;
        }
        Some(Culprit {
            src: v.src(),
            dst: v.dst(),
        })
    }
}

/// This switch's congestion point found fabric port `port` congested while sampling a frame of
/// `culprit`, with quantised |Fb| `qntz_fb`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CongestionSample {
    /// The congested port's *outgoing* direction: the fabric port the sampled frame leaves by,
    /// whose feedback comparison reads as that port's congestion. An output-queue CP (the
    /// emulated one) knows it; an input-queue CP (the simulator's seed model) knows only where
    /// the frame goes next, and `None` when it leaves the fabric here (delivered to a host).
    pub port: Option<PortNo>,
    /// Quantised |Fb| the CNM carries, 0..=63.
    pub qntz_fb: u8,
    /// The sampled frame.
    pub culprit: Culprit,
}

/// What becomes of the CNM a [`CongestionSample`] calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CnmRoute {
    /// Into the fabric, back to the culprit's switch.
    Fabric,
    /// Nowhere: the culprit is a host of this very switch, which is its reaction point (the host
    /// would only drop the frame); source processing has charged it here. Never with
    /// `policy.kind = "static"`, whose reaction points are the hosts.
    OwnHost,
}

/// A CNM that reached this switch's agent over a fabric port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceivedCnm {
    /// The fabric port it arrived on.
    pub port: PortNo,
    /// The frame it is about: `src` is the CNM's destination (the host that sent the sampled
    /// frame), `dst` its encapsulated DA.
    pub culprit: Culprit,
    /// Quantised |Fb|, 0..=63.
    pub qntz_fb: u8,
    /// How many agents relayed it before this one (the CNM's ReservedV bits, which the CPs that
    /// generate CNMs transmit as 0).
    pub relays: u8,
}

/// Most relays a CNM may take. A relayed CNM follows the minimal route towards the culprit's
/// source, whose switch charges it and never relays, so a consistent plan needs at most one
/// relay per switch on that route (a k-ary n-tree: 2n − 4); the budget bounds what a transient
/// inconsistency between switches' plans could otherwise make a loop. It fits the 6 ReservedV
/// bits that carry the count.
pub const MAX_CNM_RELAYS: u8 = 16;
const _: () = assert!(MAX_CNM_RELAYS <= 63, "the count fits the 6 ReservedV bits");

/// What becomes of a [`ReceivedCnm`] ([`SwitchCore::on_received_cnm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CnmFate {
    /// Charged here ([`SwitchCore::on_cnm`]).
    Charged,
    /// Not this switch's to charge: send it on towards the culprit's source with its relay
    /// count set to `relays` (into the pipeline, like a CNM of the switch's own CP).
    Relay {
        /// The CNM's relay count after this relay.
        relays: u8,
    },
    /// Not chargeable here and already relayed [`MAX_CNM_RELAYS`] times: dropped.
    RelayBudgetSpent,
}

/// Counters of the core (monotonic).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreCounters {
    /// CNMs charged to a fabric port.
    pub cnm_received: u64,
    /// CNMs received that this switch could not charge, relayed towards the culprit's source.
    pub cnm_relayed: u64,
    /// CNMs received that this switch could not charge and had spent their relay budget.
    pub cnm_relay_budget_spent: u64,
    /// CNMs received here about a culprit this switch sent on a detour, kept as the detour's
    /// congestion and not charged (`policy.charge_detour_cnms = false`; counted in
    /// `cnm_received` too).
    pub cnm_detour_uncharged: u64,
    /// Congestion samples turned into CNMs.
    pub cnm_generated: u64,
    /// Of those, charged locally too (source processing on, culprit bound for another group).
    pub cnm_generated_charged: u64,
    /// Of those, not charged: sampled off the culprit's minimal port (`policy.source_on_route`).
    pub cnm_generated_off_route: u64,
    /// Of those, for a host of this switch (not injected).
    pub cnm_to_own_host: u64,
    /// Weight writes produced.
    pub writes: u64,
    /// Learned plans whose structure differed from the previous one.
    pub plan_changes: u64,
    /// Policy events (CNMs, byte counts, ticks, own congestion) ignored while frozen.
    pub frozen_events_ignored: u64,
}

/// A weight write, and when the earliest received CNM whose reaction it is the first write to
/// carry arrived (the `now_ns` given to [`SwitchCore::on_cnm`]): the start of that CNM's
/// CNM → GROUP_MOD latency. `None` when no received CNM is in it (an increase on sent octets or
/// the idle timer, a relearned plan, the emulated CP's own samples). A CNM whose change is
/// deferred by the minimum update interval is carried by the write that the interval releases,
/// so the deferral counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedWrite {
    /// The write.
    pub write: GroupWrite,
    /// Arrival of the earliest CNM it answers, ns.
    pub cnm_ns: Option<u64>,
}

/// What [`SwitchCore::learn`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learned {
    /// Same structure as before (weights may have been reconciled).
    Unchanged,
    /// New or changed structure (possibly without a decision point: an installed plan that
    /// leaves this switch nothing to adapt).
    Changed,
    /// The controller's plan is not on the switch yet: no controller flow, no decision point.
    NotInstalled,
}

/// When a switch core needs its tick ([`SwitchCore::next_tick`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickDue {
    /// Every tick period of the shell.
    Periodic,
    /// At this instant (`None`: no tick is needed).
    At(Option<u64>),
}

/// DRB's state in the core: the policy, the pairs' groups, the write limit.
#[derive(Debug)]
struct DrbSteer {
    drb: Drb,
    weights_cfg: WeightsConfig,
    links: PortLinks,
    quiet_line_bytes: u64,
    /// Destination switch → (multipath group ids, last write, a change not yet written,
    /// arrival of the earliest CNM that change answers).
    pairs: std::collections::BTreeMap<DstSwitch, PairWrites>,
}

#[derive(Debug, Default)]
struct PairWrites {
    groups: Vec<u32>,
    written_ns: Option<u64>,
    dirty: bool,
    cnm_ns: Option<u64>,
}

impl DrbSteer {
    /// The pair's minimum write interval: the weight planner's for a pair's group, on the link
    /// of the pair's first group.
    fn interval_ns(&self, groups: &[u32], first_port: Option<PortNo>) -> u64 {
        let id = groups.first().copied().unwrap_or(0);
        let link = self.links.get(first_port.unwrap_or(0));
        self.weights_cfg.pair_update_interval_ns(id, link)
    }
}

/// One switch's decision points, policy and installed weights.
#[derive(Debug)]
pub struct SwitchCore {
    /// DRB instead of QCN-SW (`policy.kind = "drb"`).
    drb: Option<DrbSteer>,
    policy: Policy,
    weights: WeightPlanner,
    plan: Option<LearnedPlan>,
    /// Groups whose installed split has set P once in this process.
    seeded: BTreeSet<u32>,
    effects: Effects,
    scratch: Vec<GroupWrite>,
    writes: VecDeque<TimedWrite>,
    /// While [`on_cnm`](Self::on_cnm) feeds the policy: the CNM's arrival.
    feeding_cnm: Option<u64>,
    /// Groups with a CNM's change not yet written: (group id, earliest such CNM's arrival).
    cnm_unwritten: Vec<(u32, u64)>,
    counters: CoreCounters,
    /// Frozen by the operator: P stands still and no weight is written.
    frozen: bool,
}

impl SwitchCore {
    /// A core with no decision point yet.
    pub fn new(policy: PolicyConfig, weights: WeightsConfig) -> Result<Self, ConfigError> {
        let drb = if policy.kind == PolicyKind::Drb {
            let links = PortLinks::default();
            let quiet = links.get(0).line_time_ns(policy.drb.quiet_line_bytes);
            Some(DrbSteer {
                drb: Drb::new(policy.drb.clone(), quiet)?,
                weights_cfg: weights.clone(),
                links,
                quiet_line_bytes: policy.drb.quiet_line_bytes,
                pairs: std::collections::BTreeMap::new(),
            })
        } else {
            None
        };
        Ok(SwitchCore {
            drb,
            policy: Policy::new(policy, [])?,
            weights: WeightPlanner::new(weights)?,
            plan: None,
            seeded: BTreeSet::new(),
            effects: Effects::new(),
            scratch: Vec::new(),
            writes: VecDeque::new(),
            feeding_cnm: None,
            cnm_unwritten: Vec::new(),
            counters: CoreCounters::default(),
            frozen: false,
        })
    }

    /// Sets every port's link (line rate, buffer), which scales the policy's and the weight
    /// planner's rate-relative constants; `bytes_every_ns` is how often sent octets reach
    /// [`on_bytes`](Self::on_bytes) (the port-statistics period; 0 when every octet is reported
    /// as it leaves, as in the simulator).
    pub fn set_links(&mut self, links: PortLinks, bytes_every_ns: u64) {
        if let Some(d) = &mut self.drb {
            d.links = links.clone();
            let first = self
                .plan
                .as_ref()
                .and_then(|p| p.fabric_ports.first().copied());
            d.drb.set_quiet_ns(
                links
                    .get(first.unwrap_or(0))
                    .line_time_ns(d.quiet_line_bytes),
            );
        }
        self.weights.set_links(links.clone());
        self.policy.set_links(links, bytes_every_ns);
    }

    /// The number of the latest weight write: note it when requesting the switch's groups and
    /// pass it to [`learn`](Self::learn) with the reply.
    pub fn write_seq(&self) -> u64 {
        self.weights.write_seq()
    }

    /// Takes in the switch's decision points as read when the write sequence stood at
    /// `read_seq`. A changed structure resets the policy's fabric ports and candidates and
    /// forgets vanished groups; every group's installed weights are adopted unless it was
    /// written after the read (then the core's record is newer). A group seen for the first
    /// time in this process sets its port's P from the installed split, so a restarted agent
    /// continues where it was. P and the write history survive everything.
    ///
    /// A plan with no decision point is learned like any other when it is installed (its fabric
    /// ports still feed the congestion point and the policy); only a switch without the plan
    /// ([`LearnedPlan::is_installed`]) leaves the policy and the planner as they were, and the
    /// freeze too (a wiped switch says nothing about the operator's wish).
    ///
    /// An installed plan carries the freeze: with the marker the core is frozen from this read
    /// on (installed weights are adopted, none is written), without it the core thaws.
    pub fn learn(&mut self, plan: LearnedPlan, read_seq: u64, now_ns: u64) -> Learned {
        let changed = self
            .plan
            .as_ref()
            .is_none_or(|old| !old.same_structure(&plan));
        if !plan.is_installed() {
            if changed {
                self.counters.plan_changes += 1;
            }
            // Keep P and the planner: the switch may have been wiped and the controller be
            // about to restore it.
            self.plan = Some(plan);
            return Learned::NotInstalled;
        }
        let thaw = self.frozen && !plan.frozen;
        self.frozen = plan.frozen;
        if changed {
            self.counters.plan_changes += 1;
            self.policy
                .set_fabric_ports(plan.fabric_ports.iter().copied());
            // At an equal-cost decision point every bucket is minimal and weighed by its own
            // port's P, so each of its ports is compared with the others, not only bucket 0's.
            let mut candidates: Vec<(PortNo, Vec<PortNo>)> = Vec::new();
            let mut equal_cost: Vec<PortNo> = Vec::new();
            for g in plan.groups.values() {
                let mut others = g.candidate_ports();
                if g.dp.equal_cost {
                    others.push(g.dp.minimal_port);
                    let all = others;
                    for &p in &all {
                        candidates.push((p, all.iter().copied().filter(|&c| c != p).collect()));
                    }
                    equal_cost.extend(all);
                } else {
                    candidates.push((g.dp.minimal_port, others));
                }
            }
            self.policy
                .set_candidates(candidates.iter().map(|(p, c)| (*p, c.as_slice())));
            self.policy.mark_equal_cost(equal_cost);
            let gone: Vec<u32> = self
                .weights
                .groups()
                .map(|dp| dp.group_id)
                .filter(|id| !plan.groups.contains_key(id))
                .collect();
            for id in gone {
                let _ = self.weights.remove_group(id);
            }
        }
        for (id, g) in &plan.groups {
            if self.weights.written_after(*id, read_seq) {
                // The read predates our last write: our record is newer.
                continue;
            }
            let found = g.weights();
            let known = self.weights.groups().find(|dp| dp.group_id == *id).copied();
            let same = known == Some(g.dp)
                && self
                    .weights
                    .installed(*id)
                    .is_some_and(|w| w == found.as_slice());
            if same || self.weights.add_group(g.dp, Some(found.clone())).is_err() {
                continue;
            }
            let port = g.dp.minimal_port;
            if self.seeded.insert(*id) {
                if let Some(p) = g.dp.p_from_weights(&found) {
                    self.policy.set_p_percent(port, p);
                }
            }
            let mut steering = vec![port];
            if g.dp.equal_cost {
                let cands = g.candidate_ports();
                if self.weights.set_equal_cost_ports(*id, &cands).is_ok() {
                    steering.extend(cands);
                }
            }
            if self.frozen {
                continue;
            }
            for port in steering {
                if let Some(p) = self.policy.p_percent(port) {
                    self.weights
                        .on_probability(port, p, now_ns, &mut self.scratch);
                }
            }
        }
        if thaw {
            // Resume from the policy's P: groups the controller rebuilt meanwhile get it now.
            let ports: Vec<PortNo> = plan.groups.values().map(|g| g.dp.minimal_port).collect();
            for port in ports {
                if let Some(p) = self.policy.p_percent(port) {
                    self.weights
                        .on_probability(port, p, now_ns, &mut self.scratch);
                }
            }
        }
        let mut plan = plan;
        if let Some(old) = &self.plan {
            // A read older than a write shows the slots before it: keep the ones written. A
            // read showing the slots as recorded keeps the record too: it knows which slots
            // moved when (`SlotGroup::set_weights` rotates the detoured ones by it).
            for (id, g) in &mut plan.groups {
                let stale = self.weights.written_after(*id, read_seq);
                let keep = old.groups.get(id).filter(|o| {
                    o.same_structure(g)
                        && (stale
                            || matches!((&o.slots, &g.slots),
                                (Some(a), Some(b)) if a.slot_choices() == b.slot_choices()))
                });
                if let Some(o) = keep {
                    *g = o.clone();
                }
            }
        }
        self.plan = Some(plan);
        self.queue_writes();
        if changed {
            self.drb_learn(now_ns);
        }
        if changed {
            Learned::Changed
        } else {
            Learned::Unchanged
        }
    }

    /// A CNM arrived over a fabric port (the caller checked that): charge it here, or relay it
    /// towards the culprit's source, whose switch chose the culprit's route.
    ///
    /// - The culprit's own switch charges it ([`on_cnm`](Self::on_cnm): to the decision point
    ///   for the culprit's destination, else to the arrival port).
    /// - Every other switch relays it, its count one higher, unless it has been relayed
    ///   [`MAX_CNM_RELAYS`] times already (dropped). Minimal routing towards the culprit's
    ///   source takes it to the next switch's agent and, at the latest, to the source's switch.
    ///   On a Dragonfly that brings the CNM of a detour's second global link, which first
    ///   lands in the intermediate group, back to the source that diverted.
    /// - With `policy.cnm_at_culprit_switch = false` (the published rule) a switch with
    ///   decision points charges every CNM it receives, and only switches without them (a
    ///   fat-tree's middle and top levels, a file fabric's transit switches) relay.
    ///
    /// DRB charges every CNM where it arrives (its pairs are the source switch's).
    pub fn on_received_cnm(&mut self, cnm: &ReceivedCnm, now_ns: u64) -> CnmFate {
        if self.drb.is_none() && !self.charges_here(&cnm.culprit) {
            if cnm.relays >= MAX_CNM_RELAYS {
                self.counters.cnm_relay_budget_spent += 1;
                return CnmFate::RelayBudgetSpent;
            }
            self.counters.cnm_relayed += 1;
            return CnmFate::Relay {
                relays: cnm.relays + 1,
            };
        }
        self.on_cnm(cnm.port, cnm.culprit.dst, cnm.qntz_fb, now_ns);
        CnmFate::Charged
    }

    /// Whether a CNM about `culprit` is this switch's to charge: the culprit's source is one of
    /// its hosts, or (without `policy.cnm_at_culprit_switch`) the switch has decision points.
    fn charges_here(&self, culprit: &Culprit) -> bool {
        let anywhere_with_decisions = !self.policy.config().cnm_at_culprit_switch;
        self.plan.as_ref().is_some_and(|p| {
            p.local_hosts.contains(&culprit.src)
                || (anywhere_with_decisions && !p.groups.is_empty())
        })
    }

    /// A CNM arrived on fabric port `port` (the caller checked it came from a fabric port) about
    /// a frame sent to `culprit_dst` (the CNM's encapsulated DA). It is charged to the decision
    /// point that chose the culprit's route: the minimal port towards `culprit_dst`'s group. Only
    /// when there is none (a destination in this switch's own group, or outside the address
    /// plan) is it charged to the arrival port.
    ///
    /// The two differ for a culprit that was sent non-minimally: its CNM comes back through the
    /// candidate port it left by, whose P steers traffic *minimally* bound elsewhere, so charging
    /// the arrival port would cut the wrong decision. Simulator, Dragonfly(4,8,4) ADV+1 at 0.4:
    /// 0.403 phits/node/cycle charging the decision point, 0.380 charging the arrival port.
    /// With `policy.charge_detour_cnms = false` such a CNM is not charged at all (only kept as
    /// its candidate's congestion, with `policy.detour_cnm_feedback`).
    pub fn on_cnm(&mut self, port: PortNo, culprit_dst: MacAddr, qntz_fb: u8, now_ns: u64) {
        self.counters.cnm_received += 1;
        if self.is_static() {
            return;
        }
        if self.drb.is_some() {
            self.drb_notify(culprit_dst, now_ns, true);
            return;
        }
        let arrival = port;
        let port = self.charged_port(arrival, culprit_dst);
        if arrival != port {
            if self.policy.config().detour_cnm_feedback {
                self.feed(
                    Event::CongestionObserved {
                        port: arrival,
                        qntz_fb,
                    },
                    now_ns,
                );
            }
            if !self.policy.config().charge_detour_cnms {
                self.counters.cnm_detour_uncharged += 1;
                return;
            }
        }
        self.feeding_cnm = Some(now_ns);
        self.feed(Event::CnmReceived { port, qntz_fb }, now_ns);
        self.feeding_cnm = None;
    }

    /// `bytes` octets left fabric port `port` since the last report for it.
    pub fn on_bytes(&mut self, port: PortNo, bytes: u64, now_ns: u64) {
        self.feed(Event::BytesSent { port, bytes }, now_ns);
    }

    /// Decision point `group_id` sent `minimal_bytes` of `total_bytes` octets through its minimal
    /// choice since its previous report (its bucket counters), while `weights` (bucket order,
    /// padding last) were installed: the yield comparison's input
    /// ([`Event::DecisionBytes`]). Equal-cost groups and unknown groups are skipped.
    pub fn on_group_bytes(
        &mut self,
        group_id: u32,
        minimal_bytes: u64,
        total_bytes: u64,
        weights: &[u16],
        now_ns: u64,
    ) {
        let Some(dp) = self
            .weights
            .groups()
            .find(|d| d.group_id == group_id)
            .copied()
        else {
            return;
        };
        let sum: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let (Some(&w0), false, true) = (weights.first(), dp.equal_cost, sum > 0) else {
            return;
        };
        let expected = u128::from(total_bytes) * u128::from(w0) / u128::from(sum);
        self.feed(
            Event::DecisionBytes {
                port: dp.minimal_port,
                minimal_bytes,
                total_bytes,
                expected_minimal_bytes: u64::try_from(expected).unwrap_or(u64::MAX),
            },
            now_ns,
        );
    }

    /// When [`on_tick`](Self::on_tick) is next needed: `Periodic` under DRB (its pairs decay
    /// per quiet period from the latest tick), else the policy's idle timer (`None`: never).
    pub fn next_tick(&self) -> TickDue {
        if self.drb.is_some() {
            TickDue::Periodic
        } else {
            TickDue::At(self.policy.next_timer_ns())
        }
    }

    /// The policy's tick (idle-port increase timer) and due pending writes.
    pub fn on_tick(&mut self, now_ns: u64) {
        if !self.frozen {
            if let Some(d) = &mut self.drb {
                for dst in d.drb.tick(now_ns) {
                    if let Some(p) = d.pairs.get_mut(&dst) {
                        p.dirty = true;
                    }
                }
            }
        }
        self.drb_flush(now_ns);
        self.feed(Event::Tick, now_ns);
        self.on_timer(now_ns);
    }

    /// Pending writes whose minimum interval has passed (see
    /// [`next_deadline_ns`](Self::next_deadline_ns)); held while frozen.
    pub fn on_timer(&mut self, now_ns: u64) {
        if self.frozen {
            return;
        }
        self.weights.tick(now_ns, &mut self.scratch);
        self.queue_writes();
    }

    /// When [`on_timer`](Self::on_timer) has a write to release, if any is pending (none while
    /// frozen).
    pub fn next_deadline_ns(&self) -> Option<u64> {
        if self.frozen {
            return None;
        }
        self.weights.next_deadline_ns()
    }

    /// Whether the operator froze this switch's weights (the last installed plan read carried
    /// the controller's freeze marker).
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// This switch's congestion point calls for a CNM: the congested port keeps the feedback as
    /// its own (feedback comparison against candidates), source processing charges the minimal
    /// port towards the culprit's destination group (only other-group destinations have one:
    /// those are the ones a decision point serves), and the CNM is routed into the fabric unless
    /// the culprit is a host of this switch.
    pub fn on_congestion(&mut self, s: &CongestionSample, now_ns: u64) -> CnmRoute {
        if let Some(port) = s.port {
            self.feed(
                Event::CongestionObserved {
                    port,
                    qntz_fb: s.qntz_fb,
                },
                now_ns,
            );
        }
        self.counters.cnm_generated += 1;
        let own_host = self
            .plan
            .as_ref()
            .is_some_and(|p| p.local_hosts.contains(&s.culprit.src));
        if own_host {
            self.counters.cnm_to_own_host += 1;
        }
        if self.is_static() {
            // The host is the reaction point, its own switch's CNMs included.
            return CnmRoute::Fabric;
        }
        if self.drb.is_some() {
            // The source switch is DRB's reaction point: its own hosts' CNMs stop here.
            if own_host {
                self.drb_notify(s.culprit.dst, now_ns, false);
                return CnmRoute::OwnHost;
            }
            return CnmRoute::Fabric;
        }
        if let Some(m) = self.minimal_port_towards(s.culprit.dst) {
            let source_processing = self.policy.config().variant.source_processing();
            match self.source_charged_port(s, m) {
                Some(port) => {
                    if source_processing {
                        self.counters.cnm_generated_charged += 1;
                    }
                    self.feed(
                        Event::CnmGenerated {
                            minimal_port_towards_culprit: port,
                            qntz_fb: s.qntz_fb,
                        },
                        now_ns,
                    );
                }
                None if source_processing => self.counters.cnm_generated_off_route += 1,
                None => {}
            }
        }
        if own_host {
            CnmRoute::OwnHost
        } else {
            CnmRoute::Fabric
        }
    }

    /// The port a CNM that arrived on `arrival` about a frame to `culprit_dst` is charged to:
    /// the decision point's minimal port, but the arrival port itself when the decision point
    /// is equal-cost and the arrival port one of its buckets (its ports are all minimal, so the
    /// CNM came back along the port the culprit left by, and every group weighs that port by
    /// its P).
    fn charged_port(&self, arrival: PortNo, culprit_dst: MacAddr) -> PortNo {
        let Some(m) = self.minimal_port_towards(culprit_dst) else {
            return arrival;
        };
        if self.is_equal_cost_bucket(m, arrival) {
            arrival
        } else {
            m
        }
    }

    /// The port source processing charges for a sample of this switch's congestion point whose
    /// culprit's minimal port from here is `m`: `m`; with `policy.source_on_route`, only when the
    /// sample was taken on `m`, or at an equal-cost decision point on one of its buckets (then
    /// that bucket).
    fn source_charged_port(&self, s: &CongestionSample, m: PortNo) -> Option<PortNo> {
        if !self.policy.config().source_on_route {
            return Some(m);
        }
        let sampled = s.port?;
        (sampled == m || self.is_equal_cost_bucket(m, sampled)).then_some(sampled)
    }

    /// Whether `port` is a bucket of the equal-cost decision point whose minimal port is `m`.
    fn is_equal_cost_bucket(&self, m: PortNo, port: PortNo) -> bool {
        self.plan
            .as_ref()
            .and_then(|plan| plan.group_of_port(m))
            .is_some_and(|g| g.dp.equal_cost && (port == m || g.candidate_ports().contains(&port)))
    }

    /// The decision point's minimal port for traffic to `dst`, if a decision point serves it.
    pub fn minimal_port_towards(&self, dst: MacAddr) -> Option<PortNo> {
        let plan = self.plan.as_ref()?;
        plan.minimal_port_by_dest_group
            .get(&host_group(dst)?)
            .copied()
    }

    /// The next weight write for the switch, oldest first.
    pub fn poll_write(&mut self) -> Option<GroupWrite> {
        self.writes.pop_front().map(|t| t.write)
    }

    /// The next weight write with the arrival of the CNM it answers, oldest first.
    pub fn poll_timed_write(&mut self) -> Option<TimedWrite> {
        self.writes.pop_front()
    }

    /// The output port the switch's SELECT group gives a new flow to `dst` whose hash falls
    /// into slot `slot` of the group's 256 (weights sum to 256, bucket order), or `None` when
    /// `dst` is not served by a decision point. What OVS's dp_hash selection does, for the
    /// simulator.
    pub fn select(&self, dst: MacAddr, slot: u8) -> Option<PortNo> {
        let port = self.minimal_port_towards(dst)?;
        let g = self.plan.as_ref()?.group_of_port(port)?;
        let installed = self.weights.installed(g.dp.group_id)?;
        let mut left = u32::from(slot);
        for (b, &w) in g.buckets.iter().zip(installed) {
            if left < u32::from(w) {
                return b.output_port();
            }
            left -= u32::from(w);
        }
        Some(port)
    }

    /// DRB: the path a new flow to `dst` takes when its hash falls into slot `slot` of the
    /// multipath group's 256 (what OVS's dp_hash selection does, for the simulator), or `None`
    /// when no multipath group serves `dst` (the flow takes the untagged minimal route).
    pub fn select_path(&self, dst: MacAddr, slot: u8) -> Option<u8> {
        let d = self.drb.as_ref()?;
        let (dst, _) = DstSwitch::of_mac(dst)?;
        let w = d.drb.weights(dst)?;
        let mut left = u32::from(slot);
        for (i, &x) in w.iter().enumerate() {
            if left < u32::from(x) {
                // The padding bucket is path 0.
                return Some(if i + 1 == w.len() {
                    0
                } else {
                    u8::try_from(i).ok()?
                });
            }
            left -= u32::from(x);
        }
        Some(0)
    }

    /// DRB's state (`policy.kind = "drb"`), if it runs.
    pub fn drb(&self) -> Option<&Drb> {
        self.drb.as_ref().map(|d| &d.drb)
    }

    fn drb_learn(&mut self, now_ns: u64) {
        let (Some(d), Some(plan)) = (&mut self.drb, &self.plan) else {
            return;
        };
        // The quiet timer runs at the line rate of the switch's fabric ports (the first one's:
        // a torus's or mesh's are all alike), known only once the plan names them.
        let first = plan.fabric_ports.first().copied().unwrap_or(0);
        d.drb
            .set_quiet_ns(d.links.get(first).line_time_ns(d.quiet_line_bytes));
        let pairs = plan.path_pairs();
        d.drb
            .set_pairs(pairs.iter().map(|(&dst, (paths, _))| (dst, *paths)), now_ns);
        let mut next = std::collections::BTreeMap::new();
        for (dst, (_, groups)) in pairs {
            let mut pw = d.pairs.remove(&dst).unwrap_or_default();
            // A group holding other weights than the pair's gets the pair's (a restarted agent
            // starts every pair from its one minimal path again).
            let want = d.drb.weights(dst);
            pw.dirty |= groups
                .iter()
                .any(|g| plan.path_groups.get(g).map(|pg| pg.weights()) != want);
            pw.groups = groups;
            next.insert(dst, pw);
        }
        d.pairs = next;
        self.drb_flush(now_ns);
    }

    fn drb_notify(&mut self, culprit_dst: MacAddr, now_ns: u64, received: bool) {
        if self.frozen {
            self.counters.frozen_events_ignored += 1;
            return;
        }
        let Some(d) = &mut self.drb else { return };
        let Some((dst, path)) = DstSwitch::of_mac(culprit_dst) else {
            return;
        };
        let changed = d.drb.on_notification(dst, path, now_ns);
        tracing::debug!(?dst, path, changed, open = ?d.drb.open_paths(dst), "DRB notification");
        if changed {
            if let Some(p) = d.pairs.get_mut(&dst) {
                p.dirty = true;
                if received && p.cnm_ns.is_none() {
                    p.cnm_ns = Some(now_ns);
                }
            }
        }
        self.drb_flush(now_ns);
    }

    /// Writes every dirty pair whose interval has passed.
    fn drb_flush(&mut self, now_ns: u64) {
        if self.frozen {
            return;
        }
        let Some(d) = &mut self.drb else { return };
        let first_port = |groups: &[u32]| {
            let plan = self.plan.as_ref()?;
            let g = plan.path_groups.get(groups.first()?)?;
            g.buckets.first()?.output_port()
        };
        let dsts: Vec<DstSwitch> = d
            .pairs
            .iter()
            .filter(|(_, p)| p.dirty)
            .map(|(&k, _)| k)
            .collect();
        for dst in dsts {
            let Some(p) = d.pairs.get(&dst) else { continue };
            let interval = d.interval_ns(&p.groups, first_port(&p.groups));
            if p.written_ns
                .is_some_and(|t| now_ns.saturating_sub(t) < interval)
            {
                continue;
            }
            let Some(weights) = d.drb.weights(dst) else {
                continue;
            };
            let Some(p) = d.pairs.get_mut(&dst) else {
                continue;
            };
            for &group_id in &p.groups {
                self.counters.writes += 1;
                self.writes.push_back(TimedWrite {
                    write: GroupWrite {
                        group_id,
                        weights: weights.clone(),
                    },
                    cnm_ns: p.cnm_ns,
                });
            }
            p.dirty = false;
            p.cnm_ns = None;
            p.written_ns = Some(now_ns);
        }
    }

    /// The learned decision points, if a plan was read.
    pub fn plan(&self) -> Option<&LearnedPlan> {
        self.plan.as_ref()
    }

    /// The buckets that install `w` on the switch, recorded as installed in the learned plan (a
    /// slotted group's next write moves slots from these). `None` for a group the plan lacks.
    pub fn write_buckets(&mut self, w: &GroupWrite) -> Option<Result<Vec<Bucket>, SlotError>> {
        let plan = self.plan.as_mut()?;
        if let Some(g) = plan.groups.get_mut(&w.group_id) {
            return Some(g.write(&w.weights));
        }
        plan.path_groups
            .get(&w.group_id)
            .map(|g| Ok(g.with_weights(&w.weights)))
    }

    /// The policy (P per fabric port).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The weights the switch holds, per decision point.
    pub fn weights(&self) -> &WeightPlanner {
        &self.weights
    }

    /// Counters.
    pub fn counters(&self) -> &CoreCounters {
        &self.counters
    }

    /// `policy.kind = "static"`: no event reaches the policy, no weight changes.
    fn is_static(&self) -> bool {
        self.policy.config().kind == PolicyKind::Static
    }

    fn feed(&mut self, event: Event, now_ns: u64) {
        if self.is_static() {
            return;
        }
        if self.frozen {
            // P stands still too, so a thaw resumes from where the freeze stopped.
            self.counters.frozen_events_ignored += 1;
            return;
        }
        self.policy.handle_into(event, now_ns, &mut self.effects);
        for c in self.effects.changes() {
            tracing::trace!(port = c.port, old = c.old_percent, new = c.new_percent, cause = ?c.cause, "P changed");
            self.weights
                .on_probability(c.port, c.new_percent, now_ns, &mut self.scratch);
            if let Some(t) = self.feeding_cnm {
                for dp in self.weights.groups().filter(|dp| dp.minimal_port == c.port) {
                    if !self.cnm_unwritten.iter().any(|(g, _)| *g == dp.group_id) {
                        self.cnm_unwritten.push((dp.group_id, t));
                    }
                }
            }
        }
        self.queue_writes();
    }

    fn queue_writes(&mut self) {
        self.counters.writes += self.scratch.len() as u64;
        for write in self.scratch.drain(..) {
            let i = self
                .cnm_unwritten
                .iter()
                .position(|(g, _)| *g == write.group_id);
            let cnm_ns = i.map(|i| self.cnm_unwritten.swap_remove(i).1);
            self.writes.push_back(TimedWrite { write, cnm_ns });
        }
        // A CNM whose change moved no weight by a quantum needs no write: nothing to time.
        if !self.cnm_unwritten.is_empty() {
            let weights = &self.weights;
            self.cnm_unwritten.retain(|(g, _)| weights.is_pending(*g));
        }
    }
}

#[cfg(test)]
mod tests;
