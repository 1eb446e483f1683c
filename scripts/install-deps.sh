#!/usr/bin/env bash
# Installs (idempotently) everything fabricflow's tests and demo need on Debian 12,
# and starts Open vSwitch with the userspace datapath (this kernel has no openvswitch module).
set -euo pipefail

PKGS=(openvswitch-switch mininet etcd-server etcd-client protobuf-compiler iperf3 ethtool
      iputils-ping tshark tcpdump iproute2 python3-matplotlib python3-pytest python3-pyflakes curl
      make)  # make: tikv-jemalloc-sys builds jemalloc, the controller's allocator

missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "install-deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # tshark asks whether non-root users may capture; answer no without a prompt.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Packages may start a system etcd; tests start their own on other ports, so stop it to keep ports free.
if command -v systemctl >/dev/null && systemctl is-active --quiet etcd 2>/dev/null; then
    systemctl stop etcd || true
fi

"$(dirname "$0")/ovs-start.sh"
