#!/usr/bin/env bash
# RPPA's remote workflow with Slurm: from a desk (or a login node), submit the two-step job
# (collect, then analyse, in one allocation) and bring back only what a person reads — the
# text report, the results store and the JSON report — never the trace store.
#
#   jobs/perfsift-submit.sh [--host USER@LOGIN] [--dir REMOTE_DIR] [--fetch-to DIR]
#                           [--jobs REMOTE_JOBS_DIR] [--after JOBID --store STORE]
#                           [--no-wait] -- SBATCH_OPTIONS... [-- ./app args...]
#
#   --host      run sbatch on that login node over ssh (default: here)
#   --dir       working directory there (default: the current one); the store lands in it
#   --fetch-to  where the report, results and JSON are copied (default: ./perfsift-JOBID)
#   --jobs      perfsift's jobs/ directory there (default: the one beside this script)
#   --after     analyse an existing STORE once job JOBID succeeded (sbatch
#               --dependency=afterok:JOBID), instead of running an application
#   --no-wait   print the job id and return; fetch later with --fetch JOBID
#   --fetch JOBID  only copy the outputs of a finished job
# After the first --: sbatch's options (resources); after a second --: the application
# (with --after, there is none). Variables PERFSIFT_* of the templates pass through.
#
# Examples:
#   jobs/perfsift-submit.sh --host me@login.hpc --dir /scratch/me/run1 -- -N 2 --ntasks-per-node=32 -- ./lmp -in in.lj
#   jobs/perfsift-submit.sh --after 123456 --store /scratch/me/run1/run.h5 -- -N 1
set -euo pipefail
host="" dir="" fetch_to="" jobs_dir="" after="" store="" wait=1 fetch_only=""
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "perfsift-submit: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --host) host=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --fetch-to) fetch_to=$2; shift 2 ;;
    --jobs) jobs_dir=$2; shift 2 ;;
    --after) after=$2; shift 2 ;;
    --store) store=$2; shift 2 ;;
    --no-wait) wait=0; shift ;;
    --fetch) fetch_only=$2; shift 2 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (see the top of $0)" ;;
  esac
done
[ -n "$after" ] && [ -z "$store" ] && die "--after needs --store (the trace store the earlier job writes)"
dir=${dir:-$PWD}
jobs_dir=${jobs_dir:-$here}

# Runs a command there: over ssh with --host, else here. Arguments are quoted for the remote shell.
there() {
  if [ -n "$host" ]; then
    ssh -o BatchMode=yes "$host" "cd $(printf '%q' "$dir") && $(printf '%q ' "$@")"
  else
    (cd "$dir" && "$@")
  fi
}
# Copies one file from there to the fetch directory.
fetch() {
  if [ -n "$host" ]; then scp -q "$host:$1" "$fetch_to/"; else cp "$1" "$fetch_to/"; fi
}

if [ -z "$fetch_only" ]; then
  sbatch_opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do sbatch_opts+=("$1"); shift; done
  [ $# -gt 0 ] && shift  # the second --
  envs=()
  for v in $(compgen -e | grep '^PERFSIFT_' || true); do envs+=("$v=${!v}"); done
  if [ -n "$after" ]; then
    job=$(there env "${envs[@]}" PERFSIFT_STORE="$store" sbatch --parsable --dependency=afterok:"$after" \
      "${sbatch_opts[@]}" "$jobs_dir/perfsift-analyze.sbatch")
  else
    [ $# -gt 0 ] || die "give the application after a second --, e.g. -- -n 4 -- ./app"
    job=$(there env "${envs[@]}" PERFSIFT_JOBS="$jobs_dir" sbatch --parsable "${sbatch_opts[@]}" "$jobs_dir/perfsift-run.sbatch" "$@")
  fi
  job=${job%%;*}
  echo "perfsift-submit: job $job submitted${host:+ on $host}"
  if [ $wait = 0 ]; then
    echo "perfsift-submit: fetch the outputs later with: $0 ${host:+--host $host }--dir $dir --fetch $job"
    exit 0
  fi
  # Wait for the job to leave the queue.
  while [ -n "$(there squeue -h -j "$job" 2>/dev/null || true)" ]; do sleep 2; done
else
  job=$fetch_only
fi

state=$(there sacct -n -X -P -j "$job" -o State 2>/dev/null | head -1 || true)
fetch_to=${fetch_to:-$PWD/perfsift-$job}
mkdir -p "$fetch_to"
# The job's output names the files it wrote.
if [ -n "$after" ]; then out=$dir/perfsift-analyze-$job.out; else out=$dir/perfsift-$job.out; fi
fetch "$out" || die "job $job left no output file $out${state:+ (state $state)}"
out_local=$fetch_to/$(basename "$out")
results=$(sed -n 's/^perfsift: results in \(.*\), JSON report in \(.*\)$/\1/p' "$out_local" | tail -1)
json=$(sed -n 's/^perfsift: results in \(.*\), JSON report in \(.*\)$/\2/p' "$out_local" | tail -1)
[ -n "$results" ] || die "job $job${state:+ ($state)} did not finish its analysis; see $out_local"
case $results in /*) ;; *) results=$dir/$results ;; esac
case $json in /*) ;; *) json=$dir/$json ;; esac
fetch "$results"
fetch "$json"
echo "perfsift-submit: job $job${state:+ ($state)}: report $out_local, results $fetch_to/$(basename "$results"), JSON $fetch_to/$(basename "$json")"
