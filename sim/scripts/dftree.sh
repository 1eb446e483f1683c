#!/bin/sh
# dFtree's table (issue 19): the seed's 648-host fat-tree (36 leaves x 18 hosts, 18 spines),
# 1 / 3 / 9 hot spots, contributors sending PERCENTS % of their packets to their hot spot and
# the rest uniformly, offered load LOAD; one lane, oracle lanes and detection-driven lanes.
# Writes OUT/dftree.csv (hotspots,mode,throughput_per_node,victim_throughput,gain_vs_one_lane,
# percent) and OUT/dftree-sweeps.csv (every detection sweep).
# Usage: sim/scripts/dftree.sh OUT
# Env: PERCENTS (default "5,10"), HOTSPOTS ("1,3,9"), LOAD (1.0), WARMUP (20000),
# MEASURE (20000), SWEEP (5000 cycles), TOPOLOGY (leafspine:l=36,s=18,p=18), SEED (1),
# BIN (target/release/fabricflow-dftree; built if missing).
set -eu
OUT=$1
BIN=${BIN:-target/release/fabricflow-dftree}
[ -x "$BIN" ] || cargo build --release --locked -p fabricflow-sim --bin fabricflow-dftree
"$BIN" --topology "${TOPOLOGY:-leafspine:l=36,s=18,p=18}" --hotspots "${HOTSPOTS:-1,3,9}" \
  --percent "${PERCENTS:-5,10}" --load "${LOAD:-1.0}" --warmup "${WARMUP:-20000}" \
  --measure "${MEASURE:-20000}" --sweep "${SWEEP:-5000}" --seed "${SEED:-1}" --out "$OUT"
column -s, -t < "$OUT/dftree.csv"
