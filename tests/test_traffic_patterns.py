"""Traffic patterns (no root, no Mininet start needed; needs the release controller for the export)."""

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
        cls.df = fftopo.Fabric.load("dragonfly:p=2,a=2,h=2")
        cls.grp = {h["name"]: h["group"] for h in cls.df.hosts}

    def test_uniform_is_a_derangement_and_seeded(self):
        fl = traffic.pattern(self.df, "uniform", 3)
        self.assertEqual(sorted(s for s, _ in fl), sorted(self.grp))
        self.assertEqual(sorted(d for _, d in fl), sorted(self.grp))
        self.assertTrue(all(s != d for s, d in fl))
        self.assertEqual(fl, traffic.pattern(self.df, "uniform", 3))
        self.assertNotEqual(fl, traffic.pattern(self.df, "uniform", 4))

    def test_adv_k_targets_group_plus_k_bijectively(self):
        for k in (1, 2):
            fl = traffic.pattern(self.df, f"adv+{k}", 1)
            self.assertEqual(len(fl), len(self.grp))
            for s, d in fl:
                self.assertEqual(self.grp[d], (self.grp[s] + k) % 5)
            self.assertEqual(max(Counter(d for _, d in fl).values()), 1)
        with self.assertRaises(ValueError):
            traffic.pattern(self.df, "adv+5", 1)

    def test_hotspot(self):
        fl = traffic.pattern(self.df, "hotspot", 2, hot_n=4)
        hot, n = Counter(d for _, d in fl).most_common(1)[0]
        self.assertEqual(n, 4)
        self.assertTrue(all(self.grp[s] != self.grp[hot] for s, d in fl if d == hot))
        self.assertTrue(all(s != d for s, d in fl))

    def test_short_names_fit_interfaces(self):
        big = fftopo.Fabric.load("dragonfly:p=2,a=4,h=2")
        for name in list(big.sw_short.values()) + list(big.host_short.values()):
            self.assertLessEqual(len(name) + len("-eth99"), 15, name)
        self.assertEqual(len(set(big.sw_short.values())), len(big.switches))


if __name__ == "__main__":
    unittest.main(verbosity=2)
