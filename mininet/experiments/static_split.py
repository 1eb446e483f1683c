#!/usr/bin/python3
"""Experiment (not a test): a fabric (default Dragonfly(2,4,2)) under one traffic pattern (default
ADV+1) at 10 / 2.5 Mb/s (`--rates`) with a *static* plan at P = P0 percent, and optionally (`churn`) every
SELECT group's weights rewritten between the P0 and P1 plans, RATE MODIFYs a second per bridge
over OpenFlow 1.3 (`ofchurn.py`, on each bridge's management socket): what a fixed split can
carry, and what a weight MODIFY costs the TCP streams, without any QCN-SW dynamics. Prints the
aggregate (mean over seconds 5-30 of 30, Mb/s), the MODIFYs sent and the cell's optimum.

    sudo /usr/bin/python3 mininet/experiments/static_split.py static 15 15
    sudo /usr/bin/python3 mininet/experiments/static_split.py static 15 15 --traffic adv+2
    sudo /usr/bin/python3 mininet/experiments/static_split.py static 30 30 --rates 5/5
    sudo /usr/bin/python3 mininet/experiments/static_split.py churn 5 10 14
"""
import argparse
import dataclasses
import subprocess
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import matrix  # noqa: E402
import measure  # noqa: E402
import ofchurn  # noqa: E402
import traffic  # noqa: E402
from fflaunch import FabricNet  # noqa: E402
from fftopo import CONTROLLER_BIN, LinkRates  # noqa: E402

SPEC = "dragonfly:p=2,a=4,h=2"
RATES = LinkRates(host=10, local=10, glob=2.5, up=10, down=2.5, queue_pkts=50)
DURATION, WARMUP = 30, 5


def select_groups(fn, spec, sw_name, p):
    """The switch's SELECT groups (ovs-ofctl text) in the static plan at P = p."""
    out = fn.tmp / f"{sw_name}-{p}.groups"
    subprocess.run([str(CONTROLLER_BIN), "plan", "--topology", spec, "--switch", sw_name,
                    "--p-minimal", str(p), "--groups-out", str(out),
                    "--flows-out", f"{out}.flows"], check=True, capture_output=True)
    return [g for g in out.read_text().splitlines() if "type=select" in g]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("how", choices=["static", "churn"])
    ap.add_argument("p0", type=int)
    ap.add_argument("p1", type=int)
    ap.add_argument("rate", type=float, nargs="?", default=14.0,
                    help="MODIFYs per second per bridge (churn)")
    ap.add_argument("--mtu", type=int, default=9000,
                    help="every interface's MTU (default 9000, as run.py's; 1500: standard frames)")
    ap.add_argument("--topology", default=SPEC, help=f"fabric (default {SPEC})")
    ap.add_argument("--traffic", default="adv+1", help="pattern, as run.py's (default adv+1)")
    ap.add_argument("--seed", type=int, default=1, help="the pattern's seed (default 1)")
    ap.add_argument("--rates", default="10/2.5",
                    help="H/G Mb/s as matrix.py's: host and local (fat-tree up) links H, global "
                    "(down) links G (default 10/2.5)")
    args = ap.parse_args()
    h, g = matrix.parse_rates(args.rates)
    rates = dataclasses.replace(RATES, host=h, local=h, glob=g, up=h, down=g, mtu=args.mtu)
    with FabricNet(args.topology, rates, mode="static", p_minimal=args.p0) as fn:
        stop, mods = threading.Event(), [0]
        if args.how == "churn":
            plans = {fn.fabric.sw_short[sw["name"]]: (
                select_groups(fn, args.topology, sw["name"], args.p0),
                select_groups(fn, args.topology, sw["name"], args.p1))
                     for sw in fn.fabric.switches}
            threading.Thread(target=ofchurn.run, args=(plans, args.rate, stop, mods),
                             daemon=True).start()
        flows = traffic.flows(fn.fabric, args.traffic, args.seed)
        files = traffic.run_iperf(fn, flows, DURATION, fn.tmp / "iperf", streams=4)
        stop.set()
        agg = 0.0
        for path in files.values():  # in the run's directory, gone after teardown
            samples, _ = measure.parse_iperf(path)
            vals = [v for t, v in samples if WARMUP < t <= DURATION + 0.5]
            agg += sum(vals) / len(vals) if vals else 0.0
    optimum = traffic.bound(args.topology, args.traffic, args.seed, rates, ("any",))["any"]
    print(f"{args.topology} {args.traffic} seed {args.seed}, {args.how} P {args.p0}/{args.p1}: "
          f"aggregate {agg:.2f} Mb/s, MODIFYs {mods[0]}, "
          f"optimum {optimum['max_aggregate_mbps']:.2f} Mb/s")


if __name__ == "__main__":
    main()
