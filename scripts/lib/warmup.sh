# shellcheck shell=bash
# Summary: a cell's warm-up (WARMUP): the target asked at the users' URL before the measured load.
#
# After the target is healthy and nginx and the delayer started (users pass
# them), before the counters' first snapshots and the sampler: k6 runs
# scenarios/lib/warmup.js from the client namespace for WARMUP, a few VUs each on
# one kept-alive connection. Its output is its own (warmup.log,
# warmup-summary.json), never the load's; once k6 ends, its connections are
# let close (warmup_settle) and the TIME-WAIT sockets they left towards the
# users' port are removed (warmup_clear, ss -K: sock_diag's SOCK_DESTROY),
# so the load's TIME-WAIT and port figures stay its own, and the delayer
# (NET_*) starts its count again (netdelay_restart). The warm-up's
# sockets are those of the client namespace's ephemeral range: the runner's
# own (health checks, k6's dashboard) take ports outside it (netns.sh).
#
# Needs common.sh, netns.sh (and the netdelay.sh it sources), k6.sh, live.sh
# and cell.sh (phase_mark).

# The warm-up's k6 (state of this file: warmup_stop ends it).
WARMUP_PID=""
# Seconds the warm-up's connections may take to close once its k6 ended.
readonly WARMUP_SETTLE_S=3

# warmup_run CELL_ASSOC CELL_DIR USERS_URL USERS_PORT TARGET_PORT EXPECTED_S:
# the warm-up of the cell (nothing at WARMUP=0s), marked
# warmup_start..warmup_end in its phases.tsv. TARGET_PORT: the target's port
# when nginx is in front (USERS_PORT nginx's), so its connections to the
# target are seen to too. EXPECTED_S: the load's planned seconds, for the
# live line a watched warm-up's process goes on to show (live_start_with_warmup).
# Fails, the reason in CELL_ERROR, when its k6 does not end at 0 or 99; a
# request that failed is a figure of the row (warmup_failed_reqs), not a
# failed cell.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
warmup_run() {
  local -n warm_values="$1"
  local cell_dir="$2" users_url="$3" users_port="$4" target_port="${5:-$4}" expected_s="${6:-0}"
  local seconds status=0 first start_ms limit_s until
  seconds="$(k6_duration_seconds "${warm_values[WARMUP]:-0s}")"
  ((seconds > 0)) || return 0
  start_ms="${EPOCHREALTIME/[.,]/}"
  start_ms="${start_ms%???}"
  limit_s="$((seconds + $(k6_duration_seconds "${warm_values[REQUEST_TIMEOUT]}") + 30))"
  phase_mark "$cell_dir" warmup_start
  until="${warm_values[WARMUP_UNTIL]:-time}"
  warmup_k6_start warm_values "$cell_dir" "$users_url" "$limit_s"
  if [[ "$until" == settled || "$until" == count ]]; then
    # The rule is watched, and k6 ended by it, by the cell's live process.
    local -a rule=()
    [[ "$until" != count ]] || rule=("${warm_values[WARMUP_REQUESTS]}")
    live_start_with_warmup "$cell_dir" "$(backend_access_log "$cell_dir")" "$expected_s" \
      "${warm_values[K6_INSTANCES]:-1}" "$start_ms" "$limit_s" "$WARMUP_PID" "${rule[@]}"
  else
    # The load's live line started beside the warm-up, shown from the load's start.
    live_arm "$cell_dir" "$expected_s" "${warm_values[K6_INSTANCES]:-1}"
  fi
  wait "$WARMUP_PID" || status=$?
  WARMUP_PID=""
  # k6 ends at 105 on the SIGINT that ended a settled or counted warm-up (the
  # watch's: timeout's own bound ends at 124).
  [[ "$until" == time || "$status" != 105 ]] || status=0
  if [[ "$status" != 0 && "$status" != 99 ]]; then
    first="$(grep -m1 -iE 'error|panic' "$cell_dir/warmup.log" 2>/dev/null | cut -c1-200 || true)"
    cell_error "the warm-up's k6 exited with status $status: ${first:-no error line in warmup.log}"
    return 1
  fi
  if [[ "$NETNS_HOST_MODE" != 1 ]]; then
    local -a sockets
    mapfile -t sockets < <(warmup_sockets "$users_port" "$target_port")
    warmup_settle "${sockets[@]}"
    warmup_clear "${sockets[@]}" | write_atomic "$cell_dir/warmup.tsv"
  fi
  # The delayer's figures (NET_*) count from here: the load's packets only.
  netdelay_restart "$cell_dir" || return 1
  phase_mark "$cell_dir" warmup_end
}

