#!/usr/bin/env bash
# What collecting costs a run beyond its calls (run: cmake --build build --target bench).
#  1. an empty MPI program on 16 and 64 ranks (oversubscribed), plain and collected in
#     turn, 5 runs each: median wall times and their ratio, and the store write
#  2. a 256-rank ring (200 exchanges, oversubscribed): store write time, writers, bytes
#     per event of the event table on disk
# usage: startup_bench.sh PERFSIFT STARTUP_APP
set -euo pipefail
perfsift=$1 app=$2
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
wall() {  # command...: prints its wall seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>>"$dir/err"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}'
}
for n in 16 64; do
  plain=() traced=()
  for rep in 1 2 3 4 5; do
    plain+=("$(wall mpirun -n "$n" "$app")")
    rm -f "$dir/e.h5"
    traced+=("$(PERFSIFT_REPORT_TIMING=1 wall "$perfsift" collect -o "$dir/e.h5" -- mpirun -n "$n" "$app")")
  done
  p=$(printf '%s\n' "${plain[@]}" | median)
  t=$(printf '%s\n' "${traced[@]}" | median)
  store=$(grep "store written" "$dir/err" | tail -1 | sed 's/^perfsift: //')
  : >"$dir/err"
  awk -v n="$n" -v p="$p" -v t="$t" -v s="$store" 'BEGIN {
    printf "empty program, %d ranks: plain %.2f s, collected %.2f s: %.2fx (medians of 5; %s)\n", n, p, t, t / p, s }'
done
n=256
p=$(wall mpirun -n $n "$app" 200)
t=$(PERFSIFT_REPORT_TIMING=1 wall "$perfsift" collect -o "$dir/ring.h5" -- mpirun -n $n "$app" 200)
store=$(grep "store written" "$dir/err" | tail -1 | sed 's/^perfsift: //')
"$perfsift" info --json "$dir/ring.h5" | python3 -c '
import json, sys
d = json.load(sys.stdin)
n, p, t, s = sys.argv[1:5]
print("ring, %s ranks, 200 exchanges: plain %s s, collected %s s; %s; %d events, event table %.1f bytes/event on disk"
      % (n, p, t, s, d["events"], d["events_storage_bytes"] / max(1, d["events"])))' "$n" "$p" "$t" "$store"
