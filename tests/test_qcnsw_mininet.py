"""Issue 5 end-to-end: QCN-SW on Mininet with both runtimes (controller + agent, emulated CP).

Run with tests/run-e2e.sh (root).  Dragonfly(1,2,3) (the smallest on which a non-minimal path
beats the minimal one here, see mininet/README.md), host/local links 10 Mb/s, global 2.5 Mb/s,
pfifo queues of 50 packets, ADV+1 with iperf3 TCP (4 streams per flow), mode qcnsw-combined.

What is asserted strictly (polling with deadlines): the switch owning a congested minimal global
link generates CNMs for that port; they reach the other source switch's agent over the fabric;
P of the minimal ports falls; the decision point's SELECT group keeps its buckets but gets new
weights; the non-minimal buckets' packet counters grow; ovs-vswitchd dropped no frame outside
the queues (scripts/ovs-start.sh); after the traffic stops every P climbs back to 100 (idle
timer).  QCN-SW beats minimal routing: its aggregate exceeds what minimal routing can carry at
all under ADV+1 here (each of the 7 groups sends over its one 2.5 Mb/s global link to the next:
17.5 Mb/s), so no minimal run is needed (the measured figures: mininet/README.md, "QCN-SW
results", Dragonfly(1,2,3)).  The controller-mode all-pairs ping covers the controller
runtime alone.  The census test checks the other side of the harness's `cp.min_sources`: a
link that one host fills gets no CNM and keeps P at 100, and gets them with the gate off.  The
fat-tree k=2 n=3 tests: every level ready, and a top switch's congestion charged at the
culprit's leaf through the middle switch's relay.
"""

import os
import re
import subprocess
import threading
import tomllib
import unittest

from fabrictest import FabricTestCase, t  # noqa: E402  (puts mininet/ on sys.path)
import measure  # noqa: E402
import traffic  # noqa: E402
from fflaunch import (OFCTL, FabricNet, has_subcommand, metric_sum,  # noqa: E402
                      ovs_log_size, ovs_send_errors_since, wait_until)
from fftopo import AGENT_BIN, CONTROLLER_BIN, LinkRates  # noqa: E402

SPEC = "dragonfly:p=1,a=2,h=3"
RATES = LinkRates(host=10, local=10, glob=2.5, up=10, down=2.5, queue_pkts=50)
PING_RATES = LinkRates(5, 5, 5, 5, 5, 50)
RUNTIMES = has_subcommand(CONTROLLER_BIN, "run") and has_subcommand(AGENT_BIN, "run")
DURATION = int(os.environ.get("FF_QCNSW_DURATION", "20"))
# ADV+1 with minimal routing: every group's traffic crosses its one global link to the next.
MINIMAL_CEILING = 7 * RATES.glob


def global_link_0_to_1(fab):
    """(switch of group 0 owning the global link to group 1, its port on that link)."""
    group = {sw["name"]: sw["group"] for sw in fab.switches}
    link = next(lk for lk in fab.links if lk["class"] == "global"
                and {group[lk["a"]], group[lk["b"]]} == {0, 1})
    return ((link["a"], link["a_port"]) if group[link["a"]] == 0
            else (link["b"], link["b_port"]))


