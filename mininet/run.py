#!/usr/bin/python3
"""Run traffic on a Mininet fabricflow fabric under several routing modes and compare.

    sudo python3 mininet/run.py --topology dragonfly:p=1,a=2,h=2 --traffic adv+1 \\
        --modes minimal,valiant --duration 20 --out /tmp/ff-run

Modes: minimal (P=100), valiant (P=0): static plans by default, `--program controller` runs
them through `fabricflow-controller run`; qcnsw-base, qcnsw-sp, qcnsw-fc, qcnsw-combined: the
controller plus `fabricflow-agent run` (QCN-SW variant, emulated congestion point).

Writes DIR/<mode>-r<N>.csv (time, flow, mbps), DIR/summary.json, DIR/throughput.png,
DIR/group0-switches.png, and prints a summary table.
"""

import argparse
import csv
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import measure  # noqa: E402
import plots  # noqa: E402
import traffic  # noqa: E402
from fflaunch import (FabricNet, NotAvailable, ovs_log_size, ovs_send_errors_since,  # noqa: E402
                      require_runtime)
from fftopo import LinkRates  # noqa: E402

# mode -> (programming, P-minimal, agent variant)
MODES = {
    "minimal": ("static", 100, None),
    "valiant": ("static", 0, None),
    "qcnsw-base": ("controller", 100, "base"),
    "qcnsw-sp": ("controller", 100, "source-processing"),
    "qcnsw-fc": ("controller", 100, "feedback-comparison"),
    "qcnsw-combined": ("controller", 100, "combined"),
}

# Defaults chosen so links, not this 2-core CPU, are the bottleneck: see mininet/README.md.
DEFAULT_BW = 5.0


def check_modes(modes, program="static"):
    for m in modes:
        if m not in MODES:
            raise SystemExit(f"unknown mode {m!r}; known: {', '.join(MODES)}")
        prog, _, agent = MODES[m]
        if program == "controller":
            prog = "controller"
        try:
            if prog == "controller":
                require_runtime("controller")
            if agent:
                require_runtime("agent")
        except NotAvailable as e:
            raise SystemExit(f"mode {m}: {e}") from None


def programming(args, mode):
    """The mode's programming; `--program controller` moves the static modes onto the
    controller runtime (the QCN-SW modes always need it)."""
    prog, _, agent = MODES[mode]
    return "controller" if getattr(args, "program", "static") == "controller" else prog


