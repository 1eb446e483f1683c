"""Traffic patterns as the harness runs them: the controller's registry (`fabricflow-controller
traffic`) and their throughput optimum (`fabricflow-controller bound`), and the harness's data
(mode registry, TOML configs, summary.json). No root, no Mininet start; needs the release
controller (or FABRICFLOW_BIN_DIR)."""

import contextlib
import io
import os
import sys
import tempfile
import time
import tomllib
import unittest
from collections import Counter
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mininet"))

import fftoml  # noqa: E402
import fftopo  # noqa: E402
import matrix  # noqa: E402
import measure  # noqa: E402
import modes  # noqa: E402
import run  # noqa: E402
import traffic  # noqa: E402
from fflaunch import FabricNet, parse_prometheus  # noqa: E402
from fftopo import LinkRates  # noqa: E402
from results import ModeResult, RunResult, Summary  # noqa: E402


class Patterns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.df = fftopo.Fabric.load("dragonfly:p=2,a=2,h=2")  # 5 groups of 4 hosts
        cls.grp = {h["name"]: h["group"] for h in cls.df.hosts}

    def test_uniform_is_a_derangement_and_seeded(self):
        fl = traffic.flows(self.df, "uniform", 3)
        self.assertEqual(sorted(s for s, _ in fl), sorted(self.grp))
        self.assertEqual(sorted(d for _, d in fl), sorted(self.grp))
        self.assertTrue(all(s != d for s, d in fl))
        self.assertEqual(fl, traffic.flows(self.df, "uniform", 3))
        self.assertNotEqual(fl, traffic.flows(self.df, "uniform", 4))

    def test_adv_k_targets_group_plus_k_bijectively(self):
        for k in (1, 2):
            fl = traffic.flows(self.df, f"adv+{k}", 1)
            self.assertEqual(len(fl), len(self.grp))
            for s, d in fl:
                self.assertEqual(self.grp[d], (self.grp[s] + k) % 5)
            self.assertEqual(max(Counter(d for _, d in fl).values()), 1)
        with self.assertRaisesRegex(ValueError, "multiple of the fabric's 5"):
            traffic.flows(self.df, "adv+5", 1)

    def test_hotspot(self):
        for name, contributors in (("hotspot", 4), ("hotspot:3", 3)):
            fl = traffic.flows(self.df, name, 2)
            hot, n = Counter(d for _, d in fl).most_common(1)[0]
            self.assertEqual(n, contributors)
            self.assertTrue(all(self.grp[s] != self.grp[hot] for s, d in fl if d == hot))
            self.assertTrue(all(s != d and s != hot for s, d in fl))
            # Everyone but the hot host sends once; the rest receive at most once.
            self.assertEqual(len(fl), len(self.grp) - 1)
            self.assertEqual(max(c for h, c in Counter(d for _, d in fl).items() if h != hot), 1)

    def test_unknown_pattern_is_refused_with_the_registrys_message(self):
        for bad in ("foo", "adv+0", "hotspot:0"):
            with self.assertRaisesRegex(ValueError, "expected uniform, adv"):
                traffic.flows(self.df, bad, 1)

    def test_bound_of_adv1_on_dragonfly_2_2_1_is_the_hand_checked_optimum(self):
        # controller/src/bound/tests.rs explains 22.5: each group's minimal global link at 5,
        # plus 2.5 diverted over two reverse directions that two groups share.
        b = traffic.bound("dragonfly:p=2,a=2,h=1", "adv+1", 1, LinkRates(5, 5, 5, 5, 5))
        self.assertEqual(set(b), set(traffic.BOUND_ROUTINGS))
        for routing, want in (("any", 22.5), ("minimal", 15.0), ("valiant", 7.5),
                              ("adaptive", 22.5)):
            self.assertAlmostEqual(b[routing]["max_aggregate_mbps"], want, places=3)
        self.assertAlmostEqual(b["any"]["lambda"], 0.375, places=4)
        with self.assertRaisesRegex(ValueError, "expected uniform, adv"):
            traffic.bound("dragonfly:p=2,a=2,h=1", "adv+0", 1, LinkRates())
        with self.assertRaisesRegex(ValueError, "global links: rate 0"):
            traffic.bound("dragonfly:p=2,a=2,h=1", "adv+1", 1, LinkRates(glob=0))

    def test_short_names_fit_interfaces(self):
        big = fftopo.Fabric.load("dragonfly:p=2,a=4,h=2")
        for name in list(big.sw_short.values()) + list(big.host_short.values()):
            self.assertLessEqual(len(name) + len("-eth99"), 15, name)
        self.assertEqual(len(set(big.sw_short.values())), len(big.switches))


