#!/usr/bin/python3
"""Single-flow rate check: does one uncongested TCP flow reach its link rate?

    sudo python3 mininet/ratecheck.py --topology dragonfly:p=2,a=4,h=2 --rates 5,10,20

For each rate (all link classes set to it) one iperf3 flow (-P 4) runs between the first host
of group 0 and the first host of group 1 (host, global and possibly local links) while the
fabric is otherwise idle.  If the flow falls well short of the rate, the CPU (the userspace
datapath), not the link, is the bottleneck at that rate.  Optionally `--background N` adds N
other concurrent flows elsewhere, to see the CPU limit under load.
"""

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import measure  # noqa: E402
import traffic  # noqa: E402
from fflaunch import FabricNet  # noqa: E402
from fftopo import LinkRates  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--topology", default="dragonfly:p=1,a=2,h=2")
    ap.add_argument("--rates", default="5,10,20")
    ap.add_argument("--duration", type=int, default=8)
    args = ap.parse_args()
    results = []
    for rate in [float(r) for r in args.rates.split(",")]:
        rates = LinkRates(rate, rate, rate, rate, rate, 100)
        with FabricNet(args.topology, rates, mode="static", p_minimal=100) as fn:
            groups = fn.fabric.groups()
            src, dst = groups[0][0], groups[1][0]
            files = traffic.run_iperf(fn, [(src, dst)], args.duration, fn.tmp / "iperf")
            samples, err = measure.parse_iperf(next(iter(files.values())))
            vals = [v for t, v in samples if t > 1.0]
            got = statistics.mean(vals) if vals else 0.0
        results.append((rate, got, err))
        print(f"link {rate:6.1f} Mb/s  single flow {src}->{dst}: {got:6.2f} Mb/s "
              f"({100 * got / rate:5.1f} %){'  error: ' + err if err else ''}", flush=True)
    return results


if __name__ == "__main__":
    main()
