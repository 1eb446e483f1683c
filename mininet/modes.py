"""The routing modes `run.py` compares, each with everything it sets: how the fabric is programmed,
the initial P of the SELECT groups, whether the agent runs (and its QCN-SW variant), and the
controller.toml / agent.toml keys it changes over the harness's (fflaunch.py: the controller's
loopback settings; `agent-emulated.toml`'s runtime settings over the agent's shipped defaults,
with every switch's port rates and queues as the harness shaped them). A mode is one entry here; `run.py --modes` names entries, and summary.json records each
mode's effective settings.

    Mode("qcnsw-combined-census", "...", program="controller", agent_variant="combined",
         agent={"cp.min_sources": 3})

Settings are applied in this order, later ones winning: the harness's, the mode's, then the
environment's ``FF_CONTROLLER_SET`` / ``FF_AGENT_SET`` (``key=value,...``, for one-off
experiments), then ``FabricNet(..., controller_overrides=, agent_overrides=)`` (tests).
"""

import dataclasses
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Mode:
    name: str
    about: str
    # "static": `fabricflow-controller plan` loaded with ovs-ofctl; "controller": the controller
    # runtime (`fabricflow-controller run`), which the agent needs.
    program: str = "static"
    # Initial probability of the minimal bucket of every decision group, percent.
    p_minimal: float = 100.0
    # QCN-SW variant of `fabricflow-agent run` (base, source-processing, feedback-comparison,
    # combined); None: no agent.
    agent_variant: str | None = None
    # controller.toml keys (dotted for tables) set over the harness's.
    controller: dict = field(default_factory=dict)
    # agent.toml keys (dotted: "cp.min_sources") set over agent-emulated.toml.
    agent: dict = field(default_factory=dict)
    # A host-side reaction point in every host: `fabricflow-agent throttle` (InfiniBand CC:
    # IRD per 10 CNMs, rate B/(1+IRD) on the host link's HTB class). Needs CNMs delivered to
    # the hosts (controller `cnm_to_hosts`).
    host_throttle: bool = False
    # A probe: every port's buffer stated to the agent as long in time as the slowest port's
    # (fftopo.on_slowest_clock), so its byte limit and write interval run on that clock.
    slowest_clock_buffers: bool = False

    def __post_init__(self):
        if self.program not in ("static", "controller"):
            raise ValueError(f"mode {self.name}: program must be static or controller")
        if self.agent_variant and self.program != "controller":
            raise ValueError(f"mode {self.name}: the agent needs the controller runtime")
        if self.controller and self.program != "controller":
            raise ValueError(f"mode {self.name}: controller keys need the controller runtime")
        if self.agent and not self.agent_variant:
            raise ValueError(f"mode {self.name}: agent keys need an agent")
        if self.host_throttle and not self.controller.get("cnm_to_hosts"):
            raise ValueError(f"mode {self.name}: host throttlers need cnm_to_hosts")
        if self.slowest_clock_buffers and not self.agent_variant:
            raise ValueError(f"mode {self.name}: the slowest clock is the agent's")

    def on_controller(self):
        """The same mode programmed by the controller runtime (`run.py --program controller`)."""
        return dataclasses.replace(self, program="controller")

    def ceiling(self):
        """The `fabricflow-controller bound --routing` whose paths this mode can use, for its
        summary's ceiling_mbps: a static P = 100 plan routes minimally, P = 0 over the planner's
        Valiant paths; anything whose P lies between, or that an agent moves, mixes the two
        (adaptive)."""
        if (self.agent_variant is None or self.agent.get("policy.kind") == "static") \
                and self.p_minimal >= 100:
            return "minimal"
        if self.agent_variant is None and self.p_minimal <= 0:
            return "valiant"
        return "adaptive"

    def as_dict(self):
        return dataclasses.asdict(self)


def _qcnsw(variant, short):
    return Mode(f"qcnsw-{short}", f"controller + agent, QCN-SW variant {variant}, emulated CP",
                program="controller", agent_variant=variant)


