"""Traffic flows from the controller's pattern registry, and the iperf3 runner.

:func:`flows` asks ``fabricflow-controller traffic --topology SPEC --traffic PATTERN --seed N``
for the flows: the patterns (``uniform``, ``adv+K``, ``hotspot[:C]``) are defined once, in
controller/src/traffic.rs, for the simulator and this harness alike; the harness runs their
balanced one-flow-per-host sample (uniform: a random derangement; adv+K: a random bijection onto
group G+K's hosts; hotspot: C = 4 contributors outside the hot host's group send to it, the rest
a derangement among themselves, the hot host only receives). Same topology, pattern and seed:
the same flows.

:func:`bound` asks ``fabricflow-controller bound`` for the throughput optimum of the same flows
on the same fabric at the run's link rates (multi-commodity flow LPs, controller/src/bound/): the
ceiling that ``fraction_of_optimum`` in summary.json divides by.

Flows are iperf3 TCP with several parallel streams (``-P 4``: OVS's select hash covers TCP ports,
so the streams of one flow can take different buckets; UDP ports are not hashed), one server per
flow on its own port, client output ``-i 1 --json``.
"""

import json
import subprocess
import time
from pathlib import Path

from fflaunch import wait_until
from fftopo import ensure_controller_bin


def flows(fabric, name, seed):
    """[(src, dst)] JSON host names of pattern `name` on `fabric` (an fftopo.Fabric) for `seed`;
    ValueError with the controller's message for an unknown pattern or one the fabric cannot
    carry (e.g. adv+K with K a multiple of the groups)."""
    r = subprocess.run([str(ensure_controller_bin()), "traffic", "--topology", fabric.spec,
                        "--traffic", name, "--seed", str(int(seed))],
                       capture_output=True, text=True)
    if r.returncode:
        msg = r.stderr.strip() or f"exit {r.returncode}"
        if "unrecognized subcommand" in msg:
            msg += (" (a controller built before `traffic` existed: cargo build --release "
                    "-p fabricflow-controller, or point FABRICFLOW_BIN_DIR at a newer build)")
        raise ValueError(msg)
    return [(f["src"], f["dst"]) for f in json.loads(r.stdout)["flows"]]


# Every routing `bound` knows: any (the optimum), and each mode's own paths (modes.Mode.ceiling).
BOUND_ROUTINGS = ("any", "minimal", "valiant", "adaptive")


