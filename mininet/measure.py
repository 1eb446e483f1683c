"""Measurements: all-pairs ping, iperf3 JSON parsing, fairness, per-switch accepted throughput,
CPU of the processes that forward and measure."""

import json
import os
import statistics
import subprocess
import time


def all_pairs_ping(fn, count=1, timeout=3, retry=True, per_host=4):
    """Pings every ordered pair of hosts, all sources in parallel, `per_host` pings at a time
    from each source (thousands of simultaneous pings overload the userspace datapath on this
    2-core machine and then really lose packets).

    Returns {(src_json, dst_json): replies_ok} where ok means every one of `count` echo
    requests was answered.  With `retry`, a pair whose first attempt failed is tried once more
    (the very first packet of a pair may race the host's ARP resolution)."""
    hosts = fn.net.hosts
    ips = {h.name: fn.fabric.host(h.name)["ip"] for h in hosts}
    results = {}

    def round_(pairs_by_src):
        for h in hosts:
            dsts = pairs_by_src.get(h.name)
            if not dsts:
                continue
            # A script file, not a command line: the host shell's tty truncates lines > 4 KiB.
            script = fn.tmp / f"ping-{h.name}.sh"
            lines = []
            for i, d in enumerate(dsts):
                lines.append(f"(ping -n -q -c {count} -i 0.2 -W {timeout} {ips[d]} >/dev/null "
                             f"2>&1 && echo OK {d} || echo FAIL {d}) &\n")
                if (i + 1) % per_host == 0:
                    lines.append("wait\n")
            script.write_text("".join(lines) + "wait\n")
            h.sendCmd(f"bash {script}")
        out = {}
        for h in hosts:
            if not pairs_by_src.get(h.name):
                continue
            text = h.waitOutput()
            for line in text.splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0] in ("OK", "FAIL"):
                    out[(h.name, parts[1])] = parts[0] == "OK"
        return out

    todo = {h.name: [d.name for d in hosts if d is not h] for h in hosts}
    first = round_(todo)
    results.update(first)
    if retry:
        again = {}
        for (s, d), ok in first.items():
            if not ok:
                again.setdefault(s, []).append(d)
        results.update(round_(again))
    lng = fn.fabric.host_long
    return {(lng[s], lng[d]): ok for (s, d), ok in results.items()}


def parse_iperf(path):
    """Per-second throughput (Mb/s) from one iperf3 JSON report (the receiver's, as written
    by traffic.run_iperf); ([], error) if it produced nothing."""
    try:
        with open(path) as f:
            doc = json.loads(f.read() or "{}")
    except json.JSONDecodeError:
        return [], "unparseable JSON"
    if not isinstance(doc, dict) or not doc:
        return [], "no report"
    samples = []
    for iv in doc.get("intervals", []):
        s = iv.get("sum", {})
        # Skip the short tail interval the receiver reports when the sender stops: it would
        # land in the same second as the last full one and be counted twice in aggregates.
        if s.get("seconds", 1.0) < 0.5:
            continue
        samples.append((s.get("end", 0.0), s.get("bits_per_second", 0.0) / 1e6))
    return samples, doc.get("error")


def client_retransmits(server_path):
    """TCP retransmissions iperf3's client counted over its flow (``end.sum_sent.retransmits``
    of the client JSON beside the receiver's `server_path`, as traffic.run_iperf names them);
    None if the client wrote no usable report. Loss at a queue and reordering by a path change
    both show here: three duplicate ACKs are a retransmission to the sender."""
    path = str(server_path).replace(".server.json", ".client.json")
    try:
        with open(path) as f:
            doc = json.loads(f.read() or "{}")
    except (OSError, json.JSONDecodeError):
        return None
    sent = doc.get("end", {}).get("sum_sent", {}) if isinstance(doc, dict) else {}
    r = sent.get("retransmits")
    return int(r) if isinstance(r, (int, float)) else None


def ramp_s(agg_series, lo, hi, share=0.9):
    """How long a run took to reach its steady level: the first second whose aggregate
    (`agg_series`: [(t s, Mb/s)], one point per second) is at least `share` of the median
    aggregate over (lo, hi] s — the measured window. None without samples in the window or
    when its median is 0. A mode that starts slowly (QCN-SW learning an adversarial pattern
    from P = 100 %) loses part of a short window to this, and the window's mean alone does
    not say how much."""
    window = [v for t, v in agg_series if lo < t <= hi]
    if not window:
        return None
    level = share * statistics.median(window)
    if level <= 0:
        return None
    return next((t for t, v in agg_series if v >= level), None)


