# shellcheck shell=bash
# Summary: the cell engine: one cell from its settings to its row.
#
# resolved settings -> backend started (namespaces, sysctls, target healthy)
# -> nginx, the delayer -> the warm-up (WARMUP) -> server and client counters
# -> k6 from the client namespace while the sampler runs -> counters after -> processes stopped -> counter deltas
# -> row.json, this last part beside the next cell's start (cell_finish_begin,
# joined before the next cell's load: cell_finish_join). run-matrix.sh calls
# run_cell for each cell; bench.sh runs its cells through run-matrix.sh.
#
# Needs common.sh, matrix.sh, netns.sh, counters.sh, sampler.sh, k6.sh,
# warmup.sh, results.sh, monitoring.sh, backend.sh and lock.sh, and the run's LT_RUN_DIR.
#
# State shared with the runner (and only it): CELL_ERROR (why the current
# cell failed, said by the step that failed through cell_error, common.sh)
# and CELL_K6_EXIT (k6's exit status, for the row).
CELL_K6_EXIT=""
# A cell's finish (its counter deltas, row, tables, report line and the
# manifest's counts: cell_finish_begin) runs beside the next cell's start,
# which needs neither its namespaces nor its ports, and is joined before
# anything of the next cell's load (cell_finish_join): its background
# process, its directory and its lines, kept until then; and the next
# cell's first line, said after them.
CELL_FINISH_PID=""
CELL_FINISH_DIR=""
CELL_FINISH_LOG=""
CELL_HEADER=""
# How long the runner waits for a cell's finish before it ends it (it takes
# a second or two; a finish still running after this is stuck).
CELL_FINISH_WAIT_S=300

# run_cell INDEX K NAME POSITION TOTAL: one cell, start to row: repetition K
# of matrix cell INDEX (0-based), in LT_RUN_DIR/cells/NAME, the POSITIONth
# of the run's TOTAL. Its finish (the row: status=failed and the reason when
# a step failed) goes on in the background, beside the next cell's start
# (cell_finish_begin); the runner joins the last one (cell_finish_join).
# Every step is checked where it is called (cell_step): a caller's `if`
# turns errexit off for everything below it.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
run_cell() {
  local index="$1" k="$2" cell_id="$3" position="$4" total="$5" cell_dir started started_us error="" status=ok
  local -A cell=()
  cell_dir="$LT_RUN_DIR/cells/$cell_id"
  mkdir -p "$cell_dir"
  started=$SECONDS
  started_us="${EPOCHREALTIME/[.,]/}"
  # While the cell before is finishing, this line waits for its report line.
  CELL_HEADER="cell $position/$total $cell_id"
  [[ -n "$CELL_FINISH_PID" ]] || cell_say_header
  phase_mark "$cell_dir" cell_start

  cell_error ""
  CELL_K6_EXIT=""
  # A knob left at auto (K6_INSTANCES, BURST_LEAD_MS, USERS_PER_VU) is recorded as
  # the value chosen before the run's first cell (check_design).
  if [[ ! -s "$LT_RUN_DIR/cell-env/$index.env" ]]; then
    cell_error "no resolved settings in $LT_RUN_DIR/cell-env/$index.env: the run's plan (ltsuite.cell plan) failed"
  elif ! write_atomic "$cell_dir/cell.env" <"$LT_RUN_DIR/cell-env/$index.env" \
    || ! load_cell_env "$cell_dir/cell.env" cell; then
    cell_error "cannot write the cell's settings to cell.env"
  elif ! run_cell_steps cell "$cell_dir" "$LT_RUN_DIR/k6-inspect/$index.json"; then
    :
  fi
  if [[ -n "$CELL_ERROR" ]]; then
    status=failed
    error="$CELL_ERROR"
  fi
  # A cell that failed before its load joins the finish of the one before here.
  cell_finish_join
  stop_cell_processes
  phase_mark "$cell_dir" stopped
  cell_finish_begin "$cell_dir" "$status" "$error" "$(seconds_since_us "$started_us")" "$index" "$k" "$started" \
    "$([[ "$position" != "$total" ]] || echo last)"
}

# cell_say_header: the current cell's first line ("cell N/TOTAL NAME"),
# once.
cell_say_header() {
  [[ -z "$CELL_HEADER" ]] || say "$CELL_HEADER"
  CELL_HEADER=""
}

