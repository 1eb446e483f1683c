"""What run.py measures, typed: one run of one mode (:class:`RunResult`), a mode's repeats
(:class:`ModeResult`) and the whole invocation (:class:`Summary`). ``Summary.to_json()`` is
summary.json; tests/, mininet/README.md and later tools read its keys, so they only grow."""

import statistics
from dataclasses import dataclass, field

import measure

# Per-run figures that a mode reports as the median over its repeats (robust to one run hit by
# this shared machine's load).
MEDIAN_KEYS = ("aggregate_mbps", "flow_min_mbps", "flow_median_mbps", "flow_max_mbps", "jain",
               "optimum_mbps", "fraction_of_optimum", "ceiling_mbps", "fraction_of_ceiling")


def max_aggregate(bound, routing):
    """The maximum aggregate throughput (Mb/s) of `routing` in a `fabricflow-controller bound`
    result ({routing: entry}, traffic.bound), None if it was not computed."""
    entry = (bound or {}).get(routing) if routing else None
    return round(entry["max_aggregate_mbps"], 4) if entry else None


def fraction(measured, ceiling):
    return round(measured / ceiling, 4) if measured is not None and ceiling else None


@dataclass
class RunResult:
    mode: str
    rep: int
    seed: int
    flows: list                     # [(src, dst)] JSON host names, as the registry gave them
    per_flow_mbps: dict             # "src->dst" -> mean Mb/s after the warm-up (receiver side)
    agg_series: list                # [(t s, aggregate Mb/s)], one point per second
    errors: dict                    # "src->dst" -> iperf3's error
    timings: dict                   # FabricNet.timings: bring-up and programming, s
    cnms_generated: int | None      # the agent's /metrics; None without an agent
    group_modifies: int | None
    ovs_send_error_lines: int | None
    group0_switches: list
    group0_accepted_mbps: dict      # switch -> Mb/s delivered to its hosts, after the warm-up
    group0_global_tx_mbytes: dict   # "switch:port" -> MB sent on group 0's global ports
    p_samples: list                 # [(t s, switch, port, P %)], every agent port, once a second
    group0_p_median: dict           # "switch:port" -> median P after the warm-up (group 0)
    csv: str
    p_csv: str | None
    settings: dict                  # FabricNet.settings(): what the fabric ran with
    wall_s: float = 0.0
    # % of one core over the traffic: ovs-vswitchd and the controller/agent (measure.CpuMeter).
    cpu_percent: dict = field(default_factory=dict)
    # traffic.bound() for this run's flows (its seed) and rates: routing -> LP result; None when
    # it could not be computed (the run's figures stand without it).
    bound: dict | None = None
    ceiling_routing: str | None = None  # modes.Mode.ceiling(): the routing of this mode's paths
    # run.port_report(): the port-stats CSV, its fabricflow-report directory, the sampler's
    # summary and the most stalled ports.
    port_stats: dict | None = None
    # FabricNet.throttle_totals(): the hosts' throttlers (CNMs charged, IRD raises/lowers,
    # highest IRD, rate writes); None without throttlers.
    throttle: dict | None = None
    # FabricNet.agent_policy_events(): event -> count over the switches; None without an agent.
    policy_events: dict | None = None
    # FabricNet.agent_cp_counters(): the emulated CP's counters (cnms, samples_few_sources,
    # samples_drop_scaled) summed over the ports; None without an agent.
    cp_counters: dict | None = None
    # TCP retransmissions summed over the flows' senders (measure.client_retransmits); None if
    # no client reported them.
    tcp_retransmits: int | None = None
    # measure.ramp_s(): the first second at 90 % of the measured window's median aggregate.
    ramp_s: float | None = None
    # measure.fabric_tx_mbytes(): "switch:port" -> MB every switch-to-switch port sent in the
    # run (warm-up included); None when not read.
    fabric_tx_mbytes: dict | None = None
    # [(t s, Mb/s)]: what every switch delivered to its hosts between consecutive samples of
    # measure.SwitchSampler (about a second apart, t from the clients' release): the fabric's
    # own clock, where agg_series adds up each receiver's seconds from its own test start.
    delivered_series: list | None = None

    def stats(self):
        """Flow statistics and how they compare with the optimum (any routing, maximum
        aggregate throughput of the same flows at the same rates) and the mode's own ceiling."""
        out = measure.flow_stats(self.per_flow_mbps)
        optimum = max_aggregate(self.bound, "any")
        ceiling = max_aggregate(self.bound, self.ceiling_routing)
        agg = out["aggregate_mbps"]
        out.update(optimum_mbps=optimum, fraction_of_optimum=fraction(agg, optimum),
                   ceiling_routing=self.ceiling_routing, ceiling_mbps=ceiling,
                   fraction_of_ceiling=fraction(agg, ceiling))
        return out

    def to_json(self):
        return dict(self.stats(), seed=self.seed, csv=self.csv, p_csv=self.p_csv,
                    wall_s=self.wall_s, errors=self.errors, timings=self.timings,
                    cnms_generated=self.cnms_generated, group_modifies=self.group_modifies,
                    ovs_send_error_lines=self.ovs_send_error_lines, cpu_percent=self.cpu_percent,
                    port_stats=self.port_stats, throttle=self.throttle,
                    policy_events=self.policy_events, cp_counters=self.cp_counters,
                    tcp_retransmits=self.tcp_retransmits,
                    ramp_s=self.ramp_s, delivered_series=self.delivered_series,
                    fabric_tx_mbytes=self.fabric_tx_mbytes,
                    fabric_ports_carrying=(measure.ports_carrying(self.fabric_tx_mbytes)
                                           if self.fabric_tx_mbytes else None),
                    per_flow_mbps={k: round(v, 4) for k, v in self.per_flow_mbps.items()})


