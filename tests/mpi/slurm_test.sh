#!/usr/bin/env bash
# Real Slurm: `perfsift collect -- srun` and the sbatch templates (collect + analyze) on a one-node cluster
# (jobs/slurm-local/start.sh starts it when it is not running). Exit 77 (skipped) only
# when no Slurm can be started here (not root, packages unavailable).
# The test leaves the machine as it found it: a cluster that was running stays running
# (only this run's jobs are cancelled if it is interrupted); daemons it started itself
# (munged, slurmctld, slurmd) are stopped when it ends — passed, failed or interrupted —
# by the last run of this test still using them (runs may overlap: they register in
# $state/users). A run killed outright leaves $state/started behind, and the next run
# that ends stops those daemons (by pid: daemons restarted since are left alone).
# usage: slurm_test.sh PERFSIFT APP SOURCE_DIR WORK_DIR
set -uo pipefail
perfsift=$1 app=$2 src=$(cd "$3" && pwd) work=$4
state=/run/perfsift-slurm-test
daemons=(munged slurmctld slurmd)
registered=0 starting=0 before=""

# Pids of a daemon's live processes (a daemon's exited parent may linger unreaped: not counted).
pids_of() {
  local p st
  for p in $(pgrep -x "$1"); do
    st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) && [ -n "$st" ] && [ "$st" != Z ] && echo "$p"
  done
  return 0
}
# "NAME PID" of each daemon running now that was not running before this run started it.
started_now() {
  local d p
  for d in "${daemons[@]}"; do
    case " $before " in *" $d "*) continue ;; esac
    for p in $(pids_of "$d"); do echo "$d $p"; done
  done
}

cleanup() {
  local rc=$? jobs names=() d p
  trap - EXIT INT TERM
  set +e
  # This run's jobs (they run in $work) still queued or running.
  jobs=$(squeue -h -o '%i %Z' 2>/dev/null | awk -v w="$work" '$2 == w || index($2, w "/") == 1 {print $1}')
  if [ -n "$jobs" ]; then
    echo "cancelling this run's jobs: $(echo $jobs)"
    scancel $jobs 2>/dev/null || true
    for _ in $(seq 1 30); do
      squeue -h -o %i 2>/dev/null | grep -qxF -f <(echo "$jobs") || break
      sleep 1
    done
  fi
  if [ $registered = 1 ]; then
    exec 9> "$state/lock" && flock 9
    [ $starting = 1 ] && started_now >> "$state/started"   # interrupted while starting
    rm -f "$state/users/$$"
    for p in "$state"/users/*; do
      [ -e "$p" ] && ! kill -0 "${p##*/}" 2>/dev/null && rm -f "$p"   # runs that were killed
    done
    if [ -z "$(ls -A "$state/users")" ] && [ -s "$state/started" ]; then
      # Only daemons still running under the pid recorded when a test run started them.
      while read -r d p; do
        pids_of "$d" | grep -qxF "$p" && names+=("$d")
      done < "$state/started"
      rm -f "$state/started"
      if [ ${#names[@]} -gt 0 ]; then
        echo "stopping the Slurm daemons this test started: ${names[*]}"
        bash "$src/jobs/slurm-local/stop.sh" "${names[@]}" 9>&- || { [ $rc = 0 ] && rc=1; }
      fi
    fi
    exec 9>&-
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$state/users" && exec 9> "$state/lock" && flock 9 && touch "$state/users/$$" && registered=1
fi
if ! sinfo -h >/dev/null 2>&1; then
  [ $registered = 1 ] && before=" $(for d in "${daemons[@]}"; do [ -n "$(pids_of "$d")" ] && echo "$d"; done | tr '\n' ' ')"
  starting=1
  if [ $registered != 1 ] || ! bash "$src/jobs/slurm-local/start.sh" 9>&-; then
    echo "SKIP: no Slurm controller reachable and none could be started"
    exit 77
  fi
  started_now >> "$state/started"
  starting=0
fi
# The lock's file stays closed while the test runs (daemons must not inherit it).
[ $registered = 1 ] && exec 9>&-
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
# scancel of a running step: Slurm sends its ranks SIGTERM (they sleep after 30 exchanges
# and a barrier); each rank saves its data, collect recovers the store from the spill files.
crash=$(dirname "$app")/app_crash
name=perfsift-scancel-$$
timeout 180 "$perfsift" collect -o "$work/scancel.h5" -- srun -J "$name" -n 2 "$crash" none sleep 30 > "$work/scancel.txt" 2>&1 &
collect_pid=$!
job=""
for _ in $(seq 1 120); do
  job=$(squeue -h -n "$name" -t R -o %i 2>/dev/null | head -1)
  # the ranks are past their exchanges once both spill files exist and a second has passed
  [ -n "$job" ] && [ -e "$work/scancel.h5.spill/rank-0.bin" ] && [ -e "$work/scancel.h5.spill/rank-1.bin" ] && break
  sleep 0.5
done
[ -n "$job" ] || { echo "the srun step never ran"; cat "$work/scancel.txt"; exit 1; }
sleep 2
scancel "$job.0"
wait $collect_pid && { echo "collect exited 0 after scancel"; exit 1; }
cat "$work/scancel.txt"
grep -q "recovered $work/scancel.h5 from 2 of 2 ranks" "$work/scancel.txt"
"$perfsift" info --json "$work/scancel.h5" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["ranks"] == 2, d["ranks"]
ops = d["events_per_op"]
assert ops["MPI_Sendrecv"] == 60 and ops["MPI_Barrier"] == 2, ops
print("scancel of a running srun step: both ranks recovered (30 MPI_Sendrecv and the barrier each)")'
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
# The remote workflow without --host (on the login node itself): an analysis chained with
# --after on a finished job; the outputs fetched, the page among them, not the store.
mkdir -p "$work/submit"
first=$(sbatch --parsable -n 1 -o /dev/null --wrap true)
PERFSIFT="$perfsift" timeout 240 bash "$src/jobs/perfsift-submit.sh" --dir "$work/submit" --after "${first%%;*}" --store "$work/batch.h5" \
  --poll 1 --fetch-to "$work/fetched" -- -n 1 > "$work/submit.txt"
cat "$work/submit.txt"
grep -q "perfsift analysis of $work/batch.h5" "$work/fetched"/perfsift-analyze-*.out
ls "$work/fetched"/*-results.h5 "$work/fetched"/*-report.json "$work/fetched"/*-report.html > /dev/null
[ "$(ls "$work/fetched" | wc -l)" = 4 ] && ! test -e "$work/fetched/batch.h5"   # never the store
echo "perfsift-submit: analysis chained after job ${first%%;*}, outputs fetched"
# The same over a real ssh from a desk without perfsift (an sshd of the test's own).
bash "$src/tests/mpi/remote_test.sh" "$perfsift" "$app" "$src" "$work/remote"
