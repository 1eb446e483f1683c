#!/usr/bin/env bash
# Captures golden OpenFlow 1.3 vectors from the local Open vSwitch (userspace datapath).
#
# Creates the netdev bridge ffgold0 (OpenFlow13 only, fail-mode secure, fixed dpid and MACs) with
# two internal ports and a passive controller target ptcp:PORT:127.0.0.1, records loopback traffic
# on PORT with tcpdump while ovs-ofctl talks to the bridge through that target (one TCP connection
# per command), then cuts every connection's byte stream, per direction, into single OpenFlow
# messages stored as proto/tests/golden/ovs-3.1/NAME-DIR-N.bin:
#   NAME  the command (see the table in the generated INDEX.md)
#   DIR   c2s (ovs-ofctl -> switch) or s2c (switch -> ovs-ofctl)
#   N     1-based position of the message in that direction of that connection
# The pcap is kept in out/ (git-ignored); tshark's malformed-packet verdict goes to
# proto/tests/golden/ovs-3.1/tshark-malformed.txt. The bridge is removed on exit.
#
# Usage: scripts/capture-golden.sh            (as root; needs ovs-vsctl/ovs-ofctl, tcpdump, tshark)
# Env:   FFGOLD_PORT (default 16653), FFGOLD_BRIDGE (default ffgold0)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BR=${FFGOLD_BRIDGE:-ffgold0}
PORT=${FFGOLD_PORT:-16653}
TARGET=tcp:127.0.0.1:$PORT
GOLD=$ROOT/proto/tests/golden/ovs-3.1
OUT=$ROOT/out
PCAP=$OUT/golden-ovs-3.1.pcap
# --no-names: otherwise ovs-ofctl 3.1 opens two extra connections per flow/group/packet-out
# command to fetch the table features and port descriptions (to resolve names).
OFCTL=(ovs-ofctl -O OpenFlow13 --no-names --timeout=10)

# Frames sent with PACKET_OUT and punted back as packet-ins:
# fabricflow's LLDP topology probe (dpid 0x0000020000010000, port 5, TTL 120, "ff-s1"), padded
LLDP=0180c200000e02000001000588cc021607647069643a3030303030323030303030313030303004020735060200780a0566662d733100000000000000
# the CNM example of /work/shared/QCN.md (VLAN 10, QntzFb 42, 28-octet MSDU)
CNM=0200000000010200000001078100c00a22e7002a0200000001070000003000050000020000000009001c08004500002e1c4640004011d66d0a0000010a000009c0001389001a

for tool in ovs-vsctl ovs-ofctl tcpdump tshark python3; do
    command -v "$tool" >/dev/null || { echo "capture-golden: $tool not found" >&2; exit 1; }
done
"$ROOT/scripts/ovs-start.sh"

TCPDUMP_PID=
MON_PID=
WORK=$(mktemp -d)
cleanup() {
    set +e
    [ -n "$MON_PID" ] && kill "$MON_PID" 2>/dev/null && wait "$MON_PID" 2>/dev/null
    [ -n "$TCPDUMP_PID" ] && kill "$TCPDUMP_PID" 2>/dev/null && wait "$TCPDUMP_PID" 2>/dev/null
    ovs-vsctl --timeout=10 --if-exists del-br "$BR"
    rm -rf "$WORK"
}
trap cleanup EXIT

# ---- bridge ---------------------------------------------------------------------------------
ovs-vsctl --timeout=10 --if-exists del-br "$BR"
sleep 0.2
if ss -ltn "sport = :$PORT" | grep -q LISTEN; then
    echo "capture-golden: port $PORT is already in use (set FFGOLD_PORT)" >&2
    exit 1
fi

ovs-vsctl --timeout=10 add-br "$BR" \
    -- set bridge "$BR" datapath_type=netdev protocols=OpenFlow13 fail-mode=secure \
    other-config:datapath-id=0000000000000f01 other-config:hwaddr=02:00:00:00:0f:00 \
    -- add-port "$BR" ffg1 -- set interface ffg1 type=internal ofport_request=1 mac='"02:00:00:00:0f:01"' \
    -- add-port "$BR" ffg2 -- set interface ffg2 type=internal ofport_request=2 mac='"02:00:00:00:0f:02"'
# Passive target: ovs-vswitchd listens, ovs-ofctl connects (set-controller accepts ptcp:).
ovs-vsctl --timeout=10 set-controller "$BR" "ptcp:$PORT:127.0.0.1"
for _ in $(seq 1 50); do
    ss -ltn "sport = :$PORT" | grep -q LISTEN && break
    sleep 0.1