def bound(spec, name, seed, rates, routings=BOUND_ROUTINGS):
    """{routing: {"lambda", "concurrent_mbps", "max_aggregate_mbps", "lp", "seconds"}} for the
    flows of pattern `name` with `seed` on fabric `spec` with links at `rates` (an
    fftopo.LinkRates): `fabricflow-controller bound --format json`. ValueError with the
    controller's message if it refuses."""
    cmd = [str(ensure_controller_bin()), "bound", "--topology", spec, "--traffic", name,
           "--seed", str(int(seed)), "--routing", ",".join(routings), "--format", "json",
           "--host-bw", str(rates.host), "--local-bw", str(rates.local),
           "--global-bw", str(rates.glob), "--up-bw", str(rates.up),
           "--down-bw", str(rates.down)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        msg = r.stderr.strip() or f"exit {r.returncode}"
        if "unrecognized subcommand" in msg:
            msg += " (a controller built before `bound` existed: cargo build --release)"
        raise ValueError(msg)
    return {b["routing"]: b for b in json.loads(r.stdout)["bounds"]}


# The senders' TCP congestion control, pinned (iperf3 -C) because a Mininet host inherits the
# machine's default (bbr on this one, cubic on a stock Debian) and the results depend on it.
DEFAULT_TCP_CC = "cubic"


# The hosts' traffic processes share one CPU cgroup at the least weight (cgroup v1 cpu.shares
# 2, v2 cpu.weight 1): they get what the switches leave. iperf3 3.12 busy-loops in pselect on a
# congested fabric, and nice does not hold it back: every Mininet host is its own session, so
# the kernel's autogroup scheduling gives each host's processes the weight of ovs-vswitchd
# whatever their nice value, and 72 spinning hosts left the switch 10-40 % of a core for the
# first 6-13 s of a run (mininet/README.md "The traffic's CPU").
TRAFFIC_CGROUP_V1 = Path("/sys/fs/cgroup/cpu/fabricflow-traffic")
TRAFFIC_CGROUP_V2 = Path("/sys/fs/cgroup/fabricflow-traffic")


def _write(path, text):
    try:
        path.write_text(text)
        return True
    except OSError:
        return False


def _cgroup(path, knob, value):
    """Creates cgroup `path` with `knob` = `value`: its `cgroup.procs`, or None if refused."""
    try:
        path.mkdir(exist_ok=True)
    except OSError:
        return None
    return path / "cgroup.procs" if _write(path / knob, value) else None


def traffic_cgroup():
    """The `cgroup.procs` file of the traffic's CPU cgroup (created on first use), or None
    where this machine offers neither hierarchy's cpu controller (then nice alone applies)."""
    if Path("/sys/fs/cgroup/cpu/cpu.shares").exists():
        return _cgroup(TRAFFIC_CGROUP_V1, "cpu.shares", "2")
    root = Path("/sys/fs/cgroup")
    try:
        if "cpu" not in (root / "cgroup.controllers").read_text().split():
            return None
    except OSError:
        return None
    _write(root / "cgroup.subtree_control", "+cpu")
    return _cgroup(TRAFFIC_CGROUP_V2, "cpu.weight", "1")


def into_traffic_cgroup(procs, popen):
    """Moves a just-started host process (`popen`: Mininet's popen, which execs the command in
    place) into the traffic's cgroup (`procs`: traffic_cgroup()); what it execs or forks later
    stays there. From the harness: inside a host, /sys is the host's own and has no cgroups."""
    if procs is not None:
        _write(procs, str(popen.pid))
    return popen


def client_shell(go, iperf_args):
    """One iperf3 client's shell command: wait for the `go` file, then iperf3 at nice 19."""
    return f"while [ ! -e {go} ]; do sleep 0.02; done; exec nice -n 19 iperf3 {iperf_args}"


def run_iperf(fn, flows, duration, outdir, streams=4, base_port=5301, on_tick=None,
              cc=DEFAULT_TCP_CC, client_args=()):
    """Runs one iperf3 TCP flow per (src, dst); returns {flow_label: receiver's JSON path}.

    `on_tick` (if given) is called about once a second while the clients run; `cc` is the
    senders' TCP congestion control (None: the host's default); `client_args` go to every
    client (e.g. ("--fq-rate", "6M"): socket pacing below the links' rate)."""
    outdir.mkdir(parents=True, exist_ok=True)
    procs = traffic_cgroup()
    servers, clients, files = [], [], {}
    by_dst = {}
    for i, (src, dst) in enumerate(flows):
        port = base_port + i
        d = fn.node(dst)
        # The receiver's per-second report is the accepted throughput; the client's counts
        # bytes handed to its socket, which runs ahead of delivery under congestion.
        files[f"{src}->{dst}"] = outdir / f"flow{i:03d}.server.json"
        with open(files[f"{src}->{dst}"], "w") as out:  # the child keeps its own copy
            servers.append(into_traffic_cgroup(procs, fn.host_popen(
                d, ["iperf3", "-s", "-1", "-p", str(port), "-i", "1", "--json"],
                stdout=out, stderr=subprocess.STDOUT)))
        by_dst.setdefault(d, []).append(port)

    def listening():
        for d, ports in by_dst.items():
            out = d.cmd("ss -ltnH")
            if not all(f":{p} " in out for p in ports):
                return False
        return True
    wait_until(listening, 20, "iperf3 servers listening", 0.2)

    # Starting a process in a Mininet host takes a noticeable fraction of a second here, so
    # clients wait for a "go" file and all start together: the flows must overlap in time.
    go = outdir / "go"
    go.unlink(missing_ok=True)
    for i, (src, dst) in enumerate(flows):
        path = outdir / f"flow{i:03d}.client.json"
        ip = fn.fabric.host(dst)["ip"]
        cmd = client_shell(go, f"-c {ip} -p {base_port + i} -t {duration} -P {streams} -i 1 "
                               f"--json --connect-timeout 5000{f' -C {cc}' if cc else ''}"
                               f"{''.join(' ' + a for a in client_args)}")
        with open(path, "w") as out:
            clients.append(into_traffic_cgroup(procs, fn.host_popen(
                fn.node(src), ["sh", "-c", cmd], stdout=out, stderr=subprocess.STDOUT)))
    go.touch()
    if on_tick:
        on_tick()  # the baseline sample, at the moment the clients are released
    deadline = time.monotonic() + duration + 30
    while any(c.poll() is None for c in clients):
        if time.monotonic() > deadline:
            for c in clients:
                if c.poll() is None:
                    c.kill()
            break
        if on_tick:
            on_tick()
        time.sleep(1)
    # One-shot servers exit (and write their JSON) once their client is done.
    end = time.monotonic() + 10
    for s in servers:
        try:
            s.wait(timeout=max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            s.terminate()
            try:
                s.wait(timeout=3)
            except subprocess.TimeoutExpired:
                s.kill()
    return files
