"""Traffic patterns as the harness runs them: the controller's registry (`fabricflow-controller
traffic`). No root, no Mininet start; needs the release controller (or FABRICFLOW_BIN_DIR)."""

import sys
import unittest
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mininet"))

import fftopo  # noqa: E402
import traffic  # noqa: E402


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

    def test_short_names_fit_interfaces(self):
        big = fftopo.Fabric.load("dragonfly:p=2,a=4,h=2")
        for name in list(big.sw_short.values()) + list(big.host_short.values()):
            self.assertLessEqual(len(name) + len("-eth99"), 15, name)
        self.assertEqual(len(set(big.sw_short.values())), len(big.switches))


if __name__ == "__main__":
    unittest.main(verbosity=2)