# cell_finish_begin CELL_DIR STATUS ERROR WALL_S INDEX K STARTED [last]: the cell's
# finish (cell_finish_steps) in the background, its lines kept in a file
# for cell_finish_join to say. It needs neither the namespaces nor the
# ports, so the next cell's start goes on beside it, at a lower priority
# (nice 10) than the next target's JVM, whose start is CPU-bound. It keeps
# the runner's lock descriptor closed (as every child that may outlive a
# step: lock.sh), and goes on through a closed terminal's SIGHUP and a
# Ctrl-C (which a background job ignores), so a row already measured is
# written whatever ends the run; the runner's exit waits for it (on_exit).
# Its exit status goes to a file beside its lines (CELL_FINISH_LOG.status):
# the runner never needs bash's `wait` for it (end_child).
cell_finish_begin() {
  CELL_FINISH_DIR="$1"
  CELL_FINISH_LOG="$(mktemp)"
  (
    trap '' HUP INT
    trap 'printf "%s\n" "$?" >"$CELL_FINISH_LOG.status"' EXIT
    set +e
    # The run's last cell's ("last") has no start beside it.
    [[ "${8:-}" == last ]] || renice -n 10 -p "$BASHPID" >/dev/null 2>&1
    cell_finish_steps "$@"
  ) >"$CELL_FINISH_LOG" 2>&1 9>&- &
  CELL_FINISH_PID=$!
}

# cell_finish_steps CELL_DIR STATUS ERROR WALL_S INDEX K STARTED [last]:
# after the cell's processes stopped: counter deltas, row.json (a failed row
# with the reason when it cannot build one) and the run's tables in one
# process (cell_finish), a warning when the cell failed, the status and
# report line in one jq start, the monitoring's shipping of the cell, then
# the manifest's counts (update_cell_counts; the run's last cell leaves them
# to the run's end, manifest_finished), and the phase mark `finished`. Exits
# 3 when the disk is full (the runner stops there: space_stop_when_full), 1
# for a failed cell. Runs in cell_finish_begin's background shell, in
# run_cell's scope (its `cell` settings).
cell_finish_steps() {
  local cell_dir="$1" status="$2" error="$3" wall_s="$4" index="$5" k="$6" started="$7" last="${8:-}" report
  # The repetition as JSON with no jq start: a cell id is a JSON string as it
  # is (matrix_cell_id makes it of letters, digits, ".", "_" and "-").
  if ! cell_finish "$cell_dir" "$status" "$error" "$(cell_axes_json cell)" "$wall_s" \
    "{\"of\":\"$(matrix_cell_id "$index")\",\"k\":$k}" "$CELL_K6_EXIT"; then
    warn "cell $(basename "$cell_dir"): $(jq -r .error "$cell_dir/row.json")"
  fi
  # The status, then the report line, in one jq start.
  report="$(jq -r '.status, "tps=\(.tps) p95=\(.lat_p95_ms)ms failed=\(.failed_reqs) conns_peak=\(.server_conns_peak) overflows=\(.listen_overflows)"
    + (if .as_designed == 0 then "\n  not as designed: \(.design_notes)" else "" end)
    + (if .prediction_check == "mismatch" then "\n  prediction mismatch: \(.prediction_notes)" else "" end)
    + (if .error != null and .error != "" then " (\(.error))" else "" end)' "$cell_dir/row.json")"
  status="${report%%$'\n'*}"
  monitoring_cell_done cell "$cell_dir" || warn "cell $(basename "$cell_dir"): its metrics did not reach InfluxDB"
  say "  $status in $((SECONDS - started))s: ${report#*$'\n'}"
  ! space_full "$LT_RUN_DIR" || exit 3
  [[ "$last" == last ]] || update_cell_counts
  phase_mark "$cell_dir" finished
  [[ "$status" == ok ]]
}

# cell_finish_wait: wait for the finish of the cell before (cell_finish_begin),
# at most CELL_FINISH_WAIT_S seconds (then it is ended), say its lines and
# mark it reported; its exit status (0 when there is none, 1 when it wrote
# none).
cell_finish_wait() {
  local code=""
  [[ -n "$CELL_FINISH_PID" ]] || return 0
  end_child "$CELL_FINISH_PID" 0 "$CELL_FINISH_WAIT_S" || true
  CELL_FINISH_PID=""
  cat "$CELL_FINISH_LOG" >&2 || true
  read -r code <"$CELL_FINISH_LOG.status" 2>/dev/null || true
  if [[ ! "$code" =~ ^[0-9]+$ ]]; then
    warn "the finish of cell $(basename "$CELL_FINISH_DIR") gave no status: killed, or still running after ${CELL_FINISH_WAIT_S}s and ended"
    code=1
  fi
  rm -f "$CELL_FINISH_LOG" "$CELL_FINISH_LOG.status"
  [[ ! -d "$CELL_FINISH_DIR" ]] || phase_mark "$CELL_FINISH_DIR" reported
  return "$code"
}

