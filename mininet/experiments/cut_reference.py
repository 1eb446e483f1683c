#!/usr/bin/env python3
"""At every feedback comparison that cuts P: the reference the switch used (hi) against what its
candidates' detours really carried — the neighbour switches' own congestion point findings on
their global ports, fresh within AGE seconds (default 0.32: the Fb age of a 2.5 Mb/s port).

Usage (mininet/README.md "CNMs charged at the culprit's switch"):
    FF_AGENT_LOG="info,fabricflow_agent::policy=trace" sudo -E /usr/bin/python3 mininet/matrix.py \
        --fabrics F --traffic T ... --repeat 1 --modes qcnsw-combined --out DIR
    target/release/fabricflow-controller topology --topology F > topo.json
    python3 mininet/experiments/cut_reference.py topo.json DIR/<cell>/qcnsw-combined-r0-logs/agent.log [AGE]
"""
import json, re, sys, collections, bisect, statistics
topo = json.load(open(sys.argv[1])); log = sys.argv[2]; AGE = float(sys.argv[3]) if len(sys.argv) > 3 else 0.32
short = lambda n: re.sub(r"g(\d+)s(\d+)", r"s\1x\2", n)
ports = collections.defaultdict(dict)  # sw -> port -> (class, peer)
for l in topo["links"]:
    a, b = short(l["a"]), short(l["b"])
    ports[a][l["a_port"]] = (l["class"], b); ports[b][l["b_port"]] = (l["class"], a)
ansi = re.compile(r"\x1b\[[0-9;]*m")
obs = collections.defaultdict(list)  # (sw, port) -> [(t, fb)]
cmps = []
def ts(s):
    h, m, sec = s[11:-1].split(":"); return int(h) * 3600 + int(m) * 60 + float(sec)
for line in open(log, errors="replace"):
    line = ansi.sub("", line)
    if "feedback comparison" not in line and "congestion observed" not in line: continue
    t = ts(line.split()[0]); sw = re.search(r"name=(\S+?)\}", line).group(1)
    kv = dict(re.findall(r"(\w+)=(\S+)", line.split("fabricflow_agent::policy:")[1]))
    if "congestion observed" in line:
        obs[(sw, int(kv["port"]))].append((t, int(kv["fb"])))
    else:
        cmps.append((t, sw, int(kv["port"]), int(kv["fb"]), float(kv["lo"]), float(kv["hi"])))
def fresh(sw, port, t):
    v = obs.get((sw, port), [])
    i = bisect.bisect_right(v, (t, 99)) - 1
    return v[i][1] if i >= 0 and t - v[i][0] <= AGE else 0
rows = []
for t, sw, m, fb, lo, hi in cmps:
    if fb <= hi: continue
    cands = [p for p in ports[sw] if p != m]
    true = []
    for c in cands:
        cls, peer = ports[sw][c]
        if cls == "global":
            true.append(fresh(sw, c, t))
        else:
            g = [p for p, (k, _) in ports[peer].items() if k == "global"]
            true.append(statistics.mean(fresh(peer, p, t) for p in g) if g else 0)
    tc = statistics.mean(true) if true else 0
    rows.append((fb, hi, tc, ports[sw][m][0]))
n = len(rows)
print(f"comparisons {len(cmps)}, cuts {n}")
if n:
    print(f"  mean fb {statistics.mean(r[0] for r in rows):.1f}, mean reference hi {statistics.mean(r[1] for r in rows):.1f}, "
          f"mean true candidates {statistics.mean(r[2] for r in rows):.1f}")
    print(f"  cuts the true candidates would not have made (fb <= true): {sum(r[0] <= r[2] for r in rows)/n:.2f}")
    print(f"  cuts with hi == 0: {sum(r[1] == 0 for r in rows)/n:.2f}")
    for cls in ("local", "global"):
        rr = [r for r in rows if r[3] == cls]
        if rr: print(f"  minimal port {cls}: {len(rr)} cuts, true >= fb {sum(r[0] <= r[2] for r in rr)/len(rr):.2f}")
