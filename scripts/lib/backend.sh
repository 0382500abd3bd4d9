# shellcheck shell=bash
# Summary: where a cell's target runs, behind one interface chosen once per run.
#
#   backend_use NAME             netns | compose | external, before the first cell
#   backend_url CELL             the base URL k6 loads
#   backend_start CELL DIR URL   up to a healthy target, with the effective
#                                sysctls recorded (the server's counters are
#                                read by the cell, after its warm-up); on
#                                failure the reason is in CELL_ERROR
#   backend_alive                the target still runs (an external one is not ours to watch)
#   backend_has_server_side      the suite sees the server's namespace (counters, sysctls)
#   backend_access_log DIR       where the running target's access log is read as it is written
#   backend_stop                 stop what backend_start started
#
# netns: the target's JVM in the suite's server namespace (this file).
# compose: the target in a container per cell (backend_compose.sh).
# external: a running target at TARGET_URL, loaded from this host (this file).

# The backend of this run (state of this file; set once by backend_use).
LT_BACKEND_NAME=""

# backend_use NAME: choose the backend for the rest of the run.
backend_use() {
  case "$1" in
    netns | compose | external) LT_BACKEND_NAME="$1" ;;
    *) abort "backend_use: unknown backend '$1'" ;;
  esac
}

backend_url() { "${LT_BACKEND_NAME}_backend_url" "$@"; }
backend_start() { "${LT_BACKEND_NAME}_backend_start" "$@"; }
backend_alive() { "${LT_BACKEND_NAME}_backend_alive"; }
backend_stop() { [[ -z "$LT_BACKEND_NAME" ]] || "${LT_BACKEND_NAME}_backend_stop"; }
backend_has_server_side() { [[ "$LT_BACKEND_NAME" != external ]]; }
backend_access_log() { "${LT_BACKEND_NAME}_backend_access_log" "$@"; }

# netns_backend_access_log CELL_DIR: the target writes its access log into
# the cell's directory (an external target writes none there).
netns_backend_access_log() { printf '%s/%s\n' "$1" "$TARGET_ACCESS_LOG_FILE"; }
external_backend_access_log() { netns_backend_access_log "$@"; }

# --- netns -----------------------------------------------------------------------

netns_backend_url() {
  local -n url_values="$1"
  printf '%s://%s:%s\n' "$(tls_scheme "$1")" "${url_values[SERVER_ADDR]}" "${url_values[SERVER_PORT]}"
}

# netns_backend_start CELL_ASSOC CELL_DIR BASE_URL: fresh namespaces with the
# cell's sysctls, then the target started in the server one and healthy.
netns_backend_start() {
  local -n start_values="$1"
  local cell_dir="$2" base_url="$3"
  netns_down
  cell_step "creating the network namespaces" netns_up "${start_values[SERVER_ADDR]}" \
    "$(netns_client_addresses "${start_values[CLIENT_ADDR]}" "${start_values[CLIENT_ADDRESSES]}")" || return 1
  cell_step "setting the sysctls" netns_apply_sysctls start_values || return 1
  # A jar of one's own without its start archive: one training start first
  # (marked train_start..train_end, before target_start).
  target_train start_values "$cell_dir" "$base_url"
  phase_mark "$cell_dir" target_start
  target_start start_values "$cell_dir/target.log"
  # While the JVM starts: the effective sysctls (set above, read only).
  cell_step "reading the effective sysctls" record_sysctls "$cell_dir" || return 1
  local side url output_tail
  read -r side url < <(target_health_probe start_values "$base_url")
  if ! target_wait_healthy "$url" "${start_values[TARGET_START_TIMEOUT]}" target_alive \
    "$cell_dir/target.log" "$side" "$(target_health_hint start_values)"; then
    if ! target_alive; then
      target_exit_reason "$cell_dir/target.log"
    elif [[ "$CELL_ERROR" == "target did not answer"* ]]; then
      output_tail="$(target_log_tail "$cell_dir/target.log")"
      cell_error "$CELL_ERROR""${output_tail:+; $output_tail}"
    fi
    return 1
  fi
  # Healthy: what follows (its CPU, the connector check) is the suite's own,
  # after the target's start.
  phase_mark "$cell_dir" target_healthy
  # The CPU time the start took (less shaken by a busy machine than its wall time).
  target_record_start_cpu "$cell_dir/target-start.txt"
  # The effective connector settings against the cell's, where the app shows
  # them: the suite's own target logged them as it started.
  target_check_connector start_values "$cell_dir/target.log" | write_atomic "$cell_dir/connector.json" || true
}

netns_backend_alive() { target_alive; }
netns_backend_stop() { target_stop; }

# --- external --------------------------------------------------------------------

external_backend_url() {
  local -n url_values="$1"
  printf '%s\n' "${url_values[TARGET_URL]%/}"
}

# external_backend_start CELL_ASSOC CELL_DIR BASE_URL: an external target is not
# started, only checked: its TARGET_HEALTH_PATH must answer. The host's counters are
# shared with everything else on it, so the deltas are noisier.
external_backend_start() {
  local -n ext_values="$1"
  local cell_dir="$2" url="${ext_values[TARGET_URL]%/}${ext_values[TARGET_HEALTH_PATH]}"
  printf 'external target %s: not started by the suite\n' "${ext_values[TARGET_URL]}" >"$cell_dir/target.log"
  if ! curl -fsS -o /dev/null --max-time 5 "$url" 2>>"$cell_dir/target.log"; then
    cell_error "external target does not answer $url"
    return 1
  fi
}


external_backend_alive() { return 0; }
external_backend_stop() { return 0; }
