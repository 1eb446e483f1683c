"""Every mode on a matrix of (fabric, traffic, rates) cells with one configuration: one table.

    sudo /usr/bin/python3 mininet/matrix.py --out /tmp/ff/matrix          # the default matrix
    sudo /usr/bin/python3 mininet/matrix.py --fabrics dragonfly:p=1,a=2,h=3 --traffic adv+1 \\
        --rates 10/2.5 --repeat 1 --duration 20 --out /tmp/ff/m1

A cell is one `run.py` invocation: the cell's topology, traffic and rates, `--repeat` seeds (the
table shows medians), the same modes and the same agent configuration (the harness's, plus
FF_AGENT_SET if set: it applies to every cell alike) in every cell. Rates are `H/G`: host and local
links H Mb/s, global links G (a fat-tree's up links H, down links G). `adv+h` is ADV+h of each
Dragonfly (h from its spec). A cell the harness cannot run (a pattern the fabric does not have)
is recorded with its reason and the matrix goes on.

Writes OUT/<cell>/ (run.py's files), OUT/matrix.json (every cell's summary or error) and
OUT/matrix.md (the table), and prints the table: per cell and mode the median aggregate, its
fraction of the throughput optimum of the same flows (`fabricflow-controller bound`), and the two
ratios adaptive routing is judged by: against minimal and against the better of minimal and
Valiant — as a ratio of the medians and paired (the median over seeds of each seed's own ratio:
every seed draws its own flows, so only the paired ratio compares a mode with its baseline on
the same flows) — and the median `ramp_s` (run.py: how many seconds the mode took to reach its
level, which the window's mean does not show).
"""

import argparse
import fcntl
import json
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run  # noqa: E402

DEFAULT_FABRICS = ("dragonfly:p=1,a=2,h=3", "dragonfly:p=2,a=4,h=2", "dragonfly:p=1,a=3,h=1",
                   "dragonfly:p=2,a=3,h=2", "fattree:k=4,n=2")
DEFAULT_TRAFFIC = ("uniform", "adv+1", "adv+h", "hotspot")
DEFAULT_RATES = ("5/5", "10/2.5")
DEFAULT_MODES = "minimal,valiant,qcnsw-combined"


def traffic_for(fabric, pattern):
    """The registry's pattern name for `pattern` on `fabric` (`adv+h` → adv+H of a Dragonfly)."""
    if pattern != "adv+h":
        return pattern
    m = re.search(r"\bh=(\d+)", fabric)
    if not fabric.startswith("dragonfly:") or not m:
        raise ValueError(f"adv+h needs a Dragonfly, not {fabric}")
    return f"adv+{m.group(1)}"


def parse_rates(text):
    """`H/G` → (host and local Mb/s, global Mb/s)."""
    h, sep, g = text.partition("/")
    try:
        hv, gv = float(h), float(g)
    except ValueError:
        raise ValueError(f"rates {text!r}: expected H/G in Mb/s, e.g. 10/2.5") from None
    if not sep or hv <= 0 or gv <= 0:
        raise ValueError(f"rates {text!r}: expected H/G, both positive")
    return hv, gv


def cell_name(fabric, pattern, rates):
    return re.sub(r"[^A-Za-z0-9.+=-]+", "_", f"{fabric}_{pattern}_{rates}")


def paired_ratio(runs, baselines):
    """Median over the seeds of a mode's aggregate ÷ the better baseline *of the same seed*.

    Each seed draws its own flows (its own permutation and optimum), so a ratio of medians can
    set one seed's mode against another seed's baseline; the paired ratio compares like with
    like. `runs` and each of `baselines` map seed → Mb/s; None without a common seed."""
    ratios = []
    for seed, a in (runs or {}).items():
        base = [b[seed] for b in baselines if b and b.get(seed)]
        if a is not None and base:
            ratios.append(a / max(base))
    return statistics.median(ratios) if ratios else None


def cell_rows(cell):
    """Table rows of one cell: (mode, aggregate, fraction of optimum, ÷ minimal, ÷ best of
    minimal and Valiant, paired ÷ best, median ramp_s, note); one row with the reason for a
    cell that did not run."""
    if "error" in cell:
        return [("-", None, None, None, None, None, None, cell["error"])]
    modes = cell["summary"]["modes"]

    def agg(name):
        return (modes.get(name) or {}).get("aggregate_mbps")

    def seeds(name):
        return {int(k): v for k, v in ((modes.get(name) or {}).get("runs_mbps") or {}).items()}
    minimal = agg("minimal")
    best = max((v for v in (minimal, agg("valiant")) if v), default=None)
    baselines = [seeds("minimal"), seeds("valiant")]
    rows = []
    for name, m in modes.items():
        a = m.get("aggregate_mbps")
        rows.append((name, a, m.get("fraction_of_optimum"),
                     a / minimal if a is not None and minimal else None,
                     a / best if a is not None and best else None,
                     paired_ratio(seeds(name), baselines), m.get("ramp_s"),
                     failed_note(m.get("iperf3_failed_seeds"))))
    return rows


def failed_note(seeds):
    return ("iperf3 sessions failed in seed " + ", ".join(str(x) for x in seeds)
            if seeds else "")


