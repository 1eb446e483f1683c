#!/usr/bin/env bash
# Reaction latency of fabricflow-agent on a real Open vSwitch (userspace datapath): a CNM enters
# the bridge on fabric port 3 (PACKET_OUT, actions=TABLE → table 0 → controller(id=4011) → agent)
# until the switch has processed the agent's GROUP_MOD (its BARRIER_REPLY to the barrier the agent
# sends behind it), hop by hop on one clock: PACKET_OUT sent → the packet-in at a tap connection →
# the agent's read → its GROUP_MOD written → the BARRIER_REPLY read. p50/p90/p99/max over 600
# CNMs (FABRICFLOW_BENCH_CNMS). FABRICFLOW_BENCH_POLL_US=N also reads GROUP_DESC until the new
# weights show, every N µs (0: back to back).
#
# FABRICFLOW_BENCH_HOGS=N runs N busy loops (nice 0, like a build) beside it: the machine's
# other work, reproducibly. FABRICFLOW_BENCH_NICE=N runs the test — the agent and the
# measuring threads — at nice N (ovs-vswitchd runs at -10; `Nice=` in the agent's unit).
#
# Needs root and ovs-vswitchd (scripts/ovs-start.sh); drives Open vSwitch, so run it under
# `flock -o /tmp/fabricflow-ovs.lock`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release -p fabricflow-agent --test ovs_agent --no-run 2>/dev/null
./scripts/ovs-start.sh
hogs=()
cleanup() { for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
for _ in $(seq 1 "${FABRICFLOW_BENCH_HOGS:-0}"); do
    (while :; do :; done) &
    hogs+=($!)
done
cargo test --release -p fabricflow-agent --test ovs_agent -- --ignored --nocapture reaction_latency 2>&1 |
    grep -E "reaction latency|test result"
