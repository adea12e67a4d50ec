#!/usr/bin/env bash
# RPPA's remote workflow over a real ssh: an sshd of this test's own on 127.0.0.1 (its own
# port, host key and authorized key, stopped at the end) in front of the running one-node
# Slurm. The desk side has no perfsift on its PATH; the cluster side finds it only through
# the --remote-setup line. Called by slurm_test.sh once Slurm is up (it cancels this run's
# jobs at the end). usage: remote_test.sh PERFSIFT APP SOURCE_DIR WORK_DIR
set -euo pipefail
perfsift=$1 app=$2 src=$3 work=$4
submit=$src/jobs/perfsift-submit.sh
rm -rf "$work" && mkdir -p "$work/ssh" && cd "$work"   # outputs fetched by default land here
ssh_dir=$work/ssh

# ---- the sshd (packages as the README's commands install them: Debian's openssh)
if [ ! -x /usr/sbin/sshd ] || ! command -v ssh > /dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get update -qq > /dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server openssh-client > /dev/null
fi
made_privsep=0
[ -d /run/sshd ] || { mkdir -p /run/sshd && chmod 755 /run/sshd && made_privsep=1; }
sshd_pid=""
stop_sshd() {
  [ -n "$sshd_pid" ] && kill "$sshd_pid" 2> /dev/null || true
  [ $made_privsep = 1 ] && rmdir /run/sshd 2> /dev/null || true
}
trap stop_sshd EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ssh-keygen -q -t ed25519 -N '' -f "$ssh_dir/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$ssh_dir/desk_key"
cp "$ssh_dir/desk_key.pub" "$ssh_dir/authorized_keys"
cat > "$ssh_dir/sshd_config" << EOF
ListenAddress 127.0.0.1
Port $port
HostKey $ssh_dir/host_key
AuthorizedKeysFile $ssh_dir/authorized_keys
PidFile $ssh_dir/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
EOF
cat > "$ssh_dir/ssh_config" << EOF
Host cluster
  HostName 127.0.0.1
  Port $port
  User $(id -un)
  IdentityFile $ssh_dir/desk_key
  IdentitiesOnly yes
  StrictHostKeyChecking accept-new
  UserKnownHostsFile $ssh_dir/known_hosts
  LogLevel ERROR
EOF
/usr/sbin/sshd -f "$ssh_dir/sshd_config" -E "$ssh_dir/sshd.log"
for _ in $(seq 1 50); do [ -s "$ssh_dir/sshd.pid" ] && break; sleep 0.1; done
sshd_pid=$(cat "$ssh_dir/sshd.pid")
export PERFSIFT_SSH_OPTIONS="-F $ssh_dir/ssh_config"
ssh $PERFSIFT_SSH_OPTIONS -o BatchMode=yes cluster true || { cat "$ssh_dir/sshd.log"; exit 1; }
echo "sshd on 127.0.0.1:$port (pid $sshd_pid)"

