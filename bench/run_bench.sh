#!/usr/bin/env bash
# Collector benchmarks; prints figures (run: cmake --build build --target bench).
#  1. added time per MPI call, 8-byte messages, with and without the collector:
#     one rank messaging itself (stable), and a two-rank ping-pong (noisy on small VMs)
#  2. stored bytes per event and store write time
# usage: run_bench.sh PERFSIFT PINGPONG [ITER]
set -euo pipefail
perfsift=$1 pingpong=$2 iter=${3:-300000}
export OMPI_MCA_rmaps_base_oversubscribe=1
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
measure() {  # ranks label
  local n=$1 plain=() traced=() calls
  for rep in 1 2 3 4 5 6 7; do
    plain+=("$(mpirun -n "$n" "$pingpong" "$iter" | awk '/pingpong/{print $3}')")
    traced+=("$(PERFSIFT_REPORT_TIMING=1 "$perfsift" collect -o "$dir/pp$n.h5" -- mpirun -n "$n" "$pingpong" "$iter" 2>"$dir/err$n" | awk '/pingpong/{print $3}')")
  done
  calls=$(mpirun -n "$n" "$pingpong" 10 | awk '/pingpong/{print $4 / 10}')
  local p t
  p=$(printf '%s\n' "${plain[@]}" | median)
  t=$(printf '%s\n' "${traced[@]}" | median)
  awk -v p="$p" -v t="$t" -v c="$calls" -v it="$iter" -v label="$2" 'BEGIN {
    n = c * it;
    printf "%s: %d calls per rank: plain %.4f s (%.0f ns/call), traced %.4f s (%.0f ns/call); added %.1f ns per call (median of 7)\n",
      label, n, p, p/n*1e9, t, t/n*1e9, (t-p)/n*1e9 }'
}
measure 1 "self-messaging, 1 rank"
measure 2 "ping-pong, 2 ranks"
grep "store written" "$dir/err2" | sed 's/^/2-rank ping-pong: /' || true
"$perfsift" info --json "$dir/pp2.h5" | python3 -c '
import json,sys
d=json.load(sys.stdin)
print("2-rank ping-pong store: %d events, event table %d bytes on disk, %.1f bytes/event" % (d["events"], d["events_storage_bytes"], d["events_storage_bytes"]/max(1,d["events"])))'
