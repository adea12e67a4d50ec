#!/usr/bin/env bash
# RPPA's remote workflow with Slurm: from a desk (or a login node), submit the two-step job
# (collect, then analyse, in one allocation), watch it in the queue, and bring back only
# what a person reads — the HTML page, the text report, the results store and the JSON
# report — never the trace store unless asked. The desk needs bash, ssh and a browser;
# perfsift itself runs only on the cluster. docs/remote.md has the whole story.
#
#   jobs/perfsift-submit.sh [--host USER@LOGIN] [--dir REMOTE_DIR] [--remote-setup CMD]
#                           [--fetch-to DIR] [--jobs REMOTE_JOBS_DIR] [--after JOBID --store STORE]
#                           [--no-wait] [--open] [--fetch-store] -- SBATCH_OPTIONS... [-- ./app args...]
#
#   --host          run sbatch on that login node over ssh (default: here)
#   --dir           working directory there (default: the current one); the store lands in it
#   --remote-setup  a shell line run there before every command, so that perfsift is found:
#                   'module load perfsift', 'export PATH=/opt/perfsift/bin:$PATH',
#                   '. /path/to/spack/env/view/setup.sh' (default: $PERFSIFT_REMOTE_SETUP)
#   --fetch-to      where the outputs are copied (default: ./perfsift-JOBID)
#   --jobs          perfsift's jobs/ directory there (default: the one beside this script)
#   --after         analyse an existing STORE once job JOBID succeeded (sbatch
#                   --dependency=afterok:JOBID), instead of running an application
#   --no-wait       print the job id and return; fetch later with --fetch JOBID
#   --fetch JOBID   only copy the outputs of a finished job
#   --fetch-store   also copy the trace store (its size is printed first)
#   --open          open the fetched HTML page in the desktop's browser (xdg-open/open)
#   --poll SECONDS  how often the queue is asked (default 5)
# After the first --: sbatch's options (resources); after a second --: the application
# (with --after, there is none). PERFSIFT and the PERFSIFT_* variables of the templates pass
# through to the job. PERFSIFT_SSH_OPTIONS: extra options for ssh (e.g. -F ~/.ssh/hpc.conf).
#
# Exit: 0 outputs fetched; 1 the job failed (its state and the end of its output are
# printed); 2 the job cannot run as asked (a queue reason that never clears), or bad usage.
#
# Examples:
#   jobs/perfsift-submit.sh --host me@login.hpc --dir /scratch/me/run1 --remote-setup 'module load perfsift' \
#     -- -N 2 --ntasks-per-node=32 -- ./lmp -in in.lj
#   jobs/perfsift-submit.sh --after 123456 --store /scratch/me/run1/run.h5 -- -N 1
set -euo pipefail
host="" dir="" partition="" fetch_to="" jobs_dir="" after="" store="" wait=1 fetch_only="" open_page=0 fetch_store=0 poll=5
setup=${PERFSIFT_REMOTE_SETUP:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "perfsift-submit: $*" >&2; exit 2; }
say() { echo "perfsift-submit: $*"; }
need() { [ $# -ge 2 ] || die "$1 needs a value (see the top of $0)"; }
while [ $# -gt 0 ]; do
  case $1 in
    --host) need "$@"; host=$2; shift 2 ;;
    --dir) need "$@"; dir=$2; shift 2 ;;
    --remote-setup) need "$@"; setup=$2; shift 2 ;;
    --fetch-to) need "$@"; fetch_to=$2; shift 2 ;;
    --jobs) need "$@"; jobs_dir=$2; shift 2 ;;
    --after) need "$@"; after=$2; shift 2 ;;
    --store) need "$@"; store=$2; shift 2 ;;
    --no-wait) wait=0; shift ;;
    --fetch) need "$@"; fetch_only=$2; shift 2 ;;
    --fetch-store) fetch_store=1; shift ;;
    --open) open_page=1; shift ;;
    --poll) need "$@"; poll=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (see the top of $0)" ;;
  esac
