#!/usr/bin/env bash
# Algorithm 2 (the CCR/CCCR search of `dissimilarity`) on a synthetic store of 4,096
# ranks x 128 regions with a nested imbalance; prints the stage's time.
# usage: algorithm2_bench.sh PERFSIFT [RANKS REGIONS K]
set -euo pipefail
perfsift=$1 ranks=${2:-4096} regions=${3:-128} k=${4:-2}
export OMPI_MCA_rmaps_base_oversubscribe=1
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mpirun -n 2 "$perfsift" synth -o "$dir/s.h5" --ranks "$ranks" --regions "$regions" --events-per-rank 500 \
  --inject "imbalance:region=phase05/kernel03,ranks=100-399,factor=20" > /dev/null
printf '[pipeline]\nstages = ["dissimilarity"]\n' > "$dir/p.toml"
start=$(date +%s.%N)
mpirun -n "$k" "$perfsift" analyze "$dir/s.h5" -c "$dir/p.toml" -o "$dir/r.h5" --json "$dir/r.json" --progress > "$dir/out.txt" 2> "$dir/err.txt"
wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.2f", e-s}')
python3 - "$dir/r.json" "$wall" "$ranks" "$regions" "$k" "$(grep -o 'searching critical code regions done in [0-9.]* s' "$dir/err.txt" | grep -o '[0-9.]* s$')" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["dissimilarity"]
print(f"Algorithm 2 on {sys.argv[3]} ranks x {sys.argv[4]} regions, K={sys.argv[5]}: search {sys.argv[6]}, whole analyze {sys.argv[2]} s "
      f"(goal < 30 s); {d['cluster_count']} clusters, {d['clusterings']} clusterings, CCR {d['ccr']}, CCCR {d['cccr']}")
PY
