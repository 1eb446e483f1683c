#!/usr/bin/env python3
"""How many of a SELECT group's 256 dp_hash slots change bucket when its weights change, by a
model of Open vSwitch's table (ofproto-dpif.c, group_setup_dp_hash_table: Webster apportionment,
slots assigned in order, rebuilt on every GROUP_MOD), against the fewest a change needs. A model,
not checked against the table OVS builds at run time (mininet/README.md "Weight writes move live
flows").

    /usr/bin/python3 scripts/dp-hash-churn.py 255/0/0/1 250/5/0/1 245/7/3/1 240/10/5/1
"""
import sys


def table(weights, slots=256):
    value = [float(w) for w in weights]
    divisor = [1] * len(weights)
    out = []
    for _ in range(slots):
        # The first bucket of highest value wins (OVS compares with a strict >).
        i = max(range(len(weights)), key=lambda j: (value[j], -j))
        divisor[i] += 2
        value[i] = weights[i] / divisor[i]
        out.append(i)
    return out


def main(argv):
    steps = [[int(w) for w in a.split("/")] for a in argv]
    for a, b in zip(steps, steps[1:]):
        ta, tb = table(a), table(b)
        moved = sum(x != y for x, y in zip(ta, tb))
        needed = sum(abs(ta.count(i) - tb.count(i)) for i in range(len(a))) // 2
        print(f"{'/'.join(map(str, a))} -> {'/'.join(map(str, b))}: "
              f"{moved} slots moved, {needed} needed (of {len(ta)})")


if __name__ == "__main__":
    main(sys.argv[1:])
