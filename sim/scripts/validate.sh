#!/bin/sh
# One candidate QCN-SW configuration on the 1 056-host Dragonfly, three measurements side by side:
# uniform at load 0.9 (10 000 + 10 000 cycles), ADV+1 at load 0.4 (30 000 + 10 000) with the
# group-0 fairness (Sout / best switch), and the uniform -> ADV+1 transient at load 0.4.
# Usage: sim/scripts/validate.sh NAME ROUTING [FLAGS...]  -> one line appended to $OUT/summary.txt
# FLAGS start from the agent's defaults unless they include --published-constants (as every row
# of sim/results/validation-1056.csv does).
set -eu
N=$1; M=$2; shift 2
BIN=${BIN:-target/release/fabricflow-sim}
OUT=${OUT:-/tmp/ffval}
O=$OUT/$N
C="--threads 1 --no-plot --seed 1 --routing $M"
nice $BIN $C "$@" --warmup 10000 --measure 10000 --traffic uniform --load 0.9 --out "$O/u" >/dev/null &
nice $BIN $C "$@" --warmup 30000 --measure 10000 --traffic adv+1 --load 0.4 --out "$O/a" >/dev/null
wait
nice $BIN $C "$@" --warmup 0 --measure 30000 --window 100 --traffic 'uniform->adv+1@10000' \
  --load 0.4 --out "$O/t" >/dev/null
u=$(tail -1 "$O/u/results.csv" | cut -d, -f6)
a=$(tail -1 "$O/a/results.csv" | cut -d, -f6)
al=$(tail -1 "$O/a/results.csv" | cut -d, -f7)
t=$(tail -1 "$O/t/reaction.csv" | awk -F, '{printf "%s %.0f", $3, $5/1000}')
f=$(awk -F, 'NR>1{v[NR]=$3; if($3>m)m=$3} END{printf "%.2f", v[2]/m}' "$O/a/group0.csv")
echo "$N $M $* | u0.9=$u a0.4=$a lat=$al | trans=$t | sout/max=$f" | tee -a "$OUT/summary.txt"
