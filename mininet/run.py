"""Run traffic on a Mininet fabricflow fabric under several routing modes and compare.

    sudo python3 mininet/run.py --topology dragonfly:p=1,a=2,h=2 --traffic adv+1 \\
        --modes minimal,valiant --duration 20 --out /tmp/ff-run

Modes are the entries of modes.py (each carries its programming, initial P, agent variant and
controller/agent settings): minimal (P=100), valiant (P=0): static plans by default, `--program
controller` runs them through `fabricflow-controller run`; qcnsw-base, qcnsw-sp, qcnsw-fc,
qcnsw-combined, qcnsw-combined-nocensus: the controller plus `fabricflow-agent run` (QCN-SW
variant, emulated congestion point); drb: the multipath plan and the agent's DRB policy;
ibacc: the throttled baseline (static minimal weights, CNMs to the culprits' hosts, InfiniBand CC
in every host: `fabricflow-agent throttle`). Traffic: the controller's pattern registry
(`fabricflow-controller traffic`), the same flows for every mode of one repeat.

Writes DIR/<mode>-r<N>.csv (time, flow, mbps), DIR/summary.json (results.Summary, with each
mode's settings), DIR/throughput.png, DIR/group0-switches.png, and prints a summary table.
Each run's aggregate is also compared with the throughput optimum of its flows at the run's link
rates (`fabricflow-controller bound`: `optimum_mbps`, any routing, and `fraction_of_optimum`) and
with its mode's own ceiling (`ceiling_mbps`, `fraction_of_ceiling`: minimal paths for minimal,
the planner's Valiant paths for valiant, both for the QCN-SW modes).
"""

import argparse
import csv
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import measure  # noqa: E402
import modes as modes_registry  # noqa: E402
import plots  # noqa: E402
import traffic  # noqa: E402
from fflaunch import (FabricNet, NotAvailable, ovs_log_size, ovs_send_errors_since,  # noqa: E402
                      require_runtime)
from fftopo import REPO, REPORT_BIN, LinkRates  # noqa: E402
from results import ModeResult, RunResult, Summary  # noqa: E402

# Defaults chosen so links, not this 2-core CPU, are the bottleneck: see mininet/README.md.
DEFAULT_BW = 5.0
# HPC Ethernet fabrics run jumbo frames, and the userspace datapath forwards every frame on one
# thread at a cost per frame: at 1 500 that thread, not the routing, bounds the modes
# (mininet/README.md "Jumbo frames").
DEFAULT_MTU = 9000


def resolve_modes(names, program="static"):
    """[modes.Mode] for the names, after `--program`; exits on an unknown or unrunnable one."""
    out = []
    for name in names:
        try:
            mode = modes_registry.lookup(name, program)
        except KeyError as e:
            raise SystemExit(e.args[0]) from None
        try:
            if mode.program == "controller":
                require_runtime("controller")
            if mode.agent_variant:
                require_runtime("agent")
        except NotAvailable as e:
            raise SystemExit(f"mode {name}: {e}") from None
        out.append(mode)
    return out


def steady(pts, args):
    """The values of (t, v) points inside the clients' run after the warm-up."""
    return [v for t, v in pts if args.warmup < t <= args.duration + 0.5]


def compute_bounds(args, rates):
    """{seed: traffic.bound()} for every repeat's seed; a seed whose bound fails maps to None
    (warned), so a run never fails for want of its ceiling."""
    out = {}
    for rep in range(args.repeat):
        seed = args.seed + rep
        try:
            out[seed] = traffic.bound(args.topology, args.traffic, seed, rates)
        except ValueError as e:
            print(f"   warning: no throughput optimum for seed {seed}: {e}", flush=True)
            out[seed] = None
    return out


