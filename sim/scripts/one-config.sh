#!/bin/sh
# The agent's shipped configuration (or FLAGS on top) against minimal, Valiant and PAUSE on
# Dragonfly(4,8,4) and (3,6,3), uniform / ADV+1 / ADV+h, at several loads: the simulator half of
# "one configuration everywhere". Prints one row per (topology, traffic, load) with each mode's
# accepted fraction and QCN-SW over the better of minimal and Valiant.
# Usage: sim/scripts/one-config.sh OUT [--agent-set KEY=VALUE ...]
# Env: LOADS (default "0.4 0.8"), TOPOS, WARMUP (20000), MEASURE (10000), QCN (qcnsw-combined),
# BASE (directory of the baselines' runs, default OUT: they do not depend on the agent's
# configuration, so sweeps of it share one BASE and rerun only QCN-SW), SIM (simulator flags for
# every mode, e.g. "--out-buffer 64": a different model, so give it its own BASE).
set -eu
OUT=$1; shift
BASE=${BASE:-$OUT}
BIN=${BIN:-target/release/fabricflow-sim}
LOADS=${LOADS:-0.4 0.8}
TOPOS=${TOPOS:-dragonfly:p=4,a=8,h=4 dragonfly:p=3,a=6,h=3}
WARMUP=${WARMUP:-20000}; MEASURE=${MEASURE:-10000}
QCN=${QCN:-qcnsw-combined}
SIM=${SIM:-}
mkdir -p "$OUT"
CSV=$OUT/one-config.csv
echo "topology,traffic,load,minimal,valiant,pause,qcnsw,qcnsw_over_best" > "$CSV"
acc() { tail -1 "$1/results.csv" | cut -d, -f5; }
for topo in $TOPOS; do
  h=$(echo "$topo" | sed 's/.*h=\([0-9]*\).*/\1/')
  for traffic in uniform adv+1 "adv+$h"; do
    for load in $LOADS; do
      cell=$(echo "$topo-$traffic-$load" | tr ':=,+' '____')
      for m in minimal valiant pause $QCN; do
        d=$BASE/$cell/$m; extra=""
        [ "$m" = "$QCN" ] && d=$OUT/$cell/$m && extra="$*"
        [ "$m" != "$QCN" ] && [ -f "$d/results.csv" ] && continue
        # shellcheck disable=SC2086
        $BIN --threads 1 --no-plot --seed 1 --topology "$topo" --routing "$m" --traffic "$traffic" \
          --load "$load" --warmup "$WARMUP" --measure "$MEASURE" --out "$d" $SIM $extra >/dev/null
      done
      mi=$(acc "$BASE/$cell/minimal"); va=$(acc "$BASE/$cell/valiant"); pa=$(acc "$BASE/$cell/pause")
      q=$(acc "$OUT/$cell/$QCN")
      r=$(echo "$q $mi $va" | awk '{b=($2>$3)?$2:$3; printf "%.3f", (b>0)?$1/b:0}')
      echo "$topo,$traffic,$load,$mi,$va,$pa,$q,$r" | tee -a "$CSV"
    done
  done
done
