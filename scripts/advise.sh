#!/usr/bin/env bash
# Summary: from a burst and a goal to Tomcat and kernel settings: the rules' cheapest setting, verified by real cells.
# Usage: scripts/advise.sh LOAD_FILE   (a matrix without axes, plus the goal: docs/advise.md)
#
# Writes results/advise-<id>/advice.md and advice.json; exit 0 with a verified
# setting, 2 for bad input, 3 when no setting of TUNE is verified.
#
# The file is checked as every matrix is (env/defaults.env's types), then as an
# advice's input: one load (no axes), a burst of one request a user, a goal and
# knobs the advice may tune. scripts/ltsuite/advise.py has the model; the cells
# run through scripts/run-matrix.sh into results/advise-<id>/runs/.
set -euo pipefail

LT_PROG=advise
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for lib in envfile matrix rundir; do
  # shellcheck source=/dev/null
  source "$LT_ROOT/scripts/lib/$lib.sh"
done
readonly LT_RESULTS_DIR="${LT_RESULTS_DIR:-$LT_ROOT/results}"
# The knobs of an advice itself: not part of the load, never in the generated matrix.
readonly ADVICE_KNOBS="GOAL_FAILED_RATE GOAL_P99_MS TUNE ADVISE_MAX_CELLS"
# The steady loads the advice models (scripts/ltsuite/steady.py): an arrival rate, kept-alive users.
readonly STEADY_SCENARIOS="spike-open keepalive ramp"
# The knobs the advice knows how to tune (scripts/ltsuite/advise.py TUNABLE).
readonly TUNABLE_KNOBS="TOMCAT_MAX_THREADS TOMCAT_MAX_CONNECTIONS TOMCAT_ACCEPT_COUNT SOMAXCONN TCP_MAX_SYN_BACKLOG TOMCAT_VIRTUAL_THREADS"

main() {
  case "${1:-}" in
    -h | --help | "")
      print_summary "${BASH_SOURCE[0]}"
      [[ $# -ge 1 ]] || exit "$EX_USAGE"
      return 0
      ;;
  esac
  [[ $# -eq 1 ]] || usage_error "one load file (got $#)"
  local file="$1"
  [[ -f "$file" ]] || usage_error "$file: no such file"
  matrix_resolve "$file"
  advise_check "$file"
  local out
  out="$(advise_dir "$file")"
  matrix_cell_values 0 >"$out/load.env"
  advise_base_matrix >"$out/base.matrix"
  # Exit 3: no setting verified (the advice says why).
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.advise run "$out/load.env" "$out/base.matrix" "$out" "$file"
}

# advise_where KEY FILE: where KEY was set ("file:line", or FILE itself for a
# default or the command line), for messages.
advise_where() {
  local key="$1" file="$2" origin="${MATRIX_ORIGIN[$1]}"
  case "$origin" in
    defaults) printf '%s' "$file" ;;
    *) printf '%s' "$origin" ;;
  esac
}

# advise_refuse KEY FILE MESSAGE: bad input about KEY, exit 2.
advise_refuse() {
  usage_error "$(advise_where "$1" "$2"): $1: $3"
}

# advise_check FILE: what an advice needs beyond the knobs' types: one load
# (no axes), a burst of one request a user or a steady load, a rate, tunable knobs, a budget
# that holds a verifying and a boundary cell.
advise_check() {
  local file="$1" key knob
  if [[ ${#AXIS_KEYS[@]} -gt 0 ]]; then
    key="${AXIS_KEYS[0]}"
    advise_refuse "$key" "$file" "an advice is for one load: '${MATRIX_VALUE[$key]}' is an axis (give one value; the advice chooses the cells)"
  fi
  [[ " burst $STEADY_SCENARIOS " == *" ${MATRIX_VALUE[SCENARIO]} "* ]] \
    || advise_refuse SCENARIO "$file" "'${MATRIX_VALUE[SCENARIO]}': the advice's rules model a burst (burst: every user at one instant) and steady loads ($STEADY_SCENARIOS)"
  [[ "${MATRIX_VALUE[REQUESTS_PER_VU]}" == 1 || "${MATRIX_VALUE[SCENARIO]}" != burst ]] \
    || advise_refuse REQUESTS_PER_VU "$file" "'${MATRIX_VALUE[REQUESTS_PER_VU]}': the advice's rules model one request a user (REQUESTS_PER_VU=1)"
  [[ "${MATRIX_VALUE[REPEAT]}" == 1 ]] \
    || advise_refuse REPEAT "$file" "'${MATRIX_VALUE[REPEAT]}': an advice runs each cell once (REPEAT=1)"
  [[ "${MATRIX_VALUE[BACKEND]}" == netns && -z "${MATRIX_VALUE[TARGET_URL]}" ]] \
    || advise_refuse BACKEND "$file" "the advice sets the target's sysctls and restarts it: BACKEND=netns without TARGET_URL"
  [[ "${MATRIX_VALUE[GOAL_FAILED_RATE]}" =~ ^(0(\.[0-9]+)?|\.[0-9]+)$ ]] \
    || advise_refuse GOAL_FAILED_RATE "$file" "'${MATRIX_VALUE[GOAL_FAILED_RATE]}' is not a rate from 0 to below 1 (e.g. 0.001)"
  local -a tune=()
  read -r -a tune <<<"${MATRIX_VALUE[TUNE]}"
  [[ ${#tune[@]} -gt 0 ]] || advise_refuse TUNE "$file" "no knob to tune (one or more of: $TUNABLE_KNOBS)"
  for knob in "${tune[@]}"; do
    [[ " $TUNABLE_KNOBS " == *" $knob "* ]] \
      || advise_refuse TUNE "$file" "'$knob' is not a knob the advice tunes (one of: $TUNABLE_KNOBS)"
  done
  ((10#${MATRIX_VALUE[ADVISE_MAX_CELLS]} >= 2)) \
    || advise_refuse ADVISE_MAX_CELLS "$file" "'${MATRIX_VALUE[ADVISE_MAX_CELLS]}': at least 2 (a verifying cell and a boundary cell)"
}

# advise_dir FILE: make results/advise-<id>/ (id: time and the file's name;
# never an existing directory: rundir_new) and print its path.
advise_dir() {
  printf '%s\n' "$LT_RESULTS_DIR/$(rundir_new "advise-$(date +%Y%m%d-%H%M%S)-$(basename "$1" .env)")"
}

# advise_base_matrix: the generated matrix's fixed lines: every knob the file
# (or the command line) set, except the advice's own and the tuned ones.
advise_base_matrix() {
  local key
  for key in "${KNOB_ORDER[@]}"; do
    [[ "${MATRIX_ORIGIN[$key]}" != defaults ]] || continue
    [[ " $ADVICE_KNOBS $TUNABLE_KNOBS " != *" $key "* ]] || continue
    printf '%s=%s\n' "$key" "${MATRIX_VALUE[$key]}"
  done
}

main "$@"