# A file fabric with free names: two groups of two switches and a transit switch without hosts.
FILE_FABRIC = """switches:
  - {name: a, dpid: 0x1}
  - {name: b, dpid: 0x2}
  - {name: c, dpid: 0x3, group: 1}
  - {name: d, dpid: 0x4, group: 1}
  - {name: x, dpid: 0x5, group: 2}
links:
  - [a:3, b:3]
  - [c:3, d:3]
  - [a:4, c:4]
  - [b:4, x:1]
  - [d:4, x:2]
hosts:
  - {at: "a:1"}
  - {at: "b:1"}
  - {at: "c:1"}
  - {at: "d:1"}
"""


class Fabrics(unittest.TestCase):
    """Every kind of fabric the controller plans becomes a Mininet topology (no Mininet start)."""

    def specs(self, tmp):
        path = Path(tmp) / "fabric.yaml"
        path.write_text(FILE_FABRIC)
        return ["dragonfly:p=1,a=3,h=1", "fattree:k=4,n=2", "fattree:k=2,n=3",
                "fattree:k=4,n=3", f"file:{path}"]

    def test_short_names_are_unique_and_ours_and_every_link_has_rates(self):
        rates = LinkRates(host=1, local=2, glob=3, up=4, down=5)
        with tempfile.TemporaryDirectory() as tmp:
            for spec in self.specs(tmp):
                fab = fftopo.Fabric.load(spec)
                sws, hosts = list(fab.sw_short.values()), list(fab.host_short.values())
                self.assertEqual(len(set(sws)), len(fab.switches), spec)
                self.assertEqual(len(set(hosts)), len(fab.hosts), spec)
                for name in sws:
                    # Cleanup finds exactly what the harness creates.
                    self.assertRegex(name, fftopo.SWITCH_RE, spec)
                    self.assertRegex(f"{name}-eth12", fftopo.INTF_RE, spec)
                for name in hosts:
                    self.assertRegex(name, fftopo.HOST_RE, spec)
                    self.assertRegex(f"{name}-eth0", fftopo.INTF_RE, spec)
                for link in fab.links:
                    self.assertTrue(all(fftopo.link_bws(link, rates)), spec)
        self.assertEqual(fab.sw_short["x"], "s2x0")
        self.assertEqual(fab.host_short["c-1"], "h1x0x1")

    def test_a_queue_keeps_its_octets_whatever_the_mtu(self):
        self.assertEqual(fftopo.queue_qdisc(50, fftopo.STANDARD_MTU), "pfifo limit 50")
        self.assertEqual(fftopo.queue_qdisc(50, 9000), "bfifo limit 75700")
        # What the agent is told a port buffers matches the queue in both cases.
        ports = fftopo.port_links(fftopo.Fabric.load("dragonfly:p=1,a=2,h=1"),
                                  LinkRates(queue_pkts=50, mtu=9000))
        self.assertEqual({e["buffer_bytes"] for v in ports.values() for e in v}, {75700})

    def test_the_static_replan_keeps_every_hosts_address(self):
        # replan_without writes the fabric as a file fabric; upper fat-tree levels must not
        # collide with the leaves' (group, index). Programming is not what is tested here.
        for spec in ("fattree:k=2,n=3", "fattree:k=4,n=2", "dragonfly:p=1,a=3,h=1"):
            fn = FabricNet(spec)
            link = fn.fabric.links[0]
            with mock.patch.object(fn, "program_static") as program:
                path = fn.replan_without([(link["a"], link["a_port"])])
            program.assert_called_once_with(f"file:{path}")
            fn._tmp.cleanup()


