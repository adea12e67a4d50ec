#!/usr/bin/env bash
# What collecting a Python (mpi4py) program adds per MPI call, and what placing each call at
# its Python line adds to that (run: cmake --build build --target bench_python).
# bench/pingpong.py, 8-byte messages: one rank messaging itself (the calling thread's CPU
# time: stable on a loaded machine), and a two-rank ping-pong (wall time); each plain,
# collected with python.sites = false, and collected (default); median of 7 runs of each.
# usage: python_bench.sh PERFSIFT PINGPONG_PY [ITER]
set -euo pipefail
perfsift=$1 pingpong=$2 iter=${3:-100000}
python=/usr/bin/python3
if ! "$python" -c "import mpi4py" 2>/dev/null; then
  echo "python_bench: $python has no mpi4py (Debian: apt-get install python3-mpi4py); nothing measured"
  exit 0
fi
export OMPI_MCA_rmaps_base_oversubscribe=1
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
field() { awk -v f="$1" '/^pingpong/{print $f}'; }
measure() {  # ranks field label
  local n=$1 f=$2 plain=() off=() on=() calls
  for rep in 1 2 3 4 5 6 7; do
    plain+=("$(mpirun -n "$n" "$python" "$pingpong" "$iter" | field "$f")")
    off+=("$(PERFSIFT_PYTHON_SITES=0 "$perfsift" collect -o "$dir/off.h5" -- mpirun -n "$n" "$python" "$pingpong" "$iter" 2>/dev/null | field "$f")")
    on+=("$("$perfsift" collect -o "$dir/on.h5" -- mpirun -n "$n" "$python" "$pingpong" "$iter" 2>/dev/null | field "$f")")
  done
  calls=$(mpirun -n "$n" "$python" "$pingpong" 10 | awk '/^pingpong/{print $4 / 10}')
  local p o s
  p=$(printf '%s\n' "${plain[@]}" | median)
  o=$(printf '%s\n' "${off[@]}" | median)
  s=$(printf '%s\n' "${on[@]}" | median)
  awk -v p="$p" -v o="$o" -v s="$s" -v c="$calls" -v it="$iter" -v label="$3" 'BEGIN {
    n = c * it;
    printf "%s: %d calls per rank: plain %.0f ns/call; collected %.0f ns/call (+%.0f), with Python sites %.0f ns/call (+%.0f, of which Python sites %.0f ns)\n",
      label, n, p/n*1e9, o/n*1e9, (o-p)/n*1e9, s/n*1e9, (s-p)/n*1e9, (s-o)/n*1e9 }'
}
measure 1 5 "self-messaging, 1 rank, CPU time of the calling thread"
measure 2 3 "ping-pong, 2 ranks, wall time"
