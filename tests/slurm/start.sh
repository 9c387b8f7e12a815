#!/usr/bin/env bash
# tests/slurm/start.sh - bring up depthlab's test cluster: a single-node Slurm 22.05 from Debian 12
# packages on a machine without systemd (and without cgroups), with slurmdbd accounting so that
# sacct and account checks work. Root only. Idempotent: a second run starts only what is not
# running (ours), and waits for the node to be idle again. See tests/slurm/README.md.
#
# Exit status: 0 cluster up and node idle; 3 the packages are missing and could not be installed
# (no apt-get, no mirror): the caller may skip; 2 not root / bad usage; 1 anything else (a real
# failure: the packages are there but the cluster did not come up; the logs' tails go to stderr).
set -euo pipefail

PART=${DEPTHLAB_SLURM_PARTITION:-debug}
ACCOUNTS=${DEPTHLAB_SLURM_ACCOUNTS:-}        # comma-separated; created with root as their user
DIR=${DEPTHLAB_SLURM_DIR:-/var/tmp/depthlab-slurm}
WAIT_S=${DEPTHLAB_SLURM_WAIT_S:-90}
CLUSTER=depthlab
PIDS=$DIR/pids LOGS=$DIR/logs
MARK="# written by depthlab tests/slurm/start.sh"
T0=$SECONDS

say() { echo "start.sh: $*"; }
# fail <message> [daemon...]: a real failure; show the end of those daemons' logs, exit 1
fail() {
  local msg=$1 n f; shift
  for n in "$@"; do
    f=$LOGS/$n.log; [ -s "$f" ] || f=$LOGS/$n.out     # its log file, else its stdout+stderr
    [ ! -s "$f" ] || { echo "--- tail of $f" >&2; tail -n 20 "$f" >&2; }
  done
  echo "start.sh: $msg" >&2; exit 1
}
# could not install: the last stderr line is the reason (tests/test_slurm.py skips with it)
cannot_install() { echo "start.sh: cannot install Slurm: $*" >&2; exit 3; }

[ "$(id -u)" -eq 0 ] || { echo "start.sh: must run as root" >&2; exit 2; }

# ------------------------------------------------------------------ packages
missing=()
for bin in slurmctld slurmd sbatch sacctmgr munged slurmdbd mariadbd; do
  command -v "$bin" >/dev/null || missing+=("$bin")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || cannot_install "${missing[*]} missing and no apt-get"
  say "installing the Slurm packages (${missing[*]} missing)"
  export DEBIAN_FRONTEND=noninteractive
  # policy-rc.d exit 101 keeps the packages' postinst from starting daemons via /etc/init.d:
  # this script starts them itself and tracks their pids (Docker images usually ship one)
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt=(apt-get -y -q -o Acquire::http::Timeout=30 -o Acquire::Retries=1 -o DPkg::Lock::Timeout=120)
  pkgs=(slurmctld slurmd slurm-client munge slurmdbd mariadb-server)
  mkdir -p "$DIR"
  if ! "${apt[@]}" install --no-install-recommends "${pkgs[@]}" >"$DIR/apt.log" 2>&1; then
    say "apt-get install failed; apt-get update and retry"    # stale package lists
    { "${apt[@]}" update && "${apt[@]}" install --no-install-recommends "${pkgs[@]}"; } \
      >>"$DIR/apt.log" 2>&1 \
      || cannot_install "apt-get install failed (log: $DIR/apt.log): $(grep '^E:' "$DIR/apt.log" | tail -n 1)"
  fi
  say "installed in $((SECONDS - T0)) s"
fi

mkdir -p "$PIDS" "$LOGS" "$DIR/state" "$DIR/spool" "$DIR/run"
# slurmctld and slurmdbd drop to the slurm user: it writes their state, logs and pid files
chown slurm:slurm "$DIR/state" "$LOGS" "$DIR/run"
chmod 755 "$DIR" "$LOGS"

