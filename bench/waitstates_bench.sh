#!/usr/bin/env bash
# Wait states and message classification of a large synthetic store under `perfsift
# analyze` (stages waitstates and classify only) on K analysis ranks; prints figures.
# The classifier is trained here first (small sizes: its accuracy is not the point).
# usage: waitstates_bench.sh PERFSIFT [RANKS EVENTS K]
set -euo pipefail
perfsift=$1 ranks=${2:-1024} events=${3:-10000000} k=${4:-2}
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=${PERFSIFT_BENCH_DIR:-$(mktemp -d)}
mkdir -p "$dir"
[ -n "${PERFSIFT_BENCH_DIR:-}" ] || trap 'rm -rf "$dir"' EXIT
store=$dir/replay-$ranks-$events.h5
[ -f "$store" ] || mpirun -n 2 "$perfsift" synth -o "$store" --ranks "$ranks" --regions 8 \
  --events-per-rank $(( (events + ranks - 1) / ranks )) --inject "imbalance:region=phase00/kernel03,ranks=0-99,factor=2" > /dev/null
[ -f "$dir/bench.model" ] || "$perfsift" train -o "$dir/bench.model" --max-elems 1024 --iterations 10 -- mpirun -n 2 > /dev/null 2>&1
cat > "$dir/waitstates.toml" <<TOML
[pipeline]
stages = ["waitstates", "classify"]
[classify]
model = "$dir/bench.model"
max_message_rows = 0
TOML
start=$(date +%s.%N)
mpirun -n "$k" /usr/bin/time -f "peak_kb %M" "$perfsift" analyze "$store" -c "$dir/waitstates.toml" -o "$dir/w.h5" --progress \
  > "$dir/report.txt" 2> "$dir/err.txt"
wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.2f", e-s}')
msgs=$("$perfsift" report "$dir/w.h5" --format json | /usr/bin/python3 -c "import json, sys; print(sum(json.load(sys.stdin)['classification']['counts'].values()))")
echo "wait states and message classes of a synthetic store: $ranks ranks, $events events, $msgs messages, K=$k"
grep -E "(matching messages|joining both sides of every message|classify: classifying) done" "$dir/err.txt" | sed 's/^perfsift: /  /'
echo "  analyze wall $wall s (mpirun start to exit)"
grep -E "^(Wait states|Message classes)" "$dir/report.txt" | sed 's/^/  /'
awk '/^peak_kb/ { printf "  analysis rank %d: peak memory %.0f MB\n", n++, $2 / 1024 }' "$dir/err.txt"
