#!/usr/bin/python3
"""Experiment (not a test): the machine's CPU once a second by process class — ovs-vswitchd,
the agent, iperf3, Python (the harness), everything else — from /proc, while something else
runs (a `run.py` or `matrix.py` invocation in another shell). Prints CSV rows
`t,machine,ovs,agent,iperf3,python,other` in % of one core (machine: every core's busy time,
200 = both of this machine's). What it showed is in mininet/README.md "The traffic's CPU":
the traffic generators starving ovs-vswitchd at a run's start.

    sudo /usr/bin/python3 mininet/experiments/cpu_per_second.py --seconds 300 > /tmp/cpu.csv
"""
import argparse
import os
import sys
import time

CLASSES = ("ovs", "agent", "iperf3", "python", "other")


def klass(comm):
    """The class of a process by its command name (/proc/PID/stat's second field)."""
    if comm == "iperf3":
        return "iperf3"
    if comm == "ovs-vswitchd":
        return "ovs"
    if comm.startswith("fabricflow-age"):  # comm is cut at 15 characters
        return "agent"
    if comm.startswith("python"):
        return "python"
    return "other"


def ticks_by_class():
    """Clock ticks (user + system) each class's live processes have used."""
    out = dict.fromkeys(CLASSES, 0)
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
        except OSError:
            continue  # gone since listdir
        comm = s[s.index("(") + 1:s.rindex(")")]
        fields = s[s.rindex(")") + 2:].split()
        out[klass(comm)] += int(fields[11]) + int(fields[12])
    return out


def machine_busy():
    """(busy, total) ticks of every core (/proc/stat's `cpu` line; idle and iowait not busy)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=120.0)
    args = ap.parse_args()
    hz = os.sysconf("SC_CLK_TCK")
    print("t,machine," + ",".join(CLASSES), flush=True)
    p0, (b0, _), t0 = ticks_by_class(), machine_busy(), time.monotonic()
    last = t0
    while last - t0 < args.seconds:
        time.sleep(1)
        p1, (b1, _), now = ticks_by_class(), machine_busy(), time.monotonic()
        # Reading /proc takes a while on a busy machine: shares of the interval measured.
        pct = 100 / hz / (now - last)
        # A class's processes that exited in the interval take their ticks with them: a
        # negative share is one that ended, not a measurement.
        row = [round(now - t0, 1), round((b1 - b0) * pct)]
        row += [round((p1[k] - p0[k]) * pct) for k in CLASSES]
        print(",".join(map(str, row)), flush=True)
        p0, b0, last = p1, b1, now


if __name__ == "__main__":
    sys.exit(main())
