# shellcheck shell=bash
# Summary: the proxy of a cell (PROXY=nginx): nginx between the users and the
# target, in the server namespace on PROXY_PORT.
#
# Its config is rendered from the cell's settings by ltsuite.proxy into the
# cell's directory (nginx.conf), with its pid, logs and temp files there too;
# it runs in the foreground (daemon off), so the pid kept here is its master's,
# and it is stopped by that pid at the cell's end. The users load its URL
# (proxy_url); the target keeps its own port. Needs common.sh and netns.sh.

# The running nginx: state of this file only, read by proxy_stop.
PROXY_PID=""
# nginx's knobs: set (not left at their defaults) in a matrix where no cell
# has PROXY=nginx, they would change nothing, so the run is refused.
readonly PROXY_KNOBS=(PROXY_PORT PROXY_UPSTREAM_KEEPALIVE PROXY_CLIENT_KEEPALIVE_TIMEOUT PROXY_CONNECT_TIMEOUT
  PROXY_READ_TIMEOUT PROXY_BACKLOG PROXY_WORKER_CONNECTIONS PROXY_TLS)

# proxy_knob_problems ORIGIN_ASSOC VALUE_ASSOC: "WHERE: KEY: why", one a
# line, for each of nginx's knobs set where no cell puts nginx in front
# (PROXY, an axis included). WHERE is the knob's origin (file:line).
proxy_knob_problems() {
  local -n pk_origin="$1" pk_value="$2"
  local key
  if [[ " ${pk_value[PROXY]:-none} " == *" nginx "* ]]; then
    _proxy_port_clash "$1" "$2"
    return 0
  fi
  for key in "${PROXY_KNOBS[@]}"; do
    [[ "${pk_origin[$key]:-defaults}" == defaults ]] \
      || printf '%s: %s: a setting of nginx in front, but PROXY is %s (%s) in every cell; set PROXY=nginx or remove %s\n' \
        "${pk_origin[$key]}" "$key" "${pk_value[PROXY]:-none}" "${pk_origin[PROXY]:-defaults}" "$key"
  done
}

# _proxy_port_clash ORIGIN_ASSOC VALUE_ASSOC: a PROXY_PORT that is also the
# target's SERVER_PORT or MANAGEMENT_PORT (any may be an axis), in a matrix
# where some cell has nginx in front: nginx could not bind it, and the load
# would go straight to Tomcat. Named where PROXY_PORT was set.
_proxy_port_clash() {
  local -n pc_origin="$1" pc_value="$2"
  local proxy other port
  for proxy in ${pc_value[PROXY_PORT]:-}; do
    for other in SERVER_PORT MANAGEMENT_PORT; do
      for port in ${pc_value[$other]:-}; do
        ((10#$proxy != 10#$port)) && continue
        printf "%s: PROXY_PORT: %s is %s too (%s); nginx needs a port of its own\n" \
          "${pc_origin[PROXY_PORT]:-defaults}" "$proxy" "$other" "${pc_origin[$other]:-defaults}"
        return 0
      done
    done
  done
}

# proxy_wanted CELL_ASSOC: succeed when the cell puts nginx in front.
proxy_wanted() {
  local -n px_values="$1"
  [[ "${px_values[PROXY]:-none}" == nginx ]]
}

# proxy_url CELL_ASSOC BASE_URL: the URL the users load: nginx's with a
# proxy, BASE_URL (the target's) without.
proxy_url() {
  local -n pu_values="$1"
  if proxy_wanted "$1"; then
    local scheme=http
    [[ "${pu_values[PROXY_TLS]:-0}" != 1 ]] || scheme=https
    printf '%s://%s:%s\n' "$scheme" "${pu_values[SERVER_ADDR]}" "${pu_values[PROXY_PORT]}"
  else
    printf '%s\n' "$2"
  fi
}

# proxy_start CELL_ASSOC CELL_DIR: when the cell asks for it, nginx started
# in the server namespace and listening before it returns. On failure the
# reason is in CELL_ERROR.
proxy_start() {
  local -n ps_values="$1"
  local cell_dir="$2" tries
  proxy_wanted "$1" || return 0
  if [[ "$NETNS_HOST_MODE" == 1 ]]; then
    cell_error "PROXY=nginx needs the server namespace (not an external TARGET_URL)"
    return 1
  fi
  mkdir -p "$cell_dir/nginx-temp"
  if ! PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -S -m ltsuite.proxy config "$cell_dir" \
    2>>"$cell_dir/nginx.out" | write_atomic "$cell_dir/nginx.conf"; then
    cell_error "cannot write nginx's config ($(tail -n 1 "$cell_dir/nginx.out" 2>/dev/null))"
    return 1
  fi
  # A simple command in the background, so $! is nginx's master itself.
  # The run lock (fd 9) stays with the runner.
  ip netns exec "$(netns_name server)" nginx -e "$cell_dir/nginx-error.log" -c "$cell_dir/nginx.conf" \
    9>&- >>"$cell_dir/nginx.out" 2>&1 &
  PROXY_PID=$!
  for ((tries = 0; tries < 100; tries++)); do
    if ! kill -0 "$PROXY_PID" 2>/dev/null; then
      cell_error "nginx did not start ($(tail -n 1 "$cell_dir/nginx-error.log" 2>/dev/null))"
      PROXY_PID=""
      return 1
    fi
    # nginx's own listener: its master's pid on the port, not another's.
    [[ "$(netns_exec server ss -Hltnp "sport = :${ps_values[PROXY_PORT]}")" == *"pid=$PROXY_PID,"* ]] && return 0
    sleep 0.1
  done
  cell_error "nginx did not listen on port ${ps_values[PROXY_PORT]} within 10 s"
  return 1
}

# proxy_check CELL_ASSOC USERS_URL: when nginx is in front, the users' path
# asked from the users' namespace before the load, as the target's start was
# (target_wait_healthy: the health path, on a port of the suite's own, for up
# to 5 s while nginx runs): the proxy answers the way the users will ask it,
# and its first request is not a user's. On failure the reason is in CELL_ERROR.
proxy_check() {
  local -n pc_values="$1"
  proxy_wanted "$1" || return 0
  target_wait_healthy "$2${pc_values[TARGET_HEALTH_PATH]}" 5 proxy_alive && return 0
  cell_error "through nginx: $CELL_ERROR"
  return 1
}

# proxy_alive: succeed when no proxy was started, or it still runs.
proxy_alive() {
  [[ -z "$PROXY_PID" ]] || kill -0 "$PROXY_PID" 2>/dev/null
}

# proxy_stop: stop nginx (TERM: a fast shutdown of its master and workers).
proxy_stop() {
  end_child_in PROXY_PID TERM 10
}
