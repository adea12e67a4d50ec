#!/usr/bin/env bash
# Stops the one-node Slurm that jobs/slurm-local/start.sh started: slurmd, slurmctld and
# munged, in that order, each by the pid its pid file names (jobs still in the queue are
# cancelled first, so no job step outlives the cluster).
# Usage: bash jobs/slurm-local/stop.sh [DAEMON...]   (default: all three; e.g.
# `stop.sh slurmd slurmctld` leaves munged running). Needs root.
set -uo pipefail
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
all=(slurmd slurmctld munged)
[ $# -gt 0 ] || set -- "${all[@]}"
for d in "$@"; do
  case $d in slurmd | slurmctld | munged) ;; *) echo "stop.sh: unknown daemon '$d' (give slurmd, slurmctld or munged)" >&2; exit 2 ;; esac
done
wanted() { local d; for d in "${@:2}"; do [ "$d" = "$1" ] && return 0; done; return 1; }

pidfile() {
  case $1 in
    slurmd) echo /run/slurmd.pid ;;
    slurmctld) echo /run/slurmctld.pid ;;
    munged) echo /run/munge/munged.pid ;;
  esac
}
# The pids of a daemon: the one its pid file names when that process is the daemon, else
# any process of exactly that name (e.g. started without a pid file).
pids_of() {
  local f pid
  f=$(pidfile "$1")
  pid=$(cat "$f" 2>/dev/null || true)
  if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ]; then
    echo "$pid"
  else
    pgrep -x "$1" || true
  fi
}

# A process that is running (an exited daemon not yet reaped, a zombie, counts as stopped).
alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ -n "$st" ] && [ "$st" != Z ]; }

# Jobs would leave their steps running without slurmd: cancel them while the controller answers.
if wanted slurmd "$@" && jobs=$(squeue -h -o %i 2>/dev/null) && [ -n "$jobs" ]; then
  echo "cancelling jobs: $(echo $jobs)"
  scancel $jobs 2>/dev/null || true
  for _ in $(seq 1 30); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 1; done
fi

status=0
for d in "${all[@]}"; do
  wanted "$d" "$@" || continue
  pids=$(pids_of "$d")
  if [ -z "$pids" ]; then
    echo "$d: not running"
    continue
  fi
  kill -TERM $pids 2>/dev/null || true
  for _ in $(seq 1 50); do
    running=""
    for p in $pids; do alive "$p" && running="$running $p"; done
    [ -z "$running" ] && break
    sleep 0.2
  done
  if [ -n "$running" ]; then
    kill -KILL $running 2>/dev/null || true
    sleep 0.5
  fi
  left=""
  for p in $pids; do alive "$p" && left="$left $p"; done
  if [ -n "$left" ]; then
    echo "$d: could not stop pid$left" >&2
    status=1
  else
    echo "$d: stopped (pid $(echo $pids))"
  fi
done
exit $status
