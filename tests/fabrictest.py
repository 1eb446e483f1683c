"""What every Mininet test module shares: the repository on sys.path, a timestamped progress
line, and a TestCase whose tearDown fails the test when a bridge or interface of ours survives.

Import it first: it puts mininet/ on sys.path for the harness modules.
"""

import sys
import time
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO / "mininet") not in sys.path:
    sys.path.insert(0, str(REPO / "mininet"))

import measure  # noqa: E402
from fflaunch import our_bridges, our_links  # noqa: E402


def t(msg, t0):
    """A progress line: seconds since `t0`, then `msg` (visible with pytest -s)."""
    print(f"  [{time.monotonic() - t0:6.1f} s] {msg}", flush=True)


class FabricTestCase(unittest.TestCase):
    """Prints the test's name on start; on stop, whatever the test did, nothing of ours may
    survive it (bridges, veth interfaces)."""

    def setUp(self):
        self.t0 = time.monotonic()
        print(f"\n== {self.id()}", flush=True)

    def tearDown(self):
        self.assertEqual(our_bridges(), [], "bridges left behind")
        self.assertEqual(our_links(), [], "interfaces left behind")
        t("done", self.t0)

    def assert_all_pairs(self, fn, count=2):
        """Every ordered host pair answers a first ping (one retry: ARP), then `count` more
        without loss. Returns the number of pairs."""
        first = measure.all_pairs_ping(fn, count=1, retry=True)
        n = len(fn.net.hosts)
        self.assertEqual(len(first), n * (n - 1))
        bad = sorted(p for p, ok in first.items() if not ok)
        self.assertEqual(bad, [], f"unreachable after retry: {bad[:10]}")
        again = measure.all_pairs_ping(fn, count=count, retry=False)
        bad = sorted(p for p, ok in again.items() if not ok)
        self.assertEqual(bad, [], f"loss on {len(bad)} pairs: {bad[:10]}")
        return len(again)
