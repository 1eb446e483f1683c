"""Adaptive routing and SAA rate control on an extended fat-tree in Mininet: superposed random
permutations of fixed-size TCP transfers, total completion time per mode.

    sudo flock -o /tmp/fabricflow-ovs.lock python3 mininet/arsaa.py \\
        --topology fattree:k=4,n=2,w=1 --perms 2 --bytes 1000000 --reps 5 --out /tmp/ff-arsaa

One Mininet fabric (the extended tree, static plan: destination rules) serves every mode; per
repetition, a fresh draw of `--perms` superposed random permutations (a host's flow to itself
and repeated pairs left out), the same flows for every mode:

- ``oblivious``: per-flow rules on the D-mod-k paths (``fabricflow-controller phase
  --algorithm dmodk``: no horizontal link), no pacing;
- ``ar``: per-flow rules on the balanced least-loaded paths (``--algorithm balanced``), no
  pacing;
- ``ar-saa``: the same rules, and every sender paced at its SAA rate r(f) = w_f / W_f of the
  link rate (``iperf3 --fq-rate``: SO_MAX_PACING_RATE on the socket; the kernel's TCP pacing
  applies it without an fq qdisc, so the links' htb shaping stays as the harness set it).
  Meters are not used: they drop, and TCP loses more than it gains.

The per-flow rules carry their own cookie and are deleted (``del-flows cookie=C/-1``) before
the next mode's are added; the destination rules stay. Each transfer is one iperf3 TCP stream
(``-n BYTES -P 1``); the completion time is from the moment every client is released to the
exit of the last one. Writes OUT/arsaa.json (every run) and prints the per-mode median and its
ratio to oblivious.
"""

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fflaunch import OFCTL, FabricNet, sh, wait_until  # noqa: E402
from fftopo import CONTROLLER_BIN, LinkRates  # noqa: E402
from traffic import DEFAULT_TCP_CC  # noqa: E402

PHASE_COOKIE = "0xfabf10a00000002"
MODES = ("oblivious", "ar", "ar-saa")


def permutations(hosts, count, rng):
    """`count` superposed random permutations of the host names, without self flows and
    repeated pairs (the per-flow rules tell flows apart by their hosts only)."""
    out, seen = [], set()
    for _ in range(count):
        dst = list(hosts)
        rng.shuffle(dst)
        for s, d in zip(hosts, dst):
            if s != d and (s, d) not in seen:
                seen.add((s, d))
                out.append((s, d))
    return out


