#!/usr/bin/env bash
# tests/slurm/stop.sh - stop depthlab's test cluster: cancel the jobs left in it, then stop
# exactly the daemons that start.sh started, by the pids it recorded under
# $DEPTHLAB_SLURM_DIR/pids (never by name). Config, state, database and logs are kept, so
# start.sh brings the same cluster back in seconds. Safe to run when nothing is running.
set -euo pipefail

DIR=${DEPTHLAB_SLURM_DIR:-/var/tmp/depthlab-slurm}
PIDS=$DIR/pids

say() { echo "stop.sh: $*"; }
[ "$(id -u)" -eq 0 ] || { echo "stop.sh: must run as root" >&2; exit 2; }
[ -d "$PIDS" ] || { say "nothing to stop (no $PIDS)"; exit 0; }

# <name> -> its recorded pid, if that pid still runs the recorded executable (not a reused pid)
pid_of() {
  local pid exe
  read -r pid exe 2>/dev/null <"$PIDS/$1.pid" || return 1
  [ "$(readlink -f "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] && echo "$pid"
}

# jobs first, while slurmctld and slurmd still run: otherwise their processes outlive slurmd
if pid_of slurmctld >/dev/null && pid_of slurmd >/dev/null; then
  jobs=$(squeue -h -o %i 2>/dev/null | tr '\n' ' ') || true
  if [ -n "${jobs// /}" ]; then
    say "cancelling jobs $jobs"
    # shellcheck disable=SC2086  # one argument per job id
    scancel $jobs || true
    for ((i = 0; i < 60; i++)); do
      [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.5
    done
  fi
fi

# the reverse of the start order; SIGTERM, then SIGKILL after 30 s
status=0
for name in slurmd slurmctld slurmdbd mariadbd munged; do
  [ -e "$PIDS/$name.pid" ] || continue
  if pid=$(pid_of "$name"); then
    kill -TERM "$pid" 2>/dev/null || true
    # gone = no longer running its executable: an exited daemon stays a zombie until pid 1
    # reaps it (here that takes up to 2 s), and a zombie's /proc/<pid>/exe reads as nothing
    for ((i = 0; i < 300; i++)); do pid_of "$name" >/dev/null || break; sleep 0.1; done
    if pid_of "$name" >/dev/null; then
      say "$name (pid $pid) ignored SIGTERM for 30 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 1
      ! pid_of "$name" >/dev/null || { say "$name (pid $pid) survived SIGKILL"; status=1; continue; }
    fi
    say "$name stopped (pid $pid)"
  else
    say "$name was not running any more"
  fi
  rm -f "$PIDS/$name.pid"
done
exit $status
