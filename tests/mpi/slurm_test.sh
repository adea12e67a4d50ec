#!/usr/bin/env bash
# Real Slurm: `perfsift collect -- srun` and the sbatch template on a one-node cluster
# (jobs/slurm-local/start.sh starts it when it is not running). Exit 77 (skipped) only
# when no Slurm can be started here (not root, packages unavailable).
# usage: slurm_test.sh PERFSIFT APP SOURCE_DIR WORK_DIR
set -uo pipefail
perfsift=$1 app=$2 src=$3 work=$4
if ! sinfo -h >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ] || ! bash "$src/jobs/slurm-local/start.sh"; then
    echo "SKIP: no Slurm controller reachable and none could be started"
    exit 77
  fi
fi
set -e
rm -rf "$work" && mkdir -p "$work" && cd "$work"
timeout 180 "$perfsift" collect -o "$work/srun.h5" -- srun -n 2 "$app"
"$perfsift" info --json "$work/srun.h5" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["ranks"] == 2, d["ranks"]
assert d["events_per_op"]["MPI_Send"] == 20 and d["events_per_op"]["MPI_Recv"] == 20, d["events_per_op"]
assert d["p2p"]["unmatched_sends"] == 0 and d["p2p"]["unmatched_receives"] == 0
print("srun: 2 ranks, 20 sends, 20 receives, 0 unmatched")'
PERFSIFT="$perfsift" PERFSIFT_STORE="$work/batch.h5" timeout 180 sbatch -n 2 --wait -o "$work/batch.out" \
  "$src/jobs/perfsift-collect.sbatch" "$app"
grep -q "perfsift trace store v1" "$work/batch.out"
test -f "$work/batch.h5"
echo "sbatch template: store written and reported"