def phase(spec, flows, algorithm, workdir):
    """`fabricflow-controller phase`'s answer (rules per switch, paths, SAA rates)."""
    path = workdir / f"flows-{algorithm}.json"
    path.write_text(json.dumps({"flows": [{"src": s, "dst": d} for s, d in flows]}))
    out = subprocess.run([str(CONTROLLER_BIN), "phase", "--topology", spec, "--flows", str(path),
                          "--algorithm", algorithm, "--idle-timeout", "120",
                          "--hard-timeout", "900"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def install(fn, answer, workdir):
    """Replaces the per-flow rules of every switch by `answer`'s."""
    for sw in fn.fabric.switches:
        short = fn.fabric.sw_short[sw["name"]]
        sh(OFCTL + ["del-flows", short, f"cookie={PHASE_COOKIE}/-1"])
        lines = answer["rules"].get(sw["name"], [])
        if lines:
            f = workdir / f"{short}.phase"
            f.write_text("\n".join(lines) + "\n")
            sh(OFCTL + ["add-flows", short, str(f)])
    want = sum(len(v) for v in answer["rules"].values())

    def installed():
        n = 0
        for sw in fn.fabric.switches:
            out = sh(OFCTL + ["dump-flows", fn.fabric.sw_short[sw["name"]],
                              f"cookie={PHASE_COOKIE}/-1", "--no-stats"]).stdout
            n += sum(1 for line in out.splitlines() if "actions=" in line)
        return n >= want
    wait_until(installed, 10, f"{want} per-flow rules installed")


def transfers(fn, flows, nbytes, rates_bps, outdir, base_port=5401, timeout=300):
    """Runs one iperf3 transfer of `nbytes` per flow, all released together; returns the
    seconds until the last client exited (None if one failed or timed out)."""
    outdir.mkdir(parents=True, exist_ok=True)
    servers, clients, by_dst = [], [], {}
    for i, (_, dst) in enumerate(flows):
        d = fn.node(dst)
        port = base_port + i
        servers.append(fn.host_popen(d, ["iperf3", "-s", "-1", "-p", str(port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        by_dst.setdefault(d, []).append(port)

    def listening():
        return all(all(f":{p} " in d.cmd("ss -ltnH") for p in ports)
                   for d, ports in by_dst.items())
    wait_until(listening, 20, "iperf3 servers listening", 0.2)
    go = outdir / "go"
    go.unlink(missing_ok=True)
    for i, (src, dst) in enumerate(flows):
        ip = fn.fabric.host(dst)["ip"]
        pace = f" --fq-rate {int(rates_bps[i])}" if rates_bps else ""
        cmd = (f"while [ ! -e {go} ]; do sleep 0.01; done; exec iperf3 -c {ip} -p {base_port + i}"
               f" -n {nbytes} -P 1 -C {DEFAULT_TCP_CC} --connect-timeout 5000{pace}")
        with open(outdir / f"flow{i:03d}.txt", "w") as out:
            clients.append(fn.host_popen(fn.node(src), ["sh", "-c", cmd], stdout=out,
                                         stderr=subprocess.STDOUT))
    go.touch()
    start = time.monotonic()
    while any(c.poll() is None for c in clients):
        if time.monotonic() - start > timeout:
            for c in clients:
                if c.poll() is None:
                    c.kill()
            return None
        time.sleep(0.02)
    elapsed = time.monotonic() - start
    for s in servers:
        try:
            s.wait(timeout=5)
        except subprocess.TimeoutExpired:
            s.kill()
    return elapsed if all(c.returncode == 0 for c in clients) else None


def run(spec, perms, nbytes, reps, mbps, seed, out, modes=MODES, pace_fraction=0.95):
    """Every mode `reps` times; returns {"runs": [...], "median": {mode: s}, "ratio": {...}}."""
    out.mkdir(parents=True, exist_ok=True)
    rates = LinkRates(host=mbps, local=mbps, glob=mbps, up=mbps, down=mbps)
    runs = []
    with FabricNet(spec, rates, mode="static") as fn:
        hosts = [h["name"] for h in fn.fabric.hosts]
        for rep in range(reps):
            flows = permutations(hosts, perms, random.Random(seed + rep))
            answers = {a: phase(spec, flows, a, fn.tmp) for a in ("dmodk", "balanced")}
            for mode in modes:
                answer = answers["dmodk" if mode == "oblivious" else "balanced"]
                install(fn, answer, fn.tmp)
                rates_bps = None
                if mode == "ar-saa":
                    rates_bps = [f["rate"] * mbps * 1e6 * pace_fraction for f in answer["flows"]]
                t = transfers(fn, flows, nbytes, rates_bps, out / f"r{rep}-{mode}")
                runs.append({"rep": rep, "mode": mode, "seconds": t, "flows": len(flows),
                             "max_link_flows": answer["max_link_flows"], "w": answer["w"]})
                print(f"rep {rep} {mode:10s} {t if t is None else round(t, 2)} s "
                      f"(max link flows {answer['max_link_flows']})", flush=True)
    median = {m: statistics.median([r["seconds"] for r in runs if r["mode"] == m
                                    and r["seconds"] is not None] or [float("nan")])
              for m in modes}
    base = median.get("oblivious")
    ratio = {m: (v / base if base else float("nan")) for m, v in median.items()}
    result = {"topology": spec, "perms": perms, "bytes": nbytes, "mbps": mbps, "reps": reps,
              "seed": seed, "runs": runs, "median": median, "ratio": ratio}
    (out / "arsaa.json").write_text(json.dumps(result, indent=1))
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", default="fattree:k=4,n=2,w=1")
    ap.add_argument("--perms", type=int, default=2)
    ap.add_argument("--bytes", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--mbps", type=float, default=5.0, help="every link's rate")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    r = run(a.topology, a.perms, a.bytes, a.reps, a.mbps, a.seed, a.out)
    print("mode        median_s  over_oblivious")
    for m in MODES:
        print(f"{m:10s}  {r['median'][m]:8.2f}  {r['ratio'][m]:.3f}")


if __name__ == "__main__":
    main()
