#!/usr/bin/env bash
# Starts a one-node Slurm (slurmctld + slurmd on localhost, munge auth) so the
# collection and analysis job steps can be tried with real srun/sbatch on one machine.
# Needs root and Debian's slurm-wlm and munge. Usage: bash jobs/slurm-local/start.sh
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
for p in slurm-wlm munge; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    { DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null; }
done
cpus=$(nproc)
mem=$(awk '/MemTotal/{print int($2/1024) - 512}' /proc/meminfo)
host=$(hostname -s)
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
cat >/etc/slurm/slurm.conf <<CONF
ClusterName=perfsift
SlurmctldHost=$host
AuthType=auth/munge
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
ReturnToService=2
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=/var/spool/slurmd
StateSaveLocation=/var/spool/slurmctld
SlurmUser=root
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
[ -f /etc/munge/munge.key ] || mungekey -c -k /etc/munge/munge.key 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1k count=1 2>/dev/null
chown munge:munge /etc/munge/munge.key /run/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || su -s /bin/sh munge -c "/usr/sbin/munged" || /usr/sbin/munged --force
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for i in $(seq 1 30); do
  sinfo -h -o %T 2>/dev/null | grep -q -E "idle|mix|alloc" && { echo "slurm is up: $(sinfo -h)"; exit 0; }
  sleep 1
done
echo "slurm did not come up; see /var/log/slurm/" >&2
exit 1