# warmup_k6_start CELL_ASSOC CELL_DIR USERS_URL LIMIT_S: k6 run of
# scenarios/lib/warmup.js in the client namespace, in the background
# (WARMUP_PID), in CELL_DIR, as k6_start runs the load: the cell's knobs and
# the run's identity as its environment (-e LT_RUN_ID marks it the run's),
# SIGINT after LIMIT_S. Its output goes to warmup.log.
warmup_k6_start() {
  local cell_dir="$2" users_url="$3" limit_s="$4"
  local -a env_args in_namespace
  mapfile -t env_args < <(k6_cell_env "$1" "$users_url")
  mapfile -t in_namespace < <(netns_prefix client)
  (
    cd "$cell_dir" || exit 1
    # Read before the environment is replaced: either may be exported.
    local k6="$LT_K6" run_id="$LT_RUN_ID" cell_id="${cell_dir%/}" script="$LT_ROOT/scenarios/lib/warmup.js"
    k6_environment_only "${env_args[@]}" "SUMMARY_FILE=$PWD/warmup-summary.json" \
      "RUN_ID=$run_id" "CELL_ID=${cell_id##*/}" TARGET_CHECKED=1
    # --foreground: a signal timeout is sent (the SIGINT that ends a settled
    # or counted warm-up) reaches k6 once; in a group of its own, timeout
    # sends it to k6 and again to the whole group (coreutils' cleanup()), and
    # k6, taking the second as an abort, ended by the signal with no summary
    # (status 130, seen on tests/fixtures/own-app.matrix).
    exec timeout --foreground --signal=INT --kill-after=10 "$limit_s" \
      "${in_namespace[@]}" "$k6" run --no-usage-report --address "" -e "LT_RUN_ID=$run_id" "$script"
  ) >"$cell_dir/warmup.log" 2>&1 9>&- & # 9>&-: not the run lock
  WARMUP_PID=$!
}

# warmup_stop: end a warm-up still running (Ctrl-C, a failed step).
warmup_stop() {
  end_child_in WARMUP_PID INT 10
}

# warmup_ss_filter SIDE PORT LOW HIGH: the ss filter of the warm-up's
# sockets on SIDE: client, towards PORT from a port of LOW-HIGH (the client
# namespace's ephemeral range); server, on PORT towards such a port;
# upstream (nginx's connections to the target, in the server namespace), on
# or towards PORT (the target's) from a port of LOW-HIGH (the server
# namespace's range).
warmup_ss_filter() {
  local side="$1" port="$2" low="$3" high="$4"
  case "$side" in
    client) printf '( dport = :%s and sport >= :%s and sport <= :%s )\n' "$port" "$low" "$high" ;;
    server) printf '( sport = :%s and dport >= :%s and dport <= :%s )\n' "$port" "$low" "$high" ;;
    upstream)
      printf '( ( sport = :%s and dport >= :%s and dport <= :%s ) or ( dport = :%s and sport >= :%s and sport <= :%s ) )\n' \
        "$port" "$low" "$high" "$port" "$low" "$high"
      ;;
  esac
}

# warmup_sockets USERS_PORT TARGET_PORT: where the warm-up's sockets are,
# "SIDE NAMESPACE FILTER" a line (warmup_ss_filter): the client's, the
# server's where the suite sees it, and nginx's towards the target when it is
# in front (TARGET_PORT is not USERS_PORT).
warmup_sockets() {
  local users_port="$1" target_port="$2" low high
  read -r low high < <(netns_exec client sysctl -n net.ipv4.ip_local_port_range)
  printf 'client client %s\n' "$(warmup_ss_filter client "$users_port" "$low" "$high")"
  backend_has_server_side || return 0
  printf 'server server %s\n' "$(warmup_ss_filter server "$users_port" "$low" "$high")"
  [[ "$target_port" != "$users_port" ]] || return 0
  read -r low high < <(netns_exec server sysctl -n net.ipv4.ip_local_port_range)
  printf 'upstream server %s\n' "$(warmup_ss_filter upstream "$target_port" "$low" "$high")"
}

# warmup_settle SOCKETS...: wait, at most WARMUP_SETTLE_S, until none of the
# warm-up's connections (warmup_sockets' lines) is still closing: k6 closed
# them as it ended, and each other end answers with its own FIN. An
# established one is left as it is (nginx's upstream keep-alive pool,
# PROXY_UPSTREAM_KEEPALIVE, stays warm for the load).
warmup_settle() {
  local line side namespace filter closing i
  for ((i = 0; i < WARMUP_SETTLE_S * 20; i++)); do
    closing=""
    for line in "$@"; do
      read -r side namespace filter <<<"$line"
      closing+="$(netns_exec "$namespace" ss -Htn state fin-wait-1 state fin-wait-2 state close-wait \
        state last-ack state closing "$filter" 2>/dev/null || true)"
    done
    [[ -n "$closing" ]] || return 0
    sleep 0.05
  done
}

# warmup_clear SOCKETS...: remove the warm-up's TIME-WAIT sockets
# (warmup_sockets' lines; ss -K, which prints each socket the kernel
# destroyed); "side<TAB>removed<TAB>left" a line, after a header (left: those
# the kernel would not remove: a kernel without CONFIG_INET_DIAG_DESTROY, or
# one that cannot destroy a TIME-WAIT socket).
warmup_clear() {
  local line side namespace filter removed left
  printf 'side\ttime_wait_removed\ttime_wait_left\n'
  for line in "$@"; do
    read -r side namespace filter <<<"$line"
    removed="$(netns_exec "$namespace" ss -HKtn state time-wait "$filter" 2>/dev/null | wc -l)"
    left="$(netns_exec "$namespace" ss -Htn state time-wait "$filter" 2>/dev/null | wc -l)"
    printf '%s\t%s\t%s\n' "$side" "$removed" "$left"
  done
}
