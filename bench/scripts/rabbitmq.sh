#!/usr/bin/env bash
# RabbitMQ for Styx's benchmark, side by side with Styx on this machine.
#
#   rabbitmq.sh install          install rabbitmq-server from Debian's packages (root), and stop/disable
#                                the system service the package may start: the bench runs its own nodes
#   rabbitmq.sh start [NODES]    start NODES nodes (default 1; more form one cluster) on loopback only,
#                                with their own ports, data dirs and epmd; prints one JSON line last:
#                                {"pids":[..],"urls":[..],"version":..,"dataDir":..} (the bench reads it)
#   rabbitmq.sh stop             stop every node started here and their epmd, and remove the data dir
#   rabbitmq.sh stop-keep        stop node 1 of a single-node run cleanly, keeping its data (and epmd)
#   rabbitmq.sh restart          start that node again on its data; prints the same JSON line as start
#   rabbitmq.sh status           exit 0 when node 1 runs
#
# Everything lives under $STYX_BENCH_RABBITMQ_DIR (default /tmp/styx-bench-rabbitmq). Node i (from 1)
# uses AMQP port 5699+i-1 and distribution port 25699+i-1; epmd listens on 4399. The defaults stay
# clear of RabbitMQ's own so a system RabbitMQ, if any, is never touched. Management plugin off.
set -euo pipefail

BASE=${STYX_BENCH_RABBITMQ_DIR:-${TMPDIR:-/tmp}/styx-bench-rabbitmq}
AMQP_PORT=${STYX_BENCH_RABBITMQ_PORT:-5699}
DIST_PORT=${STYX_BENCH_RABBITMQ_DIST_PORT:-25699}
EPMD_PORT=${STYX_BENCH_RABBITMQ_EPMD_PORT:-4399}
RABBIT_BIN=/usr/lib/rabbitmq/bin
# How long start waits for one node to boot, s.
START_TIMEOUT_S=${STYX_BENCH_RABBITMQ_START_TIMEOUT:-90}
# Most nodes start accepts (each is a whole Erlang VM; the machine has 2 cores).
MAX_NODES=5

die() { echo "rabbitmq.sh: $*" >&2; exit 1; }

node_name() { echo "styx-bench-$1@localhost"; }
node_dir() { echo "$BASE/node-$1"; }
pid_file() { echo "$(node_dir "$1")/rabbitmq.pid"; }

# The environment every rabbitmq command for node $1 runs with: loopback only, our own files.
rabbit_env() {
  local i=$1 dir
  dir=$(node_dir "$i")
  export HOME=$BASE # the Erlang cookie lives in $HOME, shared by the nodes of a cluster
  export RABBITMQ_NODENAME
  RABBITMQ_NODENAME=$(node_name "$i")
  export RABBITMQ_USE_LONGNAME=false
  export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_NODE_PORT=$((AMQP_PORT + i - 1))
  export RABBITMQ_DIST_PORT=$((DIST_PORT + i - 1))
  export ERL_EPMD_ADDRESS=127.0.0.1
  export ERL_EPMD_PORT=$EPMD_PORT
  export RABBITMQ_MNESIA_BASE=$dir/mnesia
  export RABBITMQ_LOG_BASE=$dir/log
  export RABBITMQ_CONFIG_FILE=$dir/rabbitmq.conf
  export RABBITMQ_ADVANCED_CONFIG_FILE=$BASE/advanced.config
  export RABBITMQ_CONF_ENV_FILE=$BASE/rabbitmq-env.conf
  export RABBITMQ_ENABLED_PLUGINS_FILE=$BASE/enabled_plugins
  export RABBITMQ_PID_FILE
  RABBITMQ_PID_FILE=$(pid_file "$i")
  # The Erlang distribution listens on every interface unless told otherwise.
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
  export RABBITMQ_CTL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
}

installed() { [ -x "$RABBIT_BIN/rabbitmq-server" ]; }

