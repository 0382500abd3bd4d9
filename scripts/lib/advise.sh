# shellcheck shell=bash
# Summary: what make advise and make capacity share: a load file read and checked as a search's input, the output directory and the generated matrix's fixed lines.
#
# Needs common.sh, envfile.sh, matrix.sh, rundir.sh, netns.sh (with netdelay.sh
# and proxy.sh) and target.sh; the caller sets
# LT_RESULTS_DIR. Results on stdout; bad input exits 2 with file:line: KEY.

# The knobs of the goal and the budget: not part of the load, never in a generated matrix.
readonly ADVISE_GOAL_KNOBS="GOAL_FAILED_RATE GOAL_P99_MS TUNE ADVISE_MAX_CELLS"

# advise_args SCRIPT ARG...: the command line of SCRIPT (one load file):
# -h prints its summary and exits 0, nothing prints it and exits 2, more
# than one file or a missing one is refused.
advise_args() {
  local script="$1"
  shift
  case "${1:-}" in
    -h | --help | "")
      print_summary "$script"
      [[ $# -ge 1 ]] || exit "$EX_USAGE"
      exit 0
      ;;
  esac
  [[ $# -eq 1 ]] || usage_error "one load file (got $#)"
  [[ -f "$1" ]] || usage_error "$1: no such file"
}

# advise_where KEY FILE: where KEY was set ("file:line", or FILE itself for a
# default or the command line), for messages.
advise_where() {
  local key="$1" file="$2"
  case "${MATRIX_ORIGIN[$key]}" in
    defaults) printf '%s' "$file" ;;
    *) printf '%s' "${MATRIX_ORIGIN[$key]}" ;;
  esac
}

# advise_refuse KEY FILE MESSAGE: bad input about KEY, exit 2.
advise_refuse() {
  usage_error "$(advise_where "$1" "$2"): $1: $3"
}

# advise_check_shared FILE ONE_LOAD ONE_RUN BUDGET: the checks both make:
# no axis (ONE_LOAD: what the file is for, and who chooses what, e.g. "an
# advice is for one load|the advice chooses the cells"), REPEAT=1 (ONE_RUN:
# who runs each cell once), a failed rate below 1, a budget of 2 cells
# (BUDGET: what the two are).
advise_check_shared() {
  local file="$1" one_load="$2" one_run="$3" budget="$4" key
  if [[ ${#AXIS_KEYS[@]} -gt 0 ]]; then
    key="${AXIS_KEYS[0]}"
    advise_refuse "$key" "$file" "${one_load%%|*}: '${MATRIX_VALUE[$key]}' is an axis (give one value; ${one_load#*|})"
  fi
  [[ "${MATRIX_VALUE[REPEAT]}" == 1 ]] \
    || advise_refuse REPEAT "$file" "'${MATRIX_VALUE[REPEAT]}': $one_run (REPEAT=1)"
  [[ "${MATRIX_VALUE[GOAL_FAILED_RATE]}" =~ ^(0(\.[0-9]+)?|\.[0-9]+)$ ]] \
    || advise_refuse GOAL_FAILED_RATE "$file" "'${MATRIX_VALUE[GOAL_FAILED_RATE]}' is not a rate from 0 to below 1 (e.g. 0.001)"
  ((10#${MATRIX_VALUE[ADVISE_MAX_CELLS]} >= 2)) \
    || advise_refuse ADVISE_MAX_CELLS "$file" "'${MATRIX_VALUE[ADVISE_MAX_CELLS]}': at least 2 ($budget)"
  advise_check_tls "$file"
  advise_knob_problems
}

# advise_check_tls FILE: HTTPS (TARGET_TLS=1, PROXY_TLS=1) refused: the
# models of make advise and make capacity (ltsuite.advise, ltsuite.capacity:
# the thread pool's waves and the kernel's queues) have no handshake in
# them, and a burst's handshakes take the server's cores, not its threads:
# measured at 2.8-3.2 times the server's calibrated CPU each
# (ltsuite.tlsburst, docs/tls.md), which no model here predicts yet.
advise_check_tls() {
  local file="$1" key
  for key in TARGET_TLS PROXY_TLS; do
    [[ "${MATRIX_VALUE[$key]:-0}" != 1 ]] \
      || advise_refuse "$key" "$file" "'1': the model has no TLS handshake (its waves are the thread pool's and its queues the kernel's; a burst's handshakes take the server's cores, and the suite does not yet predict them well enough to advise on: docs/tls.md); measure HTTPS with make run-matrix, whose rows predict and check a burst's handshakes"
  done
}

# advise_knob_problems: the checks make run-matrix makes of the target's,
# the network's and nginx's knobs together (target_knob_problems,
# netdelay_knob_problems, proxy_knob_problems: run-matrix.sh's
# check_target_knobs), made before the search's directory is written, so a
# setting every cell would refuse (a health path on the actuator's port with
# nginx in front, say) is named where the file set it, not in a generated
# matrix once the search has started.
advise_knob_problems() {
  local problem
  problem="$({ target_knob_problems MATRIX_ORIGIN MATRIX_VALUE; netdelay_knob_problems MATRIX_ORIGIN MATRIX_VALUE
    proxy_knob_problems MATRIX_ORIGIN MATRIX_VALUE; } | head -n 1)"
  [[ -z "$problem" ]] || usage_error "$problem"
}

# advise_dir KIND FILE: make results/KIND-<id>/ (id: time and the file's
# name; never an existing directory: rundir_new) and print its path.
advise_dir() {
  printf '%s\n' "$LT_RESULTS_DIR/$(rundir_new "$1-$(date +%Y%m%d-%H%M%S)-$(basename "$2" .env)")"
}

# advise_base_matrix EXCLUDED: the generated matrix's fixed lines: every knob
# the file (or the command line) set, except the goal's and those in
# EXCLUDED (words: the knobs the search sets itself).
advise_base_matrix() {
  local excluded="$1" key
  for key in "${KNOB_ORDER[@]}"; do
    [[ "${MATRIX_ORIGIN[$key]}" != defaults ]] || continue
    [[ " $ADVISE_GOAL_KNOBS $excluded " != *" $key "* ]] || continue
    printf '%s=%s\n' "$key" "${MATRIX_VALUE[$key]}"
  done
}

# advise_inputs DIR EXCLUDED: the search's inputs in DIR: load.env (every
# knob of the one cell) and base.matrix (advise_base_matrix EXCLUDED).
advise_inputs() {
  matrix_cell_values 0 >"$1/load.env"
  advise_base_matrix "$2" >"$1/base.matrix"
}
