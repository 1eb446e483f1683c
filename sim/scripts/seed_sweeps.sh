#!/bin/sh
# The seed's figures with fabricflow-sim's own numbers: uniform and ADV+1 sweeps for every
# routing mode, and the uniform -> ADV+1 transient, on the 1 056-host Dragonfly (defaults).
# Usage: sim/scripts/seed_sweeps.sh OUT [TOPOLOGY]    (runs under nice, 2 threads)
set -eu
OUT=${1:-/tmp/ffsim}
TOPO=${2:-dragonfly:p=4,a=8,h=4}
BIN=${BIN:-target/release/fabricflow-sim}
# Extra flags for every run (e.g. tuned QCN-SW constants) and the modes to run.
EXTRA=${EXTRA:-}
MODES=${MODES:-"minimal valiant ugal-l pause qcnsw-base qcnsw-sp qcnsw-fc qcnsw-combined"}
TMODES=${TMODES:-"qcnsw-base qcnsw-sp qcnsw-fc qcnsw-combined ugal-l"}
# TRAFFIC="uniform" or "adv1" runs one of the two sweeps only.
TRAFFIC=${TRAFFIC:-"uniform adv1"}
COMMON="--topology $TOPO --measure 10000 --threads 2 --seed 1 $EXTRA"
for r in $MODES; do
  for t in $TRAFFIC; do
    case $t in
      # ADV+1 warms up 30 000 cycles: the QCN-SW modes need that long to reach steady state.
      adv1) nice -n 19 $BIN $COMMON --warmup 30000 --routing $r --traffic adv+1 --sweep 0.1:0.5:0.1 --out "$OUT/adv1/$r" --no-plot ;;
      *) nice -n 19 $BIN $COMMON --warmup 10000 --routing $r --traffic uniform --sweep 0.1:1.0:0.1 --out "$OUT/uniform/$r" --no-plot ;;
    esac
  done
done
for r in $TMODES; do
  nice -n 19 $BIN --topology $TOPO --warmup 0 --measure 30000 --threads 2 $EXTRA --routing $r \
    --traffic 'uniform->adv+1@10000' --sweep 0.2:0.4:0.2 --window 100 --out "$OUT/transient/$r" --no-plot
done
for t in uniform adv1; do
  /usr/bin/python3 sim/plots/plot.py --compare "$OUT/$t" "$OUT/$t"/*
done