def run_one(args, rates, mode, rep, outdir, bound=None):
    """One run of `mode` (a modes.Mode) with seed `args.seed + rep`: a RunResult; `bound` is
    traffic.bound() of that seed's flows."""
    seed = args.seed + rep
    keep = outdir / f"{mode.name}-r{rep}-logs" if mode.program == "controller" else None
    with FabricNet.for_mode(args.topology, rates, mode, keep_logs=keep) as fn:
        flows = traffic.flows(fn.fabric, args.traffic, seed)
        group0 = [sw["name"] for sw in fn.fabric.switches if sw["group"] == 0]
        sampler = measure.SwitchSampler(fn)
        log_at = ovs_log_size()
        ps_csv = outdir / f"{mode.name}-r{rep}-port-stats.csv" if args.port_stats else None
        if ps_csv:
            fn.start_port_stats(ps_csv)
        cpu = measure.CpuMeter(fn)
        files = traffic.run_iperf(fn, flows, args.duration, fn.tmp / "iperf",
                                  streams=args.streams, on_tick=sampler.sample, cc=args.tcp_cc)
        cpu_percent = cpu.percent()
        cpu_percent.update({f"ovs-vswitchd/{k}": v for k, v in cpu.thread_percent().items()})
        cpu_percent.update(cpu.machine_percent())
        ps_sampler = fn.stop_port_stats() if ps_csv else None
        send_errors = ovs_send_errors_since(log_at)
        if send_errors:
            print(f"   warning: ovs-vswitchd logged {send_errors} 'error sending' lines: it dropped "
                  f"frames outside the queues (scripts/ovs-start.sh)", flush=True)
        cnms, mods = fn.agent_counters()
        throttle = fn.throttle_totals()
        cnms_by_level = fn.agent_cnms_by_level()
        if cnms_by_level:
            (outdir / f"{mode.name}-r{rep}-cnms-by-level.json").write_text(
                json.dumps(cnms_by_level, indent=1, sort_keys=True))
            print("   CNMs by level (generated/charged/relayed): "
                  + ", ".join(f"{lv}: {r['generated']}/{r['charged']}/{r['relayed']}"
                              for lv, r in sorted(cnms_by_level.items())), flush=True)
        policy_events = fn.agent_policy_events()
        if policy_events:
            print("   policy events: " + ", ".join(f"{k} {v}" for k, v in
                                                  sorted(policy_events.items())), flush=True)
        cp_counters = fn.agent_cp_counters()
        if cp_counters:
            print("   congestion point: " + ", ".join(f"{k} {v}" for k, v in
                                                      sorted(cp_counters.items())), flush=True)
        g0_global = measure.global_tx_mbytes(fn, group0)
        fabric_tx = measure.fabric_tx_mbytes(fn)
        timings = dict(fn.timings)
        settings = fn.settings()
        cgroup = traffic.traffic_cgroup()
        settings["traffic_cpu_cgroup"] = str(cgroup.parent) if cgroup else None
        per_flow, series, errors = {}, {}, {}
        for label, path in files.items():
            samples, err = measure.parse_iperf(path)
            series[label] = samples
            if err:
                errors[label] = err
            # Mean over the run after the warm-up (slow start, ARP, hash settling, QCN-SW
            # converging from P = 100) and nothing the receiver reported after the client's
            # duration.
            vals = steady(samples, args) or [v for _, v in samples]
            per_flow[label] = statistics.mean(vals) if vals else 0.0
        retrans = [measure.client_retransmits(path) for path in files.values()]
        retrans = sum(r for r in retrans if r is not None) if any(
            r is not None for r in retrans) else None
        if retrans is not None:
            print(f"   TCP retransmissions (all senders): {retrans}", flush=True)
        if errors:
            print(f"   warning: {len(errors)} of {len(files)} iperf3 sessions failed (e.g. "
                  f"{next(iter(errors.values()))!r}): this run's aggregate counts only what "
                  f"was delivered before", flush=True)
        sw_rates = sampler.rates_mbps()
        p_series = sampler.p_series()
    port_stats = (port_report(ps_csv, outdir / f"{mode.name}-r{rep}-report", ps_sampler)
                  if ps_csv else None)
    csv_path = outdir / f"{mode.name}-r{rep}.csv"
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["time_s", "flow", "mbps"])
        for label, samples in series.items():
            for t, v in samples:
                w.writerow([round(t, 2), label, round(v, 4)])
    p_csv = None
    if p_series:
        p_csv = outdir / f"{mode.name}-r{rep}-p.csv"
        with open(p_csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["time_s", "switch", "port", "p_percent"])
            w.writerows(p_series)
    agg = {}
    for samples in series.values():
        for t, v in samples:
            if t <= args.duration + 0.5:
                agg[round(t)] = agg.get(round(t), 0.0) + v
    agg_series = sorted(agg.items())
    ramp = measure.ramp_s(agg_series, args.warmup, args.duration + 0.5)
    if ramp is not None:
        print(f"   ramp: at 90 % of the window's median aggregate after {ramp} s", flush=True)
    delivered = {}  # per sample: every switch shares the sample's instant
    for pts in sw_rates.values():
        for t, v in pts:
            delivered[t] = delivered.get(t, 0.0) + v
    g0 = {}
    for sw, pts in sw_rates.items():
        if sw in group0:
            vals = steady(pts, args)
            g0[sw] = statistics.mean(vals) if vals else 0.0
    return RunResult(
        mode=mode.name, rep=rep, seed=seed, flows=flows, per_flow_mbps=per_flow,
        agg_series=agg_series, errors=errors, timings=timings,
        cnms_generated=cnms, group_modifies=mods, ovs_send_error_lines=send_errors,
        policy_events=policy_events, cp_counters=cp_counters,
        group0_switches=group0, group0_accepted_mbps=g0, group0_global_tx_mbytes=g0_global,
        fabric_tx_mbytes=fabric_tx,
        p_samples=p_series,
        # Median P over the steady window per (group-0 switch, port): where QCN-SW settled.
        group0_p_median={f"{sw}:{port}": round(statistics.median(v), 1)
                         for (sw, port), v in _p_window(p_series, args, group0).items()},
        csv=str(csv_path), p_csv=str(p_csv) if p_csv else None, settings=settings,
        cpu_percent=cpu_percent, bound=bound, ceiling_routing=mode.ceiling(),
        port_stats=port_stats, throttle=throttle, tcp_retransmits=retrans, ramp_s=ramp,
        delivered_series=[(t, round(v, 2)) for t, v in sorted(delivered.items())])