MODES = {m.name: m for m in (
    Mode("minimal", "static plan, P = 100: minimal routing", p_minimal=100.0),
    Mode("valiant", "static plan, P = 0: inter-group traffic over the non-minimal candidates",
         p_minimal=0.0),
    _qcnsw("base", "base"),
    _qcnsw("source-processing", "sp"),
    _qcnsw("feedback-comparison", "fc"),
    _qcnsw("combined", "combined"),
    # DRB (issue 20): the controller's multipath plan (per pair the minimal route and up to 4
    # disjoint alternatives, path-tagged) and the agent's DRB policy on it.
    Mode("drb", "controller (multipath plan) + agent, DRB policy, emulated CP",
         program="controller", agent_variant="combined",
         controller={"multipath_alternatives": 4}, agent={"policy.kind": "drb"}),
    # The throttled baseline (issue 20): static minimal routing (the controller's plan, agents
    # with policy.kind = "static": weights never change), the emulated CP marking, every CNM
    # forwarded to the culprit's source host (cnm_to_hosts, the BECN of InfiniBand) and each
    # host's throttler applying InfiniBand CC to its link (mininet/README.md "DRB results").
    Mode("ibacc", "controller + agent (static weights, emulated CP) + InfiniBand CC throttler "
         "in every host, CNMs delivered to the culprit's host",
         program="controller", agent_variant="combined",
         controller={"cnm_to_hosts": True}, agent={"policy.kind": "static"},
         host_throttle=True),
    # mininet/README.md "The source census": the gate on (the shipped configuration has it off).
    Mode("qcnsw-combined-census",
         "qcnsw-combined with the source census on (cp.min_sources = 3)",
         program="controller", agent_variant="combined", agent={"cp.min_sources": 3}),
    # The census at its least: a CNM only where two hosts or more contend for the port.
    Mode("qcnsw-combined-census2",
         "qcnsw-combined with the source census at two hosts (cp.min_sources = 2)",
         program="controller", agent_variant="combined", agent={"cp.min_sources": 2}),
    # The cost of the emulated CP, side by side (mininet/README.md "Cost of the emulated CP"):
    # the agent without it, and with it sampling every port but never congested enough to fire.
    Mode("qcnsw-combined-cpoff", "qcnsw-combined with the emulated CP off: the agent, no CNMs",
         program="controller", agent_variant="combined",
         agent={"runtime.emulated_cp.enabled": False}),
    # What the controller runtime alone costs (no agent): the same P = 100 plan, programmed
    # and kept by `fabricflow-controller run` instead of loaded with ovs-ofctl.
    Mode("minimal-controller", "controller runtime, no agent, P = 100: minimal routing",
         program="controller", p_minimal=100.0),
    # Writes released as each group's interval ends, one revalidation each (mininet/README.md
    # "Writes on a grid").
    Mode("qcnsw-combined-nogrid", "qcnsw-combined without the write grid",
         program="controller", agent_variant="combined",
         agent={"weights.write_grid_fraction": 0.0}),
    # The agent's OpenFlow polls, ten times rarer than the harness's (port stats every 5 s,
    # plan read every 60 s), with its CP off: what the polls cost the forwarding thread.
    Mode("qcnsw-combined-cpoff-quiet",
         "qcnsw-combined with the emulated CP off and the agent's polls 10-30x rarer",
         program="controller", agent_variant="combined",
         agent={"runtime.emulated_cp.enabled": False,
                "runtime.port_stats_period_us": 5_000_000,
                "runtime.plan_refresh_period_us": 60_000_000}),
    Mode("qcnsw-combined-cpoff-noread",
         "qcnsw-combined with the emulated CP off and the plan read every 60 s, not 2 s",
         program="controller", agent_variant="combined",
         agent={"runtime.emulated_cp.enabled": False,
                "runtime.plan_refresh_period_us": 60_000_000}),
    Mode("qcnsw-combined-cpidle",
         "qcnsw-combined with the emulated CP sampling but unable to fire (Qeq 5 GB)",
         program="controller", agent_variant="combined",
         agent={"link.buffer_bytes": 10_000_000_000}),
    # A write only when some bucket moves by 10 % (26 of 255 quanta): small diversions, which
    # under TCP move live flows for little, are never written.
    Mode("qcnsw-combined-mc26",
         "qcnsw-combined writing only changes of at least 26 quanta (weights.min_change_quanta)",
         program="controller", agent_variant="combined",
         agent={"weights.min_change_quanta": 26}),
    # Each group written at most every 5 s, whatever the links' rate: about the write rate the
    # drain term gives at a quarter of 10 / 2.5 Mb/s (mininet/README.md "The short cells at a
    # quarter of the rates"), to tell the writes' cost on the switch from the diversion they make.
    Mode("qcnsw-combined-floor5s",
         "qcnsw-combined writing each group at most every 5 s "
         "(weights.min_update_interval_floor_us = 5 000 000)",
         program="controller", agent_variant="combined",
         agent={"weights.min_update_interval_floor_us": 5_000_000}),
    # CNMs generated, sent and charged, P moving, but no weight ever written: against CP idle
    # what the CNMs themselves cost; against qcnsw-combined what the writes (diversion, OVS
    # revalidation, live flows re-hashed onto other buckets) cost or gain.
    Mode("qcnsw-combined-nowrites",
         "qcnsw-combined writing no weight (weights.min_change_quanta = 255: P stays >= 5 %, so "
         "no bucket can move that far; an interval floor would still write each group's first "
         "change and freeze it)",
         program="controller", agent_variant="combined",
         agent={"weights.min_change_quanta": 255}),
    # CNMs by OpenFlow, as on a switch whose ports are not the agent's Linux interfaces: the
    # emulated CP's CNMs injected by PACKET_OUT, CNMs from fabric ports delivered by packet-in
    # (the harness's controller drops them for the agent to read from the veths).
    Mode("qcnsw-combined-cnm-openflow",
         "qcnsw-combined with CNMs by PACKET_OUT and packet-in instead of the ports' interfaces",
         program="controller", agent_variant="combined",
         controller={"cnm_to_agent": "packet-in"}, agent={"runtime.cnm_out": "pipeline"}),
    # Decision points in the weighted layout (one bucket per choice, the split in its weight):
    # Open vSwitch rebuilds its dp_hash table from the weights on every write and moves flows
    # no change asked for (mininet/README.md "Weight writes move live flows").
    Mode("qcnsw-combined-weighted",
         "qcnsw-combined with weighted SELECT buckets instead of slot buckets",
         program="controller", agent_variant="combined",
         controller={"select_layout": "weights"}),
    # Feedback comparison weighing the candidates' congestion by a Dragonfly detour's two global
    # links (UGAL's queue x hops; docs/DESIGN.md section 5, `policy.fbcomp_nonminimal_factor`).
    Mode("qcnsw-combined-f2",
         "qcnsw-combined with the candidates' congestion weighed x2 (fbcomp_nonminimal_factor)",
         program="controller", agent_variant="combined",
         agent={"policy.fbcomp_nonminimal_factor": 2.0}),
    # The feedback comparison reading each port's running mean of Fb (weight 0.1 per value)
    # instead of single values (policy.fbcomp_smoothing).
    Mode("qcnsw-combined-smooth",
         "qcnsw-combined comparing running means of Fb (fbcomp_smoothing = 0.1)",
         program="controller", agent_variant="combined",
         agent={"policy.fbcomp_smoothing": 0.1}),
    # A comparison's cut only while the port's running excess over its reference is positive
    # (policy.fbcomp_persistent_excess).
    Mode("qcnsw-combined-persist",
         "qcnsw-combined cutting only ports persistently above their reference "
         "(fbcomp_persistent_excess)",
         program="controller", agent_variant="combined",
         agent={"policy.fbcomp_persistent_excess": True}),
    # A probe: every port's byte limit and write interval on the slowest port's clock
    # (mininet/README.md "The rise clock on the slowest queue's time").
    Mode("qcnsw-combined-drainmatch",
         "qcnsw-combined with every port's buffer stated as the slowest port's drain time",
         program="controller", agent_variant="combined", slowest_clock_buffers=True),
    # The shipped agent without its drop-scaled Fb (runtime.emulated_cp.drop_scaled_fb), and
    # with it compared with every same-rate peer from any excess, or with loaded peers from an
    # excess of 1 or 2 instead of 3 (mininet/README.md "Fb scaled by the port's drop excess").
    Mode("qcnsw-combined-nodropfb",
         "qcnsw-combined without the drop-scaled Fb",
         program="controller", agent_variant="combined",
         agent={"runtime.emulated_cp.drop_scaled_fb": False}),
    Mode("qcnsw-combined-dropfb",
         "qcnsw-combined with Fb scaled by the port's drop excess over every same-rate peer",
         program="controller", agent_variant="combined",
         agent={"runtime.emulated_cp.drop_peer_min_load": 0.0,
                "runtime.emulated_cp.drop_excess_onset": 1.0}),
    Mode("qcnsw-combined-dropbusy",
         "qcnsw-combined with Fb scaled by the drop excess over its loaded peers from 1",
         program="controller", agent_variant="combined",
         agent={"runtime.emulated_cp.drop_excess_onset": 1.0}),
    Mode("qcnsw-combined-dropbusy2",
         "qcnsw-combined with Fb scaled by the drop excess over its loaded peers from 2",
         program="controller", agent_variant="combined",
         agent={"runtime.emulated_cp.drop_excess_onset": 2.0}),
    # A sample after the port's qdisc dropped frames reads the queue as full: TCP streams that
    # lost frames back off and leave the queue short while the link starves.
    Mode("qcnsw-combined-dropsfull",
         "qcnsw-combined reading a queue that dropped since the last sample as full "
         "(runtime.emulated_cp.drops_fill_queue)",
         program="controller", agent_variant="combined",
         agent={"runtime.emulated_cp.drops_fill_queue": True}),
    # QCN's reaction-point byte counter: an increase per octets this switch injected through
    # the decision's minimal bucket, not per octet the port sent (transit included).
    Mode("qcnsw-combined-minbucket",
         "qcnsw-combined counting only the minimal bucket's octets (runtime.byte_counter)",
         program="controller", agent_variant="combined",
         agent={"runtime.byte_counter": "minimal-bucket"}),
    # The byte limit in octets alone (policy.byte_limit_buffer_drains = 0, the published rule's
    # form): on the harness's 75 700-octet queues 15 000 octets are 0.2 drains, and P returns
    # to 100 % before the queue that caused the cut has drained (mininet/README.md "The byte
    # limit in buffer drains").
    Mode("qcnsw-combined-octets",
         "qcnsw-combined with the byte limit in octets only (policy.byte_limit_buffer_drains = 0)",
         program="controller", agent_variant="combined",
         agent={"policy.byte_limit_buffer_drains": 0.0}),
    # Source processing as published: a self-generated CNM charges the minimal port towards the
    # culprit's destination whatever port it was sampled on (policy.source_on_route = false;
    # mininet/README.md "Source processing on the culprit's route").
    Mode("qcnsw-combined-anyroute",
         "qcnsw-combined charging every self-generated CNM to the culprit's minimal port "
         "(policy.source_on_route = false)",
         program="controller", agent_variant="combined",
         agent={"policy.source_on_route": False}),
    # P's path: the sweep's +40-point steps per 1.6 drains (the shipped rate of rise in steps
    # twice as large; mininet/README.md "Half-size steps"), or cuts half as deep (R in
    # [0.75, 1]).
    Mode("qcnsw-combined-step40",
         "qcnsw-combined with +40-point increases per 1.6 buffer drains (30 000 octets at least)",
         program="controller", agent_variant="combined",
         agent={"policy.increase_step_percent": 40.0, "policy.byte_limit_buffer_drains": 1.6,
                "policy.byte_limit_bytes": 30_000}),
    # Feedback comparison with a dead band: a CNM cuts P only when the minimal port's QntzFb
    # exceeds the reference by more than 16 (of 63); the shipped th2 is 0 (mininet/README.md
    # "A dead band in the feedback comparison").
    Mode("qcnsw-combined-th2",
         "qcnsw-combined with a dead band in the feedback comparison (policy.fbcomp_th2 = 16)",
         program="controller", agent_variant="combined", agent={"policy.fbcomp_th2": 16.0}),
    # The published restart of the byte counter on every CNM, and a candidate's congestion known
    # only at the switch (policy.dead_band_restarts_counter = true, policy.detour_cnm_feedback =
    # false; mininet/README.md "Equal-cost buckets, held CNMs and detours' CNMs").
    Mode("qcnsw-combined-restart",
         "qcnsw-combined whose held CNMs restart the byte counter (the published rule)",
         program="controller", agent_variant="combined",
         agent={"policy.dead_band_restarts_counter": True}),
    Mode("qcnsw-combined-nodetour",
         "qcnsw-combined whose detours' CNMs do not count as their candidates' congestion",
         program="controller", agent_variant="combined",
         agent={"policy.detour_cnm_feedback": False}),
    Mode("qcnsw-combined-restart-nodetour",
         "qcnsw-combined-restart without detours' CNMs as congestion (the agent before both)",
         program="controller", agent_variant="combined",
         agent={"policy.detour_cnm_feedback": False,
                "policy.dead_band_restarts_counter": True}),
    # The byte counter's rise asking the comparison first (policy.rise_follows_comparison).
    Mode("qcnsw-combined-gated",
         "qcnsw-combined whose byte-counter increases are withheld while the port is more "
         "congested than its reference",
         program="controller", agent_variant="combined",
         agent={"policy.rise_follows_comparison": True}),
    # At most one cut per buffer drain of the port (policy.cut_holdoff_buffer_drains).
    Mode("qcnsw-combined-holdoff",
         "qcnsw-combined cutting P at most once per drain of the port's egress buffer",
         program="controller", agent_variant="combined",
         agent={"policy.cut_holdoff_buffer_drains": 1.0}),
    # Every received CNM charged where it first lands on a switch with decision points, not
    # relayed to the culprit's own switch (policy.cnm_at_culprit_switch = false).
    Mode("qcnsw-combined-atlanding",
         "qcnsw-combined charging every received CNM where it first lands (no relay to the "
         "culprit's switch)",
         program="controller", agent_variant="combined",
         agent={"policy.cnm_at_culprit_switch": False}),
    # A detour's CNM kept as its candidate's congestion only, not charged to the minimal port
    # (policy.charge_detour_cnms = false).
    Mode("qcnsw-combined-detournote",
         "qcnsw-combined keeping a detour's CNM as its candidate's congestion without charging "
         "the minimal port",
         program="controller", agent_variant="combined",
         agent={"policy.charge_detour_cnms": False}),
    # Each group write carries P's latest value, not its mean since the last write
    # (weights.written_p = "latest"; mininet/README.md "The written P").
    Mode("qcnsw-combined-latestp",
         "qcnsw-combined writing P's latest value instead of its mean over the write interval",
         program="controller", agent_variant="combined",
         agent={"weights.written_p": "latest"}),
    # The yield comparison: cuts held while the minimal choice delivers at least its weight's
    # share of the decision points' octets, increases withheld while it delivers less
    # (policy.yield_comparison).
    Mode("qcnsw-combined-yield",
         "qcnsw-combined with the yield comparison (delivered octets per unit of weight gate "
         "the cuts and the increases)",
         program="controller", agent_variant="combined",
         agent={"policy.yield_comparison": True}),
    Mode("qcnsw-combined-yield0",
         "qcnsw-combined-yield without a dead band, over half the window",
         program="controller", agent_variant="combined",
         agent={"policy.yield_comparison": True, "policy.yield_band": 0.0,
                "policy.yield_window_line_bytes": 200_000}),
    # Group writes at most every 48 buffer drains of the minimal port instead of 24: each
    # write carries P's mean over twice as long (mininet/README.md "The weight-write interval").
    Mode("qcnsw-combined-wi48",
         "qcnsw-combined writing each group at most every 48 buffer drains (24 shipped)",
         program="controller", agent_variant="combined",
         agent={"weights.min_update_interval_buffer_drains": 48.0}),
    Mode("qcnsw-combined-gd256",
         "qcnsw-combined with Gd = 1/256 (a cut keeps at least 75 % of P)",
         program="controller", agent_variant="combined",
         agent={"policy.gd": 1.0 / 256.0}),
    # QCN-SW starting from an even split instead of all-minimal: the controller installs P = 50
    # and the agent continues from the installed weights (mininet/README.md "Streams per flow,
    # and QCN-SW's start").
    Mode("qcnsw-combined-p50",
         "qcnsw-combined from an initial P of 50 instead of 100 (controller p_minimal_percent)",
         program="controller", p_minimal=50.0, agent_variant="combined"),
    # The same with the tap on the port's own interface (transmitted frames, cloned by the
    # kernel for the tap) instead of the veth link's far end (the shipped `auto`).
    Mode("qcnsw-combined-cpidle-egress",
         "qcnsw-combined-cpidle with the CP tapping each port's own transmissions",
         program="controller", agent_variant="combined",
         agent={"link.buffer_bytes": 10_000_000_000, "runtime.emulated_cp.tap": "egress"}),
)}


def lookup(name, program=None):
    """The registered mode `name`, moved onto the controller runtime if `program` says so."""
    try:
        mode = MODES[name]
    except KeyError:
        raise KeyError(f"unknown mode {name!r}; known: {', '.join(MODES)}") from None
    return mode.on_controller() if program == "controller" else mode
