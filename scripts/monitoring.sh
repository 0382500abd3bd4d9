#!/usr/bin/env bash
# Summary: start, stop or check the InfluxDB (+ Grafana) that stores the runs' metrics; send a finished run to it.
# Usage: scripts/monitoring.sh up [--native|--compose] | down | status | ship RUN_DIR
#        INFLUXDB_URL and INFLUXDB_DB default to env/defaults.env; state lives in LT_DATA_DIR (.data/)
#        MONITORING_STACK=native|compose chooses as --native|--compose do
#
# up: docker compose (InfluxDB + Grafana, compose/) when a Docker engine
# answers and has the stack's images (in its store, or pulled from a
# registry), otherwise a native influxd (.tools/bin, built by
# scripts/setup/install-influxd.sh) bound to 127.0.0.1 with its data in
# .data/influxdb, saying why. down stops what up started. ship sends a run's
# files (written while no InfluxDB was up) after the fact.
set -euo pipefail

LT_PROG=monitoring
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for lib in envfile matrix results manifest monitoring compose; do
  # shellcheck source=/dev/null
  source "$LT_ROOT/scripts/lib/$lib.sh"
done

readonly COMPOSE_FILE="$LT_ROOT/compose/docker-compose.yml"
readonly COMPOSE_ENV="$LT_ROOT/compose/.env"
readonly COMPOSE_PROJECT=ltsuite
readonly LT_DATA_DIR="${LT_DATA_DIR:-$LT_ROOT/.data}"
readonly INFLUX_DIR="$LT_DATA_DIR/influxdb"
readonly INFLUX_PID_FILE="$INFLUX_DIR/influxd.pid"
# Present while the compose stack started by up runs, so down stops only that.
readonly COMPOSE_MARKER="$LT_DATA_DIR/compose.started"
readonly LT_INFLUXD="${LT_INFLUXD:-$LT_ROOT/.tools/bin/influxd}"
# Seconds influxd may take to answer /ping (it loads its index first).
readonly INFLUX_START_TIMEOUT="${INFLUX_START_TIMEOUT:-60}"

INFLUX_URL=""
INFLUX_DB=""

main() {
  local command="${1:-}"
  [[ $# -gt 0 ]] && shift
  case "$command" in
    -h | --help)
      print_summary "${BASH_SOURCE[0]}"
      return 0
      ;;
    "") usage_error "a command is needed: up, down, status or ship RUN_DIR" ;;
  esac
  read_settings
  case "$command" in
    up) cmd_up "$@" ;;
    down) cmd_down ;;
    status) cmd_status ;;
    ship) cmd_ship "$@" ;;
    *) usage_error "unknown command '$command' (up, down, status, ship RUN_DIR)" ;;
  esac
}

# read_settings: INFLUXDB_URL and INFLUXDB_DB from the environment, else from
# env/defaults.env, so make up and make run-matrix agree without repeating.
read_settings() {
  local key why
  knobs_load "$LT_ROOT/env/defaults.env"
  for key in INFLUXDB_URL INFLUXDB_DB; do
    if [[ -n "${!key:-}" ]] && ! why="$(envfile_check_type "${KNOB_TYPE[$key]}" "${!key}")"; then
      usage_error "$key: $why"
    fi
  done
  INFLUX_URL="${INFLUXDB_URL:-${KNOB_DEFAULT[INFLUXDB_URL]}}"
  # A user and password go to curl on a pipe (monitoring_curl_config), never
  # into a message or onto a command line.
  # shellcheck disable=SC2034 # SC2034: read by monitoring.sh (the library)
  MONITORING_CREDENTIALS="$(url_credentials "$INFLUX_URL")"
  INFLUX_URL="$(url_without_credentials "$INFLUX_URL")"
  INFLUX_URL="${INFLUX_URL%/}"
  INFLUX_DB="${INFLUXDB_DB:-${KNOB_DEFAULT[INFLUXDB_DB]}}"
}

