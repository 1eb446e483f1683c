"""Issue 19 end-to-end: dFtree's slow lane on Open vSwitch (Mininet, userspace datapath).

Run with tests/run-e2e.sh (root).  fattree:k=2,n=3 (4 leaves of 2 hosts), host links 10 Mb/s,
fabric links 40 Mb/s, pfifo queues of 50 packets; every switch-side interface gets the
two-band strict-priority qdisc that classifies the slow lane's DSCP (fftopo.apply_lanes) where
the kernel has one.  Two UDP contributors at line rate, on two other leaves, converge on host 0
(20 Mb/s into its 10 Mb/s link: the hot spot); one TCP victim runs from a contributor's leaf to
host 0's neighbour, through the same leaf uplinks and into the hot spot's leaf.

The live loop is the project's own: `fabricflow-agent port-stats` samples every port's egress
backlog time and drops each sweep (0.5 s) and `fabricflow-controller dftree-watch` runs the
controller's detection on it (a hot spot's port must also drop ≥ 100 frames/s: the victim's
single TCP flow fills its receiver's queue as well; contributors: every edge, since a lossy
link never back-pressures a sender),
printing repaths and unpaths with the slow-lane flow; this test only installs and removes those
flows with ovs-ofctl.

Asserted (the bands only where the kernel has sch_prio and the basic classifier): the hot spot is flagged within 2 sweeps of the contributors' start and nothing else
is; every slow-lane flow matches `eth_dst = hot spot` only; on the wire (tcpdump at the
receivers) the contributors' packets arrive with the slow lane's DSCP and the victim's without,
and, where the bands exist, the victim's delivery port's slow band carries nothing while the
hot spot's carries the contributors; the unpath comes
within 3 sweeps after the contributors stop (their queues drain first); the victim's throughput with dFtree is at least
0.95x without.  The gain itself needs back-pressure (credits or PFC): these links drop instead,
so there is no head-of-line blocking here for the slow lane to remove (sim/RESULTS.md, "dFtree",
has the gain, in the simulator).
"""

import json
import statistics
import subprocess
import threading

from fabrictest import FabricTestCase, t  # noqa: E402  (puts mininet/ on sys.path)
import fftopo  # noqa: E402
import measure  # noqa: E402
import traffic  # noqa: E402
from fflaunch import OFCTL, FabricNet, has_subcommand, wait_until  # noqa: E402
from fftopo import AGENT_BIN, CONTROLLER_BIN, LinkRates  # noqa: E402

SPEC = "fattree:k=2,n=3"
# Fabric links at 4x the hosts': the contributors' 20 Mb/s may hash onto one link into the hot
# spot's leaf and must leave the victim room there, so that its only bottleneck is the hot
# spot's port (a lossy link has no head-of-line blocking; a saturated shared link would starve
# the victim with or without the slow lane, as no band separates them on this kernel).
RATES = LinkRates(host=10, local=10, glob=10, up=40, down=40, queue_pkts=50)
SWEEP_MS = 500
DURATION = 10
COOKIE = "0xdf7ee"
RUNTIMES = has_subcommand(CONTROLLER_BIN, "dftree-watch") and has_subcommand(AGENT_BIN,
                                                                            "port-stats")



class Watcher:
    """Follows `dftree-watch`'s JSON lines and applies its repaths and unpaths."""

    def __init__(self, fn, proc):
        self.fn, self.proc = fn, proc
        self.sweeps, self.changes = [], []
        self._th = threading.Thread(target=self._run, daemon=True)
        self._th.start()

    def _run(self):
        for line in self.proc.stdout:
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "change" not in doc:
                self.sweeps.append(doc)
                continue
            br = self.fn.fabric.sw_short[doc["switch"]]
            if doc["change"] == "repath":
                subprocess.run(OFCTL + ["add-flow", br, doc["flow"]], check=True)
            else:
                subprocess.run(OFCTL + ["--strict", "del-flows", br, doc["strict_match"]],
                               check=True)
            self.changes.append(doc)

    def last_sweep(self):
        return self.sweeps[-1]["sweep"] if self.sweeps else 0


