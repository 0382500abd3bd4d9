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
for lib in envfile matrix netns target counters sampler live k6 warmup results manifest monitoring report design backend cell rundir lock space; do
  # shellcheck source=/dev/null
  source "$LT_ROOT/scripts/lib/$lib.sh"
done

LT_RUN_ID=""
LT_RUN_DIR=""
LT_BACKEND=""
LT_OVERRIDES=""
# Read by the traps and the temporary directory's maker (lock.sh).
# shellcheck disable=SC2034 # SC2034: read by the file this one sources (lock.sh)
LT_FINISHED=0 LT_INTERRUPTED=0 LT_TMP_DIR=""
# The run planned with its refusals (plan_ahead_dir), read after the lock;
# removed by on_exit (lock.sh), or here on a refusal.
LT_PLAN_DIR=""
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
    resume_refuse_knobs "$resume"
    resolve_matrix "$matrix" "$LT_RESULTS_DIR/$resume/manifest.json"
    resume_check_inputs "$resume"
  else
    [[ -f "$matrix" ]] || usage_error "$matrix: no such matrix file"
    matrix="$(cd "$(dirname "$matrix")" && pwd)/$(basename "$matrix")"
    resolve_matrix "$matrix"
  fi
  local total
  total="$(matrix_cell_count)"
  LT_BACKEND="${MATRIX_VALUE[BACKEND]}"
  check_repeat
  check_target_url
  check_client_addresses
  check_server_subnet
  check_target_knobs
  check_target_defaults
  if [[ "$NETNS_HOST_MODE" == 1 ]]; then backend_use external; else backend_use "$LT_BACKEND"; fi

  require_runtime
  plan_ahead_dir "$resume"
  k6_check_cells "$total" "$(design_machine_json)" "$LT_PLAN_DIR" "${MATRIX_VALUE[REPEAT]}"
  take_lock
  run_traps_set
  remove_stale_namespaces
  # The plan: which cell runs when (run_plan); a resumed run keeps its own.
  local -a plan=()
  if [[ -n "$resume" ]]; then
    mapfile -t plan < <(run_plan_recorded "$LT_RESULTS_DIR/$resume")
    local first="${plan[0]:-}"
    # A run from before plans: one of its cell directories.
    [[ -n "$first" ]] || first="$(find "$LT_RESULTS_DIR/$resume/cells" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | head -n 1)"
    run_keep_id_width "${first##* }"
  fi
  if [[ ${#plan[@]} -eq 0 ]]; then
    mapfile -t plan < <(run_plan "$total" "${MATRIX_VALUE[REPEAT]}" "${MATRIX_VALUE[REPEAT_SEED]}")
  fi
  check_space "$resume" "${plan[@]}"
  if [[ -n "$resume" ]]; then
    reopen_run_dir "$resume"
  else
    create_run_dir "$matrix" "$(printf '%s\n' "${plan[@]}")"
  fi
  space_reserve "$LT_RUN_DIR"
  run_tmp_dir
  plan_dir_into_tmp
  lock_state_write

  say "run $LT_RUN_ID: $total cell(s)$(repeat_note) from ${matrix#"$LT_ROOT"/} -> ${LT_RUN_DIR#"$LT_ROOT"/}"
  check_design "$total"
  if [[ "$NETNS_HOST_MODE" == 1 ]]; then
    say "load goes to ${MATRIX_VALUE[TARGET_URL]} (an external target), from this host"
  else
    say "load goes to ${MATRIX_VALUE[SERVER_ADDR]}:${MATRIX_VALUE[SERVER_PORT]} in network namespace $(netns_name server)"
  fi
  monitoring_run_start "$LT_RUN_DIR" MATRIX_VALUE
  local position index k name
  local -a names=()
  for ((position = 0; position < ${#plan[@]}; position++)); do
    read -r index k name <<<"${plan[position]}"
    names+=("$name")
    if [[ -s "$LT_RUN_DIR/cells/$name/row.json" ]]; then
      cell_finish_join
      say "cell $((position + 1))/${#plan[@]} $name: kept from the earlier attempt"
      continue
    fi
    # A failed cell is in its row; the run goes on to the next cell. Its
    # finish (row, tables, report line, the manifest's counts) goes on
    # beside the next cell's start, which joins it before its load; a full
    # disk stops the run there as interrupted, the cell dropped.
    if ! run_cell "$index" "$k" "$name" "$((position + 1))" "${#plan[@]}"; then
      :
    fi
  done
  # The last cell's finish, before the run's own.
  cell_finish_join
  total="${#plan[@]}"

  local failed missing status=complete
  { read -r failed && read -r missing; } < <(rows_failed_and_missing "${names[@]}")
  [[ $failed -eq 0 && -z "$missing" ]] || status=failed
  # The manifest's counts are written with its end (manifest_finished).
  finish_run "$status" || abort "run $LT_RUN_ID failed: a file of it could not be written"
  # shellcheck disable=SC2034 # SC2034: read by on_exit (lock.sh)
  LT_FINISHED=1
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

# resume_matrix RUN_ID: the matrix file of an earlier run, refusing if it
# changed since (its sha256 is in the manifest).
resume_matrix() {
  local run_id="$1" manifest matrix recorded actual
  run_id_valid "$run_id" || usage_error "RESUME: '$run_id' is not a run id (letters, digits and ._- only)"
  manifest="$LT_RESULTS_DIR/$run_id/manifest.json"
  [[ -f "$manifest" ]] || usage_error "RESUME: no run $run_id under $LT_RESULTS_DIR"
  run_format_check "$LT_RESULTS_DIR/$run_id"
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

# resume_refuse_knobs RUN_ID: a resumed run keeps the knobs of the run it
# finishes (its matrix and the overrides it recorded): a knob set in the
# environment beside RESUME is refused, unless it is one of those overrides
# with the same value.
resume_refuse_knobs() {
  local run_id="$1" key
  local -a given=() recorded=()
  local -A exported=()
  knobs_load "$LT_ROOT/env/defaults.env"
  envfile_exported exported
  mapfile -t recorded < <(jq -r '.overrides // [] | .[]' "$LT_RESULTS_DIR/$run_id/manifest.json")
  local value
  for key in "${KNOB_ORDER[@]}"; do
    [[ -n "${exported[$key]:-}" ]] || continue
    # A URL's user and password are never recorded (monitoring_take_credentials).
    value="$(url_without_credentials "${!key}")"
    printf '%s\n' "${recorded[@]}" | grep -qxF -- "$key=$value" || given+=("$key=$value")
  done
  [[ ${#given[@]} -eq 0 ]] \
    || usage_error "RESUME: ${given[*]} given beside RESUME; run $run_id keeps its own knobs (its overrides: ${recorded[*]:-none}); unset them, or start a new run"
}

# resume_check_inputs RUN_ID: the files the cells depend on
# (manifest_inputs), the suite's commit and uncommitted changes, and the
# versions of k6, java and the kernel (manifest_config_changes) are those run
# RUN_ID recorded;
# a resumed run with other inputs would mix two configurations in one
# table, so it is refused, naming what changed.
# shellcheck disable=SC2016 # SC2016: jq programs are in single quotes on purpose: their $names are theirs
resume_check_inputs() {
  local run_id="$1" manifest
  local -a changes=()
  manifest="$LT_RESULTS_DIR/$run_id/manifest.json"
  mapfile -t changes < <(jq -r --argjson now "$(manifest_inputs MATRIX_VALUE)" '
    (.inputs // null) as $was
    | if $was == null then empty
      else ($was + $now | keys[]) as $path
        | if $was[$path] == null then "\($path) (not an input then)"
          elif $now[$path] == null then "\($path) (no longer an input)"
          elif $now[$path] == "missing" then "\($path) (now missing)"
          elif $was[$path] != $now[$path] then "\($path) (sha256 \($now[$path][0:12]), was \($was[$path][0:12]))"
          else empty end
      end' "$manifest")
  # The suite (its commit and uncommitted changes) and the tools' versions.
  mapfile -t -O "${#changes[@]}" changes < <(manifest_config_changes "$manifest")
  [[ ${#changes[@]} -eq 0 ]] \
    || usage_error "RESUME: the inputs of run $run_id changed: $(join_words '; ' "${changes[@]}"); start a new run instead"
}

# plan_ahead_dir RUN_ID: LT_PLAN_DIR, an empty directory where the
# refusals' Python start plans the run (k6_check_cells), unless the run is
# resumed (its cells to run are known only after the lock) or a cell's
# script is one of one's own (its plan waits for k6's inspection of it,
# check_design). A refusal or an exit before the traps removes it.
plan_ahead_dir() {
  local scenario
  [[ -z "$1" ]] || return 0
  for scenario in ${MATRIX_VALUE[SCENARIO]}; do
    ! k6_own_script "$scenario" || return 0
  done
  LT_PLAN_DIR="$(mktemp -d)"
  # shellcheck disable=SC2064 # SC2064: the directory is known now; run_traps_set replaces this trap
  trap "rm -rf '$LT_PLAN_DIR'" EXIT
}

# plan_dir_into_tmp: LT_PLAN_DIR moved into the run's temporary directory
# (run_tmp_dir), which the lock's state names, so a run killed with SIGKILL
# leaves it for the next run to remove (end_dead_run) with every other
# temporary file of it.
plan_dir_into_tmp() {
  [[ -n "$LT_PLAN_DIR" && -d "$LT_PLAN_DIR" ]] || return 0
  mv "$LT_PLAN_DIR" "$LT_TMP_DIR/plan"
  LT_PLAN_DIR="$LT_TMP_DIR/plan"
}

# check_space RUN_ID PLAN_LINE...: the cells of the plan still to run (those
# of run RUN_ID without a row when it is resumed) fit in the results
# directory's free space (space_check; a run planned with its refusals has
# its estimate: plan_ahead_dir).
check_space() {
  local resume="$1" line index k name
  shift
  if [[ -n "$LT_PLAN_DIR" && -s "$LT_PLAN_DIR/space" ]]; then
    mkdir -p "$LT_RESULTS_DIR"
    space_check_need "$LT_RESULTS_DIR" "$(space_with_run "$(<"$LT_PLAN_DIR/space")")" "$#"
    return
  fi
  local -a todo=()
  for line in "$@"; do
    read -r index k name <<<"$line"
    [[ -n "$resume" && -s "$LT_RESULTS_DIR/$resume/cells/$name/row.json" ]] || todo+=("$line")
  done
  mkdir -p "$LT_RESULTS_DIR"
  space_check "$LT_RESULTS_DIR" "${todo[@]}"
}

# resolve_matrix FILE [MANIFEST]: defaults < matrix < environment; stops on
# bad input. With MANIFEST (a resumed run) the overrides are the ones that
# run recorded, not the environment's, so the cells are the same.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
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
  monitoring_take_credentials MATRIX_VALUE
  LT_OVERRIDES="$(matrix_overrides)"
}

# check_repeat: REPEAT is one value for the run, and the shuffle has a seed
# (one from the clock when REPEAT_SEED is empty; the manifest records it).
check_repeat() {
  [[ "${MATRIX_VALUE[REPEAT]}" != *" "* ]] \
    || usage_error "${MATRIX_ORIGIN[REPEAT]}: REPEAT: one value per run, not an axis (got ${MATRIX_VALUE[REPEAT]})"
  [[ "${MATRIX_VALUE[REPEAT_SEED]}" != *" "* ]] \
    || usage_error "${MATRIX_ORIGIN[REPEAT_SEED]}: REPEAT_SEED: one value per run, not an axis"
  [[ -n "${MATRIX_VALUE[REPEAT_SEED]}" ]] || MATRIX_VALUE[REPEAT_SEED]="$(date +%s)"
}

# repeat_note: " x N repetitions, shuffled (seed S)" when REPEAT > 1.
repeat_note() {
  [[ "${MATRIX_VALUE[REPEAT]}" -eq 1 ]] || printf ' x %s repetitions, shuffled (seed %s)' "${MATRIX_VALUE[REPEAT]}" "${MATRIX_VALUE[REPEAT_SEED]}"
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
# (target_knob_problems), as can the network's and nginx's
# (netdelay_knob_problems, proxy_knob_problems), and every script of one's own is one k6 can load;
# stops at the first problem, naming where it was set. A TARGET_CMD server
# has no Tomcat: the TOMCAT_* knobs are emptied, so no column claims them.
check_target_knobs() {
  local problem scenario key
  problem="$({ target_knob_problems MATRIX_ORIGIN MATRIX_VALUE; netdelay_knob_problems MATRIX_ORIGIN MATRIX_VALUE
    proxy_knob_problems MATRIX_ORIGIN MATRIX_VALUE; tls_knob_problems MATRIX_ORIGIN MATRIX_VALUE; } | head -n 1)"
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

# check_target_defaults: a Spring Boot jar of one's own whose
# TARGET_HEALTH_PATH was left at the default (/health, the suite's own
# target's) is waited for at the readiness probe the suite turns on in it,
# and one whose WARMUP was left at 0s warms up (target_apply_defaults); the
# cells, and k6, get those values.
check_target_defaults() {
  target_apply_defaults MATRIX_ORIGIN MATRIX_VALUE
}

# check_own_script SCRIPT: k6 can load SCRIPT (k6 inspect with the defaults'
# environment).
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
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

# check_server_subnet: SERVER_ADDR is on CLIENT_ADDR's /24 (either may be an
# axis): the two namespaces share one link whose addresses are /24
# (netns_up), so k6 could not reach a server address off it. Named by the
# key that was set (SERVER_ADDR when both were). An external TARGET_URL has
# no namespaces.
check_server_subnet() {
  local server client key=SERVER_ADDR other=CLIENT_ADDR
  [[ -z "${MATRIX_VALUE[TARGET_URL]}" ]] || return 0
  [[ "${MATRIX_ORIGIN[SERVER_ADDR]}" != defaults ]] || { key=CLIENT_ADDR other=SERVER_ADDR; }
  for server in ${MATRIX_VALUE[SERVER_ADDR]}; do
    for client in ${MATRIX_VALUE[CLIENT_ADDR]}; do
      [[ "${server%.*}" != "${client%.*}" ]] || continue
      usage_error "${MATRIX_ORIGIN[$key]}: $key: SERVER_ADDR $server is not on the /24 of CLIENT_ADDR $client ($other is set in ${MATRIX_ORIGIN[$other]}); the namespaces share one /24 link: use ${client%.*}.x for both"
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
    compose_require_runtime "${MATRIX_VALUE[TARGET_IMAGE]}" "${MATRIX_VALUE[TARGET_JAR]}"
    return
  fi
  [[ $EUID -eq 0 ]] || abort "the netns backend needs root (it creates network namespaces); run as root"
  raise_file_limits
  local tool
  for tool in ip nstat ss curl jq python3 java sha256sum flock timeout; do
    command -v "$tool" >/dev/null || abort "$tool not found; run 'make tools' (or install it: apt-get install iproute2 curl jq python3 openjdk-17-jre-headless)"
  done
  [[ -x "$LT_K6" ]] || abort "k6 not found at $LT_K6; run 'make tools'"
  if [[ -z "${MATRIX_VALUE[TARGET_JAR]}${MATRIX_VALUE[TARGET_CMD]}" && ! -f "$TARGET_OWN_JAR" ]]; then
    abort "target jar not found at $TARGET_OWN_JAR; run 'make tools'"
  fi
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

main "$@"
