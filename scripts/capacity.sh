#!/usr/bin/env bash
# Summary: how much can it take: the highest load (users, or an arrival rate) the file's settings hold within a goal, searched from the rules' limit with real cells.
# Usage: scripts/capacity.sh LOAD_FILE   (a matrix without axes, plus the goal: docs/advise.md)
#
# Writes results/capacity-<id>/capacity.md, capacity.json and capacity.svg;
# exit 0 with a verified maximum, 2 for bad input, 3 when no load held.
#
# The file is checked as every matrix is (env/defaults.env's types), then as
# a search's input: one load (no axes), a scenario the model knows, a goal
# and a budget. scripts/ltsuite/capacity.py has the model and the search;
# the cells run through scripts/run-matrix.sh into results/capacity-<id>/runs/.
set -euo pipefail

LT_PROG=capacity
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for lib in envfile matrix rundir; do
  # shellcheck source=/dev/null
  source "$LT_ROOT/scripts/lib/$lib.sh"
done
readonly LT_RESULTS_DIR="${LT_RESULTS_DIR:-$LT_ROOT/results}"
# Each cell is a run of its own: it queues behind another run on the host-wide
# lock (up to 15 minutes) instead of ending the search between two cells.
export LT_LOCK_WAIT="${LT_LOCK_WAIT:-900}"
# The knobs of the goal and the budget: not part of the load, never in the generated matrix.
readonly GOAL_KNOBS="GOAL_FAILED_RATE GOAL_P99_MS TUNE ADVISE_MAX_CELLS"
# The scenarios the model knows and their load knob (scripts/ltsuite/capacity.py LOAD_KNOB).
declare -rA LOAD_KNOB=([burst]=VUS [spike]=VUS [keepalive]=VUS [spike-open]=RATE)

main() {
  case "${1:-}" in
    -h | --help | "")
      print_summary "${BASH_SOURCE[0]}"
      [[ $# -ge 1 ]] || exit "$EX_USAGE"
      return 0
      ;;
  esac
  [[ $# -eq 1 ]] || usage_error "one load file (got $#)"
  local file="$1" out
  [[ -f "$file" ]] || usage_error "$file: no such file"
  matrix_resolve "$file"
  capacity_check "$file"
  out="$LT_RESULTS_DIR/$(rundir_new "capacity-$(date +%Y%m%d-%H%M%S)-$(basename "$file" .env)")"
  matrix_cell_values 0 >"$out/load.env"
  capacity_base_matrix "${LOAD_KNOB[${MATRIX_VALUE[SCENARIO]}]}" >"$out/base.matrix"
  # Exit 3: no load verified (capacity.md says why).
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.capacity run "$out/load.env" "$out/base.matrix" "$out" "$file"
}

# capacity_refuse KEY FILE MESSAGE: bad input about KEY ("file:line" where it
# was set, the file for a default), exit 2.
capacity_refuse() {
  local where="${MATRIX_ORIGIN[$1]}"
  [[ "$where" != defaults ]] || where="$2"
  usage_error "$where: $1: $3"
}

# capacity_check FILE: what the search needs beyond the knobs' types: one
# load (no axes), a scenario the model knows, one request a user in a burst,
# one cell a load, a target the suite starts, a rate, a budget of 2 cells.
capacity_check() {
  local file="$1" scenario="${MATRIX_VALUE[SCENARIO]}"
  if [[ ${#AXIS_KEYS[@]} -gt 0 ]]; then
    capacity_refuse "${AXIS_KEYS[0]}" "$file" "the search is for one setting: '${MATRIX_VALUE[${AXIS_KEYS[0]}]}' is an axis (give one value; the search chooses the loads)"
  fi
  [[ -n "${LOAD_KNOB[$scenario]:-}" ]] \
    || capacity_refuse SCENARIO "$file" "'$scenario': the model knows burst, spike and keepalive (users: VUS) and spike-open (a rate: RATE)"
  [[ "$scenario" != burst || "${MATRIX_VALUE[REQUESTS_PER_VU]}" == 1 ]] \
    || capacity_refuse REQUESTS_PER_VU "$file" "'${MATRIX_VALUE[REQUESTS_PER_VU]}': the burst's model is one request a user (REQUESTS_PER_VU=1)"
  [[ "${MATRIX_VALUE[REPEAT]}" == 1 ]] \
    || capacity_refuse REPEAT "$file" "'${MATRIX_VALUE[REPEAT]}': the search runs each load once (REPEAT=1)"
  [[ -z "${MATRIX_VALUE[TARGET_URL]}" && -z "${MATRIX_VALUE[TARGET_CMD]}" ]] \
    || capacity_refuse "$([[ -n "${MATRIX_VALUE[TARGET_URL]}" ]] && printf TARGET_URL || printf TARGET_CMD)" "$file" \
      "the model reads the target's Tomcat settings: the suite's own target or TARGET_JAR"
  [[ "${MATRIX_VALUE[GOAL_FAILED_RATE]}" =~ ^(0(\.[0-9]+)?|\.[0-9]+)$ ]] \
    || capacity_refuse GOAL_FAILED_RATE "$file" "'${MATRIX_VALUE[GOAL_FAILED_RATE]}' is not a rate from 0 to below 1 (e.g. 0.001)"
  ((10#${MATRIX_VALUE[ADVISE_MAX_CELLS]} >= 2)) \
    || capacity_refuse ADVISE_MAX_CELLS "$file" "'${MATRIX_VALUE[ADVISE_MAX_CELLS]}': at least 2 (the highest load held and the next one, failed)"
}

# capacity_base_matrix LOAD_KNOB: the generated matrix's fixed lines: every
# knob the file (or the command line) set, except the goal's and the load.
capacity_base_matrix() {
  local load_knob="$1" key
  for key in "${KNOB_ORDER[@]}"; do
    [[ "${MATRIX_ORIGIN[$key]}" != defaults ]] || continue
    [[ " $GOAL_KNOBS $load_knob " != *" $key "* ]] || continue
    printf '%s=%s\n' "$key" "${MATRIX_VALUE[$key]}"
  done
}

main "$@"
