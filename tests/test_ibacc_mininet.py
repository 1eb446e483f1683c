"""Issue 20 end-to-end: the throttled baseline (mode ``ibacc``) on Mininet.

Run with tests/run-e2e.sh (root).  A 4×4 torus, one host per switch, host links 10 Mb/s, fabric
links 5 Mb/s, pfifo 50 packets, the perfect shuffle (14 TCP flows).  The controller forwards
CNMs to the culprit's host (``cnm_to_hosts``), the agents keep the plan's weights
(``policy.kind = "static"``) and every host runs ``fabricflow-agent throttle`` (InfiniBand CC on
its link's HTB class).  Asserted: before traffic every host class is at B; under the shuffle the
throttlers receive CNMs (as many as the agents generated at most, none malformed or for another
host) and the kernel shows a host class below B; once the traffic stops every class is back at
B with IRD 0; the agents wrote no weight.  Without the CNM delivery or the throttler no class
would ever leave B.  The measured figures: mininet/README.md "DRB results".
"""

import re
import unittest

from fabrictest import FabricTestCase, t  # noqa: E402  (puts mininet/ on sys.path)
import modes  # noqa: E402
import traffic  # noqa: E402
from fflaunch import FabricNet, has_subcommand, wait_until  # noqa: E402
from fftopo import AGENT_BIN, CONTROLLER_BIN, LinkRates  # noqa: E402

SPEC = "torus:k=4,n=2,p=1"
RATES = LinkRates(host=10, local=5, glob=5, up=5, down=5, queue_pkts=50)
B = 10_000_000
UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}


def class_rate_bps(host):
    """The rate of the host link's HTB leaf class 5:1 as the kernel reports it, bit/s."""
    out = host.cmd(f"tc class show dev {host.defaultIntf().name} classid 5:1")
    m = re.search(r"\brate ([\d.]+)([KMG]?)bit", out)
    if not m:
        raise AssertionError(f"no htb class 5:1 on {host.name}: {out!r}")
    return float(m[1]) * UNITS[m[2]]


class IbaCcTests(FabricTestCase):
    def setUp(self):
        super().setUp()
        # Fail, never skip: a stale binary must not turn this test into a silent pass.
        self.assertTrue(has_subcommand(CONTROLLER_BIN, "run") and has_subcommand(AGENT_BIN, "run")
                        and has_subcommand(AGENT_BIN, "throttle"),
                        f"{CONTROLLER_BIN} run, {AGENT_BIN} run and throttle are needed")

    def test_hosts_throttle_under_congestion_and_recover(self):
        with FabricNet.for_mode(SPEC, RATES, modes.lookup("ibacc")) as fn:
            t(f"up {fn.timings}", self.t0)
            hosts = fn.net.hosts
            self.assertEqual({h.name: class_rate_bps(h) for h in hosts},
                             {h.name: B for h in hosts})
            lowest = {}

            def tick():
                for h in hosts:
                    lowest[h.name] = min(lowest.get(h.name, B), class_rate_bps(h))
            flows = traffic.flows(fn.fabric, "shuffle", 1)
            traffic.run_iperf(fn, flows, 8, fn.tmp / "iperf", on_tick=tick)
            throttled = {h: r for h, r in lowest.items() if r < B}
            # Throttlers first: every CNM they counted was generated before the agents' count.
            tot = fn.throttle_totals()
            cnms, mods = fn.agent_counters()
            t(f"CNMs generated {cnms}, throttlers {tot}; classes below B: {throttled}", self.t0)
            self.assertGreater(tot["cnms"], 0, "no CNM reached a host")
            self.assertLessEqual(tot["cnms"], cnms)
            self.assertEqual((tot["malformed"], tot["not_for_this_host"]), (0, 0))
            self.assertEqual(tot["rate_write_errors"], 0)
            self.assertGreater(tot["max_ird"], 0)
            self.assertTrue(throttled, "no host class went below B under the shuffle")
            self.assertEqual(mods, 0, "the static agents wrote weights")

            def restored():
                st = fn.throttle_status()
                return (all(s["ird"] == 0 and s["rate_bps"] == B for s in st.values())
                        and all(class_rate_bps(h) == B for h in hosts))
            wait_until(restored, 30, "every host class back at B, IRD 0", 0.5)
            t("every class back at B", self.t0)


if __name__ == "__main__":
    unittest.main()
