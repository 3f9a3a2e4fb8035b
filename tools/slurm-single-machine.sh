#!/usr/bin/env bash
# A Slurm cluster on this one machine, to try `autobench run --runtime slurm` without one
# (docs/slurm.md, "A cluster on one machine").  Root is needed (slurmd runs jobs as any user).
#
#   tools/slurm-single-machine.sh DIR          write DIR/slurm.conf, start munged (if none
#                                              answers), slurmctld and two slurmd daemons
#                                              (nodes abnode1, abnode2), wait until both are idle
#   export SLURM_CONF=DIR/slurm.conf           then sinfo / sbatch / autobench run --runtime slurm
#   tools/slurm-single-machine.sh DIR stop     stop the daemons it started
#
# Packages (Debian/Ubuntu): apt-get install slurm-wlm munge.  Each node declares GPUS (2) GPUs
# as character devices made like /dev/null, so a job's --gpus-per-node / --gres=gpu:N request
# is scheduled, granted or refused as on a GPU cluster (nothing computes on them).
# Ports: SLURMCTLD_PORT (6817), SLURMD_PORT1 (6818), SLURMD_PORT2 (6819).
# tests/run/slurm_cluster.py starts the same cluster for the test suite.
set -euo pipefail

DIR=${1:?usage: slurm-single-machine.sh DIR [stop]}
GPUS=${GPUS:-2}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

if [ "${2:-}" = stop ]; then
  for pidfile in "$DIR"/slurmd-abnode1.pid "$DIR"/slurmd-abnode2.pid "$DIR"/slurmctld.pid; do
    if [ -s "$pidfile" ]; then kill "$(cat "$pidfile")" 2>/dev/null || true; fi
  done
  echo "stopped the daemons of $DIR"
  exit 0
fi

for tool in slurmctld slurmd sinfo munged munge; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed: apt-get install slurm-wlm munge" >&2; exit 2; }
done
if [ "$(id -u)" -ne 0 ]; then echo "run it as root (slurmd runs jobs as their users)" >&2; exit 2; fi

# 1. The configuration: one controller and two nodes on 127.0.0.1, no accounting, no cgroups.
mkdir -p "$DIR/state" "$DIR/log"
CPUS=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
cat > "$DIR/slurm.conf" <<CONF
ClusterName=autobench-local
SlurmctldHost=localhost(127.0.0.1)
GresTypes=gpu
SlurmctldPort=${SLURMCTLD_PORT:-6817}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool-%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MinJobAge=3600
KillWait=5
NodeName=abnode1 NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=${SLURMD_PORT1:-6818} CPUs=$CPUS RealMemory=1000 Gres=gpu:$GPUS State=UNKNOWN
NodeName=abnode2 NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=${SLURMD_PORT2:-6819} CPUs=$CPUS RealMemory=1000 Gres=gpu:$GPUS State=UNKNOWN
PartitionName=debug Nodes=abnode1,abnode2 Default=YES MaxTime=INFINITE State=UP
CONF

# 2. The GPUs: device files slurmd accepts (Slurm 22.05 drops a GPU without one).
for ((k = 0; k < GPUS; k++)); do
  [ -e "$DIR/fakegpu$k" ] || mknod -m 666 "$DIR/fakegpu$k" c 1 3
done
echo "Name=gpu File=$DIR/fakegpu[0-$((GPUS - 1))]" > "$DIR/gres.conf"

# 3. munge: the daemons authenticate each other through it.
if ! munge -n >/dev/null 2>&1; then
  mkdir -p /run/munge
  chown munge:munge /run/munge
  runuser -u munge -- munged
  for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.2; done
fi

# 4. The controller and the two nodes.
export SLURM_CONF="$DIR/slurm.conf"
slurmctld -i -f "$SLURM_CONF"
slurmd -N abnode1 -f "$SLURM_CONF"
slurmd -N abnode2 -f "$SLURM_CONF"

# 5. Until both nodes are idle.
for _ in $(seq 150); do
  if [ "$(sinfo -h -N -o %T | sort -u)" = idle ]; then
    sinfo -N -o "%N %G %T"
    echo "ready: export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
echo "the nodes did not become idle: see $DIR/log/" >&2
exit 1
