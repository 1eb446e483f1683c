#!/bin/sh
# The shipped agent configuration on fabrics and patterns it was never tuned on: QCN-SW
# (combined) against minimal, Valiant and PAUSE, one row per (fabric, pattern, load), and
# QCN-SW over the better of minimal and Valiant. Dragonflies get uniform, ADV+1, ADV+h and
# hotspot. Usage: sim/scripts/generality.sh OUT [--agent-set KEY=VALUE ...]
# Env: TOPOS, LOADS (default "0.4 0.8"), WARMUP (20000), MEASURE (10000), SEED (1),
# BASE (directory of the baselines' runs, default OUT; they do not depend on the agent).
set -eu
OUT=$1; shift
BASE=${BASE:-$OUT}
BIN=${BIN:-target/release/fabricflow-sim}
LOADS=${LOADS:-0.4 0.8}
TOPOS=${TOPOS:-dragonfly:p=2,a=4,h=2 dragonfly:p=1,a=4,h=2 dragonfly:p=2,a=3,h=2 dragonfly:p=4,a=4,h=2 dragonfly:p=2,a=6,h=3}
WARMUP=${WARMUP:-20000}; MEASURE=${MEASURE:-10000}; SEED=${SEED:-1}
mkdir -p "$OUT"
CSV=$OUT/generality.csv
echo "topology,traffic,load,minimal,valiant,pause,qcnsw,qcnsw_over_best" > "$CSV"
acc() { tail -1 "$1/results.csv" | cut -d, -f5; }
for topo in $TOPOS; do
  h=$(echo "$topo" | sed 's/.*h=\([0-9]*\).*/\1/')
  for traffic in uniform adv+1 "adv+$h" hotspot; do
    for load in $LOADS; do
      cell=$(echo "$topo-$traffic-$load-s$SEED" | tr ':=,+' '____')
      for m in minimal valiant pause qcnsw-combined; do
        d=$BASE/$cell/$m; extra=""
        [ "$m" = qcnsw-combined ] && d=$OUT/$cell/$m && extra="$*"
        [ "$m" != qcnsw-combined ] && [ -f "$d/results.csv" ] && continue
        # shellcheck disable=SC2086
        $BIN --threads 1 --no-plot --seed "$SEED" --topology "$topo" --routing "$m" \
          --traffic "$traffic" --load "$load" --warmup "$WARMUP" --measure "$MEASURE" \
          --out "$d" $extra >/dev/null
      done
      mi=$(acc "$BASE/$cell/minimal"); va=$(acc "$BASE/$cell/valiant")
      pa=$(acc "$BASE/$cell/pause"); q=$(acc "$OUT/$cell/qcnsw-combined")
      r=$(echo "$q $mi $va" | awk '{b=($2>$3)?$2:$3; printf "%.3f", (b>0)?$1/b:0}')
      echo "\"$topo\",$traffic,$load,$mi,$va,$pa,$q,$r" | tee -a "$CSV"
    done
  done
done