def jain(xs):
    xs = [x for x in xs if x is not None]
    if not xs or sum(xs) == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def flow_stats(per_flow_mbps):
    vals = sorted(per_flow_mbps.values())
    if not vals:
        return {"aggregate_mbps": 0.0, "flows": 0}
    return {"aggregate_mbps": round(sum(vals), 3), "flows": len(vals),
            "flow_min_mbps": round(vals[0], 3),
            "flow_median_mbps": round(statistics.median(vals), 3),
            "flow_max_mbps": round(vals[-1], 3),
            "jain": round(jain(vals), 4) if jain(vals) is not None else None}


def read_host_rx_bytes(fn):
    """Bytes received per switch on its host-facing ports (tx of the switch-side host ports)."""
    out = {}
    for h in fn.fabric.hosts:
        sw = fn.fabric.sw_short[h["switch"]]
        intf = f"{sw}-eth{h['port']}"
        try:
            with open(f"/sys/class/net/{intf}/statistics/tx_bytes") as f:
                out.setdefault(h["switch"], 0)
                out[h["switch"]] += int(f.read())
        except OSError:
            pass
    return out


class SwitchSampler:
    """Samples each switch's delivered-to-hosts bytes once per second (accepted throughput) and,
    when an agent runs, every P(port) it reports (the QCN-SW probabilities over time)."""

    def __init__(self, fn):
        self.fn = fn
        self.samples = []  # (t, {switch: bytes})
        self.p_samples = []  # (t, {(switch, port): P percent})

    def sample(self):
        now = time.monotonic()
        self.samples.append((now, read_host_rx_bytes(self.fn)))
        if getattr(self.fn, "agent_variant", None):
            try:
                m = self.fn.agent_metrics(names=("fabricflow_agent_p_percent",))
            except OSError:
                return
            ps = {}
            for (name, labels), v in m.items():
                if name == "fabricflow_agent_p_percent":
                    d = dict(labels)
                    sw = d.get("switch", "?")  # the bridge's short name: report the fabric's
                    ps[(self.fn.fabric.sw_long.get(sw, sw), d.get("port", "?"))] = v
            self.p_samples.append((now, ps))

    def p_series(self):
        """[(t_rel, switch, port, P)] relative to the first byte sample."""
        if not self.samples:
            return []
        t0 = self.samples[0][0]
        return [(round(t - t0, 2), sw, port, p)
                for t, ps in self.p_samples for (sw, port), p in sorted(ps.items())]

    def rates_mbps(self):
        """{switch: [(t_rel, Mb/s), ...]}"""
        if len(self.samples) < 2:
            return {}
        t0 = self.samples[0][0]
        out = {}
        for (ta, a), (tb, b) in zip(self.samples, self.samples[1:]):
            for sw in b:
                out.setdefault(sw, []).append(
                    (round(tb - t0, 2), (b[sw] - a.get(sw, 0)) * 8 / 1e6 / max(tb - ta, 1e-6)))
        return out


def _tx_mbytes(fn, keep):
    """{"SWITCH:PORT": MB sent since the network came up} for every end (link, switch) of a
    switch-to-switch link that `keep(link, switch)` accepts (None if the counter is unreadable)."""
    out = {}
    for link in fn.fabric.links:
        for sw, port in ((link["a"], link["a_port"]), (link["b"], link["b_port"])):
            if keep(link, sw):
                intf = f"{fn.fabric.sw_short[sw]}-eth{port}"
                try:
                    with open(f"/sys/class/net/{intf}/statistics/tx_bytes") as f:
                        out[f"{sw}:{port}"] = round(int(f.read()) / 1e6, 3)
                except OSError:
                    out[f"{sw}:{port}"] = None
    return dict(sorted(out.items()))


def global_tx_mbytes(fn, switches):
    """{"SWITCH:PORT": MB sent} for the global ports of the given (JSON-named) switches."""
    return _tx_mbytes(fn, lambda link, sw: link["class"] == "global" and sw in switches)


def fabric_tx_mbytes(fn):
    """{"SWITCH:PORT": MB sent} for every switch-to-switch port (both directions of a link)."""
    return _tx_mbytes(fn, lambda link, sw: True)