def run_one(args, rates, mode, rep, outdir):
    _, p_min, agent = MODES[mode]
    prog = programming(args, mode)
    keep = outdir / f"{mode}-r{rep}-logs" if prog == "controller" else None
    with FabricNet(args.topology, rates, mode=prog, p_minimal=p_min,
                   agent_variant=agent, keep_logs=keep) as fn:
        flows = traffic.flows(fn.fabric, args.traffic, args.seed + rep)
        group0 = [sw["name"] for sw in fn.fabric.switches if sw["group"] == 0]
        sampler = measure.SwitchSampler(fn)
        log_at = ovs_log_size()
        files = traffic.run_iperf(fn, flows, args.duration, fn.tmp / "iperf",
                                  streams=args.streams, on_tick=sampler.sample, cc=args.tcp_cc)
        send_errors = ovs_send_errors_since(log_at)
        if send_errors:
            print(f"   warning: ovs-vswitchd logged {send_errors} 'error sending' lines: it dropped "
                  f"frames outside the queues (scripts/ovs-start.sh)", flush=True)
        cnms, mods = fn.agent_counters()
        g0_global = measure.global_tx_mbytes(fn, group0)
        timings = dict(fn.timings)
        per_flow, series, errors = {}, {}, {}
        for label, path in files.items():
            samples, err = measure.parse_iperf(path)
            series[label] = samples
            if err:
                errors[label] = err
            # Mean over the run after the warm-up (slow start, ARP, hash settling, QCN-SW
            # converging from P = 100) and nothing the receiver reported after the client's
            # duration.
            vals = ([v for t, v in samples if args.warmup < t <= args.duration + 0.5]
                    or [v for _, v in samples])
            per_flow[label] = statistics.mean(vals) if vals else 0.0
        sw_rates = sampler.rates_mbps()
        p_series = sampler.p_series()
    csv_path = outdir / f"{mode}-r{rep}.csv"
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["time_s", "flow", "mbps"])
        for label, samples in series.items():
            for t, v in samples:
                w.writerow([round(t, 2), label, round(v, 4)])
    p_csv = None
    if p_series:
        p_csv = outdir / f"{mode}-r{rep}-p.csv"
        with open(p_csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["time_s", "switch", "port", "p_percent"])
            w.writerows(p_series)
    agg = {}
    for samples in series.values():
        for t, v in samples:
            if t <= args.duration + 0.5:
                agg[round(t)] = agg.get(round(t), 0.0) + v
    def window(pts):  # the clients' run, minus the warm-up
        vals = [v for t, v in pts if args.warmup < t <= args.duration + 0.5]
        return statistics.mean(vals) if vals else 0.0
    g0 = {sw: window(pts) for sw, pts in sw_rates.items() if sw in group0}
    return {"per_flow": per_flow, "agg_series": sorted(agg.items()), "group0": g0,
            "cnms": cnms, "group_mods": mods, "errors": errors, "csv": str(csv_path),
            "timings": timings, "flows": [f"{s}->{d}" for s, d in flows],
            "ovs_send_error_lines": send_errors,
            "group0_global_tx_mbytes": g0_global, "p_csv": str(p_csv) if p_csv else None,
            "group0_switches": group0,
            # Median P over the steady window per (group-0 switch, port): where QCN-SW settled.
            "group0_p_median": {f"{sw}:{port}": round(statistics.median(v), 1)
                                for (sw, port), v in _p_window(p_series, args, group0).items()}}


