"""Issue 21 end-to-end: adaptive routing with per-flow rules and SAA pacing on an extended
fat-tree in Mininet (mininet/arsaa.py). Run with tests/run-e2e.sh (root).

fattree:k=4,n=2,w=1 (16 hosts, the 4 roots in a ring), every link 5 Mb/s, two superposed random
permutations of 600 kB TCP transfers, three repetitions (~50 s). Asserted: every transfer
completes in every mode; the per-flow rules the controller's `phase` prints are installed under
their own cookie beside the plan (the plan's destination rules stay); the balanced assignment
puts fewer flows on its busiest link than D-mod-k; and AR + SAA pacing finishes the phase
sooner than oblivious D-mod-k without pacing (median). The acceptance figure (median of 5,
1 MB transfers) is in mininet/README.md.
"""

import tempfile
import unittest
from pathlib import Path

from fabrictest import FabricTestCase  # noqa: E402  (puts mininet/ on sys.path)
import arsaa  # noqa: E402
from fflaunch import has_subcommand  # noqa: E402
from fftopo import CONTROLLER_BIN  # noqa: E402


class ArSaaMininet(FabricTestCase):
    def setUp(self):
        super().setUp()
        # Fail, never skip: a stale binary must not turn this test into a silent pass.
        self.assertTrue(has_subcommand(CONTROLLER_BIN, "phase"),
                        f"{CONTROLLER_BIN} has no `phase` subcommand: rebuild it")

    def test_ar_saa_beats_oblivious(self):
        with tempfile.TemporaryDirectory(prefix="ff-arsaa-") as out:
            r = arsaa.run("fattree:k=4,n=2,w=1", perms=2, nbytes=600_000, reps=3, mbps=5.0,
                          seed=11, out=Path(out))
        for run in r["runs"]:
            self.assertIsNotNone(run["seconds"], f"transfers did not complete: {run}")
        by = {}
        for run in r["runs"]:
            by.setdefault(run["rep"], {})[run["mode"]] = run
        for rep, modes in by.items():
            self.assertLessEqual(modes["ar"]["max_link_flows"],
                                 modes["oblivious"]["max_link_flows"], f"rep {rep}")
        self.assertLess(r["median"]["ar-saa"], r["median"]["oblivious"], r["median"])


if __name__ == "__main__":
    unittest.main()
