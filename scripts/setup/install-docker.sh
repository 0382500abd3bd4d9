#!/usr/bin/env bash
# Summary: install Debian's Docker engine and compose client if missing, and start an engine if none answers.
# Usage: scripts/setup/install-docker.sh [start|stop|status]
#
# start (the default): apt-get install docker.io and docker-compose when
#   they are missing; then, unless a Docker engine already answers, start
#   dockerd with its data, state, pid file and log under .data/docker/
#   (LT_DOCKER_DIR). It uses the vfs storage driver and no bridge and no
#   iptables rules, so it works without overlayfs and leaves the host's
#   network settings alone; the suite's containers need no Docker network.
# stop: stop the dockerd that start started, by its pid, and nothing else.
# status: say whether an engine answers and whether it is the one start started.
set -euo pipefail
LT_PROG=install-docker
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=scripts/lib/compose.sh
source "$LT_ROOT/scripts/lib/compose.sh"

readonly DOCKER_DIR="${LT_DOCKER_DIR:-$LT_ROOT/.data/docker}"
readonly DOCKER_PID_FILE="$DOCKER_DIR/dockerd.pid"
readonly DOCKER_LOG="$DOCKER_DIR/dockerd.log"
# Seconds a fresh dockerd may take to answer, and a stopping one to exit.
readonly DOCKER_START_TIMEOUT="${DOCKER_START_TIMEOUT:-60}"
readonly DOCKER_STOP_TIMEOUT=30

main() {
  local command="${1:-start}"
  [[ $# -le 1 ]] || usage_error "one command at most: start, stop or status"
  case "$command" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    -h | --help) print_summary "${BASH_SOURCE[0]}" ;;
    *) usage_error "unknown command '$command' (start, stop or status)" ;;
  esac
}

# cmd_start: install what is missing, then make sure an engine answers.
cmd_start() {
  install_missing_packages
  if docker_engine_answers; then
    say "a Docker engine answers ($(engine_description))"
    return 0
  fi
  [[ $EUID -eq 0 ]] || abort "no Docker engine answers and starting one needs root; run as root"
  if ! our_dockerd_pid >/dev/null; then
    start_dockerd
  fi
  wait_for_engine
  say "started dockerd (pid $(our_dockerd_pid), data in ${DOCKER_DIR#"$LT_ROOT"/}, log ${DOCKER_LOG#"$LT_ROOT"/}); 'make docker-down' stops it"
}

# cmd_stop: SIGTERM to the dockerd that start started (it stops its
# containerd and containers itself), SIGKILL if it is still there after
# DOCKER_STOP_TIMEOUT seconds.
cmd_stop() {
  local pid
  if ! pid="$(our_dockerd_pid)"; then
    say "nothing to stop: no dockerd started by this script is running"
    rm -f "$DOCKER_PID_FILE"
    return 0
  fi
  say "stopping dockerd (pid $pid)"
  stop_pid "$pid" "$DOCKER_STOP_TIMEOUT" || warn "dockerd (pid $pid) did not exit within ${DOCKER_STOP_TIMEOUT}s; killed it"
  rm -f "$DOCKER_PID_FILE"
}

# cmd_status: which engine answers; fails when none does.
cmd_status() {
  local pid
  if pid="$(our_dockerd_pid)"; then
    say "dockerd started by this script: running, pid $pid, data in ${DOCKER_DIR#"$LT_ROOT"/}"
  fi
  if docker_engine_answers; then
    say "a Docker engine answers ($(engine_description))"
  else
    say "no Docker engine answers; 'make docker-up' starts one"
    return "$EX_FAILURE"
  fi
}