@dataclass
class ModeResult:
    mode: str
    definition: dict                # modes.Mode.as_dict() as run (after --program)
    runs: list = field(default_factory=list)  # [RunResult], one per repeat

    def medians(self):
        stats = [r.stats() for r in self.runs]
        return {k: round(statistics.median(s[k] for s in stats if s.get(k) is not None), 4)
                if any(s.get(k) is not None for s in stats) else None for k in MEDIAN_KEYS}

    def cpu_medians(self):
        """{process: median % of one core over the repeats}."""
        names = {k for r in self.runs for k in r.cpu_percent}
        return {k: round(statistics.median(r.cpu_percent[k] for r in self.runs
                                           if k in r.cpu_percent), 1) for k in sorted(names)}

    def run_median(self, key):
        """Median over the repeats of one RunResult field (tcp_retransmits, ramp_s); None if
        no run has it."""
        vals = [getattr(r, key) for r in self.runs if getattr(r, key) is not None]
        return statistics.median(vals) if vals else None

    def cp_medians(self):
        """{CP counter: median over the repeats that read it}, None without an agent."""
        runs = [r.cp_counters for r in self.runs if r.cp_counters]
        names = {k for c in runs for k in c}
        return {k: statistics.median(c[k] for c in runs if k in c)
                for k in sorted(names)} if runs else None

    def settings(self):
        """The mode's definition and, from its first run, the configs in force."""
        first = self.runs[0].settings if self.runs else {}
        return {"mode": self.definition, "controller": first.get("controller"),
                "agent": first.get("agent"), "env": first.get("env", {})}

    def to_json(self):
        r0 = self.runs[0]
        out = self.medians()
        out.update({
            "flows": r0.stats()["flows"],
            "ceiling_routing": r0.ceiling_routing,
            "runs": [r.to_json() for r in self.runs],
            "cnms_generated": r0.cnms_generated, "group_modifies": r0.group_modifies,
            "group0_accepted_mbps": {k: round(v, 3) for k, v in r0.group0_accepted_mbps.items()},
            # Bytes each global port of group 0 sent (run 0): where the buckets put the traffic.
            "group0_global_tx_mbytes": r0.group0_global_tx_mbytes,
            "group0_p_median": r0.group0_p_median,
            "settings": self.settings(),
            "cpu_percent": self.cpu_medians(),
            "tcp_retransmits": self.run_median("tcp_retransmits"),
            "ramp_s": self.run_median("ramp_s"),
            "cp_counters": self.cp_medians(),
        })
        return out


@dataclass
class Summary:
    topology: str
    traffic: str
    duration_s: int
    warmup_s: float
    seed: int
    repeat: int
    streams_per_flow: int
    tcp_cc: str
    link_rates_mbps: dict
    modes: dict = field(default_factory=dict)  # mode name -> ModeResult
    bounds: dict = field(default_factory=dict)  # seed -> traffic.bound() of that seed's flows

    def optimum_mbps(self):
        """The optimum (any routing) of the first seed's flows; each run has its own seed's."""
        return max_aggregate(self.bounds.get(self.seed), "any")

    def to_json(self):
        return {"topology": self.topology, "traffic": self.traffic,
                "duration_s": self.duration_s, "warmup_s": self.warmup_s, "seed": self.seed,
                "repeat": self.repeat, "streams_per_flow": self.streams_per_flow,
                "tcp_cc": self.tcp_cc, "link_rates_mbps": self.link_rates_mbps,
                "modes": {name: m.to_json() for name, m in self.modes.items()},
                "optimum_mbps": self.optimum_mbps(),
                "bounds": {str(seed): b for seed, b in self.bounds.items()}}
