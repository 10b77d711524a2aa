#!/usr/bin/env bash
# A single-node Slurm on this machine for the study tests: munge, slurmctld and slurmd, run as
# root without systemd, with fake GPUs (gres "gpu" backed by plain files), so sbatch, squeue and
# scancel behave as on a cluster. Idempotent: does nothing when it is already up.
#
#   scripts/slurm-up.sh            # prints the line to eval: export SLURM_CONF=...
#   eval "$(scripts/slurm-up.sh)"; sbatch --gres=gpu:1 --wrap 'echo $CUDA_VISIBLE_DEVICES'
#   scripts/slurm-down.sh
#
# slurmd picks its cgroup plugin itself (22.05 has no CgroupPlugin=disabled); TaskPlugin=task/none
# and ProctrackType=proctrack/linuxproc keep jobs from needing one.
# Needs: apt-get install -y slurmctld slurmd slurm-client munge  (Debian/Ubuntu), and root.
# Settings: ONEGC_SLURM_DIR (default /tmp/onegc-slurm), ONEGC_SLURM_GPUS (default 2),
# ONEGC_SLURM_PORT (slurmctld port, default 16817; slurmd uses the next one).
set -euo pipefail

DIR="${ONEGC_SLURM_DIR:-/tmp/onegc-slurm}"
GPUS="${ONEGC_SLURM_GPUS:-2}"
PORT="${ONEGC_SLURM_PORT:-16817}"
CONF="$DIR/slurm.conf"
MUNGE_SOCKET="$DIR/munge/munge.socket.2"
READY_TIMEOUT_S=30  # slurmd registers with slurmctld within a few seconds

die() { echo "slurm-up: $*" >&2; exit 2; }

for cmd in munged slurmctld slurmd sinfo sbatch; do
    command -v "$cmd" >/dev/null || die "$cmd not found: apt-get install -y slurmctld slurmd slurm-client munge"
done
[ "$(id -u)" = 0 ] || die "must run as root (the daemons run as root here)"

export SLURM_CONF="$CONF"
if [ -f "$CONF" ] && timeout 5 sinfo -h -o %T 2>/dev/null | grep -qx idle; then
    echo "export SLURM_CONF=$CONF"
    exit 0
fi

mkdir -p "$DIR"/{state,spool,dev}
NODE="$(hostname -s)"
# The node's real CPU/memory layout, as slurmd sees it (first line of `slurmd -C`).
NODELINE="$(slurmd -C | head -n 1)"
[ -n "$NODELINE" ] || die "slurmd -C printed nothing"
# gres File= must name character devices: /dev/null stands in for each fake GPU.
for i in $(seq 0 $((GPUS - 1))); do ln -sfn /dev/null "$DIR/dev/nvidia$i"; done

cat > "$CONF" <<EOF
# written by scripts/slurm-up.sh
ClusterName=onegc
SlurmctldHost=$NODE
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
KillWait=30
MinJobAge=600
InactiveLimit=0
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
$NODELINE Gres=gpu:$GPUS State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
cat > "$DIR/gres.conf" <<EOF
AutoDetect=off
NodeName=$NODE Name=gpu File=$DIR/dev/nvidia[0-$((GPUS - 1))]
EOF

# munge: a daemon of this cluster's own, on a socket in $DIR (slurm.conf's AuthInfo), so that two
# clusters on one machine (two test runs side by side) never share, or stop, each other's
[ -f /etc/munge/munge.key ] || mungekey --create >/dev/null
mkdir -p "$DIR/munge"
chmod 755 "$DIR" "$DIR/munge"
if ! (munge -n --socket="$MUNGE_SOCKET" | unmunge --socket="$MUNGE_SOCKET") >/dev/null 2>&1; then
    munged --force --socket="$MUNGE_SOCKET" --pid-file="$DIR/munged.pid" --log-file="$DIR/munged.log" \
        --seed-file="$DIR/munged.seed" || die "munged did not start (see $DIR/munged.log)"
    for _ in $(seq 50); do (munge -n --socket="$MUNGE_SOCKET" | unmunge --socket="$MUNGE_SOCKET") >/dev/null 2>&1 && break; sleep 0.1; done
    (munge -n --socket="$MUNGE_SOCKET" | unmunge --socket="$MUNGE_SOCKET") >/dev/null 2>&1 \
        || die "munged did not answer (see $DIR/munged.log)"
fi

for daemon in slurmctld slurmd; do
    pidfile="$DIR/$daemon.pid"
    if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        kill "$(cat "$pidfile")" 2>/dev/null || true
        sleep 1
    fi
done
rm -rf "$DIR/state"/* "$DIR/spool"/*
slurmctld -i || die "slurmctld did not start (see $DIR/slurmctld.log)"
slurmd || die "slurmd did not start (see $DIR/slurmd.log)"

for _ in $(seq $((READY_TIMEOUT_S * 5))); do
    if timeout 5 sinfo -h -o %T 2>/dev/null | grep -qx idle; then
        echo "export SLURM_CONF=$CONF"
        exit 0
    fi
    sleep 0.2
done
die "the node did not become idle within ${READY_TIMEOUT_S} s: see $DIR/slurmctld.log and $DIR/slurmd.log"