# cell_finish_join: the finish of the cell before joined (cell_finish_wait),
# before anything of the current cell's load; a full disk stops the run
# there as interrupted, the cell before dropped (space_stop_when_full, and
# on_exit). Then the current cell's first line.
cell_finish_join() {
  local code=0
  cell_finish_wait || code=$?
  if ((code == 3)) && ! space_stop_when_full "$CELL_FINISH_DIR"; then
    # shellcheck disable=SC2034 # SC2034: read by on_exit (lock.sh)
    LT_INTERRUPTED=1
    exit "$EX_FAILURE"
  fi
  cell_say_header
}

# seconds_since_us EPOCH_US: the seconds since EPOCH_US (bash's EPOCHREALTIME
# without its point), to the hundredth, rounded half up.
seconds_since_us() {
  local cs=$(((${EPOCHREALTIME/[.,]/} - $1 + 5000) / 10000))
  printf '%d.%02d\n' $((cs / 100)) $((cs % 100))
}

# phase_mark CELL_DIR NAME: note when a phase of the cell was reached
# (phases.tsv, epoch ms), for the row's phase timings. Bash's own clock, not
# a date process: a cell marks a dozen phases.
phase_mark() {
  local us="${EPOCHREALTIME/[.,]/}"
  printf '%s\t%s\n' "$2" "${us%???}" >>"$1/phases.tsv"
}

# cell_step WHAT COMMAND...: run one step of a cell; when it fails, the
# cell's error says what failed (unless the step said so itself).
cell_step() {
  local what="$1"
  shift
  "$@" && return 0
  [[ -n "$CELL_ERROR" ]] || cell_error "$what failed"
  return 1
}

# run_cell_steps CELL_ASSOC CELL_DIR INSPECTED: the steps of a cell
# (INSPECTED: k6's inspection of a script of one's own made before the run,
# check_design; a missing file when there is none); on failure sets
# CELL_ERROR to the reason and fails. It runs in the runner's own shell (not a
# subshell), so the pids of what it starts stay known to the exit trap.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
run_cell_steps() {
  local -n values="$1"
  local cell_dir="$2" inspected="$3" k6_status=0 limit base_url users_url
  local -a k6_options
  base_url="$(backend_url values)"
  # The users' URL: nginx's when it is in front (PROXY), else the target's.
  users_url="$(proxy_url values "$base_url")"
  # What does not depend on the target comes first, so a bad script fails
  # the cell before a JVM starts: k6's script and options, the monitoring.
  cell_step "reading the k6 script" k6_prepare_script values "$cell_dir" "$users_url" "$inspected" || return 1
  limit=$(($(k6_planned_seconds values "$cell_dir") + 60))
  monitoring_cell_start values "$cell_dir" || warn "monitoring could not start for this cell"
  mapfile -t k6_options < <(monitoring_k6_options values "$cell_dir")
  # The netns backend marks target_start again once its namespaces are set
  # up (the last mark counts), so setup_s is the namespaces' share.
  # HTTPS (TARGET_TLS): the run's key, before the target that serves it.
  cell_step "making the TLS key" tls_cell_prepare values "$cell_dir" || return 1
  phase_mark "$cell_dir" target_start
  backend_start values "$cell_dir" "$base_url" || return 1
  phase_mark "$cell_dir" target_ready
  # The cell before finished beside this start; joined before this cell's
  # load, so nothing of it runs while this one is measured.
  cell_finish_join
  phase_mark "$cell_dir" joined
  local helpers_started=0
  # The delay after the health checks, so they do not wait on it.
  cell_step "starting nginx" proxy_start values "$cell_dir" \
    && cell_step "asking the target through nginx" proxy_check values "$users_url" \
    && cell_step "starting the delayer" netdelay_start values "$cell_dir" && helpers_started=1
  # Neither carries the run id: the lock's state names them, for the next
  # run to end after a kill -9 (end_dead_run).
  lock_state_pids "$PROXY_PID" nginx "$NETDELAY_PID" ltsuite.netdelay
  ((helpers_started)) || return 1
  # The client's sockets towards the target: an external target's own port.
  local load_port="${values[SERVER_PORT]}"
  backend_has_server_side || load_port="$(cell_url_port "$base_url")"
  # Behind nginx the users' sockets are towards nginx's port.
  local users_port="$load_port" proxy_port=""
  [[ "${values[PROXY]:-none}" != nginx ]] || users_port="${values[PROXY_PORT]}" proxy_port="${values[PROXY_PORT]}"
  # The warm-up (WARMUP) where the users come from, before every snapshot.
  cell_step "warming the target up" warmup_run values "$cell_dir" "$users_url" "$users_port" "$load_port" \
    "$((limit - 60))" || return 1
  # Both sides' counters after the health checks and the warm-up, so their
  # connections are not in the deltas.
  if backend_has_server_side; then
    cell_step "reading the server's counters" counters_snapshot server "$cell_dir/nstat-server-before.txt" || return 1
  fi
  cell_step "reading the client's counters" counters_snapshot client "$cell_dir/nstat-client-before.txt" || return 1
  sampler_start "$cell_dir/samples.tsv" "$load_port" "$(target_metrics_port values)" \
    "${values[SAMPLE_INTERVAL]}" "$((limit / values[SAMPLE_INTERVAL] + 1))" "$(monitoring_sampler_hook)" "$users_port" \
    "$proxy_port"
  phase_mark "$cell_dir" k6_start
  k6_start values "$cell_dir" "$users_url" "$limit" "${k6_options[@]}"
  live_start "$cell_dir" "$((limit - 60))"
  k6_wait || k6_status=$?
  live_stop
  phase_mark "$cell_dir" k6_end
  CELL_K6_EXIT="$k6_status"
  sampler_stop

  if backend_has_server_side; then
    cell_step "reading the server's counters" counters_snapshot server "$cell_dir/nstat-server-after.txt" || return 1
  fi
  cell_step "reading the client's counters" counters_snapshot client "$cell_dir/nstat-client-after.txt" || return 1
  # The server's own account, set beside k6's: the waiting room's admissions
  # (to check its rule was kept), the WebSocket endpoint's sessions and
  # replies. The suite's own target has them; the row says null without.
  local stats_path=""
  case "${values[SCENARIO]}" in
    waiting-room) stats_path=/api/waiting-room/stats ;;
    websocket) stats_path=/ws/stats ;;
  esac
  if [[ -n "$stats_path" ]] && backend_alive; then
    netns_exec client curl -fsS --max-time 5 "$base_url$stats_path" \
      >"$cell_dir/${values[SCENARIO]}-stats.json" 2>/dev/null || rm -f "$cell_dir/${values[SCENARIO]}-stats.json"
  fi
  if ! backend_alive; then
    cell_error "target died during the cell"
    return 1
  fi
  if ! proxy_alive; then
    cell_error "nginx died during the cell"
    return 1
  fi
  if ! netdelay_alive; then
    cell_error "the delayer died during the cell (its packets were dropped, not let through)"
    return 1
  fi
  # Every k6 process must end at 0 or 99 (a crossed threshold is a result,
  # not a failure) and write its summary: a crashed one among several
  # would leave its share of the requests out of the row.
  local k6_reason
  if k6_reason="$(k6_failure "$cell_dir")"; then
    cell_error "$k6_reason"
    return 1
  fi
}

