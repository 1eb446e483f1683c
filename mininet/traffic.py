"""Traffic patterns and the iperf3 runner.

Patterns return flows as (src, dst) JSON host names, drawn from a seeded RNG:

- ``uniform``: a random permutation without fixed points (every host sends to one other).
- ``adv+K``: every host of group G sends to a host of group (G+K) mod groups (Dragonfly groups,
  fat-tree pods), through a random bijection so no destination host receives two flows.  ADV+1 puts a whole Dragonfly group's traffic on one global link.
- ``hotspot``: ``hot_n`` contributors from other groups to one hot host, plus victim flows: the
  remaining hosts in a random permutation among themselves.

Flows are iperf3 TCP with several parallel streams (``-P 4``: OVS's select hash covers TCP ports,
so the streams of one flow can take different buckets; UDP ports are not hashed), one server per
flow on its own port, client output ``-i 1 --json``.
"""

import random
import re
import subprocess
import time

from fflaunch import wait_until


def pattern(fabric, name, seed, hot_n=4):
    rng = random.Random(seed)
    hosts = [h["name"] for h in fabric.hosts]
    groups = fabric.groups()
    gids = sorted(groups)
    if name == "uniform":
        while True:
            perm = hosts[:]
            rng.shuffle(perm)
            if all(a != b for a, b in zip(hosts, perm)):
                return list(zip(hosts, perm))
    m = re.fullmatch(r"adv\+(\d+)", name)
    if m:
        k = int(m[1])
        if k % len(gids) == 0:
            raise ValueError(f"{name}: K must not be a multiple of the {len(gids)} groups")
        flows = []
        for i, g in enumerate(gids):
            # A random bijection onto the target group's hosts (cycled if it has fewer), so
            # no host link receives two flows: the global links, not the edge, are contended.
            target = groups[gids[(i + k) % len(gids)]][:]
            rng.shuffle(target)
            flows += [(h, target[j % len(target)]) for j, h in enumerate(groups[g])]
        return flows
    if name == "hotspot":
        hot = rng.choice(hosts)
        hot_group = fabric.host(hot)["group"]
        others = [h for h in hosts if fabric.host(h)["group"] != hot_group]
        contributors = rng.sample(others, min(hot_n, len(others)))
        flows = [(c, hot) for c in contributors]
        rest = [h for h in hosts if h != hot and h not in contributors]
        if len(rest) >= 2:
            while True:
                perm = rest[:]
                rng.shuffle(perm)
                if all(a != b for a, b in zip(rest, perm)):
                    break
            flows += list(zip(rest, perm))
        return flows
    raise ValueError(f"unknown traffic {name!r} (uniform, adv+K, hotspot)")


# The senders' TCP congestion control, pinned (iperf3 -C) because a Mininet host inherits the
# machine's default (bbr on this one, cubic on a stock Debian) and the results depend on it.
DEFAULT_TCP_CC = "cubic"


def run_iperf(fn, flows, duration, outdir, streams=4, base_port=5301, on_tick=None,
              cc=DEFAULT_TCP_CC):
    """Runs one iperf3 TCP flow per (src, dst); returns {flow_label: receiver's JSON path}.

    `on_tick` (if given) is called about once a second while the clients run; `cc` is the
    senders' TCP congestion control (None: the host's default)."""
    outdir.mkdir(parents=True, exist_ok=True)
    servers, clients, files = [], [], {}
    by_dst = {}
    for i, (src, dst) in enumerate(flows):
        port = base_port + i
        d = fn.node(dst)
        # The receiver's per-second report is the accepted throughput; the client's counts
        # bytes handed to its socket, which runs ahead of delivery under congestion.
        files[f"{src}->{dst}"] = outdir / f"flow{i:03d}.server.json"
        with open(files[f"{src}->{dst}"], "w") as out:  # the child keeps its own copy
            servers.append(fn.host_popen(
                d, ["iperf3", "-s", "-1", "-p", str(port), "-i", "1", "--json"],
                stdout=out, stderr=subprocess.STDOUT))
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
        cmd = (f"while [ ! -e {go} ]; do sleep 0.02; done; exec iperf3 -c {ip} "
               f"-p {base_port + i} -t {duration} -P {streams} -i 1 --json "
               f"--connect-timeout 5000{f' -C {cc}' if cc else ''}")
        with open(path, "w") as out:
            clients.append(fn.host_popen(fn.node(src), ["sh", "-c", cmd],
                                         stdout=out, stderr=subprocess.STDOUT))
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
