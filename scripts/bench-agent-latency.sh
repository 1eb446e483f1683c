#!/usr/bin/env bash
# Reaction latency of fabricflow-agent on a real Open vSwitch (userspace datapath): a CNM enters
# the bridge on fabric port 3 (PACKET_OUT, actions=TABLE → table 0 → controller(id=4011) → agent)
# until the new bucket weights are visible in a GROUP_DESC reply on another connection.
# Prints min/median/p90/p99/max over 150 CNMs and the GROUP_DESC round trip (polling overhead).
# Needs root and ovs-vswitchd (scripts/ovs-start.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/ovs-start.sh
cargo test --release -p fabricflow-agent --test ovs_agent -- --ignored --nocapture reaction_latency 2>&1 |
    grep -E "reaction latency|test result"