# cell_url_port URL: the port a URL names (80 for http, 443 for https when
# it names none).
cell_url_port() {
  local rest="${1#*://}" scheme="${1%%://*}"
  rest="${rest%%[/?#]*}"
  rest="${rest##*@}"
  if [[ "$rest" =~ :([0-9]+)$ ]]; then
    printf '%s\n' "${BASH_REMATCH[1]}"
  elif [[ "$scheme" == https ]]; then
    printf '443\n'
  else
    printf '80\n'
  fi
}

# record_sysctls CELL_DIR: the effective sysctls of both namespaces (sysctls.tsv).
record_sysctls() {
  netns_read_sysctls | write_atomic "$1/sysctls.tsv"
}

# cell_axes_json CELL_ASSOC: {"AXIS_KEY": "value", ...} for the row.
cell_axes_json() {
  local -n values="$1"
  local key
  for key in "${AXIS_KEYS[@]}"; do
    printf '%s\t%s\n' "$key" "${values[$key]}"
  done | jq -Rn '[inputs | split("\t") | {(.[0]): .[1]}] | add // {}'
}

# cell_finish CELL_DIR STATUS ERROR AXES_JSON WALL_S REPEAT_JSON K6_EXIT: the
# cell's last phase in one process (ltsuite.cell finish): netstat-delta.tsv
# from the four snapshots, row.json (as results_row), the run's tables, and
# the phase marks files, row and tables. Fails when only a failed row could
# be written.
cell_finish() {
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -S -m ltsuite.cell finish "$1" --run-dir "$LT_RUN_DIR" \
    --run-id "$LT_RUN_ID" --status "$2" --error "$3" --axes "$4" --wall-s "$5" --repeat "$6" --k6-exit "$7"
}

# stop_cell_processes: the warm-up, k6, sampler, delayer, proxy and target of the current cell, then the namespaces.
stop_cell_processes() {
  warmup_stop
  k6_stop
  live_stop
  sampler_stop
  netdelay_stop
  proxy_stop
  backend_stop
  netns_down
}

