"""Bring a fabricflow fabric up in Mininet, program it, and always tear it down.

    with FabricNet("dragonfly:p=1,a=2,h=1", LinkRates(), mode="static", p_minimal=100) as fn:
        fn.net.pingAll()

Programming modes (one interface, :meth:`FabricNet.program`):

- ``static``: per switch ``fabricflow-controller plan --switch NAME --groups-out G --flows-out F
  --p-minimal P`` then ``ovs-ofctl -O OpenFlow13 add-groups/add-flows``.  :meth:`replan` does the
  same from a fabric *file* without some links, which is what the controller's re-plan after a
  link failure computes (the CLI has no "failed links" flag; a file fabric with the same dpids,
  groups and indexes yields the same addresses).
- ``controller``: start ``fabricflow-controller run --config F`` (F written to the run directory:
  the fabric spec, loopback OpenFlow and HTTP ports, ``p_minimal_percent``; the plan conventions
  the agent relies on are both binaries' defaults, defined once in
  ``fabricflow_proto::conventions``), point every bridge at ``tcp:127.0.0.1:PORT`` (fail-mode
  secure) and poll ``GET /api/v1/switches`` until every planned switch is ``connected`` and
  ``synced``.
- optional agent (``agent_variant``: base, source-processing, feedback-comparison, combined): one
  ``fabricflow-agent run --config F`` for every bridge (``[[switch]]`` BRIDGE on
  ``unix:/var/run/openvswitch/BRIDGE.mgmt``), emulated congestion point on, F made from
  ``mininet/agent-emulated.toml`` with the CP constants scaled to the queue (see there); waits
  until ``/api/v1/state`` shows every switch connected with its plan learned.  Its ``/metrics``
  give the CNM and group-MODIFY counters (:meth:`agent_counters`, :meth:`agent_metrics`).

Both configs are dicts written as TOML (fftoml.py), layered: the harness's keys, then a mode's
(``controller_settings``, ``agent_settings``: see modes.py and :meth:`FabricNet.for_mode`), then
``FF_CONTROLLER_SET`` / ``FF_AGENT_SET`` from the environment, then ``controller_overrides`` /
``agent_overrides``; :meth:`FabricNet.settings` returns what was in force.

Teardown runs on normal exit, exceptions, Ctrl-C, SIGTERM/SIGHUP and (as a last resort) atexit.
It kills every child process this object started (by pid), stops Mininet (host shells, bridges,
veths) and then sweeps anything left with *our* names only (bridges ``s<G>x<S>``/``t<L>x<S>``,
interfaces ``<node>-eth<N>``): other parts of the project share this ovs-vswitchd, so ``mn -c``
(which deletes every bridge and pkills by name) is never used here.
"""

import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import tomllib
import urllib.parse
import urllib.request
from functools import partial
from pathlib import Path

from mininet.link import TCLink
from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.node import OVSSwitch

import fftoml
import fftopo
from fftopo import AGENT_BIN, CONTROLLER_BIN, INTF_RE, SWITCH_RE, Fabric, FabricTopo, LinkRates

OFCTL = ["ovs-ofctl", "-O", "OpenFlow13"]
STATE_DIR = Path(os.environ.get("FF_STATE_DIR", "/tmp/fabricflow-mininet"))

# Backlog poll period of the port-stats sampler, µs: 20 readings per 100 ms interval
# (mininet/README.md "Port stall telemetry" has its CPU cost).
PORT_STATS_POLL_US = 5000

# The agent's config template: runtime settings only; every constant is the agent's default.
AGENT_TEMPLATE = Path(__file__).resolve().parent / "agent-emulated.toml"


class NotAvailable(RuntimeError):
    """A runtime (controller/agent run) that the binaries do not offer yet."""