done
ss -ltn "sport = :$PORT" | grep -q LISTEN || { echo "capture-golden: no listener on $PORT" >&2; exit 1; }
ip link set ffg1 up 2>/dev/null || true
ip link set ffg2 up 2>/dev/null || true

# ---- capture --------------------------------------------------------------------------------
mkdir -p "$OUT" "$GOLD"
rm -f "$PCAP"
tcpdump -i lo -U -s 0 -B 65536 -w "$PCAP" "tcp port $PORT" 2>"$WORK/tcpdump.err" &
TCPDUMP_PID=$!
for _ in $(seq 1 50); do
    grep -q listening "$WORK/tcpdump.err" 2>/dev/null && break
    sleep 0.1
done
sleep 0.5

# Each connection is attributed to the command started last before its SYN (times.tsv).
mark() { printf '%s\t%s\n' "$(date +%s.%N)" "$1" >>"$WORK/times.tsv"; }
run() { # run NAME ovs-ofctl-args...   (failures are expected for the error cases)
    local name=$1
    shift
    mark "$name"
    echo "$name: ovs-ofctl -O OpenFlow13 --no-names --timeout=10 $*" >>"$WORK/commands.txt"
    "${OFCTL[@]}" "$@" >"$WORK/$name.out" 2>&1 || echo "  (exit $?)" >>"$WORK/commands.txt"
    sleep 0.2
}

run show show "$TARGET"
run dump-desc dump-desc "$TARGET"
run probe probe "$TARGET"
run set-frags set-frags "$TARGET" normal
run add-meter add-meter "$TARGET" 'meter=1,kbps,band=type=drop,rate=1000'
run add-group-select add-group "$TARGET" \
    'group_id=1003,type=select,bucket=weight:200,actions=output:1,bucket=weight:55,actions=output:2,bucket=weight:1,actions=output:1'
run add-flow-masked add-flow "$TARGET" \
    'cookie=0xff00000000000001,table=0,priority=100,in_port=1,eth_dst=02:00:00:01:00:00/ff:ff:ff:ff:00:00,actions=meter:1,output:2,write_metadata:0x5/0xff,goto_table:1'
run add-flow-group add-flow "$TARGET" \
    'cookie=0xff00000000000001,table=1,priority=100,eth_dst=02:00:00:02:00:00/ff:ff:ff:ff:00:00,actions=group:1003'
run add-flow-controller-id add-flow "$TARGET" \
    'cookie=0xff00000000000001,table=0,priority=200,in_port=1,dl_type=0x22e7,actions=controller(id=7,max_len=128)'
run add-flow-bad-group add-flow "$TARGET" 'cookie=0xff00000000000001,table=0,priority=10,actions=group:9999'
cat >"$WORK/bundle.flows" <<'EOF'
cookie=0xff00000000000002,table=0,priority=150,arp,arp_op=1,arp_tpa=10.2.0.1,actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:02:00:00:02:00:01->eth_src,set_field:2->arp_op,move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],set_field:02:00:00:02:00:01->arp_sha,move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],set_field:10.2.0.1->arp_spa,IN_PORT
cookie=0xff00000000000002,table=2,priority=50,dl_vlan=10,actions=pop_vlan,output:1
cookie=0xff00000000000002,table=2,priority=40,in_port=2,ip,nw_dst=10.2.0.0/16,actions=push_vlan:0x8100,set_field:4106->vlan_vid,write_actions(output:1)
EOF
run bundle-add-flows --bundle add-flows "$TARGET" "$WORK/bundle.flows"
run mod-group-weights mod-group "$TARGET" \
    'group_id=1003,type=select,bucket=weight:100,actions=output:1,bucket=weight:155,actions=output:2,bucket=weight:1,actions=output:1'
run add-flow-lldp-to-controller add-flow "$TARGET" 'table=0,priority=300,dl_type=0x88cc,actions=CONTROLLER:65535'
run add-flow-cnm-to-controller add-flow "$TARGET" 'table=0,priority=250,in_port=2,dl_type=0x22e7,actions=CONTROLLER:128'