def mode_summary(mode):
    """What the matrix keeps of one mode of run.py's summary: the medians, and each seed's
    aggregate (for the paired ratio)."""
    out = {k: mode.get(k) for k in ("aggregate_mbps", "fraction_of_optimum", "ceiling_mbps",
                                     "fraction_of_ceiling", "cpu_percent", "ramp_s")}
    out["runs_mbps"] = {str(r["seed"]): r.get("aggregate_mbps")
                        for r in mode.get("runs") or [] if "seed" in r}
    # Seeds whose iperf3 sessions failed: their aggregate counts what the flows delivered
    # before, not a full run (mininet/README.md "Traffic notes").
    out["iperf3_failed_seeds"] = sorted(r["seed"] for r in mode.get("runs") or []
                                        if "seed" in r and r.get("errors"))
    return out


def table(cells):
    """The matrix as a Markdown table."""
    out = ["| fabric | traffic | rates | optimum | mode | Mb/s | of optimum | ÷ minimal "
           "| ÷ best(min, Valiant) | paired ÷ best | ramp s | note |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def f(v, p=2):
        return "-" if v is None else f"{v:.{p}f}"
    for c in cells:
        opt = (c.get("summary") or {}).get("optimum_mbps")
        for mode, a, frac, vs_min, vs_best, paired, ramp, note in cell_rows(c):
            out.append(f"| {c['fabric']} | {c['traffic']} | {c['rates']} | {f(opt)} | {mode} "
                       f"| {f(a)} | {f(frac, 3)} | {f(vs_min, 3)} | {f(vs_best, 3)} "
                       f"| {f(paired, 3)} | {f(ramp, 0)} | {note} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--fabrics", default=";".join(DEFAULT_FABRICS),
                    help="';'-separated topology specs (a spec holds commas)")
    ap.add_argument("--traffic", default=",".join(DEFAULT_TRAFFIC),
                    help="comma-separated patterns (adv+h: ADV+h of each Dragonfly)")
    ap.add_argument("--rates", default=",".join(DEFAULT_RATES), help="comma-separated H/G")
    ap.add_argument("--modes", default=DEFAULT_MODES)
    ap.add_argument("--repeat", type=int, default=3, help="seeds per cell (medians)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--warmup", type=float, default=20.0)
    ap.add_argument("--queue-pkts", type=int, default=50)
    ap.add_argument("--mtu", type=int, default=run.DEFAULT_MTU, help="run.py's --mtu")
    ap.add_argument("--port-stats", action=argparse.BooleanOptionalAction, default=False,
                    help="run.py's port-stall sampler (off: it takes a core's 8-10 %% from the "
                    "forwarding every mode's figure depends on)")
    ap.add_argument("--dry-run", action="store_true", help="list the cells and stop")
    ap.add_argument("--lock", help="hold this flock(2) file only while a cell runs (e.g. "
                    "/tmp/fabricflow-ovs.lock), so other users of Open vSwitch get it between cells")
    args = ap.parse_args(argv)
    fabrics = [x.strip() for x in args.fabrics.split(";") if x.strip()]
    patterns = [x.strip() for x in args.traffic.split(",") if x.strip()]
    rate_list = [x.strip() for x in args.rates.split(",") if x.strip()]
    for r in rate_list:
        parse_rates(r)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cells = []
    todo = [(f, p, r) for f in fabrics for p in patterns for r in rate_list]
    for i, (fabric, pattern, rates) in enumerate(todo, 1):
        cell = {"fabric": fabric, "traffic": pattern, "rates": rates}
        print(f"=== cell {i}/{len(todo)}: {fabric} {pattern} {rates}", flush=True)
        if args.dry_run:
            continue
        t0 = time.monotonic()
        lock = open(args.lock, "a") if args.lock else None
        try:
            if lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
            h, g = parse_rates(rates)
            summary = run.main([
                "--topology", fabric, "--traffic", traffic_for(fabric, pattern),
                "--modes", args.modes, "--repeat", str(args.repeat), "--seed", str(args.seed),
                "--duration", str(args.duration), "--warmup", str(args.warmup),
                "--host-bw", str(h), "--local-bw", str(h), "--global-bw", str(g),
                "--queue-pkts", str(args.queue_pkts), "--mtu", str(args.mtu),
                "--port-stats" if args.port_stats else "--no-port-stats",
                "--out", str(out / cell_name(fabric, pattern, rates))])
            cell["summary"] = {"optimum_mbps": summary.get("optimum_mbps"),
                               "modes": {m: mode_summary(v)
                                         for m, v in summary["modes"].items()}}
        except (ValueError, RuntimeError, TimeoutError, OSError, SystemExit) as e:
            cell["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:200]
            print(f"   cell not run: {cell['error']}", flush=True)
        finally:
            if lock:
                lock.close()  # releases the flock
        cell["wall_s"] = round(time.monotonic() - t0, 1)
        cells.append(cell)
        # After every cell, so an interrupted matrix keeps what it measured.
        (out / "matrix.json").write_text(json.dumps({"args": vars(args), "cells": cells},
                                                    indent=2))
        (out / "matrix.md").write_text(table(cells) + "\n")
    if not args.dry_run:
        print("\n" + table(cells))
    return cells


if __name__ == "__main__":
    main()