# ------------------------------------------------------------------ pids
# $PIDS/<name>.pid holds "<pid> <executable>"; a pid counts as ours only while /proc/<pid>/exe
# still is that executable (pid reuse). stop.sh signals exactly these pids.
ours() {
  local pid exe
  read -r pid exe 2>/dev/null <"$PIDS/$1.pid" || return 1
  [ "$(readlink -f "/proc/$pid/exe" 2>/dev/null)" = "$exe" ]
}
# pids, other than ours, of the processes that run executable <exe> (found by executable, only to
# refuse to start a second one): others <exe> <name>
others() {
  local mine=""
  [ -s "$PIDS/$2.pid" ] && read -r mine _ <"$PIDS/$2.pid"
  # (find fails on processes that vanish or have no executable: kernel threads)
  { find /proc -maxdepth 2 -path '/proc/[0-9]*/exe' -printf '%h %l\n' 2>/dev/null || true; } |
    awk -v exe="$1" -v mine="/proc/$mine" '$2 == exe && $1 != mine {print substr($1, 7)}'
}
# start <name> <executable> argv...: run argv (a daemon in its foreground mode) detached, with
# stdin closed, and record its pid; <executable> is what /proc/<pid>/exe will show
start() {
  local name=$1 exe pid foreign i; exe=$(readlink -f "$2"); shift 2
  if ours "$name"; then say "$name already running (pid $(cut -d' ' -f1 "$PIDS/$name.pid"))"; return; fi
  foreign=$(others "$exe" "$name" | paste -sd ' ' -)
  [ -z "$foreign" ] || fail "$name already runs, not started by start.sh (pid $foreign): stop that first"
  # (bash without job control: the child is no group leader, so setsid execs without forking)
  setsid "$@" >>"$LOGS/$name.out" 2>&1 </dev/null &
  pid=$!
  echo "$pid $exe" >"$PIDS/$name.pid"
  # until the forked shell has exec'd the daemon, /proc/<pid>/exe still is bash
  for ((i = 0; i < 50; i++)); do ours "$name" || [ ! -d "/proc/$pid" ] && break; sleep 0.1; done
  ours "$name" || fail "$name exited right after it started" "$name"
  say "$name started (pid $pid)"
}
# up <name> <seconds> <what> <command...>: poll the command every 0.1 s until it succeeds;
# fail when daemon <name> exits or the time is up
up() {
  local name=$1 t=$2 what=$3 i; shift 3
  for ((i = 0; i < t * 10; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    ours "$name" || fail "$name exited while starting" "$name"
    sleep 0.1
  done
  fail "no $what after $t s" "$name"
}
# restart <name>: stop our daemon (config changed); start() then brings it back
restart() {
  local pid _ i
  ours "$1" || return 0
  read -r pid _ <"$PIDS/$1.pid"
  say "config changed: restarting $1"
  kill -TERM "$pid" 2>/dev/null || true
  # (an exited daemon may stay a zombie for a while; ours() no longer counts it)
  for ((i = 0; i < 300; i++)); do ours "$1" || break; sleep 0.1; done
  ! ours "$1" || { kill -KILL "$pid" 2>/dev/null || true; sleep 1; }
  rm -f "$PIDS/$1.pid"
}
# put <file> <mode> <content>: write the file when its content differs; status 0 = it changed
put() {
  [ "$(cat "$1" 2>/dev/null)" != "$3" ] || return 1
  if [ -f "$1" ] && ! grep -qF "$MARK" "$1"; then cp -n "$1" "$1.orig"; say "kept the old $1 as $1.orig"; fi
  (umask 077; printf '%s\n' "$3" >"$1.new")
  chmod "$2" "$1.new"; chown slurm:slurm "$1.new"; mv "$1.new" "$1"
  say "wrote $1"
}

# ------------------------------------------------------------------ config
NODE=$(hostname -s)
# the real node, as "NodeName=vm CPUs=2 Boards=1 ... RealMemory=24105"
HW=$(slurmd -C | sed -n 1p) || fail "slurmd -C failed"
mkdir -p /etc/slurm
# no cgroups here: processes tracked through /proc, no task containment, no cgroup.conf needed
if put /etc/slurm/slurm.conf 644 "$MARK
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
# as on a real cluster, a job with an account that the user does not have is rejected
AccountingStorageEnforce=associations
# finished jobs stay in squeue 10 min: profiles/slurm polls squeue, which needs >= 120 s
MinJobAge=600
ReturnToService=2
SlurmdTimeout=30
KillWait=10
NodeName=$NODE NodeAddr=127.0.0.1 ${HW#NodeName=* } State=UNKNOWN
PartitionName=$PART Nodes=$NODE Default=YES MaxTime=INFINITE State=UP"; then
  restart slurmd; restart slurmctld
fi
if put /etc/slurm/slurmdbd.conf 600 "$MARK
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=slurm
LogFile=$LOGS/slurmdbd.log
PidFile=$DIR/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=depthlab
StorageLoc=slurm_acct_db"; then
  restart slurmdbd
fi

# ------------------------------------------------------------------ munge
if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge; dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
fi
mkdir -p /run/munge /var/lib/munge /var/log/munge
chown munge:munge /etc/munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
chmod 700 /etc/munge; chmod 400 /etc/munge/munge.key; chmod 755 /run/munge
# setpriv execs munged as the munge user (no fork): the recorded pid is munged's own
start munged /usr/sbin/munged setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged -F
up munged 15 "munge round trip" sh -c 'munge -n | unmunge'

# ------------------------------------------------------------------ mariadb + slurmdbd
mkdir -p /run/mysqld; chown mysql:mysql /run/mysqld
[ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql >>"$LOGS/mariadb-install.out" 2>&1 \
  || fail "mariadb-install-db failed" mariadb-install
start mariadbd /usr/sbin/mariadbd /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 \
  --socket=/run/mysqld/mysqld.sock --pid-file=/run/mysqld/mysqld.pid
up mariadbd 60 "answer from mariadb" mariadb-admin ping
mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
  CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'depthlab';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';" || fail "could not create the database" mariadbd
start slurmdbd /usr/sbin/slurmdbd /usr/sbin/slurmdbd -D
up slurmdbd 60 "answer from slurmdbd" sacctmgr -n show cluster

# ------------------------------------------------------------------ slurmctld + slurmd
# argv[0] must stay /usr/sbin/slurmctld, not the alternatives target it links to (slurmctld-wlm):
# Slurm tells slurmctld from slurmd by argv[0], and as slurmctld-wlm it crashes (seen with slurmdbd)
start slurmctld /usr/sbin/slurmctld /usr/sbin/slurmctld -D
up slurmctld 60 "answer from slurmctld" scontrol ping
start slurmd /usr/sbin/slurmd /usr/sbin/slurmd -D

# the node registers within a second or so; a node left down/drained by an earlier run is resumed
state=""
for ((i = 0; i < WAIT_S * 4; i++)); do
  state=$(sinfo -h -n "$NODE" -o %T 2>/dev/null | sed -n 1p) || true
  case $state in
    idle|mixed|allocated) break ;;
    down*|drain*|fail*) scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true ;;
  esac
  ours slurmd || fail "slurmd exited while starting" slurmd
  sleep 0.25
done
case $state in idle|mixed|allocated) ;; *) fail "node $NODE is '$state' after $WAIT_S s" slurmctld slurmd ;; esac

# ------------------------------------------------------------------ accounts
# slurmctld registers the cluster in slurmdbd on first contact; accounts need it there
up slurmctld 30 "cluster $CLUSTER in slurmdbd" \
  sh -c "sacctmgr -n -P show cluster format=cluster | grep -qx $CLUSTER"
for account in ${ACCOUNTS//,/ }; do
  for user in root ${SUDO_USER:-}; do
    [ -n "$(sacctmgr -n -P show assoc where cluster=$CLUSTER account="$account" user="$user" \
      format=account)" ] && continue
    sacctmgr -i -Q add account "$account" cluster=$CLUSTER >/dev/null 2>&1 || true  # may exist
    sacctmgr -i -Q add user "$user" account="$account" cluster=$CLUSTER >/dev/null \
      || fail "could not give $user the account $account"
    say "account $account for $user"
  done
done

say "cluster $CLUSTER up in $((SECONDS - T0)) s: node $NODE $state, partition $PART${ACCOUNTS:+, accounts $ACCOUNTS}"
