#!/bin/sh
# Sensitivity of QCN-SW to its constants: increase step, Gd, byte limit, Qeq (sampling base
# scaled with it) and the sampling base factor, for each variant; scored on uniform at load U
# and ADV+1 at load A together (score = accepted_uniform + accepted_adv).
# Usage: sim/scripts/sensitivity.sh OUT [TOPOLOGY] [U] [A]   -> OUT/sensitivity.csv
set -eu
OUT=${1:-/tmp/ffsens}
TOPO=${2:-dragonfly:p=2,a=4,h=2}
U=${3:-0.9}
A=${4:-0.45}
BIN=${BIN:-target/release/fabricflow-sim}
mkdir -p "$OUT"
CSV="$OUT/sensitivity.csv"
echo "variant,step,gd,byte_limit,qeq,sampling,uniform_accepted,adv1_accepted,score" > "$CSV"
acc() { tail -1 "$1/results.csv" | awk -F, '{print $6}'; }
for v in qcnsw-base qcnsw-sp qcnsw-fc qcnsw-combined; do
 for step in 1 5; do
  for gd in 0.0078125 0.00390625; do
   for bl in 150000 30000; do
    for qeq in 2048 3072 4096; do
     for sf in 1 2; do
      samp=$((150000 * qeq / 26000 / sf))
      args="--topology $TOPO --warmup 10000 --measure 10000 --threads 1 --no-plot --routing $v --qcn-step $step --qcn-gd $gd --qcn-byte-limit $bl --qeq-bytes $qeq --cp-sampling-bytes $samp"
      nice -n 19 $BIN $args --traffic uniform --load "$U" --out "$OUT/run-u" > /dev/null
      nice -n 19 $BIN $args --traffic adv+1 --load "$A" --out "$OUT/run-a" > /dev/null
      u=$(acc "$OUT/run-u"); a=$(acc "$OUT/run-a")
      echo "$v,$step,$gd,$bl,$qeq,$samp,$u,$a,$(echo "$u + $a" | bc -l)" >> "$CSV"
     done
    done
   done
  done
 done
done
sort -t, -k9 -g -r "$CSV" | head -15
