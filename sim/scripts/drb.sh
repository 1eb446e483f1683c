#!/bin/sh
# The DRB experiment (issue 20): shuffle and hot-spot on an 8x8 torus and a 32-node mesh with
# static minimal (dimension order), InfiniBand CC (minimal + injection throttling) and DRB, plus
# DRB against QCN-SW on a Dragonfly and a fat-tree. Writes OUT/drb.csv with columns
# topology,traffic,mode,offered_load,accepted,avg_latency_cycles,max_link_load.
# Usage: sim/scripts/drb.sh OUT [--scale small] [--warmup N --measure N --threads N]
set -eu
OUT=$1; shift
BIN=${BIN:-target/release/fabricflow-sim-drb}
[ -x "$BIN" ] || CARGO_INCREMENTAL=0 cargo build --release --locked -p fabricflow-sim --bin fabricflow-sim-drb
"$BIN" --out "$OUT" "$@"
