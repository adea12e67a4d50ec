#!/usr/bin/env bash
# Baseline replay of a large synthetic store under `perfsift analyze` (whatif stage
# only, no further questions) on K analysis ranks; prints figures.
# usage: replay_bench.sh PERFSIFT [RANKS EVENTS K]
set -euo pipefail
perfsift=$1 ranks=${2:-1024} events=${3:-10000000} k=${4:-2}
export OMPI_MCA_rmaps_base_oversubscribe=1
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=${PERFSIFT_BENCH_DIR:-$(mktemp -d)}
mkdir -p "$dir"
[ -n "${PERFSIFT_BENCH_DIR:-}" ] || trap 'rm -rf "$dir"' EXIT
store=$dir/replay-$ranks-$events.h5
[ -f "$store" ] || mpirun -n 2 "$perfsift" synth -o "$store" --ranks "$ranks" --regions 8 \
  --events-per-rank $(( (events + ranks - 1) / ranks )) --inject "imbalance:region=phase00/kernel03,ranks=0-99,factor=2" > /dev/null
cat > "$dir/replay.toml" <<TOML
[pipeline]
stages = ["whatif"]
[whatif]
standard_questions = false
TOML
start=$(date +%s.%N)
mpirun -n "$k" /usr/bin/time -f "peak_kb %M" "$perfsift" analyze "$store" -c "$dir/replay.toml" -o "$dir/r.h5" --progress \
  > "$dir/report.txt" 2> "$dir/err.txt"
wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.2f", e-s}')
nev=$(grep -o '"events": [0-9]*' <("$perfsift" report "$dir/r.h5" --format json) | head -1 | awk '{print $2}')
echo "replay of a synthetic store: $ranks ranks, $nev events, K=$k"
grep -E "(building the replay program|whatif: baseline) done" "$dir/err.txt" | sed 's/^perfsift: /  /'
echo "  analyze wall $wall s (mpirun start to exit; goal for the baseline replay < 10 s)"
grep "^What if" "$dir/report.txt" | sed 's/^/  /'
awk '/^peak_kb/ { printf "  analysis rank %d: peak memory %.0f MB\n", n++, $2 / 1024 }' "$dir/err.txt"