# install_missing_packages: docker.io (engine and client) and docker-compose
# from Debian, when the commands are missing. A client alone (no dockerd)
# is not enough when no engine answers, so dockerd counts as missing then.
install_missing_packages() {
  local -a wanted=()
  command -v docker >/dev/null || wanted+=(docker.io)
  if ! command -v dockerd >/dev/null && ! docker_engine_answers; then
    wanted+=(docker.io)
  fi
  if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null; then
    wanted+=(docker-compose)
  fi
  [[ ${#wanted[@]} -eq 0 ]] && return 0
  mapfile -t wanted < <(printf '%s\n' "${wanted[@]}" | sort -u)
  command -v apt-get >/dev/null || abort "missing: ${wanted[*]}; install a Docker engine and a compose client"
  [[ $EUID -eq 0 ]] || abort "missing: ${wanted[*]}; run as root or: sudo apt-get install ${wanted[*]}"
  say "installing ${wanted[*]} with apt-get"
  apt_install_without_starting "${wanted[@]}"
}

# apt_install_without_starting PACKAGE...: apt-get install. Without systemd
# and without a policy-rc.d, docker.io's maintainer script would start a
# dockerd with the distribution's settings (overlay storage, a bridge and
# iptables rules on the host); a policy-rc.d that says "no" for the length
# of the install prevents that, as Debian documents for chroots.
apt_install_without_starting() {
  local policy=/usr/sbin/policy-rc.d added_policy=0 status=0
  if [[ ! -d /run/systemd/system && ! -e "$policy" ]]; then
    printf '#!/bin/sh\n# Written by %s for one apt-get install; removed after it.\nexit 101\n' "$0" >"$policy"
    chmod 755 "$policy"
    added_policy=1
  fi
  {
    apt-get update -qq >&2 \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
  } || status=$?
  ((added_policy)) && rm -f "$policy"
  ((status == 0)) || abort "apt-get install $* failed"
}

# start_dockerd: dockerd in the background, in its own session (a Ctrl-C
# aimed at the caller does not stop the engine under a run), with fd 3
# closed (a test runner waits for every holder of its fd 3 to finish).
start_dockerd() {
  command -v dockerd >/dev/null || abort "dockerd not found after installing docker.io"
  local exec_root="$DOCKER_DIR/exec"
  # containerd's socket lives under exec-root and a unix socket path has at
  # most 107 bytes: a deep checkout gets a short exec-root under /run.
  if ((${#exec_root} > 60)); then
    exec_root="/run/ltsuite-docker-$(printf '%s' "$DOCKER_DIR" | sha256sum | cut -c1-12)"
  fi
  mkdir -p "$DOCKER_DIR/root" "$exec_root"
  say "starting dockerd (vfs storage, no bridge, no iptables; data in ${DOCKER_DIR#"$LT_ROOT"/})"
  setsid dockerd \
    --data-root "$DOCKER_DIR/root" \
    --exec-root "$exec_root" \
    --pidfile "$DOCKER_PID_FILE" \
    --storage-driver vfs \
    --bridge none \
    --iptables=false \
    --ip-forward=false \
    --ip-masq=false \
    >"$DOCKER_LOG" 2>&1 </dev/null 3>&- &
  DOCKERD_STARTED_PID=$!
}

# wait_for_engine: wait until `docker info` answers; abort with the log's
# last lines if dockerd exits or DOCKER_START_TIMEOUT passes.
wait_for_engine() {
  local deadline=$((SECONDS + DOCKER_START_TIMEOUT))
  while ((SECONDS < deadline)); do
    docker_engine_answers && return 0
    if [[ -n "${DOCKERD_STARTED_PID:-}" ]] && ! kill -0 "$DOCKERD_STARTED_PID" 2>/dev/null; then
      abort "dockerd exited during start-up: $(tail -n 3 "$DOCKER_LOG" | tr '\n' ' ' | cut -c1-400)"
    fi
    sleep 0.5
  done
  abort "dockerd did not answer within ${DOCKER_START_TIMEOUT}s (log: $DOCKER_LOG): $(tail -n 1 "$DOCKER_LOG" | cut -c1-200)"
}

# our_dockerd_pid: print the pid of the dockerd that start started, if it
# still runs. The pid file alone is not trusted: the process must be a
# dockerd with this data root (a reused pid is someone else's).
our_dockerd_pid() {
  local pid cmdline
  [[ -s "$DOCKER_PID_FILE" ]] || return 1
  pid="$(cat "$DOCKER_PID_FILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ "$cmdline" == dockerd\ * && "$cmdline" == *"--data-root $DOCKER_DIR/root "* ]] || return 1
  printf '%s\n' "$pid"
}

# engine_description: "Docker 20.10.24, storage vfs" of the answering engine.
engine_description() {
  docker info --format 'Docker {{.ServerVersion}}, storage {{.Driver}}, data {{.DockerRootDir}}' 2>/dev/null
}

main "$@"
