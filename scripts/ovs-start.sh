#!/usr/bin/env bash
# Starts ovsdb-server and ovs-vswitchd if they are not running. Idempotent.
# The kernel datapath module is absent here; bridges must use datapath_type=netdev.
set -euo pipefail
if ovs-vsctl --timeout=2 show >/dev/null 2>&1 && pidof ovs-vswitchd >/dev/null; then
    exit 0
fi
# --no-ovs-vswitchd-kmod / --system-id keep ovs-ctl from failing on the missing kernel module.
/usr/share/openvswitch/scripts/ovs-ctl --no-monitor --system-id=random start --delete-bridges 2>&1 |
    grep -v -i 'module' || true
for _ in $(seq 1 50); do
    if ovs-vsctl --timeout=2 show >/dev/null 2>&1 && pidof ovs-vswitchd >/dev/null; then
        exit 0
    fi
    sleep 0.2
done
echo "ovs-start: ovs-vswitchd did not come up" >&2
exit 1
