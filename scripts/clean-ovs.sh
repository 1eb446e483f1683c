#!/usr/bin/env bash
# Deletes Open vSwitch bridges created by fabricflow's tests (names start with "ff").
set -uo pipefail
command -v ovs-vsctl >/dev/null || exit 0
for br in $(ovs-vsctl --timeout=5 list-br 2>/dev/null | grep '^ff' || true); do
    ovs-vsctl --timeout=5 --if-exists del-br "$br"
done