def port_report(csv_path, report_dir, sampler, top=5):
    """`fabricflow-report` on a run's port-stats.csv (every switch port's egress backlog time
    at 100 ms: the seed study's method on live counters, mininet/README.md "Port stall
    telemetry"), written to `report_dir`: what summary.json records of it, with the `top`
    most stalled ports and the `top` congestion roots (ports that drop most: the lossy fabric's
    congestion points)."""
    out = {"csv": str(csv_path), "report": str(report_dir), "sampler": sampler, "top_ports": [],
           "roots": []}
    if not REPORT_BIN.exists():
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "fabricflow-report"],
                       cwd=REPO, check=False)
    r = subprocess.run([str(REPORT_BIN), str(csv_path), "--out", str(report_dir),
                        "--direction", "tx"], capture_output=True, text=True)
    if r.returncode:
        print(f"   warning: fabricflow-report failed: {r.stderr.strip()}", flush=True)
        return out
    with open(report_dir / "top-ports.csv", newline="") as f:
        out["top_ports"] = [dict(row, fitf_mean=float(row["fitf_mean"]))
                            for _, row in zip(range(top), csv.DictReader(f))]
    with open(report_dir / "roots.csv", newline="") as f:
        out["roots"] = [dict(row, discards=int(row["discards"]),
                             utilisation=float(row["utilisation"]))
                        for _, row in zip(range(top), csv.DictReader(f))]
    return out


def _p_window(p_series, args, switches):
    out = {}
    for t, sw, port, p in p_series:
        if sw in switches and args.warmup < t <= args.duration + 0.5:
            out.setdefault((sw, port), []).append(p)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", required=True)
    ap.add_argument("--traffic", required=True, help="uniform | adv+K | hotspot[:C] | linkhot[:C] | shuffle")
    ap.add_argument("--modes", default="minimal,valiant",
                    help=f"comma-separated, of: {', '.join(modes_registry.MODES)}")
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--warmup", type=float, default=1.0,
                    help="seconds at the start of each run left out of every mean (steady state)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--host-bw", type=float, default=DEFAULT_BW, help="Mb/s")
    ap.add_argument("--local-bw", type=float, default=DEFAULT_BW, help="Mb/s (fat-tree: up; file fabric: every switch link)")
    ap.add_argument("--global-bw", type=float, default=DEFAULT_BW, help="Mb/s (fat-tree: down)")
    ap.add_argument("--queue-pkts", type=int, default=50)
    ap.add_argument("--mtu", type=int, default=DEFAULT_MTU,
                    help="every interface's MTU (jumbo by default, as HPC fabrics run: the "
                         "userspace datapath's cost is per frame); above 1500 the queues hold "
                         "--queue-pkts standard frames' octets")
    ap.add_argument("--streams", type=int, default=4, help="iperf3 -P")
    ap.add_argument("--tcp-cc", default=traffic.DEFAULT_TCP_CC,
                    help="hosts' TCP congestion control (default cubic, Linux's default)")
    ap.add_argument("--port-stats", action=argparse.BooleanOptionalAction, default=True,
                    help="sample every switch port's egress backlog (`fabricflow-agent port-stats`, "
                    "a netlink dump of every qdisc each 5 ms: 8-10 %% of a core on 36 switches, "
                    "taken from the forwarding it measures); --no-port-stats for routing figures")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--program", choices=["static", "controller"], default="static",
                    help="how minimal/valiant are programmed (QCN-SW modes: always controller)")
    args = ap.parse_args(argv)
    modes = resolve_modes([m.strip() for m in args.modes.split(",") if m.strip()], args.program)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rates = LinkRates(host=args.host_bw, local=args.local_bw, glob=args.global_bw,
                      up=args.local_bw, down=args.global_bw, queue_pkts=args.queue_pkts,
                      mtu=args.mtu)
    if not 0 <= args.warmup < args.duration:
        ap.error("--warmup must be at least 0 and shorter than --duration")
    summary = Summary(topology=args.topology, traffic=args.traffic, duration_s=args.duration,
                      warmup_s=args.warmup, seed=args.seed, repeat=args.repeat,
                      streams_per_flow=args.streams, tcp_cc=args.tcp_cc,
                      link_rates_mbps=rates.as_dict(), bounds=compute_bounds(args, rates))
    summary.modes.update({m.name: ModeResult(m.name, m.as_dict()) for m in modes})
    # Seed by seed, every mode in turn: the machine drifts over an invocation (the same mode and
    # seeds moved by 16 % between invocations), and run mode after mode that drift would land on
    # whichever modes ran last; interleaved it spreads over all of them.
    for rep in range(args.repeat):
        for mode in modes:
            t0 = time.monotonic()
            print(f"== {mode.name} run {rep + 1}/{args.repeat}", flush=True)
            r = run_one(args, rates, mode, rep, out, summary.bounds.get(args.seed + rep))
            r.wall_s = round(time.monotonic() - t0, 1)
            summary.modes[mode.name].runs.append(r)
    doc = summary.to_json()
    (out / "summary.json").write_text(json.dumps(doc, indent=2))
    write_plots(summary, out)
    print_table(doc)
    print(f"\nCSV, summary.json, throughput.png, group0-switches.png and (QCN-SW modes) "
          f"p-group0.png in {out}")
    return doc


