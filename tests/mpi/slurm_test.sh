#!/usr/bin/env bash
# Real Slurm: `perfsift collect -- srun` and the sbatch templates (collect + analyze) on a one-node cluster
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
# Vetter's classifier trained through srun (small sizes: the test is the launcher path).
timeout 180 "$perfsift" train -o "$work/classifier.model" --max-elems 256 --iterations 4 -- srun -n 2 > "$work/train.txt" 2>&1 || { cat "$work/train.txt"; exit 1; }
grep -q "10-fold cross-validation" "$work/train.txt"
echo "srun: classifier trained"
# The two-step template: collect, then analyze with 2 analysis ranks, one allocation.
PERFSIFT_CLASSIFY_MODEL="$work/classifier.model" \
PERFSIFT="$perfsift" PERFSIFT_STORE="$work/batch.h5" PERFSIFT_ANALYSIS_TASKS=2 timeout 240 sbatch -n 2 --wait \
  -o "$work/batch.out" "$src/jobs/perfsift-run.sbatch" "$app"
cat "$work/batch.out"
grep -q "perfsift analysis of $work/batch.h5" "$work/batch.out"
grep -q "Regions by mean wall time" "$work/batch.out"
test -f "$work/batch.h5" && test -f "$work/batch-results.h5"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "perfsift-results" and d["run"]["ranks"] == 2, d["run"]
assert any(o["op"] == "MPI_Send" and o["calls"] == 20 for o in d["profile"]["ops"]), d["profile"]["ops"]
c = d["classification"]
assert "skipped" not in c and sum(c["counts"].values()) == 20 and c["platform_matches"], c
print("sbatch run template: collected, analysed on 2 analysis ranks (20 messages classified), report and JSON written")' "$work/batch-report.json"
# The analysis-only template on the store just written.
PERFSIFT="$perfsift" PERFSIFT_STORE="$work/batch.h5" PERFSIFT_RESULTS="$work/again.h5" timeout 180 sbatch -n 1 --wait \
  -o "$work/analyze.out" "$src/jobs/perfsift-analyze.sbatch"
grep -q "perfsift analysis of" "$work/analyze.out" && test -f "$work/again.h5"
echo "sbatch analyze template: results written"
# The remote workflow (here without --host): submit, wait, fetch the report, results and
# JSON — not the trace store; then an analysis chained with --after on a finished job.
mkdir -p "$work/submit"
PERFSIFT="$perfsift" timeout 240 bash "$src/jobs/perfsift-submit.sh" --dir "$work/submit" --fetch-to "$work/fetched" -- -n 2 -- "$app" > "$work/submit.txt"
cat "$work/submit.txt"
ls "$work/fetched"
test "$(ls "$work/fetched"/*.out | wc -l)" = 1 && ls "$work/fetched"/*-results.h5 "$work/fetched"/*-report.json > /dev/null
! ls "$work/fetched" | grep -v -e '-results.h5$' -e '-report.json$' -e '.out$' | grep -q . || { echo "fetched more than the report, results and JSON"; exit 1; }
ls "$work/submit"/perfsift-*.h5 > /dev/null   # the store stayed on the cluster side
first=$(sbatch --parsable -n 1 -o /dev/null --wrap true)
PERFSIFT="$perfsift" timeout 240 bash "$src/jobs/perfsift-submit.sh" --dir "$work/submit" --after "${first%%;*}" --store "$work/batch.h5" \
  --fetch-to "$work/fetched2" -- -n 1 > "$work/submit2.txt"
cat "$work/submit2.txt"
grep -q "perfsift analysis of $work/batch.h5" "$work/fetched2"/perfsift-analyze-*.out
echo "perfsift-submit: run fetched without its store; analysis chained after job ${first%%;*}"