def wait_until(pred, timeout, what, interval=0.1):
    """Polls `pred` until it returns a truthy value or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = pred()
        except Exception as e:  # noqa: BLE001 - keep polling, report the last error
            last = None
            err = e
        else:
            err = None
        if last:
            return last
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}"
                               + (f" (last error: {err})" if err else ""))
        time.sleep(interval)


def sh(cmd, check=True, **kw):
    return subprocess.run(cmd, check=check, capture_output=True, text=True, **kw)


def has_subcommand(binary, sub):
    """Whether `binary` exists and its --help lists subcommand `sub`."""
    if not Path(binary).exists():
        return False
    out = sh([str(binary), "--help"], check=False).stdout
    return any(line.strip().startswith(sub + " ") or line.strip() == sub
               for line in out.splitlines())


def require_runtime(what):
    """Raises NotAvailable unless `fabricflow-<what> run` exists (a missing or stale build)."""
    binary = CONTROLLER_BIN if what == "controller" else AGENT_BIN
    if not has_subcommand(binary, "run"):
        raise NotAvailable(f"needs fabricflow-{what} run: {binary} is missing or has no `run` "
                           f"subcommand (build it: cargo build --release -p fabricflow-{what}, "
                           f"or point FABRICFLOW_BIN_DIR at a build)")


OVS_LOG = Path("/var/log/openvswitch/ovs-vswitchd.log")
SEND_ERROR = "error sending Ethernet packet"
# Octets a queued full frame charges to the socket that sent it (skb truesize, rounded up).
FRAME_TRUESIZE = 3000


def ovs_send_buffer():
    """(net.core.wmem_default, size of ovs-vswitchd's packet send socket or None if not made yet).

    The userspace datapath sends on every `system` port through one AF_PACKET socket, and a
    frame waiting in a shaped port's qdisc stays charged to it: see scripts/ovs-start.sh."""
    default = int(Path("/proc/sys/net/core/wmem_default").read_text())
    out = sh(["ss", "-f", "link", "-a", "-m", "-p"], check=False).stdout
    sizes = [int(m) for line in out.splitlines()
             if '"ovs-vswitchd"' in line and " [0]:* " in line
             for m in re.findall(r"\btb(\d+)", line)]
    return default, (max(sizes) if sizes else None)


def required_send_buffer(fabric, queue_pkts):
    """Octets that every switch port's queue, full, charges to ovs-vswitchd's send socket."""
    ports = 2 * len(fabric.links) + len(fabric.hosts)
    return ports * (queue_pkts or 1000) * FRAME_TRUESIZE


def check_ovs_send_buffer(fabric, queue_pkts):
    """Refuses to run on an ovs-vswitchd that would drop frames its queues should hold."""
    need = required_send_buffer(fabric, queue_pkts)
    default, have = ovs_send_buffer()
    size = default if have is None else have
    if size < need:
        what = ("net.core.wmem_default" if have is None
                else "ovs-vswitchd's packet send socket (made when wmem_default was smaller)")
        raise RuntimeError(
            f"{what} is {size} octets, less than the {need} that this fabric's full queues "
            f"charge to it: ovs-vswitchd would drop frames instead of queueing them. Run "
            f"scripts/ovs-start.sh (it raises the sysctl and restarts ovs-vswitchd; "
            f"FF_OVS_SNDBUF={need} for more than its default)")


def ovs_log_size():
    try:
        return OVS_LOG.stat().st_size
    except OSError:
        return None


def ovs_send_errors_since(offset):
    """Lines ovs-vswitchd logged about frames it could not send since `offset` (rate-limited by
    OVS, so a lower bound on the events; None if its log is not readable)."""
    if offset is None:
        return None
    try:
        with open(OVS_LOG, "rb") as f:
            f.seek(offset)
            return sum(1 for line in f if SEND_ERROR.encode() in line)
    except OSError:
        return None


def our_bridges():
    out = sh(["ovs-vsctl", "--timeout=5", "list-br"], check=False).stdout
    return [b for b in out.split() if SWITCH_RE.match(b)]


def our_links():
    out = sh(["ip", "-o", "link", "show"], check=False).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if INTF_RE.match(name) or SWITCH_RE.match(name):
                names.append(name)
    return names


def sweep(pids=()):
    """Removes leftovers with our names: processes by recorded pid, bridges, interfaces."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    brs = our_bridges()
    if brs:
        args = ["ovs-vsctl", "--timeout=10"]
        for b in brs:
            args += ["--", "--if-exists", "del-br", b]
        sh(args, check=False)
    for name in our_links():
        sh(["ip", "link", "del", name], check=False)
    return our_bridges(), our_links()


class FabricNet:
    """Context manager: Mininet fabric up, programmed; torn down on any exit."""

    def __init__(self, spec, rates=None, mode="static", p_minimal=100, agent_variant=None,
                 workdir=None, verbose=False, controller_port=6653, http_port=18080,
                 agent_http_port=18081, agent_overrides=None, keep_logs=None,
                 controller_settings=None, agent_settings=None, controller_overrides=None,
                 host_throttle=False, slowest_clock_buffers=False):
        self.spec = spec
        # State every port's buffer to the agent as long in time as the slowest port's (a probe:
        # modes.Mode.slowest_clock_buffers).
        self.slowest_clock_buffers = slowest_clock_buffers
        # `fabricflow-agent throttle` in every host (InfiniBand CC baseline).
        self.host_throttle = host_throttle
        self.throttlers = {}     # host name -> (Popen, status JSON path)
        self.rates = rates or LinkRates()
        self.mode = mode  # programming: "static" or "controller"
        self.p_minimal = p_minimal
        self.agent_variant = agent_variant
        # Dotted keys over the generated configs, in the order of the module docstring.
        self.controller_settings = dict(controller_settings or {})
        self.agent_settings = dict(agent_settings or {})
        self.controller_overrides = dict(controller_overrides or {})
        self.agent_overrides = dict(agent_overrides or {})
        # The configs as written (None: that process does not run).
        self.controller_config = None
        self.agent_config = None
        # Directory that receives the controller/agent logs and configs at teardown.
        self.keep_logs = keep_logs or os.environ.get("FF_KEEP_LOGS")
        self.verbose = verbose
        self.controller_port, self.http_port, self.agent_http_port = (
            controller_port, http_port, agent_http_port)
        self.fabric = Fabric.load(spec)
        self.net = None
        self.procs = []          # Popen objects we started (iperf3, controller, agent)
        self._tmp = tempfile.TemporaryDirectory(prefix="ffmn-", dir=workdir)
        self.tmp = Path(self._tmp.name)
        self._cleaned = False
        self._old_handlers = {}
        self.timings = {}

    @classmethod
    def for_mode(cls, spec, rates, mode, **kw):
        """A FabricNet set up as the modes.Mode `mode` says."""
        return cls(spec, rates, mode=mode.program, p_minimal=mode.p_minimal,
                   agent_variant=mode.agent_variant, controller_settings=mode.controller,
                   agent_settings=mode.agent, host_throttle=mode.host_throttle,
                   slowest_clock_buffers=mode.slowest_clock_buffers, **kw)

    def settings(self):
        """What this fabric ran with: programming, initial P, agent variant, and the controller's
        and agent's configs as written (without the agent's per-bridge [[switch]] list), plus
        the FF_*_SET environment variables that applied."""
        agent = None
        if self.agent_config is not None:
            agent = {k: v for k, v in self.agent_config.items() if k != "switch"}
        env = {k: os.environ[k] for k, used in (("FF_CONTROLLER_SET", self.controller_config),
                                                 ("FF_AGENT_SET", self.agent_config))
               if used is not None and os.environ.get(k)}
        return {"program": self.mode, "p_minimal": self.p_minimal,
                "agent_variant": self.agent_variant, "controller": self.controller_config,
                "agent": agent, "env": env, "host_throttle": self.host_throttle}

    # ---- lifecycle -------------------------------------------------------------------------
    def __enter__(self):
        if self.mode not in ("static", "controller"):
            raise ValueError(f"unknown programming mode {self.mode!r}")
        if self.mode == "controller":
            require_runtime("controller")
        if self.agent_variant:
            require_runtime("agent")
        check_ovs_send_buffer(self.fabric, self.rates.queue_pkts)
        left_brs, left_links = our_bridges(), our_links()
        if left_brs or left_links:
            raise RuntimeError(f"leftovers from an earlier run: bridges {left_brs}, links "
                               f"{left_links[:5]}…; run `make clean-mininet`")
        atexit.register(self.cleanup)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            self._old_handlers[sig] = signal.signal(sig, self._on_signal)
        try:
            self._start()
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(self, *exc):
        self.cleanup()
        return False

    def _on_signal(self, signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    def _start(self):
        setLogLevel("info" if self.verbose else "warning")
        t0 = time.monotonic()
        switch = partial(OVSSwitch, datapath="user", failMode="secure", protocols="OpenFlow13")
        self.net = Mininet(topo=FabricTopo(self.fabric, self.rates), switch=switch, link=TCLink,
                           controller=None, autoSetMacs=False, autoStaticArp=False,
                           build=False, waitConnected=False)
        self.net.build()
        self._record_pids()
        self.net.start()
        for h in self.net.hosts:
            # The userspace datapath does not fill in checksums left to the NIC.
            h.cmd(f"ethtool -K {h.defaultIntf().name} tx off")
        fftopo.apply_mtu(self.net, self.rates.mtu)
        fftopo.apply_queues(self.net, self.rates.queue_pkts, self.rates.mtu)
        wait_until(lambda: set(our_bridges()) >= {s.name for s in self.net.switches}, 30,
                   "all bridges in ovsdb")
        self.timings["up_s"] = time.monotonic() - t0
        t1 = time.monotonic()
        self.program()
        self.timings["program_s"] = time.monotonic() - t1

    def _record_pids(self):
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        self._pidfile = STATE_DIR / f"{os.getpid()}.pids"
        pids = [h.pid for h in self.net.hosts + self.net.switches if getattr(h, "pid", None)]
        self._pidfile.write_text(json.dumps(pids))

    def cleanup(self):
        """Idempotent teardown; ignores further Ctrl-C while it runs."""
        if self._cleaned:
            return
        self._cleaned = True
        prev_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            for p in self.procs:
                if p.poll() is None:
                    p.terminate()
            deadline = time.monotonic() + 3
            for p in self.procs:
                try:
                    p.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            pids = []
            if self.net is not None:
                pids = [n.pid for n in self.net.hosts + self.net.switches
                        if getattr(n, "pid", None)]
                try:
                    self.net.stop()
                except Exception as e:  # noqa: BLE001 - the sweep below finishes the job
                    print(f"fflaunch: net.stop failed ({e}); sweeping")
            # Host shells are gone after net.stop(); SIGKILL any that survived, by pid.
            alive = [p for p in pids if _alive(p)]
            brs, links = sweep(alive)
            if brs or links:
                print(f"fflaunch: WARNING leftovers after cleanup: {brs} {links}")
            if getattr(self, "_pidfile", None):
                self._pidfile.unlink(missing_ok=True)
            self._keep_logs()
            self._tmp.cleanup()
        finally:
            for sig, h in self._old_handlers.items():
                signal.signal(sig, h)
            signal.signal(signal.SIGINT, prev_int)

    def _keep_logs(self):
        if not self.keep_logs:
            return
        try:
            dst = Path(self.keep_logs)
            dst.mkdir(parents=True, exist_ok=True)
            for f in list(self.tmp.glob("*.log")) + list(self.tmp.glob("*.toml")):
                shutil.copy(f, dst / f.name)
        except OSError as e:
            print(f"fflaunch: cannot keep logs in {self.keep_logs}: {e}")

    # ---- programming -----------------------------------------------------------------------
    def program(self):
        if self.mode == "static":
            self.program_static(self.spec)
        else:
            self.program_controller()
        if self.agent_variant:
            self.start_agent()
        if self.host_throttle:
            self.start_throttlers()

    def _plan_switch(self, topo_arg, sw_json_name, short):
        g, f = self.tmp / f"{short}.groups", self.tmp / f"{short}.flows"
        sh([str(CONTROLLER_BIN), "plan", "--topology", topo_arg, "--switch", sw_json_name,
            "--groups-out", str(g), "--flows-out", str(f), "--p-minimal", str(self.p_minimal)])
        return g, f

    def program_static(self, topo_arg):
        """Replaces every switch's rules with the static plan of `topo_arg`."""
        for sw in self.fabric.switches:
            short = self.fabric.sw_short[sw["name"]]
            g, f = self._plan_switch(topo_arg, sw["name"], short)
            # Flows first out (they reference groups), then groups, then the new rules.
            sh(OFCTL + ["del-flows", short])
            sh(OFCTL + ["del-groups", short])
            if g.stat().st_size:
                sh(OFCTL + ["add-groups", short, str(g)])
            sh(OFCTL + ["add-flows", short, str(f)])
            want = sum(1 for line in f.read_text().splitlines()
                       if line.strip() and not line.startswith("#"))
            wait_until(lambda s=short, w=want: self.flow_count(s) >= w, 10,
                       f"{short}: {want} flows installed")

    def flow_count(self, br):
        out = sh(OFCTL + ["dump-flows", br, "--no-stats"]).stdout
        return sum(1 for line in out.splitlines() if "actions=" in line)

    def replan_without(self, failed):
        """Static re-plan with `failed` links ([(a, a_port), ...] JSON names) removed.

        Writes the fabric as a file fabric (same dpids, groups, indexes, hosts), minus those
        links, and reprograms every switch from it."""
        failed = {(a, int(p)) for a, p in failed}
        doc = self.fabric.doc
        lines = ["switches:"]
        spine = 0
        for sw in doc["switches"]:
            if sw["group"] is None or sw.get("level", 0) > 0:
                # Fat-tree upper levels carry no hosts, so their address fields only need to
                # be unique (a deeper tree's middle level shares its pod's group and indexes
                # with the leaves): park them in group 0xffff, numbered in order.
                group, index, spine = 65535, spine, spine + 1
            else:
                group, index = sw["group"], sw["index"]
            lines.append(f"  - {{name: {sw['name']}, dpid: \"0x{sw['dpid']}\", "
                         f"group: {group}, index: {index}}}")
        lines.append("links:")
        for l in doc["links"]:
            if (l["a"], l["a_port"]) in failed or (l["b"], l["b_port"]) in failed:
                continue
            lines.append(f"  - [\"{l['a']}:{l['a_port']}\", \"{l['b']}:{l['b_port']}\"]")
        lines.append("hosts:")
        for h in doc["hosts"]:
            lines.append(f"  - {{name: \"{h['name']}\", at: \"{h['switch']}:{h['port']}\"}}")
        path = self.tmp / "replan.yaml"
        path.write_text("\n".join(lines) + "\n")
        # The re-plan must keep every host's address, or the hosts' ARP caches would lie.
        again = {h["name"]: (h["mac"], h["ip"]) for h in fftopo.export_fabric(f"file:{path}")["hosts"]}
        before = {h["name"]: (h["mac"], h["ip"]) for h in doc["hosts"]}
        if again != before:
            raise RuntimeError(f"file fabric {path} changes host addresses")
        self.program_static(f"file:{path}")
        return path

    # ---- controller mode -------------------------------------------------------------------
    def program_controller(self):
        """`fabricflow-controller run` on loopback ports; every bridge points at it (fail-mode
        secure, set by Mininet); waits until `/api/v1/switches` reports every switch synced."""
        require_runtime("controller")
        cfg = self.tmp / "controller.toml"
        self.controller_config = self.controller_config_doc()
        cfg.write_text(fftoml.dumps(self.controller_config))
        self.spawn([str(CONTROLLER_BIN), "run", "--config", str(cfg)], "controller.log")
        wait_until(lambda: self._http_json(self.http_port, "/api/v1/switches") is not None, 20,
                   "controller HTTP API up", 0.2)
        args = ["ovs-vsctl", "--timeout=10"]
        for s in self.net.switches:
            # Out-of-band: in-band control (OVS's default) hides flows matching TCP to and from
            # the controller's address and port, which every data packet is then classified
            # against (mininet/README.md "Out-of-band control").
            args += ["--", "set-controller", s.name, f"tcp:127.0.0.1:{self.controller_port}",
                     "--", "set", "controller", s.name, "connection-mode=out-of-band",
                     "--", "set-fail-mode", s.name, "secure"]
        sh(args)
        want = {sw["dpid"].zfill(16) for sw in self.fabric.switches}

        def all_synced():
            items = self._http_json(self.http_port, "/api/v1/switches")
            ok = {s.get("dpid", "").removeprefix("0x").zfill(16) for s in items
                  if s.get("connected") and s.get("synced")}
            return want <= ok
        self._wait_logged(all_synced, 90, "controller: every switch connected and synced",
                          "controller.log")

    def controller_config_doc(self):
        """controller.toml as a dict: the harness's keys, then the layers of the docstring."""
        doc = {
            "fabric": self.spec,
            "openflow_listen": f"127.0.0.1:{self.controller_port}",
            "http_listen": f"127.0.0.1:{self.http_port}",
            "store": "memory",
            "p_minimal_percent": float(self.p_minimal),
            # LLDP liveness: 15 missed 1 s periods, not the controller's 3. ovs-vswitchd answers
            # OpenFlow in the thread that forwards every packet of the userspace datapath, so
            # on a busy emulated fabric a packet-in can wait seconds: with 3 periods healthy
            # links were declared failed, and the fabric re-planned, dozens to a thousand times
            # in one Dragonfly(2,4,2) run. A port going down still fails its link (PORT_STATUS).
            "lldp_missing_periods": 15,
            # CNMs from fabric ports are dropped by OVS and read by the agent from the port's
            # veth (the agent writes its own CNMs there too): a packet-in and a PACKET_OUT per
            # CNM cost the thread that forwards every packet (mininet/README.md).
            "cnm_to_agent": "interface",
        }
        return fftoml.with_sets(doc, {
            **self.controller_settings,
            **fftoml.parse_sets(os.environ.get("FF_CONTROLLER_SET", "")),
            **self.controller_overrides})

    def _http_json(self, port, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=3) as r:
            return json.load(r)

    def log_tail(self, name, n=20):
        try:
            return "\n".join((self.tmp / name).read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def agent_config_doc(self, bridges):
        """agent.toml as a dict: mininet/agent-emulated.toml with this run's variant and HTTP
        port, then the layers of the module docstring, and one [[switch]] per bridge in
        `bridges` with its ports' rates and queues as this run shaped them (the agent scales
        its constants by them; OVS reports a veth's 10 Gb/s, not the shaping)."""
        with open(AGENT_TEMPLATE, "rb") as f:
            doc = tomllib.load(f)
        derived = {
            "policy.variant": self.agent_variant,
            "runtime.http_listen": f"127.0.0.1:{self.agent_http_port}",
            # The harness's port-stats sampler reads every port already (start_port_stats).
            "runtime.port_stall.enabled": False,
        }
        doc = fftoml.with_sets(doc, {
            **derived, **self.agent_settings,
            **fftoml.parse_sets(os.environ.get("FF_AGENT_SET", "")),
            **self.agent_overrides})
        links = fftopo.port_links(self.fabric, self.rates)
        if self.slowest_clock_buffers:
            links = fftopo.on_slowest_clock(links)
        doc["switch"] = [{"name": b, "target": f"unix:/var/run/openvswitch/{b}.mgmt",
                          **({"ports": links[b]} if links.get(b) else {})}
                         for b in bridges]
        return doc

    def start_agent(self):
        """One `fabricflow-agent run` for every bridge (management sockets), emulated CP on;
        waits until its state API shows every switch connected with its plan learned."""
        require_runtime("agent")
        cfg = self.tmp / "agent.toml"
        self.agent_config = self.agent_config_doc([s.name for s in self.net.switches])
        cfg.write_text(fftoml.dumps(self.agent_config))
        (self.tmp / "agent.log").touch()
        self.spawn([str(AGENT_BIN), "run", "--config", str(cfg)], "agent.log",
                   env=dict(os.environ, RUST_LOG=os.environ.get("FF_AGENT_LOG", "info")))
        names = {s.name for s in self.net.switches}

        def all_ready():
            st = self._http_json(self.agent_http_port, "/api/v1/state")
            ready = {n for n, v in st.items()
                     if v["session"]["connected"] and v["session"]["plan_ready"]}
            return names <= ready
        self._wait_logged(all_ready, 60, "agent: every switch connected with its plan",
                          "agent.log")

    def _wait_logged(self, cond, timeout, what, log):
        """wait_until(cond), a timeout carrying the tail of the daemon's log."""
        try:
            wait_until(cond, timeout, what, 0.5)
        except TimeoutError as e:
            raise TimeoutError(f"{e}; log tail:\n{self.log_tail(log)}") from None

    def agent_state(self):
        """The agent's `/api/v1/state` (switch name -> view)."""
        return self._http_json(self.agent_http_port, "/api/v1/state")

    def agent_metrics(self, names=()):
        """The agent's `/metrics` as {(name, ((label, value), ...)): float}: every family, or
        only those `names` gives (the agent renders and this parses only those)."""
        query = urllib.parse.urlencode([("name", n) for n in names])
        url = f"http://127.0.0.1:{self.agent_http_port}/metrics" + (f"?{query}" if query else "")
        with urllib.request.urlopen(url, timeout=3) as r:
            return parse_prometheus(r.read().decode())

    def _agent_metrics_or_none(self):
        """The agent's /metrics, or None without an agent or when it cannot be read."""
        if not self.agent_variant:
            return None
        try:
            return self.agent_metrics()
        except OSError:
            return None

    def agent_counters(self):
        """(CNMs generated, group MODIFYs) summed over switches from the agent's /metrics, or
        (None, None) without an agent."""
        m = self._agent_metrics_or_none()
        if m is None:
            return None, None
        return (metric_sum(m, "fabricflow_agent_cnm_generated_total"),
                metric_sum(m, "fabricflow_agent_group_mods_total"))

    # ---- host throttlers (InfiniBand CC baseline) ------------------------------------------
    def start_throttlers(self):
        """`fabricflow-agent throttle` in every host on its link (B = the host rate the harness
        shaped, HTB class 5:1 of TCLink), each writing its state to a JSON file; waits until
        every one has written it (socket bound, class set to B)."""
        if not has_subcommand(AGENT_BIN, "throttle"):
            raise NotAvailable(f"{AGENT_BIN} has no `throttle` subcommand (cargo build "
                               f"--release -p fabricflow-agent)")
        for h in self.net.hosts:
            status = self.tmp / f"throttle-{h.name}.json"
            log = open(self.tmp / f"throttle-{h.name}.log", "w")
            try:
                p = self.host_popen(h, [str(AGENT_BIN), "throttle", "--iface",
                                        h.defaultIntf().name, "--line-mbit",
                                        f"{self.rates.host:g}", "--status", str(status)],
                                    stdout=log, stderr=subprocess.STDOUT)
            finally:
                log.close()
            self.throttlers[h.name] = (p, status)
        self._wait_logged(lambda: all(st.exists() for _, st in self.throttlers.values())
                          or any(p.poll() is not None for p, _ in self.throttlers.values()),
                          30, "every host's throttler running",
                          f"throttle-{self.net.hosts[0].name}.log")
        dead = [h for h, (p, _) in self.throttlers.items() if p.poll() is not None]
        if dead:
            raise RuntimeError(f"throttler exited in {dead}: "
                               f"{self.log_tail(f'throttle-{dead[0]}.log')}")

    def throttle_status(self):
        """{host name: the throttler's last state (ird, max_ird, rate_bps, counters, ...)}."""
        out = {}
        for h, (_, path) in self.throttlers.items():
            try:
                out[h] = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                continue
        return out

    def throttle_totals(self):
        """Sums over the hosts' throttlers: CNMs charged, IRD raises/lowers, refused frames,
        rate writes and errors, and the highest IRD; None without throttlers."""
        if not self.throttlers:
            return None
        st = self.throttle_status()
        tot = {"hosts": len(st), "max_ird": max((s["max_ird"] for s in st.values()), default=0)}
        for k in ("cnms", "raises", "lowers"):
            tot[k] = sum(s["counters"][k] for s in st.values())
        for k in ("malformed", "not_for_this_host", "rate_writes", "rate_write_errors"):
            tot[k] = sum(s[k] for s in st.values())
        return tot

    def agent_cnms_by_level(self):
        """{level: {"generated", "charged", "relayed"}} summed over the switches of each level
        (fat-trees: 0 = leaves; other fabrics: the switch's group) from the agent's /metrics,
        or None without an agent: where CNMs are generated, and where they take effect."""
        m = self._agent_metrics_or_none()
        if m is None:
            return None
        out = {}
        tree = self.fabric.doc.get("kind") == "fattree"
        for sw in self.fabric.switches:
            level = sw.get("level") if tree else sw.get("group")
            row = out.setdefault(str(level), {"generated": 0, "charged": 0, "relayed": 0})
            br = self.fabric.sw_short[sw["name"]]
            for key, name in (("generated", "fabricflow_agent_cnm_generated_total"),
                              ("charged", "fabricflow_agent_cnm_received_total"),
                              ("relayed", "fabricflow_agent_cnm_relayed_total")):
                row[key] += int(metric_sum(m, name, switch=br))
        return out

    def agent_policy_events(self):
        """{event: count} of the agent's policy events (P's decreases and increases, and the
        CNMs and increases that left P as it was) summed over the switches, from /metrics, or
        None without an agent."""
        m = self._agent_metrics_or_none()
        if m is None:
            return None
        out = {}
        for (name, labels), v in m.items():
            if name == "fabricflow_agent_policy_events_total":
                ev = dict(labels).get("event")
                if ev:
                    out[ev] = out.get(ev, 0) + int(v)
        return out

    def agent_cp_counters(self):
        """{counter: total} of the emulated congestion point's counters (CNMs, samples
        silenced by the source census, samples whose Fb the drop excess raised) summed over
        the ports, from /metrics, or None without an agent."""
        m = self._agent_metrics_or_none()
        if m is None:
            return None
        out = {}
        for (name, _), v in m.items():
            if name.startswith("fabricflow_agent_cp_") and name.endswith("_total"):
                key = name[len("fabricflow_agent_cp_"):-len("_total")]
                out[key] = out.get(key, 0) + int(v)
        return out

    # ---- port-stall telemetry --------------------------------------------------------------
    def start_port_stats(self, csv_path, interval_ms=100, poll_us=PORT_STATS_POLL_US):
        """Starts `fabricflow-agent port-stats` on every switch port (roles and rates from the
        fabric export) writing `csv_path`, the simulator's port-stats.csv columns."""
        if not has_subcommand(AGENT_BIN, "port-stats"):
            raise NotAvailable(f"{AGENT_BIN} has no `port-stats` subcommand (cargo build "
                               f"--release -p fabricflow-agent)")
        ports = self.tmp / "ports.json"
        ports.write_text(json.dumps(fftopo.watched_ports(self.fabric, self.rates)))
        self._port_stats = self.spawn(
            [str(AGENT_BIN), "port-stats", "--ports", str(ports), "--out", str(csv_path),
             "--interval-ms", str(interval_ms), "--poll-us", str(poll_us)], "port-stats.log")
        return self._port_stats

    def stop_port_stats(self):
        """Stops the sampler (SIGTERM: it writes its summary and exits) and returns that
        summary ({"ports", "polls", "reads", "errors"}), or None."""
        p = getattr(self, "_port_stats", None)
        if p is None:
            return None
        p.terminate()
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        lines = (self.tmp / "port-stats.log").read_text().strip().splitlines()
        try:
            return json.loads(lines[-1]) if lines else None
        except json.JSONDecodeError:
            print(f"fflaunch: port-stats: {lines[-1]}")
            return None

    # ---- processes -------------------------------------------------------------------------
    def spawn(self, argv, logname, env=None):
        # The child keeps its own descriptor of the log; ours is closed at once.
        with open(self.tmp / logname, "w") as log:
            p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True, env=env)
        self.procs.append(p)
        # Recorded for ffclean.py, which kills it by pid if this process dies without cleanup.
        if getattr(self, "_pidfile", None):
            pids = json.loads(self._pidfile.read_text() or "[]") + [p.pid]
            self._pidfile.write_text(json.dumps(pids))
        return p

    def host_popen(self, host, argv, **kw):
        """Starts `argv` in a host's namespace; tracked and killed on cleanup."""
        p = host.popen(argv, **kw)
        self.procs.append(p)
        return p

    def node(self, json_or_short):
        """Mininet node by JSON or short name."""
        n = self.fabric.host_short.get(json_or_short) or self.fabric.sw_short.get(json_or_short)
        return self.net.get(n or json_or_short)


def parse_prometheus(text):
    """Prometheus text -> {(name, ((label, value), ...)): float}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)", line.strip())
        if not m:
            continue
        labels = tuple(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m[2] or ""))
        out[(m[1], labels)] = float(m[3])
    return out


def metric_sum(metrics, name, **match):
    """Sum of `name` over the series whose labels include `match`."""
    return sum(v for (n, labels), v in metrics.items()
               if n == name and all((k, str(x)) in labels for k, x in match.items()))


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
