#!/usr/bin/env bash
# Where the machine's time goes while a Mininet run's traffic flows: runs
# `mininet/run.py ARGS...`, waits for its iperf3 clients, records `perf record -a` (software
# cpu-clock sampling, 499 Hz per CPU) for SECONDS after a further settle delay, and prints
# the samples per thread name and, for ovs-vswitchd's forwarding thread, how many landed in
# its own code against the kernel's (veth transmission and the receiving stack run as softirqs
# in its context, which /proc/PID/stat, and so run.py's cpu_percent, leaves out).
#
#   sudo flock -o /tmp/fabricflow-ovs.lock scripts/perf-forwarding.sh OUT 10 -- \
#       --topology dragonfly:p=2,a=4,h=2 --traffic uniform --modes qcnsw-combined ...
#
# One CPU's samples over the window are SECONDS × 499: a thread near that count is the
# bottleneck whatever the machine's idle time says. Needs `perf` (apt: linux-perf).
set -euo pipefail
[[ $# -ge 3 && $3 == "--" ]] || { echo "usage: $0 OUT SECONDS -- RUN.PY-ARGS..." >&2; exit 2; }
secs=$2
command -v perf >/dev/null || { echo "perf not found (apt install linux-perf)" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
shift 3
cd "$(dirname "$0")/.."
/usr/bin/python3 mininet/run.py "$@" --out "$out/run" > "$out/run.log" 2>&1 &
run=$!
# A failure below must not leave the run (and its Mininet network) behind.
trap 'kill "$run" 2>/dev/null || true' EXIT
for _ in $(seq 1 1200); do
    pgrep -f "iperf3 -c" >/dev/null && break
    kill -0 "$run" 2>/dev/null || { echo "run.py ended before any traffic: $out/run.log" >&2; exit 1; }
    sleep 0.5
done
# Past the clients' start and the TCP ramp (run.py's --warmup is 5 s).
sleep 8
perf record -a -F 499 -o "$out/perf.data" -- sleep "$secs" > "$out/perf-record.log" 2>&1
wait "$run"
echo "samples per thread name over ${secs} s (one CPU = $((secs * 499))):"
perf report -i "$out/perf.data" -n --no-children --sort comm --stdio -g none 2>/dev/null \
    | grep -v '^#' | grep -v '^$' | head -8
echo "ovs-vswitchd's forwarding thread, samples in the kernel against its own code:"
perf script -G -i "$out/perf.data" -F comm,ip 2>/dev/null \
    | awk '$1 == "ovs-vswitchd" {n++; if ($2 ~ /^ffff/) k++; else u++}
           END {printf "  %d samples: kernel %d, ovs-vswitchd %d\n", n, k, u}'