# ---- the desk: no perfsift anywhere on its PATH; the cluster: perfsift only after the set-up line
desk() { env -u PERFSIFT PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
desk sh -c '! command -v perfsift' > /dev/null
mkdir -p "$work/cluster-prefix/bin"
ln -s "$perfsift" "$work/cluster-prefix/bin/perfsift"
setup="export PATH=$(printf '%q' "$work/cluster-prefix/bin"):\$PATH"
! ssh $PERFSIFT_SSH_OPTIONS cluster 'bash -lc "command -v perfsift"' > /dev/null || { echo "perfsift is on the cluster's PATH already"; exit 1; }

# ---- submit and wait: a working directory and application arguments with spaces and quotes
run_dir="$work/cluster runs/it's \"one\""
mkdir -p "$run_dir"
arg="two words, 'single' and \"double\" quotes"
desk PERFSIFT_ANALYSIS_TASKS=2 timeout 300 bash "$submit" --host cluster --dir "$run_dir" --remote-setup "$setup" --poll 1 \
  --fetch-to "$work/desk/first" -- -n 2 -- "$app" "$arg" > "$work/first.txt"
cat "$work/first.txt"
grep -q "submitted on cluster" "$work/first.txt"
grep -q "^perfsift-submit: job [0-9]* \(pending\|running\)" "$work/first.txt"   # watched (a short job may finish between polls)
job1=$(sed -n 's/^perfsift-submit: job \([0-9]*\) submitted.*/\1/p' "$work/first.txt")
page=$(sed -n 's/^perfsift-submit: open in a browser: //p' "$work/first.txt")
test -f "$page" && grep -q "<html" "$page"
ls "$work/desk/first"
[ "$(ls "$work/desk/first" | sort | tr '\n' ' ')" = "perfsift-$job1-report.html perfsift-$job1-report.json perfsift-$job1-results.h5 perfsift-$job1.out " ] ||
  { echo "fetched other files than the page, report, results and JSON"; exit 1; }
test -f "$run_dir/perfsift-$job1.h5"   # the store stayed on the cluster
grep -q "perfsift analysis of $run_dir/perfsift-$job1.h5" "$work/desk/first/perfsift-$job1.out"
"$perfsift" info --json "$run_dir/perfsift-$job1.h5" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["ranks"] == 2 and d["command"].endswith(sys.argv[1]), (d["ranks"], d["command"])' "$arg"
echo "ssh: submitted, watched, 4 files fetched to a desk without perfsift; arguments and directory with spaces and quotes intact"

# ---- --no-wait, then --fetch JOBID (which waits for the job), with the store on request
desk timeout 60 bash "$submit" --host cluster --dir "$run_dir" --remote-setup "$setup" --no-wait -- -n 2 -- "$app" > "$work/nowait.txt"
cat "$work/nowait.txt"
job2=$(sed -n 's/^perfsift-submit: job \([0-9]*\) submitted.*/\1/p' "$work/nowait.txt")
grep -q -- "--fetch $job2" "$work/nowait.txt"
desk timeout 300 bash "$submit" --host cluster --dir "$run_dir" --remote-setup "$setup" --poll 1 --fetch "$job2" --fetch-store \
  --fetch-to "$work/desk/second" > "$work/fetch.txt"
cat "$work/fetch.txt"
grep -q "fetching the trace store $run_dir/perfsift-$job2.h5 ([0-9]* bytes)" "$work/fetch.txt"
cmp "$work/desk/second/perfsift-$job2.h5" "$run_dir/perfsift-$job2.h5"
test -f "$work/desk/second/perfsift-$job2-report.html"
echo "ssh: --no-wait then --fetch $job2: outputs and, asked for, the store"

# ---- --after: an analysis chained to a finished job, on the first run's store
desk timeout 300 bash "$submit" --host cluster --dir "$run_dir" --remote-setup "$setup" --poll 1 --after "$job2" \
  --store "$run_dir/perfsift-$job1.h5" --fetch-to "$work/desk/third" -- -n 1 > "$work/after.txt"
cat "$work/after.txt"
grep -q "perfsift analysis of $run_dir/perfsift-$job1.h5" "$work/desk/third"/perfsift-analyze-*.out
echo "ssh: --after $job2 chained an analysis"

# ---- a request the partition can never grant: the wait ends with the reason and a hint
cpus=$(sinfo -h -o %c | head -1)
rc=0
desk timeout 120 bash "$submit" --host cluster --dir "$run_dir" --remote-setup "$setup" --poll 1 \
  -- -n $((cpus * 8)) -- "$app" > "$work/toobig.txt" 2>&1 || rc=$?
cat "$work/toobig.txt"
[ $rc = 2 ] && grep -q "cannot start: Slurm says PartitionConfig: the job asks for more than its partition allows" "$work/toobig.txt"
job3=$(sed -n 's/^perfsift-submit: job \([0-9]*\) submitted.*/\1/p' "$work/toobig.txt")
scancel "$job3"
echo "ssh: $((cpus * 8)) tasks on $cpus CPUs: exit 2 with PartitionConfig and what to change"

# ---- a job that fails: its state and the end of its output; a dependency on it never clears
rc=0
desk timeout 120 bash "$submit" --host cluster --dir "$run_dir" --remote-setup "$setup" --poll 1 \
  -- -n 1 -- "$work/no such app" > "$work/fails.txt" 2>&1 || rc=$?
cat "$work/fails.txt"
[ $rc = 1 ] && grep -q "ended FAILED; the end of its output" "$work/fails.txt"
job4=$(sed -n 's/^perfsift-submit: job \([0-9]*\) submitted.*/\1/p' "$work/fails.txt")
rc=0
desk timeout 120 bash "$submit" --host cluster --dir "$run_dir" --remote-setup "$setup" --poll 1 --after "$job4" \
  --store "$run_dir/perfsift-$job1.h5" -- -n 1 > "$work/never.txt" 2>&1 || rc=$?
cat "$work/never.txt"
[ $rc = 2 ] && grep -q "Slurm says DependencyNeverSatisfied" "$work/never.txt"
scancel "$(sed -n 's/^perfsift-submit: job \([0-9]*\) submitted.*/\1/p' "$work/never.txt")"
echo "ssh: a failed job exits 1 with its state and output; a dependency on it exits 2"