def cnm_rule(br, port):
    """(actions, n_packets) of table 0's CNM rule for `port` of `br`."""
    out = subprocess.run(OFCTL + ["dump-flows", br, f"table=0,in_port={port},dl_type=0x22e7"],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(r"n_packets=(\d+),.*actions=(\S+)", out)
    if not m:
        raise AssertionError(f"no CNM rule for {br}:{port}: {out}")
    return m[2], int(m[1])


SLOTS = 256


def raw_groups(br):
    """{group_id: [(port, weight), ...]}, every bucket, from ovs-ofctl dump-groups."""
    out = subprocess.run(OFCTL + ["dump-groups", br], capture_output=True, text=True,
                         check=True).stdout
    groups = {}
    for line in out.splitlines():
        m = re.search(r"group_id=(\d+),type=select", line)
        if not m:
            continue
        buckets = []
        for b in line.split("bucket=")[1:]:
            w = re.search(r"weight:(\d+)", b)
            port = re.search(r"actions=(?:.*?)output:(\d+)", b)
            # ovs-ofctl omits the weight when it is 1.
            buckets.append((int(port[1]) if port else None, int(w[1]) if w else 1))
        groups[int(m[1])] = buckets
    return groups


def logical(buckets):
    """A group in the slotted layout (proto/src/select_slots.rs: weight-0 catalog buckets, then
    256 weight-1 slots copying them) as its catalog weighed by slot counts; others as they are."""
    catalog = buckets[:-SLOTS] if len(buckets) > SLOTS else []
    if not catalog or any(w != 0 for _, w in catalog) \
            or any(w != 1 for _, w in buckets[-SLOTS:]):
        return buckets
    slots = [p for p, _ in buckets[-SLOTS:]]
    return [(p, slots.count(p)) for p, _ in catalog]


def dump_groups(br):
    """{group_id: [(port, weight), ...]}: each SELECT group's choices and their weights."""
    return {g: logical(b) for g, b in raw_groups(br).items()}


def non_minimal_packets(br, gid):
    """Packets a group sent by buckets that do not output to its minimal port (bucket 0's)."""
    buckets = raw_groups(br).get(gid)
    if not buckets:
        return 0
    minimal = buckets[0][0]
    return sum(n for (port, _), n in zip(buckets, group_stats(br, gid)) if port != minimal)


class BucketAccumulator:
    """Samples dump-group-stats every 0.2 s and accumulates the non-minimal buckets' packets
    across the resets that every weight MODIFY causes in OVS."""

    def __init__(self, groups, p_of=None, ports=()):
        self.groups = groups
        # Lowest P seen per (bridge, port): P moves fast, a 0.5 s poll can miss its dips.
        self.p_of, self.p_min = p_of, {bp: 100.0 for bp in ports}
        self.last = {g: 0 for g in groups}
        self.acc = {g: 0 for g in groups}
        self._stop = threading.Event()
        self._th = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._th.start()

    def stop(self):
        self._stop.set()
        self._th.join(5)

    def _run(self):
        while not self._stop.is_set():
            for g in self.groups:
                try:
                    now = non_minimal_packets(*g)
                except (subprocess.CalledProcessError, OSError):
                    continue
                self.acc[g] += now - self.last[g] if now >= self.last[g] else now
                self.last[g] = now
            for bp in self.p_min:
                try:
                    v = self.p_of(*bp)
                except OSError:
                    continue
                if v is not None:
                    self.p_min[bp] = min(self.p_min[bp], v)
            self._stop.wait(0.2)

    def total(self, br, gid):
        return self.acc[(br, gid)]


def group_stats(br, gid):
    """[packets per bucket] from ovs-ofctl dump-group-stats."""
    out = subprocess.run(OFCTL + ["dump-group-stats", br, f"group_id={gid}"],
                         capture_output=True, text=True, check=True).stdout
    return [int(x) for x in re.findall(r"bucket\d+:packet_count=(\d+)", out)]


class QcnswTests(FabricTestCase):
    def setUp(self):
        super().setUp()
        # Fail, never skip: a missing or stale binary must not turn this test into a silent pass.
        self.assertTrue(RUNTIMES, f"{CONTROLLER_BIN} and {AGENT_BIN} must have a `run` subcommand")

    def _all_pairs_answer(self, fn):
        t(f"{self.assert_all_pairs(fn)} pairs, 0 % loss", self.t0)

    def test_controller_mode_all_pairs_ping(self):
        """The real controller runtime programs a Mininet fabric: every pair answers (the
        fabric's own ARP replies, no static ARP), and teardown kills the controller."""
        with FabricNet("dragonfly:p=1,a=2,h=1", PING_RATES, mode="controller") as fn:
            t(f"up and synced {fn.timings}", self.t0)
            ctl = fn.procs[0]
            self._all_pairs_answer(fn)
        self.assertIsNotNone(ctl.poll(), "controller still running after teardown")

    def test_fattree_bring_up_every_level_ready_and_all_pairs_ping(self):
        """QCN-SW on a deeper fat-tree, k=2 n=3: only the leaves have decision points (the
        controller adapts at injection), yet the agent reports every switch ready (the middle
        and top levels' plans have nothing to adapt; the harness used to time out waiting for
        them), runs the emulated CP on every switch's fabric ports, and all pairs ping."""
        with FabricNet("fattree:k=2,n=3", PING_RATES, mode="controller",
                       agent_variant="combined") as fn:
            t(f"up, synced, agent ready {fn.timings}", self.t0)
            leaves = {fn.fabric.sw_short[sw["name"]] for sw in fn.fabric.switches
                      if sw["level"] == 0}
            state = fn.agent_state()
            self.assertEqual(set(state), {s.name for s in fn.net.switches})
            for name, v in state.items():
                self.assertTrue(v["session"]["plan_ready"], name)
                self.assertEqual(bool(v["session"]["groups"]), name in leaves,
                                 f"{name}: decision points only at the leaves")
            wait_until(lambda: all(v["emulated_cp"] for v in fn.agent_state().values()), 10,
                       "the emulated CP on every switch", 0.2)
            self._all_pairs_answer(fn)
            procs = list(fn.procs)
        self.assertTrue(all(p.poll() is not None for p in procs),
                        "controller or agent still running after teardown")

    def test_fattree_top_level_congestion_is_charged_at_the_culprits_leaf(self):
        """Fat-tree k=2 n=3, up links 10 Mb/s, down links 2.5: one host of pod 0 sends to a
        host of pod 1, so the queue of the top switch's down port is the bottleneck. The top
        switch's CP generates CNMs; the first switch back (a middle switch of pod 0) has no
        decision point and relays them; the culprit's leaf charges them to the up port the
        culprit left by (its decision point is equal-cost): that port's P falls and the group
        gets new weights. No switch above the leaves charges a CNM."""
        rates = LinkRates(host=10, local=10, glob=2.5, up=10, down=2.5, queue_pkts=50)
        duration = 12
        with FabricNet("fattree:k=2,n=3", rates, mode="controller", p_minimal=100,
                       agent_variant="combined") as fn:
            t(f"up, synced, agent ready {fn.timings}", self.t0)
            procs = list(fn.procs)
            fab = fn.fabric
            level = {fab.sw_short[sw["name"]]: sw["level"] for sw in fab.switches}
            pod = {fab.sw_short[sw["name"]]: sw["group"] for sw in fab.switches}
            src = next(h for h in fab.hosts if h["group"] == 0)
            dst = next(h for h in fab.hosts if h["group"] == 1)
            leaf = fab.sw_short[src["switch"]]
            (gid, buckets), = dump_groups(leaf).items()
            t(f"{src['name']} -> {dst['name']}, leaf {leaf} group {gid} {buckets}", self.t0)

            def by_switch(name):
                m = fn.agent_metrics(names=(name,))  # the family alone, as the sampler asks
                return {br: metric_sum(m, name, switch=br) for br in level}

            up_ports = {port for port, _ in buckets}

            def leaf_p():
                # The group is equal-cost (both up ports are minimal): each bucket follows its
                # own port's P, and a CNM is charged to the up port the culprit left by.
                return min(p["p_percent"] for p in fn.agent_state()[leaf]["session"]["ports"]
                           if p["port"] in up_ports)
            box = {}
            th = threading.Thread(target=lambda: box.update(files=traffic.run_iperf(
                fn, [(src["name"], dst["name"])], duration, fn.tmp / "iperf", streams=4)),
                daemon=True)
            th.start()
            deadline = duration + 5
            # 1. The top level's CP generates CNMs.
            wait_until(lambda: sum(v for br, v in by_switch(
                "fabricflow_agent_cnm_generated_total").items() if level[br] == 2) > 0,
                deadline, "CNMs generated by a top switch", 0.5)
            t("CNMs generated at the top level", self.t0)
            # 2. A middle switch of the source pod relays them.
            wait_until(lambda: sum(v for br, v in by_switch(
                "fabricflow_agent_cnm_relayed_total").items()
                if level[br] == 1 and pod[br] == 0) > 0,
                deadline, "CNMs relayed by a middle switch of pod 0", 0.5)
            t("CNMs relayed at the middle level", self.t0)
            # 3. The culprit's leaf charges them: P falls, the weights move.
            wait_until(lambda: by_switch("fabricflow_agent_cnm_received_total")[leaf] > 0,
                       deadline, f"CNMs charged at {leaf}", 0.5)
            wait_until(lambda: leaf_p() < 100
                       and [w for _, w in dump_groups(leaf)[gid]] != [w for _, w in buckets],
                       deadline, f"P of an up port of {leaf} falling and its group rewritten",
                       0.5)
            t(f"{leaf}: lowest up-port P {leaf_p():.1f}, weights {dump_groups(leaf)[gid]}",
              self.t0)
            self.assertEqual([p for p, _ in dump_groups(leaf)[gid]], [p for p, _ in buckets],
                             "a weight write changed the buckets")
            charged = by_switch("fabricflow_agent_cnm_received_total")
            self.assertEqual({br: v for br, v in charged.items() if level[br] > 0 and v},
                             {}, "CNMs charged above the leaves")
            spent = metric_sum(fn.agent_metrics(), "fabricflow_agent_cnm_dropped_total",
                               reason="relay_budget_spent")
            self.assertEqual(spent, 0, "a CNM spent its relay budget")
            th.join(duration + 30)
            self.assertFalse(th.is_alive(), "iperf3 did not finish")
        for p in procs:
            self.assertIsNotNone(p.poll(), f"{p.args[0]} still running after teardown")

    def one_host_on_global_link(self, overrides, done_when, duration=12):
        """Dragonfly(1,2,3): the host of the switch owning group 0's global link to group 1
        sends `-P 4` to a group-1 host for `duration` s, so that link's queue is congested and
        only this one host feeds it. Polls `done_when(metric)` (metric: name -> value at that
        port) while tracking the port's lowest P; returns (metric, lowest P, the flow's Mb/s,
        the agent's cp.min_sources)."""
        with FabricNet(SPEC, RATES, mode="controller", p_minimal=100, agent_variant="combined",
                       agent_overrides=overrides) as fn:
            t(f"up, synced, agent ready {fn.timings}", self.t0)
            procs = list(fn.procs)
            fab = fn.fabric
            with open(fn.tmp / "agent.toml", "rb") as f:
                min_sources = tomllib.load(f).get("cp", {}).get("min_sources", 1)
            owner, gport = global_link_0_to_1(fab)
            src = next(h["name"] for h in fab.hosts if h["switch"] == owner)
            dst = next(h["name"] for h in fab.hosts if h["group"] == 1)
            br = fab.sw_short[owner]

            def metric(name):
                return metric_sum(fn.agent_metrics(), name, switch=br, port=gport)

            def p_gport():
                return next(p["p_percent"] for p in fn.agent_state()[br]["session"]["ports"]
                            if p["port"] == gport)
            box = {}
            th = threading.Thread(target=lambda: box.update(files=traffic.run_iperf(
                fn, [(src, dst)], duration, fn.tmp / "iperf", streams=4)), daemon=True)
            th.start()
            p_min = 100.0

            def done():
                nonlocal p_min
                p_min = min(p_min, p_gport())
                return done_when(metric)
            wait_until(done, duration + 5, f"the condition on {br}:{gport}", 0.5)
            while th.is_alive():
                p_min = min(p_min, p_gport())
                th.join(0.5)
            samples, err = measure.parse_iperf(next(iter(box["files"].values())))
            self.assertIsNone(err)
            rate = sum(v for _, v in samples[1:]) / max(len(samples) - 1, 1)
            final = {n: metric(n) for n in ("fabricflow_agent_cp_cnms_total",
                                           "fabricflow_agent_cp_samples_few_sources_total")}
            final["all_cnms"] = metric_sum(fn.agent_metrics(),
                                           "fabricflow_agent_cnm_generated_total")
            t(f"min_sources {min_sources}: {final}, lowest P {p_min:.1f}, {rate:.2f} Mb/s",
              self.t0)
        for p in procs:
            self.assertIsNotNone(p.poll(), f"{p.args[0]} still running after teardown")
        return final, p_min, rate, min_sources

    def test_census_spares_a_link_one_host_fills(self):
        """The source census (cp.min_sources = 2, off in the shipped configuration):
        one host alone fills the owner's 2.5 Mb/s global link, so its queue is congested at
        every sample, yet the gate suppresses every CNM for that port and its P stays 100.
        Control, same traffic with the shipped gate off (min_sources = 1, 802.1Qau): CNMs for that port
        and P falls. The ADV+1 test below shows two hosts on one link do get CNMs."""
        few = "fabricflow_agent_cp_samples_few_sources_total"
        final, p_min, rate, n = self.one_host_on_global_link({"cp.min_sources": 2},
                                                             lambda m: m(few) >= 5)
        self.assertEqual(n, 2)
        self.assertEqual(final["fabricflow_agent_cp_cnms_total"], 0,
                         "CNMs generated for a link one host fills")
        self.assertEqual(final["all_cnms"], 0, "CNMs anywhere in the fabric")
        self.assertEqual(p_min, 100.0, "P of the spared port fell")
        # The link, not the census, limits the flow: near the 2.5 Mb/s global rate.
        self.assertGreater(rate, 0.7 * RATES.glob)

        final, p_min, _, n = self.one_host_on_global_link(
            {}, lambda m: m("fabricflow_agent_cp_cnms_total") > 0)
        self.assertEqual(n, 1)
        self.assertGreater(final["fabricflow_agent_cp_cnms_total"], 0)
        self.assertEqual(final[few], 0, "samples counted as spared with the gate off")
        self.assertLess(p_min, 100.0, "P did not react to the CNMs with the gate off")

    def test_adv1_qcnsw_combined_mechanism(self):
        with FabricNet(SPEC, RATES, mode="controller", p_minimal=100,
                       agent_variant="combined",
                       keep_logs=os.environ.get("FF_E2E_LOGS")) as fn:
            t(f"up, synced, agent ready {fn.timings}", self.t0)
            procs = list(fn.procs)
            fab = fn.fabric
            flows = traffic.flows(fab, "adv+1", 1)
            # Group 0's traffic goes to group 1: the switch owning the 0-1 global link
            # (`owner`, port `gport`) is its minimal path; the other switch of group 0 reaches
            # it over its local port `lport` (its minimal port towards group 1).
            owner, gport = global_link_0_to_1(fab)
            other = next(sw["name"] for sw in fab.switches
                         if sw["group"] == 0 and sw["name"] != owner)
            local = next(lk for lk in fab.links if {lk["a"], lk["b"]} == {owner, other})
            lport = local["a_port"] if local["a"] == other else local["b_port"]
            owner_br, other_br = fab.sw_short[owner], fab.sw_short[other]
            g_owner, g_other = 1000 + gport, 1000 + lport
            before = {owner_br: dump_groups(owner_br), other_br: dump_groups(other_br)}
            self.assertIn(g_owner, before[owner_br])
            self.assertIn(g_other, before[other_br])
            self.assertEqual(before[owner_br][g_owner][0][0], gport, "bucket 0 = minimal port")
            def p_of(br, port):
                for p in fn.agent_state()[br]["session"]["ports"]:
                    if p["port"] == port:
                        return p["p_percent"]
                return None
            acc = BucketAccumulator([(owner_br, g_owner), (other_br, g_other)], p_of,
                                    [(owner_br, gport), (other_br, lport)])
            t(f"owner {owner_br}:{gport} (group {g_owner}), other {other_br}:{lport} "
              f"(group {g_other})", self.t0)

            log_at = ovs_log_size()
            box = {}
            th = threading.Thread(target=lambda: box.update(files=traffic.run_iperf(
                fn, flows, DURATION, fn.tmp / "iperf", streams=4)), daemon=True)
            th.start()
            acc.start()
            deadline = DURATION + 5

            def metric(name, sw, **kw):
                return metric_sum(fn.agent_metrics(), name, switch=fab.sw_short[sw], **kw)

            # 1. CNMs generated at the owner of the congested global link, for that port.
            wait_until(lambda: metric("fabricflow_agent_cp_cnms_total", owner, port=gport) > 0,
                       deadline, f"CNMs generated on {owner_br}:{gport}", 0.5)
            t("CNMs generated at the congested global port", self.t0)
            # 2. ... and received by the other source switch's agent over the fabric.
            wait_until(lambda: metric("fabricflow_agent_cnm_received_total", other) > 0,
                       deadline, f"CNMs received by {other_br}", 0.5)
            t("CNMs received at the other source switch", self.t0)
            # ... through the veth, not OpenFlow (the harness's controller cnm_to_agent =
            # "interface"): the owner's agent wrote them on its port towards the other switch,
            # whose OVS dropped them at classify and whose agent read them from that port.
            self.assertGreater(metric("fabricflow_agent_cnm_sent_interface_total", owner), 0)
            self.assertGreater(metric("fabricflow_agent_cnm_read_interface_total", other), 0)
            actions, packets = cnm_rule(other_br, lport)
            self.assertEqual(actions, "drop", f"{other_br}:{lport}'s CNM rule")
            self.assertGreater(packets, 0, f"CNMs arriving at {other_br}:{lport} in OVS")

            # 3. P of the minimal ports falls (agent state).
            wait_until(lambda: acc.p_min[(owner_br, gport)] < 90
                       and acc.p_min[(other_br, lport)] < 99,
                       deadline, "P of the minimal ports falling (< 90 at the owner, < 99 at "
                       "the other switch)", 0.5)
            t(f"lowest P so far {owner_br}:{gport} = {acc.p_min[(owner_br, gport)]:.1f}, "
              f"{other_br}:{lport} = {acc.p_min[(other_br, lport)]:.1f}", self.t0)

            # 4. New weights, same buckets.
            lowered, changed = set(), []

            def reweighted(br, gid):
                now = dump_groups(br)[gid]
                old = before[br][gid]
                if [p for p, _ in now] != [p for p, _ in old]:
                    changed.append((br, gid, old, now))
                if now[0][1] < old[0][1]:
                    lowered.add(br)
                return {owner_br, other_br} <= lowered or changed
            wait_until(lambda: reweighted(owner_br, g_owner) or reweighted(other_br, g_other),
                       deadline, "bucket 0 weight lowered on both decision points", 0.2)
            self.assertEqual(changed, [], "a weight write changed the buckets")
            t(f"weights {owner_br}: {dump_groups(owner_br)[g_owner]}", self.t0)

            # 5. Non-minimal buckets count packets, and keep counting.  OVS resets a group's
            # counters on every MODIFY, so the sampler accumulates (a drop = a reset).
            def non_minimal():
                return {owner_br: acc.total(owner_br, g_owner),
                        other_br: acc.total(other_br, g_other)}
            # Summed over both decision points: the other switch's P often falls only a little
            # (its minimal port is a 10 Mb/s local link), so its share can stay small.
            try:
                wait_until(lambda: sum(non_minimal().values()) >= 10, deadline,
                           "non-minimal buckets counting packets", 0.5)
                mid = sum(non_minimal().values())
                wait_until(lambda: sum(non_minimal().values()) > mid, deadline,
                           "non-minimal bucket counters growing", 0.5)
            except TimeoutError as e:
                raise AssertionError(f"{e}: {non_minimal()}") from None
            t(f"non-minimal bucket packets so far {non_minimal()}", self.t0)

            th.join(DURATION + 60)
            acc.stop()
            self.assertFalse(th.is_alive(), "iperf3 did not finish")
            # iperf3 itself occasionally loses a control connection under this much congestion
            # ("the client has unexpectedly closed the connection"); that says nothing about
            # QCN-SW, so one such flow is logged and left out, and the floor scales with the
            # flows that reported.  More than one is a failure.
            aggr = 0.0
            errors = []
            files = list(box["files"].values())
            for path in files:
                samples, err = measure.parse_iperf(path)
                if err is not None:
                    errors.append(err)
                    continue
                vals = [v for tt, v in samples if 1.0 < tt <= DURATION + 0.5]
                aggr += sum(vals) / len(vals) if vals else 0.0
            if errors:
                t(f"iperf3 errors (flows left out): {errors}", self.t0)
            self.assertLessEqual(len(errors), 1, f"iperf3: {errors}")
            reported = (len(files) - len(errors)) / max(len(files), 1)
            t(f"traffic done: aggregate {aggr:.1f} Mb/s (minimal routing: at most "
              f"{MINIMAL_CEILING:.1f})", self.t0)
            self.assertEqual(ovs_send_errors_since(log_at), 0,
                             "ovs-vswitchd dropped frames it could not send (its log): "
                             "run scripts/ovs-start.sh")
            m = fn.agent_metrics()
            t(f"CNMs generated {metric_sum(m, 'fabricflow_agent_cnm_generated_total'):.0f}, "
              f"received {metric_sum(m, 'fabricflow_agent_cnm_received_total'):.0f}, "
              f"group MODs {metric_sum(m, 'fabricflow_agent_group_mods_total'):.0f}", self.t0)
            # A refused GROUP_MOD makes the agent re-read the plan (designed recovery). One CI
            # run on a saturated machine saw 9 of ~1 400 refused (cause not captured; none in
            # other runs): tolerate up to 1 % and name them, so a systematic refusal still fails
            # and the next occurrence is diagnosable.
            mods = metric_sum(m, "fabricflow_agent_group_mods_total")
            refused = metric_sum(m, "fabricflow_agent_group_mod_errors_total")
            if refused:
                lines = [ln for ln in (fn.tmp / "agent.log").read_text(errors="replace")
                         .splitlines() if "GROUP_MOD refused" in ln]
                t(f"GROUP_MOD refused {refused:.0f} of {mods:.0f}: {lines[:5]}", self.t0)
            self.assertLessEqual(refused, max(3.0, 0.01 * mods),
                                 "GROUP_MODs refused (see the agent log lines above)")
            # Every MODIFY carried a P that the policy moved: its events say so on /metrics.
            events = fn.agent_policy_events()
            t(f"policy events {events}", self.t0)
            self.assertGreater(events.get("decrease", 0), 0, "no cut counted")
            self.assertGreater(events.get("increase", 0), 0, "no rise counted")

            # 6. Without traffic every P climbs back to 100 (idle increase timer).
            def all_recovered():
                return all(p["p_percent"] >= 99.999 for v in fn.agent_state().values()
                           for p in v["session"]["ports"])
            # One 20-point step per 600 ms idle period (agent-emulated.toml): ~3 s from the floor.
            wait_until(all_recovered, 90, "every P back to 100 after the traffic", 0.5)
            t("every P back to 100", self.t0)
            # Beats minimal routing (see the module docstring): above its ceiling by 20 %.
            self.assertGreater(aggr, 1.2 * MINIMAL_CEILING * reported,
                               "QCN-SW does not beat what minimal routing can carry")
        for p in procs:
            self.assertIsNotNone(p.poll(), f"{p.args[0]} still running after teardown")


if __name__ == "__main__":
    unittest.main(verbosity=2)