class Toml(unittest.TestCase):
    def test_round_trip(self):
        doc = {"fabric": "dragonfly:p=1,a=2,h=1", "p": 5.0, "n": 15, "on": False, "tiny": 1e-06,
               "list": [1, 2], "policy": {"variant": "combined", 'odd "key"': "a\\b\n"},
               "runtime": {"emulated_cp": {"enabled": True}},
               "switch": [{"name": "s0x0", "target": "unix:/x"}, {"name": "s0x1"}]}
        self.assertEqual(tomllib.loads(fftoml.dumps(doc)), doc)

    def test_sets_parse_toml_values_and_nest(self):
        sets = fftoml.parse_sets("cp.min_sources=1, policy.gd=0.000001,"
                                 "policy.fbcomp_reference=fabric-average,"
                                 "runtime.emulated_cp.enabled=false")
        self.assertEqual(sets, {"cp.min_sources": 1, "policy.gd": 1e-06,
                                "policy.fbcomp_reference": "fabric-average",
                                "runtime.emulated_cp.enabled": False})
        doc = fftoml.with_sets({"cp": {"w": 2.0}}, sets)
        self.assertEqual(doc["runtime"]["emulated_cp"]["enabled"], False)
        self.assertEqual(doc["cp"], {"w": 2.0, "min_sources": 1})
        with self.assertRaises(ValueError):
            fftoml.parse_sets("novalue")


class Modes(unittest.TestCase):
    def net(self, mode, rates=None, **kw):
        """A FabricNet that is never entered (configs only); its temporary directory goes."""
        fn = FabricNet.for_mode("dragonfly:p=1,a=2,h=1", rates or LinkRates(), mode, **kw)
        self.addCleanup(fn._tmp.cleanup)
        return fn

    def test_every_mode_is_consistent_and_named_by_its_key(self):
        for name, m in modes.MODES.items():
            self.assertEqual(m.name, name)
            # An agent needs the controller; the controller without an agent is named so.
            if m.program == "static":
                self.assertIsNone(m.agent_variant, name)
            else:
                self.assertTrue(m.agent_variant is not None or name.endswith("-controller"), name)
        with self.assertRaises(KeyError):
            modes.lookup("qcnsw")
        self.assertEqual(modes.lookup("minimal", "controller").program, "controller")
        with self.assertRaises(ValueError):
            modes.Mode("x", "agent keys without agent", agent={"cp.w": 1})

    def test_a_modes_agent_settings_reach_the_config_in_layer_order(self):
        m = modes.lookup("qcnsw-combined-census")
        rates = LinkRates(host=10, local=5, glob=2.5, queue_pkts=60)
        fn = self.net(m, rates, agent_overrides={"policy.gd": 0.5})
        with mock.patch.dict(os.environ, {"FF_AGENT_SET": "cp.w=3,policy.gd=0.25"}):
            doc = fn.agent_config_doc(["s0x0"])
        self.assertEqual(doc["policy"]["variant"], "combined")
        self.assertEqual(doc["cp"]["min_sources"], 3)                 # the mode's
        self.assertEqual(doc["cp"]["w"], 3)                           # environment
        self.assertEqual(doc["policy"]["gd"], 0.5)                    # overrides last
        # The harness states each port's shaping and queue; no constant is derived per fabric.
        self.assertNotIn("qeq_buffer_fraction", doc["cp"])
        (sw,) = doc["switch"]
        self.assertEqual(sw["target"], "unix:/var/run/openvswitch/s0x0.mgmt")
        rates_by_port = {p["port"]: p["rate_mbps"] for p in sw["ports"]}
        self.assertEqual(sorted(set(rates_by_port.values())), [2.5, 5.0, 10.0])
        self.assertEqual({p["buffer_bytes"] for p in sw["ports"]}, {60 * 1514})
        self.assertEqual(tomllib.loads(fftoml.dumps(doc)), doc)
        plain = self.net(modes.lookup("qcnsw-combined")).agent_config_doc([])
        self.assertNotIn("min_sources", plain.get("cp", {}))          # the shipped default
        ctl = self.net(modes.lookup("valiant", "controller")).controller_config_doc()
        self.assertEqual((ctl["p_minimal_percent"], ctl["lldp_missing_periods"]), (0.0, 15))

    def test_the_slowest_clock_probe_states_buffers_in_the_slowest_ports_time(self):
        rates = LinkRates(host=10, local=5, glob=2.5, queue_pkts=50)
        doc = self.net(modes.lookup("qcnsw-combined-drainmatch"), rates).agent_config_doc(
            ["s0x0"])
        drain_s = {p["buffer_bytes"] * 8 / (p["rate_mbps"] * 1e6)
                   for p in doc["switch"][0]["ports"]}
        self.assertEqual({round(d, 4) for d in drain_s}, {round(50 * 1514 * 8 / 2.5e6, 4)})
        plain = self.net(modes.lookup("qcnsw-combined"), rates).agent_config_doc(["s0x0"])
        self.assertEqual({p["buffer_bytes"] for p in plain["switch"][0]["ports"]}, {50 * 1514})
        with self.assertRaises(ValueError):
            modes.Mode("x", "a clock without an agent", slowest_clock_buffers=True)

    def test_each_mode_has_the_ceiling_of_its_paths(self):
        self.assertEqual(modes.lookup("minimal").ceiling(), "minimal")
        self.assertEqual(modes.lookup("valiant", "controller").ceiling(), "valiant")
        for name in modes.MODES:
            if name.startswith("qcnsw"):
                self.assertEqual(modes.lookup(name).ceiling(), "adaptive", name)
            self.assertIn(modes.lookup(name).ceiling(), traffic.BOUND_ROUTINGS)


