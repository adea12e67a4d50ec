#!/usr/bin/env bash
# The analysis's parallel cost on a tightly coupled run; prints figures (run: cmake --build
# build --target bench_ring_cost). A ring of 8-byte blocking messages (tests/apps/ring.c,
# RANKS ranks, ROUNDS rounds: 2 x RANKS x ROUNDS events) is collected, then analysed with
# the default pipeline on each K: wall time, and per stage its time and all-to-alls
# (--progress). Goal: no stage costs more on more processes.
# usage: ring_cost_bench.sh PERFSIFT RING_APP [ROUNDS RANKS "KS"]
#   defaults 200000 rounds on 4 ranks (1.6 M events, about 30 s to collect), KS "1 2".
# PERFSIFT_BENCH_DIR keeps the store between runs.
set -euo pipefail
perfsift=$1 app=$2 rounds=${3:-200000} ranks=${4:-4} ks=${5:-"1 2"}
source "$(dirname "${BASH_SOURCE[0]}")/bench_setup.sh"
store=$dir/ring-$ranks-$rounds.h5
if [ ! -f "$store" ]; then
  start=$(now)
  "$perfsift" collect -o "$store" -- mpirun -n "$ranks" "$app" "$rounds" 8 > "$dir/collect.txt" 2>&1 ||
    { cat "$dir/collect.txt"; exit 1; }
  echo "collect: $(since "$start") s"
fi
nev=$("$perfsift" info --json "$store" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
for k in $ks; do
  out=$dir/run-$k
  start=$(now)
  mpirun -n "$k" "$perfsift" analyze "$store" -o "$out.h5" --progress > "$out.txt" 2> "$out.err" ||
    { cat "$out.err"; exit 1; }
  echo "ring of $ranks ranks, $nev events, K=$k: analyze wall $(since "$start") s"
  # Each stage's line: its time, and its all-to-alls when it made any.
  awk '/^perfsift: stage .* done in/ {
         sub(/^perfsift: stage /, ""); name = $0; sub(/ done in.*/, "", name)
         secs = $0; sub(/.* done in /, "", secs); sub(/ s,.*/, "", secs)
         rounds = 0; if (match($0, /[0-9]+ all-to-alls/)) rounds = substr($0, RSTART, RLENGTH - 12)
         if (secs >= 0.05 || rounds > 0) printf "  %-28s %7.1f s %9d all-to-alls\n", name, secs, rounds }' "$out.err"
  grep -A1 "^Domino paths" "$out.txt" | sed 's/^/  /'
done
