#!/usr/bin/env bash
# Analysis benchmark; prints figures (run: cmake --build build --target bench_analyze).
# A synthetic store (default 16,384 ranks x 64 regions, 50 M events) is analysed by
# `perfsift analyze` (load + profile) on K analysis ranks: wall time, read rate, and
# peak memory per analysis rank against its share of the store.
# usage: analyze_bench.sh PERFSIFT [RANKS REGIONS EVENTS K]
set -euo pipefail
perfsift=$1 ranks=${2:-16384} regions=${3:-64} events=${4:-50000000} k=${5:-2}
export OMPI_MCA_rmaps_base_oversubscribe=1
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=${PERFSIFT_BENCH_DIR:-$(mktemp -d)}
mkdir -p "$dir"
[ -n "${PERFSIFT_BENCH_DIR:-}" ] || trap 'rm -rf "$dir"' EXIT
store=$dir/synth-$ranks-$regions-$events.h5
if [ ! -f "$store" ]; then
  start=$(date +%s.%N)
  mpirun -n 2 "$perfsift" synth -o "$store" --ranks "$ranks" --regions "$regions" \
    --events-per-rank $(( (events + ranks - 1) / ranks )) --inject "imbalance:region=phase03/kernel02,ranks=1000-1999,factor=6"
  echo "synth: $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}') s"
fi
size=$(stat -c %s "$store")
"$perfsift" info --json "$store" > "$dir/info.json"
nev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"])' "$dir/info.json")
sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true   # cold cache when allowed (root)
start=$(date +%s.%N)
# Load + profile: the replay stages have their own benchmark (bench_replay).
printf '[pipeline]\nstages = ["profile"]\n' > "$dir/profile.toml"
mpirun -n "$k" /usr/bin/time -f "peak_kb %M" "$perfsift" analyze "$store" -c "$dir/profile.toml" -o "$dir/results.h5" > "$dir/report.txt" 2> "$dir/err.txt"
wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.2f", e-s}')
grep -c "load-imbalance" "$dir/report.txt" > /dev/null || { cat "$dir/err.txt"; echo "the injected imbalance was not found"; exit 1; }
awk -v size="$size" -v wall="$wall" -v k="$k" -v nev="$nev" -v ranks="$ranks" -v regions="$regions" '
  /^peak_kb/ { peak[n++] = $2 }
  END {
    share = size / k / 1048576
    printf "analyze (load + profile): %d ranks x %d regions, %d events, store %.1f MB, K=%d\n", ranks, regions, nev, size/1048576, k
    printf "  wall %.2f s (mpirun start to exit), %.1f MB/s read, %.2f M events/s\n", wall, size/1048576/wall, nev/1e6/wall
    for (i = 0; i < n; i++)
      printf "  analysis rank %d: peak memory %.1f MB = %.2f x its share of the store (%.1f MB); goal <= 1.5\n", i, peak[i]/1024, peak[i]/1024/share, share
  }' "$dir/err.txt"