# cmd_up [--native|--compose]: start InfluxDB (and Grafana with compose).
# Without an option, MONITORING_STACK (native, compose; empty: choose) decides.
cmd_up() {
  local how="${1:-}" why
  [[ $# -le 1 ]] || usage_error "up takes one option at most: --native or --compose"
  if [[ -z "$how" ]]; then
    case "${MONITORING_STACK:-}" in
      "") how=auto ;;
      native | compose) how="--$MONITORING_STACK" ;;
      *) usage_error "MONITORING_STACK='$MONITORING_STACK': use native, compose, or leave it empty to choose" ;;
    esac
  fi
  case "$how" in
    --native) native_up ;;
    --compose)
      docker_engine_answers || abort "no Docker engine answers ('docker info' fails); start one or use: $0 up --native"
      compose_find || abort "no compose client; scripts/setup/install-compose.sh installs one"
      why="$(compose_images_get)" || abort "$why; MONITORING_STACK=native (or up --native) runs InfluxDB without Docker"
      compose_up
      ;;
    auto)
      if ! docker_engine_answers; then
        native_up
      elif ! compose_find; then
        warn "a Docker engine answers but there is no compose client (scripts/setup/install-compose.sh installs one); starting InfluxDB natively, without Grafana"
        native_up
      elif ! why="$(compose_images_get)"; then
        warn "a Docker engine answers but $why; starting InfluxDB natively, without Grafana (MONITORING_STACK=compose makes this an error)"
        native_up
      else
        compose_up
      fi
      ;;
    *) usage_error "unknown option '$how' (--native or --compose)" ;;
  esac
}

# cmd_down: stop what up started here (the native influxd by its pid, the
# compose stack if up used compose), nothing else. Data stays (.data/,
# named volumes).
cmd_down() {
  local stopped=0
  if [[ -e "$INFLUX_PID_FILE" ]]; then
    native_down
    stopped=1
  fi
  if [[ -e "$COMPOSE_MARKER" ]]; then
    docker_engine_answers || abort "the compose stack was started here but no Docker engine answers now"
    compose_find || abort "the compose stack was started here but there is no compose client now"
    say "stopping the compose stack (volumes are kept)"
    compose_run down
    rm -f "$COMPOSE_MARKER"
    stopped=1
  fi
  ((stopped)) || say "nothing to stop: 'make up' started nothing here"
}

# cmd_status: what runs and whether InfluxDB answers; fails if it does not.
cmd_status() {
  local pid
  if pid="$(native_pid)"; then
    say "native influxd: running, pid $pid, data in ${INFLUX_DIR#"$LT_ROOT"/}"
  else
    say "native influxd: not running"
  fi
  if [[ -e "$COMPOSE_MARKER" ]] && docker_engine_answers && compose_find; then
    compose_run ps >&2
  fi
  if monitoring_ping "$INFLUX_URL"; then
    say "InfluxDB answers at $INFLUX_URL (runs store their metrics in database $INFLUX_DB)"
  else
    say "no InfluxDB answers at $INFLUX_URL; 'make up' starts one"
    return "$EX_FAILURE"
  fi
}

