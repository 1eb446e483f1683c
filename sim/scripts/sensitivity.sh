#!/bin/sh
# Sensitivity of QCN-SW to its constants: increase step, Gd, byte limit, Qeq (sampling base
# scaled with it) and the sampling base factor, for each variant (the published four and
# fabricflow's additions: Fb ageing, source comparison); scored on uniform at load U and ADV+1
# at load A together (score = accepted_uniform + accepted_adv).
# Usage: sim/scripts/sensitivity.sh OUT [TOPOLOGY] [U] [A]   -> OUT/sensitivity.csv
# SF, STEPS, GDS, BLS, QEQS override the grids (space-separated); VARIANTS overrides the variant list
# (one "name|routing flags" per line).
set -eu
OUT=${1:-/tmp/ffsens}
TOPO=${2:-dragonfly:p=2,a=4,h=2}
U=${3:-0.9}
A=${4:-0.45}
BIN=${BIN:-target/release/fabricflow-sim}
SF=${SF:-"1 2"}
STEPS=${STEPS:-"1 5"}
GDS=${GDS:-"0.0078125 0.00390625"}
BLS=${BLS:-"150000 30000"}
QEQS=${QEQS:-"2048 3072 4096"}
# Each variant starts from the published constants, so the grid alone sets step, Gd, byte
# limit, Qeq and sampling, and the additions appear only where a line names them.
P=--published-constants
VARIANTS=${VARIANTS:-"qcnsw-base|$P --routing qcnsw-base
qcnsw-sp|$P --routing qcnsw-sp
qcnsw-fc|$P --routing qcnsw-fc
qcnsw-combined|$P --routing qcnsw-combined
fc+age20|$P --routing qcnsw-fc --agent-set policy.fb_max_age_line_bytes=100000
combined+age20|$P --routing qcnsw-combined --agent-set policy.fb_max_age_line_bytes=100000
combined+sc+age20|$P --routing qcnsw-combined --source-comparison true --agent-set policy.fb_max_age_line_bytes=100000"}
mkdir -p "$OUT"
CSV="$OUT/sensitivity.csv"
echo "variant,step,gd,byte_limit,qeq,sampling,uniform_accepted,adv1_accepted,score" > "$CSV"
acc() { tail -1 "$1/results.csv" | awk -F, '{print $6}'; }
echo "$VARIANTS" | while IFS='|' read -r name flags; do
 for step in $STEPS; do
  for gd in $GDS; do
   for bl in $BLS; do
    for qeq in $QEQS; do
     for sf in $SF; do
      samp=$((150000 * qeq / 26000 / sf))
      # Qeq in octets as a fraction of a local port's 4 KB VC buffer (the CP's buffer).
      frac=$(echo "$qeq / 4096" | bc -l)
      # shellcheck disable=SC2086 # $flags is a list of arguments
      args="--topology $TOPO --warmup 10000 --measure 10000 --threads 1 --no-plot $flags --qcn-step $step --qcn-gd $gd --qcn-byte-limit $bl --agent-set cp.qeq_buffer_fraction=$frac --agent-set cp.sampling_base_bytes=$samp"
      nice -n 19 $BIN $args --traffic uniform --load "$U" --out "$OUT/run-u-$$" > /dev/null &
      nice -n 19 $BIN $args --traffic adv+1 --load "$A" --out "$OUT/run-a-$$" > /dev/null
      wait
      u=$(acc "$OUT/run-u-$$"); a=$(acc "$OUT/run-a-$$")
      echo "$name,$step,$gd,$bl,$qeq,$samp,$u,$a,$(echo "$u + $a" | bc -l)" >> "$CSV"
     done
    done
   done
  done
 done
done
sort -t, -k9 -g -r "$CSV" | head -15