def write_plots(summary, out):
    """Run 0 of every mode: aggregate over time, group 0's switches, group 0's P."""
    firsts = {name: m.runs[0] for name, m in summary.modes.items()}
    group0 = {sw for r in firsts.values() for sw in r.group0_switches}
    title = f"{summary.topology} {summary.traffic}"
    plots.throughput_over_time({n: r.agg_series for n, r in firsts.items()},
                               out / "throughput.png", title)
    plots.per_switch_bars({n: r.group0_accepted_mbps for n, r in firsts.items()},
                          out / "group0-switches.png",
                          f"{title}: accepted throughput, group 0 switches")
    plots.p_over_time({n: [p for p in r.p_samples if p[1] in group0]
                       for n, r in firsts.items() if r.p_samples},
                      out / "p-group0.png", f"{title}: P of group 0's ports")


def print_table(summary):
    r = summary["link_rates_mbps"]
    print(f"\n{summary['topology']}  traffic {summary['traffic']}  {summary['duration_s']} s "
          f"(first {summary.get('warmup_s', 1.0):g} s not counted)  links host {r['host']} / "
          f"local {r['local']} / global {r['global']} Mb/s, queues {r['queue_pkts']} pkts, "
          f"TCP {summary.get('tcp_cc', '?')}")
    opt = summary.get("optimum_mbps")
    if opt is not None:
        print(f"throughput optimum of seed {summary['seed']}'s flows (any routing, "
              f"fabricflow-controller bound): {opt:.2f} Mb/s")
    w = max([16] + [len(m) + 2 for m in summary["modes"]])
    hdr = f"{'mode':<{w}}{'flows':>6}{'aggr Mb/s':>11}{'min':>8}{'median':>8}{'max':>8}" \
          f"{'Jain':>7}{'CNMs':>7}{'MODs':>7}{'of opt':>8}{'ceiling':>20}{'of ceil':>9}" \
          f"{'vswitchd%':>10}{'agent%':>7}{'thr%':>6}{'ramp s':>7}"
    print(hdr)
    print("-" * len(hdr))
    for mode, s in summary["modes"].items():
        cpu = s.get("cpu_percent", {})

        def f(v, w, p=2):
            return f"{'-':>{w}}" if v is None else f"{v:>{w}.{p}f}"
        ceiling = "-" if s.get("ceiling_mbps") is None else \
            f"{s['ceiling_routing']} {s['ceiling_mbps']:.2f}"
        print(f"{mode:<{w}}{s['flows']:>6}{f(s['aggregate_mbps'], 11)}{f(s['flow_min_mbps'], 8)}"
              f"{f(s['flow_median_mbps'], 8)}{f(s['flow_max_mbps'], 8)}{f(s['jain'], 7, 3)}"
              f"{f(s['cnms_generated'], 7, 0)}{f(s['group_modifies'], 7, 0)}"
              f"{f(s.get('fraction_of_optimum'), 8, 3)}{ceiling:>20}"
              f"{f(s.get('fraction_of_ceiling'), 9, 3)}"
              f"{f(cpu.get('ovs-vswitchd'), 10, 0)}{f(cpu.get('agent'), 7, 0)}"
              f"{f(cpu.get('throttle'), 6, 0)}{f(s.get('ramp_s'), 7, 0)}")


if __name__ == "__main__":
    main()