# cmd_ship RUN_DIR: send every finished cell of a run to InfluxDB.
cmd_ship() {
  [[ $# -eq 1 ]] || usage_error "ship takes one run directory (results/<run-id>)"
  local run_dir="${1%/}" run_id cell_dir scenario total=0
  [[ -f "$run_dir/manifest.json" ]] || usage_error "$run_dir: not a run directory (no manifest.json)"
  run_format_check "$run_dir"
  monitoring_ping "$INFLUX_URL" || abort "no InfluxDB answers at $INFLUX_URL; 'make up' starts one"
  monitoring_create_db "$INFLUX_URL" "$INFLUX_DB" || abort "cannot create database $INFLUX_DB at $INFLUX_URL"
  run_id="$(jq -r '.run_id // empty' "$run_dir/manifest.json")"
  run_id="${run_id:-$(basename "$run_dir")}"
  for cell_dir in "$run_dir"/cells/*/; do
    cell_dir="${cell_dir%/}"
    [[ -f "$cell_dir/row.json" ]] || continue
    scenario="$(jq -r '.scenario // "none"' "$cell_dir/row.json")"
    monitoring_ship_cell "$INFLUX_URL" "$INFLUX_DB" "$run_id" "$cell_dir" "$scenario" \
      || abort "$(basename "$cell_dir"): $MONITORING_ERROR"
    say "$(basename "$cell_dir"): $MONITORING_POINTS points"
    total=$((total + MONITORING_POINTS))
  done
  say "run $run_id: $total points to $INFLUX_URL, database $INFLUX_DB"
}

# --- native influxd ---------------------------------------------------------------

# native_up: start influxd on INFLUX_URL's loopback address and port, wait
# for /ping, create the database.
native_up() {
  local host port pid
  [[ "$INFLUX_URL" =~ ^http://(127\.[0-9]+\.[0-9]+\.[0-9]+|localhost):([0-9]+)$ ]] \
    || usage_error "INFLUXDB_URL=$INFLUX_URL: a native InfluxDB listens on the loopback only (http://127.0.0.1:PORT)"
  host="${BASH_REMATCH[1]/localhost/127.0.0.1}"
  port="${BASH_REMATCH[2]}"
  if pid="$(native_pid)"; then
    say "InfluxDB already runs (pid $pid) at $INFLUX_URL"
  elif monitoring_ping "$INFLUX_URL"; then
    say "an InfluxDB not started by this script already answers at $INFLUX_URL; using it"
  else
    [[ -x "$LT_INFLUXD" ]] || "$LT_ROOT/scripts/setup/install-influxd.sh"
    mkdir -p "$INFLUX_DIR"
    native_config "$host" "$port" "$(free_loopback_port "$host" $((port + 2)))" \
      | write_atomic "$INFLUX_DIR/influxdb.conf"
    native_start
    say "InfluxDB 1.8 at $INFLUX_URL (pid $(cat "$INFLUX_PID_FILE"), data and log in ${INFLUX_DIR#"$LT_ROOT"/}); 'make down' stops it"
  fi
  monitoring_create_db "$INFLUX_URL" "$INFLUX_DB" || abort "cannot create database $INFLUX_DB at $INFLUX_URL"
  say "runs store their metrics in database $INFLUX_DB (MONITORING=auto finds it)"
}

# native_config HOST HTTP_PORT RPC_PORT: influxd's configuration. Every
# listener on the loopback, no usage reporting, no _internal statistics
# (they would write in the background of every measurement).
native_config() {
  local host="$1" http_port="$2" rpc_port="$3"
  cat <<EOF
# Written by scripts/monitoring.sh; rewritten on every start.
reporting-disabled = true
bind-address = "$host:$rpc_port"

[meta]
  dir = "$INFLUX_DIR/meta"

[data]
  dir = "$INFLUX_DIR/data"
  wal-dir = "$INFLUX_DIR/wal"
  query-log-enabled = false

[http]
  bind-address = "$host:$http_port"
  auth-enabled = false
  log-enabled = false
  flux-enabled = true

[monitor]
  store-enabled = false
EOF
}

# native_start: influxd in its own session (so the caller's Ctrl-C or exit
# leaves it running), pid in INFLUX_PID_FILE, back when /ping answers.
native_start() {
  local pid deadline
  setsid "$LT_INFLUXD" run -config "$INFLUX_DIR/influxdb.conf" >>"$INFLUX_DIR/influxd.log" 2>&1 </dev/null &
  pid=$!
  printf '%s\n' "$pid" >"$INFLUX_PID_FILE"
  deadline=$((SECONDS + INFLUX_START_TIMEOUT))
  until monitoring_ping "$INFLUX_URL"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$INFLUX_PID_FILE"
      abort "influxd exited during start-up; last log lines:"$'\n'"$(tail -n 5 "$INFLUX_DIR/influxd.log")"
    fi
    if ((SECONDS >= deadline)); then
      abort "influxd (pid $pid) did not answer $INFLUX_URL/ping within ${INFLUX_START_TIMEOUT}s; see $INFLUX_DIR/influxd.log"
    fi
    sleep 0.2
  done
}

# native_pid: print the pid of the influxd this script started, if it runs.
# The command line must name influxd, so a recycled pid is never taken for it.
native_pid() {
  local pid
  [[ -s "$INFLUX_PID_FILE" ]] || return 1
  pid="$(cat "$INFLUX_PID_FILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q influxd || return 1
  printf '%s\n' "$pid"
}

# native_down: SIGTERM to our influxd (SIGKILL after 15 s), then forget it.
native_down() {
  local pid
  if ! pid="$(native_pid)"; then
    say "native InfluxDB is not running (stale ${INFLUX_PID_FILE#"$LT_ROOT"/} removed)"
    rm -f "$INFLUX_PID_FILE"
    return 0
  fi
  stop_pid "$pid" 15 || warn "influxd (pid $pid) ignored SIGTERM for 15 s; killed it"
  rm -f "$INFLUX_PID_FILE"
  say "stopped InfluxDB (pid $pid); its data stays in ${INFLUX_DIR#"$LT_ROOT"/}"
}

# free_loopback_port HOST START: the first port from START on that nothing
# listens on at HOST (influxd's backup service needs one besides HTTP).
free_loopback_port() {
  local host="$1" port="$2"
  while [[ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]]; do
    port=$((port + 1))
    ((port < 65535)) || abort "no free port on $host for influxd's backup service"
  done
  printf '%s\n' "$port"
}

# --- docker compose ------------------------------------------------------------------

# compose_run ARGS...: compose on compose/docker-compose.yml. Without a
# compose/.env (nothing was started with it) a placeholder password lets
# commands such as down read the file; up always has the real one.
compose_run() {
  if [[ -f "$COMPOSE_ENV" ]]; then
    "${COMPOSE[@]}" -p "$COMPOSE_PROJECT" -f "$COMPOSE_FILE" "$@"
  else
    GRAFANA_ADMIN_PASSWORD=unused "${COMPOSE[@]}" -p "$COMPOSE_PROJECT" -f "$COMPOSE_FILE" "$@"
  fi
}

# compose_images_get: make sure the engine has the stack's images (those
# of compose/docker-compose.yml): from its store, else pulled (5 minutes at
# most each). Fails with the reason on stdout, e.g. when no registry answers.
compose_images_get() {
  local image error
  while IFS= read -r image; do
    docker image inspect "$image" </dev/null >/dev/null 2>&1 && continue
    say "pulling $image"
    if ! error="$(timeout 300 docker pull -q "$image" </dev/null 2>&1 >/dev/null)"; then
      printf 'image %s is not in its store and cannot be pulled (%s)' "$image" \
        "$(printf '%s' "${error:-timed out}" | tr '\n' ' ' | cut -c1-200)"
      return 1
    fi
  done < <(sed -n 's/^ *image: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$COMPOSE_FILE")
}

# compose_up: InfluxDB and Grafana (not the target and k6 profiles).
compose_up() {
  compose_env_file
  say "starting InfluxDB and Grafana with ${COMPOSE[*]} (images are built or taken from the local store)"
  mkdir -p "$LT_DATA_DIR"
  touch "$COMPOSE_MARKER"
  # InfluxDB's host port follows INFLUXDB_URL, so runs find it where they look.
  INFLUXDB_DB="$INFLUX_DB" INFLUXDB_PORT="$(url_port "$INFLUX_URL")" compose_run up -d influxdb grafana
  local deadline=$((SECONDS + INFLUX_START_TIMEOUT))
  until monitoring_ping "$INFLUX_URL"; do
    ((SECONDS < deadline)) || abort "InfluxDB did not answer $INFLUX_URL/ping within ${INFLUX_START_TIMEOUT}s; see: ${COMPOSE[*]} -p $COMPOSE_PROJECT logs influxdb"
    sleep 0.5
  done
  monitoring_create_db "$INFLUX_URL" "$INFLUX_DB" || abort "cannot create database $INFLUX_DB at $INFLUX_URL"
  say "InfluxDB at $INFLUX_URL (database $INFLUX_DB); Grafana at http://127.0.0.1:$(compose_env_value GRAFANA_PORT 3000)"
  say "Grafana user $(compose_env_value GRAFANA_ADMIN_USER admin), password in ${COMPOSE_ENV#"$LT_ROOT"/} (GRAFANA_ADMIN_PASSWORD)"
}

# url_port URL: the port of an http URL (80 when it names none).
url_port() {
  local rest="${1#*://}"
  rest="${rest%%/*}"
  if [[ "$rest" =~ :([0-9]+)$ ]]; then
    printf '%s\n' "${BASH_REMATCH[1]}"
  else
    printf '80\n'
  fi
}

# compose_env_file: compose/.env from the example, with a random Grafana
# admin password, unless it exists. Only its owner can read it.
compose_env_file() {
  local password
  [[ -f "$COMPOSE_ENV" ]] && return 0
  password="$(head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | cut -c1-24)"
  (
    umask 077
    sed "s/^GRAFANA_ADMIN_PASSWORD=.*/GRAFANA_ADMIN_PASSWORD=$password/" \
      "$LT_ROOT/compose/.env.example" >"$COMPOSE_ENV"
  )
  say "wrote ${COMPOSE_ENV#"$LT_ROOT"/} with a random Grafana admin password (it is git-ignored)"
}

# compose_env_value KEY DEFAULT: KEY's value in compose/.env, else DEFAULT.
compose_env_value() {
  local value
  value="$(sed -n "s/^$1=//p" "$COMPOSE_ENV" 2>/dev/null | tail -n 1)"
  printf '%s\n' "${value:-$2}"
}

main "$@"
