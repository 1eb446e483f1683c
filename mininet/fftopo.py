"""Mininet topology built from the controller's own fabric export.

`fabricflow-controller topology --topology SPEC` prints the fabric as JSON (switches with dpids,
links with port numbers and a class, hosts with MAC and IP).  This module builds exactly that
wiring in Mininet, so the rule plan the controller computes matches the emulated fabric port for
port.  Interface names are limited to 15 characters, so every JSON name gets a short Mininet
name (switch ``g3s1`` -> ``s3x1``, fat-tree leaf ``l0p2s0`` -> ``s2x0``, top ``l1s3`` ->
``t1x3``, a deeper tree's middle level ``l1p2s0`` -> ``t1x2x0``, host ``h3.1.2`` -> ``h3x1x2``; a file fabric names its switches and hosts freely, so theirs come
from the address plan: switch group G index S -> ``sGxS``, host ``02:00:GG:GG:SS:HH`` ->
``hGxSxH``); the JSON name is kept for reports.

Link rates (Mb/s) are per link class.  A TCLink shapes each direction at the egress of the
sending interface (htb), so a fat-tree link gets ``up`` on the leaf side and ``down`` on the
spine side; Dragonfly ``local``/``global`` links are symmetric, and so are a file fabric's
(class ``fabric``: the ``local`` rate); host links get ``host`` on both ends.  Bounded queues (``pfifo limit N``, or with jumbo frames a ``bfifo`` of N standard frames' octets) are added after start by :func:`apply_queues`,
because Mininet's ``max_queue_size`` needs netem, which this kernel lacks.

Do not name anything here ``mininet``: it would shadow the Mininet package.
"""

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mininet.topo import Topo

REPO = Path(__file__).resolve().parent.parent
# FABRICFLOW_BIN_DIR lets CI reuse the binaries `cargo test` already built instead of a second,
# release build; the demo and measurements use release binaries.
BIN_DIR = Path(os.environ.get("FABRICFLOW_BIN_DIR") or REPO / "target" / "release")
CONTROLLER_BIN = BIN_DIR / "fabricflow-controller"
AGENT_BIN = BIN_DIR / "fabricflow-agent"
REPORT_BIN = BIN_DIR / "fabricflow-report"

# Short-name patterns of everything this harness creates (used by cleanup to touch only ours).
_SWITCH = r"(?:s\d+x\d+|t\d+x\d+(?:x\d+)?)"
SWITCH_RE = re.compile(rf"^{_SWITCH}$")
HOST_RE = re.compile(r"^h\d+x\d+x\d+$")
INTF_RE = re.compile(rf"^(?:{_SWITCH}|h\d+x\d+x\d+)-eth\d+$")


STANDARD_MTU = 1500


@dataclass
class LinkRates:
    """Link rates in Mb/s per class, and the bounded queue length in packets (None: default)."""

    host: float = 10.0
    local: float = 10.0
    glob: float = 10.0  # "global" is a Python keyword
    up: float = 10.0
    down: float = 10.0
    queue_pkts: int = 100
    mtu: int = STANDARD_MTU

    def as_dict(self):
        return {"host": self.host, "local": self.local, "global": self.glob,
                "up": self.up, "down": self.down, "queue_pkts": self.queue_pkts,
                "mtu": self.mtu}


def ensure_controller_bin():
    """Builds the release controller if it is missing (and no FABRICFLOW_BIN_DIR is given)."""
    if not CONTROLLER_BIN.exists() and not os.environ.get("FABRICFLOW_BIN_DIR"):
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "fabricflow-controller"],
                       cwd=REPO, check=True)
    return CONTROLLER_BIN