# Packet-ins: a monitor connection (SET_CONFIG miss_send_len 65535) receives what the flows above
# punt to controller id 0, once as OFPT_PACKET_IN (-P standard), once as NXT_PACKET_IN2 (default).
for fmt in standard nxt_packet_in2; do
    mark "monitor-$fmt"
    echo "monitor-$fmt: ovs-ofctl -O OpenFlow13 --no-names --timeout=10 -P $fmt monitor $TARGET 65535  (background, killed after the two packet-outs below)" >>"$WORK/commands.txt"
    "${OFCTL[@]}" -P "$fmt" monitor "$TARGET" 65535 >"$WORK/monitor-$fmt.out" 2>&1 &
    MON_PID=$!
    sleep 1
    run "packet-out-lldp-$fmt" packet-out "$TARGET" "in_port=1,packet=$LLDP,actions=table"
    run "packet-out-cnm-$fmt" packet-out "$TARGET" "in_port=2,packet=$CNM,actions=table"
    sleep 0.5
    kill "$MON_PID" 2>/dev/null || true
    wait "$MON_PID" 2>/dev/null || true
    MON_PID=
    sleep 0.2
done

run dump-flows dump-flows "$TARGET"
run dump-aggregate dump-aggregate "$TARGET"
run dump-groups dump-groups "$TARGET"
run dump-group-stats dump-group-stats "$TARGET"
run dump-group-features dump-group-features "$TARGET"
run dump-meters dump-meters "$TARGET"
run meter-stats meter-stats "$TARGET"
run dump-ports dump-ports "$TARGET"
run dump-ports-desc dump-ports-desc "$TARGET"
run dump-tables dump-tables "$TARGET"
run dump-table-features dump-table-features "$TARGET"
run queue-stats queue-stats "$TARGET"
run del-flows-cookie del-flows "$TARGET" 'cookie=0xff00000000000001/-1'
run del-groups del-groups "$TARGET"

sleep 1
kill "$TCPDUMP_PID"
wait "$TCPDUMP_PID" 2>/dev/null || true
TCPDUMP_PID=
if grep -E '^[1-9][0-9]* packets dropped by kernel' "$WORK/tcpdump.err"; then
    echo "capture-golden: tcpdump dropped packets; run again" >&2
    exit 1
fi

# ---- cut into messages ----------------------------------------------------------------------
tshark -r "$PCAP" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 0' -T fields -E separator=/t \
    -e tcp.stream -e frame.time_epoch >"$WORK/syns.tsv"
tshark -r "$PCAP" -Y 'tcp.len > 0' -T fields -E separator=/t \
    -o tcp.relative_sequence_numbers:TRUE \
    -e tcp.stream -e tcp.srcport -e tcp.seq -e tcp.payload >"$WORK/segments.tsv"
