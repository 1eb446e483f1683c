#!/bin/bash
# How many of a SELECT group's 256 dp_hash slots change output port on each weight write, in the
# weighted and the slotted layout, measured on Open vSwitch itself: a scratch netdev bridge, the
# groups the agent would write (proto/examples/select_writes.rs), probe frames from 4 096
# source addresses so every slot gets a datapath flow, and `dpctl/dump-flows` read after each
# write (the revalidators re-translate the flows; `revalidator/wait` waits for them).
#
#   flock -o /tmp/fabricflow-ovs.lock scripts/select-churn.sh [W/W/.../PAD ...]
#
# Defaults to the steps 255/0/0/1 250/5/0/1 245/7/3/1 240/10/5/1 (minimal port, two
# candidates, padding). Needs ovs-vswitchd running (scripts/ovs-start.sh) and cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(255/0/0/1 250/5/0/1 245/7/3/1 240/10/5/1)
br=ffchurn
cleanup() {
    ovs-vsctl --if-exists del-br $br
    for i in 1 2 3 4; do ip link del ffch$i 2>/dev/null || true; done
}
trap cleanup EXIT
cargo build -q -p fabricflow-proto --example select_writes
writes=target/debug/examples/select_writes

setup() {
    cleanup
    ovs-vsctl add-br $br -- set bridge $br datapath_type=netdev protocols=OpenFlow13 \
        fail-mode=secure
    for i in 1 2 3 4; do
        ip link add ffch$i type veth peer name ffch${i}p
        ip link set ffch$i up; ip link set ffch${i}p up
        ovs-vsctl add-port $br ffch$i -- set interface ffch$i ofport_request=$i
    done
}

probe() {  # UDP frames into port 1 from 4 096 source addresses (OVS's symmetric L4 hash
           # leaves UDP ports out), three rounds so every slot's upcall lands
    /usr/bin/python3 - <<'PY'
import socket, struct, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("ffch1p", 0))
for _ in range(3):
    for n in range(4096):
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, 0, 0, 64, 17, 0,
                         bytes([10, 1, n >> 8, n & 255]), bytes([10, 2, 0, 1]))
        words = struct.unpack("!10H", ip)
        c = sum(words); c = (c >> 16) + (c & 0xffff); c = ~(c + (c >> 16)) & 0xffff
        ip = ip[:10] + struct.pack("!H", c) + ip[12:]
        s.send(bytes.fromhex("020000000002020000000001") + b"\x08\x00" + ip
               + struct.pack("!HHHH", 4000, 9000, 8, 0))
    time.sleep(0.3)
PY
}

slots() {  # slot -> datapath output port, one line each, sorted by slot
    ovs-appctl dpctl/dump-flows netdev@ovs-netdev \
        | sed -nE 's/.*dp_hash\(0x([0-9a-f]+)\/0x([0-9a-f]+)\).*actions:([0-9]+).*/\1 \2 \3/p' \
        | while read -r h m a; do echo "$(( 0x$h & 0x$m )) $a"; done | sort -u | sort -k1,1
}

printf '%-8s %-24s %6s %6s %6s\n' layout write slots moved needed
for layout in weights slots; do
    setup
    mapfile -t groups < <($writes $layout 2,3,4 "${steps[@]}")
    prev=""
    for i in "${!groups[@]}"; do
        if [ "$i" -eq 0 ]; then
            ovs-ofctl -O OpenFlow13 add-group $br "${groups[$i]}"
            ovs-ofctl -O OpenFlow13 add-flow $br "in_port=1,actions=group:1"
        else
            ovs-ofctl -O OpenFlow13 mod-group $br "${groups[$i]}"
            ovs-appctl revalidator/wait
        fi
        probe
        now=$(slots)
        if [ -n "$prev" ]; then
            moved=$(join <(echo "$prev") <(echo "$now") | awk '$2 != $3' | wc -l)
            needed=$(/usr/bin/python3 -c '
import sys
a, b = ([int(x) for x in s.split("/")] for s in sys.argv[1:])
a[0] += a.pop(); b[0] += b.pop()
print(sum(abs(x - y) for x, y in zip(a, b)) // 2)' "${steps[$((i-1))]}" "${steps[$i]}")
            printf '%-8s %-24s %6s %6s %6s\n' $layout "${steps[$((i-1))]} -> ${steps[$i]}" \
                "$(echo "$now" | wc -l)" "$moved" "$needed"
        fi
        prev=$now
    done
done
