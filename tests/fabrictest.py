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
