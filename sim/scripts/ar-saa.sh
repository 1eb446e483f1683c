#!/bin/sh
# Adaptive routing and SAA rate control on (extended) fat-trees: writes OUT/ar-saa.csv
# (hosts,width,traffic,mode,max_link_flows,mean_link_flows,completion_time).
# 1. Pure link loads (no packets), 16-ary 3-tree (4 096 hosts), w = 2, PURE_RUNS random
#    permutations: D-mod-k, greedy and balanced on the plain tree, greedy and balanced on the
#    extended one (OUT/pure.csv; `pure-*` modes, completion_time = SAA's W in transfer times).
# 2. Simulated phases of superposed random permutations of PACKETS-packet transfers on each
#    k-ary n-tree of TREES (default the 32-ary 2-tree, 1 024 hosts), w = 2: oblivious D-mod-k and
#    SAA on the plain tree, balanced AR with and without SAA and the reactive AR on the extended
#    one; RUNS phases per point (OUT/sim-K-N.csv; completion_time in cycles).
# A step whose CSV exists is not run again (delete it to rerun).
# Usage: sim/scripts/ar-saa.sh OUT
# Env: BIN (target/release/ar-saa), PURE_RUNS (1000), PERMS (1,2,4,8,16), PACKETS (32),
#      RUNS (3), TREES ("32:2"), WIDTH (2).
set -eu
OUT=$1
BIN=${BIN:-target/release/ar-saa}
PURE_RUNS=${PURE_RUNS:-1000}
PERMS=${PERMS:-1,2,4,8,16}
PACKETS=${PACKETS:-32}
RUNS=${RUNS:-3}
TREES=${TREES:-32:2}
WIDTH=${WIDTH:-2}
mkdir -p "$OUT"
[ -f "$OUT/pure.csv" ] || "$BIN" pure --k 16 --n 3 --width "$WIDTH" --runs "$PURE_RUNS" --csv "$OUT/pure.csv"
for t in $TREES; do
  k=${t%:*}; n=${t#*:}
  csv=$OUT/sim-$k-$n.csv
  [ -f "$csv" ] || "$BIN" sim --k "$k" --n "$n" --width "$WIDTH" --perms "$PERMS" \
    --packets "$PACKETS" --runs "$RUNS" --csv "$csv"
done
head -1 "$OUT/pure.csv" > "$OUT/ar-saa.csv"
for f in "$OUT/pure.csv" "$OUT"/sim-*.csv; do tail -n +2 "$f" >> "$OUT/ar-saa.csv"; done
echo "wrote $OUT/ar-saa.csv"