def _p_window(p_series, args, switches):
    out = {}
    for t, sw, port, p in p_series:
        if sw in switches and args.warmup < t <= args.duration + 0.5:
            out.setdefault((sw, port), []).append(p)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", required=True)
    ap.add_argument("--traffic", required=True, help="uniform | adv+K | hotspot[:C]")
    ap.add_argument("--modes", default="minimal,valiant")
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--warmup", type=float, default=1.0,
                    help="seconds at the start of each run left out of every mean (steady state)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--host-bw", type=float, default=DEFAULT_BW, help="Mb/s")
    ap.add_argument("--local-bw", type=float, default=DEFAULT_BW, help="Mb/s (fat-tree: up)")
    ap.add_argument("--global-bw", type=float, default=DEFAULT_BW, help="Mb/s (fat-tree: down)")
    ap.add_argument("--queue-pkts", type=int, default=50)
    ap.add_argument("--streams", type=int, default=4, help="iperf3 -P")
    ap.add_argument("--tcp-cc", default=traffic.DEFAULT_TCP_CC,
                    help="hosts' TCP congestion control (default cubic, Linux's default)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--program", choices=["static", "controller"], default="static",
                    help="how minimal/valiant are programmed (QCN-SW modes: always controller)")
    args = ap.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    check_modes(modes, args.program)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rates = LinkRates(host=args.host_bw, local=args.local_bw, glob=args.global_bw,
                      up=args.local_bw, down=args.global_bw, queue_pkts=args.queue_pkts)
    if not 0 <= args.warmup < args.duration:
        ap.error("--warmup must be at least 0 and shorter than --duration")
    summary = {"topology": args.topology, "traffic": args.traffic, "duration_s": args.duration,
               "warmup_s": args.warmup,
               "seed": args.seed, "repeat": args.repeat, "streams_per_flow": args.streams,
               "tcp_cc": args.tcp_cc,
               "link_rates_mbps": rates.as_dict(), "modes": {}}
    series_plot, g0_plot, p_plot = {}, {}, {}
    group0_names = set()
    for mode in modes:
        runs = []
        for rep in range(args.repeat):
            t0 = time.monotonic()
            print(f"== {mode} run {rep + 1}/{args.repeat}", flush=True)
            r = run_one(args, rates, mode, rep, out)
            group0_names.update(r["group0_switches"])
            r["wall_s"] = round(time.monotonic() - t0, 1)
            runs.append(r)
        stats = [measure.flow_stats(r["per_flow"]) for r in runs]
        keys = ["aggregate_mbps", "flow_min_mbps", "flow_median_mbps", "flow_max_mbps", "jain"]
        # Median over the repeats (robust to one run hit by this shared machine's load).
        merged = {k: round(statistics.median(s[k] for s in stats if s.get(k) is not None), 4)
                  if any(s.get(k) is not None for s in stats) else None for k in keys}
        merged.update({
            "flows": stats[0]["flows"],
            "runs": [dict(s, csv=r["csv"], wall_s=r["wall_s"], errors=r["errors"],
                          timings=r["timings"], cnms_generated=r["cnms"],
                          group_modifies=r["group_mods"],
                          ovs_send_error_lines=r["ovs_send_error_lines"])
                     for s, r in zip(stats, runs)],
            "cnms_generated": runs[0]["cnms"], "group_modifies": runs[0]["group_mods"],
            "group0_accepted_mbps": {k: round(v, 3) for k, v in runs[0]["group0"].items()},
            # Bytes each global port of group 0 sent (run 0): where the buckets put the traffic.
            "group0_global_tx_mbytes": runs[0]["group0_global_tx_mbytes"],
            "group0_p_median": runs[0]["group0_p_median"],
        })
        summary["modes"][mode] = merged
        series_plot[mode] = runs[0]["agg_series"]
        if runs[0]["p_csv"]:
            with open(runs[0]["p_csv"]) as f:
                p_plot[mode] = [(float(r["time_s"]), r["switch"], r["port"], float(r["p_percent"]))
                                for r in csv.DictReader(f) if r["switch"] in group0_names]
        g0_plot[mode] = runs[0]["group0"]
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    title = f"{args.topology} {args.traffic}"
    plots.throughput_over_time(series_plot, out / "throughput.png", title)
    plots.per_switch_bars(g0_plot, out / "group0-switches.png",
                          f"{title}: accepted throughput, group 0 switches")
    plots.p_over_time(p_plot, out / "p-group0.png", f"{title}: P of group 0's ports")
    print_table(summary)
    print(f"\nCSV, summary.json, throughput.png, group0-switches.png and (QCN-SW modes) "
          f"p-group0.png in {out}")
    return summary


def print_table(summary):
    r = summary["link_rates_mbps"]
    print(f"\n{summary['topology']}  traffic {summary['traffic']}  {summary['duration_s']} s "
          f"(first {summary.get('warmup_s', 1.0):g} s not counted)  links host {r['host']} / "
          f"local {r['local']} / global {r['global']} Mb/s, queues {r['queue_pkts']} pkts, "
          f"TCP {summary.get('tcp_cc', '?')}")
    hdr = f"{'mode':<16}{'flows':>6}{'aggr Mb/s':>11}{'min':>8}{'median':>8}{'max':>8}" \
          f"{'Jain':>7}{'CNMs':>7}{'MODs':>7}"
    print(hdr)
    print("-" * len(hdr))
    for mode, s in summary["modes"].items():
        def f(v, w, p=2):
            return f"{'-':>{w}}" if v is None else f"{v:>{w}.{p}f}"
        print(f"{mode:<16}{s['flows']:>6}{f(s['aggregate_mbps'], 11)}{f(s['flow_min_mbps'], 8)}"
              f"{f(s['flow_median_mbps'], 8)}{f(s['flow_max_mbps'], 8)}{f(s['jain'], 7, 3)}"
              f"{f(s['cnms_generated'], 7, 0)}{f(s['group_modifies'], 7, 0)}")


if __name__ == "__main__":
    main()