cmd_install() {
  if installed; then
    echo "rabbitmq-server is installed: $(dpkg-query -W -f='${Version}' rabbitmq-server 2>/dev/null || echo '?')"
  else
    [ "$(id -u)" = 0 ] || die "install needs root (apt-get)"
    # Keep the package from starting its service while it installs: a policy-rc.d that refuses,
    # only if the machine has none, and removed again afterwards.
    local own_policy=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
      chmod +x /usr/sbin/policy-rc.d
      own_policy=1
    fi
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends rabbitmq-server || {
      [ "$own_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
      die "apt-get install rabbitmq-server failed"
    }
    [ "$own_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
  fi
  # Where the package did start a service (systemd or sysv), stop and disable it: the bench starts
  # its own nodes on their own ports, and another node would compete for the CPU.
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl disable --now rabbitmq-server >/dev/null 2>&1 || true
  elif command -v service >/dev/null 2>&1; then
    service rabbitmq-server stop >/dev/null 2>&1 || true
    command -v update-rc.d >/dev/null 2>&1 && update-rc.d rabbitmq-server disable >/dev/null 2>&1 || true
  fi
  # The package's scripts may leave an epmd on the default port (4369, every interface); stop it
  # when no node is registered with it (ours use their own epmd on loopback).
  if epmd -port 4369 -names 2>/dev/null | grep -q '^epmd: up' &&
    ! epmd -port 4369 -names 2>/dev/null | grep -q '^name '; then
    epmd -port 4369 -kill >/dev/null 2>&1 || true
  fi
}

running() { local f; f=$(pid_file "$1"); [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }

# Starts node $1 in the background and waits until it has booted.
boot_node() (
  local i=$1 dir
  dir=$(node_dir "$i")
  rabbit_env "$i"
  mkdir -p "$dir/mnesia" "$dir/log"
  cat >"$dir/rabbitmq.conf" <<CONF
listeners.tcp.default = 127.0.0.1:$RABBITMQ_NODE_PORT
loopback_users.guest = true
disk_free_limit.absolute = 200MB
log.console = false
log.file.level = warning
CONF
  nohup "$RABBIT_BIN/rabbitmq-server" >"$dir/log/stdout.log" 2>&1 </dev/null &
  local launcher=$! deadline=$((SECONDS + START_TIMEOUT_S))
  while ! [ -s "$RABBITMQ_PID_FILE" ]; do
    kill -0 "$launcher" 2>/dev/null || { tail -n 30 "$dir/log/stdout.log" >&2; die "node $i exited while starting"; }
    [ "$SECONDS" -lt "$deadline" ] || die "node $i: no pid file after ${START_TIMEOUT_S}s"
    sleep 0.2
  done
  "$RABBIT_BIN/rabbitmqctl" -q wait --timeout "$START_TIMEOUT_S" "$RABBITMQ_PID_FILE" >/dev/null ||
    { tail -n 30 "$dir/log/stdout.log" >&2; die "node $i did not finish booting"; }
)

# Makes node $1 join node 1's cluster.
join_node() (
  rabbit_env "$1"
  local ctl="$RABBIT_BIN/rabbitmqctl"
  "$ctl" -q stop_app >/dev/null
  "$ctl" -q join_cluster "$(node_name 1)" >/dev/null || die "node $1 could not join the cluster"
  "$ctl" -q start_app >/dev/null
)

cmd_start() {
  local nodes=${1:-1}
  [[ "$nodes" =~ ^[1-9][0-9]*$ ]] && [ "$nodes" -le "$MAX_NODES" ] || die "NODES must be 1..$MAX_NODES, got '$nodes'"
  installed || die "rabbitmq-server is not installed: run '$0 install' (as root) first"
  if running 1; then die "bench nodes already run; '$0 stop' first"; fi
  # A fresh data dir every start: no queue or message survives from an earlier run.
  rm -rf "$BASE"
  mkdir -p "$BASE"
  echo '[].' >"$BASE/enabled_plugins"
  echo '[].' >"$BASE/advanced.config"
  : >"$BASE/rabbitmq-env.conf"
  # One cookie for every node of the cluster (and for rabbitmqctl), readable by its owner only.
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$BASE/.erlang.cookie"
  chmod 400 "$BASE/.erlang.cookie"
  # epmd of our own, on loopback and our port (a node would otherwise start one on all interfaces).
  epmd -address 127.0.0.1 -port "$EPMD_PORT" -daemon
  local i
  for i in $(seq 1 "$nodes"); do
    boot_node "$i"
    [ "$i" = 1 ] || join_node "$i"
  done
  print_started "$nodes"
}

# The JSON line the bench reads: pids and URLs of nodes 1..$1, the version, the data dir.
print_started() {
  local nodes=$1 i version pids="" urls=""
  version=$(rabbit_env 1; "$RABBIT_BIN/rabbitmqctl" -q eval 'rabbit_misc:version().' 2>/dev/null | tr -d '"' || echo unknown)
  for i in $(seq 1 "$nodes"); do
    pids+="${pids:+,}$(cat "$(pid_file "$i")")"
    urls+="${urls:+,}\"amqp://guest:guest@127.0.0.1:$((AMQP_PORT + i - 1))\""
  done
  printf '{"pids":[%s],"urls":[%s],"version":"%s","dataDir":"%s"}\n' "$pids" "$urls" "$version" "$BASE"
}

# Stops node $1 (rabbitmqctl stop: a clean shutdown), killing it only if that fails.
stop_node() {
  local i=$1 pid
  running "$i" || return 0
  pid=$(cat "$(pid_file "$i")")
  (rabbit_env "$i"; "$RABBIT_BIN/rabbitmqctl" -q stop "$RABBITMQ_PID_FILE" >/dev/null 2>&1) || kill "$pid" 2>/dev/null || true
  # rabbitmqctl stop waits for the pid; wait a little more in case it fell back to kill.
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
}

cmd_stop() {
  installed || exit 0
  local dir
  # Highest node first, so the others never wait for a peer that left.
  for dir in $(ls -d "$BASE"/node-* 2>/dev/null | sort -r); do
    stop_node "${dir##*/node-}"
  done
  # Our epmd only: the one on our port.
  epmd -port "$EPMD_PORT" -kill >/dev/null 2>&1 || true
  rm -rf "$BASE"
}

cmd_status() { running 1; }

# A single node only: restarting one member of a cluster measures something else.
single_node() {
  [ -d "$(node_dir 1)" ] || die "no bench node to restart; '$0 start' first"
  [ ! -d "$(node_dir 2)" ] || die "restart handles a single node, not a cluster"
}

cmd_stop_keep() { single_node; stop_node 1; }

cmd_restart() {
  single_node
  if running 1; then die "node 1 runs; '$0 stop-keep' first"; fi
  boot_node 1
  print_started 1
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start "${2:-1}" ;;
  stop) cmd_stop ;;
  stop-keep) cmd_stop_keep ;;
  restart) cmd_restart ;;
  status) cmd_status ;;
  *) echo "usage: $0 install | start [NODES] | stop | stop-keep | restart | status" >&2; exit 2 ;;
esac