class Summaries(unittest.TestCase):
    def test_summary_json_keeps_the_keys_tests_and_plots_read(self):
        result = RunResult(
            mode="minimal", rep=0, seed=1, flows=[("a", "b"), ("b", "a")],
            per_flow_mbps={"a->b": 2.0, "b->a": 4.0}, agg_series=[(1, 6.0)], errors={},
            timings={"up_s": 1.0}, cnms_generated=None, group_modifies=None,
            ovs_send_error_lines=0, group0_switches=["g0s0"],
            group0_accepted_mbps={"g0s0": 1.23456}, group0_global_tx_mbytes={"g0s0:3": 1.0},
            p_samples=[], group0_p_median={}, csv="x.csv", p_csv=None,
            settings={"controller": None, "agent": None, "env": {}})
        mode = ModeResult("minimal", modes.lookup("minimal").as_dict(), [result])
        s = Summary("dragonfly:p=1,a=2,h=1", "uniform", 8, 1.0, 1, 1, 4, "cubic",
                    LinkRates().as_dict(), {"minimal": mode}).to_json()
        m = s["modes"]["minimal"]
        for k in ("aggregate_mbps", "flow_min_mbps", "flow_median_mbps", "flow_max_mbps", "jain",
                  "flows", "runs", "cnms_generated", "group_modifies", "group0_accepted_mbps",
                  "group0_global_tx_mbytes", "group0_p_median", "settings"):
            self.assertIn(k, m)
        self.assertEqual((m["aggregate_mbps"], m["flows"]), (6.0, 2))
        self.assertEqual(m["runs"][0]["errors"], {})
        self.assertEqual(m["runs"][0]["ovs_send_error_lines"], 0)
        self.assertEqual(m["settings"]["mode"]["p_minimal"], 100)
        self.assertEqual(list(s)[:9], ["topology", "traffic", "duration_s", "warmup_s", "seed",
                                       "repeat", "streams_per_flow", "tcp_cc", "link_rates_mbps"])
        # Without a bound the comparison is absent, not zero.
        self.assertIsNone(m["fraction_of_optimum"])
        self.assertIsNone(s["optimum_mbps"])

    def test_mode_summary_carries_the_congestion_points_counters(self):
        def one(rep, counters):
            return RunResult(
                mode="qcnsw-combined", rep=rep, seed=rep + 1, flows=[("a", "b")],
                per_flow_mbps={"a->b": 1.0}, agg_series=[], errors={}, timings={},
                cnms_generated=None, group_modifies=None, ovs_send_error_lines=None,
                group0_switches=[], group0_accepted_mbps={}, group0_global_tx_mbytes={},
                p_samples=[], group0_p_median={}, csv="x.csv", p_csv=None, settings={},
                cp_counters=counters)
        definition = modes.lookup("qcnsw-combined").as_dict()
        runs = [one(0, {"cnms": 10, "samples_drop_scaled": 4}),
                one(1, {"cnms": 30, "samples_drop_scaled": 0}),
                one(2, {"cnms": 20, "samples_drop_scaled": 9})]
        m = ModeResult("qcnsw-combined", definition, runs).to_json()
        self.assertEqual(m["cp_counters"], {"cnms": 20, "samples_drop_scaled": 4})
        self.assertEqual(m["runs"][1]["cp_counters"]["cnms"], 30)
        self.assertIsNone(ModeResult("qcnsw-combined", definition,
                                     [one(0, None)]).to_json()["cp_counters"])

    def test_cp_counters_sum_every_port_of_every_switch_from_metrics(self):
        fn = FabricNet.__new__(FabricNet)
        text = ("# TYPE fabricflow_agent_cp_cnms counter\n"
                'fabricflow_agent_cp_cnms_total{switch="s0",port="6",interface="s0-eth6"} 11\n'
                'fabricflow_agent_cp_cnms_total{switch="s1",port="2",interface="s1-eth2"} 4\n'
                'fabricflow_agent_cp_samples_drop_scaled_total{switch="s0",port="6"} 17\n'
                'fabricflow_agent_cnm_generated_total{switch="s0"} 99\n')
        fn._agent_metrics_or_none = lambda: parse_prometheus(text)
        self.assertEqual(fn.agent_cp_counters(), {"cnms": 15, "samples_drop_scaled": 17})
        fn._agent_metrics_or_none = lambda: None
        self.assertIsNone(fn.agent_cp_counters())

    def test_summary_compares_each_run_with_the_optimum_and_its_modes_ceiling(self):
        bound = {"any": {"max_aggregate_mbps": 12.0}, "minimal": {"max_aggregate_mbps": 8.0}}

        def one(rep, seed, mbps):
            return RunResult(
                mode="minimal", rep=rep, seed=seed, flows=[("a", "b")],
                per_flow_mbps={"a->b": mbps}, agg_series=[], errors={}, timings={},
                cnms_generated=None, group_modifies=None, ovs_send_error_lines=None,
                group0_switches=[], group0_accepted_mbps={}, group0_global_tx_mbytes={},
                p_samples=[], group0_p_median={}, csv="x.csv", p_csv=None, settings={},
                bound=bound, ceiling_routing=modes.lookup("minimal").ceiling())
        mode = ModeResult("minimal", modes.lookup("minimal").as_dict(),
                          [one(0, 1, 6.0), one(1, 2, 4.0), one(2, 3, 8.0)])
        s = Summary("dragonfly:p=1,a=2,h=1", "adv+1", 8, 1.0, 1, 3, 4, "cubic",
                    LinkRates().as_dict(), {"minimal": mode},
                    bounds={1: bound, 2: bound, 3: None}).to_json()
        self.assertEqual(s["optimum_mbps"], 12.0)
        self.assertEqual(s["bounds"]["3"], None)
        m = s["modes"]["minimal"]
        self.assertEqual((m["optimum_mbps"], m["fraction_of_optimum"]), (12.0, 0.5))
        self.assertEqual((m["ceiling_routing"], m["ceiling_mbps"], m["fraction_of_ceiling"]),
                         ("minimal", 8.0, 0.75))
        self.assertEqual(m["runs"][1]["fraction_of_optimum"], round(4 / 12, 4))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            run.print_table(s)
        self.assertIn("optimum of seed 1's flows (any routing, fabricflow-controller bound): "
                      "12.00 Mb/s", out.getvalue())
        self.assertIn("minimal 8.00", out.getvalue())

    def test_iperf3_clients_wait_for_go_then_run_at_the_lowest_priority(self):
        cmd = traffic.client_shell("/tmp/x/go", "-c 10.0.0.1 -p 5301")
        wait, _, run = cmd.partition("; done; ")
        self.assertIn("while [ ! -e /tmp/x/go ]", wait)
        self.assertEqual(run, "exec nice -n 19 iperf3 -c 10.0.0.1 -p 5301")

    def test_a_host_process_is_moved_into_the_traffic_cgroup_by_its_pid(self):
        class Popen:
            pid = 4242
        with tempfile.TemporaryDirectory() as d:
            procs = Path(d) / "cgroup.procs"
            p = Popen()
            self.assertIs(traffic.into_traffic_cgroup(procs, p), p)
            self.assertEqual(procs.read_text(), "4242")
            # Without a cgroup nothing is written and the process is returned as it is.
            self.assertIs(traffic.into_traffic_cgroup(None, p), p)
            # A cgroup that refuses the write (the process gone) is not an error.
            self.assertIs(traffic.into_traffic_cgroup(Path(d) / "no" / "procs", p), p)

    def test_ports_carrying_counts_data_ports_not_control_or_acks(self):
        # Two data ports, an ACK port (3 % of a data port's bytes), an LLDP-only port.
        tx = {"a:1": 6.4, "a:2": 2.2, "b:1": 0.19, "b:2": 0.001, "c:1": None}
        self.assertEqual(measure.ports_carrying(tx), 2)
        self.assertEqual(measure.ports_carrying(tx, share=0.02), 3)
        self.assertIsNone(measure.ports_carrying({"a:1": None}))
        self.assertIsNone(measure.ports_carrying({"a:1": 0.0}))
        result = RunResult(
            mode="drb", rep=0, seed=1, flows=[], per_flow_mbps={"a->b": 1.0}, agg_series=[],
            errors={}, timings={}, cnms_generated=None, group_modifies=None,
            ovs_send_error_lines=None, group0_switches=[], group0_accepted_mbps={},
            group0_global_tx_mbytes={}, p_samples=[], group0_p_median={}, csv="x.csv",
            p_csv=None, settings={}, fabric_tx_mbytes=tx)
        self.assertEqual(result.to_json()["fabric_ports_carrying"], 2)
        self.assertEqual(result.to_json()["fabric_tx_mbytes"], tx)

    def test_cpu_meter_reads_threads_by_kind_and_the_machine(self):
        meter = measure.CpuMeter(mock.Mock(procs=[]))
        # Meter this very process as if it were ovs-vswitchd (its threads named as python's).
        meter.pids = {"ovs-vswitchd": [os.getpid()]}
        meter._threads_start = meter._read_threads()
        meter._machine_start = meter._machine()
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        threads = meter.thread_percent()
        self.assertGreater(sum(threads.values()), 0.0, threads)
        self.assertTrue(all(not k[-1:].isdigit() for k in threads), threads)
        machine = meter.machine_percent()
        self.assertGreater(machine["machine"], 0.0)
        self.assertLessEqual(machine["machine"], 100.0 * (os.cpu_count() or 1) + 1.0)
        self.assertLessEqual(machine["machine/softirq"], machine["machine"])

    def test_ramp_is_the_first_second_at_the_windows_level(self):
        # Window (5, 10]: median 100, so the ramp ends at the first second ≥ 90.
        series = [(1, 10.0), (2, 40.0), (3, 95.0), (4, 80.0), (5, 91.0), (6, 100.0),
                  (7, 100.0), (8, 98.0), (9, 120.0), (10, 101.0), (11, 5.0)]
        self.assertEqual(measure.ramp_s(series, 5, 10), 3)
        self.assertEqual(measure.ramp_s(series, 5, 10, share=1.0), 6)
        self.assertIsNone(measure.ramp_s(series, 20, 30))
        self.assertIsNone(measure.ramp_s([(6, 0.0), (7, 0.0)], 5, 10))
        # In the summary: per run and the median over the runs.
        runs = [RunResult(
            mode="minimal", rep=k, seed=1 + k, flows=[("a", "b")], per_flow_mbps={"a->b": 1.0},
            agg_series=[], errors={}, timings={}, cnms_generated=None, group_modifies=None,
            ovs_send_error_lines=None, group0_switches=[], group0_accepted_mbps={},
            group0_global_tx_mbytes={}, p_samples=[], group0_p_median={}, csv="x.csv",
            p_csv=None, settings={}, ramp_s=r) for k, r in enumerate([3, None, 9, 4])]
        m = ModeResult("minimal", modes.lookup("minimal").as_dict(), runs).to_json()
        self.assertEqual((m["ramp_s"], m["runs"][1]["ramp_s"]), (4, None))


