#!/usr/bin/python3
"""Experiment (not a test): Dragonfly(2,4,2) ADV+1 with a *static* plan at P = P0 percent, and
optionally its SELECT-group weights rewritten between P0 and P1 about RATE times a second per
bridge over OpenFlow 1.3 (`ofchurn.py`, on each bridge's management socket) — what a weight
MODIFY costs the TCP streams without any QCN-SW dynamics. Prints the aggregate (mean over
seconds 5-30 of 30, Mb/s) and the MODIFYs sent.

    sudo /usr/bin/python3 mininet/experiments/static_split.py static 15 15
    sudo /usr/bin/python3 mininet/experiments/static_split.py churn 5 10 14
"""
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import traffic, measure
from fflaunch import FabricNet
from fftopo import LinkRates, CONTROLLER_BIN
spec = "dragonfly:p=2,a=4,h=2"; churn = sys.argv[1] == "churn"; p0 = int(sys.argv[2]); p1 = int(sys.argv[3]); RATE = float(sys.argv[4]) if len(sys.argv) > 4 else 14
rates = LinkRates(host=10, local=10, glob=2.5, up=10, down=2.5, queue_pkts=50)
with FabricNet(spec, rates, mode="static", p_minimal=p0) as fn:
    files = {}
    for sw in fn.fabric.switches:
        name, br = sw["name"], fn.fabric.sw_short[sw["name"]]
        for p in (p0, p1):
            out = fn.tmp / f"{br}-{p}.groups"
            subprocess.run([str(CONTROLLER_BIN), "plan", "--topology", spec, "--switch", name,
                            "--p-minimal", str(p), "--groups-out", str(out), "--flows-out", str(out) + ".flows"], check=True, capture_output=True)
            # only the inject groups towards local ports and the global ones: all of them
            files[(br, p)] = out.read_text().splitlines()
    stop = threading.Event(); mods = [0]
    import ofchurn
    bg = {}
    for sw in fn.fabric.switches:
        br = fn.fabric.sw_short[sw["name"]]
        a = [g for g in files[(br, p0)] if "type=select" in g]
        b = [g for g in files[(br, p1)] if "type=select" in g]
        bg[br] = (a, b)
    def churner2():
        ofchurn.run(bg, RATE, stop, mods)
    flows = traffic.pattern(fn.fabric, "adv+1", 1)
    th = None
    if churn:
        th = threading.Thread(target=churner2, daemon=True); th.start()
    res = traffic.run_iperf(fn, flows, 30, fn.tmp / "iperf", streams=4)
    stop.set()
    agg = 0
    for label, path in res.items():
        s, err = measure.parse_iperf(path)
        vals = [v for tt, v in s if 5 < tt <= 30.5]
        agg += sum(vals)/len(vals) if vals else 0
    print("RESULT", sys.argv[1:], "agg", round(agg, 2), "mods", mods[0])