def ports_carrying(tx_mbytes, share=0.1):
    """How many ports sent at least `share` of the busiest port's bytes: the links a routing
    puts traffic on (control frames — LLDP, ARP, CNMs — stay far below any share of a data
    link's). None without a readable counter."""
    vals = [v for v in tx_mbytes.values() if v is not None]
    top = max(vals, default=0.0)
    return sum(1 for v in vals if v >= share * top) if top > 0 else None


class CpuMeter:
    """CPU time of the processes that forward and measure: ovs-vswitchd (every bridge's
    userspace datapath) and the controller and agent this FabricNet started, as % of one core
    over the metered window (all threads; /proc/PID/stat utime + stime). What an emulation or a
    probe costs the machine, side by side with the throughput it let through."""

    def __init__(self, fn):
        self._tick = os.sysconf("SC_CLK_TCK")
        self.pids = {}           # name -> [pid]: the hosts' throttlers count as one
        out = subprocess.run(["pidof", "ovs-vswitchd"], capture_output=True, text=True).stdout
        if out.split():
            self.pids["ovs-vswitchd"] = [int(out.split()[0])]
        for p in fn.procs:
            # A host's process runs under mnexec: the binary is a later argument.
            exes = [os.path.basename(str(a)) for a in p.args] if isinstance(p.args, list) else []
            name = next((e for e in exes if e.startswith("fabricflow-")), "")
            if name and p.poll() is None:
                # The port-stats sampler and the throttlers are the agent binary too: named for
                # their subcommand.
                sub = next((s for s in ("port-stats", "throttle") if s in p.args), None)
                self.pids.setdefault(sub or name.removeprefix("fabricflow-"), []).append(p.pid)
        self._start = self._read()
        self._threads_start = self._read_threads()
        self._machine_start = self._machine()

    def _read_threads(self):
        """ovs-vswitchd's CPU seconds by thread kind (the main thread, which forwards every
        non-PMD port, the revalidators that re-translate datapath flows after each GROUP_MOD,
        the handlers that answer upcalls), digits stripped from the thread names."""
        out = {}
        for pid in self.pids.get("ovs-vswitchd", []):
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    with open(f"/proc/{pid}/task/{tid}/comm") as f:
                        kind = f.read().strip().rstrip("0123456789") or "?"
                except OSError:
                    continue
                v = self._cpu_s(f"{pid}/task/{tid}")
                if v is not None:
                    out[kind] = out.get(kind, 0.0) + v
        return time.monotonic(), out

    @staticmethod
    def _machine():
        """/proc/stat's aggregate cpu line: (busy, softirq, total) in ticks, busy excluding idle
        and iowait."""
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v) - v[3] - v[4], v[6], sum(v)

    def thread_percent(self):
        """{ovs-vswitchd thread kind: % of one core} since construction (threads that ended
        in the window are missing from the end reading and so not counted)."""
        t0, c0 = self._threads_start
        t1, c1 = self._read_threads()
        dt = max(t1 - t0, 1e-9)
        return {k: round(100.0 * (c1[k] - c0.get(k, 0.0)) / dt, 1) for k in sorted(c1)
                if c1[k] - c0.get(k, 0.0) > 0}

    def machine_percent(self):
        """The whole machine since construction, in % of one core (200 = both of two cores
        busy): busy (every process, the veths' softirqs and tc shaping included) and softirq."""
        b0, s0, t0 = self._machine_start
        b1, s1, t1 = self._machine()
        cores = os.cpu_count() or 1
        dt = max(t1 - t0, 1)
        return {"machine": round(100.0 * cores * (b1 - b0) / dt, 1),
                "machine/softirq": round(100.0 * cores * (s1 - s0) / dt, 1)}

    def _cpu_s(self, pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                # The command may hold spaces: the fields after it follow the last ")".
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / self._tick

    def _read(self):
        def total(pids):
            vals = [self._cpu_s(p) for p in pids]
            return None if any(v is None for v in vals) else sum(vals)
        return time.monotonic(), {k: total(pids) for k, pids in self.pids.items()}

    def percent(self):
        """{process: % of one core} since construction."""
        t0, c0 = self._start
        t1, c1 = self._read()
        dt = max(t1 - t0, 1e-9)
        return {k: round(100.0 * (c1[k] - c0[k]) / dt, 1) for k in self.pids
                if c0.get(k) is not None and c1.get(k) is not None}

