"""Churn select-group weights over OF1.3 on each bridge's mgmt socket (experiment only)."""
import re, socket, struct, time

def hello():
    return struct.pack("!BBHI", 4, 0, 8, 1)

def group_mod(xid, text):
    gid = int(re.search(r"group_id=(\d+)", text)[1])
    buckets = b""
    for b in text.split("bucket=")[1:]:
        w = int(re.search(r"weight:(\d+)", b)[1])
        wp = int(re.search(r"watch_port:(\d+)", b)[1])
        out = int(re.search(r"output:(\d+)", b)[1])
        act = struct.pack("!HHIH6x", 0, 16, out, 0xffff)
        buckets += struct.pack("!HHII4x", 16 + len(act), w, wp, 0xffffffff) + act
    body = struct.pack("!HBxI", 1, 1, gid) + buckets  # OFPGC_MODIFY, OFPGT_SELECT
    return struct.pack("!BBHI", 4, 15, 8 + len(body), xid) + body

def run(bridges_groups, rate_per_bridge, stop, counter):
    """bridges_groups: {br: ([texts at p0], [texts at p1])}; alternates p0/p1 per group."""
    socks = {}
    for br in bridges_groups:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(f"/var/run/openvswitch/{br}.mgmt")
        s.sendall(hello()); s.setblocking(False)
        socks[br] = s
    period = 1.0 / rate_per_bridge
    k = 0; xid = 100
    while not stop.is_set():
        t0 = time.monotonic()
        for br, (a, b) in bridges_groups.items():
            texts = a if (k // len(a)) % 2 == 0 else b
            g = texts[k % len(texts)]
            xid += 1
            try:
                socks[br].sendall(group_mod(xid, g))
                counter[0] += 1
            except BlockingIOError:
                pass
            try:
                while socks[br].recv(65536):
                    pass
            except (BlockingIOError, OSError):
                pass
        k += 1
        time.sleep(max(0, period - (time.monotonic() - t0)))
