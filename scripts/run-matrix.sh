#!/usr/bin/env bash
# Summary: run every cell of a matrix against a freshly started target and write results/<run-id>/.
# Usage: scripts/run-matrix.sh [MATRIX_FILE]   (default env/matrices/default.matrix;
#        any knob of env/defaults.env set in the environment overrides the matrix)
#
# For each cell: fresh namespaces with the cell's sysctls -> target started and
# healthy -> counters before -> k6 from the client namespace, sampled every
# second -> counters after -> target stopped -> cell files -> one row.
set -euo pipefail

LT_PROG=run-matrix
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for lib in envfile matrix netns target counters sampler k6 results manifest monitoring report design; do
  # shellcheck source=/dev/null
  source "$LT_ROOT/scripts/lib/$lib.sh"
done

LT_RUN_ID=""
LT_RUN_DIR=""
LT_BACKEND=""
LT_OVERRIDES=""
LT_FINISHED=0
LT_INTERRUPTED=0
CELL_ERROR=""
CELL_K6_EXIT=""
readonly LT_LOCK_FILE="${LT_LOCK_FILE:-/run/lock/ltsuite-run-matrix.lock}"
readonly LT_RESULTS_DIR="${LT_RESULTS_DIR:-$LT_ROOT/results}"

main() {
  local matrix="${1:-$LT_ROOT/env/matrices/default.matrix}"
  case "$matrix" in
    -h | --help)
      print_summary "${BASH_SOURCE[0]}"
      return 0
      ;;
  esac
  [[ $# -le 1 ]] || usage_error "one matrix file at most (got $#); set knobs as VAR=value"

  local resume="${RESUME:-}"
  if [[ -n "$resume" ]]; then
    matrix="$(resume_matrix "$resume")"
    resolve_matrix "$matrix" "$LT_RESULTS_DIR/$resume/manifest.json"
  else
    [[ -f "$matrix" ]] || usage_error "$matrix: no such matrix file"
    matrix="$(cd "$(dirname "$matrix")" && pwd)/$(basename "$matrix")"
    resolve_matrix "$matrix"
  fi
  local total
  total="$(matrix_cell_count)"
  LT_BACKEND="${MATRIX_VALUE[BACKEND]}"
  check_target_url
  check_client_addresses
  check_target_knobs

  require_runtime
  take_lock
  remove_stale_namespaces
  if [[ -n "$resume" ]]; then
    reopen_run_dir "$resume"
  else
    create_run_dir "$matrix"
  fi
  trap on_signal INT TERM
  trap on_exit EXIT

  say "run $LT_RUN_ID: $total cell(s) from ${matrix#"$LT_ROOT"/} -> ${LT_RUN_DIR#"$LT_ROOT"/}"
  check_design "$total"
  if [[ "$NETNS_HOST_MODE" == 1 ]]; then
    say "load goes to ${MATRIX_VALUE[TARGET_URL]} (an external target), from this host"
  else
    say "load goes to ${MATRIX_VALUE[SERVER_ADDR]}:${MATRIX_VALUE[SERVER_PORT]} in network namespace $(netns_name server)"
  fi
  monitoring_run_start "$LT_RUN_DIR" MATRIX_VALUE
  local index cell_id
  for ((index = 0; index < total; index++)); do
    cell_id="$(matrix_cell_id "$index")"
    if [[ -s "$LT_RUN_DIR/cells/$cell_id/row.json" ]]; then
      say "cell $((index + 1))/$total $cell_id: kept from the earlier attempt"
      continue
    fi
    # A failed cell is in its row; the run goes on to the next cell.
    if ! run_cell "$index" "$total"; then
      :
    fi
    update_cell_counts
    results_render "$LT_RUN_DIR" || warn "cannot render the results tables"
  done

  local failed missing status=complete
  failed="$(count_rows failed)"
  missing="$(cells_without_row "$total")"
  [[ $failed -eq 0 && -z "$missing" ]] || status=failed
  manifest_finish "$LT_RUN_DIR" "$status"
  LT_FINISHED=1
  results_render "$LT_RUN_DIR"
  report_render "$LT_RUN_DIR"
  printf '\n'
  cat "$LT_RUN_DIR/results.md"
  printf '\n'
  say_as_designed "$total"
  printf '\nresults: %s (open report.html in a browser)\n' "${LT_RUN_DIR#"$LT_ROOT"/}"
  if [[ -n "$missing" ]]; then
    abort "cell(s) without a valid row: $missing"
  fi
  if [[ $failed -gt 0 ]]; then
    abort "$failed of $total cell(s) failed; see the error column of $LT_RUN_DIR/results.csv"
  fi
}

# check_design TOTAL: warn about every cell whose design makes its result
# unlikely to mean what it seems to (design.jq); the warnings go to the
# manifest too. They never stop the run: a user may mean it.
check_design() {
  local total="$1" index cell_id machine warning
  machine="$(design_machine_json)"
  local env_file
  env_file="$(mktemp)"
  local inspected
  for ((index = 0; index < total; index++)); do
    cell_id="$(matrix_cell_id "$index")"
    matrix_cell_values "$index" >"$env_file"
    inspected="$(check_design_inspect "$env_file")"
    while IFS= read -r warning; do
      [[ -n "$warning" ]] || continue
      warn "cell $cell_id: $warning"
      manifest_warn "$LT_RUN_DIR" "cell $cell_id: $warning"
    done < <(design_cell_warnings "$env_file" "$machine" "$inspected")
  done
  rm -f "$env_file"
}

# check_design_inspect CELL_ENV_FILE: k6's inspection of the cell's script
# when it is one of one's own (its load shape is in its options), else null.
check_design_inspect() {
  local -A probe=()
  load_cell_env "$1" probe
  if k6_own_script "${probe[SCENARIO]}"; then
    k6_inspect probe "http://${probe[SERVER_ADDR]}:${probe[SERVER_PORT]}" | jq -c . 2>/dev/null || printf 'null\n'
  else
    printf 'null\n'
  fi
}

# cells_without_row TOTAL: the ids of cells that have no valid row.json (space-separated).
cells_without_row() {
  local total="$1" index cell_id row
  local -a missing=()
  for ((index = 0; index < total; index++)); do
    cell_id="$(matrix_cell_id "$index")"
    row="$LT_RUN_DIR/cells/$cell_id/row.json"
    jq -e '.status == "ok" or .status == "failed"' "$row" >/dev/null 2>&1 || missing+=("$cell_id")
  done
  printf '%s' "${missing[*]}"
}

# say_as_designed TOTAL: "N of M cells ran as designed", and the others with why.
say_as_designed() {
  local total="$1"
  jq -rs --argjson total "$total" '
    [.[] | select(.as_designed == 1)] as $good
    | [.[] | select(.as_designed == 0)] as $bad
    | "\($good | length) of \($total) cell(s) ran as designed",
      ($bad[] | "  \(.cell): \(.design_notes)"),
      ([.[] | select(.prediction_check == "mismatch")][] | "  \(.cell): prediction mismatch: \(.prediction_notes)")
  ' "$LT_RUN_DIR"/cells/*/row.json 2>/dev/null || true
}

# resume_matrix RUN_ID: the matrix file of an earlier run, refusing if it
# changed since (its sha256 is in the manifest).
resume_matrix() {
  local run_id="$1" manifest matrix recorded actual
  [[ "$run_id" =~ ^[A-Za-z0-9._-]+$ ]] || usage_error "RESUME: '$run_id' is not a run id"
  manifest="$LT_RESULTS_DIR/$run_id/manifest.json"
  [[ -f "$manifest" ]] || usage_error "RESUME: no run $run_id under $LT_RESULTS_DIR"
  matrix="$(jq -r .matrix "$manifest")"
  [[ "$matrix" == /* ]] || matrix="$LT_ROOT/$matrix"
  [[ -f "$matrix" ]] || usage_error "RESUME: the run's matrix $matrix no longer exists"
  recorded="$(jq -r .matrix_sha256 "$manifest")"
  actual="$(sha256sum "$matrix" | cut -d' ' -f1)"
  if [[ "$recorded" != "$actual" ]]; then
    usage_error "RESUME: $matrix changed since run $run_id (sha256 $actual, was $recorded); start a new run instead"
  fi
  printf '%s\n' "$matrix"
}

# resolve_matrix FILE [MANIFEST]: defaults < matrix < environment; stops on
# bad input. With MANIFEST (a resumed run) the overrides are the ones that
# run recorded, not the environment's, so the cells are the same.
resolve_matrix() {
  local matrix="$1" manifest="${2:-}"
  local -a recorded=()
  if [[ -n "$manifest" ]]; then
    # An empty word keeps matrix_resolve from reading the environment when
    # the run recorded no override.
    mapfile -t recorded < <(jq -r '.overrides[]' "$manifest")
    matrix_resolve "$matrix" "" "${recorded[@]}"
  else
    matrix_resolve "$matrix"
  fi
  LT_OVERRIDES="$(matrix_overrides)"
}

# check_target_url: where load may go. By default only the suite's own
# namespace; an external TARGET_URL must be loopback unless
# ALLOW_REMOTE_TARGET=1, and then no sysctl may be set (they would apply to
# the host, which the suite never changes).
check_target_url() {
  local url="${MATRIX_VALUE[TARGET_URL]}" host key
  [[ -n "$url" ]] || return 0
  [[ "$url" != *" "* ]] || usage_error "TARGET_URL: one target per run, not an axis"
  host="${url#*://}"
  host="${host%%/*}"
  # Drop a port, but not the colons of a bracketed IPv6 address.
  [[ "$host" =~ ^(\[[^]]*\]|[^:]*)(:[0-9]+)?$ ]] && host="${BASH_REMATCH[1]}"
  if [[ ! "$host" =~ ^(127\.[0-9.]+|localhost|\[::1\])$ && "${MATRIX_VALUE[ALLOW_REMOTE_TARGET]}" != 1 ]]; then
    usage_error "TARGET_URL: $host is not loopback; set ALLOW_REMOTE_TARGET=1 to send load there"
  fi
  for key in "${!SYSCTL_SIDE[@]}"; do
    if [[ -n "${MATRIX_VALUE[$key]:-}" ]]; then
      usage_error "$key: sysctls apply to the suite's own namespaces only; with TARGET_URL they would change this host"
    fi
  done
  NETNS_HOST_MODE=1
}

# check_target_knobs: the target and script knobs can work together
# (target_knob_problems), and every script of one's own is one k6 can load;
# stops at the first problem, naming where it was set. A TARGET_CMD server
# has no Tomcat: the TOMCAT_* knobs are emptied, so no column claims them.
check_target_knobs() {
  local problem scenario key
  problem="$(target_knob_problems MATRIX_ORIGIN MATRIX_VALUE | head -n 1)"
  [[ -z "$problem" ]] || usage_error "$problem"
  local -a scenarios
  read -r -a scenarios <<<"${MATRIX_VALUE[SCENARIO]}"
  for scenario in "${scenarios[@]}"; do
    k6_own_script "$scenario" || continue
    check_own_script "$scenario"
  done
  if [[ -n "${MATRIX_VALUE[TARGET_CMD]}" ]]; then
    for key in "${!MATRIX_VALUE[@]}"; do
      # shellcheck disable=SC2004 # MATRIX_VALUE is associative (matrix.sh): $key is a string key
      [[ "$key" != TOMCAT_* ]] || MATRIX_VALUE[$key]=""
    done
  fi
}

# check_own_script SCRIPT: k6 can load SCRIPT (k6 inspect with the defaults'
# environment).
check_own_script() {
  local script="$1" output
  local -A probe=([SCENARIO]="$script")
  [[ -x "$LT_K6" ]] || return 0 # require_runtime says what to do
  if ! output="$(k6_inspect probe "http://${MATRIX_VALUE[SERVER_ADDR]%% *}:${MATRIX_VALUE[SERVER_PORT]%% *}")" \
    || ! jq -e . <<<"$output" >/dev/null 2>&1; then
    usage_error "${MATRIX_ORIGIN[SCENARIO]}: SCENARIO: k6 cannot load $script: $(grep -m1 -iE 'error' <<<"$output" | cut -c1-300)"
  fi
}

# check_client_addresses: CLIENT_ADDRESSES addresses from CLIENT_ADDR stay
# in its /24 and never take the server's address.
check_client_addresses() {
  local first count addresses server
  read -r -a first <<<"${MATRIX_VALUE[CLIENT_ADDR]}"
  read -r -a count <<<"${MATRIX_VALUE[CLIENT_ADDRESSES]}"
  read -r -a server <<<"${MATRIX_VALUE[SERVER_ADDR]}"
  local f c s
  for f in "${first[@]}"; do
    for c in "${count[@]}"; do
      addresses="$(netns_client_addresses "$f" "$c")" \
        || usage_error "CLIENT_ADDRESSES: $c addresses from $f leave its /24 (at most $((255 - ${f##*.})))"
      for s in "${server[@]}"; do
        [[ " $addresses " != *" $s "* ]] \
          || usage_error "CLIENT_ADDRESSES: $c addresses from $f include SERVER_ADDR $s"
      done
    done
  done
}

# raise_file_limits: every socket is a file: k6 holds one per VU and the
# target one per connection. As root the runner raises its own limits (its
# children inherit them) to the kernel's fs.nr_open, at most 1048576.
raise_file_limits() {
  local limit
  limit="$(cat /proc/sys/fs/nr_open 2>/dev/null || printf '1048576')"
  ((limit <= 1048576)) || limit=1048576
  # Where the hard limit cannot be raised (no CAP_SYS_RESOURCE), the soft
  # one still goes up to it; the manifest records what the run had.
  ulimit -Hn "$limit" 2>/dev/null || true
  ulimit -Sn "$(ulimit -Hn)" 2>/dev/null || true
}

# require_runtime: root and every tool a run needs, with what to do if missing.
require_runtime() {
  if [[ "$LT_BACKEND" == compose ]]; then
    # shellcheck source=scripts/lib/compose.sh
    source "$LT_ROOT/scripts/lib/compose.sh"
    # shellcheck source=scripts/lib/backend_compose.sh
    source "$LT_ROOT/scripts/lib/backend_compose.sh"
    compose_require_runtime "${MATRIX_VALUE[TARGET_IMAGE]}"
    return
  fi
  [[ $EUID -eq 0 ]] || abort "the netns backend needs root (it creates network namespaces); run as root"
  raise_file_limits
  local tool
  for tool in ip nstat ss curl jq java sha256sum flock timeout; do
    command -v "$tool" >/dev/null || abort "$tool not found; run 'make tools' (or install it: apt-get install iproute2 curl jq openjdk-17-jre-headless)"
  done
  [[ -x "$LT_K6" ]] || abort "k6 not found at $LT_K6; run 'make tools'"
  if [[ -z "${MATRIX_VALUE[TARGET_JAR]}${MATRIX_VALUE[TARGET_CMD]}" && ! -f "$TARGET_OWN_JAR" ]]; then
    abort "target jar not found at $TARGET_OWN_JAR; run 'make tools'"
  fi
}

# take_lock: one run at a time on this host (namespaces and ports are shared).
# The kernel drops the lock when its holder dies, so a killed run leaves none.
# LT_LOCK_WAIT=SECONDS queues behind a running run instead of refusing.
take_lock() {
  local wait_s="${LT_LOCK_WAIT:-0}"
  [[ "$wait_s" =~ ^[0-9]+$ ]] || usage_error "LT_LOCK_WAIT: '$wait_s' is not a number of seconds"
  mkdir -p "$(dirname "$LT_LOCK_FILE")"
  exec {LT_LOCK_FD}>>"$LT_LOCK_FILE"
  if [[ "$wait_s" -gt 0 ]] && ! flock -n "$LT_LOCK_FD"; then
    say "waiting up to ${wait_s}s for the run that holds $LT_LOCK_FILE"
    flock -w "$wait_s" "$LT_LOCK_FD" || true
  fi
  if ! flock -n "$LT_LOCK_FD"; then
    abort "another run-matrix is running (lock $LT_LOCK_FILE held by pid $(cat "$LT_LOCK_FILE.pid" 2>/dev/null || echo '?')); wait for it or stop it"
  fi
  printf '%s\n' "$$" >"$LT_LOCK_FILE.pid"
}

# remove_stale_namespaces: namespaces (and with BACKEND=compose the target
# container) left by a run that was killed.
remove_stale_namespaces() {
  [[ "$LT_BACKEND" != compose ]] || compose_remove_stale
  if netns_exists "$(netns_name server)" || netns_exists "$(netns_name client)"; then
    warn "removing network namespaces left by an earlier run that did not finish"
    netns_down
  fi
}

# create_run_dir MATRIX: results/<run-id>/ (never an existing one) and its manifest.
create_run_dir() {
  local matrix="$1" base suffix=1 axes_json
  base="$(date +%Y%m%d-%H%M%S)-$(basename "$matrix" .matrix)"
  LT_RUN_ID="$base"
  mkdir -p "$LT_RESULTS_DIR"
  until mkdir "$LT_RESULTS_DIR/$LT_RUN_ID" 2>/dev/null; do
    suffix=$((suffix + 1))
    LT_RUN_ID="$base-$suffix"
  done
  LT_RUN_DIR="$LT_RESULTS_DIR/$LT_RUN_ID"
  mkdir "$LT_RUN_DIR/cells"
  axes_json="$(printf '%s\n' "${AXIS_KEYS[@]}" | jq -Rn '[inputs | select(length > 0)]')"
  manifest_create "$LT_RUN_DIR" "$matrix" "$axes_json" "$(matrix_cell_count)"
  ln -sfn "$LT_RUN_ID" "$LT_RESULTS_DIR/latest"
}

# reopen_run_dir RUN_ID: continue an earlier run in its own directory.
reopen_run_dir() {
  LT_RUN_ID="$1"
  LT_RUN_DIR="$LT_RESULTS_DIR/$LT_RUN_ID"
  local cell_dir
  # A cell without a row was cut off: its partial files are redone.
  for cell_dir in "$LT_RUN_DIR"/cells/*/; do
    [[ -d "$cell_dir" && ! -s "$cell_dir/row.json" ]] && rm -rf "$cell_dir"
  done
  manifest_update "$LT_RUN_DIR" '.status = "running" | .ended_at = null | .resumed_at += [$t]' \
    --arg t "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  ln -sfn "$LT_RUN_ID" "$LT_RESULTS_DIR/latest"
}

# count_rows STATUS: cells of this run whose row has STATUS.
count_rows() {
  local status="$1" row n=0
  for row in "$LT_RUN_DIR"/cells/*/row.json; do
    [[ -s "$row" ]] || continue
    [[ "$(jq -r .status "$row")" == "$status" ]] && n=$((n + 1))
  done
  printf '%s\n' "$n"
}

# update_cell_counts: cells_done and cells_failed in the manifest, from the rows.
update_cell_counts() {
  local ok failed
  ok="$(count_rows ok)"
  failed="$(count_rows failed)"
  manifest_update "$LT_RUN_DIR" '.cells_done = ($ok + $failed) | .cells_failed = $failed' \
    --argjson ok "$ok" --argjson failed "$failed"
}

# run_cell INDEX TOTAL: one cell, start to row. Fails (after writing a row
# with status=failed and the reason) if any step fails. Every step is
# checked where it is called (cell_step): a caller's `if` turns errexit off
# for everything below it.
run_cell() {
  local index="$1" total="$2" cell_id cell_dir started started_ns error="" status=ok
  local -A cell=()
  cell_id="$(matrix_cell_id "$index")"
  cell_dir="$LT_RUN_DIR/cells/$cell_id"
  mkdir -p "$cell_dir"
  started=$SECONDS
  started_ns="$(date +%s%N)"
  say "cell $((index + 1))/$total $cell_id"
  phase_mark "$cell_dir" cell_start

  CELL_ERROR=""
  CELL_K6_EXIT=""
  if ! matrix_cell_values "$index" | write_atomic "$cell_dir/cell.env" \
    || ! load_cell_env "$cell_dir/cell.env" cell; then
    CELL_ERROR="cannot write the cell's settings to cell.env"
  elif ! run_cell_steps cell "$cell_dir"; then
    :
  fi
  if [[ -n "$CELL_ERROR" ]]; then
    status=failed
    error="$CELL_ERROR"
  fi
  stop_cell_processes
  phase_mark "$cell_dir" stopped
  counters_cell_deltas "$cell_dir" || { status=failed; error="${error:+$error; }cannot compute the counter deltas"; }
  phase_mark "$cell_dir" files
  # results_row writes a failed row with the reason when it cannot build one.
  if ! results_row "$cell_dir" "$status" "$error" "$(cell_axes_json cell)" \
    "$(awk -v a="$started_ns" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')"; then
    warn "cell $cell_id: $(jq -r .error "$cell_dir/row.json")"
  fi
  status="$(jq -r .status "$cell_dir/row.json")"
  monitoring_cell_done cell "$cell_dir" || warn "cell $cell_id: its metrics did not reach InfluxDB"
  say "  $status in $((SECONDS - started))s: $(jq -r '"tps=\(.tps) p95=\(.lat_p95_ms)ms failed=\(.failed_reqs) conns_peak=\(.server_conns_peak) overflows=\(.listen_overflows)"
    + (if .as_designed == 0 then "\n  not as designed: \(.design_notes)" else "" end)
    + (if .prediction_check == "mismatch" then "\n  prediction mismatch: \(.prediction_notes)" else "" end)
    + (if .error != null and .error != "" then " (\(.error))" else "" end)' "$cell_dir/row.json")"
  [[ "$status" == ok ]]
}

# phase_mark CELL_DIR NAME: note when a phase of the cell was reached
# (phases.tsv, epoch ms), for the row's phase timings.
phase_mark() {
  printf '%s\t%s\n' "$2" "$(date +%s%3N)" >>"$1/phases.tsv"
}

# cell_step WHAT COMMAND...: run one step of a cell; when it fails, the
# cell's error says what failed (unless the step said so itself).
cell_step() {
  local what="$1"
  shift
  "$@" && return 0
  [[ -n "$CELL_ERROR" ]] || CELL_ERROR="$what failed"
  return 1
}

# run_cell_steps CELL_ASSOC CELL_DIR: the steps of a cell; on failure sets
# CELL_ERROR to the reason and fails. It runs in the runner's own shell (not a
# subshell), so the pids of what it starts stay known to the exit trap.
run_cell_steps() {
  local -n values="$1"
  local cell_dir="$2" k6_status=0 limit
  local base_url="http://${values[SERVER_ADDR]}:${values[SERVER_PORT]}" health_path="${values[TARGET_HEALTH_PATH]}"
  if [[ "$NETNS_HOST_MODE" == 1 ]]; then
    phase_mark "$cell_dir" target_start
    cell_step "checking the external target" run_cell_external_start values "$cell_dir" || return 1
    base_url="${values[TARGET_URL]%/}"
  elif [[ "$LT_BACKEND" == compose ]]; then
    phase_mark "$cell_dir" target_start
    cell_step "starting the target container" compose_cell_start values "$cell_dir" "$base_url$health_path" || return 1
  else
    netns_down
    cell_step "creating the network namespaces" netns_up "${values[SERVER_ADDR]}" \
      "$(netns_client_addresses "${values[CLIENT_ADDR]}" "${values[CLIENT_ADDRESSES]}")" || return 1
    cell_step "setting the sysctls" netns_apply_sysctls values || return 1
    cell_step "reading the effective sysctls" record_sysctls "$cell_dir" || return 1
    phase_mark "$cell_dir" target_start
    target_start values "$cell_dir/target.log"
    if ! target_wait_healthy "$base_url$health_path" "${values[TARGET_START_TIMEOUT]}"; then
      CELL_ERROR+="; last log line: $(tail -n 1 "$cell_dir/target.log" | cut -c1-200)"
      return 1
    fi
    target_check_connector values | write_atomic "$cell_dir/connector.json" || true
    cell_step "reading the server's counters" counters_snapshot server "$cell_dir/nstat-server-before.txt" || return 1
  fi
  phase_mark "$cell_dir" target_ready
  cell_step "reading the client's counters" counters_snapshot client "$cell_dir/nstat-client-before.txt" || return 1

  cell_step "reading the k6 script" k6_prepare_script values "$cell_dir" "$base_url" || return 1
  limit=$(($(k6_planned_seconds values "$cell_dir") + 60))
  monitoring_cell_start values "$cell_dir" || warn "monitoring could not start for this cell"
  sampler_start "$cell_dir/samples.tsv" "${values[SERVER_PORT]}" "$(target_metrics_port values)" \
    "${values[SAMPLE_INTERVAL]}" "$((limit / values[SAMPLE_INTERVAL] + 1))"
  phase_mark "$cell_dir" k6_start
  k6_start values "$cell_dir" "$base_url" "$limit"
  k6_wait || k6_status=$?
  phase_mark "$cell_dir" k6_end
  CELL_K6_EXIT="$k6_status"
  sampler_stop

  if [[ "$NETNS_HOST_MODE" != 1 ]]; then
    cell_step "reading the server's counters" counters_snapshot server "$cell_dir/nstat-server-after.txt" || return 1
  fi
  cell_step "reading the client's counters" counters_snapshot client "$cell_dir/nstat-client-after.txt" || return 1
  if [[ "${values[SCENARIO]}" == waiting-room ]] && { [[ "$NETNS_HOST_MODE" == 1 ]] || target_alive; }; then
    # The server's own account of admissions, to check its rule was kept;
    # the row says null when it is missing.
    netns_exec client curl -fsS --max-time 5 "$base_url/api/waiting-room/stats" \
      >"$cell_dir/waiting-room-stats.json" 2>/dev/null || rm -f "$cell_dir/waiting-room-stats.json"
  fi
  if [[ "$NETNS_HOST_MODE" != 1 ]] && ! target_alive; then
    CELL_ERROR="target died during the cell"
    return 1
  fi
  case "$k6_status" in
    0 | 99) ;; # 99: a threshold was crossed; that is a result, not a failure
    *)
      CELL_ERROR="k6 exited with status $k6_status: $(grep -m1 -iE 'error|panic' "$cell_dir/k6.log" | cut -c1-200 || true)"
      return 1
      ;;
  esac
}

# record_sysctls CELL_DIR: the effective sysctls of both namespaces (sysctls.tsv).
record_sysctls() {
  netns_read_sysctls | write_atomic "$1/sysctls.tsv"
}

# run_cell_external_start CELL_ASSOC CELL_DIR: an external target is not
# started, only checked: its TARGET_HEALTH_PATH must answer. The host's counters are
# shared with everything else on it, so the deltas are noisier.
run_cell_external_start() {
  local -n ext_values="$1"
  local cell_dir="$2" url="${ext_values[TARGET_URL]%/}${ext_values[TARGET_HEALTH_PATH]}"
  printf 'external target %s: not started by the suite\n' "${ext_values[TARGET_URL]}" >"$cell_dir/target.log"
  if ! curl -fsS -o /dev/null --max-time 5 "$url" 2>>"$cell_dir/target.log"; then
    CELL_ERROR="external target does not answer $url"
    return 1
  fi
}

# load_cell_env FILE ASSOC: read a cell.env (written by the runner) into ASSOC.
load_cell_env() {
  local file="$1" line
  local -n into="$2"
  while IFS= read -r line; do
    into[${line%%=*}]="${line#*=}"
  done <"$file"
}

# cell_axes_json CELL_ASSOC: {"AXIS_KEY": "value", ...} for the row.
cell_axes_json() {
  local -n values="$1"
  local key
  for key in "${AXIS_KEYS[@]}"; do
    printf '%s\t%s\n' "$key" "${values[$key]}"
  done | jq -Rn '[inputs | split("\t") | {(.[0]): .[1]}] | add // {}'
}

# counters_cell_deltas CELL_DIR: netstat-delta.tsv from the four snapshots.
counters_cell_deltas() {
  local cell_dir="$1" side
  {
    printf 'counter\tside\tdelta\n'
    for side in server client; do
      if [[ -s "$cell_dir/nstat-$side-before.txt" && -s "$cell_dir/nstat-$side-after.txt" ]]; then
        counters_delta "$side" "$cell_dir/nstat-$side-before.txt" "$cell_dir/nstat-$side-after.txt"
      fi
    done
  } | write_atomic "$cell_dir/netstat-delta.tsv"
}

# stop_cell_processes: k6, sampler and target of the current cell, then the namespaces.
stop_cell_processes() {
  k6_stop
  sampler_stop
  if [[ "$LT_BACKEND" == compose ]]; then
    compose_target_stop
  else
    target_stop
  fi
  netns_down
}

on_signal() {
  LT_INTERRUPTED=1
  say ""
  say "interrupted: stopping k6 and the target, removing the namespaces"
  exit 130
}

on_exit() {
  local status=$?
  trap - EXIT INT TERM
  stop_cell_processes
  if [[ -n "$LT_RUN_DIR" && $LT_FINISHED -eq 0 ]]; then
    manifest_finish "$LT_RUN_DIR" "$([[ $LT_INTERRUPTED -eq 1 ]] && echo interrupted || echo failed)" || true
    results_render "$LT_RUN_DIR" || true
    report_render "$LT_RUN_DIR" || true
    say "run $LT_RUN_ID $([[ $LT_INTERRUPTED -eq 1 ]] && echo interrupted || echo stopped); finished cells are kept in ${LT_RUN_DIR#"$LT_ROOT"/}"
  fi
  exit "$status"
}

main "$@"
