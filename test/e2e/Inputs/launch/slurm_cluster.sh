#!/usr/bin/env bash
# Brings up (start) or takes down (stop) a single-node Slurm cluster under
# DIR: its own munged (socket and key under DIR), slurmctld and slurmd on
# free ports, the node declared with 8 CPUs (config_overrides) so that
# `srun -n 4` runs on a 2-core machine. Prints `SLURM_CONF=DIR/slurm.conf`
# when the node is idle; exits 3 with `SKIP slurm: <reason>` when Slurm
# cannot run here.
#
#   slurm_cluster.sh start DIR
#   slurm_cluster.sh stop DIR
set -u
cmd=$1 dir=$2
if [ "$cmd" = stop ]; then
  for p in slurmd slurmctld munged; do
    [ -f "$dir/run/$p.pid" ] && kill "$(cat "$dir/run/$p.pid")" 2>/dev/null
  done
  exit 0
fi
skip() { echo "SKIP slurm: $*"; exit 3; }
for t in slurmctld slurmd srun munged sinfo; do
  command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] || skip "$t is not installed (Debian: slurm-wlm, munge)"
done
[ "$(id -u)" = 0 ] || skip "slurmd must run as root to start tasks, and this test runs as $(id -un)"
export PATH=$PATH:/usr/sbin
mkdir -p "$dir"/{state,spool,log,run}
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }
ctld=$(free_port) node=$(free_port)
host=$(hostname)
dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
chmod 600 "$dir/munge.key"
munged --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" \
  --log-file="$dir/log/munged.log" --pid-file="$dir/run/munged.pid" \
  --seed-file="$dir/munge.seed" || skip "munged does not start: $(tail -n 2 "$dir/log/munged.log" 2>/dev/null)"
cat > "$dir/slurm.conf" <<CONF
ClusterName=loomtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld
SlurmdPort=$node
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld || skip "slurmctld does not start: $(tail -n 3 "$dir/log/slurmctld.log")"
slurmd || skip "slurmd does not start: $(tail -n 3 "$dir/log/slurmd.log")"
for _ in $(seq 50); do
  if sinfo -h -o %T 2>/dev/null | grep -q idle; then
    echo "SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
"$0" stop "$dir"
skip "the node did not become idle in 10 s: $(sinfo 2>&1 | tail -n 1); $(tail -n 2 "$dir/log/slurmd.log")"