done
[ -n "$after" ] && [ -z "$store" ] && die "--after needs --store (the trace store the earlier job writes)"
dir=${dir:-$PWD}
jobs_dir=${jobs_dir:-$here}
# shellcheck disable=SC2206
ssh_opts=(-o BatchMode=yes ${PERFSIFT_SSH_OPTIONS:-})

# Runs a command there (over ssh with --host, else here) in a login shell, after the set-up
# line, in the working directory. Every argument reaches the command as it is.
there() {
  local line
  line="cd $(printf '%q' "$dir") && $(printf '%q ' "$@")"
  [ -n "$setup" ] && line="$setup && $line"
  if [ -n "$host" ]; then
    ssh "${ssh_opts[@]}" "$host" "bash -lc $(printf '%q' "$line")"
  else
    bash -c "$line"
  fi
}
# Copies one file from there into the fetch directory (ssh cat: any name, no scp quoting).
fetch() {
  local to
  to="$fetch_to/$(basename "$1")"
  if [ -n "$host" ]; then
    if ! ssh "${ssh_opts[@]}" "$host" "cat $(printf '%q' "$1")" > "$to.part"; then
      rm -f "$to.part"
      return 1
    fi
    mv "$to.part" "$to"
  else
    cp "$1" "$to"
  fi
}
absolute() { case $1 in /*) echo "$1" ;; *) echo "$dir/$1" ;; esac; }
elapsed() { local s=$(($(date +%s) - $1)); printf '%d:%02d' $((s / 60)) $((s % 60)); }

# A pending reason that no amount of waiting clears, and what to change; "" when it can clear.
never_clears() {
  case $1 in
    PartitionConfig) echo "the job asks for more than its partition allows (CPUs, nodes, memory or time): lower the request after the first -- (sinfo -p $partition -o '%P %c %D %m %l' shows its limits)" ;;
    PartitionNodeLimit) echo "the node count is outside the partition's limits: change -N or the partition (-p)" ;;
    PartitionTimeLimit) echo "the time limit is above the partition's maximum: lower --time or choose another partition (-p)" ;;
    PartitionDown | PartitionInactive) echo "the partition is down: choose another with -p (sinfo lists them)" ;;
    ReqNodeNotAvail*) [ "$(there sinfo -h -p "$partition" -o %a 2>/dev/null | head -1)" = up ] && return 0
      echo "the partition's nodes are down or drained: choose another partition with -p (sinfo lists them)" ;;
    AssocMaxJobsLimit | AssocMaxSubmitJobLimit) echo "your account's job limit is reached: see sacctmgr show assoc user=\$USER, or ask the admins" ;;
    InvalidAccount | InvalidQOS | QOSNotAllowed) echo "the account or QOS is not valid for you: fix -A/--account or --qos (sacctmgr show assoc user=\$USER)" ;;
    DependencyNeverSatisfied) echo "the job it depends on did not succeed: look at that job's output, then submit again" ;;
    BadConstraints) echo "no node has the features asked for: fix --constraint" ;;
  esac
}

# The job's final state: accounting when the cluster has it, else the controller's memory.
final_state() {
  local s
  s=$(there sacct -n -X -P -j "$job" -o State 2>/dev/null | head -1 | awk '{print $1}' || true)
  [ -n "$s" ] || s=$(there scontrol show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -1 || true)
  echo "$s"
}

# Waits while the job is queued or running: a line per change of state or reason, with the
# time waited; a reason that never clears ends the wait (exit 2).
watch_queue() {
  local started last="" line qstate reason hint
  started=$(date +%s)
  while :; do
    line=$(there squeue -h -j "$job" -o '%T|%r|%P' 2>/dev/null || true)
    [ -n "$line" ] || return 0
    IFS='|' read -r qstate reason partition <<< "$line"
    [ "$reason" = None ] && reason=""
    if [ "$qstate|$reason" != "$last" ]; then
      say "job $job ${qstate,,}${reason:+ ($reason)}, $(elapsed "$started") since we started watching"
      last="$qstate|$reason"
    fi
    if [ "$qstate" = PENDING ] && [ -n "$reason" ]; then
      hint=$(never_clears "$reason")
      [ -z "$hint" ] || die "job $job cannot start: Slurm says $reason: $hint. The job is still queued: scancel $job"
    fi
    sleep "$poll"
  done
}

if [ -z "$fetch_only" ]; then
  sbatch_opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do sbatch_opts+=("$1"); shift; done
  [ $# -gt 0 ] && shift  # the second --
  envs=()
  for v in $(compgen -e | grep -E '^PERFSIFT(_|$)' | grep -v -x -e PERFSIFT_SSH_OPTIONS -e PERFSIFT_REMOTE_SETUP || true); do
    envs+=("$v=${!v}")
  done
  if [ -n "$after" ]; then
    job=$(there env "${envs[@]}" PERFSIFT_STORE="$store" sbatch --parsable --dependency=afterok:"$after" \
      "${sbatch_opts[@]}" "$jobs_dir/perfsift-analyze.sbatch") || die "sbatch refused the job (its message is above)"
  else
    [ $# -gt 0 ] || die "give the application after a second --, e.g. -- -n 4 -- ./app"
    job=$(there env "${envs[@]}" PERFSIFT_JOBS="$jobs_dir" sbatch --parsable "${sbatch_opts[@]}" \
      "$jobs_dir/perfsift-run.sbatch" "$@") || die "sbatch refused the job (its message is above)"
  fi
  job=${job%%;*}
  say "job $job submitted${host:+ on $host}"
  if [ $wait = 0 ]; then
    say "fetch the outputs later with: $0 ${host:+--host $host }--dir $(printf '%q' "$dir") --fetch $job"
    exit 0
  fi
else
  job=$fetch_only
fi
watch_queue
state=$(final_state)
fetch_to=${fetch_to:-$PWD/perfsift-$job}
mkdir -p "$fetch_to"
# The job's output names the files it wrote (the template's --output, unless sbatch's options moved it).
out=""
for name in perfsift-$job.out perfsift-analyze-$job.out; do
  there test -f "$name" 2>/dev/null && { out=$(absolute "$name"); break; }
done
[ -n "$out" ] || die "job $job${state:+ ($state)} left no output file perfsift-$job.out or perfsift-analyze-$job.out in $dir"
fetch "$out" || die "cannot copy $out${host:+ from $host}"
out_local=$fetch_to/$(basename "$out")
case $state in
  FAILED | CANCELLED* | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED)
    echo "perfsift-submit: job $job ended $state; the end of its output ($out_local):" >&2
    tail -n 15 "$out_local" | sed 's/^/  /' >&2
    exit 1 ;;
esac
done_line=$(grep '^perfsift: results in ' "$out_local" | tail -1 || true)
[ -n "$done_line" ] || {
  echo "perfsift-submit: job $job${state:+ ($state)} did not finish its analysis; the end of its output ($out_local):" >&2
  tail -n 15 "$out_local" | sed 's/^/  /' >&2
  exit 1
}
rest=${done_line#perfsift: results in }   # "R, JSON report in J[, HTML report in H]"
results=$(absolute "${rest%%, JSON report in *}")
rest=${rest#*, JSON report in }
json=$(absolute "${rest%%, HTML report in *}")
html=""
[[ $rest == *", HTML report in "* ]] && html=${rest#*, HTML report in }
fetch "$results"
fetch "$json"
page=""
if [ -n "$html" ]; then
  fetch "$(absolute "$html")"
  page=$fetch_to/$(basename "$html")
fi
if [ $fetch_store = 1 ]; then
  analysed=$(absolute "$(sed -n 's/^perfsift analysis of \(.*\)$/\1/p' "$out_local" | tail -1)")
  bytes=$(there stat -c %s "$analysed" 2>/dev/null || echo "?")
  say "fetching the trace store $analysed ($bytes bytes)"
  fetch "$analysed"
fi
say "job $job${state:+ ($state)}: report $out_local, results $fetch_to/$(basename "$results"), JSON $fetch_to/$(basename "$json")"
if [ -n "$page" ]; then
  say "open in a browser: $page"
  if [ $open_page = 1 ]; then
    opener=$(command -v xdg-open || command -v open || true)
    if [ -n "$opener" ]; then "$opener" "$page" > /dev/null 2>&1 & else say "no xdg-open or open here: open $page yourself"; fi
  fi
fi