rm -f "$GOLD"/*.bin
python3 - "$WORK/times.tsv" "$WORK/segments.tsv" "$GOLD" "$PORT" "$WORK/syns.tsv" <<'PY'
import sys, pathlib, collections
marks = [(float(t), n) for t, n in (l.split("\t") for l in pathlib.Path(sys.argv[1]).read_text().splitlines())]
gold = pathlib.Path(sys.argv[3]); port = sys.argv[4]
syn = {int(s): float(t) for s, t in (l.split("\t") for l in pathlib.Path(sys.argv[5]).read_text().splitlines())}
# Reassemble by sequence number (segments can repeat: retransmissions, window probes).
streams = collections.OrderedDict()
for line in pathlib.Path(sys.argv[2]).read_text().splitlines():
    s, sport, seq, payload = line.split("\t")
    d = "s2c" if sport == port else "c2s"
    data = bytes.fromhex(payload.replace(":", ""))
    buf = streams.setdefault(int(s), {"c2s": bytearray(), "s2c": bytearray()})[d]
    off = int(seq) - 1
    if off > len(buf):
        sys.exit(f"capture-golden: stream {s} {d}: hole at {len(buf)} (segment at {off})")
    if off + len(data) > len(buf):
        if buf[off:] != data[:len(buf) - off]:
            sys.exit(f"capture-golden: stream {s} {d}: overlapping segment differs at {off}")
        buf[off:] = data
ids = sorted(streams)
owner = {}
for sid in ids:
    before = [n for t, n in marks if t <= syn[sid]]
    if not before:
        sys.exit(f"capture-golden: connection {sid} precedes every command")
    owner[sid] = before[-1]
per_cmd = collections.Counter(owner.values())
seen = collections.Counter()
names = []
for sid in ids:
    n = owner[sid]; seen[n] += 1
    names.append(n if per_cmd[n] == 1 else f"{n}-conn{seen[n]}")
missing = [n for _, n in marks if n not in per_cmd]
if missing:
    sys.exit(f"capture-golden: no connection captured for {missing}")
TYPES = {0: "HELLO", 1: "ERROR", 2: "ECHO_REQUEST", 3: "ECHO_REPLY", 4: "EXPERIMENTER",
         5: "FEATURES_REQUEST", 6: "FEATURES_REPLY", 7: "GET_CONFIG_REQUEST", 8: "GET_CONFIG_REPLY",
         9: "SET_CONFIG", 10: "PACKET_IN", 11: "FLOW_REMOVED", 12: "PORT_STATUS", 13: "PACKET_OUT",
         14: "FLOW_MOD", 15: "GROUP_MOD", 16: "PORT_MOD", 17: "TABLE_MOD", 18: "MULTIPART_REQUEST",
         19: "MULTIPART_REPLY", 20: "BARRIER_REQUEST", 21: "BARRIER_REPLY", 22: "QUEUE_GET_CONFIG_REQUEST",
         23: "QUEUE_GET_CONFIG_REPLY", 24: "ROLE_REQUEST", 25: "ROLE_REPLY", 26: "GET_ASYNC_REQUEST",
         27: "GET_ASYNC_REPLY", 28: "SET_ASYNC", 29: "METER_MOD"}
MP = {0: "DESC", 1: "FLOW", 2: "AGGREGATE", 3: "TABLE", 4: "PORT_STATS", 5: "QUEUE", 6: "GROUP",
      7: "GROUP_DESC", 8: "GROUP_FEATURES", 9: "METER", 10: "METER_CONFIG", 11: "METER_FEATURES",
      12: "TABLE_FEATURES", 13: "PORT_DESC", 0xffff: "EXPERIMENTER"}
def describe(m):
    ver, typ = m[0], m[1]
    t = TYPES.get(typ, f"type {typ}")
    if typ in (18, 19) and len(m) >= 12:
        t += " " + MP.get(int.from_bytes(m[8:10], "big"), "?")
        if int.from_bytes(m[10:12], "big") & 1:
            t += " (MORE)"
    if typ == 4 and len(m) >= 16:
        exp, sub = int.from_bytes(m[8:12], "big"), int.from_bytes(m[12:16], "big")
        t += f" {exp:#010x}/{sub}"
    if typ == 1 and len(m) >= 12:
        t += f" type={int.from_bytes(m[8:10], 'big')} code={int.from_bytes(m[10:12], 'big')}"
    return f"v{ver:#04x} {t}"
rows = []
for sid, name in zip(ids, names):
    for d in ("c2s", "s2c"):
        buf, off, n = streams[sid][d], 0, 0
        while off < len(buf):
            if len(buf) - off < 8:
                sys.exit(f"capture-golden: {name} {d}: {len(buf) - off} stray bytes")
            length = int.from_bytes(buf[off + 2:off + 4], "big")
            if length < 8 or off + length > len(buf):
                sys.exit(f"capture-golden: {name} {d}: bad length {length} at {off}")
            m = bytes(buf[off:off + length]); off += length; n += 1
            fname = f"{name}-{d}-{n}.bin"
            (gold / fname).write_bytes(m)
            rows.append((fname, describe(m), len(m), int.from_bytes(m[4:8], "big")))
with open(gold / "INDEX.md", "w") as f:
    f.write("# Index of the captured messages (generated by scripts/capture-golden.sh)\n\n")
    f.write("| file | version, type | length | xid |\n|---|---|---|---|\n")
    for r in rows:
        f.write(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:#x} |\n")
print(f"capture-golden: {len(rows)} messages from {len(ids)} connections into {gold}")
PY

# ---- tshark's verdict ------------------------------------------------------------------------
ts() { tshark -r "$PCAP" -d "tcp.port==$PORT,openflow" "$@" 2>&1 | grep -v '^Running as user' || true; }
{
    echo "# $(tshark --version | head -1)"
    echo "# tshark -r golden-ovs-3.1.pcap -d tcp.port==$PORT,openflow -Y '_ws.malformed'"
    ts -Y '_ws.malformed'
    echo "# malformed frames: $(ts -Y '_ws.malformed' | grep -c . || true)"
    echo "# OpenFlow frames with expert info (TCP analysis excluded):"
    echo "# tshark ... -Y 'openflow_v4 && _ws.expert && !tcp.analysis.flags && tcp.flags.fin==0'"
    ts -Y 'openflow_v4 && _ws.expert && !tcp.analysis.flags && tcp.flags.fin==0' \
        -T fields -e frame.number -e _ws.col.Info -e _ws.expert.message
} >"$GOLD/tshark-malformed.txt"
sed "s#$WORK/##g" "$WORK/commands.txt" >"$GOLD/commands.txt"
cp "$WORK/bundle.flows" "$GOLD/bundle.flows"
ovs-vswitchd --version | head -1 >"$GOLD/ovs-version.txt"
echo "capture-golden: pcap $PCAP"
cat "$GOLD/tshark-malformed.txt"