def slow_flows(fn):
    """Every installed slow-lane flow (our cookie), by bridge."""
    out = {}
    for br in fn.fabric.sw_short.values():
        text = subprocess.run(OFCTL + ["dump-flows", br, f"cookie={COOKIE}/-1"],
                              capture_output=True, text=True, check=True).stdout
        out[br] = [ln for ln in text.splitlines() if "actions=" in ln]
    return out


class DftreeTests(FabricTestCase):
    def setUp(self):
        super().setUp()
        # Fail, never skip: a stale binary must not turn this test into a silent pass.
        self.assertTrue(RUNTIMES, f"{CONTROLLER_BIN} needs `dftree-watch`, {AGENT_BIN} `port-stats`")

    def contributors(self, fn, hot, srcs, seconds, base_port=5401):
        """UDP at line rate from every host of `srcs` to `hot`; returns the processes."""
        ip = fn.fabric.host(hot)["ip"]
        procs = []
        for i, s in enumerate(srcs):
            port = base_port + i
            fn.host_popen(fn.node(hot), ["iperf3", "-s", "-1", "-p", str(port)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: all(f":{base_port + i} " in fn.node(hot).cmd("ss -ltnH")
                               for i in range(len(srcs))), 20, "UDP servers listening", 0.2)
        for i, s in enumerate(srcs):
            procs.append(fn.host_popen(
                fn.node(s), ["iperf3", "-c", ip, "-u", "-b", f"{RATES.host}M", "-t",
                             str(seconds), "-p", str(base_port + i), "-l", "1400"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        return procs

    def victim(self, fn, src, dst, outdir):
        files = traffic.run_iperf(fn, [(src, dst)], DURATION, outdir, streams=1)
        samples, err = measure.parse_iperf(next(iter(files.values())))
        self.assertIsNone(err, "victim iperf3")
        # The first second is slow start, shared by both runs.
        return statistics.mean(v for _, v in samples[1:])

    def test_slow_lane_on_ovs(self):
        with FabricNet(SPEC, RATES) as fn:
            try:
                fftopo.apply_lanes(fn.net, RATES.queue_pkts)
                lanes = True
            except fftopo.LanesUnavailable as e:
                # The marks are still written and checked on the wire; only the queues that
                # would separate them are missing.
                lanes = False
                t(f"no two-band qdisc on this kernel: {e}", self.t0)
            hosts = [h["name"] for h in fn.fabric.hosts]
            leaf = {h["name"]: h["switch"] for h in fn.fabric.hosts}
            hot, neighbour = hosts[0], hosts[1]
            self.assertEqual(leaf[neighbour], leaf[hot])
            others = sorted({leaf[h] for h in hosts} - {leaf[hot]})
            on = {lf: [h for h in hosts if leaf[h] == lf] for lf in others}
            srcs = [on[others[0]][0], on[others[1]][0]]
            vsrc = on[others[0]][1]
            hot_port = next(h for h in fn.fabric.hosts if h["name"] == hot)["port"]
            nb_port = next(h for h in fn.fabric.hosts if h["name"] == neighbour)["port"]
            br = fn.fabric.sw_short[leaf[hot]]
            hot_dev, nb_dev = f"{br}-eth{hot_port}", f"{br}-eth{nb_port}"
            t(f"up; hot spot {hot}, contributors {srcs}, victim {vsrc}->{neighbour}", self.t0)

            # Without dFtree: the same traffic, no watcher.
            udp = self.contributors(fn, hot, srcs, DURATION + 5)
            without = self.victim(fn, vsrc, neighbour, fn.tmp / "without")
            for p in udp:
                p.wait(timeout=30)
            t(f"without dFtree: victim {without:.2f} Mb/s", self.t0)

            csv = fn.tmp / "port-stats.csv"
            fn.start_port_stats(csv, interval_ms=SWEEP_MS)
            wait_until(lambda: csv.exists() and csv.stat().st_size > 0, 10, "sampler output")
            # Its stdout is the test's input (fn.spawn would log it): tracked for cleanup.
            proc = subprocess.Popen([str(CONTROLLER_BIN), "dftree-watch", "--topology", SPEC,
                                     "--port-stats", str(csv), "--cookie", COOKIE,
                                     "--clear-sweeps", "1"],
                                    stdout=subprocess.PIPE, text=True, start_new_session=True)
            fn.procs.append(proc)
            w = Watcher(fn, proc)
            wait_until(lambda: w.last_sweep() >= 2, 10, "two quiet sweeps")
            self.assertEqual(w.changes, [], "nothing is hot before the contributors start")
            before_lanes = ((fftopo.lane_packets(nb_dev), fftopo.lane_packets(hot_dev))
                            if lanes else None)

            start = w.last_sweep()
            udp = self.contributors(fn, hot, srcs, DURATION + 5, base_port=5501)
            wait_until(lambda: any(hot in s["hot_spots"] for s in w.sweeps), 10, "hot spot")
            flagged = next(s["sweep"] for s in w.sweeps if hot in s["hot_spots"])
            t(f"flagged at sweep {flagged} (contributors started after sweep {start})",
              self.t0)
            self.assertLessEqual(flagged - start, 2)
            wait_until(lambda: any(c["change"] == "repath" for c in w.changes), 5, "repath")
            # On the wire: the hot spot receives slow-lane marks, the victim's receiver none.
            vip = fn.fabric.host(vsrc)["ip"]
            filters = {hot: "udp and (ip[1] & 0xfc) = 0x20",
                       neighbour: f"tcp and src host {vip} and (ip[1] & 0xfc) = 0x20"}
            sniff = {h: fn.host_popen(fn.node(h), [
                "timeout", "4", "tcpdump", "-i", fn.node(h).defaultIntf().name, "-nn", "-q",
                "-l", "-Q", "in", f], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True) for h, f in filters.items()}
            with_ = self.victim(fn, vsrc, neighbour, fn.tmp / "with")
            t(f"with dFtree: victim {with_:.2f} Mb/s", self.t0)
            seen = {h: [ln for ln in p.communicate(timeout=30)[0].splitlines() if ln.strip()]
                    for h, p in sniff.items()}
            marked = {h: len(v) for h, v in seen.items()}
            t(f"slow-lane marks seen in 4 s: {marked}", self.t0)
            self.assertGreater(marked[hot], 100, "contributors' packets marked")
            if marked[neighbour]:
                dp = subprocess.run(["ovs-appctl", "dpctl/dump-flows"], capture_output=True,
                                    text=True).stdout
                print("\n".join(ln for ln in dp.splitlines() if "set(ipv4" in ln))
                print(json.dumps(slow_flows(fn), indent=1))
            self.assertEqual(marked[neighbour], 0, f"victim's packets marked: {seen[neighbour][:3]}")
            after_lanes = ((fftopo.lane_packets(nb_dev), fftopo.lane_packets(hot_dev))
                           if lanes else None)

            mac = next(h["mac"] for h in fn.fabric.hosts if h["name"] == hot)
            self.assertTrue(all(s["hot_spots"] in ([], [hot]) for s in w.sweeps),
                            [s for s in w.sweeps if s["hot_spots"] not in ([], [hot])])
            installed = slow_flows(fn)
            self.assertTrue(any(installed.values()), "slow-lane flows installed")
            for b, lines in installed.items():
                for ln in lines:
                    self.assertIn(f"dl_dst={mac}", ln, b)
            if lanes:
                slow_victim = after_lanes[0][1] - before_lanes[0][1]
                slow_hot = after_lanes[1][1] - before_lanes[1][1]
                t(f"slow band: {slow_hot} packets to the hot spot, {slow_victim} to the "
                  f"victim's receiver", self.t0)
                self.assertEqual(slow_victim, 0, "victim traffic on the slow lane")
                self.assertGreater(slow_hot, 1000, "contributors on the slow lane")
            self.assertGreaterEqual(with_, 0.95 * without, "do no harm")

            for p in udp:
                p.terminate()
            # Count from the sweep after the senders are gone, not after the signal was sent.
            for p in udp:
                p.wait(timeout=10)
            stop = w.last_sweep()
            wait_until(lambda: any(c["change"] == "unpath" for c in w.changes), 10, "unpath")
            unpath = next(c["sweep"] for c in w.changes if c["change"] == "unpath")
            t(f"unpath at sweep {unpath} (contributors stopped after sweep {stop})", self.t0)
            # The sweep in progress at the stop, one more while the full queues the contributors
            # left along their paths drain (slower on a loaded machine), the quiet one that clears.
            self.assertLessEqual(unpath - stop, 3)
            wait_until(lambda: not any(slow_flows(fn).values()), 5, "slow-lane flows removed")
            fn.stop_port_stats()
