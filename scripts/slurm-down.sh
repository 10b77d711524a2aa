#!/usr/bin/env bash
# Stops what scripts/slurm-up.sh started (by the pids it recorded: slurmd, slurmctld and the
# cluster's own munged) and removes its folder. Idempotent: does nothing when it is already down.
# The system's munged, if any, is never touched.
set -uo pipefail

DIR="${ONEGC_SLURM_DIR:-/tmp/onegc-slurm}"
[ -d "$DIR" ] || exit 0

if [ -f "$DIR/slurm.conf" ] && command -v scancel >/dev/null; then
    SLURM_CONF="$DIR/slurm.conf" timeout 5 scancel --quiet --full --signal=KILL --user="$(id -un)" 2>/dev/null || true
fi
for daemon in slurmd slurmctld munged; do
    pidfile="$DIR/$daemon.pid"
    [ -f "$pidfile" ] || continue
    pid="$(cat "$pidfile")"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    fi
    rm -f "$pidfile"
done
rm -rf "$DIR"