def export_fabric(spec):
    """Runs `fabricflow-controller topology` and returns the parsed JSON."""
    out = subprocess.run([str(ensure_controller_bin()), "topology", "--topology", spec],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def short_switch(sw, kind=None):
    """Short Mininet name of a JSON switch of a fabric of `kind` (the export's "kind")."""
    if kind == "file":
        # Free names; (group, index) is unique in a file fabric (the controller checks it).
        return f"s{sw['group']}x{sw['index']}"
    name = sw["name"]
    m = re.fullmatch(r"g(\d+)s(\d+)", name)
    if m:
        return f"s{m[1]}x{m[2]}"
    m = re.fullmatch(r"l0p(\d+)s(\d+)", name)
    if m:
        return f"s{m[1]}x{m[2]}"
    m = re.fullmatch(r"l(\d+)p(\d+)s(\d+)", name)
    if m:
        return f"t{m[1]}x{m[2]}x{m[3]}"
    m = re.fullmatch(r"l(\d+)s(\d+)", name)
    if m:
        return f"t{m[1]}x{m[2]}"
    m = re.fullmatch(r"[cm](\d+)", name)
    if m:
        # Torus / mesh switch i: group i, index 0 (its hosts are h{i}.0.{port}).
        return f"s{m[1]}x0"
    raise ValueError(f"no short name rule for switch {name!r}")


def short_host(h, kind=None):
    """Short Mininet name of a JSON host of a fabric of `kind`."""
    if kind == "file":
        # Free names; the address plan's MAC 02:00:GG:GG:SS:HH is unique.
        b = [int(x, 16) for x in h["mac"].split(":")]
        return f"h{b[2] << 8 | b[3]}x{b[4]}x{b[5]}"
    m = re.fullmatch(r"h(\d+)\.(\d+)\.(\d+)", h["name"])
    if not m:
        raise ValueError(f"no short name rule for host {h['name']!r}")
    return f"h{m[1]}x{m[2]}x{m[3]}"


@dataclass
class Fabric:
    """The exported fabric plus the short-name maps."""

    spec: str
    doc: dict
    sw_short: dict = field(default_factory=dict)    # JSON name -> short
    host_short: dict = field(default_factory=dict)  # JSON name -> short
    sw_long: dict = field(default_factory=dict)     # short -> JSON name
    host_long: dict = field(default_factory=dict)

    @staticmethod
    def _name(node, s, what, iface_suffix, short, long):
        """Records short name `s` of `node`; Mininet names its interfaces `<short><suffix>`,
        at most 15 characters, and short names must be unique."""
        if len(s) + len(iface_suffix) > 15:
            raise ValueError(f"{what} name {s} too long for interface names")
        if s in long:
            raise ValueError(f"{what}s {long[s]!r} and {node['name']!r} share the short name {s}")
        short[node["name"]], long[s] = s, node["name"]

    @classmethod
    def load(cls, spec):
        f = cls(spec, export_fabric(spec))
        kind = f.doc.get("kind")
        for sw in f.doc["switches"]:
            f._name(sw, short_switch(sw, kind), "switch", "-eth99", f.sw_short, f.sw_long)
        for h in f.doc["hosts"]:
            f._name(h, short_host(h, kind), "host", "-eth0", f.host_short, f.host_long)
        return f

    @property
    def kind(self):
        return self.doc["kind"]

    @property
    def switches(self):
        return self.doc["switches"]

    @property
    def hosts(self):
        return self.doc["hosts"]

    @property
    def links(self):
        return self.doc["links"]

    def host(self, name):
        """Host record by JSON or short name."""
        name = self.host_long.get(name, name)
        for h in self.hosts:
            if h["name"] == name:
                return h
        raise KeyError(name)

    def groups(self):
        """Group (Dragonfly group, fat-tree pod) -> list of JSON host names, in order."""
        g = {}
        for h in self.hosts:
            g.setdefault(h["group"], []).append(h["name"])
        return dict(sorted(g.items()))


def link_bws(link, rates):
    """(bw at a's egress, bw at b's egress) for a JSON link."""
    cls = link["class"]
    if cls in ("local", "fabric"):
        # "fabric": a file fabric's switch-to-switch link, which has no class of its own.
        return rates.local, rates.local
    if cls == "global":
        return rates.glob, rates.glob
    if cls == "up":
        return rates.up, rates.down
    if cls == "down":
        return rates.down, rates.up
    if cls == "horizontal":
        # An extended fat-tree's link between two switches of one level: the up rate both ways.
        return rates.up, rates.up
    raise ValueError(f"unknown link class {cls!r}")


FRAME_BYTES = 1514          # a full standard TCP frame on the wire: what fills a pfifo
DEFAULT_QUEUE_PKTS = 1000   # htb's default leaf qdisc: pfifo of txqueuelen (a veth's 1000)


def port_links(fabric, rates):
    """Bridge short name -> [{"port", "rate_mbps", "buffer_bytes"}] for every switch port: the
    egress shaping FabricTopo applies and the bounded queue apply_queues sets (`queue_pkts` standard
    frames), as the agent's `[[switch]] ports` states them."""
    buffer_bytes = (rates.queue_pkts or DEFAULT_QUEUE_PKTS) * FRAME_BYTES
    out = {}

    def add(sw, port, mbps):
        out.setdefault(fabric.sw_short[sw], []).append(
            {"port": port, "rate_mbps": float(mbps), "buffer_bytes": buffer_bytes})
    for h in fabric.hosts:
        add(h["switch"], h["port"], rates.host)
    for link in fabric.links:
        bw_a, bw_b = link_bws(link, rates)
        add(link["a"], link["a_port"], bw_a)
        add(link["b"], link["b_port"], bw_b)
    return {k: sorted(v, key=lambda e: e["port"]) for k, v in out.items()}


def on_slowest_clock(links):
    """`port_links` with every buffer scaled by its port's rate over the slowest port's, so
    each drains in the slowest port's time: the agent's drain-relative constants (the byte
    limit, the write interval, Qeq) then run on the slowest queue's clock on every port."""
    slowest = min(e["rate_mbps"] for ports in links.values() for e in ports)
    return {b: [{**e, "buffer_bytes": int(e["buffer_bytes"] * e["rate_mbps"] / slowest)}
                for e in ports] for b, ports in links.items()}


def port_role(link, side):
    """The controller's PortRole name of a JSON link's `side` ("a" or "b") port: a Dragonfly's
    and a file fabric's class on both ends; a fat-tree "up" link is up at its a end and down at
    its b end (see link_bws)."""
    cls = link["class"]
    flip = {"up": "down", "down": "up"}
    return flip[cls] if side == "b" and cls in flip else cls


def watched_ports(fabric, rates):
    """Every switch port as `fabricflow-agent port-stats --ports` reads it: the fabric's
    switch name, port, role (the controller's PortRole names: host, local, global, up, down,
    horizontal, fabric), the switch-side interface and its egress rate."""
    out = []

    def add(sw, port, role, mbps):
        out.append({"switch": sw, "port": port, "role": role,
                    "interface": f"{fabric.sw_short[sw]}-eth{port}", "rate_mbps": float(mbps)})
    for h in fabric.hosts:
        add(h["switch"], h["port"], "host", rates.host)
    for link in fabric.links:
        bw_a, bw_b = link_bws(link, rates)
        add(link["a"], link["a_port"], port_role(link, "a"), bw_a)
        add(link["b"], link["b_port"], port_role(link, "b"), bw_b)
    return sorted(out, key=lambda e: (e["switch"], e["port"]))


class FabricTopo(Topo):
    """Mininet Topo with the controller's exact dpids, ports, MACs and IPs."""

    def build(self, fabric, rates):  # pylint: disable=arguments-differ
        for sw in fabric.switches:
            self.addSwitch(fabric.sw_short[sw["name"]], dpid=sw["dpid"])
        for h in fabric.hosts:
            # /8: the fabric answers ARP for any 10.x address, so every host is on-link.
            self.addHost(fabric.host_short[h["name"]], ip=f"{h['ip']}/8", mac=h["mac"])
            self.addLink(fabric.host_short[h["name"]], fabric.sw_short[h["switch"]],
                         port1=0, port2=h["port"], bw=rates.host)
        for link in fabric.links:
            bw_a, bw_b = link_bws(link, rates)
            self.addLink(fabric.sw_short[link["a"]], fabric.sw_short[link["b"]],
                         port1=link["a_port"], port2=link["b_port"],
                         params1={"bw": bw_a}, params2={"bw": bw_b})


def switch_intfs(net):
    """Switch-side interfaces with their htb leaf class, for queue setup and measurement."""
    for sw in net.switches:
        for intf in sw.intfList():
            if intf.name != "lo":
                yield sw, intf


def _on_every_intf(net, command):
    """Runs `command(intf_name)` for every interface of every switch (root namespace) and host
    (its namespace); raises on any output, which these commands print only on failure."""
    for node in list(net.switches) + list(net.hosts):
        for intf in node.intfList():
            if intf.name == "lo":
                continue
            cmd = command(intf.name)
            out = node.cmd(cmd) if node in net.hosts else _sh(cmd)
            if out and out.strip():
                raise RuntimeError(f"{cmd}: {out.strip()}")


def apply_mtu(net, mtu):
    """Sets every interface's MTU (both ends of every veth: a veth drops what exceeds its
    peer's MTU)."""
    if mtu != STANDARD_MTU:
        _on_every_intf(net, lambda dev: f"ip link set dev {dev} mtu {int(mtu)}")


def queue_qdisc(queue_pkts, mtu):
    """The bounded queue of `queue_pkts` standard frames: a pfifo of that many frames, or with
    jumbo frames a bfifo of their octets, so the buffer's bytes (and its drain time) do not
    grow with the MTU."""
    if mtu == STANDARD_MTU:
        return f"pfifo limit {int(queue_pkts)}"
    return f"bfifo limit {int(queue_pkts) * FRAME_BYTES}"


def apply_queues(net, queue_pkts, mtu=STANDARD_MTU):
    """Bounds every shaped egress queue (switch and host side) to `queue_pkts` standard
    frames ([`queue_qdisc`])."""
    if not queue_pkts:
        return
    limit = queue_qdisc(queue_pkts, mtu)
    # TCIntf's htb: root 5:0, leaf class 5:1.  The qdisc under it is the queue.
    _on_every_intf(net, lambda dev: f"tc qdisc replace dev {dev} parent 5:1 handle 10: {limit}")


class LanesUnavailable(RuntimeError):
    """The kernel lacks what apply_lanes needs (sch_prio, the basic classifier)."""


def apply_lanes(net, queue_pkts, slow_dscp=8, mtu=STANDARD_MTU):
    """dFtree's two lanes on every switch-side interface: under TCIntf's htb leaf (5:1) a
    strict-priority qdisc with two bands (``prio bands 2``, every skb priority to band 0, the
    fast lane) and a u32 filter sending IPv4 frames whose DSCP is `slow_dscp` to band 1 (the
    slow lane), each band the bounded queue of `queue_pkts` (or the default; `queue_qdisc`).  Open vSwitch's userspace
    datapath ignores ``set_queue``, so the qdisc classifies on the mark the slow-lane rule
    writes; a hardware switch maps the DSCP/PCP to a queue instead.  The filter reads the
    frame from its link-layer header (``basic`` with ``cmp ... layer link``): frames the
    userspace datapath sends through its AF_PACKET socket need not carry a network-header
    offset or an skb protocol a ``protocol ip`` filter would see.  Raises LanesUnavailable when
    the kernel has no sch_prio or no classifiers (some minimal VM kernels)."""
    limit = queue_qdisc(queue_pkts or DEFAULT_QUEUE_PKTS, mtu)
    tos = (int(slow_dscp) << 2) & 0xfc
    for sw, intf in switch_intfs(net):
        dev = intf.name
        # A qdisc of another kind cannot replace apply_queues' fifo under the same handle.
        _sh(f"tc qdisc del dev {dev} parent 5:1 handle 10:")
        for cmd in (
                f"tc qdisc add dev {dev} parent 5:1 handle 10: prio bands 2 "
                f"priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
                f"tc qdisc replace dev {dev} parent 10:1 handle 11: {limit}",
                f"tc qdisc replace dev {dev} parent 10:2 handle 12: {limit}",
                f"tc filter replace dev {dev} parent 10: protocol all prio 1 basic match "
                f"'cmp(u16 at 12 layer link eq 0x800) and "
                f"cmp(u8 at 15 layer link mask 0xfc eq {tos:#04x})' classid 10:2"):
            out = _sh(cmd)
            if out and out.strip():
                if "unknown" in out.lower() or "not supported" in out.lower():
                    # Put the plain bounded queue back, as apply_queues left it.
                    _sh(f"tc qdisc del dev {dev} parent 5:1 handle 10:")
                    _sh(f"tc qdisc add dev {dev} parent 5:1 handle 10: {limit}")
                    raise LanesUnavailable(f"{cmd}: {out.strip()}")
                raise RuntimeError(f"{sw.name}: {cmd}: {out.strip()}")


def lane_packets(dev):
    """(fast, slow) packets sent by the two bands apply_lanes installed on `dev`."""
    out = subprocess.run(["tc", "-s", "qdisc", "show", "dev", dev], capture_output=True,
                         text=True, check=True).stdout
    sent = {}
    handle = None
    for line in out.splitlines():
        words = line.split()
        if len(words) > 2 and words[0] == "qdisc":
            handle = words[2]
        elif words[:1] == ["Sent"] and handle in ("11:", "12:"):
            sent[handle] = int(words[3])
    return sent.get("11:", 0), sent.get("12:", 0)


def _sh(cmd):
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    return (r.stdout + r.stderr) if r.returncode else ""


if __name__ == "__main__":
    import sys
    fab = Fabric.load(sys.argv[1] if len(sys.argv) > 1 else "dragonfly:p=1,a=2,h=1")
    print(json.dumps({"switches": fab.sw_short, "hosts": fab.host_short}, indent=1))