if __name__ == "__main__":
    unittest.main(verbosity=2)


class Matrix(unittest.TestCase):
    def test_adv_h_follows_each_dragonfly_and_rates_parse(self):
        self.assertEqual(matrix.traffic_for("dragonfly:p=2,a=4,h=2", "adv+h"), "adv+2")
        self.assertEqual(matrix.traffic_for("dragonfly:p=1,a=2,h=3", "adv+h"), "adv+3")
        self.assertEqual(matrix.traffic_for("fattree:k=4,n=2", "uniform"), "uniform")
        with self.assertRaisesRegex(ValueError, "needs a Dragonfly"):
            matrix.traffic_for("fattree:k=4,n=2", "adv+h")
        self.assertEqual(matrix.parse_rates("10/2.5"), (10.0, 2.5))
        for bad in ("10", "10/x", "0/1", "5/-1"):
            with self.assertRaises(ValueError):
                matrix.parse_rates(bad)

    def test_table_rates_each_mode_against_minimal_and_the_better_baseline(self):
        cells = [
            {"fabric": "dragonfly:p=1,a=2,h=3", "traffic": "adv+1", "rates": "10/2.5",
             "summary": {"optimum_mbps": 61.25, "modes": {
                 "minimal": {"aggregate_mbps": 17.5, "fraction_of_optimum": 0.286,
                             "runs_mbps": {"1": 17.5, "2": 18.0, "3": 16.0}},
                 "valiant": {"aggregate_mbps": 35.0, "fraction_of_optimum": 0.571,
                             "runs_mbps": {"1": 35.0, "2": 30.0, "3": 40.0}},
                 "qcnsw-combined": {"aggregate_mbps": 42.0, "fraction_of_optimum": 0.686,
                                    "runs_mbps": {"1": 42.0, "2": 39.0, "3": 44.0},
                                    "ramp_s": 7, "iperf3_failed_seeds": [2, 3]}}}},
            {"fabric": "fattree:k=4,n=2", "traffic": "adv+h", "rates": "5/5",
             "error": "ValueError: adv+h needs a Dragonfly, not fattree:k=4,n=2"},
        ]
        rows = matrix.cell_rows(cells[0])
        q = next(r for r in rows if r[0] == "qcnsw-combined")
        self.assertAlmostEqual(q[3], 42.0 / 17.5)
        self.assertAlmostEqual(q[4], 42.0 / 35.0)
        # Paired: each seed against its own better baseline (1.2, 1.3, 1.1), then the median.
        self.assertAlmostEqual(q[5], 1.2)
        self.assertEqual(q[6], 7)
        text = matrix.table(cells)
        self.assertIn("| dragonfly:p=1,a=2,h=3 | adv+1 | 10/2.5 | 61.25 | qcnsw-combined | 42.00 "
                      "| 0.686 | 2.400 | 1.200 | 1.200 | 7 | iperf3 sessions failed in seed 2, 3 |",
                      text)
        self.assertIn("| dragonfly:p=1,a=2,h=3 | adv+1 | 10/2.5 | 61.25 | minimal | 17.50 "
                      "| 0.286 | 1.000 | 0.500 | 0.500 | - |  |", text)
        self.assertIn("| fattree:k=4,n=2 | adv+h | 5/5 | - | - | - | - | - | - | - | - | ValueError: "
                      "adv+h needs a Dragonfly", text)

    def test_paired_ratio_sets_each_seed_against_its_own_baseline(self):
        # Ratio of medians 1.0 (10 / 10), but every seed lost 10 % against its own baseline.
        runs = {1: 9.0, 2: 18.0, 3: 10.0 * 0.9}
        minimal = {1: 10.0, 2: 20.0, 3: 10.0}
        self.assertAlmostEqual(matrix.paired_ratio(runs, [minimal, {}]), 0.9)
        # The better baseline per seed; a seed without any baseline is left out.
        self.assertAlmostEqual(matrix.paired_ratio({1: 12.0, 4: 1.0}, [{1: 10.0}, {1: 8.0}]), 1.2)
        self.assertIsNone(matrix.paired_ratio({5: 1.0}, [{1: 10.0}, {}]))
        self.assertIsNone(matrix.paired_ratio({}, [minimal]))
        mode = {"aggregate_mbps": 9.0, "ramp_s": 4,
                "runs": [{"seed": 1, "aggregate_mbps": 9.0, "errors": {"a->b": "closed"}},
                         {"seed": 2, "aggregate_mbps": 18.0, "errors": {}}]}
        self.assertEqual(matrix.mode_summary(mode)["runs_mbps"], {"1": 9.0, "2": 18.0})
        self.assertEqual(matrix.mode_summary(mode)["iperf3_failed_seeds"], [1])
        self.assertEqual(matrix.mode_summary(mode)["ramp_s"], 4)

    def test_dry_run_lists_every_cell(self):
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()) as o:
            cells = matrix.main(["--out", d, "--dry-run"])
        self.assertEqual(cells, [])
        n = len(matrix.DEFAULT_FABRICS) * len(matrix.DEFAULT_TRAFFIC) * len(matrix.DEFAULT_RATES)
        self.assertIn(f"cell {n}/{n}:", o.getvalue())

